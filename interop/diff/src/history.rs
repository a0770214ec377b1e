//! A history: a seeded, printable list of operations, and the generator that writes one.
//!
//! The generator looks at seglog's state after every step (the log end, the high watermark,
//! what each producer was last allowed to write) to pick arguments that mean something (a
//! truncation inside the log, the next sequence of a producer, a retry of one of its last 5
//! batches); the history it records holds only concrete arguments, so it replays without the
//! generator and can be shrunk.

use std::collections::{BTreeSet, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::observe::Observation;

/// The producer ids the generator uses (a small set, so that their states interact).
pub const PRODUCER_IDS: [i64; 3] = [1000, 1001, 1002];
/// A producer id no batch ever used (markers for an unknown producer).
pub const UNKNOWN_PRODUCER_ID: i64 = 4242;

/// Record compression of a batch (every codec Kafka 4.4 writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    /// No compression.
    None,
    /// gzip.
    Gzip,
    /// snappy.
    Snappy,
    /// lz4.
    Lz4,
    /// zstd.
    Zstd,
}

/// One batch of a leader append: who writes it and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSpec {
    /// Producer id, or -1 for a plain (non-idempotent) batch.
    pub producer_id: i64,
    /// Producer epoch (-1 for a plain batch).
    pub epoch: i16,
    /// Base sequence (-1 for a plain batch).
    pub base_sequence: i32,
    /// Transactional attribute.
    pub transactional: bool,
    /// Number of records.
    pub records: u8,
    /// Codec.
    pub codec: Codec,
    /// Why the generator chose these arguments (for the coverage table; not part of the batch).
    pub kind: AppendKind,
}

/// What kind of leader append the generator meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppendKind {
    /// No producer id.
    Plain,
    /// The producer's next sequence in its epoch.
    InSequence,
    /// The same epoch and sequence range as one of the producer's last 5 batches.
    Retry,
    /// A sequence past the next one.
    OutOfOrder,
    /// An epoch below the producer's.
    Fenced,
    /// The next epoch, sequence 0.
    NewEpoch,
    /// A non-transactional batch of a producer with an open transaction.
    OutsideTxn,
}

/// One operation of a history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// `Log::append_as_leader` / `UnifiedLog.appendAsLeader` (origin CLIENT) of one batch.
    Append(BatchSpec),
    /// `Log::write_txn_marker` / `appendAsLeader` of a marker batch (origin COORDINATOR).
    Marker {
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        epoch: i16,
        /// Coordinator epoch.
        coordinator_epoch: i32,
        /// COMMIT (else ABORT).
        commit: bool,
    },
    /// `roll`.
    Roll,
    /// `truncate_to` / `truncateTo`.
    Truncate {
        /// The new log end.
        offset: i64,
    },
    /// The high watermark moves forward to `offset` (clamped to the log end); a target at or
    /// below it changes nothing.
    HighWatermark {
        /// The target.
        offset: i64,
    },
    /// A clean close and open.
    Reopen,
    /// Retention at the step's now (`Log::delete_old_segments` / `deleteOldSegments`) with
    /// `retention.ms` and `retention.bytes` set for this pass only (`-1`: that rule is off).
    Retention {
        /// `retention.ms`.
        retention_ms: i64,
        /// `retention.bytes`.
        retention_bytes: i64,
    },
    /// DeleteRecords (`Log::delete_records_before` / `maybeIncrementLogStartOffset`): the log
    /// start moves up to `offset` (-1: the high watermark).
    DeleteRecords {
        /// The new log start.
        offset: i64,
    },
    /// `truncate_fully_and_start_at` / `truncateFullyAndStartAt`.
    TruncateFully {
        /// Where the empty log starts.
        offset: i64,
    },
    /// A compaction round at the step's now (`Log::clean_at` / `Cleaner.doClean`), with
    /// cleanup.policy=compact, min.cleanable.dirty.ratio 0 and `delete.retention.ms` for the
    /// round, when Kafka's `LogCleaner` would start one (cleanable bytes above 0).
    Clean {
        /// `delete.retention.ms` (the tombstone and marker horizon).
        delete_retention_ms: i64,
    },
    /// A crash: the log is dropped without a clean close, then opened after an unclean
    /// shutdown.
    Crash {
        /// The recovery point is the base of the segment this many segments before the active
        /// one (`None`: the log end, nothing to recover).
        lag: Option<u8>,
        /// With a lag, the active `.log` is cut this many bytes short (a torn unflushed tail).
        tear_back: u16,
    },
    /// `Log::append_as_follower` / `UnifiedLog.appendAsFollower` of batches with their own
    /// offsets (gaps, other leader epochs, v0/v1 messages, every codec).
    Follower {
        /// The batches, in the order they are sent.
        batches: Vec<FollowerBatch>,
        /// The replica's leader epoch (Kafka's `appendAsFollower(records, leaderEpoch)`, seglog's
        /// `append_as_follower_in_epoch`): batches from the first one of a higher epoch are
        /// skipped. None: no limit (Kafka `Integer.MAX_VALUE`, seglog `append_as_follower`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        leader_epoch: Option<i32>,
    },
    /// `Log::write_txn_marker_with` / `appendAsLeader` (origin COORDINATOR) of a marker under
    /// a transaction version (0, 1 or 2: Kafka 4.4's `transactionVersion` argument).
    TxnMarker {
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        epoch: i16,
        /// Coordinator epoch.
        coordinator_epoch: i32,
        /// COMMIT (else ABORT).
        commit: bool,
        /// The transaction version.
        transaction_version: i16,
    },
    /// `Log::offset_for_timestamp` / `UnifiedLog.fetchOffsetByTimestamp`.
    OffsetForTimestamp {
        /// What is looked up.
        target: TimestampTarget,
    },
    /// Kafka's `removeExpiredProducers` (seglog: `Log::tick`, which runs it) at the step's
    /// clock plus `producer.id.expiration.ms` minus `ago_ms`: producers whose last batch is
    /// at least `ago_ms` old expire (unless a transaction is open). `Log::tick` also runs
    /// retention, so Kafka's side runs `deleteOldSegments` after it (a broker's retention task).
    ExpireProducers {
        /// How far back from the step's clock the expiry horizon lies.
        ago_ms: i64,
    },
    /// This replica becomes the leader of a new epoch (the latest plus one):
    /// `Log::assign_epoch_start_offset` / `UnifiedLog.assignEpochStartOffset` at the log end,
    /// as `Partition.makeLeader` does. Later leader appends and markers carry it.
    BecomeLeader,
    /// A leader append (origin CLIENT) of several batches, or of one whose records carry
    /// timestamps relative to the step's clock.
    LeaderBatches {
        /// The batches, concatenated in this order.
        batches: Vec<TimedBatch>,
    },
}

