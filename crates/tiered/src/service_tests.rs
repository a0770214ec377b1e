//! The tiering service over a real `LogDir` and a fault-injecting store: every partition tiered,
//! retries after backoff on retriable errors, the interval after the others, one partition's
//! failure leaving the others alone, local data intact on every error, the copy quota on a fake
//! clock, bounded concurrency, and a clean stop.

use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use seglog::{
    BatchBuilder, Clock, HighWatermarkPolicy, Isolation, Log, LogConfig, LogDir, LogOpenOptions,
    ManualClock, TopicPartition,
};

use crate::faulty::{CrashMode, Fault, FaultyStore};
use crate::{
    Layout, ObjectTier, PARTITION_METADATA_FILE, PartitionTier, StoreRoot, TierFactory,
    TieringConfig, TieringService, TopicIdPartition, Uuid,
};

const T0: i64 = 1_700_000_000_000;

fn log_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        remote_storage_enable: true,
        local_retention_bytes: 0,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open_dir(root: &FsPath, clock: &Arc<ManualClock>) -> Arc<LogDir> {
    let options = LogOpenOptions {
        clock: clock.clone(),
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    Arc::new(LogDir::open_with(root, log_config(), options).unwrap())
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// `records` records of about 100 bytes each: several sealed segments of about 1 KiB.
fn fill(log: &Log, records: usize) {
    for i in 0..records {
        let mut b = BatchBuilder::new(0);
        let value = format!("{}-{i}-{}", log.dir().display(), "v".repeat(40));
        b.append(T0, None, Some(value.as_bytes()), &[]);
        log.append(&b.build().unwrap()).unwrap();
    }
}

fn values(log: &Log) -> Vec<(i64, Vec<u8>)> {
    let mut reader = log.owned_reader(log.log_start_offset(), Isolation::ReadUncommitted);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        out.push((r.record.offset, r.record.value.map(|v| v.to_vec()).unwrap()));
    }
    out
}

fn topic_id(tp: &TopicPartition) -> Uuid {
    Uuid::from_halves(7, 1 + tp.partition as u64 + tp.topic.len() as u64 * 100)
}

/// Every partition in `store` (one store for all, each under its own layout).
fn shared_store(store: Arc<dyn ObjectStore>) -> Box<TierFactory> {
    Box::new(move |tp: &TopicPartition, _log: &Log| {
        let partition = TopicIdPartition::new(&tp.topic, tp.partition, topic_id(tp))?;
        let tier = PartitionTier::new(store.clone(), Layout::new(Path::default(), partition), 1);
        ObjectTier::from_partition_tier(tier).map(Arc::new)
    })
}

fn service(
    dir: &Arc<LogDir>,
    clock: &Arc<ManualClock>,
    config: TieringConfig,
    factory: Box<TierFactory>,
) -> TieringService {
    TieringService::with_factory(dir.clone(), config, clock.clone(), factory).unwrap()
}

fn no_jitter() -> TieringConfig {
    TieringConfig {
        task_retry_jitter: 0.0,
        ..TieringConfig::default()
    }
}

#[test]
fn every_enabled_partition_of_a_log_dir_is_tiered_and_reads_span_both_tiers() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let tiered = [tp("orders", 0), tp("orders", 1), tp("audit", 0)];
    for tp in &tiered {
        fill(&dir.get_or_create(tp).unwrap(), 40);
    }
    dir.alter_topic_config("local", [("remote.storage.enable", "false")])
        .unwrap();
    let local = dir.get_or_create(&tp("local", 0)).unwrap();
    fill(&local, 40);
    let before: Vec<_> = tiered
        .iter()
        .map(|tp| values(&dir.log(tp).unwrap()))
        .collect();
    // Kafka's partition.metadata gives each partition its topic id (`TieringService::new`).
    for tp in &tiered {
        let log = dir.log(tp).unwrap();
        std::fs::write(
            log.dir().join(PARTITION_METADATA_FILE),
            format!("version: 0\ntopic_id: {}\n", topic_id(tp)),
        )
        .unwrap();
    }
    let remote = tempfile::tempdir().unwrap();
    let store = crate::open_store(&format!("file://{}", remote.path().display())).unwrap();
    let service = TieringService::new(
        dir.clone(),
        StoreRoot {
            store: store.store,
            root: store.root,
        },
        TieringConfig::default(),
        clock.clone(),
    )
    .unwrap();
    let report = service.run_once();
    assert_eq!(report.failures().count(), 0, "{report:?}");
    assert_eq!(
        report.partitions.keys().cloned().collect::<Vec<_>>(),
        {
            let mut t = tiered.to_vec();
            t.sort();
            t
        },
        "the partition without remote storage is left alone"
    );
    for tp in &tiered {
        let run = &report.partitions[tp];
        let log = dir.log(tp).unwrap();
        assert!(run.attached.is_some());
        assert!(run.copied.len() >= 3, "{tp}: {run:?}");
        assert_eq!(
            log.highest_remote_offset(),
            run.copied.last().unwrap().end_offset
        );
        // Kafka's layout, under the partition's topic id.
        let partition = TopicIdPartition::new(&tp.topic, tp.partition, topic_id(tp)).unwrap();
        assert!(
            remote
                .path()
                .join(crate::DATA_ROOT)
                .join(partition.directory_name())
                .is_dir()
        );
        let stats = service.tiers()[tp].stats().snapshot();
        assert_eq!(stats.copy_requests, run.copied.len() as u64);
        assert_eq!(
            stats.copy_bytes,
            run.copied.iter().map(|c| c.size_in_bytes).sum::<u64>()
        );
        assert_eq!((stats.copy_lag_bytes, stats.copy_lag_segments), (0, 0));
    }
    assert_eq!(local.highest_remote_offset(), -1);
    // The LogDir ticker's local retention now deletes what is remote; reads span both tiers.
    dir.tick(T0).unwrap();
    for (tp, before) in tiered.iter().zip(&before) {
        let log = dir.log(tp).unwrap();
        assert!(log.local_log_start_offset() > 0, "{tp}");
        assert_eq!(&values(&log), before, "{tp}");
        assert!(service.tiers()[tp].stats().snapshot().fetch_bytes > 0);
    }
    // Nothing is due again before the task interval.
    assert!(service.run_once().partitions.is_empty());
    assert_eq!(report.next_due_ms, T0 + 30_000);
    // Every partition's reads count against one broker-wide fetch quota (Kafka's
    // `rlmFetchQuotaManager`), unbounded by default.
    let tiers = service.tiers();
    let quotas: Vec<_> = tiers.values().map(|t| t.fetch_quota().unwrap()).collect();
    assert!(quotas.iter().all(|q| Arc::ptr_eq(q, quotas[0])));
    assert_eq!(quotas[0].throttle_time_ms(), 0);
}

