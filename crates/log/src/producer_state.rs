//! Producer state (Kafka's `ProducerStateManager`, `ProducerStateEntry`, `BatchMetadata`,
//! `ProducerAppendInfo`, `TxnMetadata`, `CompletedTxn`): per producer id its epoch, the
//! metadata of its last 5 batches, its coordinator epoch, last timestamp and the first offset
//! of its open transaction; the open and the not yet replicated transactions, which give the
//! first unstable offset. Pure state: the snapshot files are written by `producer_files.rs`,
//! the log drives it from `log_producers.rs`.

use std::collections::{BTreeMap, VecDeque};

use crate::producer_snapshot::ProducerSnapshotEntry;
use crate::{AppendErrorKind, Error, Result, TransactionVersion};

/// Batches of a producer whose metadata is kept for deduplication (Kafka's
/// `NUM_BATCHES_TO_RETAIN`).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH`.
const NO_PRODUCER_EPOCH: i16 = -1;
/// Kafka's `RecordBatch.NO_SEQUENCE`.
const NO_SEQUENCE: i32 = -1;

/// The metadata of one batch of a producer (Kafka's `BatchMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchMetadata {
    /// The batch's last sequence.
    pub last_sequence: i32,
    /// The batch's last offset.
    pub last_offset: i64,
    /// `last offset − first offset`.
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp_ms: i64,
}

impl BatchMetadata {
    /// The first sequence (`last_sequence − offset_delta`, wrapping below 0 past `i32::MAX`
    /// as Kafka's `DefaultRecordBatch.decrementSequence`).
    pub fn first_sequence(&self) -> i32 {
        crate::producer_snapshot::decrement_sequence(self.last_sequence, self.offset_delta)
    }

    /// The batch's first offset (`last_offset − offset_delta`, wrapping as Kafka's `long`
    /// arithmetic does: a snapshot may hold any pair).
    pub fn first_offset(&self) -> i64 {
        self.last_offset.wrapping_sub(i64::from(self.offset_delta))
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`.
pub(crate) fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// One producer id's state (Kafka's `ProducerStateEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch (-1 when none is known).
    pub producer_epoch: i16,
    /// The coordinator epoch of its last marker (-1 when none).
    pub coordinator_epoch: i32,
    /// The timestamp of its last batch or marker.
    pub last_timestamp_ms: i64,
    /// First offset of its open transaction.
    pub current_txn_first_offset: Option<i64>,
    batches: VecDeque<BatchMetadata>,
}

impl ProducerStateEntry {
    /// A producer with no state (Kafka's `ProducerStateEntry.empty`).
    pub fn empty(producer_id: i64) -> Self {
        Self {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: -1,
            last_timestamp_ms: -1,
            current_txn_first_offset: None,
            batches: VecDeque::new(),
        }
    }

    /// The metadata of the retained batches, oldest first (at most
    /// [`NUM_BATCHES_TO_RETAIN`]).
    pub fn batches(&self) -> impl ExactSizeIterator<Item = &BatchMetadata> {
        self.batches.iter()
    }

    /// Whether no batch is retained.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The last sequence written (-1 when no batch is retained).
    pub fn last_sequence(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_sequence)
    }

