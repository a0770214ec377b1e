//! Walking the batches of a `.log` region `[position, end)`.
//!
//! * [`HeaderWalker`] reads only headers (Kafka's `FileLogInputStream` rules: a partial tail
//!   ends the walk quietly, a bad header is one error). It reads the file in chunks and
//!   parses every header that lies inside the chunk, so translating an offset costs one or
//!   two `pread`s for a whole index interval. A region longer than a chunk starts with a
//!   header-sized read; once it meets a batch at least a chunk long, it reads only
//!   header-sized prefixes (the next header is never inside a chunk then).
//! * [`scan_batches`] hands every whole batch (its bytes included) to a callback, reading the
//!   file in large chunks: recovery validates each batch's CRC with it. Where it stops early
//!   and why is a [`TruncationReason`] (public: recovery reports it).

use std::fs::File;
use std::path::Path;
use std::sync::{Arc, mpsc};

use seglog_records::{BatchHeader, BatchRef, HeaderRead, RECORD_BATCH_OVERHEAD};

use crate::error::{CorruptKind, Error, IoOp};
use crate::{Result, io};

/// Chunk size of header walks: about one default index interval plus a header.
pub(crate) const HEADER_CHUNK: usize = 8 * 1024;
/// Chunk size of full scans (recovery).
pub(crate) const SCAN_CHUNK: usize = 1024 * 1024;

/// How a header walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkEnd {
    /// Still walking.
    Running,
    /// Exactly at `end`.
    Clean,
    /// Bytes remain at `position` that are not a whole batch (17 or fewer bytes, or a batch
    /// longer than what remains).
    PartialTail { position: u64 },
    /// A header was corrupt (the error was yielded).
    Failed,
}

/// The file a walk reads: borrowed, or shared (a walk that outlives the call that started it,
/// e.g. [`crate::BatchHeaders`], keeps the `.log` open even if the segment cache closes it).
enum WalkFile<'a> {
    Borrowed(&'a File),
    Shared(Arc<File>),
}

impl WalkFile<'_> {
    fn get(&self) -> &File {
        match self {
            WalkFile::Borrowed(file) => file,
            WalkFile::Shared(file) => file,
        }
    }
}

/// Iterator over the batch headers of `[position, end)` of a file.
pub(crate) struct HeaderWalker<'a> {
    file: WalkFile<'a>,
    path: Arc<Path>,
    position: u64,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
    buf_len: usize,
    chunk: usize,
    /// A batch at least a chunk long was seen: the next header is never inside the chunk
    /// just read, so later reads fetch one header's bytes instead of a whole chunk.
    large_batches: bool,
    /// The size of the first read, when the caller knows better than `chunk`.
    first_read: Option<usize>,
    /// Whether anything was read yet.
    started: bool,
    state: WalkEnd,
}

impl<'a> HeaderWalker<'a> {
    pub(crate) fn new(file: &'a File, path: Arc<Path>, position: u64, end: u64) -> Self {
        HeaderWalker::with_chunk(file, path, position, end, HEADER_CHUNK)
    }

    /// A walk holding its own reference to the file.
    pub(crate) fn shared(file: Arc<File>, path: Arc<Path>, position: u64, end: u64) -> Self {
        HeaderWalker::build(WalkFile::Shared(file), path, position, end, HEADER_CHUNK)
    }

    pub(crate) fn with_chunk(
        file: &'a File,
        path: Arc<Path>,
        position: u64,
        end: u64,
        chunk: usize,
    ) -> Self {
        HeaderWalker::build(WalkFile::Borrowed(file), path, position, end, chunk)
    }

    fn build(file: WalkFile<'a>, path: Arc<Path>, position: u64, end: u64, chunk: usize) -> Self {
        HeaderWalker {
            file,
            path,
            position,
            end,
            buf: Vec::new(),
            buf_start: 0,
            buf_len: 0,
            chunk: chunk.max(RECORD_BATCH_OVERHEAD),
            large_batches: false,
            first_read: None,
            started: false,
            state: WalkEnd::Running,
        }
    }

