//! A real log tiered through `Tier` into a `LocalFileSystem` store in Kafka's layout: copies,
//! local deletion, reads across both tiers, reopening, and remote retention.

use std::path::Path as FsPath;
use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::path::Path;
use seglog::{
    BatchBuilder, Durability, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions,
    ManualClock, TxnResult,
};
use seglog_tiered::{FileKind, Layout, ObjectTier, PartitionTier, Tier, TopicIdPartition, Uuid};

const T0: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        remote_storage_enable: true,
        local_retention_bytes: 0,
        ..LogConfig::default()
    }
}

fn open(dir: &FsPath, config: LogConfig) -> Log {
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(T0)),
        high_watermark: HighWatermarkPolicy::Manual,
        ..LogOpenOptions::default()
    };
    Log::open_with(dir, config, options).unwrap()
}

fn batch(producer: Option<(i64, i32)>, values: &[String]) -> Vec<u8> {
    let mut b = BatchBuilder::new(0);
    if let Some((pid, seq)) = producer {
        b = b.producer(pid, 0, seq).transactional(true);
    }
    for v in values {
        b.append(T0, None, Some(v.as_bytes()), &[]);
    }
    b.build().unwrap().to_vec()
}

/// Plain batches and transactions (every other one aborted), then a tail.
fn fill(log: &Log) {
    for round in 0..12 {
        for i in 0..3 {
            log.append(&batch(
                None,
                &[
                    format!("p{round}-{i}"),
                    format!("p{round}-{i}b-{}", "x".repeat(40)),
                ],
            ))
            .unwrap();
        }
        log.append(&batch(
            Some((7, round * 2)),
            &[format!("t{round}-0"), format!("t{round}-1")],
        ))
        .unwrap();
        let result = if round % 2 == 0 {
            TxnResult::Abort
        } else {
            TxnResult::Commit
        };
        log.write_txn_marker(7, 0, 0, result, None, Durability::PageCache)
            .unwrap();
    }
    for i in 0..10 {
        log.append(&batch(None, &[format!("tail-{i}")])).unwrap();
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
}

fn records(log: &Log, from: i64, isolation: Isolation) -> Vec<(i64, Vec<u8>)> {
    let mut reader = log.owned_reader(from, isolation);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        out.push((r.record.offset, r.record.value.map(|v| v.to_vec()).unwrap()));
    }
    out
}

fn layout() -> Layout {
    Layout::new(
        Path::default(),
        TopicIdPartition::new("orders", 0, Uuid::from_halves(1, 2)).unwrap(),
    )
}

/// A tier over a local directory; `.log` files above 300 bytes go up as multipart uploads.
fn local_tier(root: &FsPath) -> Tier {
    let store = Arc::new(LocalFileSystem::new_with_prefix(root).unwrap());
    let partition = PartitionTier::new(store, layout(), 1).with_part_size(300);
    Tier::new(Arc::new(
        ObjectTier::from_partition_tier(partition).unwrap(),
    ))
}

#[test]
fn a_tiered_log_reads_the_same_across_both_tiers_and_reopens_without_copying_again() {
    let dir = tempfile::tempdir().unwrap();
    let remote_root = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config());
    fill(&log);
    let before = [
        records(&log, 0, Isolation::ReadUncommitted),
        records(&log, 0, Isolation::ReadCommitted),
    ];
    let tier = local_tier(remote_root.path());
    assert_eq!(tier.attach(&log).unwrap(), Default::default());
    let candidates: Vec<_> = log
        .tier_candidates()
        .unwrap()
        .into_iter()
        .map(|f| {
            (
                f.base_offset,
                std::fs::read(&f.log).unwrap(),
                std::fs::read(&f.offset_index).unwrap(),
                f.txn_index.clone(),
            )
        })
        .collect();
    assert!(candidates.len() > 3);
    let report = tier.copy(&log).unwrap();
    assert_eq!(report.copied.len(), candidates.len());
    assert_eq!(report.highest_remote_offset, log.highest_remote_offset());
    assert_eq!(
        log.highest_remote_offset(),
        report.copied.last().unwrap().end_offset
    );
    // Kafka's layout on disk, bytes equal to the local files.
    let remote = tier.remote().finished_segments().unwrap();
    let mut with_txn = 0;
    for ((base, log_bytes, index_bytes, txn), seg) in candidates.iter().zip(&remote) {
        assert_eq!(*base, seg.start_offset);
        let file = |kind| {
            remote_root.path().join(
                layout()
                    .data_key(seg.start_offset, seg.segment_id, kind)
                    .to_string(),
            )
        };
        assert_eq!(&std::fs::read(file(FileKind::Segment)).unwrap(), log_bytes);
        assert_eq!(
            &std::fs::read(file(FileKind::OffsetIndex)).unwrap(),
            index_bytes
        );
        assert_eq!(file(FileKind::TransactionIndex).exists(), txn.is_some());
        with_txn += usize::from(txn.is_some());
        for kind in [
            FileKind::TimeIndex,
            FileKind::ProducerSnapshot,
            FileKind::LeaderEpochCheckpoint,
        ] {
            assert!(file(kind).exists(), "{kind:?}");
        }
    }
    assert!(with_txn > 0, "some copied segment has aborted transactions");
    // Nothing is offered twice.
    assert!(tier.copy(&log).unwrap().copied.is_empty());
    // Local retention may now delete what is remote; reads span both tiers.
    log.delete_old_segments().unwrap();
    let local_start = log.local_log_start_offset();
    assert!(local_start > 0 && log.log_start_offset() == 0);
    assert_eq!(records(&log, 0, Isolation::ReadUncommitted), before[0]);
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), before[1]);
    for from in [1, local_start - 1, local_start] {
        let want: Vec<_> = before[1]
            .iter()
            .filter(|(o, _)| *o >= from)
            .cloned()
            .collect();
        assert_eq!(
            records(&log, from, Isolation::ReadCommitted),
            want,
            "from {from}"
        );
    }
    // Reopened, with a new tier over the same store: the highest remote offset comes back from
    // the finished segments, so nothing is copied again.
    // Local retention rolled the active segment so it can be copied: copy it too.
    let rolled = tier.copy(&log).unwrap();
    assert!(
        rolled
            .copied
            .iter()
            .all(|c| c.base_offset > report.highest_remote_offset)
    );
    let highest = log.highest_remote_offset();
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), config());
    let again = local_tier(remote_root.path());
    again.attach(&log).unwrap();
    assert_eq!(log.highest_remote_offset(), highest);
    assert!(again.copy(&log).unwrap().copied.is_empty());
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), before[1]);
}

