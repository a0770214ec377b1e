//! The store against its own promises, in one process: reopen keeps what was durable, the
//! encoding is KRaft's (term = partition leader epoch, offset = index), a truncation inside a
//! batch keeps the entries before the cut, terms that do not fit are refused.

use openraft::storage::RaftLogStorage;
use openraft::{RaftLogReader, Vote};
use seglog::{Batches, Isolation, LogConfig};
use seglog_raft::{Error, KvConfig, LOG_DIR, LogStore, TRUNCATION_FILE};

use crate::common::{append_durable, entries, entry, log_id};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

/// `(base offset, partition leader epoch, record count)` of every batch of the log.
fn batches(store: &LogStore<KvConfig>) -> Vec<(i64, i32, i32)> {
    let log = store.log();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let fetch = log
            .read_into(next, 1, Isolation::LogEnd, true, &mut buf)
            .unwrap();
        let batch = Batches::new(&buf, fetch.position).next().unwrap().unwrap();
        let h = batch.header();
        out.push((
            h.base_offset.unwrap(),
            h.partition_leader_epoch,
            h.record_count.unwrap(),
        ));
        next = h.last_offset + 1;
    }
    out
}

#[test]
fn one_batch_per_term_run_epoch_is_the_term_offset_is_the_index() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        let mut run = entries(1, 0, 3);
        run.extend(entries(2, 3, 5));
        run.extend(entries(4, 5, 6));
        append_durable(&mut store, run.clone()).await;
        assert_eq!(batches(&store), [(0, 1, 3), (3, 2, 2), (5, 4, 1)]);
        let read = store.try_get_log_entries(0..6).await.unwrap();
        assert_eq!(read, run);
        let part = store.try_get_log_entries(2..=3).await.unwrap();
        assert_eq!(part, run[2..4]);
    });
}

#[test]
fn reopen_keeps_entries_vote_committed_and_purged() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        append_durable(&mut store, entries(1, 0, 10)).await;
        store.save_vote(&Vote::new(3, 2)).await.unwrap();
        store.save_committed(Some(log_id(1, 1, 7))).await.unwrap();
        store.purge(log_id(1, 1, 4)).await.unwrap();
    });
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        assert_eq!(store.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
        assert_eq!(store.read_committed().await.unwrap(), Some(log_id(1, 1, 7)));
        let state = store.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 4)));
        assert_eq!(state.last_log_id, Some(log_id(1, 1, 9)));
        assert_eq!(store.log().log_start_offset(), 5);
        let read = store.try_get_log_entries(0..20).await.unwrap();
        assert_eq!(read, entries(1, 5, 10));
    });
}

#[test]
fn committed_none_is_saved_and_read_back_and_a_lagging_committed_is_written_at_drop() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        store.save_committed(None).await.unwrap();
    });
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        assert_eq!(store.read_committed().await.unwrap(), None);
        append_durable(&mut store, entries(1, 0, 3)).await;
        // Two commits within the checkpoint interval: the second is only in memory...
        store.save_committed(Some(log_id(1, 1, 1))).await.unwrap();
        store.save_committed(Some(log_id(1, 1, 2))).await.unwrap();
        assert_eq!(store.read_committed().await.unwrap(), Some(log_id(1, 1, 2)));
    });
    // ...and written when the store is dropped.
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        assert_eq!(store.read_committed().await.unwrap(), Some(log_id(1, 1, 2)));
    });
}

#[test]
fn a_truncation_inside_a_batch_keeps_the_entries_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        append_durable(&mut store, entries(1, 0, 3)).await;
        append_durable(&mut store, entries(1, 3, 8)).await;
        store.truncate(log_id(1, 1, 5)).await.unwrap();
        assert!(!dir.path().join(TRUNCATION_FILE).exists());
        assert_eq!(batches(&store), [(0, 1, 3), (3, 1, 2)]);
        let state = store.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(log_id(1, 1, 4)));
        // The next term goes on from the cut.
        append_durable(&mut store, entries(2, 5, 7)).await;
        let mut want = entries(1, 0, 5);
        want.extend(entries(2, 5, 7));
        assert_eq!(store.try_get_log_entries(..).await.unwrap(), want);
    });
    // And after a restart.
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        let mut want = entries(1, 0, 5);
        want.extend(entries(2, 5, 7));
        assert_eq!(store.try_get_log_entries(..).await.unwrap(), want);
    });
}

