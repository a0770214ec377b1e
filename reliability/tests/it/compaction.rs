//! Power loss during a log-cleaner round, at every step of its swap.
//!
//! A compacted log is written and flushed through the fault injector, then one cleaning round
//! runs with its Nth rename (or Nth directory fsync, or Nth `.log` fsync) failing: the round
//! stops right before that operation, as a power loss there would stop it. From each such
//! point one or more crash states are built ([`CrashImage`], with or without the names created
//! or renamed since the last directory fsync), reopened, and must serve either the old or the
//! cleaned segments — the latest value of every key unchanged, every record one that was
//! written at that offset, offsets increasing, no `.cleaned` or `.swap` file left — and a next
//! round must finish the job. N runs from 1 until a round completes without reaching it.

use std::collections::BTreeMap;
use std::path::Path;

use rand::Rng;
use seglog::{BatchBuilder, Batches, CleanupPolicy, Isolation, Log, LogConfig};
use seglog_faults::{FaultInjector, FaultKind};
use seglog_reliability::{CrashImage, CrashOptions, IndexFate};

use crate::support::{copy_dir, faulty_dir, seeded_rng};

const T0: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        cleanup_policy: CleanupPolicy::Compact,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, faults: Option<&FaultInjector>) -> Log {
    Log::open_with(
        dir,
        config(),
        seglog::LogOpenOptions {
            io: faults.map_or_else(seglog::Io::direct, FaultInjector::io),
            high_watermark: seglog::HighWatermarkPolicy::LogEnd,
            ..seglog::LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// offset → (key, value) of every record served.
fn served(log: &Log) -> BTreeMap<i64, (Vec<u8>, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    let mut next = log.log_start_offset();
    loop {
        let data = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        if data.slice.is_empty() {
            return out;
        }
        let bytes = data.slice.read_to_vec().unwrap();
        for batch in Batches::new(&bytes, 0) {
            let batch = batch.unwrap();
            batch.ensure_valid().unwrap();
            for record in batch.records(1 << 20) {
                let record = record.unwrap();
                if record.offset >= next {
                    let key = record.key.unwrap().to_vec();
                    let previous =
                        out.insert(record.offset, (key, record.value.map(|v| v.to_vec())));
                    assert!(previous.is_none(), "offset {} served twice", record.offset);
                }
            }
            next = next.max(batch.header().last_offset + 1);
        }
    }
}

fn latest(
    records: &BTreeMap<i64, (Vec<u8>, Option<Vec<u8>>)>,
) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
    records.values().cloned().collect()
}

/// Writes the workload: keys updated many times, some deleted, rolled; flushed.
fn write(dir: &Path, rng: &mut impl Rng) {
    let log = open(dir, None);
    for i in 0..150u32 {
        let key = format!("key-{}", rng.random_range(0..30u32));
        let value = (rng.random_range(0..10) != 0).then(|| format!("value-{i}-{}", "v".repeat(30)));
        let mut builder = BatchBuilder::new(0);
        builder.append(
            T0,
            Some(key.as_bytes()),
            value.as_deref().map(str::as_bytes),
            &[],
        );
        log.append(&builder.build().unwrap()).unwrap();
    }
    log.roll().unwrap();
    log.close().unwrap();
}

fn leftovers(dir: &Path) -> Vec<String> {
    CrashImage::list_names(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
        .collect()
}

#[test]
fn power_loss_at_every_step_of_a_cleaning_round_keeps_every_key() {
    let (mut rng, _) = seeded_rng("compaction power loss");
    let template = tempfile::tempdir().unwrap();
    write(template.path(), &mut rng);
    let original = served(&open(template.path(), None));
    let expected = latest(&original);
    let mut checked = 0;
    for (name, fail) in [
        (
            "rename",
            FaultInjector::fail_nth_rename as fn(&FaultInjector, u64, FaultKind),
        ),
        ("directory fsync", FaultInjector::fail_nth_dir_sync),
        (".log fsync", FaultInjector::fail_nth_sync),
    ] {
        for n in 1u64.. {
            let live = tempfile::tempdir().unwrap();
            copy_dir(template.path(), live.path());
            let faults = faulty_dir(live.path());
            let log = open(live.path(), Some(&faults));
            // Everything the round reads is durable before it starts.
            log.flush().unwrap();
            let modelled = CrashImage::list_names(live.path()).unwrap();
            fail(&faults, n, FaultKind::Eio);
            let outcome = log.clean();
            let completed = outcome.is_ok();
            for lose in [false, true] {
                let options = CrashOptions {
                    torn_tails: false,
                    lose_unsynced_entries: lose,
                    index_fate: IndexFate::AsIs,
                    leftover_checkpoint_tmp: false,
                    max_index_bytes: 4096,
                };
                let image =
                    CrashImage::capture(live.path(), &faults, &modelled, &options, &mut rng)
                        .unwrap();
                let target = tempfile::tempdir().unwrap();
                image.write_to(target.path()).unwrap();
                let context = format!("{name} {n} failing (lose unsynced names: {lose})");
                let reopened = open(target.path(), None);
                let records = served(&reopened);
                assert_eq!(latest(&records), expected, "{context}");
                for (offset, record) in &records {
                    assert_eq!(
                        original.get(offset),
                        Some(record),
                        "{context}: offset {offset}"
                    );
                }
                assert!(
                    leftovers(target.path()).is_empty(),
                    "{context}: {:?}",
                    leftovers(target.path())
                );
                reopened.clean().unwrap();
                assert_eq!(
                    latest(&served(&reopened)),
                    expected,
                    "{context}: next round"
                );
                checked += 1;
            }
            drop(log);
            if completed {
                break;
            }
            assert!(n < 500, "{name}: the round never completed");
        }
    }
    assert!(checked > 20, "{checked} crash states");
}
