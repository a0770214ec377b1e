//! `Log::offset_for_timestamp(ListOffsets::Timestamp)` over several segments of large
//! batches (the timestamp benchmark's shape, where the segment reads one batch per lookup)
//! and small ones: the first record whose timestamp reaches the target, for every target.

use seglog::{Isolation, ListOffsets, LogConfig};

use crate::support::{T0, batch, fresh, read_all};

#[test]
fn every_target_finds_the_first_record_reaching_it() {
    let config = LogConfig {
        segment_bytes: 96 * 1024,
        index_interval_bytes: 4096,
        segment_index_bytes: 64 * 1024,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    };
    let (_dir, _clock, log) = fresh(config);
    let value = [7u8; 100];
    let mut ts = T0;
    // ~10 KB batches of 100 records, then batches of 3, timestamps increasing.
    for i in 0..40 {
        let count = if i < 30 { 100 } else { 3 };
        let values: Vec<&[u8]> = (0..count).map(|_| &value[..]).collect();
        log.append(&batch(ts, &values)).unwrap();
        ts += count as i64;
    }
    assert!(log.segment_count() > 1, "several segments");
    let records = read_all(&log, 0, Isolation::LogEnd);
    for target in (T0 - 2..ts + 2).step_by(3) {
        let got = log
            .offset_for_timestamp(ListOffsets::Timestamp(target))
            .unwrap();
        let expected = records.iter().find(|(_, t, _)| *t >= target);
        assert_eq!(
            got.map(|g| (g.offset, g.timestamp_ms)),
            expected.map(|(o, t, _)| (*o, *t)),
            "target {target}"
        );
    }
}

/// `Log::read_by_timestamp_into` answers as `offset_for_timestamp` and hands over exactly the
/// batch a fetch at the answer returns first; above the high watermark it answers nothing for
/// consumers, and a batch straddling a mid-batch high watermark is cut as the fetch cuts it.
#[test]
fn read_by_timestamp_into_is_the_lookup_and_the_fetch_in_one() {
    let config = LogConfig {
        segment_bytes: 96 * 1024,
        index_interval_bytes: 4096,
        segment_index_bytes: 64 * 1024,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    };
    let (_dir, _clock, log) = fresh(config);
    let value = [7u8; 100];
    let mut ts = T0;
    for i in 0..40 {
        let count = if i < 30 { 100 } else { 3 };
        let values: Vec<&[u8]> = (0..count).map(|_| &value[..]).collect();
        log.append(&batch(ts, &values)).unwrap();
        ts += count as i64;
    }
    assert!(log.segment_count() > 1, "several segments");
    // A reused buffer, never cleared, starting with stale bytes.
    let mut buf = vec![0x5Au8; 50_000];
    let mut fetched = Vec::new();
    for target in (T0 - 2..ts + 2).step_by(7) {
        let want = log
            .offset_for_timestamp(ListOffsets::Timestamp(target))
            .unwrap();
        let got = log
            .read_by_timestamp_into(target, Isolation::LogEnd, &mut buf)
            .unwrap();
        assert_eq!(
            got.as_ref().map(|g| g.found),
            want,
            "target {target}: same answer"
        );
        let Some(got) = got else { continue };
        let fetch = log
            .read_into(got.found.offset, 1, Isolation::LogEnd, true, &mut fetched)
            .unwrap();
        assert_eq!(
            (got.segment_base_offset, got.position),
            (fetch.fetch_offset.segment_base_offset, fetch.position),
            "target {target}"
        );
        let first = seglog::BatchRef::parse(&fetched, fetch.position).unwrap();
        assert_eq!(&buf[got.batch.clone()], first.as_bytes(), "target {target}");
    }
    // Consumers: nothing at or above the high watermark. Offsets 0..3000 are 30 batches of
    // 100, then 3-record batches: a high watermark of 3001 lies inside batch 3000..=3002.
    assert_eq!(log.set_high_watermark(3001).unwrap(), 3001);
    assert_eq!(
        log.read_by_timestamp_into(T0 + 3001, Isolation::ReadUncommitted, &mut buf)
            .unwrap(),
        None
    );
    let below = log
        .read_by_timestamp_into(T0 + 2950, Isolation::ReadUncommitted, &mut buf)
        .unwrap()
        .expect("below the high watermark");
    assert_eq!(below.found.offset, 2950);
    log.read_into(2950, 1, Isolation::ReadUncommitted, true, &mut fetched)
        .unwrap();
    assert_eq!(&buf[below.batch.clone()], &fetched[..]);
    // The straddling batch: what the consumer's fetch returns, no more.
    let inside = log
        .read_by_timestamp_into(T0 + 3000, Isolation::ReadUncommitted, &mut buf)
        .unwrap()
        .expect("below the high watermark");
    assert_eq!(inside.found.offset, 3000);
    let fetch = log
        .read_into(3000, 1, Isolation::ReadUncommitted, true, &mut fetched)
        .unwrap();
    assert_eq!(
        &buf[inside.batch.clone()],
        &fetched[..],
        "cut as the fetch cuts it"
    );
    assert_eq!(inside.position, fetch.position);
}

