//! Transaction version 2 through the producer API (`TransactionalProducer::init_with(..,
//! TransactionVersion::V2)`): as Kafka 4.4's coordinator under TV2
//! (`TransactionMetadata.prepareAbortOrCommit`), every commit and abort writes its markers at
//! the epoch + 1 and the next transaction's batches use it from sequence 0; a zombie of an
//! older epoch is fenced, retries of an open transaction's batches after a reopen are
//! deduplicated, read_committed never shows aborted records, and a crash mid-commit is
//! completed at the decided (bumped) epoch.

use seglog::{
    AppendErrorKind, BatchHeader, BatchRef, Durability, Error, IdempotentProducer, Isolation, Log,
    LogDir, ProducerErrorKind, ReaderOptions, TopicPartition, TransactionVersion,
    TransactionalProducer, TxnDecision, TxnMarker, TxnResult,
};
use seglog_faults::{FaultInjector, FaultKind};

use crate::support::{
    open_txn_dir as open_dir, open_txn_dir_with as open_dir_with, txn_records as records,
};

fn read(log_dir: &LogDir, tp: &TopicPartition, isolation: Isolation) -> Vec<String> {
    let log = log_dir.log(tp).unwrap();
    ReaderOptions::new(log.log_start_offset(), isolation)
        .owned_reader(&log)
        .until_caught_up()
        .map(|r| String::from_utf8(r.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

/// Every batch of `log`, with its bytes.
fn batches(log: &Log) -> Vec<(BatchHeader, Vec<u8>)> {
    let fetched = log.read(0, u32::MAX, Isolation::LogEnd, true).unwrap();
    let bytes = fetched.slice.read_to_vec().unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let batch = BatchRef::parse(&bytes[at..], at as u64).unwrap();
        out.push((*batch.header(), batch.as_bytes().to_vec()));
        at += batch.as_bytes().len();
    }
    out
}

/// (is a marker, producer epoch, base sequence) of every batch of `log`.
fn epochs(log: &Log) -> Vec<(bool, i16, i32)> {
    batches(log)
        .iter()
        .map(|(h, _)| (h.is_control, h.producer_epoch, h.base_sequence))
        .collect()
}

fn partitions() -> Vec<TopicPartition> {
    (0..3).map(|p| TopicPartition::new("orders", p)).collect()
}

const PID: i64 = 71;

#[test]
fn every_commit_and_abort_bumps_the_epoch_and_read_committed_never_shows_aborts() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    let log_dir = open_dir(root.path());
    let mut producer =
        TransactionalProducer::init_with(&log_dir, PID, 0, TransactionVersion::V2).unwrap();
    let outcomes = [
        ("c0", TxnResult::Commit),
        ("a1", TxnResult::Abort),
        ("c2", TxnResult::Commit),
        ("a3", TxnResult::Abort),
    ];
    for (epoch, (value, result)) in outcomes.into_iter().enumerate() {
        assert_eq!(producer.epoch(), epoch as i16);
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&[value, value])).unwrap();
        }
        txn.send(&tps[0], records(&[value])).unwrap();
        let markers = match result {
            TxnResult::Commit => txn.commit(Durability::Fsync),
            TxnResult::Abort => txn.abort(Durability::PageCache),
        }
        .unwrap();
        assert_eq!(markers.len(), 3);
        for tp in &tps {
            let state = log_dir.log(tp).unwrap().producer_state(PID).unwrap();
            assert_eq!(state.producer_epoch, epoch as i16 + 1, "{tp}");
        }
    }
    assert_eq!(producer.epoch(), 4);
    // The batches of each transaction at its epoch from sequence 0; its markers one above.
    let expected_p1: Vec<(bool, i16, i32)> = (0..4)
        .flat_map(|e| [(false, e, 0), (true, e + 1, -1)])
        .collect();
    assert_eq!(epochs(&log_dir.log(&tps[1]).unwrap()), expected_p1);
    let expected_p0: Vec<(bool, i16, i32)> = (0..4)
        .flat_map(|e| [(false, e, 0), (false, e, 2), (true, e + 1, -1)])
        .collect();
    assert_eq!(epochs(&log_dir.log(&tps[0]).unwrap()), expected_p0);
    for tp in &tps {
        let mut expected = vec!["c0", "c0"];
        if tp.partition == 0 {
            expected.push("c0");
        }
        expected.extend(expected.clone().iter().map(|_| "c2"));
        assert_eq!(
            read(&log_dir, tp, Isolation::ReadCommitted),
            expected,
            "{tp}"
        );
        let all = read(&log_dir, tp, Isolation::LogEnd);
        assert!(all.iter().any(|v| v == "a1") && all.iter().any(|v| v == "a3"));
        let log = log_dir.log(tp).unwrap();
        assert_eq!(
            log.aborted_transactions(0, log.log_end_offset())
                .unwrap()
                .len(),
            2
        );
    }

    // A zombie of an older epoch is fenced: its data, transactional or not, and its markers.
    let log = log_dir.log(&tps[2]).unwrap();
    let mut zombie = IdempotentProducer::new(PID, 3).unwrap();
    let batch = zombie.prepare(&tps[2], records(&["zombie"])).unwrap();
    assert!(matches!(
        zombie.send(&log, &batch, Durability::PageCache),
        Err(Error::InvalidAppend {
            kind: AppendErrorKind::InvalidProducerEpoch { .. }
        })
    ));
    let stale_txn = records(&["zombie"])
        .producer(PID, 2, 0)
        .transactional(true)
        .build()
        .unwrap();
    assert!(matches!(
        log.append(&stale_txn),
        Err(Error::InvalidAppend {
            kind: AppendErrorKind::InvalidProducerEpoch { .. }
        })
    ));
    let stale_marker = TxnMarker {
        producer_id: PID,
        producer_epoch: 3,
        coordinator_epoch: 0,
        result: TxnResult::Commit,
        leader_epoch: None,
        transaction_version: TransactionVersion::V2,
    };
    assert!(
        log.write_txn_marker_with(stale_marker, Durability::PageCache)
            .is_err()
    );
    assert!(!read(&log_dir, &tps[2], Isolation::LogEnd).contains(&"zombie".to_owned()));
    drop(log); // a log handle keeps the root locked

    // An empty transaction writes nothing and bumps nothing.
    producer
        .begin()
        .unwrap()
        .commit(Durability::PageCache)
        .unwrap();
    assert_eq!(producer.epoch(), 4);
    drop(producer);
    log_dir.close().unwrap();
    drop(log_dir);

    // After a reopen the next producer continues above the last markers' epoch.
    let log_dir = open_dir(root.path());
    assert!(matches!(
        TransactionalProducer::init_with(&log_dir, PID, 4, TransactionVersion::V2),
        Err(Error::Producer {
            kind: ProducerErrorKind::EpochNotNewer { current: 4, .. },
            ..
        })
    ));
    let mut producer =
        TransactionalProducer::init_with(&log_dir, PID, 5, TransactionVersion::V2).unwrap();
    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, records(&["c5"])).unwrap();
    }
    txn.commit(Durability::Fsync).unwrap();
    assert_eq!(producer.epoch(), 6);
    for tp in &tps {
        assert_eq!(
            read(&log_dir, tp, Isolation::ReadCommitted).last().unwrap(),
            "c5"
        );
    }
}

