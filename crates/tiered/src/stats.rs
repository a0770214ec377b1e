//! What the tiering service counts per partition (Kafka's `RemoteStorageMetrics` and the
//! remote parts of `BrokerTopicStats`): always kept as atomics ([`TierStats`], read with
//! [`TierStats::snapshot`]), and with the `metrics` cargo feature also published through the
//! `metrics` facade under the names in [`names`], labelled `topic` and `partition`, as
//! `seglog`'s log metrics are (docs/observability.md).

use std::sync::atomic::{AtomicU64, Ordering};

/// The metric names: Kafka's `RemoteStorageMetrics` (`kafka.server:type=BrokerTopicMetrics`)
/// in Prometheus' snake case with a `seglog_` prefix.
pub mod names {
    /// Kafka's `RemoteCopyBytesPerSec`: bytes of the segments whose copy finished (counter).
    pub const REMOTE_COPY_BYTES: &str = "seglog_remote_copy_bytes_total";
    /// Kafka's `RemoteFetchBytesPerSec`: bytes read from remote `.log`s (counter).
    pub const REMOTE_FETCH_BYTES: &str = "seglog_remote_fetch_bytes_total";
    /// Kafka's `RemoteCopyRequestsPerSec`: segment copies finished (counter).
    pub const REMOTE_COPY_REQUESTS: &str = "seglog_remote_copy_requests_total";
    /// Kafka's `RemoteCopyErrorsPerSec`: copy passes that failed (counter).
    pub const REMOTE_COPY_ERRORS: &str = "seglog_remote_copy_errors_total";
    /// Kafka's `RemoteDeleteRequestsPerSec`: remote segments deleted (counter).
    pub const REMOTE_DELETE_REQUESTS: &str = "seglog_remote_delete_requests_total";
    /// Kafka's `RemoteDeleteErrorsPerSec`: expiry passes that failed (counter).
    pub const REMOTE_DELETE_ERRORS: &str = "seglog_remote_delete_errors_total";
    /// Kafka's `RemoteCopyLagBytes`: bytes of the local segments not yet copied, the active
    /// segment left out (`onlyLocalLogSegmentsSize - activeSegment.size`, gauge).
    pub const REMOTE_COPY_LAG_BYTES: &str = "seglog_remote_copy_lag_bytes";
    /// Kafka's `RemoteCopyLagSegments`: those segments' count (`onlyLocalLogSegmentsCount -
    /// 1`, gauge).
    pub const REMOTE_COPY_LAG_SEGMENTS: &str = "seglog_remote_copy_lag_segments";
    /// Kafka's `RemoteDeleteLagBytes`: bytes of the remote segments an expiry pass chose and
    /// has not deleted yet (gauge).
    pub const REMOTE_DELETE_LAG_BYTES: &str = "seglog_remote_delete_lag_bytes";
    /// Kafka's `RemoteDeleteLagSegments`: their count (gauge).
    pub const REMOTE_DELETE_LAG_SEGMENTS: &str = "seglog_remote_delete_lag_segments";
    /// Kafka's `remote-copy-throttle-time`: milliseconds copies waited for the quota
    /// (counter).
    pub const REMOTE_COPY_THROTTLE_TIME_MS: &str = "seglog_remote_copy_throttle_time_ms_total";
    /// Kafka's `remote-fetch-throttle-time` (recorded by `ReplicaManager` when a fetch meets the
    /// fetch quota): milliseconds of throttle time of the remote fetches the quota turned
    /// away, each returned empty (counter).
    pub const REMOTE_FETCH_THROTTLE_TIME_MS: &str = "seglog_remote_fetch_throttle_time_ms_total";
    /// Remote fetches the fetch quota turned away (the count of Kafka's `remote-fetch-throttle-time`
    /// samples, counter).
    pub const REMOTE_FETCH_THROTTLED: &str = "seglog_remote_fetch_throttled_total";
}

