//! Loading a partition directory (Kafka's `LogLoader.load`, spec §5.5).
//!
//! Order: (1)–(3) temporary files (`*.cleaned`, `*.swap`, `*.deleted`; not KRaft
//! `*.checkpoint.deleted`, which do not parse as segment files) by the rule of `leftovers/`:
//! roll back unfinished swaps, install a valid `.swap` set in place of the segments it replaces
//! (a refused one is set aside), remove `*.deleted` files or rename back those the log needs; a
//! read-only load applies the same decision in memory, and loads again when another process
//! renamed files meanwhile; (4) open every `.log` in base order, deleting orphan index files; recover, after an
//! unclean shutdown, every segment from the one holding the recovery point on, and when a
//! recovery truncated a segment (above the recovery point) or found an overlap (a
//! [`Discontinuity`]), unlink every later segment (never opened, so at once) and fsync the
//! directory. Gaps between segments are kept and served, as Kafka's loader keeps them. A segment whose offsets overflow
//! its base (found by its recovery, or by a check of its next offset when it is not
//! recovered) is split (`split.rs`, KAFKA-6264) and its replacements are opened in its place.
//! A checkpointed log start beyond the log end is reported and ignored (Kafka would wipe the
//! log; a checkpoint that contradicts the data never deletes it). Then make sure one segment exists
//! (read-write), and resume the last one as the active segment. A read-only load does the same
//! in memory and skips every file change: it cannot split (an overflowed segment that needs a
//! recovery is an error) and it yields an empty log when there is no segment.
//!
//! A recovered segment is first opened with the index checks, so the report says what was
//! wrong with its indexes (if anything), then recovered when the checks did not already do it.
//!
//! Files that are not segment files (`.snapshot`s are segment-named but ours to ignore,
//! `leader-epoch-checkpoint`, `partition.metadata`, `quorum-state`, KRaft `*.checkpoint`, the
//! lock and checkpoint files of a standalone log) are never touched.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_index_core::relative_offset;
use seglog_segment::{
    ActiveSegment, FileKind, FileType, ListedFiles, OpenMode, ParsedFileName, RebuildReason,
    RecoveryDigest, RecoveryReport, Segment, SegmentConfig, SegmentOpenOptions, TempSuffix,
    file_path, parse_listed_name,
};

use crate::checkpoint::CheckpointProblem;
use crate::deletion::{Doomed, unlink_files};
use crate::fsutil::{remove_if_exists, sync_dir};
use crate::home::InitialState;
use crate::leftovers::{Applied, Plan};
use crate::segment_map::SegmentMap;
use crate::split::{SegmentSplit, SplitPlan};
use crate::view::OffsetMetadata;
use crate::{Error, Result};

/// What happened to one segment while loading.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SegmentLoad {
    /// The segment's base offset.
    pub base_offset: i64,
    /// Why its indexes were rebuilt: a missing or inconsistent index (found by the checks
    /// that run first, also for a segment that is recovered anyway), else
    /// [`RebuildReason::Requested`] for a recovery after an unclean shutdown or
    /// [`crate::LogOpenOptions::recover_all`].
    pub rebuilt: Option<RebuildReason>,
    /// The recovery, when one ran: batches validated, bytes truncated and why. Boxed: the
    /// report keeps an entry per segment for the log's lifetime, and most have none (every
    /// segment a clean open defers; issue 28: 224 bytes per entry inline, 40 boxed).
    pub recovery: Option<Box<RecoveryReport>>,
}

