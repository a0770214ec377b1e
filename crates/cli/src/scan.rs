//! Walking a log's records in offset order through `Log::read`, as a consumer would.

use std::ops::ControlFlow;

use seglog::{Isolation, Log};
use seglog_records::{BatchHeader, Batches, Record};

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
    mut f: impl FnMut(&BatchHeader, Record) -> Result<ControlFlow<()>, Error>,
) -> Result<ScanEnd, Error> {
    let mut next = start_offset;
    loop {
        // Out-of-range offsets are the log's error; at the log end the slice is empty.
        let data = log.read(next, FETCH_BYTES, Isolation::LogEnd, true)?;
        if data.slice.is_empty() {
            break;
        }
        let path = data.slice.path().to_owned();
        let bytes = data.slice.read_to_vec()?;
        let before = next;
        // The slice may end inside a batch (cut by FETCH_BYTES); Batches stops quietly there.
        for batch in Batches::new(&bytes, data.slice.position()) {
            let batch = batch.map_err(|source| Error::Damaged {
                path: path.clone(),
                source,
            })?;
            let header = *batch.header();
            if header.last_offset < next {
                continue;
            }
            // A consumer checks every batch's CRC (Kafka's `check.crcs=true`): a damaged
            // batch is an error naming the file and its position, never printed as data.
            batch.ensure_valid().map_err(|source| Error::Damaged {
                path: path.clone(),
                source,
            })?;
            for record in batch.records(MAX_DECOMPRESSED_BYTES) {
                let record = record.map_err(|source| Error::Damaged {
                    path: path.clone(),
                    source,
                })?;
                if record.offset < next {
                    continue;
                }
                let offset = record.offset;
                if f(&header, record)?.is_break() {
                    return Ok(ScanEnd {
                        next_offset: offset + 1,
                        stopped: true,
                    });
                }
            }
            next = header.last_offset + 1;
        }
        if next == before {
            // No whole batch in the slice: cannot happen with min_one_message, but never spin.
            break;
        }
    }
    Ok(ScanEnd {
        next_offset: next,
        stopped: false,
    })
}
