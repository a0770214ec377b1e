//! The read side of [`Segment`]: offset translation, fetch reads, lookup by timestamp,
//! the next offset, and header walks (spec §3.3, §3.4, §3.7).

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use seglog_records::{BatchHeader, BatchRef, HeaderRead, OwnedBatch, RECORD_BATCH_OVERHEAD};

use crate::Result;
use crate::error::{Error, IoOp};
use crate::segment::Segment;
use crate::slice::{FileSlice, SliceOffsets};
use crate::walk::{HEADER_CHUNK, HeaderWalker, WalkEnd};
use seglog_index_core::TimestampOffset;

/// Where a batch is: Kafka's `LogOffsetPosition` from `translateOffset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogOffsetPosition {
    /// The last offset of the batch (not the offset asked for).
    pub offset: i64,
    /// Byte position of the batch in the `.log`.
    pub position: u64,
    /// Size of the batch in bytes.
    pub size: u32,
}

/// A record found by timestamp: Kafka's `TimestampAndOffset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimestampAndOffset {
    /// The record's timestamp.
    pub timestamp_ms: i64,
    /// The record's offset.
    pub offset: i64,
    /// The batch's partition leader epoch, unless it is -1 (none).
    pub leader_epoch: Option<i32>,
}

impl Segment {
    /// Kafka's `translateOffset`: the first batch at or after `starting_position` (and the
    /// index floor of `offset`) whose last offset is `>= offset`, or `None` when the segment
    /// holds no such batch. Batch granularity: the batch may begin below `offset`. Walks at
    /// most about one index interval of headers.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if a header on the way is corrupt; [`Error::Io`].
    pub fn translate_offset(
        &self,
        offset: i64,
        starting_position: u64,
    ) -> Result<Option<LogOffsetPosition>> {
        // The index first, then the size: an index entry is published after the size that
        // covers it, so the walk below always reaches the entry's batch.
        let (floor, next) = self.indexes()?.offset.lookup_with_next(offset);
        let end = self.size();
        let start = u64::from(floor.position).max(starting_position);
        self.walk_to_offset(offset, start, next.map(|n| u64::from(n.position)), end)
    }

    /// The walk of [`Segment::translate_offset`]: the first batch of `[start, end)` whose
    /// last offset is `>= offset`. `next_position` is the next index entry's position, which
    /// sizes the first read. `end` must be a size loaded after the index entries.
    pub(crate) fn walk_to_offset(
        &self,
        offset: i64,
        start: u64,
        next_position: Option<u64>,
        end: u64,
    ) -> Result<Option<LogOffsetPosition>> {
        let log = self.log()?;
        let mut walker = HeaderWalker::new(log.handle(), self.log_path_arc(), start, end);
        // The batch holding `offset` starts at or before the next entry's position (when the
        // index is sound; otherwise this only sizes the first read). A short region is read
        // whole; a long one suggests batches larger than a chunk: read one header first.
        if let Some(next) = next_position {
            let span = next.saturating_sub(start);
            let span = usize::try_from(span).unwrap_or(usize::MAX);
            walker = walker.with_first_read(
                if span.saturating_add(RECORD_BATCH_OVERHEAD) <= HEADER_CHUNK {
                    span + RECORD_BATCH_OVERHEAD
                } else {
                    RECORD_BATCH_OVERHEAD
                },
            );
        }
        for header in walker.by_ref() {
            let header = header?;
            if header.last_offset >= offset {
                return Ok(Some(LogOffsetPosition {
                    offset: header.last_offset,
                    position: header.position,
                    size: header.total_size,
                }));
            }
        }
        // Below the published end every batch is whole: a partial one there is damage (a
        // length field pointing past the end), not the end of the data, and is never skipped
        // silently (the log would move on to the next segment over the lost offsets).
        if let WalkEnd::PartialTail { position } = walker.end_state()
            && position < end
        {
            return Err(Error::Corrupt {
                path: self.log_path_arc().to_path_buf(),
                position,
                kind: crate::CorruptKind::IncompleteBatch {
                    remaining: end - position,
                },
            });
        }
        Ok(None)
    }

