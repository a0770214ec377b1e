//! Which part of a log a round cleans, whether it is due, and how its segments are grouped
//! (Kafka's `LogCleanerManager.cleanableOffsets` / `calculateCleanableBytes` /
//! `maxCompactionDelay`, `LogToClean`, `Cleaner.groupSegmentsBySize`), as functions over
//! segment statistics.

/// What the planner needs to know about one segment, oldest first. Only what a plan reads is
/// filled (`stats.rs`): the timestamps of the dirty sealed segments when a compaction lag asks
/// for them, the index bytes of the segments a round groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentStat {
    pub(crate) base_offset: i64,
    pub(crate) size_bytes: u64,
    /// Bytes of the offset index's entries (`entries × 8`).
    pub(crate) offset_index_bytes: u64,
    /// Bytes of the time index's entries (`entries × 12`).
    pub(crate) time_index_bytes: u64,
    /// Largest record timestamp, or the `.log` mtime (Kafka's `largestTimestamp`);
    /// `i64::MIN` when not read.
    pub(crate) largest_timestamp_ms: i64,
    /// The first batch's max timestamp (Kafka's `getFirstBatchTimestamp`); `i64::MAX` when
    /// unknown or not read.
    pub(crate) first_batch_timestamp_ms: i64,
}

impl SegmentStat {
    /// A segment's base and size, nothing read yet.
    pub(crate) fn sized(base_offset: i64, size_bytes: u64) -> SegmentStat {
        SegmentStat {
            base_offset,
            size_bytes,
            offset_index_bytes: 0,
            time_index_bytes: 0,
            largest_timestamp_ms: i64::MIN,
            first_batch_timestamp_ms: i64::MAX,
        }
    }
}

/// The offsets a round works between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offsets {
    /// Where the dirty section starts (the cleaner checkpoint, reset to the log start when
    /// it is out of range).
    pub(crate) first_dirty: i64,
    /// The checkpoint was out of range and must be rewritten.
    pub(crate) reset_checkpoint: bool,
    /// The base of the first segment that cannot be cleaned: the segment holding the
    /// minimum of the last stable offset, the active segment's base and the first segment
    /// within `min.compaction.lag.ms`.
    pub(crate) first_uncleanable: i64,
    /// Bytes of the segments below `first_dirty` (Kafka's `cleanBytes`).
    pub(crate) clean_bytes: u64,
    /// Bytes of the segments in `[first_dirty, first_uncleanable)`.
    pub(crate) cleanable_bytes: u64,
}

impl Offsets {
    /// `cleanable / (clean + cleanable)`, 0 for an empty log.
    pub(crate) fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.cleanable_bytes;
        if total == 0 {
            0.0
        } else {
            self.cleanable_bytes as f64 / total as f64
        }
    }
}

/// The inputs of [`offsets`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) checkpoint: Option<i64>,
    pub(crate) log_start_offset: i64,
    pub(crate) log_end_offset: i64,
    pub(crate) last_stable_offset: i64,
    pub(crate) min_compaction_lag_ms: i64,
    pub(crate) now_ms: i64,
}

/// Kafka's `cleanableOffsets` followed by `calculateCleanableBytes`. `segments` is the whole
/// log, oldest first; the last one is the active segment.
pub(crate) fn offsets(segments: &[SegmentStat], bounds: Bounds) -> Offsets {
    let (first_dirty, reset_checkpoint) = first_dirty(&bounds);
    let active_base = segments.last().map_or(0, |s| s.base_offset);
    let mut uncleanable = bounds.last_stable_offset.min(active_base);
    let lag = bounds.min_compaction_lag_ms.max(0);
    if lag > 0 {
        let first_young = non_active_from(segments, first_dirty)
            .iter()
            .find(|s| s.largest_timestamp_ms > bounds.now_ms.saturating_sub(lag));
        if let Some(young) = first_young {
            uncleanable = uncleanable.min(young.base_offset);
        }
    }
    let uncleanable = uncleanable.max(first_dirty);
    // The segment holding the uncleanable offset (the active one when it is past the sealed
    // ones): cleaning stops at its base.
    let first_uncleanable = non_active_from(segments, uncleanable)
        .first()
        .map_or(active_base, |s| s.base_offset);
    let low = first_dirty.min(first_uncleanable);
    let cleanable_bytes = range(segments, low, first_uncleanable)
        .iter()
        .map(|s| s.size_bytes)
        .sum();
    let clean_bytes = segments
        .iter()
        .filter(|s| s.base_offset < first_dirty)
        .map(|s| s.size_bytes)
        .sum();
    Offsets {
        first_dirty,
        reset_checkpoint,
        first_uncleanable,
        clean_bytes,
        cleanable_bytes,
    }
}

