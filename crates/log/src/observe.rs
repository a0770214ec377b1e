//! Observability (`docs/observability.md`): the `tracing` events that summarise what a load,
//! a retention pass, a flush or a sync did, and Kafka's log metrics ([`LogMetrics`]) behind
//! the `metrics` cargo feature.
//!
//! Events are always compiled in: without a subscriber (or with a level filter below theirs)
//! each costs one check of a cached callsite interest. Levels: INFO is what an operator wants
//! (a log opened, rolled, truncated, retention deleted), WARN what an operator must look at
//! (data cut or kept damaged, a slow fsync, a checkpoint that did not parse), ERROR a poisoned
//! log, DEBUG developer detail (each segment's load, an unlink), TRACE the per-append and
//! per-read path. Field names are the code's domain names (`dir`, `base_offset`, `bytes`,
//! `reason`, `duration_ms`).
//!
//! Without the feature, [`LogMetrics`] is an empty struct whose methods are empty and inlined:
//! no metric code is compiled at all.

use std::path::Path;
use std::time::Duration;

use crate::checkpoint::CheckpointProblem;
use crate::load::LoadReport;
use crate::retention::RetentionReport;

/// An fsync (a flush or a group-commit sync) slower than this is logged at WARN.
pub(crate) const SLOW_FSYNC: Duration = Duration::from_millis(500);

/// The metric names (Kafka's log metrics, `kafka.log:type=Log,name=...`, in Prometheus' snake
/// case with a `seglog_` prefix; each constant says which Kafka metric it is, if any).
pub mod names {
    /// Kafka's `LogEndOffset` gauge: the offset after the last appended record.
    pub const LOG_END_OFFSET: &str = "seglog_log_end_offset";
    /// Kafka's `LogStartOffset` gauge: the first offset a read may ask for.
    pub const LOG_START_OFFSET: &str = "seglog_log_start_offset";
    /// Kafka's `Size` gauge: the bytes of every segment's `.log`.
    pub const SIZE: &str = "seglog_size_bytes";
    /// Kafka's `NumLogSegments` gauge.
    pub const NUM_LOG_SEGMENTS: &str = "seglog_num_log_segments";
    /// Kafka's `LogFlushRateAndTimeMs` timer, as a histogram of milliseconds: every flush and
    /// every group-commit sync of the log (its count is the fsync rate).
    pub const LOG_FLUSH_RATE_AND_TIME_MS: &str = "seglog_log_flush_rate_and_time_ms";
    /// Durable appends covered by one group-commit sync (histogram).
    pub const GROUP_COMMIT_BATCH_SIZE: &str = "seglog_group_commit_batch_size";
    /// Bytes appended (batch bytes written to `.log`s), a counter.
    pub const BYTES_APPENDED: &str = "seglog_bytes_appended_total";
    /// Records appended, a counter.
    pub const RECORDS_APPENDED: &str = "seglog_records_appended_total";
    /// Bytes returned by `Log::read` and `Log::read_into`, a counter.
    pub const BYTES_READ: &str = "seglog_bytes_read_total";
    /// Records delivered by the record readers (`RecordReader`, `OwnedRecordReader`), a
    /// counter.
    pub const RECORDS_READ: &str = "seglog_records_read_total";
    /// Bytes a recovery validated or cut (its `valid_bytes + truncated_bytes`), a counter.
    pub const RECOVERY_BYTES_SCANNED: &str = "seglog_recovery_bytes_scanned_total";
}

/// The metric handles of one log, labelled `topic` and `partition` when the directory name
/// parses as Kafka's (`orders-3`), else `log` = the directory name. Registered with the
/// recorder installed when the log is opened (install it first).
#[cfg(feature = "metrics")]
#[derive(Debug)]
pub(crate) struct LogMetrics {
    log_end_offset: metrics::Gauge,
    log_start_offset: metrics::Gauge,
    size: metrics::Gauge,
    num_log_segments: metrics::Gauge,
    flush_time_ms: metrics::Histogram,
    group_commit_batch_size: metrics::Histogram,
    bytes_appended: metrics::Counter,
    records_appended: metrics::Counter,
    bytes_read: metrics::Counter,
    records_read: metrics::Counter,
    recovery_bytes_scanned: metrics::Counter,
}

