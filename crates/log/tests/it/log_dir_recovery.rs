//! The parallel open of a `log.dirs` root (issue 28): partitions loaded and recovered on
//! `num.recovery.threads.per.data.dir` threads, each served as it finishes, progress per
//! partition, a failed partition offline while the others are served, and the same files as
//! the serial open.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use seglog::{
    CLEAN_SHUTDOWN_FILE, Error, LogConfig, LogDir, LogOpenOptions, RECOVERY_POINT_CHECKPOINT,
    TopicConfigs, TopicPartition,
};
use seglog_segment::Io;
use seglog_segment::seam::{Direct, FileId, IoBackend};

use crate::support::*;

fn threads(config: LogConfig, threads: i32) -> LogConfig {
    LogConfig {
        num_recovery_threads_per_data_dir: threads,
        ..config
    }
}

fn options(clock: &Arc<seglog::ManualClock>) -> LogOpenOptions {
    LogOpenOptions {
        clock: clock.clone(),
        ..LogOpenOptions::default()
    }
}

/// A root of `partitions` partitions of several segments each, left by a crash: part of each
/// partition flushed, the rest not, and every third partition's active segment with a torn
/// tail (garbage after its last batch, above the recovery point: cut by the recovery).
fn crashed_root(root: &Path, partitions: i32, clock: &Arc<seglog::ManualClock>) {
    let dir = LogDir::open_with(root, small_config(1024), options(clock)).unwrap();
    for p in 0..partitions {
        let log = dir.get_or_create(&TopicPartition::new("t", p)).unwrap();
        append_numbered(&log, 10 + i64::from(p), "flushed", 2);
        log.flush().unwrap();
        append_numbered(&log, 5, "unflushed", 1);
    }
    dir.checkpoint().unwrap();
    drop(dir); // no close: a crash
    for p in (0..partitions).step_by(3) {
        let partition = root.join(format!("t-{p}"));
        let last = last_log_file(&partition);
        let mut bytes = std::fs::read(&last).unwrap();
        bytes.extend_from_slice(&[0xAB; 37]);
        std::fs::write(&last, bytes).unwrap();
    }
}

fn last_log_file(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

/// Every file under `dir` (relative path -> bytes), but the `.lock` file (its content is the
/// lock holder's).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != ".lock") {
                let relative = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for (relative, bytes) in tree(from) {
        let path = to.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

#[test]
fn the_default_is_kafkas_two_recovery_threads_and_zero_is_refused() {
    let config = LogConfig::default();
    assert_eq!(config.num_recovery_threads_per_data_dir, 2);
    let config = LogConfig::from_pairs(["num.recovery.threads.per.data.dir=6"]).unwrap();
    assert_eq!(config.num_recovery_threads_per_data_dir, 6);
    let root = tempfile::tempdir().unwrap();
    let err = LogDir::open(root.path(), threads(LogConfig::default(), 0)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidConfig {
                key: "num.recovery.threads.per.data.dir",
                ..
            }
        ),
        "{err}"
    );
    // A broker setting: no topic overrides it.
    assert!(
        TopicConfigs::new()
            .set("t", "num.recovery.threads.per.data.dir", "4")
            .is_err()
    );
}

/// The parallel recovery leaves byte for byte the files the serial one leaves, and serves the
/// same records.
#[test]
fn a_parallel_recovery_leaves_the_same_files_as_the_serial_one() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = clock();
    let crashed = tmp.path().join("crashed");
    crashed_root(&crashed, 13, &clock);
    let mut results = Vec::new();
    for n in [1, 4] {
        let root = tmp.path().join(format!("threads-{n}"));
        copy_tree(&crashed, &root);
        let dir = LogDir::open_with(
            root.as_path(),
            threads(small_config(1024), n),
            options(&clock),
        )
        .unwrap();
        assert!(!dir.had_clean_shutdown());
        let mut served = BTreeMap::new();
        let mut cut = 0;
        for (tp, log) in dir.logs() {
            cut += log
                .load_report()
                .segments
                .iter()
                .filter_map(|s| s.recovery.as_ref())
                .filter(|r| r.truncated_bytes > 0)
                .count();
            served.insert(tp, values(&log));
        }
        assert_eq!(served.len(), 13);
        assert_eq!(
            cut, 5,
            "the torn tails of partitions 0, 3, 6, 9 and 12 were cut"
        );
        dir.close().unwrap();
        drop(dir);
        results.push((served, tree(&root)));
    }
    let (serial, parallel) = (&results[0], &results[1]);
    assert_eq!(serial.0, parallel.0, "the same records are served");
    assert_eq!(
        serial.1.keys().collect::<Vec<_>>(),
        parallel.1.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (path, bytes) in &serial.1 {
        assert!(&parallel.1[path] == bytes, "{} differs", path.display());
    }
    assert!(serial.1.contains_key(Path::new(CLEAN_SHUTDOWN_FILE)));
}

/// An I/O backend that holds the first `.log` open under `slow_dir` until released (at most
/// `WAIT`), and records whether a release came before that deadline.
#[derive(Debug)]
struct HoldPartition {
    slow_dir: PathBuf,
    state: Mutex<Hold>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Hold {
    /// A load is waiting in `opened`.
    held: bool,
    released: bool,
    /// Whether the held load was released before `WAIT` (`None`: it has not ended).
    released_in_time: Option<bool>,
}

const WAIT: Duration = Duration::from_secs(30);

impl HoldPartition {
    fn new(slow_dir: PathBuf) -> Self {
        Self {
            slow_dir,
            state: Mutex::new(Hold::default()),
            changed: Condvar::new(),
        }
    }

    /// Waits (at most `WAIT`) until a load of `slow_dir` is held; whether one is.
    fn wait_until_held(&self) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, WAIT, |s| !s.held)
            .unwrap();
        state.held
    }

    fn release(&self) {
        self.state.lock().unwrap().released = true;
        self.changed.notify_all();
    }

    fn released_in_time(&self) -> Option<bool> {
        self.state.lock().unwrap().released_in_time
    }
}

