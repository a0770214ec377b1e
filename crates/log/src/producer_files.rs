//! The producer state of a log with its `.snapshot` files (the file half of Kafka's
//! `ProducerStateManager`): listing, taking, loading, deleting snapshots, and replaying batches
//! into the state (Kafka's `rebuildProducerState` / `loadProducersFromRecords`), which also
//! rebuilds the `.txnindex` of recovered segments (Kafka's `LogSegment.recover`). A segment
//! recovered by this open is replayed from its recovery digest (the producer batches that
//! pass collected), not read again, when it has one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_records::{Batches, MAGIC_V2};
use seglog_segment::{
    AbortedTxn, FileKind, FileType, ProducerBatch, RecoveryDigest, Segment, file_path,
    parse_file_name,
};

use crate::fsutil::remove_if_exists;
use crate::producer_snapshot::{ProducerSnapshot, SnapshotProblem};
use crate::producer_state::{
    BatchKind, CompletedTxn, Marker, ProducerOrigin, ProducerState, ProducerStateEntry,
    increment_sequence,
};
use crate::segment_map::SegmentMap;
use crate::{Error, Result};

/// Bytes read from a segment per step of a replay.
const REPLAY_CHUNK_BYTES: u32 = 1 << 20;

/// Where the producer state of an open came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducerLoad {
    /// The snapshot loaded (its offset), if any.
    pub snapshot_offset: Option<i64>,
    /// The offsets replayed from the log after it (`[from, to)`), when a replay ran.
    pub replayed: Option<(i64, i64)>,
    /// No snapshot existed after a clean shutdown: Kafka's shortcut, the state starts empty at
    /// the log end without reading any batch, and empty snapshots are written.
    pub clean_shutdown_shortcut: bool,
    /// Snapshots that did not decode: reported and skipped (a read-write open deletes them,
    /// as Kafka does).
    pub corrupt_snapshots: Vec<(PathBuf, SnapshotProblem)>,
    /// Snapshots deleted at open (stray, out of range or corrupt).
    pub deleted_snapshots: Vec<PathBuf>,
    /// Segments whose `.txnindex` was rebuilt from the replay (the recovered ones).
    pub rebuilt_txn_indexes: Vec<i64>,
}

/// The producer state and its snapshot files.
#[derive(Debug)]
pub(crate) struct Producers {
    pub(crate) state: ProducerState,
    snapshots: BTreeMap<i64, PathBuf>,
    /// Kafka's `lastSnapOffset`.
    last_snap_offset: i64,
    dir: PathBuf,
    read_only: bool,
    /// Snapshots written without an fsync (at roll): synced by the next flush.
    unsynced: Vec<PathBuf>,
    pub(crate) expiration_ms: i64,
}

/// The batch-level facts of one batch with a producer id, for the state: the one rule for
/// a batch read from disk, appended, or taken from a recovery digest (its facts come from
/// [`ProducerBatch::from_batch`] in every case).
pub(crate) fn batch_kind(batch: &ProducerBatch) -> BatchKind {
    if batch.is_control {
        return BatchKind::Marker(batch.marker.map(|m| Marker {
            offset: batch.first_offset,
            timestamp_ms: m.timestamp_ms,
            coordinator_epoch: m.coordinator_epoch,
            is_abort: m.is_abort,
        }));
    }
    let last_sequence = if batch.base_sequence < 0 {
        -1
    } else {
        increment_sequence(
            batch.base_sequence,
            (batch.last_offset - batch.first_offset) as i32,
        )
    };
    BatchKind::Data {
        first_sequence: batch.base_sequence,
        last_sequence,
        first_offset: batch.first_offset,
        last_offset: batch.last_offset,
        max_timestamp_ms: batch.max_timestamp_ms,
        transactional: batch.is_transactional,
    }
}

/// [`batch_kind`] of a batch read from its bytes.
///
/// # Errors
/// [`Error::Records`] when a control batch's record does not decode.
pub(crate) fn batch_kind_of(batch: &seglog_records::BatchRef<'_>) -> Result<BatchKind> {
    ProducerBatch::from_batch(batch)
        .map(|facts| batch_kind(&facts))
        .map_err(Error::Records)
}

