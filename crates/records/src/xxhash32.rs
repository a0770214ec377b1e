//! XXH32, only to check and repair the LZ4 frame header checksum byte.
//!
//! Kafka 0.8 wrote LZ4 frames for magic 0 with a broken header checksum (computed over the
//! frame magic too), and its reader skips the check for magic 0. `lz4_flex` always checks it,
//! so for magic 0 we rewrite that byte to the correct value before decoding. Written out here
//! (about 40 lines) rather than adding a dependency for one 2-14 byte hash.

const PRIME1: u32 = 0x9E37_79B1;
const PRIME2: u32 = 0x85EB_CA77;
const PRIME3: u32 = 0xC2B2_AE3D;
const PRIME4: u32 = 0x27D4_EB2F;
const PRIME5: u32 = 0x1656_67B1;

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(PRIME2))
        .rotate_left(13)
        .wrapping_mul(PRIME1)
}

fn lane(bytes: &[u8]) -> u32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[..4]);
    u32::from_le_bytes(buf)
}

/// XXH32 of `input` with `seed`.
pub(crate) fn xxh32(input: &[u8], seed: u32) -> u32 {
    let mut rest = input;
    let mut hash = if input.len() >= 16 {
        let mut acc = [
            seed.wrapping_add(PRIME1).wrapping_add(PRIME2),
            seed.wrapping_add(PRIME2),
            seed,
            seed.wrapping_sub(PRIME1),
        ];
        while rest.len() >= 16 {
            for (i, a) in acc.iter_mut().enumerate() {
                *a = round(*a, lane(&rest[4 * i..]));
            }
            rest = &rest[16..];
        }
        acc[0]
            .rotate_left(1)
            .wrapping_add(acc[1].rotate_left(7))
            .wrapping_add(acc[2].rotate_left(12))
            .wrapping_add(acc[3].rotate_left(18))
    } else {
        seed.wrapping_add(PRIME5)
    };
    hash = hash.wrapping_add(input.len() as u32);
    while rest.len() >= 4 {
        hash = hash
            .wrapping_add(lane(rest).wrapping_mul(PRIME3))
            .rotate_left(17)
            .wrapping_mul(PRIME4);
        rest = &rest[4..];
    }
    for &byte in rest {
        hash = hash
            .wrapping_add(u32::from(byte).wrapping_mul(PRIME5))
            .rotate_left(11)
            .wrapping_mul(PRIME1);
    }
    hash ^= hash >> 15;
    hash = hash.wrapping_mul(PRIME2);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(PRIME3);
    hash ^ (hash >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // Published XXH32 test values (seed 0).
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"a", 0), 0x550D_7456);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }

    #[test]
    fn matches_lz4_flex_header_checksums() {
        use std::io::Write;
        // lz4_flex computes the frame header checksum byte with its own XXH32.
        let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
        enc.write_all(b"hello hello hello").unwrap();
        let frame = enc.finish().unwrap();
        // Magic(4) FLG BD HC for a frame without content size / dict id.
        assert_eq!(frame[4] & 0x09, 0);
        assert_eq!(frame[6], (xxh32(&frame[4..6], 0) >> 8) as u8);
    }
}
