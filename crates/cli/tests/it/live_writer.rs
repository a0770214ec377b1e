//! Read-only commands beside a live writer (issue 12, bug 1): a `seglog produce` process
//! rolling tiny segments, and `read`, `info` and `verify` processes run in a loop beside it.
//! Each trims the previous active segment's indexes when it rolls; a reader that had mapped
//! them died of `SIGBUS` when it touched a page past the new end. Read-only opens now copy
//! index files into memory, so no reader may die of a signal.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

/// How long the readers run.
const READ_FOR: Duration = Duration::from_secs(3);

#[test]
fn read_only_commands_beside_a_rolling_writer_never_die_of_a_signal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("live-0");
    let mut writer = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .arg("produce")
        .arg(&dir)
        .args(["--count", "10000000", "--record-bytes", "100"])
        .args(["--batch-records", "1", "--durable", "--json", "--quiet"])
        // A roll every ~25 appends: the active segment's preallocated indexes are trimmed
        // again and again while readers open them.
        .args(["--config", "segment.bytes=4096"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The last offset the writer reported (durable), so readers ask for the log's tail.
    let last = Arc::new(AtomicI64::new(-1));
    let stdout = writer.stdout.take().unwrap();
    let follower = {
        let last = Arc::clone(&last);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: serde_json::Value = serde_json::from_str(&line).unwrap();
                last.store(value["last_offset"].as_i64().unwrap(), Ordering::Release);
            }
        })
    };
    while last.load(Ordering::Acquire) < 50 {
        assert!(writer.try_wait().unwrap().is_none(), "the writer exited");
        std::thread::sleep(Duration::from_millis(10));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let (dir, last, stop) = (dir.clone(), Arc::clone(&last), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut runs = 0u32;
                let mut round = 0usize;
                while !stop.load(Ordering::Acquire) {
                    let from = (last.load(Ordering::Acquire) - 5).max(0).to_string();
                    let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
                    match (round + reader) % 3 {
                        0 => command.arg("read").arg(&dir).args([
                            "--from",
                            &from,
                            "--max-records",
                            "1",
                            "--json",
                        ]),
                        1 => command.arg("info").arg(&dir).arg("--json"),
                        _ => command.arg("verify").arg(&dir).args(["--json", "--quiet"]),
                    };
                    let out = command.stdin(Stdio::null()).output().unwrap();
                    let what = ["read", "info", "verify"][(round + reader) % 3];
                    assert_eq!(
                        out.status.signal(),
                        None,
                        "`seglog {what}` died of a signal (SIGBUS = 7) after {runs} runs: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    // `verify` may find the live tail unfinished (exit 1); nothing may fail
                    // as bad usage or input.
                    let code = out.status.code().unwrap();
                    let allowed: &[i32] = if what == "verify" { &[0, 1] } else { &[0] };
                    assert!(
                        allowed.contains(&code),
                        "`seglog {what}` exited {code}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    runs += 1;
                    round += 1;
                }
                runs
            })
        })
        .collect();
    let started = Instant::now();
    while started.elapsed() < READ_FOR && !readers.iter().all(|r| r.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Release);
    let results: Vec<_> = readers.into_iter().map(|r| r.join()).collect();
    writer.kill().unwrap();
    writer.wait().unwrap();
    follower.join().unwrap();
    let runs: u32 = results
        .into_iter()
        .map(|r| r.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        .sum();
    assert!(runs >= 6, "only {runs} reader runs");
}
