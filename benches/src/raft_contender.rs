//! seglog-raft as a contender: a one-node openraft cluster whose log is a `seglog_raft::LogStore`
//! (the crate's example key-value state machine applies the entries), written by concurrent
//! proposers, each request either as an entry of its own (`Raft::client_write` of a one-request
//! `Batch`) or through the crate's batching `Proposer` (the requests that queue while one entry
//! is in flight share the next). A request returns once its entry is committed, which on one
//! node means durable in the log (the store's flush callback, after seglog's group commit) and
//! applied.
//!
//! `Work::records` counts requests; the `entries_per_s` and `req_per_entry` metrics say how
//! many entries carried them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, Raft, ServerState, SnapshotPolicy};
use seglog_raft::{
    Batch, KvConfig, KvProposer, KvRequest, KvStateMachine, LogStore, ProposerConfig,
};

use crate::harness::{Trial, Work};
use crate::{Result, io_error};

/// How requests become entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proposal {
    /// Each request is one entry: `Raft::client_write(Batch::one(request))`.
    OnePerEntry,
    /// Through a `seglog_raft::Proposer` with its default bounds.
    Batched,
}

/// `requests` writes of `value_bytes` each from `proposers` concurrent tasks, on a fresh
/// one-node cluster in `dir` (set up and torn down untimed).
pub struct RaftDurable {
    requests: usize,
    proposers: usize,
    proposal: Proposal,
    value: String,
    dir: PathBuf,
    node: Option<Node>,
}

/// A running one-node cluster and its proposer.
struct Node {
    runtime: tokio::runtime::Runtime,
    raft: Raft<KvConfig>,
    proposer: KvProposer,
}

impl RaftDurable {
    /// See the type.
    pub fn new(
        requests: usize,
        proposers: usize,
        proposal: Proposal,
        value_bytes: usize,
        dir: PathBuf,
    ) -> Self {
        Self {
            requests,
            proposers,
            proposal,
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
            let proposer = KvProposer::new(raft.clone(), ProposerConfig::default())?;
            Ok::<_, crate::Error>((raft, proposer))
        })?;
        let (raft, proposer) = raft;
        self.node = Some(Node {
            runtime,
            raft,
            proposer,
        });
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let node = self.node.as_ref().ok_or("not prepared")?;
        let (requests, proposers, proposal) = (self.requests, self.proposers, self.proposal);
        let first_index = node.raft.metrics().borrow().last_log_index.unwrap_or(0);
        let start = Instant::now();
        node.runtime.block_on(async {
            let tasks: Vec<_> = (0..proposers)
                .map(|task| {
                    let (raft, proposer) = (node.raft.clone(), node.proposer.clone());
                    let value = self.value.clone();
                    tokio::spawn(async move {
                        for i in (task..requests).step_by(proposers) {
                            let write = KvRequest {
                                key: format!("k{i}"),
                                value: value.clone(),
                            };
                            match proposal {
                                Proposal::OnePerEntry => {
                                    let batch = Batch::one(write);
                                    raft.client_write(batch).await.map_err(|e| e.to_string())?;
                                }
                                Proposal::Batched => {
                                    proposer.propose(write).await.map_err(|e| e.to_string())?;
                                }
                            }
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
        let elapsed = start.elapsed().as_secs_f64();
        // On one node every entry is a client write of this run (no elections, no blanks).
        let last_index = node.raft.metrics().borrow().last_log_index.unwrap_or(0);
        let entries = last_index.saturating_sub(first_index).max(1);
        Ok(
            Work::new(requests as u64, (requests * self.value.len()) as u64)
                .with_metric(
                    "entries_per_s",
                    entries as f64 / elapsed.max(f64::MIN_POSITIVE),
                )
                .with_metric("req_per_entry", requests as f64 / entries as f64),
        )
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some(node) = self.node.take() {
            drop(node.proposer);
            node.runtime
                .block_on(node.raft.shutdown())
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
