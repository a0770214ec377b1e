//! seglog's macro benchmark suite: every workload of the issue, run against three contenders in
//! one process, interleaved over several rounds, reported as medians and same-round ratios.
//!
//! - (a) the physical ceiling: plain `std::fs` on the same bytes (`ceiling`);
//! - (b) seglog (`seglog_contender`);
//! - (c) the `commitlog` crate 0.2 (`commitlog_contender`);
//! - (d) Kafka 4.4's own storage code on the JVM (`kafka_contender`), when a Java class path
//!   for `interop/kafka` is given;
//! - and, in their own rows, seglog-raft (a one-node openraft cluster; one request per entry,
//!   and through its batching `Proposer`) beside seglog's `append_durable` (`raft_contender`).
//!
//! Run it with `cargo xtask bench [--quick]`, which builds in release mode. It prints one table
//! and the target checks, and writes the raw samples as JSON under `target/bench/`. Logs are
//! written under `target/bench/tmp` (the repository's disk, never a tmpfs `/tmp`) and deleted
//! at the end. The page cache is warm for every read unless `--drop-caches` is given (root
//! only). See `docs/performance.md` for the method and the latest figures.
//!
//! ```text
//! seglog-benches [--quick] [--rounds N] [--only GROUP,...] [--out-dir DIR] [--drop-caches]
//!                [--kafka-classpath FILE | --kafka-skipped REASON]
//! ```

#![forbid(unsafe_code)]

mod ceiling;
mod child;
mod commitlog_contender;
mod data;
mod fsx;
mod harness;
mod kafka_contender;
mod raft_contender;
mod report;
mod seglog_contender;
mod sys;
mod targets;
mod workloads;
mod writers;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::workloads::{Context, GROUPS, Plan};

/// Errors are messages: this is a binary, and every message names its operation and path.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An I/O error that names the operation and the path.
pub fn io_error(operation: &str, path: &Path, error: std::io::Error) -> Error {
    format!("{operation} {}: {error}", path.display()).into()
}

const USAGE: &str = "\
usage: seglog-benches [--quick] [--rounds N] [--only GROUP,...] [--out-dir DIR] [--drop-caches]
                      [--kafka-classpath FILE | --kafka-skipped REASON]

  --quick          short sizes (under ~2 minutes on 2 cores); default is the full suite
  --rounds N       measured rounds per workload (default 3 quick, 5 full)
  --only GROUPS    comma-separated subset of: append, produce, bulk, mixed, durable, raft,
                   scan, point, timestamp, floor, recovery, open, rss, compaction,
                   scale, tier
  --out-dir DIR    where the JSON goes (default <workspace>/target/bench); logs go to DIR/tmp
  --drop-caches    drop the page cache before every timed read (needs root; off by default)
  --kafka-classpath FILE
                   add Kafka 4.4 rows, run on the JVM from the Java class path in FILE
                   (interop/kafka's classes and jars; `cargo xtask bench` passes it)
  --kafka-skipped REASON
                   no Kafka rows, and the report says why (default: no class path given)
";

struct Options {
    plan: Plan,
    only: Vec<String>,
    out_dir: PathBuf,
    drop_caches: bool,
    kafka: kafka_contender::Kafka,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--child") {
        child::main(&args[1..])
    } else {
        match parse(&args) {
            Ok(Some(options)) => run(options),
            Ok(None) => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            Err(error) => Err(error),
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("seglog-benches: {error}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: &[String]) -> Result<Option<Options>> {
    let mut quick = false;
    let mut rounds = None;
    let mut only = Vec::new();
    let mut out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    let mut drop_caches = false;
    let mut kafka = kafka_contender::Kafka::skipped(
        "no --kafka-classpath given (`cargo xtask bench` passes one when java and mvn are on PATH)"
            .to_owned(),
    );
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--quick" => quick = true,
            "--rounds" => rounds = Some(value()?.parse::<usize>()?),
            "--only" => {
                for group in value()?.split(',').filter(|group| !group.is_empty()) {
                    if !GROUPS.contains(&group) {
                        return Err(format!("unknown group `{group}`\n{USAGE}").into());
                    }
                    only.push(group.to_owned());
                }
            }
            "--out-dir" => out_dir = PathBuf::from(value()?),
            "--drop-caches" => drop_caches = true,
            "--kafka-classpath" => {
                kafka = kafka_contender::Kafka::from_classpath_file(PathBuf::from(value()?));
            }
            "--kafka-skipped" => kafka = kafka_contender::Kafka::skipped(value()?.clone()),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown option `{other}`\n{USAGE}").into()),
        }
    }
    let mut plan = if quick { Plan::quick() } else { Plan::full() };
    if let Some(rounds) = rounds {
        plan.rounds = rounds;
    }
    Ok(Some(Options {
        plan,
        only,
        out_dir,
        drop_caches,
        kafka,
    }))
}

fn run(options: Options) -> Result<()> {
    let started = Instant::now();
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    if options.drop_caches {
        // Fail now rather than after the first write workload.
        sys::drop_page_cache()?;
    }
    let scratch = fsx::Scratch::new(&options.out_dir.join("tmp"))?;
    let machine = report::Machine {
        cpus: std::thread::available_parallelism().map_or(1, usize::from),
        kernel: sys::kernel_release(),
        scratch_dir: scratch.root().to_path_buf(),
        scratch_fs: sys::fs_type(scratch.root()),
        dropped_page_cache: options.drop_caches,
    };
    eprintln!(
        "seglog-benches: {} mode, {} rounds, logs under {} ({})",
        options.plan.mode,
        options.plan.rounds,
        machine.scratch_dir.display(),
        machine.scratch_fs.as_deref().unwrap_or("unknown fs"),
    );
    let mut context = Context {
        plan: options.plan,
        scratch,
        drop_caches: options.drop_caches,
        only: options.only,
        notes: options.kafka.skip_note().into_iter().collect(),
        kafka: options.kafka,
    };
    let workloads = workloads::run_all(&mut context)?;
    let targets = targets::evaluate(&workloads, machine.cpus);
    let report = report::Report {
        mode: context.plan.mode.to_owned(),
        rounds: context.plan.rounds,
        started_unix_s,
        duration_s: started.elapsed().as_secs_f64(),
        git_rev: git_rev(),
        machine,
        workloads,
        targets,
        notes: context.notes,
    };
    println!();
    println!(
        "seglog-benches {} mode, {} rounds, {:.0} s, git {}",
        report.mode,
        report.rounds,
        report.duration_s,
        report.git_rev.as_deref().unwrap_or("unknown")
    );
    println!();
    print!("{}", report::table(&report.workloads));
    println!();
    print!("{}", report::targets(&report.targets));
    for note in &report.notes {
        println!("note: {note}");
    }
    let path = report::write_json(&report, &options.out_dir)?;
    println!();
    println!("raw numbers: {}", path.display());
    Ok(())
}

fn git_rev() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