/// Without the `metrics` feature: nothing.
#[cfg(not(feature = "metrics"))]
#[derive(Debug)]
pub(crate) struct LogMetrics;

#[cfg(feature = "metrics")]
impl LogMetrics {
    /// The handles of the log in `dir`.
    pub(crate) fn new(dir: &Path) -> Self {
        use metrics::{Label, Unit};
        use names::*;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let labels: Vec<Label> = match crate::topic_partition::parse_partition_dir_name(&name) {
            Ok(parsed) => vec![
                Label::new("topic", parsed.topic_partition.topic),
                Label::new("partition", parsed.topic_partition.partition.to_string()),
            ],
            Err(_) => vec![Label::new("log", name)],
        };
        metrics::describe_gauge!(LOG_END_OFFSET, "Kafka's LogEndOffset");
        metrics::describe_gauge!(LOG_START_OFFSET, "Kafka's LogStartOffset");
        metrics::describe_gauge!(SIZE, Unit::Bytes, "Kafka's Size: bytes of all segments");
        metrics::describe_gauge!(NUM_LOG_SEGMENTS, "Kafka's NumLogSegments");
        metrics::describe_histogram!(
            LOG_FLUSH_RATE_AND_TIME_MS,
            Unit::Milliseconds,
            "Kafka's LogFlushRateAndTimeMs: each flush or group-commit fsync"
        );
        metrics::describe_histogram!(
            GROUP_COMMIT_BATCH_SIZE,
            Unit::Count,
            "durable appends per group-commit fsync"
        );
        metrics::describe_counter!(BYTES_APPENDED, Unit::Bytes, "bytes appended");
        metrics::describe_counter!(RECORDS_APPENDED, Unit::Count, "records appended");
        metrics::describe_counter!(BYTES_READ, Unit::Bytes, "bytes read");
        metrics::describe_counter!(RECORDS_READ, Unit::Count, "records read by record readers");
        metrics::describe_counter!(
            RECOVERY_BYTES_SCANNED,
            Unit::Bytes,
            "bytes scanned by recovery"
        );
        Self {
            log_end_offset: metrics::gauge!(LOG_END_OFFSET, labels.clone()),
            log_start_offset: metrics::gauge!(LOG_START_OFFSET, labels.clone()),
            size: metrics::gauge!(SIZE, labels.clone()),
            num_log_segments: metrics::gauge!(NUM_LOG_SEGMENTS, labels.clone()),
            flush_time_ms: metrics::histogram!(LOG_FLUSH_RATE_AND_TIME_MS, labels.clone()),
            group_commit_batch_size: metrics::histogram!(GROUP_COMMIT_BATCH_SIZE, labels.clone()),
            bytes_appended: metrics::counter!(BYTES_APPENDED, labels.clone()),
            records_appended: metrics::counter!(RECORDS_APPENDED, labels.clone()),
            bytes_read: metrics::counter!(BYTES_READ, labels.clone()),
            records_read: metrics::counter!(RECORDS_READ, labels.clone()),
            recovery_bytes_scanned: metrics::counter!(RECOVERY_BYTES_SCANNED, labels),
        }
    }

    /// The gauges after a change of the segment map or the log start (open, roll, retention,
    /// truncation, `DeleteRecords`): `size_bytes` is the sum over every segment.
    pub(crate) fn shape(
        &self,
        log_start_offset: i64,
        log_end_offset: i64,
        segments: usize,
        size_bytes: u64,
    ) {
        self.log_start_offset.set(log_start_offset as f64);
        self.log_end_offset.set(log_end_offset as f64);
        self.num_log_segments.set(segments as f64);
        self.size.set(size_bytes as f64);
    }

    /// An append of `records` records in `bytes` bytes ending at `log_end_offset`.
    #[inline]
    pub(crate) fn appended(&self, bytes: u64, records: u64, log_end_offset: i64) {
        self.bytes_appended.increment(bytes);
        self.records_appended.increment(records);
        self.size.increment(bytes as f64);
        self.log_end_offset.set(log_end_offset as f64);
    }

