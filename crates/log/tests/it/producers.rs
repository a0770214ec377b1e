//! Producer state and transactions: deduplication, fencing, snapshots at roll / close / open,
//! rebuild after a crash, truncation, expiry, markers, `.txnindex`, the last stable offset and
//! `read_committed` reads; and the broker-made fixtures and corpus rebuilt to the broker's
//! `.txnindex` and snapshot contents.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use seglog::{
    AppendErrorKind, BatchBuilder, Durability, Error, Isolation, Log, LogConfig, LogOpenOptions,
    ProducerSnapshot, ReaderOptions, TxnResult,
};

use crate::support::{T0, clock, open, partition_dirs, small_config};

/// A batch of `count` records of producer `pid`/`epoch` from `sequence`.
fn idempotent(pid: i64, epoch: i16, sequence: i32, count: usize, txn: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(0)
        .producer(pid, epoch, sequence)
        .transactional(txn);
    for i in 0..count {
        b.append(
            T0 + i as i64,
            None,
            Some(format!("{pid}-{sequence}-{i}").as_bytes()),
            &[],
        );
    }
    b.build().unwrap().to_vec()
}

fn kind(e: Error) -> AppendErrorKind {
    match e {
        Error::InvalidAppend { kind } => kind,
        other => panic!("expected a rejection, got {other}"),
    }
}

fn values(log: &Log, isolation: Isolation) -> Vec<String> {
    ReaderOptions::new(log.log_start_offset(), isolation)
        .owned_reader(log)
        .until_caught_up()
        .map(|r| String::from_utf8(r.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

#[test]
fn a_retry_of_one_of_the_last_five_batches_returns_the_original_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(1 << 20), &clock);
    let mut firsts = Vec::new();
    for i in 0..7 {
        let info = log.append(&idempotent(7, 0, i * 3, 3, false)).unwrap();
        assert!(!info.duplicate);
        firsts.push(info.first_offset);
    }
    let end = log.log_end_offset();
    // The 3rd batch (sequence 6..8) is among the last five: answered from the cache.
    let retry = log.append(&idempotent(7, 0, 6, 3, false)).unwrap();
    assert!(retry.duplicate);
    assert_eq!(
        (retry.first_offset, retry.last_offset),
        (firsts[2], firsts[2] + 2)
    );
    assert_eq!(log.log_end_offset(), end, "nothing written");
    // The 1st is not retained any more: its sequence is out of order now.
    let e = log.append(&idempotent(7, 0, 0, 3, false)).unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::OutOfOrderSequence {
            sequence: 0,
            last_sequence: 20,
            ..
        }
    ));
    assert_eq!(log.producer_state(7).unwrap().batches().len(), 5);
}

#[test]
fn sequences_epochs_and_fencing_follow_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(1 << 20), &clock);
    // A producer with no state is accepted at any sequence.
    log.append(&idempotent(1, 3, 40, 2, false)).unwrap();
    let e = log.append(&idempotent(1, 3, 43, 1, false)).unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::OutOfOrderSequence {
            sequence: 43,
            last_sequence: 41,
            ..
        }
    ));
    // A new epoch starts at 0.
    let e = log.append(&idempotent(1, 4, 42, 1, false)).unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::OutOfOrderSequence { .. }
    ));
    log.append(&idempotent(1, 4, 0, 1, false)).unwrap();
    // The old epoch is fenced.
    let e = log.append(&idempotent(1, 3, 42, 1, false)).unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::InvalidProducerEpoch {
            epoch: 3,
            current_epoch: 4,
            ..
        }
    ));
    // Wrap at i32::MAX.
    log.append(&idempotent(2, 0, i32::MAX - 1, 2, false))
        .unwrap();
    log.append(&idempotent(2, 0, 0, 1, false)).unwrap();
    // A batch with a producer id and no sequence is refused.
    let e = log.append(&idempotent(3, 0, -1, 1, false)).unwrap_err();
    assert!(matches!(kind(e), AppendErrorKind::InvalidSequence { .. }));
    // Followers are not validated.
    let mut b = seglog::BatchBuilder::new(log.log_end_offset()).producer(1, 2, 999);
    b.append(T0, None, Some(b"f"), &[]);
    log.append_as_follower(&b.build().unwrap()).unwrap();
    assert_eq!(log.producer_count(), 2);
}

