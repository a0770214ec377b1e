//! Reading (spec §5.2) and lookups by time (Kafka's `fetchOffsetByTimestamp`, §3.4).

use std::sync::Arc;

use seglog_segment::{FileSlice, Segment, SliceOffsets, TimestampAndOffset, TimestampBatch};

use crate::log::Log;
use crate::view::{Isolation, LogView, OffsetMetadata};
use crate::{Error, Result};

/// The result of [`Log::read`].
#[derive(Debug, Clone)]
pub struct FetchData {
    /// The bytes: whole batches from the one holding the start offset (which may begin below
    /// it), possibly cut mid-batch at the end by `max_bytes`; empty at the end of the log.
    pub slice: FileSlice,
    /// Where the read started (the start offset, its segment and the batch position), or
    /// the bound it hit when nothing was read.
    pub fetch_offset: OffsetMetadata,
    /// The high watermark when the read was planned.
    pub high_watermark: i64,
    /// The log start offset when the read was planned.
    pub log_start_offset: i64,
    /// The log end offset when the read was planned.
    pub log_end_offset: i64,
    /// The last stable offset when the read was planned (the high watermark when no
    /// transaction is open).
    pub last_stable_offset: i64,
    /// With [`Isolation::ReadCommitted`]: the aborted transactions overlapping the fetched
    /// range (Kafka's `collectAbortedTransactions`, a superset: from the start offset to the
    /// end of the segment read), by marker order; a consumer drops the transactional records
    /// of those producers from each first offset until the producer's ABORT marker. `None`
    /// for the other isolations.
    pub aborted_transactions: Option<Vec<crate::AbortedTransaction>>,
}

/// The result of [`Log::read_into`]: what [`FetchData`] says, for bytes copied into the
/// caller's buffer instead of a [`FileSlice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopiedFetch {
    /// Byte position in its segment's `.log` of the first byte copied (a batch boundary):
    /// the slice's [`FileSlice::position`]. With nothing read, that of the empty slice.
    pub position: u64,
    /// The offsets the bytes cover: the slice's [`FileSlice::offsets`].
    pub offsets: SliceOffsets,
    /// Where the read started (the start offset, its segment and the batch position), or
    /// the bound it hit when nothing was read.
    pub fetch_offset: OffsetMetadata,
    /// The high watermark when the read was planned.
    pub high_watermark: i64,
    /// The log start offset when the read was planned.
    pub log_start_offset: i64,
    /// The log end offset when the read was planned.
    pub log_end_offset: i64,
    /// The last stable offset when the read was planned.
    pub last_stable_offset: i64,
}

/// The result of [`Log::read_by_timestamp_into`]: the answer of
/// [`Log::offset_for_timestamp`] and the batch holding it, copied into the caller's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampFetch {
    /// The first record at or after the timestamp.
    pub found: TimestampAndOffset,
    /// Base offset of the segment the batch was read from.
    pub segment_base_offset: i64,
    /// Position of the batch in that segment's `.log`.
    pub position: u64,
    /// The batch's bytes in the caller's buffer: the whole batch, or, for a batch reaching
    /// above the isolation bound, what [`Log::read_into`] from the found offset returns.
    pub batch: std::ops::Range<usize>,
}

/// Which offset [`Log::offset_for_timestamp`] looks for (Kafka's ListOffsets specs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListOffsets {
    /// The log start offset (`EARLIEST_TIMESTAMP`, -2).
    Earliest,
    /// The log end offset (`LATEST_TIMESTAMP`, -1).
    Latest,
    /// The record with the largest timestamp (`MAX_TIMESTAMP`, -3), exactly (KAFKA-16310).
    MaxTimestamp,
    /// KIP-1005's local log start offset (`EARLIEST_LOCAL_TIMESTAMP`, -4) with the epoch that
    /// holds it; as [`ListOffsets::Earliest`] when `remote.storage.enable` is off.
    EarliestLocal,
    /// The highest offset in remote storage (`LATEST_TIERED_TIMESTAMP`, -5), -1 before any
    /// copy finished; offset -1 with epoch -1 when `remote.storage.enable` is off.
    LatestTiered,
    /// The first offset not yet in remote storage (`EARLIEST_PENDING_UPLOAD_TIMESTAMP`, -6):
    /// one past the highest remote offset (at least the log start); before any copy, the log
    /// start when nothing was ever tiered, else offset -1 with epoch -1 (as when
    /// `remote.storage.enable` is off).
    EarliestPendingUpload,
    /// The first record with a timestamp at or after this one.
    Timestamp(i64),
}

