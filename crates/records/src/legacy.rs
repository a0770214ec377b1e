//! Legacy v0/v1 messages (`LegacyRecord`), read-only.
//!
//! A legacy "batch" is one shallow message. If its codec is not none, its value is a
//! compressed message set of inner messages (spec 4.4): v0 inner offsets are absolute, v1 inner
//! offsets are relative to the last one, which the wrapper's own offset names.

use bytes::Bytes;

use crate::layout::{self, legacy};
use crate::{
    BatchHeader, Compression, CorruptKind, Error, LOG_OVERHEAD, RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1, Record, Result, TimestampType, codec,
};

/// One parsed legacy message; key and value are ranges inside the message bytes.
#[derive(Debug, Clone)]
struct Message {
    offset: i64,
    magic: u8,
    attributes: u8,
    timestamp_ms: i64,
    key: Option<std::ops::Range<usize>>,
    value: Option<std::ops::Range<usize>>,
}

impl Message {
    fn compression(&self) -> Option<Compression> {
        Compression::from_id(self.attributes & legacy::COMPRESSION_MASK)
    }

    fn timestamp_type(&self) -> Option<TimestampType> {
        match self.magic {
            0 => None,
            _ if self.attributes & legacy::TIMESTAMP_TYPE_BIT != 0 => {
                Some(TimestampType::LogAppendTime)
            }
            _ => Some(TimestampType::CreateTime),
        }
    }
}

/// Decodes the records of the legacy message `bytes` (exactly one whole message).
pub(crate) fn records(
    header: &BatchHeader,
    bytes: &[u8],
    owner: Option<&Bytes>,
    max_decompressed_bytes: usize,
) -> Result<Vec<Record>> {
    let position = header.position;
    let corrupt = |kind| Error::corrupt(position, kind);
    let message = parse_message(bytes).map_err(corrupt)?;
    let slice = |range: &std::ops::Range<usize>| match owner {
        Some(owner) => owner.slice(range.clone()),
        None => Bytes::copy_from_slice(&bytes[range.clone()]),
    };
    if header.compression == Compression::None {
        return Ok(vec![Record {
            offset: message.offset,
            timestamp_ms: (message.magic > 0).then_some(message.timestamp_ms),
            timestamp_type: message.timestamp_type(),
            key: message.key.as_ref().map(slice),
            value: message.value.as_ref().map(slice),
            headers: Vec::new(),
        }]);
    }
    let Some(value) = &message.value else {
        return Err(corrupt(CorruptKind::InvalidWrapper {
            reason: "compressed wrapper has a null value",
        }));
    };
    let kafka08_lz4 = message.magic == 0;
    let inner = codec::decompress(
        header.compression,
        &bytes[value.clone()],
        max_decompressed_bytes,
        kafka08_lz4,
    )
    .map_err(corrupt)?;
    inner_records(&message, Bytes::from(inner)).map_err(corrupt)
}

/// Parses and checks (CRC included) the inner messages of a decompressed wrapper value.
fn inner_records(wrapper: &Message, data: Bytes) -> Result<Vec<Record>, CorruptKind> {
    let mut inner: Vec<(Message, usize)> = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < LOG_OVERHEAD {
            return Err(CorruptKind::Truncated);
        }
        let size = layout::read_i32(rest, 8);
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Err(CorruptKind::SizeBelowMinimum {
                size,
                minimum: RECORD_OVERHEAD_V0 as i32,
            });
        }
        let total = LOG_OVERHEAD + size as usize;
        let bytes = rest.get(..total).ok_or(CorruptKind::Truncated)?;
        let message = parse_message(bytes)?;
        let stored = layout::read_u32(bytes, legacy::CRC);
        let computed = crc32fast::hash(&bytes[legacy::MAGIC..]);
        if stored != computed {
            return Err(CorruptKind::CrcMismatch { stored, computed });
        }
        if message.compression() != Some(Compression::None) {
            return Err(CorruptKind::InvalidWrapper {
                reason: "inner message is compressed",
            });
        }
        inner.push((message, pos));
        pos += total;
    }
    let Some((last, _)) = inner.last() else {
        return Err(CorruptKind::InvalidWrapper {
            reason: "compressed wrapper holds no inner messages",
        });
    };
    // v1: absolute = wrapper offset - last inner relative offset + inner relative offset; a
    // wrapper offset of 0 (written by some librdkafka versions) means base 0. v0: absolute.
    let base = if wrapper.magic == 0 || wrapper.offset == 0 {
        0
    } else {
        if wrapper.offset < last.offset {
            return Err(CorruptKind::InvalidWrapper {
                reason: "wrapper offset is below the last inner offset",
            });
        }
        wrapper.offset - last.offset
    };
    let wrapper_type = wrapper.timestamp_type();
    inner
        .into_iter()
        .map(|(message, start)| {
            let offset = base
                .checked_add(message.offset)
                .ok_or(CorruptKind::OffsetOverflow)?;
            let (timestamp_ms, timestamp_type) = if message.magic == 0 {
                (None, None)
            } else if wrapper_type == Some(TimestampType::LogAppendTime) {
                (Some(wrapper.timestamp_ms), wrapper_type)
            } else {
                (
                    Some(message.timestamp_ms),
                    wrapper_type.or(message.timestamp_type()),
                )
            };
            let slice = |r: &std::ops::Range<usize>| data.slice(start + r.start..start + r.end);
            Ok(Record {
                offset,
                timestamp_ms,
                timestamp_type,
                key: message.key.as_ref().map(slice),
                value: message.value.as_ref().map(slice),
                headers: Vec::new(),
            })
        })
        .collect()
}

