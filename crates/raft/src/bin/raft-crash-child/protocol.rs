//! What the crash child writes and says, shared with the crash tests (`tests/it/crash.rs`
//! includes this file): the entries' contents are a function of (term, index), so a test can
//! check every entry it finds after a restart.
//!
//! The child prints one line per fact openraft would have been told, after it became true:
//! `appended END` (entries below END readable), `durable END` (their flush callback fired),
//! `truncated I`, `purged I`, `vote TERM` (each after the call returned).

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use seglog_raft::{Batch, KvConfig, KvRequest};

/// The node id the child proposes as.
pub const NODE: u64 = 1;

/// The log id of `index` in `term`.
pub fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId {
        leader_id: CommittedLeaderId::new(term, NODE),
        index,
    }
}

/// The entry the child writes at `index` in `term`.
pub fn entry(term: u64, index: u64) -> Entry<KvConfig> {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Batch::one(KvRequest {
            key: format!("k{index}"),
            value: format!("v{index}-t{term}"),
        })),
    }
}

/// The term of `index` in the `append` scenario: runs of 37 entries, so batches of one append
/// sometimes span two terms.
pub fn append_term(index: u64) -> u64 {
    1 + index / 37
}

/// A small deterministic generator (xorshift64*), so a seed replays a run.
pub struct Rng(pub u64);

impl Rng {
    /// The next value in `[0, n)`.
    pub fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}
