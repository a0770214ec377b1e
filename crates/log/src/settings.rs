//! A log's config at runtime: one snapshot per operation, swapped whole by [`Log::set_config`].

use seglog_segment::SegmentConfig;

use crate::config::LogConfig;
use crate::config::{Settings, segment_config};
use crate::log::Log;
use std::sync::Arc;

use crate::sync::{read, write};
use crate::{Error, Result};

impl Log {
    /// The log's current configuration (the one it was opened with, or the last one given to
    /// [`Log::set_config`]).
    pub fn config(&self) -> LogConfig {
        self.settings().config.clone()
    }

    /// Replaces the log's configuration while it runs (Kafka's dynamic topic config update).
    ///
    /// Every operation reads the config once when it starts, so the new one applies from the
    /// next call: `segment.bytes`, `segment.ms`, `max.message.bytes`, the timestamp settings and
    /// `flush.messages` from the next append; `retention.ms`, `retention.bytes` and `flush.ms`
    /// from the next [`Log::tick`] or [`Log::delete_old_segments`]; `file.delete.delay.ms` for
    /// segments deleted from then on. `segment.jitter.ms`, `segment.index.bytes`,
    /// `index.interval.bytes` and `preallocate` shape a segment when it is created, so they
    /// apply from the next roll (the active segment keeps the values it was created with, as
    /// Kafka's `LogSegment` does).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] from [`LogConfig::validate`], and for turning
    /// `remote.storage.enable` off without `remote.log.delete.on.disable` (Kafka's rule);
    /// [`Error::ConfigNotDynamic`] for
    /// `seglog.segment.cache.capacity`, which sizes a cache made at open (a `LogDir`'s is shared
    /// by all its logs). Nothing changes on error.
    pub fn set_config(&self, config: LogConfig) -> Result<()> {
        config.validate()?;
        let mut settings = write(&self.settings);
        // Kafka's `validateTurningOffRemoteStorageWithDelete` (`remote_config.rs`).
        let remote_turned_off =
            crate::remote_config::validate_remote_change(&settings.config, &config)?;
        if config.segment_cache_capacity != settings.config.segment_cache_capacity {
            return Err(Error::ConfigNotDynamic {
                key: "seglog.segment.cache.capacity",
                reason: "the segment cache is sized when the log (or its LogDir) is opened",
            });
        }
        let segment = SegmentConfig {
            io: settings.segment.io.clone(),
            cache: settings.segment.cache.clone(),
            max_decompressed_bytes: settings.segment.max_decompressed_bytes,
            ..segment_config(&config)
        };
        *settings = Arc::new(Settings { config, segment });
        if remote_turned_off {
            // The remote data goes (`remote.log.delete.on.disable`): the log starts locally.
            self.remote.set_log_start_offset(None);
        }
        Ok(())
    }

    /// The current settings: read once per operation.
    pub(crate) fn settings(&self) -> Arc<Settings> {
        Arc::clone(&read(&self.settings))
    }
}
