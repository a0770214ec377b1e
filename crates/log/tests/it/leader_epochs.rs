//! The leader-epoch cache of a log: leader and follower appends, truncation from both ends,
//! reopen and crash, a model, the corpus and the Kafka 4.4 fixtures.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use seglog::{
    BatchBuilder, Durability, EpochEndOffset, Error, LEADER_EPOCH_CHECKPOINT, LeaderEpochCache,
    LeaderEpochCheckpointFile, LeaderEpochSource, Log, LogConfig,
};

use crate::support::{T0, clock, corpus_root, fresh, numbered, open, partition_dirs, small_config};

fn checkpoint_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(LEADER_EPOCH_CHECKPOINT)).unwrap()
}

/// A follower batch at `base` of `count` records written in `epoch`.
fn follower_batch(base: i64, count: usize, epoch: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base).partition_leader_epoch(epoch);
    for i in 0..count {
        builder.append(T0 + i as i64, None, Some(b"v"), &[]);
    }
    builder.build().unwrap().to_vec()
}

/// One legacy v1 message (Kafka's `LegacyRecord.write`): offset, size, CRC-32 over
/// magic..end, magic 1, no attributes, a timestamp, no key.
pub(crate) fn legacy_v1_message(offset: i64, value: &[u8]) -> Vec<u8> {
    let mut body = vec![1u8, 0];
    body.extend_from_slice(&T0.to_be_bytes());
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let mut crc = !0u32;
    for byte in &body {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(&(!crc).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn leader_append(log: &Log, epoch: i32, records: usize) {
    log.append_as_leader(&numbered(T0, "r", records), epoch, Durability::PageCache)
        .unwrap();
}

#[test]
fn leader_appends_stamp_the_epoch_and_record_its_start() {
    let (dir, _clock, log) = fresh(small_config(1 << 20));
    leader_append(&log, 0, 3);
    leader_append(&log, 0, 2);
    leader_append(&log, 2, 4);
    assert_eq!(log.leader_epochs(), [(0, 0), (2, 5)]);
    assert_eq!(log.latest_epoch(), Some(2));
    assert_eq!(checkpoint_text(dir.path()), "0\n2\n0 0\n2 5\n");
    // Every written batch carries its epoch, and its CRC is still valid.
    let fetched = log
        .read(0, 1 << 20, seglog::Isolation::LogEnd, true)
        .unwrap();
    let bytes = fetched.slice.read_to_vec().unwrap();
    let epochs: Vec<(i64, i32)> = seglog::Batches::new(&bytes, 0)
        .map(|b| {
            let b = b.unwrap();
            b.ensure_valid().unwrap();
            (
                b.header().base_offset.unwrap(),
                b.header().partition_leader_epoch,
            )
        })
        .collect();
    assert_eq!(epochs, [(0, 0), (3, 0), (5, 2)]);
    // OffsetsForLeaderEpoch.
    assert_eq!(
        log.end_offset_for_epoch(0),
        Some(EpochEndOffset {
            epoch: 0,
            end_offset: 5
        })
    );
    assert_eq!(
        log.end_offset_for_epoch(1),
        Some(EpochEndOffset {
            epoch: 0,
            end_offset: 5
        })
    );
    assert_eq!(
        log.end_offset_for_epoch(2),
        Some(EpochEndOffset {
            epoch: 2,
            end_offset: 9
        })
    );
    assert_eq!(log.end_offset_for_epoch(3), None);
    assert_eq!(log.end_offset_for_epoch(-1), None);
}

#[test]
fn plain_appends_keep_the_batch_epoch_and_negative_epochs_are_refused() {
    let (dir, _clock, log) = fresh(small_config(1 << 20));
    log.append(&numbered(T0, "r", 2)).unwrap();
    assert!(log.leader_epochs().is_empty());
    assert_eq!(log.latest_epoch(), None);
    assert_eq!(checkpoint_text(dir.path()), "0\n0\n");
    let e = log
        .append_as_leader(&numbered(T0, "r", 1), -1, Durability::PageCache)
        .unwrap_err();
    assert!(matches!(
        e,
        Error::InvalidAppend {
            kind: seglog::AppendErrorKind::InvalidLeaderEpoch { epoch: -1 }
        }
    ));
    assert_eq!(log.log_end_offset(), 2);
    // A client batch that carries an epoch is recorded as it is.
    log.append(&follower_batch(0, 1, 4)).unwrap();
    assert_eq!(log.leader_epochs(), [(4, 2)]);
    assert!(matches!(
        log.assign_epoch_start_offset(-1, 0),
        Err(Error::InvalidEpochEntry { .. })
    ));
}

#[test]
fn follower_appends_learn_epochs_and_legacy_batches_clear_them() {
    let (dir, _clock, log) = fresh(small_config(1 << 20));
    log.append_as_follower(&follower_batch(0, 2, 1)).unwrap();
    let mut two = follower_batch(2, 1, 1);
    two.extend(follower_batch(3, 2, 3));
    log.append_as_follower(&two).unwrap();
    assert_eq!(log.leader_epochs(), [(1, 0), (3, 3)]);
    // A follower batch of an older epoch truncates the newer entries (Kafka's assign).
    log.append_as_follower(&follower_batch(5, 1, 2)).unwrap();
    assert_eq!(log.leader_epochs(), [(1, 0), (2, 5)]);
    // A legacy (v1) batch clears the cache, as Kafka does on a format downgrade.
    log.append_as_follower(&legacy_v1_message(6, b"x")).unwrap();
    assert!(log.leader_epochs().is_empty());
    assert_eq!(checkpoint_text(dir.path()), "0\n0\n");
}

#[test]
fn truncation_trims_the_cache_from_the_end() {
    let (dir, _clock, log) = fresh(small_config(1 << 20));
    leader_append(&log, 0, 3);
    leader_append(&log, 1, 3);
    leader_append(&log, 2, 3);
    assert_eq!(log.leader_epochs(), [(0, 0), (1, 3), (2, 6)]);
    log.truncate_to(6).unwrap();
    assert_eq!(log.leader_epochs(), [(0, 0), (1, 3)]);
    assert_eq!(checkpoint_text(dir.path()), "0\n2\n0 0\n1 3\n");
    // A truncation at the log end still drops an epoch that starts there (Kafka: a leader
    // that recorded its epoch but wrote nothing in it).
    log.assign_epoch_start_offset(5, 6).unwrap();
    assert_eq!(log.leader_epochs(), [(0, 0), (1, 3), (5, 6)]);
    log.truncate_to(6).unwrap();
    assert_eq!(log.leader_epochs(), [(0, 0), (1, 3)]);
    // Below the first segment: the log is emptied and so is the cache.
    log.truncate_fully_and_start_at(100).unwrap();
    assert!(log.leader_epochs().is_empty());
    assert_eq!(checkpoint_text(dir.path()), "0\n0\n");
}

#[test]
fn log_start_moves_trim_the_cache_from_the_start() {
    let (dir, _clock, log) = fresh(small_config(300));
    for epoch in 0..4 {
        leader_append(&log, epoch, 5);
        leader_append(&log, epoch, 5);
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert_eq!(log.leader_epochs(), [(0, 0), (1, 10), (2, 20), (3, 30)]);
    log.delete_records_before(15).unwrap();
    assert_eq!(log.leader_epochs(), [(1, 15), (2, 20), (3, 30)]);
    assert_eq!(checkpoint_text(dir.path()), "0\n3\n1 15\n2 20\n3 30\n");
    // Retention removes the segments below the log start and moves it to a segment base.
    let report = log.delete_old_segments().unwrap();
    assert!(!report.deleted.is_empty());
    let start = log.log_start_offset();
    let expected_first = if start < 20 { (1, start) } else { (2, start) };
    assert_eq!(log.leader_epochs()[0], expected_first);
}

#[test]
fn the_cache_survives_a_clean_reopen_and_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(400), &clock);
    for epoch in [0, 0, 3, 3, 7] {
        leader_append(&log, epoch, 4);
    }
    let epochs = log.leader_epochs();
    assert_eq!(epochs, [(0, 0), (3, 8), (7, 16)]);
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small_config(400), &clock);
    assert_eq!(
        log.load_report().leader_epochs,
        LeaderEpochSource::Checkpoint
    );
    assert_eq!(log.leader_epochs(), epochs);
    leader_append(&log, 8, 2);
    drop(log); // crash
    let log = open(dir.path(), small_config(400), &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(log.leader_epochs(), [(0, 0), (3, 8), (7, 16), (8, 20)]);
    drop(log);

    // A crash that lost the checkpoint write of the last epoch: recovery finds it in the
    // batches of the recovered range.
    let file = LeaderEpochCheckpointFile::in_dir(dir.path());
    std::fs::write(file.path(), "0\n2\n0 0\n3 8\n").unwrap();
    let log = open(dir.path(), small_config(400), &clock);
    assert_eq!(log.leader_epochs(), [(0, 0), (3, 8), (7, 16), (8, 20)]);
    drop(log);

    // A stale checkpoint entry beyond the log end (the data it started was lost) goes.
    std::fs::write(file.path(), "0\n5\n0 0\n3 8\n7 16\n8 20\n9 22\n").unwrap();
    let log = open(dir.path(), small_config(400), &clock);
    assert_eq!(log.log_end_offset(), 22);
    assert_eq!(log.leader_epochs(), [(0, 0), (3, 8), (7, 16), (8, 20)]);
    assert_eq!(checkpoint_text(dir.path()), "0\n4\n0 0\n3 8\n7 16\n8 20\n");
}

#[test]
fn a_missing_or_corrupt_checkpoint_is_rebuilt_from_every_segment() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(400), &clock);
    for epoch in [1, 1, 2, 4, 4, 4] {
        leader_append(&log, epoch, 4);
    }
    let epochs = log.leader_epochs();
    log.close().unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
    let log = open(dir.path(), small_config(400), &clock);
    assert!(log.load_report().had_clean_shutdown);
    assert_eq!(log.load_report().leader_epochs, LeaderEpochSource::Rebuilt);
    assert_eq!(log.leader_epochs(), epochs);
    log.close().unwrap();
    drop(log);
    std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT), "0\n9\n1 0\n").unwrap();
    let log = open(dir.path(), small_config(400), &clock);
    let LeaderEpochSource::RebuiltAfterProblem(problem) = &log.load_report().leader_epochs else {
        panic!("{:?}", log.load_report().leader_epochs);
    };
    assert_eq!(problem.line, Some(2));
    assert_eq!(log.leader_epochs(), epochs);
    assert_eq!(checkpoint_text(dir.path()), "0\n3\n1 0\n2 8\n4 12\n");
    log.close().unwrap();
}

