//! Property tests: floor / ceiling against a linear scan, on arbitrary sorted inputs, around the
//! warm/cold boundary, empty and one-entry inputs, targets outside the entries.

use proptest::prelude::*;
use seglog_index_core::{
    Column, OffsetEntry, OffsetIndex, OffsetPosition, TimeEntry, TimeIndex, TimestampOffset,
    WARM_SECTION_BYTES, ceiling_slot, floor_slot,
};

fn oracle_floor(keys: &[i64], target: i64) -> Option<usize> {
    keys.iter().rposition(|&k| k <= target)
}

fn oracle_ceiling(keys: &[i64], target: i64) -> Option<usize> {
    keys.iter().position(|&k| k >= target)
}

/// Entry counts that matter: empty, one, the warm boundary (warm-1 ..= warm+2), and any.
fn entry_count(entry_size: usize) -> impl Strategy<Value = usize> {
    let warm = WARM_SECTION_BYTES / entry_size;
    prop_oneof![
        Just(0usize),
        Just(1usize),
        (warm - 1)..=(warm + 2),
        0usize..3 * warm,
    ]
}

/// `n` sorted keys starting at `start`, with gaps in `min_gap..=max_gap` (0 allows duplicates).
fn sorted_keys(n: usize, min_gap: i64, max_gap: i64) -> impl Strategy<Value = Vec<i64>> {
    (
        -1000i64..1000,
        proptest::collection::vec(min_gap..=max_gap, n),
    )
        .prop_map(|(start, gaps)| {
            gaps.iter()
                .scan(start, |k, gap| {
                    *k += gap;
                    Some(*k)
                })
                .collect()
        })
}

/// Targets: random ones around the keys, every key and its neighbours, far below and above.
fn targets(keys: &[i64], random: &[i64]) -> Vec<i64> {
    let lo = keys.first().copied().unwrap_or(0);
    let hi = keys.last().copied().unwrap_or(0);
    let mut all = vec![i64::MIN, lo - 1, lo, hi, hi + 1, i64::MAX];
    let span = (hi - lo).max(1) + 20;
    all.extend(random.iter().map(|r| lo - 10 + r.rem_euclid(span)));
    for &k in keys.iter().step_by(keys.len() / 64 + 1).chain(keys.last()) {
        all.extend([k - 1, k, k + 1]);
    }
    all
}

fn offset_bytes(keys: &[i64], values: &[i64]) -> Vec<u8> {
    keys.iter()
        .zip(values)
        .flat_map(|(&k, &v)| {
            OffsetEntry {
                relative_offset: k as i32,
                position: v as i32,
            }
            .encode()
        })
        .collect()
}

