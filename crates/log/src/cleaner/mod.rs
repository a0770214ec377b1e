//! The log cleaner: compaction of `cleanup.policy=compact` logs (Kafka's `LogCleaner`,
//! `Cleaner`, `LogCleanerManager`, `SkimpyOffsetMap`, `LocalLog.replaceSegments`; spec §9.4).
//!
//! A round, as Kafka's:
//! 1. **Plan** (`plan.rs`): the dirty section starts at this log's entry of the root's
//!    `cleaner-offset-checkpoint` (Kafka's text format; the log start when missing or out of
//!    range) and ends at the first uncleanable offset — the base of the segment holding the
//!    minimum of the last stable offset, the active segment's base and the first segment
//!    younger than `min.compaction.lag.ms`. A log is due when its dirty ratio exceeds
//!    `min.cleanable.dirty.ratio` or a dirty segment is older than `max.compaction.lag.ms`,
//!    or (seglog's rule, `purge_horizon.rs`) when a tombstone or marker kept below the
//!    checkpoint has reached its delete horizon: that round recopies the clean section with
//!    an empty offset map, and [`CleanReport::next_purge_ms`] says when the next one can be.
//! 2. **Transactions** (`txn.rs`): one header pass finds the aborted transactions, the last
//!    stable offset (the high watermark, or the first offset of the oldest open transaction)
//!    and each producer's last batch.
//! 3. **Offset map** (`offset_map.rs`): key → latest offset over the dirty section, of bounded
//!    memory (`log.cleaner.dedupe.buffer.size`); a full map ends the round where it filled.
//! 4. **Copy** (`round.rs`, `filter.rs`): the segments below the end of the round, in groups
//!    that fit `segment.bytes` and `segment.index.bytes`, each copied into a `<base>.log.cleaned`
//!    segment with rebuilt indexes (and `.txnindex`), keeping Kafka's records: the latest per
//!    key, tombstones and markers until their KIP-534 delete horizon, no aborted data, every
//!    producer's last batch and the batch ending at the high watermark (emptied if need be, as
//!    Kafka's `RETAIN_EMPTY`). A group that keeps nothing becomes an empty segment, as in
//!    Kafka. Offsets never change.
//! 5. **Swap** (`swap.rs`): `.cleaned` → `.swap`, old → `.deleted`, `.swap` → final, with a
//!    directory fsync after each step; readers holding old segments keep reading them until
//!    their delayed unlink. A truncation during the round aborts it before its next swap.
//! 6. The checkpoint moves to the end of the round.
//!
//! Rounds run on demand ([`Log::clean`], [`Log::clean_at`]) or from [`Log::tick`] /
//! [`crate::LogDir::tick`] when due. There is no cleaner thread: the caller's thread does the
//! work, and appends and reads go on meanwhile (only the swaps take the writer lock).
//!
//! Differences from Kafka, each deliberate: a passed delete horizon makes a log due (Kafka 4.4
//! waits for new dirty data, so a quiet log keeps its tombstones); keys are hashed with two
//! SipHash runs (128 bits, like Kafka's MD5); transactional state comes from the batches, not from `.txnindex` and
//! producer snapshots, and producers never expire; a partially kept legacy (v0/v1) message set
//! is rewritten as a v2 batch (seglog writes no legacy format).

mod filter;
mod offset_map;
mod plan;
mod round;
mod stats;
mod swap;
mod txn;

use crate::Result;
use crate::log::Log;
use crate::sync::lock;

