//! Contender (b): seglog, through its public API (`seglog::Log`, `seglog_index_core`), as an
//! application would use it: leader appends of producer batches, a scan through the borrowed
//! record reader (`Log::reader`: fetches copied into one reused buffer, usually with one
//! `pread`, records decoded in place), `Log::read_into` point reads decoded with
//! `seglog_records`, ListOffsets by timestamp, open and close.

use std::fs;
use std::hint::black_box;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use seglog::{Durability, Isolation, ListOffsets, Log, LogConfig, PollEnd, ReaderOptions};
use seglog_index_core::OffsetIndex;
use seglog_records::{Batches, Record, RecordRef};

use crate::data::Dataset;
use crate::harness::{Trial, Work};
use crate::writers::run_writers;
use crate::{Error, Result, io_error};

/// Scan read size, as for every contender.
const READ_BYTES: u32 = 1 << 20;

/// Opens (or creates) a seglog log in `dir` with `config`.
///
/// # Errors
///
/// seglog's open errors, with the directory named.
pub fn open(dir: &Path, config: LogConfig) -> Result<Log> {
    Log::open(dir, config).map_err(|error| seglog_error("open", dir, error))
}

/// Appends every batch of `data`, in order, as the leader (page cache only).
///
/// # Errors
///
/// On the first failed append.
pub fn append_all(log: &Log, data: &Dataset) -> Result<()> {
    for range in &data.batch_ranges {
        log.append(&data.image[range.clone()])
            .map_err(|error| seglog_error("append", log.dir(), error))?;
    }
    Ok(())
}

/// The path of the one `.log` file of `log` (the read workloads' logs fit in one segment),
/// for the ceiling to read the very bytes seglog reads, in the same page-cache state.
///
/// # Errors
///
/// If the directory cannot be listed or holds other than one `.log` file.
pub fn only_segment_file(log: &Log) -> Result<PathBuf> {
    let dir = log.dir();
    let mut logs = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| io_error("list", dir, e))? {
        let path = entry.map_err(|e| io_error("list", dir, e))?.path();
        if path.extension().is_some_and(|ext| ext == "log") {
            logs.push(path);
        }
    }
    match <[PathBuf; 1]>::try_from(logs) {
        Ok([path]) => Ok(path),
        Err(logs) => Err(format!(
            "expected one segment in {}, found {} .log files",
            dir.display(),
            logs.len()
        )
        .into()),
    }
}

/// Closes `log` cleanly.
///
/// # Errors
///
/// seglog's close errors.
pub fn close(log: &Log) -> Result<()> {
    log.close()
        .map_err(|error| seglog_error("close", log.dir(), error))
}

fn seglog_error(operation: &str, dir: &Path, error: seglog::Error) -> Error {
    format!("seglog {operation} {}: {error}", dir.display()).into()
}

/// Appends the whole dataset to a fresh log, page cache only.
pub struct Append<'a> {
    data: &'a Dataset,
    dir: PathBuf,
    log: Option<Log>,
}

impl<'a> Append<'a> {
    /// Appending `data` into `dir` (recreated every run).
    pub fn new(data: &'a Dataset, dir: PathBuf) -> Self {
        Self {
            data,
            dir,
            log: None,
        }
    }
}

impl Trial for Append<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.log = Some(open(&self.dir, LogConfig::default())?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_ref().ok_or("not prepared")?;
        append_all(log, self.data)?;
        let spec = self.data.spec;
        check_end(log, spec.records)?;
        Ok(Work::new(spec.records, spec.payload_bytes()))
    }

    fn cleanup(&mut self) -> Result<()> {
        // Dropped, not closed: a close fsyncs everything, and deleting fsynced blocks makes
        // ext4 issue discards, I/O that would then stall the next contender's timed run.
        // The ceiling and commitlog leave their files unsynced too.
        self.log = None;
        remove_dir(&self.dir)
    }
}