fn time_bytes(keys: &[i64], values: &[i64]) -> Vec<u8> {
    keys.iter()
        .zip(values)
        .flat_map(|(&k, &v)| {
            TimeEntry {
                timestamp_ms: k,
                relative_offset: v as i32,
            }
            .encode()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn offset_entries_floor_and_ceiling_match_linear_scan(
        (keys, values) in entry_count(OffsetEntry::SIZE).prop_flat_map(|n| (sorted_keys(n, 0, 3), sorted_keys(n, 0, 5))),
        random in proptest::collection::vec(any::<i64>(), 32),
    ) {
        let bytes = offset_bytes(&keys, &values);
        for (column, col) in [(Column::Key, &keys), (Column::Value, &values)] {
            for t in targets(col, &random) {
                prop_assert_eq!(floor_slot::<OffsetEntry>(&bytes, column, t), oracle_floor(col, t), "floor {:?} {}", column, t);
                prop_assert_eq!(ceiling_slot::<OffsetEntry>(&bytes, column, t), oracle_ceiling(col, t), "ceiling {:?} {}", column, t);
            }
        }
    }

    #[test]
    fn time_entries_floor_and_ceiling_match_linear_scan(
        (keys, values) in entry_count(TimeEntry::SIZE).prop_flat_map(|n| (sorted_keys(n, 0, 4), sorted_keys(n, 0, 2))),
        random in proptest::collection::vec(any::<i64>(), 32),
    ) {
        let bytes = time_bytes(&keys, &values);
        for (column, col) in [(Column::Key, &keys), (Column::Value, &values)] {
            for t in targets(col, &random) {
                prop_assert_eq!(floor_slot::<TimeEntry>(&bytes, column, t), oracle_floor(col, t), "floor {:?} {}", column, t);
                prop_assert_eq!(ceiling_slot::<TimeEntry>(&bytes, column, t), oracle_ceiling(col, t), "ceiling {:?} {}", column, t);
            }
        }
    }

    /// The public lookups, including Kafka's fallbacks, on strictly increasing entries.
    #[test]
    fn index_lookups_match_linear_scan(
        n in entry_count(OffsetEntry::SIZE),
        base_offset in 0i64..1 << 40,
        gaps in proptest::collection::vec(1i64..4, 3 * 1024),
        random in proptest::collection::vec(any::<i64>(), 32),
    ) {
        let offsets: Vec<i64> = gaps[..n].iter().scan(base_offset, |o, g| { *o += g; Some(*o) }).collect();
        let index = OffsetIndex::in_memory("prop.index", base_offset, 8 * 3 * 1024);
        let times = TimeIndex::in_memory("prop.timeindex", base_offset, 12 * 3 * 1024);
        for (i, &offset) in offsets.iter().enumerate() {
            index.append(offset, 100 * i as u32).unwrap();
            times.maybe_append(offset * 2, offset, false).unwrap();
        }
        for t in targets(&offsets, &random) {
            let expected = oracle_floor(&offsets, t)
                .map_or(OffsetPosition { offset: base_offset, position: 0 }, |i| OffsetPosition { offset: offsets[i], position: 100 * i as u32 });
            prop_assert_eq!(index.lookup(t), expected);
            let next = offsets.iter().position(|&o| o > t)
                .map(|i| OffsetPosition { offset: offsets[i], position: 100 * i as u32 });
            prop_assert_eq!(index.lookup_with_next(t), (expected, next));
            let ts = t.saturating_mul(2);
            let expected = offsets.iter().rposition(|&o| o * 2 <= ts)
                .map_or(TimestampOffset { timestamp_ms: -1, offset: base_offset }, |i| TimestampOffset { timestamp_ms: offsets[i] * 2, offset: offsets[i] });
            prop_assert_eq!(times.lookup(ts), expected);
            let fetch_end = t.saturating_sub(base_offset).clamp(0, i64::from(u32::MAX)) as u32;
            let expected = (0..offsets.len()).find(|&i| 100 * i as u64 >= u64::from(fetch_end))
                .map(|i| OffsetPosition { offset: offsets[i], position: 100 * i as u32 });
            prop_assert_eq!(index.fetch_upper_bound_offset(0, fetch_end), expected);
        }
    }

    /// truncate_to keeps exactly the entries below the offset, on both indexes.
    #[test]
    fn truncate_to_keeps_entries_below_target(
        n in 0usize..1100,
        cut in any::<u16>(),
    ) {
        let index = OffsetIndex::in_memory("prop.index", 10, 8 * 1100);
        let times = TimeIndex::in_memory("prop.timeindex", 10, 12 * 1101);
        for i in 0..n as i64 {
            index.append(10 + 2 * i, i as u32).unwrap();
            // Offsets repeat in pairs in the time index (allowed: equal offsets).
            times.maybe_append(1 + i, 10 + 2 * (i / 2), false).unwrap();
        }
        let target = 10 + i64::from(cut) % (2 * n as i64 + 4) - 2;
        index.truncate_to(target).unwrap();
        prop_assert_eq!(index.entries(), (0..n as i64).filter(|i| 10 + 2 * i < target).count());
        times.truncate_to(target).unwrap();
        prop_assert_eq!(times.entries(), (0..n as i64).filter(|i| 10 + 2 * (i / 2) < target).count());
    }
}
