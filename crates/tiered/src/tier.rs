//! seglog's side meets the store here: [`ObjectTier`] implements `seglog::remote::RemoteTier`
//! (synchronous, over its own runtime) and [`Tier`] drives one log's copies and remote expiry
//! (Kafka's `RemoteLogManager` copy task and `RLMExpirationTask`).

use std::future::Future;
use std::sync::Arc;

use object_store::ObjectStore;
use seglog::Log;
use seglog::remote::{
    RemoteError, RemoteErrorKind, RemoteIndexKind, RemoteSegment, RemoteSegmentId, RemoteTier,
    SealedSegmentFiles,
};

use crate::lineage::{filtered_epochs, is_within_leader_epochs};
use crate::{
    Error, FetchQuota, IndexType, Layout, PartitionTier, RecoveryReport, RemoteLogSegmentMetadata,
    RemoteLogSegmentState, Result, SegmentToCopy, TierStats, Uuid,
};

/// A partition's remote tier over an object store, usable from synchronous code: every call
/// blocks on the tier's own current-thread runtime (so it must not be called from inside
/// another async runtime's task).
#[derive(Debug)]
pub struct ObjectTier {
    tier: PartitionTier,
    runtime: tokio::runtime::Runtime,
    stats: Arc<TierStats>,
    fetch_quota: Option<Arc<FetchQuota>>,
    /// The segments whose metadata says they have no `.txnindex` (Kafka's `txnIdxEmpty`), as
    /// of the last listing: a fetch of that index answers NotFound without a request.
    txn_index_empty: std::sync::Mutex<std::collections::HashSet<Uuid>>,
}

impl ObjectTier {
    /// The tier of `layout`'s partition in `store`.
    ///
    /// # Errors
    /// [`Error::Runtime`] when the runtime cannot start.
    pub fn new(store: Arc<dyn ObjectStore>, layout: Layout, broker_id: i32) -> Result<ObjectTier> {
        Self::from_partition_tier(PartitionTier::new(store, layout, broker_id))
    }

    /// Wraps a configured [`PartitionTier`].
    ///
    /// # Errors
    /// [`Error::Runtime`] when the runtime cannot start.
    pub fn from_partition_tier(tier: PartitionTier) -> Result<ObjectTier> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let partition = tier.layout().partition();
        let stats = Arc::new(TierStats::new(&partition.topic, partition.partition));
        Ok(ObjectTier {
            tier,
            runtime,
            stats,
            fetch_quota: None,
            txn_index_empty: std::sync::Mutex::default(),
        })
    }

    /// Reads through this tier count against `quota` (the broker-wide fetch quota, KIP-956):
    /// while it is exceeded, the log's fetches that would read here return no records.
    /// Without one, fetches are never throttled.
    pub fn with_fetch_quota(mut self, quota: Arc<FetchQuota>) -> ObjectTier {
        self.fetch_quota = Some(quota);
        self
    }

    /// The partition's remote-tier counters (bytes fetched by reads here; copies, deletes and
    /// lags by [`crate::TieringService`]).
    pub fn stats(&self) -> &Arc<TierStats> {
        &self.stats
    }

    /// The fetch quota reads through this tier count against, if any.
    pub fn fetch_quota(&self) -> Option<&Arc<FetchQuota>> {
        self.fetch_quota.as_ref()
    }

    /// The protocols underneath.
    pub fn partition_tier(&self) -> &PartitionTier {
        &self.tier
    }

    /// Runs one of the tier's futures to completion.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The finished segments, as [`PartitionTier::segments`].
    ///
    /// # Errors
    /// As [`PartitionTier::segments`].
    pub fn finished_segments(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.block_on(self.tier.segments())
    }

    /// Every finished copy, the redundant ones too, ascending by start offset (then by when
    /// it finished): what a log's reads choose from by its leader-epoch lineage
    /// (`seglog::remote::lineage_chain`). After an unclean leader election the copy
    /// [`PartitionTier::segments`] keeps at an offset may be a former leader's.
    ///
    /// # Errors
    /// [`Error::Store`] or [`Error::Corrupt`] from the metadata.
    pub fn finished_copies(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        let (mut all, redundant) = self.block_on(self.tier.split_finished())?;
        all.extend(redundant);
        all.sort_by_key(|m| (m.start_offset, m.event_timestamp_ms, m.segment_id));
        Ok(all)
    }
}

