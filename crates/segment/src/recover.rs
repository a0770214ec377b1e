//! Recovery (spec §3.5): rebuild both indexes from the `.log` with Kafka's rule, validating
//! every batch, and cut the `.log` after the last valid batch.

use std::path::Path;

use seglog_index_core::{OffsetIndex, TimeIndex, TimestampOffset, relative_offset};
use seglog_records::BatchRef;

use crate::digest::{DigestBuilder, DigestMark, RecoveryDigest};
use crate::error::{CorruptKind, Error};
use crate::segment::{Indexes, OpenMode, Segment, UNKNOWN_MAX};
use crate::sync::Ordering;
use crate::walk::{SCAN_CHUNK, TruncationReason, scan_batches};
use crate::{FileType, Result};

/// What a recovery found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// Bytes of whole, valid batches kept.
    pub valid_bytes: u64,
    /// Bytes cut from the end (`size before - valid_bytes`); 0 when the log was clean.
    pub truncated_bytes: u64,
    /// Why bytes were cut, when they were.
    pub reason: Option<TruncationReason>,
    /// Valid batches.
    pub batches: u64,
    /// Entries in the rebuilt offset index.
    pub index_entries: usize,
    /// Entries in the rebuilt time index (including the final max-timestamp entry).
    pub time_index_entries: usize,
    /// The offset after the last valid batch (the base offset if there is none).
    pub next_offset: i64,
    /// The max timestamp and its offset (the last offset of its batch); -1 when none.
    pub max_timestamp: TimestampOffset,
    /// Whether the files were changed on disk (read-write mode) or only the in-memory view
    /// (read-only mode).
    pub on_disk: bool,
    /// Whether the `truncated_bytes` past `valid_bytes` were left in the `.log` instead of
    /// cut: they hold flushed data ([`Segment::recover_protecting`]) and are not all zeros.
    /// The segment then serves only `valid_bytes`, and the log must never append after it.
    pub damaged_tail_kept: bool,
    /// What the layers above need of the valid batches (leader-epoch starts, producer
    /// batches), collected in this pass when the recovery was asked for one
    /// ([`Segment::recover_with_digest`], [`crate::SegmentOpenOptions::digest_entries`]).
    /// `None` when not asked for, when it would have held more entries than allowed, or when
    /// a control batch's marker did not decode: the caller then reads the batches itself.
    /// Only batches inside the valid prefix are in it (not one taken back by the
    /// [`CorruptKind::OffsetJump`] rule, nor any after the cut). Meant to be taken out
    /// (`Option::take`) by whoever consumes it, not kept with the report.
    pub digest: Option<RecoveryDigest>,
}

impl Segment {
    /// Recovers the segment (Kafka's `LogSegment.recover`): rebuilds both indexes from the
    /// `.log`, validating every batch's CRC, stops quietly at a partial tail and at the first
    /// corrupt batch, and cuts the `.log` there. Read-write: the files are rewritten and
    /// trimmed (after a close they are byte-identical to what Kafka writes). Read-only:
    /// nothing is written; the indexes are rebuilt in memory and reads stop at the valid
    /// length.
    ///
    /// Concurrent readers of this segment may see transiently wrong index answers while it
    /// runs (the log recovers segments before publishing them).
    ///
    /// # Errors
    /// [`Error::WriterAttached`] while an [`crate::ActiveSegment`] exists (use
    /// [`crate::ActiveSegment::recover`]); [`Error::OffsetOverflow`] when a valid batch's
    /// last offset does not fit relative to the base offset (Kafka propagates this so that
    /// the loader splits the segment; the `.log` is left as it was); [`Error::Io`],
    /// [`Error::Index`].
    pub fn recover(&self) -> Result<RecoveryReport> {
        self.recover_protecting(i64::MIN)
    }

    /// [`Segment::recover`], but bytes holding offsets below `protect_below` are flushed data
    /// and never cut: when the first batch it would cut starts below `protect_below` and the
    /// cut bytes are not all zeros, the `.log` keeps them (the indexes are rebuilt for the
    /// valid prefix, reads stop there) and the report says `damaged_tail_kept`. A crash can
    /// only tear what was not flushed; damage in flushed data is bit rot or tampering, and a
    /// repair must not turn it into the loss of what follows. `i64::MIN` is Kafka's rule (cut
    /// at the first bad batch).
    ///
    /// # Errors
    /// As [`Segment::recover`].
    pub fn recover_protecting(&self, protect_below: i64) -> Result<RecoveryReport> {
        self.recover_with_digest(protect_below, 0)
    }