    /// The last offset written (-1 when no batch is retained).
    pub fn last_data_offset(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.last_offset)
    }

    fn last_offset_delta(&self) -> i32 {
        self.batches.back().map_or(0, |b| b.offset_delta)
    }

    /// The retained batch of this epoch with exactly this sequence range (Kafka's
    /// `findDuplicateBatch`).
    pub fn find_duplicate(
        &self,
        epoch: i16,
        first_sequence: i32,
        last_sequence: i32,
    ) -> Option<BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_sequence() == first_sequence && b.last_sequence == last_sequence)
            .copied()
    }

    fn maybe_update_epoch(&mut self, epoch: i16) {
        if self.producer_epoch != epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
    }

    fn add_batch_metadata(&mut self, batch: BatchMetadata) {
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
    }

    fn add_batch(&mut self, epoch: i16, batch: BatchMetadata) {
        self.maybe_update_epoch(epoch);
        self.add_batch_metadata(batch);
        self.last_timestamp_ms = batch.timestamp_ms;
    }

    /// Kafka's `update(ProducerStateEntry)`: takes `next`'s epoch, batches, coordinator
    /// epoch, transaction and timestamp.
    fn update_from(&mut self, next: ProducerStateEntry) {
        self.maybe_update_epoch(next.producer_epoch);
        for batch in next.batches {
            self.add_batch_metadata(batch);
        }
        self.coordinator_epoch = next.coordinator_epoch;
        self.current_txn_first_offset = next.current_txn_first_offset;
        self.last_timestamp_ms = next.last_timestamp_ms;
    }

    /// The snapshot entry Kafka's `writeSnapshot` writes for it.
    pub fn to_snapshot_entry(&self) -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id: self.producer_id,
            epoch: self.producer_epoch,
            last_sequence: self.last_sequence(),
            last_offset: self.last_data_offset(),
            offset_delta: self.last_offset_delta(),
            timestamp_ms: self.last_timestamp_ms,
            coordinator_epoch: self.coordinator_epoch,
            current_txn_first_offset: self.current_txn_first_offset.unwrap_or(-1),
        }
    }

    /// The state Kafka's `readSnapshot` makes of a snapshot entry (one batch, when its last
    /// offset is >= 0).
    pub fn from_snapshot_entry(e: &ProducerSnapshotEntry) -> Self {
        let mut batches = VecDeque::new();
        if e.last_offset >= 0 {
            batches.push_back(BatchMetadata {
                last_sequence: e.last_sequence,
                last_offset: e.last_offset,
                offset_delta: e.offset_delta,
                timestamp_ms: e.timestamp_ms,
            });
        }
        Self {
            producer_id: e.producer_id,
            producer_epoch: e.epoch,
            coordinator_epoch: e.coordinator_epoch,
            last_timestamp_ms: e.timestamp_ms,
            current_txn_first_offset: (e.current_txn_first_offset >= 0)
                .then_some(e.current_txn_first_offset),
            batches,
        }
    }
}

/// Who is writing (Kafka's `AppendOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProducerOrigin {
    /// A producer (leader append): epochs and sequences are validated, duplicates detected.
    Client,
    /// The transaction coordinator's markers: epochs and coordinator epochs validated.
    Coordinator,
    /// A follower append or recovery: epochs, sequences and coordinator epochs are not
    /// validated; a non-transactional batch inside an open transaction is still refused
    /// ([`AppendErrorKind::InvalidTxnState`]), as Kafka refuses it for every origin.
    Replication,
}

/// A transaction whose marker was just written (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompletedTxn {
    pub(crate) producer_id: i64,
    pub(crate) first_offset: i64,
    pub(crate) last_offset: i64,
    pub(crate) is_aborted: bool,
}

/// What one batch of a producer carries, for [`ProducerAppend::append`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum BatchKind {
    /// A data batch.
    Data {
        first_sequence: i32,
        last_sequence: i32,
        first_offset: i64,
        last_offset: i64,
        max_timestamp_ms: i64,
        transactional: bool,
    },
    /// A COMMIT or ABORT marker (`None`: an empty control batch, the cleaner's leftover).
    Marker(Option<Marker>),
}

/// A decoded transaction marker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marker {
    pub(crate) offset: i64,
    pub(crate) timestamp_ms: i64,
    pub(crate) coordinator_epoch: i32,
    pub(crate) is_abort: bool,
}

/// One producer's pending update during an append (Kafka's `ProducerAppendInfo`).
#[derive(Debug, Clone)]
pub(crate) struct ProducerAppend {
    producer_id: i64,
    origin: ProducerOrigin,
    current: ProducerStateEntry,
    updated: ProducerStateEntry,
    /// First offsets of the transactions this append started.
    started: Vec<i64>,
    /// The coordinator's transaction version for markers (`None`: Kafka's `TV_UNKNOWN`, the
    /// TV0/TV1 rule).
    transaction_version: Option<TransactionVersion>,
}

impl ProducerAppend {
    /// The transaction version its markers are checked under (see [`TransactionVersion`]).
    pub(crate) fn with_transaction_version(mut self, version: Option<TransactionVersion>) -> Self {
        self.transaction_version = version;
        self
    }