impl Log {
    /// Reads from `start_offset` (Kafka's `UnifiedLog.read`): at most `max_bytes` (but at
    /// least the first batch when `min_one_message`), never past the log end offset or the
    /// high watermark per `isolation`. Never blocks on the writer or an fsync.
    ///
    /// # Errors
    /// [`crate::Error::OffsetOutOfRange`] (naming the log start and end) below the log start
    /// or above the log end; segment I/O errors.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u32,
        isolation: Isolation,
        min_one_message: bool,
    ) -> Result<FetchData> {
        // Below the local log start, from the remote tier (`remote_read.rs`); an offset no
        // remote segment reaches reads on from the local log start.
        let mut start_offset = start_offset;
        if let Some(tier) = self.remote_for(start_offset) {
            // The fetch quota (KIP-956): over it, no records for this fetch.
            if tier.fetch_throttle_time_ms() > 0 {
                return self.throttled_fetch(start_offset, isolation);
            }
            if let Some(fetch) =
                self.remote_read(&*tier, start_offset, max_bytes, isolation, min_one_message)?
            {
                return Ok(fetch);
            }
            start_offset = self.local_log_start_offset();
        }
        let view = self.published.load();
        let committed = self.committed_bound(&view, isolation)?;
        let plan = view
            .plan_read(start_offset, isolation, committed)
            .map_err(|e| self.with_whole_log_start(e))?;
        let last_stable_offset = view.last_stable_offset();
        let data = |slice: FileSlice, fetch_offset, aborted_transactions| FetchData {
            slice,
            fetch_offset,
            high_watermark: view.high_watermark.offset,
            log_start_offset: self.whole_log_start(view.log_start_offset),
            log_end_offset: view.end.offset,
            last_stable_offset,
            aborted_transactions,
        };
        let none = (isolation == Isolation::ReadCommitted).then(Vec::new);
        for (segment, max_position) in &plan.steps {
            let read = segment.read(start_offset, max_bytes, *max_position, min_one_message);
            if let Some(slice) = read.map_err(|e| self.moved_past(start_offset, e))? {
                let fetch_offset = OffsetMetadata {
                    offset: start_offset,
                    segment_base_offset: segment.base_offset(),
                    position: slice.position(),
                };
                let aborted = match isolation {
                    Isolation::ReadCommitted => {
                        let upper = view
                            .segments
                            .iter()
                            .find(|(b, _)| *b > segment.base_offset())
                            .map_or(view.end.offset, |(b, _)| b);
                        Some(self.collect_aborted(&view, start_offset, upper)?)
                    }
                    _ => None,
                };
                self.metrics.read(slice.len());
                return Ok(data(slice, fetch_offset, aborted));
            }
        }
        // Nothing to read: an empty slice at the bound.
        let bound = plan.max_offset;
        Ok(data(self.slice_at_bound(&view, bound)?, bound, none))
    }

    /// [`Log::read`] followed by [`FileSlice::read_into`] into a cleared `buf`: the same
    /// bounds (log start and end, the high watermark per `isolation`, the next segment when
    /// one holds nothing at or after `start_offset`), the same bytes and metadata, the same
    /// errors, but usually one `pread` instead of about three
    /// ([`seglog_segment::Segment::read_into`]: the batch's position is guessed from the
    /// offset index instead of walking headers). For applications that copy fetched bytes
    /// into memory anyway; [`Log::read`] stays the zero-copy path (`sendfile`).
    ///
    /// `buf`'s previous contents are replaced: on return it holds exactly the bytes read
    /// (nothing at the end of the log or on an error). It is not zero-filled except where it
    /// grows past its current length: reuse one buffer and do **not** clear it between calls.
    ///
    /// # Errors
    /// As [`Log::read`].
    pub fn read_into(
        &self,
        start_offset: i64,
        max_bytes: u32,
        isolation: Isolation,
        min_one_message: bool,
        buf: &mut Vec<u8>,
    ) -> Result<CopiedFetch> {
        // Below the local log start, from the remote tier (`remote_read.rs`); an offset no
        // remote segment reaches reads on from the local log start.
        let mut start_offset = start_offset;
        if let Some(tier) = self.remote_for(start_offset) {
            // The fetch quota (KIP-956): over it, no records for this fetch.
            if tier.fetch_throttle_time_ms() > 0 {
                buf.clear();
                return Ok(self.throttled_copied_fetch(start_offset));
            }
            if let Some(fetch) =
                self.remote_read_into(&*tier, start_offset, max_bytes, min_one_message, buf)?
            {
                return Ok(fetch);
            }
            start_offset = self.local_log_start_offset();
        }
        let view = self.published.load();
        let plan = match self
            .committed_bound(&view, isolation)
            .and_then(|committed| view.plan_read(start_offset, isolation, committed))
            .map_err(|e| self.with_whole_log_start(e))
        {
            Ok(plan) => plan,
            Err(e) => {
                buf.clear();
                return Err(e);
            }
        };
        let fetch = |position, offsets, fetch_offset| CopiedFetch {
            position,
            offsets,
            fetch_offset,
            high_watermark: view.high_watermark.offset,
            log_start_offset: self.whole_log_start(view.log_start_offset),
            log_end_offset: view.end.offset,
            last_stable_offset: view.last_stable_offset(),
        };
        for (segment, max_position) in &plan.steps {
            // `Segment::read_into` leaves `buf` empty on `None` and on errors.
            let read =
                segment.read_into(start_offset, max_bytes, *max_position, min_one_message, buf);
            if let Some(copied) = read.map_err(|e| self.moved_past(start_offset, e))? {
                let fetch_offset = OffsetMetadata {
                    offset: start_offset,
                    segment_base_offset: segment.base_offset(),
                    position: copied.position,
                };
                self.metrics.read(buf.len() as u64);
                return Ok(fetch(copied.position, copied.offsets, fetch_offset));
            }
        }
        // Nothing to read: the metadata of `read`'s empty slice at the bound.
        buf.clear();
        let bound = plan.max_offset;
        let slice = self.slice_at_bound(&view, bound)?;
        Ok(fetch(slice.position(), slice.offsets(), bound))
    }

    /// A segment read failed: when the log start has meanwhile moved past `start_offset`
    /// (retention deleted the segment of an older snapshot, and the segment cache had closed
    /// its files, so they could not be reopened), the reader gets `OffsetOutOfRange` naming
    /// the new start, as if it had read the new snapshot; otherwise the error itself.
    /// The metadata of the last stable offset for [`Isolation::ReadCommitted`] (`None` for
    /// the other isolations, or when it is the high watermark).
    pub(crate) fn committed_bound(
        &self,
        view: &LogView<Arc<Segment>>,
        isolation: Isolation,
    ) -> Result<Option<OffsetMetadata>> {
        if isolation != Isolation::ReadCommitted {
            return Ok(None);
        }
        let lso = view.last_stable_offset();
        if lso >= view.high_watermark.offset {
            return Ok(None);
        }
        self.offset_metadata(view, lso).map(Some)
    }

    fn moved_past(&self, start_offset: i64, e: seglog_segment::Error) -> Error {
        let now = self.published.load();
        if now.log_start_offset > start_offset {
            return Error::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset: now.log_start_offset,
                log_end_offset: now.end.offset,
            };
        }
        e.into()
    }

    /// The empty slice a read returns when nothing lies below its bound: at the bound's
    /// position in its segment (the last one when the bound's is gone), or over the directory
    /// when the log has no segment.
    fn slice_at_bound(
        &self,
        view: &LogView<Arc<Segment>>,
        bound: OffsetMetadata,
    ) -> Result<FileSlice> {
        match view
            .segments
            .floor(bound.segment_base_offset)
            .or_else(|| view.segments.last())
        {
            Some((_, segment)) => Ok(segment.slice(bound.position, 0)?),
            None => self.empty_slice(),
        }
    }

    /// An empty slice for a log without any segment (a read-only open of an empty directory):
    /// `FileSlice::empty` over a read-only handle of the partition directory (never read).
    /// Made once per log.
    fn empty_slice(&self) -> Result<FileSlice> {
        if let Some(slice) = self.empty_slice.get() {
            return Ok(slice.clone());
        }
        let handle = std::fs::File::open(&self.dir)
            .map_err(|e| Error::io("open directory", &self.dir, e))?;
        let offset = self.published.load().end.offset;
        Ok(self
            .empty_slice
            .get_or_init(|| FileSlice::empty(Arc::new(handle), self.dir.as_path(), offset))
            .clone())
    }

    /// Kafka's ListOffsets lookup. `Earliest` / `Latest` give the log start / end offset with
    /// timestamp -1 and, as Kafka 4.4 answers, the leader epoch of the earliest epoch entry
    /// when it starts at or below the log start / the latest epoch; `MaxTimestamp` the exact
    /// record holding the largest timestamp, the first one at or above the log start (none when
    /// every record holding it lies below); `Timestamp(t)` the first record at or after `t`, searched in the
    /// first segment whose largest timestamp is `>= t` that holds such a record at or above the
    /// log start offset. `None` when no record qualifies.
    ///
    /// # Errors
    /// Segment I/O or corruption errors.
    pub fn offset_for_timestamp(&self, spec: ListOffsets) -> Result<Option<TimestampAndOffset>> {
        let view = self.published.load();
        let found = |offset, leader_epoch| {
            Some(TimestampAndOffset {
                timestamp_ms: -1,
                offset,
                leader_epoch,
            })
        };
        match spec {
            // Kafka 4.4's `fetchOffsetByTimestamp`: the earliest epoch entry's epoch when it
            // starts at or below the log start, the latest epoch for LATEST.
            ListOffsets::Earliest => {
                // With a remote tier, the whole log's start (KIP-1005).
                let log_start_offset = self.log_start_offset().min(view.log_start_offset);
                let epoch = self
                    .leader_epoch_cache()
                    .earliest_entry()
                    .filter(|e| e.start_offset <= log_start_offset)
                    .map(|e| e.epoch);
                Ok(found(log_start_offset, epoch))
            }
            ListOffsets::EarliestLocal if self.settings().config.remote_storage_enable => {
                let local = view.log_start_offset;
                Ok(found(
                    local,
                    self.leader_epoch_cache().epoch_for_offset(local),
                ))
            }
            ListOffsets::EarliestLocal => self.offset_for_timestamp(ListOffsets::Earliest),
            // Kafka 4.4's `fetchOffsetByTimestamp` for -5 and `fetchEarliestPendingUploadOffset`.
            ListOffsets::LatestTiered | ListOffsets::EarliestPendingUpload
                if !self.settings().config.remote_storage_enable =>
            {
                Ok(found(-1, Some(-1)))
            }
            ListOffsets::LatestTiered => {
                let highest = self.highest_remote_offset();
                let epoch = match self.leader_epoch_cache().epoch_for_offset(highest) {
                    Some(epoch) => Some(epoch),
                    None if highest == -1 => Some(-1),
                    None => None,
                };
                Ok(found(highest, epoch))
            }
            ListOffsets::EarliestPendingUpload => {
                let highest = self.highest_remote_offset();
                if highest == -1 {
                    return if view.log_start_offset == self.log_start_offset() {
                        self.offset_for_timestamp(ListOffsets::Earliest)
                    } else {
                        Ok(found(-1, Some(-1)))
                    };
                }
                let pending = (highest + 1).max(self.log_start_offset());
                Ok(found(
                    pending,
                    self.leader_epoch_cache().epoch_for_offset(pending),
                ))
            }
            ListOffsets::Latest => Ok(found(view.end.offset, self.latest_epoch())),
            ListOffsets::MaxTimestamp => {
                // The largest timestamp of the log's segments (records below the log start
                // count, as in Kafka's choice by `maxTimestampSoFar()`), then the first record
                // at or above the log start holding it: Kafka answers the first record holding
                // it whatever the log start (docs/format.md, "MAX_TIMESTAMP below the log
                // start"). Records sharing it may lie in a later segment than the first one.
                let Some(largest) = view
                    .segments
                    .iter()
                    .filter_map(|(_, segment)| segment.largest_record_timestamp())
                    .max()
                else {
                    return Ok(None);
                };
                for (_, segment) in view.segments.starting_at_floor(view.log_start_offset) {
                    if segment.largest_record_timestamp() == Some(largest)
                        && let Some(found) =
                            segment.find_offset_by_timestamp(largest, view.log_start_offset)?
                    {
                        return Ok(Some(found));
                    }
                }
                Ok(None)
            }
            ListOffsets::Timestamp(target) => {
                // The remote tier first, for what lies below the local log start.
                if let Some(tier) = self.remote_for(self.log_start_offset())
                    && let Some(found) = self.remote_offset_for_timestamp(&*tier, target)?
                {
                    return Ok(Some(found));
                }
                // Kafka searches only the first segment whose largest timestamp qualifies; when
                // its qualifying records all lie below the log start offset that answers
                // nothing. seglog starts at the segment holding the log start and moves on.
                for (_, segment) in view.segments.starting_at_floor(view.log_start_offset) {
                    if segment.largest_timestamp()? >= target
                        && let Some(found) =
                            segment.find_offset_by_timestamp(target, view.log_start_offset)?
                    {
                        return Ok(Some(found));
                    }
                }
                Ok(None)
            }
        }
    }

    /// "Consume from this timestamp" in one call and, usually, one `pread`:
    /// [`Log::offset_for_timestamp`] of `ListOffsets::Timestamp(timestamp_ms)`, then the batch
    /// holding the found record, copied into `buf` by the same read that found it
    /// ([`seglog_segment::Segment::find_by_timestamp_into`]) instead of a second fetch. As in
    /// Kafka's ListOffsets, an answer at or above `isolation`'s bound (the high watermark for
    /// consumers) is `None`. `buf` is reused as is (not cleared; it grows when needed); only
    /// `batch` of it is meaningful on return. A batch that reaches above the bound (a bound
    /// inside a batch) is fetched again with [`Log::read_into`]'s bounds.
    ///
    /// # Errors
    /// As [`Log::offset_for_timestamp`] and [`Log::read_into`].
    pub fn read_by_timestamp_into(
        &self,
        timestamp_ms: i64,
        isolation: Isolation,
        buf: &mut Vec<u8>,
    ) -> Result<Option<TimestampFetch>> {
        let view = self.published.load();
        let bound = view.visible_end(isolation);
        // The remote tier first, for what lies below the local log start (`remote_read.rs`):
        // the found record's batch then comes through `read_into`, from the tier.
        if let Some(tier) = self.remote_for(self.whole_log_start(view.log_start_offset))
            && let Some(found) = self.remote_offset_for_timestamp(&*tier, timestamp_ms)?
        {
            if found.offset >= bound {
                return Ok(None);
            }
            let fetch = self.read_into(found.offset, 1, isolation, true, buf)?;
            return Ok(Some(TimestampFetch {
                found,
                segment_base_offset: fetch.fetch_offset.segment_base_offset,
                position: fetch.position,
                batch: 0..buf.len(),
            }));
        }
        for (base, segment) in view.segments.starting_at_floor(view.log_start_offset) {
            if segment.largest_timestamp()? < timestamp_ms {
                continue;
            }
            let Some(TimestampBatch {
                found,
                position,
                range,
            }) = segment.find_by_timestamp_into(timestamp_ms, view.log_start_offset, buf)?
            else {
                continue;
            };
            if found.offset >= bound {
                return Ok(None);
            }
            // The segment parsed this batch already; a failure here would be a bug, and the
            // fetch below then decides.
            let last_offset = buf
                .get(range.clone())
                .and_then(|bytes| seglog_records::BatchRef::parse(bytes, position).ok())
                .map_or(i64::MAX, |batch| batch.header().last_offset);
            if last_offset >= bound {
                let fetch = self.read_into(found.offset, 1, isolation, true, buf)?;
                return Ok(Some(TimestampFetch {
                    found,
                    segment_base_offset: fetch.fetch_offset.segment_base_offset,
                    position: fetch.position,
                    batch: 0..buf.len(),
                }));
            }
            return Ok(Some(TimestampFetch {
                found,
                segment_base_offset: base,
                position,
                batch: range,
            }));
        }
        Ok(None)
    }
}
