//! Kafka's varint / varlong: ZigZag, then unsigned LEB128 (`ByteUtils`).
//!
//! A varint takes at most 5 bytes and a varlong at most 10; a longer one is corrupt
//! ("varint is too long" in Kafka). As in Kafka, bits shifted past the width are dropped.

use crate::CorruptKind;

/// Largest encoded size of a varint (i32).
pub(crate) const MAX_VARINT_LEN: usize = 5;
/// Largest encoded size of a varlong (i64).
pub(crate) const MAX_VARLONG_LEN: usize = 10;

/// Reads a zigzag varint at `*pos`, advancing it.
pub(crate) fn read_varint(bytes: &[u8], pos: &mut usize) -> Result<i32, CorruptKind> {
    let raw = read_unsigned(bytes, pos, MAX_VARINT_LEN)? as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varlong at `*pos`, advancing it.
pub(crate) fn read_varlong(bytes: &[u8], pos: &mut usize) -> Result<i64, CorruptKind> {
    let raw = read_unsigned(bytes, pos, MAX_VARLONG_LEN)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

fn read_unsigned(bytes: &[u8], pos: &mut usize, max_len: usize) -> Result<u64, CorruptKind> {
    let mut value: u64 = 0;
    for i in 0..max_len {
        let byte = *bytes.get(*pos + i).ok_or(CorruptKind::Truncated)?;
        value |= u64::from(byte & 0x7f).wrapping_shl(7 * i as u32);
        if byte & 0x80 == 0 {
            *pos += i + 1;
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
        let mut pos = 0;
        assert_eq!(read_varlong(&out, &mut pos), Ok(-282609));
        assert_eq!(pos, 3);
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
        let mut pos = 0;
        assert_eq!(
            read_varint(&[0xff; 6], &mut pos),
            Err(CorruptKind::InvalidVarint)
        );
        assert_eq!(
            read_varint(&[0xff; 3], &mut pos),
            Err(CorruptKind::Truncated)
        );
        assert_eq!(
            read_varlong(&[0x80; 11], &mut pos),
            Err(CorruptKind::InvalidVarint)
        );
        assert_eq!(pos, 0, "failed reads do not advance");
    }

    proptest! {
        #[test]
        fn varint_round_trip(value: i32) {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_len(value));
            prop_assert!(out.len() <= MAX_VARINT_LEN);
            let mut pos = 0;
            prop_assert_eq!(read_varint(&out, &mut pos), Ok(value));
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn varlong_round_trip(value: i64) {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            prop_assert!(out.len() <= MAX_VARLONG_LEN);
            prop_assert_eq!(out.len(), varlong_len(value));
            let mut pos = 0;
            prop_assert_eq!(read_varlong(&out, &mut pos), Ok(value));
            prop_assert_eq!(pos, out.len());
        }
    }
}
