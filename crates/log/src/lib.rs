//! seglog: an embeddable, Kafka-compatible segmented commit log.
//!
//! (Work in progress: the `Log` type lands once `seglog-segment` does.)

#![forbid(unsafe_code)]

mod checkpoint;
mod clean_shutdown;
mod clock;
mod config;
mod deletion;
mod error;
mod fsutil;
mod group_commit;
mod home;
mod lock;
#[cfg(all(test, loom))]
mod loom_models;
mod retention;
mod segment_map;
mod sync;
mod topic_partition;
mod validate;
mod view;

pub use checkpoint::{
    LOG_START_OFFSET_CHECKPOINT, OffsetCheckpointFile, RECOVERY_POINT_CHECKPOINT,
};
pub use clean_shutdown::CLEAN_SHUTDOWN_FILE;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{CONFIG_KEYS, LogConfig, TimestampType};
pub use error::{AppendErrorKind, CorruptKind, Error};
pub use lock::LOCK_FILE;
pub use retention::{DeletedSegment, RetentionReason, RetentionReport};
pub use topic_partition::{
    PartitionDirKind, PartitionDirName, TopicPartition, parse_partition_dir_name,
};
pub use view::{Isolation, OffsetMetadata};

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
