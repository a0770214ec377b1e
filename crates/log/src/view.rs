//! What readers see: an immutable snapshot of the segment map and the published offsets,
//! swapped in whole by the single writer (`Published<LogView<S>>`).
//!
//! **Invariant:** every byte a snapshot lets a reader touch was written before the snapshot was
//! published: the writer appends to the active segment first and publishes the new log end
//! (segment base + byte position) after, and a roll publishes the new segment map together
//! with the end offset that points into it. Readers bound every segment read by the published
//! position, never by the file's current size, so they never see bytes past the published end.
//!
//! The view is generic over the segment handle so the loom models (`loom_*`) run this exact code
//! against a fake segment.

use crate::segment_map::SegmentMap;
use crate::sync::{Condvar, Mutex, RwLock, lock, read, unpoison, write};

/// A published snapshot (a loom `Arc` under `--cfg loom`).
pub(crate) type Snapshot<T> = crate::sync::Arc<T>;
use crate::{Error, Result};

/// Where an offset lives: the offset, the base of its segment and a byte position there
/// (Kafka's `LogOffsetMetadata`). For the log end, the position is the active segment's size;
/// for the high watermark it is the start of the batch holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetMetadata {
    /// The offset.
    pub offset: i64,
    /// Base offset of the segment that holds it.
    pub segment_base_offset: i64,
    /// Byte position in that segment.
    pub position: u64,
}

/// How far a read may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Up to the log end offset: a follower's (replica's) fetch, Kafka's `FetchIsolation.LOG_END`.
    LogEnd,
    /// Up to the high watermark: a consumer with Kafka's `isolation.level=read_uncommitted`
    /// (the consumer default; the broker's `FetchIsolation.HIGH_WATERMARK`). It sees the
    /// records of open and aborted transactions too.
    ReadUncommitted,
    /// Up to the last stable offset (`read_committed` consumers, Kafka's `TXN_COMMITTED`):
    /// `min(first unstable offset, high watermark)`. Reads with it also return the aborted
    /// transactions overlapping the fetched range ([`crate::FetchData::aborted_transactions`]).
    ReadCommitted,
}

impl Isolation {
    /// The name [`Isolation::ReadUncommitted`] had before it took Kafka's consumer name (reads
    /// up to the high watermark). Usable in expressions and patterns as before.
    #[deprecated(note = "renamed `Isolation::ReadUncommitted` (Kafka's read_uncommitted)")]
    #[allow(non_upper_case_globals)]
    pub const HighWatermark: Isolation = Isolation::ReadUncommitted;
}

/// The size of a segment as readers may use it.
pub(crate) trait SegmentSize {
    /// Bytes of the segment that are published (for a sealed segment: all of it).
    fn size_bytes(&self) -> u64;
}

/// The open and not yet replicated transactions of a view: `(first offset, marker offset or
/// i64::MAX)`, by first offset.
pub(crate) type UnstableTxns = std::sync::Arc<Vec<(i64, i64)>>;

/// One published state of the log.
#[derive(Debug)]
pub(crate) struct LogView<S> {
    pub(crate) segments: std::sync::Arc<SegmentMap<S>>,
    pub(crate) log_start_offset: i64,
    pub(crate) end: OffsetMetadata,
    pub(crate) high_watermark: OffsetMetadata,
    /// The open and not yet replicated transactions, `(first offset, marker offset or
    /// i64::MAX)` by first offset: what the last stable offset is computed from. The writer
    /// publishes it with the append that changed it (`log_producers.rs`).
    pub(crate) txns: UnstableTxns,
}

impl<S> Clone for LogView<S> {
    fn clone(&self) -> Self {
        Self {
            segments: std::sync::Arc::clone(&self.segments),
            log_start_offset: self.log_start_offset,
            end: self.end,
            high_watermark: self.high_watermark,
            txns: std::sync::Arc::clone(&self.txns),
        }
    }
}