/// Bulk appends of the whole dataset, about 1 MiB of batches per call: as the leader with
/// `Log::append_vectored` (each batch its own chunk, as a producer's batches arrive in
/// separate buffers), or as a follower with `Log::append_as_follower_vectored` of the fetched
/// bytes (the leader's log image, one chunk per call).
pub struct BulkAppend<'a> {
    data: &'a Dataset,
    /// For a follower: the leader's image (assigned base offsets).
    replicated: Option<&'a [u8]>,
    groups: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    dir: PathBuf,
    log: Option<Log>,
}

impl<'a> BulkAppend<'a> {
    /// Leader appends of `data` in groups of at most `group_bytes` into `dir`.
    pub fn leader(data: &'a Dataset, group_bytes: usize, dir: PathBuf) -> Self {
        Self {
            data,
            replicated: None,
            groups: data.groups(group_bytes),
            dir,
            log: None,
        }
    }

    /// Follower appends of `replicated` (`data` with its offsets assigned) in groups of at
    /// most `group_bytes` into `dir`.
    pub fn follower(
        data: &'a Dataset,
        replicated: &'a [u8],
        group_bytes: usize,
        dir: PathBuf,
    ) -> Self {
        Self {
            data,
            replicated: Some(replicated),
            groups: data.groups(group_bytes),
            dir,
            log: None,
        }
    }
}

impl Trial for BulkAppend<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.log = Some(open(&self.dir, LogConfig::default())?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_ref().ok_or("not prepared")?;
        let mut chunks: Vec<&[u8]> = Vec::new();
        for (bytes, batches) in &self.groups {
            let appended = match self.replicated {
                Some(image) => {
                    log.append_as_follower_vectored(&[&image[bytes.clone()]], Durability::PageCache)
                }
                None => {
                    chunks.clear();
                    chunks.extend(
                        self.data.batch_ranges[batches.clone()]
                            .iter()
                            .map(|range| &self.data.image[range.clone()]),
                    );
                    log.append_vectored(&chunks, Durability::PageCache)
                }
            };
            appended.map_err(|error| seglog_error("bulk append", log.dir(), error))?;
        }
        let spec = self.data.spec;
        check_end(log, spec.records)?;
        Ok(Work::new(spec.records, spec.payload_bytes()))
    }

    fn cleanup(&mut self) -> Result<()> {
        // Dropped, not closed, as in `Append`.
        self.log = None;
        remove_dir(&self.dir)
    }
}

/// Durable appends (`Log::append_durable`: returns once fsynced) from `writers` threads sharing
/// one `Log`; concurrent appenders share fsyncs (group commit).
pub struct DurableAppend<'a> {
    data: &'a Dataset,
    batches: usize,
    writers: usize,
    dir: PathBuf,
    log: Option<Log>,
}

impl<'a> DurableAppend<'a> {
    /// `batches` batches of `data`, round-robin over `writers` threads, into `dir`.
    pub fn new(data: &'a Dataset, batches: usize, writers: usize, dir: PathBuf) -> Self {
        let batches = batches.min(data.spec.batches());
        Self {
            data,
            batches,
            writers,
            dir,
            log: None,
        }
    }
}

impl Trial for DurableAppend<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.log = Some(open(&self.dir, LogConfig::default())?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_ref().ok_or("not prepared")?;
        let (data, total, writers) = (self.data, self.batches, self.writers);
        run_writers(0..writers, |writer| -> Result<()> {
            for batch in (writer..total).step_by(writers) {
                log.append_durable(&data.image[data.batch_ranges[batch].clone()])
                    .map_err(|error| seglog_error("append_durable", log.dir(), error))?;
            }
            Ok(())
        })?;
        let records = total as u64 * data.spec.batch_records as u64;
        check_end(log, records)?;
        Ok(Work::new(records, records * data.spec.record_bytes as u64))
    }

    fn cleanup(&mut self) -> Result<()> {
        // Dropped, not closed: a close fsyncs everything, and deleting fsynced blocks makes
        // ext4 issue discards, I/O that would then stall the next contender's timed run.
        // The ceiling and commitlog leave their files unsynced too.
        self.log = None;
        remove_dir(&self.dir)
    }
}

