//! The validation of the tiered-storage topic configs (`remote.storage.enable`,
//! `local.retention.*`, `remote.log.copy.disable`), as Kafka 4.4's `LogConfig`.

/// Kafka 4.4's `LogConfig.validateTopicLogConfigValues` rules for a topic with
/// `remote.storage.enable=true` (called by [`crate::LogConfig::validate`]).
pub(crate) fn validate_remote_config(config: &crate::LogConfig) -> crate::Result<()> {
    use crate::Error;
    let invalid = |key: &'static str, value: i64, reason: &'static str| Error::InvalidConfig {
        key,
        value: value.to_string(),
        reason,
    };
    if config.cleanup_policy != crate::CleanupPolicy::Delete {
        return Err(Error::InvalidConfig {
            key: "cleanup.policy",
            value: format!("{:?}", config.cleanup_policy),
            reason: "Remote log storage only supports topics with cleanup.policy=delete or \
                     cleanup.policy being an empty list.",
        });
    }
    if config.retention_bytes > -1 && config.local_retention_bytes != -2 {
        if config.local_retention_bytes == -1 {
            return Err(invalid(
                "local.retention.bytes",
                -1,
                "Value must not be -1 as retention.bytes value is set",
            ));
        }
        if config.local_retention_bytes > config.retention_bytes {
            return Err(invalid(
                "local.retention.bytes",
                config.local_retention_bytes,
                "Value must not be more than retention.bytes property value",
            ));
        }
    }
    if config.retention_ms != -1 && config.local_retention_ms != -2 {
        if config.local_retention_ms == -1 {
            return Err(invalid(
                "local.retention.ms",
                -1,
                "Value must not be -1 as retention.ms value is set",
            ));
        }
        if config.local_retention_ms > config.retention_ms {
            return Err(invalid(
                "local.retention.ms",
                config.local_retention_ms,
                "Value must not be more than retention.ms property value",
            ));
        }
    }
    if config.remote_log_copy_disable {
        if config.local_retention_bytes != -2
            && config.local_retention_bytes != config.retention_bytes
        {
            return Err(invalid(
                "local.retention.bytes",
                config.local_retention_bytes,
                "When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and \
                 `retention.bytes` must be set to the identical value because there will be no \
                 more logs copied to the remote storage.",
            ));
        }
        if config.local_retention_ms != -2 && config.local_retention_ms != config.retention_ms {
            return Err(invalid(
                "local.retention.ms",
                config.local_retention_ms,
                "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and \
                 `retention.ms` must be set to the identical value because there will be no \
                 more logs copied to the remote storage.",
            ));
        }
    }
    Ok(())
}

/// Kafka 4.4's `LogConfig.validateTurningOffRemoteStorageWithDelete` for a config change
/// (`Log::set_config`): turning `remote.storage.enable` off requires
/// `remote.log.delete.on.disable` (read-only remote data is `remote.log.copy.disable` instead).
/// Returns whether remote storage is turned off.
pub(crate) fn validate_remote_change(
    old: &crate::LogConfig,
    new: &crate::LogConfig,
) -> crate::Result<bool> {
    let turned_off = old.remote_storage_enable && !new.remote_storage_enable;
    if turned_off && !new.remote_log_delete_on_disable {
        return Err(crate::Error::InvalidConfig {
            key: "remote.storage.enable",
            value: "false".to_string(),
            reason: "It is invalid to disable remote storage without deleting remote data. If \
                     you want to keep the remote data and turn to read only, please set \
                     `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to \
                     disable remote storage and delete all remote data, please set \
                     `remote.storage.enable=false,remote.log.delete.on.disable=true`.",
        });
    }
    Ok(turned_off)
}
