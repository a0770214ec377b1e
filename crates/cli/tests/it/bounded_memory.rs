//! `dump` and `verify` stream `.log` files (issue #13: they used to read whole files, so a
//! 3 GB sparse `.log` cost 3 GB). Each run's peak resident set is measured by the kernel for
//! the child (`getrusage` through GNU time's `wait4`) and must stay far below the file size.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::seglog;

/// A hole of 2 GiB: costs no disk, and would cost 2 GiB of memory if read whole.
const HOLE: u64 = 2 << 30;

/// Peak RSS allowed for one run, in KiB: a few chunks and the binary itself.
const BOUND_KIB: u64 = 128 * 1024;

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

/// Runs `seglog ARGS` and returns (exit code, stdout, peak RSS in KiB), or `None` when GNU
/// time is not installed (the test then says so and checks only the exit code).
fn seglog_peak_rss(args: &[&std::ffi::OsStr]) -> (i32, String, Option<u64>) {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        let out = seglog(args);
        eprintln!("/usr/bin/time not installed: peak RSS not measured");
        return (out.code, out.stdout, None);
    }
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("rss");
    let out = Command::new(time)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&report).unwrap();
    // GNU time writes "Command exited with non-zero status N" before the value.
    let kib = text
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no RSS in {text:?}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        Some(kib),
    )
}

#[track_caller]
fn assert_bounded(what: &str, rss: Option<u64>) {
    if let Some(kib) = rss {
        assert!(
            kib < BOUND_KIB,
            "{what}: peak RSS {kib} KiB, bound {BOUND_KIB} KiB"
        );
    }
}

#[test]
fn dump_and_verify_stream_a_2_gib_sparse_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    small_log(&dir);
    let log = dir.join("00000000000000000000.log");
    let len = std::fs::metadata(&log).unwrap().len();

    // 1. A zero tail of 2 GiB after the last batch (a preallocated, never written tail).
    let file = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    file.set_len(len + HOLE).unwrap();
    let (code, stdout, rss) =
        seglog_peak_rss(&["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(code, 1, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{stdout}");
    assert_eq!(problems[0]["kind"], "zero_tail");
    assert_eq!(problems[0]["position"], len);
    assert_bounded("verify of a 2 GiB zero tail", rss);

    let (code, stdout, rss) =
        seglog_peak_rss(&["dump".as_ref(), log.as_os_str(), "--json".as_ref()]);
    assert_eq!(code, 1);
    let last = stdout.lines().last().unwrap();
    let problem: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(problem["position"], len);
    assert!(
        problem["problem"]
            .as_str()
            .unwrap()
            .contains(&format!("{HOLE} zero bytes")),
        "{last}"
    );
    assert_bounded("dump of a 2 GiB zero tail", rss);

    // 2. A damaged length field that claims almost 2 GiB, which the hole makes "fit": a batch
    //    above the bound is corruption at its position, never read.
    let first_batch = 12
        + u64::from(u32::from_be_bytes(
            std::fs::read(&log)
                .map(|b| b[8..12].try_into().unwrap())
                .unwrap_or([0; 4]),
        ));
    file.set_len(len).unwrap();
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(&0x7fff_fff0u32.to_be_bytes(), first_batch + 8)
            .unwrap();
    }
    file.set_len(len + HOLE).unwrap();
    let (code, stdout, rss) =
        seglog_peak_rss(&["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(code, 1, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let problem = &report["problems"][0];
    assert_eq!(problem["kind"], "corrupt_batch", "{stdout}");
    assert_eq!(problem["position"], first_batch);
    assert!(
        problem["file"]
            .as_str()
            .unwrap()
            .ends_with("00000000000000000000.log")
    );
    assert!(
        problem["message"]
            .as_str()
            .unwrap()
            .contains("larger than the 67108864-byte bound"),
        "{stdout}"
    );
    assert_bounded("verify of a 2 GiB length field", rss);

    let (code, stdout, rss) = seglog_peak_rss(&["dump".as_ref(), log.as_os_str()]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains(&format!(
            "problem at position {first_batch}: a batch of 2147483644 bytes is larger than"
        )),
        "{stdout}"
    );
    assert_bounded("dump of a 2 GiB length field", rss);

    // The bound is a flag: below the size of the log's batches, the first one is reported.
    file.set_len(len).unwrap();
    let out = seglog([
        "verify".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--max-batch-bytes".as_ref(),
        "100".as_ref(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["problems"][0]["kind"], "corrupt_batch");
    assert_eq!(report["problems"][0]["position"], 0);
}

/// Every other file a command reads is bounded too (found by trying them): a 2 GiB sparse
/// checkpoint, leader-epoch checkpoint, producer snapshot, offset or time index used to cost
/// 2 GiB in every command (the checkpoints also hung them for minutes). Now checkpoints and
/// snapshots above their bound are reported and not read, a read-only open rebuilds an index
/// larger than its `.log` can need in memory instead of copying it, and `verify` streams it.
#[test]
fn huge_checkpoints_snapshots_and_indexes_cost_no_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t-0");
    small_log(&base);
    for file in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "leader-epoch-checkpoint",
        "00000000000000000000.snapshot",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ] {
        let dir = tmp.path().join("u-0");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        for entry in std::fs::read_dir(&base).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
        let path = dir.join(file);
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap();
        f.set_len(HOLE).unwrap();
        drop(f);
        for command in ["info", "read", "verify", "recover"] {
            let (code, stdout, rss) =
                seglog_peak_rss(&[command.as_ref(), dir.as_os_str(), "--quiet".as_ref()]);
            assert!(
                code == 0 || code == 1,
                "{file} {command}: exit {code} {stdout}"
            );
            assert_bounded(&format!("{command} with a 2 GiB {file}"), rss);
            if command == "verify" && file.ends_with("index") {
                assert!(stdout.contains("zero padding"), "{file}: {stdout}");
            }
            if command == "verify" && !file.contains("offset-checkpoint") {
                assert_eq!(code, 1, "{file}: {stdout}");
            }
            if command == "recover" && file.contains("checkpoint") && !file.starts_with("leader") {
                assert!(stdout.contains("larger than the"), "{file}: {stdout}");
            }
            if command == "recover" {
                assert_eq!(code, 0, "{file}: {stdout}");
            }
        }
        // recover repaired it: the checkpoints are rewritten, the indexes rebuilt, the
        // producer snapshots rewritten from the rebuilt producer state.
        let out = seglog(["verify".as_ref(), dir.as_os_str()]);
        assert_eq!(out.code, 0, "{file}: {}", out.stdout);
    }
}