    /// [`Segment::recover_protecting`], also collecting the report's
    /// [`RecoveryReport::digest`] of at most `digest_entries` entries (0: none) from the same
    /// pass, so that the caller need not read the batches again.
    ///
    /// # Errors
    /// As [`Segment::recover`].
    pub fn recover_with_digest(
        &self,
        protect_below: i64,
        digest_entries: usize,
    ) -> Result<RecoveryReport> {
        match self.mode {
            OpenMode::ReadWrite => {
                let _guard = self.writer_guard()?;
                recover_in_place(self, protect_below, digest_entries, Trim::WhenCut)
            }
            OpenMode::ReadOnly => recover_in_memory(self, digest_entries),
        }
    }
}

/// Whether `[from, to)` of the segment's `.log` holds a byte that is not zero.
fn any_nonzero(segment: &Segment, from: u64, to: u64) -> Result<bool> {
    let log = segment.log()?;
    let mut buf = vec![0u8; 64 << 10];
    let mut at = from;
    while at < to {
        let want = usize::try_from((to - at).min(buf.len() as u64)).unwrap_or(buf.len());
        let n = crate::io::read_at_most(log.handle(), &mut buf[..want], at)
            .map_err(Error::io(crate::error::IoOp::Read, &segment.log_path()))?;
        if n == 0 {
            return Ok(false);
        }
        if buf[..n].iter().any(|b| *b != 0) {
            return Ok(true);
        }
        at += n as u64;
    }
    Ok(false)
}

/// Rebuilds the indexes in place and truncates the `.log` (the caller holds the writer slot).
///
/// The indexes are rebuilt in memory first (sized for this `.log`, so a small segment maps
/// nothing), then written to the mapped files only when they differ from what the files hold:
/// the recovery of a segment whose indexes were intact resizes, remaps and writes no index
/// (issue 28). Otherwise the files are reset and take the rebuilt entries, as Kafka's
/// `reset` then `append` leaves them; the bytes are the same either way.
pub(crate) fn recover_in_place(
    segment: &Segment,
    protect_below: i64,
    digest_entries: usize,
    trim: Trim,
) -> Result<RecoveryReport> {
    let indexes = segment.indexes()?;
    let end = segment.size();
    let (offset, time) = rebuilt_indexes(segment, end, Capacity::AtMostMax);
    let mut report = rebuild(segment, &offset, &time, end, digest_entries)?;
    report.damaged_tail_kept = report.truncated_bytes > 0
        && report.next_offset < protect_below
        && any_nonzero(segment, report.valid_bytes, end)?;
    if report.truncated_bytes > 0 {
        segment.size.publish(report.valid_bytes);
    }
    // Kafka's `log.truncateTo(validBytes)` also drops a preallocated tail; a kept damaged
    // tail stays on disk (the published size bounds every read).
    if (report.truncated_bytes > 0 || trim == Trim::Always)
        && !report.damaged_tail_kept
        && let Err(e) = segment.trim_log()
    {
        segment.poisoned.store(true, Ordering::Release);
        return Err(e);
    }
    finish_indexes(&offset, &time, report.max_timestamp)?;
    if !holds_exactly(&indexes.offset, &indexes.time, &offset, &time) {
        indexes.offset.reset()?;
        indexes.time.reset()?;
        for n in 0..offset.entries() {
            if let Some(entry) = offset.entry(n) {
                indexes.offset.append(entry.offset, entry.position)?;
            }
        }
        for n in 0..time.entries() {
            if let Some(entry) = time.entry(n) {
                indexes
                    .time
                    .maybe_append(entry.timestamp_ms, entry.offset, true)?;
            }
        }
        finish_indexes(&indexes.offset, &indexes.time, report.max_timestamp)?;
    }
    segment.set_max_timestamp(report.max_timestamp);
    report.index_entries = indexes.offset.entries();
    report.time_index_entries = indexes.time.entries();
    report.on_disk = true;
    Ok(report)
}

/// When [`recover_in_place`] sets the `.log`'s length to the valid bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trim {
    /// Only when it cut bytes: the file is as long as the published size (a segment opened
    /// from disk, whose size is its file length, or a sealed one, trimmed at its roll), so a
    /// recovery that cut nothing has nothing to trim (no `fstat` per segment, issue 28).
    WhenCut,
    /// Always (an active segment: its file may be preallocated past the published size).
    Always,
}

/// Whether the files' indexes (`offset_file`, `time_file`) hold exactly the rebuilt entries
/// and nothing after them (trimmed: an untrimmed file counts its zero tail as entries).
fn holds_exactly(
    offset_file: &OffsetIndex,
    time_file: &TimeIndex,
    offset: &OffsetIndex,
    time: &TimeIndex,
) -> bool {
    offset_file.entries() == offset.entries()
        && offset_file.max_entries() == offset.entries()
        && time_file.entries() == time.entries()
        && time_file.max_entries() == time.entries()
        && (0..offset.entries()).all(|n| offset_file.entry(n) == offset.entry(n))
        && (0..time.entries()).all(|n| time_file.entry(n) == time.entry(n))
}

