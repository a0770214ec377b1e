//! `seglog recover ROOT` on a `log.dirs` root: every partition checked first (the read-only
//! dry run of `recover DIR`, on `--recovery-threads` threads, with a bar of its own, so a
//! recovery that cannot succeed changes nothing anywhere), then
//! recovered in one `LogDir` open on `--recovery-threads` threads (Kafka's
//! `num.recovery.threads.per.data.dir`, default 2), with a progress bar of the partitions done
//! on a terminal (none with `--quiet` or `--json`), then closed cleanly: the root's
//! checkpoints and clean-shutdown marker are written for the whole root.
//!
//! The report is `recover DIR`'s per partition, in partition order: blank-line separated text,
//! or one JSON object per line with `--json`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use seglog::{LogConfig, LogDir, LogOpenOptions, TopicConfigs};

use crate::Outcome;
use crate::cli::RecoverArgs;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::Out;
use crate::progress::Progress;

use super::recover::{Loaded, RecoverReport, check_before_changing, print_report};

/// Runs `seglog recover` on the root `args.dir` (`listing` is its listing).
///
/// # Errors
/// A partition the dry run refuses ([`Error::RecoverRefused`], nothing changed); the root
/// locked by another process; a partition whose load failed in the real run (the others are
/// recovered and closed first); I/O errors; stdout errors.
pub fn run(args: &RecoverArgs, quiet: bool, listing: &DirListing) -> Result<Outcome, Error> {
    if let Some((path, what)) = listing.irregular.first() {
        return Err(Error::NotRegular {
            path: path.clone(),
            what: what.clone(),
        });
    }
    let reports = recover_root(args, quiet || args.json, &listing.partition_dirs())?;
    let mut out = Out::stdout();
    for (i, report) in reports.iter().enumerate() {
        if args.json {
            out.json(report)?;
        } else {
            if i > 0 {
                out.line("")?;
            }
            print_report(&mut out, report)?;
        }
    }
    out.flush()?;
    Ok(if reports.iter().any(RecoverReport::problems_left) {
        Outcome::ProblemsFound
    } else {
        Outcome::Ok
    })
}

/// The dry run of every partition of `dirs` on `threads` threads (at least 1), each
/// partition's `check_before_changing`; every partition is checked, and the error of the first
/// refused one in `dirs`' order is returned (the same answer as checking them in order).
///
/// # Errors
/// That partition's error ([`Error::RecoverRefused`], or a listing error).
fn check_all(
    dirs: &[PathBuf],
    threads: i32,
    truncate_damaged: bool,
    checking: &Progress,
) -> Result<(), Error> {
    let next = AtomicUsize::new(0);
    let threads = usize::try_from(threads)
        .unwrap_or(1)
        .clamp(1, dirs.len().max(1));
    let mut failures: Vec<(usize, Error)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut failed = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(dir) = dirs.get(i) else {
                            return failed;
                        };
                        let checked = DirListing::existing_log(dir)
                            .and_then(|_| check_before_changing(dir, truncate_damaged));
                        if let Err(e) = checked {
                            failed.push((i, e));
                        }
                        checking.inc(1);
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    failures.sort_by_key(|(i, _)| *i);
    match failures.into_iter().next() {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Recovers every partition of the root `args.dir` (`dirs`, its partition directories) and
/// closes it; the reports in partition order.
fn recover_root(
    args: &RecoverArgs,
    quiet: bool,
    dirs: &[PathBuf],
) -> Result<Vec<RecoverReport>, Error> {
    // The dry runs (one read-only recovery per partition, on as many threads as the
    // recovery) have their own bar.
    let checking = Progress::partitions(dirs.len() as u64, "check", quiet);
    check_all(
        dirs,
        args.recovery_threads,
        args.truncate_damaged,
        &checking,
    )?;
    checking.finish();
    let options = LogOpenOptions {
        recover_all: true,
        repair_destructively: args.truncate_damaged,
        // What `verify` checks: a batch whose records do not decode is damage too.
        decode_records: true,
        ..super::open_options()
    };
    let config = LogConfig {
        num_recovery_threads_per_data_dir: args.recovery_threads,
        ..LogConfig::default()
    };
    let progress = Progress::partitions(dirs.len() as u64, "recover", quiet);
    let log_dir =
        LogDir::open_with_progress(&args.dir, config, TopicConfigs::new(), options, |loaded| {
            progress.inc(1);
            progress.message(&loaded.topic_partition.to_string());
        })?;
    progress.finish();
    let logs = log_dir.logs();
    let loaded: BTreeMap<_, _> = logs
        .iter()
        .map(|(tp, log)| (tp.clone(), Loaded::of(log)))
        .collect();
    log_dir.close()?;
    if let Some((topic_partition, dir, source)) = log_dir.offline_partitions().into_iter().next() {
        return Err(Error::Log(seglog::Error::PartitionOffline {
            topic: topic_partition.topic,
            partition: topic_partition.partition,
            dir,
            source,
        }));
    }
    let mut reports = Vec::new();
    for ((_, log), (_, loaded)) in logs.iter().zip(loaded) {
        reports.push(loaded.report(log.dir(), log)?);
    }
    Ok(reports)
}
