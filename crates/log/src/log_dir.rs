//! [`LogDir`]: a Kafka `log.dirs` root holding many `<topic>-<partition>` directories, with the
//! root's lock, clean-shutdown marker and offset checkpoints (spec §1.3–1.5).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::checkpoint::{
    CheckpointProblem, LOG_START_OFFSET_CHECKPOINT, OffsetCheckpointFile,
    RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};
use crate::clean_shutdown::{CLEAN_SHUTDOWN_FILE, CleanShutdownMarker};
use crate::clock::Clock;
use crate::config::LogConfig;
use crate::fsutil::remove_if_exists;
use crate::home::{InitialState, SharedRoot};
use crate::load::LoadMode;
use crate::lock::DirLock;
use crate::log::{Log, LogOpenOptions};
use crate::log_dir_progress::PartitionLoaded;
use seglog_segment::Io;
use std::sync::Arc;

use crate::sync::{Mutex, RwLock, RwLockReadGuard, lock, read, write};
use crate::topic_config::TopicConfigs;
use crate::topic_partition::{PartitionDirKind, TopicPartition, parse_partition_dir_name};
use crate::{Error, Result};

/// A log-dirs root. Opening it locks `<root>/.lock` (held until the `LogDir` and every [`Log`]
/// it handed out are dropped: a log that outlives its `LogDir` keeps the root locked, so no
/// second writer can open it), consumes `<root>/.kafka_cleanshutdown`
/// before loading anything (a crash while loading counts as unclean), reads the root
/// checkpoints and loads every partition directory, in parallel on
/// [`LogConfig::num_recovery_threads_per_data_dir`] threads (a partition whose load fails is
/// offline, the others are served: [`LogDir::open_with_progress`]). Directories that are not
/// `<topic>-<partition>` are ignored; `-stray` and `-future` directories are left alone;
/// `-delete` directories are removed `file.delete.delay.ms` after opening (by
/// [`LogDir::tick`]), without being loaded.
///
/// **Transaction decisions.** A commit across partitions of a
/// [`crate::TransactionalProducer`] keeps its decision in the root while it writes its
/// markers (`seglog-txn-decision-<producer id>`, [`crate::TxnDecision`], a file Kafka does
/// not have and ignores); one a crash left behind is completed by the producer id's next
/// [`crate::TransactionalProducer::init`], not by the open.
///
/// **Topic configs.** The `LogConfig` given at open is the broker's default for every
/// partition; [`TopicConfigs`] override it per topic, as Kafka's topic configs override the
/// broker config ([`LogDir::open_with_topic_configs`]). They are not persisted: Kafka keeps topic
/// configs in its cluster metadata, not in the log dir, so nothing of them is written under the
/// root and the caller passes them again at every open. [`LogDir::alter_topic_config`] changes
/// a topic's overrides at runtime and applies them to its open partitions ([`Log::set_config`]
/// says when each setting takes effect); partitions created later start with them too.
#[derive(Debug)]
pub struct LogDir {
    root: PathBuf,
    /// The broker defaults every partition starts from.
    defaults: LogConfig,
    /// The per-topic overrides over `defaults`. Lock order: before `logs`.
    topic_configs: RwLock<TopicConfigs>,
    clock: Arc<dyn Clock>,
    /// The I/O seam of every log and of the root's directory fsyncs.
    io: Io,
    read_only: bool,
    /// The root's lock and checkpoint lock, shared with every log (`None` when read-only).
    shared: Option<SharedRoot>,
    had_clean_shutdown: bool,
    checkpoint_problems: Vec<CheckpointProblem>,
    logs: RwLock<BTreeMap<TopicPartition, Arc<Log>>>,
    /// The partitions whose load failed at open (fixed from then on: only a reopen retries).
    offline: BTreeMap<TopicPartition, OfflinePartition>,
    doomed_dirs: Mutex<Vec<(i64, PathBuf)>>,
    closed: Mutex<bool>,
    /// Bounds the open segment files of all the logs (`segment_cache_capacity`).
    segment_cache: seglog_segment::SegmentCache,
    /// Every log's [`crate::HighWatermarkPolicy`] ([`LogOpenOptions::high_watermark`]).
    high_watermark_policy: crate::HighWatermarkPolicy,
}

