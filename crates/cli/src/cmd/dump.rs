//! `seglog dump PATH`: the raw contents of segment files, like Kafka's `DumpLogSegments`.
//!
//! A `.log` (or a KRaft snapshot `.checkpoint`, which holds batches too) prints its batch table,
//! and with `--records` every record; `.index`/`.timeindex`/`.txnindex`, producer `.snapshot`s
//! (as Kafka's `dumpProducerIdSnapshot`) and `leader-epoch-checkpoint` print their entries;
//! a directory prints all of its files. Nothing is written. Undecodable bytes are reported as
//! problems (and the exit code is 1), not errors, so every readable part is still shown.

use std::path::Path;

use seglog_index_core::{OffsetEntry, OffsetIndex, TimeEntry, TimeIndex};
use seglog_records::{BatchRef, Record};
use seglog_segment::{FileType, parse_file_name};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{DumpArgs, Encoding};
use crate::dir::DirListing;
use crate::error::Error;
use crate::log_stream::{End, EntryStream, LogStream, MAX_SNAPSHOT_BYTES, Step, read_bounded};
use crate::output::{Out, TimestampTypeName};
use crate::view::{self, MAX_DECOMPRESSED_BYTES};

/// Runs `seglog dump`.
///
/// # Errors
/// [`Error::NotFound`] for a missing path; I/O errors; stdout errors.
pub fn run(args: &DumpArgs) -> Result<Outcome, Error> {
    let meta = std::fs::metadata(&args.path).map_err(Error::io("stat", &args.path))?;
    let mut dumper = Dumper {
        args,
        out: Out::stdout(),
        problems: 0,
    };
    let named_like_a_file = parse_file_name(&args.path).is_some()
        || args
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| crate::dir::STATE_FILE_NAMES.contains(&n));
    if meta.is_dir() && named_like_a_file {
        // A directory at a segment or state file's name is damage, not a log to list.
        return Err(Error::NotRegular {
            path: args.path.clone(),
            what: "a directory, not a regular file".into(),
        });
    }
    if meta.is_dir() {
        let listing = DirListing::read(&args.path)?;
        let mut files: Vec<_> = listing
            .segments
            .values()
            .flat_map(|s| [&s.log, &s.index, &s.time_index, &s.txn_index])
            .flatten()
            .chain(&listing.snapshots)
            .chain(&listing.leftovers)
            .chain(&listing.other)
            .chain(&listing.strays)
            .chain(listing.irregular.iter().map(|(path, _)| path))
            .cloned()
            .collect();
        files.sort();
        for file in files {
            dumper.file(&file)?;
        }
    } else if meta.is_file() {
        dumper.file(&args.path)?;
    } else {
        return Err(Error::WrongKind {
            path: args.path.clone(),
            expected: "not a regular file or a directory (a FIFO or a device is never read)",
        });
    }
    dumper.out.flush()?;
    Ok(if dumper.problems == 0 {
        Outcome::Ok
    } else {
        Outcome::ProblemsFound
    })
}

struct Dumper<'a> {
    args: &'a DumpArgs,
    out: Out,
    problems: usize,
}

/// What a file holds, by its name.
enum Kind {
    Log,
    OffsetIndex(i64),
    TimeIndex(i64),
    TxnIndex,
    ProducerSnapshot,
    LeaderEpochCheckpoint,
    Other,
}

