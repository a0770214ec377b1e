//! A proptest model of a tiered log: appends, rolls, copies (some crashing at a random request,
//! after which the process "restarts": the log is reopened and a new tier recovers the store),
//! local retention, remote retention and reads from random offsets. The oracle is the list of
//! appended records: from the log start offset on, every one is readable, in order, once, with
//! its value, across both tiers; a copy never counts a segment it did not finish (the log's
//! highest remote offset never passes what the store holds); no orphan outlives a recovery.

use std::collections::BTreeSet;
use std::path::Path as FsPath;
use std::sync::Arc;

use futures_util::TryStreamExt;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use proptest::prelude::*;
use seglog::{
    BatchBuilder, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions, ManualClock,
};

use crate::faulty::{CrashMode, Fault, FaultyStore};
use crate::{Layout, ObjectTier, RemoteStorageManager, Tier, TopicIdPartition, Uuid};

const T0: i64 = 1_700_000_000_000;

#[derive(Debug, Clone)]
enum Op {
    Append(u8),
    Copy,
    CrashingCopy(u8, bool),
    LocalRetention,
    RemoteRetention(u16),
    Read(u16),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u8..12).prop_map(Op::Append),
        2 => Just(Op::Copy),
        2 => (0u8..16, any::<bool>()).prop_map(|(k, lost)| Op::CrashingCopy(k, lost)),
        2 => Just(Op::LocalRetention),
        1 => (0u16..6000).prop_map(Op::RemoteRetention),
        2 => any::<u16>().prop_map(Op::Read),
        1 => Just(Op::Reopen),
    ]
}

fn config(retention_bytes: i64) -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        retention_bytes,
        message_timestamp_after_max_ms: i64::MAX,
        remote_storage_enable: true,
        local_retention_bytes: 0,
        ..LogConfig::default()
    }
}

fn open(dir: &FsPath) -> Log {
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(T0)),
        high_watermark: HighWatermarkPolicy::Manual,
        ..LogOpenOptions::default()
    };
    let log = Log::open_with(dir, config(-1), options).unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log
}

fn layout() -> Layout {
    Layout::new(
        Path::default(),
        TopicIdPartition::new("model", 0, Uuid::from_halves(3, 4)).unwrap(),
    )
}

fn tier(store: Arc<dyn ObjectStore>) -> Tier {
    let partition = crate::PartitionTier::new(store, layout(), 1).with_part_size(700);
    Tier::new(Arc::new(
        ObjectTier::from_partition_tier(partition).unwrap(),
    ))
}

fn read_all(log: &Log, from: i64) -> Vec<(i64, Vec<u8>)> {
    let mut reader = log.owned_reader(from, Isolation::ReadUncommitted);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        out.push((r.record.offset, r.record.value.map(|v| v.to_vec()).unwrap()));
    }
    out
}

/// The objects the finished segments own; anything else in the store is an orphan.
fn owned_objects(tier: &Tier) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for seg in tier.remote().finished_segments().unwrap() {
        for kind in RemoteStorageManager::kinds(&seg) {
            out.insert(
                layout()
                    .data_key(seg.start_offset, seg.segment_id, kind)
                    .to_string(),
            );
        }
        for slot in 0..2 {
            out.insert(
                layout()
                    .metadata_slot_key(seg.start_offset, seg.segment_id, slot)
                    .to_string(),
            );
        }
    }
    out
}

fn all_objects(tier: &Tier, store: &Arc<dyn ObjectStore>) -> BTreeSet<String> {
    let listed: Vec<_> = tier
        .remote()
        .block_on(store.list(None).try_collect())
        .unwrap();
    listed.into_iter().map(|m| m.location.to_string()).collect()
}

fn run(ops: &[Op]) {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut log = open(dir.path());
    let mut tier_now = tier(inner.clone());
    tier_now.attach(&log).unwrap();
    let mut appended: Vec<(i64, Vec<u8>)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Append(n) => {
                let mut b = BatchBuilder::new(0);
                let values: Vec<Vec<u8>> = (0..*n)
                    .map(|i| format!("v{step}-{i}-{}", "x".repeat(30)).into_bytes())
                    .collect();
                for v in &values {
                    b.append(T0, None, Some(v), &[]);
                }
                let first = log.log_end_offset();
                log.append(&b.build().unwrap()).unwrap();
                log.set_high_watermark(log.log_end_offset()).unwrap();
                appended.extend(
                    values
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (first + i as i64, v)),
                );
            }
            Op::Copy => {
                tier_now.copy(&log).unwrap();
            }
            Op::CrashingCopy(k, lost) => {
                let faulty = FaultyStore::new(inner.clone());
                let mode = if *lost {
                    CrashMode::LostResponse
                } else {
                    CrashMode::Before
                };
                faulty.fault_at(usize::from(*k), Fault::Crash(mode));
                let crashing = tier(Arc::new(faulty));
                crashing.attach(&log).unwrap();
                let result = crashing.copy(&log);
                // Whatever the log was told is in the store is there and finished (or below
                // the log start, expired by remote retention on purpose).
                let finished = tier(inner.clone()).remote().finished_segments().unwrap();
                let stored = finished
                    .last()
                    .map_or(-1, |s| s.end_offset)
                    .max(log.log_start_offset() - 1);
                assert!(
                    log.highest_remote_offset() <= stored,
                    "step {step}: {result:?}"
                );
                // The process dies: everything in memory is dropped, the log reopens, a new
                // tier recovers the store.
                drop(crashing);
                log.close().unwrap();
                drop(log);
                log = open(dir.path());
                tier_now = tier(inner.clone());
                tier_now.attach(&log).unwrap();
                assert_eq!(
                    all_objects(&tier_now, &inner),
                    owned_objects(&tier_now),
                    "step {step}: orphans after recovery"
                );
            }
            Op::LocalRetention => {
                log.delete_old_segments().unwrap();
            }
            Op::RemoteRetention(bytes) => {
                log.set_config(config(i64::from(*bytes))).unwrap();
                tier_now.expire(&log, T0).unwrap();
                log.set_config(config(-1)).unwrap();
            }
            Op::Read(at) => {
                let start = log.log_start_offset();
                let end = log.log_end_offset();
                if end > start {
                    let from = start + i64::from(*at) % (end - start);
                    let want: Vec<_> = appended
                        .iter()
                        .filter(|(o, _)| *o >= from)
                        .cloned()
                        .collect();
                    assert_eq!(read_all(&log, from), want, "step {step}: read from {from}");
                }
            }
            Op::Reopen => {
                log.close().unwrap();
                drop(log);
                log = open(dir.path());
                tier_now.attach(&log).unwrap();
            }
        }
        // Always: from the log start, every record once, in order, with its value.
        let start = log.log_start_offset();
        let want: Vec<_> = appended
            .iter()
            .filter(|(o, _)| *o >= start)
            .cloned()
            .collect();
        assert_eq!(
            read_all(&log, start),
            want,
            "step {step} ({op:?}): log start {start}, local start {}",
            log.local_log_start_offset()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn model_tiered_log_against_the_list_of_appended_records(ops in proptest::collection::vec(op(), 1..24)) {
        run(&ops);
    }
}
