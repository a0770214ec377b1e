//! The search primitive over raw entry bytes: Kafka's `indexSlotRangeFor` with its warm/cold
//! split (spec §2.7).
//!
//! Results equal a plain binary search over the whole slice; only the set of pages touched
//! differs. Every lookup first probes slot `first_hot = max(0, entries - 1 - warm)` with
//! `warm = WARM_SECTION_BYTES / SIZE` (1024 `.index` entries, 682 `.timeindex` entries). A
//! target beyond it is searched only in the last ~8 KiB, so followers and consumers near the
//! head of the log keep touching the same few, cached pages (KAFKA-6432).
//!
//! Two deliberate differences from Kafka's loop, neither of which changes a result on an index
//! whose searched column is strictly increasing:
//! * Inside a section we run a branch-free "last slot where the predicate holds" loop instead of
//!   Kafka's loop with an early exit on equality. That is what makes a lookup as fast as
//!   `slice::partition_point`, and on columns with duplicates (the offset column of a time
//!   index may repeat) it returns the *last* equal slot for `floor` and the *first* for
//!   `ceiling`, where Kafka's early exit returns whichever equal slot it probes first.
//! * `ceiling` returns slot 0 when the target equals entry 0. Kafka's loop never probes its
//!   initial low slot, so for that target it returns slot 1 (or none on a one-entry index): a
//!   too-large, hence harmless, upper bound in `fetchUpperBoundOffset`. We return the true
//!   smallest upper bound.
//! * `floor` enters the warm section when `entry[first_hot] <= target` (Kafka: `<`). With
//!   distinct keys both return `first_hot` for an exact hit; with duplicates only `<=` finds the
//!   last equal slot.

use crate::entry::IndexEntry;

/// The newest part of an index that lookups search first, in bytes (Kafka's
/// `warmEntries() * entrySize()`: 8192).
pub const WARM_SECTION_BYTES: usize = 8192;

/// Which column of an entry a search compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Relative offset (`.index`) or timestamp (`.timeindex`).
    Key,
    /// Position (`.index`) or relative offset (`.timeindex`).
    Value,
}

/// The last slot whose `column` is `<= target` (Kafka's `LARGEST_LOWER_BOUND`), or `None` when
/// the index is empty or every entry is above `target`.
///
/// `bytes` holds whole entries (a trailing partial entry is ignored) sorted by `column`.
/// Compares the stored column as an `i64`: for relative offsets pass `target - base_offset`.
#[must_use]
#[inline]
pub fn floor_slot<E: IndexEntry>(bytes: &[u8], column: Column, target: i64) -> Option<usize> {
    let raw = E::raw_entries(bytes);
    let warm = warm_entries::<E>();
    match column {
        Column::Key => floor_by(raw, warm, target, |r| E::from_raw(r).key()),
        Column::Value => floor_by(raw, warm, target, |r| E::from_raw(r).value()),
    }
}

/// The first slot whose `column` is `>= target` (Kafka's `SMALLEST_UPPER_BOUND`), or `None` when
/// the index is empty or every entry is below `target`.
///
/// Same input rules as [`floor_slot`].
#[must_use]
#[inline]
pub fn ceiling_slot<E: IndexEntry>(bytes: &[u8], column: Column, target: i64) -> Option<usize> {
    let raw = E::raw_entries(bytes);
    let warm = warm_entries::<E>();
    match column {
        Column::Key => ceiling_by(raw, warm, target, |r| E::from_raw(r).key()),
        Column::Value => ceiling_by(raw, warm, target, |r| E::from_raw(r).value()),
    }
}

/// Kafka's name for [`floor_slot`].
#[must_use]
pub fn largest_lower_bound<E: IndexEntry>(
    bytes: &[u8],
    column: Column,
    target: i64,
) -> Option<usize> {
    floor_slot::<E>(bytes, column, target)
}

/// Kafka's name for [`ceiling_slot`].
#[must_use]
pub fn smallest_upper_bound<E: IndexEntry>(
    bytes: &[u8],
    column: Column,
    target: i64,
) -> Option<usize> {
    ceiling_slot::<E>(bytes, column, target)
}

/// Entries in the warm section: `8192 / SIZE` (integer division, as Kafka).
fn warm_entries<E: IndexEntry>() -> usize {
    WARM_SECTION_BYTES / E::SIZE
}

