//! The producer API over the primitives: `IdempotentProducer` (sequences, retries answered
//! from the log's producer state, also after a crash and reopen; epoch bumps) and
//! `TransactionalProducer` / `Transaction` (commit and abort across partitions, an undecided
//! transaction aborted by a fencing producer, a commit that failed part-way completed), checked through `read_committed` reads; and the
//! two examples, run as tests.

use std::path::Path;

use seglog::{
    AppendErrorKind, BatchBuilder, Durability, Error, HighWatermarkPolicy, IdempotentProducer,
    Isolation, LogDir, LogOpenOptions, ProducerErrorKind, ReaderOptions, TopicPartition,
    TransactionalProducer, TxnResult,
};

use seglog_faults::{FaultInjector, FaultKind};

use crate::support::{T0, clock, small_config};

#[path = "../../examples/idempotent_producer.rs"]
#[allow(dead_code)]
mod idempotent_example;
#[path = "../../examples/transactions.rs"]
#[allow(dead_code)]
mod transactions_example;

fn open_dir(root: &Path) -> LogDir {
    LogDir::open_with(
        root,
        small_config(1 << 20),
        LogOpenOptions {
            clock: clock(),
            high_watermark: HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

fn records(values: &[&str]) -> BatchBuilder {
    let mut b = BatchBuilder::new(0);
    for (i, v) in values.iter().enumerate() {
        b.append(T0 + i as i64, None, Some(v.as_bytes()), &[]);
    }
    b
}

fn read(log_dir: &LogDir, tp: &TopicPartition, isolation: Isolation) -> Vec<String> {
    let log = log_dir.log(tp).unwrap();
    ReaderOptions::new(log.log_start_offset(), isolation)
        .owned_reader(&log)
        .until_caught_up()
        .map(|r| String::from_utf8(r.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

fn partitions() -> Vec<TopicPartition> {
    (0..3).map(|p| TopicPartition::new("orders", p)).collect()
}

#[test]
fn retries_after_a_reopen_are_deduplicated() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    let mut producer = IdempotentProducer::new(11, 0).unwrap();
    let mut sent = Vec::new();
    let log_dir = open_dir(root.path());
    for round in 0..3 {
        for tp in &tps {
            let value = format!("{tp}-{round}");
            let batch = producer.prepare(tp, records(&[&value, "x"])).unwrap();
            let info = producer
                .send_to(&log_dir, &batch, Durability::PageCache)
                .unwrap();
            assert!(!info.duplicate);
            sent.push((batch, info));
        }
    }
    // Prepared but lost before it reached the log.
    let unsent = producer.prepare(&tps[0], records(&["late"])).unwrap();
    drop(log_dir); // a crash: no close, no checkpoints, no clean-shutdown marker

    let log_dir = open_dir(root.path());
    assert!(!log_dir.had_clean_shutdown());
    let ends: Vec<i64> = tps
        .iter()
        .map(|tp| log_dir.log(tp).unwrap().log_end_offset())
        .collect();
    assert_eq!(ends, [6, 6, 6]);
    // As in Kafka 4.4, the recovered state holds each producer's last batch per partition
    // (what a snapshot keeps): the retry of the last round is answered with its original
    // offsets, an earlier round's is out of order; nothing is written either way.
    for (i, (batch, first)) in sent.iter().enumerate() {
        let log = log_dir.log(batch.topic_partition()).unwrap();
        if i >= 2 * tps.len() {
            let retry = producer.retry(&log, batch, Durability::Fsync).unwrap();
            assert!(retry.duplicate, "{batch:?}");
            assert_eq!(
                (retry.first_offset, retry.last_offset),
                (first.first_offset, first.last_offset)
            );
        } else {
            let err = producer.retry(&log, batch, Durability::Fsync).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidAppend {
                        kind: AppendErrorKind::OutOfOrderSequence { .. }
                    }
                ),
                "{err}"
            );
        }
    }
    for (tp, end) in tps.iter().zip(ends) {
        assert_eq!(log_dir.log(tp).unwrap().log_end_offset(), end);
    }
    // The lost batch is next in sequence: its retry writes it.
    let log = log_dir.log(&tps[0]).unwrap();
    let late = producer.retry(&log, &unsent, Durability::Fsync).unwrap();
    assert!(!late.duplicate);
    assert_eq!(late.first_offset, 6);
    assert_eq!(
        read(&log_dir, &tps[0], Isolation::ReadCommitted),
        [
            "orders-0-0",
            "x",
            "orders-0-1",
            "x",
            "orders-0-2",
            "x",
            "late"
        ]
    );
    // A batch sent to the wrong partition is refused before the log sees it.
    let other = log_dir.get_or_create(&tps[1]).unwrap();
    let err = producer
        .send(&other, &unsent, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Producer {
            kind: ProducerErrorKind::WrongPartition { .. },
            ..
        }
    ));
}

#[test]
fn an_out_of_order_or_fenced_answer_bumps_the_epoch_and_resets_the_sequences() {
    let root = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("events", 0);
    let log_dir = open_dir(root.path());
    let mut producer = IdempotentProducer::new(3, 0).unwrap();
    for v in ["a", "b"] {
        let batch = producer.prepare(&tp, records(&[v])).unwrap();
        producer
            .send_to(&log_dir, &batch, Durability::PageCache)
            .unwrap();
    }
    let log = log_dir.log(&tp).unwrap();
    // "lost" (sequence 2) never reaches the log; "gap" (sequence 3) leaves a gap.
    let lost = producer.prepare(&tp, records(&["lost"])).unwrap();
    let gap = producer.prepare(&tp, records(&["gap"])).unwrap();
    let err = producer
        .send(&log, &gap, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidAppend {
            kind: AppendErrorKind::OutOfOrderSequence {
                sequence: 3,
                last_sequence: 1,
                ..
            }
        }
    ));
    // Kafka's idempotent client: bump the epoch, every sequence back to 0.
    assert_eq!((producer.epoch(), producer.next_sequence(&tp)), (1, 0));
    // Stale batches (of epoch 0) are left to the log, and their refusal bumps nothing more.
    assert!(producer.retry(&log, &gap, Durability::PageCache).is_err());
    assert_eq!(producer.epoch(), 1);
    let batch = producer.prepare(&tp, records(&["gap"])).unwrap();
    assert_eq!((batch.producer_epoch(), batch.base_sequence()), (1, 0));
    producer.send(&log, &batch, Durability::PageCache).unwrap();
    // The lost batch of epoch 0 is now fenced and bumps nothing.
    assert!(matches!(
        producer.retry(&log, &lost, Durability::PageCache),
        Err(Error::InvalidAppend {
            kind: AppendErrorKind::InvalidProducerEpoch { .. }
        })
    ));
    assert_eq!(producer.epoch(), 1);

    // A restarted process at the old epoch is answered fenced, and bumps above the log's.
    let mut restarted = IdempotentProducer::new(3, 0).unwrap();
    let batch = restarted.prepare(&tp, records(&["late"])).unwrap();
    let err = restarted
        .send(&log, &batch, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidAppend {
            kind: AppendErrorKind::InvalidProducerEpoch {
                current_epoch: 1,
                ..
            }
        }
    ));
    assert_eq!(restarted.epoch(), 2);
    let batch = restarted.prepare(&tp, records(&["late"])).unwrap();
    restarted.send(&log, &batch, Durability::PageCache).unwrap();
    assert_eq!(
        read(&log_dir, &tp, Isolation::ReadCommitted),
        ["a", "b", "gap", "late"]
    );
}