#[test]
fn transactions_markers_txnindex_lso_and_read_committed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(1 << 20), &clock);
    log.set_high_watermark_policy(seglog::HighWatermarkPolicy::LogEnd)
        .unwrap();
    log.append(&idempotent(9, 0, 0, 2, false)).unwrap(); // 0..1 plain
    let t1 = log.append(&idempotent(1, 0, 0, 2, true)).unwrap(); // 2..3 txn A (aborted)
    let t2 = log.append(&idempotent(2, 0, 0, 2, true)).unwrap(); // 4..5 txn B (committed)
    assert_eq!(log.ongoing_transactions(), vec![(1, 2), (2, 4)]);
    assert_eq!(log.last_stable_offset(), t1.first_offset);
    // Read committed stops at the LSO.
    assert_eq!(values(&log, Isolation::ReadCommitted).len(), 2);
    // A non-transactional write during the transaction is refused.
    let e = log.append(&idempotent(1, 0, 2, 1, false)).unwrap_err();
    assert!(matches!(kind(e), AppendErrorKind::InvalidTxnState { .. }));
    let abort = log
        .write_txn_marker(1, 0, 5, TxnResult::Abort, None, Durability::PageCache)
        .unwrap();
    assert_eq!(abort.first_offset, 6);
    // The abort's entry: LSO = B's first offset.
    let segment0 = dir.path().join("00000000000000000000.txnindex");
    let bytes = std::fs::read(&segment0).unwrap();
    let entries = seglog::decode_txn_index(&bytes).unwrap();
    assert_eq!(
        entries,
        vec![seglog::AbortedTxn {
            producer_id: 1,
            first_offset: 2,
            last_offset: 6,
            last_stable_offset: t2.first_offset,
        }]
    );
    assert_eq!(log.last_stable_offset(), t2.first_offset);
    log.write_txn_marker(2, 0, 5, TxnResult::Commit, None, Durability::PageCache)
        .unwrap();
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
    assert_eq!(log.first_unstable_offset(), None);
    // An older coordinator epoch and an older producer epoch are fenced.
    let e = log
        .write_txn_marker(2, 0, 4, TxnResult::Commit, None, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(kind(e), AppendErrorKind::CoordinatorFenced { .. }));
    log.write_txn_marker(2, 1, 5, TxnResult::Abort, None, Durability::PageCache)
        .unwrap();
    let e = log.append(&idempotent(2, 0, 2, 1, false)).unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::InvalidProducerEpoch { .. }
    ));
    // read_committed drops the aborted records; read_uncommitted keeps them.
    assert_eq!(
        values(&log, Isolation::ReadCommitted),
        vec!["9-0-0", "9-0-1", "2-0-0", "2-0-1"]
    );
    assert_eq!(values(&log, Isolation::ReadUncommitted).len(), 6);
    let mut borrowed = Vec::new();
    ReaderOptions::new(0, Isolation::ReadCommitted)
        .reader(&log)
        .poll(|_, r| {
            borrowed.push(r.offset());
            Ok::<_, Error>(std::ops::ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(borrowed, vec![0, 1, 4, 5]);
    let fetched = log
        .read(0, 1 << 20, Isolation::ReadCommitted, true)
        .unwrap();
    assert_eq!(
        fetched.aborted_transactions,
        Some(vec![seglog::AbortedTransaction {
            producer_id: 1,
            first_offset: 2
        }])
    );
    assert!(
        log.read(0, 1 << 20, Isolation::ReadUncommitted, true)
            .unwrap()
            .aborted_transactions
            .is_none()
    );
    // Markers are refused for a negative producer id.
    let e = log
        .write_txn_marker(-1, 0, 0, TxnResult::Abort, None, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(kind(e), AppendErrorKind::InvalidMarker { .. }));
    log.close().unwrap();
}

/// The snapshots of a directory, as offset → entry set.
fn snapshot_sets(dir: &Path) -> Vec<(i64, BTreeSet<seglog::ProducerSnapshotEntry>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "snapshot"))
        .map(|p| {
            let offset: i64 = p.file_stem().unwrap().to_str().unwrap().parse().unwrap();
            let set = ProducerSnapshot::read(&p)
                .unwrap()
                .entries
                .into_iter()
                .collect();
            (offset, set)
        })
        .collect();
    out.sort_by_key(|(o, _)| *o);
    out
}

