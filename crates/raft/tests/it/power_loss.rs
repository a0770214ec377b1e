//! What a kill -9 cannot show: that a flush callback fires only once its entries are on the
//! device. The store's log runs over `seglog-faults`' seam, which keeps each `.log`'s durable
//! image (its bytes as of the last successful fsync); every callback checks that image when it
//! fires. And an fsync that fails reaches the callback as an error, and the log refuses
//! further appends until it is reopened.

use std::path::Path;
use std::sync::{Arc, Mutex};

use openraft::RaftLogReader;
use seglog::{Batches, LogOpenOptions};
use seglog_faults::{FaultInjector, FaultKind};
use seglog_raft::{KvConfig, LOG_DIR, LogStore, raft_log_config};

use crate::common::{append_durable, entries};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

/// The end offset of the whole batches in `image`.
fn durable_end(image: &[u8]) -> i64 {
    Batches::new(image, 0)
        .map_while(Result::ok)
        .last()
        .map_or(0, |b| b.header().last_offset + 1)
}

fn open(dir: &Path, injector: &FaultInjector) -> LogStore<KvConfig> {
    let options = LogOpenOptions {
        io: injector.io(),
        ..LogOpenOptions::default()
    };
    LogStore::open_with_options(dir, raft_log_config(), options).unwrap()
}

#[test]
fn every_flush_callback_finds_its_entries_in_the_durable_image() {
    let dir = tempfile::tempdir().unwrap();
    let injector = FaultInjector::new(dir.path());
    let segment = dir.path().join(LOG_DIR).join("00000000000000000000.log");
    let seen: Arc<Mutex<Vec<(i64, i64)>>> = Arc::default();
    rt().block_on(async {
        let mut store = open(dir.path(), &injector);
        let mut receivers = Vec::new();
        let mut next = 0;
        for run in 1..=40u64 {
            let count = 1 + run % 4;
            let end = next + count;
            let (injector, segment, seen) = (injector.clone(), segment.clone(), Arc::clone(&seen));
            let (tx, rx) = tokio::sync::oneshot::channel();
            store
                .append_then(
                    entries(1 + run / 10, next, end),
                    Box::new(move |result| {
                        let image = injector.durable_image(&segment).unwrap_or_default();
                        seen.lock()
                            .unwrap()
                            .push((i64::try_from(end).unwrap(), durable_end(&image)));
                        let _ = tx.send(result);
                    }),
                )
                .await
                .unwrap();
            receivers.push(rx);
            next = end;
        }
        for rx in receivers {
            rx.await.unwrap().unwrap();
        }
        assert_eq!(store.try_get_log_entries(..).await.unwrap().len(), 100);
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 40);
    for (end, durable) in seen.iter() {
        assert!(
            durable >= end,
            "a callback for entries below {end} fired with {durable} durable"
        );
    }
    // At most one `.log` fsync per callback (the store adds none of its own); that callbacks
    // queued during a sync share the next one is the flusher's unit test (a slow sync makes it
    // deterministic; here, on a fast disk, each append may find the previous sync finished).
    assert!(
        injector.syncs() <= 40,
        "{} fsyncs for 40 callbacks",
        injector.syncs()
    );
}

#[test]
fn a_failed_fsync_fails_the_callback_and_the_log_refuses_appends_until_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let injector = FaultInjector::new(dir.path());
    rt().block_on(async {
        let mut store = open(dir.path(), &injector);
        append_durable(&mut store, entries(1, 0, 5)).await;
        injector.fail_nth_sync(1, FaultKind::Eio);
        let (tx, rx) = tokio::sync::oneshot::channel();
        store
            .append_then(
                entries(1, 5, 8),
                Box::new(move |result| {
                    let _ = tx.send(result);
                }),
            )
            .await
            .unwrap();
        assert!(
            rx.await.unwrap().is_err(),
            "the callback of a failed fsync succeeded"
        );
        let refused = store.append_then(entries(1, 8, 9), Box::new(|_| {})).await;
        assert!(refused.is_err(), "a poisoned log took an append");
    });
    injector.clear();
    rt().block_on(async {
        let mut store = open(dir.path(), &injector);
        let all = store.try_get_log_entries(..).await.unwrap();
        assert!(all.len() >= 5, "durable entries lost: {}", all.len());
        assert_eq!(all[..5], entries(1, 0, 5));
    });
}

#[test]
fn save_committed_makes_the_entries_it_names_durable_first() {
    use openraft::storage::RaftLogStorage;
    let dir = tempfile::tempdir().unwrap();
    let injector = FaultInjector::new(dir.path());
    let segment = dir.path().join(LOG_DIR).join("00000000000000000000.log");
    rt().block_on(async {
        let mut store = open(dir.path(), &injector);
        // A follower: entries appended, their flush not waited for, then the leader's commit.
        store
            .append_then(entries(1, 0, 4), Box::new(|_| {}))
            .await
            .unwrap();
        let committed = Some(crate::common::log_id(1, 1, 3));
        store.save_committed(committed).await.unwrap();
        let image = injector.durable_image(&segment).unwrap_or_default();
        assert!(
            durable_end(&image) >= 4,
            "committed saved with {} durable",
            durable_end(&image)
        );
        assert_eq!(store.read_committed().await.unwrap(), committed);
    });
}
