//! The producer state of a [`Log`] (Kafka's `UnifiedLog` parts over `ProducerStateManager`):
//! validation of appends (`analyzeAndValidateProducerState`), transaction markers (the
//! broker's `WriteTxnMarkers` path), the last stable offset, aborted transactions for
//! `read_committed` fetches (`collectAbortedTransactions`), snapshots and expiry.
//!
//! **Order within an append** (under the writer lock): validate against the state (a
//! duplicate returns here, nothing written) → write the batches → append each ABORT's entry
//! to the `.txnindex` of the segment holding the marker → update the state → leader-epoch
//! checkpoint → publish the new log end together with the open transactions (the view's
//! `txns`). A reader therefore never sees a last stable offset past an abort marker whose
//! `.txnindex` entry is not written.

use std::collections::BTreeMap;
use std::sync::Arc;

use seglog_records::{BatchRef, ControlRecordType, EndTransactionMarker};
use seglog_segment::{AbortedTxn, Segment};

use crate::log::Log;
use crate::producer_state::{BatchMetadata, CompletedTxn, ProducerAppend, ProducerOrigin};
use crate::sync::lock;
use crate::validate::{Analysis, Origin};
use crate::view::{LogView, UnstableTxns};
use crate::{AppendErrorKind, Error, Result};

/// An aborted transaction as a fetch returns it (Kafka's `FetchResponse.AbortedTransaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AbortedTransaction {
    /// The producer id.
    pub producer_id: i64,
    /// The transaction's first offset.
    pub first_offset: i64,
}

/// The outcome a transaction marker writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnResult {
    /// A COMMIT marker.
    Commit,
    /// An ABORT marker.
    Abort,
}

/// The transaction version a coordinator writes a marker under (Kafka's `transaction.version`
/// feature, passed to `UnifiedLog.appendAsLeader` as `transactionVersion`; KIP-890, KIP-1228).
/// It changes only how the marker's producer epoch is checked, as Kafka 4.4's
/// `ProducerAppendInfo.checkProducerEpoch` checks it. Default: `V0`, what a `WriteTxnMarkers`
/// request without the field carries (Kafka 4.4's `WritableTxnMarker.transactionVersion`,
/// request versions before 2), and what [`Log::write_txn_marker`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransactionVersion {
    /// TV0 (the original protocol): as [`TransactionVersion::V1`].
    #[default]
    V0,
    /// TV1: a marker's epoch must not be below the producer's current epoch.
    V1,
    /// TV2 (transactions v2, Kafka 4.0+: the producer epoch is bumped at every transaction
    /// end): a marker's epoch must be above the producer's current epoch, except that a
    /// repeat at the current epoch is accepted (and written) when the producer has no open
    /// transaction, or at epoch `i16::MAX` (an idempotent retry of a completed marker).
    V2,
}

impl TransactionVersion {
    /// Kafka's number for it (0, 1, 2).
    pub fn number(self) -> i16 {
        match self {
            TransactionVersion::V0 => 0,
            TransactionVersion::V1 => 1,
            TransactionVersion::V2 => 2,
        }
    }
}

/// A transaction marker to write ([`Log::write_txn_marker_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    /// The producer whose transaction ends (not negative).
    pub producer_id: i64,
    /// The marker's producer epoch (not negative).
    pub producer_epoch: i16,
    /// The transaction coordinator's epoch.
    pub coordinator_epoch: i32,
    /// COMMIT or ABORT.
    pub result: TxnResult,
    /// Written as [`Log::append_as_leader`] writes, when set.
    pub leader_epoch: Option<i32>,
    /// The rules its producer epoch is checked by.
    pub transaction_version: TransactionVersion,
}

/// What the state says about an append before it is written.
#[derive(Debug)]
pub(crate) enum ProducerCheck {
    /// A retry of one of a producer's last 5 batches: nothing is written.
    Duplicate(BatchMetadata),
    /// The updates to apply once the batches are written.
    Pending(Pending),
}

/// The per-producer updates of an append, applied after the write.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    appends: BTreeMap<i64, ProducerAppend>,
    completed: Vec<CompletedTxn>,
}

impl Pending {
    /// Whether the append touches no producer state.
    pub(crate) fn is_empty(&self) -> bool {
        self.appends.is_empty()
    }
}

