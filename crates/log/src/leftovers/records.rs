//! Reading `.log` files for the leftovers rule: batches by path (never through a `Segment`:
//! an overflowed segment, which a split replaces, does not open as one), each whole and
//! CRC-checked, and their records as the checks compare them (offset, hashed key and content).
//! The files come from a [`Files`] source: the directory ([`Disk`]) or bytes held in memory
//! ([`Memory`], for [`crate::decide_leftovers`]).

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use seglog_records::{BatchHeader, HeaderRead, OwnedBatch};

use super::SwapProblem;

/// One record as the checks compare it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rec {
    pub(super) offset: i64,
    /// `None` for a record without a key.
    pub(super) key: Option<[u64; 2]>,
    /// The value (with whether it is null), and the key, hashed together.
    pub(super) content: [u64; 2],
    pub(super) control: bool,
    /// A data record without a value.
    pub(super) tombstone: bool,
    /// The delete horizon its batch carries (KIP-534): a cleaner round stamps it, and once it
    /// passed, the tombstones and markers of the batch may go.
    pub(super) delete_horizon_ms: Option<i64>,
}

impl Rec {
    /// The same record at the same offset (a rewritten batch may carry another horizon).
    pub(super) fn same_as(&self, other: &Rec) -> bool {
        (self.offset, self.key, self.content, self.control)
            == (other.offset, other.key, other.content, other.control)
    }
}

fn hash128(parts: &[Option<&[u8]>]) -> [u64; 2] {
    let word = |prefix: u8| {
        let mut hasher = DefaultHasher::new();
        hasher.write_u8(prefix);
        for part in parts {
            match part {
                Some(bytes) => {
                    hasher.write_u8(1);
                    hasher.write_usize(bytes.len());
                    hasher.write(bytes);
                }
                None => hasher.write_u8(0),
            }
        }
        hasher.finish()
    };
    [word(0x3c), word(0xd1)]
}

/// Where the rule reads the files it names.
pub(super) trait Files {
    /// The file at `path` for positional reads, and its length.
    fn open(&self, path: &Path) -> io::Result<(Box<dyn ReadAt + '_>, u64)>;
    /// Whether a file exists at `path`.
    fn exists(&self, path: &Path) -> bool;
}

/// Positional reads of one file.
pub(super) trait ReadAt {
    /// Fills `buf` from byte `position` (`UnexpectedEof` past the end).
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()>;
}

/// The directory's files (a regular file only: a FIFO or a directory under a segment name is
/// unreadable).
pub(super) struct Disk;

impl ReadAt for std::fs::File {
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, position)
    }
}

impl Files for Disk {
    fn open(&self, path: &Path) -> io::Result<(Box<dyn ReadAt + '_>, u64)> {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        Ok((Box::new(file), meta.len()))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// Files held in memory, by path.
pub(super) struct Memory<'a>(pub(super) HashMap<PathBuf, &'a [u8]>);

impl ReadAt for &[u8] {
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        let bytes = usize::try_from(position)
            .ok()
            .and_then(|at| self.get(at..at.checked_add(buf.len())?))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

impl Files for Memory<'_> {
    fn open(&self, path: &Path) -> io::Result<(Box<dyn ReadAt + '_>, u64)> {
        let bytes = *self
            .0
            .get(path)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok((Box::new(bytes), bytes.len() as u64))
    }

    fn exists(&self, path: &Path) -> bool {
        self.0.contains_key(path)
    }
}

/// The batches of one `.log` file, from its start: each whole and CRC-checked, and the walk
/// must end exactly at the end of the file.
pub(super) struct FileBatches<'f> {
    path: PathBuf,
    file: Box<dyn ReadAt + 'f>,
    size: u64,
    position: u64,
}

/// The most bytes a batch header needs (a v2 header; older ones are shorter).
const HEADER_PREFIX: u64 = seglog_records::RECORD_BATCH_OVERHEAD as u64;