#[test]
fn retriable_failures_back_off_exponentially_and_never_lose_local_data() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let orders = tp("orders", 0);
    let log = dir.get_or_create(&orders).unwrap();
    fill(&log, 40);
    let before = values(&log);
    let segments = log.segment_count();
    let faulty = FaultyStore::new(Arc::new(InMemory::new()));
    let service = service(
        &dir,
        &clock,
        no_jitter(),
        shared_store(Arc::new(faulty.clone())),
    );
    // The first copy's first request (COPY_SEGMENT_STARTED) is throttled, then the next
    // attempt's too: 500 ms, then 1000 ms.
    faulty.fault_at(0, Fault::Throttle);
    faulty.fault_at(1, Fault::Fail);
    for (attempt, wait) in [(1, 500), (2, 1000)] {
        let report = service.run_once();
        let failure = report.partitions[&orders].copy_failure.as_ref().unwrap();
        assert!(failure.retriable, "{failure:?}");
        assert_eq!(failure.attempt, attempt);
        assert_eq!(failure.next_run_ms, clock.now_ms() + wait);
        assert_eq!(log.highest_remote_offset(), -1);
        // Kafka's copy lag: every sealed segment, the active one left out.
        let sizes: Vec<u64> = log.segments().iter().map(|s| s.size_bytes).collect();
        let stats = service.tiers()[&orders].stats().snapshot();
        assert_eq!(stats.copy_lag_segments, sizes.len() as u64 - 1);
        assert_eq!(
            stats.copy_lag_bytes,
            sizes[..sizes.len() - 1].iter().sum::<u64>()
        );
        // Local retention deletes nothing that is not remote.
        dir.tick(clock.now_ms()).unwrap();
        assert_eq!(log.segment_count(), segments);
        assert_eq!(values(&log), before);
        // Not due before the backoff is over.
        clock.advance(wait - 1);
        assert!(!service.run_once().partitions.contains_key(&orders));
        clock.advance(1);
    }
    assert_eq!(service.tiers()[&orders].stats().snapshot().copy_errors, 2);
    let report = service.run_once();
    let run = &report.partitions[&orders];
    assert!(run.copy_failure.is_none(), "{run:?}");
    assert!(!run.copied.is_empty());
    dir.tick(clock.now_ms()).unwrap();
    assert!(log.local_log_start_offset() > 0);
    assert_eq!(values(&log), before);
    // After a success the count starts again: the next failure waits 500 ms.
    fill(&log, 20);
    clock.advance(30_000);
    faulty.fault_at(0, Fault::Fail);
    let report = service.run_once();
    let failure = report.partitions[&orders].copy_failure.as_ref().unwrap();
    assert_eq!(
        (failure.attempt, failure.next_run_ms),
        (1, clock.now_ms() + 500)
    );
}