/// A producer's batch whose header max timestamp lies below one of its records' (Kafka's
/// `LogValidator` rewrites the header from the records): the log stores the records' max,
/// so `ListOffsets` by that timestamp and `MaxTimestamp` find the record. With the header
/// kept as sent (the old header-only validation) both answered nothing / the wrong record.
#[test]
fn a_header_max_timestamp_below_a_record_is_rewritten_so_lookups_find_the_record() {
    let config = LogConfig {
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    };
    let (_dir, _clock, log) = fresh(config);
    log.append(&batch(T0, &[b"a", b"b"])).unwrap();
    let mut lying = batch(T0 + 100, &[b"c", b"d", b"e"]);
    seglog_records::set_max_timestamp(&mut lying, seglog::TimestampType::CreateTime, T0 + 1)
        .unwrap();
    let info = log.append(&lying).unwrap();
    assert_eq!(info.max_timestamp_ms, Some(T0 + 102));
    let found = log
        .offset_for_timestamp(ListOffsets::Timestamp(T0 + 101))
        .unwrap()
        .map(|f| (f.offset, f.timestamp_ms));
    assert_eq!(found, Some((3, T0 + 101)));
    let max = log
        .offset_for_timestamp(ListOffsets::MaxTimestamp)
        .unwrap()
        .map(|f| (f.offset, f.timestamp_ms));
    assert_eq!(max, Some((4, T0 + 102)));
    // The stored batch carries the records' max and a valid CRC.
    let fetched = log.read(2, 1 << 20, Isolation::LogEnd, true).unwrap();
    let bytes = fetched.slice.read_to_vec().unwrap();
    let stored = seglog::BatchRef::parse(&bytes, 0).unwrap();
    stored.ensure_valid().unwrap();
    assert_eq!(stored.header().max_timestamp_ms, T0 + 102);
}

/// `MaxTimestamp` after DeleteRecords past the first record holding the largest timestamp: the
/// first record at or above the log start that holds it, also when that record lies in a later
/// segment than the first one holding it (a segment keeps its records below the log start until
/// retention deletes it), and none when every record holding it lies below the log start.
/// Kafka 4.4 answers the first record holding it, below its own log start (docs/format.md,
/// "MAX_TIMESTAMP below the log start"). Before, seglog searched only the first segment holding
/// the largest timestamp and answered none.
#[test]
fn max_timestamp_after_delete_records_is_the_first_record_at_or_above_the_log_start_holding_it() {
    let config = LogConfig {
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    };
    let (_dir, _clock, log) = fresh(config);
    // Segment 0: 0 @ T0+5, 1 @ T0; segment 2: 2 @ T0+1, 3 @ T0+5, 4 @ T0+2.
    for ts in [T0 + 5, T0] {
        log.append(&batch(ts, &[b"x"])).unwrap();
    }
    log.roll().unwrap();
    for ts in [T0 + 1, T0 + 5, T0 + 2] {
        log.append(&batch(ts, &[b"y"])).unwrap();
    }
    assert_eq!(log.segment_count(), 2);
    let max = |log: &seglog::Log| {
        log.offset_for_timestamp(ListOffsets::MaxTimestamp)
            .unwrap()
            .map(|f| (f.offset, f.timestamp_ms))
    };
    assert_eq!(max(&log), Some((0, T0 + 5)));
    log.set_high_watermark(5).unwrap();
    // Segment 0 stays, its record 0 below the log start; 3 shares the largest timestamp.
    log.delete_records_before(1).unwrap();
    assert_eq!(log.segment_count(), 2);
    assert_eq!(max(&log), Some((3, T0 + 5)));
    log.delete_records_before(3).unwrap();
    assert_eq!(max(&log), Some((3, T0 + 5)));
    // No record at or above the log start holds the largest timestamp any more.
    log.delete_records_before(4).unwrap();
    assert_eq!(max(&log), None);
}

/// `MaxTimestamp` when the records of one batch share the largest timestamp (one millisecond)
/// and DeleteRecords raised the log start past the first of them: the first of them at or above
/// the log start (second long run of the differential histories, seed 206907: Kafka 4.4 answers
/// the batch's first record, below its log start).
#[test]
fn max_timestamp_shared_by_a_batch_is_answered_at_or_above_the_log_start() {
    let config = LogConfig {
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    };
    let (_dir, _clock, log) = fresh(config);
    let mut builder = seglog::BatchBuilder::new(0);
    for value in [b"a", b"b", b"c"] {
        builder.append(T0, None, Some(value), &[]);
    }
    log.append(&builder.build().unwrap()).unwrap();
    let max = |log: &seglog::Log| {
        log.offset_for_timestamp(ListOffsets::MaxTimestamp)
            .unwrap()
            .map(|f| (f.offset, f.timestamp_ms))
    };
    assert_eq!(max(&log), Some((0, T0)));
    log.set_high_watermark(3).unwrap();
    log.delete_records_before(2).unwrap();
    assert_eq!(max(&log), Some((2, T0)));
}
