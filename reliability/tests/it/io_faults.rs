//! I/O faults through the segment seam: the Nth `.log` write or fsync fails with `EIO` or
//! `ENOSPC` (an `ENOSPC` write first writes half its buffer, as a real one can); so does, in
//! the targeted tests at the end, an index flush (`msync`), a directory fsync, a `.log`
//! rename or an unlink.
//!
//! The failing call returns a typed error naming the file and the operation; the log is then
//! poisoned (every later write, flush, roll and close fails with `Error::Poisoned`) while reads
//! keep serving exactly what was appended before; after a reopen nothing partial is visible,
//! and every durable acknowledgement survives even a power loss right after the failure.
//!
//! `SEGLOG_IO_FAULT_ITERATIONS` sets the number of random fault points (default 60).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rand::Rng;
use seglog::{Clock, Compression, Log, LogConfig};
use seglog_faults::{FaultInjector, FaultKind};
use seglog_reliability::{
    CrashImage, CrashOptions, IndexFate, RecordId, build_batch, check_acknowledged, read_log,
    read_log_with_gaps, small_config,
};
use seglog_segment::IoOp;

use crate::support::{
    assert_serves, capture_as_is, faulty_dir, iterations, open_faulty, reopen_serves, seeded_rng,
};

/// The OS error code of `kind`.
fn errno(kind: FaultKind) -> i32 {
    match kind {
        FaultKind::Eio => 5,
        FaultKind::Enospc => 28,
    }
}

/// Checks that `error` is the injected fault: a segment I/O error of operation `op` whose
/// source is the injected OS error, with the `.log` path in its message.
fn assert_injected(error: &seglog::Error, op: IoOp, kind: FaultKind, context: &str) {
    match error {
        seglog::Error::Segment(seglog_segment::Error::Io {
            op: got,
            path,
            source,
        }) => {
            assert_eq!(*got, op, "{context}: {error}");
            assert_eq!(
                source.raw_os_error(),
                Some(errno(kind)),
                "{context}: {error}"
            );
            assert!(
                path.extension().is_some_and(|e| e == "log"),
                "{context}: {error} should name the .log"
            );
        }
        other => panic!("{context}: expected an injected {op:?} error, got {other:?}"),
    }
}

/// Every mutating call fails with `Error::Poisoned` naming the failed operation; reads work.
fn assert_poisoned(log: &Log, context: &str) {
    let batch = build_batch(&[RecordId { stream: 99, seq: 0 }], Compression::None).unwrap();
    let message = log.append(&batch).unwrap_err().to_string();
    assert!(
        message.contains("poisoned") && message.contains("reopen"),
        "{context}: unclear poison message {message:?}"
    );
    let checks: [(&str, seglog::Result<()>); 5] = [
        ("append", log.append(&batch).map(drop)),
        ("append_durable", log.append_durable(&batch).map(drop)),
        ("flush", log.flush()),
        ("roll", log.roll()),
        ("close", log.close()),
    ];
    for (call, result) in checks {
        match result {
            Err(seglog::Error::Poisoned { .. }) => {}
            other => panic!("{context}: {call} after the fault: expected Poisoned, got {other:?}"),
        }
    }
}

fn config(rng: &mut impl Rng) -> LogConfig {
    let mut config = small_config(rng.random_range(4096..16_000));
    config.index_interval_bytes = rng.random_range(0..2000);
    config
}

/// Appends random batches until one fails; returns (offset -> id of every append that
/// returned Ok, durable acknowledgements, the error).
fn append_until_failure(
    log: &Log,
    rng: &mut impl Rng,
    stream: u64,
) -> (
    BTreeMap<i64, RecordId>,
    BTreeMap<i64, RecordId>,
    seglog::Error,
) {
    let mut appended = BTreeMap::new();
    let mut durable = BTreeMap::new();
    let mut seq = 0;
    for _ in 0..10_000 {
        let n = rng.random_range(1..=6u64);
        let ids: Vec<RecordId> = (seq..seq + n).map(|seq| RecordId { stream, seq }).collect();
        seq += n;
        let compression = Compression::ALL[rng.random_range(0..Compression::ALL.len())];
        let batch = build_batch(&ids, compression).unwrap();
        let is_durable = rng.random_bool(0.5);
        let result = if is_durable {
            log.append_durable(&batch)
        } else {
            log.append(&batch)
        };
        match result {
            Ok(info) => {
                for (i, id) in ids.into_iter().enumerate() {
                    appended.insert(info.first_offset + i as i64, id);
                }
                if is_durable {
                    durable = appended.clone();
                }
                if rng.random_bool(0.05) {
                    log.roll().unwrap();
                }
            }
            Err(e) => return (appended, durable, e),
        }
    }
    panic!("the armed fault never fired");
}

