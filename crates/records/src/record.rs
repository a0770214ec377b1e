//! One decoded record, and the v2 record decoder (`DefaultRecord`).

use bytes::Bytes;

use crate::varint::{take_varint, take_varlong};
use crate::{CorruptKind, RecordRef, TimestampType};

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

/// Decodes the v2 record starting at `data[*pos]`, advancing `*pos` past it; key, value and
/// headers borrow from `data`. Everything is checked: lengths against the record's declared
/// length, the declared length against `data`, header keys as UTF-8, the offset.
///
/// On error returns the offset inside `data` where the record starts.
#[inline(always)]
pub(crate) fn decode_v2_ref<'a>(
    data: &'a [u8],
    pos: &mut usize,
    ctx: &V2Context,
) -> Result<RecordRef<'a>, (usize, CorruptKind)> {
    let start = *pos;
    let mut rest = data.get(start..).unwrap_or_default();
    let available = rest.len();
    if let Some((record, used)) = decode_simple(rest, ctx) {
        *pos = start + used;
        return Ok(record);
    }
    let record = decode_framed(&mut rest, ctx).map_err(|kind| (start, kind))?;
    *pos = start + (available - rest.len());
    Ok(record)
}

/// The record at the front of `data` when it has the shape nearly every record has: length,
/// deltas and key and value lengths of one or two bytes each, no headers, and at least
/// [`SIMPLE_WINDOW`] bytes in `data` from its start; and how many bytes it takes. Checked as
/// [`decode_framed`] checks it, with fewer branches and no error to build: `None` for any
/// other record, valid or not, which the caller then decodes in full (and which reports the
/// error).
#[inline(always)]
pub(crate) fn decode_simple<'a>(data: &'a [u8], ctx: &V2Context) -> Option<(RecordRef<'a>, usize)> {
    // Every field up to the key bytes lies in the window (at most 2 + 1 + 2 + 2 + 2 bytes,
    // and the value length right after a null key), so reading them needs no bounds check.
    let window: &[u8; SIMPLE_WINDOW] = data.first_chunk()?;
    let mut at = 0;
    let length = usize::try_from(zigzag(window_small(window, &mut at)?)).ok()?;
    // The record ends at `end`: nothing below may read past it.
    let end = at + length;
    if end > data.len() {
        return None;
    }
    at += 1; // attributes: int8, unused.
    let timestamp_delta = i64::from(zigzag(window_small(window, &mut at)?));
    let offset_delta = i64::from(zigzag(window_small(window, &mut at)?));
    let (key, value) = match zigzag(window_small(window, &mut at)?) {
        // A null key: the value length (at most 2 + 1 + 2 + 2 + 1 bytes in) is in the
        // window too. Any byte it reads past the record's end makes the end check fail.
        -1 => {
            let value = match zigzag(window_small(window, &mut at)?) {
                -1 => None,
                n => {
                    let value = data.get(at..at + usize::try_from(n).ok()?)?;
                    at += value.len();
                    Some(value)
                }
            };
            // A header count of 0, and nothing after it.
            if at + 1 != end || data.get(at) != Some(&0) {
                return None;
            }
            (None, value)
        }
        n => {
            let key = data.get(at..at + usize::try_from(n).ok()?)?;
            at += key.len();
            let mut rest = data.get(at..end)?;
            let value = take_small_nullable(&mut rest)?;
            // A header count of 0, and nothing after it.
            let [0] = *rest else {
                return None;
            };
            (Some(key), value)
        }
    };
    let offset = ctx.base_offset.checked_add(offset_delta)?;
    let (timestamp_ms, timestamp_type) = if ctx.log_append_time {
        (ctx.max_timestamp_ms, TimestampType::LogAppendTime)
    } else {
        (
            ctx.base_timestamp_ms.wrapping_add(timestamp_delta),
            TimestampType::CreateTime,
        )
    };
    Some((
        RecordRef {
            offset,
            timestamp_ms,
            timestamp_type,
            key,
            value,
            headers: &[],
            header_count: 0,
        },
        end,
    ))
}

/// Bytes [`decode_simple`] needs from a record's start.
const SIMPLE_WINDOW: usize = 16;

