//! The contract between a log and its remote tier (KIP-405 tiered storage, seglog's side):
//! what a tier implementation (`seglog-tiered`, or a test's in-memory tier) must provide, and
//! what a [`crate::Log`] hands to a copier.
//!
//! seglog itself never talks to an object store. A tier is a [`RemoteTier`] trait object,
//! synchronous (an `object_store` implementation blocks on its own runtime): it lists the
//! segments whose copy finished ([`RemoteTier::segments`], Kafka's
//! `RemoteLogMetadataManager.listRemoteLogSegments` in state `COPY_SEGMENT_FINISHED`), and fetches
//! a byte range of a segment's `.log` ([`RemoteTier::fetch_log`], Kafka's
//! `RemoteStorageManager.fetchLogSegment`) or one of its indexes ([`RemoteTier::fetch_index`],
//! `RemoteStorageManager.fetchIndex`).
//!
//! The other direction, from the log to a copier: [`crate::Log::tier_candidates`] lists the
//! sealed segments eligible for copy as [`SealedSegmentFiles`] (Kafka's `LogSegmentData`: the
//! six parts a copy uploads), each holding a pin that keeps retention from deleting the segment
//! while it is copied; after the copy's metadata reached `COPY_SEGMENT_FINISHED` the copier calls
//! [`crate::Log::set_highest_remote_offset`], which lets local retention delete what is now
//! safe in the remote tier.
//!
//! Mirrors Kafka's `RemoteStorageManager`, `RemoteLogSegmentMetadata`, `LogSegmentData` and
//! `RemoteStorageManager.IndexType`.

mod cache;
mod disk_cache;
mod error;
mod lineage;
mod pins;
mod sealed;
mod segment_id;
mod state;

pub use cache::DEFAULT_INDEX_CACHE_BYTES;
pub(crate) use cache::IndexCache;
pub(crate) use disk_cache::DiskIndexCache;
pub use disk_cache::{DEFAULT_DISK_INDEX_CACHE_BYTES, REMOTE_INDEX_CACHE_DIR};
pub use error::{RemoteError, RemoteErrorKind};
pub use lineage::{LineageSegment, lineage_chain};
pub(crate) use pins::Pins;
pub use pins::SegmentPin;
pub(crate) use sealed::SealSubscribers;
pub use sealed::SegmentSealed;
pub use segment_id::{InvalidSegmentId, RemoteSegmentId};
pub(crate) use state::RemoteState;

use std::fmt::Debug;
use std::path::PathBuf;

/// One segment in the remote tier whose copy finished (Kafka's `RemoteLogSegmentMetadata` in
/// state `COPY_SEGMENT_FINISHED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSegment {
    /// The segment's base offset (Kafka's `startOffset`).
    pub base_offset: i64,
    /// The segment's last offset, inclusive (Kafka's `endOffset`: the next local segment's base
    /// offset minus one when it was copied).
    pub end_offset: i64,
    /// The largest record timestamp in the segment, -1 when no record has one (Kafka's
    /// `maxTimestampMs`).
    pub max_timestamp_ms: i64,
    /// Bytes of the segment's `.log` (Kafka's `segmentSizeInBytes`).
    pub size_in_bytes: u64,
    /// The leader epochs of the segment's batches as `(epoch, start offset)`, ascending, the
    /// first one at the segment's base offset (Kafka's `segmentLeaderEpochs`).
    pub leader_epochs: Vec<(i32, i64)>,
    /// The segment's id (Kafka's `RemoteLogSegmentId.id`, a Uuid).
    pub id: RemoteSegmentId,
}

impl RemoteSegment {
    /// Whether `offset` lies in the segment's offset range.
    pub fn contains(&self, offset: i64) -> bool {
        self.base_offset <= offset && offset <= self.end_offset
    }
}

/// Which index of a remote segment [`RemoteTier::fetch_index`] fetches (Kafka's
/// `RemoteStorageManager.IndexType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemoteIndexKind {
    /// The `.index` (Kafka's `OFFSET`).
    Offset,
    /// The `.timeindex` (Kafka's `TIMESTAMP`).
    Time,
    /// The `.txnindex` (Kafka's `TRANSACTION`); a segment without aborted transactions may have
    /// none ([`RemoteErrorKind::NotFound`], which reads take as an empty index).
    Transaction,
    /// The producer snapshot at the segment's end (Kafka's `PRODUCER_SNAPSHOT`).
    ProducerSnapshot,
    /// The leader-epoch checkpoint text of the entries up to the segment's end (Kafka's
    /// `LEADER_EPOCH`).
    LeaderEpoch,
}

