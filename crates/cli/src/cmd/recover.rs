//! `seglog recover DIR`: treat the log as after a crash, recover every segment, close cleanly.
//!
//! One open with `seglog::LogOpenOptions::recover_all`, inside the directory lock: the loader
//! finishes or removes interrupted deletes, cleans and swaps (and splits a segment whose
//! offsets overflow its base), checks each segment's indexes and then recovers **every**
//! segment whatever the shutdown state: validate every batch, cut a torn or corrupt tail,
//! rebuild both indexes. Data that was flushed (everything after a clean shutdown, else below
//! the checkpointed recovery point) is never cut: a segment damaged there keeps its bytes,
//! later segments are kept, and the run exits 1 naming the damage; `--truncate-damaged` cuts
//! it as Kafka's loader does (the segment from the bad batch on, and every later segment).
//! An unflushed tail a crash tore is always cut, with every segment after it. The close then
//! writes the checkpoints and the clean-shutdown marker for what is left. The leader-epoch
//! checkpoint is brought up to date as Kafka's recovery does (the epochs of every recovered
//! batch newer than the file's latest, then truncated to the log end and from the log start),
//! and rebuilt from the batches when it is missing or does not parse. The per-segment report comes from `Log::load_report`. There is no
//! progress bar for one partition: the whole recovery is that one load. A `log.dirs` root is
//! recovered partition by partition in parallel, with a bar (`recover_root.rs`).

use std::path::{Path, PathBuf};

use seglog::{
    LeaderEpochSource, Log, LogConfig, LogOpenOptions, RebuildReason, SegmentLoad, SegmentSplit,
    TruncationReason,
};
use seglog_segment::CorruptKind;
use serde::Serialize;

use crate::Outcome;
use crate::cli::RecoverArgs;
use crate::dir::DirListing;
use crate::error::Error;
use crate::log_stream::{MAX_SNAPSHOT_BYTES, read_bounded};
use crate::output::{Out, emit_report};

/// What `recover` did to one segment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SegmentRecovery {
    /// The segment's base offset.
    pub base_offset: i64,
    /// Valid batches kept.
    pub batches: u64,
    /// Bytes kept.
    pub valid_bytes: u64,
    /// Bytes cut from the end of the `.log`.
    pub truncated_bytes: u64,
    /// Byte position where the cut was made, when bytes were cut.
    pub truncated_at: Option<u64>,
    /// Why bytes were cut: `torn_tail` or `corrupt`.
    pub truncation: Option<&'static str>,
    /// What was corrupt, when `truncation` is `corrupt`.
    pub corruption: Option<String>,
    /// What was wrong with the indexes before they were rebuilt (missing, zero-padded,
    /// inconsistent), if anything.
    pub index_problem: Option<String>,
    /// Entries in the rebuilt offset index.
    pub index_entries: usize,
    /// Entries in the rebuilt time index.
    pub time_index_entries: usize,
    /// The offset after the segment's last valid batch.
    pub next_offset: i64,
    /// Whether the bytes past `valid_bytes` hold flushed data and were kept on disk (not
    /// served; `truncated_bytes` then counts them but nothing was cut).
    pub damaged_tail_kept: bool,
}

/// A segment whose offsets overflowed its base offset, split into new segments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SplitLine {
    /// The overflowed segment's base offset.
    pub base_offset: i64,
    /// The base offsets of the segments that replaced it.
    pub new_base_offsets: Vec<i64>,
}

/// A recovered segment that ends below the next segment's base (`recover --json`): a gap in
/// the offsets, kept and read across (normal after compaction), as Kafka's `LogLoader` keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GapLine {
    /// The recovered segment's base offset.
    pub base_offset: i64,
    /// The offset after its last batch.
    pub next_offset: i64,
    /// The base offset of the segment after it.
    pub next_base_offset: i64,
}

/// A checkpoint file the open could not use (read as empty, as Kafka does).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckpointLine {
    /// The checkpoint file.
    pub file: PathBuf,
    /// 1-based number of the offending line; `null` when the file could not be read.
    pub line: Option<u64>,
    /// What was wrong with it.
    pub problem: String,
}

/// A refused `.swap` file (`recover --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedSwapLine {
    /// The `.swap` file.
    pub file: PathBuf,
    /// Where it was set aside (bytes unchanged).
    pub set_aside_as: Option<PathBuf>,
    /// Why it was refused.
    pub problem: String,
}