/// What [`crate::Log::open`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadReport {
    /// Whether the clean-shutdown marker was present (nothing was scanned then).
    pub had_clean_shutdown: bool,
    /// The recovery point read from the checkpoint (0 when missing).
    pub recovery_point_checkpoint: i64,
    /// The log start offset read from the checkpoint (0 when missing).
    pub log_start_offset_checkpoint: i64,
    /// Whether the log-start-offset checkpoint had an entry for this log. Kafka writes one
    /// only when the log start lies above the first segment's base or the log is tiered
    /// (`LogManager.checkpointLogStartOffsetsInDir`), so an entry below the first segment's
    /// base says that older offsets are in a remote tier ([`crate::Log::unattached_remote_start`]).
    pub log_start_offset_in_checkpoint: bool,
    /// Files removed: leftover `*.deleted` (except those restored), `*.cleaned` and the
    /// `*.swap` files at or above them (an unfinished swap), orphan indexes, old segment files
    /// replaced by a completed swap, and the files of segments dropped after a truncating
    /// recovery or a discontinuity.
    pub removed_files: Vec<PathBuf>,
    /// `*.swap` files renamed to their final names (an interrupted swap completed; only a
    /// valid one is: see `leftovers/`).
    pub completed_swaps: Vec<PathBuf>,
    /// `*.swap` files refused (damaged, overlapping, or lacking a record the segments they
    /// would replace hold): set aside as `<name>.rejected`, bytes unchanged, and the live
    /// segments kept. Kafka would install them and delete the segments they cover.
    pub rejected_swaps: Vec<crate::RejectedSwap>,
    /// `*.deleted` segment files renamed back to their live names: no other segment serves
    /// their offsets and they hold records the log would lose (a segment renamed `.deleted`
    /// between two others, or an old segment of a refused swap). Kafka would delete them.
    pub restored_files: Vec<PathBuf>,
    /// Every segment loaded, oldest first. After a clean shutdown the sealed segments are not
    /// opened at load but on first use (their checks and any rebuild then: see
    /// [`crate::Log::first_use_reports`]); they are listed here with neither `rebuilt` nor
    /// `recovery`.
    pub segments: Vec<SegmentLoad>,
    /// Segments dropped because an earlier segment's recovery truncated it (Kafka deletes
    /// everything after a truncation), because of a [`Discontinuity`], or because the log
    /// ended below the log start offset.
    pub deleted_segments: Vec<i64>,
    /// Whether a new empty segment was created (empty directory, or the log was wiped).
    pub created_segment: Option<i64>,
    /// Segments whose offsets overflowed their base offset, split into new segments
    /// (KAFKA-6264).
    pub splits: Vec<SegmentSplit>,
    /// A recovered segment that overlapped the next one: every later segment was dropped
    /// (see [`Discontinuity`]).
    pub discontinuity: Option<Discontinuity>,
    /// Recovered segments that end below the next segment's base (a gap): informational.
    /// Every segment is kept and served across the gap, as Kafka's `LogLoader` does; gaps are
    /// normal after cleaning and on followers of compacted topics.
    pub gaps: Vec<Discontinuity>,
    /// Files named like segment files but not as Kafka names them (a base offset of other
    /// than 20 digits, e.g. a copy saved as `123.log`): not loaded, not touched, reported.
    /// Kafka would load them as segments.
    pub stray_files: Vec<PathBuf>,
    /// Segment `.log` files damaged from their first byte in flushed data, renamed
    /// `<base>.log.damaged` (bytes unchanged; no loader takes them for segments) so that the log
    /// could continue at their base offset.
    pub set_aside: Vec<PathBuf>,
    /// The checkpointed log start offset when it lay beyond the log end. Kafka would delete
    /// every segment; seglog keeps them, ignores the value and starts the log at its first
    /// segment (a checkpoint that contradicts the data never deletes it).
    pub log_start_beyond_end: Option<i64>,
    /// Checkpoint files (recovery point, log start offset) that could not be read or parsed:
    /// they were read as empty, as Kafka does, so the recovery point fell back to 0 (a full
    /// recovery after an unclean shutdown) and the log start to the first segment's base.
    pub checkpoint_problems: Vec<CheckpointProblem>,
    /// Where the leader-epoch cache came from (its checkpoint, or rebuilt from the batches).
    pub leader_epochs: crate::LeaderEpochSource,
    /// Where the producer state came from (snapshot, replay, Kafka's clean-shutdown
    /// shortcut), corrupt snapshots skipped and `.txnindex` files rebuilt.
    pub producers: crate::ProducerLoad,
}

/// A recovered segment whose end does not meet the next segment's base, found after an
/// unclean shutdown.
///
/// - **Overlap** (`next_offset > next_base_offset`): the segment holds offsets the next one
///   also claims. Only an undone removal (a truncation or a drop whose fsync was lost) can
///   cause it; the log never serves overlapping segments: the segment is kept (its bytes
///   were validated and are the newer ones when a removal of the later segments was
///   undone) and every later segment is dropped ([`LoadReport::discontinuity`]). Kafka's
///   loader has no such check (a deliberate difference from Kafka).
/// - **Gap** (`next_offset < next_base_offset`): kept, as Kafka keeps it, and only reported
///   ([`LoadReport::gaps`]). Gaps are normal: cleaning removes records at segment ends, a
///   follower rolls at the first offset of the batch it appends, and a truncation inside a
///   batch ends the segment below the offset. A gap a power loss created (a segment's
///   unsynced tail lost while a later segment's file survived) cannot be told from those;
///   nothing acknowledged as durable is lost by serving it (a durable append or flush of a
///   later offset first made this segment's whole tail durable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discontinuity {
    /// The recovered segment.
    pub base_offset: i64,
    /// Its next offset after recovery.
    pub next_offset: i64,
    /// The base offset of the segment after it (dropped with every later one).
    pub next_base_offset: i64,
}

impl Discontinuity {
    /// Whether the segment overlapped the next one (else it ended below it: a gap).
    pub fn is_overlap(&self) -> bool {
        self.next_offset > self.next_base_offset
    }
}

impl LoadReport {
    /// Segments whose recovery cut bytes, with how many.
    pub fn truncations(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.segments.iter().filter_map(|s| {
            s.recovery
                .as_ref()
                .filter(|r| r.truncated_bytes > 0)
                .map(|r| (s.base_offset, r.truncated_bytes))
        })
    }