/// The metadata a fetch needs, from seglog's view of a remote segment.
fn metadata_of(segment: &RemoteSegment) -> RemoteLogSegmentMetadata {
    RemoteLogSegmentMetadata {
        segment_id: Uuid(*segment.id.as_bytes()),
        start_offset: segment.base_offset,
        end_offset: segment.end_offset,
        max_timestamp_ms: segment.max_timestamp_ms,
        segment_size_in_bytes: segment.size_in_bytes,
        segment_leader_epochs: segment.leader_epochs.clone(),
        txn_index_empty: false,
        broker_id: -1,
        event_timestamp_ms: -1,
        state: RemoteLogSegmentState::CopySegmentFinished,
    }
}

/// seglog's view of a finished remote segment.
pub fn remote_segment(metadata: &RemoteLogSegmentMetadata) -> RemoteSegment {
    RemoteSegment {
        base_offset: metadata.start_offset,
        end_offset: metadata.end_offset,
        max_timestamp_ms: metadata.max_timestamp_ms,
        size_in_bytes: metadata.segment_size_in_bytes,
        leader_epochs: metadata.segment_leader_epochs.clone(),
        id: RemoteSegmentId::from_bytes(metadata.segment_id.0),
    }
}

/// The contract's error kinds: NotFound as it is; a store's generic failure (HTTP 5xx,
/// throttling, timeouts, a dropped connection) is retriable; everything else is not.
pub fn remote_error(error: Error) -> RemoteError {
    let kind = match &error {
        e if e.is_not_found() => RemoteErrorKind::NotFound,
        Error::Store {
            source: object_store::Error::Generic { .. },
            ..
        } => RemoteErrorKind::Retriable,
        _ => RemoteErrorKind::Other,
    };
    RemoteError::with_source(kind, error.to_string(), error)
}

impl RemoteTier for ObjectTier {
    /// Every finished copy, the redundant ones too: after an unclean leader election the copy
    /// [`PartitionTier::segments`] keeps at an offset (the first by start offset) may be a
    /// former leader's, and only the log's leader-epoch lineage can tell which one to serve.
    fn segments(&self) -> Result<Vec<RemoteSegment>, RemoteError> {
        let all = self.finished_copies().map_err(remote_error)?;
        *self
            .txn_index_empty
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = all
            .iter()
            .filter(|m| m.txn_index_empty)
            .map(|m| m.segment_id)
            .collect();
        Ok(all.iter().map(remote_segment).collect())
    }

    fn fetch_log(
        &self,
        segment: &RemoteSegment,
        start_position: u64,
        end_position: Option<u64>,
    ) -> Result<Vec<u8>, RemoteError> {
        // The contract's end is exclusive and may pass the segment's end; Kafka's RSM end is
        // inclusive and must not.
        let end = end_position.map_or(segment.size_in_bytes, |end| end.min(segment.size_in_bytes));
        if start_position >= end {
            return Ok(Vec::new());
        }
        let metadata = metadata_of(segment);
        let bytes = self
            .block_on(
                self.tier
                    .rsm()
                    .fetch_log_segment(&metadata, start_position, Some(end - 1)),
            )
            .map_err(remote_error)?;
        self.stats.fetched(bytes.len() as u64);
        if let Some(quota) = &self.fetch_quota {
            quota.record(bytes.len() as u64);
        }
        Ok(bytes.to_vec())
    }

    /// The fetch quota's throttle time; one that is not 0 is counted as a throttled fetch in
    /// [`ObjectTier::stats`] (the log then returns that fetch empty).
    fn fetch_throttle_time_ms(&self) -> u64 {
        let Some(quota) = &self.fetch_quota else {
            return 0;
        };
        let throttle_ms = quota.throttle_time_ms();
        if throttle_ms > 0 {
            self.stats.fetch_throttled(throttle_ms);
        }
        throttle_ms
    }

