//! Flushing (spec §5.8) and the explicit background work of [`Log::tick`].

use std::time::Instant;

use crate::Result;
use crate::log::Log;
use crate::retention::RetentionReport;

/// What one [`Log::tick`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TickReport {
    /// Deleted segments (or leftover file sets) unlinked because their delay passed.
    pub unlinked: usize,
    /// The retention pass.
    pub retention: RetentionReport,
    /// The recovery point after the tick, when a flush ran.
    pub flushed_to: Option<i64>,
    /// Producer ids removed by `producer.id.expiration.ms`.
    pub expired_producers: usize,
}

impl Log {
    /// Flushes everything appended so far (Kafka's `flush`): `fdatasync` of each `.log` and
    /// `msync` of its indexes from the recovery point to the log end offset, then a directory
    /// fsync if segments were created or renamed (KAFKA-3968). The recovery point becomes the
    /// log end offset, and the log's recovery-point checkpoint entry is rewritten when it moved
    /// (also for a log of a [`crate::LogDir`], in the root's checkpoint), so a crash after the
    /// flush recovers only what lies above it. Readers are not blocked; appends continue
    /// meanwhile.
    ///
    /// # Errors
    /// Segment I/O errors; a failed fsync poisons the log. I/O errors of the checkpoint write.
    pub fn flush(&self) -> Result<()> {
        self.flush_up_to(i64::MAX).map(drop)
    }

    /// Flushes the segments holding offsets below `offset`, raises the recovery point to
    /// `min(offset, log end offset)` and checkpoints it as [`Log::flush`] does. Returns the new
    /// recovery point.
    ///
    /// # Errors
    /// As [`Log::flush`].
    pub fn flush_up_to(&self, offset: i64) -> Result<i64> {
        let recovery_point = self.flush_to(offset, false)?;
        self.follow_durable_end()?;
        self.write_checkpoints(false)?;
        Ok(recovery_point)
    }

    /// The flush itself; `force_active` also flushes an empty active segment (close).
    pub(crate) fn flush_to(&self, up_to: i64, force_active: bool) -> Result<i64> {
        if self.read_only {
            return Ok(self.recovery_point());
        }
        self.check_poison()?;
        // Serializes flushes. The view is loaded under it: a truncation publishes its view
        // before releasing it, so this flush never raises the marks over a truncation.
        let mut flusher = self.durability.lock_flusher();
        let view = self.published.load();
        let target = up_to.min(view.end.offset);
        let recovery_point = flusher.recovery_point();
        let dir_dirty = flusher.take_dir_dirty();
        if target <= recovery_point && !force_active && !dir_dirty {
            return Ok(recovery_point);
        }
        let started = Instant::now();
        let range_end = if force_active { i64::MAX } else { target };
        for (_, segment) in view.segments.range(recovery_point, range_end) {
            segment.flush().map_err(|e| self.poisoned_by("fsync", e))?;
        }
        // The snapshots taken at rolls without an fsync (Kafka syncs them with the flush).
        self.sync_producer_snapshots()?;
        if dir_dirty {
            flusher.sync_dir(&self.dir)?;
        }
        let took = started.elapsed();
        self.metrics.fsynced(took, None);
        crate::observe::fsynced(&self.dir, "flush", target, took);
        Ok(flusher.flushed_to(target, self.clock.now_ms()))
    }

