//! seglog: an embeddable, Kafka-compatible segmented commit log.
//!
//! A [`Log`] is one partition directory in Kafka's on-disk format: `.log` segments of record
//! batches with sparse `.index` / `.timeindex` files, byte-compatible with what a Kafka broker
//! writes and reads. A [`LogDir`] is a Kafka `log.dirs` root holding many partitions, with the
//! root's lock, clean-shutdown marker and offset checkpoints. This crate is the facade most
//! users depend on: it re-exports what they need from `seglog-segment`, `seglog-records` and
//! `seglog-index-core`.
//!
//! What it does: opening and loading as Kafka's `LogLoader` (leftover `.deleted` / `.cleaned` /
//! `.swap` files, recovery from the recovery point after an unclean shutdown), leader and
//! follower appends with rolls, reads bounded by the log end or the high watermark (zero-copy
//! [`Log::read`], or [`Log::read_into`] a reused buffer, usually in one `pread`), ListOffsets
//! lookups, retention in Kafka's order, delayed deletion, truncation, flush policies, durable
//! appends with group commit, and a read-only mode that never writes in the directory.
//!
//! It also splits, at load, a segment whose offsets overflow its base offset (KAFKA-6264), with
//! Kafka's crash-safe `.cleaned` / `.swap` protocol.
//!
//! It keeps Kafka's leader-epoch cache (`leader-epoch-checkpoint`, [`LeaderEpochCache`]):
//! leader appends in an epoch ([`Log::append_as_leader`]) stamp it on their batches, every
//! append records a new epoch's start, truncations trim it, loading rebuilds it from the
//! batches it recovers, and [`Log::end_offset_for_epoch`] answers `OffsetsForLeaderEpoch`.
//!
//! It keeps Kafka's producer state (`ProducerStateManager`): leader appends of idempotent and
//! transactional producers are validated (a retry of one of the last 5 batches returns the
//! original offsets and writes nothing, [`AppendInfo::duplicate`]; out-of-order sequences and
//! fenced epochs are typed [`AppendErrorKind`] errors), `.snapshot` files are taken at roll and
//! close and loaded at open, and the state is rebuilt after a crash. Transaction markers are
//! written with [`Log::write_txn_marker`]; aborts go to the segment's `.txnindex`;
//! [`Log::last_stable_offset`] bounds [`Isolation::ReadCommitted`] reads, which return the
//! aborted transactions of the range and whose record readers drop aborted records.
//!
//! On top of these primitives, [`IdempotentProducer`] keeps a producer's sequences per
//! partition, retries the very same batch (answered as a duplicate, also after a crash and
//! reopen) and bumps its epoch on an out-of-order or fenced answer, as Kafka's client does;
//! [`TransactionalProducer`] fences older epochs of a producer id in a [`LogDir`] (Kafka's
//! `InitProducerId`: a commit a crash interrupted is completed from its logged decision, every
//! other open transaction aborted), and its [`Transaction`] appends to any partitions and ends
//! with one COMMIT or ABORT marker on each partition touched, atomically across partitions;
//! with [`TransactionVersion::V2`] every transaction end bumps the epoch, as Kafka's
//! transactions v2.
//!
//! It compacts `cleanup.policy=compact` logs as Kafka's log cleaner does ([`Log::clean`], or
//! [`Log::tick`] when a log is due): the latest record of every key, tombstones until their
//! KIP-534 delete horizon, aborted transactions dropped, markers kept while their data is,
//! producers' last batches kept, offsets unchanged, swapped in with Kafka's crash-safe
//! `.cleaned` / `.swap` / `.deleted` protocol; `cleaner-offset-checkpoint` in the root.
//!
//! What it deliberately does not do: replication, a transaction coordinator with its
//! transaction log (a commit across partitions logs its decision in a small seglog-only
//! file of the root instead, [`TxnDecision`], which makes it atomic across a crash), Kafka's
//! transaction verification guard, which needs a coordinator, and the remote half of tiered
//! storage: [`remote`] is the contract with a remote tier (KIP-405), which a copier such as
//! `seglog-tiered` implements; the log offers it sealed segments ([`Log::tier_candidates`],
//! [`Log::subscribe_sealed`]), keeps local retention to what the tier holds, and reads below its
//! local log start from the tier ([`Log::set_remote_tier`]). Background work
//! runs only when the user calls [`Log::tick`] (or [`LogDir::tick`]), or on the thread the
//! user opts into with [`Log::spawn_ticker`] (or [`LogDir::spawn_ticker`]). The one other
//! thread is a log's sync thread, which runs only while async durability waits
//! ([`Log::append_durable_async`], [`Log::sync_to_async`]) are pending and exits when none is
//! left.
//!
//! **Reading records.** [`Log::reader`] (borrowed: records are views over one reused buffer,
//! the fast path) and [`Log::owned_reader`] (owned records, until it reports
//! [`NextRecord::CaughtUp`]: caught up, not finished) walk records from an offset in offset
//! order, keep their position, skip the records below the start in the first batch, step over
//! compacted gaps, check batch CRCs and decompress with a bound ([`ReaderOptions`]). [`Log::wait_for`] blocks until the visible end passes an offset (woken
//! by appends and high-watermark moves, never by a timer), for tail-following consumers and
//! long-poll fetches; [`Log::wait_for_async`] is its future, for any executor (no runtime
//! dependency, never blocks the executor's thread).
//!
//! **Async durable appends.** [`Log::append_durable_async`] appends at page-cache durability on
//! the calling thread and returns a future that completes once the append is durable through
//! the group commit; [`Log::sync_to_async`] is the future of [`Log::sync_to`]. Both work on any
//! executor (no runtime dependency): the fsync runs on the log's sync thread, never on the
//! polling thread, and is shared with durable appends and `sync_to` callers.
//!
//! **Which calls block.** `wait_for` (on a condvar, until its timeout);
//! [`Log::append_durable`], [`Log::sync_to`], `flush`, `tick` and `close` (on an fsync); appends
//! (also the append part of `append_durable_async`), rolls, retention and truncation (on the
//! writer lock and file writes; with `flush.messages` set, the append that crosses it also
//! flushes); opening a log (reads and recovery). Reads never wait for the writer, only for
//! their own `pread`s. The futures (`wait_for_async`, `sync_to_async`, the durability part of
//! `append_durable_async`) never block.
//!
//! **The high watermark.** Consumers ([`Isolation::ReadUncommitted`]) read below it, and
//! retention never deletes at or above it. It is monotonic: [`Log::set_high_watermark`] refuses a
//! backward move ([`Error::HighWatermarkRegression`]); only a truncation lowers it. It is
//! persisted as Kafka does, in the root's `replication-offset-checkpoint` (Kafka's text
//! checkpoint format, written with the other checkpoints by `flush`, `tick` and `close`), and
//! restored at open, clamped to the log end. By default ([`HighWatermarkPolicy::LogEnd`]) every
//! append publishes it at the new log end, so high-watermark and read-committed consumers see
//! what was appended: a standalone log has no replicas to wait for, as a Kafka partition with
//! one replica. [`HighWatermarkPolicy::DurableEnd`] has it follow [`Log::durable_end_offset`]
//! (consumers see only what an fsync made durable), and a replication layer opts into
//! [`HighWatermarkPolicy::Manual`] (only the caller moves it), through
//! [`LogOpenOptions::high_watermark`] or [`Log::set_high_watermark_policy`]. The open logs the
//! policy (the `log loaded` event's `high_watermark_policy` field).
//!
//! **Observability.** The log emits `tracing` events (INFO: opens, rolls, retention,
//! truncation, close; WARN: data cut or damaged bytes kept, slow fsyncs, unreadable
//! checkpoints; ERROR: poisoning; nothing above TRACE per append), and with the `metrics` cargo
//! feature reports Kafka's log metrics (`LogEndOffset`, `LogStartOffset`, `Size`,
//! `NumLogSegments`, `LogFlushRateAndTimeMs`, ...) through the `metrics` facade, named in
//! [`metric_names`] and labelled by topic and partition. Install the recorder before opening
//! logs. Events carry the code's domain names as fields (`base_offset`, `position`,
//! `bytes`, `reason`).
//!
//! **Where state lives.** A [`LogDir`] keeps `.lock`, `.kafka_cleanshutdown`,
//! `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` and
//! `replication-offset-checkpoint` in its root, in Kafka's formats, and while a commit across
//! partitions writes its markers its seglog-only decision record ([`TxnDecision`]). A standalone
//! [`Log::open`] uses its parent's files when the parent looks like a `log.dirs` root, and
//! otherwise keeps the same five files inside the partition directory
//! (the directory is its own one-partition root). A broker ignores those files.
//!
//! ```
//! use seglog::{BatchBuilder, Clock, Isolation, Log, LogConfig, SystemClock};
//!
//! let dir = tempfile::tempdir()?;
//! let log = Log::open(dir.path().join("orders-0"), LogConfig::default())?;
//! let mut batch = BatchBuilder::new(0);
//! batch.append(SystemClock.now_ms(), Some(b"key"), Some(b"value"), &[]);
//! let info = log.append(&batch.build()?)?;
//! assert_eq!((info.first_offset, log.log_end_offset()), (0, 1));
//! let fetched = log.read(0, 1 << 20, Isolation::LogEnd, true)?;
//! assert!(!fetched.slice.is_empty());
//! log.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod append;
mod async_commit;
mod background;
mod checkpoint;
mod clean_shutdown;
mod cleaner;
mod clock;
mod commit_join;
mod config;
mod consumer;
mod deletion;
mod durability;
mod durable;
mod durable_async;
mod error;
mod flush;
mod fsutil;
mod group_commit;
mod high_watermark;
mod home;
mod leader_epoch;
mod leftovers;
mod load;
mod lock;
mod log;
mod log_dir;
mod log_dir_progress;
mod log_epochs;
mod log_producers;
#[cfg(all(test, loom))]
mod loom_models;
mod maintenance;
mod observe;
mod producer;
mod producer_files;
mod producer_snapshot;
mod producer_state;
mod purge_horizon;
mod read;
mod read_request;
mod recovery_pool;
pub mod remote;
mod remote_config;
mod remote_log;
mod remote_read;
mod remote_rebuild;
mod remote_retention;
mod retention;
mod segment_map;
mod settings;
mod split;
mod stat_cache;
mod sync;
mod topic_config;
mod topic_partition;
mod transaction;
mod txn_check;
mod txn_decision;
mod validate;
mod view;

