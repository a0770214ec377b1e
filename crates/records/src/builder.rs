//! [`BatchBuilder`]: writes valid v2 record batches.

use bytes::Bytes;

use crate::layout::{self, v2};
use crate::varint::{varint_len, varlong_len, write_varint, write_varlong};
use crate::{
    Compression, ControlRecordType, EndTransactionMarker, Error, MAGIC_V2, RECORD_BATCH_OVERHEAD,
    Result, TimestampType, codec,
};

/// Builds one v2 record batch (Kafka's `MemoryRecordsBuilder` for magic 2).
///
/// Configure with the by-value methods, add records with [`append`](Self::append), then
/// [`build`](Self::build). Records are encoded as they are appended; `build` compresses them
/// and writes the header and CRC-32C. As in Kafka, `baseTimestamp` is the first record's
/// timestamp and `maxTimestamp` the largest record timestamp (or the log-append time).
///
/// ```
/// use seglog_records::{BatchBuilder, BatchRef, Compression};
///
/// let mut builder = BatchBuilder::new(42).compression(Compression::Zstd);
/// builder
///     .append(1_700_000_000_000, Some(b"k"), Some(b"v"), &[("trace", Some(b"1"))])
///     .append(1_700_000_000_005, None, None, &[]);
/// let bytes = builder.build()?;
///
/// let batch = BatchRef::parse(&bytes, 0)?;
/// batch.ensure_valid()?;
/// assert_eq!(batch.header().last_offset, 43);
/// assert_eq!(batch.header().max_timestamp_ms, 1_700_000_000_005);
/// let records: Vec<_> = batch.records(1 << 20).collect::<Result<_, _>>()?;
/// assert_eq!(records[0].headers[0].key, "trace");
/// assert_eq!(records[1].value, None);
/// # Ok::<(), seglog_records::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: i64,
    compression: Compression,
    timestamp_type: TimestampType,
    log_append_time_ms: Option<i64>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    partition_leader_epoch: i32,
    /// Encoded records, uncompressed.
    records: Vec<u8>,
    count: i32,
    base_timestamp_ms: Option<i64>,
    max_timestamp_ms: i64,
    /// Offset delta of the last record appended; -1 before the first.
    last_offset_delta: i64,
    /// First error met by `append`, reported by `build`.
    deferred: Option<&'static str>,
    /// KIP-534: `baseTimestamp` holds this delete horizon and attribute bit 6 is set.
    delete_horizon_ms: Option<i64>,
    /// Kafka's `overrideLastOffset`: the batch's last offset, above its last record's.
    last_offset_override: Option<i64>,
}

impl BatchBuilder {
    /// A builder for a batch whose first record gets `base_offset`. Defaults: no compression,
    /// CreateTime, no producer (id -1, epoch -1, sequence -1), not transactional, not control,
    /// partition leader epoch -1.
    pub fn new(base_offset: i64) -> Self {
        BatchBuilder {
            base_offset,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time_ms: None,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            control: false,
            partition_leader_epoch: -1,
            records: Vec::new(),
            count: 0,
            base_timestamp_ms: None,
            max_timestamp_ms: -1,
            last_offset_delta: -1,
            deferred: None,
            delete_horizon_ms: None,
            last_offset_override: None,
        }
    }

    /// KIP-534's delete horizon (Kafka's `MemoryRecordsBuilder` with `deleteHorizonMs`): the
    /// batch's `baseTimestamp` holds `horizon_ms` and attribute bit 6 is set; record
    /// timestamps stay exact (their deltas are taken from the horizon). Call before the first
    /// append.
    pub fn delete_horizon_ms(mut self, horizon_ms: i64) -> Self {
        if self.count == 0 {
            self.delete_horizon_ms = Some(horizon_ms);
            self.base_timestamp_ms = Some(horizon_ms);
        } else {
            self.deferred = Some("the delete horizon must be set before the first record");
        }
        self
    }

