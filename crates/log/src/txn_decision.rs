//! The transaction decision record: a seglog-only state file in a [`crate::LogDir`] root,
//! `seglog-txn-decision-<producer id>`, that makes a commit across partitions atomic.
//!
//! It stands in for what Kafka's transaction coordinator logs in `__transaction_state`
//! before it writes any marker (`TransactionMetadata.prepareAbortOrCommit`, the
//! `PREPARE_COMMIT` state of a `TransactionLogValue`): the producer, the epochs and the
//! result of the transaction, and every partition it holds data in with the transaction's
//! first offset there. [`crate::Transaction::commit`] writes it (temp file, fsync, rename,
//! directory fsync) before the first COMMIT marker of a transaction that spans two
//! partitions or more, and removes it (unlink, directory fsync) once every marker is written
//! with the caller's durability, as the coordinator moves to `COMPLETE_COMMIT`.
//! [`crate::TransactionalProducer::init`] reads it first and writes the markers a crash left
//! out, at the decided result; only a transaction without a decision is aborted.
//!
//! Kafka has no such file: a broker ignores regular files in a `log.dirs` root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use seglog_segment::Io;

use crate::fsutil::{remove_if_exists, sync_dir, write_atomic};
use crate::{
    Durability, Error, Log, LogDir, Result, TopicPartition, TransactionVersion, TxnMarker,
    TxnResult,
};

/// The version of the decision record format seglog writes and reads.
pub const TXN_DECISION_VERSION: i16 = 0;

/// The largest decision record seglog reads: 32 MiB, above what a transaction of
/// [`MAX_TRANSACTION_PARTITIONS`] partitions with 255-byte topic names encodes to (about
/// 27 MB). A larger file is corrupt and not read.
pub const MAX_TXN_DECISION_BYTES: u64 = 32 << 20;

/// The most partitions one [`crate::Transaction`] writes to (its decision record lists
/// them all); a batch for one more partition is refused before anything is written.
pub const MAX_TRANSACTION_PARTITIONS: usize = 100_000;

/// The file name prefix: the file of producer id `7` is `seglog-txn-decision-7`.
pub const TXN_DECISION_PREFIX: &str = "seglog-txn-decision-";

/// Bytes before the first partition entry.
const HEADER_LEN: usize = 28;
/// The CRC covers every byte from here to the end of the file.
const CRC_COVERED_FROM: usize = 6;

/// A logged transaction decision: the seglog-only file `seglog-txn-decision-<producer id>` in
/// a [`crate::LogDir`] root (Kafka has no such file; a broker ignores regular files in a
/// `log.dirs` root), which makes a commit across partitions atomic.
///
/// It stands in for the `PrepareCommit` record Kafka's transaction coordinator appends to
/// its transaction log before it writes any marker. [`crate::Transaction::commit`] writes it
/// (temp file, fsync, rename, directory fsync) before the first COMMIT marker of a
/// transaction holding data in two partitions or more and removes it (unlink, directory
/// fsync) after the last; [`crate::TransactionalProducer::init`] completes one a crash left.
///
/// The file, version 0, big-endian: `version int16`, `crc uint32` (CRC-32C of every byte
/// after it), `producerId int64`, `producerEpoch int16`, `markerEpoch int16`,
/// `coordinatorEpoch int32`, `result int8` (1 COMMIT, 0 ABORT), `transactionVersion int8`,
/// `count int32`, then per partition `topicLength int16`, the topic in UTF-8,
/// `partition int32`, `firstOffset int64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDecision {
    /// The producer whose transaction it decides.
    pub producer_id: i64,
    /// The epoch of the transaction's batches.
    pub producer_epoch: i16,
    /// The epoch its markers carry: `producer_epoch`, or `producer_epoch + 1` under
    /// [`TransactionVersion::V2`] (the epoch bump at every transaction end).
    pub marker_epoch: i16,
    /// The coordinator epoch its markers carry.
    pub coordinator_epoch: i32,
    /// What the markers write.
    pub result: TxnResult,
    /// The rules the markers are written under.
    pub transaction_version: TransactionVersion,
    /// Every partition holding the transaction's data, with the transaction's first offset
    /// there, in partition order.
    pub partitions: Vec<(TopicPartition, i64)>,
}

