//! `seglog demo [DIR]`: the engine at work, end to end, with every figure measured in this run.
//!
//! 1. produce N records (deterministic: record `i` is fully determined by `i`) into a log with
//!    8 MiB segments; 2. show the segments and index sizes; 3. random reads by offset and by
//!    timestamp, each result checked; 4. a full sequential scan, every record checked;
//!    5. size retention; 6. a crash: the log is dropped without being closed (what `kill -9`
//!    leaves: no clean-shutdown marker, untrimmed preallocated indexes), then the active
//!    segment's tail is torn, one byte in the middle of it is flipped and an older segment's
//!    `.index` is deleted; 7. reopen (recovery), then check every surviving record against what
//!    was produced and run `verify` on the files; 8. producers and transactions on the recovered
//!    log: an idempotent producer's retry answered from the deduplication cache (same offsets,
//!    nothing written), an aborted and a committed transaction (the last stable offset held at
//!    the first open one, a `.txnindex` entry for the abort), and a read_committed scan that
//!    skips the aborted records; 9. compaction: a keyed log (another directory, removed at the
//!    end) with many updates and tombstones per key, cleaned in one round (Kafka's log cleaner),
//!    every key's latest value read back and compared; 10. tiered storage (KIP-405): a log of
//!    its own with `remote.storage.enable`, its sealed segments copied to a `file://` store in
//!    Kafka's layout, deleted from the disk by local retention, and every record read back from
//!    offset 0 through the remote tier and checked (`tiering.rs`). The summary table closes
//!    the run.

mod tiering;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seglog::{
    BatchBuilder, Batches, Durability, HighWatermarkPolicy, Isolation, ListOffsets, Log, LogConfig,
    TxnResult,
};

use crate::Outcome;
use crate::cli::DemoArgs;
use crate::cmd::produce::{fill_value, now_ms};
use crate::cmd::verify::verify_dir;
use crate::error::Error;
use crate::output::Out;
use crate::progress::Progress;
use crate::scan::{for_each_record, for_each_record_with};
use crate::view::MAX_DECOMPRESSED_BYTES;

/// Largest segment size of the demo log (small, so that it rolls many times).
const MAX_SEGMENT_BYTES: u64 = 8 << 20;
/// Smallest segment size (for small `--records`).
const MIN_SEGMENT_BYTES: u64 = 64 << 10;
/// Approximate bytes one record takes in the log (key, value, record overhead).
const RECORD_SIZE_ESTIMATE: u64 = 120;
/// Most records per batch.
const MAX_BATCH_RECORDS: u64 = 500;
/// Value size of every record.
const VALUE_BYTES: usize = 100;
/// Records per millisecond of timestamp: record `i` has timestamp `t0 + i / RECORDS_PER_MS`.
const RECORDS_PER_MS: u64 = 100;
/// Random lookups by offset and by timestamp.
const OFFSET_LOOKUPS: usize = 2000;
const TIMESTAMP_LOOKUPS: usize = 500;
/// The producer ids of the transactions step.
const IDEMPOTENT_PID: i64 = 1000;
const ABORTED_PID: i64 = 2000;
const COMMITTED_PID: i64 = 2001;

/// The records the demo writes: record `i` (at offset `i`) is a pure function of `i`.
#[derive(Debug, Clone, Copy)]
struct Workload {
    t0: i64,
}

impl Workload {
    fn key(&self, i: u64) -> Vec<u8> {
        format!("key-{i}").into_bytes()
    }

    fn value(&self, i: u64, buf: &mut [u8]) {
        fill_value(buf, i);
    }

    fn timestamp(&self, i: u64) -> i64 {
        self.t0 + (i / RECORDS_PER_MS) as i64
    }

    /// The first offset whose timestamp is at least `t` (for `t >= t0`).
    fn first_offset_at(&self, t: i64) -> u64 {
        u64::try_from(t - self.t0).unwrap_or(0) * RECORDS_PER_MS
    }

    /// Whether `record` is exactly what was produced at its offset.
    fn matches(&self, record: &seglog::Record, buf: &mut [u8]) -> bool {
        let Ok(i) = u64::try_from(record.offset) else {
            return false;
        };
        self.value(i, buf);
        record.key.as_deref() == Some(&self.key(i)[..])
            && record.value.as_deref() == Some(&buf[..])
            && record.timestamp_ms == Some(self.timestamp(i))
            && record.headers.is_empty()
    }
}

/// One row of the summary table.
struct Row {
    phase: &'static str,
    result: String,
}

