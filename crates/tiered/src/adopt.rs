//! Adopting segments another writer put in the store in Kafka's `LocalTieredStorage` layout (a
//! Kafka broker with `remote.log.storage.manager.class.name=...LocalTieredStorage`): the files
//! are listed, each fileset is read and checked, and seglog's metadata records are written for
//! it (COPY_SEGMENT_STARTED, then COPY_SEGMENT_FINISHED), so seglog reads those segments as its
//! own.
//!
//! Kafka keeps the metadata of its remote segments in the `__remote_log_metadata` topic, not in
//! the store; what seglog needs of it is recovered from the files themselves: the start offset and
//! the segment id from the name, the end offset, the largest timestamp and the leader epochs from
//! the `.log`'s batches, the size from the `.log`. docs/format.md ("Adopting a Kafka broker's
//! remote tier") says where that differs from the broker's record.
//!
//! Nothing is deleted or rewritten: a complete fileset whose `.log` does not parse (checksums
//! included) is an error naming the object and byte, and nothing is adopted then. An incomplete
//! fileset (a part other than the `.txnindex` missing) is no finished copy of Kafka's: its
//! `LocalTieredStorage` writes every part before the broker records COPY_SEGMENT_FINISHED, and
//! deletes them all after DELETE_SEGMENT_STARTED, so it is a copy the broker abandoned or a
//! deletion it did not finish, whose data its log still held or had expired. It is reported
//! ([`AdoptReport::incomplete`]) and left without metadata; the next recovery deletes it as the
//! orphan it is, as Kafka's `RemoteLogManager` deletes its own abandoned copies.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::TryStreamExt;
use object_store::ObjectStoreExt;
use seglog::Batches;

use crate::layout::parse_file_name;
use crate::{
    Error, FileKind, PartitionTier, RemoteLogSegmentMetadata, RemoteLogSegmentState, Result, Uuid,
};

/// One segment [`PartitionTier::adopt`] adopted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AdoptedSegment {
    /// The segment's base offset (from its name).
    pub base_offset: i64,
    /// Its last offset (the last batch's last offset).
    pub end_offset: i64,
    /// Bytes of its `.log`.
    pub size_in_bytes: u64,
    /// The remote segment id (Kafka's Uuid text, from its name).
    pub segment_id: String,
}

/// What [`PartitionTier::adopt`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AdoptReport {
    /// The segments adopted by this call, by base offset.
    pub adopted: Vec<AdoptedSegment>,
    /// Filesets that already had seglog metadata (adopted or copied before): left as they are.
    pub already_known: usize,
    /// Filesets without metadata lacking a part every copy uploads: not adopted (no finished
    /// copy of Kafka's is incomplete), left for the next recovery to delete as orphans.
    pub incomplete: Vec<IncompleteFileset>,
}

/// A fileset [`PartitionTier::adopt`] did not adopt because a part is missing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IncompleteFileset {
    /// Its start offset (from its names).
    pub base_offset: i64,
    /// Its remote segment id (Kafka's Uuid text).
    pub segment_id: String,
    /// The `.log` part's key (present or not), naming the fileset.
    pub key: String,
    /// The suffixes of the missing parts (`.log`, `.index`, ...).
    pub missing: Vec<&'static str>,
}

/// What is wrong with a fileset found by listing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdoptProblem {
    /// The `.log` holds no batch.
    #[error("the .log holds no batch")]
    Empty,
    /// The `.log` ends inside a batch.
    #[error("the .log ends inside a batch ({0} bytes after the last whole one)")]
    TornTail(u64),
    /// A batch does not parse or its checksum does not match.
    #[error("a batch is damaged: {0}")]
    Batch(#[source] seglog::RecordsError),
    /// A batch's offsets lie before the segment's start offset (its name).
    #[error("a batch's base offset {base_offset} is below the segment's start offset")]
    BelowStart {
        /// The batch's base offset.
        base_offset: i64,
    },
}