#[test]
fn snapshots_at_roll_and_close_loaded_at_open_and_rebuilt_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = small_config(600);
    let log = open(dir.path(), config.clone(), &clock);
    let mut seq = [0i32; 3];
    for i in 0..30 {
        let pid = (i % 3) as usize;
        log.append(&idempotent(pid as i64 + 100, 0, seq[pid], 2, false))
            .unwrap();
        seq[pid] += 2;
    }
    let rolls: Vec<i64> = log
        .segments()
        .iter()
        .skip(1)
        .map(|s| s.base_offset)
        .collect();
    assert!(rolls.len() >= 3, "{rolls:?}");
    assert_eq!(
        log.producer_snapshot_offsets(),
        rolls,
        "one snapshot per roll"
    );
    let states = log.producer_states();
    let end = log.log_end_offset();
    log.close().unwrap();
    drop(log);
    let snapshots = snapshot_sets(dir.path());
    assert_eq!(
        snapshots.last().unwrap().0,
        end,
        "close snapshots the log end"
    );
    assert_eq!(snapshots.last().unwrap().1.len(), 3);

    // Clean reopen: the latest snapshot, no replay.
    let log = open(dir.path(), config.clone(), &clock);
    assert_eq!(log.load_report().producers.snapshot_offset, Some(end));
    assert_eq!(log.load_report().producers.replayed, None);
    assert_eq!(
        log.producer_states()
            .iter()
            .map(|e| e.to_snapshot_entry())
            .collect::<Vec<_>>(),
        states
            .iter()
            .map(|e| e.to_snapshot_entry())
            .collect::<Vec<_>>()
    );
    // A retry still answers from the (one batch) state of the snapshot.
    let retry = log
        .append(&idempotent(100, 0, seq[0] - 2, 2, false))
        .unwrap();
    assert!(retry.duplicate);
    for _ in 0..4 {
        log.append(&idempotent(101, 0, seq[1], 2, false)).unwrap();
        seq[1] += 2;
    }
    let entries = |log: &Log| -> Vec<_> {
        log.producer_states()
            .iter()
            .map(|e| e.to_snapshot_entry())
            .collect()
    };
    let states = entries(&log);
    drop(log); // a crash

    // Corrupt the latest snapshot: reported, skipped, and the state rebuilt by replay.
    let latest = snapshot_sets(dir.path()).last().unwrap().0;
    let latest_path = dir.path().join(format!("{latest:020}.snapshot"));
    let mut bytes = std::fs::read(&latest_path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&latest_path, &bytes).unwrap();
    let log = open(dir.path(), config.clone(), &clock);
    let load = &log.load_report().producers;
    assert_eq!(load.corrupt_snapshots.len(), 1, "{load:?}");
    assert!(load.replayed.is_some());
    // The replay retains more batches than the state loaded from a one-batch snapshot; the
    // snapshot entries (last batch, epochs, transaction) are the same.
    assert_eq!(entries(&log), states);
    assert!(!latest_path.exists() || latest != log.log_end_offset());

    // Truncation drops the snapshots above and rebuilds the state.
    let cut = rolls[1] + 1;
    log.truncate_to(cut).unwrap();
    assert!(log.producer_snapshot_offsets().iter().all(|o| *o <= cut));
    let total: usize = log
        .producer_states()
        .iter()
        .map(|e| e.batches().len())
        .sum();
    assert!(total > 0);
    let e = log
        .append(&idempotent(100, 0, seq[0], 2, false))
        .unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::OutOfOrderSequence { .. }
    ));
    log.close().unwrap();
}

