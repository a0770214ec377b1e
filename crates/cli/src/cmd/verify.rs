//! `seglog verify DIR`: a read-only consistency check of a whole log, at file level.
//!
//! It walks every `.log` batch by batch (checksums, record structure, offsets increasing within
//! and across segments) and checks every `.index` / `.timeindex` entry against the batches it
//! points at. It reports every problem with its file and byte position instead of stopping at
//! the first. Missing index files are notes, not problems: Kafka (and seglog) rebuild them
//! when the segment is loaded. Producer `.snapshot` files must decode (version, length,
//! CRC-32C) and `leader-epoch-checkpoint` must parse.
//!
//! With `--store URL` the finished segments of a tiered partition's remote tier are checked
//! too, first (`remote.rs`); without it, a partition whose older data is remote says so in a
//! note.

mod remote;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use seglog_index_core::{OffsetEntry, OffsetPosition, TimeEntry, TimestampOffset};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{RemoteArgs, VerifyArgs};
use crate::dir::{DirListing, SegmentFiles};
use crate::error::Error;
use crate::log_stream::{
    DEFAULT_MAX_BATCH_BYTES, End, EntryStream, LogStream, MAX_SNAPSHOT_BYTES, Step, read_bounded,
};
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
    /// markers give (as Kafka's recovery rebuilds them; `seglog recover` rewrites it), or that
    /// fails the checks the log runs at first use.
    TxnIndexMismatch,
    /// A `<base>.log.damaged` that `recover` set aside (damaged from its first byte in
    /// flushed data): its bytes are kept, its records are not served.
    DamagedSetAside,
    /// A part of a finished remote segment is missing from the store (`--store`).
    RemotePartMissing,
    /// A remote `.log`'s size differs from its metadata's `segment_size_in_bytes`.
    RemoteSizeMismatch,
    /// Offsets in neither tier: a remote segment does not follow the previous one, or the
    /// last one ends before the local log starts.
    RemoteGap,
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
    /// Segments (`.log` files), the remote ones included.
    pub segments: u64,
    /// Of these, remote segments checked (`--store`).
    pub remote_segments: u64,
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
    let report = verify_tiered(&args.dir, quiet, args.max_batch_bytes, &args.remote)?;
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
    let remote = if report.remote_segments > 0 {
        format!(" ({} remote)", report.remote_segments)
    } else {
        String::new()
    };
    out.line(format_args!(
        "{}: {} segments{remote}, {} batches, {} records, {} bytes, {} index entries: {}",
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

/// Verifies the log in `dir` without writing anything, with the default bound on one batch's
/// size ([`verify_dir_with`]).
///
/// # Errors
/// [`Error::NotFound`] / [`Error::WrongKind`] for a bad `dir`; I/O errors reading files.
pub fn verify_dir(dir: &Path, quiet: bool) -> Result<VerifyReport, Error> {
    verify_dir_with(dir, quiet, DEFAULT_MAX_BATCH_BYTES)
}

/// Verifies the log in `dir` without writing anything. Files are streamed (memory stays
/// bounded by `max_batch_bytes` and a read chunk, whatever their size); a batch longer than
/// `max_batch_bytes` is reported as a corrupt batch at its position.
///
/// # Errors
/// [`Error::NotFound`] / [`Error::WrongKind`] for a bad `dir`; I/O errors reading files.
pub fn verify_dir_with(
    dir: &Path,
    quiet: bool,
    max_batch_bytes: u32,
) -> Result<VerifyReport, Error> {
    verify_tiered(dir, quiet, max_batch_bytes, &RemoteArgs::default())
}

/// [`verify_dir_with`], and with `--store` the remote tier's finished segments first.
fn verify_tiered(
    dir: &Path,
    quiet: bool,
    max_batch_bytes: u32,
    remote_args: &RemoteArgs,
) -> Result<VerifyReport, Error> {
    let listing = DirListing::partition_lenient(dir)?;
    let remote = remote_args
        .store
        .as_deref()
        .map(|store| crate::remote::open_remote(dir, store, remote_args.topic_id.as_deref()))
        .transpose()?;
    let mut v = Verifier {
        report: VerifyReport {
            dir: dir.to_owned(),
            ..Default::default()
        },
        last_offset: None,
        max_batch_bytes,
        oversized_batch: false,
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
    for (path, base, len) in listing.set_aside() {
        v.problem(
            &path,
            Some(0),
            ProblemKind::DamagedSetAside,
            format!("{len} bytes from offset {base} set aside by `seglog recover` (damaged from the first byte): kept, not served"),
        );
    }
    // What the loader makes of the leftovers (read-only: nothing is renamed).
    let resolved = (!listing.leftovers.is_empty() && listing.irregular.is_empty())
        .then(|| seglog::Log::open_read_only(dir, seglog::LogConfig::default()).ok())
        .flatten()
        .map(|log| log.load_report().clone());
    for path in &listing.leftovers {
        v.problem(
            path,
            None,
            ProblemKind::Leftover,
            leftover_message(path, resolved.as_ref()),
        );
    }
    for path in &listing.snapshots {
        match read_bounded(path, MAX_SNAPSHOT_BYTES) {
            Ok(Ok(bytes)) => {
                if let Err(problem) = seglog::ProducerSnapshot::decode(&bytes) {
                    v.problem(
                        path,
                        None,
                        ProblemKind::CorruptSnapshot,
                        problem.to_string(),
                    );
                }
            }
            Ok(Err(problem)) => v.problem(path, None, ProblemKind::CorruptSnapshot, problem),
            Err(e) => v.problem(
                path,
                None,
                ProblemKind::CorruptSnapshot,
                e.one_line().to_string(),
            ),
        }
    }
    let epochs = seglog::LeaderEpochCheckpointFile::in_dir(dir);
    // A checkpoint that is not a regular file (a FIFO, a directory) is reported above, once.
    let irregular = listing.irregular.iter().any(|(p, _)| p == epochs.path());
    if let Err(e) = epochs.read()
        && !irregular
    {
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
    // Where the checkpoint says the remote part starts (a read-only load; a directory that
    // does not load is reported by the checks below).
    // And its leader-epoch lineage, which picks the remote copies a read serves.
    let loaded = remote
        .as_ref()
        .filter(|_| listing.irregular.is_empty())
        .and_then(|_| seglog::Log::open_read_only(dir, seglog::LogConfig::default()).ok());
    let remote_start = loaded
        .as_ref()
        .and_then(|log| log.unattached_remote_start());
    let epochs = loaded.map(|log| log.leader_epochs()).unwrap_or_default();
    if let Some(remote) = &remote
        && let Some(remote_last) = remote::check_remote(
            &mut v,
            remote,
            remote_start,
            bases.first().copied(),
            &epochs,
        )?
    {
        // The local segments continue the offsets; those also in the remote tier (not yet
        // deleted by local retention) overlap it, as they may.
        v.last_offset = Some(
            bases
                .first()
                .map_or(remote_last, |b| remote_last.min(b - 1)),
        );
    }
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
    // written). A log that does not load is already reported by the checks above; nor is one
    // loaded whose batch exceeded the bound: the loader would read that batch whole (as
    // Kafka's recovery does), and the bound is what keeps `verify`'s memory small.
    let loaded = (listing.irregular.is_empty() && !v.oversized_batch)
        .then(|| seglog::Log::open_read_only(dir, seglog::LogConfig::default()).ok())
        .flatten();
    if remote.is_none()
        && let Some(log) = &loaded
        && let Some(note) = crate::remote::remote_part_note(log)
    {
        v.note(dir, &format!("{note} (not checked)"));
    }
    if let Some(log) = &loaded
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
    // Only a directory with producer state can hold transactions worth checking: the check
    // replays every batch, which a directory without any (a `.txnindex`, or a `.snapshot`
    // with a producer) is
    // spared (it also keeps verify's memory bounded on a log with a huge damaged batch).
    let has_producer_state = std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            // A snapshot of no producer is its 10-byte header.
            name.ends_with(".txnindex")
                || (name.ends_with(".snapshot") && e.metadata().is_ok_and(|m| m.len() > 10))
        })
    });
    if listing.irregular.is_empty() && has_producer_state {
        check_txn_indexes(&mut v, dir);
    }
    v.report.ok = v.report.problems.is_empty();
    Ok(v.report)
}

