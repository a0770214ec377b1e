//! The high watermark's rules: monotonic outside truncation, and an opt-in policy for
//! single-node use that moves it with the log end or the durable end.

use crate::Result;
use crate::error::Error;
use crate::log::Log;
use crate::sync::Ordering;
use crate::view::LogView;

/// Who moves the high watermark ([`crate::LogOpenOptions::high_watermark`],
/// [`Log::set_high_watermark_policy`]).
///
/// Consumers reading below the high watermark ([`crate::Isolation::ReadUncommitted`],
/// [`crate::Isolation::ReadCommitted`]) see nothing above it, so the default serves what was
/// appended ([`HighWatermarkPolicy::LogEnd`]): a standalone log has no replicas to wait for,
/// exactly as a Kafka partition with one replica, whose high watermark follows its log end
/// without any fsync. Only a replication layer (a broker, a Raft log) that decides the high
/// watermark itself opts into [`HighWatermarkPolicy::Manual`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HighWatermarkPolicy {
    /// Only [`Log::set_high_watermark`] (a replication layer decides it): Kafka's model for a
    /// replicated partition. Until someone calls it, high-watermark and read-committed
    /// consumers see nothing new. [`Log::open_read_only`] uses it (an inspection shows the
    /// checkpointed high watermark).
    Manual,
    /// Every append publishes the high watermark at the new log end: consumers
    /// ([`crate::Isolation::ReadUncommitted`]) see what is appended at once, as in a Kafka
    /// partition with a single replica. What a consumer saw may be lost by a power failure
    /// before an fsync (choose [`HighWatermarkPolicy::DurableEnd`] when it must not). The
    /// default.
    #[default]
    LogEnd,
    /// The high watermark follows the durable end ([`Log::durable_end_offset`]): consumers see
    /// only what an fsync made durable (a durable append, a flush, a flush policy in
    /// [`Log::tick`]), so nothing they read can be lost by a crash.
    DurableEnd,
}

impl HighWatermarkPolicy {
    pub(crate) fn encode(self) -> usize {
        match self {
            Self::Manual => 0,
            Self::LogEnd => 1,
            Self::DurableEnd => 2,
        }
    }

    pub(crate) fn decode(value: usize) -> Self {
        match value {
            1 => Self::LogEnd,
            2 => Self::DurableEnd,
            _ => Self::Manual,
        }
    }
}

impl Log {
    /// The current [`HighWatermarkPolicy`].
    pub fn high_watermark_policy(&self) -> HighWatermarkPolicy {
        HighWatermarkPolicy::decode(self.high_watermark_policy.load(Ordering::Acquire))
    }

    /// Changes the [`HighWatermarkPolicy`] and applies it at once (the high watermark moves
    /// up to the log end or the durable end; never down).
    ///
    /// # Errors
    /// Segment errors while locating the new high watermark's batch.
    pub fn set_high_watermark_policy(&self, policy: HighWatermarkPolicy) -> Result<()> {
        self.high_watermark_policy
            .store(policy.encode(), Ordering::Release);
        match policy {
            HighWatermarkPolicy::Manual => Ok(()),
            HighWatermarkPolicy::LogEnd => self.raise_high_watermark(i64::MAX),
            HighWatermarkPolicy::DurableEnd => self.raise_high_watermark(self.durable_end_offset()),
        }
    }

    /// `view` with the high watermark at its log end when the policy says so (the append
    /// publishes it in the same snapshot as the new log end).
    pub(crate) fn with_high_watermark_policy<S>(&self, mut view: LogView<S>) -> LogView<S> {
        if self.high_watermark_policy() == HighWatermarkPolicy::LogEnd {
            view.high_watermark = view.end;
        }
        view
    }

    /// After something may have moved the durable end (an append, a flush, a tick): raises
    /// the high watermark to it under [`HighWatermarkPolicy::DurableEnd`]. Called without
    /// the writer lock.
    pub(crate) fn follow_durable_end(&self) -> Result<()> {
        if self.high_watermark_policy() != HighWatermarkPolicy::DurableEnd {
            return Ok(());
        }
        self.raise_high_watermark(self.durable_end_offset())
    }

    /// Raises the high watermark to `target` (clamped to the log end); never lowers it.
    fn raise_high_watermark(&self, target: i64) -> Result<()> {
        let _writer = self.lock_writer();
        let view = self.published.load();
        let target = target.min(view.end.offset);
        if target <= view.high_watermark.offset {
            return Ok(());
        }
        let metadata = self.offset_metadata(&view, target)?;
        self.published.publish(LogView {
            high_watermark: metadata,
            ..(*view).clone()
        });
        Ok(())
    }

    /// The error for a backward move of the high watermark outside truncation.
    pub(crate) fn high_watermark_regression(&self, current: i64, requested: i64) -> Error {
        Error::HighWatermarkRegression {
            dir: self.dir.clone(),
            high_watermark: current,
            requested,
        }
    }
}
