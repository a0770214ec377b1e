//! The leader-epoch cache (Kafka's `LeaderEpochFileCache`) and its `leader-epoch-checkpoint`
//! file (Kafka's `LeaderEpochCheckpointFile`), spec §9.1.
//!
//! The cache maps each leader epoch to the first offset written in it, in increasing epoch
//! and increasing start-offset order. A replication layer answers `OffsetsForLeaderEpoch`
//! from it ([`LeaderEpochCache::end_offset_for`]) so that a follower knows where to truncate.
//!
//! The file lives in the partition directory, in the checkpoint text format of spec §1.4:
//!
//! ```text
//! 0                 <- version
//! 2                 <- entry count
//! 0 0               <- <epoch> <startOffset>
//! 3 1200
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use seglog_records::MAGIC_V2;
use seglog_segment::{Io, RecoveryDigest, Segment};

use crate::checkpoint::{CheckpointProblem, CheckpointProblemKind};
use crate::error::CheckpointCorruptKind;
use crate::fsutil::write_atomic;
use crate::load::LoadReport;
use crate::segment_map::SegmentMap;
use crate::{Error, Result};

/// File name of the leader-epoch checkpoint in a partition directory.
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// Kafka's `OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH`.
pub const UNDEFINED_EPOCH: i32 = -1;

/// Kafka's `OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET`.
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// One entry of the cache: the first offset written in `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// The first offset of the epoch.
    pub start_offset: i64,
}

/// The answer to an `OffsetsForLeaderEpoch` request ([`LeaderEpochCache::end_offset_for`]):
/// the largest known epoch at or below the requested one and the offset where it ended, or
/// [`EpochEndOffset::UNDEFINED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    /// The epoch found (`UNDEFINED_EPOCH` when none).
    pub epoch: i32,
    /// Its end offset: the start of the next epoch, or the log end offset for the latest
    /// (`UNDEFINED_EPOCH_OFFSET` when none).
    pub end_offset: i64,
}

impl EpochEndOffset {
    /// Kafka's undefined answer, `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`.
    pub const UNDEFINED: Self = Self {
        epoch: UNDEFINED_EPOCH,
        end_offset: UNDEFINED_EPOCH_OFFSET,
    };

    /// Whether this is the undefined answer (Kafka's `UnifiedLog.endOffsetForEpoch` returns
    /// no answer when the end offset is undefined).
    pub fn is_undefined(&self) -> bool {
        self.end_offset == UNDEFINED_EPOCH_OFFSET
    }
}

/// An entry with a negative epoch or start offset: Kafka's `assign` refuses it
/// (`IllegalArgumentException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid leader epoch entry: epoch {epoch}, start offset {start_offset}")]
pub struct InvalidEpochEntry {
    /// The epoch given.
    pub epoch: i32,
    /// The start offset given.
    pub start_offset: i64,
}

/// The in-memory leader-epoch cache, with the exact rules of Kafka's `LeaderEpochFileCache`.
/// It holds no file: [`LeaderEpochCheckpointFile`] reads and writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    /// epoch -> start offset.
    epochs: BTreeMap<i32, i64>,
}

