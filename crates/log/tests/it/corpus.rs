//! Every partition directory of `shared/kafka-corpus`: read-only in place, then a read-write copy
//! recovered, closed, reopened and read again identically.

use std::path::Path;

use seglog::{Isolation, Log, LogConfig, LogOpenOptions, ManualClock};

use crate::support::{corpus_root, partition_dirs, read_all};

fn config() -> LogConfig {
    // Old data: no timestamp window, no retention.
    LogConfig {
        retention_ms: -1,
        ..LogConfig::default()
    }
}

type Records = Vec<(i64, i64, Option<Vec<u8>>)>;

fn read_everything(log: &Log) -> Records {
    let records = read_all(log, log.log_start_offset(), Isolation::LogEnd);
    for pair in records.windows(2) {
        assert!(pair[0].0 < pair[1].0, "offsets increase");
    }
    records
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn expected_counts() -> Vec<(&'static str, usize)> {
    vec![
        ("dipendrasaini-kafka-learnning-series/invoice-1", 99_523),
        ("xpxwo100-bullShit/TEST-TOPIC-0", 21_211),
        ("DonaldY-kafka-2.7.1/__consumer_offsets-39", 5),
        ("DonaldY-kafka-2.7.1/__consumer_offsets-28", 2),
        ("rjmfernandes-flink-on-prem/_confluent-monitoring-0", 2_827),
        ("seanorth-kafka-server/some-topic-0", 9),
        ("berkayakcay-toy-node-log-collector/topic-logx-001-0", 17),
    ]
}

#[test]
fn every_corpus_dir_reads_in_place_read_only() {
    let Some(root) = corpus_root() else {
        return;
    };
    let counts = expected_counts();
    for dir in partition_dirs() {
        let log = Log::open_read_only(&dir, config())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let records = read_everything(&log);
        assert!(!records.is_empty(), "{}", dir.display());
        let rel = dir
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if let Some((_, n)) = counts.iter().find(|(name, _)| *name == rel) {
            assert_eq!(records.len(), *n, "{rel}");
        }
        assert_eq!(records.last().unwrap().0 + 1, log.log_end_offset(), "{rel}");
    }
}

#[test]
fn every_corpus_dir_recovers_closes_and_reopens_identically() {
    for dir in partition_dirs() {
        let name = dir.file_name().unwrap().to_owned();
        let tmp = tempfile::tempdir().unwrap();
        let copy = tmp.path().join(&name);
        copy_dir(&dir, &copy);
        let reference = read_everything(&Log::open_read_only(&dir, config()).unwrap());
        // The broker's time: its last record. On the wall clock, years later, Kafka's recovery
        // expires every producer (`loadFromSnapshot` drops the expired ones), and so does ours.
        let broker_now = reference.iter().map(|r| r.1).max().unwrap_or(0).max(0) + 1_000;
        let open = |dir: &std::path::Path| {
            Log::open_with(
                dir,
                config(),
                LogOpenOptions {
                    clock: std::sync::Arc::new(ManualClock::new(broker_now)),
                    ..LogOpenOptions::default()
                },
            )
        };

        let log = open(&copy).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(!log.load_report().had_clean_shutdown);
        assert_eq!(
            log.load_report().truncations().count(),
            0,
            "{}",
            dir.display()
        );
        assert_eq!(read_everything(&log), reference, "{}", dir.display());
        log.close().unwrap();
        drop(log);

        let log = open(&copy).unwrap();
        assert!(log.load_report().had_clean_shutdown);
        assert_eq!(log.load_report().recovered().count(), 0);
        assert_eq!(read_everything(&log), reference, "{}", dir.display());
        // Non-segment files are untouched; the broker's producer snapshots that are kept hold
        // the same entries (our state, rebuilt, gives the same set).
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let fname = entry.file_name().to_string_lossy().into_owned();
            if fname.ends_with(".snapshot") && copy.join(&fname).exists() {
                let set = |p: &std::path::Path| {
                    let s = seglog::ProducerSnapshot::read(p).unwrap();
                    s.entries
                        .into_iter()
                        .collect::<std::collections::BTreeSet<_>>()
                };
                assert_eq!(set(&entry.path()), set(&copy.join(&fname)), "{fname}");
                continue;
            }
            let untouched = fname.ends_with(".checkpoint")
                || fname == "leader-epoch-checkpoint"
                || fname == "partition.metadata"
                || fname == "quorum-state";
            if untouched {
                assert_eq!(
                    std::fs::read(entry.path()).unwrap(),
                    std::fs::read(copy.join(&fname)).unwrap(),
                    "{fname}"
                );
            }
        }
        log.close().unwrap();
    }
}
