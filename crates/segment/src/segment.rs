//! [`Segment`]: the shared, read side of a segment, and its file lifecycle (flush, rename,
//! delete, close). Reads live in `read.rs`, opening in `open.rs`, recovery in `recover.rs`,
//! the writer in `active.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use seglog_index_core::{OffsetIndex, TimeIndex, TimestampOffset};

use crate::cache::SegmentCache;
use crate::error::{Error, IoOp};
use crate::file_name::{FileKind, FileType, TempSuffix, file_path};
use crate::io::LogFile;
use crate::sync::{
    AtomicBool, MaxTimestampCell, Mutex, Ordering, PublishedSize, RwLock, lock, read, write,
};
use crate::{Result, SegmentConfig};

/// How a segment's files are opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Kafka's behaviour plus the strict index policy: indexes are mapped read-write, a
    /// missing or inconsistent index is rebuilt on disk (which recovers the segment), and the
    /// segment can become active again ([`crate::ActiveSegment::resume`]).
    ReadWrite,
    /// Never writes to disk and never maps a file: indexes are read into memory (another
    /// process may own and trim them; see `OffsetIndex::open_read_only`), or rebuilt in memory
    /// when missing or broken; recovery computes the valid length in memory and reads stop
    /// there.
    ReadOnly,
}

/// The shared read side of one segment: `Send + Sync`, held in an `Arc` by the log, by
/// readers, and by the one [`crate::ActiveSegment`] writing it (if any).
///
/// Readers see a published size: the writer stores it (Release) after the bytes of an
/// append are written, readers load it (Acquire) and never read past it. The max timestamp
/// and its offset are one value under one lock (KAFKA-12981). No reader ever waits for an
/// fsync.
///
/// With a [`SegmentCache`] in its config, a sealed segment's files (the `.log` descriptor and
/// both index maps) are closed when the cache evicts it and reopened on next use; its metadata
/// stays in memory. A call holds the files it uses for its duration, and a
/// [`crate::FileSlice`] holds its own handle, so nothing is closed under a reader.
#[derive(Debug)]
pub struct Segment {
    pub(crate) base_offset: i64,
    /// Shared by the segments a load defers (issue 28: no path per segment).
    pub(crate) dir: Arc<Path>,
    /// Shared by the segments a load defers (issue 28: 64 bytes per segment otherwise).
    pub(crate) config: Arc<SegmentConfig>,
    pub(crate) mode: OpenMode,
    /// The current temporary suffix and the `.log` path it gives.
    names: Mutex<Names>,
    /// The size readers may see (bytes of whole batches).
    pub(crate) size: PublishedSize,
    /// The open files, or `None` while the cache has them closed (see [`SegmentCache`]).
    files: RwLock<Option<Files>>,
    /// Serializes reopening the files (eviction does not take it).
    reopen: Mutex<()>,
    /// This segment, for admitting it to the cache when its files are reopened.
    me: Weak<Segment>,
    /// `(offset, time)` index entries when the cache closed the files (they do not change
    /// while closed).
    closed_entries: Mutex<(usize, usize)>,
    /// The segment is in its cache's ring.
    in_ring: AtomicBool,
    /// The files were never opened: the first use opens them with these options (the open
    /// policy's checks, a rebuild if they fail), see [`Segment::deferred`].
    deferred: Mutex<Option<crate::SegmentOpenOptions>>,
    /// What that first open found.
    /// Boxed: most segments never have one, and every unopened segment carries this field
    /// (issue 28: the memory per unopened segment).
    deferred_report: Mutex<Option<Box<crate::OpenReport>>>,
    /// Set on every access to the files: the cache's second chance.
    referenced: AtomicBool,
    /// Indexes rebuilt in memory by a read-only open (or recovery), kept while the cache has
    /// the files closed and used again when they are reopened: only the `.log` descriptor is
    /// closed, so a read-only recovery of any number of segments runs in the cache's bound of
    /// descriptors (issue #28).
    memory_indexes: Mutex<Option<Arc<Indexes>>>,
    /// `(max timestamp, its offset)`, read and written as one value.
    max_timestamp: MaxTimestampCell,
    /// A writer (or a recovery) is attached.
    pub(crate) writer: AtomicBool,
    /// A write or fsync failed: no more writes until reopened.
    pub(crate) poisoned: AtomicBool,
    /// The `.txnindex` entries once read (`None` before the first use), see `txn_index.rs`.
    pub(crate) txns: Mutex<Option<Vec<crate::AbortedTxn>>>,
    /// The log checked the `.txnindex` against the segment's markers (or rebuilt it), see
    /// [`Segment::txn_index_checked`].
    pub(crate) txns_checked: AtomicBool,
}