impl<S> LogView<S> {
    /// Kafka's first unstable offset against this view's high watermark: the first offset of
    /// the earliest open transaction, or of a completed one whose marker is not below the
    /// high watermark, raised to the log start.
    pub(crate) fn first_unstable_offset(&self) -> Option<i64> {
        let high_watermark = self.high_watermark.offset;
        self.txns
            .iter()
            .find(|(_, last)| *last >= high_watermark)
            .map(|(first, _)| (*first).max(self.log_start_offset))
    }

    /// Kafka's `lastStableOffset`: the first unstable offset when it lies below the high
    /// watermark, else the high watermark.
    pub(crate) fn last_stable_offset(&self) -> i64 {
        match self.first_unstable_offset() {
            Some(first) if first < self.high_watermark.offset => first,
            _ => self.high_watermark.offset,
        }
    }

    /// The visible end for `isolation` (an offset).
    pub(crate) fn visible_end(&self, isolation: Isolation) -> i64 {
        match isolation {
            Isolation::LogEnd => self.end.offset,
            Isolation::ReadUncommitted => self.high_watermark.offset,
            Isolation::ReadCommitted => self.last_stable_offset(),
        }
    }

    /// The view after an append whose bytes are written: the log end moves to `end`.
    pub(crate) fn appended(&self, end: OffsetMetadata) -> Self {
        Self {
            end,
            ..self.clone()
        }
    }

    /// The view after a roll: the new map (holding the new active segment at `new_base`) and
    /// the log end pointing at its start, published together. A high watermark at the log end
    /// follows it into the new segment.
    pub(crate) fn rolled(&self, segments: std::sync::Arc<SegmentMap<S>>, new_base: i64) -> Self {
        let end = OffsetMetadata {
            offset: self.end.offset,
            segment_base_offset: new_base,
            position: 0,
        };
        let high_watermark = if self.high_watermark.offset >= self.end.offset {
            end
        } else {
            self.high_watermark
        };
        Self {
            segments,
            log_start_offset: self.log_start_offset,
            end,
            high_watermark,
            txns: std::sync::Arc::clone(&self.txns),
        }
    }

    /// The view after retention: the map without the deleted segments and the raised log
    /// start, published together.
    pub(crate) fn trimmed(
        &self,
        segments: std::sync::Arc<SegmentMap<S>>,
        log_start_offset: i64,
        high_watermark: OffsetMetadata,
    ) -> Self {
        Self {
            segments,
            log_start_offset,
            end: self.end,
            high_watermark,
            txns: std::sync::Arc::clone(&self.txns),
        }
    }
}

/// The segments a read visits, oldest first, each with the byte position it must not pass.
#[derive(Debug)]
pub(crate) struct ReadPlan<S> {
    pub(crate) steps: Vec<(S, u64)>,
    /// The bound the read used (LEO or HW).
    pub(crate) max_offset: OffsetMetadata,
}

impl<S: Clone + SegmentSize> LogView<S> {
    /// Plans `read(start_offset, isolation)` as Kafka's `UnifiedLog.read` / `LocalLog.read`:
    /// out of range below the log start or above the LEO; empty at or above the isolation
    /// bound; otherwise the segments from `floor(start)` up to the bound's segment.
    /// `committed` is the metadata of the last stable offset (for
    /// [`Isolation::ReadCommitted`]; the caller translates it, see `Log::read`).
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] naming the log start and end.
    pub(crate) fn plan_read(
        &self,
        start_offset: i64,
        isolation: Isolation,
        committed: Option<OffsetMetadata>,
    ) -> Result<ReadPlan<S>> {
        let out_of_range = || Error::OffsetOutOfRange {
            offset: start_offset,
            log_start_offset: self.log_start_offset,
            log_end_offset: self.end.offset,
        };
        if start_offset < self.log_start_offset || start_offset > self.end.offset {
            return Err(out_of_range());
        }
        let max_offset = match (isolation, committed) {
            (Isolation::LogEnd, _) => self.end,
            (Isolation::ReadCommitted, Some(committed)) => committed,
            (Isolation::ReadUncommitted | Isolation::ReadCommitted, _) => self.high_watermark,
        };
        let mut steps = Vec::new();
        if start_offset >= max_offset.offset {
            return Ok(ReadPlan { steps, max_offset });
        }
        if self.segments.floor(start_offset).is_none() {
            return Err(out_of_range());
        }
        for (base, segment) in self.segments.starting_at_floor(start_offset) {
            let bound = match base.cmp(&max_offset.segment_base_offset) {
                std::cmp::Ordering::Less => segment.size_bytes(),
                std::cmp::Ordering::Equal => max_offset.position,
                std::cmp::Ordering::Greater => break,
            };
            steps.push((segment.clone(), bound));
        }
        Ok(ReadPlan { steps, max_offset })
    }
}

