//! `seglog verify DIR`: a read-only consistency check of a whole log, at file level.
//!
//! It walks every `.log` batch by batch (checksums, record structure, offsets increasing within
//! and across segments) and checks every `.index` / `.timeindex` entry against the batches it
//! points at. It reports every problem with its file and byte position instead of stopping at
//! the first. Missing index files are notes, not problems: Kafka (and seglog) rebuild them
//! when the segment is loaded. Producer `.snapshot` files must decode (version, length,
//! CRC-32C) and `leader-epoch-checkpoint` must parse.

use std::path::{Path, PathBuf};

use seglog_index_core::{OffsetIndex, TimeIndex};
use seglog_records::Batches;
use serde::Serialize;

use crate::Outcome;
use crate::cli::VerifyArgs;
use crate::dir::{DirListing, SegmentFiles};
use crate::error::Error;
use crate::output::{Out, emit_report};
use crate::progress::Progress;
use crate::view::MAX_DECOMPRESSED_BYTES;

/// What kind of problem was found (the `kind` JSON field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A batch's stored checksum does not match its bytes.
    CrcMismatch,
    /// Bytes that cannot be a batch (bad length or magic); the rest of the file is unreadable.
    CorruptBatch,
    /// Zero bytes where a batch should start: a preallocated or never-written tail.
    ZeroTail,
    /// An incomplete batch at the end of a `.log` (a torn write).
    TornTail,
    /// A batch's records cannot be decoded (the checksum matched).
    InvalidRecords,
    /// Offsets do not increase from batch to batch (within or across segments).
    OffsetOrder,
    /// A batch's offsets lie below its segment's base offset, or too far above it.
    OffsetOutOfSegment,
    /// The file length is not a whole number of index entries.
    IndexLength,
    /// An index ends in all-zero entries (an untrimmed, preallocated index).
    IndexZeroPadding,
    /// Index entries do not increase.
    IndexOrder,
    /// An offset-index position is not the start of a batch.
    IndexPosition,
    /// An index entry's offset does not match the log.
    IndexOffset,
    /// A time-index timestamp does not match the log.
    IndexTimestamp,
    /// A `.deleted`, `.cleaned` or `.swap` file: an interrupted delete, clean or swap.
    Leftover,
    /// An index file without its `.log`.
    OrphanIndex,
    /// A file named like a segment file but not as Kafka names them (e.g. `123.log`): the log
    /// ignores it, a broker would load it as a segment whose offsets overlap others.
    StrayFile,
    /// The log-start checkpoint names an offset beyond the log end (Kafka would delete every
    /// segment; seglog ignores it, and `recover` rewrites it).
    LogStartBeyondEnd,
    /// A producer `.snapshot` that does not decode (bad version, length or CRC-32C: Kafka's
    /// `CorruptSnapshotException`; a broker skips it and rebuilds the state from the log).
    CorruptSnapshot,
    /// `leader-epoch-checkpoint` does not parse (a broker fails the log directory; seglog
    /// rebuilds it from the batches, and `recover` rewrites it).
    CorruptLeaderEpochCheckpoint,
    /// A file named like a segment file that is not a regular file (a directory, FIFO,
    /// device, or a symlink to one or to nowhere): nothing reads it, and the log cannot load.
    NotAFile,
    /// A `.txnindex` whose entries differ from the aborted transactions its segment's ABORT
    /// markers give (as Kafka's recovery rebuilds them; `seglog recover` rewrites it).
    TxnIndexMismatch,
}

/// One finding: the file, the byte position in it (when there is one) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// Byte position in that file.
    pub position: Option<u64>,
    /// What kind of problem.
    pub kind: ProblemKind,
    /// A sentence saying exactly what is wrong.
    pub message: String,
}

/// A note that is not a problem (e.g. an index Kafka would rebuild).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// The file.
    pub file: PathBuf,
    /// What was noticed.
    pub message: String,
}

/// The result of verifying one log directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The directory.
    pub dir: PathBuf,
    /// True when no problem was found.
    pub ok: bool,
    /// Segments (`.log` files).
    pub segments: u64,
    /// Batches read (legacy messages count one each).
    pub batches: u64,
    /// Records decoded, control records included.
    pub records: u64,
    /// Bytes of `.log` files.
    pub bytes: u64,
    /// Index entries checked (both kinds).
    pub index_entries: u64,
    /// Everything wrong, in file order.
    pub problems: Vec<Problem>,
    /// Things worth knowing that are not wrong.
    pub notes: Vec<Note>,
}