/// The `recover --json` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoverReport {
    /// The directory.
    pub dir: PathBuf,
    /// Whether the directory had been shut down cleanly before this run.
    pub was_clean: bool,
    /// Every remaining segment, oldest first.
    pub segments: Vec<SegmentRecovery>,
    /// Segments deleted because an earlier segment's tail was cut (Kafka's rule), or because
    /// the log ended below its checkpointed log start offset.
    pub deleted_segments: Vec<i64>,
    /// Leftover files the loader removed (`.deleted`, `.cleaned`, orphan indexes, ...).
    pub removed_files: Vec<PathBuf>,
    /// Interrupted swaps the loader completed.
    pub completed_swaps: Vec<PathBuf>,
    /// `.swap` files the loader refused (damaged, overlapping, or lacking records of the
    /// segments they would replace): set aside as `<name>.rejected`, the live segments kept.
    pub rejected_swaps: Vec<RejectedSwapLine>,
    /// `.deleted` segment files renamed back: no other segment served their offsets.
    pub restored_files: Vec<PathBuf>,
    /// Segments whose offsets overflowed their base, split (KAFKA-6264).
    pub split_segments: Vec<SplitLine>,
    /// Recovered segments that end below the next segment's base: gaps in the offsets, kept
    /// (every segment is served across them, as Kafka's loader does).
    pub gaps: Vec<GapLine>,
    /// Checkpoint files that could not be read or parsed: read as empty, so the log start
    /// offset fell back to the first segment's base (the close rewrites them).
    pub checkpoint_problems: Vec<CheckpointLine>,
    /// Total bytes cut.
    pub truncated_bytes: u64,
    /// Files named like segment files but not as Kafka names them (e.g. `123.log`): ignored
    /// and left in place.
    pub stray_files: Vec<PathBuf>,
    /// Segments damaged from their first byte in flushed data, set aside as
    /// `<base>.log.damaged` (bytes unchanged).
    pub set_aside: Vec<PathBuf>,
    /// Producer `.snapshot` files that do not decode: left in place (a broker deletes them
    /// and rebuilds producer state from the log).
    pub corrupt_snapshots: Vec<CheckpointLine>,
    /// The checkpointed log start offset, when it lay beyond the log end (ignored: Kafka
    /// would have deleted every segment).
    pub log_start_beyond_end: Option<i64>,
    /// Where the leader-epoch cache came from: `checkpoint` (the file, with the epochs of the
    /// recovered batches), `rebuilt` (no file: from every batch) or `rebuilt_after_problem`
    /// (the file did not parse; it is also in `checkpoint_problems`).
    pub leader_epoch_source: &'static str,
    /// The leader-epoch cache written to `leader-epoch-checkpoint`, `[epoch, start_offset]`
    /// pairs oldest first.
    pub leader_epochs: Vec<(i32, i64)>,
    /// Log start offset after recovery.
    pub log_start_offset: i64,
    /// Log end offset after recovery.
    pub log_end_offset: i64,
    /// Producer ids in the rebuilt producer state.
    pub producers: usize,
    /// Base offsets of the segments whose `.txnindex` was rebuilt from their ABORT markers
    /// (as Kafka's `LogSegment.recover` does).
    pub rebuilt_txn_indexes: Vec<i64>,
    /// Corrupt producer snapshots the producer-state load skipped and deleted (Kafka's
    /// rule: a snapshot is derived state, rebuilt from the log).
    pub skipped_snapshots: Vec<PathBuf>,
    /// The producer snapshot the clean close leaves, named by the log end offset.
    pub producer_snapshot: Option<i64>,
}

/// Runs `seglog recover`.
///
/// # Errors
/// A missing directory; a log locked by another process; I/O and segment errors.
pub fn run(args: &RecoverArgs, quiet: bool) -> Result<Outcome, Error> {
    let listing = DirListing::read(&args.dir)?;
    if listing.is_log_dirs_root() {
        return super::recover_root::run(args, quiet, &listing);
    }
    let report = recover_dir_with(&args.dir, quiet, args.truncate_damaged)?;
    emit_report(args.json, &report, print_report)?;
    Ok(if report.problems_left() {
        Outcome::ProblemsFound
    } else {
        Outcome::Ok
    })
}