/// What an offset-for-timestamp lookup asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampTarget {
    /// `EARLIEST_TIMESTAMP` (-2).
    Earliest,
    /// `LATEST_TIMESTAMP` (-1).
    Latest,
    /// `MAX_TIMESTAMP` (-3).
    MaxTimestamp,
    /// The step's clock minus this many milliseconds.
    AgoMs(i64),
}

/// One batch of a follower append, with its own offsets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowerBatch {
    /// Base offset (for a legacy compressed wrapper: its first inner offset; uncompressed
    /// legacy records are one message each, at consecutive offsets).
    pub base_offset: i64,
    /// Magic: 0, 1 or 2.
    pub magic: u8,
    /// `partitionLeaderEpoch` (v2 only).
    pub leader_epoch: i32,
    /// Number of records.
    pub records: u8,
    /// Codec (legacy messages: none or gzip).
    pub codec: Codec,
    /// Producer id, or -1 (v2 only).
    pub producer_id: i64,
    /// Producer epoch (-1 without a producer).
    pub epoch: i16,
    /// Base sequence (-1 without a producer).
    pub base_sequence: i32,
    /// Transactional attribute.
    pub transactional: bool,
    /// A COMMIT (true) or ABORT (false) marker instead of records (v2, with a producer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<bool>,
}

impl FollowerBatch {
    /// The offset after the batch.
    pub fn next_offset(&self) -> i64 {
        if self.marker.is_some() {
            self.base_offset + 1
        } else {
            self.base_offset + i64::from(self.records)
        }
    }
}

/// One batch of a [`Op::LeaderBatches`] append.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedBatch {
    /// Who writes it and what it holds.
    pub batch: BatchSpec,
    /// Each record's timestamp relative to the step's clock (one per record; the batch's
    /// record count is this list's length).
    pub timestamp_offsets_ms: Vec<i64>,
}

impl Op {
    /// The operation's name in the coverage table.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Append(b) => match b.kind {
                AppendKind::Plain => "append plain",
                AppendKind::InSequence if b.transactional => "append txn",
                AppendKind::InSequence => "append idempotent",
                AppendKind::Retry => "append retry",
                AppendKind::OutOfOrder => "append out-of-order",
                AppendKind::Fenced => "append fenced epoch",
                AppendKind::NewEpoch => "append new epoch",
                AppendKind::OutsideTxn => "append non-txn in txn",
            },
            Op::Marker { commit: true, .. } => "marker COMMIT",
            Op::Marker { commit: false, .. } => "marker ABORT",
            Op::Roll => "roll",
            Op::Truncate { .. } => "truncate",
            Op::HighWatermark { .. } => "high watermark",
            Op::Reopen => "reopen",
            Op::Retention {
                retention_ms,
                retention_bytes,
            } => match (*retention_ms >= 0, *retention_bytes >= 0) {
                (true, true) => "retention by time and size",
                (true, false) => "retention by time",
                (false, true) => "retention by size",
                (false, false) => "retention (log start only)",
            },
            Op::DeleteRecords { .. } => "delete records",
            Op::TruncateFully { .. } => "truncate fully and start at",
            Op::Clean { .. } => "compaction round",
            Op::Crash { lag: None, .. } => "crash (no lag)",
            Op::Crash { tear_back: 0, .. } => "crash (lagging recovery point)",
            Op::Crash { .. } => "crash (lagging, torn tail)",
            other => other.part_b_name(),
        }
    }
}

