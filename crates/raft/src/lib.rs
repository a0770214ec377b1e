//! seglog-raft: seglog as the log storage of [openraft](https://docs.rs/openraft).
//!
//! Kafka keeps its own Raft log (KRaft, `__cluster_metadata`) in an ordinary Kafka partition:
//! term = the batch's partition leader epoch, index = offset, the vote in a small
//! `quorum-state` file. [`LogStore`] does the same for openraft: its `RaftLogStorage` and
//! `RaftLogReader` over one seglog [`seglog::Log`] directory, through seglog's public API only.
//!
//! **openraft version.** Pinned exactly to `=0.9.25`, the newest stable release when this was
//! written (0.10 exists only as alpha releases). The pin is exact because the v2 storage traits
//! sit behind openraft's `storage-v2` feature, which its docs call temporary, and their details
//! (the `LogFlushed` callback, `save_committed`) have moved between releases. Features used:
//! `serde` (entries, votes and log ids are written with serde) and `storage-v2`.
//!
//! **Encoding**: one v2 batch per run of entries of the same
//! term; batch `partitionLeaderEpoch` = term (a term above `i32::MAX` is refused, as KRaft's
//! epoch is an `int32`); record offset = log index; record key = the proposing leader's node id
//! (8 bytes, big-endian); record value = the entry's payload as JSON. The vote, the committed
//! log id and the last purged log id are side files (`vote`, `committed`, `purged`) replaced
//! atomically (temp file, fsync, rename, directory fsync).
//!
//! **What is durable when** openraft is told:
//! - `append` returns once the entries are readable (written to the page cache, published to
//!   readers); its `LogFlushed` callback fires only after they are fsynced, through seglog's
//!   group commit ([`seglog::Log::sync_to`] on the store's flush thread: every callback queued
//!   while one fsync runs shares the next one).
//! - `save_vote`, `truncate` and `purge` first wait until every earlier append is durable and
//!   its callback has fired (no write overtakes an earlier one), then return once their effect
//!   is durable: `vote` renamed into place and its directory fsynced; `Log::truncate_to` is
//!   durable; a purge is durable through `purged`, re-applied at open.
//! - `save_committed` makes the entries it names durable, then rewrites `committed` at most
//!   every [`COMMITTED_CHECKPOINT_INTERVAL`] (and when the store is dropped): the file may lag
//!   the committed id, never lead it. Kafka checkpoints its high watermark the same way; a
//!   rewrite per commit would put two fsyncs in openraft's core loop for every commit.
//! - A truncation inside a batch (seglog, as Kafka, truncates whole batches) writes the kept
//!   entries of that batch to `truncation` first, cuts at the batch start, appends them again
//!   durably and removes the file; an open after a crash finishes it.
//!
//! **Log state and key log ids** come from the batch headers and keys (the last batch at
//! open; openraft finds the first log id of each term by its own binary search over reads).
//! seglog's leader-epoch cache does not exist yet; once it does, term starts can come from it.
//!
//! **Batching proposals.** openraft 0.9.25's core waits for each append's flush callback before
//! it takes the next client write, so on one node every `client_write` pays one fsync of its
//! own. [`Proposer`] batches before openraft: while one entry is in flight, the requests of
//! concurrent callers queue, and go out together as one entry (a [`Batch`]); each caller gets
//! its own response once that entry is committed and applied, or the entry's error.
//!
//! The seglog calls are blocking file I/O made on the calling task, as a RocksDB-backed store
//! makes them. [`KvStateMachine`] is an **example** state machine for the tests and the `kv`
//! example, not part of the storage; its [`KvConfig`] writes [`Batch`] entries.
//!
//! ```
//! use openraft::storage::RaftLogStorage;
//! use seglog_raft::{KvConfig, LogStore};
//!
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! let dir = tempfile::tempdir()?;
//! let mut store = LogStore::<KvConfig>::open(dir.path())?;
//! let state = store.get_log_state().await?;
//! assert_eq!(state.last_log_id, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod batch;
mod codec;
mod error;
mod flusher;
mod kv;
mod proposer;
mod side_file;
mod store;

pub use batch::{Batch, BatchResponse};
pub use error::Error;
pub use flusher::OnDurable;
pub use kv::{KvConfig, KvProposer, KvRequest, KvResponse, KvStateMachine};
pub use proposer::{ProposeError, Proposed, Proposer, ProposerConfig, ProposerStats};
pub use side_file::{COMMITTED_FILE, PURGED_FILE, TRUNCATION_FILE, VOTE_FILE};
pub use store::{COMMITTED_CHECKPOINT_INTERVAL, LOG_DIR, LogReader, LogStore, raft_log_config};

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// The crate README's example compiles and runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
