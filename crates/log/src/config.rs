//! `LogConfig`: Kafka's topic-level storage settings, their defaults, parsing and validation.

use seglog_records::TimestampType;
use seglog_segment::SegmentConfig;

use crate::{Error, Result};

/// The default bound on the bytes one compressed batch may decompress into (64 MiB; Kafka's
/// consumer has no bound, but a corrupt or hostile batch must not exhaust memory). Readers,
/// the leader's validation and the cleaner all decompress within it.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 64 << 20;

/// Which cleanup a log gets (`cleanup.policy`): retention, compaction, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanupPolicy {
    /// `delete`: time and size retention only. Default.
    #[default]
    Delete,
    /// `compact`: the log cleaner keeps the latest record of each key; no time or size
    /// retention. Appends must carry keys.
    Compact,
    /// `compact,delete` (or `delete,compact`): both.
    CompactDelete,
}

impl CleanupPolicy {
    /// Whether the log is compacted (`compact` in the list).
    pub fn compact(self) -> bool {
        matches!(self, Self::Compact | Self::CompactDelete)
    }

    /// Whether time and size retention apply (`delete` in the list).
    pub fn delete(self) -> bool {
        matches!(self, Self::Delete | Self::CompactDelete)
    }

    /// Kafka's spelling: `delete`, `compact` or `compact,delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Compact => "compact",
            Self::CompactDelete => "compact,delete",
        }
    }
}

/// `min.cleanable.dirty.ratio`, a fraction in `[0, 1]` (a newtype so [`LogConfig`] stays `Eq`:
/// two ratios are equal when their bits are).
#[derive(Debug, Clone, Copy)]
pub struct DirtyRatio(pub f64);

