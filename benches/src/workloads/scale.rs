//! Scale (issue 28): the full recovery of many one-batch segments and of 1 MiB segments, and
//! the clean open of 100,000 segments, each row with its bound (a budget, or the raw read +
//! CRC of the same bytes) in the targets.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use seglog::{BatchBuilder, Log, LogConfig, LogOpenOptions};

use crate::Result;
use crate::harness::{Contender, Role, Trial, Work, WorkloadResult, measure};
use crate::workloads::{Context, labels, names};

/// Record timestamps of the one-batch segments.
const T0: i64 = 1_700_000_000_000;
/// The budget of a full recovery per one-batch segment (issue 28).
pub const RECOVER_BUDGET_US: f64 = 100.0;
/// The budget of a clean open of the open row (issue 28: 1 s at 100,000 segments), scaled
/// to the row's segment count.
pub const OPEN_BUDGET_MS_PER_100K: f64 = 1000.0;
/// The memory budget per unopened segment (issue 28).
pub const OPEN_BUDGET_BYTES_PER_SEGMENT: f64 = 256.0;

/// `recover N one-batch segments` and `recover N x 1MiB segments`.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run_recovery(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let mut results = Vec::new();
    let root = context.scratch.dir("scale-recover")?;

    let small = context.plan.scale_small_segments;
    let pristine = root.join("small-pristine-0");
    write_one_batch_segments(&pristine, small)?;
    let about = format!(
        "full recovery (recover_all, no close) of {small} one-batch segments of one 5 B record; \
         the reference opens, reads and CRCs each .log"
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            labels::SCALE_READ_CRC,
            context.cold(ReadAndCrc::new(pristine.clone(), small as u64)),
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(Recover::new(pristine, root.join("small-0"), small)),
        ),
    ];
    results.push(measure(
        names::SCALE_RECOVER_SMALL,
        &about,
        context.plan.rounds,
        contenders,
    )?);

    let large = context.plan.scale_large_segments;
    let pristine = root.join("large-pristine-0");
    let records = write_mib_segments(&pristine, large)?;
    let about = format!(
        "full recovery (recover_all, no close) of {large} segments of 1 MiB ({records} records \
         of 100 B in batches of 100); the reference opens, reads and CRCs each .log"
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            labels::SCALE_READ_CRC,
            context.cold(ReadAndCrc::new(pristine.clone(), records)),
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(Recover::new(pristine, root.join("large-0"), large)),
        ),
    ];
    results.push(measure(
        names::SCALE_RECOVER_LARGE,
        &about,
        context.plan.rounds,
        contenders,
    )?);
    Ok(results)
}

