//! Named rules outside the cleaner (issue #25's divergences of the log's offsets): deliberate
//! differences between seglog and Kafka 4.4, each accepted only in exactly its form and named in
//! docs/format.md's "Deliberate differences" (listed in `compare::RULES`).

use crate::history::{Op, Step, TimestampTarget};
use crate::observe::Observation;

/// The name of the rule for Kafka's first unstable offset clamped to a log start in a gap.
pub const FIRST_UNSTABLE_AT_NEXT_BATCH: &str =
    "first-unstable-offset-at-next-batch-above-log-start";

/// The name of the rule for Kafka's MAX_TIMESTAMP answer below its log start.
pub const MAX_TIMESTAMP_BELOW_LOG_START: &str = "max-timestamp-below-log-start";

/// The name of the rule for a segment max timestamp Kafka forgets in a truncation.
pub const MAX_TIMESTAMP_FORGOTTEN: &str = "max-timestamp-of-a-segment-forgotten-by-a-truncation";

/// The name of the rule for a lookup by timestamp that Kafka makes past a segment whose max
/// timestamp it forgot in a truncation.
pub const LOOKUP_PAST_A_FORGOTTEN_MAX_TIMESTAMP: &str =
    "offset-for-timestamp-past-a-segment-whose-max-timestamp-kafka-forgot";

/// The name of the rule for Kafka's truncation that skips its replay after producer expiry;
/// the runner ends the history after it.
pub const TRUNCATION_REPLAY_SKIPPED: &str =
    "kafka-skips-the-replay-of-a-truncation-with-an-empty-producer-state";

/// Kafka 4.4's `UnifiedLog.rebuildProducerState` reloads the latest snapshot at or below the
/// truncation target and replays the batches after it, except when the producer state was
/// empty before (`isEmptyBeforeTruncation`), which `removeExpiredProducers` makes it in a log
/// that had producers: Kafka's rebuilt state is then the snapshot's alone (a transaction it
/// holds open stays open though a later marker decided it: second long run, seed 207103,
/// first unstable offset seglog none, Kafka 19; a transaction whose marker the truncation
/// removed is not open again: old long run, seed 105013, LSO seglog 2, Kafka 29; the producers
/// of the replayed part are missing: seed 208599). seglog replays (docs/format.md, "A
/// truncation after producer expiry replays from the snapshot"). Exactly: a truncation both
/// accepted, Kafka reporting that it skipped the replay, and the difference in the producer
/// state, the first unstable offset, the LSO or the read_committed fetch.
pub fn truncation_replay_skipped(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    matches!(step.op, Op::Truncate { .. })
        && kafka.outcome.skipped_truncation_replay
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.is_none()
        && (path.starts_with("state.producers")
            || path.starts_with("read_committed.")
            || matches!(path, "state.first_unstable" | "state.last_stable"))
}

/// When the log start is raised (DeleteRecords, retention, a reload) past the first offset of
/// an open transaction to an offset in a gap (no batch holds it: a follower's gap, or a
/// truncation inside a batch), Kafka's `UnifiedLog.maybeIncrementFirstUnstableOffset` clamps
/// the first unstable offset to the log start and converts it with
/// `maybeConvertToOffsetMetadata`, whose `LocalLog.read` answers the base offset of the first
/// batch at or above it (interop/kafka/README.md, Findings, K1's conversion; the log end when
/// no batch lies above, or the base of an empty segment before that batch), so Kafka's first
/// unstable offset and LSO lie above its own log start; seglog's are the log start. No record
/// lies between the two, so both serve the same records. The gap form of
/// `first-unstable-offset-at-batch-base-below-log-start`. Exactly: the same log start and high
/// watermark, Kafka's own `ProducerStateManager.firstUnstableOffset()` below the log start,
/// seglog's first unstable offset the log start, Kafka's above it and either the base of the
/// first batch at or above the log start (seglog reports it) or a segment base below that
/// one, and each side's LSO `min(its first unstable, HW)`. The high watermarks may differ
/// only as `high-watermark-in-a-gap` accepts (old long run, seed 105013: log start 2 in the
/// gap before a follower batch at 29, the high watermark 2 there too; after a no-op truncation
/// Kafka's read raised its high watermark to 29: LSO seglog 2, Kafka 29).
pub fn first_unstable_at_next_batch(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let (a, b) = (&ours.state, &kafka.state);
    let start = a.log_start;
    let lso = |first: Option<i64>, hw: i64| first.map_or(hw, |f| f.min(hw));
    let raised = b.first_unstable.is_some_and(|k| {
        ours.batch_base_at_log_start
            .is_some_and(|next| start < k && k <= next && (k == next || b.segments.contains(&k)))
    });
    matches!(path, "state.first_unstable" | "state.last_stable")
        && a.log_start == b.log_start
        && (a.high_watermark == b.high_watermark
            || crate::rules::high_watermark_in_a_gap(step, "state.high_watermark", ours, kafka))
        && kafka.fresh_first_unstable.is_some_and(|f| f < start)
        && a.first_unstable == Some(start)
        && raised
        && a.last_stable == lso(a.first_unstable, a.high_watermark)
        && b.last_stable == lso(b.first_unstable, b.high_watermark)
}