/// Runs `seglog demo`.
///
/// # Errors
/// I/O or log errors. Failed checks are not errors: they make the outcome
/// [`Outcome::ProblemsFound`].
pub fn run(args: &DemoArgs, quiet: bool) -> Result<Outcome, Error> {
    let mut out = Out::stdout();
    let (_temp, dir) = prepare_dir(args.dir.as_deref())?;
    // About 20 segments or more, and at least 8 batches per segment.
    let segment_bytes =
        (args.records * RECORD_SIZE_ESTIMATE / 20).clamp(MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES);
    let batch_records = (segment_bytes / RECORD_SIZE_ESTIMATE / 8).clamp(10, MAX_BATCH_RECORDS);
    let mut demo = Demo {
        dir,
        records: args.records,
        segment_bytes: segment_bytes as i32,
        batch_records,
        workload: Workload {
            t0: now_ms() - (args.records / RECORDS_PER_MS) as i64 - 60_000,
        },
        quiet,
        rows: Vec::new(),
        failures: Vec::new(),
    };
    out.line(format_args!(
        "seglog demo: {} records ({}-byte values, {} per batch) into {} with segment.bytes={}; every figure below is measured in this run",
        args.records,
        VALUE_BYTES,
        demo.batch_records,
        demo.dir.display(),
        demo.segment_bytes,
    ))?;
    out.flush()?;
    demo.run(&mut out)?;
    print_summary(&mut out, &demo.rows)?;
    for failure in &demo.failures {
        out.line(format_args!("CHECK FAILED: {failure}"))?;
    }
    out.line(if demo.failures.is_empty() {
        "demo OK: every check passed".to_owned()
    } else {
        format!("demo FAILED: {} checks failed", demo.failures.len())
    })?;
    out.flush()?;
    Ok(if demo.failures.is_empty() {
        Outcome::Ok
    } else {
        Outcome::ProblemsFound
    })
}

/// The partition directory: `DIR` itself (which must not hold a log yet), or a fresh
/// temporary directory removed at the end.
fn prepare_dir(dir: Option<&Path>) -> Result<(Option<tempfile::TempDir>, PathBuf), Error> {
    match dir {
        Some(dir) => {
            if dir.exists() {
                let mut entries = std::fs::read_dir(dir).map_err(Error::io("list", dir))?;
                if entries.next().is_some() {
                    return Err(Error::WrongKind {
                        path: dir.to_owned(),
                        expected: "not empty: give a new or empty directory",
                    });
                }
            }
            std::fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
            Ok((None, dir.to_owned()))
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("seglog-demo-")
                .tempdir()
                .map_err(Error::io("create directory", std::env::temp_dir()))?;
            let dir = temp.path().join("demo-0");
            Ok((Some(temp), dir))
        }
    }
}

struct Demo {
    dir: PathBuf,
    records: u64,
    segment_bytes: i32,
    batch_records: u64,
    workload: Workload,
    quiet: bool,
    rows: Vec<Row>,
    failures: Vec<String>,
}

