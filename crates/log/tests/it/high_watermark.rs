//! The high watermark: monotonic outside truncation, and the single-node policies.

use seglog::{
    Error, HighWatermarkPolicy, Isolation, Log, LogConfig, LogDir, LogOpenOptions,
    REPLICATION_OFFSET_CHECKPOINT, ReaderOptions, TopicPartition,
};

use crate::support::{T0, append_numbered, fresh, numbered, small_config};

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
    let read = ReaderOptions::new(0, Isolation::HighWatermark)
        .owned_reader(&log)
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
    let log = Log::open(dir.path(), config).unwrap();
    append_numbered(&log, 1, "a", 3);
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
    let log = Log::open(&dir, small_config(1 << 20)).unwrap();
    append_numbered(&log, 2, "a", 5);
    log.set_high_watermark(7).unwrap();
    log.close().unwrap();
    drop(log);
    let text = std::fs::read_to_string(dir.join(REPLICATION_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, "0\n1\norders 0 7\n", "Kafka's text format");
    let log = Log::open(&dir, small_config(1 << 20)).unwrap();
    assert_eq!(log.high_watermark(), 7, "restored at open");
    drop(log);
    // A checkpoint above the log end (a crash cut the tail it covered) is clamped.
    std::fs::write(
        dir.join(REPLICATION_OFFSET_CHECKPOINT),
        "0\n1\norders 0 99\n",
    )
    .unwrap();
    let log = Log::open(&dir, small_config(1 << 20)).unwrap();
    assert_eq!(log.high_watermark(), 10);
}

#[test]
fn a_log_dir_persists_every_partitions_high_watermark() {
    let root = tempfile::tempdir().unwrap();
    let tp = |p| TopicPartition::new("t", p);
    {
        let dir = LogDir::open(root.path(), small_config(1 << 20)).unwrap();
        for p in 0..2 {
            let log = dir.get_or_create(&tp(p)).unwrap();
            append_numbered(&log, 1, "a", 4);
            log.set_high_watermark(1 + i64::from(p)).unwrap();
        }
        dir.close().unwrap();
    }
    let text = std::fs::read_to_string(root.path().join(REPLICATION_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, "0\n2\nt 0 1\nt 1 2\n");
    let dir = LogDir::open(root.path(), small_config(1 << 20)).unwrap();
    assert_eq!(dir.log(&tp(0)).unwrap().high_watermark(), 1);
    assert_eq!(dir.log(&tp(1)).unwrap().high_watermark(), 2);
}
