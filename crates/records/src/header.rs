//! The shallow header of one batch of any magic, parsed from a prefix of its bytes.
//!
//! This is the hot path of recovery and offset translation: it reads at most
//! [`RECORD_BATCH_OVERHEAD`] bytes and never looks at records. The end-of-data rules are
//! Kafka's `FileLogInputStream.nextBatch` (spec 4.5), in this order:
//! 1. 17 bytes or fewer remain: end, quietly ([`HeaderRead::End`]).
//! 2. The length field is below 14 (`RECORD_OVERHEAD_V0`): corrupt.
//! 3. The batch is longer than the bytes that remain: partial tail, quietly
//!    ([`HeaderRead::PartialTail`]).
//! 4. Then, stricter than Kafka's file reader (it defers these to `ensureValid`): a magic above
//!    2 is corrupt, and so is a length below the smallest valid batch of its magic, or (v2) a
//!    record count that its offset range cannot hold.

use crate::layout::{self, legacy, v2};
use crate::{
    Compression, CorruptKind, Error, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, Result, TimestampType,
};

/// What [`BatchHeader::parse`] found at a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderRead {
    /// A whole batch starts here and fits in the bytes that remain.
    Batch(BatchHeader),
    /// 17 bytes or fewer remain (none at all at a clean end): end of data, no error. Kafka
    /// truncates any such bytes during recovery.
    End,
    /// The batch's length field is plausible but promises more bytes than remain: a partial
    /// tail (a torn write). End of data, no error.
    PartialTail {
        /// The batch's total size (`12 + length field`), larger than the bytes remaining.
        total_size: u32,
    },
}

/// The shallow header of one batch, of any magic. `Copy`, and cheap to parse.
///
/// For v2 every field is the header's own. For a legacy v0/v1 message (one "shallow" message,
/// possibly a compressed wrapper around many inner messages), the fields Kafka's legacy
/// batches report are used: see each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Absolute byte position of the batch (the caller's base position plus its offset).
    pub position: u64,
    /// 0, 1 or 2.
    pub magic: u8,
    /// Bytes the batch occupies: `12 + length field`.
    pub total_size: u32,
    /// The first offset of the batch, when known without decompressing: v2's baseOffset; a
    /// legacy uncompressed message's offset. `None` for a legacy compressed wrapper, whose
    /// first inner offset is only known after decompressing (Kafka's legacy `baseOffset()`
    /// decompresses; rolling code uses `last_offset - i32::MAX` instead).
    pub base_offset: Option<i64>,
    /// The last offset of the batch: v2's `baseOffset + lastOffsetDelta`; a legacy message's
    /// own offset field (for a compressed wrapper, Kafka stores the last inner offset there).
    pub last_offset: i64,
    /// v2: `maxTimestamp`; v1: the message timestamp; v0: -1 (Kafka's `NO_TIMESTAMP`).
    pub max_timestamp_ms: i64,
    /// v2: `baseTimestamp` (the delete horizon when [`has_delete_horizon`](Self::has_delete_horizon)
    /// is set); legacy: the same as `max_timestamp_ms`.
    pub base_timestamp_ms: i64,
    /// `None` for v0, which has no timestamps.
    pub timestamp_type: Option<TimestampType>,
    /// The codec the records (or the wrapper's inner messages) are compressed with.
    pub compression: Compression,
    /// v2 attribute bit 5. Always false for legacy.
    pub is_control: bool,
    /// v2 attribute bit 4. Always false for legacy.
    pub is_transactional: bool,
    /// v2 attribute bit 6 (`baseTimestamp` holds the delete horizon). Always false for legacy.
    pub has_delete_horizon: bool,
    /// v2: the header's record count; legacy: 1 for an uncompressed message, `None` for a
    /// compressed wrapper (unknown without decompressing).
    pub record_count: Option<i32>,
    /// v2 `partitionLeaderEpoch` (-1 when none); -1 for legacy.
    pub partition_leader_epoch: i32,
    /// v2 `producerId` (-1 when none); -1 for legacy.
    pub producer_id: i64,
    /// v2 `producerEpoch` (-1 when none); -1 for legacy.
    pub producer_epoch: i16,
    /// v2 `baseSequence` (-1 when none); -1 for legacy.
    pub base_sequence: i32,
    /// The stored checksum: CRC-32C for v2, CRC-32 (IEEE) for legacy. Not verified here; see
    /// [`BatchRef::ensure_valid`](crate::BatchRef::ensure_valid).
    pub crc: u32,
    /// The raw attributes (v2: 16 bits; legacy: the 8-bit attributes byte, sign-extended).
    pub attributes: i16,
}

