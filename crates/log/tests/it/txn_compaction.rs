//! A compacted, transactional log of one producer whose epoch is bumped at every transaction
//! end (Kafka 4.x transactions v2: each marker carries the next epoch, the next transaction
//! starts there at sequence 0), aborted and committed transactions alternating with plain
//! records: after every cleaning round (the clock passing the delete horizon between rounds,
//! so markers go too) a `read_committed` reader returns exactly the model — no aborted
//! record, every committed record still the latest of its key — and every `.txnindex` entry
//! names an ABORT marker of its producer in its segment, as Kafka's cleaner leaves them.

use std::collections::BTreeMap;
use std::sync::Arc;

use seglog::{
    BatchBuilder, CleanupPolicy, Clock, Durability, HighWatermarkPolicy, Isolation, Log, LogConfig,
    LogOpenOptions, ManualClock, TxnResult,
};

use crate::support::T0;

const PRODUCER: i64 = 42;
const DELETE_RETENTION_MS: i64 = 1_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 64,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: DELETE_RETENTION_MS,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Log {
    Log::open_with(
        dir,
        config(),
        LogOpenOptions {
            clock: clock.clone(),
            high_watermark: HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// What a `read_committed` reader must see: key → (offset, value) of the latest committed
/// or plain record per key.
type Model = BTreeMap<String, (i64, String)>;

/// Writes `transactions` transactions of [`PRODUCER`] of two batches each, epoch bumped at
/// every end, aborted and committed alternating (with two aborted in a row now and then), a
/// plain record after each batch; a roll every third transaction. Returns the model and the
/// values of aborted records.
fn write(log: &Log, transactions: usize) -> (Model, Vec<String>) {
    let mut model = Model::new();
    let mut aborted_values = Vec::new();
    let mut epoch: i16 = 0;
    for t in 0..transactions {
        let abort = t % 2 == 0 || t % 7 == 3;
        let mut sequence = 0;
        let mut pending = Vec::new();
        for b in 0..2 {
            let mut builder = BatchBuilder::new(0)
                .producer(PRODUCER, epoch, sequence)
                .transactional(true);
            let keys = [format!("shared{}", (t + b) % 3), format!("t{t}-b{b}")];
            for key in &keys {
                let value = format!("txn{t}-{key}");
                builder.append(
                    T0 + t as i64,
                    Some(key.as_bytes()),
                    Some(value.as_bytes()),
                    &[],
                );
            }
            sequence += keys.len() as i32;
            let info = log.append(&builder.build().unwrap()).unwrap();
            for (i, key) in keys.iter().enumerate() {
                pending.push((
                    key.clone(),
                    info.first_offset + i as i64,
                    format!("txn{t}-{key}"),
                ));
            }
            // Another writer between the transaction's batches.
            let mut plain = BatchBuilder::new(0);
            let key = format!("plain{}", t % 4);
            let value = format!("plain-{t}-{b}");
            plain.append(T0, Some(key.as_bytes()), Some(value.as_bytes()), &[]);
            let offset = log.append(&plain.build().unwrap()).unwrap().first_offset;
            model.insert(key, (offset, value));
        }
        let result = if abort {
            TxnResult::Abort
        } else {
            TxnResult::Commit
        };
        // Transactions v2: the marker carries the bumped epoch.
        epoch += 1;
        log.write_txn_marker(PRODUCER, epoch, 0, result, None, Durability::PageCache)
            .unwrap();
        for (key, offset, value) in pending {
            if abort {
                aborted_values.push(value);
            } else {
                model.insert(key, (offset, value));
            }
        }
        if t % 3 == 2 {
            log.roll().unwrap();
        }
    }
    log.roll().unwrap();
    (model, aborted_values)
}

/// (offset, key, value) of every data record a `read_committed` reader returns.
fn read_committed(log: &Log) -> Vec<(i64, String, String)> {
    let mut out = Vec::new();
    for fetched in log
        .owned_reader(log.log_start_offset(), Isolation::ReadCommitted)
        .until_caught_up()
    {
        let r = fetched.unwrap().record;
        let text = |b: Option<seglog::Bytes>| String::from_utf8(b.unwrap().to_vec()).unwrap();
        out.push((r.offset, text(r.key), text(r.value)));
    }
    out
}

fn check(log: &Log, model: &Model, aborted: &[String], context: &str) {
    let seen = read_committed(log);
    for (offset, _, value) in &seen {
        assert!(
            !aborted.contains(value),
            "{context}: aborted record {value} at {offset} served"
        );
    }
    let latest: BTreeMap<&str, (i64, &str)> = seen
        .iter()
        .map(|(o, k, v)| (k.as_str(), (*o, v.as_str())))
        .collect();
    for (key, (offset, value)) in model {
        assert_eq!(
            latest.get(key.as_str()),
            Some(&(*offset, value.as_str())),
            "{context}: key {key}"
        );
    }
    assert_eq!(latest.len(), model.len(), "{context}: keys served");
    for (base, entries) in log.txn_index_entries().unwrap() {
        for entry in entries {
            let fetched = log
                .read(entry.last_offset, 1 << 16, Isolation::LogEnd, true)
                .unwrap();
            assert_eq!(fetched.fetch_offset.segment_base_offset, base, "{context}");
            let bytes = fetched.slice.read_to_vec().unwrap();
            let marker = seglog::BatchRef::parse(&bytes, 0).unwrap();
            let control = marker.control_record().unwrap().map(|c| c.control_type);
            assert_eq!(
                (
                    marker.header().last_offset,
                    marker.header().producer_id,
                    control
                ),
                (
                    entry.last_offset,
                    entry.producer_id,
                    Some(seglog::ControlRecordType::Abort)
                ),
                "{context}: {entry:?} names no ABORT marker"
            );
        }
    }
}

#[test]
fn read_committed_after_every_round_is_the_model_with_epoch_bumps_at_every_transaction_end() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = open(tmp.path(), &clock);
    let (model, aborted) = write(&log, 24);
    check(&log, &model, &aborted, "before cleaning");
    for round in 0..4 {
        log.clean_at(clock.now_ms()).unwrap();
        check(&log, &model, &aborted, &format!("after round {round}"));
        clock.advance(DELETE_RETENTION_MS + 1);
    }
    drop(log);
    let log = open(tmp.path(), &clock);
    check(&log, &model, &aborted, "after a reopen");
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
    // An unclean reopen without producer snapshots: the producer state is rebuilt by
    // replaying the cleaned segments (markers whose data is gone, epochs that jump).
    drop(log);
    for entry in std::fs::read_dir(tmp.path()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".snapshot") || name == seglog::CLEAN_SHUTDOWN_FILE {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let log = open(tmp.path(), &clock);
    check(&log, &model, &aborted, "after a crash without snapshots");
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
}
