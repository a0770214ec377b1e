//! The loader's rule for the temporary files an interrupted swap or deletion leaves:
//! `*.cleaned`, `*.swap` and `*.deleted` (Kafka's `LogLoader.removeTempFilesAndCollectSwapFiles`
//! and the swap completion after it, with seglog's repair policy: a leftover never destroys
//! intact data).
//!
//! The decision is a [`Plan`], made from the directory listing alone (reading files, never
//! changing them), so a read-only open resolves a crash state exactly as a read-write open
//! would ([`Plan::segments`]) and a read-write open applies it ([`Plan::apply`]):
//!
//! 1. **`.cleaned`** files are removed, and so are `.swap` files at or above the lowest
//!    `.cleaned` base (an unfinished swap whose old segments are all intact: Kafka's rule).
//! 2. **`.swap`** segments (the `.log.swap` files) are installed together, replacing every
//!    segment whose base lies in `[lowest swap base, highest swap next offset)`, only when they
//!    are valid: every batch whole with a good CRC; no two overlapping; not overlapping the
//!    segment before them; each record at an offset the replaced data also holds, equal to it
//!    (same key and value); and holding every record the replaced data cannot lose — for each
//!    key the latest record among the replaced segments and every later one (when that latest
//!    record lies in the replaced range), every record without a key and every control record.
//!    That is what the cleaner keeps of a group (it drops only records whose key has a later
//!    record, and tombstones, markers and aborted data at their horizon: a swap that dropped
//!    those is refused, which only undoes that round's swap). The replaced data is the live
//!    segments in the range and the `.deleted` ones an interrupted swap already renamed.
//!    Otherwise every `.swap` file is set aside as `<name>.rejected` (bytes unchanged) and the
//!    live segments stay, with the `.deleted` segments of the range renamed back.
//!    A swapped index file without its `.log.swap` (a crash between the renames of step 3) takes
//!    its final name when the `.log` is live and that index is missing, else it is set aside.
//! 3. **`.deleted`** segments are removed (Kafka's rule) when a remaining segment has their base,
//!    or the one before them covers it, or nothing lies after them (a truncated tail), or nothing
//!    before (retention), or every record they hold is superseded or purged (a group's old segment
//!    past its cleaned segment's next offset: its records have later ones, or are tombstones and
//!    markers whose batch's delete horizon passed by the load's clock, which a purge round drops; a
//!    later segment supersedes with its records before its first damage, so a crash's torn
//!    active segment never keeps a round's old segment). Otherwise — a segment between two others whose
//!    offsets no other segment serves, holding a record the log would lose — they are renamed
//!    back (`LoadReport::restored_files`): the log would have a hole there.
//!
//! [`decide_leftovers`] makes the same decision over files held in memory.
//!
//! Applying: rejected files are set aside, replaced live files renamed `.deleted` (so a crash
//! now leaves a state this rule resolves the same way), the directory fsynced, the swaps renamed
//! to their final names, fsynced, then the `.deleted` files restored or removed, fsynced.

mod decision;
mod records;
mod reload;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use seglog_segment::{FileKind, FileType, ParsedFileName, SegmentConfig, TempSuffix, file_path};

pub use decision::{LeftoverDecision, decide_leftovers};
use records::{Disk, FileBatches, Files, Rec, Records};
pub(crate) use reload::consistent_read_only;

use crate::fsutil::{remove_if_exists, sync_dir};
use crate::{Error, Result};

/// A `.swap` set the loader refused, and why ([`crate::LoadReport::rejected_swaps`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedSwap {
    /// The `.swap` file.
    pub path: PathBuf,
    /// Where it was set aside (`<name>.rejected`); `None` in a read-only open, which only
    /// ignores it.
    pub set_aside_as: Option<PathBuf>,
    /// Why the set it belongs to was refused.
    pub problem: SwapProblem,
}