#[test]
fn read_only_opens_rebuild_in_memory_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), small_config(400), &clock);
    leader_append(&log, 3, 4);
    log.close().unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
    let log = Log::open_read_only(dir.path(), small_config(400)).unwrap();
    assert_eq!(log.leader_epochs(), [(3, 0)]);
    assert!(!dir.path().join(LEADER_EPOCH_CHECKPOINT).exists());
}

/// The broker-made fixtures of `tests/fixtures/kafka-4.4`.
fn fixture_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kafka-4.4");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join(LEADER_EPOCH_CHECKPOINT).is_file())
        .collect();
    out.sort();
    out
}

/// What Kafka's loader makes of the broker's checkpoint: the file, truncated from the end at
/// the log end and from the start at the log start (`LogLoader.load`).
fn broker_cache_after_load(dir: &Path, log: &Log) -> Vec<(i32, i64)> {
    let entries = LeaderEpochCheckpointFile::in_dir(dir)
        .read()
        .unwrap()
        .unwrap();
    let mut cache = LeaderEpochCache::from_entries(entries).unwrap();
    cache.truncate_from_end(log.log_end_offset());
    cache.truncate_from_start(log.log_start_offset());
    cache
        .entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect()
}

/// Opens a read-only copy of `dir` without its checkpoint: the cache rebuilt from the batches.
fn rebuilt_from_batches(dir: &Path) -> (tempfile::TempDir, Log) {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join(dir.file_name().unwrap());
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != LEADER_EPOCH_CHECKPOINT {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
    }
    let config = LogConfig {
        retention_ms: -1,
        ..LogConfig::default()
    };
    let log = Log::open_read_only(&copy, config).unwrap();
    assert_eq!(log.load_report().leader_epochs, LeaderEpochSource::Rebuilt);
    (tmp, log)
}

