//! The leader-epoch cache of a [`Log`] (`leader_epoch.rs` holds the cache, its file and its
//! loading): the public queries and every change, made under the writer lock.

use seglog_records::MAGIC_V2;

use crate::leader_epoch::{EpochEndOffset, LeaderEpochCache};
use crate::log::Log;
use crate::sync::lock;
use crate::validate::BatchSpan;
use crate::{Error, Result};

impl Log {
    /// The leader-epoch cache as `(epoch, start offset)` pairs, oldest first (what
    /// `leader-epoch-checkpoint` holds).
    pub fn leader_epochs(&self) -> Vec<(i32, i64)> {
        lock(&self.epochs)
            .cache
            .entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    }

    /// A copy of the leader-epoch cache.
    pub fn leader_epoch_cache(&self) -> LeaderEpochCache {
        lock(&self.epochs).cache.clone()
    }

    /// The latest leader epoch in the cache (Kafka's `UnifiedLog.latestEpoch`).
    pub fn latest_epoch(&self) -> Option<i32> {
        lock(&self.epochs).cache.latest_epoch()
    }

    /// Kafka's `UnifiedLog.endOffsetForEpoch`: the `OffsetsForLeaderEpoch` answer for
    /// `epoch` against the current log end offset ([`LeaderEpochCache::end_offset_for`]),
    /// `None` when it is undefined (a broker then answers `UNDEFINED_EPOCH`,
    /// `UNDEFINED_EPOCH_OFFSET`).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<EpochEndOffset> {
        let epochs = lock(&self.epochs);
        let answer = epochs.cache.end_offset_for(epoch, self.log_end_offset());
        (!answer.is_undefined()).then_some(answer)
    }

    /// Kafka's `maybeAssignEpochStartOffset`: records that `epoch` starts at `start_offset`
    /// (a broker calls it with the log end offset when the partition's leadership moves
    /// here, before anything is appended in the epoch), with [`LeaderEpochCache::assign`]'s
    /// rules. The checkpoint is written (atomically) before this returns when the cache
    /// changed.
    ///
    /// # Errors
    /// [`Error::InvalidEpochEntry`] for a negative epoch or start offset;
    /// [`Error::ReadOnly`], [`Error::Closed`], [`Error::Poisoned`]; I/O errors writing the
    /// checkpoint (which poison the log).
    pub fn assign_epoch_start_offset(&self, epoch: i32, start_offset: i64) -> Result<()> {
        if epoch < 0 || start_offset < 0 {
            return Err(Error::InvalidEpochEntry {
                epoch,
                start_offset,
            });
        }
        let _writer = self.writable()?;
        self.update_epochs(|cache| cache.assign(epoch, start_offset).unwrap_or(false))
    }

    /// After an append is written, before it is published (the caller holds the writer
    /// lock): every v2 batch with an epoch
    /// assigns it at its base offset (Kafka's append path); a legacy batch clears the cache
    /// (Kafka's rule for a message-format downgrade).
    pub(crate) fn epochs_after_append(&self, batches: &[BatchSpan]) -> Result<()> {
        self.update_epochs(|cache| {
            let mut changed = false;
            for span in batches {
                let header = &span.header;
                if header.magic >= MAGIC_V2 {
                    if let Some(base) = header.base_offset
                        && header.partition_leader_epoch >= 0
                    {
                        changed |= cache
                            .assign(header.partition_leader_epoch, base)
                            .unwrap_or(false);
                    }
                } else {
                    changed |= cache.clear();
                }
            }
            changed
        })
    }

    /// After a truncation to `end_offset` (the caller holds the writer lock).
    pub(crate) fn epochs_truncate_from_end(&self, end_offset: i64) -> Result<()> {
        self.update_epochs(|cache| cache.truncate_from_end(end_offset))
    }

    /// After the log start moved to `start_offset` (the caller holds the writer lock).
    pub(crate) fn epochs_truncate_from_start(&self, start_offset: i64) -> Result<()> {
        self.update_epochs(|cache| cache.truncate_from_start(start_offset))
    }

    /// After the log was emptied (the caller holds the writer lock).
    pub(crate) fn epochs_clear(&self) -> Result<()> {
        self.update_epochs(LeaderEpochCache::clear)
    }

    /// Applies `change` to the cache; when it reports a change, writes the checkpoint (a
    /// read-write log). A failed write poisons the log.
    fn update_epochs(&self, change: impl FnOnce(&mut LeaderEpochCache) -> bool) -> Result<()> {
        let mut epochs = lock(&self.epochs);
        let changed = change(&mut epochs.cache);
        if changed
            && let Some(file) = &epochs.file
            && let Err(e) = file.write(&epochs.cache)
        {
            crate::observe::poisoned(&self.dir, "write leader-epoch checkpoint", &e);
            self.durability.poison_with("write leader-epoch checkpoint");
            return Err(e);
        }
        Ok(())
    }
}
