//! The optional background thread: calls [`Log::tick`] periodically. Nothing runs in the
//! background unless the user starts it.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::log::Log;

/// A running background ticker; dropping it (or [`Ticker::stop`]) stops and joins the thread.
#[derive(Debug)]
pub struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Log {
    /// Starts a thread that calls [`Log::tick`] with the log's clock every `interval`.
    /// Errors of a tick are not fatal to the thread (a poisoned log keeps failing its flushes
    /// until reopened; retention and deletions are retried at the next tick).
    pub fn spawn_ticker(self: &Arc<Self>, interval: Duration) -> Ticker {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let log = Arc::clone(self);
        let signal = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let (lock, wake) = &*signal;
            let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
            while !*stopped {
                let (guard, _) = wake
                    .wait_timeout(stopped, interval)
                    .unwrap_or_else(|p| p.into_inner());
                stopped = guard;
                if *stopped {
                    break;
                }
                drop(stopped);
                // Errors are reported by the next foreground call on the log.
                let _ = log.tick(log.clock.now_ms());
                stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
            }
        });
        Ticker {
            stop,
            thread: Some(thread),
        }
    }
}

impl Ticker {
    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
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