/// Runs `seglog verify`.
///
/// # Errors
/// A missing or unreadable directory; stdout errors. Problems in the log are not errors.
pub fn run(args: &VerifyArgs, quiet: bool) -> Result<Outcome, Error> {
    let report = verify_dir(&args.dir, quiet)?;
    emit_report(args.json, &report, print_report)?;
    Ok(if report.ok {
        Outcome::Ok
    } else {
        Outcome::ProblemsFound
    })
}

/// Prints a report as text.
///
/// # Errors
/// Stdout errors.
pub fn print_report(out: &mut Out, report: &VerifyReport) -> Result<(), Error> {
    for p in &report.problems {
        let at = p
            .position
            .map_or(String::new(), |pos| format!(" at byte {pos}"));
        out.line(format_args!(
            "problem: {}{at}: {}",
            p.file.display(),
            p.message
        ))?;
    }
    for n in &report.notes {
        out.line(format_args!("note: {}: {}", n.file.display(), n.message))?;
    }
    out.line(format_args!(
        "{}: {} segments, {} batches, {} records, {} bytes, {} index entries: {}",
        report.dir.display(),
        report.segments,
        report.batches,
        report.records,
        report.bytes,
        report.index_entries,
        if report.ok {
            "OK".to_owned()
        } else {
            format!("{} problems", report.problems.len())
        }
    ))
}

/// Verifies the log in `dir` without writing anything.
///
/// # Errors
/// [`Error::NotFound`] / [`Error::WrongKind`] for a bad `dir`; I/O errors reading files.
pub fn verify_dir(dir: &Path, quiet: bool) -> Result<VerifyReport, Error> {
    let listing = DirListing::partition_lenient(dir)?;
    let mut v = Verifier {
        report: VerifyReport {
            dir: dir.to_owned(),
            ..Default::default()
        },
        last_offset: None,
    };
    let total: u64 = listing
        .segments
        .values()
        .filter_map(|s| s.log.as_ref())
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let progress = Progress::bytes(total, "verify", quiet);
    for (path, what) in &listing.irregular {
        v.problem(path, None, ProblemKind::NotAFile, what.clone());
    }
    for path in &listing.strays {
        v.problem(
            path,
            None,
            ProblemKind::StrayFile,
            "not a segment this log can hold (a name other than Kafka's 20-digit base offset, or base offset i64::MAX, after which no offset fits): ignored by seglog, loaded as a segment by a broker; move it out".into(),
        );
    }
    for path in &listing.leftovers {
        v.problem(
            path,
            None,
            ProblemKind::Leftover,
            "left over from an interrupted delete, clean or swap".into(),
        );
    }
    for path in &listing.snapshots {
        match std::fs::read(path) {
            Ok(bytes) => {
                if let Err(problem) = seglog::ProducerSnapshot::decode(&bytes) {
                    v.problem(
                        path,
                        None,
                        ProblemKind::CorruptSnapshot,
                        problem.to_string(),
                    );
                }
            }
            Err(e) => v.problem(path, None, ProblemKind::CorruptSnapshot, e.to_string()),
        }
    }
    let epochs = seglog::LeaderEpochCheckpointFile::in_dir(dir);
    if let Err(e) = epochs.read() {
        v.problem(
            epochs.path(),
            None,
            ProblemKind::CorruptLeaderEpochCheckpoint,
            format!("{e} (the log rebuilds it from the batches; `seglog recover` rewrites it)"),
        );
    }
    // Only segments with a `.log` bound each other; an orphan index is reported on its own.
    let bases: Vec<i64> = listing
        .segments
        .iter()
        .filter(|(_, f)| f.log.is_some())
        .map(|(b, _)| *b)
        .collect();
    for (&base, files) in &listing.segments {
        let next_base = bases.iter().copied().find(|b| *b > base);
        v.segment(base, next_base, files)?;
        if let Some(log) = &files.log {
            progress.inc(std::fs::metadata(log).map_or(0, |m| m.len()));
        }
    }
    progress.finish();
    if listing.segments.values().all(|s| s.log.is_none()) {
        v.report.notes.push(Note {
            file: dir.to_owned(),
            message: "no segments (an empty log)".into(),
        });
    }
    // What the loader would make of the directory's state files (read-only: nothing is
    // written). A log that does not load is already reported by the checks above.
    if listing.irregular.is_empty()
        && let Ok(log) = seglog::Log::open_read_only(dir, seglog::LogConfig::default())
        && let Some(start) = log.load_report().log_start_beyond_end
    {
        let file = dir.join(seglog::LOG_START_OFFSET_CHECKPOINT);
        let file = if file.exists() {
            file
        } else {
            dir.parent().map_or(file.clone(), |p| {
                p.join(seglog::LOG_START_OFFSET_CHECKPOINT)
            })
        };
        v.problem(
            &file,
            None,
            ProblemKind::LogStartBeyondEnd,
            format!(
                "log start offset {start} lies beyond the log end {} (ignored; `seglog recover` rewrites it)",
                log.log_end_offset()
            ),
        );
    }
    if listing.irregular.is_empty() {
        check_txn_indexes(&mut v, dir);
    }
    v.report.ok = v.report.problems.is_empty();
    Ok(v.report)
}

