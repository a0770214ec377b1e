//! The flush thread: completes openraft's `LogFlushed` callbacks (or any [`OnDurable`]) once their entries are
//! durable, many callbacks per fsync.
//!
//! `append` writes at page-cache durability (readable at once) and queues its callback with
//! the log end offset it needs durable. The thread takes every queued callback, makes the
//! highest end offset among them durable with one [`seglog::Log::sync_to`] (seglog's group
//! commit), then completes them in order. A barrier is a callback of the store itself: the
//! writes that must not overtake queued appends (truncate, purge, vote) wait for one first.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use crate::Error;

/// What is called once appended entries are durable (or failed to become so).
pub type OnDurable = Box<dyn FnOnce(Result<(), std::io::Error>) + Send + 'static>;

/// One queued request.
pub(crate) enum Job {
    /// Call `done` once every offset below `end_offset` is durable.
    Flush { end_offset: i64, done: OnDurable },
    /// Reply once every job queued before this one is done; carries the durability error of
    /// that work, if any.
    Barrier(tokio::sync::oneshot::Sender<Result<(), String>>),
}

/// The sending side held by the store.
/// Dropping it ends the thread once the queued jobs are done, and waits for that.
pub(crate) struct Flusher {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts the thread; `sync(owner, end_offset)` makes every offset below `end_offset`
    /// durable.
    ///
    /// # Errors
    /// [`Error::Io`] when the thread cannot be spawned.
    pub(crate) fn start<S: Send + Sync + 'static>(
        owner: Arc<S>,
        sync: impl Fn(&S, i64) -> Result<(), String> + Send + 'static,
    ) -> Result<Self, Error> {
        let (jobs, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("seglog-raft-flush".to_owned())
            .spawn(move || run(&rx, |end| sync(&owner, end)))
            .map_err(|e| Error::io("spawn", "seglog-raft-flush thread", e))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues a job; gives it back when the thread is gone.
    pub(crate) fn send(&self, job: Job) -> Result<(), Job> {
        match &self.jobs {
            Some(jobs) => jobs.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            // A panic of the thread has been reported by the panic hook already.
            let _ = thread.join();
        }
    }
}

fn run(rx: &Receiver<Job>, sync: impl Fn(i64) -> Result<(), String>) {
    let mut batch = Vec::new();
    while let Ok(first) = rx.recv() {
        batch.push(first);
        batch.extend(rx.try_iter());
        let end_offset = batch
            .iter()
            .filter_map(|job| match job {
                Job::Flush { end_offset, .. } => Some(*end_offset),
                Job::Barrier(_) => None,
            })
            .max();
        let result = match end_offset {
            Some(end) => sync(end),
            None => Ok(()),
        };
        for job in batch.drain(..) {
            match job {
                Job::Flush { done, .. } => done(
                    result
                        .clone()
                        .map_err(|e| std::io::Error::other(format!("seglog-raft flush: {e}"))),
                ),
                Job::Barrier(reply) => {
                    // The store may have given up waiting (dropped); nothing to tell then.
                    let _ = reply.send(result.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::{Flusher, Job};

    /// A sync that takes 50 ms and records the end offsets it was asked for.
    fn slow_flusher(asked: Arc<Mutex<Vec<i64>>>) -> Flusher {
        Flusher::start(Arc::new(()), move |_: &(), end| {
            std::thread::sleep(Duration::from_millis(50));
            asked.lock().unwrap().push(end);
            Ok(())
        })
        .unwrap()
    }

    #[test]
    fn a_barrier_replies_only_after_the_callbacks_queued_before_it() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let flusher = slow_flusher(Arc::clone(&asked));
        let done = Arc::new(AtomicI64::new(0));
        for end in [3, 7] {
            let done = Arc::clone(&done);
            let job = Job::Flush {
                end_offset: end,
                done: Box::new(move |r| {
                    r.unwrap();
                    done.fetch_max(end, Ordering::AcqRel);
                }),
            };
            assert!(flusher.send(job).is_ok());
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        assert!(flusher.send(Job::Barrier(tx)).is_ok());
        rx.blocking_recv().unwrap().unwrap();
        assert_eq!(
            done.load(Ordering::Acquire),
            7,
            "the barrier overtook a callback"
        );
    }

    #[test]
    fn callbacks_queued_during_a_sync_share_the_next_one() {
        use std::sync::atomic::AtomicBool;
        let asked = Arc::new(Mutex::new(Vec::new()));
        let released = Arc::new(AtomicBool::new(false));
        // The first sync holds until every job is queued: whatever the scheduling, the jobs
        // queued meanwhile are all waiting when it ends.
        let (log, gate) = (Arc::clone(&asked), Arc::clone(&released));
        let flusher = Flusher::start(Arc::new(()), move |_: &(), end| {
            while !gate.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            log.lock().unwrap().push(end);
            Ok(())
        })
        .unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        for end in 1..=20 {
            let calls = Arc::clone(&calls);
            let job = Job::Flush {
                end_offset: end,
                done: Box::new(move |_| {
                    calls.fetch_add(1, Ordering::AcqRel);
                }),
            };
            assert!(flusher.send(job).is_ok());
        }
        released.store(true, Ordering::Release);
        drop(flusher); // waits for the thread to finish the queue
        assert_eq!(calls.load(Ordering::Acquire), 20);
        let asked = asked.lock().unwrap();
        // The first sync took what was queued when it started; everything queued during it
        // shares one more sync, for the highest end offset.
        assert!(
            asked.len() <= 2,
            "{} syncs for 20 callbacks: {asked:?}",
            asked.len()
        );
        assert_eq!(asked.last(), Some(&20));
    }

    #[test]
    fn a_failed_sync_fails_every_callback_it_covered() {
        let flusher =
            Flusher::start(Arc::new(()), |_: &(), _| Err("disk on fire".to_owned())).unwrap();
        let failures = Arc::new(AtomicUsize::new(0));
        for end in 1..=3 {
            let failures = Arc::clone(&failures);
            let job = Job::Flush {
                end_offset: end,
                done: Box::new(move |r| {
                    if r.is_err_and(|e| e.to_string().contains("disk on fire")) {
                        failures.fetch_add(1, Ordering::AcqRel);
                    }
                }),
            };
            assert!(flusher.send(job).is_ok());
        }
        drop(flusher);
        assert_eq!(failures.load(Ordering::Acquire), 3);
    }
}