impl Op {
    /// Retention, DeleteRecords, truncate fully, a cleaning round or a crash: the operations
    /// after which the segment files are compared too.
    pub fn is_maintenance(&self) -> bool {
        matches!(
            self,
            Op::Retention { .. }
                | Op::DeleteRecords { .. }
                | Op::TruncateFully { .. }
                | Op::Clean { .. }
                | Op::Crash { .. }
        )
    }
}

/// One step: an operation, then fetches from `fetch_offset` (read_uncommitted and
/// read_committed) and a comparison of everything observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// What is done.
    #[serde(flatten)]
    pub op: Op,
    /// Where the step's fetches start.
    pub fetch_offset: i64,
}

/// What the generator remembers of one producer (from seglog's answers).
#[derive(Debug, Clone, Default)]
struct ProducerModel {
    epoch: i16,
    next_sequence: i32,
    coordinator_epoch: i32,
    in_txn: bool,
    /// (epoch, base sequence, records, transactional) of the last accepted batches.
    recent: VecDeque<(i16, i32, u8, bool)>,
}

/// Writes a history step by step from a seed, looking at seglog's observations.
pub struct Generator {
    rng: StdRng,
    producers: Vec<ProducerModel>,
    /// Offsets at batch boundaries (a batch's last offset + 1, and the log end after a
    /// truncation): where a high watermark can be in a broker.
    boundaries: BTreeSet<i64>,
    /// Offsets of markers that completed a transaction and are not yet below the high
    /// watermark (the transaction is still undecided).
    undecided_markers: Vec<i64>,
    /// Which producers had an open transaction before the step.
    open_before: Vec<i64>,
    /// What the operations of part B (follower appends, versioned markers, lookups, expiry,
    /// timed leader appends) remember.
    part_b: PartB,
}

/// The generator's state for the operations of part B.
#[derive(Debug, Clone, Default)]
struct PartB {
    /// The leader epoch follower batches carry (it only grows, as a partition's does).
    follower_epoch: i32,
}

impl Generator {
    /// A generator for the history of `seed`.
    pub fn new(seed: u64) -> Self {
        Generator {
            rng: StdRng::seed_from_u64(seed),
            producers: vec![ProducerModel::default(); PRODUCER_IDS.len()],
            boundaries: BTreeSet::from([0]),
            undecided_markers: Vec::new(),
            open_before: Vec::new(),
            part_b: PartB::default(),
        }
    }

    /// The next step, given what seglog showed after the previous one.
    pub fn next_step(&mut self, last: &Observation) -> Step {
        let maintenance = self.maintenance(last);
        let state = &last.state;
        let roll = self.rng.random_range(0..100);
        let op = match roll {
            0..15 => Op::Append(self.plain()),
            15..50 => Op::Append(self.producer_batch()),
            50..62 => self.marker(),
            62..66 => Op::Roll,
            66..72 => {
                let back = self
                    .rng
                    .random_range(0..=8.min(state.log_end - state.log_start));
                // Anywhere, also inside a batch: seglog then rolls an empty segment at the
                // target, Kafka does not (rule `truncation-inside-a-batch-rolls-at-the-target`;
                // the runner rolls Kafka's log too).
                let offset = state.log_end - back;
                // Also when the producer-state rebuild replays a marker that completed a
                // transaction (rule `replayed-decided-transactions-kept-until-the-next-high-
                // watermark-move`; interop/kafka/README.md, Findings, K3).
                Op::Truncate { offset }
            }
            // At a batch boundary only: a broker's high watermark is a replica's log end, and
            // Kafka 4.4 lowers one inside a batch to the batch's base offset at the next
            // HIGH_WATERMARK read (`LogSegment.read` builds the converted metadata from the
            // batch's base offset; interop/kafka/README.md, Findings).
            72..95 => {
                let candidates: Vec<i64> = self
                    .boundaries
                    .range(state.high_watermark..=state.log_end)
                    .copied()
                    .collect();
                let offset = if candidates.is_empty() || self.rng.random_bool(0.1) {
                    state.log_end + self.rng.random_range(0..=1)
                } else {
                    candidates[self.rng.random_range(0..candidates.len())]
                };
                Op::HighWatermark { offset }
            }
            // Also while a completed transaction is still undecided (its marker not below the
            // high watermark; interop/kafka/README.md, Findings, S1).
            _ => Op::Reopen,
        };
        let op = maintenance.or_else(|| self.part_b_op(state)).unwrap_or(op);
        let fetch_offset = if self.rng.random_bool(0.05) {
            state.log_end + 1
        } else {
            self.rng.random_range(state.log_start..=state.log_end)
        };
        Step { op, fetch_offset }
    }

