//! `Segment::find_offset_by_timestamp` (one `pread` of a region, walked in memory) against
//! the plain header walk it replaced (`find_offset_by_timestamp_walk`, kept as the oracle):
//! the same answers and errors for random segments (small and large batches, non-monotonic
//! timestamps, LogAppendTime, gzip), every corpus segment, and the read syscalls it costs.

use proptest::prelude::*;
use seglog_records::{BatchBuilder, Compression};
use seglog_segment::{ActiveSegment, OpenMode, Segment, SegmentConfig, SegmentOpenOptions};

use crate::support::{
    append_batch, bytes_of, copy_dir, corpus_segments, preads_of, scan, simple_batch, small_config,
    tempdir,
};

/// Both implementations for one lookup; panics unless they agree (errors by their debug
/// form). Returns the oracle's answer.
fn same_lookup(segment: &Segment, ts: i64, starting: i64, label: &str) {
    let expected = segment.find_offset_by_timestamp_walk(ts, starting);
    let got = segment.find_offset_by_timestamp(ts, starting);
    match (&expected, &got) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{label}: ts {ts}, starting {starting}"),
        (Err(a), Err(b)) => assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "{label}: ts {ts}, starting {starting}"
        ),
        _ => panic!("{label}: ts {ts}, starting {starting}: walk {expected:?} vs {got:?}"),
    }
}

/// Every record timestamp, one below and one above each, the extremes and -1, at a few
/// starting offsets.
fn check_timestamps(segment: &Segment, label: &str, limit: usize) {
    let log = std::fs::read(segment.log_path()).unwrap();
    let oracle = scan(&log[..segment.size() as usize], 0);
    let mut timestamps: Vec<i64> = oracle
        .records
        .iter()
        .flat_map(|r| [r.timestamp_ms - 1, r.timestamp_ms, r.timestamp_ms + 1])
        .chain(oracle.batches.iter().map(|b| b.max_timestamp_ms))
        .chain([i64::MIN, -2, -1, 0, i64::MAX])
        .collect();
    timestamps.sort_unstable();
    timestamps.dedup();
    let stride = (timestamps.len() / limit).max(1);
    let base = segment.base_offset();
    let mut starts = vec![base - 1, base];
    if let Some(mid) = oracle.records.get(oracle.records.len() / 2) {
        starts.push(mid.offset);
    }
    if let Some(last) = oracle.records.last() {
        starts.push(last.offset);
        starts.push(last.offset + 1);
    }
    for &ts in timestamps.iter().step_by(stride) {
        for &starting in &starts {
            same_lookup(segment, ts, starting, label);
        }
    }
}

fn config(interval: u32) -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: interval,
        max_index_bytes: 64 * 1024,
        segment_bytes: 16 * 1024 * 1024,
        ..small_config()
    }
}

/// One random batch: record timestamps, value length, compression, timestamp type.
#[derive(Clone, Debug)]
struct BatchSpec {
    timestamps: Vec<i64>,
    value_len: usize,
    gzip: bool,
    log_append_time: Option<i64>,
}

fn batch_spec() -> impl Strategy<Value = BatchSpec> {
    (
        prop::collection::vec(-5i64..400, 1..12),
        prop_oneof![4 => 0usize..200, 1 => 700usize..1_500],
        prop::bool::weighted(0.2),
        prop::option::weighted(0.15, 0i64..500),
    )
        .prop_map(|(timestamps, value_len, gzip, log_append_time)| BatchSpec {
            timestamps,
            value_len,
            gzip,
            log_append_time,
        })
}

fn build(base_offset: i64, spec: &BatchSpec) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base_offset).compression(if spec.gzip {
        Compression::Gzip
    } else {
        Compression::None
    });
    if let Some(append_time) = spec.log_append_time {
        builder = builder.log_append_time(append_time);
    }
    for (i, &ts) in spec.timestamps.iter().enumerate() {
        // Values that gzip does not shrink much, so large batches stay large.
        let value: Vec<u8> = (0..spec.value_len)
            .map(|j| ((i * 31 + j * 17) ^ (j >> 3)) as u8)
            .collect();
        builder.append(ts, None, Some(&value), &[]);
    }
    builder.build().unwrap().to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random segments: batches smaller and larger than the index interval (some above
    /// 8 KiB), multi-batch appends, non-monotonic timestamps, LogAppendTime and gzip batches;
    /// checked while active and after sealing.
    #[test]
    fn same_answers_as_the_header_walk(
        appends in prop::collection::vec(prop::collection::vec(batch_spec(), 1..3), 0..24),
        interval in prop_oneof![Just(100u32), Just(1_000), Just(4_096)],
    ) {
        let dir = tempdir();
        let mut active = ActiveSegment::create(dir.path(), 0, &config(interval)).unwrap();
        let mut offset = 0i64;
        for append in &appends {
            let mut bytes = Vec::new();
            for spec in append {
                bytes.extend_from_slice(&build(offset, spec));
                offset += spec.timestamps.len() as i64;
            }
            append_batch(&mut active, &bytes);
        }
        check_timestamps(active.segment(), "active", 400);
        let segment = active.seal().unwrap();
        check_timestamps(&segment, "sealed", 400);
    }
}

