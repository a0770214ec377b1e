//! Compression and bounded decompression for the five codecs, in Kafka's stream formats.
//!
//! Decompression never produces more than the caller's limit: every decoder is read through a
//! `take(limit + 1)`, and snappy's declared lengths are checked before anything is allocated.

use std::io::{Read, Write};

use crate::xxhash32::xxh32;
use crate::{Compression, CorruptKind, Error};

/// snappy-java (xerial) stream header: magic, then version 1 and compatible version 1.
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// snappy-java's default block size, which Kafka uses.
const XERIAL_BLOCK_SIZE: usize = 32 * 1024;
/// LZ4 frame magic number (little-endian on the wire).
const LZ4_FRAME_MAGIC: u32 = 0x184D_2204;
/// zstd window (log2) always accepted, whatever the caller's limit: Kafka's producers use
/// zstd's streaming defaults (window log 21 at level 3); 2^23 leaves room for higher levels.
const ZSTD_MIN_WINDOW_LOG: u32 = 23;

/// Decompresses `data`, failing with `DecompressedTooLarge` if the result exceeds `limit`.
///
/// `kafka08_lz4` enables Kafka 0.8's LZ4 quirk (magic 0 wrappers): the frame header checksum is
/// not checked, as Kafka's `KafkaLZ4BlockInputStream` does not check it for magic 0.
pub(crate) fn decompress(
    codec: Compression,
    data: &[u8],
    limit: usize,
    kafka08_lz4: bool,
) -> Result<Vec<u8>, CorruptKind> {
    let fail = |detail: String| CorruptKind::Decompression { codec, detail };
    match codec {
        Compression::None => {
            if data.len() > limit {
                return Err(CorruptKind::DecompressedTooLarge { limit });
            }
            Ok(data.to_vec())
        }
        Compression::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(data), codec, limit),
        Compression::Snappy => decompress_snappy(data, limit),
        Compression::Lz4 => {
            if data.len() < 7 || read_le_u32(data) != LZ4_FRAME_MAGIC {
                return Err(fail("not an LZ4 frame".into()));
            }
            if kafka08_lz4 {
                let mut fixed = data.to_vec();
                repair_lz4_header_checksum(&mut fixed);
                read_bounded(lz4_flex::frame::FrameDecoder::new(&fixed[..]), codec, limit)
            } else {
                read_bounded(lz4_flex::frame::FrameDecoder::new(data), codec, limit)
            }
        }
        Compression::Zstd => {
            let mut decoder =
                zstd::stream::read::Decoder::with_buffer(data).map_err(|e| fail(e.to_string()))?;
            let window_log = usize::BITS - limit.leading_zeros();
            decoder
                .window_log_max(window_log.clamp(ZSTD_MIN_WINDOW_LOG, 31))
                .map_err(|e| fail(e.to_string()))?;
            read_bounded(decoder, codec, limit)
        }
    }
}

/// Compresses `data` the way Kafka's producer does for `codec`.
pub(crate) fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>, Error> {
    let fail = |detail: String| Error::Compress { codec, detail };
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).map_err(|e| fail(e.to_string()))?;
            enc.finish().map_err(|e| fail(e.to_string()))
        }
        Compression::Snappy => {
            let mut out = Vec::with_capacity(XERIAL_HEADER.len() + data.len() / 2 + 64);
            out.extend_from_slice(XERIAL_HEADER);
            let mut encoder = snap::raw::Encoder::new();
            for chunk in data.chunks(XERIAL_BLOCK_SIZE) {
                let block = encoder
                    .compress_vec(chunk)
                    .map_err(|e| fail(e.to_string()))?;
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            Ok(out)
        }
        Compression::Lz4 => {
            // Kafka: 64 KiB independent blocks, no block or content checksum, no content size.
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(data).map_err(|e| fail(e.to_string()))?;
            enc.finish().map_err(|e| fail(e.to_string()))
        }
        Compression::Zstd => zstd::stream::encode_all(data, 3).map_err(|e| fail(e.to_string())),
    }
}

fn read_bounded(
    reader: impl Read,
    codec: Compression,
    limit: usize,
) -> Result<Vec<u8>, CorruptKind> {
    let mut out = Vec::new();
    reader
        .take((limit as u64).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| CorruptKind::Decompression {
            codec,
            detail: e.to_string(),
        })?;
    if out.len() > limit {
        return Err(CorruptKind::DecompressedTooLarge { limit });
    }
    Ok(out)
}

