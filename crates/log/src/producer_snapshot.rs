//! The producer-state snapshot file, `<20-digit offset>.snapshot` (Kafka's
//! `ProducerStateManager.writeSnapshot` / `readSnapshot`, message `ProducerSnapshot` version 1;
//! spec §5.9). Only the codec: the log does not keep producer state yet, and never writes or
//! deletes these files.
//!
//! Layout, big-endian:
//!
//! ```text
//! version                 int16   = 1
//! crc                     uint32  CRC-32C of every byte after this field (from byte 6)
//! count                   int32   number of entries
//! count × 46 bytes:
//!   producerId            int64
//!   epoch                 int16
//!   lastSequence          int32
//!   lastOffset            int64   (-1: no batch retained)
//!   offsetDelta           int32
//!   timestamp             int64
//!   coordinatorEpoch      int32
//!   currentTxnFirstOffset int64   (-1: no ongoing transaction)
//! ```

use std::path::Path;

use crate::{Error, Result};

/// The only version Kafka writes and reads.
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;
/// Bytes before the entries: version, CRC, count.
const HEADER_LEN: usize = 10;
/// Where the CRC-covered bytes start (after the version and the CRC).
const CRC_COVERED_FROM: usize = 6;
/// Bytes of one entry.
pub const PRODUCER_SNAPSHOT_ENTRY_LEN: usize = 46;

/// One producer of a snapshot (Kafka's `ProducerSnapshot.ProducerEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProducerSnapshotEntry {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub epoch: i16,
    /// Last sequence written.
    pub last_sequence: i32,
    /// Last offset written (-1 when no batch is retained).
    pub last_offset: i64,
    /// Last sequence minus first sequence of the last batch written.
    pub offset_delta: i32,
    /// Max timestamp of the last batch written.
    pub timestamp_ms: i64,
    /// Epoch of the last transaction coordinator that wrote a marker.
    pub coordinator_epoch: i32,
    /// First offset of the ongoing transaction (-1 when none).
    pub current_txn_first_offset: i64,
}

impl ProducerSnapshotEntry {
    /// The first sequence of the last batch (Kafka's `BatchMetadata.firstSeq`:
    /// `lastSequence - offsetDelta`, wrapping below 0 to `i32::MAX`).
    pub fn first_sequence(&self) -> i32 {
        decrement_sequence(self.last_sequence, self.offset_delta)
    }

    /// Whether a last batch is retained (`lastOffset >= 0`; Kafka reads no `BatchMetadata`
    /// otherwise).
    pub fn has_batch(&self) -> bool {
        self.last_offset >= 0
    }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`, with Java's wrapping `int` arithmetic: a
/// snapshot may hold any pair, and a hostile one must not overflow (a panic with overflow
/// checks on).
pub(crate) fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// Why a snapshot could not be decoded (Kafka's `CorruptSnapshotException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotProblem {
    /// Shorter than its header (10 bytes) or than its entry count says.
    #[error("truncated: {len} bytes, {needed} needed")]
    Truncated {
        /// Bytes in the file.
        len: u64,
        /// Bytes the header and the count need.
        needed: u64,
    },
    /// A version other than 1.
    #[error("unknown file version {0}")]
    UnknownVersion(i16),
    /// A negative entry count.
    #[error("negative entry count {0}")]
    NegativeCount(i32),
    /// The stored CRC differs from the CRC-32C of the bytes after it.
    #[error("CRC is no longer valid: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The CRC in the file.
        stored: u32,
        /// The CRC of its bytes.
        computed: u32,
    },
    /// Larger than 64 MiB (`MAX_SNAPSHOT_BYTES`): not read (a hole or a hostile file would cost its
    /// size in memory). The state is rebuilt from the log instead.
    #[error("{len} bytes, more than the {limit} bytes seglog reads")]
    TooLarge {
        /// Bytes in the file.
        len: u64,
        /// 64 MiB (`MAX_SNAPSHOT_BYTES`).
        limit: u64,
    },
}

/// The largest producer snapshot seglog reads: 64 MiB, about a million producers' entries.
pub const MAX_SNAPSHOT_BYTES: u64 = 64 << 20;