#[test]
fn a_non_retriable_failure_waits_for_the_task_interval() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let orders = tp("orders", 0);
    let log = dir.get_or_create(&orders).unwrap();
    fill(&log, 40);
    let faulty = FaultyStore::new(Arc::new(InMemory::new()));
    let service = service(
        &dir,
        &clock,
        no_jitter(),
        shared_store(Arc::new(faulty.clone())),
    );
    faulty.fault_at(0, Fault::Deny);
    let report = service.run_once();
    let failure = report.partitions[&orders].copy_failure.as_ref().unwrap();
    assert!(!failure.retriable, "{failure:?}");
    assert_eq!(failure.next_run_ms, T0 + 30_000);
    clock.advance(29_999);
    assert!(service.run_once().partitions.is_empty());
    clock.advance(1);
    assert!(!service.run_once().partitions[&orders].copied.is_empty());
}

#[test]
fn one_partition_failing_does_not_stop_the_others() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let (broken, healthy) = (tp("orders", 0), tp("orders", 1));
    for tp in [&broken, &healthy] {
        fill(&dir.get_or_create(tp).unwrap(), 40);
    }
    let broken_before = values(&dir.log(&broken).unwrap());
    let dead = FaultyStore::new(Arc::new(InMemory::new()));
    dead.fault_at(0, Fault::Crash(CrashMode::Before));
    let dead: Arc<dyn ObjectStore> = Arc::new(dead);
    let good: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (dead_factory, good_factory) = (shared_store(dead), shared_store(good));
    let broken_name = broken.clone();
    let factory: Box<TierFactory> = Box::new(move |tp: &TopicPartition, log: &Log| {
        if *tp == broken_name {
            dead_factory(tp, log)
        } else {
            good_factory(tp, log)
        }
    });
    let config = TieringConfig {
        copier_thread_pool_size: 1,
        ..no_jitter()
    };
    let service = service(&dir, &clock, config, factory);
    let report = service.run_once();
    assert!(report.partitions[&broken].copy_failure.is_some());
    assert!(report.partitions[&healthy].copy_failure.is_none());
    assert!(!report.partitions[&healthy].copied.is_empty());
    dir.tick(T0).unwrap();
    let log = dir.log(&broken).unwrap();
    assert_eq!(log.local_log_start_offset(), 0);
    assert_eq!(values(&log), broken_before);
    assert!(dir.log(&healthy).unwrap().local_log_start_offset() > 0);
}