/// The name of the rule for time retention of a segment whose max timestamp Kafka forgot.
pub const RETENTION_OF_FORGOTTEN_MAX_TIMESTAMP: &str =
    "time-retention-of-a-segment-whose-max-timestamp-kafka-forgot";

/// Time retention of a segment whose max timestamp Kafka 4.4 forgot (the truncation of
/// `max-timestamp-of-a-segment-forgotten-by-a-truncation`): Kafka's `deleteRetentionMsBreachedSegments`
/// takes `LogSegment.largestTimestamp()`, which for a `maxTimestampSoFar()` of -1 is the file's
/// mtime (just touched by the truncation), so Kafka keeps a segment whose records are all older
/// than `retention.ms` and, as retention stops at the first segment it keeps, every segment after
/// it; seglog takes the records' timestamps and deletes them. Exactly: a retention pass with
/// `retention.ms` set, both accepted, seglog's log start above Kafka's, Kafka's first segment one
/// that its driver reports as kept only by the forgotten timestamp (its batches' largest timestamp
/// breaches `retention.ms`), and every segment seglog has either one of Kafka's or a new one at
/// the log end (all deleted, rolled). The runner then has Kafka delete the same segments (a roll
/// when seglog rolled, DeleteRecords to seglog's log start and a pass of the log-start rule) and
/// compares every field of the step against Kafka's state after that.
pub fn retention_of_forgotten_max_timestamp(
    step: &Step,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let Op::Retention { retention_ms, .. } = step.op else {
        return false;
    };
    let (a, b) = (&ours.state, &kafka.state);
    retention_ms >= 0
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.is_none()
        && a.log_start > b.log_start
        && b.segments.first().is_some_and(|first| {
            kafka
                .outcome
                .retention_kept_by_stale_max_timestamp
                .contains(first)
        })
        && a.segments
            .iter()
            .all(|base| b.segments.contains(base) || *base == a.log_end)
}

/// The name of the rule for a follower batch overlapping the previous one.
pub const OVERLAPPING_FOLLOWER_BATCH: &str = "overlapping-follower-batch-refused";

/// A follower batch that starts at or below the previous batch's last offset and ends above it
/// (interop/kafka/README.md, Findings, S2): Kafka 4.4's `analyzeAndValidateRecords` checks only
/// that last offsets increase and writes it; seglog refuses it (`OverlappingBatch`), as its
/// load would take it for damage. A legacy compressed wrapper (whose first offset is its first
/// inner message's) is refused by seglog also when its inner offsets begin below the log end:
/// Kafka checks the first batch against the log end by its last offset only, for a wrapper the
/// only one its header has (long-run seeds 100360, 100097: an offset twice in Kafka's log).
/// Exactly: a follower append, seglog refused with `OverlappingBatch` and its log end
/// unchanged, Kafka accepted, and the append holds a v2 batch or legacy wrapper whose base
/// offset is at or below the previous batch's last offset while it ends above it, or its first
/// batch is a legacy compressed wrapper that begins below the log end and ends above it. The
/// runner then truncates Kafka's log back to seglog's log end and compares every field of the
/// step against Kafka's state after that.
pub fn overlapping_follower_batch(step: &Step, ours: &Observation, kafka: &Observation) -> bool {
    let Op::Follower { batches, .. } = &step.op else {
        return false;
    };
    let compressed_legacy =
        |b: &crate::history::FollowerBatch| b.magic < 2 && b.codec != crate::history::Codec::None;
    let within = batches.windows(2).any(|pair| {
        let (previous, batch) = (&pair[0], &pair[1]);
        let uncompressed_legacy = batch.magic < 2 && !compressed_legacy(batch);
        !uncompressed_legacy
            && batch.base_offset < previous.next_offset()
            && batch.next_offset() > previous.next_offset()
    });
    let log_end = ours.state.log_end;
    let over_the_log = batches.first().is_some_and(|first| {
        compressed_legacy(first) && first.base_offset < log_end && first.next_offset() > log_end
    });
    (within || over_the_log)
        && ours.outcome.refused.as_deref() == Some("seglog:OverlappingBatch")
        && kafka.outcome.refused.is_none()
        && kafka.state.log_end > ours.state.log_end
}