/// A decoded snapshot: the entries in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerSnapshot {
    /// The producers, in file order.
    pub entries: Vec<ProducerSnapshotEntry>,
}

impl ProducerSnapshot {
    /// Decodes snapshot bytes as Kafka's `readSnapshot` does: the version must be 1, the
    /// count entries must be there, and the CRC must match the CRC-32C of everything after
    /// it (bytes after the last entry are covered by the CRC and otherwise ignored).
    ///
    /// # Errors
    /// The [`SnapshotProblem`].
    pub fn decode(bytes: &[u8]) -> Result<Self, SnapshotProblem> {
        let truncated = |needed: usize| SnapshotProblem::Truncated {
            len: bytes.len() as u64,
            needed: needed as u64,
        };
        if bytes.len() < HEADER_LEN {
            return Err(truncated(HEADER_LEN));
        }
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        if version != PRODUCER_SNAPSHOT_VERSION {
            return Err(SnapshotProblem::UnknownVersion(version));
        }
        let count = i32::from_be_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]);
        let Ok(count) = usize::try_from(count) else {
            return Err(SnapshotProblem::NegativeCount(count));
        };
        let needed = count
            .checked_mul(PRODUCER_SNAPSHOT_ENTRY_LEN)
            .and_then(|n| n.checked_add(HEADER_LEN))
            .unwrap_or(usize::MAX);
        if bytes.len() < needed {
            return Err(truncated(needed));
        }
        let stored = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
        let computed = seglog_records::crc32c(&bytes[CRC_COVERED_FROM..]);
        if stored != computed {
            return Err(SnapshotProblem::CrcMismatch { stored, computed });
        }
        let entries = bytes[HEADER_LEN..needed]
            .chunks_exact(PRODUCER_SNAPSHOT_ENTRY_LEN)
            .map(decode_entry)
            .collect();
        Ok(Self { entries })
    }

    /// Encodes the snapshot as Kafka's `writeSnapshot` does (entries in this order).
    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(HEADER_LEN + self.entries.len() * PRODUCER_SNAPSHOT_ENTRY_LEN);
        out.extend_from_slice(&PRODUCER_SNAPSHOT_VERSION.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        let count = i32::try_from(self.entries.len()).unwrap_or(i32::MAX);
        out.extend_from_slice(&count.to_be_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.producer_id.to_be_bytes());
            out.extend_from_slice(&e.epoch.to_be_bytes());
            out.extend_from_slice(&e.last_sequence.to_be_bytes());
            out.extend_from_slice(&e.last_offset.to_be_bytes());
            out.extend_from_slice(&e.offset_delta.to_be_bytes());
            out.extend_from_slice(&e.timestamp_ms.to_be_bytes());
            out.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            out.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
        }
        let crc = seglog_records::crc32c(&out[CRC_COVERED_FROM..]);
        out[2..CRC_COVERED_FROM].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// Reads and decodes the snapshot file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read or is not a regular file (the checked open,
    /// [`seglog_segment::open_regular`]); [`Error::CorruptSnapshot`] naming the file when it
    /// does not decode or is larger than 64 MiB (`MAX_SNAPSHOT_BYTES`).
    pub fn read(path: &Path) -> Result<Self> {
        use std::io::Read;
        let corrupt = |problem| Error::CorruptSnapshot {
            path: path.to_path_buf(),
            problem,
        };
        let (file, meta) = seglog_segment::open_regular(path, false)
            .map_err(|e| Error::io("read snapshot", path, e))?;
        let too_large = |len| {
            corrupt(SnapshotProblem::TooLarge {
                len,
                limit: MAX_SNAPSHOT_BYTES,
            })
        };
        if meta.len() > MAX_SNAPSHOT_BYTES {
            return Err(too_large(meta.len()));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        // One byte more than the bound: a file that grew after the fstat is refused too.
        file.take(MAX_SNAPSHOT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read snapshot", path, e))?;
        if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
            return Err(too_large(bytes.len() as u64));
        }
        Self::decode(&bytes).map_err(corrupt)
    }
}