impl Producers {
    /// An empty state at `offset` over `dir`'s snapshot files (listed, not read).
    pub(crate) fn new(dir: &Path, read_only: bool, expiration_ms: i64) -> Result<Self> {
        Ok(Self {
            state: ProducerState::default(),
            snapshots: list_snapshots(dir)?,
            last_snap_offset: 0,
            dir: dir.to_path_buf(),
            read_only,
            unsynced: Vec::new(),
            expiration_ms,
        })
    }

    /// The snapshot offsets, oldest first.
    pub(crate) fn snapshot_offsets(&self) -> Vec<i64> {
        self.snapshots.keys().copied().collect()
    }

    fn remove_snapshot(&mut self, offset: i64, report: Option<&mut ProducerLoad>) -> Result<()> {
        if let Some(path) = self.snapshots.remove(&offset)
            && !self.read_only
            && remove_if_exists(&path)?
            && let Some(report) = report
        {
            report.deleted_snapshots.push(path);
        }
        Ok(())
    }

    /// Kafka's `removeStraySnapshots`: keeps the snapshots at segment base offsets and the
    /// largest stray one when it lies above the last segment's base.
    fn remove_stray(&mut self, bases: &BTreeSet<i64>, report: &mut ProducerLoad) -> Result<()> {
        let max_base = bases.iter().next_back().copied();
        let mut latest_stray: Option<i64> = None;
        for offset in self.snapshot_offsets() {
            if !bases.contains(&offset) {
                if let Some(previous) = latest_stray {
                    self.remove_snapshot(previous, Some(report))?;
                }
                latest_stray = Some(offset);
            }
        }
        if let (Some(stray), Some(max)) = (latest_stray, max_base)
            && stray < max
        {
            self.remove_snapshot(stray, Some(report))?;
        }
        Ok(())
    }

    /// Kafka's `takeSnapshot`: writes the state at `map_end_offset` when it moved past the
    /// last snapshot. `sync` false leaves the fsync to the next [`Producers::sync_pending`].
    pub(crate) fn take_snapshot(&mut self, sync: bool) -> Result<Option<PathBuf>> {
        let offset = self.state.map_end_offset;
        if offset <= self.last_snap_offset {
            return Ok(None);
        }
        let path = file_path(&self.dir, offset, FileKind::new(FileType::Snapshot));
        if !self.read_only {
            let bytes = ProducerSnapshot {
                entries: self.state.snapshot_entries(),
            }
            .encode();
            write_file(&path, &bytes, sync)?;
            if !sync {
                self.unsynced.push(path.clone());
            }
        }
        self.snapshots.insert(offset, path.clone());
        self.last_snap_offset = offset;
        Ok(Some(path))
    }

    /// fsyncs the snapshots taken without one (Kafka's `flushProducerStateSnapshot`).
    pub(crate) fn sync_pending(&mut self) -> Result<()> {
        for path in std::mem::take(&mut self.unsynced) {
            match seglog_segment::open_regular_if_exists(&path) {
                Ok(Some((file, _))) => file
                    .sync_all()
                    .map_err(|e| Error::io("fsync snapshot", &path, e))?,
                Ok(None) => {}
                Err(e) => return Err(Error::io("open snapshot", &path, e)),
            }
        }
        Ok(())
    }

