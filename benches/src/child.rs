//! Work done in a child process of this same binary, for two reasons:
//! - peak RSS (`VmHWM`) is per process, so each RSS measurement gets a process of its own;
//! - a crash is simulated by a child that appends and then exits without closing anything, so
//!   the page cache holds exactly what a killed broker would leave behind.
//!
//! The parent runs `seglog-benches --child <task> ...`; the child prints one JSON line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::data::{DataSpec, Dataset};
use crate::harness::Role;
use crate::{Result, sys};

/// What a child does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Append the dataset `copies` times, print the report, exit without closing the log.
    CrashWrite,
    /// Open the log and read it all in offset order, then report peak RSS.
    RssScan,
}

impl Task {
    fn name(self) -> &'static str {
        match self {
            Self::CrashWrite => "crash-write",
            Self::RssScan => "rss-scan",
        }
    }
}

/// The child's answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// Records written or read.
    pub records: u64,
    /// Payload bytes written or read.
    pub payload_bytes: u64,
    /// Time of the work itself (not process start-up or data generation).
    pub elapsed_ns: u64,
    /// `VmHWM` at the end, KiB.
    pub peak_rss_kib: u64,
    /// `VmRSS` just before the log was opened, KiB (the binary and its data, no log yet).
    pub baseline_rss_kib: u64,
}

impl Report {
    /// The work's duration.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }
}

/// Parameters shared by parent and child.
#[derive(Clone, Debug)]
pub struct Job {
    /// What to do.
    pub task: Task,
    /// With which contender.
    pub role: Role,
    /// The log directory.
    pub dir: PathBuf,
    /// The data (regenerated in the child: generation is deterministic).
    pub spec: DataSpec,
    /// How many times the dataset is appended (crash-write) or the log holds it (rss-scan).
    pub copies: usize,
}

