//! LogDir: a log.dirs root with many partitions and the root's state files.

use seglog::{
    CLEAN_SHUTDOWN_FILE, Clock, LOG_START_OFFSET_CHECKPOINT, LogDir, LogOpenOptions,
    RECOVERY_POINT_CHECKPOINT, TopicPartition,
};

use crate::support::*;

#[test]
fn root_state_is_kafka_compatible() {
    let root = tempfile::tempdir().unwrap();
    let clock = clock();
    let options = LogOpenOptions {
        clock: clock.clone(),
        ..LogOpenOptions::default()
    };
    let dir = LogDir::open_with(root.path(), small_config(1024), options.clone()).unwrap();
    assert!(!dir.had_clean_shutdown());
    let a = dir
        .get_or_create(&TopicPartition::new("orders", 0))
        .unwrap();
    let b = dir
        .get_or_create(&TopicPartition::new("my-topic", 12))
        .unwrap();
    for i in 0..30 {
        a.append(&numbered(T0 + i, "a", 2)).unwrap();
        b.append(&numbered(T0 + i, "b", 1)).unwrap();
    }
    b.set_high_watermark(30).unwrap();
    b.delete_records_before(25).unwrap();
    assert!(
        seglog::Log::open(root.path().join("orders-0"), small_config(1024)).is_err(),
        "root is locked"
    );
    dir.close().unwrap();
    drop((a, b, dir));
    assert_eq!(
        std::fs::read_to_string(root.path().join(RECOVERY_POINT_CHECKPOINT)).unwrap(),
        "0\n2\nmy-topic 12 30\norders 0 60\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join(LOG_START_OFFSET_CHECKPOINT)).unwrap(),
        "0\n1\nmy-topic 12 25\n"
    );
    assert!(root.path().join(CLEAN_SHUTDOWN_FILE).exists());

    let dir = LogDir::open_with(root.path(), small_config(1024), options.clone()).unwrap();
    assert!(dir.had_clean_shutdown());
    let a = dir.log(&TopicPartition::new("orders", 0)).unwrap();
    let b = dir.log(&TopicPartition::new("my-topic", 12)).unwrap();
    assert_eq!(values(&a).len(), 60);
    assert_eq!(b.log_start_offset(), 25);
    assert_eq!(a.load_report().recovered().count(), 0);
    a.append(&numbered(T0, "crash", 1)).unwrap();
    drop((a, b, dir)); // crash

    let dir = LogDir::open_with(root.path(), small_config(1024), options).unwrap();
    assert!(!dir.had_clean_shutdown());
    let a = dir.log(&TopicPartition::new("orders", 0)).unwrap();
    assert!(a.load_report().recovered().count() > 0);
    assert_eq!(values(&a).len(), 61);
    dir.close().unwrap();
}

#[test]
fn ignores_foreign_dirs_and_removes_delete_dirs_later() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("lost+found")).unwrap();
    let doomed = root
        .path()
        .join("old-0.0123456789abcdef0123456789abcdef-delete");
    std::fs::create_dir(&doomed).unwrap();
    std::fs::write(root.path().join("meta.properties"), "version=1\n").unwrap();
    let clock = clock();
    let dir = LogDir::open_with(
        root.path(),
        small_config(1024),
        LogOpenOptions {
            clock: clock.clone(),
            ..LogOpenOptions::default()
        },
    )
    .unwrap();
    assert!(dir.logs().is_empty());
    assert!(dir.tick(T0 + 1).unwrap().deleted_dirs.is_empty());
    assert!(doomed.exists());
    assert_eq!(
        dir.tick(T0 + 60_000).unwrap().deleted_dirs,
        vec![doomed.clone()]
    );
    assert!(!doomed.exists());
    assert!(root.path().join("lost+found").exists());
    assert_eq!(
        std::fs::read_to_string(root.path().join("meta.properties")).unwrap(),
        "version=1\n"
    );
}

/// `recover_all` on a root recovers every segment of every partition after a clean shutdown.
#[test]
fn recover_all_recovers_every_partition() {
    let root = tempfile::tempdir().unwrap();
    let clock = clock();
    let dir = LogDir::open(root.path(), small_config(1024)).unwrap();
    for (topic, n) in [("orders", 40), ("audit", 5)] {
        let log = dir.get_or_create(&TopicPartition::new(topic, 0)).unwrap();
        append_numbered(&log, n, topic, 2);
    }
    dir.close().unwrap();
    drop(dir);
    let options = LogOpenOptions {
        clock: clock.clone(),
        recover_all: true,
        ..LogOpenOptions::default()
    };
    let dir = LogDir::open_with(root.path(), small_config(1024), options).unwrap();
    assert!(dir.had_clean_shutdown());
    for (_, log) in dir.logs() {
        let report = log.load_report();
        assert_eq!(report.recovered().count(), log.segment_count());
        assert!(log.segment_count() >= 1);
    }
    let orders = dir.log(&TopicPartition::new("orders", 0)).unwrap();
    assert!(orders.segment_count() > 1);
    assert_eq!(values(&orders).len(), 80);
}

