//! The log-level bugs of spec §7, one named test each.

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use seglog::{CLEAN_SHUTDOWN_FILE, Clock, Log, LogConfig, ManualClock};

use crate::support::*;

/// A [`fresh`] log under `config` holding 40 batches of two `k-<i>` records.
fn with_segments(config: LogConfig) -> (tempfile::TempDir, Arc<ManualClock>, Log) {
    let (dir, clock, log) = fresh(config);
    append_numbered(&log, 40, "k", 2);
    (dir, clock, log)
}

/// KAFKA-10471: the marker is deleted before loading, so a crash (or failure) while loading
/// counts as unclean next time.
#[test]
fn kafka_10471_marker_is_consumed_before_loading() {
    let (dir, clock, log) = with_segments(small_config(1024));
    log.close().unwrap();
    drop(log);
    // Make loading fail after the marker was read: a time index that is a directory.
    let ti = dir.path().join("00000000000000000000.timeindex");
    std::fs::remove_file(&ti).unwrap();
    std::fs::create_dir(&ti).unwrap();
    assert!(Log::open(dir.path(), small_config(1024)).is_err());
    assert!(!dir.path().join(CLEAN_SHUTDOWN_FILE).exists());
    std::fs::remove_dir(&ti).unwrap();
    let log = open(dir.path(), small_config(1024), &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(values(&log).len(), 80);
}

/// KAFKA-1112: kill -9 leaves the active segment's index untrimmed (preallocated, zero
/// padded); the restart must recover it rather than fail.
#[test]
fn kafka_1112_zero_padded_active_index_after_a_crash() {
    let (dir, clock, log) = with_segments(small_config(1024));
    let active = log.segments().last().unwrap().base_offset;
    drop(log);
    let index = dir.path().join(format!("{active:020}.index"));
    assert_eq!(
        std::fs::metadata(&index).unwrap().len(),
        4096,
        "preallocated"
    );
    let log = open(dir.path(), small_config(1024), &clock);
    assert!(log.load_report().recovered().any(|b| b == active));
    assert_eq!(values(&log).len(), 80);
}

/// KAFKA-10207 / KAFKA-19200: a zero-padded time index on a segment below the recovery point
/// must not read as "largest timestamp 0" and trigger time retention.
#[test]
fn kafka_10207_zero_padded_time_index_does_not_trigger_time_retention() {
    let (dir, clock, log) = with_segments(small_config(1024));
    let first = log.segments()[0].base_offset;
    log.close().unwrap();
    drop(log);
    let ti = dir.path().join(format!("{first:020}.timeindex"));
    let file = std::fs::OpenOptions::new().write(true).open(&ti).unwrap();
    file.set_len(4092).unwrap(); // zero padded to a whole number of entries, as preallocated
    let config = LogConfig {
        retention_ms: 24 * 3600 * 1000,
        ..small_config(1024)
    };
    let log = open(dir.path(), config, &clock);
    assert!(log.segments()[0].largest_timestamp_ms.unwrap() >= T0);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert!(log.delete_old_segments().unwrap().deleted.is_empty());
}

/// KAFKA-6482: timestamps in the future block time retention (Kafka keeps the segment and
/// warns; seglog reports it).
#[test]
fn kafka_6482_future_timestamps_block_time_retention() {
    let (_dir, clock, log) = fresh(LogConfig {
        retention_ms: 1000,
        ..small_config(1024)
    });
    log.append(&numbered(T0 * 1000, "micros", 2)).unwrap();
    log.roll().unwrap();
    log.append(&numbered(T0 - 5000, "old", 2)).unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    clock.advance(10_000);
    let report = log.delete_old_segments().unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(report.future_timestamp_segments, vec![0]);
}

/// KAFKA-5634 / KAFKA-12177: nothing at or above the high watermark is deleted, and
/// log-start retention runs first (so a second pass is a no-op).
#[test]
fn kafka_5634_retention_never_deletes_at_or_above_the_high_watermark() {
    let (_dir, _clock, log) = with_segments(LogConfig {
        retention_bytes: 0,
        ..small_config(1024)
    });
    let segments = log.segments();
    log.set_high_watermark(segments[2].base_offset).unwrap();
    let report = log.delete_old_segments().unwrap();
    assert_eq!(report.deleted.len(), 2);
    assert_eq!(log.log_start_offset(), segments[2].base_offset);
    assert!(log.delete_old_segments().unwrap().deleted.is_empty());
    assert_eq!(values(&log).first().unwrap().0, segments[2].base_offset);
}

/// KAFKA-4451 / KAFKA-6264: an offset more than i32::MAX above the base forces a roll; one
/// exactly i32::MAX above still fits.
#[test]
fn kafka_6264_offset_overflow_forces_a_roll() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    let follower = |base: i64| {
        let mut b = seglog::BatchBuilder::new(base);
        b.append(T0, None, Some(b"v"), &[]);
        b.build().unwrap()
    };
    log.append_as_follower(&follower(0)).unwrap();
    let max = i64::from(i32::MAX);
    assert!(!log.append_as_follower(&follower(max)).unwrap().rolled);
    assert_eq!(log.segment_count(), 1);
    let info = log.append_as_follower(&follower(max + 1)).unwrap();
    assert!(info.rolled);
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, max + 1]);
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, vec![0, max, max + 1]);
    log.close().unwrap();
    drop(log);
    let log = Log::open(dir.path(), small_config(1 << 20)).unwrap();
    assert_eq!(log.log_end_offset(), max + 2);
}