impl RecoverReport {
    /// Whether anything `verify` flags was left in place on purpose: damaged flushed data,
    /// stray files.
    pub fn problems_left(&self) -> bool {
        // A log start beyond the end is not left: the close rewrote the checkpoint.
        self.segments.iter().any(|s| s.damaged_tail_kept)
            || !self.stray_files.is_empty()
            || !self.set_aside.is_empty()
            || !self.rejected_swaps.is_empty()
            || !self.corrupt_snapshots.is_empty()
    }
}

/// Recovers every segment of the log in `dir` as after a crash (one open with
/// `recover_all`: every batch validated, torn or corrupt unflushed tails cut, both indexes
/// rebuilt; flushed data cut only with `truncate_damaged`) and closes it cleanly.
/// `_quiet` is kept for the command interface; the recovery draws no progress bar.
///
/// # Errors
/// A missing directory; a log locked by another process; I/O and segment errors.
pub fn recover_dir(dir: &Path, quiet: bool) -> Result<RecoverReport, Error> {
    recover_dir_with(dir, quiet, false)
}

/// [`recover_dir`], cutting damaged flushed data too when `truncate_damaged`
/// ([`LogOpenOptions::repair_destructively`]).
///
/// # Errors
/// As [`recover_dir`].
pub fn recover_dir_with(
    dir: &Path,
    _quiet: bool,
    truncate_damaged: bool,
) -> Result<RecoverReport, Error> {
    DirListing::existing_log(dir)?;
    check_before_changing(dir, truncate_damaged)?;
    let options = LogOpenOptions {
        recover_all: true,
        repair_destructively: truncate_damaged,
        // What `verify` checks: a batch whose records do not decode is damage too.
        decode_records: true,
        ..super::open_options()
    };
    let log = Log::open_with(dir, LogConfig::default(), options)?;
    let loaded = Loaded::of(&log);
    log.close()?;
    loaded.report(dir, &log)
}

/// What a recovering open left in a log, taken before its close.
pub(super) struct Loaded {
    load: seglog::LoadReport,
    remaining: Vec<i64>,
    log_start_offset: i64,
    log_end_offset: i64,
    leader_epochs: Vec<(i32, i64)>,
    producers: usize,
}

impl Loaded {
    /// Takes what the open of `log` did (call before closing it).
    pub(super) fn of(log: &Log) -> Self {
        Self {
            load: log.load_report().clone(),
            remaining: log.segments().iter().map(|s| s.base_offset).collect(),
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.log_end_offset(),
            leader_epochs: log.leader_epochs(),
            producers: log.producer_count(),
        }
    }

    /// The report of the recovery of `dir`, once `log` (its log) is closed.
    ///
    /// # Errors
    /// Listing `dir`.
    pub(super) fn report(self, dir: &Path, log: &Log) -> Result<RecoverReport, Error> {
        let Loaded {
            load,
            remaining,
            log_start_offset,
            log_end_offset,
            leader_epochs,
            producers,
        } = self;
        let producer_snapshot = log
            .producer_snapshot_offsets()
            .last()
            .copied()
            .filter(|o| *o == log_end_offset);
        // What the recovery left: the log rebuilds producer state and rewrites its snapshots;
        // one that still does not decode is reported.
        let listing = DirListing::existing_log(dir)?;
        let (leader_epoch_source, epoch_problem) = match &load.leader_epochs {
            LeaderEpochSource::Rebuilt => ("rebuilt", None),
            LeaderEpochSource::RebuiltAfterProblem(problem) => {
                ("rebuilt_after_problem", Some(problem.clone()))
            }
            _ => ("checkpoint", None),
        };
        let segments: Vec<SegmentRecovery> = load
            .segments
            .iter()
            .filter(|s| remaining.contains(&s.base_offset))
            .map(|s| {
                let active = load.segments.last().map(|l| l.base_offset) == Some(s.base_offset);
                segment_recovery(s, active && !load.had_clean_shutdown)
            })
            .collect();
        Ok(RecoverReport {
            dir: dir.to_owned(),
            was_clean: load.had_clean_shutdown,
            truncated_bytes: segments
                .iter()
                .filter(|s| !s.damaged_tail_kept)
                .map(|s| s.truncated_bytes)
                .sum(),
            stray_files: load.stray_files.clone(),
            set_aside: load.set_aside.clone(),
            log_start_beyond_end: load.log_start_beyond_end,
            segments,
            gaps: load
                .gaps
                .iter()
                .map(|g| GapLine {
                    base_offset: g.base_offset,
                    next_offset: g.next_offset,
                    next_base_offset: g.next_base_offset,
                })
                .collect(),
            deleted_segments: load.deleted_segments,
            removed_files: load.removed_files,
            completed_swaps: load.completed_swaps,
            rejected_swaps: load
                .rejected_swaps
                .iter()
                .map(|r| RejectedSwapLine {
                    file: r.path.clone(),
                    set_aside_as: r.set_aside_as.clone(),
                    problem: r.problem.to_string(),
                })
                .collect(),
            restored_files: load.restored_files,
            split_segments: load.splits.iter().map(split_line).collect(),
            checkpoint_problems: load
                .checkpoint_problems
                .iter()
                .chain(&epoch_problem)
                .map(|p| CheckpointLine {
                    file: p.path.clone(),
                    line: p.line,
                    problem: p.kind.to_string(),
                })
                .collect(),
            corrupt_snapshots: corrupt_snapshots(&listing.snapshots),
            leader_epoch_source,
            leader_epochs,
            log_start_offset,
            log_end_offset,
            producers,
            rebuilt_txn_indexes: load.producers.rebuilt_txn_indexes.clone(),
            skipped_snapshots: load
                .producers
                .corrupt_snapshots
                .iter()
                .map(|(p, _)| p.clone())
                .collect(),
            producer_snapshot,
        })
    }
}

