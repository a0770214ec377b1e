//! The named rules of part B (follower appends, leader epochs, truncation inside a batch):
//! deliberate differences between seglog and Kafka 4.4, each accepted only in exactly its form
//! and named in docs/format.md's "Deliberate differences" (listed in `compare::RULES`).

use crate::history::{Op, Step};
use crate::observe::Observation;

/// The rule after which the runner assigns Kafka's new epoch entry in seglog's cache too.
pub const EPOCH_BEFORE_PRODUCER_CHECKS: &str = "no-epoch-entry-for-append-that-writes-nothing";

/// The rule after which the runner raises seglog's high watermark to Kafka's.
pub const HIGH_WATERMARK_IN_A_GAP: &str = "high-watermark-in-a-gap-rises-to-the-next-batch";

/// The rule after which the runner rolls Kafka's log too.
pub const TRUNCATION_ROLLS_AT_TARGET: &str = "truncation-inside-a-batch-rolls-at-the-target";

/// Kafka's `UnifiedLog.append` assigns each batch's epoch start (`assignEpochStartOffset`)
/// before its producer-state checks, so a leader append (or marker) then refused or answered
/// as a duplicate leaves an entry (its epoch, the log end) in Kafka's cache; seglog assigns an
/// epoch only with the batches it writes. Exactly this form: a leader append or marker, the
/// same outcome on both sides, nothing written (the log end did not move), and Kafka's entries
/// are seglog's after `assign(epoch, log end)` (entries with an epoch at or above it, or
/// starting at or above the log end, dropped from the end, then the new entry).
pub fn epoch_before_producer_checks(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let leader_append = matches!(
        step.op,
        Op::Append(_) | Op::Marker { .. } | Op::TxnMarker { .. } | Op::LeaderBatches { .. }
    );
    let wrote_nothing = ours.outcome.refused.is_some()
        || ours
            .outcome
            .first_offset
            .is_some_and(|f| f < ours.state.log_end);
    let Some(&(epoch, start)) = kafka.state.leader_epochs.last() else {
        return false;
    };
    path.starts_with("state.leader_epochs")
        && leader_append
        && wrote_nothing
        && ours.outcome.refused == kafka.outcome.refused
        && ours.outcome.first_offset == kafka.outcome.first_offset
        && ours.state.log_end == kafka.state.log_end
        && start == ours.state.log_end
        && kafka.state.leader_epochs == assign(&ours.state.leader_epochs, epoch, start)
}

/// Kafka's `LeaderEpochFileCache.assign` of (`epoch`, `start`) to `entries`.
pub fn assign(entries: &[(i32, i64)], epoch: i32, start: i64) -> Vec<(i32, i64)> {
    let mut out = entries.to_vec();
    if out.last().is_some_and(|(e, s)| *e == epoch && *s <= start) {
        return out;
    }
    while out.last().is_some_and(|(e, s)| *e >= epoch || *s >= start) {
        out.pop();
    }
    out.push((epoch, start));
    out
}

/// A truncation whose target lies inside a batch (or in a gap with no batch ending there):
/// both remove the whole batch and report the target as the new log end, and seglog then rolls
/// an empty segment at the target so that a reopen ends there too; Kafka keeps its segments
/// (its reopen ends at the last batch's next offset). Exactly this form: a truncation, both
/// accepted, both log ends the target, and seglog's segments are Kafka's plus one at the
/// target, above Kafka's last. The runner then rolls Kafka's log, which creates exactly that
/// segment (`LocalLog.roll` at the log end; Kafka's empty active segment below it stays, as
/// seglog's does), so the rest of the history compares one layout.
pub fn truncation_rolls_at_target(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let Op::Truncate { offset } = step.op else {
        return false;
    };
    let mut expected = kafka.state.segments.clone();
    expected.push(offset);
    path == "state.segments"
        && ours.outcome.refused.is_none()
        && kafka.outcome.refused.is_none()
        && ours.state.log_end == offset
        && kafka.state.log_end == offset
        && kafka.state.segments.last().is_some_and(|b| *b < offset)
        && ours.state.segments == expected
}

