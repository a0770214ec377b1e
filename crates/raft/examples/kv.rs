//! A replicated key-value store on this machine: openraft for consensus, seglog-raft for the
//! log, the crate's **example** `KvStateMachine`, and plain TCP on loopback between the nodes
//! (one JSON request per line, one JSON response per line).
//!
//! ```text
//! cargo run -p seglog-raft --example kv -- --id 1 --addr 127.0.0.1:21001 --dir /tmp/kv1 \
//!     --peer 2=127.0.0.1:21002 --peer 3=127.0.0.1:21003 --init
//! cargo run -p seglog-raft --example kv -- --id 2 --addr 127.0.0.1:21002 --dir /tmp/kv2 \
//!     --peer 1=127.0.0.1:21001 --peer 3=127.0.0.1:21003
//! cargo run -p seglog-raft --example kv -- --id 3 --addr 127.0.0.1:21003 --dir /tmp/kv3 \
//!     --peer 1=127.0.0.1:21001 --peer 2=127.0.0.1:21002
//! cargo run -p seglog-raft --example kv -- --client 127.0.0.1:21001 write a 1
//! cargo run -p seglog-raft --example kv -- --client 127.0.0.1:21002 status
//! cargo run -p seglog-raft --example kv -- --client 127.0.0.1:21003 dump
//! ```
//!
//! Client requests (`--client ADDR` then `write KEY VALUE`, `status`, `dump` or `shutdown`;
//! the same example binary, speaking the nodes' line protocol over a `std` TCP stream):
//! `{"Write":{"key":..,"value":..}}` (answered by the leader once the entry carrying it is
//! committed and applied; other nodes answer `{"Forward":{"leader":ID}}`, and the client
//! exits 1 naming the leader). Writes go through the crate's batching `KvProposer`: writes of
//! concurrent connections share one entry (`{"Written":{"index":I,"position":P}}`: request P
//! of the entry at index I). Also `"Status"`, `"Dump"` (this node's applied map) and
//! `"Shutdown"`. The client prints the node's JSON reply on one line. Each node keeps its
//! store in `DIR/log` (the seglog log in `DIR/log/raft-0`: check it with `seglog verify`) and
//! its snapshots in `DIR/sm`. Only loopback addresses are accepted: this is a demonstration,
//! not a server.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Config, LogId, Raft, SnapshotPolicy};
use seglog_raft::{
    KvConfig, KvProposer, KvRequest, KvStateMachine, LogStore, ProposeError, ProposerConfig,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type KvRaft = Raft<KvConfig>;

#[derive(Parser, Debug)]
#[command(about = "A three-node (or more) replicated key-value store over seglog-raft")]
struct Args {
    /// Be a client instead of a node: send one request to the node at this address, print its
    /// reply (exit 1 if the node is not the leader or answers an error).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["id", "addr", "init"])]
    client: Option<SocketAddr>,
    /// The client's request: `write KEY VALUE`, `status`, `dump` or `shutdown`.
    #[arg(requires = "client", num_args = 1..=3, value_name = "REQUEST")]
    request: Vec<String>,
    /// This node's id.
    #[arg(long, required_unless_present = "client")]
    id: Option<u64>,
    /// The address to listen on (loopback only).
    #[arg(long, required_unless_present = "client")]
    addr: Option<SocketAddr>,
    /// The node's data directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Another member, as `ID=ADDR` (repeat for each).
    #[arg(long = "peer", value_parser = parse_peer)]
    peers: Vec<(u64, SocketAddr)>,
    /// Initialize the cluster with this node and its peers as voters (on one node, once).
    #[arg(long)]
    init: bool,
    /// Build a snapshot (and purge the log behind it) every this many applied entries.
    #[arg(long, default_value_t = 50)]
    snapshot_every: u64,
}

fn parse_peer(s: &str) -> Result<(u64, SocketAddr), String> {
    let (id, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("expected ID=ADDR, got {s}"))?;
    let id = id.parse().map_err(|e| format!("peer id {id}: {e}"))?;
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| format!("peer address {addr}: {e}"))?;
    Ok((id, addr))
}

