//! `LogConfig`: Kafka's topic-level storage settings, their defaults, parsing and validation.

use seglog_records::TimestampType;

use crate::{Error, Result};

/// Storage settings of one log, named and defaulted as Kafka's topic configs (spec §6).
///
/// A plain struct: build it with `LogConfig::default()` and field updates, or from Kafka's
/// `key=value` names with [`LogConfig::set`] / [`LogConfig::from_pairs`]. `Log::open` calls
/// [`LogConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Roll when the active segment would exceed this many bytes (`segment.bytes`).
    /// Default: 1073741824 (1 GiB). Valid: >= 14 (Kafka's pre-4.0 floor; Kafka 4.0 raised the
    /// topic-level floor to 1 MiB, seglog keeps 14 so small segments can be tested).
    pub segment_bytes: i32,
    /// Roll when the active segment's first timestamp is older than this (`segment.ms`).
    /// Default: 604800000 (7 days). Valid: >= 1.
    pub segment_ms: i64,
    /// Random per-segment reduction of `segment.ms` (`segment.jitter.ms`). Default: 0. Valid: >= 0.
    pub segment_jitter_ms: i64,
    /// Preallocated size of each `.index` / `.timeindex` (`segment.index.bytes`).
    /// Default: 10485760. Valid: >= 12 (one time-index entry; Kafka accepts 4 but then fails to
    /// create the index).
    pub segment_index_bytes: i32,
    /// Bytes between offset-index entries, strict `>` (`index.interval.bytes`). Default: 4096.
    /// Valid: >= 0.
    pub index_interval_bytes: i32,
    /// Delete segments whose largest timestamp is older than this (`retention.ms`).
    /// Default: 604800000 (7 days). Valid: >= -1; negative means unlimited.
    pub retention_ms: i64,
    /// Keep at least this many bytes (`retention.bytes`): as Kafka, retention deletes the
    /// oldest segment only while the log without it still holds at least this many bytes, so
    /// the log stays at or above the limit (by up to a segment), never below it.
    /// Default: -1 (unlimited). Any value; negative means unlimited.
    pub retention_bytes: i64,
    /// Flush when this many messages are unflushed (`flush.messages`).
    /// Default: i64::MAX (never). Valid: >= 1.
    pub flush_messages: i64,
    /// Flush when the last flush is older than this, checked by `Log::tick` (`flush.ms`).
    /// Default: i64::MAX (never). Valid: >= 0.
    pub flush_ms: i64,
    /// Delay between renaming a deleted segment to `.deleted` and unlinking it
    /// (`file.delete.delay.ms`). Default: 60000. Valid: >= 0.
    pub file_delete_delay_ms: i64,
    /// Largest batch accepted from a leader append, including its 12-byte log overhead
    /// (`max.message.bytes`). Default: 1048588. Valid: >= 0.
    pub max_message_bytes: i32,
    /// Preallocate new `.log` files to `segment.bytes` (`preallocate`). Default: false.
    pub preallocate: bool,
    /// `CreateTime` or `LogAppendTime` (`message.timestamp.type`). Default: `CreateTime`.
    pub message_timestamp_type: TimestampType,
    /// With `CreateTime`, reject leader batches whose max timestamp is more than this far in the
    /// past (`message.timestamp.before.max.ms`). Default: i64::MAX. Valid: >= 0.
    pub message_timestamp_before_max_ms: i64,
    /// With `CreateTime`, reject leader batches whose max timestamp is more than this far in the
    /// future (`message.timestamp.after.max.ms`). Default: 3600000 (Kafka 4.0). Valid: >= 0.
    pub message_timestamp_after_max_ms: i64,
    /// How many segments may have their files open at once (`seglog.segment.cache.capacity`,
    /// no Kafka setting; Kafka keeps every `.log` open and maps indexes lazily). Sealed
    /// segments are opened on first use and closed when the cache evicts them (one `.log`
    /// descriptor and two index maps each); active segments are always open and not counted
    /// against it when nothing else can be evicted. One cache per [`crate::LogDir`], shared by
    /// all its logs (the root's config decides); a standalone [`crate::Log`] has its own.
    /// Default: 256. Valid: >= 1.
    pub segment_cache_capacity: i64,
    /// How long a producer id's state is kept after its last write, unless it has a
    /// transaction open (`producer.id.expiration.ms`, a broker setting); expired ids are
    /// removed by `Log::tick` and ignored when a snapshot is loaded. Default: 86400000
    /// (1 day). Valid: >= 1.
    pub producer_id_expiration_ms: i64,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            max_message_bytes: 1024 * 1024 + 12,
            preallocate: false,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: 3_600_000,
            segment_cache_capacity: seglog_segment::DEFAULT_SEGMENT_CACHE_CAPACITY as i64,
            producer_id_expiration_ms: 86_400_000,
        }
    }
}