/// Runs `job` in a child process and returns its report.
///
/// # Errors
///
/// If the child cannot start, fails, or prints no report.
pub fn spawn(job: &Job) -> Result<Report> {
    let exe = std::env::current_exe().map_err(|error| format!("current_exe: {error}"))?;
    let output = Command::new(&exe)
        .args([
            "--child",
            job.task.name(),
            "--contender",
            role_name(job.role),
        ])
        .arg("--dir")
        .arg(&job.dir)
        .args(["--records", &job.spec.records.to_string()])
        .args(["--record-bytes", &job.spec.record_bytes.to_string()])
        .args(["--batch-records", &job.spec.batch_records.to_string()])
        .args(["--copies", &job.copies.to_string()])
        .output()
        .map_err(|error| format!("could not start {}: {error}", exe.display()))?;
    if !output.status.success() {
        return Err(format!(
            "child {} {} failed with {}: {}",
            job.task.name(),
            role_name(job.role),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().ok_or("child printed no report")?;
    Ok(serde_json::from_str(line)?)
}

/// The child side: parses `args` (everything after `--child`), does the job, prints the
/// report. A crash-write child exits here without returning (nothing is dropped).
///
/// # Errors
///
/// On bad arguments or a failed job.
pub fn main(args: &[String]) -> Result<()> {
    let job = parse(args)?;
    if job.task == Task::CrashWrite {
        return crash_write(&job);
    }
    // Nothing is generated or loaded before the log is opened: the peak is the scan's.
    let baseline_rss_kib = sys::current_rss_kib()?;
    let sched = sys::thread_schedstat()?;
    let start = Instant::now();
    // Stops the clock: wall-clock so far minus the time spent waiting for a CPU (as in the
    // harness).
    let stop = || -> Result<u64> {
        let waited = sys::thread_schedstat()?
            .wait_ns
            .saturating_sub(sched.wait_ns);
        let wall = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Ok(wall.saturating_sub(waited).max(1))
    };
    let mut elapsed_ns = None;
    let (records, payload_bytes) = match job.role {
        Role::Ceiling => rss_scan_ceiling(&job.dir.join("ceiling.log"))?,
        Role::Commitlog => {
            let log = crate::commitlog_contender::open(&job.dir, 1 << 30)?;
            crate::commitlog_contender::scan(&log)?
        }
        Role::Seglog => {
            let log = crate::seglog_contender::open(&job.dir, seglog::LogConfig::default())?;
            let scanned =
                crate::seglog_contender::scan(&log, crate::seglog_contender::Decode::Records)?;
            elapsed_ns = Some(stop()?);
            // A clean close, so the next round opens without recovery.
            crate::seglog_contender::close(&log)?;
            scanned
        }
        Role::Reference | Role::Kafka => {
            return Err(format!("no rss-scan for {}", role_name(job.role)).into());
        }
    };
    let elapsed_ns = match elapsed_ns {
        Some(elapsed_ns) => elapsed_ns,
        None => stop()?,
    };
    let report = Report {
        records,
        payload_bytes,
        elapsed_ns,
        peak_rss_kib: sys::peak_rss_kib()?,
        baseline_rss_kib,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn crash_write(job: &Job) -> Result<()> {
    let data = Dataset::generate(job.spec)?;
    let baseline_rss_kib = sys::current_rss_kib()?;
    let start = Instant::now();
    match job.role {
        Role::Commitlog => {
            let mut log = crate::commitlog_contender::open(&job.dir, 1 << 30)?;
            let mut sets = data.commitlog_message_sets()?;
            for _ in 0..job.copies {
                crate::commitlog_contender::append_all(&mut log, &mut sets)?;
            }
            finish_crash(job, &data, start, baseline_rss_kib, log)
        }
        Role::Seglog => {
            let log = crate::seglog_contender::crash_write(&job.dir, job.copies, &data)?;
            finish_crash(job, &data, start, baseline_rss_kib, log)
        }
        role => Err(format!("no crash-write for {}", role_name(role)).into()),
    }
}

/// Prints the crash-write report and exits the process with `log` still open: no destructor,
/// no close, no flush runs.
fn finish_crash<L>(job: &Job, data: &Dataset, start: Instant, baseline: u64, log: L) -> ! {
    let records = data.spec.records * job.copies as u64;
    let report = Report {
        records,
        payload_bytes: records * data.spec.record_bytes as u64,
        elapsed_ns: u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
        peak_rss_kib: sys::peak_rss_kib().unwrap_or(0),
        baseline_rss_kib: baseline,
    };
    match serde_json::to_string(&report) {
        Ok(line) => println!("{line}"),
        Err(error) => eprintln!("report: {error}"),
    }
    // Keep the log alive to the end so nothing is dropped before the exit.
    std::hint::black_box(&log);
    std::process::exit(0)
}

fn rss_scan_ceiling(path: &Path) -> Result<(u64, u64)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| crate::io_error("open", path, e))?;
    let mut buffer = vec![0u8; crate::ceiling::CHUNK_BYTES];
    let mut total = 0u64;
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|e| crate::io_error("read", path, e))?;
        if read == 0 {
            break;
        }
        std::hint::black_box(&buffer[..read]);
        total += read as u64;
    }
    Ok((0, total))
}

/// The command-line name of a contender.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Ceiling => "ceiling",
        Role::Commitlog => "commitlog",
        Role::Seglog => "seglog",
        Role::Reference => "reference",
        Role::Kafka => "kafka",
    }
}

fn parse(args: &[String]) -> Result<Job> {
    let value = |name: &str| -> Result<&str> {
        let index = args
            .iter()
            .position(|arg| arg == name)
            .ok_or_else(|| format!("child needs {name}"))?;
        Ok(args
            .get(index + 1)
            .ok_or_else(|| format!("{name} needs a value"))?)
    };
    let task = match args.first().map(String::as_str) {
        Some("crash-write") => Task::CrashWrite,
        Some("rss-scan") => Task::RssScan,
        other => return Err(format!("unknown child task {other:?}").into()),
    };
    let role = match value("--contender")? {
        "ceiling" => Role::Ceiling,
        "commitlog" => Role::Commitlog,
        "seglog" => Role::Seglog,
        other => return Err(format!("unknown contender {other}").into()),
    };
    Ok(Job {
        task,
        role,
        dir: PathBuf::from(value("--dir")?),
        spec: DataSpec {
            records: value("--records")?.parse()?,
            record_bytes: value("--record-bytes")?.parse()?,
            batch_records: value("--batch-records")?.parse()?,
        },
        copies: value("--copies")?.parse()?,
    })
}
