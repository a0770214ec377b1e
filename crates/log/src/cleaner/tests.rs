//! The cleaner against a model: after every round a reader sees the latest value of every key
//! (tombstoned keys: none, once their horizon passed), at the offsets they were written.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use seglog_records::{BatchBuilder, Batches, ControlRecordType, EndTransactionMarker};

use crate::{
    CleanupPolicy, Error, Isolation, Log, LogConfig, LogOpenOptions as OpenOptions, ManualClock,
};

const T0: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 64,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        cleanup_policy: CleanupPolicy::Compact,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, config: LogConfig, clock: &Arc<ManualClock>) -> Log {
    Log::open_with(
        dir,
        config,
        OpenOptions {
            clock: clock.clone(),
            high_watermark: crate::HighWatermarkPolicy::LogEnd,
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

fn put(log: &Log, key: &str, value: Option<&str>) -> i64 {
    let mut builder = BatchBuilder::new(0);
    builder.append(T0, Some(key.as_bytes()), value.map(str::as_bytes), &[]);
    log.append(&builder.build().unwrap()).unwrap().first_offset
}

/// (offset, key, value) of every record a reader sees.
fn records(log: &Log) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    loop {
        let data = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        if data.slice.is_empty() {
            return out;
        }
        let bytes = data.slice.read_to_vec().unwrap();
        let mut advanced = false;
        for batch in Batches::new(&bytes, 0) {
            let batch = batch.unwrap();
            batch.ensure_valid().unwrap();
            if batch.header().is_control {
                next = next.max(batch.header().last_offset + 1);
                advanced = true;
                continue;
            }
            for record in batch.records(1 << 20) {
                let record = record.unwrap();
                if record.offset >= next {
                    let text =
                        |b: Option<bytes::Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
                    out.push((record.offset, text(record.key).unwrap(), text(record.value)));
                }
            }
            next = next.max(batch.header().last_offset + 1);
            advanced = true;
        }
        if !advanced {
            return out;
        }
    }
}

/// key → (offset, value) of the latest record per key.
fn latest(records: &[(i64, String, Option<String>)]) -> BTreeMap<String, (i64, Option<String>)> {
    records
        .iter()
        .map(|(o, k, v)| (k.clone(), (*o, v.clone())))
        .collect()
}

fn keyed_log(dir: &Path, clock: &Arc<ManualClock>) -> Log {
    let log = open(dir, config(), clock);
    for round in 0..20 {
        for key in 0..10 {
            let value = format!("v{round}-{key}-{}", "x".repeat(20));
            put(&log, &format!("k{key}"), Some(&value));
        }
    }
    put(&log, "k3", None);
    put(&log, "k7", None);
    log.roll().unwrap();
    log
}

#[test]
fn a_round_keeps_the_latest_value_of_every_key_at_its_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = keyed_log(tmp.path(), &clock);
    let before = records(&log);
    let segments_before = log.segment_count();
    assert!(segments_before > 5);
    let report = log.clean().unwrap().expect("a round");
    let after = records(&log);
    assert_eq!(latest(&after), latest(&before));
    // Only the latest record of each key is left, tombstones included (horizon not passed).
    assert_eq!(after.len(), 10);
    assert_eq!(report.records_after, 10);
    assert_eq!(report.records_before, before.len() as u64);
    assert!(report.bytes_after < report.bytes_before / 5, "{report:?}");
    // Groups are sized by the old segments (as Kafka's): full segments stay one per group,
    // and the next round merges the small cleaned ones.
    assert_eq!(report.segments_after, report.segments_cleaned);
    put(&log, "k0", Some("newest"));
    log.roll().unwrap();
    log.clean().unwrap().unwrap();
    assert!(
        log.segment_count() < segments_before / 2,
        "{}",
        log.segment_count()
    );
    let after = records(&log);
    assert_eq!(after.len(), 10);
    assert_eq!(latest(&after)["k0"], (202, Some("newest".to_string())));
    assert_eq!(report.checkpoint, Some(202));
    let text = std::fs::read_to_string(tmp.path().join(crate::CLEANER_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, format!("0\n1\nseglog 0 {}\n", log.log_end_offset()));
    // Nothing left to clean.
    assert_eq!(log.clean().unwrap(), None);
    // Reopen strictly: every cleaned segment's indexes agree with its `.log`.
    log.close().unwrap();
    drop(log);
    let log = open(tmp.path(), config(), &clock);
    let rebuilt: Vec<_> = log
        .load_report()
        .segments
        .iter()
        .filter(|s| s.rebuilt.is_some())
        .collect();
    assert!(rebuilt.is_empty(), "{rebuilt:?}");
    assert_eq!(records(&log), after);
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".cleaned") || n.contains(".swap") || n.contains(".deleted"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn tombstones_go_after_the_delete_horizon_stamped_by_the_first_round() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = keyed_log(tmp.path(), &clock);
    log.clean_at(T0).unwrap().unwrap();
    let keys: Vec<String> = records(&log).into_iter().map(|r| r.1).collect();
    assert!(keys.contains(&"k3".to_string()));
    // A second round before the horizon keeps them; after it, they go.
    put(&log, "k1", Some("again"));
    log.roll().unwrap();
    log.clean_at(T0 + DAY - 1).unwrap().unwrap();
    assert!(records(&log).iter().any(|r| r.1 == "k3"));
    put(&log, "k1", Some("again2"));
    log.roll().unwrap();
    log.clean_at(T0 + DAY).unwrap().unwrap();
    let after = records(&log);
    assert!(
        !after.iter().any(|r| r.1 == "k3" || r.1 == "k7"),
        "{after:?}"
    );
    assert_eq!(after.len(), 8);
}

#[test]
fn a_full_offset_map_ends_the_round_early_and_the_next_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let config = LogConfig {
        cleaner_dedupe_buffer_size: 24 * 5,
        ..config()
    };
    let log = open(tmp.path(), config.clone(), &clock);
    for round in 0..3 {
        for key in 0..12 {
            put(
                &log,
                &format!("k{key}"),
                Some(&format!("{round}{}", "y".repeat(40))),
            );
        }
    }
    log.roll().unwrap();
    let before = records(&log);
    let first = log.clean().unwrap().unwrap();
    assert!(first.map_full);
    assert_eq!(first.keys, 4, "90% of 5 slots");
    assert!(first.end_offset < log.log_end_offset());
    assert_eq!(log.cleaner_checkpoint(), Some(first.end_offset));
    assert_eq!(latest(&records(&log)), latest(&before));
    let mut rounds = 1;
    while log.cleaner_checkpoint() < Some(log.log_end_offset()) {
        log.clean().unwrap().unwrap();
        rounds += 1;
        assert!(rounds < 20);
        assert_eq!(latest(&records(&log)), latest(&before));
    }
    assert!(rounds > 2);
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Crashes the first swap of a round on copies of `template` after each of its steps, then
/// reopens: the old segments (before the first rename), or the new segment of the first group
/// with, at most, old segments of that group at or past its next offset (the loader's rule, as
/// Kafka's: see `swap.rs`). Returns how many crash states kept such survivors.
fn crash_after_every_swap_step(template: &Path, clock: &Arc<ManualClock>) -> usize {
    let (steps, group_end) = {
        let log = open(template, config(), clock);
        let plan = log.plan_round(T0, true).unwrap();
        let mut stats = plan.snapshot.stats.clone();
        let n = stats
            .iter()
            .take_while(|s| s.base_offset < plan.offsets.first_uncleanable)
            .count();
        super::stats::fill_index_bytes(&plan.snapshot.segments, &mut stats, n);
        let groups = super::plan::group(
            &stats[..n],
            log.settings().segment.segment_bytes.into(),
            log.settings().segment.max_index_bytes.into(),
            plan.offsets.first_uncleanable,
        );
        let group_end = stats.get(groups[0].end).map_or(i64::MAX, |s| s.base_offset);
        (super::swap::steps(groups[0].len()).len(), group_end)
    };
    let expected = {
        let log = open(template, config(), clock);
        latest(&records(&log))
    };
    // What a reader sees once the first group is swapped in (and nothing else).
    let first_group_swapped = {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(template, tmp.path());
        let log = open(tmp.path(), config(), clock);
        log.clean_with(T0, true, steps).unwrap();
        records(&log)
    };
    // The cleaned segment's next offset: past its last kept record.
    let swap_next = first_group_swapped
        .iter()
        .filter(|r| r.0 < group_end)
        .map(|r| r.0 + 1)
        .max()
        .unwrap_or(0);
    let mut with_survivors = 0;
    for k in 0..=steps {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(template, tmp.path());
        let log = open(tmp.path(), config(), clock);
        let before = records(&log);
        log.clean_with(T0, true, k).unwrap();
        drop(log); // a crash: no close
        let log = open(tmp.path(), config(), clock);
        let after = records(&log);
        assert_eq!(latest(&after), expected, "crash after step {k}");
        let offsets: Vec<i64> = after.iter().map(|r| r.0).collect();
        let sorted = offsets.windows(2).all(|w| w[0] < w[1]);
        assert!(sorted, "crash after step {k}: {offsets:?}");
        // Before the first rename nothing changed; once every file of the cleaned segment is
        // `.swap` the loader completes the swap.
        if k == 0 {
            assert_eq!(after, before, "crash after step {k}: the old segments");
        } else {
            let survivors: Vec<_> = after
                .iter()
                .filter(|r| !first_group_swapped.contains(r))
                .collect();
            let new: Vec<_> = after
                .iter()
                .filter(|r| first_group_swapped.contains(r))
                .cloned()
                .collect();
            assert_eq!(
                new, first_group_swapped,
                "crash after step {k}: the new segment"
            );
            for r in &survivors {
                assert!(
                    before.contains(r) && r.0 >= swap_next && r.0 < group_end,
                    "crash after step {k}: {r:?} is no old record of the group past \
                     {swap_next} (group end {group_end})"
                );
            }
            with_survivors += usize::from(!survivors.is_empty());
        }
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".cleaned") || n.contains(".swap"))
            .collect();
        assert!(names.is_empty(), "crash after step {k}: {names:?}");
        // And the next round finishes the job.
        log.clean().unwrap();
        assert_eq!(latest(&records(&log)), expected);
    }
    with_survivors
}