impl IoBackend for HoldPartition {
    fn opened(&self, path: &Path, file: &File, created: bool) -> FileId {
        if path.starts_with(&self.slow_dir) {
            let mut state = self.state.lock().unwrap();
            if !state.held {
                state.held = true;
                self.changed.notify_all();
                let (mut state, timeout) = self
                    .changed
                    .wait_timeout_while(state, WAIT, |s| !s.released)
                    .unwrap();
                state.released_in_time = Some(!timeout.timed_out());
            }
        }
        Direct.opened(path, file, created)
    }
    fn write_all_vectored_at(
        &self,
        id: FileId,
        file: &File,
        parts: &[&[u8]],
        position: u64,
    ) -> io::Result<()> {
        Direct.write_all_vectored_at(id, file, parts, position)
    }
    fn sync_data(&self, id: FileId, file: &File) -> io::Result<()> {
        Direct.sync_data(id, file)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        Direct.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        Direct.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Direct.sync_dir(dir)
    }
    fn before_index_flush(&self, path: &Path) -> io::Result<()> {
        Direct.before_index_flush(path)
    }
}

/// A partition recovered first is read and appended to while another partition's recovery is
/// still running: the open hands each log out as it finishes.
#[test]
fn a_recovered_partition_is_served_while_another_still_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clock = clock();
    let dir = LogDir::open_with(root, small_config(1024), options(&clock)).unwrap();
    for topic in ["fast", "slow"] {
        let log = dir.get_or_create(&TopicPartition::new(topic, 0)).unwrap();
        append_numbered(&log, 3, topic, 2);
    }
    drop(dir); // a crash: both are recovered at the next open
    let hold = Arc::new(HoldPartition::new(root.join("slow-0")));
    let options = LogOpenOptions {
        io: Io::new(hold.clone()),
        ..options(&clock)
    };
    let fast = TopicPartition::new("fast", 0);
    let mut order = Vec::new();
    let dir = LogDir::open_with_progress(
        root,
        threads(small_config(1024), 2),
        TopicConfigs::new(),
        options,
        |loaded| {
            order.push((loaded.topic_partition.clone(), loaded.done));
            if *loaded.topic_partition == fast {
                // `slow-0` is held in its recovery (on the other thread): this log is served
                // while it runs.
                assert!(hold.wait_until_held(), "slow-0's recovery runs meanwhile");
                let log = loaded.log.unwrap();
                assert_eq!(values(log).len(), 6);
                let appended = log.append(&numbered(T0 + 10, "while-slow-loads", 1));
                assert_eq!(appended.unwrap().first_offset, 6);
                assert_eq!(values(log).len(), 7);
                assert_eq!(hold.released_in_time(), None, "slow-0 is still recovering");
                hold.release();
            }
        },
    )
    .unwrap();
    assert_eq!(
        hold.released_in_time(),
        Some(true),
        "slow-0 waited for fast-0's reader"
    );
    assert_eq!(
        order,
        vec![(fast.clone(), 1), (TopicPartition::new("slow", 0), 2)]
    );
    assert_eq!(values(&dir.log(&fast).unwrap()).len(), 7);
    assert_eq!(
        values(&dir.log(&TopicPartition::new("slow", 0)).unwrap()).len(),
        6
    );
    dir.close().unwrap();
}

