//! Tiered storage, seglog's side: copy candidates, local retention with a remote tier
//! (KIP-405, KIP-1005), and reads across both tiers, against an in-memory [`RemoteTier`] that
//! holds real sealed segment files copied through `Log::tier_candidates`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use seglog::remote::{
    RemoteError, RemoteIndexKind, RemoteSegment, RemoteSegmentId, RemoteTier, SealedSegmentFiles,
};
use seglog::{BatchBuilder, Durability, Isolation, ListOffsets, Log, LogConfig, TxnResult};

use crate::support::*;

/// One uploaded segment: its metadata, its `.log` and its other parts.
type Uploaded = (RemoteSegment, Vec<u8>, HashMap<RemoteIndexKind, Vec<u8>>);

/// What a log read, as (offset, value) pairs.
type Read = Vec<(i64, Vec<u8>)>;

/// A remote tier in memory: the bytes of every part a copy uploads.
#[derive(Debug, Default)]
struct MemTier {
    segments: Mutex<Vec<Uploaded>>,
    log_fetches: AtomicUsize,
    index_fetches: AtomicUsize,
}

impl MemTier {
    /// Uploads one candidate (as a copier does) and returns its metadata.
    fn copy(&self, files: &SealedSegmentFiles) -> RemoteSegment {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&files.base_offset.to_be_bytes());
        let segment = RemoteSegment {
            base_offset: files.base_offset,
            end_offset: files.end_offset(),
            max_timestamp_ms: files.max_timestamp_ms,
            size_in_bytes: files.size,
            leader_epochs: files.segment_leader_epochs.clone(),
            id: RemoteSegmentId::from_bytes(id),
        };
        let mut indexes = HashMap::new();
        indexes.insert(
            RemoteIndexKind::Offset,
            std::fs::read(&files.offset_index).unwrap(),
        );
        indexes.insert(
            RemoteIndexKind::Time,
            std::fs::read(&files.time_index).unwrap(),
        );
        if let Some(txn) = &files.txn_index {
            indexes.insert(RemoteIndexKind::Transaction, std::fs::read(txn).unwrap());
        }
        indexes.insert(
            RemoteIndexKind::ProducerSnapshot,
            files.producer_snapshot.clone(),
        );
        indexes.insert(
            RemoteIndexKind::LeaderEpoch,
            files.leader_epoch_checkpoint(),
        );
        let log = std::fs::read(&files.log).unwrap();
        assert_eq!(log.len() as u64, files.size);
        self.segments
            .lock()
            .unwrap()
            .push((segment.clone(), log, indexes));
        segment
    }
}

impl RemoteTier for MemTier {
    fn segments(&self) -> Result<Vec<RemoteSegment>, RemoteError> {
        Ok(self
            .segments
            .lock()
            .unwrap()
            .iter()
            .map(|(s, _, _)| s.clone())
            .collect())
    }

    fn fetch_log(
        &self,
        segment: &RemoteSegment,
        start_position: u64,
        end_position: Option<u64>,
    ) -> Result<Vec<u8>, RemoteError> {
        self.log_fetches.fetch_add(1, Ordering::Relaxed);
        let segments = self.segments.lock().unwrap();
        let (_, log, _) = segments
            .iter()
            .find(|(s, _, _)| s.id == segment.id)
            .ok_or_else(|| RemoteError::not_found(format!("{}", segment.id)))?;
        let end = end_position.map_or(log.len(), |e| (e as usize).min(log.len()));
        Ok(log[(start_position as usize).min(end)..end].to_vec())
    }

    fn fetch_index(
        &self,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
    ) -> Result<Vec<u8>, RemoteError> {
        self.index_fetches.fetch_add(1, Ordering::Relaxed);
        let segments = self.segments.lock().unwrap();
        segments
            .iter()
            .find(|(s, _, _)| s.id == segment.id)
            .and_then(|(_, _, indexes)| indexes.get(&kind).cloned())
            .ok_or_else(|| RemoteError::not_found(format!("{} {kind:?}", segment.id)))
    }
}

fn tiered_config() -> LogConfig {
    LogConfig {
        remote_storage_enable: true,
        local_retention_bytes: 0,
        ..small_config(1024)
    }
}

/// Copies every candidate to `tier` and reports it as the copier does.
fn copy_all(log: &Log, tier: &MemTier) -> usize {
    let candidates = log.tier_candidates().unwrap();
    for files in &candidates {
        let segment = tier.copy(files);
        log.set_highest_remote_offset(segment.end_offset);
    }
    candidates.len()
}

fn records(log: &Log, from: i64, isolation: Isolation) -> Vec<(i64, Vec<u8>)> {
    let mut reader = log.owned_reader(from, isolation);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        out.push((r.record.offset, r.record.value.map(|v| v.to_vec()).unwrap()));
    }
    out
}

#[test]
fn tier_candidates_are_the_sealed_segments_below_the_lso_not_yet_copied() {
    let (_dir, _clock, log) = fresh(tiered_config());
    append_numbered(&log, 40, "r", 4);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let segments = log.segments();
    assert!(segments.len() > 3);
    let candidates = log.tier_candidates().unwrap();
    // Every sealed segment, none of the active one.
    assert_eq!(candidates.len(), segments.len() - 1);
    for (files, info) in candidates.iter().zip(&segments) {
        assert_eq!(files.base_offset, info.base_offset);
        assert_eq!(files.next_base_offset, info.next_offset);
        assert_eq!(files.size, info.size_bytes);
        assert!(files.log.exists() && files.offset_index.exists() && files.time_index.exists());
        assert!(files.txn_index.is_none());
        // The producer snapshot at the next base, in Kafka's format.
        seglog::ProducerSnapshot::decode(&files.producer_snapshot).unwrap();
    }
    // The high watermark bounds them: only segments wholly below it.
    drop(candidates);
    let (_dir2, _clock2, log2) = fresh(tiered_config());
    append_numbered(&log2, 40, "r", 4);
    let hw = log2.segments()[2].base_offset;
    log2.set_high_watermark(hw).unwrap();
    assert_eq!(log2.tier_candidates().unwrap().len(), 2);
    // Copied segments are not offered again.
    let tier = MemTier::default();
    assert_eq!(copy_all(&log2, &tier), 2);
    assert!(log2.tier_candidates().unwrap().is_empty());
    // Without remote.storage.enable, or with copies disabled, nothing is offered.
    let (_dir3, _clock3, log3) = fresh(small_config(1024));
    append_numbered(&log3, 40, "r", 4);
    log3.set_high_watermark(log3.log_end_offset()).unwrap();
    assert!(log3.tier_candidates().unwrap().is_empty());
}