    /// Kafka's `overrideLastOffset`: the batch ends at `last_offset` (a compacted batch keeps
    /// its original last offset, so the producer's last sequence survives). `build` fails if
    /// it lies below the last record's offset or more than `i32::MAX` above the base offset.
    pub fn last_offset(mut self, last_offset: i64) -> Self {
        self.last_offset_override = Some(last_offset);
        self
    }

    /// An empty v2 batch: only the 61-byte header, record count 0 (Kafka's
    /// `DefaultRecordBatch.writeEmptyHeader`, what the cleaner leaves of a batch it must keep
    /// for its producer state or its last offset). No codec, `baseTimestamp` -1, no delete
    /// horizon; every other field as given by `like` (a v2 header), with `max_timestamp_ms`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `like` is not a v2 header or its offsets do not fit.
    pub fn empty_batch(like: &crate::BatchHeader) -> Result<Bytes> {
        let Some(base_offset) = like.base_offset.filter(|_| like.magic == MAGIC_V2) else {
            return Err(Error::InvalidInput {
                reason: "empty batches are only supported for magic v2",
            });
        };
        let delta =
            i32::try_from(like.last_offset - base_offset).map_err(|_| Error::InvalidInput {
                reason: "last offset delta does not fit in an i32",
            })?;
        let mut out = vec![0u8; RECORD_BATCH_OVERHEAD];
        let mut attributes = 0i16;
        if like.timestamp_type == Some(TimestampType::LogAppendTime) {
            attributes |= v2::TIMESTAMP_TYPE_BIT;
        }
        if like.is_transactional {
            attributes |= v2::TRANSACTIONAL_BIT;
        }
        if like.is_control {
            attributes |= v2::CONTROL_BIT;
        }
        layout::write_i64(&mut out, v2::BASE_OFFSET, base_offset);
        layout::write_i32(
            &mut out,
            v2::LENGTH,
            (RECORD_BATCH_OVERHEAD - crate::LOG_OVERHEAD) as i32,
        );
        layout::write_i32(
            &mut out,
            v2::PARTITION_LEADER_EPOCH,
            like.partition_leader_epoch,
        );
        out[v2::MAGIC] = MAGIC_V2;
        layout::write_i16(&mut out, v2::ATTRIBUTES, attributes);
        layout::write_i32(&mut out, v2::LAST_OFFSET_DELTA, delta);
        layout::write_i64(&mut out, v2::BASE_TIMESTAMP, -1);
        layout::write_i64(&mut out, v2::MAX_TIMESTAMP, like.max_timestamp_ms);
        layout::write_i64(&mut out, v2::PRODUCER_ID, like.producer_id);
        layout::write_i16(&mut out, v2::PRODUCER_EPOCH, like.producer_epoch);
        layout::write_i32(&mut out, v2::BASE_SEQUENCE, like.base_sequence);
        layout::write_i32(&mut out, v2::RECORD_COUNT, 0);
        let crc = crate::crc32c(&out[v2::ATTRIBUTES..]);
        layout::write_i32(&mut out, v2::CRC, crc as i32);
        Ok(Bytes::from(out))
    }

