//! Remote retention against the leader-epoch lineage (Kafka 4.4's
//! `isRemoteSegmentWithinLeaderEpochs`): after an unclean leader election, copies a former
//! leader made of offsets the new lineage gave to other records are neither counted, nor
//! deleted by retention, nor allowed to get the new lineage's copies deleted as redundant;
//! they go once the epoch cache no longer reaches their epochs.

use std::collections::BTreeSet;
use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path;
use seglog::{
    BatchBuilder, HighWatermarkPolicy, Isolation, ListOffsets, Log, LogConfig, LogOpenOptions,
    ManualClock,
};
use seglog_tiered::{Layout, ObjectTier, RemoteLogSegmentMetadata, Tier, TopicIdPartition, Uuid};

const T0: i64 = 1_700_000_000_000;

fn open(dir: &std::path::Path) -> Log {
    let config = LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(T0)),
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    Log::open_with(dir, config, options).unwrap()
}

/// The value of the `i`th record appended in `epoch`.
fn value(epoch: i32, i: usize) -> String {
    format!("e{epoch}-{i}-{}", "x".repeat(60))
}

/// The timestamp of the `i`th record appended in `epoch`: epoch 0's rise by 10 ms per record,
/// epoch 1's start far above (so a former leader's epoch-0 records past the truncation have
/// timestamps the lineage's records there do not).
fn timestamp(epoch: i32, i: usize) -> i64 {
    T0 + i64::from(epoch) * 100_000 + 10 * i as i64
}

fn append(log: &Log, epoch: i32, count: usize) {
    for i in 0..count {
        let mut b = BatchBuilder::new(0).partition_leader_epoch(epoch);
        b.append(
            timestamp(epoch, i),
            None,
            Some(value(epoch, i).as_bytes()),
            &[],
        );
        log.append(&b.build().unwrap()).unwrap();
    }
}

fn tier() -> Tier {
    let layout = Layout::new(
        Path::default(),
        TopicIdPartition::new("orders", 0, Uuid::from_halves(3, 4)).unwrap(),
    );
    Tier::new(Arc::new(
        ObjectTier::new(Arc::new(InMemory::new()), layout, 1).unwrap(),
    ))
}

/// Every finished copy in the store, kept and redundant alike, by segment id.
fn finished(tier: &Tier) -> BTreeSet<(i64, i64, Uuid)> {
    let remote = tier.remote();
    let p = remote.partition_tier();
    let mut all: Vec<RemoteLogSegmentMetadata> = remote.block_on(p.segments()).unwrap();
    all.extend(remote.block_on(p.redundant_segments()).unwrap());
    all.iter()
        .map(|m| (m.start_offset, m.end_offset, m.segment_id))
        .collect()
}

/// A log whose epoch-0 segments were copied up to beyond `truncation`, then truncated there
/// (an unclean leader election: the new leader had less) and continued in epoch 1, whose
/// segments were copied too. Returns the log, the tier, the truncation offset and the old
/// copies that lie above it.
fn diverged(dir: &std::path::Path) -> (Log, Tier, i64, Vec<(i64, i64, Uuid)>) {
    let log = open(dir);
    append(&log, 0, 60);
    let tier = tier();
    tier.attach(&log).unwrap();
    let old = tier.copy(&log).unwrap().copied;
    assert!(old.len() >= 4, "{old:?}");
    let truncation = old[2].base_offset + 2;
    log.truncate_to(truncation).unwrap();
    assert_eq!(log.highest_remote_offset(), truncation - 1);
    log.assign_epoch_start_offset(1, truncation).unwrap();
    append(&log, 1, 60);
    assert_eq!(log.leader_epochs(), [(0, 0), (1, truncation)]);
    let new = tier.copy(&log).unwrap().copied;
    assert!(
        new.len() >= 3 && new[0].base_offset == old[2].base_offset,
        "{new:?}"
    );
    let stale = finished(&tier)
        .into_iter()
        .filter(|(_, end, id)| {
            *end >= truncation && old.iter().any(|o| o.segment_id == id.to_string())
        })
        .collect();
    (log, tier, truncation, stale)
}

#[test]
fn copies_outside_the_lineage_are_ignored_and_never_cost_the_new_lineage_its_copies() {
    let dir = tempfile::tempdir().unwrap();
    let (log, tier, _, stale) = diverged(dir.path());
    assert!(stale.len() >= 2, "{stale:?}");
    let before = finished(&tier);
    // No retention: nothing is deleted. Before the lineage check the new lineage's copy at the
    // same base offset as a stale one was deleted as redundant (or the stale one, whichever
    // sorted second).
    let report = tier.expire(&log, T0).unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(finished(&tier), before);
    // The stale copies are reported outside the lineage, and only they.
    let mut want: Vec<i64> = stale.iter().map(|s| s.0).collect();
    want.sort_unstable();
    let mut got = report.outside_lineage.clone();
    got.sort_unstable();
    assert_eq!(got, want, "{report:?}");
}

