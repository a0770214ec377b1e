//! truncate_to, truncate_fully_and_start_at and DeleteRecords.

use seglog::{Error, Isolation};

use crate::support::*;

#[test]
fn truncate_inside_an_older_segment_drops_later_segments() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 40, "t", 1);
    log.set_high_watermark(40).unwrap();
    let segments = log.segments();
    assert!(segments.len() >= 3);
    let target = segments[1].base_offset + 1;
    log.truncate_to(target).unwrap();
    assert_eq!(log.log_end_offset(), target);
    assert_eq!(log.high_watermark(), target);
    assert_eq!(log.segment_count(), 2);
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, (0..target).collect::<Vec<_>>());
    // Appends continue at the target.
    let info = log.append(&numbered(T0, "again", 2)).unwrap();
    assert_eq!(info.first_offset, target);
    // No-op at or above the LEO.
    log.truncate_to(1000).unwrap();
    assert_eq!(log.log_end_offset(), target + 2);
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small_config(1024), &clock);
    assert_eq!(log.log_end_offset(), target + 2);
    assert_eq!(values(&log).len() as i64, target + 2);
}

#[test]
fn truncate_fully_starts_an_empty_log_at_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1024), &clock());
    append_numbered(&log, 10, "t", 1);
    log.truncate_fully_and_start_at(0).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.segment_count()
        ),
        (0, 0, 1)
    );
    log.truncate_fully_and_start_at(500).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.high_watermark()
        ),
        (500, 500, 500)
    );
    assert_eq!(log.append(&numbered(T0, "x", 1)).unwrap().first_offset, 500);
    assert_eq!(values(&log), vec![(500, b"x-0".to_vec())]);
    // truncate_to below the first segment = truncate fully.
    log.truncate_to(7).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (7, 7));
}

#[test]
fn delete_records_needs_an_offset_at_or_below_the_hw() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    append_numbered(&log, 10, "d", 1);
    assert!(matches!(
        log.delete_records_before(5),
        Err(Error::OffsetOutOfRange { .. })
    ));
    log.set_high_watermark(8).unwrap();
    assert_eq!(log.delete_records_before(5).unwrap(), 5);
    assert!(matches!(
        log.read(4, 100, Isolation::LogEnd, true),
        Err(Error::OffsetOutOfRange { .. })
    ));
    assert_eq!(values(&log).first().unwrap().0, 5);
    assert_eq!(log.delete_records_before(-1).unwrap(), 8);
    // The log start survives a clean reopen through the checkpoint.
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small_config(1 << 20), &clock());
    assert_eq!(log.log_start_offset(), 8);
}