/// Every `.txnindex` against the entries a full recovery rebuilds from the markers (in
/// memory: read-only). An index equal to the rebuilt one passes at once. One that differs
/// passes when it is one Kafka's cleaner may leave (its `CleanedTransactionMetadata` keeps an
/// aborted transaction's entry in the round that removes the transaction's data, with the
/// ABORT marker, while a rebuild finds no data and so no entry; a later round drops the
/// entry, the marker stays until its delete horizon): every rebuilt entry is on disk (same
/// producer and marker, first offset no later, last stable offset no higher), every other
/// entry names an ABORT marker of its producer in the segment, and a `read_committed`
/// consumer fed the on-disk entries drops exactly the batches it drops with the rebuilt ones.
fn check_txn_indexes(v: &mut Verifier, dir: &Path) {
    let options = seglog::LogOpenOptions {
        read_only: true,
        recover_all: true,
        ..super::open_options()
    };
    let Ok(log) = seglog::Log::open_with(dir, seglog::LogConfig::default(), options) else {
        return;
    };
    let Ok(expected) = log.txn_index_entries() else {
        return;
    };
    let expected: std::collections::BTreeMap<i64, Vec<seglog::AbortedTxn>> =
        expected.into_iter().collect();
    let mut differing = Vec::new();
    let mut on_disk_all = Vec::new();
    for segment in log.segments() {
        let path = seglog_segment::file_path(
            dir,
            segment.base_offset,
            seglog_segment::FileKind::TXN_INDEX,
        );
        // Streamed and bounded by what the segment can hold, with the structural checks the
        // log runs at first use (a failure is reported; `seglog recover` rebuilds the file).
        let on_disk =
            match seglog_segment::read_txn_index(&path, segment.base_offset, segment.size_bytes) {
                Ok(entries) => entries,
                Err(seglog_segment::Error::Corrupt { position, kind, .. }) => {
                    v.problem(
                        &path,
                        Some(position),
                        ProblemKind::TxnIndexMismatch,
                        format!(
                            "{kind}; `seglog recover` rebuilds it from the segment's ABORT markers"
                        ),
                    );
                    continue;
                }
                Err(e) => {
                    v.problem(&path, None, ProblemKind::TxnIndexMismatch, e.to_string());
                    continue;
                }
            };
        let want = expected
            .get(&segment.base_offset)
            .cloned()
            .unwrap_or_default();
        on_disk_all.extend(on_disk.iter().copied());
        if on_disk != want {
            differing.push((segment.base_offset, path, on_disk, want));
        }
    }
    if differing.is_empty() {
        return;
    }
    let rebuilt: Vec<_> = expected.values().flatten().copied().collect();
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    // On a read error the walk reported the damage already: judge by equality alone.
    let replay = replay_read_committed(dir, &bases, &on_disk_all, &rebuilt, v.max_batch_bytes).ok();
    for (base, path, on_disk, want) in differing {
        let verdict = match &replay {
            Some(replay) => cleaned_index_fault(base, &on_disk, &want, replay),
            None => Some(String::from("the segment could not be read to compare")),
        };
        let Some(why) = verdict else { continue };
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
                "{} aborted transactions, the segment's ABORT markers give {} (first difference at entry {at}): {why}; `seglog recover` rewrites it",
                on_disk.len(),
                want.len()
            ),
        );
    }
}

