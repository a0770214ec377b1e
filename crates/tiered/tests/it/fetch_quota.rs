//! The KIP-956 remote fetch quota (`remote.log.manager.fetch.max.bytes.per.second`) on a real
//! log: a fetch that would read from the remote tier while the rate is above the quota returns
//! no records (Kafka's `ReplicaManager` answers such a fetch empty, never blocking it) and is
//! counted; local reads are never throttled; once the rate is back within the quota the same
//! fetch reads. Time is a `ManualClock`.

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path;
use seglog::{
    BatchBuilder, Clock, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions,
    ManualClock,
};
use seglog_tiered::{FetchQuota, Layout, ObjectTier, Tier, TieringConfig, TopicIdPartition, Uuid};

const T0: i64 = 1_700_000_000_000;

#[test]
fn remote_fetches_over_the_quota_return_empty_and_are_counted_until_the_rate_falls() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let config = LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        remote_storage_enable: true,
        local_retention_bytes: 0,
        ..LogConfig::default()
    };
    let options = LogOpenOptions {
        clock: clock.clone(),
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    let log = Log::open_with(dir.path(), config, options).unwrap();
    for i in 0..60 {
        let mut b = BatchBuilder::new(0);
        b.append(
            T0,
            None,
            Some(format!("{i}-{}", "x".repeat(60)).as_bytes()),
            &[],
        );
        log.append(&b.build().unwrap()).unwrap();
    }
    // 500 B/s over 2 windows of 1 s, on the test's clock.
    let tiering = TieringConfig {
        fetch_max_bytes_per_second: 500,
        fetch_quota_window_num: 2,
        fetch_quota_window_size_seconds: 1,
        ..TieringConfig::default()
    };
    tiering.validate().unwrap();
    let quota = Arc::new(FetchQuota::new(&tiering, clock.clone() as Arc<dyn Clock>));
    let layout = Layout::new(
        Path::default(),
        TopicIdPartition::new("orders", 0, Uuid::from_halves(5, 6)).unwrap(),
    );
    let remote = Arc::new(
        ObjectTier::new(Arc::new(InMemory::new()), layout, 1)
            .unwrap()
            .with_fetch_quota(quota.clone()),
    );
    let tier = Tier::new(remote.clone());
    tier.attach(&log).unwrap();
    assert!(!tier.copy(&log).unwrap().copied.is_empty());
    log.delete_old_segments().unwrap();
    let local_start = log.local_log_start_offset();
    assert!(local_start > 10 && log.log_start_offset() == 0);

    // The first remote fetch goes (nothing measured yet) and counts its bytes: over 500 B.
    let mut buf = Vec::new();
    let first = log
        .read_into(0, 4096, Isolation::ReadUncommitted, true, &mut buf)
        .unwrap();
    let fetched = remote.stats().snapshot().fetch_bytes;
    assert!(!buf.is_empty() && fetched > 500, "{fetched}");
    assert_eq!(first.fetch_offset.offset, 0);
    assert!(quota.throttle_time_ms() > 0);
    assert_eq!(remote.stats().snapshot().fetch_throttled, 0);

    // Over the quota: the next remote fetch returns nothing, fetches nothing, and says where
    // the log stands; read and read_committed alike.
    let throttled = log
        .read_into(5, 4096, Isolation::ReadUncommitted, true, &mut buf)
        .unwrap();
    assert!(buf.is_empty());
    assert_eq!(throttled.fetch_offset.offset, 5);
    assert_eq!(throttled.log_end_offset, log.log_end_offset());
    assert_eq!(throttled.high_watermark, log.log_end_offset());
    assert_eq!(throttled.log_start_offset, 0);
    let data = log.read(5, 4096, Isolation::ReadCommitted, true).unwrap();
    assert_eq!(data.slice.len(), 0);
    assert_eq!(data.aborted_transactions, Some(Vec::new()));
    let stats = remote.stats().snapshot();
    assert_eq!(
        stats.fetch_bytes, fetched,
        "a throttled fetch fetched nothing"
    );
    assert_eq!(stats.fetch_throttled, 2);
    assert!(stats.fetch_throttle_time_ms > 0);
    // A local read is not the remote tier's: never throttled.
    log.read_into(
        local_start,
        4096,
        Isolation::ReadUncommitted,
        true,
        &mut buf,
    )
    .unwrap();
    assert!(!buf.is_empty());
    assert_eq!(remote.stats().snapshot().fetch_throttled, 2);

    // Two windows later the sample is gone: the same fetch reads again.
    clock.advance(2000);
    assert_eq!(quota.throttle_time_ms(), 0);
    log.read_into(5, 4096, Isolation::ReadUncommitted, true, &mut buf)
        .unwrap();
    assert!(!buf.is_empty());
    assert_eq!(remote.stats().snapshot().fetch_throttled, 2);
}

/// The default quota (Kafka's `Long.MAX_VALUE`) never throttles, however much is fetched.
#[test]
fn the_default_fetch_quota_never_throttles() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(T0));
    let quota = FetchQuota::new(&TieringConfig::default(), clock);
    quota.record(u64::MAX / 2);
    quota.record(u64::MAX / 2);
    assert_eq!(quota.throttle_time_ms(), 0);
}