/// An unsigned varint of one or two bytes at `window[*at]` (`*at` at most 12), advancing
/// `*at` past it; `None` for a longer one.
#[inline(always)]
fn window_small(window: &[u8; SIMPLE_WINDOW], at: &mut usize) -> Option<u32> {
    let b0 = window[*at & (SIMPLE_WINDOW - 1)];
    if b0 < 0x80 {
        *at += 1;
        return Some(u32::from(b0));
    }
    let b1 = window[(*at + 1) & (SIMPLE_WINDOW - 1)];
    if b1 < 0x80 {
        *at += 2;
        return Some(u32::from(b0 & 0x7f) | (u32::from(b1) << 7));
    }
    None
}

/// An unsigned varint of one or two bytes from the front of `*rest`; `None` for a longer one
/// (or too few bytes).
#[inline(always)]
fn take_small(rest: &mut &[u8]) -> Option<u32> {
    match **rest {
        [b0, ref tail @ ..] if b0 < 0x80 => {
            *rest = tail;
            Some(u32::from(b0))
        }
        [b0, b1, ref tail @ ..] if b1 < 0x80 => {
            *rest = tail;
            Some(u32::from(b0 & 0x7f) | (u32::from(b1) << 7))
        }
        _ => None,
    }
}

/// A nullable byte string whose length takes one or two bytes; `None` for anything else.
#[inline(always)]
fn take_small_nullable<'a>(rest: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    match zigzag(take_small(rest)?) {
        -1 => Some(None),
        n => {
            let (out, after) = rest.split_at_checked(usize::try_from(n).ok()?)?;
            *rest = after;
            Some(Some(out))
        }
    }
}

#[inline(always)]
fn zigzag(raw: u32) -> i32 {
    ((raw >> 1) as i32) ^ -((raw & 1) as i32)
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
    let record = decode_v2_ref(data, pos, ctx)?;
    // `slice_ref` needs a sub-slice of `data`, which every slice of `record` is.
    let share = |bytes: &[u8]| data.slice_ref(bytes);
    Ok(Record {
        offset: record.offset,
        timestamp_ms: Some(record.timestamp_ms),
        timestamp_type: Some(record.timestamp_type),
        key: record.key.map(share),
        value: record.value.map(share),
        headers: record
            .headers()
            .map(|(key, value)| Header {
                key: key.to_owned(),
                value: value.map(share),
            })
            .collect(),
    })
}

/// Reads one header from the front of `*rest`: the key (UTF-8, as Kafka requires) and the
/// value (`None` when null).
#[inline]
pub(crate) fn take_header<'a>(
    rest: &mut &'a [u8],
) -> Result<(&'a str, Option<&'a [u8]>), CorruptKind> {
    let key_length = take_varint(rest)?;
    if key_length < 0 {
        return Err(CorruptKind::InvalidLength {
            length: i64::from(key_length),
        });
    }
    let key = take(rest, key_length as usize)?;
    let key = std::str::from_utf8(key).map_err(|_| CorruptKind::InvalidHeaderKey)?;
    let value = take_nullable(rest)?;
    Ok((key, value))
}

/// The length varint, then the body it declares, from the front of `*rest`.
#[inline(always)]
fn decode_framed<'a>(rest: &mut &'a [u8], ctx: &V2Context) -> Result<RecordRef<'a>, CorruptKind> {
    let length = take_varint(rest)?;
    if length < 0 {
        return Err(CorruptKind::InvalidLength {
            length: i64::from(length),
        });
    }
    let (body, after) = rest
        .split_at_checked(length as usize)
        .ok_or(CorruptKind::Truncated)?;
    // Every field is read from the body only, so none can run into the next record.
    let record = decode_body(body, ctx)?;
    *rest = after;
    Ok(record)
}

