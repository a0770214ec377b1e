//! Transactions over a [`LogDir`]: what Kafka's transactional client (`TransactionManager`)
//! and its transaction coordinator do together, for an embedded user, on top of the
//! primitives ([`Log::append_with`] of transactional batches, [`Log::write_txn_marker_with`]).
//!
//! [`TransactionalProducer::init`] is the coordinator's `InitProducerId`: the new epoch fences
//! the older ones. It first completes a commit a crash interrupted (its decision record, see
//! below), then aborts at the new epoch every other transaction the producer id left open (a
//! crash between its data and its markers). A [`Transaction`] appends transactional batches
//! to any partitions; commit or abort then writes one marker on every partition touched,
//! after all the data (Kafka's order: `EndTxn` waits for every produce, then the coordinator
//! writes one marker per partition).
//!
//! **Atomic commits.** Before the first COMMIT marker of a transaction holding data in two
//! partitions or more, the commit writes and fsyncs its decision ([`TxnDecision`], the
//! `seglog-txn-decision-<producer id>` file in the root: Kafka's coordinator logs
//! `PrepareCommit` in `__transaction_state` at that point), and removes it once every marker
//! is written. A crash in between leaves the decision, and `init` writes the missing COMMIT
//! markers: every partition ends committed, or (a crash before the decision was durable)
//! every partition is aborted. Aborts log nothing: an undecided transaction is aborted.
//!
//! **Transaction version 2** ([`TransactionalProducer::init_with`]): as Kafka 4.4's
//! coordinator under TV2 (`TransactionMetadata.prepareAbortOrCommit`), every transaction end
//! bumps the producer epoch: the markers carry the epoch + 1 and the next transaction's
//! batches use it, from sequence 0, so a zombie of the old epoch is fenced by every marker.

use std::collections::BTreeSet;

use crate::txn_decision::{marker_epoch_for, open_first_offset};
use crate::{
    AppendInfo, BatchBuilder, Durability, Error, IdempotentProducer, Log, LogDir,
    MAX_TRANSACTION_PARTITIONS, ProducerErrorKind, Result, TopicPartition, TransactionVersion,
    TxnDecision, TxnMarker, TxnResult,
};

/// A transactional producer over a [`LogDir`]: a producer id at an epoch that fenced every
/// older one, which runs one [`Transaction`] at a time.
///
/// A commit is atomic across partitions: it logs its decision ([`TxnDecision`]) before its
/// first marker, and [`TransactionalProducer::init`] completes a commit a crash cut short
/// before it aborts anything. Under [`TransactionVersion::V2`]
/// ([`TransactionalProducer::init_with`]) every commit and abort bumps the epoch, as Kafka's
/// transactions v2 do.
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
/// let committed: Vec<_> = log.owned_reader(0, Isolation::ReadCommitted).collect();
/// assert_eq!(committed.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TransactionalProducer<'d> {
    log_dir: &'d LogDir,
    producer: IdempotentProducer,
    coordinator_epoch: i32,
    transaction_version: TransactionVersion,
    /// A transaction end still to finish: one that failed part-way, or a dropped
    /// transaction whose abort failed. [`TransactionalProducer::begin`] finishes it first.
    unfinished: Option<Ending>,
}

/// A transaction end in progress: what is left of it.
#[derive(Debug)]
struct Ending {
    result: TxnResult,
    durability: Durability,
    /// The epoch its markers carry (the producer's, one more under TV2).
    marker_epoch: i16,
    /// The partitions still to mark, in order.
    partitions: BTreeSet<TopicPartition>,
    decision: Decision,
}

/// Where an [`Ending`]'s decision record stands.
#[derive(Debug)]
enum Decision {
    /// None is needed (an abort, or data in one partition at most).
    Unlogged,
    /// To write (and fsync) before the first marker.
    ToWrite(TxnDecision),
    /// Written: to remove once every marker is.
    Written,
}

