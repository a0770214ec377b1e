//! In-place rewrites of one v2 batch, for a log that assigns offsets, epochs and append times
//! without re-encoding records (Kafka's `DefaultRecordBatch.setLastOffset`,
//! `setPartitionLeaderEpoch`, `setMaxTimestamp`).
//!
//! Base offset and partition leader epoch lie outside the CRC-32C (bytes `[21, end)`), so
//! they are written as they are. The log-append time changes covered bytes: the existing CRC is
//! verified first (a corrupt batch must not get a fresh, valid checksum) and then recomputed.
//!
//! Each function takes exactly one whole batch; positions in its errors are relative to the
//! start of that batch (the caller knows where it lies).

use crate::layout::{self, v2};
use crate::{BatchRef, CorruptKind, Error, MAGIC_V2, Result, TimestampType};

/// Sets the base offset of the v2 batch `batch` (exactly one whole batch), keeping its
/// lastOffsetDelta, so every record moves by the same amount. Not covered by the CRC.
///
/// # Errors
/// [`Error::WrongMagic`] for a legacy message; the errors of [`BatchRef::parse`] if `batch` is
/// not one whole batch.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) -> Result<()> {
    let header = *check_v2(batch)?.header();
    let last_offset_delta = header.last_offset - header.base_offset.unwrap_or(header.last_offset);
    if base_offset.checked_add(last_offset_delta).is_none() {
        return Err(Error::InvalidInput {
            reason: "base offset plus last offset delta overflows",
        });
    }
    layout::write_i64(batch, v2::BASE_OFFSET, base_offset);
    Ok(())
}

/// Sets the partition leader epoch of the v2 batch `batch`. Not covered by the CRC.
///
/// # Errors
/// As [`set_base_offset`].
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) -> Result<()> {
    check_v2(batch)?;
    layout::write_i32(batch, v2::PARTITION_LEADER_EPOCH, epoch);
    Ok(())
}

/// Marks the v2 batch `batch` as LogAppendTime with `timestamp_ms` as its maxTimestamp (so
/// every record reads as that time), then recomputes the CRC-32C.
///
/// # Errors
/// As [`set_base_offset`], and [`CorruptKind::CrcMismatch`] if the batch's checksum was already
/// wrong.
pub fn set_log_append_time(batch: &mut [u8], timestamp_ms: i64) -> Result<()> {
    set_max_timestamp(batch, TimestampType::LogAppendTime, timestamp_ms)
}

/// Sets the timestamp type bit and maxTimestamp of the v2 batch `batch` (Kafka's
/// `setMaxTimestamp`), then recomputes the CRC-32C.
///
/// # Errors
/// As [`set_log_append_time`].
pub fn set_max_timestamp(
    batch: &mut [u8],
    timestamp_type: TimestampType,
    max_timestamp_ms: i64,
) -> Result<()> {
    check_v2(batch)?.ensure_valid()?;
    let mut attributes = layout::read_i16(batch, v2::ATTRIBUTES);
    match timestamp_type {
        TimestampType::LogAppendTime => attributes |= v2::TIMESTAMP_TYPE_BIT,
        TimestampType::CreateTime => attributes &= !v2::TIMESTAMP_TYPE_BIT,
    }
    layout::write_i16(batch, v2::ATTRIBUTES, attributes);
    layout::write_i64(batch, v2::MAX_TIMESTAMP, max_timestamp_ms);
    let crc = crate::crc32c(&batch[v2::ATTRIBUTES..]);
    layout::write_i32(batch, v2::CRC, crc as i32);
    Ok(())
}

fn check_v2(batch: &[u8]) -> Result<BatchRef<'_>> {
    let parsed = BatchRef::parse(batch, 0)?;
    let header = parsed.header();
    if header.magic != MAGIC_V2 {
        return Err(Error::WrongMagic {
            expected: MAGIC_V2,
            found: header.magic,
        });
    }
    if header.total_size as usize != batch.len() {
        return Err(Error::corrupt(
            0,
            CorruptKind::TrailingBytes {
                count: batch.len() - header.total_size as usize,
            },
        ));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::SPEC_V2_BATCH;
    use crate::{BatchBuilder, Compression};

    #[test]
    fn base_offset_and_epoch_keep_the_crc_valid() {
        let mut batch = SPEC_V2_BATCH;
        set_base_offset(&mut batch, 1_000_000).unwrap();
        set_partition_leader_epoch(&mut batch, 12).unwrap();
        let parsed = BatchRef::parse(&batch, 0).unwrap();
        parsed.ensure_valid().unwrap();
        assert_eq!(parsed.header().base_offset, Some(1_000_000));
        assert_eq!(parsed.header().last_offset, 1_000_001);
        assert_eq!(parsed.header().partition_leader_epoch, 12);
        let offsets: Vec<_> = parsed.records(1024).map(|r| r.unwrap().offset).collect();
        assert_eq!(offsets, [1_000_000, 1_000_001]);
        assert!(set_base_offset(&mut batch, i64::MAX).is_err());
    }

    #[test]
    fn log_append_time_recomputes_the_crc() {
        let mut builder = BatchBuilder::new(0).compression(Compression::Lz4);
        builder
            .append(5, None, Some(b"a"), &[])
            .append(9, None, Some(b"b"), &[]);
        let mut batch = builder.build().unwrap().to_vec();
        set_log_append_time(&mut batch, 77).unwrap();
        let parsed = BatchRef::parse(&batch, 0).unwrap();
        parsed.ensure_valid().unwrap();
        assert_eq!(
            parsed.header().timestamp_type,
            Some(TimestampType::LogAppendTime)
        );
        assert_eq!(parsed.header().max_timestamp_ms, 77);
        assert!(
            parsed
                .records(1024)
                .all(|r| r.unwrap().timestamp_ms == Some(77))
        );
    }

    #[test]
    fn refuses_corrupt_legacy_and_partial_input() {
        let mut corrupt = SPEC_V2_BATCH;
        corrupt[90] ^= 4;
        assert!(matches!(
            set_log_append_time(&mut corrupt, 1)
                .unwrap_err()
                .corrupt_kind(),
            Some(CorruptKind::CrcMismatch { .. })
        ));
        let mut legacy = crate::legacy::writer::message(1, 0, 0, 0, None, Some(b"x"));
        assert!(matches!(
            set_base_offset(&mut legacy, 5),
            Err(Error::WrongMagic {
                expected: 2,
                found: 1
            })
        ));
        assert!(set_partition_leader_epoch(&mut { SPEC_V2_BATCH }[..90], 1).is_err());
        let mut two = [SPEC_V2_BATCH, SPEC_V2_BATCH].concat();
        assert!(set_base_offset(&mut two, 1).is_err());
    }
}
