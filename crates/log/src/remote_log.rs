//! A [`Log`]'s side of tiered storage (KIP-405): attaching a [`RemoteTier`], the highest
//! offset in remote storage, the two log start offsets (KIP-1005), and the sealed segments a
//! copier may upload ([`Log::tier_candidates`]). Reads across both tiers are in
//! `remote_read.rs`, local retention in `remote_retention.rs`.
//!
//! Mirrors the log-side parts of Kafka's `UnifiedLog` (`localLogStartOffset`,
//! `highestOffsetInRemoteStorage`) and `RemoteLogManager.copyLogSegmentsToRemote`'s choice of
//! candidates (`candidateLogSegments`).

use std::sync::Arc;

use seglog_segment::{FileKind, FileType, file_path};

use crate::log::Log;
use crate::remote::{RemoteTier, SealedSegmentFiles, SegmentSealed};
use crate::sync::lock;
use crate::{Error, ProducerSnapshot, Result};

impl Log {
    /// Attaches the remote tier the log reads from below its local log start offset (and
    /// whose copier reports [`Log::set_highest_remote_offset`]). Lists the tier's finished
    /// segments once: the highest offset in remote storage becomes the last one's end (a
    /// restarted log need not wait for the next copy to delete local segments), and the log
    /// start offset of the whole log the first one's base (or the checkpointed log start
    /// offset when it lies inside that segment: remote expiry or `DeleteRecords` raised it
    /// there before a reopen) when that lies below the local log start.
    ///
    /// # Errors
    /// [`Error::Remote`] when the tier cannot list its segments (nothing is attached then).
    pub fn set_remote_tier(&self, tier: Arc<dyn RemoteTier>) -> Result<()> {
        let listed = tier
            .segments()
            .map_err(|source| self.remote_error(source))?;
        let _writer = self.lock_writer();
        // Overlapping copies (a former leader's) count as the lineage chains them.
        let segments = crate::remote::lineage_chain(&listed, &self.leader_epochs());
        let local_start = self.local_log_start_offset();
        if let Some(last) = segments.last() {
            self.remote.raise_highest_offset(last.to);
        }
        // After a reopen the checkpointed log start (what remote expiry or DeleteRecords
        // raised it to, inside the first remote segment) wins over that segment's base.
        let checkpointed = self.load_report.log_start_offset_checkpoint;
        let remote_start = segments
            .first()
            .map(|s| s.from.max(checkpointed.min(s.to + 1)));
        let start = match (self.remote.log_start_offset(), remote_start) {
            (Some(current), _) => Some(current.min(local_start)),
            (None, Some(first)) if first <= local_start => Some(first),
            _ => None,
        };
        self.remote.set_log_start_offset(start);
        self.open_disk_index_cache(crate::remote::DEFAULT_DISK_INDEX_CACHE_BYTES);
        self.remote.set_tier(Some(tier));
        tracing::info!(
            dir = %self.dir.display(),
            remote_segments = segments.len(),
            highest_remote_offset = self.highest_remote_offset(),
            log_start_offset = self.log_start_offset(),
            local_log_start_offset = local_start,
            "remote tier attached"
        );
        Ok(())
    }

    /// Opens the on-disk cache of remote indexes (`remote-log-index-cache/` in the partition
    /// directory, at most `capacity_bytes`), once; not for a read-only log (an inspection
    /// writes nothing). A directory that cannot be opened leaves the memory cache alone.
    pub(crate) fn open_disk_index_cache(&self, capacity_bytes: u64) {
        if self.read_only {
            return;
        }
        let mut disk = lock(&self.remote.disk_indexes);
        if disk.is_some() {
            return;
        }
        match crate::remote::DiskIndexCache::open(&self.dir, capacity_bytes) {
            Ok(cache) => *disk = Some(cache),
            Err((path, error)) => tracing::warn!(
                path = %path.display(),
                %error,
                "cannot open the remote index cache: indexes are cached in memory only"
            ),
        }
    }

    /// Subscribes to the log's seal events: every roll that seals a segment sends a
    /// [`SegmentSealed`] to the returned receiver (after the new segment is published, never
    /// blocking the roll; events before the subscription are not replayed). For a copier that
    /// uploads segments as they seal: on an event it calls [`Log::tier_candidates`] (which
    /// also answers when the last stable offset has reached the segment's end). Dropping the
    /// receiver unsubscribes.
    pub fn subscribe_sealed(&self) -> std::sync::mpsc::Receiver<SegmentSealed> {
        self.remote.sealed.subscribe()
    }