#[test]
fn retention_by_size_counts_only_the_copies_inside_the_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let (log, tier, _, stale) = diverged(dir.path());
    let remote = tier.remote();
    let kept = remote.block_on(remote.partition_tier().segments()).unwrap();
    let stale_ids: BTreeSet<Uuid> = stale.iter().map(|s| s.2).collect();
    let valid: Vec<_> = kept
        .iter()
        .filter(|s| !stale_ids.contains(&s.segment_id))
        .collect();
    let valid_size: u64 = valid.iter().map(|s| s.segment_size_in_bytes).sum();
    let total = valid_size + log.only_local_segments_size();
    // Exactly the first segment's bytes too many: only it goes. Counting the stale copies
    // too (as before the lineage check) breaches by more and deletes more.
    let first = valid[0];
    let config = LogConfig {
        retention_bytes: (total - first.segment_size_in_bytes) as i64,
        ..log.config()
    };
    log.set_config(config).unwrap();
    let report = tier.expire(&log, T0).unwrap();
    assert_eq!(report.deleted, [first.start_offset], "{report:?}");
    assert_eq!(report.log_start_offset, first.end_offset + 1);
    assert_eq!(log.log_start_offset(), first.end_offset + 1);
    // The stale copies are all still there.
    let after = finished(&tier);
    assert!(stale.iter().all(|s| after.contains(s)), "{after:?}");
}

#[test]
fn stale_copies_go_once_the_epoch_cache_no_longer_reaches_their_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let (log, tier, truncation, stale) = diverged(dir.path());
    // DeleteRecords past the start of epoch 1: the cache's earliest entry is epoch 1.
    log.delete_records_before(truncation + 5).unwrap();
    assert_eq!(log.leader_epochs()[0].0, 1);
    let report = tier.expire(&log, T0).unwrap();
    let after = finished(&tier);
    assert!(
        stale.iter().all(|s| !after.contains(s)),
        "{report:?} {after:?}"
    );
    // What remains is the new lineage's, from the copy holding the log start on.
    assert!(
        after
            .iter()
            .all(|(_, end, id)| !stale.iter().any(|s| s.2 == *id) && *end >= truncation + 5),
        "{after:?}"
    );
    assert!(!after.is_empty());
}

/// Every record from `from` on as `(offset, value)`.
fn records(log: &Log, from: i64, isolation: Isolation) -> Vec<(i64, String)> {
    let mut reader = log.owned_reader(from, isolation);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        let value = String::from_utf8(r.record.value.unwrap().to_vec()).unwrap();
        out.push((r.record.offset, value));
    }
    out
}

/// Kafka's `fetchRemoteLogSegmentMetadata`: the copy a read serves is the one of the epoch the
/// log's epoch cache gives the offset, never a former leader's copy of offsets the lineage
/// replaced. Before, the tier listed the first copy by start offset (the former leader's, the
/// earlier copy) and reads, read_committed and offsets for timestamps below the local log
/// start served its epoch-0 records past the truncation.
#[test]
fn reads_below_the_local_start_serve_the_lineages_copy_not_a_former_leaders() {
    let dir = tempfile::tempdir().unwrap();
    let (log, tier, truncation, stale) = diverged(dir.path());
    assert!(stale.len() >= 2, "{stale:?}");
    // Everything copied goes from the disk: reads below the local start go to the tier.
    log.set_config(LogConfig {
        local_retention_bytes: 0,
        ..log.config()
    })
    .unwrap();
    log.delete_old_segments().unwrap();
    let local_start = log.local_log_start_offset();
    let stale_end = stale.iter().map(|s| s.1).max().unwrap();
    assert!(local_start > stale_end, "{local_start} {stale:?}");
    assert_eq!(log.log_start_offset(), 0);
    let want: Vec<(i64, String)> = (0..log.log_end_offset())
        .map(|o| {
            if o < truncation {
                (o, value(0, o as usize))
            } else {
                (o, value(1, (o - truncation) as usize))
            }
        })
        .collect();
    for isolation in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
        assert_eq!(records(&log, 0, isolation), want, "{isolation:?}");
        // From inside the diverged range too.
        assert_eq!(
            records(&log, truncation + 1, isolation),
            want[truncation as usize + 1..],
            "{isolation:?}"
        );
    }
    // A timestamp only the former leader's records past the truncation reach below epoch 1's:
    // the lineage's first record at or after it is epoch 1's first.
    let target = timestamp(0, truncation as usize + 3);
    let found = log
        .offset_for_timestamp(ListOffsets::Timestamp(target))
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.offset, found.timestamp_ms, found.leader_epoch),
        (truncation, timestamp(1, 0), Some(1))
    );
    // The highest remote offset a reattached tier derives is the lineage's too.
    let highest = log.highest_remote_offset();
    tier.attach(&log).unwrap();
    assert_eq!(log.highest_remote_offset(), highest);
}
