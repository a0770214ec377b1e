//! seglog's side: a [`Log`] in a temp dir, each step applied through its public API.

mod maintenance;

use std::path::PathBuf;
use std::sync::Arc;

use seglog::{
    Batches, ControlRecordType, Durability, EndTransactionMarker, Error, HighWatermarkPolicy,
    Isolation, ListOffsets, Log, LogConfig, LogOpenOptions, ManualClock, TransactionVersion,
    TxnMarker, TxnResult,
};
use seglog_records::{BatchBuilder, Compression};

use crate::compare::kafka_class;
use crate::history::{BatchSpec, Codec, Op, Step};
use crate::observe::{Fetch, Observation, Outcome, Producer, State};

/// The leader epoch of the markers' bytes (both sides write them with the current leader
/// epoch, [`Ours::leader_epoch`]).
pub const LEADER_EPOCH: i32 = 0;
/// What a fetch may return (Kafka's `fetch.max.bytes` default): a whole segment.
pub const FETCH_BYTES: u32 = 1 << 20;

/// Facts about a step that are not compared but counted (the coverage table).
#[derive(Debug, Clone, Copy, Default)]
pub struct Notes {
    /// A truncation whose offset lay inside a batch (its records below the offset go too: a
    /// gap in the offsets).
    pub truncated_inside_batch: bool,
    /// A truncation while a transaction that began below its offset was open.
    pub truncated_inside_txn: bool,
    /// A truncation that removed a transaction marker (reopening its transaction).
    pub truncated_marker: bool,
    /// The append was answered as a duplicate.
    pub duplicate: bool,
    /// A compaction round ran (Kafka's `LogCleaner` would start one).
    pub cleaned: bool,
}

/// seglog's log for one history.
pub struct Ours {
    dir: PathBuf,
    config: LogConfig,
    log: Option<Log>,
    /// The log's clock, set to the step's clock before each step (so that a marker seglog
    /// builds carries the timestamp of Kafka's copy).
    clock: Arc<ManualClock>,
}

/// How the log opens: the high watermark moves only when the history moves it, as Kafka's
/// `UnifiedLog` (whose replica manager moves it) does.
fn options(clock: &Arc<ManualClock>) -> LogOpenOptions {
    LogOpenOptions {
        high_watermark: HighWatermarkPolicy::Manual,
        clock: clock.clone(),
        ..LogOpenOptions::default()
    }
}

impl Ours {
    /// A fresh log in `dir` (which must not exist) with `segment_bytes`.
    ///
    /// # Errors
    /// The open's error, as text.
    pub fn open(dir: PathBuf, segment_bytes: i32) -> Result<Self, String> {
        let config = LogConfig {
            segment_bytes,
            ..LogConfig::default()
        };
        let clock = Arc::new(ManualClock::new(crate::run::now_ms()));
        let log = Log::open_with(&dir, config.clone(), options(&clock))
            .map_err(|e| format!("seglog open: {e}"))?;
        Ok(Ours {
            dir,
            config,
            log: Some(log),
            clock,
        })
    }

    fn log(&self) -> &Log {
        // The log is only absent inside `reopen`.
        self.log
            .as_ref()
            .unwrap_or_else(|| unreachable!("seglog's log is open between steps"))
    }