    /// Makes the first read `len` bytes (at least one header's worth is always read): the
    /// caller knows where the walk will end (offset translation, from the next index entry).
    pub(crate) fn with_first_read(mut self, len: usize) -> Self {
        self.first_read = Some(len);
        self
    }

    /// How the walk ended (`Running` until `next` returned `None`).
    pub(crate) fn end_state(&self) -> WalkEnd {
        self.state
    }

    /// The position of the next header (after the last one yielded).
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// Makes the buffer cover `[position, position + need)`; returns the prefix there.
    fn prefix(&mut self, need: usize) -> Result<&[u8]> {
        let covered = self.position >= self.buf_start
            && self.position + need as u64 <= self.buf_start + self.buf_len as u64;
        if !covered {
            let remaining = self.end - self.position;
            // A region that fits in a chunk is read whole. A longer one starts with one
            // header: if its batch is at least a chunk long, every later read is one header
            // too (the open check of a segment of large batches reads ~61 bytes, not 8 KiB).
            let started = std::mem::replace(&mut self.started, true);
            let chunk = match self.first_read.take() {
                Some(first) => first,
                None if self.large_batches => need,
                None if !started && remaining > self.chunk as u64 => need,
                None => self.chunk,
            };
            let len = usize::try_from(remaining)
                .unwrap_or(usize::MAX)
                .min(chunk)
                .max(need);
            if self.buf.len() < len {
                // `vec!` zeroes through the allocator: cheap, unlike `resize` in debug builds.
                self.buf = vec![0; len];
            }
            let got = io::read_at_most(self.file.get(), &mut self.buf[..len], self.position)
                .map_err(Error::io(IoOp::Read, &self.path))?;
            self.buf_start = self.position;
            self.buf_len = got;
            if got < need {
                return Err(Error::Io {
                    op: IoOp::Read,
                    path: self.path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file is shorter than the segment size (truncated concurrently?)",
                    ),
                });
            }
        }
        let from = (self.position - self.buf_start) as usize;
        Ok(&self.buf[from..from + need])
    }
}

impl Iterator for HeaderWalker<'_> {
    type Item = Result<BatchHeader>;

    fn next(&mut self) -> Option<Result<BatchHeader>> {
        if self.state != WalkEnd::Running {
            return None;
        }
        if self.position >= self.end {
            self.state = WalkEnd::Clean;
            return None;
        }
        let remaining = self.end - self.position;
        let need = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(RECORD_BATCH_OVERHEAD);
        let position = self.position;
        let parsed = match self.prefix(need) {
            Ok(prefix) => BatchHeader::parse(prefix, position, remaining),
            Err(e) => {
                self.state = WalkEnd::Failed;
                return Some(Err(e));
            }
        };
        match parsed {
            Ok(HeaderRead::Batch(header)) => {
                self.position = header.end_position();
                if header.total_size as usize >= self.chunk {
                    self.large_batches = true;
                }
                Some(Ok(header))
            }
            Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => {
                self.state = WalkEnd::PartialTail { position };
                None
            }
            Err(e) => {
                self.state = WalkEnd::Failed;
                Some(Err(Error::from_records(&self.path, e)))
            }
        }
    }
}

/// Why a batch scan of a `.log` (recovery's) stopped before the end, and so why recovery cut
/// the `.log` there (reported in [`crate::RecoveryReport::reason`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TruncationReason {
    /// The bytes from `position` on are not a whole batch: a torn write or a short tail
    /// (17 bytes or fewer, or a batch longer than the bytes left). Kafka ends quietly here.
    PartialTail {
        /// Where the partial bytes start.
        position: u64,
    },
    /// The batch at `position` is corrupt (bad size field, magic, CRC, ...): it and
    /// everything after it are cut, as Kafka does.
    Corrupt {
        /// Where the corrupt batch starts.
        position: u64,
        /// What is wrong with it.
        kind: CorruptKind,
    },
}

/// What [`scan_batches`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanOutcome {
    /// Bytes of whole, valid batches from the start of the scan.
    pub valid_bytes: u64,
    /// Why the scan stopped before `end`, if it did.
    pub stop: Option<TruncationReason>,
}

