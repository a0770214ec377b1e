//! One decoded record, and the v2 record decoder (`DefaultRecord`).

use std::ops::Range;

use bytes::Bytes;

use crate::varint::{read_varint, read_varlong};
use crate::{CorruptKind, TimestampType};

/// One record, decoded from a batch of any magic.
///
/// Key and value share the batch's (or the decompressed records') buffer when they can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Absolute offset of the record.
    pub offset: i64,
    /// v2 and v1: the record's timestamp (with LogAppendTime: the batch / wrapper timestamp);
    /// `None` for v0, which has no timestamps.
    pub timestamp_ms: Option<i64>,
    /// What the timestamp means; `None` for v0.
    pub timestamp_type: Option<TimestampType>,
    /// `None` for a null key.
    pub key: Option<Bytes>,
    /// `None` for a null value (a tombstone in a compacted topic).
    pub value: Option<Bytes>,
    /// v2 record headers, in stored order (duplicates allowed). Always empty for v0/v1.
    pub headers: Vec<Header>,
}

/// One v2 record header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header key; Kafka requires UTF-8, so a key that is not is corruption.
    pub key: String,
    /// `None` for a null value.
    pub value: Option<Bytes>,
}

/// Batch fields every v2 record needs to become a [`Record`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct V2Context {
    pub base_offset: i64,
    pub base_timestamp_ms: i64,
    pub max_timestamp_ms: i64,
    pub log_append_time: bool,
}

/// One v2 record's fields as positions in the data it was decoded from: everything checked
/// (lengths, header keys, offsets), nothing copied or shared yet.
#[derive(Debug, Clone)]
pub(crate) struct RawRecord {
    pub offset: i64,
    pub timestamp_ms: i64,
    pub timestamp_type: TimestampType,
    pub key: Option<Range<usize>>,
    pub value: Option<Range<usize>>,
    /// The headers' bytes (already checked) and how many headers they hold.
    pub headers: Range<usize>,
    pub header_count: usize,
}

/// Decodes the v2 record starting at `data[*pos]` into positions, advancing `*pos` past it.
///
/// On error returns the offset inside `data` where the record starts.
pub(crate) fn decode_v2_raw(
    data: &[u8],
    pos: &mut usize,
    ctx: &V2Context,
) -> Result<RawRecord, (usize, CorruptKind)> {
    let start = *pos;
    let at = |kind| (start, kind);
    let mut cursor = start;
    let length = read_varint(data, &mut cursor).map_err(at)?;
    if length < 0 {
        return Err(at(CorruptKind::InvalidLength {
            length: i64::from(length),
        }));
    }
    let body_start = cursor;
    let body_end = body_start
        .checked_add(length as usize)
        .filter(|end| *end <= data.len())
        .ok_or(at(CorruptKind::Truncated))?;
    // Every field is read from the body only, so none can run into the next record.
    let mut record = decode_body(&data[body_start..body_end], ctx).map_err(at)?;
    let shift = |r: Range<usize>| r.start + body_start..r.end + body_start;
    record.key = record.key.map(shift);
    record.value = record.value.map(shift);
    record.headers = shift(record.headers);
    *pos = body_end;
    Ok(record)
}

/// Decodes the v2 record starting at `data[*pos]`, advancing `*pos` past it. Key, value and
/// header values share `data`'s buffer.
///
/// On error returns the offset inside `data` where the record starts.
pub(crate) fn decode_v2_record(
    data: &Bytes,
    pos: &mut usize,
    ctx: &V2Context,
) -> Result<Record, (usize, CorruptKind)> {
    let start = *pos;
    let raw = decode_v2_raw(data, pos, ctx)?;
    let headers = owned_headers(data, &raw).map_err(|kind| (start, kind))?;
    Ok(Record {
        offset: raw.offset,
        timestamp_ms: Some(raw.timestamp_ms),
        timestamp_type: Some(raw.timestamp_type),
        key: raw.key.map(|r| data.slice(r)),
        value: raw.value.map(|r| data.slice(r)),
        headers,
    })
}

/// The headers of `raw` (checked by `decode_v2_raw`) as owned values.
fn owned_headers(data: &Bytes, raw: &RawRecord) -> Result<Vec<Header>, CorruptKind> {
    let mut headers = Vec::with_capacity(raw.header_count);
    let mut pos = raw.headers.start;
    let end = raw.headers.end;
    for _ in 0..raw.header_count {
        let (key, value) = next_header(&data[..end], &mut pos)?;
        let key = std::str::from_utf8(&data[key])
            .map_err(|_| CorruptKind::InvalidHeaderKey)?
            .to_owned();
        headers.push(Header {
            key,
            value: value.map(|r| data.slice(r)),
        });
    }
    Ok(headers)
}

/// Reads one header at `data[*pos]`: the key's range (checked to be UTF-8, as Kafka
/// requires) and the value's range.
pub(crate) fn next_header(
    data: &[u8],
    pos: &mut usize,
) -> Result<(Range<usize>, Option<Range<usize>>), CorruptKind> {
    let key_length = read_varint(data, pos)?;
    if key_length < 0 {
        return Err(CorruptKind::InvalidLength {
            length: i64::from(key_length),
        });
    }
    let key = take(data, pos, key_length as usize)?;
    std::str::from_utf8(&data[key.clone()]).map_err(|_| CorruptKind::InvalidHeaderKey)?;
    let value = read_nullable(data, pos)?;
    Ok((key, value))
}

