//! The loader's rule for segments that do not meet after an unclean shutdown
//! (`docs/durability.md` section 4): an overlap drops every later segment; gaps are kept, as
//! Kafka keeps them, and reported.

use std::path::Path;

use seglog::{BatchBuilder, Log, LogConfig, RECOVERY_POINT_CHECKPOINT};

use crate::support::*;

fn follower_batch(base: i64, count: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(base);
    for i in 0..count {
        let value = format!("{:>100}", base + i as i64);
        b.append(T0 + i as i64, None, Some(value.as_bytes()), &[]);
    }
    b.build().unwrap().to_vec()
}

fn log_path(dir: &Path, base: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.log"))
}

fn offsets(log: &Log) -> Vec<i64> {
    values(log).iter().map(|v| v.0).collect()
}

/// Segment 0 holds 0-5, segment 6 holds 6-8; then a crash (no close).
fn two_segments(dir: &Path, config: &LogConfig) {
    let clock = clock();
    let log = open(dir, config.clone(), &clock);
    log.append(&numbered(T0, "a", 3)).unwrap();
    log.append(&numbered(T0, "b", 3)).unwrap();
    log.roll().unwrap();
    log.append(&numbered(T0, "c", 3)).unwrap();
    assert_eq!(log.segments().len(), 2);
    drop(log); // crash
}

/// Cuts the first segment's `.log` after its first batch (a tail lost cleanly at a batch
/// boundary, as a power loss leaves an unsynced tail).
fn lose_tail_of_first_segment(dir: &Path) {
    let path = log_path(dir, 0);
    let bytes = std::fs::read(&path).unwrap();
    // Batch length (bytes 8-12) counts what follows the 12-byte offset + length prefix.
    let first_batch = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize + 12;
    assert!(first_batch < bytes.len());
    std::fs::write(&path, &bytes[..first_batch]).unwrap();
}

/// A gap above the recovery point (here: a tail lost cleanly at a batch boundary, as a power
/// loss can leave an unsynced tail while the next segment's file survived) is kept, as Kafka's
/// `LogLoader` keeps it: it cannot be told from the gaps cleaning leaves (issue #25 finding 1,
/// `a_compacted_log_with_a_lagging_recovery_point_keeps_every_segment`). It is reported.
#[test]
fn a_gap_above_the_recovery_point_is_kept_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(1 << 20);
    two_segments(dir.path(), &config);
    // The standalone open checkpointed recovery point 0 at once.
    assert!(dir.path().join(RECOVERY_POINT_CHECKPOINT).exists());
    lose_tail_of_first_segment(dir.path());
    let log = open(dir.path(), config, &clock());
    let report = log.load_report();
    assert_eq!(report.discontinuity, None);
    assert_eq!(report.deleted_segments, Vec::<i64>::new());
    let gap = report.gaps.first().expect("the gap is reported");
    assert_eq!(
        (gap.base_offset, gap.next_offset, gap.next_base_offset),
        (0, 3, 6)
    );
    assert!(!gap.is_overlap());
    assert!(log_path(dir.path(), 6).exists());
    assert_eq!(offsets(&log), vec![0, 1, 2, 6, 7, 8]);
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(log.append(&numbered(T0, "d", 1)).unwrap().first_offset, 9);
}

/// With `LogOpenOptions::contiguous` (a consensus log, `seglog-raft`), the same gap drops
/// every later segment: no record is served after offsets the crash erased, and the next
/// append continues without a gap. Gaps below the recovery point are kept.
#[test]
fn a_contiguous_log_drops_the_segments_after_a_gap_a_crash_created() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(1 << 20);
    two_segments(dir.path(), &config);
    lose_tail_of_first_segment(dir.path());
    let contiguous = || seglog::LogOpenOptions {
        clock: clock(),
        contiguous: true,
        ..seglog::LogOpenOptions::default()
    };
    let log = Log::open_with(dir.path(), config.clone(), contiguous()).unwrap();
    let report = log.load_report();
    let found = report.discontinuity.expect("a discontinuity");
    assert_eq!((found.base_offset, found.next_offset), (0, 3));
    assert_eq!(found.next_base_offset, 6);
    assert!(!found.is_overlap());
    assert_eq!(report.deleted_segments, vec![6]);
    assert!(!log_path(dir.path(), 6).exists());
    assert_eq!(offsets(&log), vec![0, 1, 2]);
    assert_eq!(log.append(&numbered(T0, "d", 1)).unwrap().first_offset, 3);
    drop(log);

    // Below the recovery point a gap is kept, contiguous or not.
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open_with(dir.path(), config.clone(), contiguous()).unwrap();
    log.append_as_follower(&follower_batch(0, 3)).unwrap();
    log.roll().unwrap();
    log.append_as_follower(&follower_batch(50, 3)).unwrap();
    log.flush().unwrap();
    drop(log); // crash
    let log = Log::open_with(dir.path(), config, contiguous()).unwrap();
    assert_eq!(log.load_report().discontinuity, None);
    assert_eq!(offsets(&log), vec![0, 1, 2, 50, 51, 52]);
}

