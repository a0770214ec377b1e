//! `seglog-diff`: differential histories against Kafka 4.4 (issue #25).
//!
//! Applies the same seeded random history of operations to a seglog [`seglog::Log`] and to
//! Kafka 4.4's `UnifiedLog` (in-process in a JVM: `interop/kafka`'s `DiffDriver`, with its
//! `ProducerStateManager`) and compares after every step: accepted or the same error class,
//! log start, log end, high watermark, first unstable offset, last stable offset, producer
//! state, and read_uncommitted / read_committed fetches from a random offset (batches and the
//! aborted-transaction list). On a divergence it prints the seed, the step, the field and both
//! values, shrinks the history (delta debugging) and writes it as a replayable file. At the end
//! it prints histories per minute and the coverage table.
//!
//! Run by `cargo xtask kafka diff [--histories N --steps M --seed S]`, which builds the JVM
//! side and passes `--classpath`. Usage:
//! `seglog-diff --classpath FILE [--histories N] [--steps M] [--seed S] [--segment-bytes B]
//! [--work DIR] [--replay FILE|DIR]` (a directory: every `.jsonl` history in it, in name
//! order, on one driver). Exit 0 when every history agreed, 1 on a divergence, 2 on
//! bad usage or a harness failure.

#![forbid(unsafe_code)]

mod batches;
mod clean_rules;
mod compare;
mod history;
mod kafka;
mod observe;
mod ours;
mod rules;
mod rules_log;
mod run;
mod shrink;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use history::Step;
use run::{Coverage, Divergence, Runner, Source};

struct Args {
    classpath: PathBuf,
    histories: u64,
    steps: usize,
    seed: u64,
    segment_bytes: i32,
    work: PathBuf,
    replay: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        classpath: PathBuf::new(),
        histories: 20,
        steps: 40,
        seed: 1,
        segment_bytes: 1024,
        work: PathBuf::from("target/seglog-diff"),
        replay: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--classpath" => args.classpath = PathBuf::from(value()?),
            "--histories" => args.histories = number(value()?)?,
            "--steps" => {
                args.steps = usize::try_from(number(value()?)?).map_err(|e| e.to_string())?
            }
            "--seed" => args.seed = number(value()?)?,
            "--segment-bytes" => {
                args.segment_bytes = i32::try_from(number(value()?)?).map_err(|e| e.to_string())?;
            }
            "--work" => args.work = PathBuf::from(value()?),
            "--replay" => args.replay = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.classpath.as_os_str().is_empty() {
        return Err("--classpath FILE is required (cargo xtask kafka diff passes it)".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    match real_main() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("seglog-diff: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<bool, String> {
    let args = parse_args()?;
    std::fs::create_dir_all(&args.work)
        .map_err(|e| format!("create {}: {e}", args.work.display()))?;
    let driver_log = args.work.join("kafka-diff-driver.log");
    let kafka = kafka::Kafka::start(&args.classpath, &driver_log)?;
    eprintln!(
        "seglog-diff: Kafka {} (its log: {}), segment.bytes {}",
        kafka.version,
        driver_log.display(),
        args.segment_bytes
    );
    let mut runner = Runner {
        kafka,
        work: args.work.clone(),
        segment_bytes: args.segment_bytes,
    };
    let mut coverage = Coverage::default();
    let started = Instant::now();
    if let Some(path) = &args.replay {
        // A directory: every `.jsonl` history in it, in name order, on the one driver.
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("list {}: {e}", path.display()))?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("list {}: {e}", path.display()))?;
            files.retain(|f| f.extension().is_some_and(|e| e == "jsonl"));
            files.sort();
            files
        } else {
            vec![path.clone()]
        };
        let mut diverged = 0;
        for file in &files {
            if !replay_one(&args, &mut runner, file)? {
                diverged += 1;
            }
        }
        if files.len() > 1 {
            eprintln!(
                "seglog-diff: {} of the {} histories in {} agree ({:.1} s)",
                files.len() - diverged,
                files.len(),
                path.display(),
                started.elapsed().as_secs_f64()
            );
        }
        return Ok(diverged == 0);
    }
    let mut failures = 0;
    let mut driver_failures = 0;
    let mut steps_run = 0;
    for h in 0..args.histories {
        let seed = args.seed.wrapping_add(h);
        let (steps, found) = match runner.run(Source::Generate(seed, args.steps), &mut coverage) {
            Ok(run) => run,
            Err(e) => {
                // A history the driver could not run is a failure of that seed, not of the run:
                // it is named (replayable from its seed), the driver is restarted, and the run
                // goes on, so one such history cannot end a long run.
                failures += 1;
                driver_failures += 1;
                eprintln!(
                    "DRIVER FAILURE (seed {seed}): {e}\n  replay: seglog-diff --seed {seed} --histories 1 --steps {}",
                    args.steps
                );
                if driver_failures > 20 {
                    return Err(format!(
                        "{driver_failures} histories failed in the driver; the last: {e}"
                    ));
                }
                let restart_log = args.work.join(format!("kafka-diff-driver-{seed}.log"));
                runner.kafka = kafka::Kafka::start(&args.classpath, &restart_log)?;
                continue;
            }
        };
        steps_run += steps.len();
        if let Some(d) = found {
            failures += 1;
            eprintln!(
                "seglog-diff: seed {seed} diverged at step {}; shrinking",
                d.step
            );
            match shrink::shrink(&mut runner, steps.clone(), d.clone()) {
                Ok((shrunk, sd)) => {
                    report(&args, Some(seed), &steps, &sd, &shrunk);
                }
                Err(e) => {
                    // The driver failed on a candidate: the unshrunk history is still the finding.
                    eprintln!(
                        "seglog-diff: shrinking seed {seed} failed in the driver ({e}); its history is kept unshrunk"
                    );
                    report(&args, Some(seed), &steps, &d, &steps);
                    let restart_log = args.work.join(format!("kafka-diff-driver-{seed}.log"));
                    runner.kafka = kafka::Kafka::start(&args.classpath, &restart_log)?;
                }
            }
        }
    }
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    eprintln!(
        "\nseglog-diff: {} histories ({steps_run} steps) in {:.1} s: {:.0} histories per minute; {failures} diverged ({driver_failures} of them in the driver)",
        args.histories,
        minutes * 60.0,
        args.histories as f64 / minutes.max(1e-9),
    );
    coverage.print();
    Ok(failures == 0)
}

