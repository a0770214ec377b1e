//! Crash recovery reads the log once: the leader-epoch cache and the producer state load from
//! the digest of the recovery pass (issue #19), and give the same state, snapshots,
//! `.txnindex` files and epochs as reading the recovered segments again (the digest off, or
//! dropped for being over a per-segment or per-load limit).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use seglog::{
    BatchBuilder, Clock, Durability, LEADER_EPOCH_CHECKPOINT, Log, LogConfig, LogOpenOptions,
    RecoveryDigestLimits, TxnResult,
};

use crate::support::{T0, clock, open, small_config};

/// What the crashed log holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Data {
    /// No producer ids (the recovery bench's data).
    Plain,
    /// Idempotent producers.
    Idempotent,
    /// Transactions (committed, aborted, and open at the crash) beside an idempotent producer.
    Transactions,
}

fn config() -> LogConfig {
    small_config(256 << 10)
}

/// A batch of 8 records of 100 bytes, of producer `pid` from `sequence` (none for -1).
fn batch(pid: i64, sequence: i32, transactional: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(0);
    if pid >= 0 {
        b = b.producer(pid, 0, sequence).transactional(transactional);
    }
    for i in 0..8 {
        b.append(T0 + i, None, Some(&[b'x'; 100]), &[]);
    }
    b.build().unwrap().to_vec()
}

/// A log of about 2 MiB in 256 KiB segments, written in several leader epochs, then a crash
/// (dropped without a close: nothing flushed, every segment is recovered at the next open).
fn crashed_log(data: Data) -> tempfile::TempDir {
    let dir = crashed_log_of(data, 2_000, config(), None);
    assert!(log_files(dir.path()) >= 6);
    dir
}

/// [`crashed_log`] of `batches` batches (about 930 bytes each) written with `config`, with a
/// `tick` (flushing the sealed segments, writing the checkpoints and so a recovery point)
/// after batch `flush_at`.
fn crashed_log_of(
    data: Data,
    batches: usize,
    config: LogConfig,
    flush_at: Option<usize>,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), config, &clock);
    let mut sequences = [0i32; 4];
    let mut in_txn = [false; 4];
    for i in 0..batches {
        let epoch = (i / 300) as i32 + (i / 1_000) as i32;
        let slot = i % 4;
        let pid = 100 + slot as i64;
        let bytes = match data {
            Data::Plain => batch(-1, 0, false),
            Data::Idempotent => batch(pid, sequences[slot], false),
            // Producer 103 is idempotent only; the others run transactions.
            Data::Transactions => batch(pid, sequences[slot], slot != 3),
        };
        log.append_as_leader(&bytes, epoch, Durability::PageCache)
            .unwrap();
        sequences[slot] += 8;
        if flush_at == Some(i) {
            log.tick(clock.now_ms()).unwrap();
            assert!(log.recovery_point() > 0);
        }
        if data == Data::Transactions && slot != 3 {
            in_txn[slot] = true;
            // Markers now and then, some transactions spanning segments; producer 102's last
            // one stays open.
            if (i / 4) % (5 + slot) == 0 && i + 10 < batches {
                let result = if (i / 4) % 2 == 0 {
                    TxnResult::Abort
                } else {
                    TxnResult::Commit
                };
                log.write_txn_marker(pid, 0, 1, result, Some(epoch), Durability::PageCache)
                    .unwrap();
                in_txn[slot] = false;
            }
        }
    }
    if data == Data::Transactions {
        assert!(in_txn.iter().any(|open| *open), "a transaction is open");
        assert!(
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .any(|e| e.path().extension().is_some_and(|x| x == "txnindex")),
            "some transaction was aborted"
        );
    }
    drop(log); // a crash
    dir
}

fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.path().join(entry.file_name())).unwrap();
        }
    }
    to
}

fn open_with(dir: &Path, digest: RecoveryDigestLimits) -> Log {
    Log::open_with(
        dir,
        config(),
        LogOpenOptions {
            clock: clock(),
            recovery_digest: digest,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// The bytes this process has read through system calls so far (`rchar`, every thread's,
/// also of threads that ended), or `None` where `/proc/self/io` does not exist.
fn process_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("rchar:"))
        .and_then(|n| n.trim().parse().ok())
}

fn log_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .count()
}