/// The producer `.snapshot` files that still do not decode after the recovery (or are larger
/// than any snapshot is): left in place and reported.
fn corrupt_snapshots(snapshots: &[PathBuf]) -> Vec<CheckpointLine> {
    let mut corrupt = Vec::new();
    for path in snapshots {
        let problem = match read_bounded(path, MAX_SNAPSHOT_BYTES) {
            Ok(Ok(bytes)) => seglog::ProducerSnapshot::decode(&bytes)
                .err()
                .map(|e| e.to_string()),
            Ok(Err(problem)) => Some(problem),
            Err(e) => Some(e.one_line().to_string()),
        };
        if let Some(problem) = problem {
            corrupt.push(CheckpointLine {
                file: path.clone(),
                line: None,
                problem,
            });
        }
    }
    corrupt
}

/// Runs the whole recovery read-only first (in memory, writing nothing: the same validation,
/// decoding and split planning), and checks that every file a recovery may rewrite can be
/// opened for writing, so a recovery that cannot succeed fails before it changes anything
/// (the clean-shutdown marker included). A failure of the write itself (a full disk, an I/O
/// error) can still stop the real run part-way; what it leaves is then what an interrupted
/// recovery leaves (rebuilt indexes, no marker): the next open recovers again, nothing lost.
///
/// # Errors
/// [`Error::RecoverRefused`] naming the directory, with the reason.
pub(super) fn check_before_changing(dir: &Path, truncate_damaged: bool) -> Result<(), Error> {
    let refused = |source: Error| Error::RecoverRefused {
        dir: dir.to_owned(),
        source: Box::new(source),
    };
    let dry_run = LogOpenOptions {
        read_only: true,
        recover_all: true,
        repair_destructively: truncate_damaged,
        decode_records: true,
        ..super::open_options()
    };
    match Log::open_with(dir, LogConfig::default(), dry_run) {
        Ok(log) => drop(log),
        // A read-only open does not split; it has planned the split (an unsplittable segment
        // fails it), and the read-write open splits before anything else changes.
        Err(seglog::Error::Segment(seglog_segment::Error::OffsetOverflow { .. })) => {}
        Err(e) => return Err(refused(Error::Log(e))),
    }
    let entries = std::fs::read_dir(dir).map_err(Error::io("list directory", dir))?;
    for entry in entries {
        let entry = entry.map_err(Error::io("list directory", dir))?;
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        // Opening for writing changes neither the bytes nor the modification time.
        if let Err(e) = std::fs::OpenOptions::new().write(true).open(&path) {
            return Err(refused(Error::io("open for writing", &path)(e)));
        }
    }
    Ok(())
}

fn split_line(split: &SegmentSplit) -> SplitLine {
    SplitLine {
        base_offset: split.base_offset,
        new_base_offsets: split.new_base_offsets.clone(),
    }
}