/// `open N segments (clean)`: the clean open of a log of one-batch segments, trusting the
/// clean shutdown, with the resident memory it adds per segment.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run_open(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let root = context.scratch.dir("scale-open")?;
    let segments = context.plan.scale_open_segments;
    let dir = root.join("open-0");
    write_one_batch_segments(&dir, segments)?;
    std::fs::write(dir.join(seglog::CLEAN_SHUTDOWN_FILE), [])
        .map_err(|e| crate::io_error("write", &dir, e))?;
    let about = format!(
        "clean open (trusting the clean shutdown) of {segments} one-batch segments; the \
         reference lists the directory and parses every name"
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            "reference: list the directory + parse names",
            ListAndParse {
                dir: dir.clone(),
                segments: segments as u64,
            },
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            CleanOpen {
                dir,
                segments,
                log: None,
                rss_per_segment: None,
            },
        ),
    ];
    Ok(vec![measure(
        names::SCALE_OPEN,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}

/// The time since `start`, less the time this thread waited for a CPU since `schedstat` (the
/// harness's rule for every row, see `harness::run_once`), for the metrics a trial reports.
struct OnCpu {
    start: Instant,
    wait_ns: u64,
}

impl OnCpu {
    fn start() -> Result<Self> {
        Ok(Self {
            wait_ns: crate::sys::thread_schedstat()?.wait_ns,
            start: Instant::now(),
        })
    }

    fn elapsed(&self) -> Result<Duration> {
        let wall = self.start.elapsed();
        let waited = crate::sys::thread_schedstat()?
            .wait_ns
            .saturating_sub(self.wait_ns);
        Ok(wall.saturating_sub(Duration::from_nanos(waited)))
    }
}

/// The config of the one-batch segment rows (also `scale_root.rs`'s).
pub(super) fn one_batch_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

/// Writes `count` sealed one-batch segments (bases `0..count`) as a cleanly closed log leaves
/// them (the batch, an empty offset index, one time-index entry) and the leader-epoch
/// checkpoint, with plain file writes: the set-up of 100,000 segments must not take minutes.
pub(super) fn write_one_batch_segments(dir: &Path, count: usize) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| crate::io_error("create", dir, e))?;
    for base in 0..count as i64 {
        let name = |kind| dir.join(seglog_segment::file_name(base, kind));
        let mut builder = BatchBuilder::new(base);
        builder.append(T0 + base, None, Some(b"value"), &[]);
        let batch = builder.build()?;
        let write = |path: PathBuf, bytes: &[u8]| {
            std::fs::write(&path, bytes).map_err(|e| crate::io_error("write", &path, e))
        };
        write(name(seglog_segment::FileKind::LOG), &batch)?;
        write(name(seglog_segment::FileKind::INDEX), &[])?;
        let mut entry = (T0 + base).to_be_bytes().to_vec();
        entry.extend(0i32.to_be_bytes());
        write(name(seglog_segment::FileKind::TIME_INDEX), &entry)?;
    }
    let checkpoint = dir.join("leader-epoch-checkpoint");
    std::fs::write(&checkpoint, "0\n0\n").map_err(|e| crate::io_error("write", &checkpoint, e))
}

/// Writes `count` segments of 1 MiB through the log (real indexes), closed cleanly. Returns
/// the records written.
fn write_mib_segments(dir: &Path, count: usize) -> Result<u64> {
    let log = Log::open_with(dir, one_batch_config(), LogOpenOptions::default())?;
    let value = [b'v'; 100];
    let mut offset = 0i64;
    while log.segment_count() <= count {
        let mut builder = BatchBuilder::new(offset);
        for i in 0..100 {
            builder.append(T0 + offset + i, None, Some(&value), &[]);
        }
        log.append(&builder.build()?)?;
        offset += 100;
    }
    log.close()?;
    Ok(u64::try_from(offset)?)
}

/// seglog's full recovery of a fresh copy of `pristine`: `Log::open_with` and `recover_all`,
/// dropped without a close (the close's fsync of every segment is not the recovery's work).
struct Recover {
    pristine: PathBuf,
    dir: PathBuf,
    segments: usize,
    log: Option<Log>,
}

impl Recover {
    fn new(pristine: PathBuf, dir: PathBuf, segments: usize) -> Self {
        Self {
            pristine,
            dir,
            segments,
            log: None,
        }
    }
}

impl Trial for Recover {
    fn prepare(&mut self) -> Result<()> {
        crate::fsx::copy_dir(&self.pristine, &self.dir)
    }

    fn run(&mut self) -> Result<Work> {
        let start = OnCpu::start()?;
        let options = LogOpenOptions {
            recover_all: true,
            ..LogOpenOptions::default()
        };
        let log = Log::open_with(&self.dir, one_batch_config(), options)?;
        let elapsed = start.elapsed()?;
        let recovered = log.load_report().recovered().count();
        if recovered < self.segments {
            return Err(format!("recovered {recovered} of {} segments", self.segments).into());
        }
        self.log = Some(log);
        #[allow(clippy::cast_precision_loss)]
        let per_segment = elapsed.as_secs_f64() * 1e6 / self.segments as f64;
        Ok(Work::new(self.segments as u64, 0)
            .with_metric("us_per_segment", per_segment)
            .with_metric("budget_us_per_segment", RECOVER_BUDGET_US))
    }

    fn cleanup(&mut self) -> Result<()> {
        drop(self.log.take());
        std::fs::remove_dir_all(&self.dir).map_err(|e| crate::io_error("remove", &self.dir, e))
    }
}

