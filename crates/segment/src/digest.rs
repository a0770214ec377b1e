//! The recovery digest: what the log's leader-epoch cache and producer state need of the
//! batches a recovery validated, collected in the same pass (Kafka's `LogSegment.recover`
//! feeds both from the loop that checks the batches), so the log does not read the recovered
//! segments again.
//!
//! The digest is bounded: past the entry limit the recovery asked for it is dropped (the
//! report then has none, and the log reads the segment again as it would without one). A
//! control batch whose marker does not decode also drops it: the log's replay from disk then
//! meets, and reports, that batch itself.

use seglog_records::{BatchHeader, BatchRef, ControlRecordType, MAGIC_V2};

/// What a recovery saw of the batches it kept (the valid prefix of the segment), for the
/// layers above: see [`crate::RecoveryReport::digest`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryDigest {
    /// The first valid batch: its partition leader epoch (-1 for a legacy batch) and its
    /// first offset (the last offset of a legacy compressed wrapper). `None`: no valid batch.
    pub first_batch: Option<(i32, i64)>,
    /// The v2 batches at which Kafka's leader-epoch rule can change the cache
    /// (`LogSegment.recover`: a batch whose `partitionLeaderEpoch` is newer than the latest
    /// epoch starts it at its base offset): of the v2 batches with an epoch >= 0 and a base
    /// offset >= 0, every one whose epoch differs from the one before it. A batch with the
    /// same epoch as the one before cannot change the cache (that epoch is then the latest,
    /// or it was not newer), and the others are never assigned. In offset order.
    pub epoch_starts: Vec<EpochStart>,
    /// Every v2 batch with a producer id >= 0, in offset order.
    pub producer_batches: Vec<ProducerBatch>,
    /// The offset after the last valid batch (the segment's base offset when there is none):
    /// [`crate::RecoveryReport::next_offset`].
    pub next_offset: i64,
}

impl RecoveryDigest {
    /// Entries held (epoch starts and producer batches): what the entry limit counts.
    pub fn entries(&self) -> usize {
        self.epoch_starts.len() + self.producer_batches.len()
    }
}

/// A v2 batch that may start a leader epoch: see [`RecoveryDigest::epoch_starts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochStart {
    /// The batch's `partitionLeaderEpoch`.
    pub epoch: i32,
    /// The batch's base offset.
    pub base_offset: i64,
}

/// The header fields of a v2 batch with a producer id that a producer state reads (Kafka's
/// `ProducerAppendInfo.append`), with the decoded end-transaction marker of a control batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducerBatch {
    /// `producerId` (>= 0).
    pub producer_id: i64,
    /// `producerEpoch`.
    pub producer_epoch: i16,
    /// `baseSequence` (-1 when none).
    pub base_sequence: i32,
    /// The first offset (the base offset).
    pub first_offset: i64,
    /// The last offset.
    pub last_offset: i64,
    /// `maxTimestamp`.
    pub max_timestamp_ms: i64,
    /// The transactional attribute.
    pub is_transactional: bool,
    /// The control attribute.
    pub is_control: bool,
    /// A control batch's COMMIT or ABORT marker; `None` for a data batch, an empty control
    /// batch (what the cleaner leaves of a marker) or another control type.
    pub marker: Option<TxnMarker>,
}

/// A decoded COMMIT or ABORT marker (the control record of a control batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnMarker {
    /// The control record's timestamp (the batch's max timestamp when it has none).
    pub timestamp_ms: i64,
    /// The coordinator epoch in the marker's value.
    pub coordinator_epoch: i32,
    /// ABORT (else COMMIT).
    pub is_abort: bool,
}

impl ProducerBatch {
    /// The facts of `batch` (a v2 batch with a producer id; other fields are read as they
    /// are), decoding the control record of a control batch. The one decoding the recovery
    /// digest and the log's replays and appends share.
    ///
    /// # Errors
    /// The control record's error (see [`BatchRef::control_record`]) when a control batch's
    /// record does not decode.
    pub fn from_batch(batch: &BatchRef<'_>) -> Result<ProducerBatch, seglog_records::Error> {
        let h = batch.header();
        // Kafka's `ProducerAppendInfo.append`: "an empty control batch means the entire
        // transaction has been cleaned from the log" (the cleaner's empty header of a marker
        // it must retain): no marker, nothing to apply.
        let marker = if h.is_control && h.record_count != Some(0) {
            batch.control_record()?.and_then(|record| {
                record.marker.map(|m| TxnMarker {
                    timestamp_ms: record.record.timestamp_ms.unwrap_or(h.max_timestamp_ms),
                    coordinator_epoch: m.coordinator_epoch,
                    is_abort: record.control_type == ControlRecordType::Abort,
                })
            })
        } else {
            None
        };
        Ok(ProducerBatch {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            first_offset: h.base_offset.unwrap_or(h.last_offset),
            last_offset: h.last_offset,
            max_timestamp_ms: h.max_timestamp_ms,
            is_transactional: h.is_transactional,
            is_control: h.is_control,
            marker,
        })
    }
}

