//! [`ActiveSegment`]: the unique writer of a segment (spec §3.2, §3.6, §3.7).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use seglog_index_core::{OffsetIndex, TimeIndex, TimestampOffset, relative_offset};

use crate::error::{Error, IoOp};
use crate::file_name::{FileKind, FileType, file_path};
use crate::io::LogFile;
use crate::recover::{RecoveryReport, Trim, recover_in_place};
use crate::segment::{Files, Indexes, OpenMode, Segment, finish_inactive};
use crate::sync::Ordering;
use crate::{Result, RollParams, SegmentConfig};

/// The one writer of a segment: appends, truncates, decides when to roll, and seals.
///
/// It owns an `Arc<Segment>` that readers share; appends publish their bytes through it.
/// Only one `ActiveSegment` (or recovery) can exist per segment at a time. Dropping it
/// without [`ActiveSegment::seal`] leaves the files as a crash would (indexes untrimmed, a
/// preallocated tail in place) and only releases the writer slot.
#[derive(Debug)]
pub struct ActiveSegment {
    segment: Arc<Segment>,
    bytes_since_last_index_entry: u64,
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    roll_jitter_ms: i64,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl ActiveSegment {
    /// Creates a new, empty segment `base_offset` in `dir`: a new `.log` (preallocated to
    /// `segment_bytes` with `fallocate` when `config.preallocate`; its logical size is 0) and
    /// both indexes preallocated to `max_index_bytes`. Stray index files of the same name
    /// (orphans without a `.log`) are removed first, as Kafka's roll does. Does not fsync
    /// the directory (see [`crate::sync_dir`]).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; [`Error::Io`] (`AlreadyExists` if the `.log` exists);
    /// [`Error::Index`].
    pub fn create(dir: &std::path::Path, base_offset: i64, config: &SegmentConfig) -> Result<Self> {
        Self::create_with_suffix(dir, base_offset, config, None)
    }

    /// [`ActiveSegment::create`] under a temporary suffix: Kafka's
    /// `LogSegment.open(..., fileSuffix = ".cleaned")`, the new segment the log cleaner writes
    /// beside the ones it replaces (same base offset). Its files are `<base>.log.cleaned`,
    /// `.index.cleaned` and `.timeindex.cleaned`; seal it, then rename it with
    /// [`Segment::rename_suffix`].
    ///
    /// # Errors
    /// As [`ActiveSegment::create`].
    pub fn create_with_suffix(
        dir: &std::path::Path,
        base_offset: i64,
        config: &SegmentConfig,
        suffix: Option<crate::TempSuffix>,
    ) -> Result<Self> {
        config.validate()?;
        let log_path = file_path(dir, base_offset, FileKind::LOG.with_suffix(suffix));
        let log = LogFile::create_new(&config.io, &log_path)
            .map_err(Error::io(IoOp::Create, &log_path))?;
        let index_path = file_path(dir, base_offset, FileKind::INDEX.with_suffix(suffix));
        let time_path = file_path(dir, base_offset, FileKind::TIME_INDEX.with_suffix(suffix));
        let indexes = (|| {
            if config.preallocate {
                log.preallocate(u64::from(config.segment_bytes))
                    .map_err(Error::io(IoOp::Preallocate, &log_path))?;
            }
            for stray in [&index_path, &time_path] {
                match config.io.remove(stray) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io(IoOp::Remove, stray)(e));
                    }
                    _ => {}
                }
            }
            Ok(Indexes {
                offset: OffsetIndex::open(&index_path, base_offset, config.max_index_bytes)?,
                time: TimeIndex::open(&time_path, base_offset, config.max_index_bytes)?,
            })
        })();
        let indexes = match indexes {
            Ok(indexes) => indexes,
            Err(e) => {
                // Leave no half-created segment behind (best effort: the error that matters
                // is the first one).
                for path in [&log_path, &index_path, &time_path] {
                    let _ = config.io.remove(path);
                }
                return Err(e);
            }
        };
        let segment = Segment::assemble(
            dir,
            base_offset,
            config,
            OpenMode::ReadWrite,
            suffix,
            log,
            0,
            indexes,
        );
        // Counted in the cache once sealed (when the writer detaches).
        ActiveSegment::resume(segment)
    }

    /// Makes an opened segment writable again (Kafka: the last segment after loading, or
    /// the segment a truncation lands in): claims the writer slot and resizes both indexes
    /// to `max_index_bytes`. The interval counter starts at 0 and the creation time is now,
    /// as for a freshly opened Kafka segment; a new roll jitter is drawn.
    ///
    /// # Errors
    /// [`Error::ReadOnly`], [`Error::Poisoned`], [`Error::WriterAttached`]; [`Error::Index`]
    /// if a resize fails.
    pub fn resume(segment: Arc<Segment>) -> Result<Self> {
        segment.attach_writer()?;
        let active = ActiveSegment {
            bytes_since_last_index_entry: 0,
            rolling_based_timestamp: None,
            created_ms: now_ms(),
            roll_jitter_ms: segment.config.draw_roll_jitter_ms(),
            segment,
        };
        active.resize_indexes()?;
        Ok(active)
    }

    fn resize_indexes(&self) -> Result<()> {
        let indexes = self.segment.indexes()?;
        indexes.offset.resize(self.segment.config.max_index_bytes)?;
        indexes.time.resize(self.segment.config.max_index_bytes)?;
        Ok(())
    }

    /// The shared read side.
    pub fn segment(&self) -> &Arc<Segment> {
        &self.segment
    }

    /// The jitter (ms) subtracted from the age limit, drawn when this writer was made.
    pub fn roll_jitter_ms(&self) -> i64 {
        self.roll_jitter_ms
    }

    /// When this writer was made (or the segment last became empty), in ms since the epoch.
    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }

    /// Overrides the creation time (for logs driven by a test clock).
    pub fn set_created_ms(&mut self, created_ms: i64) {
        self.created_ms = created_ms;
    }

    /// Appends `batches` (whole batches, offsets increasing and above what the segment
    /// holds) with one positioned write, then publishes the new size to readers, then applies
    /// Kafka 4.4's index step per batch (`LogSegment.append`; Kafka before 3.x indexed once per
    /// append): before each batch, if more than `index_interval_bytes` were
    /// appended since the last entry, add `(the batch's last offset, its position)` to the
    /// offset index and the max timestamp so far to the time index.
    /// `offset_of_max_timestamp` is the offset Kafka records with the max timestamp (the last
    /// offset of the batch holding it). An empty `batches` does nothing.
    ///
    /// # Errors
    /// Nothing is written when these are returned: [`Error::OffsetOverflow`] (the log must
    /// roll), [`Error::IndexFull`] (roll), [`Error::SegmentTooLarge`], [`Error::Poisoned`],
    /// [`Error::Index`] for an offset not above the last index entry. [`Error::Io`] if the
    /// write fails: the segment is then poisoned (readers never see the partial bytes).
    pub fn append(
        &mut self,
        largest_offset: i64,
        largest_timestamp_ms: i64,
        offset_of_max_timestamp: i64,
        batches: &[u8],
    ) -> Result<()> {
        self.append_parts(
            largest_offset,
            largest_timestamp_ms,
            offset_of_max_timestamp,
            &[batches],
        )
    }

    /// [`ActiveSegment::append`] of the concatenation of `parts`, written with one vectored
    /// positioned write (`pwritev`) instead of first being copied into one buffer: the log
    /// writes the caller's batches in place with their new base offsets as separate parts.
    ///
    /// # Errors
    /// As [`ActiveSegment::append`].
    pub fn append_parts(
        &mut self,
        largest_offset: i64,
        largest_timestamp_ms: i64,
        offset_of_max_timestamp: i64,
        parts: &[&[u8]],
    ) -> Result<()> {
        let len: u64 = parts.iter().map(|part| part.len() as u64).sum();
        if len == 0 {
            return Ok(());
        }
        let segment = &*self.segment;
        segment.ensure_writable()?;
        let position = segment.size();
        if relative_offset(segment.base_offset, largest_offset).is_none() {
            return Err(Error::OffsetOverflow {
                path: segment.log_path(),
                base_offset: segment.base_offset,
                offset: largest_offset,
            });
        }
        if position + len > i32::MAX as u64 {
            return Err(Error::SegmentTooLarge {
                path: segment.log_path(),
                size: position,
                append_bytes: len,
            });
        }
        // The active segment's files are never closed by the cache (a writer is attached).
        let Files { log, indexes } = segment.files()?;
        // Kafka 4.4's index step runs per batch of the append (`LogSegment.append`), so plan
        // the entries first: nothing is written when one of them could not be added.
        let mut plan = IndexPlan::new(
            parts,
            position,
            self.bytes_since_last_index_entry,
            u64::from(segment.config.index_interval_bytes),
            segment.max_timestamp_and_offset(),
            (
                largest_offset,
                largest_timestamp_ms,
                offset_of_max_timestamp,
            ),
        );
        if let Some(&(first_offset, _, first_max)) = plan.entries.first() {
            check_index_step(segment, &indexes, first_offset, first_max)?;
            // An append of several batches can need more entries than the indexes have left
            // (a segment written over several opens restarts the byte count at each one). The
            // indexes are sparse, so the entries that do not fit are left out: every batch is
            // still found from an earlier entry, the indexes end full, and the log rolls before
            // its next append. The time index keeps its spare slot for the roll's final entry
            // (Kafka's `TimeIndex.isFull`), so its room is one less than its free slots.
            let offset_room = indexes
                .offset
                .max_entries()
                .saturating_sub(indexes.offset.entries());
            let time_room = indexes
                .time
                .max_entries()
                .saturating_sub(indexes.time.entries() + 1);
            plan.entries.truncate(offset_room.min(time_room));
        }
        if position == 0 {
            self.rolling_based_timestamp = Some(largest_timestamp_ms);
        }
        if let Err(e) = log.write_all_vectored_at(parts, position) {
            segment.poisoned.store(true, Ordering::Release);
            return Err(Error::io(IoOp::Write, &segment.log_path())(e));
        }
        segment.raise_max_timestamp(largest_timestamp_ms, offset_of_max_timestamp);
        // Publish: readers load the size with Acquire and never read past it.
        segment.size.publish(position + len);
        for &(offset, at, max) in &plan.entries {
            // `at` fits: the size check above keeps every position below i32::MAX.
            indexes.offset.append(offset, at as u32)?;
            indexes
                .time
                .maybe_append(max.timestamp_ms, max.offset, false)?;
        }
        self.bytes_since_last_index_entry = plan.bytes_since_last_entry;
        Ok(())
    }

    /// Kafka's `truncateTo`: removes the batch holding `offset` and every batch
    /// after it (batch granularity), truncates both indexes and the `.txnindex`, and recomputes the max
    /// timestamp. Returns the number of bytes removed (0 when no batch holds `offset` or a
    /// later offset).
    ///
    /// Readers racing with a truncation may get an error for a slice that loses its bytes.
    ///
    /// # Errors
    /// [`Error::Poisoned`]; [`Error::Corrupt`] for a corrupt header on the way; [`Error::Io`]
    /// (the segment is then poisoned); [`Error::Index`].
    pub fn truncate_to(&mut self, offset: i64) -> Result<u64> {
        let segment = &*self.segment;
        segment.ensure_writable()?;
        let mapping = segment.translate_offset(offset, 0)?;
        let Files { log, indexes } = segment.files()?;
        indexes.offset.truncate_to(offset)?;
        indexes.time.truncate_to(offset)?;
        segment.truncate_txn_index(offset)?;
        self.resize_indexes()?;
        let old_size = segment.size();
        let truncated = match mapping {
            Some(mapping) => {
                segment.size.publish(mapping.position);
                if let Err(e) = log.set_len(mapping.position) {
                    segment.poisoned.store(true, Ordering::Release);
                    return Err(Error::io(IoOp::SetLength, &segment.log_path())(e));
                }
                old_size - mapping.position
            }
            None => 0,
        };
        if segment.size() == 0 {
            self.created_ms = now_ms();
            self.rolling_based_timestamp = None;
        }
        self.bytes_since_last_index_entry = 0;
        if segment.max_timestamp_and_offset().timestamp_ms >= 0 {
            let max = read_largest_timestamp(segment)?;
            segment.set_max_timestamp(max);
        }
        Ok(truncated)
    }

    /// Recovers the segment in place (see [`Segment::recover`]) and makes it writable again
    /// (indexes resized to `max_index_bytes`).
    ///
    /// # Errors
    /// As [`Segment::recover`].
    pub fn recover(&mut self) -> Result<RecoveryReport> {
        self.segment.ensure_writable()?;
        let report = recover_in_place(&self.segment, i64::MIN, 0, Trim::Always)?;
        self.resize_indexes()?;
        self.bytes_since_last_index_entry = 0;
        self.rolling_based_timestamp = None;
        Ok(report)
    }

    /// Kafka's `shouldRoll`: true if the incoming batches would not fit
    /// (`size > max_segment_bytes - messages_size`), the segment is non-empty and old enough
    /// (`time waited > max_segment_ms - jitter`, measured from the first batch's max
    /// timestamp to the incoming max timestamp, or by the wall clock from creation when
    /// there are no timestamps), an index is full (the time index keeps one spare slot), or
    /// the incoming last offset does not fit relative to the base offset.
    ///
    /// # Errors
    /// [`Error::Corrupt`] / [`Error::Io`] reading the first batch header.
    pub fn should_roll(&mut self, params: &RollParams) -> Result<bool> {
        let size = self.segment.size() as i64;
        let would_not_fit =
            size > i64::from(params.max_segment_bytes) - params.messages_size as i64;
        let old = size > 0
            && self.time_waited_for_roll(params.now_ms, params.max_timestamp_in_messages)?
                > params.max_segment_ms.saturating_sub(self.roll_jitter_ms);
        let segment = &*self.segment;
        let indexes = segment.indexes()?;
        Ok(would_not_fit
            || old
            || indexes.offset.is_full()
            || indexes.time.is_full()
            || relative_offset(segment.base_offset, params.max_offset_in_messages).is_none())
    }

    fn time_waited_for_roll(&mut self, now_ms: i64, message_timestamp_ms: i64) -> Result<i64> {
        if self.rolling_based_timestamp.is_none()
            && let Some(first) = self.segment.batch_headers(0).next()
        {
            self.rolling_based_timestamp = Some(first?.max_timestamp_ms);
        }
        match self.rolling_based_timestamp {
            Some(ts) if ts >= 0 => Ok(message_timestamp_ms.saturating_sub(ts)),
            _ => Ok(now_ms.saturating_sub(self.created_ms)),
        }
    }

    /// `fdatasync`s the `.log` and `msync`s the indexes (see [`Segment::flush`]).
    ///
    /// # Errors
    /// As [`Segment::flush`].
    pub fn flush(&self) -> Result<()> {
        self.segment.flush()
    }

    /// Seals the segment (Kafka's `onBecomeInactiveSegment`, at roll): the final time-index
    /// entry (the max timestamp, skipping the full check), trim the offset index, then the
    /// time index, then the `.log` (a preallocated tail). Consumes the writer; the returned
    /// segment cannot be appended to. Does not fsync (the log flushes rolled segments).
    ///
    /// # Errors
    /// [`Error::Index`] / [`Error::Io`]; the writer is released either way, and
    /// [`Segment::close`] can finish the job later.
    pub fn seal(self) -> Result<Arc<Segment>> {
        let segment = Arc::clone(&self.segment);
        let result = finish_inactive(&segment);
        drop(self);
        result.map(|()| segment)
    }

    /// Kafka's `close` of the active segment: [`ActiveSegment::seal`], then flush.
    ///
    /// # Errors
    /// As [`ActiveSegment::seal`] and [`Segment::flush`].
    pub fn close(self) -> Result<Arc<Segment>> {
        let segment = self.seal()?;
        segment.flush()?;
        Ok(segment)
    }
}

