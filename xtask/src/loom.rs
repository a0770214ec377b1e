//! `cargo xtask loom`: the loom models of the appender/reader publication protocol.
//!
//! Models are `#[cfg(loom)]` unit tests named `loom_*` in the crates that own a publish/observe
//! protocol. They build with `--cfg loom` in a separate target directory so the normal build cache
//! is untouched.

use crate::cmd::{cargo, run as run_command, workspace_root};

/// Crates that carry loom models.
const MODEL_CRATES: &[&str] = &["seglog-index-core", "seglog-segment", "seglog"];

/// Runs every loom model in release mode with at most two preemptions per execution.
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(unexpected) = args.first() {
        return Err(format!("`loom` takes no options, got `{unexpected}`"));
    }
    let target_dir = workspace_root().join("target").join("loom");
    let mut command = cargo();
    command
        .env("RUSTFLAGS", "--cfg loom")
        .env("LOOM_MAX_PREEMPTIONS", "2")
        .env("CARGO_TARGET_DIR", target_dir)
        .args(["test", "--release", "--lib"]);
    for krate in MODEL_CRATES {
        command.args(["--package", krate]);
    }
    command.args(["--", "loom_"]);
    run_command(command)
}
