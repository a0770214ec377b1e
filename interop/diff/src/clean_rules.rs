//! The named rules of the cleaner side (issue #25): deliberate differences between seglog's
//! log cleaner and Kafka 4.4's, each accepted only in exactly its form and named in
//! docs/format.md's "Deliberate differences" (listed in `compare::RULES`).

use std::collections::HashSet;

use crate::history::Step;
use crate::observe::{BatchTxn, Observation};

/// The name of the rule for the aborted-transaction entries of a cleaned segment.
pub const CLEANED_ABORTED_ENTRIES: &str = "cleaned-aborted-entries-from-remaining-batches";

/// seglog's cleaner writes a cleaned segment's `.txnindex` entries from the batches that remain
/// (the first offset of the transaction's first remaining batch, a last stable offset computed
/// from them), where Kafka's `CleanedTransactionMetadata` copies the original entry; so a
/// read_committed fetch's aborted list can hold a later first offset, and, where a recomputed
/// last stable offset ends `collectAbortedTxns`' search earlier, fewer entries (divergence 111
/// of the first 1000-history run, `clean-aborted-entry-first-offset.jsonl`). Exactly this form: the same
/// batches on both sides, each of seglog's entries matched in order by one of Kafka's of the
/// same producer with a first offset no later, and a read_committed consumer (Kafka's
/// `CompletedFetch`) drops the same batches with either list. A fetch that returns no batch is
/// not this form (any two lists would pass the consumer check; seed 3171's K1 form passed it
/// before it had its own rule).
pub fn cleaned_aborted_entries(
    _: &Step,
    path: &str,
    ours: &Observation,
    kafka: &Observation,
) -> bool {
    let (a, b) = (&ours.read_committed, &kafka.read_committed);
    let (Some(batches), Some(ours_aborted), Some(kafka_aborted), Some(txns)) =
        (&a.batches, &a.aborted, &b.aborted, &a.batch_txns)
    else {
        return false;
    };
    path.starts_with("read_committed.aborted")
        && a.refused.is_none()
        && b.refused.is_none()
        && a.batches == b.batches
        && !batches.is_empty()
        && txns.len() == batches.len()
        && ours_aborted != kafka_aborted
        && no_later_in_kafka(ours_aborted, kafka_aborted)
        && dropped(batches, txns, ours_aborted) == dropped(batches, txns, kafka_aborted)
}

/// Each of `ours` matched, in order, by an entry of `kafka` of the same producer whose first
/// offset is no later.
fn no_later_in_kafka(ours: &[(i64, i64)], kafka: &[(i64, i64)]) -> bool {
    let mut rest = kafka.iter();
    ours.iter()
        .all(|&(p, first)| rest.any(|&(q, f)| q == p && f <= first))
}

/// The base offsets of the data batches a read_committed consumer skips given `aborted`
/// (Kafka's `CompletedFetch.nextFetchedRecord`): before each batch with a producer, the
/// aborted transactions that began at or below its last offset mark their producers aborted;
/// an ABORT marker ends its producer's; a transactional batch of a marked producer is skipped.
fn dropped(batches: &[(i64, i64, bool)], txns: &[BatchTxn], aborted: &[(i64, i64)]) -> Vec<i64> {
    let mut pending: Vec<(i64, i64)> = aborted.to_vec();
    pending.sort_by_key(|&(_, first)| first);
    let mut pending = pending.into_iter().peekable();
    let mut marked: HashSet<i64> = HashSet::new();
    let mut out = Vec::new();
    for (&(base, last, _), &(producer_id, transactional, abort_marker)) in batches.iter().zip(txns)
    {
        if producer_id < 0 {
            continue;
        }
        while let Some((p, _)) = pending.next_if(|&(_, first)| first <= last) {
            marked.insert(p);
        }
        if abort_marker == Some(true) {
            marked.remove(&producer_id);
        } else if abort_marker.is_none() && transactional && marked.contains(&producer_id) {
            out.push(base);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;
    use crate::observe::Fetch;

    fn observation(aborted: Vec<(i64, i64)>) -> Observation {
        let read_committed = Fetch {
            batches: Some(vec![(31, 33, false), (34, 34, true), (40, 41, false)]),
            aborted: Some(aborted),
            batch_txns: Some(vec![
                (-1, false, None),
                (1002, true, Some(true)),
                (1001, true, None),
            ]),
            ..Fetch::default()
        };
        Observation {
            read_committed,
            ..Observation::default()
        }
    }

    #[test]
    fn cleaned_entries_are_explained_only_when_a_consumer_drops_the_same_batches() {
        let step = Step {
            op: Op::Roll,
            fetch_offset: 32,
        };
        let path = "read_committed.aborted";
        // Divergence 111's form: seglog's search stopped after 1002's entry; 1001's aborted
        // transaction (first offset 6 in Kafka's copy) has no batch in the fetch before 40.
        let kafka = observation(vec![(1002, 4), (1001, 42)]);
        let ours = observation(vec![(1002, 4)]);
        assert!(cleaned_aborted_entries(&step, path, &ours, &kafka));
        // A later first offset (clean-aborted-entry-first-offset's form), the same batches dropped.
        let ours = observation(vec![(1002, 4), (1001, 43)]);
        assert!(cleaned_aborted_entries(&step, path, &ours, &kafka));
        // Kafka's entry makes a consumer drop 1001's batch at 40, seglog's list does not.
        let kafka = observation(vec![(1002, 4), (1001, 6)]);
        let ours = observation(vec![(1002, 4)]);
        assert!(!cleaned_aborted_entries(&step, path, &ours, &kafka));
        // An entry only seglog lists, or one starting earlier in seglog: not this form.
        let kafka = observation(vec![(1002, 4)]);
        let ours = observation(vec![(1002, 4), (1000, 50)]);
        assert!(!cleaned_aborted_entries(&step, path, &ours, &kafka));
        let kafka = observation(vec![(1002, 4)]);
        let ours = observation(vec![(1002, 3)]);
        assert!(!cleaned_aborted_entries(&step, path, &ours, &kafka));
    }
}
