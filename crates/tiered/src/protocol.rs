//! The copy and delete protocols of one partition (Kafka's `RemoteLogManager` copy task and
//! `deleteRemoteLogSegment`), and the recovery that makes a crash at any step harmless.
//!
//! Copy: slot 0 COPY_SEGMENT_STARTED, upload the parts, slot 1 COPY_SEGMENT_FINISHED; only
//! after that may the caller raise the highest remote offset (and so let the local segment go).
//! Delete: DELETE_SEGMENT_STARTED, delete every part, DELETE_SEGMENT_FINISHED, then purge the
//! records (slot 0 first). Recovery, at the start of every run: a segment still
//! COPY_SEGMENT_STARTED is an abandoned copy (one copier per partition, as Kafka's leader) and
//! is deleted through the same states; a deletion under way is finished; data objects with no
//! metadata (read by key, never trusted from a listing) are deleted. docs/durability.md has the
//! crash table.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::layout::parse_file_name;
use crate::metadata::Chain;
use crate::{
    Error, FileKind, Layout, LogSegmentData, MetadataStore, Part, RemoteLogSegmentMetadata,
    RemoteLogSegmentState, RemoteStorageManager, Result, Uuid,
};

/// A sealed local segment to copy, with what its metadata records.
#[derive(Debug, Clone)]
pub struct SegmentToCopy {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The next segment's base offset (the copy's end offset is this minus one).
    pub next_base_offset: i64,
    /// The largest timestamp in the segment.
    pub max_timestamp_ms: i64,
    /// The `.log` size in bytes.
    pub size_in_bytes: u64,
    /// The leader epochs that start within the segment (the first one at or before its base).
    pub segment_leader_epochs: Vec<(i32, i64)>,
    /// The parts.
    pub data: LogSegmentData,
}

impl SegmentToCopy {
    /// The copy of what `seglog::Log::tier_candidates` handed out: the local files as
    /// parts, the producer snapshot's bytes, the epochs.
    pub fn from_files(files: &seglog::remote::SealedSegmentFiles) -> SegmentToCopy {
        SegmentToCopy {
            base_offset: files.base_offset,
            next_base_offset: files.next_base_offset,
            max_timestamp_ms: files.max_timestamp_ms,
            size_in_bytes: files.size,
            segment_leader_epochs: files.segment_leader_epochs.clone(),
            data: LogSegmentData {
                log: Part::File(files.log.clone()),
                offset_index: Part::File(files.offset_index.clone()),
                time_index: Part::File(files.time_index.clone()),
                txn_index: files.txn_index.clone().map(Part::File),
                producer_snapshot: Part::Bytes(bytes::Bytes::from(files.producer_snapshot.clone())),
                leader_epochs: files.leader_epochs.clone(),
            },
        }
    }
}

/// What a recovery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Abandoned copies (COPY_SEGMENT_STARTED) deleted.
    pub abandoned_copies: usize,
    /// Deletions that were under way and are now finished.
    pub finished_deletes: usize,
    /// Segments whose data objects had no live metadata, deleted.
    pub orphans: usize,
}

/// The remote tier of one partition: metadata and data, and the protocols over both.
#[derive(Debug, Clone)]
pub struct PartitionTier {
    store: Arc<dyn ObjectStore>,
    rsm: RemoteStorageManager,
    metadata: MetadataStore,
    broker_id: i32,
}

impl PartitionTier {
    /// The tier of `layout`'s partition in `store`; `broker_id` goes into every record.
    pub fn new(store: Arc<dyn ObjectStore>, layout: Layout, broker_id: i32) -> PartitionTier {
        PartitionTier {
            rsm: RemoteStorageManager::new(store.clone(), layout.clone()),
            metadata: MetadataStore::new(store.clone(), layout),
            store,
            broker_id,
        }
    }

    /// Uploads larger than `part_size` bytes go up in parts.
    pub fn with_part_size(mut self, part_size: usize) -> PartitionTier {
        self.rsm = self.rsm.with_part_size(part_size);
        self
    }