    /// Segments whose recovery found damage in flushed data and kept it on disk (see
    /// [`crate::LogOpenOptions::repair_destructively`]): base offset, where the damage starts,
    /// and the first offset not served. Later segments are kept; the log has a gap from that
    /// offset to the next segment's base.
    pub fn damaged_tails(&self) -> impl Iterator<Item = (i64, u64, i64)> + '_ {
        self.segments.iter().filter_map(|s| {
            s.recovery
                .as_ref()
                .filter(|r| r.damaged_tail_kept)
                .map(|r| (s.base_offset, r.valid_bytes, r.next_offset))
        })
    }

    /// Base offsets of the segments that were recovered (validated batch by batch).
    pub fn recovered(&self) -> impl Iterator<Item = i64> + '_ {
        self.segments
            .iter()
            .filter(|s| s.recovery.is_some())
            .map(|s| s.base_offset)
    }
}

/// The loaded state handed to the `Log`.
pub(crate) struct Loaded {
    pub(crate) segments: SegmentMap<Arc<Segment>>,
    pub(crate) active: Option<ActiveSegment>,
    pub(crate) log_start_offset: i64,
    pub(crate) recovery_point: i64,
    pub(crate) end: OffsetMetadata,
    pub(crate) report: LoadReport,
    /// Segments renamed `.deleted` during the load, to unlink after the delete delay.
    pub(crate) deleted: Vec<Doomed>,
    /// The digests of the recovered segments in the map (taken out of their recovery
    /// reports), by base offset: the leader-epoch cache and the producer state load from
    /// them instead of reading those segments again. Dropped once they are loaded.
    pub(crate) digests: BTreeMap<i64, RecoveryDigest>,
}

/// How much a load keeps of what its recoveries saw, to feed the leader-epoch cache and the
/// producer state from the recovery pass instead of reading the recovered segments again
/// ([`crate::LogOpenOptions::recovery_digest`]). An entry is a batch with a producer id, or
/// a change of leader epoch (about 56 and 16 bytes). A segment whose digest would pass a
/// limit gets none and is read again after its recovery, as it would be without digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryDigestLimits {
    /// The most entries of one segment. Default: 262,144 (about 14 MiB).
    pub per_segment: usize,
    /// The most entries of all the segments one load recovers together. Default: 1,048,576
    /// (about 56 MiB).
    pub per_load: usize,
}

impl Default for RecoveryDigestLimits {
    fn default() -> Self {
        RecoveryDigestLimits {
            per_segment: 1 << 18,
            per_load: 1 << 20,
        }
    }
}

impl RecoveryDigestLimits {
    /// No digest: every recovered segment is read again after its recovery (what seglog did
    /// before the digest).
    pub const NONE: RecoveryDigestLimits = RecoveryDigestLimits {
        per_segment: 0,
        per_load: 0,
    };
}

/// How to load: read-only, and whether to recover every segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LoadMode {
    /// Change nothing on disk (see the module docs).
    pub(crate) read_only: bool,
    /// Recover every segment, as after an unclean shutdown with the recovery point at the
    /// first segment.
    pub(crate) recover_all: bool,
    /// After a clean shutdown, open sealed segments without reading `.log` bytes
    /// ([`crate::LogOpenOptions::trust_clean_shutdown`]).
    pub(crate) trust_clean_shutdown: bool,
    /// Cut damaged flushed data as Kafka does ([`crate::LogOpenOptions::repair_destructively`]).
    pub(crate) repair_destructively: bool,
    /// Recoveries decode every batch's records ([`crate::LogOpenOptions::decode_records`]).
    pub(crate) decode_records: bool,
    /// What the recoveries keep for the epoch and producer loads
    /// ([`crate::LogOpenOptions::recovery_digest`]).
    pub(crate) digest_limits: RecoveryDigestLimits,
    /// Drop the segments after a gap a crash created ([`crate::LogOpenOptions::contiguous`]).
    pub(crate) contiguous: bool,
}