impl ProducerBatch {
    /// The facts of a data batch from its header alone (no marker; a control batch needs
    /// [`ProducerBatch::from_batch`] to decode its record).
    pub(crate) fn from_header(h: &BatchHeader) -> ProducerBatch {
        ProducerBatch {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            first_offset: h.base_offset.unwrap_or(h.last_offset),
            last_offset: h.last_offset,
            max_timestamp_ms: h.max_timestamp_ms,
            is_transactional: h.is_transactional,
            is_control: h.is_control,
            marker: None,
        }
    }
}

/// Collects a [`RecoveryDigest`] batch by batch during a recovery.
pub(crate) struct DigestBuilder {
    /// `None`: not collecting (not asked for, over the limit, or a marker did not decode).
    digest: Option<RecoveryDigest>,
    limit: usize,
    /// The epoch of the last v2 batch with an epoch and base offset >= 0.
    last_epoch: Option<i32>,
}

/// The builder's state before a batch, to take the batch back.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DigestMark {
    first_batch: bool,
    epoch_starts: usize,
    producer_batches: usize,
    last_epoch: Option<i32>,
}

impl DigestBuilder {
    /// A builder keeping at most `limit` entries; 0 collects nothing.
    pub(crate) fn new(limit: usize) -> Self {
        DigestBuilder {
            digest: (limit > 0).then(RecoveryDigest::default),
            limit,
            last_epoch: None,
        }
    }

    /// Adds a batch the recovery accepted.
    pub(crate) fn add(&mut self, batch: &BatchRef<'_>) {
        let Some(digest) = &mut self.digest else {
            return;
        };
        let h: &BatchHeader = batch.header();
        let first_offset = h.base_offset.unwrap_or(h.last_offset);
        if digest.first_batch.is_none() {
            let epoch = if h.magic >= MAGIC_V2 {
                h.partition_leader_epoch
            } else {
                -1
            };
            digest.first_batch = Some((epoch, first_offset));
        }
        if h.magic < MAGIC_V2 {
            return;
        }
        if let Some(base_offset) = h.base_offset
            && h.partition_leader_epoch >= 0
            && base_offset >= 0
            && self.last_epoch != Some(h.partition_leader_epoch)
        {
            self.last_epoch = Some(h.partition_leader_epoch);
            digest.epoch_starts.push(EpochStart {
                epoch: h.partition_leader_epoch,
                base_offset,
            });
        }
        if h.producer_id >= 0 {
            match ProducerBatch::from_batch(batch) {
                Ok(facts) => digest.producer_batches.push(facts),
                Err(_) => {
                    self.digest = None;
                    return;
                }
            }
        }
        if digest.entries() > self.limit {
            self.digest = None;
        }
    }

    /// The state before the next batch.
    pub(crate) fn mark(&self) -> DigestMark {
        let digest = self.digest.as_ref();
        DigestMark {
            first_batch: digest.is_some_and(|d| d.first_batch.is_some()),
            epoch_starts: digest.map_or(0, |d| d.epoch_starts.len()),
            producer_batches: digest.map_or(0, |d| d.producer_batches.len()),
            last_epoch: self.last_epoch,
        }
    }

    /// Takes back every batch added after `mark` (the recovery took one back).
    pub(crate) fn rewind(&mut self, mark: DigestMark) {
        if let Some(digest) = &mut self.digest {
            if !mark.first_batch {
                digest.first_batch = None;
            }
            digest.epoch_starts.truncate(mark.epoch_starts);
            digest.producer_batches.truncate(mark.producer_batches);
        }
        self.last_epoch = mark.last_epoch;
    }