    /// The storage manager (reads).
    pub fn rsm(&self) -> &RemoteStorageManager {
        &self.rsm
    }

    /// The metadata store.
    pub fn metadata(&self) -> &MetadataStore {
        &self.metadata
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        self.rsm.layout()
    }

    /// The store underneath.
    pub(crate) fn store(&self) -> &std::sync::Arc<dyn ObjectStore> {
        &self.store
    }

    /// The broker id written into every record.
    pub(crate) fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// Copies one segment: COPY_SEGMENT_STARTED, the parts, COPY_SEGMENT_FINISHED. Returns the
    /// finished metadata; only then is the copy counted. A failed upload deletes what it
    /// uploaded through the delete states (as Kafka's `RemoteLogManager`); if that clean-up
    /// fails too, the next [`PartitionTier::recover`] does it.
    ///
    /// # Errors
    /// Any step's error; [`Error::Conflict`] when another writer abandoned this copy first.
    pub async fn copy_segment(&self, segment: &SegmentToCopy) -> Result<RemoteLogSegmentMetadata> {
        let started = RemoteLogSegmentMetadata {
            segment_id: Uuid::random(),
            start_offset: segment.base_offset,
            end_offset: segment.next_base_offset - 1,
            max_timestamp_ms: segment.max_timestamp_ms,
            segment_size_in_bytes: segment.size_in_bytes,
            segment_leader_epochs: segment.segment_leader_epochs.clone(),
            txn_index_empty: segment.data.txn_index.is_none(),
            broker_id: self.broker_id,
            event_timestamp_ms: now_ms(),
            state: RemoteLogSegmentState::CopySegmentStarted,
        };
        if segment.next_base_offset <= segment.base_offset {
            return Err(Error::InvalidArgument {
                key: self
                    .layout()
                    .data_key(
                        started.start_offset,
                        started.segment_id,
                        crate::FileKind::Segment,
                    )
                    .to_string(),
                reason: format!(
                    "next base offset {} is not above the base offset {}",
                    segment.next_base_offset, segment.base_offset
                ),
            });
        }
        tracing::debug!(base_offset = started.start_offset, segment_id = %started.segment_id, "remote copy started");
        self.metadata.add(&started).await?;
        if let Err(e) = self
            .rsm
            .copy_log_segment_data(&started, &segment.data)
            .await
        {
            tracing::info!(base_offset = started.start_offset, segment_id = %started.segment_id, reason = %e, "remote copy failed, cleaning it up");
            let chain = Chain {
                latest: Some(started.clone()),
                top_slot: 0,
                start_offset: started.start_offset,
                segment_id: started.segment_id,
            };
            if let Err(cleanup) = self.finish_delete(chain).await {
                tracing::info!(segment_id = %started.segment_id, reason = %cleanup, "clean-up failed, the next recovery retries it");
            }
            return Err(e);
        }
        let finished = RemoteLogSegmentMetadata {
            state: RemoteLogSegmentState::CopySegmentFinished,
            event_timestamp_ms: now_ms(),
            ..started
        };
        self.metadata
            .update(0, RemoteLogSegmentState::CopySegmentStarted, &finished)
            .await?;
        tracing::debug!(base_offset = finished.start_offset, segment_id = %finished.segment_id, bytes = finished.segment_size_in_bytes, "remote copy finished");
        Ok(finished)
    }

    /// Deletes a finished remote segment (remote retention): DELETE_SEGMENT_STARTED, the parts,
    /// DELETE_SEGMENT_FINISHED, the records.
    ///
    /// # Errors
    /// Any step's error (the next [`PartitionTier::recover`] finishes it);
    /// [`Error::InvalidTransition`] when the segment is not finished.
    pub async fn delete_segment(&self, segment: &RemoteLogSegmentMetadata) -> Result<()> {
        let chain = self
            .metadata
            .read_chain(segment.start_offset, segment.segment_id)
            .await?
            .ok_or_else(|| Error::InvalidTransition {
                key: self
                    .layout()
                    .metadata_segment_prefix(segment.start_offset, segment.segment_id)
                    .to_string(),
                from: None,
                to: RemoteLogSegmentState::DeleteSegmentStarted,
            })?;
        self.finish_delete(chain).await
    }