/// Issue #25 finding 1 in the library: an unclean open of a compacted log whose recovery
/// point lags keeps every cleaned segment (the old gap rule dropped every segment after the
/// first one that ended below the next base).
#[test]
fn an_unclean_open_of_a_compacted_log_with_a_lagging_recovery_point_keeps_every_segment() {
    let dir = tempfile::tempdir().unwrap();
    // Segments of one ~1 KiB batch each: the cleaner cannot group two into one.
    let mut config = small_config(1200);
    config.cleanup_policy = seglog::CleanupPolicy::Compact;
    let clock = clock();
    let log = open(dir.path(), config.clone(), &clock);
    // Six segments of three keyed records each, every key overwritten in the next segment.
    for segment in 0..6 {
        let mut b = BatchBuilder::new(0);
        for key in 0..3 {
            let value = format!("{segment}-{key:>300}");
            b.append(
                T0,
                Some(format!("k{key}").as_bytes()),
                Some(value.as_bytes()),
                &[],
            );
        }
        log.append(&b.build().unwrap()).unwrap();
        log.roll().unwrap();
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.clean().unwrap().expect("a cleaning round");
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    let served = offsets(&log);
    assert!(served.len() < 18, "the cleaner removed records: {served:?}");
    drop(log); // crash
    // The recovery point lags: at 0, as a broker's may for up to a minute.
    let path = dir.path().join(RECOVERY_POINT_CHECKPOINT);
    let text = std::fs::read_to_string(&path).unwrap();
    let lagging: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| match line.rsplit_once(' ') {
            Some((tp, _)) if i >= 2 => format!("{tp} 0"),
            _ => line.to_owned(),
        })
        .collect();
    assert_eq!(lagging.len(), 3, "one entry: {text}");
    std::fs::write(&path, lagging.join("\n") + "\n").unwrap();
    let log = open(dir.path(), config, &clock);
    let report = log.load_report();
    assert!(!report.had_clean_shutdown);
    assert_eq!(report.deleted_segments, Vec::<i64>::new());
    assert!(
        !report.gaps.is_empty(),
        "the cleaned segments end below the next base: {report:?}"
    );
    let after: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(after, bases);
    assert_eq!(offsets(&log), served);
}

#[test]
fn without_a_recovery_point_entry_gaps_are_kept_like_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(1 << 20);
    two_segments(dir.path(), &config);
    std::fs::remove_file(dir.path().join(RECOVERY_POINT_CHECKPOINT)).unwrap();
    lose_tail_of_first_segment(dir.path());
    let log = open(dir.path(), config, &clock());
    assert_eq!(log.load_report().discontinuity, None);
    assert_eq!(offsets(&log), vec![0, 1, 2, 6, 7, 8]);
}

#[test]
fn an_overlapping_segment_is_never_served_with_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(1 << 20);
    two_segments(dir.path(), &config);
    // Segment 0 grows past segment 6's base (as if segment 6's removal had been undone).
    let path = log_path(dir.path(), 0);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut extra = numbered(T0, "x", 2);
    extra[..8].copy_from_slice(&6i64.to_be_bytes());
    bytes.extend_from_slice(&extra);
    std::fs::write(&path, bytes).unwrap();
    let log = open(dir.path(), config, &clock());
    let found = log.load_report().discontinuity.expect("a discontinuity");
    assert!(found.is_overlap());
    assert_eq!((found.next_offset, found.next_base_offset), (8, 6));
    assert_eq!(log.segments().len(), 1);
    assert_eq!(offsets(&log), (0..8).collect::<Vec<_>>());
    assert_eq!(log.log_end_offset(), 8);
}

