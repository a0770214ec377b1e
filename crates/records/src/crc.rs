//! [`crc32c`]: the CRC-32C (Castagnoli) of Kafka v2 batches, the one place the crate's
//! CRC-32C dependency is named.
//!
//! Kafka's v2 `crc` field is CRC-32C over `[attributes, end)` of the batch (spec 4.2). The
//! implementation (`crc-fast`) picks the widest carry-less-multiply code path the CPU has at
//! run time (VPCLMULQDQ/AVX-512, PCLMULQDQ, or ARM PMULL), with a table fallback elsewhere.

/// The CRC-32C (Castagnoli, reflected, init and xorout `0xFFFF_FFFF`; `crc32c(b"123456789")` is
/// `0xE306_9283`) of `bytes`: what Kafka stores in a v2 batch's `crc` field for the bytes
/// from `attributes` to the end of the batch.
///
/// Exposed so that tools and tests can re-checksum a batch they edited by hand; to check a
/// batch use [`BatchRef::ensure_valid`](crate::BatchRef::ensure_valid).
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_and_the_generic_api_agree() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        // Every length around the implementation's block boundaries, against the generic
        // entry point and a bitwise oracle.
        let data: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        for len in (0..300).chain([511, 512, 513, 1023, 1024, 1025, 2047, 2048, 4095, 4096]) {
            let piece = &data[..len];
            let expected = bitwise(piece);
            assert_eq!(crc32c(piece), expected, "len {len}");
            let generic = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, piece) as u32;
            assert_eq!(generic, expected, "len {len}");
        }
    }

    /// The textbook bit-at-a-time CRC-32C.
    fn bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
}
