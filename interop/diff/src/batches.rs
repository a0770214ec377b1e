//! The bytes both sides get for the operations of part B: follower batches (v2 with their own
//! offsets and leader epochs, legacy v0/v1 messages written here, since `seglog-records` never
//! writes them), leader batches with chosen timestamps, markers under a transaction version,
//! and for a lookup or an expiry the instant it uses (8 bytes, big-endian), so that both sides
//! take the same one.

use std::io::Write;

use seglog_records::{BatchBuilder, Compression};

use crate::history::{Codec, FollowerBatch, Op, TimedBatch, TimestampTarget};
use crate::ours::marker_bytes;

/// `producer.id.expiration.ms` of both logs (Kafka's default, and `DiffDriver`'s
/// `ProducerStateManagerConfig`).
pub const PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// The bytes of an operation of part B at step `step` whose clock reads `now_ms`; empty for
/// the others.
///
/// # Errors
/// A builder's error, as text.
pub fn bytes(op: &Op, step: usize, now_ms: i64) -> Result<Vec<u8>, String> {
    Ok(match op {
        Op::Follower { batches, .. } => {
            let mut out = Vec::new();
            for (i, b) in batches.iter().enumerate() {
                out.extend(follower_batch(b, step * 10 + i, now_ms)?);
            }
            out
        }
        Op::TxnMarker {
            producer_id,
            epoch,
            coordinator_epoch,
            commit,
            ..
        } => marker_bytes(*producer_id, *epoch, *coordinator_epoch, *commit, now_ms)?,
        Op::LeaderBatches { batches } => {
            let mut out = Vec::new();
            for (i, b) in batches.iter().enumerate() {
                out.extend(timed_batch(b, step * 10 + i, now_ms)?);
            }
            out
        }
        Op::OffsetForTimestamp { target } => instant(match target {
            TimestampTarget::Earliest => -2,
            TimestampTarget::Latest => -1,
            TimestampTarget::MaxTimestamp => -3,
            TimestampTarget::AgoMs(ago) => now_ms - ago,
        }),
        Op::ExpireProducers { ago_ms } => instant(now_ms + PRODUCER_ID_EXPIRATION_MS - ago_ms),
        _ => Vec::new(),
    })
}

/// The instant carried by the bytes of a lookup or an expiry.
///
/// # Errors
/// Bytes that are not 8 long.
pub fn instant_of(bytes: &[u8]) -> Result<i64, String> {
    <[u8; 8]>::try_from(bytes)
        .map(i64::from_be_bytes)
        .map_err(|_| format!("an instant is 8 bytes, got {}", bytes.len()))
}

fn instant(ms: i64) -> Vec<u8> {
    ms.to_be_bytes().to_vec()
}

fn compression(codec: Codec) -> Compression {
    match codec {
        Codec::None => Compression::None,
        Codec::Gzip => Compression::Gzip,
        Codec::Snappy => Compression::Snappy,
        Codec::Lz4 => Compression::Lz4,
        Codec::Zstd => Compression::Zstd,
    }
}

fn key_value(seed: usize, i: u8) -> (String, String) {
    (
        format!("key-{}", (seed + usize::from(i)) % 7),
        format!("value of {seed} record {i}"),
    )
}

/// One follower batch: v2 through `BatchBuilder` (its marker through
/// `BatchBuilder::end_transaction_marker`), legacy messages written here.
fn follower_batch(b: &FollowerBatch, seed: usize, now_ms: i64) -> Result<Vec<u8>, String> {
    if b.magic < 2 {
        return Ok(legacy(b, seed, now_ms));
    }
    if let Some(commit) = b.marker {
        let mut bytes = marker_bytes(b.producer_id, b.epoch, 0, commit, now_ms)?;
        seglog_records::set_base_offset(&mut bytes, b.base_offset)
            .map_err(|e| format!("marker base offset: {e}"))?;
        seglog_records::set_partition_leader_epoch(&mut bytes, b.leader_epoch)
            .map_err(|e| format!("marker leader epoch: {e}"))?;
        return Ok(bytes);
    }
    let mut builder = BatchBuilder::new(b.base_offset)
        .compression(compression(b.codec))
        .producer(b.producer_id, b.epoch, b.base_sequence)
        .transactional(b.transactional)
        .partition_leader_epoch(b.leader_epoch);
    for i in 0..b.records {
        let (k, v) = key_value(seed, i);
        builder.append(now_ms, Some(k.as_bytes()), Some(v.as_bytes()), &[]);
    }
    builder
        .build()
        .map(|b| b.to_vec())
        .map_err(|e| format!("build follower batch: {e}"))
}

