//! `cargo xtask kafka [broker|txn-compacted|adopt|storage|tiered|kafka-tiered|all|fixtures]`:
//! Apache Kafka 4.4 as the oracle (`txn-compacted`: scenario 1's compacted, transactional topic
//! alone; `kafka-tiered`: a broker's remote tier read by seglog, ending with seglog-tiered's
//! `kafka_tiered` test on the broker's output, [`KAFKA_TIERED_TEST`]).
//! `cargo xtask kafka diff [--histories N] [--steps M] [--seed S] [--replay FILE|DIR]`: the
//! differential histories (`interop/diff`, package `seglog-diff`, against Kafka's `UnifiedLog`
//! in-process through `interop/kafka`'s `DiffDriver`); `all` (the default, and CI) ends with a
//! replay of every settled history ([`DIFF_HISTORIES`]) and a fixed budget of new ones
//! ([`DIFF_CI_BUDGET`]).
//!
//! Builds the `seglog` binary and the Maven project in `interop/kafka/` (Java 17, Kafka 4.4.0
//! from Maven Central into the normal local repository), then runs its harness, which starts a
//! real single-node KRaft broker on 127.0.0.1 and compares what Kafka says with what seglog says
//! (see `interop/kafka/README.md`). `fixtures` reruns the broker scenario and rewrites
//! `tests/fixtures/kafka-4.4/` and `tests/fixtures/kafka-4.4-txn-compacted/`.
//!
//! Without `java` or `mvn` on `PATH` the task is skipped with one line, except under `CI=true`,
//! where that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::{cargo, run as run_command, workspace_root};

const SCENARIOS: &[&str] = &[
    "broker",
    "txn-compacted",
    "adopt",
    "storage",
    "tiered",
    "kafka-tiered",
    "all",
    "fixtures",
];

/// The differential histories CI runs (about 2 minutes on a loaded 2-core machine; see
/// interop/kafka/README.md for the figures). The seed is fixed, so a CI failure replays.
pub const DIFF_CI_BUDGET: &[&str] = &["--histories", "100", "--steps", "50", "--seed", "1"];

/// The settled differential histories CI replays (all of them, on one driver: about 20 s).
pub const DIFF_HISTORIES: &str = "interop/diff/histories";

/// The seglog-tiered test that reads what the `kafka-tiered` scenario's broker tiered (from the
/// directory in `SEGLOG_KAFKA_TIERED_DIR`; without it, from `tests/fixtures/kafka-4.4-tiered/`).
pub const KAFKA_TIERED_TEST: &[&str] = &[
    "test",
    "--package",
    "seglog-tiered",
    "--test",
    "it",
    "kafka_tiered",
];

/// The whole harness must finish in this time, or it is stopped (and its brokers with it).
const TIME_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Runs the harness for one scenario (default `all`); `--release` builds seglog optimized.
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(at) = args.iter().position(|a| a == "diff") {
        let rest: Vec<String> = args[..at].iter().chain(&args[at + 1..]).cloned().collect();
        return match skip_line() {
            Some(line) => skip(line),
            None => run_diff(&workspace_root(), &rest),
        };
    }
    let mut scenario = "all";
    let mut release = false;
    for arg in args {
        match arg.as_str() {
            "--release" => release = true,
            name if SCENARIOS.contains(&name) => scenario = name,
            other => {
                return Err(format!(
                    "`kafka` takes one of {}|diff and --release, got `{other}`",
                    SCENARIOS.join("|")
                ));
            }
        }
    }
    let root = workspace_root();
    if let Some(line) = skip_line() {
        return skip(line);
    }

    let mut build = cargo();
    build.args(["build", "--package", "seglog-cli", "--bin", "seglog"]);
    if release {
        build.arg("--release");
    }
    run_command(build)?;
    let seglog = root
        .join("target")
        .join(if release { "release" } else { "debug" })
        .join("seglog");

    let classpath_file = java_classpath(&root)?;
    let classpath = std::fs::read_to_string(&classpath_file)
        .map_err(|e| format!("read {}: {e}", classpath_file.display()))?;
    let classpath = classpath.trim();

    let work = root.join("target").join("kafka-interop");
    let mut java = Command::new("java");
    java.current_dir(&root)
        .args([
            "-Xms64m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            classpath,
            "seglog.interop.Main",
            scenario,
            "--seglog",
        ])
        .arg(&seglog)
        .arg("--work")
        .arg(&work);
    if scenario == "fixtures" {
        java.arg("--fixtures").arg(fixtures_dir(&root));
    }
    let tiered_out = root.join("target").join("kafka-tiered");
    let kafka_tiered = scenario == "kafka-tiered" || scenario == "all";
    if kafka_tiered {
        java.arg("--tiered-out").arg(&tiered_out);
    }
    eprintln!("\n$ java -cp <interop/kafka classpath> seglog.interop.Main {scenario} ...");
    let mut child = java
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start java: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > TIME_LIMIT => {
                // SIGTERM first, so the harness's shutdown hook kills the broker JVMs it started.
                let _ = Command::new("kill").arg(child.id().to_string()).status();
                std::thread::sleep(Duration::from_secs(10));
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the kafka interop harness ran over {} s and was stopped; its work dir is {}",
                    TIME_LIMIT.as_secs(),
                    work.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("waiting for java: {e}")),
        }
    };
    eprintln!("kafka interop: {:.0} s", started.elapsed().as_secs_f64());
    if status.success() {
        if kafka_tiered {
            // seglog's side of the kafka-tiered scenario: the partition read across both tiers
            // must equal what Kafka's consumer read.
            let mut test = cargo();
            test.args(KAFKA_TIERED_TEST)
                .env("SEGLOG_KAFKA_TIERED_DIR", &tiered_out);
            run_command(test)?;
        }
        if scenario == "all" {
            // Every settled history first (each a form a rule, a fix or a harness change
            // explains: a regression there is a regression of that settlement), then the budget.
            run_diff(&root, &["--replay".to_owned(), DIFF_HISTORIES.to_owned()])?;
            let budget: Vec<String> = DIFF_CI_BUDGET.iter().map(|s| (*s).to_owned()).collect();
            run_diff(&root, &budget)?;
        }
        Ok(())
    } else {
        Err(format!(
            "Kafka and seglog disagree (or the harness failed: {status}); the checks that failed are listed above, the brokers' logs are under {}",
            work.display()
        ))
    }
}