/// What a replay of the log's batches found: the ABORT markers (producer, offset, segment
/// base) that hold a control record, and the data batches a `read_committed` consumer drops
/// with the on-disk entries and with the rebuilt ones.
struct Replay {
    aborts: std::collections::HashSet<(i64, i64, i64)>,
    dropped_on_disk: Vec<i64>,
    dropped_rebuilt: Vec<i64>,
}

/// A Kafka consumer's `read_committed` filter (`abortedProducerIds`): an aborted
/// transaction's producer is added when a batch reaches its first offset and removed at the
/// producer's ABORT marker; its transactional batches in between are dropped.
struct ConsumerFilter {
    pending: Vec<seglog::AbortedTxn>,
    aborted: std::collections::HashSet<i64>,
    dropped: Vec<i64>,
}

impl ConsumerFilter {
    fn new(entries: &[seglog::AbortedTxn]) -> Self {
        let mut pending = entries.to_vec();
        pending.sort_by_key(|t| std::cmp::Reverse(t.first_offset));
        ConsumerFilter {
            pending,
            aborted: Default::default(),
            dropped: Vec::new(),
        }
    }

    fn batch(&mut self, header: &seglog::BatchHeader, abort_marker: bool) {
        if header.producer_id < 0 {
            return;
        }
        while self
            .pending
            .last()
            .is_some_and(|t| t.first_offset <= header.last_offset)
        {
            if let Some(t) = self.pending.pop() {
                self.aborted.insert(t.producer_id);
            }
        }
        if abort_marker {
            self.aborted.remove(&header.producer_id);
        } else if !header.is_control
            && header.is_transactional
            && self.aborted.contains(&header.producer_id)
        {
            self.dropped.push(header.last_offset);
        }
    }
}