#[test]
fn the_clean_shutdown_shortcut_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = LogConfig {
        producer_id_expiration_ms: 1_000,
        ..small_config(1 << 20)
    };
    let log = open(dir.path(), config.clone(), &clock);
    log.append(&idempotent(5, 0, 0, 1, false)).unwrap();
    log.append(&idempotent(6, 0, 0, 1, true)).unwrap();
    log.close().unwrap();
    drop(log);
    // Without a snapshot after a clean shutdown, Kafka starts empty (the upgrade shortcut).
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "snapshot") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let log = open(dir.path(), config.clone(), &clock);
    assert!(log.load_report().producers.clean_shutdown_shortcut);
    assert_eq!(log.producer_count(), 0);
    log.append(&idempotent(5, 0, 7, 1, false)).unwrap();
    log.append(&idempotent(6, 0, 0, 1, true)).unwrap();
    let report = log.tick(T0 + 5_000).unwrap();
    // The producer with an open transaction stays.
    assert_eq!(report.expired_producers, 1);
    assert_eq!(log.producer_count(), 1);
    log.close().unwrap();
}

#[test]
fn recovery_rebuilds_the_txnindex_and_retention_deletes_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = small_config(700);
    let log = open(dir.path(), config.clone(), &clock);
    log.set_high_watermark_policy(seglog::HighWatermarkPolicy::LogEnd)
        .unwrap();
    let mut seq = 0;
    for round in 0..6i16 {
        log.append(&idempotent(1, 0, seq, 3, true)).unwrap();
        log.append(&idempotent(2, 0, i32::from(round), 1, false))
            .unwrap();
        seq += 3;
        let result = if round % 2 == 0 {
            TxnResult::Abort
        } else {
            TxnResult::Commit
        };
        log.write_txn_marker(1, 0, 0, result, None, Durability::PageCache)
            .unwrap();
    }
    let txnindexes = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "txnindex"))
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let written = txnindexes(dir.path());
    assert_eq!(written.iter().map(|(_, b)| b.len() / 34).sum::<usize>(), 3);
    let committed = values(&log, Isolation::ReadCommitted);
    log.close().unwrap();
    drop(log);
    for (path, _) in &written {
        std::fs::remove_file(path).unwrap();
    }
    let log = Log::open_with(
        dir.path(),
        config.clone(),
        LogOpenOptions {
            clock: clock.clone(),
            recover_all: true,
            ..LogOpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(txnindexes(dir.path()), written, "rebuilt as written");
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert_eq!(values(&log, Isolation::ReadCommitted), committed);
    // Retention deletes the snapshots of the segments it deletes.
    let first = log.segments()[1].base_offset;
    log.delete_records_before(first).unwrap();
    log.delete_old_segments().unwrap();
    assert!(log.producer_snapshot_offsets().iter().all(|o| *o >= first));
    log.close().unwrap();
}

/// The broker-made directories with producer state: a full recovery rebuilds every
/// `.txnindex` to the broker's bytes, and the snapshot at the log end holds the broker's
/// entries (as a set).
fn check_rebuilt_like_the_broker(dir: &Path) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join(dir.file_name().unwrap());
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, copy.join(p.file_name().unwrap())).unwrap();
        }
    }
    let broker_txn: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txnindex"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    let broker_snapshots = snapshot_sets(dir);
    let config = LogConfig {
        message_timestamp_after_max_ms: i64::MAX,
        producer_id_expiration_ms: i64::MAX,
        ..LogConfig::default()
    };
    let log = Log::open_with(
        &copy,
        config,
        LogOpenOptions {
            recover_all: true,
            ..LogOpenOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for (name, bytes) in &broker_txn {
        let ours = std::fs::read(copy.join(name)).unwrap_or_default();
        assert_eq!(&ours, bytes, "{}/{name}", dir.display());
    }
    let end = log.log_end_offset();
    if let Some((_, broker)) = broker_snapshots.iter().find(|(o, _)| *o == end) {
        let ours: BTreeSet<_> = log
            .producer_states()
            .iter()
            .map(|e| e.to_snapshot_entry())
            .collect();
        assert_eq!(&ours, broker, "{}: snapshot at {end}", dir.display());
    }
    broker_txn.len()
}

#[test]
fn kafka_4_4_fixtures_rebuild_the_brokers_txnindex_and_snapshot() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kafka-4.4");
    let mut txn_files = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if dir.is_dir() {
            txn_files += check_rebuilt_like_the_broker(&dir);
        }
    }
    assert!(txn_files >= 4, "{txn_files}");
}

