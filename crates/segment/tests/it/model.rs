//! A segment against an obvious model (a `Vec` of batches) across append, read, translate,
//! find-by-timestamp, truncate, reopen, crash and recover.

use proptest::prelude::*;
use seglog_records::Compression;
use seglog_segment::{ActiveSegment, Segment, SegmentConfig, SegmentOpenOptions};

use crate::support::{batch, tempdir};

const BASE: i64 = 100;

#[derive(Clone, Debug)]
struct BatchSpec {
    /// `(timestamp, value length)` per record.
    records: Vec<(i64, usize)>,
    compression: Compression,
}

#[derive(Clone, Debug)]
enum Op {
    /// One append call of one or more batches.
    Append(Vec<BatchSpec>),
    Translate(u16),
    Read {
        offset: u16,
        max_bytes: u16,
        min_one_message: bool,
    },
    FindByTimestamp {
        ts: i64,
        start: u16,
    },
    Truncate(u16),
    /// Seal, reopen read-write, resume.
    Reopen,
    /// Drop the writer without sealing (a kill), reopen (rebuilds), resume.
    Crash,
    Recover,
}

#[derive(Clone, Debug)]
struct ModelBatch {
    bytes: Vec<u8>,
    last_offset: i64,
    max_ts: i64,
    records: Vec<(i64, i64)>,
}

#[derive(Default, Debug)]
struct Model {
    batches: Vec<ModelBatch>,
}

impl Model {
    fn next_offset(&self) -> i64 {
        self.batches.last().map_or(BASE, |b| b.last_offset + 1)
    }
    fn size(&self) -> u64 {
        self.batches.iter().map(|b| b.bytes.len() as u64).sum()
    }
    fn position_of(&self, index: usize) -> u64 {
        self.batches[..index]
            .iter()
            .map(|b| b.bytes.len() as u64)
            .sum()
    }
    fn translate(&self, offset: i64) -> Option<usize> {
        self.batches.iter().position(|b| b.last_offset >= offset)
    }
    fn find_by_timestamp(&self, ts: i64, start: i64) -> Option<(i64, i64)> {
        self.batches
            .iter()
            .flat_map(|b| b.records.iter().copied())
            .find(|&(offset, t)| t >= ts && offset >= start)
    }
    fn max_ts(&self) -> Option<i64> {
        self.batches
            .iter()
            .map(|b| b.max_ts)
            .max()
            .filter(|ts| *ts >= 0)
    }
    fn all_bytes(&self) -> Vec<u8> {
        self.batches
            .iter()
            .flat_map(|b| b.bytes.iter().copied())
            .collect()
    }
}

fn batch_spec() -> impl Strategy<Value = BatchSpec> {
    let record = (prop_oneof![9 => 0i64..1_000, 1 => Just(-1i64)], 0usize..60);
    (
        proptest::collection::vec(record, 1..5),
        prop_oneof![
            6 => Just(Compression::None),
            1 => Just(Compression::Gzip),
            1 => Just(Compression::Lz4),
        ],
    )
        .prop_map(|(records, compression)| BatchSpec {
            records,
            compression,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => proptest::collection::vec(batch_spec(), 1..4).prop_map(Op::Append),
        2 => any::<u16>().prop_map(Op::Translate),
        2 => (any::<u16>(), 0u16..600, any::<bool>()).prop_map(|(offset, max_bytes, min_one_message)| {
            Op::Read { offset, max_bytes, min_one_message }
        }),
        2 => (-1i64..1_100, any::<u16>()).prop_map(|(ts, start)| Op::FindByTimestamp { ts, start }),
        1 => any::<u16>().prop_map(Op::Truncate),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        1 => Just(Op::Recover),
    ]
}

fn config() -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: 64,
        max_index_bytes: 8192,
        ..SegmentConfig::default()
    }
}

/// An offset around the model's range from a random number.
fn pick(model: &Model, n: u16) -> i64 {
    BASE - 1 + i64::from(n) % (model.next_offset() - BASE + 3)
}

fn check(segment: &Segment, model: &Model) {
    assert_eq!(segment.size(), model.size());
    assert_eq!(segment.read_next_offset().unwrap(), model.next_offset());
    assert_eq!(segment.largest_record_timestamp(), model.max_ts());
    for offset in BASE - 1..=model.next_offset() {
        let got = segment.translate_offset(offset, 0).unwrap();
        let expected = model.translate(offset).map(|i| {
            (
                model.position_of(i),
                model.batches[i].bytes.len() as u32,
                model.batches[i].last_offset,
            )
        });
        assert_eq!(
            got.map(|g| (g.position, g.size, g.offset)),
            expected,
            "translate {offset}"
        );
    }
}