/// Why a `.swap` set was refused. Offsets and positions name the first fault found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SwapProblem {
    /// The `.log.swap` cannot be read as whole, valid batches from this byte on.
    Damaged {
        /// The `.log.swap` file.
        path: PathBuf,
        /// Byte position of the bad batch (or of the torn tail).
        position: u64,
        /// What is wrong.
        detail: String,
    },
    /// Two swaps cover the same offsets.
    Overlapping {
        /// The first swap's base offset.
        base_offset: i64,
        /// The second swap's base offset, below the first one's next offset.
        other_base_offset: i64,
    },
    /// The segment before the swaps holds offsets at or past their base.
    OverlapsSegment {
        /// That segment's base offset.
        base_offset: i64,
        /// Its next offset.
        next_offset: i64,
    },
    /// The swap holds a record the replaced segments do not hold (or not with these bytes).
    UnknownRecord {
        /// The record's offset.
        offset: i64,
    },
    /// The swap lacks a record the replaced segments hold and nothing later supersedes.
    MissingRecord {
        /// The record's offset.
        offset: i64,
    },
    /// The swaps hold no record and replace no segment (none live or `.deleted` in their
    /// range): installing them would only move offsets, e.g. the log end past a swap beyond it.
    ReplacesNothing,
    /// A swapped index file without its `.log.swap`, beside no segment or a segment that has
    /// that index already (a crash between a swap's renames leaves one only beside a `.log`
    /// without it).
    StrayIndex,
    /// A file the decision needs could not be read.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The error.
        detail: String,
    },
}

impl fmt::Display for SwapProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Damaged {
                path,
                position,
                detail,
            } => write!(
                f,
                "{} is damaged at byte {position}: {detail}",
                path.display()
            ),
            Self::Overlapping {
                base_offset,
                other_base_offset,
            } => write!(
                f,
                "the swap at {base_offset} overlaps the swap at {other_base_offset}"
            ),
            Self::OverlapsSegment {
                base_offset,
                next_offset,
            } => write!(
                f,
                "segment {base_offset} (next offset {next_offset}) already holds offsets the swap starts at"
            ),
            Self::UnknownRecord { offset } => write!(
                f,
                "offset {offset} is no record of the segments it would replace"
            ),
            Self::MissingRecord { offset } => write!(
                f,
                "it lacks offset {offset}, a record of the segments it would replace that nothing later supersedes"
            ),
            Self::ReplacesNothing => write!(f, "the swaps hold no record and replace no segment"),
            Self::StrayIndex => write!(
                f,
                "a swapped index without its .log.swap, beside no segment or one that has this index"
            ),
            Self::Unreadable { path, detail } => {
                write!(f, "{} cannot be read: {detail}", path.display())
            }
        }
    }
}

/// What the loader does with the temporary files (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// `.cleaned` files and the swaps above them: removed first.
    rollback: Vec<PathBuf>,
    /// Refused `.swap` files, with the name they are set aside under.
    set_aside: Vec<(PathBuf, PathBuf)>,
    /// Live files the installed swaps replace, renamed `.deleted` (removed at the end).
    displaced: Vec<(PathBuf, PathBuf)>,
    /// `.swap` files to rename to their final names.
    install: Vec<(PathBuf, PathBuf)>,
    /// `.deleted` files renamed back.
    restore: Vec<(PathBuf, PathBuf)>,
    /// `.deleted` files removed.
    expire: Vec<PathBuf>,
    /// The refused swaps, for the report.
    pub(crate) rejected: Vec<RejectedSwap>,
    /// The segments once the plan is applied: base offset → the suffix their `.log` carries
    /// now (`None` for a live one, `.swap` for an installed swap, `.deleted` for a restored
    /// segment). A read-only load opens these instead of the live `.log` files.
    pub(crate) segments: BTreeMap<i64, Option<TempSuffix>>,
}

impl Plan {
    /// Decides what to do with the temporary files among `files` (the parsed segment files of
    /// `dir`, as the loader lists them) at `now_ms` (for the delete horizons of tombstones and
    /// markers). Reads files, changes nothing.
    ///
    /// # Errors
    /// None so far for unreadable candidates (a swap that cannot be read is refused); I/O
    /// errors of the segments that must stay are left to their own open.
    pub(crate) fn new(
        dir: &Path,
        files: &[(PathBuf, ParsedFileName)],
        now_ms: i64,
    ) -> Result<Plan> {
        Ok(Self::decide(dir, files, now_ms, &Disk))
    }

