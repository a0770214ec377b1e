//! `seglog produce --count N --record-bytes B` (the CLI's load generator, crates/cli) as a whole
//! process, against the library doing what the CLI does with the same records, in-process.
//!
//! What both rows include, timed wall-clock (spawn to exit for the CLI): creating the
//! directory, `Log::open` with the CLI's configuration (`seglog_cli::config_from_args` of no
//! `--config`), for every record a `seglog_cli::now_ms()` timestamp and a
//! `BatchBuilder::append` of key `key-{i}` and the CLI's value for record `i`
//! (`seglog_cli::fill_value`), a `build` and one `Log::append` per 100 records (the CLI's
//! default `--batch-records`), and `Log::close` (which fsyncs the log and writes its
//! checkpoints and clean-shutdown marker, as the CLI's exit does). The library's keys and
//! values are generated before the clock starts (no generation cost); the CLI generates its
//! own. The CLI adds everything a process is: exec, start-up, argument parsing, its own
//! value generation, its summary line, exit.
//!
//! No runqueue wait is subtracted from either row: the harness's rule reads the measuring
//! thread's `schedstat`, and a child's cannot be read once it has exited (std gives no
//! `wait4` rusage). Both rows are wall-clock, so on a loaded machine both absorb the other
//! jobs alike; `cpu_s` shows each one's CPU time (the child's from the parent's `cutime +
//! cstime`, the library's the process's own, at 10 ms resolution).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use seglog::Log;
use seglog_records::BatchBuilder;

use crate::harness::{Contender, Role, Trial, Work, WorkloadResult, measure};
use crate::workloads::{Context, names, recycled};
use crate::{Result, io_error, sys};

/// The CLI's default `--batch-records`, which both rows use.
const BATCH_RECORDS: usize = 100;

/// `seglog produce`: the workload, or nothing (and a note) when the `seglog` binary is not
/// where `cargo xtask bench` builds it.
///
/// # Errors
///
/// The first failing trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let cli = match find_cli() {
        Ok(cli) => cli,
        Err(reason) => {
            context
                .notes
                .push(format!("{}: skipped: {reason}", names::PRODUCE));
            return Ok(Vec::new());
        }
    };
    if let Some(stale) = stale_note(&cli) {
        context.notes.push(format!("{}: {stale}", names::PRODUCE));
    }
    let records = context.plan.produce_records;
    let record_bytes = context.plan.small.record_bytes;
    let root = context.scratch.dir("produce")?;
    let data = Records::generate(records, record_bytes);
    // Record framing, the key and the batch header: about 20 bytes a record.
    let recycle_bytes = records * (record_bytes as u64 + 20);
    let about = format!(
        "`seglog produce DIR --count {records} --record-bytes {record_bytes}` (batches of \
         {BATCH_RECORDS}) as a child process, spawn to exit, against the library doing the same \
         in-process from open to close (keys and values generated beforehand, a timestamp per \
         record, BatchBuilder, Log::append per batch, Log::close with its fsync); wall-clock, no \
         runqueue wait subtracted from either"
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            "library: open + BatchBuilder + append + close",
            recycled(
                &root,
                recycle_bytes,
                LibraryProduce::new(&data, root.join("library-0"), Timed::OpenToClose),
            ),
        ),
        Contender::new(
            Role::Seglog,
            "seglog produce (whole process)",
            recycled(
                &root,
                recycle_bytes,
                CliProduce {
                    cli: cli.clone(),
                    dir: root.join("cli-0"),
                    records,
                    record_bytes,
                },
            ),
        ),
        Contender::new(
            Role::Reference,
            "reference: library, appends only (open, close untimed)",
            recycled(
                &root,
                recycle_bytes,
                LibraryProduce::new(&data, root.join("appends-0"), Timed::AppendsOnly),
            ),
        ),
    ];
    Ok(vec![measure(
        names::PRODUCE,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}

/// The `seglog` binary: next to this one (`target/release/`, where `cargo xtask bench` builds
/// both), else `$CARGO_TARGET_DIR/release/seglog`.
fn find_cli() -> std::result::Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        candidates.push(dir.join("seglog"));
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(PathBuf::from(dir).join("release").join("seglog"));
    }
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .ok_or_else(|| {
            format!(
                "no `seglog` binary at {} (`cargo xtask bench` builds it: `cargo build \
                 --release -p seglog-cli`)",
                candidates
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        })
}

/// A note when a source file of the `seglog` binary (crates/cli and the crates it links) is
/// newer than the binary: it was built before the last change (`cargo run -p seglog-benches`
/// does not rebuild it; `cargo xtask bench` does).
fn stale_note(cli: &Path) -> Option<String> {
    let built = fs::metadata(cli).and_then(|meta| meta.modified()).ok()?;
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut dirs: Vec<PathBuf> = ["cli", "log", "records", "segment", "index-core"]
        .iter()
        .map(|name| crates.join(name).join("src"))
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).ok()?.flatten() {
            let (path, meta) = (entry.path(), entry.metadata().ok()?);
            if meta.is_dir() {
                dirs.push(path);
            } else if meta.modified().is_ok_and(|modified| modified > built) {
                return Some(format!(
                    "{} is older than {} and may not hold the code measured (`cargo xtask \
                     bench` rebuilds it)",
                    cli.display(),
                    path.display()
                ));
            }
        }
    }
    None
}