#[test]
fn the_nth_write_or_fsync_fails_cleanly() {
    let points = iterations("SEGLOG_IO_FAULT_ITERATIONS", 60);
    let (mut rng, seed) = seeded_rng("io_faults");
    for point in 0..points {
        let kind = if rng.random_bool(0.5) {
            FaultKind::Eio
        } else {
            FaultKind::Enospc
        };
        let on_sync = rng.random_bool(0.4);
        let n = rng.random_range(1..40);
        let context = format!(
            "seed {seed}, point {point}: {} #{n} fails with {kind:?}",
            if on_sync { "fsync" } else { "write" }
        );
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t-0");
        let faults = faulty_dir(&dir);
        let config = config(&mut rng);
        let log = open_faulty(&dir, config.clone(), &faults);
        if on_sync {
            faults.fail_nth_sync(n, kind);
        } else {
            faults.fail_nth_write(n, kind);
        }
        let (appended, durable, error) = append_until_failure(&log, &mut rng, point);
        let op = if on_sync { IoOp::Sync } else { IoOp::Write };
        assert_injected(&error, op, kind, &context);
        faults.clear();
        assert_poisoned(&log, &context);
        // Reads serve what was appended; of the failed append nothing after a failed write,
        // and at most the whole batch after a failed fsync (it was written and published
        // before the fsync, as in Kafka; its caller got the error).
        let contents = read_log(&log).unwrap_or_else(|v| panic!("{context}: {v}"));
        if !on_sync {
            assert_eq!(
                contents.records.len(),
                appended.len(),
                "{context}: readers see the failed write"
            );
        }
        check_acknowledged(&contents, &appended).unwrap_or_else(|v| panic!("{context}: {v}"));

        // A power loss right now keeps every durable acknowledgement.
        let image = CrashImage::capture(
            &dir,
            &faults,
            &CrashImage::list_names(&dir).unwrap(),
            &CrashOptions {
                torn_tails: rng.random_bool(0.5),
                lose_unsynced_entries: false,
                index_fate: IndexFate::Mixed,
                leftover_checkpoint_tmp: false,
                max_index_bytes: 4096,
            },
            &mut rng,
        )
        .unwrap();
        let crashed = tmp.path().join("crashed").join("t-0");
        image.write_to(&crashed).unwrap();
        let after_power_loss = Log::open(&crashed, config.clone()).unwrap();
        // Gaps in unsynced territory are served, as Kafka's loader serves them (a power loss
        // can keep a later segment's file while an earlier one loses its unsynced tail).
        let contents =
            read_log_with_gaps(&after_power_loss).unwrap_or_else(|v| panic!("{context}: {v}"));
        check_acknowledged(&contents, &durable)
            .unwrap_or_else(|v| panic!("{context}, power loss: {v}"));

        // Reopening the live directory recovers: whole batches only, every Ok append there
        // (the failed one too at most, whole, when its write went through before its fsync
        // failed), and appends work again.
        drop(log);
        let log = open_faulty(&dir, config, &faults);
        let contents = read_log(&log).unwrap_or_else(|v| panic!("{context}, reopen: {v}"));
        check_acknowledged(&contents, &appended)
            .unwrap_or_else(|v| panic!("{context}, reopen: {v}"));
        if !on_sync {
            assert_eq!(
                contents.records.len(),
                appended.len(),
                "{context}: the failed write is visible after reopening"
            );
        }
        let batch = build_batch(
            &[RecordId {
                stream: 1000 + point,
                seq: 0,
            }],
            Compression::None,
        )
        .unwrap();
        log.append_durable(&batch).unwrap();
        log.close().unwrap();
    }
}

