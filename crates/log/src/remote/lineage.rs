//! Which remote copy a read serves, by the log's leader-epoch lineage (Kafka's
//! `RemoteLogManager.fetchRemoteLogSegmentMetadata` over `RemoteLogMetadataCache.
//! remoteLogSegmentMetadata(leaderEpoch, offset)`: the epoch that owns the offset in the log's
//! current epoch cache picks the copy).
//!
//! After an unclean leader election the tier can hold overlapping copies: a former leader's
//! copy of offsets the new lineage gave to other records, beside the new leader's copy of the
//! same offsets. [`lineage_chain`] turns the tier's finished segments, overlaps and all, into one
//! chain of non-overlapping offset ranges, each served by a copy whose batches carry, offset by
//! offset, the epoch the log's epoch cache assigns there ([`consistent_end`]). A stale copy is
//! used at most up to the offset where it leaves the lineage, never beyond, so a read never
//! serves a record the current lineage replaced. Where several copies agree with the lineage at
//! an offset, the one agreeing longest wins, then the later one in the tier's list (a later
//! copy of the same start offset, as Kafka's cache keeps the last one added).
//!
//! Kafka picks the copy by the epoch at the fetch offset only and serves it whole; seglog also
//! stops at the copy's consistent end (the next read goes to the copy of the lineage there).
//! A log without leader epochs, or a copy without any, cannot be placed in a lineage: such a
//! copy is taken as consistent to its end (docs/format.md, deliberate differences).

use std::collections::BTreeMap;

use super::RemoteSegment;

/// A remote segment as the lineage chain uses it: offsets `from..=to` of `segment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineageSegment {
    /// The copy serving the range.
    pub segment: RemoteSegment,
    /// The first offset served from it (its base offset, or later when an earlier copy in the
    /// chain already serves its head).
    pub from: i64,
    /// The last offset served from it: its end offset, or the last offset before it leaves the
    /// lineage.
    pub to: i64,
}

/// The tier's finished `segments` (ascending by base offset, possibly overlapping) as a chain
/// of non-overlapping ranges in ascending order, each served by a copy consistent with
/// `epochs` (the log's epoch cache, `(epoch, start offset)` ascending) over it. Copies that
/// are not consistent with the lineage at any of their offsets are left out. What a log's
/// remote reads serve (for a checker such as `seglog verify --store`: the chain must be
/// contiguous and reach the local log start).
pub fn lineage_chain(segments: &[RemoteSegment], epochs: &[(i32, i64)]) -> Vec<LineageSegment> {
    let lineage: BTreeMap<i32, i64> = epochs.iter().copied().collect();
    let mut usable: Vec<(usize, i64)> = segments
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let end = consistent_end(s, &lineage);
            (end >= s.base_offset).then_some((i, end))
        })
        .collect();
    usable.sort_by_key(|&(i, _)| (segments[i].base_offset, i));
    let mut chain = Vec::new();
    let mut next = 0;
    let mut cursor = i64::MIN;
    loop {
        // Of the copies starting at or before the cursor, the one reaching furthest (ties: the
        // later in the tier's list). Every copy taken in before ends at or before the range
        // last emitted (that one reached furthest), so only the new ones can hold the cursor.
        let mut best: Option<(i64, usize)> = None;
        while let Some(&(i, end)) = usable.get(next)
            && segments[i].base_offset <= cursor
        {
            if end >= cursor && best.is_none_or(|b| (end, i) > b) {
                best = Some((end, i));
            }
            next += 1;
        }
        match best {
            Some((to, i)) => {
                let segment = segments[i].clone();
                let from = segment.base_offset.max(cursor);
                chain.push(LineageSegment { segment, from, to });
                cursor = to + 1;
            }
            // A gap (or the start): on to the next copy's base.
            None => match usable.get(next) {
                Some(&(i, _)) => cursor = segments[i].base_offset,
                None => return chain,
            },
        }
    }
}

/// The last offset of `segment` whose batches carry the epoch `lineage` assigns there; below
/// its base offset when even its first offset disagrees. Epochs below the lineage's first are
/// not judged (the cache was truncated at its start: those offsets lie below the log start).
/// A segment or lineage without epochs: the segment's end.
pub(crate) fn consistent_end(segment: &RemoteSegment, lineage: &BTreeMap<i32, i64>) -> i64 {
    let Some((&first_epoch, _)) = lineage.first_key_value() else {
        return segment.end_offset;
    };
    let entries = &segment.leader_epochs;
    for (i, &(epoch, start)) in entries.iter().enumerate() {
        let range_start = start.max(segment.base_offset);
        let range_end = entries
            .get(i + 1)
            .map_or(segment.end_offset, |&(_, next)| next - 1)
            .min(segment.end_offset);
        if range_end < range_start || epoch < first_epoch {
            continue;
        }
        let Some(&lineage_start) = lineage.get(&epoch) else {
            // An epoch the lineage never had: its records are another leader's.
            return range_start - 1;
        };
        if epoch != first_epoch && lineage_start > range_start {
            // The copy holds the epoch from before the lineage started it.
            return range_start - 1;
        }
        if let Some((_, &lineage_next)) = lineage.range(epoch + 1..).next()
            && range_end >= lineage_next
        {
            return (lineage_next - 1).max(range_start - 1);
        }
    }
    segment.end_offset
}