/// Offset for timestamp across an empty segment (docs/format.md, "Offset for timestamp across
/// empty segments"; interop/kafka/README.md, Known disagreements 1): Kafka searches only the
/// first segment whose `largestTimestamp()` reaches the target, which for a segment without
/// batches is its file's mtime, and answers none when that one is empty; seglog skips segments
/// without records. Exactly: a lookup by timestamp, Kafka none after searching an empty
/// segment (it says so), seglog an answer.
pub fn lookup_past_an_empty_segment(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    matches!(
        step.op,
        Op::OffsetForTimestamp {
            target: crate::history::TimestampTarget::AgoMs(_)
        }
    ) && path == "outcome.timestamp_lookup"
        && kafka.outcome.searched_empty_segment
        && kafka.outcome.timestamp_lookup.is_none()
        && kafka.outcome.refused.is_none()
        && ours.outcome.timestamp_lookup.is_some()
}

/// Kafka's `searchOffsetInLocalLog` searches only the first segment whose `largestTimestamp()`
/// reaches the target and answers none when none of its records at or after the log start
/// does (its qualifying records lie below a raised log start); seglog goes on to the next
/// segments. Exactly: a lookup by timestamp, Kafka none, seglog an answer in a segment after
/// the one Kafka searched (at or above its next offset).
pub fn lookup_past_the_searched_segment(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    matches!(
        step.op,
        Op::OffsetForTimestamp {
            target: crate::history::TimestampTarget::AgoMs(_)
        }
    ) && path == "outcome.timestamp_lookup"
        && kafka.outcome.timestamp_lookup.is_none()
        && kafka.outcome.refused.is_none()
        && kafka.outcome.searched_segment_end.is_some_and(|end| {
            ours.outcome
                .timestamp_lookup
                .as_ref()
                .is_some_and(|found| found.offset >= end)
        })
}

/// Transactions a truncation's producer-state rebuild replays (interop/kafka/README.md,
/// Findings, K3): Kafka 4.4's `rebuildProducerState` replays the batches after the snapshot it
/// reloads, and every replayed transaction, also one whose marker lies below the high
/// watermark, stays in `ProducerStateManager.unreplicatedTxns` until the next
/// `onHighWatermarkUpdated` (`truncateTo` calls it only when the high watermark reaches the
/// new log end), so Kafka's first unstable offset and LSO go back to a transaction decided
/// long ago; seglog drops those at once (`remove_unreplicated_below`), which is Kafka's state
/// after its next high-watermark move. Exactly the form of `first-unstable-offset-not-cached`
/// with seglog's value equal to that settled one (`settled_first_unstable`, read from Kafka's
/// maps) instead of Kafka's current producer state's.
pub fn replayed_decided_transactions(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    if kafka.settled_first_unstable == kafka.fresh_first_unstable {
        return false;
    }
    let mut settled = kafka.clone();
    settled.fresh_first_unstable = kafka.settled_first_unstable;
    crate::compare::first_unstable_not_cached(step, path, ours, &settled)
}

/// A high watermark in a gap (interop/kafka/README.md, Findings, K1): Kafka 4.4's next
/// HIGH_WATERMARK read converts a message-offset-only high watermark with `LogSegment.read`,
/// whose metadata carries the base offset of the batch it found, so one in a gap (offsets no
/// batch holds, as a truncation inside a batch or a reopen over such a log leaves them) rises
/// to the next batch's base (to the log end when no batch lies above it), or to the base of
/// an empty segment before it (`LocalLog.read` moves on to the next segment's base); seglog
/// keeps the value set. No record lies between the two, so
/// both serve the same records. Exactly: Kafka's high watermark is above seglog's and is the
/// base of the first batch at or above seglog's (seglog reports it; the log end when there is
/// none) or a segment base below that; for the LSO, both first unstable
/// offsets equal (or Kafka's cached one stale as `first-unstable-offset-not-cached` accepts)
/// and each LSO is `min(first unstable, its high watermark)`. The runner then
/// raises seglog's high watermark to Kafka's.
pub fn high_watermark_in_a_gap(
    _: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let theirs = kafka.state.high_watermark;
    let raised = ours.batch_base_at_hw.is_some_and(|next| {
        theirs <= next && (theirs == next || kafka.state.segments.contains(&theirs))
    }) && ours.state.high_watermark < theirs;
    let lso = |first: Option<i64>, hw: i64| first.map_or(hw, |f| f.min(hw));
    match path {
        "state.high_watermark" => raised,
        "state.last_stable" => {
            // The same first unstable offset, or Kafka's cached one stale in exactly the form
            // of `first-unstable-offset-not-cached` (seglog's is Kafka's producer state's).
            raised
                && (ours.state.first_unstable == kafka.state.first_unstable
                    || (kafka.state.first_unstable != kafka.fresh_first_unstable
                        && ours.state.first_unstable == kafka.fresh_first_unstable))
                && ours.state.last_stable
                    == lso(ours.state.first_unstable, ours.state.high_watermark)
                && kafka.state.last_stable
                    == lso(kafka.state.first_unstable, kafka.state.high_watermark)
        }
        _ => false,
    }
}