/// A point-in-time copy of a partition's [`TierStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TierStatsSnapshot {
    /// [`names::REMOTE_COPY_BYTES`].
    pub copy_bytes: u64,
    /// [`names::REMOTE_COPY_REQUESTS`].
    pub copy_requests: u64,
    /// [`names::REMOTE_COPY_ERRORS`].
    pub copy_errors: u64,
    /// [`names::REMOTE_FETCH_BYTES`].
    pub fetch_bytes: u64,
    /// [`names::REMOTE_DELETE_REQUESTS`].
    pub delete_requests: u64,
    /// [`names::REMOTE_DELETE_ERRORS`].
    pub delete_errors: u64,
    /// [`names::REMOTE_COPY_LAG_BYTES`].
    pub copy_lag_bytes: u64,
    /// [`names::REMOTE_COPY_LAG_SEGMENTS`].
    pub copy_lag_segments: u64,
    /// [`names::REMOTE_DELETE_LAG_BYTES`].
    pub delete_lag_bytes: u64,
    /// [`names::REMOTE_DELETE_LAG_SEGMENTS`].
    pub delete_lag_segments: u64,
    /// [`names::REMOTE_COPY_THROTTLE_TIME_MS`].
    pub copy_throttle_time_ms: u64,
    /// [`names::REMOTE_FETCH_THROTTLED`].
    pub fetch_throttled: u64,
    /// [`names::REMOTE_FETCH_THROTTLE_TIME_MS`].
    pub fetch_throttle_time_ms: u64,
}

/// One partition's remote-tier counters and gauges.
#[derive(Debug, Default)]
pub struct TierStats {
    copy_bytes: AtomicU64,
    copy_requests: AtomicU64,
    copy_errors: AtomicU64,
    fetch_bytes: AtomicU64,
    delete_requests: AtomicU64,
    delete_errors: AtomicU64,
    copy_lag_bytes: AtomicU64,
    copy_lag_segments: AtomicU64,
    delete_lag_bytes: AtomicU64,
    delete_lag_segments: AtomicU64,
    copy_throttle_time_ms: AtomicU64,
    fetch_throttled: AtomicU64,
    fetch_throttle_time_ms: AtomicU64,
    #[cfg(feature = "metrics")]
    published: Option<Published>,
}

impl TierStats {
    /// Counters for `topic`-`partition`; with the `metrics` feature, also registered with the
    /// recorder installed now (install it first).
    pub fn new(topic: &str, partition: i32) -> TierStats {
        #[cfg(not(feature = "metrics"))]
        let _ = (topic, partition);
        TierStats {
            #[cfg(feature = "metrics")]
            published: Some(Published::new(topic, partition)),
            ..TierStats::default()
        }
    }

