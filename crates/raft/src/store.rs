//! [`LogStore`]: openraft's `RaftLogStorage` over one seglog [`Log`], and [`LogReader`].

use std::fmt::Debug;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    Entry, LogId, LogState, OptionalSend, RaftLogReader, RaftTypeConfig, StorageError, Vote,
};
use seglog::{
    BatchRef, Batches, Clock, Durability, Isolation, Log, LogConfig, LogOpenOptions, SystemClock,
};

use crate::Error;
use crate::codec::{self, Decoded, offset_of};
use crate::flusher::{Flusher, Job, OnDurable};
use crate::side_file::{self, COMMITTED_FILE, PURGED_FILE, TRUNCATION_FILE, VOTE_FILE};

/// The seglog partition directory inside a store's directory.
pub const LOG_DIR: &str = "raft-0";

/// How often `save_committed` rewrites the `committed` file at most (Kafka checkpoints its
/// high watermark every `replica.high.watermark.checkpoint.interval.ms`, 5 s by default). The
/// file may lag the committed log id by this much (and is written when the store is dropped);
/// a lagging value is safe, since it is only ever a committed id whose entries are durable.
pub const COMMITTED_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// Bytes asked of seglog per read while collecting entries (at least one whole batch is
/// always returned).
const READ_BYTES: u32 = 1 << 20;

/// The `LogConfig` a store opens its log with by default: Kafka's defaults, except that
/// nothing is ever deleted by time or size (Raft decides what goes: truncate and purge), and
/// segments removed by a truncation or a purge are unlinked at once (no `.deleted` files left
/// for `seglog verify` to report).
pub fn raft_log_config() -> LogConfig {
    LogConfig {
        retention_ms: -1,
        retention_bytes: -1,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

/// What the store and its readers share: the log and the directory of the side files.
pub(crate) struct Shared {
    pub(crate) log: Log,
    pub(crate) root: PathBuf,
}

/// openraft's log storage (`RaftLogStorage` + `RaftLogReader`) in one seglog log.
///
/// Layout of the store's directory: the seglog log in [`LOG_DIR`] (a Kafka partition
/// directory: `seglog verify` checks it), and the side files `vote`, `committed`, `purged`
/// and, only while a truncation inside a batch is under way, `truncation`. What is durable when: see the crate docs.
///
/// The seglog calls are blocking file I/O made on the caller's task (as a RocksDB-backed store
/// makes them); the fsync of appended entries runs on the store's own flush thread.
pub struct LogStore<C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>> {
    _config: PhantomData<fn() -> C>,
    shared: Arc<Shared>,
    flusher: Flusher,
    /// The last entry present in the log (`None`: no entry).
    last_log_id: Option<LogId<u64>>,
    last_purged: Option<LogId<u64>>,
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    /// What the `committed` file says, and when it was written.
    committed_written: Option<(Option<LogId<u64>>, Instant)>,
}

/// A reader of a [`LogStore`]'s entries (openraft's replication tasks hold one each); reads
/// never wait for the writer or an fsync.
pub struct LogReader<C> {
    shared: Arc<Shared>,
    _config: PhantomData<fn() -> C>,
}

impl<C> Clone for LogReader<C> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            _config: PhantomData,
        }
    }
}