#[test]
fn a_batch_refused_on_its_first_send_gives_its_sequences_back() {
    let root = tempfile::tempdir().unwrap();
    let config = seglog::LogConfig {
        max_message_bytes: 256,
        ..small_config(1 << 20)
    };
    let options = LogOpenOptions {
        clock: clock(),
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    let log_dir = LogDir::open_with(root.path(), config, options).unwrap();
    let big = "x".repeat(400);
    let tp = TopicPartition::new("events", 0);

    let mut producer = IdempotentProducer::new(51, 0).unwrap();
    let first = producer.prepare(&tp, records(&["a"])).unwrap();
    producer
        .send_to(&log_dir, &first, Durability::PageCache)
        .unwrap();
    let too_large = producer.prepare(&tp, records(&[&big, "b"])).unwrap();
    let err = producer
        .send_to(&log_dir, &too_large, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidAppend {
            kind: AppendErrorKind::BatchTooLarge { .. }
        }
    ));
    assert_eq!((producer.epoch(), producer.next_sequence(&tp)), (0, 1));
    let next = producer.prepare(&tp, records(&["c"])).unwrap();
    producer
        .send_to(&log_dir, &next, Durability::PageCache)
        .unwrap();
    // A later resend of the refused batch is not its first send: "c" keeps its sequence.
    assert!(
        producer
            .retry(
                &log_dir.log(&tp).unwrap(),
                &too_large,
                Durability::PageCache
            )
            .is_err()
    );
    assert_eq!(producer.next_sequence(&tp), 2);

    // In a transaction, the refused batch does not stall the ones after it.
    let txn_tp = TopicPartition::new("txn", 0);
    let mut producer = TransactionalProducer::init(&log_dir, 52, 0).unwrap();
    let mut txn = producer.begin().unwrap();
    txn.send(&txn_tp, records(&["t1"])).unwrap();
    assert!(txn.send(&txn_tp, records(&[&big])).is_err());
    txn.send(&txn_tp, records(&["t2"])).unwrap();
    txn.commit(Durability::PageCache).unwrap();
    assert_eq!(read(&log_dir, &tp, Isolation::ReadCommitted), ["a", "c"]);
    assert_eq!(
        read(&log_dir, &txn_tp, Isolation::ReadCommitted),
        ["t1", "t2"]
    );
}