impl<'f> FileBatches<'f> {
    pub(super) fn open(
        files: &'f dyn Files,
        path: PathBuf,
    ) -> std::result::Result<FileBatches<'f>, SwapProblem> {
        let (file, size) = files.open(&path).map_err(|e| SwapProblem::Unreadable {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        Ok(FileBatches {
            path,
            file,
            size,
            position: 0,
        })
    }

    pub(super) fn damaged(&self, position: u64, detail: String) -> SwapProblem {
        SwapProblem::Damaged {
            path: self.path.clone(),
            position,
            detail,
        }
    }

    /// The next batch, `None` at the end of the file.
    pub(super) fn next(&mut self) -> std::result::Result<Option<OwnedBatch>, SwapProblem> {
        if self.position >= self.size {
            return Ok(None);
        }
        let remaining = self.size - self.position;
        let mut prefix = vec![0u8; usize::try_from(remaining.min(HEADER_PREFIX)).unwrap_or(0)];
        self.file
            .read_exact_at(&mut prefix, self.position)
            .map_err(|e| self.damaged(self.position, e.to_string()))?;
        let header = match BatchHeader::parse(&prefix, self.position, remaining) {
            Ok(HeaderRead::Batch(header)) => header,
            Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => {
                return Err(self.damaged(self.position, "a torn batch at the end".into()));
            }
            Err(e) => return Err(self.damaged(self.position, e.to_string())),
        };
        let mut bytes = vec![0u8; header.total_size as usize];
        self.file
            .read_exact_at(&mut bytes, self.position)
            .map_err(|e| self.damaged(self.position, e.to_string()))?;
        let batch = OwnedBatch::parse(bytes::Bytes::from(bytes), self.position)
            .map_err(|e| self.damaged(self.position, e.to_string()))?;
        self.position += u64::from(header.total_size);
        Ok(Some(batch))
    }

    /// The offset after the last whole batch (headers only; a damaged tail ends the walk).
    pub(super) fn next_offset(mut self, base_offset: i64) -> i64 {
        let mut next = base_offset;
        while self.position < self.size {
            let remaining = self.size - self.position;
            let mut prefix = vec![0u8; usize::try_from(remaining.min(HEADER_PREFIX)).unwrap_or(0)];
            if self.file.read_exact_at(&mut prefix, self.position).is_err() {
                break;
            }
            match BatchHeader::parse(&prefix, self.position, remaining) {
                Ok(HeaderRead::Batch(header)) => {
                    next = header.next_offset();
                    self.position += u64::from(header.total_size);
                }
                _ => break,
            }
        }
        next
    }
}

/// The records of a series of `.log` files, in offset order, batch by batch (every batch's
/// CRC checked, each walk ending exactly at its file's end).
pub(super) struct Records<'f> {
    source: &'f dyn Files,
    files: VecDeque<PathBuf>,
    current: Option<FileBatches<'f>>,
    pending: VecDeque<Rec>,
    /// Offsets below this are skipped (before the range, or served by an earlier file).
    from: i64,
}

impl<'f> Records<'f> {
    pub(super) fn new(source: &'f dyn Files, files: Vec<PathBuf>, from: i64) -> Records<'f> {
        Records {
            source,
            files: files.into(),
            current: None,
            pending: VecDeque::new(),
            from,
        }
    }

    pub(super) fn next(&mut self) -> std::result::Result<Option<Rec>, SwapProblem> {
        loop {
            if let Some(rec) = self.pending.pop_front() {
                // Offsets ascend across the series: what an earlier file served is skipped.
                if rec.offset < self.from {
                    continue;
                }
                self.from = rec.offset.saturating_add(1);
                return Ok(Some(rec));
            }
            if self.current.is_none() {
                let Some(path) = self.files.pop_front() else {
                    return Ok(None);
                };
                self.current = Some(FileBatches::open(self.source, path)?);
            }
            let Some(file) = self.current.as_mut() else {
                continue;
            };
            let Some(batch) = file.next()? else {
                self.current = None;
                continue;
            };
            let position = batch.header().position;
            batch
                .ensure_valid()
                .map_err(|e| file.damaged(position, e.to_string()))?;
            let control = batch.header().is_control;
            let delete_horizon_ms = batch.header().delete_horizon_ms();
            for record in batch.records(crate::DEFAULT_MAX_DECOMPRESSED_BYTES) {
                let record = record.map_err(|e| file.damaged(position, e.to_string()))?;
                self.pending.push_back(Rec {
                    offset: record.offset,
                    key: record.key.as_deref().map(|k| hash128(&[Some(k)])),
                    content: hash128(&[record.key.as_deref(), record.value.as_deref()]),
                    control,
                    tombstone: !control && record.value.is_none(),
                    delete_horizon_ms,
                });
            }
        }
    }
}
