//! Retention as pure functions over segment statistics (spec §5.6): which oldest segments may
//! go, and why. The log applies them in Kafka's order: log-start breach, size, time.

/// Why a segment was deleted by retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionReason {
    /// The whole segment lies below the log start offset (`DeleteRecords` or an earlier pass).
    LogStartOffset,
    /// The log was larger than `retention.bytes`.
    Size,
    /// The segment's largest timestamp was older than `retention.ms`.
    Time,
}

/// One segment removed by [`crate::Log::delete_old_segments`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeletedSegment {
    /// Its base offset.
    pub base_offset: i64,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Which rule removed it.
    pub reason: RetentionReason,
}

/// What one retention pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionReport {
    /// Deleted segments, oldest first. Their files are renamed `.deleted` and unlinked after
    /// `file.delete.delay.ms`.
    pub deleted: Vec<DeletedSegment>,
    /// The log start offset after the pass.
    pub log_start_offset: i64,
    /// Whether the active segment was rolled because every segment was deletable.
    pub rolled: bool,
    /// Base offsets of segments whose largest timestamp lies further in the future than
    /// ordinary operation explains, so time retention keeps them (KAFKA-6482: e.g.
    /// microseconds written as milliseconds); the pass logs them at WARN. "Further" is past
    /// `message.timestamp.after.max.ms` (at least one minute; one hour when that is
    /// unlimited): a record stamped from the same clock a few milliseconds after the pass read
    /// its `now` is not in the future in this sense. Kafka warns at any timestamp past its
    /// `now` (a documented difference).
    pub future_timestamp_segments: Vec<i64>,
}

/// The margin used by [`future_margin_ms`] when `message.timestamp.after.max.ms` is unlimited
/// (`i64::MAX`): one hour, Kafka 4.0's default for that setting.
pub(crate) const UNLIMITED_FUTURE_MARGIN_MS: i64 = 3_600_000;

/// The least margin: a pass reads `now` once and may take seconds (a slow directory fsync),
/// while appends stamped from the same clock go on beside it.
pub(crate) const MIN_FUTURE_MARGIN_MS: i64 = 60_000;

/// How far past a retention pass's `now` a segment's largest timestamp must lie before it is
/// reported as in the future: `message.timestamp.after.max.ms`, the most a validated append
/// may lie ahead of its own clock read, at least [`MIN_FUTURE_MARGIN_MS`], and
/// [`UNLIMITED_FUTURE_MARGIN_MS`] when that setting is unlimited.
pub(crate) fn future_margin_ms(message_timestamp_after_max_ms: i64) -> i64 {
    if message_timestamp_after_max_ms == i64::MAX {
        UNLIMITED_FUTURE_MARGIN_MS
    } else {
        message_timestamp_after_max_ms.max(MIN_FUTURE_MARGIN_MS)
    }
}

/// Whether `largest_timestamp_ms` lies more than `margin_ms` past `now_ms`.
pub(crate) fn in_the_future(now_ms: i64, largest_timestamp_ms: i64, margin_ms: i64) -> bool {
    largest_timestamp_ms.saturating_sub(now_ms) > margin_ms
}

/// What retention needs to know about one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentStat {
    pub(crate) base_offset: i64,
    pub(crate) size_bytes: i64,
    /// Max record timestamp, or the `.log` mtime when the segment has none.
    pub(crate) largest_timestamp_ms: i64,
}

/// Kafka's `deletableSegments`: the length of the longest prefix of `segments` (oldest first)
/// that may be deleted. A segment qualifies only if its upper bound (the next base, or the LEO
/// for the last one) is at or below the high watermark, the predicate holds, and it is not the
/// last segment while empty. The walk stops at the first segment that does not qualify.
pub(crate) fn deletable_prefix(
    segments: &[SegmentStat],
    high_watermark: i64,
    log_end_offset: i64,
    mut predicate: impl FnMut(&SegmentStat, Option<&SegmentStat>) -> bool,
) -> usize {
    let mut count = 0;
    for (i, segment) in segments.iter().enumerate() {
        let next = segments.get(i + 1);
        let last_and_empty = next.is_none() && segment.size_bytes == 0;
        let upper_bound = next.map_or(log_end_offset, |n| n.base_offset);
        if high_watermark >= upper_bound && predicate(segment, next) && !last_and_empty {
            count += 1;
        } else {
            break;
        }
    }
    count
}

/// The log-start predicate: the next segment exists and starts at or below the log start.
pub(crate) fn log_start_breached(
    log_start_offset: i64,
) -> impl FnMut(&SegmentStat, Option<&SegmentStat>) -> bool {
    move |_, next| next.is_some_and(|n| n.base_offset <= log_start_offset)
}

/// The size predicate: with `diff = total − retention.bytes`, delete oldest first while
/// `diff − size >= 0`. Returns `None` when size retention does not apply (disabled, or the log
/// is below the limit).
pub(crate) fn size_breached(
    total_bytes: i64,
    retention_bytes: i64,
) -> Option<impl FnMut(&SegmentStat, Option<&SegmentStat>) -> bool> {
    if retention_bytes < 0 || total_bytes < retention_bytes {
        return None;
    }
    let mut diff = total_bytes - retention_bytes;
    Some(move |segment: &SegmentStat, _: Option<&SegmentStat>| {
        if diff - segment.size_bytes >= 0 {
            diff -= segment.size_bytes;
            true
        } else {
            false
        }
    })
}

