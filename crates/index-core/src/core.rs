//! The lifecycle both indexes share (Kafka's `AbstractIndex`): open or create and preallocate,
//! map, trim, resize, truncate, flush, rename, close, delete.
//!
//! Readers take no lock (Kafka's remap lock, KAFKA-19390, is replaced by grace periods: see
//! [`crate::grace`] and [`Slots`]). Locks, in acquisition order:
//! * the writer mutex inside [`Slots`]: appends, truncations, resizes and trims, one at a
//!   time. Truncations and resizes wait for a grace period under it (for the readers that
//!   began before them, which are short); appends never wait for readers and readers never
//!   wait for anything.
//! * `path`, only ever held for a clone, a rename, or (by a mapped file's resize and flush)
//!   to reopen the file by its current name.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::marker::PhantomData;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::entry::{IndexEntry, relative_offset};
use crate::error::Error;
use crate::mmap::{Backing, FileBuffer, HeapBuffer, Push, Slots};
use crate::sanity::Finding;
use crate::search::{Column, ceiling_slot, floor_slot};
use crate::sync::{Mutex, lock};

/// How the index was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A read-write mapped file (owned exclusively by the caller).
    File,
    /// A read-only copy of a file in memory (never mapped): mutating calls fail with
    /// `Error::ReadOnly`.
    ReadOnly,
    /// A heap buffer; the path is used for error messages only.
    Memory,
}

pub(crate) struct IndexCore<E> {
    /// Shared with a mapped file's buffer, which reopens the file by it.
    path: Arc<Mutex<PathBuf>>,
    base_offset: i64,
    max_index_bytes: u32,
    mode: Mode,
    slots: Slots,
    entry: PhantomData<fn() -> E>,
}

