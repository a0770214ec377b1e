//! Crash tests of the copy and delete protocols: a crash (every request from one on fails, and
//! everything in memory is dropped) at every mutating request of a copy and of a delete, in
//! both forms (the request never arrived; it took effect and its answer was lost), then a
//! fresh run (recover, then copy or delete again). Checked each time: a copy reported done is
//! durable and complete (only then may the local segment go); no segment counted finished
//! lacks a part; after the later run no orphan object is left. docs/durability.md has the table.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::faulty::{CrashMode, Fault, FaultyStore};
use crate::{
    FileKind, IndexType, Layout, LogSegmentData, Part, PartitionTier, RemoteLogSegmentMetadata,
    RemoteLogSegmentState, SegmentToCopy, TopicIdPartition, Uuid,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn layout() -> Layout {
    let tp = TopicIdPartition::new("crash", 0, Uuid::from_halves(7, 9)).unwrap();
    Layout::new(Path::from("root"), tp)
}

/// A segment whose `.log` is three multipart parts at a 1 KiB part size.
fn segment(with_txn: bool) -> SegmentToCopy {
    let log: Vec<u8> = (0..2500u32).map(|i| (i * 7 % 251) as u8).collect();
    SegmentToCopy {
        base_offset: 100,
        next_base_offset: 150,
        max_timestamp_ms: 1_700_000_000_000,
        size_in_bytes: log.len() as u64,
        segment_leader_epochs: vec![(3, 100), (4, 120)],
        data: LogSegmentData {
            log: Part::Bytes(Bytes::from(log)),
            offset_index: Part::Bytes(Bytes::from_static(&[0, 0, 0, 10, 0, 0, 1, 0])),
            time_index: Part::Bytes(Bytes::from_static(&[0; 12])),
            txn_index: with_txn.then(|| Part::Bytes(Bytes::from_static(&[1; 34]))),
            producer_snapshot: Part::Bytes(Bytes::from_static(b"snapshot bytes")),
            leader_epochs: vec![(1, 0), (3, 60), (4, 120)],
        },
    }
}

fn tier(store: Arc<dyn ObjectStore>) -> PartitionTier {
    PartitionTier::new(store, layout(), 1).with_part_size(1024)
}

fn part_bytes(part: &Part) -> Bytes {
    match part {
        Part::Bytes(b) => b.clone(),
        Part::File(path) => Bytes::from(std::fs::read(path).unwrap()),
    }
}

async fn all_objects(store: &dyn ObjectStore) -> BTreeSet<String> {
    let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
    listed.into_iter().map(|m| m.location.to_string()).collect()
}

/// Every segment counted finished has every part, with the source's bytes.
async fn finished_segments_are_complete(
    tier: &PartitionTier,
    source: &SegmentToCopy,
) -> Vec<RemoteLogSegmentMetadata> {
    let segments = tier.segments().await.unwrap();
    for seg in &segments {
        assert_eq!(seg.state, RemoteLogSegmentState::CopySegmentFinished);
        let log = tier.rsm().fetch_log_segment(seg, 0, None).await.unwrap();
        assert_eq!(
            log,
            part_bytes(&source.data.log),
            "the .log of a finished copy"
        );
        let d = &source.data;
        let expect = [
            (IndexType::Offset, part_bytes(&d.offset_index)),
            (IndexType::Timestamp, part_bytes(&d.time_index)),
            (
                IndexType::ProducerSnapshot,
                part_bytes(&d.producer_snapshot),
            ),
            (
                IndexType::LeaderEpoch,
                crate::leader_epoch_checkpoint(&d.leader_epochs),
            ),
        ];
        for (index, bytes) in expect {
            assert_eq!(
                tier.rsm().fetch_index(seg, index).await.unwrap(),
                bytes,
                "{index:?} of a finished copy"
            );
        }
        match &d.txn_index {
            Some(part) => assert_eq!(
                tier.rsm()
                    .fetch_index(seg, IndexType::Transaction)
                    .await
                    .unwrap(),
                part_bytes(part)
            ),
            None => assert!(
                tier.rsm()
                    .fetch_index(seg, IndexType::Transaction)
                    .await
                    .unwrap_err()
                    .is_not_found()
            ),
        }
    }
    segments
}

/// The objects one finished copy leaves: its parts and its two metadata slots.
fn expected_objects(seg: &RemoteLogSegmentMetadata) -> BTreeSet<String> {
    let l = layout();
    let mut out: BTreeSet<String> = crate::RemoteStorageManager::kinds(seg)
        .map(|k| l.data_key(seg.start_offset, seg.segment_id, k).to_string())
        .collect();
    for slot in 0..2 {
        out.insert(
            l.metadata_slot_key(seg.start_offset, seg.segment_id, slot)
                .to_string(),
        );
    }
    out
}

fn mutations_of_a_clean_copy(with_txn: bool) -> usize {
    let rt = runtime();
    let faulty = FaultyStore::new(Arc::new(InMemory::new()));
    rt.block_on(tier(Arc::new(faulty.clone())).copy_segment(&segment(with_txn)))
        .unwrap();
    faulty.mutations()
}

#[test]
fn a_crash_at_every_step_of_a_copy_is_harmless() {
    let rt = runtime();
    for with_txn in [false, true] {
        let steps = mutations_of_a_clean_copy(with_txn);
        // slot 0, 3 parts + create + complete of the .log, 4 or 5 small parts, slot 1.
        assert_eq!(steps, 1 + 5 + 4 + usize::from(with_txn) + 1);
        for step in 0..steps {
            for mode in [CrashMode::Before, CrashMode::LostResponse] {
                let context =
                    format!("copy, txn index {with_txn}, crash {mode:?} at request {step}");
                let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
                let faulty = FaultyStore::new(inner.clone());
                faulty.fault_at(step, Fault::Crash(mode));
                let source = segment(with_txn);
                let result = rt.block_on(tier(Arc::new(faulty.clone())).copy_segment(&source));
                assert!(faulty.crashed(), "{context}: the crash fired");
                let after = tier(inner.clone());
                let finished = rt.block_on(finished_segments_are_complete(&after, &source));
                if let Ok(done) = &result {
                    // Reported done: the local segment may be deleted now, so it must be there.
                    assert_eq!(finished.as_slice(), std::slice::from_ref(done), "{context}");
                }
                // The later run: recovery, then the copy again unless it finished.
                drop(faulty);
                rt.block_on(after.recover()).unwrap();
                let mut finished = rt.block_on(finished_segments_are_complete(&after, &source));
                if finished.is_empty() {
                    finished.push(rt.block_on(after.copy_segment(&source)).unwrap());
                }
                assert_eq!(finished.len(), 1, "{context}");
                let objects = rt.block_on(all_objects(inner.as_ref()));
                assert_eq!(
                    objects,
                    expected_objects(&finished[0]),
                    "{context}: orphans left"
                );
            }
        }
    }
}

#[test]
fn a_crash_at_every_step_of_a_delete_is_harmless() {
    let rt = runtime();
    let source = segment(true);
    let count_steps = {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let done = rt
            .block_on(tier(inner.clone()).copy_segment(&source))
            .unwrap();
        let faulty = FaultyStore::new(inner);
        rt.block_on(tier(Arc::new(faulty.clone())).delete_segment(&done))
            .unwrap();
        faulty.mutations()
    };
    // DELETE_SEGMENT_STARTED, six deletes, DELETE_SEGMENT_FINISHED, four slot deletes.
    assert_eq!(count_steps, 1 + 6 + 1 + 4);
    for step in 0..count_steps {
        for mode in [CrashMode::Before, CrashMode::LostResponse] {
            let context = format!("delete, crash {mode:?} at request {step}");
            let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let done = rt
                .block_on(tier(inner.clone()).copy_segment(&source))
                .unwrap();
            let faulty = FaultyStore::new(inner.clone());
            faulty.fault_at(step, Fault::Crash(mode));
            let result = rt.block_on(tier(Arc::new(faulty.clone())).delete_segment(&done));
            assert!(
                result.is_err() || mode == CrashMode::LostResponse,
                "{context}"
            );
            let after = tier(inner.clone());
            // Still counted (and then whole) or gone: never counted with a part missing.
            let finished = rt.block_on(finished_segments_are_complete(&after, &source));
            assert!(
                finished.is_empty() || finished == [done.clone()],
                "{context}"
            );
            drop(faulty);
            rt.block_on(after.recover()).unwrap();
            for seg in rt.block_on(finished_segments_are_complete(&after, &source)) {
                rt.block_on(after.delete_segment(&seg)).unwrap();
            }
            assert_eq!(
                rt.block_on(all_objects(inner.as_ref())),
                BTreeSet::new(),
                "{context}: orphans left"
            );
        }
    }
}

#[test]
fn a_failed_upload_cleans_up_what_it_uploaded() {
    let rt = runtime();
    let source = segment(true);
    for step in 1..mutations_of_a_clean_copy(true) - 1 {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let faulty = FaultyStore::new(inner.clone());
        faulty.fault_at(step, Fault::Fail);
        let err = rt
            .block_on(tier(Arc::new(faulty)).copy_segment(&source))
            .unwrap_err();
        assert!(matches!(err, crate::Error::Store { .. }), "{err}");
        assert_eq!(
            rt.block_on(all_objects(inner.as_ref())),
            BTreeSet::new(),
            "request {step}"
        );
    }
}

#[test]
fn lost_responses_and_delays_do_not_lose_a_copy() {
    let rt = runtime();
    let source = segment(false);
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let faulty = FaultyStore::new(inner.clone());
    faulty.delay(std::time::Duration::from_millis(1));
    // The answer to COPY_SEGMENT_FINISHED is lost: the copy reports an error (the local
    // segment stays), yet the segment is finished; the next run finds it and copies nothing.
    let last = mutations_of_a_clean_copy(false) - 1;
    faulty.fault_at(last, Fault::LoseResponse);
    let t = tier(Arc::new(faulty.clone()));
    assert!(rt.block_on(t.copy_segment(&source)).is_err());
    let finished = rt.block_on(finished_segments_are_complete(&t, &source));
    assert_eq!(finished.len(), 1);
    assert_eq!(
        rt.block_on(t.recover()).unwrap(),
        crate::RecoveryReport::default()
    );
    assert_eq!(
        rt.block_on(all_objects(inner.as_ref())),
        expected_objects(&finished[0])
    );
}

#[test]
fn partial_listings_never_delete_a_finished_segment() {
    let rt = runtime();
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let t = tier(inner.clone());
    let mut copied = Vec::new();
    for (base, next) in [(100, 150), (150, 200), (200, 260)] {
        let mut source = segment(true);
        source.base_offset = base;
        source.next_base_offset = next;
        copied.push(rt.block_on(t.copy_segment(&source)).unwrap());
    }
    // An orphan: data objects of a copy whose metadata is gone.
    let orphan = layout().data_key(300, Uuid::random(), FileKind::Segment);
    rt.block_on(inner.put(&orphan, Bytes::from_static(b"x").into()))
        .unwrap();
    let faulty = FaultyStore::new(inner.clone());
    faulty.partial_listings(true);
    let partial = tier(Arc::new(faulty.clone()));
    for _ in 0..3 {
        rt.block_on(partial.recover()).unwrap();
    }
    let full = tier(inner.clone());
    assert_eq!(
        rt.block_on(full.segments()).unwrap(),
        copied,
        "a partial listing deleted a finished segment"
    );
    faulty.partial_listings(false);
    rt.block_on(full.recover()).unwrap();
    let objects = rt.block_on(all_objects(inner.as_ref()));
    assert!(
        !objects.contains(&orphan.to_string()),
        "the orphan survived a full recovery"
    );
    let expected: BTreeSet<String> = copied.iter().flat_map(expected_objects).collect();
    assert_eq!(objects, expected);
}

#[test]
fn a_copy_abandoned_by_another_writer_is_never_counted() {
    let rt = runtime();
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let t = tier(inner.clone());
    let source = segment(false);
    // The copier's slot 0, as copy_segment writes it, then a cleaner that takes the copy for
    // abandoned moves it to DELETE_SEGMENT_STARTED first: the copier's FINISHED loses.
    let started = RemoteLogSegmentMetadata {
        segment_id: Uuid::random(),
        start_offset: 100,
        end_offset: 149,
        max_timestamp_ms: 0,
        segment_size_in_bytes: 2500,
        segment_leader_epochs: vec![],
        txn_index_empty: true,
        broker_id: 1,
        event_timestamp_ms: 0,
        state: RemoteLogSegmentState::CopySegmentStarted,
    };
    rt.block_on(t.metadata().add(&started)).unwrap();
    rt.block_on(t.rsm().copy_log_segment_data(&started, &source.data))
        .unwrap();
    let cleaner = tier(inner.clone());
    rt.block_on(cleaner.recover()).unwrap();
    let finished = RemoteLogSegmentMetadata {
        state: RemoteLogSegmentState::CopySegmentFinished,
        ..started.clone()
    };
    let err = rt
        .block_on(
            t.metadata()
                .update(0, RemoteLogSegmentState::CopySegmentStarted, &finished),
        )
        .unwrap_err();
    assert!(
        matches!(err, crate::Error::Conflict { slot: 1, .. }),
        "{err}"
    );
    assert!(rt.block_on(t.segments()).unwrap().is_empty());
    // The stray slot the loser created is a purge under way for the next recovery.
    rt.block_on(cleaner.recover()).unwrap();
    assert_eq!(rt.block_on(all_objects(inner.as_ref())), BTreeSet::new());
}

/// Kafka's `findNextSegmentWithTxnIndex` skips a segment whose metadata says `txnIdxEmpty`:
/// the read_committed walk over later remote segments (which goes on past the fetch's bound)
/// asks the store nothing for them. Shown by an object put under the `.txnindex` name the
/// metadata says is absent: it is never fetched.
#[test]
fn a_segment_without_a_txn_index_is_answered_not_found_from_its_metadata() {
    use seglog::remote::{RemoteIndexKind, RemoteTier};
    let rt = runtime();
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let without = rt
        .block_on(tier(inner.clone()).copy_segment(&segment(false)))
        .unwrap();
    let mut later = segment(true);
    later.base_offset = 150;
    later.next_base_offset = 200;
    let with = rt
        .block_on(tier(inner.clone()).copy_segment(&later))
        .unwrap();
    let planted = layout().data_key(100, without.segment_id, FileKind::TransactionIndex);
    rt.block_on(inner.put(&planted, Bytes::from_static(&[9; 34]).into()))
        .unwrap();
    let object = crate::ObjectTier::from_partition_tier(tier(inner)).unwrap();
    let listed = object.segments().unwrap();
    assert_eq!(listed.len(), 2);
    let err = object
        .fetch_index(&listed[0], RemoteIndexKind::Transaction)
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(
        object
            .fetch_index(&listed[1], RemoteIndexKind::Transaction)
            .unwrap(),
        vec![1; 34]
    );
    assert_eq!(listed[1].id.as_bytes(), &with.segment_id.0);
}
