//! [`Log`]: one partition directory — open, offsets, segment listing, close.
//!
//! Appends live in `append.rs`, reads in `read.rs`, retention and truncation in
//! `maintenance.rs`, flushing and `tick` in `flush.rs`, loading in `load.rs`.

use std::path::{Path, PathBuf};
// Plain std atomic: the recovery point is not part of the loom models.
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use seglog_segment::{ActiveSegment, FileSlice, Segment, SegmentCache, SegmentConfig};

use crate::clock::{Clock, SystemClock};
use crate::commit_join::CommitJoin;
use crate::config::LogConfig;
use crate::deletion::{DeleteQueue, Doomed};
use crate::group_commit::GroupCommit;
use crate::home::{self, InitialState, StateHome};
use crate::load::{self, LoadMode, LoadReport, Loaded};
use std::sync::Arc;

use crate::sync::{Mutex, MutexGuard, lock};
use crate::view::{LogView, OffsetMetadata, Published, SegmentSize};
use crate::{Error, Result, TopicPartition};

/// Options of [`Log::open_with`] beyond the config.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The clock for rolls, retention, flush policies and LogAppendTime.
    /// Default: [`SystemClock`].
    pub clock: Arc<dyn Clock>,
    /// Open without writing anything in the directory. Default: false.
    pub read_only: bool,
    /// Recover every segment, as after an unclean shutdown with the recovery point at the
    /// first segment, whatever the shutdown marker and the checkpoint say: validate every
    /// batch, cut a torn or corrupt tail, rebuild both indexes, delete every segment after a
    /// cut. Runs inside the directory lock, before the log is usable;
    /// [`Log::load_report`] says what was found. With `read_only` it only validates, in
    /// memory. Default: false (Kafka's rule: recover from the recovery point, and only after
    /// an unclean shutdown).
    pub recover_all: bool,
    /// After a clean shutdown, open the sealed segments without reading any `.log` byte
    /// (Kafka's policy: indexes are trusted after a clean shutdown), and only on first use:
    /// loading a log of many segments costs the directory listing (each `.log`'s length is its
    /// size) and its first and last segments, not a file open per segment. Only the checks that need no data run
    /// on them (a missing, zero-padded or ragged index, a last entry pointing outside the
    /// file); an index that is structurally valid but wrong (bit rot, a stray tool) is then
    /// *not* detected and reads through it may fail or return the wrong batch. The last
    /// segment always gets the full check. Ignored after an unclean shutdown (recovery runs
    /// from the recovery point) and with `recover_all`. Default: false (the strict policy of
    /// `docs/durability.md`: every index is checked against its `.log`, KAFKA-7283).
    pub trust_clean_shutdown: bool,
    /// The cache bounding the segments whose files are open (see
    /// [`LogConfig::segment_cache_capacity`]), to share one between logs. Default: `None`, a
    /// cache of `segment_cache_capacity` for this log alone ([`crate::LogDir`] passes its own
    /// to every log it opens).
    pub segment_cache: Option<SegmentCache>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            read_only: false,
            recover_all: false,
            trust_clean_shutdown: false,
            segment_cache: None,
        }
    }
}

/// What one segment looks like, for listings ([`Log::segments`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Base offset (the number in the file names).
    pub base_offset: i64,
    /// Bytes in the `.log`.
    pub size_bytes: u64,
    /// Entries in the offset index.
    pub index_entries: usize,
    /// Entries in the time index.
    pub time_index_entries: usize,
    /// Largest record timestamp, if any record has one.
    pub largest_timestamp_ms: Option<i64>,
    /// The next segment's base offset, or the log end offset for the active segment: every
    /// offset of this segment is below it.
    pub next_offset: i64,
    /// Whether this is the active (last) segment.
    pub is_active: bool,
    /// The `.log` path.
    pub path: PathBuf,
}