/// The time predicate, strict: `now − largest_timestamp > retention.ms`. `None` when disabled.
pub(crate) fn time_breached(
    now_ms: i64,
    retention_ms: i64,
) -> Option<impl FnMut(&SegmentStat, Option<&SegmentStat>) -> bool> {
    (retention_ms >= 0).then_some(move |segment: &SegmentStat, _: Option<&SegmentStat>| {
        now_ms.saturating_sub(segment.largest_timestamp_ms) > retention_ms
    })
}

/// Total size as i64 (KAFKA-5584: never sum sizes in 32 bits).
pub(crate) fn total_bytes(segments: &[SegmentStat]) -> i64 {
    segments.iter().map(|s| s.size_bytes).sum()
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn seg(base_offset: i64, size_bytes: i64, largest_timestamp_ms: i64) -> SegmentStat {
        SegmentStat {
            base_offset,
            size_bytes,
            largest_timestamp_ms,
        }
    }

    #[test]
    fn never_deletes_at_or_above_the_high_watermark() {
        let segs = [seg(0, 100, 0), seg(10, 100, 0), seg(20, 100, 0)];
        let all = |_: &SegmentStat, _: Option<&SegmentStat>| true;
        assert_eq!(deletable_prefix(&segs, 9, 30, all), 0);
        assert_eq!(deletable_prefix(&segs, 10, 30, all), 1);
        assert_eq!(deletable_prefix(&segs, 29, 30, all), 2);
        // The active segment is reachable only when HW == LEO.
        assert_eq!(deletable_prefix(&segs, 30, 30, all), 3);
    }

    #[test]
    fn last_empty_segment_is_never_deletable() {
        let segs = [seg(0, 100, 0), seg(10, 0, 0)];
        assert_eq!(deletable_prefix(&segs, 10, 10, |_, _| true), 1);
    }

    #[test]
    fn log_start_predicate() {
        let segs = [seg(0, 1, 0), seg(10, 1, 0), seg(20, 1, 0)];
        assert_eq!(deletable_prefix(&segs, 30, 30, log_start_breached(15)), 1);
        assert_eq!(deletable_prefix(&segs, 30, 30, log_start_breached(20)), 2);
        assert_eq!(deletable_prefix(&segs, 30, 30, log_start_breached(9)), 0);
    }

    #[test]
    fn size_predicate_deletes_while_the_remainder_stays_above_the_limit() {
        let segs = [seg(0, 100, 0), seg(10, 100, 0), seg(20, 100, 0)];
        let total = total_bytes(&segs);
        assert!(size_breached(total, 301).is_none());
        assert!(size_breached(total, -1).is_none());
        let pred = size_breached(total, 150).unwrap();
        assert_eq!(deletable_prefix(&segs, 30, 30, pred), 1);
        let pred = size_breached(total, 100).unwrap();
        assert_eq!(deletable_prefix(&segs, 30, 30, pred), 2);
        let pred = size_breached(total, 0).unwrap();
        assert_eq!(deletable_prefix(&segs, 30, 30, pred), 3);
    }

    #[test]
    fn time_predicate_is_strict_and_stops_at_future_timestamps() {
        let segs = [seg(0, 1, 1000), seg(10, 1, 9_999_999), seg(20, 1, 1000)];
        assert!(time_breached(2000, -1).is_none());
        assert_eq!(
            deletable_prefix(&segs, 30, 30, time_breached(2000, 1000).unwrap()),
            0
        );
        assert_eq!(
            deletable_prefix(&segs, 30, 30, time_breached(2001, 1000).unwrap()),
            1
        );
        // A future timestamp in segment 10 blocks everything after it (KAFKA-6482).
        assert_eq!(
            deletable_prefix(&segs, 30, 30, time_breached(50_000, 1000).unwrap()),
            1
        );
    }

    #[test]
    fn the_future_starts_past_the_timestamp_bound_of_appends() {
        assert_eq!(future_margin_ms(3_600_000), 3_600_000);
        assert_eq!(future_margin_ms(i64::MAX), UNLIMITED_FUTURE_MARGIN_MS);
        assert_eq!(future_margin_ms(0), MIN_FUTURE_MARGIN_MS);
        let margin = future_margin_ms(3_600_000);
        // A record stamped a few milliseconds after the pass read `now`: not the future.
        assert!(!in_the_future(1_000, 1_005, margin));
        assert!(!in_the_future(1_000, 1_000 + margin, margin));
        assert!(in_the_future(1_000, 1_001 + margin, margin));
        // Microseconds written as milliseconds (KAFKA-6482), without overflow.
        assert!(in_the_future(
            1_700_000_000_000,
            1_700_000_000_000_000,
            margin
        ));
        assert!(in_the_future(i64::MIN, i64::MAX, margin));
    }

    #[test]
    fn sizes_sum_in_64_bits() {
        let segs = [
            seg(0, i64::from(i32::MAX), 0),
            seg(1, i64::from(i32::MAX), 0),
        ];
        assert_eq!(total_bytes(&segs), 2 * i64::from(i32::MAX));
    }
}
