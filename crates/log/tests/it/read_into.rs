//! `Log::read_into` (copy-out, one speculative `pread` per segment read) against `Log::read` +
//! `FileSlice::read_into`: the same bytes, metadata and errors for random logs (leader and
//! multi-batch follower appends, rolls, offset gaps, high watermarks), segment hopping, the
//! empty log, and every partition directory of the Kafka corpus (read-only, in place).

use proptest::prelude::*;
use seglog::{BatchBuilder, Isolation, Log, LogConfig};

use crate::support::{T0, fresh, partition_dirs, small_config};

/// Both paths for one request; panics unless they agree. Returns the bytes (empty at the
/// bound) or `None` on an error. `buf` is reused as given.
fn same_fetch(
    log: &Log,
    offset: i64,
    max_bytes: u32,
    isolation: Isolation,
    min_one: bool,
    buf: &mut Vec<u8>,
) -> Option<Vec<u8>> {
    let label = format!(
        "{}: offset {offset}, max_bytes {max_bytes}, {isolation:?}, min_one {min_one}",
        log.dir().display()
    );
    let expected = log
        .read(offset, max_bytes, isolation, min_one)
        .and_then(|data| {
            let bytes = data.slice.read_to_vec()?;
            Ok((data, bytes))
        });
    let got = log.read_into(offset, max_bytes, isolation, min_one, buf);
    match (expected, got) {
        (Ok((data, bytes)), Ok(copied)) => {
            assert_eq!(copied.position, data.slice.position(), "{label}: position");
            assert_eq!(copied.offsets, data.slice.offsets(), "{label}: offsets");
            assert_eq!(
                copied.fetch_offset, data.fetch_offset,
                "{label}: fetch offset"
            );
            assert_eq!(
                (
                    copied.high_watermark,
                    copied.log_start_offset,
                    copied.log_end_offset
                ),
                (
                    data.high_watermark,
                    data.log_start_offset,
                    data.log_end_offset
                ),
                "{label}: bounds"
            );
            assert_eq!(buf.len(), bytes.len(), "{label}: length");
            assert!(*buf == bytes, "{label}: bytes");
            Some(bytes)
        }
        (Err(a), Err(b)) => {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{label}: errors");
            assert!(buf.is_empty(), "{label}: buffer after an error");
            None
        }
        (a, b) => panic!("{label}: read {a:?} vs read_into {b:?}"),
    }
}

/// A v2 batch of `count` records with `len`-byte values, base offset `base`.
fn batch(base: i64, count: usize, len: usize) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base);
    for i in 0..count {
        let value: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
        builder.append(T0 + base + i as i64, None, Some(&value), &[]);
    }
    builder.build().unwrap().to_vec()
}

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 1024,
        segment_index_bytes: 64 * 1024,
        ..small_config(48 * 1024)
    }
}

#[test]
fn bounds_errors_and_the_empty_log() {
    let (_dir, _clock, log) = fresh(config());
    let mut buf = vec![9; 64];
    // Empty log: offset 0 is the end (an empty read), anything else is out of range.
    assert_eq!(
        same_fetch(&log, 0, 1, Isolation::LogEnd, true, &mut buf),
        Some(Vec::new())
    );
    for offset in [-1, 1] {
        buf.push(1);
        assert!(same_fetch(&log, offset, 1, Isolation::LogEnd, true, &mut buf).is_none());
    }
    for i in 0..40 {
        log.append(&batch(0, 3, if i % 4 == 0 { 3_000 } else { 50 }))
            .unwrap();
    }
    log.set_high_watermark(70).unwrap();
    let end = log.log_end_offset();
    for offset in [-1, 0, 1, 69, 70, 71, end - 1, end, end + 1] {
        for isolation in [Isolation::LogEnd, Isolation::ReadUncommitted] {
            for (max_bytes, min_one) in [(1, true), (0, false), (10_000, false), (1 << 20, true)] {
                same_fetch(&log, offset, max_bytes, isolation, min_one, &mut buf);
            }
        }
    }
    // At the high watermark: empty, with the bound's metadata.
    let bytes = same_fetch(&log, 70, 1, Isolation::ReadUncommitted, true, &mut buf).unwrap();
    assert!(bytes.is_empty());
}

#[test]
fn a_segment_holding_nothing_at_the_offset_hops_to_the_next() {
    let (_dir, _clock, log) = fresh(config());
    let mut offset = 0;
    while log.segments()[0].size_bytes < 40 * 1024 {
        log.append_as_follower(&batch(offset, 4, 1_000)).unwrap();
        offset += 4;
    }
    // A follower append after a gap that does not fit: the new segment starts at its first
    // offset, so the offsets of the gap are in no segment.
    let gap_end = offset + 10;
    log.append_as_follower(&batch(gap_end, 4, 10_000)).unwrap();
    let segments = log.segments();
    assert_eq!(segments.len(), 2);
    assert_eq!(segments[1].base_offset, gap_end);
    let mut buf = Vec::new();
    for offset in offset - 2..=gap_end + 1 {
        let bytes = same_fetch(&log, offset, 1, Isolation::LogEnd, true, &mut buf).unwrap();
        assert!(!bytes.is_empty(), "offset {offset}");
        let copied = log
            .read_into(offset, 1, Isolation::LogEnd, true, &mut buf)
            .unwrap();
        let expected_segment = if offset < gap_end - 10 { 0 } else { gap_end };
        assert_eq!(copied.fetch_offset.segment_base_offset, expected_segment);
    }
}

