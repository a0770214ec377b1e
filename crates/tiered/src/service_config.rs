//! The settings of the background tiering service ([`crate::TieringService`]), named and
//! defaulted as Kafka 4.4's `RemoteLogManagerConfig` (KIP-405, KIP-956 for the quota), and the
//! retry backoff they define (Kafka's `ExponentialBackoff`).

use crate::{Error, Result};

/// How the tiering service schedules, bounds and retries its work. Every field mirrors a
/// broker setting of Kafka's `RemoteLogManagerConfig`, with its default.
#[derive(Debug, Clone, PartialEq)]
pub struct TieringConfig {
    /// At most this many partitions copy at once. Kafka's
    /// `remote.log.manager.copier.thread.pool.size`. Default: 10. At least 1.
    pub copier_thread_pool_size: usize,
    /// At most this many partitions run remote retention at once. Kafka's
    /// `remote.log.manager.expiration.thread.pool.size`. Default: 10. At least 1.
    pub expiration_thread_pool_size: usize,
    /// Each partition's copy and expiry run this often. Kafka's
    /// `remote.log.manager.task.interval.ms`. Default: 30000. At least 1.
    pub task_interval_ms: u64,
    /// The first retry after a retriable failure waits this long. Kafka's
    /// `remote.log.manager.task.retry.backoff.ms`. Default: 500. At least 1.
    pub task_retry_backoff_ms: u64,
    /// Retries wait at most this long (the wait doubles per consecutive failure up to it).
    /// Kafka's `remote.log.manager.task.retry.backoff.max.ms`. Default: 30000. At least 1.
    pub task_retry_backoff_max_ms: u64,
    /// Each wait is multiplied by a random factor in `[1 - jitter, 1 + jitter)`. Kafka's
    /// `remote.log.manager.task.retry.jitter`. Default: 0.2. Between 0 and 0.5.
    pub task_retry_jitter: f64,
    /// The copy byte rate over all partitions: a segment's copy starts only while the rate
    /// measured over the quota windows is at most this (the segment's bytes are counted when it
    /// starts, as Kafka's copier does). Kafka's `remote.log.manager.copy.max.bytes.per.second`.
    /// Default: `u64::MAX` (Kafka's `Long.MAX_VALUE`: no limit). At least 1.
    pub copy_max_bytes_per_second: u64,
    /// Samples the copy rate is measured over (the current one and the whole ones before it).
    /// Kafka's `remote.log.manager.copy.quota.window.num`. Default: 11. At least 1.
    pub copy_quota_window_num: u32,
    /// The span of each sample, in seconds. Kafka's
    /// `remote.log.manager.copy.quota.window.size.seconds`. Default: 1. At least 1.
    pub copy_quota_window_size_seconds: u32,
    /// The remote fetch byte rate over all partitions: a fetch that would read from the remote
    /// tier while the rate measured over the fetch quota windows is above this returns no
    /// records (as Kafka's `ReplicaManager` answers an empty fetch for the partition) and is
    /// counted in [`crate::TierStats`] (`fetch_throttled`, `fetch_throttle_time_ms`); the bytes
    /// of every ranged read of a remote `.log` are counted. Kafka's
    /// `remote.log.manager.fetch.max.bytes.per.second`. Default: `u64::MAX` (Kafka's
    /// `Long.MAX_VALUE`: no limit). At least 1.
    pub fetch_max_bytes_per_second: u64,
    /// Samples the fetch rate is measured over. Kafka's
    /// `remote.log.manager.fetch.quota.window.num`. Default: 11. At least 1.
    pub fetch_quota_window_num: u32,
    /// The span of each fetch sample, in seconds. Kafka's
    /// `remote.log.manager.fetch.quota.window.size.seconds`. Default: 1. At least 1.
    pub fetch_quota_window_size_seconds: u32,
    /// The broker id written into every metadata record. Kafka's `broker.id` / `node.id`.
    /// Default: 0.
    pub broker_id: i32,
}

impl Default for TieringConfig {
    fn default() -> Self {
        TieringConfig {
            copier_thread_pool_size: 10,
            expiration_thread_pool_size: 10,
            task_interval_ms: 30_000,
            task_retry_backoff_ms: 500,
            task_retry_backoff_max_ms: 30_000,
            task_retry_jitter: 0.2,
            copy_max_bytes_per_second: u64::MAX,
            copy_quota_window_num: 11,
            copy_quota_window_size_seconds: 1,
            fetch_max_bytes_per_second: u64::MAX,
            fetch_quota_window_num: 11,
            fetch_quota_window_size_seconds: 1,
            broker_id: 0,
        }
    }
}

