//! seglog's side of the maintenance operations (issue #25, part A): retention, DeleteRecords,
//! truncate fully and start at, a cleaning round, a crash.
//! Kafka's side is `DiffDriver.maintenance`.

use std::fs::OpenOptions;

use seglog::{Batches, CleanupPolicy, Clock, DirtyRatio, LogConfig};

use super::{Ours, accepted, options, refused, result};
use crate::history::Op;
use crate::observe::{FileBatch, Outcome};

/// The offset map of a cleaning round on both sides (4 MiB; a history has 7 keys).
const DEDUPE_BUFFER_BYTES: i64 = 4 << 20;

impl Ours {
    /// Every segment's base offset and `.log` size.
    pub(super) fn files(&self) -> Vec<(i64, u64)> {
        self.log()
            .segments()
            .iter()
            .map(|s| (s.base_offset, s.size_bytes))
            .collect()
    }

    /// Each segment's batches as its `.log` holds them (`Observation::file_batches`); a file
    /// that does not parse shows as one all `-1` entry where it stops.
    pub(super) fn file_batches(&self) -> Vec<Vec<FileBatch>> {
        self.log()
            .segments()
            .iter()
            .map(|s| {
                let Ok(bytes) = std::fs::read(&s.path) else {
                    return vec![[-1; 7]];
                };
                let mut out = Vec::new();
                for batch in Batches::new(&bytes[..], 0) {
                    let Ok(batch) = batch else {
                        out.push([-1; 7]);
                        break;
                    };
                    let h = batch.header();
                    let (mut records, mut payload) = (0i64, 0i64);
                    // A legacy (v0/v1) header has no base offset: Kafka's
                    // `AbstractLegacyRecordBatch.baseOffset()` is its first record's.
                    let mut first = h.base_offset;
                    for record in batch.records(usize::MAX) {
                        let Ok(r) = record else {
                            records = -1;
                            break;
                        };
                        first.get_or_insert(r.offset);
                        records += 1;
                        let key = r.key.as_ref().map_or(0, |b| b.len());
                        let value = r.value.as_ref().map_or(0, |b| b.len());
                        payload += i64::try_from(key + value).unwrap_or(i64::MAX);
                    }
                    out.push([
                        first.unwrap_or(-1),
                        h.last_offset,
                        i64::from(h.compression.id()),
                        records,
                        payload,
                        i64::from(h.magic),
                        i64::from(h.delete_horizon_ms().is_some()),
                    ]);
                }
                out
            })
            .collect()
    }

    /// Applies a maintenance operation (`Op::is_maintenance`).
    pub(super) fn maintain(&mut self, op: &Op) -> Outcome {
        match *op {
            Op::Retention {
                retention_ms,
                retention_bytes,
            } => {
                let config = LogConfig {
                    retention_ms,
                    retention_bytes,
                    ..self.config.clone()
                };
                self.with_config(config, |ours| {
                    result(ours.log().delete_old_segments().map(drop))
                })
            }
            Op::DeleteRecords { offset } => {
                result(self.log().delete_records_before(offset).map(drop))
            }
            Op::TruncateFully { offset } => result(self.log().truncate_fully_and_start_at(offset)),
            Op::Clean {
                delete_retention_ms,
            } => {
                if !self.kafka_would_clean() {
                    return accepted(None);
                }
                let config = LogConfig {
                    cleanup_policy: CleanupPolicy::Compact,
                    delete_retention_ms,
                    min_cleanable_dirty_ratio: DirtyRatio(0.0),
                    min_compaction_lag_ms: 0,
                    cleaner_dedupe_buffer_size: DEDUPE_BUFFER_BYTES,
                    ..self.config.clone()
                };
                let now_ms = self.clock.now_ms();
                self.with_config(config, |ours| result(ours.log().clean_at(now_ms).map(drop)))
            }
            Op::Crash { lag, tear_back } => match self.crash(lag, tear_back) {
                Ok(()) => accepted(None),
                Err(CrashError::Log(e)) => refused(&e),
                Err(CrashError::Harness(e)) => Outcome {
                    refused: Some(format!("harness: {e}")),
                    message: Some(e),
                    ..Outcome::default()
                },
            },
            _ => Outcome {
                refused: Some("harness: not a maintenance operation".into()),
                ..Outcome::default()
            },
        }
    }

    /// Runs `f` with `config` set, then sets the history's config back.
    fn with_config(&mut self, config: LogConfig, f: impl FnOnce(&Self) -> Outcome) -> Outcome {
        if let Err(e) = self.log().set_config(config) {
            return refused(&e);
        }
        let outcome = f(self);
        match self.log().set_config(self.config.clone()) {
            Ok(()) => outcome,
            Err(e) => refused(&e),
        }
    }

    /// The log's last stable offset.
    pub fn last_stable_offset(&self) -> i64 {
        self.log().last_stable_offset()
    }

