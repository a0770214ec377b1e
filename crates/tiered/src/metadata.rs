//! Remote segment metadata and its durable store (Kafka's `RemoteLogSegmentMetadata`,
//! `RemoteLogSegmentState` and the role of a `RemoteLogMetadataManager`).
//!
//! Each remote segment has a chain of create-once records, one per state it has been in:
//! slot 0 is COPY_SEGMENT_STARTED, and every state change *creates* the next slot with
//! `PutMode::Create`. Creating a slot is a compare-and-swap on the segment's version (the slot
//! number): of two writers moving the same segment (a copier writing COPY_SEGMENT_FINISHED and a
//! cleaner writing DELETE_SEGMENT_STARTED over a copy it thinks abandoned) exactly one wins,
//! and the other learns it from `AlreadyExists`. It is `PutMode::Update` with the slot as the
//! version, on every store: object_store 0.14's `LocalFileSystem` refuses `Update`, and the
//! layout Kafka's `LocalTieredStorage` reads is a local directory (docs/format.md, "Remote
//! tier", says why). The current state is the highest slot; slots are read by key (point
//! reads), so a partial listing can hide a segment but never show a wrong state for one.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::CorruptKind;
use crate::{Error, Layout, RemoteLogSegmentState, Result, Uuid};

/// `RemoteLogSegmentMetadata`: one remote segment copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteLogSegmentMetadata {
    /// The remote segment id (a new one for every copy attempt).
    pub segment_id: Uuid,
    /// The first offset (the local segment's base offset).
    pub start_offset: i64,
    /// The last offset: the next segment's base offset minus one, as Kafka's `RemoteLogManager`.
    pub end_offset: i64,
    /// The largest timestamp in the segment (`LogSegment.largestTimestamp`).
    pub max_timestamp_ms: i64,
    /// The `.log` size in bytes.
    pub segment_size_in_bytes: u64,
    /// The leader epochs that start within the segment: (epoch, start offset), ascending.
    pub segment_leader_epochs: Vec<(i32, i64)>,
    /// Whether the segment has no `.txnindex` entries (then none is uploaded).
    pub txn_index_empty: bool,
    /// The broker (or seglog instance) that wrote the record.
    pub broker_id: i32,
    /// When the record was written.
    pub event_timestamp_ms: i64,
    /// The state this record puts the segment in.
    pub state: RemoteLogSegmentState,
}

/// The JSON document of one slot (docs/format.md, "Remote tier").
#[derive(Serialize, Deserialize)]
struct Record {
    version: u16,
    topic: String,
    partition: i32,
    topic_id: String,
    segment_id: String,
    state: RemoteLogSegmentState,
    start_offset: i64,
    end_offset: i64,
    max_timestamp_ms: i64,
    segment_size_in_bytes: u64,
    segment_leader_epochs: Vec<(i32, i64)>,
    txn_index_empty: bool,
    broker_id: i32,
    event_timestamp_ms: i64,
}

/// A segment's chain as read from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The latest record (the highest slot present), or `None` while a purge is under way
    /// (slot 0 already gone: the segment's data is deleted, see [`MetadataStore::purge`]).
    pub latest: Option<RemoteLogSegmentMetadata>,
    /// The highest slot present.
    pub top_slot: u8,
    /// The start offset and id (from the key).
    pub start_offset: i64,
    /// The segment id (from the key).
    pub segment_id: Uuid,
}

/// The durable metadata store of one partition.
#[derive(Debug, Clone)]
pub struct MetadataStore {
    store: Arc<dyn ObjectStore>,
    layout: Layout,
}

impl MetadataStore {
    /// The store of `layout`'s partition in `store`.
    pub fn new(store: Arc<dyn ObjectStore>, layout: Layout) -> MetadataStore {
        MetadataStore { store, layout }
    }

    /// `addRemoteLogSegmentMetadata`: creates slot 0 (the state must be COPY_SEGMENT_STARTED).
    ///
    /// # Errors
    /// [`Error::InvalidTransition`] for another state; [`Error::Conflict`] when slot 0 exists
    /// (a reused segment id); [`Error::Store`] when the store fails.
    pub async fn add(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        if metadata.state != RemoteLogSegmentState::CopySegmentStarted {
            return Err(Error::InvalidTransition {
                key: self.segment_prefix(metadata),
                from: None,
                to: metadata.state,
            });
        }
        self.create_slot(metadata, 0).await
    }

