//! One whole batch of any magic: [`BatchRef`] (borrowed) and [`OwnedBatch`] (over `Bytes`).

use bytes::Bytes;

use crate::layout::{legacy as legacy_layout, v2};
use crate::record::V2Context;
use crate::{
    BatchHeader, Compression, ControlRecord, CorruptKind, Error, HeaderRead, RecordRefs, Records,
    Result, TimestampType, codec, legacy,
};

/// Decompression limit used to read the single record of a control batch.
const CONTROL_RECORD_LIMIT: usize = 1 << 20;

/// A borrowed view of one whole batch (a v2 record batch or one legacy v0/v1 message).
///
/// Cheap to copy. Its header has been parsed (so its sizes are consistent); its checksum has
/// not been checked until [`ensure_valid`](Self::ensure_valid) says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRef<'a> {
    header: BatchHeader,
    bytes: &'a [u8],
}

impl<'a> BatchRef<'a> {
    /// Parses the batch at the start of `bytes`, which must hold all of it (extra bytes after it
    /// are ignored). `position` is the absolute position of `bytes[0]`.
    ///
    /// # Errors
    /// The errors of [`BatchHeader::parse`]; [`CorruptKind::Truncated`] (at `position`) if
    /// `bytes` ends before the batch does.
    pub fn parse(bytes: &'a [u8], position: u64) -> Result<Self> {
        match BatchHeader::parse(bytes, position, bytes.len() as u64)? {
            HeaderRead::Batch(header) => Ok(Self::from_parts(header, bytes)),
            HeaderRead::End | HeaderRead::PartialTail { .. } => {
                Err(Error::corrupt(position, CorruptKind::Truncated))
            }
        }
    }

    /// `bytes` must start with the batch `header` was parsed from and hold all of it.
    pub(crate) fn from_parts(header: BatchHeader, bytes: &'a [u8]) -> Self {
        let end = (header.total_size as usize).min(bytes.len());
        BatchRef {
            header,
            bytes: &bytes[..end],
        }
    }

    /// The parsed header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The batch's bytes, exactly `header().total_size` of them.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Absolute position of the batch.
    pub fn position(&self) -> u64 {
        self.header.position
    }

    /// The first offset, when known without decompressing (see [`BatchHeader::base_offset`]).
    pub fn base_offset(&self) -> Option<i64> {
        self.header.base_offset
    }

    /// The last offset of the batch (see [`BatchHeader::last_offset`]).
    pub fn last_offset(&self) -> i64 {
        self.header.last_offset
    }

    /// `last_offset() + 1`.
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }

    /// The batch's max timestamp (see [`BatchHeader::max_timestamp_ms`]).
    pub fn max_timestamp_ms(&self) -> i64 {
        self.header.max_timestamp_ms
    }

    /// The checksum of the bytes as they are (CRC-32C over `[21, end)` for v2, CRC-32 over
    /// `[16, end)` for legacy), to compare with `header().crc`.
    pub fn compute_crc(&self) -> u32 {
        compute_crc(&self.header, self.bytes)
    }

    /// Kafka's `ensureValid`: the size is at least the minimum for the magic (checked when the
    /// header was parsed) and the stored checksum matches.
    ///
    /// # Errors
    /// [`CorruptKind::CrcMismatch`] at the batch position.
    pub fn ensure_valid(&self) -> Result<()> {
        let computed = self.compute_crc();
        if computed != self.header.crc {
            return Err(Error::corrupt(
                self.header.position,
                CorruptKind::CrcMismatch {
                    stored: self.header.crc,
                    computed,
                },
            ));
        }
        Ok(())
    }

    /// The records of the batch. Compressed records are decompressed first into at most
    /// `max_decompressed_bytes` bytes. The checksum is not checked (call
    /// [`ensure_valid`](Self::ensure_valid)); keys and values are copied out of the borrowed
    /// bytes once (use [`OwnedBatch`] to share them instead).
    ///
    /// For a legacy compressed wrapper the records are its inner messages with absolute
    /// offsets; inner checksums are checked. With LogAppendTime every record reports the batch
    /// (wrapper) timestamp.
    ///
    /// # Errors
    /// The iterator yields at most one `Err` ([`Error::Corrupt`]), then ends.
    pub fn records(&self, max_decompressed_bytes: usize) -> Records {
        records(&self.header, self.bytes, None, max_decompressed_bytes)
    }

    /// The records of an uncompressed v2 batch, borrowed from its bytes: no copy, no
    /// allocation, no reference counting (the fast path for consumers that do not keep
    /// records). Records are decoded and checked as by [`records`](Self::records), with the
    /// same errors and positions. `None` for a compressed batch or a legacy v0/v1 message:
    /// use [`records`](Self::records) there. The checksum is not checked.
    ///
    /// # Errors
    /// The iterator yields at most one `Err` ([`Error::Corrupt`]), then ends.
    pub fn records_borrowed(&self) -> Option<RecordRefs<'a>> {
        records_borrowed(&self.header, self.bytes)
    }

    /// For a control batch, its control record (the first record): its type and, for
    /// ABORT/COMMIT, the end-transaction marker. `None` for other batches.
    ///
    /// # Errors
    /// [`Error::Corrupt`] at the batch position when the batch holds no record or the key or
    /// marker is malformed, or the errors of [`records`](Self::records).
    pub fn control_record(&self) -> Result<Option<ControlRecord>> {
        control_record(&self.header, self.records(CONTROL_RECORD_LIMIT))
    }

    /// Copies the batch into an [`OwnedBatch`].
    pub fn to_owned_batch(&self) -> OwnedBatch {
        OwnedBatch {
            header: self.header,
            bytes: Bytes::copy_from_slice(self.bytes),
        }
    }
}