    /// Applies `step` (the append's bytes are `batch`) and observes the result.
    pub fn apply(&mut self, step: &Step, batch: &[u8]) -> (Observation, Notes) {
        let mut notes = Notes::default();
        let outcome = match &step.op {
            Op::Append(_) => {
                match self
                    .log()
                    .append_as_leader(batch, self.leader_epoch(), Durability::PageCache)
                {
                    Ok(info) => {
                        notes.duplicate = info.duplicate;
                        accepted(Some((info.first_offset, info.last_offset)))
                    }
                    Err(e) => refused(&e),
                }
            }
            Op::Marker {
                producer_id,
                epoch,
                coordinator_epoch,
                commit,
            } => {
                let result = if *commit {
                    TxnResult::Commit
                } else {
                    TxnResult::Abort
                };
                match self.log().write_txn_marker(
                    *producer_id,
                    *epoch,
                    *coordinator_epoch,
                    result,
                    Some(self.leader_epoch()),
                    Durability::PageCache,
                ) {
                    Ok(info) => accepted(Some((info.first_offset, info.last_offset))),
                    Err(e) => refused(&e),
                }
            }
            Op::Roll => result(self.log().roll()),
            Op::Truncate { offset } => {
                notes = self.truncation_notes(*offset);
                result(self.log().truncate_to(*offset))
            }
            Op::HighWatermark { offset } => {
                let log = self.log();
                let target = (*offset).min(log.log_end_offset());
                if target > log.high_watermark() {
                    result(log.set_high_watermark(target).map(|_| ()))
                } else {
                    accepted(None)
                }
            }
            Op::Reopen => result(self.reopen()),
            op if op.is_maintenance() => {
                notes.cleaned = matches!(op, Op::Clean { .. }) && self.kafka_would_clean();
                self.maintain(op)
            }
            other => self.apply_part_b(other, batch, &mut notes),
        };
        let observation = Observation {
            outcome,
            state: self.state(),
            read_uncommitted: self.fetch(step.fetch_offset, Isolation::ReadUncommitted),
            read_committed: self.fetch(step.fetch_offset, Isolation::ReadCommitted),
            fresh_first_unstable: None,
            kept_commit_markers: Vec::new(),
            files: step.op.is_maintenance().then(|| self.files()),
            file_batches: step.op.is_maintenance().then(|| self.file_batches()),
            settled_first_unstable: None,
            batch_base_at_hw: self.batch_base_at_high_watermark(),
            batch_base_at_log_start: self.batch_base_at_log_start(),
        };
        (observation, notes)
    }

    /// The observation right after the open (step 0).
    pub fn initial(&self) -> Observation {
        Observation {
            outcome: accepted(None),
            state: self.state(),
            read_uncommitted: self.fetch(0, Isolation::ReadUncommitted),
            read_committed: self.fetch(0, Isolation::ReadCommitted),
            fresh_first_unstable: None,
            kept_commit_markers: Vec::new(),
            files: None,
            file_batches: None,
            settled_first_unstable: None,
            batch_base_at_hw: self.batch_base_at_high_watermark(),
            batch_base_at_log_start: self.batch_base_at_log_start(),
        }
    }

    /// Whether `offset` is where a batch starts or at or past the log end (a possible high
    /// watermark: both sides clamp a target past the end to it).
    pub fn is_batch_boundary(&self, offset: i64) -> bool {
        let log = self.log();
        if offset >= log.log_end_offset() {
            return true;
        }
        let Ok(data) = log.read(offset, FETCH_BYTES, Isolation::LogEnd, true) else {
            return false;
        };
        let Ok(bytes) = data.slice.read_to_vec() else {
            return false;
        };
        Batches::new(&bytes[..], 0)
            .next()
            .and_then(Result::ok)
            .is_some_and(|b| b.header().base_offset == Some(offset))
    }

    /// Whether the active segment holds no bytes and its base offset is below the log end.
    pub fn active_segment_empty_below_end(&self) -> bool {
        let log = self.log();
        log.segments()
            .last()
            .is_some_and(|s| s.size_bytes == 0 && s.base_offset < log.log_end_offset())
    }

    /// Rolls seglog's log (after Kafka rolled for an append that wrote nothing).
    ///
    /// # Errors
    /// The roll's error.
    pub fn roll(&self) -> seglog::Result<()> {
        self.log().roll()
    }

    fn reopen(&mut self) -> seglog::Result<()> {
        if let Some(log) = self.log.take() {
            let closed = log.close();
            drop(log);
            closed?;
        }
        self.log = Some(Log::open_with(
            &self.dir,
            self.config.clone(),
            options(&self.clock),
        )?);
        Ok(())
    }

    fn truncation_notes(&self, offset: i64) -> Notes {
        let log = self.log();
        let mut notes = Notes::default();
        if offset >= log.log_end_offset() {
            return notes;
        }
        notes.truncated_inside_txn = log
            .ongoing_transactions()
            .iter()
            .any(|(_, first)| *first < offset);
        if let Ok(data) = log.read(offset, FETCH_BYTES, Isolation::LogEnd, true)
            && let Ok(bytes) = data.slice.read_to_vec()
        {
            for (i, batch) in Batches::new(&bytes[..], 0).flatten().enumerate() {
                let header = batch.header();
                if i == 0 && header.base_offset.is_some_and(|b| b < offset) {
                    notes.truncated_inside_batch = true;
                }
                if header.is_control && header.last_offset >= offset {
                    notes.truncated_marker = true;
                }
            }
        }
        notes
    }