struct Loader<'a> {
    dir: &'a Path,
    config: &'a SegmentConfig,
    read_only: bool,
    /// The clock at load (the leftovers rule compares delete horizons with it).
    now_ms: i64,
    report: LoadReport,
    /// Next offsets already known (a recovery or an overflow check computed them), so the
    /// last segment's is read at most once.
    next_offsets: std::collections::BTreeMap<i64, i64>,
    /// Open segments without reading `.log` bytes (clean shutdown, no forced recovery).
    trust_clean_shutdown: bool,
    /// After a clean shutdown (no forced recovery, no destructive repair), sealed segments are
    /// not opened at load: their files are opened, and given the open policy's checks (strict,
    /// or the trusted ones with [`crate::LogOpenOptions::trust_clean_shutdown`]), on first use
    /// ([`Segment::deferred`]). Loading then costs the directory listing (with each `.log`'s
    /// length) plus the first and last segments. Safe because after a clean shutdown all data
    /// is flushed: a check that finds damage later keeps the bytes and never drops other
    /// segments, exactly what the load itself would have done.
    defer_sealed: bool,
    /// With [`crate::LogOpenOptions::contiguous`], after an unclean shutdown with a
    /// recovery-point entry: that recovery point. A gap at or above it drops every later
    /// segment.
    gap_rule_from: Option<i64>,
    /// Offsets below this are flushed data, never cut by a recovery (everything after a
    /// clean shutdown; below the checkpointed recovery point after an unclean one; nothing
    /// when no checkpoint says, or when repairing destructively).
    protect_below: i64,
    /// The digest limit of one segment.
    digest_per_segment: usize,
    /// Digest entries the load may still keep.
    digest_budget: usize,
    /// The digests kept, by base offset.
    digests: BTreeMap<i64, RecoveryDigest>,
    /// A read-only load's view of the leftovers (`leftovers/`): the segments to open, by
    /// base offset, with the suffix their `.log` carries (`None` until it is resolved, and
    /// always in a read-write load, which renames the files instead).
    view: Option<BTreeMap<i64, Option<TempSuffix>>>,
    /// The directory and the config, shared by every deferred segment (issue 28: no copy
    /// of either per segment).
    shared: (Arc<Path>, Arc<SegmentConfig>),
    /// The first listing, when the temporary-file pass found nothing to change (see
    /// [`Loader::segment_files`]).
    unchanged_listing: Option<Vec<ParsedFileName>>,
    /// What the last listing ([`Loader::list`]) showed of each segment's files
    /// (names without a suffix), handed to the open so that it stats none of them.
    listed: BTreeMap<i64, ListedFiles>,
}

/// Loads `dir`; see the module docs.
///
/// # Errors
/// I/O and segment errors; [`Error::UnsplittableSegment`] for an overflowed segment that
/// cannot be split; in read-only mode, the overflow error of a segment that needs recovery.
pub(crate) fn load(
    dir: &Path,
    config: &SegmentConfig,
    now_ms: i64,
    state: InitialState,
    mode: LoadMode,
) -> Result<Loaded> {
    if !mode.read_only {
        return load_once(dir, config, now_ms, state, mode);
    }
    crate::leftovers::consistent_read_only(dir, || load_once(dir, config, now_ms, state, mode))
}