#[test]
fn corpus_dirs_with_producer_state_rebuild_like_the_broker() {
    for dir in partition_dirs() {
        let has_state = std::fs::read_dir(&dir).unwrap().any(|e| {
            let p = e.unwrap().path();
            p.extension()
                .is_some_and(|x| x == "txnindex" || x == "snapshot")
        });
        if has_state {
            check_rebuilt_like_the_broker(&dir);
        }
    }
}

/// Issue #25 finding 5: a follower append of a non-transactional batch of a producer whose
/// transaction is open is refused as Kafka 4.4 refuses it for every origin
/// (`ProducerAppendInfo.appendDataBatch` raises `InvalidTxnStateException`); it was
/// accepted, leaving the open transaction holding a plain batch. Nothing is written.
#[test]
fn a_follower_batch_outside_an_open_transaction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(1 << 20), &clock);
    let follower = |base: i64, sequence: i32, txn: bool| {
        let mut b = BatchBuilder::new(base)
            .producer(5, 0, sequence)
            .transactional(txn);
        b.append(T0, None, Some(b"v"), &[]);
        b.build().unwrap().to_vec()
    };
    log.append_as_follower(&follower(0, 0, true)).unwrap();
    assert_eq!(log.ongoing_transactions(), vec![(5, 0)]);
    let end = log.log_end_offset();
    let e = log.append_as_follower(&follower(1, 1, false)).unwrap_err();
    assert!(
        matches!(
            kind(e),
            AppendErrorKind::InvalidTxnState {
                producer_id: 5,
                offset: 1
            }
        ),
        "refused like Kafka"
    );
    assert_eq!(log.log_end_offset(), end, "nothing written");
    assert_eq!(log.ongoing_transactions(), vec![(5, 0)]);
    // The transaction goes on as a transaction.
    log.append_as_follower(&follower(1, 1, true)).unwrap();
    assert_eq!(log.log_end_offset(), 2);
}

/// Issue #25 finding 2 (Kafka's KAFKA-12153): a truncation that removes a COMMIT reopens its
/// transaction. The lowered log end and high watermark and the rebuilt producer state are
/// published in one view, so a reader polling the last stable offset never sees one above the
/// reopened transaction's first offset. They were published apart: readers saw the high
/// watermark (here 2, the truncation offset) with the old, empty transaction list, and
/// `read_committed` served the reopened transaction.
#[test]
fn a_truncation_that_reopens_a_transaction_never_publishes_an_lso_above_it() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(1 << 20), &clock);
    log.set_high_watermark_policy(seglog::HighWatermarkPolicy::LogEnd)
        .unwrap();
    // Transaction of producer 3 at 0..1, its COMMIT at 2, then producer 9's batch at 3.
    log.append(&idempotent(3, 0, 0, 2, true)).unwrap();
    let commit_then_plain = || {
        let marker = log
            .write_txn_marker(3, 0, 0, TxnResult::Commit, None, Durability::PageCache)
            .unwrap();
        assert_eq!(marker.first_offset, 2);
        assert_eq!(log.last_stable_offset(), 3);
        // Another producer's batch: its append drops the completed transaction, whose marker
        // lies below the high watermark (Kafka's `onHighWatermarkUpdated`).
        assert_eq!(
            log.append(&idempotent(9, 0, 0, 1, false))
                .unwrap()
                .first_offset,
            3
        );
        assert_eq!(log.last_stable_offset(), 4);
    };
    commit_then_plain();
    let done = AtomicBool::new(false);
    let iterations = 200;
    let seen = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut seen = BTreeSet::new();
            while !done.load(Ordering::Acquire) {
                seen.insert(log.last_stable_offset());
            }
            seen
        });
        for _ in 0..iterations {
            // The COMMIT goes: the transaction at 0 is open again (LSO 0).
            log.truncate_to(2).unwrap();
            assert_eq!(log.last_stable_offset(), 0);
            // And is committed again.
            commit_then_plain();
        }
        done.store(true, Ordering::Release);
        reader.join().unwrap()
    });
    assert_eq!(
        seen,
        BTreeSet::from([0, 3, 4]),
        "a reader saw an LSO above the open transaction's first offset 0"
    );
}