impl LeaderEpochCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// A cache built by assigning `entries` in order (Kafka's constructor from a checkpoint).
    ///
    /// # Errors
    /// [`InvalidEpochEntry`] for a negative epoch or start offset.
    pub fn from_entries(
        entries: impl IntoIterator<Item = EpochEntry>,
    ) -> Result<Self, InvalidEpochEntry> {
        let mut cache = Self::new();
        for entry in entries {
            cache.assign(entry.epoch, entry.start_offset)?;
        }
        Ok(cache)
    }

    /// Kafka's `assign(epoch, startOffset)`. Nothing changes when `epoch` is the latest epoch
    /// and `start_offset` is not below its start. Otherwise every entry, from the latest
    /// down, whose epoch is at or above `epoch` or whose start offset is at or above
    /// `start_offset` is removed (stopping at the first one that is neither), and the entry
    /// is added. Returns whether the cache changed.
    ///
    /// # Errors
    /// [`InvalidEpochEntry`] for a negative epoch or start offset (the cache is unchanged).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool, InvalidEpochEntry> {
        if epoch < 0 || start_offset < 0 {
            return Err(InvalidEpochEntry {
                epoch,
                start_offset,
            });
        }
        if let Some(latest) = self.latest_entry()
            && latest.epoch == epoch
            && start_offset >= latest.start_offset
        {
            return Ok(false);
        }
        while let Some((&e, &s)) = self.epochs.last_key_value() {
            if e >= epoch || s >= start_offset {
                self.epochs.remove(&e);
            } else {
                break;
            }
        }
        self.epochs.insert(epoch, start_offset);
        Ok(true)
    }

    /// What loading and recovery do with a batch (Kafka's `LogSegment.recover`): a v2 batch
    /// with `partitionLeaderEpoch >= 0` newer than the latest epoch starts that epoch at its
    /// base offset. Returns whether the cache changed.
    pub fn learn_from_recovery(&mut self, epoch: i32, base_offset: i64) -> bool {
        let newer = self.latest_epoch().is_none_or(|latest| epoch > latest);
        epoch >= 0 && newer && self.assign(epoch, base_offset).unwrap_or(false)
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> Vec<EpochEntry> {
        self.epochs
            .iter()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
            .collect()
    }

    /// The latest entry.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .last_key_value()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// The earliest entry.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .first_key_value()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// The latest epoch (Kafka's `latestEpoch`).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// Kafka's `endOffsetFor(requestedEpoch, logEndOffset)`:
    /// - `UNDEFINED_EPOCH` requested: undefined;
    /// - the latest epoch requested: `(epoch, log_end_offset)`;
    /// - otherwise, with the first epoch above the requested one: undefined when there is
    ///   none; `(requested, its start)` when no epoch is at or below the requested one;
    ///   else `(largest epoch <= requested, start of the first epoch above it)`.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> EpochEndOffset {
        if requested_epoch == UNDEFINED_EPOCH {
            return EpochEndOffset::UNDEFINED;
        }
        if self.latest_epoch() == Some(requested_epoch) {
            return EpochEndOffset {
                epoch: requested_epoch,
                end_offset: log_end_offset,
            };
        }
        let higher = self
            .epochs
            .range((
                std::ops::Bound::Excluded(requested_epoch),
                std::ops::Bound::Unbounded,
            ))
            .next();
        let Some((_, &higher_start)) = higher else {
            return EpochEndOffset::UNDEFINED;
        };
        match self.epochs.range(..=requested_epoch).next_back() {
            None => EpochEndOffset {
                epoch: requested_epoch,
                end_offset: higher_start,
            },
            Some((&floor, _)) => EpochEndOffset {
                epoch: floor,
                end_offset: higher_start,
            },
        }
    }

    /// Kafka's `truncateFromEnd(endOffset)`: removes every entry starting at or above
    /// `end_offset` (nothing when `end_offset` is negative). Returns whether the cache
    /// changed.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let latest_at_or_above = self
            .latest_entry()
            .is_some_and(|latest| latest.start_offset >= end_offset);
        if end_offset < 0 || !latest_at_or_above {
            return false;
        }
        let mut changed = false;
        while let Some((&e, &s)) = self.epochs.last_key_value() {
            if s >= end_offset {
                self.epochs.remove(&e);
                changed = true;
            } else {
                break;
            }
        }
        changed
    }

    /// Kafka's `truncateFromStart(startOffset)`: removes every entry starting at or below
    /// `start_offset` and puts the last of them back starting at `start_offset` (so the
    /// epoch holding the new log start keeps an entry). Returns whether the cache changed.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let before = self.epochs.clone();
        let mut last_removed = None;
        while let Some((&e, &s)) = self.epochs.first_key_value() {
            if s <= start_offset {
                self.epochs.remove(&e);
                last_removed = Some(e);
            } else {
                break;
            }
        }
        if let Some(epoch) = last_removed {
            self.epochs.insert(epoch, start_offset);
        }
        self.epochs != before
    }

    /// Kafka's `epochForOffset`: the epoch of the entry starting at `offset`, else of the
    /// last entry starting below it.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let mut previous = None;
        for (&epoch, &start) in &self.epochs {
            if start == offset {
                return Some(epoch);
            }
            if start > offset {
                return previous;
            }
            previous = Some(epoch);
        }
        previous
    }

    /// Removes every entry. Returns whether the cache changed.
    pub fn clear(&mut self) -> bool {
        let changed = !self.epochs.is_empty();
        self.epochs.clear();
        changed
    }
}

