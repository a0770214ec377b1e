//! The optional background thread: calls [`Log::tick`] (or [`crate::LogDir::tick`])
//! periodically. Nothing runs in the
//! background unless the user starts it, and nothing it meets is dropped: the errors of its
//! ticks are kept for the user ([`Ticker::failed_ticks`], [`Ticker::take_error`],
//! [`Ticker::stop`]).

use std::thread::JoinHandle;
use std::time::Duration;

use crate::log::Log;
use crate::sync::{Arc, Condvar, Mutex, lock, unpoison};
use crate::{Error, Result};

/// A running background ticker; dropping it (or [`Ticker::stop`]) stops and joins the thread.
#[derive(Debug)]
pub struct Ticker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What the thread and the handle share.
#[derive(Debug)]
struct Shared {
    stopped: Mutex<bool>,
    wake: Condvar,
    failures: Mutex<Failures>,
}

/// The errors of failed ticks.
#[derive(Debug, Default)]
struct Failures {
    /// Ticks that returned an error since the ticker started.
    count: u64,
    /// The first error not yet taken by the user (later ones are only counted: they are
    /// usually the same failure again, e.g. a requeued unlink, or its consequence, a
    /// poisoned log).
    first: Option<Error>,
}

impl Log {
    /// Starts a thread that calls [`Log::tick`] with the log's clock every `interval`.
    /// Errors of a tick are not fatal to the thread (a poisoned log keeps failing its flushes
    /// until reopened; retention and deletions are retried at the next tick); they are counted
    /// and the first one is kept until the user takes it ([`Ticker::take_error`]) or stops
    /// the ticker ([`Ticker::stop`] returns it).
    pub fn spawn_ticker(self: &std::sync::Arc<Self>, interval: Duration) -> Ticker {
        let log = std::sync::Arc::clone(self);
        Ticker::spawn(interval, move || log.tick(log.clock.now_ms()).map(drop))
    }
}

impl crate::LogDir {
    /// [`Log::spawn_ticker`] for a whole root: a thread that calls [`crate::LogDir::tick`] with
    /// the root's clock every `interval` (every partition's tick, due `-delete` directories,
    /// then the root checkpoints), with the same error handling.
    pub fn spawn_ticker(self: &std::sync::Arc<Self>, interval: Duration) -> Ticker {
        let dir = std::sync::Arc::clone(self);
        Ticker::spawn(interval, move || dir.tick(dir.clock_now_ms()).map(drop))
    }
}

impl Ticker {
    /// Starts the thread running `tick` every `interval`.
    fn spawn(interval: Duration, tick: impl Fn() -> Result<()> + Send + 'static) -> Self {
        let shared = Arc::new(Shared {
            stopped: Mutex::new(false),
            wake: Condvar::new(),
            failures: Mutex::new(Failures::default()),
        });
        let signal = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let mut stopped = lock(&signal.stopped);
            while !*stopped {
                let (guard, _) = unpoison(signal.wake.wait_timeout(stopped, interval));
                stopped = guard;
                if *stopped {
                    break;
                }
                drop(stopped);
                if let Err(e) = tick() {
                    let mut failures = lock(&signal.failures);
                    failures.count += 1;
                    failures.first.get_or_insert(e);
                }
                stopped = lock(&signal.stopped);
            }
        });
        Ticker {
            shared,
            thread: Some(thread),
        }
    }

    /// How many background ticks failed since the ticker started.
    pub fn failed_ticks(&self) -> u64 {
        lock(&self.shared.failures).count
    }

    /// The first error of a background tick since the last call (or since the start), if any;
    /// later errors until then are only counted in [`Ticker::failed_ticks`].
    pub fn take_error(&self) -> Option<Error> {
        lock(&self.shared.failures).first.take()
    }

    /// Stops the thread and waits for it.
    ///
    /// # Errors
    /// The first error of a background tick not yet taken with [`Ticker::take_error`].
    pub fn stop(mut self) -> Result<()> {
        self.shutdown();
        self.take_error().map_or(Ok(()), Err)
    }

    fn shutdown(&mut self) {
        *lock(&self.shared.stopped) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panicking tick is not propagated from Drop.
            let _ = thread.join();
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shutdown();
    }
}
