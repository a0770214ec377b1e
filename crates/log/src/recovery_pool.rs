//! The bounded pool a [`crate::LogDir`] loads its partitions on at open, as Kafka's
//! `LogManager.loadLogs` does: one fixed pool of `num.recovery.threads.per.data.dir` threads
//! per data directory (threads named `log-recovery-<dir>-<n>`, Kafka's names), each partition
//! one job, and the results collected as they finish.
//!
//! The pool knows nothing of logs: it runs a function over jobs and hands each result back on
//! the calling thread, in completion order. Who may write what meanwhile is the caller's rule
//! (ARCHITECTURE.md, "the parallel open").

use std::sync::mpsc;

use crate::sync::{Mutex, lock};

/// Runs `load` on every job on at most `threads` threads, and calls `finished` **on the calling
/// thread** with each job's index (its position in `jobs`) and result as soon as it finishes,
/// in completion order; returns once every job finished. With one thread, or at most one job,
/// everything runs on the calling thread in job order (no thread is started: the serial path).
/// The workers enter the caller's current `tracing` span, so their events keep its context.
///
/// # Panics
/// Re-raises a panic of `load` (after the other workers finished their current job and the
/// queue ran dry) or of `finished`.
pub(crate) fn run_jobs<J, R>(
    jobs: Vec<J>,
    threads: usize,
    name: &str,
    load: impl Fn(J) -> R + Sync,
    mut finished: impl FnMut(usize, R),
) where
    J: Send,
    R: Send,
{
    let workers = threads.min(jobs.len());
    if workers <= 1 {
        for (index, job) in jobs.into_iter().enumerate() {
            finished(index, load(job));
        }
        return;
    }
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let span = tracing::Span::current();
    let (sender, results) = mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for n in 0..workers {
            let sender = sender.clone();
            let (queue, load, span) = (&queue, &load, &span);
            let spawned = std::thread::Builder::new()
                .name(format!("log-recovery-{name}-{n}"))
                .spawn_scoped(scope, move || {
                    let _entered = span.enter();
                    loop {
                        // The queue's lock is held only to take a job, never while loading.
                        let next = lock(queue).next();
                        let Some((index, job)) = next else { break };
                        if sender.send((index, load(job))).is_err() {
                            break;
                        }
                    }
                });
            if spawned.is_err() {
                // No thread for this worker (the system's limit): the others, or the loop
                // below, take its share of the queue.
                break;
            }
        }
        drop(sender);
        // Ends when every worker has ended (each holds a sender until then).
        for (index, result) in results.iter() {
            finished(index, result);
        }
        // A worker that could not be started leaves jobs behind: the caller runs them.
        loop {
            let next = lock(&queue).next();
            let Some((index, job)) = next else { break };
            finished(index, load(job));
        }
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_job_runs_once_on_at_most_the_given_threads() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let mut seen = BTreeSet::new();
        let mut names = BTreeSet::new();
        run_jobs(
            (0..50).collect(),
            3,
            "root",
            |job: usize| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(1));
                running.fetch_sub(1, Ordering::SeqCst);
                (job * 2, std::thread::current().name().map(str::to_owned))
            },
            |index, (doubled, name)| {
                assert_eq!(doubled, index * 2);
                assert!(seen.insert(index), "job {index} finished twice");
                names.insert(name.unwrap());
            },
        );
        assert_eq!(seen, (0..50).collect());
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert!(names.iter().all(|n| n.starts_with("log-recovery-root-")));
        assert!(names.len() <= 3);
    }

    #[test]
    fn one_thread_runs_in_order_on_the_caller() {
        let caller = std::thread::current().id();
        let mut order = Vec::new();
        run_jobs(
            vec!["a", "b", "c"],
            1,
            "root",
            |job| {
                assert_eq!(std::thread::current().id(), caller);
                job
            },
            |index, job| order.push((index, job)),
        );
        assert_eq!(order, vec![(0, "a"), (1, "b"), (2, "c")]);
    }
}
