//! Streaming a `.log` file batch by batch with bounded memory, for `dump` and `verify`.
//!
//! These commands judge raw bytes the log layer would refuse, so they walk files themselves.
//! They never read a whole file: [`LogStream`] reads [`CHUNK`]-sized pieces and holds one
//! batch at a time, so memory is bounded by the larger of the chunk and the batch bound
//! (`--max-batch-bytes`, default [`DEFAULT_MAX_BATCH_BYTES`]), whatever the file's size (a
//! 3 GB sparse `.log` costs a chunk, not 3 GB). A batch whose length field exceeds the bound
//! is reported as corruption at its position, as Kafka bounds batches by `max.message.bytes`.
//!
//! The end-of-data rules are [`BatchHeader::parse`]'s (Kafka's `FileLogInputStream`): 17 or
//! fewer bytes, or a batch longer than what remains, end the walk as a torn tail; a bad header
//! is corruption, reported as zero padding when every remaining byte is zero.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use seglog_records::{BatchHeader, BatchRef, Batches, HeaderRead, RECORD_BATCH_OVERHEAD};

use crate::error::Error;

/// The default bound on one batch's size (`--max-batch-bytes`): 64 MiB, well above Kafka's
/// `max.message.bytes` default (1 MiB) and the values topics commonly raise it to.
pub const DEFAULT_MAX_BATCH_BYTES: u32 = 64 << 20;

/// Bytes read from the file at a time.
pub const CHUNK: usize = 1 << 20;

/// How a walk of a `.log` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Exactly at the end of the file.
    Clean,
    /// Only zero bytes from `position` to the end: a preallocated or never-written tail.
    ZeroTail {
        /// Where the zeros start.
        position: u64,
        /// How many there are.
        bytes: u64,
    },
    /// An incomplete batch (or 17 or fewer stray bytes) at the end: a torn write.
    TornTail {
        /// Where the incomplete batch starts.
        position: u64,
        /// Bytes from there to the end of the file.
        bytes: u64,
    },
    /// A batch whose length field exceeds the bound: a damaged length field, or a batch above
    /// `max.message.bytes`. Not read; the rest of the file is unreadable.
    Oversized {
        /// Where the batch starts.
        position: u64,
        /// The size its length field claims (`12 + length`).
        size: u32,
        /// The bound.
        limit: u32,
        /// Bytes from there to the end of the file.
        rest: u64,
    },
    /// Bytes that cannot be a batch (bad length, magic or count): the rest of the file is
    /// unreadable.
    Corrupt {
        /// Where the bad batch starts.
        position: u64,
        /// What is wrong.
        message: String,
        /// Bytes from there to the end of the file.
        rest: u64,
    },
}

/// One step of a walk: a whole batch, or how the walk ended.
#[derive(Debug)]
pub enum Step<'a> {
    /// The next whole batch (its bytes are borrowed from the stream's buffer).
    Batch(BatchRef<'a>),
    /// The walk is over; every later call returns [`End::Clean`].
    End(End),
}

/// A `.log` walked batch by batch with bounded memory: it reads [`CHUNK`]-sized pieces and
/// holds one batch at a time; a batch longer than the bound is corruption at its position.
#[derive(Debug)]
pub struct LogStream {
    file: File,
    path: PathBuf,
    /// The file's length when opened (lowered if it shrinks while being read).
    len: u64,
    position: u64,
    buf: Vec<u8>,
    buf_start: u64,
    max_batch_bytes: u32,
    ended: bool,
}

impl End {
    /// What an [`End::Oversized`] or [`End::Corrupt`] means, in a sentence.
    pub fn corruption_text(&self) -> Option<String> {
        match self {
            End::Oversized { size, limit, .. } => Some(format!(
                "a batch of {size} bytes is larger than the {limit}-byte bound (a damaged length field, or a batch above max.message.bytes: --max-batch-bytes raises the bound)"
            )),
            End::Corrupt { message, .. } => Some(message.clone()),
            _ => None,
        }
    }
}

