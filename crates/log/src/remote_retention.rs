//! Local retention of a tiered log (KIP-405, Kafka 4.4's `UnifiedLog.deletableSegments` and
//! `isSegmentEligibleForDeletion`): while segments are copied to a remote tier, retention
//! deletes a local segment only once it lies wholly at or below the highest offset in remote
//! storage (or below the whole log's start), by `local.retention.*`; deleting moves only the
//! local log start offset. The log start offset of the whole log moves with remote expiry
//! ([`Log::update_log_start_offset_from_remote_tier`]) and `DeleteRecords`.
//!
//! Also the pins of copies in progress: no retention rule deletes a pinned segment (nor, since
//! retention deletes a prefix, any later one).

use crate::config::LogConfig;
use crate::log::Log;
use crate::retention::SegmentStat;
use crate::{Error, Result};

/// What decides whether a segment a retention rule selected may really go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeletionGate {
    /// `remote.storage.enable` (Kafka's `remoteLogEnabled`).
    pub(crate) remote_enabled: bool,
    /// `remote.storage.enable` and not `remote.log.copy.disable`.
    copy_enabled: bool,
    /// Kafka's `highestOffsetInRemoteStorage`.
    highest_remote_offset: i64,
    /// The whole log's start offset.
    log_start_offset: i64,
    /// The lowest segment a copy pins.
    lowest_pin: Option<i64>,
    /// The log end offset (the last segment's upper bound).
    log_end_offset: i64,
}

impl DeletionGate {
    /// Kafka's `isSegmentEligibleForDeletion` (copy enabled: wholly in remote storage, or
    /// below the log start offset), and not pinned by a copy.
    pub(crate) fn eligible(&self, segment: &SegmentStat, next: Option<&SegmentStat>) -> bool {
        if self
            .lowest_pin
            .is_some_and(|pin| segment.base_offset >= pin)
        {
            return false;
        }
        if !self.copy_enabled {
            return true;
        }
        let upper_bound = next.map_or(self.log_end_offset, |n| n.base_offset);
        let in_remote = upper_bound > 0 && upper_bound - 1 <= self.highest_remote_offset;
        in_remote || next.is_some_and(|n| self.log_start_offset >= n.base_offset)
    }
}

impl Log {
    /// The gate of a retention pass under `config` (writer lock held).
    pub(crate) fn deletion_gate(&self, config: &LogConfig) -> DeletionGate {
        let view = self.published.load();
        DeletionGate {
            remote_enabled: config.remote_storage_enable,
            copy_enabled: config.remote_copy_enabled(),
            highest_remote_offset: self.remote.highest_offset(),
            log_start_offset: self.log_start_offset(),
            lowest_pin: self.remote.pins.lowest(),
            log_end_offset: view.end.offset,
        }
    }

    /// After retention moved the local log start offset to `local_start` (writer lock held):
    /// the whole log's start. With copies running (Kafka's `maybeIncrementLocalLogStartOffset`)
    /// it stays where it is; with `remote.log.copy.disable` (Kafka's
    /// `maybeIncrementLogStartOffset`) it follows the local one.
    pub(crate) fn whole_log_start_after_deletion(
        &self,
        config: &LogConfig,
        local_start: i64,
    ) -> i64 {
        match self.remote.log_start_offset() {
            Some(start) if config.remote_copy_enabled() => start.min(local_start),
            Some(start) => {
                let start = start.max(local_start);
                self.remote.set_log_start_offset(Some(start));
                start
            }
            None => local_start,
        }
    }

    /// Kafka's `UnifiedLog.updateLogStartOffsetFromRemoteTier`: remote expiry (`retention.ms`
    /// / `retention.bytes` over both tiers) deleted remote segments, and the whole log now
    /// starts at `offset`. Raises the log start offset (never lowers it), and the local one
    /// with it when it passes it (local segments below go with the next retention pass).
    /// Returns the log start offset.
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] above the high watermark; [`Error::ReadOnly`],
    /// [`Error::Closed`], [`Error::Poisoned`].
    pub fn update_log_start_offset_from_remote_tier(&self, offset: i64) -> Result<i64> {
        if offset <= self.log_start_offset() {
            return Ok(self.log_start_offset());
        }
        if offset > self.high_watermark() {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: self.log_end_offset(),
            });
        }
        self.remote.forget_segments();
        self.delete_records_before(offset)
    }

    /// Kafka's `onlyLocalLogSegmentsSize`: bytes of the local segments not yet in remote
    /// storage (based above the highest remote offset), what a copier still has to upload.
    pub fn only_local_segments_size(&self) -> u64 {
        self.only_local().map(|(_, size)| size).sum()
    }

    /// Kafka's `onlyLocalLogSegmentsCount`: the local segments based above the highest remote
    /// offset.
    pub fn only_local_segments_count(&self) -> usize {
        self.only_local().count()
    }

    fn only_local(&self) -> impl Iterator<Item = (i64, u64)> {
        let highest = self.remote.highest_offset();
        let view = self.published.load();
        let out: Vec<(i64, u64)> = view
            .segments
            .iter()
            .filter(|(base, _)| *base > highest)
            .map(|(base, segment)| (base, segment.size()))
            .collect();
        out.into_iter()
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn stat(base_offset: i64) -> SegmentStat {
        SegmentStat {
            base_offset,
            size_bytes: 1,
            largest_timestamp_ms: 0,
        }
    }

    fn gate(highest: i64, log_start: i64, pin: Option<i64>) -> DeletionGate {
        DeletionGate {
            remote_enabled: true,
            copy_enabled: true,
            highest_remote_offset: highest,
            log_start_offset: log_start,
            lowest_pin: pin,
            log_end_offset: 30,
        }
    }

    #[test]
    fn only_segments_wholly_in_remote_storage_go() {
        let (a, b, c) = (stat(0), stat(10), stat(20));
        let g = gate(-1, 0, None);
        assert!(!g.eligible(&a, Some(&b)));
        let g = gate(8, 0, None);
        assert!(
            !g.eligible(&a, Some(&b)),
            "offset 9 is not in remote storage"
        );
        let g = gate(9, 0, None);
        assert!(g.eligible(&a, Some(&b)) && !g.eligible(&b, Some(&c)));
        // The active segment: its upper bound is the log end.
        assert!(!gate(28, 0, None).eligible(&c, None));
        assert!(gate(29, 0, None).eligible(&c, None));
        // Below the whole log's start (remote expiry or DeleteRecords moved it).
        assert!(gate(-1, 10, None).eligible(&a, Some(&b)));
    }

    #[test]
    fn a_pin_holds_its_segment_and_every_later_one_and_copy_disable_lifts_the_remote_rule() {
        let (a, b, c) = (stat(0), stat(10), stat(20));
        let g = gate(29, 0, Some(10));
        assert!(g.eligible(&a, Some(&b)));
        assert!(!g.eligible(&b, Some(&c)) && !g.eligible(&c, None));
        let g = DeletionGate {
            copy_enabled: false,
            ..gate(-1, 0, None)
        };
        assert!(g.eligible(&a, Some(&b)));
    }
}
