//! The kill -9 harness: a `crash-child` process appends (durably or to the page cache) from
//! 1-3 threads and acknowledges each record on stdout after the append returns; the test kills
//! it with SIGKILL at a random moment, reopens the log and checks that recovery succeeded, that
//! every acknowledged record is served at its offset with the acknowledged bytes, and that
//! everything served is whole, valid and gap-free. Then the next child continues the same log.
//!
//! `SEGLOG_CRASH_ITERATIONS` sets the number of kills (default 20; `cargo xtask crash` runs
//! many more in release); `SEGLOG_SEED` replays a run.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::Rng;
use seglog::Log;
use seglog_reliability::child::{self, Ack};
use seglog_reliability::{RecordId, check_acknowledged, read_log};

use crate::support::{iterations, seeded_rng};

const CHILD: &str = env!("CARGO_BIN_EXE_crash-child");

/// A running child whose stdout lines arrive on a channel.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

fn spawn(args: &[String]) -> Running {
    let mut child = Command::new(CHILD)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn crash-child");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                // A line cut by the kill has no newline: it was never a complete ack.
                Ok(0) | Err(_) => break,
                Ok(_) if line.last() != Some(&b'\n') => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                    if tx.send(text).is_err() {
                        break;
                    }
                }
            }
        }
    });
    Running { child, lines }
}

fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut text);
    }
    text
}

/// Runs one child until killed; returns its acknowledgements.
fn run_and_kill(dir: &Path, run: u64, rng: &mut impl Rng, early_kills: &mut u64) -> Vec<Ack> {
    let threads = rng.random_range(1..=3u64);
    let args = [
        "append".to_owned(),
        dir.display().to_string(),
        (run * 16).to_string(),
        threads.to_string(),
        rng.random::<u64>().to_string(),
    ];
    let mut running = spawn(&args);
    let mut lines = Vec::new();
    if rng.random_bool(0.15) {
        // Kill it early: possibly while it opens and recovers the log.
        *early_kills += 1;
        std::thread::sleep(Duration::from_millis(rng.random_range(0..20)));
    } else {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match running.lines.recv_timeout(left) {
                Ok(line) if line.starts_with("ready") => break,
                Ok(line) => lines.push(line),
                Err(_) => {
                    let _ = running.child.kill();
                    let _ = running.child.wait();
                    panic!(
                        "run {run}: the child never became ready: {}",
                        stderr_of(&mut running.child)
                    );
                }
            }
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(1..150)));
    }
    if let Ok(Some(status)) = running.child.try_wait() {
        panic!(
            "run {run}: the child exited by itself ({status}): {}",
            stderr_of(&mut running.child)
        );
    }
    running.child.kill().expect("SIGKILL the child");
    running.child.wait().expect("reap the child");
    lines.extend(running.lines.iter());
    lines
        .iter()
        .filter_map(|line| Ack::parse(line).unwrap_or_else(|e| panic!("run {run}: {e}")))
        .collect()
}

#[test]
fn kill_dash_nine_never_loses_an_acknowledged_record() {
    let kills = iterations("SEGLOG_CRASH_ITERATIONS", 20);
    let (mut rng, seed) = seeded_rng("crash");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crash-0");
    let mut acked: BTreeMap<i64, RecordId> = BTreeMap::new();
    let (mut durable, mut early_kills, mut truncated_bytes, mut recovered) = (0u64, 0, 0u64, 0);
    for run in 0..kills {
        let acks = run_and_kill(&dir, run, &mut rng, &mut early_kills);
        for ack in acks {
            durable += u64::from(ack.durable);
            if let Some(previous) = acked.insert(ack.offset, ack.id) {
                panic!(
                    "seed {seed}, run {run}: offset {} acknowledged twice ({previous:?}, then {:?})",
                    ack.offset, ack.id
                );
            }
        }
        if !dir.exists() {
            assert!(acked.is_empty(), "seed {seed}: the directory vanished");
            continue;
        }
        // A read-only open must see the same (it hides a torn tail without writing).
        match Log::open_read_only(&dir, child::config()) {
            Ok(log) => {
                let contents = read_log(&log)
                    .unwrap_or_else(|v| panic!("seed {seed}, run {run}, read-only: {v}"));
                check_acknowledged(&contents, &acked)
                    .unwrap_or_else(|v| panic!("seed {seed}, run {run}, read-only: {v}"));
            }
            Err(seglog::Error::NoSegments { .. }) if acked.is_empty() => {}
            Err(e) => panic!("seed {seed}, run {run}: read-only open failed: {e}"),
        }
        let log = Log::open(&dir, child::config())
            .unwrap_or_else(|e| panic!("seed {seed}, run {run}: recovery failed: {e}"));
        let report = log.load_report();
        truncated_bytes += report.truncations().map(|(_, n)| n).sum::<u64>();
        recovered += report.recovered().count();
        let contents = read_log(&log).unwrap_or_else(|v| panic!("seed {seed}, run {run}: {v}"));
        check_acknowledged(&contents, &acked)
            .unwrap_or_else(|v| panic!("seed {seed}, run {run}: {v}"));
        assert_eq!(
            contents.log_start_offset, 0,
            "seed {seed}: nothing is retained away"
        );
        // Half the time the harness closes cleanly, half the time it "crashes" too.
        if rng.random_bool(0.5) {
            log.close().unwrap();
        }
    }
    eprintln!(
        "crash: {kills} kills ({early_kills} early), {} records acknowledged ({durable} durable), \
         {recovered} segment recoveries, {truncated_bytes} torn bytes cut",
        acked.len()
    );
    assert!(
        kills < 5 || !acked.is_empty(),
        "seed {seed}: no child ever acknowledged"
    );
}