    /// A read that returned `bytes` bytes.
    #[inline]
    pub(crate) fn read(&self, bytes: u64) {
        self.bytes_read.increment(bytes);
    }

    /// A record reader delivered `records` records.
    #[inline]
    pub(crate) fn records_read(&self, records: u64) {
        self.records_read.increment(records);
    }

    /// A flush or group-commit sync that took `took`; `appends` durable appends joined it
    /// (`None` for a flush).
    pub(crate) fn fsynced(&self, took: Duration, appends: Option<usize>) {
        self.flush_time_ms.record(took.as_secs_f64() * 1e3);
        if let Some(appends) = appends {
            self.group_commit_batch_size.record(appends as f64);
        }
    }

    /// The load scanned `bytes` bytes in recoveries.
    pub(crate) fn recovered(&self, bytes: u64) {
        self.recovery_bytes_scanned.increment(bytes);
    }
}

#[cfg(not(feature = "metrics"))]
impl LogMetrics {
    /// Nothing to register.
    #[inline(always)]
    pub(crate) fn new(_dir: &Path) -> Self {
        Self
    }

    /// Nothing to count.
    #[inline(always)]
    pub(crate) fn appended(&self, _bytes: u64, _records: u64, _log_end_offset: i64) {}

    /// Nothing to count.
    #[inline(always)]
    pub(crate) fn read(&self, _bytes: u64) {}

    /// Nothing to count.
    #[inline(always)]
    pub(crate) fn records_read(&self, _records: u64) {}

    /// Nothing to record.
    #[inline(always)]
    pub(crate) fn fsynced(&self, _took: Duration, _appends: Option<usize>) {}

    /// Nothing to count.
    #[inline(always)]
    pub(crate) fn recovered(&self, _bytes: u64) {}
}

/// Bytes the load's recoveries scanned.
pub(crate) fn recovery_bytes_scanned(report: &LoadReport) -> u64 {
    report
        .segments
        .iter()
        .filter_map(|s| s.recovery.as_ref())
        .map(|r| r.valid_bytes.saturating_add(r.truncated_bytes))
        .sum()
}

/// The INFO event of a `LogDir` open starting to load its partitions (Kafka's "Recovering N
/// logs from dir since no clean shutdown file was found" / "Skipping recovery of N logs").
pub(crate) fn log_dir_loading(root: &Path, partitions: usize, threads: usize, clean: bool) {
    tracing::info!(
        dir = %root.display(), partitions, threads, clean_shutdown = clean,
        "loading the log dir's partitions"
    );
}

/// The INFO summary of a `LogDir` open's loads (WARN when a partition is offline).
pub(crate) fn log_dir_loaded(root: &Path, loaded: usize, offline: usize, took: Duration) {
    let dir = root.display();
    if offline > 0 {
        tracing::warn!(
            %dir, loaded, offline, duration_ms = duration_ms(took),
            "log dir loaded with offline partitions"
        );
    } else {
        tracing::info!(%dir, loaded, duration_ms = duration_ms(took), "log dir loaded");
    }
}