/// What the load found and did for one segment (`active_after_crash`: the last segment, after
/// an unclean shutdown).
fn segment_recovery(loaded: &SegmentLoad, active_after_crash: bool) -> SegmentRecovery {
    let mut line = SegmentRecovery {
        base_offset: loaded.base_offset,
        next_offset: loaded.base_offset,
        ..Default::default()
    };
    line.index_problem = loaded
        .rebuilt
        .as_ref()
        .filter(|r| **r != RebuildReason::Requested)
        .map(|r| rebuild_text(r, active_after_crash));
    if let Some(r) = &loaded.recovery {
        line.truncated_bytes = r.truncated_bytes;
        if let Some(reason) = &r.reason {
            let (what, position, corruption) = truncation_text(reason);
            line.truncation = Some(what);
            line.truncated_at = Some(position);
            line.corruption = corruption;
        }
        line.batches = r.batches;
        line.valid_bytes = r.valid_bytes;
        line.index_entries = r.index_entries;
        line.time_index_entries = r.time_index_entries;
        line.next_offset = r.next_offset;
        line.damaged_tail_kept = r.damaged_tail_kept;
    }
    line
}

pub(crate) fn truncation_text(reason: &TruncationReason) -> (&'static str, u64, Option<String>) {
    match reason {
        TruncationReason::PartialTail { position } => ("torn_tail", *position, None),
        TruncationReason::Corrupt { position, kind } => {
            ("corrupt", *position, Some(corrupt_text(kind)))
        }
    }
}

fn corrupt_text(kind: &CorruptKind) -> String {
    kind.to_string()
}

/// Why the indexes were rebuilt, in words. The active segment of an unclean shutdown has
/// preallocated indexes that were never trimmed (trimming happens at roll and close): a
/// zero-padded tail there is what a crash leaves, not corruption, and is not called so.
fn rebuild_text(reason: &RebuildReason, active_after_crash: bool) -> String {
    match reason {
        RebuildReason::CorruptIndex {
            file_type,
            kind: seglog_index_core::CorruptKind::ZeroPaddedTail,
            ..
        } if active_after_crash => format!(
            "{} was preallocated and not trimmed before the unclean shutdown (the active segment)",
            file_type.extension()
        ),
        RebuildReason::Requested => "recovery requested".to_owned(),
        RebuildReason::MissingIndex { file_type } => {
            format!("{} was missing", file_type.extension())
        }
        RebuildReason::CorruptIndex {
            file_type,
            position,
            kind,
        } => {
            format!(
                "{} was corrupt at byte {position} ({kind})",
                file_type.extension()
            )
        }
        RebuildReason::IndexEntryMismatch { offset, position } => {
            format!(".index entry (offset {offset}, position {position}) did not match the log")
        }
        RebuildReason::TimeIndexBehindLog {
            index_timestamp_ms,
            log_timestamp_ms,
        } => format!(
            ".timeindex ended at timestamp {index_timestamp_ms} but the log holds {log_timestamp_ms}"
        ),
        RebuildReason::LogTail { position } => {
            format!("the log did not end with a whole batch (byte {position})")
        }
    }
}

