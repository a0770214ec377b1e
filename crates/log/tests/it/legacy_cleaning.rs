//! The cleaner over legacy (v0/v1) message sets a follower replicated: Kafka 4.4's
//! `MemoryRecords.filterTo` copies only v2 batches as they are (`writeOriginalBatch =
//! batch.magic() >= 2`), so every legacy set it keeps anything of, wholly kept or not, is
//! written again as one v2 batch (`buildRetainedRecordsInto`): base offset its first kept
//! record's, last offset its last kept record's, its codec, CreateTime for v0, no producer,
//! partition leader epoch -1, and a delete horizon when it keeps a tombstone (a legacy set has
//! no horizon field).

use seglog::{
    BatchHeader, Batches, CleanupPolicy, Compression, Isolation, Log, LogConfig, TimestampType,
};

use crate::support::{T0, clock, open, read_all, small_config};

/// CRC-32 (IEEE), as legacy messages and gzip trailers carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One legacy message (Kafka's `LegacyRecord.write`): offset, size, CRC-32 of what follows,
/// magic, attributes, v1's timestamp, key, value (`None`: length -1).
fn message(
    magic: u8,
    offset: i64,
    attributes: u8,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&T0.to_be_bytes());
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
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// `data` as a gzip stream of one stored deflate block.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let len = data.len() as u16;
    out.push(1);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// A v1 gzip wrapper of keyed v1 messages at `first..`: inner offsets relative, the wrapper
/// at the last offset.
pub(crate) fn gzip_v1_set(first: i64, keys: &[&str]) -> Vec<u8> {
    let inner: Vec<u8> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, key)| message(1, i as i64, 0, Some(key.as_bytes()), Some(b"gz")))
        .collect();
    let last = first + keys.len() as i64 - 1;
    message(
        1,
        last,
        Compression::Gzip.id(),
        None,
        Some(&gzip_stored(&inner)),
    )
}

fn config() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 1_000,
        min_cleanable_dirty_ratio: seglog::DirtyRatio(0.0),
        file_delete_delay_ms: 0,
        ..small_config(1 << 20)
    }
}

/// The headers of the batches segment `i`'s `.log` holds.
fn file_headers(log: &Log, i: usize) -> Vec<BatchHeader> {
    let bytes = std::fs::read(&log.segments()[i].path).unwrap();
    Batches::new(&bytes[..], 0)
        .map(|b| {
            let b = b.unwrap();
            b.ensure_valid().unwrap();
            *b.header()
        })
        .collect()
}

/// Wholly kept legacy sets (a v0 message, a v1 message, a v1 tombstone, a v1 gzip wrapper of
/// two) come out of a round as v2 batches with Kafka's fields; before the fix seglog copied
/// them as they were (magic 0/1: the differential histories' `file_batches` magic 1 vs 2).
#[test]
fn a_round_writes_every_legacy_set_it_keeps_as_v2() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(tmp.path(), config(), &clock);
    let mut sets = message(0, 0, 0, Some(b"a"), Some(b"v0"));
    sets.extend(message(1, 1, 0, Some(b"b"), Some(b"v1")));
    sets.extend(message(1, 2, 0, Some(b"c"), None));
    sets.extend(gzip_v1_set(3, &["d", "e"]));
    log.append_as_follower(&sets).unwrap();
    let before: Vec<u8> = file_headers(&log, 0).iter().map(|h| h.magic).collect();
    assert_eq!(before, [0, 1, 1, 1]);
    log.roll().unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();

    let report = log.clean_at(T0).unwrap().expect("a round");
    assert_eq!(report.records_after, 5, "{report:?}");
    let after = file_headers(&log, 0);
    let fields: Vec<_> = after
        .iter()
        .map(|h| {
            (
                h.magic,
                h.base_offset,
                h.last_offset,
                h.compression,
                h.timestamp_type,
                h.max_timestamp_ms,
            )
        })
        .collect();
    let v2 = |base, last, codec, max| {
        (
            2,
            Some(base),
            last,
            codec,
            Some(TimestampType::CreateTime),
            max,
        )
    };
    assert_eq!(
        fields,
        [
            // v0 has no timestamps: CreateTime, max -1.
            v2(0, 0, Compression::None, -1),
            v2(1, 1, Compression::None, T0),
            v2(2, 2, Compression::None, T0),
            v2(3, 4, Compression::Gzip, T0),
        ]
    );
    for h in &after {
        assert_eq!(
            (
                h.producer_id,
                h.producer_epoch,
                h.base_sequence,
                h.partition_leader_epoch,
                h.is_transactional,
                h.is_control
            ),
            (-1, -1, -1, -1, false, false)
        );
    }
    // Only the kept tombstone's batch gets a horizon, `now + delete.retention.ms`.
    let horizons: Vec<_> = after.iter().map(BatchHeader::delete_horizon_ms).collect();
    assert_eq!(horizons, [None, None, Some(T0 + 1_000), None]);
    // The records are the same, the v0 one without a timestamp.
    let read = read_all(&log, 0, Isolation::LogEnd);
    let value = |v: &[u8]| Some(v.to_vec());
    assert_eq!(
        read,
        [
            (0, -1, value(b"v0")),
            (1, T0, value(b"v1")),
            (2, T0, None),
            (3, T0, value(b"gz")),
            (4, T0, value(b"gz")),
        ]
    );
}