#[test]
fn a_transaction_across_three_partitions_committed_and_another_aborted() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    let log_dir = open_dir(root.path());
    let mut producer = TransactionalProducer::init(&log_dir, 21, 0).unwrap();

    let mut txn = producer.begin().unwrap();
    let mut data_ends = Vec::new();
    for tp in &tps {
        let info = txn
            .send(tp, records(&[&format!("committed-{tp}")]))
            .unwrap();
        data_ends.push(info.last_offset);
    }
    // A second batch on one partition: still one marker per partition.
    txn.send(&tps[1], records(&["committed-more"])).unwrap();
    data_ends[1] += 1;
    // Open: read_committed shows nothing yet.
    assert!(read(&log_dir, &tps[0], Isolation::ReadCommitted).is_empty());
    let markers = txn.commit(Durability::Fsync).unwrap();
    let marked: Vec<&TopicPartition> = markers.iter().map(|(tp, _)| tp).collect();
    assert_eq!(marked, tps.iter().collect::<Vec<_>>());
    for ((_, marker), data_end) in markers.iter().zip(&data_ends) {
        // Kafka's order: the marker follows all of the transaction's data.
        assert_eq!(marker.first_offset, data_end + 1);
    }

    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, records(&["aborted-1", "aborted-2"])).unwrap();
    }
    let markers = txn.abort(Durability::PageCache).unwrap();
    assert_eq!(markers.len(), 3);

    // A transaction dropped unended is aborted too.
    {
        let mut txn = producer.begin().unwrap();
        txn.send(&tps[2], records(&["dropped"])).unwrap();
    }

    for (i, tp) in tps.iter().enumerate() {
        let log = log_dir.log(tp).unwrap();
        assert!(log.ongoing_transactions().is_empty());
        assert_eq!(log.last_stable_offset(), log.log_end_offset());
        let mut expected = vec![format!("committed-{tp}")];
        if i == 1 {
            expected.push("committed-more".into());
        }
        assert_eq!(read(&log_dir, tp, Isolation::ReadCommitted), expected);
        let all = read(&log_dir, tp, Isolation::LogEnd);
        assert!(all.iter().any(|v| v == "aborted-1"));
    }
    assert!(
        !read(&log_dir, &tps[2], Isolation::ReadCommitted)
            .iter()
            .any(|v| v == "dropped")
    );
    log_dir.close().unwrap();
}

