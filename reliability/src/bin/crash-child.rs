//! The process the kill -9 harness kills. See `seglog_reliability::child` for the protocol.

#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seglog::{Compression, Durability, Log};
use seglog_reliability::child::{self, Ack};
use seglog_reliability::{RecordId, build_batch};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("append") => append(&args[1..]),
        Some("open") => open(&args[1..]),
        _ => Err(
            "usage: crash-child append <dir> <stream-base> <threads> <seed> | \
                  crash-child open <dir> [hold]"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crash-child: {e}");
            ExitCode::FAILURE
        }
    }
}

fn arg<T: std::str::FromStr>(args: &[String], index: usize, name: &str) -> Result<T, BoxError> {
    args.get(index)
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("missing or invalid <{name}>").into())
}

/// Prints `line` and flushes, under one lock so lines never interleave.
fn say(stdout: &Mutex<std::io::Stdout>, lines: &str) -> Result<(), BoxError> {
    let out = stdout.lock().map_err(|_| "stdout lock poisoned")?;
    let mut out = out.lock();
    out.write_all(lines.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn append(args: &[String]) -> Result<(), BoxError> {
    let dir: PathBuf = arg(args, 0, "dir")?;
    let stream_base: u64 = arg(args, 1, "stream-base")?;
    let threads: u64 = arg(args, 2, "threads")?;
    let seed: u64 = arg(args, 3, "seed")?;
    let log = Arc::new(Log::open(&dir, child::config())?);
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    say(&stdout, &format!("ready {}\n", log.log_end_offset()))?;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (log, stdout) = (Arc::clone(&log), Arc::clone(&stdout));
            std::thread::spawn(move || appender(&log, &stdout, stream_base + t, seed ^ t))
        })
        .collect();
    for worker in workers {
        worker.join().map_err(|_| "appender thread panicked")??;
    }
    Ok(())
}

/// Appends batches of 1-8 records forever (until killed), acknowledging each record after the
/// append returns.
fn appender(
    log: &Log,
    stdout: &Mutex<std::io::Stdout>,
    stream: u64,
    seed: u64,
) -> Result<(), BoxError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seq = 0u64;
    loop {
        let count = rng.random_range(1..=8u64);
        let ids: Vec<RecordId> = (seq..seq + count)
            .map(|seq| RecordId { stream, seq })
            .collect();
        seq += count;
        let compression = Compression::ALL[rng.random_range(0..Compression::ALL.len())];
        let durable = rng.random_bool(0.7);
        let durability = if durable {
            Durability::Fsync
        } else {
            Durability::PageCache
        };
        let info = log.append_with(&build_batch(&ids, compression)?, durability)?;
        let mut lines = String::new();
        for (i, id) in ids.iter().enumerate() {
            let ack = Ack {
                offset: info.first_offset + i as i64,
                id: *id,
                durable,
            };
            lines.push_str(&ack.to_line());
            lines.push('\n');
        }
        say(stdout, &lines)?;
    }
}

fn open(args: &[String]) -> Result<(), BoxError> {
    let dir: PathBuf = arg(args, 0, "dir")?;
    let hold = args.get(1).is_some_and(|a| a == "hold");
    let stdout = Mutex::new(std::io::stdout());
    match Log::open(&dir, child::config()) {
        Ok(log) => {
            say(&stdout, &format!("opened {}\n", log.log_end_offset()))?;
            if hold {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
            log.close()?;
        }
        Err(seglog::Error::Locked { .. }) => say(&stdout, "locked\n")?,
        Err(e) => say(&stdout, &format!("error {e}\n"))?,
    }
    Ok(())
}
