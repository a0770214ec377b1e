//! The byte-rate quotas (KIP-956, Kafka's `RLMQuotaManager` over a `SimpleRate` sensor), one
//! for copies and one for remote fetches: bytes are recorded into samples of
//! `window.size.seconds`; the rate is the bytes of the samples still in the last `window.num`
//! windows over the time since the oldest of them began (at least one window); while it is
//! above the bound, copies wait and remote fetches are turned away ([`FetchQuota`]). Time comes
//! from the caller (the service's clock), so tests measure it with a fake clock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use seglog::Clock;

use crate::TieringConfig;

/// One sample: when it began and the bytes recorded in it.
#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: i64,
    bytes: u64,
}

/// A byte-rate quota measured over sliding samples.
#[derive(Debug, Clone)]
pub(crate) struct ByteRateQuota {
    bytes_per_second: u64,
    window_ms: i64,
    windows: usize,
    samples: VecDeque<Sample>,
}

impl ByteRateQuota {
    /// A quota of `bytes_per_second` over `windows` samples of `window_seconds` each.
    pub(crate) fn new(bytes_per_second: u64, windows: u32, window_seconds: u32) -> ByteRateQuota {
        ByteRateQuota {
            bytes_per_second,
            window_ms: i64::from(window_seconds.max(1)) * 1000,
            windows: windows.max(1) as usize,
            samples: VecDeque::new(),
        }
    }

    /// Whether the quota bounds anything (`Long.MAX_VALUE` does not).
    fn unlimited(&self) -> bool {
        self.bytes_per_second == u64::MAX
    }

    /// `SampledStat.purgeObsoleteSamples`: samples that began `windows` windows ago or more
    /// no longer count.
    fn purge(&mut self, now_ms: i64) {
        let span = self.window_ms.saturating_mul(self.windows as i64);
        while self
            .samples
            .front()
            .is_some_and(|s| now_ms.saturating_sub(s.start_ms) >= span)
        {
            self.samples.pop_front();
        }
    }

    /// Counts `bytes` copied at `now_ms` (into the current sample, or a new one when the
    /// current one is a window old).
    pub(crate) fn record(&mut self, bytes: u64, now_ms: i64) {
        if self.unlimited() {
            return;
        }
        self.purge(now_ms);
        match self.samples.back_mut() {
            Some(last) if now_ms - last.start_ms < self.window_ms => {
                last.bytes = last.bytes.saturating_add(bytes);
            }
            _ => self.samples.push_back(Sample {
                start_ms: now_ms,
                bytes,
            }),
        }
    }

    /// The measured rate in bytes per second at `now_ms` (`SimpleRate.measure`).
    pub(crate) fn rate(&mut self, now_ms: i64) -> f64 {
        self.purge(now_ms);
        let total: u64 = self.samples.iter().map(|s| s.bytes).sum();
        let oldest = self.samples.front().map_or(now_ms, |s| s.start_ms);
        let window_ms = (now_ms - oldest).max(self.window_ms);
        total as f64 * 1000.0 / window_ms as f64
    }

    /// How long copies must wait at `now_ms`: 0 while the rate is within the bound, else
    /// Kafka's `QuotaUtils.throttleTime` (`(rate - bound) / bound * window`), at least 1 ms.
    pub(crate) fn throttle_time_ms(&mut self, now_ms: i64) -> u64 {
        if self.unlimited() {
            return 0;
        }
        let rate = self.rate(now_ms);
        let bound = self.bytes_per_second as f64;
        if rate <= bound {
            return 0;
        }
        let oldest = self.samples.front().map_or(now_ms, |s| s.start_ms);
        let window_ms = (now_ms - oldest).max(self.window_ms) as f64;
        (((rate - bound) / bound * window_ms).round() as u64).max(1)
    }
}