    /// Before a cleaning round: raises a high watermark in a gap to `kafka_hw`, Kafka's after
    /// its round of the same step, when that is the form of finding K1 (rule
    /// `high-watermark-in-a-gap-rises-to-the-next-batch`): no batch holds seglog's high
    /// watermark and the first batch above it starts at `kafka_hw` (or none does and
    /// `kafka_hw` is the log end). True when it raised it.
    pub fn raise_high_watermark_in_a_gap_to(&self, kafka_hw: i64) -> bool {
        let hw = self.log().high_watermark();
        kafka_hw > hw
            && self.batch_base_at_high_watermark() == Some(kafka_hw)
            && self.raise_high_watermark(kafka_hw).is_ok()
    }

    /// Whether Kafka's `LogCleaner` would start a round on this log (computed on seglog's
    /// state, which the comparator holds equal to Kafka's): `LogCleanerManager.cleanableOffsets`
    /// with min.compaction.lag.ms 0, then `calculateCleanableBytes`, and a round only when the
    /// cleanable bytes are above 0 (min.cleanable.dirty.ratio 0). seglog's own rule differs in
    /// one case only (a passed delete horizon makes a log due with nothing dirty:
    /// docs/format.md, "A passed delete horizon makes a log due"), which this keeps out of the
    /// comparison.
    pub(super) fn kafka_would_clean(&self) -> bool {
        let log = self.log();
        let segments = log.segments();
        let Some(active) = segments.last().map(|s| s.base_offset) else {
            return false;
        };
        let (start, end) = (log.log_start_offset(), log.log_end_offset());
        let checkpoint = log.cleaner_checkpoint().unwrap_or(start);
        let first_dirty = if checkpoint < start || checkpoint > end {
            start
        } else {
            checkpoint
        };
        let uncleanable = first_dirty.max(log.last_stable_offset().min(active));
        // `LogSegments.values(from, to)`: nothing when `from == to`, else from the segment
        // holding `from` (its floor, also when `from` lies in a gap after it) to those below
        // `to`.
        let values = |from: i64, to: i64| -> Vec<&seglog::SegmentInfo> {
            if from >= to {
                return Vec::new();
            }
            let floor = segments
                .iter()
                .rfind(|s| s.base_offset <= from)
                .map_or(i64::MIN, |s| s.base_offset);
            segments
                .iter()
                .filter(|s| s.base_offset >= floor && s.base_offset < to)
                .collect()
        };
        // `calculateCleanableBytes`: the first of `nonActiveLogSegmentsFrom(uncleanable)`,
        // else the active segment.
        let first_uncleanable = values(uncleanable, active)
            .first()
            .map_or(active, |s| s.base_offset);
        let cleanable: u64 = values(first_dirty.min(first_uncleanable), first_uncleanable)
            .iter()
            .map(|s| s.size_bytes)
            .sum();
        cleanable > 0
    }

    /// Drops the log without a clean close (no clean-shutdown marker, no producer snapshot),
    /// writes the checkpoints a broker would have (the recovery point `lag` segments back, the
    /// log start and high watermark as they were), cuts the active `.log` `tear_back` bytes
    /// short, and opens it again.
    fn crash(&mut self, lag: Option<u8>, tear_back: u16) -> Result<(), CrashError> {
        let Some(log) = self.log.take() else {
            return Err(CrashError::Harness("no log is open".into()));
        };
        let segments = log.segments();
        let recovery_point = match lag {
            None => log.log_end_offset(),
            Some(lag) => {
                let i = segments.len().saturating_sub(1 + usize::from(lag));
                segments.get(i).map_or(0, |s| s.base_offset)
            }
        };
        let log_start = log.log_start_offset();
        let high_watermark = log.high_watermark();
        let active = segments.last().map(|s| s.path.clone());
        drop(log);
        for (file, offset) in [
            ("recovery-point-offset-checkpoint", recovery_point),
            ("log-start-offset-checkpoint", log_start),
            ("replication-offset-checkpoint", high_watermark),
        ] {
            let path = self.dir.join(file);
            std::fs::write(&path, format!("0\n1\ndiff 0 {offset}\n"))
                .map_err(|e| CrashError::Harness(format!("write {}: {e}", path.display())))?;
        }
        if let (Some(path), true) = (active, tear_back > 0) {
            let cut = |e: std::io::Error| format!("cut {}: {e}", path.display());
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| CrashError::Harness(cut(e)))?;
            let len = file
                .metadata()
                .map_err(|e| CrashError::Harness(cut(e)))?
                .len();
            file.set_len(len.saturating_sub(u64::from(tear_back)))
                .map_err(|e| CrashError::Harness(cut(e)))?;
        }
        let log = seglog::Log::open_with(&self.dir, self.config.clone(), options(&self.clock))
            .map_err(CrashError::Log)?;
        self.log = Some(log);
        Ok(())
    }
}

/// Why a crash step failed: the log's error (an outcome compared with Kafka's), or the
/// harness's.
enum CrashError {
    Log(seglog::Error),
    Harness(String),
}
