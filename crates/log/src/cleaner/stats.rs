//! The planner's segment statistics, read only where the plan looks and cached per sealed
//! segment (Kafka's `LogSegment` keeps its first batch timestamp and max timestamp in memory).
//!
//! A due check needs every segment's size (known without opening a segment, also for one a
//! trusted clean-shutdown load left unopened) and, only when a compaction lag is set, the
//! timestamps of the dirty sealed segments: their largest timestamp for
//! `min.compaction.lag.ms` > 0, their first batch's max timestamp for a finite
//! `max.compaction.lag.ms`. A sealed segment's timestamps do not change until a truncation
//! (which bumps [`Log::truncations`]) or a swap (which replaces the segment), so each is read
//! once: every tick after that opens no sealed segment. The round itself reads the index
//! entry counts of the segments it groups (it copies them anyway).

use std::sync::{Arc, Weak};

use seglog_segment::Segment;

use super::plan::{self, SegmentStat};
use crate::Result;
use crate::log::Log;
use crate::stat_cache::Cached;
use crate::sync::{Ordering, lock};

/// Which timestamps a plan reads (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Needed {
    pub(crate) largest_timestamp: bool,
    pub(crate) first_batch_timestamp: bool,
}

impl Needed {
    /// What [`plan::offsets`] and [`plan::max_compaction_delay_ms`] read with these settings:
    /// the largest timestamps only for a positive `min.compaction.lag.ms`; the first batch
    /// timestamps only when `now - max.compaction.lag.ms` exceeds 1 (every timestamp they
    /// count is at least 1, so an earlier bound makes the delay 0 whatever they are).
    pub(crate) fn for_lags(min_lag_ms: i64, max_lag_ms: i64, now_ms: i64) -> Needed {
        Needed {
            largest_timestamp: min_lag_ms > 0,
            first_batch_timestamp: now_ms.saturating_sub(max_lag_ms.max(0)) > 1,
        }
    }
}

impl Log {
    /// The statistics of `segments` (the whole log, oldest first; the last is the active one)
    /// for a plan whose dirty section starts at `first_dirty`: sizes of all, the `needed`
    /// timestamps of the dirty sealed segments (cached), index bytes of none (see
    /// [`fill_index_bytes`]).
    ///
    /// # Errors
    /// Segment I/O errors reading a timestamp.
    pub(crate) fn segment_stats(
        &self,
        segments: &[(i64, Arc<Segment>)],
        first_dirty: i64,
        needed: Needed,
    ) -> Result<Vec<SegmentStat>> {
        let mut stats: Vec<SegmentStat> = segments
            .iter()
            .map(|(base, segment)| SegmentStat::sized(*base, segment.size()))
            .collect();
        let dirty_sealed = plan::non_active_range(&stats, first_dirty);
        let mut cache = lock(&self.cleaner_stats);
        // Entries of segments no longer in the log go.
        cache.entries.retain(|base, cached| {
            segments
                .binary_search_by_key(base, |(b, _)| *b)
                .is_ok_and(|i| Weak::ptr_eq(&cached.segment, &Arc::downgrade(&segments[i].1)))
        });
        if !needed.largest_timestamp && !needed.first_batch_timestamp {
            return Ok(stats);
        }
        let truncations = self.truncations.load(Ordering::Acquire);
        for i in dirty_sealed {
            let (base, segment) = &segments[i];
            let cached = cache
                .entries
                .entry(*base)
                .and_modify(|c| {
                    if c.truncations != truncations {
                        *c = Cached::new(segment, truncations);
                    }
                })
                .or_insert_with(|| Cached::new(segment, truncations));
            if needed.largest_timestamp {
                let value = match cached.largest_timestamp_ms {
                    Some(v) => v,
                    None => *cached
                        .largest_timestamp_ms
                        .insert(segment.largest_timestamp()?),
                };
                stats[i].largest_timestamp_ms = value;
            }
            if needed.first_batch_timestamp {
                let value = match cached.first_batch_timestamp_ms {
                    Some(v) => v,
                    None => *cached
                        .first_batch_timestamp_ms
                        .insert(first_batch_timestamp(segment)?),
                };
                stats[i].first_batch_timestamp_ms = value;
            }
        }
        Ok(stats)
    }
}

/// Fills the index entry bytes of `stats[..n]` (the segments a round groups).
pub(crate) fn fill_index_bytes(
    segments: &[(i64, Arc<Segment>)],
    stats: &mut [SegmentStat],
    n: usize,
) {
    for ((_, segment), stat) in segments.iter().zip(stats.iter_mut()).take(n) {
        stat.offset_index_bytes = segment.offset_index_entries() as u64 * 8;
        stat.time_index_bytes = segment.time_index_entries() as u64 * 12;
    }
}

/// Kafka's `getFirstBatchTimestamp`: the first batch's max timestamp, `i64::MAX` for an empty
/// segment.
fn first_batch_timestamp(segment: &Segment) -> Result<i64> {
    Ok(match segment.batch_headers(0).next() {
        Some(header) => header?.max_timestamp_ms,
        None => i64::MAX,
    })
}