/// What is wrong with a decision record ([`Error::CorruptTxnDecision`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxnDecisionProblem {
    /// Shorter than its header or than its entries need.
    #[error("truncated: {len} bytes, {needed} needed")]
    Truncated {
        /// Bytes in the file.
        len: u64,
        /// Bytes the fields read so far need.
        needed: u64,
    },
    /// A format version seglog does not know.
    #[error("unknown version {0}")]
    UnknownVersion(i16),
    /// The stored CRC differs from the CRC-32C of the bytes after it.
    #[error("CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The CRC in the file.
        stored: u32,
        /// The CRC of its bytes.
        computed: u32,
    },
    /// Larger than [`MAX_TXN_DECISION_BYTES`]: not read.
    #[error("{len} bytes, more than the {limit} bytes seglog reads")]
    TooLarge {
        /// Bytes in the file.
        len: u64,
        /// [`MAX_TXN_DECISION_BYTES`].
        limit: u64,
    },
    /// A field out of its range (a negative id, epoch, count, partition or offset, an
    /// unknown result or transaction version, a marker epoch the version does not give).
    #[error("invalid {field} {value}")]
    InvalidField {
        /// The field's name in the file layout ([`TxnDecision`]).
        field: &'static str,
        /// Its value.
        value: i64,
    },
    /// A topic name that is not UTF-8 or could not name a partition directory.
    #[error("invalid topic name")]
    InvalidTopic,
    /// A partition listed twice.
    #[error("partition {0} listed twice")]
    DuplicatePartition(TopicPartition),
    /// Bytes after the last entry the count announces.
    #[error("{len} bytes after the last entry")]
    TrailingBytes {
        /// How many.
        len: u64,
    },
    /// The file of one producer id holds the decision of another.
    #[error("the file of producer {expected} holds a decision of producer {found}")]
    OtherProducer {
        /// The producer id in the file name.
        expected: i64,
        /// The producer id in the file.
        found: i64,
    },
}

impl TxnDecision {
    /// The decision record's file name for `producer_id`.
    ///
    /// ```
    /// assert_eq!(seglog::TxnDecision::file_name(7), "seglog-txn-decision-7");
    /// ```
    pub fn file_name(producer_id: i64) -> String {
        format!("{TXN_DECISION_PREFIX}{producer_id}")
    }

    /// The record's path in the root `root`.
    pub fn path(root: &Path, producer_id: i64) -> PathBuf {
        root.join(Self::file_name(producer_id))
    }