impl PartialEq for DirtyRatio {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for DirtyRatio {}

/// Storage settings of one log, named and defaulted as Kafka's topic configs.
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
    /// The threads a [`crate::LogDir`] loads (and after an unclean shutdown recovers) its
    /// partitions on at open, each partition one job, served as it finishes
    /// (`num.recovery.threads.per.data.dir`, a broker setting: only the config given to
    /// [`crate::LogDir::open`] counts, a topic override of it is ignored; a standalone
    /// [`crate::Log`] loads on its caller's thread). Default: 2 (Kafka 4.x). Valid: >= 1.
    pub num_recovery_threads_per_data_dir: i32,
    /// `delete`, `compact` or both (`cleanup.policy`). Default: `delete`.
    pub cleanup_policy: CleanupPolicy,
    /// The cleaner picks a log once its dirty bytes (above the cleaner checkpoint, below the
    /// first uncleanable offset) exceed this fraction of its cleanable bytes
    /// (`min.cleanable.dirty.ratio`). Default: 0.5. Valid: 0 to 1.
    pub min_cleanable_dirty_ratio: DirtyRatio,
    /// A record stays uncompacted at least this long after it was appended, measured by its
    /// segment's largest timestamp (`min.compaction.lag.ms`). Default: 0. Valid: >= 0.
    pub min_compaction_lag_ms: i64,
    /// A dirty segment whose first batch is older than this makes the log due whatever its
    /// dirty ratio, and rolls the active segment at this age (`max.compaction.lag.ms`).
    /// Default: i64::MAX. Valid: >= 1, and not below `min.compaction.lag.ms`.
    pub max_compaction_lag_ms: i64,
    /// How long the cleaner keeps tombstones and transaction markers after the round that
    /// first saw them (KIP-534's delete horizon, `delete.retention.ms`). Default: 86400000
    /// (1 day). Valid: >= 0.
    pub delete_retention_ms: i64,
    /// The memory of the cleaner's offset map, in bytes (`log.cleaner.dedupe.buffer.size`,
    /// a broker setting in Kafka; seglog's cleaner has one map per round). 24 bytes per key
    /// (a 128-bit hash and an offset), filled to 90% (`log.cleaner.io.buffer.load.factor`):
    /// a round whose dirty section holds more distinct keys ends early, where the map filled,
    /// and the next round goes on from there. Default: 134217728 (128 MiB). Valid: >= 48.
    pub cleaner_dedupe_buffer_size: i64,
    /// How long a producer id's state is kept after its last write, unless it has a
    /// transaction open (`producer.id.expiration.ms`, a broker setting); expired ids are
    /// removed by `Log::tick` and ignored when a snapshot is loaded. Default: 86400000
    /// (1 day). Valid: >= 1.
    pub producer_id_expiration_ms: i64,
    /// Tier this topic's sealed segments to the attached remote tier (`remote.storage.enable`,
    /// KIP-405): local retention then follows `local.retention.*` and deletes only segments
    /// whose copy finished. Requires `cleanup.policy=delete` (a tiered log is never compacted).
    /// Default: false.
    pub remote_storage_enable: bool,
    /// How long local segments are kept once copied (`local.retention.ms`); -2 means
    /// `retention.ms`, -1 unlimited. Default: -2. Valid: >= -2; with `retention.ms` set
    /// (not -1), not -1 and not above it.
    pub local_retention_ms: i64,
    /// How many local bytes are kept once copied (`local.retention.bytes`); -2 means
    /// `retention.bytes`, -1 unlimited. Default: -2. Valid: >= -2; with `retention.bytes` set
    /// (not negative), not -1 and not above it.
    pub local_retention_bytes: i64,
    /// Stop copying to the remote tier, keeping what is there readable
    /// (`remote.log.copy.disable`, KIP-950). Local retention then uses `retention.*`, which
    /// `local.retention.*` must equal (or be -2). Default: false.
    pub remote_log_copy_disable: bool,
    /// When `remote.storage.enable` goes from true to false, delete the remote data
    /// (`remote.log.delete.on.disable`, KIP-950); turning tiering off without it is refused.
    /// Default: false.
    pub remote_log_delete_on_disable: bool,
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
            num_recovery_threads_per_data_dir: 2,
            cleanup_policy: CleanupPolicy::Delete,
            min_cleanable_dirty_ratio: DirtyRatio(0.5),
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
            cleaner_dedupe_buffer_size: 128 * 1024 * 1024,
            producer_id_expiration_ms: 86_400_000,
            remote_storage_enable: false,
            local_retention_ms: -2,
            local_retention_bytes: -2,
            remote_log_copy_disable: false,
            remote_log_delete_on_disable: false,
        }
    }
}

/// Where a key may be set: in a topic override ([`crate::TopicConfigs`], Kafka's topic-level
/// names) or only in the `LogDir`'s default config (broker-level aliases such as
/// `log.retention.hours`, broker settings such as `producer.id.expiration.ms`, root-wide ones
/// such as `seglog.segment.cache.capacity`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Topic,
    DirOnly,
}

use Scope::{DirOnly, Topic};