/// A remote segment of ids `[id; 16]`, offsets `base..=end` and `epochs`, for the remote
/// module's tests.
#[cfg(test)]
pub(crate) fn test_segment(id: u8, base: i64, end: i64, epochs: &[(i32, i64)]) -> RemoteSegment {
    RemoteSegment {
        base_offset: base,
        end_offset: end,
        max_timestamp_ms: -1,
        size_in_bytes: 100,
        leader_epochs: epochs.to_vec(),
        id: super::RemoteSegmentId::from_bytes([id; 16]),
    }
}

#[cfg(test)]
mod tests {
    use super::test_segment as segment;
    use super::*;

    fn ranges(chain: &[LineageSegment]) -> Vec<(u8, i64, i64)> {
        chain
            .iter()
            .map(|s| (s.segment.id.as_bytes()[0], s.from, s.to))
            .collect()
    }

    #[test]
    fn a_copy_is_consistent_up_to_where_it_leaves_the_lineage() {
        let lineage: BTreeMap<i32, i64> = [(0, 0), (1, 25)].into_iter().collect();
        // Epoch 0 all the way: the lineage's epoch 1 starts at 25.
        assert_eq!(
            consistent_end(&segment(1, 20, 39, &[(0, 20)]), &lineage),
            24
        );
        // Inside the lineage.
        assert_eq!(
            consistent_end(&segment(2, 20, 39, &[(0, 20), (1, 25)]), &lineage),
            39
        );
        // Epoch 1 from 22, before the lineage started it: nothing from there.
        assert_eq!(
            consistent_end(&segment(3, 20, 39, &[(0, 20), (1, 22)]), &lineage),
            21
        );
        // An epoch the lineage never had, from the base: not even its first offset.
        assert_eq!(
            consistent_end(&segment(4, 30, 39, &[(2, 30)]), &lineage),
            29
        );
        // No epochs on either side: whole.
        assert_eq!(consistent_end(&segment(5, 30, 39, &[]), &lineage), 39);
        assert_eq!(
            consistent_end(&segment(6, 30, 39, &[(7, 30)]), &BTreeMap::new()),
            39
        );
        // Epochs below the lineage's first (truncated at its start) are not judged.
        let truncated: BTreeMap<i32, i64> = [(1, 25)].into_iter().collect();
        assert_eq!(
            consistent_end(&segment(7, 20, 39, &[(0, 20), (1, 25)]), &truncated),
            39
        );
    }

    #[test]
    fn the_chain_takes_the_lineages_copies_over_a_former_leaders() {
        // Epoch 0 to 24 in both; the former leader went on in epoch 0, the new one in epoch 1.
        let epochs = [(0, 0), (1, 25)];
        let segments = [
            segment(1, 0, 9, &[(0, 0)]),
            segment(2, 10, 19, &[(0, 10)]),
            // The former leader's copies: 20..29 and 30..39, all epoch 0.
            segment(3, 20, 29, &[(0, 20)]),
            segment(4, 30, 39, &[(0, 30)]),
            // The new leader's: 20..34 and 35..44.
            segment(5, 20, 34, &[(0, 20), (1, 25)]),
            segment(6, 35, 44, &[(1, 35)]),
        ];
        let mut sorted = segments.to_vec();
        sorted.sort_by_key(|s| s.base_offset);
        assert_eq!(
            ranges(&lineage_chain(&sorted, &epochs)),
            [(1, 0, 9), (2, 10, 19), (5, 20, 34), (6, 35, 44)]
        );
        // Without the new leader's copy of 20..34, the former leader's serves 20..24 only; 25..34
        // is a gap (no copy of the lineage holds it), then 35.. again.
        sorted.retain(|s| s.id.as_bytes()[0] != 5);
        assert_eq!(
            ranges(&lineage_chain(&sorted, &epochs)),
            [(1, 0, 9), (2, 10, 19), (3, 20, 24), (6, 35, 44)]
        );
    }

    #[test]
    fn repeated_copies_are_served_once_the_later_one_winning_ties() {
        let segments = [
            segment(1, 0, 9, &[(0, 0)]),
            segment(2, 0, 9, &[(0, 0)]),
            segment(3, 5, 14, &[(0, 5)]),
            segment(4, 20, 29, &[(0, 20)]),
        ];
        // 0..9 twice: the later copy; 5..14 from 10 on; a gap up to 20.
        assert_eq!(
            ranges(&lineage_chain(&segments, &[(0, 0)])),
            [(2, 0, 9), (3, 10, 14), (4, 20, 29)]
        );
        assert!(lineage_chain(&[], &[(0, 0)]).is_empty());
    }
}