    /// Kafka's `LogSegment.read`: the bytes from the batch holding `start_offset` on, at most
    /// `max_bytes` of them (at least the whole first batch when `min_one_message`), never
    /// past `max_position` nor the published size. `None` when no batch of this segment
    /// holds `start_offset` or a later offset (the log moves on to the next segment); an
    /// empty slice when `max_bytes` is 0 (without `min_one_message`). The slice may end in the
    /// middle of a batch, as in Kafka; consumers drop the partial batch.
    ///
    /// # Errors
    /// As [`Segment::translate_offset`].
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u32,
        max_position: u64,
        min_one_message: bool,
    ) -> Result<Option<FileSlice>> {
        let Some(first) = self.translate_offset(start_offset, 0)? else {
            return Ok(None);
        };
        let limit = max_position.min(self.size());
        let (len, offsets) = self.extent(start_offset, first, max_bytes, min_one_message, limit);
        Ok(Some(FileSlice::new(
            Arc::clone(self.log()?.handle()),
            self.log_path_arc(),
            first.position,
            len,
            offsets,
        )))
    }

    /// What a read from `start_offset` returns once its first batch is `first`: the length
    /// (at most `max_bytes`, at least that batch when `min_one_message`, never past `limit`)
    /// and the slice's offsets. Shared by [`Segment::read`] and [`Segment::read_into`].
    pub(crate) fn extent(
        &self,
        start_offset: i64,
        first: LogOffsetPosition,
        max_bytes: u32,
        min_one_message: bool,
        limit: u64,
    ) -> (u64, SliceOffsets) {
        let adjusted = if min_one_message {
            max_bytes.max(first.size)
        } else {
            max_bytes
        };
        let len = limit
            .saturating_sub(first.position)
            .min(u64::from(adjusted));
        let offsets = SliceOffsets {
            segment_base_offset: self.base_offset,
            start_offset,
            first_batch_last_offset: first.offset,
            first_batch_size: first.size,
            first_entry_incomplete: adjusted < first.size,
        };
        (len, offsets)
    }

    /// A slice of the raw bytes `[position, position + len)`, clamped to the published size
    /// (for copying whole segments, e.g. the offset-overflow split, or dumping).
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::Index`] when the cache closed the files and they cannot be
    /// reopened.
    pub fn slice(&self, position: u64, len: u64) -> Result<FileSlice> {
        let size = self.size();
        let position = position.min(size);
        let len = len.min(size - position);
        let offsets = SliceOffsets {
            segment_base_offset: self.base_offset,
            start_offset: self.base_offset,
            first_batch_last_offset: -1,
            first_batch_size: 0,
            first_entry_incomplete: false,
        };
        Ok(FileSlice::new(
            Arc::clone(self.log()?.handle()),
            self.log_path_arc(),
            position,
            len,
            offsets,
        ))
    }

    /// Kafka's `findOffsetByTimestamp`: the first record with `timestamp >= timestamp_ms` and
    /// `offset >= starting_offset`, starting from the time index and offset index floors and
    /// scanning records inside each batch whose max timestamp qualifies (decompressing when
    /// needed; KAFKA-16310). `None` if no record qualifies. Records of v0 batches have no
    /// timestamp and read as -1.
    ///
    /// Usually one `pread`, into a per-thread scratch buffer, walked in memory (headers and
    /// records) exactly as the header walk from the floor would walk the file. Large appends
    /// (each one indexed): the append at the next offset index entry, where the answer lies,
    /// alone; the floor append's headers are skipped when that batch's base offset shows the
    /// walk would pass over them (see `speculates`; a corrupt header there, which the walk
    /// would report, goes unnoticed). Otherwise: the floor append and the next one. A walk
    /// that leaves the region goes on from the file; a floor append longer than 32 KiB that
    /// the speculation does not skip is walked from the file.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a corrupt header or batch on the way; [`Error::Io`].
    pub fn find_offset_by_timestamp(
        &self,
        timestamp_ms: i64,
        starting_offset: i64,
    ) -> Result<Option<TimestampAndOffset>> {
        let target = Target {
            timestamp_ms,
            starting_offset,
        };
        let floors = self.timestamp_floors(timestamp_ms, starting_offset)?;
        let mut buf = SCRATCH.take();
        let result = self.find_by_timestamp_in(&mut buf, target, floors);
        if buf.capacity() <= SCRATCH_RETAIN {
            SCRATCH.set(buf);
        }
        Ok(result?.map(|(found, _)| found))
    }

    /// [`Segment::find_offset_by_timestamp`] that also hands over the batch holding the found
    /// record, read into `buf` by the same `pread` that found it (a consumer's "read from this
    /// timestamp" costs one read, not a lookup and then a fetch). `buf` is reused as is: it
    /// grows when needed, is not cleared, and only `range` of it is meaningful on return. When
    /// the region read did not hold the answer (the header walk from the file found it), the
    /// batch is copied into `buf` from that walk's read.
    ///
    /// # Errors
    /// As [`Segment::find_offset_by_timestamp`].
    pub fn find_by_timestamp_into(
        &self,
        timestamp_ms: i64,
        starting_offset: i64,
        buf: &mut Vec<u8>,
    ) -> Result<Option<TimestampBatch>> {
        let target = Target {
            timestamp_ms,
            starting_offset,
        };
        let floors = self.timestamp_floors(timestamp_ms, starting_offset)?;
        let Some((found, batch)) = self.find_by_timestamp_in(buf, target, floors)? else {
            return Ok(None);
        };
        let (position, range) = match batch {
            FoundBatch::InRegion { position, range } => (position, range),
            FoundBatch::Read(batch) => {
                let bytes = batch.bytes();
                buf.clear();
                buf.extend_from_slice(bytes);
                (batch.header().position, 0..bytes.len())
            }
        };
        Ok(Some(TimestampBatch {
            found,
            position,
            range,
        }))
    }

    /// The index floors a timestamp search starts from (index entries first, then the size:
    /// entries are published after the size that covers them, as in `translate_offset`).
    fn timestamp_floors(&self, timestamp_ms: i64, starting_offset: i64) -> Result<Floors> {
        let indexes = self.indexes()?;
        let time_floor = indexes.time.lookup(timestamp_ms);
        let (floor, next) = indexes
            .offset
            .lookup_with_next(time_floor.offset.max(starting_offset));
        let after_next = next.and_then(|n| indexes.offset.lookup_with_next(n.offset).1);
        drop(indexes);
        let size = self.size();
        Ok(Floors {
            time_floor,
            start: u64::from(floor.position),
            next: next.map(|n| u64::from(n.position)),
            after_next: after_next.map(|n| u64::from(n.position)),
            size,
        })
    }

    /// [`Segment::find_offset_by_timestamp`] once the indexes are read: the speculative
    /// region, else the region from the floor, else the header walk from the file.
    fn find_by_timestamp_in(
        &self,
        buf: &mut Vec<u8>,
        target: Target,
        floors: Floors,
    ) -> Result<Option<(TimestampAndOffset, FoundBatch)>> {
        let Floors {
            time_floor,
            start,
            next,
            after_next,
            size,
        } = floors;
        let interval = u64::from(self.config.index_interval_bytes);
        if let Some(next) = next
            && speculates(time_floor, target, start, next, interval)
        {
            let len = after_next
                .unwrap_or(size)
                .min(size)
                .saturating_sub(next)
                .min(TIMESTAMP_DATA_LIMIT)
                .max(RECORD_BATCH_OVERHEAD as u64)
                .min(size.saturating_sub(next));
            let accept = time_floor.offset.saturating_add(1);
            match self.walk_timestamp_region(buf, target, next, len, size, Some(accept))? {
                RegionWalk::Done(found) => return Ok(found),
                RegionWalk::Beyond(position) => {
                    return self.scan_for_timestamp(target, position, size);
                }
                RegionWalk::Rejected => {}
            }
        }
        let Some(len) = plan_timestamp_region(start, next, after_next, size) else {
            return self.scan_for_timestamp(target, start, size);
        };
        match self.walk_timestamp_region(buf, target, start, len, size, None)? {
            RegionWalk::Done(found) => Ok(found),
            RegionWalk::Beyond(position) => self.scan_for_timestamp(target, position, size),
            // Only a speculative region is rejected.
            RegionWalk::Rejected => self.scan_for_timestamp(target, start, size),
        }
    }

    /// Reads `[start, start + len)` into `buf` (one `pread`) and walks it as
    /// [`Segment::scan_for_timestamp`] walks the file, up to the first header or batch that is
    /// not all in it.
    fn walk_timestamp_region(
        &self,
        buf: &mut Vec<u8>,
        target: Target,
        start: u64,
        len: u64,
        size: u64,
        speculative: Option<i64>,
    ) -> Result<RegionWalk> {
        let path = self.log_path_arc();
        let want = usize::try_from(len).unwrap_or(usize::MAX);
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let got = if want == 0 {
            0
        } else {
            crate::io::read_at_most(self.log()?.handle(), &mut buf[..want], start)
                .map_err(Error::io(IoOp::Read, &path))?
        };
        let bytes = &buf[..got];
        let mut position = start;
        let mut speculative = speculative;
        loop {
            if position >= size {
                if speculative.is_some() {
                    return Ok(RegionWalk::Rejected);
                }
                return Ok(RegionWalk::Done(None));
            }
            let remaining = size - position;
            let need = remaining.min(RECORD_BATCH_OVERHEAD as u64) as usize;
            // `position - start` fits: `position` is within `got` bytes of `start` here.
            let at = (position - start) as usize;
            let Some(prefix) = bytes.get(at..at.saturating_add(need)) else {
                if speculative.is_some() {
                    return Ok(RegionWalk::Rejected);
                }
                return Ok(RegionWalk::Beyond(position));
            };
            let parsed = BatchHeader::parse(prefix, position, remaining);
            if let Some(accept) = speculative.take() {
                // The speculation holds only if the batch at the next entry starts at most one
                // past the time floor's offset (module notes above `speculates`).
                match &parsed {
                    Ok(HeaderRead::Batch(header))
                        if header.base_offset.is_some_and(|base| base <= accept) => {}
                    _ => return Ok(RegionWalk::Rejected),
                }
            }
            let header = match parsed {
                Ok(HeaderRead::Batch(header)) => header,
                Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => {
                    return Ok(RegionWalk::Done(None));
                }
                Err(e) => return Err(Error::from_records(&path, e)),
            };
            if target.skips(&header) {
                position = header.end_position();
                continue;
            }
            let Some(batch) = bytes.get(at..at.saturating_add(header.total_size as usize)) else {
                return Ok(RegionWalk::Beyond(position));
            };
            let batch =
                BatchRef::parse(batch, position).map_err(|e| Error::from_records(&path, e))?;
            if let Some(found) =
                target.first_record(&batch, self.config.max_decompressed_bytes, &path)?
            {
                let range = at..at + header.total_size as usize;
                return Ok(RegionWalk::Done(Some((
                    found,
                    FoundBatch::InRegion { position, range },
                ))));
            }
            position = header.end_position();
        }
    }

    /// The header walk of [`Segment::find_offset_by_timestamp`] from `position` (a batch
    /// boundary) to `end`, reading each qualifying batch from the file.
    fn scan_for_timestamp(
        &self,
        target: Target,
        position: u64,
        end: u64,
    ) -> Result<Option<(TimestampAndOffset, FoundBatch)>> {
        let path = self.log_path_arc();
        let log = self.log()?;
        let walker = HeaderWalker::new(log.handle(), Arc::clone(&path), position, end);
        for header in walker {
            let header = header?;
            if target.skips(&header) {
                continue;
            }
            let batch = self.read_batch(&header)?;
            if let Some(found) = target.first_record(
                &batch.as_batch_ref(),
                self.config.max_decompressed_bytes,
                &path,
            )? {
                return Ok(Some((found, FoundBatch::Read(batch))));
            }
        }
        Ok(None)
    }

    /// [`Segment::find_offset_by_timestamp`] as a plain header walk from the index floors,
    /// each qualifying batch read on its own (the implementation before the one-`pread`
    /// region): the oracle of the tests (compiled always, since integration tests see only
    /// the normal build; nothing in the library calls it). Not part of the API.
    ///
    /// # Errors
    /// As [`Segment::find_offset_by_timestamp`].
    #[doc(hidden)]
    pub fn find_offset_by_timestamp_walk(
        &self,
        timestamp_ms: i64,
        starting_offset: i64,
    ) -> Result<Option<TimestampAndOffset>> {
        let indexes = self.indexes()?;
        let time_floor = indexes.time.lookup(timestamp_ms);
        let position = indexes
            .offset
            .lookup(time_floor.offset.max(starting_offset))
            .position;
        drop(indexes);
        let end = self.size();
        let path = self.log_path_arc();
        let log = self.log()?;
        let walker = HeaderWalker::new(log.handle(), Arc::clone(&path), u64::from(position), end);
        for header in walker {
            let header = header?;
            if header.max_timestamp_ms < timestamp_ms || header.last_offset < starting_offset {
                continue;
            }
            let batch = self.read_batch(&header)?;
            let leader_epoch =
                (header.partition_leader_epoch != -1).then_some(header.partition_leader_epoch);
            let found = |ts: i64, offset: i64| {
                (ts >= timestamp_ms && offset >= starting_offset).then_some(TimestampAndOffset {
                    timestamp_ms: ts,
                    offset,
                    leader_epoch,
                })
            };
            if let Some(records) = batch.records_borrowed() {
                for record in records {
                    let record = record.map_err(|e| Error::from_records(&path, e))?;
                    if let Some(hit) = found(record.timestamp_ms, record.offset) {
                        return Ok(Some(hit));
                    }
                }
                continue;
            }
            for record in batch.records(self.config.max_decompressed_bytes) {
                let record = record.map_err(|e| Error::from_records(&path, e))?;
                if let Some(hit) = found(record.timestamp_ms.unwrap_or(-1), record.offset) {
                    return Ok(Some(hit));
                }
            }
        }
        Ok(None)
    }

    /// Kafka's `readNextOffset`: the last batch's `last_offset + 1`, or the base offset when
    /// the segment is empty. Walks the headers after the last offset-index entry.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a corrupt header; [`Error::Io`].
    pub fn read_next_offset(&self) -> Result<i64> {
        let indexes = self.indexes()?;
        let position = indexes.offset.lookup(indexes.offset.last_offset()).position;
        drop(indexes);
        let mut next = self.base_offset;
        for header in self.batch_headers(u64::from(position)) {
            next = header?.next_offset();
        }
        Ok(next)
    }

    /// The headers of the batches from `position` (a batch boundary) to the published
    /// size. A partial tail ends the iteration quietly; a corrupt header is one error (also
    /// when the cache closed the files and they cannot be reopened).
    pub fn batch_headers(&self, position: u64) -> BatchHeaders<'_> {
        match self.log() {
            Ok(log) => BatchHeaders {
                walker: Some(HeaderWalker::shared(
                    Arc::clone(log.handle()),
                    self.log_path_arc(),
                    position,
                    self.size(),
                )),
                error: None,
                position,
            },
            Err(e) => BatchHeaders {
                walker: None,
                error: Some(e),
                position,
            },
        }
    }

    /// Reads the whole batch whose header is `header` (from [`Segment::batch_headers`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the read fails; [`Error::Corrupt`] if the bytes no longer parse.
    pub fn read_batch(&self, header: &BatchHeader) -> Result<OwnedBatch> {
        let path = self.log_path_arc();
        let mut bytes = vec![0u8; header.total_size as usize];
        self.log()?
            .read_exact_at(&mut bytes, header.position)
            .map_err(Error::io(IoOp::Read, &path))?;
        OwnedBatch::parse(Bytes::from(bytes), header.position)
            .map_err(|e| Error::from_records(&path, e))
    }
}

/// Up to this many bytes of the floor append (the headers before the answer's append) are
/// read with the answer's bytes in one `pread`; a longer floor append means large batches,
/// whose headers are cheaper to read one by one than to copy whole.
const TIMESTAMP_LEAD_LIMIT: u64 = 32 * 1024;
/// The most bytes of the answer's append read with the floor append.
const TIMESTAMP_DATA_LIMIT: u64 = 256 * 1024;
/// A scratch buffer that grew beyond this is dropped after the lookup, not kept.
const SCRATCH_RETAIN: usize = 1024 * 1024;

thread_local! {
    /// The region buffer of [`Segment::find_offset_by_timestamp`], reused across calls on a
    /// thread (taken out during a call, so never borrowed twice).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The length of the region [`Segment::find_offset_by_timestamp`] reads from `start` (the
/// offset index floor), or `None` to walk the headers from the file instead.
///
/// The answer usually lies in the append at the next entry (`next`): the time index floor's
/// batch and every earlier one have smaller timestamps, and the next time index entry, written
/// with the next offset index entry, already holds a record at or after the target. That
/// append ends at or before the entry after it (`after_next`; the size after the last entry).
/// The region is the floor append plus that append, within limits; the walk never depends
/// on the guess, only its cost does.
fn plan_timestamp_region(
    start: u64,
    next: Option<u64>,
    after_next: Option<u64>,
    size: u64,
) -> Option<u64> {
    let lead = next.unwrap_or(size).min(size).saturating_sub(start);
    if lead > TIMESTAMP_LEAD_LIMIT {
        return None;
    }
    let end = match next {
        Some(_) => after_next.unwrap_or(size).min(size),
        None => size,
    };
    let data = end.saturating_sub(start + lead).min(TIMESTAMP_DATA_LIMIT);
    // At least one header past the lead: the walk reads it anyway.
    let len = (lead + data).max(lead + RECORD_BATCH_OVERHEAD as u64);
    Some(len.min(size.saturating_sub(start)))
}

/// Whether [`Segment::find_offset_by_timestamp`] reads from the next offset index entry
/// (`next`) instead of the floor (`start`), skipping the floor append's headers.
///
/// The speculation. The time index floor `(T, O)` is a real entry (`T >= 0`; `-1` is the
/// empty floor) below the target (`T < target`), and `O >= starting_offset`, so the walk
/// starts at the offset index floor of `O`. Every batch up to offset `O` has a max timestamp
/// `<= T` (`T` was the largest max timestamp appended when the entry was written), so the walk
/// skips it. If the batch at `next` parses and its base offset is `<= O + 1`, every batch
/// between the floor and `next` ends at or below `O` (offsets increase along the log), and the
/// walk from the floor passes over all of them to `next` (a batch boundary, as every index
/// entry): walking from `next` gives the same answer. Corrupt headers between the floor and
/// `next`, which the walk would report, are not seen (as corruption after the answer is not).
/// Otherwise the region from the floor is read (one more `pread`).
///
/// Taken when the floor append is long (more than a header chunk and two index intervals):
/// then appends are large, each one is indexed, and the check passes; with small batches the
/// next entry lies several appends ahead and the check would fail.
fn speculates(
    time_floor: TimestampOffset,
    target: Target,
    start: u64,
    next: u64,
    interval: u64,
) -> bool {
    time_floor.timestamp_ms >= 0
        && time_floor.timestamp_ms < target.timestamp_ms
        && time_floor.offset >= target.starting_offset
        && next.saturating_sub(start) + RECORD_BATCH_OVERHEAD as u64
            > (HEADER_CHUNK as u64).max(2 * interval)
}

/// What [`Segment::find_offset_by_timestamp`] read from the indexes, and the size after them.
#[derive(Clone, Copy, Debug)]
struct Floors {
    /// The time index floor of the target timestamp.
    time_floor: TimestampOffset,
    /// The position of the offset index floor of `max(time_floor.offset, starting_offset)`.
    start: u64,
    /// The position of the entry after that floor.
    next: Option<u64>,
    /// The position of the entry after `next`.
    after_next: Option<u64>,
    /// The published size, loaded after the entries.
    size: u64,
}

/// What [`Segment::find_offset_by_timestamp`] looks for.
#[derive(Clone, Copy, Debug)]
struct Target {
    timestamp_ms: i64,
    starting_offset: i64,
}

impl Target {
    /// Whether no record of the batch can qualify (Kafka skips batches whose max timestamp is
    /// below the target; batches ending below the starting offset hold no candidate either).
    fn skips(&self, header: &BatchHeader) -> bool {
        header.max_timestamp_ms < self.timestamp_ms || header.last_offset < self.starting_offset
    }

    /// The first record of `batch` with `timestamp >= timestamp_ms` and
    /// `offset >= starting_offset`.
    fn first_record(
        &self,
        batch: &BatchRef<'_>,
        max_decompressed_bytes: usize,
        path: &Arc<Path>,
    ) -> Result<Option<TimestampAndOffset>> {
        let header = batch.header();
        let leader_epoch =
            (header.partition_leader_epoch != -1).then_some(header.partition_leader_epoch);
        let found = |ts: i64, offset: i64| {
            (ts >= self.timestamp_ms && offset >= self.starting_offset).then_some(
                TimestampAndOffset {
                    timestamp_ms: ts,
                    offset,
                    leader_epoch,
                },
            )
        };
        // Uncompressed v2 records are looked at in place (no copies).
        if let Some(records) = batch.records_borrowed() {
            for record in records {
                let record = record.map_err(|e| Error::from_records(path, e))?;
                if let Some(hit) = found(record.timestamp_ms, record.offset) {
                    return Ok(Some(hit));
                }
            }
            return Ok(None);
        }
        for record in batch.records(max_decompressed_bytes) {
            let record = record.map_err(|e| Error::from_records(path, e))?;
            if let Some(hit) = found(record.timestamp_ms.unwrap_or(-1), record.offset) {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }
}

/// How the in-memory walk of a region ended.
enum RegionWalk {
    /// The answer (`None`: the walk reached the end of the segment or a partial tail).
    Done(Option<(TimestampAndOffset, FoundBatch)>),
    /// The header or batch at this position is not all in the region.
    Beyond(u64),
    /// The speculative region does not start with a batch the floor walk would reach with
    /// nothing qualifying before it.
    Rejected,
}

/// Where the batch holding a timestamp search's answer is.
enum FoundBatch {
    /// In the region buffer: the batch at file `position` is `buffer[range]`.
    InRegion {
        position: u64,
        range: std::ops::Range<usize>,
    },
    /// Read on its own by the header walk.
    Read(OwnedBatch),
}

/// What [`Segment::find_by_timestamp_into`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampBatch {
    /// The first record at or after the timestamp (as [`Segment::find_offset_by_timestamp`]).
    pub found: TimestampAndOffset,
    /// File position of the batch holding it.
    pub position: u64,
    /// The batch's bytes in the caller's buffer.
    pub range: std::ops::Range<usize>,
}

/// Iterator over batch headers; from [`Segment::batch_headers`].
pub struct BatchHeaders<'a> {
    /// `None` when the files could not be reopened (`error` holds why).
    walker: Option<HeaderWalker<'a>>,
    error: Option<Error>,
    position: u64,
}

impl BatchHeaders<'_> {
    /// After the iteration: whether it ended exactly at the published size (`false` when it
    /// stopped at a partial tail or a corrupt header).
    pub fn ended_cleanly(&self) -> bool {
        self.walker
            .as_ref()
            .is_some_and(|w| w.end_state() == WalkEnd::Clean)
    }

    /// The position after the last header yielded.
    pub fn position(&self) -> u64 {
        self.walker
            .as_ref()
            .map_or(self.position, HeaderWalker::position)
    }
}

impl Iterator for BatchHeaders<'_> {
    type Item = Result<BatchHeader>;

    fn next(&mut self) -> Option<Result<BatchHeader>> {
        match &mut self.walker {
            Some(walker) => walker.next(),
            None => self.error.take().map(Err),
        }
    }
}