/// Where the dirty section starts: the checkpoint, or the log start when it is missing or out
/// of range (then `true` if a checkpoint must be rewritten).
pub(crate) fn first_dirty(bounds: &Bounds) -> (i64, bool) {
    let checkpoint = bounds.checkpoint.unwrap_or(bounds.log_start_offset);
    if checkpoint < bounds.log_start_offset || checkpoint > bounds.log_end_offset {
        (bounds.log_start_offset, bounds.checkpoint.is_some())
    } else {
        (checkpoint, false)
    }
}

/// Kafka's `maxCompactionDelay`: how long past `max.compaction.lag.ms` the oldest dirty
/// sealed segment's first batch is (0 when none is overdue).
pub(crate) fn max_compaction_delay_ms(
    segments: &[SegmentStat],
    first_dirty: i64,
    max_compaction_lag_ms: i64,
    now_ms: i64,
) -> i64 {
    let earliest = non_active_from(segments, first_dirty)
        .iter()
        .map(|s| s.first_batch_timestamp_ms)
        .filter(|t| *t > 0)
        .min()
        .unwrap_or(i64::MAX);
    let clean_until = now_ms.saturating_sub(max_compaction_lag_ms.max(0));
    if earliest < clean_until {
        clean_until - earliest
    } else {
        0
    }
}

/// Whether a round is due: some cleanable bytes, and either a segment overdue by
/// `max.compaction.lag.ms` or a dirty ratio above `min.cleanable.dirty.ratio` (strict, as
/// Kafka's `cleanableRatio > minCleanableRatio`).
pub(crate) fn is_due(offsets: &Offsets, compaction_delay_ms: i64, min_ratio: f64) -> bool {
    if offsets.clean_bytes + offsets.cleanable_bytes == 0 {
        return false;
    }
    (compaction_delay_ms > 0 && offsets.cleanable_bytes > 0) || offsets.dirty_ratio() > min_ratio
}