/// Found by the differential histories (issue #25, `cargo xtask kafka diff`, CI seeds 21 and
/// 54): DeleteRecords moved the log start past a producer's only batch, then a crash with the
/// recovery point below it. Kafka's `LogLoader` recovers that segment whole
/// (`LogSegment.recover` puts every batch of it into the producer state, also those below the
/// log start), so the producer and its open transaction survive, as they survive a clean
/// reopen (the snapshot holds them); seglog replayed the recovered segment from the log start
/// only and forgot both (and with the transaction, the LSO: read_committed then served
/// records after data of a transaction still open).
#[test]
fn a_crash_keeps_producers_whose_batches_lie_below_the_log_start_in_a_recovered_segment() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("t-0");
    let clock = clock();
    let config = small_config(1 << 20);
    let log = open(&dir, config.clone(), &clock);
    // Producer 7's transaction (offset 0, open), producer 8's idempotent batch (1..=2), then
    // plain records.
    log.append(&idempotent(7, 0, 0, 1, true)).unwrap();
    log.append(&idempotent(8, 0, 0, 2, false)).unwrap();
    log.append(&crate::support::batch(T0, &[b"a", b"b"]))
        .unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert_eq!(log.delete_records_before(3).unwrap(), 3);
    let before: Vec<_> = log
        .producer_states()
        .iter()
        .map(|e| e.to_snapshot_entry())
        .collect();
    assert_eq!(before.len(), 2);
    assert_eq!(log.first_unstable_offset(), Some(3));
    drop(log); // a crash: no clean-shutdown marker, no snapshot
    // The log start checkpointed after the DeleteRecords, the recovery point before it (a
    // broker writes each every 60 s, on its own schedule).
    std::fs::write(dir.join("log-start-offset-checkpoint"), "0\n1\nt 0 3\n").unwrap();
    std::fs::write(
        dir.join("recovery-point-offset-checkpoint"),
        "0\n1\nt 0 0\n",
    )
    .unwrap();
    let log = open(&dir, config, &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(log.log_start_offset(), 3);
    let after: Vec<_> = log
        .producer_states()
        .iter()
        .map(|e| e.to_snapshot_entry())
        .collect();
    assert_eq!(after, before, "the recovered segment's producers survive");
    assert_eq!(
        log.first_unstable_offset(),
        Some(3),
        "the open transaction too"
    );
}

/// Kafka 4.4's `LogLoader.recoverSegment` recovers each unflushed segment on a producer state
/// of its own, rebuilt from the snapshot the previous segment's recovery took
/// (`loadFromSnapshot`, which drops the producers expired by now), so a producer idle past
/// `producer.id.expiration.ms` at a segment's end is forgotten there even when a later batch
/// of it refreshed it. Here producer 7's batch (offset 0) is two days old at the roll's
/// snapshot; its COMMIT marker (no transaction open) at 1 refreshes it. A clean reopen keeps
/// its last sequence (the close's snapshot holds the refreshed entry); after a crash with the
/// recovery point at 0, Kafka's state is the marker's bare entry: the epoch, no sequence, no
/// batch (`interop/diff/histories/crash-recovered-segment-drops-expired-producer-seed3046.jsonl`;
/// seglog replayed both segments in one pass and kept sequence 0 at offset 0).
#[test]
fn a_crash_recovers_each_segment_from_a_snapshot_that_drops_the_producers_expired_there() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("t-0");
    let clock = clock();
    let config = small_config(1 << 20);
    let log = open(&dir, config.clone(), &clock);
    log.append(&idempotent(7, 0, 0, 1, false)).unwrap();
    log.roll().unwrap();
    clock.advance(2 * 24 * 3_600_000);
    let marker = log
        .write_txn_marker(7, 0, 0, TxnResult::Commit, None, Durability::PageCache)
        .unwrap();
    assert_eq!(marker.first_offset, 1);
    let live = log.producer_state(7).unwrap();
    assert_eq!((live.last_sequence(), live.last_data_offset()), (0, 0));
    drop(log); // a crash: no clean-shutdown marker, no snapshot at the log end
    std::fs::write(
        dir.join("recovery-point-offset-checkpoint"),
        "0\n1\nt 0 0\n",
    )
    .unwrap();
    let log = open(&dir, config.clone(), &clock);
    assert!(!log.load_report().had_clean_shutdown);
    let recovered = log.producer_state(7).expect("the marker's entry");
    assert_eq!(recovered.producer_epoch, 0);
    assert_eq!(
        (
            recovered.last_sequence(),
            recovered.last_data_offset(),
            recovered.batches().len()
        ),
        (-1, -1, 0),
        "segment 1 was recovered on the snapshot at 1, which no longer holds producer 7"
    );
    // What the recovery left is what the next open serves: the close's snapshot holds it.
    log.close().unwrap();
    drop(log);
    let log = open(&dir, config, &clock);
    assert!(log.load_report().had_clean_shutdown);
    assert_eq!(log.producer_state(7).unwrap().last_sequence(), -1);
}