impl Log {
    /// Kafka's `analyzeAndValidateProducerState`, under the writer lock, once offsets are
    /// known: validates every batch with a producer id against the state.
    ///
    /// # Errors
    /// The typed rejections of [`AppendErrorKind`]; nothing is written.
    pub(crate) fn check_producers(
        &self,
        analysis: &Analysis,
        chunks: &[&[u8]],
        origin: Origin,
        transaction_version: Option<TransactionVersion>,
    ) -> Result<ProducerCheck> {
        let origin = match origin {
            Origin::Leader => ProducerOrigin::Client,
            Origin::Coordinator => ProducerOrigin::Coordinator,
            Origin::Follower => ProducerOrigin::Replication,
        };
        let producers = lock(&self.producers);
        let mut pending = Pending::default();
        for span in &analysis.batches {
            let h = &span.header;
            if h.magic < seglog_records::MAGIC_V2 || h.producer_id < 0 {
                continue;
            }
            let batch =
                BatchRef::parse(&chunks[span.chunk][span.at..], 0).map_err(Error::Records)?;
            let kind = crate::producer_files::batch_kind_of(&batch)?;
            let kind = with_offsets(kind, h.base_offset.unwrap_or(h.last_offset), h.last_offset);
            if origin == ProducerOrigin::Client
                && let crate::producer_state::BatchKind::Data {
                    first_sequence,
                    last_sequence,
                    ..
                } = kind
                && let Some(entry) = producers.state.producers.get(&h.producer_id)
                && let Some(duplicate) =
                    entry.find_duplicate(h.producer_epoch, first_sequence, last_sequence)
            {
                return Ok(ProducerCheck::Duplicate(duplicate));
            }
            let append = pending.appends.entry(h.producer_id).or_insert_with(|| {
                producers
                    .state
                    .prepare(h.producer_id, origin)
                    .with_transaction_version(transaction_version)
            });
            if let Some(completed) = append.append(h.producer_epoch, kind)? {
                pending.completed.push(completed);
            }
        }
        Ok(ProducerCheck::Pending(pending))
    }

    /// After the batches are written (before they are published, under the writer lock):
    /// the `.txnindex` entries of aborts (in `segment`, the one holding the markers), the
    /// state, and the new end of the state. Returns the open transactions for the view.
    ///
    /// # Errors
    /// I/O errors of the `.txnindex` (which poison the log: the batches are written but not
    /// published, and a reopen recovers them).
    pub(crate) fn apply_producers(
        &self,
        pending: Pending,
        segment: &Segment,
        next_offset: i64,
    ) -> Result<Option<UnstableTxns>> {
        let mut producers = lock(&self.producers);
        let touched = !pending.is_empty();
        for (_, append) in pending.appends {
            producers.state.update(append);
        }
        for completed in &pending.completed {
            if let Some(entry) = producers.complete(completed) {
                segment
                    .append_aborted_txn(entry)
                    .map_err(|e| self.poisoned_by("append to .txnindex", e))?;
            }
        }
        producers.state.map_end_offset = next_offset;
        if !touched {
            return Ok(None);
        }
        // Kafka's onHighWatermarkUpdated: completed transactions whose marker lies below the
        // high watermark are stable (they no longer count for the LSO), so they are dropped
        // here rather than kept forever.
        let high_watermark = self.published.load().high_watermark.offset;
        producers.state.remove_unreplicated_below(high_watermark);
        Ok(Some(Arc::new(producers.unstable_txns())))
    }

