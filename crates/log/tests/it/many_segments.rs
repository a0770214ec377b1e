//! Logs of many segments under `ulimit -n 1024` (issue 12, bug 5): open files and maps are
//! bounded by the segment cache, not by the number of segments.
//!
//! Each test re-executes this test binary for itself with `SEGLOG_FD_LIMIT_CHILD` set; the
//! child lowers its own `RLIMIT_NOFILE` to 1024 (`setrlimit`) before doing anything, so the
//! limit holds for the whole run and cannot leak into other tests. Default scale: a log of
//! 20,000 segments, and a `LogDir` of 1,000 partitions × 3 segments (1,000 active segments
//! beside a 1,024-descriptor limit). The full scale of the issue (100,000 segments; 1,000 ×
//! 100) runs with `SEGLOG_MANY_SEGMENTS=full` (ARCHITECTURE.md, Testing).

use std::path::Path;
use std::process::Command;

use seglog::{BatchBuilder, Isolation, Log, LogConfig, LogDir, LogOpenOptions, TopicPartition};
use seglog_segment::FileKind;

const CHILD: &str = "SEGLOG_FD_LIMIT_CHILD";
const FD_LIMIT: u64 = 1024;
const T0: i64 = 1_700_000_000_000;

fn full_scale() -> bool {
    std::env::var("SEGLOG_MANY_SEGMENTS").is_ok_and(|v| v == "full")
}

/// Runs `body` in a child process limited to `FD_LIMIT` descriptors; the parent fails if the
/// child fails.
fn under_fd_limit(test_name: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        let limit = rustix::process::Rlimit {
            current: Some(FD_LIMIT),
            maximum: Some(FD_LIMIT),
        };
        rustix::process::setrlimit(rustix::process::Resource::Nofile, limit).unwrap();
        body();
        return;
    }
    let status = Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the child under ulimit -n {FD_LIMIT} failed: {status}"
    );
}

/// Descriptors open in this process now.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Index files mapped by this process now (distinct `.index` / `.timeindex` paths of
/// `/proc/self/maps`; one map can show as several lines after an `madvise`).
fn index_maps() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let paths: std::collections::BTreeSet<&str> = maps
        .lines()
        .filter(|l| l.ends_with(".index") || l.ends_with(".timeindex"))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    paths.len()
}

/// The one-record batch stored at `offset`.
fn record(offset: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new(offset);
    let value = format!("value-{offset}");
    builder.append(T0 + offset, None, Some(value.as_bytes()), &[]);
    builder.build().unwrap().to_vec()
}

/// Writes `count` sealed segments of one record each (bases `0..count`) into `dir`, as a
/// cleanly closed log leaves them: the batch in the `.log`, no offset-index entry (the
/// segment is smaller than the index interval), one time-index entry. Plain file writes,
/// no fsync: the tests are about descriptors, not durability.
fn write_segments(dir: &Path, count: i64) {
    std::fs::create_dir_all(dir).unwrap();
    for base in 0..count {
        let name = |kind| dir.join(seglog_segment::file_name(base, kind));
        std::fs::write(name(FileKind::LOG), record(base)).unwrap();
        std::fs::write(name(FileKind::INDEX), []).unwrap();
        let mut entry = (T0 + base).to_be_bytes().to_vec();
        entry.extend(0i32.to_be_bytes());
        std::fs::write(name(FileKind::TIME_INDEX), entry).unwrap();
    }
}

fn config(cache_capacity: i64) -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        segment_cache_capacity: cache_capacity,
        ..LogConfig::default()
    }
}

/// The value of the record at `offset`, read through the log.
fn value_at(log: &Log, offset: i64) -> Vec<u8> {
    let fetched = log.read(offset, 1, Isolation::LogEnd, true).unwrap();
    let bytes = fetched.slice.read_to_vec().unwrap();
    let batch = seglog::Batches::new(&bytes[..], 0).next().unwrap().unwrap();
    let record = batch.records(1 << 20).next().unwrap().unwrap();
    record.value.unwrap().to_vec()
}

fn expected(offset: i64) -> Vec<u8> {
    format!("value-{offset}").into_bytes()
}