    /// `listRemoteLogSegments` for reads: the COPY_SEGMENT_FINISHED segments, ascending by start
    /// offset. Of segments that overlap (a copy repeated after its first COPY_SEGMENT_FINISHED
    /// response was lost), the first by start offset is kept; the others are redundant
    /// ([`PartitionTier::redundant_segments`]).
    ///
    /// # Errors
    /// [`Error::Store`] or [`Error::Corrupt`] from the metadata.
    pub async fn segments(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        Ok(self.split_finished().await?.0)
    }

    /// Finished segments wholly covered by earlier ones (to be deleted by the expirer).
    ///
    /// # Errors
    /// As [`PartitionTier::segments`].
    pub async fn redundant_segments(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        Ok(self.split_finished().await?.1)
    }

    pub(crate) async fn split_finished(
        &self,
    ) -> Result<(Vec<RemoteLogSegmentMetadata>, Vec<RemoteLogSegmentMetadata>)> {
        let mut finished: Vec<_> = self
            .metadata
            .list()
            .await?
            .into_iter()
            .filter_map(|chain| chain.latest)
            .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
            .collect();
        finished.sort_by_key(|m| (m.start_offset, m.event_timestamp_ms, m.segment_id));
        let (mut kept, mut redundant) = (Vec::<RemoteLogSegmentMetadata>::new(), Vec::new());
        for segment in finished {
            match kept.last() {
                Some(last) if segment.start_offset <= last.end_offset => redundant.push(segment),
                _ => kept.push(segment),
            }
        }
        Ok((kept, redundant))
    }