/// The records the CLI writes, generated ahead: key `key-{i}` and the CLI's value of record `i`.
pub struct Records {
    records: u64,
    record_bytes: usize,
    values: Vec<u8>,
    keys: Vec<u8>,
    /// End of key `i` in `keys`.
    key_ends: Vec<usize>,
}

impl Records {
    /// `records` records with values of `record_bytes`.
    pub fn generate(records: u64, record_bytes: usize) -> Self {
        let count = usize::try_from(records).unwrap_or(usize::MAX);
        let mut values = vec![0u8; count.saturating_mul(record_bytes)];
        let mut keys = Vec::with_capacity(count.saturating_mul(10));
        let mut key_ends = Vec::with_capacity(count);
        for (i, value) in (0..records).zip(values.chunks_exact_mut(record_bytes.max(1))) {
            seglog_cli::fill_value(value, i);
            keys.extend_from_slice(format!("key-{i}").as_bytes());
            key_ends.push(keys.len());
        }
        Self {
            records,
            record_bytes,
            values,
            keys,
            key_ends,
        }
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    fn value(&self, i: usize) -> &[u8] {
        &self.values[i * self.record_bytes..(i + 1) * self.record_bytes]
    }
}

/// What a [`LibraryProduce`] run times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timed {
    /// Directory, open, appends, close: what the CLI's process does.
    OpenToClose,
    /// The appends only; the log is opened before and closed after, untimed.
    AppendsOnly,
}

/// The library doing what `seglog produce` does, in this process.
struct LibraryProduce<'a> {
    data: &'a Records,
    dir: PathBuf,
    timed: Timed,
    log: Option<Log>,
}

impl<'a> LibraryProduce<'a> {
    fn new(data: &'a Records, dir: PathBuf, timed: Timed) -> Self {
        Self {
            data,
            dir,
            timed,
            log: None,
        }
    }

    fn open(&self) -> Result<Log> {
        fs::create_dir_all(&self.dir).map_err(|e| io_error("create directory", &self.dir, e))?;
        let config = seglog_cli::config_from_args(&[])
            .map_err(|error| format!("seglog produce's configuration: {error}"))?;
        Log::open(&self.dir, config)
            .map_err(|error| format!("seglog open {}: {error}", self.dir.display()).into())
    }

    fn append_all(&self, log: &Log) -> Result<()> {
        let count = usize::try_from(self.data.records)?;
        let mut first = 0;
        while first < count {
            let end = (first + BATCH_RECORDS).min(count);
            let mut builder = BatchBuilder::new(0);
            for i in first..end {
                builder.append(
                    seglog_cli::now_ms(),
                    Some(self.data.key(i)),
                    Some(self.data.value(i)),
                    &[],
                );
            }
            let batch = builder.build()?;
            log.append(&batch)
                .map_err(|error| format!("seglog append {}: {error}", self.dir.display()))?;
            first = end;
        }
        Ok(())
    }
}

impl Trial for LibraryProduce<'_> {
    fn prepare(&mut self) -> Result<()> {
        if self.timed == Timed::AppendsOnly {
            self.log = Some(self.open()?);
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let cpu = sys::process_cpu()?;
        let start = Instant::now();
        let mut close_s = None;
        match self.timed {
            Timed::OpenToClose => {
                let log = self.open()?;
                self.append_all(&log)?;
                let closing = Instant::now();
                log.close()
                    .map_err(|error| format!("seglog close {}: {error}", self.dir.display()))?;
                close_s = Some(closing.elapsed().as_secs_f64());
            }
            Timed::AppendsOnly => {
                let log = self.log.as_ref().ok_or("not prepared")?;
                self.append_all(log)?;
            }
        }
        let wall = start.elapsed();
        let cpu_s = sys::process_cpu()?.own_s - cpu.own_s;
        let records = self.data.records;
        let mut work =
            Work::new(records, records * self.data.record_bytes as u64).with_metric("cpu_s", cpu_s);
        if let Some(close_s) = close_s {
            work = work.with_metric("close_s", close_s);
        }
        work.elapsed = Some(wall);
        Ok(work)
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some(log) = self.log.take() {
            log.close()
                .map_err(|error| format!("seglog close {}: {error}", self.dir.display()))?;
        }
        remove_synced(&self.dir)
    }
}

