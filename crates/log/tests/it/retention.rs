//! Retention in Kafka's order, delayed deletion, and readers of deleted segments.

use seglog::{Clock, Isolation, LogConfig, RetentionReason};

use crate::support::*;

fn fill(log: &seglog::Log, batches: i64, ts: impl Fn(i64) -> i64) {
    for i in 0..batches {
        log.append(&numbered(ts(i), "r", 2)).unwrap();
    }
}

#[test]
fn size_retention_deletes_oldest_first_and_keeps_the_hw_guard() {
    let (_dir, _clock, log) = fresh(LogConfig {
        retention_bytes: 2048,
        ..small_config(1024)
    });
    fill(&log, 60, |i| T0 + i);
    let total: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
    assert!(total > 4096);
    // HW at 0: nothing may go.
    assert!(log.delete_old_segments().unwrap().deleted.is_empty());
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let report = log.delete_old_segments().unwrap();
    assert!(!report.deleted.is_empty());
    assert!(
        report
            .deleted
            .iter()
            .all(|d| d.reason == RetentionReason::Size)
    );
    let left: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
    assert!(left <= 2048 + 1024, "{left}");
    assert_eq!(log.log_start_offset(), log.segments()[0].base_offset);
    assert_eq!(report.log_start_offset, log.log_start_offset());
    // Reads below the new start fail; the rest reads back.
    assert!(log.read(0, 100, Isolation::LogEnd, true).is_err());
    let vals = values(&log);
    assert_eq!(vals.first().unwrap().0, log.log_start_offset());
    assert_eq!(vals.last().unwrap().0, log.log_end_offset() - 1);
}

#[test]
fn time_retention_uses_largest_timestamps_and_keeps_one_segment() {
    let (_dir, _clock, log) = fresh(LogConfig {
        retention_ms: 1000,
        ..small_config(1024)
    });
    fill(&log, 40, |i| T0 - 10_000 + i);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let segments_before = log.segment_count();
    let report = log.delete_old_segments().unwrap();
    // Everything is older than retention.ms: all go, after rolling an empty active segment.
    assert!(report.rolled);
    assert_eq!(report.deleted.len(), segments_before);
    assert!(
        report
            .deleted
            .iter()
            .all(|d| d.reason == RetentionReason::Time)
    );
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), 80);
    assert_eq!(log.log_end_offset(), 80);
    // Appends continue.
    log.append(&numbered(T0, "new", 1)).unwrap();
    assert_eq!(values(&log), vec![(80, b"new-0".to_vec())]);
}

#[test]
fn log_start_breach_runs_first_and_deletion_is_delayed() {
    let (_dir, _clock, log) = fresh(small_config(1024));
    fill(&log, 40, |i| T0 + i);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let second = log.segments()[1].base_offset;
    // A reader holds a slice of the first segment.
    let held = log.read(0, 1 << 20, Isolation::LogEnd, true).unwrap();
    let held_bytes = held.slice.read_to_vec().unwrap();
    assert_eq!(log.delete_records_before(second + 1).unwrap(), second + 1);
    let report = log.delete_old_segments().unwrap();
    assert_eq!(report.deleted.len(), 1);
    assert_eq!(report.deleted[0].reason, RetentionReason::LogStartOffset);
    assert_eq!(log.log_start_offset(), second + 1);
    let deleted_path = {
        let mut p = held.slice.path().as_os_str().to_owned();
        p.push(".deleted");
        std::path::PathBuf::from(p)
    };
    assert!(deleted_path.exists());
    // Not yet due.
    assert_eq!(log.tick(T0 + 59_999).unwrap().unlinked, 0);
    assert!(deleted_path.exists());
    assert_eq!(log.tick(T0 + 60_000).unwrap().unlinked, 1);
    assert!(!deleted_path.exists());
    // The reader still reads its bytes.
    assert_eq!(held.slice.read_to_vec().unwrap(), held_bytes);
    // Idempotent.
    assert!(log.delete_old_segments().unwrap().deleted.is_empty());
}

/// The WARN and ERROR events of the closure's thread, as `level: message`.
fn warnings_during(f: impl FnOnce()) -> Vec<String> {
    events_during(f)
        .into_iter()
        .filter(|e| e.level <= tracing::Level::WARN)
        .map(|e| format!("{}: {}", e.level, e.message))
        .collect()
}

/// A tick reads `now` once; appends stamped from the same clock a few milliseconds later go
/// on beside it. Those are not future timestamps: no WARN, nothing reported, whether
/// `message.timestamp.after.max.ms` is Kafka's hour or unlimited. A timestamp no clock
/// explains (microseconds as milliseconds) is still reported and warned about.
#[test]
fn ticking_beside_appends_logs_no_future_timestamp_warning() {
    for after_max_ms in [3_600_000, i64::MAX] {
        // The system's time: an empty segment's largest timestamp is its file's mtime.
        let clock = std::sync::Arc::new(seglog::ManualClock::new(seglog::SystemClock.now_ms()));
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            retention_ms: 7 * 86_400_000,
            message_timestamp_after_max_ms: after_max_ms,
            ..small_config(1024)
        };
        let log = open(dir.path(), config, &clock);
        let warnings = warnings_during(|| {
            for i in 0..100 {
                let tick_now = clock.now_ms();
                log.append(&numbered(tick_now + 1 + i % 5, "r", 2)).unwrap();
                if i % 10 == 0 {
                    log.roll().unwrap();
                }
                let report = log.tick(tick_now).unwrap();
                assert!(
                    report.retention.future_timestamp_segments.is_empty(),
                    "{report:?}"
                );
                clock.advance(1);
            }
        });
        assert!(warnings.is_empty(), "{after_max_ms}: {warnings:?}");
        assert!(log.segment_count() > 10);
    }

    let (_dir, clock, log) = fresh(LogConfig {
        retention_ms: 7 * 86_400_000,
        ..small_config(1024)
    });
    log.append(&numbered(T0 * 1000, "micros", 2)).unwrap();
    let warnings = warnings_during(|| {
        let report = log.tick(clock.now_ms()).unwrap();
        assert_eq!(report.retention.future_timestamp_segments, vec![0]);
    });
    assert_eq!(
        warnings,
        ["WARN: segments kept by time retention: their largest timestamp is in the future"]
    );
}
