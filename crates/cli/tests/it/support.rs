//! Running the real binary, temp dirs, and "did anything change on disk" snapshots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The Kafka-broker corpus (see `seglog-test-corpus`): `None` when it is absent outside CI.
pub fn corpus() -> Option<PathBuf> {
    seglog_test_corpus::root()
}

/// Every partition directory of the corpus (`<source>/<partition>`), sorted; empty when the
/// corpus is absent outside CI.
pub fn corpus_partitions() -> Vec<PathBuf> {
    let dirs = seglog_test_corpus::partitions();
    if corpus().is_some() {
        assert_eq!(
            dirs.len(),
            32,
            "PROVENANCE.md lists 32 partition directories"
        );
    }
    dirs
}

/// The result of one run of `seglog`.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts exit 0 and returns stdout.
    #[track_caller]
    pub fn ok(self) -> String {
        assert_eq!(
            self.code, 0,
            "stderr: {}\nstdout: {}",
            self.stderr, self.stdout
        );
        self.stdout
    }

    /// stdout parsed as JSON Lines.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

fn finish(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs `seglog ARGS`.
pub fn seglog<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    finish(
        Command::new(env!("CARGO_BIN_EXE_seglog"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    )
}

/// Runs `seglog ARGS` with `stdin` as standard input.
pub fn seglog_stdin<I, S>(args: I, stdin: &str) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // The command may refuse before reading its input: a closed pipe is not a test failure.
    if let Err(e) = input.write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    drop(input);
    finish(child.wait_with_output().unwrap())
}

/// Every file under `dir` (recursively) with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
                files.insert(path, Vec::new());
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Asserts that running `f` leaves `dir` byte-for-byte unchanged.
#[track_caller]
pub fn assert_unchanged<T>(dir: &Path, f: impl FnOnce() -> T) -> T {
    let before = snapshot(dir);
    let out = f();
    let after = snapshot(dir);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "file listing changed in {}",
        dir.display()
    );
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "{} changed", path.display());
    }
    out
}

/// Copies a directory (flat) into a fresh temp dir; returns (guard, copy path).
pub fn copy_dir(src: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(src.file_name().unwrap());
    std::fs::create_dir(&dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            // Not fs::copy: the corpus is read-only and copies must be writable.
            std::fs::write(
                dst.join(path.file_name().unwrap()),
                std::fs::read(&path).unwrap(),
            )
            .unwrap();
        }
    }
    (tmp, dst)
}