    /// `updateRemoteLogSegmentMetadata`: moves the segment from `current` (as read, in slot
    /// `current_slot`) to `next.state` by creating slot `current_slot + 1`.
    ///
    /// # Errors
    /// [`Error::InvalidTransition`] when the protocol does not allow the change;
    /// [`Error::Conflict`] when another writer created that slot first; [`Error::Store`].
    pub async fn update(
        &self,
        current_slot: u8,
        current: RemoteLogSegmentState,
        next: &RemoteLogSegmentMetadata,
    ) -> Result<u8> {
        if !current.can_move_to(next.state) || current_slot >= 3 {
            return Err(Error::InvalidTransition {
                key: self.segment_prefix(next),
                from: Some(current),
                to: next.state,
            });
        }
        let slot = current_slot + 1;
        self.create_slot(next, slot).await?;
        // A purge deletes slot 0 first and the slots above after it: a slot created into a
        // chain another writer already finished and began to purge (so the create found the
        // slot free again) is seen here, since no one ever writes slot 0 of an id twice.
        if self
            .read_slot(next.start_offset, next.segment_id, 0)
            .await?
            .is_none()
        {
            return Err(Error::Conflict {
                key: self
                    .layout
                    .metadata_slot_key(next.start_offset, next.segment_id, slot)
                    .to_string(),
                slot,
                wanted: next.state,
                winner: RemoteLogSegmentState::DeleteSegmentFinished,
            });
        }
        Ok(slot)
    }

    /// Reads one segment's chain by key (point reads from slot 0 up; slot 0 missing means no
    /// such segment, unless higher slots exist: a purge under way).
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a record that does not decode or a chain with a bad step;
    /// [`Error::Store`].
    pub async fn read_chain(&self, start_offset: i64, segment_id: Uuid) -> Result<Option<Chain>> {
        let Some(mut latest) = self.read_slot(start_offset, segment_id, 0).await? else {
            // No slot 0: no such segment, or a purge under way (it deletes slot 0 first).
            for slot in (1..=3u8).rev() {
                if self
                    .read_slot(start_offset, segment_id, slot)
                    .await?
                    .is_some()
                {
                    return Ok(Some(Chain {
                        latest: None,
                        top_slot: slot,
                        start_offset,
                        segment_id,
                    }));
                }
            }
            return Ok(None);
        };
        if latest.state != RemoteLogSegmentState::CopySegmentStarted {
            return Err(self.bad_chain(start_offset, segment_id, 0, latest.state, None));
        }
        let mut top_slot = 0;
        for slot in 1..=3u8 {
            let Some(record) = self.read_slot(start_offset, segment_id, slot).await? else {
                break;
            };
            if !latest.state.can_move_to(record.state) {
                return Err(self.bad_chain(
                    start_offset,
                    segment_id,
                    slot,
                    record.state,
                    Some(latest.state),
                ));
            }
            latest = record;
            top_slot = slot;
        }
        Ok(Some(Chain {
            latest: Some(latest),
            top_slot,
            start_offset,
            segment_id,
        }))
    }