/// Parses one whole legacy message (`bytes` is exactly `12 + size` bytes). Key and value must
/// fill the message exactly.
fn parse_message(bytes: &[u8]) -> Result<Message, CorruptKind> {
    let magic = *bytes.get(legacy::MAGIC).ok_or(CorruptKind::Truncated)?;
    let (minimum, key_length_at) = match magic {
        0 => (RECORD_OVERHEAD_V0, legacy::KEY_LENGTH_V0),
        1 => (RECORD_OVERHEAD_V1, legacy::KEY_LENGTH_V1),
        _ => return Err(CorruptKind::BadMagic { magic }),
    };
    if bytes.len() < LOG_OVERHEAD + minimum {
        return Err(CorruptKind::SizeBelowMinimum {
            size: (bytes.len() - LOG_OVERHEAD.min(bytes.len())) as i32,
            minimum: minimum as i32,
        });
    }
    let attributes = bytes[legacy::ATTRIBUTES];
    if Compression::from_id(attributes & legacy::COMPRESSION_MASK)
        .is_none_or(|c| c == Compression::Zstd)
    {
        return Err(CorruptKind::UnknownCompression {
            codec: attributes & legacy::COMPRESSION_MASK,
        });
    }
    let mut pos = key_length_at;
    let key = read_bytes(bytes, &mut pos)?;
    let value = read_bytes(bytes, &mut pos)?;
    if pos != bytes.len() {
        return Err(CorruptKind::RecordLengthMismatch {
            declared: (bytes.len() - LOG_OVERHEAD) as i64,
            actual: (pos - LOG_OVERHEAD) as i64,
        });
    }
    Ok(Message {
        offset: layout::read_i64(bytes, 0),
        magic,
        attributes,
        timestamp_ms: if magic == 0 {
            -1
        } else {
            layout::read_i64(bytes, legacy::TIMESTAMP)
        },
        key,
        value,
    })
}

fn read_bytes(
    bytes: &[u8],
    pos: &mut usize,
) -> Result<Option<std::ops::Range<usize>>, CorruptKind> {
    if bytes.len() < *pos + 4 {
        return Err(CorruptKind::Truncated);
    }
    let length = layout::read_i32(bytes, *pos);
    *pos += 4;
    match length {
        -1 => Ok(None),
        n if n < -1 => Err(CorruptKind::InvalidLength {
            length: i64::from(n),
        }),
        n => {
            let start = *pos;
            let end = start
                .checked_add(n as usize)
                .filter(|end| *end <= bytes.len())
                .ok_or(CorruptKind::Truncated)?;
            *pos = end;
            Ok(Some(start..end))
        }
    }
}

/// A test-only writer of legacy messages (Kafka's `LegacyRecord.write`), to produce the spec's
/// v0/v1 checksums and compressed wrappers. Not public: this crate never writes legacy data.
#[cfg(test)]
pub(crate) mod writer {
    use crate::{Compression, codec};