/// The name of the rule for a read_committed fetch from a gap below Kafka's raised LSO.
pub const ABORTED_LIST_BELOW_A_RAISED_LSO: &str =
    "aborted-list-of-a-fetch-in-a-gap-below-kafkas-raised-lso";

/// K1's and D1's raised offsets seen by a read_committed fetch
/// (`k1-aborted-list-of-a-fetch-in-the-gap-seed3171.jsonl`; seed 100429 of the long run, D1's
/// form). Kafka 4.4's `UnifiedLog.read` reads up to `fetchLastStableOffsetMetadata`, an LSO
/// that lies at the next batch's base where seglog's lies in the gap before it: its high
/// watermark read first converts a high watermark in a gap to that base (K1,
/// `high_watermark_in_a_gap`; the state, read before the fetch, shows it only at the next
/// step), or its first unstable offset was clamped to a log start in a gap and converted to it
/// (D1, `first_unstable_at_next_batch`). A fetch from inside the gap then reads up to that base,
/// finds no batch, and `LocalLog.addAbortedTransactions` still lists the aborted transactions of
/// the segment from the fetch offset to its upper bound. seglog's fetch starts at or above its
/// LSO and answers no batch and no aborted transaction. A consumer applies a fetch's aborted
/// list to that fetch's batches only, so both answers read alike. Exactly: both sides return no
/// batches, seglog lists none and Kafka some, and the fetch offset lies at or above seglog's LSO
/// and below the LSO Kafka read with, which is the base of the next batch in one of the two
/// forms: K1 (the same high watermarks and LSOs, the LSO the high watermark, no first unstable
/// offset below the next batch, seglog's high watermark below the next batch's base) or D1 (the
/// state in exactly the form `first_unstable_at_next_batch` accepts).
pub fn aborted_list_below_a_raised_lso(
    step: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let (a, b) = (&ours.read_committed, &kafka.read_committed);
    let hw = ours.state.high_watermark;
    let k1 = ours.batch_base_at_hw.filter(|next| {
        *next > hw
            && kafka.state.high_watermark == hw
            && ours.state.last_stable == hw
            && kafka.state.last_stable == hw
            && ours.state.first_unstable.is_none_or(|f| f >= *next)
    });
    let d1 = crate::rules_log::first_unstable_at_next_batch(step, "state.last_stable", ours, kafka)
        .then_some(kafka.state.last_stable);
    let Some(kafka_lso) = k1.or(d1) else {
        return false;
    };
    path.starts_with("read_committed.aborted")
        && a.refused.is_none()
        && b.refused.is_none()
        && a.batches.as_deref() == Some(&[])
        && b.batches.as_deref() == Some(&[])
        && a.aborted.as_deref() == Some(&[])
        && b.aborted.as_ref().is_some_and(|list| !list.is_empty())
        && (ours.state.last_stable..kafka_lso).contains(&step.fetch_offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{AppendKind, BatchSpec, Codec};
    use crate::observe::State;

    fn observation(log_end: i64, segments: Vec<i64>, epochs: Vec<(i32, i64)>) -> Observation {
        Observation {
            state: State {
                log_end,
                segments,
                leader_epochs: epochs,
                ..State::default()
            },
            ..Observation::default()
        }
    }

    fn append() -> Step {
        Step {
            op: Op::Append(BatchSpec {
                producer_id: 1000,
                epoch: 0,
                base_sequence: 9,
                transactional: false,
                records: 1,
                codec: Codec::None,
                kind: AppendKind::OutOfOrder,
            }),
            fetch_offset: 0,
        }
    }

    #[test]
    fn an_aborted_list_of_a_fetch_below_kafkas_raised_lso_is_explained_only_in_its_forms() {
        use crate::observe::Fetch;
        // Seed 3171: a gap 0..6, the aborted transaction 6..=8 with its marker at 9, the
        // high watermark 0 after a reopen, read_committed from 1.
        let empty = |aborted: Vec<(i64, i64)>| Fetch {
            batches: Some(vec![]),
            aborted: Some(aborted),
            ..Fetch::default()
        };
        let mut ours = observation(10, vec![0], vec![(0, 6)]);
        ours.batch_base_at_hw = Some(6);
        ours.read_committed = empty(vec![]);
        let mut kafka = ours.clone();
        kafka.read_committed = empty(vec![(1001, 6)]);
        let step = |fetch_offset| Step {
            op: Op::Reopen,
            fetch_offset,
        };
        let path = "read_committed.aborted";
        let rule = aborted_list_below_a_raised_lso;
        assert!(rule(&step(1), path, &ours, &kafka));
        assert!(rule(&step(0), path, &ours, &kafka));
        // Not from the next batch on (Kafka would read it), nor on another field.
        assert!(!rule(&step(6), path, &ours, &kafka));
        assert!(!rule(&step(1), "read_committed.batches", &ours, &kafka));
        // Not when a batch was returned, seglog listed anything, or no gap lies above the
        // high watermark.
        let mut with_batch = kafka.clone();
        with_batch.read_committed.batches = Some(vec![(6, 8, false)]);
        assert!(!rule(&step(1), path, &ours, &with_batch));
        let mut listed = ours.clone();
        listed.read_committed = empty(vec![(1002, 3)]);
        assert!(!rule(&step(1), path, &listed, &kafka));
        let mut no_gap = ours.clone();
        no_gap.batch_base_at_hw = Some(0);
        assert!(!rule(&step(0), path, &no_gap, &kafka));
        // Not with an open transaction below the next batch (the LSO is not the high
        // watermark's conversion then).
        let mut open = ours.clone();
        open.state.first_unstable = Some(0);
        assert!(!rule(&step(1), path, &open, &kafka));
        // D1's form (seed 100429): log start 19 in a gap before the batch at 26, an open
        // transaction below it; seglog's first unstable offset and LSO 19, Kafka's 26.
        let mut ours = observation(39, vec![0, 31], vec![(0, 19)]);
        ours.state.log_start = 19;
        ours.state.high_watermark = 31;
        ours.state.first_unstable = Some(19);
        ours.state.last_stable = 19;
        ours.batch_base_at_log_start = Some(26);
        ours.read_committed = empty(vec![]);
        let mut kafka = ours.clone();
        kafka.state.first_unstable = Some(26);
        kafka.state.last_stable = 26;
        kafka.fresh_first_unstable = Some(0);
        kafka.read_committed = empty(vec![(1002, 0)]);
        assert!(rule(&step(20), path, &ours, &kafka));
        assert!(rule(&step(19), path, &ours, &kafka));
        assert!(!rule(&step(26), path, &ours, &kafka));
        // Not when Kafka's state is not D1's (its producer state's first unstable offset at or
        // above the log start).
        let mut not_d1 = kafka.clone();
        not_d1.fresh_first_unstable = Some(19);
        assert!(!rule(&step(20), path, &ours, &not_d1));
    }

    #[test]
    fn a_high_watermark_raised_in_a_gap_is_explained_only_in_its_form() {
        let mut ours = observation(12, vec![0, 4], vec![]);
        ours.batch_base_at_hw = Some(4);
        let mut kafka = ours.clone();
        kafka.state.high_watermark = 4;
        kafka.state.last_stable = 4;
        assert!(high_watermark_in_a_gap(
            &append(),
            "state.high_watermark",
            &ours,
            &kafka
        ));
        assert!(high_watermark_in_a_gap(
            &append(),
            "state.last_stable",
            &ours,
            &kafka
        ));
        // Past the next batch's base: no.
        kafka.state.high_watermark = 6;
        assert!(!high_watermark_in_a_gap(
            &append(),
            "state.high_watermark",
            &ours,
            &kafka
        ));
        // At an empty segment's base before the next batch: yes; elsewhere below it: no.
        ours.batch_base_at_hw = Some(17);
        kafka.state.segments = vec![0, 13];
        kafka.state.high_watermark = 13;
        assert!(high_watermark_in_a_gap(
            &append(),
            "state.high_watermark",
            &ours,
            &kafka
        ));
        kafka.state.high_watermark = 12;
        assert!(!high_watermark_in_a_gap(
            &append(),
            "state.high_watermark",
            &ours,
            &kafka
        ));
    }

    #[test]
    fn replayed_decided_transactions_are_explained_only_when_kafka_settles_on_seglogs_value() {
        // Kafka's producer state (and cache) name a decided transaction at 3; seglog none.
        let mut ours = observation(10, vec![0], vec![]);
        ours.state.high_watermark = 8;
        ours.state.last_stable = 8;
        let mut kafka = ours.clone();
        kafka.state.first_unstable = Some(3);
        kafka.state.last_stable = 3;
        kafka.fresh_first_unstable = Some(3);
        kafka.settled_first_unstable = None;
        for path in ["state.first_unstable", "state.last_stable"] {
            assert!(
                replayed_decided_transactions(&append(), path, &ours, &kafka),
                "{path}"
            );
        }
        // Kafka's state would still say 3 after its next high-watermark move: no.
        kafka.settled_first_unstable = Some(3);
        assert!(!replayed_decided_transactions(
            &append(),
            "state.first_unstable",
            &ours,
            &kafka
        ));
    }

    #[test]
    fn a_lookup_past_an_empty_segment_is_explained_only_when_kafka_searched_one() {
        let lookup = Step {
            op: Op::OffsetForTimestamp {
                target: crate::history::TimestampTarget::AgoMs(10),
            },
            fetch_offset: 0,
        };
        let mut ours = observation(10, vec![0, 4], vec![]);
        ours.outcome.timestamp_lookup = Some(crate::observe::TimestampLookup {
            timestamp: 5,
            offset: 4,
            leader_epoch: Some(0),
        });
        let mut kafka = observation(10, vec![0, 4], vec![]);
        kafka.outcome.searched_empty_segment = true;
        let path = "outcome.timestamp_lookup";
        assert!(lookup_past_an_empty_segment(&lookup, path, &ours, &kafka));
        kafka.outcome.searched_empty_segment = false;
        assert!(!lookup_past_an_empty_segment(&lookup, path, &ours, &kafka));
        // Past the searched segment: only an answer at or above its next offset.
        assert!(!lookup_past_the_searched_segment(
            &lookup, path, &ours, &kafka
        ));
        kafka.outcome.searched_segment_end = Some(4);
        assert!(lookup_past_the_searched_segment(
            &lookup, path, &ours, &kafka
        ));
        kafka.outcome.searched_segment_end = Some(8);
        assert!(!lookup_past_the_searched_segment(
            &lookup, path, &ours, &kafka
        ));
    }

    #[test]
    fn kafkas_assign_drops_non_monotonic_entries() {
        assert_eq!(assign(&[(0, 0), (3, 5)], 1, 9), vec![(0, 0), (1, 9)]);
        assert_eq!(assign(&[(0, 0), (3, 5)], 0, 9), vec![(0, 9)]);
        assert_eq!(assign(&[(2, 4)], 2, 9), vec![(2, 4)]);
        assert_eq!(assign(&[], 0, 9), vec![(0, 9)]);
    }

    #[test]
    fn an_epoch_entry_of_a_refused_append_is_explained_only_in_its_form() {
        let mut ours = observation(9, vec![0], vec![]);
        ours.outcome.refused = Some("OutOfOrderSequenceException".into());
        let mut kafka = ours.clone();
        kafka.state.leader_epochs = vec![(0, 9)];
        assert!(epoch_before_producer_checks(
            &append(),
            "state.leader_epochs",
            &ours,
            &kafka
        ));
        // An entry elsewhere than the log end: no.
        kafka.state.leader_epochs = vec![(0, 4)];
        assert!(!epoch_before_producer_checks(
            &append(),
            "state.leader_epochs",
            &ours,
            &kafka
        ));
        // An append that wrote: no.
        kafka.state.leader_epochs = vec![(0, 9)];
        ours.outcome.refused = None;
        ours.outcome.first_offset = Some(9);
        kafka.outcome = ours.outcome.clone();
        assert!(!epoch_before_producer_checks(
            &append(),
            "state.leader_epochs",
            &ours,
            &kafka
        ));
    }

    #[test]
    fn a_roll_at_a_truncation_target_is_explained_only_in_its_form() {
        let truncate = Step {
            op: Op::Truncate { offset: 19 },
            fetch_offset: 0,
        };
        let ours = observation(19, vec![0, 19], vec![]);
        let kafka = observation(19, vec![0], vec![]);
        assert!(truncation_rolls_at_target(
            &truncate,
            "state.segments",
            &ours,
            &kafka
        ));
        let elsewhere = observation(19, vec![0, 17], vec![]);
        assert!(!truncation_rolls_at_target(
            &truncate,
            "state.segments",
            &elsewhere,
            &kafka
        ));
        assert!(!truncation_rolls_at_target(
            &append(),
            "state.segments",
            &ours,
            &kafka
        ));
    }
}