impl Drop for ActiveSegment {
    fn drop(&mut self) {
        self.segment.detach_writer();
    }
}

/// Refuses an index step that would fail after the write (so that a failed append writes
/// nothing): a full index, or offsets that do not advance.
/// The index entries one append adds, as Kafka 4.4's `LogSegment.append` adds them: for each
/// batch in order, the max timestamp so far is raised by the batch's, and when more than
/// `index.interval.bytes` were appended since the last entry, the batch gets one (its last
/// offset at its start position, and the max timestamp so far).
struct IndexPlan {
    /// `(last offset of the batch, its position, max timestamp and offset so far)`.
    entries: Vec<(i64, u64, TimestampOffset)>,
    /// The byte count since the last entry after the append.
    bytes_since_last_entry: u64,
}

impl IndexPlan {
    /// `whole`: `(largest offset, largest timestamp, its offset)` of the append, used as one
    /// unit when the bytes do not parse as batches (the log layer validated them; a direct
    /// caller of the segment API may append anything).
    fn new(
        parts: &[&[u8]],
        position: u64,
        bytes_since_last_entry: u64,
        interval: u64,
        mut max: TimestampOffset,
        whole: (i64, i64, i64),
    ) -> Self {
        let len: u64 = parts.iter().map(|part| part.len() as u64).sum();
        let batches = batch_metas(parts, len).unwrap_or_else(|| {
            vec![BatchMeta {
                last_offset: whole.0,
                max_timestamp_ms: whole.1,
                max_timestamp_offset: whole.2,
                size: len,
            }]
        });
        let mut since = bytes_since_last_entry;
        let mut at = position;
        let mut entries = Vec::new();
        for batch in batches {
            if batch.max_timestamp_ms > max.timestamp_ms {
                max = TimestampOffset {
                    timestamp_ms: batch.max_timestamp_ms,
                    offset: batch.max_timestamp_offset,
                };
            }
            if since > interval {
                entries.push((batch.last_offset, at, max));
                since = 0;
            }
            since += batch.size;
            at += batch.size;
        }
        Self {
            entries,
            bytes_since_last_entry: since,
        }
    }
}