    /// Tells the generator what seglog answered to `step` (accepted or not), so that its
    /// producer model follows the log.
    pub fn learn(&mut self, step: &Step, accepted: bool, after: &Observation) {
        self.learn_part_b(step, accepted, after);
        if let (Op::Marker { producer_id, .. }, true, Some(m)) =
            (&step.op, accepted, after.outcome.last_offset)
            && self.open_before.contains(producer_id)
        {
            self.undecided_markers.push(m);
        }
        let end = after.state.log_end;
        let hw = after.state.high_watermark;
        self.undecided_markers.retain(|m| *m >= hw && *m < end);
        self.open_before = after
            .state
            .producers
            .iter()
            .filter(|p| p.txn_first_offset.is_some())
            .map(|p| p.producer_id)
            .collect();
        // Truncations and reopens can change any producer: take seglog's state as it is.
        for (i, pid) in PRODUCER_IDS.iter().enumerate() {
            let model = &mut self.producers[i];
            match after.state.producers.iter().find(|p| p.producer_id == *pid) {
                Some(p) => {
                    model.epoch = p.epoch;
                    model.next_sequence = p.last_sequence.wrapping_add(1).max(0);
                    model.coordinator_epoch = p.coordinator_epoch;
                    model.in_txn = p.txn_first_offset.is_some();
                }
                None => *model = ProducerModel::default(),
            }
        }
        if let (Op::Append(b), true) = (&step.op, accepted)
            && let Some(i) = PRODUCER_IDS.iter().position(|p| *p == b.producer_id)
            && b.kind != AppendKind::Retry
        {
            let recent = &mut self.producers[i].recent;
            recent.push_back((b.epoch, b.base_sequence, b.records, b.transactional));
            if recent.len() > 5 {
                recent.pop_front();
            }
        }
        if let (Some(last), true) = (after.outcome.last_offset, accepted) {
            self.boundaries.insert(last + 1);
        }
        if let Op::Truncate { offset } = step.op {
            self.boundaries.retain(|b| *b <= after.state.log_end);
            self.boundaries.insert(offset.min(after.state.log_end));
        }
        // The runner takes back Kafka's write of an overlapping follower batch that seglog
        // refused by truncating Kafka's log (rule `overlapping-follower-batch-refused`), and
        // that truncation's rebuild knows each producer's batches from a snapshot on only: no
        // retry of an earlier batch after it either (long-run seed 205864: a retry of sequence
        // 3, seglog's duplicate, Kafka's `OutOfOrderSequence`).
        let kafka_truncated = matches!(step.op, Op::Follower { .. })
            && after.outcome.refused.as_deref() == Some("seglog:OverlappingBatch");
        if matches!(step.op, Op::Truncate { .. } | Op::Reopen) || kafka_truncated {
            for m in &mut self.producers {
                m.recent.clear();
            }
        }
        self.learn_maintenance(step, after);
    }

    /// A maintenance operation (about one step in ten), or `None` for the others.
    fn maintenance(&mut self, last: &Observation) -> Option<Op> {
        let state = &last.state;
        let op = match self.rng.random_range(0..100) {
            0..3 => Op::Clean {
                // Kafka's default mostly; 0 lets a later round remove the markers and
                // tombstones the first one kept.
                delete_retention_ms: if self.rng.random_bool(0.3) {
                    0
                } else {
                    86_400_000
                },
            },
            // Not while a completed transaction is undecided (as for a reopen: Findings, S1).
            3..5 if self.undecided_markers.is_empty() => {
                let lag = self
                    .rng
                    .random_bool(0.8)
                    .then(|| self.rng.random_range(0..=3));
                // Not when the log start lies inside the active segment: a tear could then end
                // the log below its checkpointed log start, which seglog ignores and Kafka
                // answers by emptying the log (docs/format.md, Deliberate differences, "A
                // log-start checkpoint beyond the log end"; the histories would part for good).
                let active = state.segments.last().copied().unwrap_or(0);
                let tear_back =
                    if lag.is_some() && state.log_start <= active && self.rng.random_bool(0.5) {
                        self.rng.random_range(1..=300)
                    } else {
                        0
                    };
                Op::Crash { lag, tear_back }
            }
            5..7 => {
                // A history lasts about a second: a time limit of a few hundred ms cuts it
                // somewhere; a size limit of a few KB likewise.
                let retention_ms = if self.rng.random_bool(0.6) {
                    self.rng.random_range(0..800)
                } else {
                    -1
                };
                let retention_bytes = if self.rng.random_bool(0.5) {
                    self.rng.random_range(0..6000)
                } else {
                    -1
                };
                Op::Retention {
                    retention_ms,
                    retention_bytes,
                }
            }
            7..9 => {
                let offset = match self.rng.random_range(0..10) {
                    0 => -1,
                    1 => self.rng.random_range(-2..=state.log_start),
                    2 => state.high_watermark + self.rng.random_range(1..=2),
                    _ => self
                        .rng
                        .random_range(state.log_start..=state.high_watermark),
                };
                Op::DeleteRecords { offset }
            }
            9 => Op::TruncateFully {
                offset: match self.rng.random_range(0..3) {
                    0 => self.rng.random_range(0..=state.log_end),
                    _ => state.log_end + self.rng.random_range(0..=5),
                },
            },
            _ => return None,
        };
        Some(op)
    }

