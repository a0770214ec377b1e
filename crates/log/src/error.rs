//! The crate's one error type.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in the log layer.
///
/// I/O errors carry the path and the operation; corruption of files this crate owns (checkpoints)
/// is [`Error::Corrupt`] with a small matchable [`CheckpointCorruptKind`]. Errors of the lower
/// layers are wrapped with their source chain intact. Each kind of damage has one type, named
/// for what it describes: [`CheckpointCorruptKind`] (a checkpoint's text),
/// [`crate::SegmentCorruptKind`] (a segment's `.log`), [`crate::RecordCorruptKind`] (a batch or
/// record, also inside a segment's).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O call failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("open", "fsync", "rename", ...).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A file owned by this crate (a checkpoint) does not parse.
    #[error("corrupt {path} at line {position}: {kind}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the offending line.
        position: u64,
        /// What is wrong.
        kind: CheckpointCorruptKind,
    },
    /// A configuration value is out of range or does not parse.
    #[error("invalid config {key}={value}: {reason}")]
    InvalidConfig {
        /// Kafka's name of the setting, e.g. `segment.bytes`.
        key: &'static str,
        /// The rejected value as text.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A setting that cannot change while the log runs was given a new value
    /// ([`crate::Log::set_config`], [`crate::LogDir::alter_topic_config`]).
    #[error("config {key} cannot change at runtime: {reason}")]
    ConfigNotDynamic {
        /// Kafka's (or seglog's) name of the setting.
        key: &'static str,
        /// Why it cannot change.
        reason: &'static str,
    },
    /// A topic config override names a setting that is not a topic config: a broker-level
    /// alias (`log.retention.hours`, `message.max.bytes`, ...) or a root-wide setting
    /// (`seglog.segment.cache.capacity`).
    #[error(
        "{key:?} is not a topic config (broker-level and root-wide settings go in the LogDir's default config)"
    )]
    NotATopicConfig {
        /// The key as given.
        key: String,
    },
    /// `LogConfig::set` was given a key seglog does not know.
    #[error("unknown config key {key:?}")]
    UnknownConfig {
        /// The key as given.
        key: String,
    },
    /// Another process (a Kafka broker, another seglog) or a `Log` / `LogDir` of this process
    /// holds the directory lock. Every read-write `Log` keeps its root's lock until it is
    /// dropped: also after [`crate::Log::close`] (it still serves reads from files it maps),
    /// and also when the `LogDir` it came from was dropped.
    #[error("{}", locked_message(path, *in_this_process))]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Whether a `Log` or `LogDir` of this process holds it (else another process).
        in_this_process: bool,
    },
    /// A directory name is not `<topic>-<partition>` (optionally with a Kafka suffix).
    #[error("{name:?} is not a topic-partition directory name")]
    InvalidPartitionDir {
        /// The name that did not parse.
        name: String,
    },
    /// A read or a log-start move asked for an offset outside `[log_start_offset, log_end_offset]`.
    #[error(
        "offset {offset} is out of range: log start offset {log_start_offset}, \
         log end offset {log_end_offset}"
    )]
    OffsetOutOfRange {
        /// The requested offset.
        offset: i64,
        /// The log start offset at the time of the request.
        log_start_offset: i64,
        /// The log end offset at the time of the request.
        log_end_offset: i64,
    },
    /// An appended batch was rejected; nothing of that append was written.
    #[error("append rejected: {kind}")]
    InvalidAppend {
        /// Why.
        kind: AppendErrorKind,
    },
    /// A write or fsync failed earlier; the log refuses writes until it is reopened (recovered).
    #[error("log {dir} is poisoned by an earlier failed {op}; reopen it to recover")]
    Poisoned {
        /// The partition directory.
        dir: PathBuf,
        /// The operation that failed first.
        op: &'static str,
    },
    /// A partition of a [`crate::LogDir`] whose load failed at open: it is offline (not
    /// served, its directory untouched) until the root is reopened. `source` is the load's
    /// error.
    #[error("partition {topic}-{partition} ({}) is offline: its load failed at open", dir.display())]
    PartitionOffline {
        /// The partition's topic.
        topic: String,
        /// The partition's number.
        partition: i32,
        /// Its directory.
        dir: PathBuf,
        /// Why its load failed.
        #[source]
        source: std::sync::Arc<Error>,
    },
    /// A write was attempted on a log opened with `Log::open_read_only`.
    #[error("log {dir} is open read-only")]
    ReadOnly {
        /// The partition directory.
        dir: PathBuf,
    },
    /// Record bytes or record inputs the caller gave are malformed: an appended buffer holds a
    /// corrupt batch (bad CRC, bad framing; nothing of that append was written), a
    /// [`crate::BatchBuilder`] was given input it cannot build, or bytes the caller parsed with
    /// [`crate::Batches`] or record decoding do not decode. `?` turns a [`crate::RecordsError`]
    /// into this variant. Damage found in bytes already in the log is
    /// [`Error::DamagedBatch`] instead.
    #[error("invalid record batch: {0}")]
    Records(#[from] seglog_records::Error),
    /// [`crate::Log::set_high_watermark`] was asked to move the high watermark backwards; only
    /// a truncation ([`crate::Log::truncate_to`]) lowers it.
    #[error(
        "high watermark of {} cannot move back from {high_watermark} to {requested} outside a truncation",
        dir.display()
    )]
    HighWatermarkRegression {
        /// The partition directory.
        dir: PathBuf,
        /// The high watermark.
        high_watermark: i64,
        /// The requested offset (clamped to the log start and end).
        requested: i64,
    },
    /// A batch a reader fetched fails its CRC, or its records do not decode (a consumer-side
    /// error: the bytes are in the log, not in an append).
    #[error("damaged record batch in {}: {source}", path.display())]
    DamagedBatch {
        /// The segment's `.log`.
        path: PathBuf,
        /// What is wrong, with the byte position in that file.
        #[source]
        source: seglog_records::Error,
    },
    /// An error of the segment layer (I/O on a segment file, corruption, index errors).
    #[error(transparent)]
    Segment(#[from] seglog_segment::Error),
    /// The log has no segment where an operation needs one (only a read-only log of an empty
    /// directory has no segment; its reads return empty slices).
    #[error("{dir} holds no log segment")]
    NoSegments {
        /// The partition directory.
        dir: PathBuf,
    },
    /// A segment whose offsets overflow its base offset (KAFKA-6264) cannot be split safely:
    /// its first batch lies below its base, a new segment would take the name of another
    /// segment, or a split segment still overflows.
    #[error("cannot split overflowed segment {path}: {reason}")]
    UnsplittableSegment {
        /// The overflowed segment's `.log`.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A leader-epoch entry with a negative epoch or start offset
    /// ([`crate::Log::assign_epoch_start_offset`]; Kafka's `IllegalArgumentException`).
    #[error("invalid leader epoch entry: epoch {epoch}, start offset {start_offset}")]
    InvalidEpochEntry {
        /// The epoch given.
        epoch: i32,
        /// The start offset given.
        start_offset: i64,
    },
    /// A producer-state `.snapshot` file does not decode (Kafka's `CorruptSnapshotException`).
    #[error("corrupt producer snapshot {path}: {problem}")]
    CorruptSnapshot {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: crate::SnapshotProblem,
    },
    /// A transaction decision record (`seglog-txn-decision-<producer id>` in a log-dir root,
    /// [`crate::TxnDecision`]) does not decode: the transaction it decides is neither
    /// completed nor aborted until the file is repaired or removed.
    #[error("corrupt transaction decision {path} at byte {position}: {problem}")]
    CorruptTxnDecision {
        /// The file.
        path: PathBuf,
        /// The byte position of what is wrong.
        position: u64,
        /// What is wrong.
        problem: crate::TxnDecisionProblem,
    },
    /// A log-cleaner round stopped before swapping its next group in (Kafka's
    /// `LogCleaningAbortedException`): nothing of that group changed, groups swapped before it
    /// stay, and the next round starts over.
    #[error("cleaning of {dir} aborted: {reason}")]
    CleaningAborted {
        /// The partition directory.
        dir: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A call to the log's remote tier failed ([`crate::remote::RemoteTier`]).
    #[error("remote tier of {}: {source}", dir.display())]
    Remote {
        /// The partition directory.
        dir: PathBuf,
        /// What the tier reported.
        #[source]
        source: crate::remote::RemoteError,
    },
    /// Bytes fetched from the remote tier do not decode: a remote `.log` range, or one of a
    /// remote segment's indexes.
    #[error("corrupt remote {what} of segment {base_offset} ({id}) at byte {position}: {reason}")]
    CorruptRemote {
        /// Which part: `log`, `offset index`, `time index`, `txn index`, `producer snapshot`,
        /// `leader epoch checkpoint`.
        what: &'static str,
        /// The remote segment's base offset.
        base_offset: i64,
        /// The remote segment's id.
        id: crate::remote::RemoteSegmentId,
        /// The byte position in that part.
        position: u64,
        /// What is wrong.
        reason: String,
    },
    /// The log was closed.
    #[error("log {dir} is closed")]
    Closed {
        /// The partition directory.
        dir: PathBuf,
    },
    /// A producer ([`crate::IdempotentProducer`], [`crate::TransactionalProducer`]) refused an
    /// operation before writing anything.
    #[error("producer {producer_id}: {kind}")]
    Producer {
        /// The producer id.
        producer_id: i64,
        /// What was refused.
        kind: ProducerErrorKind,
    },
    /// A read-only open saw the directory's segment files change during every one of its
    /// loads (a writer in another process kept rolling, swapping or deleting segments): no
    /// load saw one consistent set of files, and none is served.
    #[error("log {dir} kept changing during {attempts} read-only loads; try again")]
    DirectoryChanging {
        /// The partition directory.
        dir: PathBuf,
        /// How many loads were tried.
        attempts: usize,
    },
}

/// Why a producer refused an operation ([`Error::Producer`]); nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerErrorKind {
    /// A producer id or epoch is negative.
    #[error("producer id and epoch must be >= 0, got epoch {epoch}")]
    InvalidIdOrEpoch {
        /// The epoch given.
        epoch: i16,
    },
    /// A batch prepared for one partition was sent to the log of another.
    #[error("batch prepared for {batch} sent to the log in {dir}")]
    WrongPartition {
        /// The partition the batch was prepared for.
        batch: crate::TopicPartition,
        /// The directory of the log it was sent to.
        dir: PathBuf,
    },
    /// The epoch is `i16::MAX` and cannot be bumped (Kafka's client then asks for a new
    /// producer id): use a new producer id.
    #[error("epoch {epoch} cannot be bumped; use a new producer id")]
    EpochExhausted {
        /// The current epoch.
        epoch: i16,
    },
    /// A transaction already writes to [`crate::MAX_TRANSACTION_PARTITIONS`] partitions and a
    /// batch was sent to one more (its decision record lists them all).
    #[error("a transaction writes to at most {limit} partitions")]
    TooManyPartitions {
        /// [`crate::MAX_TRANSACTION_PARTITIONS`].
        limit: usize,
    },
    /// A fencing producer's epoch is not above the epoch the producer id already has in a
    /// partition (Kafka's coordinator always bumps the epoch at `InitProducerId`).
    #[error("epoch {epoch} is not above epoch {current} in {dir}")]
    EpochNotNewer {
        /// The epoch given.
        epoch: i16,
        /// The producer's epoch in that partition.
        current: i16,
        /// The partition directory.
        dir: PathBuf,
    },
}

/// What is wrong with a corrupt checkpoint file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointCorruptKind {
    /// The version line is not a number.
    #[error("malformed version line")]
    MalformedVersion,
    /// The version is not 0.
    #[error("unsupported checkpoint version {0}")]
    UnsupportedVersion(i64),
    /// The count line is not a number.
    #[error("malformed entry count")]
    MalformedCount,
    /// An entry line is not `<topic> <partition> <offset>` (offset checkpoints) or
    /// `<epoch> <startOffset>` with both non-negative (`leader-epoch-checkpoint`).
    #[error("malformed line")]
    MalformedLine,
    /// The number of entries differs from the header count.
    #[error("expected {expected} entries, found {found}")]
    CountMismatch {
        /// The header's count.
        expected: u64,
        /// Entries actually present.
        found: u64,
    },
    /// The file is larger than any checkpoint seglog reads ([`crate::MAX_CHECKPOINT_BYTES`]):
    /// not read at all (a hostile or damaged file must not cost its size in memory).
    #[error("{len} bytes, larger than the {limit}-byte bound for a checkpoint; not read")]
    TooLarge {
        /// The file's length.
        len: u64,
        /// The bound.
        limit: u64,
    },
    /// A `leader-epoch-checkpoint` entry whose epoch or start offset is not above the entry
    /// before it (or that repeats an epoch). Kafka writes its cache, whose epochs and start
    /// offsets strictly increase; its loader would drop the entries silently, seglog rebuilds
    /// the cache from the batches instead (a deliberate difference from Kafka).
    #[error(
        "epoch {epoch} starting at offset {start_offset} does not follow epoch \
         {previous_epoch} starting at {previous_start_offset} (epochs and start offsets must increase)"
    )]
    EpochsNotIncreasing {
        /// The previous entry's epoch.
        previous_epoch: i32,
        /// The previous entry's start offset.
        previous_start_offset: i64,
        /// This entry's epoch.
        epoch: i32,
        /// This entry's start offset.
        start_offset: i64,
    },
}