impl<C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>> LogStore<C> {
    /// Opens (or creates) the store in `dir` with [`raft_log_config`].
    ///
    /// # Errors
    /// As [`LogStore::open_with`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(dir, raft_log_config())
    }

    /// Opens (or creates) the store in `dir`; `config` is the seglog log's configuration,
    /// except that time and size retention are always off (`retention.ms` and
    /// `retention.bytes` are set to -1: only Raft deletes entries).
    ///
    /// Opening finishes what a crash interrupted: a truncation inside a batch (the kept
    /// entries are appended again), and a purge (the log start is raised to the persisted last
    /// purged log id + 1, or the log restarted after it when the purge went past its end).
    ///
    /// # Errors
    /// [`Error::Log`] when seglog cannot open or recover the log (also `Locked` when another
    /// store has it open); [`Error::Io`] / [`Error::SideFile`] for the side files;
    /// [`Error::Corrupt`] for a record that is not a Raft entry.
    pub fn open_with(dir: impl AsRef<Path>, config: LogConfig) -> Result<Self, Error> {
        Self::open_with_options(dir, config, LogOpenOptions::default())
    }

    /// [`LogStore::open_with`] with seglog's [`LogOpenOptions`] (a clock, recovery policy, the
    /// segment I/O seam: tests inject faults through it). The high-watermark policy is always
    /// [`seglog::HighWatermarkPolicy::Manual`], whatever `options` says (seglog's default is
    /// `LogEnd`): openraft decides what is committed, and the store moves seglog's high
    /// watermark itself, only to purge.
    ///
    /// # Errors
    /// As [`LogStore::open_with`]; `seglog::Error::ReadOnly` for `options.read_only` (the
    /// store writes).
    pub fn open_with_options(
        dir: impl AsRef<Path>,
        mut config: LogConfig,
        options: LogOpenOptions,
    ) -> Result<Self, Error> {
        let root = dir.as_ref().to_path_buf();
        if options.read_only {
            return Err(seglog::Error::ReadOnly { dir: root }.into());
        }
        std::fs::create_dir_all(&root).map_err(|e| Error::io("create directory", &root, e))?;
        config.retention_ms = -1;
        config.retention_bytes = -1;
        // A consensus log has no legitimate gaps (never compacted, appended contiguously):
        // a gap after a crash is a lost unsynced tail, and what follows it goes (seglog's
        // `contiguous` load rule; Kafka's loader would serve across it).
        let options = LogOpenOptions {
            high_watermark: seglog::HighWatermarkPolicy::Manual,
            contiguous: true,
            ..options
        };
        let log = Log::open_with(root.join(LOG_DIR), config, options)?;
        let vote = side_file::read_json(&root, VOTE_FILE)?;
        // `null` when openraft saved "nothing committed".
        let committed: Option<LogId<u64>> =
            side_file::read_json::<Option<LogId<u64>>>(&root, COMMITTED_FILE)?.flatten();
        let last_purged: Option<LogId<u64>> = side_file::read_json(&root, PURGED_FILE)?;
        let shared = Arc::new(Shared { log, root });
        shared.finish_truncation()?;
        if let Some(purged) = last_purged {
            shared.apply_purge(offset_of(purged.index)?)?;
        }
        let last_log_id = shared.last_present()?;
        let flusher = Flusher::start(Arc::clone(&shared), |shared: &Shared, end_offset| {
            shared.log.sync_to(end_offset).map_err(|e| e.to_string())
        })?;
        Ok(Self {
            _config: PhantomData,
            shared,
            flusher,
            last_log_id,
            last_purged,
            vote,
            committed,
            committed_written: Some((committed, Instant::now())),
        })
    }

    /// The seglog log underneath (for inspection: appending to it directly breaks the store).
    pub fn log(&self) -> &Log {
        &self.shared.log
    }

    /// A reader sharing this store's log.
    pub fn reader(&self) -> LogReader<C> {
        LogReader {
            shared: Arc::clone(&self.shared),
            _config: PhantomData,
        }
    }

    /// Writes the `committed` file (atomically) when it differs from what it says.
    fn write_committed(&mut self) -> Result<(), Error> {
        if self.committed_written.map(|(c, _)| c) != Some(self.committed) {
            side_file::write_json(&self.shared.root, COMMITTED_FILE, &self.committed)?;
        }
        self.committed_written = Some((self.committed, Instant::now()));
        Ok(())
    }

    /// Waits until every append queued before has been made durable and its callback
    /// completed: the writes that must not overtake them (vote, truncate, purge, and an append
    /// that replaces the tail) call it first.
    async fn barrier(&self) -> Result<(), Error> {
        let gone = || Error::FlusherGone {
            dir: self.shared.log.dir().to_path_buf(),
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.flusher.send(Job::Barrier(tx)).map_err(|_| gone())?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => Err(Error::FlushFailed {
                dir: self.shared.log.dir().to_path_buf(),
                reason,
            }),
            Err(_) => Err(gone()),
        }
    }

    /// `RaftLogStorage::append` with any completion instead of openraft's `LogFlushed`:
    /// returns once `entries` are readable; `done` is called (on the flush thread) once they
    /// are durable, or with the error that kept them from becoming so.
    ///
    /// Entries at or below the last purged log id are skipped (they are committed and in a
    /// snapshot already; Raft's log matching makes them equal to what was purged). An entry
    /// below the log end replaces the log from there on, as a truncation followed by the
    /// append (openraft truncates first itself; its storage suite relies on this).
    ///
    /// # Errors
    /// [`Error::NotContiguous`] for entries that would leave a hole;
    /// [`Error::TermTooLarge`], [`Error::Encode`]; [`Error::FlushFailed`] when an earlier append
    /// failed to become durable; [`Error::Log`] when seglog refuses or fails the write (then
    /// `done` is not called).
    pub async fn append_then(
        &mut self,
        mut entries: Vec<Entry<C>>,
        done: OnDurable,
    ) -> Result<(), Error> {
        if let Some(purged) = self.last_purged {
            entries.retain(|e| e.log_id.index > purged.index);
        }
        if let Some(first) = entries.first() {
            let index = offset_of(first.log_id.index)?;
            if self.last_log_id.is_some() && index < self.shared.log.log_end_offset() {
                self.barrier().await?;
                self.shared.truncate::<C>(index)?;
                self.last_log_id = self.shared.last_present()?;
            }
        }
        let end_offset = self.append_entries(&entries)?;
        self.flusher
            .send(Job::Flush { end_offset, done })
            .map_err(|_| Error::FlusherGone {
                dir: self.shared.log.dir().to_path_buf(),
            })
    }

    fn append_entries(&mut self, entries: &[Entry<C>]) -> Result<i64, Error> {
        let log = &self.shared.log;
        let Some(first) = entries.first() else {
            return Ok(log.log_end_offset());
        };
        let expected = u64::try_from(log.log_end_offset()).unwrap_or(0);
        // A log that never held an entry (and purged none) starts wherever openraft starts it.
        let restart = self.last_log_id.is_none()
            && self.last_purged.is_none()
            && first.log_id.index != expected;
        if !restart && first.log_id.index != expected {
            return Err(Error::NotContiguous {
                expected,
                index: first.log_id.index,
            });
        }
        for pair in entries.windows(2) {
            if pair[1].log_id.index != pair[0].log_id.index + 1 {
                return Err(Error::NotContiguous {
                    expected: pair[0].log_id.index + 1,
                    index: pair[1].log_id.index,
                });
            }
        }
        let bytes = codec::encode(entries, SystemClock.now_ms())?;
        if restart {
            log.truncate_fully_and_start_at(offset_of(first.log_id.index)?)?;
        }
        let info = log.append_as_follower_with(&bytes, Durability::PageCache)?;
        self.last_log_id = entries.last().map(|e| e.log_id);
        Ok(info.last_offset + 1)
    }
}

