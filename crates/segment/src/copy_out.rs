//! [`Segment::read_into`]: Kafka's `LogSegment.read` (spec §3.3) copied into the caller's
//! buffer, with one `pread` in the common case.
//!
//! [`Segment::read`] walks headers from the offset index floor (one or two `pread`s) before
//! the caller copies the slice (one more). `read_into` instead reads, with one `pread`, a
//! region that very likely holds the header of the batch it needs *and* the bytes it returns,
//! and parses the headers in memory.
//!
//! Where the region starts. An offset index entry maps the *last* offset of an append to the
//! *start* position of that append (spec §3.2). For a target `X`, the floor entry
//! `(off_k, pos_k)` and the next entry `(off_n, pos_n)`:
//! * `X <= off_k` (`X == off_k`, or no entry at or below `X`): the append at `pos_k` holds
//!   `X`. The region starts at `pos_k`.
//! * `off_k < X <= off_n` with a long span `pos_n - pos_k` (more than a header chunk and more
//!   than two index intervals): batches are large, every append is indexed, and the batch
//!   holding `X` is the one at `pos_n`. The region starts there (**the speculation**) and is
//!   `max(max_bytes, pos_n - pos_k + 61)` long: the previous append's size guesses this one's.
//! * `off_k < X` otherwise (a short span of small batches, or the tail after the last entry):
//!   the region starts at `pos_k` and covers the span (a header chunk for the tail) plus the
//!   bytes to return; only the headers when those are many (moving them to the front of the
//!   buffer would cost more than a second `pread`).
//!
//! Why the answer is `read`'s. From `pos_k` the in-memory walk is `translate_offset`'s walk.
//! The speculation is accepted only when the header at `pos_n` parses and its base offset is
//! `<= X`: offsets increase along the log, so every batch before `pos_n` ends below `X` and
//! the walk from `pos_k` passes over them to the same batch. It relies on `pos_n` being a
//! batch boundary, which every entry is (the appender and recovery write entries at batch
//! starts; open rebuilds an inconsistent index). The headers it skips are not checked: a
//! corrupt one there, which `read` would report, goes unnoticed (as corruption after the
//! batch does in `read`).
//!
//! Fallbacks. The speculation does not hold (a legacy batch has no base offset; a base offset
//! above `X`, i.e. `X` in an unindexed append or a compaction gap; a corrupt or partial
//! header; the end of the segment): the header walk from `pos_k` as in `translate_offset`, so
//! errors are `read`'s errors. A header past the region: the header walk from there. More
//! bytes to return than the region holds: one more `pread` for the rest.

use seglog_records::{BatchHeader, HeaderRead, RECORD_BATCH_OVERHEAD};

use crate::error::{Error, IoOp};
use crate::read::LogOffsetPosition;
use crate::segment::Segment;
use crate::slice::SliceOffsets;
use crate::walk::HEADER_CHUNK;
use crate::{Result, io};

/// One v2 header: the bytes a header walk needs at each batch.
const HEADER: u64 = RECORD_BATCH_OVERHEAD as u64;
/// The chunk of a header walk, as a `u64`.
const CHUNK: u64 = HEADER_CHUNK as u64;
/// Up to this many bytes to return, a region starting before the batch holds them too (one
/// `pread`, then a move to the front of the buffer). Above it the region holds only headers
/// and the bytes are read where they are (a second `pread`, cheaper than the move).
const MOVE_LIMIT: u64 = 32 * 1024;
/// How far a region from the floor reaches for headers at most (the header walk goes on).
const LEAD_LIMIT: u64 = 64 * 1024;

/// What [`Segment::read_into`] copied: the metadata [`Segment::read`]'s
/// [`crate::FileSlice`] would carry. The bytes are the buffer's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopiedRead {
    /// Byte position in the `.log` of the first byte copied (a batch boundary): the slice's
    /// [`crate::FileSlice::position`].
    pub position: u64,
    /// The offsets the bytes cover: the slice's [`crate::FileSlice::offsets`].
    pub offsets: SliceOffsets,
}

/// Where the first `pread` starts and how much it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region {
    start: u64,
    len: u64,
    /// The region starts at the next index entry, not the floor (the speculation).
    speculative: bool,
}