#[derive(Debug, Clone)]
struct Names {
    suffix: Option<TempSuffix>,
    /// The `.log` path under that suffix, made on first use (readers' errors name it): an
    /// unopened segment keeps none (issue 28).
    log_path: Option<Arc<Path>>,
}

/// The open files of a segment: its `.log` and its two indexes. Readers clone it (two `Arc`s)
/// for the duration of a call; eviction only empties the segment's slot.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    pub(crate) log: Arc<LogFile>,
    pub(crate) indexes: Arc<Indexes>,
}

/// The two indexes of a segment (mapped read-write, or in memory).
#[derive(Debug)]
pub(crate) struct Indexes {
    pub(crate) offset: OffsetIndex,
    pub(crate) time: TimeIndex,
}

/// The "unknown" max timestamp after a recovery clears it (Kafka's `TimestampOffset.UNKNOWN`).
pub(crate) const UNKNOWN_MAX: TimestampOffset = TimestampOffset {
    timestamp_ms: -1,
    offset: -1,
};

impl Segment {
    /// Assembles a segment with open files (used by `open` and `create`). The caller admits
    /// it to the cache once it is ready ([`Segment::admit`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn assemble(
        dir: &Path,
        base_offset: i64,
        config: &SegmentConfig,
        mode: OpenMode,
        suffix: Option<TempSuffix>,
        log: LogFile,
        size: u64,
        indexes: Indexes,
    ) -> Arc<Segment> {
        let max = indexes.time.last_entry();
        Arc::new_cyclic(|me| Segment {
            base_offset,
            dir: Arc::from(dir),
            config: Arc::new(config.clone()),
            mode,
            names: Mutex::new(Names {
                suffix,
                log_path: Some(Arc::from(file_path(
                    dir,
                    base_offset,
                    FileKind::LOG.with_suffix(suffix),
                ))),
            }),
            size: PublishedSize::new(size),
            files: RwLock::new(Some(Files {
                log: Arc::new(log),
                indexes: Arc::new(indexes),
            })),
            reopen: Mutex::new(()),
            me: me.clone(),
            closed_entries: Mutex::new((0, 0)),
            in_ring: AtomicBool::new(false),
            deferred: Mutex::new(None),
            deferred_report: Mutex::new(None),
            referenced: AtomicBool::new(true),
            memory_indexes: Mutex::new(None),
            max_timestamp: MaxTimestampCell::new(max),
            writer: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            txns: Mutex::new(None),
            txns_checked: AtomicBool::new(false),
        })
    }

    /// Counts this segment's open files in its config's cache (which may evict others).
    pub(crate) fn admit(self: &Arc<Self>) {
        if let Some(cache) = &self.config.cache {
            cache.admit(self);
        }
    }

    /// The open files, reopening them when the cache closed them.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::Index`] when a file cannot be reopened.
    pub(crate) fn files(&self) -> Result<Files> {
        if let Some(files) = self.loaded_files() {
            return Ok(files);
        }
        let _reopen = lock(&self.reopen);
        if let Some(files) = self.loaded_files() {
            return Ok(files);
        }
        let files = {
            // Under the names lock, so a rename cannot move the files while they are opened.
            let names = lock(&self.names);
            let deferred = *lock(&self.deferred);
            match deferred {
                Some(options) => self.open_deferred(crate::SegmentOpenOptions {
                    // A rename while deferred moved the files.
                    suffix: names.suffix,
                    ..options
                })?,
                None => self.open_files(names.suffix)?,
            }
        };
        *write(&self.files) = Some(files.clone());
        drop(_reopen);
        if let Some(me) = self.me.upgrade() {
            me.admit();
        }
        Ok(files)
    }

    /// The files if they are open (marks them used), without reopening.
    fn loaded_files(&self) -> Option<Files> {
        let files = self.peek_files();
        if files.is_some() {
            self.mark_referenced();
        }
        files
    }

    /// Sets the second-chance bit; a load first, so that readers of a hot segment only share
    /// its cache line instead of writing it on every access.
    fn mark_referenced(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }

    /// `pick` of the open files (one `Arc` clone on the hot path), reopening them when closed.
    fn with_open<T>(&self, pick: impl Fn(&Files) -> T) -> Result<T> {
        if let Some(files) = &*self.files.read().unwrap_or_else(|p| p.into_inner()) {
            self.mark_referenced();
            return Ok(pick(files));
        }
        Ok(pick(&self.files()?))
    }

    /// The files if they are open, without marking them used.
    fn peek_files(&self) -> Option<Files> {
        read(&self.files).clone()
    }

    /// Opens the files of a segment whose metadata is known (a reopen after eviction): no
    /// checks, the indexes are taken as they are (they were checked, or rebuilt, when the
    /// segment was first opened, and trimmed before they were closed).
    fn open_files(&self, suffix: Option<TempSuffix>) -> Result<Files> {
        let path_of = |t| {
            file_path(
                &self.dir,
                self.base_offset,
                FileKind::new(t).with_suffix(suffix),
            )
        };
        let log_path = path_of(FileType::Log);
        let writable = self.mode == OpenMode::ReadWrite;
        let log = LogFile::open(&self.config.io, &log_path, writable)
            .map_err(Error::io(IoOp::Open, &log_path))?;
        let (index_path, time_path) = (path_of(FileType::Index), path_of(FileType::TimeIndex));
        let max = self.config.max_index_bytes;
        let indexes = if writable {
            Indexes {
                offset: OffsetIndex::open(&index_path, self.base_offset, max)?,
                time: TimeIndex::open(&time_path, self.base_offset, max)?,
            }
        } else if let Some(kept) = lock(&self.memory_indexes).clone() {
            return Ok(Files {
                log: Arc::new(log),
                indexes: kept,
            });
        } else {
            Indexes {
                offset: OffsetIndex::open_read_only(&index_path, self.base_offset)?,
                time: TimeIndex::open_read_only(&time_path, self.base_offset)?,
            }
        };
        Ok(Files {
            log: Arc::new(log),
            indexes: Arc::new(indexes),
        })
    }

    /// A segment of known size whose files are opened (with `options`, i.e. the open
    /// policy's checks and a rebuild when they fail) only on first use: what a log loads
    /// after a clean shutdown, so that loading costs no file open per sealed segment. `size`
    /// is the `.log` file's length (Kafka's logical size of a segment); the max timestamp and
    /// the index entry counts are read on first use.
    ///
    /// `dir` and `config` are shared, not copied: a load of many segments passes the same
    /// two to each (issue 28: the memory per unopened segment).
    pub fn deferred(
        dir: &Arc<Path>,
        base_offset: i64,
        config: &Arc<SegmentConfig>,
        options: crate::SegmentOpenOptions,
        size: u64,
    ) -> Arc<Segment> {
        Arc::new_cyclic(|me| Segment {
            base_offset,
            dir: Arc::clone(dir),
            config: Arc::clone(config),
            mode: options.mode,
            names: Mutex::new(Names {
                suffix: options.suffix,
                log_path: None,
            }),
            size: PublishedSize::new(size),
            files: RwLock::new(None),
            reopen: Mutex::new(()),
            me: me.clone(),
            closed_entries: Mutex::new((0, 0)),
            in_ring: AtomicBool::new(false),
            deferred: Mutex::new(Some(options)),
            deferred_report: Mutex::new(None),
            referenced: AtomicBool::new(true),
            memory_indexes: Mutex::new(None),
            max_timestamp: MaxTimestampCell::new(UNKNOWN_MAX),
            writer: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            txns: Mutex::new(None),
            txns_checked: AtomicBool::new(false),
        })
    }

    /// The first open of a deferred segment: [`Segment::open`] of a fresh segment (its own
    /// locks; not counted in any cache), whose files, size and max timestamp this segment then
    /// takes over. Called under `reopen` and `names`.
    fn open_deferred(&self, options: crate::SegmentOpenOptions) -> Result<Files> {
        let config = SegmentConfig {
            cache: None,
            ..SegmentConfig::clone(&self.config)
        };
        let (fresh, report) = Segment::open(&self.dir, self.base_offset, &config, options)?;
        let files = fresh
            .files
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| Error::ReadOnly {
                path: fresh.log_path(),
            })?;
        self.size.publish(fresh.size());
        self.set_max_timestamp(fresh.max_timestamp_and_offset());
        if let Some(kept) = lock(&fresh.memory_indexes).take() {
            *lock(&self.memory_indexes) = Some(kept);
        }
        *lock(&self.deferred) = None;
        first_use_event(&self.dir, self.base_offset, &report);
        *lock(&self.deferred_report) = Some(Box::new(report));
        Ok(files)
    }

    /// Whether the files were never opened yet (a deferred segment before its first use).
    pub fn is_deferred(&self) -> bool {
        lock(&self.deferred).is_some()
    }

    /// What the first open of a [`Segment::deferred`] segment found (its index checks and a
    /// rebuild, if any); `None` before it or for a segment opened at once.
    pub fn deferred_report(&self) -> Option<crate::OpenReport> {
        lock(&self.deferred_report).as_deref().cloned()
    }

    /// Whether the files are open now.
    pub fn is_open(&self) -> bool {
        read(&self.files).is_some()
    }

    /// Marks the segment as in the ring; `false` if it already was.
    pub(crate) fn enter_ring(&self) -> bool {
        !self.in_ring.swap(true, Ordering::AcqRel)
    }

    /// Marks the segment as out of the ring.
    pub(crate) fn leave_ring(&self) {
        self.in_ring.store(false, Ordering::Release);
    }

    /// Whether the cache may close the files (no writer attached).
    pub(crate) fn evictable(&self) -> bool {
        !self.writer.load(Ordering::Acquire)
    }

    /// The cache's second-chance bit: whether the files were used since the last sweep
    /// (clears it).
    pub(crate) fn take_referenced(&self) -> bool {
        self.referenced.swap(false, Ordering::Relaxed)
    }

    /// Closes the files unless a writer is attached (in-memory indexes stay, see
    /// `memory_indexes`); readers holding them keep them until they are done. A read-write segment's
    /// indexes are trimmed to their entries first, so a reopen finds exactly those. `false`
    /// when the files stay open.
    pub(crate) fn try_evict(&self) -> bool {
        if !self.evictable() {
            return false;
        }
        let Ok(_reopen) = self.reopen.try_lock() else {
            return false;
        };
        let mut slot = write(&self.files);
        // Checked again under the slot lock: `resume` attaches the writer, then takes the
        // files.
        if self.writer.load(Ordering::Acquire) {
            return false;
        }
        if let Some(files) = slot.as_ref()
            && self.mode == OpenMode::ReadWrite
        {
            let trimmed = files
                .indexes
                .offset
                .trim_to_valid_size()
                .and_then(|()| files.indexes.time.trim_to_valid_size());
            if trimmed.is_err() {
                return false;
            }
        }
        if let Some(files) = slot.as_ref() {
            *lock(&self.closed_entries) =
                (files.indexes.offset.entries(), files.indexes.time.entries());
        }
        *slot = None;
        true
    }

    /// The cache the segment's files are counted in, if any.
    pub fn cache(&self) -> Option<&SegmentCache> {
        self.config.cache.as_ref()
    }

    /// The segment's base offset (the number in its file names).
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// The size in bytes readers may see: whole batches only.
    pub fn size(&self) -> u64 {
        self.size.load()
    }

    /// Whether the segment holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// The partition directory holding the segment.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration the segment was opened with.
    pub fn config(&self) -> &SegmentConfig {
        &self.config
    }

    /// How the segment was opened.
    pub fn mode(&self) -> OpenMode {
        self.mode
    }

    /// The current temporary suffix of the segment's files (`None` normally).
    pub fn suffix(&self) -> Option<TempSuffix> {
        lock(&self.names).suffix
    }

    /// The current path of the file of `file_type` (`.log`, `.index`, `.timeindex`,
    /// `.txnindex`), with the current suffix.
    pub fn path(&self, file_type: FileType) -> PathBuf {
        let suffix = self.suffix();
        file_path(
            &self.dir,
            self.base_offset,
            FileKind::new(file_type).with_suffix(suffix),
        )
    }

    /// The current `.log` path.
    pub fn log_path(&self) -> PathBuf {
        self.log_path_arc().to_path_buf()
    }

    pub(crate) fn log_path_arc(&self) -> Arc<Path> {
        let mut names = lock(&self.names);
        let suffix = names.suffix;
        let path = names.log_path.get_or_insert_with(|| {
            Arc::from(file_path(
                &self.dir,
                self.base_offset,
                FileKind::LOG.with_suffix(suffix),
            ))
        });
        Arc::clone(path)
    }

    /// A snapshot of the current indexes (cheap: two `Arc` clones under a read lock), reopening
    /// the files when the cache closed them.
    pub(crate) fn indexes(&self) -> Result<Arc<Indexes>> {
        self.with_open(|files| Arc::clone(&files.indexes))
    }

    /// The `.log` file, reopened when the cache closed it.
    pub(crate) fn log(&self) -> Result<Arc<LogFile>> {
        self.with_open(|files| Arc::clone(&files.log))
    }

    /// Replaces the indexes (after a recovery); the files stay open. In-memory indexes (a
    /// read-only recovery) are also kept aside: an eviction closes only the `.log`, and a
    /// reopen uses them again (reading the index files would lose the rebuilt state).
    pub(crate) fn replace_indexes(&self, indexes: Indexes) -> Result<()> {
        let log = self.log()?;
        let indexes = Arc::new(indexes);
        if self.mode == OpenMode::ReadOnly {
            // Kept for reopens after an eviction (which closes only the `.log`).
            *lock(&self.memory_indexes) = Some(Arc::clone(&indexes));
        }
        *write(&self.files) = Some(Files { log, indexes });
        Ok(())
    }

    /// Entries in the offset index (as of the eviction while the cache has the files closed:
    /// a closed index does not change).
    /// A deferred segment is opened first (0 if that fails).
    pub fn offset_index_entries(&self) -> usize {
        if self.is_deferred() {
            return self.indexes().map_or(0, |i| i.offset.entries());
        }
        match self.peek_files() {
            Some(files) => files.indexes.offset.entries(),
            None => lock(&self.closed_entries).0,
        }
    }

    /// Entries in the time index (as of the eviction while the cache has the files closed).
    /// A deferred segment is opened first (0 if that fails).
    pub fn time_index_entries(&self) -> usize {
        if self.is_deferred() {
            return self.indexes().map_or(0, |i| i.time.entries());
        }
        match self.peek_files() {
            Some(files) => files.indexes.time.entries(),
            None => lock(&self.closed_entries).1,
        }
    }

    /// The largest timestamp seen and the offset Kafka records for it (the last offset of
    /// its batch), read as one value; timestamp -1 when unknown.
    ///
    /// A deferred segment is opened first (its max timestamp is in its time index); if that
    /// fails the value is unknown (timestamp -1) and the next call tries again.
    pub fn max_timestamp_and_offset(&self) -> TimestampOffset {
        if self.is_deferred() && self.files().is_err() {
            return UNKNOWN_MAX;
        }
        self.max_timestamp.get()
    }

    pub(crate) fn set_max_timestamp(&self, value: TimestampOffset) {
        self.max_timestamp.set(value);
    }

    /// Raises the max timestamp to `(timestamp_ms, offset)` if `timestamp_ms` is larger
    /// (strictly, as Kafka). Returns the value after the update.
    pub(crate) fn raise_max_timestamp(&self, timestamp_ms: i64, offset: i64) -> TimestampOffset {
        self.max_timestamp.raise(timestamp_ms, offset)
    }

    /// Kafka's `largestRecordTimestamp`: the max timestamp if known (>= 0).
    pub fn largest_record_timestamp(&self) -> Option<i64> {
        let ts = self.max_timestamp_and_offset().timestamp_ms;
        (ts >= 0).then_some(ts)
    }

    /// Kafka's `largestTimestamp`: the largest record timestamp, or the `.log` mtime when no
    /// record has a timestamp. After a reopen the max comes from the last time-index entry,
    /// which is why sealing and closing write a final one.
    ///
    /// # Errors
    /// [`Error::Io`] if the mtime cannot be read.
    pub fn largest_timestamp(&self) -> Result<i64> {
        match self.largest_record_timestamp() {
            Some(ts) => Ok(ts),
            None => self.last_modified_ms(),
        }
    }

    /// The `.log` file's modification time in milliseconds since the epoch.
    ///
    /// # Errors
    /// [`Error::Io`] if the metadata cannot be read.
    pub fn last_modified_ms(&self) -> Result<i64> {
        self.log()?
            .modified_ms()
            .map_err(Error::io(IoOp::Metadata, &self.log_path()))
    }

    /// Sets the modification time of the `.log`, `.index` and `.timeindex` (Kafka's
    /// `setLastModified`: the cleaner and the split give new segments the old ones' mtime, which
    /// time retention and the cleaner's horizons read when no record has a timestamp).
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::Io`] if a file's time cannot be set.
    pub fn set_last_modified_ms(&self, modified_ms: i64) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Err(Error::ReadOnly {
                path: self.log_path(),
            });
        }
        let time = std::time::UNIX_EPOCH
            + std::time::Duration::from_millis(u64::try_from(modified_ms).unwrap_or(0));
        for file_type in [FileType::Log, FileType::Index, FileType::TimeIndex] {
            let path = self.path(file_type);
            let set = std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(time));
            match set {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && file_type.is_index() => {}
                Err(e) => return Err(Error::io(IoOp::Metadata, &path)(e)),
            }
        }
        Ok(())
    }

    /// Whether an earlier write or fsync failed (the segment then refuses writes).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    pub(crate) fn ensure_writable(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Err(Error::ReadOnly {
                path: self.log_path(),
            });
        }
        if self.is_poisoned() {
            return Err(Error::Poisoned {
                path: self.log_path(),
            });
        }
        Ok(())
    }

    /// Claims the writer slot for an `ActiveSegment` (released by `detach_writer`).
    pub(crate) fn attach_writer(&self) -> Result<()> {
        self.ensure_writable()?;
        if self.writer.swap(true, Ordering::AcqRel) {
            return Err(Error::WriterAttached {
                path: self.log_path(),
            });
        }
        Ok(())
    }

    pub(crate) fn detach_writer(&self) {
        self.writer.store(false, Ordering::Release);
        // Evictable again (a sealed segment, or the end of a close or recovery): counted.
        if self.is_open()
            && let Some(me) = self.me.upgrade()
        {
            me.admit();
        }
    }

    /// Claims the writer slot for the duration of one call (close, recovery).
    pub(crate) fn writer_guard(&self) -> Result<WriterGuard<'_>> {
        self.attach_writer()?;
        Ok(WriterGuard { segment: self })
    }

    /// Makes the `.log` and both indexes durable: `fdatasync` of the `.log`, then `msync` of
    /// the used range of each index (see [`OffsetIndex::flush`]). What the log calls before
    /// advancing its recovery point; for acknowledged appends alone,
    /// [`Segment::sync_log_data`] is enough. Readers are not blocked. A failed fsync or
    /// index flush poisons the segment (a test backend of the I/O seam can fail either: see
    /// [`crate::seam`]).
    ///
    /// # Errors
    /// [`Error::Io`] (sync; [`IoOp::Sync`] naming the index file for an injected index flush
    /// failure) or [`Error::Index`]; a read-only segment has nothing to flush and returns
    /// `Ok`.
    pub fn flush(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Ok(());
        }
        // A segment the cache closed is reopened: its index pages may still be dirty in the
        // page cache, and an `msync` of a new map of the same range writes them back.
        let Files { log, indexes } = self.files()?;
        if let Err(e) = log.sync_data() {
            self.poisoned.store(true, Ordering::Release);
            return Err(Error::io(IoOp::Sync, &self.log_path())(e));
        }
        let flushed = self
            .check_index_flush(FileType::Index)
            .and_then(|()| Ok(indexes.offset.flush()?))
            .and_then(|()| self.check_index_flush(FileType::TimeIndex))
            .and_then(|()| Ok(indexes.time.flush()?))
            .and_then(|()| self.flush_txn_index());
        if flushed.is_err() {
            // An index whose dirty pages failed to reach the disk may have lost them: as a
            // failed `.log` fsync, the segment is unusable until reopened.
            self.poisoned.store(true, Ordering::Release);
        }
        flushed
    }

    /// The I/O seam's check before an index flush (always `Ok` with the direct backend).
    fn check_index_flush(&self, file_type: FileType) -> Result<()> {
        let path = self.path(file_type);
        self.config
            .io
            .before_index_flush(&path)
            .map_err(Error::io(IoOp::Sync, &path))
    }

    /// Makes the `.log` bytes written so far durable, and nothing else: one `fdatasync` of
    /// the `.log` (through the I/O seam, so a test backend sees it). The cheap sync behind
    /// acknowledged durable appends (group commit).
    ///
    /// Guarantees, once it returns `Ok`: every byte of the `.log` written before the call
    /// (at least the published [`Segment::size`] read before the call) and the file length
    /// survive a crash or power loss. It does **not** make the `.index` / `.timeindex`
    /// durable, nor the segment's directory entry (a new segment's name needs
    /// [`sync_dir`]). So it must not advance a recovery point: after an unclean shutdown the
    /// segment is only sound if recovered (its indexes rebuilt from the `.log`, which the log
    /// does for every segment at or above the recovery point; the open policy also rebuilds
    /// any index that does not match the `.log`). Use [`Segment::flush`] to advance it.
    /// Readers are not blocked. A failed fsync poisons the segment.
    ///
    /// # Errors
    /// [`Error::Io`] (sync); a read-only segment has nothing to sync and returns `Ok`.
    pub fn sync_log_data(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Ok(());
        }
        if let Err(e) = self.log()?.sync_data() {
            self.poisoned.store(true, Ordering::Release);
            return Err(Error::io(IoOp::Sync, &self.log_path())(e));
        }
        Ok(())
    }

    /// Renames all the segment's files to carry `suffix` (Kafka's `changeFileSuffixes`),
    /// e.g. `None -> Some(Deleted)` or `Some(Cleaned) -> Some(Swap)`. A `.txnindex` is renamed
    /// if it exists. Atomic renames, no directory fsync (call [`sync_dir`] after a batch of
    /// renames). Open [`crate::FileSlice`]s keep reading.
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::Io`] / [`Error::Index`] if a rename fails.
    pub fn rename_suffix(&self, suffix: Option<TempSuffix>) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Err(Error::ReadOnly {
                path: self.log_path(),
            });
        }
        let mut names = lock(&self.names);
        let old = names.suffix;
        let path_of = |file_type, suffix| {
            file_path(
                &self.dir,
                self.base_offset,
                FileKind::new(file_type).with_suffix(suffix),
            )
        };
        let new_log = path_of(FileType::Log, suffix);
        let old_log = path_of(FileType::Log, old);
        self.config
            .io
            .rename(&old_log, &new_log)
            .map_err(Error::io(IoOp::Rename, &old_log))?;
        names.suffix = suffix;
        names.log_path = Some(Arc::from(new_log));
        // Not `files()`: reopening takes the names lock held here. Closed files are renamed
        // on disk; a reopen (which waits for this lock) then opens the new names.
        match self.loaded_files() {
            Some(files) => {
                files
                    .indexes
                    .offset
                    .rename_to(path_of(FileType::Index, suffix))?;
                files
                    .indexes
                    .time
                    .rename_to(path_of(FileType::TimeIndex, suffix))?;
            }
            None => {
                for file_type in [FileType::Index, FileType::TimeIndex] {
                    let (from, to) = (path_of(file_type, old), path_of(file_type, suffix));
                    match std::fs::rename(&from, &to) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io(IoOp::Rename, &from)(e)),
                    }
                }
            }
        }
        let old_txn = path_of(FileType::TxnIndex, old);
        if old_txn.exists() {
            self.config
                .io
                .rename(&old_txn, &path_of(FileType::TxnIndex, suffix))
                .map_err(Error::io(IoOp::Rename, &old_txn))?;
        }
        Ok(())
    }

    /// Renames the files to `.deleted` (the first step of Kafka's asynchronous deletion);
    /// call [`Segment::delete_files`] later.
    ///
    /// # Errors
    /// As [`Segment::rename_suffix`].
    pub fn mark_deleted(&self) -> Result<()> {
        self.rename_suffix(Some(TempSuffix::Deleted))
    }

    /// Unlinks the segment's files (under their current names), tolerating missing ones and
    /// trying every file. Readers holding the segment or a [`crate::FileSlice`] keep reading
    /// (the handles and maps stay valid until dropped).
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; the first [`Error::Io`] if an unlink fails for another reason
    /// than a missing file.
    pub fn delete_files(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Err(Error::ReadOnly {
                path: self.log_path(),
            });
        }
        let mut first_error = None;
        for file_type in [
            FileType::Log,
            FileType::Index,
            FileType::TimeIndex,
            FileType::TxnIndex,
        ] {
            let path = self.path(file_type);
            match self.config.io.remove(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    first_error.get_or_insert(Error::io(IoOp::Remove, &path)(e));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Kafka's `close` for a segment without a writer: the final time-index entry (the max
    /// timestamp, if known), trim both indexes and the `.log` (a preallocated tail), then
    /// flush. Idempotent. A read-only segment does nothing.
    ///
    /// # Errors
    /// [`Error::WriterAttached`] while an [`crate::ActiveSegment`] exists (close that one);
    /// [`Error::Io`] / [`Error::Index`].
    pub fn close(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Ok(());
        }
        let guard = self.writer_guard()?;
        finish_inactive(self)?;
        drop(guard);
        self.flush()
    }

    /// Trims the `.log` file to the published size (drops a preallocated tail).
    pub(crate) fn trim_log(&self) -> Result<()> {
        let size = self.size();
        let log = self.log()?;
        let len = log
            .len()
            .map_err(Error::io(IoOp::Metadata, &self.log_path()))?;
        if len != size {
            log.set_len(size)
                .map_err(Error::io(IoOp::SetLength, &self.log_path()))?;
        }
        Ok(())
    }
}