/// Every partition is reported once, with done/total counts and the bytes recovered, and the
/// opening thread emits one `partition loaded` event per partition.
#[test]
fn progress_is_reported_per_partition_with_counts_and_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clock = clock();
    crashed_root(root, 6, &clock);
    let mut reports = Vec::new();
    let events = events_during(|| {
        let dir = LogDir::open_with_progress(
            root,
            threads(small_config(1024), 3),
            TopicConfigs::new(),
            options(&clock),
            |loaded| {
                let log = loaded.log.unwrap();
                reports.push((
                    loaded.topic_partition.clone(),
                    loaded.done,
                    loaded.total,
                    loaded.segments,
                    loaded.bytes,
                    loaded.recovered_bytes,
                    loaded.recovered_bytes_total,
                    log.segment_count(),
                ));
            },
        )
        .unwrap();
        dir.close().unwrap();
    });
    assert_eq!(reports.len(), 6);
    let mut total_recovered = 0;
    for (i, (_, done, total, segments, bytes, recovered, recovered_total, count)) in
        reports.iter().enumerate()
    {
        assert_eq!((*done, *total), (i + 1, 6));
        assert_eq!(segments, count);
        assert!(*bytes > 0);
        assert!(
            *recovered > 0,
            "an unclean open recovers the unflushed tail"
        );
        total_recovered += recovered;
        assert_eq!(*recovered_total, total_recovered);
    }
    let mut partitions: Vec<_> = reports.iter().map(|r| r.0.partition).collect();
    partitions.sort();
    assert_eq!(partitions, (0..6).collect::<Vec<_>>());
    let loaded: Vec<_> = events
        .iter()
        .filter(|e| e.message == "partition loaded")
        .collect();
    assert_eq!(loaded.len(), 6);
    assert_eq!(loaded[5].field("done"), Some("6"));
    assert_eq!(loaded[5].field("total"), Some("6"));
    assert_eq!(
        loaded[5].field("recovered_bytes_total"),
        Some(total_recovered.to_string().as_str())
    );
    let start = events
        .iter()
        .find(|e| e.message == "loading the log dir's partitions")
        .unwrap();
    assert_eq!(start.field("threads"), Some("3"));
    assert_eq!(start.field("clean_shutdown"), Some("false"));
    assert!(events.iter().any(|e| e.message == "log dir loaded"));
}

