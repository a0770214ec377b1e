//! Hostile and careless input to the CLI (issue #13's classes): each is refused with a clear
//! error that names the file, line or flag, writes nothing it should not, never panics or hangs,
//! and never looks like success.

use std::path::Path;

use crate::support::{assert_unchanged, seglog, seglog_stdin, snapshot};

/// A small clean log of 3 segments (30 records, 10 per batch).
fn small_log(dir: &Path) {
    let out = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        "300".as_ref(),
        "--record-bytes".as_ref(),
        "50".as_ref(),
        "--batch-records".as_ref(),
        "10".as_ref(),
        "--config".as_ref(),
        "segment.bytes=8000".as_ref(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

fn no_rust_names(text: &str) {
    for name in [
        "OffsetJump",
        "NotMonotonic",
        "Corrupt {",
        "Some(",
        "Error {",
        "kind:",
    ] {
        assert!(!text.contains(name), "a Rust name leaked: {text}");
    }
}

#[test]
fn absurd_record_sizes_are_usage_errors_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    for bytes in [
        "18446744073709551615",
        "1099511627776",
        "3000000000",
        "1048500",
    ] {
        let out = seglog([
            "produce".as_ref(),
            dir.as_os_str(),
            "--count".as_ref(),
            "1".as_ref(),
            "--record-bytes".as_ref(),
            bytes.as_ref(),
        ]);
        assert_eq!(out.code, 2, "{bytes}: {}", out.stderr);
        assert!(
            out.stderr.contains("--record-bytes") && out.stderr.contains("max.message.bytes"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
    assert!(!dir.exists(), "nothing is created for a refused run");
}

#[test]
fn input_lines_are_checked_and_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let produce = |input: &str| {
        seglog_stdin(
            [
                "produce".as_ref(),
                dir.as_os_str(),
                "--input".as_ref(),
                "-".as_ref(),
            ],
            input,
        )
    };
    // A misspelt field is not a tombstone.
    let out = produce("{\"value\":\"a\"}\n{\"valu\":\"x\"}\n");
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("-:2 (byte 14)") && out.stderr.contains("unknown field `valu`"),
        "{}",
        out.stderr
    );
    // `read --json` output feeds back in.
    let out = produce(
        "{\"offset\":7,\"timestamp\":5,\"timestamp_type\":\"create\",\"key\":null,\"value\":\"v\",\"headers\":[]}\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Serde's own position text is not repeated; syntax errors give a column.
    let out = produce("{\"value\":\"x\"\n");
    assert!(
        out.stderr.contains("-:1 (byte 0): not valid JSON (column")
            && !out.stderr.contains("at line"),
        "{}",
        out.stderr
    );
    // One record larger than a batch names its line.
    let big = format!(
        "{{\"value\":\"a\"}}\n{{\"value\":\"{}\"}}\n",
        "x".repeat(1_100_000)
    );
    let out = produce(&big);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("-:2 (byte 14): record of 1100000 bytes"),
        "{}",
        out.stderr
    );
    // An endless line is refused once it passes the bound, not read into memory whole.
    let out = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--input".as_ref(),
        "/dev/zero".as_ref(),
    ]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("/dev/zero:1 (byte 0): line longer than"),
        "{}",
        out.stderr
    );
    // Everything before a bad line was appended, nothing after.
    let read = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    let values: Vec<String> = read
        .json_lines()
        .iter()
        .map(|r| r["value"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(values, ["a", "v", "a"]);
}

#[test]
fn new_logs_get_names_kafka_can_load() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["notpartition2", "topic--1", "we ird:top!c-0"] {
        let dir = tmp.path().join(name);
        let out = seglog_stdin(
            [
                "produce".as_ref(),
                dir.as_os_str(),
                "--input".as_ref(),
                "-".as_ref(),
            ],
            "{\"value\":\"x\"}\n",
        );
        assert_eq!(out.code, 2, "{name}");
        assert!(
            out.stderr
                .contains("not a partition directory name Kafka can load"),
            "{name}: {}",
            out.stderr
        );
        assert!(!dir.exists(), "{name} was created");
    }
    // A log.dirs root is not a partition.
    let root = tmp.path().join("root");
    small_log(&root.join("orders-0"));
    let before = snapshot(&root);
    let out = seglog_stdin(
        [
            "produce".as_ref(),
            root.as_os_str(),
            "--input".as_ref(),
            "-".as_ref(),
        ],
        "{\"value\":\"x\"}\n",
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("log.dirs root"), "{}", out.stderr);
    assert_eq!(snapshot(&root), before);
}

#[test]
fn a_closed_pipe_fails_a_producer_but_not_a_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let bin = env!("CARGO_BIN_EXE_seglog");
    let shell = |cmd: String| {
        let out = std::process::Command::new("bash")
            .args([
                "-c",
                &format!("set -o pipefail; {cmd} | head -1 >/dev/null"),
            ])
            .output()
            .unwrap();
        out.status.code().unwrap()
    };
    let produce = format!(
        "{bin} produce {} --count 200000 --record-bytes 10 --batch-records 10 --json",
        dir.display()
    );
    assert_ne!(shell(produce), 0, "a producer cut off by a closed pipe");
    let read = format!("{bin} read {}", dir.display());
    assert_eq!(shell(read), 0, "a reader stopped by head");
}