fn per_sec(n: f64, elapsed: Duration) -> f64 {
    n / elapsed.as_secs_f64().max(1e-9)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Median and 99th percentile of `samples`, in microseconds.
fn percentiles(samples: &mut [Duration]) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    samples.sort();
    let at =
        |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

impl Demo {
    fn config(&self) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            ..LogConfig::default()
        }
    }

    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    /// Prints one step's detailed result as soon as it is known.
    fn row(&mut self, out: &mut Out, phase: &'static str, result: String) -> Result<(), Error> {
        out.line(format_args!("{phase:>18}: {result}"))?;
        out.flush()
    }

    /// Adds a line to the summary table printed at the end.
    fn summary(&mut self, phase: &'static str, result: String) {
        self.rows.push(Row { phase, result });
    }

    fn run(&mut self, out: &mut Out) -> Result<(), Error> {
        let log = Log::open(&self.dir, self.config())?;
        self.produce(out, &log)?;
        self.segments(out, &log)?;
        self.lookups(out, &log)?;
        self.scan(out, &log)?;
        log.close()?;
        drop(log);
        let log = self.retention(out)?;
        let crash = self.crash(out, log)?;
        self.recover(out, &crash)?;
        self.transactions(out)?;
        self.compaction(out)?;
        self.tiering(out)?;
        Ok(())
    }

    /// Idempotent and transactional producers on the recovered log: a retry answered from
    /// the deduplication cache, an aborted and a committed transaction, a read_committed scan
    /// that skips the aborted records.
    fn transactions(&mut self, out: &mut Out) -> Result<(), Error> {
        const BATCHES: i32 = 10;
        const PER_BATCH: i32 = 100;
        let log = Log::open(&self.dir, self.config())?;
        log.set_high_watermark_policy(HighWatermarkPolicy::LogEnd)?;
        let start = log.log_end_offset();
        let now = now_ms();
        let dir = self.dir.clone();
        let batch = |pid: i64, sequence: i32, transactional: bool, tag: &str| {
            let mut builder = BatchBuilder::new(0)
                .producer(pid, 0, sequence)
                .transactional(transactional);
            for i in 0..PER_BATCH {
                let value = format!("{tag}-{}", sequence + i);
                builder.append(now, None, Some(value.as_bytes()), &[]);
            }
            builder.build().map_err(|source| Error::Records {
                path: dir.clone(),
                source,
            })
        };
        // An idempotent producer, then a retry of one of its last 5 batches.
        let mut originals = Vec::new();
        for b in 0..BATCHES {
            originals.push(log.append(&batch(IDEMPOTENT_PID, b * PER_BATCH, false, "idem")?)?);
        }
        let end_before_retry = log.log_end_offset();
        let retried = BATCHES - 2;
        let retry_batch = batch(IDEMPOTENT_PID, retried * PER_BATCH, false, "idem")?;
        let started = Instant::now();
        let retry = log.append(&retry_batch)?;
        let retry_us = started.elapsed().as_secs_f64() * 1e6;
        let original = &originals[retried as usize];
        self.check(
            retry.duplicate
                && retry.first_offset == original.first_offset
                && log.log_end_offset() == end_before_retry,
            || {
                format!(
                    "the retry of batch {retried} was not answered from the cache (duplicate {}, offset {} vs {}, log end {} vs {end_before_retry})",
                    retry.duplicate,
                    retry.first_offset,
                    original.first_offset,
                    log.log_end_offset()
                )
            },
        );
        self.row(
            out,
            "dedup",
            format!(
                "retry of batch {retried} (offsets {}..={}) answered from the producer's cache in {retry_us:.0} µs: same offsets, nothing written",
                original.first_offset, original.last_offset
            ),
        )?;
        // A transaction that aborts and one that commits, interleaved.
        let mut aborted_first = None;
        for b in 0..BATCHES / 2 {
            let a = log.append(&batch(ABORTED_PID, b * PER_BATCH, true, "aborted")?)?;
            aborted_first.get_or_insert(a.first_offset);
            log.append(&batch(COMMITTED_PID, b * PER_BATCH, true, "committed")?)?;
        }
        let aborted_first = aborted_first.unwrap_or(start);
        let open_lso = log.last_stable_offset();
        self.check(open_lso == aborted_first, || {
            format!("with both transactions open the LSO is {open_lso}, not {aborted_first}")
        });
        let abort = log.write_txn_marker(
            ABORTED_PID,
            0,
            0,
            TxnResult::Abort,
            None,
            Durability::PageCache,
        )?;
        log.write_txn_marker(
            COMMITTED_PID,
            0,
            0,
            TxnResult::Commit,
            None,
            Durability::PageCache,
        )?;
        let entries: usize = log
            .txn_index_entries()?
            .iter()
            .map(|(_, e)| e.iter().filter(|t| t.producer_id == ABORTED_PID).count())
            .sum();
        self.check(entries == 1, || {
            format!("{entries} .txnindex entries for the aborted transaction, expected 1")
        });
        let txn_records = i64::from(BATCHES / 2 * PER_BATCH);
        self.row(
            out,
            "transactions",
            format!(
                "{txn_records} records aborted (marker at {}), {txn_records} committed; the LSO stayed at {open_lso} while they were open and is {} now; one .txnindex entry",
                abort.first_offset,
                log.last_stable_offset()
            ),
        )?;
        // read_committed against read_uncommitted over what this step wrote.
        let count = |isolation| -> Result<(u64, u64, Duration), Error> {
            let started = Instant::now();
            let (mut kept, mut aborted) = (0u64, 0u64);
            for_each_record_with(&log, start, isolation, |header, record| {
                if !header.is_control {
                    kept += 1;
                    if record
                        .value
                        .as_deref()
                        .is_some_and(|v| v.starts_with(b"aborted"))
                    {
                        aborted += 1;
                    }
                }
                Ok(ControlFlow::Continue(()))
            })?;
            Ok((kept, aborted, started.elapsed()))
        };
        let (all, aborted_seen, _) = count(Isolation::LogEnd)?;
        let (committed, aborted_committed, elapsed) = count(Isolation::ReadCommitted)?;
        let idem_records = u64::from((BATCHES * PER_BATCH).unsigned_abs());
        let txn = txn_records.unsigned_abs();
        self.check(
            all == idem_records + 2 * txn
                && aborted_seen == txn
                && committed == idem_records + txn
                && aborted_committed == 0,
            || {
                format!(
                    "read_uncommitted saw {all} records ({aborted_seen} aborted), read_committed {committed} ({aborted_committed} aborted)"
                )
            },
        );
        self.row(
            out,
            "read_committed",
            format!(
                "{committed} records in {:.1} ms, {} aborted records skipped (read_uncommitted: {all})",
                elapsed.as_secs_f64() * 1e3,
                all - committed
            ),
        )?;
        self.summary(
            "transactions",
            format!(
                "retry deduplicated in {retry_us:.0} µs; {} aborted records skipped by read_committed",
                all - committed
            ),
        );
        log.close()?;
        Ok(())
    }

    /// A compacted log (`cleanup.policy=compact`) in its own temporary directory: `updates`
    /// records over `keys` keys (every 7th update of a key a tombstone), rolled, then one cleaning
    /// round; the latest record of every key is read back and compared with what was produced.
    fn compaction(&mut self, out: &mut Out) -> Result<(), Error> {
        let updates = (self.records / 2).clamp(20_000, 500_000);
        let keys = (updates / 50).max(100);
        let tmp = tempfile::tempdir().map_err(Error::io("create directory", "compaction"))?;
        let dir = tmp.path().join("table-0");
        let config = LogConfig {
            cleanup_policy: seglog::CleanupPolicy::Compact,
            ..self.config()
        };
        let log = Log::open(&dir, config)?;
        let mut latest: std::collections::BTreeMap<u64, (i64, Option<Vec<u8>>)> =
            std::collections::BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(17);
        let mut value = vec![0u8; VALUE_BYTES];
        let mut i = 0u64;
        while i < updates {
            let mut builder = BatchBuilder::new(0);
            let mut batch = Vec::new();
            for _ in 0..self.batch_records.min(updates - i) {
                let key = rng.random_range(0..keys);
                let tombstone = rng.random_range(0..7) == 0;
                fill_value(&mut value, i);
                let record_value = (!tombstone).then(|| value.clone());
                builder.append(
                    self.workload.t0 + (i / RECORDS_PER_MS) as i64,
                    Some(format!("key-{key:06}").as_bytes()),
                    record_value.as_deref(),
                    &[],
                );
                batch.push((key, record_value));
                i += 1;
            }
            let built = builder.build().map_err(|source| Error::Records {
                path: dir.clone(),
                source,
            })?;
            let first = log.append(&built)?.first_offset;
            for (n, (key, record_value)) in batch.into_iter().enumerate() {
                latest.insert(key, (first + n as i64, record_value));
            }
        }
        log.roll()?;
        log.set_high_watermark(log.log_end_offset())?;
        let bytes_before: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
        let segments_before = log.segment_count();
        let started = Instant::now();
        let report = log.clean()?;
        let elapsed = started.elapsed();
        let bytes_after: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
        let mut read_back = std::collections::BTreeMap::new();
        let mut records_after = 0u64;
        for_each_record(&log, log.log_start_offset(), |_, record| {
            records_after += 1;
            let key = record
                .key
                .as_deref()
                .and_then(|k| std::str::from_utf8(k).ok())
                .and_then(|k| k.strip_prefix("key-"))
                .and_then(|k| k.parse::<u64>().ok());
            if let Some(key) = key {
                read_back.insert(key, (record.offset, record.value.map(|v| v.to_vec())));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        log.close()?;
        drop(log);
        let unchanged = latest
            .iter()
            .filter(|(k, v)| read_back.get(*k) == Some(*v))
            .count();
        let cleaned = report.is_some();
        self.check(cleaned && unchanged == latest.len() && read_back.len() == latest.len(), || {
            format!(
                "compaction: {unchanged} of {} keys kept their latest value ({} keys read back)",
                latest.len(),
                read_back.len()
            )
        });
        self.check(records_after == latest.len() as u64, || {
            format!(
                "compaction left {records_after} records for {} keys",
                latest.len()
            )
        });
        let tombstones = latest.values().filter(|(_, v)| v.is_none()).count();
        self.summary(
            "compaction",
            format!(
                "{} -> {} records, {:.1} -> {:.1} MB in {:.0} ms ({:.1} MB/s)",
                group(updates as f64),
                group(records_after as f64),
                mb(bytes_before),
                mb(bytes_after),
                elapsed.as_secs_f64() * 1e3,
                per_sec(mb(bytes_before), elapsed)
            ),
        );
        self.row(
            out,
            "compaction",
            format!(
                "{updates} updates of {keys} keys ({tombstones} keys end in a tombstone), {segments_before} segments: one cleaner round in {:.1} ms kept {records_after} records ({:.1} MB -> {:.1} MB, {} segments); every key's latest value read back unchanged: {unchanged}/{}",
                elapsed.as_secs_f64() * 1e3,
                mb(bytes_before),
                mb(bytes_after),
                report.as_ref().map_or(0, |r| r.segments_after),
                latest.len()
            ),
        )
    }

    fn produce(&mut self, out: &mut Out, log: &Log) -> Result<(), Error> {
        let progress = Progress::records(self.records, "produce", self.quiet);
        let mut value = vec![0u8; VALUE_BYTES];
        let mut bytes = 0u64;
        let mut batches = 0u64;
        let started = Instant::now();
        let mut i = 0u64;
        while i < self.records {
            let mut builder = BatchBuilder::new(0);
            let end = (i + self.batch_records).min(self.records);
            for j in i..end {
                self.workload.value(j, &mut value);
                builder.append(
                    self.workload.timestamp(j),
                    Some(&self.workload.key(j)),
                    Some(&value),
                    &[],
                );
            }
            let batch = builder.build().map_err(|source| Error::Records {
                path: self.dir.clone(),
                source,
            })?;
            let info = log.append(&batch)?;
            if info.first_offset != i as i64 || info.last_offset != end as i64 - 1 {
                self.failures.push(format!(
                    "append of records {i}..{end} got offsets {}..={}",
                    info.first_offset, info.last_offset
                ));
            }
            bytes += info.size_bytes;
            batches += 1;
            i = end;
            progress.set(i);
        }
        let elapsed = started.elapsed();
        progress.finish();
        self.summary(
            "produce",
            format!(
                "{} records/s, {:.1} MB/s ({} records, {:.1} MB)",
                group(per_sec(self.records as f64, elapsed)),
                per_sec(mb(bytes), elapsed),
                group(self.records as f64),
                mb(bytes)
            ),
        );
        self.row(
            out,
            "produce",
            format!(
                "{} records in {batches} batches, {:.1} MB in {:.2} s: {:.0} records/s, {:.1} MB/s",
                self.records,
                mb(bytes),
                elapsed.as_secs_f64(),
                per_sec(self.records as f64, elapsed),
                per_sec(mb(bytes), elapsed)
            ),
        )
    }

    fn segments(&mut self, out: &mut Out, log: &Log) -> Result<(), Error> {
        let segments = log.segments();
        let index: usize = segments.iter().map(|s| s.index_entries).sum();
        let time: usize = segments.iter().map(|s| s.time_index_entries).sum();
        let bytes: u64 = segments.iter().map(|s| s.size_bytes).sum();
        out.line(format_args!(
            "{:>18}  {:>20} {:>12} {:>8} {:>8}",
            "", "base offset", "bytes", "index", "tindex"
        ))?;
        let n = segments.len();
        for (k, s) in segments.iter().enumerate() {
            if n > 6 && k == 3 {
                out.line(format_args!(
                    "{:>18}  {:>20}",
                    "",
                    format!("... {} more", n - 5)
                ))?;
            }
            if n > 6 && (3..n - 2).contains(&k) {
                continue;
            }
            out.line(format_args!(
                "{:>18}  {:>20} {:>12} {:>8} {:>8}{}",
                "",
                s.base_offset,
                s.size_bytes,
                s.index_entries,
                s.time_index_entries,
                if s.is_active { " (active)" } else { "" }
            ))?;
        }
        let records = self.records;
        self.check(log.log_end_offset() == records as i64, || {
            format!(
                "log end offset {} after producing {records} records",
                log.log_end_offset()
            )
        });
        self.summary(
            "segments",
            format!(
                "{n} of {} bytes; index {} KiB, time index {} KiB",
                self.segment_bytes,
                index * 8 / 1024,
                time * 12 / 1024
            ),
        );
        self.row(
            out,
            "segments",
            format!(
                "{n} segments ({} rolls at {} bytes), {:.1} MB; offset index {index} entries ({} KiB), time index {time} entries ({} KiB)",
                n.saturating_sub(1),
                self.segment_bytes,
                mb(bytes),
                index * 8 / 1024,
                time * 12 / 1024
            ),
        )
    }

    fn lookups(&mut self, out: &mut Out, log: &Log) -> Result<(), Error> {
        let mut rng = StdRng::seed_from_u64(0x5e9_109);
        let mut buf = vec![0u8; VALUE_BYTES];
        let mut times = Vec::with_capacity(OFFSET_LOOKUPS);
        let mut bad = 0usize;
        for _ in 0..OFFSET_LOOKUPS {
            let offset = rng.random_range(0..self.records) as i64;
            let started = Instant::now();
            let data = log.read(offset, 1, Isolation::LogEnd, true)?;
            let bytes = data.slice.read_to_vec()?;
            let mut found = None;
            for batch in Batches::new(&bytes, data.slice.position()) {
                let batch = batch.map_err(|source| Error::Records {
                    path: data.slice.path().to_owned(),
                    source,
                })?;
                for record in batch.records(MAX_DECOMPRESSED_BYTES) {
                    let record = record.map_err(|source| Error::Records {
                        path: data.slice.path().to_owned(),
                        source,
                    })?;
                    if record.offset == offset {
                        found = Some(record);
                        break;
                    }
                }
            }
            times.push(started.elapsed());
            if !found.is_some_and(|r| self.workload.matches(&r, &mut buf)) {
                bad += 1;
            }
        }
        let (median, p99) = percentiles(&mut times);
        self.check(bad == 0, || {
            format!("{bad} of {OFFSET_LOOKUPS} reads by offset returned the wrong record")
        });
        self.summary(
            "read by offset",
            format!("median {median:.1} µs, p99 {p99:.1} µs ({OFFSET_LOOKUPS} random offsets, {} correct)", OFFSET_LOOKUPS - bad),
        );
        self.row(
            out,
            "read by offset",
            format!("{OFFSET_LOOKUPS} random offsets: median {median:.1} µs, p99 {p99:.1} µs; {} correct", OFFSET_LOOKUPS - bad),
        )?;

        let mut times = Vec::with_capacity(TIMESTAMP_LOOKUPS);
        let mut bad = 0usize;
        let span = (self.records / RECORDS_PER_MS).max(1) as i64;
        for _ in 0..TIMESTAMP_LOOKUPS {
            let target = self.workload.t0 + rng.random_range(0..span);
            let started = Instant::now();
            let found = log.offset_for_timestamp(ListOffsets::Timestamp(target))?;
            times.push(started.elapsed());
            let expected = self.workload.first_offset_at(target) as i64;
            if found.map(|f| (f.offset, f.timestamp_ms)) != Some((expected, target)) {
                bad += 1;
            }
        }
        let (median, p99) = percentiles(&mut times);
        self.check(bad == 0, || {
            format!("{bad} of {TIMESTAMP_LOOKUPS} lookups by timestamp found the wrong offset")
        });
        self.summary(
            "read by timestamp",
            format!(
                "median {median:.1} µs, p99 {p99:.1} µs ({TIMESTAMP_LOOKUPS} random timestamps, {} correct)",
                TIMESTAMP_LOOKUPS - bad
            ),
        );
        self.row(
            out,
            "read by timestamp",
            format!(
                "{TIMESTAMP_LOOKUPS} random timestamps: median {median:.1} µs, p99 {p99:.1} µs; {} correct",
                TIMESTAMP_LOOKUPS - bad
            ),
        )
    }

    fn scan(&mut self, out: &mut Out, log: &Log) -> Result<(), Error> {
        let bytes: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
        let progress = Progress::records(self.records, "scan", self.quiet);
        let (count, bad, elapsed) = self.check_records(log, &progress)?;
        progress.finish();
        let records = self.records;
        self.check(count == records && bad == 0, || {
            format!("scan read {count} records ({bad} wrong), expected {records}")
        });
        self.summary(
            "scan",
            format!(
                "{} records/s, {:.1} MB/s ({} records checked)",
                group(per_sec(count as f64, elapsed)),
                per_sec(mb(bytes), elapsed),
                group(count as f64)
            ),
        );
        self.row(
            out,
            "scan",
            format!(
                "{count} records in {:.2} s: {:.0} records/s, {:.1} MB/s; {} match what was produced",
                elapsed.as_secs_f64(),
                per_sec(count as f64, elapsed),
                per_sec(mb(bytes), elapsed),
                count - bad
            ),
        )
    }

    /// Reads every record from the log start; returns (records, wrong records, time). A
    /// record is wrong when it differs from what was produced at its offset or when offsets
    /// are not consecutive.
    fn check_records(&self, log: &Log, progress: &Progress) -> Result<(u64, u64, Duration), Error> {
        let mut buf = vec![0u8; VALUE_BYTES];
        let (mut count, mut bad) = (0u64, 0u64);
        let mut expected = log.log_start_offset();
        let started = Instant::now();
        for_each_record(log, expected, |_, record| {
            if record.offset != expected || !self.workload.matches(&record, &mut buf) {
                bad += 1;
            }
            expected = record.offset + 1;
            count += 1;
            if count % 65536 == 0 {
                progress.set(count);
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok((count, bad, started.elapsed()))
    }

    fn retention(&mut self, out: &mut Out) -> Result<Log, Error> {
        let (total, oldest): (u64, u64) = {
            let log = Log::open_read_only(&self.dir, self.config())?;
            let segments = log.segments();
            let total = segments.iter().map(|s| s.size_bytes).sum();
            (total, segments.first().map_or(0, |s| s.size_bytes))
        };
        // A quarter of the log, but at least the oldest segment: Kafka deletes a segment only
        // while the rest stays at least retention.bytes large, so with few segments a quarter
        // could delete nothing.
        let retention_bytes = (total / 4 * 3).min(total - oldest) as i64;
        let started = Instant::now();
        let log = Log::open(
            &self.dir,
            LogConfig {
                retention_bytes,
                ..self.config()
            },
        )?;
        let open_time = started.elapsed();
        self.check(log.load_report().had_clean_shutdown, || {
            "the log was not clean after close".to_owned()
        });
        log.set_high_watermark(log.log_end_offset())?;
        let started = Instant::now();
        let report = log.delete_old_segments()?;
        let elapsed = started.elapsed();
        let deleted: u64 = report.deleted.iter().map(|d| d.size_bytes).sum();
        let remaining = log.segments();
        let left: u64 = remaining.iter().map(|s| s.size_bytes).sum();
        let oldest = remaining.first().map_or(0, |s| s.size_bytes);
        // Kafka deletes whole segments while the log stays at least retention.bytes large.
        let limit = retention_bytes as u64;
        self.check(!report.deleted.is_empty() && left >= limit && left - oldest < limit, || {
            format!("retention.bytes={retention_bytes} left {left} bytes (oldest segment {oldest} bytes)")
        });
        self.summary(
            "retention",
            format!(
                "{} segments ({:.1} MB) deleted in {:.1} ms",
                report.deleted.len(),
                mb(deleted),
                elapsed.as_secs_f64() * 1e3
            ),
        );
        self.row(
            out,
            "reopen + retention",
            format!(
                "clean reopen in {:.1} ms; retention.bytes={retention_bytes} deleted {} oldest segments ({:.1} MB) in {:.1} ms; log start offset 0 -> {}",
                open_time.as_secs_f64() * 1e3,
                report.deleted.len(),
                mb(deleted),
                elapsed.as_secs_f64() * 1e3,
                log.log_start_offset()
            ),
        )?;
        Ok(log)
    }

    /// Drops the log without closing it, then damages the files; returns what to expect.
    fn crash(&mut self, out: &mut Out, log: Log) -> Result<Crash, Error> {
        let segments = log.segments();
        let log_start_offset = log.log_start_offset();
        let log_end_offset = log.log_end_offset();
        // The crash: no close, so no seal, no trimmed indexes, no clean-shutdown marker.
        drop(log);
        let active = segments.last().ok_or_else(|| Error::WrongKind {
            path: self.dir.clone(),
            expected: "holds no segment",
        })?;
        let bytes = std::fs::read(&active.path).map_err(Error::io("read", &active.path))?;
        let batches: Vec<(u64, u32, i64)> = Batches::new(&bytes, 0)
            .map(|b| {
                b.map(|b| {
                    (
                        b.position(),
                        b.header().total_size,
                        b.header().base_offset.unwrap_or(-1),
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map_err(|source| Error::Records {
                path: active.path.clone(),
                source,
            })?;
        let (Some(&(last_pos, last_size, _)), Some(&(flip_pos, _, flip_base))) =
            (batches.last(), batches.get(batches.len() / 2))
        else {
            return Err(Error::WrongKind {
                path: active.path.clone(),
                expected: "active segment holds too few batches for the demo",
            });
        };
        // Tear the last batch in half (a write cut short), flip one byte in the middle batch.
        let torn_len = last_pos + u64::from(last_size) / 2;
        let mut damaged = bytes[..torn_len as usize].to_vec();
        let flip_at = flip_pos + 100;
        damaged[flip_at as usize] ^= 0x01;
        std::fs::write(&active.path, &damaged).map_err(Error::io("write", &active.path))?;
        // Delete the offset index of the oldest remaining sealed segment.
        let victim = segments
            .iter()
            .find(|s| !s.is_active)
            .map(|s| s.path.with_extension("index"));
        if let Some(index) = &victim {
            std::fs::remove_file(index).map_err(Error::io("delete", index))?;
        }
        self.row(
            out,
            "crash",
            format!(
                "dropped the log unclosed; tore {} bytes off {}; flipped byte {flip_at} of it; deleted {}",
                bytes.len() as u64 - torn_len,
                file_name(&active.path),
                victim.as_deref().map_or("no index (one segment only)".to_owned(), file_name),
            ),
        )?;
        Ok(Crash {
            log_start_offset,
            log_end_offset,
            expected_end: flip_base,
            active_base: active.base_offset,
            flip_pos,
            victim_base: victim.and_then(|_| {
                segments
                    .iter()
                    .find(|s| !s.is_active)
                    .map(|s| s.base_offset)
            }),
        })
    }

    fn recover(&mut self, out: &mut Out, crash: &Crash) -> Result<(), Error> {
        let started = Instant::now();
        let log = Log::open(&self.dir, self.config())?;
        let elapsed = started.elapsed();
        let report = log.load_report().clone();
        let cut: Vec<(i64, u64)> = report.truncations().collect();
        let rebuilt: Vec<i64> = report
            .segments
            .iter()
            .filter(|s| s.rebuilt.is_some())
            .map(|s| s.base_offset)
            .collect();
        let lost = crash.log_end_offset - log.log_end_offset();
        self.check(!report.had_clean_shutdown, || {
            "the crashed log looked clean".to_owned()
        });
        self.check(log.log_end_offset() == crash.expected_end, || {
            format!(
                "after recovery the log ends at {}, expected {} (the first offset of the corrupted batch at byte {})",
                log.log_end_offset(),
                crash.expected_end,
                crash.flip_pos
            )
        });
        // The damage lies in data the clean close had flushed: recovery keeps those bytes
        // (it never cuts flushed data) and serves the segment up to the damaged batch.
        let kept: Vec<(i64, u64, i64)> = report.damaged_tails().collect();
        self.check(
            kept.iter().any(|(base, _, _)| *base == crash.active_base),
            || "recovery did not keep the damaged flushed bytes of the active segment".to_owned(),
        );
        if let Some(victim) = crash.victim_base {
            self.check(rebuilt.contains(&victim), || {
                format!("the deleted index of segment {victim} was not rebuilt")
            });
        }
        self.summary(
            "recovery",
            format!(
                "reopen after the crash in {:.1} ms; {} damaged bytes of flushed data kept (then cut by the destructive repair), {} segments' indexes rebuilt",
                elapsed.as_secs_f64() * 1e3,
                group(cut.iter().map(|(_, b)| *b).sum::<u64>() as f64),
                rebuilt.len()
            ),
        );
        self.row(
            out,
            "recovery",
            format!(
                "reopened in {ms:.1} ms: recovered {recovered} segments; the {kept} bytes from the corrupt batch at byte {at} on were flushed data, so they are kept on disk and not served (appends go to a new segment); rebuilt indexes of {rebuilt} segments; {lost} records after it not served, as expected",
                ms = elapsed.as_secs_f64() * 1e3,
                recovered = report.recovered().count(),
                at = crash.flip_pos,
                kept = cut.iter().map(|(_, b)| b).sum::<u64>(),
                rebuilt = rebuilt.len()
            ),
        )?;

        self.check(log.log_start_offset() == crash.log_start_offset, || {
            format!(
                "the log start offset moved from {} to {} in recovery",
                crash.log_start_offset,
                log.log_start_offset()
            )
        });
        let survivors = u64::try_from(log.log_end_offset() - log.log_start_offset()).unwrap_or(0);
        let progress = Progress::records(survivors, "verify", self.quiet);
        let (count, bad, elapsed) = self.check_records(&log, &progress)?;
        progress.finish();
        log.close()?;
        drop(log);
        // Cutting damaged flushed data takes an explicit, destructive repair (`seglog recover
        // --truncate-damaged`): Kafka's rule, the segment from the bad batch on.
        let started = Instant::now();
        let options = seglog::LogOpenOptions {
            recover_all: true,
            repair_destructively: true,
            ..seglog::LogOpenOptions::default()
        };
        let log = Log::open_with(&self.dir, self.config(), options)?;
        let repaired = log.load_report().clone();
        let repair_time = started.elapsed();
        self.check(
            repaired.damaged_tails().next().is_none()
                && repaired
                    .truncations()
                    .any(|(base, _)| base == crash.active_base)
                && log.log_end_offset() == crash.expected_end,
            || "the destructive repair did not cut the damaged segment at the damage".to_owned(),
        );
        self.row(
            out,
            "repair",
            format!(
                "destructive repair (recover --truncate-damaged) in {:.1} ms: cut {} bytes from the damaged batch on; the log still ends at {}",
                repair_time.as_secs_f64() * 1e3,
                repaired.truncations().map(|(_, b)| b).sum::<u64>(),
                log.log_end_offset()
            ),
        )?;
        log.close()?;
        drop(log);
        let started = Instant::now();
        let files = verify_dir(&self.dir, true)?;
        let verify_time = started.elapsed();
        self.check(count == survivors && bad == 0, || {
            format!("{count} records read ({bad} wrong), expected {survivors}")
        });
        self.check(files.ok, || {
            format!(
                "verify found {} problems after recovery",
                files.problems.len()
            )
        });
        self.row(
            out,
            "verify",
            format!(
                "{count} surviving records read back in {:.2} s, {} identical to what was produced; seglog verify: {} ({} batches, {} index entries checked in {:.2} s)",
                elapsed.as_secs_f64(),
                count - bad,
                if files.ok { "OK".to_owned() } else { format!("{} problems", files.problems.len()) },
                files.batches,
                files.index_entries,
                verify_time.as_secs_f64()
            ),
        )?;
        let retained = crash.log_start_offset;
        let records = self.records;
        self.check(retained as u64 + count + lost as u64 == records, || {
            format!("{retained} deleted + {count} surviving + {lost} lost != {records} produced")
        });
        self.summary(
            "records",
            format!(
                "{} produced = {} removed by retention + {} lost in the crash + {} verified intact",
                group(self.records as f64),
                group(retained as f64),
                group(lost as f64),
                group(count as f64)
            ),
        );
        self.row(
            out,
            "accounting",
            format!("{} produced = {retained} removed by retention + {lost} lost to the crash + {count} surviving", self.records),
        )
    }
}

/// What the crash step did and what recovery must produce.
struct Crash {
    log_start_offset: i64,
    log_end_offset: i64,
    /// The log end offset recovery must leave: the first offset of the corrupted batch.
    expected_end: i64,
    active_base: i64,
    flip_pos: u64,
    victim_base: Option<i64>,
}

/// `1234567.8` -> `"1,234,568"`.
fn group(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn print_summary(out: &mut Out, rows: &[Row]) -> Result<(), Error> {
    out.line("")?;
    out.line("summary (every figure measured in this run)")?;
    let width = rows.iter().map(|r| r.phase.len()).max().unwrap_or(0);
    for row in rows {
        out.line(format_args!("  {:<width$}  {}", row.phase, row.result))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_first_offsets_agree() {
        let w = Workload { t0: 1_000 };
        assert_eq!(w.timestamp(0), 1_000);
        assert_eq!(w.timestamp(RECORDS_PER_MS - 1), 1_000);
        assert_eq!(w.timestamp(RECORDS_PER_MS), 1_001);
        let t = 1_007;
        let first = w.first_offset_at(t);
        assert_eq!(w.timestamp(first), t);
        assert!(w.timestamp(first - 1) < t);
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0.0), "0");
        assert_eq!(group(999.4), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1_460_757.2), "1,460,757");
    }

    #[test]
    fn percentiles_of_samples() {
        let mut samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        let (median, p99) = percentiles(&mut samples);
        assert!((median - 50.0).abs() <= 1.0, "{median}");
        assert!((p99 - 99.0).abs() <= 1.0, "{p99}");
    }
}