    /// The group commit's sync (the leader of [`crate::group_commit::GroupCommit`] runs it for
    /// every durable appender): makes every byte appended before it started durable and
    /// returns the log end offset it covered. One `fdatasync` of the `.log` of each segment
    /// holding offsets not yet known durable — the active one, and every segment sealed by a
    /// roll since the last commit (an acknowledged append makes its whole prefix durable) —
    /// then a directory fsync when segments were created, renamed or removed since the last
    /// one. Indexes are not synced, so the recovery point does not move: everything above it
    /// is recovered (indexes rebuilt from the `.log`) after an unclean shutdown.
    ///
    /// # Errors
    /// A failed fsync poisons the log.
    pub(crate) fn sync_appended(&self) -> Result<i64> {
        if self.read_only {
            return Ok(self.published.load().end.offset);
        }
        self.check_poison()?;
        let joined = self.durability.wait_for_siblings();
        let started = Instant::now();
        // Serializes with flushes (one owner of the dirty-directory flag at a time).
        let mut flusher = self.durability.lock_flusher();
        let view = self.published.load();
        let target = view.end.offset;
        let from = flusher.durable_end_offset();
        let dir_dirty = flusher.take_dir_dirty();
        for (_, segment) in view.segments.starting_at_floor(from) {
            segment
                .sync_log_data()
                .map_err(|e| self.poisoned_by("fsync", e))?;
        }
        if dir_dirty {
            flusher.sync_dir(&self.dir)?;
        }
        let took = started.elapsed();
        self.durability.sync_done(took);
        drop(flusher);
        self.metrics.fsynced(took, Some(joined));
        crate::observe::fsynced(&self.dir, "group commit", target, took);
        Ok(target)
    }

    /// fsyncs the log directory now (renames or creates that must be durable before the
    /// caller returns); a failure poisons the log.
    ///
    /// # Errors
    /// The directory fsync's I/O error.
    pub(crate) fn sync_dir_or_poison(&self) -> Result<()> {
        self.durability.sync_dir_or_poison(&self.dir)
    }

    /// Runs the background work due at `now_ms`, on the caller's thread (no hidden threads):
    /// unlinks `.deleted` segments whose `file.delete.delay.ms` passed, runs retention
    /// ([`Log::delete_old_segments`] at `now_ms`), flushes segments sealed by rolls and — when
    /// `flush.ms` elapsed since the last flush — everything, then rewrites the log's
    /// checkpoint entries if they changed (also for a log of a [`crate::LogDir`]). A closed or
    /// read-only log does nothing. Time is the `now_ms` passed in, not the log's [`crate::Clock`]:
    /// retention's age and `flush.ms` are measured against it and the segments it deletes are
    /// unlinked `file.delete.delay.ms` after it ([`Log::spawn_ticker`] passes the log's clock).
    /// Under [`crate::HighWatermarkPolicy::DurableEnd`] it then raises the high watermark to
    /// the durable end.
    ///
    /// # Errors
    /// The first failure; deletions that failed are retried at the next tick.
    pub fn tick(&self, now_ms: i64) -> Result<TickReport> {
        self.tick_with(now_ms, true)
    }

    /// [`Log::tick`]; `own_checkpoints` false leaves the checkpoint write to the caller (a
    /// `LogDir` ticking all its logs writes the root once, after them).
    pub(crate) fn tick_with(&self, now_ms: i64, own_checkpoints: bool) -> Result<TickReport> {
        let mut report = TickReport::default();
        if self.read_only || self.lock_writer().closed {
            return Ok(report);
        }
        let mut first_error = None;
        let due = self.deletions.take_due(now_ms);
        let mut failed = Vec::new();
        for doomed in due {
            match doomed.delete() {
                Ok(()) => report.unlinked += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                    failed.push(doomed);
                }
            }
        }
        self.deletions.requeue(now_ms, failed);
        if report.unlinked > 0 {
            tracing::debug!(
                dir = %self.dir.display(), segments = report.unlinked,
                "unlinked deleted segments after file.delete.delay.ms"
            );
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        report.retention = self.delete_old_segments_at(now_ms)?;
        // Kafka's PeriodicProducerExpirationCheck, at every tick.
        report.expired_producers = self.remove_expired_producers(now_ms);
        let active_base = self.published.load().segments.last().map_or(0, |(b, _)| b);
        if self.recovery_point() < active_base {
            report.flushed_to = Some(self.flush_to(active_base, false)?);
        }
        let last_flush_ms = self.durability.last_flush_ms();
        if now_ms.saturating_sub(last_flush_ms) >= self.settings().config.flush_ms {
            report.flushed_to = Some(self.flush_to(i64::MAX, false)?);
        }
        self.follow_durable_end()?;
        if own_checkpoints {
            self.write_checkpoints(false)?;
        }
        Ok(report)
    }
}