/// Reads `[0, end)` of `file` in chunks of `chunk` bytes and calls `on_batch` with every
/// whole batch, in order, after checking its CRC (Kafka's `ensureValid`) when `validate`.
/// Stops quietly at a partial tail and at the first corrupt batch (reported in the outcome,
/// not as an error). An `Error::Corrupt` from `on_batch` rejects that batch: the scan stops
/// before it, as at any corruption. Other `on_batch` errors abort the scan.
///
/// A scan of more than [`READ_AHEAD_MIN_CHUNKS`] chunks reads ahead: while the calling thread
/// checks and hands over the batches of one chunk, a second thread (scoped to the call) reads
/// the next one, so the scan costs about the larger of the reading and the checking instead of
/// their sum. The next chunk starts after the last whole batch of this one, which a walk of
/// this chunk's headers (no CRC) finds before its batches are checked. The batches, their
/// order, the outcome and every error are those of a scan without it: a read error is
/// reported where the scan reaches that chunk, and a read ahead of a stop is discarded.
pub(crate) fn scan_batches(
    file: &File,
    path: &Path,
    end: u64,
    chunk: usize,
    validate: bool,
    on_batch: impl FnMut(&BatchRef<'_>) -> Result<()>,
) -> Result<ScanOutcome> {
    let chunk = chunk.max(RECORD_BATCH_OVERHEAD);
    let scan = Scan {
        file,
        path,
        end,
        chunk,
        validate,
    };
    if end <= (READ_AHEAD_MIN_CHUNKS * chunk) as u64 {
        return scan.run(&mut Reads::Inline, on_batch);
    }
    std::thread::scope(|scope| {
        let (requests, to_reader) = mpsc::channel::<(u64, Vec<u8>)>();
        let (from_reader, replies) = mpsc::channel();
        scope.spawn(move || {
            for (position, mut buf) in to_reader {
                let read = io::read_at_most(file, &mut buf, position);
                if from_reader.send((buf, read)).is_err() {
                    return;
                }
            }
        });
        scan.run(
            &mut Reads::Ahead {
                requests,
                replies,
                pending: None,
                spare: Vec::new(),
            },
            on_batch,
        )
        // Dropping `requests` here ends the reader's loop; the scope joins it.
    })
}

/// Scans of more chunks than this read ahead on a second thread.
const READ_AHEAD_MIN_CHUNKS: usize = 2;

/// The fixed parameters of one [`scan_batches`].
struct Scan<'a> {
    file: &'a File,
    path: &'a Path,
    end: u64,
    chunk: usize,
    validate: bool,
}

/// Where the chunks of a scan come from.
enum Reads {
    /// Read on the calling thread when needed.
    Inline,
    /// Read by the scan's reader thread, one chunk ahead.
    Ahead {
        requests: mpsc::Sender<(u64, Vec<u8>)>,
        replies: mpsc::Receiver<(Vec<u8>, std::io::Result<usize>)>,
        /// The position and length of the read in flight.
        pending: Option<(u64, usize)>,
        /// A buffer to send with the next request (the chunk before the current one).
        spare: Vec<u8>,
    },
}

impl Reads {
    /// Starts reading `len` bytes at `position` (the next [`Reads::fetch`]) when reading
    /// ahead, into the buffer of the chunk before the current one.
    fn prefetch(&mut self, position: u64, len: usize) {
        if let Reads::Ahead {
            requests,
            pending,
            spare,
            ..
        } = self
        {
            let mut buf = std::mem::take(spare);
            buf.resize(len, 0);
            // A send fails only if the reader is gone (it never exits early); the fetch then
            // reads inline.
            if requests.send((position, buf)).is_ok() {
                *pending = Some((position, len));
            }
        }
    }

    /// `len` bytes at `position` into `buf` (its previous contents are handed to the reader
    /// for the next prefetch); the bytes read, fewer only where the file ends.
    fn fetch(
        &mut self,
        file: &File,
        buf: &mut Vec<u8>,
        position: u64,
        len: usize,
    ) -> std::io::Result<usize> {
        if let Reads::Ahead {
            replies,
            pending,
            spare,
            ..
        } = self
            && *pending == Some((position, len))
        {
            *pending = None;
            if let Ok((filled, read)) = replies.recv() {
                *spare = std::mem::replace(buf, filled);
                return read;
            }
        }
        if buf.len() < len {
            buf.resize(len, 0);
        }
        io::read_at_most(file, &mut buf[..len], position)
    }
}

