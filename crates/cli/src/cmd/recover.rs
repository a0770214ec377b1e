//! `seglog recover DIR`: treat the log as after a crash, recover every segment, close cleanly.
//!
//! Three steps, so that every byte is validated whatever the directory's shutdown state:
//! 1. open the log with `seglog::Log::open` (the loader finishes or removes interrupted
//!    deletes, cleans and swaps, recovers from the recovery point after an unclean shutdown,
//!    rebuilds missing or broken indexes) and close it;
//! 2. recover every remaining segment explicitly (`Segment::open` with `recover`): validate
//!    every batch, cut a torn or corrupt tail, rebuild both indexes. After a segment whose tail
//!    was cut, every later segment is deleted, as Kafka's loader does;
//! 3. open and close the log again, which rewrites the checkpoints and the clean-shutdown
//!    marker for what is left.
//!
//! Step 2 exists because `seglog::Log` trusts segments below the recovery point after a clean
//! shutdown (as Kafka does); see the crate report for the `OpenOptions` knob that would fold it
//! into step 1.

use std::path::{Path, PathBuf};

use seglog::{Log, LogConfig, RebuildReason, RecoveryReport, SegmentLoad, TruncationReason};
use seglog_segment::{
    CorruptKind, FileKind, FileType, OpenOptions, Segment, SegmentConfig, file_path, sync_dir,
};
use serde::Serialize;

use crate::Outcome;
use crate::cli::RecoverArgs;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::Out;
use crate::progress::Progress;

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
    /// Why the loader had to rebuild the indexes (missing, zero-padded, inconsistent), if it
    /// did before the explicit recovery.
    pub index_problem: Option<String>,
    /// Entries in the rebuilt offset index.
    pub index_entries: usize,
    /// Entries in the rebuilt time index.
    pub time_index_entries: usize,
    /// The offset after the segment's last valid batch.
    pub next_offset: i64,
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
    /// Segments deleted because an earlier segment's tail was cut (Kafka's rule).
    pub deleted_segments: Vec<i64>,
    /// Leftover files the loader removed (`.deleted`, `.cleaned`, orphan indexes, ...).
    pub removed_files: Vec<PathBuf>,
    /// Interrupted swaps the loader completed.
    pub completed_swaps: Vec<PathBuf>,
    /// Total bytes cut.
    pub truncated_bytes: u64,
    /// Log start offset after recovery.
    pub log_start_offset: i64,
    /// Log end offset after recovery.
    pub log_end_offset: i64,
}