impl TieringConfig {
    /// Checks every field against Kafka's valid ranges.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the Kafka setting that is out of range.
    pub fn validate(&self) -> Result<()> {
        let bad =
            |name: &'static str, reason: &'static str| Err(Error::InvalidConfig { name, reason });
        if self.copier_thread_pool_size == 0 {
            return bad("remote.log.manager.copier.thread.pool.size", "at least 1");
        }
        if self.expiration_thread_pool_size == 0 {
            return bad(
                "remote.log.manager.expiration.thread.pool.size",
                "at least 1",
            );
        }
        if self.task_interval_ms == 0 {
            return bad("remote.log.manager.task.interval.ms", "at least 1");
        }
        if self.task_retry_backoff_ms == 0 {
            return bad("remote.log.manager.task.retry.backoff.ms", "at least 1");
        }
        if self.task_retry_backoff_max_ms == 0 {
            return bad("remote.log.manager.task.retry.backoff.max.ms", "at least 1");
        }
        if !(0.0..=0.5).contains(&self.task_retry_jitter) {
            return bad("remote.log.manager.task.retry.jitter", "between 0 and 0.5");
        }
        if self.copy_max_bytes_per_second == 0 {
            return bad("remote.log.manager.copy.max.bytes.per.second", "at least 1");
        }
        if self.copy_quota_window_num == 0 {
            return bad("remote.log.manager.copy.quota.window.num", "at least 1");
        }
        if self.copy_quota_window_size_seconds == 0 {
            return bad(
                "remote.log.manager.copy.quota.window.size.seconds",
                "at least 1",
            );
        }
        if self.fetch_max_bytes_per_second == 0 {
            return bad(
                "remote.log.manager.fetch.max.bytes.per.second",
                "at least 1",
            );
        }
        if self.fetch_quota_window_num == 0 {
            return bad("remote.log.manager.fetch.quota.window.num", "at least 1");
        }
        if self.fetch_quota_window_size_seconds == 0 {
            return bad(
                "remote.log.manager.fetch.quota.window.size.seconds",
                "at least 1",
            );
        }
        Ok(())
    }

    /// The wait after `attempt + 1` consecutive retriable failures (Kafka's
    /// `ExponentialBackoff` with multiplier 2): `min(backoff.ms * 2^attempt, backoff.max.ms)`
    /// times `random` mapped onto `[1 - jitter, 1 + jitter)`, at most `backoff.max.ms`.
    /// `random` is a number in `[0, 1)` (the caller's random source, so tests can fix it).
    pub fn retry_backoff_ms(&self, attempt: u32, random: f64) -> u64 {
        let initial = self.task_retry_backoff_ms as f64;
        let max = self.task_retry_backoff_max_ms as f64;
        // Kafka's `expMax`: the exponent at which the term reaches the maximum.
        let exp_max = if max > initial {
            (max / initial).log2()
        } else {
            0.0
        };
        if exp_max == 0.0 {
            return self.task_retry_backoff_ms;
        }
        let term = initial * 2f64.powf(f64::from(attempt).min(exp_max));
        let factor = 1.0 - self.task_retry_jitter + 2.0 * self.task_retry_jitter * random;
        ((term * factor) as u64).min(self.task_retry_backoff_max_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_valid() {
        let config = TieringConfig::default();
        config.validate().unwrap();
        assert_eq!(config.copier_thread_pool_size, 10);
        assert_eq!(config.expiration_thread_pool_size, 10);
        assert_eq!(config.task_interval_ms, 30_000);
        assert_eq!(
            (
                config.task_retry_backoff_ms,
                config.task_retry_backoff_max_ms
            ),
            (500, 30_000)
        );
        assert_eq!(config.copy_quota_window_num, 11);
        assert_eq!(config.copy_quota_window_size_seconds, 1);
        assert_eq!(config.copy_max_bytes_per_second, u64::MAX);
        assert_eq!(config.fetch_max_bytes_per_second, u64::MAX);
        assert_eq!(config.fetch_quota_window_num, 11);
        assert_eq!(config.fetch_quota_window_size_seconds, 1);
    }

    #[test]
    fn out_of_range_settings_name_kafkas_setting() {
        type Change = fn(&mut TieringConfig);
        let cases: [(Change, &str); 7] = [
            (
                |c| c.copier_thread_pool_size = 0,
                "remote.log.manager.copier.thread.pool.size",
            ),
            (
                |c| c.task_retry_jitter = 0.6,
                "remote.log.manager.task.retry.jitter",
            ),
            (
                |c| c.copy_max_bytes_per_second = 0,
                "remote.log.manager.copy.max.bytes.per.second",
            ),
            (
                |c| c.copy_quota_window_size_seconds = 0,
                "remote.log.manager.copy.quota.window.size.seconds",
            ),
            (
                |c| c.fetch_max_bytes_per_second = 0,
                "remote.log.manager.fetch.max.bytes.per.second",
            ),
            (
                |c| c.fetch_quota_window_num = 0,
                "remote.log.manager.fetch.quota.window.num",
            ),
            (
                |c| c.fetch_quota_window_size_seconds = 0,
                "remote.log.manager.fetch.quota.window.size.seconds",
            ),
        ];
        for (change, name) in cases {
            let mut config = TieringConfig::default();
            change(&mut config);
            match config.validate() {
                Err(Error::InvalidConfig { name: found, .. }) => assert_eq!(found, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn backoff_doubles_within_the_jitter_up_to_the_maximum() {
        let config = TieringConfig::default();
        // random 0.5 is the middle of the jitter range: factor 1.
        assert_eq!(config.retry_backoff_ms(0, 0.5), 500);
        assert_eq!(config.retry_backoff_ms(1, 0.5), 1000);
        assert_eq!(config.retry_backoff_ms(3, 0.5), 4000);
        assert_eq!(config.retry_backoff_ms(20, 0.5), 30_000);
        // The jitter applies to the capped term too (Kafka's order).
        assert_eq!(config.retry_backoff_ms(u32::MAX, 0.0), 24_000);
        // The ends of the jitter range: [0.8, 1.2).
        assert_eq!(config.retry_backoff_ms(0, 0.0), 400);
        assert_eq!(config.retry_backoff_ms(1, 0.999_999), 1199);
        let fixed = TieringConfig {
            task_retry_jitter: 0.0,
            ..TieringConfig::default()
        };
        assert_eq!(fixed.retry_backoff_ms(2, 0.9), 2000);
    }
}
