//! `seglog compact DIR`: one log-cleaner round now (Kafka's `Cleaner.doClean`), then a clean
//! close.
//!
//! The log is opened with `cleanup.policy=compact` and Kafka's cleaner defaults; `--config`
//! overrides them (any topic setting: `min.compaction.lag.ms`, `delete.retention.ms`,
//! `log.cleaner.dedupe.buffer.size`, ...; a policy without `compact` is refused). A standalone
//! log has no replication, so its high watermark is taken to be the log end offset: everything
//! is committed. As in Kafka, the active segment is never cleaned, and the round runs whatever
//! the dirty ratio. Replaced segments' files are removed when the log is closed at the end.

use std::path::PathBuf;
use std::sync::Arc;

use seglog::{CleanReport, Log, LogConfig, LogOpenOptions, ManualClock};
use serde::Serialize;

use crate::Outcome;
use crate::cli::CompactArgs;
use crate::cmd::produce::now_ms;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::{Out, emit_report};

/// The `compact --json` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// The directory.
    pub dir: PathBuf,
    /// The time tombstone horizons and compaction lags were measured against.
    pub now: i64,
    /// Whether a round ran (false: nothing below the first uncleanable offset was dirty).
    pub cleaned: bool,
    /// Where the dirty section started (the cleaner checkpoint before the round).
    pub first_dirty_offset: i64,
    /// Nothing at or above this offset was cleaned (the active segment's base, or lower).
    pub first_uncleanable_offset: i64,
    /// Old segments replaced.
    pub segments_cleaned: usize,
    /// Cleaned segments that replaced them.
    pub segments_after: usize,
    /// Records in the segments the round rewrote, before.
    pub records_before: u64,
    /// Records kept.
    pub records_after: u64,
    /// Bytes of the replaced segments.
    pub bytes_before: u64,
    /// Bytes of the cleaned segments.
    pub bytes_after: u64,
    /// Distinct keys of the dirty section in the offset map.
    pub keys: u64,
    /// The offset map filled: the round ended early (run again to go on).
    pub map_full: bool,
    /// When the next tombstone purge can happen: the earliest delete horizon (KIP-534,
    /// `delete.retention.ms` after the round that first kept them) of the tombstones and
    /// transaction markers the round kept; a round at or after it (`--now`) removes them.
    /// `None`: nothing kept waits for a horizon.
    pub next_purge_ms: Option<i64>,
    /// The cleaner checkpoint after the round (where the next dirty section starts).
    pub cleaner_checkpoint: Option<i64>,
    /// Log start offset after.
    pub log_start_offset: i64,
    /// Log end offset (unchanged).
    pub log_end_offset: i64,
    /// Segments after.
    pub segments: usize,
}

/// The config of `compact`: `cleanup.policy=compact`, then the `--config` items.
///
/// # Errors
/// [`Error::Log`] for a bad item; [`Error::Usage`] when the policy given has no `compact`.
pub fn config_from_args(items: &[String]) -> Result<LogConfig, Error> {
    let config = LogConfig::from_pairs(
        std::iter::once("cleanup.policy=compact".to_owned()).chain(items.iter().cloned()),
    )?;
    if !config.cleanup_policy.compact() {
        return Err(Error::Usage {
            arg: "--config",
            reason: "cleanup.policy must include compact".into(),
        });
    }
    Ok(config)
}

/// Runs `seglog compact`.
///
/// # Errors
/// A directory that holds no log; a bad `--config`; a log locked by another process; data the
/// cleaner cannot decode; I/O errors.
pub fn run(args: &CompactArgs) -> Result<Outcome, Error> {
    DirListing::existing_log(&args.dir)?;
    let config = config_from_args(&args.config)?;
    let now = args.now.unwrap_or_else(now_ms);
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(now)),
        ..super::open_options()
    };
    let log = Log::open_with(&args.dir, config, options)?;
    let result = log
        .set_high_watermark(log.log_end_offset())
        .map_err(Error::from)
        .and_then(|_| Ok(log.clean_at(now)?));
    let closed = log.close();
    let round = result?;
    closed?;
    let report = report(args, now, &log, round.as_ref());
    emit_report(args.json, &report, print_report)?;
    Ok(Outcome::Ok)
}

fn report(args: &CompactArgs, now: i64, log: &Log, round: Option<&CleanReport>) -> CompactReport {
    let base = CompactReport {
        dir: args.dir.clone(),
        now,
        cleaner_checkpoint: log.cleaner_checkpoint(),
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.log_end_offset(),
        segments: log.segment_count(),
        ..CompactReport::default()
    };
    let Some(round) = round else {
        return base;
    };
    CompactReport {
        cleaned: true,
        first_dirty_offset: round.first_dirty_offset,
        first_uncleanable_offset: round.first_uncleanable_offset,
        segments_cleaned: round.segments_cleaned,
        segments_after: round.segments_after,
        records_before: round.records_before,
        records_after: round.records_after,
        bytes_before: round.bytes_before,
        bytes_after: round.bytes_after,
        keys: round.keys,
        map_full: round.map_full,
        next_purge_ms: round.next_purge_ms,
        ..base
    }
}

/// Prints a compaction report as text.
///
/// # Errors
/// Stdout errors.
pub fn print_report(out: &mut Out, r: &CompactReport) -> Result<(), Error> {
    if !r.cleaned {
        return out.line(format_args!(
            "{}: nothing to clean (the dirty section is empty or in the active segment); cleaner checkpoint {}",
            r.dir.display(),
            r.cleaner_checkpoint
                .map_or_else(|| "none".to_owned(), |c| c.to_string()),
        ));
    }
    out.line(format_args!(
        "{}: cleaned {} segments into {}: {} -> {} records, {} -> {} bytes; offsets [{}, {}) dirty, {} keys{}",
        r.dir.display(),
        r.segments_cleaned,
        r.segments_after,
        r.records_before,
        r.records_after,
        r.bytes_before,
        r.bytes_after,
        r.first_dirty_offset,
        r.first_uncleanable_offset,
        r.keys,
        if r.map_full { " (offset map full: run again)" } else { "" },
    ))?;
    out.line(format_args!(
        "  cleaner checkpoint {}; log start offset {}, log end offset {}, {} segments",
        r.cleaner_checkpoint
            .map_or_else(|| "none".to_owned(), |c| c.to_string()),
        r.log_start_offset,
        r.log_end_offset,
        r.segments
    ))?;
    if let Some(at) = r.next_purge_ms {
        out.line(format_args!(
            "  tombstones kept until their delete horizon: the next purge can happen at {at} ({} ms after --now {}; `seglog compact --now {at}` or later removes them)",
            at.saturating_sub(r.now),
            r.now
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_implies_the_policy_and_refuses_delete_only() {
        let config = config_from_args(&["delete.retention.ms=5".into()]).unwrap();
        assert!(config.cleanup_policy.compact());
        assert_eq!(config.delete_retention_ms, 5);
        let both = config_from_args(&["cleanup.policy=compact,delete".into()]).unwrap();
        assert!(both.cleanup_policy.delete());
        assert!(matches!(
            config_from_args(&["cleanup.policy=delete".into()]),
            Err(Error::Usage { .. })
        ));
    }
}
