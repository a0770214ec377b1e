//! Appending (spec §5.4) and rolling (spec §5.3).

use seglog_segment::{ActiveSegment, RollParams};

use crate::TimestampType;
use crate::log::{Log, Writer};
use std::sync::Arc;

use crate::log_producers::ProducerCheck;
use crate::validate::{self, Origin};
use crate::view::{LogView, OffsetMetadata, Snapshot};
use crate::{AppendErrorKind, Error, Result};

/// How durable an append must be when it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Returns once the bytes are written to the OS (page cache) and visible to readers.
    /// A process crash (`kill -9`) loses nothing; an OS crash or power loss may lose any
    /// suffix of the log above the recovery point — recovery then cuts the log after the last
    /// whole, valid batch. Kafka's default: durability comes from replication, and
    /// `flush.messages` / `flush.ms` / [`Log::flush`] move the recovery point.
    #[default]
    PageCache,
    /// Returns only after this append and everything before it are fsynced (`fdatasync` of
    /// the `.log` of the active segment and of every segment sealed since the last sync,
    /// directory fsync after a roll or a removal): it survives an OS crash or power loss, as
    /// far as the device honours cache flushes. Indexes are not synced and the recovery point
    /// does not move (recovery rebuilds indexes above it). Concurrent durable appenders share
    /// one fsync (group commit).
    Fsync,
}

/// What an append wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AppendInfo {
    /// Offset of the first record.
    pub first_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// The largest batch max timestamp, after LogAppendTime stamping; `None` when no batch
    /// carries one (legacy v0 messages, or every timestamp -1).
    pub max_timestamp_ms: Option<i64>,
    /// The last offset of the first batch holding [`AppendInfo::max_timestamp_ms`] (Kafka's
    /// `shallowOffsetOfMaxTimestamp`); the first batch's last offset when no batch has a
    /// timestamp.
    pub max_timestamp_offset: i64,
    /// The append time stamped on the batches, with `message.timestamp.type=LogAppendTime`.
    pub log_append_time_ms: Option<i64>,
    /// Number of batches written.
    pub batch_count: usize,
    /// Bytes written.
    pub size_bytes: u64,
    /// Whether a new segment was rolled before writing.
    pub rolled: bool,
    /// The log start offset at the time of the append.
    pub log_start_offset: i64,
    /// The append was a retry of one of its producer's last 5 batches (same epoch and
    /// sequence range): nothing was written, and the offsets are those of the original
    /// batch (Kafka's duplicate answer).
    pub duplicate: bool,
}

impl Log {
    /// Appends one or more concatenated v2 batches as the leader: validates each as Kafka's
    /// `LogValidator` validates a produced batch (framing, CRC, `max.message.bytes`, record
    /// counts, no control batches, a producer id for a transactional batch, and every
    /// record's key on a compacted log and timestamp against the CreateTime window; a
    /// producer may not choose LogAppendTime), assigns offsets from the log end offset (the
    /// new base offsets are written in place of the old ones by one vectored write: the
    /// caller's bytes are neither modified nor copied, unless a header's max timestamp must be
    /// rewritten from its records or LogAppendTime stamped, which change checksummed bytes),
    /// rolls when the active segment says so, writes. Kafka takes one batch per produce; a
    /// concatenation here is one all-or-nothing append of batches each validated alone.
    ///
    /// # Errors
    /// [`Error::InvalidAppend`] / [`Error::Records`] for bad input (nothing written);
    /// [`Error::ReadOnly`], [`Error::Closed`], [`Error::Poisoned`]; [`Error::Segment`] on I/O
    /// failure (the log is then poisoned).
    pub fn append(&self, batches: &[u8]) -> Result<AppendInfo> {
        self.append_with(batches, Durability::PageCache)
    }

    /// [`Log::append`] that returns only once the bytes are fsynced ([`Durability::Fsync`]).
    ///
    /// # Errors
    /// As [`Log::append`], plus fsync failures (which poison the log).
    pub fn append_durable(&self, batches: &[u8]) -> Result<AppendInfo> {
        self.append_with(batches, Durability::Fsync)
    }

    /// [`Log::append`] with an explicit [`Durability`].
    ///
    /// # Errors
    /// As [`Log::append_durable`].
    pub fn append_with(&self, batches: &[u8], durability: Durability) -> Result<AppendInfo> {
        self.append_inner(&[batches], Origin::Leader, None, durability)
    }

