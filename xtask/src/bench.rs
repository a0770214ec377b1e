//! `cargo xtask bench`: the macro benchmark suite (`benches/`, package `seglog-benches`) in
//! release mode, or the per-crate criterion benches.
//!
//! - `cargo xtask bench [--quick] [--rounds N] [--only GROUP,...] [--drop-caches] [--no-kafka]`
//!   builds and runs the suite: one table on stdout, the raw samples as JSON in `target/bench/`
//!   (`$CARGO_TARGET_DIR/bench` when that is set). With `java` and `mvn` on `PATH` it also
//!   compiles `interop/kafka` (cached, see `kafka::java_classpath`) and hands the suite its
//!   class path for the Kafka 4.4 rows; without them (or with `--no-kafka`) those rows are
//!   skipped and the report says why in one line.
//!   The `produce` group times the release `seglog` binary (crates/cli) as a child process,
//!   so the suite's build is preceded by `cargo build --release -p seglog-cli --bin seglog`
//!   (when that group is selected); the suite finds it next to its own binary.
//! - `cargo xtask bench --criterion [ARGS]` (or `cargo xtask bench -- [ARGS]`) runs every
//!   crate's criterion benches instead: `cargo bench --workspace --bench '*' -- ARGS`, e.g.
//!   `--save-baseline main` then `--baseline main`.

use std::path::PathBuf;

use crate::cmd::{cargo, run as run_command, workspace_root};
use crate::kafka;

/// Options the suite binary understands; anything else is refused here, before a release build.
const SUITE_FLAGS: &[&str] = &["--quick", "--drop-caches"];
const SUITE_OPTIONS: &[&str] = &["--rounds", "--only"];

/// Entry point for `cargo xtask bench`.
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(split) = args
        .iter()
        .position(|arg| arg == "--criterion" || arg == "--")
    {
        if split > 0 {
            return Err(format!(
                "`{}` must come first: the criterion benches take no suite options",
                args[split]
            ));
        }
        return criterion(&args[split + 1..]);
    }
    let mut suite_args = Vec::new();
    let mut with_kafka = true;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--no-kafka" {
            with_kafka = false;
        } else if SUITE_FLAGS.contains(&arg.as_str()) {
            suite_args.push(arg.clone());
        } else if SUITE_OPTIONS.contains(&arg.as_str()) {
            let value = rest.next().ok_or_else(|| format!("{arg} needs a value"))?;
            suite_args.extend([arg.clone(), value.clone()]);
        } else {
            return Err(format!(
                "`bench` does not know `{arg}` (options: --quick, --rounds N, --only GROUP,..., \
                 --drop-caches, --no-kafka, --criterion [ARGS])"
            ));
        }
    }
    if wants_group(&suite_args, "produce") {
        // The `produce` row runs this binary; it lands next to the suite's, in target/release.
        let mut build = cargo();
        build.args([
            "build",
            "--release",
            "--package",
            "seglog-cli",
            "--bin",
            "seglog",
        ]);
        run_command(build)?;
    }
    let kafka_args: [String; 2] = if !with_kafka {
        ["--kafka-skipped".into(), "--no-kafka was given".into()]
    } else if let Some(missing) = kafka::missing_tool() {
        [
            "--kafka-skipped".into(),
            format!("`{missing}` is not on PATH (Java 17 and Maven are needed)"),
        ]
    } else {
        match kafka::java_classpath(&workspace_root()) {
            Ok(file) => ["--kafka-classpath".into(), file.display().to_string()],
            Err(error) => ["--kafka-skipped".into(), format!("interop/kafka: {error}")],
        }
    };
    let mut command = cargo();
    command
        .args([
            "run",
            "--release",
            "--package",
            "seglog-benches",
            "--",
            "--out-dir",
        ])
        .arg(out_dir())
        .args(suite_args)
        .args(kafka_args);
    run_command(command)
}

/// Whether the suite arguments select `group` (every group runs without `--only`).
fn wants_group(suite_args: &[String], group: &str) -> bool {
    match suite_args.iter().position(|arg| arg == "--only") {
        None => true,
        Some(index) => suite_args
            .get(index + 1)
            .is_some_and(|groups| groups.split(',').any(|name| name == group)),
    }
}

/// `cargo bench` over every `[[bench]]` target of the workspace (criterion), passing `args` on.
fn criterion(args: &[String]) -> Result<(), String> {
    let mut command = cargo();
    command
        .args(["bench", "--workspace", "--bench", "*", "--"])
        .args(args);
    run_command(command)
}

/// `$CARGO_TARGET_DIR/bench`, else `<workspace>/target/bench`.
fn out_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_relative() {
                workspace_root().join(dir)
            } else {
                dir
            }
        })
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("bench")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_produce_group_is_wanted_unless_another_only_is_given() {
        let args = |list: &[&str]| list.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
        assert!(wants_group(&args(&["--quick"]), "produce"));
        assert!(wants_group(&args(&["--only", "append,produce"]), "produce"));
        assert!(!wants_group(&args(&["--only", "append,scan"]), "produce"));
        assert!(!wants_group(&args(&["--only", "producer"]), "produce"));
    }
}
