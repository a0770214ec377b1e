//! Atomic commits across partitions: a crash at every point of a 3-partition commit (before
//! its decision record is durable, between every two markers, before the record's removal)
//! ends, after `TransactionalProducer::init`, with the same outcome on every partition;
//! read_committed shows the transaction wholly or not at all. A corrupt or hostile decision
//! record fails `init` with a typed error and aborts nothing. One test kills a child process
//! at random points of a loop of commits.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use seglog::{
    Durability, Error, Isolation, LogDir, ReaderOptions, TopicPartition, TransactionalProducer,
    TxnDecision, TxnDecisionProblem,
};
use seglog_faults::{FaultInjector, FaultKind};

use crate::support::{
    open_txn_dir as open_dir, open_txn_dir_with as open_dir_with, txn_records as records,
};

fn committed(log_dir: &LogDir, tp: &TopicPartition) -> Vec<String> {
    let log = log_dir.log(tp).unwrap();
    ReaderOptions::new(log.log_start_offset(), Isolation::ReadCommitted)
        .owned_reader(&log)
        .until_caught_up()
        .map(|r| String::from_utf8(r.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

fn partitions() -> Vec<TopicPartition> {
    (0..3).map(|p| TopicPartition::new("orders", p)).collect()
}

const PID: i64 = 61;

/// Commits "before" on the 3 partitions, then sends "txn-a", "txn-b" (two batches on
/// partition 1) and arms `arm` just before committing them: the commit fails where the fault
/// hits, and the process "dies" (nothing is closed or dropped in order; the producer's
/// pending end is never retried).
fn crash_during_commit(
    root: &Path,
    durability: Durability,
    arm: impl FnOnce(&FaultInjector),
) -> FaultInjector {
    let faults = FaultInjector::new(root);
    let log_dir = open_dir_with(root, faults.io());
    let tps = partitions();
    let mut producer = TransactionalProducer::init(&log_dir, PID, 0).unwrap();
    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, records(&["before"])).unwrap();
    }
    txn.commit(durability).unwrap();
    let mut txn = producer.begin().unwrap();
    for tp in &tps {
        txn.send(tp, records(&["txn-a"])).unwrap();
    }
    txn.send(&tps[1], records(&["txn-b"])).unwrap();
    arm(&faults);
    assert!(txn.commit(durability).is_err());
    drop(producer);
    drop(log_dir);
    faults
}

/// After the crash: the fencing producer's `init`, then the same outcome everywhere.
fn assert_one_outcome(root: &Path, committed_expected: bool) {
    let log_dir = open_dir(root);
    let tps = partitions();
    TransactionalProducer::init(&log_dir, PID, 1).unwrap();
    assert!(!TxnDecision::path(root, PID).exists());
    for tp in &tps {
        let log = log_dir.log(tp).unwrap();
        assert!(log.ongoing_transactions().is_empty(), "{tp}");
        assert_eq!(log.last_stable_offset(), log.log_end_offset(), "{tp}");
        let mut expected = vec!["before"];
        if committed_expected {
            expected.push("txn-a");
            if tp.partition == 1 {
                expected.push("txn-b");
            }
        }
        assert_eq!(committed(&log_dir, tp), expected, "{tp}");
        let aborted = log.aborted_transactions(0, log.log_end_offset()).unwrap();
        assert_eq!(aborted.is_empty(), committed_expected, "{tp}: {aborted:?}");
    }
    // A second init finds nothing left to do.
    drop(log_dir);
    let log_dir = open_dir(root);
    TransactionalProducer::init(&log_dir, PID, 2).unwrap();
    for tp in &tps {
        assert_eq!(
            committed(&log_dir, tp).len(),
            if committed_expected {
                2 + usize::from(tp.partition == 1)
            } else {
                1
            },
            "{tp}"
        );
    }
}

#[test]
fn a_successful_commit_writes_the_decision_then_three_markers_then_removes_it() {
    for durability in [Durability::PageCache, Durability::Fsync] {
        commit_counts(durability);
    }
}

fn commit_counts(durability: Durability) {
    // The counts the kill points below rely on: one directory fsync for the record, one
    // `.log` write per marker, one directory fsync for the removal.
    let root = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new(root.path());
    let log_dir = open_dir_with(root.path(), faults.io());
    let mut producer = TransactionalProducer::init(&log_dir, PID, 0).unwrap();
    // A first transaction creates the partitions (and syncs their directories).
    for value in ["first", "a"] {
        let mut txn = producer.begin().unwrap();
        for tp in &partitions() {
            txn.send(tp, records(&[value])).unwrap();
        }
        if value == "first" {
            txn.commit(Durability::Fsync).unwrap();
            continue;
        }
        let (writes, syncs, dir_syncs) = (faults.writes(), faults.syncs(), faults.dir_syncs());
        txn.commit(durability).unwrap();
        // At fsync durability each partition's data is synced before the record, and each
        // marker after it.
        let log_syncs = if matches!(durability, Durability::Fsync) {
            6
        } else {
            0
        };
        assert_eq!(
            (
                faults.writes() - writes,
                faults.syncs() - syncs,
                faults.dir_syncs() - dir_syncs
            ),
            (3, log_syncs, 2),
            "{durability:?}"
        );
    }
    assert!(!TxnDecision::path(root.path(), PID).exists());
    // One partition: its marker is atomic by itself, no record (no extra fsync).
    let mut txn = producer.begin().unwrap();
    txn.send(&partitions()[0], records(&["b"])).unwrap();
    let dir_syncs = faults.dir_syncs();
    txn.commit(durability).unwrap();
    assert_eq!(faults.dir_syncs(), dir_syncs);
}

#[test]
fn a_crash_between_any_two_markers_ends_committed_on_every_partition() {
    for durability in [Durability::PageCache, Durability::Fsync] {
        // The fault hits marker `marker` (1-based): the ones before it are written.
        for marker in 1..=3u64 {
            let root = tempfile::tempdir().unwrap();
            crash_during_commit(root.path(), durability, |faults| {
                faults.fail_nth_write(marker, FaultKind::Enospc);
            });
            let decision = TxnDecision::read(root.path(), PID).unwrap().unwrap();
            assert_eq!(decision.partitions.len(), 3, "{durability:?} {marker}");
            assert_one_outcome(root.path(), true);
        }
        // Every marker written, the record's removal not durable (its directory fsync fails):
        // the commit is complete, and an init after the crash changes nothing.
        let root = tempfile::tempdir().unwrap();
        crash_during_commit(root.path(), durability, |faults| {
            faults.fail_nth_dir_sync(2, FaultKind::Eio);
        });
        assert_one_outcome(root.path(), true);
    }
}

#[test]
fn a_power_loss_mid_commit_at_fsync_durability_ends_committed_on_every_partition() {
    // The second marker fails; then a power loss: every `.log` goes back to its last fsync.
    let root = tempfile::tempdir().unwrap();
    let faults = crash_during_commit(root.path(), Durability::Fsync, |faults| {
        faults.fail_nth_write(2, FaultKind::Eio);
    });
    for (path, durable) in faults.durable_images() {
        std::fs::write(path, durable).unwrap();
    }
    // The record was fsynced with its directory before the first marker: it survives, and
    // so does every partition's data, synced before it.
    assert!(TxnDecision::path(root.path(), PID).exists());
    assert_one_outcome(root.path(), true);
}

#[test]
fn a_crash_before_the_decision_is_written_aborts_on_every_partition() {
    let root = tempfile::tempdir().unwrap();
    // The record's temp file cannot be created: no record, no marker.
    crash_during_commit(root.path(), Durability::PageCache, |_| {
        let tmp = root
            .path()
            .join(format!("{}.tmp", TxnDecision::file_name(PID)));
        std::fs::create_dir(tmp).unwrap();
    });
    assert!(!TxnDecision::path(root.path(), PID).exists());
    std::fs::remove_dir(
        root.path()
            .join(format!("{}.tmp", TxnDecision::file_name(PID))),
    )
    .unwrap();
    assert_one_outcome(root.path(), false);

    // The record was renamed in place but its directory fsync failed; a power loss then
    // loses it (as the fault injector's durable listing says): aborted everywhere. Had the
    // process only crashed, the record would be there and the commit completed (above).
    let root = tempfile::tempdir().unwrap();
    let mut listing = None;
    crash_during_commit(root.path(), Durability::Fsync, |faults| {
        faults.fail_nth_dir_sync(1, FaultKind::Eio);
        listing = Some(faults.clone());
    });
    let durable = listing.unwrap().durable_names(root.path()).unwrap();
    assert!(!durable.contains(&TxnDecision::file_name(PID)));
    std::fs::remove_file(TxnDecision::path(root.path(), PID)).unwrap();
    assert_one_outcome(root.path(), false);
}

#[test]
fn a_stale_decision_of_a_completed_commit_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    let stale;
    {
        let log_dir = open_dir(root.path());
        let mut producer = TransactionalProducer::init(&log_dir, PID, 0).unwrap();
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&["one"])).unwrap();
        }
        let first_offsets: Vec<(TopicPartition, i64)> =
            tps.iter().map(|tp| (tp.clone(), 0)).collect();
        txn.commit(Durability::Fsync).unwrap();
        // As if its removal were lost: the record of the completed commit is back.
        stale = TxnDecision {
            producer_id: PID,
            producer_epoch: 0,
            marker_epoch: 0,
            coordinator_epoch: 0,
            result: seglog::TxnResult::Commit,
            transaction_version: seglog::TransactionVersion::V0,
            partitions: first_offsets,
        };
        // A later transaction is open when the process dies: it is not the decided one.
        let mut txn = producer.begin().unwrap();
        for tp in &tps {
            txn.send(tp, records(&["two"])).unwrap();
        }
        std::mem::forget(txn);
        std::mem::forget(producer);
        log_dir.close().unwrap();
    }
    std::fs::write(TxnDecision::path(root.path(), PID), stale.encode()).unwrap();
    let log_dir = open_dir(root.path());
    TransactionalProducer::init(&log_dir, PID, 1).unwrap();
    assert!(!TxnDecision::path(root.path(), PID).exists());
    for tp in &tps {
        assert_eq!(committed(&log_dir, tp), ["one"], "{tp}");
        assert!(log_dir.log(tp).unwrap().ongoing_transactions().is_empty());
    }
}