#[test]
fn a_crash_after_every_swap_step_recovers_the_old_or_the_new_segments() {
    let template = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    {
        let log = keyed_log(template.path(), &clock);
        log.close().unwrap();
    }
    crash_after_every_swap_step(template.path(), &clock);
}

/// Segments rolled after each record, values large enough that two segments fill a group.
fn grouped_log(dir: &Path, clock: &Arc<ManualClock>, keys: &[&str]) -> Log {
    let log = open(dir, config(), clock);
    let value = "v".repeat(300);
    for key in keys {
        put(&log, key, Some(&value));
        log.roll().unwrap();
    }
    log
}

#[test]
fn a_crash_mid_swap_may_leave_old_segments_past_the_swaps_next_offset_and_loses_nothing() {
    let template = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    {
        // Groups [a, b] and [b, c]: the first group's second segment keeps nothing, so the
        // swap's next offset (1) is below its base (1) only by the record it dropped.
        let log = grouped_log(template.path(), &clock, &["a", "b", "b", "c"]);
        log.close().unwrap();
    }
    let with_survivors = crash_after_every_swap_step(template.path(), &clock);
    // Crashes after the rename to `.swap`, its directory fsync and the first old segment's
    // rename to `.deleted` leave the second old segment.
    assert_eq!(with_survivors, 3);
}

