//! Retention (spec §5.6), `DeleteRecords`, and truncation (spec §5.7).

use seglog_segment::{ActiveSegment, Segment};

use crate::log::{Log, Writer};
use crate::retention::{
    self, DeletedSegment, RetentionReason, RetentionReport, SegmentStat, deletable_prefix,
};
use std::sync::Arc;

use crate::view::{LogView, OffsetMetadata};
use crate::{Error, Result};

type View = LogView<Arc<Segment>>;

impl Log {
    /// Kafka's `deleteOldSegments` with the clock's now: log-start-offset breach, then size
    /// (`retention.bytes`), then time (`retention.ms`, from each segment's largest timestamp);
    /// size and time only when `cleanup.policy` holds `delete` (`delete` or
    /// `compact,delete`). Never deletes a segment reaching at or above the high watermark; rolls the active
    /// segment when every segment is deletable so one always remains. Deleted segments are
    /// renamed `.deleted` (the directory is fsynced before this returns) and unlinked
    /// `file.delete.delay.ms` later by [`Log::tick`]; readers holding them keep reading.
    ///
    /// # Errors
    /// [`Error::ReadOnly`], [`Error::Closed`], [`Error::Poisoned`]; segment I/O errors.
    pub fn delete_old_segments(&self) -> Result<RetentionReport> {
        self.delete_old_segments_at(self.clock.now_ms())
    }

    pub(crate) fn delete_old_segments_at(&self, now_ms: i64) -> Result<RetentionReport> {
        let mut writer = self.writable()?;
        // One config for the whole pass (a concurrent `set_config` applies to the next one).
        let config = self.settings().config.clone();
        let mut report = RetentionReport::default();
        // 1. Log start offset: always.
        self.apply_rule(
            &mut writer,
            RetentionReason::LogStartOffset,
            now_ms,
            &mut report,
            false,
            |view, _| Some(retention::log_start_breached(view.log_start_offset)),
        )?;
        // 2. Size and 3. time, only when `cleanup.policy` holds `delete` (a `compact` log keeps
        // what the cleaner keeps).
        let delete = config.cleanup_policy.delete();
        self.apply_rule(
            &mut writer,
            RetentionReason::Size,
            now_ms,
            &mut report,
            false,
            |_, stats| {
                let limit = if delete {
                    config.local_retention_bytes_effective()
                } else {
                    -1
                };
                retention::size_breached(retention::total_bytes(stats), limit)
            },
        )?;
        // 3. Time: the only rule that reads the segments' timestamps (a deferred segment is
        // opened for it), and only when it applies.
        let time_limit = if delete {
            config.local_retention_ms_effective()
        } else {
            -1
        };
        self.apply_rule(
            &mut writer,
            RetentionReason::Time,
            now_ms,
            &mut report,
            time_limit >= 0,
            |_, _| retention::time_breached(now_ms, time_limit),
        )?;
        if !report.deleted.is_empty() {
            // Principle (c): the renames are durable before the pass returns. A power loss
            // that undid some of them (in any order) would bring deleted segments back and
            // leave an offset gap where the kept renames were.
            self.sync_dir_or_poison()?;
        }
        if delete && config.retention_ms >= 0 {
            let view = self.published.load();
            let margin_ms = retention::future_margin_ms(config.message_timestamp_after_max_ms);
            for stat in segment_stats(&view, true)? {
                if retention::in_the_future(now_ms, stat.largest_timestamp_ms, margin_ms) {
                    report.future_timestamp_segments.push(stat.base_offset);
                }
            }
        }
        report.log_start_offset = self.published.load().log_start_offset;
        crate::observe::retention(&self.dir, &report);
        if !report.deleted.is_empty() {
            self.observe_shape(&writer);
        }
        Ok(report)
    }