    /// Validates and applies one batch of this producer with `epoch`; returns the transaction
    /// a marker completed (only for a non-empty transaction, as Kafka).
    ///
    /// # Errors
    /// [`AppendErrorKind::InvalidProducerEpoch`], [`AppendErrorKind::OutOfOrderSequence`],
    /// [`AppendErrorKind::CoordinatorFenced`] (only for the client and coordinator origins),
    /// [`AppendErrorKind::InvalidTxnState`] (every origin).
    pub(crate) fn append(&mut self, epoch: i16, batch: BatchKind) -> Result<Option<CompletedTxn>> {
        match batch {
            BatchKind::Marker(None) => Ok(None),
            BatchKind::Marker(Some(marker)) => self.append_marker(epoch, marker),
            BatchKind::Data {
                first_sequence,
                last_sequence,
                first_offset,
                last_offset,
                max_timestamp_ms,
                transactional,
            } => {
                self.check_epoch(epoch, first_offset, None)?;
                if self.origin == ProducerOrigin::Client {
                    self.check_sequence(epoch, first_sequence, first_offset)?;
                }
                self.updated.add_batch(
                    epoch,
                    BatchMetadata {
                        last_sequence,
                        last_offset,
                        offset_delta: (last_offset - first_offset) as i32,
                        timestamp_ms: max_timestamp_ms,
                    },
                );
                match (self.updated.current_txn_first_offset, transactional) {
                    // Kafka 4.4's `appendDataBatch` raises `InvalidTxnStateException` for
                    // every origin, replication included.
                    (Some(_), false) => Err(Error::InvalidAppend {
                        kind: AppendErrorKind::InvalidTxnState {
                            producer_id: self.producer_id,
                            offset: first_offset,
                        },
                    }),
                    (None, true) => {
                        self.updated.current_txn_first_offset = Some(first_offset);
                        self.started.push(first_offset);
                        Ok(None)
                    }
                    _ => Ok(None),
                }
            }
        }
    }

    /// Kafka 4.4's `checkProducerEpoch`: below TV2 (data batches always) an epoch below the
    /// current one is fenced; under TV2 (markers) one at or below it, except a repeat at the
    /// current epoch when no transaction is open (or at `i16::MAX`): an idempotent retry of a
    /// completed marker, accepted. Replication is never fenced.
    fn check_epoch(
        &self,
        epoch: i16,
        offset: i64,
        version: Option<TransactionVersion>,
    ) -> Result<()> {
        let current = self.updated.producer_epoch;
        let v2 = version == Some(TransactionVersion::V2);
        let invalid = if v2 {
            epoch <= current
        } else {
            epoch < current
        };
        if !invalid {
            return Ok(());
        }
        let completed_retry = v2
            && epoch == current
            && (self.updated.current_txn_first_offset.is_none() || epoch == i16::MAX);
        if !completed_retry && self.origin != ProducerOrigin::Replication {
            return Err(Error::InvalidAppend {
                kind: AppendErrorKind::InvalidProducerEpoch {
                    producer_id: self.producer_id,
                    epoch,
                    offset,
                    current_epoch: self.updated.producer_epoch,
                },
            });
        }
        Ok(())
    }

    /// Kafka's `checkSequence` (without the transaction verification guard, which needs a
    /// coordinator).
    fn check_sequence(&self, epoch: i16, first_sequence: i32, offset: i64) -> Result<()> {
        let out_of_order = |last_sequence| Error::InvalidAppend {
            kind: AppendErrorKind::OutOfOrderSequence {
                producer_id: self.producer_id,
                epoch,
                offset,
                sequence: first_sequence,
                last_sequence,
            },
        };
        if epoch != self.updated.producer_epoch {
            if first_sequence != 0 && self.updated.producer_epoch != NO_PRODUCER_EPOCH {
                return Err(out_of_order(NO_SEQUENCE));
            }
            return Ok(());
        }
        let current_last = if !self.updated.is_empty() {
            self.updated.last_sequence()
        } else if epoch == self.current.producer_epoch {
            self.current.last_sequence()
        } else {
            NO_SEQUENCE
        };
        // No epoch known (a new producer, or one whose data retention removed): any sequence.
        if self.current.producer_epoch == NO_PRODUCER_EPOCH
            || in_sequence(current_last, first_sequence)
        {
            Ok(())
        } else {
            Err(out_of_order(current_last))
        }
    }