/// The one table of keys [`LogConfig::set`] accepts, in [`CONFIG_KEYS`] order:
/// [`CONFIG_KEYS`] lists them all, [`crate::TOPIC_CONFIG_KEYS`] those of scope `Topic`.
const KEYS: &[(&str, Scope)] = &[
    ("segment.bytes", Topic),
    ("segment.ms", Topic),
    ("segment.jitter.ms", Topic),
    ("segment.index.bytes", Topic),
    ("index.interval.bytes", Topic),
    ("retention.ms", Topic),
    ("retention.bytes", Topic),
    ("flush.messages", Topic),
    ("flush.ms", Topic),
    ("file.delete.delay.ms", Topic),
    ("max.message.bytes", Topic),
    ("preallocate", Topic),
    ("message.timestamp.type", Topic),
    ("message.timestamp.before.max.ms", Topic),
    ("message.timestamp.after.max.ms", Topic),
    ("seglog.segment.cache.capacity", DirOnly),
    ("num.recovery.threads.per.data.dir", DirOnly),
    ("cleanup.policy", Topic),
    ("min.cleanable.dirty.ratio", Topic),
    ("min.compaction.lag.ms", Topic),
    ("max.compaction.lag.ms", Topic),
    ("delete.retention.ms", Topic),
    ("producer.id.expiration.ms", DirOnly),
    ("log.segment.bytes", DirOnly),
    ("log.roll.ms", DirOnly),
    ("log.roll.hours", DirOnly),
    ("log.roll.jitter.ms", DirOnly),
    ("log.index.size.max.bytes", DirOnly),
    ("log.index.interval.bytes", DirOnly),
    ("log.retention.ms", DirOnly),
    ("log.retention.minutes", DirOnly),
    ("log.retention.hours", DirOnly),
    ("log.retention.bytes", DirOnly),
    ("log.flush.interval.messages", DirOnly),
    ("log.flush.interval.ms", DirOnly),
    ("log.segment.delete.delay.ms", DirOnly),
    ("message.max.bytes", DirOnly),
    ("log.preallocate", DirOnly),
    ("log.message.timestamp.type", DirOnly),
    ("log.cleanup.policy", DirOnly),
    ("log.cleaner.min.cleanable.ratio", DirOnly),
    ("log.cleaner.min.compaction.lag.ms", DirOnly),
    ("log.cleaner.max.compaction.lag.ms", DirOnly),
    ("log.cleaner.delete.retention.ms", DirOnly),
    ("log.cleaner.dedupe.buffer.size", DirOnly),
    ("remote.storage.enable", Topic),
    ("local.retention.ms", Topic),
    ("local.retention.bytes", Topic),
    ("remote.log.copy.disable", Topic),
    ("remote.log.delete.on.disable", Topic),
    ("log.local.retention.ms", DirOnly),
    ("log.local.retention.bytes", DirOnly),
];

/// Every key [`LogConfig::set`] accepts: Kafka's topic-level names, then the broker-level
/// aliases (`log.*`) that map onto the same fields.
pub const CONFIG_KEYS: &[&str] = &keys_of::<{ KEYS.len() }>(None);

/// The keys a topic override may set (exported as [`crate::TOPIC_CONFIG_KEYS`]).
pub(crate) const TOPIC_KEYS: &[&str] = &keys_of::<{ count(Topic) }>(Some(Topic));

/// The keys of `KEYS` of `scope` (all for `None`), in order; `N` is their number.
const fn keys_of<const N: usize>(scope: Option<Scope>) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < KEYS.len() {
        if matches_scope(KEYS[i].1, scope) {
            out[n] = KEYS[i].0;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "N is not the number of keys of the scope");
    out
}

