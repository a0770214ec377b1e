//! What one side shows after a step: the operation's outcome, the log's state, two fetches.
//! Both sides produce the same shape (Kafka's arrives as JSON); the comparator walks it.

use serde::{Deserialize, Serialize};

/// Accepted (with offsets for an append) or refused with an error class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The Kafka exception class (seglog's error mapped to it, `compare::kafka_class`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// First offset of an accepted append (for a duplicate: the original's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_offset: Option<i64>,
    /// Last offset of an accepted append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_offset: Option<i64>,
    /// The error's text, shown in reports, never compared.
    #[serde(default, skip_serializing)]
    pub message: Option<String>,
    /// The answer of an offset-for-timestamp lookup (`None`: no record qualifies, or not a
    /// lookup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_lookup: Option<TimestampLookup>,
    /// Kafka only, never compared: its lookup by timestamp searched an empty segment (the
    /// first whose `largestTimestamp()`, the file's mtime when it holds no batch, reaches the
    /// target), for the rule on empty segments.
    #[serde(default, skip_serializing)]
    pub searched_empty_segment: bool,
    /// Kafka only, never compared: the next offset of the segment its lookup by timestamp
    /// searched, for the rule on lookups past it.
    #[serde(default, skip_serializing)]
    pub searched_segment_end: Option<i64>,
    /// Kafka only, never compared: for a lookup by timestamp, the first segment (base offset,
    /// next offset) its search skipped although its batches reach the target, because its
    /// `maxTimestampSoFar()` is below their largest timestamp and `largestTimestamp()` (the
    /// file's mtime when it is -1) is below the target, for the rule on a lookup past a segment
    /// whose max timestamp Kafka forgot.
    #[serde(default, skip_serializing)]
    pub skipped_stale_segment: Option<[i64; 2]>,
    /// Kafka only, never compared: for MAX_TIMESTAMP, the largest batch max timestamp of any
    /// segment as its batches hold it (`FileRecords.largestTimestampAfter(0)`), for the rule on
    /// a segment's forgotten max timestamp.
    #[serde(default, skip_serializing)]
    pub batches_max_timestamp: Option<i64>,
    /// Kafka only, never compared: for MAX_TIMESTAMP, some segment's `maxTimestampSoFar()` is
    /// below the largest max timestamp of its batches.
    #[serde(default, skip_serializing)]
    pub max_timestamp_so_far_stale: bool,
    /// Kafka only, never compared: before a retention pass, the segments time retention keeps
    /// only because their `maxTimestampSoFar()` is below their batches' largest timestamp,
    /// which breaches `retention.ms` (for the rule on that forgotten timestamp).
    #[serde(default, skip_serializing)]
    pub retention_kept_by_stale_max_timestamp: Vec<i64>,
    /// Kafka only, never compared: its `truncateTo` skipped the replay after the snapshot
    /// reload (`rebuildProducerState`'s `isEmptyBeforeTruncation`: the producer state was
    /// empty before), for the rule on that shortcut after producer expiry.
    #[serde(default, skip_serializing)]
    pub skipped_truncation_replay: bool,
}

/// Kafka's `FileRecords.TimestampAndOffset`: what ListOffsets answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimestampLookup {
    /// The record's timestamp (-1 for EARLIEST / LATEST).
    pub timestamp: i64,
    /// The offset.
    pub offset: i64,
    /// The leader epoch of the answer, if any.
    #[serde(default)]
    pub leader_epoch: Option<i32>,
}

/// One producer's state (Kafka's `ProducerStateEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Producer {
    /// Producer id.
    pub producer_id: i64,
    /// Current epoch.
    pub epoch: i16,
    /// Coordinator epoch of its last marker.
    pub coordinator_epoch: i32,
    /// Last sequence of its last batch (-1 when none is retained).
    pub last_sequence: i32,
    /// Last offset of its last batch (-1 when none).
    pub last_offset: i64,
    /// First offset of its open transaction.
    pub txn_first_offset: Option<i64>,
}