fn decompress_snappy(data: &[u8], limit: usize) -> Result<Vec<u8>, CorruptKind> {
    let codec = Compression::Snappy;
    let fail = |detail: String| CorruptKind::Decompression { codec, detail };
    let raw = |block: &[u8], out: &mut Vec<u8>| -> Result<(), CorruptKind> {
        let len = snap::raw::decompress_len(block).map_err(|e| fail(e.to_string()))?;
        if len > limit - out.len() {
            return Err(CorruptKind::DecompressedTooLarge { limit });
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|e| fail(e.to_string()))?;
        Ok(())
    };
    let mut out = Vec::new();
    // snappy-java's SnappyInputStream falls back to raw snappy when the magic is absent.
    if data.len() < XERIAL_HEADER.len() || !data.starts_with(XERIAL_MAGIC) {
        raw(data, &mut out)?;
        return Ok(out);
    }
    let mut rest = &data[XERIAL_HEADER.len()..];
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(fail("truncated xerial block length".into()));
        };
        let len = u32::from_be_bytes(*len) as usize;
        if len > tail.len() {
            return Err(fail("xerial block runs past the end of the data".into()));
        }
        raw(&tail[..len], &mut out)?;
        rest = &tail[len..];
    }
    Ok(out)
}

fn read_le_u32(data: &[u8]) -> u32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&data[..4]);
    u32::from_le_bytes(buf)
}

/// Position of the header checksum byte of an LZ4 frame (after FLG, BD and the optional
/// content size and dictionary id), if the frame is long enough to hold it.
fn lz4_header_checksum_position(frame: &[u8]) -> Option<usize> {
    let flg = *frame.get(4)?;
    let mut pos = 6;
    if flg & 0x08 != 0 {
        pos += 8;
    }
    if flg & 0x01 != 0 {
        pos += 4;
    }
    (pos < frame.len()).then_some(pos)
}

/// Rewrites the header checksum byte to the value the LZ4 spec requires (XXH32 of the frame
/// descriptor, seed 0, second byte).
fn repair_lz4_header_checksum(frame: &mut [u8]) {
    if let Some(pos) = lz4_header_checksum_position(frame) {
        frame[pos] = (xxh32(&frame[4..pos], 0) >> 8) as u8;
    }
}

/// Writes the broken header checksum of Kafka 0.8 (XXH32 over the magic number too), to build
/// test inputs for the quirk.
#[cfg(test)]
pub(crate) fn break_lz4_header_checksum(frame: &mut [u8]) {
    if let Some(pos) = lz4_header_checksum_position(frame) {
        frame[pos] = (xxh32(&frame[..pos], 0) >> 8) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..100_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        let data = sample();
        for codec in Compression::ALL {
            let packed = compress(codec, &data).unwrap();
            let unpacked = decompress(codec, &packed, data.len(), false).unwrap();
            assert_eq!(unpacked, data, "{codec}");
        }
    }

    #[test]
    fn limit_is_enforced_for_every_codec() {
        let data = sample();
        for codec in Compression::ALL {
            let packed = compress(codec, &data).unwrap();
            assert_eq!(
                decompress(codec, &packed, data.len() - 1, false),
                Err(CorruptKind::DecompressedTooLarge {
                    limit: data.len() - 1
                }),
                "{codec}"
            );
        }
    }

    #[test]
    fn zip_bomb_is_refused_without_allocating_it() {
        let zeros = vec![0u8; 16 << 20];
        for codec in [
            Compression::Gzip,
            Compression::Lz4,
            Compression::Zstd,
            Compression::Snappy,
        ] {
            let packed = compress(codec, &zeros).unwrap();
            assert!(packed.len() < zeros.len() / 16, "{codec}");
            assert_eq!(
                decompress(codec, &packed, 1 << 20, false),
                Err(CorruptKind::DecompressedTooLarge { limit: 1 << 20 })
            );
        }
    }

    #[test]
    fn raw_snappy_is_read_too() {
        let data = sample();
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, data.len(), false).unwrap(),
            data
        );
    }

    #[test]
    fn kafka08_lz4_broken_header_checksum() {
        let data = sample();
        let mut frame = compress(Compression::Lz4, &data).unwrap();
        break_lz4_header_checksum(&mut frame);
        assert!(matches!(
            decompress(Compression::Lz4, &frame, data.len(), false),
            Err(CorruptKind::Decompression { .. })
        ));
        assert_eq!(
            decompress(Compression::Lz4, &frame, data.len(), true).unwrap(),
            data
        );
    }

    #[test]
    fn garbage_is_a_decompression_error_naming_its_codec() {
        let data = sample();
        for codec in Compression::ALL {
            // A real frame of this codec cut in half, and bytes of other formats.
            let mut truncated = compress(codec, &data).unwrap();
            truncated.truncate(truncated.len() / 2);
            for garbage in [
                &b""[..],
                b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff",
                b"\x04\x22\x4d\x18\xff\xff\xff\xff",
                &truncated,
            ] {
                for kafka08_lz4 in [false, true] {
                    let got = decompress(codec, garbage, 1024 * 1024, kafka08_lz4);
                    if codec == Compression::None {
                        // Nothing to decode: the bytes are the records.
                        assert_eq!(got.as_deref(), Ok(garbage), "{garbage:?}");
                        continue;
                    }
                    assert!(
                        matches!(&got, Err(CorruptKind::Decompression { codec: c, .. }) if *c == codec),
                        "{codec:?} of {garbage:?} (kafka08_lz4 {kafka08_lz4}): {got:?}"
                    );
                }
            }
        }
    }
}
