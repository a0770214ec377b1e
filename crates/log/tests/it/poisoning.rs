//! After a failed write or fsync the log refuses writes until reopened, and recovers then.

use seglog::{Clock, Error};
use seglog_faults::{FaultInjector, FaultKind};

use crate::support::*;

#[test]
fn failed_write_poisons_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new(dir.path());
    let clock = clock();
    let log = open_with_faults(dir.path(), small_config(1 << 20), &clock, &faults);
    log.append(&numbered(T0, "ok", 2)).unwrap();
    faults.fail_nth_write(1, FaultKind::Enospc);
    assert!(log.append(&numbered(T0, "bad", 2)).is_err());
    faults.clear();
    let e = log.append(&numbered(T0, "after", 1)).unwrap_err();
    assert!(matches!(e, Error::Poisoned { .. }), "{e}");
    // Readers still see what was published.
    assert_eq!(values(&log).len(), 2);
    assert!(
        log.close().is_err(),
        "no clean-shutdown marker after a failure"
    );
    drop(log);
    let log = open(dir.path(), small_config(1 << 20), &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(values(&log).len(), 2);
    assert_eq!(
        log.append(&numbered(T0, "again", 1)).unwrap().first_offset,
        2
    );
}

#[test]
fn failed_fsync_poisons_durable_appends() {
    let (_dir, faults, log) = fresh_with_faults(small_config(1 << 20));
    log.append_durable(&numbered(T0, "ok", 1)).unwrap();
    faults.fail_nth_sync(1, FaultKind::Eio);
    assert!(log.append_durable(&numbered(T0, "bad", 1)).is_err());
    faults.clear();
    assert!(matches!(
        log.append(&numbered(T0, "x", 1)),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(log.flush(), Err(Error::Poisoned { .. })));
}

#[test]
fn background_ticker_applies_retention() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = seglog::LogConfig {
        retention_ms: 1000,
        file_delete_delay_ms: 0,
        ..small_config(1024)
    };
    let log = std::sync::Arc::new(open(dir.path(), config, &clock));
    append_numbered(&log, 30, "r", 2);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    clock.advance(10_000);
    let ticker = log.spawn_ticker(std::time::Duration::from_millis(5));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while log.log_start_offset() != 60 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    ticker.stop().unwrap();
    assert_eq!(log.log_start_offset(), 60);
    assert_eq!(log.segment_count(), 1);
}

/// Issue 12, bug 6: the errors of background ticks (here a `.deleted` file that cannot be
/// unlinked, requeued at every tick) reach the user: counted, kept until taken, and returned
/// by `stop`.
#[test]
fn background_tick_errors_reach_the_user() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = seglog::LogConfig {
        retention_ms: 1000,
        file_delete_delay_ms: 1000,
        flush_ms: 0,
        ..small_config(1024)
    };
    let log = std::sync::Arc::new(open(dir.path(), config, &clock));
    append_numbered(&log, 30, "r", 2);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    clock.advance(10_000);
    let report = log.tick(clock.now_ms()).unwrap();
    let first = report.retention.deleted[0].base_offset;
    let doomed = dir.path().join(format!(
        "{}.deleted",
        seglog_segment::file_name(first, seglog_segment::FileKind::LOG)
    ));
    // A directory in its place: the unlink fails (EISDIR) at every try.
    std::fs::remove_file(&doomed).unwrap();
    std::fs::create_dir(&doomed).unwrap();
    std::fs::write(doomed.join("keep"), b"x").unwrap();
    clock.advance(2_000);
    let names_doomed = |e: &Error| matches!(e, Error::Segment(seglog_segment::Error::Io { path, .. }) if *path == doomed);
    let wait_until = |done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(done(), "timed out");
    };

    let ticker = log.spawn_ticker(Duration::from_millis(5));
    wait_until(&|| ticker.failed_ticks() >= 2);
    let error = ticker.stop().unwrap_err();
    assert!(names_doomed(&error), "{error}");

    let ticker = log.spawn_ticker(Duration::from_millis(5));
    wait_until(&|| ticker.failed_ticks() >= 1);
    // A failed tick stops before its flush (`flush.ms` = 0: every tick that gets there
    // flushes), so the recovery point stays below the log end until the unlink succeeds.
    log.append(&numbered(T0, "more", 1)).unwrap();
    assert!(log.recovery_point() < log.log_end_offset());
    std::fs::remove_dir_all(&doomed).unwrap();
    wait_until(&|| log.recovery_point() == log.log_end_offset());
    let error = ticker.take_error().expect("the failure was kept");
    assert!(names_doomed(&error), "{error}");
    assert!(ticker.take_error().is_none());
    ticker.stop().unwrap();
}