/// A partition whose load failed at open.
#[derive(Debug)]
struct OfflinePartition {
    dir: PathBuf,
    error: Arc<Error>,
    /// Its root checkpoint entries as read at open, written back unchanged by every
    /// checkpoint of the root (the next open needs them to recover it).
    entries: OfflineEntries,
}

/// The root checkpoint entries of an offline partition.
#[derive(Debug, Clone, Copy)]
struct OfflineEntries {
    recovery_point: Option<i64>,
    log_start_offset: Option<i64>,
    high_watermark: Option<i64>,
}

/// What one [`LogDir::tick`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogDirTickReport {
    /// Each partition's [`crate::TickReport`].
    pub partitions: BTreeMap<TopicPartition, crate::TickReport>,
    /// The `-delete` directories removed because their delay passed.
    pub deleted_dirs: Vec<PathBuf>,
}

impl LogDir {
    /// Opens (creating it if needed) the root `root`; every partition uses `config` (no topic
    /// overrides: see [`LogDir::open_with_topic_configs`]) and the default
    /// [`crate::HighWatermarkPolicy::LogEnd`]: each partition's high watermark follows its log
    /// end, so consumers see what was appended. A replicating broker passes
    /// [`crate::HighWatermarkPolicy::Manual`] to [`LogDir::open_with`].
    ///
    /// # Errors
    /// [`Error::Locked`] if another process (a Kafka broker, another seglog) holds the root,
    /// or a `LogDir` or [`Log`] of this process (also a closed one, or one whose `LogDir` was
    /// dropped) is still alive; I/O errors of the root (its marker, listing, checkpoints).
    /// A partition's load error does not fail the open: the partition is offline
    /// ([`LogDir::offline_partitions`], [`LogDir::open_with_progress`]).
    pub fn open(root: impl AsRef<Path>, config: LogConfig) -> Result<Self> {
        Self::open_with(root, config, LogOpenOptions::default())
    }

    /// [`LogDir::open`] with a clock, read-only (nothing written, no lock), or recovering
    /// every segment of every partition ([`LogOpenOptions::recover_all`]).
    ///
    /// # Errors
    /// As [`LogDir::open`].
    pub fn open_with(
        root: impl AsRef<Path>,
        config: LogConfig,
        options: LogOpenOptions,
    ) -> Result<Self> {
        Self::open_with_topic_configs(root, config, TopicConfigs::new(), options)
    }

    /// [`LogDir::open_with`] where the partitions of the topics in `topic_configs` use
    /// `defaults` with their topic's overrides (Kafka's topic configs over the broker config).
    ///
    /// # Errors
    /// As [`LogDir::open`]; [`Error::InvalidConfig`] when a topic's config does not validate
    /// (checked before anything is touched).
    pub fn open_with_topic_configs(
        root: impl AsRef<Path>,
        defaults: LogConfig,
        topic_configs: TopicConfigs,
        options: LogOpenOptions,
    ) -> Result<Self> {
        Self::open_with_progress(root, defaults, topic_configs, options, |_| {})
    }

