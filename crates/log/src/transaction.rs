//! Transactions over a [`LogDir`]: what Kafka's transactional client (`TransactionManager`)
//! and its transaction coordinator do together, for an embedded user, on top of the
//! primitives ([`Log::append_with`] of transactional batches, [`Log::write_txn_marker`]).
//!
//! [`TransactionalProducer::init`] is the coordinator's `InitProducerId`: the new epoch fences
//! the older ones, and every transaction the producer id left open (a crash between its data
//! and its markers) is aborted at the new epoch. A [`Transaction`] appends transactional
//! batches to any partitions; commit or abort then writes one marker on every partition
//! touched, after all the data (Kafka's order: `EndTxn` waits for every produce, then the
//! coordinator writes one marker per partition).
//!
//! There is no transaction log (`__transaction_state`): the decision to commit is not
//! recorded before the markers are written, so a crash during a commit leaves the
//! partitions whose COMMIT marker was written committed and the others open, and the next
//! `init` aborts those (Kafka's coordinator would complete the commit). docs/format.md lists
//! this among the deliberate differences.

use std::collections::BTreeSet;

use crate::{
    AppendInfo, BatchBuilder, Durability, Error, IdempotentProducer, Log, LogDir,
    ProducerErrorKind, Result, TopicPartition, TxnResult,
};

/// A transactional producer over a [`LogDir`]: a producer id at an epoch that fenced every
/// older one, which runs one [`Transaction`] at a time.
///
/// ```
/// use seglog::{
///     BatchBuilder, Durability, HighWatermarkPolicy, Isolation, LogConfig, LogDir,
///     LogOpenOptions, TopicPartition, TransactionalProducer,
/// };
///
/// let root = tempfile::tempdir()?;
/// let options = LogOpenOptions { high_watermark: HighWatermarkPolicy::LogEnd, ..Default::default() };
/// let log_dir = LogDir::open_with(root.path(), LogConfig::default(), options)?;
/// let mut producer = TransactionalProducer::init(&log_dir, 42, 0)?;
/// let mut txn = producer.begin()?;
/// for partition in 0..2 {
///     let mut records = BatchBuilder::new(0);
///     records.append(0, Some(b"order-1"), Some(b"paid"), &[]);
///     txn.send(&TopicPartition::new("payments", partition), records)?;
/// }
/// let markers = txn.commit(Durability::Fsync)?;
/// assert_eq!(markers.len(), 2); // one COMMIT marker per partition
/// let log = log_dir.log(&TopicPartition::new("payments", 0)).expect("written");
/// let committed: Vec<_> = log
///     .owned_reader(0, Isolation::ReadCommitted)
///     .until_caught_up()
///     .collect();
/// assert_eq!(committed.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TransactionalProducer<'d> {
    log_dir: &'d LogDir,
    producer: IdempotentProducer,
    coordinator_epoch: i32,
    /// Markers still to write: a transaction whose end failed part-way, or that was dropped
    /// and whose abort failed. [`TransactionalProducer::begin`] writes them first.
    unfinished: Option<Unfinished>,
}

#[derive(Debug)]
struct Unfinished {
    result: TxnResult,
    durability: Durability,
    partitions: BTreeSet<TopicPartition>,
}

impl<'d> TransactionalProducer<'d> {
    /// Kafka's `InitProducerId` for `producer_id` at `epoch`, as a coordinator runs it: every
    /// open transaction of `producer_id` in the partitions of `log_dir` (left by a crash) is
    /// aborted with an ABORT marker at `epoch`, fsynced, which fences the older epochs in
    /// those partitions. The coordinator epoch of the markers is the largest the producer
    /// has in any partition (0 when none).
    ///
    /// # Errors
    /// [`ProducerErrorKind::InvalidIdOrEpoch`]; [`ProducerErrorKind::EpochNotNewer`] when a
    /// partition already holds `producer_id` at `epoch` or later (checked in every partition
    /// before anything is written); as [`Log::write_txn_marker`].
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let tp = TopicPartition::new("orders", 0);
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let mut txn = producer.begin()?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// txn.send(&tp, records)?;
    /// std::mem::forget(txn); // as a crash: neither ended nor dropped
    /// assert_eq!(log_dir.log(&tp).expect("written").ongoing_transactions(), [(9, 0)]);
    /// let producer = TransactionalProducer::init(&log_dir, 9, 1)?; // fences epoch 0
    /// assert_eq!((producer.producer_id(), producer.epoch(), producer.coordinator_epoch()), (9, 1, 0));
    /// assert!(log_dir.log(&tp).expect("written").ongoing_transactions().is_empty());
    /// assert!(TransactionalProducer::init(&log_dir, 9, 1).is_err()); // not newer
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn init(log_dir: &'d LogDir, producer_id: i64, epoch: i16) -> Result<Self> {
        let producer = IdempotentProducer::with_kind(producer_id, epoch, true)?;
        let logs = log_dir.logs();
        let mut coordinator_epoch = 0;
        for (_, log) in &logs {
            if let Some(state) = log.producer_state(producer_id) {
                if state.producer_epoch >= epoch {
                    return Err(Error::Producer {
                        producer_id,
                        kind: ProducerErrorKind::EpochNotNewer {
                            epoch,
                            current: state.producer_epoch,
                            dir: log.dir().to_path_buf(),
                        },
                    });
                }
                coordinator_epoch = coordinator_epoch.max(state.coordinator_epoch);
            }
        }
        let mut this = Self {
            log_dir,
            producer,
            coordinator_epoch,
            unfinished: None,
        };
        let open: BTreeSet<TopicPartition> = logs
            .iter()
            .filter(|(_, log)| {
                log.ongoing_transactions()
                    .iter()
                    .any(|(pid, _)| *pid == producer_id)
            })
            .map(|(tp, _)| tp.clone())
            .collect();
        if !open.is_empty() {
            tracing::info!(
                producer_id,
                epoch,
                partitions = open.len(),
                "aborting the open transactions of older epochs"
            );
            this.end(TxnResult::Abort, Durability::Fsync, open)?;
        }
        Ok(this)
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer.producer_id()
    }