    fn append_marker(&mut self, epoch: i16, marker: Marker) -> Result<Option<CompletedTxn>> {
        self.check_epoch(epoch, marker.offset, self.transaction_version)?;
        if self.updated.coordinator_epoch > marker.coordinator_epoch
            && self.origin != ProducerOrigin::Replication
        {
            return Err(Error::InvalidAppend {
                kind: AppendErrorKind::CoordinatorFenced {
                    producer_id: self.producer_id,
                    coordinator_epoch: marker.coordinator_epoch,
                    offset: marker.offset,
                    current: self.updated.coordinator_epoch,
                },
            });
        }
        let completed = self
            .updated
            .current_txn_first_offset
            .map(|first_offset| CompletedTxn {
                producer_id: self.producer_id,
                first_offset,
                last_offset: marker.offset,
                is_aborted: marker.is_abort,
            });
        // Kafka's `update(epoch, coordinatorEpoch, timestamp)`: no batches, no transaction.
        self.updated.maybe_update_epoch(epoch);
        self.updated.coordinator_epoch = marker.coordinator_epoch;
        self.updated.current_txn_first_offset = None;
        self.updated.last_timestamp_ms = marker.timestamp_ms;
        Ok(completed)
    }
}

/// Kafka's `inSequence`: `next == last + 1`, or a wrap from `i32::MAX` to 0.
fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// The bucket a `java.util.HashMap` with default settings, holding `len` entries put one by
/// one, iterates the key `producer_id` in (`Long.hashCode`, `HashMap.hash`'s spread, a table
/// of 16 doubled whenever the size passes 3/4 of it). Keys of one bucket iterate in insertion
/// order, which is not kept here: ties go by producer id (Kafka's order is not a format
/// guarantee; readers take entries as a set).
fn java_hash_map_order(len: usize) -> impl Fn(i64) -> u32 {
    let mut capacity: u64 = 16;
    while len as u64 > capacity * 3 / 4 {
        capacity *= 2;
    }
    move |producer_id: i64| {
        let bits = producer_id as u64;
        let hash = ((bits ^ (bits >> 32)) as u32) as i32;
        let spread = (hash ^ ((hash as u32) >> 16) as i32) as u32;
        spread & (capacity as u32 - 1)
    }
}

/// An open or not yet replicated transaction (Kafka's `TxnMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TxnMetadata {
    pub(crate) producer_id: i64,
    pub(crate) first_offset: i64,
    /// The marker's offset, once written.
    pub(crate) last_offset: Option<i64>,
}

/// Every producer's state and the transactions (Kafka's `ProducerStateManager`, without the
/// files).
#[derive(Debug, Clone, Default)]
pub(crate) struct ProducerState {
    pub(crate) producers: BTreeMap<i64, ProducerStateEntry>,
    /// Open transactions by first offset.
    pub(crate) ongoing: BTreeMap<i64, TxnMetadata>,
    /// Completed transactions whose marker is at or above the high watermark, by first offset.
    pub(crate) unreplicated: BTreeMap<i64, TxnMetadata>,
    /// The offset the state covers (Kafka's `lastMapOffset`).
    pub(crate) map_end_offset: i64,
}

impl ProducerState {
    /// Kafka's `prepareUpdate`.
    pub(crate) fn prepare(&self, producer_id: i64, origin: ProducerOrigin) -> ProducerAppend {
        let current = self
            .producers
            .get(&producer_id)
            .cloned()
            .unwrap_or_else(|| ProducerStateEntry::empty(producer_id));
        let mut updated = current.clone();
        updated.batches.clear();
        ProducerAppend {
            producer_id,
            origin,
            current,
            updated,
            started: Vec::new(),
            transaction_version: None,
        }
    }

    /// Kafka's `update(ProducerAppendInfo)`.
    pub(crate) fn update(&mut self, append: ProducerAppend) {
        match self.producers.get_mut(&append.producer_id) {
            Some(entry) => entry.update_from(append.updated),
            None => {
                self.producers.insert(append.producer_id, append.updated);
            }
        }
        for first_offset in append.started {
            self.ongoing.insert(
                first_offset,
                TxnMetadata {
                    producer_id: append.producer_id,
                    first_offset,
                    last_offset: None,
                },
            );
        }
    }

    /// Kafka's `lastStableOffset(completedTxn)`: the first offset of the earliest open
    /// transaction of another producer, else the marker's offset + 1.
    pub(crate) fn last_stable_offset(&self, completed: &CompletedTxn) -> i64 {
        self.ongoing
            .values()
            .find(|t| t.producer_id != completed.producer_id)
            .map_or(completed.last_offset + 1, |t| t.first_offset)
    }