#[test]
fn kafka_4_4_fixtures_rebuild_the_brokers_checkpoint() {
    let dirs = fixture_dirs();
    assert!(dirs.len() >= 10, "{dirs:?}");
    for dir in dirs {
        let (_tmp, log) = rebuilt_from_batches(&dir);
        assert_eq!(
            log.leader_epochs(),
            broker_cache_after_load(&dir, &log),
            "{}",
            dir.display()
        );
        // Read in place, the broker's checkpoint is taken as it is.
        let in_place = Log::open_read_only(&dir, LogConfig::default()).unwrap();
        assert_eq!(
            in_place.load_report().leader_epochs,
            LeaderEpochSource::Checkpoint
        );
        assert_eq!(in_place.leader_epochs(), log.leader_epochs());
    }
}

#[test]
fn corpus_dirs_rebuild_the_brokers_checkpoint() {
    if corpus_root().is_none() {
        return;
    }
    let mut compared = 0;
    for dir in partition_dirs() {
        if !dir.join(LEADER_EPOCH_CHECKPOINT).is_file() {
            continue;
        }
        let (_tmp, log) = rebuilt_from_batches(&dir);
        assert_eq!(
            log.leader_epochs(),
            broker_cache_after_load(&dir, &log),
            "{}",
            dir.display()
        );
        compared += 1;
    }
    assert!(compared >= 25, "{compared}");
}