    /// Where a remote tier the log holds no handle to starts, by the log's own checkpoint:
    /// the checkpointed log start offset when no tier is attached and it lies below the local
    /// log start offset. Kafka checkpoints a log start below the first local segment only for
    /// a tiered log (`LogManager.checkpointLogStartOffsetsInDir` writes an entry for a
    /// `remote.storage.enable` log, or one whose start lies above its first segment's base),
    /// so the offsets from there to the local log start are in a remote tier, not lost. `None`
    /// with a tier attached ([`Log::log_start_offset`] then says it), without a checkpoint
    /// entry, or when the entry is at or above the local start.
    pub fn unattached_remote_start(&self) -> Option<i64> {
        let report = &self.load_report;
        let checkpointed = report.log_start_offset_checkpoint;
        (self.remote.tier().is_none()
            && report.log_start_offset_in_checkpoint
            && checkpointed < self.local_log_start_offset())
        .then_some(checkpointed)
    }

    /// The attached remote tier, if any.
    pub fn remote_tier(&self) -> Option<Arc<dyn RemoteTier>> {
        self.remote.tier()
    }

    /// Kafka's `highestOffsetInRemoteStorage`: the last offset of the segments whose copy
    /// finished, -1 before any.
    pub fn highest_remote_offset(&self) -> i64 {
        self.remote.highest_offset()
    }

    /// Called by the copier once a segment's copy reached `COPY_SEGMENT_FINISHED`: raises the
    /// highest offset in remote storage to `offset` (the segment's last offset) and, when this
    /// is the first remote data, fixes the whole log's start offset at the local one. Local
    /// retention then may delete local segments wholly at or below it. Never lowers it (a late
    /// report of an older copy changes nothing). Returns the value now held.
    pub fn set_highest_remote_offset(&self, offset: i64) -> i64 {
        let _writer = self.lock_writer();
        if self.remote.log_start_offset().is_none() {
            self.remote
                .set_log_start_offset(Some(self.local_log_start_offset()));
        }
        self.remote.raise_highest_offset(offset)
    }

    /// KIP-1005's local log start offset: the first offset held in the local segments (equal
    /// to [`Log::log_start_offset`] unless a remote tier holds older data).
    pub fn local_log_start_offset(&self) -> i64 {
        self.published.load().log_start_offset
    }

    /// The sealed segments a copier may upload now, oldest first (Kafka's
    /// `RemoteLogManager.candidateLogSegments`): every segment but the active one whose next
    /// segment's base offset is at or below the last stable offset (so also the high
    /// watermark), and whose last offset lies above the highest offset in remote storage.
    /// Empty unless `remote.storage.enable` is set and `remote.log.copy.disable` is not.
    ///
    /// Each comes with the six parts of a copy and a pin that keeps retention from deleting
    /// it until the value is dropped ([`SealedSegmentFiles`]). The producer snapshot at the next
    /// segment's base is the file's bytes, or the state rebuilt at that offset when the file is
    /// missing (nothing is written: a snapshot file the producer state does not know of would
    /// outlive a later truncation).
    ///
    /// # Errors
    /// I/O and segment errors reading the snapshot or rebuilding it.
    pub fn tier_candidates(&self) -> Result<Vec<SealedSegmentFiles>> {
        let config = self.settings().config.clone();
        if !config.remote_storage_enable || config.remote_log_copy_disable {
            return Ok(Vec::new());
        }
        // Pins are taken under the writer lock, which retention holds while it deletes: a
        // segment in this view is not deleted before its pin exists.
        let (view, pinned) = {
            let _writer = self.lock_writer();
            let view = self.published.load();
            let bound = view.last_stable_offset();
            let highest = self.highest_remote_offset();
            let bases: Vec<(i64, i64)> = view
                .segments
                .iter()
                .zip(view.segments.iter().skip(1))
                .map(|((base, _), (next, _))| (base, next))
                .filter(|&(_, next)| next <= bound && next - 1 > highest)
                .collect();
            let pinned: Vec<_> = bases
                .into_iter()
                .map(|(base, next)| (base, next, self.remote.pins.pin(base)))
                .collect();
            (view, pinned)
        };
        let epochs = self.leader_epochs();
        let mut out = Vec::with_capacity(pinned.len());
        for (base, next, pin) in pinned {
            let Some((_, segment)) = view.segments.floor(base) else {
                continue;
            };
            let txn = segment.path(FileType::TxnIndex);
            let txn_index = std::fs::metadata(&txn)
                .is_ok_and(|m| m.len() > 0)
                .then_some(txn);
            out.push(SealedSegmentFiles {
                base_offset: base,
                next_base_offset: next,
                log: segment.log_path(),
                offset_index: segment.path(FileType::Index),
                time_index: segment.path(FileType::TimeIndex),
                txn_index,
                producer_snapshot: self.producer_snapshot_at(&view, next)?,
                leader_epochs: epochs.iter().copied().filter(|e| e.1 < next).collect(),
                segment_leader_epochs: segment_epochs(&epochs, base, next),
                max_timestamp_ms: segment.largest_timestamp()?,
                size: segment.size(),
                pin,
            });
        }
        Ok(out)
    }