/// Kafka's `truncateTo` inside a batch (docs/durability.md, "Truncation inside a batch"): the
/// whole batch holding the offset goes, its records below the offset too, and the log end
/// becomes the offset. A reader then sees the records before that batch and nothing at the
/// offsets the batch held below the target (inside the range, not an error: a gap, as a
/// compacted log has); the next append takes the target offset, and reads from inside the
/// gap start at it. A reopen (clean or after a crash) keeps exactly that.
#[test]
fn truncating_inside_a_batch_removes_the_whole_batch_and_leaves_a_gap_below_the_offset() {
    let (dir, clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 3, "t", 10); // batches 0..=9, 10..=19, 20..=29
    log.set_high_watermark(30).unwrap();
    log.truncate_to(15).unwrap();
    assert_eq!(log.log_end_offset(), 15);
    assert_eq!(log.high_watermark(), 15);
    let offsets = |log: &seglog::Log, from: i64| -> Vec<i64> {
        log.owned_reader(from, Isolation::LogEnd)
            .until_caught_up()
            .map(|f| f.unwrap().record.offset)
            .collect()
    };
    // Offsets 10..=14 were in the removed batch: gone, though below the log end.
    assert_eq!(offsets(&log, 0), (0..10).collect::<Vec<_>>());
    assert_eq!(offsets(&log, 12), Vec::<i64>::new());
    assert!(
        log.read(12, 1 << 20, Isolation::LogEnd, true)
            .unwrap()
            .slice
            .is_empty()
    );
    // An offset above the new end is out of range.
    assert!(matches!(
        log.owned_reader(16, Isolation::LogEnd).next_available(),
        Err(Error::OffsetOutOfRange { .. })
    ));
    // Appends continue at the target; a read from inside the gap starts there.
    let info = log.append(&numbered(T0, "after", 3)).unwrap();
    assert_eq!(info.first_offset, 15);
    let expected: Vec<i64> = (0..10).chain(15..18).collect();
    assert_eq!(offsets(&log, 0), expected);
    assert_eq!(offsets(&log, 11), vec![15, 16, 17]);
    // A crash (drop without close) and a reopen keep exactly that: the gap lies below the
    // recovery point the truncation moved, so it is not taken for a lost tail.
    drop(log);
    let log = open(dir.path(), small_config(1 << 20), &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(offsets(&log, 0), expected);
    assert_eq!(log.log_end_offset(), 18);
}

/// Issue #26 item 6: after a truncation inside a batch the log end is the target offset (as
/// Kafka's `truncateTo` reports), and every reopen, clean or after a crash, ends there too (it
/// ended at the removed batch's base: a reopen reads the log end from the last segment's
/// batches, and Kafka's own reopen does the same). An empty segment at the target holds it.
#[test]
fn a_truncation_inside_a_batch_ends_at_the_target_after_every_reopen() {
    for crash in [false, true] {
        let (dir, clock, log) = fresh(small_config(1 << 20));
        append_numbered(&log, 2, "t", 3); // batches 0..=2, 3..=5
        log.truncate_to(4).unwrap();
        assert_eq!(log.log_end_offset(), 4, "crash {crash}");
        let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        assert_eq!(
            bases,
            vec![0, 4],
            "crash {crash}: an empty segment at the target"
        );
        if crash {
            drop(log);
        } else {
            log.close().unwrap();
            drop(log);
        }
        for reopen in 0..2 {
            let log = open(dir.path(), small_config(1 << 20), &clock);
            assert_eq!(log.log_end_offset(), 4, "crash {crash}, reopen {reopen}");
            let read: Vec<i64> = log
                .owned_reader(0, Isolation::LogEnd)
                .until_caught_up()
                .map(|f| f.unwrap().record.offset)
                .collect();
            assert_eq!(read, vec![0, 1, 2], "crash {crash}, reopen {reopen}");
            if reopen == 1 {
                assert_eq!(log.append(&numbered(T0, "n", 1)).unwrap().first_offset, 4);
            }
            log.close().unwrap();
        }
    }
    // A truncation at a batch boundary rolls nothing.
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 2, "t", 3);
    log.truncate_to(3).unwrap();
    assert_eq!(log.segments().len(), 1);
    assert_eq!(log.log_end_offset(), 3);
}

/// A segment a truncation removed stays removed after the log grows past its offsets and then
/// crashes. It used to wait `file.delete.delay.ms` as `.deleted` files; a truncation inside a
/// later batch then rolled at its target and left the removed segment's offsets in a hole
/// between two live segments, where the loader's rule for an unexplained `.deleted` segment
/// renamed it back: the next open served the truncated record again (found by the compaction
/// model test's proptest in CI).
#[test]
fn a_truncated_segment_is_not_served_again_after_the_log_grows_past_it_and_crashes() {
    let (dir, clock, log) = fresh(small_config(1 << 20));
    log.append(&numbered(T0, "a", 1)).unwrap(); // 0
    log.append(&numbered(T0, "a", 2)).unwrap(); // 1..2
    log.roll().unwrap();
    log.append(&numbered(T0, "removed", 1)).unwrap(); // 3, in segment 3
    log.truncate_to(0).unwrap();
    assert!(
        std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".deleted")),
        "a truncation leaves no .deleted file behind"
    );
    log.append(&numbered(T0, "b", 3)).unwrap(); // 0..2
    log.append(&numbered(T0, "b", 3)).unwrap(); // 3..5
    // Inside the batch 3..5: the batch goes and the log rolls at 4, leaving a hole at 3.
    log.truncate_to(4).unwrap();
    log.append(&numbered(T0, "c", 1)).unwrap(); // 4
    let before = values(&log);
    assert_eq!(
        before.iter().map(|v| v.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 4]
    );
    drop(log); // a crash: no close
    let log = open(dir.path(), small_config(1 << 20), &clock);
    assert!(log.load_report().restored_files.is_empty());
    assert_eq!(values(&log), before);
}