/// Streams every segment's batches once (one batch in memory at a time) through both filters.
fn replay_read_committed(
    dir: &Path,
    bases: &[i64],
    on_disk: &[seglog::AbortedTxn],
    rebuilt: &[seglog::AbortedTxn],
    max_batch_bytes: u32,
) -> Result<Replay, Error> {
    let mut with_disk = ConsumerFilter::new(on_disk);
    let mut with_rebuilt = ConsumerFilter::new(rebuilt);
    let mut aborts = std::collections::HashSet::new();
    for &base in bases {
        let path = seglog_segment::file_path(dir, base, seglog_segment::FileKind::LOG);
        let mut stream = LogStream::open(&path, max_batch_bytes)?;
        while let Step::Batch(batch) = stream.next_step()? {
            let header = *batch.header();
            let abort_marker = header.is_control
                && batch
                    .control_record()
                    .ok()
                    .flatten()
                    .is_some_and(|c| c.control_type == seglog::ControlRecordType::Abort);
            if abort_marker {
                aborts.insert((header.producer_id, header.last_offset, base));
            }
            with_disk.batch(&header, abort_marker);
            with_rebuilt.batch(&header, abort_marker);
        }
    }
    Ok(Replay {
        aborts,
        dropped_on_disk: with_disk.dropped,
        dropped_rebuilt: with_rebuilt.dropped,
    })
}