/// The model: Kafka's rules on a list of (epoch, start offset).
#[derive(Debug, Clone, Default)]
struct Model(Vec<(i32, i64)>);

impl Model {
    /// Recovery (`LogSegment.recover`): a batch of an epoch newer than the latest starts it.
    fn learn(&mut self, epoch: i32, base: i64) {
        if self.0.last().is_none_or(|&(e, _)| epoch > e) {
            self.assign(epoch, base);
        }
    }

    fn assign(&mut self, epoch: i32, start: i64) {
        if let Some(&(e, s)) = self.0.last()
            && e == epoch
            && start >= s
        {
            return;
        }
        while let Some(&(e, s)) = self.0.last() {
            if e >= epoch || s >= start {
                self.0.pop();
            } else {
                break;
            }
        }
        self.0.push((epoch, start));
    }

    fn truncate_from_end(&mut self, end: i64) {
        self.0.retain(|&(_, s)| s < end);
    }

    fn truncate_from_start(&mut self, start: i64) {
        let last_removed = self.0.iter().rev().find(|&&(_, s)| s <= start).copied();
        self.0.retain(|&(_, s)| s > start);
        if let Some((e, _)) = last_removed {
            self.0.insert(0, (e, start));
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Append { epoch_bump: i32, records: usize },
    Follower { epoch_bump: i32, records: usize },
    Truncate { back: i64 },
    DeleteRecords { forward: i64 },
    Reopen { crash: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3i32, 1..5usize).prop_map(|(epoch_bump, records)| Op::Append { epoch_bump, records }),
        1 => (0..3i32, 1..4usize).prop_map(|(epoch_bump, records)| Op::Follower { epoch_bump, records }),
        1 => (0..8i64).prop_map(|back| Op::Truncate { back }),
        1 => (0..6i64).prop_map(|forward| Op::DeleteRecords { forward }),
        1 => any::<bool>().prop_map(|crash| Op::Reopen { crash }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_cache_follows_a_model_of_kafkas_rules(ops in proptest::collection::vec(op(), 1..30)) {
        let dir = tempfile::tempdir().unwrap();
        let clock = clock();
        let config = small_config(500);
        let mut log = open(dir.path(), config.clone(), &clock);
        let mut model = Model::default();
        // The batches in the log: (base, last offset, epoch).
        let mut batches: Vec<(i64, i64, i32)> = Vec::new();
        let mut epoch = 0;
        for op in ops {
            match op {
                Op::Append { epoch_bump, records } => {
                    epoch += epoch_bump;
                    let start = log.log_end_offset();
                    leader_append(&log, epoch, records);
                    model.assign(epoch, start);
                    batches.push((start, log.log_end_offset() - 1, epoch));
                }
                Op::Follower { epoch_bump, records } => {
                    // Epochs of a follower's fetches do not go back (a lower one is a unit
                    // test: recovery would not replay it the same way, in Kafka either).
                    epoch += epoch_bump;
                    let start = log.log_end_offset();
                    log.append_as_follower(&follower_batch(start, records, epoch)).unwrap();
                    model.assign(epoch, start);
                    batches.push((start, log.log_end_offset() - 1, epoch));
                }
                Op::Truncate { back } => {
                    let target = (log.log_end_offset() - back).max(log.log_start_offset());
                    if target < log.log_end_offset() {
                        // Truncation is at batch granularity: the log end may land lower.
                        log.truncate_to(target).unwrap();
                        model.truncate_from_end(log.log_end_offset());
                        batches.retain(|&(_, last, _)| last < target);
                    }
                }
                Op::DeleteRecords { forward } => {
                    log.set_high_watermark(log.log_end_offset()).unwrap();
                    let target = (log.log_start_offset() + forward).min(log.log_end_offset());
                    let before = log.log_start_offset();
                    log.delete_records_before(target).unwrap();
                    if target > before {
                        model.truncate_from_start(target);
                    }
                }
                Op::Reopen { crash } => {
                    if !crash {
                        log.close().unwrap();
                    }
                    drop(log);
                    log = open(dir.path(), config.clone(), &clock);
                    // Recovery learns the epochs of the recovered segments' batches.
                    if let Some(from) = log.load_report().recovered().min() {
                        for &(base, _, e) in batches.iter().filter(|b| b.0 >= from) {
                            model.learn(e, base);
                        }
                    }
                    // Kafka's loader rules (a truncation inside a batch leaves a log end
                    // that a reopen moves back to the last batch).
                    model.truncate_from_end(log.log_end_offset());
                    model.truncate_from_start(log.log_start_offset());
                }
            }
            prop_assert_eq!(log.leader_epochs(), model.0.clone());
            prop_assert_eq!(
                LeaderEpochCheckpointFile::in_dir(dir.path()).read().unwrap().unwrap(),
                log.leader_epoch_cache().entries()
            );
        }
    }
}

#[test]
fn a_failed_checkpoint_write_poisons_the_log() {
    let (dir, faults, log) = crate::support::fresh_with_faults(small_config(1 << 20));
    leader_append(&log, 0, 2);
    // The next new epoch rewrites the checkpoint: its directory fsync fails.
    faults.fail_nth_dir_sync(1, seglog_faults::FaultKind::Eio);
    assert!(
        log.append_as_leader(&numbered(T0, "r", 1), 1, Durability::PageCache)
            .is_err()
    );
    assert!(matches!(
        log.append(&numbered(T0, "r", 1)),
        Err(Error::Poisoned { .. })
    ));
    drop(log);
    // The reopen recovers the batch and its epoch from the unflushed range.
    faults.clear();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    assert_eq!(log.leader_epochs(), [(0, 0), (1, 2)]);
}

/// ListOffsets EARLIEST and LATEST carry leader epochs as Kafka 4.4's
/// `UnifiedLog.fetchOffsetByTimestamp` gives them: the earliest entry's epoch when that entry
/// starts at or below the log start (else none), and the latest epoch. Found by the
/// differential histories (issue #25: seglog answered none for both).
#[test]
fn earliest_and_latest_lookups_carry_kafkas_leader_epochs() {
    use seglog::ListOffsets;
    let (_dir, _clock, log) = fresh(LogConfig::default());
    let lookup = |spec| log.offset_for_timestamp(spec).unwrap().unwrap();
    // An empty cache: no epoch.
    assert_eq!(lookup(ListOffsets::Earliest).leader_epoch, None);
    assert_eq!(lookup(ListOffsets::Latest).leader_epoch, None);
    log.append_as_follower(&follower_batch(0, 3, 2)).unwrap();
    log.append_as_follower(&follower_batch(3, 2, 5)).unwrap();
    let earliest = lookup(ListOffsets::Earliest);
    assert_eq!((earliest.offset, earliest.leader_epoch), (0, Some(2)));
    let latest = lookup(ListOffsets::Latest);
    assert_eq!((latest.offset, latest.leader_epoch), (5, Some(5)));
    assert_eq!(latest.timestamp_ms, -1);
    // The earliest entry starting above the log start: no epoch for EARLIEST.
    let (_dir, _clock, log) = fresh(LogConfig::default());
    log.append_as_follower(&follower_batch(0, 3, -1)).unwrap();
    log.append_as_follower(&follower_batch(3, 2, 4)).unwrap();
    let earliest = log
        .offset_for_timestamp(ListOffsets::Earliest)
        .unwrap()
        .unwrap();
    assert_eq!((earliest.offset, earliest.leader_epoch), (0, None));
}