/// What the index step needs of one batch.
struct BatchMeta {
    last_offset: i64,
    max_timestamp_ms: i64,
    max_timestamp_offset: i64,
    size: u64,
}

/// The batches of the concatenation of `parts` (`len` bytes) from their headers (v2, or a
/// legacy v0/v1 entry whose offset is its last), or `None` when they do not parse.
fn batch_metas(parts: &[&[u8]], len: u64) -> Option<Vec<BatchMeta>> {
    let mut metas = Vec::new();
    let mut pos = 0u64;
    while pos < len {
        let mut head = [0u8; 43];
        let available = (len - pos).min(head.len() as u64) as usize;
        read_across(parts, pos, &mut head[..available]);
        if available < 17 {
            return None;
        }
        let offset = i64::from_be_bytes(head[0..8].try_into().ok()?);
        let length = i32::from_be_bytes(head[8..12].try_into().ok()?);
        let size = 12 + u64::try_from(length).ok()?;
        if length <= 0 || pos + size > len {
            return None;
        }
        let magic = head[16];
        let (last_offset, max_timestamp_ms) = match magic {
            2 if available >= 43 => {
                let delta = i32::from_be_bytes(head[23..27].try_into().ok()?);
                let max_ts = i64::from_be_bytes(head[35..43].try_into().ok()?);
                (offset + i64::from(delta), max_ts)
            }
            1 if available >= 26 => (offset, i64::from_be_bytes(head[18..26].try_into().ok()?)),
            0 => (offset, -1),
            _ => return None,
        };
        metas.push(BatchMeta {
            last_offset,
            max_timestamp_ms,
            max_timestamp_offset: last_offset,
            size,
        });
        pos += size;
    }
    Some(metas)
}