#[test]
fn a_crash_mid_commit_is_aborted_by_a_fencing_producer() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    {
        let log_dir = open_dir(root.path());
        let mut producer = TransactionalProducer::init(&log_dir, 31, 0).unwrap();
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&[&format!("first-{tp}")])).unwrap();
        }
        // A COMMIT marker written by hand on the first partition with the primitive (no
        // decision record, as no `Transaction::commit` wrote it), then the process died:
        // the transaction is never ended (no Drop abort), and the LogDir is dropped unclosed.
        log_dir
            .log(&tps[0])
            .unwrap()
            .write_txn_marker(31, 0, 0, TxnResult::Commit, None, Durability::Fsync)
            .unwrap();
        std::mem::forget(txn);
        drop(producer);
        drop(log_dir);
    }

    let log_dir = open_dir(root.path());
    assert!(!log_dir.had_clean_shutdown());
    assert!(
        log_dir
            .log(&tps[0])
            .unwrap()
            .ongoing_transactions()
            .is_empty()
    );
    for tp in &tps[1..] {
        let log = log_dir.log(tp).unwrap();
        assert_eq!(log.ongoing_transactions(), [(31, 0)]);
        assert!(read(&log_dir, tp, Isolation::ReadCommitted).is_empty());
    }
    // InitProducerId always bumps: the crashed epoch cannot fence itself.
    let err = TransactionalProducer::init(&log_dir, 31, 0).unwrap_err();
    assert!(matches!(
        err,
        Error::Producer {
            kind: ProducerErrorKind::EpochNotNewer {
                epoch: 0,
                current: 0,
                ..
            },
            ..
        }
    ));
    let mut producer = TransactionalProducer::init(&log_dir, 31, 1).unwrap();
    for tp in &tps {
        let log = log_dir.log(tp).unwrap();
        assert!(log.ongoing_transactions().is_empty(), "{tp}");
        assert_eq!(log.last_stable_offset(), log.log_end_offset());
    }
    // The marked partition stays committed; with no decision logged, the others are aborted
    // and read_committed never shows them (a `Transaction::commit` across partitions logs
    // its decision first: the txn_atomic tests).
    assert_eq!(
        read(&log_dir, &tps[0], Isolation::ReadCommitted),
        ["first-orders-0"]
    );
    for tp in &tps[1..] {
        assert!(read(&log_dir, tp, Isolation::ReadCommitted).is_empty());
    }
    // The old epoch is fenced on the aborted partitions.
    let mut zombie = IdempotentProducer::new(31, 0).unwrap();
    let batch = zombie.prepare(&tps[1], records(&["zombie"])).unwrap();
    assert!(matches!(
        zombie.send_to(&log_dir, &batch, Durability::PageCache),
        Err(Error::InvalidAppend {
            kind: AppendErrorKind::InvalidProducerEpoch { .. }
        })
    ));
    // The fencing producer goes on.
    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, records(&["second"])).unwrap();
    }
    txn.commit(Durability::Fsync).unwrap();
    drop(producer);
    log_dir.close().unwrap();
    drop(log_dir);

    let log_dir = open_dir(root.path());
    assert_eq!(
        read(&log_dir, &tps[0], Isolation::ReadCommitted),
        ["first-orders-0", "second"]
    );
    for tp in &tps[1..] {
        assert_eq!(read(&log_dir, tp, Isolation::ReadCommitted), ["second"]);
    }
}

#[test]
fn a_commit_that_fails_part_way_stays_pending_and_the_next_init_completes_it() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    let faults = FaultInjector::new(root.path());
    {
        let log_dir = LogDir::open_with(
            root.path(),
            small_config(1 << 20),
            LogOpenOptions {
                clock: clock(),
                high_watermark: HighWatermarkPolicy::LogEnd,
                io: faults.io(),
                ..LogOpenOptions::default()
            },
        )
        .unwrap();
        let mut producer = TransactionalProducer::init(&log_dir, 41, 0).unwrap();
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&[&format!("data-{tp}")])).unwrap();
        }
        // The first marker is written, the second one's write fails (its log is poisoned).
        faults.fail_nth_write(2, FaultKind::Enospc);
        assert!(txn.commit(Durability::PageCache).is_err());
        assert!(
            log_dir
                .log(&tps[0])
                .unwrap()
                .ongoing_transactions()
                .is_empty()
        );
        for tp in &tps[1..] {
            assert_eq!(log_dir.log(tp).unwrap().ongoing_transactions(), [(41, 0)]);
        }
        // The markers still to write come first: the poisoned log refuses them, so no new
        // transaction starts (it would otherwise extend the unfinished one on that partition).
        assert!(producer.begin().is_err());
        assert_eq!(
            log_dir.log(&tps[2]).unwrap().ongoing_transactions(),
            [(41, 0)]
        );
    }

    // The commit logged its decision before its first marker: the fencing producer's init
    // writes the two missing COMMIT markers, and every partition is committed.
    let log_dir = open_dir(root.path());
    TransactionalProducer::init(&log_dir, 41, 1).unwrap();
    for tp in &tps {
        let log = log_dir.log(tp).unwrap();
        assert!(log.ongoing_transactions().is_empty());
        assert_eq!(
            read(&log_dir, tp, Isolation::ReadCommitted),
            [format!("data-{tp}")]
        );
    }
}

#[test]
fn the_idempotent_producer_example_runs() {
    let root = tempfile::tempdir().unwrap();
    idempotent_example::run(root.path()).unwrap();
}

#[test]
fn the_transactions_example_runs() {
    let root = tempfile::tempdir().unwrap();
    transactions_example::run(root.path()).unwrap();
}