/// Writes the latest committed log id (best effort: the file may then lag, which is safe).
impl<C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>> Drop for LogStore<C> {
    fn drop(&mut self) {
        let _ = self.write_committed();
    }
}

/// The last holder closes the log (seals the active segment, trims its indexes, flushes,
/// writes the clean-shutdown marker). Best effort: when the close fails, no marker is written
/// and the next open recovers the log.
impl Drop for Shared {
    fn drop(&mut self) {
        let _ = self.log.close();
    }
}

impl Shared {
    fn dir(&self) -> &Path {
        self.log.dir()
    }

    /// The entries (with payloads) or just the log ids of `[from, to)`, clamped to what the
    /// log holds.
    fn read_range<C>(&self, from: u64, to: u64, payloads: bool) -> Result<Vec<Decoded<C>>, Error>
    where
        C: RaftTypeConfig<NodeId = u64>,
    {
        let from = i64::try_from(from)
            .unwrap_or(i64::MAX)
            .max(self.log.log_start_offset());
        let to = i64::try_from(to)
            .unwrap_or(i64::MAX)
            .min(self.log.log_end_offset());
        let mut out = Vec::new();
        let mut buf = Vec::new();
        let mut next = from;
        while next < to {
            let fetch =
                match self
                    .log
                    .read_into(next, READ_BYTES, Isolation::LogEnd, true, &mut buf)
                {
                    Ok(fetch) => fetch,
                    // A purge raised the log start (or a truncation lowered the end) since the
                    // bounds were read: what is gone is not returned, and what is returned stays
                    // consecutive (a prefix of what was read so far, or from the new start).
                    Err(seglog::Error::OffsetOutOfRange {
                        log_start_offset,
                        log_end_offset,
                        ..
                    }) if next < log_start_offset || next >= log_end_offset => {
                        if next >= log_end_offset || !out.is_empty() {
                            break;
                        }
                        next = log_start_offset;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
            if buf.is_empty() {
                break;
            }
            let mut advanced = next;
            for batch in Batches::new(&buf, fetch.position) {
                let batch = batch.map_err(|e| Error::Corrupt {
                    dir: self.dir().to_path_buf(),
                    offset: next,
                    reason: e.to_string(),
                })?;
                codec::decode(self.dir(), &batch, next, to, payloads, &mut out)?;
                advanced = advanced.max(batch.header().last_offset + 1);
                if advanced >= to {
                    break;
                }
            }
            if advanced <= next {
                return Err(Error::Corrupt {
                    dir: self.dir().to_path_buf(),
                    offset: next,
                    reason: "a read made no progress".into(),
                });
            }
            next = advanced;
        }
        Ok(out)
    }

    /// The log id of the last entry present, `None` for an empty log.
    fn last_present(&self) -> Result<Option<LogId<u64>>, Error> {
        let end = self.log.log_end_offset();
        if end <= self.log.log_start_offset() {
            return Ok(None);
        }
        let last = u64::try_from(end - 1).unwrap_or(0);
        let found = self.read_range::<NoPayload>(last, last + 1, false)?;
        match found.last() {
            Some(decoded) => Ok(Some(decoded.log_id)),
            None => Err(Error::Corrupt {
                dir: self.dir().to_path_buf(),
                offset: end - 1,
                reason: "the last offset of the log holds no record".into(),
            }),
        }
    }

    /// Raises the log start to `purged + 1`, or restarts the log there when the purge goes
    /// past its end; then unlinks whole segments below it.
    fn apply_purge(&self, purged: i64) -> Result<(), Error> {
        let start = purged.saturating_add(1);
        let log = &self.log;
        let end = log.log_end_offset();
        if start > end {
            log.truncate_fully_and_start_at(start)?;
        } else if log.log_start_offset() < start {
            log.set_high_watermark(end)?;
            log.delete_records_before(start)?;
            log.delete_old_segments()?;
        }
        log.tick(SystemClock.now_ms())?;
        Ok(())
    }

    /// Finishes a truncation inside a batch that a crash interrupted (`truncation` present):
    /// the log is cut at the batch's base offset and the kept entries are appended again.
    fn finish_truncation(&self) -> Result<(), Error> {
        let Some(bytes) = side_file::read(&self.root, TRUNCATION_FILE)? else {
            return Ok(());
        };
        let path = self.root.join(TRUNCATION_FILE);
        let corrupt = |reason: String| Error::Corrupt {
            dir: path.clone(),
            offset: 0,
            reason,
        };
        let batch = BatchRef::parse(&bytes, 0).map_err(|e| corrupt(e.to_string()))?;
        batch.ensure_valid().map_err(|e| corrupt(e.to_string()))?;
        let base = batch
            .base_offset()
            .ok_or_else(|| corrupt("not a v2 batch".into()))?;
        self.redo_truncation(base, &bytes)
    }

    /// Cuts the log at `base` (a batch boundary) and appends `kept` (entries from `base` on)
    /// durably, then removes `truncation`; the log start is raised again if the cut lowered it.
    fn redo_truncation(&self, base: i64, kept: &[u8]) -> Result<(), Error> {
        let log = &self.log;
        let start = log.log_start_offset();
        if log.log_end_offset() < base {
            return Err(Error::Corrupt {
                dir: self.dir().to_path_buf(),
                offset: base,
                reason: format!(
                    "a pending truncation keeps entries from {base}, but the log ends at {}",
                    log.log_end_offset()
                ),
            });
        }
        log.truncate_to(base)?;
        log.append_as_follower_with(kept, Durability::Fsync)?;
        if start > log.log_start_offset() {
            log.set_high_watermark(log.log_end_offset())?;
            log.delete_records_before(start)?;
        }
        side_file::remove(&self.root, TRUNCATION_FILE)?;
        log.tick(SystemClock.now_ms())?;
        Ok(())
    }

    /// Removes every entry at and after `index` (durably), keeping the entries before it that
    /// share its batch.
    fn truncate<C>(&self, index: i64) -> Result<(), Error>
    where
        C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>,
    {
        let log = &self.log;
        if index >= log.log_end_offset() {
            return Ok(());
        }
        if index < log.log_start_offset() {
            return Err(Error::Corrupt {
                dir: self.dir().to_path_buf(),
                offset: index,
                reason: format!(
                    "truncation below the log start {} (purged entries)",
                    log.log_start_offset()
                ),
            });
        }
        let mut buf = Vec::new();
        let fetch = log.read_into(index, 1, Isolation::LogEnd, true, &mut buf)?;
        let batch = BatchRef::parse(&buf, fetch.position).map_err(|e| Error::Corrupt {
            dir: self.dir().to_path_buf(),
            offset: index,
            reason: e.to_string(),
        })?;
        let base = batch.base_offset().unwrap_or(index);
        if base >= index {
            log.truncate_to(index)?;
            log.tick(SystemClock.now_ms())?;
            return Ok(());
        }
        // The cut falls inside a batch: seglog (as Kafka) truncates whole batches, so the
        // entries before `index` in it are written again. The batch to write is persisted
        // first, so a crash between the cut and the append is finished at the next open.
        let mut kept: Vec<Decoded<C>> = Vec::new();
        codec::decode(self.dir(), &batch, base, index, true, &mut kept)?;
        let entries: Vec<Entry<C>> = kept
            .into_iter()
            .filter_map(|d| {
                d.payload.map(|payload| Entry {
                    log_id: d.log_id,
                    payload,
                })
            })
            .collect();
        let bytes = codec::encode(&entries, batch.max_timestamp_ms())?;
        side_file::write_atomic(&self.root, TRUNCATION_FILE, &bytes)?;
        self.redo_truncation(base, &bytes)
    }
}

// The type config of scans that never decode payloads (only log ids).
openraft::declare_raft_types!(NoPayload: SnapshotData = std::io::Cursor<Vec<u8>>);

impl<C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>> RaftLogReader<C> for LogReader<C> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<C>>, StorageError<u64>> {
        read_entries(&self.shared, range).map_err(Error::read_logs)
    }
}

impl<C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>> RaftLogReader<C> for LogStore<C> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<C>>, StorageError<u64>> {
        read_entries(&self.shared, range).map_err(Error::read_logs)
    }
}

