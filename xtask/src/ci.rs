//! `cargo xtask ci`: the whole CI gate, exactly what `.ci/run` runs.

use crate::cmd::{cargo, run as run_command};

/// The crates published to crates.io, lowest layer first.
pub const PUBLISHED: &[&str] = &[
    "seglog-index-core",
    "seglog-records",
    "seglog-segment",
    "seglog",
    "seglog-cli",
];

/// fmt check, clippy (`-D warnings`, all targets so benches cannot rot; again for `seglog`
/// with its `metrics` feature), the docs (`-D warnings`), `cargo package` of every published
/// crate, the workspace tests, the metrics test (`--features metrics`), the Kafka oracle
/// (`cargo xtask kafka`), then the loom models.
pub fn run_all() -> Result<(), String> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run_command(fmt)?;

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run_command(clippy)?;
    // The `metrics` feature of `seglog` (off in the workspace build) lints too, example and
    // tests included.
    let mut clippy_metrics = cargo();
    clippy_metrics.args([
        "clippy",
        "-p",
        "seglog",
        "--features",
        "metrics",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run_command(clippy_metrics)?;

    // The API docs build without a warning (broken intra-doc links, bad code blocks).
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings");
    run_command(doc)?;

    // Every published crate packages and builds from its package alone (as `cargo publish`
    // would check it), the layers in dependency order.
    let mut package = cargo();
    package.arg("package");
    for crate_name in PUBLISHED {
        package.args(["-p", crate_name]);
    }
    package.arg("--allow-dirty");
    run_command(package)?;

    let mut test = cargo();
    test.args(["test", "--workspace"]);
    run_command(test)?;
    // The metrics, through the Prometheus example: one scrape finds every series.
    let mut metrics = cargo();
    metrics.args([
        "test",
        "-p",
        "seglog",
        "--features",
        "metrics",
        "--test",
        "it",
        "prometheus",
    ]);
    run_command(metrics)?;

    // Kafka 4.4 itself judges what we write and read (interop/kafka): a real broker and
    // Kafka's storage code. Under CI=true a missing `java` or `mvn` fails the run.
    crate::kafka::run(&[])?;

    crate::loom::run(&[])
}

/// Entry point for `cargo xtask ci` (takes no options).
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(unexpected) = args.first() {
        return Err(format!("`ci` takes no options, got `{unexpected}`"));
    }
    run_all()
}
