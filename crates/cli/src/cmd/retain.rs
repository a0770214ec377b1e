//! `seglog retain DIR`: apply retention (Kafka's `deleteOldSegments`) and report it.
//!
//! Only the limits given on the command line apply: `--retention-ms`, `--retention-bytes`
//! (both unlimited when absent, whatever Kafka's topic defaults are) and
//! `--log-start-offset` (Kafka's DeleteRecords, applied first). A standalone log has no
//! replication, so its high watermark is taken to be the log end offset: everything is
//! committed and may be deleted (Kafka never deletes at or above the high watermark).
//! Deleted segments' files are removed when the log is closed at the end.

use std::path::PathBuf;
use std::sync::Arc;

use seglog::{Log, LogConfig, LogOpenOptions, ManualClock, RetentionReason, RetentionReport};
use serde::Serialize;

use crate::Outcome;
use crate::cli::RetainArgs;
use crate::cmd::produce::now_ms;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::{Out, emit_report};

/// The `retain --json` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RetainReport {
    /// The directory.
    pub dir: PathBuf,
    /// The time used for time retention.
    pub now: i64,
    /// Segments deleted, oldest first.
    pub deleted: Vec<DeletedLine>,
    /// Bytes freed.
    pub deleted_bytes: u64,
    /// Log start offset before and after.
    pub log_start_offset_before: i64,
    /// Log start offset after.
    pub log_start_offset: i64,
    /// Log end offset (unchanged by retention).
    pub log_end_offset: i64,
    /// Segments left.
    pub segments_left: usize,
    /// Whether the active segment was rolled so that one segment remains.
    pub rolled: bool,
    /// Segments kept only because their largest timestamp is in the future.
    pub future_timestamp_segments: Vec<i64>,
}

/// One deleted segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeletedLine {
    /// Its base offset.
    pub base_offset: i64,
    /// Its size.
    pub bytes: u64,
    /// `log_start_offset`, `size` or `time`.
    pub reason: &'static str,
}

/// Kafka-ish name of a retention reason.
pub fn reason_name(reason: RetentionReason) -> &'static str {
    match reason {
        RetentionReason::LogStartOffset => "log_start_offset",
        RetentionReason::Size => "size",
        RetentionReason::Time => "time",
    }
}

/// Runs `seglog retain`.
///
/// # Errors
/// A missing directory; an invalid limit; a `--log-start-offset` above the log end; a log
/// locked by another process; I/O errors.
pub fn run(args: &RetainArgs) -> Result<Outcome, Error> {
    DirListing::existing_log(&args.dir)?;
    let now = args.now.unwrap_or_else(now_ms);
    let config = LogConfig {
        retention_ms: args.retention_ms.unwrap_or(-1),
        retention_bytes: args.retention_bytes.unwrap_or(-1),
        ..LogConfig::default()
    };
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(now)),
        ..super::open_options()
    };
    let log = Log::open_with(&args.dir, config, options)?;
    let result = apply(&log, args);
    let closed = log.close();
    let (before, retention) = result?;
    closed?;
    let report = RetainReport {
        dir: args.dir.clone(),
        now,
        deleted_bytes: retention.deleted.iter().map(|d| d.size_bytes).sum(),
        deleted: retention
            .deleted
            .iter()
            .map(|d| DeletedLine {
                base_offset: d.base_offset,
                bytes: d.size_bytes,
                reason: reason_name(d.reason),
            })
            .collect(),
        log_start_offset_before: before,
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.log_end_offset(),
        segments_left: log.segment_count(),
        rolled: retention.rolled,
        future_timestamp_segments: retention.future_timestamp_segments.clone(),
    };
    emit_report(args.json, &report, print_report)?;
    Ok(Outcome::Ok)
}

fn apply(log: &Log, args: &RetainArgs) -> Result<(i64, RetentionReport), Error> {
    let before = log.log_start_offset();
    log.set_high_watermark(log.log_end_offset())?;
    if let Some(offset) = args.log_start_offset {
        log.delete_records_before(offset)?;
    }
    Ok((before, log.delete_old_segments()?))
}

/// Prints a retention report as text.
///
/// # Errors
/// Stdout errors.
pub fn print_report(out: &mut Out, report: &RetainReport) -> Result<(), Error> {
    out.line(format_args!(
        "{}: deleted {} segments ({} bytes); log start offset {} -> {}, log end offset {}, {} segments left{}",
        report.dir.display(),
        report.deleted.len(),
        report.deleted_bytes,
        report.log_start_offset_before,
        report.log_start_offset,
        report.log_end_offset,
        report.segments_left,
        if report.rolled { " (rolled a new empty active segment)" } else { "" },
    ))?;
    for d in &report.deleted {
        out.line(format_args!(
            "  deleted segment {} ({} bytes, {})",
            d.base_offset,
            d.bytes,
            d.reason.replace('_', " ")
        ))?;
    }
    for base in &report.future_timestamp_segments {
        out.line(format_args!(
            "  kept segment {base}: its largest timestamp is in the future"
        ))?;
    }
    Ok(())
}