fn kind_of(path: &Path) -> Kind {
    if let Some(parsed) = parse_file_name(path) {
        return match parsed.kind.file_type {
            FileType::Log => Kind::Log,
            FileType::Index => Kind::OffsetIndex(parsed.base_offset),
            FileType::TimeIndex => Kind::TimeIndex(parsed.base_offset),
            FileType::TxnIndex => Kind::TxnIndex,
            FileType::Snapshot => Kind::ProducerSnapshot,
        };
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == seglog::LEADER_EPOCH_CHECKPOINT {
        return Kind::LeaderEpochCheckpoint;
    }
    // KRaft snapshots (`<offset>-<epoch>.checkpoint`) are record batches like a `.log`.
    let kraft_snapshot = name.strip_suffix(".checkpoint").is_some_and(|stem| {
        stem.split_once('-').is_some_and(|(a, b)| {
            !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
        })
    });
    match path.extension().and_then(|e| e.to_str()) {
        Some("log") => Kind::Log,
        _ if kraft_snapshot => Kind::Log,
        _ => Kind::Other,
    }
}

#[derive(Serialize)]
struct BatchLine<'a> {
    file: &'a str,
    position: u64,
    base_offset: Option<i64>,
    last_offset: i64,
    count: Option<i32>,
    size: u32,
    magic: u8,
    codec: &'static str,
    crc: u32,
    crc_valid: bool,
    timestamp_type: Option<TimestampTypeName>,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    last_sequence: i32,
    partition_leader_epoch: i32,
    transactional: bool,
    control: bool,
    delete_horizon_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    records: Option<Vec<DumpRecord>>,
}

#[derive(Serialize)]
struct DumpRecord {
    offset: i64,
    timestamp: Option<i64>,
    key_size: i64,
    value_size: i64,
    sequence: i32,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    control: Option<&'static str>,
    /// A COMMIT/ABORT marker's coordinator epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    coordinator_epoch: Option<i32>,
}

#[derive(Serialize)]
struct ProblemLine<'a> {
    file: &'a str,
    position: u64,
    problem: String,
}

#[derive(Serialize)]
struct OffsetEntryLine<'a> {
    file: &'a str,
    slot: usize,
    offset: i64,
    position: u32,
}

#[derive(Serialize)]
struct TimeEntryLine<'a> {
    file: &'a str,
    slot: usize,
    timestamp: i64,
    offset: i64,
}

#[derive(Serialize)]
struct TxnEntryLine<'a> {
    file: &'a str,
    slot: usize,
    version: i16,
    producer_id: i64,
    first_offset: i64,
    last_offset: i64,
    last_stable_offset: i64,
}

#[derive(Serialize)]
struct SnapshotEntryLine<'a> {
    file: &'a str,
    slot: usize,
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    current_txn_first_offset: Option<i64>,
    last_timestamp: i64,
    first_sequence: Option<i32>,
    last_sequence: i32,
    last_offset: i64,
    offset_delta: i32,
}

#[derive(Serialize)]
struct EpochEntryLine<'a> {
    file: &'a str,
    slot: usize,
    epoch: i32,
    start_offset: i64,
}

#[derive(Serialize)]
struct OtherFileLine<'a> {
    file: &'a str,
    size: u64,
    text: Option<String>,
}

fn size_of(len: Option<&[u8]>) -> i64 {
    len.map_or(-1, |b| b.len() as i64)
}

fn record_sequence(batch: &BatchRef<'_>, record: &Record) -> i32 {
    let header = batch.header();
    match header.base_offset {
        Some(base) if header.base_sequence >= 0 => {
            let sum = i64::from(header.base_sequence) + (record.offset - base);
            if sum > i64::from(i32::MAX) {
                (sum - i64::from(i32::MAX) - 1) as i32
            } else {
                sum as i32
            }
        }
        _ => -1,
    }
}