    /// The values now.
    pub fn snapshot(&self) -> TierStatsSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TierStatsSnapshot {
            copy_bytes: get(&self.copy_bytes),
            copy_requests: get(&self.copy_requests),
            copy_errors: get(&self.copy_errors),
            fetch_bytes: get(&self.fetch_bytes),
            delete_requests: get(&self.delete_requests),
            delete_errors: get(&self.delete_errors),
            copy_lag_bytes: get(&self.copy_lag_bytes),
            copy_lag_segments: get(&self.copy_lag_segments),
            delete_lag_bytes: get(&self.delete_lag_bytes),
            delete_lag_segments: get(&self.delete_lag_segments),
            copy_throttle_time_ms: get(&self.copy_throttle_time_ms),
            fetch_throttled: get(&self.fetch_throttled),
            fetch_throttle_time_ms: get(&self.fetch_throttle_time_ms),
        }
    }

    /// A segment of `bytes` bytes reached COPY_SEGMENT_FINISHED.
    pub(crate) fn copied(&self, bytes: u64) {
        self.copy_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.copy_requests.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.copy_bytes.increment(bytes);
            p.copy_requests.increment(1);
        }
    }

    /// A copy pass failed.
    pub(crate) fn copy_failed(&self) {
        self.copy_errors.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.copy_errors.increment(1);
        }
    }

    /// `bytes` were read from a remote `.log`.
    pub(crate) fn fetched(&self, bytes: u64) {
        self.fetch_bytes.fetch_add(bytes, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.fetch_bytes.increment(bytes);
        }
    }

    /// A remote segment was deleted.
    pub(crate) fn deleted(&self) {
        self.delete_requests.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.delete_requests.increment(1);
        }
    }

    /// An expiry pass failed.
    pub(crate) fn delete_failed(&self) {
        self.delete_errors.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.delete_errors.increment(1);
        }
    }

    /// Copies waited `ms` for the quota.
    pub(crate) fn throttled(&self, ms: u64) {
        self.copy_throttle_time_ms.fetch_add(ms, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.copy_throttle_time_ms.increment(ms);
        }
    }

    /// A remote fetch was turned away by the fetch quota, `ms` before it would be within it.
    pub(crate) fn fetch_throttled(&self, ms: u64) {
        self.fetch_throttled.fetch_add(1, Ordering::Relaxed);
        self.fetch_throttle_time_ms.fetch_add(ms, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.fetch_throttled.increment(1);
            p.fetch_throttle_time_ms.increment(ms);
        }
    }

    /// The copy lag now (Kafka's `recordLagStats`).
    pub(crate) fn copy_lag(&self, bytes: u64, segments: u64) {
        self.copy_lag_bytes.store(bytes, Ordering::Relaxed);
        self.copy_lag_segments.store(segments, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.copy_lag_bytes.set(bytes as f64);
            p.copy_lag_segments.set(segments as f64);
        }
    }

    /// The delete lag now (Kafka's `updateRemoteDeleteLagWith`).
    pub(crate) fn delete_lag(&self, bytes: u64, segments: u64) {
        self.delete_lag_bytes.store(bytes, Ordering::Relaxed);
        self.delete_lag_segments.store(segments, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(p) = &self.published {
            p.delete_lag_bytes.set(bytes as f64);
            p.delete_lag_segments.set(segments as f64);
        }
    }
}

/// The facade's handles (feature `metrics`).
#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Published {
    copy_bytes: metrics::Counter,
    copy_requests: metrics::Counter,
    copy_errors: metrics::Counter,
    fetch_bytes: metrics::Counter,
    delete_requests: metrics::Counter,
    delete_errors: metrics::Counter,
    copy_lag_bytes: metrics::Gauge,
    copy_lag_segments: metrics::Gauge,
    delete_lag_bytes: metrics::Gauge,
    delete_lag_segments: metrics::Gauge,
    copy_throttle_time_ms: metrics::Counter,
    fetch_throttled: metrics::Counter,
    fetch_throttle_time_ms: metrics::Counter,
}

