//! Transactions as the cleaner sees them: one header pass over the log finds the aborted
//! transactions, the last stable offset and each producer's last batch; while cleaning,
//! [`CleanedTxns`] (Kafka's `CleanedTransactionMetadata`) says which batches belong to an
//! aborted transaction (dropped) and which markers may go (once no batch of their transaction
//! is left).
//!
//! Kafka reads the aborted transactions from the `.txnindex` files; seglog derives them from the
//! batches themselves (the facts the broker's own recovery rebuilds the index from), so the
//! cleaner's rules hold whatever wrote the index files. The producers' last batches come from
//! the log's producer state, as in Kafka (`lastRecordsOfActiveProducers`: expired producers are
//! not kept). The header pass also bounds the last stable offset by the oldest open
//! transaction, with the log's own last stable offset.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use seglog_records::{BatchHeader, ControlRecordType};
use seglog_segment::Segment;

use crate::{Error, Result};

/// One aborted transaction (a `.txnindex` entry): producer, first offset of its data, the
/// offset of its ABORT marker, and the last stable offset when it completed.
pub(crate) use seglog_segment::AbortedTxn;

/// What a producer last wrote (Kafka's `LastRecord`): the last offset of its last data batch,
/// and its epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LastRecord {
    pub(crate) last_data_offset: Option<i64>,
    pub(crate) producer_epoch: i16,
}

/// What one header pass over the log found.
#[derive(Debug, Default)]
pub(crate) struct TxnScan {
    /// Aborted transactions, by first offset.
    pub(crate) aborted: Vec<AbortedTxn>,
    /// Every active producer's last record (filled from the producer state).
    pub(crate) last_records: HashMap<i64, LastRecord>,
    /// The first offset of the oldest transaction without a marker: the last stable offset
    /// cannot pass it.
    pub(crate) first_unstable_offset: Option<i64>,
    /// Records of the batches that end at or above `count_from` (an upper bound of the keys
    /// the offset map can meet: sizes the map).
    pub(crate) records_from: u64,
}

/// Walks the headers of every segment (reading only control batches' records): the aborted
/// transactions, the oldest open one, and a bound of the records from `count_from`.
///
/// # Errors
/// Segment I/O and corruption errors; [`Error::DamagedBatch`] for a control batch that does
/// not decode.
pub(crate) fn scan<'a>(
    segments: impl Iterator<Item = &'a Arc<Segment>>,
    count_from: i64,
) -> Result<TxnScan> {
    let mut out = TxnScan::default();
    // producer → first offset of its open transaction.
    let mut ongoing: HashMap<i64, i64> = HashMap::new();
    // first offset → producers (to find the oldest open transaction of another producer).
    let mut open_by_first: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for segment in segments {
        for header in segment.batch_headers(0) {
            let header = header?;
            if header.last_offset >= count_from {
                out.records_from += record_count_bound(&header);
            }
            let producer_id = header.producer_id;
            if header.is_legacy() || producer_id < 0 {
                continue;
            }
            if header.is_control {
                let Some(control) = control_type(segment, &header)? else {
                    continue;
                };
                if !control.is_transaction_marker() {
                    continue;
                }
                let first = ongoing.remove(&producer_id);
                if let Some(first) = first
                    && let Some(list) = open_by_first.get_mut(&first)
                {
                    list.retain(|p| *p != producer_id);
                    if list.is_empty() {
                        open_by_first.remove(&first);
                    }
                }
                if control == ControlRecordType::Abort {
                    let marker = header.last_offset;
                    let last_stable_offset =
                        open_by_first.keys().next().copied().unwrap_or(marker + 1);
                    out.aborted.push(AbortedTxn {
                        producer_id,
                        first_offset: first.unwrap_or(marker),
                        last_offset: marker,
                        last_stable_offset,
                    });
                }
            } else {
                if header.is_transactional && !ongoing.contains_key(&producer_id) {
                    let first = header.base_offset.unwrap_or(header.last_offset);
                    ongoing.insert(producer_id, first);
                    open_by_first.entry(first).or_default().push(producer_id);
                }
            }
        }
    }
    out.aborted.sort_by_key(|t| (t.first_offset, t.last_offset));
    out.first_unstable_offset = open_by_first.keys().next().copied();
    Ok(out)
}

/// At most this many records are in the batch (a legacy compressed wrapper does not say:
/// every inner message takes at least 14 bytes).
fn record_count_bound(header: &BatchHeader) -> u64 {
    match header.record_count {
        Some(n) => u64::try_from(n).unwrap_or(0),
        None => u64::from(header.total_size / 14),
    }
}