    /// The epoch.
    pub fn epoch(&self) -> i16 {
        self.producer.epoch()
    }

    /// The coordinator epoch its markers carry.
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Begins a transaction. Markers a previous transaction left unwritten (its end failed
    /// part-way, or it was dropped and its abort failed) are written first, with its
    /// outcome, as Kafka's coordinator retries markers until they are written.
    ///
    /// # Errors
    /// As [`Log::write_txn_marker`] for those markers (they stay pending).
    ///
    /// ```
    /// use seglog::{LogConfig, LogDir, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let txn = producer.begin()?;
    /// assert_eq!(txn.partitions().count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn begin(&mut self) -> Result<Transaction<'_, 'd>> {
        if let Some(unfinished) = self.unfinished.take() {
            self.end(
                unfinished.result,
                unfinished.durability,
                unfinished.partitions,
            )?;
        }
        Ok(Transaction {
            producer: self,
            partitions: BTreeSet::new(),
            ended: false,
        })
    }

    /// Writes `result`'s marker on every partition of `partitions`, in order; on a failure
    /// the partitions not yet marked are kept for the next [`TransactionalProducer::begin`].
    fn end(
        &mut self,
        result: TxnResult,
        durability: Durability,
        partitions: BTreeSet<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, AppendInfo)>> {
        let mut written = Vec::with_capacity(partitions.len());
        let mut remaining = partitions.clone();
        for tp in partitions {
            let marker = self
                .log_dir
                .get_or_create(&tp)
                .and_then(|log| self.write_marker(&log, result, durability));
            match marker {
                Ok(info) => {
                    remaining.remove(&tp);
                    written.push((tp, info));
                }
                Err(e) => {
                    self.unfinished = Some(Unfinished {
                        result,
                        durability,
                        partitions: remaining,
                    });
                    return Err(e);
                }
            }
        }
        Ok(written)
    }

    /// The one place markers are written.
    fn write_marker(
        &self,
        log: &Log,
        result: TxnResult,
        durability: Durability,
    ) -> Result<AppendInfo> {
        log.write_txn_marker(
            self.producer.producer_id(),
            self.producer.epoch(),
            self.coordinator_epoch,
            result,
            None,
            durability,
        )
    }
}

/// One transaction of a [`TransactionalProducer`]: transactional batches appended to any
/// partitions of its [`LogDir`], ended by [`Transaction::commit`] or [`Transaction::abort`].
/// Dropping it unended aborts it (best effort, at [`Durability::PageCache`]; markers that
/// fail stay pending for the next [`TransactionalProducer::begin`]).
///
/// ```
/// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
///
/// let root = tempfile::tempdir()?;
/// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
/// let mut producer = TransactionalProducer::init(&log_dir, 5, 0)?;
/// let mut txn = producer.begin()?;
/// let mut records = BatchBuilder::new(0);
/// records.append(0, None, Some(b"draft"), &[]);
/// txn.send(&TopicPartition::new("drafts", 0), records)?;
/// txn.abort(Durability::PageCache)?; // read_committed consumers never see "draft"
/// let log = log_dir.log(&TopicPartition::new("drafts", 0)).expect("written");
/// assert!(log.ongoing_transactions().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Transaction<'p, 'd> {
    producer: &'p mut TransactionalProducer<'d>,
    partitions: BTreeSet<TopicPartition>,
    ended: bool,
}