/// The epoch entries of `before` (the cache before an overlapping follower append Kafka took
/// back by a truncation) that are missing from `after` (its cache after the truncation), when
/// `after` is a prefix of `before`: the entries the append's v0/v1 batch (`clearAndFlush`) or
/// lower epoch (`assign` dropping higher entries) removed, to be assigned again in order. Empty
/// when nothing is missing or `after` is no prefix (then the step compares as it is).
pub fn epoch_entries_to_restore(before: &[(i32, i64)], after: &[(i32, i64)]) -> Vec<(i32, i64)> {
    if after.len() < before.len() && before.starts_with(after) {
        before[after.len()..].to_vec()
    } else {
        Vec::new()
    }
}

/// The name of the rule for several v2 batches in one leader append.
pub const SEVERAL_LEADER_BATCHES: &str = "several-batches-in-one-leader-append";

/// Several v2 batches in one leader append (docs/format.md, "Several batches in one leader
/// append"): Kafka 4.4's `LogValidator` refuses them (`InvalidRecordException`: a produce
/// request carries one batch per partition), seglog takes them as one bulk append whose offsets
/// run on as in successive Kafka appends. Exactly: a leader append of two or more batches,
/// seglog accepted it, Kafka refused it with `InvalidRecordException` and its log end did not
/// move. The runner then appends the batches to Kafka one by one and compares every field of
/// the step (the outcome: the first offset of the first append, the last of the last) against
/// Kafka's state after that.
pub fn several_leader_batches(step: &Step, ours: &Observation, kafka: &Observation) -> bool {
    let Op::LeaderBatches { batches } = &step.op else {
        return false;
    };
    batches.len() >= 2
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.as_deref() == Some("InvalidRecordException")
        && kafka.state.log_end < ours.state.log_end
}

/// The name of the rule for a v2 follower batch without a leader epoch.
pub const FOLLOWER_BATCH_WITHOUT_EPOCH: &str = "v2-follower-batch-without-a-leader-epoch";

/// A follower append whose first batch is v2 with no leader epoch (`partitionLeaderEpoch` -1):
/// Kafka 4.4's `UnifiedLog.append` assigns every v2 batch's epoch, and
/// `LeaderEpochFileCache.assign` throws `IllegalArgumentException` for a negative one (nothing is
/// written, and no epoch is assigned since it is the first batch); seglog writes the batch and leaves
/// its epoch cache alone (docs/format.md, "Leader-epoch checkpoint"). Exactly: a follower append
/// whose first batch is v2 with a negative leader epoch, seglog accepted it, Kafka refused it
/// with `IllegalArgumentException` and its log end is below seglog's. The runner then truncates
/// seglog's log back to Kafka's log end and compares the step against seglog's state after
/// that, with Kafka's outcome.
pub fn follower_batch_without_epoch(step: &Step, ours: &Observation, kafka: &Observation) -> bool {
    let Op::Follower { batches, .. } = &step.op else {
        return false;
    };
    batches
        .first()
        .is_some_and(|b| b.magic >= 2 && b.leader_epoch < 0)
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.as_deref() == Some("IllegalArgumentException")
        && kafka.state.log_end < ours.state.log_end
}

/// Whether `step` is a MAX_TIMESTAMP lookup and `path` lies in its answer.
fn max_timestamp_lookup(step: &Step, path: &str) -> bool {
    matches!(
        step.op,
        Op::OffsetForTimestamp {
            target: TimestampTarget::MaxTimestamp
        }
    ) && path.starts_with("outcome.timestamp_lookup")
}