    /// Bulk append as the leader: the concatenation of `chunks` (each holding one or more
    /// whole v2 batches, e.g. the `MemoryRecords` of several produce requests, or a producer's
    /// batches in separate buffers) is one append, exactly as [`Log::append_with`] of the
    /// concatenated bytes would be, written with one vectored write (`pwritev`; one per 1,024
    /// parts) without first copying the chunks into one buffer. One append is one index step:
    /// the offset index gets at most one entry per call, as for any multi-batch
    /// append. Empty chunks are skipped.
    ///
    /// # Errors
    /// As [`Log::append_with`]; batch positions in errors count from the start of the first
    /// chunk, and a chunk that ends inside a batch is [`AppendErrorKind::TrailingBytes`].
    pub fn append_vectored(&self, chunks: &[&[u8]], durability: Durability) -> Result<AppendInfo> {
        self.append_inner(chunks, Origin::Leader, None, durability)
    }

    /// [`Log::append_with`] as the leader of `leader_epoch` (Kafka's `appendAsLeader`): every
    /// batch is written with `partitionLeaderEpoch = leader_epoch` (a field outside the CRC,
    /// patched by the same vectored write as the base offset), and a new epoch's start
    /// offset is recorded in the leader-epoch cache (`leader-epoch-checkpoint` is rewritten
    /// before this returns). [`Log::append`] keeps the batches' own `partitionLeaderEpoch`
    /// (a client's is -1) and, as every append does, records the epochs they carry.
    ///
    /// # Errors
    /// As [`Log::append_durable`], plus [`AppendErrorKind::InvalidLeaderEpoch`] for a
    /// negative epoch (nothing written) and I/O errors writing the checkpoint (which poison
    /// the log; the batches were written but are not published: a reopen recovers them).
    pub fn append_as_leader(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        durability: Durability,
    ) -> Result<AppendInfo> {
        if leader_epoch < 0 {
            return Err(Error::InvalidAppend {
                kind: AppendErrorKind::InvalidLeaderEpoch {
                    epoch: leader_epoch,
                },
            });
        }
        self.append_inner(&[batches], Origin::Leader, Some(leader_epoch), durability)
    }

    /// Appends batches as a follower: offsets are kept (they must increase, and the first
    /// must be at or above the log end offset), CRCs are checked, `max.message.bytes` is not;
    /// legacy v0/v1 batches are accepted; a partial trailing batch is dropped as Kafka does.
    ///
    /// # Errors
    /// As [`Log::append`], with [`AppendErrorKind::OffsetsOutOfOrder`] and
    /// [`AppendErrorKind::UnexpectedAppendOffset`].
    pub fn append_as_follower(&self, batches: &[u8]) -> Result<AppendInfo> {
        self.append_as_follower_with(batches, Durability::PageCache)
    }

    /// [`Log::append_as_follower`] with an explicit [`Durability`].
    ///
    /// # Errors
    /// As [`Log::append_as_follower`].
    pub fn append_as_follower_with(
        &self,
        batches: &[u8],
        durability: Durability,
    ) -> Result<AppendInfo> {
        self.append_inner(&[batches], Origin::Follower, None, durability)
    }

    /// Bulk append as a follower: [`Log::append_as_follower_with`] of the concatenation of
    /// `chunks` (e.g. the record sets of several fetch responses for this partition), written
    /// with one vectored write without first being copied into one buffer. Only the last
    /// chunk may end in a partial batch (dropped, as Kafka does); empty chunks are skipped.
    ///
    /// # Errors
    /// As [`Log::append_as_follower`], plus [`AppendErrorKind::TrailingBytes`] for a chunk
    /// other than the last that ends inside a batch (nothing written).
    pub fn append_as_follower_vectored(
        &self,
        chunks: &[&[u8]],
        durability: Durability,
    ) -> Result<AppendInfo> {
        self.append_inner(chunks, Origin::Follower, None, durability)
    }

    /// Kafka's `appendAsFollower(records, leaderEpoch)`: [`Log::append_as_follower_with`] of
    /// the batches before the first one whose partition leader epoch is above `leader_epoch`.
    /// Such a batch comes from a leader newer than this replica knows of; Kafka 4.4's
    /// `analyzeAndValidateRecords` (`hasHigherPartitionLeaderEpoch`) skips it and every batch
    /// after it, unread. A batch without an epoch (-1, and every v0/v1 batch) is never skipped.
    /// `Ok(None)` when the first batch is skipped: nothing is written, as Kafka returns an empty
    /// `LogAppendInfo`. Bytes that do not parse as a batch end the scan there, and the append
    /// then reports them as [`Log::append_as_follower_with`] does.
    ///
    /// # Errors
    /// As [`Log::append_as_follower`], for the batches kept.
    pub fn append_as_follower_in_epoch(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        durability: Durability,
    ) -> Result<Option<AppendInfo>> {
        let newer = seglog_records::Batches::new(batches, 0)
            .map_while(std::result::Result::ok)
            .find(|batch| {
                let epoch = batch.header().partition_leader_epoch;
                epoch != -1 && epoch > leader_epoch
            })
            .map(|batch| usize::try_from(batch.header().position).unwrap_or(batches.len()));
        let kept = batches
            .get(..newer.unwrap_or(batches.len()))
            .unwrap_or(batches);
        if kept.is_empty() && !batches.is_empty() {
            return Ok(None);
        }
        self.append_as_follower_with(kept, durability).map(Some)
    }