/// KAFKA-6388: a roll that lands on the base of an empty active segment (its tiny index
/// reports full at once) replaces it instead of failing.
#[test]
fn kafka_6388_roll_onto_an_empty_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_index_bytes: 12,
        ..small_config(1 << 20)
    };
    let log = open(dir.path(), config.clone(), &clock());
    append_numbered(&log, 5, "full", 1);
    assert_eq!(values(&log).len(), 5);
    assert!(log.segment_count() >= 5);
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), config, &clock());
    assert_eq!(values(&log).len(), 5);
}

/// KAFKA-13603: a clean shutdown with an empty active segment (no index written yet in
/// Kafka) must reopen without treating it as corrupt.
#[test]
fn kafka_13603_clean_shutdown_with_an_empty_active_segment() {
    let (dir, clock, log) = with_segments(small_config(1024));
    log.roll().unwrap();
    let active = log.segments().last().unwrap().clone();
    assert_eq!(active.size_bytes, 0);
    log.close().unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join(format!("{:020}.index", active.base_offset))).unwrap();
    let log = open(dir.path(), small_config(1024), &clock);
    assert!(log.load_report().had_clean_shutdown);
    assert_eq!(log.log_end_offset(), 80);
    assert_eq!(values(&log).len(), 80);
}

/// KAFKA-7283: indexes below the recovery point are not trusted blindly here: a corrupt one is
/// detected and rebuilt (seglog's stricter policy), and reads stay correct.
#[test]
fn kafka_7283_corrupt_index_below_the_recovery_point_is_rebuilt() {
    let (dir, clock, log) = with_segments(small_config(1024));
    let first = log.segments()[0].clone();
    let expected = values(&log);
    log.close().unwrap();
    drop(log);
    let index = dir.path().join(format!("{:020}.index", first.base_offset));
    assert!(first.index_entries > 0);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap();
    file.write_all_at(&[0, 0, 0, 7, 0, 0, 3, 0xff], 0).unwrap();
    let log = open(dir.path(), small_config(1024), &clock);
    // After a clean shutdown sealed segments are checked on first use, not at load.
    assert_eq!(values(&log), expected);
    let first_use = log.first_use_reports();
    let rebuilt = first_use
        .iter()
        .find(|(base, _)| *base == first.base_offset)
        .and_then(|(_, report)| report.rebuilt.clone());
    assert!(rebuilt.is_some(), "{first_use:?}");
}