    /// [`Plan::new`] over the files of `source` (the directory, or bytes in memory).
    fn decide(
        dir: &Path,
        files: &[(PathBuf, ParsedFileName)],
        now_ms: i64,
        source: &dyn Files,
    ) -> Plan {
        let mut plan = Plan::default();
        let reader = Reader {
            dir,
            files: source,
            now_ms,
        };
        let of = |suffix: Option<TempSuffix>| {
            files
                .iter()
                .filter(move |(_, p)| p.kind.suffix == suffix)
                .map(|(path, p)| (path, *p))
        };
        let min_cleaned = of(Some(TempSuffix::Cleaned))
            .map(|(_, p)| p.base_offset)
            .min()
            .unwrap_or(i64::MAX);
        plan.rollback
            .extend(of(Some(TempSuffix::Cleaned)).map(|(path, _)| path.clone()));
        let mut swaps = Vec::new();
        for (path, parsed) in of(Some(TempSuffix::Swap)) {
            if parsed.base_offset >= min_cleaned {
                plan.rollback.push(path.clone());
            } else {
                swaps.push((path.clone(), parsed));
            }
        }
        let live: BTreeSet<i64> = of(None)
            .filter(|(_, p)| p.kind.file_type == FileType::Log)
            .map(|(_, p)| p.base_offset)
            .collect();
        let deleted: BTreeSet<i64> = of(Some(TempSuffix::Deleted))
            .filter(|(_, p)| p.kind.file_type == FileType::Log)
            .map(|(_, p)| p.base_offset)
            .collect();
        let swap_logs: Vec<i64> = swaps
            .iter()
            .filter(|(_, p)| p.kind.file_type == FileType::Log)
            .map(|(_, p)| p.base_offset)
            .collect();
        let mut segments: BTreeMap<i64, Option<TempSuffix>> =
            live.iter().map(|b| (*b, None)).collect();
        // The replaced range of the swaps when they are installed, or `None` when refused.
        let mut installed = None;
        let mut refused_range = None;
        if !swap_logs.is_empty() {
            match reader.check_swaps(&swap_logs, &live, &deleted) {
                Ok((lo, hi)) => {
                    installed = Some((lo, hi));
                    for base in live.range(lo..hi) {
                        segments.remove(base);
                    }
                    for base in &swap_logs {
                        segments.insert(*base, Some(TempSuffix::Swap));
                    }
                }
                Err((problem, range)) => {
                    refused_range = range;
                    let with_logs = swaps
                        .iter()
                        .filter(|(_, p)| swap_logs.contains(&p.base_offset));
                    for (path, _) in with_logs {
                        plan.rejected.push(RejectedSwap {
                            path: path.clone(),
                            set_aside_as: Some(rejected_name(path)),
                            problem: problem.clone(),
                        });
                    }
                }
            }
        }
        for (path, parsed) in &swaps {
            let target = file_path(dir, parsed.base_offset, parsed.kind.with_suffix(None));
            let with_log = swap_logs.contains(&parsed.base_offset);
            let accepted = if with_log {
                installed.is_some()
            } else {
                // An index whose `.log` already took its final name: it completes that rename
                // when the live `.log` has no such index yet.
                live.contains(&parsed.base_offset)
                    && installed.is_none_or(|(lo, hi)| !(lo..hi).contains(&parsed.base_offset))
                    && !source.exists(&target)
            };
            if accepted {
                plan.install.push((path.clone(), target));
            } else {
                plan.set_aside.push((path.clone(), rejected_name(path)));
                if !with_log {
                    plan.rejected.push(RejectedSwap {
                        path: path.clone(),
                        set_aside_as: Some(rejected_name(path)),
                        problem: SwapProblem::StrayIndex,
                    });
                }
            }
        }
        if let Some((lo, hi)) = installed {
            for (path, parsed) in of(None) {
                if (lo..hi).contains(&parsed.base_offset) {
                    let to = file_path(
                        dir,
                        parsed.base_offset,
                        parsed.kind.with_suffix(Some(TempSuffix::Deleted)),
                    );
                    plan.displaced.push((path.clone(), to.clone()));
                    plan.expire.push(to);
                }
            }
        }
        // Each file once (a displaced live file's `.deleted` name may exist already), in
        // time linear in the files: a directory may hold many `.deleted` segments.
        let mut expiring: HashSet<PathBuf> = plan.expire.iter().cloned().collect();
        let mut deleted_files: BTreeMap<i64, Vec<(&PathBuf, ParsedFileName)>> = BTreeMap::new();
        for (path, parsed) in of(Some(TempSuffix::Deleted)) {
            deleted_files
                .entry(parsed.base_offset)
                .or_default()
                .push((path, parsed));
        }
        // `.deleted` segments, oldest first, against the segments that stay.
        for base in &deleted {
            let restore =
                reader.restore_deleted(*base, &segments, &deleted, installed, refused_range);
            if restore {
                segments.insert(*base, Some(TempSuffix::Deleted));
            }
            for (path, parsed) in deleted_files.get(base).into_iter().flatten() {
                let target = file_path(dir, *base, parsed.kind.with_suffix(None));
                if restore && !source.exists(&target) {
                    plan.restore.push(((*path).clone(), target));
                } else if expiring.insert((*path).clone()) {
                    plan.expire.push((*path).clone());
                }
            }
        }
        // Index `.deleted` files without a `.log.deleted` (a crash in the middle of renaming a
        // segment to `.deleted`): derived data, removed as Kafka does.
        for (base, files) in &deleted_files {
            if deleted.contains(base) {
                continue;
            }
            for (path, _) in files {
                if expiring.insert((*path).clone()) {
                    plan.expire.push((*path).clone());
                }
            }
        }
        plan.segments = segments;
        plan
    }

