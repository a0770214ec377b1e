//! [`PartitionLoaded`]: the progress of a [`crate::LogDir`] open, one report per partition as
//! its load (after an unclean shutdown, its recovery) finishes, in completion order. Kafka logs
//! the same per partition ("Completed load of ... (n/total completed in dir)").

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::Error;
use crate::log::Log;
use crate::observe::duration_ms;
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

impl PartitionLoaded<'_> {
    /// The event of this partition of the open of `root` (docs/observability.md; Kafka's
    /// "Completed load of ... (n/total completed in dir)"): INFO with the counts, ERROR when
    /// its load failed (the partition is offline). Emitted on the opening thread.
    pub(crate) fn emit(&self, root: &Path) {
        let dir = self.dir.display();
        let root = root.display();
        let topic_partition = self.topic_partition.to_string();
        match self.log {
            Ok(_) => tracing::info!(
                %dir, %root, topic_partition, done = self.done, total = self.total,
                segments = self.segments, bytes = self.bytes,
                recovered_bytes = self.recovered_bytes,
                recovered_bytes_total = self.recovered_bytes_total,
                duration_ms = duration_ms(self.took), "partition loaded"
            ),
            Err(error) => tracing::error!(
                %dir, %root, topic_partition, done = self.done, total = self.total,
                error = %error, duration_ms = duration_ms(self.took),
                "partition offline: its load failed"
            ),
        }
    }
}
