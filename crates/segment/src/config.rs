//! [`SegmentConfig`] (the per-segment subset of Kafka's `LogConfig`) and [`RollParams`].

use crate::cache::SegmentCache;
use crate::{Error, Io, Result};

/// Settings of one segment. A plain struct; [`Default`] gives Kafka's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentConfig {
    /// Size at which the log rolls to a new segment, and the length a preallocated `.log`
    /// gets. Mirrors `segment.bytes`. Default: 1073741824 (1 GiB). Range `14..=i32::MAX`.
    pub segment_bytes: u32,
    /// Bytes appended between two index entries; the test is strictly greater-than and is
    /// made before counting the current append. Mirrors `index.interval.bytes`.
    /// Default: 4096.
    pub index_interval_bytes: u32,
    /// Preallocated size of each index file, rounded down to whole entries. Mirrors
    /// `segment.index.bytes`. Default: 10485760 (10 MiB). At least 12 (one time-index entry).
    pub max_index_bytes: u32,
    /// Whether a new `.log` is preallocated to `segment_bytes` (with `fallocate`); the
    /// preallocated tail is cut when the segment is sealed or closed. Mirrors `preallocate`.
    /// Default: false.
    pub preallocate: bool,
    /// Age after which the log rolls. Mirrors `segment.ms`. Default: 604800000 (7 days).
    /// At least 1.
    pub segment_ms: i64,
    /// Upper bound of the random jitter drawn once per active segment and subtracted from
    /// the age limit. Mirrors `segment.jitter.ms`. Default: 0. At least 0.
    pub segment_jitter_ms: i64,
    /// The most bytes one batch may decompress to when a segment reads records inside a
    /// batch (the record-level scan of `find_offset_by_timestamp`). A guard against hostile
    /// or corrupt data; it is **not** Kafka's `max.message.bytes`, which limits the
    /// compressed size and is enforced by the log when appending. Recovery never uses it:
    /// like Kafka, it validates batch sizes and CRCs only. Default: 268435456 (256 MiB).
    pub max_decompressed_bytes: usize,
    /// Whether a recovery also decodes every batch's records (decompressing them into at most
    /// `max_decompressed_bytes`) and checks their offsets lie in order inside the batch, as a
    /// consumer and `seglog verify` do; a batch that fails is corrupt like one whose CRC
    /// fails. Kafka's `LogSegment.recover` checks sizes and CRCs only, so a batch with a valid
    /// CRC whose records do not decode survives it and fails every reader; this catches it at
    /// the cost of decoding (and decompressing) everything recovered. Default: false (Kafka's
    /// cost).
    pub decode_records_on_recovery: bool,
    /// The I/O seam every `.log` write and fsync, rename, unlink and index flush of segments
    /// opened or created with this config goes through (see [`crate::seam`]). Default:
    /// [`Io::direct`], the system calls and nothing else.
    pub io: Io,
    /// The cache that bounds how many segments have their files open (one `.log` descriptor
    /// and two index maps each): sealed segments opened with it are closed when it evicts
    /// them and reopened on their next use. `None`: a segment's files stay open for its
    /// life. No Kafka setting (Kafka keeps every `.log` open). Default: `None`.
    pub cache: Option<SegmentCache>,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        SegmentConfig {
            segment_bytes: 1024 * 1024 * 1024,
            index_interval_bytes: 4096,
            max_index_bytes: 10 * 1024 * 1024,
            preallocate: false,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            max_decompressed_bytes: 256 * 1024 * 1024,
            decode_records_on_recovery: false,
            io: Io::direct(),
            cache: None,
        }
    }
}

impl SegmentConfig {
    /// Checks every field's range.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first field out of range.
    pub fn validate(&self) -> Result<()> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        if self.segment_bytes < 14 || self.segment_bytes > i32::MAX as u32 {
            return invalid("segment_bytes", "must be in 14..=i32::MAX");
        }
        if self.max_index_bytes < 12 || self.max_index_bytes > i32::MAX as u32 {
            return invalid("max_index_bytes", "must be in 12..=i32::MAX");
        }
        if self.index_interval_bytes > i32::MAX as u32 {
            return invalid("index_interval_bytes", "must be at most i32::MAX");
        }
        if self.segment_ms < 1 {
            return invalid("segment_ms", "must be at least 1");
        }
        if self.segment_jitter_ms < 0 {
            return invalid("segment_jitter_ms", "must be at least 0");
        }
        Ok(())
    }

    /// Draws a roll jitter as Kafka's `LogConfig.randomSegmentJitter`:
    /// `abs(random i32) % min(segment_jitter_ms, segment_ms)`, or 0 without jitter.
    pub fn draw_roll_jitter_ms(&self) -> i64 {
        if self.segment_jitter_ms <= 0 || self.segment_ms <= 0 {
            return 0;
        }
        let bound = self.segment_jitter_ms.min(self.segment_ms);
        // Kafka's `Utils.abs` maps i32::MIN to 0; masking the sign bit is the same
        // distribution over 0..=i32::MAX.
        let random = i64::from(rand::random::<u32>() & 0x7fff_ffff);
        random % bound
    }
}

/// What the log knows about an incoming append when it asks whether to roll first
/// (Kafka's `RollParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollParams {
    /// The age limit: `segment.ms`, or `min(max.compaction.lag.ms, segment.ms)` for
    /// compacted topics with a compaction lag.
    pub max_segment_ms: i64,
    /// The size limit, `segment.bytes`.
    pub max_segment_bytes: u32,
    /// The largest timestamp in the incoming batches (-1 if none).
    pub max_timestamp_in_messages: i64,
    /// The largest offset in the incoming batches.
    pub max_offset_in_messages: i64,
    /// The size in bytes of the incoming batches.
    pub messages_size: u64,
    /// The current time in milliseconds since the epoch.
    pub now_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_valid() {
        let config = SegmentConfig::default();
        config.validate().unwrap();
        assert_eq!(config.segment_bytes, 1_073_741_824);
        assert_eq!(config.index_interval_bytes, 4096);
        assert_eq!(config.max_index_bytes, 10_485_760);
        assert_eq!(config.segment_ms, 604_800_000);
        assert_eq!(config.draw_roll_jitter_ms(), 0);
    }

    #[test]
    fn jitter_is_below_both_bounds() {
        let config = SegmentConfig {
            segment_jitter_ms: 1000,
            segment_ms: 300,
            ..SegmentConfig::default()
        };
        for _ in 0..1000 {
            let jitter = config.draw_roll_jitter_ms();
            assert!((0..300).contains(&jitter), "{jitter}");
        }
    }

    #[test]
    fn rejects_out_of_range_fields() {
        for config in [
            SegmentConfig {
                segment_bytes: 13,
                ..SegmentConfig::default()
            },
            SegmentConfig {
                max_index_bytes: 11,
                ..SegmentConfig::default()
            },
            SegmentConfig {
                segment_ms: 0,
                ..SegmentConfig::default()
            },
            SegmentConfig {
                segment_jitter_ms: -1,
                ..SegmentConfig::default()
            },
        ] {
            assert!(
                matches!(config.validate(), Err(Error::InvalidConfig { .. })),
                "{config:?}"
            );
        }
    }
}