/// Reads the whole log in offset order: `Log::read_into` of 1 MiB from the next offset into a
/// reused buffer, every batch's CRC-32C checked and every record decoded.
pub struct Scan<'a> {
    log: &'a Log,
    records: u64,
    payload_bytes: u64,
    decode: Decode,
}

impl<'a> Scan<'a> {
    /// Scanning `log`, which holds `data`, decoding records or not.
    pub fn new(data: &Dataset, log: &'a Log, decode: Decode) -> Self {
        Self {
            log,
            records: data.spec.records,
            payload_bytes: data.spec.payload_bytes(),
            decode,
        }
    }
}

impl Trial for Scan<'_> {
    fn run(&mut self) -> Result<Work> {
        let (records, payload_bytes) = scan(self.log, self.decode)?;
        let expected_payload = match self.decode {
            Decode::Records => self.payload_bytes,
            Decode::BatchesOnly => 0,
        };
        if records != self.records || payload_bytes != expected_payload {
            return Err(format!(
                "seglog scan saw {records} records, expected {}",
                self.records
            )
            .into());
        }
        Ok(Work::new(records, self.payload_bytes))
    }
}

/// How far a scan goes into each batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decode {
    /// Decode every record (what an embedded consumer does).
    Records,
    /// Check the CRC and read the header only (what a broker's fetch path does; records are
    /// counted from the headers and their bytes are not touched).
    BatchesOnly,
}

/// Reads every batch of `log` in offset order, checking every batch's CRC and decoding the
/// records if asked; returns (records, value bytes decoded). Decoding goes through
/// [`seglog::RecordReader`], the borrowed record reader an embedded consumer uses (one reused
/// buffer; records of uncompressed v2 batches are views into it).
///
/// # Errors
///
/// On a read error, a CRC mismatch or a malformed record.
pub fn scan(log: &Log, decode: Decode) -> Result<(u64, u64)> {
    scan_range(log, log.log_start_offset(), log.log_end_offset(), decode)
}

/// [`scan`] of the records from `start` (a batch's base offset) until `end` is reached.
///
/// # Errors
///
/// As [`scan`].
pub fn scan_range(log: &Log, start: i64, end: i64, decode: Decode) -> Result<(u64, u64)> {
    match decode {
        Decode::Records => scan_records(log, start, end),
        Decode::BatchesOnly => scan_batches(log, start, end),
    }
}

/// Every record in `start..end` through `RecordReader::poll`.
fn scan_records(log: &Log, start: i64, end: i64) -> Result<(u64, u64)> {
    let (mut records, mut payload_bytes) = (0u64, 0u64);
    let mut reader = ReaderOptions::new(start, Isolation::LogEnd)
        .fetch_bytes(READ_BYTES)
        .reader(log);
    let polled = reader.poll(|_, record| {
        if record.offset() >= end {
            return Ok::<_, seglog::Error>(ControlFlow::Break(()));
        }
        payload_bytes += black_box(record.value()).map_or(0, <[u8]>::len) as u64;
        records += 1;
        Ok(ControlFlow::Continue(()))
    });
    match polled {
        // Stopped: the scan reached `end` while the log grew past it (the mixed workload).
        Ok(PollEnd::CaughtUp | PollEnd::Stopped) => Ok((records, payload_bytes)),
        Err(error) => Err(format!("seglog scan at {}: {error}", reader.position()).into()),
    }
}