/// Why an append was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendErrorKind {
    /// A batch is larger than `max.message.bytes`.
    #[error("batch of {size} bytes at position {position} exceeds max.message.bytes {max}")]
    BatchTooLarge {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// Its size including the 12-byte log overhead.
        size: u64,
        /// The configured limit.
        max: i64,
    },
    /// The whole append is larger than `segment.bytes`.
    #[error("append of {size} bytes exceeds segment.bytes {max}")]
    AppendTooLarge {
        /// Total bytes.
        size: u64,
        /// `segment.bytes`.
        max: i64,
    },
    /// The buffer holds no complete batch.
    #[error("no complete record batch in {size} bytes")]
    Empty {
        /// Bytes given.
        size: u64,
    },
    /// Trailing bytes after the last complete batch.
    #[error("{trailing} trailing bytes after the last complete batch")]
    TrailingBytes {
        /// How many.
        trailing: u64,
    },
    /// Leader appends accept only magic v2 batches.
    #[error("batch at position {position} has magic {magic}; leader appends need v2")]
    UnsupportedMagic {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// Its magic byte.
        magic: i8,
    },
    /// Clients may not write control batches.
    #[error("batch at position {position} is a control batch")]
    ControlBatch {
        /// Byte position of the batch in the appended buffer.
        position: u64,
    },
    /// `lastOffsetDelta + 1` differs from the record count.
    #[error(
        "batch at position {position}: last offset delta {last_offset_delta} but {count} records"
    )]
    InconsistentCount {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// The header's `lastOffsetDelta`.
        last_offset_delta: i32,
        /// The header's record count.
        count: i32,
    },
    /// A record's CreateTime timestamp lies outside the
    /// `message.timestamp.{before,after}.max.ms` window (Kafka's `InvalidTimestampException`;
    /// every record is checked, as Kafka's `LogValidator` does, not only the batch header).
    #[error(
        "batch at position {position}: record {record_index} has timestamp {timestamp_ms}, outside [{}, {}]",
        bound(*min_ms, "no lower bound"),
        bound(*max_ms, "no upper bound")
    )]
    TimestampOutOfRange {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// The record's index in its batch (0 = first).
        record_index: usize,
        /// The offending timestamp.
        timestamp_ms: i64,
        /// Earliest accepted timestamp; `None`: no lower bound
        /// (`message.timestamp.before.max.ms` is `i64::MAX`, Kafka's default).
        min_ms: Option<i64>,
        /// Latest accepted timestamp; `None`: no upper bound
        /// (`message.timestamp.after.max.ms` is `i64::MAX`).
        max_ms: Option<i64>,
    },
    /// A leader batch that its producer flagged LogAppendTime, on a LogAppendTime log or
    /// with no record timestamp (Kafka's `InvalidTimestampException`: "Producer should not set
    /// timestamp type to LogAppendTime"). On a CreateTime log a flagged batch whose timestamps
    /// lie in the window is accepted and written as CreateTime, as Kafka does.
    #[error(
        "batch at position {position}: record {record_index}: a producer may not set the timestamp type to LogAppendTime"
    )]
    LogAppendTimeFromProducer {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// The record's index in its batch (0 = first).
        record_index: usize,
    },
    /// A compressed leader batch whose records' offset deltas are not 0, 1, 2, ... Kafka's
    /// `LogValidator` re-compresses such a batch with consecutive offsets; seglog, which
    /// writes the producer's bytes as they are, refuses it (a deliberate difference).
    #[error(
        "compressed batch at position {position}: record {record_index} has offset delta {offset_delta}, not {record_index}"
    )]
    InnerOffsetsNotConsecutive {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// The record's index in its batch (0 = first).
        record_index: usize,
        /// Its offset delta.
        offset_delta: i64,
    },
    /// A leader batch flagged transactional without a producer id (-1): a transaction
    /// belongs to a producer. Kafka's producer refuses to build one ("Cannot write
    /// transactional messages without a valid producer ID") but Kafka 4.4's broker does not
    /// check; seglog's leader append refuses it (a deliberate difference).
    #[error("batch at position {position} is transactional but has no producer id")]
    TransactionalWithoutProducerId {
        /// Byte position of the batch in the appended buffer.
        position: u64,
    },
    /// A leader append to a compacted log (`cleanup.policy` holds `compact`) has a record
    /// without a key (Kafka: "Compacted topic cannot accept message without key").
    #[error(
        "batch at position {position}: record {record_index} has no key, and a compacted log (cleanup.policy=compact) needs one"
    )]
    MissingKey {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// The record's index in its batch (0 = first).
        record_index: usize,
    },
    /// Follower batches must have strictly increasing offsets.
    #[error("offsets out of order: batch last offset {last_offset} after {previous_last_offset}")]
    OffsetsOutOfOrder {
        /// The previous batch's last offset.
        previous_last_offset: i64,
        /// This batch's last offset.
        last_offset: i64,
    },
    /// A follower batch starts at or below the previous batch's last offset (its first offset;
    /// a legacy compressed wrapper's is its first inner message's). Kafka 4.4 accepts it when
    /// its last offset increases, but seglog's load takes such a batch for damage
    /// (`CorruptKind::OffsetsNotIncreasing` of `seglog-segment`), so the append refuses what the
    /// next open would not serve (a deliberate difference from Kafka). A legacy compressed
    /// wrapper, which the load knows only by its last offset, is refused too when its inner
    /// offsets begin inside the previous batch or below the log end (`previous_last_offset` is
    /// then the log end minus one): it would put an offset in the log twice, and Kafka 4.4
    /// then answers a fetch from that offset from the wrapper, skipping the other batch.
    #[error(
        "batch at position {position} starts at offset {first_offset}, not above the previous batch's last offset {previous_last_offset}"
    )]
    OverlappingBatch {
        /// The batch's position in the append.
        position: u64,
        /// The previous batch's last offset (for the first batch of the append: the log end
        /// minus one).
        previous_last_offset: i64,
        /// This batch's first offset.
        first_offset: i64,
    },
    /// A leader append was given a negative leader epoch ([`crate::Log::append_as_leader`]).
    #[error("leader epoch {epoch} is negative")]
    InvalidLeaderEpoch {
        /// The epoch given.
        epoch: i32,
    },
    /// A leader batch with a producer id has a negative base sequence (Kafka's
    /// `InvalidRecordException` from `LogValidator`).
    #[error("batch at position {position} of producer {producer_id} has sequence {sequence}")]
    InvalidSequence {
        /// Byte position of the batch in the appended buffer.
        position: u64,
        /// The batch's producer id.
        producer_id: i64,
        /// Its base sequence.
        sequence: i32,
    },
    /// A sequence does not follow the producer's last one, or a new epoch does not start at 0
    /// (Kafka's `OutOfOrderSequenceException`). Nothing was written.
    #[error(
        "out of order sequence for producer {producer_id} epoch {epoch} at offset {offset}: \
         {sequence} after {last_sequence}"
    )]
    OutOfOrderSequence {
        /// The producer id.
        producer_id: i64,
        /// The batch's producer epoch.
        epoch: i16,
        /// The offset the batch would have had.
        offset: i64,
        /// The batch's first sequence.
        sequence: i32,
        /// The producer's last sequence (-1 when none; for a new epoch, the sequence 0 was
        /// expected).
        last_sequence: i32,
    },
    /// A batch or marker of an epoch older than the producer's, or a transactions-v2 marker
    /// whose epoch is not newer ([`crate::TransactionVersion::V2`]) (Kafka's
    /// `InvalidProducerEpochException`; the producer is fenced). Nothing was written.
    #[error(
        "producer {producer_id} epoch {epoch} at offset {offset} is fenced by its epoch {current_epoch}"
    )]
    InvalidProducerEpoch {
        /// The producer id.
        producer_id: i64,
        /// The epoch of the batch or marker.
        epoch: i16,
        /// The offset it would have had.
        offset: i64,
        /// The producer's current epoch.
        current_epoch: i16,
    },
    /// A marker of a coordinator epoch older than the producer's last marker (Kafka's
    /// `TransactionCoordinatorFencedException`). Nothing was written.
    #[error(
        "marker for producer {producer_id} at offset {offset} has coordinator epoch {coordinator_epoch}, older than {current}"
    )]
    CoordinatorFenced {
        /// The producer id.
        producer_id: i64,
        /// The marker's coordinator epoch.
        coordinator_epoch: i32,
        /// The offset it would have had.
        offset: i64,
        /// The producer's last coordinator epoch.
        current: i32,
    },
    /// A non-transactional batch from a producer with an open transaction (Kafka's
    /// `InvalidTxnStateException`). Nothing was written.
    #[error(
        "non-transactional batch of producer {producer_id} at offset {offset} during its open transaction"
    )]
    InvalidTxnState {
        /// The producer id.
        producer_id: i64,
        /// The offset the batch would have had.
        offset: i64,
    },
    /// A transaction marker for producer id -1 or a negative epoch.
    #[error("transaction marker needs a producer id and epoch >= 0, got {producer_id} and {epoch}")]
    InvalidMarker {
        /// The producer id given.
        producer_id: i64,
        /// The epoch given.
        epoch: i16,
    },
    /// A follower append starts below the log end offset.
    #[error("follower append starts at {first_offset}, below the log end offset {log_end_offset}")]
    UnexpectedAppendOffset {
        /// First offset of the append.
        first_offset: i64,
        /// The log end offset.
        log_end_offset: i64,
    },
}