    /// Every segment with metadata, by listing the partition's metadata prefix, each read by
    /// key (so its state is exact even when the listing is not), ascending by start offset.
    ///
    /// # Errors
    /// As [`MetadataStore::read_chain`], and [`Error::Store`] for the listing.
    pub async fn list(&self) -> Result<Vec<Chain>> {
        let prefix = self.layout.metadata_prefix();
        let listed: Vec<_> = self
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| Error::store("list", &prefix, e))?;
        let mut segments = BTreeMap::new();
        for object in listed {
            // A name that is not a metadata record is not ours: left alone (docs/format.md).
            if let Ok((start_offset, id, _slot)) = self.layout.parse_metadata_key(&object.location)
            {
                segments.insert((start_offset, id), ());
            }
        }
        let mut chains = Vec::with_capacity(segments.len());
        for (start_offset, id) in segments.into_keys() {
            if let Some(chain) = self.read_chain(start_offset, id).await? {
                chains.push(chain);
            }
        }
        Ok(chains)
    }

    /// Deletes a finished segment's records, slot 0 first, so that a crash part way leaves a
    /// chain without slot 0, which every reader takes as "deleted, purge under way".
    ///
    /// # Errors
    /// [`Error::Store`] (a missing slot is not an error: the purge is idempotent).
    pub async fn purge(&self, start_offset: i64, segment_id: Uuid) -> Result<()> {
        for slot in 0..=3u8 {
            let key = self
                .layout
                .metadata_slot_key(start_offset, segment_id, slot);
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(Error::store("delete", &key, e)),
            }
        }
        Ok(())
    }

    async fn create_slot(&self, metadata: &RemoteLogSegmentMetadata, slot: u8) -> Result<()> {
        let key = self
            .layout
            .metadata_slot_key(metadata.start_offset, metadata.segment_id, slot);
        let body = self.encode(metadata);
        let opts = PutOptions::from(PutMode::Create);
        match self
            .store
            .put_opts(&key, PutPayload::from(body), opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                // Ours if it holds exactly what we wrote (a retried put whose first response was
                // lost); another writer's otherwise.
                match self
                    .read_slot(metadata.start_offset, metadata.segment_id, slot)
                    .await?
                {
                    Some(found) if found == *metadata => Ok(()),
                    Some(found) => Err(Error::Conflict {
                        key: key.to_string(),
                        slot,
                        wanted: metadata.state,
                        winner: found.state,
                    }),
                    None => Err(Error::Conflict {
                        key: key.to_string(),
                        slot,
                        wanted: metadata.state,
                        winner: RemoteLogSegmentState::DeleteSegmentFinished,
                    }),
                }
            }
            Err(e) => Err(Error::store("put", &key, e)),
        }
    }

    async fn read_slot(
        &self,
        start_offset: i64,
        segment_id: Uuid,
        slot: u8,
    ) -> Result<Option<RemoteLogSegmentMetadata>> {
        let key = self
            .layout
            .metadata_slot_key(start_offset, segment_id, slot);
        let body = match self.store.get(&key).await {
            Ok(result) => result
                .bytes()
                .await
                .map_err(|e| Error::store("get", &key, e))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::store("get", &key, e)),
        };
        let record = self.decode(&key, &body)?;
        if record.start_offset != start_offset || record.segment_id != segment_id {
            return Err(Error::Corrupt {
                key: key.to_string(),
                position: 0,
                kind: CorruptKind::WrongSegment {
                    expected: crate::layout::segment_stem(start_offset, segment_id),
                    found: crate::layout::segment_stem(record.start_offset, record.segment_id),
                },
            });
        }
        Ok(Some(record))
    }

    /// Encodes a record (the JSON document of the format documentation's "Remote tier").
    pub fn encode(&self, metadata: &RemoteLogSegmentMetadata) -> Bytes {
        let tp = self.layout.partition();
        let record = Record {
            version: 0,
            topic: tp.topic.clone(),
            partition: tp.partition,
            topic_id: tp.topic_id.to_string(),
            segment_id: metadata.segment_id.to_string(),
            state: metadata.state,
            start_offset: metadata.start_offset,
            end_offset: metadata.end_offset,
            max_timestamp_ms: metadata.max_timestamp_ms,
            segment_size_in_bytes: metadata.segment_size_in_bytes,
            segment_leader_epochs: metadata.segment_leader_epochs.clone(),
            txn_index_empty: metadata.txn_index_empty,
            broker_id: metadata.broker_id,
            event_timestamp_ms: metadata.event_timestamp_ms,
        };
        // Serializing plain fields into a Vec cannot fail.
        Bytes::from(serde_json::to_vec_pretty(&record).unwrap_or_default())
    }

    /// Decodes a record read from `key`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with the byte position where decoding stopped.
    pub fn decode(&self, key: &Path, body: &[u8]) -> Result<RemoteLogSegmentMetadata> {
        let corrupt = |position: u64, kind| Error::Corrupt {
            key: key.to_string(),
            position,
            kind,
        };
        let record: Record = serde_json::from_slice(body).map_err(|e| {
            corrupt(
                byte_position(body, e.line(), e.column()),
                CorruptKind::Json(e.to_string()),
            )
        })?;
        if record.version != 0 {
            return Err(corrupt(0, CorruptKind::Version(record.version)));
        }
        let tp = self.layout.partition();
        let segment_id = Uuid::parse(&record.segment_id)
            .map_err(|e| corrupt(0, CorruptKind::Json(e.to_string())))?;
        if record.topic != tp.topic
            || record.partition != tp.partition
            || record.topic_id != tp.topic_id.to_string()
        {
            return Err(corrupt(
                0,
                CorruptKind::WrongSegment {
                    expected: tp.directory_name(),
                    found: format!("{}-{}-{}", record.topic, record.partition, record.topic_id),
                },
            ));
        }
        Ok(RemoteLogSegmentMetadata {
            segment_id,
            start_offset: record.start_offset,
            end_offset: record.end_offset,
            max_timestamp_ms: record.max_timestamp_ms,
            segment_size_in_bytes: record.segment_size_in_bytes,
            segment_leader_epochs: record.segment_leader_epochs,
            txn_index_empty: record.txn_index_empty,
            broker_id: record.broker_id,
            event_timestamp_ms: record.event_timestamp_ms,
            state: record.state,
        })
    }

    fn segment_prefix(&self, metadata: &RemoteLogSegmentMetadata) -> String {
        self.layout
            .metadata_segment_prefix(metadata.start_offset, metadata.segment_id)
            .to_string()
    }

    fn bad_chain(
        &self,
        start_offset: i64,
        id: Uuid,
        slot: u8,
        state: RemoteLogSegmentState,
        previous: Option<RemoteLogSegmentState>,
    ) -> Error {
        Error::Corrupt {
            key: self
                .layout
                .metadata_slot_key(start_offset, id, slot)
                .to_string(),
            position: 0,
            kind: CorruptKind::BadChain {
                slot,
                state: state.kafka_name().to_owned(),
                previous: previous
                    .map_or("nothing", RemoteLogSegmentState::kafka_name)
                    .to_owned(),
            },
        }
    }
}

/// serde_json reports line and column (1-based); the error names a byte position.
fn byte_position(body: &[u8], line: usize, column: usize) -> u64 {
    let mut position = 0usize;
    for (i, l) in body.split(|&b| b == b'\n').enumerate() {
        if i + 1 == line {
            return (position + column.saturating_sub(1)) as u64;
        }
        position += l.len() + 1;
    }
    body.len() as u64
}