/// Every batch in `start..end`, CRC checked, records counted from the headers (batches
/// never start below the fetch offset in a scan from a batch's base offset).
fn scan_batches(log: &Log, start: i64, end: i64) -> Result<(u64, u64)> {
    let (mut offset, mut records) = (start, 0u64);
    let mut buffer = Vec::new();
    while offset < end {
        let position = fetch(log, offset, READ_BYTES, &mut buffer)?;
        let mut next = offset;
        for batch in Batches::new(&buffer, position).validated() {
            let batch = batch.map_err(|error| format!("seglog batch at {offset}: {error}"))?;
            let header = batch.header();
            let count = black_box(header.record_count)
                .ok_or_else(|| format!("batch at {} has no record count", header.position))?;
            records += u64::try_from(count)?;
            next = header.last_offset + 1;
        }
        if next == offset {
            return Err(format!("seglog read at {offset} returned no whole batch").into());
        }
        offset = next;
    }
    Ok((records, 0))
}

/// Which side of the mixed workload a trial reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedSide {
    /// The appender's rate.
    Appender,
    /// The readers' aggregate rate.
    Readers,
}

/// Reader threads scanning a log (CRC and full record decode, from offset 0 to the end the
/// log had when the run started) while one appender appends a dataset to it; or either side
/// alone. Reports one side's rate, timed from the common start to that side's last thread.
pub struct Mixed<'a> {
    prefill: &'a Dataset,
    append: &'a Dataset,
    dir: PathBuf,
    readers: usize,
    side: MixedSide,
    together: bool,
    log: Option<Log>,
}

impl<'a> Mixed<'a> {
    /// `readers` readers of `prefill` (written before each run, untimed) and/or an appender
    /// of `append`, in `dir`; `together`: both sides run, else only `side`.
    pub fn new(
        prefill: &'a Dataset,
        append: &'a Dataset,
        dir: PathBuf,
        readers: usize,
        side: MixedSide,
        together: bool,
    ) -> Self {
        Self {
            prefill,
            append,
            dir,
            readers,
            side,
            together,
            log: None,
        }
    }
}

impl Trial for Mixed<'_> {
    fn prepare(&mut self) -> Result<()> {
        let log = open(&self.dir, LogConfig::default())?;
        append_all(&log, self.prefill)?;
        self.log = Some(log);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_ref().ok_or("not prepared")?;
        let end = log.log_end_offset();
        let read = self.together || self.side == MixedSide::Readers;
        let write = self.together || self.side == MixedSide::Appender;
        let (append, readers) = (self.append, self.readers);
        let started = std::time::Instant::now();
        let (readers_done, appender_done) = std::thread::scope(|scope| -> Result<_> {
            let readers: Vec<_> = (0..if read { readers } else { 0 })
                .map(|_| {
                    scope.spawn(move || -> Result<std::time::Duration> {
                        // The last fetch may reach past `end` into batches appended meanwhile.
                        let (records, _) = scan_range(log, 0, end, Decode::Records)?;
                        if i64::try_from(records)? < end {
                            return Err(format!("reader saw {records} records of {end}").into());
                        }
                        Ok(started.elapsed())
                    })
                })
                .collect();
            let appender = write.then(|| {
                scope.spawn(move || -> Result<std::time::Duration> {
                    append_all(log, append)?;
                    Ok(started.elapsed())
                })
            });
            let mut readers_done = std::time::Duration::ZERO;
            for reader in readers {
                readers_done = readers_done.max(reader.join().map_err(|_| "reader panicked")??);
            }
            let appender_done = match appender {
                Some(appender) => appender.join().map_err(|_| "appender panicked")??,
                None => std::time::Duration::ZERO,
            };
            Ok((readers_done, appender_done))
        })?;
        let (records, payload, elapsed) = match self.side {
            MixedSide::Readers => {
                let records = self.prefill.spec.records * self.readers as u64;
                let payload = self.prefill.spec.payload_bytes() * self.readers as u64;
                (records, payload, readers_done)
            }
            MixedSide::Appender => (
                self.append.spec.records,
                self.append.spec.payload_bytes(),
                appender_done,
            ),
        };
        let mut work = Work::new(records, payload);
        work.elapsed = Some(elapsed);
        Ok(work)
    }

    fn cleanup(&mut self) -> Result<()> {
        // Dropped, not closed, as in `Append`.
        self.log = None;
        remove_dir(&self.dir)
    }
}

