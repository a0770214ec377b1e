//! [`IndexCache`]: a bounded in-memory cache of remote segments' indexes (and the tier's
//! segment list), so a read below the local log start costs one ranged `.log` fetch once the
//! segment's offset index is cached.
//!
//! Bounded in bytes and evicted least recently used first. Behind it, the on-disk cache
//! (`disk_cache.rs`, Kafka's `RemoteIndexCache` in the partition directory) keeps the same
//! indexes across a restart.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{RemoteIndexKind, RemoteSegmentId};

/// The default bound of a log's index cache: 16 MiB (Kafka's `remote.log.index.file.cache.total.size.bytes`
/// defaults to 1 GiB for a whole broker; one log needs far less).
pub const DEFAULT_INDEX_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// One cached index: its segment and kind, and its bytes.
type Entry = ((RemoteSegmentId, RemoteIndexKind), Arc<Vec<u8>>);

/// Cached indexes, most recently used last, with their total size.
#[derive(Debug)]
pub(crate) struct IndexCache {
    entries: VecDeque<Entry>,
    bytes: usize,
    capacity_bytes: usize,
}

impl IndexCache {
    /// An empty cache holding at most `capacity_bytes` of indexes.
    pub(crate) fn new(capacity_bytes: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            bytes: 0,
            capacity_bytes,
        }
    }

    /// The cached index, marked most recently used.
    pub(crate) fn get(
        &mut self,
        id: RemoteSegmentId,
        kind: RemoteIndexKind,
    ) -> Option<Arc<Vec<u8>>> {
        let i = self
            .entries
            .iter()
            .position(|(key, _)| *key == (id, kind))?;
        let entry = self.entries.remove(i)?;
        let bytes = Arc::clone(&entry.1);
        self.entries.push_back(entry);
        Some(bytes)
    }

    /// Caches `bytes` (when it fits at all), evicting the least recently used entries.
    pub(crate) fn insert(
        &mut self,
        id: RemoteSegmentId,
        kind: RemoteIndexKind,
        bytes: Arc<Vec<u8>>,
    ) {
        if bytes.len() > self.capacity_bytes {
            return;
        }
        if let Some(i) = self.entries.iter().position(|(key, _)| *key == (id, kind))
            && let Some((_, old)) = self.entries.remove(i)
        {
            self.bytes -= old.len();
        }
        while self.bytes + bytes.len() > self.capacity_bytes {
            match self.entries.pop_front() {
                Some((_, old)) => self.bytes -= old.len(),
                None => break,
            }
        }
        self.bytes += bytes.len();
        self.entries.push_back(((id, kind), bytes));
    }

    /// Bytes cached (for the unit test).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn id(n: u8) -> RemoteSegmentId {
        RemoteSegmentId::from_bytes([n; 16])
    }

    #[test]
    fn the_cache_stays_within_its_bound_and_evicts_the_least_recently_used() {
        let mut cache = IndexCache::new(100);
        let k = RemoteIndexKind::Offset;
        cache.insert(id(1), k, Arc::new(vec![0; 40]));
        cache.insert(id(2), k, Arc::new(vec![0; 40]));
        assert!(cache.get(id(1), k).is_some());
        cache.insert(id(3), k, Arc::new(vec![0; 40]));
        // 2 was the least recently used.
        assert!(cache.get(id(2), k).is_none());
        assert!(cache.get(id(1), k).is_some() && cache.get(id(3), k).is_some());
        assert!(cache.bytes() <= 100);
        // Too large to cache at all: nothing evicted for it.
        cache.insert(id(4), k, Arc::new(vec![0; 101]));
        assert_eq!(cache.bytes(), 80);
        // Replacing an entry does not count it twice.
        cache.insert(id(1), k, Arc::new(vec![0; 10]));
        assert_eq!(cache.bytes(), 50);
    }
}