#[test]
fn retries_of_an_open_transaction_after_a_reopen_are_deduplicated() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    let mut sent = Vec::new();
    {
        let log_dir = open_dir(root.path());
        let mut producer =
            TransactionalProducer::init_with(&log_dir, PID, 0, TransactionVersion::V2).unwrap();
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&["first"])).unwrap();
        }
        txn.commit(Durability::PageCache).unwrap();
        // The second transaction runs at epoch 1; the process dies before its end.
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&["open-1", "open-2"])).unwrap();
            txn.send(tp, records(&["open-3"])).unwrap();
        }
        std::mem::forget(txn);
        for tp in &tps {
            let log = log_dir.log(tp).unwrap();
            for (header, bytes) in batches(&log) {
                if !header.is_control && header.producer_epoch == 1 {
                    sent.push((tp.clone(), header.base_offset.unwrap(), bytes));
                }
            }
        }
        drop(producer);
        drop(log_dir); // a crash: nothing closed
    }
    assert_eq!(sent.len(), 6);

    let log_dir = open_dir(root.path());
    assert!(!log_dir.had_clean_shutdown());
    // The rebuilt producer state knows each partition's last epoch-1 batch only, as Kafka 4.4's
    // recovery does (every recovered segment round-trips through a snapshot, which holds one
    // batch per producer): its resend (the very same bytes) is answered with its original
    // offsets, the earlier batch's is out of order; nothing is written either way.
    for (i, (tp, base_offset, bytes)) in sent.iter().enumerate() {
        let log = log_dir.log(tp).unwrap();
        let end = log.log_end_offset();
        if i % 2 == 1 {
            let retry = log.append_with(bytes, Durability::PageCache).unwrap();
            assert!(retry.duplicate, "{tp} {base_offset}");
            assert_eq!(retry.first_offset, *base_offset);
        } else {
            assert!(
                matches!(
                    log.append_with(bytes, Durability::PageCache),
                    Err(Error::InvalidAppend {
                        kind: AppendErrorKind::OutOfOrderSequence { .. }
                    })
                ),
                "{tp} {base_offset}"
            );
        }
        assert_eq!(log.log_end_offset(), end);
    }
    // The fencing producer aborts the open transaction at its epoch; the retries are fenced.
    let mut producer =
        TransactionalProducer::init_with(&log_dir, PID, 2, TransactionVersion::V2).unwrap();
    for (tp, _, bytes) in &sent {
        assert!(matches!(
            log_dir
                .log(tp)
                .unwrap()
                .append_with(bytes, Durability::PageCache),
            Err(Error::InvalidAppend {
                kind: AppendErrorKind::InvalidProducerEpoch { .. }
            })
        ));
        assert_eq!(read(&log_dir, tp, Isolation::ReadCommitted), ["first"]);
    }
    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, records(&["third"])).unwrap();
    }
    txn.commit(Durability::Fsync).unwrap();
    assert_eq!(producer.epoch(), 3);
    for tp in &tps {
        assert_eq!(
            read(&log_dir, tp, Isolation::ReadCommitted),
            ["first", "third"]
        );
    }
}