    /// One retention rule over the current view: the deletable prefix under the predicate
    /// (`None`: the rule does not apply), deleted for `reason`. `timestamps`: the predicate
    /// reads the segments' largest timestamps (else they are not read).
    fn apply_rule<P: FnMut(&SegmentStat, Option<&SegmentStat>) -> bool>(
        &self,
        writer: &mut Writer,
        reason: RetentionReason,
        now_ms: i64,
        report: &mut RetentionReport,
        timestamps: bool,
        predicate: impl FnOnce(&View, &[SegmentStat]) -> Option<P>,
    ) -> Result<()> {
        let view = self.published.load();
        let stats = segment_stats(&view, timestamps)?;
        let Some(predicate) = predicate(&view, &stats) else {
            return Ok(());
        };
        // Tiered storage (`remote_retention.rs`): only what the remote tier holds, never a
        // pinned segment; a selected non-empty active segment is rolled, so it can be copied
        // (Kafka's `deletableSegments`).
        let gate = self.deletion_gate(&self.settings().config);
        let mut mut_predicate = predicate;
        let mut roll = false;
        let count = deletable_prefix(
            &stats,
            view.high_watermark.offset,
            view.end.offset,
            |segment, next| {
                let selected = mut_predicate(segment, next);
                roll |= selected && gate.remote_enabled && next.is_none() && segment.size_bytes > 0;
                selected && gate.eligible(segment, next)
            },
        );
        if roll && count < stats.len() {
            self.roll_locked(writer, &view, None, now_ms)?;
            report.rolled = true;
        }
        self.delete_segments(writer, count, reason, now_ms, report)
    }

    /// Kafka's `deleteSegments`: raise the log start offset to the base of the segment after
    /// the last deleted one (rolling first when every segment goes), publish the map without
    /// them, rename their files `.deleted` and queue the unlink.
    fn delete_segments(
        &self,
        writer: &mut Writer,
        count: usize,
        reason: RetentionReason,
        now_ms: i64,
        report: &mut RetentionReport,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let mut view = self.published.load();
        if count == view.segments.len() {
            // Keep at least one segment: roll a new empty active one first.
            view = self.roll_locked(writer, &view, None, now_ms)?;
            report.rolled = true;
        }
        let doomed: Vec<(i64, Arc<Segment>)> = view
            .segments
            .iter()
            .take(count)
            .map(|(b, s)| (b, Arc::clone(s)))
            .collect();
        let mut segments = (*view.segments).clone();
        for (base, _) in &doomed {
            segments.remove(*base);
        }
        let next_base = segments.first().map_or(view.end.offset, |(b, _)| b);
        let log_start_offset = view.log_start_offset.max(next_base);
        // With a remote tier only the local log start moves (KIP-1005); the epochs and the
        // producer state keep what the remote segments need.
        let whole_start =
            self.whole_log_start_after_deletion(&self.settings().config, log_start_offset);
        self.durability
            .raise_recovery_point_to_log_start(log_start_offset);
        let high_watermark = if view.high_watermark.offset < log_start_offset {
            self.offset_metadata(&view, log_start_offset)?
        } else {
            view.high_watermark
        };
        self.published
            .publish(view.trimmed(Arc::new(segments), log_start_offset, high_watermark));
        self.epochs_truncate_from_start(whole_start)?;
        let bases: Vec<i64> = doomed.iter().map(|(b, _)| *b).collect();
        self.producers_segments_deleted(&bases, whole_start)?;
        let due = now_ms.saturating_add(self.settings().config.file_delete_delay_ms);
        for (base, segment) in doomed {
            report.deleted.push(DeletedSegment {
                base_offset: base,
                size_bytes: segment.size(),
                reason,
            });
            self.doom(segment, due)?;
        }
        self.durability.mark_dir_dirty();
        Ok(())
    }

