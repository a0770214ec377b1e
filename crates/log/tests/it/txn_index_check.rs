//! The first-use check of `.txnindex` (issue #26 item 5): after a clean shutdown a missing,
//! empty, truncated, garbage, wrong-producer or otherwise wrong index is checked against the
//! segment's ABORT markers when `read_committed` first uses it, and rebuilt from them (on
//! disk by a read-write log, in memory by a read-only one), so the reader gets exactly the
//! committed records; `read_uncommitted` never touches the file.

use std::path::Path;

use seglog::{BatchBuilder, Durability, Isolation, Log, LogConfig, LogOpenOptions, TxnResult};

use crate::support::T0;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

fn open(dir: &Path) -> Log {
    open_as(dir, false)
}

fn open_as(dir: &Path, read_only: bool) -> Log {
    Log::open_with(
        dir,
        config(),
        LogOpenOptions {
            read_only,
            clock: crate::support::clock(),
            high_watermark: seglog::HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

fn data(log: &Log, producer: Option<(i64, i32)>, values: &[&str]) {
    let mut builder = BatchBuilder::new(0);
    if let Some((producer_id, sequence)) = producer {
        builder = builder
            .producer(producer_id, 0, sequence)
            .transactional(true);
    }
    for value in values {
        builder.append(T0, None, Some(value.as_bytes()), &[]);
    }
    log.append(&builder.build().unwrap()).unwrap();
}

fn marker(log: &Log, producer_id: i64, result: TxnResult) {
    log.write_txn_marker(producer_id, 0, 0, result, None, Durability::PageCache)
        .unwrap();
}

/// Three segments: producer 8's aborted transaction starts in segment 0 and ends in segment
/// 1 (its entry lies in segment 1, its first offset in segment 0), producer 9 commits one
/// and aborts one in segment 1, producer 8 aborts again in segment 2 while 9's transaction
/// is open.
fn write(dir: &Path) {
    let log = open(dir);
    data(&log, None, &["plain-0"]);
    data(&log, Some((8, 0)), &["aborted-8a", "aborted-8b"]);
    log.roll().unwrap();
    data(&log, Some((9, 0)), &["committed-9a"]);
    marker(&log, 9, TxnResult::Commit);
    marker(&log, 8, TxnResult::Abort);
    data(&log, None, &["plain-1"]);
    data(&log, Some((9, 1)), &["aborted-9"]);
    marker(&log, 9, TxnResult::Abort);
    log.roll().unwrap();
    data(&log, Some((9, 2)), &["committed-9b"]);
    data(&log, Some((8, 2)), &["aborted-8c"]);
    marker(&log, 8, TxnResult::Abort);
    marker(&log, 9, TxnResult::Commit);
    data(&log, None, &["plain-2"]);
    log.close().unwrap();
}

fn committed(log: &Log) -> Vec<String> {
    log.owned_reader(0, Isolation::ReadCommitted)
        .until_caught_up()
        .map(|f| String::from_utf8(f.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

const WANT: [&str; 5] = [
    "plain-0",
    "committed-9a",
    "plain-1",
    "committed-9b",
    "plain-2",
];

fn txn_index(dir: &Path, segment: usize) -> std::path::PathBuf {
    let mut bases: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    bases.sort();
    bases[segment].with_extension("txnindex")
}

fn entry(producer_id: i64, first: i64, last: i64, lso: i64) -> Vec<u8> {
    let mut out = vec![0u8, 0];
    for v in [producer_id, first, last, lso] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

fn copy(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_wrong_txn_index_is_rebuilt_at_first_use_and_read_committed_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t-0");
    write(&base);
    let log = open(&base);
    assert_eq!(committed(&log), WANT);
    log.close().unwrap();
    let good: Vec<Vec<u8>> = (0..3)
        .map(|s| std::fs::read(txn_index(&base, s)).unwrap_or_default())
        .collect();
    // Segment 1: 8's entry (first offset 1 in segment 0), then 9's.
    assert_eq!(good[0], b"");
    assert_eq!(&good[1][..34], &entry(8, 1, 5, 6)[..]);
    assert_eq!(good[1].len(), 68);
    let wrong_producer = [entry(7, 1, 5, 6), good[1][34..].to_vec()].concat();
    let later_first = [entry(8, 3, 5, 6), good[1][34..].to_vec()].concat();
    let cases: [(&str, usize, Option<Vec<u8>>); 9] = [
        ("missing", 1, None),
        ("empty", 1, Some(Vec::new())),
        ("truncated", 1, Some(good[1][..50].to_vec())),
        ("one entry lost", 1, Some(good[1][..34].to_vec())),
        ("wrong producer", 1, Some(wrong_producer)),
        ("first offset after the transaction's", 1, Some(later_first)),
        ("garbage", 2, Some(vec![0xa5; 34])),
        ("an entry where no marker is", 0, Some(entry(8, 0, 1, 2))),
        // Inside the structural bound (`i32::MAX` above the base), beyond the segment: it
        // hid producer 9's committed-9a (found by the txn_index fuzz target).
        ("an entry beyond the segment", 0, Some(entry(9, 0, 1000, 4))),
    ];
    for (what, segment, bytes) in cases {
        for read_only in [false, true] {
            let dir = tmp.path().join("case-0");
            copy(&base, &dir);
            assert!(dir.join(".kafka_cleanshutdown").exists());
            let path = txn_index(&dir, segment);
            match &bytes {
                Some(bytes) => std::fs::write(&path, bytes).unwrap(),
                None => std::fs::remove_file(&path).unwrap(),
            }
            let log = open_as(&dir, read_only);
            assert_eq!(committed(&log), WANT, "{what}, read-only {read_only}");
            if !read_only {
                log.close().unwrap();
            }
            drop(log);
            let on_disk = std::fs::read(&path).ok();
            if read_only {
                assert_eq!(on_disk, bytes, "{what}: a read-only open wrote");
            } else {
                let want = Some(good[segment].clone()).filter(|g| !g.is_empty() || bytes.is_some());
                assert_eq!(on_disk, want, "{what}: not rebuilt on disk");
            }
            // Every .log byte is still there.
            for s in 0..3 {
                let log_file = txn_index(&dir, s).with_extension("log");
                let was = txn_index(&base, s).with_extension("log");
                assert_eq!(
                    std::fs::read(log_file).unwrap(),
                    std::fs::read(was).unwrap()
                );
            }
        }
    }
}

#[test]
fn read_uncommitted_never_opens_the_txn_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    write(&dir);
    // A FIFO would block (or fail) any open of it: read_uncommitted never gets there.
    let path = txn_index(&dir, 1);
    std::fs::remove_file(&path).unwrap();
    let ok = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
    let log = open_as(&dir, true);
    let all: Vec<_> = log
        .owned_reader(0, Isolation::ReadUncommitted)
        .until_caught_up()
        .map(|f| f.unwrap().record.offset)
        .collect();
    assert_eq!(all.len(), 9);
    // read_committed does, and fails with a typed error naming it (never a hang).
    let err = log
        .owned_reader(0, Isolation::ReadCommitted)
        .until_caught_up()
        .find_map(Result::err)
        .expect("a FIFO .txnindex served");
    assert!(
        err.to_string().contains("00000000000000000003.txnindex"),
        "{err}"
    );
}

fn committed_from_log_start(log: &Log) -> Vec<String> {
    log.owned_reader(log.log_start_offset(), Isolation::ReadCommitted)
        .until_caught_up()
        .map(|f| String::from_utf8(f.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect()
}

/// The aborted transactions a `read_committed` fetch from `from` to the log end is given.
fn aborted_from(log: &Log, from: i64) -> Vec<(i64, i64)> {
    log.aborted_transactions(from, log.log_end_offset())
        .unwrap()
        .iter()
        .map(|t| (t.producer_id, t.first_offset))
        .collect()
}

/// An aborted transaction whose data lies below a raised log start (DeleteRecords) and whose
/// ABORT marker lies above it keeps its entry, from its first offset, as Kafka's index does
/// and its `collectAbortedTxns` serves it (`lastOffset >= fetchOffset`): whether the data lies
/// in the marker's segment below the log start (issue #25, divergence 271 of the first
/// 1000-history run) or in an earlier segment (divergence 318). Before the fix the first-use
/// check, whose replay starts at the log start, found no transaction for the marker and
/// rebuilt the entry away (`[]`).
#[test]
fn an_entry_whose_transaction_began_below_the_log_start_is_kept() {
    // In the marker's segment: producer 8's data 1..=2, plain 3..=4, its ABORT at 5.
    let tmp = tempfile::tempdir().unwrap();
    let log = open(tmp.path());
    data(&log, None, &["plain-0"]);
    data(&log, Some((8, 0)), &["aborted-8a", "aborted-8b"]);
    data(&log, None, &["plain-3", "plain-4"]);
    marker(&log, 8, TxnResult::Abort);
    log.delete_records_before(4).unwrap();
    assert_eq!(aborted_from(&log, 4), [(8, 1)]);
    log.close().unwrap();
    drop(log);
    let log = open(tmp.path());
    assert_eq!(log.log_start_offset(), 4);
    assert_eq!(aborted_from(&log, 4), [(8, 1)]);
    assert_eq!(committed_from_log_start(&log), ["plain-4"]);
    log.close().unwrap();

    // In an earlier segment: producer 8's data 1..=2 in segment 0, its ABORT at 4 in segment
    // 3, the log start 3 (segment 0 still on disk).
    let tmp = tempfile::tempdir().unwrap();
    let log = open(tmp.path());
    data(&log, None, &["plain-0"]);
    data(&log, Some((8, 0)), &["aborted-8a", "aborted-8b"]);
    log.roll().unwrap();
    data(&log, None, &["plain-3"]);
    marker(&log, 8, TxnResult::Abort);
    log.delete_records_before(3).unwrap();
    log.close().unwrap();
    drop(log);
    let log = open(tmp.path());
    assert_eq!(log.segments().len(), 2);
    assert_eq!(aborted_from(&log, 3), [(8, 1)]);
    assert_eq!(committed_from_log_start(&log), ["plain-3"]);
}

/// `Log::txn_index_entries` answers what `read_committed` uses: a wrong file on disk is checked
/// first (read-only: rebuilt in memory, the file unchanged), never passed on as it is.
#[test]
fn txn_index_entries_are_the_checked_entries_not_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    write(&dir);
    let want = open_as(&dir, true).txn_index_entries().unwrap();
    assert!(!want.is_empty());
    // An entry for producer 9's committed transaction of segment 1, and nothing else.
    let path = txn_index(&dir, 1);
    let forged = entry(9, 3, 4, 3);
    std::fs::write(&path, &forged).unwrap();
    for read_only in [true, false] {
        let log = open_as(&dir, read_only);
        assert_eq!(
            log.txn_index_entries().unwrap(),
            want,
            "read-only {read_only}"
        );
        assert_eq!(committed(&log), WANT);
        drop(log);
        if read_only {
            assert_eq!(
                std::fs::read(&path).unwrap(),
                forged,
                "a read-only open wrote it"
            );
        }
    }
}