#[test]
fn empty_segments_find_nothing() {
    let dir = tempdir();
    let active = ActiveSegment::create(dir.path(), 7, &config(4096)).unwrap();
    for ts in [i64::MIN, -1, 0, 5, i64::MAX] {
        assert_eq!(
            active.segment().find_offset_by_timestamp(ts, 0).unwrap(),
            None
        );
        same_lookup(active.segment(), ts, 7, "empty");
    }
}

#[test]
fn every_corpus_segment_at_many_targets() {
    if seglog_test_corpus::root().is_none() {
        return;
    }
    let segments = corpus_segments();
    assert!(!segments.is_empty(), "the corpus has segments");
    for (dir, base) in segments {
        let label = format!("{} @ {base}", dir.display());
        // On a copy: opening read-only rebuilds missing indexes (in memory).
        let copy = copy_dir(&dir);
        let (segment, _) = Segment::open(
            copy.path(),
            base,
            &SegmentConfig::default(),
            SegmentOpenOptions::read_only(),
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(segment.mode(), OpenMode::ReadOnly);
        check_timestamps(&segment, &label, 300);
    }
}

/// Appends `batches` batches of `count` records (`len`-byte values, timestamps
/// `1_000 + offset`) from offset `from`; returns the next offset.
fn fill(active: &mut ActiveSegment, from: i64, batches: usize, count: usize, len: usize) -> i64 {
    let mut offset = from;
    for _ in 0..batches {
        append_batch(active, &simple_batch(offset, count, 1_000 + offset, len));
        offset += count as i64;
    }
    offset
}

#[test]
fn one_pread_per_lookup_for_the_benchmark_shape_and_small_batches() {
    // ~10.5 KB batches, every one indexed (the timestamp benchmark's shape), then small
    // batches several per index entry.
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    let next = fill(&mut active, 0, 20, 100, 100);
    let end = fill(&mut active, next, 200, 5, 60);
    let segment = active.seal().unwrap();
    let mut walked = 0;
    let mut lookups = 0;
    for ts in (1_000..1_000 + end).step_by(7) {
        let found = segment.find_offset_by_timestamp(ts, 0).unwrap().unwrap();
        assert_eq!((found.timestamp_ms, found.offset), (ts, ts - 1_000));
        let reads = preads_of(|| {
            segment.find_offset_by_timestamp(ts, 0).unwrap();
        });
        assert_eq!(reads, 1, "ts {ts}");
        if ts >= 1_000 + 200 && ts < 1_000 + next && (ts - 1_000) % 100 != 99 {
            // Large batches past the second (the first append is not indexed) whose time
            // floor is below the target: the region is the answer's batch alone (the
            // speculation on the next index entry), not the floor batch too.
            let bytes = bytes_of(|| {
                segment.find_offset_by_timestamp(ts, 0).unwrap();
            });
            assert!(bytes < 16_000, "ts {ts}: {bytes} bytes (a batch is ~11 KB)");
        }
        walked += preads_of(|| {
            segment.find_offset_by_timestamp_walk(ts, 0).unwrap();
        });
        lookups += 1;
    }
    assert!(walked >= 2 * lookups, "the walk costs {walked} reads");
    // Past every timestamp: nothing, without a read past the last entry's appends.
    assert_eq!(
        segment.find_offset_by_timestamp(1_000 + end, 0).unwrap(),
        None
    );
}

#[test]
fn rejected_speculation_falls_back_to_the_floor() {
    // Large batches every one indexed, with offset gaps between appends (as compaction leaves
    // them): the batch at the next entry starts more than one past the time floor's offset,
    // so the speculation is rejected; and non-monotonic timestamps, where the floor's own
    // batch is reached from the floor.
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    let mut offset = 0;
    for i in 0..16i64 {
        let ts0 = if i % 5 == 3 { 500 + i } else { 1_000 + i * 200 };
        append_batch(&mut active, &simple_batch(offset, 100, ts0, 100));
        offset += 100 + if i % 3 == 1 { 7 } else { 0 };
    }
    let segment = active.seal().unwrap();
    check_timestamps(&segment, "gaps", 2_000);
    // A gap: the speculation reads one header-sized region, then the floor region.
    let found = segment
        .find_offset_by_timestamp(1_000 + 2 * 200, 0)
        .unwrap()
        .unwrap();
    assert_eq!(found.offset, 207);
    let reads = preads_of(|| {
        segment
            .find_offset_by_timestamp(1_000 + 2 * 200 + 3, 0)
            .unwrap();
    });
    assert!(reads <= 2, "{reads} reads");
}

#[test]
fn batches_larger_than_the_lead_limit_walk_from_the_file() {
    // ~40 KB batches: the floor append is too long to read with the answer, and the
    // speculation reads the next batch alone.
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    let end = fill(&mut active, 0, 6, 40, 1_000);
    let segment = active.seal().unwrap();
    check_timestamps(&segment, "40 KB batches", 2_000);
    for ts in (1_000..1_000 + end).step_by(13) {
        let reads = preads_of(|| {
            segment.find_offset_by_timestamp(ts, 0).unwrap();
        });
        assert!(reads <= 3, "ts {ts}: {reads} reads");
    }
}