/// Prints a divergence and writes its shrunk history; returns the file.
fn report(
    args: &Args,
    seed: Option<u64>,
    full: &[Step],
    d: &Divergence,
    shrunk: &[Step],
) -> PathBuf {
    let diff = &d.difference;
    let last = shrunk.get(d.step.saturating_sub(1));
    eprintln!(
        "DIVERGENCE{} at step {} of the shrunk history ({} steps; {} before shrinking): {}",
        seed.map(|s| format!(" (seed {s})")).unwrap_or_default(),
        d.step,
        shrunk.len(),
        full.len(),
        last.map(|s| serde_json::to_string(s).unwrap_or_default())
            .unwrap_or_else(|| "the open".into()),
    );
    eprintln!(
        "  field {}: seglog {}, Kafka {}",
        diff.path, diff.ours, diff.kafka
    );
    if let Some((bug, issue)) = diff.known_bug {
        eprintln!("  known bug: {bug} ({issue})");
    }
    if let Some(m) = &d.ours_message {
        eprintln!("  seglog said: {m}");
    }
    if let Some(m) = &d.kafka_message {
        eprintln!("  Kafka said: {m}");
    }
    let file = args.work.join(format!(
        "divergence-{}.jsonl",
        seed.map_or("replay".into(), |s| s.to_string())
    ));
    let mut text = format!(
        "# seglog-diff: diverged at step {}: {} (seglog {}, Kafka {}); replay: cargo xtask kafka diff --replay {}\n",
        d.step,
        diff.path,
        diff.ours,
        diff.kafka,
        file.display()
    );
    for s in shrunk {
        text.push_str(&serde_json::to_string(s).unwrap_or_default());
        text.push('\n');
    }
    match std::fs::File::create(&file).and_then(|mut f| f.write_all(text.as_bytes())) {
        Ok(()) => eprintln!("  shrunk history ({}):\n{text}", file.display()),
        Err(e) => eprintln!("  could not write {}: {e}\n{text}", file.display()),
    }
    file
}

/// Replays the history in `file`; whether it agreed (a divergence is reported as a run's).
fn replay_one(args: &Args, runner: &mut Runner, file: &std::path::Path) -> Result<bool, String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("read {}: {e}", file.display()))?;
    let steps: Vec<Step> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}: {l}", file.display())))
        .collect::<Result<_, _>>()?;
    let mut own = Coverage::default();
    let (steps, found) = runner.run(Source::Replay(&steps), &mut own)?;
    Ok(match found {
        None => {
            eprintln!(
                "seglog-diff: the {} steps of {} agree",
                steps.len(),
                file.display()
            );
            print_replay_rules(&own);
            true
        }
        Some(d) => {
            report(args, None, &steps, &d, &steps);
            false
        }
    })
}

/// After a replay that agreed: the named rules that explained a difference on the way (so a
/// reader sees whether a history agrees outright or through a deliberate difference).
fn print_replay_rules(coverage: &run::Coverage) {
    for ((name, _), n) in &coverage.rules {
        eprintln!("  rule {name} applied {n} times");
    }
}