#[test]
fn from_timestamp_takes_kafkas_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    small_log(&dir);
    let first = |ts: &str| {
        let out = seglog([
            "read".as_ref(),
            dir.as_os_str(),
            "--from-timestamp".as_ref(),
            ts.as_ref(),
            "--max-records".as_ref(),
            "1".as_ref(),
            "--json".as_ref(),
        ]);
        assert_eq!(out.code, 0, "{ts}: {}", out.stderr);
        out.json_lines()
            .first()
            .map(|r| r["offset"].as_i64().unwrap())
    };
    assert_eq!(first("-2"), Some(0), "EARLIEST");
    assert_eq!(first("-1"), None, "LATEST: the log end, nothing to print");
    assert!(first("-3").is_some(), "MAX_TIMESTAMP");
    // Without remote storage: EARLIEST_LOCAL is EARLIEST, LATEST_TIERED and
    // EARLIEST_PENDING_UPLOAD answer offset -1 (nothing to print).
    assert_eq!(first("-4"), Some(0), "EARLIEST_LOCAL");
    assert_eq!(first("-5"), None, "LATEST_TIERED");
    assert_eq!(first("-6"), None, "EARLIEST_PENDING_UPLOAD");
    let out = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--from-timestamp".as_ref(),
        "-7".as_ref(),
    ]);
    assert_eq!(out.code, 2);
}

#[test]
fn recover_and_retain_refuse_directories_that_hold_no_log() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty-0");
    std::fs::create_dir(&empty).unwrap();
    let unrelated = tmp.path().join("photos");
    std::fs::create_dir(&unrelated).unwrap();
    std::fs::write(unrelated.join("notes.txt"), "hello").unwrap();
    for dir in [&empty, &unrelated] {
        for command in ["recover", "retain"] {
            let out = assert_unchanged(dir, || seglog([command.as_ref(), dir.as_os_str()]));
            assert_eq!(out.code, 2, "{command} {}", dir.display());
            assert!(out.stderr.contains("holds no segment"), "{}", out.stderr);
        }
    }
}

#[test]
fn read_checks_crcs_and_exits_1_after_what_it_could_print() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    small_log(&dir);
    let log = dir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    // A data byte of the second batch (the first is 681 bytes here): the CRC catches it.
    let second = 681;
    bytes[second + 200] ^= 0x20;
    std::fs::write(&log, bytes).unwrap();
    let out = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.json_lines().len(), 10, "the first batch is printed");
    assert!(
        out.stderr.contains("00000000000000000000.log")
            && out.stderr.contains(&format!("byte position {second}"))
            && out.stderr.contains("checksum mismatch"),
        "{}",
        out.stderr
    );
    no_rust_names(&out.stderr);
}

/// Puts something that is not a regular file at a path.
type MakeFile = fn(&Path);

#[test]
fn segment_names_that_are_not_files_are_refused_or_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, MakeFile); 4] = [
        ("a-directory", |p| std::fs::create_dir(p).unwrap()),
        ("dev-zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("a-loop", |p| std::os::unix::fs::symlink(p, p).unwrap()),
        ("a-fifo", |p| {
            let ok = std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap()
                .success();
            assert!(ok, "mkfifo");
        }),
    ];
    for (what, make) in cases {
        let dir = tmp.path().join(format!("{what}-0"));
        small_log(&dir);
        make(&dir.join("00000000000000099999.log"));
        for command in ["read", "info", "recover", "retain"] {
            let out = seglog([command.as_ref(), dir.as_os_str()]);
            assert_eq!(out.code, 2, "{what}: {command}: {}", out.stderr);
            assert!(
                out.stderr.contains("00000000000000099999.log"),
                "{what}: {command}: {}",
                out.stderr
            );
        }
        let out = seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
        assert_eq!(out.code, 1, "{what}: verify: {}", out.stdout);
        let report = out.json_lines().remove(0);
        assert_eq!(
            report["problems"][0]["kind"], "not_a_file",
            "{what}: {report}"
        );
    }
}

#[test]
fn a_small_demo_passes_its_own_checks() {
    let tmp = tempfile::tempdir().unwrap();
    for records in ["1000", "2500"] {
        let dir = tmp.path().join(format!("demo-{records}"));
        let out = seglog([
            "demo".as_ref(),
            dir.as_os_str(),
            "--records".as_ref(),
            records.as_ref(),
            "--quiet".as_ref(),
        ]);
        assert_eq!(out.code, 0, "{records}: {}", out.stdout);
    }
    let out = seglog(["demo", "--records", "18446744073709551615"]);
    assert_eq!(out.code, 2);
}

#[test]
fn dump_refuses_fifos_and_devices_instead_of_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("00000000000000000000.log");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
    for path in [fifo.as_path(), Path::new("/dev/zero")] {
        let out = seglog(["dump".as_ref(), path.as_os_str()]);
        assert_eq!(out.code, 2, "{}: {}", path.display(), out.stderr);
        assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    }
    // Inside a directory: reported, the rest is dumped.
    let out = seglog(["dump".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.contains("not a regular file"), "{}", out.stdout);
}

#[test]
fn truncate_removes_the_tail_at_batch_granularity() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    small_log(&dir);
    let out = seglog([
        "truncate".as_ref(),
        dir.as_os_str(),
        "--to".as_ref(),
        "120".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json_lines().remove(0);
    assert_eq!(report["log_end_offset_before"], 300);
    assert_eq!(report["log_end_offset"], 120);
    let read = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(read.json_lines().len(), 120);
    assert_eq!(seglog(["verify".as_ref(), dir.as_os_str()]).code, 0);
    let empty = tmp.path().join("e-0");
    std::fs::create_dir(&empty).unwrap();
    let out = seglog([
        "truncate".as_ref(),
        empty.as_os_str(),
        "--to".as_ref(),
        "0".as_ref(),
    ]);
    assert_eq!(out.code, 2);
}