/// How much room [`rebuilt_indexes`] gives the in-memory indexes.
#[derive(Clone, Copy)]
enum Capacity {
    /// Room for every entry Kafka's rule can produce from the `.log`, and at least
    /// `max_index_bytes` (a read-only recovery: the indexes stay in memory and serve reads).
    AtLeastMax,
    /// The same room, but at most `max_index_bytes` (what the mapped files could hold: an
    /// index that fills fails as the file would).
    AtMostMax,
}

/// Empty in-memory indexes for rebuilding a `.log` of `end` bytes.
fn rebuilt_indexes(segment: &Segment, end: u64, capacity: Capacity) -> (OffsetIndex, TimeIndex) {
    let interval = u64::from(segment.config.index_interval_bytes);
    // Room for every entry the rule can produce: one per `interval + 1` bytes, plus the
    // final time-index entry and its spare slot.
    let needed_entries = end / (interval + 1) + 3;
    let max = segment.config.max_index_bytes;
    let bytes_for = |entry_size: u64| {
        let needed = u32::try_from(needed_entries.saturating_mul(entry_size)).unwrap_or(u32::MAX);
        match capacity {
            Capacity::AtLeastMax => needed.max(max),
            Capacity::AtMostMax => needed.min(max),
        }
    };
    let offset = OffsetIndex::in_memory(
        segment.path(FileType::Index),
        segment.base_offset,
        bytes_for(8),
    );
    let time = TimeIndex::in_memory(
        segment.path(FileType::TimeIndex),
        segment.base_offset,
        bytes_for(12),
    );
    (offset, time)
}

/// Rebuilds the indexes in memory and lowers the published size (writes nothing).
pub(crate) fn recover_in_memory(
    segment: &Segment,
    digest_entries: usize,
) -> Result<RecoveryReport> {
    let end = segment.size();
    let (offset, time) = rebuilt_indexes(segment, end, Capacity::AtLeastMax);
    let mut report = rebuild(segment, &offset, &time, end, digest_entries)?;
    finish_indexes(&offset, &time, report.max_timestamp)?;
    report.index_entries = offset.entries();
    report.time_index_entries = time.entries();
    report.on_disk = false;
    segment.replace_indexes(Indexes { offset, time })?;
    segment.set_max_timestamp(report.max_timestamp);
    segment.size.publish(report.valid_bytes);
    Ok(report)
}

