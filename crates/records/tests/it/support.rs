//! Test helpers: a tiny legacy (v0/v1) message writer (this crate only reads legacy data) and
//! a generator of varied v2 logs.

use bytes::Bytes;
use seglog_records::{BatchBuilder, Compression, TimestampType};

/// One legacy message (Kafka's `LegacyRecord.write`): offset, size, CRC-32 over magic..end.
pub fn legacy_message(
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

/// A gzip-compressed v1 wrapper around `n` inner messages with relative offsets, whose wrapper
/// offset is `last_offset`.
pub fn legacy_gzip_wrapper(last_offset: i64, n: i64) -> Vec<u8> {
    use std::io::Write;
    let inner: Vec<u8> = (0..n)
        .flat_map(|i| legacy_message(1, i, 0, 1_000 + i, Some(b"k"), Some(b"inner value")))
        .collect();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&inner).unwrap();
    let packed = enc.finish().unwrap();
    legacy_message(1, last_offset, 1, 2_000, None, Some(&packed))
}

/// A region of several v2 batches covering every codec, headers, null keys and values, a
/// control batch and LogAppendTime.
pub fn varied_v2_log() -> Vec<u8> {
    let mut log = Vec::new();
    let mut offset = 0i64;
    for (i, codec) in Compression::ALL.into_iter().enumerate() {
        let mut builder = BatchBuilder::new(offset)
            .compression(codec)
            .producer(1000 + i as i64, 1, 0)
            .partition_leader_epoch(3);
        if i % 2 == 1 {
            builder = builder.timestamp_type(TimestampType::LogAppendTime);
        }
        for j in 0..4 {
            builder.append(
                1_700_000_000_000 + j,
                (j != 1).then_some(&b"key"[..]),
                (j != 2).then_some(&b"some value bytes"[..]),
                &[("trace", Some(b"abc")), ("empty", None)],
            );
        }
        log.extend_from_slice(&builder.build().unwrap());
        offset += 4;
    }
    log.extend_from_slice(
        &BatchBuilder::end_transaction_marker(
            offset,
            1_700_000_000_100,
            3,
            1000,
            1,
            seglog_records::ControlRecordType::Commit,
            seglog_records::EndTransactionMarker::new(5),
        )
        .unwrap(),
    );
    log
}

/// Every batch of `bytes`, fully decoded; the first error (if any) ends the walk.
pub fn decode_all(bytes: &[u8], base_position: u64) -> Result<usize, seglog_records::Error> {
    let mut records = 0;
    for batch in seglog_records::Batches::new(bytes, base_position).validated() {
        let batch = batch?;
        for record in batch.records(1 << 20) {
            record?;
            records += 1;
        }
        batch.control_record()?;
    }
    Ok(records)
}

/// `Bytes` from a `Vec`, for the owning APIs.
pub fn shared(bytes: &[u8]) -> Bytes {
    Bytes::copy_from_slice(bytes)
}