/// Decodes a record body: attributes, timestampDelta, offsetDelta, key, value, headers.
#[inline(always)]
fn decode_body<'a>(body: &'a [u8], ctx: &V2Context) -> Result<RecordRef<'a>, CorruptKind> {
    // attributes: int8, unused.
    let [_attributes, ref fields @ ..] = *body else {
        return Err(CorruptKind::Truncated);
    };
    let mut rest = fields;
    let timestamp_delta = take_varlong(&mut rest)?;
    let offset_delta = take_varint(&mut rest)?;
    let key = take_nullable(&mut rest)?;
    let value = take_nullable(&mut rest)?;
    let header_count = take_varint(&mut rest)?;
    // Each header takes at least two bytes, so a count above the remaining bytes is corrupt
    // (this also stops a hostile count from reserving memory).
    if header_count < 0 || header_count as usize > rest.len() {
        return Err(CorruptKind::InvalidHeaderCount {
            count: header_count,
        });
    }
    let headers = rest;
    for _ in 0..header_count {
        take_header(&mut rest)?;
    }
    if !rest.is_empty() {
        return Err(CorruptKind::RecordLengthMismatch {
            declared: body.len() as i64,
            actual: (body.len() - rest.len()) as i64,
        });
    }
    let offset = ctx
        .base_offset
        .checked_add(i64::from(offset_delta))
        .ok_or(CorruptKind::OffsetOverflow)?;
    // Kafka adds with Java long arithmetic, which wraps.
    let (timestamp_ms, timestamp_type) = if ctx.log_append_time {
        (ctx.max_timestamp_ms, TimestampType::LogAppendTime)
    } else {
        (
            ctx.base_timestamp_ms.wrapping_add(timestamp_delta),
            TimestampType::CreateTime,
        )
    };
    Ok(RecordRef {
        offset,
        timestamp_ms,
        timestamp_type,
        key,
        value,
        headers,
        header_count: header_count as usize,
    })
}

#[inline(always)]
fn take_nullable<'a>(rest: &mut &'a [u8]) -> Result<Option<&'a [u8]>, CorruptKind> {
    match take_varint(rest)? {
        -1 => Ok(None),
        n if n < -1 => Err(CorruptKind::InvalidLength {
            length: i64::from(n),
        }),
        n => take(rest, n as usize).map(Some),
    }
}

