//! [`crc32c()`]: the CRC-32C (Castagnoli) of Kafka v2 batches, the one place the crate's
//! CRC-32C dependencies are named.
//!
//! Kafka's v2 `crc` field is CRC-32C over `[attributes, end)` of the batch (spec 4.2). Two
//! implementations, picked per call from what the CPU has (detected once at run time):
//! `crc-fast` where it has a wide carry-less multiply (x86-64 with AVX-512 and VPCLMULQDQ, where
//! it folds 64 bytes a step: about 100 GB/s on 11 KB batches) and for short inputs (its
//! `crc32` instruction path for up to 256 bytes has the least set-up); otherwise `crc32c`, whose
//! three interleaved `crc32` instruction streams beat `crc-fast`'s SSE `pclmulqdq` fusion by
//! 10-50% from 1 KB up on an AVX2 host without AVX-512 (AMD EPYC, `docs/performance.md`, "CRC
//! implementation"). Both compute the same function; a test checks them against a bitwise oracle.

/// Inputs up to this long take `crc-fast`'s short-input path whatever the CPU.
const SHORT: usize = 256;

/// The CRC-32C (Castagnoli, reflected, init and xorout `0xFFFF_FFFF`; `crc32c(b"123456789")` is
/// `0xE306_9283`) of `bytes`: what Kafka stores in a v2 batch's `crc` field for the bytes
/// from `attributes` to the end of the batch.
///
/// Exposed so that tools and tests can re-checksum a batch they edited by hand; to check a
/// batch use [`BatchRef::ensure_valid`](crate::BatchRef::ensure_valid).
pub fn crc32c(bytes: &[u8]) -> u32 {
    if bytes.len() <= SHORT || wide_clmul() {
        crc_fast::crc32_iscsi(bytes)
    } else {
        crc32c::crc32c(bytes)
    }
}

/// Whether the CPU folds with 512-bit carry-less multiplies (`crc-fast`'s fastest path).
/// `is_x86_feature_detected!` caches its answer: this is two relaxed loads.
#[cfg(target_arch = "x86_64")]
fn wide_clmul() -> bool {
    std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("vpclmulqdq")
}

/// Elsewhere `crc-fast` has the better path (ARM: PMULL fused with the `crc32c` instructions).
#[cfg(not(target_arch = "x86_64"))]
fn wide_clmul() -> bool {
    true
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
            // Both implementations, whichever one this CPU dispatches to.
            assert_eq!(
                crc_fast::crc32_iscsi(piece),
                expected,
                "crc-fast, len {len}"
            );
            assert_eq!(crc32c::crc32c(piece), expected, "crc32c, len {len}");
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