/// A remote tier the log reads from (and a copier writes to). Synchronous: every call may
/// block on the network.
///
/// Implementations must be cheap to call concurrently: reads of different segments run on the
/// readers' threads.
pub trait RemoteTier: Send + Sync + Debug {
    /// The segments whose copy finished (`COPY_SEGMENT_FINISHED`), by ascending base offset
    /// (copies of the same base offset oldest first). They may overlap: a copy repeated after
    /// a lost answer, or, after an unclean leader election, a former leader's copy of offsets
    /// the new lineage replaced beside the new leader's copy. The log chooses among them by
    /// its leader-epoch lineage (of overlapping copies, the one whose batches carry the epochs
    /// the log's epoch cache gives their offsets), so every copy must be listed.
    ///
    /// # Errors
    /// [`RemoteError`] when the metadata cannot be read.
    fn segments(&self) -> Result<Vec<RemoteSegment>, RemoteError>;

    /// Bytes `[start_position, end_position)` of the segment's `.log` (`None`: to its end).
    /// May return fewer bytes when the segment ends earlier.
    ///
    /// # Errors
    /// [`RemoteError`]; [`RemoteErrorKind::NotFound`] when the segment is gone.
    fn fetch_log(
        &self,
        segment: &RemoteSegment,
        start_position: u64,
        end_position: Option<u64>,
    ) -> Result<Vec<u8>, RemoteError>;

    /// The whole index of `kind` of the segment.
    ///
    /// # Errors
    /// [`RemoteError`]; [`RemoteErrorKind::NotFound`] when the segment has no such index (a
    /// `.txnindex` is optional).
    fn fetch_index(
        &self,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
    ) -> Result<Vec<u8>, RemoteError>;

    /// Kafka's `RemoteLogManager.getFetchThrottleTimeMs` (the KIP-956 fetch quota): 0 when a
    /// fetch may read from the tier now, else the milliseconds until the fetch rate is back
    /// within the quota. [`crate::Log::read`] and [`crate::Log::read_into`] ask once per fetch
    /// they would serve from the tier and, when it is not 0, return that fetch empty (no
    /// records, nothing fetched), as Kafka's `ReplicaManager` answers an empty fetch for the
    /// partition instead of blocking; an implementation may count such answers as throttled
    /// fetches. Default: never throttled.
    fn fetch_throttle_time_ms(&self) -> u64 {
        0
    }
}

/// A sealed segment eligible for copy to the remote tier, with the six parts of a copy (Kafka's
/// `LogSegmentData`), from [`crate::Log::tier_candidates`].
///
/// The files are paths into the partition directory. They stay valid while this value lives:
/// its [`SegmentPin`] keeps retention from deleting the segment (a segment sealed never changes;
/// a tiered log is never compacted, since `remote.storage.enable` requires
/// `cleanup.policy=delete`). Only a truncation below it (a follower's, which Kafka's copier also
/// races with) can still change it; the copy's metadata then names offsets the log no longer
/// has, as in Kafka.
#[derive(Debug)]
pub struct SealedSegmentFiles {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The next segment's base offset: every offset of this segment is below it (the remote
    /// segment's `end_offset` is this minus one).
    pub next_base_offset: i64,
    /// The `.log`.
    pub log: PathBuf,
    /// The `.index`.
    pub offset_index: PathBuf,
    /// The `.timeindex`.
    pub time_index: PathBuf,
    /// The `.txnindex`, when the segment has one.
    pub txn_index: Option<PathBuf>,
    /// The bytes of the producer snapshot at `next_base_offset` (Kafka's snapshot file format):
    /// the file's when it exists, otherwise the state rebuilt at that offset.
    pub producer_snapshot: Vec<u8>,
    /// The leader-epoch entries with a start offset below `next_base_offset`, as `(epoch, start
    /// offset)`, oldest first (what Kafka uploads as the `LEADER_EPOCH` index).
    pub leader_epochs: Vec<(i32, i64)>,
    /// The leader epochs of this segment's own batches (the first at `base_offset`), for
    /// [`RemoteSegment::leader_epochs`].
    pub segment_leader_epochs: Vec<(i32, i64)>,
    /// Kafka's `LogSegment.largestTimestamp` (what Kafka 4.4's copier puts in the metadata):
    /// the largest record timestamp, or the `.log`'s mtime when no record has one.
    pub max_timestamp_ms: i64,
    /// Bytes of the `.log`.
    pub size: u64,
    /// Keeps retention from deleting the segment while the copy runs; dropped with this value.
    pub pin: SegmentPin,
}

impl SealedSegmentFiles {
    /// The segment's last offset (Kafka's `endOffset` of the copy: `next_base_offset - 1`).
    pub fn end_offset(&self) -> i64 {
        self.next_base_offset - 1
    }
}
