//! **An example** state machine: a string key-value map with snapshots, for this crate's tests
//! and the `kv` example. It is not part of the storage: a real application brings its own
//! `RaftStateMachine`.
//!
//! Its writes are batch entries: the app data is a [`Batch`] of [`KvRequest`]s, applied in
//! order as one step (no reader of the map sees part of an entry), answered by one
//! [`KvResponse`] per request. Write through a [`KvProposer`] to batch concurrent writes, or
//! propose `Batch::one(request)` with `Raft::client_write` for one request per entry.
//!
//! State lives in memory; with a directory, each snapshot (built or installed) is also written
//! to `snapshot` there atomically and loaded again at open, so a restarted node starts from its
//! last snapshot and openraft re-applies the log after it.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::RaftStateMachine;
use openraft::{
    AnyError, BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftSnapshotBuilder, Snapshot,
    SnapshotMeta, StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::batch::{Batch, BatchResponse};
use crate::proposer::Proposer;
use crate::side_file;

/// The example's snapshot file.
const SNAPSHOT_FILE: &str = "snapshot";

/// A write of the example: set `key` to `value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvRequest {
    /// The key.
    pub key: String,
    /// The new value.
    pub value: String,
}

/// What applying a [`KvRequest`] returns: the key's previous value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvResponse {
    /// The value the key had before (`None`: a new key).
    pub previous: Option<String>,
}

openraft::declare_raft_types!(
    /// The example's openraft type config: a [`Batch`] of [`KvRequest`]s in, a
    /// [`BatchResponse`] of [`KvResponse`]s out (empty for blank and membership entries),
    /// `u64` node ids, `BasicNode` addresses, in-memory snapshot data.
    pub KvConfig:
        D = Batch<KvRequest>,
        R = BatchResponse<KvResponse>,
);

/// The example's batching client: concurrent writes share entries (see [`Proposer`]).
pub type KvProposer = Proposer<KvConfig, KvRequest, KvResponse>;

/// The example's snapshot as stored: its metadata and the whole map.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<u64, BasicNode>,
    map: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct State {
    last_applied: Option<LogId<u64>>,
    last_membership: StoredMembership<u64, BasicNode>,
    map: BTreeMap<String, String>,
    snapshot: Option<StoredSnapshot>,
    snapshots_built: u64,
}

/// **Example** key-value state machine: a string map with snapshots, for this crate's tests
/// and its `kv` example, not part of the storage (a real application brings its own
/// `RaftStateMachine`). Its writes are [`Batch`]es of [`KvRequest`]s, applied in order as one
/// step and answered by one [`KvResponse`] per request; with a directory each snapshot is also
/// written there and loaded at open. Cloning shares the state.
#[derive(Debug, Clone, Default)]
pub struct KvStateMachine {
    state: Arc<Mutex<State>>,
    dir: Option<PathBuf>,
}

impl KvStateMachine {
    /// A state machine held in memory only (snapshots too).
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A state machine whose snapshots are kept in `dir` (created when missing); starts from
    /// the snapshot found there.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::SideFile`] for the snapshot file.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, Error> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        let mut state = State::default();
        if let Some(snapshot) = side_file::read_json::<StoredSnapshot>(&dir, SNAPSHOT_FILE)? {
            state.last_applied = snapshot.meta.last_log_id;
            state.last_membership = snapshot.meta.last_membership.clone();
            state.map = snapshot.map.clone();
            state.snapshot = Some(snapshot);
        }
        Ok(Self {
            state: Arc::new(Mutex::new(state)),
            dir: Some(dir),
        })
    }

    /// The value of `key`, as applied so far.
    pub fn get(&self, key: &str) -> Option<String> {
        self.lock().map.get(key).cloned()
    }

    /// A copy of the whole map, as applied so far.
    pub fn snapshot_map(&self) -> BTreeMap<String, String> {
        self.lock().map.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn persist(&self, snapshot: &StoredSnapshot) -> Result<(), Error> {
        match &self.dir {
            Some(dir) => side_file::write_json(dir, SNAPSHOT_FILE, snapshot),
            None => Ok(()),
        }
    }
}

fn to_snapshot(stored: &StoredSnapshot) -> Result<Snapshot<KvConfig>, serde_json::Error> {
    let data = serde_json::to_vec(&stored.map)?;
    Ok(Snapshot {
        meta: stored.meta.clone(),
        snapshot: Box::new(Cursor::new(data)),
    })
}

/// A snapshot I/O error as openraft's.
fn snapshot_error(e: impl std::error::Error + 'static) -> StorageError<u64> {
    StorageIOError::write_snapshot(None, AnyError::new(&e)).into()
}

impl RaftSnapshotBuilder<KvConfig> for KvStateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<KvConfig>, StorageError<u64>> {
        let stored = {
            let mut state = self.lock();
            state.snapshots_built += 1;
            let snapshot_id = match state.last_applied {
                Some(id) => format!(
                    "{}-{}-{}",
                    id.leader_id.term, id.index, state.snapshots_built
                ),
                None => format!("none-{}", state.snapshots_built),
            };
            StoredSnapshot {
                meta: SnapshotMeta {
                    last_log_id: state.last_applied,
                    last_membership: state.last_membership.clone(),
                    snapshot_id,
                },
                map: state.map.clone(),
            }
        };
        self.persist(&stored).map_err(snapshot_error)?;
        let snapshot = to_snapshot(&stored).map_err(snapshot_error)?;
        self.lock().snapshot = Some(stored);
        Ok(snapshot)
    }
}

impl RaftStateMachine<KvConfig> for KvStateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        let state = self.lock();
        Ok((state.last_applied, state.last_membership.clone()))
    }

    /// Applies each entry's requests in order, under one lock of the map: a reader (`get`, a
    /// snapshot) sees all of an entry or none of it.
    async fn apply<I>(
        &mut self,
        entries: I,
    ) -> Result<Vec<BatchResponse<KvResponse>>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<KvConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut state = self.lock();
        let mut replies = Vec::new();
        for entry in entries {
            state.last_applied = Some(entry.log_id);
            let responses = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(batch) => batch
                    .requests
                    .into_iter()
                    .map(|request| KvResponse {
                        previous: state.map.insert(request.key, request.value),
                    })
                    .collect(),
                EntryPayload::Membership(membership) => {
                    state.last_membership = StoredMembership::new(Some(entry.log_id), membership);
                    Vec::new()
                }
            };
            replies.push(BatchResponse { responses });
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let map: BTreeMap<String, String> =
            serde_json::from_slice(snapshot.get_ref()).map_err(|e| {
                StorageIOError::read_snapshot(Some(meta.signature()), AnyError::new(&e))
            })?;
        let stored = StoredSnapshot {
            meta: meta.clone(),
            map,
        };
        self.persist(&stored).map_err(snapshot_error)?;
        let mut state = self.lock();
        state.last_applied = meta.last_log_id;
        state.last_membership = meta.last_membership.clone();
        state.map = stored.map.clone();
        state.snapshot = Some(stored);
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<KvConfig>>, StorageError<u64>> {
        let stored = self.lock().snapshot.clone();
        stored
            .as_ref()
            .map(to_snapshot)
            .transpose()
            .map_err(snapshot_error)
    }
}