impl LogStream {
    /// Opens `path` for a walk from byte 0.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::NotFound`] naming the file.
    pub fn open(path: &Path, max_batch_bytes: u32) -> Result<LogStream, Error> {
        let (file, len) = open_checked(path)?;
        Ok(LogStream {
            file,
            path: path.to_owned(),
            len,
            position: 0,
            buf: Vec::new(),
            buf_start: 0,
            max_batch_bytes,
            ended: false,
        })
    }

    /// The file's length (as found when opened).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The next batch, or how the walk ended.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when a read fails.
    pub fn next_step(&mut self) -> Result<Step<'_>, Error> {
        if self.ended {
            return Ok(Step::End(End::Clean));
        }
        loop {
            let position = self.position;
            let remaining = self.len - position;
            let want = remaining.min(RECORD_BATCH_OVERHEAD as u64) as usize;
            if !self.fill(position, want)? {
                continue; // the file shrank while being read: judge what is left
            }
            let start = (position - self.buf_start) as usize;
            let prefix = &self.buf[start..start + want];
            let end = match BatchHeader::parse(prefix, position, remaining) {
                Ok(HeaderRead::Batch(header)) if header.total_size > self.max_batch_bytes => {
                    End::Oversized {
                        position,
                        size: header.total_size,
                        limit: self.max_batch_bytes,
                        rest: remaining,
                    }
                }
                Ok(HeaderRead::Batch(header)) => {
                    let size = header.total_size as usize;
                    if !self.fill(position, size)? {
                        continue;
                    }
                    self.position += u64::from(header.total_size);
                    let start = (position - self.buf_start) as usize;
                    // The header parsed from the same bytes a moment ago, so this cannot fail;
                    // if it did, it is corruption at this position.
                    let problem =
                        match Batches::new(&self.buf[start..start + size], position).next() {
                            Some(Ok(_)) => None,
                            Some(Err(e)) => Some(e.to_string()),
                            None => Some("not a whole batch".to_owned()),
                        };
                    if let Some(message) = problem {
                        return Ok(self.finish(End::Corrupt {
                            position,
                            message,
                            rest: remaining,
                        }));
                    }
                    return match Batches::new(&self.buf[start..start + size], position).next() {
                        Some(Ok(batch)) => Ok(Step::Batch(batch)),
                        _ => Ok(Step::End(End::Clean)),
                    };
                }
                Ok(HeaderRead::End) if remaining == 0 => End::Clean,
                Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => End::TornTail {
                    position,
                    bytes: remaining,
                },
                Err(e) => {
                    let message = e.to_string();
                    if self.zeros_to_end(position)? {
                        End::ZeroTail {
                            position,
                            bytes: remaining,
                        }
                    } else {
                        End::Corrupt {
                            position,
                            message,
                            rest: remaining,
                        }
                    }
                }
            };
            return Ok(self.finish(end));
        }
    }

    fn finish(&mut self, end: End) -> Step<'_> {
        self.ended = true;
        self.buf = Vec::new();
        Step::End(end)
    }

    /// Makes `[position, position + n)` available in the buffer. Returns false (and lowers
    /// `len` to what could be read) when the file ended early: it shrank under the walk.
    fn fill(&mut self, position: u64, n: usize) -> Result<bool, Error> {
        let buf_end = self.buf_start + self.buf.len() as u64;
        if position >= self.buf_start && position + n as u64 <= buf_end {
            return Ok(true);
        }
        let remaining = usize::try_from(self.len - position).unwrap_or(usize::MAX);
        let size = n.max(CHUNK).min(remaining).max(n);
        resize_for_read(&mut self.buf, size);
        self.buf_start = position;
        let got = read_at_most(&self.file, &mut self.buf, position)
            .map_err(Error::io("read", &self.path))?;
        self.buf.truncate(got);
        if got < n {
            self.len = position + got as u64;
            return Ok(false);
        }
        Ok(true)
    }

    /// Whether every byte from `position` to the end of the file is zero (read a chunk at a
    /// time, never held whole).
    fn zeros_to_end(&mut self, position: u64) -> Result<bool, Error> {
        static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
        let mut chunk = vec![0u8; ZEROS.len()];
        let mut at = position;
        while at < self.len {
            let want = usize::try_from(self.len - at)
                .unwrap_or(usize::MAX)
                .min(chunk.len());
            let got = read_at_most(&self.file, &mut chunk[..want], at)
                .map_err(Error::io("read", &self.path))?;
            if got == 0 {
                break;
            }
            // A slice comparison is a memcmp, fast even in a debug build.
            if chunk[..got] != ZEROS[..got] {
                return Ok(false);
            }
            at += got as u64;
        }
        Ok(true)
    }
}