#[test]
fn the_copy_quota_bounds_the_bytes_copied_per_window_on_a_fake_clock() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    for partition in 0..2 {
        fill(&dir.get_or_create(&tp("orders", partition)).unwrap(), 120);
    }
    let backlog: u64 = dir
        .logs()
        .iter()
        .map(|(_, log)| log.only_local_segments_size() - log.segments().last().unwrap().size_bytes)
        .sum();
    let largest = dir
        .logs()
        .iter()
        .flat_map(|(_, log)| log.segments())
        .map(|s| s.size_bytes)
        .max()
        .unwrap();
    const RATE: u64 = 2048;
    let config = TieringConfig {
        copy_max_bytes_per_second: RATE,
        copy_quota_window_num: 2,
        copy_quota_window_size_seconds: 1,
        copier_thread_pool_size: 2,
        ..no_jitter()
    };
    let service = service(
        &dir,
        &clock,
        config,
        shared_store(Arc::new(InMemory::new())),
    );
    let mut copied_at: Vec<(i64, u64)> = Vec::new();
    let mut throttled = 0;
    while copied_at.iter().map(|c| c.1).sum::<u64>() < backlog {
        let report = service.run_once();
        for run in report.partitions.values() {
            assert!(run.copy_failure.is_none(), "{run:?}");
            throttled += usize::from(run.throttled_ms.is_some());
            for c in &run.copied {
                copied_at.push((clock.now_ms() - T0, c.size_in_bytes));
            }
        }
        assert!(report.next_due_ms > clock.now_ms());
        clock.set(report.next_due_ms);
        assert!(clock.now_ms() - T0 < 60_000, "the copy never finished");
    }
    assert!(throttled > 0);
    // Every span of two windows (2 s) holds at most two windows' worth, plus the one segment
    // the quota lets start when it is just within the bound.
    for &(start, _) in &copied_at {
        let in_span: u64 = copied_at
            .iter()
            .filter(|(t, _)| *t >= start && *t < start + 2000)
            .map(|c| c.1)
            .sum();
        assert!(
            in_span <= 2 * RATE + largest,
            "{in_span} bytes from {start} ms: {copied_at:?}"
        );
    }
    // And the whole backlog took about backlog / rate.
    let took_ms = copied_at.last().unwrap().0;
    let floor_ms = ((backlog.saturating_sub(2 * RATE + largest)) * 1000 / RATE) as i64;
    assert!(took_ms >= floor_ms, "{took_ms} ms < {floor_ms} ms");
    let waited: u64 = service
        .tiers()
        .values()
        .map(|t| t.stats().snapshot().copy_throttle_time_ms)
        .sum();
    assert!(waited > 0);
}

#[test]
fn copies_run_on_at_most_the_copier_pool_size_at_once() {
    for pool in [1, 2] {
        let root = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let dir = open_dir(root.path(), &clock);
        for partition in 0..4 {
            fill(&dir.get_or_create(&tp("orders", partition)).unwrap(), 25);
        }
        let faulty = FaultyStore::new(Arc::new(InMemory::new()));
        faulty.delay(Duration::from_millis(3));
        let config = TieringConfig {
            copier_thread_pool_size: pool,
            expiration_thread_pool_size: pool,
            ..no_jitter()
        };
        let service = service(&dir, &clock, config, shared_store(Arc::new(faulty.clone())));
        let report = service.run_once();
        assert_eq!(report.partitions.len(), 4);
        assert!(
            report
                .partitions
                .values()
                .all(|r| r.copy_failure.is_none() && !r.copied.is_empty())
        );
        // Each copy uploads its parts at once; the pool bounds the copies.
        assert_eq!(faulty.max_segments_in_flight(), pool, "pool size {pool}");
        assert!(
            faulty.max_in_flight() > pool,
            "pool size {pool}: parts not uploaded at once"
        );
    }
}