fn decode_entry(e: &[u8]) -> ProducerSnapshotEntry {
    let i64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&e[at..at + 8]);
        i64::from_be_bytes(b)
    };
    let i32_at = |at: usize| i32::from_be_bytes([e[at], e[at + 1], e[at + 2], e[at + 3]]);
    ProducerSnapshotEntry {
        producer_id: i64_at(0),
        epoch: i16::from_be_bytes([e[8], e[9]]),
        last_sequence: i32_at(10),
        last_offset: i64_at(14),
        offset_delta: i32_at(22),
        timestamp_ms: i64_at(26),
        coordinator_epoch: i32_at(34),
        current_txn_first_offset: i64_at(38),
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn entry(producer_id: i64) -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id,
            epoch: 3,
            last_sequence: 41,
            last_offset: 1_000 + producer_id,
            offset_delta: 4,
            timestamp_ms: 1_700_000_000_000,
            coordinator_epoch: -1,
            current_txn_first_offset: -1,
        }
    }

    #[test]
    fn round_trips_with_kafkas_layout() {
        let snapshot = ProducerSnapshot {
            entries: vec![entry(7), entry(9)],
        };
        let bytes = snapshot.encode();
        assert_eq!(bytes.len(), 10 + 2 * 46);
        assert_eq!(&bytes[..2], &[0, 1]);
        assert_eq!(&bytes[6..10], &[0, 0, 0, 2]);
        assert_eq!(&bytes[10..18], &7i64.to_be_bytes());
        assert_eq!(ProducerSnapshot::decode(&bytes).unwrap(), snapshot);
        let empty = ProducerSnapshot::default().encode();
        assert_eq!(empty.len(), 10);
        assert!(ProducerSnapshot::decode(&empty).unwrap().entries.is_empty());
    }

    #[test]
    fn first_sequence_wraps_as_kafkas_decrement_sequence() {
        let mut e = entry(1);
        assert_eq!(e.first_sequence(), 37);
        e.last_sequence = 2;
        e.offset_delta = 4;
        assert_eq!(e.first_sequence(), i32::MAX - 1);
        assert!(e.has_batch());
        e.last_offset = -1;
        assert!(!e.has_batch());
    }

    /// Found by the `producer_snapshot` fuzz target (its input is a regression seed): a
    /// snapshot's pair overflowed `decrementSequence`'s arithmetic (a panic with overflow
    /// checks on); Kafka's Java `int` arithmetic wraps, and so does seglog now.
    #[test]
    fn first_sequence_of_any_pair_wraps_as_java_does() {
        let mut e = entry(1);
        e.last_sequence = -5;
        e.offset_delta = i32::MAX;
        // Java: MAX_VALUE - (MAX_VALUE - -5) + 1, every step wrapping.
        assert_eq!(e.first_sequence(), -4);
        e.last_sequence = i32::MAX;
        e.offset_delta = -1;
        assert_eq!(e.first_sequence(), i32::MIN);
    }

    #[test]
    fn corrupt_snapshots_are_refused_as_kafka_does() {
        let bytes = ProducerSnapshot {
            entries: vec![entry(1)],
        }
        .encode();
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(matches!(
            ProducerSnapshot::decode(&flipped),
            Err(SnapshotProblem::CrcMismatch { .. })
        ));
        let mut version = bytes.clone();
        version[1] = 2;
        assert_eq!(
            ProducerSnapshot::decode(&version),
            Err(SnapshotProblem::UnknownVersion(2))
        );
        assert_eq!(
            ProducerSnapshot::decode(&bytes[..30]),
            Err(SnapshotProblem::Truncated {
                len: 30,
                needed: 56
            })
        );
        assert!(matches!(
            ProducerSnapshot::decode(&bytes[..5]),
            Err(SnapshotProblem::Truncated { needed: 10, .. })
        ));
        let mut negative = bytes.clone();
        negative[6..10].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            ProducerSnapshot::decode(&negative),
            Err(SnapshotProblem::NegativeCount(-1))
        );
    }
}