#[test]
fn local_retention_deletes_only_what_the_remote_tier_holds_and_keeps_the_log_start() {
    let (_dir, _clock, log) = fresh(tiered_config());
    append_numbered(&log, 40, "r", 4);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let before = log.segments();
    // local.retention.bytes=0 selects everything, but nothing is in the remote tier yet.
    let report = log.delete_old_segments().unwrap();
    assert!(report.deleted.is_empty());
    assert_eq!(
        log.segment_count(),
        before.len() + usize::from(report.rolled)
    );
    // Copy the first two sealed segments only.
    let tier = Arc::new(MemTier::default());
    let candidates = log.tier_candidates().unwrap();
    for files in &candidates[..2] {
        let segment = tier.copy(files);
        log.set_highest_remote_offset(segment.end_offset);
    }
    // A pinned segment (a copy in progress) is not deleted, nor anything after it.
    let report = log.delete_old_segments().unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    drop(candidates);
    let report = log.delete_old_segments().unwrap();
    let deleted: Vec<i64> = report.deleted.iter().map(|d| d.base_offset).collect();
    assert_eq!(deleted, [before[0].base_offset, before[1].base_offset]);
    // KIP-1005: the local log start moved, the log start offset did not.
    assert_eq!(log.local_log_start_offset(), before[2].base_offset);
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(report.log_start_offset, before[2].base_offset);
    // The leader epochs and producer state still cover the remote part: nothing moved.
    assert_eq!(log.highest_remote_offset(), before[2].base_offset - 1);
    assert_eq!(log.only_local_segments_count(), log.segment_count());
    // Remote expiry moves the log start offset (and the local one when it passes it).
    assert_eq!(
        log.update_log_start_offset_from_remote_tier(before[1].base_offset)
            .unwrap(),
        before[1].base_offset
    );
    assert_eq!(log.local_log_start_offset(), before[2].base_offset);
    assert!(
        log.update_log_start_offset_from_remote_tier(i64::MAX)
            .is_err()
    );
}

#[test]
fn with_remote_log_copy_disable_local_retention_moves_the_log_start() {
    let (_dir, _clock, log) = fresh(LogConfig {
        remote_storage_enable: true,
        remote_log_copy_disable: true,
        retention_bytes: 0,
        ..small_config(1024)
    });
    append_numbered(&log, 40, "r", 4);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert!(log.tier_candidates().unwrap().is_empty());
    let report = log.delete_old_segments().unwrap();
    assert!(!report.deleted.is_empty());
    assert_eq!(log.log_start_offset(), log.local_log_start_offset());
}

#[test]
fn remote_configs_parse_and_validate_as_kafka_4_4() {
    let defaults = LogConfig::default();
    assert!(!defaults.remote_storage_enable && !defaults.remote_log_copy_disable);
    assert_eq!(
        (defaults.local_retention_ms, defaults.local_retention_bytes),
        (-2, -2)
    );
    assert!(!defaults.remote_log_delete_on_disable);
    let c = LogConfig::from_pairs([
        "remote.storage.enable=true",
        "local.retention.ms=1000",
        "local.retention.bytes=10",
        "retention.bytes=100",
    ])
    .unwrap();
    assert_eq!(c.local_retention_ms_effective(), 1000);
    assert_eq!(c.local_retention_bytes_effective(), 10);
    // -2: the total retention; without a remote tier local.* does not apply.
    let c = LogConfig::from_pairs(["remote.storage.enable=true", "retention.ms=5000"]).unwrap();
    assert_eq!(c.local_retention_ms_effective(), 5000);
    let c = LogConfig::from_pairs(["local.retention.ms=10"]).unwrap();
    assert_eq!(c.local_retention_ms_effective(), c.retention_ms);
    let key = |pairs: &[&str]| match LogConfig::from_pairs(pairs) {
        Err(seglog::Error::InvalidConfig { key, .. }) => key,
        other => panic!("{pairs:?}: {other:?}"),
    };
    assert_eq!(key(&["local.retention.ms=-3"]), "local.retention.ms");
    assert_eq!(key(&["local.retention.bytes=-3"]), "local.retention.bytes");
    assert_eq!(key(&["remote.storage.enable=yes"]), "remote.storage.enable");
    assert_eq!(
        key(&["remote.storage.enable=true", "cleanup.policy=compact"]),
        "cleanup.policy"
    );
    assert_eq!(
        key(&[
            "remote.storage.enable=true",
            "cleanup.policy=compact,delete"
        ]),
        "cleanup.policy"
    );
    assert_eq!(
        key(&[
            "remote.storage.enable=true",
            "retention.ms=100",
            "local.retention.ms=200"
        ]),
        "local.retention.ms"
    );
    assert_eq!(
        key(&[
            "remote.storage.enable=true",
            "retention.ms=100",
            "local.retention.ms=-1"
        ]),
        "local.retention.ms"
    );
    assert_eq!(
        key(&[
            "remote.storage.enable=true",
            "retention.bytes=100",
            "local.retention.bytes=-1"
        ]),
        "local.retention.bytes"
    );
    assert_eq!(
        key(&[
            "remote.storage.enable=true",
            "remote.log.copy.disable=true",
            "retention.ms=100",
            "local.retention.ms=50"
        ]),
        "local.retention.ms"
    );
    // Without remote storage the local settings are not checked against the totals (Kafka).
    LogConfig::from_pairs(["retention.ms=100", "local.retention.ms=200"]).unwrap();
    assert!(seglog::TOPIC_CONFIG_KEYS.contains(&"remote.log.delete.on.disable"));
}