/// Kafka's `groupSegmentsBySize`: consecutive segments whose total `.log` bytes stay within
/// `max_segment_bytes`, whose index entries stay within `max_index_bytes` each, and whose
/// offsets fit an `i32` relative to the group's first base (estimated by the next segment's
/// base, or `first_uncleanable` for the last one). Returns index ranges into `segments`.
pub(crate) fn group(
    segments: &[SegmentStat],
    max_segment_bytes: u64,
    max_index_bytes: u64,
    first_uncleanable: i64,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let first = &segments[start];
        let (mut log, mut index, mut time) = (
            first.size_bytes,
            first.offset_index_bytes,
            first.time_index_bytes,
        );
        let mut end = start + 1;
        while let Some(next) = segments.get(end) {
            let last_offset = segments
                .get(end + 1)
                .map_or(first_uncleanable - 1, |s| s.base_offset - 1);
            let fits = log + next.size_bytes <= max_segment_bytes
                && index + next.offset_index_bytes <= max_index_bytes
                && time + next.time_index_bytes <= max_index_bytes
                && (next.size_bytes == 0
                    || last_offset.saturating_sub(first.base_offset) <= i64::from(i32::MAX));
            if !fits {
                break;
            }
            log += next.size_bytes;
            index += next.offset_index_bytes;
            time += next.time_index_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Kafka's `nonActiveLogSegmentsFrom`: the sealed segments from the one holding `offset`
/// (none when `offset` is at or past the active segment's base).
fn non_active_from(segments: &[SegmentStat], offset: i64) -> &[SegmentStat] {
    &segments[non_active_range(segments, offset)]
}

/// The indexes of [`non_active_from`]: the only segments whose timestamps a plan reads.
pub(crate) fn non_active_range(segments: &[SegmentStat], offset: i64) -> std::ops::Range<usize> {
    let Some((active, sealed)) = segments.split_last() else {
        return 0..0;
    };
    if offset >= active.base_offset {
        return 0..0;
    }
    floor_index(sealed, offset)..sealed.len()
}

/// The segments from the one holding `offset` (or the first) on.
fn from_floor(segments: &[SegmentStat], offset: i64) -> &[SegmentStat] {
    &segments[floor_index(segments, offset)..]
}

/// The index of the segment holding `offset` (0 when it is below the first).
fn floor_index(segments: &[SegmentStat], offset: i64) -> usize {
    segments
        .iter()
        .rposition(|s| s.base_offset <= offset)
        .unwrap_or(0)
        .min(segments.len())
}

/// Kafka's `logSegments(from, to)`: from the floor of `from` to base `to`, exclusive.
pub(crate) fn range(segments: &[SegmentStat], from: i64, to: i64) -> &[SegmentStat] {
    if from >= to {
        return &[];
    }
    let tail = from_floor(segments, from);
    let n = tail.iter().take_while(|s| s.base_offset < to).count();
    &tail[..n]
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn seg(base_offset: i64, size_bytes: u64, largest_timestamp_ms: i64) -> SegmentStat {
        SegmentStat {
            base_offset,
            size_bytes,
            offset_index_bytes: 8,
            time_index_bytes: 12,
            largest_timestamp_ms,
            first_batch_timestamp_ms: largest_timestamp_ms,
        }
    }

    fn bounds(checkpoint: Option<i64>, lso: i64) -> Bounds {
        Bounds {
            checkpoint,
            log_start_offset: 0,
            log_end_offset: 40,
            last_stable_offset: lso,
            min_compaction_lag_ms: 0,
            now_ms: 1000,
        }
    }

    #[test]
    fn uncleanable_is_the_segment_of_the_lowest_bound() {
        let segs = [
            seg(0, 100, 1),
            seg(10, 100, 2),
            seg(20, 100, 3),
            seg(30, 50, 4),
        ];
        let o = offsets(&segs, bounds(None, 40));
        assert_eq!((o.first_dirty, o.first_uncleanable), (0, 30));
        assert_eq!((o.clean_bytes, o.cleanable_bytes), (0, 300));
        // The last stable offset inside segment 10 stops cleaning at its base.
        let o = offsets(&segs, bounds(Some(10), 15));
        assert_eq!((o.first_dirty, o.first_uncleanable), (10, 10));
        assert_eq!(o.cleanable_bytes, 0);
        assert_eq!(o.clean_bytes, 100);
        // A checkpoint past the log end resets to the log start.
        let o = offsets(&segs, bounds(Some(99), 40));
        assert!(o.reset_checkpoint);
        assert_eq!(o.first_dirty, 0);
        // min.compaction.lag.ms: segment 20 is too young.
        let o = offsets(
            &segs,
            Bounds {
                min_compaction_lag_ms: 998,
                ..bounds(None, 40)
            },
        );
        assert_eq!(o.first_uncleanable, 20);
    }

    #[test]
    fn due_by_ratio_or_by_max_lag() {
        let segs = [
            seg(0, 100, 1),
            seg(10, 100, 2),
            seg(20, 100, 3),
            seg(30, 50, 4),
        ];
        let o = offsets(&segs, bounds(Some(10), 40));
        assert!((o.dirty_ratio() - 2.0 / 3.0).abs() < 1e-9);
        assert!(is_due(&o, 0, 0.5));
        assert!(!is_due(&o, 0, 0.7));
        let delay = max_compaction_delay_ms(&segs, 10, 500, 1000);
        assert_eq!(delay, 1000 - 500 - 2);
        assert!(is_due(&o, delay, 0.7));
    }

    #[test]
    fn groups_respect_size_index_and_offset_limits() {
        let segs = [
            seg(0, 100, 0),
            seg(10, 100, 0),
            seg(20, 100, 0),
            seg(30, 100, 0),
        ];
        assert_eq!(group(&segs, 250, 1000, 40), vec![0..2, 2..4]);
        assert_eq!(group(&segs, 1000, 24, 40), vec![0..2, 2..4]);
        assert_eq!(group(&segs, 1000, 1000, 40), vec![0..4]);
        let far = [seg(0, 100, 0), seg(i64::from(i32::MAX), 100, 0)];
        assert_eq!(
            group(&far, 1000, 1000, i64::from(i32::MAX) + 5),
            vec![0..1, 1..2]
        );
    }
}
