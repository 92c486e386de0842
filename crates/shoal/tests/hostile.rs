//! Real processes against hostile or broken peers: a management node that
//! accepts connections and never answers must not stall the data nodes'
//! event loops, and a stranger's `Hello` claiming a data node's id must
//! neither take over that node's connection nor get anyone restarted; a
//! stopped data node is removed within seconds and rejoins once resumed.
//! Everything runs on 127.0.0.1 with free ports, every wait is bounded,
//! and every process is stopped.

mod support;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use protocol::{FrameDecoder, Message, NodeRole, encode_frame};
use shoal_client::Cluster;
use support::{eventually, free_port, scratch_dir, signal};

/// Processes started directly, killed on drop.
struct Processes {
    children: Vec<(String, Child)>,
}

impl Processes {
    fn spawn(&mut self, name: &str, args: &[&str], log: &Path) {
        let file = std::fs::File::create(log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("shoal starts");
        self.children.push((name.to_string(), child));
    }

    fn kill(&mut self, name: &str) {
        let index = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .expect("a started process");
        let (_, mut child) = self.children.remove(index);
        assert!(signal(child.id(), rustix::process::Signal::KILL));
        let _ = child.wait();
    }

    /// The process id of a started process.
    fn pid(&self, name: &str) -> u32 {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, child)| child.id())
            .expect("a started process")
    }

    /// Whether every process is still running.
    fn all_running(&mut self) -> bool {
        self.children
            .iter_mut()
            .all(|(_, child)| matches!(child.try_wait(), Ok(None)))
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A management node and two data nodes started by hand, formed.
struct TwoNodeCluster {
    dir: PathBuf,
    port: u16,
    connectstring: String,
    config_file: String,
    processes: Processes,
    client: Cluster,
}

impl TwoNodeCluster {
    fn start(name: &str) -> TwoNodeCluster {
        let dir = scratch_dir(name);
        let port = free_port();
        let text = config::sandbox_config_text(dir.to_str().expect("UTF-8"), 2, 2, port, 32 << 20);
        let config_file = dir.join("config.ini");
        std::fs::write(&config_file, text).expect("config");
        let config_arg = config_file.to_str().expect("UTF-8").to_string();
        let port_arg = port.to_string();
        let connectstring = format!("127.0.0.1:{port}");
        let mut processes = Processes {
            children: Vec::new(),
        };
        let mgmd_args = ["mgmd", "--config-file", &config_arg, "--port", &port_arg];
        processes.spawn("mgmd", &mgmd_args, &dir.join("mgmd.log"));
        std::thread::sleep(Duration::from_millis(300));
        for node in ["2", "3"] {
            // Without an angel the process is the data node itself, so a
            // signal (SIGSTOP, SIGKILL) reaches the node, not its angel.
            let args = [
                "datad",
                "-c",
                &connectstring,
                "--ndb-nodeid",
                node,
                "--no-angel",
            ];
            processes.spawn(node, &args, &dir.join(format!("datad-{node}.log")));
        }
        let client = eventually(Duration::from_secs(20), || {
            Cluster::connect(&connectstring, Duration::from_secs(5)).ok()
        })
        .expect("the cluster accepts an API node");
        eventually(Duration::from_secs(20), || {
            let state = client.cluster_state(2).ok()?;
            (state.members.len() == 2).then_some(())
        })
        .expect("both data nodes start");
        TwoNodeCluster {
            dir,
            port,
            connectstring,
            config_file: config_arg,
            processes,
            client,
        }
    }

    /// Starts the management node (again) and connects a new API node.
    fn restart_management(&mut self) -> Cluster {
        let port = self.port.to_string();
        let args = ["mgmd", "--config-file", &self.config_file, "--port", &port];
        let log = self.dir.join("mgmd-again.log");
        self.processes.spawn("mgmd", &args, &log);
        eventually(Duration::from_secs(20), || {
            Cluster::connect(&self.connectstring, Duration::from_secs(5)).ok()
        })
        .expect("the restarted management node accepts an API node")
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    fn logs(&self) -> String {
        format!(
            "datad 2:\n{}\ndatad 3:\n{}",
            self.log("datad-2.log"),
            self.log("datad-3.log")
        )
    }
}

impl Drop for TwoNodeCluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Accepts every connection on `port` and never says a word; the
/// connections stay open until the returned flag is set.
fn silent_listener(port: u16) -> Arc<AtomicBool> {
    let listener = eventually(Duration::from_secs(10), || {
        TcpListener::bind(("127.0.0.1", port)).ok()
    })
    .expect("the management node's port is free again");
    listener.set_nonblocking(true).expect("non-blocking");
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        let mut scratch = [0u8; 4096];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((stream, _)) = listener.accept() {
                let _ = stream.set_nonblocking(true);
                held.push(stream);
            }
            // Read and drop what arrives, so senders never block on us.
            for stream in &mut held {
                let _ = stream.read(&mut scratch);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    done
}

/// Issue 10, item 10: `datad` reconnected to the management node with a
/// blocking 5 s request inside its event loop, so a management node that
/// accepted and never answered stalled both data nodes past their
/// heartbeats: they excluded each other and restarted empty.
#[test]
fn a_silent_management_node_does_not_stall_the_data_nodes() {
    let mut cluster = TwoNodeCluster::start("silent-mgmd");
    let before = cluster.client.cluster_state(2).expect("state");
    cluster.processes.kill("mgmd");
    let stop = silent_listener(cluster.port);
    // Long enough for several reconnect attempts, each given up after its
    // deadline (5 s), and for many heartbeat intervals.
    std::thread::sleep(Duration::from_secs(12));
    stop.store(true, Ordering::Relaxed);
    let logs = cluster.logs();
    assert!(cluster.processes.all_running(), "{logs}");
    assert!(
        !logs.contains("excluded"),
        "a data node was excluded:\n{logs}"
    );
    // The data nodes reconnect to a real management node and are still
    // the incarnations that formed the cluster, with clients served.
    std::thread::sleep(Duration::from_millis(200));
    let client = cluster.restart_management();
    for node in [2, 3] {
        let after = eventually(Duration::from_secs(10), || client.cluster_state(node).ok())
            .unwrap_or_else(|| panic!("node {node} does not answer:\n{}", cluster.logs()));
        assert_eq!(after.members, before.members, "{}", cluster.logs());
    }
}

/// Issue 11, item 4: a stopped data node (SIGSTOP: its sockets stay open,
/// so only its silence tells) is removed within a few seconds of
/// heartbeats (250 ms x 6 by default, plus the arbitrator's vote), not
/// after TCP gives up; once it runs again (SIGCONT) it learns it was
/// removed, restarts as a new incarnation and rejoins, because the
/// survivor closed the silent connection and the connections are dialed
/// afresh. Meanwhile the management node closed its silent connection, so
/// the node id is free for the new incarnation.
#[test]
fn a_stopped_data_node_is_removed_in_seconds_and_rejoins_when_resumed() {
    let mut cluster = TwoNodeCluster::start("stopped-datad");
    let before = cluster.client.cluster_state(2).expect("state");
    assert_eq!(before.members.len(), 2);
    let stopped = cluster.processes.pid("3");
    assert!(signal(stopped, rustix::process::Signal::STOP));
    let started = Instant::now();
    let removed = eventually(Duration::from_secs(15), || {
        let state = cluster.client.cluster_state(2).ok()?;
        (state.members.iter().all(|m| m.node != 3)).then_some(())
    });
    let took = started.elapsed();
    assert!(signal(stopped, rustix::process::Signal::CONT));
    removed.unwrap_or_else(|| {
        panic!(
            "node 3 was not removed:
{}",
            cluster.logs()
        )
    });
    // 1.5-1.75 s of silence, then one round of agreement; the bound leaves
    // room for a loaded machine but not for TCP's own timeouts.
    assert!(
        took < Duration::from_secs(8),
        "removal took {took:?}:
{}",
        cluster.logs()
    );
    let rejoined = eventually(Duration::from_secs(30), || {
        let state = cluster.client.cluster_state(2).ok()?;
        (state.members.len() == 2).then_some(state)
    })
    .unwrap_or_else(|| {
        panic!(
            "node 3 did not rejoin:
{}",
            cluster.logs()
        )
    });
    let newer = rejoined
        .members
        .iter()
        .find(|m| m.node == 3)
        .expect("node 3 is a member");
    let older = before
        .members
        .iter()
        .find(|m| m.node == 3)
        .expect("node 3 was a member");
    assert!(newer.incarnation > older.incarnation, "{}", cluster.logs());
    // Nobody exited: the node restarted in its own process.
    assert!(cluster.processes.all_running(), "{}", cluster.logs());
}

/// The 31-byte frame of the first protocol version's `Hello` (no nonce):
/// claims data node `node` with `incarnation`, as the stranger sent.
fn legacy_hello(node: u8, incarnation: u64) -> Vec<u8> {
    let mut message = vec![1, node];
    message.extend_from_slice(&incarnation.to_le_bytes());
    message.push(NodeRole::Data.wire_id());
    let mut payload = (message.len() as u32).to_le_bytes().to_vec();
    payload.extend_from_slice(&message);
    let mut frame = b"SHOL".to_vec();
    frame.extend_from_slice(&1u16.to_le_bytes());
    frame.extend_from_slice(&1u16.to_le_bytes());
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    frame.extend_from_slice(&payload);
    assert_eq!(frame.len(), 31);
    frame
}

/// A data node's TCP port, from its log line "listening on 127.0.0.1:N,".
fn data_node_port(log: &str) -> u16 {
    let after = log
        .split("listening on ")
        .nth(1)
        .expect("the data node logged where it listens");
    let address = after.split(',').next().expect("an address");
    address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

/// Connects to `port` as a stranger, sends `bytes`, and returns the
/// messages received until the peer closed the connection (or 3 s passed:
/// `closed` is false then).
fn stranger(port: u16, bytes: &[u8]) -> (Vec<Message>, bool) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    use std::io::Write;
    stream.write_all(bytes).expect("send");
    let mut decoder = FrameDecoder::new();
    let mut messages = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut buffer = [0u8; 65536];
    while Instant::now() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) => return (messages, true),
            Ok(n) => {
                decoder.push(&buffer[..n]);
                while let Ok(true) = decoder.next_frame(&mut messages) {}
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (messages, true),
            Err(_) => {}
        }
    }
    (messages, false)
}

/// Issue 10, item 8: a 31-byte `Hello` claiming a data node's id, sent by
/// any TCP client, replaced the real node's connection (the stranger got
/// the frames meant for it) and made the node exclude itself and restart.
/// Now a claim counts only with a proof made with the cluster secret, and
/// the old unversioned-proof frame is refused outright.
#[test]
fn a_forged_hello_takes_over_nothing_and_restarts_no_one() {
    let mut cluster = TwoNodeCluster::start("forged-hello");
    let before = cluster.client.cluster_state(2).expect("state");
    let member_3 = before.member_of(3).expect("node 3 is a member");
    let port_2 = data_node_port(&cluster.log("datad-2.log"));
    // The frame, claiming node 3 (its real incarnation and a newer
    // one), to data node 2 and to the management node.
    for incarnation in [member_3.incarnation, member_3.incarnation + 1] {
        for port in [port_2, cluster.port] {
            let (received, closed) = stranger(port, &legacy_hello(3, incarnation));
            assert!(
                closed,
                "port {port} kept talking to a stranger: {received:?}"
            );
            assert!(
                received
                    .iter()
                    .all(|m| matches!(m, Message::Hello { .. } | Message::HelloProof { .. })),
                "a stranger got {received:?}"
            );
        }
    }
    // The current format with a made-up proof.
    let mut forged = Vec::new();
    encode_frame(
        &[
            Message::Hello {
                node: 3,
                incarnation: member_3.incarnation + 1,
                role: NodeRole::Data,
                nonce: [7; 16],
            },
            Message::HelloProof { proof: [0; 32] },
        ],
        &mut forged,
    );
    let (received, closed) = stranger(port_2, &forged);
    assert!(
        closed,
        "data node 2 kept talking to a stranger: {received:?}"
    );
    assert!(
        received
            .iter()
            .all(|m| matches!(m, Message::Hello { .. } | Message::HelloProof { .. })),
        "a stranger got {received:?}"
    );
    // Well past failure detection: nobody was excluded or restarted, and
    // clients are served.
    std::thread::sleep(Duration::from_secs(3));
    let logs = cluster.logs();
    assert!(cluster.processes.all_running(), "{logs}");
    assert!(
        !logs.contains("excluded"),
        "a data node was excluded:\n{logs}"
    );
    assert!(
        !logs.contains("restarted"),
        "a data node restarted:\n{logs}"
    );
    for node in [2, 3] {
        let after = cluster
            .client
            .cluster_state(node)
            .unwrap_or_else(|e| panic!("node {node} does not answer: {e:?}\n{logs}"));
        assert_eq!(after.members, before.members, "{logs}");
    }
}