impl Dumper<'_> {
    fn file(&mut self, path: &Path) -> Result<(), Error> {
        // Only regular files are read: a FIFO would block, a device never end.
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => {
                self.heading(path)?;
                let file = path.display().to_string();
                return self.problem(&file, 0, "not a regular file; not read".to_owned());
            }
            Err(e) => {
                self.heading(path)?;
                let file = path.display().to_string();
                return self.problem(&file, 0, format!("cannot be opened ({e}); not read"));
            }
        }
        match kind_of(path) {
            Kind::Log => self.log(path),
            Kind::OffsetIndex(base) => self.offset_index(path, base),
            Kind::TimeIndex(base) => self.time_index(path, base),
            Kind::TxnIndex => self.txn_index(path),
            Kind::LeaderEpochCheckpoint => self.leader_epochs(path),
            Kind::ProducerSnapshot => self.producer_snapshot(path),
            Kind::Other => self.other(path),
        }
    }

    fn heading(&mut self, path: &Path) -> Result<(), Error> {
        if !self.args.json {
            self.out.line(format_args!("Dumping {}", path.display()))?;
        }
        Ok(())
    }

    fn problem(&mut self, file: &str, position: u64, problem: String) -> Result<(), Error> {
        self.problems += 1;
        if self.args.json {
            self.out.json(&ProblemLine {
                file,
                position,
                problem,
            })
        } else {
            self.out
                .line(format_args!("problem at position {position}: {problem}"))
        }
    }

    /// Streams the `.log` (one batch in memory at a time, whatever the file's size).
    fn log(&mut self, path: &Path) -> Result<(), Error> {
        self.heading(path)?;
        let mut stream = LogStream::open(path, self.args.max_batch_bytes)?;
        let file = path.display().to_string();
        if !self.args.json {
            let start = parse_file_name(path).map_or(0, |p| p.base_offset);
            self.out
                .line(format_args!("Log starting offset: {start}"))?;
        }
        loop {
            let end = match stream.next_step()? {
                Step::Batch(batch) => {
                    self.batch(&file, &batch)?;
                    continue;
                }
                Step::End(end) => end,
            };
            return match end {
                End::Clean => Ok(()),
                End::ZeroTail { position, bytes } => self.problem(
                    &file,
                    position,
                    format!(
                        "{bytes} zero bytes to the end of the file (preallocated or never written)"
                    ),
                ),
                End::TornTail { position, bytes } => self.problem(
                    &file,
                    position,
                    format!("{bytes} bytes of an incomplete batch at the end (a torn write)"),
                ),
                End::Oversized { position, rest, .. } | End::Corrupt { position, rest, .. } => {
                    let message = end.corruption_text().unwrap_or_default();
                    self.problem(
                        &file,
                        position,
                        format!(
                            "{message}; the rest of the file ({rest} bytes) cannot be read as batches"
                        ),
                    )
                }
            };
        }
    }

    fn batch(&mut self, file: &str, batch: &BatchRef<'_>) -> Result<(), Error> {
        let h = *batch.header();
        let crc_valid = view::crc_valid(batch);
        let records = if self.args.records {
            Some(self.records(file, batch)?)
        } else {
            None
        };
        if self.args.json {
            self.out.json(&BatchLine {
                file,
                position: h.position,
                base_offset: h.base_offset,
                last_offset: h.last_offset,
                count: h.record_count,
                size: h.total_size,
                magic: h.magic,
                codec: h.compression.name(),
                crc: h.crc,
                crc_valid,
                timestamp_type: view::timestamp_type_name(h.timestamp_type),
                base_timestamp: h.base_timestamp_ms,
                max_timestamp: h.max_timestamp_ms,
                producer_id: h.producer_id,
                producer_epoch: h.producer_epoch,
                base_sequence: h.base_sequence,
                last_sequence: view::last_sequence(&h),
                partition_leader_epoch: h.partition_leader_epoch,
                transactional: h.is_transactional,
                control: h.is_control,
                delete_horizon_ms: h.delete_horizon_ms(),
                records,
            })?;
        } else {
            let opt = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
            self.out.line(format_args!(
                "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} \
                 producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {} \
                 position: {} {}: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {}",
                opt(h.base_offset.map(|o| o.to_string())),
                h.last_offset,
                opt(h.record_count.map(|c| c.to_string())),
                h.base_sequence,
                view::last_sequence(&h),
                h.producer_id,
                h.producer_epoch,
                h.partition_leader_epoch,
                h.is_transactional,
                h.is_control,
                // Java's `OptionalLong`, as Kafka's tool prints it.
                h.delete_horizon_ms()
                    .map_or("OptionalLong.empty".to_owned(), |t| format!("OptionalLong[{t}]")),
                h.position,
                view::timestamp_label(h.timestamp_type),
                h.max_timestamp_ms,
                h.total_size,
                h.magic,
                h.compression.name(),
                h.crc,
                crc_valid,
            ))?;
            for r in records.iter().flatten() {
                let ts = r.timestamp.map_or("NoTimestamp".to_owned(), |t| {
                    format!("{}: {t}", view::timestamp_label(h.timestamp_type))
                });
                let mut line = format!(
                    "| offset: {} {ts} keySize: {} valueSize: {} sequence: {} headerKeys: [{}]",
                    r.offset,
                    r.key_size,
                    r.value_size,
                    r.sequence,
                    r.headers
                        .iter()
                        .map(|(k, _)| k.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                );
                match (r.control, r.coordinator_epoch) {
                    // Kafka's tool: `endTxnMarker: COMMIT coordinatorEpoch: N`.
                    (Some(marker), Some(epoch)) => line.push_str(&format!(
                        " endTxnMarker: {marker} coordinatorEpoch: {epoch}"
                    )),
                    (Some(marker), None) => line.push_str(&format!(" control: {marker}")),
                    _ => {}
                }
                line.push_str(&format!(
                    " key: {} payload: {}",
                    view::quoted(r.key.as_deref()),
                    view::quoted(r.value.as_deref())
                ));
                self.out.line(line)?;
            }
        }
        if !crc_valid {
            self.problem(
                file,
                h.position,
                format!(
                    "checksum mismatch: stored {:#010x}, computed {:#010x}",
                    h.crc,
                    batch.compute_crc()
                ),
            )?;
        }
        Ok(())
    }

    fn records(&mut self, file: &str, batch: &BatchRef<'_>) -> Result<Vec<DumpRecord>, Error> {
        let encoding: Encoding = self.args.encoding;
        let control = batch.header().is_control;
        let mut out = Vec::new();
        for record in batch.records(MAX_DECOMPRESSED_BYTES) {
            match record {
                Ok(r) => out.push(DumpRecord {
                    offset: r.offset,
                    timestamp: r.timestamp_ms,
                    key_size: size_of(r.key.as_deref()),
                    value_size: size_of(r.value.as_deref()),
                    sequence: record_sequence(batch, &r),
                    key: encoding.encode_opt(r.key.as_deref()),
                    value: encoding.encode_opt(r.value.as_deref()),
                    headers: r
                        .headers
                        .iter()
                        .map(|h| (h.key.clone(), encoding.encode_opt(h.value.as_deref())))
                        .collect(),
                    control: control.then(|| view::control_marker(&r)),
                    coordinator_epoch: control
                        .then(|| {
                            seglog_records::ControlRecord::parse(&r)
                                .ok()
                                .and_then(|c| c.marker)
                                .map(|m| m.coordinator_epoch)
                        })
                        .flatten(),
                }),
                Err(e) => {
                    let position = e.position().unwrap_or(batch.position());
                    self.problem(file, position, format!("records cannot be decoded: {e}"))?;
                }
            }
        }
        Ok(out)
    }

    fn offset_index(&mut self, path: &Path, base_offset: i64) -> Result<(), Error> {
        self.heading(path)?;
        let file = path.display().to_string();
        if let Some(len) = too_large_to_check(path)? {
            let mut entries = EntryStream::<8>::open(path)?;
            while let Some((slot, raw)) = entries.next_entry()? {
                let e = OffsetEntry::decode(&raw);
                let offset = base_offset.saturating_add(i64::from(e.relative_offset));
                self.offset_entry(&file, slot as usize, offset, e.position as u32)?;
            }
            return self.problem(&file, 0, not_checked(len));
        }
        let index = OffsetIndex::open_read_only(path, base_offset)?;
        if index.entries() == 0 && !self.args.json {
            // Kafka's tool says so for an empty offset index.
            self.out.line(format_args!("{file} is empty."))?;
        }
        for slot in 0..index.entries() {
            let Some(e) = index.entry(slot) else { break };
            self.offset_entry(&file, slot, e.offset, e.position)?;
        }
        if let Err(e) = index.sanity_check(None) {
            self.problem(&file, corrupt_position(&e), e.to_string())?;
        }
        Ok(())
    }

    fn offset_entry(
        &mut self,
        file: &str,
        slot: usize,
        offset: i64,
        position: u32,
    ) -> Result<(), Error> {
        if self.args.json {
            self.out.json(&OffsetEntryLine {
                file,
                slot,
                offset,
                position,
            })
        } else {
            self.out
                .line(format_args!("offset: {offset} position: {position}"))
        }
    }

    fn time_index(&mut self, path: &Path, base_offset: i64) -> Result<(), Error> {
        self.heading(path)?;
        let file = path.display().to_string();
        if let Some(len) = too_large_to_check(path)? {
            let mut entries = EntryStream::<12>::open(path)?;
            while let Some((slot, raw)) = entries.next_entry()? {
                let e = TimeEntry::decode(&raw);
                let offset = base_offset.saturating_add(i64::from(e.relative_offset));
                self.time_entry(&file, slot as usize, e.timestamp_ms, offset)?;
            }
            return self.problem(&file, 0, not_checked(len));
        }
        let index = TimeIndex::open_read_only(path, base_offset)?;
        for slot in 0..index.entries() {
            let Some(e) = index.entry(slot) else { break };
            self.time_entry(&file, slot, e.timestamp_ms, e.offset)?;
        }
        if let Err(e) = index.sanity_check(None) {
            self.problem(&file, corrupt_position(&e), e.to_string())?;
        }
        Ok(())
    }

    fn time_entry(
        &mut self,
        file: &str,
        slot: usize,
        timestamp: i64,
        offset: i64,
    ) -> Result<(), Error> {
        if self.args.json {
            self.out.json(&TimeEntryLine {
                file,
                slot,
                timestamp,
                offset,
            })
        } else {
            self.out
                .line(format_args!("timestamp: {timestamp} offset: {offset}"))
        }
    }

    /// `.txnindex`: 34-byte entries (spec 2.4), streamed. The first entry that fails the
    /// checks the log runs at first use (version 0, no negative field, first offset at or
    /// below the marker's, the marker inside the segment and above the previous one) is
    /// reported as a problem and ends the file's dump; so is a file larger than its segment's
    /// `.log` (when beside it) can need, before any entry, and a partial last entry.
    fn txn_index(&mut self, path: &Path) -> Result<(), Error> {
        self.heading(path)?;
        let file = path.display().to_string();
        let base_offset = parse_file_name(path).map_or(0, |p| p.base_offset);
        let mut entries = EntryStream::<34>::open(path)?;
        let len = entries.len_bytes();
        let log = path.with_extension("log");
        if let Ok(meta) = std::fs::metadata(&log)
            && meta.is_file()
        {
            let limit = seglog_segment::txn_index_limit(meta.len());
            if len > limit {
                let problem = seglog_segment::TxnIndexProblem::TooLarge { len, limit };
                return self.problem(&file, 0, format!("{problem}; not read"));
            }
        }
        let mut previous = None;
        while let Some((slot, e)) = entries.next_entry()? {
            let slot = slot as usize;
            let i64_at = |at: usize| i64::from_be_bytes(e[at..at + 8].try_into().unwrap_or([0; 8]));
            let line = TxnEntryLine {
                file: &file,
                slot,
                version: i16::from_be_bytes([e[0], e[1]]),
                producer_id: i64_at(2),
                first_offset: i64_at(10),
                last_offset: i64_at(18),
                last_stable_offset: i64_at(26),
            };
            let position = (slot * seglog::AbortedTxn::SIZE) as u64;
            if line.version != seglog::AbortedTxn::CURRENT_VERSION {
                let version = line.version;
                return self.problem(
                    &file,
                    position,
                    format!("entry {slot}: aborted transaction entry of unknown version {version} (expected 0)"),
                );
            }
            let txn = seglog::AbortedTxn {
                producer_id: line.producer_id,
                first_offset: line.first_offset,
                last_offset: line.last_offset,
                last_stable_offset: line.last_stable_offset,
            };
            if let Err(problem) = seglog_segment::check_txn_entry(&txn, base_offset, previous) {
                return self.problem(&file, position, format!("entry {slot}: {problem}"));
            }
            previous = Some(txn.last_offset);
            if self.args.json {
                self.out.json(&line)?;
            } else {
                self.out.line(format_args!(
                    "version: {} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                    line.version, line.producer_id, line.first_offset, line.last_offset, line.last_stable_offset
                ))?;
            }
        }
        if len % seglog::AbortedTxn::SIZE as u64 != 0 {
            let problem = seglog_segment::TxnIndexProblem::PartialEntry { len };
            return self.problem(
                &file,
                len - len % seglog::AbortedTxn::SIZE as u64,
                problem.to_string(),
            );
        }
        Ok(())
    }

    /// A producer `.snapshot` (spec 5.9): one line per producer, as Kafka's
    /// `dumpProducerIdSnapshot` prints it; a snapshot that does not decode is a problem.
    fn producer_snapshot(&mut self, path: &Path) -> Result<(), Error> {
        self.heading(path)?;
        let file = path.display().to_string();
        let bytes = match read_bounded(path, MAX_SNAPSHOT_BYTES)? {
            Ok(bytes) => bytes,
            Err(problem) => return self.problem(&file, 0, problem),
        };
        let snapshot = match seglog::ProducerSnapshot::decode(&bytes) {
            Ok(snapshot) => snapshot,
            Err(problem) => return self.problem(&file, 0, problem.to_string()),
        };
        for (slot, e) in snapshot.entries.iter().enumerate() {
            let txn = (e.current_txn_first_offset >= 0).then_some(e.current_txn_first_offset);
            if self.args.json {
                self.out.json(&SnapshotEntryLine {
                    file: &file,
                    slot,
                    producer_id: e.producer_id,
                    producer_epoch: e.epoch,
                    coordinator_epoch: e.coordinator_epoch,
                    current_txn_first_offset: txn,
                    last_timestamp: e.timestamp_ms,
                    first_sequence: e.has_batch().then(|| e.first_sequence()),
                    last_sequence: e.last_sequence,
                    last_offset: e.last_offset,
                    offset_delta: e.offset_delta,
                })?;
                continue;
            }
            let txn = txn.map_or_else(
                || "OptionalLong.empty".to_owned(),
                |o| format!("OptionalLong[{o}]"),
            );
            let mut line = format!(
                "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {txn} lastTimestamp: {} ",
                e.producer_id, e.epoch, e.coordinator_epoch, e.timestamp_ms
            );
            if e.has_batch() {
                line.push_str(&format!(
                    "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                    e.first_sequence(),
                    e.last_sequence,
                    e.last_offset,
                    e.offset_delta,
                    e.timestamp_ms
                ));
            }
            self.out.line(line)?;
        }
        Ok(())
    }

    /// `leader-epoch-checkpoint`: one line per `<epoch> <startOffset>` entry; a file that
    /// does not parse (Kafka's checkpoint rules) is a problem at its line.
    fn leader_epochs(&mut self, path: &Path) -> Result<(), Error> {
        self.heading(path)?;
        let file = path.display().to_string();
        let text = match read_bounded(path, seglog::MAX_CHECKPOINT_BYTES)? {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(problem) => return self.problem(&file, 0, problem),
        };
        let entries = match seglog::parse_leader_epoch_checkpoint(&text) {
            Ok(entries) => entries,
            Err((line, kind)) => return self.problem(&file, line, format!("line {line}: {kind}")),
        };
        if entries.is_empty() && !self.args.json {
            self.out.line(format_args!("{file} is empty."))?;
        }
        for (slot, entry) in entries.iter().enumerate() {
            if self.args.json {
                self.out.json(&EpochEntryLine {
                    file: &file,
                    slot,
                    epoch: entry.epoch,
                    start_offset: entry.start_offset,
                })?;
            } else {
                self.out.line(format_args!(
                    "epoch: {} startOffset: {}",
                    entry.epoch, entry.start_offset
                ))?;
            }
        }
        Ok(())
    }

    /// Checkpoints and metadata are small text files: print them; anything else by size.
    fn other(&mut self, path: &Path) -> Result<(), Error> {
        self.heading(path)?;
        let meta = std::fs::metadata(path).map_err(Error::io("stat", path))?;
        let text = match crate::log_stream::read_bounded(path, 64 * 1024)? {
            Ok(bytes) => String::from_utf8(bytes)
                .ok()
                .filter(|t| t.chars().all(|c| !c.is_control() || c.is_whitespace())),
            Err(_) => None,
        };
        let file = path.display().to_string();
        if self.args.json {
            self.out.json(&OtherFileLine {
                file: &file,
                size: meta.len(),
                text,
            })
        } else {
            match text {
                Some(text) => self.out.line(text.trim_end()),
                None => self
                    .out
                    .line(format_args!("({} bytes, not a segment file)", meta.len())),
            }
        }
    }
}