/// Concurrent durable appenders share fsyncs (group commit). When the shared fsync fails,
/// no appender whose record it was meant to cover may get `Ok`: every `Ok` must be in the
/// durable image.
#[test]
fn a_failed_group_commit_acknowledges_nothing_it_did_not_sync() {
    let rounds = iterations("SEGLOG_IO_FAULT_ITERATIONS", 60) / 6;
    let (mut rng, seed) = seeded_rng("group_commit_faults");
    for round in 0..rounds.max(1) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t-0");
        let faults = faulty_dir(&dir);
        let config = small_config(64 * 1024);
        let log = Arc::new(open_faulty(&dir, config.clone(), &faults));
        faults.fail_nth_sync(rng.random_range(2..30), FaultKind::Eio);
        let acked = Arc::new(Mutex::new(BTreeMap::new()));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (log, acked) = (Arc::clone(&log), Arc::clone(&acked));
                std::thread::spawn(move || {
                    for seq in 0..200 {
                        let id = RecordId { stream: t, seq };
                        let batch = build_batch(&[id], Compression::None).unwrap();
                        match log.append_durable(&batch) {
                            Ok(info) => {
                                acked.lock().unwrap().insert(info.first_offset, id);
                            }
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let acked = acked.lock().unwrap().clone();
        let image = capture_as_is(
            &dir,
            &faults,
            &CrashImage::list_names(&dir).unwrap(),
            &mut rng,
        );
        let crashed = tmp.path().join("crashed").join("t-0");
        image.write_to(&crashed).unwrap();
        let recovered = Log::open(&crashed, config).unwrap();
        let contents = read_log(&recovered).unwrap();
        check_acknowledged(&contents, &acked).unwrap_or_else(|v| {
            panic!("seed {seed}, round {round}: an Ok durable append was not synced: {v}")
        });
    }
}

/// A failed fsync during `close` leaves no clean-shutdown marker, so the next open recovers.
#[test]
fn a_failed_close_is_not_a_clean_shutdown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let faults = faulty_dir(&dir);
    let log = open_faulty(&dir, small_config(4096), &faults);
    let ids: Vec<RecordId> = (0..20).map(|seq| RecordId { stream: 1, seq }).collect();
    for chunk in ids.chunks(4) {
        log.append(&build_batch(chunk, Compression::Lz4).unwrap())
            .unwrap();
    }
    faults.fail_nth_sync(1, FaultKind::Eio);
    let error = log.close().unwrap_err();
    assert_injected(&error, IoOp::Sync, FaultKind::Eio, "close");
    assert!(!dir.join(seglog::CLEAN_SHUTDOWN_FILE).exists());
    drop(log);
    faults.clear();
    let log = open_faulty(&dir, small_config(4096), &faults);
    assert!(!log.load_report().had_clean_shutdown);
    assert!(log.load_report().recovered().count() > 0);
    let acked = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (i as i64, *id))
        .collect();
    check_acknowledged(&read_log(&log).unwrap(), &acked).unwrap();
}

/// Regression (fixed; was a bug in seglog `log.rs` `Log::close`): `close` marks the log closed before it checks the poison
/// flag and before it flushes, so when the first `close` fails (poisoned log, failed fsync),
/// a second `close` returns `Ok(())` although nothing was flushed and no clean-shutdown marker
/// was written; later writes then report `Closed` instead of `Poisoned`.
#[test]
fn a_failed_close_is_not_reported_as_success_on_retry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let faults = faulty_dir(&dir);
    let log = open_faulty(&dir, small_config(4096), &faults);
    log.append(&build_batch(&[RecordId { stream: 1, seq: 0 }], Compression::None).unwrap())
        .unwrap();
    faults.fail_nth_sync(1, FaultKind::Eio);
    assert!(log.close().is_err());
    faults.clear();
    let retry = log.close();
    assert!(
        retry.is_err(),
        "the retried close reports success, but the log was never flushed or marked clean"
    );
}

/// Appends `count` records of `stream` (durably or not); returns offset -> id.
fn append_records(
    log: &Log,
    stream: u64,
    from: u64,
    count: u64,
    durable: bool,
) -> BTreeMap<i64, RecordId> {
    let ids: Vec<RecordId> = (from..from + count)
        .map(|seq| RecordId { stream, seq })
        .collect();
    let batch = build_batch(&ids, Compression::None).unwrap();
    let info = if durable {
        log.append_durable(&batch).unwrap()
    } else {
        log.append(&batch).unwrap()
    };
    ids.into_iter()
        .enumerate()
        .map(|(i, id)| (info.first_offset + i as i64, id))
        .collect()
}

