//! Every file type seglog reads, replaced by something hostile (issue #26): a FIFO, a
//! directory, a dangling symlink, a 2 GiB sparse file. Every command must answer at once (a
//! FIFO used to block `info`, `read`, `verify`, `recover`, `compact`, `produce` and `truncate`
//! forever), with a typed error naming the file and a bounded peak RSS, and must delete
//! nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::seglog;

/// Peak RSS allowed for one run, in KiB (as `bounded_memory`'s bound).
const BOUND_KIB: u64 = 128 * 1024;

/// A command that runs this long is taken as hung.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The file types of a partition directory seglog (or `dump`) reads.
const FILES: [&str; 12] = [
    "00000000000000000000.log",
    "00000000000000000000.index",
    "00000000000000000000.timeindex",
    "00000000000000000000.txnindex",
    "00000000000000000110.snapshot",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "leader-epoch-checkpoint",
    ".kafka_cleanshutdown",
    "partition.metadata",
];

/// One run: exit code, stdout, stderr, peak RSS in KiB (when GNU time is installed).
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    rss_kib: Option<u64>,
}

/// Runs `seglog ARGS` under GNU time (if installed), failing the test if it takes longer than
/// [`TIMEOUT`] (the child is killed).
fn run_bounded(args: &[&std::ffi::OsStr]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("rss");
    let time = Path::new("/usr/bin/time");
    let mut command = if time.exists() {
        let mut c = Command::new(time);
        c.arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&report)
            .arg(env!("CARGO_BIN_EXE_seglog"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_seglog"))
    };
    let out_path = tmp.path().join("out");
    let err_path = tmp.path().join("err");
    let mut child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("seglog {args:?} hung (killed after {TIMEOUT:?})");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let rss_kib = std::fs::read_to_string(&report).ok().and_then(|text| {
        text.lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .next_back()
    });
    Run {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
        rss_kib,
    }
}

/// What a directory holds: each entry's kind, and the bytes of its regular files (never
/// opening anything else: reading a FIFO would block the test itself).
fn listing(dir: &Path) -> BTreeMap<PathBuf, (String, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = path.symlink_metadata().unwrap();
        let kind = format!("{:?}", meta.file_type());
        let bytes =
            (meta.is_file() && meta.len() < (1 << 20)).then(|| std::fs::read(&path).unwrap());
        out.insert(path, (kind, bytes));
    }
    out
}

/// A clean log of 3 segments (300 records, 10 per batch).
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

fn copy_log(base: &Path, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir(dir).unwrap();
    for entry in std::fs::read_dir(base).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
}

/// The commands run against every case (`dump` also on the file itself).
fn commands(dir: &Path, file: &Path) -> Vec<Vec<std::ffi::OsString>> {
    let d = dir.as_os_str().to_owned();
    let strs = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(Into::into).collect() };
    let with_dir = |cmd: &str, rest: &[&str]| {
        let mut v = strs(&[cmd]);
        v.push(d.clone());
        v.extend(strs(rest));
        v
    };
    vec![
        with_dir("info", &[]),
        with_dir("read", &["--quiet"]),
        with_dir("read", &["--isolation", "read-committed", "--quiet"]),
        with_dir("verify", &["--quiet"]),
        with_dir("recover", &["--quiet"]),
        with_dir("dump", &[]),
        vec!["dump".into(), file.as_os_str().to_owned()],
        with_dir("produce", &["--count", "1", "--quiet"]),
        with_dir("truncate", &["--to", "100"]),
        with_dir("compact", &[]),
    ]
}

/// Puts something that is not a regular file at a path.
type MakeFile = fn(&Path);