    /// Whether the plan changes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.rollback.is_empty()
            && self.set_aside.is_empty()
            && self.displaced.is_empty()
            && self.install.is_empty()
            && self.restore.is_empty()
            && self.expire.is_empty()
    }

    /// Applies the plan on disk (see the module docs for the order). Fills `report`.
    ///
    /// # Errors
    /// I/O errors of a rename, an unlink or a directory fsync (the next load resolves the
    /// state left, by the same rule).
    pub(crate) fn apply(
        self,
        dir: &Path,
        config: &SegmentConfig,
        report: &mut Applied,
    ) -> Result<()> {
        if self.is_empty() {
            report.rejected = self.rejected;
            return Ok(());
        }
        let rename = |from: &Path, to: &Path, what: &'static str| {
            std::fs::rename(from, to).map_err(|e| Error::io(what, from, e))
        };
        for path in &self.rollback {
            if remove_if_exists(path)? {
                report.removed.push(path.clone());
            }
        }
        for (from, to) in &self.set_aside {
            rename(from, to, "set aside swap file")?;
        }
        for (from, to) in &self.displaced {
            rename(from, to, "rename replaced segment file")?;
        }
        sync_dir(&config.io, dir)?;
        for (from, to) in &self.install {
            rename(from, to, "rename swap file")?;
            report.completed_swaps.push(to.clone());
        }
        if !self.install.is_empty() {
            sync_dir(&config.io, dir)?;
        }
        for (from, to) in &self.restore {
            rename(from, to, "restore deleted segment file")?;
            report.restored.push(to.clone());
        }
        for path in &self.expire {
            if remove_if_exists(path)? {
                // A replaced live file is reported under its live name.
                let live = self.displaced.iter().find(|(_, to)| to == path);
                report
                    .removed
                    .push(live.map_or(path, |(from, _)| from).clone());
            }
        }
        sync_dir(&config.io, dir)?;
        report.rejected = self.rejected;
        Ok(())
    }
}

/// What [`Plan::apply`] did, for the load report.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) removed: Vec<PathBuf>,
    pub(crate) completed_swaps: Vec<PathBuf>,
    pub(crate) restored: Vec<PathBuf>,
    pub(crate) rejected: Vec<RejectedSwap>,
}

/// `<name>.rejected`, a name no loader takes for a segment file.
fn rejected_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".rejected");
    PathBuf::from(name)
}

/// Reads segment files (by path, never through [`Segment`]: an overflowed segment, which a
/// split replaces, does not open as one).
struct Reader<'a> {
    dir: &'a Path,
    files: &'a dyn Files,
    /// The load's clock: delete horizons at or below it have passed.
    now_ms: i64,
}

