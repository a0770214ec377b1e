//! The producer API with the log's other operations: cleaning rounds of a compacted
//! partition between transactions (read_committed's latest value per key unchanged by every
//! round, aborted records never back, the producer going on without a sequence error), and
//! truncations that remove a producer's last batches (the producer resynchronises as Kafka's
//! client does after `OutOfOrderSequence`: a new epoch from sequence 0; retries of what the
//! truncation kept stay duplicates, a retry of what it removed writes it again once).

use std::collections::BTreeMap;
use std::path::Path;

use seglog::{
    AppendErrorKind, BatchBuilder, CleanupPolicy, Durability, Error, HighWatermarkPolicy,
    IdempotentProducer, Isolation, LogConfig, LogDir, LogOpenOptions, ReaderOptions,
    TopicPartition, TransactionVersion, TransactionalProducer,
};

use crate::support::{T0, clock, small_config};

fn compacted() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 64,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        cleanup_policy: CleanupPolicy::Compact,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open_dir(root: &Path, config: LogConfig) -> LogDir {
    LogDir::open_with(
        root,
        config,
        LogOpenOptions {
            clock: clock(),
            high_watermark: HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

fn keyed(pairs: &[(&str, &str)]) -> BatchBuilder {
    let mut b = BatchBuilder::new(0);
    for (i, (k, v)) in pairs.iter().enumerate() {
        b.append(T0 + i as i64, Some(k.as_bytes()), Some(v.as_bytes()), &[]);
    }
    b
}

/// read_committed as (offset, key, value).
fn committed(log_dir: &LogDir, tp: &TopicPartition) -> Vec<(i64, String, String)> {
    let log = log_dir.log(tp).unwrap();
    ReaderOptions::new(log.log_start_offset(), Isolation::ReadCommitted)
        .owned_reader(&log)
        .map(|r| {
            let r = r.unwrap();
            let text = |b: Option<seglog::Bytes>| String::from_utf8(b.unwrap().to_vec()).unwrap();
            (r.record.offset, text(r.record.key), text(r.record.value))
        })
        .collect()
}

fn latest(records: &[(i64, String, String)]) -> BTreeMap<String, (i64, String)> {
    records
        .iter()
        .map(|(o, k, v)| (k.clone(), (*o, v.clone())))
        .collect()
}

#[test]
fn cleaning_rounds_between_transactions_keep_what_read_committed_shows() {
    for version in [TransactionVersion::V0, TransactionVersion::V2] {
        cleaning_between_transactions(version);
    }
}

fn cleaning_between_transactions(version: TransactionVersion) {
    let root = tempfile::tempdir().unwrap();
    let log_dir = open_dir(root.path(), compacted());
    let tps: Vec<TopicPartition> = (0..3).map(|p| TopicPartition::new("state", p)).collect();
    let mut producer = TransactionalProducer::init_with(&log_dir, 81, 0, version).unwrap();
    let mut model: Vec<BTreeMap<String, String>> = vec![BTreeMap::new(); 3];
    let mut aborted = Vec::new();
    let mut cleaned_rounds = 0;
    for round in 0..40 {
        let mut txn = producer.begin().unwrap();
        let commit = round % 3 != 1;
        let mut writes = Vec::new();
        for (i, tp) in tps.iter().enumerate() {
            let key = format!("k{}", (round + i) % 5);
            let value = format!("v{round}-{i}");
            let unique = format!("u{round}-{i}");
            txn.send(tp, keyed(&[(&key, &value), (&unique, &value)]))
                .unwrap();
            writes.push((i, key, unique, value));
        }
        if commit {
            txn.commit(Durability::PageCache).unwrap();
            for (i, key, unique, value) in writes {
                model[i].insert(key, value.clone());
                model[i].insert(unique, value);
            }
        } else {
            txn.abort(Durability::PageCache).unwrap();
            aborted.extend(writes.into_iter().map(|(_, _, _, value)| value));
        }
        if round % 4 == 3 {
            for (i, tp) in tps.iter().enumerate() {
                let before = committed(&log_dir, tp);
                let log = log_dir.log(tp).unwrap();
                if log.clean().unwrap().is_some() {
                    cleaned_rounds += 1;
                }
                let after = committed(&log_dir, tp);
                // Compaction keeps the latest committed value of every key, at its offset.
                assert_eq!(latest(&after), latest(&before), "{version:?} {tp} {round}");
                let now: BTreeMap<String, String> = latest(&after)
                    .into_iter()
                    .map(|(k, (_, v))| (k, v))
                    .collect();
                assert_eq!(now, model[i], "{version:?} {tp} {round}");
                // Only superseded records went, and no aborted one came back.
                assert!(after.iter().all(|r| before.contains(r)));
                assert!(!after.iter().any(|(_, _, v)| aborted.contains(v)));
            }
        }
    }
    assert!(
        cleaned_rounds >= 10,
        "{version:?}: {cleaned_rounds} cleaning rounds"
    );
    // A crash and the fencing producer: the compacted partitions still agree with the model.
    let epoch = producer.epoch();
    drop(producer);
    drop(log_dir);
    let log_dir = open_dir(root.path(), compacted());
    TransactionalProducer::init_with(&log_dir, 81, epoch + 1, version).unwrap();
    for (i, tp) in tps.iter().enumerate() {
        let now: BTreeMap<String, String> = latest(&committed(&log_dir, tp))
            .into_iter()
            .map(|(k, (_, v))| (k, v))
            .collect();
        assert_eq!(now, model[i], "{version:?} {tp} after reopen");
    }
}

fn plain(values: &[&str]) -> BatchBuilder {
    let mut b = BatchBuilder::new(0);
    for (i, v) in values.iter().enumerate() {
        b.append(T0 + i as i64, None, Some(v.as_bytes()), &[]);
    }
    b
}

fn values(log_dir: &LogDir, tp: &TopicPartition) -> Vec<String> {
    committed_plain(log_dir, tp, Isolation::ReadCommitted)
}

fn committed_plain(log_dir: &LogDir, tp: &TopicPartition, isolation: Isolation) -> Vec<String> {
    let log = log_dir.log(tp).unwrap();
    ReaderOptions::new(log.log_start_offset(), isolation)
        .owned_reader(&log)
        .map(|r| String::from_utf8(r.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

#[test]
fn an_idempotent_producer_resumes_after_a_truncation_removed_its_last_batches() {
    let root = tempfile::tempdir().unwrap();
    let log_dir = open_dir(root.path(), small_config(1 << 20));
    let tp = TopicPartition::new("events", 0);
    let mut producer = IdempotentProducer::new(91, 0).unwrap();
    let mut sent = Vec::new();
    for v in ["b0", "b1", "b2", "b3", "b4"] {
        let batch = producer.prepare(&tp, plain(&[v])).unwrap();
        let info = producer
            .send_to(&log_dir, &batch, Durability::PageCache)
            .unwrap();
        sent.push((batch, info));
    }
    let log = log_dir.log(&tp).unwrap();
    // A truncation (a follower's, after a leader change) removes b3 and b4.
    log.truncate_to(3).unwrap();
    assert_eq!(log.producer_state(91).unwrap().last_sequence(), 2);
    // What the truncation kept is still a duplicate.
    let retry = producer
        .retry(&log, &sent[2].0, Durability::PageCache)
        .unwrap();
    assert!(retry.duplicate && retry.first_offset == 2);
    // The next batch (sequence 5) leaves a gap: OutOfOrderSequence, and the producer bumps
    // its epoch and starts over at sequence 0, as Kafka's idempotent client does.
    let next = producer.prepare(&tp, plain(&["b5"])).unwrap();
    assert!(matches!(
        producer.send(&log, &next, Durability::PageCache),
        Err(Error::InvalidAppend {
            kind: AppendErrorKind::OutOfOrderSequence { .. }
        })
    ));
    assert_eq!((producer.epoch(), producer.next_sequence(&tp)), (1, 0));
    // The caller resends what the truncation removed (and the refused batch) at the new
    // epoch; each resend is written once and deduplicated after.
    for v in ["b3", "b4", "b5"] {
        let batch = producer.prepare(&tp, plain(&[v])).unwrap();
        let first = producer.send(&log, &batch, Durability::PageCache).unwrap();
        assert!(!first.duplicate);
        let again = producer.retry(&log, &batch, Durability::PageCache).unwrap();
        assert!(again.duplicate && again.first_offset == first.first_offset);
    }
    assert_eq!(values(&log_dir, &tp), ["b0", "b1", "b2", "b3", "b4", "b5"]);
    // Retries of the old epoch's batches are now fenced, never written twice.
    for (batch, _) in &sent {
        assert!(producer.retry(&log, batch, Durability::PageCache).is_err());
    }
    assert_eq!(log.log_end_offset(), 6);
    drop(log);
    drop(log_dir);
    // A reopen rebuilds the same state: the last batch of epoch 1 is a duplicate.
    let log_dir = open_dir(root.path(), small_config(1 << 20));
    let log = log_dir.log(&tp).unwrap();
    assert_eq!(log.producer_state(91).unwrap().producer_epoch, 1);
}

#[test]
fn a_transactional_producer_resumes_after_a_truncation_removed_its_last_transaction() {
    for version in [TransactionVersion::V0, TransactionVersion::V2] {
        transactional_truncation(version);
    }
}

fn transactional_truncation(version: TransactionVersion) {
    let root = tempfile::tempdir().unwrap();
    let log_dir = open_dir(root.path(), small_config(1 << 20));
    let tps: Vec<TopicPartition> = (0..3).map(|p| TopicPartition::new("orders", p)).collect();
    let mut producer = TransactionalProducer::init_with(&log_dir, 92, 0, version).unwrap();
    for round in 0..2 {
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, plain(&[&format!("t{round}")])).unwrap();
        }
        txn.commit(Durability::PageCache).unwrap();
    }
    // The truncation removes the second transaction (data and marker) from partition 0.
    let log0 = log_dir.log(&tps[0]).unwrap();
    log0.truncate_to(2).unwrap();
    assert_eq!(values(&log_dir, &tps[0]), ["t0"]);

    // The next transaction: under V0 partition 0 answers its sequence with
    // OutOfOrderSequence (nothing written there) and the transaction goes on elsewhere;
    // under V2 the epoch bumped by the last end starts over at sequence 0, which the log takes.
    let mut txn = producer.begin().unwrap();
    let first = txn.send(&tps[0], plain(&["t2"]));
    match version {
        TransactionVersion::V2 => assert!(first.is_ok(), "{first:?}"),
        _ => assert!(
            matches!(
                first,
                Err(Error::InvalidAppend {
                    kind: AppendErrorKind::OutOfOrderSequence { .. }
                })
            ),
            "{first:?}"
        ),
    }
    for tp in &tps[1..] {
        txn.send(tp, plain(&["t2"])).unwrap();
    }
    txn.commit(Durability::PageCache).unwrap();
    // After that end the producer is back in sequence on every partition: a new epoch from
    // sequence 0, as Kafka's client bumps it after OutOfOrderSequence.
    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, plain(&["t3"])).unwrap();
    }
    txn.commit(Durability::PageCache).unwrap();
    let p0: Vec<&str> = match version {
        TransactionVersion::V2 => vec!["t0", "t2", "t3"],
        _ => vec!["t0", "t3"],
    };
    assert_eq!(values(&log_dir, &tps[0]), p0, "{version:?}");
    for tp in &tps[1..] {
        assert_eq!(
            values(&log_dir, tp),
            ["t0", "t1", "t2", "t3"],
            "{version:?}"
        );
    }
    for (_, log) in log_dir.logs() {
        assert!(log.ongoing_transactions().is_empty());
    }
}