    /// Makes the store consistent after a crash: abandoned copies and interrupted deletions
    /// go through the delete states to the end, and data objects without live metadata are
    /// deleted. Run it before the first copy of a run; it must not run beside a copy of the
    /// same partition (one copier per partition).
    ///
    /// A complete fileset (every part but the optional `.txnindex`, checked by key) without
    /// any metadata record is not an orphan: seglog's copy writes `COPY_SEGMENT_STARTED` before
    /// the first part and its delete removes the parts before the records, so such a fileset is
    /// another writer's, a Kafka broker's `LocalTieredStorage` copy not yet adopted
    /// ([`PartitionTier::adopt`]). Recovery then deletes no orphan and fails with
    /// [`Error::NotAdopted`] (the seglog chains it already finished stay finished).
    ///
    /// # Errors
    /// [`Error::NotAdopted`] (above); the first failing step's error (a later run resumes;
    /// nothing intact is deleted).
    pub async fn recover(&self) -> Result<RecoveryReport> {
        let mut report = RecoveryReport::default();
        let mut live = BTreeSet::new();
        for chain in self.metadata.list().await? {
            match chain.latest.as_ref().map(|m| m.state) {
                Some(RemoteLogSegmentState::CopySegmentFinished) => {
                    live.insert((chain.start_offset, chain.segment_id));
                }
                Some(RemoteLogSegmentState::CopySegmentStarted) => {
                    tracing::info!(base_offset = chain.start_offset, segment_id = %chain.segment_id, "deleting an abandoned remote copy");
                    self.finish_delete(chain).await?;
                    report.abandoned_copies += 1;
                }
                _ => {
                    self.finish_delete(chain).await?;
                    report.finished_deletes += 1;
                }
            }
        }
        // Orphans: data whose segment has no metadata (or only a finished deletion). A listing
        // may be partial, so each candidate is checked by key before anything is deleted.
        let prefix = self.layout().data_prefix();
        let listed: Vec<_> = self
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| Error::store("list", &prefix, e))?;
        let mut candidates = BTreeSet::new();
        for object in listed {
            let Some(name) = object.location.filename() else {
                continue;
            };
            // A name Kafka's layout does not have is not ours: left alone.
            if let Ok(name) = parse_file_name(name)
                && !live.contains(&(name.start_offset, name.id))
            {
                candidates.insert((name.start_offset, name.id));
            }
        }
        // Every candidate is classified before anything is deleted: a complete fileset without
        // any metadata is another writer's (a Kafka broker's `LocalTieredStorage` copy), never
        // an orphan of seglog's protocol, and refuses the whole recovery.
        let mut orphans = Vec::new();
        let mut unadopted = Vec::new();
        for (start_offset, id) in candidates {
            match self.metadata.read_chain(start_offset, id).await? {
                None if self.fileset_complete(start_offset, id).await? => {
                    unadopted.push((start_offset, id));
                }
                None => orphans.push((start_offset, id, None)),
                Some(chain)
                    if chain.latest.as_ref().map(|m| m.state)
                        == Some(RemoteLogSegmentState::CopySegmentFinished) => {}
                Some(chain) => orphans.push((start_offset, id, Some(chain))),
            }
        }
        if let Some(&(start_offset, id)) = unadopted.first() {
            return Err(Error::NotAdopted {
                key: self
                    .layout()
                    .data_key(start_offset, id, FileKind::Segment)
                    .to_string(),
                filesets: unadopted.len(),
            });
        }
        for (start_offset, id, chain) in orphans {
            match chain {
                None => {
                    tracing::info!(base_offset = start_offset, segment_id = %id, "deleting orphan remote objects");
                    self.rsm.delete_parts(start_offset, id).await?;
                }
                Some(chain) => self.finish_delete(chain).await?,
            }
            report.orphans += 1;
        }
        Ok(report)
    }

    /// Whether every part a copy uploads (all but the optional `.txnindex`) is in the store,
    /// asked by key (a partial listing must not make a complete fileset look incomplete).
    async fn fileset_complete(&self, start_offset: i64, id: Uuid) -> Result<bool> {
        for kind in FileKind::ALL {
            if kind == FileKind::TransactionIndex {
                continue;
            }
            let key = self.layout().data_key(start_offset, id, kind);
            match self.store.head(&key).await {
                Ok(_) => {}
                Err(object_store::Error::NotFound { .. }) => return Ok(false),
                Err(e) => return Err(Error::store("head", &key, e)),
            }
        }
        Ok(true)
    }

    /// Moves a segment from wherever its chain is to the end of the delete protocol.
    async fn finish_delete(&self, chain: Chain) -> Result<()> {
        let Some(mut latest) = chain.latest else {
            // A purge under way: the data went before DELETE_SEGMENT_FINISHED was written.
            self.rsm
                .delete_parts(chain.start_offset, chain.segment_id)
                .await?;
            return self
                .metadata
                .purge(chain.start_offset, chain.segment_id)
                .await;
        };
        let mut slot = chain.top_slot;
        if matches!(
            latest.state,
            RemoteLogSegmentState::CopySegmentStarted | RemoteLogSegmentState::CopySegmentFinished
        ) {
            let next = RemoteLogSegmentMetadata {
                state: RemoteLogSegmentState::DeleteSegmentStarted,
                event_timestamp_ms: now_ms(),
                broker_id: self.broker_id,
                ..latest.clone()
            };
            slot = self.metadata.update(slot, latest.state, &next).await?;
            latest = next;
        }
        if latest.state == RemoteLogSegmentState::DeleteSegmentStarted {
            self.rsm.delete_log_segment_data(&latest).await?;
            let next = RemoteLogSegmentMetadata {
                state: RemoteLogSegmentState::DeleteSegmentFinished,
                event_timestamp_ms: now_ms(),
                broker_id: self.broker_id,
                ..latest.clone()
            };
            self.metadata.update(slot, latest.state, &next).await?;
        }
        self.metadata
            .purge(latest.start_offset, latest.segment_id)
            .await
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