/// Runs `seglog recover`.
///
/// # Errors
/// A missing directory; a log locked by another process; I/O and segment errors.
pub fn run(args: &RecoverArgs, quiet: bool) -> Result<Outcome, Error> {
    let report = recover_dir(&args.dir, quiet)?;
    let mut out = Out::stdout();
    if args.json {
        out.json(&report)?;
    } else {
        print_report(&mut out, &report)?;
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

/// Recovers every segment of the log in `dir` (see the module docs) and closes it cleanly.
///
/// # Errors
/// A missing directory; a log locked by another process; I/O and segment errors.
pub fn recover_dir(dir: &Path, quiet: bool) -> Result<RecoverReport, Error> {
    DirListing::partition(dir)?;
    // Step 1: Kafka's load, then a clean close.
    let log = Log::open(dir, LogConfig::default())?;
    let load = log.load_report().clone();
    log.close()?;
    drop(log);
    let mut report = RecoverReport {
        dir: dir.to_owned(),
        was_clean: load.had_clean_shutdown,
        deleted_segments: load.deleted_segments.clone(),
        removed_files: load.removed_files.clone(),
        completed_swaps: load.completed_swaps.clone(),
        ..Default::default()
    };
    // Step 2: every segment, oldest first.
    let listing = DirListing::read(dir)?;
    let bases: Vec<i64> = listing
        .segments
        .iter()
        .filter(|(_, f)| f.log.is_some())
        .map(|(b, _)| *b)
        .collect();
    let progress = Progress::records(bases.len() as u64, "recover", quiet);
    let config = SegmentConfig::default();
    let mut cut = false;
    for base in bases {
        progress.inc(1);
        if cut {
            delete_segment_files(dir, base)?;
            report.deleted_segments.push(base);
            continue;
        }
        let options = OpenOptions {
            recover: true,
            ..OpenOptions::default()
        };
        let (segment, opened) = Segment::open(dir, base, &config, options)?;
        segment.close()?;
        let loaded = load.segments.iter().find(|s| s.base_offset == base);
        let line = segment_recovery(base, loaded, opened.recovery.as_ref());
        cut = line.truncated_bytes > 0
            && opened
                .recovery
                .as_ref()
                .is_some_and(|r| r.truncated_bytes > 0);
        report.segments.push(line);
    }
    progress.finish();
    if !report.deleted_segments.is_empty() {
        sync_dir(dir)?;
    }
    // Step 3: reopen and close, so the checkpoints and the marker describe what is left.
    let log = Log::open(dir, LogConfig::default())?;
    report.log_start_offset = log.log_start_offset();
    report.log_end_offset = log.log_end_offset();
    log.close()?;
    report.truncated_bytes = report.segments.iter().map(|s| s.truncated_bytes).sum();
    Ok(report)
}

fn delete_segment_files(dir: &Path, base: i64) -> Result<(), Error> {
    for file_type in [
        FileType::Log,
        FileType::Index,
        FileType::TimeIndex,
        FileType::TxnIndex,
    ] {
        let path = file_path(dir, base, FileKind::new(file_type));
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("delete", path)(e)),
        }
    }
    Ok(())
}

/// Merges what the loader did (step 1) and the explicit recovery (step 2) for one segment.
fn segment_recovery(
    base: i64,
    loaded: Option<&SegmentLoad>,
    recovered: Option<&RecoveryReport>,
) -> SegmentRecovery {
    let mut line = SegmentRecovery {
        base_offset: base,
        next_offset: base,
        ..Default::default()
    };
    line.index_problem = loaded
        .and_then(|l| l.rebuilt.as_ref())
        .filter(|r| **r != RebuildReason::Requested)
        .map(rebuild_text);
    let earlier = loaded.and_then(|l| l.recovery.as_ref());
    for r in earlier.into_iter().chain(recovered) {
        line.truncated_bytes += r.truncated_bytes;
        if let Some(reason) = &r.reason {
            let (what, position, corruption) = truncation_text(reason);
            line.truncation = Some(what);
            line.truncated_at = Some(position);
            line.corruption = corruption;
        }
    }
    if let Some(r) = recovered {
        line.batches = r.batches;
        line.valid_bytes = r.valid_bytes;
        line.index_entries = r.index_entries;
        line.time_index_entries = r.time_index_entries;
        line.next_offset = r.next_offset;
    }
    line
}

fn truncation_text(reason: &TruncationReason) -> (&'static str, u64, Option<String>) {
    match reason {
        TruncationReason::PartialTail { position } => ("torn_tail", *position, None),
        TruncationReason::Corrupt { position, kind } => {
            ("corrupt", *position, Some(corrupt_text(kind)))
        }
    }
}

fn corrupt_text(kind: &CorruptKind) -> String {
    match kind {
        CorruptKind::Batch(k) => k.to_string(),
        other => format!("{other:?}"),
    }
}

fn rebuild_text(reason: &RebuildReason) -> String {
    match reason {
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
                "{} was corrupt at byte {position} ({kind:?})",
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
            text.push_str(&format!("; cut {} bytes{at} ({why})", s.truncated_bytes));
        }
        if let Some(problem) = &s.index_problem {
            text.push_str(&format!("; {problem}"));
        }
        out.line(text)?;
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
    Ok(())
}