impl Reader<'_> {
    fn path(&self, base: i64, suffix: Option<TempSuffix>) -> PathBuf {
        file_path(self.dir, base, FileKind::LOG.with_suffix(suffix))
    }

    fn next_offset(
        &self,
        base: i64,
        suffix: Option<TempSuffix>,
    ) -> std::result::Result<i64, SwapProblem> {
        Ok(FileBatches::open(self.files, self.path(base, suffix))?.next_offset(base))
    }

    /// The checks of a `.swap` set (module docs, step 2). `Ok` with the replaced range; `Err`
    /// with the problem and, when known, the range the swaps would have replaced.
    #[allow(clippy::type_complexity)]
    fn check_swaps(
        &self,
        swap_logs: &[i64],
        live: &BTreeSet<i64>,
        deleted: &BTreeSet<i64>,
    ) -> std::result::Result<(i64, i64), (SwapProblem, Option<(i64, i64)>)> {
        let mut swaps = Vec::new();
        let mut ranges = Vec::new();
        for base in swap_logs {
            // An empty swap (a group that kept nothing) still replaces the segment at its base.
            let next = self
                .next_offset(*base, Some(TempSuffix::Swap))
                .map_err(|p| (p, None))?
                .max(base.saturating_add(1));
            ranges.push((*base, next));
            swaps.push(self.path(*base, Some(TempSuffix::Swap)));
        }
        for pair in ranges.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err((
                    SwapProblem::Overlapping {
                        base_offset: pair[0].0,
                        other_base_offset: pair[1].0,
                    },
                    None,
                ));
            }
        }
        let lo = ranges[0].0;
        let hi = ranges.iter().map(|r| r.1).max().unwrap_or(lo);
        let range = Some((lo, hi));
        let fail = |p| (p, range);
        if let Some(prev) = live.range(..lo).next_back() {
            let next = self.next_offset(*prev, None).map_err(fail)?;
            if next > lo {
                return Err(fail(SwapProblem::OverlapsSegment {
                    base_offset: *prev,
                    next_offset: next,
                }));
            }
        }
        // The replaced data: the live segments of the range, and the `.deleted` ones of the
        // range (or reaching into it) whose live file is gone: an interrupted swap renamed
        // them already.
        let mut sources: BTreeMap<i64, Option<TempSuffix>> = BTreeMap::new();
        for base in deleted.range(..hi) {
            if live.contains(base) && *base >= lo {
                continue;
            }
            if *base < lo
                && self
                    .next_offset(*base, Some(TempSuffix::Deleted))
                    .map_err(fail)?
                    <= lo
            {
                continue;
            }
            sources.insert(*base, Some(TempSuffix::Deleted));
        }
        for base in live.range(lo..hi) {
            sources.insert(*base, None);
        }
        let replaced: Vec<PathBuf> = sources.iter().map(|(b, s)| self.path(*b, *s)).collect();
        let later: Vec<PathBuf> = live.range(hi..).map(|b| self.path(*b, None)).collect();
        let latest = latest_offsets(self.files, &replaced, lo, &later).map_err(fail)?;
        let mut old = Records::new(self.files, replaced, lo);
        let mut new = Records::new(self.files, swaps, i64::MIN);
        let mut next_new = new.next().map_err(fail)?;
        // Refusing an empty swap loses no record; installing one that replaces nothing (no
        // cleaner writes one) would move offsets, e.g. the log end past a swap beyond it.
        if sources.is_empty() && next_new.is_none() {
            return Err(fail(SwapProblem::ReplacesNothing));
        }
        while let Some(rec) = old.next().map_err(fail)? {
            if let Some(n) = next_new.filter(|n| n.offset < rec.offset) {
                return Err(fail(SwapProblem::UnknownRecord { offset: n.offset }));
            }
            match next_new {
                Some(n) if n.offset == rec.offset => {
                    if !n.same_as(&rec) {
                        return Err(fail(SwapProblem::UnknownRecord { offset: n.offset }));
                    }
                    next_new = new.next().map_err(fail)?;
                }
                _ => {
                    if is_required(&rec, &latest, self.now_ms) {
                        return Err(fail(SwapProblem::MissingRecord { offset: rec.offset }));
                    }
                }
            }
        }
        if let Some(n) = next_new {
            return Err(fail(SwapProblem::UnknownRecord { offset: n.offset }));
        }
        Ok((lo, hi))
    }

    /// Whether the `.deleted` segment `base` is renamed back (module docs, step 3), given the
    /// segments that stay.
    fn restore_deleted(
        &self,
        base: i64,
        segments: &BTreeMap<i64, Option<TempSuffix>>,
        deleted: &BTreeSet<i64>,
        installed: Option<(i64, i64)>,
        refused: Option<(i64, i64)>,
    ) -> bool {
        if segments.contains_key(&base)
            || installed.is_some_and(|(lo, hi)| (lo..hi).contains(&base))
        {
            return false;
        }
        if segments.range(base..).next().is_none() {
            return false; // a truncated tail
        }
        let segment = self.path(base, Some(TempSuffix::Deleted));
        if refused.is_some_and(|(lo, hi)| (lo..hi).contains(&base)) {
            // An old segment of a refused swap: the swap is undone.
            return true;
        }
        let Some((&before, &suffix)) = segments.range(..base).next_back() else {
            return false; // below the first segment: retention
        };
        let covered = self
            .next_offset(before, suffix)
            .is_ok_and(|next| next > base);
        if covered {
            return false;
        }
        // It fills the hole only if its batches lie in it: one at or past the next segment's
        // base (a copy of later data under this name) would overlap the log, and a load
        // drops every segment after an overlap.
        let next_base = segments.range(base..).next().map_or(i64::MAX, |(b, _)| *b);
        if self
            .next_offset(base, Some(TempSuffix::Deleted))
            .is_ok_and(|next| next > next_base)
        {
            return false;
        }
        // What supersedes its records: the live segments after it, and the other `.deleted`
        // segments after it up to the last live one (the old segments of the same cleaning
        // round: a record the round dropped for a later tombstone that a purge then removed
        // has that tombstone only there). A `.deleted` segment past the last live one is a
        // truncated tail, whose records were never kept.
        let last_live = segments.keys().next_back().copied().unwrap_or(i64::MIN);
        let later: Vec<PathBuf> = segments
            .range(base..)
            .map(|(b, s)| self.path(*b, *s))
            .collect();
        let Ok(mut latest) =
            latest_offsets(self.files, std::slice::from_ref(&segment), base, &later)
        else {
            return true;
        };
        // Read apart: their offsets overlap the live segments'.
        for other in deleted.range(base + 1..last_live) {
            let path = self.path(*other, Some(TempSuffix::Deleted));
            if raise_latest(self.files, &mut latest, vec![path]).is_err() {
                return true;
            }
        }
        let mut records = Records::new(self.files, vec![segment], base);
        let mut required = false;
        loop {
            match records.next() {
                Ok(Some(rec)) if rec.offset >= next_base => return false,
                Ok(Some(rec)) => required |= is_required(&rec, &latest, self.now_ms),
                Ok(None) => return required,
                // Damaged: kept rather than lost (its own open reports the damage).
                Err(_) => return true,
            }
        }
    }
}