/// One whole batch over shared [`Bytes`]: like [`BatchRef`], but its records share the
/// buffer (no copy for uncompressed keys and values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedBatch {
    header: BatchHeader,
    bytes: Bytes,
}

impl OwnedBatch {
    /// Parses the batch at the start of `bytes` (see [`BatchRef::parse`]).
    ///
    /// # Errors
    /// As [`BatchRef::parse`].
    pub fn parse(bytes: Bytes, position: u64) -> Result<Self> {
        let header = *BatchRef::parse(&bytes, position)?.header();
        Ok(Self::from_parts(header, bytes))
    }

    pub(crate) fn from_parts(header: BatchHeader, bytes: Bytes) -> Self {
        let end = (header.total_size as usize).min(bytes.len());
        OwnedBatch {
            header,
            bytes: bytes.slice(..end),
        }
    }

    /// A borrowed view.
    pub fn as_batch_ref(&self) -> BatchRef<'_> {
        BatchRef {
            header: self.header,
            bytes: &self.bytes,
        }
    }

    /// The parsed header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The batch's bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// See [`BatchRef::ensure_valid`].
    ///
    /// # Errors
    /// As [`BatchRef::ensure_valid`].
    pub fn ensure_valid(&self) -> Result<()> {
        self.as_batch_ref().ensure_valid()
    }

    /// See [`BatchRef::records`]; uncompressed keys and values share this batch's buffer.
    ///
    /// # Errors
    /// As [`BatchRef::records`].
    pub fn records(&self, max_decompressed_bytes: usize) -> Records {
        records(
            &self.header,
            &self.bytes,
            Some(&self.bytes),
            max_decompressed_bytes,
        )
    }

    /// See [`BatchRef::records_borrowed`]: the records borrow from this batch's buffer.
    ///
    /// # Errors
    /// As [`BatchRef::records_borrowed`].
    pub fn records_borrowed(&self) -> Option<RecordRefs<'_>> {
        records_borrowed(&self.header, &self.bytes)
    }

    /// See [`BatchRef::control_record`].
    ///
    /// # Errors
    /// As [`BatchRef::control_record`].
    pub fn control_record(&self) -> Result<Option<ControlRecord>> {
        control_record(&self.header, self.records(CONTROL_RECORD_LIMIT))
    }
}

pub(crate) fn compute_crc(header: &BatchHeader, bytes: &[u8]) -> u32 {
    if header.magic >= 2 {
        crate::crc32c(bytes.get(v2::ATTRIBUTES..).unwrap_or_default())
    } else {
        crc32fast::hash(bytes.get(legacy_layout::MAGIC..).unwrap_or_default())
    }
}

fn v2_context(header: &BatchHeader) -> V2Context {
    V2Context {
        base_offset: header.base_offset.unwrap_or(header.last_offset),
        base_timestamp_ms: header.base_timestamp_ms,
        max_timestamp_ms: header.max_timestamp_ms,
        log_append_time: header.timestamp_type == Some(TimestampType::LogAppendTime),
    }
}

fn records_borrowed<'a>(header: &BatchHeader, bytes: &'a [u8]) -> Option<RecordRefs<'a>> {
    if header.magic < 2 || header.compression != Compression::None {
        return None;
    }
    let payload = bytes.get(v2::RECORDS..).unwrap_or_default();
    let declared = header.record_count.unwrap_or(0);
    let origin = header.position + v2::RECORDS as u64;
    Some(RecordRefs::new(
        payload,
        declared,
        v2_context(header),
        origin,
    ))
}