/// How the in-memory walk of a region ended.
#[derive(Debug)]
enum Walk {
    /// The first batch whose last offset is `>= X`.
    Found(BatchHeader),
    /// The walk ended (clean end or partial tail) without one.
    Ended,
    /// The header at this position is not (all) in the region: walk on from the file.
    Beyond(u64),
    /// The speculation does not hold: walk from the floor instead.
    Rejected,
    /// A corrupt header on the walk from the floor.
    Corrupt(seglog_records::Error),
}

impl Segment {
    /// [`Segment::read`] followed by [`crate::FileSlice::read_into`] into a cleared buffer, in
    /// (usually) one `pread` instead of about three: the same bytes and metadata, with Kafka's
    /// semantics. The bytes start at the batch holding `start_offset` (it may begin below it),
    /// are at most `max_bytes` long (at least the whole first batch when `min_one_message`),
    /// never go past `max_position` nor the published size, and may end in the middle of a
    /// batch. `None` when no batch of this segment holds `start_offset` or a later offset.
    ///
    /// `buf`'s previous contents are replaced: on return it holds exactly the bytes read
    /// (nothing on `None` or an error). It is used as scratch space without being
    /// zero-filled: it grows (zero-filled) only beyond its current length, so a caller that
    /// reuses one buffer and does **not** clear it between calls pays for no `memset`.
    ///
    /// Ordering: the offset index entries are loaded before the published size, and the size
    /// once. An entry is published after the size that covers its append, so the batch an
    /// entry names lies below the size loaded, and nothing at or past that size is read (a
    /// concurrent append is either seen whole or not at all).
    ///
    /// Where the batches are large (a long span between the offset index floor and the next
    /// entry) it speculates that the batch holding `start_offset` starts at that next entry
    /// and reads from there, accepting it only when that header parses and its base offset is
    /// at or below `start_offset`; so it skips the headers in between: corruption there, which
    /// [`Segment::read`]'s walk reports, is not detected. Headers it parses give `read`'s
    /// typed errors.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if a header on the way is corrupt; [`Error::Io`] if a read fails,
    /// including `UnexpectedEof` when the file is shorter than the published size (truncated
    /// concurrently).
    pub fn read_into(
        &self,
        start_offset: i64,
        max_bytes: u32,
        max_position: u64,
        min_one_message: bool,
        buf: &mut Vec<u8>,
    ) -> Result<Option<CopiedRead>> {
        let result = self.copy_out(start_offset, max_bytes, max_position, min_one_message, buf);
        if !matches!(result, Ok(Some(_))) {
            buf.clear();
        }
        result
    }

    fn copy_out(
        &self,
        start_offset: i64,
        max_bytes: u32,
        max_position: u64,
        min_one_message: bool,
        buf: &mut Vec<u8>,
    ) -> Result<Option<CopiedRead>> {
        // The index first, then the size, once (see `read_into`'s ordering note).
        let (floor, next) = self.indexes()?.offset.lookup_with_next(start_offset);
        let size = self.size();
        let floor_position = u64::from(floor.position);
        let next_position = next.map(|n| u64::from(n.position));
        let limit = max_position.min(size);
        let region = plan_region(
            start_offset,
            floor.offset,
            floor_position,
            next_position,
            size,
            limit,
            RequestSize {
                max_bytes: u64::from(max_bytes),
                min_one_message,
                index_interval: u64::from(self.config.index_interval_bytes),
            },
        );
        let got = self.read_region(buf, region)?;
        let walk = walk_region(&buf[..got], region, size, start_offset);
        let first = match walk {
            Walk::Found(header) => Some(LogOffsetPosition {
                offset: header.last_offset,
                position: header.position,
                size: header.total_size,
            }),
            Walk::Ended => None,
            Walk::Beyond(position) => self.walk_to_offset(start_offset, position, None, size)?,
            Walk::Rejected => {
                self.walk_to_offset(start_offset, floor_position, next_position, size)?
            }
            Walk::Corrupt(e) => return Err(Error::from_records(&self.log_path_arc(), e)),
        };
        let Some(first) = first else {
            return Ok(None);
        };
        let (len, offsets) = self.extent(start_offset, first, max_bytes, min_one_message, limit);
        self.fill(buf, region.start, got, first.position, len)?;
        Ok(Some(CopiedRead {
            position: first.position,
            offsets,
        }))
    }