/// KAFKA-3968 / KAFKA-16541: checkpoints are written via a temp file and rename; no temp file
/// is left behind and a torn temp file never replaces the checkpoint.
#[test]
fn kafka_16541_checkpoints_are_replaced_atomically() {
    let (dir, clock, log) = with_segments(small_config(1024));
    log.tick(clock.now_ms()).unwrap();
    let cp = dir.path().join(seglog::RECOVERY_POINT_CHECKPOINT);
    assert!(cp.exists());
    assert!(
        !dir.path()
            .join(format!("{}.tmp", seglog::RECOVERY_POINT_CHECKPOINT))
            .exists()
    );
    // A crash mid-write leaves a torn .tmp: the real checkpoint is what counts.
    std::fs::write(
        dir.path()
            .join(format!("{}.tmp", seglog::RECOVERY_POINT_CHECKPOINT)),
        "0\n9",
    )
    .unwrap();
    let recovery_point = log.recovery_point();
    drop(log);
    let log = open(dir.path(), small_config(1024), &clock);
    assert_eq!(log.load_report().recovery_point_checkpoint, recovery_point);
}

/// KAFKA-6264: a segment whose offsets overflow its base (here written by hand: offsets 0..5,
/// then 2^31+5..) is split at load, even after a clean shutdown with indexes that pass every
/// check (Kafka's `hasOverflow`), and the log keeps working.
#[test]
fn kafka_6264_overflowed_segment_is_split_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let high = (1i64 << 31) + 5;
    let batch = |base: i64, count: i64, ts: i64| {
        let mut b = seglog::BatchBuilder::new(base);
        for i in 0..count {
            b.append_with_offset(base + i, ts + i, None, Some(b"v"), &[])
                .unwrap();
        }
        b.build().unwrap().to_vec()
    };
    let mut bytes = batch(0, 5, T0);
    bytes.extend(batch(high, 3, T0 - 100));
    std::fs::write(dir.path().join("00000000000000000000.log"), &bytes).unwrap();
    std::fs::write(dir.path().join("00000000000000000000.index"), []).unwrap();
    // One time-index entry: the max timestamp T0+4 at relative offset 4.
    let mut entry = (T0 + 4).to_be_bytes().to_vec();
    entry.extend(4i32.to_be_bytes());
    std::fs::write(dir.path().join("00000000000000000000.timeindex"), entry).unwrap();
    std::fs::write(dir.path().join(CLEAN_SHUTDOWN_FILE), []).unwrap();

    let clock = clock();
    let log = open(dir.path(), small_config(1 << 20), &clock);
    let report = log.load_report().clone();
    assert!(report.had_clean_shutdown);
    assert_eq!(
        report.recovered().count(),
        2,
        "the new segments' indexes are rebuilt"
    );
    assert_eq!(report.splits.len(), 1);
    assert_eq!(report.splits[0].new_base_offsets, vec![0, high]);
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, high]);
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4, high, high + 1, high + 2]);
    assert_eq!(log.segments()[0].largest_timestamp_ms, Some(T0 + 4));
    log.append(&numbered(T0, "after", 2)).unwrap();
    assert_eq!(log.log_end_offset(), high + 5);
    log.close().unwrap();
    drop(log);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".deleted") || n.contains(".swap") || n.contains(".cleaned"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    let log = Log::open(dir.path(), small_config(1 << 20)).unwrap();
    assert!(log.load_report().splits.is_empty());
    assert_eq!(log.log_end_offset(), high + 5);
}