/// Issue 12, bug 3: a log that outlives its `LogDir` keeps the root locked, so a second
/// `LogDir` cannot open it and append over an acknowledged append at the same offsets.
#[test]
fn a_log_outliving_its_log_dir_keeps_the_root_locked() {
    let root = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("orders", 0);
    let dir = LogDir::open(root.path(), small_config(1024)).unwrap();
    let log = dir.get_or_create(&tp).unwrap();
    assert_eq!(log.append(&numbered(T0, "b", 3)).unwrap().first_offset, 0);
    drop(dir); // a thread still holds `log`
    let err = LogDir::open(root.path(), small_config(1024)).unwrap_err();
    assert!(
        matches!(
            err,
            seglog::Error::Locked {
                in_this_process: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("drop"), "{err}");
    // A standalone open of the partition (its parent is the root) is refused too.
    assert!(matches!(
        seglog::Log::open(root.path().join("orders-0"), small_config(1024)),
        Err(seglog::Error::Locked { .. })
    ));
    let old = log.append(&numbered(T0, "old", 3)).unwrap();
    assert_eq!(old.first_offset, 3);
    // Closing keeps the lock (the log still serves reads); dropping releases it.
    log.close().unwrap();
    assert!(matches!(
        LogDir::open(root.path(), small_config(1024)),
        Err(seglog::Error::Locked { .. })
    ));
    drop(log);
    let dir = LogDir::open(root.path(), small_config(1024)).unwrap();
    let log = dir.log(&tp).unwrap();
    assert_eq!(log.append(&numbered(T0, "new", 3)).unwrap().first_offset, 6);
    let all = values(&log);
    assert_eq!(all.len(), 9);
    assert_eq!(all[3], (3, b"old-0".to_vec()));
    assert_eq!(all[6], (6, b"new-0".to_vec()));
    dir.close().unwrap();
}

/// Issue 12, bug 4: a partition's own `flush` and `tick` checkpoint its recovery point in the
/// root, so a crash afterwards recovers at most the active segment, not all of them.
#[test]
fn a_partitions_own_flush_and_tick_checkpoint_its_recovery_point() {
    for via_tick in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("orders", 0);
        let clock = clock();
        let options = LogOpenOptions {
            clock: clock.clone(),
            ..LogOpenOptions::default()
        };
        let dir = LogDir::open_with(root.path(), small_config(1024), options.clone()).unwrap();
        let log = dir.get_or_create(&tp).unwrap();
        append_numbered(&log, 200, "r", 2);
        let segments = log.segment_count();
        assert!(segments >= 10, "{segments}");
        if via_tick {
            log.tick(clock.now_ms()).unwrap();
        } else {
            log.flush().unwrap();
        }
        let recovery_point = log.recovery_point();
        drop((log, dir)); // crash: no close, no LogDir checkpoint
        let dir = LogDir::open_with(root.path(), small_config(1024), options).unwrap();
        let log = dir.log(&tp).unwrap();
        let report = log.load_report();
        assert!(!report.had_clean_shutdown);
        assert_eq!(
            report.recovery_point_checkpoint, recovery_point,
            "tick: {via_tick}"
        );
        assert!(
            report.recovered().count() <= 1,
            "tick: {via_tick}: {} of {segments} segments recovered",
            report.recovered().count()
        );
        assert_eq!(values(&log).len(), 400);
        dir.close().unwrap();
    }
}

/// Issue 12, bug 6: a corrupt root checkpoint is reported by the `LogDir` and by every
/// partition's load report, with file and line.
#[test]
fn corrupt_root_checkpoints_are_reported() {
    let root = tempfile::tempdir().unwrap();
    let dir = LogDir::open(root.path(), small_config(1024)).unwrap();
    for topic in ["a", "b"] {
        let log = dir.get_or_create(&TopicPartition::new(topic, 0)).unwrap();
        append_numbered(&log, 3, topic, 1);
    }
    assert!(dir.checkpoint_problems().is_empty());
    dir.close().unwrap();
    drop(dir);
    let path = root.path().join(RECOVERY_POINT_CHECKPOINT);
    std::fs::write(&path, "0\n2\na 0 3\n").unwrap();
    let dir = LogDir::open(root.path(), small_config(1024)).unwrap();
    assert_eq!(dir.checkpoint_problems().len(), 1);
    let problem = &dir.checkpoint_problems()[0];
    assert_eq!((problem.path.clone(), problem.line), (path, Some(2)));
    for (_, log) in dir.logs() {
        assert_eq!(
            log.load_report().checkpoint_problems,
            dir.checkpoint_problems()
        );
    }
    dir.close().unwrap();
}

/// `LogDir::tick` reports per partition, and `LogDir::spawn_ticker` runs it on a thread.
#[test]
fn tick_reports_each_partition_and_a_ticker_runs_it() {
    let root = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = seglog::LogConfig {
        retention_bytes: 1,
        file_delete_delay_ms: 0,
        ..small_config(1024)
    };
    let options = LogOpenOptions {
        clock: clock.clone(),
        ..LogOpenOptions::default()
    };
    let dir = std::sync::Arc::new(LogDir::open_with(root.path(), config, options).unwrap());
    let (a, b) = (TopicPartition::new("a", 0), TopicPartition::new("b", 0));
    let log_a = dir.get_or_create(&a).unwrap();
    dir.get_or_create(&b).unwrap();
    for i in 0..20 {
        log_a.append(&numbered(T0 + i, "x", 10)).unwrap();
    }
    log_a.set_high_watermark(log_a.log_end_offset()).unwrap();
    let report = dir.tick(clock.now_ms()).unwrap();
    assert_eq!(report.partitions.len(), 2);
    assert!(!report.partitions[&a].retention.deleted.is_empty());
    assert!(report.partitions[&b].retention.deleted.is_empty());

    // The ticker: more data past retention is deleted without an explicit tick.
    let segments = log_a.segment_count();
    for i in 0..20 {
        log_a.append(&numbered(T0 + i, "y", 10)).unwrap();
    }
    log_a.set_high_watermark(log_a.log_end_offset()).unwrap();
    let grown = log_a.segment_count();
    assert!(grown > segments);
    let ticker = dir.spawn_ticker(std::time::Duration::from_millis(5));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while log_a.segment_count() >= grown {
        assert!(std::time::Instant::now() < deadline, "the ticker never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    ticker.stop().unwrap();
}

#[test]
fn topic_configs_override_the_defaults_and_are_not_persisted() {
    let root = tempfile::tempdir().unwrap();
    let clock = clock();
    let options = LogOpenOptions {
        clock: clock.clone(),
        ..LogOpenOptions::default()
    };
    let mut topics = seglog::TopicConfigs::new();
    topics.set("big", "segment.bytes", "1048576").unwrap();
    let (big, small) = (
        TopicPartition::new("big", 0),
        TopicPartition::new("small", 0),
    );
    let dir = LogDir::open_with_topic_configs(
        root.path(),
        small_config(1024),
        topics.clone(),
        options.clone(),
    )
    .unwrap();
    for tp in [&big, &small] {
        let log = dir.get_or_create(tp).unwrap();
        for i in 0..40 {
            log.append(&numbered(T0 + i, "v", 3)).unwrap();
        }
    }
    assert_eq!(dir.log(&big).unwrap().segment_count(), 1);
    assert!(dir.log(&small).unwrap().segment_count() > 3);
    assert_eq!(dir.topic_config("big").unwrap().segment_bytes, 1_048_576);
    assert_eq!(dir.topic_config("small").unwrap(), small_config(1024));
    assert_eq!(dir.default_config(), &small_config(1024));
    dir.close().unwrap();
    drop(dir);

    // Nothing about topic configs is written in the root (Kafka keeps them in its metadata).
    let mut names: Vec<String> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".kafka_cleanshutdown",
            ".lock",
            "big-0",
            "log-start-offset-checkpoint",
            "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint",
            "small-0",
        ]
    );

    // Loaded partitions take the overrides given at open, and only those.
    let dir =
        LogDir::open_with_topic_configs(root.path(), small_config(1024), topics, options.clone())
            .unwrap();
    assert_eq!(dir.log(&big).unwrap().config().segment_bytes, 1_048_576);
    assert_eq!(dir.log(&small).unwrap().config(), small_config(1024));
    dir.close().unwrap();
    drop(dir);
    let dir = LogDir::open_with(root.path(), small_config(1024), options).unwrap();
    assert_eq!(dir.log(&big).unwrap().config(), small_config(1024));
}

#[test]
fn a_topic_config_changes_at_runtime_for_its_open_partitions() {
    let root = tempfile::tempdir().unwrap();
    let clock = clock();
    let options = LogOpenOptions {
        clock: clock.clone(),
        ..LogOpenOptions::default()
    };
    let dir = LogDir::open_with(root.path(), small_config(1024), options).unwrap();
    let (t0, t1, u0) = (
        TopicPartition::new("t", 0),
        TopicPartition::new("t", 1),
        TopicPartition::new("u", 0),
    );
    for tp in [&t0, &t1, &u0] {
        let log = dir.get_or_create(tp).unwrap();
        for i in 0..20 {
            log.append(&numbered(T0 + i, "v", 10)).unwrap();
        }
        log.set_high_watermark(log.log_end_offset()).unwrap();
    }
    let segments = |tp: &TopicPartition| dir.log(tp).unwrap().segment_count();
    let before = [segments(&t0), segments(&t1), segments(&u0)];
    assert!(before.iter().all(|n| *n > 2), "{before:?}");

    // Retention set at runtime applies to the topic's partitions at the next tick.
    let config = dir
        .alter_topic_config(
            "t",
            [("retention.bytes", "1"), ("file.delete.delay.ms", "0")],
        )
        .unwrap();
    assert_eq!(config.retention_bytes, 1);
    assert_eq!(dir.log(&t1).unwrap().config(), config);
    assert_eq!(dir.log(&u0).unwrap().config(), small_config(1024));
    let report = dir.tick(clock.now_ms()).unwrap();
    assert!(!report.partitions[&t0].retention.deleted.is_empty());
    assert!(!report.partitions[&t1].retention.deleted.is_empty());
    assert!(report.partitions[&u0].retention.deleted.is_empty());
    assert_eq!(segments(&t0), 1);
    assert_eq!(segments(&u0), before[2]);

    // Roll settings apply from the next append; a partition created later starts with them.
    dir.alter_topic_config("t", [("segment.bytes", "1048576")])
        .unwrap();
    let t0_log = dir.log(&t0).unwrap();
    for i in 0..40 {
        t0_log.append(&numbered(T0 + i, "w", 10)).unwrap();
    }
    assert_eq!(t0_log.segment_count(), 1, "segment.bytes raised: no roll");
    assert_eq!(
        t0_log.config().retention_bytes,
        -1,
        "the whole set was replaced"
    );
    let t2 = dir.get_or_create(&TopicPartition::new("t", 2)).unwrap();
    assert_eq!(t2.config().segment_bytes, 1_048_576);

    // Refused: root-wide and broker-level keys, bad values; nothing changes.
    for (key, value) in [
        ("seglog.segment.cache.capacity", "9"),
        ("log.retention.hours", "1"),
    ] {
        match dir.alter_topic_config("t", [(key, value)]) {
            Err(seglog::Error::NotATopicConfig { key: k }) => assert_eq!(k, key),
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(
        dir.alter_topic_config("t", [("segment.bytes", "1")]),
        Err(seglog::Error::InvalidConfig {
            key: "segment.bytes",
            ..
        })
    ));
    assert_eq!(t0_log.config().segment_bytes, 1_048_576);
    assert_eq!(
        dir.topic_configs()
            .overrides("t")
            .get("segment.bytes")
            .map(String::as_str),
        Some("1048576")
    );
    // Back to the defaults.
    dir.alter_topic_config("t", Vec::<(&str, &str)>::new())
        .unwrap();
    assert_eq!(t0_log.config(), small_config(1024));
}

#[test]
fn a_log_refuses_a_config_change_it_cannot_apply() {
    let (_dir, _clock, log) = fresh(small_config(1024));
    let changed = seglog::LogConfig {
        segment_cache_capacity: 7,
        ..small_config(1024)
    };
    assert!(matches!(
        log.set_config(changed),
        Err(seglog::Error::ConfigNotDynamic {
            key: "seglog.segment.cache.capacity",
            ..
        })
    ));
    assert_eq!(log.config(), small_config(1024));
    // A smaller segment.bytes rolls at the next append.
    log.append(&numbered(T0, "a", 5)).unwrap();
    assert_eq!(log.segment_count(), 1);
    log.set_config(small_config(150)).unwrap();
    assert!(log.append(&numbered(T0, "b", 1)).unwrap().rolled);
}