    /// Kafka's `DeleteRecords` (`maybeIncrementLogStartOffset`): raises the log start offset
    /// to `offset` (`-1` means the high watermark). Reads below it then fail; whole segments
    /// below it are removed by the next retention pass. Returns the new log start offset.
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] when `offset` is above the high watermark or below -1;
    /// [`Error::ReadOnly`], [`Error::Closed`], [`Error::Poisoned`].
    pub fn delete_records_before(&self, offset: i64) -> Result<i64> {
        let writer = self.writable()?;
        let view = self.published.load();
        let offset = if offset == -1 {
            view.high_watermark.offset
        } else {
            offset
        };
        if offset < 0 || offset > view.high_watermark.offset {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start_offset: view.log_start_offset,
                log_end_offset: view.end.offset,
            });
        }
        // A tiered log's whole start moves too (the local one only when passed).
        if let Some(start) = self.remote.log_start_offset() {
            self.remote.set_log_start_offset(Some(start.max(offset)));
        }
        if offset > view.log_start_offset {
            self.durability.raise_recovery_point_to_log_start(offset);
            self.published.publish(LogView {
                log_start_offset: offset,
                ..(*view).clone()
            });
            self.epochs_truncate_from_start(offset)?;
            self.producers_log_start_moved(offset);
            tracing::info!(
                dir = %self.dir.display(), log_start_offset = offset,
                previous_log_start_offset = view.log_start_offset, "log start offset raised"
            );
            self.observe_shape(&writer);
        }
        Ok(self.log_start_offset())
    }

    /// Kafka's `truncateTo`: removes every offset at and above `offset` (at batch
    /// granularity: the whole batch holding `offset` goes). A no-op at or above the log end.
    /// Below the first segment it is [`Log::truncate_fully_and_start_at`]. The log end becomes
    /// `offset`; the recovery point, high watermark and log start are lowered to it if needed.
    /// When the cut leaves the floor segment ending below `offset` (inside a batch, or in a
    /// compacted gap), a new empty segment is rolled at `offset`, so that a reopen ends there
    /// too (Kafka's reopen would end at the floor segment's last batch: a deliberate
    /// difference from Kafka).
    ///
    /// **Inside a batch** (`offset` above the first offset of the batch holding it) the
    /// batch's records *below* `offset` go too, as in Kafka: a reader then sees the records
    /// before that batch and nothing at the offsets between the batch's start and `offset`
    /// (they stay in range — a gap, as in a compacted log, not an error; a read from inside
    /// it returns nothing until more is appended, then starts at `offset`). The next append
    /// takes `offset`. A caller that must keep those records (a consensus log truncating at an
    /// entry inside a batch) re-appends them after the truncation, as `seglog-raft` does.
    ///
    /// # Errors
    /// [`Error::ReadOnly`], [`Error::Closed`], [`Error::Poisoned`]; segment I/O errors (which
    /// poison the log).
    pub fn truncate_to(&self, offset: i64) -> Result<()> {
        let mut writer = self.writable()?;
        let view = self.published.load();
        refuse_negative(offset, &view)?;
        if offset >= view.end.offset {
            // Kafka: an epoch entry at the log end with nothing written in it goes anyway.
            return self.epochs_truncate_from_end(view.end.offset);
        }
        let first_base = view.segments.first().map_or(0, |(b, _)| b);
        // Kafka's `LogManager.truncateTo` lowers the cleaner checkpoint to the active
        // segment's base after `UnifiedLog.truncateTo`: the base of the segment the truncation
        // cuts (the floor of `offset`), not `offset` itself, and not the segment seglog rolls
        // at `offset` after a cut inside a batch. The next round then cleans that segment again
        // and can merge it, as Kafka's does.
        let cut_base = if offset < first_base {
            offset
        } else {
            view.segments.floor(offset).map_or(offset, |(b, _)| b)
        };
        self.truncation_starts(offset, cut_base)?;
        if offset < first_base {
            self.truncate_fully_locked(&mut writer, &view, offset)?;
            drop(writer);
            return self.write_checkpoints_now();
        }
        let now_ms = self.clock.now_ms();
        let mut segments = (*view.segments).clone();
        let later: Vec<i64> = view
            .segments
            .iter()
            .filter(|(b, _)| *b > offset)
            .map(|(b, _)| b)
            .collect();
        let (floor_base, floor) = view
            .segments
            .floor(offset)
            .map(|(b, s)| (b, Arc::clone(s)))
            .ok_or_else(|| Error::NoSegments {
                dir: self.dir.clone(),
            })?;
        // The active writer moves to the floor segment when it is not already there.
        let mut active = writer.active.take().ok_or_else(|| Error::Closed {
            dir: self.dir.clone(),
        })?;
        if active.segment().base_offset() != floor_base {
            drop(active);
            active =
                ActiveSegment::resume(floor).map_err(|e| self.poisoned_by("resume segment", e))?;
        }
        for base in &later {
            if let Some(segment) = segments.remove(*base) {
                self.unlink_truncated(&segment)?;
            }
        }
        // The later segments' unlinks are durable before the cut: a power loss can then never
        // bring them back after a truncated (shorter) floor segment.
        if !later.is_empty() {
            self.sync_dir_or_poison()?;
        }
        let truncated = active.truncate_to(offset);
        let position = active.segment().size();
        let synced = Arc::clone(active.segment());
        writer.active = Some(active);
        truncated.map_err(|e| self.poisoned_by("truncate", e))?;
        // The new length is durable before this returns (ftruncate + fdatasync): an undone
        // truncation would bring back batches that shadow later acknowledged appends.
        synced
            .sync_log_data()
            .map_err(|e| self.poisoned_by("fsync", e))?;
        // Kafka's `rebuildProducerState(offset)`: snapshots above it go, the state is reloaded
        // and replayed to it. Before the lowered view is published, and published in the same
        // view (KAFKA-12153): published apart, the lowered high watermark with the old
        // transactions gave readers an LSO above a transaction the truncation reopened (its
        // marker removed), and `read_committed` served it.
        let log_start_offset = view.log_start_offset.min(offset);
        let txns = match self.producers_truncated(&segments, log_start_offset, offset) {
            Ok(txns) => txns,
            Err(e) => {
                // The files are cut but the state is unknown: the log is poisoned, and its
                // view says nothing is stable (an LSO at the log start) until a reopen.
                self.durability
                    .poison_with("rebuild producer state after truncation");
                let unknown = Arc::new(vec![(log_start_offset, i64::MAX)]);
                self.lower_after_truncation(&view, segments, offset, floor_base, position, unknown);
                return Err(e);
            }
        };
        self.lower_after_truncation(&view, segments, offset, floor_base, position, txns);
        self.epochs_truncate_from_end(offset)?;
        // Inside a batch (or a gap) the floor segment now ends below `offset`, the log end
        // (Kafka's `updateLogEndOffset(targetOffset)`). A reopen takes the log end from the
        // last segment's batches, so it would say the floor segment's end (Kafka's own reopen
        // does: its immediate and reopened log ends differ). An empty segment at `offset`
        // makes every reopen, clean or after a crash, end where this truncation said.
        let segment_end = synced
            .read_next_offset()
            .map_err(|e| self.poisoned_by("read next offset", e))?;
        if segment_end < offset {
            let view = self.published.load();
            self.roll_locked(&mut writer, &view, Some(offset), now_ms)?;
        }
        self.observe_shape(&writer);
        drop(writer);
        tracing::info!(
            dir = %self.dir.display(), offset, previous_log_end_offset = view.end.offset,
            removed_segments = later.len(), "truncated"
        );
        // Everything below `offset` is flushed and the recovery point moves to it: a cut inside
        // a batch leaves a gap between the segment's last batch and `offset` (the log end
        // offset, as in Kafka), and a gap above the recovery point would look to the loader
        // like a tail a crash erased. Then the checkpoint (standalone logs): a stale, higher
        // recovery point would let a crash skip the recovery of segments written after this.
        self.flush_to(offset, false)?;
        self.write_checkpoints_now()
    }

    /// Kafka's `truncateFullyAndStartAt`: deletes every segment and starts an empty log at
    /// `offset` (log start, log end, recovery point and high watermark all become `offset`).
    ///
    /// # Errors
    /// As [`Log::truncate_to`].
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> Result<()> {
        let mut writer = self.writable()?;
        let view = self.published.load();
        refuse_negative(offset, &view)?;
        self.truncate_fully_locked(&mut writer, &view, offset)?;
        drop(writer);
        self.write_checkpoints_now()
    }

    fn truncate_fully_locked(&self, writer: &mut Writer, view: &View, offset: i64) -> Result<()> {
        self.truncation_starts(offset, offset)?;
        // Kafka's `truncateFullyAndStartAt`: the whole log starts at `offset` too.
        self.remote.set_log_start_offset(None);
        // Remove the old segments first: the new one may reuse a base offset.
        drop(writer.active.take());
        for (_, segment) in view.segments.iter() {
            self.unlink_truncated(segment)?;
        }
        // The unlinks are durable before the new segment exists (it may reuse a base offset).
        self.sync_dir_or_poison()?;
        let mut created = ActiveSegment::create(&self.dir, offset, &self.settings().segment)
            .map_err(|e| self.poisoned_by("create segment", e))?;
        created.set_created_ms(self.clock.now_ms());
        let mut segments = crate::segment_map::SegmentMap::new();
        segments.insert(offset, Arc::clone(created.segment()));
        writer.active = Some(created);
        self.sync_dir_or_poison()?;
        let end = OffsetMetadata {
            offset,
            segment_base_offset: offset,
            position: 0,
        };
        // Under the flusher lock: a flush or group commit in flight cannot raise the marks
        // above the truncation after this lowers them.
        let mut flusher = self.durability.lock_flusher();
        flusher.restarted_at(offset);
        self.published.publish(LogView {
            segments: Arc::new(segments),
            log_start_offset: offset,
            end,
            high_watermark: end,
            txns: Default::default(),
        });
        drop(flusher);
        self.producers_truncated_fully(offset)?;
        tracing::info!(
            dir = %self.dir.display(), offset, previous_log_end_offset = view.end.offset,
            removed_segments = view.segments.len(), "truncated fully: empty log started"
        );
        self.observe_shape(writer);
        self.epochs_clear()
    }

    /// Under the writer lock, before a truncation to `offset` changes anything: a cleaning
    /// round in progress will abort at its next swap, and the cleaner checkpoint is lowered to
    /// `cut_base` (the base of the segment the truncation leaves active in Kafka's layout) if it
    /// is above it (Kafka's `maybeTruncateCleanerCheckpointToActiveSegmentBaseOffset`).
    fn truncation_starts(&self, offset: i64, cut_base: i64) -> Result<()> {
        self.truncations.fetch_add(1, crate::sync::Ordering::AcqRel);
        // What the remote tier holds at or above `offset` is no longer what the log holds.
        self.remote.lower_highest_offset(offset - 1);
        self.home.write_cleaner_checkpoint(cut_base, true)
    }

    fn lower_after_truncation(
        &self,
        view: &View,
        segments: crate::segment_map::SegmentMap<Arc<Segment>>,
        offset: i64,
        floor_base: i64,
        position: u64,
        txns: crate::view::UnstableTxns,
    ) {
        let end = OffsetMetadata {
            offset,
            segment_base_offset: floor_base,
            position,
        };
        // Under the flusher lock: a flush or group commit in flight cannot raise the marks
        // above the truncation after this lowers them (it re-reads the view afterwards).
        let mut flusher = self.durability.lock_flusher();
        flusher.truncated_to(offset);
        let high_watermark = if view.high_watermark.offset >= offset {
            end
        } else {
            view.high_watermark
        };
        self.durability.mark_dir_dirty();
        self.published.publish(LogView {
            segments: Arc::new(segments),
            log_start_offset: view.log_start_offset.min(offset),
            end,
            high_watermark,
            txns,
        });
        drop(flusher);
    }
}

/// Offsets are never negative: a truncation to one is refused (nothing changes).
fn refuse_negative(offset: i64, view: &View) -> Result<()> {
    if offset < 0 {
        return Err(Error::OffsetOutOfRange {
            offset,
            log_start_offset: view.log_start_offset,
            log_end_offset: view.end.offset,
        });
    }
    Ok(())
}

/// Retention statistics of every segment in `view`, oldest first.
fn segment_stats(view: &View, timestamps: bool) -> Result<Vec<SegmentStat>> {
    view.segments
        .iter()
        .map(|(base, segment)| {
            Ok(SegmentStat {
                base_offset: base,
                size_bytes: segment.size() as i64,
                // Not read (nor a deferred segment opened) for the rules that ignore it.
                largest_timestamp_ms: if timestamps {
                    segment.largest_timestamp()?
                } else {
                    i64::MIN
                },
            })
        })
        .collect()
}
