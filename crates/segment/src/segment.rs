//! [`Segment`]: the shared, read side of a segment, and its file lifecycle (flush, rename,
//! delete, close). Reads live in `read.rs`, opening in `open.rs`, recovery in `recover.rs`,
//! the writer in `active.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_index_core::{OffsetIndex, TimeIndex, TimestampOffset};

use crate::error::{Error, IoOp};
use crate::file_name::{FileKind, FileType, TempSuffix, file_path};
use crate::io::{self, LogFile};
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
    /// Never writes to disk: indexes are mapped read-only, or rebuilt in memory when missing
    /// or broken; recovery computes the valid length in memory and reads stop there.
    ReadOnly,
}

/// The shared read side of one segment: `Send + Sync`, held in an `Arc` by the log, by
/// readers, and by the one [`crate::ActiveSegment`] writing it (if any).
///
/// Readers see a published size: the writer stores it (Release) after the bytes of an
/// append are written, readers load it (Acquire) and never read past it. The max timestamp
/// and its offset are one value under one lock (KAFKA-12981). No reader ever waits for an
/// fsync.
#[derive(Debug)]
pub struct Segment {
    pub(crate) base_offset: i64,
    pub(crate) dir: PathBuf,
    pub(crate) config: SegmentConfig,
    pub(crate) mode: OpenMode,
    pub(crate) log: LogFile,
    /// The current temporary suffix and the `.log` path it gives.
    names: Mutex<Names>,
    /// The size readers may see (bytes of whole batches).
    pub(crate) size: PublishedSize,
    pub(crate) indexes: RwLock<Arc<Indexes>>,
    /// `(max timestamp, its offset)`, read and written as one value.
    max_timestamp: MaxTimestampCell,
    /// A writer (or a recovery) is attached.
    pub(crate) writer: AtomicBool,
    /// A write or fsync failed: no more writes until reopened.
    pub(crate) poisoned: AtomicBool,
}

#[derive(Debug, Clone)]
struct Names {
    suffix: Option<TempSuffix>,
    log_path: Arc<Path>,
}

/// The two mapped indexes of a segment.
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
    /// Assembles a segment (used by `open` and `create`).
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
    ) -> Segment {
        let max = indexes.time.last_entry();
        Segment {
            base_offset,
            dir: dir.to_path_buf(),
            config: config.clone(),
            mode,
            log,
            names: Mutex::new(Names {
                suffix,
                log_path: Arc::from(file_path(
                    dir,
                    base_offset,
                    FileKind::LOG.with_suffix(suffix),
                )),
            }),
            size: PublishedSize::new(size),
            indexes: RwLock::new(Arc::new(indexes)),
            max_timestamp: MaxTimestampCell::new(max),
            writer: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
        }
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
        Arc::clone(&lock(&self.names).log_path)
    }

    /// A snapshot of the current indexes (cheap: one `Arc` clone under a read lock).
    pub(crate) fn indexes(&self) -> Arc<Indexes> {
        Arc::clone(&read(&self.indexes))
    }

    pub(crate) fn replace_indexes(&self, indexes: Indexes) {
        *write(&self.indexes) = Arc::new(indexes);
    }

    /// Entries in the offset index.
    pub fn offset_index_entries(&self) -> usize {
        self.indexes().offset.entries()
    }

    /// Entries in the time index.
    pub fn time_index_entries(&self) -> usize {
        self.indexes().time.entries()
    }

    /// The largest timestamp seen and the offset Kafka records for it (the last offset of
    /// its batch), read as one value; timestamp -1 when unknown.
    pub fn max_timestamp_and_offset(&self) -> TimestampOffset {
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
        self.log
            .modified_ms()
            .map_err(Error::io(IoOp::Metadata, &self.log_path()))
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
    /// index flush poisons the segment (the fault injector can fail either: see
    /// [`crate::fault`] with the `fault-injection` feature).
    ///
    /// # Errors
    /// [`Error::Io`] (sync; [`IoOp::Sync`] naming the index file for an injected index flush
    /// failure) or [`Error::Index`]; a read-only segment has nothing to flush and returns
    /// `Ok`.
    pub fn flush(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Ok(());
        }
        if let Err(e) = self.log.sync_data() {
            self.poisoned.store(true, Ordering::Release);
            return Err(Error::io(IoOp::Sync, &self.log_path())(e));
        }
        let indexes = self.indexes();
        let flushed = self
            .check_index_flush(FileType::Index)
            .and_then(|()| Ok(indexes.offset.flush()?))
            .and_then(|()| self.check_index_flush(FileType::TimeIndex))
            .and_then(|()| Ok(indexes.time.flush()?));
        if flushed.is_err() {
            // An index whose dirty pages failed to reach the disk may have lost them: as a
            // failed `.log` fsync, the segment is unusable until reopened.
            self.poisoned.store(true, Ordering::Release);
        }
        flushed
    }

    /// The I/O seam's fault check before an index flush (always `Ok` without the fault
    /// injector).
    fn check_index_flush(&self, file_type: FileType) -> Result<()> {
        #[cfg(any(test, feature = "fault-injection"))]
        {
            let path = self.path(file_type);
            io::before_index_flush(&path).map_err(Error::io(IoOp::Sync, &path))?;
        }
        #[cfg(not(any(test, feature = "fault-injection")))]
        let _ = file_type;
        Ok(())
    }

    /// Makes the `.log` bytes written so far durable, and nothing else: one `fdatasync` of
    /// the `.log` (through the I/O seam, so the fault injector sees it). The cheap sync behind
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
        if let Err(e) = self.log.sync_data() {
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
        io::rename(&path_of(FileType::Log, old), &new_log)
            .map_err(Error::io(IoOp::Rename, &names.log_path))?;
        names.suffix = suffix;
        names.log_path = Arc::from(new_log);
        let indexes = self.indexes();
        indexes.offset.rename_to(path_of(FileType::Index, suffix))?;
        indexes
            .time
            .rename_to(path_of(FileType::TimeIndex, suffix))?;
        let old_txn = path_of(FileType::TxnIndex, old);
        if old_txn.exists() {
            io::rename(&old_txn, &path_of(FileType::TxnIndex, suffix))
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
            match io::remove(&path) {
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
        let len = self
            .log
            .len()
            .map_err(Error::io(IoOp::Metadata, &self.log_path()))?;
        if len != size {
            self.log
                .set_len(size)
                .map_err(Error::io(IoOp::SetLength, &self.log_path()))?;
        }
        Ok(())
    }
}

/// fsyncs a directory, making created, renamed and removed names durable (KAFKA-3968).
/// Goes through the I/O seam: with the `fault-injection` feature, an installed
/// `fault::FaultInjector` can fail it and records the directory's durable listing on
/// success (`FaultInjector::durable_names`).
///
/// # Errors
/// [`Error::Io`] with [`IoOp::SyncDir`].
pub fn sync_dir(dir: &Path) -> Result<()> {
    io::sync_dir(dir).map_err(Error::io(IoOp::SyncDir, dir))
}

/// Proof that the writer slot of a segment is held; released on drop.
pub(crate) struct WriterGuard<'a> {
    segment: &'a Segment,
}

/// Kafka's `onBecomeInactiveSegment`: final time-index entry (skipping the full check), trim
/// the offset index, then the time index, then the `.log` (a preallocated tail).
pub(crate) fn finish_inactive(segment: &Segment) -> Result<()> {
    let indexes = segment.indexes();
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