#[test]
fn the_background_thread_tiers_and_stops_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let orders = tp("orders", 0);
    let log = dir.get_or_create(&orders).unwrap();
    fill(&log, 40);
    let service = Arc::new(service(
        &dir,
        &clock,
        TieringConfig::default(),
        shared_store(Arc::new(InMemory::new())),
    ));
    let handle = service.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.highest_remote_offset() < 0 {
        assert!(Instant::now() < deadline, "the service never copied");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The thread now waits for the next task (30 s away): stopping does not wait for it.
    let stopping = Instant::now();
    handle.stop();
    assert!(stopping.elapsed() < Duration::from_secs(5));
    // Dropping a handle stops it too.
    drop(service.spawn().unwrap());
}

#[test]
fn a_panicking_task_is_its_partitions_failure_not_the_services_end() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let (bad, good) = (tp("orders", 0), tp("orders", 1));
    for tp in [&bad, &good] {
        fill(&dir.get_or_create(tp).unwrap(), 40);
    }
    let store = shared_store(Arc::new(InMemory::new()));
    let bad_name = bad.clone();
    let factory: Box<TierFactory> = Box::new(move |tp: &TopicPartition, log: &Log| {
        assert!(*tp != bad_name, "a bug in the tier factory");
        store(tp, log)
    });
    let service = service(&dir, &clock, no_jitter(), factory);
    let report = service.run_once();
    let failure = report.partitions[&bad].copy_failure.as_ref().unwrap();
    assert!(
        matches!(&failure.error, crate::Error::Panicked { task: "copy", message, .. } if message.contains("a bug")),
        "{failure:?}"
    );
    assert!(!failure.retriable);
    assert_eq!(failure.next_run_ms, T0 + 30_000);
    assert!(!report.partitions[&good].copied.is_empty());
    assert_eq!(dir.log(&bad).unwrap().highest_remote_offset(), -1);
}

#[test]
fn expiries_run_on_at_most_the_expiration_pool_size_at_once() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    for partition in 0..4 {
        fill(&dir.get_or_create(&tp("orders", partition)).unwrap(), 25);
    }
    let faulty = FaultyStore::new(Arc::new(InMemory::new()));
    faulty.delay(Duration::from_millis(3));
    let config = TieringConfig {
        copier_thread_pool_size: 4,
        expiration_thread_pool_size: 2,
        ..no_jitter()
    };
    let service = service(&dir, &clock, config, shared_store(Arc::new(faulty.clone())));
    let report = service.run_once();
    assert_eq!(report.failures().count(), 0, "{report:?}");
    assert_eq!(
        faulty.max_segments_in_flight(),
        4,
        "the copies use their own pool"
    );
    // Now remote retention has work in every partition; nothing is left to copy.
    dir.alter_topic_config("orders", [("retention.bytes", "1")])
        .unwrap();
    faulty.reset_max_in_flight();
    clock.advance(30_000);
    let report = service.run_once();
    assert_eq!(report.failures().count(), 0, "{report:?}");
    assert_eq!(report.partitions.len(), 4);
    for run in report.partitions.values() {
        assert!(run.copied.is_empty());
        assert!(!run.expired.as_ref().unwrap().deleted.is_empty(), "{run:?}");
    }
    assert_eq!(faulty.max_segments_in_flight(), 2);
}

#[test]
fn beside_the_log_dir_ticker_local_segments_leave_only_once_copied() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let dir = open_dir(root.path(), &clock);
    let orders = tp("orders", 0);
    let log = dir.get_or_create(&orders).unwrap();
    fill(&log, 40);
    let before = values(&log);
    // The root's ticker runs local retention (local.retention.bytes 0) from the start; nothing
    // may leave before the service copied it.
    let ticker = dir.spawn_ticker(Duration::from_millis(5));
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(log.local_log_start_offset(), 0);
    let service = Arc::new(service(
        &dir,
        &clock,
        TieringConfig::default(),
        shared_store(Arc::new(InMemory::new())),
    ));
    let handle = service.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.local_log_start_offset() == 0 {
        assert!(
            Instant::now() < deadline,
            "local retention never followed the copies"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    handle.stop();
    ticker.stop().unwrap();
    assert!(log.local_log_start_offset() <= log.highest_remote_offset() + 1);
    assert_eq!(values(&log), before);
}