/// One partition's log: a directory of segments with Kafka's on-disk format.
///
/// `Send + Sync`: share it in an `Arc`. Appends, rolls, retention and truncation are
/// serialized by an internal writer lock; readers take no lock beyond cloning the published
/// snapshot, so they run alongside appends and are never blocked by an fsync.
#[derive(Debug)]
pub struct Log {
    pub(crate) dir: PathBuf,
    pub(crate) topic_partition: TopicPartition,
    pub(crate) config: LogConfig,
    pub(crate) segment_config: SegmentConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) read_only: bool,
    pub(crate) published: Published<LogView<Arc<Segment>>>,
    pub(crate) writer: Mutex<Writer>,
    pub(crate) flusher: Mutex<FlushState>,
    pub(crate) recovery_point: AtomicI64,
    /// A segment file was created or renamed since the last directory fsync.
    pub(crate) dir_dirty: AtomicBool,
    /// Checkpoint values last written by a standalone log (to skip unchanged writes).
    pub(crate) written_checkpoints: Mutex<Option<(i64, Option<i64>)>>,
    pub(crate) group_commit: GroupCommit,
    /// Counts durable appends for the group-commit leader's sibling wait.
    pub(crate) commit_join: CommitJoin,
    pub(crate) deletions: DeleteQueue<Doomed>,
    pub(crate) poison: Mutex<Option<&'static str>>,
    /// `poison` is set: the append path checks this flag and takes the mutex only then.
    pub(crate) poisoned: AtomicBool,
    pub(crate) home: StateHome,
    pub(crate) load_report: LoadReport,
    /// The empty slice reads return when there is no segment (read-only, empty directory).
    pub(crate) empty_slice: OnceLock<FileSlice>,
}

/// State only the writer touches.
#[derive(Debug)]
pub(crate) struct Writer {
    /// The active segment's writer; `None` when read-only or closed.
    pub(crate) active: Option<ActiveSegment>,
    /// `close` was called: no more writes.
    pub(crate) closed: bool,
    /// `close` completed successfully (flushed, checkpoints and marker written); a retried
    /// `close` after a failed one runs the remaining steps again instead of returning `Ok`.
    pub(crate) close_done: bool,
}

/// State of the flusher (its mutex serializes flushes; never taken by readers or under the
/// writer lock).
#[derive(Debug)]
pub(crate) struct FlushState {
    pub(crate) last_flush_ms: i64,
}

impl SegmentSize for Arc<Segment> {
    fn size_bytes(&self) -> u64 {
        self.size()
    }
}