/// Decodes a record body (positions relative to `body`).
fn decode_body(body: &[u8], ctx: &V2Context) -> Result<RawRecord, CorruptKind> {
    let mut pos = 0usize;
    // attributes: int8, unused.
    if body.is_empty() {
        return Err(CorruptKind::Truncated);
    }
    pos += 1;
    let timestamp_delta = read_varlong(body, &mut pos)?;
    let offset_delta = read_varint(body, &mut pos)?;
    let key = read_nullable(body, &mut pos)?;
    let value = read_nullable(body, &mut pos)?;
    let header_count = read_varint(body, &mut pos)?;
    // Each header takes at least two bytes, so a count above the remaining bytes is corrupt
    // (this also stops a hostile count from reserving memory).
    if header_count < 0 || header_count as usize > body.len() - pos {
        return Err(CorruptKind::InvalidHeaderCount {
            count: header_count,
        });
    }
    let headers_start = pos;
    for _ in 0..header_count {
        next_header(body, &mut pos)?;
    }
    if pos != body.len() {
        return Err(CorruptKind::RecordLengthMismatch {
            declared: body.len() as i64,
            actual: pos as i64,
        });
    }
    let offset = ctx
        .base_offset
        .checked_add(i64::from(offset_delta))
        .ok_or(CorruptKind::OffsetOverflow)?;
    // Kafka adds with Java long arithmetic, which wraps.
    let timestamp_ms = if ctx.log_append_time {
        ctx.max_timestamp_ms
    } else {
        ctx.base_timestamp_ms.wrapping_add(timestamp_delta)
    };
    let timestamp_type = if ctx.log_append_time {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    Ok(RawRecord {
        offset,
        timestamp_ms,
        timestamp_type,
        key,
        value,
        headers: headers_start..pos,
        header_count: header_count as usize,
    })
}

fn read_nullable(body: &[u8], pos: &mut usize) -> Result<Option<Range<usize>>, CorruptKind> {
    let length = read_varint(body, pos)?;
    match length {
        -1 => Ok(None),
        n if n < -1 => Err(CorruptKind::InvalidLength {
            length: i64::from(n),
        }),
        n => take(body, pos, n as usize).map(Some),
    }
}

fn take(body: &[u8], pos: &mut usize, len: usize) -> Result<Range<usize>, CorruptKind> {
    let end = pos
        .checked_add(len)
        .filter(|end| *end <= body.len())
        .ok_or(CorruptKind::Truncated)?;
    let out = *pos..end;
    *pos = end;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::SPEC_V2_BATCH;

    fn ctx() -> V2Context {
        V2Context {
            base_offset: 0,
            base_timestamp_ms: 283843,
            max_timestamp_ms: 283843,
            log_append_time: false,
        }
    }

    #[test]
    fn decodes_the_spec_records() {
        let data = Bytes::copy_from_slice(&SPEC_V2_BATCH[61..]);
        let mut pos = 0;
        let first = decode_v2_record(&data, &mut pos, &ctx()).unwrap();
        assert_eq!(first.offset, 0);
        assert_eq!(first.timestamp_ms, Some(283843));
        assert_eq!(first.key.as_deref(), Some(&b"key1"[..]));
        assert_eq!(first.value.as_deref(), Some(&b"value1"[..]));
        let second = decode_v2_record(&data, &mut pos, &ctx()).unwrap();
        assert_eq!(second.offset, 1);
        assert_eq!(second.timestamp_ms, Some(1234));
        assert_eq!(second.key.as_deref(), Some(&b"key2"[..]));
        assert_eq!(pos, data.len());
    }

    #[test]
    fn log_append_time_reads_the_batch_max_timestamp() {
        let data = Bytes::copy_from_slice(&SPEC_V2_BATCH[61..]);
        let mut pos = 0;
        let ctx = V2Context {
            log_append_time: true,
            max_timestamp_ms: 99,
            ..ctx()
        };
        let first = decode_v2_record(&data, &mut pos, &ctx).unwrap();
        assert_eq!(first.timestamp_ms, Some(99));
        assert_eq!(first.timestamp_type, Some(TimestampType::LogAppendTime));
    }

    #[test]
    fn length_mismatch_and_bad_header_key() {
        // length 9: attributes, ts 0, offset 0, key null, value null, 1 header "\xff" -> null.
        let bad_key = Bytes::from_static(&[0x12, 0, 0, 0, 1, 1, 2, 2, 0xff, 1]);
        let mut pos = 0;
        assert_eq!(
            decode_v2_record(&bad_key, &mut pos, &ctx()).unwrap_err(),
            (0, CorruptKind::InvalidHeaderKey)
        );
        // Declared length one longer than the fields use.
        let long = Bytes::from_static(&[0x0e, 0, 0, 0, 1, 1, 0, 0]);
        assert_eq!(
            decode_v2_record(&long, &mut pos, &ctx()).unwrap_err().1,
            CorruptKind::RecordLengthMismatch {
                declared: 7,
                actual: 6
            }
        );
        let short = Bytes::from_static(&[0x0e, 0, 0]);
        assert_eq!(
            decode_v2_record(&short, &mut pos, &ctx()).unwrap_err().1,
            CorruptKind::Truncated
        );
    }
}
