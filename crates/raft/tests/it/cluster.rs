//! The `kv` example as a three-node cluster on loopback: a client writes through the leader,
//! the leader is killed with SIGKILL, a new leader is elected, more writes, the killed node is
//! restarted and catches up (through a snapshot: the example snapshots and purges every 20
//! entries); at the end every acknowledged write is on all three nodes, and every node's log
//! directory passes `seglog verify`; the example's `--client` mode writes, dumps and is
//! redirected by a follower. Ports are chosen free; every process is killed when the
//! test ends, whatever happens; the whole run is bounded in time.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const NODES: u64 = 3;
const DEADLINE: Duration = Duration::from_secs(90);

/// Builds `args` with this cargo, in this test's profile (a no-op when fresh), and returns
/// `<target>/<profile>/<path>`.
fn built(args: &[&str], path: &str) -> PathBuf {
    // The test binary is <target>/<profile>/deps/it-<hash>.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--quiet"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cargo.arg("--release");
    }
    let status = cargo.status().unwrap();
    assert!(status.success(), "cargo build {args:?}");
    profile_dir.join(path)
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// One node process; killed (SIGKILL) when dropped if still running.
struct Node {
    id: u64,
    addr: SocketAddr,
    dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn start(&mut self, kv: &Path, peers: &[(u64, SocketAddr)], init: bool) {
        let mut cmd = Command::new(kv);
        cmd.args(["--id", &self.id.to_string()])
            .args(["--addr", &self.addr.to_string()])
            .args(["--dir", &self.dir.display().to_string()])
            .args(["--snapshot-every", "20"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (id, addr) in peers.iter().filter(|(id, _)| *id != self.id) {
            cmd.args(["--peer", &format!("{id}={addr}")]);
        }
        if init {
            cmd.arg("--init");
        }
        self.child = Some(cmd.spawn().unwrap());
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Asks the node to shut down cleanly and waits for it (killed after 10 s).
    fn stop(&mut self) {
        let _ = request(self.addr, &json!("Shutdown"));
        if let Some(mut child) = self.child.take() {
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                if child.try_wait().unwrap().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("node {} did not stop", self.id);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One request line, one response line; `None` when the node does not answer.
fn request(addr: SocketAddr, body: &Value) -> Option<Value> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut line = serde_json::to_vec(body).ok()?;
    line.push(b'\n');
    stream.write_all(&line).ok()?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).ok()?;
    serde_json::from_str(&reply).ok()
}

fn status(node: &Node) -> Option<Value> {
    request(node.addr, &json!("Status"))?.get("Status").cloned()
}

/// The leader every running node agrees on (not `not`), waiting up to `DEADLINE`.
fn agreed_leader(nodes: &[Node], not: Option<u64>, start: Instant) -> u64 {
    loop {
        assert!(start.elapsed() < DEADLINE, "no leader agreed on in time");
        let leaders: Vec<Option<u64>> = nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| status(n).and_then(|s| s["leader"].as_u64()))
            .collect();
        if let Some(Some(leader)) = leaders.first()
            && leaders.iter().all(|l| *l == Some(*leader))
            && Some(*leader) != not
            && nodes.iter().any(|n| n.id == *leader && n.child.is_some())
        {
            return *leader;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Writes `key` through the leader (following redirects, retrying while there is none);
/// returns once the write is acknowledged.
fn write(nodes: &[Node], leader: &mut u64, key: &str, value: &str, start: Instant) {
    loop {
        assert!(
            start.elapsed() < DEADLINE,
            "write {key} not acknowledged in time"
        );
        let node = nodes.iter().find(|n| n.id == *leader);
        let reply =
            node.and_then(|n| request(n.addr, &json!({"Write": {"key": key, "value": value}})));
        match reply {
            Some(r) if r.get("Written").is_some() => return,
            Some(r) if r["Forward"]["leader"].as_u64().is_some() => {
                *leader = r["Forward"]["leader"].as_u64().unwrap_or(*leader);
            }
            _ => {
                std::thread::sleep(Duration::from_millis(100));
                *leader = agreed_leader(nodes, None, start);
            }
        }
    }
}

#[test]
fn three_nodes_survive_a_leader_kill_and_agree_on_every_acknowledged_write() {
    let kv = built(&["-p", "seglog-raft", "--example", "kv"], "examples/kv");
    let seglog = built(&["-p", "seglog-cli"], "seglog");
    // The deadline bounds the cluster, not the builds above (a fresh build of the CLI alone
    // can take longer than it on a busy machine).
    let start = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let peers: Vec<(u64, SocketAddr)> = (1..=NODES).map(|id| (id, free_port())).collect();
    let mut nodes: Vec<Node> = peers
        .iter()
        .map(|&(id, addr)| Node {
            id,
            addr,
            dir: root.path().join(format!("node-{id}")),
            child: None,
        })
        .collect();
    for node in &mut nodes {
        node.start(&kv, &peers, node.id == 1);
    }
    let mut acked: Vec<(String, String)> = Vec::new();
    let mut leader = agreed_leader(&nodes, None, start);
    for i in 0..25 {
        let (key, value) = (format!("k{i}"), format!("v{i}"));
        write(&nodes, &mut leader, &key, &value, start);
        acked.push((key, value));
    }

    // SIGKILL the leader; the other two elect a new one.
    let killed = leader;
    let index = nodes.iter().position(|n| n.id == killed).unwrap();
    nodes[index].kill();
    leader = agreed_leader(&nodes, Some(killed), start);
    for i in 25..60 {
        let (key, value) = (format!("k{i}"), format!("v{i}-after-kill"));
        write(&nodes, &mut leader, &key, &value, start);
        acked.push((key, value));
    }

    // The killed node comes back with its directory and catches up.
    nodes[index].start(&kv, &peers, false);
    for i in 60..70 {
        let (key, value) = (format!("k{i}"), format!("v{i}-after-restart"));
        write(&nodes, &mut leader, &key, &value, start);
        acked.push((key, value));
    }
    for node in &nodes {
        loop {
            assert!(
                start.elapsed() < DEADLINE,
                "node {} did not catch up",
                node.id
            );
            let dump = request(node.addr, &json!("Dump"));
            let map = dump.as_ref().map(|d| &d["Dump"]["map"]);
            if let Some(map) = map
                && acked
                    .iter()
                    .all(|(k, v)| map[k].as_str() == Some(v.as_str()))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // The example's own client (`--client`, a std TCP stream; what the README uses): a write
    // on the leader is acknowledged and applied, a write on a follower names the leader.
    let client = |addr: SocketAddr, request: &[&str]| {
        let out = Command::new(&kv)
            .arg("--client")
            .arg(addr.to_string())
            .args(request)
            .output()
            .unwrap();
        let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{request:?}: {e}: {}", String::from_utf8_lossy(&out.stdout))
        });
        (
            out.status.success(),
            reply,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let leader_node = nodes.iter().find(|n| n.id == leader).unwrap();
    let (ok, reply, _) = client(leader_node.addr, &["write", "from-client", "yes"]);
    assert!(ok && reply.get("Written").is_some(), "{reply}");
    let (ok, reply, _) = client(leader_node.addr, &["dump"]);
    assert!(ok, "{reply}");
    assert_eq!(reply["Dump"]["map"]["from-client"], "yes", "{reply}");
    let (ok, reply, _) = client(leader_node.addr, &["status"]);
    assert!(
        ok && reply["Status"]["leader"].as_u64() == Some(leader),
        "{reply}"
    );
    let follower = nodes.iter().find(|n| n.id != leader).unwrap();
    let (ok, reply, stderr) = client(follower.addr, &["write", "k", "v"]);
    assert!(!ok, "a follower's Forward exits 1: {reply}");
    assert_eq!(reply["Forward"]["leader"].as_u64(), Some(leader), "{reply}");
    assert!(stderr.contains(&format!("node {leader} is")), "{stderr}");

    // Clean stops, then every log directory passes `seglog verify`.
    for node in &mut nodes {
        node.stop();
    }
    for node in &nodes {
        let dir = node.dir.join("log").join(seglog_raft::LOG_DIR);
        let out = Command::new(&seglog)
            .arg("verify")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "seglog verify {}: {}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