/// fsyncs a directory, making created, renamed and removed names durable (KAFKA-3968).
/// Always the direct backend: code that must be observable by a test backend calls
/// [`crate::Io::sync_dir`] on the handle of its [`SegmentConfig::io`] instead.
///
/// # Errors
/// [`Error::Io`] with [`IoOp::SyncDir`].
pub fn sync_dir(dir: &Path) -> Result<()> {
    crate::Io::direct().sync_dir(dir)
}

/// Proof that the writer slot of a segment is held; released on drop.
pub(crate) struct WriterGuard<'a> {
    segment: &'a Segment,
}

/// Kafka's `onBecomeInactiveSegment`: final time-index entry (skipping the full check), trim
/// the offset index, then the time index, then the `.log` (a preallocated tail).
pub(crate) fn finish_inactive(segment: &Segment) -> Result<()> {
    let indexes = segment.indexes()?;
    let max = segment.max_timestamp_and_offset();
    if max.timestamp_ms >= 0 {
        indexes
            .time
            .maybe_append(max.timestamp_ms, max.offset, true)?;
    }
    indexes.offset.trim_to_valid_size()?;
    indexes.time.trim_to_valid_size()?;
    segment.trim_log()
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        self.segment.detach_writer();
    }
}

impl crate::cache::Evictable for Segment {
    fn is_open(&self) -> bool {
        Segment::is_open(self)
    }
    fn enter_ring(&self) -> bool {
        Segment::enter_ring(self)
    }
    fn leave_ring(&self) {
        Segment::leave_ring(self)
    }
    fn evictable(&self) -> bool {
        Segment::evictable(self)
    }
    fn try_evict(&self) -> bool {
        Segment::try_evict(self)
    }
    fn take_referenced(&self) -> bool {
        Segment::take_referenced(self)
    }
}