/// A leader batch whose records carry `now_ms` plus their offsets.
fn timed_batch(t: &TimedBatch, seed: usize, now_ms: i64) -> Result<Vec<u8>, String> {
    let spec = &t.batch;
    let mut builder = BatchBuilder::new(0)
        .compression(compression(spec.codec))
        .producer(spec.producer_id, spec.epoch, spec.base_sequence)
        .transactional(spec.transactional);
    for (i, offset) in t.timestamp_offsets_ms.iter().enumerate() {
        let (k, v) = key_value(seed, u8::try_from(i).unwrap_or(u8::MAX));
        builder.append(now_ms + offset, Some(k.as_bytes()), Some(v.as_bytes()), &[]);
    }
    builder
        .build()
        .map(|b| b.to_vec())
        .map_err(|e| format!("build timed batch: {e}"))
}

/// Legacy messages (Kafka's `LegacyRecord.write`): uncompressed, one message per record at
/// consecutive offsets from the base; gzip, one wrapper whose offset is the last inner one
/// (v0 inner offsets absolute, v1 relative: 0, 1, ...; the v1 wrapper's timestamp is the
/// largest inner one, CreateTime).
fn legacy(b: &FollowerBatch, seed: usize, now_ms: i64) -> Vec<u8> {
    let messages: Vec<Vec<u8>> = (0..b.records)
        .map(|i| {
            let (k, v) = key_value(seed, i);
            let offset = match (b.codec, b.magic) {
                (Codec::None, _) | (_, 0) => b.base_offset + i64::from(i),
                _ => i64::from(i),
            };
            message(
                b.magic,
                offset,
                0,
                now_ms,
                Some(k.as_bytes()),
                Some(v.as_bytes()),
            )
        })
        .collect();
    if b.codec == Codec::None {
        return messages.concat();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = gz.write_all(&messages.concat());
    let packed = gz.finish().unwrap_or_default();
    let last = b.base_offset + i64::from(b.records) - 1;
    message(
        b.magic,
        last,
        Compression::Gzip.id(),
        now_ms,
        None,
        Some(&packed),
    )
}

/// One legacy message at `offset` (offset, size, CRC-32 of what follows it, magic,
/// attributes, v1's timestamp, key, value).
fn message(
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
                body.extend_from_slice(&i32::try_from(b.len()).unwrap_or(i32::MAX).to_be_bytes());
                body.extend_from_slice(b);
            }
        }
    }
    let crc = crc32fast::hash(&body);
    let mut out = Vec::with_capacity(body.len() + 16);
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&(i32::try_from(body.len()).unwrap_or(i32::MAX) + 4).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy_batch(magic: u8, codec: Codec) -> FollowerBatch {
        FollowerBatch {
            base_offset: 7,
            magic,
            leader_epoch: -1,
            records: 3,
            codec,
            producer_id: -1,
            epoch: -1,
            base_sequence: -1,
            transactional: false,
            marker: None,
        }
    }

    #[test]
    fn legacy_messages_parse_with_their_offsets() {
        for (magic, codec, shallow) in [
            (0, Codec::None, 3),
            (1, Codec::None, 3),
            (0, Codec::Gzip, 1),
            (1, Codec::Gzip, 1),
        ] {
            let bytes = legacy(&legacy_batch(magic, codec), 1, 1_000);
            let batches: Vec<_> = seglog_records::Batches::new(&bytes[..], 0)
                .collect::<Result<_, _>>()
                .expect("parses");
            assert_eq!(batches.len(), shallow, "magic {magic} {codec:?}");
            let last = batches.last().expect("a batch");
            assert_eq!(last.header().last_offset, 9, "magic {magic} {codec:?}");
            let records: Vec<_> = batches
                .iter()
                .flat_map(|b| {
                    b.ensure_valid().expect("checksum");
                    b.records(1 << 20).collect::<Vec<_>>()
                })
                .collect::<Result<_, _>>()
                .expect("records");
            let offsets: Vec<i64> = records.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, [7, 8, 9], "magic {magic} {codec:?}");
        }
    }

    #[test]
    fn an_instant_round_trips() {
        let op = Op::ExpireProducers { ago_ms: 5 };
        let b = bytes(&op, 0, 1_000).expect("bytes");
        assert_eq!(instant_of(&b), Ok(1_000 + PRODUCER_ID_EXPIRATION_MS - 5));
    }
}
