//! The log cleaner against a model: random keyed appends, updates, tombstones, rolls, cleaning
//! rounds (at random times, so tombstone horizons pass), truncations and crashes, checked
//! against every record ever appended.
//!
//! After every step a reader must see, for every key, the same latest record (offset and
//! value) as the model — tombstones may disappear once a round ran past their horizon — and
//! only records that were appended at their offset. After a round, every record below the end
//! of the round is the latest of its key among the records below that end (older versions
//! are gone), in increasing offsets.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use seglog::{BatchBuilder, CleanupPolicy, Clock, Isolation, Log, LogConfig, ManualClock};

use crate::support::*;

#[derive(Debug, Clone)]
enum Op {
    Put { key: u8, records: u8 },
    Tombstone { key: u8 },
    Roll,
    Clean { advance_ms: i64 },
    Tick,
    Truncate { back: u8 },
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..12, 1u8..4).prop_map(|(key, records)| Op::Put { key, records }),
        2 => (0u8..12).prop_map(|key| Op::Tombstone { key }),
        2 => Just(Op::Roll),
        2 => (0i64..2_000).prop_map(|advance_ms| Op::Clean { advance_ms }),
        1 => Just(Op::Tick),
        1 => (1u8..6).prop_map(|back| Op::Truncate { back }),
        1 => Just(Op::Crash),
    ]
}

fn config() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 1_000,
        min_cleanable_dirty_ratio: seglog::DirtyRatio(0.2),
        file_delete_delay_ms: 0,
        cleaner_dedupe_buffer_size: 24 * 8,
        ..small_config(700)
    }
}

type Served = BTreeMap<i64, (Vec<u8>, Option<Vec<u8>>)>;

fn open_log(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Log {
    let log = open(dir, config(), clock);
    log.set_high_watermark_policy(seglog::HighWatermarkPolicy::LogEnd)
        .unwrap();
    log
}

fn served(log: &Log) -> Served {
    let mut out = BTreeMap::new();
    let mut next = log.log_start_offset();
    loop {
        let data = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        if data.slice.is_empty() {
            return out;
        }
        let bytes = data.slice.read_to_vec().unwrap();
        for batch in seglog::Batches::new(&bytes, 0) {
            let batch = batch.unwrap();
            batch.ensure_valid().unwrap();
            for record in batch.records(1 << 20) {
                let record = record.unwrap();
                if record.offset >= next {
                    let key = record
                        .key
                        .expect("compacted logs hold keyed records")
                        .to_vec();
                    out.insert(record.offset, (key, record.value.map(|v| v.to_vec())));
                }
            }
            next = next.max(batch.header().last_offset + 1);
        }
    }
}

fn latest(records: &Served) -> BTreeMap<Vec<u8>, (i64, Option<Vec<u8>>)> {
    records
        .iter()
        .map(|(o, (k, v))| (k.clone(), (*o, v.clone())))
        .collect()
}

/// Checks what the log serves against every record appended (`written`, truncations applied).
fn check(log: &Log, written: &Served, context: &str) -> Result<(), TestCaseError> {
    let got = served(log);
    for (offset, record) in &got {
        prop_assert_eq!(
            written.get(offset),
            Some(record),
            "{}: offset {}",
            context,
            offset
        );
    }
    let want = latest(written);
    let have = latest(&got);
    for (key, (offset, value)) in &want {
        match (have.get(key), value) {
            (Some(found), _) => prop_assert_eq!(found, &(*offset, value.clone()), "{}", context),
            // A tombstone may be gone once its horizon passed.
            (None, None) => {}
            (None, Some(_)) => prop_assert!(false, "{}: key {:?} lost", context, key),
        }
    }
    prop_assert_eq!(have.len() <= want.len(), true);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_the_latest_record_of_every_key(ops in proptest::collection::vec(op(), 1..60)) {
        let tmp = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let mut log = open_log(tmp.path(), &clock);
        let mut written: Served = BTreeMap::new();
        let mut seq = 0u32;
        // (first, last) offset of every batch appended: truncation works on whole batches.
        let mut batches: Vec<(i64, i64)> = Vec::new();
        for (step, op) in ops.iter().enumerate() {
            let context = format!("step {step} {op:?}");
            match op {
                Op::Put { .. } | Op::Tombstone { .. } => {
                    let (key, count, tombstone) = match *op {
                        Op::Put { key, records } => (key, records, false),
                        Op::Tombstone { key } => (key, 1, true),
                        _ => unreachable!(),
                    };
                    let mut builder = BatchBuilder::new(0);
                    let mut appended = Vec::new();
                    for i in 0..count {
                        let key = format!("key-{}", (key + i) % 12).into_bytes();
                        let value = (!tombstone)
                            .then(|| format!("value-{seq}-{}", "p".repeat(20)).into_bytes());
                        seq += 1;
                        builder.append(clock.now_ms(), Some(&key), value.as_deref(), &[]);
                        appended.push((key, value));
                    }
                    let first = log.append(&builder.build().unwrap()).unwrap().first_offset;
                    batches.push((first, first + i64::from(count) - 1));
                    for (i, record) in appended.into_iter().enumerate() {
                        written.insert(first + i as i64, record);
                    }
                }
                Op::Roll => log.roll().unwrap(),
                Op::Clean { advance_ms } => {
                    clock.advance(*advance_ms);
                    if let Some(report) = log.clean_at(clock.now_ms()).unwrap() {
                        let got = served(&log);
                        let below: Served = got
                            .range(..report.end_offset)
                            .map(|(o, r)| (*o, r.clone()))
                            .collect();
                        let latest_below = latest(&below);
                        for (offset, (key, _)) in &below {
                            prop_assert_eq!(latest_below[key].0, *offset, "{}: {:?} kept an old version", context, key);
                        }
                    }
                }
                Op::Tick => {
                    log.tick(clock.now_ms()).unwrap();
                }
                Op::Truncate { back } => {
                    // Only above the cleaned section: a truncation below it would also remove
                    // the newer versions that older ones were compacted away for (Kafka
                    // truncates followers to their high watermark, above what is cleaned).
                    let to = (log.log_end_offset() - i64::from(*back)).max(0);
                    // The whole batch holding `to` goes.
                    let cut = batches
                        .iter()
                        .find(|(first, last)| *first <= to && to <= *last)
                        .map_or(to, |(first, _)| *first);
                    if cut >= log.cleaner_checkpoint().unwrap_or(0) {
                        log.truncate_to(to).unwrap();
                        written.retain(|o, _| *o < cut);
                        batches.retain(|(first, _)| *first < cut);
                    }
                }
                Op::Crash => {
                    drop(log);
                    log = open_log(tmp.path(), &clock);
                }
            }
            check(&log, &written, &context)?;
        }
        log.close().unwrap();
        drop(log);
        let log = open_log(tmp.path(), &clock);
        check(&log, &written, "reopen")?;
    }
}