/// One `Log::read_into` per target offset (the batch holding it, `min_one_message`), its CRC
/// checked, records decoded up to the target.
pub struct PointRead<'a> {
    log: &'a Log,
    targets: &'a [u64],
    record_bytes: usize,
    buffer: Vec<u8>,
}

impl<'a> PointRead<'a> {
    /// Point reads of `targets` from `log`, which holds `data`.
    pub fn new(data: &Dataset, log: &'a Log, targets: &'a [u64]) -> Self {
        Self {
            log,
            targets,
            record_bytes: data.spec.record_bytes,
            buffer: Vec::new(),
        }
    }
}

impl Trial for PointRead<'_> {
    fn run(&mut self) -> Result<Work> {
        for &offset in self.targets {
            let offset = i64::try_from(offset)?;
            black_box(read_record(self.log, offset, &mut self.buffer)?);
        }
        let reads = self.targets.len() as u64;
        Ok(Work::new(reads, reads * self.record_bytes as u64))
    }
}

/// The length of the value of the record at `offset`: fetch its batch into `buffer`, check
/// the CRC, decode up to it.
fn read_record(log: &Log, offset: i64, buffer: &mut Vec<u8>) -> Result<usize> {
    let position = fetch(log, offset, 1, buffer)?;
    record_in(buffer, position, offset)
}

/// The value length of the record at `offset` in the batches of `bytes` (file position
/// `position`), each batch's CRC checked.
fn record_in(bytes: &[u8], position: u64, offset: i64) -> Result<usize> {
    let mut found = None;
    for batch in Batches::new(bytes, position).validated() {
        let batch = batch.map_err(|error| format!("seglog batch at {offset}: {error}"))?;
        found = match batch.records_borrowed() {
            Some(borrowed) => value_len_at(borrowed, offset)?,
            None => value_len_at(batch.records(usize::MAX), offset)?,
        };
        if found.is_some() {
            break;
        }
    }
    found.ok_or_else(|| format!("seglog read at {offset} did not return it").into())
}

/// `Log::read_into` of up to `max_bytes` from `offset` (`min_one_message`) into `buffer` (one
/// reused buffer, never cleared: `read_into` replaces its contents); the file position the
/// bytes start at.
fn fetch(log: &Log, offset: i64, max_bytes: u32, buffer: &mut Vec<u8>) -> Result<u64> {
    let fetch = log
        .read_into(offset, max_bytes, Isolation::LogEnd, true, buffer)
        .map_err(|error| format!("seglog fetch at {offset}: {error}"))?;
    Ok(fetch.position)
}

/// What a consumer reads of a decoded record, whichever decoder produced it: borrowed
/// (uncompressed v2 batches) or owned (codecs, legacy formats).
trait ConsumedRecord {
    /// The record's offset.
    fn offset(&self) -> i64;
    /// The length of its value (0 when null), read through `black_box` so that decoding it
    /// is not optimised away.
    fn value_len(self) -> usize;
}

impl ConsumedRecord for RecordRef<'_> {
    fn offset(&self) -> i64 {
        self.offset
    }

    fn value_len(self) -> usize {
        black_box(self.value).map_or(0, <[u8]>::len)
    }
}

impl ConsumedRecord for Record {
    fn offset(&self) -> i64 {
        self.offset
    }

    fn value_len(self) -> usize {
        black_box(self.value).map_or(0, |value| value.len())
    }
}

