//! `seglog truncate DIR --to OFFSET`: Kafka's `truncateTo` (what a follower does when it
//! diverges from its leader), then a clean close.

use std::path::PathBuf;

use seglog::{Log, LogConfig};
use serde::Serialize;

use crate::Outcome;
use crate::cli::TruncateArgs;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::{Out, emit_report};

/// The `truncate --json` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TruncateReport {
    /// The directory.
    pub dir: PathBuf,
    /// The log end offset before.
    pub log_end_offset_before: i64,
    /// The log end offset after (the requested offset, or the old end when it was lower).
    pub log_end_offset: i64,
    /// The log start offset after.
    pub log_start_offset: i64,
}

/// Runs `seglog truncate`.
///
/// # Errors
/// A directory that holds no log; a log locked by another process; I/O errors.
pub fn run(args: &TruncateArgs) -> Result<Outcome, Error> {
    DirListing::existing_log(&args.dir)?;
    let log = Log::open_with(&args.dir, LogConfig::default(), super::open_options())?;
    let before = log.log_end_offset();
    let result = log.truncate_to(args.to);
    let (end, start) = (log.log_end_offset(), log.log_start_offset());
    let closed = log.close();
    result?;
    closed?;
    let report = TruncateReport {
        dir: args.dir.clone(),
        log_end_offset_before: before,
        log_end_offset: end,
        log_start_offset: start,
    };
    emit_report(args.json, &report, |out: &mut Out, r: &TruncateReport| {
        out.line(format_args!(
            "{}: log end offset {} -> {}; log start offset {}",
            r.dir.display(),
            r.log_end_offset_before,
            r.log_end_offset,
            r.log_start_offset
        ))
    })?;
    Ok(Outcome::Ok)
}
