//! Small helpers shared by the suites: batches of self-verifying records, a config with tiny
//! segments, environment knobs, and the shared Kafka corpus.

use seglog::{BatchBuilder, Compression, LogConfig};

use crate::payload::RecordId;

/// One v2 batch holding the records `ids` (CreateTime timestamps from [`RecordId`]), with base
/// offset 0 (a leader append assigns the real offsets).
///
/// # Errors
/// The record layer's error if the batch cannot be built (it can only be a codec failure).
pub fn build_batch(ids: &[RecordId], compression: Compression) -> seglog_records::Result<Vec<u8>> {
    let mut builder = BatchBuilder::new(0).compression(compression);
    for id in ids {
        builder.append(id.timestamp_ms(), Some(&id.key()), Some(&id.value()), &[]);
    }
    Ok(builder.build()?.to_vec())
}

/// A config with small segments and indexes so that a few hundred records roll several
/// segments, no time retention, and no CreateTime window (the records carry 2023 timestamps).
pub fn small_config(segment_bytes: i32) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 512,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_before_max_ms: i64::MAX,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

/// The unsigned integer in environment variable `name`, or `default` when unset or invalid.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}