#[cfg(feature = "metrics")]
impl Published {
    fn new(topic: &str, partition: i32) -> Published {
        use names::*;
        let labels = vec![
            metrics::Label::new("topic", topic.to_owned()),
            metrics::Label::new("partition", partition.to_string()),
        ];
        metrics::describe_counter!(
            REMOTE_COPY_BYTES,
            metrics::Unit::Bytes,
            "Kafka's RemoteCopyBytesPerSec"
        );
        metrics::describe_counter!(
            REMOTE_FETCH_BYTES,
            metrics::Unit::Bytes,
            "Kafka's RemoteFetchBytesPerSec"
        );
        metrics::describe_gauge!(
            REMOTE_COPY_LAG_BYTES,
            metrics::Unit::Bytes,
            "Kafka's RemoteCopyLagBytes"
        );
        metrics::describe_gauge!(REMOTE_COPY_LAG_SEGMENTS, "Kafka's RemoteCopyLagSegments");
        Published {
            copy_bytes: metrics::counter!(REMOTE_COPY_BYTES, labels.clone()),
            copy_requests: metrics::counter!(REMOTE_COPY_REQUESTS, labels.clone()),
            copy_errors: metrics::counter!(REMOTE_COPY_ERRORS, labels.clone()),
            fetch_bytes: metrics::counter!(REMOTE_FETCH_BYTES, labels.clone()),
            delete_requests: metrics::counter!(REMOTE_DELETE_REQUESTS, labels.clone()),
            delete_errors: metrics::counter!(REMOTE_DELETE_ERRORS, labels.clone()),
            copy_lag_bytes: metrics::gauge!(REMOTE_COPY_LAG_BYTES, labels.clone()),
            copy_lag_segments: metrics::gauge!(REMOTE_COPY_LAG_SEGMENTS, labels.clone()),
            delete_lag_bytes: metrics::gauge!(REMOTE_DELETE_LAG_BYTES, labels.clone()),
            delete_lag_segments: metrics::gauge!(REMOTE_DELETE_LAG_SEGMENTS, labels.clone()),
            copy_throttle_time_ms: metrics::counter!(REMOTE_COPY_THROTTLE_TIME_MS, labels.clone()),
            fetch_throttled: metrics::counter!(REMOTE_FETCH_THROTTLED, labels.clone()),
            fetch_throttle_time_ms: metrics::counter!(REMOTE_FETCH_THROTTLE_TIME_MS, labels),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_follows_every_update() {
        let stats = TierStats::new("orders", 3);
        stats.copied(100);
        stats.copied(50);
        stats.copy_failed();
        stats.fetched(7);
        stats.deleted();
        stats.delete_failed();
        stats.throttled(40);
        stats.fetch_throttled(25);
        stats.fetch_throttled(5);
        stats.copy_lag(300, 2);
        stats.delete_lag(150, 1);
        assert_eq!(
            stats.snapshot(),
            TierStatsSnapshot {
                copy_bytes: 150,
                copy_requests: 2,
                copy_errors: 1,
                fetch_bytes: 7,
                delete_requests: 1,
                delete_errors: 1,
                copy_lag_bytes: 300,
                copy_lag_segments: 2,
                delete_lag_bytes: 150,
                delete_lag_segments: 1,
                copy_throttle_time_ms: 40,
                fetch_throttled: 2,
                fetch_throttle_time_ms: 30,
            }
        );
        // Gauges are set, not added.
        stats.copy_lag(0, 0);
        assert_eq!(stats.snapshot().copy_lag_bytes, 0);
    }

    /// With the `metrics` feature the same values reach the installed recorder, labelled with
    /// the partition.
    #[cfg(feature = "metrics")]
    #[test]
    fn the_facade_gets_the_same_values_labelled_with_the_partition() {
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex};

        use metrics::{
            Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
        };

        #[derive(Debug, Default)]
        struct Values(Mutex<HashMap<String, Arc<AtomicU64>>>);

        impl Values {
            fn handle(&self, key: &Key) -> Arc<AtomicU64> {
                let labels: Vec<String> = key
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect();
                assert_eq!(labels, ["topic=orders", "partition=3"], "{key:?}");
                let mut values = self.0.lock().unwrap();
                Arc::clone(values.entry(key.name().to_string()).or_default())
            }

            fn get(&self, name: &str) -> u64 {
                self.0.lock().unwrap()[name].load(Ordering::Relaxed)
            }
        }

        impl Recorder for Values {
            fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
            fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
            fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
            fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
                Counter::from_arc(self.handle(key))
            }
            fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
                Gauge::from_arc(self.handle(key))
            }
            fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
                Histogram::noop()
            }
        }

        let values = Values::default();
        let stats = metrics::with_local_recorder(&values, || TierStats::new("orders", 3));
        stats.copied(100);
        stats.fetched(9);
        stats.copy_failed();
        stats.copy_lag(300, 2);
        stats.fetch_throttled(12);
        assert_eq!(values.get(names::REMOTE_FETCH_THROTTLED), 1);
        assert_eq!(values.get(names::REMOTE_FETCH_THROTTLE_TIME_MS), 12);
        assert_eq!(values.get(names::REMOTE_COPY_BYTES), 100);
        assert_eq!(values.get(names::REMOTE_COPY_REQUESTS), 1);
        assert_eq!(values.get(names::REMOTE_FETCH_BYTES), 9);
        assert_eq!(values.get(names::REMOTE_COPY_ERRORS), 1);
        assert_eq!(
            f64::from_bits(values.get(names::REMOTE_COPY_LAG_BYTES)),
            300.0
        );
        assert_eq!(
            f64::from_bits(values.get(names::REMOTE_COPY_LAG_SEGMENTS)),
            2.0
        );
    }
}