    /// The bytes of the producer snapshot at `offset`: the file's, else the state at `offset`
    /// rebuilt from the latest snapshot below it and the segments in between.
    fn producer_snapshot_at(
        &self,
        view: &crate::view::LogView<Arc<seglog_segment::Segment>>,
        offset: i64,
    ) -> Result<Vec<u8>> {
        let path = file_path(&self.dir, offset, FileKind::new(FileType::Snapshot));
        if lock(&self.producers).snapshot_offsets().contains(&offset) {
            match std::fs::read(&path) {
                Ok(bytes) => return Ok(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("read snapshot", &path, e)),
            }
        }
        let mut producers = crate::producer_files::Producers::for_txn_check(&self.dir)?;
        producers.load_snapshot_at_or_below(offset, view.log_start_offset)?;
        producers.replay_for_txn_index(&view.segments, view.log_start_offset, offset, offset)?;
        Ok(ProducerSnapshot {
            entries: producers.state.snapshot_entries(),
        }
        .encode())
    }

    /// [`Error::Remote`] for this log.
    pub(crate) fn remote_error(&self, source: crate::remote::RemoteError) -> Error {
        Error::Remote {
            dir: self.dir.clone(),
            source,
        }
    }
}

impl SealedSegmentFiles {
    /// The leader-epoch entries in Kafka's checkpoint text (`leader-epoch-checkpoint` format:
    /// version 0, the count, one `epoch start_offset` line each), as the `LEADER_EPOCH` index
    /// is uploaded.
    pub fn leader_epoch_checkpoint(&self) -> Vec<u8> {
        let entries: Vec<crate::EpochEntry> = self
            .leader_epochs
            .iter()
            .map(|&(epoch, start_offset)| crate::EpochEntry {
                epoch,
                start_offset,
            })
            .collect();
        crate::leader_epoch::format(&entries).into_bytes()
    }
}

/// The leader epochs of the batches in `[base, next)`: the epoch in force at `base` (its start
/// raised to `base`), then every epoch starting inside (Kafka's
/// `RemoteLogManager.getLeaderEpochEntries` for the segment metadata).
pub(crate) fn segment_epochs(epochs: &[(i32, i64)], base: i64, next: i64) -> Vec<(i32, i64)> {
    let mut out = Vec::new();
    if let Some(&(epoch, _)) = epochs.iter().rev().find(|e| e.1 <= base) {
        out.push((epoch, base));
    }
    out.extend(epochs.iter().copied().filter(|e| e.1 > base && e.1 < next));
    out
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn segment_epochs_start_at_the_base_and_stop_before_the_next() {
        let epochs = [(1, 0), (3, 15), (4, 25), (7, 40)];
        assert_eq!(segment_epochs(&epochs, 10, 30), [(1, 10), (3, 15), (4, 25)]);
        assert_eq!(segment_epochs(&epochs, 15, 25), [(3, 15)]);
        assert_eq!(segment_epochs(&epochs, 40, 50), [(7, 40)]);
        // No epoch known at the base (a log written without epochs before 15).
        assert_eq!(segment_epochs(&[(3, 15)], 10, 20), [(3, 15)]);
        assert!(segment_epochs(&[], 0, 10).is_empty());
    }
}