fn run(ops: Vec<Op>) {
    let dir = tempdir();
    let config = config();
    let mut active = Some(ActiveSegment::create(dir.path(), BASE, &config).unwrap());
    let mut model = Model::default();
    for op in ops {
        let writer = active.as_mut().unwrap();
        match op {
            Op::Append(specs) => {
                let mut chunk = Vec::new();
                let mut max: Option<(i64, i64)> = None;
                for spec in specs {
                    let base = model.next_offset();
                    let bytes = batch(base, &spec.records, spec.compression);
                    let last_offset = base + spec.records.len() as i64 - 1;
                    let max_ts = spec.records.iter().map(|r| r.0).max().unwrap();
                    if max.is_none_or(|(ts, _)| max_ts > ts) {
                        max = Some((max_ts, last_offset));
                    }
                    chunk.extend_from_slice(&bytes);
                    model.batches.push(ModelBatch {
                        bytes,
                        last_offset,
                        max_ts,
                        records: spec
                            .records
                            .iter()
                            .enumerate()
                            .map(|(i, r)| (base + i as i64, r.0))
                            .collect(),
                    });
                }
                let (max_ts, offset_of_max) = max.unwrap();
                writer
                    .append(model.next_offset() - 1, max_ts, offset_of_max, &chunk)
                    .unwrap();
            }
            Op::Translate(n) => {
                let offset = pick(&model, n);
                let got = writer.segment().translate_offset(offset, 0).unwrap();
                assert_eq!(
                    got.map(|g| g.position),
                    model.translate(offset).map(|i| model.position_of(i))
                );
            }
            Op::Read {
                offset,
                max_bytes,
                min_one_message,
            } => {
                let offset = pick(&model, offset);
                let got = writer
                    .segment()
                    .read(offset, u32::from(max_bytes), u64::MAX, min_one_message)
                    .unwrap();
                match model.translate(offset) {
                    None => assert!(got.is_none()),
                    Some(i) => {
                        let slice = got.unwrap();
                        let position = model.position_of(i);
                        let first = model.batches[i].bytes.len() as u64;
                        let adjusted = if min_one_message {
                            u64::from(max_bytes).max(first)
                        } else {
                            u64::from(max_bytes)
                        };
                        let len = adjusted.min(model.size() - position);
                        assert_eq!((slice.position(), slice.len()), (position, len));
                        let all = model.all_bytes();
                        assert_eq!(
                            slice.read_to_vec().unwrap(),
                            &all[position as usize..(position + len) as usize]
                        );
                        assert_eq!(slice.offsets().first_entry_incomplete, adjusted < first);
                    }
                }
            }
            Op::FindByTimestamp { ts, start } => {
                let start = pick(&model, start);
                let got = writer
                    .segment()
                    .find_offset_by_timestamp(ts, start)
                    .unwrap();
                assert_eq!(
                    got.map(|g| (g.offset, g.timestamp_ms)),
                    model.find_by_timestamp(ts, start),
                    "find {ts} from {start}"
                );
            }
            Op::Truncate(n) => {
                let offset = pick(&model, n);
                let before = model.size();
                model.batches.retain(|b| b.last_offset < offset);
                let removed = writer.truncate_to(offset).unwrap();
                assert_eq!(removed, before - model.size());
            }
            Op::Reopen => {
                active.take().unwrap().close().unwrap();
                let (segment, report) =
                    Segment::open(dir.path(), BASE, &config, SegmentOpenOptions::default())
                        .unwrap();
                assert_eq!(report.rebuilt, None, "a closed segment is trusted");
                active = Some(ActiveSegment::resume(segment).unwrap());
            }
            Op::Crash => {
                drop(active.take());
                let (segment, report) =
                    Segment::open(dir.path(), BASE, &config, SegmentOpenOptions::default())
                        .unwrap();
                if let Some(recovery) = report.recovery {
                    assert_eq!(recovery.truncated_bytes, 0);
                }
                active = Some(ActiveSegment::resume(segment).unwrap());
            }
            Op::Recover => {
                let report = writer.recover().unwrap();
                assert_eq!(report.truncated_bytes, 0);
                assert_eq!(report.next_offset, model.next_offset());
            }
        }
        check(active.as_ref().unwrap().segment(), &model);
    }
    // Finally: read-only open of the closed segment agrees too.
    active.take().unwrap().close().unwrap();
    let (segment, report) =
        Segment::open(dir.path(), BASE, &config, SegmentOpenOptions::read_only()).unwrap();
    assert_eq!(report.rebuilt, None);
    check(&segment, &model);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn segment_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}