/// MAX_TIMESTAMP when the record holding the largest timestamp lies below the log start (raised
/// by DeleteRecords or retention inside its segment): Kafka 4.4's `fetchOffsetByTimestamp`
/// (`-3` branch) picks the segment by `maxTimestampSoFar()`, then the first batch whose max
/// timestamp is that one and its `offsetOfMaxTimestamp()`, whatever the log start (a fetch
/// there is out of range); seglog answers only records at or above the log start: the first one
/// that holds the largest timestamp (several records share it when they were written in one
/// millisecond: second long run, seeds 206907 and 206257), none when no such record is left.
/// Exactly: a MAX_TIMESTAMP lookup, the same log start and log end, Kafka's answer below the log
/// start, seglog none or an offset from the log start to the log end carrying Kafka's
/// timestamp, neither refused. (seglog's leader epoch is its record's batch's, which may be
/// another batch than Kafka's.)
pub fn max_timestamp_below_log_start(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let Some(theirs) = kafka.outcome.timestamp_lookup else {
        return false;
    };
    max_timestamp_lookup(step, path)
        && ours.state.log_start == kafka.state.log_start
        && ours.state.log_end == kafka.state.log_end
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.is_none()
        && theirs.offset < kafka.state.log_start
        && ours.outcome.timestamp_lookup.is_none_or(|found| {
            found.timestamp == theirs.timestamp
                && (ours.state.log_start..ours.state.log_end).contains(&found.offset)
        })
}

/// MAX_TIMESTAMP after a truncation forgot a segment's max timestamp: after a reopen a
/// segment's `maxTimestampAndOffsetSoFar` is read lazily from its time index's last entry, and
/// Kafka 4.4's `LogSegment.truncateTo` truncates the time index before it reads it, so when the
/// truncation removes the batch of that entry (the one `prepareActiveSegmentForClose` wrote)
/// the segment's `maxTimestampSoFar()` is -1 and stays so (it is recomputed from the batches
/// only when it was known); the `-3` search then picks an earlier segment and answers a record
/// with a lower timestamp. seglog keeps each segment's largest timestamp from its batches and
/// answers the record with the largest timestamp. Exactly: a MAX_TIMESTAMP lookup, Kafka
/// reports a segment whose `maxTimestampSoFar()` is below its batches' largest max timestamp,
/// Kafka's answer (if any) has a lower timestamp than the largest one its batches hold, and
/// seglog's answer has exactly that largest timestamp.
pub fn max_timestamp_forgotten_by_truncation(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let Some(largest) = kafka.outcome.batches_max_timestamp else {
        return false;
    };
    max_timestamp_lookup(step, path)
        && kafka.outcome.max_timestamp_so_far_stale
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.is_none()
        && kafka
            .outcome
            .timestamp_lookup
            .is_none_or(|found| found.timestamp < largest)
        && ours
            .outcome
            .timestamp_lookup
            .is_some_and(|found| found.timestamp == largest)
}