    fn fetch_index(
        &self,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
    ) -> Result<Vec<u8>, RemoteError> {
        // Kafka's `findNextSegmentWithTxnIndex` skips such segments by their metadata: a
        // read_committed walk over many remote segments costs no request for them.
        if kind == RemoteIndexKind::Transaction
            && self
                .txn_index_empty
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&Uuid(*segment.id.as_bytes()))
        {
            return Err(RemoteError::not_found(format!(
                "remote segment {} at {} has no transaction index",
                Uuid(*segment.id.as_bytes()),
                segment.base_offset
            )));
        }
        let index = match kind {
            RemoteIndexKind::Offset => IndexType::Offset,
            RemoteIndexKind::Time => IndexType::Timestamp,
            RemoteIndexKind::Transaction => IndexType::Transaction,
            RemoteIndexKind::ProducerSnapshot => IndexType::ProducerSnapshot,
            RemoteIndexKind::LeaderEpoch => IndexType::LeaderEpoch,
        };
        let metadata = metadata_of(segment);
        let bytes = self
            .block_on(self.tier.rsm().fetch_index(&metadata, index))
            .map_err(remote_error)?;
        Ok(bytes.to_vec())
    }
}

/// One segment a copy pass uploaded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CopiedSegment {
    /// The segment's base offset.
    pub base_offset: i64,
    /// Its last offset.
    pub end_offset: i64,
    /// Bytes of its `.log`.
    pub size_in_bytes: u64,
    /// The remote segment id (Kafka's Uuid text).
    pub segment_id: String,
}

/// What [`Tier::copy`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CopyReport {
    /// The segments copied, in order.
    pub copied: Vec<CopiedSegment>,
    /// The log's highest offset in remote storage afterwards (-1: none).
    pub highest_remote_offset: i64,
}

/// What [`Tier::expire`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExpireReport {
    /// Remote segments deleted (base offsets), by retention or because they were redundant.
    pub deleted: Vec<i64>,
    /// Remote segments outside the log's leader-epoch lineage (base offsets): not counted, not
    /// deleted by retention, until the epoch cache no longer reaches their epochs.
    pub outside_lineage: Vec<i64>,
    /// The log start offset afterwards.
    pub log_start_offset: i64,
}

/// The copier and expirer of one log.
#[derive(Debug, Clone)]
pub struct Tier {
    remote: Arc<ObjectTier>,
}

impl Tier {
    /// A driver over `remote`.
    pub fn new(remote: Arc<ObjectTier>) -> Tier {
        Tier { remote }
    }

    /// The remote tier.
    pub fn remote(&self) -> &Arc<ObjectTier> {
        &self.remote
    }

    /// Recovers the store (abandoned copies, interrupted deletions, orphans) and attaches the
    /// tier to `log` (`Log::set_remote_tier`: the highest remote offset and the whole log's
    /// start come from the finished segments, so nothing already copied is copied again).
    ///
    /// # Errors
    /// The recovery's error, or the log's.
    pub fn attach(&self, log: &Log) -> Result<RecoveryReport> {
        let report = self.remote.block_on(self.remote.tier.recover())?;
        log.set_remote_tier(self.remote.clone())?;
        Ok(report)
    }

    /// Copies every segment `log.tier_candidates()` offers, in order, raising the log's highest
    /// remote offset after each COPY_SEGMENT_FINISHED (only then may local retention delete
    /// it). Stops at the first failure: what was copied before it stays counted.
    ///
    /// # Errors
    /// The failing copy's error (nothing is counted for it; the next run cleans it up).
    pub fn copy(&self, log: &Log) -> Result<CopyReport> {
        let mut report = CopyReport::default();
        for files in log.tier_candidates()? {
            report.copied.push(self.copy_one(log, files)?);
        }
        report.highest_remote_offset = log.highest_remote_offset();
        Ok(report)
    }

