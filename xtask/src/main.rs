//! Project automation, run as `cargo xtask <task>` (alias in `.cargo/config.toml`).
//!
//! std-only on purpose: it must build in seconds on a fresh machine. One module per task.
//!
//! - `ci`: exactly what `.ci/run` runs — fmt check, clippy with `-D warnings`, the workspace
//!   tests, then the loom models.
//! - `loom`: the loom models alone (`--cfg loom`, release, bounded preemptions).
//! - `tidy` (tests only): repository rules no lint checks, run by `cargo test --workspace`.
//! - `fuzz`: a named cargo-fuzz target of `fuzz/` for N executions, or every target for a
//!   bounded time each.
//! - `bench`: the macro benchmark suite in release mode, or the criterion benches.
//! - `crash`: the long reliability runs (kill -9 harness; `--all` scales every suite).
//! - `kafka`: Apache Kafka 4.4 (a real broker and its storage code) as the oracle, from `interop/kafka/`.

#![forbid(unsafe_code)]

mod bench;
mod ci;
mod cmd;
mod crash;
mod fuzz;
mod kafka;
mod loom;
mod tidy;
mod tidy_docs;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  ci                     fmt --check, clippy -D warnings, cargo test --workspace, loom models
  loom                   the loom models only (RUSTFLAGS=--cfg loom, release, LOOM_MAX_PREEMPTIONS=2)
  fuzz [TARGET...] [--runs N | --seconds S] [--max-len L]
                         run the named cargo-fuzz targets of fuzz/ (default: every one) for N
                         executions or S seconds each (default 60 s), optimised with overflow
                         checks, no sanitizer, TMPDIR on /dev/shm (needs nightly and cargo-fuzz;
                         see fuzz/README.md; not in CI)
  bench [--quick] [--rounds N] [--only GROUP,...] [--drop-caches]
                         the macro suite (release): table on stdout, JSON in target/bench/
  bench --criterion [ARGS] | bench -- [ARGS]
                         cargo bench --workspace --bench '*' -- ARGS (criterion baselines)
  crash [--iterations N] [--seed S] [--all]
                         the kill -9 harness with N kills (default 500, release); --all runs
                         every reliability suite scaled by N/20 (see docs/durability.md)
  kafka [broker|adopt|storage|all|fixtures] [--release]
                         Kafka 4.4 as the oracle (needs java 17 and mvn; see interop/kafka/README.md);
                         fixtures rewrites tests/fixtures/kafka-4.4/; all ends with a budget of
                         differential histories
  kafka diff [--histories N] [--steps M] [--seed S] [--replay FILE|DIR] [--release]
                         differential histories: the same random operations on seglog's Log and
                         Kafka 4.4's UnifiedLog, compared after every step (interop/kafka/README.md)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "ci" => ci::run(rest),
        "loom" => loom::run(rest),
        "fuzz" => fuzz::run(rest),
        "bench" => bench::run(rest),
        "crash" => crash::run(rest),
        "kafka" => kafka::run(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(format!("unknown task `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
