//! The high watermark: monotonic outside truncation, and the single-node policies.

use seglog::{
    Error, HighWatermarkPolicy, Isolation, Log, LogConfig, LogDir, LogOpenOptions,
    REPLICATION_OFFSET_CHECKPOINT, ReaderOptions, TopicPartition,
};

use crate::support::{T0, append_numbered, events_during, fresh, numbered, small_config};

/// Options that leave the high watermark to the caller, as a replication layer does.
fn manual() -> LogOpenOptions {
    LogOpenOptions {
        high_watermark: HighWatermarkPolicy::Manual,
        ..LogOpenOptions::default()
    }
}

#[test]
fn a_backward_move_is_refused_unless_it_is_a_truncation() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 2, "a", 5);
    assert_eq!(log.set_high_watermark(7).unwrap(), 7);
    match log.set_high_watermark(3) {
        Err(Error::HighWatermarkRegression {
            high_watermark: 7,
            requested: 3,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(log.high_watermark(), 7, "nothing changed");
    assert_eq!(
        log.set_high_watermark(7).unwrap(),
        7,
        "the same value is no move"
    );
    log.truncate_to(5).unwrap();
    assert_eq!(log.high_watermark(), 5, "a truncation lowers it");
    assert_eq!(
        log.set_high_watermark(i64::MAX).unwrap(),
        5,
        "clamped to the log end"
    );
}

#[test]
fn log_end_policy_publishes_every_append() {
    let dir = tempfile::tempdir().unwrap();
    let options = LogOpenOptions {
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    let log = Log::open_with(dir.path(), small_config(1 << 12), options).unwrap();
    for i in 0..50 {
        log.append(&numbered(T0 + i, "x", 3)).unwrap();
        assert_eq!(log.high_watermark(), log.log_end_offset());
    }
    assert!(log.segment_count() > 1, "rolls keep it at the log end");
    let read = ReaderOptions::new(0, Isolation::ReadUncommitted)
        .owned_reader(&log)
        .until_caught_up()
        .count();
    assert_eq!(read, 150);
}

#[test]
fn durable_end_policy_follows_fsyncs_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_ms: i64::MAX,
        ..small_config(1 << 20)
    };
    let log = Log::open_with(dir.path(), config, manual()).unwrap();
    append_numbered(&log, 1, "a", 3);
    assert_eq!(log.high_watermark(), 0, "Manual: only the caller moves it");
    log.set_high_watermark_policy(HighWatermarkPolicy::DurableEnd)
        .unwrap();
    assert_eq!(log.high_watermark_policy(), HighWatermarkPolicy::DurableEnd);
    assert_eq!((log.durable_end_offset(), log.high_watermark()), (0, 0));
    log.append_durable(&numbered(T0, "b", 2)).unwrap();
    assert_eq!((log.durable_end_offset(), log.high_watermark()), (5, 5));
    log.append(&numbered(T0, "c", 2)).unwrap();
    assert_eq!(
        log.high_watermark(),
        5,
        "a page-cache append is not durable"
    );
    log.flush().unwrap();
    assert_eq!((log.durable_end_offset(), log.high_watermark()), (7, 7));
    // Switching to LogEnd raises it at once; back to Manual keeps it.
    log.append(&numbered(T0, "d", 1)).unwrap();
    log.set_high_watermark_policy(HighWatermarkPolicy::LogEnd)
        .unwrap();
    assert_eq!(log.high_watermark(), 8);
}

#[test]
fn persisted_in_replication_offset_checkpoint_and_restored_clamped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");
    let log = Log::open_with(&dir, small_config(1 << 20), manual()).unwrap();
    append_numbered(&log, 2, "a", 5);
    log.set_high_watermark(7).unwrap();
    log.close().unwrap();
    drop(log);
    let text = std::fs::read_to_string(dir.join(REPLICATION_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, "0\n1\norders 0 7\n", "Kafka's text format");
    let log = Log::open_with(&dir, small_config(1 << 20), manual()).unwrap();
    assert_eq!(log.high_watermark(), 7, "restored at open");
    drop(log);
    // A read-only open shows the checkpointed one too (an inspection, whatever the default).
    let log = Log::open_read_only(&dir, small_config(1 << 20)).unwrap();
    assert_eq!(log.high_watermark_policy(), HighWatermarkPolicy::Manual);
    assert_eq!(log.high_watermark(), 7, "read-only: the checkpointed value");
    drop(log);
    // A checkpoint above the log end (a crash cut the tail it covered) is clamped.
    std::fs::write(
        dir.join(REPLICATION_OFFSET_CHECKPOINT),
        "0\n1\norders 0 99\n",
    )
    .unwrap();
    let log = Log::open_with(&dir, small_config(1 << 20), manual()).unwrap();
    assert_eq!(log.high_watermark(), 10);
}

#[test]
fn a_log_dir_persists_every_partitions_high_watermark() {
    let root = tempfile::tempdir().unwrap();
    let tp = |p| TopicPartition::new("t", p);
    {
        let dir = LogDir::open_with(root.path(), small_config(1 << 20), manual()).unwrap();
        for p in 0..2 {
            let log = dir.get_or_create(&tp(p)).unwrap();
            append_numbered(&log, 1, "a", 4);
            log.set_high_watermark(1 + i64::from(p)).unwrap();
        }
        dir.close().unwrap();
    }
    let text = std::fs::read_to_string(root.path().join(REPLICATION_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, "0\n2\nt 0 1\nt 1 2\n");
    let dir = LogDir::open_with(root.path(), small_config(1 << 20), manual()).unwrap();
    assert_eq!(dir.log(&tp(0)).unwrap().high_watermark(), 1);
    assert_eq!(dir.log(&tp(1)).unwrap().high_watermark(), 2);
}

/// A newcomer's first consumer: `Log::open` and `LogDir::open` serve what was appended to
/// high-watermark and read-committed readers (the default `LogEnd`), and the open says which
/// policy it applied.
#[test]
fn the_default_policy_serves_what_was_appended_and_the_open_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let events = events_during(|| {
        let log = Log::open(tmp.path().join("orders-0"), small_config(1 << 12)).unwrap();
        assert_eq!(log.high_watermark_policy(), HighWatermarkPolicy::LogEnd);
        append_numbered(&log, 4, "a", 3);
        assert_eq!(log.high_watermark(), 12);
        for isolation in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
            let read = ReaderOptions::new(0, isolation)
                .owned_reader(&log)
                .until_caught_up()
                .count();
            assert_eq!(read, 12, "{isolation:?}");
        }
    });
    let loaded: Vec<_> = events
        .iter()
        .filter(|e| e.message == "log loaded")
        .collect();
    assert_eq!(loaded.len(), 1, "{events:?}");
    assert_eq!(loaded[0].level, tracing::Level::INFO);
    assert_eq!(loaded[0].field("high_watermark_policy"), Some("LogEnd"));

    let root = tempfile::tempdir().unwrap();
    let dir = LogDir::open(root.path(), small_config(1 << 12)).unwrap();
    let log = dir.get_or_create(&TopicPartition::new("t", 0)).unwrap();
    assert_eq!(log.high_watermark_policy(), HighWatermarkPolicy::LogEnd);
    append_numbered(&log, 2, "b", 2);
    let read = ReaderOptions::new(0, Isolation::ReadCommitted)
        .owned_reader(&log)
        .until_caught_up()
        .count();
    assert_eq!(read, 4);
    dir.close().unwrap();
    drop(log);
    drop(dir);
    // Reopened, the partition's high watermark is again at its log end.
    let events = events_during(|| {
        let dir = LogDir::open_with(root.path(), small_config(1 << 12), manual()).unwrap();
        assert_eq!(
            dir.log(&TopicPartition::new("t", 0))
                .unwrap()
                .high_watermark(),
            4
        );
    });
    let loaded = events.iter().find(|e| e.message == "log loaded").unwrap();
    assert_eq!(loaded.field("high_watermark_policy"), Some("Manual"));
    assert_eq!(loaded.field("high_watermark"), Some("4"));
}

/// `Isolation::HighWatermark`, the old name of `Isolation::ReadUncommitted`, still compiles
/// in expressions and patterns and reads the same records (deprecated).
#[test]
#[allow(deprecated)]
fn the_old_isolation_name_reads_as_read_uncommitted() {
    assert_eq!(Isolation::HighWatermark, Isolation::ReadUncommitted);
    assert!(matches!(
        Isolation::ReadUncommitted,
        Isolation::HighWatermark
    ));
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 3, "a", 2);
    log.set_high_watermark(4).unwrap();
    let old: Vec<i64> = ReaderOptions::new(0, Isolation::HighWatermark)
        .owned_reader(&log)
        .until_caught_up()
        .map(|r| r.unwrap().record.offset)
        .collect();
    let new: Vec<i64> = ReaderOptions::new(0, Isolation::ReadUncommitted)
        .owned_reader(&log)
        .until_caught_up()
        .map(|r| r.unwrap().record.offset)
        .collect();
    assert_eq!((old.clone(), new), (vec![0, 1, 2, 3], vec![0, 1, 2, 3]));
    assert_eq!(format!("{:?}", Isolation::HighWatermark), "ReadUncommitted");
}