/// A value readers load without waiting for the writer's I/O: the lock is held only to clone
/// or replace an `Arc`. Waiters ([`Published::wait_until`]) sleep on a condvar every publish
/// notifies: no timer, no polling.
#[derive(Debug)]
pub(crate) struct Published<T> {
    current: RwLock<Snapshot<T>>,
    /// The sleepers and the async waiters' wakers; waiters check their condition while
    /// holding it, and `publish` takes it (after replacing the snapshot) to decide whom to
    /// wake, so no wakeup is lost.
    waiters: Mutex<Waiters>,
    changed: Condvar,
}

/// What [`Published`]'s waiters share.
#[derive(Debug, Default)]
struct Waiters {
    /// Threads asleep on the condvar (a publish notifies only when there are some: a
    /// futex wake is a system call even with nobody waiting).
    sleepers: usize,
    /// Wakers of pending futures ([`Published::register_unless`]); taken by each publish.
    wakers: Vec<std::task::Waker>,
    /// [`Published::close`] ran: no publication will come, waiters stop waiting.
    closed: bool,
}

/// How a wait on a [`Published`] value ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// The condition holds.
    Done,
    /// The timeout passed first.
    TimedOut,
    /// The value was closed ([`Published::close`]) while the condition did not hold.
    Closed,
}

