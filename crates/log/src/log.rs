//! [`Log`]: one partition directory — open, offsets, segment listing, close.
//!
//! Appends live in `append.rs`, reads in `read.rs`, retention and truncation in
//! `maintenance.rs`, flushing and `tick` in `flush.rs`, loading in `load.rs`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use seglog_segment::{ActiveSegment, FileSlice, Io, Segment, SegmentCache, SegmentConfig};

use crate::checkpoint::CheckpointProblem;
use crate::clock::{Clock, SystemClock};
use crate::config::LogConfig;
use crate::deletion::{DeleteQueue, Doomed};
use crate::durability::DurabilityState;
use crate::home::{self, InitialState, SharedRoot, StateHome};
use crate::leader_epoch::{self, EpochState};
use crate::load::{self, LoadMode, LoadReport, Loaded};
use std::sync::Arc;

use crate::config::Settings;
pub(crate) use crate::config::segment_config;
use crate::sync::{Mutex, MutexGuard, RwLock, lock};
use crate::view::{LogView, OffsetMetadata, Published, SegmentSize};
use crate::{Error, Result, TopicPartition};

/// Options of [`Log::open_with`] beyond the config.
#[derive(Debug, Clone)]
pub struct LogOpenOptions {
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
    /// from the recovery point) and with `recover_all`. Default: false (the strict policy: every
    /// index is checked against its `.log`, KAFKA-7283).
    pub trust_clean_shutdown: bool,
    /// Let recovery cut damaged bytes that hold flushed data, as Kafka does. By default
    /// (false) flushed data is never cut: a segment damaged below the recovery point (or
    /// anywhere after a clean shutdown) keeps its bytes on disk and is served up to the
    /// damage, later segments are kept (the log has a gap there, reported in
    /// [`LoadReport::damaged_tails`]), and appends go to a new segment after it. Kafka's
    /// rule (cut at the first bad batch, delete every later segment) always applies to the
    /// unflushed tail a crash can tear. Default: false.
    pub repair_destructively: bool,
    /// Let every recovery also decode each batch's records and check their offsets, as a
    /// consumer (and `seglog verify`) does: a batch whose CRC is valid but whose records do
    /// not decode (a lowered record count with the CRC recomputed, garbage inside a
    /// compressed batch) is then damage like a CRC failure, under the same policy (cut in the
    /// unflushed tail, kept and reported in flushed data unless `repair_destructively`).
    /// Kafka's recovery checks sizes and CRCs only, so such a batch survives it and fails
    /// every reader; this option costs a decode (and decompression) of everything recovered.
    /// `seglog recover` sets it. Default: false (Kafka's recovery cost).
    pub decode_records: bool,
    /// The segment layer's I/O seam: every `.log` write and fsync, segment rename and unlink,
    /// index flush and directory fsync (segments, checkpoints, the clean-shutdown marker) of
    /// the log goes through it. Default: [`Io::direct`], the system calls; tests pass a
    /// fault-injecting backend (`seglog-faults`).
    pub io: Io,
    /// The cache bounding the segments whose files are open (see
    /// [`LogConfig::segment_cache_capacity`]), to share one between logs. Default: `None`, a
    /// cache of `segment_cache_capacity` for this log alone ([`crate::LogDir`] passes its own
    /// to every log it opens).
    pub segment_cache: Option<SegmentCache>,
    /// Who moves the high watermark ([`crate::HighWatermarkPolicy`]). Default:
    /// [`crate::HighWatermarkPolicy::LogEnd`]: every append moves it to the new log end, so
    /// high-watermark and read-committed consumers see what was appended (a standalone log
    /// has no replicas to wait for, like a Kafka partition with one replica). A replication
    /// layer that decides the high watermark itself sets
    /// [`crate::HighWatermarkPolicy::Manual`]; [`crate::HighWatermarkPolicy::DurableEnd`]
    /// shows consumers only what an fsync made durable. The open logs the policy (the `log
    /// loaded` event's `high_watermark_policy` field).
    pub high_watermark: crate::HighWatermarkPolicy,
    /// How much of what the recovery of an unclean shutdown validated is kept to load the
    /// leader-epoch cache and the producer state from that one pass (Kafka's
    /// `LogSegment.recover` feeds both from it), instead of reading the recovered segments
    /// again. Memory for speed: a segment over the limits is read again after its recovery.
    /// Default: [`crate::RecoveryDigestLimits::default`];
    /// [`crate::RecoveryDigestLimits::NONE`] reads every recovered segment again.
    pub recovery_digest: crate::RecoveryDigestLimits,
    /// Keep the log free of offset gaps a crash created: after an unclean shutdown, a
    /// recovered segment that ends below the next segment's base at or above the
    /// checkpointed recovery point (an unsynced tail lost while a later segment's file
    /// survived) drops every later segment, as a truncating recovery does
    /// ([`crate::LoadReport::discontinuity`]). Nothing acknowledged as durable is lost by it
    /// (a durable append or flush of a later offset first synced that tail). Only for logs
    /// that have no legitimate gaps, never compacted and whose followers never roll across
    /// one: a consensus log (`seglog-raft` sets it). On a compacted log it would drop intact
    /// segments after the gaps cleaning leaves whenever the recovery point lags (issue #25).
    /// Default: false (Kafka's loader: every gap is kept and served).
    pub contiguous: bool,
}