#[test]
fn a_group_that_keeps_no_record_becomes_an_empty_segment_as_in_kafka() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    // Three segments of one record each, too large to share a group: the first two groups
    // keep nothing (their keys are written again later), the third keeps "b".
    let log = open(tmp.path(), config(), &clock);
    let value = "v".repeat(600);
    for key in ["a", "b", "a"] {
        put(&log, key, Some(&value));
        log.roll().unwrap();
    }
    let report = log.clean().unwrap().unwrap();
    assert_eq!(report.segments_cleaned, 3, "{report:?}");
    assert_eq!(
        report
            .groups
            .iter()
            .map(|g| g.bytes_after == 0)
            .collect::<Vec<_>>(),
        [true, false, false],
        "{report:?}"
    );
    let sizes = |dir: &Path| -> Vec<(String, u64)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.metadata().unwrap().len())
            })
            .collect();
        v.sort();
        v
    };
    let files = sizes(tmp.path());
    assert_eq!(
        files[0],
        ("00000000000000000000.log".into(), 0),
        "{files:?}"
    );
    // No record-less batch anywhere: nothing Kafka's DumpLogSegments would read as a
    // timestamp of -1.
    for (_, segment) in log.published.load().segments.iter() {
        for header in segment.batch_headers(0) {
            let header = header.unwrap();
            assert_ne!(header.record_count, Some(0), "{header:?}");
        }
    }
    let after = records(&log);
    assert_eq!(
        after
            .iter()
            .map(|r| (r.0, r.1.as_str()))
            .collect::<Vec<_>>(),
        [(1, "b"), (2, "a")]
    );
    // A strict reopen keeps the empty segment and serves the same records.
    log.close().unwrap();
    drop(log);
    let log = open(tmp.path(), config(), &clock);
    assert_eq!(records(&log), after);
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(sizes(tmp.path()), files);
}

