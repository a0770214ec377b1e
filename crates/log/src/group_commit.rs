//! Group commit: callers that need their append on disk wait here, and one of them runs the
//! fsync for everybody appended so far.
//!
//! A waiter that finds no sync in progress becomes the leader: it runs `sync` (which fsyncs
//! everything up to the log end offset *read at the start of the sync*) outside the lock, then
//! publishes the offset that is now durable and wakes the others. Waiters whose offset was
//! covered return; the rest elect the next leader. So N concurrent durable appenders share
//! roughly two fdatasyncs instead of N. Waiters sleep on a condvar; nothing here holds the
//! log's writer lock, so appends (which make the next commit's batch) and readers go on
//! during the fsync.

use crate::Result;
use crate::sync::{Condvar, Mutex, lock, unpoison};

#[derive(Debug)]
struct State {
    /// Every offset below this is durable.
    durable_end_offset: i64,
    /// A leader is running a sync.
    syncing: bool,
    /// Bumped by every truncation ([`GroupCommit::reset`]): a sync that started before one
    /// may have covered offsets that are gone now, so its result is not applied.
    epoch: u64,
}

/// The coordinator of one log.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    done: Condvar,
}

impl GroupCommit {
    /// A coordinator for which offsets below `durable_end_offset` are already durable.
    pub(crate) fn new(durable_end_offset: i64) -> Self {
        Self {
            state: Mutex::new(State {
                durable_end_offset,
                syncing: false,
                epoch: 0,
            }),
            done: Condvar::new(),
        }
    }

    /// Every offset below the returned one is known durable.
    pub(crate) fn durable_end_offset(&self) -> i64 {
        lock(&self.state).durable_end_offset
    }

    /// Records that offsets below `end_offset` became durable by another path (a flush).
    pub(crate) fn mark_durable(&self, end_offset: i64) {
        let mut state = lock(&self.state);
        if end_offset > state.durable_end_offset {
            state.durable_end_offset = end_offset;
            self.done.notify_all();
        }
    }

    /// Lowers the durable mark (truncation below it: those offsets are gone) and discards the
    /// result of any sync in flight (it may have covered them).
    pub(crate) fn reset(&self, end_offset: i64) {
        let mut state = lock(&self.state);
        state.durable_end_offset = state.durable_end_offset.min(end_offset);
        state.epoch = state.epoch.wrapping_add(1);
    }

    /// Returns once every offset below `end_offset` is durable, running `sync` as the leader if
    /// no sync is in progress. `sync` returns the end offset it made durable (the log end
    /// offset it read when it started). Returns `false` when a sync this caller ran found the
    /// log ending below `end_offset`: a truncation removed the caller's offsets before they
    /// became durable.
    ///
    /// # Errors
    /// The error of `sync` when this caller ran it; waiters of a failed sync retry with their
    /// own `sync` (which fails fast once the log is poisoned).
    pub(crate) fn wait_durable(
        &self,
        end_offset: i64,
        mut sync: impl FnMut() -> Result<i64>,
    ) -> Result<bool> {
        let mut state = lock(&self.state);
        loop {
            if state.durable_end_offset >= end_offset {
                return Ok(true);
            }
            if state.syncing {
                state = unpoison(self.done.wait(state));
                continue;
            }
            state.syncing = true;
            let epoch = state.epoch;
            drop(state);
            let result = sync();
            state = lock(&self.state);
            state.syncing = false;
            self.done.notify_all();
            match result {
                Ok(synced) if state.epoch == epoch => {
                    state.durable_end_offset = state.durable_end_offset.max(synced);
                    if synced < end_offset {
                        return Ok(false);
                    }
                }
                // A truncation ran meanwhile: nothing is learnt; sync again.
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

    #[test]
    fn concurrent_waiters_share_syncs() {
        let commit = Arc::new(GroupCommit::new(0));
        let appended = Arc::new(AtomicI64::new(0));
        let syncs = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (commit, appended, syncs) = (
                    Arc::clone(&commit),
                    Arc::clone(&appended),
                    Arc::clone(&syncs),
                );
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let end = appended.fetch_add(1, Ordering::SeqCst) + 1;
                        commit
                            .wait_durable(end, || {
                                let target = appended.load(Ordering::SeqCst);
                                syncs.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                Ok(target)
                            })
                            .unwrap();
                        assert!(commit.durable_end_offset() >= end);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(commit.durable_end_offset(), 400);
        assert!(syncs.load(Ordering::SeqCst) <= 400);
    }

    #[test]
    fn failed_sync_reports_and_mark_durable_short_circuits() {
        let commit = GroupCommit::new(0);
        let err = commit.wait_durable(5, || Err(crate::Error::Closed { dir: "x".into() }));
        assert!(err.is_err());
        commit.mark_durable(5);
        commit.wait_durable(5, || panic!("no sync needed")).unwrap();
        commit.reset(3);
        assert_eq!(commit.durable_end_offset(), 3);
    }

    #[test]
    fn a_truncation_during_a_sync_discards_its_result() {
        let commit = GroupCommit::new(0);
        // The sync read end offset 10, then a truncation to 4 ran before it finished: 10 must
        // not become durable. The next sync (end 4) tells the waiter its offsets are gone.
        let mut first = true;
        let kept = commit
            .wait_durable(10, || {
                if std::mem::take(&mut first) {
                    commit.reset(4);
                    Ok(10)
                } else {
                    Ok(4)
                }
            })
            .unwrap();
        assert!(!kept);
        assert_eq!(commit.durable_end_offset(), 4);
    }
}