#[inline(always)]
fn take<'a>(rest: &mut &'a [u8], len: usize) -> Result<&'a [u8], CorruptKind> {
    let (out, after) = rest.split_at_checked(len).ok_or(CorruptKind::Truncated)?;
    *rest = after;
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

    #[test]
    fn header_count_is_bounded_by_the_bytes_left() {
        // length 6: attributes, ts 0, offset 0, key null, value null, header count 1 with no
        // bytes left: the count is refused before any header is read.
        let over = [0x0c, 0, 0, 0, 1, 1, 2];
        let mut pos = 0;
        assert_eq!(
            decode_v2_ref(&over, &mut pos, &ctx()).unwrap_err(),
            (0, CorruptKind::InvalidHeaderCount { count: 1 })
        );
        // Count 1 with one byte left (a key length of 0, then no value): read, and truncated.
        let equal = [0x0e, 0, 0, 0, 1, 1, 2, 0];
        assert_eq!(
            decode_v2_ref(&equal, &mut pos, &ctx()).unwrap_err(),
            (0, CorruptKind::Truncated)
        );
        // A negative count.
        let negative = [0x0c, 0, 0, 0, 1, 1, 1];
        assert_eq!(
            decode_v2_ref(&negative, &mut pos, &ctx()).unwrap_err(),
            (0, CorruptKind::InvalidHeaderCount { count: -1 })
        );
        assert_eq!(pos, 0, "failed decodes do not advance");
        for data in [&over[..], &equal, &negative] {
            agree(data, &ctx()).unwrap();
        }
    }

    #[test]
    fn the_simple_shape_takes_the_fast_path_and_only_it() {
        // Two records, the second `delta` ms after the first; the second one's bytes.
        let second = |key: Option<&[u8]>, headers: &[(&str, Option<&[u8]>)], delta: i64| {
            let mut builder = crate::BatchBuilder::new(0);
            builder.append(283843, None, None, &[]);
            builder.append(283843 + delta, key, Some(&[7u8; 100]), headers);
            let data = builder.build().unwrap()[crate::layout::v2::RECORDS..].to_vec();
            let (_, used) = decode_simple(&data, &ctx()).unwrap();
            data[used..].to_vec()
        };
        for key in [None, Some(&b"k"[..])] {
            let data = second(key, &[], 70);
            let (record, used) = decode_simple(&data, &ctx()).unwrap();
            assert_eq!(used, data.len());
            assert_eq!((record.offset, record.timestamp_ms), (1, 283843 + 70));
            assert_eq!((record.key, record.value), (key, Some(&[7u8; 100][..])));
        }
        // Headers, a three-byte delta: the full decoder's job.
        assert!(decode_simple(&second(None, &[("h", None)], 0), &ctx()).is_none());
        assert!(decode_simple(&second(None, &[], 10_000), &ctx()).is_none());
    }

    /// The decoder as first written (position-based, every byte bounds-checked, varints by
    /// the plain loop), kept as the oracle for the fast one: the record's fields, or where
    /// and why it failed.
    mod oracle {
        use super::super::V2Context;
        use crate::CorruptKind;

        pub type Fields = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<Header>);
        pub type Header = (String, Option<Vec<u8>>);

        fn unsigned(data: &[u8], pos: &mut usize, max: usize) -> Result<u64, CorruptKind> {
            let mut value = 0u64;
            for i in 0..max {
                let byte = *data.get(*pos + i).ok_or(CorruptKind::Truncated)?;
                value |= u64::from(byte & 0x7f).wrapping_shl(7 * i as u32);
                if byte & 0x80 == 0 {
                    *pos += i + 1;
                    return Ok(value);
                }
            }
            Err(CorruptKind::InvalidVarint)
        }

        fn varint(data: &[u8], pos: &mut usize) -> Result<i32, CorruptKind> {
            let raw = unsigned(data, pos, 5)? as u32;
            Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
        }

        fn varlong(data: &[u8], pos: &mut usize) -> Result<i64, CorruptKind> {
            let raw = unsigned(data, pos, 10)?;
            Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
        }

        fn bytes(data: &[u8], pos: &mut usize, len: usize) -> Result<Vec<u8>, CorruptKind> {
            let end = pos
                .checked_add(len)
                .filter(|end| *end <= data.len())
                .ok_or(CorruptKind::Truncated)?;
            let out = data[*pos..end].to_vec();
            *pos = end;
            Ok(out)
        }

        fn nullable(data: &[u8], pos: &mut usize) -> Result<Option<Vec<u8>>, CorruptKind> {
            match varint(data, pos)? {
                -1 => Ok(None),
                n if n < -1 => Err(CorruptKind::InvalidLength {
                    length: i64::from(n),
                }),
                n => bytes(data, pos, n as usize).map(Some),
            }
        }

        fn body(body: &[u8], ctx: &V2Context) -> Result<Fields, CorruptKind> {
            if body.is_empty() {
                return Err(CorruptKind::Truncated);
            }
            let mut pos = 1;
            let timestamp_delta = varlong(body, &mut pos)?;
            let offset_delta = varint(body, &mut pos)?;
            let key = nullable(body, &mut pos)?;
            let value = nullable(body, &mut pos)?;
            let count = varint(body, &mut pos)?;
            if count < 0 || count as usize > body.len() - pos {
                return Err(CorruptKind::InvalidHeaderCount { count });
            }
            let mut headers = Vec::new();
            for _ in 0..count {
                let key_length = varint(body, &mut pos)?;
                if key_length < 0 {
                    return Err(CorruptKind::InvalidLength {
                        length: i64::from(key_length),
                    });
                }
                let key = String::from_utf8(bytes(body, &mut pos, key_length as usize)?)
                    .map_err(|_| CorruptKind::InvalidHeaderKey)?;
                headers.push((key, nullable(body, &mut pos)?));
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
            let timestamp_ms = if ctx.log_append_time {
                ctx.max_timestamp_ms
            } else {
                ctx.base_timestamp_ms.wrapping_add(timestamp_delta)
            };
            Ok((offset, timestamp_ms, key, value, headers))
        }

        pub fn decode(
            data: &[u8],
            pos: &mut usize,
            ctx: &V2Context,
        ) -> Result<Fields, (usize, CorruptKind)> {
            let start = *pos;
            let mut cursor = start;
            let length = varint(data, &mut cursor).map_err(|k| (start, k))?;
            if length < 0 {
                let length = i64::from(length);
                return Err((start, CorruptKind::InvalidLength { length }));
            }
            let end = cursor
                .checked_add(length as usize)
                .filter(|end| *end <= data.len())
                .ok_or((start, CorruptKind::Truncated))?;
            let fields = body(&data[cursor..end], ctx).map_err(|k| (start, k))?;
            *pos = end;
            Ok(fields)
        }
    }

    /// Decodes every record of `data` with both decoders until the first error, comparing
    /// fields, positions and errors; returns how many records both decoded.
    fn agree(data: &[u8], ctx: &V2Context) -> Result<usize, TestCaseError> {
        let (mut fast_pos, mut oracle_pos) = (0, 0);
        let mut decoded = 0;
        while oracle_pos < data.len() {
            let fast = decode_v2_ref(data, &mut fast_pos, ctx).map(|r| {
                let headers: Vec<_> = r
                    .headers()
                    .map(|(k, v)| (k.to_owned(), v.map(<[u8]>::to_vec)))
                    .collect();
                prop_assert_eq!(headers.len(), r.header_count());
                Ok((
                    r.offset,
                    r.timestamp_ms,
                    r.key.map(<[u8]>::to_vec),
                    r.value.map(<[u8]>::to_vec),
                    headers,
                ))
            });
            let oracle = oracle::decode(data, &mut oracle_pos, ctx);
            prop_assert_eq!(fast_pos, oracle_pos);
            match (fast, oracle) {
                (Ok(fast), Ok(oracle)) => prop_assert_eq!(fast?, oracle),
                (Err(fast), Err(oracle)) => {
                    prop_assert_eq!(fast, oracle);
                    break;
                }
                (fast, oracle) => prop_assert!(false, "fast {fast:?} vs oracle {oracle:?}"),
            }
            decoded += 1;
        }
        Ok(decoded)
    }

    type RecordSpec = (
        i64,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<(String, Option<Vec<u8>>)>,
    );

    fn record_spec() -> impl Strategy<Value = RecordSpec> {
        // Sizes around the one- and two-byte varint boundaries (64 and 8192 zigzagged).
        let len = prop_oneof![0usize..4, 60usize..70, Just(200), 8185usize..8200];
        let payload = proptest::option::of(len.prop_map(|n| vec![0xa5u8; n]));
        let header = (
            "[a-zé]{0,3}",
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..3)),
        );
        (
            prop_oneof![-70i64..70, -9000i64..9000, any::<i32>().prop_map(i64::from)],
            payload.clone(),
            payload,
            proptest::collection::vec(header, 0..3),
        )
    }

    fn records_bytes(specs: &[RecordSpec]) -> Vec<u8> {
        let mut builder = crate::BatchBuilder::new(0);
        for (delta, key, value, headers) in specs {
            let headers: Vec<_> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_deref()))
                .collect();
            builder.append(
                1_700_000_000_000 + delta,
                key.as_deref(),
                value.as_deref(),
                &headers,
            );
        }
        builder.build().unwrap()[crate::layout::v2::RECORDS..].to_vec()
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn fast_decoder_agrees_with_the_oracle(
            specs in proptest::collection::vec(record_spec(), 1..6),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            log_append_time in any::<bool>(),
            base_offset in prop_oneof![Just(0i64), Just(i64::MAX - 3), any::<i64>()],
        ) {
            let mut data = records_bytes(&specs);
            let clean = edits.is_empty();
            for (at, byte) in edits {
                let at = at.index(data.len());
                data[at] = byte;
            }
            let ctx = V2Context { base_offset, log_append_time, ..ctx() };
            let decoded = agree(&data, &ctx)?;
            if clean && base_offset == 0 {
                prop_assert_eq!(decoded, specs.len());
            }
        }

        #[test]
        fn fast_decoder_agrees_on_any_bytes(data in proptest::collection::vec(
            prop_oneof![Just(0x80u8), Just(0xff), Just(0x01), Just(0), any::<u8>()], 0..64,
        )) {
            agree(&data, &ctx())?;
        }
    }
}
