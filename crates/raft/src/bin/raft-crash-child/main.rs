//! Test support: the process seglog-raft's crash tests kill with SIGKILL (`tests/it/crash.rs`).
//! `raft-crash-child SCENARIO DIR SEED` runs one scenario on the store in DIR until killed,
//! printing what openraft would have been told (see `protocol.rs`).

#![forbid(unsafe_code)]

mod protocol;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use openraft::Vote;
use openraft::storage::RaftLogStorage;
use protocol::{Rng, append_term, entry, log_id};
use seglog_raft::{KvConfig, LogStore};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = || -> Result<(), BoxError> {
        let (Some(scenario), Some(dir), Some(seed)) = (args.first(), args.get(1), args.get(2))
        else {
            return Err("usage: raft-crash-child append|truncate|purge|vote DIR SEED".into());
        };
        let dir = PathBuf::from(dir);
        let seed: u64 = seed.parse()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()?;
        runtime.block_on(async {
            let mut store = LogStore::<KvConfig>::open(&dir)?;
            say(&format!("ready {}", store.log().log_end_offset()));
            match scenario.as_str() {
                "append" => append_forever(&mut store, 0, append_term, Rng(seed)).await,
                "truncate" => truncate(&mut store, Rng(seed)).await,
                "purge" => purge(&mut store, Rng(seed)).await,
                "vote" => vote(&mut store).await,
                other => Err(format!("unknown scenario {other}").into()),
            }
        })
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("raft-crash-child: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints one line (stdout is line-buffered: the line is in the pipe when this returns).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Appends runs of 1-5 entries from `from` on, forever, without waiting for the callbacks
/// (at most a few hundred entries in flight): `appended` after each append returns,
/// `durable` from each callback.
async fn append_forever(
    store: &mut LogStore<KvConfig>,
    from: u64,
    term_of: impl Fn(u64) -> u64,
    mut rng: Rng,
) -> Result<(), BoxError> {
    let durable = Arc::new(AtomicU64::new(from));
    let mut next = from;
    loop {
        while next - durable.load(Ordering::Acquire) > 200 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let count = 1 + rng.below(5);
        let entries: Vec<_> = (next..next + count).map(|i| entry(term_of(i), i)).collect();
        let end = next + count;
        let seen = Arc::clone(&durable);
        store
            .append_then(
                entries,
                Box::new(move |result| match result {
                    Ok(()) => {
                        seen.fetch_max(end, Ordering::AcqRel);
                        say(&format!("durable {end}"));
                    }
                    Err(e) => say(&format!("error {e}")),
                }),
            )
            .await?;
        say(&format!("appended {end}"));
        next = end;
    }
}

/// Appends `[from, to)` of `term` in runs of 10 and waits until they are durable.
async fn append_durable(
    store: &mut LogStore<KvConfig>,
    term: u64,
    from: u64,
    to: u64,
) -> Result<(), BoxError> {
    let mut start = from;
    while start < to {
        let end = (start + 10).min(to);
        let (tx, rx) = tokio::sync::oneshot::channel();
        store
            .append_then(
                (start..end).map(|i| entry(term, i)).collect(),
                Box::new(move |result| {
                    let _ = tx.send(result);
                }),
            )
            .await?;
        rx.await??;
        start = end;
    }
    say(&format!("durable {to}"));
    Ok(())
}

/// 0..50 of term 1, durable; truncate at 25 (inside the batch 20..30); then term 2 from 25 on.
async fn truncate(store: &mut LogStore<KvConfig>, rng: Rng) -> Result<(), BoxError> {
    append_durable(store, 1, 0, 50).await?;
    store.truncate(log_id(1, 25)).await?;
    say("truncated 25");
    append_forever(store, 25, |_| 2, rng).await
}

/// 0..20 of term 1, durable; purge up to 50 (past the end); then term 2 from 51 on.
async fn purge(store: &mut LogStore<KvConfig>, rng: Rng) -> Result<(), BoxError> {
    append_durable(store, 1, 0, 20).await?;
    store.purge(log_id(1, 50)).await?;
    say("purged 50");
    append_forever(store, 51, |_| 2, rng).await
}

/// Votes for terms 1, 2, ... (node 1), each after an appended entry of the previous term.
async fn vote(store: &mut LogStore<KvConfig>) -> Result<(), BoxError> {
    for term in 1u64.. {
        store.save_vote(&Vote::new(term, 1)).await?;
        say(&format!("vote {term}"));
        let index = term - 1;
        append_durable(store, term, index, index + 1).await?;
    }
    Ok(())
}