/// Why the `.txnindex` of segment `base` (`on_disk`, differing from the rebuilt `want`) is
/// not one Kafka's cleaner leaves; `None` when it is.
fn cleaned_index_fault(
    base: i64,
    on_disk: &[seglog::AbortedTxn],
    want: &[seglog::AbortedTxn],
    replay: &Replay,
) -> Option<String> {
    for w in want {
        let found = on_disk
            .iter()
            .find(|d| d.producer_id == w.producer_id && d.last_offset == w.last_offset);
        match found {
            None => {
                return Some(format!(
                    "no entry for producer {}'s aborted transaction ending at {}",
                    w.producer_id, w.last_offset
                ));
            }
            Some(d)
                if d.first_offset > w.first_offset
                    || d.last_stable_offset > w.last_stable_offset =>
            {
                return Some(format!(
                    "the entry of producer {} ending at {} starts at {} (last stable offset {}); its data starts at {} (last stable offset {})",
                    d.producer_id,
                    d.last_offset,
                    d.first_offset,
                    d.last_stable_offset,
                    w.first_offset,
                    w.last_stable_offset
                ));
            }
            Some(_) => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    for d in on_disk {
        if !seen.insert((d.producer_id, d.last_offset)) {
            return Some(format!(
                "two entries of producer {} ending at {}",
                d.producer_id, d.last_offset
            ));
        }
        if d.first_offset < 0
            || d.first_offset > d.last_offset
            || d.last_stable_offset > d.last_offset.saturating_add(1)
            || !replay
                .aborts
                .contains(&(d.producer_id, d.last_offset, base))
        {
            return Some(format!(
                "the entry of producer {} for offsets {}..={} (last stable offset {}) names no ABORT marker of its producer in the segment",
                d.producer_id, d.first_offset, d.last_offset, d.last_stable_offset
            ));
        }
    }
    if replay.dropped_on_disk != replay.dropped_rebuilt {
        let first = replay
            .dropped_on_disk
            .iter()
            .zip(&replay.dropped_rebuilt)
            .find(|(a, b)| a != b)
            .map_or_else(
                || {
                    let (a, b) = (&replay.dropped_on_disk, &replay.dropped_rebuilt);
                    if a.len() > b.len() {
                        a[b.len()]
                    } else {
                        b[a.len()]
                    }
                },
                |(a, b)| *a.min(b),
            );
        return Some(format!(
            "a read_committed consumer would treat the batch ending at offset {first} differently than the markers say"
        ));
    }
    None
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
    /// The bound on one batch's size.
    max_batch_bytes: u32,
    /// Whether a `.log` held a batch above the bound.
    oversized_batch: bool,
}

/// What an index check found, kept apart from the `.log`'s findings until the walk ends so
/// the report lists problems file by file.
#[derive(Default)]
struct Findings {
    problems: Vec<Problem>,
    notes: Vec<Note>,
    /// Entries checked (zero padding excluded).
    entries: u64,
}

impl Findings {
    fn problem(&mut self, file: &Path, position: Option<u64>, kind: ProblemKind, message: String) {
        self.problems.push(Problem {
            file: file.to_owned(),
            position,
            kind,
            message,
        });
    }
}

/// An index's entries in slot order, read a chunk at a time, holding back a run of
/// zero-padding entries until it is known whether the run ends the file (an untrimmed,
/// preallocated index) or real entries follow it (then the run's entries are yielded too).
struct IndexEntries<E, const N: usize> {
    stream: EntryStream<N>,
    decode: fn(&[u8; N], i64) -> E,
    is_padding: fn(&E, i64) -> bool,
    base: i64,
    /// The run of padding entries seen and not yet yielded: its first slot, length, entry.
    run: Option<(u64, u64, E)>,
    /// Run entries still to yield before `held`.
    run_left: u64,
    /// The entry that ended a run, yielded after it.
    held: Option<(u64, E)>,
    /// The entry `peek` returned, not consumed yet.
    peeked: Option<(u64, E)>,
    /// After the end: the trailing padding run (first slot, length).
    trailing_padding: Option<(u64, u64)>,
}

impl<E: Copy, const N: usize> IndexEntries<E, N> {
    fn new(
        stream: EntryStream<N>,
        base: i64,
        decode: fn(&[u8; N], i64) -> E,
        is_padding: fn(&E, i64) -> bool,
    ) -> Self {
        IndexEntries {
            stream,
            decode,
            is_padding,
            base,
            run: None,
            run_left: 0,
            held: None,
            peeked: None,
            trailing_padding: None,
        }
    }

    fn peek(&mut self) -> Result<Option<(u64, E)>, Error> {
        if self.peeked.is_none() {
            self.peeked = self.read_next()?;
        }
        Ok(self.peeked)
    }

    fn take(&mut self) {
        self.peeked = None;
    }

    fn read_next(&mut self) -> Result<Option<(u64, E)>, Error> {
        if self.run_left > 0
            && let Some((first, len, entry)) = self.run
        {
            let slot = first + (len - self.run_left);
            self.run_left -= 1;
            if self.run_left == 0 {
                self.run = None;
            }
            return Ok(Some((slot, entry)));
        }
        if let Some(held) = self.held.take() {
            return Ok(Some(held));
        }
        while let Some((slot, raw)) = self.stream.next_entry()? {
            let entry = (self.decode)(&raw, self.base);
            if (self.is_padding)(&entry, self.base) {
                // All-zero entries (padding of either index) are skipped a chunk at a time.
                let more = if raw.iter().all(|b| *b == 0) {
                    self.stream.skip_zero_entries()?
                } else {
                    0
                };
                match &mut self.run {
                    Some((_, len, _)) => *len += 1 + more,
                    None => self.run = Some((slot, 1 + more, entry)),
                }
                continue;
            }
            let Some((first, len, run_entry)) = self.run else {
                return Ok(Some((slot, entry)));
            };
            // Real entries follow the run: it was no padding.
            self.held = Some((slot, entry));
            self.run_left = len - 1;
            if self.run_left == 0 {
                self.run = None;
            }
            return Ok(Some((first, run_entry)));
        }
        if let Some((first, len, _)) = self.run.take() {
            self.trailing_padding = Some((first, len));
        }
        Ok(None)
    }
}

fn decode_offset_entry(raw: &[u8; 8], base: i64) -> OffsetPosition {
    let e = OffsetEntry::decode(raw);
    OffsetPosition {
        offset: base.saturating_add(i64::from(e.relative_offset)),
        // A negative position only exists in a corrupt file; kept bit for bit.
        position: e.position as u32,
    }
}

fn decode_time_entry(raw: &[u8; 12], base: i64) -> TimestampOffset {
    let e = TimeEntry::decode(raw);
    TimestampOffset {
        timestamp_ms: e.timestamp_ms,
        offset: base.saturating_add(i64::from(e.relative_offset)),
    }
}

/// The `.index` checked against the batches as the `.log` walk meets them.
struct OffsetIndexCheck {
    path: PathBuf,
    entries: IndexEntries<OffsetPosition, 8>,
    previous: Option<(i64, u32)>,
    /// Entries whose offset lies above the batch at their position: a follower's multi-batch
    /// append when a later batch ends exactly at that offset (slot, entry, that batch).
    awaiting: VecDeque<(u64, OffsetPosition, BatchInfo)>,
    found: Findings,
}

impl OffsetIndexCheck {
    fn open(path: &Path, base: i64) -> Result<Self, Error> {
        let stream = EntryStream::<8>::open(path)?;
        let mut found = Findings::default();
        index_length(&mut found, path, stream.len_bytes(), 8);
        Ok(OffsetIndexCheck {
            path: path.to_owned(),
            entries: IndexEntries::new(stream, base, decode_offset_entry, |e, base| {
                e.offset == base && e.position == 0
            }),
            previous: None,
            awaiting: VecDeque::new(),
            found,
        })
    }

    /// Consumes one entry: the order check. Returns whether it was in order.
    fn in_order(&mut self, slot: u64, e: OffsetPosition) -> bool {
        self.found.entries += 1;
        let ok = !self
            .previous
            .is_some_and(|(o, p)| e.offset <= o || e.position <= p);
        if !ok {
            let msg = format!(
                "entry {slot} (offset {}, position {}) does not increase",
                e.offset, e.position
            );
            self.found
                .problem(&self.path, Some(slot * 8), ProblemKind::IndexOrder, msg);
        }
        self.previous = Some((e.offset, e.position));
        ok
    }

    fn mismatch(&mut self, slot: u64, e: OffsetPosition, batch: BatchInfo) {
        let msg = format!(
            "entry {slot}: offset {} at position {}, but the batch there holds offsets {}..={}",
            e.offset, e.position, batch.first_offset, batch.last_offset
        );
        self.found
            .problem(&self.path, Some(slot * 8), ProblemKind::IndexOffset, msg);
    }

    fn not_a_batch_start(&mut self, slot: u64, e: OffsetPosition) {
        let msg = format!(
            "entry {slot}: position {} is not the start of a batch",
            e.position
        );
        self.found
            .problem(&self.path, Some(slot * 8), ProblemKind::IndexPosition, msg);
    }

    fn batch(&mut self, batch: BatchInfo) -> Result<(), Error> {
        while let Some(&(slot, e, at)) = self.awaiting.front() {
            if batch.last_offset < e.offset {
                break;
            }
            self.awaiting.pop_front();
            if batch.last_offset == e.offset {
                let msg = format!(
                    "entry {slot} (offset {}, position {}) points at a batch ending at offset {} \
                     (a multi-batch append, as a follower writes; lookups are still correct)",
                    e.offset, e.position, at.last_offset
                );
                self.found.notes.push(Note {
                    file: self.path.clone(),
                    message: msg,
                });
            } else {
                self.mismatch(slot, e, at);
            }
        }
        while let Some((slot, e)) = self.entries.peek()? {
            if u64::from(e.position) > batch.position {
                break;
            }
            self.entries.take();
            let in_order = self.in_order(slot, e);
            if u64::from(e.position) < batch.position {
                // Out of order entries are reported once, by the order check.
                if in_order {
                    self.not_a_batch_start(slot, e);
                }
            } else if e.offset > batch.last_offset {
                self.awaiting.push_back((slot, e, batch));
            } else if e.offset != batch.last_offset {
                self.mismatch(slot, e, batch);
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Findings, Error> {
        while let Some((slot, e, at)) = self.awaiting.pop_front() {
            self.mismatch(slot, e, at);
        }
        while let Some((slot, e)) = self.entries.peek()? {
            self.entries.take();
            if self.in_order(slot, e) {
                self.not_a_batch_start(slot, e);
            }
        }
        let total = self.entries.stream.entries();
        zero_padding(
            &mut self.found,
            &self.path,
            self.entries.trailing_padding,
            total,
            8,
        );
        self.found.problems.sort_by_key(|p| p.position);
        Ok(self.found)
    }
}

/// The `.timeindex` checked against the batches as the `.log` walk meets them.
struct TimeIndexCheck {
    path: PathBuf,
    entries: IndexEntries<TimestampOffset, 12>,
    previous: Option<(i64, i64)>,
    found: Findings,
}

impl TimeIndexCheck {
    fn open(path: &Path, base: i64) -> Result<Self, Error> {
        let stream = EntryStream::<12>::open(path)?;
        let mut found = Findings::default();
        index_length(&mut found, path, stream.len_bytes(), 12);
        Ok(TimeIndexCheck {
            path: path.to_owned(),
            entries: IndexEntries::new(stream, base, decode_time_entry, |e, base| {
                e.timestamp_ms == 0 && e.offset == base
            }),
            previous: None,
            found,
        })
    }

    fn consume(&mut self, slot: u64, e: TimestampOffset) {
        self.found.entries += 1;
        if self
            .previous
            .is_some_and(|(t, o)| e.timestamp_ms <= t || e.offset < o)
        {
            let msg = format!(
                "entry {slot} (timestamp {}, offset {}) does not increase",
                e.timestamp_ms, e.offset
            );
            self.found
                .problem(&self.path, Some(slot * 12), ProblemKind::IndexOrder, msg);
        }
        self.previous = Some((e.timestamp_ms, e.offset));
    }

    fn in_no_batch(&mut self, slot: u64, e: TimestampOffset) {
        let msg = format!(
            "entry {slot}: offset {} is in no batch of this segment",
            e.offset
        );
        self.found
            .problem(&self.path, Some(slot * 12), ProblemKind::IndexOffset, msg);
    }

    fn batch(&mut self, batch: BatchInfo) -> Result<(), Error> {
        while let Some((slot, e)) = self.entries.peek()? {
            if e.offset > batch.last_offset {
                break;
            }
            self.entries.take();
            self.consume(slot, e);
            if e.offset < batch.first_offset {
                self.in_no_batch(slot, e);
            } else if e.timestamp_ms != batch.running_max_timestamp {
                let msg = format!(
                    "entry {slot}: timestamp {} at offset {}, but the largest timestamp up to that batch is {}",
                    e.timestamp_ms, e.offset, batch.running_max_timestamp
                );
                self.found.problem(
                    &self.path,
                    Some(slot * 12),
                    ProblemKind::IndexTimestamp,
                    msg,
                );
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Findings, Error> {
        while let Some((slot, e)) = self.entries.peek()? {
            self.entries.take();
            self.consume(slot, e);
            self.in_no_batch(slot, e);
        }
        let total = self.entries.stream.entries();
        zero_padding(
            &mut self.found,
            &self.path,
            self.entries.trailing_padding,
            total,
            12,
        );
        self.found.problems.sort_by_key(|p| p.position);
        Ok(self.found)
    }
}

/// Reports an index file whose length is not a whole number of `entry_size`-byte entries.
fn index_length(found: &mut Findings, path: &Path, len: u64, entry_size: u64) {
    if !len.is_multiple_of(entry_size) {
        found.problem(
            path,
            Some(len - len % entry_size),
            ProblemKind::IndexLength,
            format!("length {len} is not a multiple of {entry_size}"),
        );
    }
}

/// Reports the run of zero-padding entries at the end of an index, as an untrimmed
/// preallocated index has.
fn zero_padding(
    found: &mut Findings,
    path: &Path,
    trailing: Option<(u64, u64)>,
    total: u64,
    entry_size: u64,
) {
    if let Some((first, len)) = trailing {
        let msg =
            format!("{len} of {total} entries are zero padding (an untrimmed, preallocated index)");
        found.problem(
            path,
            Some(first * entry_size),
            ProblemKind::IndexZeroPadding,
            msg,
        );
    }
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
        let mut offset_index = match &files.index {
            Some(index) => Some(OffsetIndexCheck::open(index, base)?),
            None => {
                self.note(
                    log,
                    "no .index file; it is rebuilt when the segment is recovered",
                );
                None
            }
        };
        let mut time_index = match &files.time_index {
            Some(index) => Some(TimeIndexCheck::open(index, base)?),
            None => {
                self.note(
                    log,
                    "no .timeindex file; it is rebuilt when the segment is recovered",
                );
                None
            }
        };
        self.log(log, base, next_base, |batch| {
            if let Some(check) = offset_index.as_mut() {
                check.batch(batch)?;
            }
            if let Some(check) = time_index.as_mut() {
                check.batch(batch)?;
            }
            Ok(())
        })?;
        for check in [
            offset_index.map(OffsetIndexCheck::finish),
            time_index.map(TimeIndexCheck::finish),
        ]
        .into_iter()
        .flatten()
        {
            let found = check?;
            self.report.index_entries += found.entries;
            self.report.problems.extend(found.problems);
            self.report.notes.extend(found.notes);
        }
        Ok(())
    }

    /// Walks the `.log` (streamed: one batch in memory at a time), calling `on_batch` with
    /// every batch in file order.
    fn log(
        &mut self,
        path: &Path,
        base: i64,
        next_base: Option<i64>,
        mut on_batch: impl FnMut(BatchInfo) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut stream = LogStream::open(path, self.max_batch_bytes)?;
        self.report.bytes += stream.len();
        let mut running_max = -1i64;
        // Batches outside the segment's range are one problem (the first), not one per batch.
        let mut outside_reported = false;
        loop {
            let batch = match stream.next_step()? {
                Step::Batch(batch) => batch,
                Step::End(end) => {
                    self.log_end(path, end);
                    return Ok(());
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
            let mut first_record = None;
            let mut records = 0u64;
            let mut out_of_order = None;
            let mut previous_record = None;
            if crc_ok {
                for record in batch.records(MAX_DECOMPRESSED_BYTES) {
                    match record {
                        Ok(r) => {
                            records += 1;
                            let lower = h
                                .base_offset
                                .unwrap_or(*first_record.get_or_insert(r.offset));
                            if out_of_order.is_none()
                                && (r.offset < lower
                                    || r.offset > h.last_offset
                                    || previous_record.is_some_and(|p| r.offset <= p))
                            {
                                out_of_order = Some(r.offset);
                            }
                            previous_record = Some(r.offset);
                        }
                        Err(e) => {
                            let at = e.position().or(position);
                            self.problem(path, at, ProblemKind::InvalidRecords, e.to_string());
                        }
                    }
                }
            }
            self.report.records += records;
            let first_offset = h.base_offset.unwrap_or_else(|| match first_record {
                Some(first) => first,
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
            if let Some(offset) = out_of_order {
                let msg = format!(
                    "record offset {offset} is out of order or outside its batch's {first_offset}..={}",
                    h.last_offset
                );
                self.problem(path, position, ProblemKind::InvalidRecords, msg);
            }
            running_max = running_max.max(h.max_timestamp_ms);
            self.last_offset = Some(
                self.last_offset
                    .map_or(h.last_offset, |l| l.max(h.last_offset)),
            );
            on_batch(BatchInfo {
                position: h.position,
                first_offset,
                last_offset: h.last_offset,
                running_max_timestamp: running_max,
            })?;
        }
    }

    /// Reports how a `.log` walk ended, unless it ended exactly at the end of the file.
    fn log_end(&mut self, path: &Path, end: End) {
        match end {
            End::Clean => {}
            End::ZeroTail { position, bytes } => {
                let msg = format!(
                    "{bytes} zero bytes to the end of the file (preallocated or never written)"
                );
                self.problem(path, Some(position), ProblemKind::ZeroTail, msg);
            }
            End::TornTail { position, bytes } => {
                let msg = format!("{bytes} bytes of an incomplete batch at the end (a torn write)");
                self.problem(path, Some(position), ProblemKind::TornTail, msg);
            }
            End::Oversized { position, rest, .. } | End::Corrupt { position, rest, .. } => {
                self.oversized_batch |= matches!(end, End::Oversized { .. });
                let message = end.corruption_text().unwrap_or_default();
                let msg = format!("{message}; the remaining {rest} bytes cannot be read");
                self.problem(path, Some(position), ProblemKind::CorruptBatch, msg);
            }
        }
    }
}

/// What a leftover is, and what the loader does with it (from a read-only load's report).
fn leftover_message(path: &Path, load: Option<&seglog::LoadReport>) -> String {
    let name = path.to_string_lossy();
    let rejected = load.and_then(|l| l.rejected_swaps.iter().find(|r| r.path == path));
    if let Some(rejected) = rejected {
        return format!(
            "a .swap file the loader refuses ({}): it keeps the live segments and sets this file aside as <name>.rejected",
            rejected.problem
        );
    }
    if name.ends_with(".swap") && load.is_some() {
        return "an interrupted swap: the loader completes it (the swap is valid)".into();
    }
    if name.ends_with(".log.deleted") {
        let live = path.with_extension("");
        if load.is_some_and(|l| l.restored_files.contains(&live)) {
            return "a segment renamed .deleted that no other segment replaces: the loader restores it (it holds records the log would lose)".into();
        }
    }
    "left over from an interrupted delete, clean or swap".into()
}
