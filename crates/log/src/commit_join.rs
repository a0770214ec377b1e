//! Who joins a group commit: the counters a group-commit leader reads before it syncs, so that
//! the durable appenders on their way land in its fsync instead of waiting for the next one
//! (Postgres' `commit_delay` with `commit_siblings`, sized from what the log saw).
//!
//! A durable append enters when it starts ([`CommitJoin::enter`]), is *in flight* until its
//! bytes are published, then *pending* until a sync starts, and a *caller* until it returns.
//! The leader waits ([`CommitJoin::wait_for_siblings`]), yielding the CPU, until no append is
//! in flight and as many are pending as there were callers when the last sync ended (the
//! appenders released by that sync come back with their next batch during the next one), or
//! until a quarter of the last sync's duration has passed (at most [`MAX_JOIN_WAIT`]). A lone
//! writer never waits; a writer that stopped costs at most one bounded wait, after which the
//! expected count follows what was seen. The wait only decides how many appends one fsync
//! covers, never which ones are acknowledged.

use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// The longest a leader waits for its siblings.
const MAX_JOIN_WAIT: Duration = Duration::from_millis(1);

/// The counters of one log.
#[derive(Debug)]
pub(crate) struct CommitJoin {
    /// Durable appends between their start and the publication of their bytes.
    in_flight: AtomicUsize,
    /// Durable appends from their start until they return.
    callers: AtomicUsize,
    /// Durable appends published since the last sync started.
    pending: AtomicUsize,
    /// `callers` when the last sync ended: how many appends a leader expects.
    siblings: AtomicUsize,
    /// How long the last sync took, in microseconds.
    last_sync_micros: AtomicU64,
}

impl Default for CommitJoin {
    fn default() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            callers: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            siblings: AtomicUsize::new(0),
            last_sync_micros: AtomicU64::new(0),
        }
    }
}

impl CommitJoin {
    /// Counts a durable append from its start until the returned guard drops.
    pub(crate) fn enter(&self) -> DurableAppend<'_> {
        self.callers.fetch_add(1, Ordering::AcqRel);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        DurableAppend {
            join: self,
            in_flight: true,
        }
    }

    /// Before a sync: waits (bounded) for the siblings, then hands the pending appends to it.
    /// Returns how many pending appends it handed over.
    pub(crate) fn wait_for_siblings(&self) -> usize {
        let expected = self.siblings.load(Ordering::Relaxed);
        let budget = Duration::from_micros(self.last_sync_micros.load(Ordering::Relaxed) / 4)
            .min(MAX_JOIN_WAIT);
        let start = Instant::now();
        loop {
            let joined = self.in_flight.load(Ordering::Acquire) == 0
                && self.pending.load(Ordering::Acquire) >= expected;
            if joined || start.elapsed() >= budget {
                break;
            }
            std::thread::yield_now();
        }
        self.pending.swap(0, Ordering::AcqRel)
    }

    /// After a successful sync that took `took`: sizes the next wait.
    pub(crate) fn sync_done(&self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.last_sync_micros.store(micros, Ordering::Relaxed);
        self.siblings
            .store(self.callers.load(Ordering::Acquire), Ordering::Relaxed);
    }
}

/// One durable append, counted in its log's [`CommitJoin`] until dropped.
#[derive(Debug)]
pub(crate) struct DurableAppend<'a> {
    join: &'a CommitJoin,
    in_flight: bool,
}

impl DurableAppend<'_> {
    /// The append's bytes are published: it is pending now, no longer in flight (counted
    /// pending first, so a leader that sees nothing in flight sees it pending).
    pub(crate) fn published(&mut self) {
        if std::mem::take(&mut self.in_flight) {
            self.join.pending.fetch_add(1, Ordering::AcqRel);
            self.join.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for DurableAppend<'_> {
    fn drop(&mut self) {
        if self.in_flight {
            // Failed before publishing: it never becomes pending.
            self.join.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        self.join.callers.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn a_lone_writer_never_waits_and_its_append_goes_to_the_sync() {
        let join = CommitJoin::default();
        let mut append = join.enter();
        append.published();
        join.sync_done(Duration::from_millis(200));
        // The last sync ended with one caller inside: one pending append is the whole group.
        let start = Instant::now();
        join.wait_for_siblings();
        assert!(start.elapsed() < Duration::from_millis(20));
        assert_eq!(join.pending.load(Ordering::Acquire), 0);
        drop(append);
        assert_eq!(join.callers.load(Ordering::Acquire), 0);
        assert_eq!(join.in_flight.load(Ordering::Acquire), 0);
    }

    #[test]
    fn missing_siblings_cost_a_bounded_wait_and_failed_appends_never_count_as_pending() {
        let join = CommitJoin::default();
        let (mut a, b) = (join.enter(), join.enter());
        a.published();
        // Two callers inside when the sync ends, a 400 us sync: the next leader expects two
        // pending appends and waits at most 100 us for the second.
        join.sync_done(Duration::from_micros(400));
        drop(b); // failed before publishing
        assert_eq!(join.in_flight.load(Ordering::Acquire), 0);
        let start = Instant::now();
        join.wait_for_siblings();
        let waited = start.elapsed();
        assert!(waited >= Duration::from_micros(100), "waited {waited:?}");
        assert!(waited < MAX_JOIN_WAIT * 50, "waited {waited:?}");
        drop(a);
        join.sync_done(Duration::from_micros(400));
        assert_eq!(join.siblings.load(Ordering::Acquire), 0);
    }
}