    /// What the maintenance operations change in the generator's view.
    fn learn_maintenance(&mut self, step: &Step, after: &Observation) {
        let state = &after.state;
        match step.op {
            Op::TruncateFully { .. } => {
                self.boundaries = BTreeSet::from([state.log_end]);
                self.undecided_markers.clear();
                for m in &mut self.producers {
                    m.recent.clear();
                }
            }
            // A cleaning round removed batches below where it could clean (the LSO and the
            // active segment): an old boundary there may now be in a gap (a truncation to it
            // would leave the floor segment ending below the new log end, where seglog rolls an
            // empty segment and Kafka does not: Findings, K2). The segment bases stay.
            Op::Clean { .. } => {
                let active = state.segments.last().copied().unwrap_or(0);
                let limit = state.last_stable.min(active);
                self.boundaries.retain(|b| *b >= limit);
                self.boundaries
                    .extend(state.segments.iter().copied().filter(|b| *b < limit));
            }
            Op::Crash { .. } => {
                let end = state.log_end;
                self.boundaries.retain(|b| *b <= end);
                self.boundaries.insert(end);
                for m in &mut self.producers {
                    m.recent.clear();
                }
            }
            _ => {}
        }
    }

    fn codec(&mut self) -> Codec {
        match self.rng.random_range(0..10) {
            0 => Codec::Gzip,
            1 => Codec::Snappy,
            2 => Codec::Lz4,
            3 => Codec::Zstd,
            _ => Codec::None,
        }
    }

    fn plain(&mut self) -> BatchSpec {
        BatchSpec {
            producer_id: -1,
            epoch: -1,
            base_sequence: -1,
            transactional: false,
            records: self.rng.random_range(1..=5),
            codec: self.codec(),
            kind: AppendKind::Plain,
        }
    }

    fn producer_batch(&mut self) -> BatchSpec {
        let i = self.rng.random_range(0..PRODUCER_IDS.len());
        let records = self.rng.random_range(1..=4);
        let codec = self.codec();
        let m = self.producers[i].clone();
        let roll = self.rng.random_range(0..100);
        let (epoch, base_sequence, transactional, kind, records) = match roll {
            0..12 if !m.recent.is_empty() => {
                let (e, s, n, t) = m.recent[self.rng.random_range(0..m.recent.len())];
                (e, s, t, AppendKind::Retry, n)
            }
            12..20 => (
                m.epoch,
                m.next_sequence + self.rng.random_range(1..=3),
                m.in_txn,
                AppendKind::OutOfOrder,
                records,
            ),
            20..25 if m.epoch > 0 => (m.epoch - 1, 0, m.in_txn, AppendKind::Fenced, records),
            25..32 if !m.in_txn => (m.epoch + 1, 0, false, AppendKind::NewEpoch, records),
            32..36 if m.in_txn => (
                m.epoch,
                m.next_sequence,
                false,
                AppendKind::OutsideTxn,
                records,
            ),
            _ => {
                // In sequence: a transaction goes on, or one starts (40%), or plain idempotent.
                let txn = m.in_txn || self.rng.random_bool(0.4);
                (
                    m.epoch,
                    m.next_sequence,
                    txn,
                    AppendKind::InSequence,
                    records,
                )
            }
        };
        BatchSpec {
            producer_id: PRODUCER_IDS[i],
            epoch,
            base_sequence,
            transactional,
            records,
            codec,
            kind,
        }
    }

    fn marker(&mut self) -> Op {
        let commit = self.rng.random_bool(0.5);
        if self.rng.random_bool(0.05) {
            return Op::Marker {
                producer_id: UNKNOWN_PRODUCER_ID,
                epoch: 0,
                coordinator_epoch: 0,
                commit,
            };
        }
        // Prefer a producer with an open transaction.
        let open: Vec<usize> = (0..PRODUCER_IDS.len())
            .filter(|i| self.producers[*i].in_txn)
            .collect();
        let i = if !open.is_empty() && self.rng.random_bool(0.85) {
            open[self.rng.random_range(0..open.len())]
        } else {
            self.rng.random_range(0..PRODUCER_IDS.len())
        };
        let m = &self.producers[i];
        let epoch = match self.rng.random_range(0..100) {
            0..8 if m.epoch > 0 => m.epoch - 1,
            8..14 => m.epoch + 1,
            _ => m.epoch,
        };
        let coordinator_epoch = match self.rng.random_range(0..100) {
            0..5 if m.coordinator_epoch > 0 => m.coordinator_epoch - 1,
            5..15 => m.coordinator_epoch + 1,
            _ => m.coordinator_epoch,
        };
        Op::Marker {
            producer_id: PRODUCER_IDS[i],
            epoch,
            coordinator_epoch,
            commit,
        }
    }
}