#[inline]
fn floor_by<R>(raw: &[R], warm: usize, target: i64, key: impl Fn(&R) -> i64) -> Option<usize> {
    let first_hot = raw.len().checked_sub(1)?.saturating_sub(warm);
    let (start, section) = if key(&raw[first_hot]) <= target {
        (first_hot, &raw[first_hot..])
    } else if key(&raw[0]) <= target {
        (0, &raw[..=first_hot])
    } else {
        return None;
    };
    Some(start + last_where(section, |r| key(r) <= target))
}

#[inline]
fn ceiling_by<R>(raw: &[R], warm: usize, target: i64, key: impl Fn(&R) -> i64) -> Option<usize> {
    let first_hot = raw.len().checked_sub(1)?.saturating_sub(warm);
    let (start, section) = if key(&raw[first_hot]) < target {
        (first_hot, &raw[first_hot..])
    } else if key(&raw[0]) < target {
        // key(0) < target <= key(first_hot): the answer is in 1..=first_hot.
        (0, &raw[..=first_hot])
    } else {
        return Some(0);
    };
    let below = start + last_where(section, |r| key(r) < target);
    (below + 1 < raw.len()).then_some(below + 1)
}

/// The index of the last element of `range` for which `holds` is true, given that it holds for
/// `range[0]` and on a prefix of `range`. Branch-free halving (the shape of std's
/// `partition_point`): the loop runs `ceil(log2(len))` times whatever the data, every index is
/// provably in bounds (no bounds checks), and only the start of the remaining range moves (one
/// conditional move per step).
///
/// While the remaining range is long, each step also prefetches both elements the next step may
/// probe. On an index larger than the caches, every probe below the first few levels misses,
/// and a branch-free search is one chain of dependent loads: without the prefetch each step
/// waits for the previous one's miss; with it, the line the next step reads (one of the two) is
/// already on its way, which halved the time of the bench's 1M-entry lookups
/// (docs/performance.md, "Floor lookup"). The last steps, within a few cache lines, skip it.
/// The prefetches change no result and touch only lines of `range`.
#[inline]
fn last_where<R>(range: &[R], holds: impl Fn(&R) -> bool) -> usize {
    let mut rest = range;
    while rest.len() > PREFETCH_ABOVE {
        let half = rest.len() / 2;
        // The next step keeps `len - half` elements starting at 0 or at `half`, and probes the
        // middle of them.
        let next = (rest.len() - half) / 2;
        crate::mmap::prefetch(rest, next);
        crate::mmap::prefetch(rest, half + next);
        rest = halve(rest, half, holds(&rest[half]));
    }
    while rest.len() > 1 {
        let half = rest.len() / 2;
        rest = halve(rest, half, holds(&rest[half]));
    }
    (rest.as_ptr().addr() - range.as_ptr().addr()) / size_of::<R>().max(1)
}

/// Ranges longer than this many entries prefetch the next probe (shorter ones span a few cache
/// lines, already fetched by the earlier steps).
const PREFETCH_ABOVE: usize = 16;