/// What one cleaning round did ([`Log::clean`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CleanReport {
    /// Where the dirty section started (the cleaner checkpoint before the round).
    pub first_dirty_offset: i64,
    /// The round cleaned nothing at or above this offset.
    pub first_uncleanable_offset: i64,
    /// The end of the round: one past the last offset the offset map covered (the first
    /// uncleanable offset, unless the map filled).
    pub end_offset: i64,
    /// The new cleaner checkpoint (`None` if a truncation raced the round's end).
    pub checkpoint: Option<i64>,
    /// Bytes of the segments below the dirty section when the round started.
    pub clean_bytes: u64,
    /// Bytes of the dirty section (the dirty ratio is `cleanable / (clean + cleanable)`).
    pub cleanable_bytes: u64,
    /// Old segments replaced.
    pub segments_cleaned: usize,
    /// New segments that replaced them.
    pub segments_after: usize,
    /// Records read by the copy (the segments below the end of the round).
    pub records_before: u64,
    /// Records kept.
    pub records_after: u64,
    /// Bytes of the old segments.
    pub bytes_before: u64,
    /// Bytes of the new segments.
    pub bytes_after: u64,
    /// Distinct keys in the offset map.
    pub keys: u64,
    /// Memory of the offset map (at most `log.cleaner.dedupe.buffer.size`).
    pub map_memory_bytes: u64,
    /// The offset map filled before the end of the dirty section: the round ended early.
    pub map_full: bool,
    /// Records read to build the offset map.
    pub map_records_read: u64,
    /// Bytes read to build the offset map (the dirty section).
    pub map_bytes_read: u64,
    /// Each group swapped in, oldest first.
    pub groups: Vec<GroupReport>,
    /// The earliest KIP-534 delete horizon of the tombstones and transaction markers the
    /// round kept (each kept batch holding them carries `deleteHorizonMs`, stamped
    /// `delete.retention.ms` after the round that first kept it): the next purge can happen
    /// then, and [`Log::tick`] runs a round for it even when nothing new was appended.
    /// `None` when nothing kept waits for a horizon (or the headers could not be read after
    /// the round: the next due check reads them again and reports the error).
    pub next_purge_ms: Option<i64>,
}

/// One group of old segments replaced by one cleaned segment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupReport {
    /// The base offset of the group and of its cleaned segment.
    pub base_offset: i64,
    /// Old segments replaced.
    pub replaced: usize,
    /// Their bytes.
    pub bytes_before: u64,
    /// The cleaned segment's bytes.
    pub bytes_after: u64,
}

impl Log {
    /// Runs one cleaning round now (the clock's time), whatever the dirty ratio: on demand,
    /// as Kafka's cleaner would once the log is due. `Ok(None)` when the log is not compacted
    /// (`cleanup.policy` without `compact`), or its dirty section is empty and no tombstone or
    /// marker of the clean section has reached its delete horizon
    /// ([`CleanReport::next_purge_ms`]); when one has, the round recopies the clean section
    /// without it.
    ///
    /// # Errors
    /// [`crate::Error::CleaningAborted`] when a truncation (or retention) changed the
    /// segments during the round (the groups already swapped stay); [`crate::Error::ReadOnly`],
    /// [`crate::Error::Closed`], [`crate::Error::Poisoned`]; I/O errors (a failed swap step
    /// poisons the log; its next open finishes or rolls back that swap);
    /// [`crate::Error::DamagedBatch`] for data that does not decode (nothing is swapped).
    pub fn clean(&self) -> Result<Option<CleanReport>> {
        self.clean_at(self.clock.now_ms())
    }

    /// [`Log::clean`] at `now_ms` (the time tombstone horizons and compaction lags are measured
    /// against).
    ///
    /// # Errors
    /// As [`Log::clean`].
    pub fn clean_at(&self, now_ms: i64) -> Result<Option<CleanReport>> {
        self.clean_with(now_ms, true, usize::MAX)
    }

