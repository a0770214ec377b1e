//! Helpers shared by the tests: entries, appends that wait for the flush callback.

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use seglog_raft::{Batch, KvConfig, KvRequest, LogStore};

pub fn log_id(term: u64, node: u64, index: u64) -> LogId<u64> {
    LogId {
        leader_id: CommittedLeaderId::new(term, node),
        index,
    }
}

/// A normal entry setting `k{index}` to `v{index}-t{term}`.
pub fn entry(term: u64, index: u64) -> Entry<KvConfig> {
    Entry {
        log_id: log_id(term, 1, index),
        payload: EntryPayload::Normal(Batch::one(KvRequest {
            key: format!("k{index}"),
            value: format!("v{index}-t{term}"),
        })),
    }
}

/// Entries `from..to` of `term`.
pub fn entries(term: u64, from: u64, to: u64) -> Vec<Entry<KvConfig>> {
    (from..to).map(|i| entry(term, i)).collect()
}

/// Appends and waits for the flush callback (the entries are then durable).
pub async fn append_durable(store: &mut LogStore<KvConfig>, entries: Vec<Entry<KvConfig>>) {
    let rx = append_queued(store, entries).await;
    rx.await.unwrap().unwrap();
}

/// Appends; returns the receiver of the flush completion.
pub async fn append_queued(
    store: &mut LogStore<KvConfig>,
    entries: Vec<Entry<KvConfig>>,
) -> tokio::sync::oneshot::Receiver<Result<(), std::io::Error>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    store
        .append_then(
            entries,
            Box::new(move |result| {
                let _ = tx.send(result);
            }),
        )
        .await
        .unwrap();
    rx
}