/// After a crash, Kafka 4.4 knows each producer's last batch only: every recovered segment's
/// recovery ends with a snapshot (one batch per producer), and the next segment's recovery and
/// the load's final rebuild start from it (`LogLoader.recoverSegment`, `truncateAndReload`).
/// So a retry of an earlier batch is out of order there, and a batch whose sequences follow
/// the last one is appended even when they equal an earlier batch's (a follower batch reset
/// the sequence: seed 205065 of the second long run, seglog answered such an append as a
/// duplicate of offsets 1-4, Kafka appended it at 24;
/// `interop/diff/histories/crash-forgets-all-but-the-last-batch-seed205065.jsonl`).
#[test]
fn a_crash_leaves_each_producer_its_last_batch_only_as_kafkas_snapshot_does() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("t-0");
    let clock = clock();
    let config = small_config(1 << 20);
    let log = open(&dir, config.clone(), &clock);
    for sequence in 0..3 {
        log.append(&idempotent(7, 0, sequence, 1, false)).unwrap();
    }
    assert!(
        log.append(&idempotent(7, 0, 0, 1, false))
            .unwrap()
            .duplicate
    );
    drop(log); // a crash: no clean-shutdown marker, no snapshot at the log end
    std::fs::write(
        dir.join("recovery-point-offset-checkpoint"),
        "0\n1\nt 0 0\n",
    )
    .unwrap();
    let log = open(&dir, config, &clock);
    assert!(!log.load_report().had_clean_shutdown);
    let recovered = log.producer_state(7).unwrap();
    assert_eq!(
        (
            recovered.last_sequence(),
            recovered.last_data_offset(),
            recovered.batches().len()
        ),
        (2, 2, 1)
    );
    let e = log.append(&idempotent(7, 0, 0, 1, false)).unwrap_err();
    assert!(matches!(
        kind(e),
        AppendErrorKind::OutOfOrderSequence {
            sequence: 0,
            last_sequence: 2,
            ..
        }
    ));
    let retry = log.append(&idempotent(7, 0, 2, 1, false)).unwrap();
    assert!(retry.duplicate, "the last batch is still known");
    assert_eq!(retry.first_offset, 2);
    assert_eq!(log.log_end_offset(), 3);
}

/// The same history without the crash: the clean close's snapshot holds the refreshed
/// producer, so a reopen keeps its last sequence (the crash test above differs only in the
/// recovery).
#[test]
fn a_clean_reopen_keeps_a_producer_a_later_marker_refreshed() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("t-0");
    let clock = clock();
    let config = small_config(1 << 20);
    let log = open(&dir, config.clone(), &clock);
    log.append(&idempotent(7, 0, 0, 1, false)).unwrap();
    log.roll().unwrap();
    clock.advance(2 * 24 * 3_600_000);
    log.write_txn_marker(7, 0, 0, TxnResult::Commit, None, Durability::PageCache)
        .unwrap();
    log.close().unwrap();
    drop(log);
    let log = open(&dir, config, &clock);
    let entry = log.producer_state(7).unwrap();
    assert_eq!((entry.last_sequence(), entry.last_data_offset()), (0, 0));
}

