//! Running a history on both sides, step by step, and the coverage it reached.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::compare::{Difference, ROLL_BEFORE_PRODUCER_CHECKS, compare};
use crate::history::{Generator, Op, Step};
use crate::kafka::Kafka;
use crate::observe::Observation;
use crate::ours::{Ours, batch_bytes, marker_bytes};

/// How often each operation ran and each state was reached.
#[derive(Debug, Default)]
pub struct Coverage {
    /// Steps per operation name.
    pub ops: BTreeMap<&'static str, u64>,
    /// Steps per state or event.
    pub states: BTreeMap<String, u64>,
    /// How often each named rule explained a difference, with its docs/format.md line.
    pub rules: BTreeMap<(&'static str, &'static str), u64>,
}

impl Coverage {
    fn note(&mut self, what: impl Into<String>) {
        *self.states.entry(what.into()).or_default() += 1;
    }

    /// Prints the table.
    pub fn print(&self) {
        eprintln!("  {:<44} {:>8}", "operation", "steps");
        for (name, n) in &self.ops {
            eprintln!("  {name:<44} {n:>8}");
        }
        eprintln!("  {:<44} {:>8}", "state / event", "steps");
        for (name, n) in &self.states {
            eprintln!("  {name:<44} {n:>8}");
        }
        for ((name, line), n) in &self.rules {
            eprintln!("  rule {name:<39} {n:>8}  ({line})");
        }
    }
}

/// Where a history diverged.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// 1-based step (0: right after the open).
    pub step: usize,
    /// The first differing field.
    pub difference: Difference,
    /// seglog's error text at that step, if it refused.
    pub ours_message: Option<String>,
    /// Kafka's exception message at that step, if it refused.
    pub kafka_message: Option<String>,
}

/// Runs histories against one Kafka driver.
pub struct Runner {
    /// Kafka's side.
    pub kafka: Kafka,
    /// Where the logs of a history live (emptied per history).
    pub work: PathBuf,
    /// `segment.bytes` of both logs.
    pub segment_bytes: i32,
}

/// Where the steps come from.
pub enum Source<'a> {
    /// Generated from a seed, this many steps.
    Generate(u64, usize),
    /// Replayed.
    Replay(&'a [Step]),
}