/// Everything one line can ask of a node.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
    AppendEntries(AppendEntriesRequest<KvConfig>),
    Vote(VoteRequest<u64>),
    InstallSnapshot(InstallSnapshotRequest<KvConfig>),
    Write(KvRequest),
    Status,
    Dump,
    /// Stop Raft, close the store cleanly, exit.
    Shutdown,
}

/// A node's answer to a client request.
#[derive(Debug, Serialize, Deserialize)]
enum ClientResponse {
    /// The write is committed and applied on the leader: request `position` of the entry at
    /// log index `index`.
    Written {
        index: u64,
        position: usize,
    },
    /// Not the leader: ask this one (when known).
    Forward {
        leader: Option<u64>,
    },
    Status(Status),
    Dump {
        last_applied: Option<u64>,
        map: BTreeMap<String, String>,
    },
    ShuttingDown,
    Error(String),
}

#[derive(Debug, Serialize, Deserialize)]
struct Status {
    id: u64,
    leader: Option<u64>,
    term: u64,
    last_log_index: Option<u64>,
    last_applied: Option<u64>,
}

fn main() -> Result<std::process::ExitCode, BoxError> {
    let args = Args::parse();
    if let Some(addr) = args.client {
        return client(addr, &args.request);
    }
    let (Some(id), Some(addr)) = (args.id, args.addr) else {
        return Err("a node needs --id and --addr".into());
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(node(id, addr, args))?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `--client`: one request to the node at `addr` over a plain `std` TCP stream, its reply
/// printed as the JSON line it is. Exit 1 when the node is not the leader (`Forward`) or
/// answers an error.
fn client(addr: SocketAddr, request: &[String]) -> Result<std::process::ExitCode, BoxError> {
    use std::io::{BufRead, Write};
    if !addr.ip().is_loopback() {
        return Err("this example only talks on loopback (127.0.0.0/8, ::1)".into());
    }
    let words: Vec<&str> = request.iter().map(String::as_str).collect();
    let request = match words.as_slice() {
        ["write", key, value] => Request::Write(KvRequest {
            key: (*key).to_owned(),
            value: (*value).to_owned(),
        }),
        ["status"] => Request::Status,
        ["dump"] => Request::Dump,
        ["shutdown"] => Request::Shutdown,
        _ => {
            return Err(format!(
                "unknown request {words:?}: expected `write KEY VALUE`, `status`, `dump` or `shutdown`"
            )
            .into());
        }
    };
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut line = serde_json::to_vec(&request)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reply = String::new();
    std::io::BufReader::new(stream).read_line(&mut reply)?;
    if reply.is_empty() {
        return Err(format!("{addr} closed the connection without a reply").into());
    }
    println!("{}", reply.trim_end());
    Ok(match serde_json::from_str::<ClientResponse>(&reply)? {
        ClientResponse::Forward { leader } => {
            match leader {
                Some(id) => eprintln!("{addr} is not the leader: node {id} is"),
                None => eprintln!("{addr} is not the leader and knows of none yet"),
            }
            std::process::ExitCode::FAILURE
        }
        ClientResponse::Error(_) => std::process::ExitCode::FAILURE,
        _ => std::process::ExitCode::SUCCESS,
    })
}

/// Runs the node `id` on `addr` until a client asks it to shut down.
async fn node(id: u64, addr: SocketAddr, args: Args) -> Result<(), BoxError> {
    if !addr.ip().is_loopback() || args.peers.iter().any(|(_, a)| !a.ip().is_loopback()) {
        return Err("this example only talks on loopback (127.0.0.0/8, ::1)".into());
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("kv-node-{id}")));
    let store = LogStore::<KvConfig>::open(dir.join("log"))?;
    let sm = KvStateMachine::open(dir.join("sm"))?;
    let config = Config {
        cluster_name: "seglog-raft-kv".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(args.snapshot_every),
        max_in_snapshot_log_to_keep: args.snapshot_every / 2,
        ..Config::default()
    }
    .validate()?;
    let listener = TcpListener::bind(addr).await?;
    let raft = Raft::new(id, Arc::new(config), Network, store, sm.clone()).await?;
    if args.init && !raft.is_initialized().await? {
        let mut members = BTreeMap::new();
        members.insert(id, BasicNode::new(addr.to_string()));
        for (id, addr) in &args.peers {
            members.insert(*id, BasicNode::new(addr.to_string()));
        }
        raft.initialize(members).await?;
    }
    let proposer = KvProposer::new(raft.clone(), ProposerConfig::default())?;
    println!("node {id} listening on {addr}");
    let stop = Arc::new(tokio::sync::Notify::new());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted?;
                let (raft, proposer, sm, stop) =
                    (raft.clone(), proposer.clone(), sm.clone(), Arc::clone(&stop));
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, raft, proposer, sm, &stop).await {
                        eprintln!("connection: {e}");
                    }
                });
            }
            () = stop.notified() => break,
        }
    }
    // Raft's tasks end and drop the store, whose last holder closes the seglog log.
    raft.shutdown().await?;
    drop(raft);
    println!("node {id} stopped");
    Ok(())
}

