//! `recover` runs in bounded descriptors at any segment count (issue #28: its read-only dry
//! run kept every segment's `.log` open, because indexes rebuilt in memory pinned the files,
//! so a log of more segments than `ulimit -n` could not be recovered: "Too many open files").

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::seglog;

/// More segments than the descriptor limit below, and than the segment cache's default
/// capacity (256), which bounds the open segments of the read-write open.
const SEGMENTS: usize = 400;

/// Below `SEGMENTS`, above the cache's capacity plus the process's own descriptors.
const NOFILE: usize = 320;

fn read_all(dir: &Path) -> Vec<serde_json::Value> {
    let out = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json_lines()
}

#[test]
fn recover_of_more_segments_than_the_descriptor_limit_succeeds_and_keeps_every_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("many-0");
    let out = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        SEGMENTS.to_string().as_ref(),
        "--record-bytes".as_ref(),
        "10".as_ref(),
        "--batch-records".as_ref(),
        "1".as_ref(),
        // One batch a segment.
        "--config".as_ref(),
        "segment.bytes=100".as_ref(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let logs = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("log".as_ref()))
            .count()
    };
    assert_eq!(logs(&dir), SEGMENTS);
    let before = read_all(&dir);
    assert_eq!(before.len(), SEGMENTS);

    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n {NOFILE} && exec \"$0\" recover --quiet \"$1\""
        ))
        .arg(env!("CARGO_BIN_EXE_seglog"))
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("Too many open files"), "{stderr}");
    assert_eq!(logs(&dir), SEGMENTS);
    assert_eq!(read_all(&dir), before);
}