#[test]
fn a_truncation_file_left_by_a_crash_is_finished_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let kept = rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        append_durable(&mut store, entries(1, 0, 6)).await;
        // What `truncate(3)` writes before it cuts: the batch of the entries kept (0..3).
        let mut buf = Vec::new();
        store
            .log()
            .read_into(0, 1, Isolation::LogEnd, true, &mut buf)
            .unwrap();
        drop(store);
        let mut builder = seglog::BatchBuilder::new(0).partition_leader_epoch(1);
        for e in entries(1, 0, 3) {
            let value = serde_json::to_vec(&e.payload).unwrap();
            builder.append(1, Some(&1u64.to_be_bytes()), Some(&value), &[]);
        }
        builder.build().unwrap()
    });
    // The crash came after the file and before the cut.
    std::fs::write(dir.path().join(TRUNCATION_FILE), &kept).unwrap();
    rt().block_on(async {
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        assert!(!dir.path().join(TRUNCATION_FILE).exists());
        assert_eq!(
            store.try_get_log_entries(..).await.unwrap(),
            entries(1, 0, 3)
        );
        assert_eq!(
            store.get_log_state().await.unwrap().last_log_id,
            Some(log_id(1, 1, 2))
        );
    });
}

#[test]
fn a_term_that_does_not_fit_an_epoch_is_refused_and_nothing_is_written() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        let big = u64::try_from(i32::MAX).unwrap() + 1;
        let err = store
            .append_then(vec![entry(big, 0)], Box::new(|_| {}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::TermTooLarge { term, index: 0 } if term == big),
            "{err}"
        );
        assert_eq!(store.log().log_end_offset(), 0);
        // The largest term that fits is fine.
        append_durable(&mut store, vec![entry(big - 1, 0)]).await;
        assert_eq!(batches(&store), [(0, i32::MAX, 1)]);
    });
}

#[test]
fn a_hole_is_refused() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::<KvConfig>::open(dir.path()).unwrap();
        append_durable(&mut store, entries(1, 0, 2)).await;
        let err = store
            .append_then(entries(1, 3, 4), Box::new(|_| {}))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::NotContiguous {
                    expected: 2,
                    index: 3
                }
            ),
            "{err}"
        );
    });
}

#[test]
fn many_segments_purge_unlinks_whole_segments_and_leaves_a_verifiable_directory() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 2048,
            ..seglog_raft::raft_log_config()
        };
        let mut store = LogStore::<KvConfig>::open_with(dir.path(), config).unwrap();
        for i in 0..100 {
            append_durable(&mut store, vec![entry(1, i)]).await;
        }
        let before = store.log().segment_count();
        assert!(before > 3, "{before} segments");
        store.purge(log_id(1, 1, 60)).await.unwrap();
        assert!(
            store.log().segment_count() < before,
            "{before} -> {:?}",
            store.log().segments()
        );
        let names: Vec<String> = std::fs::read_dir(dir.path().join(LOG_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".deleted")), "{names:?}");
        assert_eq!(
            store.try_get_log_entries(..).await.unwrap(),
            entries(1, 61, 100)
        );
    });
}

/// Regression: a read whose start a purge overtook between the bounds check and the seglog
/// read failed with `OffsetOutOfRange` (a storage error, fatal to openraft).
#[test]
fn reads_racing_purges_return_consecutive_entries_and_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 8192,
        ..seglog_raft::raft_log_config()
    };
    let runtime = rt();
    let mut store =
        runtime.block_on(async { LogStore::<KvConfig>::open_with(dir.path(), config).unwrap() });
    runtime.block_on(async {
        for i in 0..600 {
            append_durable(&mut store, vec![entry(1, i)]).await;
        }
    });
    let mut reader = store.reader();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = std::sync::Arc::clone(&done);
    let reads = std::thread::spawn(move || {
        let rt = rt();
        let mut reads = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Acquire) {
            let got = rt.block_on(reader.try_get_log_entries(0..600)).unwrap();
            // A consecutive run of the entries written (a purge overtaking the read may end it
            // early: it never leaves a hole).
            for pair in got.windows(2) {
                assert_eq!(pair[1].log_id.index, pair[0].log_id.index + 1);
            }
            for e in &got {
                assert_eq!(*e, entry(1, e.log_id.index));
            }
            reads += 1;
        }
        reads
    });
    runtime.block_on(async {
        for upto in (0..590).step_by(3) {
            store.purge(log_id(1, 1, upto)).await.unwrap();
        }
    });
    done.store(true, std::sync::atomic::Ordering::Release);
    let reads = reads.join().unwrap();
    assert!(reads > 0);
}