    /// [`LogDir::open_with_topic_configs`], calling `on_loaded` on this thread for each
    /// partition as soon as its load finishes (completion order), while the others may still
    /// be loading: the [`Log`] it carries serves reads and appends at once, so a broker can
    /// bring a partition online without waiting for the whole root (Kafka's logs likewise
    /// become available as their load jobs finish).
    ///
    /// The partitions are loaded (after an unclean shutdown, recovered) on a pool of
    /// [`LogConfig::num_recovery_threads_per_data_dir`] threads of `defaults` (Kafka's
    /// `num.recovery.threads.per.data.dir`, default 2), one job per partition; the segment cache
    /// bounds the open files of all of them together. The result does not depend on the
    /// thread count: each partition directory is written only by the job loading it.
    ///
    /// A partition whose load fails does not fail the open (Kafka would take the whole log
    /// dir offline): it is **offline**, reported to `on_loaded` and by
    /// [`LogDir::offline_partitions`] with its error, left untouched on disk, refused by
    /// [`LogDir::get_or_create`] ([`Error::PartitionOffline`]); its checkpoint entries are kept
    /// as read, and [`LogDir::close`] writes no clean-shutdown marker while a partition is
    /// offline, so the next open recovers it.
    ///
    /// # Errors
    /// As [`LogDir::open_with_topic_configs`], but not a partition's load error.
    pub fn open_with_progress(
        root: impl AsRef<Path>,
        defaults: LogConfig,
        topic_configs: TopicConfigs,
        options: LogOpenOptions,
        mut on_loaded: impl FnMut(&PartitionLoaded<'_>),
    ) -> Result<Self> {
        let started = Instant::now();
        let config = defaults;
        config.validate()?;
        for topic in topic_configs.topics() {
            topic_configs.resolve(&config, topic)?;
        }
        let root = root.as_ref().to_path_buf();
        let marker = CleanShutdownMarker::new(&root, &options.io);
        let (shared, had_clean_shutdown) = if options.read_only {
            (None, marker.exists()?)
        } else {
            std::fs::create_dir_all(&root).map_err(|e| Error::io("create directory", &root, e))?;
            let shared = SharedRoot {
                root: root.clone(),
                lock: Arc::new(DirLock::acquire(&root)?),
                checkpoint_lock: Arc::new(Mutex::new(())),
                io: options.io.clone(),
            };
            (Some(shared), marker.consume()?)
        };
        let (recovery_points, recovery_point_problem) =
            OffsetCheckpointFile::new(root.join(RECOVERY_POINT_CHECKPOINT)).read_or_report();
        let (log_starts, log_start_problem) =
            OffsetCheckpointFile::new(root.join(LOG_START_OFFSET_CHECKPOINT)).read_or_report();
        let (high_watermarks, high_watermark_problem) =
            OffsetCheckpointFile::new(root.join(REPLICATION_OFFSET_CHECKPOINT)).read_or_report();
        let checkpoint_problems: Vec<CheckpointProblem> = recovery_point_problem
            .into_iter()
            .chain(log_start_problem)
            .chain(high_watermark_problem)
            .collect();
        crate::observe::checkpoint_problems(&checkpoint_problems);
        let now = options.clock.now_ms();
        // One cache bounds the open segment files of every partition.
        let cache = options
            .segment_cache
            .clone()
            .unwrap_or_else(|| crate::log::segment_cache_for(&config));
        let mut doomed_dirs = Vec::new();
        let entries =
            std::fs::read_dir(&root).map_err(|e| Error::io("list directory", &root, e))?;
        let mut dirs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("list directory", &root, e))?;
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        dirs.sort();
        let mut jobs = Vec::new();
        for dir in dirs {
            let Some(parsed) = dir
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| parse_partition_dir_name(n).ok())
            else {
                continue;
            };
            match parsed.kind {
                PartitionDirKind::Live => {}
                PartitionDirKind::Delete => {
                    doomed_dirs.push((now.saturating_add(config.file_delete_delay_ms), dir));
                    continue;
                }
                PartitionDirKind::Stray | PartitionDirKind::Future => continue,
            }
            let tp = parsed.topic_partition;
            let state = InitialState {
                had_clean_shutdown,
                recovery_point: recovery_points.get(&tp).copied().unwrap_or(0),
                recovery_point_known: recovery_points.contains_key(&tp),
                log_start_offset: log_starts.get(&tp).copied().unwrap_or(0),
                log_start_offset_known: log_starts.contains_key(&tp),
                high_watermark: high_watermarks.get(&tp).copied(),
            };
            let partition_config = topic_configs.resolve(&config, &tp.topic)?;
            jobs.push((tp, dir, partition_config, state));
        }
        let mode = LoadMode {
            read_only: options.read_only,
            recover_all: options.recover_all,
            trust_clean_shutdown: options.trust_clean_shutdown,
            repair_destructively: options.repair_destructively,
            decode_records: options.decode_records,
            digest_limits: options.recovery_digest,
            contiguous: options.contiguous,
        };
        // Each job writes only its own partition directory (and, through the checkpoint lock,
        // its own checkpoint entries); `logs` and `offline` are filled on this thread.
        let load = |(tp, dir, partition_config, state): (
            TopicPartition,
            PathBuf,
            LogConfig,
            InitialState,
        )| {
            let started = Instant::now();
            let log = (|| {
                if !options.read_only {
                    // A stale marker from standalone use of this directory must never vouch
                    // for it.
                    remove_if_exists(&dir.join(CLEAN_SHUTDOWN_FILE))?;
                }
                Log::open_in_log_dir(
                    dir.clone(),
                    partition_config,
                    Arc::clone(&options.clock),
                    options.io.clone(),
                    (state, checkpoint_problems.clone()),
                    mode,
                    shared.as_ref(),
                    cache.clone(),
                    options.high_watermark,
                )
            })();
            (tp, dir, log.map(Arc::new), started.elapsed())
        };
        let total = jobs.len();
        let threads = usize::try_from(config.num_recovery_threads_per_data_dir)
            .unwrap_or(1)
            .max(1);
        let mut logs = BTreeMap::new();
        let mut offline = BTreeMap::new();
        let mut recovered_bytes_total = 0u64;
        let name = root.display().to_string();
        crate::observe::log_dir_loading(&root, total, threads, had_clean_shutdown);
        crate::recovery_pool::run_jobs(jobs, threads, &name, load, |_, (tp, dir, log, took)| {
            let done = logs.len() + offline.len() + 1;
            let (log, segments, bytes, recovered_bytes) = match log {
                Ok(log) => {
                    let bytes = log.size_bytes_total();
                    let recovered = crate::observe::recovery_bytes_scanned(log.load_report());
                    let segments = log.segment_count();
                    (Ok(log), segments, bytes, recovered)
                }
                Err(error) => (Err(Arc::new(error)), 0, 0, 0),
            };
            recovered_bytes_total = recovered_bytes_total.saturating_add(recovered_bytes);
            let loaded = PartitionLoaded {
                topic_partition: &tp,
                dir: &dir,
                log: log.as_ref(),
                done,
                total,
                segments,
                bytes,
                recovered_bytes,
                recovered_bytes_total,
                took,
            };
            loaded.emit(&root);
            on_loaded(&loaded);
            match log {
                Ok(log) => {
                    logs.insert(tp, log);
                }
                Err(error) => {
                    let entries = OfflineEntries {
                        recovery_point: recovery_points.get(&tp).copied(),
                        log_start_offset: log_starts.get(&tp).copied(),
                        high_watermark: high_watermarks.get(&tp).copied(),
                    };
                    offline.insert(
                        tp,
                        OfflinePartition {
                            dir,
                            error,
                            entries,
                        },
                    );
                }
            }
        });
        crate::observe::log_dir_loaded(&root, logs.len(), offline.len(), started.elapsed());
        let log_dir = Self {
            root,
            defaults: config,
            topic_configs: RwLock::new(topic_configs),
            clock: options.clock,
            io: options.io,
            read_only: options.read_only,
            shared,
            had_clean_shutdown,
            checkpoint_problems,
            logs: RwLock::new(logs),
            offline,
            doomed_dirs: Mutex::new(doomed_dirs),
            closed: Mutex::new(false),
            segment_cache: cache,
            high_watermark_policy: options.high_watermark,
        };
        // Written at once so the root looks like a log dir to standalone opens from now on.
        log_dir.checkpoint()?;
        Ok(log_dir)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the marker was there at open (nothing was scanned then).
    pub fn had_clean_shutdown(&self) -> bool {
        self.had_clean_shutdown
    }