impl PartitionTier {
    /// Adopts every complete fileset in this partition's data directory that has no seglog
    /// metadata yet: reads its `.log` (whole, checking every batch's checksum), then writes
    /// COPY_SEGMENT_STARTED and COPY_SEGMENT_FINISHED records for it, by ascending start offset.
    /// Idempotent: a fileset that already has metadata (in any state) is counted in
    /// [`AdoptReport::already_known`] and not touched. Every new fileset is checked before the
    /// first record is written, so a damaged one adopts nothing. An incomplete one (a part other
    /// than the `.txnindex` missing) is reported in [`AdoptReport::incomplete`] and not adopted:
    /// Kafka's `LocalTieredStorage` writes every part before the broker records
    /// COPY_SEGMENT_FINISHED, so it is a copy the broker abandoned or a deletion it did not
    /// finish. The next [`PartitionTier::recover`] deletes it as an orphan.
    ///
    /// For a store a Kafka broker tiered to with `LocalTieredStorage` (`dir=` the store's root).
    /// Run it before anything that recovers the store ([`PartitionTier::recover`] deletes data
    /// without metadata as orphans).
    ///
    /// # Errors
    /// [`Error::BadName`] for a file in the partition directory that is not a segment file (as
    /// Kafka's `LocalTieredStorage.traverse`); [`Error::Adopt`] for a damaged fileset (its
    /// object key and the byte position); [`Error::Store`].
    pub async fn adopt(&self) -> Result<AdoptReport> {
        let store = self.store();
        let prefix = self.layout().data_prefix();
        let listed: Vec<_> = store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| Error::store("list", &prefix, e))?;
        let mut filesets: BTreeMap<(i64, Uuid), BTreeSet<FileKind>> = BTreeMap::new();
        for object in listed {
            let Some(name) = object.location.filename() else {
                continue;
            };
            let name = parse_file_name(name)?;
            filesets
                .entry((name.start_offset, name.id))
                .or_default()
                .insert(name.kind);
        }
        let known: BTreeSet<(i64, Uuid)> = self
            .metadata()
            .list()
            .await?
            .into_iter()
            .map(|c| (c.start_offset, c.segment_id))
            .collect();
        let mut report = AdoptReport::default();
        let mut checked = Vec::new();
        for ((start_offset, id), kinds) in filesets {
            if known.contains(&(start_offset, id)) {
                report.already_known += 1;
                continue;
            }
            let missing: Vec<&'static str> = FileKind::ALL
                .into_iter()
                .filter(|kind| !kind.is_optional() && !kinds.contains(kind))
                .map(FileKind::suffix)
                .collect();
            if !missing.is_empty() {
                let key = self.layout().data_key(start_offset, id, FileKind::Segment);
                tracing::info!(base_offset = start_offset, segment_id = %id, ?missing, "not adopting an incomplete remote fileset");
                report.incomplete.push(IncompleteFileset {
                    base_offset: start_offset,
                    segment_id: id.to_string(),
                    key: key.to_string(),
                    missing,
                });
                continue;
            }
            checked.push(self.check_fileset(start_offset, id, &kinds).await?);
        }
        for started in checked {
            self.metadata().add(&started).await?;
            let finished = RemoteLogSegmentMetadata {
                state: RemoteLogSegmentState::CopySegmentFinished,
                ..started.clone()
            };
            self.metadata()
                .update(0, RemoteLogSegmentState::CopySegmentStarted, &finished)
                .await?;
            tracing::info!(
                base_offset = started.start_offset,
                end_offset = started.end_offset,
                segment_id = %started.segment_id,
                "adopted a remote segment"
            );
            report.adopted.push(AdoptedSegment {
                base_offset: started.start_offset,
                end_offset: started.end_offset,
                size_in_bytes: started.segment_size_in_bytes,
                segment_id: started.segment_id.to_string(),
            });
        }
        Ok(report)
    }

    /// Reads and checks one complete fileset; returns its COPY_SEGMENT_STARTED record.
    async fn check_fileset(
        &self,
        start_offset: i64,
        id: Uuid,
        kinds: &BTreeSet<FileKind>,
    ) -> Result<RemoteLogSegmentMetadata> {
        let layout = self.layout();
        let log_key = layout.data_key(start_offset, id, FileKind::Segment);
        let problem = |position: u64, problem: AdoptProblem| Error::Adopt {
            key: log_key.to_string(),
            position,
            problem,
        };
        let bytes = self
            .store()
            .get(&log_key)
            .await
            .map_err(|e| Error::store("get", &log_key, e))?
            .bytes()
            .await
            .map_err(|e| Error::store("get", &log_key, e))?;
        let mut batches = Batches::new(&bytes, 0).validated();
        let mut end_offset = None;
        let mut max_timestamp_ms = -1;
        let mut epochs: Vec<(i32, i64)> = Vec::new();
        for batch in batches.by_ref() {
            let batch = batch.map_err(|e| problem(batches_position(&e), AdoptProblem::Batch(e)))?;
            let header = batch.header();
            let base = header.base_offset.unwrap_or(header.last_offset);
            if base < start_offset {
                return Err(problem(
                    batch.position(),
                    AdoptProblem::BelowStart { base_offset: base },
                ));
            }
            // Kafka's cache records an epoch where its first batch starts; the segment's first
            // entry is at the segment's start (as `RemoteSegment::leader_epochs` documents).
            let epoch = header.partition_leader_epoch;
            if epoch >= 0 && epochs.last().is_none_or(|&(last, _)| epoch > last) {
                let at = if epochs.is_empty() {
                    start_offset
                } else {
                    base
                };
                epochs.push((epoch, at));
            }
            max_timestamp_ms = max_timestamp_ms.max(header.max_timestamp_ms);
            end_offset = Some(header.last_offset);
        }
        if batches.partial_tail_bytes() > 0 {
            return Err(problem(
                batches.position(),
                AdoptProblem::TornTail(batches.partial_tail_bytes()),
            ));
        }
        let end_offset = end_offset.ok_or_else(|| problem(0, AdoptProblem::Empty))?;
        Ok(RemoteLogSegmentMetadata {
            segment_id: id,
            start_offset,
            end_offset,
            max_timestamp_ms,
            segment_size_in_bytes: bytes.len() as u64,
            segment_leader_epochs: epochs,
            txn_index_empty: !kinds.contains(&FileKind::TransactionIndex),
            broker_id: self.broker_id(),
            event_timestamp_ms: now_ms(),
            state: RemoteLogSegmentState::CopySegmentStarted,
        })
    }
}

