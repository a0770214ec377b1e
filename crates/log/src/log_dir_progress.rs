//! [`PartitionLoaded`]: the progress of a [`crate::LogDir`] open, one report per partition as
//! its load (after an unclean shutdown, its recovery) finishes, in completion order. Kafka logs
//! the same per partition ("Completed load of ... (n/total completed in dir)").

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::Error;
use crate::log::Log;
use crate::topic_partition::TopicPartition;

/// One partition whose load finished during [`crate::LogDir::open_with_progress`], given to
/// its callback on the opening thread while the other partitions may still be loading.
#[derive(Debug)]
#[non_exhaustive]
pub struct PartitionLoaded<'a> {
    /// The partition.
    pub topic_partition: &'a TopicPartition,
    /// Its directory.
    pub dir: &'a Path,
    /// The loaded log, ready to serve reads and appends now (the open does not wait for the
    /// other partitions to hand it out); or the error its load failed with: the partition is
    /// offline ([`crate::LogDir::offline_partitions`]), the other partitions are served.
    pub log: Result<&'a Arc<Log>, &'a Arc<Error>>,
    /// Partitions finished so far, this one included (1..=`total`).
    pub done: usize,
    /// Partitions the open loads.
    pub total: usize,
    /// The log's segments (0 when offline).
    pub segments: usize,
    /// The bytes of the log's `.log` files (0 when offline).
    pub bytes: u64,
    /// The bytes the load's recovery validated or cut in this partition (0 after a clean
    /// shutdown, when nothing was recovered).
    pub recovered_bytes: u64,
    /// `recovered_bytes` summed over the partitions finished so far.
    pub recovered_bytes_total: u64,
    /// How long its load took (on its recovery thread).
    pub took: Duration,
}