    /// The root checkpoint files that could not be read or parsed at open: they were read as
    /// empty (Kafka's rule), so every partition fell back to recovery point 0 and a log start
    /// at its first segment. Each partition's [`Log::load_report`] lists them too.
    pub fn checkpoint_problems(&self) -> &[CheckpointProblem] {
        &self.checkpoint_problems
    }

    /// Every loaded log, by topic-partition.
    pub fn logs(&self) -> Vec<(TopicPartition, Arc<Log>)> {
        self.read_logs()
            .iter()
            .map(|(tp, log)| (tp.clone(), Arc::clone(log)))
            .collect()
    }

    /// The log of `topic_partition`, if loaded (`None` for an offline partition too).
    pub fn log(&self, topic_partition: &TopicPartition) -> Option<Arc<Log>> {
        self.read_logs().get(topic_partition).cloned()
    }

    /// The partitions whose load failed at open, with the error, by topic-partition: they are
    /// not served, their directories are left as they were, and only a reopen retries them
    /// ([`LogDir::open_with_progress`]).
    pub fn offline_partitions(&self) -> Vec<(TopicPartition, PathBuf, Arc<Error>)> {
        self.offline
            .iter()
            .map(|(tp, o)| (tp.clone(), o.dir.clone(), Arc::clone(&o.error)))
            .collect()
    }