impl Runner {
    /// Runs one history; returns its steps (as run) and the first divergence.
    ///
    /// # Errors
    /// Harness failures (the JVM died, a directory could not be made).
    pub fn run(
        &mut self,
        source: Source<'_>,
        coverage: &mut Coverage,
    ) -> Result<(Vec<Step>, Option<Divergence>), String> {
        let base = self.work.join("history");
        if base.exists() {
            std::fs::remove_dir_all(&base)
                .map_err(|e| format!("remove {}: {e}", base.display()))?;
        }
        std::fs::create_dir_all(&base).map_err(|e| format!("create {}: {e}", base.display()))?;
        let ours_dir = base.join("ours").join("diff-0");
        std::fs::create_dir_all(ours_dir.parent().unwrap_or(Path::new(".")))
            .map_err(|e| format!("create {}: {e}", ours_dir.display()))?;
        // The held clock: the wall clock at the history's start, then STEP_MS per step, on
        // both sides (seglog's `ManualClock`, Kafka's `DiffTime` pinned for every request), so a
        // replay sees the same time between any two steps.
        let start_ms = now_ms();
        let mut ours = Ours::open(ours_dir, self.segment_bytes)?;
        ours.set_clock(start_ms);
        self.kafka.now_ms = start_ms;
        let theirs = self
            .kafka
            .open(&base.join("kafka").join("diff-0"), self.segment_bytes)?;
        pin_mtimes(&base, start_ms, start_ms)?;
        let mut last = ours.initial();
        // Kafka's observation after the previous step (what an undo of Kafka's append restores).
        let mut kafka_last = theirs.clone();
        let mut applied = Vec::new();
        // The markers Kafka keeps that seglog's cleaner removed (rule
        // aborted-data-below-log-start), for the reads of the later steps.
        let mut kept_commits = std::collections::BTreeSet::new();
        let mut done = Vec::new();
        if let Some(difference) = compare_initial(&last, &theirs, &mut applied) {
            self.kafka.close()?;
            return Ok((done, Some(divergence(0, difference, &last, &theirs))));
        }
        let (mut generator, steps, replay) = match source {
            Source::Generate(seed, steps) => (Some(Generator::new(seed)), steps, &[][..]),
            Source::Replay(steps) => (None, steps.len(), steps),
        };
        let mut found = None;
        for i in 0..steps {
            let step = match (generator.as_mut(), replay.get(i)) {
                (Some(g), _) => g.next_step(&last),
                (None, Some(s)) => s.clone(),
                (None, None) => break,
            };
            let now_ms = start_ms + (i as i64 + 1) * STEP_MS;
            let bytes = match &step.op {
                Op::Append(spec) => batch_bytes(spec, i, now_ms)?,
                Op::Marker {
                    producer_id,
                    epoch,
                    coordinator_epoch,
                    commit,
                } => marker_bytes(*producer_id, *epoch, *coordinator_epoch, *commit, now_ms)?,
                other => crate::batches::bytes(other, i, now_ms)?,
            };
            // A high watermark inside a batch is no state a broker reaches (it is a replica's
            // log end) and Kafka 4.4 lowers it to the batch's base at the next read
            // (interop/kafka/README.md, Findings): such a target, which only a shrunk or
            // replayed history can hold, is a no-op on both sides.
            let step = match step.op {
                Op::HighWatermark { offset } if !ours.is_batch_boundary(offset) => {
                    coverage.note("high watermark target inside a batch (skipped)");
                    Step {
                        op: Op::HighWatermark { offset: -1 },
                        fetch_offset: step.fetch_offset,
                    }
                }
                // A roll of an empty active segment whose base lies below the log end (left by
                // a truncation inside its only batch): Kafka rolls a new segment at the log end,
                // seglog keeps the empty one (interop/kafka/README.md, Findings, K2). Skipped, so
                // that the rest of the history compares one segment layout.
                Op::Roll if ours.active_segment_empty_below_end() => {
                    coverage.note("roll of an empty segment below the log end (skipped)");
                    Step {
                        op: Op::HighWatermark { offset: -1 },
                        fetch_offset: step.fetch_offset,
                    }
                }
                _ => step,
            };
            if step.op == Op::Reopen
                && generator
                    .as_ref()
                    .is_some_and(Generator::has_undecided_transaction)
            {
                coverage.note("reopen with an undecided transaction (S1)");
            }
            ours.set_clock(now_ms);
            self.kafka.now_ms = now_ms;
            if let Some(delay) = step_delay() {
                // A slow machine, on purpose: no answer may depend on the wall clock.
                std::thread::sleep(delay);
            }
            let (observed, notes, theirs) = if matches!(step.op, Op::Clean { .. }) {
                self.clean_step(&mut ours, &step, &bytes, coverage)?
            } else if matches!(step.op, Op::DeleteRecords { .. }) {
                // Kafka's side first, as for a cleaning round: `deleteRecordsOnLeader` reads the
                // high watermark (`fetchHighWatermarkMetadata`), which raises one in a gap to
                // the next batch's base (K1) before it checks the offset against it; seglog's
                // is then raised to Kafka's in exactly that form (second long run, seeds 200866
                // and 207451: a truncation inside the only batch, a reopen, DeleteRecords to
                // the log end: seglog `OffsetOutOfRangeException` at high watermark 0, Kafka
                // accepted at 1).
                let theirs = self.kafka.apply(&step, &bytes)?;
                if ours.raise_high_watermark_in_a_gap_to(theirs.state.high_watermark) {
                    coverage.note(
                        "delete records: high watermark in a gap raised to Kafka's first (K1)",
                    );
                }
                let (observed, notes) = ours.apply(&step, &bytes);
                (observed, notes, theirs)
            } else {
                let (observed, notes) = ours.apply(&step, &bytes);
                match self.kafka.apply(&step, &bytes) {
                    Ok(theirs) => (observed, notes, theirs),
                    Err(e) if kafka_cannot_recover(&step, &last, &observed, &e) => {
                        // Kafka has no log any more: the history ends here, explained.
                        applied.push((KAFKA_CANNOT_RECOVER, KAFKA_CANNOT_RECOVER_DOC));
                        coverage.note("crash Kafka cannot recover (history ended)");
                        if std::env::var_os("SEGLOG_DIFF_TRACE").is_some() {
                            eprintln!(
                                "step {}: {}\n  seglog {}\n  Kafka  {e}",
                                i + 1,
                                serde_json::to_string(&step).unwrap_or_default(),
                                serde_json::to_string(&observed).unwrap_or_default(),
                            );
                        }
                        done.push(step);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            };
            // Both sides' files carry the held clock, as every other time does.
            pin_mtimes(&base, start_ms, now_ms)?;
            let observed = follow_follower_batch_without_epoch(
                &step,
                &mut ours,
                observed,
                &theirs,
                &mut applied,
            );
            let theirs =
                self.follow_forgotten_max_timestamp(&step, &observed, theirs, &mut applied)?;
            let theirs =
                self.follow_overlapping_batch(&step, &kafka_last, &observed, theirs, &mut applied)?;
            let mut theirs =
                self.follow_several_leader_batches(&step, &bytes, &observed, theirs, &mut applied)?;
            crate::compare::note_kept_commit_markers(&observed, &theirs, &mut kept_commits);
            theirs.kept_commit_markers = kept_commits.iter().copied().collect();
            *coverage.ops.entry(step.op.name()).or_default() += 1;
            record(coverage, &observed, &notes);
            record_maintenance(coverage, &step, &last, &observed, &notes);
            record_part_b(coverage, &step, &last, &observed);
            let before = applied.len();
            let difference = compare(&step, &observed, &theirs, &mut applied);
            if applied[before..]
                .iter()
                .any(|(name, _)| *name == ROLL_BEFORE_PRODUCER_CHECKS)
            {
                // Kafka rolled for an append that wrote nothing: roll seglog's log the same way
                // so the rest of the history compares one segment layout.
                ours.roll()
                    .map_err(|e| format!("seglog roll after Kafka's: {e}"))?;
            }
            self.follow_rules_b(&applied[before..], &ours, &theirs)?;
            if std::env::var_os("SEGLOG_DIFF_TRACE").is_some() {
                eprintln!(
                    "step {}: {}\n  seglog {}\n  Kafka  {}\n  Kafka's ProducerStateManager.firstUnstableOffset: {:?}",
                    i + 1,
                    serde_json::to_string(&step).unwrap_or_default(),
                    serde_json::to_string(&observed).unwrap_or_default(),
                    serde_json::to_string(&theirs).unwrap_or_default(),
                    theirs.fresh_first_unstable,
                );
            }
            if let Some(g) = generator.as_mut() {
                g.learn(&step, observed.outcome.refused.is_none(), &observed);
            }
            done.push(step);
            if let Some(difference) = difference {
                found = Some(divergence(i + 1, difference, &observed, &theirs));
                break;
            }
            if applied[before..]
                .iter()
                .any(|(name, _)| *name == crate::rules_log::TRUNCATION_REPLAY_SKIPPED)
            {
                // Kafka's producer state is its snapshot's alone from here on (no step restores
                // what its skipped replay would have found): the history ends, explained.
                coverage.note("truncation Kafka did not replay (history ended)");
                break;
            }
            last = observed;
            kafka_last = theirs;
        }
        for rule in applied {
            *coverage.rules.entry(rule).or_default() += 1;
        }
        keep_files(&base, &self.work);
        self.kafka.close()?;
        drop(ours);
        let _ = std::fs::remove_dir_all(&base);
        Ok((done, found))
    }
}

/// The rule for a crash whose recovery Kafka 4.4 fails (docs/format.md, Deliberate
/// differences: "A non-transactional batch inside an open transaction found while the
/// producer state is rebuilt from the segments").
pub const KAFKA_CANNOT_RECOVER: &str =
    "kafka-cannot-recover-an-open-transaction-below-the-log-start";
const KAFKA_CANNOT_RECOVER_DOC: &str = "docs/format.md, Deliberate differences: \"A non-transactional batch inside an open transaction found while the producer state is rebuilt\"";

/// Kafka 4.4's `LogSegment.recover` puts every batch of a recovered segment into the producer
/// state, also those below the log start, which the rebuilds of a truncation or a reopen skip
/// (they replay from the log start). A transaction whose batches lie below the log start and
/// that no marker ended is forgotten by such a rebuild; the producer's next non-transactional
/// batch is accepted, and a crash that recovers the segment then finds that batch inside the
/// open transaction: `ProducerAppendInfo` throws `InvalidTxnStateException` out of
/// `LogLoader.load`, and `UnifiedLog.create` fails (a broker takes the log directory offline).
/// seglog's recovery loads the log (long run, seed 101659, which ended a shard of the first
/// long run). Exactly this form: a crash, seglog's recovery accepted, Kafka's load failing with
/// that exception, and the log start above the first segment's base before the crash (data
/// below the log start in a segment).
fn kafka_cannot_recover(step: &Step, before: &Observation, ours: &Observation, e: &str) -> bool {
    matches!(step.op, Op::Crash { .. })
        && ours.outcome.refused.is_none()
        && e.contains("InvalidTxnStateException: Expected transactional write from producer")
        && before
            .state
            .segments
            .first()
            .is_some_and(|base| *base < before.state.log_start)
}

impl Runner {
    /// A cleaning round, Kafka's side first: its round reads `lastStableOffset()`, whose
    /// `fetchHighWatermarkMetadata` may convert a high watermark in a gap to the base of the
    /// next batch (finding K1; whether it does depends on whether an earlier read already
    /// converted it, so only Kafka can say). seglog's high watermark is then raised to
    /// Kafka's where that is this form, so both rounds are bounded alike (seed 183 of the
    /// first 1000-history run: the high watermark 12 in a gap before a batch at 19, Kafka
    /// cleaned segment 0, seglog nothing); then seglog's round.
    fn clean_step(
        &mut self,
        ours: &mut Ours,
        step: &Step,
        bytes: &[u8],
        coverage: &mut Coverage,
    ) -> Result<(Observation, crate::ours::Notes, Observation), String> {
        // A round is bounded by each side's LSO. Where they differ (only as a named rule
        // accepted it: Kafka's cached first unstable offset, `first-unstable-offset-not-cached`,
        // or the decided transactions its truncation replayed, `replayed-decided-transactions-
        // kept-until-the-next-high-watermark-move`) the two rounds clean different ranges (seed
        // 2029 of a 300-history run: Kafka's LSO 9 cleaned nothing, seglog's 21 cleaned segment
        // 0), so no round runs on either side then (a no-op in its place, as for the other
        // steps held back).
        let noop = Step {
            op: Op::HighWatermark { offset: -1 },
            fetch_offset: step.fetch_offset,
        };
        let probe = self.kafka.apply(&noop, &[])?;
        if probe.state.last_stable != ours.last_stable_offset() {
            coverage.note("clean skipped: the LSOs differ by a named rule");
            let (observed, notes) = ours.apply(&noop, &[]);
            return Ok((observed, notes, probe));
        }
        let theirs = self.kafka.apply(step, bytes)?;
        if ours.raise_high_watermark_in_a_gap_to(theirs.state.high_watermark) {
            coverage.note("clean: high watermark in a gap raised to Kafka's first (K1)");
        }
        let (observed, notes) = ours.apply(step, bytes);
        Ok((observed, notes, theirs))
    }

    /// After a rule of part B applied: the side that did less does the same, so that the rest
    /// of the history compares one state (Kafka's epoch entry assigned in seglog's cache; Kafka
    /// rolled at a truncation target as seglog did; seglog's high watermark raised in a gap as
    /// Kafka's was).
    fn follow_rules_b(
        &mut self,
        applied: &[(&'static str, &'static str)],
        ours: &Ours,
        theirs: &Observation,
    ) -> Result<(), String> {
        for (name, _) in applied {
            if *name == crate::rules::EPOCH_BEFORE_PRODUCER_CHECKS
                && let Some(&(epoch, start)) = theirs.state.leader_epochs.last()
            {
                ours.assign_epoch(epoch, start)
                    .map_err(|e| format!("seglog assign epoch after Kafka's: {e}"))?;
            }
            if *name == crate::rules::HIGH_WATERMARK_IN_A_GAP {
                ours.raise_high_watermark(theirs.state.high_watermark)
                    .map_err(|e| format!("seglog high watermark after Kafka's: {e}"))?;
            }
            if *name == crate::rules::TRUNCATION_ROLLS_AT_TARGET {
                let rolled = self.kafka.roll_at_truncation_target(0)?;
                if let Some(refused) = rolled.outcome.refused {
                    return Err(format!("Kafka's roll after a truncation: {refused}"));
                }
            }
        }
        Ok(())
    }
}

impl Runner {
    /// Kafka kept segments by time retention only because it forgot their max timestamp
    /// (`rules_log::retention_of_forgotten_max_timestamp`): Kafka deletes the same segments
    /// (a roll when seglog rolled, DeleteRecords to seglog's log start, a pass of the log-start
    /// rule), and its state after that is what the step compares.
    fn follow_forgotten_max_timestamp(
        &mut self,
        step: &Step,
        ours: &Observation,
        theirs: Observation,
        applied: &mut Vec<(&'static str, &'static str)>,
    ) -> Result<Observation, String> {
        if !crate::rules_log::retention_of_forgotten_max_timestamp(step, ours, &theirs) {
            return Ok(theirs);
        }
        applied.push((
            crate::rules_log::RETENTION_OF_FORGOTTEN_MAX_TIMESTAMP,
            "docs/format.md, Deliberate differences: \"Time retention after a truncation below a reloaded time index entry\"",
        ));
        let at = |op| Step {
            op,
            fetch_offset: step.fetch_offset,
        };
        if ours
            .state
            .segments
            .iter()
            .any(|base| !theirs.state.segments.contains(base))
        {
            self.kafka.apply(&at(Op::Roll), &[])?;
        }
        self.kafka.apply(
            &at(Op::DeleteRecords {
                offset: ours.state.log_start,
            }),
            &[],
        )?;
        self.kafka.apply(
            &at(Op::Retention {
                retention_ms: -1,
                retention_bytes: -1,
            }),
            &[],
        )
    }
}

impl Runner {
    /// Kafka wrote a follower batch overlapping the previous one that seglog refused
    /// (`rules_log::overlapping_follower_batch`): Kafka's log is truncated back to seglog's log
    /// end, and its state after that is what the step compares. The truncation takes back the
    /// epoch entries the append added (all at or above the log end) but not the ones it removed:
    /// a v0/v1 batch in it cleared Kafka's cache (`clearAndFlush`), a batch of a lower epoch
    /// dropped the higher entries (`assign`). Those, the entries of Kafka's observation `before` the
    /// step that it no longer has, are assigned again in order (long-run seeds 100297 and
    /// 100584: `leader_epochs` seglog `[[1,47]]`, Kafka `[]` after a refused `[v0 at 51, v2 at
    /// 51]`), so the state compared is Kafka's had it refused the append as seglog did.
    fn follow_overlapping_batch(
        &mut self,
        step: &Step,
        before: &Observation,
        ours: &Observation,
        theirs: Observation,
        applied: &mut Vec<(&'static str, &'static str)>,
    ) -> Result<Observation, String> {
        if !crate::rules_log::overlapping_follower_batch(step, ours, &theirs) {
            return Ok(theirs);
        }
        applied.push((
            crate::rules_log::OVERLAPPING_FOLLOWER_BATCH,
            "docs/format.md, Deliberate differences: \"Overlapping follower batches are refused\"",
        ));
        let mut truncated = self.kafka.apply(
            &Step {
                op: Op::Truncate {
                    offset: ours.state.log_end,
                },
                fetch_offset: step.fetch_offset,
            },
            &[],
        )?;
        let lost = crate::rules_log::epoch_entries_to_restore(
            &before.state.leader_epochs,
            &truncated.state.leader_epochs,
        );
        if !lost.is_empty() {
            truncated = self.kafka.assign_epochs(&lost, step.fetch_offset)?;
        }
        // The truncation's rebuild reloads the latest snapshot at or below seglog's log end,
        // whose load drops only the producers expired by the step's clock: one an expiry step
        // removed since (at a later instant) comes back (second long run, seed 201756: a
        // marker-only producer 1001 in the snapshot of a reopen, expired later, listed again by
        // Kafka after the undo; whether the expiry removed it depended on the wall-clock time
        // between the steps). The producers Kafka's state did not have before the append are
        // removed again.
        let returned: Vec<i64> = truncated
            .state
            .producers
            .iter()
            .map(|p| p.producer_id)
            .filter(|id| !before.state.producers.iter().any(|p| p.producer_id == *id))
            .collect();
        if !returned.is_empty() {
            truncated = self.kafka.forget_producers(&returned, step.fetch_offset)?;
            if let Some(refused) = &truncated.outcome.refused {
                return Err(format!("Kafka's forget_producers after an undo: {refused}"));
            }
        }
        // The outcome compared is the append's: refused by seglog, written and taken back by
        // Kafka; the rest is Kafka's state after the truncation.
        truncated.outcome = ours.outcome.clone();
        Ok(truncated)
    }
}

impl Runner {
    /// Kafka refused several v2 batches in one leader append that seglog took as one bulk
    /// append (`rules_log::several_leader_batches`): Kafka makes its roll check once for the
    /// whole set (`Kafka::roll_for_set`, as `UnifiedLog.maybeRoll` does for a follower's
    /// multi-batch set and seglog for its bulk: a set that does not fit rolls before its first
    /// batch, not between two), then appends the batches one by one, and its state after that,
    /// with the first offset of the first append and the last of the last, is what the step
    /// compares (a refusal of one of them is Kafka's outcome).
    fn follow_several_leader_batches(
        &mut self,
        step: &Step,
        bytes: &[u8],
        ours: &Observation,
        theirs: Observation,
        applied: &mut Vec<(&'static str, &'static str)>,
    ) -> Result<Observation, String> {
        if !crate::rules_log::several_leader_batches(step, ours, &theirs) {
            return Ok(theirs);
        }
        applied.push((
            crate::rules_log::SEVERAL_LEADER_BATCHES,
            "docs/format.md, Deliberate differences: \"Several batches in one leader append\"",
        ));
        let mut first_offset = None;
        let mut last = theirs;
        self.kafka.roll_for_set(bytes)?;
        for batch in seglog::Batches::new(bytes, 0) {
            let batch = batch.map_err(|e| format!("split a leader append: {e}"))?;
            let header = batch.header();
            let at = usize::try_from(header.position).unwrap_or(usize::MAX);
            let end = at.saturating_add(usize::try_from(header.total_size).unwrap_or(usize::MAX));
            let one = bytes
                .get(at..end)
                .ok_or_else(|| format!("a leader append's batch at {at} runs past its bytes"))?;
            last = self.kafka.apply(step, one)?;
            if last.outcome.refused.is_some() {
                return Ok(last);
            }
            first_offset = first_offset.or(last.outcome.first_offset);
        }
        last.outcome.first_offset = first_offset;
        Ok(last)
    }
}

/// seglog wrote a v2 follower batch without a leader epoch that Kafka refused
/// (`rules_log::follower_batch_without_epoch`): seglog's log is truncated back to Kafka's log
/// end, and its state after that, with Kafka's outcome, is what the step compares.
fn follow_follower_batch_without_epoch(
    step: &Step,
    ours: &mut Ours,
    observed: Observation,
    theirs: &Observation,
    applied: &mut Vec<(&'static str, &'static str)>,
) -> Observation {
    if !crate::rules_log::follower_batch_without_epoch(step, &observed, theirs) {
        return observed;
    }
    applied.push((
        crate::rules_log::FOLLOWER_BATCH_WITHOUT_EPOCH,
        "docs/format.md, Deliberate differences: \"Leader-epoch checkpoint\" (a v2 follower batch without a leader epoch)",
    ));
    let (mut truncated, _) = ours.apply(
        &Step {
            op: Op::Truncate {
                offset: theirs.state.log_end,
            },
            fetch_offset: step.fetch_offset,
        },
        &[],
    );
    truncated.outcome = theirs.outcome.clone();
    truncated
}

fn compare_initial(
    ours: &Observation,
    theirs: &Observation,
    applied: &mut Vec<(&'static str, &'static str)>,
) -> Option<Difference> {
    let open = Step {
        op: Op::Roll,
        fetch_offset: 0,
    };
    compare(&open, ours, theirs, applied)
}

fn divergence(
    step: usize,
    difference: Difference,
    ours: &Observation,
    theirs: &Observation,
) -> Divergence {
    Divergence {
        step,
        difference,
        ours_message: ours.outcome.message.clone(),
        kafka_message: theirs.outcome.message.clone(),
    }
}

fn record(coverage: &mut Coverage, o: &Observation, notes: &crate::ours::Notes) {
    if let Some(class) = &o.outcome.refused {
        coverage.note(format!("refused: {class}"));
    }
    if notes.duplicate {
        coverage.note("duplicate answered (retry)");
    }
    if notes.truncated_inside_batch {
        coverage.note("gap: truncation inside a batch");
    }
    if notes.truncated_inside_txn {
        coverage.note("truncation inside an open transaction");
    }
    if notes.truncated_marker {
        coverage.note("truncation removing a marker");
    }
    if o.state
        .producers
        .iter()
        .any(|p| p.txn_first_offset.is_some())
    {
        coverage.note("open transaction");
    }
    if o.state
        .producers
        .iter()
        .filter(|p| p.txn_first_offset.is_some())
        .count()
        > 1
    {
        coverage.note("two open transactions");
    }
    if o.state.last_stable < o.state.high_watermark {
        coverage.note("LSO below the high watermark");
    }
    if o.read_committed
        .aborted
        .as_ref()
        .is_some_and(|a| !a.is_empty())
    {
        coverage.note("read_committed fetch with aborted txns");
    }
    if o.read_uncommitted.refused.is_some() {
        coverage.note("fetch out of range");
    }
}

/// The states the maintenance operations reached (issue #25, part A).
fn record_maintenance(
    coverage: &mut Coverage,
    step: &Step,
    before: &Observation,
    after: &Observation,
    notes: &crate::ours::Notes,
) {
    let segments = |o: &Observation| o.state.segments.len();
    match step.op {
        Op::Clean { .. } if notes.cleaned => {
            if after.state.segments != before.state.segments {
                coverage.note("cleaned: segments merged");
            }
            coverage.note("cleaned segment (a round ran)");
        }
        Op::Clean { .. } => coverage.note("compaction round with nothing cleanable"),
        Op::Crash { lag: Some(lag), .. } if usize::from(lag) + 1 < segments(before) => {
            coverage.note("lagging checkpoint (recovery point below the active segment)");
        }
        _ => {}
    }
    if let Op::Crash {
        lag: Some(_),
        tear_back,
    } = step.op
        && tear_back > 0
    {
        coverage.note("torn tail");
        if after.state.log_end < before.state.log_end {
            coverage.note("torn tail: records lost");
        }
    }
    if matches!(step.op, Op::Crash { .. }) && after.state.log_end == before.state.log_end {
        coverage.note("crash: every record survived");
    }
    if let Op::Retention { .. } = step.op
        && segments(after) < segments(before)
    {
        coverage.note("retention deleted segments");
    }
    if let Op::DeleteRecords { .. } = step.op
        && after.state.log_start > before.state.log_start
    {
        coverage.note("log start raised (DeleteRecords)");
    }
    if after.state.log_start > after.state.segments.first().copied().unwrap_or(0) {
        coverage.note("log start inside the first segment");
    }
}

/// With `SEGLOG_DIFF_KEEP` set, both logs' directories as the history left them are copied to
/// `<work>/kept` (replaced per history), to read with `seglog dump` and Kafka's
/// `DumpLogSegments`.
fn keep_files(base: &Path, work: &Path) {
    if std::env::var_os("SEGLOG_DIFF_KEEP").is_none() {
        return;
    }
    let kept = work.join("kept");
    let _ = std::fs::remove_dir_all(&kept);
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(base)
        .arg(&kept)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!(
            "seglog-diff: could not copy {} to {}",
            base.display(),
            kept.display()
        );
    }
}

/// Coverage of part B's operations and states.
fn record_part_b(coverage: &mut Coverage, step: &Step, before: &Observation, o: &Observation) {
    if let Op::Follower { batches, .. } = &step.op {
        let mut end = before.state.log_end;
        for b in batches {
            if b.base_offset > end {
                coverage.note("gap: follower batch after a gap");
            }
            if b.magic < 2 {
                coverage.note(format!("follower batch v{}", b.magic));
            }
            if b.marker.is_some() {
                coverage.note("follower marker");
            }
            end = b.next_offset();
        }
        if o.outcome.refused.is_none() && o.state.leader_epochs != before.state.leader_epochs {
            coverage.note("leader epochs changed by a follower append");
        }
    }
    if let Op::LeaderBatches { batches } = &step.op
        && batches.len() > 1
        && o.outcome.refused.is_none()
        && !before.state.segments.contains(&before.state.log_end)
        && o.state.segments.contains(&before.state.log_end)
    {
        coverage.note("several leader batches: rolled before the set");
    }
    if let Op::OffsetForTimestamp { .. } = &step.op {
        coverage.note(if o.outcome.timestamp_lookup.is_some() {
            "offset for timestamp: found"
        } else {
            "offset for timestamp: none"
        });
    }
    if let Op::ExpireProducers { .. } = &step.op
        && o.state.producers.len() < before.state.producers.len()
    {
        coverage.note("producers expired");
    }
    if o.state.leader_epochs.len() > 1 {
        coverage.note("several leader epochs");
    }
}

/// How far the held clock moves per step: about a step's real duration at this machine's load,
/// so the file mtimes Kafka reads for empty segments (the wall clock) stay near it. Before the
/// clock was held, each step read the wall clock, and whether a producer expired depended on
/// the real time between steps (second long run, seed 201756: an expiry 165 ms short of
/// `producer.id.expiration.ms` removed a producer only when a reopen between took longer).
const STEP_MS: i64 = 50;

/// Sets the mtime of every file under `dir` that the wall clock stamped (an mtime off the held
/// clock's grid: not `start_ms` plus a whole number of steps, or not a whole millisecond) to
/// `now_ms`, the step's held clock.
///
/// Kafka's time retention, its lookup by timestamp and both cleaners read a `.log` file's mtime
/// when a segment has no max timestamp (`LogSegment.largestTimestamp()`), and the file system
/// stamps every write with the wall clock, not the held one: before this, whether a segment
/// written or truncated one step earlier breached `retention.ms` depended on how fast the steps
/// ran (CI on 2026-12-02: `d3-retention-forgotten-max-timestamp-a` diverged on a loaded machine).
/// A file stamped earlier keeps its time: each side's cleaner copies an older segment's mtime to
/// the segment it writes (`setLastModified`), a value on the grid already, and a write stamps a
/// wall-clock time with nanoseconds, which is off it.
fn pin_mtimes(dir: &Path, start_ms: i64, now_ms: i64) -> Result<(), String> {
    let held = UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(now_ms).unwrap_or(0));
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("list {}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("list {}: {e}", dir.display()))?;
        let path = entry.path();
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            // Deleted since the listing (Kafka's asynchronous segment deletion).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("stat {}: {e}", path.display())),
        };
        if meta.is_dir() {
            pin_mtimes(&path, start_ms, now_ms)?;
            continue;
        }
        let modified = meta
            .modified()
            .map_err(|e| format!("mtime of {}: {e}", path.display()))?;
        if on_held_grid(modified, start_ms) {
            continue;
        }
        let set = std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(held));
        match set {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("set the mtime of {}: {e}", path.display())),
        }
    }
    Ok(())
}