impl<'d> TransactionalProducer<'d> {
    /// Kafka's `InitProducerId` for `producer_id` at `epoch`, as a coordinator runs it, under
    /// the default [`TransactionVersion::V0`] (the epoch stays the same across
    /// transactions): [`TransactionalProducer::init_with`].
    ///
    /// # Errors
    /// As [`TransactionalProducer::init_with`].
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
        Self::init_with(log_dir, producer_id, epoch, TransactionVersion::default())
    }

    /// Kafka's `InitProducerId` for `producer_id` at `epoch`, with markers written under
    /// `transaction_version` ([`TransactionVersion::V2`]: every transaction end bumps the
    /// epoch, as Kafka 4.4's transactions v2). In order:
    ///
    /// 1. `epoch` must be above the producer id's epoch in every partition of `log_dir`;
    /// 2. a decision record of `producer_id` left by a crash during a commit
    ///    ([`TxnDecision`]) is completed: every partition it lists that still holds that
    ///    transaction open gets its COMMIT marker, at the decision's epochs, fsynced (a
    ///    partition that has it already is left alone); then the record is removed;
    /// 3. every other open transaction of `producer_id` is aborted with an ABORT marker at
    ///    `epoch`, fsynced, which fences the older epochs in those partitions.
    ///
    /// The coordinator epoch of the markers is the largest the producer has in any partition
    /// (0 when none).
    ///
    /// # Errors
    /// [`ProducerErrorKind::InvalidIdOrEpoch`]; [`ProducerErrorKind::EpochNotNewer`] when a
    /// partition already holds `producer_id` at `epoch` or later; [`Error::CorruptTxnDecision`]
    /// (or [`Error::Io`] naming the file) when the decision record cannot be read: a commit it
    /// may hold is never taken for an abort, and nothing is written until the file is repaired
    /// or removed. These are checked before anything is written. Then as
    /// [`Log::write_txn_marker_with`].
    ///
    /// ```
    /// use seglog::{LogConfig, LogDir, TransactionVersion, TransactionalProducer};
    ///
    /// let root = tempfile::tempdir()?;
    /// let log_dir = LogDir::open(root.path(), LogConfig::default())?;
    /// let producer = TransactionalProducer::init_with(&log_dir, 9, 0, TransactionVersion::V2)?;
    /// assert_eq!(producer.transaction_version(), TransactionVersion::V2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn init_with(
        log_dir: &'d LogDir,
        producer_id: i64,
        epoch: i16,
        transaction_version: TransactionVersion,
    ) -> Result<Self> {
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
        if let Some(decision) = TxnDecision::read(log_dir.root(), producer_id)? {
            crate::txn_decision::complete(log_dir, &decision)?;
        }
        let mut this = Self {
            log_dir,
            producer,
            coordinator_epoch,
            transaction_version,
            unfinished: None,
        };
        let open: BTreeSet<TopicPartition> = logs
            .iter()
            .filter(|(_, log)| open_first_offset(log, producer_id).is_some())
            .map(|(tp, _)| tp.clone())
            .collect();
        if !open.is_empty() {
            tracing::info!(
                producer_id,
                epoch,
                partitions = open.len(),
                "aborting the open transactions of older epochs"
            );
            // The new epoch is the bump: the fencing markers carry it under every version.
            this.run(Ending {
                result: TxnResult::Abort,
                durability: Durability::Fsync,
                marker_epoch: epoch,
                partitions: open,
                decision: Decision::Unlogged,
            })?;
        }
        Ok(this)
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer.producer_id()
    }

    /// The epoch of the next transaction's batches (under [`TransactionVersion::V2`], one
    /// more after every transaction end).
    pub fn epoch(&self) -> i16 {
        self.producer.epoch()
    }

    /// The coordinator epoch its markers carry.
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// The transaction version its markers are written under.
    pub fn transaction_version(&self) -> TransactionVersion {
        self.transaction_version
    }

    /// Begins a transaction. A previous transaction end left unfinished (it failed part-way,
    /// or a dropped transaction's abort failed) is finished first, with its outcome, as Kafka's
    /// coordinator retries markers until they are written.
    ///
    /// # Errors
    /// As [`Log::write_txn_marker_with`] for those markers (they stay pending);
    /// [`ProducerErrorKind::EpochExhausted`] under [`TransactionVersion::V2`] at epoch
    /// `i16::MAX`, whose end could not bump it (Kafka's coordinator moves to a new producer
    /// id there: use one).
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
            self.run(unfinished)?;
        }
        if marker_epoch_for(self.epoch(), self.transaction_version).is_none() {
            return Err(Error::Producer {
                producer_id: self.producer_id(),
                kind: ProducerErrorKind::EpochExhausted {
                    epoch: self.epoch(),
                },
            });
        }
        Ok(Transaction {
            producer: self,
            partitions: BTreeSet::new(),
            ended: false,
        })
    }

    /// Ends the current transaction with `result` on `partitions`: a commit of data in two
    /// partitions or more logs its decision first.
    fn end(
        &mut self,
        result: TxnResult,
        durability: Durability,
        partitions: BTreeSet<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, AppendInfo)>> {
        let producer_id = self.producer_id();
        let producer_epoch = self.epoch();
        // `begin` refused the epoch that could not be bumped.
        let marker_epoch =
            marker_epoch_for(producer_epoch, self.transaction_version).unwrap_or(producer_epoch);
        let open: Vec<(TopicPartition, i64)> = partitions
            .iter()
            .filter_map(|tp| {
                let log = self.log_dir.log(tp)?;
                open_first_offset(&log, producer_id).map(|first| (tp.clone(), first))
            })
            .collect();
        let decision = if result == TxnResult::Commit && open.len() >= 2 {
            Decision::ToWrite(TxnDecision {
                producer_id,
                producer_epoch,
                marker_epoch,
                coordinator_epoch: self.coordinator_epoch,
                result,
                transaction_version: self.transaction_version,
                partitions: open,
            })
        } else {
            Decision::Unlogged
        };
        self.run(Ending {
            result,
            durability,
            marker_epoch,
            partitions,
            decision,
        })
    }

    /// Runs what is left of `ending`: the decision record, the markers in partition order,
    /// the record's removal, then (TV2) the epoch bump. On a failure what is left is kept
    /// for the next [`TransactionalProducer::begin`].
    fn run(&mut self, mut ending: Ending) -> Result<Vec<(TopicPartition, AppendInfo)>> {
        let (io, root) = (self.log_dir.io(), self.log_dir.root());
        if let Decision::ToWrite(decision) = &ending.decision {
            if let Err(e) = self
                .sync_data(decision, ending.durability)
                .and_then(|()| decision.write(io, root))
            {
                self.unfinished = Some(ending);
                return Err(e);
            }
            ending.decision = Decision::Written;
        }
        let mut written = Vec::with_capacity(ending.partitions.len());
        while let Some(tp) = ending.partitions.first().cloned() {
            let marker = self
                .log_dir
                .get_or_create(&tp)
                .and_then(|log| self.write_marker(&log, &ending));
            match marker {
                Ok(info) => {
                    ending.partitions.remove(&tp);
                    written.push((tp, info));
                }
                Err(e) => {
                    self.unfinished = Some(ending);
                    return Err(e);
                }
            }
        }
        if let Decision::Written = ending.decision
            && let Err(e) = TxnDecision::remove(io, root, self.producer_id())
        {
            self.unfinished = Some(ending);
            return Err(e);
        }
        if ending.marker_epoch != self.epoch() {
            // TV2: the next transaction uses the markers' epoch, from sequence 0.
            self.producer.adopt_epoch(ending.marker_epoch);
        } else if self.producer.take_resync() {
            // A partition answered OutOfOrderSequence (its last batches were truncated
            // away): as Kafka's transactional client after the abortable error (KIP-360), a
            // new epoch from sequence 0, which every partition takes. At `i16::MAX` the
            // producer is marked exhausted and its next batch says so.
            let _ = self.producer.bump_epoch();
        }
        Ok(written)
    }

    /// At [`Durability::Fsync`], makes the transaction's data durable in every partition of
    /// `decision` before the decision is: a power loss after it then finds every partition's
    /// data for `init` to commit (a COMMIT marker's own fsync covers only its partition).
    fn sync_data(&self, decision: &TxnDecision, durability: Durability) -> Result<()> {
        if !matches!(durability, Durability::Fsync) {
            return Ok(());
        }
        for (tp, _) in &decision.partitions {
            if let Some(log) = self.log_dir.log(tp) {
                log.sync_to(log.log_end_offset())?;
            }
        }
        Ok(())
    }

    /// The one place markers are written.
    fn write_marker(&self, log: &Log, ending: &Ending) -> Result<AppendInfo> {
        log.write_txn_marker_with(
            TxnMarker {
                producer_id: self.producer.producer_id(),
                producer_epoch: ending.marker_epoch,
                coordinator_epoch: self.coordinator_epoch,
                result: ending.result,
                leader_epoch: None,
                transaction_version: self.transaction_version,
            },
            ending.durability,
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
    /// As [`IdempotentProducer::send_to`]; [`ProducerErrorKind::TooManyPartitions`] for a
    /// partition beyond [`MAX_TRANSACTION_PARTITIONS`]. The transaction stays usable; a
    /// refused batch ([`Error::InvalidAppend`]) wrote nothing. After
    /// [`crate::AppendErrorKind::OutOfOrderSequence`] (the partition lost the producer's last
    /// batches, say to a truncation) that partition refuses the transaction's batches until
    /// it ends; the end then moves the producer to a new epoch from sequence 0 (Kafka's
    /// client bumps the epoch after that error), and the next transaction is in sequence on
    /// every partition.
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
        if self.partitions.len() >= MAX_TRANSACTION_PARTITIONS
            && !self.partitions.contains(topic_partition)
        {
            return Err(Error::Producer {
                producer_id: self.producer.producer_id(),
                kind: ProducerErrorKind::TooManyPartitions {
                    limit: MAX_TRANSACTION_PARTITIONS,
                },
            });
        }
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
    /// before it in that partition). Returns the markers written (under
    /// [`TransactionVersion::V2`] they carry the epoch + 1, which the producer then moves to).
    ///
    /// Atomic across partitions: when the transaction holds data in two partitions or more,
    /// its decision ([`TxnDecision`]) is written and fsynced in the root before the first
    /// marker and removed after the last. A crash in between leaves the decision, and the
    /// next [`TransactionalProducer::init`] writes the missing markers: every partition ends
    /// committed, or, when the crash came before the decision was durable, aborted. At
    /// [`Durability::PageCache`] this holds across a process crash; at [`Durability::Fsync`]
    /// (which first makes the transaction's data durable in every partition, then the
    /// decision) across a power loss too.
    ///
    /// # Errors
    /// [`Error::Io`] writing or removing the decision; as [`Log::write_txn_marker_with`]. The
    /// outcome is then left to the next [`TransactionalProducer::begin`] (which finishes the
    /// commit: the decision, the markers not yet written, the removal) or, after a crash, to
    /// `init`, as above.
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
        if partitions.is_empty() {
            // Nothing to mark; under TV2 no epoch bump either (no marker carries one).
            return Ok(Vec::new());
        }
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