/// A power loss right now (any lost unsynced name, torn tails, any index state) keeps every
/// durable acknowledgement in `durable`.
fn power_loss_keeps(
    dir: &std::path::Path,
    faults: &FaultInjector,
    config: &LogConfig,
    durable: &BTreeMap<i64, RecordId>,
    context: &str,
) {
    let mut rng = rand::rng();
    for variant in 0..4 {
        let image = CrashImage::capture(
            dir,
            faults,
            &CrashImage::list_names(dir).unwrap(),
            &CrashOptions {
                torn_tails: variant % 2 == 0,
                lose_unsynced_entries: true,
                index_fate: IndexFate::Mixed,
                leftover_checkpoint_tmp: false,
                max_index_bytes: 4096,
            },
            &mut rng,
        )
        .unwrap();
        let crashed = dir.with_file_name(format!("crashed-{variant}"));
        image.write_to(&crashed).unwrap();
        let log = Log::open(&crashed, config.clone()).unwrap();
        let contents =
            read_log_with_gaps(&log).unwrap_or_else(|v| panic!("{context}, power loss: {v}"));
        check_acknowledged(&contents, durable)
            .unwrap_or_else(|v| panic!("{context}, power loss: {v}"));
    }
}

/// After an injected fault (cleared here): `log` is poisoned, still serves `appended`, a
/// power loss keeps `durable`, and the reopened directory serves `appended`.
fn poisoned_but_lossless(
    log: Log,
    dir: &std::path::Path,
    faults: &FaultInjector,
    config: LogConfig,
    appended: &BTreeMap<i64, RecordId>,
    durable: &BTreeMap<i64, RecordId>,
    context: &str,
) {
    faults.clear();
    assert_poisoned(&log, context);
    assert_serves(&log, appended, context);
    power_loss_keeps(dir, faults, &config, durable, context);
    drop(log);
    reopen_serves(dir, config, appended, context);
}

/// An index flush (`msync`) that fails during `Log::flush` is returned as a segment I/O error
/// naming the index, poisons the log, and loses nothing: the `.log` was fsynced first, and
/// the reopened log rebuilds what it needs.
#[test]
fn a_failed_index_flush_poisons_the_log() {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        for (n, extension) in [(1, "index"), (2, "timeindex")] {
            let context = format!("index flush #{n} fails with {kind:?}");
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("t-0");
            let faults = faulty_dir(&dir);
            let mut config = small_config(1 << 20);
            config.index_interval_bytes = 1;
            let log = open_faulty(&dir, config.clone(), &faults);
            let mut appended = append_records(&log, 1, 0, 5, true);
            let durable = appended.clone();
            appended.append(&mut append_records(&log, 1, 5, 5, false));
            faults.fail_nth_index_flush(n, kind);
            let error = log.flush().unwrap_err();
            match &error {
                seglog::Error::Segment(seglog_segment::Error::Io { op, path, source }) => {
                    assert_eq!(*op, IoOp::Sync, "{context}: {error}");
                    assert_eq!(source.raw_os_error(), Some(errno(kind)), "{context}");
                    assert!(
                        path.extension().is_some_and(|e| e == extension),
                        "{context}: {error} should name the .{extension}"
                    );
                }
                other => panic!("{context}: expected an injected index flush error, got {other:?}"),
            }
            assert_eq!(faults.index_flushes(), n, "{context}");
            // The flush was not acknowledged: only the durable append is owed.
            poisoned_but_lossless(log, &dir, &faults, config, &appended, &durable, &context);
        }
    }
}

/// A directory fsync that fails (here the flush after a roll: the new segment's name must be
/// made durable) is a segment I/O error naming the directory, poisons the log, and loses no
/// durable acknowledgement even if the power fails right after (the new segment's name is
/// not durable: the observed listing does not have it).
#[test]
fn a_failed_directory_fsync_poisons_the_log() {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        let context = format!("directory fsync fails with {kind:?}");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t-0");
        let faults = faulty_dir(&dir);
        let config = small_config(1 << 20);
        let log = open_faulty(&dir, config.clone(), &faults);
        let mut appended = append_records(&log, 1, 0, 5, true);
        let durable = appended.clone();
        log.roll().unwrap();
        appended.append(&mut append_records(&log, 1, 5, 5, false));
        let listed = faults.durable_names(&dir).unwrap_or_else(|| {
            panic!("{context}: the log never fsynced its directory through the seam")
        });
        assert!(
            !listed.contains("00000000000000000005.log"),
            "{context}: {listed:?}"
        );
        let syncs = faults.dir_syncs();
        faults.fail_nth_dir_sync(1, kind);
        let error = log.flush().unwrap_err();
        match &error {
            seglog::Error::Segment(seglog_segment::Error::Io { op, path, source }) => {
                assert_eq!(*op, IoOp::SyncDir, "{context}: {error}");
                assert_eq!(source.raw_os_error(), Some(errno(kind)), "{context}");
                assert_eq!(path, &dir, "{context}");
            }
            other => panic!("{context}: expected an injected directory fsync error, got {other:?}"),
        }
        assert_eq!(faults.dir_syncs(), syncs + 1, "{context}");
        assert_eq!(faults.durable_names(&dir), Some(listed), "{context}");
        poisoned_but_lossless(log, &dir, &faults, config, &appended, &durable, &context);
    }
}