/// The events of a finished load: one per segment that a recovery or a check changed (WARN
/// when data was cut or damaged bytes were kept), one per other finding, then the INFO
/// summary, which names the high-watermark policy and the high watermark it gave (a consumer
/// reading below the high watermark sees nothing under `Manual` until someone moves it).
pub(crate) fn loaded(
    dir: &Path,
    report: &LoadReport,
    offsets: (i64, i64, i64),
    (high_watermark_policy, high_watermark): (crate::HighWatermarkPolicy, i64),
    read_only: bool,
    took: Duration,
) {
    let dir = dir.display();
    let (log_start_offset, log_end_offset, recovery_point) = offsets;
    for segment in &report.segments {
        let base_offset = segment.base_offset;
        if let Some(r) = &segment.recovery {
            let reason = r.reason.as_ref().map(|reason| format!("{reason:?}"));
            if r.damaged_tail_kept {
                tracing::warn!(
                    %dir, base_offset, valid_bytes = r.valid_bytes,
                    damaged_bytes = r.truncated_bytes, next_offset = r.next_offset, reason,
                    "recovery found damaged flushed data: bytes kept on disk, served up to it"
                );
            } else if r.truncated_bytes > 0 {
                tracing::warn!(
                    %dir, base_offset, valid_bytes = r.valid_bytes,
                    truncated_bytes = r.truncated_bytes, next_offset = r.next_offset, reason,
                    on_disk = r.on_disk, "recovery cut the segment"
                );
            } else {
                tracing::debug!(
                    %dir, base_offset, valid_bytes = r.valid_bytes, batches = r.batches,
                    next_offset = r.next_offset, "segment recovered, nothing cut"
                );
            }
        }
        let active = report.segments.last().map(|s| s.base_offset) == Some(base_offset);
        match &segment.rebuilt {
            Some(seglog_segment::RebuildReason::Requested) => {}
            Some(reason) => {
                let reason = rebuild_reason(reason, active && !report.had_clean_shutdown);
                tracing::info!(%dir, base_offset, reason, "indexes rebuilt");
            }
            None => tracing::trace!(%dir, base_offset, "segment loaded"),
        }
    }
    for split in &report.splits {
        tracing::warn!(
            %dir, base_offset = split.base_offset, new_base_offsets = ?split.new_base_offsets,
            "segment overflowed its base offset: split (KAFKA-6264)"
        );
    }
    if let Some(d) = &report.discontinuity {
        tracing::warn!(
            %dir, base_offset = d.base_offset, next_offset = d.next_offset,
            next_base_offset = d.next_base_offset, overlap = d.is_overlap(),
            "segments overlap after an unclean shutdown: later segments dropped"
        );
    }
    for gap in &report.gaps {
        tracing::info!(
            %dir, base_offset = gap.base_offset, next_offset = gap.next_offset,
            next_base_offset = gap.next_base_offset,
            "recovered segment ends below the next segment's base: gap kept"
        );
    }
    if !report.deleted_segments.is_empty() {
        tracing::warn!(
            %dir, base_offsets = ?report.deleted_segments,
            "segments dropped after a cut, a discontinuity or below the log start"
        );
    }
    for path in &report.set_aside {
        tracing::warn!(%dir, path = %path.display(), "damaged segment set aside");
    }
    for path in &report.stray_files {
        tracing::warn!(%dir, path = %path.display(), "stray segment-like file: not loaded");
    }
    if let Some(offset) = report.log_start_beyond_end {
        tracing::warn!(
            %dir, checkpointed = offset, log_end_offset,
            "checkpointed log start beyond the log end: ignored"
        );
    }
    for path in &report.completed_swaps {
        tracing::info!(%dir, path = %path.display(), "interrupted swap completed");
    }
    for path in &report.removed_files {
        tracing::debug!(%dir, path = %path.display(), "removed at load");
    }
    if let Some(base_offset) = report.created_segment {
        tracing::debug!(%dir, base_offset, "created an empty segment");
    }
    tracing::info!(
        %dir, segments = report.segments.len(), log_start_offset, log_end_offset,
        recovery_point, ?high_watermark_policy, high_watermark,
        clean_shutdown = report.had_clean_shutdown,
        recovered = report.recovered().count(), read_only,
        duration_ms = duration_ms(took), "log loaded"
    );
}

/// Why a load rebuilt a segment's indexes, as its INFO event says it. The active segment of an
/// unclean shutdown has preallocated indexes that were never trimmed (Kafka trims them at
/// roll and close): its zero-padded tail is what a crash leaves, not corruption, and is not
/// called so.
fn rebuild_reason(reason: &seglog_segment::RebuildReason, active_after_crash: bool) -> String {
    match reason {
        seglog_segment::RebuildReason::CorruptIndex {
            file_type,
            kind: seglog_index_core::CorruptKind::ZeroPaddedTail,
            ..
        } if active_after_crash => format!(
            "the active segment's {} was preallocated and not trimmed before an unclean shutdown",
            file_type.extension()
        ),
        other => format!("{other:?}"),
    }
}

