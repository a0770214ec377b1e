//! Crash tests openraft's suite lacks: a real child process (`raft-crash-child`) is killed
//! with SIGKILL at a random point; the store is then reopened here, and its log state, vote
//! and entries must be what the child had been told was durable (every `durable`, `truncated`,
//! `purged` and `vote` line it printed), and every entry found must be one the child wrote.
//! The seeds are printed; `SEGLOG_SEED` replays one.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openraft::storage::RaftLogStorage;
use openraft::{Entry, RaftLogReader, Vote};
use seglog_raft::{KvConfig, LogStore};

#[path = "../../src/bin/raft-crash-child/protocol.rs"]
#[allow(dead_code)]
mod protocol;

use protocol::{Rng, append_term, entry, log_id};

const CHILD: &str = env!("CARGO_BIN_EXE_raft-crash-child");
const ROUNDS: u64 = 5;

/// What the child said before it died.
#[derive(Debug, Default)]
struct Said {
    lines: Vec<String>,
}

impl Said {
    /// The largest number after `word`, if the child said it.
    fn max(&self, word: &str) -> Option<u64> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix(word)?.trim().parse().ok())
            .max()
    }
    /// The largest number after `word` in what the child said after the line `after`.
    fn max_after(&self, after: &str, word: &str) -> Option<u64> {
        self.lines
            .iter()
            .skip_while(|l| *l != after)
            .filter_map(|l| l.strip_prefix(word)?.trim().parse().ok())
            .max()
    }
    fn has(&self, word: &str) -> bool {
        self.lines.iter().any(|l| l.starts_with(word))
    }
}

fn seed() -> u64 {
    std::env::var("SEGLOG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// Runs the child on `dir` and kills it (SIGKILL) once `kill_when(lines so far)` says so;
/// returns every line it printed, including those still in the pipe when it died.
fn run_and_kill(
    scenario: &str,
    dir: &Path,
    seed: u64,
    kill_when: impl Fn(&[String]) -> bool,
) -> Said {
    let mut child = Command::new(CHILD)
        .args([scenario, &dir.display().to_string(), &seed.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut said = Said::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the child exited before it was killed: {:?}",
            said.lines
        );
        let text = line.trim().to_owned();
        assert!(!text.starts_with("error"), "child: {text}");
        said.lines.push(text);
        if kill_when(&said.lines) || Instant::now() > deadline {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Lines printed before the kill are claims too.
    for rest in reader.lines() {
        said.lines.push(rest.unwrap().trim().to_owned());
    }
    said
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// Every entry of the reopened store, its log state checked for consistency with them.
fn reopen(dir: &Path) -> (LogStore<KvConfig>, Vec<Entry<KvConfig>>) {
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir).unwrap();
        let all = store.try_get_log_entries(..).await.unwrap();
        let state = store.get_log_state().await.unwrap();
        for pair in all.windows(2) {
            assert_eq!(pair[1].log_id.index, pair[0].log_id.index + 1, "a hole");
        }
        match all.last() {
            Some(last) => assert_eq!(state.last_log_id, Some(last.log_id)),
            None => assert_eq!(state.last_log_id, state.last_purged_log_id),
        }
        (store, all)
    })
}

/// Kill points: after a random number of lines, preferably right after an `appended` line
/// whose entries are not durable yet (between append and callback).
fn after_lines(n: usize) -> impl Fn(&[String]) -> bool {
    move |lines: &[String]| {
        lines.len() >= n && lines.last().is_some_and(|l| l.starts_with("appended")) && {
            let said = Said {
                lines: lines.to_vec(),
            };
            said.max("appended") > said.max("durable")
        } || lines.len() >= n * 4
    }
}

#[test]
fn kill_between_append_and_callback() {
    let seed = seed();
    println!("seed {seed}");
    let mut rng = Rng(seed);
    let mut in_flight_at_kill = 0;
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let said = run_and_kill(
            "append",
            dir.path(),
            seed ^ round,
            after_lines(5 + rng.below(200) as usize),
        );
        let durable = said.max("durable").unwrap_or(0);
        let appended = said.max("appended").unwrap_or(0);
        if appended > durable {
            in_flight_at_kill += 1;
        }
        let (_store, all) = reopen(dir.path());
        let end = all.last().map_or(0, |e| e.log_id.index + 1);
        assert!(end >= durable, "round {round}: {end} < durable {durable}");
        // Nothing beyond what the child could have appended before it died (one run more).
        assert!(
            end <= appended + 5,
            "round {round}: {end} > appended {appended} + 5"
        );
        for (i, e) in all.iter().enumerate() {
            let index = i as u64;
            assert_eq!(*e, entry(append_term(index), index), "round {round}");
        }
    }
    // The kill did land between appends and their callbacks.
    assert!(
        in_flight_at_kill > 0,
        "no round died with appends in flight"
    );
}

#[test]
fn truncate_then_append_then_crash() {
    let seed = seed();
    println!("seed {seed}");
    let mut rng = Rng(seed);
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        // Half the rounds die around the truncation itself (right after `durable 50`, before
        // or while it runs), the other half in the appends after it.
        let early = round % 2 == 0;
        let n = 1 + rng.below(100) as usize;
        let said = run_and_kill("truncate", dir.path(), seed ^ round, move |lines| {
            if early {
                lines.iter().any(|l| l == "durable 50")
            } else {
                let after = lines.iter().skip_while(|l| *l != "truncated 25").count();
                after > n
            }
        });
        assert!(said.has("durable 50"));
        let (_store, all) = reopen(dir.path());
        let end = all.last().map_or(0, |e| e.log_id.index + 1);
        for (i, e) in all.iter().enumerate().take(25) {
            assert_eq!(*e, entry(1, i as u64), "round {round}");
        }
        assert!(end >= 25, "round {round}: entries below the cut lost");
        let truncated = said.has("truncated");
        let old = all[25..].iter().any(|e| e.log_id.leader_id.term == 1);
        if old {
            // The truncation had not happened: the old entries, all of them and nothing else.
            assert!(!truncated, "round {round}: truncated entries came back");
            assert_eq!(all, (0..50).map(|i| entry(1, i)).collect::<Vec<_>>());
        } else {
            for e in &all[25..] {
                assert_eq!(*e, entry(2, e.log_id.index), "round {round}");
            }
            // What the callbacks reported durable after the truncation (the `durable 50` before
            // it names entries the truncation removed on purpose).
            if let Some(durable) = said.max_after("truncated 25", "durable") {
                assert!(end >= durable, "round {round}: {end} < durable {durable}");
            }
        }
    }
}