/// Whether `time` is a time of the held clock that starts at `start_ms` (whole milliseconds,
/// a whole number of steps after the start).
fn on_held_grid(time: SystemTime, start_ms: i64) -> bool {
    let Ok(since) = time.duration_since(UNIX_EPOCH) else {
        return false;
    };
    let Ok(ms) = i64::try_from(since.as_millis()) else {
        return false;
    };
    since.subsec_nanos() % 1_000_000 == 0 && ms >= start_ms && (ms - start_ms) % STEP_MS == 0
}

/// The wall-clock pause before each step that `SEGLOG_DIFF_STEP_DELAY_MS` asks for: a replay
/// with one (say 200 ms, four times a step of the held clock) checks that no answer depends on
/// how fast the steps run.
fn step_delay() -> Option<std::time::Duration> {
    let ms: u64 = std::env::var("SEGLOG_DIFF_STEP_DELAY_MS")
        .ok()?
        .parse()
        .ok()?;
    Some(std::time::Duration::from_millis(ms))
}

/// Now, in ms since the epoch (the wall clock: the held clock's start).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::State;

    /// A file the wall clock stamped takes the step's held time; one on the held clock's grid
    /// (a cleaner's copy of an older segment's mtime) keeps its own, in any subdirectory.
    #[test]
    fn pinned_mtimes_follow_the_held_clock_only_where_the_wall_clock_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let start_ms = now_ms() - 10 * STEP_MS;
        let sub = dir.path().join("kafka").join("diff-0");
        std::fs::create_dir_all(&sub).unwrap();
        let written = sub.join("00000000000000000000.log");
        let copied = sub.join("00000000000000000005.log");
        std::fs::write(&written, b"x").unwrap();
        std::fs::write(&copied, b"y").unwrap();
        let earlier = start_ms + 3 * STEP_MS;
        let at = |ms: i64| UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
        std::fs::File::options()
            .write(true)
            .open(&copied)
            .unwrap()
            .set_modified(at(earlier))
            .unwrap();
        let now = start_ms + 7 * STEP_MS;
        pin_mtimes(dir.path(), start_ms, now).unwrap();
        let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
        assert_eq!(mtime(&written), at(now));
        assert_eq!(mtime(&copied), at(earlier));
        assert!(!on_held_grid(at(now + 1), start_ms));
        assert!(!on_held_grid(at(start_ms - STEP_MS), start_ms));
    }

    /// Long-run seed 101659's form, and what is not it.
    #[test]
    fn a_crash_kafka_cannot_recover_is_explained_only_in_its_form() {
        let crash = Step {
            op: Op::Crash {
                lag: Some(1),
                tear_back: 292,
            },
            fetch_offset: 0,
        };
        let before = |log_start| Observation {
            state: State {
                log_start,
                log_end: 20,
                segments: vec![0, 19],
                ..State::default()
            },
            ..Observation::default()
        };
        let ours = Observation::default();
        let e = "DiffDriver: {\"cmd\":\"crash\"} failed: \"org.apache.kafka.common.errors.InvalidTxnStateException: Expected transactional write from producer 1000 at offset (offset=10, segment=[-1:-1]) in partition diff-0\"";
        assert!(kafka_cannot_recover(&crash, &before(6), &ours, e));
        // No data below the log start: not this form.
        assert!(!kafka_cannot_recover(&crash, &before(0), &ours, e));
        // Another failure of Kafka's load, or another step: not this form.
        assert!(!kafka_cannot_recover(
            &crash,
            &before(6),
            &ours,
            "DiffDriver: failed: java.io.IOException: Could not read file"
        ));
        let reopen = Step {
            op: Op::Reopen,
            fetch_offset: 0,
        };
        assert!(!kafka_cannot_recover(&reopen, &before(6), &ours, e));
    }
}
