//! `cargo xtask fuzz [--seconds S]`: runs every cargo-fuzz target in `fuzz/` for S seconds.
//!
//! The fuzz crate lives outside the workspace (`fuzz/Cargo.toml` has its own `[workspace]`), and
//! cargo-fuzz needs a nightly compiler for its sanitizer flags. Seeds come from
//! `../shared/kafka-corpus` (see `fuzz/README.md`). Not part of CI.

use crate::cmd::{cargo, flag_value, run as run_command, workspace_root};

/// Lists the targets with `cargo fuzz list`, then runs each for the given time.
pub fn run(args: &[String]) -> Result<(), String> {
    let seconds = flag_value(args, "--seconds", 60)?;
    let fuzz_dir = workspace_root().join("fuzz");
    let output = cargo()
        .current_dir(&fuzz_dir)
        .args(["fuzz", "list"])
        .output()
        .map_err(|error| format!("could not run `cargo fuzz list`: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo fuzz list` failed (install with `cargo install cargo-fuzz`; it needs a nightly \
             toolchain): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let targets = String::from_utf8_lossy(&output.stdout).into_owned();
    for target in targets
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
    {
        let mut command = cargo();
        command.current_dir(&fuzz_dir).args([
            "fuzz",
            "run",
            target,
            "--",
            &format!("-max_total_time={seconds}"),
        ]);
        run_command(command)?;
    }
    Ok(())
}