/// The event of a deferred segment's first open (docs/observability.md): WARN when its checks
/// found damage whose bytes were kept, INFO when they rebuilt its indexes, else DEBUG.
fn first_use_event(dir: &Path, base_offset: i64, report: &crate::OpenReport) {
    let dir = dir.display();
    match (&report.rebuilt, &report.recovery) {
        (_, Some(r)) if r.damaged_tail_kept || r.truncated_bytes > 0 => tracing::warn!(
            %dir, base_offset, valid_bytes = r.valid_bytes, damaged_bytes = r.truncated_bytes,
            kept = r.damaged_tail_kept, reason = ?r.reason, rebuilt = ?report.rebuilt,
            "first-use check found damage in a sealed segment"
        ),
        (Some(reason), _) => {
            tracing::info!(%dir, base_offset, ?reason, "first-use check rebuilt the indexes");
        }
        (None, _) => tracing::debug!(%dir, base_offset, "first-use check passed"),
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// What a segment costs in memory before its files are first opened (issue 28), its
    /// struct (held in an `Arc`; its directory and `.log` path on the heap and the log's map
    /// entry come on top, measured by the bench's clean-open row). A field added to every
    /// segment fails this; a large, rarely set one belongs in a `Box`.
    #[test]
    fn an_unopened_segment_stays_within_its_memory_bound() {
        let size = std::mem::size_of::<Segment>();
        eprintln!(
            "Segment: {size} bytes (the OpenReport it boxes: {})",
            std::mem::size_of::<crate::OpenReport>()
        );
        // 544 before the first-use report was boxed, 336 before the directory and the config
        // were shared (`Arc`s; the `.log` path is made on first use).
        assert!(size <= 272, "Segment is {size} bytes");
    }

    /// Deferred segments share the loader's directory path and config, and make their `.log`
    /// path only when it is first asked for.
    #[test]
    fn deferred_segments_share_their_directory_and_config() {
        let dir: Arc<Path> = Arc::from(Path::new("/data/topic-0"));
        let config = Arc::new(SegmentConfig::default());
        let options = crate::SegmentOpenOptions::default();
        let a = Segment::deferred(&dir, 0, &config, options, 10);
        let b = Segment::deferred(&dir, 1, &config, options, 10);
        assert!(std::ptr::eq(a.dir(), b.dir()));
        assert!(std::ptr::eq(a.config(), b.config()));
        assert!(lock(&a.names).log_path.is_none());
        assert_eq!(
            b.log_path(),
            Path::new("/data/topic-0/00000000000000000001.log")
        );
        assert!(lock(&b.names).log_path.is_some());
        assert_eq!(
            a.path(FileType::Log),
            Path::new("/data/topic-0/00000000000000000000.log")
        );
    }
}