/// A log whose first segments hold an aborted and a committed transaction, copied to a tier
/// and deleted locally; returns the log, its tier, and what it read before the deletion.
fn tiered_log_with_transactions() -> (tempfile::TempDir, Log, Arc<MemTier>, [Read; 2]) {
    let (dir, _clock, log) = fresh(tiered_config());
    let txn = |pid: i64, seq: i32| {
        let mut b = BatchBuilder::new(0)
            .producer(pid, 0, seq)
            .transactional(true);
        for i in 0..3 {
            b.append(T0, None, Some(format!("t{pid}-{seq}-{i}").as_bytes()), &[]);
        }
        b.build().unwrap().to_vec()
    };
    for round in 0..6 {
        append_numbered(&log, 3, &format!("p{round}"), 3);
        log.append(&txn(1, round * 3)).unwrap();
        log.append(&txn(2, round * 3)).unwrap();
        append_numbered(&log, 2, &format!("q{round}"), 3);
        let abort = if round % 2 == 0 {
            TxnResult::Abort
        } else {
            TxnResult::Commit
        };
        log.write_txn_marker(1, 0, 0, abort, None, Durability::PageCache)
            .unwrap();
        log.write_txn_marker(2, 0, 0, TxnResult::Commit, None, Durability::PageCache)
            .unwrap();
    }
    append_numbered(&log, 10, "tail", 3);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let before = [
        records(&log, 0, Isolation::ReadUncommitted),
        records(&log, 0, Isolation::ReadCommitted),
    ];
    assert!(before[1].len() < before[0].len(), "something was aborted");
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    assert!(copy_all(&log, &tier) > 2);
    log.delete_old_segments().unwrap();
    assert!(log.local_log_start_offset() > 0);
    assert_eq!(log.log_start_offset(), 0);
    (dir, log, tier, before)
}

#[test]
fn reads_below_the_local_start_come_from_the_tier_identically_also_read_committed() {
    let (_dir, log, tier, [uncommitted, committed]) = tiered_log_with_transactions();
    let local_start = log.local_log_start_offset();
    assert!(uncommitted.iter().any(|(o, _)| *o < local_start));
    // The whole log, across the boundary, as before the local deletion.
    assert_eq!(records(&log, 0, Isolation::ReadUncommitted), uncommitted);
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), committed);
    assert!(tier.log_fetches.load(Ordering::Relaxed) > 0);
    // From every offset: the same suffix.
    for from in 0..log.log_end_offset() {
        let want: Vec<_> = committed
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
    // The aborted transactions of a range starting in the tier reach into the local part.
    let aborted = log.aborted_transactions(0, log.log_end_offset()).unwrap();
    assert!(aborted.len() >= 3, "{aborted:?}");
    // The indexes are fetched once per segment and then cached (also a missing `.txnindex`).
    let fetched = tier.index_fetches.load(Ordering::Relaxed);
    records(&log, 0, Isolation::ReadUncommitted);
    records(&log, 0, Isolation::ReadCommitted);
    assert_eq!(tier.index_fetches.load(Ordering::Relaxed), fetched);
    // Below the log start it is still out of range.
    log.update_log_start_offset_from_remote_tier(5).unwrap();
    let mut buf = Vec::new();
    assert!(matches!(
        log.read_into(4, 1 << 20, Isolation::LogEnd, true, &mut buf),
        Err(seglog::Error::OffsetOutOfRange {
            log_start_offset: 5,
            ..
        })
    ));
    // A local read reports the whole log's start too.
    let fetch = log
        .read_into(local_start, 1 << 20, Isolation::LogEnd, true, &mut buf)
        .unwrap();
    assert_eq!(fetch.log_start_offset, 5);
}

#[test]
fn read_into_from_the_tier_honours_max_bytes_and_the_first_batch() {
    let (_dir, log, _tier, [uncommitted, _]) = tiered_log_with_transactions();
    let mut buf = Vec::new();
    let fetch = log
        .read_into(1, 1, Isolation::ReadUncommitted, true, &mut buf)
        .unwrap();
    // One whole batch holding offset 1, from the remote segment at 0.
    assert_eq!(fetch.fetch_offset.segment_base_offset, 0);
    assert_eq!(fetch.offsets.first_batch_size as usize, buf.len());
    assert!(fetch.offsets.first_batch_last_offset >= 1);
    assert_eq!(fetch.log_start_offset, 0);
    let fetch = log
        .read_into(1, 1, Isolation::ReadUncommitted, false, &mut buf)
        .unwrap();
    assert!(fetch.offsets.first_entry_incomplete && buf.len() == 1);
    assert!(!uncommitted.is_empty());
}

