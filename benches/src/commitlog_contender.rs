//! Contender (c): the `commitlog` crate, 0.2 — an append-only segmented log with a dense
//! mmap'd index (one entry per message) and a CRC-32C per message.
//!
//! Used through its public API as an application would. Two things it does not do that the
//! workloads need, and what we do instead (both documented in `docs/performance.md`):
//! - `CommitLog::flush` msyncs the index but never fsyncs the segment data (`File::flush` is a
//!   no-op), so for durable appends we also `fdatasync` the active segment through our own
//!   handle on the same file; without that its "durable" figure would not be durable.
//! - It has no timestamps, so it sits out the read-by-timestamp and index workloads.

use std::fs::{self, File};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use commitlog::message::{MessageBuf, MessageSet};
use commitlog::{CommitLog, LogOptions, ReadLimit};

use crate::data::Dataset;
use crate::harness::{Trial, Work};
use crate::writers::run_writers;
use crate::{Result, io_error};

/// Bytes commitlog adds to each message (offset, size, CRC, metadata size).
pub const MESSAGE_OVERHEAD: usize = 20;

/// Scan read size, as for every contender.
const READ_BYTES: usize = 1 << 20;

/// Opens (or creates) a commitlog in `dir` with `segment_bytes` segments.
///
/// # Errors
///
/// If commitlog cannot open the directory.
pub fn open(dir: &Path, segment_bytes: usize) -> Result<CommitLog> {
    let mut options = LogOptions::new(dir);
    options.segment_max_bytes(segment_bytes);
    CommitLog::new(options).map_err(|e| io_error("open commitlog", dir, e))
}

/// Appends every message set, in order.
///
/// # Errors
///
/// On the first failed append.
pub fn append_all(log: &mut CommitLog, sets: &mut [MessageBuf]) -> Result<()> {
    for set in sets {
        log.append(set)
            .map_err(|error| format!("commitlog append: {error}"))?;
    }
    Ok(())
}

/// Bytes one message set occupies in a commitlog segment.
pub fn set_bytes(set: &MessageBuf) -> usize {
    set.bytes().len()
}

/// Appends the whole dataset to a fresh log, page cache only.
pub struct Append {
    sets: Vec<MessageBuf>,
    records: u64,
    payload_bytes: u64,
    dir: PathBuf,
    log: Option<CommitLog>,
}

impl Append {
    /// Appending `data` into `dir` (recreated every run).
    ///
    /// # Errors
    ///
    /// If the message sets cannot be built.
    pub fn new(data: &Dataset, dir: PathBuf) -> Result<Self> {
        Ok(Self {
            sets: data.commitlog_message_sets()?,
            records: data.spec.records,
            payload_bytes: data.spec.payload_bytes(),
            dir,
            log: None,
        })
    }
}

impl Trial for Append {
    fn prepare(&mut self) -> Result<()> {
        self.log = Some(open(&self.dir, 1 << 30)?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_mut().ok_or("not prepared")?;
        append_all(log, &mut self.sets)?;
        Ok(Work::new(self.records, self.payload_bytes))
    }

    fn cleanup(&mut self) -> Result<()> {
        self.log = None;
        remove_dir(&self.dir)
    }
}

/// Durable appends from `writers` threads: lock, append, msync the index (`flush`), unlock,
/// `fdatasync` the segment file.
pub struct DurableAppend {
    sets: Vec<MessageBuf>,
    writers: usize,
    record_bytes: usize,
    batch_records: usize,
    dir: PathBuf,
    state: Option<(Mutex<CommitLog>, File)>,
}

impl DurableAppend {
    /// `batches` batches of `data`, round-robin over `writers` threads, into `dir`.
    ///
    /// # Errors
    ///
    /// If the message sets cannot be built.
    pub fn new(data: &Dataset, batches: usize, writers: usize, dir: PathBuf) -> Result<Self> {
        let mut sets = data.commitlog_message_sets()?;
        sets.truncate(batches.min(sets.len()));
        if sets.len() < batches {
            return Err(format!(
                "durable append wants {batches} batches, data has {}",
                sets.len()
            )
            .into());
        }
        Ok(Self {
            sets,
            writers,
            record_bytes: data.spec.record_bytes,
            batch_records: data.spec.batch_records,
            dir,
            state: None,
        })
    }
}

impl Trial for DurableAppend {
    fn prepare(&mut self) -> Result<()> {
        let log = open(&self.dir, 1 << 30)?;
        // Segments are 1 GiB: every durable workload stays in the first one.
        let segment = self.dir.join(format!("{:020}.log", 0));
        let file = File::open(&segment).map_err(|e| io_error("open", &segment, e))?;
        self.state = Some((Mutex::new(log), file));
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let (log, file) = self.state.as_ref().ok_or("not prepared")?;
        let (writers, dir) = (self.writers, &self.dir);
        let batches = self.sets.len() as u64;
        // Writer w appends sets w, w + writers, ... (the same split as the other contenders).
        let mut per_writer: Vec<Vec<&mut MessageBuf>> = (0..writers).map(|_| Vec::new()).collect();
        for (index, set) in self.sets.iter_mut().enumerate() {
            per_writer[index % writers].push(set);
        }
        run_writers(per_writer, |sets| -> Result<()> {
            for set in sets {
                {
                    let mut log = log.lock().map_err(|_| "commitlog lock poisoned")?;
                    log.append(set)
                        .map_err(|e| format!("commitlog append: {e}"))?;
                    log.flush()
                        .map_err(|e| io_error("flush commitlog", dir, e))?;
                }
                file.sync_data()
                    .map_err(|e| io_error("fdatasync", dir, e))?;
            }
            Ok(())
        })?;
        let records = batches * self.batch_records as u64;
        Ok(Work::new(records, records * self.record_bytes as u64))
    }