/// The `leader-epoch-checkpoint` file of a partition directory.
#[derive(Debug, Clone)]
pub struct LeaderEpochCheckpointFile {
    path: PathBuf,
    /// The seam the directory fsync of [`LeaderEpochCheckpointFile::write`] goes through.
    io: Io,
}

impl LeaderEpochCheckpointFile {
    /// The checkpoint of the partition directory `dir` (nothing is read or created yet).
    pub fn in_dir(dir: &Path) -> Self {
        Self::new(dir.join(LEADER_EPOCH_CHECKPOINT))
    }

    /// A handle on the checkpoint at `path` (nothing is read or created yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            io: Io::direct(),
        }
    }

    /// The same handle, with its directory fsync going through `io`.
    #[must_use]
    pub fn with_io(self, io: Io) -> Self {
        Self { io, ..self }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the entries in file order; `None` when the file does not exist. An empty file,
    /// or one with only the version line, has no entry (Kafka creates the file empty).
    ///
    /// # Errors
    /// [`Error::Io`] when it exists but cannot be read; [`Error::Corrupt`] with the line
    /// number when it does not parse (Kafka's rules: version 0 only, two tokens per line,
    /// exact entry count; a negative epoch or start offset is a malformed line).
    pub fn read(&self) -> Result<Option<Vec<EpochEntry>>> {
        let text = match crate::checkpoint::read_bounded(&self.path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(None),
            Err(crate::checkpoint::ReadFailure::Io(e)) => {
                return Err(Error::io("read leader-epoch checkpoint", &self.path, e));
            }
            Err(crate::checkpoint::ReadFailure::Corrupt(position, kind)) => {
                return Err(Error::Corrupt {
                    path: self.path.clone(),
                    position,
                    kind,
                });
            }
        };
        parse(&text)
            .map(Some)
            .map_err(|(position, kind)| Error::Corrupt {
                path: self.path.clone(),
                position,
                kind,
            })
    }

    /// Writes `cache` atomically: `<file>.tmp`, fsync, rename, fsync the directory.
    ///
    /// # Errors
    /// [`Error::Io`] naming the failing step.
    pub fn write(&self, cache: &LeaderEpochCache) -> Result<()> {
        write_atomic(&self.io, &self.path, format(&cache.entries()).as_bytes())
    }
}

/// Renders the checkpoint text (`\n` line ends, as Kafka writes on Unix).
pub(crate) fn format(entries: &[EpochEntry]) -> String {
    let mut out = format!("0\n{}\n", entries.len());
    for entry in entries {
        out.push_str(&format!("{} {}\n", entry.epoch, entry.start_offset));
    }
    out
}

/// Parses checkpoint text (Kafka's `CheckpointReadBuffer` with the leader-epoch formatter);
/// errors carry a 1-based line number. Both `\n` and `\r\n` line ends are accepted.
///
/// Entries must strictly increase in both epoch and start offset, as Kafka's cache writes
/// them ([`CheckpointCorruptKind::EpochsNotIncreasing`] otherwise: a repeated epoch, or one
/// that goes backwards, would map offsets to the wrong leader epoch).
///
/// # Errors
/// The line and what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<EpochEntry>, (u64, CheckpointCorruptKind)> {
    let entries = crate::checkpoint::parse_entries(text, |tokens| {
        let [epoch, start_offset] = tokens else {
            return None;
        };
        let entry = EpochEntry {
            epoch: epoch.parse().ok()?,
            start_offset: start_offset.parse().ok()?,
        };
        (entry.epoch >= 0 && entry.start_offset >= 0).then_some(entry)
    })?;
    for (i, pair) in entries.windows(2).enumerate() {
        let (previous, entry) = (pair[0], pair[1]);
        if entry.epoch <= previous.epoch || entry.start_offset <= previous.start_offset {
            // Line 1 is the version, line 2 the count: entry i + 1 is on line i + 4.
            return Err((
                i as u64 + 4,
                CheckpointCorruptKind::EpochsNotIncreasing {
                    previous_epoch: previous.epoch,
                    previous_start_offset: previous.start_offset,
                    epoch: entry.epoch,
                    start_offset: entry.start_offset,
                },
            ));
        }
    }
    Ok(entries)
}