/// Every `.txnindex` against the entries a full recovery rebuilds from the markers (in
/// memory: read-only).
fn check_txn_indexes(v: &mut Verifier, dir: &Path) {
    let options = seglog::LogOpenOptions {
        read_only: true,
        recover_all: true,
        ..seglog::LogOpenOptions::default()
    };
    let Ok(log) = seglog::Log::open_with(dir, seglog::LogConfig::default(), options) else {
        return;
    };
    let Ok(expected) = log.txn_index_entries() else {
        return;
    };
    let expected: std::collections::BTreeMap<i64, Vec<seglog::AbortedTxn>> =
        expected.into_iter().collect();
    for segment in log.segments() {
        let path = seglog_segment::file_path(
            dir,
            segment.base_offset,
            seglog_segment::FileKind::TXN_INDEX,
        );
        let on_disk = match std::fs::read(&path) {
            Ok(bytes) => match seglog::decode_txn_index(&bytes) {
                Ok(entries) => entries,
                Err((position, version)) => {
                    v.problem(
                        &path,
                        Some(position),
                        ProblemKind::TxnIndexMismatch,
                        format!("entry of unknown version {version}"),
                    );
                    continue;
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                v.problem(&path, None, ProblemKind::TxnIndexMismatch, e.to_string());
                continue;
            }
        };
        let want = expected
            .get(&segment.base_offset)
            .cloned()
            .unwrap_or_default();
        if on_disk != want {
            let at = on_disk
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(on_disk.len().min(want.len()));
            v.problem(
                &path,
                Some((at * seglog::AbortedTxn::SIZE) as u64),
                ProblemKind::TxnIndexMismatch,
                format!(
                    "{} aborted transactions, the segment's ABORT markers give {} (first difference at entry {at}); `seglog recover` rewrites it",
                    on_disk.len(),
                    want.len()
                ),
            );
        }
    }
}

/// A batch as the index checks need it.
#[derive(Debug, Clone, Copy)]
struct BatchInfo {
    position: u64,
    /// First offset (for a legacy compressed wrapper: the previous batch's last offset + 1).
    first_offset: i64,
    last_offset: i64,
    /// Largest batch max timestamp up to and including this batch.
    running_max_timestamp: i64,
}

struct Verifier {
    report: VerifyReport,
    /// Last offset of the previous batch, across segments.
    last_offset: Option<i64>,
}

impl Verifier {
    fn problem(&mut self, file: &Path, position: Option<u64>, kind: ProblemKind, message: String) {
        self.report.problems.push(Problem {
            file: file.to_owned(),
            position,
            kind,
            message,
        });
    }

    fn note(&mut self, file: &Path, message: &str) {
        self.report.notes.push(Note {
            file: file.to_owned(),
            message: message.to_owned(),
        });
    }

    fn segment(
        &mut self,
        base: i64,
        next_base: Option<i64>,
        files: &SegmentFiles,
    ) -> Result<(), Error> {
        let Some(log) = &files.log else {
            for index in [&files.index, &files.time_index, &files.txn_index]
                .into_iter()
                .flatten()
            {
                self.problem(
                    index,
                    None,
                    ProblemKind::OrphanIndex,
                    format!("no {base:020}.log for this index"),
                );
            }
            return Ok(());
        };
        self.report.segments += 1;
        let batches = self.log(log, base, next_base)?;
        match &files.index {
            Some(index) => self.offset_index(index, base, &batches)?,
            None => self.note(
                log,
                "no .index file; it is rebuilt when the segment is recovered",
            ),
        }
        match &files.time_index {
            Some(index) => self.time_index(index, base, &batches)?,
            None => self.note(
                log,
                "no .timeindex file; it is rebuilt when the segment is recovered",
            ),
        }
        Ok(())
    }

    fn log(
        &mut self,
        path: &Path,
        base: i64,
        next_base: Option<i64>,
    ) -> Result<Vec<BatchInfo>, Error> {
        let bytes = std::fs::read(path).map_err(Error::io("read", path))?;
        self.report.bytes += bytes.len() as u64;
        let mut infos = Vec::new();
        let mut running_max = -1i64;
        // Batches outside the segment's range are one problem (the first), not one per batch.
        let mut outside_reported = false;
        let mut iter = Batches::new(&bytes, 0);
        for batch in iter.by_ref() {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    let position = e.position().unwrap_or(0);
                    let rest = bytes.get(position as usize..).unwrap_or(&[]);
                    if rest.iter().all(|b| *b == 0) {
                        let msg = format!(
                            "{} zero bytes to the end of the file (preallocated or never written)",
                            rest.len()
                        );
                        self.problem(path, Some(position), ProblemKind::ZeroTail, msg);
                    } else {
                        let msg = format!("{e}; the remaining {} bytes cannot be read", rest.len());
                        self.problem(path, Some(position), ProblemKind::CorruptBatch, msg);
                    }
                    break;
                }
            };
            let h = *batch.header();
            self.report.batches += 1;
            let position = Some(h.position);
            let crc_ok = match batch.ensure_valid() {
                Ok(()) => true,
                Err(e) => {
                    self.problem(path, position, ProblemKind::CrcMismatch, e.to_string());
                    false
                }
            };
            // Records are decoded only when the CRC holds. A legacy compressed wrapper names
            // only its last offset: its first is its first inner message's, resolved as a
            // reader resolves it (v1 inner offsets relative to the wrapper, v0 absolute).
            let mut offsets = Vec::new();
            if crc_ok {
                for record in batch.records(MAX_DECOMPRESSED_BYTES) {
                    match record {
                        Ok(r) => offsets.push(r.offset),
                        Err(e) => {
                            let at = e.position().or(position);
                            self.problem(path, at, ProblemKind::InvalidRecords, e.to_string());
                        }
                    }
                }
            }
            self.report.records += offsets.len() as u64;
            let first_offset = h.base_offset.unwrap_or_else(|| match offsets.first() {
                Some(first) => *first,
                None => self.last_offset.map_or(h.last_offset, |l| l + 1),
            });
            if let Some(prev) = self.last_offset
                && (first_offset <= prev || h.last_offset <= prev)
            {
                let msg = format!(
                    "batch offsets {first_offset}..={} do not follow the previous batch's last offset {prev}",
                    h.last_offset
                );
                self.problem(path, position, ProblemKind::OffsetOrder, msg);
            }
            let too_high = h.last_offset - base > i64::from(i32::MAX)
                || next_base.is_some_and(|n| h.last_offset >= n);
            if (first_offset < base || too_high) && !outside_reported {
                outside_reported = true;
                let msg = format!(
                    "batch offsets {first_offset}..={} are outside segment {base}{} (later batches not reported)",
                    h.last_offset,
                    next_base.map_or(String::new(), |n| format!(" (next segment starts at {n})"))
                );
                self.problem(path, position, ProblemKind::OffsetOutOfSegment, msg);
            }
            let out_of_order = offsets.iter().enumerate().find(|&(i, &offset)| {
                offset < first_offset
                    || offset > h.last_offset
                    || (i > 0 && offset <= offsets[i - 1])
            });
            if let Some((_, offset)) = out_of_order {
                let msg = format!(
                    "record offset {offset} is out of order or outside its batch's {first_offset}..={}",
                    h.last_offset
                );
                self.problem(path, position, ProblemKind::InvalidRecords, msg);
            }
            running_max = running_max.max(h.max_timestamp_ms);
            infos.push(BatchInfo {
                position: h.position,
                first_offset,
                last_offset: h.last_offset,
                running_max_timestamp: running_max,
            });
            self.last_offset = Some(
                self.last_offset
                    .map_or(h.last_offset, |l| l.max(h.last_offset)),
            );
        }
        let tail = iter.partial_tail_bytes();
        if tail > 0 {
            let msg = format!("{tail} bytes of an incomplete batch at the end (a torn write)");
            self.problem(path, Some(iter.position()), ProblemKind::TornTail, msg);
        }
        Ok(infos)
    }

    fn offset_index(&mut self, path: &Path, base: i64, batches: &[BatchInfo]) -> Result<(), Error> {
        let index = OffsetIndex::open_read_only(path, base)?;
        self.index_length(path, index.file_len(), 8);
        let entries: Vec<_> = (0..index.entries()).map_while(|n| index.entry(n)).collect();
        let valid =
            self.index_zero_padding(path, &entries, 8, |e| e.offset == base && e.position == 0);
        self.report.index_entries += valid as u64;
        let mut previous: Option<(i64, u32)> = None;
        for (slot, e) in entries[..valid].iter().enumerate() {
            let at = Some(slot as u64 * 8);
            if previous.is_some_and(|(o, p)| e.offset <= o || e.position <= p) {
                let msg = format!(
                    "entry {slot} (offset {}, position {}) does not increase",
                    e.offset, e.position
                );
                self.problem(path, at, ProblemKind::IndexOrder, msg);
            }
            previous = Some((e.offset, e.position));
            let Ok(i) = batches.binary_search_by_key(&u64::from(e.position), |b| b.position) else {
                let msg = format!(
                    "entry {slot}: position {} is not the start of a batch",
                    e.position
                );
                self.problem(path, at, ProblemKind::IndexPosition, msg);
                continue;
            };
            let batch = batches[i];
            if e.offset == batch.last_offset {
                continue;
            }
            // A follower appends several batches at once and indexes the last offset of the
            // chunk at the chunk's first position: not what a leader writes, but lookups stay
            // correct as long as that offset ends a later batch.
            if e.offset > batch.last_offset
                && batches[i..].iter().any(|b| b.last_offset == e.offset)
            {
                let msg = format!(
                    "entry {slot} (offset {}, position {}) points at a batch ending at offset {} \
                     (a multi-batch append, as a follower writes; lookups are still correct)",
                    e.offset, e.position, batch.last_offset
                );
                self.note(path, &msg);
                continue;
            }
            let msg = format!(
                "entry {slot}: offset {} at position {}, but the batch there holds offsets {}..={}",
                e.offset, e.position, batch.first_offset, batch.last_offset
            );
            self.problem(path, at, ProblemKind::IndexOffset, msg);
        }
        Ok(())
    }

    /// Reports an index file whose length is not a whole number of `entry_size`-byte entries.
    fn index_length(&mut self, path: &Path, len: u64, entry_size: u64) {
        if !len.is_multiple_of(entry_size) {
            self.problem(
                path,
                Some(len - len % entry_size),
                ProblemKind::IndexLength,
                format!("length {len} is not a multiple of {entry_size}"),
            );
        }
    }

    /// Reports the run of zero-padding entries (`is_padding`) at the end of an index, as an
    /// untrimmed preallocated index has, and returns how many entries precede it.
    fn index_zero_padding<E>(
        &mut self,
        path: &Path,
        entries: &[E],
        entry_size: u64,
        is_padding: impl Fn(&E) -> bool,
    ) -> usize {
        let zero_tail = entries.iter().rev().take_while(|e| is_padding(e)).count();
        let valid = entries.len() - zero_tail;
        if zero_tail > 0 {
            let msg = format!(
                "{zero_tail} of {} entries are zero padding (an untrimmed, preallocated index)",
                entries.len()
            );
            self.problem(
                path,
                Some(valid as u64 * entry_size),
                ProblemKind::IndexZeroPadding,
                msg,
            );
        }
        valid
    }

    fn time_index(&mut self, path: &Path, base: i64, batches: &[BatchInfo]) -> Result<(), Error> {
        let index = TimeIndex::open_read_only(path, base)?;
        self.index_length(path, index.file_len(), 12);
        let entries: Vec<_> = (0..index.entries()).map_while(|n| index.entry(n)).collect();
        let valid = self.index_zero_padding(path, &entries, 12, |e| {
            e.timestamp_ms == 0 && e.offset == base
        });
        self.report.index_entries += valid as u64;
        let mut previous: Option<(i64, i64)> = None;
        for (slot, e) in entries[..valid].iter().enumerate() {
            let at = Some(slot as u64 * 12);
            if previous.is_some_and(|(t, o)| e.timestamp_ms <= t || e.offset < o) {
                let msg = format!(
                    "entry {slot} (timestamp {}, offset {}) does not increase",
                    e.timestamp_ms, e.offset
                );
                self.problem(path, at, ProblemKind::IndexOrder, msg);
            }
            previous = Some((e.timestamp_ms, e.offset));
            let holder = batches
                .iter()
                .find(|b| b.first_offset <= e.offset && e.offset <= b.last_offset);
            let Some(batch) = holder else {
                let msg = format!(
                    "entry {slot}: offset {} is in no batch of this segment",
                    e.offset
                );
                self.problem(path, at, ProblemKind::IndexOffset, msg);
                continue;
            };
            if e.timestamp_ms != batch.running_max_timestamp {
                let msg = format!(
                    "entry {slot}: timestamp {} at offset {}, but the largest timestamp up to that batch is {}",
                    e.timestamp_ms, e.offset, batch.running_max_timestamp
                );
                self.problem(path, at, ProblemKind::IndexTimestamp, msg);
            }
        }
        Ok(())
    }
}