/// A log whose producers all expired after producer 3's transaction at 0..1 was committed
/// (marker at 2) and producer 9 wrote at 3, high watermark 4, `producer.id.expiration.ms` 1 s:
/// the state is empty (no producer, no unreplicated transaction) before the truncation.
fn all_producers_expired_after_a_commit(
    dir: &Path,
    clock: &std::sync::Arc<seglog::ManualClock>,
) -> Log {
    let config = LogConfig {
        producer_id_expiration_ms: 1_000,
        ..small_config(1 << 20)
    };
    let log = open(dir, config, clock);
    log.append(&idempotent(3, 0, 0, 2, true)).unwrap();
    log.write_txn_marker(3, 0, 0, TxnResult::Commit, None, Durability::PageCache)
        .unwrap();
    log.set_high_watermark(3).unwrap();
    // Its append drops the committed transaction (marker below the high watermark) from the
    // unreplicated ones, as Kafka's `onHighWatermarkUpdated` does.
    log.append(&idempotent(9, 0, 0, 1, false)).unwrap();
    log.set_high_watermark(4).unwrap();
    assert_eq!(log.tick(T0 + 5_000).unwrap().expired_producers, 2);
    assert_eq!(log.producer_count(), 0);
    log
}

/// Differential histories (issue #25, old long-run seed 105013: `state.last_stable` after a
/// truncation, seglog 2, Kafka 29): Kafka's `rebuildProducerState` skips the replay when its
/// producer state is empty before the truncation (`isEmptyBeforeTruncation`), which producer
/// expiry makes it. seglog copied that shortcut: a truncation that removed the COMMIT marker of
/// a transaction whose producer had expired did not replay the transaction, so it was not open
/// again, the LSO was the high watermark, and read_committed served the records of a
/// transaction no marker ends. seglog now always replays from the snapshot. Checked: fails on
/// the code before the fix (LSO 2, both records served).
#[test]
fn a_truncation_after_producer_expiry_reopens_the_transaction_whose_marker_it_removed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = all_producers_expired_after_a_commit(dir.path(), &clock);
    log.truncate_to(2).unwrap();
    assert_eq!(log.first_unstable_offset(), Some(0));
    assert_eq!(log.last_stable_offset(), 0);
    assert!(values(&log, Isolation::ReadCommitted).is_empty());
    assert_eq!(
        log.producer_state(3).unwrap().current_txn_first_offset,
        Some(0)
    );
}

/// The other side of the same shortcut (second long run, seed 207103: `state.first_unstable`
/// after a truncation, seglog none, Kafka 19): the snapshot the truncation reloads (at a roll
/// inside the transaction) holds the transaction open, and a marker after it decided it. Kafka
/// loads the snapshot and, its state empty before, replays nothing: the aborted transaction is
/// open again and the LSO stays at its first offset for good. seglog replays the marker.
/// Checked: fails on the code before the fix (first unstable offset 0).
#[test]
fn a_truncation_after_producer_expiry_keeps_a_decision_made_after_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = LogConfig {
        producer_id_expiration_ms: 1_000,
        ..small_config(1 << 20)
    };
    let log = open(dir.path(), config, &clock);
    log.append(&idempotent(3, 0, 0, 2, true)).unwrap();
    // The snapshot at 2 holds producer 3's open transaction.
    log.roll().unwrap();
    log.write_txn_marker(3, 0, 0, TxnResult::Abort, None, Durability::PageCache)
        .unwrap();
    log.set_high_watermark(3).unwrap();
    log.append(&idempotent(9, 0, 0, 1, false)).unwrap();
    log.append(&crate::support::batch(T0, &[b"a", b"b", b"c"]))
        .unwrap();
    log.set_high_watermark(7).unwrap();
    assert_eq!(log.tick(T0 + 5_000).unwrap().expired_producers, 2);
    assert_eq!(log.producer_count(), 0);
    log.truncate_to(4).unwrap();
    assert_eq!(log.first_unstable_offset(), None);
    assert_eq!(log.last_stable_offset(), 4);
    // The aborted records are skipped, producer 9's is served.
    assert_eq!(values(&log, Isolation::ReadCommitted), ["9-0-0"]);
    assert_eq!(
        log.producer_state(3).unwrap().current_txn_first_offset,
        None
    );
}