impl<E: IndexEntry> IndexCore<E> {
    /// Kafka's `AbstractIndex` constructor for a writable index: maps the file read-write. The
    /// caller owns the file exclusively (see `OffsetIndex::open`).
    pub(crate) fn open(
        path: PathBuf,
        base_offset: i64,
        max_index_bytes: u32,
    ) -> Result<Self, Error> {
        // Never through a symlink (`O_NOFOLLOW`): a writable index is trimmed and rewritten
        // in place, which must not reach another log's file.
        let existing = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(crate::mmap::NO_FOLLOW)
            .open(&path);
        let (file, len, published) = match existing {
            Ok(file) => {
                // Existing file: leave the length alone, map all of it; every whole entry counts
                // (Kafka does not look for a zero tail; `sanity_check` does).
                let len = file_len(&file, &path)?;
                // A broker's (or a crashed run's) preallocated index is sparse: reserve its
                // blocks now, so a full disk is an error here and never a fault on a store.
                crate::mmap::allocate(&file, len)
                    .map_err(|source| io_error(&path, "preallocate", source))?;
                (file, len, len / E::SIZE)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let len = preallocated_len::<E>(&path, max_index_bytes)?;
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|source| io_error(&path, "create", source))?;
                file.set_len(len as u64)
                    .map_err(|source| io_error(&path, "preallocate", source))?;
                crate::mmap::allocate(&file, len)
                    .map_err(|source| io_error(&path, "preallocate", source))?;
                (file, len, 0)
            }
            Err(source) => return Err(io_error(&path, "open", source)),
        };
        let shared_path = Arc::new(Mutex::new(path.clone()));
        let buffer = FileBuffer::map(file, Arc::clone(&shared_path), len, published * E::SIZE)
            .map_err(|source| io_error(&path, "map", source))?;
        Ok(Self::with_backing(
            shared_path,
            base_offset,
            max_index_bytes,
            Mode::File,
            Backing::File(buffer),
            published,
        ))
    }

    /// A read-only copy of an existing file, read with `read(2)` into memory, never mapped:
    /// another process may own the file and trim or truncate it at any time, and a mapped
    /// page past the new end would raise `SIGBUS`. A file that shrinks or grows while it is
    /// read gives whatever `read` returned up to the end of file or the length seen at open
    /// (the sanity checks judge it like any other file).
    pub(crate) fn open_read_only(path: PathBuf, base_offset: i64) -> Result<Self, Error> {
        let file = File::open(&path).map_err(|source| io_error(&path, "open", source))?;
        let len = file_len(&file, &path)?;
        let mut bytes = Vec::with_capacity(len);
        (&file)
            .take(len as u64)
            .read_to_end(&mut bytes)
            .map_err(|source| io_error(&path, "read", source))?;
        let len = bytes.len();
        let max = u32::try_from(len).unwrap_or(u32::MAX);
        Ok(Self::with_backing(
            Arc::new(Mutex::new(path)),
            base_offset,
            max,
            Mode::ReadOnly,
            Backing::Heap(HeapBuffer::read_only(bytes)),
            len / E::SIZE,
        ))
    }

    /// A heap-backed index of `floor(max_index_bytes / SIZE)` slots (none if smaller than one
    /// entry, so every append reports full).
    pub(crate) fn in_memory(path: PathBuf, base_offset: i64, max_index_bytes: u32) -> Self {
        let len = whole_entries::<E>(u64::from(max_index_bytes));
        let len = usize::try_from(len).unwrap_or(0);
        #[cfg(not(loom))]
        let backing = Backing::Heap(HeapBuffer::zeroed(len));
        // Under loom, the same public type runs over a buffer whose every slot is tracked.
        #[cfg(loom)]
        let backing = Backing::Loom(crate::mmap::LoomBuffer::zeroed(len, E::SIZE));
        let path = Arc::new(Mutex::new(path));
        Self::with_backing(path, base_offset, max_index_bytes, Mode::Memory, backing, 0)
    }

    fn with_backing(
        path: Arc<Mutex<PathBuf>>,
        base_offset: i64,
        max_index_bytes: u32,
        mode: Mode,
        backing: Backing,
        published: usize,
    ) -> Self {
        IndexCore {
            path,
            base_offset,
            max_index_bytes,
            mode,
            slots: Slots::new(backing, E::SIZE, published),
            entry: PhantomData,
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        lock(&self.path).clone()
    }

    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub(crate) fn entries(&self) -> usize {
        self.slots.published()
    }

    pub(crate) fn max_entries(&self) -> usize {
        self.slots.capacity()
    }

    pub(crate) fn file_len(&self) -> u64 {
        self.slots.byte_len() as u64
    }

    /// Calls `f` with the published entries' bytes (no lock: see [`Slots::read`]).
    #[inline]
    pub(crate) fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        self.slots.read(f)
    }

    /// Calls `f` with the published entries' bytes and the file length in bytes (read
    /// separately: a resize in between may change the length).
    pub(crate) fn read_with_len<R>(&self, f: impl FnOnce(&[u8], u64) -> R) -> R {
        let len = self.slots.byte_len() as u64;
        self.slots.read(|bytes| f(bytes, len))
    }

    /// Published entry `n` (0-based), or `None` past the end.
    pub(crate) fn entry(&self, n: usize) -> Option<E> {
        self.read(|bytes| (n < bytes.len() / E::SIZE).then(|| E::read(bytes, n)))
    }

    /// The last published entry whose `column` is `<= target` ([`floor_slot`]).
    #[inline]
    pub(crate) fn floor(&self, column: Column, target: i64) -> Option<E> {
        self.read(|bytes| floor_slot::<E>(bytes, column, target).map(|slot| E::read(bytes, slot)))
    }

    /// The first published entry whose `column` is `>= target` ([`ceiling_slot`]).
    pub(crate) fn ceiling(&self, column: Column, target: i64) -> Option<E> {
        self.read(|bytes| ceiling_slot::<E>(bytes, column, target).map(|slot| E::read(bytes, slot)))
    }

    /// `offset - base_offset` as stored in an entry; `OffsetOverflow` outside `0..=i32::MAX`.
    pub(crate) fn relative_offset(&self, offset: i64) -> Result<i32, Error> {
        relative_offset(self.base_offset, offset).ok_or_else(|| Error::OffsetOverflow {
            path: self.path(),
            base_offset: self.base_offset,
            offset,
        })
    }

    /// Runs the sanity rule `check` over the published entries' bytes and the file length,
    /// turning a finding into `Corrupt` with this index's path.
    pub(crate) fn check(
        &self,
        check: impl FnOnce(&[u8], u64) -> Result<(), Finding>,
    ) -> Result<(), Error> {
        self.read_with_len(check)
            .map_err(|(position, kind)| Error::Corrupt {
                path: self.path(),
                position,
                kind,
            })
    }

    /// Appends the entry `decide` returns (see [`Slots::push_with`]); `IndexFull` when the
    /// buffer has no whole slot left.
    pub(crate) fn push_with<B: AsRef<[u8]>>(
        &self,
        decide: impl FnOnce(&[u8], usize) -> Result<Option<B>, Error>,
    ) -> Result<(), Error> {
        self.ensure_writable()?;
        let slots = &self.slots;
        match slots.push_with(decide)? {
            Push::Appended | Push::Skipped => Ok(()),
            Push::NoRoom => Err(Error::IndexFull {
                path: self.path(),
                entries: slots.published(),
            }),
            Push::ReadOnly => Err(Error::ReadOnly { path: self.path() }),
        }
    }

    /// Keeps the first `keep(published bytes)` entries.
    pub(crate) fn truncate_with(&self, keep: impl FnOnce(&[u8]) -> usize) -> Result<(), Error> {
        self.ensure_writable()?;
        self.slots.truncate_with(keep);
        Ok(())
    }

    /// Kafka's `truncateTo`: keeps the entries before the first one whose `column` is
    /// `>= target` (all of them when there is none).
    pub(crate) fn truncate_to_ceiling(&self, column: Column, target: i64) -> Result<(), Error> {
        self.truncate_with(|bytes| {
            ceiling_slot::<E>(bytes, column, target).unwrap_or(bytes.len() / E::SIZE)
        })
    }

    /// Kafka's `resize`: round down to whole entries; `false` if the length is unchanged.
    pub(crate) fn resize(&self, new_len: u64) -> Result<bool, Error> {
        self.resize_with(|_| new_len)
    }

    /// Kafka's `trimToValidSize`: `resize(entries * SIZE)`, computed under the same lock.
    pub(crate) fn trim_to_valid_size(&self) -> Result<(), Error> {
        self.resize_with(|published| (published * E::SIZE) as u64)
            .map(drop)
    }

    /// Kafka's `reset`: drop every entry, then `resize(max_index_bytes)` (two steps: a reader
    /// in between sees no entries in the old buffer).
    pub(crate) fn reset(&self) -> Result<(), Error> {
        self.ensure_writable()?;
        self.slots.truncate_with(|_| 0);
        self.resize_with(|_| u64::from(self.max_index_bytes))
            .map(drop)
    }

    /// Resizes to `new_len(published entries)`, decided and done under the writer mutex (no
    /// append in between).
    fn resize_with(&self, new_len: impl FnOnce(usize) -> u64) -> Result<bool, Error> {
        self.ensure_writable()?;
        self.slots.resize(
            |published, byte_len| {
                let new_len = new_len(published);
                let invalid = || Error::InvalidSize {
                    path: self.path(),
                    size: new_len,
                    entry_size: E::SIZE,
                };
                let rounded =
                    usize::try_from(whole_entries::<E>(new_len)).map_err(|_| invalid())?;
                if rounded == byte_len {
                    return Ok(None);
                }
                if rounded < published * E::SIZE {
                    return Err(invalid());
                }
                Ok(Some(rounded))
            },
            |source| io_error(&self.path(), "resize", source),
        )
    }

    /// msync (a no-op in memory and read-only).
    pub(crate) fn flush(&self) -> Result<(), Error> {
        if self.mode != Mode::File {
            return Ok(());
        }
        self.slots
            .flush()
            .map_err(|source| io_error(&self.path(), "flush", source))
    }

    /// Renames the file. Like Kafka, the new path is kept even when the rename fails, and the
    /// parent directory is not fsynced (the segment layer does that).
    pub(crate) fn rename_to(&self, new_path: PathBuf) -> Result<(), Error> {
        self.ensure_writable()?;
        let mut path = lock(&self.path);
        let result = match self.mode {
            Mode::File => fs::rename(&*path, &new_path),
            Mode::ReadOnly | Mode::Memory => Ok(()),
        };
        let old = std::mem::replace(&mut *path, new_path);
        result.map_err(|source| io_error(&old, "rename", source))
    }

    /// Trims (a writable file) and unmaps.
    pub(crate) fn close(self) -> Result<(), Error> {
        if self.mode == Mode::File {
            self.trim_to_valid_size()?;
        }
        Ok(())
    }

    /// Unmaps, then removes the file (a missing file is fine).
    pub(crate) fn delete(self) -> Result<(), Error> {
        self.ensure_writable()?;
        let IndexCore {
            path, mode, slots, ..
        } = self;
        drop(slots);
        let path = lock(&path).clone();
        if mode != Mode::File {
            return Ok(());
        }
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io_error(&path, "delete", source)),
        }
    }

    pub(crate) fn ensure_writable(&self) -> Result<(), Error> {
        if self.mode == Mode::ReadOnly {
            return Err(Error::ReadOnly { path: self.path() });
        }
        Ok(())
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.mode == Mode::ReadOnly
    }
}

/// `len` rounded down to whole entries.
fn whole_entries<E: IndexEntry>(len: u64) -> u64 {
    len / E::SIZE as u64 * E::SIZE as u64
}

fn preallocated_len<E: IndexEntry>(path: &Path, max_index_bytes: u32) -> Result<usize, Error> {
    let len = whole_entries::<E>(u64::from(max_index_bytes));
    match usize::try_from(len) {
        Ok(len) if len > 0 => Ok(len),
        _ => Err(Error::InvalidSize {
            path: path.to_path_buf(),
            size: u64::from(max_index_bytes),
            entry_size: E::SIZE,
        }),
    }
}

fn file_len(file: &File, path: &Path) -> Result<usize, Error> {
    let len = file
        .metadata()
        .map_err(|source| io_error(path, "stat", source))?
        .len();
    usize::try_from(len).map_err(|_| Error::InvalidSize {
        path: path.to_path_buf(),
        size: len,
        entry_size: 0,
    })
}

pub(crate) fn io_error(path: &Path, op: &'static str, source: io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}