/// Prints a recovery report as text.
///
/// # Errors
/// Stdout errors.
pub fn print_report(out: &mut Out, report: &RecoverReport) -> Result<(), Error> {
    out.line(format_args!(
        "{}: {} shutdown before this run; recovered {} segments, cut {} bytes; log start offset {}, log end offset {}",
        report.dir.display(),
        if report.was_clean { "clean" } else { "unclean" },
        report.segments.len(),
        report.truncated_bytes,
        report.log_start_offset,
        report.log_end_offset,
    ))?;
    let epochs: Vec<String> = report
        .leader_epochs
        .iter()
        .map(|(epoch, start)| format!("{epoch}@{start}"))
        .collect();
    out.line(format_args!(
        "  leader-epoch-checkpoint ({}): {}",
        match report.leader_epoch_source {
            "rebuilt" => "rebuilt from the batches",
            "rebuilt_after_problem" => "did not parse; rebuilt from the batches",
            _ => "brought up to date with the recovered batches",
        },
        if epochs.is_empty() {
            "no epoch".to_owned()
        } else {
            format!("epoch@start offset {}", epochs.join(" "))
        }
    ))?;
    out.line(format_args!(
        "  producer state: {} producer ids, {} .txnindex files rebuilt{}{}",
        report.producers,
        report.rebuilt_txn_indexes.len(),
        if report.skipped_snapshots.is_empty() {
            String::new()
        } else {
            format!(
                ", {} corrupt snapshots skipped",
                report.skipped_snapshots.len()
            )
        },
        report
            .producer_snapshot
            .map_or(String::new(), |o| format!(", snapshot at {o}"))
    ))?;
    for s in &report.segments {
        let mut text = format!(
            "  segment {}: {} batches, {} bytes kept, indexes rebuilt ({} + {} entries)",
            s.base_offset, s.batches, s.valid_bytes, s.index_entries, s.time_index_entries
        );
        if s.truncated_bytes > 0 {
            let at = s
                .truncated_at
                .map_or(String::new(), |p| format!(" at byte {p}"));
            let why = match (s.truncation, &s.corruption) {
                (Some("corrupt"), Some(c)) => format!("corrupt batch: {c}"),
                (Some(t), _) => t.replace('_', " "),
                _ => "unknown".to_owned(),
            };
            if s.damaged_tail_kept {
                // Inside flushed data a batch longer than the bytes left is a damaged length
                // field, not a torn write.
                let why = if s.truncation == Some("torn_tail") {
                    "a batch longer than the bytes left: a damaged length field".to_owned()
                } else {
                    why
                };
                text.push_str(&format!(
                    "; damaged{at} ({why}): {} bytes of flushed data kept on disk, not served from offset {} (later segments kept; --truncate-damaged cuts them)",
                    s.truncated_bytes, s.next_offset
                ));
            } else {
                text.push_str(&format!("; cut {} bytes{at} ({why})", s.truncated_bytes));
            }
        }
        if let Some(problem) = &s.index_problem {
            text.push_str(&format!("; {problem}"));
        }
        out.line(text)?;
    }
    for gap in &report.gaps {
        out.line(format_args!(
            "  segment {}: ends at offset {}, below the next segment's base {}: a gap of {} offsets, kept (read across, as Kafka's loader does)",
            gap.base_offset,
            gap.next_offset,
            gap.next_base_offset,
            gap.next_base_offset - gap.next_offset
        ))?;
    }
    for base in &report.deleted_segments {
        out.line(format_args!(
            "  segment {base}: deleted (it followed a segment whose tail was cut)"
        ))?;
    }
    for path in &report.removed_files {
        out.line(format_args!("  removed {}", path.display()))?;
    }
    for path in &report.completed_swaps {
        out.line(format_args!("  completed swap {}", path.display()))?;
    }
    for rejected in &report.rejected_swaps {
        let aside = rejected
            .set_aside_as
            .as_ref()
            .map_or(String::new(), |p| format!(", set aside as {}", p.display()));
        out.line(format_args!(
            "  {}: swap refused ({}); the live segments were kept{aside} (bytes unchanged)",
            rejected.file.display(),
            rejected.problem
        ))?;
    }
    for path in &report.restored_files {
        out.line(format_args!(
            "  restored {} from .deleted: no other segment serves its offsets",
            path.display()
        ))?;
    }
    for checkpoint in &report.checkpoint_problems {
        let line = checkpoint
            .line
            .map_or(String::new(), |l| format!(" line {l}"));
        out.line(format_args!(
            "  checkpoint {}{line}: {}; read as empty (log start offset reset to the first segment)",
            checkpoint.file.display(),
            checkpoint.problem
        ))?;
    }
    for path in &report.stray_files {
        out.line(format_args!(
            "  {}: not a segment file name Kafka writes (20-digit base offset); ignored and left in place (move it out of the directory)",
            path.display()
        ))?;
    }
    for path in &report.set_aside {
        out.line(format_args!(
            "  {}: damaged from its first byte in flushed data; set aside (bytes unchanged), the log continues at its base offset",
            path.display()
        ))?;
    }
    for snapshot in &report.corrupt_snapshots {
        out.line(format_args!(
            "  {}: producer snapshot does not decode ({}); left in place (a broker deletes it and rebuilds producer state from the log: move it out)",
            snapshot.file.display(),
            snapshot.problem
        ))?;
    }
    if let Some(start) = report.log_start_beyond_end {
        out.line(format_args!(
            "  the checkpointed log start offset {start} lies beyond the log end; ignored (nothing was deleted)"
        ))?;
    }
    for split in &report.split_segments {
        out.line(format_args!(
            "  segment {}: offsets overflowed its base offset; split into segments {:?}",
            split.base_offset, split.new_base_offsets
        ))?;
    }
    Ok(())
}