/// A duration as the `duration_ms` field of an event prints it: milliseconds rounded to the
/// microsecond, so at most 3 decimals (`42.778`, not `42.778096000000005`).
pub(crate) fn duration_ms(took: Duration) -> f64 {
    // An integer count of microseconds over 1000 prints as its shortest decimal: <= 3 decimals.
    (took.as_nanos() as f64 / 1e3).round() / 1e3
}

/// Checkpoint files that did not parse and were read as empty (Kafka's rule), once per root.
pub(crate) fn checkpoint_problems(problems: &[CheckpointProblem]) {
    for problem in problems {
        tracing::warn!(
            path = %problem.path.display(), line = problem.line, kind = ?problem.kind,
            "checkpoint unreadable: read as empty"
        );
    }
}

/// The events of a retention pass that deleted segments (INFO per segment, with its reason).
pub(crate) fn retention(dir: &Path, report: &RetentionReport) {
    let dir = dir.display();
    for deleted in &report.deleted {
        tracing::info!(
            %dir, base_offset = deleted.base_offset, bytes = deleted.size_bytes,
            reason = ?deleted.reason, log_start_offset = report.log_start_offset,
            "retention deleted a segment"
        );
    }
    if !report.future_timestamp_segments.is_empty() {
        tracing::warn!(
            %dir, base_offsets = ?report.future_timestamp_segments,
            "segments kept by time retention: their largest timestamp is in the future"
        );
    }
}

/// The end of a cleaner round on `dir`: INFO with its figures when it cleaned, DEBUG when there
/// was nothing to clean, INFO when a truncation aborted it, WARN when it failed.
pub(crate) fn cleaned(
    dir: &Path,
    result: &crate::Result<Option<crate::CleanReport>>,
    took: Duration,
) {
    let dir = dir.display();
    let duration_ms = duration_ms(took);
    match result {
        Ok(Some(r)) => tracing::info!(
            %dir, first_dirty_offset = r.first_dirty_offset,
            first_uncleanable_offset = r.first_uncleanable_offset, end_offset = r.end_offset,
            checkpoint = ?r.checkpoint, segments_cleaned = r.segments_cleaned,
            segments_after = r.segments_after, records_before = r.records_before,
            records_after = r.records_after, bytes_before = r.bytes_before,
            bytes_after = r.bytes_after, keys = r.keys, map_full = r.map_full,
            next_purge_ms = r.next_purge_ms, duration_ms,
            "cleaning round done"
        ),
        Ok(None) => tracing::debug!(%dir, duration_ms, "cleaning round: nothing to clean"),
        Err(crate::Error::CleaningAborted { .. }) => {
            tracing::info!(%dir, duration_ms, "cleaning round aborted by a truncation");
        }
        Err(error) => tracing::warn!(%dir, error = %error, duration_ms, "cleaning round failed"),
    }
}

/// A flush or sync of `dir` that took `took` (`op`: "flush" or "group commit"): DEBUG, WARN
/// when slower than [`SLOW_FSYNC`].
pub(crate) fn fsynced(dir: &Path, op: &'static str, up_to: i64, took: Duration) {
    let duration_ms = duration_ms(took);
    if took >= SLOW_FSYNC {
        tracing::warn!(dir = %dir.display(), op, up_to, duration_ms, "slow fsync");
    } else {
        tracing::debug!(dir = %dir.display(), op, up_to, duration_ms, "fsynced");
    }
}

/// The log in `dir` was poisoned by a failed `op`: writes are refused until it is reopened.
pub(crate) fn poisoned(dir: &Path, op: &'static str, error: &dyn std::error::Error) {
    tracing::error!(
        dir = %dir.display(), op, error = %error,
        "write or fsync failed: the log refuses writes until reopened"
    );
}