#[test]
fn a_corrupt_or_hostile_decision_fails_init_and_aborts_nothing() {
    let root = tempfile::tempdir().unwrap();
    crash_during_commit(root.path(), Durability::PageCache, |faults| {
        faults.fail_nth_write(2, FaultKind::Eio);
    });
    let path = TxnDecision::path(root.path(), PID);
    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    let mut other = TxnDecision::decode(&good).unwrap();
    other.producer_id = PID + 1;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("flipped byte", flipped),
        ("truncated", good[..good.len() - 3].to_vec()),
        ("empty", Vec::new()),
        ("another producer's", other.encode()),
    ];
    let tps = partitions();
    for (name, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let log_dir = open_dir(root.path());
        let err = TransactionalProducer::init(&log_dir, PID, 1).unwrap_err();
        let Error::CorruptTxnDecision {
            path: named,
            position,
            problem,
        } = &err
        else {
            panic!("{name}: {err}");
        };
        assert_eq!(named, &path, "{name}");
        match name {
            "flipped byte" => {
                assert!(matches!(problem, TxnDecisionProblem::CrcMismatch { .. }) && *position == 2)
            }
            "another producer's" => {
                assert!(matches!(problem, TxnDecisionProblem::OtherProducer { .. }))
            }
            // The CRC covers the entries: a cut one fails it.
            "truncated" => assert!(matches!(problem, TxnDecisionProblem::CrcMismatch { .. })),
            _ => assert!(matches!(problem, TxnDecisionProblem::Truncated { .. }) && *position == 0),
        }
        assert!(err.to_string().contains("seglog-txn-decision-61"), "{err}");
        // Nothing was aborted: the partitions the crash left open are still open.
        for tp in &tps[1..] {
            assert_eq!(log_dir.log(tp).unwrap().ongoing_transactions().len(), 1);
        }
    }
    // A FIFO at the name is refused without blocking.
    std::fs::remove_file(&path).unwrap();
    let made = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success(), "mkfifo");
    let log_dir = open_dir(root.path());
    let err = TransactionalProducer::init(&log_dir, PID, 1).unwrap_err();
    assert!(
        matches!(&err, Error::Io { path: p, .. } if p == &path),
        "{err}"
    );
    drop(log_dir);
    // Repaired (the good bytes back): the commit completes.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &good).unwrap();
    let log_dir = open_dir(root.path());
    TransactionalProducer::init(&log_dir, PID, 1).unwrap();
    for tp in &tps {
        assert!(
            committed(&log_dir, tp).contains(&"txn-a".to_owned()),
            "{tp}"
        );
    }
}