    /// Kafka's `truncateFullyAndStartAt`.
    pub(crate) fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        self.state.clear();
        for snapshot in self.snapshot_offsets() {
            self.remove_snapshot(snapshot, None)?;
        }
        self.last_snap_offset = 0;
        self.state.map_end_offset = offset;
        Ok(())
    }

    /// After segments were deleted (retention): their snapshots go, and Kafka's
    /// `onLogStartOffsetIncremented`.
    pub(crate) fn segments_deleted(&mut self, bases: &[i64], log_start_offset: i64) -> Result<()> {
        for base in bases {
            self.remove_snapshot(*base, None)?;
        }
        self.log_start_incremented(log_start_offset);
        Ok(())
    }

    /// Kafka's `onLogStartOffsetIncremented`.
    pub(crate) fn log_start_incremented(&mut self, log_start_offset: i64) {
        self.state.remove_unreplicated_below(log_start_offset);
        if self.state.map_end_offset < log_start_offset {
            self.state.map_end_offset = log_start_offset;
        }
        self.last_snap_offset = self
            .snapshots
            .keys()
            .next_back()
            .copied()
            .unwrap_or(log_start_offset);
    }

    /// Kafka's `loadFromSnapshot`: the latest snapshot that decodes (expired producers
    /// dropped), deleting (read-write) or skipping the corrupt ones; none: empty at
    /// `log_start_offset`.
    fn load_from_snapshot(
        &mut self,
        log_start_offset: i64,
        now_ms: i64,
        report: &mut ProducerLoad,
    ) -> Result<()> {
        let mut skipped = BTreeSet::new();
        loop {
            let latest = self
                .snapshots
                .iter()
                .rev()
                .find(|(o, _)| !skipped.contains(*o))
                .map(|(o, p)| (*o, p.clone()));
            let Some((offset, path)) = latest else {
                self.last_snap_offset = log_start_offset;
                self.state.map_end_offset = log_start_offset;
                return Ok(());
            };
            match ProducerSnapshot::read(&path) {
                Ok(snapshot) => {
                    for e in &snapshot.entries {
                        let entry = ProducerStateEntry::from_snapshot_entry(e);
                        if !ProducerState::is_expired(&entry, now_ms, self.expiration_ms) {
                            self.state.load_entry(entry);
                        }
                    }
                    self.last_snap_offset = offset;
                    self.state.map_end_offset = offset;
                    report.snapshot_offset = Some(offset);
                    return Ok(());
                }
                Err(Error::CorruptSnapshot { path, problem }) => {
                    report.corrupt_snapshots.push((path, problem));
                    skipped.insert(offset);
                    self.remove_snapshot(offset, Some(report))?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Kafka's `truncateAndReload`: drops the snapshots above `log_end_offset` or at or
    /// below `log_start_offset`; reloads from the latest one unless the state already ends
    /// at `log_end_offset`.
    fn truncate_and_reload(
        &mut self,
        log_start_offset: i64,
        log_end_offset: i64,
        now_ms: i64,
        report: &mut ProducerLoad,
    ) -> Result<()> {
        for offset in self.snapshot_offsets() {
            if offset > log_end_offset || offset <= log_start_offset {
                self.remove_snapshot(offset, Some(report))?;
            }
        }
        if log_end_offset != self.state.map_end_offset {
            self.state.clear();
            self.load_from_snapshot(log_start_offset, now_ms, report)
        } else {
            self.log_start_incremented(log_start_offset);
            Ok(())
        }
    }

    /// Kafka's `rebuildProducerState` up to `last_offset`, over `segments` (the log's
    /// current map). `clean_shutdown` allows Kafka's shortcut when no snapshot exists.
    /// The `.txnindex` of every segment in `rebuild_txn` is rewritten from the replay
    /// (those segments must lie at or above the state's start: the caller drops the
    /// snapshots above the first of them). A segment with a digest in `digests` (its recovery
    /// ran in this open) is replayed from it when all its batches lie below `last_offset`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rebuild(
        &mut self,
        segments: &SegmentMap<Arc<Segment>>,
        log_start_offset: i64,
        last_offset: i64,
        now_ms: i64,
        clean_shutdown: bool,
        rebuild_txn: &BTreeSet<i64>,
        digests: &BTreeMap<i64, RecoveryDigest>,
        report: &mut ProducerLoad,
    ) -> Result<()> {
        let mut offsets_to_snapshot = Vec::new();
        if let Some((last_base, _)) = segments.last() {
            if let Some((lower, _)) = segments.iter().rev().find(|(b, _)| *b < last_base) {
                offsets_to_snapshot.push(lower);
            }
            offsets_to_snapshot.push(last_base);
        }
        offsets_to_snapshot.push(last_offset);
        if self.snapshots.is_empty() && clean_shutdown && rebuild_txn.is_empty() {
            report.clean_shutdown_shortcut = true;
            for offset in offsets_to_snapshot {
                self.state.map_end_offset = offset;
                self.take_snapshot(true)?;
            }
            return Ok(());
        }
        // Kafka's `rebuildProducerState` skips the replay when the state was empty before the
        // reload (`isEmptyBeforeTruncation`: "if there weren't [active producers], then
        // truncating shouldn't change that fact"). A state emptied by producer expiry is not a
        // log without producers: the reloaded snapshot may hold a transaction a later marker
        // decided (kept open then, its LSO stuck), and the replayed part may hold one whose
        // marker the truncation removed (forgotten then: read_committed serves it). seglog
        // always replays from the snapshot (docs/format.md, Deliberate differences: "A
        // truncation after producer expiry replays from the snapshot").
        self.truncate_and_reload(log_start_offset, last_offset, now_ms, report)?;
        if last_offset > self.state.map_end_offset {
            let from = self.state.map_end_offset;
            report.replayed = Some((from, last_offset));
            let bases: Vec<(i64, Arc<Segment>)> =
                segments.iter().map(|(b, s)| (b, Arc::clone(s))).collect();
            for (i, (base, segment)) in bases.iter().enumerate() {
                let next_base = bases.get(i + 1).map_or(i64::MAX, |(b, _)| *b);
                if next_base <= from || *base >= last_offset {
                    continue;
                }
                // A recovered segment is replayed whole, as Kafka's `LogSegment.recover` puts
                // every batch of it into the producer state, also those below the log start
                // (DeleteRecords into a segment the recovery point lags behind). Only when
                // all of it lies at or below the log start is its part lost again, as Kafka's
                // next `truncateAndReload` drops the snapshot taken after it.
                let recovered = rebuild_txn.contains(base);
                let start = if recovered {
                    *base
                } else {
                    (*base).max(self.state.map_end_offset).max(log_start_offset)
                };
                self.state.map_end_offset = start;
                if offsets_to_snapshot.contains(base) {
                    self.take_snapshot(true)?;
                }
                let digest = digests.get(base).filter(|d| d.next_offset <= last_offset);
                let aborted = match digest {
                    Some(digest) => self.replay_digest(digest, start),
                    None => self.replay_segment(segment, start, last_offset)?,
                };
                if rebuild_txn.contains(base) {
                    segment.replace_aborted_txns(aborted)?;
                    report.rebuilt_txn_indexes.push(*base);
                }
                if recovered && self.state.map_end_offset <= log_start_offset {
                    self.state.clear();
                    self.state.map_end_offset = log_start_offset;
                } else if recovered {
                    // Kafka 4.4's `LogLoader.recoverSegment` ends each segment's recovery with
                    // a snapshot, and the next segment's recovery (or the load's final
                    // rebuild) starts from it on a state of its own: `loadFromSnapshot` drops
                    // the producers expired by now, also one a batch or marker of the next
                    // segment refreshes (that one then starts a new entry), and keeps each
                    // other producer's last batch only (a snapshot entry holds one), so a
                    // retry of an earlier batch is out of order after the crash
                    // (docs/format.md, "Producers after a crash").
                    self.state.remove_expired(now_ms, self.expiration_ms);
                    self.state.keep_last_batch_only();
                }
            }
        }
        // Recovered segments the replay did not reach (empty, or below the state's start)
        // hold no marker the state saw: their index is emptied as Kafka's `reset` does.
        for base in rebuild_txn {
            if !report.rebuilt_txn_indexes.contains(base)
                && let Some((_, segment)) = segments.floor(*base).filter(|(b, _)| b == base)
            {
                segment.replace_aborted_txns(Vec::new())?;
                report.rebuilt_txn_indexes.push(*base);
            }
        }
        self.state.map_end_offset = last_offset;
        self.take_snapshot(true)?;
        Ok(())
    }

    /// Replays the batches of `segment` from `start` to below `end` into the state (origin
    /// replication); returns the aborted transactions whose markers it holds, with Kafka's
    /// last stable offsets.
    fn replay_segment(
        &mut self,
        segment: &Segment,
        start: i64,
        end: i64,
    ) -> Result<Vec<AbortedTxn>> {
        let mut aborted = Vec::new();
        let mut next = start;
        let size = segment.size();
        while next < end {
            let Some(slice) = segment.read(next, REPLAY_CHUNK_BYTES, size, true)? else {
                break;
            };
            let bytes = slice.read_to_vec()?;
            let mut advanced = false;
            // Bytes already in the log: damage there is a damaged batch of this segment, not
            // malformed input of the caller's.
            let damaged = |source| Error::DamagedBatch {
                path: segment.log_path(),
                source,
            };
            for batch in Batches::new(&bytes, slice.position()) {
                let batch = batch.map_err(damaged)?;
                let header = *batch.header();
                if header.base_offset.unwrap_or(header.last_offset) >= end {
                    next = end;
                    break;
                }
                if header.magic >= MAGIC_V2 && header.producer_id >= 0 {
                    let kind = ProducerBatch::from_batch(&batch)
                        .map(|facts| batch_kind(&facts))
                        .map_err(damaged)?;
                    if let Some(txn) = self.apply(header.producer_id, header.producer_epoch, kind) {
                        aborted.extend(txn);
                    }
                }
                self.state.map_end_offset = header.last_offset + 1;
                next = header.last_offset + 1;
                advanced = true;
            }
            if !advanced {
                break;
            }
        }
        Ok(aborted)
    }

    /// [`Producers::replay_segment`] from the digest of the segment's recovery, whose batches
    /// all lie below the replay's end: the batches with a producer id that end at or after
    /// `start` (the ones a read from `start` returns) in order, and `map_end_offset` after
    /// the last batch when any batch ends at or after `start`. Same state, same aborted
    /// transactions with the same last stable offsets.
    fn replay_digest(&mut self, digest: &RecoveryDigest, start: i64) -> Vec<AbortedTxn> {
        let mut aborted = Vec::new();
        for batch in digest
            .producer_batches
            .iter()
            .filter(|b| b.last_offset >= start)
        {
            let kind = batch_kind(batch);
            if let Some(txn) = self.apply(batch.producer_id, batch.producer_epoch, kind) {
                aborted.extend(txn);
            }
        }
        if digest.next_offset > start {
            self.state.map_end_offset = digest.next_offset;
        }
        aborted
    }

    /// Applies one replicated batch; returns `Some(entry)` for an aborted transaction's
    /// marker (the `.txnindex` entry), `Some(None)` for other completed transactions.
    fn apply(
        &mut self,
        producer_id: i64,
        epoch: i16,
        kind: BatchKind,
    ) -> Option<Option<AbortedTxn>> {
        let mut append = self.state.prepare(producer_id, ProducerOrigin::Replication);
        // Replication validates neither epochs nor sequences. The one check it makes (a
        // non-transactional batch inside an open transaction, which an append never let into
        // the log) is tolerated here: the batch is already in the state (the check follows
        // `add_batch`, as Kafka's), and the load goes on (Kafka's would fail).
        let completed = append.append(epoch, kind).ok().flatten();
        self.state.update(append);
        completed.map(|c| self.complete(&c))
    }

    /// Completes a transaction after the state took its marker: the `.txnindex` entry for an
    /// abort (with the last stable offset), then Kafka's `completeTxn`.
    pub(crate) fn complete(&mut self, completed: &CompletedTxn) -> Option<AbortedTxn> {
        let entry = completed.is_aborted.then(|| AbortedTxn {
            producer_id: completed.producer_id,
            first_offset: completed.first_offset,
            last_offset: completed.last_offset,
            last_stable_offset: self.state.last_stable_offset(completed),
        });
        self.state.complete_txn(completed);
        entry
    }

    /// The open and not yet replicated transactions as `(first offset, marker offset or
    /// i64::MAX)`, by first offset (what the published view carries for the LSO).
    pub(crate) fn unstable_txns(&self) -> Vec<(i64, i64)> {
        let mut out: Vec<(i64, i64)> = self
            .state
            .ongoing
            .values()
            .map(|t| (t.first_offset, i64::MAX))
            .chain(
                self.state
                    .unreplicated
                    .values()
                    .map(|t| (t.first_offset, t.last_offset.unwrap_or(i64::MAX))),
            )
            .collect();
        out.sort_unstable();
        out
    }

    /// Loads the state at open: stray snapshots removed, the segments `recovered` get their
    /// `.txnindex` rebuilt, then Kafka's `rebuildProducerState` to `log_end_offset`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn load(
        dir: &Path,
        read_only: bool,
        expiration_ms: i64,
        segments: &SegmentMap<Arc<Segment>>,
        recovered: BTreeSet<i64>,
        digests: &BTreeMap<i64, RecoveryDigest>,
        clean_shutdown: bool,
        log_start_offset: i64,
        log_end_offset: i64,
        now_ms: i64,
    ) -> Result<(Self, ProducerLoad)> {
        let mut producers = Self::new(dir, read_only, expiration_ms)?;
        let mut report = ProducerLoad::default();
        let bases: BTreeSet<i64> = segments.iter().map(|(b, _)| b).collect();
        producers.remove_stray(&bases, &mut report)?;
        if let Some(first) = recovered.iter().next() {
            // Kafka's recoverSegment rebuilds the state up to the segment first, dropping the
            // snapshots above it.
            for offset in producers.snapshot_offsets() {
                if offset > *first {
                    producers.remove_snapshot(offset, Some(&mut report))?;
                }
            }
        }
        producers.rebuild(
            segments,
            log_start_offset,
            log_end_offset,
            now_ms,
            clean_shutdown,
            &recovered,
            digests,
            &mut report,
        )?;
        Ok((producers, report))
    }
}

/// A replay's state with the segment map it replayed (held weakly: a later map is another
/// log shape, and the cursor must not keep deleted segments open).
pub(crate) type ReplayAt = (std::sync::Weak<SegmentMap<Arc<Segment>>>, Producers);

/// The state the last `.txnindex` check's replay ended in (`txn_check.rs`: at a sealed
/// segment's end, over one segment map), so that checking the segments in order replays each
/// once.
#[derive(Debug, Default)]
pub(crate) struct TxnCheckCursor {
    pub(crate) at: crate::sync::Mutex<Option<ReplayAt>>,
}

/// A control batch of a segment: `(producer id, offset, ABORT)` (the first-use check of a
/// `.txnindex`, `txn_check.rs`).
pub(crate) type ControlAt = (i64, i64, bool);

/// What a replay of one segment's batches found for its `.txnindex` (`txn_check.rs`).
#[derive(Debug)]
pub(crate) struct SegmentReplay {
    /// The entries the markers give (what `recover` writes), in marker order.
    pub(crate) expected: Vec<AbortedTxn>,
    /// Every control batch of the segment with a producer id, in offset order.
    pub(crate) controls: Vec<ControlAt>,
    /// The offsets replayed: `[start, end)`.
    pub(crate) start: i64,
    /// The log start offset: the replay saw no batch of an earlier segment below it, so it
    /// cannot judge an entry whose transaction began there.
    pub(crate) log_start_offset: i64,
}

impl Producers {
    /// A state for checking a `.txnindex` (`txn_check.rs`): read-only (it deletes and writes
    /// nothing), and no producer expires (expiry never drops one with an open transaction,
    /// so the entries are the same).
    pub(crate) fn for_txn_check(dir: &Path) -> Result<Self> {
        Self::new(dir, true, i64::MAX)
    }

    /// The offset the state reached.
    pub(crate) fn map_end_offset(&self) -> i64 {
        self.state.map_end_offset
    }

    /// Loads the latest snapshot at or below `offset` that decodes (a corrupt one is skipped,
    /// nothing is deleted), else the empty state at `log_start_offset`.
    pub(crate) fn load_snapshot_at_or_below(
        &mut self,
        offset: i64,
        log_start_offset: i64,
    ) -> Result<()> {
        self.snapshots
            .retain(|o, _| *o <= offset && *o > log_start_offset);
        self.state.clear();
        let mut report = ProducerLoad::default();
        self.load_from_snapshot(log_start_offset, 0, &mut report)
    }

    /// Replays `segments` (the log's map) from the state's end up to the target segment
    /// based at `target`, then the target's batches below `end`, reading only headers (a
    /// marker's batch whole): the `.txnindex` entries its markers give, with Kafka's last
    /// stable offsets, as [`Producers::rebuild`] computes them for `recover`. The state ends
    /// at `end`.
    ///
    /// # Errors
    /// Segment read errors; [`Error::Segment`] for a corrupt header or marker.
    pub(crate) fn replay_for_txn_index(
        &mut self,
        segments: &SegmentMap<Arc<Segment>>,
        log_start_offset: i64,
        target: i64,
        end: i64,
    ) -> Result<SegmentReplay> {
        let bases: Vec<(i64, Arc<Segment>)> =
            segments.iter().map(|(b, s)| (b, Arc::clone(s))).collect();
        let mut replay = SegmentReplay {
            expected: Vec::new(),
            controls: Vec::new(),
            start: target,
            log_start_offset,
        };
        for (i, (base, segment)) in bases.iter().enumerate() {
            let next_base = bases.get(i + 1).map_or(i64::MAX, |(b, _)| *b);
            if *base > target || next_base <= self.state.map_end_offset {
                continue;
            }
            // The target segment is replayed from its base, as `recover` replays a recovered
            // segment whole (Kafka's `LogSegment.recover` puts every batch of it into the
            // producer state, also those below the log start): a transaction whose data lies
            // below a log start inside the segment and whose ABORT marker lies above it has
            // its entry, from its first offset, as Kafka's index has it.
            let start = if *base == target {
                *base
            } else {
                (*base).max(self.state.map_end_offset).max(log_start_offset)
            };
            let stop = if *base == target {
                end
            } else {
                next_base.min(target)
            };
            if *base == target {
                replay.start = start;
            }
            for batch in segment.producer_batches(0) {
                let batch = batch?;
                if batch.first_offset >= stop {
                    break;
                }
                if *base == target && batch.is_control {
                    let is_abort = batch.marker.is_some_and(|m| m.is_abort);
                    replay
                        .controls
                        .push((batch.producer_id, batch.first_offset, is_abort));
                }
                if batch.last_offset < start {
                    continue;
                }
                let kind = batch_kind(&batch);
                if let Some(txn) = self.apply(batch.producer_id, batch.producer_epoch, kind)
                    && *base == target
                {
                    replay.expected.extend(txn);
                }
            }
            self.state.map_end_offset = stop;
        }
        self.state.map_end_offset = end;
        Ok(replay)
    }
}

/// The `.snapshot` files of `dir` by offset.
fn list_snapshots(dir: &Path) -> Result<BTreeMap<i64, PathBuf>> {
    let mut out = BTreeMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io("list directory", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list directory", dir, e))?;
        let path = entry.path();
        if let Some(parsed) = parse_file_name(&path)
            && parsed.kind == FileKind::new(FileType::Snapshot)
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            out.insert(parsed.base_offset, path);
        }
    }
    Ok(out)
}

fn write_file(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    use std::io::Write;
    // The checked open: a FIFO at the snapshot's name cannot block the write.
    let mut file =
        seglog_segment::create_regular(path).map_err(|e| Error::io("create snapshot", path, e))?;
    file.set_len(0)
        .map_err(|e| Error::io("truncate snapshot", path, e))?;
    file.write_all(bytes)
        .map_err(|e| Error::io("write snapshot", path, e))?;
    if sync {
        file.sync_all()
            .map_err(|e| Error::io("fsync snapshot", path, e))?;
    }
    Ok(())
}