/// The bytes of the `.log` files of `dir`.
fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Opens `dir` after its crash and returns the bytes the open read and the log. Only
/// meaningful in a process that runs nothing else at the same time ([`alone`]).
fn measured_open(dir: &Path, digest: RecoveryDigestLimits) -> Option<(u64, Log)> {
    let before = process_read_bytes()?;
    let log = open_with(dir, digest);
    let read = process_read_bytes()? - before;
    Some((read, log))
}

const ALONE: &str = "SEGLOG_RECOVERY_READS_CHILD";

/// Runs `body` in a child process running only this test (the test binary re-executed with
/// [`ALONE`] set): the process-wide read counters then count the open's reads on every thread
/// (the recovery's read-ahead reads on a second one) and nothing of other tests.
fn alone(test_name: &str, body: impl FnOnce()) {
    if std::env::var_os(ALONE).is_some() {
        body();
        return;
    }
    let status = Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, "1")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the child running {test_name} failed: {status}"
    );
}

#[test]
fn recovery_reads_the_recovered_log_bytes_about_once() {
    alone(
        "recovery_reads::recovery_reads_the_recovered_log_bytes_about_once",
        check_recovery_reads,
    );
}

fn check_recovery_reads() {
    let one_segment = LogConfig {
        segment_bytes: 8 << 20,
        ..config()
    };
    let cases = [Data::Plain, Data::Idempotent, Data::Transactions]
        .into_iter()
        .flat_map(|data| [(data, false), (data, true)]);
    for (data, large_segment) in cases {
        // Small segments are scanned inline; one of 3.3 MB with a read-ahead thread.
        let crashed = if large_segment {
            crashed_log_of(data, 3_500, one_segment.clone(), None)
        } else {
            crashed_log(data)
        };
        let again = copy_dir(crashed.path());
        let logs = log_bytes(crashed.path());
        let Some((read, log)) = measured_open(crashed.path(), RecoveryDigestLimits::default())
        else {
            eprintln!("no /proc/self/io here: the read-bytes check is skipped");
            return;
        };
        let report = log.load_report();
        assert_eq!(
            report.segments.len(),
            report.recovered().count(),
            "{data:?}"
        );
        // One read of every `.log`, plus a batch re-read at each 1 MiB chunk boundary, the
        // checkpoints and the small files.
        let bound = logs + logs / 5 + (64 << 10);
        assert!(
            read <= bound,
            "{data:?} (one segment: {large_segment}): the open read {read} bytes for {logs} \
             bytes of .log (bound {bound})"
        );
        // Reading the recovered segments again is what the digest saves.
        let (read_again, _log) = measured_open(again.path(), RecoveryDigestLimits::NONE).unwrap();
        assert!(
            read_again > 2 * logs,
            "{data:?} (one segment: {large_segment}): without the digest the open read \
             {read_again} bytes for {logs}"
        );
    }
}

/// Everything the epoch and producer loads leave behind.
#[derive(Debug, PartialEq, Eq)]
struct Loaded {
    log_end_offset: i64,
    epochs: Vec<(i32, i64)>,
    epoch_checkpoint: String,
    producers: Vec<seglog::ProducerSnapshotEntry>,
    /// Every entry in full (the retained batches too).
    states: String,
    ongoing: Vec<(i64, i64)>,
    last_stable_offset: i64,
    /// `.snapshot` and `.txnindex` files by name.
    files: BTreeMap<String, Vec<u8>>,
    replayed: Option<(i64, i64)>,
    snapshot_offset: Option<i64>,
    rebuilt_txn_indexes: Vec<i64>,
}

fn loaded(log: &Log) -> Loaded {
    let dir = log.dir();
    let files = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.path()
                .extension()
                .is_some_and(|x| x == "snapshot" || x == "txnindex")
        })
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    let mut producers: Vec<_> = log
        .producer_states()
        .iter()
        .map(|e| e.to_snapshot_entry())
        .collect();
    producers.sort_by_key(|e| e.producer_id);
    let mut states = log.producer_states();
    states.sort_by_key(|e| e.to_snapshot_entry().producer_id);
    let report = &log.load_report().producers;
    Loaded {
        log_end_offset: log.log_end_offset(),
        epochs: log.leader_epochs(),
        epoch_checkpoint: std::fs::read_to_string(dir.join(LEADER_EPOCH_CHECKPOINT)).unwrap(),
        producers,
        states: format!("{states:?}"),
        ongoing: log.ongoing_transactions(),
        last_stable_offset: log.last_stable_offset(),
        files,
        replayed: report.replayed,
        snapshot_offset: report.snapshot_offset,
        rebuilt_txn_indexes: report.rebuilt_txn_indexes.clone(),
    }
}