#[test]
fn a_crash_mid_commit_is_completed_at_the_bumped_epoch() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    {
        let faults = FaultInjector::new(root.path());
        let log_dir = open_dir_with(root.path(), faults.io());
        let mut producer =
            TransactionalProducer::init_with(&log_dir, PID, 4, TransactionVersion::V2).unwrap();
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&["data"])).unwrap();
        }
        faults.fail_nth_write(2, FaultKind::Enospc);
        assert!(txn.commit(Durability::PageCache).is_err());
        // The epoch moves only once the end is complete.
        assert_eq!(producer.epoch(), 4);
    }
    let decision = TxnDecision::read(root.path(), PID).unwrap().unwrap();
    assert_eq!(
        (
            decision.producer_epoch,
            decision.marker_epoch,
            decision.transaction_version
        ),
        (4, 5, TransactionVersion::V2)
    );
    let log_dir = open_dir(root.path());
    // The marked partition is at epoch 5 already.
    assert!(TransactionalProducer::init_with(&log_dir, PID, 5, TransactionVersion::V2).is_err());
    let producer =
        TransactionalProducer::init_with(&log_dir, PID, 6, TransactionVersion::V2).unwrap();
    assert_eq!(producer.epoch(), 6);
    for tp in &tps {
        let log = log_dir.log(tp).unwrap();
        assert_eq!(
            read(&log_dir, tp, Isolation::ReadCommitted),
            ["data"],
            "{tp}"
        );
        let markers: Vec<(bool, i16, i32)> = epochs(&log)
            .into_iter()
            .filter(|(control, ..)| *control)
            .collect();
        assert_eq!(markers, [(true, 5, -1)], "{tp}");
    }
}

#[test]
fn the_last_epoch_ends_one_transaction_then_asks_for_a_new_producer_id() {
    let root = tempfile::tempdir().unwrap();
    let log_dir = open_dir(root.path());
    let tp = TopicPartition::new("orders", 0);
    let mut producer =
        TransactionalProducer::init_with(&log_dir, PID, i16::MAX - 1, TransactionVersion::V2)
            .unwrap();
    let mut txn = producer.begin().unwrap();
    txn.send(&tp, records(&["last"])).unwrap();
    txn.commit(Durability::PageCache).unwrap();
    assert_eq!(producer.epoch(), i16::MAX);
    // Kafka's coordinator moves to a new producer id here; seglog has none to give.
    assert!(matches!(
        producer.begin(),
        Err(Error::Producer {
            kind: ProducerErrorKind::EpochExhausted { epoch: i16::MAX },
            ..
        })
    ));
    assert_eq!(read(&log_dir, &tp, Isolation::ReadCommitted), ["last"]);
}