/// Every key [`LogConfig::set`] accepts: Kafka's topic-level names, then the broker-level
/// aliases (`log.*`) that map onto the same fields.
pub const CONFIG_KEYS: &[&str] = &[
    "segment.bytes",
    "segment.ms",
    "segment.jitter.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "retention.ms",
    "retention.bytes",
    "flush.messages",
    "flush.ms",
    "file.delete.delay.ms",
    "max.message.bytes",
    "preallocate",
    "message.timestamp.type",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "seglog.segment.cache.capacity",
    "producer.id.expiration.ms",
    "log.segment.bytes",
    "log.roll.ms",
    "log.roll.hours",
    "log.roll.jitter.ms",
    "log.index.size.max.bytes",
    "log.index.interval.bytes",
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.segment.delete.delay.ms",
    "message.max.bytes",
    "log.preallocate",
    "log.message.timestamp.type",
];

impl LogConfig {
    /// Sets one setting from Kafka's `key` and textual `value` (topic names such as
    /// `segment.bytes`, or broker names such as `log.segment.bytes` / `log.retention.hours`).
    ///
    /// Only the value's own syntax and range are checked here; cross-field checks are in
    /// [`LogConfig::validate`].
    ///
    /// # Errors
    /// [`Error::UnknownConfig`] for a key not in [`CONFIG_KEYS`]; [`Error::InvalidConfig`] when the
    /// value does not parse or is out of the setting's range.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let value = value.trim();
        match key.trim() {
            "segment.bytes" | "log.segment.bytes" => {
                self.segment_bytes = int("segment.bytes", value, 14)?;
            }
            "segment.ms" | "log.roll.ms" => self.segment_ms = long("segment.ms", value, 1)?,
            "log.roll.hours" => {
                self.segment_ms = scaled("segment.ms", value, 1, 60 * 60 * 1000)?;
            }
            "segment.jitter.ms" | "log.roll.jitter.ms" => {
                self.segment_jitter_ms = long("segment.jitter.ms", value, 0)?;
            }
            "segment.index.bytes" | "log.index.size.max.bytes" => {
                self.segment_index_bytes = int("segment.index.bytes", value, 12)?;
            }
            "index.interval.bytes" | "log.index.interval.bytes" => {
                self.index_interval_bytes = int("index.interval.bytes", value, 0)?;
            }
            "retention.ms" | "log.retention.ms" => {
                self.retention_ms = long("retention.ms", value, -1)?;
            }
            "log.retention.minutes" => {
                self.retention_ms = scaled("retention.ms", value, -1, 60 * 1000)?;
            }
            "log.retention.hours" => {
                self.retention_ms = scaled("retention.ms", value, -1, 60 * 60 * 1000)?;
            }
            "retention.bytes" | "log.retention.bytes" => {
                self.retention_bytes = long("retention.bytes", value, i64::MIN)?;
            }
            "flush.messages" | "log.flush.interval.messages" => {
                self.flush_messages = long("flush.messages", value, 1)?;
            }
            "flush.ms" | "log.flush.interval.ms" => self.flush_ms = long("flush.ms", value, 0)?,
            "file.delete.delay.ms" | "log.segment.delete.delay.ms" => {
                self.file_delete_delay_ms = long("file.delete.delay.ms", value, 0)?;
            }
            "producer.id.expiration.ms" => {
                self.producer_id_expiration_ms = long("producer.id.expiration.ms", value, 1)?;
            }
            "max.message.bytes" | "message.max.bytes" => {
                self.max_message_bytes = int("max.message.bytes", value, 0)?;
            }
            "preallocate" | "log.preallocate" => self.preallocate = boolean("preallocate", value)?,
            "message.timestamp.type" | "log.message.timestamp.type" => {
                self.message_timestamp_type = match value {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => {
                        return Err(invalid(
                            "message.timestamp.type",
                            value,
                            "expected CreateTime or LogAppendTime",
                        ));
                    }
                };
            }
            "message.timestamp.before.max.ms" => {
                self.message_timestamp_before_max_ms =
                    long("message.timestamp.before.max.ms", value, 0)?;
            }
            "message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max_ms =
                    long("message.timestamp.after.max.ms", value, 0)?;
            }
            "seglog.segment.cache.capacity" => {
                self.segment_cache_capacity = long("seglog.segment.cache.capacity", value, 1)?;
            }
            other => {
                return Err(Error::UnknownConfig {
                    key: other.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Builds a config from `key=value` strings (each may also be passed as one `"k=v"` item),
    /// starting from the defaults, then validates it.
    ///
    /// # Errors
    /// As [`LogConfig::set`] and [`LogConfig::validate`]; an item without `=` is
    /// [`Error::InvalidConfig`].
    pub fn from_pairs<I, S>(pairs: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut config = Self::default();
        for pair in pairs {
            let pair = pair.as_ref();
            let Some((key, value)) = pair.split_once('=') else {
                return Err(invalid("key=value", pair, "expected key=value"));
            };
            config.set(key, value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks every field against Kafka's valid range (spec §6) and the cross-field rules.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending setting.
    pub fn validate(&self) -> Result<()> {
        check("segment.bytes", self.segment_bytes.into(), 14)?;
        check("segment.ms", self.segment_ms, 1)?;
        check("segment.jitter.ms", self.segment_jitter_ms, 0)?;
        check("segment.index.bytes", self.segment_index_bytes.into(), 12)?;
        check("index.interval.bytes", self.index_interval_bytes.into(), 0)?;
        check("retention.ms", self.retention_ms, -1)?;
        check("flush.messages", self.flush_messages, 1)?;
        check("flush.ms", self.flush_ms, 0)?;
        check("file.delete.delay.ms", self.file_delete_delay_ms, 0)?;
        check("max.message.bytes", self.max_message_bytes.into(), 0)?;
        check(
            "message.timestamp.before.max.ms",
            self.message_timestamp_before_max_ms,
            0,
        )?;
        check(
            "message.timestamp.after.max.ms",
            self.message_timestamp_after_max_ms,
            0,
        )?;
        check(
            "seglog.segment.cache.capacity",
            self.segment_cache_capacity,
            1,
        )?;
        check(
            "producer.id.expiration.ms",
            self.producer_id_expiration_ms,
            1,
        )?;
        Ok(())
    }

    /// Whether time-based retention is on (`retention.ms >= 0`).
    pub fn time_retention_enabled(&self) -> bool {
        self.retention_ms >= 0
    }

    /// Whether size-based retention is on (`retention.bytes >= 0`).
    pub fn size_retention_enabled(&self) -> bool {
        self.retention_bytes >= 0
    }
}

fn invalid(key: &'static str, value: &str, reason: &'static str) -> Error {
    Error::InvalidConfig {
        key,
        value: value.to_owned(),
        reason,
    }
}

fn check(key: &'static str, value: i64, min: i64) -> Result<()> {
    if value < min {
        return Err(Error::InvalidConfig {
            key,
            value: value.to_string(),
            reason: below_reason(min),
        });
    }
    Ok(())
}

fn below_reason(min: i64) -> &'static str {
    match min {
        14 => "must be at least 14",
        12 => "must be at least 12 (one time-index entry)",
        1 => "must be at least 1",
        0 => "must not be negative",
        -1 => "must be at least -1",
        _ => "out of range",
    }
}

fn long(key: &'static str, value: &str, min: i64) -> Result<i64> {
    let parsed: i64 = value
        .parse()
        .map_err(|_| invalid(key, value, "not a 64-bit integer"))?;
    check(key, parsed, min)?;
    Ok(parsed)
}

fn int(key: &'static str, value: &str, min: i64) -> Result<i32> {
    let parsed: i32 = value
        .parse()
        .map_err(|_| invalid(key, value, "not a 32-bit integer"))?;
    check(key, parsed.into(), min)?;
    Ok(parsed)
}

/// Parses a value given in a coarser unit (hours, minutes) into milliseconds; negative values
/// (unlimited) stay -1.
fn scaled(key: &'static str, value: &str, min: i64, factor: i64) -> Result<i64> {
    let parsed = long(key, value, min)?;
    if parsed < 0 {
        return Ok(-1);
    }
    Ok(parsed.saturating_mul(factor))
}

fn boolean(key: &'static str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, value, "expected true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let c = LogConfig::default();
        assert_eq!(c.segment_bytes, 1_073_741_824);
        assert_eq!(c.segment_ms, 604_800_000);
        assert_eq!(c.segment_index_bytes, 10_485_760);
        assert_eq!(c.index_interval_bytes, 4096);
        assert_eq!(c.retention_ms, 604_800_000);
        assert_eq!(c.retention_bytes, -1);
        assert_eq!(c.flush_messages, i64::MAX);
        assert_eq!(c.file_delete_delay_ms, 60_000);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert!(!c.preallocate);
        assert_eq!(c.message_timestamp_type, TimestampType::CreateTime);
        c.validate().unwrap();
    }

    #[test]
    fn pairs_with_kafka_and_broker_names() {
        let c = LogConfig::from_pairs([
            "segment.bytes=1048576",
            "retention.ms=-1",
            "log.retention.bytes=5000",
            "message.timestamp.type=LogAppendTime",
            "preallocate=TRUE",
            "log.roll.hours=2",
        ])
        .unwrap();
        assert_eq!(c.segment_bytes, 1_048_576);
        assert_eq!(c.retention_ms, -1);
        assert_eq!(c.retention_bytes, 5000);
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert!(c.preallocate);
        assert_eq!(c.segment_ms, 7_200_000);
    }

    #[test]
    fn errors_name_the_setting() {
        let mut c = LogConfig::default();
        let e = c.set("segment.bytes", "13").unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidConfig {
                    key: "segment.bytes",
                    ..
                }
            ),
            "{e}"
        );
        let e = c.set("segment.bytes", "3000000000").unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidConfig {
                    key: "segment.bytes",
                    ..
                }
            ),
            "{e}"
        );
        let e = c.set("retention.ms", "-2").unwrap_err();
        assert!(e.to_string().contains("retention.ms"), "{e}");
        let e = c.set("no.such.key", "1").unwrap_err();
        assert!(matches!(e, Error::UnknownConfig { .. }));
        let e = c.set("message.timestamp.type", "Now").unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidConfig {
                key: "message.timestamp.type",
                ..
            }
        ));
        assert!(LogConfig::from_pairs(["segment.bytes"]).is_err());
    }

    #[test]
    fn validate_catches_struct_literals() {
        let c = LogConfig {
            flush_messages: 0,
            ..LogConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidConfig {
                key: "flush.messages",
                ..
            }
        ));
        let c = LogConfig {
            segment_index_bytes: 8,
            ..LogConfig::default()
        };
        assert!(c.validate().is_err());
    }

    #[test]
    fn every_listed_key_is_accepted() {
        for key in CONFIG_KEYS {
            let mut c = LogConfig::default();
            let value = match *key {
                "preallocate" | "log.preallocate" => "true",
                "message.timestamp.type" | "log.message.timestamp.type" => "CreateTime",
                _ => "100",
            };
            c.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
    }
}