#[test]
fn offset_for_timestamp_spans_both_tiers() {
    let (_dir, _clock, log) = fresh(tiered_config());
    for i in 0..60 {
        log.append(&numbered(T0 + i * 10, "r", 2)).unwrap();
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let expected: Vec<_> = [0, 5, 100, 305, 590]
        .iter()
        .map(|d| {
            log.offset_for_timestamp(ListOffsets::Timestamp(T0 + d))
                .unwrap()
        })
        .collect();
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    copy_all(&log, &tier);
    log.delete_old_segments().unwrap();
    assert!(log.local_log_start_offset() > 40);
    let found: Vec<_> = [0, 5, 100, 305, 590]
        .iter()
        .map(|d| {
            log.offset_for_timestamp(ListOffsets::Timestamp(T0 + d))
                .unwrap()
        })
        .collect();
    assert_eq!(
        found
            .iter()
            .map(|f| f.map(|f| (f.offset, f.timestamp_ms)))
            .collect::<Vec<_>>(),
        expected
            .iter()
            .map(|f| f.map(|f| (f.offset, f.timestamp_ms)))
            .collect::<Vec<_>>()
    );
    let earliest = log
        .offset_for_timestamp(ListOffsets::Earliest)
        .unwrap()
        .unwrap();
    assert_eq!(earliest.offset, 0);
    // "Consume from this timestamp" in one call, from the tier: the found record's batch.
    let mut buf = Vec::new();
    let fetch = log
        .read_by_timestamp_into(T0 + 105, Isolation::ReadUncommitted, &mut buf)
        .unwrap()
        .unwrap();
    assert_eq!(fetch.found.timestamp_ms, T0 + 110);
    assert!(fetch.found.offset < log.local_log_start_offset());
    let batch = seglog::BatchRef::parse(&buf[fetch.batch.clone()], fetch.position).unwrap();
    assert!(batch.header().last_offset >= fetch.found.offset);
}

#[test]
fn a_follower_rebuilds_from_the_remote_tier_and_reads_across_it() {
    let (_dir, leader, tier, [_, committed]) = tiered_log_with_transactions();
    let local_start = leader.local_log_start_offset();
    let (_fdir, _fclock, follower) = fresh(tiered_config());
    append_numbered(&follower, 3, "stale", 2);
    follower.set_remote_tier(tier.clone()).unwrap();
    let start = follower
        .rebuild_from_remote_tier(local_start, leader.log_start_offset())
        .unwrap();
    assert_eq!(start, local_start);
    assert_eq!(follower.log_end_offset(), local_start);
    assert_eq!(follower.local_log_start_offset(), local_start);
    assert_eq!(follower.log_start_offset(), 0);
    assert_eq!(follower.highest_remote_offset(), local_start - 1);
    // The epochs below the start and the producer state of the snapshot at it.
    let epochs: Vec<_> = leader
        .leader_epochs()
        .into_iter()
        .filter(|e| e.1 < local_start)
        .collect();
    assert_eq!(follower.leader_epochs(), epochs);
    assert_eq!(follower.producer_count(), 2);
    assert_eq!(follower.producer_snapshot_offsets(), [local_start]);
    // Everything below the start reads from the tier, as on the leader.
    follower
        .set_high_watermark(follower.log_end_offset())
        .unwrap();
    let below: Vec<_> = committed
        .iter()
        .filter(|(o, _)| *o < local_start)
        .cloned()
        .collect();
    assert_eq!(records(&follower, 0, Isolation::ReadCommitted), below);
    // Without a tier, or for an offset no remote segment holds: a typed error, nothing changed.
    let (_gdir, _gclock, lone) = fresh(tiered_config());
    assert!(matches!(
        lone.rebuild_from_remote_tier(local_start, 0),
        Err(seglog::Error::Remote { .. })
    ));
    lone.set_remote_tier(tier).unwrap();
    let e = lone.rebuild_from_remote_tier(1 << 40, 0).unwrap_err();
    assert!(matches!(e, seglog::Error::Remote { ref source, .. } if source.is_not_found()));
    assert_eq!(lone.log_end_offset(), 0);
}

#[test]
fn a_roll_tells_its_subscribers_which_segment_sealed() {
    let (_dir, _clock, log) = fresh(tiered_config());
    let sealed = log.subscribe_sealed();
    append_numbered(&log, 40, "r", 4);
    let events: Vec<_> = sealed.try_iter().collect();
    let segments = log.segments();
    assert_eq!(events.len(), segments.len() - 1);
    for (event, info) in events.iter().zip(&segments) {
        assert_eq!(
            (event.base_offset, event.next_base_offset),
            (info.base_offset, info.next_offset)
        );
    }
    // The copier's loop: an event, then the candidates (here the high watermark lags).
    let tier = MemTier::default();
    assert_eq!(copy_all(&log, &tier), 0);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert_eq!(copy_all(&log, &tier), events.len());
    // A dropped receiver unsubscribes; the log keeps rolling.
    drop(sealed);
    append_numbered(&log, 10, "s", 4);
}

#[test]
fn the_zero_copy_read_serves_the_remote_tier_with_its_aborted_transactions() {
    let (dir, _clock, log) = fresh(tiered_config());
    let mut b = BatchBuilder::new(0).producer(7, 0, 0).transactional(true);
    b.append(T0, None, Some(b"aborted"), &[]);
    log.append(&b.build().unwrap()).unwrap();
    log.write_txn_marker(7, 0, 0, TxnResult::Abort, None, Durability::PageCache)
        .unwrap();
    append_numbered(&log, 40, "r", 4);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let before = read_all(&log, 0, Isolation::ReadUncommitted);
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    copy_all(&log, &tier);
    log.delete_old_segments().unwrap();
    assert!(log.local_log_start_offset() > 10);
    assert!(!dir.path().join("00000000000000000000.log").exists());
    // Every record, across the boundary, through `Log::read`'s slices.
    assert_eq!(read_all(&log, 0, Isolation::ReadUncommitted), before);
    let fetch = log
        .read(0, 1 << 20, Isolation::ReadCommitted, true)
        .unwrap();
    assert_eq!(fetch.fetch_offset.segment_base_offset, 0);
    assert_eq!(fetch.log_start_offset, 0);
    assert_eq!(
        fetch.aborted_transactions.unwrap(),
        [seglog::AbortedTransaction {
            producer_id: 7,
            first_offset: 0
        }]
    );
    // The slice sends like a local one (its position is the remote segment's).
    let mut out = Vec::new();
    fetch.slice.read_into(&mut out).unwrap();
    assert_eq!(out.len() as u64, fetch.slice.len());
}

/// A tier whose `.log` fetches fail (`Retriable`) or return garbage.
#[derive(Debug)]
struct BrokenTier {
    inner: Arc<MemTier>,
    garbage: bool,
}

impl RemoteTier for BrokenTier {
    fn segments(&self) -> Result<Vec<RemoteSegment>, RemoteError> {
        self.inner.segments()
    }

    fn fetch_log(
        &self,
        segment: &RemoteSegment,
        start_position: u64,
        end_position: Option<u64>,
    ) -> Result<Vec<u8>, RemoteError> {
        if self.garbage {
            let len = self
                .inner
                .fetch_log(segment, start_position, end_position)?
                .len();
            return Ok(vec![0xff; len]);
        }
        Err(RemoteError::with_source(
            seglog::remote::RemoteErrorKind::Retriable,
            format!("get {}.log", segment.id),
            std::io::Error::new(std::io::ErrorKind::TimedOut, "503 slow down"),
        ))
    }

    fn fetch_index(
        &self,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
    ) -> Result<Vec<u8>, RemoteError> {
        self.inner.fetch_index(segment, kind)
    }
}

#[test]
fn a_failing_or_damaged_tier_gives_typed_errors_and_local_reads_go_on() {
    let (_dir, log, tier, [uncommitted, _]) = tiered_log_with_transactions();
    let local_start = log.local_log_start_offset();
    let local: Vec<_> = uncommitted
        .iter()
        .filter(|(o, _)| *o >= local_start)
        .cloned()
        .collect();
    let mut buf = vec![1, 2, 3];
    log.set_remote_tier(Arc::new(BrokenTier {
        inner: tier.clone(),
        garbage: false,
    }))
    .unwrap();
    match log.read_into(0, 1 << 20, Isolation::ReadUncommitted, true, &mut buf) {
        Err(seglog::Error::Remote { source, .. }) => {
            assert!(source.is_retriable(), "{source}");
        }
        other => panic!("{other:?}"),
    }
    assert!(buf.is_empty());
    assert_eq!(
        records(&log, local_start, Isolation::ReadUncommitted),
        local
    );
    log.set_remote_tier(Arc::new(BrokenTier {
        inner: tier,
        garbage: true,
    }))
    .unwrap();
    match log.read(0, 1 << 20, Isolation::ReadUncommitted, true) {
        Err(seglog::Error::CorruptRemote {
            what, base_offset, ..
        }) => assert_eq!((what, base_offset), ("log", 0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_truncation_lowers_the_highest_remote_offset_so_retention_keeps_what_was_appended_again() {
    let (_dir, _clock, log) = fresh(tiered_config());
    append_numbered(&log, 40, "r", 4);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    copy_all(&log, &tier);
    let highest = log.highest_remote_offset();
    let segments = log.segments();
    // A follower truncation into the copied part: those offsets are appended again, with other
    // records; the tier's copy of them is not theirs.
    let cut = segments[2].base_offset + 1;
    log.truncate_to(cut).unwrap();
    assert_eq!(log.highest_remote_offset(), cut - 1);
    assert!(log.highest_remote_offset() < highest);
    append_numbered(&log, 40, "again", 4);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.delete_old_segments().unwrap();
    // Nothing appended after the cut was deleted locally.
    assert!(log.local_log_start_offset() <= cut);
    // A full truncation starts the whole log at its offset (Kafka's truncateFullyAndStartAt).
    log.truncate_fully_and_start_at(1000).unwrap();
    assert_eq!(
        (log.log_start_offset(), log.local_log_start_offset()),
        (1000, 1000)
    );
}

#[test]
fn turning_remote_storage_off_needs_remote_log_delete_on_disable() {
    let (_dir, _clock, log) = fresh(tiered_config());
    let off = LogConfig {
        remote_storage_enable: false,
        ..tiered_config()
    };
    match log.set_config(off.clone()) {
        Err(seglog::Error::InvalidConfig { key, .. }) => assert_eq!(key, "remote.storage.enable"),
        other => panic!("{other:?}"),
    }
    assert!(log.tier_candidates().is_ok());
    // Read-only remote data instead: allowed.
    log.set_config(LogConfig {
        remote_log_copy_disable: true,
        local_retention_bytes: -2,
        ..tiered_config()
    })
    .unwrap();
    log.set_config(LogConfig {
        remote_log_delete_on_disable: true,
        ..off
    })
    .unwrap();
    // Turning it on again is always allowed.
    log.set_config(tiered_config()).unwrap();
}

#[test]
fn the_whole_log_start_survives_a_reopen_through_the_log_start_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let tier = Arc::new(MemTier::default());
    let local_start = {
        let log = open(dir.path(), tiered_config(), &clock);
        append_numbered(&log, 40, "r", 4);
        log.set_high_watermark(log.log_end_offset()).unwrap();
        log.set_remote_tier(tier.clone()).unwrap();
        copy_all(&log, &tier);
        log.delete_old_segments().unwrap();
        log.update_log_start_offset_from_remote_tier(5).unwrap();
        log.close().unwrap();
        log.local_log_start_offset()
    };
    assert!(local_start > 5);
    let log = open(dir.path(), tiered_config(), &clock);
    // Without its tier the log starts locally.
    assert_eq!(log.log_start_offset(), local_start);
    log.set_remote_tier(tier.clone()).unwrap();
    assert_eq!(log.log_start_offset(), 5);
    assert_eq!(log.local_log_start_offset(), local_start);
    assert_eq!(log.highest_remote_offset(), local_start - 1);
    assert_eq!(records(&log, 5, Isolation::ReadUncommitted)[0].0, 5);
}

#[test]
fn a_reopened_tiered_log_without_its_tier_says_where_the_remote_part_starts() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let tier = Arc::new(MemTier::default());
    let local_start = {
        let log = open(dir.path(), tiered_config(), &clock);
        append_numbered(&log, 40, "r", 4);
        log.set_high_watermark(log.log_end_offset()).unwrap();
        log.set_remote_tier(tier.clone()).unwrap();
        copy_all(&log, &tier);
        log.delete_old_segments().unwrap();
        log.close().unwrap();
        log.local_log_start_offset()
    };
    assert!(local_start > 0);
    let log = open(dir.path(), tiered_config(), &clock);
    assert_eq!(log.unattached_remote_start(), Some(0));
    log.set_remote_tier(tier).unwrap();
    // Attached, the log itself says it.
    assert_eq!(log.unattached_remote_start(), None);
    assert_eq!(log.log_start_offset(), 0);
    drop(log);
    // A log whose start moved by plain retention (no tier) checkpoints no start below its
    // first segment: nothing claims remote data.
    let plain = tempfile::tempdir().unwrap();
    {
        let log = open(
            plain.path(),
            LogConfig {
                retention_bytes: 0,
                ..small_config(1024)
            },
            &clock,
        );
        append_numbered(&log, 40, "r", 4);
        log.set_high_watermark(log.log_end_offset()).unwrap();
        assert!(!log.delete_old_segments().unwrap().deleted.is_empty());
        log.close().unwrap();
    }
    let log = open(plain.path(), small_config(1024), &clock);
    assert!(log.log_start_offset() > 0);
    assert_eq!(log.unattached_remote_start(), None);
}

#[test]
fn a_tail_follower_from_an_old_offset_reads_through_the_tier_and_then_follows_appends() {
    let (_dir, log, _tier, [uncommitted, _]) = tiered_log_with_transactions();
    let mut reader = log.reader(0, Isolation::ReadUncommitted);
    let mut seen = Vec::new();
    let end = reader
        .poll(|_, record| {
            seen.push((record.offset(), record.value().unwrap().to_vec()));
            Ok::<_, seglog::Error>(std::ops::ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(end, seglog::PollEnd::CaughtUp);
    assert_eq!(seen, uncommitted);
    // New appends reach the same reader.
    let next = log.log_end_offset();
    log.append(&numbered(T0, "new", 2)).unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert!(reader.wait(std::time::Duration::from_secs(5)).unwrap());
    let mut more = Vec::new();
    reader
        .poll(|_, record| {
            more.push(record.offset());
            Ok::<_, seglog::Error>(std::ops::ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(more, [next, next + 1]);
}

mod model {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        /// Appends in batches, copies of a prefix of the candidates, local retention, and
        /// reads from random offsets: every record at or above the log start is read once, in
        /// order, whichever tier holds it.
        #[test]
        fn reads_from_any_offset_match_a_model_across_both_tiers(
            batches in proptest::collection::vec(1usize..6, 10..60),
            copied in 0usize..20,
            starts in proptest::collection::vec(any::<prop::sample::Index>(), 1..8),
            fetch_bytes in 1u32..4096,
        ) {
            let (_dir, _clock, log) = fresh(tiered_config());
            let mut model = Vec::new();
            for (i, count) in batches.iter().enumerate() {
                let info = log.append(&numbered(T0 + i as i64, &format!("b{i}"), *count)).unwrap();
                for j in 0..*count {
                    model.push((info.first_offset + j as i64, format!("b{i}-{j}").into_bytes()));
                }
            }
            log.set_high_watermark(log.log_end_offset()).unwrap();
            let tier = Arc::new(MemTier::default());
            log.set_remote_tier(tier.clone()).unwrap();
            for files in log.tier_candidates().unwrap().iter().take(copied) {
                let segment = tier.copy(files);
                log.set_highest_remote_offset(segment.end_offset);
            }
            log.delete_old_segments().unwrap();
            prop_assert_eq!(log.log_start_offset(), 0);
            let end = log.log_end_offset();
            for start in starts {
                let from = start.index(end as usize + 1) as i64;
                let want: Vec<_> = model.iter().filter(|(o, _)| *o >= from).cloned().collect();
                let mut reader = seglog::ReaderOptions::new(from, Isolation::ReadUncommitted)
                    .fetch_bytes(fetch_bytes)
                    .owned_reader(&log);
                let mut got = Vec::new();
                while let Some(r) = reader.next_available().unwrap().into_record() {
                    got.push((r.record.offset, r.record.value.map(|v| v.to_vec()).unwrap()));
                }
                prop_assert_eq!(got, want, "from {}", from);
            }
        }
    }
}

#[test]
fn a_remote_offset_index_pointing_outside_its_log_is_a_typed_error_not_a_silent_skip() {
    let (_dir, log, tier, _) = tiered_log_with_transactions();
    let last = {
        let mut segments = tier.segments.lock().unwrap();
        let (segment, _, indexes) = &mut segments[0];
        let index = indexes.get_mut(&RemoteIndexKind::Offset).unwrap();
        assert!(
            index.len() >= 8,
            "the first remote segment has index entries"
        );
        // Entry 0's position: far past the segment's end.
        index[4..8].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(segment.base_offset, 0);
        segment.end_offset
    };
    let mut buf = Vec::new();
    match log.read_into(last, 1 << 20, Isolation::ReadUncommitted, true, &mut buf) {
        Err(seglog::Error::CorruptRemote {
            what,
            base_offset,
            position,
            ..
        }) => assert_eq!((what, base_offset, position), ("offset index", 0, 0)),
        other => panic!("{other:?}"),
    }
}

/// The files of the log's on-disk remote index cache, by name.
fn cached_index_files(dir: &std::path::Path) -> Vec<String> {
    let cache = dir.join(seglog::remote::REMOTE_INDEX_CACHE_DIR);
    let mut names: Vec<String> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn remote_indexes_are_kept_on_disk_under_kafkas_names_and_a_reopen_fetches_none_again() {
    let (dir, log, tier, [uncommitted, committed]) = tiered_log_with_transactions();
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), committed);
    let remote = tier.segments().unwrap();
    // Kafka's RemoteIndexCache names: `<start offset>_<segment id>.index|.timeindex|.txnindex`,
    // an empty `.txnindex` for a segment without one.
    let mut want: Vec<String> = Vec::new();
    for s in &remote {
        for suffix in [".index", ".txnindex"] {
            want.push(format!("{}_{}{suffix}", s.base_offset, s.id.to_base64()));
        }
    }
    want.sort();
    let names = cached_index_files(dir.path());
    for name in &want {
        assert!(names.contains(name), "{name} not in {names:?}");
    }
    let without_txn = remote.iter().find(|s| {
        !tier
            .segments
            .lock()
            .unwrap()
            .iter()
            .any(|(u, _, idx)| u.id == s.id && idx.contains_key(&RemoteIndexKind::Transaction))
    });
    if let Some(s) = without_txn {
        let path = dir
            .path()
            .join(seglog::remote::REMOTE_INDEX_CACHE_DIR)
            .join(format!("{}_{}.txnindex", s.base_offset, s.id.to_base64()));
        assert_eq!(std::fs::metadata(path).unwrap().len(), 0);
    }
    log.close().unwrap();
    drop(log);

    // Reopened (the cache directory in the partition directory is no segment file): the
    // same records, and not one index fetched from the tier.
    let log = open(dir.path(), tiered_config(), &clock());
    assert!(
        log.load_report().stray_files.is_empty(),
        "{:?}",
        log.load_report()
    );
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.set_remote_tier(tier.clone()).unwrap();
    let fetched = tier.index_fetches.load(Ordering::Relaxed);
    assert_eq!(records(&log, 0, Isolation::ReadUncommitted), uncommitted);
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), committed);
    assert_eq!(tier.index_fetches.load(Ordering::Relaxed), fetched);
}

#[test]
fn a_crash_leftover_is_removed_and_a_damaged_cached_index_is_fetched_again_not_trusted() {
    let (dir, log, tier, [uncommitted, committed]) = tiered_log_with_transactions();
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), committed);
    log.close().unwrap();
    drop(log);
    let cache = dir.path().join(seglog::remote::REMOTE_INDEX_CACHE_DIR);
    let remote = tier.segments().unwrap();
    let name =
        |s: &RemoteSegment, suffix: &str| format!("{}_{}{suffix}", s.base_offset, s.id.to_base64());
    // A crash while writing (a `.tmp`, here of garbage under a name a read would want) and
    // while evicting (a `.deleted`).
    let (first, second) = (&remote[0], &remote[1]);
    let index = cache.join(name(first, ".index"));
    std::fs::rename(&index, cache.join(format!("{}.tmp", name(first, ".index")))).unwrap();
    std::fs::write(
        cache.join(format!("{}.deleted", name(second, ".timeindex"))),
        b"x",
    )
    .unwrap();
    // Damage: a torn `.index` (not whole entries) and one whose positions run backwards.
    let torn = cache.join(name(second, ".index"));
    let bytes = std::fs::read(&torn).unwrap();
    assert!(bytes.len() >= 16, "the segment has two index entries");
    std::fs::write(&torn, &bytes[..bytes.len() - 3]).unwrap();
    let third = &remote[2];
    let swapped = cache.join(name(third, ".index"));
    let mut b = std::fs::read(&swapped).unwrap();
    assert!(b.len() >= 16);
    let (head, tail) = b.split_at_mut(8);
    head[4..8].swap_with_slice(&mut tail[4..8]);
    std::fs::write(&swapped, &b).unwrap();
    // A transaction index of an unknown version.
    let txn = cache.join(name(third, ".txnindex"));
    std::fs::write(&txn, [0xff; 34]).unwrap();

    let log = open(dir.path(), tiered_config(), &clock());
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.set_remote_tier(tier.clone()).unwrap();
    let names = cached_index_files(dir.path());
    assert!(
        names
            .iter()
            .all(|n| !n.ends_with(".tmp") && !n.ends_with(".deleted")),
        "{names:?}"
    );
    let fetched = tier.index_fetches.load(Ordering::Relaxed);
    // The reads are right (no error reaches them) ...
    assert_eq!(records(&log, 0, Isolation::ReadUncommitted), uncommitted);
    assert_eq!(records(&log, 0, Isolation::ReadCommitted), committed);
    // ... the missing and the three damaged files were fetched again, nothing else ...
    assert_eq!(tier.index_fetches.load(Ordering::Relaxed), fetched + 4);
    // ... and are on disk again with the tier's bytes.
    let tier_index = |s: &RemoteSegment, kind| tier.fetch_index(s, kind).unwrap_or_default();
    assert_eq!(
        std::fs::read(&index).unwrap(),
        tier_index(first, RemoteIndexKind::Offset)
    );
    assert_eq!(
        std::fs::read(&torn).unwrap(),
        tier_index(second, RemoteIndexKind::Offset)
    );
    assert_eq!(
        std::fs::read(&swapped).unwrap(),
        tier_index(third, RemoteIndexKind::Offset)
    );
    assert_eq!(
        std::fs::read(&txn).unwrap(),
        tier_index(third, RemoteIndexKind::Transaction)
    );
}

#[test]
fn a_read_only_log_writes_no_remote_index_cache() {
    let (dir, log, tier, [uncommitted, _]) = tiered_log_with_transactions();
    log.close().unwrap();
    drop(log);
    std::fs::remove_dir_all(dir.path().join(seglog::remote::REMOTE_INDEX_CACHE_DIR)).ok();
    let log = Log::open_read_only(dir.path(), tiered_config()).unwrap();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    log.set_remote_tier(tier.clone()).unwrap();
    assert_eq!(records(&log, 0, Isolation::ReadUncommitted), uncommitted);
    assert!(
        !dir.path()
            .join(seglog::remote::REMOTE_INDEX_CACHE_DIR)
            .exists()
    );
}

/// A transaction whose records lie in segments that went to the remote tier and whose abort
/// marker is in the local active segment: read_committed from any offset in the tier drops
/// its records (the abort is found in the local `.txnindex`), `Log::read` lists it, and
/// records of other producers between them are all there.
#[test]
fn read_committed_drops_a_transaction_tiered_before_its_local_abort_marker() {
    let (_dir, _clock, log) = fresh(tiered_config());
    let txn = |seq: i32, value: &str| {
        let mut b = BatchBuilder::new(0).producer(7, 0, seq).transactional(true);
        b.append(T0, None, Some(value.as_bytes()), &[]);
        b.build().unwrap().to_vec()
    };
    for round in 0..8 {
        log.append(&txn(round, &format!("t7-{round}"))).unwrap();
        append_numbered(&log, 4, &format!("p{round}"), 3);
    }
    log.write_txn_marker(7, 0, 0, TxnResult::Abort, None, Durability::PageCache)
        .unwrap();
    append_numbered(&log, 1, "tail", 1);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let committed = records(&log, 0, Isolation::ReadCommitted);
    assert!(
        committed.iter().all(|(_, v)| !v.starts_with(b"t7")),
        "the aborted records are not read_committed"
    );
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    assert!(copy_all(&log, &tier) >= 3);
    log.delete_old_segments().unwrap();
    let local_start = log.local_log_start_offset();
    // The transaction's records are remote, its marker local.
    assert!(local_start > 20, "{local_start}");
    assert_eq!(log.log_start_offset(), 0);
    for from in 0..local_start {
        let want: Vec<_> = committed
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
    let fetch = log
        .read(1, 1 << 20, Isolation::ReadCommitted, true)
        .unwrap();
    assert!(!fetch.slice.is_empty());
    assert_eq!(
        fetch.aborted_transactions.unwrap(),
        [seglog::AbortedTransaction {
            producer_id: 7,
            first_offset: 0
        }]
    );
}

/// ListOffsets MAX_TIMESTAMP (-3, KIP-734) is the local log's, as Kafka 4.4's
/// `UnifiedLog.fetchOffsetByTimestamp` (it walks `logSegments()`, the local segments, only):
/// once the segment holding the largest timestamp went to the remote tier and left the disk,
/// the answer is the largest of what is local. A timestamp search still spans both tiers.
#[test]
fn max_timestamp_is_the_local_logs_as_in_kafka_while_timestamps_span_both_tiers() {
    let (_dir, _clock, log) = fresh(tiered_config());
    // The largest timestamp early on (batch 3, offsets 6 and 7), then rising ones well below.
    for i in 0..60i64 {
        let ts = if i == 3 { T0 + 1_000_000 } else { T0 + i * 10 };
        log.append(&numbered(ts, "r", 2)).unwrap();
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let max = |log: &Log| {
        log.offset_for_timestamp(ListOffsets::MaxTimestamp)
            .unwrap()
            .map(|f| (f.offset, f.timestamp_ms))
    };
    // `numbered` stamps record j of a batch `ts + j`: the batch's second record.
    assert_eq!(max(&log), Some((7, T0 + 1_000_001)));
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    copy_all(&log, &tier);
    log.delete_old_segments().unwrap();
    let local_start = log.local_log_start_offset();
    assert!(local_start > 7);
    // The local log's largest: the last record.
    assert_eq!(max(&log), Some((log.log_end_offset() - 1, T0 + 591)));
    // The remote record is still found by its timestamp, and the earliest record by its own.
    let found = log
        .offset_for_timestamp(ListOffsets::Timestamp(T0 + 1_000_000))
        .unwrap()
        .unwrap();
    assert_eq!((found.offset, found.timestamp_ms), (6, T0 + 1_000_000));
    let found = log
        .offset_for_timestamp(ListOffsets::Timestamp(T0 + 15))
        .unwrap()
        .unwrap();
    assert_eq!((found.offset, found.timestamp_ms), (4, T0 + 20));
}

/// Kafka 4.4's ListOffsets specs of tiered storage (`UnifiedLog.fetchOffsetByTimestamp`):
/// -4 the local log start, -5 the highest offset in remote storage, -6 one past it, each with
/// the epoch that holds it; before any copy -5 answers -1 and -6 the log start; without
/// `remote.storage.enable` -4 is the log start and -5/-6 answer offset -1, epoch -1.
#[test]
fn list_offsets_earliest_local_latest_tiered_and_earliest_pending_upload() {
    let spec = |log: &Log, spec| {
        log.offset_for_timestamp(spec)
            .unwrap()
            .map(|f| (f.offset, f.leader_epoch))
    };
    let (_dir, _clock, log) = fresh(tiered_config());
    log.assign_epoch_start_offset(3, 0).unwrap();
    for i in 0..60i64 {
        log.append(&numbered(T0 + i * 10, "r", 2)).unwrap();
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
    assert_eq!(spec(&log, ListOffsets::EarliestLocal), Some((0, Some(3))));
    assert_eq!(spec(&log, ListOffsets::LatestTiered), Some((-1, Some(-1))));
    assert_eq!(
        spec(&log, ListOffsets::EarliestPendingUpload),
        Some((0, Some(3)))
    );
    let tier = Arc::new(MemTier::default());
    log.set_remote_tier(tier.clone()).unwrap();
    copy_all(&log, &tier);
    log.delete_old_segments().unwrap();
    let local_start = log.local_log_start_offset();
    let highest = log.highest_remote_offset();
    assert!(
        local_start > 0 && highest >= local_start - 1,
        "{local_start} {highest}"
    );
    assert_eq!(
        spec(&log, ListOffsets::EarliestLocal),
        Some((local_start, Some(3)))
    );
    assert_eq!(spec(&log, ListOffsets::Earliest), Some((0, Some(3))));
    assert_eq!(
        spec(&log, ListOffsets::LatestTiered),
        Some((highest, Some(3)))
    );
    assert_eq!(
        spec(&log, ListOffsets::EarliestPendingUpload),
        Some((highest + 1, Some(3)))
    );

    let (_dir, _clock, plain) = fresh(small_config(1024));
    plain.append(&numbered(T0, "r", 2)).unwrap();
    assert_eq!(
        spec(&plain, ListOffsets::EarliestLocal),
        spec(&plain, ListOffsets::Earliest)
    );
    assert_eq!(
        spec(&plain, ListOffsets::LatestTiered),
        Some((-1, Some(-1)))
    );
    assert_eq!(
        spec(&plain, ListOffsets::EarliestPendingUpload),
        Some((-1, Some(-1)))
    );
}