/// Decodes the records of one batch up to the one at `offset`; its value length, or `None`
/// when the batch does not hold it.
fn value_len_at<R: ConsumedRecord>(
    batch_records: impl Iterator<Item = std::result::Result<R, seglog_records::Error>>,
    offset: i64,
) -> Result<Option<usize>> {
    for record in batch_records {
        let record = record.map_err(|error| format!("seglog record: {error}"))?;
        if record.offset() == offset {
            return Ok(Some(record.value_len()));
        }
    }
    Ok(None)
}

/// For each target timestamp, the record found there: with `Log::read_by_timestamp_into`
/// (the lookup's read hands over the batch), or as ListOffsets (`offset_for_timestamp`) then a
/// fetch of that offset (two reads of the batch).
pub struct TimestampRead<'a> {
    log: &'a Log,
    targets: &'a [i64],
    record_bytes: usize,
    buffer: Vec<u8>,
    combined: bool,
}

impl<'a> TimestampRead<'a> {
    /// Reads by timestamp from `log`, which holds `data`; `combined`: one call
    /// (`read_by_timestamp_into`), else the lookup then the fetch.
    pub fn new(data: &Dataset, log: &'a Log, targets: &'a [i64], combined: bool) -> Self {
        Self {
            log,
            targets,
            record_bytes: data.spec.record_bytes,
            buffer: Vec::new(),
            combined,
        }
    }
}

impl Trial for TimestampRead<'_> {
    fn run(&mut self) -> Result<Work> {
        for &target in self.targets {
            if self.combined {
                let fetched = self
                    .log
                    .read_by_timestamp_into(target, Isolation::LogEnd, &mut self.buffer)
                    .map_err(|error| seglog_error("read_by_timestamp_into", self.log.dir(), error))?
                    .ok_or_else(|| format!("no record at or after timestamp {target}"))?;
                let bytes = &self.buffer[fetched.batch.clone()];
                let offset = fetched.found.offset;
                black_box(record_in(bytes, fetched.position, offset)?);
                continue;
            }
            let found = self
                .log
                .offset_for_timestamp(ListOffsets::Timestamp(target))
                .map_err(|error| seglog_error("offset_for_timestamp", self.log.dir(), error))?
                .ok_or_else(|| format!("no record at or after timestamp {target}"))?;
            black_box(read_record(self.log, found.offset, &mut self.buffer)?);
        }
        let reads = self.targets.len() as u64;
        Ok(Work::new(reads, reads * self.record_bytes as u64))
    }
}

/// `OffsetIndex::lookup` (Kafka's floor search) on a memory-mapped `.index` file.
pub struct FloorLookup<'a> {
    index: OffsetIndex,
    targets: &'a [u32],
}

impl<'a> FloorLookup<'a> {
    /// Writes `entries` to a fresh `.index` file at `path` and maps it for lookups.
    ///
    /// # Errors
    ///
    /// If the index cannot be created or an append fails.
    pub fn new(entries: &[(u32, u32)], path: &Path, targets: &'a [u32]) -> Result<Self> {
        let bytes = u32::try_from(entries.len() * 8)?;
        let index = OffsetIndex::open(path, 0, bytes)
            .map_err(|error| format!("index {}: {error}", path.display()))?;
        for &(offset, position) in entries {
            index
                .append(i64::from(offset), position)
                .map_err(|error| format!("index append {}: {error}", path.display()))?;
        }
        Ok(Self { index, targets })
    }
}

impl Trial for FloorLookup<'_> {
    fn run(&mut self) -> Result<Work> {
        let mut sum = 0u64;
        for &target in self.targets {
            let found = self.index.lookup(i64::from(target));
            sum = sum.wrapping_add(u64::from(found.position));
        }
        black_box(sum);
        Ok(Work::new(self.targets.len() as u64, 0))
    }
}