/// Where [`crate::Log::open`] took the leader-epoch cache from
/// ([`crate::LoadReport::leader_epochs`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderEpochSource {
    /// The checkpoint, brought up to date with the batches of the recovered segments (Kafka's
    /// rule: `LogSegment.recover` assigns the epochs of the range it recovers).
    #[default]
    Checkpoint,
    /// There was no checkpoint: rebuilt from the batches of every segment (Kafka would start
    /// empty; seglog rebuilds, so a directory written before seglog kept epochs gets them).
    Rebuilt,
    /// The checkpoint could not be read or parsed: rebuilt from the batches of every segment
    /// (Kafka would fail the log directory).
    RebuiltAfterProblem(CheckpointProblem),
}

/// The cache of a [`crate::Log`] and the file it is kept in (`None`: read-only, memory only).
#[derive(Debug)]
pub(crate) struct EpochState {
    pub(crate) cache: LeaderEpochCache,
    pub(crate) file: Option<LeaderEpochCheckpointFile>,
}

/// Loads the cache of a freshly loaded log (Kafka's order): the checkpoint, then the batches
/// of the recovered segments (or of every segment when the checkpoint is missing or
/// unusable), then `truncate_from_end(log end)` and `truncate_from_start(log start)`. A
/// read-write load writes the checkpoint when it differs from the file. A segment with a
/// recovery digest in `digests` is learnt from it, not read again.
///
/// # Errors
/// [`Error::Io`] when the checkpoint cannot be written.
#[allow(clippy::too_many_arguments)]
pub(crate) fn load(
    dir: &Path,
    io: &Io,
    read_only: bool,
    segments: &SegmentMap<Arc<Segment>>,
    report: &LoadReport,
    digests: &BTreeMap<i64, RecoveryDigest>,
    log_start_offset: i64,
    log_end_offset: i64,
) -> Result<(EpochState, LeaderEpochSource)> {
    let file = LeaderEpochCheckpointFile::in_dir(dir).with_io(io.clone());
    let problem = |line, kind| CheckpointProblem {
        path: file.path().to_path_buf(),
        line,
        kind,
    };
    let read = match file.read() {
        Ok(Some(entries)) => LeaderEpochCache::from_entries(entries.iter().copied())
            .map(|cache| (Some(entries), cache))
            .map_err(|_| {
                problem(
                    None,
                    CheckpointProblemKind::Corrupt(CheckpointCorruptKind::MalformedLine),
                )
            }),
        Ok(None) => Err(problem(
            None,
            CheckpointProblemKind::Unreadable(io::ErrorKind::NotFound),
        )),
        Err(Error::Corrupt { position, kind, .. }) => Err(problem(
            Some(position),
            CheckpointProblemKind::Corrupt(kind),
        )),
        Err(Error::Io { source, .. }) => Err(problem(
            None,
            CheckpointProblemKind::Unreadable(source.kind()),
        )),
        Err(e) => return Err(e),
    };
    let (on_disk, mut cache, source) = match read {
        Ok((entries, cache)) => (entries, cache, LeaderEpochSource::Checkpoint),
        Err(p) if p.kind == CheckpointProblemKind::Unreadable(io::ErrorKind::NotFound) => {
            (None, LeaderEpochCache::new(), LeaderEpochSource::Rebuilt)
        }
        Err(p) => (
            None,
            LeaderEpochCache::new(),
            LeaderEpochSource::RebuiltAfterProblem(p),
        ),
    };
    let recovered: std::collections::BTreeSet<i64> = report.recovered().collect();
    let scan_all = source != LeaderEpochSource::Checkpoint;
    let mut first_batch = None;
    for (base, segment) in segments.iter() {
        if let Some(digest) = digests.get(&base) {
            learn_from_digest(&mut cache, digest, &mut first_batch);
        } else if scan_all || recovered.contains(&base) {
            learn_from_segment(&mut cache, segment, &mut first_batch);
        }
    }
    // Rebuilt from every batch: when the log's first batch starts the first epoch, that
    // epoch starts at the log start, as Kafka's cache (kept since the data was written)
    // says when compaction removed the first batches.
    if scan_all
        && let Some(first) = cache.earliest_entry()
        && first_batch == Some((first.epoch, first.start_offset))
        && log_start_offset < first.start_offset
    {
        cache.epochs.insert(first.epoch, log_start_offset);
    }
    cache.truncate_from_end(log_end_offset);
    cache.truncate_from_start(log_start_offset);
    let file = if read_only {
        None
    } else {
        if on_disk.as_deref() != Some(&cache.entries()[..]) {
            file.write(&cache)?;
        }
        Some(file)
    };
    Ok((EpochState { cache, file }, source))
}