/// A `.log` rename to `.deleted` (retention) that fails is a segment I/O error naming the
/// file; it poisons the log, and reopening serves every acknowledged record still above the
/// log start offset, without a gap (the segments whose rename did not happen come back: the
/// raised log start offset was not checkpointed, as in Kafka).
#[test]
fn a_failed_rename_in_retention_poisons_and_loses_nothing() {
    let context = "retention rename #2 fails";
    let (tmp, dir, faults, config, log, mut appended) = retention_setup();
    let base = log.segments()[1].base_offset;
    faults.fail_nth_rename(2, FaultKind::Eio);
    let error = log.tick(seglog::SystemClock.now_ms()).unwrap_err();
    match &error {
        seglog::Error::Segment(seglog_segment::Error::Io { op, path, source }) => {
            assert_eq!(*op, IoOp::Rename, "{context}: {error}");
            assert_eq!(source.raw_os_error(), Some(errno(FaultKind::Eio)));
            assert_eq!(
                path,
                &dir.join(seglog_segment::file_name(
                    base,
                    seglog_segment::FileKind::LOG
                )),
                "{context}"
            );
        }
        other => panic!("{context}: expected an injected rename error, got {other:?}"),
    }
    faults.clear();
    let live_start = log.log_start_offset();
    assert_poisoned(&log, context);
    drop(log);
    let log = open_faulty(&dir, config, &faults);
    let contents = read_log(&log).unwrap_or_else(|v| panic!("{context}, reopen: {v}"));
    assert!(contents.log_start_offset <= live_start, "{context}");
    check_acknowledged(&contents, &appended.split_off(&contents.log_start_offset))
        .unwrap_or_else(|v| panic!("{context}, reopen: {v}"));
    drop(tmp);
}

/// An unlink of a `.deleted` file that fails is reported by `tick` (a segment I/O error
/// naming the file) and retried by the next one; the log stays usable.
#[test]
fn a_failed_unlink_is_reported_and_retried() {
    let context = "unlink #1 fails";
    let (tmp, dir, faults, config, log, mut appended) = retention_setup();
    let now = seglog::SystemClock.now_ms();
    let report = log.tick(now).unwrap();
    assert!(report.retention.deleted.len() >= 2, "{context}: {report:?}");
    let first = report.retention.deleted[0].base_offset;
    let doomed = dir.join(format!(
        "{}.deleted",
        seglog_segment::file_name(first, seglog_segment::FileKind::LOG)
    ));
    assert!(doomed.exists(), "{context}");
    faults.fail_nth_remove(1, FaultKind::Eio);
    let error = log.tick(now + 1).unwrap_err();
    match &error {
        seglog::Error::Segment(seglog_segment::Error::Io { op, path, .. }) => {
            assert_eq!(*op, IoOp::Remove, "{context}: {error}");
            assert_eq!(path, &doomed, "{context}");
        }
        other => panic!("{context}: expected an injected unlink error, got {other:?}"),
    }
    assert!(doomed.exists(), "{context}");
    log.tick(now + 2).unwrap();
    assert!(!doomed.exists(), "{context}: not retried");
    let start = log.log_start_offset();
    appended = appended.split_off(&start);
    appended.append(&mut append_records(&log, 2, 0, 3, true));
    assert_serves(&log, &appended, context);
    log.close().unwrap();
    drop(log);
    let log = open_faulty(&dir, config, &faults);
    check_acknowledged(&read_log(&log).unwrap(), &appended)
        .unwrap_or_else(|v| panic!("{context}, reopen: {v}"));
    drop(tmp);
}

/// A log of four small segments, all durable, the high watermark at the end, retention
/// (100 bytes, no delete delay) due at the next tick.
fn retention_setup() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    FaultInjector,
    LogConfig,
    Log,
    BTreeMap<i64, RecordId>,
) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let faults = faulty_dir(&dir);
    let mut config = small_config(2048);
    config.retention_bytes = 100;
    config.file_delete_delay_ms = 0;
    let log = open_faulty(&dir, config.clone(), &faults);
    let mut appended = BTreeMap::new();
    let mut seq = 0;
    while log.segments().len() < 4 {
        appended.append(&mut append_records(&log, 1, seq, 3, true));
        seq += 3;
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
    (tmp, dir, faults, config, log, appended)
}