    /// Copies one segment of `log.tier_candidates()` and raises the log's highest remote offset
    /// to its end once its copy is COPY_SEGMENT_FINISHED (the step [`Tier::copy`] repeats, for a
    /// copier that checks a quota before each segment).
    ///
    /// # Errors
    /// The copy's error (nothing is counted for it; the next recovery cleans it up).
    pub fn copy_one(&self, log: &Log, files: SealedSegmentFiles) -> Result<CopiedSegment> {
        let segment = SegmentToCopy::from_files(&files);
        let finished = match self
            .remote
            .block_on(self.remote.tier.copy_segment(&segment))
        {
            Ok(finished) => finished,
            Err(e) => {
                self.remote.stats.copy_failed();
                return Err(e);
            }
        };
        self.remote.stats.copied(finished.segment_size_in_bytes);
        log.set_highest_remote_offset(finished.end_offset);
        // `files` (and its pin) lives until here: retention could not delete the segment
        // while it was uploaded.
        drop(files);
        Ok(CopiedSegment {
            base_offset: finished.start_offset,
            end_offset: finished.end_offset,
            size_in_bytes: finished.segment_size_in_bytes,
            segment_id: finished.segment_id.to_string(),
        })
    }

    /// Remote retention (Kafka 4.4's `RLMExpirationTask.cleanupExpiredRemoteLogSegments`).
    ///
    /// The log's leader-epoch lineage decides which remote segments count
    /// (`isRemoteSegmentWithinLeaderEpochs`): after an unclean leader election a former
    /// leader's copies of offsets the lineage gave to other records are outside it. Walking
    /// the finished segments that hold an epoch of the lineage, in order: a segment wholly
    /// below the log start offset whose epochs are all at or below the lineage's first is
    /// deleted; one outside the lineage is skipped (not deleted, not counted, not stopping
    /// the walk); one inside it is deleted when its largest timestamp is below
    /// `now_ms - retention.ms` or while the size above `retention.bytes` (local segments not
    /// yet copied plus the remote segments inside the lineage) is at least its size; the walk
    /// stops at the first segment inside the lineage that is kept. The log start offset is
    /// raised past what time and size deleted
    /// (`Log::update_log_start_offset_from_remote_tier`), then the segments go through the
    /// delete states; then the segments whose epochs are all below the epoch cache's earliest
    /// entry (the cache was truncated at its start) go too. Redundant copies (overlapping an
    /// earlier one) are deleted when both are inside the lineage (a copy repeated after a
    /// lost answer), never in favour of one outside it.
    ///
    /// A log without leader epochs (its batches carry none), and a segment without any,
    /// cannot be placed in a lineage: every segment then counts as inside it, and the walk is
    /// over all of them in order (a deliberate difference: Kafka's logs always have epochs).
    ///
    /// # Errors
    /// The log's or a deletion's error (an interrupted deletion is finished by the next
    /// recovery; the log start offset is already past the segment).
    pub fn expire(&self, log: &Log, now_ms: i64) -> Result<ExpireReport> {
        let tier = &self.remote.tier;
        let (segments, redundant) = self.remote.block_on(tier.split_finished())?;
        let config = log.config();
        let epochs = log.leader_epochs();
        let lineage = filtered_epochs(&epochs);
        let log_end_offset = log.log_end_offset();
        let valid = |s: &RemoteLogSegmentMetadata| {
            lineage.is_empty()
                || s.segment_leader_epochs.is_empty()
                || is_within_leader_epochs(
                    &s.segment_leader_epochs,
                    s.end_offset,
                    log_end_offset,
                    &lineage,
                )
        };
        // Kafka walks `listRemoteLogSegments(tp, epoch)` for each epoch of the lineage: a
        // segment holding none of them is never visited.
        let visited = |s: &RemoteLogSegmentMetadata| {
            lineage.is_empty()
                || s.segment_leader_epochs.is_empty()
                || s.segment_leader_epochs
                    .iter()
                    .any(|(e, _)| lineage.contains_key(e))
        };
        let remote_size: u64 = segments
            .iter()
            .filter(|s| valid(s))
            .map(|s| s.segment_size_in_bytes)
            .sum();
        let total = remote_size + log.only_local_segments_size();
        let mut breached_bytes = if config.retention_bytes >= 0 {
            total.saturating_sub(config.retention_bytes as u64)
        } else {
            0
        };
        let cleanup_until_ms = (config.retention_ms > -1 && now_ms - config.retention_ms >= 0)
            .then(|| now_ms - config.retention_ms);
        let log_start = log.log_start_offset();
        let first_epoch = lineage.keys().next().copied();
        let mut new_start = None;
        let mut doomed: Vec<RemoteLogSegmentMetadata> = Vec::new();
        let mut report = ExpireReport::default();
        // Kafka walks every copy, a repeated one too (seglog's redundant ones).
        let mut all: Vec<&RemoteLogSegmentMetadata> = segments.iter().chain(&redundant).collect();
        all.sort_by_key(|s| (s.start_offset, s.event_timestamp_ms, s.segment_id));
        for &segment in all.iter().filter(|s| visited(s)) {
            // `isSegmentBreachByLogStartOffset`.
            let by_start = segment.end_offset < log_start
                && first_epoch.is_none_or(|first| {
                    segment
                        .segment_leader_epochs
                        .iter()
                        .all(|(e, _)| *e <= first)
                });
            let is_valid = !by_start && valid(segment);
            let mut delete = by_start;
            if is_valid {
                let by_time =
                    cleanup_until_ms.is_some_and(|until| segment.max_timestamp_ms < until);
                let by_size = !by_time
                    && breached_bytes > 0
                    && breached_bytes >= segment.segment_size_in_bytes;
                if by_time || by_size {
                    breached_bytes = breached_bytes.saturating_sub(segment.segment_size_in_bytes);
                    new_start = Some(segment.end_offset + 1);
                    delete = true;
                }
            }
            if delete {
                doomed.push(segment.clone());
            } else if is_valid {
                break;
            }
        }
        if let Some(start) = new_start {
            log.update_log_start_offset_from_remote_tier(start)?;
        }
        // `deleteLogSegmentsDueToLeaderEpochCacheTruncation`: epochs the cache no longer has
        // at its start.
        if let Some(&(earliest, _)) = epochs.first() {
            for &segment in &all {
                let all_below = !segment.segment_leader_epochs.is_empty()
                    && segment
                        .segment_leader_epochs
                        .iter()
                        .all(|(e, _)| *e < earliest);
                if all_below && !doomed.iter().any(|d| d.segment_id == segment.segment_id) {
                    doomed.push(segment.clone());
                }
            }
        }
        // Redundant copies: the kept segment that covers each (the last one starting at or
        // before it) and it must both be inside the lineage.
        for copy in &redundant {
            let cover = segments
                .iter()
                .rev()
                .find(|s| s.start_offset <= copy.start_offset);
            let duplicate = valid(copy) && cover.is_some_and(&valid);
            if duplicate && !doomed.iter().any(|d| d.segment_id == copy.segment_id) {
                doomed.push(copy.clone());
            }
        }
        report.outside_lineage = all
            .iter()
            .filter(|s| !valid(s) && !doomed.iter().any(|d| d.segment_id == s.segment_id))
            .map(|s| s.start_offset)
            .collect();
        let stats = &self.remote.stats;
        let mut lag_bytes: u64 = doomed.iter().map(|s| s.segment_size_in_bytes).sum();
        let mut lag_segments = doomed.len() as u64;
        stats.delete_lag(lag_bytes, lag_segments);
        for segment in &doomed {
            if let Err(e) = self.remote.block_on(tier.delete_segment(segment)) {
                stats.delete_failed();
                return Err(e);
            }
            stats.deleted();
            lag_bytes -= segment.segment_size_in_bytes;
            lag_segments -= 1;
            stats.delete_lag(lag_bytes, lag_segments);
            report.deleted.push(segment.start_offset);
        }
        report.log_start_offset = log.log_start_offset();
        Ok(report)
    }
}