impl BatchHeader {
    /// Parses the header of the batch starting at `prefix[0]`.
    ///
    /// `position` is the absolute byte position of `prefix[0]` (it only labels errors and the
    /// header). `remaining` is the number of bytes from `position` to the end of the data (a
    /// file's logical size, or a region's end); `prefix` must hold
    /// `min(RECORD_BATCH_OVERHEAD, remaining)` bytes (more is fine, only the first 61 are read).
    ///
    /// # Errors
    /// [`Error::Corrupt`] (at `position`) with [`CorruptKind::SizeBelowMinimum`],
    /// [`CorruptKind::BadMagic`], [`CorruptKind::UnknownCompression`] or
    /// [`CorruptKind::InvalidRecordCount`]; [`Error::ShortPrefix`] if the prefix is shorter
    /// than the batch's header although more bytes remain. End of data is not an error: see
    /// [`HeaderRead`].
    pub fn parse(prefix: &[u8], position: u64, remaining: u64) -> Result<HeaderRead> {
        // Kafka: `position >= end - HEADER_SIZE_UP_TO_MAGIC` ends the stream.
        if remaining <= HEADER_SIZE_UP_TO_MAGIC as u64 {
            return Ok(HeaderRead::End);
        }
        if prefix.len() < HEADER_SIZE_UP_TO_MAGIC {
            return Err(Error::ShortPrefix {
                position,
                len: prefix.len(),
                needed: HEADER_SIZE_UP_TO_MAGIC,
            });
        }
        let size = layout::read_i32(prefix, v2::LENGTH);
        let corrupt = |kind| Err(Error::corrupt(position, kind));
        if size < RECORD_OVERHEAD_V0 as i32 {
            return corrupt(CorruptKind::SizeBelowMinimum {
                size,
                minimum: RECORD_OVERHEAD_V0 as i32,
            });
        }
        // size >= 14 and <= i32::MAX, so this fits in a u32.
        let total_size = size as u32 + LOG_OVERHEAD as u32;
        if u64::from(total_size) > remaining {
            return Ok(HeaderRead::PartialTail { total_size });
        }
        let magic = prefix[MAGIC_OFFSET];
        let (minimum, needed) = match magic {
            0 => (RECORD_OVERHEAD_V0, legacy::KEY_LENGTH_V0),
            1 => (RECORD_OVERHEAD_V1, legacy::KEY_LENGTH_V1),
            2 => (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD, RECORD_BATCH_OVERHEAD),
            _ => return corrupt(CorruptKind::BadMagic { magic }),
        };
        if (size as usize) < minimum {
            return corrupt(CorruptKind::SizeBelowMinimum {
                size,
                minimum: minimum as i32,
            });
        }
        if prefix.len() < needed {
            return Err(Error::ShortPrefix {
                position,
                len: prefix.len(),
                needed,
            });
        }
        let header = if magic == 2 {
            parse_v2(prefix, position, total_size)?
        } else {
            parse_legacy(prefix, position, total_size, magic)?
        };
        Ok(HeaderRead::Batch(header))
    }

    /// The offset after this batch (`last_offset + 1`), the log end offset once it is appended.
    pub fn next_offset(&self) -> i64 {
        self.last_offset.wrapping_add(1)
    }

    /// The delete horizon (v2 with attribute bit 6: `baseTimestamp`), if any.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon.then_some(self.base_timestamp_ms)
    }

    /// True for the v0/v1 legacy message formats.
    pub fn is_legacy(&self) -> bool {
        self.magic < 2
    }

    /// Byte position just after this batch.
    pub fn end_position(&self) -> u64 {
        self.position + u64::from(self.total_size)
    }
}

