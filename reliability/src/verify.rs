//! Reading a whole log back and checking it: every batch's CRC, every record's content, no gap,
//! nothing past the log end, and every acknowledged record present and identical.

use std::collections::BTreeMap;
use std::fmt;

use seglog::{Batches, Isolation, Log};

use crate::payload::RecordId;

/// A broken guarantee, described for a human (the suites print it with the seed that
/// reproduces it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Violation {}

/// Builds a [`Violation`] from `format!` arguments.
#[macro_export]
macro_rules! violation {
    ($($arg:tt)*) => { $crate::Violation(format!($($arg)*)) };
}

/// One record as served by the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServedRecord {
    /// Its offset.
    pub offset: i64,
    /// Who wrote it (parsed from the key; the value and timestamp were checked against it).
    pub id: RecordId,
}

/// Everything a log serves, from its log start offset to its log end offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogContents {
    /// The log start offset when the read began.
    pub log_start_offset: i64,
    /// The log end offset when the read began.
    pub log_end_offset: i64,
    /// Every record in `[log_start_offset, log_end_offset)`, in offset order.
    pub records: Vec<ServedRecord>,
    /// Offset ranges `[from, to)` inside `[log_start_offset, log_end_offset)` that hold no
    /// record (only [`read_log_with_gaps`] accepts them).
    pub gaps: Vec<(i64, i64)>,
}

impl LogContents {
    /// The record at `offset`, if served.
    pub fn get(&self, offset: i64) -> Option<ServedRecord> {
        let index = self
            .records
            .binary_search_by_key(&offset, |r| r.offset)
            .ok()?;
        self.records.get(index).copied()
    }
}

/// Reads every record of `log` up to its log end offset and checks the invariants every served
/// byte must satisfy, whatever happened before: whole batches with valid CRCs, records whose
/// content matches their key ([`RecordId`]), consecutive offsets from the log start offset to
/// the log end offset (no gap, nothing beyond the end), and an empty read at the end.
///
/// # Errors
/// The first [`Violation`] found, or a read error turned into one.
pub fn read_log(log: &Log) -> Result<LogContents, Violation> {
    read(log, false)
}

/// [`read_log`], except that offset gaps are recorded in [`LogContents::gaps`] instead of being
/// a violation (every other check still applies).
///
/// # Errors
/// As [`read_log`].
pub fn read_log_with_gaps(log: &Log) -> Result<LogContents, Violation> {
    read(log, true)
}

fn read(log: &Log, allow_gaps: bool) -> Result<LogContents, Violation> {
    let log_start_offset = log.log_start_offset();
    let log_end_offset = log.log_end_offset();
    let mut records = Vec::new();
    let mut gaps = Vec::new();
    let mut next = log_start_offset;
    while next < log_end_offset {
        let data = log
            .read(next, 256 * 1024, Isolation::LogEnd, true)
            .map_err(|e| {
                violation!("read at {next} (log {log_start_offset}..{log_end_offset}): {e}")
            })?;
        if data.slice.is_empty() && allow_gaps {
            gaps.push((next, log_end_offset));
            break;
        }
        if data.slice.is_empty() {
            return Err(violation!(
                "read at {next} returned nothing, but the log end offset is {log_end_offset}"
            ));
        }
        let bytes = data
            .slice
            .read_to_vec()
            .map_err(|e| violation!("reading the slice at {next}: {e}"))?;
        let before = next;
        let gaps = allow_gaps.then_some(&mut gaps);
        next = check_batches(
            &bytes,
            data.slice.position(),
            next,
            log_end_offset,
            &mut records,
            gaps,
        )?;
        if next == before {
            return Err(violation!(
                "read at {next} returned {} bytes without a whole batch",
                bytes.len()
            ));
        }
    }
    // Nothing beyond the end.
    match log.read(log_end_offset, 4096, Isolation::LogEnd, true) {
        Ok(data) if data.slice.is_empty() => {}
        Ok(data) => {
            return Err(violation!(
                "a read at the log end offset {log_end_offset} served {} bytes",
                data.slice.len()
            ));
        }
        Err(e) => {
            return Err(violation!(
                "read at the log end offset {log_end_offset}: {e}"
            ));
        }
    }
    Ok(LogContents {
        log_start_offset,
        log_end_offset,
        records,
        gaps,
    })
}

/// Checks the whole batches of one fetched region, appending their records at or above
/// `next` to `out`. Returns the offset after the last whole batch.
fn check_batches(
    bytes: &[u8],
    position: u64,
    mut next: i64,
    log_end_offset: i64,
    out: &mut Vec<ServedRecord>,
    mut gaps: Option<&mut Vec<(i64, i64)>>,
) -> Result<i64, Violation> {
    for batch in Batches::new(bytes, position) {
        let batch =
            batch.map_err(|e| violation!("served bytes at {position} do not parse: {e}"))?;
        batch
            .ensure_valid()
            .map_err(|e| violation!("a served batch is corrupt: {e}"))?;
        let last_offset = batch.header().last_offset;
        if last_offset >= log_end_offset {
            return Err(violation!(
                "served a batch ending at offset {last_offset}, beyond the log end offset \
                 {log_end_offset}"
            ));
        }
        for record in batch.records(64 << 20) {
            let record = record.map_err(|e| violation!("a served record is malformed: {e}"))?;
            if record.offset < next {
                continue; // A fetch starts at a batch boundary, below the asked offset.
            }
            if record.offset > next
                && let Some(gaps) = gaps.as_deref_mut()
            {
                gaps.push((next, record.offset));
                next = record.offset;
            }
            if record.offset != next {
                return Err(violation!(
                    "gap: expected offset {next}, the log served {}",
                    record.offset
                ));
            }
            let id = record
                .key
                .as_deref()
                .and_then(RecordId::parse_key)
                .ok_or_else(|| violation!("record {} has a key we never wrote", record.offset))?;
            if record.value.as_deref() != Some(&id.value()[..]) {
                return Err(violation!(
                    "record {} ({id:?}) has a value that differs from what was written",
                    record.offset
                ));
            }
            if record.timestamp_ms != Some(id.timestamp_ms()) {
                return Err(violation!(
                    "record {} ({id:?}) has timestamp {:?}, wrote {}",
                    record.offset,
                    record.timestamp_ms,
                    id.timestamp_ms()
                ));
            }
            out.push(ServedRecord {
                offset: record.offset,
                id,
            });
            next += 1;
        }
        next = next.max(last_offset + 1);
    }
    Ok(next)
}

/// Checks that every acknowledged record at or above the log start offset is served, at its
/// offset, with the content that was acknowledged; and that no record was written twice.
///
/// # Errors
/// The first [`Violation`].
pub fn check_acknowledged(
    contents: &LogContents,
    acknowledged: &BTreeMap<i64, RecordId>,
) -> Result<(), Violation> {
    for (&offset, &id) in acknowledged.range(contents.log_start_offset..) {
        match contents.get(offset) {
            Some(served) if served.id == id => {}
            Some(served) => {
                return Err(violation!(
                    "acknowledged offset {offset} was {id:?}, the log serves {:?}",
                    served.id
                ));
            }
            None => {
                return Err(violation!(
                    "acknowledged offset {offset} ({id:?}) is lost: the log ends at {}",
                    contents.log_end_offset
                ));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for record in &contents.records {
        if !seen.insert(record.id) {
            return Err(violation!(
                "{:?} is served twice (again at offset {})",
                record.id,
                record.offset
            ));
        }
    }
    Ok(())
}
