//! `cargo xtask fuzz [TARGET] [--runs N | --seconds S] [--max-len L]`: runs a named cargo-fuzz
//! target of `fuzz/` for N executions (or S seconds), or every target for S seconds each.
//!
//! The fuzz crate lives outside the workspace (`fuzz/Cargo.toml` has its own `[workspace]`), and
//! cargo-fuzz needs a nightly compiler for its sanitizer flags: the runs go through
//! `rustup run nightly cargo fuzz run -O -a -s none` (optimised, with debug assertions and
//! overflow checks, no sanitizer: the crates are `forbid(unsafe_code)` but index-core's
//! `mmap.rs`), on the corpus `fuzz/corpus/<target>/` (created when missing), with the temp
//! directory on `/dev/shm` when it exists (some targets write a small file per input). Each
//! run ends with libFuzzer's final stats (executions, exec/s) and the wall time. Seeds: see
//! `fuzz/README.md`. Not part of CI.

use std::time::Instant;

use crate::cmd::{flag_value, run as run_command, workspace_root};

/// Runs the named target, or every target listed by `cargo fuzz list`.
pub fn run(args: &[String]) -> Result<(), String> {
    let seconds = flag_value(args, "--seconds", 60)?;
    let runs = flag_value(args, "--runs", 0)?;
    let max_len = flag_value(args, "--max-len", 0)?;
    let values = ["--seconds", "--runs", "--max-len"];
    let named: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, arg)| {
            !arg.starts_with("--") && (*i == 0 || !values.contains(&args[i - 1].as_str()))
        })
        .map(|(_, arg)| arg)
        .collect();
    if let Some(unknown) = args
        .iter()
        .find(|arg| arg.starts_with("--") && !values.contains(&arg.as_str()))
    {
        return Err(format!("unknown option `{unknown}`"));
    }
    let fuzz_dir = workspace_root().join("fuzz");
    let targets: Vec<String> = if named.is_empty() {
        list_targets()?
    } else {
        named.into_iter().cloned().collect()
    };
    for target in &targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus)
            .map_err(|e| format!("could not create {}: {e}", corpus.display()))?;
        let mut command = std::process::Command::new("rustup");
        command.current_dir(&fuzz_dir).args([
            "run", "nightly", "cargo", "fuzz", "run", "-O", "-a", "-s", "none",
        ]);
        command.arg(target).arg(&corpus).arg("--");
        if runs > 0 {
            command.arg(format!("-runs={runs}"));
        } else {
            command.arg(format!("-max_total_time={seconds}"));
        }
        if max_len > 0 {
            command.arg(format!("-max_len={max_len}"));
        }
        command.arg("-print_final_stats=1");
        if std::path::Path::new("/dev/shm").is_dir() {
            command.env("TMPDIR", "/dev/shm");
        }
        let started = Instant::now();
        run_command(command)?;
        eprintln!(
            "xtask fuzz: {target} done in {:.0} s (executions and exec/s: the stats above)",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The targets `cargo fuzz list` names.
fn list_targets() -> Result<Vec<String>, String> {
    let output = std::process::Command::new("rustup")
        .current_dir(workspace_root().join("fuzz"))
        .args(["run", "nightly", "cargo", "fuzz", "list"])
        .output()
        .map_err(|error| format!("could not run `cargo fuzz list`: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo fuzz list` failed (install with `cargo install cargo-fuzz`; it needs a nightly \
             toolchain): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect())
}
