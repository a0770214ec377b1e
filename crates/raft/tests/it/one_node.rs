//! A one-node openraft cluster on the store, written by concurrent proposers through
//! `Raft::client_write`, over `seglog-faults`' seam: every acknowledged write is in the
//! durable image of the log when its proposer gets the answer, and the store adds no fsync of
//! its own (at most one `.log` fsync per append; openraft 0.9.25's core waits for each
//! append's flush callback before it takes the next client write, so the entries of
//! concurrent proposers cannot share one).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::error::{InstallSnapshotError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, Raft, ServerState, SnapshotPolicy};
use seglog::{Batches, LogOpenOptions};
use seglog_faults::FaultInjector;
use seglog_raft::{KvConfig, KvRequest, KvStateMachine, LOG_DIR, LogStore, raft_log_config};

struct NoPeers;

impl RaftNetworkFactory<KvConfig> for NoPeers {
    type Network = NoPeers;
    async fn new_client(&mut self, _target: u64, _node: &BasicNode) -> NoPeers {
        NoPeers
    }
}

fn unreachable<E: std::error::Error>() -> RPCError<u64, BasicNode, E> {
    RPCError::Unreachable(Unreachable::new(&std::io::Error::other("no peers")))
}

impl RaftNetwork<KvConfig> for NoPeers {
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<KvConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(unreachable())
    }
    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<KvConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        Err(unreachable())
    }
    async fn vote(
        &mut self,
        _rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(unreachable())
    }
}

#[test]
fn acknowledged_client_writes_are_durable_and_cost_at_most_one_fsync_each() {
    let dir = tempfile::tempdir().unwrap();
    let injector = FaultInjector::new(dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = LogOpenOptions {
            io: injector.io(),
            ..LogOpenOptions::default()
        };
        let store = LogStore::<KvConfig>::open_with_options(dir.path(), raft_log_config(), options)
            .unwrap();
        let config = Config {
            snapshot_policy: SnapshotPolicy::Never,
            ..Config::default()
        }
        .validate()
        .unwrap();
        let sm = KvStateMachine::in_memory();
        let raft = Raft::new(1, Arc::new(config), NoPeers, store, sm.clone())
            .await
            .unwrap();
        let mut members = BTreeMap::new();
        members.insert(1u64, BasicNode::new("127.0.0.1:1"));
        raft.initialize(members).await.unwrap();
        raft.wait(Some(Duration::from_secs(10)))
            .state(ServerState::Leader, "leader")
            .await
            .unwrap();
        let (proposers, per) = (8usize, 50usize);
        let before = injector.syncs();
        let start = Instant::now();
        let segment = dir.path().join(LOG_DIR).join("00000000000000000000.log");
        let tasks: Vec<_> = (0..proposers)
            .map(|p| {
                let (raft, injector, segment) = (raft.clone(), injector.clone(), segment.clone());
                tokio::spawn(async move {
                    for i in 0..per {
                        let write = KvRequest {
                            key: format!("p{p}-{i}"),
                            value: "v".repeat(100),
                        };
                        let index = raft.client_write(write).await.unwrap().log_id.index;
                        let image = injector.durable_image(&segment).unwrap_or_default();
                        let durable = Batches::new(&image, 0)
                            .map_while(Result::ok)
                            .last()
                            .map_or(0, |b| b.header().last_offset + 1);
                        assert!(
                            durable > i64::try_from(index).unwrap(),
                            "write at {index} acknowledged with {durable} durable"
                        );
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let entries = proposers * per;
        let syncs = injector.syncs() - before;
        println!(
            "{entries} entries, {syncs} fsyncs, {:?} ({:.0} entries/s)",
            start.elapsed(),
            entries as f64 / start.elapsed().as_secs_f64()
        );
        assert_eq!(sm.snapshot_map().len(), entries);
        assert!(
            syncs as usize <= entries,
            "{syncs} fsyncs for {entries} entries"
        );
        raft.shutdown().await.unwrap();
    });
}