    /// Writes a transaction marker (Kafka's `WriteTxnMarkers` path, `appendAsLeader` with
    /// origin COORDINATOR) under the default transaction version:
    /// [`Log::write_txn_marker_with`] with [`TransactionVersion::V0`] (a marker's epoch must
    /// not be below the producer's).
    ///
    /// # Errors
    /// As [`Log::write_txn_marker_with`].
    pub fn write_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        result: TxnResult,
        leader_epoch: Option<i32>,
        durability: crate::Durability,
    ) -> Result<crate::AppendInfo> {
        self.write_txn_marker_with(
            TxnMarker {
                producer_id,
                producer_epoch,
                coordinator_epoch,
                result,
                leader_epoch,
                transaction_version: TransactionVersion::default(),
            },
            durability,
        )
    }

    /// Writes a transaction marker (Kafka's `WriteTxnMarkers` path, `appendAsLeader` with
    /// origin COORDINATOR and the marker's transaction version): a control batch with one
    /// COMMIT or ABORT record for `producer_id` at `producer_epoch`, with
    /// `coordinator_epoch`, validated against the producer's state (an older coordinator
    /// epoch is fenced; the producer epoch as [`TransactionVersion`] says). It completes the
    /// producer's open transaction (a marker without one only moves its epochs, as Kafka
    /// does); an ABORT of a non-empty transaction adds its `.txnindex` entry. With
    /// `leader_epoch`, it is written as [`Log::append_as_leader`] does.
    ///
    /// # Errors
    /// [`AppendErrorKind::InvalidMarker`] for a negative producer id or epoch;
    /// [`AppendErrorKind::InvalidProducerEpoch`], [`AppendErrorKind::CoordinatorFenced`];
    /// as [`Log::append_with`] otherwise.
    pub fn write_txn_marker_with(
        &self,
        marker: TxnMarker,
        durability: crate::Durability,
    ) -> Result<crate::AppendInfo> {
        let TxnMarker {
            producer_id,
            producer_epoch,
            coordinator_epoch,
            result,
            leader_epoch,
            transaction_version,
        } = marker;
        if producer_id < 0 || producer_epoch < 0 {
            return Err(Error::InvalidAppend {
                kind: AppendErrorKind::InvalidMarker {
                    producer_id,
                    epoch: producer_epoch,
                },
            });
        }
        let control_type = match result {
            TxnResult::Commit => ControlRecordType::Commit,
            TxnResult::Abort => ControlRecordType::Abort,
        };
        let batch = seglog_records::BatchBuilder::end_transaction_marker(
            0,
            self.clock.now_ms(),
            leader_epoch.unwrap_or(-1),
            producer_id,
            producer_epoch,
            control_type,
            EndTransactionMarker::new(coordinator_epoch),
        )
        .map_err(Error::Records)?;
        self.append_marker(&batch, leader_epoch, durability, transaction_version)
    }

    /// The last stable offset (Kafka's `lastStableOffset`): the first offset of the earliest
    /// transaction not yet decided below the high watermark (open, or whose marker is not
    /// below the high watermark), else the high watermark. `read_committed` reads stop here.
    pub fn last_stable_offset(&self) -> i64 {
        self.published.load().last_stable_offset()
    }

    /// Kafka's first unstable offset: `None` when no transaction is undecided.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.published.load().first_unstable_offset()
    }

    /// The number of producer ids in the state (Kafka's `producerIdCount`).
    pub fn producer_count(&self) -> usize {
        lock(&self.producers).state.producers.len()
    }

    /// The state of `producer_id`, if it has any.
    pub fn producer_state(&self, producer_id: i64) -> Option<crate::ProducerStateEntry> {
        lock(&self.producers)
            .state
            .producers
            .get(&producer_id)
            .cloned()
    }

    /// Every producer's state, by producer id.
    pub fn producer_states(&self) -> Vec<crate::ProducerStateEntry> {
        lock(&self.producers)
            .state
            .producers
            .values()
            .cloned()
            .collect()
    }

    /// The open transactions as `(producer id, first offset)`, by first offset.
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        lock(&self.producers)
            .state
            .ongoing
            .values()
            .map(|t| (t.producer_id, t.first_offset))
            .collect()
    }

    /// The offsets of the producer snapshots on disk (`<offset>.snapshot`), oldest first.
    pub fn producer_snapshot_offsets(&self) -> Vec<i64> {
        lock(&self.producers).snapshot_offsets()
    }

    /// The `.txnindex` entries of every segment as `read_committed` uses them: each segment's
    /// file checked against its markers first, as at a segment's first `read_committed` use
    /// (rebuilt from them when it differs; a read-only log keeps a rebuilt index in memory),
    /// oldest segment first; segments without entries are left out.
    ///
    /// # Errors
    /// `.txnindex` read errors; the errors of reading a segment's batches for the check.
    pub fn txn_index_entries(&self) -> Result<Vec<(i64, Vec<AbortedTxn>)>> {
        let view = self.published.load();
        let mut out = Vec::new();
        for (base, segment) in view.segments.iter() {
            self.check_txn_index(&view, segment)?;
            let entries = segment.aborted_txns()?;
            if !entries.is_empty() {
                out.push((base, entries));
            }
        }
        Ok(out)
    }

    /// Kafka's `collectAbortedTransactions(startOffset, upperBoundOffset)`: the aborted
    /// transactions overlapping `[start_offset, upper_bound_offset)`, from the segment
    /// holding `start_offset` on, until an entry's last stable offset reaches the bound.
    ///
    /// # Errors
    /// `.txnindex` read errors.
    pub fn aborted_transactions(
        &self,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTransaction>> {
        let view = self.published.load();
        // Below the local log start, the remote `.txnindex`es first (`remote_read.rs`).
        if let Some(tier) = self.remote_for(start_offset) {
            let (mut out, complete) =
                self.remote_aborted(&*tier, start_offset, upper_bound_offset)?;
            if !complete {
                let local = view.log_start_offset;
                out.extend(self.collect_aborted(&view, local, upper_bound_offset)?);
            }
            return Ok(out);
        }
        self.collect_aborted(&view, start_offset, upper_bound_offset)
    }

    pub(crate) fn collect_aborted(
        &self,
        view: &LogView<Arc<Segment>>,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTransaction>> {
        let mut out = Vec::new();
        for (_, segment) in view.segments.starting_at_floor(start_offset) {
            // Checked against the segment's markers at first use, rebuilt if it differs.
            self.check_txn_index(view, segment)?;
            let found = segment.collect_aborted_txns(start_offset, upper_bound_offset)?;
            out.extend(
                found
                    .aborted
                    .iter()
                    .map(|t: &AbortedTxn| AbortedTransaction {
                        producer_id: t.producer_id,
                        first_offset: t.first_offset,
                    }),
            );
            if found.complete {
                break;
            }
        }
        Ok(out)
    }

    /// Takes a producer snapshot at the state's end now (Kafka's `takeProducerSnapshot`),
    /// when it moved since the last one. Returns its offset.
    ///
    /// # Errors
    /// [`Error::ReadOnly`], [`Error::Closed`], [`Error::Poisoned`]; I/O errors.
    pub fn take_producer_snapshot(&self) -> Result<Option<i64>> {
        let _writer = self.writable()?;
        let mut producers = lock(&self.producers);
        let offset = producers.state.map_end_offset;
        Ok(producers.take_snapshot(true)?.map(|_| offset))
    }

    /// Kafka's `removeExpiredProducers` at `now_ms` (run by [`Log::tick`]); returns how many
    /// producer ids were removed.
    pub(crate) fn remove_expired_producers(&self, now_ms: i64) -> usize {
        let mut producers = lock(&self.producers);
        let expiration = producers.expiration_ms;
        producers.state.remove_expired(now_ms, expiration)
    }

    /// After a roll to `new_base` (writer lock held): Kafka's snapshot at the new segment's
    /// base, without an fsync (the next flush syncs it).
    pub(crate) fn producers_rolled(&self, new_base: i64) -> Result<()> {
        let mut producers = lock(&self.producers);
        producers.state.map_end_offset = new_base;
        producers.take_snapshot(false).map(drop)
    }

    /// Before a flush returns: the snapshots taken without an fsync are synced.
    pub(crate) fn sync_producer_snapshots(&self) -> Result<()> {
        lock(&self.producers).sync_pending()
    }

    /// At close: a snapshot at the log end (Kafka's `close`).
    pub(crate) fn producers_closed(&self, log_end_offset: i64) -> Result<()> {
        let mut producers = lock(&self.producers);
        producers.state.map_end_offset = producers.state.map_end_offset.max(log_end_offset);
        producers.take_snapshot(true).map(drop)
    }

    /// After retention deleted the segments at `bases` and the log start moved, or a cleaner
    /// swap replaced them (the log start unchanged): their snapshots go.
    pub(crate) fn producers_segments_deleted(
        &self,
        bases: &[i64],
        log_start_offset: i64,
    ) -> Result<()> {
        lock(&self.producers).segments_deleted(bases, log_start_offset)
    }

    /// After the log start moved (DeleteRecords).
    pub(crate) fn producers_log_start_moved(&self, log_start_offset: i64) {
        lock(&self.producers).log_start_incremented(log_start_offset);
    }

    /// After a truncation to `offset` (writer lock held, `segments` the truncated map, not yet
    /// published): Kafka's `rebuildProducerState(offset)`; returns the open transactions the
    /// truncated view is published with (in the same view as its lowered log end and high
    /// watermark, so no reader sees an LSO above the rebuilt state's first unstable offset).
    pub(crate) fn producers_truncated(
        &self,
        segments: &crate::segment_map::SegmentMap<Arc<Segment>>,
        log_start_offset: i64,
        offset: i64,
    ) -> Result<UnstableTxns> {
        let mut producers = lock(&self.producers);
        let mut report = crate::ProducerLoad::default();
        producers.rebuild(
            segments,
            log_start_offset,
            offset,
            self.clock.now_ms(),
            false,
            &Default::default(),
            &Default::default(),
            &mut report,
        )?;
        Ok(Arc::new(producers.unstable_txns()))
    }

    /// After the log was emptied and restarted at `offset`.
    pub(crate) fn producers_truncated_fully(&self, offset: i64) -> Result<()> {
        lock(&self.producers).truncate_fully_and_start_at(offset)
    }
}

/// The batch facts with the offsets the append assigned.
fn with_offsets(
    kind: crate::producer_state::BatchKind,
    first_offset: i64,
    last_offset: i64,
) -> crate::producer_state::BatchKind {
    use crate::producer_state::BatchKind;
    match kind {
        BatchKind::Data {
            first_sequence,
            last_sequence,
            max_timestamp_ms,
            transactional,
            ..
        } => BatchKind::Data {
            first_sequence,
            last_sequence,
            first_offset,
            last_offset,
            max_timestamp_ms,
            transactional,
        },
        BatchKind::Marker(marker) => BatchKind::Marker(marker.map(|mut m| {
            m.offset = first_offset;
            m
        })),
    }
}