    /// The digest of the batches kept, ending at `next_offset`; `None` when none was
    /// collected.
    pub(crate) fn finish(self, next_offset: i64) -> Option<RecoveryDigest> {
        self.digest.map(|mut d| {
            d.next_offset = next_offset;
            d.epoch_starts.shrink_to_fit();
            d.producer_batches.shrink_to_fit();
            d
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog_records::{BatchBuilder, EndTransactionMarker};

    fn v2(base: i64, epoch: i32, producer_id: i64) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base).partition_leader_epoch(epoch);
        if producer_id >= 0 {
            builder = builder.producer(producer_id, 0, 0);
        }
        builder.append(1_000 + base, None, Some(b"v"), &[]);
        builder.build().unwrap().to_vec()
    }

    fn add(builder: &mut DigestBuilder, bytes: &[u8]) {
        builder.add(&BatchRef::parse(bytes, 0).unwrap());
    }

    #[test]
    fn keeps_epoch_changes_first_batch_and_producer_batches() {
        let mut b = DigestBuilder::new(100);
        add(&mut b, &v2(0, -1, -1));
        add(&mut b, &v2(1, 3, -1));
        add(&mut b, &v2(2, 3, 7));
        add(&mut b, &v2(3, 2, -1));
        add(&mut b, &v2(4, 5, -1));
        let d = b.finish(5).unwrap();
        assert_eq!(d.first_batch, Some((-1, 0)));
        let starts: Vec<_> = d
            .epoch_starts
            .iter()
            .map(|e| (e.epoch, e.base_offset))
            .collect();
        assert_eq!(starts, [(3, 1), (2, 3), (5, 4)]);
        assert_eq!(d.producer_batches.len(), 1);
        assert_eq!(d.producer_batches[0].producer_id, 7);
        assert_eq!(d.producer_batches[0].first_offset, 2);
        assert_eq!(d.next_offset, 5);
    }

    /// The cleaner keeps the empty header of a marker it must retain (Kafka 4.4's
    /// `RETAIN_EMPTY`); Kafka's producer state takes it for a cleaned-away transaction. It
    /// failed every read_committed first use and replay ("control batch holds no record"),
    /// found by the differential histories (a cleaning round, then read_committed).
    #[test]
    fn an_empty_control_batch_is_a_batch_without_a_marker() {
        let full = BatchBuilder::end_transaction_marker(
            9,
            1_000,
            0,
            7,
            0,
            seglog_records::ControlRecordType::Abort,
            seglog_records::EndTransactionMarker {
                version: 0,
                coordinator_epoch: 3,
            },
        )
        .unwrap();
        let header = *BatchRef::parse(&full, 0).unwrap().header();
        let empty = BatchBuilder::empty_batch(&header).unwrap();
        let facts = ProducerBatch::from_batch(&BatchRef::parse(&empty, 0).unwrap()).unwrap();
        assert!(facts.is_control);
        assert_eq!(facts.marker, None);
        let facts = ProducerBatch::from_batch(&BatchRef::parse(&full, 0).unwrap()).unwrap();
        assert!(facts.marker.is_some_and(|m| m.is_abort));
    }

    #[test]
    fn entries_are_as_small_as_the_log_crate_says() {
        // `seglog::RecoveryDigestLimits` documents its memory by these sizes.
        assert!(std::mem::size_of::<ProducerBatch>() <= 56);
        assert!(std::mem::size_of::<EpochStart>() <= 16);
    }

    #[test]
    fn rewind_takes_the_last_batch_back() {
        let mut b = DigestBuilder::new(100);
        let mark = b.mark();
        add(&mut b, &v2(0, 1, 9));
        b.rewind(mark);
        let d = b.finish(0).unwrap();
        assert_eq!(d, RecoveryDigest::default());
    }

    #[test]
    fn over_the_limit_or_with_a_bad_marker_there_is_none() {
        let mut b = DigestBuilder::new(2);
        for i in 0..3 {
            add(&mut b, &v2(i, 0, 1));
        }
        assert_eq!(b.finish(3), None);
        assert_eq!(DigestBuilder::new(0).finish(0), None);
        // A control batch whose record is not a control record (a null key).
        let mut builder = BatchBuilder::new(0).producer(1, 0, -1).control(true);
        builder.append(1, None, Some(b"v"), &[]);
        let bytes = builder.build().unwrap();
        let mut b = DigestBuilder::new(10);
        add(&mut b, &bytes);
        assert_eq!(b.finish(1), None);
    }

    #[test]
    fn a_marker_is_decoded() {
        let bytes = BatchBuilder::end_transaction_marker(
            4,
            77,
            0,
            5,
            1,
            ControlRecordType::Abort,
            EndTransactionMarker {
                version: 0,
                coordinator_epoch: 9,
            },
        )
        .unwrap();
        let mut b = DigestBuilder::new(10);
        add(&mut b, &bytes);
        let d = b.finish(5).unwrap();
        let batch = d.producer_batches[0];
        assert!(batch.is_control && batch.is_transactional);
        assert_eq!(
            batch.marker,
            Some(TxnMarker {
                timestamp_ms: 77,
                coordinator_epoch: 9,
                is_abort: true
            })
        );
    }
}