    /// Encodes the record in the layout [`TxnDecision`] describes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.partitions.len() * 24);
        out.extend_from_slice(&TXN_DECISION_VERSION.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.marker_epoch.to_be_bytes());
        out.extend_from_slice(&self.coordinator_epoch.to_be_bytes());
        out.push(result_id(self.result));
        out.push(self.transaction_version.number() as u8);
        out.extend_from_slice(&(self.partitions.len() as i32).to_be_bytes());
        for (tp, first_offset) in &self.partitions {
            // Topic names of existing partition directories are at most 255 bytes.
            out.extend_from_slice(&(tp.topic.len() as i16).to_be_bytes());
            out.extend_from_slice(tp.topic.as_bytes());
            out.extend_from_slice(&tp.partition.to_be_bytes());
            out.extend_from_slice(&first_offset.to_be_bytes());
        }
        let crc = seglog_records::crc32c(&out[CRC_COVERED_FROM..]);
        out[2..CRC_COVERED_FROM].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes a record, checking every field. Errors carry the byte position of what is
    /// wrong.
    ///
    /// # Errors
    /// The position and the [`TxnDecisionProblem`].
    ///
    /// ```
    /// use seglog::{TopicPartition, TransactionVersion, TxnDecision, TxnResult};
    ///
    /// let decision = TxnDecision {
    ///     producer_id: 7,
    ///     producer_epoch: 2,
    ///     marker_epoch: 2,
    ///     coordinator_epoch: 0,
    ///     result: TxnResult::Commit,
    ///     transaction_version: TransactionVersion::V0,
    ///     partitions: vec![(TopicPartition::new("orders", 0), 10), (TopicPartition::new("orders", 1), 4)],
    /// };
    /// let mut bytes = decision.encode();
    /// assert_eq!(TxnDecision::decode(&bytes), Ok(decision));
    /// bytes[10] ^= 1;
    /// assert_eq!(TxnDecision::decode(&bytes).unwrap_err().0, 2); // the CRC's position
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Self, (u64, TxnDecisionProblem)> {
        let len = bytes.len() as u64;
        let truncated = |needed: usize| {
            (
                len,
                TxnDecisionProblem::Truncated {
                    len,
                    needed: needed as u64,
                },
            )
        };
        if bytes.len() < HEADER_LEN {
            return Err(truncated(HEADER_LEN));
        }
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        if version != TXN_DECISION_VERSION {
            return Err((0, TxnDecisionProblem::UnknownVersion(version)));
        }
        let stored = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
        let computed = seglog_records::crc32c(&bytes[CRC_COVERED_FROM..]);
        if stored != computed {
            return Err((2, TxnDecisionProblem::CrcMismatch { stored, computed }));
        }
        let invalid = |at: usize, field, value: i64| {
            (at as u64, TxnDecisionProblem::InvalidField { field, value })
        };
        let producer_id = i64_at(bytes, 6);
        if producer_id < 0 {
            return Err(invalid(6, "producerId", producer_id));
        }
        let producer_epoch = i16_at(bytes, 14);
        if producer_epoch < 0 {
            return Err(invalid(14, "producerEpoch", producer_epoch.into()));
        }
        let marker_epoch = i16_at(bytes, 16);
        let coordinator_epoch = i32_at(bytes, 18);
        if coordinator_epoch < 0 {
            return Err(invalid(18, "coordinatorEpoch", coordinator_epoch.into()));
        }
        let result = match bytes[22] {
            0 => TxnResult::Abort,
            1 => TxnResult::Commit,
            other => return Err(invalid(22, "result", other.into())),
        };
        let transaction_version = match bytes[23] {
            0 => TransactionVersion::V0,
            1 => TransactionVersion::V1,
            2 => TransactionVersion::V2,
            other => return Err(invalid(23, "transactionVersion", other.into())),
        };
        if Some(marker_epoch) != marker_epoch_for(producer_epoch, transaction_version) {
            return Err(invalid(16, "markerEpoch", marker_epoch.into()));
        }
        let count = i32_at(bytes, 24);
        if count < 0 {
            return Err(invalid(24, "count", count.into()));
        }
        let mut partitions = Vec::new();
        let mut seen = BTreeSet::new();
        let mut at = HEADER_LEN;
        for _ in 0..count {
            if bytes.len() < at + 2 {
                return Err(truncated(at + 2));
            }
            let topic_len = i16_at(bytes, at);
            if topic_len <= 0 {
                return Err(invalid(at, "topicLength", topic_len.into()));
            }
            let topic_at = at + 2;
            let entry_end = topic_at + topic_len as usize + 12;
            if bytes.len() < entry_end {
                return Err(truncated(entry_end));
            }
            let topic = std::str::from_utf8(&bytes[topic_at..topic_at + topic_len as usize])
                .map_err(|_| (topic_at as u64, TxnDecisionProblem::InvalidTopic))?;
            let partition_at = topic_at + topic_len as usize;
            let partition = i32_at(bytes, partition_at);
            if partition < 0 {
                return Err(invalid(partition_at, "partition", partition.into()));
            }
            let tp = TopicPartition::new(topic, partition);
            if !names_a_partition_dir(&tp) {
                return Err((topic_at as u64, TxnDecisionProblem::InvalidTopic));
            }
            let first_offset = i64_at(bytes, partition_at + 4);
            if first_offset < 0 {
                return Err(invalid(partition_at + 4, "firstOffset", first_offset));
            }
            if !seen.insert(tp.clone()) {
                return Err((at as u64, TxnDecisionProblem::DuplicatePartition(tp)));
            }
            partitions.push((tp, first_offset));
            at = entry_end;
        }
        if at != bytes.len() {
            return Err((
                at as u64,
                TxnDecisionProblem::TrailingBytes {
                    len: (bytes.len() - at) as u64,
                },
            ));
        }
        Ok(Self {
            producer_id,
            producer_epoch,
            marker_epoch,
            coordinator_epoch,
            result,
            transaction_version,
            partitions,
        })
    }