/// A read-only open cannot split: an overflowed segment that needs a recovery is an error,
/// and nothing in the directory changes.
#[test]
fn kafka_6264_read_only_open_does_not_split() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = seglog::BatchBuilder::new(0);
    bytes.append(T0, None, Some(b"v"), &[]);
    let mut log_bytes = bytes.build().unwrap().to_vec();
    let mut high = seglog::BatchBuilder::new((1 << 31) + 5);
    high.append(T0, None, Some(b"v"), &[]);
    log_bytes.extend_from_slice(&high.build().unwrap());
    let path = dir.path().join("00000000000000000000.log");
    std::fs::write(&path, &log_bytes).unwrap();
    let err = Log::open_read_only(dir.path(), LogConfig::default()).unwrap_err();
    assert!(
        matches!(
            err,
            seglog::Error::Segment(seglog_segment::Error::OffsetOverflow { .. })
        ),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1);
}

/// A read-only open plans the split it cannot make: a segment no split can fix (its first
/// batch lies below its base offset) fails it as it fails a read-write open, so a check
/// before a repair (`seglog recover`) finds it without changing anything.
#[test]
fn kafka_6264_read_only_open_reports_an_unsplittable_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut low = seglog::BatchBuilder::new(0);
    low.append(T0, None, Some(b"v"), &[]);
    let path = dir.path().join("00000000000000000100.log");
    std::fs::write(&path, low.build().unwrap()).unwrap();
    for read_only in [true, false] {
        let options = seglog::LogOpenOptions {
            read_only,
            ..seglog::LogOpenOptions::default()
        };
        let err = Log::open_with(dir.path(), LogConfig::default(), options).unwrap_err();
        assert!(
            matches!(err, seglog::Error::UnsplittableSegment { .. }),
            "read_only {read_only}: {err}"
        );
    }
}

/// The name of segment `base`'s file of extension `ext`.
fn segment_file(base: i64, ext: &str) -> String {
    format!("{base:020}.{ext}")
}