impl Log {
    /// Opens (or creates) the log in `dir` for reading and writing, with the system clock.
    ///
    /// Locks the directory's state root (see the crate docs: the partition directory itself,
    /// or its parent when that is a Kafka `log.dirs` root), consumes the clean-shutdown marker
    /// before loading, then loads as Kafka's `LogLoader` (spec §5.5).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; [`Error::Locked`] when another process (a Kafka broker,
    /// another seglog) or another `Log` holds the directory; I/O and segment errors while
    /// loading; [`Error::UnsplittableSegment`] for a segment whose offsets overflow its base
    /// and that cannot be split.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig) -> Result<Self> {
        Self::open_with(dir, config, OpenOptions::default())
    }

    /// Opens the log without ever writing in `dir`: no lock file, no marker consumed, no
    /// recovery written, missing or broken indexes rebuilt in memory, a torn tail hidden
    /// from reads rather than truncated. For inspecting a directory a running broker owns or a
    /// read-only copy: index files are read into memory, never mapped, so the owner trimming
    /// or truncating them while this log is open cannot fault it. Writes return
    /// [`Error::ReadOnly`].
    ///
    /// A directory without any segment (empty, or not yet written) gives an empty log: no
    /// segments, log start offset = log end offset = the checkpointed log start offset (or 0),
    /// and a read at that offset returns an empty slice. Leftover `.cleaned` / `.swap` files
    /// are ignored (only a read-write open finishes or removes them), and an overflowed segment
    /// is not split (see [`Error::Segment`] below).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; I/O errors (a missing directory) and segment errors while
    /// loading, including the segment layer's `OffsetOverflow` for a segment whose offsets
    /// overflow its base and that needs a recovery.
    pub fn open_read_only(dir: impl AsRef<Path>, config: LogConfig) -> Result<Self> {
        Self::open_with(
            dir,
            config,
            OpenOptions {
                read_only: true,
                ..OpenOptions::default()
            },
        )
    }

    /// [`Log::open`] / [`Log::open_read_only`] with explicit [`OpenOptions`].
    ///
    /// # Errors
    /// As [`Log::open`].
    pub fn open_with(
        dir: impl AsRef<Path>,
        config: LogConfig,
        options: OpenOptions,
    ) -> Result<Self> {
        config.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let mode = LoadMode {
            read_only: options.read_only,
            recover_all: options.recover_all,
            trust_clean_shutdown: options.trust_clean_shutdown,
        };
        let cache = options
            .segment_cache
            .unwrap_or_else(|| segment_cache_for(&config));
        if options.read_only {
            let state = home::peek_read_only(&dir);
            let home = StateHome::ReadOnly;
            return Self::load(dir, config, options.clock, state, home, mode, cache);
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        let (home, state) = home::open_standalone(&dir)?;
        let known = state.recovery_point_known;
        let log = Self::load(dir, config, options.clock, state, home, mode, cache)?;
        if !known {
            // Checkpointed at once: the loader's rule for gaps after a crash needs to know
            // where flushed data ends (docs/durability.md, section 4).
            log.write_checkpoints(true)?;
        }
        Ok(log)
    }

    /// Loads a partition directory for a [`crate::LogDir`] (which owns the root state).
    pub(crate) fn open_in_log_dir(
        dir: PathBuf,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        state: InitialState,
        mode: LoadMode,
        root: (&Path, &Arc<Mutex<()>>),
        cache: SegmentCache,
    ) -> Result<Self> {
        config.validate()?;
        let home = if mode.read_only {
            StateHome::ReadOnly
        } else {
            StateHome::LogDir {
                root: root.0.to_path_buf(),
                key: home::key_for(&dir),
                checkpoint_lock: Arc::clone(root.1),
            }
        };
        Self::load(dir, config, clock, state, home, mode, cache)
    }

    fn load(
        dir: PathBuf,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        state: InitialState,
        home: StateHome,
        mode: LoadMode,
        cache: SegmentCache,
    ) -> Result<Self> {
        let read_only = mode.read_only;
        let segment_config = SegmentConfig {
            cache: Some(cache),
            ..segment_config(&config)
        };
        let Loaded {
            segments,
            active,
            log_start_offset,
            recovery_point,
            end,
            report,
            deleted,
        } = load::load(&dir, &segment_config, clock.now_ms(), state, mode)?;
        let now = clock.now_ms();
        let high_watermark = OffsetMetadata {
            offset: log_start_offset,
            ..end
        };
        let view = LogView {
            segments: Arc::new(segments),
            log_start_offset,
            end,
            high_watermark: if log_start_offset >= end.offset {
                end
            } else {
                high_watermark
            },
        };
        let log = Self {
            topic_partition: home::key_for(&dir),
            dir,
            config,
            segment_config,
            clock,
            read_only,
            published: Published::new(view),
            writer: Mutex::new(Writer {
                active,
                closed: false,
                close_done: false,
            }),
            flusher: Mutex::new(FlushState { last_flush_ms: now }),
            dir_dirty: AtomicBool::new(false),
            written_checkpoints: Mutex::new(None),
            recovery_point: AtomicI64::new(recovery_point),
            group_commit: GroupCommit::new(recovery_point),
            commit_join: CommitJoin::default(),
            deletions: DeleteQueue::default(),
            poison: Mutex::new(None),
            poisoned: AtomicBool::new(false),
            home,
            load_report: report,
            empty_slice: OnceLock::new(),
        };
        let due = now.saturating_add(log.config.file_delete_delay_ms);
        for segment in deleted {
            log.deletions.push(due, segment);
        }
        // The high watermark starts at the log start offset (Kafka: the partition later
        // restores it from replication-offset-checkpoint); set its position properly.
        log.set_high_watermark(log_start_offset)?;
        Ok(log)
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The topic-partition parsed from the directory name (`seglog-0` when it does not parse).
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }

    /// The configuration the log was opened with.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Whether the log was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// What loading found and did (recovered and truncated segments, leftovers removed).
    pub fn load_report(&self) -> &LoadReport {
        &self.load_report
    }

    /// The first offset readers may fetch.
    pub fn log_start_offset(&self) -> i64 {
        self.published.load().log_start_offset
    }

    /// The offset the next appended record gets.
    pub fn log_end_offset(&self) -> i64 {
        self.published.load().end.offset
    }

    /// The log end offset with its segment and byte position.
    pub fn log_end_offset_metadata(&self) -> OffsetMetadata {
        self.published.load().end
    }

    /// The high watermark: consumers ([`crate::Isolation::HighWatermark`]) read below it.
    pub fn high_watermark(&self) -> i64 {
        self.published.load().high_watermark.offset
    }

    /// Every offset below this is flushed to disk (and is trusted without a scan after a
    /// crash).
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point.load(Ordering::Acquire)
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.published.load().segments.len()
    }

    /// Sets the high watermark, clamped to `[log start offset, log end offset]` (the caller —
    /// a replication layer — decides it; a standalone user typically sets it to the LEO).
    /// Returns the value set.
    ///
    /// # Errors
    /// Segment errors while locating the offset's batch.
    pub fn set_high_watermark(&self, offset: i64) -> Result<i64> {
        let _writer = self.lock_writer();
        let view = self.published.load();
        let target = offset.clamp(view.log_start_offset, view.end.offset);
        let metadata = self.offset_metadata(&view, target)?;
        self.published.publish(LogView {
            high_watermark: metadata,
            ..(*view).clone()
        });
        Ok(target)
    }

    /// The metadata of `offset` (between the log start and the LEO) in `view`: the start of
    /// the batch holding it, or the end of the segment when it falls in a gap.
    pub(crate) fn offset_metadata(
        &self,
        view: &LogView<Arc<Segment>>,
        offset: i64,
    ) -> Result<OffsetMetadata> {
        if offset >= view.end.offset {
            return Ok(view.end);
        }
        let Some((base, segment)) = view.segments.floor(offset) else {
            return Ok(view.end);
        };
        let position = match segment.translate_offset(offset, 0)? {
            Some(found) => found.position,
            None => segment.size(),
        };
        Ok(OffsetMetadata {
            offset,
            segment_base_offset: base,
            position,
        })
    }

    /// A description of every segment, oldest first.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let view = self.published.load();
        let mut out = Vec::with_capacity(view.segments.len());
        let mut iter = view.segments.iter().peekable();
        while let Some((base, segment)) = iter.next() {
            let next = iter.peek().map(|(b, _)| *b);
            out.push(SegmentInfo {
                base_offset: base,
                size_bytes: segment.size(),
                index_entries: segment.offset_index_entries(),
                time_index_entries: segment.time_index_entries(),
                largest_timestamp_ms: segment.largest_record_timestamp(),
                next_offset: next.unwrap_or(view.end.offset),
                is_active: next.is_none(),
                path: segment.log_path(),
            });
        }
        out
    }

    /// Closes the log: seals the active segment (final time-index entry, trimmed indexes),
    /// flushes everything, deletes segments waiting for deletion, then writes the checkpoints
    /// and — last, and only if nothing failed — the clean-shutdown marker. Idempotent once it
    /// succeeded; after a failed close, a retry runs the remaining steps again and fails the
    /// same way while the log is poisoned (it never reports success for a close that did not
    /// flush). After the first call, writes fail with [`Error::Closed`] (or
    /// [`Error::Poisoned`]) and reads keep working.
    ///
    /// # Errors
    /// I/O and segment errors; the marker is then not written, so the next open recovers.
    pub fn close(&self) -> Result<()> {
        let mut writer = self.lock_writer();
        if writer.close_done {
            return Ok(());
        }
        // Writes stop now, whatever happens next; `close_done` is set only at the end, so a
        // retried close after a failure runs (and fails) again instead of returning `Ok`.
        writer.closed = true;
        if self.read_only {
            writer.close_done = true;
            return Ok(());
        }
        self.check_poison()?;
        if let Some(active) = writer.active.take() {
            let sealed = active.seal().map_err(|e| self.poisoned_by("seal", e))?;
            // Keep the published map pointing at the sealed read side (same Arc).
            drop(sealed);
        }
        drop(writer);
        self.flush_to(i64::MAX, true)?;
        let mut failed = Vec::new();
        let mut first_error = None;
        for doomed in self.deletions.take_all() {
            if let Err(e) = doomed.delete() {
                first_error.get_or_insert(e);
                failed.push(doomed);
            }
        }
        if let Some(e) = first_error {
            self.deletions.requeue(i64::MIN, failed);
            return Err(e);
        }
        self.write_checkpoints(true)?;
        self.home.write_clean_marker()?;
        self.lock_writer().close_done = true;
        Ok(())
    }

    /// Writes this log's checkpoint entries when it owns them (standalone logs). With `force`
    /// false, skips the write when nothing changed since the last one.
    pub(crate) fn write_checkpoints(&self, force: bool) -> Result<()> {
        if !matches!(self.home, StateHome::Standalone { .. }) {
            return Ok(());
        }
        let values = self.checkpoint_values();
        let mut written = lock(&self.written_checkpoints);
        if !force && *written == Some(values) {
            return Ok(());
        }
        self.home.write_checkpoints(values.0, values.1)?;
        *written = Some(values);
        Ok(())
    }

    /// Writes this log's checkpoint entries now, whoever owns the root (a `LogDir` too): for
    /// state that must be durable before the caller returns (a truncation, a roll across a gap).
    pub(crate) fn write_checkpoints_now(&self) -> Result<()> {
        let values = self.checkpoint_values();
        self.home.write_checkpoints_now(values.0, values.1)?;
        if matches!(self.home, StateHome::Standalone { .. }) {
            *lock(&self.written_checkpoints) = Some(values);
        }
        Ok(())
    }

    /// (recovery point, log start offset if Kafka would write it: above the first base).
    pub(crate) fn checkpoint_values(&self) -> (i64, Option<i64>) {
        let view = self.published.load();
        let first_base = view
            .segments
            .first()
            .map_or(view.log_start_offset, |(b, _)| b);
        let log_start = (view.log_start_offset > first_base).then_some(view.log_start_offset);
        (self.recovery_point(), log_start)
    }

    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        lock(&self.writer)
    }

    /// Fails if a write or fsync failed earlier.
    pub(crate) fn check_poison(&self) -> Result<()> {
        if !self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        match *lock(&self.poison) {
            Some(op) => Err(Error::Poisoned {
                dir: self.dir.clone(),
                op,
            }),
            None => Ok(()),
        }
    }

    /// Poisons the log with the first failed operation `op` (later ones keep the first).
    pub(crate) fn poison_with(&self, op: &'static str) {
        lock(&self.poison).get_or_insert(op);
        self.poisoned.store(true, Ordering::Release);
    }

    /// Records a failed write/fsync: the log refuses writes until reopened. Returns the
    /// error for `?`.
    pub(crate) fn poisoned_by(&self, op: &'static str, error: seglog_segment::Error) -> Error {
        if !error.is_corruption() {
            self.poison_with(op);
        }
        Error::Segment(error)
    }

    /// Renames a segment removed from the map to `.deleted` and queues its unlink at `due_ms`
    /// (readers holding it keep reading). A failed rename poisons the log.
    pub(crate) fn doom(&self, segment: Arc<Segment>, due_ms: i64) -> Result<()> {
        segment
            .mark_deleted()
            .map_err(|e| self.poisoned_by("rename", e))?;
        self.deletions.push(due_ms, Doomed::Segment(segment));
        Ok(())
    }

    /// The writer for a mutating call: not read-only, not closed, not poisoned.
    pub(crate) fn writable(&self) -> Result<MutexGuard<'_, Writer>> {
        if self.read_only {
            return Err(Error::ReadOnly {
                dir: self.dir.clone(),
            });
        }
        let writer = self.lock_writer();
        // Poison first: after a failed close the cause is the failure, not the close.
        self.check_poison()?;
        if writer.closed {
            return Err(Error::Closed {
                dir: self.dir.clone(),
            });
        }
        Ok(writer)
    }
}

/// A segment cache of `config.segment_cache_capacity` (a log's own, or a `LogDir`'s).
pub(crate) fn segment_cache_for(config: &LogConfig) -> SegmentCache {
    SegmentCache::new(usize::try_from(config.segment_cache_capacity).unwrap_or(1))
}

/// The segment layer's view of a [`LogConfig`] (without a cache).
pub(crate) fn segment_config(config: &LogConfig) -> SegmentConfig {
    SegmentConfig {
        segment_bytes: config.segment_bytes.max(14) as u32,
        index_interval_bytes: config.index_interval_bytes.max(0) as u32,
        max_index_bytes: config.segment_index_bytes.max(12) as u32,
        preallocate: config.preallocate,
        segment_ms: config.segment_ms,
        segment_jitter_ms: config.segment_jitter_ms,
        ..SegmentConfig::default()
    }
}