    /// The log of `topic_partition`, creating its directory `<root>/<topic>-<partition>` and
    /// an empty log when it does not exist yet.
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::PartitionOffline`] for a partition whose load failed at
    /// open (its directory is not touched); I/O and load errors.
    pub fn get_or_create(&self, topic_partition: &TopicPartition) -> Result<Arc<Log>> {
        let Some(shared) = &self.shared else {
            return Err(Error::ReadOnly {
                dir: self.root.clone(),
            });
        };
        if let Some(offline) = self.offline.get(topic_partition) {
            return Err(Error::PartitionOffline {
                topic: topic_partition.topic.clone(),
                partition: topic_partition.partition,
                dir: offline.dir.clone(),
                source: Arc::clone(&offline.error),
            });
        }
        // Held until the log is in `logs`: a concurrent `alter_topic_config` either comes
        // before (the log starts with it) or after (it updates the log).
        let topic_configs = read(&self.topic_configs);
        let mut logs = write(&self.logs);
        if let Some(log) = logs.get(topic_partition) {
            return Ok(Arc::clone(log));
        }
        let config = topic_configs.resolve(&self.defaults, &topic_partition.topic)?;
        let dir = self.root.join(topic_partition.dir_name());
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        crate::fsutil::sync_dir(&self.io, &self.root)?;
        let state = InitialState {
            had_clean_shutdown: true,
            recovery_point: 0,
            recovery_point_known: false,
            log_start_offset: 0,
            log_start_offset_known: false,
            high_watermark: None,
        };
        let log = Arc::new(Log::open_in_log_dir(
            dir,
            config,
            Arc::clone(&self.clock),
            self.io.clone(),
            (state, Vec::new()),
            LoadMode::default(),
            Some(shared),
            self.segment_cache.clone(),
            self.high_watermark_policy,
        )?);
        logs.insert(topic_partition.clone(), Arc::clone(&log));
        drop(logs);
        drop(topic_configs);
        // The new log's recovery point is checkpointed at once: the loader's rule for gaps
        // after a crash needs to know where flushed data ends.
        self.checkpoint()?;
        Ok(log)
    }

    /// The broker defaults every partition starts from (the config given at open).
    pub fn default_config(&self) -> &LogConfig {
        &self.defaults
    }

    /// Every topic's overrides.
    pub fn topic_configs(&self) -> TopicConfigs {
        read(&self.topic_configs).clone()
    }

    /// The config of `topic`'s partitions: the defaults with the topic's overrides.
    ///
    /// # Errors
    /// None in practice: every stored set of overrides resolved when it was stored, and the
    /// defaults do not change ([`TopicConfigs::resolve`]'s errors otherwise).
    pub fn topic_config(&self, topic: &str) -> Result<LogConfig> {
        read(&self.topic_configs).resolve(&self.defaults, topic)
    }

    /// Replaces `topic`'s overrides with `overrides` (Kafka's `AlterConfigs`: the pairs given
    /// are the topic's whole set; none puts the topic back on the defaults) and applies the
    /// resulting config to every open partition of the topic ([`Log::set_config`]: roll,
    /// retention and flush settings take effect on the next append or tick, segment-shaping
    /// ones from the next roll). Partitions created later start with it. Not persisted (see
    /// the type's docs). Returns the topic's new config.
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::NotATopicConfig`] for a broker-level or root-wide key
    /// (the only settings that cannot change per topic at runtime: `seglog.segment.cache.capacity`
    /// sizes the root's shared cache); [`Error::InvalidConfig`] for a bad value. Nothing
    /// changes on error.
    pub fn alter_topic_config<I, K, V>(&self, topic: &str, overrides: I) -> Result<LogConfig>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        if self.read_only {
            return Err(Error::ReadOnly {
                dir: self.root.clone(),
            });
        }
        let mut topic_configs = write(&self.topic_configs);
        let mut next = topic_configs.clone();
        next.replace(topic, overrides)?;
        let config = next.resolve(&self.defaults, topic)?;
        let logs: Vec<Arc<Log>> = self
            .read_logs()
            .iter()
            .filter(|(tp, _)| tp.topic == topic)
            .map(|(_, log)| Arc::clone(log))
            .collect();
        // Validated above and the cache capacity is the root's: no log refuses it.
        for log in &logs {
            log.set_config(config.clone())?;
        }
        *topic_configs = next;
        Ok(config)
    }

    /// The cache bounding the open segment files of every log of this root.
    pub fn segment_cache(&self) -> &seglog_segment::SegmentCache {
        &self.segment_cache
    }

    /// Writes the root checkpoints for every log (recovery points; log start offsets above the
    /// first segment's base), atomically; an offline partition's entries as they were read at
    /// open.
    ///
    /// # Errors
    /// I/O errors of the checkpoint writes.
    pub fn checkpoint(&self) -> Result<()> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let _guard = lock(&shared.checkpoint_lock);
        let mut recovery_points = BTreeMap::new();
        let mut log_starts = BTreeMap::new();
        let mut high_watermarks = BTreeMap::new();
        for (tp, log) in self.read_logs().iter() {
            let (recovery_point, log_start, high_watermark) = log.checkpoint_values();
            recovery_points.insert(tp.clone(), recovery_point);
            high_watermarks.insert(tp.clone(), high_watermark);
            if let Some(log_start) = log_start {
                log_starts.insert(tp.clone(), log_start);
            }
        }
        for (tp, offline) in &self.offline {
            let entries = offline.entries;
            let entry = [
                (&mut recovery_points, entries.recovery_point),
                (&mut log_starts, entries.log_start_offset),
                (&mut high_watermarks, entries.high_watermark),
            ];
            for (file, value) in entry {
                if let Some(value) = value {
                    file.insert(tp.clone(), value);
                }
            }
        }
        OffsetCheckpointFile::new(self.root.join(RECOVERY_POINT_CHECKPOINT))
            .with_io(self.io.clone())
            .write(&recovery_points)?;
        OffsetCheckpointFile::new(self.root.join(LOG_START_OFFSET_CHECKPOINT))
            .with_io(self.io.clone())
            .write(&log_starts)?;
        OffsetCheckpointFile::new(self.root.join(REPLICATION_OFFSET_CHECKPOINT))
            .with_io(self.io.clone())
            .write(&high_watermarks)
    }

    /// The I/O seam of the root's directory fsyncs.
    pub(crate) fn io(&self) -> &Io {
        &self.io
    }

    /// The root's clock's time (for its ticker).
    pub(crate) fn clock_now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// [`Log::tick`] for every log, removal of `-delete` directories that are due, then the
    /// checkpoints. Deletions are scheduled relative to `now_ms`. Returns what each
    /// partition's tick did and which directories were removed.
    ///
    /// # Errors
    /// The first failure (the partitions after it are not ticked).
    pub fn tick(&self, now_ms: i64) -> Result<LogDirTickReport> {
        let mut report = LogDirTickReport::default();
        if self.read_only {
            return Ok(report);
        }
        for (tp, log) in self.logs() {
            let tick = log.tick_with(now_ms, false)?;
            report.partitions.insert(tp, tick);
        }
        let due: Vec<PathBuf> = {
            let mut doomed = lock(&self.doomed_dirs);
            let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut *doomed)
                .into_iter()
                .partition(|(at, _)| *at <= now_ms);
            *doomed = keep;
            due.into_iter().map(|(_, dir)| dir).collect()
        };
        for dir in due {
            std::fs::remove_dir_all(&dir).map_err(|e| Error::io("delete directory", &dir, e))?;
            report.deleted_dirs.push(dir);
        }
        self.checkpoint()?;
        Ok(report)
    }

    /// Closes every log, writes the checkpoints, then the clean-shutdown marker (last, and
    /// only when everything before succeeded and no partition is offline: an offline
    /// partition was not loaded, so nothing vouches for it, and the next open recovers it).
    /// Idempotent.
    ///
    /// # Errors
    /// The first failure; the marker is then not written.
    pub fn close(&self) -> Result<()> {
        let mut closed = lock(&self.closed);
        if *closed || self.read_only {
            *closed = true;
            return Ok(());
        }
        for (_, log) in self.logs() {
            log.close_with(false)?;
        }
        self.checkpoint()?;
        if self.offline.is_empty() {
            CleanShutdownMarker::new(&self.root, &self.io).write()?;
        }
        *closed = true;
        Ok(())
    }

    fn read_logs(&self) -> RwLockReadGuard<'_, BTreeMap<TopicPartition, Arc<Log>>> {
        read(&self.logs)
    }
}