const CHILD: &str = "SEGLOG_TXN_ATOMIC_CHILD";

/// The child: 3-partition transactions in a loop, each writing `txn-<n>` on every partition,
/// committed at page-cache durability, until it is killed.
fn commit_forever(root: &Path) {
    let log_dir = open_dir(root);
    let tps = partitions();
    let epoch: i16 = std::env::var("SEGLOG_TXN_ATOMIC_EPOCH")
        .unwrap()
        .parse()
        .unwrap();
    let mut producer = TransactionalProducer::init(&log_dir, PID, epoch).unwrap();
    println!("ready");
    for n in 0.. {
        let mut txn = producer.begin().unwrap();
        let value = format!("txn-{epoch}-{n}");
        for tp in &tps {
            txn.send(tp, records(&[&value])).unwrap();
        }
        txn.commit(Durability::PageCache).unwrap();
    }
}

#[test]
fn killed_children_leave_every_transaction_whole() {
    if let Some(root) = std::env::var_os(CHILD) {
        commit_forever(Path::new(&root));
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let tps = partitions();
    for (round, delay_ms) in [60u64, 150, 20, 250, 100, 330, 45, 200]
        .into_iter()
        .enumerate()
    {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "txn_atomic::killed_children_leave_every_transaction_whole",
                "--exact",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD, root.path())
            .env("SEGLOG_TXN_ATOMIC_EPOCH", (round * 2).to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        // The test harness prints its own lines first.
        let mut line = String::new();
        while !line.contains("ready") {
            line.clear();
            let read = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
            assert!(read > 0, "the child ended before it was ready");
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        // Killed mid-loop, not ended by a failure of its own.
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "round {round}: {status}"
        );

        // The fencing producer at the next epoch completes or aborts what the kill cut.
        let log_dir = open_dir(root.path());
        let mid_commit = TxnDecision::path(root.path(), PID).exists();
        TransactionalProducer::init(&log_dir, PID, (round * 2 + 1) as i16).unwrap();
        // A partition the first transaction had not reached yet does not exist.
        let seen: Vec<Vec<String>> = tps
            .iter()
            .map(|tp| match log_dir.log(tp) {
                Some(_) => committed(&log_dir, tp),
                None => Vec::new(),
            })
            .collect();
        assert_eq!(seen[0], seen[1], "round {round}");
        assert_eq!(seen[0], seen[2], "round {round}");
        for log in log_dir.logs().iter().map(|(_, log)| log) {
            assert!(log.ongoing_transactions().is_empty());
        }
        assert!(!TxnDecision::path(root.path(), PID).exists());
        eprintln!(
            "round {round}: {} transactions whole, killed mid-commit: {mid_commit}",
            seen[0].len()
        );
    }
}
