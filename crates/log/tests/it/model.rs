//! The whole log against a `BTreeMap<offset, value>` model across append, roll, read,
//! offset_for_timestamp, retention, truncation, close/reopen and crash.

use std::collections::BTreeMap;

use proptest::prelude::*;
use seglog::{Clock, ListOffsets, Log, LogConfig};

use crate::support::*;

#[derive(Debug, Clone)]
enum Op {
    Append { records: usize, ts_step: i64 },
    Roll,
    Read { at: u16 },
    ByTime { delta: i64 },
    Retention { bytes: i64 },
    DeleteRecords { at: u16 },
    Truncate { back: u16 },
    Close,
    Crash,
    Tick,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..5, 0i64..3).prop_map(|(records, ts_step)| Op::Append { records, ts_step }),
        1 => Just(Op::Roll),
        2 => any::<u16>().prop_map(|at| Op::Read { at }),
        1 => (-5i64..60).prop_map(|delta| Op::ByTime { delta }),
        1 => (0i64..3000).prop_map(|bytes| Op::Retention { bytes }),
        1 => any::<u16>().prop_map(|at| Op::DeleteRecords { at }),
        1 => (0u16..8).prop_map(|back| Op::Truncate { back }),
        1 => Just(Op::Close),
        1 => Just(Op::Crash),
        1 => Just(Op::Tick),
    ]
}

struct Model {
    records: BTreeMap<i64, (i64, Vec<u8>)>,
    /// First and last offset of every batch appended (truncation is at batch granularity).
    batches: Vec<(i64, i64)>,
    next_ts: i64,
}

fn config() -> LogConfig {
    LogConfig {
        file_delete_delay_ms: 0,
        ..small_config(600)
    }
}

fn check(log: &Log, model: &Model) {
    let start = log.log_start_offset();
    let got: Vec<(i64, Vec<u8>)> = values(log);
    let want: Vec<(i64, Vec<u8>)> = model
        .records
        .range(start..)
        .map(|(o, (_, v))| (*o, v.clone()))
        .collect();
    assert_eq!(got, want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn log_matches_a_btreemap(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let clock = clock();
        let mut log = open(dir.path(), config(), &clock);
        let mut model = Model { records: BTreeMap::new(), batches: Vec::new(), next_ts: T0 };
        let mut counter = 0u64;
        for op in ops {
            match op {
                Op::Append { records, ts_step } => {
                    let values: Vec<Vec<u8>> = (0..records).map(|_| { counter += 1; format!("v{counter}").into_bytes() }).collect();
                    let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                    let mut b = seglog::BatchBuilder::new(0);
                    for (i, v) in refs.iter().enumerate() {
                        b.append(model.next_ts + i as i64 * ts_step, None, Some(v), &[]);
                    }
                    let info = log.append(&b.build().unwrap()).unwrap();
                    prop_assert_eq!(info.first_offset, log.log_end_offset() - records as i64);
                    for (i, v) in values.into_iter().enumerate() {
                        model.records.insert(info.first_offset + i as i64, (model.next_ts + i as i64 * ts_step, v));
                    }
                    model.batches.push((info.first_offset, info.last_offset));
                    model.next_ts += records as i64 * ts_step + 1;
                    log.set_high_watermark(log.log_end_offset()).unwrap();
                }
                Op::Roll => log.roll().unwrap(),
                Op::Read { at } => {
                    let leo = log.log_end_offset();
                    let start = log.log_start_offset();
                    let offset = start + i64::from(at) % (leo - start + 1);
                    let got = read_all(&log, offset, seglog::Isolation::LogEnd);
                    let want: Vec<i64> = model.records.range(offset..).map(|(o, _)| *o).collect();
                    prop_assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), want);
                }
                Op::ByTime { delta } => {
                    let target = T0 + delta;
                    let start = log.log_start_offset();
                    let want = model.records.range(start..).find(|(_, (ts, _))| *ts >= target).map(|(o, _)| *o);
                    let got = log.offset_for_timestamp(ListOffsets::Timestamp(target)).unwrap().map(|t| t.offset);
                    prop_assert_eq!(got, want);
                }
                Op::Retention { bytes } => {
                    let mut c = config();
                    c.retention_bytes = bytes;
                    // Retention with a config change: reopen with it (clean), as a broker would.
                    log.close().unwrap();
                    drop(log);
                    log = open(dir.path(), c, &clock);
                    log.set_high_watermark(log.log_end_offset()).unwrap();
                    log.delete_old_segments().unwrap();
                    prop_assert!(log.segment_count() >= 1);
                    log.close().unwrap();
                    drop(log);
                    log = open(dir.path(), config(), &clock);
                    log.set_high_watermark(log.log_end_offset()).unwrap();
                }
                Op::DeleteRecords { at } => {
                    let (start, hw) = (log.log_start_offset(), log.high_watermark());
                    let offset = start + i64::from(at) % (hw - start + 1);
                    log.delete_records_before(offset).unwrap();
                }
                Op::Truncate { back } => {
                    let target = (log.log_end_offset() - i64::from(back)).max(log.log_start_offset());
                    // Truncation is at batch granularity: the model drops the whole batch.
                    if target < log.log_end_offset() {
                        let cut = model
                            .batches
                            .iter()
                            .find(|(first, last)| *first <= target && target <= *last)
                            .map_or(target, |(first, _)| *first);
                        model.records.retain(|o, _| *o < cut);
                        model.batches.retain(|(first, _)| *first < cut);
                    }
                    log.truncate_to(target).unwrap();
                    prop_assert_eq!(log.log_end_offset(), target);
                }
                Op::Close => {
                    log.close().unwrap();
                    drop(log);
                    log = open(dir.path(), config(), &clock);
                    log.set_high_watermark(log.log_end_offset()).unwrap();
                }
                Op::Crash => {
                    // Everything was written to the page cache: a process crash loses nothing.
                    drop(log);
                    log = open(dir.path(), config(), &clock);
                    log.set_high_watermark(log.log_end_offset()).unwrap();
                }
                Op::Tick => {
                    log.tick(clock.now_ms()).unwrap();
                }
            }
            check(&log, &model);
        }
        log.close().unwrap();
    }
}
