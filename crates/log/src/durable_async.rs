//! Async durable appends: futures that complete when offsets are durable through the group
//! commit, for any executor (no runtime dependency), without blocking the executor's thread.
//!
//! The fsync has to run on some thread, and an executor-agnostic future cannot borrow the
//! executor's blocking pool. So a log keeps one *sync thread* while async waiters are pending:
//! it is started by the first waiter that finds none running, runs [`Log::sync_to`] up to the
//! highest offset any waiter asked for (the same group commit as durable appenders and
//! `sync_to` callers, so they all share fsyncs), wakes every waiter, and exits as soon as a
//! round ends with no waiter left (it then holds no reference to the log). Waiters decide for
//! themselves when they are done: durable, poisoned, or their offsets removed by a truncation.
//! No wakeup is lost: a waiter registers under the lock before it checks again, and the thread
//! runs another round whenever a waiter registered during the last one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::append::{AppendInfo, Durability};
use crate::log::Log;
use crate::sync::lock;
use crate::{Error, Result};

impl Log {
    /// The async form of [`Log::sync_to`]: a future that completes once every offset below
    /// `end_offset` is durable, through the same group commit (it shares fsyncs with durable
    /// appends and `sync_to` callers). The fsync runs on the log's sync thread (started by the
    /// first waiter that finds none running, exiting once no waiter is left), never on the
    /// thread that polls. Owns an `Arc` of the log, so it is `'static` and
    /// can be spawned.
    ///
    /// # Errors
    /// As [`Log::sync_to`]: [`Error::OffsetOutOfRange`] when `end_offset` is above the log end
    /// offset (never appended, or removed by a truncation before it became durable);
    /// [`Error::Poisoned`] once a write or fsync failed; [`Error::Io`] if the sync thread
    /// cannot be started.
    pub fn sync_to_async(self: &Arc<Self>, end_offset: i64) -> SyncTo {
        SyncTo {
            log: Arc::clone(self),
            end_offset,
        }
    }

    /// The async form of [`Log::append_durable`]: appends now, on the calling thread, at
    /// [`Durability::PageCache`] (the `write` into the page cache, readable at once), and
    /// returns a future that completes with the [`AppendInfo`] once the append is durable
    /// ([`Log::sync_to_async`] of its end). A failed append completes the future with its error.
    ///
    /// What blocks the calling thread: the buffered `write` of the batches (and a roll's file
    /// creation), as every append; with `flush.messages` configured, an append that crosses it
    /// also flushes on the calling thread, as [`Log::append`] does. The fsync that makes it
    /// durable never does.
    ///
    /// # Errors
    /// The future's output: as [`Log::append`], then as [`Log::sync_to_async`].
    pub fn append_durable_async(self: &Arc<Self>, batches: &[u8]) -> AppendDurable {
        let appended = self.append_with(batches, Durability::PageCache);
        let sync = appended
            .as_ref()
            .ok()
            .map(|info| self.sync_to_async(info.last_offset.saturating_add(1)));
        AppendDurable {
            appended: Some(appended),
            sync,
        }
    }

    /// Registers `waker` for offsets below `end_offset` and makes sure the sync thread runs.
    fn register_async_sync(self: &Arc<Self>, end_offset: i64, waker: &Waker) -> Result<()> {
        let mut state = lock(&self.async_commit.state);
        state.wanted = state.wanted.max(end_offset);
        if !state.wakers.iter().any(|w| w.will_wake(waker)) {
            state.wakers.push(waker.clone());
        }
        if state.running {
            return Ok(());
        }
        let log = Arc::clone(self);
        std::thread::Builder::new()
            .name("seglog-sync".to_owned())
            .spawn(move || log.run_sync_thread())
            .map_err(|e| Error::io("start the sync thread of", &self.dir, e))?;
        state.running = true;
        Ok(())
    }

    /// The sync thread: rounds of group commit until a round ends with no waiter.
    fn run_sync_thread(self: Arc<Self>) {
        loop {
            let wanted = {
                let mut state = lock(&self.async_commit.state);
                if state.wakers.is_empty() {
                    state.running = false;
                    state.wanted = 0;
                    return;
                }
                state.wanted
            };
            // Never past the log end (a truncation may have lowered it): the waiters below it
            // are still served, and those above it see the truncation when they wake.
            let target = wanted.min(self.log_end_offset());
            // Its error is each waiter's to see (poison, a truncation); the thread goes on
            // only while waiters register again.
            let _ = self.sync_to(target);
            let wakers = std::mem::take(&mut lock(&self.async_commit.state).wakers);
            for waker in wakers {
                waker.wake();
            }
        }
    }

    /// Where an async wait for `end_offset` stands: `Some` when it is over.
    fn async_sync_outcome(&self, end_offset: i64) -> Option<Result<()>> {
        if self.read_only || self.durable_end_offset() >= end_offset {
            return Some(Ok(()));
        }
        if let Err(e) = self.check_poison() {
            return Some(Err(e));
        }
        let log_end_offset = self.log_end_offset();
        if end_offset > log_end_offset {
            return Some(Err(Error::OffsetOutOfRange {
                offset: end_offset.saturating_sub(1),
                log_start_offset: self.log_start_offset(),
                log_end_offset,
            }));
        }
        None
    }
}

/// The future of [`Log::sync_to_async`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct SyncTo {
    log: Arc<Log>,
    end_offset: i64,
}

impl Future for SyncTo {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if let Some(outcome) = self.log.async_sync_outcome(self.end_offset) {
            return Poll::Ready(outcome);
        }
        if let Err(e) = self.log.register_async_sync(self.end_offset, cx.waker()) {
            return Poll::Ready(Err(e));
        }
        // A round may have ended between the check and the registration: check again (the
        // registration stands either way; a spare wake is harmless).
        match self.log.async_sync_outcome(self.end_offset) {
            Some(outcome) => Poll::Ready(outcome),
            None => Poll::Pending,
        }
    }
}

/// The future of [`Log::append_durable_async`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct AppendDurable {
    /// The append's result until the future completes.
    appended: Option<Result<AppendInfo>>,
    /// The durability wait (`None` when the append failed).
    sync: Option<SyncTo>,
}

impl Future for AppendDurable {
    type Output = Result<AppendInfo>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<AppendInfo>> {
        let this = self.get_mut();
        if let Some(sync) = &mut this.sync {
            match Pin::new(sync).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => {
                    this.appended = None;
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(())) => {}
            }
        }
        match this.appended.take() {
            Some(result) => Poll::Ready(result),
            // Polled again after completion.
            None => Poll::Pending,
        }
    }
}
