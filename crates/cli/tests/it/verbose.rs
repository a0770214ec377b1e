//! `-v` / `-vv` / `RUST_LOG`: the log's events on stderr (docs/observability.md), and none
//! without them.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `seglog ARGS` with `RUST_LOG` set to `rust_log` (or unset); returns (code, stderr).
fn run(args: &[&str], dir: &Path, rust_log: Option<&str>) -> (i32, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
    command.args(args).arg(dir).stdin(Stdio::null());
    match rust_log {
        Some(value) => command.env("RUST_LOG", value),
        None => command.env_remove("RUST_LOG"),
    };
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const SMALL_SEGMENTS: [&str; 6] = [
    "--count",
    "200",
    "--batch-records",
    "10",
    "--config",
    "segment.bytes=4096",
];

#[test]
fn v_prints_operator_events_vv_developer_detail_and_none_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");

    let mut quiet = vec!["produce"];
    quiet.extend(SMALL_SEGMENTS);
    let (code, stderr) = run(&quiet, &dir, None);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("log loaded"),
        "events without -v: {stderr}"
    );

    let mut info = vec!["-v", "produce"];
    info.extend(SMALL_SEGMENTS);
    let (code, stderr) = run(&info, &dir, None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("INFO"), "{stderr}");
    assert!(stderr.contains("log loaded"), "{stderr}");
    assert!(stderr.contains("rolled new segment"), "{stderr}");
    assert!(
        stderr.contains("orders-0"),
        "the events name the directory: {stderr}"
    );
    assert!(!stderr.contains("DEBUG"), "-v is INFO: {stderr}");

    // `recover` validates every segment: each one's recovery is developer detail.
    let (code, stderr) = run(&["-vv", "recover"], &dir, None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("DEBUG"), "{stderr}");
    assert!(
        stderr.contains("segment recovered, nothing cut"),
        "{stderr}"
    );
    assert!(stderr.contains("base_offset="), "{stderr}");

    // RUST_LOG alone turns them on too, and wins over -v.
    let (code, stderr) = run(&["info"], &dir, Some("info"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("log loaded"), "{stderr}");
    let (code, stderr) = run(&["-vv", "info"], &dir, Some("warn"));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("log loaded"), "RUST_LOG=warn: {stderr}");
}

#[test]
fn v_reports_a_cleaning_round_with_its_figures() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table-0");
    let mut input = String::new();
    for i in 0..400 {
        input.push_str(&format!(
            "{{\"key\":\"k{}\",\"value\":\"v{i}-{}\"}}\n",
            i % 10,
            "x".repeat(40)
        ));
    }
    let mut produce = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["produce"])
        .arg(&dir)
        .args(["--input", "-", "--batch-records", "10"])
        .args([
            "--config",
            "cleanup.policy=compact",
            "--config",
            "segment.bytes=4096",
        ])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    produce
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    assert!(produce.wait().unwrap().success());

    let (code, stderr) = run(&["-v", "compact"], &dir, None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("cleaning round done"), "{stderr}");
    assert!(stderr.contains("segments_cleaned"), "{stderr}");
    assert!(stderr.contains("table-0"), "{stderr}");
}

/// A crash leaves the active segment's preallocated indexes untrimmed: `recover` rebuilds
/// them and neither its report nor the INFO event calls that corrupt; durations in the events
/// are milliseconds with at most 3 decimals.
#[test]
fn a_crashed_active_segment_is_not_reported_corrupt_and_durations_are_rounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");
    {
        let config = seglog::LogConfig {
            segment_bytes: 4096,
            ..seglog::LogConfig::default()
        };
        let log = seglog::Log::open(&dir, config).unwrap();
        for i in 0..120 {
            let mut batch = seglog::BatchBuilder::new(0);
            batch.append(
                1_700_000_000_000 + i,
                None,
                Some(b"a value of some length"),
                &[],
            );
            log.append(&batch.build().unwrap()).unwrap();
        }
        assert!(log.segment_count() > 1);
        // Dropped without close: a crash (the active segment's indexes keep their zeros).
    }
    let out = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["-v", "recover"])
        .arg(&dir)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("preallocated and not trimmed before the unclean shutdown"),
        "{stdout}"
    );
    assert!(!stdout.to_lowercase().contains("corrupt"), "{stdout}");
    let loaded = stderr
        .lines()
        .find(|l| l.contains("log loaded"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let duration = loaded
        .split("duration_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{loaded}"));
    let decimals = duration.split_once('.').map_or(0, |(_, d)| d.len());
    assert!(decimals <= 3, "{loaded}");
    for line in stderr.lines().filter(|l| l.contains("indexes rebuilt")) {
        assert!(!line.to_lowercase().contains("corrupt"), "{line}");
    }
}