#[test]
fn every_state_file_that_is_not_a_regular_file_is_refused_at_once_and_nothing_is_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t-0");
    small_log(&base);
    let kinds: [(&str, MakeFile); 3] = [
        ("a FIFO", |p| {
            let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
            assert!(ok, "mkfifo");
        }),
        ("a directory", |p| std::fs::create_dir(p).unwrap()),
        ("a dangling symlink", |p| {
            std::os::unix::fs::symlink(p.with_file_name("nowhere"), p).unwrap()
        }),
    ];
    for file in FILES {
        for (what, make) in kinds {
            let dir = tmp.path().join("u-0");
            copy_log(&base, &dir);
            let path = dir.join(file);
            let _ = std::fs::remove_file(&path);
            make(&path);
            let before = listing(&dir);
            for args in commands(&dir, &path) {
                let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
                let case = format!("{file} as {what}: seglog {args:?}");
                let out = run_bounded(&args);
                assert!(
                    out.code == 1 || out.code == 2,
                    "{case}: exit {} {}",
                    out.code,
                    out.stderr
                );
                let said = format!("{}{}", out.stdout, out.stderr);
                assert!(
                    said.contains(file),
                    "{case}: does not name the file: {said}"
                );
                assert!(!said.contains("panicked"), "{case}: {said}");
                if let Some(kib) = out.rss_kib {
                    assert!(kib < BOUND_KIB, "{case}: peak RSS {kib} KiB");
                }
                assert!(listing(&dir) == before, "{case}: the directory changed");
            }
        }
    }
}

/// A 2 GiB sparse file at each state file's name costs no memory, never crashes, and loses no
/// record (the `.log`, `.index` and `.timeindex` cases are `bounded_memory`'s).
#[test]
fn a_2_gib_sparse_state_file_costs_no_memory_and_loses_no_record() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t-0");
    small_log(&base);
    for file in &FILES[3..] {
        let dir = tmp.path().join("u-0");
        copy_log(&base, &dir);
        let path = dir.join(file);
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap();
        f.set_len(2 << 30).unwrap();
        drop(f);
        let logs = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
            let mut v: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
                .collect();
            v.sort();
            v
        };
        let before = logs(&dir);
        for args in commands(&dir, &path) {
            // `produce` appends and `truncate` cuts records on purpose.
            if args[0] == "produce" || args[0] == "truncate" {
                continue;
            }
            // `compact` (the last command) rewrites segments on purpose: every record is
            // checked before it runs.
            let compact = args[0] == "compact";
            if compact {
                let read = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
                assert_eq!(read.code, 0, "{file}: {}", read.stderr);
                assert_eq!(read.json_lines().len(), 300, "{file}");
            }
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            let case = format!("a 2 GiB {file}: seglog {args:?}");
            let out = run_bounded(&args);
            assert!(
                (0..=2).contains(&out.code) && !out.stderr.contains("panicked"),
                "{case}: exit {} {}",
                out.code,
                out.stderr
            );
            if let Some(kib) = out.rss_kib {
                assert!(kib < BOUND_KIB, "{case}: peak RSS {kib} KiB");
            }
            assert!(compact || logs(&dir) == before, "{case}: a .log changed");
        }
    }
}

/// `verify` reports a state file that is not a regular file once: as not a file, not again as
/// a checkpoint that does not parse (a FIFO `leader-epoch-checkpoint` was reported twice).
#[test]
fn verify_reports_a_state_file_that_is_not_a_file_once() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("t-0");
    small_log(&base);
    let kinds: [(&str, MakeFile); 2] = [
        ("a FIFO", |p| {
            let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
            assert!(ok, "mkfifo");
        }),
        ("a directory", |p| std::fs::create_dir(p).unwrap()),
    ];
    for file in FILES {
        for (what, make) in kinds {
            let dir = tmp.path().join("v-0");
            copy_log(&base, &dir);
            let path = dir.join(file);
            let _ = std::fs::remove_file(&path);
            make(&path);
            let out = run_bounded(&[
                "verify".as_ref(),
                dir.as_os_str(),
                "--json".as_ref(),
                "--quiet".as_ref(),
            ]);
            let case = format!("{file} as {what}");
            assert!(out.code == 1 || out.code == 2, "{case}: exit {}", out.code);
            if out.code == 1 {
                let report: serde_json::Value =
                    serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
                let about: Vec<_> = report["problems"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["file"].as_str() == Some(path.to_str().unwrap()))
                    .collect();
                assert_eq!(about.len(), 1, "{case}: {report}");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
