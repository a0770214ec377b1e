//! Named rules outside the cleaner (issue #25's divergences of the log's offsets): deliberate
//! differences between seglog and Kafka 4.4, each accepted only in exactly its form and named in
//! docs/format.md's "Deliberate differences" (listed in `compare::RULES`).

use crate::history::Step;
use crate::observe::Observation;

/// The name of the rule for Kafka's first unstable offset clamped to a log start in a gap.
pub const FIRST_UNSTABLE_AT_NEXT_BATCH: &str =
    "first-unstable-offset-at-next-batch-above-log-start";

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
/// one, and each side's LSO `min(its first unstable, HW)`.
pub fn first_unstable_at_next_batch(
    _: &Step,
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
        && a.high_watermark == b.high_watermark
        && kafka.fresh_first_unstable.is_some_and(|f| f < start)
        && a.first_unstable == Some(start)
        && raised
        && a.last_stable == lso(a.first_unstable, a.high_watermark)
        && b.last_stable == lso(b.first_unstable, b.high_watermark)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;
    use crate::observe::State;

    fn step() -> Step {
        Step {
            op: Op::Roll,
            fetch_offset: 0,
        }
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
}