    /// Whether a round is due at `now_ms`: a compacted log whose dirty ratio exceeds
    /// `min.cleanable.dirty.ratio`, or with a dirty segment older than `max.compaction.lag.ms`
    /// (Kafka's rules), or whose clean section holds a tombstone or transaction marker whose
    /// delete horizon is at or before `now_ms` (seglog's: Kafka 4.4 waits for new dirty data).
    ///
    /// # Errors
    /// Segment I/O errors reading the segments' timestamps or batch headers.
    pub fn cleaning_due(&self, now_ms: i64) -> Result<bool> {
        if self.read_only || !self.settings().config.cleanup_policy.compact() {
            return Ok(false);
        }
        let plan = self.plan_round(now_ms, false)?;
        Ok(plan::is_due(
            &plan.offsets,
            plan.compaction_delay_ms,
            self.settings().config.min_cleanable_dirty_ratio.0,
        ) || self.purge_due(now_ms)?)
    }

    /// Whether a kept tombstone or marker of the clean section (below the cleaner
    /// checkpoint) has reached its delete horizon at `now_ms` (`purge_horizon.rs`; the headers
    /// are read once, then cached until the next round).
    pub(crate) fn purge_due(&self, now_ms: i64) -> Result<bool> {
        let next = self.purge_horizon.next_ms(|| self.clean_section())?;
        Ok(next.is_some_and(|horizon| horizon <= now_ms))
    }

    /// The segments below the cleaner checkpoint (none before the first round).
    fn clean_section(&self) -> Vec<std::sync::Arc<seglog_segment::Segment>> {
        let Some(checkpoint) = self.cleaner_checkpoint() else {
            return Vec::new();
        };
        let view = self.published.load();
        view.segments
            .iter()
            .take_while(|(base, _)| *base < checkpoint)
            .map(|(_, segment)| std::sync::Arc::clone(segment))
            .collect()
    }

    /// This log's entry of the cleaner checkpoint: where its dirty section starts (`None`
    /// before its first round, and for a read-only log).
    pub fn cleaner_checkpoint(&self) -> Option<i64> {
        self.home.cleaner_checkpoint().0
    }

    /// The tick's round: only when due, and not after a round met damaged data. An aborted
    /// round is not an error here (the next tick starts over).
    pub(crate) fn clean_if_due(&self, now_ms: i64) -> Result<Option<CleanReport>> {
        if !self.settings().config.cleanup_policy.compact() || *lock(&self.cleaning) {
            return Ok(None);
        }
        if !self.cleaning_due(now_ms)? {
            return Ok(None);
        }
        match self.clean_with(now_ms, false, usize::MAX) {
            Err(crate::Error::CleaningAborted { .. }) => Ok(None),
            other => other,
        }
    }

    /// One round at a time; a round that fails on damaged data marks the log uncleanable for
    /// [`Log::tick`] (an explicit [`Log::clean`] still tries, and clears the mark on success).
    pub(crate) fn clean_with(
        &self,
        now_ms: i64,
        force: bool,
        step_limit: usize,
    ) -> Result<Option<CleanReport>> {
        if self.read_only {
            return Err(crate::Error::ReadOnly {
                dir: self.dir.clone(),
            });
        }
        drop(self.writable()?);
        if !self.settings().config.cleanup_policy.compact() {
            return Ok(None);
        }
        let mut uncleanable = lock(&self.cleaning);
        let started = std::time::Instant::now();
        let mut result = self.clean_round(now_ms, force, step_limit);
        if let Ok(Some(report)) = &mut result {
            // What the round kept decides when the next purge can happen.
            let clean = self.clean_section();
            report.next_purge_ms = self.purge_horizon.set(clean.iter(), now_ms).ok().flatten();
        }
        // The swaps replaced segments (also those of an aborted or failed round that swapped
        // some groups): the size and segment gauges follow, under the writer lock as every
        // gauge update.
        {
            let writer = self.lock_writer();
            self.observe_shape(&writer);
        }
        crate::observe::cleaned(&self.dir, &result, started.elapsed());
        match &result {
            Ok(_) => *uncleanable = false,
            Err(crate::Error::DamagedBatch { .. } | crate::Error::Segment(_)) => {
                *uncleanable = true;
            }
            Err(_) => {}
        }
        result
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests;