    fn state(&self) -> State {
        let log = self.log();
        let mut producers: Vec<Producer> = log
            .producer_states()
            .into_iter()
            .map(|p| Producer {
                producer_id: p.producer_id,
                epoch: p.producer_epoch,
                coordinator_epoch: p.coordinator_epoch,
                last_sequence: p.last_sequence(),
                last_offset: p.batches().last().map_or(-1, |b| b.last_offset),
                txn_first_offset: p.current_txn_first_offset,
            })
            .collect();
        producers.sort_by_key(|p| p.producer_id);
        State {
            log_start: log.log_start_offset(),
            log_end: log.log_end_offset(),
            high_watermark: log.high_watermark(),
            first_unstable: log.first_unstable_offset(),
            last_stable: log.last_stable_offset(),
            segments: log.segments().iter().map(|s| s.base_offset).collect(),
            producers,
            leader_epochs: log.leader_epochs(),
        }
    }

    fn fetch(&self, offset: i64, isolation: Isolation) -> Fetch {
        let data = match self.log().read(offset, FETCH_BYTES, isolation, true) {
            Ok(data) => data,
            Err(e) => {
                return Fetch {
                    refused: Some(kafka_class(&e)),
                    message: Some(e.to_string()),
                    ..Fetch::default()
                };
            }
        };
        let bytes = match data.slice.read_to_vec() {
            Ok(bytes) => bytes,
            Err(e) => {
                return Fetch {
                    refused: Some("seglog:slice read".into()),
                    message: Some(e.to_string()),
                    ..Fetch::default()
                };
            }
        };
        let mut batches = Vec::new();
        let mut batch_txns = Vec::new();
        for batch in Batches::new(&bytes[..], 0) {
            match batch {
                Ok(b) => {
                    let h = b.header();
                    batches.push((base_offset(&b), h.last_offset, h.is_control));
                    batch_txns.push(batch_txn(&b));
                }
                Err(e) => {
                    return Fetch {
                        refused: Some("seglog:batch parse".into()),
                        message: Some(e.to_string()),
                        ..Fetch::default()
                    };
                }
            }
        }
        Fetch {
            refused: None,
            batches: Some(batches),
            aborted: data
                .aborted_transactions
                .map(|a| a.iter().map(|t| (t.producer_id, t.first_offset)).collect()),
            message: None,
            batch_txns: Some(batch_txns),
        }
    }
}

/// A batch's base offset as Kafka's `RecordBatch.baseOffset()` gives it: a legacy message's is
/// its first (inner) record's offset.
fn base_offset(batch: &seglog_records::BatchRef<'_>) -> i64 {
    match batch.header().base_offset {
        Some(base) => base,
        None => batch
            .records(1 << 20)
            .next()
            .and_then(Result::ok)
            .map_or(-1, |r| r.offset),
    }
}

fn accepted(offsets: Option<(i64, i64)>) -> Outcome {
    Outcome {
        refused: None,
        first_offset: offsets.map(|o| o.0),
        last_offset: offsets.map(|o| o.1),
        message: None,
        timestamp_lookup: None,
        searched_empty_segment: false,
        searched_segment_end: None,
        batches_max_timestamp: None,
        max_timestamp_so_far_stale: false,
        skipped_stale_segment: None,
        retention_kept_by_stale_max_timestamp: Vec::new(),
        skipped_truncation_replay: false,
    }
}

fn refused(e: &Error) -> Outcome {
    Outcome {
        refused: Some(kafka_class(e)),
        message: Some(e.to_string()),
        ..Outcome::default()
    }
}

fn result(r: seglog::Result<()>) -> Outcome {
    match r {
        Ok(()) => accepted(None),
        Err(e) => refused(&e),
    }
}

