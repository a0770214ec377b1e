//! seglog-raft as a contender: a one-node openraft cluster whose log is a `seglog_raft::LogStore`
//! (the crate's example key-value state machine applies the entries), written by concurrent
//! proposers through `Raft::client_write`. A write returns once its entry is committed, which on
//! one node means durable in the log (the store's flush callback, after seglog's group commit)
//! and applied.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, Raft, ServerState, SnapshotPolicy};
use seglog_raft::{KvConfig, KvRequest, KvStateMachine, LogStore};

use crate::harness::{Trial, Work};
use crate::{Result, io_error};

/// `entries` writes of `value_bytes` each from `proposers` concurrent tasks, on a fresh
/// one-node cluster in `dir` (set up and torn down untimed).
pub struct RaftDurable {
    entries: usize,
    proposers: usize,
    value: String,
    dir: PathBuf,
    node: Option<(tokio::runtime::Runtime, Raft<KvConfig>)>,
}

impl RaftDurable {
    /// See the type.
    pub fn new(entries: usize, proposers: usize, value_bytes: usize, dir: PathBuf) -> Self {
        Self {
            entries,
            proposers,
            value: "v".repeat(value_bytes),
            dir,
            node: None,
        }
    }
}

impl Trial for RaftDurable {
    fn prepare(&mut self) -> Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| io_error("start a runtime for", &self.dir, e))?;
        let dir = self.dir.clone();
        let raft = runtime.block_on(async move {
            let store = LogStore::<KvConfig>::open(&dir)?;
            let config = Config {
                // Never snapshot during a trial: only the log is measured.
                snapshot_policy: SnapshotPolicy::Never,
                ..Config::default()
            }
            .validate()?;
            let raft = Raft::new(
                1,
                Arc::new(config),
                NoPeers,
                store,
                KvStateMachine::in_memory(),
            )
            .await?;
            let mut members = BTreeMap::new();
            members.insert(1, BasicNode::new("127.0.0.1:1"));
            raft.initialize(members).await?;
            raft.wait(Some(std::time::Duration::from_secs(10)))
                .state(ServerState::Leader, "one-node leader")
                .await?;
            Ok::<_, crate::Error>(raft)
        })?;
        self.node = Some((runtime, raft));
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let (runtime, raft) = self.node.as_ref().ok_or("not prepared")?;
        let (entries, proposers) = (self.entries, self.proposers);
        runtime.block_on(async {
            let tasks: Vec<_> = (0..proposers)
                .map(|proposer| {
                    let (raft, value) = (raft.clone(), self.value.clone());
                    tokio::spawn(async move {
                        for i in (proposer..entries).step_by(proposers) {
                            let write = KvRequest {
                                key: format!("k{i}"),
                                value: value.clone(),
                            };
                            raft.client_write(write).await.map_err(|e| e.to_string())?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await.map_err(|e| e.to_string())??;
            }
            Ok::<(), crate::Error>(())
        })?;
        Ok(Work::new(
            entries as u64,
            (entries * self.value.len()) as u64,
        ))
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some((runtime, raft)) = self.node.take() {
            runtime
                .block_on(raft.shutdown())
                .map_err(|e| e.to_string())?;
        }
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error("remove", &self.dir, e))
            }
            _ => Ok(()),
        }
    }
}

/// A one-node cluster has no peers: any RPC is a bug, reported as unreachable.
struct NoPeers;

impl RaftNetworkFactory<KvConfig> for NoPeers {
    type Network = NoPeers;

    async fn new_client(&mut self, _target: u64, _node: &BasicNode) -> NoPeers {
        NoPeers
    }
}

fn unreachable<E: std::error::Error>() -> RPCError<u64, BasicNode, E> {
    let e = std::io::Error::other("a one-node cluster sends no RPC");
    RPCError::Unreachable(Unreachable::new(&e))
}

impl RaftNetwork<KvConfig> for NoPeers {
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<KvConfig>,
        _option: RPCOption,
    ) -> std::result::Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>>
    {
        Err(unreachable())
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<KvConfig>,
        _option: RPCOption,
    ) -> std::result::Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        Err(unreachable())
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> std::result::Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(unreachable())
    }
}