/// One load (see [`load`]).
fn load_once(
    dir: &Path,
    config: &SegmentConfig,
    now_ms: i64,
    mut state: InitialState,
    mode: LoadMode,
) -> Result<Loaded> {
    let read_only = mode.read_only;
    let mut loader = Loader {
        dir,
        config,
        read_only,
        now_ms,
        report: LoadReport {
            had_clean_shutdown: state.had_clean_shutdown,
            recovery_point_checkpoint: state.recovery_point,
            log_start_offset_checkpoint: state.log_start_offset,
            log_start_offset_in_checkpoint: state.log_start_offset_known,
            ..LoadReport::default()
        },
        next_offsets: std::collections::BTreeMap::new(),
        trust_clean_shutdown: mode.trust_clean_shutdown
            && state.had_clean_shutdown
            && !mode.recover_all,
        defer_sealed: state.had_clean_shutdown && !mode.recover_all && !mode.repair_destructively,
        gap_rule_from: (mode.contiguous && !state.had_clean_shutdown && state.recovery_point_known)
            .then_some(state.recovery_point),
        protect_below: if mode.repair_destructively {
            i64::MIN
        } else if state.had_clean_shutdown {
            i64::MAX
        } else if state.recovery_point_known {
            state.recovery_point
        } else {
            i64::MIN
        },
        digest_per_segment: mode.digest_limits.per_segment,
        digest_budget: mode.digest_limits.per_load,
        digests: BTreeMap::new(),
        view: None,
        unchanged_listing: None,
        shared: (Arc::from(dir), Arc::new(config.clone())),
        listed: BTreeMap::new(),
    };
    if mode.recover_all {
        // Unclean, with the recovery point below every segment (the report keeps the truth).
        state.had_clean_shutdown = false;
        state.recovery_point = i64::MIN;
    }
    loader.clean_temporary_files()?;
    let (mut segments, deleted) = loader.open_segments(state)?;

    // Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd deletes every segment when the
    // checkpointed log start lies beyond the log end. A checkpoint that contradicts the data
    // never deletes it here: the value is reported and ignored (the log starts at its first
    // segment), and the segments stay.
    let last_next_offset = match segments.last() {
        Some((base, last)) => Some(loader.next_offset(base, last)?),
        None => None,
    };
    if let Some(next) = last_next_offset
        && next < state.log_start_offset
    {
        loader.report.log_start_beyond_end = Some(state.log_start_offset);
        state.log_start_offset = 0;
    }
    // A last segment whose damaged tail was kept cannot take appends (they would overwrite
    // the kept bytes): appends go to a new segment at the offset after its valid batches.
    let damaged_last = segments.last().and_then(|(base, _)| {
        loader
            .report
            .segments
            .iter()
            .rev()
            .find(|s| s.base_offset == base)
            .and_then(|s| s.recovery.as_ref())
            .filter(|r| r.damaged_tail_kept)
            .map(|r| (base, RecoveryReport::clone(r)))
    });
    if let Some((base, recovery)) = damaged_last
        && !read_only
    {
        if recovery.next_offset <= base {
            // Damaged from its first byte: no offset before the damage to continue at, and a
            // new segment needs this one's name. Its `.log` is set aside under a name no loader
            // takes for a segment (`<base>.log.damaged`, bytes unchanged); its indexes, derived
            // data, are removed; the log continues at its base offset.
            if let Some(segment) = segments.remove(base) {
                drop(segment);
            }
            loader.digests.remove(&base);
            let log_path = file_path(dir, base, FileKind::LOG);
            let aside = log_path.with_extension("log.damaged");
            fs::rename(&log_path, &aside)
                .map_err(|e| Error::io("set aside damaged segment", &log_path, e))?;
            for kind in [FileKind::INDEX, FileKind::TIME_INDEX] {
                remove_if_exists(&file_path(dir, base, kind))?;
            }
            sync_dir(&config.io, dir)?;
            loader.report.set_aside.push(aside);
        }
        let next = recovery.next_offset;
        let active = ActiveSegment::create(dir, next, config)?;
        segments.insert(next, Arc::clone(active.segment()));
        loader.next_offsets.insert(next, next);
        loader.report.created_segment = Some(next);
        sync_dir(&config.io, dir)?;
        drop(active);
    }
    if segments.is_empty() && !read_only {
        let base = state.log_start_offset.max(0);
        let active = ActiveSegment::create(dir, base, config)?;
        segments.insert(base, Arc::clone(active.segment()));
        loader.report.created_segment = Some(base);
        sync_dir(&config.io, dir)?;
        drop(active);
    }
    let Some((last_base, last)) = segments.last().map(|(b, s)| (b, Arc::clone(s))) else {
        // Read-only and no segment: an empty log at the checkpointed log start.
        let start = state.log_start_offset.max(0);
        return Ok(Loaded {
            segments,
            active: None,
            log_start_offset: start,
            recovery_point: start,
            end: OffsetMetadata {
                offset: start,
                segment_base_offset: start,
                position: 0,
            },
            report: loader.report,
            deleted,
            digests: loader.digests,
        });
    };
    let log_end_offset = match last_next_offset {
        Some(next) => next,
        _ => loader.next_offset(last_base, &last)?,
    };
    let first_base = segments.first().map_or(last_base, |(b, _)| b);
    let log_start_offset = state.log_start_offset.max(first_base);
    let recovery_point = if state.had_clean_shutdown {
        log_end_offset
    } else {
        state
            .recovery_point
            .clamp(0, log_end_offset)
            .max(log_start_offset.min(log_end_offset))
    };
    let active = if read_only {
        None
    } else {
        let mut active = ActiveSegment::resume(last)?;
        active.set_created_ms(now_ms);
        Some(active)
    };
    let end = OffsetMetadata {
        offset: log_end_offset,
        segment_base_offset: last_base,
        position: segments.last().map_or(0, |(_, s)| s.size()),
    };
    // Kept as long as the log: not the up to twice the entries its growth reserved.
    loader.report.segments.shrink_to_fit();
    Ok(Loaded {
        segments,
        active,
        log_start_offset,
        recovery_point,
        end,
        report: loader.report,
        deleted,
        digests: loader.digests,
    })
}