/// Kafka's loop over the batches of `[0, end)` (spec §3.5 step 2), appending to `offset` and
/// `time` (which must be empty), collecting a digest of at most `digest_entries` entries.
fn rebuild(
    segment: &Segment,
    offset: &OffsetIndex,
    time: &TimeIndex,
    end: u64,
    digest_entries: usize,
) -> Result<RecoveryReport> {
    let base_offset = segment.base_offset;
    let interval = u64::from(segment.config.index_interval_bytes);
    let path = segment.log_path_arc();
    let mut max = UNKNOWN_MAX;
    let mut last_index_entry = 0u64;
    let mut batches = 0u64;
    let mut next_offset = base_offset;
    // The batch before this one, and the state from before it was counted (to take it back
    // when it turns out to be the damaged one).
    let mut previous: Option<Previous> = None;
    let mut digest = DigestBuilder::new(digest_entries);
    let log = segment.log()?;
    let decode = segment
        .config
        .decode_records_on_recovery
        .then_some(segment.config.max_decompressed_bytes);
    let outcome = scan_batches(log.handle(), &path, end, SCAN_CHUNK, true, |batch| {
        let header = batch.header();
        if let Some(limit) = decode {
            check_records(batch, limit, &path)?;
        }
        // Stricter than Kafka (see `CorruptKind::OffsetsNotIncreasing`): no checksum covers
        // the offset fields, so a batch whose offsets do not increase is damage.
        let first_offset = header.base_offset.unwrap_or(header.last_offset);
        if let Some(prev) = &previous
            && first_offset <= prev.last_offset
        {
            // Which of the two is damaged? When the previous batch did not follow on from
            // the one before it while this batch does follow that one, the previous batch is
            // the one out of line (its offsets jumped up): take it back and cut there, so it
            // is never served. A previous batch that follows on exactly is taken as intact
            // and the cut lands at this batch (no intact batch is cut with a damaged one).
            if first_offset > prev.offset_before && prev.first_offset != prev.offset_before + 1 {
                offset.truncate_to(prev.last_offset)?;
                time.truncate_to(prev.last_offset)?;
                max = prev.max_before;
                last_index_entry = prev.last_index_entry_before;
                batches -= 1;
                next_offset = prev.next_offset_before;
                digest.rewind(prev.digest_before);
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    position: prev.position,
                    kind: CorruptKind::OffsetJump {
                        last_offset: prev.last_offset,
                        next_first_offset: first_offset,
                    },
                });
            }
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                position: header.position,
                kind: CorruptKind::OffsetsNotIncreasing {
                    previous_last_offset: prev.last_offset,
                    first_offset,
                },
            });
        }
        previous = Some(Previous {
            position: header.position,
            first_offset,
            last_offset: header.last_offset,
            offset_before: previous.as_ref().map_or(base_offset - 1, |p| p.last_offset),
            max_before: max,
            last_index_entry_before: last_index_entry,
            next_offset_before: next_offset,
            digest_before: digest.mark(),
        });
        if relative_offset(base_offset, header.last_offset).is_none() {
            return Err(Error::OffsetOverflow {
                path: path.to_path_buf(),
                base_offset,
                offset: header.last_offset,
            });
        }
        if header.max_timestamp_ms > max.timestamp_ms {
            max = TimestampOffset {
                timestamp_ms: header.max_timestamp_ms,
                offset: header.last_offset,
            };
        }
        let valid_bytes = header.position;
        if valid_bytes - last_index_entry > interval {
            // A segment written over several opens can need more entries than its index file
            // holds: every open restarts the bytes-since-the-last-entry count at 0, and this
            // rule counts from the last entry. The indexes are sparse, so the rebuild stops
            // adding to a full one (reads walk further; nothing is lost) where Kafka's
            // `recover` throws "Attempt to append to a full index" and the load fails.
            if !offset.is_full() {
                let position = u32::try_from(valid_bytes).unwrap_or(u32::MAX);
                offset.append(header.last_offset, position)?;
            }
            // The time index's spare slot stays free for the final entry (`finish_indexes`).
            if !time.is_full() {
                time.maybe_append(max.timestamp_ms, max.offset, false)?;
            }
            last_index_entry = valid_bytes;
        }
        batches += 1;
        next_offset = header.next_offset();
        digest.add(batch);
        Ok(())
    })?;
    Ok(RecoveryReport {
        valid_bytes: outcome.valid_bytes,
        truncated_bytes: end - outcome.valid_bytes,
        reason: outcome.stop,
        batches,
        index_entries: 0,
        time_index_entries: 0,
        next_offset,
        max_timestamp: max,
        on_disk: false,
        damaged_tail_kept: false,
        digest: digest.finish(next_offset),
    })
}

/// Decodes every record of `batch` (as a consumer does) and checks that their offsets
/// increase inside the batch's range: a batch that fails is corrupt at its position.
fn check_records(batch: &BatchRef<'_>, max_decompressed_bytes: usize, path: &Path) -> Result<()> {
    let header = batch.header();
    let corrupt = |kind| Error::Corrupt {
        path: path.to_path_buf(),
        position: header.position,
        kind,
    };
    let mut first = header.base_offset;
    let mut previous = None;
    for record in batch.records(max_decompressed_bytes) {
        let record = record.map_err(|e| match e.corrupt_kind() {
            Some(kind) => corrupt(CorruptKind::Batch(kind.clone())),
            None => corrupt(CorruptKind::Batch(seglog_records::CorruptKind::Truncated)),
        })?;
        let first_offset = *first.get_or_insert(record.offset);
        if record.offset < first_offset
            || record.offset > header.last_offset
            || previous.is_some_and(|p| record.offset <= p)
        {
            return Err(corrupt(CorruptKind::RecordOffset {
                offset: record.offset,
                first_offset,
                last_offset: header.last_offset,
            }));
        }
        previous = Some(record.offset);
    }
    Ok(())
}

/// The last batch `rebuild` accepted, with what it changed, so it can be taken back.
struct Previous {
    /// Its byte position.
    position: u64,
    /// Its first offset (the last one for a legacy compressed wrapper).
    first_offset: i64,
    /// Its last offset.
    last_offset: i64,
    /// The last offset before it (the segment's base offset - 1 for the first batch).
    offset_before: i64,
    /// The running max (timestamp, offset) before it.
    max_before: TimestampOffset,
    /// The position of the last index entry before it.
    last_index_entry_before: u64,
    /// The next offset before it.
    next_offset_before: i64,
    /// The digest before it.
    digest_before: DigestMark,
}

/// Spec §3.5 step 5: trim the offset index, add the final time-index entry, trim the time
/// index.
fn finish_indexes(offset: &OffsetIndex, time: &TimeIndex, max: TimestampOffset) -> Result<()> {
    offset.trim_to_valid_size()?;
    if max.timestamp_ms >= 0 {
        time.maybe_append(max.timestamp_ms, max.offset, true)?;
    }
    time.trim_to_valid_size()?;
    Ok(())
}