/// The type of a control batch's control record; `None` for an empty (cleaned) one.
fn control_type(segment: &Segment, header: &BatchHeader) -> Result<Option<ControlRecordType>> {
    if header.record_count == Some(0) {
        return Ok(None);
    }
    let batch = segment.read_batch(header)?;
    let control = batch
        .control_record()
        .map_err(|source| damaged(&segment.log_path(), source))?;
    Ok(control.map(|c| c.control_type))
}

pub(crate) fn damaged(path: &Path, source: seglog_records::Error) -> Error {
    Error::DamagedBatch {
        path: path.to_path_buf(),
        source,
    }
}

/// Kafka's `CleanedTransactionMetadata`: the transaction state carried through one round.
#[derive(Debug, Default)]
pub(crate) struct CleanedTxns {
    /// Aborted transactions not yet reached, by first offset.
    pending: std::collections::VecDeque<AbortedTxn>,
    /// Producer → its aborted transaction being traversed, and the last batch seen of it.
    ongoing_aborted: HashMap<i64, (AbortedTxn, Option<i64>)>,
    /// Producers with a committed (or open) transaction being traversed.
    ongoing_committed: std::collections::HashSet<i64>,
    /// Aborted transactions whose marker was kept: the cleaned segment's `.txnindex`.
    pub(crate) retained: Vec<AbortedTxn>,
}

impl CleanedTxns {
    /// Adds aborted transactions (in first-offset order, each once).
    pub(crate) fn add_aborted(&mut self, txns: impl IntoIterator<Item = AbortedTxn>) {
        self.pending.extend(txns);
    }

    fn consume_up_to(&mut self, offset: i64) {
        while self
            .pending
            .front()
            .is_some_and(|t| t.first_offset <= offset)
        {
            if let Some(txn) = self.pending.pop_front() {
                self.ongoing_aborted
                    .entry(txn.producer_id)
                    .or_insert((txn, None));
            }
        }
    }

    /// A data batch: true when it belongs to an aborted transaction (it may be discarded).
    pub(crate) fn on_batch(&mut self, header: &BatchHeader) -> bool {
        self.consume_up_to(header.last_offset);
        if !header.is_transactional {
            return false;
        }
        match self.ongoing_aborted.get_mut(&header.producer_id) {
            Some((_, last_seen)) => {
                *last_seen = Some(header.last_offset);
                true
            }
            None => {
                self.ongoing_committed.insert(header.producer_id);
                false
            }
        }
    }

    /// A control batch of type `control` (`None`: empty, already cleaned): true when it may be
    /// discarded. An ABORT marker stays while batches of its transaction were seen this
    /// round (and enters the cleaned `.txnindex`); a COMMIT marker when any batch of its
    /// transaction was seen.
    pub(crate) fn on_control(
        &mut self,
        header: &BatchHeader,
        control: Option<ControlRecordType>,
    ) -> bool {
        self.consume_up_to(header.last_offset);
        let producer_id = header.producer_id;
        match control {
            None => true,
            Some(ControlRecordType::Abort) => match self.ongoing_aborted.remove(&producer_id) {
                Some((txn, Some(_))) => {
                    self.retained.push(txn);
                    false
                }
                _ => true,
            },
            Some(ControlRecordType::Commit) => !self.ongoing_committed.remove(&producer_id),
            Some(_) => false,
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn header(last_offset: i64, producer_id: i64, transactional: bool) -> BatchHeader {
        let mut builder = seglog_records::BatchBuilder::new(last_offset)
            .producer(producer_id, 0, 0)
            .transactional(transactional);
        builder.append(0, Some(b"k"), Some(b"v"), &[]);
        let bytes = builder.build().unwrap();
        *seglog_records::BatchRef::parse(&bytes, 0).unwrap().header()
    }

    #[test]
    fn aborted_batches_go_and_their_marker_stays_until_they_are_gone() {
        let txn = AbortedTxn {
            producer_id: 7,
            first_offset: 10,
            last_offset: 12,
            last_stable_offset: 13,
        };
        let mut state = CleanedTxns::default();
        state.add_aborted([txn]);
        assert!(
            !state.on_batch(&header(5, 7, true)),
            "a committed transaction"
        );
        assert!(!state.on_control(&header(6, 7, true), Some(ControlRecordType::Commit)));
        assert!(state.on_batch(&header(10, 7, true)));
        assert!(!state.on_batch(&header(11, 8, true)), "another producer");
        assert!(!state.on_control(&header(12, 7, true), Some(ControlRecordType::Abort)));
        assert_eq!(state.retained, [txn]);
        // Next round: the data is gone, so is the marker.
        let mut state = CleanedTxns::default();
        state.add_aborted([txn]);
        assert!(state.on_control(&header(12, 7, true), Some(ControlRecordType::Abort)));
        assert!(state.on_control(&header(20, 8, true), Some(ControlRecordType::Commit)));
        assert!(state.on_control(&header(21, 8, true), None));
    }
}