/// A partition whose load fails is offline: the open succeeds, the others are served, the
/// failed one is named with its error, refused by `get_or_create`, its directory and checkpoint
/// entries kept, and no clean-shutdown marker vouches for it; a reopen after the damage is
/// repaired recovers it.
#[test]
fn a_partition_whose_load_fails_is_offline_and_the_others_are_served() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clock = clock();
    let dir = LogDir::open_with(root, small_config(1024), options(&clock)).unwrap();
    for topic in ["bad", "good"] {
        let log = dir.get_or_create(&TopicPartition::new(topic, 0)).unwrap();
        append_numbered(&log, 40, topic, 2);
    }
    dir.close().unwrap();
    drop(dir);
    let bad = TopicPartition::new("bad", 0);
    let bad_dir = root.join("bad-0");
    let checkpoint_before = std::fs::read_to_string(root.join(RECOVERY_POINT_CHECKPOINT)).unwrap();
    assert!(
        checkpoint_before.contains("bad 0 80"),
        "{checkpoint_before}"
    );
    // A directory where the first segment's offset index should be: the load cannot rebuild
    // it (a file a broker's disk failure or an operator's mistake can leave).
    let first = bad_dir.join(seglog_segment::file_name(
        0,
        seglog_segment::FileKind::INDEX,
    ));
    let saved = std::fs::read(&first).unwrap();
    std::fs::remove_file(&first).unwrap();
    std::fs::create_dir(&first).unwrap();
    let files_before = tree(&bad_dir);

    let mut offline_reports = Vec::new();
    let dir = LogDir::open_with_progress(
        root,
        threads(small_config(1024), 2),
        TopicConfigs::new(),
        options(&clock),
        |loaded| {
            if let Err(error) = loaded.log {
                offline_reports.push((loaded.topic_partition.clone(), error.to_string()));
            }
        },
    )
    .unwrap();
    assert_eq!(offline_reports.len(), 1);
    assert_eq!(offline_reports[0].0, bad);
    let offline = dir.offline_partitions();
    assert_eq!(offline.len(), 1);
    assert_eq!((&offline[0].0, &offline[0].1), (&bad, &bad_dir));
    assert!(
        offline[0]
            .2
            .to_string()
            .contains("00000000000000000000.index"),
        "the error names the file: {}",
        offline[0].2
    );
    assert!(dir.log(&bad).is_none());
    let good = dir.log(&TopicPartition::new("good", 0)).unwrap();
    assert_eq!(values(&good).len(), 80);
    good.append(&numbered(T0, "more", 1)).unwrap();
    let err = dir.get_or_create(&bad).unwrap_err();
    match &err {
        Error::PartitionOffline {
            topic,
            partition,
            dir,
            ..
        } => assert_eq!((topic.as_str(), *partition, dir), ("bad", 0, &bad_dir)),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("bad-0"), "{err}");
    assert!(std::error::Error::source(&err).is_some());
    dir.close().unwrap();
    drop((good, dir));
    // Its data is as it was (the failed load may have mapped the active segment's indexes at
    // their full size, as every load does, which the next load trims).
    let files_after = tree(&bad_dir);
    assert_eq!(
        files_after.keys().collect::<Vec<_>>(),
        files_before.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &files_before {
        if !path.to_string_lossy().ends_with("index") {
            assert!(&files_after[path] == bytes, "{} changed", path.display());
        }
    }
    assert!(
        !root.join(CLEAN_SHUTDOWN_FILE).exists(),
        "no marker vouches for the offline partition"
    );
    let checkpoint = std::fs::read_to_string(root.join(RECOVERY_POINT_CHECKPOINT)).unwrap();
    assert!(checkpoint.contains("bad 0 80"), "{checkpoint}");
    assert!(checkpoint.contains("good 0 81"), "{checkpoint}");

    // Repaired, the next open (unclean: no marker) loads it from its kept recovery point.
    std::fs::remove_dir(&first).unwrap();
    std::fs::write(&first, saved).unwrap();
    let dir = LogDir::open_with(root, small_config(1024), options(&clock)).unwrap();
    assert!(!dir.had_clean_shutdown());
    assert!(dir.offline_partitions().is_empty());
    let bad_log = dir.log(&bad).unwrap();
    assert_eq!(values(&bad_log).len(), 80);
    assert_eq!(bad_log.recovery_point(), 80);
    dir.close().unwrap();
    assert!(root.join(CLEAN_SHUTDOWN_FILE).exists());
}

/// A read-only open of a crashed root recovers its partitions in memory on the pool, serves
/// what a read-write open serves, and writes nothing.
#[test]
fn a_read_only_parallel_open_writes_nothing_and_serves_the_recovered_records() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = clock();
    let root = tmp.path().join("root");
    crashed_root(&root, 7, &clock);
    let before = tree(&root);
    let read_only_options = LogOpenOptions {
        read_only: true,
        ..options(&clock)
    };
    let dir = LogDir::open_with(
        root.as_path(),
        threads(small_config(1024), 3),
        read_only_options,
    )
    .unwrap();
    assert!(dir.offline_partitions().is_empty());
    let read_only: BTreeMap<_, _> = dir
        .logs()
        .into_iter()
        .map(|(tp, log)| (tp, values(&log)))
        .collect();
    drop(dir);
    assert!(tree(&root) == before, "a read-only open wrote");
    let dir = LogDir::open_with(
        root.as_path(),
        threads(small_config(1024), 3),
        options(&clock),
    )
    .unwrap();
    let written: BTreeMap<_, _> = dir
        .logs()
        .into_iter()
        .map(|(tp, log)| (tp, values(&log)))
        .collect();
    assert_eq!(read_only.len(), 7);
    assert_eq!(read_only, written);
    dir.close().unwrap();
}