/// The remote fetch quota of a whole broker (Kafka's `RemoteLogManager.rlmFetchQuotaManager`,
/// `remote.log.manager.fetch.max.bytes.per.second` over `.fetch.quota.window.num` samples of
/// `.fetch.quota.window.size.seconds`), shared by every partition's
/// [`crate::ObjectTier`] ([`crate::ObjectTier::with_fetch_quota`]).
///
/// A log asks [`FetchQuota::throttle_time_ms`] before a fetch it would serve from the remote
/// tier (through `seglog::remote::RemoteTier::fetch_throttle_time_ms`); above the bound the fetch
/// returns no records (Kafka's `ReplicaManager.handleOffsetOutOfRangeError` answers an empty
/// `FetchDataInfo` for the partition, never blocking the fetch). The bytes each ranged read of a
/// remote `.log` returns are recorded ([`FetchQuota::record`]).
#[derive(Debug)]
pub struct FetchQuota {
    quota: Mutex<ByteRateQuota>,
    clock: Arc<dyn Clock>,
}

impl FetchQuota {
    /// The fetch quota `config` sets (`fetch_max_bytes_per_second` over
    /// `fetch_quota_window_num` samples of `fetch_quota_window_size_seconds`), on `clock`.
    pub fn new(config: &TieringConfig, clock: Arc<dyn Clock>) -> FetchQuota {
        FetchQuota {
            quota: Mutex::new(ByteRateQuota::new(
                config.fetch_max_bytes_per_second,
                config.fetch_quota_window_num,
                config.fetch_quota_window_size_seconds,
            )),
            clock,
        }
    }

    /// Kafka's `RemoteLogManager.getFetchThrottleTimeMs`: 0 while the measured fetch rate is
    /// within the bound, else how long until it would be (`QuotaUtils.throttleTime`).
    pub fn throttle_time_ms(&self) -> u64 {
        let now = self.clock.now_ms();
        self.lock().throttle_time_ms(now)
    }

    /// Counts `bytes` fetched from the remote tier now.
    pub fn record(&self, bytes: u64) {
        let now = self.clock.now_ms();
        self.lock().record(bytes, now);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteRateQuota> {
        self.quota.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_never_throttles() {
        let mut quota = ByteRateQuota::new(u64::MAX, 11, 1);
        quota.record(u64::MAX, 0);
        assert_eq!(quota.throttle_time_ms(0), 0);
    }

    #[test]
    fn a_burst_waits_until_the_rate_is_back_under_the_bound() {
        // 1000 B/s over 2 windows of 1 s.
        let mut quota = ByteRateQuota::new(1000, 2, 1);
        assert_eq!(quota.throttle_time_ms(0), 0, "nothing recorded yet");
        quota.record(1000, 0);
        // 1000 B over at least one window: exactly the bound.
        assert_eq!(quota.throttle_time_ms(0), 0);
        quota.record(1000, 500);
        // 2000 B over 1 s: (2000 - 1000) / 1000 * 1000 ms.
        assert_eq!(quota.throttle_time_ms(500), 1000);
        // At 1500 the oldest sample is 1.5 s old: 2000 / 1.5 s = 1333 B/s.
        assert_eq!(quota.throttle_time_ms(1500), 500);
        // At 2000 the sample of t=0 is two windows old and dropped: nothing left.
        assert_eq!(quota.throttle_time_ms(2000), 0);
        assert_eq!(quota.rate(2000), 0.0);
    }

    #[test]
    fn samples_roll_per_window() {
        let mut quota = ByteRateQuota::new(100, 3, 1);
        for t in [0, 999, 1000, 2500] {
            quota.record(50, t);
        }
        // Samples: [0: 100], [1000: 50], [2500: 50], all within 3 windows at 2999.
        assert_eq!(quota.samples.len(), 3);
        assert_eq!(quota.rate(2999), 200.0 * 1000.0 / 2999.0);
        // At 3000 the sample begun at 0 is 3 windows old: dropped; 100 B since 1000.
        assert_eq!(quota.rate(3000), 50.0);
        assert_eq!(quota.samples.len(), 2);
    }
}