impl Transaction<'_, '_> {
    /// Appends `records` as one transactional batch to `topic_partition` (created when it
    /// does not exist), at [`Durability::PageCache`]: the commit's durability covers it.
    ///
    /// # Errors
    /// As [`Transaction::send_with`].
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let mut txn = producer.begin()?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// let info = txn.send(&TopicPartition::new("orders", 0), records)?;
    /// assert_eq!(info.first_offset, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send(
        &mut self,
        topic_partition: &TopicPartition,
        records: BatchBuilder,
    ) -> Result<AppendInfo> {
        self.send_with(topic_partition, records, Durability::PageCache)
    }

    /// [`Transaction::send`] with an explicit [`Durability`].
    ///
    /// # Errors
    /// As [`IdempotentProducer::send_to`]. The transaction stays usable; a refused batch
    /// ([`Error::InvalidAppend`]) wrote nothing.
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let mut txn = producer.begin()?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// txn.send_with(&TopicPartition::new("orders", 0), records, Durability::Fsync)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_with(
        &mut self,
        topic_partition: &TopicPartition,
        records: BatchBuilder,
        durability: Durability,
    ) -> Result<AppendInfo> {
        let batch = self.producer.producer.prepare(topic_partition, records)?;
        let sent = self
            .producer
            .producer
            .send_to(self.producer.log_dir, &batch, durability);
        // A refusal wrote nothing; any other failure may have written the batch, and the
        // partition gets a marker to be safe.
        if !matches!(
            sent,
            Err(Error::InvalidAppend { .. } | Error::Producer { .. })
        ) {
            self.partitions.insert(topic_partition.clone());
        }
        sent
    }

    /// The partitions this transaction wrote to, in order.
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let mut txn = producer.begin()?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// txn.send(&TopicPartition::new("orders", 1), records.clone())?;
    /// txn.send(&TopicPartition::new("orders", 0), records)?;
    /// let names: Vec<String> = txn.partitions().map(ToString::to_string).collect();
    /// assert_eq!(names, ["orders-0", "orders-1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn partitions(&self) -> impl Iterator<Item = &TopicPartition> {
        self.partitions.iter()
    }

    /// Commits: one COMMIT marker on every partition written to, in partition order, each
    /// appended with `durability` ([`Durability::Fsync`] also syncs the transaction's data
    /// before it in that partition). Returns the markers written.
    ///
    /// # Errors
    /// As [`Log::write_txn_marker`]; the partitions not yet marked are committed by the next
    /// [`TransactionalProducer::begin`].
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let mut txn = producer.begin()?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// txn.send(&TopicPartition::new("orders", 0), records)?;
    /// let markers = txn.commit(Durability::Fsync)?;
    /// assert_eq!(markers[0].1.first_offset, 1); // after the data at offset 0
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit(self, durability: Durability) -> Result<Vec<(TopicPartition, AppendInfo)>> {
        self.finish(TxnResult::Commit, durability)
    }

    /// Aborts: one ABORT marker on every partition written to, as [`Transaction::commit`].
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    ///
    /// ```
    /// use seglog::{BatchBuilder, Durability, LogConfig, LogDir, TopicPartition, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let mut producer = TransactionalProducer::init(&log_dir, 9, 0)?;
    /// let mut txn = producer.begin()?;
    /// let mut records = BatchBuilder::new(0);
    /// records.append(0, None, Some(b"a"), &[]);
    /// let tp = TopicPartition::new("orders", 0);
    /// txn.send(&tp, records)?;
    /// txn.abort(Durability::PageCache)?;
    /// let log = log_dir.log(&tp).expect("written");
    /// assert_eq!(log.aborted_transactions(0, log.log_end_offset())?.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(self, durability: Durability) -> Result<Vec<(TopicPartition, AppendInfo)>> {
        self.finish(TxnResult::Abort, durability)
    }

    fn finish(
        mut self,
        result: TxnResult,
        durability: Durability,
    ) -> Result<Vec<(TopicPartition, AppendInfo)>> {
        self.ended = true;
        let partitions = std::mem::take(&mut self.partitions);
        self.producer.end(result, durability, partitions)
    }
}

impl Drop for Transaction<'_, '_> {
    fn drop(&mut self) {
        if self.ended || self.partitions.is_empty() {
            return;
        }
        let partitions = std::mem::take(&mut self.partitions);
        if let Err(error) = self
            .producer
            .end(TxnResult::Abort, Durability::PageCache, partitions)
        {
            tracing::warn!(
                producer_id = self.producer.producer_id(),
                %error,
                "abort of a dropped transaction failed; the next begin retries it"
            );
        }
    }
}