    /// The codec for the records.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// The timestamp type. With LogAppendTime and no [`log_append_time`](Self::log_append_time),
    /// `maxTimestamp` is the largest record timestamp.
    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }

    /// LogAppendTime with this broker time as the batch's `maxTimestamp` (every record reads
    /// as this time).
    pub fn log_append_time(mut self, timestamp_ms: i64) -> Self {
        self.timestamp_type = TimestampType::LogAppendTime;
        self.log_append_time_ms = Some(timestamp_ms);
        self
    }

    /// Idempotent / transactional producer fields.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Attribute bit 4.
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Attribute bit 5. Control batches must not be compressed.
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// The partition leader epoch (-1 for none).
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Appends a record at the next offset (`base_offset` for the first one). A failure (more
    /// than `i32::MAX` records or bytes) is reported by [`build`](Self::build).
    pub fn append(
        &mut self,
        timestamp_ms: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> &mut Self {
        let delta = self.last_offset_delta + 1;
        self.append_at_delta(delta, timestamp_ms, key, value, headers);
        self
    }

    /// Appends a record at `offset`, which must be above the previous record's offset and
    /// within `i32::MAX` of the base offset (compacted batches have such gaps).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `offset` is out of order or out of range.
    pub fn append_with_offset(
        &mut self,
        offset: i64,
        timestamp_ms: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> Result<&mut Self> {
        let delta = offset.checked_sub(self.base_offset);
        match delta {
            Some(d) if d > self.last_offset_delta && d <= i64::from(i32::MAX) => {
                self.append_at_delta(d, timestamp_ms, key, value, headers);
                Ok(self)
            }
            _ => Err(Error::InvalidInput {
                reason: "record offset must increase and stay within i32::MAX of the base offset",
            }),
        }
    }

    /// Number of records appended.
    pub fn record_count(&self) -> i32 {
        self.count
    }

    /// True before the first append.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of the records appended so far, uncompressed (the batch is at most this plus
    /// [`RECORD_BATCH_OVERHEAD`] when uncompressed).
    pub fn uncompressed_records_size(&self) -> usize {
        self.records.len()
    }

    /// Writes the batch.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty batch, a compressed control batch, a batch or
    /// record over `i32::MAX` bytes or records; [`Error::Compress`] if the codec fails.
    pub fn build(&self) -> Result<Bytes> {
        if let Some(reason) = self.deferred {
            return Err(Error::InvalidInput { reason });
        }
        let (Some(base_timestamp_ms), false) = (self.base_timestamp_ms, self.count == 0) else {
            return Err(Error::InvalidInput {
                reason: "a batch needs at least one record",
            });
        };
        if self.control && self.compression != Compression::None {
            return Err(Error::InvalidInput {
                reason: "control batches must not be compressed",
            });
        }
        let mut out;
        if self.compression == Compression::None {
            out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + self.records.len());
            out.resize(RECORD_BATCH_OVERHEAD, 0);
            out.extend_from_slice(&self.records);
        } else {
            let packed = codec::compress(self.compression, &self.records)?;
            out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + packed.len());
            out.resize(RECORD_BATCH_OVERHEAD, 0);
            out.extend_from_slice(&packed);
        }
        let length =
            i32::try_from(out.len() - crate::LOG_OVERHEAD).map_err(|_| Error::InvalidInput {
                reason: "batch is larger than i32::MAX bytes",
            })?;
        let max_timestamp_ms = match self.timestamp_type {
            TimestampType::LogAppendTime => {
                self.log_append_time_ms.unwrap_or(self.max_timestamp_ms)
            }
            TimestampType::CreateTime => self.max_timestamp_ms,
        };
        let mut attributes = i16::from(self.compression.id());
        if self.timestamp_type == TimestampType::LogAppendTime {
            attributes |= v2::TIMESTAMP_TYPE_BIT;
        }
        if self.transactional {
            attributes |= v2::TRANSACTIONAL_BIT;
        }
        if self.control {
            attributes |= v2::CONTROL_BIT;
        }
        if self.delete_horizon_ms.is_some() {
            attributes |= v2::DELETE_HORIZON_BIT;
        }
        let last_offset_delta = match self.last_offset_override {
            None => self.last_offset_delta,
            Some(last) => match last.checked_sub(self.base_offset) {
                Some(d) if d >= self.last_offset_delta && d <= i64::from(i32::MAX) => d,
                _ => {
                    return Err(Error::InvalidInput {
                        reason: "the last offset must not be below the last record's nor beyond i32::MAX of the base",
                    });
                }
            },
        };
        layout::write_i64(&mut out, v2::BASE_OFFSET, self.base_offset);
        layout::write_i32(&mut out, v2::LENGTH, length);
        layout::write_i32(
            &mut out,
            v2::PARTITION_LEADER_EPOCH,
            self.partition_leader_epoch,
        );
        out[v2::MAGIC] = MAGIC_V2;
        layout::write_i16(&mut out, v2::ATTRIBUTES, attributes);
        // Fits: every delta was checked against i32::MAX (on append, or above).
        layout::write_i32(&mut out, v2::LAST_OFFSET_DELTA, last_offset_delta as i32);
        layout::write_i64(&mut out, v2::BASE_TIMESTAMP, base_timestamp_ms);
        layout::write_i64(&mut out, v2::MAX_TIMESTAMP, max_timestamp_ms);
        layout::write_i64(&mut out, v2::PRODUCER_ID, self.producer_id);
        layout::write_i16(&mut out, v2::PRODUCER_EPOCH, self.producer_epoch);
        layout::write_i32(&mut out, v2::BASE_SEQUENCE, self.base_sequence);
        layout::write_i32(&mut out, v2::RECORD_COUNT, self.count);
        let crc = crate::crc32c(&out[v2::ATTRIBUTES..]);
        layout::write_i32(&mut out, v2::CRC, crc as i32);
        Ok(Bytes::from(out))
    }

    /// A transaction marker batch (Kafka's `MemoryRecords.withEndTransactionMarker`): control
    /// and transactional, one ABORT or COMMIT record, base sequence -1, CreateTime.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `control_type` is not ABORT or COMMIT.
    pub fn end_transaction_marker(
        base_offset: i64,
        timestamp_ms: i64,
        partition_leader_epoch: i32,
        producer_id: i64,
        producer_epoch: i16,
        control_type: ControlRecordType,
        marker: EndTransactionMarker,
    ) -> Result<Bytes> {
        if !control_type.is_transaction_marker() {
            return Err(Error::InvalidInput {
                reason: "an end transaction marker is ABORT or COMMIT",
            });
        }
        let mut builder = BatchBuilder::new(base_offset)
            .control(true)
            .transactional(true)
            .producer(producer_id, producer_epoch, -1)
            .partition_leader_epoch(partition_leader_epoch);
        builder.append(
            timestamp_ms,
            Some(&control_type.key()),
            Some(&marker.value()),
            &[],
        );
        builder.build()
    }

    fn append_at_delta(
        &mut self,
        offset_delta: i64,
        timestamp_ms: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) {
        if self.deferred.is_some() {
            return;
        }
        let (Ok(offset_delta), Some(count)) =
            (i32::try_from(offset_delta), self.count.checked_add(1))
        else {
            self.deferred = Some("more than i32::MAX records or offsets in one batch");
            return;
        };
        let base_timestamp_ms = *self.base_timestamp_ms.get_or_insert(timestamp_ms);
        // Java long arithmetic: the reader adds it back with the same wrapping.
        let timestamp_delta = timestamp_ms.wrapping_sub(base_timestamp_ms);
        let Some(body_len) = body_len(timestamp_delta, offset_delta, key, value, headers) else {
            self.deferred = Some("record is larger than i32::MAX bytes");
            return;
        };
        let out = &mut self.records;
        out.reserve(body_len as usize + 5);
        write_varint(out, body_len);
        out.push(0); // attributes
        write_varlong(out, timestamp_delta);
        write_varint(out, offset_delta);
        write_nullable(out, key);
        write_nullable(out, value);
        write_varint(out, headers.len() as i32);
        for (header_key, header_value) in headers {
            write_varint(out, header_key.len() as i32);
            out.extend_from_slice(header_key.as_bytes());
            write_nullable(out, *header_value);
        }
        self.count = count;
        self.last_offset_delta = i64::from(offset_delta);
        if self.count == 1 || timestamp_ms > self.max_timestamp_ms {
            self.max_timestamp_ms = timestamp_ms;
        }
    }
}