/// One halving step: the upper part from `half` if `right` (the predicate holds at `half`), the
/// lower one otherwise. Both keep `len - half` elements, so that the trip count does not depend
/// on the data; the lower one re-includes `rest[half]`, which is false and never chosen.
#[inline(always)]
fn halve<R>(rest: &[R], half: usize, right: bool) -> &[R] {
    std::hint::select_unpredictable(right, &rest[half..], &rest[..rest.len() - half])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{OffsetEntry, TimeEntry};

    fn offsets(keys: &[i32]) -> Vec<u8> {
        keys.iter()
            .enumerate()
            .flat_map(|(i, &k)| {
                OffsetEntry {
                    relative_offset: k,
                    position: i32::try_from(i).unwrap_or(0) * 10,
                }
                .encode()
            })
            .collect()
    }

    /// Kafka's `indexSlotRangeFor`, transcribed literally (spec §2.7), for distinct keys.
    fn kafka_slot(keys: &[i64], warm: usize, target: i64, largest_lower: bool) -> Option<usize> {
        let n = keys.len();
        if n == 0 {
            return None;
        }
        let search = |mut lo: usize, mut hi: usize| -> Option<usize> {
            while lo < hi {
                let mid = (lo + hi + 1) >> 1;
                if keys[mid] > target {
                    hi = mid - 1;
                } else if keys[mid] < target {
                    lo = mid;
                } else {
                    return Some(mid);
                }
            }
            if largest_lower {
                Some(lo)
            } else if lo == n - 1 {
                None
            } else {
                Some(lo + 1)
            }
        };
        let first_hot = n.saturating_sub(1 + warm);
        if keys[first_hot] < target {
            return search(first_hot, n - 1);
        }
        if keys[0] > target {
            return if largest_lower { None } else { Some(0) };
        }
        search(0, first_hot)
    }

    #[test]
    fn empty_and_single() {
        assert_eq!(floor_slot::<OffsetEntry>(&[], Column::Key, 5), None);
        assert_eq!(ceiling_slot::<OffsetEntry>(&[], Column::Key, 5), None);
        let one = offsets(&[7]);
        assert_eq!(floor_slot::<OffsetEntry>(&one, Column::Key, 6), None);
        assert_eq!(floor_slot::<OffsetEntry>(&one, Column::Key, 7), Some(0));
        assert_eq!(floor_slot::<OffsetEntry>(&one, Column::Key, 8), Some(0));
        assert_eq!(ceiling_slot::<OffsetEntry>(&one, Column::Key, 6), Some(0));
        assert_eq!(ceiling_slot::<OffsetEntry>(&one, Column::Key, 7), Some(0));
        assert_eq!(ceiling_slot::<OffsetEntry>(&one, Column::Key, 8), None);
    }

    #[test]
    fn matches_kafka_transcription_around_warm_boundary() {
        let warm = WARM_SECTION_BYTES / OffsetEntry::SIZE;
        for n in [
            0,
            1,
            2,
            3,
            warm - 1,
            warm,
            warm + 1,
            warm + 2,
            warm + 3,
            3 * warm,
        ] {
            let keys: Vec<i32> = (0..n)
                .map(|i| i32::try_from(i * 3 + 1).unwrap_or(0))
                .collect();
            let wide: Vec<i64> = keys.iter().map(|&k| i64::from(k)).collect();
            let bytes = offsets(&keys);
            let last = i64::try_from(n).unwrap_or(0) * 3 + 2;
            for target in -1..=last {
                assert_eq!(
                    floor_slot::<OffsetEntry>(&bytes, Column::Key, target),
                    kafka_slot(&wide, warm, target, true),
                    "floor n={n} target={target}"
                );
                let ceiling = ceiling_slot::<OffsetEntry>(&bytes, Column::Key, target);
                let kafka = kafka_slot(&wide, warm, target, false);
                if wide.first() == Some(&target) {
                    // Kafka's quirk: slot 0 is never probed, so an exact hit on it is missed
                    // and the next slot (or none) comes back.
                    assert_eq!(ceiling, Some(0));
                    assert_eq!(kafka, (n > 1).then_some(1), "kafka quirk n={n}");
                } else {
                    assert_eq!(ceiling, kafka, "ceiling n={n} target={target}");
                }
            }
        }
    }

    #[test]
    fn value_column_with_duplicates_returns_outer_equal_slots() {
        let bytes: Vec<u8> = [(10, 5), (20, 5), (30, 5), (40, 9)]
            .iter()
            .flat_map(|&(ts, rel)| {
                TimeEntry {
                    timestamp_ms: ts,
                    relative_offset: rel,
                }
                .encode()
            })
            .collect();
        assert_eq!(floor_slot::<TimeEntry>(&bytes, Column::Value, 5), Some(2));
        assert_eq!(ceiling_slot::<TimeEntry>(&bytes, Column::Value, 5), Some(0));
        assert_eq!(ceiling_slot::<TimeEntry>(&bytes, Column::Value, 6), Some(3));
        assert_eq!(floor_slot::<TimeEntry>(&bytes, Column::Key, 35), Some(2));
    }

    #[test]
    fn trailing_partial_entry_is_ignored() {
        let mut bytes = offsets(&[1, 2, 3]);
        bytes.extend_from_slice(&[0xff; 5]);
        assert_eq!(floor_slot::<OffsetEntry>(&bytes, Column::Key, 100), Some(2));
    }
}