fn records(
    header: &BatchHeader,
    bytes: &[u8],
    owner: Option<&Bytes>,
    max_decompressed_bytes: usize,
) -> Records {
    if header.magic < 2 {
        return match legacy::records(header, bytes, owner, max_decompressed_bytes) {
            Ok(records) => Records::legacy(records),
            Err(error) => Records::failed(error),
        };
    }
    let payload = bytes.get(v2::RECORDS..).unwrap_or_default();
    let ctx = v2_context(header);
    let declared = header.record_count.unwrap_or(0);
    if header.compression == Compression::None {
        let data = match owner {
            Some(owner) => owner.slice(v2::RECORDS.min(owner.len())..bytes.len()),
            None => Bytes::copy_from_slice(payload),
        };
        let origin = header.position + v2::RECORDS as u64;
        return Records::v2(data, declared, ctx, Some(origin), header.position);
    }
    match codec::decompress(header.compression, payload, max_decompressed_bytes, false) {
        Ok(data) => Records::v2(Bytes::from(data), declared, ctx, None, header.position),
        Err(kind) => Records::failed(Error::corrupt(header.position, kind)),
    }
}

fn control_record(header: &BatchHeader, mut records: Records) -> Result<Option<ControlRecord>> {
    if !header.is_control {
        return Ok(None);
    }
    let record = records.next().ok_or(Error::corrupt(
        header.position,
        CorruptKind::InvalidControlRecord {
            reason: "control batch holds no record",
        },
    ))??;
    ControlRecord::parse(&record)
        .map(Some)
        .map_err(|kind| Error::corrupt(header.position, kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::SPEC_V2_BATCH;

    #[test]
    fn spec_vector_is_valid_and_decodes() {
        let batch = BatchRef::parse(&SPEC_V2_BATCH, 0).unwrap();
        assert_eq!(batch.compute_crc(), 3851219455);
        batch.ensure_valid().unwrap();
        let records: Vec<_> = batch.records(1 << 20).collect::<Result<_>>().unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].offset, 0);
        assert_eq!(records[0].timestamp_ms, Some(283843));
        assert_eq!(records[1].offset, 1);
        assert_eq!(records[1].timestamp_ms, Some(1234));
        assert_eq!(records[1].value.as_deref(), Some(&b"value2"[..]));
        assert!(records[1].headers.is_empty());
        assert!(batch.control_record().unwrap().is_none());

        let owned = OwnedBatch::parse(Bytes::from_static(&SPEC_V2_BATCH), 0).unwrap();
        let shared: Vec<_> = owned.records(0).collect::<Result<_>>().unwrap();
        assert_eq!(shared, records);
    }

    #[test]
    fn crc_mismatch_is_reported_with_both_values() {
        let mut bytes = SPEC_V2_BATCH;
        bytes[80] ^= 1;
        let err = BatchRef::parse(&bytes, 500)
            .unwrap()
            .ensure_valid()
            .unwrap_err();
        assert_eq!(err.position(), Some(500));
        assert!(matches!(
            err.corrupt_kind(),
            Some(CorruptKind::CrcMismatch {
                stored: 3851219455,
                ..
            })
        ));
        // The partition leader epoch is not covered.
        let mut ple = SPEC_V2_BATCH;
        ple[12..16].copy_from_slice(&7i32.to_be_bytes());
        BatchRef::parse(&ple, 0).unwrap().ensure_valid().unwrap();
    }

    #[test]
    fn record_errors_carry_absolute_positions() {
        // Claim one more record than the data holds: lastOffsetDelta 2, count 3.
        let mut bytes = SPEC_V2_BATCH;
        bytes[23..27].copy_from_slice(&2i32.to_be_bytes());
        bytes[57..61].copy_from_slice(&3i32.to_be_bytes());
        let batch = BatchRef::parse(&bytes, 1000).unwrap();
        let results: Vec<_> = batch.records(1 << 20).collect();
        assert_eq!(results.len(), 3);
        let err = results[2].as_ref().unwrap_err();
        assert_eq!(err.position(), Some(1097));
        assert_eq!(
            err.corrupt_kind(),
            Some(&CorruptKind::RecordCountMismatch {
                declared: 3,
                decoded: 2
            })
        );
        // Claim one fewer: the second record is left over.
        let mut bytes = SPEC_V2_BATCH;
        bytes[57..61].copy_from_slice(&1i32.to_be_bytes());
        let batch = BatchRef::parse(&bytes, 1000).unwrap();
        let results: Vec<_> = batch.records(1 << 20).collect();
        assert_eq!(results.len(), 2);
        let err = results[1].as_ref().unwrap_err();
        assert_eq!(err.position(), Some(1000 + 61 + 17));
        assert!(matches!(
            err.corrupt_kind(),
            Some(CorruptKind::TrailingBytes { count: 19 })
        ));
    }
}