/// Size of a record after its length prefix, or `None` if it does not fit in an i32.
fn body_len(
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) -> Option<i32> {
    let mut len = 1 + varlong_len(timestamp_delta) + varint_len(offset_delta);
    len = len.checked_add(nullable_len(key)?)?;
    len = len.checked_add(nullable_len(value)?)?;
    len = len.checked_add(varint_len(i32::try_from(headers.len()).ok()?))?;
    for (header_key, header_value) in headers {
        let key_len = i32::try_from(header_key.len()).ok()?;
        len = len.checked_add(varint_len(key_len) + header_key.len())?;
        len = len.checked_add(nullable_len(*header_value)?)?;
    }
    i32::try_from(len).ok()
}

fn nullable_len(field: Option<&[u8]>) -> Option<usize> {
    match field {
        None => Some(1),
        Some(bytes) => Some(varint_len(i32::try_from(bytes.len()).ok()?) + bytes.len()),
    }
}

fn write_nullable(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => write_varint(out, -1),
        Some(bytes) => {
            write_varint(out, bytes.len() as i32);
            out.extend_from_slice(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{SPEC_V2_BATCH, SPEC_V2_OWN_EXAMPLE};
    use crate::{BatchRef, ControlRecord};

    #[test]
    fn reproduces_the_97_byte_spec_batch() {
        let mut builder = BatchBuilder::new(0);
        builder
            .append(283843, Some(b"key1"), Some(b"value1"), &[])
            .append(1234, Some(b"key2"), Some(b"value2"), &[]);
        let bytes = builder.build().unwrap();
        assert_eq!(&bytes[..], &SPEC_V2_BATCH[..]);
    }

    #[test]
    fn reproduces_the_73_byte_own_example() {
        let mut builder = BatchBuilder::new(0).partition_leader_epoch(0);
        builder.append(1_700_000_000_000, None, Some(b"hello"), &[]);
        let bytes = builder.build().unwrap();
        assert_eq!(&bytes[..], &SPEC_V2_OWN_EXAMPLE[..]);
        assert_eq!(crate::layout::read_u32(&bytes, v2::CRC), 0xE641_A44B);
    }

    #[test]
    fn every_codec_builds_valid_batches() {
        for codec in Compression::ALL {
            let mut builder = BatchBuilder::new(100)
                .compression(codec)
                .producer(7, 3, 11)
                .transactional(true)
                .partition_leader_epoch(5);
            for i in 0..50i64 {
                builder.append(
                    1_000 - i,
                    Some(format!("key{i}").as_bytes()),
                    (i % 7 != 0).then_some(&b"value"[..]),
                    &[("h", None), ("i", Some(b"x"))],
                );
            }
            let bytes = builder.build().unwrap();
            let batch = BatchRef::parse(&bytes, 0).unwrap();
            batch.ensure_valid().unwrap();
            let h = batch.header();
            assert_eq!(h.compression, codec);
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (7, 3, 11)
            );
            assert!(h.is_transactional && !h.is_control);
            assert_eq!(h.partition_leader_epoch, 5);
            assert_eq!((h.base_timestamp_ms, h.max_timestamp_ms), (1_000, 1_000));
            assert_eq!(h.last_offset, 149);
            let records: Vec<_> = batch.records(1 << 20).collect::<Result<_>>().unwrap();
            assert_eq!(records.len(), 50);
            assert_eq!(records[49].offset, 149);
            assert_eq!(records[49].timestamp_ms, Some(951));
            assert_eq!(records[7].value, None);
            assert_eq!(records[3].headers.len(), 2);
        }
    }

    #[test]
    fn gaps_log_append_time_and_errors() {
        let mut builder = BatchBuilder::new(10).log_append_time(5_000);
        builder
            .append_with_offset(12, 1, None, Some(b"a"), &[])
            .unwrap();
        builder
            .append_with_offset(20, 2, None, Some(b"b"), &[])
            .unwrap();
        assert!(builder.append_with_offset(20, 3, None, None, &[]).is_err());
        let bytes = builder.build().unwrap();
        let batch = BatchRef::parse(&bytes, 0).unwrap();
        assert_eq!(batch.header().last_offset, 20);
        assert_eq!(
            batch.header().timestamp_type,
            Some(TimestampType::LogAppendTime)
        );
        let records: Vec<_> = batch.records(1024).collect::<Result<_>>().unwrap();
        assert_eq!(
            records
                .iter()
                .map(|r| (r.offset, r.timestamp_ms))
                .collect::<Vec<_>>(),
            [(12, Some(5_000)), (20, Some(5_000))]
        );
        assert!(BatchBuilder::new(0).build().is_err());
        let mut control = BatchBuilder::new(0)
            .control(true)
            .compression(Compression::Gzip);
        control.append(0, None, None, &[]);
        assert!(control.build().is_err());
    }

    #[test]
    fn end_transaction_markers() {
        for t in [ControlRecordType::Abort, ControlRecordType::Commit] {
            let bytes = BatchBuilder::end_transaction_marker(
                77,
                123,
                4,
                9000,
                2,
                t,
                EndTransactionMarker::new(17),
            )
            .unwrap();
            let batch = BatchRef::parse(&bytes, 0).unwrap();
            batch.ensure_valid().unwrap();
            let h = batch.header();
            assert!(h.is_control && h.is_transactional);
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (9000, 2, -1)
            );
            let ControlRecord {
                control_type,
                marker,
                record,
            } = batch.control_record().unwrap().unwrap();
            assert_eq!(control_type, t);
            assert_eq!(marker, Some(EndTransactionMarker::new(17)));
            assert_eq!(record.offset, 77);
        }
        assert!(
            BatchBuilder::end_transaction_marker(
                0,
                0,
                0,
                0,
                0,
                ControlRecordType::LeaderChange,
                EndTransactionMarker::new(0)
            )
            .is_err()
        );
    }

    #[test]
    fn delete_horizon_and_last_offset_override_keep_record_timestamps_and_offsets() {
        let mut builder = BatchBuilder::new(100)
            .delete_horizon_ms(9_000_000)
            .last_offset(120)
            .producer(5, 1, 40);
        builder
            .append_with_offset(103, 1_000, Some(b"k"), None, &[])
            .unwrap();
        builder
            .append_with_offset(110, 2_000, Some(b"j"), Some(b"v"), &[("h", None)])
            .unwrap();
        let bytes = builder.build().unwrap();
        let batch = BatchRef::parse(&bytes, 0).unwrap();
        batch.ensure_valid().unwrap();
        let h = batch.header();
        assert!(h.has_delete_horizon);
        assert_eq!(h.delete_horizon_ms(), Some(9_000_000));
        assert_eq!((h.base_offset, h.last_offset), (Some(100), 120));
        assert_eq!(h.max_timestamp_ms, 2_000);
        let records: Vec<_> = batch.records(1 << 20).collect::<Result<_>>().unwrap();
        let got: Vec<_> = records.iter().map(|r| (r.offset, r.timestamp_ms)).collect();
        assert_eq!(got, [(103, Some(1_000)), (110, Some(2_000))]);
        let below = BatchBuilder::new(0).last_offset(0);
        let mut below = below;
        below.append_with_offset(3, 0, None, None, &[]).unwrap();
        assert!(below.build().is_err());
        assert!(BatchBuilder::new(0).delete_horizon_ms(5).build().is_err());
    }

    #[test]
    fn empty_batch_keeps_offsets_and_producer_fields() {
        let mut builder = BatchBuilder::new(50)
            .producer(7, 2, 10)
            .transactional(true)
            .partition_leader_epoch(4);
        builder.append(1_000, Some(b"k"), Some(b"v"), &[]);
        builder.append(3_000, Some(b"k"), Some(b"v"), &[]);
        let bytes = builder.build().unwrap();
        let like = *BatchRef::parse(&bytes, 0).unwrap().header();
        let empty = BatchBuilder::empty_batch(&like).unwrap();
        assert_eq!(empty.len(), RECORD_BATCH_OVERHEAD);
        let batch = BatchRef::parse(&empty, 0).unwrap();
        batch.ensure_valid().unwrap();
        let h = batch.header();
        assert_eq!((h.base_offset, h.last_offset), (Some(50), 51));
        assert_eq!(h.record_count, Some(0));
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (7, 2, 10)
        );
        assert!(h.is_transactional && !h.is_control);
        assert_eq!((h.base_timestamp_ms, h.max_timestamp_ms), (-1, 3_000));
        assert_eq!(h.partition_leader_epoch, 4);
        assert_eq!(batch.records(1 << 20).count(), 0);
    }
}
