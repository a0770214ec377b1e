//! The idempotent producer: the sequence bookkeeping of Kafka's client (`KafkaProducer` with
//! `enable.idempotence=true`, its `TransactionManager` without a transactional id) for an
//! embedded user, on top of [`Log::append_with`].
//!
//! Kafka's client gives every batch the partition's next sequence when it is drained into a
//! request and advances the sequence then; a retry resends the same batch (same epoch, same
//! base sequence), which the broker answers from its producer state when it was written
//! already. On `OutOfOrderSequence` an idempotent (non-transactional) client bumps its epoch
//! and resets every partition's sequence to 0 (`bumpIdempotentEpochAndResetIdIfNeeded`); at
//! the largest epoch it asks for a new producer id instead. Here there is no broker to ask:
//! the epoch bump is local, and at `i16::MAX` the producer refuses to go on
//! ([`ProducerErrorKind::EpochExhausted`]).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::{
    AppendErrorKind, AppendInfo, BatchBuilder, Durability, Error, Log, LogDir, ProducerErrorKind,
    Result, TopicPartition,
};

/// One batch of an [`IdempotentProducer`]: its bytes carry the producer id, epoch and base
/// sequence, fixed when it was prepared. Sending the same `ProducerBatch` again is a retry
/// (the log answers a retry of one of the producer's last 5 batches with the original
/// offsets and writes nothing).
///
/// ```
/// use seglog::{BatchBuilder, IdempotentProducer, TopicPartition};
///
/// let mut producer = IdempotentProducer::new(1, 0)?;
/// let mut records = BatchBuilder::new(0);
/// records.append(0, None, Some(b"a"), &[]);
/// records.append(0, None, Some(b"b"), &[]);
/// let batch = producer.prepare(&TopicPartition::new("orders", 0), records)?;
/// assert_eq!((batch.base_sequence(), batch.record_count()), (0, 2));
/// # Ok::<(), seglog::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerBatch {
    topic_partition: TopicPartition,
    producer_epoch: i16,
    base_sequence: i32,
    record_count: i32,
    bytes: Bytes,
}

impl ProducerBatch {
    /// The partition the batch was prepared for.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }

    /// The producer epoch written in the batch.
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// The base sequence written in the batch.
    pub fn base_sequence(&self) -> i32 {
        self.base_sequence
    }

    /// The number of records.
    pub fn record_count(&self) -> i32 {
        self.record_count
    }

    /// The batch's bytes (one v2 record batch).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// An idempotent producer: a producer id and epoch, and the next sequence of every partition
/// it writes to. Batches are prepared with the partition's next sequence
/// ([`IdempotentProducer::prepare`]), sent to a [`Log`] ([`IdempotentProducer::send`]) or a
/// [`LogDir`] partition ([`IdempotentProducer::send_to`]), and resent unchanged after a
/// failure ([`IdempotentProducer::retry`]), also to the log reopened after a crash: the log
/// deduplicates them ([`AppendInfo::duplicate`]).
///
/// When the log answers a batch of the current epoch with
/// [`AppendErrorKind::OutOfOrderSequence`] or [`AppendErrorKind::InvalidProducerEpoch`], the
/// producer bumps its epoch (above the log's, for a fenced one) and resets every partition's
/// sequence to 0, as Kafka's idempotent client does; the error is returned, and the batch
/// must be prepared again. A batch the log refuses for another reason on its first send (too
/// large, a timestamp out of range: nothing was written) gives its sequences back, so the next
/// batch follows the last one written. Two live producers must not share a producer id: without a
/// coordinator nothing hands out ids.
///
/// ```
/// use seglog::{BatchBuilder, Durability, IdempotentProducer, LogConfig, LogDir, TopicPartition};
///
/// let root = tempfile::tempdir()?;
/// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
/// let orders = TopicPartition::new("orders", 0);
/// let mut producer = IdempotentProducer::new(7, 0)?;
/// let mut records = BatchBuilder::new(0);
/// records.append(0, Some(b"order-1"), Some(b"created"), &[]);
/// let batch = producer.prepare(&orders, records)?;
/// let first = producer.send_to(&log_dir, &batch, Durability::PageCache)?;
/// // A retry (say, after a timeout) is answered from the log's producer state.
/// let log = log_dir.log(&orders).expect("created by send_to");
/// let again = producer.retry(&log, &batch, Durability::PageCache)?;
/// assert!(again.duplicate && again.first_offset == first.first_offset);
/// assert_eq!(log.log_end_offset(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct IdempotentProducer {
    producer_id: i64,
    epoch: i16,
    next_sequences: BTreeMap<TopicPartition, i32>,
    /// The last batch prepared for each partition, until it is sent a first time: a first
    /// send refused by the log's validation (nothing written) gives its sequences back.
    unsent: BTreeMap<TopicPartition, (i16, i32)>,
    /// Batches are transactional (the producer of a [`crate::TransactionalProducer`]): no
    /// epoch bump on errors, as Kafka's transactional client bumps only once the transaction
    /// ends (`resync`).
    transactional: bool,
    /// The epoch could not be bumped: every `prepare` fails.
    exhausted: bool,
    /// A transactional producer's batch of the current epoch was answered with
    /// `OutOfOrderSequence` (its last batches were truncated away, say): the epoch is bumped
    /// when the transaction ends ([`IdempotentProducer::take_resync`]).
    resync: bool,
}