/// [`learn_from_segment`] from the digest its recovery collected: the same result, as the
/// digest holds every batch at which the rule can change the cache
/// ([`RecoveryDigest::epoch_starts`]) and the first batch.
fn learn_from_digest(
    cache: &mut LeaderEpochCache,
    digest: &RecoveryDigest,
    first_batch: &mut Option<(i32, i64)>,
) {
    if first_batch.is_none() {
        *first_batch = digest.first_batch;
    }
    for start in &digest.epoch_starts {
        cache.learn_from_recovery(start.epoch, start.base_offset);
    }
}

/// Assigns the epochs of `segment`'s v2 batches as recovery does, noting in `first_batch`
/// the epoch (-1 for a legacy batch) and base offset of the first batch scanned. A header
/// that does not parse ends the scan of the segment (the log serves nothing after it
/// either).
fn learn_from_segment(
    cache: &mut LeaderEpochCache,
    segment: &Segment,
    first_batch: &mut Option<(i32, i64)>,
) {
    for header in segment.batch_headers(0) {
        let Ok(header) = header else {
            return;
        };
        if first_batch.is_none() {
            let epoch = if header.magic >= MAGIC_V2 {
                header.partition_leader_epoch
            } else {
                UNDEFINED_EPOCH
            };
            *first_batch = Some((epoch, header.base_offset.unwrap_or(header.last_offset)));
        }
        if header.magic >= MAGIC_V2
            && let Some(base) = header.base_offset
        {
            cache.learn_from_recovery(header.partition_leader_epoch, base);
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::fs;

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        LeaderEpochCache::from_entries(entries.iter().map(|&(epoch, start_offset)| EpochEntry {
            epoch,
            start_offset,
        }))
        .unwrap()
    }

    fn pairs(cache: &LeaderEpochCache) -> Vec<(i32, i64)> {
        cache
            .entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    }

    fn answer(epoch: i32, end_offset: i64) -> EpochEndOffset {
        EpochEndOffset { epoch, end_offset }
    }

    // The cases below follow Kafka's LeaderEpochFileCacheTest.

    #[test]
    fn assign_keeps_the_first_offset_of_an_epoch() {
        let mut c = LeaderEpochCache::new();
        assert!(c.assign(2, 6).unwrap());
        assert!(!c.assign(2, 7).unwrap());
        assert!(!c.assign(2, 6).unwrap());
        assert_eq!(pairs(&c), [(2, 6)]);
        // The same epoch with an earlier start replaces it.
        assert!(c.assign(2, 5).unwrap());
        assert_eq!(pairs(&c), [(2, 5)]);
    }

    #[test]
    fn assign_removes_entries_that_break_monotonicity() {
        // A lower epoch removes every higher epoch.
        let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
        assert!(c.assign(3, 12).unwrap());
        assert_eq!(pairs(&c), [(2, 6), (3, 12)]);
        // A higher epoch at an earlier offset removes the entries starting at or after it.
        let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
        assert!(c.assign(5, 8).unwrap());
        assert_eq!(pairs(&c), [(2, 6), (5, 8)]);
        // Removal stops at the first entry that conflicts with neither rule.
        let mut c = cache(&[(1, 0), (2, 6), (3, 8)]);
        assert!(c.assign(4, 7).unwrap());
        assert_eq!(pairs(&c), [(1, 0), (2, 6), (4, 7)]);
        // A lower epoch and an earlier offset than everything clears the cache.
        let mut c = cache(&[(2, 6), (3, 8)]);
        assert!(c.assign(1, 0).unwrap());
        assert_eq!(pairs(&c), [(1, 0)]);
    }

    #[test]
    fn assign_refuses_negative_values() {
        let mut c = cache(&[(1, 5)]);
        assert_eq!(
            c.assign(-1, 7).unwrap_err(),
            InvalidEpochEntry {
                epoch: -1,
                start_offset: 7
            }
        );
        assert!(c.assign(2, -1).is_err());
        assert_eq!(pairs(&c), [(1, 5)]);
    }

    #[test]
    fn recovery_learns_only_newer_epochs() {
        let mut c = LeaderEpochCache::new();
        assert!(!c.learn_from_recovery(-1, 0));
        assert!(c.learn_from_recovery(0, 0));
        assert!(!c.learn_from_recovery(0, 5));
        assert!(c.learn_from_recovery(2, 10));
        assert!(!c.learn_from_recovery(1, 20));
        assert_eq!(pairs(&c), [(0, 0), (2, 10)]);
    }

    #[test]
    fn end_offset_for_follows_kafka() {
        let c = cache(&[(2, 6), (4, 11), (7, 15)]);
        let leo = 20;
        assert_eq!(
            c.end_offset_for(UNDEFINED_EPOCH, leo),
            EpochEndOffset::UNDEFINED
        );
        // The latest epoch ends at the log end offset.
        assert_eq!(c.end_offset_for(7, leo), answer(7, 20));
        // A known epoch ends where the next one starts.
        assert_eq!(c.end_offset_for(2, leo), answer(2, 11));
        assert_eq!(c.end_offset_for(4, leo), answer(4, 15));
        // An unknown epoch between known ones: the largest epoch below it.
        assert_eq!(c.end_offset_for(3, leo), answer(2, 11));
        assert_eq!(c.end_offset_for(6, leo), answer(4, 15));
        // Below every epoch: the requested epoch, ending at the first epoch's start.
        assert_eq!(c.end_offset_for(1, leo), answer(1, 6));
        assert_eq!(c.end_offset_for(-2, leo), answer(-2, 6));
        // Above every epoch: undefined.
        assert_eq!(c.end_offset_for(8, leo), EpochEndOffset::UNDEFINED);
        assert!(c.end_offset_for(8, leo).is_undefined());
        // An empty cache knows nothing.
        let empty = LeaderEpochCache::new();
        assert_eq!(empty.end_offset_for(0, leo), EpochEndOffset::UNDEFINED);
    }

    #[test]
    fn truncate_from_end_removes_entries_at_or_after_the_offset() {
        let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
        assert!(!c.truncate_from_end(12));
        assert!(!c.truncate_from_end(-1));
        assert!(c.truncate_from_end(11));
        assert_eq!(pairs(&c), [(2, 6), (3, 8)]);
        assert!(c.truncate_from_end(7));
        assert_eq!(pairs(&c), [(2, 6)]);
        assert!(c.truncate_from_end(0));
        assert!(c.is_empty());
    }

    #[test]
    fn truncate_from_start_moves_the_first_kept_epoch() {
        let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
        assert!(!c.truncate_from_start(5));
        assert_eq!(pairs(&c), [(2, 6), (3, 8), (4, 11)]);
        // At an entry's start: it is kept as it is.
        assert!(!c.truncate_from_start(6));
        assert_eq!(pairs(&c), [(2, 6), (3, 8), (4, 11)]);
        // Inside an epoch: that epoch now starts at the offset, earlier ones go.
        assert!(c.truncate_from_start(9));
        assert_eq!(pairs(&c), [(3, 9), (4, 11)]);
        // Beyond every entry: the latest epoch starts there.
        assert!(c.truncate_from_start(15));
        assert_eq!(pairs(&c), [(4, 15)]);
    }

    #[test]
    fn epoch_for_offset_follows_kafka() {
        let c = cache(&[(2, 6), (4, 11)]);
        assert_eq!(c.epoch_for_offset(5), None);
        assert_eq!(c.epoch_for_offset(6), Some(2));
        assert_eq!(c.epoch_for_offset(10), Some(2));
        assert_eq!(c.epoch_for_offset(11), Some(4));
        assert_eq!(c.epoch_for_offset(100), Some(4));
    }

    #[test]
    fn checkpoint_text_round_trips_in_kafkas_format() {
        let c = cache(&[(0, 0), (3, 1200)]);
        assert_eq!(format(&c.entries()), "0\n2\n0 0\n3 1200\n");
        assert_eq!(parse("0\n2\n0 0\n3 1200\n").unwrap(), c.entries());
        assert_eq!(format(&[]), "0\n0\n");
        assert!(parse("").unwrap().is_empty());
        assert!(parse("0\n").unwrap().is_empty());
        assert_eq!(parse("0\r\n1\r\n5  7\r\n").unwrap().len(), 1);
        assert_eq!(
            parse("1\n0\n").unwrap_err(),
            (1, CheckpointCorruptKind::UnsupportedVersion(1))
        );
        assert_eq!(
            parse("x\n").unwrap_err().1,
            CheckpointCorruptKind::MalformedVersion
        );
        assert_eq!(
            parse("0\nx\n").unwrap_err().1,
            CheckpointCorruptKind::MalformedCount
        );
        assert_eq!(
            parse("0\n1\n1 2 3\n").unwrap_err(),
            (3, CheckpointCorruptKind::MalformedLine)
        );
        assert_eq!(
            parse("0\n1\n-1 2\n").unwrap_err(),
            (3, CheckpointCorruptKind::MalformedLine)
        );
        assert_eq!(
            parse("0\n2\n1 2\n").unwrap_err().1,
            CheckpointCorruptKind::CountMismatch {
                expected: 2,
                found: 1
            }
        );
    }

    /// Epochs or start offsets that go backwards, or a repeated epoch, are corrupt (naming the
    /// line): Kafka's cache never writes them. They used to be accepted.
    #[test]
    fn entries_that_do_not_increase_are_corrupt() {
        for (text, line) in [
            ("0\n2\n0 0\n0 50\n", 4),
            ("0\n3\n1 0\n2 10\n1 20\n", 5),
            ("0\n2\n1 10\n2 5\n", 4),
            ("0\n2\n1 10\n2 10\n", 4),
        ] {
            match parse(text) {
                Err((at, CheckpointCorruptKind::EpochsNotIncreasing { .. })) => {
                    assert_eq!(at, line, "{text:?}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        assert_eq!(parse("0\n2\n1 0\n3 10\n").unwrap().len(), 2);
    }

    #[test]
    fn checkpoint_file_writes_atomically_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = LeaderEpochCheckpointFile::in_dir(dir.path());
        assert_eq!(file.read().unwrap(), None);
        let c = cache(&[(1, 0), (4, 17)]);
        file.write(&c).unwrap();
        assert_eq!(
            fs::read_to_string(file.path()).unwrap(),
            "0\n2\n1 0\n4 17\n"
        );
        assert_eq!(file.read().unwrap(), Some(c.entries()));
        assert!(!dir.path().join("leader-epoch-checkpoint.tmp").exists());
        fs::write(file.path(), "").unwrap();
        assert_eq!(file.read().unwrap(), Some(Vec::new()));
        fs::write(file.path(), "0\n3\n1 0\n").unwrap();
        assert!(matches!(
            file.read(),
            Err(Error::Corrupt { position: 2, .. })
        ));
    }
}