/// The whole `N`-byte entries of an index file, read a chunk at a time (a partial entry at
/// the end is not yielded: the length check reports it).
#[derive(Debug)]
pub struct EntryStream<const N: usize> {
    file: File,
    path: PathBuf,
    /// The file's length in bytes.
    len: u64,
    /// Whole entries in the file.
    entries: u64,
    /// The next entry's slot.
    slot: u64,
    buf: Vec<u8>,
    /// Slot of the buffer's first entry.
    buf_slot: u64,
}

impl<const N: usize> EntryStream<N> {
    /// Opens `path`.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::NotFound`] naming the file.
    pub fn open(path: &Path) -> Result<EntryStream<N>, Error> {
        let (file, len) = open_checked(path)?;
        Ok(EntryStream {
            file,
            path: path.to_owned(),
            len,
            entries: len / N as u64,
            slot: 0,
            buf: Vec::new(),
            buf_slot: 0,
        })
    }

    /// The file's length in bytes (as found when opened).
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// Whole entries in the file.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The next entry and its slot, or `None` after the last.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when a read fails.
    pub fn next_entry(&mut self) -> Result<Option<(u64, [u8; N])>, Error> {
        if self.slot >= self.entries {
            return Ok(None);
        }
        let buffered = self.buf.len() as u64 / N as u64;
        if self.slot < self.buf_slot || self.slot >= self.buf_slot + buffered {
            let per_chunk = (CHUNK / N) as u64;
            let count = per_chunk.min(self.entries - self.slot) as usize;
            resize_for_read(&mut self.buf, count * N);
            self.buf_slot = self.slot;
            let got = read_at_most(&self.file, &mut self.buf, self.slot * N as u64)
                .map_err(Error::io("read", &self.path))?;
            self.buf.truncate(got - got % N);
            if self.buf.is_empty() {
                // The file shrank under the walk.
                self.entries = self.slot;
                return Ok(None);
            }
        }
        let at = ((self.slot - self.buf_slot) as usize) * N;
        let mut raw = [0u8; N];
        raw.copy_from_slice(&self.buf[at..at + N]);
        let slot = self.slot;
        self.slot += 1;
        Ok(Some((slot, raw)))
    }

    /// Skips the all-zero entries that follow, a chunk at a time (a preallocated or sparse
    /// index is mostly zeros: comparing whole chunks is a memcmp); returns how many.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when a read fails.
    pub fn skip_zero_entries(&mut self) -> Result<u64, Error> {
        static ZEROS: [u8; CHUNK] = [0; CHUNK];
        let start = self.slot;
        while self.slot < self.entries {
            let buffered = self.buf.len() as u64 / N as u64;
            if self.slot < self.buf_slot || self.slot >= self.buf_slot + buffered {
                // Refill through `next_entry`'s path, then step back.
                match self.next_entry()? {
                    Some(_) => self.slot -= 1,
                    None => break,
                }
                continue;
            }
            let at = ((self.slot - self.buf_slot) as usize) * N;
            let end = (buffered as usize) * N;
            let rest = &self.buf[at..end];
            if rest == &ZEROS[..rest.len()] {
                self.slot += buffered - (self.slot - self.buf_slot);
                continue;
            }
            let first_nonzero = rest.iter().position(|b| *b != 0).unwrap_or(rest.len());
            self.slot += (first_nonzero / N) as u64;
            break;
        }
        Ok(self.slot - start)
    }
}

/// Opens a file the CLI reads through the one checked open ([`seglog_segment::open_regular`]:
/// never blocks on a FIFO, refuses anything but a regular file); returns it with its length.
///
/// # Errors
/// [`Error::NotRegular`] / [`Error::NotFound`] / [`Error::Io`] naming the file.
pub fn open_checked(path: &Path) -> Result<(File, u64), Error> {
    let (file, meta) =
        seglog_segment::open_regular(path, false).map_err(Error::io("open", path))?;
    Ok((file, meta.len()))
}