impl Op {
    /// The coverage name of an operation of part B.
    fn part_b_name(&self) -> &'static str {
        match self {
            Op::Follower {
                leader_epoch: Some(_),
                ..
            } => "follower append in an older leader epoch",
            Op::Follower { batches, .. } => {
                if batches.iter().any(|b| b.magic < 2) {
                    "follower append with v0/v1"
                } else if batches.len() > 1 {
                    "follower append, several batches"
                } else {
                    "follower append"
                }
            }
            Op::TxnMarker {
                transaction_version,
                commit,
                ..
            } => match (transaction_version, commit) {
                (2, true) => "marker COMMIT tv2",
                (2, false) => "marker ABORT tv2",
                (0, _) => "marker tv0",
                _ => "marker tv1",
            },
            Op::OffsetForTimestamp { target } => match target {
                TimestampTarget::Earliest => "offset for timestamp EARLIEST",
                TimestampTarget::Latest => "offset for timestamp LATEST",
                TimestampTarget::MaxTimestamp => "offset for timestamp MAX_TIMESTAMP",
                TimestampTarget::AgoMs(_) => "offset for timestamp",
            },
            Op::ExpireProducers { .. } => "producer expiry",
            Op::BecomeLeader => "become leader (new epoch)",
            Op::LeaderBatches { .. } => "append with timestamps",
            _ => "?",
        }
    }
}

/// Generation of the operations of part B (follower appends, markers under a transaction
/// version, offset for timestamp, producer expiry, appends with chosen timestamps).
impl Generator {
    /// With some probability an operation of part B instead of the step's other choice.
    fn part_b_op(&mut self, state: &crate::observe::State) -> Option<Op> {
        Some(match self.rng.random_range(0..100) {
            0..12 => self.follower(state),
            12..20 => self.tv_marker(),
            20..26 => Op::OffsetForTimestamp {
                target: match self.rng.random_range(0..100) {
                    0..15 => TimestampTarget::Earliest,
                    15..30 => TimestampTarget::Latest,
                    30..45 => TimestampTarget::MaxTimestamp,
                    45..50 => TimestampTarget::AgoMs(-self.rng.random_range(1..=100)),
                    50..55 => TimestampTarget::AgoMs(10 * 86_400_000),
                    _ => TimestampTarget::AgoMs(self.rng.random_range(0..=1500)),
                },
            },
            26..29 => Op::ExpireProducers {
                ago_ms: self.rng.random_range(0..=1500),
            },
            29..34 => self.timed_leader_append(),
            34..36 => Op::BecomeLeader,
            // Several v2 batches in one leader append, also where they do not fit in the active
            // segment: the runner makes Kafka's roll check once for the set, as seglog's bulk
            // append does (rule `several-batches-in-one-leader-append`).
            36..38 => self.several_leader_batches(),
            _ => return None,
        })
    }

    /// Whether the runner's undo of a follower append Kafka writes and seglog refuses (a
    /// truncation of Kafka's log back to seglog's log end, rule
    /// `overlapping-follower-batch-refused`) leaves Kafka's state as refusing it would: not
    /// while a completed transaction is undecided (the truncation's rebuild forgets it: S1's
    /// form, CI seed 100), nor while a producer's entry lies wholly below a raised log start
    /// (the rebuild replays from the log start: second long run, seed 200288; an entry without
    /// a batch counts as below).
    fn kafka_undo_is_exact(&self, state: &crate::observe::State) -> bool {
        self.undecided_markers.is_empty()
            && !state
                .producers
                .iter()
                .any(|p| state.log_start > 0 && p.last_offset < state.log_start)
    }