fn parse_v2(prefix: &[u8], position: u64, total_size: u32) -> Result<BatchHeader> {
    let attributes = layout::read_i16(prefix, v2::ATTRIBUTES);
    let codec = (attributes & v2::COMPRESSION_MASK) as u8;
    let compression = Compression::from_id(codec).ok_or(Error::corrupt(
        position,
        CorruptKind::UnknownCompression { codec },
    ))?;
    let base_offset = layout::read_i64(prefix, v2::BASE_OFFSET);
    let last_offset_delta = layout::read_i32(prefix, v2::LAST_OFFSET_DELTA);
    let count = layout::read_i32(prefix, v2::RECORD_COUNT);
    // Kafka's validator requires count == lastOffsetDelta + 1 on append; compaction may only
    // remove records, so a stored batch always has 0 <= count <= lastOffsetDelta + 1.
    if count < 0 || last_offset_delta < 0 || i64::from(count) > i64::from(last_offset_delta) + 1 {
        return Err(Error::corrupt(
            position,
            CorruptKind::InvalidRecordCount {
                count,
                last_offset_delta,
            },
        ));
    }
    let last_offset = base_offset
        .checked_add(i64::from(last_offset_delta))
        .ok_or(Error::corrupt(position, CorruptKind::OffsetOverflow))?;
    let timestamp_type = if attributes & v2::TIMESTAMP_TYPE_BIT != 0 {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    Ok(BatchHeader {
        position,
        magic: 2,
        total_size,
        base_offset: Some(base_offset),
        last_offset,
        max_timestamp_ms: layout::read_i64(prefix, v2::MAX_TIMESTAMP),
        base_timestamp_ms: layout::read_i64(prefix, v2::BASE_TIMESTAMP),
        timestamp_type: Some(timestamp_type),
        compression,
        is_control: attributes & v2::CONTROL_BIT != 0,
        is_transactional: attributes & v2::TRANSACTIONAL_BIT != 0,
        has_delete_horizon: attributes & v2::DELETE_HORIZON_BIT != 0,
        record_count: Some(count),
        partition_leader_epoch: layout::read_i32(prefix, v2::PARTITION_LEADER_EPOCH),
        producer_id: layout::read_i64(prefix, v2::PRODUCER_ID),
        producer_epoch: layout::read_i16(prefix, v2::PRODUCER_EPOCH),
        base_sequence: layout::read_i32(prefix, v2::BASE_SEQUENCE),
        crc: layout::read_u32(prefix, v2::CRC),
        attributes,
    })
}

fn parse_legacy(prefix: &[u8], position: u64, total_size: u32, magic: u8) -> Result<BatchHeader> {
    let attributes = prefix[legacy::ATTRIBUTES];
    let codec = attributes & legacy::COMPRESSION_MASK;
    // zstd needs v2: Kafka rejects it in a legacy message.
    let compression = Compression::from_id(codec)
        .filter(|c| *c != Compression::Zstd)
        .ok_or(Error::corrupt(
            position,
            CorruptKind::UnknownCompression { codec },
        ))?;
    let offset = layout::read_i64(prefix, 0);
    let (timestamp_ms, timestamp_type) = if magic == 0 {
        (-1, None)
    } else if attributes & legacy::TIMESTAMP_TYPE_BIT != 0 {
        (
            layout::read_i64(prefix, legacy::TIMESTAMP),
            Some(TimestampType::LogAppendTime),
        )
    } else {
        (
            layout::read_i64(prefix, legacy::TIMESTAMP),
            Some(TimestampType::CreateTime),
        )
    };
    let compressed = compression != Compression::None;
    Ok(BatchHeader {
        position,
        magic,
        total_size,
        base_offset: (!compressed).then_some(offset),
        last_offset: offset,
        max_timestamp_ms: timestamp_ms,
        base_timestamp_ms: timestamp_ms,
        timestamp_type,
        compression,
        is_control: false,
        is_transactional: false,
        has_delete_horizon: false,
        record_count: (!compressed).then_some(1),
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        crc: layout::read_u32(prefix, legacy::CRC),
        attributes: i16::from(attributes as i8),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::SPEC_V2_BATCH;

    fn parse_all(bytes: &[u8]) -> Result<HeaderRead> {
        BatchHeader::parse(bytes, 1000, bytes.len() as u64)
    }

    #[test]
    fn spec_vector_header() {
        let HeaderRead::Batch(h) = parse_all(&SPEC_V2_BATCH).unwrap() else {
            panic!("expected a batch");
        };
        assert_eq!(h.position, 1000);
        assert_eq!(h.magic, 2);
        assert_eq!(h.total_size, 97);
        assert_eq!(h.base_offset, Some(0));
        assert_eq!(h.last_offset, 1);
        assert_eq!(h.next_offset(), 2);
        assert_eq!(h.max_timestamp_ms, 283843);
        assert_eq!(h.base_timestamp_ms, 283843);
        assert_eq!(h.timestamp_type, Some(TimestampType::CreateTime));
        assert_eq!(h.compression, Compression::None);
        assert!(!h.is_control && !h.is_transactional && !h.has_delete_horizon);
        assert_eq!(h.record_count, Some(2));
        assert_eq!(h.partition_leader_epoch, -1);
        assert_eq!(h.producer_id, -1);
        assert_eq!(h.producer_epoch, -1);
        assert_eq!(h.base_sequence, -1);
        assert_eq!(h.crc, 3851219455);
        assert_eq!(h.end_position(), 1097);
    }

    #[test]
    fn end_partial_and_corrupt_follow_kafka_order() {
        let batch = &SPEC_V2_BATCH[..];
        // 17 bytes or fewer: end.
        for n in 0..=17 {
            assert_eq!(parse_all(&batch[..n]).unwrap(), HeaderRead::End, "{n}");
        }
        // More than 17 but not the whole batch: partial tail.
        for n in 18..batch.len() {
            assert_eq!(
                parse_all(&batch[..n]).unwrap(),
                HeaderRead::PartialTail { total_size: 97 },
                "{n}"
            );
        }
        // Zero-filled preallocated tail: size 0 < 14 is corrupt, not an end.
        let zeros = [0u8; 64];
        let err = parse_all(&zeros).unwrap_err();
        assert_eq!(err.position(), Some(1000));
        assert!(matches!(
            err.corrupt_kind(),
            Some(CorruptKind::SizeBelowMinimum { size: 0, .. })
        ));
    }

    #[test]
    fn bad_magic_and_short_v2() {
        let mut bad = SPEC_V2_BATCH;
        bad[MAGIC_OFFSET] = 3;
        assert!(matches!(
            parse_all(&bad).unwrap_err().corrupt_kind(),
            Some(CorruptKind::BadMagic { magic: 3 })
        ));
        // A v2 batch whose length field is 40: fits, but below the 61-byte header.
        let mut short = SPEC_V2_BATCH;
        short[8..12].copy_from_slice(&40i32.to_be_bytes());
        assert!(matches!(
            parse_all(&short).unwrap_err().corrupt_kind(),
            Some(CorruptKind::SizeBelowMinimum {
                size: 40,
                minimum: 49
            })
        ));
    }

    #[test]
    fn inconsistent_count() {
        let mut bad = SPEC_V2_BATCH;
        bad[57..61].copy_from_slice(&3i32.to_be_bytes());
        assert!(matches!(
            parse_all(&bad).unwrap_err().corrupt_kind(),
            Some(CorruptKind::InvalidRecordCount {
                count: 3,
                last_offset_delta: 1
            })
        ));
        bad[57..61].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(parse_all(&bad).is_err());
    }

    #[test]
    fn short_prefix_is_a_caller_error() {
        let err = BatchHeader::parse(&SPEC_V2_BATCH[..30], 7, 97).unwrap_err();
        assert!(matches!(
            err,
            Error::ShortPrefix {
                position: 7,
                len: 30,
                needed: 61
            }
        ));
    }
}