impl IdempotentProducer {
    /// A producer with `producer_id` at `epoch`, every partition at sequence 0. A process
    /// that restarts should use a higher epoch (or another id) than its last run: a log that
    /// remembers the producer answers sequence 0 of the same epoch as out of order.
    ///
    /// # Errors
    /// [`ProducerErrorKind::InvalidIdOrEpoch`] for a negative id or epoch.
    ///
    /// ```
    /// use seglog::IdempotentProducer;
    ///
    /// let producer = IdempotentProducer::new(7, 3)?;
    /// assert_eq!((producer.producer_id(), producer.epoch()), (7, 3));
    /// assert!(IdempotentProducer::new(-1, 0).is_err());
    /// # Ok::<(), seglog::Error>(())
    /// ```
    pub fn new(producer_id: i64, epoch: i16) -> Result<Self> {
        Self::with_kind(producer_id, epoch, false)
    }

    pub(crate) fn with_kind(producer_id: i64, epoch: i16, transactional: bool) -> Result<Self> {
        if producer_id < 0 || epoch < 0 {
            return Err(Error::Producer {
                producer_id,
                kind: ProducerErrorKind::InvalidIdOrEpoch { epoch },
            });
        }
        Ok(Self {
            producer_id,
            epoch,
            next_sequences: BTreeMap::new(),
            unsent: BTreeMap::new(),
            transactional,
            exhausted: false,
            resync: false,
        })
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// The current epoch.
    pub fn epoch(&self) -> i16 {
        self.epoch
    }

    /// The sequence the next batch for `topic_partition` gets (0 for a partition not written
    /// in this epoch).
    ///
    /// ```
    /// use seglog::{BatchBuilder, IdempotentProducer, TopicPartition};
    ///
    /// let mut producer = IdempotentProducer::new(7, 0)?;
    /// let tp = TopicPartition::new("orders", 0);
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// producer.prepare(&tp, records)?;
    /// assert_eq!(producer.next_sequence(&tp), 1);
    /// assert_eq!(producer.next_sequence(&TopicPartition::new("orders", 1)), 0);
    /// # Ok::<(), seglog::Error>(())
    /// ```
    pub fn next_sequence(&self, topic_partition: &TopicPartition) -> i32 {
        self.next_sequences
            .get(topic_partition)
            .copied()
            .unwrap_or(0)
    }

    /// Builds `records` as this producer's next batch for `topic_partition`: stamps the
    /// producer id, epoch and the partition's next sequence, and advances the sequence by the
    /// record count (wrapping past `i32::MAX` to 0, as Kafka's `incrementSequence`). The batch
    /// must then be sent: a sequence left unsent makes the next batch out of order.
    ///
    /// # Errors
    /// [`ProducerErrorKind::EpochExhausted`] once the epoch could not be bumped;
    /// [`Error::Records`] when the records do not build (e.g. no record).
    ///
    /// ```
    /// use seglog::{BatchBuilder, IdempotentProducer, TopicPartition};
    ///
    /// let mut producer = IdempotentProducer::new(7, 0)?;
    /// let tp = TopicPartition::new("orders", 0);
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// let batch = producer.prepare(&tp, records)?;
    /// assert_eq!((batch.producer_epoch(), batch.base_sequence()), (0, 0));
    /// assert!(producer.prepare(&tp, BatchBuilder::new(0)).is_err()); // no record
    /// # Ok::<(), seglog::Error>(())
    /// ```
    pub fn prepare(
        &mut self,
        topic_partition: &TopicPartition,
        records: BatchBuilder,
    ) -> Result<ProducerBatch> {
        if self.exhausted {
            return Err(self.exhausted_error());
        }
        let base_sequence = self.next_sequence(topic_partition);
        let builder = records
            .producer(self.producer_id, self.epoch, base_sequence)
            .transactional(self.transactional);
        let bytes = builder.build()?;
        let record_count = builder.record_count();
        self.next_sequences.insert(
            topic_partition.clone(),
            increment_sequence(base_sequence, record_count),
        );
        self.unsent
            .insert(topic_partition.clone(), (self.epoch, base_sequence));
        Ok(ProducerBatch {
            topic_partition: topic_partition.clone(),
            producer_epoch: self.epoch,
            base_sequence,
            record_count,
            bytes,
        })
    }

    /// Appends `batch` to `log` (which must be the batch's partition) with `durability`.
    /// A batch already written answers as a duplicate with its original offsets.
    ///
    /// # Errors
    /// [`ProducerErrorKind::WrongPartition`]; as [`Log::append_with`]. On an
    /// out-of-order or fenced answer to a batch of the current epoch the epoch is bumped
    /// first (see [`IdempotentProducer`]).
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, IdempotentProducer, Log, LogConfig};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let log = Log::open(dir.path().join("orders-0"), LogConfig::default())?;
    /// let mut producer = IdempotentProducer::new(7, 0)?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// let batch = producer.prepare(log.topic_partition(), records)?;
    /// let info = producer.send(&log, &batch, Durability::Fsync)?;
    /// assert_eq!((info.first_offset, info.duplicate), (0, false));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send(
        &mut self,
        log: &Log,
        batch: &ProducerBatch,
        durability: Durability,
    ) -> Result<AppendInfo> {
        if log.topic_partition() != batch.topic_partition() {
            return Err(Error::Producer {
                producer_id: self.producer_id,
                kind: ProducerErrorKind::WrongPartition {
                    batch: batch.topic_partition.clone(),
                    dir: log.dir().to_path_buf(),
                },
            });
        }
        // The first send of the partition's last prepared batch: if the log refuses it,
        // it was never written (a retry of a written batch may be refused too, say after a
        // config change, and then keeps its sequences).
        let first_send = self.unsent.get(batch.topic_partition())
            == Some(&(batch.producer_epoch, batch.base_sequence));
        if first_send {
            self.unsent.remove(batch.topic_partition());
        }
        let result = log.append_with(batch.bytes(), durability);
        if let Err(Error::InvalidAppend { kind }) = &result {
            self.on_rejection(batch, kind, first_send);
        }
        result
    }

    /// [`IdempotentProducer::send`] to the batch's partition of `log_dir`, creating it when
    /// it does not exist.
    ///
    /// # Errors
    /// As [`IdempotentProducer::send`] and [`LogDir::get_or_create`].
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, IdempotentProducer, LogConfig, LogDir, TopicPartition};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = IdempotentProducer::new(7, 0)?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// let batch = producer.prepare(&TopicPartition::new("orders", 3), records)?;
    /// producer.send_to(&log_dir, &batch, Durability::PageCache)?;
    /// assert!(root.path().join("orders-3").is_dir());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_to(
        &mut self,
        log_dir: &LogDir,
        batch: &ProducerBatch,
        durability: Durability,
    ) -> Result<AppendInfo> {
        let log = log_dir.get_or_create(batch.topic_partition())?;
        self.send(&log, batch, durability)
    }

    /// Resends the very same bytes of `batch` (same epoch, same base sequence) after a failed
    /// or unanswered send, also to the log reopened after a crash. When the first send was
    /// written the log answers from its producer state ([`AppendInfo::duplicate`], the
    /// original offsets, nothing written); when it was not (lost in the crash, or refused for
    /// a reason that has passed) it is written now. A batch of an epoch older than the
    /// producer's (prepared before a bump) is sent as it is and the log decides; its rejection
    /// does not bump the epoch again.
    ///
    /// # Errors
    /// As [`IdempotentProducer::send`].
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, IdempotentProducer, Log, LogConfig};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("orders-0");
    /// let mut producer = IdempotentProducer::new(7, 0)?;
    /// let mut records = BatchBuilder::new(0);
    /// // A record of now: a producer whose last batch is older than
    /// // `producer.id.expiration.ms` is forgotten by a crash's recovery, as in Kafka.
    /// let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis();
    /// records.append(i64::try_from(now_ms)?, None, Some(b"a"), &[]);
    /// let log = Log::open(&path, LogConfig::default())?;
    /// let batch = producer.prepare(log.topic_partition(), records)?;
    /// producer.send(&log, &batch, Durability::PageCache)?;
    /// drop(log); // a crash before the answer arrived
    /// let log = Log::open(&path, LogConfig::default())?;
    /// let retry = producer.retry(&log, &batch, Durability::PageCache)?;
    /// assert!(retry.duplicate && log.log_end_offset() == 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retry(
        &mut self,
        log: &Log,
        batch: &ProducerBatch,
        durability: Durability,
    ) -> Result<AppendInfo> {
        self.send(log, batch, durability)
    }

    /// Bumps the epoch by one and resets every partition's sequence to 0 (Kafka's
    /// `bumpIdempotentProducerEpoch`). Returns the new epoch.
    ///
    /// # Errors
    /// [`ProducerErrorKind::EpochExhausted`] at `i16::MAX` (the producer then refuses to
    /// prepare batches).
    ///
    /// ```
    /// use seglog::{BatchBuilder, IdempotentProducer, TopicPartition};
    ///
    /// let mut producer = IdempotentProducer::new(7, 0)?;
    /// let tp = TopicPartition::new("orders", 0);
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// producer.prepare(&tp, records)?;
    /// assert_eq!(producer.bump_epoch()?, 1);
    /// assert_eq!(producer.next_sequence(&tp), 0);
    /// # Ok::<(), seglog::Error>(())
    /// ```
    pub fn bump_epoch(&mut self) -> Result<i16> {
        self.bump_epoch_above(self.epoch)
    }

    /// Moves to `epoch` (the epoch a transaction's markers carried under transaction
    /// version 2) with every sequence back to 0, as Kafka's client does when `EndTxn`
    /// answers with a bumped epoch.
    pub(crate) fn adopt_epoch(&mut self, epoch: i16) {
        tracing::debug!(
            producer_id = self.producer_id,
            epoch,
            "transactional producer moved to the epoch of its markers"
        );
        self.epoch = epoch;
        self.next_sequences.clear();
        self.unsent.clear();
        self.resync = false;
    }

    /// Whether a transactional producer must bump its epoch at the end of its transaction
    /// (a batch of the current epoch was answered with `OutOfOrderSequence`); clears it.
    pub(crate) fn take_resync(&mut self) -> bool {
        std::mem::take(&mut self.resync)
    }

    fn bump_epoch_above(&mut self, epoch: i16) -> Result<i16> {
        let Some(next) = epoch.max(self.epoch).checked_add(1) else {
            self.exhausted = true;
            return Err(self.exhausted_error());
        };
        tracing::info!(
            producer_id = self.producer_id,
            epoch = next,
            "idempotent producer bumped its epoch and reset its sequences"
        );
        self.epoch = next;
        self.next_sequences.clear();
        self.unsent.clear();
        self.resync = false;
        Ok(next)
    }

    /// Kafka's `handleFailedBatch`: a sequence gap or a fenced epoch, answered to a batch of
    /// the current epoch, bumps the epoch of an idempotent producer. Any other refusal of a
    /// first send gives the batch's sequences back (Kafka's transactional client lowers the
    /// later sequences, `adjustSequencesDueToFailedBatch`; its idempotent client bumps the
    /// epoch; an embedded producer sends one batch at a time, so nothing follows it). A stale
    /// batch (prepared before a bump) changes nothing.
    fn on_rejection(&mut self, batch: &ProducerBatch, kind: &AppendErrorKind, first_send: bool) {
        if batch.producer_epoch != self.epoch {
            return;
        }
        let above = match kind {
            AppendErrorKind::OutOfOrderSequence { .. } => self.epoch,
            AppendErrorKind::InvalidProducerEpoch { current_epoch, .. } => *current_epoch,
            _ => {
                if first_send {
                    self.next_sequences
                        .insert(batch.topic_partition.clone(), batch.base_sequence);
                }
                return;
            }
        };
        if self.transactional {
            // Kafka's transactional client makes the transaction abortable and bumps the
            // epoch once it ends (KIP-360); a fenced answer is fatal to it, never bumped past.
            if matches!(kind, AppendErrorKind::OutOfOrderSequence { .. }) {
                self.resync = true;
            }
            return;
        }
        // At i16::MAX the producer is marked exhausted; the append's own error is returned.
        let _ = self.bump_epoch_above(above);
    }

    fn exhausted_error(&self) -> Error {
        Error::Producer {
            producer_id: self.producer_id,
            kind: ProducerErrorKind::EpochExhausted { epoch: self.epoch },
        }
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap from `i32::MAX` to 0.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(n: usize) -> BatchBuilder {
        let mut b = BatchBuilder::new(0);
        for _ in 0..n {
            b.append(0, None, Some(b"v"), &[]);
        }
        b
    }

    #[test]
    fn sequences_advance_per_partition_and_wrap_as_kafka() {
        assert_eq!(increment_sequence(0, 3), 3);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        let mut p = IdempotentProducer::new(1, 0).unwrap();
        let a = TopicPartition::new("a", 0);
        let b = TopicPartition::new("b", 0);
        assert_eq!(p.prepare(&a, records(3)).unwrap().base_sequence(), 0);
        assert_eq!(p.prepare(&a, records(2)).unwrap().base_sequence(), 3);
        assert_eq!(p.prepare(&b, records(1)).unwrap().base_sequence(), 0);
        assert_eq!((p.next_sequence(&a), p.next_sequence(&b)), (5, 1));
    }

    #[test]
    fn a_bump_resets_every_sequence_and_the_last_epoch_is_exhausted() {
        let mut p = IdempotentProducer::new(1, i16::MAX - 1).unwrap();
        let a = TopicPartition::new("a", 0);
        p.prepare(&a, records(2)).unwrap();
        assert_eq!(p.bump_epoch().unwrap(), i16::MAX);
        assert_eq!(p.next_sequence(&a), 0);
        let err = p.bump_epoch().unwrap_err();
        assert!(matches!(
            err,
            Error::Producer {
                kind: ProducerErrorKind::EpochExhausted { epoch: i16::MAX },
                ..
            }
        ));
        assert!(p.prepare(&a, records(1)).is_err());
    }

    #[test]
    fn a_transactional_producer_resyncs_after_out_of_order_only() {
        let tp = TopicPartition::new("a", 0);
        let mut p = IdempotentProducer::with_kind(1, 4, true).unwrap();
        let batch = p.prepare(&tp, records(1)).unwrap();
        let out_of_order = AppendErrorKind::OutOfOrderSequence {
            producer_id: 1,
            epoch: 4,
            offset: 0,
            sequence: 3,
            last_sequence: 0,
        };
        let fenced = AppendErrorKind::InvalidProducerEpoch {
            producer_id: 1,
            epoch: 4,
            offset: 0,
            current_epoch: 6,
        };
        // Fenced by a newer epoch: never bumped past, no resync.
        p.on_rejection(&batch, &fenced, true);
        assert_eq!((p.epoch(), p.take_resync()), (4, false));
        // Out of order: no bump now (the transaction goes on), a resync at its end.
        p.on_rejection(&batch, &out_of_order, false);
        assert_eq!(p.epoch(), 4);
        assert!(p.take_resync());
        assert!(!p.take_resync());
        // A bump or an adopted epoch clears it.
        p.on_rejection(&batch, &out_of_order, false);
        p.adopt_epoch(5);
        assert_eq!(
            (p.epoch(), p.next_sequence(&tp), p.take_resync()),
            (5, 0, false)
        );
    }

    #[test]
    fn negative_ids_and_epochs_are_refused() {
        assert!(IdempotentProducer::new(-1, 0).is_err());
        assert!(IdempotentProducer::new(1, -1).is_err());
    }
}
