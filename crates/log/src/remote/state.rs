//! [`RemoteState`]: what a [`crate::Log`] keeps about its remote tier.

use super::{
    DiskIndexCache, IndexCache, LineageSegment, Pins, RemoteSegment, RemoteTier, SealSubscribers,
};
use crate::sync::{AtomicI64, Mutex, Ordering, RwLock, read, write};
use std::sync::Arc;

/// Kafka's "no offset in remote storage yet" (`highestOffsetInRemoteStorage` starts at -1).
pub(crate) const NO_REMOTE_OFFSET: i64 = -1;

/// A log's remote-tier state: the attached tier, the highest offset copied, the log start
/// offset of the whole log (KIP-1005: the local log start is the published view's), and the
/// segments pinned by copies.
#[derive(Debug)]
pub(crate) struct RemoteState {
    tier: RwLock<Option<Arc<dyn RemoteTier>>>,
    /// Kafka's `highestOffsetInRemoteStorage`: -1 until a copy finished.
    highest_offset: AtomicI64,
    /// The log start offset of the whole log while a tier is attached (at or below the local
    /// log start offset); `i64::MIN` when the log has no remote part.
    log_start_offset: AtomicI64,
    pub(crate) pins: Pins,
    /// The remote segments' indexes, bounded (`cache.rs`).
    pub(crate) indexes: Mutex<IndexCache>,
    /// The same indexes on disk (`disk_cache.rs`), behind `indexes`; `None` before a tier is
    /// attached, for a read-only log, and when the cache directory cannot be opened.
    pub(crate) disk_indexes: Mutex<Option<DiskIndexCache>>,
    /// The tier's segment list as last fetched (refreshed when a read finds no segment).
    pub(crate) segments: Mutex<Option<Arc<Vec<RemoteSegment>>>>,
    /// The lineage chain of `segments` as last computed, with what it was computed from.
    pub(crate) chain: Mutex<Option<CachedChain>>,
    /// Who hears of sealed segments (`sealed.rs`).
    pub(crate) sealed: SealSubscribers,
}

/// A lineage chain and the segment list and epoch cache it was computed from.
#[derive(Debug)]
pub(crate) struct CachedChain {
    list: Arc<Vec<RemoteSegment>>,
    epochs: Vec<(i32, i64)>,
    chain: Arc<Vec<LineageSegment>>,
}

impl Default for RemoteState {
    fn default() -> Self {
        Self {
            tier: RwLock::new(None),
            highest_offset: AtomicI64::new(NO_REMOTE_OFFSET),
            log_start_offset: AtomicI64::new(i64::MIN),
            pins: Pins::default(),
            indexes: Mutex::new(IndexCache::new(super::DEFAULT_INDEX_CACHE_BYTES)),
            disk_indexes: Mutex::new(None),
            segments: Mutex::new(None),
            chain: Mutex::new(None),
            sealed: SealSubscribers::default(),
        }
    }
}

impl RemoteState {
    /// The attached tier.
    pub(crate) fn tier(&self) -> Option<Arc<dyn RemoteTier>> {
        read(&self.tier).clone()
    }

    /// Attaches (or with `None` detaches) the tier.
    pub(crate) fn set_tier(&self, tier: Option<Arc<dyn RemoteTier>>) {
        *write(&self.tier) = tier;
        self.forget_segments();
    }

    /// Kafka's `highestOffsetInRemoteStorage`.
    pub(crate) fn highest_offset(&self) -> i64 {
        self.highest_offset.load(Ordering::Acquire)
    }

    /// Raises the highest remote offset to `offset` (never lowers it: a copier reporting an
    /// older copy late changes nothing). Returns the value now held.
    pub(crate) fn raise_highest_offset(&self, offset: i64) -> i64 {
        self.forget_segments();
        self.highest_offset
            .fetch_max(offset, Ordering::AcqRel)
            .max(offset)
    }

    /// Lowers the highest remote offset to `offset` when it is above (a truncation: the log
    /// no longer holds what the tier holds there, and local retention must not take the
    /// offsets appended again for copied ones). The segment list is listed again next time.
    pub(crate) fn lower_highest_offset(&self, offset: i64) {
        self.highest_offset
            .fetch_min(offset.max(NO_REMOTE_OFFSET), Ordering::AcqRel);
        self.forget_segments();
    }

    /// Drops the cached segment list (a copy finished, remote expiry ran, a truncation).
    pub(crate) fn forget_segments(&self) {
        *crate::sync::lock(&self.segments) = None;
        *crate::sync::lock(&self.chain) = None;
    }

    /// The lineage chain of `list` under `epochs`: computed once per segment list and epoch
    /// cache (`lineage_chain` is a pure function of the two), not on every remote read.
    pub(crate) fn chain(
        &self,
        list: &Arc<Vec<RemoteSegment>>,
        epochs: Vec<(i32, i64)>,
    ) -> Arc<Vec<LineageSegment>> {
        let mut cached = crate::sync::lock(&self.chain);
        if let Some(c) = cached.as_ref()
            && Arc::ptr_eq(&c.list, list)
            && c.epochs == epochs
        {
            return Arc::clone(&c.chain);
        }
        let chain = Arc::new(super::lineage_chain(list, &epochs));
        *cached = Some(CachedChain {
            list: Arc::clone(list),
            epochs,
            chain: Arc::clone(&chain),
        });
        chain
    }

    /// Sets the highest remote offset (a follower rebuild).
    pub(crate) fn set_highest_offset(&self, offset: i64) {
        self.highest_offset.store(offset, Ordering::Release);
    }

    /// The whole log's start offset when it has a remote part, else `None`.
    pub(crate) fn log_start_offset(&self) -> Option<i64> {
        let value = self.log_start_offset.load(Ordering::Acquire);
        (value != i64::MIN).then_some(value)
    }

    /// Sets (`None`: clears) the whole log's start offset.
    pub(crate) fn set_log_start_offset(&self, offset: Option<i64>) {
        self.log_start_offset
            .store(offset.unwrap_or(i64::MIN), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::super::lineage::test_segment as segment;
    use super::*;

    #[test]
    fn the_chain_is_computed_once_per_segment_list_and_epoch_cache() {
        let state = RemoteState::default();
        // A former leader's copy (3) beside the lineage's (5), as in lineage.rs' tests.
        let list = Arc::new(vec![
            segment(1, 0, 19, &[(0, 0)]),
            segment(3, 20, 39, &[(0, 20)]),
            segment(5, 20, 34, &[(0, 20), (1, 25)]),
        ]);
        let epochs = vec![(0, 0), (1, 25)];
        let first = state.chain(&list, epochs.clone());
        assert!(Arc::ptr_eq(&first, &state.chain(&list, epochs.clone())));
        let ids = |chain: &[LineageSegment]| -> Vec<u8> {
            chain.iter().map(|s| s.segment.id.as_bytes()[0]).collect()
        };
        assert_eq!(ids(&first), [1, 5]);
        // Another epoch cache (here: the former leader's lineage) is another chain.
        let other = state.chain(&list, vec![(0, 0)]);
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(ids(&other), [1, 3]);
        // So is another list, even with equal contents (a list fetched again).
        let again = Arc::new(list.as_ref().clone());
        let relisted = state.chain(&again, epochs.clone());
        assert!(!Arc::ptr_eq(&first, &relisted));
        assert_eq!(ids(&relisted), [1, 5]);
        // Forgetting the list forgets the chain.
        state.forget_segments();
        assert!(crate::sync::lock(&state.chain).is_none());
    }
}