    /// Tells part B's model what happened (before the rest of [`Generator::learn`]).
    fn learn_part_b(&mut self, step: &Step, accepted: bool, after: &Observation) {
        if !accepted {
            return;
        }
        let mut markers = Vec::new();
        match &step.op {
            Op::TxnMarker { producer_id, .. } => {
                if let Some(m) = after.outcome.last_offset
                    && self.open_before.contains(producer_id)
                {
                    markers.push(m);
                }
            }
            Op::Follower { batches, .. } => {
                // A transaction the same append opens (a transactional data batch before its
                // marker) is one the marker completes too (long-run seeds 105394, 108767).
                let mut open = self.open_before.clone();
                for b in batches {
                    if b.marker.is_some() && open.contains(&b.producer_id) {
                        markers.push(b.base_offset);
                    }
                    if b.marker.is_some() {
                        open.retain(|p| *p != b.producer_id);
                    } else if b.transactional && b.producer_id >= 0 {
                        open.push(b.producer_id);
                    }
                    // Where a batch starts and ends (a gap's offsets are neither; a legacy
                    // wrapper starts at its first inner offset, inside it for a truncation).
                    if b.magic == 2 || b.codec == Codec::None {
                        self.boundaries.insert(b.base_offset);
                    }
                    self.boundaries.insert(b.next_offset());
                }
            }
            _ => {}
        }
        for m in markers {
            self.undecided_markers.push(m);
        }
        if let Some(epoch) = after.state.leader_epochs.last().map(|e| e.0) {
            self.part_b.follower_epoch = self.part_b.follower_epoch.max(epoch);
        }
    }

    /// Whether a transaction is completed but still undecided (its marker not below the high
    /// watermark): a reopen then is the state of finding S1 (for the coverage table).
    pub fn has_undecided_transaction(&self) -> bool {
        !self.undecided_markers.is_empty()
    }

    /// A follower append: one to three batches from the log end (sometimes after a gap, below
    /// the log end, or out of order), v2 mostly (other leader epochs, every codec, some of a
    /// producer or its marker), v0/v1 messages sometimes.
    fn follower(&mut self, state: &crate::observe::State) -> Op {
        let count = if self.rng.random_bool(0.3) {
            self.rng.random_range(2..=3)
        } else {
            1
        };
        let mut next = state.log_end;
        match self.rng.random_range(0..100) {
            // A gap only when the high watermark lies below the log end, at a batch's start:
            // at the log end it would then lie in the gap, where Kafka 4.4 raises it to the
            // next batch's base at its next read (interop/kafka/README.md, Findings, K1).
            0..20 if state.high_watermark < state.log_end => {
                next += self.rng.random_range(1..=5);
            }
            // One below the log end: refused by both, except a legacy compressed wrapper
            // ending above it, which Kafka writes and seglog refuses, so the runner's undo
            // (a truncation of Kafka's log) follows, with the holds of the overlapping case
            // below (second long run, seed 201985: first unstable seglog 0, Kafka 17 after it).
            20..23 if state.log_end > state.log_start && self.kafka_undo_is_exact(state) => {
                next -= 1
            }
            _ => {}
        }
        if self.rng.random_bool(0.15) {
            self.part_b.follower_epoch += self.rng.random_range(1..=2);
        }
        let mut models = self.producers.clone();
        let mut batches: Vec<FollowerBatch> = Vec::new();
        for k in 0..count {
            // Out of order: at the previous batch's base, and ending at or below its last
            // offset (refused by both), or of any length (Kafka checks last offsets only and
            // accepts one ending above; seglog refuses it, interop/kafka/README.md, Findings,
            // S2).
            let mut at_most = None;
            if k > 0 {
                let previous = &batches[batches.len() - 1];
                match self.rng.random_range(0..100) {
                    0..15 => next += self.rng.random_range(1..=3),
                    15..18 => {
                        next = previous.base_offset;
                        at_most = Some(if previous.marker.is_some() {
                            1
                        } else {
                            previous.records
                        });
                    }
                    // At the previous batch's base, of any length: one that ends above the
                    // previous batch is Kafka's to accept and seglog's to refuse (S2, rule
                    // `overlapping-follower-batch-refused`).
                    // Only where the runner's undo is exact (`kafka_undo_is_exact`; CI seed 100:
                    // first unstable seglog 9, Kafka 13).
                    18..20 if self.kafka_undo_is_exact(state) => next = previous.base_offset,
                    _ => {}
                }
            }
            let magic = match self.rng.random_range(0..100) {
                0..5 => 0,
                5..10 => 1,
                _ => 2,
            };
            let records = at_most.map_or(self.rng.random_range(1..=3), |n: u8| {
                self.rng.random_range(1..=3).min(n)
            });
            let batch = if magic < 2 {
                FollowerBatch {
                    base_offset: next,
                    magic,
                    leader_epoch: -1,
                    records,
                    codec: if self.rng.random_bool(0.5) {
                        Codec::Gzip
                    } else {
                        Codec::None
                    },
                    producer_id: -1,
                    epoch: -1,
                    base_sequence: -1,
                    transactional: false,
                    marker: None,
                }
            } else {
                let leader_epoch = if self.rng.random_bool(0.05) {
                    (self.part_b.follower_epoch - 1).max(0)
                } else {
                    self.part_b.follower_epoch
                };

                let codec = self.codec();
                let mut batch = FollowerBatch {
                    base_offset: next,
                    magic,
                    leader_epoch,
                    records,
                    codec,
                    producer_id: -1,
                    epoch: -1,
                    base_sequence: -1,
                    transactional: false,
                    marker: None,
                };
                if self.rng.random_bool(0.35) {
                    let i = self.rng.random_range(0..PRODUCER_IDS.len());
                    let m = &mut models[i];
                    batch.producer_id = PRODUCER_IDS[i];
                    batch.epoch = m.epoch;
                    if m.in_txn && self.rng.random_bool(0.3) {
                        batch.marker = Some(self.rng.random_bool(0.5));
                        batch.transactional = true;
                        batch.codec = Codec::None;
                        m.in_txn = false;
                    } else {
                        batch.base_sequence = m.next_sequence;
                        batch.transactional = m.in_txn || self.rng.random_bool(0.3);
                        m.in_txn = batch.transactional;
                        m.next_sequence += i32::from(records);
                    }
                }
                batch
            };
            next = batch.next_offset();
            batches.push(batch);
        }
        // An overlapping append (S2) is taken back on Kafka's side by a truncation, which does
        // not restore epoch entries a lower epoch in it removed (`assign` drops entries of a
        // higher epoch): such an append keeps the current epoch in every batch (CI seed 100).
        let overlaps = batches
            .windows(2)
            .any(|pair| pair[1].base_offset < pair[0].next_offset());
        if overlaps {
            for b in batches.iter_mut().filter(|b| b.magic >= 2) {
                b.leader_epoch = self.part_b.follower_epoch;
            }
        }
        // Sometimes in the leader epoch before the batches' (a replica that has not heard of
        // the new leader yet): Kafka skips the batches from the first of a higher epoch on,
        // and seglog's `append_as_follower_in_epoch` does too. Only for batches of no producer,
        // whose skipping the generator's producer model need not know of.
        let leader_epoch = (self.rng.random_bool(0.1)
            && batches.iter().all(|b| b.producer_id < 0)
            && self.part_b.follower_epoch > 0)
            .then(|| self.part_b.follower_epoch - 1);
        Op::Follower {
            batches,
            leader_epoch,
        }
    }