#[test]
fn reused_buffer_is_replaced_not_appended_to() {
    let (_dir, _clock, log) = fresh(config());
    for _ in 0..30 {
        log.append(&batch(0, 10, 1_000)).unwrap();
    }
    let mut buf = vec![0xEE; 200_000];
    let ptr = buf.as_ptr();
    for offset in (0..300).step_by(17) {
        let bytes = same_fetch(&log, offset, 1, Isolation::LogEnd, true, &mut buf).unwrap();
        assert_eq!(buf, bytes);
    }
    assert_eq!(buf.as_ptr(), ptr, "the allocation is kept");
}

/// One step of a random log.
#[derive(Clone, Debug)]
enum Step {
    /// A leader append of one batch: (records, value length).
    Leader(usize, usize),
    /// A follower append of several batches, after an offset gap.
    Follower(Vec<(usize, usize)>, u8),
    Roll,
}

fn step() -> impl Strategy<Value = Step> {
    let size = prop_oneof![
        3 => (1usize..4, 0usize..40),
        2 => (1usize..5, 100usize..600),
        2 => (1usize..3, 1_200usize..5_000),
    ];
    prop_oneof![
        6 => size.clone().prop_map(|(count, len)| Step::Leader(count, len)),
        3 => (proptest::collection::vec(size, 1..4), any::<u8>())
            .prop_map(|(batches, gap)| Step::Follower(batches, gap)),
        1 => Just(Step::Roll),
    ]
}

/// A request: (offset pick, max_bytes pick, high watermark isolation, min_one_message).
type Request = (u16, u8, bool, bool);

fn run_random(steps: Vec<Step>, hw_pick: u16, requests: Vec<Request>) {
    let (_dir, _clock, log) = fresh(config());
    for step in steps {
        match step {
            Step::Leader(count, len) => {
                log.append(&batch(0, count, len)).unwrap();
            }
            Step::Follower(batches, gap) => {
                let mut offset = log.log_end_offset() + i64::from(gap % 3) * 5;
                let mut bytes = Vec::new();
                for (count, len) in batches {
                    bytes.extend(batch(offset, count, len));
                    offset += count as i64;
                }
                log.append_as_follower(&bytes).unwrap();
            }
            Step::Roll => log.roll().unwrap(),
        }
    }
    let end = log.log_end_offset();
    log.set_high_watermark(i64::from(hw_pick) % (end + 1))
        .unwrap();
    let mut buf = vec![0x11; 777];
    for (offset_pick, max_pick, high_watermark, min_one) in requests {
        let offset = i64::from(offset_pick) % (end + 3) - 1;
        let max_bytes = match max_pick % 5 {
            0 => 0,
            1 => 1,
            2 => u32::from(max_pick) * 41,
            3 => 1 << 20,
            _ => u32::from(max_pick) * 173,
        };
        let isolation = if high_watermark {
            Isolation::ReadUncommitted
        } else {
            Isolation::LogEnd
        };
        same_fetch(&log, offset, max_bytes, isolation, min_one, &mut buf);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn read_into_equals_read_then_copy(
        steps in proptest::collection::vec(step(), 1..60),
        hw_pick in any::<u16>(),
        requests in proptest::collection::vec(any::<Request>(), 1..60),
    ) {
        run_random(steps, hw_pick, requests);
    }
}

#[test]
fn corpus_partitions_read_the_same_both_ways() {
    let config = LogConfig {
        retention_ms: -1,
        ..LogConfig::default()
    };
    let mut buf = Vec::new();
    let mut reads = 0;
    for dir in partition_dirs() {
        let log = Log::open_read_only(&dir, config.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let start = log.log_start_offset();
        for segment in log.segments() {
            let (base, next) = (segment.base_offset.max(start), segment.next_offset);
            let span = next - base;
            let mut offsets: Vec<i64> = (0..=8).map(|i| base + span * i / 8).collect();
            offsets.extend([base + 1, next - 1, next - 2]);
            for offset in offsets {
                for (max_bytes, min_one) in [(1, true), (0, false), (1 << 20, true), (5_000, false)]
                {
                    same_fetch(
                        &log,
                        offset,
                        max_bytes,
                        Isolation::LogEnd,
                        min_one,
                        &mut buf,
                    );
                    reads += 1;
                }
            }
        }
    }
    if seglog_test_corpus::root().is_some() {
        assert!(reads > 1_000, "{reads} reads");
    }
}
