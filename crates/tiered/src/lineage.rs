//! Whether a remote segment belongs to the log's leader-epoch lineage (Kafka 4.4's
//! `RemoteLogManager.isRemoteSegmentWithinLeaderEpochs` and `buildFilteredLeaderEpochMap`,
//! read from the decompiled 4.4.0 class). After an unclean leader election the remote tier may
//! hold segments a former leader copied whose offsets the new lineage gave to other records:
//! remote retention neither counts them nor stops at them, and deletes them only once the
//! leader-epoch cache no longer reaches their epochs.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

/// `buildFilteredLeaderEpochMap`: the epochs by epoch, without the ones that hold no offset
/// (an epoch whose start offset equals the next epoch's).
pub(crate) fn filtered_epochs(epochs: &[(i32, i64)]) -> BTreeMap<i32, i64> {
    let sorted: BTreeMap<i32, i64> = epochs.iter().copied().collect();
    let mut out = BTreeMap::new();
    let mut previous: Option<(i32, i64)> = None;
    for (epoch, offset) in sorted {
        if let Some((p_epoch, p_offset)) = previous
            && p_offset != offset
        {
            out.insert(p_epoch, p_offset);
        }
        previous = Some((epoch, offset));
    }
    if let Some((epoch, offset)) = previous {
        out.insert(epoch, offset);
    }
    out
}

/// `isRemoteSegmentWithinLeaderEpochs`: whether a segment with `segment_epochs` (epoch, start
/// offset) ending at `segment_end_offset` lies within `lineage` (the log's filtered epochs)
/// below `log_end_offset`. Every epoch of the segment from the first one the lineage knows must
/// be in the lineage with the same next epoch; the first may not start before the lineage's
/// start of it (unless it is the lineage's first epoch), the segment may not run past the start
/// of the epoch after its last one, nor reach the log end offset. False when either side has
/// no epochs (Kafka's segments and logs always have some; see [`crate::Tier::expire`] for
/// what seglog does without).
pub(crate) fn is_within_leader_epochs(
    segment_epochs: &[(i32, i64)],
    segment_end_offset: i64,
    log_end_offset: i64,
    lineage: &BTreeMap<i32, i64>,
) -> bool {
    let segment = filtered_epochs(segment_epochs);
    let (Some((&segment_last, _)), Some((&first, _)), Some((&last, _))) = (
        segment.last_key_value(),
        lineage.first_key_value(),
        lineage.last_key_value(),
    ) else {
        return false;
    };
    if segment_last < first || segment_last > last {
        return false;
    }
    let Some((&segment_first, _)) = segment.range(first..).next() else {
        return false;
    };
    for (&epoch, &offset) in segment.range(segment_first..) {
        let Some(&lineage_offset) = lineage.get(&epoch) else {
            return false;
        };
        let has_lower = lineage.range(..epoch).next_back().is_some();
        if epoch == segment_first && has_lower && offset < lineage_offset {
            return false;
        }
        let lineage_next = lineage.range((Excluded(epoch), Unbounded)).next();
        if epoch == segment_last {
            if let Some((_, &next_start)) = lineage_next
                && segment_end_offset > next_start - 1
            {
                return false;
            }
            continue;
        }
        if lineage_next != segment.range((Excluded(epoch), Unbounded)).next() {
            return false;
        }
    }
    segment_end_offset < log_end_offset
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lineage(entries: &[(i32, i64)]) -> BTreeMap<i32, i64> {
        filtered_epochs(entries)
    }

    #[test]
    fn empty_epochs_are_filtered_out() {
        // Epoch 2 starts where 3 does: it holds nothing.
        let map = filtered_epochs(&[(0, 0), (1, 10), (2, 20), (3, 20), (4, 40)]);
        assert_eq!(
            map.into_iter().collect::<Vec<_>>(),
            [(0, 0), (1, 10), (3, 20), (4, 40)]
        );
        assert!(filtered_epochs(&[]).is_empty());
        assert_eq!(
            filtered_epochs(&[(5, 7)]).into_iter().collect::<Vec<_>>(),
            [(5, 7)]
        );
    }

    /// Kafka's `RemoteLogManagerTest.testRemoteSegmentWithinLeaderEpochs` lineage: epochs 0 to
    /// 5 every 10 offsets, then 7 at 70; the log ends at 90.
    fn kafkas() -> BTreeMap<i32, i64> {
        lineage(&[(0, 0), (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (7, 70)])
    }

    #[test]
    fn segments_inside_the_lineage_are_valid() {
        let l = kafkas();
        // Several epochs, each starting where the lineage says.
        assert!(is_within_leader_epochs(
            &[(1, 15), (2, 20), (3, 30), (4, 40), (5, 50)],
            59,
            90,
            &l
        ));
        // One epoch, inside it.
        assert!(is_within_leader_epochs(&[(1, 15)], 19, 90, &l));
        // The last epoch of the lineage, up to below the log end.
        assert!(is_within_leader_epochs(&[(7, 70)], 89, 90, &l));
        // Epoch 5 runs to 69 (6 is not in the lineage: 7 starts at 70).
        assert!(is_within_leader_epochs(&[(5, 50)], 69, 90, &l));
        // Epochs before the lineage's first one are ignored (the lineage was truncated at its
        // start): the segment is judged from its first epoch the lineage knows.
        let truncated = lineage(&[(2, 25), (3, 30)]);
        assert!(is_within_leader_epochs(
            &[(1, 15), (2, 20), (3, 30)],
            35,
            40,
            &truncated
        ));
    }

    #[test]
    fn segments_outside_the_lineage_are_not() {
        let l = kafkas();
        // Ends past the start of the next epoch: a former leader's epoch-1 records at 20..
        assert!(!is_within_leader_epochs(&[(1, 15)], 25, 90, &l));
        // An epoch the lineage does not have (6) between two it has.
        assert!(!is_within_leader_epochs(&[(5, 50), (6, 60)], 65, 90, &l));
        // The segment's epoch 2 is followed by 4 but the lineage's by 3.
        assert!(!is_within_leader_epochs(&[(2, 20), (4, 35)], 45, 90, &l));
        // The first epoch starts before the lineage's start of it.
        assert!(!is_within_leader_epochs(&[(2, 15), (3, 30)], 35, 90, &l));
        // An epoch above the lineage's last one, or below its first.
        assert!(!is_within_leader_epochs(&[(8, 80)], 85, 90, &l));
        assert!(!is_within_leader_epochs(
            &[(1, 15)],
            19,
            90,
            &lineage(&[(2, 20)])
        ));
        // Reaching the log end offset.
        assert!(!is_within_leader_epochs(&[(7, 70)], 90, 90, &l));
        // No epochs on either side.
        assert!(!is_within_leader_epochs(&[], 5, 90, &l));
        assert!(!is_within_leader_epochs(&[(0, 0)], 5, 90, &BTreeMap::new()));
    }
}