/// The log's offsets and producer state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Log start offset.
    pub log_start: i64,
    /// Log end offset.
    pub log_end: i64,
    /// High watermark.
    pub high_watermark: i64,
    /// First unstable offset.
    pub first_unstable: Option<i64>,
    /// Last stable offset.
    pub last_stable: i64,
    /// The segments' base offsets (where each side rolled).
    pub segments: Vec<i64>,
    /// Producers by id.
    pub producers: Vec<Producer>,
    /// The leader-epoch cache: (epoch, start offset) entries.
    #[serde(default)]
    pub leader_epochs: Vec<(i32, i64)>,
}

/// A fetch's answer: the batches returned (base offset, last offset, control) and, for
/// read_committed, the aborted transactions (producer id, first offset); or a refusal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetch {
    /// The exception class of a refused fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<Vec<(i64, i64, bool)>>,
    /// The aborted transactions (read_committed only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<Vec<(i64, i64)>>,
    /// The error's text, never compared.
    #[serde(default, skip_serializing)]
    pub message: Option<String>,
    /// seglog only, one per batch: what a read_committed consumer reads of it (for the rule
    /// on a cleaned segment's aborted-transaction entries; never compared).
    #[serde(default, skip_serializing)]
    pub batch_txns: Option<Vec<BatchTxn>>,
}

/// Of a fetched batch: its producer id, whether it is transactional, and for a control batch
/// whether its marker is an ABORT (`None` for a data batch).
pub type BatchTxn = (i64, bool, Option<bool>);

/// Everything compared after a step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The operation's outcome.
    pub outcome: Outcome,
    /// The state after it.
    pub state: State,
    /// read_uncommitted (high watermark isolation) from the step's fetch offset.
    pub read_uncommitted: Fetch,
    /// read_committed from the step's fetch offset.
    pub read_committed: Fetch,
    /// Kafka only: its `ProducerStateManager.firstUnstableOffset()`, beside `UnifiedLog`'s
    /// cached `firstUnstableOffset()` in the state (for the rule on that cache; never compared).
    #[serde(default, skip_serializing)]
    pub fresh_first_unstable: Option<i64>,
    /// After a maintenance operation (retention, DeleteRecords, truncate fully, a cleaning
    /// round, a crash): every segment's base offset and `.log` size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<(i64, u64)>>,
    /// Kafka only, set by the runner, never compared: the offsets of the marker-shaped
    /// batches an earlier step's `aborted-data-below-log-start` found Kafka keeping (without a
    /// delete horizon) at or above the log start where seglog's round had removed them (the
    /// COMMIT of a producer whose aborted data below the log start Kafka counted as committed),
    /// for that rule's read form.
    #[serde(default, skip_serializing)]
    pub kept_commit_markers: Vec<i64>,
    /// With `files`: each segment's batches as read from its `.log` (what the records are,
    /// whatever bytes a compressor made of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_batches: Option<Vec<Vec<FileBatch>>>,
    /// Kafka only: the first unstable offset its `ProducerStateManager` will have after its
    /// next high-watermark move at the current high watermark (for the rule on transactions a
    /// truncation's rebuild replays; never compared).
    #[serde(default, skip_serializing)]
    pub settled_first_unstable: Option<i64>,
    /// seglog only: the base offset of the first batch at or above the high watermark (for the
    /// rule on a high watermark in a gap; never compared).
    #[serde(default, skip_serializing)]
    pub batch_base_at_hw: Option<i64>,
    /// seglog only: the base offset of the first batch holding an offset at or above the log
    /// start (the log end when none does), when the log start lies below the log end (for the
    /// rule on a first unstable offset clamped into a gap; never compared).
    #[serde(default, skip_serializing)]
    pub batch_base_at_log_start: Option<i64>,
}

/// A batch as a segment's `.log` holds it: `[base offset, last offset, codec id, records, key
/// and value bytes, magic, delete horizon (1 when the batch carries a KIP-534 horizon, else
/// 0)]`; a file that does not parse shows as one all `-1` entry where it stops. (The horizon
/// flag shows what a segment's size alone hid: which kept markers a round stamped.)
pub type FileBatch = [i64; 7];