/// `Log::open` of an existing directory: a crashed log (recovery from the recovery point, every
/// batch's CRC checked) or a cleanly closed one (nothing scanned). Reports the bytes read by
/// syscalls during the open (`read_kib`) and a budget of one segment plus 64 KiB
/// (`read_budget_kib`): a clean open must not read sealed segments.
pub struct Open {
    dir: PathBuf,
    pristine: Option<PathBuf>,
    config: LogConfig,
    records: u64,
    payload_bytes: u64,
    read_budget_kib: f64,
    log: Option<Log>,
}

impl Open {
    /// Opening `dir` with `config`. With `pristine`, `dir` is replaced by a fresh copy of it
    /// before every run (a crashed log, which the open repairs); without it the log is closed
    /// cleanly after every run.
    ///
    /// # Errors
    ///
    /// If the segment files cannot be listed.
    pub fn new(
        dir: PathBuf,
        pristine: Option<PathBuf>,
        config: LogConfig,
        records: u64,
        payload_bytes: u64,
    ) -> Result<Self> {
        let largest = crate::fsx::file_sizes(pristine.as_deref().unwrap_or(&dir), ".log")?.largest;
        Ok(Self {
            dir,
            pristine,
            config,
            records,
            payload_bytes,
            read_budget_kib: (largest + 64 * 1024) as f64 / 1024.0,
            log: None,
        })
    }
}

impl Trial for Open {
    fn prepare(&mut self) -> Result<()> {
        if let Some(pristine) = &self.pristine {
            crate::fsx::copy_dir(pristine, &self.dir)?;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let before = crate::sys::bytes_read()?;
        let log = open(&self.dir, self.config.clone())?;
        let read = crate::sys::bytes_read()?.saturating_sub(before);
        check_end(&log, self.records)?;
        let report = log.load_report();
        let recovered = report.recovered().count();
        if self.pristine.is_some() == report.had_clean_shutdown {
            return Err(format!(
                "expected a {} open, seglog saw clean shutdown = {}",
                if self.pristine.is_some() {
                    "crashed"
                } else {
                    "clean"
                },
                report.had_clean_shutdown
            )
            .into());
        }
        self.log = Some(log);
        let work = Work::new(self.records, self.payload_bytes)
            .with_metric("read_kib", read as f64 / 1024.0)
            .with_metric("recovered_segments", recovered as f64);
        Ok(if self.pristine.is_none() {
            work.with_metric("read_budget_kib", self.read_budget_kib)
        } else {
            work
        })
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some(log) = self.log.take() {
            if self.pristine.is_some() {
                drop(log);
                remove_dir(&self.dir)?;
            } else {
                close(&log)?;
            }
        }
        Ok(())
    }
}

/// The child side of the crash workload: appends the dataset `copies` times into `dir` and
/// hands the open log back (the caller exits without closing it).
///
/// # Errors
///
/// On a failed open or append.
pub fn crash_write(dir: &Path, copies: usize, data: &Dataset) -> Result<Log> {
    let log = open(dir, LogConfig::default())?;
    for _ in 0..copies {
        append_all(&log, data)?;
    }
    Ok(log)
}

fn check_end(log: &Log, records: u64) -> Result<()> {
    let end = log.log_end_offset();
    if u64::try_from(end).ok() != Some(records) {
        return Err(format!("seglog log end offset is {end}, expected {records}").into());
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    fs::remove_dir_all(dir).map_err(|e| io_error("remove", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_scans_count_every_record_and_the_reader_every_value_byte() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let log = open(&dir.path().join("bench-0"), LogConfig::default())?;
        let mut builder = seglog::BatchBuilder::new(0);
        for i in 0..10u8 {
            builder.append(1_700_000_000_000, None, Some(&[i; 5]), &[]);
        }
        let batch = builder.build()?;
        for _ in 0..3 {
            log.append(&batch)?;
        }
        assert_eq!(scan(&log, Decode::Records)?, (30, 150));
        assert_eq!(scan(&log, Decode::BatchesOnly)?, (30, 0));
        Ok(())
    }
}