#[test]
fn a_follower_roll_across_a_gap_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(600);
    let clock = clock();
    let log = open(dir.path(), config.clone(), &clock);
    log.append_as_follower(&follower_batch(0, 3)).unwrap();
    // Compacted data: the next batch starts well above the log end offset and does not fit,
    // so the roll puts the gap at the end of the sealed segment.
    log.append_as_follower(&follower_batch(50, 3)).unwrap();
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(
        bases,
        vec![0, 50],
        "the follower append rolled at its base offset"
    );
    // The roll flushed below the gap and moved the recovery point over it.
    assert!(log.recovery_point() >= 50);
    drop(log); // crash
    let log = open(dir.path(), config, &clock);
    assert_eq!(log.load_report().discontinuity, None);
    assert_eq!(offsets(&log), vec![0, 1, 2, 50, 51, 52]);
}

#[test]
fn a_truncation_inside_a_batch_leaves_a_gap_that_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(1 << 20);
    let clock = clock();
    let log = open(dir.path(), config.clone(), &clock);
    log.append(&numbered(T0, "a", 3)).unwrap();
    log.append(&numbered(T0, "b", 3)).unwrap();
    // Offset 4 is inside the batch 3-5: the whole batch goes, the log end becomes 4.
    log.truncate_to(4).unwrap();
    assert_eq!(log.log_end_offset(), 4);
    assert_eq!(log.recovery_point(), 4);
    log.roll().unwrap();
    log.append(&numbered(T0, "c", 2)).unwrap();
    assert_eq!(offsets(&log), vec![0, 1, 2, 4, 5]);
    drop(log); // crash
    let log = open(dir.path(), config, &clock);
    assert_eq!(log.load_report().discontinuity, None);
    assert_eq!(offsets(&log), vec![0, 1, 2, 4, 5]);
}

#[test]
fn a_clean_open_can_trust_sealed_segments_and_still_checks_the_last_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(600);
    let clock = clock();
    let log = open(dir.path(), config.clone(), &clock);
    append_numbered(&log, 20, "r", 3);
    let before = values(&log);
    let segments = log.segments();
    assert!(segments.len() >= 3);
    log.close().unwrap();
    drop(log);
    // The last segment's index is zero-padded (never trimmed): the full check rebuilds it.
    let last = segments.last().unwrap().base_offset;
    let index = dir.path().join(format!("{last:020}.index"));
    let mut bytes = std::fs::read(&index).unwrap();
    bytes.resize(4096, 0);
    std::fs::write(&index, bytes).unwrap();
    let log = Log::open_with(
        dir.path(),
        config,
        seglog::LogOpenOptions {
            clock: clock.clone(),
            trust_clean_shutdown: true,
            ..seglog::LogOpenOptions::default()
        },
    )
    .unwrap();
    let report = log.load_report();
    assert!(report.had_clean_shutdown);
    // Only the damaged last segment is rebuilt (by a recovery); sealed ones are trusted.
    assert!(report.recovered().all(|b| b == last));
    let rebuilt: Vec<i64> = report
        .segments
        .iter()
        .filter(|s| s.rebuilt.is_some())
        .map(|s| s.base_offset)
        .collect();
    assert_eq!(rebuilt, vec![last]);
    assert_eq!(values(&log), before);
}

#[test]
fn a_log_dir_truncation_checkpoints_its_recovery_point_at_once() {
    let root = tempfile::tempdir().unwrap();
    let log_dir = seglog::LogDir::open(root.path(), small_config(1 << 20)).unwrap();
    let tp = seglog::TopicPartition::new("t", 0);
    let log = log_dir.get_or_create(&tp).unwrap();
    log.append(&numbered(T0, "a", 3)).unwrap();
    log.append(&numbered(T0, "b", 3)).unwrap();
    log.flush().unwrap();
    log_dir.checkpoint().unwrap();
    log.truncate_to(3).unwrap();
    let file = std::fs::read_to_string(root.path().join(RECOVERY_POINT_CHECKPOINT)).unwrap();
    assert!(file.lines().any(|l| l == "t 0 3"), "{file}");
}
