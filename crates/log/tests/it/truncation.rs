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
