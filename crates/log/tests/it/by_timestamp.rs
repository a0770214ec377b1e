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
