//! [`SegmentCache`]: a bound on the segments whose files are open (one `.log` descriptor and
//! two index maps each), shared by every segment opened with it.
//!
//! A [`crate::Segment`] keeps its metadata (base offset, published size, max timestamp, names) in
//! memory at all times, and its files in a slot that is filled on first use and emptied when
//! the cache evicts it. A reader takes an `Arc` of the open files for the duration of one
//! call (a lookup, a header walk) and a [`crate::FileSlice`] holds its own `Arc<File>`, so an
//! eviction only drops the cache's (the slot's) reference: the descriptor and the maps are
//! released when the last reader is done, never under a reader.
//!
//! Replacement is CLOCK (second chance): every access sets the segment's `referenced` bit with
//! one relaxed store; admitting a segment over capacity sweeps the ring from its oldest entry,
//! clearing set bits and evicting the first segment found clear. A segment with a writer
//! attached (the active segment, a recovery or close in progress) is never evicted and not
//! counted: a sweep drops it from the ring, and a segment whose writer detaches (a sealed segment) is
//! admitted again. So the open files are bounded by the capacity plus the active segments.
//!
//! Eviction trims the indexes of a read-write segment to their entries first (a no-op for a
//! sealed segment, whose indexes were trimmed when it was sealed), so the file length says how
//! many entries a reopen finds. Indexes rebuilt in memory by a read-only open hold no
//! descriptor: an eviction closes only that segment's `.log`, and the reopen uses them again.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use crate::sync::{Mutex, MutexGuard, lock};

/// What the cache needs of what it bounds (a [`crate::Segment`], which implements it): the
/// cache never names the segment type, so the two modules do not depend on each other.
pub(crate) trait Evictable: Send + Sync {
    /// Whether its files are open now.
    fn is_open(&self) -> bool;
    /// Marks it as in the ring; `false` if it already was.
    fn enter_ring(&self) -> bool;
    /// Marks it as out of the ring.
    fn leave_ring(&self);
    /// Whether its files may be closed (no writer attached).
    fn evictable(&self) -> bool;
    /// Closes its files if no reader needs them now; whether it did.
    fn try_evict(&self) -> bool;
    /// Takes (clears) its referenced bit: the clock algorithm's second chance.
    fn take_referenced(&self) -> bool;
}

/// The default number of segments a cache keeps open.
pub const DEFAULT_SEGMENT_CACHE_CAPACITY: usize = 256;

/// Bounds the segments whose files are open. Cloning shares the cache (a handle). Compared by
/// identity.
#[derive(Clone)]
pub struct SegmentCache {
    inner: Arc<Inner>,
}

struct Inner {
    capacity: usize,
    /// Segments whose files were opened through this cache, oldest admission first. Entries
    /// of dropped or already closed segments are discarded by the next sweep.
    ring: Mutex<VecDeque<Weak<dyn Evictable>>>,
}

impl SegmentCache {
    /// A cache keeping at most `capacity` segments open (at least 1), not counting segments
    /// that cannot be evicted: one with a writer attached (the active segment, a recovery or
    /// close in progress) or whose indexes live only in memory (rebuilt by a read-only open).
    /// Eviction is CLOCK (second chance) and never closes files under a reader: a reader holds
    /// its own reference to the open files until it is done.
    pub fn new(capacity: usize) -> SegmentCache {
        SegmentCache {
            inner: Arc::new(Inner {
                capacity: capacity.max(1),
                ring: Mutex::new(VecDeque::new()),
            }),
        }
    }

    /// The capacity the cache was created with.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Evictable segments whose files are open right now (live entries of the ring; active
    /// segments are not counted).
    pub fn open_segments(&self) -> usize {
        self.ring()
            .iter()
            .filter(|weak| weak.upgrade().is_some_and(|s| s.is_open()))
            .count()
    }

    /// Closes the files of every segment that can be evicted now (readers keep what they
    /// hold). Returns how many were closed.
    pub fn evict_all(&self) -> usize {
        let mut ring = self.ring();
        let mut evicted = 0;
        ring.retain(|weak| match weak.upgrade() {
            Some(segment) if segment.is_open() && segment.try_evict() => {
                evicted += 1;
                segment.leave_ring();
                false
            }
            Some(segment) if segment.is_open() && segment.evictable() => true,
            Some(segment) => {
                segment.leave_ring();
                false
            }
            None => false,
        });
        evicted
    }

    /// Records that `segment`'s files are open and may be evicted, then evicts others while
    /// more than `capacity` are in the ring. Called by the segment (holding no lock of its
    /// own) after it opened its files or when its writer detached; a segment already in the
    /// ring is not added twice.
    pub(crate) fn admit<T: Evictable + 'static>(&self, segment: &Arc<T>) {
        let mut ring = self.ring();
        if !segment.enter_ring() {
            return;
        }
        let weak: Weak<T> = Arc::downgrade(segment);
        let weak: Weak<dyn Evictable> = weak;
        ring.push_back(weak);
        let capacity = self.inner.capacity;
        // Each entry is looked at most twice (once to clear its bit, once to evict it), so
        // the sweep ends.
        let mut budget = ring.len().saturating_mul(2);
        while ring.len() > capacity && budget > 0 {
            budget -= 1;
            let Some(weak) = ring.pop_front() else { break };
            let Some(candidate) = weak.upgrade() else {
                continue;
            };
            if !candidate.is_open() || !candidate.evictable() {
                // Closed already, or a writer is attached (re-admitted when it detaches): not
                // counted.
                candidate.leave_ring();
                continue;
            }
            let is_new = std::ptr::addr_eq(Arc::as_ptr(&candidate), Arc::as_ptr(segment));
            if is_new || candidate.take_referenced() {
                ring.push_back(weak);
                continue;
            }
            if candidate.try_evict() {
                candidate.leave_ring();
            } else {
                ring.push_back(weak);
            }
        }
    }

    fn ring(&self) -> MutexGuard<'_, VecDeque<Weak<dyn Evictable>>> {
        // The ring only holds weak references: always consistent.
        lock(&self.inner.ring)
    }
}

impl std::fmt::Debug for SegmentCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentCache")
            .field("capacity", &self.inner.capacity)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SegmentCache {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for SegmentCache {}