/// The bytes of an append's batch (the same bytes go to both sides), timestamps `now_ms`.
///
/// # Errors
/// The builder's error, as text.
pub fn batch_bytes(spec: &BatchSpec, step: usize, now_ms: i64) -> Result<Vec<u8>, String> {
    let compression = match spec.codec {
        Codec::None => Compression::None,
        Codec::Gzip => Compression::Gzip,
        Codec::Snappy => Compression::Snappy,
        Codec::Lz4 => Compression::Lz4,
        Codec::Zstd => Compression::Zstd,
    };
    let mut builder = BatchBuilder::new(0)
        .compression(compression)
        .producer(spec.producer_id, spec.epoch, spec.base_sequence)
        .transactional(spec.transactional);
    for i in 0..spec.records {
        let key = format!("key-{}", (step + usize::from(i)) % 7);
        let value = format!("value of step {step} record {i}");
        builder.append(now_ms, Some(key.as_bytes()), Some(value.as_bytes()), &[]);
    }
    builder
        .build()
        .map(|b| b.to_vec())
        .map_err(|e| format!("build batch: {e}"))
}

/// The bytes of a marker batch as `Log::write_txn_marker` writes it (for Kafka's side).
///
/// # Errors
/// The builder's error, as text.
pub fn marker_bytes(
    producer_id: i64,
    epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    now_ms: i64,
) -> Result<Vec<u8>, String> {
    BatchBuilder::end_transaction_marker(
        0,
        now_ms,
        LEADER_EPOCH,
        producer_id,
        epoch,
        if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        },
        EndTransactionMarker::new(coordinator_epoch),
    )
    .map(|b| b.to_vec())
    .map_err(|e| format!("build marker: {e}"))
}

/// The operations of part B (follower appends, markers under a transaction version, offset
/// for timestamp, producer expiry, leader appends with chosen timestamps).
impl Ours {
    /// The epoch leader appends and markers are written with: the latest in the cache (0 for
    /// an empty one), as a leader appends in the epoch it was elected in (`BecomeLeader`
    /// assigns a new one; follower appends bring the leader's). Kafka's side takes its own
    /// cache's latest, which the comparator checks is the same after every step.
    pub fn leader_epoch(&self) -> i32 {
        self.log().latest_epoch().unwrap_or(0).max(0)
    }

    /// Assigns `epoch` from `start` in the leader-epoch cache (after Kafka did for an append
    /// that wrote nothing).
    ///
    /// # Errors
    /// The assignment's error.
    pub fn assign_epoch(&self, epoch: i32, start: i64) -> seglog::Result<()> {
        self.log().assign_epoch_start_offset(epoch, start)
    }

    /// The base offset of the first batch holding an offset at or above the high watermark
    /// (the log end when none does), when the high watermark lies below the log end.
    fn batch_base_at_high_watermark(&self) -> Option<i64> {
        let log = self.log();
        let hw = log.high_watermark();
        if hw >= log.log_end_offset() {
            return None;
        }
        let data = log.read(hw, FETCH_BYTES, Isolation::LogEnd, true).ok()?;
        let bytes = data.slice.read_to_vec().ok()?;
        match Batches::new(&bytes[..], 0).next() {
            None => Some(log.log_end_offset()),
            Some(batch) => Some(base_offset(&batch.ok()?)),
        }
    }

    /// The base offset of the first batch holding an offset at or above the log start (the
    /// log end when none does), when the log start lies below the log end.
    fn batch_base_at_log_start(&self) -> Option<i64> {
        let log = self.log();
        let start = log.log_start_offset();
        if start >= log.log_end_offset() {
            return None;
        }
        let data = log.read(start, FETCH_BYTES, Isolation::LogEnd, true).ok()?;
        let bytes = data.slice.read_to_vec().ok()?;
        match Batches::new(&bytes[..], 0).next() {
            None => Some(log.log_end_offset()),
            Some(batch) => Some(base_offset(&batch.ok()?)),
        }
    }

    /// Raises the high watermark to `offset` (after Kafka raised one in a gap).
    ///
    /// # Errors
    /// The log's error.
    pub fn raise_high_watermark(&self, offset: i64) -> seglog::Result<()> {
        self.log().set_high_watermark(offset).map(drop)
    }

    /// Sets the log's clock to the step's.
    pub fn set_clock(&self, now_ms: i64) {
        self.clock.set(now_ms);
    }