    /// Reads `region` into the front of `buf` (grown, never shrunk); returns the bytes read
    /// (fewer than asked only where the file ends).
    fn read_region(&self, buf: &mut Vec<u8>, region: Region) -> Result<usize> {
        let want = to_usize(region.len).ok_or_else(|| self.too_large())?;
        grow(buf, want);
        io::read_at_most(self.log()?.handle(), &mut buf[..want], region.start)
            .map_err(|e| Error::io(IoOp::Read, &self.log_path_arc())(e))
    }

    /// Makes `buf` exactly the `len` bytes at `position`: those of the region
    /// `[region_start, region_start + got)` already in `buf` move to the front, the rest is
    /// read from the file.
    fn fill(
        &self,
        buf: &mut Vec<u8>,
        region_start: u64,
        got: usize,
        position: u64,
        len: u64,
    ) -> Result<()> {
        let len = to_usize(len).ok_or_else(|| self.too_large())?;
        let region_end = region_start + got as u64;
        let have = if position >= region_start && position < region_end {
            let from = (position - region_start) as usize;
            let have = (got - from).min(len);
            if from > 0 {
                buf.copy_within(from..from + have, 0);
            }
            have
        } else {
            0
        };
        if have < len {
            grow(buf, len);
            io::read_exact_at(
                self.log()?.handle(),
                &mut buf[have..len],
                position + have as u64,
            )
            .map_err(|e| Error::io(IoOp::Read, &self.log_path_arc())(e))?;
        }
        buf.truncate(len);
        Ok(())
    }

    fn too_large(&self) -> Error {
        Error::Io {
            op: IoOp::Read,
            path: self.log_path(),
            source: std::io::Error::new(std::io::ErrorKind::OutOfMemory, "read too large"),
        }
    }
}

/// How much a read asks for, and the segment's index interval (for the speculation).
#[derive(Clone, Copy, Debug)]
struct RequestSize {
    max_bytes: u64,
    min_one_message: bool,
    index_interval: u64,
}

/// Where to read first (module notes): from the floor, or from the next entry (speculation).
fn plan_region(
    target: i64,
    floor_offset: i64,
    floor_position: u64,
    next_position: Option<u64>,
    size: u64,
    limit: u64,
    request: RequestSize,
) -> Region {
    // (start, bytes of headers before the batch, guessed size of the batch, speculative)
    let (start, lead, batch, speculative) = match next_position {
        // The append at the floor holds the target: its first batch starts there, and the
        // append ends at or before the next entry.
        _ if target <= floor_offset => (
            floor_position,
            0,
            next_position.map_or(CHUNK, |next| next.saturating_sub(floor_position)),
            false,
        ),
        Some(next) => {
            let span = next.saturating_sub(floor_position);
            if span + HEADER > CHUNK.max(2 * request.index_interval) {
                (next, 0, span + HEADER, true)
            } else {
                (floor_position, span, span + HEADER, false)
            }
        }
        None => (
            floor_position,
            size.saturating_sub(floor_position).min(CHUNK),
            CHUNK,
            false,
        ),
    };
    let lead = lead.min(LEAD_LIMIT);
    let data = if request.min_one_message {
        request.max_bytes.max(batch)
    } else {
        request.max_bytes
    };
    // Nothing past `limit` is returned: only headers are needed beyond it.
    let data = data.min(limit.saturating_sub(start + lead)).max(HEADER);
    let len = if lead == 0 || data <= MOVE_LIMIT {
        lead + data
    } else {
        lead + HEADER
    };
    Region {
        start,
        len: len.min(size.saturating_sub(start)),
        speculative,
    }
}

