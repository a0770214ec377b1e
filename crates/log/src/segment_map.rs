//! The segment map: base offset -> segment, ordered, with floor lookup (spec §5.1).
//!
//! Kafka uses a concurrent skip list. seglog publishes immutable snapshots instead: the writer
//! clones the map (a few dozen entries of `Arc`s) on a roll, delete or truncation and swaps the
//! whole snapshot in, so readers iterate a map that never changes under them (KAFKA-12955).

use std::collections::BTreeMap;

/// An ordered map of segments by base offset. The active segment is the last entry.
#[derive(Debug, Clone)]
pub(crate) struct SegmentMap<S> {
    by_base: BTreeMap<i64, S>,
}

impl<S> Default for SegmentMap<S> {
    fn default() -> Self {
        Self {
            by_base: BTreeMap::new(),
        }
    }
}

impl<S> SegmentMap<S> {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The map of `segments`, given in ascending base order (checked in debug builds), built
    /// in one pass with full nodes.
    pub(crate) fn from_sorted(segments: Vec<(i64, S)>) -> Self {
        debug_assert!(segments.windows(2).all(|w| w[0].0 < w[1].0));
        Self {
            by_base: segments.into_iter().collect(),
        }
    }

    /// Number of segments.
    pub(crate) fn len(&self) -> usize {
        self.by_base.len()
    }

    /// Whether there are no segments.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_base.is_empty()
    }

    /// Inserts (or replaces) the segment at `base_offset`.
    pub(crate) fn insert(&mut self, base_offset: i64, segment: S) -> Option<S> {
        self.by_base.insert(base_offset, segment)
    }

    /// Removes the segment at `base_offset`.
    pub(crate) fn remove(&mut self, base_offset: i64) -> Option<S> {
        self.by_base.remove(&base_offset)
    }

    /// The segment that would hold `offset`: the last one with base <= offset.
    pub(crate) fn floor(&self, offset: i64) -> Option<(i64, &S)> {
        self.by_base
            .range(..=offset)
            .next_back()
            .map(|(k, v)| (*k, v))
    }

    /// The first (oldest) segment.
    pub(crate) fn first(&self) -> Option<(i64, &S)> {
        self.by_base.iter().next().map(|(k, v)| (*k, v))
    }

    /// The last (active) segment.
    pub(crate) fn last(&self) -> Option<(i64, &S)> {
        self.by_base.iter().next_back().map(|(k, v)| (*k, v))
    }

    /// All segments, oldest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (i64, &S)> {
        self.by_base.iter().map(|(k, v)| (*k, v))
    }

    /// Kafka's `values(from, to)`: segments from `floor(from)` (or the first one when there is
    /// no floor) up to base `to`, exclusive. `from == to` is empty; `to < from` is empty too
    /// (Kafka throws; every caller here passes `from <= to`).
    pub(crate) fn range(&self, from: i64, to: i64) -> impl Iterator<Item = (i64, &S)> {
        let start = if from >= to {
            to
        } else {
            self.floor(from).map_or(i64::MIN, |(k, _)| k)
        };
        self.by_base.range(start..to).map(|(k, v)| (*k, v))
    }

    /// Segments from `floor(from)` (or the first) to the end.
    pub(crate) fn starting_at_floor(&self, from: i64) -> impl Iterator<Item = (i64, &S)> {
        let start = self.floor(from).map_or(i64::MIN, |(k, _)| k);
        self.by_base.range(start..).map(|(k, v)| (*k, v))
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map(bases: &[i64]) -> SegmentMap<i64> {
        let mut m = SegmentMap::new();
        for &b in bases {
            m.insert(b, b);
        }
        m
    }

    #[test]
    fn from_sorted_is_the_map_of_its_entries() {
        let bases: Vec<i64> = (0..1000).map(|i| i * 3 - 50).collect();
        let built = SegmentMap::from_sorted(bases.iter().map(|&b| (b, b)).collect());
        let inserted = map(&bases);
        assert_eq!(built.len(), inserted.len());
        assert!(built.iter().eq(inserted.iter()));
        assert_eq!(built.floor(100), inserted.floor(100));
    }

    #[test]
    fn kafka_values_semantics() {
        let m = map(&[0, 10, 20]);
        let r = |f, t| m.range(f, t).map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(r(5, 20), vec![0, 10]);
        assert_eq!(r(10, 20), vec![10]);
        assert_eq!(r(-5, 15), vec![0, 10]);
        assert_eq!(r(10, 10), Vec::<i64>::new());
        assert_eq!(r(25, i64::MAX), vec![20]);
        assert_eq!(
            m.starting_at_floor(12).map(|(k, _)| k).collect::<Vec<_>>(),
            vec![10, 20]
        );
    }

    proptest! {
        #[test]
        fn floor_matches_linear_scan(
            bases in proptest::collection::btree_set(-50i64..50, 0..12),
            target in -60i64..60,
        ) {
            let bases: Vec<i64> = bases.into_iter().collect();
            let m = map(&bases);
            let expected = bases.iter().copied().filter(|&b| b <= target).max();
            prop_assert_eq!(m.floor(target).map(|x| x.0), expected);
        }
    }
}