/// The largest producer `.snapshot` read: 64 MiB, about 900,000 producers' entries (Kafka
/// writes one entry per active producer).
pub const MAX_SNAPSHOT_BYTES: u64 = 64 << 20;

/// Reads a small whole file (a checkpoint, a snapshot) of at most `limit` bytes. The inner
/// `Err` is a problem to report (the file is larger than the bound: not read).
///
/// # Errors
/// [`Error::Io`] / [`Error::NotFound`] naming the file.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Result<Vec<u8>, String>, Error> {
    use std::io::Read;
    let (file, len) = open_checked(path)?;
    let too_large = |len| {
        Ok(Err(format!(
            "{len} bytes, larger than the {limit}-byte bound for this file; not read"
        )))
    };
    if len > limit {
        return too_large(len);
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io("read", path))?;
    if bytes.len() as u64 > limit {
        return too_large(bytes.len() as u64);
    }
    Ok(Ok(bytes))
}

/// Makes `buf` exactly `len` bytes long for a read to overwrite: reused as it is when the
/// length matches (no zeroing pass per chunk), else freshly allocated zeroed.
fn resize_for_read(buf: &mut Vec<u8>, len: usize) {
    if buf.len() != len {
        *buf = vec![0; len];
    }
}

/// Reads into `buf` from `position` until it is full or the file ends; returns the bytes read.
fn read_at_most(file: &File, buf: &mut [u8], position: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], position + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog_records::BatchBuilder;
    use std::io::Write;

    fn batch(base_offset: i64, records: usize) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base_offset);
        for i in 0..records {
            builder.append(1_700_000_000_000 + i as i64, None, Some(b"value"), &[]);
        }
        builder.build().expect("a valid batch").to_vec()
    }

    fn walk(bytes: &[u8], max: u32) -> (Vec<(u64, i64)>, End) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("00000000000000000000.log");
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(bytes))
            .expect("write");
        let mut stream = LogStream::open(&path, max).expect("open");
        let mut seen = Vec::new();
        loop {
            match stream.next_step().expect("step") {
                Step::Batch(b) => seen.push((b.position(), b.header().last_offset)),
                Step::End(end) => return (seen, end),
            }
        }
    }

    #[test]
    fn walks_batches_across_chunks_and_names_each_end() {
        let mut log = Vec::new();
        let mut base = 0;
        // Batches of a few KB crossing many 1 MiB chunk boundaries.
        while log.len() < 3 * CHUNK {
            log.extend_from_slice(&batch(base, 100));
            base += 100;
        }
        let (seen, end) = walk(&log, DEFAULT_MAX_BATCH_BYTES);
        assert_eq!(seen.len() as i64, base / 100);
        assert_eq!(seen.last().map(|s| s.1), Some(base - 1));
        assert_eq!(end, End::Clean);

        let mut zeros = log.clone();
        zeros.extend_from_slice(&[0; 5000]);
        let (_, end) = walk(&zeros, DEFAULT_MAX_BATCH_BYTES);
        assert_eq!(
            end,
            End::ZeroTail {
                position: log.len() as u64,
                bytes: 5000
            }
        );

        let torn = &log[..log.len() - 10];
        let (seen_torn, end) = walk(torn, DEFAULT_MAX_BATCH_BYTES);
        assert_eq!(seen_torn.len(), seen.len() - 1);
        assert!(
            matches!(end, End::TornTail { position, .. } if position == seen[seen.len() - 1].0)
        );
    }

    #[test]
    fn a_batch_above_the_bound_is_corruption_at_its_position() {
        let first = batch(0, 1);
        let mut log = first.clone();
        log.extend_from_slice(&batch(1, 50));
        let (seen, end) = walk(&log, first.len() as u32);
        assert_eq!(seen, [(0, 0)]);
        let rest = (log.len() - first.len()) as u64;
        assert_eq!(
            end,
            End::Oversized {
                position: first.len() as u64,
                size: rest as u32,
                limit: first.len() as u32,
                rest,
            }
        );
        assert!(end.corruption_text().is_some_and(|t| t.contains("bound")));
    }
}