/// Bug 13 (KAFKA-3968): the partition directory is fsynced at every point the protocol of
/// `docs/durability.md` (section 2, principle c) names, and only where a create, rename or
/// unlink needs it: a new segment's name (roll, then the next durable append or flush; the
/// loader's first segment), the `.deleted` renames of retention before the pass returns,
/// truncation's renames before the new segment exists and the new segment after, every
/// checkpoint and clean-shutdown-marker write after its rename, the marker's consumption before
/// loading. Counted and listed through the I/O seam's test backend: its durable listing is
/// what the directory held right before the last successful directory fsync.
#[test]
fn kafka_3968_the_directory_is_fsynced_wherever_the_protocol_says() {
    let dir = tempfile::tempdir().unwrap();
    let faults = seglog_faults::FaultInjector::new(dir.path());
    let listing = || {
        faults
            .durable_names(dir.path())
            .expect("the directory was fsynced")
    };
    let config = LogConfig {
        retention_bytes: 100,
        file_delete_delay_ms: i64::MAX / 2,
        ..small_config(1 << 20)
    };
    let clock = clock();

    // Open: the loader's first segment and the checkpoints written at once are durable names.
    let log = open_with_faults(dir.path(), config.clone(), &clock, &faults);
    let names = listing();
    for name in [
        segment_file(0, "log"),
        seglog::RECOVERY_POINT_CHECKPOINT.to_owned(),
        seglog::LOG_START_OFFSET_CHECKPOINT.to_owned(),
    ] {
        assert!(
            names.contains(&name),
            "{name} not durable after open: {names:?}"
        );
    }
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");

    // A roll creates the new segment without a directory fsync; the next durable append makes
    // its name durable with exactly one, and a durable append with nothing new needs none.
    log.append(&numbered(T0, "a", 3)).unwrap();
    let before = faults.dir_syncs();
    log.roll().unwrap();
    assert_eq!(faults.dir_syncs(), before, "a roll fsyncs the directory");
    assert!(!listing().contains(&segment_file(3, "log")));
    log.append_durable(&numbered(T0, "b", 2)).unwrap();
    assert_eq!(faults.dir_syncs(), before + 1);
    assert!(listing().contains(&segment_file(3, "log")));
    log.append_durable(&numbered(T0, "c", 1)).unwrap();
    assert_eq!(faults.dir_syncs(), before + 1);

    // A flush makes a rolled segment's name durable the same way, and then checkpoints the
    // recovery point it moved: three checkpoint files (recovery point, log start, high
    // watermark), each fsynced after its rename.
    log.roll().unwrap();
    log.append(&numbered(T0, "d", 2)).unwrap();
    log.flush().unwrap();
    assert_eq!(faults.dir_syncs(), before + 2 + 3);
    assert!(listing().contains(&segment_file(6, "log")));

    // Retention: the `.deleted` renames are durable when the pass returns.
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let before = faults.dir_syncs();
    let report = log.delete_old_segments().unwrap();
    assert!(!report.deleted.is_empty());
    assert!(faults.dir_syncs() > before);
    let names = listing();
    for deleted in &report.deleted {
        let file = segment_file(deleted.base_offset, "log");
        assert!(names.contains(&format!("{file}.deleted")), "{names:?}");
        assert!(!names.contains(&file), "{names:?}");
    }

    // Truncation: the unlinks are durable before the new segment exists (one fsync), and the
    // new segment's name after it (a second). Failing the second shows the first alone.
    let live: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    let before = faults.dir_syncs();
    faults.fail_nth_dir_sync(2, seglog_faults::FaultKind::Eio);
    assert!(log.truncate_fully_and_start_at(100).is_err());
    faults.clear();
    assert_eq!(faults.dir_syncs(), before + 2);
    let names = listing();
    for base in live {
        let file = segment_file(base, "log");
        assert!(!names.contains(&format!("{file}.deleted")), "{names:?}");
        assert!(!names.contains(&file), "{names:?}");
    }
    assert!(!names.contains(&segment_file(100, "log")), "{names:?}");
    assert!(dir.path().join(segment_file(100, "log")).exists());
    drop(log); // poisoned by the failed fsync

    // Reopen: the marker-free directory is recovered; a clean close writes the two checkpoints
    // and then the marker, each followed by a directory fsync (three at least).
    let before = {
        let log = open_with_faults(dir.path(), config.clone(), &clock, &faults);
        assert!(listing().contains(&segment_file(100, "log")));
        let before = faults.dir_syncs();
        log.close().unwrap();
        before
    };
    assert!(
        faults.dir_syncs() >= before + 3,
        "{}",
        faults.dir_syncs() - before
    );
    let names = listing();
    assert!(names.contains(CLEAN_SHUTDOWN_FILE), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");

    // The next open consumes the marker, durably, before it loads anything.
    let log = open_with_faults(dir.path(), config.clone(), &clock, &faults);
    assert!(log.load_report().had_clean_shutdown);
    assert!(!listing().contains(CLEAN_SHUTDOWN_FILE));
    drop(log);

    // A log.dirs root: a new partition directory's name, the root checkpoints and the marker.
    let root = tempfile::tempdir().unwrap();
    let faults = seglog_faults::FaultInjector::new(root.path());
    let root_listing = || {
        faults
            .durable_names(root.path())
            .expect("the root was fsynced")
    };
    let log_dir = seglog::LogDir::open_with(
        root.path(),
        config,
        seglog::LogOpenOptions {
            io: faults.io(),
            ..seglog::LogOpenOptions::default()
        },
    )
    .unwrap();
    let log = log_dir
        .get_or_create(&seglog::TopicPartition::new("t", 0))
        .unwrap();
    let names = root_listing();
    for name in ["t-0", seglog::RECOVERY_POINT_CHECKPOINT] {
        assert!(
            names.contains(name),
            "{name} not durable in the root: {names:?}"
        );
    }
    let partition = root.path().join("t-0");
    assert!(
        faults
            .durable_names(&partition)
            .is_some_and(|names| names.contains(&segment_file(0, "log"))),
        "the partition's first segment"
    );
    drop(log);
    log_dir.close().unwrap();
    assert!(root_listing().contains(CLEAN_SHUTDOWN_FILE));
}