/// Answers the requests of one connection, one line each.
async fn serve(
    stream: TcpStream,
    raft: KvRaft,
    proposer: KvProposer,
    sm: KvStateMachine,
    stop: &tokio::sync::Notify,
) -> Result<(), BoxError> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await? {
        let request: Request = serde_json::from_str(&line)?;
        let mut reply = match request {
            Request::AppendEntries(rpc) => serde_json::to_vec(&raft.append_entries(rpc).await)?,
            Request::Vote(rpc) => serde_json::to_vec(&raft.vote(rpc).await)?,
            Request::InstallSnapshot(rpc) => serde_json::to_vec(&raft.install_snapshot(rpc).await)?,
            Request::Write(write) => serde_json::to_vec(&client_write(&proposer, write).await)?,
            Request::Status => {
                let m = raft.metrics().borrow().clone();
                serde_json::to_vec(&ClientResponse::Status(Status {
                    id: m.id,
                    leader: m.current_leader,
                    term: m.current_term,
                    last_log_index: m.last_log_index,
                    last_applied: m.last_applied.map(|l: LogId<u64>| l.index),
                }))?
            }
            Request::Dump => {
                let last_applied = raft.metrics().borrow().last_applied.map(|l| l.index);
                serde_json::to_vec(&ClientResponse::Dump {
                    last_applied,
                    map: sm.snapshot_map(),
                })?
            }
            Request::Shutdown => {
                stop.notify_one();
                serde_json::to_vec(&ClientResponse::ShuttingDown)?
            }
        };
        reply.push(b'\n');
        write.write_all(&reply).await?;
    }
    Ok(())
}

async fn client_write(proposer: &KvProposer, write: KvRequest) -> ClientResponse {
    match proposer.propose(write).await {
        Ok(proposed) => ClientResponse::Written {
            index: proposed.log_id.index,
            position: proposed.position,
        },
        Err(ProposeError::ForwardToLeader(forward)) => ClientResponse::Forward {
            leader: forward.leader_id,
        },
        Err(e) => ClientResponse::Error(e.to_string()),
    }
}

/// Connects to peers by the address in their `BasicNode`.
struct Network;

/// One peer: a connection per RPC (loopback; simple and enough for an example).
struct Peer {
    target: u64,
    addr: String,
}

impl RaftNetworkFactory<KvConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Peer {
        Peer {
            target,
            addr: node.addr.clone(),
        }
    }
}

impl Peer {
    /// Sends `request`, returns the peer's `Result<T, E>`.
    async fn call<T, E>(&self, request: &Request) -> Result<T, RPCError<u64, BasicNode, E>>
    where
        T: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let stream = TcpStream::connect(&self.addr)
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        let (read, mut write) = stream.into_split();
        let mut line =
            serde_json::to_vec(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        line.push(b'\n');
        write
            .write_all(&line)
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let reply = BufReader::new(read)
            .lines()
            .next_line()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?
            .ok_or_else(|| {
                let e = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no reply");
                RPCError::Network(NetworkError::new(&e))
            })?;
        let result: Result<T, E> =
            serde_json::from_str(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<KvConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<KvConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(&Request::AppendEntries(rpc)).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<KvConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        self.call(&Request::InstallSnapshot(rpc)).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(&Request::Vote(rpc)).await
    }
}