    /// A coordinator's marker batch (from [`Log::write_txn_marker_with`]), checked under
    /// `transaction_version`.
    pub(crate) fn append_marker(
        &self,
        batch: &[u8],
        leader_epoch: Option<i32>,
        durability: Durability,
        transaction_version: crate::TransactionVersion,
    ) -> Result<AppendInfo> {
        self.append_versioned(
            &[batch],
            Origin::Coordinator,
            leader_epoch,
            durability,
            Some(transaction_version),
        )
    }

    fn append_inner(
        &self,
        chunks: &[&[u8]],
        origin: Origin,
        leader_epoch: Option<i32>,
        durability: Durability,
    ) -> Result<AppendInfo> {
        self.append_versioned(chunks, origin, leader_epoch, durability, None)
    }

    /// An append; `transaction_version` is the coordinator's for its markers (Kafka's
    /// `transactionVersion` of `appendAsLeader`), `None` for every other origin (Kafka's
    /// `TV_UNKNOWN`).
    fn append_versioned(
        &self,
        chunks: &[&[u8]],
        origin: Origin,
        leader_epoch: Option<i32>,
        durability: Durability,
        transaction_version: Option<crate::TransactionVersion>,
    ) -> Result<AppendInfo> {
        if self.read_only {
            return Err(Error::ReadOnly {
                dir: self.dir.clone(),
            });
        }
        let mut durable =
            (durability == Durability::Fsync).then(|| self.durability.enter_durable_append());
        let now = self.clock.now_ms();
        // Validation and CRC work happen before the writer lock.
        let settings = self.settings();
        let mut analysis = validate::analyze(chunks, origin, &settings.config, now)?;
        let log_append_time_ms = (origin != Origin::Follower
            && settings.config.message_timestamp_type == TimestampType::LogAppendTime)
            .then_some(now);
        // The caller's bytes are written in place (base offsets are patched in by the vectored
        // write); only LogAppendTime or a max timestamp rewritten from the records, which
        // change CRC-covered bytes, need a copy.
        let stamped = validate::restamp(chunks, &mut analysis, log_append_time_ms)?;
        let stamped_chunk;
        let bytes: &[&[u8]] = match &stamped {
            Some(copy) => {
                stamped_chunk = [copy.as_slice()];
                &stamped_chunk
            }
            None => chunks,
        };
        let size = analysis.valid_bytes as u64;
        if size > settings.segment.segment_bytes.into() {
            return Err(Error::InvalidAppend {
                kind: AppendErrorKind::AppendTooLarge {
                    size,
                    max: settings.config.segment_bytes.into(),
                },
            });
        }

        let mut writer = self.writable()?;
        let mut view = self.published.load();
        let log_end_offset = view.end.offset;
        let bases = match origin {
            Origin::Leader | Origin::Coordinator => {
                validate::assign_offsets(&mut analysis, log_end_offset)?
            }
            Origin::Follower => {
                if analysis.first_offset() < log_end_offset {
                    return Err(Error::InvalidAppend {
                        kind: AppendErrorKind::UnexpectedAppendOffset {
                            first_offset: analysis.first_offset(),
                            log_end_offset,
                        },
                    });
                }
                // A legacy compressed wrapper passes the check above by its last offset (as in
                // Kafka 4.4, which knows no other for it); one whose inner offsets begin below
                // the log end would hold offsets the log already has (docs/format.md,
                // "Overlapping follower batches are refused").
                if let Some((first_offset, position)) = analysis.first_record()
                    && first_offset < log_end_offset
                {
                    return Err(Error::InvalidAppend {
                        kind: AppendErrorKind::OverlappingBatch {
                            position,
                            previous_last_offset: log_end_offset - 1,
                            first_offset,
                        },
                    });
                }
                // seglog's own refusal of a batch overlapping the previous one comes after
                // Kafka's checks (long-run seed 305774: `[45]`, `[45, 46]` at log end 46 is
                // Kafka's `UnexpectedAppendOffsetException`).
                if let Some(kind) = analysis.overlap.take() {
                    return Err(Error::InvalidAppend { kind });
                }
                Vec::new()
            }
        };
        let pending = match self.check_producers(&analysis, bytes, origin, transaction_version)? {
            ProducerCheck::Pending(pending) => pending,
            ProducerCheck::Duplicate(original) => {
                return Ok(AppendInfo {
                    first_offset: original.first_offset(),
                    last_offset: original.last_offset,
                    max_timestamp_ms: (original.timestamp_ms >= 0).then_some(original.timestamp_ms),
                    max_timestamp_offset: original.last_offset,
                    log_append_time_ms: log_append_time_ms.map(|_| original.timestamp_ms),
                    batch_count: 0,
                    size_bytes: 0,
                    rolled: false,
                    log_start_offset: view.log_start_offset,
                    duplicate: true,
                });
            }
        };
        let last_offset = analysis.last_offset();
        let (max_timestamp_ms, offset_of_max_timestamp) = analysis.max_timestamp();
        let params = RollParams {
            max_segment_ms: settings.config.segment_ms,
            max_segment_bytes: settings.segment.segment_bytes,
            max_timestamp_in_messages: max_timestamp_ms,
            max_offset_in_messages: last_offset,
            messages_size: size,
            now_ms: now,
        };
        let active = writer.active.as_mut().ok_or_else(|| Error::Closed {
            dir: self.dir.clone(),
        })?;
        let rolled = active.should_roll(&params)?;
        if rolled {
            view = self.roll_locked(&mut writer, &view, Some(analysis.roll_offset()), now)?;
        }
        let stamped = leader_epoch
            .map(|epoch| validate::stamp_leader_epoch(bytes, &mut analysis, &bases, epoch));
        let parts = match &stamped {
            Some(prefixes) => validate::write_parts(bytes, &analysis, prefixes),
            None => validate::write_parts(bytes, &analysis, &bases),
        };
        let active = writer.active.as_mut().ok_or_else(|| Error::Closed {
            dir: self.dir.clone(),
        })?;
        active
            .append_parts(
                last_offset,
                max_timestamp_ms,
                offset_of_max_timestamp,
                &parts,
            )
            .map_err(|e| self.poisoned_by("append", e))?;
        let segment = Arc::clone(active.segment());
        let end = OffsetMetadata {
            offset: last_offset + 1,
            segment_base_offset: segment.base_offset(),
            position: segment.size(),
        };
        // Before the batches are published (log_producers.rs): the aborts' `.txnindex`
        // entries, then the producer state, so no reader sees a last stable offset past a
        // marker whose entry is missing.
        let txns = self.apply_producers(pending, &segment, end.offset)?;
        // Before the batches are published: no flush can move the recovery point over them
        // before their epochs are in the checkpoint (a crash then recovers them).
        self.epochs_after_append(&analysis.batches)?;
        let mut appended = view.appended(end);
        if let Some(txns) = txns {
            appended.txns = txns;
        }
        self.published
            .publish(self.with_high_watermark_policy(appended));
        let records = last_offset
            .saturating_add(1)
            .saturating_sub(analysis.first_offset());
        // Under the writer lock, as every gauge update ([`Log::observe_shape`]): a shape set
        // from a view that already holds this append can then never be followed by its
        // increment (the size gauge would count the batch twice).
        self.metrics.appended(size, records as u64, end.offset);
        drop(writer);
        tracing::trace!(
            dir = %self.dir.display(), first_offset = analysis.first_offset(), last_offset,
            bytes = size, "appended"
        );
        if let Some(durable) = &mut durable {
            durable.published();
        }

        let info = AppendInfo {
            first_offset: analysis.first_offset(),
            last_offset,
            max_timestamp_ms: (max_timestamp_ms >= 0).then_some(max_timestamp_ms),
            max_timestamp_offset: offset_of_max_timestamp,
            log_append_time_ms,
            batch_count: analysis.batches.len(),
            size_bytes: size,
            rolled,
            log_start_offset: view.log_start_offset,
            duplicate: false,
        };
        let unflushed = end.offset.saturating_sub(self.recovery_point());
        match durability {
            Durability::Fsync => {
                let kept = self
                    .durability
                    .wait_durable(end.offset, || self.sync_appended())?;
                if !kept {
                    // A truncation removed these offsets before they became durable.
                    let now = self.published.load();
                    return Err(Error::OffsetOutOfRange {
                        offset: last_offset,
                        log_start_offset: now.log_start_offset,
                        log_end_offset: now.end.offset,
                    });
                }
            }
            Durability::PageCache if unflushed >= settings.config.flush_messages => {
                self.flush_to(end.offset, false)?;
            }
            Durability::PageCache => {}
        }
        self.follow_durable_end()?;
        Ok(info)
    }