/// The line printed when `java` or `mvn` is missing, if one is.
fn skip_line() -> Option<String> {
    missing_tool().map(|missing| {
        format!("kafka interop skipped: `{missing}` is not on PATH (Java 17 and Maven are needed)")
    })
}

/// Skips (one line), except under `CI=true`, where a missing tool fails the run.
fn skip(line: String) -> Result<(), String> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        return Err(line);
    }
    eprintln!("{line}");
    Ok(())
}

/// Builds `seglog-diff` and the JVM side and runs the differential histories with `args`
/// (`--histories N --steps M --seed S`, `--replay FILE`, `--release`).
fn run_diff(root: &Path, args: &[String]) -> Result<(), String> {
    let release = args.iter().any(|a| a == "--release");
    let passed: Vec<&String> = args.iter().filter(|a| *a != "--release").collect();
    let mut build = cargo();
    build.args(["build", "--package", "seglog-diff"]);
    if release {
        build.arg("--release");
    }
    run_command(build)?;
    let classpath_file = java_classpath(root)?;
    let binary = root
        .join("target")
        .join(if release { "release" } else { "debug" })
        .join("seglog-diff");
    let work = root.join("target").join("seglog-diff");
    let mut diff = Command::new(&binary);
    diff.current_dir(root)
        .arg("--classpath")
        .arg(&classpath_file)
        .arg("--work")
        .arg(&work)
        .args(passed);
    eprintln!(
        "\n$ {} --classpath {} ...",
        binary.display(),
        classpath_file.display()
    );
    let status = diff
        .status()
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the differential histories found a divergence or failed ({status}); the shrunk history and Kafka's log are under {}",
            work.display()
        ))
    }
}

/// Where `fixtures` writes the broker-made directories.
fn fixtures_dir(root: &Path) -> PathBuf {
    root.join("tests").join("fixtures").join("kafka-4.4")
}

/// Compiles `interop/kafka` and returns the file holding its Java class path (its classes, then
/// every Maven dependency, `:`-separated): `interop/kafka/target/java-classpath.txt`.
///
/// Cached: Maven runs only when that file or the classes are missing, or the file is older than
/// `pom.xml` or any file under `src/` (a Maven run costs 10-50 s on a loaded machine even with
/// every jar cached).
pub fn java_classpath(root: &Path) -> Result<PathBuf, String> {
    let project = root.join("interop").join("kafka");
    let target = project.join("target");
    let cached = target.join("java-classpath.txt");
    if let Ok(built) = std::fs::metadata(&cached).and_then(|m| m.modified())
        && newest_input(&project).is_ok_and(|newest| newest <= built)
        && target.join("classes").join("seglog").is_dir()
    {
        return Ok(cached);
    }
    let dependencies_file = target.join("classpath.txt");
    // The cache is stamped with the time Maven started, so that a source saved while it ran
    // makes the next call build again.
    let started = std::time::SystemTime::now();
    let mut mvn = Command::new("mvn");
    mvn.current_dir(&project).args([
        "--batch-mode",
        "--quiet",
        "compile",
        "dependency:build-classpath",
        &format!("-Dmdep.outputFile={}", dependencies_file.display()),
    ]);
    run_command(mvn)?;
    let dependencies = std::fs::read_to_string(&dependencies_file)
        .map_err(|e| format!("read {}: {e}", dependencies_file.display()))?;
    let classpath = format!(
        "{}:{}",
        target.join("classes").display(),
        dependencies.trim()
    );
    std::fs::write(&cached, classpath)
        .and_then(|()| std::fs::File::options().write(true).open(&cached))
        .and_then(|file| file.set_modified(started))
        .map_err(|e| format!("write {}: {e}", cached.display()))?;
    Ok(cached)
}

/// The latest modification time of `pom.xml` and every file under `src/`.
fn newest_input(project: &Path) -> std::io::Result<std::time::SystemTime> {
    let mut newest = std::fs::metadata(project.join("pom.xml"))?.modified()?;
    let mut dirs = vec![project.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                newest = newest.max(meta.modified()?);
            }
        }
    }
    Ok(newest)
}

/// The first of `java`, `mvn` that cannot be run, if any.
pub fn missing_tool() -> Option<&'static str> {
    for (tool, flag) in [("java", "-version"), ("mvn", "--version")] {
        let ran = Command::new(tool)
            .arg(flag)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !ran.is_ok_and(|s| s.success()) {
            return Some(tool);
        }
    }
    None
}