/// Copies `out.len()` bytes at logical position `pos` of the concatenation of `parts`.
fn read_across(parts: &[&[u8]], mut pos: u64, out: &mut [u8]) {
    let mut filled = 0;
    for part in parts {
        let part_len = part.len() as u64;
        if pos >= part_len {
            pos -= part_len;
            continue;
        }
        let start = pos as usize;
        let take = (part.len() - start).min(out.len() - filled);
        out[filled..filled + take].copy_from_slice(&part[start..start + take]);
        filled += take;
        pos = 0;
        if filled == out.len() {
            break;
        }
    }
}

fn check_index_step(
    segment: &Segment,
    indexes: &Indexes,
    largest_offset: i64,
    max_after: TimestampOffset,
) -> Result<()> {
    if indexes.offset.is_full() {
        return Err(Error::IndexFull {
            path: segment.path(FileType::Index),
        });
    }
    if indexes.time.is_full() {
        return Err(Error::IndexFull {
            path: segment.path(FileType::TimeIndex),
        });
    }
    if indexes.offset.entries() > 0 && largest_offset <= indexes.offset.last_offset() {
        return Err(Error::Index(seglog_index_core::Error::InvalidOffset {
            path: segment.path(FileType::Index),
            offset: largest_offset,
            last_offset: indexes.offset.last_offset(),
        }));
    }
    let last_time = indexes.time.last_entry();
    if indexes.time.entries() > 0 && max_after.offset < last_time.offset {
        return Err(Error::Index(seglog_index_core::Error::InvalidOffset {
            path: segment.path(FileType::TimeIndex),
            offset: max_after.offset,
            last_offset: last_time.offset,
        }));
    }
    Ok(())
}

/// Kafka's `readLargestTimestamp`: the last time-index entry, or a larger batch max
/// timestamp found scanning from that entry's indexed position.
fn read_largest_timestamp(segment: &Segment) -> Result<TimestampOffset> {
    let indexes = segment.indexes()?;
    let last = indexes.time.last_entry();
    let position = indexes.offset.lookup(last.offset).position;
    drop(indexes);
    let mut after = TimestampOffset {
        timestamp_ms: -1,
        offset: -1,
    };
    for header in segment.batch_headers(u64::from(position)) {
        let header = header?;
        if header.max_timestamp_ms > after.timestamp_ms {
            after = TimestampOffset {
                timestamp_ms: header.max_timestamp_ms,
                offset: header.last_offset,
            };
        }
    }
    Ok(if after.timestamp_ms > last.timestamp_ms {
        after
    } else {
        last
    })
}