    /// One legacy message with `offset`, checksummed.
    pub fn message(
        magic: u8,
        offset: i64,
        attributes: u8,
        timestamp_ms: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut body = vec![magic, attributes];
        if magic == 1 {
            body.extend_from_slice(&timestamp_ms.to_be_bytes());
        }
        for field in [key, value] {
            match field {
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    body.extend_from_slice(b);
                }
            }
        }
        let crc = crc32fast::hash(&body);
        let mut out = Vec::new();
        out.extend_from_slice(&offset.to_be_bytes());
        out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        out.extend_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// A compressed wrapper around `inner` (already-written messages), with `offset` and the
    /// wrapper's timestamp (type bit in `timestamp_attr`). For magic 0 + lz4 it reproduces
    /// Kafka 0.8's broken frame header checksum.
    pub fn wrapper(
        magic: u8,
        offset: i64,
        codec: Compression,
        timestamp_attr: u8,
        timestamp_ms: i64,
        inner: &[Vec<u8>],
    ) -> Vec<u8> {
        let set: Vec<u8> = inner.concat();
        let mut packed = codec::compress(codec, &set).unwrap();
        if magic == 0 && codec == Compression::Lz4 {
            codec::break_lz4_header_checksum(&mut packed);
        }
        message(
            magic,
            offset,
            codec.id() | timestamp_attr,
            timestamp_ms,
            None,
            Some(&packed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::writer::{message, wrapper};
    use crate::{BatchRef, Compression, CorruptKind, Result, TimestampType};

    fn decode(bytes: &[u8]) -> Result<Vec<crate::Record>> {
        let batch = BatchRef::parse(bytes, 0)?;
        batch.ensure_valid()?;
        batch.records(1 << 20).collect()
    }

    #[test]
    fn kafka_checksums_for_v1_and_v0() {
        // Spec 4.6 / MemoryRecordsTest.testChecksum, first message (ts=283843, key1, value1).
        let v1 = message(1, 0, 0, 283843, Some(b"key1"), Some(b"value1"));
        let v0 = message(0, 0, 0, 283843, Some(b"key1"), Some(b"value1"));
        let h1 = *BatchRef::parse(&v1, 0).unwrap().header();
        let h0 = *BatchRef::parse(&v0, 0).unwrap().header();
        assert_eq!(h1.crc, 109425508);
        assert_eq!(h0.crc, 1978725405);
        assert_eq!(h1.max_timestamp_ms, 283843);
        assert_eq!(h0.max_timestamp_ms, -1);
        assert_eq!(h0.timestamp_type, None);
        let r1 = decode(&v1).unwrap();
        assert_eq!(r1[0].timestamp_ms, Some(283843));
        assert_eq!(r1[0].timestamp_type, Some(TimestampType::CreateTime));
        assert_eq!(r1[0].key.as_deref(), Some(&b"key1"[..]));
        let r0 = decode(&v0).unwrap();
        assert_eq!(r0[0].timestamp_ms, None);
        assert_eq!(r0[0].value.as_deref(), Some(&b"value1"[..]));
    }

    #[test]
    fn v1_wrapper_relative_offsets_and_log_append_time() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let inner: Vec<_> = (0..3)
                .map(|i| message(1, i, 0, 100 + i, None, Some(format!("v{i}").as_bytes())))
                .collect();
            let create = wrapper(1, 41, codec, 0, 102, &inner);
            let records = decode(&create).unwrap();
            let offsets: Vec<_> = records.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, [39, 40, 41], "{codec}");
            assert_eq!(records[0].timestamp_ms, Some(100));
            assert_eq!(records[2].value.as_deref(), Some(&b"v2"[..]));
            let header = *BatchRef::parse(&create, 0).unwrap().header();
            assert_eq!(header.base_offset, None);
            assert_eq!(header.record_count, None);
            assert_eq!(header.last_offset, 41);

            let append = wrapper(1, 41, codec, 0x08, 999, &inner);
            let records = decode(&append).unwrap();
            assert!(records.iter().all(|r| r.timestamp_ms == Some(999)
                && r.timestamp_type == Some(TimestampType::LogAppendTime)));

            let zero = wrapper(1, 0, codec, 0, 0, &inner);
            let offsets: Vec<_> = decode(&zero).unwrap().iter().map(|r| r.offset).collect();
            assert_eq!(offsets, [0, 1, 2]);
        }
    }

    #[test]
    fn v0_wrapper_absolute_offsets_and_kafka08_lz4() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let inner: Vec<_> = (10..13)
                .map(|i| message(0, i, 0, 0, Some(b"k"), Some(b"v")))
                .collect();
            let bytes = wrapper(0, 12, codec, 0, 0, &inner);
            let offsets: Vec<_> = decode(&bytes).unwrap().iter().map(|r| r.offset).collect();
            assert_eq!(offsets, [10, 11, 12], "{codec}");
        }
    }

    #[test]
    fn malformed_wrappers_are_corrupt() {
        let empty = wrapper(1, 5, Compression::Gzip, 0, 0, &[]);
        assert!(matches!(
            decode(&empty).unwrap_err().corrupt_kind(),
            Some(CorruptKind::InvalidWrapper { .. })
        ));
        let inner = vec![message(1, 0, 0, 0, None, Some(b"x"))];
        let nested = wrapper(
            1,
            5,
            Compression::Gzip,
            0,
            0,
            &[wrapper(1, 0, Compression::Gzip, 0, 0, &inner)],
        );
        assert!(decode(&nested).is_err());
        let mut bad_inner = message(1, 0, 0, 0, None, Some(b"x"));
        let last = bad_inner.len() - 1;
        bad_inner[last] ^= 1;
        let wrapped = wrapper(1, 5, Compression::Snappy, 0, 0, &[bad_inner]);
        assert!(matches!(
            decode(&wrapped).unwrap_err().corrupt_kind(),
            Some(CorruptKind::CrcMismatch { .. })
        ));
        let null_value = message(1, 0, Compression::Gzip.id(), 0, None, None);
        assert!(decode(&null_value).is_err());
    }
}