    /// Reads the decision of `producer_id` in the root `root`, through the checked open
    /// (a FIFO, a directory or a device at its name is an I/O error, never a blocked read),
    /// at most [`MAX_TXN_DECISION_BYTES`]. `None` when there is none.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file; [`Error::CorruptTxnDecision`] naming the file and the
    /// byte position when it does not decode or holds another producer's decision.
    pub fn read(root: &Path, producer_id: i64) -> Result<Option<Self>> {
        use std::io::Read;
        let path = Self::path(root, producer_id);
        let corrupt = |position, problem| Error::CorruptTxnDecision {
            path: path.clone(),
            position,
            problem,
        };
        let Some((file, meta)) = seglog_segment::open_regular_if_exists(&path)
            .map_err(|e| Error::io("read transaction decision", &path, e))?
        else {
            return Ok(None);
        };
        let too_large = |len| {
            corrupt(
                0,
                TxnDecisionProblem::TooLarge {
                    len,
                    limit: MAX_TXN_DECISION_BYTES,
                },
            )
        };
        if meta.len() > MAX_TXN_DECISION_BYTES {
            return Err(too_large(meta.len()));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        // One byte more than the bound: a file that grew after the fstat is refused too.
        file.take(MAX_TXN_DECISION_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read transaction decision", &path, e))?;
        if bytes.len() as u64 > MAX_TXN_DECISION_BYTES {
            return Err(too_large(bytes.len() as u64));
        }
        let decision = Self::decode(&bytes).map_err(|(at, problem)| corrupt(at, problem))?;
        if decision.producer_id != producer_id {
            return Err(corrupt(
                6,
                TxnDecisionProblem::OtherProducer {
                    expected: producer_id,
                    found: decision.producer_id,
                },
            ));
        }
        Ok(Some(decision))
    }

    /// Writes the record in `root` atomically and durably: temp file, fsync, rename over,
    /// directory fsync (through `io`).
    ///
    /// # Errors
    /// [`Error::Io`] naming the failing step.
    pub(crate) fn write(&self, io: &Io, root: &Path) -> Result<()> {
        write_atomic(io, &Self::path(root, self.producer_id), &self.encode())
    }

    /// Removes the record of `producer_id` from `root`, durably (unlink, directory fsync).
    ///
    /// # Errors
    /// [`Error::Io`]; the directory fsync's error.
    pub(crate) fn remove(io: &Io, root: &Path, producer_id: i64) -> Result<()> {
        if remove_if_exists(&Self::path(root, producer_id))? {
            sync_dir(io, root)?;
        }
        Ok(())
    }
}

/// Completes a decision a crash left in `log_dir`'s root (the first step of
/// [`crate::TransactionalProducer::init`]): every partition it lists whose open transaction
/// of the producer is the decided one (same first offset, same epoch) gets the decided
/// marker, fsynced; partitions that have it already, and those no longer holding it (deleted,
/// truncated), are left alone. Then the record is removed. Returns how many markers it wrote.
///
/// # Errors
/// As [`crate::Log::write_txn_marker_with`] (the record stays for the next `init`); the
/// removal's I/O errors.
pub(crate) fn complete(log_dir: &LogDir, decision: &TxnDecision) -> Result<usize> {
    let producer_id = decision.producer_id;
    let mut written = 0;
    for (tp, first_offset) in &decision.partitions {
        let Some(log) = log_dir.log(tp) else {
            continue;
        };
        let same_epoch = log
            .producer_state(producer_id)
            .is_some_and(|state| state.producer_epoch == decision.producer_epoch);
        if !same_epoch || open_first_offset(&log, producer_id) != Some(*first_offset) {
            continue;
        }
        log.write_txn_marker_with(
            TxnMarker {
                producer_id,
                producer_epoch: decision.marker_epoch,
                coordinator_epoch: decision.coordinator_epoch,
                result: decision.result,
                leader_epoch: None,
                transaction_version: decision.transaction_version,
            },
            Durability::Fsync,
        )?;
        written += 1;
    }
    tracing::info!(
        producer_id,
        producer_epoch = decision.producer_epoch,
        partitions = decision.partitions.len(),
        markers = written,
        result = ?decision.result,
        "completed a logged transaction decision"
    );
    TxnDecision::remove(log_dir.io(), log_dir.root(), producer_id)?;
    Ok(written)
}

/// The first offset of `producer_id`'s open transaction in `log`, if it has one.
pub(crate) fn open_first_offset(log: &Log, producer_id: i64) -> Option<i64> {
    log.ongoing_transactions()
        .into_iter()
        .find(|(pid, _)| *pid == producer_id)
        .map(|(_, first_offset)| first_offset)
}

/// The epoch markers carry for a transaction at `producer_epoch` under `version`: the same
/// epoch, or one more under TV2 (`None` at `i16::MAX`, which TV2 cannot bump).
pub(crate) fn marker_epoch_for(producer_epoch: i16, version: TransactionVersion) -> Option<i16> {
    match version {
        TransactionVersion::V2 => producer_epoch.checked_add(1),
        TransactionVersion::V0 | TransactionVersion::V1 => Some(producer_epoch),
    }
}

/// Kafka's `ControlRecordType` ids: ABORT 0, COMMIT 1.
fn result_id(result: TxnResult) -> u8 {
    match result {
        TxnResult::Abort => 0,
        TxnResult::Commit => 1,
    }
}

/// Whether `tp`'s directory name is one directory below a root that parses back to it.
fn names_a_partition_dir(tp: &TopicPartition) -> bool {
    let name = tp.dir_name();
    !tp.topic.contains(['/', '\0'])
        && tp.topic != "."
        && tp.topic != ".."
        && crate::parse_partition_dir_name(&name).is_ok_and(|parsed| {
            parsed.kind == crate::PartitionDirKind::Live && &parsed.topic_partition == tp
        })
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision() -> TxnDecision {
        TxnDecision {
            producer_id: 7,
            producer_epoch: 3,
            marker_epoch: 4,
            coordinator_epoch: 1,
            result: TxnResult::Commit,
            transaction_version: TransactionVersion::V2,
            partitions: vec![
                (TopicPartition::new("ab", 0), 5),
                (TopicPartition::new("ab", 1), 0),
            ],
        }
    }

    /// Recomputes the CRC of a hand-edited record.
    fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
        let crc = seglog_records::crc32c(&bytes[CRC_COVERED_FROM..]);
        bytes[2..CRC_COVERED_FROM].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn golden_bytes_round_trip() {
        let bytes = decision().encode();
        let mut expected = vec![0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(&7i64.to_be_bytes());
        expected.extend_from_slice(&[0, 3, 0, 4, 0, 0, 0, 1, 1, 2, 0, 0, 0, 2]);
        expected.extend_from_slice(&[0, 2, b'a', b'b', 0, 0, 0, 0]);
        expected.extend_from_slice(&5i64.to_be_bytes());
        expected.extend_from_slice(&[0, 2, b'a', b'b', 0, 0, 0, 1]);
        expected.extend_from_slice(&0i64.to_be_bytes());
        assert_eq!(bytes, reseal(expected));
        assert_eq!(bytes.len(), HEADER_LEN + 2 * 16);
        assert_eq!(TxnDecision::decode(&bytes), Ok(decision()));
    }

    #[test]
    fn every_problem_names_its_position() {
        let good = decision().encode();
        let problem = |bytes: &[u8]| TxnDecision::decode(bytes).unwrap_err();
        assert!(matches!(
            problem(&good[..10]),
            (10, TxnDecisionProblem::Truncated { needed: 28, .. })
        ));
        assert!(matches!(
            problem(&good[..good.len() - 1]),
            (_, TxnDecisionProblem::CrcMismatch { .. })
        ));
        assert!(matches!(
            problem(&reseal(good[..good.len() - 1].to_vec())),
            (59, TxnDecisionProblem::Truncated { needed: 60, .. })
        ));
        let mut b = good.clone();
        b[1] = 1;
        assert_eq!(problem(&b), (0, TxnDecisionProblem::UnknownVersion(1)));
        let edit = |at: usize, value: &[u8]| {
            let mut b = good.clone();
            b[at..at + value.len()].copy_from_slice(value);
            problem(&reseal(b))
        };
        let field =
            |f: &'static str, v: i64| TxnDecisionProblem::InvalidField { field: f, value: v };
        assert_eq!(
            edit(6, &(-1i64).to_be_bytes()),
            (6, field("producerId", -1))
        );
        assert_eq!(
            edit(14, &(-1i16).to_be_bytes()),
            (14, field("producerEpoch", -1))
        );
        // Under TV2 the marker epoch is one above the batches'.
        assert_eq!(edit(16, &3i16.to_be_bytes()), (16, field("markerEpoch", 3)));
        assert_eq!(edit(22, &[2]), (22, field("result", 2)));
        assert_eq!(edit(23, &[3]), (23, field("transactionVersion", 3)));
        assert_eq!(edit(24, &(-1i32).to_be_bytes()), (24, field("count", -1)));
        assert_eq!(edit(24, &(i32::MAX).to_be_bytes()).0, 60);
        assert_eq!(edit(28, &0i16.to_be_bytes()), (28, field("topicLength", 0)));
        assert_eq!(edit(30, &[0xff]), (30, TxnDecisionProblem::InvalidTopic));
        assert_eq!(edit(30, b"/"), (30, TxnDecisionProblem::InvalidTopic));
        assert_eq!(
            edit(32, &(-1i32).to_be_bytes()),
            (32, field("partition", -1))
        );
        assert_eq!(
            edit(36, &(-1i64).to_be_bytes()),
            (36, field("firstOffset", -1))
        );
        assert!(matches!(
            edit(51, &[0]),
            (44, TxnDecisionProblem::DuplicatePartition(_))
        ));
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(
            problem(&reseal(longer)),
            (60, TxnDecisionProblem::TrailingBytes { len: 1 })
        );
    }

    #[test]
    fn read_write_remove() {
        let root = tempfile::tempdir().unwrap();
        let io = Io::direct();
        assert_eq!(TxnDecision::read(root.path(), 7).unwrap(), None);
        decision().write(&io, root.path()).unwrap();
        assert_eq!(TxnDecision::read(root.path(), 7).unwrap(), Some(decision()));
        // Another producer's file name holding this decision is refused.
        std::fs::rename(
            TxnDecision::path(root.path(), 7),
            TxnDecision::path(root.path(), 8),
        )
        .unwrap();
        assert!(matches!(
            TxnDecision::read(root.path(), 8),
            Err(Error::CorruptTxnDecision {
                position: 6,
                problem: TxnDecisionProblem::OtherProducer {
                    expected: 8,
                    found: 7
                },
                ..
            })
        ));
        TxnDecision::remove(&io, root.path(), 8).unwrap();
        TxnDecision::remove(&io, root.path(), 8).unwrap();
        assert_eq!(TxnDecision::read(root.path(), 8).unwrap(), None);
        // A sparse file past the bound is not read.
        let big = std::fs::File::create(TxnDecision::path(root.path(), 9)).unwrap();
        big.set_len(MAX_TXN_DECISION_BYTES + 1).unwrap();
        assert!(matches!(
            TxnDecision::read(root.path(), 9),
            Err(Error::CorruptTxnDecision {
                position: 0,
                problem: TxnDecisionProblem::TooLarge { .. },
                ..
            })
        ));
        // A directory at the name is an I/O error naming it, never a hang or a silent None.
        std::fs::create_dir(TxnDecision::path(root.path(), 10)).unwrap();
        let err = TxnDecision::read(root.path(), 10).unwrap_err();
        assert!(matches!(&err, Error::Io { path, .. } if path.ends_with("seglog-txn-decision-10")));
    }
}
