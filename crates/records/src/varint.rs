//! Kafka's varint / varlong: ZigZag, then unsigned LEB128 (`ByteUtils`).
//!
//! A varint takes at most 5 bytes and a varlong at most 10; a longer one is corrupt
//! ("varint is too long" in Kafka). As in Kafka, bits shifted past the width are dropped.

use crate::CorruptKind;

/// Largest encoded size of a varint (i32).
pub(crate) const MAX_VARINT_LEN: usize = 5;
/// Largest encoded size of a varlong (i64).
pub(crate) const MAX_VARLONG_LEN: usize = 10;

/// Reads a zigzag varint from the front of `*rest`, advancing it past the varint (left as
/// it was on error).
#[inline(always)]
pub(crate) fn take_varint(rest: &mut &[u8]) -> Result<i32, CorruptKind> {
    let raw = take_unsigned(rest, MAX_VARINT_LEN)? as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varlong from the front of `*rest`, advancing it past the varlong (left as
/// it was on error).
#[inline(always)]
pub(crate) fn take_varlong(rest: &mut &[u8]) -> Result<i64, CorruptKind> {
    let raw = take_unsigned(rest, MAX_VARLONG_LEN)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Unsigned LEB128 of at most `max_len` (>= 2) bytes. One- and two-byte values (below 128
/// and 16384: most lengths, deltas and counts of a record) are read inline; longer ones by
/// the loop.
#[inline(always)]
fn take_unsigned(rest: &mut &[u8], max_len: usize) -> Result<u64, CorruptKind> {
    let bytes: &[u8] = rest;
    match bytes {
        [b0, tail @ ..] if *b0 < 0x80 => {
            *rest = tail;
            Ok(u64::from(*b0))
        }
        [b0, b1, tail @ ..] if *b1 < 0x80 => {
            *rest = tail;
            Ok(u64::from(b0 & 0x7f) | (u64::from(*b1) << 7))
        }
        _ => take_unsigned_loop(rest, max_len),
    }
}

fn take_unsigned_loop(rest: &mut &[u8], max_len: usize) -> Result<u64, CorruptKind> {
    let mut value: u64 = 0;
    for i in 0..max_len {
        let byte = *rest.get(i).ok_or(CorruptKind::Truncated)?;
        value |= u64::from(byte & 0x7f).wrapping_shl(7 * i as u32);
        if byte & 0x80 == 0 {
            *rest = &rest[i + 1..];
            return Ok(value);
        }
    }
    Err(CorruptKind::InvalidVarint)
}

/// Appends `value` as a zigzag varint.
pub(crate) fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, ((value << 1) ^ (value >> 31)) as u32 as u64);
}

/// Appends `value` as a zigzag varlong.
pub(crate) fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut raw: u64) {
    while raw >= 0x80 {
        out.push((raw as u8) | 0x80);
        raw >>= 7;
    }
    out.push(raw as u8);
}

/// Encoded size of `value` as a zigzag varint.
pub(crate) fn varint_len(value: i32) -> usize {
    unsigned_len(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// Encoded size of `value` as a zigzag varlong.
pub(crate) fn varlong_len(value: i64) -> usize {
    unsigned_len(((value << 1) ^ (value >> 63)) as u64)
}

fn unsigned_len(raw: u64) -> usize {
    let bits = 64 - (raw | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_vector_timestamp_delta() {
        // Spec 4.6: timestampDelta -282609 encodes as e1 bf 22.
        let mut out = Vec::new();
        write_varlong(&mut out, -282609);
        assert_eq!(out, [0xe1, 0xbf, 0x22]);
        let mut rest = &out[..];
        assert_eq!(take_varlong(&mut rest), Ok(-282609));
        assert!(rest.is_empty());
    }

    #[test]
    fn small_values() {
        for (value, bytes) in [
            (0, &[0x00][..]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-64, &[0x7f]),
        ] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, bytes, "{value}");
            assert_eq!(varint_len(value), bytes.len());
        }
    }

    #[test]
    fn too_long_and_truncated() {
        for (bytes, kind) in [
            (&[0xff; 6][..], CorruptKind::InvalidVarint),
            (&[0xff; 5], CorruptKind::InvalidVarint),
            (&[0xff; 3], CorruptKind::Truncated),
            (&[0xff; 1], CorruptKind::Truncated),
            (&[], CorruptKind::Truncated),
        ] {
            let mut rest = bytes;
            assert_eq!(take_varint(&mut rest), Err(kind.clone()), "{bytes:?}");
            assert_eq!(rest, bytes, "failed reads do not advance");
        }
        let mut rest = &[0x80; 11][..];
        assert_eq!(take_varlong(&mut rest), Err(CorruptKind::InvalidVarint));
        let mut rest = &[0x80; 9][..];
        assert_eq!(take_varlong(&mut rest), Err(CorruptKind::Truncated));
        assert_eq!(rest.len(), 9, "failed reads do not advance");
    }

    /// Kafka's `ByteUtils.readUnsignedVarint` as a byte-at-a-time oracle: the value and the
    /// bytes it used, or the error.
    fn oracle(bytes: &[u8], max_len: usize) -> Result<(u64, usize), CorruptKind> {
        let mut value = 0u64;
        for i in 0..max_len {
            let byte = *bytes.get(i).ok_or(CorruptKind::Truncated)?;
            value |= u64::from(byte & 0x7f).wrapping_shl(7 * i as u32);
            if byte & 0x80 == 0 {
                return Ok((value, i + 1));
            }
        }
        Err(CorruptKind::InvalidVarint)
    }

    proptest! {
        #[test]
        fn varint_round_trip(value: i32) {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_len(value));
            prop_assert!(out.len() <= MAX_VARINT_LEN);
            let mut rest = &out[..];
            prop_assert_eq!(take_varint(&mut rest), Ok(value));
            prop_assert!(rest.is_empty());
        }

        #[test]
        fn varlong_round_trip(value: i64) {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            prop_assert!(out.len() <= MAX_VARLONG_LEN);
            prop_assert_eq!(out.len(), varlong_len(value));
            let mut rest = &out[..];
            prop_assert_eq!(take_varlong(&mut rest), Ok(value));
            prop_assert!(rest.is_empty());
        }

        /// Any bytes (short ones, bytes with the continuation bit everywhere, overlong
        /// encodings) read as the oracle reads them, fast paths included.
        #[test]
        fn reads_any_bytes_as_the_oracle(bytes in proptest::collection::vec(
            prop_oneof![Just(0x80u8), Just(0xff), Just(0x7f), Just(0), any::<u8>()], 0..12,
        )) {
            for (max_len, wide) in [(MAX_VARINT_LEN, false), (MAX_VARLONG_LEN, true)] {
                let mut rest = &bytes[..];
                let read = if wide {
                    take_varlong(&mut rest).map(|v| ((v << 1) ^ (v >> 63)) as u64)
                } else {
                    take_varint(&mut rest).map(|v| ((v << 1) ^ (v >> 31)) as u32 as u64)
                };
                match oracle(&bytes, max_len) {
                    Ok((raw, used)) => {
                        let raw = if wide { raw } else { u64::from(raw as u32) };
                        prop_assert_eq!(read, Ok(raw));
                        prop_assert_eq!(rest.len(), bytes.len() - used);
                    }
                    Err(kind) => {
                        prop_assert_eq!(read, Err(kind));
                        prop_assert_eq!(rest.len(), bytes.len());
                    }
                }
            }
        }
    }
}