    /// Rolls to a new active segment (Kafka's `LocalLog.roll`): base
    /// `max(expected, log end offset)`; an empty active segment at that base is replaced by a
    /// fresh one (KAFKA-6388). The old active segment is sealed (final time-index entry,
    /// trimmed files) and the new map is published with the log end pointing into the new
    /// segment. The caller holds the writer lock. Returns the published view.
    ///
    /// # Errors
    /// Segment errors; a failure after the old segment was sealed poisons the log.
    pub(crate) fn roll_locked(
        &self,
        writer: &mut Writer,
        view: &LogView<Arc<seglog_segment::Segment>>,
        expected: Option<i64>,
        now_ms: i64,
    ) -> Result<Snapshot<LogView<Arc<seglog_segment::Segment>>>> {
        let started = std::time::Instant::now();
        let log_end_offset = view.end.offset;
        let new_base = expected.unwrap_or(0).max(log_end_offset);
        let active = writer.active.take().ok_or_else(|| Error::Closed {
            dir: self.dir.clone(),
        })?;
        let active_base = active.segment().base_offset();
        let mut segments = (*view.segments).clone();
        if new_base == active_base && active.segment().is_empty() {
            // KAFKA-6388: the empty active segment is replaced, not duplicated.
            let old = active.seal().map_err(|e| self.poisoned_by("seal", e))?;
            let delay_ms = self.settings().config.file_delete_delay_ms;
            self.doom(old, now_ms.saturating_add(delay_ms))?;
            segments.remove(active_base);
        } else if new_base <= active_base {
            writer.active = Some(active);
            return Err(Error::InvalidAppend {
                kind: AppendErrorKind::UnexpectedAppendOffset {
                    first_offset: new_base,
                    log_end_offset,
                },
            });
        } else {
            active.seal().map_err(|e| self.poisoned_by("seal", e))?;
        }
        // The seal hook for a copier (`remote/sealed.rs`): sent after the publish below.
        let sealed = (new_base != active_base).then_some(crate::remote::SegmentSealed {
            base_offset: active_base,
            next_base_offset: new_base,
        });
        if new_base > log_end_offset {
            // A roll across a gap (a follower's compacted data): the gap is made durable
            // before the new segment exists, so that after a crash the loader never takes it
            // for a tail the crash erased (docs/durability.md, section 4).
            self.flush_across_gap(log_end_offset, new_base)?;
        }
        let mut created = ActiveSegment::create(&self.dir, new_base, &self.settings().segment)
            .map_err(|e| self.poisoned_by("create segment", e))?;
        created.set_created_ms(now_ms);
        segments.insert(new_base, Arc::clone(created.segment()));
        writer.active = Some(created);
        self.durability.mark_dir_dirty();
        // Kafka's roll: a producer snapshot named by the new segment's base (synced by the
        // next flush).
        self.producers_rolled(new_base)?;
        self.published
            .publish(view.rolled(Arc::new(segments), new_base));
        tracing::info!(
            dir = %self.dir.display(), base_offset = new_base, previous_base_offset = active_base,
            log_end_offset, duration_ms = crate::observe::duration_ms(started.elapsed()),
            "rolled new segment"
        );
        self.observe_shape(writer);
        if let Some(event) = sealed {
            self.remote.sealed.notify(event);
        }
        Ok(self.published.load())
    }

    /// Flushes everything below `log_end_offset`, raises the recovery point over the gap to
    /// `new_base` and writes a standalone log's checkpoints. Called under the writer lock
    /// (rare: only rolls whose new base lies above the log end offset).
    fn flush_across_gap(&self, log_end_offset: i64, new_base: i64) -> Result<()> {
        self.flush_to(log_end_offset, false)?;
        self.durability.raise_over_gap(new_base);
        self.write_checkpoints_now()
    }

    /// Rolls the active segment now (if it holds any data), e.g. before archiving it.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn roll(&self) -> Result<()> {
        let mut writer = self.writable()?;
        let view = self.published.load();
        let empty = writer
            .active
            .as_ref()
            .is_some_and(|a| a.segment().is_empty());
        if !empty {
            self.roll_locked(&mut writer, &view, None, self.clock.now_ms())?;
        }
        Ok(())
    }
}