#[test]
fn a_truncation_during_a_round_aborts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = keyed_log(tmp.path(), &clock);
    let truncations = log.truncations.load(crate::sync::Ordering::Acquire);
    log.truncate_to(150).unwrap();
    let before = records(&log);
    log.truncations
        .store(truncations, crate::sync::Ordering::Release);
    // A round that started before the truncation (its snapshot is older) must not swap.
    log.truncations.fetch_add(1, crate::sync::Ordering::AcqRel);
    let plan_truncations = truncations;
    let err = {
        let segments: Vec<_> = log
            .published
            .load()
            .segments
            .iter()
            .map(|(b, s)| (b, Arc::clone(s)))
            .collect();
        let group = &segments[..2];
        let cleaned = seglog_segment::ActiveSegment::create_with_suffix(
            &log.dir,
            group[0].0,
            &log.settings().segment,
            Some(seglog_segment::TempSuffix::Cleaned),
        )
        .unwrap()
        .seal()
        .unwrap();
        log.replace_segments(&cleaned, group, plan_truncations, T0, usize::MAX)
            .unwrap_err()
    };
    assert!(matches!(err, Error::CleaningAborted { .. }), "{err}");
    assert_eq!(records(&log), before);
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".cleaned"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    // The truncation lowered nothing it did not need to: no checkpoint yet. After a round,
    // a truncation below the checkpoint lowers it.
    log.clean().unwrap().unwrap();
    assert!(log.cleaner_checkpoint().unwrap() > 100);
    log.truncate_to(100).unwrap();
    assert_eq!(log.cleaner_checkpoint(), Some(100));
}

