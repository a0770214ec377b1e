//! `seglog recover ROOT` on a `log.dirs` root (issue 28): every partition recovered in one
//! parallel open, the same report whatever the thread count, no progress output off a
//! terminal or with `--json`, and a refused partition stops the run before anything changes.

use std::path::Path;

use seglog::{BatchBuilder, LogConfig, LogDir, TopicPartition};

use crate::support::*;

const T0: i64 = 1_700_000_000_000;

/// A root of three partitions left by a crash (no close), `orders-1`'s last segment with a
/// torn tail of 37 bytes.
fn crashed_root(root: &Path) {
    let config = LogConfig {
        segment_bytes: 1024,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    };
    let dir = LogDir::open(root, config).unwrap();
    for p in 0..3 {
        let log = dir
            .get_or_create(&TopicPartition::new("orders", p))
            .unwrap();
        for i in 0..(20 + i64::from(p) * 5) {
            let mut batch = BatchBuilder::new(0);
            batch.append(T0 + i, None, Some(format!("v{i}").as_bytes()), &[]);
            log.append(&batch.build().unwrap()).unwrap();
        }
    }
    drop(dir); // a crash
    let partition = root.join("orders-1");
    let mut logs: Vec<_> = std::fs::read_dir(&partition)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let last = logs.pop().unwrap();
    let mut bytes = std::fs::read(&last).unwrap();
    bytes.extend_from_slice(&[0x5A; 37]);
    std::fs::write(&last, bytes).unwrap();
}

/// A copy of the root `src` (its partition directories too) in a new temp dir.
fn copy_root(src: &Path) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("root");
    for (path, bytes) in snapshot(src) {
        let target = dst.join(path.strip_prefix(src).unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, bytes).unwrap();
        }
    }
    (tmp, dst)
}

/// The `--json` reports without their `dir` (which names the copy).
fn reports_without_dirs(run: &Run) -> Vec<serde_json::Value> {
    run.json_lines()
        .into_iter()
        .map(|mut report| {
            report.as_object_mut().unwrap().remove("dir");
            report
        })
        .collect()
}

#[test]
fn recover_of_a_root_recovers_every_partition_in_parallel() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("root");
    crashed_root(&pristine);
    let mut runs = Vec::new();
    for threads in ["1", "4"] {
        let (_copy, root) = copy_root(&pristine);
        let run = seglog([
            "recover".as_ref(),
            root.as_os_str(),
            "--json".as_ref(),
            "--recovery-threads".as_ref(),
            threads.as_ref(),
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stderr, "", "no progress output with --json");
        let reports = run.json_lines();
        let dirs: Vec<_> = reports.iter().map(|r| r["dir"].clone()).collect();
        assert_eq!(
            dirs,
            (0..3)
                .map(|p| serde_json::json!(root.join(format!("orders-{p}"))))
                .collect::<Vec<_>>(),
            "one report per partition, in partition order"
        );
        for (p, report) in reports.iter().enumerate() {
            assert_eq!(report["was_clean"], false);
            assert_eq!(report["log_end_offset"], 20 + 5 * p);
            let cut = if p == 1 { 37 } else { 0 };
            assert_eq!(report["truncated_bytes"], cut, "orders-{p}");
        }
        assert!(root.join(seglog::CLEAN_SHUTDOWN_FILE).exists());
        // Cleanly closed: a second run finds every partition clean and cuts nothing.
        let again = seglog(["recover".as_ref(), root.as_os_str(), "--json".as_ref()]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        for report in again.json_lines() {
            assert_eq!(report["was_clean"], true);
            assert_eq!(report["truncated_bytes"], 0);
        }
        runs.push(reports_without_dirs(&run));
    }
    assert_eq!(runs[0], runs[1], "the same reports on 1 and 4 threads");
}

#[test]
fn recover_of_a_root_in_text_reports_each_partition_and_draws_no_bar_off_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    crashed_root(&root);
    let run = seglog(["recover".as_ref(), root.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "stderr is not a terminal: no bar");
    for p in 0..3 {
        let name = root.join(format!("orders-{p}"));
        assert!(
            run.stdout.contains(&format!(
                "{}: unclean shutdown before this run",
                name.display()
            )),
            "{}",
            run.stdout
        );
    }
    assert_eq!(run.stdout.matches("\n\n").count(), 2, "{}", run.stdout);
}

/// A partition the dry run refuses (here, one holding no segment) stops the run before any
/// partition changes.
#[test]
fn a_refused_partition_changes_nothing_in_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    crashed_root(&root);
    std::fs::create_dir(root.join("empty-0")).unwrap();
    let before = snapshot(&root);
    let run = seglog(["recover".as_ref(), root.as_os_str()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("empty-0"), "{}", run.stderr);
    assert_eq!(snapshot(&root), before, "nothing changed");
}

/// The checks run on the recovery threads; whatever the count, the first refused partition in
/// partition order is the one named, and nothing changes.
#[test]
fn parallel_checks_name_the_first_refused_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    crashed_root(&root);
    for name in ["aaa-0", "zzz-0"] {
        std::fs::create_dir(root.join(name)).unwrap();
    }
    let before = snapshot(&root);
    for threads in ["1", "4"] {
        let run = seglog([
            "recover".as_ref(),
            root.as_os_str(),
            "--recovery-threads".as_ref(),
            threads.as_ref(),
        ]);
        assert_eq!(run.code, 2, "{threads}: {}", run.stderr);
        assert!(run.stderr.contains("aaa-0"), "{threads}: {}", run.stderr);
        assert!(!run.stderr.contains("zzz-0"), "{threads}: {}", run.stderr);
        assert_eq!(snapshot(&root), before, "{threads}: nothing changed");
    }
}

/// On a terminal (a pseudo-terminal from util-linux `script`; skipped where it is missing),
/// the run draws a bar of partitions for the checks and one for the recovery; `--quiet` draws
/// none.
#[test]
fn a_terminal_gets_a_bar_of_partitions_and_quiet_gets_none() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no `script` to run the command under a pseudo-terminal");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    crashed_root(&root);
    let under_a_terminal = |extra: &str| {
        let command = format!(
            "{} {extra} recover {}",
            env!("CARGO_BIN_EXE_seglog"),
            root.display()
        );
        let out = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = under_a_terminal("");
    // Each bar is drawn when it starts (its steady tick); later frames may be rate-limited.
    assert!(shown.contains("check ["), "{shown}");
    assert!(shown.contains("recover ["), "{shown}");
    assert!(shown.contains("/3 partitions"), "{shown}");
    assert!(
        shown.contains("unclean shutdown before this run"),
        "{shown}"
    );
    let quiet = under_a_terminal("--quiet");
    assert!(!quiet.contains("partitions"), "{quiet}");
    assert!(quiet.contains("clean shutdown before this run"), "{quiet}");
}