/// How the header walk of one chunk ended: what follows its whole batches.
enum ChunkEnd {
    /// The next chunk starts after them; `grow_to` is the size of a batch that crosses this
    /// chunk's end and needs a longer read.
    More { grow_to: Option<usize> },
    /// A partial tail starts after them.
    PartialTail,
    /// A corrupt header follows them.
    Corrupt(seglog_records::Error),
}

impl Scan<'_> {
    fn run(
        &self,
        reads: &mut Reads,
        mut on_batch: impl FnMut(&BatchRef<'_>) -> Result<()>,
    ) -> Result<ScanOutcome> {
        let (end, chunk) = (self.end, self.chunk);
        let mut buf = Vec::new();
        let mut sizes = Vec::new();
        let mut position = 0u64;
        let mut want = usize::try_from(end).unwrap_or(usize::MAX).min(chunk);
        loop {
            if position == end {
                return Ok(ScanOutcome {
                    valid_bytes: position,
                    stop: None,
                });
            }
            let got = reads
                .fetch(self.file, &mut buf, position, want)
                .map_err(Error::io(IoOp::Read, self.path))?;
            if got < want {
                return Err(Error::Io {
                    op: IoOp::Read,
                    path: self.path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file is shorter than the segment size",
                    ),
                });
            }
            let window = &buf[..got];
            let chunk_end = self.walk_headers(window, position, &mut sizes);
            let whole: usize = sizes.iter().sum();
            let next = position + whole as u64;
            if let ChunkEnd::More { grow_to } = chunk_end {
                // Fill the next buffer from `next`, with room for a batch larger than a chunk.
                want = usize::try_from(end - next)
                    .unwrap_or(usize::MAX)
                    .min(chunk.max(grow_to.unwrap_or(0)));
                if next < end {
                    reads.prefetch(next, want);
                }
            }
            if let Some(stop) = self.check_batches(window, position, &sizes, &mut on_batch)? {
                return Ok(stop);
            }
            match chunk_end {
                ChunkEnd::More { .. } => position = next,
                ChunkEnd::PartialTail => {
                    return Ok(ScanOutcome {
                        valid_bytes: next,
                        stop: Some(TruncationReason::PartialTail { position: next }),
                    });
                }
                ChunkEnd::Corrupt(e) => return corrupt_outcome(self.path, next, e),
            }
        }
    }

    /// The sizes of the whole batches at the start of `window` (the file from `position`), by
    /// their headers alone, into `sizes`, and what follows them.
    fn walk_headers(&self, window: &[u8], position: u64, sizes: &mut Vec<usize>) -> ChunkEnd {
        sizes.clear();
        let window_is_last = position + window.len() as u64 == self.end;
        let mut at = 0usize;
        while at < window.len() {
            let batch_position = position + at as u64;
            match BatchHeader::parse(&window[at..], batch_position, self.end - batch_position) {
                Ok(HeaderRead::Batch(header)) => {
                    let size = header.total_size as usize;
                    if size > window.len() - at {
                        // The batch crosses the window end (it fits in the file: the header
                        // parse checked `end`): re-read from here, with room for all of it.
                        return ChunkEnd::More {
                            grow_to: Some(size),
                        };
                    }
                    sizes.push(size);
                    at += size;
                }
                Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => {
                    return ChunkEnd::PartialTail;
                }
                // The header crosses the window end: re-read from here.
                Err(seglog_records::Error::ShortPrefix { .. }) if !window_is_last => break,
                Err(e) => return ChunkEnd::Corrupt(e),
            }
        }
        ChunkEnd::More { grow_to: None }
    }

    /// Checks and hands over the batches of `sizes` at the start of `window` (the file from
    /// `position`); the outcome when one of them stops the scan.
    fn check_batches(
        &self,
        window: &[u8],
        position: u64,
        sizes: &[usize],
        on_batch: &mut impl FnMut(&BatchRef<'_>) -> Result<()>,
    ) -> Result<Option<ScanOutcome>> {
        let mut at = 0usize;
        for &size in sizes {
            let batch_position = position + at as u64;
            let batch_bytes = &window[at..at + size];
            let batch = match BatchRef::parse(batch_bytes, batch_position) {
                Ok(batch) => batch,
                Err(e) => return corrupt_outcome(self.path, batch_position, e).map(Some),
            };
            if self.validate
                && let Err(e) = batch.ensure_valid()
            {
                return corrupt_outcome(self.path, batch_position, e).map(Some);
            }
            match on_batch(&batch) {
                Ok(()) => {}
                // The callback rejects this batch as corrupt: stop before it.
                Err(Error::Corrupt { position, kind, .. }) => {
                    return Ok(Some(ScanOutcome {
                        valid_bytes: position,
                        stop: Some(TruncationReason::Corrupt { position, kind }),
                    }));
                }
                Err(e) => return Err(e),
            }
            at += size;
        }
        Ok(None)
    }
}