/// Walks the headers of `bytes` (the file from `region.start`) as a header walk of
/// `[region.start, size)` would, to the first batch whose last offset is `>= target`. A
/// speculative region must start with a batch whose base offset is `<= target`, and anything
/// else than finding the batch rejects it.
fn walk_region(bytes: &[u8], region: Region, size: u64, target: i64) -> Walk {
    let reject_or = |walk| {
        if region.speculative {
            Walk::Rejected
        } else {
            walk
        }
    };
    let mut position = region.start;
    let mut accepted = !region.speculative;
    loop {
        if position >= size {
            return reject_or(Walk::Ended);
        }
        let remaining = size - position;
        let need = remaining.min(HEADER) as usize;
        let prefix = usize::try_from(position - region.start)
            .ok()
            .and_then(|at| bytes.get(at..at.checked_add(need)?));
        let Some(prefix) = prefix else {
            return if accepted {
                Walk::Beyond(position)
            } else {
                Walk::Rejected
            };
        };
        match BatchHeader::parse(prefix, position, remaining) {
            Ok(HeaderRead::Batch(header)) => {
                if !accepted {
                    if header.base_offset.is_none_or(|base| base > target) {
                        return Walk::Rejected;
                    }
                    accepted = true;
                }
                if header.last_offset >= target {
                    return Walk::Found(header);
                }
                position = header.end_position();
            }
            // Not a whole batch before the end: the exact header walk from here reports the
            // damage (`walk_to_offset`).
            Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => {
                return reject_or(Walk::Beyond(position));
            }
            Err(e) => return reject_or(Walk::Corrupt(e)),
        }
    }
}

/// Grows `buf` to at least `len` bytes; only the new bytes are zero-filled.
fn grow(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0);
    }
}

fn to_usize(n: u64) -> Option<usize> {
    usize::try_from(n).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: RequestSize = RequestSize {
        max_bytes: 1,
        min_one_message: true,
        index_interval: 4096,
    };

    #[test]
    fn large_batches_speculate_on_the_next_entry() {
        // Floor (9, 10_000), next (19, 20_800): 10.8 KB batches, every one indexed.
        let region = plan_region(15, 9, 10_000, Some(20_800), 100_000, u64::MAX, REQ);
        assert_eq!(
            region,
            Region {
                start: 20_800,
                len: 10_800 + HEADER,
                speculative: true
            }
        );
        // The floor's own last offset: its batch, sized by the span.
        let region = plan_region(9, 9, 10_000, Some(20_800), 100_000, u64::MAX, REQ);
        assert_eq!((region.start, region.len), (10_000, 10_800));
        assert!(!region.speculative);
    }

    #[test]
    fn small_batches_read_the_span_from_the_floor() {
        let region = plan_region(15, 9, 1_000, Some(5_200), 100_000, u64::MAX, REQ);
        assert_eq!(region.start, 1_000);
        assert_eq!(region.len, 4_200 + 4_200 + HEADER);
        assert!(!region.speculative);
        // Many bytes to return: headers only (the data is read where it is).
        let big = RequestSize {
            max_bytes: 1 << 20,
            ..REQ
        };
        let region = plan_region(15, 9, 1_000, Some(5_200), 10 << 20, u64::MAX, big);
        assert_eq!(region.len, 4_200 + HEADER);
        // A large index interval does not make a long span look like large batches.
        let wide = RequestSize {
            index_interval: 64 * 1024,
            ..REQ
        };
        let region = plan_region(15, 9, 1_000, Some(70_000), 1 << 20, u64::MAX, wide);
        assert!(!region.speculative);
    }

    #[test]
    fn regions_stop_at_the_size_and_headers_past_the_limit() {
        let region = plan_region(15, 9, 10_000, Some(20_800), 21_000, u64::MAX, REQ);
        assert_eq!(region.len, 200);
        let big = RequestSize {
            max_bytes: 1 << 20,
            ..REQ
        };
        let region = plan_region(15, 9, 10_000, Some(20_800), 1 << 30, 20_900, big);
        assert_eq!(region.len, 100);
        let region = plan_region(15, 9, 10_000, Some(20_800), 1 << 30, 20_000, big);
        assert_eq!(region.len, HEADER);
        // The tail after the last entry: a header chunk plus the data guess.
        let region = plan_region(30, 9, 10_000, None, 1 << 30, u64::MAX, REQ);
        assert_eq!((region.start, region.len), (10_000, 2 * CHUNK));
    }
}