/// A lookup by timestamp after a truncation forgot a segment's max timestamp (the Kafka 4.4
/// behaviour of `max_timestamp_forgotten_by_truncation`: `LogSegment.truncateTo` after a reopen
/// leaves `maxTimestampSoFar()` at -1). `searchOffsetInLocalLog` skips every segment whose
/// `largestTimestamp()` is below the target, and for such a segment that is the file's mtime,
/// which follows the wall clock, not the history's held clock: when the truncation touched the
/// file earlier than the target (a fast replay; long-run seed 305431: target 1352 ms before the
/// step's clock), Kafka skips the segment that holds the answer and searches the later ones
/// (none: no answer); seglog goes by the records' timestamps. Exactly: a lookup by a target
/// timestamp, Kafka reports a segment its search skipped whose batches reach the target while
/// its `maxTimestampSoFar()` is below their largest timestamp, seglog's answer lies in that
/// segment, and Kafka's answer is none or lies at or after that segment's next offset.
pub fn lookup_past_a_forgotten_max_timestamp(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let Some([base, next]) = kafka.outcome.skipped_stale_segment else {
        return false;
    };
    matches!(
        step.op,
        Op::OffsetForTimestamp {
            target: TimestampTarget::AgoMs(_)
        }
    ) && path.starts_with("outcome.timestamp_lookup")
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.is_none()
        && ours
            .outcome
            .timestamp_lookup
            .as_ref()
            .is_some_and(|found| (base..next).contains(&found.offset))
        && kafka
            .outcome
            .timestamp_lookup
            .as_ref()
            .is_none_or(|found| found.offset >= next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{State, TimestampLookup};

    fn step() -> Step {
        Step {
            op: Op::Roll,
            fetch_offset: 0,
        }
    }

    #[test]
    fn a_truncation_kafka_did_not_replay_is_explained_only_in_its_form() {
        // Second long run, seed 207103: after producer expiry, truncateTo(52) reloaded the
        // snapshot at 42 (transactions 19 and 38 open) and replayed none of their ABORTs.
        let truncate = Step {
            op: Op::Truncate { offset: 52 },
            fetch_offset: 28,
        };
        let ours = Observation {
            state: State {
                log_end: 52,
                high_watermark: 52,
                first_unstable: None,
                last_stable: 52,
                ..State::default()
            },
            ..Observation::default()
        };
        let mut kafka = ours.clone();
        kafka.state.first_unstable = Some(19);
        kafka.state.last_stable = 19;
        kafka.outcome.skipped_truncation_replay = true;
        for path in [
            "state.first_unstable",
            "state.last_stable",
            "state.producers",
            "state.producers[0].txn_first_offset",
            "read_committed.batches",
        ] {
            assert!(
                truncation_replay_skipped(&truncate, path, &ours, &kafka),
                "{path}"
            );
        }
        // Another field, another step, or a truncation Kafka replayed: not this form.
        assert!(!truncation_replay_skipped(
            &truncate,
            "state.log_end",
            &ours,
            &kafka
        ));
        assert!(!truncation_replay_skipped(
            &step(),
            "state.first_unstable",
            &ours,
            &kafka
        ));
        let mut replayed = kafka.clone();
        replayed.outcome.skipped_truncation_replay = false;
        assert!(!truncation_replay_skipped(
            &truncate,
            "state.first_unstable",
            &ours,
            &replayed
        ));
    }

    #[test]
    fn a_first_unstable_offset_raised_to_the_next_batch_is_explained_only_in_its_form() {
        // Divergence 127 of the 1000-history run: a transaction at 0..=2, a follower batch at
        // 14 after a gap, the high watermark 16, DeleteRecords to 13 (in the gap).
        let ours = Observation {
            state: State {
                log_start: 13,
                log_end: 15,
                high_watermark: 15,
                first_unstable: Some(13),
                last_stable: 13,
                segments: vec![0],
                ..State::default()
            },
            batch_base_at_log_start: Some(14),
            ..Observation::default()
        };
        let mut kafka = ours.clone();
        kafka.state.first_unstable = Some(14);
        kafka.state.last_stable = 14;
        kafka.fresh_first_unstable = Some(0);
        for path in ["state.first_unstable", "state.last_stable"] {
            assert!(
                first_unstable_at_next_batch(&step(), path, &ours, &kafka),
                "{path}"
            );
        }
        assert!(!first_unstable_at_next_batch(
            &step(),
            "state.log_start",
            &ours,
            &kafka
        ));
        // Beside Kafka's high watermark raised in the same gap (seed 105013), also the LSO.
        let mut ours_gap = ours.clone();
        ours_gap.state.high_watermark = 13;
        ours_gap.state.last_stable = 13;
        ours_gap.batch_base_at_hw = Some(14);
        let mut kafka_gap = kafka.clone();
        kafka_gap.state.high_watermark = 14;
        kafka_gap.state.last_stable = 14;
        assert!(first_unstable_at_next_batch(
            &step(),
            "state.last_stable",
            &ours_gap,
            &kafka_gap
        ));
        // A high watermark raised past the gap: no.
        kafka_gap.state.high_watermark = 15;
        assert!(!first_unstable_at_next_batch(
            &step(),
            "state.last_stable",
            &ours_gap,
            &kafka_gap
        ));
        // Past the next batch: no.
        let mut past = kafka.clone();
        past.state.first_unstable = Some(15);
        past.state.last_stable = 15;
        assert!(!first_unstable_at_next_batch(
            &step(),
            "state.first_unstable",
            &ours,
            &past
        ));
        // Kafka's producer state without a transaction below the log start: no.
        let mut none = kafka.clone();
        none.fresh_first_unstable = Some(14);
        assert!(!first_unstable_at_next_batch(
            &step(),
            "state.first_unstable",
            &ours,
            &none
        ));
        // seglog not at the log start: no.
        let mut other = ours.clone();
        other.state.first_unstable = Some(14);
        other.state.last_stable = 14;
        assert!(!first_unstable_at_next_batch(
            &step(),
            "state.first_unstable",
            &other,
            &kafka
        ));
    }

    fn max_timestamp() -> Step {
        Step {
            op: Op::OffsetForTimestamp {
                target: TimestampTarget::MaxTimestamp,
            },
            fetch_offset: 0,
        }
    }

    fn answer(timestamp: i64, offset: i64, leader_epoch: i32) -> Option<TimestampLookup> {
        Some(TimestampLookup {
            timestamp,
            offset,
            leader_epoch: Some(leader_epoch),
        })
    }

    #[test]
    fn a_max_timestamp_answer_below_the_log_start_is_explained_only_in_its_form() {
        // Divergence 302: one batch at 27, DeleteRecords to 28 (the log end).
        let mut ours = Observation::default();
        ours.state.log_start = 28;
        ours.state.log_end = 28;
        let mut kafka = ours.clone();
        kafka.outcome.timestamp_lookup = answer(1000, 27, 0);
        let path = "outcome.timestamp_lookup";
        assert!(max_timestamp_below_log_start(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
        assert!(!max_timestamp_below_log_start(&step(), path, &ours, &kafka));
        // At or above the log start: no.
        kafka.outcome.timestamp_lookup = answer(1000, 28, 0);
        assert!(!max_timestamp_below_log_start(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
        // seglog answering a record with another timestamp: no.
        kafka.outcome.timestamp_lookup = answer(1000, 27, 0);
        ours.outcome.timestamp_lookup = answer(900, 29, 0);
        assert!(!max_timestamp_below_log_start(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
    }

    #[test]
    fn a_max_timestamp_answer_below_the_log_start_beside_seglogs_later_record_of_that_timestamp() {
        // Seed 206907 of the second long run: three records of one millisecond at 0-2,
        // DeleteRecords to 2; Kafka answers the batch's first record (0), seglog the first one
        // at or above the log start holding the same timestamp (2).
        let mut ours = Observation::default();
        ours.state.log_start = 2;
        ours.state.log_end = 3;
        let mut kafka = ours.clone();
        kafka.outcome.timestamp_lookup = answer(1000, 0, 0);
        ours.outcome.timestamp_lookup = answer(1000, 2, 0);
        let path = "outcome.timestamp_lookup.offset";
        assert!(max_timestamp_below_log_start(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
        // Another timestamp, or seglog's offset below the log start or at the log end: no.
        for (timestamp, offset) in [(999, 2), (1000, 1), (1000, 3)] {
            ours.outcome.timestamp_lookup = answer(timestamp, offset, 0);
            assert!(!max_timestamp_below_log_start(
                &max_timestamp(),
                path,
                &ours,
                &kafka
            ));
        }
        // Kafka's answer at or above the log start: no (the same form seglog must match).
        ours.outcome.timestamp_lookup = answer(1000, 2, 0);
        kafka.outcome.timestamp_lookup = answer(1000, 2, 0);
        assert!(!max_timestamp_below_log_start(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
        // Different log ends: no.
        kafka.outcome.timestamp_lookup = answer(1000, 0, 0);
        kafka.state.log_end = 4;
        assert!(!max_timestamp_below_log_start(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
    }

    #[test]
    fn a_lookup_past_a_segment_whose_max_timestamp_kafka_forgot_is_explained_only_in_its_form() {
        // Long-run seed 305431: segment 51..58 after a reopen and truncateTo(58); Kafka skipped
        // it (maxTimestampSoFar() -1, the file's mtime below the target) and answered none,
        // seglog answers 51.
        let lookup = Step {
            op: Op::OffsetForTimestamp {
                target: TimestampTarget::AgoMs(1352),
            },
            fetch_offset: 55,
        };
        let mut ours = Observation::default();
        ours.outcome.timestamp_lookup = answer(1_796_232_932_162, 51, 0);
        let mut kafka = Observation::default();
        kafka.outcome.skipped_stale_segment = Some([51, 58]);
        let path = "outcome.timestamp_lookup";
        assert!(lookup_past_a_forgotten_max_timestamp(
            &lookup, path, &ours, &kafka
        ));
        // Kafka's answer in a later segment: also this form.
        let mut later = kafka.clone();
        later.outcome.timestamp_lookup = answer(1_796_232_932_900, 58, 0);
        assert!(lookup_past_a_forgotten_max_timestamp(
            &lookup, path, &ours, &later
        ));
        // No segment skipped for a forgotten max timestamp: no.
        let mut fresh = kafka.clone();
        fresh.outcome.skipped_stale_segment = None;
        assert!(!lookup_past_a_forgotten_max_timestamp(
            &lookup, path, &ours, &fresh
        ));
        // seglog's answer outside the skipped segment: no.
        let mut elsewhere = ours.clone();
        elsewhere.outcome.timestamp_lookup = answer(1_796_232_932_162, 58, 0);
        assert!(!lookup_past_a_forgotten_max_timestamp(
            &lookup, path, &elsewhere, &kafka
        ));
        // Kafka's answer inside the skipped segment: no.
        let mut inside = kafka.clone();
        inside.outcome.timestamp_lookup = answer(1_796_232_932_162, 52, 0);
        assert!(!lookup_past_a_forgotten_max_timestamp(
            &lookup, path, &ours, &inside
        ));
        // MAX_TIMESTAMP is the other rule's: no.
        assert!(!lookup_past_a_forgotten_max_timestamp(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
    }

    #[test]
    fn a_forgotten_segment_max_timestamp_is_explained_only_in_its_form() {
        // d2-max-timestamp-forgotten-seed451: Kafka answers the marker at 0 (ts 422), seglog the
        // gzip batch at 4 (ts 578), the largest timestamp Kafka's batches hold.
        let mut ours = Observation::default();
        ours.outcome.timestamp_lookup = answer(578, 4, 3);
        let mut kafka = Observation::default();
        kafka.outcome.timestamp_lookup = answer(422, 0, 0);
        kafka.outcome.batches_max_timestamp = Some(578);
        kafka.outcome.max_timestamp_so_far_stale = true;
        let path = "outcome.timestamp_lookup.leader_epoch";
        assert!(max_timestamp_forgotten_by_truncation(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
        // No stale segment in Kafka: no.
        let mut fresh = kafka.clone();
        fresh.outcome.max_timestamp_so_far_stale = false;
        assert!(!max_timestamp_forgotten_by_truncation(
            &max_timestamp(),
            path,
            &ours,
            &fresh
        ));
        // seglog's answer not the largest timestamp: no.
        ours.outcome.timestamp_lookup = answer(577, 4, 3);
        assert!(!max_timestamp_forgotten_by_truncation(
            &max_timestamp(),
            path,
            &ours,
            &kafka
        ));
    }

    #[test]
    fn retention_kept_by_a_forgotten_max_timestamp_is_followed_only_in_its_form() {
        // d3-retention-forgotten-max-timestamp-a (open-retention-log-start-a): one segment at 0 (batch 0..=1 older than retention.ms),
        // its max timestamp forgotten by Kafka's truncation after a reopen; seglog deletes it
        // and rolls at 2.
        let retention = Step {
            op: Op::Retention {
                retention_ms: 360,
                retention_bytes: 5532,
            },
            fetch_offset: 1,
        };
        let mut ours = Observation::default();
        ours.state.log_start = 2;
        ours.state.log_end = 2;
        ours.state.segments = vec![2];
        let mut kafka = Observation::default();
        kafka.state.log_end = 2;
        kafka.state.segments = vec![0];
        kafka.outcome.retention_kept_by_stale_max_timestamp = vec![0];
        assert!(retention_of_forgotten_max_timestamp(
            &retention, &ours, &kafka
        ));
        assert!(!retention_of_forgotten_max_timestamp(
            &step(),
            &ours,
            &kafka
        ));
        // Kafka kept its first segment for another reason: no.
        let mut other = kafka.clone();
        other.outcome.retention_kept_by_stale_max_timestamp = vec![];
        assert!(!retention_of_forgotten_max_timestamp(
            &retention, &ours, &other
        ));
        // seglog with a segment Kafka does not have below its log end: no.
        let mut odd = ours.clone();
        odd.state.segments = vec![1, 2];
        assert!(!retention_of_forgotten_max_timestamp(
            &retention, &odd, &kafka
        ));
    }

    #[test]
    fn an_overlapping_follower_batch_is_followed_only_in_its_form() {
        let batch = |base_offset: i64, records: u8| crate::history::FollowerBatch {
            base_offset,
            magic: 2,
            leader_epoch: 0,
            records,
            codec: crate::history::Codec::None,
            producer_id: -1,
            epoch: -1,
            base_sequence: -1,
            transactional: false,
            marker: None,
        };
        let follower = |batches| Step {
            op: Op::Follower {
                batches,
                leader_epoch: None,
            },
            fetch_offset: 0,
        };
        let mut ours = Observation::default();
        ours.state.log_end = 6;
        ours.outcome.refused = Some("seglog:OverlappingBatch".into());
        let mut kafka = Observation::default();
        kafka.state.log_end = 9;
        let overlapping = follower(vec![batch(6, 1), batch(6, 3)]);
        assert!(overlapping_follower_batch(&overlapping, &ours, &kafka));
        // Ending at the previous batch's last offset: not this form (both refuse it).
        let inside = follower(vec![batch(6, 2), batch(6, 2)]);
        assert!(!overlapping_follower_batch(&inside, &ours, &kafka));
        // seglog refusing for another reason: no.
        let mut other = ours.clone();
        other.outcome.refused = Some("OffsetsOutOfOrderException".into());
        assert!(!overlapping_follower_batch(&overlapping, &other, &kafka));
        // A gzip wrapper whose inner offsets 5..=7 begin below the log end 6 (long-run seed
        // 100360's form), alone or after a batch it overlaps.
        let wrapper = |base_offset: i64| crate::history::FollowerBatch {
            magic: 1,
            codec: crate::history::Codec::Gzip,
            leader_epoch: -1,
            ..batch(base_offset, 3)
        };
        assert!(overlapping_follower_batch(
            &follower(vec![wrapper(5)]),
            &ours,
            &kafka
        ));
        assert!(overlapping_follower_batch(
            &follower(vec![batch(6, 2), wrapper(7)]),
            &ours,
            &kafka
        ));
        // From the log end on, it overlaps nothing.
        assert!(!overlapping_follower_batch(
            &follower(vec![wrapper(6)]),
            &ours,
            &kafka
        ));
    }

    #[test]
    fn only_the_entries_an_overlapping_append_removed_are_restored() {
        let before = [(0, 0), (1, 47)];
        // Cleared by a v0 batch, then truncated: both come back, in order.
        assert_eq!(
            epoch_entries_to_restore(&before, &[]),
            vec![(0, 0), (1, 47)]
        );
        // A lower epoch dropped the higher entry.
        assert_eq!(epoch_entries_to_restore(&before, &[(0, 0)]), vec![(1, 47)]);
        // Nothing missing, or not a prefix: nothing is assigned.
        assert!(epoch_entries_to_restore(&before, &before).is_empty());
        assert!(epoch_entries_to_restore(&before, &[(2, 50)]).is_empty());
    }

    #[test]
    fn several_leader_batches_are_followed_only_in_their_form() {
        let plain = crate::history::TimedBatch {
            batch: crate::history::BatchSpec {
                producer_id: -1,
                epoch: -1,
                base_sequence: -1,
                transactional: false,
                records: 1,
                codec: crate::history::Codec::None,
                kind: crate::history::AppendKind::Plain,
            },
            timestamp_offsets_ms: vec![0],
        };
        let append = |n: usize| Step {
            op: Op::LeaderBatches {
                batches: vec![plain.clone(); n],
            },
            fetch_offset: 0,
        };
        let mut ours = Observation::default();
        ours.state.log_end = 5;
        ours.outcome.first_offset = Some(3);
        ours.outcome.last_offset = Some(4);
        let mut kafka = Observation::default();
        kafka.state.log_end = 3;
        kafka.outcome.refused = Some("InvalidRecordException".into());
        assert!(several_leader_batches(&append(2), &ours, &kafka));
        // One batch: Kafka's refusal is another matter.
        assert!(!several_leader_batches(&append(1), &ours, &kafka));
        // Kafka refusing for another reason: no.
        let mut other = kafka.clone();
        other.outcome.refused = Some("InvalidTimestampException".into());
        assert!(!several_leader_batches(&append(2), &ours, &other));
    }

    #[test]
    fn a_follower_batch_without_an_epoch_is_undone_only_in_its_form() {
        let batch = |leader_epoch: i32| crate::history::FollowerBatch {
            base_offset: 4,
            magic: 2,
            leader_epoch,
            records: 2,
            codec: crate::history::Codec::None,
            producer_id: -1,
            epoch: -1,
            base_sequence: -1,
            transactional: false,
            marker: None,
        };
        let follower = |leader_epoch| Step {
            op: Op::Follower {
                batches: vec![batch(leader_epoch)],
                leader_epoch: None,
            },
            fetch_offset: 0,
        };
        let mut ours = Observation::default();
        ours.state.log_end = 6;
        let mut kafka = Observation::default();
        kafka.state.log_end = 4;
        kafka.outcome.refused = Some("IllegalArgumentException".into());
        assert!(follower_batch_without_epoch(&follower(-1), &ours, &kafka));
        // A batch with an epoch: no.
        assert!(!follower_batch_without_epoch(&follower(0), &ours, &kafka));
        // Kafka refusing for another reason: no.
        kafka.outcome.refused = Some("OffsetsOutOfOrderException".into());
        assert!(!follower_batch_without_epoch(&follower(-1), &ours, &kafka));
    }
}
