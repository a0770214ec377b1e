//! `cargo xtask crash [--iterations N] [--seed S] [--all]`: the long reliability runs.
//!
//! By default, the kill -9 harness of `reliability/tests/it/crash.rs` with N kills (default
//! 500) in release mode: a `crash-child` process appends with durable acknowledgements and is
//! SIGKILLed at random moments; every reopen must serve every acknowledged record. With
//! `--all`, every reliability suite runs scaled up by N/20 (power-loss workloads, I/O fault
//! points, corruption cases, fuzz-harness inputs, stress time). `--seed S` replays a run (each
//! suite prints its seed). See `docs/durability.md`.

use crate::cmd::{cargo, flag_value, run as run_command};

/// Runs the long harness.
pub fn run(args: &[String]) -> Result<(), String> {
    let iterations = flag_value(args, "--iterations", 500)?;
    let all = args.iter().any(|a| a == "--all");
    if let Some(unknown) = args
        .iter()
        .enumerate()
        .find(|(i, a)| {
            a.starts_with("--")
                && !matches!(a.as_str(), "--iterations" | "--seed" | "--all")
                && !(*i > 0 && matches!(args[i - 1].as_str(), "--iterations" | "--seed"))
        })
        .map(|(_, a)| a)
    {
        return Err(format!("`crash` does not know `{unknown}`"));
    }
    let mut command = cargo();
    command.args([
        "test",
        "--release",
        "--package",
        "seglog-reliability",
        "--test",
        "it",
        "--",
        "--nocapture",
    ]);
    if !all {
        command.arg("crash::");
    }
    command.env("SEGLOG_CRASH_ITERATIONS", iterations.to_string());
    if all {
        let scale = (iterations / 20).max(1);
        for (var, base) in [
            ("SEGLOG_POWER_LOSS_ITERATIONS", 12),
            ("SEGLOG_IO_FAULT_ITERATIONS", 60),
            ("SEGLOG_CORRUPTION_ITERATIONS", 40),
            ("SEGLOG_FUZZ_ITERATIONS", 400),
            ("SEGLOG_STRESS_MILLIS", 2500),
        ] {
            command.env(var, (base * scale).to_string());
        }
    }
    if args.iter().any(|a| a == "--seed") {
        command.env("SEGLOG_SEED", flag_value(args, "--seed", 0)?.to_string());
    }
    run_command(command)
}