fn read_entries<C, RB>(shared: &Shared, range: RB) -> Result<Vec<Entry<C>>, Error>
where
    C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>,
    RB: RangeBounds<u64>,
{
    let from = match range.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let to = match range.end_bound() {
        Bound::Included(&i) => i.saturating_add(1),
        Bound::Excluded(&i) => i,
        Bound::Unbounded => u64::MAX,
    };
    Ok(shared
        .read_range::<C>(from, to, true)?
        .into_iter()
        .filter_map(|d| {
            d.payload.map(|payload| Entry {
                log_id: d.log_id,
                payload,
            })
        })
        .collect())
}

impl<C: RaftTypeConfig<NodeId = u64, Entry = Entry<C>>> RaftLogStorage<C> for LogStore<C> {
    type LogReader = LogReader<C>;

    async fn get_log_state(&mut self) -> Result<LogState<C>, StorageError<u64>> {
        Ok(LogState {
            last_purged_log_id: self.last_purged,
            last_log_id: self.last_log_id.or(self.last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.reader()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        self.barrier().await.map_err(Error::write_vote)?;
        side_file::write_json(&self.shared.root, VOTE_FILE, vote).map_err(Error::write_vote)?;
        self.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<u64>>,
    ) -> Result<(), StorageError<u64>> {
        // Entries up to `committed` must be durable here before the file says they are
        // committed (a restart re-applies them from the log); later appends need not be.
        if let Some(id) = committed {
            let log = &self.shared.log;
            let end = offset_of(id.index)
                .map_err(Error::write_logs)?
                .saturating_add(1)
                .min(log.log_end_offset());
            if end > log.durable_end_offset() {
                log.sync_to(end).map_err(|e| Error::Log(e).write_logs())?;
            }
        }
        self.committed = committed;
        let due = self
            .committed_written
            .is_none_or(|(_, at)| at.elapsed() >= COMMITTED_CHECKPOINT_INTERVAL);
        if due {
            self.write_committed().map_err(Error::write_logs)?;
        }
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        Ok(self.committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<C>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<C>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<C>> = entries.into_iter().collect();
        self.append_then(
            entries,
            Box::new(move |result| callback.log_io_completed(result)),
        )
        .await
        .map_err(Error::write_logs)
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        self.barrier().await.map_err(Error::write_logs)?;
        let index = offset_of(log_id.index).map_err(Error::write_logs)?;
        self.shared
            .truncate::<C>(index)
            .map_err(Error::write_logs)?;
        self.last_log_id = self.shared.last_present().map_err(Error::write_logs)?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        self.barrier().await.map_err(Error::write_logs)?;
        if self.last_purged.is_some_and(|p| p.index >= log_id.index) {
            return Ok(());
        }
        side_file::write_json(&self.shared.root, PURGED_FILE, &log_id)
            .map_err(Error::write_logs)?;
        self.last_purged = Some(log_id);
        let index = offset_of(log_id.index).map_err(Error::write_logs)?;
        self.shared.apply_purge(index).map_err(Error::write_logs)?;
        if self
            .last_log_id
            .is_some_and(|last| last.index <= log_id.index)
        {
            self.last_log_id = None;
        }
        Ok(())
    }
}