#[test]
fn readers_of_replaced_segments_keep_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = Log::open_with(
        tmp.path(),
        LogConfig {
            file_delete_delay_ms: 60_000,
            ..config()
        },
        OpenOptions {
            clock: clock.clone(),
            high_watermark: crate::HighWatermarkPolicy::LogEnd,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    for i in 0..100 {
        put(
            &log,
            &format!("k{}", i % 5),
            Some("some value that takes room"),
        );
    }
    log.roll().unwrap();
    let held = log.read(0, 1 << 20, Isolation::LogEnd, true).unwrap();
    let bytes_before = held.slice.read_to_vec().unwrap();
    log.clean().unwrap().unwrap();
    assert_eq!(held.slice.read_to_vec().unwrap(), bytes_before);
    // Unlinked after file.delete.delay.ms, by a tick.
    let report = log.tick(T0 + 60_000).unwrap();
    assert!(report.unlinked > 0);
    assert_eq!(held.slice.read_to_vec().unwrap(), bytes_before);
}

#[test]
fn compacted_logs_need_keys_and_keep_what_retention_would_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let config = LogConfig {
        retention_ms: 1000,
        ..config()
    };
    let log = open(tmp.path(), config.clone(), &clock);
    let mut keyless = BatchBuilder::new(0);
    keyless.append(T0, Some(b"k"), Some(b"v"), &[]);
    keyless.append(T0, None, Some(b"v"), &[]);
    let err = log.append(&keyless.build().unwrap()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidAppend {
                kind: crate::AppendErrorKind::MissingKey {
                    record_index: 1,
                    ..
                },
            }
        ),
        "{err}"
    );
    for i in 0..50 {
        put(&log, &format!("k{i}"), Some("value value value"));
    }
    log.roll().unwrap();
    let report = log.tick(T0 + 10 * DAY).unwrap();
    assert!(
        report.retention.deleted.is_empty(),
        "compact alone: no retention"
    );
    drop(log);
    let log = open(
        tmp.path(),
        LogConfig {
            cleanup_policy: CleanupPolicy::CompactDelete,
            ..config
        },
        &clock,
    );
    let report = log.tick(T0 + 10 * DAY).unwrap();
    assert!(
        !report.retention.deleted.is_empty(),
        "compact,delete: retention too"
    );
}

#[test]
fn tick_cleans_a_log_once_its_dirty_ratio_is_above_the_minimum() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = keyed_log(tmp.path(), &clock);
    assert!(log.cleaning_due(T0).unwrap());
    let report = log.tick(T0).unwrap();
    let cleaned = report.cleaned.expect("due");
    assert!(cleaned.segments_cleaned > 1);
    assert!(!log.cleaning_due(T0).unwrap());
    assert_eq!(log.tick(T0).unwrap().cleaned, None);
}

/// A transactional batch of one keyed record.
fn txn_put(log: &Log, producer_id: i64, sequence: i32, key: &str, value: &str) {
    let mut builder = BatchBuilder::new(0)
        .producer(producer_id, 0, sequence)
        .transactional(true);
    builder.append(T0, Some(key.as_bytes()), Some(value.as_bytes()), &[]);
    log.append(&builder.build().unwrap()).unwrap();
}

fn marker(log: &Log, producer_id: i64, control: ControlRecordType) {
    let offset = log.log_end_offset();
    let bytes = BatchBuilder::end_transaction_marker(
        offset,
        T0,
        0,
        producer_id,
        0,
        control,
        EndTransactionMarker::new(0),
    )
    .unwrap();
    log.append_as_follower(&bytes).unwrap();
}