    /// Kafka's `completeTxn`: the transaction moves from open to not yet replicated.
    pub(crate) fn complete_txn(&mut self, completed: &CompletedTxn) {
        if let Some(mut txn) = self.ongoing.remove(&completed.first_offset) {
            txn.last_offset = Some(completed.last_offset);
            self.unreplicated.insert(completed.first_offset, txn);
        }
    }

    /// Kafka's `loadProducerEntry`.
    pub(crate) fn load_entry(&mut self, entry: ProducerStateEntry) {
        if let Some(first_offset) = entry.current_txn_first_offset {
            self.ongoing.insert(
                first_offset,
                TxnMetadata {
                    producer_id: entry.producer_id,
                    first_offset,
                    last_offset: None,
                },
            );
        }
        self.producers.insert(entry.producer_id, entry);
    }

    /// Kafka's `isProducerExpired`: no open transaction and idle for `expiration_ms`.
    pub(crate) fn is_expired(entry: &ProducerStateEntry, now_ms: i64, expiration_ms: i64) -> bool {
        entry.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(entry.last_timestamp_ms) >= expiration_ms
    }

    /// Kafka's `removeExpiredProducers`; returns how many were removed.
    pub(crate) fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| !Self::is_expired(e, now_ms, expiration_ms));
        before - self.producers.len()
    }

    /// What a round trip through a snapshot leaves of each producer (Kafka's `writeSnapshot`
    /// then `readSnapshot`): its last batch only, with the same epoch, coordinator epoch,
    /// timestamp and open transaction.
    pub(crate) fn keep_last_batch_only(&mut self) {
        for entry in self.producers.values_mut() {
            *entry = ProducerStateEntry::from_snapshot_entry(&entry.to_snapshot_entry());
        }
    }

    /// Kafka's `onHighWatermarkUpdated` / `removeUnreplicatedTransactions`: completed
    /// transactions whose marker is below `offset` are stable.
    pub(crate) fn remove_unreplicated_below(&mut self, offset: i64) {
        self.unreplicated
            .retain(|_, t| t.last_offset.is_none_or(|last| last >= offset));
    }

    #[cfg(test)]
    /// Kafka's `firstUnstableOffset` for a high watermark: the first offset of the earliest
    /// open transaction, or of a completed one whose marker is not below `high_watermark`.
    pub(crate) fn first_unstable_offset(&self, high_watermark: i64) -> Option<i64> {
        let ongoing = self.ongoing.keys().next().copied();
        let unreplicated = self
            .unreplicated
            .values()
            .find(|t| t.last_offset.is_none_or(|last| last >= high_watermark))
            .map(|t| t.first_offset);
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The entries of a snapshot of this state, in the order Kafka writes them: the iteration
    /// order of its `HashMap<Long, _>` ([`java_hash_map_order`]), so a snapshot of the same
    /// state is byte-identical to the broker's in the usual case.
    pub(crate) fn snapshot_entries(&self) -> Vec<ProducerSnapshotEntry> {
        let mut entries: Vec<ProducerSnapshotEntry> = self
            .producers
            .values()
            .map(ProducerStateEntry::to_snapshot_entry)
            .collect();
        let order = java_hash_map_order(entries.len());
        entries.sort_by_key(|e| (order(e.producer_id), e.producer_id));
        entries
    }

    /// Forgets every producer and transaction.
    pub(crate) fn clear(&mut self) {
        self.producers.clear();
        self.ongoing.clear();
        self.unreplicated.clear();
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn data(first_sequence: i32, count: i32, first_offset: i64) -> BatchKind {
        BatchKind::Data {
            first_sequence,
            last_sequence: increment_sequence(first_sequence, count - 1),
            first_offset,
            last_offset: first_offset + i64::from(count) - 1,
            max_timestamp_ms: 100,
            transactional: false,
        }
    }

    fn apply(state: &mut ProducerState, pid: i64, epoch: i16, batch: BatchKind) -> Result<()> {
        let mut append = state.prepare(pid, ProducerOrigin::Client);
        append.append(epoch, batch)?;
        state.update(append);
        Ok(())
    }

    fn kind(r: Result<()>) -> AppendErrorKind {
        match r {
            Err(Error::InvalidAppend { kind }) => kind,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn sequences_follow_kafkas_check_sequence() {
        let mut s = ProducerState::default();
        // Unknown producer: any sequence.
        apply(&mut s, 1, 0, data(17, 3, 0)).unwrap();
        apply(&mut s, 1, 0, data(20, 1, 3)).unwrap();
        assert!(matches!(
            kind(apply(&mut s, 1, 0, data(22, 1, 4))),
            AppendErrorKind::OutOfOrderSequence {
                sequence: 22,
                last_sequence: 20,
                ..
            }
        ));
        // A new epoch starts at 0.
        assert!(matches!(
            kind(apply(&mut s, 1, 1, data(5, 1, 4))),
            AppendErrorKind::OutOfOrderSequence { .. }
        ));
        apply(&mut s, 1, 1, data(0, 1, 4)).unwrap();
        assert!(matches!(
            kind(apply(&mut s, 1, 0, data(21, 1, 5))),
            AppendErrorKind::InvalidProducerEpoch {
                current_epoch: 1,
                ..
            }
        ));
        // Wrap at i32::MAX.
        apply(&mut s, 2, 0, data(i32::MAX - 1, 2, 10)).unwrap();
        apply(&mut s, 2, 0, data(0, 1, 12)).unwrap();
        assert_eq!(s.producers[&2].last_sequence(), 0);
    }

    #[test]
    fn keeps_the_last_five_batches_and_finds_duplicates() {
        let mut s = ProducerState::default();
        for i in 0..7 {
            apply(&mut s, 9, 2, data(i * 2, 2, i64::from(i) * 2)).unwrap();
        }
        let entry = &s.producers[&9];
        assert_eq!(entry.batches().len(), NUM_BATCHES_TO_RETAIN);
        assert!(entry.find_duplicate(2, 0, 1).is_none());
        let dup = entry.find_duplicate(2, 4, 5).unwrap();
        assert_eq!((dup.first_offset(), dup.last_offset), (4, 5));
        assert!(entry.find_duplicate(3, 4, 5).is_none());
        // Wrapped first sequence, as the snapshot codec.
        let wrapped = BatchMetadata {
            last_sequence: 1,
            last_offset: 10,
            offset_delta: 3,
            timestamp_ms: 0,
        };
        assert_eq!(wrapped.first_sequence(), i32::MAX - 1);
    }

    /// A snapshot may hold any pair (found by the `producer_snapshot` fuzz target): the
    /// state it loads answers with Java's wrapping arithmetic, never an overflow, also when
    /// a later batch of the producer is checked for a duplicate.
    #[test]
    fn a_hostile_snapshot_entry_wraps_and_never_overflows() {
        let entry = ProducerStateEntry::from_snapshot_entry(&ProducerSnapshotEntry {
            producer_id: 3,
            epoch: 0,
            last_sequence: i32::MAX,
            last_offset: i64::MAX,
            offset_delta: -1,
            timestamp_ms: 0,
            coordinator_epoch: 0,
            current_txn_first_offset: -1,
        });
        let batch = entry.batches().next().copied().unwrap();
        assert_eq!(batch.first_sequence(), i32::MIN);
        assert_eq!(batch.first_offset(), i64::MIN);
        assert!(entry.find_duplicate(0, 5, 6).is_none());
        let dup = entry.find_duplicate(0, i32::MIN, i32::MAX).unwrap();
        assert_eq!(dup.last_offset, i64::MAX);
    }

    #[test]
    fn transactions_and_the_first_unstable_offset() {
        let mut s = ProducerState::default();
        let txn = |first_offset| BatchKind::Data {
            first_sequence: 0,
            last_sequence: 0,
            first_offset,
            last_offset: first_offset,
            max_timestamp_ms: 5,
            transactional: true,
        };
        apply(&mut s, 1, 0, txn(10)).unwrap();
        apply(&mut s, 2, 0, txn(11)).unwrap();
        assert_eq!(s.first_unstable_offset(100), Some(10));
        assert!(matches!(
            kind(apply(&mut s, 1, 0, data(1, 1, 12))),
            AppendErrorKind::InvalidTxnState { .. }
        ));
        let mut append = s.prepare(1, ProducerOrigin::Coordinator);
        let marker = Marker {
            offset: 13,
            timestamp_ms: 6,
            coordinator_epoch: 4,
            is_abort: true,
        };
        let completed = append
            .append(0, BatchKind::Marker(Some(marker)))
            .unwrap()
            .unwrap();
        s.update(append);
        assert_eq!(s.last_stable_offset(&completed), 11);
        s.complete_txn(&completed);
        // Unreplicated until the high watermark passes the marker.
        assert_eq!(s.first_unstable_offset(13), Some(10));
        assert_eq!(s.first_unstable_offset(14), Some(11));
        s.remove_unreplicated_below(14);
        assert!(s.unreplicated.is_empty());
        // An older coordinator epoch is fenced.
        let mut append = s.prepare(2, ProducerOrigin::Coordinator);
        append.updated.coordinator_epoch = 9;
        assert!(matches!(
            append.append(0, BatchKind::Marker(Some(marker))),
            Err(Error::InvalidAppend {
                kind: AppendErrorKind::CoordinatorFenced { .. }
            })
        ));
        // Expiry spares open transactions.
        assert_eq!(s.remove_expired(1_000_000, 10), 1);
        assert!(s.producers.contains_key(&2));
    }

    /// Kafka 4.4's `checkProducerEpoch` for markers (KIP-1228): TV1 fences only an older
    /// epoch; TV2 fences an epoch that is not newer, except a repeat at the current epoch of
    /// a completed marker (no open transaction), or at `i16::MAX`.
    #[test]
    fn marker_epochs_follow_the_transaction_version() {
        let marker = |offset| {
            BatchKind::Marker(Some(Marker {
                offset,
                timestamp_ms: 7,
                coordinator_epoch: 0,
                is_abort: false,
            }))
        };
        let txn = |first_offset| BatchKind::Data {
            first_sequence: 0,
            last_sequence: 0,
            first_offset,
            last_offset: first_offset,
            max_timestamp_ms: 5,
            transactional: true,
        };
        let write = |s: &mut ProducerState, version, epoch, offset| {
            let mut append = s
                .prepare(1, ProducerOrigin::Coordinator)
                .with_transaction_version(Some(version));
            let completed = append.append(epoch, marker(offset))?;
            s.update(append);
            Ok::<_, Error>(completed)
        };
        let fenced = |r: Result<Option<CompletedTxn>>| {
            matches!(
                r,
                Err(Error::InvalidAppend {
                    kind: AppendErrorKind::InvalidProducerEpoch { .. }
                })
            )
        };
        for version in [TransactionVersion::V0, TransactionVersion::V1] {
            let mut s = ProducerState::default();
            apply(&mut s, 1, 3, txn(0)).unwrap();
            // Stale: fenced.
            assert!(fenced(write(&mut s, version, 2, 1)), "{version:?}");
            // The same epoch completes the transaction; a repeat is accepted too.
            assert!(write(&mut s, version, 3, 1).unwrap().is_some());
            assert!(write(&mut s, version, 3, 2).unwrap().is_none());
            // Bumped: accepted, the epoch moves.
            assert!(write(&mut s, version, 4, 3).unwrap().is_none());
            assert_eq!(s.producers[&1].producer_epoch, 4);
        }
        let v2 = TransactionVersion::V2;
        let mut s = ProducerState::default();
        apply(&mut s, 1, 3, txn(0)).unwrap();
        // Stale, and the current epoch while the transaction is open: fenced.
        assert!(fenced(write(&mut s, v2, 2, 1)));
        assert!(fenced(write(&mut s, v2, 3, 1)));
        assert!(s.producers[&1].current_txn_first_offset.is_some());
        // Bumped: completes the transaction.
        let completed = write(&mut s, v2, 4, 1).unwrap().unwrap();
        assert_eq!((completed.first_offset, completed.last_offset), (0, 1));
        assert_eq!(s.producers[&1].producer_epoch, 4);
        // A repeat of the completed marker at the current epoch: accepted, completes nothing.
        assert!(write(&mut s, v2, 4, 2).unwrap().is_none());
        // Still fenced below it.
        assert!(fenced(write(&mut s, v2, 3, 3)));
        // At i16::MAX a repeat is accepted even with a transaction open.
        let mut s = ProducerState::default();
        apply(&mut s, 1, i16::MAX, txn(0)).unwrap();
        assert!(write(&mut s, v2, i16::MAX, 1).unwrap().is_some());
        // Replication is never fenced, whatever the version.
        let mut s = ProducerState::default();
        apply(&mut s, 1, 3, txn(0)).unwrap();
        let mut append = s.prepare(1, ProducerOrigin::Replication);
        assert!(append.append(3, marker(1)).unwrap().is_some());
    }
}