impl<T> Published<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            current: RwLock::new(Snapshot::new(value)),
            waiters: Mutex::new(Waiters::default()),
            changed: Condvar::new(),
        }
    }

    /// Waits until `done` holds for the current snapshot, `timeout` passed (`None`: no
    /// limit) or the value is closed; returns the last snapshot seen and which came first
    /// (`done` wins over a close). Woken only by [`Published::publish`] and
    /// [`Published::close`] (and the OS's spurious wakeups, after which it checks again).
    pub(crate) fn wait_until(
        &self,
        mut done: impl FnMut(&T) -> bool,
        timeout: Option<std::time::Duration>,
    ) -> (Snapshot<T>, WaitEnd) {
        let deadline = timeout.and_then(|t| std::time::Instant::now().checked_add(t));
        let mut guard = lock(&self.waiters);
        loop {
            let snapshot = self.load();
            if done(&snapshot) {
                return (snapshot, WaitEnd::Done);
            }
            if guard.closed {
                return (snapshot, WaitEnd::Closed);
            }
            let wait = match (timeout, deadline) {
                (None, _) | (Some(_), None) => None,
                (Some(_), Some(deadline)) => {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        return (snapshot, WaitEnd::TimedOut);
                    }
                    Some(deadline - now)
                }
            };
            // Counted while asleep, so that a publish without sleepers skips the notify.
            guard.sleepers += 1;
            guard = match wait {
                None => unpoison(self.changed.wait(guard)),
                Some(left) => unpoison(self.changed.wait_timeout(guard, left)).0,
            };
            guard.sleepers -= 1;
        }
    }

    /// The current snapshot.
    pub(crate) fn load(&self) -> Snapshot<T> {
        Snapshot::clone(&read(&self.current))
    }

    /// The async form of [`Published::wait_until`]: [`WaitEnd::Done`] when `done` holds for the
    /// current snapshot, [`WaitEnd::Closed`] when it does not and the value is closed;
    /// otherwise registers `waker`, which the next publish (or the close) wakes, and `None`.
    pub(crate) fn register_unless(
        &self,
        done: impl FnOnce(&T) -> bool,
        waker: &std::task::Waker,
    ) -> Option<WaitEnd> {
        let mut waiters = lock(&self.waiters);
        if done(&self.load()) {
            return Some(WaitEnd::Done);
        }
        if waiters.closed {
            return Some(WaitEnd::Closed);
        }
        if !waiters.wakers.iter().any(|w| w.will_wake(waker)) {
            waiters.wakers.push(waker.clone());
        }
        None
    }

    /// No publication will follow: wakes every waiter, and later waits whose condition does
    /// not hold end at once with [`WaitEnd::Closed`].
    pub(crate) fn close(&self) {
        let (wakers, sleepers) = {
            let mut waiters = lock(&self.waiters);
            waiters.closed = true;
            (std::mem::take(&mut waiters.wakers), waiters.sleepers)
        };
        if sleepers > 0 {
            self.changed.notify_all();
        }
        for waker in wakers {
            waker.wake();
        }
    }

    /// Replaces the snapshot. Only the writer (holding the log's writer lock) calls this, so a
    /// load-modify-publish sequence by the writer is never lost.
    pub(crate) fn publish(&self, value: T) {
        let value = Snapshot::new(value);
        *write(&self.current) = value;
        let (wakers, sleepers) = {
            let mut waiters = lock(&self.waiters);
            (std::mem::take(&mut waiters.wakers), waiters.sleepers)
        };
        if sleepers > 0 {
            self.changed.notify_all();
        }
        for waker in wakers {
            waker.wake();
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[derive(Clone, Debug)]
    struct Fake(u64);
    impl SegmentSize for Fake {
        fn size_bytes(&self) -> u64 {
            self.0
        }
    }

    fn meta(offset: i64, segment_base_offset: i64, position: u64) -> OffsetMetadata {
        OffsetMetadata {
            offset,
            segment_base_offset,
            position,
        }
    }

    fn view() -> LogView<Fake> {
        let mut map = SegmentMap::new();
        map.insert(0, Fake(1000));
        map.insert(10, Fake(2000));
        map.insert(20, Fake(3000));
        LogView {
            segments: std::sync::Arc::new(map),
            log_start_offset: 5,
            end: meta(30, 20, 2500),
            high_watermark: meta(15, 10, 700),
            txns: Default::default(),
        }
    }

    #[test]
    fn out_of_range_names_start_and_end() {
        let v = view();
        for offset in [4, 31] {
            match v.plan_read(offset, Isolation::LogEnd, None) {
                Err(Error::OffsetOutOfRange {
                    log_start_offset: 5,
                    log_end_offset: 30,
                    ..
                }) => {}
                other => panic!("{offset}: {other:?}"),
            }
        }
    }

    #[test]
    fn bounds_follow_isolation() {
        let v = view();
        let plan = v.plan_read(7, Isolation::LogEnd, None).unwrap();
        let bounds: Vec<u64> = plan.steps.iter().map(|s| s.1).collect();
        assert_eq!(bounds, vec![1000, 2000, 2500]);
        let plan = v.plan_read(7, Isolation::ReadUncommitted, None).unwrap();
        let bounds: Vec<u64> = plan.steps.iter().map(|s| s.1).collect();
        assert_eq!(bounds, vec![1000, 700]);
        assert!(
            v.plan_read(15, Isolation::ReadUncommitted, None)
                .unwrap()
                .steps
                .is_empty()
        );
        assert!(
            v.plan_read(22, Isolation::ReadUncommitted, None)
                .unwrap()
                .steps
                .is_empty()
        );
        assert!(
            v.plan_read(30, Isolation::LogEnd, None)
                .unwrap()
                .steps
                .is_empty()
        );
    }
}
