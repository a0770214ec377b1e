//! `cargo xtask ci`: the whole CI gate, exactly what `.ci/run` runs.

use crate::cmd::{cargo, run as run_command};

/// The crates published to crates.io, lowest layer first.
pub const PUBLISHED: &[&str] = &[
    "seglog-index-core",
    "seglog-records",
    "seglog-segment",
    "seglog",
    "seglog-tiered",
    "seglog-cli",
    "seglog-raft",
];

/// fmt check, clippy (`-D warnings`, all targets so benches cannot rot; again for `seglog`
/// with its `metrics` feature and for `seglog-tiered` with `aws`), the docs (`-D warnings`), `cargo package` of every published
/// crate, the workspace tests, the metrics test (`--features metrics`), the S3 tests against
/// moto and SeaweedFS (`seglog-tiered --features aws`), the Kafka oracle
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
    // seglog-tiered's `aws` feature (S3 over HTTP; off in the workspace build, and never in any
    // other crate's default build) lints too, its moto test included.
    let mut clippy_aws = cargo();
    clippy_aws.args([
        "clippy",
        "-p",
        "seglog-tiered",
        "--features",
        "aws",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run_command(clippy_aws)?;

    // The API docs build without a warning (broken intra-doc links, bad code blocks).
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings");
    run_command(doc)?;

    // Every published crate packages and builds from its package alone (as `cargo publish`
    // would check it), the layers in dependency order.
    forget_packaged_sources()?;
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
    // The remote tier against real S3 servers (moto, and SeaweedFS's `weed mini` end to end,
    // both installed by .ci/run; under CI=true a missing server fails its test).
    let mut s3 = cargo();
    s3.args([
        "test",
        "-p",
        "seglog-tiered",
        "--features",
        "aws",
        "--test",
        "it",
        "--",
        "s3",
        "seaweedfs",
    ]);
    run_command(s3)?;

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

/// Removes what an earlier `cargo package` left unpacked in `$CARGO_HOME/registry` for our own
/// crates. `cargo package -p …` verifies each crate against the others through a temporary
/// local registry under `target/package/`, and cargo unpacks that registry's crates into
/// `registry/src/-<hash of its path>/NAME-VERSION` — and reuses the unpacked copy whenever the
/// same path and version come again (the same checkout, or a fresh clone at the same place), so
/// a crate would be verified against a stale copy of the layer below it. Local registries are
/// the `-<hash>` directories (crates.io's are named after its host), so only those are touched.
fn forget_packaged_sources() -> Result<(), String> {
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => std::path::PathBuf::from(home),
        None => match std::env::var_os("HOME") {
            Some(home) => std::path::PathBuf::from(home).join(".cargo"),
            None => return Ok(()),
        },
    };
    for kind in ["src", "cache"] {
        let Ok(registries) = std::fs::read_dir(home.join("registry").join(kind)) else {
            continue;
        };
        for registry in registries.flatten() {
            if !registry.file_name().to_string_lossy().starts_with('-') {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(registry.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let ours = PUBLISHED.iter().any(|krate| {
                    name.strip_prefix(krate)
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
                });
                if !ours {
                    continue;
                }
                let path = entry.path();
                let removed = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                removed.map_err(|e| {
                    format!("remove the stale packaged copy {}: {e}", path.display())
                })?;
            }
        }
    }
    forget_packaged_builds()
}

/// Removes the build fingerprints of our published crates: cargo unpacks the temporary
/// registry's crates with the tarball's fixed file times (years old), so a crate built from an
/// earlier package looks fresh beside changed sources, and the verification of `seglog` would
/// link the `seglog-segment 0.1.0` an earlier run compiled, not the one just packaged. The
/// fingerprints of the crates built from their paths go too (they are rebuilt once, by the
/// tests; a clean clone has none yet).
fn forget_packaged_builds() -> Result<(), String> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || crate::cmd::workspace_root().join("target"),
        std::path::PathBuf::from,
    );
    let Ok(units) = std::fs::read_dir(target.join("debug").join(".fingerprint")) else {
        return Ok(());
    };
    for unit in units.flatten() {
        let name = unit.file_name().to_string_lossy().into_owned();
        let ours = PUBLISHED.iter().any(|krate| {
            name.strip_prefix(krate)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|hash| hash.chars().all(|c| c.is_ascii_hexdigit()))
        });
        if !ours {
            continue;
        }
        std::fs::remove_dir_all(unit.path()).map_err(|e| {
            format!(
                "remove the build fingerprint {}: {e}",
                unit.path().display()
            )
        })?;
    }
    Ok(())
}