/// Index files up to this size are read whole and checked (index-core's sanity check); a
/// larger one (Kafka's default `segment.index.bytes` is 10 MiB) is streamed and printed only.
const MAX_CHECKED_INDEX_BYTES: u64 = 64 << 20;

/// The file's length when it is above [`MAX_CHECKED_INDEX_BYTES`].
fn too_large_to_check(path: &Path) -> Result<Option<u64>, Error> {
    let len = std::fs::metadata(path)
        .map_err(Error::io("stat", path))?
        .len();
    Ok((len > MAX_CHECKED_INDEX_BYTES).then_some(len))
}

fn not_checked(len: u64) -> String {
    format!(
        "{len} bytes, larger than the {MAX_CHECKED_INDEX_BYTES}-byte bound for a checked index: entries printed, not checked (the log rebuilds such an index)"
    )
}

fn corrupt_position(e: &seglog_index_core::Error) -> u64 {
    match e {
        seglog_index_core::Error::Corrupt { position, .. } => *position,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index above the checked bound is streamed (a 2 GiB sparse one used to be read
    /// whole); one below it is read and checked.
    #[test]
    fn only_indexes_within_the_bound_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_CHECKED_INDEX_BYTES).unwrap();
        assert_eq!(too_large_to_check(&path).unwrap(), None);
        file.set_len(2 << 30).unwrap();
        assert_eq!(too_large_to_check(&path).unwrap(), Some(2 << 30));
        let mut entries = EntryStream::<8>::open(&path).unwrap();
        assert_eq!(entries.entries(), (2 << 30) / 8);
        assert_eq!(entries.next_entry().unwrap(), Some((0, [0; 8])));
    }

    #[test]
    fn kinds_from_names() {
        assert!(matches!(
            kind_of(Path::new("00000000000000000005.log")),
            Kind::Log
        ));
        assert!(matches!(
            kind_of(Path::new("00000000000000000005.index")),
            Kind::OffsetIndex(5)
        ));
        assert!(matches!(
            kind_of(Path::new("00000000000000000005.timeindex")),
            Kind::TimeIndex(5)
        ));
        assert!(matches!(
            kind_of(Path::new("00000000000000000010-0000000001.checkpoint")),
            Kind::Log
        ));
        assert!(matches!(
            kind_of(Path::new("leader-epoch-checkpoint")),
            Kind::LeaderEpochCheckpoint
        ));
        assert!(matches!(kind_of(Path::new("x.log")), Kind::Log));
    }
}