/// The byte position a record-layer error names (0 when it names none).
fn batches_position(error: &seglog::RecordsError) -> u64 {
    error.position().unwrap_or(0)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    use seglog::BatchBuilder;

    use super::*;
    use crate::{Layout, TopicIdPartition};

    const T0: i64 = 1_700_000_000_000;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    fn layout() -> Layout {
        let tp = TopicIdPartition::new("adopt", 0, Uuid::from_halves(3, 4)).unwrap();
        Layout::new(Path::from("root"), tp)
    }

    /// A `.log` of three batches from `base`: epochs 2, 2, 5; 3 records each.
    fn log_bytes(base: i64) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, epoch) in [2, 2, 5].into_iter().enumerate() {
            let first = base + 3 * i as i64;
            let mut b = BatchBuilder::new(first).partition_leader_epoch(epoch);
            for r in 0..3 {
                b.append(T0 + first + r * 10, None, Some(b"value"), &[]);
            }
            out.extend_from_slice(&b.build().unwrap());
        }
        out
    }

    /// Puts a LocalTieredStorage fileset (the `.log` given, the other parts as placeholders).
    async fn put_fileset(store: &dyn ObjectStore, base: i64, id: Uuid, log: &[u8], txn: bool) {
        for kind in FileKind::ALL {
            if kind == FileKind::TransactionIndex && !txn {
                continue;
            }
            let body = if kind == FileKind::Segment {
                Bytes::copy_from_slice(log)
            } else {
                Bytes::from_static(b"part")
            };
            store
                .put(&layout().data_key(base, id, kind), PutPayload::from(body))
                .await
                .unwrap();
        }
    }

    #[test]
    fn adopt_takes_offsets_timestamps_and_epochs_from_the_log_and_is_idempotent() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let tier = PartitionTier::new(store.clone(), layout(), 1);
        let (a, b) = (Uuid::from_halves(1, 1), Uuid::from_halves(2, 2));
        runtime().block_on(async {
            put_fileset(store.as_ref(), 0, a, &log_bytes(0), false).await;
            put_fileset(store.as_ref(), 9, b, &log_bytes(9), true).await;
            let report = tier.adopt().await.unwrap();
            assert_eq!(
                report.adopted,
                vec![
                    AdoptedSegment {
                        base_offset: 0,
                        end_offset: 8,
                        size_in_bytes: log_bytes(0).len() as u64,
                        segment_id: a.to_string(),
                    },
                    AdoptedSegment {
                        base_offset: 9,
                        end_offset: 17,
                        size_in_bytes: log_bytes(9).len() as u64,
                        segment_id: b.to_string(),
                    },
                ]
            );
            let finished = tier.segments().await.unwrap();
            assert_eq!(finished.len(), 2);
            assert_eq!(finished[0].segment_leader_epochs, vec![(2, 0), (5, 6)]);
            assert_eq!(finished[1].segment_leader_epochs, vec![(2, 9), (5, 15)]);
            assert_eq!(finished[1].max_timestamp_ms, T0 + 15 + 20);
            assert!(finished[0].txn_index_empty && !finished[1].txn_index_empty);
            // The same data reads back through the storage manager.
            let got = tier
                .rsm()
                .fetch_log_segment(&finished[1], 0, None)
                .await
                .unwrap();
            assert_eq!(got.as_ref(), log_bytes(9).as_slice());
            // Again: nothing new, nothing touched; recovery finds no orphan to delete.
            let again = tier.adopt().await.unwrap();
            assert!(again.adopted.is_empty());
            assert_eq!(again.already_known, 2);
            assert_eq!(tier.recover().await.unwrap(), Default::default());
            assert_eq!(tier.segments().await.unwrap(), finished);
        });
    }

    /// Every object key in the store.
    async fn keys(store: &dyn ObjectStore) -> BTreeSet<String> {
        store
            .list(None)
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap()
    }

    /// Before, recovery (the start of every `seglog tier` copy and of the tiering service)
    /// deleted a broker's filesets as orphans: they have no seglog metadata.
    #[test]
    fn recovery_refuses_a_store_holding_filesets_not_yet_adopted_and_deletes_nothing() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let tier = PartitionTier::new(store.clone(), layout(), 1);
        let (a, b) = (Uuid::from_halves(1, 1), Uuid::from_halves(2, 2));
        runtime().block_on(async {
            put_fileset(store.as_ref(), 0, a, &log_bytes(0), false).await;
            put_fileset(store.as_ref(), 9, b, &log_bytes(9), true).await;
            let before = keys(store.as_ref()).await;
            match tier.recover().await {
                Err(Error::NotAdopted { key, filesets }) => {
                    assert_eq!(key, layout().data_key(0, a, FileKind::Segment).to_string());
                    assert_eq!(filesets, 2);
                }
                other => panic!("{other:?}"),
            }
            let message = tier.recover().await.unwrap_err().to_string();
            assert!(message.contains("seglog tier --adopt"), "{message}");
            assert_eq!(keys(store.as_ref()).await, before);
            // Adopted, the filesets are seglog's: recovery keeps them, and an incomplete
            // fileset without metadata is still an orphan it deletes.
            assert_eq!(tier.adopt().await.unwrap().adopted.len(), 2);
            assert_eq!(tier.recover().await.unwrap(), Default::default());
            assert!(before.is_subset(&keys(store.as_ref()).await));
            let orphan_key = layout().data_key(30, Uuid::from_halves(7, 7), FileKind::Segment);
            store
                .put(&orphan_key, PutPayload::from_static(b"x"))
                .await
                .unwrap();
            assert_eq!(tier.recover().await.unwrap().orphans, 1);
            assert!(!keys(store.as_ref()).await.contains(&orphan_key.to_string()));
            assert_eq!(tier.segments().await.unwrap().len(), 2);
        });
    }

    #[test]
    fn a_damaged_or_incomplete_fileset_is_a_typed_error_and_nothing_is_adopted() {
        let (good, bad) = (Uuid::from_halves(1, 1), Uuid::from_halves(2, 2));
        let mut flipped = log_bytes(9);
        let second_batch = log_bytes(9).len() / 3 + 70;
        flipped[second_batch] ^= 0x40;
        let mut torn = log_bytes(9);
        torn.truncate(torn.len() - 5);
        for (log, want) in [
            (flipped, "batch"),
            (torn, "torn"),
            (Vec::new(), "empty"),
            (log_bytes(0), "below"),
        ] {
            let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let tier = PartitionTier::new(store.clone(), layout(), 1);
            runtime().block_on(async {
                put_fileset(store.as_ref(), 0, good, &log_bytes(0), false).await;
                put_fileset(store.as_ref(), 9, bad, &log, false).await;
                let err = tier.adopt().await.unwrap_err();
                let Error::Adopt {
                    key,
                    position,
                    problem,
                } = &err
                else {
                    panic!("{want}: {err}");
                };
                assert_eq!(
                    *key,
                    layout().data_key(9, bad, FileKind::Segment).to_string()
                );
                match (want, problem) {
                    ("batch", AdoptProblem::Batch(_)) => {
                        assert!(*position > 0 && *position <= second_batch as u64);
                    }
                    ("torn", AdoptProblem::TornTail(_)) => assert!(*position > 0),
                    ("empty", AdoptProblem::Empty) => {}
                    ("below", AdoptProblem::BelowStart { base_offset: 0 }) => {}
                    _ => panic!("{want}: {err}"),
                }
                // Nothing adopted (not even the good one), nothing deleted.
                assert!(tier.metadata().list().await.unwrap().is_empty());
                let key = layout().data_key(9, bad, FileKind::Segment);
                assert_eq!(store.get(&key).await.unwrap().bytes().await.unwrap(), log);
            });
        }
    }

    /// Before, an incomplete fileset stopped the adoption (an error), and recovery refused the
    /// store for the complete ones: `seglog tier` could do nothing until the user deleted the
    /// incomplete fileset's objects by hand.
    #[test]
    fn an_incomplete_fileset_is_reported_not_adopted_and_the_next_recovery_deletes_it() {
        let (complete, partial) = (Uuid::from_halves(1, 1), Uuid::from_halves(2, 2));
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let tier = PartitionTier::new(store.clone(), layout(), 1);
        runtime().block_on(async {
            put_fileset(store.as_ref(), 0, complete, &log_bytes(0), false).await;
            put_fileset(store.as_ref(), 9, partial, &log_bytes(9), true).await;
            for kind in [FileKind::ProducerSnapshot, FileKind::LeaderEpochCheckpoint] {
                let key = layout().data_key(9, partial, kind);
                store.delete(&key).await.unwrap();
            }
            assert!(matches!(
                tier.recover().await,
                Err(Error::NotAdopted { filesets: 1, .. })
            ));
            let report = tier.adopt().await.unwrap();
            assert_eq!(report.adopted.len(), 1);
            assert_eq!(report.adopted[0].base_offset, 0);
            assert_eq!(
                report.incomplete,
                vec![IncompleteFileset {
                    base_offset: 9,
                    segment_id: partial.to_string(),
                    key: layout().data_key(9, partial, FileKind::Segment).to_string(),
                    missing: vec![".leader_epoch_checkpoint", ".snapshot"],
                }]
            );
            // The store is usable now: recovery deletes the incomplete fileset as an orphan
            // and keeps the adopted one.
            assert_eq!(tier.recover().await.unwrap().orphans, 1);
            let left = keys(store.as_ref()).await;
            assert!(
                left.iter().all(|k| !k.contains(&partial.to_string())),
                "{left:?}"
            );
            assert!(
                left.contains(
                    &layout()
                        .data_key(0, complete, FileKind::Segment)
                        .to_string()
                )
            );
            assert_eq!(tier.segments().await.unwrap().len(), 1);
            // Adopting again finds nothing new.
            let again = tier.adopt().await.unwrap();
            assert!(again.adopted.is_empty() && again.incomplete.is_empty());
            assert_eq!(again.already_known, 1);
        });
    }

    #[test]
    fn a_foreign_file_stops_the_adoption() {
        let id = Uuid::from_halves(1, 1);
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let tier = PartitionTier::new(store.clone(), layout(), 1);
        runtime().block_on(async {
            put_fileset(store.as_ref(), 0, id, &log_bytes(0), false).await;
            let foreign = layout().data_prefix().join("notes.txt");
            store
                .put(&foreign, PutPayload::from_static(b"x"))
                .await
                .unwrap();
            let err = tier.adopt().await.unwrap_err();
            assert!(matches!(err, Error::BadName { .. }), "{err}");
            assert!(tier.metadata().list().await.unwrap().is_empty());
        });
    }
}
