//! When the log cleaner can next purge something from the clean section: the earliest
//! KIP-534 delete horizon among the batches it kept (a v2 batch holding tombstones or
//! transaction markers gets `deleteHorizonMs = now + delete.retention.ms` the first time a
//! round keeps it; a round at or after that time drops them). A leaf module: the `Log` holds
//! the cache, the cleaner fills and reads it.
//!
//! Kafka 4.4's `LogCleanerManager.grabFilthiestCompactedLog` does not look at horizons: a log
//! is cleaned only when its dirty ratio or `max.compaction.lag.ms` says so, so tombstones of a
//! log that receives nothing new stay forever. seglog also runs a round when a kept horizon
//! has passed (docs/format.md, deliberate differences).

use std::sync::Arc;

use seglog_segment::Segment;

use crate::Result;
use crate::sync::{Mutex, lock};

/// The cached earliest pending horizon of the clean section.
#[derive(Debug)]
pub(crate) struct PurgeHorizon {
    /// `None`: not known (a fresh open, before the first round or check); `Some(None)`: no
    /// pending horizon; `Some(Some(ms))`: the earliest one.
    next_ms: Mutex<Option<Option<i64>>>,
}

impl PurgeHorizon {
    /// Not known yet.
    pub(crate) fn new() -> Self {
        Self {
            next_ms: Mutex::new(None),
        }
    }

    /// The earliest pending horizon of the clean section (`clean()`: the segments below the
    /// cleaner checkpoint), read from their batch headers the first time and cached until
    /// [`PurgeHorizon::set`] (a cached answer lists no segment).
    pub(crate) fn next_ms(&self, clean: impl FnOnce() -> Vec<Arc<Segment>>) -> Result<Option<i64>> {
        let mut next = lock(&self.next_ms);
        if let Some(known) = *next {
            return Ok(known);
        }
        // Nothing says which horizons a round already judged: count them all (a batch kept
        // past its horizon, as a producer's last batch, then costs one round, after which
        // `set` leaves it out).
        let found = earliest_horizon(clean().iter(), i64::MIN)?;
        *next = Some(found);
        Ok(found)
    }

    /// After a round at `round_ms`: the earliest horizon of `clean` later than `round_ms`.
    /// A horizon at or before it was already judged by that round: what it kept is kept for
    /// another reason (a producer's last batch, a marker whose transaction still has data),
    /// and a new round would keep it again.
    pub(crate) fn set<'a>(
        &self,
        clean: impl Iterator<Item = &'a Arc<Segment>>,
        round_ms: i64,
    ) -> Result<Option<i64>> {
        let found = earliest_horizon(clean, round_ms);
        // A failed read leaves it unknown: the next check reads again.
        *lock(&self.next_ms) = found.as_ref().ok().copied();
        found
    }
}

/// The smallest delete horizon after `after_ms` among the batches of `segments`.
fn earliest_horizon<'a>(
    segments: impl Iterator<Item = &'a Arc<Segment>>,
    after_ms: i64,
) -> Result<Option<i64>> {
    let mut earliest: Option<i64> = None;
    for segment in segments {
        for header in segment.batch_headers(0) {
            if let Some(horizon) = header?.delete_horizon_ms()
                && horizon > after_ms
            {
                earliest = Some(earliest.map_or(horizon, |e| e.min(horizon)));
            }
        }
    }
    Ok(earliest)
}