#[test]
fn aborted_data_goes_markers_follow_and_open_transactions_are_not_cleaned() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = open(tmp.path(), config(), &clock);
    put(&log, "a", Some("committed-before"));
    txn_put(&log, 7, 0, "a", "aborted");
    txn_put(&log, 7, 1, "b", "aborted");
    marker(&log, 7, ControlRecordType::Abort);
    txn_put(&log, 8, 0, "c", "committed");
    marker(&log, 8, ControlRecordType::Commit);
    for i in 0..20 {
        put(
            &log,
            &format!("filler{}", i % 4),
            Some("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        );
    }
    log.roll().unwrap();
    // An open transaction of producer 9: the cleaner stops before it.
    txn_put(&log, 9, 0, "a", "open");
    log.roll().unwrap();
    put(&log, "z", Some("tail"));
    log.roll().unwrap();
    log.clean_at(T0).unwrap().unwrap();
    let after = records(&log);
    let values: Vec<_> = after.iter().filter_map(|r| r.2.clone()).collect();
    assert!(!values.iter().any(|v| v == "aborted"), "{values:?}");
    assert!(values.iter().any(|v| v == "committed-before"), "{values:?}");
    assert!(values.iter().any(|v| v == "committed"));
    assert!(
        values.iter().any(|v| v == "open"),
        "beyond the LSO: untouched"
    );
    // The producers' last batches are kept as empty shells, the abort marker stays while the
    // shell of its transaction does (producer 7's last batch).
    let mut shells = 0;
    let mut aborts = 0;
    for segment in log.published.load().segments.iter() {
        for header in segment.1.batch_headers(0) {
            let header = header.unwrap();
            if header.record_count == Some(0) {
                shells += 1;
            }
            if header.is_control && header.producer_id == 7 {
                aborts += 1;
            }
        }
    }
    assert!(shells >= 1);
    assert_eq!(aborts, 1);
}

#[test]
fn a_log_dir_ticks_its_compacted_topics_into_one_root_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let mut topics = crate::TopicConfigs::new();
    topics.set("table", "cleanup.policy", "compact").unwrap();
    let dir = crate::LogDir::open_with_topic_configs(
        tmp.path(),
        LogConfig {
            cleanup_policy: CleanupPolicy::Delete,
            ..config()
        },
        topics,
        OpenOptions::default(),
    )
    .unwrap();
    let mut logs = Vec::new();
    for partition in 0..2 {
        let log = dir
            .get_or_create(&crate::TopicPartition::new("table", partition))
            .unwrap();
        log.set_high_watermark_policy(crate::HighWatermarkPolicy::LogEnd)
            .unwrap();
        for i in 0..100 {
            put(
                &log,
                &format!("k{}", i % 7),
                Some("a value long enough to fill segments"),
            );
        }
        log.roll().unwrap();
        logs.push(log);
    }
    let plain = dir
        .get_or_create(&crate::TopicPartition::new("events", 0))
        .unwrap();
    assert!(!plain.config().cleanup_policy.compact());
    dir.tick(T0).unwrap();
    let text = std::fs::read_to_string(tmp.path().join(crate::CLEANER_OFFSET_CHECKPOINT)).unwrap();
    let end = logs[0].log_end_offset();
    assert_eq!(text, format!("0\n2\ntable 0 {end}\ntable 1 {end}\n"));
    for log in &logs {
        assert_eq!(records(log).len(), 7);
    }
    dir.close().unwrap();
}

#[test]
fn an_empty_swap_replaces_every_old_file_at_its_base_after_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let log = open(tmp.path(), config(), &clock);
    let value = "v".repeat(600);
    for key in ["a", "b", "a"] {
        put(&log, key, Some(&value));
        log.roll().unwrap();
    }
    // A crash right after the empty cleaned segment of the first group became `.swap`.
    log.clean_with(T0, true, 1).unwrap();
    drop(log);
    assert!(tmp.path().join("00000000000000000000.log.swap").exists());
    // The old segment at the swap's base with a `.txnindex` (one aborted transaction of
    // producer 7 at offset 0): the swap's renames overwrite its other files, not this one.
    let mut entry = vec![0u8, 0];
    for field in [7i64, 0, 0, 0] {
        entry.extend_from_slice(&field.to_be_bytes());
    }
    let txnindex = tmp.path().join("00000000000000000000.txnindex");
    std::fs::write(&txnindex, &entry).unwrap();
    let log = open(tmp.path(), config(), &clock);
    assert_eq!(log.load_report().discontinuity, None);
    assert!(
        !txnindex.exists(),
        "the old segment's .txnindex outlived its swap"
    );
    assert_eq!(
        std::fs::metadata(tmp.path().join("00000000000000000000.log"))
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        records(&log).iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 2]
    );
}