impl Default for LogOpenOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            read_only: false,
            recover_all: false,
            trust_clean_shutdown: false,
            repair_destructively: false,
            decode_records: false,
            io: Io::direct(),
            segment_cache: None,
            high_watermark: crate::HighWatermarkPolicy::LogEnd,
            recovery_digest: crate::RecoveryDigestLimits::default(),
            contiguous: false,
        }
    }
}

/// What one segment looks like, for listings ([`Log::segments`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
///
/// Dropping a `Log` without [`Log::close`] is a crash for recovery purposes: no clean-shutdown
/// marker is written, so the next open recovers everything above the recovery point.
///
/// **The high watermark.** Consumers ([`crate::Isolation::ReadUncommitted`]) read below it, and
/// retention never deletes at or above it. It is monotonic: [`Log::set_high_watermark`] refuses a
/// backward move ([`crate::Error::HighWatermarkRegression`]); only a truncation lowers it. It is
/// persisted as Kafka does, in the root's `replication-offset-checkpoint` (Kafka's text
/// checkpoint format, written with the other checkpoints by `flush`, `tick` and `close`), and
/// restored at open, clamped to the log end. By default
/// ([`crate::HighWatermarkPolicy::LogEnd`]) every append publishes it at the new log end, as
/// a single-replica Kafka partition does; [`crate::HighWatermarkPolicy::DurableEnd`] has it
/// follow [`Log::durable_end_offset`] (consumers see only what an fsync made durable), and a
/// replication layer opts into [`crate::HighWatermarkPolicy::Manual`] (only the caller moves
/// it), through [`LogOpenOptions::high_watermark`] or [`Log::set_high_watermark_policy`].
#[derive(Debug)]
pub struct Log {
    pub(crate) dir: PathBuf,
    pub(crate) topic_partition: TopicPartition,
    /// The config and its segment-layer view, swapped whole by [`Log::set_config`]; every
    /// operation reads one snapshot (`settings.rs`).
    pub(crate) settings: RwLock<Arc<Settings>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) read_only: bool,
    pub(crate) published: Published<LogView<Arc<Segment>>>,
    pub(crate) writer: Mutex<Writer>,
    /// Recovery point, durable mark, flusher, group commit, commit join, dirty directory and
    /// poison (`durability.rs`: the rules between them are its methods).
    pub(crate) durability: DurabilityState,
    pub(crate) deletions: DeleteQueue<Doomed>,
    pub(crate) home: StateHome,
    pub(crate) load_report: LoadReport,
    /// The empty slice reads return when there is no segment (read-only, empty directory).
    pub(crate) empty_slice: OnceLock<FileSlice>,
    /// The leader-epoch cache and its checkpoint (`leader_epoch.rs`); changed under the
    /// writer lock.
    pub(crate) epochs: Mutex<EpochState>,
    /// The producer state and its snapshots (`producer_files.rs`, `log_producers.rs`);
    /// changed under the writer lock, read briefly by queries.
    pub(crate) producers: Mutex<crate::producer_files::Producers>,
    /// The [`crate::HighWatermarkPolicy`], encoded (`high_watermark.rs`).
    pub(crate) high_watermark_policy: crate::sync::AtomicUsize,
    /// The log cleaner (`cleaner/`) runs one round at a time under this mutex; it holds true
    /// once a round met damaged data (the log is then uncleanable until reopened, as Kafka
    /// marks a partition uncleanable).
    pub(crate) cleaning: Mutex<bool>,
    /// Truncations so far (bumped under the writer lock): a cleaning round that sees it change
    /// is aborted before its next swap.
    pub(crate) truncations: crate::sync::AtomicU64,
    /// The cleaner's cached timestamps of sealed segments (`cleaner/stats.rs`).
    pub(crate) cleaner_stats: Mutex<crate::stat_cache::StatCache>,
    /// When the cleaner can next purge tombstones or markers it kept (`purge_horizon.rs`).
    pub(crate) purge_horizon: crate::purge_horizon::PurgeHorizon,
    /// The async durability waiters and the sync thread (`durable_async.rs`).
    pub(crate) async_commit: crate::async_commit::AsyncCommit,
    /// Kafka's log metrics (`observe.rs`; nothing without the `metrics` feature).
    pub(crate) metrics: crate::observe::LogMetrics,
    /// Where the `.txnindex` first-use check's replay stopped (`txn_check.rs`).
    pub(crate) txn_check: crate::producer_files::TxnCheckCursor,
    /// The remote tier, the highest offset in it and the whole log's start offset
    /// (`remote/`, `remote_log.rs`).
    pub(crate) remote: crate::remote::RemoteState,
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
    /// before loading, then loads as Kafka's `LogLoader` does.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; [`Error::Locked`] when another process (a Kafka broker,
    /// another seglog) or another `Log` (closed or not, until dropped) holds the directory; I/O and segment errors while
    /// loading; [`Error::UnsplittableSegment`] for a segment whose offsets overflow its base
    /// and that cannot be split.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig) -> Result<Self> {
        Self::open_with(dir, config, LogOpenOptions::default())
    }

    /// Opens the log without ever writing in `dir`: no lock file, no marker consumed, no
    /// recovery written, missing or broken indexes rebuilt in memory, a torn tail hidden
    /// from reads rather than truncated. For inspecting a directory a running broker owns or a
    /// read-only copy: index files are read into memory, never mapped, so the owner trimming
    /// or truncating them while this log is open cannot fault it. Writes return
    /// [`Error::ReadOnly`].
    ///
    /// The high watermark is the checkpointed one
    /// ([`crate::HighWatermarkPolicy::Manual`]): an inspection shows what the owner published.
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
            LogOpenOptions {
                read_only: true,
                high_watermark: crate::HighWatermarkPolicy::Manual,
                ..LogOpenOptions::default()
            },
        )
    }

    /// [`Log::open`] / [`Log::open_read_only`] with explicit [`LogOpenOptions`].
    ///
    /// # Errors
    /// As [`Log::open`].
    pub fn open_with(
        dir: impl AsRef<Path>,
        config: LogConfig,
        options: LogOpenOptions,
    ) -> Result<Self> {
        config.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let mode = LoadMode {
            read_only: options.read_only,
            recover_all: options.recover_all,
            trust_clean_shutdown: options.trust_clean_shutdown,
            repair_destructively: options.repair_destructively,
            decode_records: options.decode_records,
            digest_limits: options.recovery_digest,
            contiguous: options.contiguous,
        };
        let cache = options
            .segment_cache
            .unwrap_or_else(|| segment_cache_for(&config));
        let policy = options.high_watermark;
        if options.read_only {
            let (state, problems) = home::peek_read_only(&dir)?;
            crate::observe::checkpoint_problems(&problems);
            let home = StateHome::ReadOnly;
            let io = options.io;
            let log = Self::load(
                dir,
                config,
                options.clock,
                io,
                (state, problems),
                home,
                mode,
                cache,
                policy,
            )?;
            return Ok(log);
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        let (home, state, problems) = home::open_standalone(&dir, &options.io)?;
        crate::observe::checkpoint_problems(&problems);
        let known = state.recovery_point_known;
        let log = Self::load(
            dir,
            config,
            options.clock,
            options.io,
            (state, problems),
            home,
            mode,
            cache,
            policy,
        )?;
        if !known {
            // Checkpointed at once: the loader's rule for gaps after a crash needs to know
            // where flushed data ends (docs/durability.md, section 4).
            log.write_checkpoints(true)?;
        }
        Ok(log)
    }

    /// Loads a partition directory for a [`crate::LogDir`] (which owns the root state).
    // The load's inputs; bundled after the durability refactor lands.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_in_log_dir(
        dir: PathBuf,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        io: Io,
        state: (InitialState, Vec<CheckpointProblem>),
        mode: LoadMode,
        root: Option<&SharedRoot>,
        cache: SegmentCache,
        policy: crate::HighWatermarkPolicy,
    ) -> Result<Self> {
        config.validate()?;
        // `None`: a read-only `LogDir`, which holds no lock.
        let home = match root {
            Some(root) if !mode.read_only => root.home_for(&dir),
            _ => StateHome::ReadOnly,
        };
        Self::load(dir, config, clock, io, state, home, mode, cache, policy)
    }

    /// Loads `dir` from `state` (with the checkpoint files that were read as empty, for the
    /// report), then applies the high-watermark `policy`.
    #[allow(clippy::too_many_arguments)]
    fn load(
        dir: PathBuf,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        io: Io,
        (state, checkpoint_problems): (InitialState, Vec<CheckpointProblem>),
        home: StateHome,
        mode: LoadMode,
        cache: SegmentCache,
        policy: crate::HighWatermarkPolicy,
    ) -> Result<Self> {
        let read_only = mode.read_only;
        let started = std::time::Instant::now();
        let _span = tracing::info_span!("load", dir = %dir.display()).entered();
        let segment_config = SegmentConfig {
            io,
            cache: Some(cache),
            decode_records_on_recovery: mode.decode_records,
            ..segment_config(&config)
        };
        let Loaded {
            segments,
            active,
            log_start_offset,
            recovery_point,
            end,
            mut report,
            deleted,
            digests,
        } = load::load(&dir, &segment_config, clock.now_ms(), state, mode)?;
        report.checkpoint_problems = checkpoint_problems;
        let (epochs, epoch_source) = leader_epoch::load(
            &dir,
            &segment_config.io,
            read_only,
            &segments,
            &report,
            &digests,
            log_start_offset,
            end.offset,
        )?;
        report.leader_epochs = epoch_source;
        let (producers, producer_load) = crate::producer_files::Producers::load(
            &dir,
            read_only,
            config.producer_id_expiration_ms,
            &segments,
            report.recovered().collect(),
            &digests,
            report.had_clean_shutdown,
            log_start_offset,
            end.offset,
            clock.now_ms(),
        )?;
        report.producers = producer_load;
        drop(digests);
        let txns = Arc::new(producers.unstable_txns());
        let restored_high_watermark = state.high_watermark;
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
            txns,
        };
        let durability = DurabilityState::new(recovery_point, now, segment_config.io.clone());
        let metrics = crate::observe::LogMetrics::new(&dir);
        let log = Self {
            topic_partition: home::key_for(&dir),
            dir,
            settings: RwLock::new(Arc::new(Settings {
                config,
                segment: segment_config,
            })),
            clock,
            read_only,
            published: Published::new(view),
            writer: Mutex::new(Writer {
                active,
                closed: false,
                close_done: false,
            }),
            durability,
            deletions: DeleteQueue::default(),
            home,
            load_report: report,
            empty_slice: OnceLock::new(),
            epochs: Mutex::new(epochs),
            producers: Mutex::new(producers),
            high_watermark_policy: crate::sync::AtomicUsize::new(0),
            cleaning: Mutex::new(false),
            truncations: crate::sync::AtomicU64::new(0),
            cleaner_stats: Mutex::new(crate::stat_cache::StatCache::default()),
            purge_horizon: crate::purge_horizon::PurgeHorizon::new(),
            async_commit: crate::async_commit::AsyncCommit::default(),
            txn_check: crate::producer_files::TxnCheckCursor::default(),
            remote: crate::remote::RemoteState::default(),
            metrics,
        };
        let due = now.saturating_add(log.settings().config.file_delete_delay_ms);
        for segment in deleted {
            log.deletions.push(due, segment);
        }
        // The high watermark starts at the log start offset (Kafka: the partition later
        // restores it from replication-offset-checkpoint); set its position properly.
        log.set_high_watermark(log_start_offset)?;
        // Then the checkpointed one (Kafka's replication-offset-checkpoint), clamped to the
        // log end: a crash may have cut the tail it covered.
        if let Some(high_watermark) = restored_high_watermark {
            log.set_high_watermark(high_watermark)?;
        }
        // Then the policy, which may raise it (to the log end or the durable end).
        log.set_high_watermark_policy(policy)?;
        let offsets = (log_start_offset, end.offset, log.recovery_point());
        let took = started.elapsed();
        let hw = (policy, log.high_watermark());
        crate::observe::loaded(&log.dir, &log.load_report, offsets, hw, read_only, took);
        log.metrics
            .recovered(crate::observe::recovery_bytes_scanned(&log.load_report));
        log.observe_shape(&log.lock_writer());
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

    /// Whether the log was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// What loading found and did (recovered and truncated segments, leftovers removed).
    pub fn load_report(&self) -> &LoadReport {
        &self.load_report
    }

    /// The first offset readers may fetch. With a remote tier holding older data (KIP-405)
    /// this is the whole log's start, at or below [`Log::local_log_start_offset`], and reads
    /// between the two go to the tier.
    pub fn log_start_offset(&self) -> i64 {
        let local = self.published.load().log_start_offset;
        self.remote
            .log_start_offset()
            .map_or(local, |start| start.min(local))
    }

    /// The offset the next appended record gets.
    pub fn log_end_offset(&self) -> i64 {
        self.published.load().end.offset
    }

    /// The log end offset with its segment and byte position.
    pub fn log_end_offset_metadata(&self) -> OffsetMetadata {
        self.published.load().end
    }

    /// The high watermark: consumers ([`crate::Isolation::ReadUncommitted`]) read below it.
    pub fn high_watermark(&self) -> i64 {
        self.published.load().high_watermark.offset
    }

    /// Every offset below this is flushed to disk (and is trusted without a scan after a
    /// crash).
    pub fn recovery_point(&self) -> i64 {
        self.durability.recovery_point()
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.published.load().segments.len()
    }

    /// Sets the high watermark, clamped to `[log start offset, log end offset]` (the caller —
    /// a replication layer, with [`crate::HighWatermarkPolicy::Manual`] — decides it; under the
    /// default [`crate::HighWatermarkPolicy::LogEnd`] it is already at the log end). Returns
    /// the value set. Monotonic: only a truncation
    /// lowers it.
    ///
    /// # Errors
    /// [`Error::HighWatermarkRegression`] when the clamped offset is below the high
    /// watermark (nothing changes); segment errors while locating the offset's batch.
    pub fn set_high_watermark(&self, offset: i64) -> Result<i64> {
        let _writer = self.lock_writer();
        let view = self.published.load();
        let target = offset.clamp(view.log_start_offset, view.end.offset);
        if target < view.high_watermark.offset {
            return Err(self.high_watermark_regression(view.high_watermark.offset, target));
        }
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

    /// The bytes of every segment's `.log` (Kafka's `Size`), from the published view: no
    /// segment is opened for it.
    pub(crate) fn size_bytes_total(&self) -> u64 {
        let view = self.published.load();
        view.segments.iter().map(|(_, s)| s.size()).sum()
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

    /// What the open policy found in sealed segments that were opened on first use rather
    /// than at load (after a clean shutdown, see [`LoadReport`]): base offset and report, for
    /// each such segment opened so far, oldest first. A segment whose indexes were rebuilt, or
    /// whose damaged bytes were kept, then says so here instead of in the load report.
    pub fn first_use_reports(&self) -> Vec<(i64, crate::OpenReport)> {
        let view = self.published.load();
        view.segments
            .iter()
            .filter_map(|(base, segment)| segment.deferred_report().map(|r| (base, r)))
            .collect()
    }

    /// Closes the log: seals the active segment (final time-index entry, trimmed indexes),
    /// flushes everything, deletes segments waiting for deletion, then writes the checkpoints
    /// (this log's entries, also inside a [`crate::LogDir`]) and — last, and only if nothing
    /// failed — the clean-shutdown marker (of a standalone log). Idempotent once it
    /// succeeded; after a failed close, a retry runs the remaining steps again and fails the
    /// same way while the log is poisoned (it never reports success for a close that did not
    /// flush). After the first call, writes fail with [`Error::Closed`] (or
    /// [`Error::Poisoned`]) and reads keep working. The directory lock is released only when
    /// the log is dropped (with the last other holder of its root: its `LogDir` and that
    /// root's other logs): reads still go through files it maps, which a new owner could
    /// shrink under it.
    ///
    /// # Errors
    /// I/O and segment errors; the marker is then not written, so the next open recovers.
    pub fn close(&self) -> Result<()> {
        self.close_with(true)
    }

    /// [`Log::close`]; `own_checkpoints` false leaves the checkpoint write to the caller (a
    /// `LogDir` closing all its logs writes the root once, after them).
    pub(crate) fn close_with(&self, own_checkpoints: bool) -> Result<()> {
        let mut writer = self.lock_writer();
        if writer.close_done {
            return Ok(());
        }
        // Writes stop now, whatever happens next; `close_done` is set only at the end, so a
        // retried close after a failure runs (and fails) again instead of returning `Ok`.
        writer.closed = true;
        // Tail-follow waiters stop waiting: nothing will be appended any more.
        self.published.close();
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
        // Kafka's close: a producer snapshot at the log end, so the next open need not replay.
        self.producers_closed(self.log_end_offset())?;
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
        if own_checkpoints {
            self.write_checkpoints(true)?;
        }
        self.home.write_clean_marker()?;
        self.lock_writer().close_done = true;
        tracing::info!(
            dir = %self.dir.display(), log_end_offset = self.log_end_offset(),
            "log closed cleanly"
        );
        Ok(())
    }

    /// Writes this log's checkpoint entries into its root (standalone, or inside a `LogDir`,
    /// keeping the other partitions' entries). With `force` false, skips the write when
    /// nothing changed since this log last wrote them.
    pub(crate) fn write_checkpoints(&self, force: bool) -> Result<()> {
        self.home
            .write_checkpoints(force, || self.checkpoint_values())
    }

    /// Writes this log's checkpoint entries now: for state that must be durable before the
    /// caller returns (a truncation, a roll across a gap).
    pub(crate) fn write_checkpoints_now(&self) -> Result<()> {
        self.write_checkpoints(true)
    }

    /// (recovery point, log start offset if Kafka would write it: above the first base).
    pub(crate) fn checkpoint_values(&self) -> crate::home::Entries {
        let view = self.published.load();
        let first_base = view
            .segments
            .first()
            .map_or(view.log_start_offset, |(b, _)| b);
        let log_start = (view.log_start_offset > first_base).then_some(view.log_start_offset);
        // A tiered log's whole start (below its first local segment), as Kafka checkpoints
        // `logStartOffset`; `Log::set_remote_tier` takes it back after a reopen.
        let log_start = self.remote.log_start_offset().or(log_start);
        (self.recovery_point(), log_start, view.high_watermark.offset)
    }

    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        lock(&self.writer)
    }

    /// Fails if a write or fsync failed earlier.
    pub(crate) fn check_poison(&self) -> Result<()> {
        self.durability.check_poison(&self.dir)
    }

    /// Records a failed write/fsync: the log refuses writes until reopened. Returns the
    /// error for `?`.
    pub(crate) fn poisoned_by(&self, op: &'static str, error: seglog_segment::Error) -> Error {
        if !error.is_corruption() {
            crate::observe::poisoned(&self.dir, op, &error);
        }
        self.durability.poisoned_by(op, error)
    }

    /// Sets the metric gauges from the published view (after a change of the segment map or
    /// the log start: open, roll, retention, truncation, `DeleteRecords`, a cleaning round;
    /// nothing without the `metrics` feature). It takes the writer, so it runs under the writer
    /// lock: appends increment the size gauge under it, and a total set outside it could
    /// overwrite a concurrent append's increment with an older one.
    pub(crate) fn observe_shape(&self, _writer: &Writer) {
        #[cfg(feature = "metrics")]
        {
            let view = self.published.load();
            let size = view.segments.iter().map(|(_, s)| s.size()).sum();
            self.metrics.shape(
                view.log_start_offset,
                view.end.offset,
                view.segments.len(),
                size,
            );
        }
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

    /// Unlinks at once the files of a segment a truncation removed, without the `.deleted`
    /// stage and its delay: appends may later fill the offsets it held and pass them, and a
    /// `.deleted` file found at load in a hole between two live segments is renamed back (the
    /// loader's rule for an unexplained one, see `leftovers`), which would bring back records
    /// the truncation removed. Readers already holding a slice keep their open file; a reader
    /// that reopens the segment's files gets an I/O error (it read past a truncation). The
    /// caller fsyncs the directory.
    pub(crate) fn unlink_truncated(&self, segment: &Segment) -> Result<()> {
        segment
            .delete_files()
            .map_err(|e| self.poisoned_by("remove a truncated segment", e))
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