    fn apply_part_b(&self, op: &Op, bytes: &[u8], notes: &mut Notes) -> Outcome {
        let log = self.log();
        match op {
            Op::Follower {
                batches,
                leader_epoch: Some(epoch),
            } => match log.append_as_follower_in_epoch(bytes, *epoch, Durability::PageCache) {
                // Every batch from a newer leader: nothing written (Kafka's empty
                // `LogAppendInfo`, last offset -1).
                Ok(None) => Outcome {
                    last_offset: Some(-1),
                    ..Outcome::default()
                },
                Ok(Some(info)) => {
                    let legacy_first = batches.first().is_some_and(|b| b.magic < 2);
                    Outcome {
                        first_offset: (!legacy_first).then_some(info.first_offset),
                        last_offset: Some(info.last_offset),
                        ..Outcome::default()
                    }
                }
                Err(e) => refused(&e),
            },
            Op::Follower { batches, .. } => match log.append_as_follower(bytes) {
                Ok(info) => {
                    let legacy_first = batches.first().is_some_and(|b| b.magic < 2);
                    Outcome {
                        first_offset: (!legacy_first).then_some(info.first_offset),
                        last_offset: Some(info.last_offset),
                        ..Outcome::default()
                    }
                }
                Err(e) => refused(&e),
            },
            Op::TxnMarker {
                producer_id,
                epoch,
                coordinator_epoch,
                commit,
                transaction_version,
            } => {
                let marker = TxnMarker {
                    producer_id: *producer_id,
                    producer_epoch: *epoch,
                    coordinator_epoch: *coordinator_epoch,
                    result: if *commit {
                        TxnResult::Commit
                    } else {
                        TxnResult::Abort
                    },
                    leader_epoch: Some(self.leader_epoch()),
                    transaction_version: match transaction_version {
                        0 => TransactionVersion::V0,
                        1 => TransactionVersion::V1,
                        _ => TransactionVersion::V2,
                    },
                };
                match log.write_txn_marker_with(marker, Durability::PageCache) {
                    Ok(info) => accepted(Some((info.first_offset, info.last_offset))),
                    Err(e) => refused(&e),
                }
            }
            Op::OffsetForTimestamp { .. } => {
                let spec = match crate::batches::instant_of(bytes) {
                    Ok(-2) => ListOffsets::Earliest,
                    Ok(-1) => ListOffsets::Latest,
                    Ok(-3) => ListOffsets::MaxTimestamp,
                    Ok(t) => ListOffsets::Timestamp(t),
                    Err(e) => {
                        return Outcome {
                            refused: Some("seglog:harness".into()),
                            message: Some(e),
                            ..Outcome::default()
                        };
                    }
                };
                match log.offset_for_timestamp(spec) {
                    Ok(found) => Outcome {
                        timestamp_lookup: found.map(|f| crate::observe::TimestampLookup {
                            timestamp: f.timestamp_ms,
                            offset: f.offset,
                            leader_epoch: f.leader_epoch,
                        }),
                        ..Outcome::default()
                    },
                    Err(e) => refused(&e),
                }
            }
            Op::ExpireProducers { .. } => match crate::batches::instant_of(bytes) {
                Ok(now) => result(log.tick(now).map(drop)),
                Err(e) => Outcome {
                    refused: Some("seglog:harness".into()),
                    message: Some(e),
                    ..Outcome::default()
                },
            },
            Op::BecomeLeader => {
                let epoch = log.latest_epoch().map_or(0, |e| e + 1);
                result(log.assign_epoch_start_offset(epoch, log.log_end_offset()))
            }
            Op::LeaderBatches { .. } => {
                match log.append_as_leader(bytes, self.leader_epoch(), Durability::PageCache) {
                    Ok(info) => {
                        notes.duplicate = info.duplicate;
                        accepted(Some((info.first_offset, info.last_offset)))
                    }
                    Err(e) => refused(&e),
                }
            }
            _ => unreachable!("the other operations are applied by Ours::apply"),
        }
    }
}

/// What a read_committed consumer reads of `batch` (`observe::BatchTxn`): its producer id,
/// whether it is transactional, and for a control batch whether it holds an ABORT marker.
fn batch_txn(batch: &seglog::BatchRef<'_>) -> crate::observe::BatchTxn {
    let h = batch.header();
    let abort = h.is_control.then(|| {
        batch
            .control_record()
            .ok()
            .flatten()
            .is_some_and(|c| c.control_type == seglog::ControlRecordType::Abort)
    });
    (h.producer_id, h.is_transactional, abort)
}