#[test]
fn purge_beyond_the_end_then_restart() {
    let seed = seed();
    println!("seed {seed}");
    let mut rng = Rng(seed);
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let early = round % 2 == 0;
        let n = 1 + rng.below(50) as usize;
        let said = run_and_kill("purge", dir.path(), seed ^ round, move |lines| {
            if early {
                lines.iter().any(|l| l == "purged 50")
            } else {
                lines.iter().skip_while(|l| *l != "purged 50").count() > n
            }
        });
        let (mut store, all) = reopen(dir.path());
        let state = rt().block_on(store.get_log_state()).unwrap();
        assert!(said.has("purged 50"));
        assert_eq!(
            state.last_purged_log_id,
            Some(log_id(1, 50)),
            "round {round}"
        );
        assert_eq!(store.log().log_start_offset(), 51, "round {round}");
        let end = all.last().map_or(51, |e| e.log_id.index + 1);
        if let Some(durable) = said.max("durable").filter(|d| *d > 20) {
            assert!(end >= durable, "round {round}: {end} < durable {durable}");
        }
        for e in &all {
            assert_eq!(*e, entry(2, e.log_id.index), "round {round}");
        }
        // The restarted store goes on where the log ends, and keeps it over another restart.
        rt().block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            store
                .append_then(
                    vec![entry(3, end)],
                    Box::new(move |r| {
                        let _ = tx.send(r);
                    }),
                )
                .await
                .unwrap();
            rx.await.unwrap().unwrap();
        });
        drop(store);
        let (_store, again) = reopen(dir.path());
        assert_eq!(again.last(), Some(&entry(3, end)), "round {round}");
        assert_eq!(again.len(), all.len() + 1, "round {round}");
    }
}

#[test]
fn vote_saved_then_crash() {
    let seed = seed();
    println!("seed {seed}");
    let mut rng = Rng(seed);
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let n = 2 + rng.below(60) as usize;
        let said = run_and_kill("vote", dir.path(), seed ^ round, move |lines| {
            lines.len() > n
        });
        let voted = said.max("vote").unwrap_or(0);
        let (mut store, all) = reopen(dir.path());
        let vote = rt().block_on(store.read_vote()).unwrap();
        // The last vote the child was told is saved, or the one it was saving when it died.
        let term = vote.map_or(0, |v: Vote<u64>| v.leader_id().term);
        assert!(
            term == voted || term == voted + 1,
            "round {round}: vote {vote:?}, told {voted}"
        );
        if let Some(v) = vote {
            assert_eq!(v, Vote::new(term, 1));
        }
        let durable = said.max("durable").unwrap_or(0);
        assert!(all.len() as u64 >= durable, "round {round}");
        for e in &all {
            assert_eq!(
                *e,
                entry(e.log_id.index + 1, e.log_id.index),
                "round {round}"
            );
        }
    }
}