pub use append::{AppendInfo, Durability};
pub use background::Ticker;
/// The shared byte buffer keys and values of owned records live in.
pub use bytes::Bytes;
pub use checkpoint::{
    CLEANER_OFFSET_CHECKPOINT, CheckpointProblem, CheckpointProblemKind,
    LOG_START_OFFSET_CHECKPOINT, MAX_CHECKPOINT_BYTES, OffsetCheckpointFile,
    RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};
pub use clean_shutdown::CLEAN_SHUTDOWN_FILE;
pub use cleaner::{CleanReport, GroupReport};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{CONFIG_KEYS, CleanupPolicy, DirtyRatio, LogConfig};
pub use consumer::{
    DEFAULT_FETCH_BYTES, DEFAULT_MAX_DECOMPRESSED_BYTES, FetchedBytes, FetchedRecord, NextRecord,
    OwnedRecordReader, PollEnd, ReaderOptions, RecordReader, RecordView, UntilCaughtUp, WaitFor,
};
pub use durable_async::{AppendDurable, SyncTo};
pub use error::{AppendErrorKind, CheckpointCorruptKind, Error, ProducerErrorKind};
pub use flush::TickReport;
pub use high_watermark::HighWatermarkPolicy;
pub use leader_epoch::{
    EpochEndOffset, EpochEntry, InvalidEpochEntry, LEADER_EPOCH_CHECKPOINT, LeaderEpochCache,
    LeaderEpochCheckpointFile, LeaderEpochSource, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET,
    parse as parse_leader_epoch_checkpoint,
};
pub use leftovers::{LeftoverDecision, RejectedSwap, SwapProblem, decide_leftovers};
pub use load::{Discontinuity, LoadReport, RecoveryDigestLimits, SegmentLoad};
pub use lock::LOCK_FILE;
pub use log::{Log, LogOpenOptions, SegmentInfo};
pub use log_dir::{LogDir, LogDirTickReport};
pub use log_dir_progress::PartitionLoaded;
pub use log_producers::{AbortedTransaction, TransactionVersion, TxnMarker, TxnResult};
/// The names of the metrics a log reports with the `metrics` feature, each with the Kafka
/// metric it mirrors.
pub use observe::names as metric_names;
pub use producer::{IdempotentProducer, ProducerBatch};
pub use producer_files::ProducerLoad;
pub use producer_snapshot::{
    PRODUCER_SNAPSHOT_ENTRY_LEN, PRODUCER_SNAPSHOT_VERSION, ProducerSnapshot,
    ProducerSnapshotEntry, SnapshotProblem,
};
pub use producer_state::{BatchMetadata, NUM_BATCHES_TO_RETAIN, ProducerStateEntry};
pub use read::{CopiedFetch, FetchData, ListOffsets, TimestampFetch};
pub use read_request::ReadRequest;
pub use retention::{DeletedSegment, RetentionReason, RetentionReport};
/// What is malformed in a batch or record ([`RecordsError`]'s `Corrupt` variant).
pub use seglog_records::CorruptKind as RecordCorruptKind;
/// The error of the record layer (batch building, parsing and record decoding); `?` turns it
/// into [`Error::Records`].
pub use seglog_records::Error as RecordsError;
/// One timestamp type for what a topic stamps (`LogConfig::message_timestamp_type`,
/// `message.timestamp.type`) and what a batch carries (`BatchHeader::timestamp_type`).
pub use seglog_records::TimestampType;
pub use seglog_records::{
    BatchBuilder, BatchHeader, BatchRef, Batches, Compression, ControlRecord, ControlRecordType,
    EndTransactionMarker, Header, HeaderRefs, OwnedBatch, OwnedBatches, Record, RecordRef,
    RecordRefs, Records,
};
/// What is damaged in a segment ([`seglog_segment::Error::Corrupt`] inside
/// [`Error::Segment`]); a damaged batch carries a [`RecordCorruptKind`].
pub use seglog_segment::CorruptKind as SegmentCorruptKind;
/// The segment layer's error, wrapped by [`Error::Segment`].
pub use seglog_segment::Error as SegmentError;
pub use seglog_segment::{
    AbortedTxn, FileSlice, Io, OpenReport, RebuildReason, RecoveryReport, SegmentCache,
    SliceOffsets, TimestampAndOffset, TruncationReason, decode_txn_index,
};
pub use split::SegmentSplit;
pub use topic_config::{TOPIC_CONFIG_KEYS, TopicConfigs};
pub use topic_partition::{
    PartitionDirKind, PartitionDirName, TopicPartition, parse_partition_dir_name,
};
pub use transaction::{Transaction, TransactionalProducer};
pub use txn_decision::{
    MAX_TRANSACTION_PARTITIONS, MAX_TXN_DECISION_BYTES, TXN_DECISION_PREFIX, TXN_DECISION_VERSION,
    TxnDecision, TxnDecisionProblem,
};
pub use view::{Isolation, OffsetMetadata};

// Compile-time guarantees: the handles users share between threads are `Send + Sync`.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Log>();
    send_sync::<LogDir>();
    send_sync::<RecordReader<'static>>();
    send_sync::<OwnedRecordReader<'static>>();
    send_sync::<Error>();
    send_sync::<FetchData>();
};

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// The crate README's example compiles and runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