/// Every gauge equals what the [`crate::Log`] reports after each kind of operation that
/// changes it (a recorder that keeps the gauges' values, local to the test's thread).
#[cfg(test)]
#[cfg(all(feature = "metrics", not(loom)))]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};
    use seglog_records::BatchBuilder;

    use super::names;
    use crate::{CleanupPolicy, HighWatermarkPolicy, Log, LogConfig, LogOpenOptions, ManualClock};

    const T0: i64 = 1_700_000_000_000;

    /// The gauges by name (one log per test, so labels are ignored).
    #[derive(Debug, Default)]
    struct Gauges(Mutex<HashMap<String, Arc<AtomicU64>>>);

    impl Gauges {
        fn value(&self, name: &str) -> f64 {
            let gauges = self.0.lock().unwrap();
            f64::from_bits(gauges[name].load(Ordering::Relaxed))
        }

        /// The four gauges against the log's own figures, `after` naming the operation.
        fn check(&self, log: &Log, after: &str) {
            let size: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
            assert_eq!(self.value(names::SIZE), size as f64, "Size after {after}");
            assert_eq!(
                self.value(names::NUM_LOG_SEGMENTS),
                log.segment_count() as f64,
                "NumLogSegments after {after}"
            );
            assert_eq!(
                self.value(names::LOG_START_OFFSET),
                log.log_start_offset() as f64,
                "LogStartOffset after {after}"
            );
            assert_eq!(
                self.value(names::LOG_END_OFFSET),
                log.log_end_offset() as f64,
                "LogEndOffset after {after}"
            );
        }
    }

    impl metrics::Recorder for Gauges {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            Counter::noop()
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            let mut gauges = self.0.lock().unwrap();
            Gauge::from_arc(Arc::clone(
                gauges.entry(key.name().to_string()).or_default(),
            ))
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    fn open(dir: &std::path::Path, gauges: &Gauges, clock: &Arc<ManualClock>) -> Log {
        let config = LogConfig {
            segment_bytes: 1024,
            retention_ms: -1,
            retention_bytes: 2048,
            message_timestamp_after_max_ms: i64::MAX,
            message_timestamp_before_max_ms: i64::MAX,
            cleanup_policy: CleanupPolicy::CompactDelete,
            file_delete_delay_ms: 0,
            ..LogConfig::default()
        };
        let options = LogOpenOptions {
            clock: clock.clone(),
            high_watermark: HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        };
        metrics::with_local_recorder(gauges, || Log::open_with(dir, config, options)).unwrap()
    }

    /// `count` records over 5 keys, one batch each.
    fn put(log: &Log, count: usize) {
        for i in 0..count {
            let mut builder = BatchBuilder::new(0);
            let key = format!("k{}", i % 5);
            builder.append(T0, Some(key.as_bytes()), Some(&[b'v'; 40]), &[]);
            log.append(&builder.build().unwrap()).unwrap();
        }
    }

    #[test]
    fn every_gauge_follows_every_operation_that_changes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let gauges = Gauges::default();
        let log = open(tmp.path(), &gauges, &clock);
        gauges.check(&log, "open");
        put(&log, 40);
        gauges.check(&log, "appends");
        assert!(log.segment_count() > 1);
        log.roll().unwrap();
        gauges.check(&log, "roll");
        let report = log.clean().unwrap().expect("a round");
        assert!(report.bytes_after < report.bytes_before, "{report:?}");
        gauges.check(&log, "a cleaning round");
        put(&log, 30);
        gauges.check(&log, "appends after a round");
        log.roll().unwrap();
        log.clean().unwrap().expect("a second round");
        gauges.check(&log, "a second cleaning round");
        put(&log, 60);
        let retention = log.delete_old_segments().unwrap();
        assert!(!retention.deleted.is_empty(), "{retention:?}");
        gauges.check(&log, "size retention");
        log.delete_records_before(log.log_end_offset() - 10)
            .unwrap();
        gauges.check(&log, "DeleteRecords");
        let retention = log.delete_old_segments().unwrap();
        assert!(!retention.deleted.is_empty(), "{retention:?}");
        gauges.check(&log, "log-start retention");
        log.truncate_to(log.log_end_offset() - 3).unwrap();
        gauges.check(&log, "truncation");
        put(&log, 2);
        gauges.check(&log, "appends after a truncation");
        log.close().unwrap();
        drop(log);
        let log = open(tmp.path(), &gauges, &clock);
        gauges.check(&log, "reopen");
        put(&log, 3);
        gauges.check(&log, "appends after reopen");
    }
}
