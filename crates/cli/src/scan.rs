//! Walking a log's records in offset order, as a consumer would: the CLI's loop over
//! [`seglog::OwnedRecordReader`].

use std::ops::ControlFlow;

use seglog::{Isolation, Log, ReaderOptions};
use seglog_records::{BatchHeader, Record};

use crate::error::Error;
use crate::view::MAX_DECOMPRESSED_BYTES;

/// Bytes asked of the log per read (at least one whole batch is always returned).
const FETCH_BYTES: u32 = 4 << 20;

/// How a scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanEnd {
    /// The offset after the last batch scanned.
    pub next_offset: i64,
    /// Whether `f` stopped the scan (else it reached the log end).
    pub stopped: bool,
}

/// Calls `f` with every record at or after `start_offset`, in offset order, up to the log
/// end offset (as the log publishes it while reading), with its batch's header. Control
/// records are passed too (the header says so). Every batch's CRC is checked before its
/// records are decoded. Stops early when `f` breaks.
///
/// # Errors
/// The log's read errors (e.g. `start_offset` out of range);
/// [`Error::Damaged`] when a batch the log returns fails its CRC or does not decode; whatever
/// `f` returns.
pub fn for_each_record(
    log: &Log,
    start_offset: i64,
    f: impl FnMut(&BatchHeader, Record) -> Result<ControlFlow<()>, Error>,
) -> Result<ScanEnd, Error> {
    for_each_record_with(log, start_offset, Isolation::LogEnd, f)
}

/// [`for_each_record`] up to the visible end of `isolation`: with
/// [`Isolation::ReadCommitted`], to the last stable offset and without the records of aborted
/// transactions.
///
/// # Errors
/// As [`for_each_record`].
pub fn for_each_record_with(
    log: &Log,
    start_offset: i64,
    isolation: Isolation,
    mut f: impl FnMut(&BatchHeader, Record) -> Result<ControlFlow<()>, Error>,
) -> Result<ScanEnd, Error> {
    let mut reader = ReaderOptions::new(start_offset, isolation)
        .fetch_bytes(FETCH_BYTES)
        .max_decompressed_bytes(MAX_DECOMPRESSED_BYTES)
        .check_crcs(true)
        .include_control(true)
        .owned_reader(log);
    for fetched in reader.until_caught_up() {
        // A damaged batch is an error naming the file and its position, never printed.
        let fetched = fetched.map_err(|e| match e {
            seglog::Error::DamagedBatch { path, source } => Error::Damaged { path, source },
            other => Error::Log(other),
        })?;
        let offset = fetched.record.offset;
        if f(&fetched.batch, fetched.record)?.is_break() {
            return Ok(ScanEnd {
                next_offset: offset + 1,
                stopped: true,
            });
        }
    }
    Ok(ScanEnd {
        next_offset: reader.position(),
        stopped: false,
    })
}