#[test]
fn a_log_of_many_segments_opens_appends_rolls_reads_and_recovers_under_ulimit_1024() {
    under_fd_limit(
        "many_segments::a_log_of_many_segments_opens_appends_rolls_reads_and_recovers_under_ulimit_1024",
        || {
            let segments: i64 = if full_scale() { 100_000 } else { 20_000 };
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("many-0");
            write_segments(&dir, segments);
            // As after a clean shutdown (the partition directory is its own state root here),
            // with the leader-epoch checkpoint seglog writes (no epochs: the batches carry
            // none); without it the first open rebuilds the cache from every batch, once.
            std::fs::write(dir.join(seglog::CLEAN_SHUTDOWN_FILE), []).unwrap();
            std::fs::write(dir.join("leader-epoch-checkpoint"), "0\n0\n").unwrap();
            let baseline = open_fds();
            let capacity = 64;

            // A clean open trusting the shutdown touches the last segment, and the first (the
            // high watermark starts at the log start and needs its position): no other
            // segment is opened.
            let trusting = LogOpenOptions {
                trust_clean_shutdown: true,
                ..LogOpenOptions::default()
            };
            let log = Log::open_with(&dir, config(capacity), trusting.clone()).unwrap();
            assert!(log.load_report().had_clean_shutdown);
            assert_eq!(log.segment_count(), segments as usize);
            assert_eq!(log.log_end_offset(), segments);
            assert_eq!(index_maps(), 4, "index files mapped after a clean open");
            let bound = baseline + capacity as usize + 8;
            assert!(open_fds() <= bound, "{} fds open after open", open_fds());

            // Appends that roll (1 KiB segments), then reads of any offset.
            for i in 0..40 {
                let offset = segments + i;
                let info = log.append(&record(offset)).unwrap();
                assert_eq!(info.first_offset, offset);
            }
            assert!(log.segment_count() > segments as usize + 1, "no roll");
            let step = (segments / 200) as usize;
            for offset in (0..segments + 40)
                .step_by(step)
                .chain([segments - 1, segments + 39])
            {
                assert_eq!(value_at(&log, offset), expected(offset), "offset {offset}");
            }
            assert!(open_fds() <= bound, "{} fds open after reads", open_fds());
            let maps = index_maps();
            assert!(maps <= 2 * (capacity as usize + 1), "{maps} index maps");
            // Sizes of segments never opened come from the listing: retention and `info`
            // see every byte.
            let listed: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
            let on_disk: u64 = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .map(|p| std::fs::metadata(p).unwrap().len())
                .sum();
            assert_eq!(listed, on_disk);
            assert!(open_fds() <= bound);

            // An unclean shutdown, then a recovery of every segment.
            drop(log);
            let options = LogOpenOptions {
                recover_all: true,
                ..LogOpenOptions::default()
            };
            let log = Log::open_with(&dir, config(capacity), options).unwrap();
            assert_eq!(log.load_report().recovered().count(), log.segment_count());
            assert_eq!(log.log_end_offset(), segments + 40);
            assert!(
                open_fds() <= bound,
                "{} fds open after recovery",
                open_fds()
            );
            for offset in [0, segments / 2, segments + 20, segments + 39] {
                assert_eq!(value_at(&log, offset), expected(offset), "offset {offset}");
            }
            // No close: it would flush (fsync) all 20,000 recovered segments.
            drop(log);

            // Read-only (every segment checked: no clean shutdown): the same bound.
            let log = Log::open_read_only(&dir, config(capacity)).unwrap();
            assert_eq!(value_at(&log, segments / 3), expected(segments / 3));
            assert_eq!(log.log_end_offset(), segments + 40);
            assert!(open_fds() <= bound, "{} fds open read-only", open_fds());
        },
    );
}

#[test]
fn a_log_dir_of_a_thousand_partitions_works_under_ulimit_1024() {
    under_fd_limit(
        "many_segments::a_log_dir_of_a_thousand_partitions_works_under_ulimit_1024",
        || {
            let partitions: i32 = 1_000;
            let per_partition: i64 = if full_scale() { 100 } else { 3 };
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path();
            for p in 0..partitions {
                write_segments(&root.join(format!("t-{p}")), per_partition);
            }
            let baseline = open_fds();
            // 1,000 active segments hold one `.log` descriptor each; the cache's share of the
            // limit is what is left.
            let capacity = 8;
            let dir = LogDir::open(root, config(capacity)).unwrap();
            assert_eq!(dir.segment_cache().capacity(), capacity as usize);
            let bound = baseline + partitions as usize + capacity as usize + 8;
            assert!(open_fds() <= bound, "{} fds open after open", open_fds());
            let logs: Vec<_> = (0..partitions)
                .map(|p| dir.log(&TopicPartition::new("t", p)).unwrap())
                .collect();
            for log in &logs {
                assert_eq!(log.log_end_offset(), per_partition);
                log.append(&record(per_partition)).unwrap();
                log.roll().unwrap();
                log.append(&record(per_partition + 1)).unwrap();
            }
            for log in &logs {
                for offset in [0, per_partition / 2, per_partition + 1] {
                    assert_eq!(value_at(log, offset), expected(offset), "offset {offset}");
                }
            }
            assert!(open_fds() <= bound, "{} fds open after reads", open_fds());
            // An unclean shutdown (no close), then a recovery of every segment on 4 threads
            // (issue 28): the descriptors stay bounded while the partitions recover in
            // parallel, checked as each one finishes.
            drop(logs);
            drop(dir);
            let options = LogOpenOptions {
                recover_all: true,
                ..LogOpenOptions::default()
            };
            let threads = 4;
            let config = LogConfig {
                num_recovery_threads_per_data_dir: threads,
                ..config(capacity)
            };
            // Each recovery thread may hold a few descriptors of the partition it loads
            // beside the cache's (its listing, a checkpoint being read).
            let loading_bound = bound + 4 * threads as usize;
            let mut peak = 0;
            let dir = LogDir::open_with_progress(
                root,
                config,
                seglog::TopicConfigs::new(),
                options,
                |loaded| {
                    assert!(loaded.log.is_ok());
                    peak = peak.max(open_fds());
                },
            )
            .unwrap();
            assert!(
                peak <= loading_bound,
                "{peak} fds open during the parallel recovery"
            );
            for p in [0, 499, 999] {
                let log = dir.log(&TopicPartition::new("t", p)).unwrap();
                assert_eq!(log.log_end_offset(), per_partition + 2);
                assert_eq!(
                    value_at(&log, per_partition + 1),
                    expected(per_partition + 1)
                );
                assert_eq!(value_at(&log, 0), expected(0));
            }
            assert!(
                open_fds() <= bound,
                "{} fds open after recovery",
                open_fds()
            );
            dir.close().unwrap();
        },
    );
}