    fn cleanup(&mut self) -> Result<()> {
        self.state = None;
        remove_dir(&self.dir)
    }
}

/// Reads the whole log in offset order, 1 MiB per read; commitlog checks every message's
/// CRC-32C while reading (`MessageBuf::from_bytes`).
pub struct Scan {
    log: CommitLog,
    records: u64,
    payload_bytes: u64,
}

impl Scan {
    /// Scanning the log in `dir`, which holds `data`.
    ///
    /// # Errors
    ///
    /// If the log cannot be opened.
    pub fn new(data: &Dataset, dir: &Path) -> Result<Self> {
        Ok(Self {
            log: open(dir, 1 << 30)?,
            records: data.spec.records,
            payload_bytes: data.spec.payload_bytes(),
        })
    }
}

impl Trial for Scan {
    fn run(&mut self) -> Result<Work> {
        let (records, payload_bytes) = scan(&self.log)?;
        if records != self.records || payload_bytes != self.payload_bytes {
            return Err(format!(
                "commitlog scan saw {records} records, expected {}",
                self.records
            )
            .into());
        }
        Ok(Work::new(records, payload_bytes))
    }
}

/// Reads every message of `log` in offset order; returns (messages, payload bytes).
///
/// # Errors
///
/// On a read error or a CRC mismatch.
pub fn scan(log: &CommitLog) -> Result<(u64, u64)> {
    let (mut offset, mut records, mut payload_bytes) = (0u64, 0u64, 0u64);
    while offset < log.next_offset() {
        let set = log
            .read(offset, ReadLimit::max_bytes(READ_BYTES))
            .map_err(|error| format!("commitlog read at {offset}: {error}"))?;
        let mut next = None;
        for message in set.iter() {
            payload_bytes += black_box(message.payload()).len() as u64;
            records += 1;
            next = Some(message.offset() + 1);
        }
        offset = next.ok_or_else(|| format!("commitlog read at {offset} returned nothing"))?;
    }
    Ok((records, payload_bytes))
}

/// One read per target offset, limited to exactly one message.
pub struct PointRead<'a> {
    log: CommitLog,
    targets: &'a [u64],
    record_bytes: usize,
}

impl<'a> PointRead<'a> {
    /// Point reads of `targets` from the log in `dir`, which holds `data`.
    ///
    /// # Errors
    ///
    /// If the log cannot be opened.
    pub fn new(data: &Dataset, dir: &Path, targets: &'a [u64]) -> Result<Self> {
        Ok(Self {
            log: open(dir, 1 << 30)?,
            targets,
            record_bytes: data.spec.record_bytes,
        })
    }
}

impl Trial for PointRead<'_> {
    fn run(&mut self) -> Result<Work> {
        let limit = MESSAGE_OVERHEAD + self.record_bytes;
        for &offset in self.targets {
            let set = self
                .log
                .read(offset, ReadLimit::max_bytes(limit))
                .map_err(|error| format!("commitlog read at {offset}: {error}"))?;
            let message = set
                .iter()
                .next()
                .ok_or("commitlog point read returned nothing")?;
            if message.offset() != offset {
                return Err(format!("asked for {offset}, got {}", message.offset()).into());
            }
            black_box(message.payload());
        }
        let reads = self.targets.len() as u64;
        Ok(Work::new(reads, reads * self.record_bytes as u64))
    }
}

/// Opens an existing log directory (`CommitLog::new`): used for the unflushed-crash recovery
/// and for the clean open of many segments. commitlog validates nothing on open: it maps every
/// index and trusts it.
pub struct Open {
    dir: PathBuf,
    pristine: Option<PathBuf>,
    segment_bytes: usize,
    records: u64,
    payload_bytes: u64,
    log: Option<CommitLog>,
}

impl Open {
    /// Opening `dir`. With `pristine`, `dir` is replaced by a fresh copy of it before every run
    /// (a crashed log, which opening may repair).
    pub fn new(
        dir: PathBuf,
        pristine: Option<PathBuf>,
        segment_bytes: usize,
        records: u64,
        payload_bytes: u64,
    ) -> Self {
        Self {
            dir,
            pristine,
            segment_bytes,
            records,
            payload_bytes,
            log: None,
        }
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
        let log = open(&self.dir, self.segment_bytes)?;
        let read = crate::sys::bytes_read()?.saturating_sub(before);
        if log.next_offset() != self.records {
            return Err(format!(
                "commitlog reopened with next offset {}, expected {}",
                log.next_offset(),
                self.records
            )
            .into());
        }
        self.log = Some(log);
        Ok(Work::new(self.records, self.payload_bytes)
            .with_metric("read_kib", read as f64 / 1024.0))
    }

    fn cleanup(&mut self) -> Result<()> {
        self.log = None;
        if self.pristine.is_some() {
            remove_dir(&self.dir)?;
        }
        Ok(())
    }
}

fn remove_dir(dir: &Path) -> Result<()> {
    fs::remove_dir_all(dir).map_err(|e| io_error("remove", dir, e))
}
