//! `seglog marker DIR --producer-id P --producer-epoch E (--commit|--abort)`: writes a
//! transaction marker as a broker does for its transaction coordinator (`WriteTxnMarkers`),
//! validated against the producer's state, then closes the log cleanly.

use std::path::PathBuf;

use seglog::{Durability, Log, LogConfig, TransactionVersion, TxnMarker, TxnResult};
use serde::Serialize;

use crate::Outcome;
use crate::cli::MarkerArgs;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::{Out, emit_report};

/// The `marker --json` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkerReport {
    /// The directory.
    pub dir: PathBuf,
    /// `"commit"` or `"abort"`.
    pub result: &'static str,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The coordinator epoch.
    pub coordinator_epoch: i32,
    /// The transaction version (0, 1 or 2).
    pub transaction_version: i16,
    /// The marker's offset.
    pub offset: i64,
    /// The last stable offset after the marker (with the high watermark at the log end).
    pub last_stable_offset: i64,
}

/// Runs `seglog marker`.
///
/// # Errors
/// A directory that holds no log; a marker the producer state refuses (an older producer or
/// coordinator epoch); I/O errors.
pub fn run(args: &MarkerArgs) -> Result<Outcome, Error> {
    DirListing::existing_log(&args.dir)?;
    let log = Log::open_with(&args.dir, LogConfig::default(), super::open_options())?;
    let result = if args.commit {
        TxnResult::Commit
    } else {
        TxnResult::Abort
    };
    let transaction_version = match args.transaction_version {
        2 => TransactionVersion::V2,
        1 => TransactionVersion::V1,
        _ => TransactionVersion::V0,
    };
    let written = log.write_txn_marker_with(
        TxnMarker {
            producer_id: args.producer_id,
            producer_epoch: args.producer_epoch,
            coordinator_epoch: args.coordinator_epoch,
            result,
            leader_epoch: None,
            transaction_version,
        },
        Durability::PageCache,
    );
    let stable = log
        .set_high_watermark(log.log_end_offset())
        .map(|_| log.last_stable_offset());
    let closed = log.close();
    let info = written?;
    let last_stable_offset = stable?;
    closed?;
    let report = MarkerReport {
        dir: args.dir.clone(),
        result: if args.commit { "commit" } else { "abort" },
        producer_id: args.producer_id,
        producer_epoch: args.producer_epoch,
        coordinator_epoch: args.coordinator_epoch,
        transaction_version: args.transaction_version,
        offset: info.first_offset,
        last_stable_offset,
    };
    emit_report(args.json, &report, |out: &mut Out, r: &MarkerReport| {
        out.line(format_args!(
            "{}: {} marker for producer {} epoch {} at offset {}; last stable offset {}",
            r.dir.display(),
            r.result,
            r.producer_id,
            r.producer_epoch,
            r.offset,
            r.last_stable_offset
        ))
    })?;
    Ok(Outcome::Ok)
}