/// For every key of `replaced` (from `from` on), its latest offset there and in `later`.
///
/// Each file of `later` is read up to its first damage only (a torn tail, a bad batch): the
/// records before it count, the rest of that file supersedes nothing, since a load does not
/// serve it. A crash tears the active segment's unflushed tail, and that must not make the
/// whole check fail (which keeps what it checks: seeds 206603 and 207270 of the second long
/// run renamed a cleaning round's old segment back after a crash that tore the active
/// segment). The records a round drops are superseded below its first uncleanable offset,
/// in segments flushed before the round, so the damage of a torn tail never hides them.
fn latest_offsets(
    files: &dyn Files,
    replaced: &[PathBuf],
    from: i64,
    later: &[PathBuf],
) -> std::result::Result<HashMap<[u64; 2], i64>, SwapProblem> {
    let mut latest = HashMap::new();
    let mut records = Records::new(files, replaced.to_vec(), from);
    while let Some(rec) = records.next()? {
        if let Some(key) = rec.key {
            latest.insert(key, rec.offset);
        }
    }
    for path in later {
        let mut records = Records::new(files, vec![path.clone()], i64::MIN);
        while let Ok(Some(rec)) = records.next() {
            if let Some(key) = rec.key
                && let Some(offset) = latest.get_mut(&key)
            {
                *offset = (*offset).max(rec.offset);
            }
        }
    }
    Ok(latest)
}

/// Raises `latest` (keys already in it) to the offsets of the records of `paths`.
fn raise_latest(
    files: &dyn Files,
    latest: &mut HashMap<[u64; 2], i64>,
    paths: Vec<PathBuf>,
) -> std::result::Result<(), SwapProblem> {
    let mut records = Records::new(files, paths, i64::MIN);
    while let Some(rec) = records.next()? {
        if let Some(key) = rec.key
            && let Some(offset) = latest.get_mut(&key)
        {
            *offset = (*offset).max(rec.offset);
        }
    }
    Ok(())
}

/// Whether a record of the replaced data must survive: a control record, a record without a
/// key, or its key's latest; but not a tombstone or marker whose batch's delete horizon passed
/// by `now_ms` (a cleaner round purges those: the `.deleted` old segments of a finished purge
/// round hold them, and renaming those back would serve purged tombstones and the records a
/// later round superseded next to them).
fn is_required(rec: &Rec, latest: &HashMap<[u64; 2], i64>, now_ms: i64) -> bool {
    let purged = (rec.control || rec.tombstone)
        && rec
            .delete_horizon_ms
            .is_some_and(|horizon| horizon <= now_ms);
    !purged
        && (rec.control
            || match rec.key {
                None => true,
                Some(key) => latest.get(&key) == Some(&rec.offset),
            })
}

#[cfg(test)]
mod tests;