#[test]
fn remote_retention_deletes_the_oldest_through_the_delete_states_and_moves_the_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let remote_root = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config());
    fill(&log);
    let tier = local_tier(remote_root.path());
    tier.attach(&log).unwrap();
    tier.copy(&log).unwrap();
    log.delete_old_segments().unwrap();
    let remote = tier.remote().finished_segments().unwrap();
    let remote_bytes: u64 = remote.iter().map(|s| s.segment_size_in_bytes).sum();
    let total = remote_bytes + log.only_local_segments_size();
    // retention.bytes exactly the first segment's size below the total: only the first goes
    // (Kafka deletes a segment only when the breach covers all of it), and the log start moves
    // past it.
    log.set_config(LogConfig {
        retention_bytes: (total - remote[0].segment_size_in_bytes - 1) as i64,
        local_retention_bytes: 0,
        ..config()
    })
    .unwrap();
    let report = tier.expire(&log, T0).unwrap();
    assert_eq!(report.deleted, [remote[0].start_offset]);
    assert_eq!(report.log_start_offset, remote[0].end_offset + 1);
    assert_eq!(log.log_start_offset(), remote[0].end_offset + 1);
    let gone = remote_root.path().join(
        layout()
            .data_key(
                remote[0].start_offset,
                remote[0].segment_id,
                FileKind::Segment,
            )
            .to_string(),
    );
    assert!(!gone.exists());
    let metadata = remote_root.path().join(
        layout()
            .metadata_segment_prefix(remote[0].start_offset, remote[0].segment_id)
            .to_string(),
    );
    assert!(!metadata.join("0.json").exists(), "the records are purged");
    assert_eq!(tier.remote().finished_segments().unwrap(), remote[1..]);
    // Reads below the new log start are out of range; above it they still cross the tiers.
    let mut buf = Vec::new();
    assert!(matches!(
        log.read_into(0, 1 << 20, Isolation::LogEnd, true, &mut buf),
        Err(seglog::Error::OffsetOutOfRange { .. })
    ));
    let first = records(&log, log.log_start_offset(), Isolation::ReadUncommitted)[0].0;
    assert!(
        remote[1].start_offset <= first && first <= remote[1].end_offset,
        "{first}"
    );
    // retention.ms: every remote segment's records are older than now - retention.ms.
    log.set_config(LogConfig {
        retention_ms: 60_000,
        local_retention_ms: -2,
        ..config()
    })
    .unwrap();
    let report = tier.expire(&log, T0 + 3_600_000).unwrap();
    assert_eq!(report.deleted.len(), remote.len() - 1);
    assert!(tier.remote().finished_segments().unwrap().is_empty());
    assert_eq!(
        log.log_start_offset(),
        remote.last().unwrap().end_offset + 1
    );
    // Nothing of the remote segments is left in the store.
    let leftovers: Vec<_> = walk(remote_root.path());
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &FsPath) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Attached on reopen while every copied segment is still local too (the remote tier starts
/// at the local start), then local retention: the whole log must still start at 0 and read
/// from there, and remote retention must not take the remote segments for "below the log start".
#[test]
fn a_log_reopened_before_its_first_local_deletion_keeps_its_remote_part() {
    let dir = tempfile::tempdir().unwrap();
    let remote_root = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config());
    fill(&log);
    let before = records(&log, 0, Isolation::ReadUncommitted);
    let tier = local_tier(remote_root.path());
    tier.attach(&log).unwrap();
    let copied = tier.copy(&log).unwrap().copied.len();
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), config());
    log.set_high_watermark(log.log_end_offset()).unwrap();
    tier.attach(&log).unwrap();
    log.delete_old_segments().unwrap();
    assert!(log.local_log_start_offset() > 0);
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(records(&log, 0, Isolation::ReadUncommitted), before);
    let report = tier.expire(&log, T0).unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(tier.remote().finished_segments().unwrap().len(), copied);
}
