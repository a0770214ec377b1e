//! The cleaner's offset map: key → the latest offset of that key in the dirty section (Kafka's
//! `SkimpyOffsetMap`).
//!
//! An open-addressing table of fixed capacity, allocated once per round and never grown: each
//! slot is a 128-bit hash of the key and an offset (24 bytes), probed linearly. As in Kafka the
//! key itself is not stored, so two keys with the same 128-bit hash would count as one (Kafka
//! hashes with MD5; seglog with two SipHash-1-3 runs under different prefixes — the same
//! width, and the hash never leaves the process). The cleaner stops adding keys once the map
//! holds `capacity × 0.9` of them (`log.cleaner.io.buffer.load.factor`): the round then ends
//! at the last offset the map covers.

use std::hash::{DefaultHasher, Hasher};

/// Bytes one slot takes: two 64-bit hash words and an offset.
pub(crate) const SLOT_BYTES: usize = 24;

/// Kafka's `log.cleaner.io.buffer.load.factor` (default 0.9): how full the map may get.
pub(crate) const LOAD_FACTOR: f64 = 0.9;

/// A 128-bit key hash.
pub(crate) type KeyHash = [u64; 2];

#[derive(Debug, Clone, Copy)]
struct Slot {
    hash: KeyHash,
    /// -1: empty.
    offset: i64,
}

const EMPTY: Slot = Slot {
    hash: [0, 0],
    offset: -1,
};

/// Key hash → latest offset, of bounded memory.
#[derive(Debug)]
pub(crate) struct OffsetMap {
    slots: Vec<Slot>,
    entries: usize,
    /// The largest offset the map covers (Kafka's `latestOffset`): -1 when empty.
    latest_offset: i64,
    /// `floor(slots × LOAD_FACTOR)`: `put` refuses new keys beyond it.
    max_entries: usize,
}

/// The hash of a key, as the map stores it.
pub(crate) fn hash_key(key: &[u8]) -> KeyHash {
    let word = |prefix: u8| {
        let mut hasher = DefaultHasher::new();
        hasher.write_u8(prefix);
        hasher.write(key);
        hasher.finish()
    };
    [word(0x5b), word(0xa7)]
}

impl OffsetMap {
    /// A map of at most `buffer_bytes / 24` slots, and only as many as `expected_keys` keys
    /// need at the load factor (the memory is bounded by both).
    pub(crate) fn new(buffer_bytes: i64, expected_keys: u64) -> Self {
        let max_slots = usize::try_from(buffer_bytes.max(0)).unwrap_or(usize::MAX) / SLOT_BYTES;
        let wanted = (expected_keys as f64 / LOAD_FACTOR).ceil() as u64 + 2;
        let slots = max_slots
            .min(usize::try_from(wanted).unwrap_or(usize::MAX))
            .max(2);
        let max_entries = ((max_slots.max(2) as f64) * LOAD_FACTOR) as usize;
        Self {
            slots: vec![EMPTY; slots],
            entries: 0,
            latest_offset: -1,
            // Never more than the table holds (the expected count was an upper bound, so
            // this only bites when the buffer is the limit).
            max_entries: max_entries.min(slots - 1).max(1),
        }
    }

    fn position(&self, hash: &KeyHash) -> usize {
        (hash[0] % self.slots.len() as u64) as usize
    }

    /// Whether a new key would exceed the load factor (Kafka's `map.size < maxDesiredMapSize`
    /// check before every put).
    pub(crate) fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }

    /// Records `offset` as the latest offset of the key hashed to `hash` (offsets arrive in
    /// increasing order, so a later put wins). Returns false, changing nothing, when the key
    /// is new and the map is full.
    pub(crate) fn put(&mut self, hash: KeyHash, offset: i64) -> bool {
        let mut i = self.position(&hash);
        loop {
            let slot = &mut self.slots[i];
            if slot.offset < 0 {
                if self.entries >= self.max_entries {
                    return false;
                }
                *slot = Slot { hash, offset };
                self.entries += 1;
                break;
            }
            if slot.hash == hash {
                slot.offset = offset;
                break;
            }
            i = (i + 1) % self.slots.len();
        }
        self.latest_offset = self.latest_offset.max(offset);
        true
    }

    /// The latest offset of the key hashed to `hash`, or -1 when the map does not hold it
    /// (Kafka's `get`).
    pub(crate) fn get(&self, hash: &KeyHash) -> i64 {
        let mut i = self.position(hash);
        loop {
            let slot = &self.slots[i];
            if slot.offset < 0 {
                return -1;
            }
            if slot.hash == *hash {
                return slot.offset;
            }
            i = (i + 1) % self.slots.len();
        }
    }

    /// Raises the offset the map covers (Kafka's `updateLatestOffset`: the last offset of
    /// every batch read, and the end of every segment read whole).
    pub(crate) fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = self.latest_offset.max(offset);
    }

    /// The largest offset the map covers: records above it are newer than anything mapped.
    pub(crate) fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.entries
    }

    /// Bytes the table takes.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.len() * SLOT_BYTES
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn slots_are_24_bytes_and_memory_is_bounded_by_the_buffer() {
        assert_eq!(std::mem::size_of::<Slot>(), SLOT_BYTES);
        let map = OffsetMap::new(24 * 1000, 1_000_000);
        assert_eq!(map.memory_bytes(), 24 * 1000);
        let map = OffsetMap::new(24 * 1000, 10);
        assert!(map.memory_bytes() < 24 * 20);
    }

    #[test]
    fn a_full_map_refuses_new_keys_but_updates_known_ones() {
        let mut map = OffsetMap::new(24 * 10, 1_000);
        let mut added = 0;
        for i in 0..100i64 {
            if map.put(hash_key(&i.to_be_bytes()), i) {
                added += 1;
            }
        }
        assert_eq!(added, 9, "90% of 10 slots");
        assert!(map.is_full());
        assert!(map.put(hash_key(&3i64.to_be_bytes()), 500));
        assert_eq!(map.get(&hash_key(&3i64.to_be_bytes())), 500);
        assert_eq!(map.get(&hash_key(&99i64.to_be_bytes())), -1);
        assert_eq!(map.latest_offset(), 500);
    }

    proptest! {
        #[test]
        fn agrees_with_a_hash_map(ops in proptest::collection::vec((0u8..40, 0i64..1000), 0..300)) {
            let mut map = OffsetMap::new(1 << 20, 64);
            let mut model = HashMap::new();
            for (offset, (key, _)) in ops.iter().enumerate() {
                let offset = offset as i64;
                if map.put(hash_key(&[*key]), offset) {
                    model.insert(*key, offset);
                }
            }
            for key in 0u8..40 {
                prop_assert_eq!(map.get(&hash_key(&[key])), model.get(&key).copied().unwrap_or(-1));
            }
            prop_assert_eq!(map.len(), model.len());
        }
    }
}