fn corrupt_outcome(path: &Path, position: u64, e: seglog_records::Error) -> Result<ScanOutcome> {
    match Error::from_records(path, e) {
        Error::Corrupt { kind, .. } => Ok(ScanOutcome {
            valid_bytes: position,
            stop: Some(TruncationReason::Corrupt { position, kind }),
        }),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog_records::{BatchBuilder, Compression};

    /// A log of batches of varied sizes (some larger than the small chunks below), then
    /// `tail` bytes.
    fn log(tail: &[u8]) -> (Vec<u8>, Vec<u64>) {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for i in 0..30i64 {
            let mut builder = BatchBuilder::new(i * 10).compression(if i % 4 == 3 {
                Compression::Gzip
            } else {
                Compression::None
            });
            for j in 0..(1 + i % 10) {
                let value = vec![i as u8; (i as usize * 37) % 700];
                builder.append(1_000 + i * 10 + j, None, Some(&value), &[]);
            }
            bytes.extend_from_slice(&builder.build().unwrap());
            ends.push(bytes.len() as u64);
        }
        bytes.extend_from_slice(tail);
        (bytes, ends)
    }

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File, Arc<Path>) {
        let dir = tempfile::tempdir().unwrap();
        let path: Arc<Path> = Arc::from(dir.path().join("00000000000000000000.log"));
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        (dir, file, path)
    }

    #[test]
    fn scans_across_chunk_boundaries_of_every_size() {
        let mut torn = vec![0, 0, 0, 0, 0, 0, 1, 44, 0, 0, 0, 200];
        torn.extend([7u8; 30]);
        let (bytes, ends) = log(&torn);
        let clean_end = *ends.last().unwrap();
        let (_dir, file, path) = file_with(&bytes);
        for chunk in [61, 62, 100, 333, 1000, 4096, SCAN_CHUNK] {
            let mut seen = Vec::new();
            let outcome = scan_batches(&file, &path, bytes.len() as u64, chunk, true, |b| {
                seen.push(b.header().end_position());
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, ends, "chunk {chunk}");
            assert_eq!(outcome.valid_bytes, clean_end);
            assert_eq!(
                outcome.stop,
                Some(TruncationReason::PartialTail {
                    position: clean_end
                })
            );
        }
    }

    #[test]
    fn scan_stops_at_a_bad_crc_and_reports_it() {
        let (mut bytes, ends) = log(&[]);
        let at = ends[11] as usize + 40; // inside batch 12, covered by its CRC
        bytes[at] ^= 1;
        let (_dir, file, path) = file_with(&bytes);
        for chunk in [61, 500, SCAN_CHUNK] {
            let mut count = 0;
            let outcome = scan_batches(&file, &path, bytes.len() as u64, chunk, true, |_| {
                count += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(count, 12);
            assert_eq!(outcome.valid_bytes, ends[11]);
            assert!(matches!(
                outcome.stop,
                Some(TruncationReason::Corrupt {
                    kind: crate::CorruptKind::Batch(
                        seglog_records::CorruptKind::CrcMismatch { .. }
                    ),
                    ..
                })
            ));
            // Without validation every batch is handed over.
            let mut count = 0;
            scan_batches(&file, &path, bytes.len() as u64, chunk, false, |_| {
                count += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(count, 30);
        }
    }

    /// What a scan saw and how it ended, read ahead or not.
    fn scan_both_ways(file: &File, path: &Path, end: u64, chunk: usize) -> [(Vec<u64>, String); 2] {
        let run = |reads: &mut Option<Reads>| {
            let mut seen = Vec::new();
            let on_batch = |b: &BatchRef<'_>| {
                seen.push(b.header().position);
                Ok(())
            };
            let outcome = match reads {
                Some(reads) => Scan {
                    file,
                    path,
                    end,
                    chunk: chunk.max(RECORD_BATCH_OVERHEAD),
                    validate: true,
                }
                .run(reads, on_batch),
                None => scan_batches(file, path, end, chunk, true, on_batch),
            };
            (seen, format!("{outcome:?}"))
        };
        [run(&mut Some(Reads::Inline)), run(&mut None)]
    }

    #[test]
    fn reading_ahead_sees_what_an_inline_scan_sees() {
        let (clean, ends) = log(&[9, 9, 9]);
        let mut starts = vec![0];
        starts.extend(ends.iter().copied());
        // Every batch damaged in its CRC-covered bytes, in its length field, cut short; and
        // a file shorter than the scan's end.
        let mut cases: Vec<(Vec<u8>, u64)> = vec![(clean.clone(), clean.len() as u64)];
        for w in starts.windows(2) {
            let (start, stop) = (w[0] as usize, w[1] as usize);
            let mut crc = clean.clone();
            crc[stop - 1] ^= 0x40;
            cases.push((crc.clone(), clean.len() as u64));
            let mut length = clean.clone();
            length[start + 11] ^= 0x7f;
            cases.push((length, clean.len() as u64));
            cases.push((clean[..stop - 3].to_vec(), (stop - 3) as u64));
        }
        cases.push((clean[..clean.len() / 2].to_vec(), clean.len() as u64));
        for (bytes, end) in cases {
            let (_dir, file, path) = file_with(&bytes);
            for chunk in [61, 62, 100, 333, 1000, 4096] {
                let [inline, ahead] = scan_both_ways(&file, &path, end, chunk);
                assert_eq!(ahead, inline, "chunk {chunk}, end {end}");
            }
        }
    }

    #[test]
    fn header_walk_matches_the_batches_with_any_chunk() {
        let (bytes, ends) = log(&[1, 2, 3]);
        let (_dir, file, path) = file_with(&bytes);
        for chunk in [61, 64, 700, HEADER_CHUNK] {
            let mut walker =
                HeaderWalker::with_chunk(&file, Arc::clone(&path), 0, bytes.len() as u64, chunk);
            let got: Vec<u64> = walker.by_ref().map(|h| h.unwrap().end_position()).collect();
            assert_eq!(got, ends, "chunk {chunk}");
            let clean_end = *ends.last().unwrap();
            assert_eq!(
                walker.end_state(),
                WalkEnd::PartialTail {
                    position: clean_end
                }
            );
            // From the middle, up to a batch end: a clean end.
            let mut walker =
                HeaderWalker::with_chunk(&file, Arc::clone(&path), ends[4], ends[9], chunk);
            assert_eq!(walker.by_ref().count(), 5);
            assert_eq!(walker.end_state(), WalkEnd::Clean);
        }
    }

    #[test]
    fn a_walk_past_the_file_end_is_an_io_error_not_a_panic() {
        let (bytes, _) = log(&[]);
        let (_dir, file, path) = file_with(&bytes);
        let walker = HeaderWalker::new(&file, path, 0, bytes.len() as u64 + 1000);
        let last = walker.last().unwrap();
        assert!(
            matches!(last, Err(Error::Io { op: IoOp::Read, .. })),
            "{last:?}"
        );
    }
}