/// A log of many sealed segments, closed cleanly, then opened trusting that: its sealed
/// segments (but the first and last) are left unopened. Never due by the dirty ratio.
fn trusted_log(
    dir: &Path,
    clock: &Arc<ManualClock>,
    config: LogConfig,
) -> (Log, seglog_segment::SegmentCache) {
    {
        let log = keyed_log(dir, clock);
        log.close().unwrap();
    }
    let cache = seglog_segment::SegmentCache::new(64);
    let log = Log::open_with(
        dir,
        config,
        OpenOptions {
            clock: clock.clone(),
            high_watermark: crate::HighWatermarkPolicy::LogEnd,
            trust_clean_shutdown: true,
            segment_cache: Some(cache.clone()),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    (log, cache)
}

fn deferred(log: &Log) -> Vec<i64> {
    log.published
        .load()
        .segments
        .iter()
        .filter(|(_, s)| s.is_deferred())
        .map(|(b, _)| b)
        .collect()
}

#[test]
fn a_tick_on_a_trusted_open_opens_no_sealed_segment_when_nothing_is_due() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let config = LogConfig {
        min_cleanable_dirty_ratio: crate::DirtyRatio(1.0),
        ..config()
    };
    let (log, _cache) = trusted_log(tmp.path(), &clock, config);
    let before = deferred(&log);
    assert!(before.len() > 10, "{before:?}");
    // Default lags: the due check needs only the segments' sizes.
    assert!(!log.cleaning_due(T0).unwrap());
    assert_eq!(deferred(&log), before, "due check");
    for _ in 0..3 {
        assert!(!log.cleaning_due(T0).unwrap());
        assert_eq!(log.tick(T0).unwrap().cleaned, None);
    }
    assert_eq!(deferred(&log), before);
}

#[test]
fn with_compaction_lags_each_sealed_segment_is_read_once_for_the_due_check() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let config = LogConfig {
        min_cleanable_dirty_ratio: crate::DirtyRatio(1.0),
        min_compaction_lag_ms: 1,
        max_compaction_lag_ms: DAY,
        ..config()
    };
    let (log, cache) = trusted_log(tmp.path(), &clock, config);
    // The first check reads the dirty sealed segments' timestamps (every record is at T0:
    // all too young to clean, none overdue).
    assert!(!log.cleaning_due(T0).unwrap());
    assert!(deferred(&log).is_empty(), "{:?}", deferred(&log));
    cache.evict_all();
    let open = cache.open_segments();
    // Later checks and ticks take them from the cache: no segment is opened again.
    for _ in 0..3 {
        assert!(!log.cleaning_due(T0).unwrap());
        assert_eq!(log.tick(T0).unwrap().cleaned, None);
    }
    assert_eq!(cache.open_segments(), open);
    // Overdue by max.compaction.lag.ms a day later (the cached first batch timestamps), but
    // the segments are older than min.compaction.lag.ms now: due, and cleaned.
    assert!(log.cleaning_due(T0 + DAY + 1).unwrap());
    // A truncation forgets what was cached: the values are read again.
    log.truncate_to(log.log_end_offset() - 1).unwrap();
    cache.evict_all();
    let open = cache.open_segments();
    assert!(log.cleaning_due(T0 + DAY + 1).unwrap());
    assert!(cache.open_segments() > open);
}

fn snapshots(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".snapshot"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_swap_deletes_the_producer_snapshots_of_the_bases_it_removes() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    // Segments 0..4 of one record each, a snapshot taken at every roll (1, 2, 3, 4); groups
    // [0, 1] and [2, 3].
    let log = grouped_log(tmp.path(), &clock, &["a", "b", "b", "c"]);
    let name = |offset: i64| format!("{offset:020}.snapshot");
    assert_eq!(snapshots(tmp.path()), [name(1), name(2), name(3), name(4)]);
    let report = log.clean().unwrap().unwrap();
    let bases: Vec<i64> = report.groups.iter().map(|g| g.base_offset).collect();
    assert_eq!(bases, [0, 2], "{report:?}");
    assert!(report.groups.iter().all(|g| g.replaced == 2), "{report:?}");
    // Bases 1 and 3 are gone, and so are their snapshots (2 is the second cleaned segment's
    // base, 4 the active segment's).
    assert_eq!(snapshots(tmp.path()), [name(2), name(4)]);
    // A reopen after a crash finds nothing stray to delete, and the producer state loads.
    drop(log);
    let log = open(tmp.path(), config(), &clock);
    assert_eq!(
        log.load_report().producers.deleted_snapshots,
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(records(&log).len(), 3);
}