impl Loader<'_> {
    fn mode(&self) -> OpenMode {
        if self.read_only {
            OpenMode::ReadOnly
        } else {
            OpenMode::ReadWrite
        }
    }

    /// Segment files in the directory, parsed, oldest base first (as their names order):
    /// the listing the temporary-file pass kept when it changed nothing, else a new one;
    /// with a read-only load's view of the leftovers applied. A file's path is
    /// `file_path(self.dir, base_offset, kind)` (only canonical names are listed), except
    /// for a `.log` the read-only view lists as live under its temporary name.
    fn segment_files(&mut self) -> Result<Vec<ParsedFileName>> {
        let mut out = match self.unchanged_listing.take() {
            Some(files) => files,
            None => self.list()?,
        };
        if let Some(view) = &self.view {
            // Read-only: the segments as the leftovers rule leaves them, each `.log` under
            // the name it has now, listed as a live one.
            out.retain(|p| p.kind != FileKind::LOG || view.get(&p.base_offset) == Some(&None));
            for (base, suffix) in view {
                if suffix.is_some() {
                    out.push(ParsedFileName {
                        base_offset: *base,
                        kind: FileKind::LOG,
                    });
                }
            }
            out.sort_unstable_by(|a, b| name_order(a).cmp(&name_order(b)));
        }
        Ok(out)
    }

    /// One listing of the directory: its segment files (canonical names, regular files, no
    /// `.snapshot`s), in the order of their names; the strays and what [`Loader::listed`]
    /// keeps are recorded on the way. Per file it keeps a parsed name (16 bytes), not a path
    /// (issue 28: the listing's `PathBuf`s were a third of what a clean open of many
    /// segments left resident).
    fn list(&mut self) -> Result<Vec<ParsedFileName>> {
        let entries =
            fs::read_dir(self.dir).map_err(|e| Error::io("list directory", self.dir, e))?;
        let mut out = Vec::new();
        self.listed.clear();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("list directory", self.dir, e))?;
            let name = entry.file_name();
            let Some((parsed, canonical)) = parse_listed_name(&name) else {
                continue;
            };
            // The type the listing gave (no call per entry); a symlink is followed, as
            // `Path::is_file` does (issue 28: no `statx` per file of the listing).
            let (regular, symlink) = match entry.file_type() {
                Ok(t) if t.is_symlink() => (self.dir.join(&name).is_file(), true),
                Ok(t) => (t.is_file(), false),
                Err(_) => (self.dir.join(&name).is_file(), true),
            };
            if parsed.kind.suffix.is_none() {
                let listed = self.listed.entry(parsed.base_offset).or_default();
                listed.symlink |= symlink;
                match parsed.kind.file_type {
                    FileType::Index => listed.index |= regular,
                    FileType::TimeIndex => listed.time_index |= regular,
                    _ => {}
                }
            }
            if !regular {
                continue;
            }
            // Only the names Kafka writes (20-digit base offsets): `123.log`, a stray copy,
            // is not a segment (Kafka would load it, and its offsets would overlap others).
            // Base offset i64::MAX holds no record (the offset after it overflows).
            if !canonical || parsed.base_offset == i64::MAX {
                let path = self.dir.join(&name);
                if !self.report.stray_files.contains(&path) {
                    self.report.stray_files.push(path);
                }
                continue;
            }
            if parsed.kind.file_type != FileType::Snapshot {
                out.push(parsed);
            }
        }
        // In the order of the names (20 digits, then the extension): no name is formatted
        // to sort them (issue 28; a `Path` comparison was half of a clean open of 20,000
        // segments before be0b88a).
        out.sort_unstable_by(|a, b| name_order(a).cmp(&name_order(b)));
        Ok(out)
    }

    /// The suffix the `.log` of segment `base` carries now (read-only view of the leftovers).
    fn suffix_of(&self, base: i64) -> Option<TempSuffix> {
        self.view
            .as_ref()
            .and_then(|view| view.get(&base).copied().flatten())
    }

    /// The next offset of segment `base`, read once.
    fn next_offset(&mut self, base: i64, segment: &Segment) -> Result<i64> {
        if let Some(next) = self.next_offsets.get(&base) {
            return Ok(*next);
        }
        let next = segment.read_next_offset()?;
        self.next_offsets.insert(base, next);
        Ok(next)
    }

    fn remove(&mut self, path: &Path) -> Result<()> {
        if remove_if_exists(path)? {
            self.report.removed_files.push(path.to_path_buf());
        }
        Ok(())
    }

    /// Passes 1–3: `.deleted`, `.cleaned`, `.swap`, by the rule of `leftovers/`: applied on
    /// disk by a read-write load, kept as the view of a read-only one.
    fn clean_temporary_files(&mut self) -> Result<()> {
        let files = self.list()?;
        if files.iter().all(|p| p.kind.suffix.is_none()) {
            // No temporary file: the plan would change nothing and leave every listed `.log`
            // live, so the next pass takes this listing instead of listing again.
            self.unchanged_listing = Some(files);
            return Ok(());
        }
        let files: Vec<(PathBuf, ParsedFileName)> = files
            .into_iter()
            .map(|p| (file_path(self.dir, p.base_offset, p.kind), p))
            .collect();
        let plan = Plan::new(self.dir, &files, self.now_ms)?;
        if self.read_only {
            self.report.rejected_swaps = plan
                .rejected
                .iter()
                .cloned()
                .map(|mut r| {
                    r.set_aside_as = None;
                    r
                })
                .collect();
            // What a read-write open would rename back, served here under the `.deleted` names.
            self.report.restored_files = plan
                .segments
                .iter()
                .filter(|(_, suffix)| **suffix == Some(TempSuffix::Deleted))
                .map(|(base, _)| file_path(self.dir, *base, FileKind::LOG.with_suffix(None)))
                .collect();
            self.view = Some(plan.segments);
            return Ok(());
        }
        let mut applied = Applied::default();
        plan.apply(self.dir, self.config, &mut applied)?;
        self.report.removed_files.extend(applied.removed);
        self.report.completed_swaps.extend(applied.completed_swaps);
        self.report.restored_files.extend(applied.restored);
        self.report.rejected_swaps.extend(applied.rejected);
        Ok(())
    }

    /// Pass 4 and recovery. Returns the map and the segments dropped after a truncation or
    /// replaced by a split.
    fn open_segments(
        &mut self,
        state: InitialState,
    ) -> Result<(SegmentMap<Arc<Segment>>, Vec<Doomed>)> {
        let files = self.segment_files()?;
        let logs: BTreeSet<i64> = files
            .iter()
            .filter(|p| p.kind == FileKind::LOG)
            .map(|p| p.base_offset)
            .collect();
        if !self.read_only {
            for parsed in &files {
                let orphan = parsed.kind.suffix.is_none()
                    && parsed.kind.file_type.is_index()
                    && !logs.contains(&parsed.base_offset);
                if orphan {
                    self.remove(&file_path(self.dir, parsed.base_offset, parsed.kind))?;
                }
            }
        }
        drop(files);
        // Recovery covers the segment holding the recovery point and everything after it.
        let recover_from = logs
            .range(..=state.recovery_point)
            .next_back()
            .copied()
            .unwrap_or(i64::MIN);
        // In base order: collected, then built in one pass (full B-tree nodes; inserted one
        // by one they are left about half full, issue 28).
        let mut segments = Vec::new();
        let mut dropped = Vec::new();
        let mut truncated = false;
        let mut unlinked = false;
        let mut pending: VecDeque<i64> = logs.into_iter().collect();
        let mut split_bases = BTreeSet::new();
        while let Some(base) = pending.pop_front() {
            if truncated {
                // Not opened at all: a later segment after a truncation (or an overlap)
                // is garbage. Unlinked now, and the directory fsynced below before anything
                // is appended at its offsets: renamed `.deleted` without that fsync, a power
                // loss could bring it back over newer acknowledged records.
                self.report.deleted_segments.push(base);
                if !self.read_only {
                    let removed = unlink_files(self.dir, base)?;
                    unlinked |= !removed.is_empty();
                    self.report.removed_files.extend(removed);
                }
                continue;
            }
            let recover = !state.had_clean_shutdown && base >= recover_from;
            let next_base = pending.front().copied();
            let Some((segment, load)) = self.open_segment(base, recover, next_base)? else {
                // Overflowed: split it and open its replacements in its place.
                if split_bases.contains(&base) {
                    return Err(Error::UnsplittableSegment {
                        path: file_path(self.dir, base, FileKind::LOG),
                        reason: "a segment made by the split still overflows",
                    });
                }
                let plan = SplitPlan::new(self.dir, base, &self.config.io)?;
                dropped.push(plan.execute()?);
                let new_base_offsets = plan.new_base_offsets();
                for &new_base in new_base_offsets.iter().rev() {
                    pending.push_front(new_base);
                }
                split_bases.extend(new_base_offsets.iter().copied());
                self.report.splits.push(SegmentSplit {
                    base_offset: base,
                    new_base_offsets,
                });
                continue;
            };
            // Kafka deletes every segment after a cut. That is right for the unflushed tail
            // a crash tore (at or above the recovery point), and wrong for flushed data: a cut
            // below it was damage to data that was intact when flushed (its bytes were kept
            // on disk, or were zeros), and the later segments are intact too. They are kept;
            // the log has a gap there (`LoadReport::damaged_tails`).
            let protect_below = self.protect_below;
            truncated = load
                .recovery
                .as_ref()
                .is_some_and(|r| r.truncated_bytes > 0 && r.next_offset >= protect_below);
            if let (Some(recovery), Some(next_base)) = (&load.recovery, next_base)
                && !truncated
            {
                let found = Discontinuity {
                    base_offset: base,
                    next_offset: recovery.next_offset,
                    next_base_offset: next_base,
                };
                // Overlaps are never served: every later segment goes. Gaps are kept (Kafka's
                // `LogLoader` keeps them; after cleaning and on followers of compacted topics
                // they are normal) and reported, unless the log is to stay contiguous and the
                // gap lies where the crash could have made it.
                let gap_after_loss = self.gap_rule_from.is_some_and(|point| {
                    found.next_offset < next_base && found.next_offset >= point
                });
                if found.is_overlap() || gap_after_loss {
                    self.report.discontinuity = Some(found);
                    truncated = true;
                } else if found.next_offset < next_base {
                    self.report.gaps.push(found);
                }
            }
            self.report.segments.push(load);
            segments.push((base, segment));
        }
        // The drops are durable before anything is appended at their offsets (a power loss
        // must not bring the old segments back over newer acknowledged records).
        if (unlinked || !dropped.is_empty()) && !self.read_only {
            sync_dir(&self.config.io, self.dir)?;
        }
        Ok((SegmentMap::from_sorted(segments), dropped))
    }

    /// A segment error as the load returns it. A read-only load cannot split an overflowed
    /// segment, but it plans the split (reading headers only), so a segment no split can fix
    /// fails a read-only load as it would fail a read-write one
    /// ([`Error::UnsplittableSegment`]): a check before a repair then finds it.
    fn read_only_overflow(&self, base: i64, e: seglog_segment::Error) -> Error {
        if self.read_only
            && matches!(e, seglog_segment::Error::OffsetOverflow { .. })
            && let Err(unsplittable) = SplitPlan::new(self.dir, base, &self.config.io)
        {
            return unsplittable;
        }
        e.into()
    }

    /// Opens segment `base`, recovering it when asked (after the index checks, so the report
    /// names an index problem). `None` when its offsets overflow its base and it must be
    /// split (read-write only: read-only returns the overflow error).
    fn open_segment(
        &mut self,
        base: i64,
        recover: bool,
        next_base: Option<i64>,
    ) -> Result<Option<(Arc<Segment>, SegmentLoad)>> {
        let digest_entries = self.digest_per_segment.min(self.digest_budget);
        let options = SegmentOpenOptions {
            mode: self.mode(),
            suffix: self.suffix_of(base),
            // The last segment (no next base) always gets the full check.
            trust_clean_shutdown: self.trust_clean_shutdown && !recover && next_base.is_some(),
            protect_below: self.protect_below,
            digest_entries,
            listed: self.listed.get(&base).copied(),
            ..SegmentOpenOptions::default()
        };
        // A sealed segment whose offsets provably fit (the next base is in range) is opened on
        // first use after a clean shutdown, when the caller trusts it.
        let fits = |next: i64| relative_offset(base, next.saturating_sub(1)).is_some();
        if self.defer_sealed && !recover && next_base.is_some_and(fits) {
            let path = file_path(self.dir, base, FileKind::LOG.with_suffix(options.suffix));
            let size = fs::metadata(&path)
                .map_err(|e| Error::io("stat segment", &path, e))?
                .len();
            // Its first use keeps nothing for the epoch and producer loads, long done then.
            // The listing is kept for it too: the directory lock keeps other writers out,
            // and a rename of the files (a temporary suffix) makes the open look again.
            let options = SegmentOpenOptions {
                digest_entries: 0,
                ..options
            };
            let segment = Segment::deferred(&self.shared.0, base, &self.shared.1, options, size);
            let load = SegmentLoad {
                base_offset: base,
                rebuilt: None,
                recovery: None,
            };
            return Ok(Some((segment, load)));
        }
        let overflow = |e: &seglog_segment::Error| {
            !self.read_only && matches!(e, seglog_segment::Error::OffsetOverflow { .. })
        };
        let (segment, report) = match Segment::open(self.dir, base, self.config, options) {
            Ok(opened) => opened,
            Err(e) if overflow(&e) => return Ok(None),
            Err(e) => return Err(self.read_only_overflow(base, e)),
        };
        let mut load = SegmentLoad {
            base_offset: base,
            rebuilt: report.rebuilt,
            recovery: report.recovery.map(Box::new),
        };
        if recover && load.recovery.is_none() {
            match segment.recover_with_digest(self.protect_below, digest_entries) {
                Ok(recovery) => load.recovery = Some(Box::new(recovery)),
                Err(e) if overflow(&e) => return Ok(None),
                Err(e) => return Err(self.read_only_overflow(base, e)),
            }
            load.rebuilt = Some(RebuildReason::Requested);
        }
        // A recovery checked every batch's offsets; otherwise check the last one, unless the
        // next segment's base proves that every offset fits (Kafka's `hasOverflow`).
        let unchecked = !self.read_only
            && load.recovery.is_none()
            && next_base.is_none_or(|next| relative_offset(base, next.saturating_sub(1)).is_none());
        if let Some(recovery) = &mut load.recovery {
            self.next_offsets.insert(base, recovery.next_offset);
            // Taken out: the report lives as long as the log, the digest only for the load.
            if let Some(digest) = recovery.digest.take() {
                self.digest_budget = self.digest_budget.saturating_sub(digest.entries());
                self.digests.insert(base, digest);
            }
        }
        if unchecked {
            let next_offset = self.next_offset(base, &segment)?;
            if next_offset > base && relative_offset(base, next_offset - 1).is_none() {
                return Ok(None);
            }
        }
        Ok(Some((segment, load)))
    }
}

/// The sort key of a listed file: the order of its name's bytes. The names are canonical (20
/// digits, so the base offsets order as their digits do), and no extension is a prefix of
/// another, so the extension, then the temporary suffix (none first), order the rest.
fn name_order(parsed: &ParsedFileName) -> (i64, &'static str, &'static str) {
    (
        parsed.base_offset,
        parsed.kind.file_type.extension(),
        parsed.kind.suffix.map_or("", TempSuffix::as_str),
    )
}

#[cfg(test)]
mod size_tests {
    /// The load report keeps one entry per segment for the log's lifetime, unopened ones
    /// included (issue 28: the memory per unopened segment). 224 bytes with the recovery
    /// report inline.
    #[test]
    fn a_segment_load_entry_stays_small() {
        let size = std::mem::size_of::<super::SegmentLoad>();
        eprintln!("SegmentLoad: {size} bytes");
        assert!(size <= 40, "SegmentLoad is {size} bytes");
    }
}