/// `seglog produce DIR --count N --record-bytes B` as a child process.
struct CliProduce {
    cli: PathBuf,
    dir: PathBuf,
    records: u64,
    record_bytes: usize,
}

impl Trial for CliProduce {
    fn run(&mut self) -> Result<Work> {
        let cpu = sys::process_cpu()?;
        let start = Instant::now();
        let output = Command::new(&self.cli)
            .arg("produce")
            .arg(&self.dir)
            .args(["--count", &self.records.to_string()])
            .args(["--record-bytes", &self.record_bytes.to_string()])
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("could not start {}: {error}", self.cli.display()))?;
        let wall = start.elapsed();
        let cpu_s = sys::process_cpu()?.children_s - cpu.children_s;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success()
            || !stdout.contains(&format!("appended {} records", self.records))
        {
            return Err(format!(
                "{} produce failed with {}: {}{}",
                self.cli.display(),
                output.status,
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            )
            .into());
        }
        let mut work = Work::new(self.records, self.records * self.record_bytes as u64)
            .with_metric("cpu_s", cpu_s);
        if let Some(own) = reported_seconds(&stdout) {
            // The CLI's own clock, open to close: the rest of `wall` is the process around it.
            work = work.with_metric("cli_timed_s", own.as_secs_f64());
        }
        work.elapsed = Some(wall);
        Ok(work)
    }

    fn cleanup(&mut self) -> Result<()> {
        remove_synced(&self.dir)
    }
}

/// The seconds in the CLI's summary line (`... in 1.188 s (...)`), if it has them.
fn reported_seconds(stdout: &str) -> Option<Duration> {
    let line = stdout.lines().find(|line| line.starts_with("appended "))?;
    let (_, after) = line.rsplit_once(" in ")?;
    let seconds: f64 = after.split_whitespace().next()?.parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// Removes a closed (fsynced) log directory and fsyncs its parent, so that the journal commit
/// and the discards of the freed blocks happen now, untimed, not in the next contender's run.
fn remove_synced(dir: &Path) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| io_error("remove", dir, e))?;
    }
    let parent = dir.parent().ok_or("a log directory has a parent")?;
    fs::File::open(parent)
        .and_then(|file| file.sync_all())
        .map_err(|e| io_error("fsync", parent, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_the_clis() {
        let data = Records::generate(12, 30);
        assert_eq!(data.key(0), b"key-0");
        assert_eq!(data.key(11), b"key-11");
        let mut value = vec![0; 30];
        seglog_cli::fill_value(&mut value, 11);
        assert_eq!(data.value(11), value.as_slice());
    }

    #[test]
    fn a_binary_older_than_its_sources_is_noted() -> Result<()> {
        let tmp = tempfile::tempdir()?;
        let binary = tmp.path().join("seglog");
        let file = fs::File::create(&binary)?;
        file.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1))?;
        let note = stale_note(&binary).ok_or("an ancient binary passed as fresh")?;
        assert!(note.contains("crates/"), "{note}");
        file.set_modified(std::time::SystemTime::now() + Duration::from_secs(86_400))?;
        assert_eq!(stale_note(&binary), None);
        Ok(())
    }

    #[test]
    fn reads_the_clis_seconds() {
        let line = "appended 3000 records in 30 batches (1 bytes) to d: offsets 0..=2999 in \
                    1.188 s (2525 records/s, 0.1 MB/s)\n";
        assert_eq!(reported_seconds(line), Some(Duration::from_millis(1188)));
        assert_eq!(reported_seconds("nothing\n"), None);
    }

    #[test]
    fn the_library_row_writes_what_it_says() -> Result<()> {
        let tmp = tempfile::tempdir()?;
        let data = Records::generate(250, 40);
        let mut trial = LibraryProduce::new(&data, tmp.path().join("p-0"), Timed::OpenToClose);
        trial.prepare()?;
        let work = trial.run()?;
        assert_eq!(work.records, 250);
        let log = Log::open(tmp.path().join("p-0"), seglog::LogConfig::default())?;
        assert_eq!(log.log_end_offset(), 250);
        assert!(log.load_report().had_clean_shutdown);
        log.close()?;
        trial.cleanup()?;
        assert!(!tmp.path().join("p-0").exists());
        Ok(())
    }
}
