//! Where the broker-written Kafka corpus is, for every crate's tests: the one place that decides.
//!
//! The corpus (partition directories written by real Kafka brokers 0.10-3.7, see its
//! `PROVENANCE.md`) is reference material beside the checkout, not part of it:
//! `$SEGLOG_KAFKA_CORPUS` if set, else `../shared/kafka-corpus` next to the repository. Tests
//! read it in place and never copy it into the repository.
//!
//! When it is absent, a test that needs it says so in one line on stderr and passes, so a
//! fresh clone without `../shared` still passes its suite, except under `CI=true`, where a
//! missing corpus fails the test: CI always has it, and a silently skipped check is no check.

#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Once;

/// The environment variable that overrides the corpus location.
pub const ENV: &str = "SEGLOG_KAFKA_CORPUS";

/// Where the corpus is expected: `$SEGLOG_KAFKA_CORPUS`, else `../shared/kafka-corpus` beside
/// the repository.
pub fn location() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/kafka-corpus"
        )),
    }
}

/// The corpus root (a directory holding `PROVENANCE.md`), or `None` when it is absent and `CI`
/// is not `true` (after one line on stderr, printed once per test binary).
///
/// # Panics
/// When the corpus is absent and `CI=true`.
pub fn root() -> Option<PathBuf> {
    let dir = location();
    if dir.join("PROVENANCE.md").is_file() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !ci,
        "the Kafka corpus is missing at {} (set {ENV}); under CI=true it is required",
        dir.display()
    );
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        // Straight to the process's stderr, past the test harness's capture, so a skipped
        // check is visible in the run's output.
        let _ = writeln!(
            std::io::stderr(),
            "note: the Kafka corpus is not at {} (set {ENV}); tests that read it pass without checking it",
            dir.display()
        );
    });
    None
}

/// `root()/rel` when the corpus is present.
pub fn path(rel: &str) -> Option<PathBuf> {
    root().map(|r| r.join(rel))
}

/// Every partition directory (`<source>/<partition>`, a directory holding a `.log` file),
/// sorted; empty when the corpus is absent.
///
/// # Panics
/// When a directory of the corpus cannot be listed (a broken corpus fails the test).
pub fn partitions() -> Vec<PathBuf> {
    let Some(root) = root() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for source in list(&root) {
        if !source.is_dir() {
            continue;
        }
        for part in list(&source) {
            if part.is_dir()
                && list(&part)
                    .iter()
                    .any(|f| f.extension().is_some_and(|e| e == "log"))
            {
                out.push(part);
            }
        }
    }
    out.sort();
    out
}

fn list(dir: &std::path::Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| match e {
                Ok(e) => e.path(),
                Err(e) => panic!("listing {}: {e}", dir.display()),
            })
            .collect(),
        Err(e) => panic!("listing {}: {e}", dir.display()),
    }
}