/// How the crashed log of the comparison was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Nothing flushed: every segment is recovered.
    Crash,
    /// The same without its `leader-epoch-checkpoint`.
    NoEpochCheckpoint,
    /// Flushed halfway: the later segments are recovered, the earlier ones replayed from the
    /// latest snapshot below the recovery point.
    Flushed,
}

#[test]
fn the_digest_gives_the_state_a_second_read_gives_whatever_its_limits() {
    let cases = [Data::Plain, Data::Idempotent, Data::Transactions]
        .into_iter()
        .flat_map(|data| {
            [
                (data, Shape::Crash),
                (data, Shape::NoEpochCheckpoint),
                (data, Shape::Flushed),
            ]
        });
    for (data, shape) in cases {
        let crashed = match shape {
            Shape::Flushed => crashed_log_of(data, 2_000, config(), Some(1_000)),
            _ => crashed_log(data),
        };
        if shape == Shape::NoEpochCheckpoint {
            // The cache is rebuilt from every segment's batches (the digests' first batch too).
            std::fs::remove_file(crashed.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
        }
        let from_disk = {
            let dir = copy_dir(crashed.path());
            let log = open_with(dir.path(), RecoveryDigestLimits::NONE);
            let report = log.load_report();
            let recovered = report.recovered().count();
            if shape == Shape::Flushed {
                // Segments below the recovery point are replayed from disk, not recovered.
                assert!(
                    recovered > 0 && recovered < report.segments.len(),
                    "{report:?}"
                );
                assert!(report.producers.replayed.is_some());
            } else {
                assert_eq!(recovered, report.segments.len());
            }
            loaded(&log)
        };
        if data != Data::Plain {
            assert!(!from_disk.producers.is_empty());
        }
        assert!(from_disk.epochs.len() >= 3, "{:?}", from_disk.epochs);
        if data == Data::Transactions {
            assert!(!from_disk.ongoing.is_empty());
        }
        let limits = [
            RecoveryDigestLimits::default(),
            // Too small for a segment of producer batches: those are read again, the
            // segments with few entries (plain data: epoch changes only) are not.
            RecoveryDigestLimits {
                per_segment: 4,
                per_load: usize::MAX,
            },
            // The budget runs out after the first segments.
            RecoveryDigestLimits {
                per_segment: usize::MAX,
                per_load: 600,
            },
        ];
        for limit in limits {
            let dir = copy_dir(crashed.path());
            let got = loaded(&open_with(dir.path(), limit));
            assert_eq!(got, from_disk, "{data:?} {shape:?} with {limit:?}");
        }
    }
}

/// A control batch whose record does not decode (a valid CRC over a null key) in the recovered
/// range: the digest is dropped, and the open fails as the replay from disk makes it fail.
#[test]
fn a_marker_that_does_not_decode_fails_the_open_as_without_the_digest() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config(), &clock());
    for i in 0..20 {
        log.append(&batch(100, i * 8, false)).unwrap();
    }
    let end = log.log_end_offset();
    let last = log.segments().last().unwrap().path.clone();
    drop(log); // a crash
    let mut bad = BatchBuilder::new(end).producer(100, 0, -1).control(true);
    bad.append(T0, None, Some(b"v"), &[]);
    let bad = bad.build().unwrap();
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&last)
            .unwrap();
        file.write_all(&bad).unwrap();
    }
    let failure = |digest| {
        let copy = copy_dir(dir.path());
        match Log::open_with(
            copy.path(),
            config(),
            LogOpenOptions {
                clock: clock(),
                recovery_digest: digest,
                ..LogOpenOptions::default()
            },
        ) {
            Ok(_) => panic!("the open succeeded with {digest:?}"),
            Err(e) => {
                // Bytes in the log, not the caller's input: a damaged batch naming its file.
                match &e {
                    seglog::Error::DamagedBatch { path, .. } => {
                        assert_eq!(path.file_name(), last.file_name(), "{e:?}");
                    }
                    _ => panic!("not a damaged batch: {e:?}"),
                }
                e.to_string()
                    .replace(copy.path().to_str().unwrap(), "<dir>")
            }
        }
    };
    assert_eq!(
        failure(RecoveryDigestLimits::default()),
        failure(RecoveryDigestLimits::NONE)
    );
}