/// How many keys of `KEYS` have `scope`.
const fn count(scope: Scope) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < KEYS.len() {
        if matches_scope(KEYS[i].1, Some(scope)) {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn matches_scope(scope: Scope, wanted: Option<Scope>) -> bool {
    match wanted {
        None => true,
        Some(Topic) => matches!(scope, Topic),
        Some(DirOnly) => matches!(scope, DirOnly),
    }
}

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
            "num.recovery.threads.per.data.dir" => {
                self.num_recovery_threads_per_data_dir =
                    int("num.recovery.threads.per.data.dir", value, 1)?;
            }
            "cleanup.policy" | "log.cleanup.policy" => {
                self.cleanup_policy = cleanup_policy(value)?;
            }
            "min.cleanable.dirty.ratio" | "log.cleaner.min.cleanable.ratio" => {
                let ratio: f64 = value
                    .parse()
                    .map_err(|_| invalid("min.cleanable.dirty.ratio", value, "not a number"))?;
                self.min_cleanable_dirty_ratio = DirtyRatio(ratio);
                check_ratio(ratio, value)?;
            }
            "min.compaction.lag.ms" | "log.cleaner.min.compaction.lag.ms" => {
                self.min_compaction_lag_ms = long("min.compaction.lag.ms", value, 0)?;
            }
            "max.compaction.lag.ms" | "log.cleaner.max.compaction.lag.ms" => {
                self.max_compaction_lag_ms = long("max.compaction.lag.ms", value, 1)?;
            }
            "delete.retention.ms" | "log.cleaner.delete.retention.ms" => {
                self.delete_retention_ms = long("delete.retention.ms", value, 0)?;
            }
            "log.cleaner.dedupe.buffer.size" => {
                self.cleaner_dedupe_buffer_size =
                    long("log.cleaner.dedupe.buffer.size", value, 48)?;
            }
            "remote.storage.enable" => {
                self.remote_storage_enable = boolean("remote.storage.enable", value)?;
            }
            "local.retention.ms" | "log.local.retention.ms" => {
                self.local_retention_ms = long("local.retention.ms", value, -2)?;
            }
            "local.retention.bytes" | "log.local.retention.bytes" => {
                self.local_retention_bytes = long("local.retention.bytes", value, -2)?;
            }
            "remote.log.copy.disable" => {
                self.remote_log_copy_disable = boolean("remote.log.copy.disable", value)?;
            }
            "remote.log.delete.on.disable" => {
                self.remote_log_delete_on_disable = boolean("remote.log.delete.on.disable", value)?;
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

    /// Checks every field against Kafka's valid range and the cross-field rules.
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
            "num.recovery.threads.per.data.dir",
            self.num_recovery_threads_per_data_dir.into(),
            1,
        )?;
        let ratio = self.min_cleanable_dirty_ratio.0;
        check_ratio(ratio, &ratio.to_string())?;
        check("min.compaction.lag.ms", self.min_compaction_lag_ms, 0)?;
        check("max.compaction.lag.ms", self.max_compaction_lag_ms, 1)?;
        check("delete.retention.ms", self.delete_retention_ms, 0)?;
        check(
            "log.cleaner.dedupe.buffer.size",
            self.cleaner_dedupe_buffer_size,
            48,
        )?;
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms {
            return Err(invalid(
                "max.compaction.lag.ms",
                &self.max_compaction_lag_ms.to_string(),
                "must not be below min.compaction.lag.ms",
            ));
        }
        check(
            "producer.id.expiration.ms",
            self.producer_id_expiration_ms,
            1,
        )?;
        check("local.retention.ms", self.local_retention_ms, -2)?;
        check("local.retention.bytes", self.local_retention_bytes, -2)?;
        if self.remote_storage_enable {
            crate::remote_config::validate_remote_config(self)?;
        }
        Ok(())
    }

    /// The retention time of the local segments (Kafka's `UnifiedLog.localRetentionMs`):
    /// `local.retention.ms` (`retention.ms` for -2) while segments are copied to a remote tier
    /// (`remote.storage.enable` and not `remote.log.copy.disable`), else `retention.ms`.
    pub fn local_retention_ms_effective(&self) -> i64 {
        if self.remote_copy_enabled() && self.local_retention_ms != -2 {
            self.local_retention_ms
        } else {
            self.retention_ms
        }
    }

    /// The retention size of the local segments (Kafka's `UnifiedLog.localRetentionSize`), as
    /// [`LogConfig::local_retention_ms_effective`] for `local.retention.bytes`.
    pub fn local_retention_bytes_effective(&self) -> i64 {
        if self.remote_copy_enabled() && self.local_retention_bytes != -2 {
            self.local_retention_bytes
        } else {
            self.retention_bytes
        }
    }

    /// Whether segments are copied to a remote tier: `remote.storage.enable` and not
    /// `remote.log.copy.disable` (Kafka's `remoteLogEnabledAndRemoteCopyEnabled`).
    pub fn remote_copy_enabled(&self) -> bool {
        self.remote_storage_enable && !self.remote_log_copy_disable
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

/// Kafka's list syntax: `delete`, `compact`, or both in either order (spaces allowed).
fn cleanup_policy(value: &str) -> Result<CleanupPolicy> {
    let (mut compact, mut delete) = (false, false);
    for item in value.split(',').map(str::trim) {
        match item.to_ascii_lowercase().as_str() {
            "compact" => compact = true,
            "delete" => delete = true,
            _ => {
                return Err(invalid(
                    "cleanup.policy",
                    value,
                    "expected delete, compact or compact,delete",
                ));
            }
        }
    }
    Ok(match (compact, delete) {
        (true, true) => CleanupPolicy::CompactDelete,
        (true, false) => CleanupPolicy::Compact,
        _ => CleanupPolicy::Delete,
    })
}

fn check_ratio(ratio: f64, value: &str) -> Result<()> {
    if (0.0..=1.0).contains(&ratio) {
        Ok(())
    } else {
        Err(invalid(
            "min.cleanable.dirty.ratio",
            value,
            "must be between 0 and 1",
        ))
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
    fn cleaner_settings_have_kafkas_names_defaults_and_ranges() {
        let c = LogConfig::default();
        assert_eq!(c.cleanup_policy, CleanupPolicy::Delete);
        assert_eq!(c.min_cleanable_dirty_ratio, DirtyRatio(0.5));
        assert_eq!(c.min_compaction_lag_ms, 0);
        assert_eq!(c.max_compaction_lag_ms, i64::MAX);
        assert_eq!(c.delete_retention_ms, 86_400_000);
        assert_eq!(c.cleaner_dedupe_buffer_size, 134_217_728);
        let c = LogConfig::from_pairs([
            "cleanup.policy=delete, compact",
            "min.cleanable.dirty.ratio=0.1",
            "min.compaction.lag.ms=5",
            "max.compaction.lag.ms=10",
            "delete.retention.ms=0",
        ])
        .unwrap();
        assert_eq!(c.cleanup_policy, CleanupPolicy::CompactDelete);
        assert!(c.cleanup_policy.compact() && c.cleanup_policy.delete());
        assert_eq!(c.min_cleanable_dirty_ratio, DirtyRatio(0.1));
        for bad in [
            "cleanup.policy=shrink",
            "min.cleanable.dirty.ratio=1.5",
            "min.cleanable.dirty.ratio=x",
            "max.compaction.lag.ms=0",
            "delete.retention.ms=-1",
        ] {
            assert!(LogConfig::from_pairs([bad]).is_err(), "{bad}");
        }
        let e = LogConfig::from_pairs(["min.compaction.lag.ms=10", "max.compaction.lag.ms=5"])
            .unwrap_err();
        assert!(e.to_string().contains("max.compaction.lag.ms"), "{e}");
    }

    #[test]
    fn every_listed_key_is_accepted() {
        for key in CONFIG_KEYS {
            let mut c = LogConfig::default();
            let value = match *key {
                "preallocate"
                | "log.preallocate"
                | "remote.storage.enable"
                | "remote.log.copy.disable"
                | "remote.log.delete.on.disable" => "true",
                "message.timestamp.type" | "log.message.timestamp.type" => "CreateTime",
                "cleanup.policy" | "log.cleanup.policy" => "compact,delete",
                "min.cleanable.dirty.ratio" | "log.cleaner.min.cleanable.ratio" => "0.25",
                _ => "100",
            };
            c.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
    }
}

/// A log's [`LogConfig`] and the segment layer's view of it, always changed together.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) config: LogConfig,
    pub(crate) segment: SegmentConfig,
}

/// The segment layer's view of a [`LogConfig`] (without a cache).
pub(crate) fn segment_config(config: &LogConfig) -> SegmentConfig {
    // Kafka's `maxSegmentMs`: a compacted log rolls by `max.compaction.lag.ms` too, so no
    // record waits in the (uncleanable) active segment longer than that.
    let segment_ms = if config.cleanup_policy.compact() && config.max_compaction_lag_ms > 0 {
        config.segment_ms.min(config.max_compaction_lag_ms)
    } else {
        config.segment_ms
    };
    SegmentConfig {
        segment_bytes: config.segment_bytes.max(14) as u32,
        index_interval_bytes: config.index_interval_bytes.max(0) as u32,
        max_index_bytes: config.segment_index_bytes.max(12) as u32,
        preallocate: config.preallocate,
        segment_ms,
        segment_jitter_ms: config.segment_jitter_ms,
        ..SegmentConfig::default()
    }
}