    /// A marker under transaction version 0, 1 or 2: under TV2 mostly at the producer's epoch
    /// plus one (the bump of transactions v2), sometimes repeated at the current epoch, stale,
    /// or for an unknown producer.
    fn tv_marker(&mut self) -> Op {
        let transaction_version = self.rng.random_range(0..=2);
        let Op::Marker {
            producer_id,
            epoch,
            coordinator_epoch,
            commit,
        } = self.marker()
        else {
            unreachable!("marker() makes markers")
        };
        let current = PRODUCER_IDS
            .iter()
            .position(|p| *p == producer_id)
            .map_or(0, |i| self.producers[i].epoch);
        let epoch = if transaction_version == 2 && producer_id != UNKNOWN_PRODUCER_ID {
            match self.rng.random_range(0..100) {
                0..65 => current + 1,
                65..85 => current,
                85..92 if current > 0 => current - 1,
                _ => current + 2,
            }
        } else {
            epoch
        };
        Op::TxnMarker {
            producer_id,
            epoch,
            coordinator_epoch,
            commit,
            transaction_version,
        }
    }

    /// A leader append of two or three plain batches of one or two records each, at the step's
    /// clock: Kafka 4.4 refuses it (`InvalidRecordException`, one batch per leader append),
    /// seglog takes it as one bulk append (rule `several-batches-in-one-leader-append`).
    fn several_leader_batches(&mut self) -> Op {
        let count = self.rng.random_range(2..=3);
        let batches = (0..count)
            .map(|_| {
                let mut batch = self.plain();
                batch.records = self.rng.random_range(1..=2);
                TimedBatch {
                    timestamp_offsets_ms: vec![0; usize::from(batch.records)],
                    batch,
                }
            })
            .collect();
        Op::LeaderBatches { batches }
    }

    /// A leader append of one batch whose records carry timestamps around the step's clock:
    /// old ones (`message.timestamp.before.max.ms` is unlimited by default), future ones
    /// within and beyond `message.timestamp.after.max.ms` (one hour).
    fn timed_leader_append(&mut self) -> Op {
        let mut batch = if self.rng.random_bool(0.5) {
            self.plain()
        } else {
            self.producer_batch()
        };
        let mut offsets = Vec::new();
        for _ in 0..batch.records {
            offsets.push(match self.rng.random_range(0..100) {
                0..40 => 0,
                40..60 => -self.rng.random_range(1..=2000),
                60..70 => -self.rng.random_range(1..=30) * 86_400_000,
                70..85 => self.rng.random_range(1..=1_800_000),
                85..92 => 3_600_000 + self.rng.random_range(1..=3_600_000),
                _ => self.rng.random_range(-500..=500),
            });
        }
        batch.records = u8::try_from(offsets.len()).unwrap_or(u8::MAX);
        Op::LeaderBatches {
            batches: vec![TimedBatch {
                batch,
                timestamp_offsets_ms: offsets,
            }],
        }
    }
}