/// The text of [`Error::Locked`].
/// A timestamp bound as an error message prints it: the number, or `unlimited` in words (an
/// unlimited bound is not a timestamp, and `i64::MAX` or `now - i64::MAX` would read as one).
fn bound(bound_ms: Option<i64>, unlimited: &'static str) -> std::borrow::Cow<'static, str> {
    match bound_ms {
        Some(ms) => ms.to_string().into(),
        None => unlimited.into(),
    }
}

fn locked_message(path: &Path, in_this_process: bool) -> String {
    if in_this_process {
        format!(
            "{} is locked by a Log or LogDir of this process; every Log of a root keeps it \
             locked until the last one is dropped (closing is not enough, nor is dropping its \
             LogDir): drop them first",
            path.display()
        )
    } else {
        format!(
            "{} is locked by another process (a Kafka broker or another seglog); stop it first",
            path.display()
        )
    }
}

impl Error {
    /// Builds an [`Error::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Extension to attach the operation and path to an `io::Result`.
pub(crate) trait IoContext<T> {
    /// Maps the error to [`Error::Io`].
    fn ctx(self, op: &'static str, path: &Path) -> Result<T, Error>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, op: &'static str, path: &Path) -> Result<T, Error> {
        self.map_err(|source| Error::io(op, path, source))
    }
}