/// The bound of a recovery: open each `.log` of the directory, read it whole, check every
/// batch's CRC-32C, close it.
struct ReadAndCrc {
    dir: PathBuf,
    records: u64,
    buffer: Vec<u8>,
}

impl ReadAndCrc {
    fn new(dir: PathBuf, records: u64) -> Self {
        Self {
            dir,
            records,
            buffer: Vec::with_capacity(2 << 20),
        }
    }
}

impl Trial for ReadAndCrc {
    fn run(&mut self) -> Result<Work> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|e| crate::io_error("list", &self.dir, e))?;
        let mut logs = 0u64;
        for entry in entries {
            let path = entry
                .map_err(|e| crate::io_error("list", &self.dir, e))?
                .path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            self.buffer.clear();
            File::open(&path)
                .and_then(|mut file| file.read_to_end(&mut self.buffer))
                .map_err(|e| crate::io_error("read", &path, e))?;
            for batch in seglog_records::Batches::new(&self.buffer[..], 0).validated() {
                batch.map_err(|e| format!("{}: {e}", path.display()))?;
            }
            logs += 1;
        }
        Ok(Work::new(logs, 0).with_metric("records", self.records as f64))
    }
}

/// The bound of a clean open: one listing and a name parse per file.
struct ListAndParse {
    dir: PathBuf,
    segments: u64,
}

impl Trial for ListAndParse {
    fn run(&mut self) -> Result<Work> {
        let mut logs = 0u64;
        for entry in
            std::fs::read_dir(&self.dir).map_err(|e| crate::io_error("list", &self.dir, e))?
        {
            let entry = entry.map_err(|e| crate::io_error("list", &self.dir, e))?;
            if let Some(parsed) = seglog_segment::parse_file_name(&entry.path())
                && parsed.kind == seglog_segment::FileKind::LOG
            {
                logs += 1;
            }
        }
        if logs != self.segments {
            return Err(format!("listed {logs} segments, expected {}", self.segments).into());
        }
        Ok(Work::new(logs, 0))
    }
}

/// seglog's clean open, trusting the clean shutdown; the resident memory it adds, per segment.
struct CleanOpen {
    dir: PathBuf,
    segments: usize,
    log: Option<Log>,
    /// The resident memory the first open added, per segment (later rounds reuse the heap
    /// the previous round freed, so only the first measures it).
    rss_per_segment: Option<f64>,
}

impl Trial for CleanOpen {
    fn run(&mut self) -> Result<Work> {
        let before = crate::sys::current_rss_kib()?;
        let start = OnCpu::start()?;
        let options = LogOpenOptions {
            trust_clean_shutdown: true,
            ..LogOpenOptions::default()
        };
        let log = Log::open_with(&self.dir, one_batch_config(), options)?;
        let elapsed = start.elapsed()?;
        let after = crate::sys::current_rss_kib()?;
        if !log.load_report().had_clean_shutdown || log.segment_count() < self.segments {
            return Err(format!(
                "expected a clean open of {} segments, got {}",
                self.segments,
                log.segment_count()
            )
            .into());
        }
        self.log = Some(log);
        #[allow(clippy::cast_precision_loss)]
        let segments = self.segments as f64;
        #[allow(clippy::cast_precision_loss)]
        let grown = after.saturating_sub(before) as f64 * 1024.0;
        let rss_per_segment = *self.rss_per_segment.get_or_insert(grown / segments);
        Ok(Work::new(self.segments as u64, 0)
            .with_metric("open_ms", elapsed.as_secs_f64() * 1e3)
            .with_metric("budget_ms", OPEN_BUDGET_MS_PER_100K * segments / 100_000.0)
            .with_metric("rss_bytes_per_segment", rss_per_segment)
            .with_metric("budget_bytes_per_segment", OPEN_BUDGET_BYTES_PER_SEGMENT))
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some(log) = self.log.take() {
            // The close writes the clean-shutdown marker again for the next round.
            log.close()?;
        }
        Ok(())
    }
}
