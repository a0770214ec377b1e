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
