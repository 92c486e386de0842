//! Strangers against a running cluster: connections that announce 32 MiB
//! frames and send them slowly, peers that say Hello and then do the same,
//! and thousands of idle connections, to a data node and to the management
//! node at once. Afterwards every node is still up and in the cluster, its
//! resident memory grew by no more than its receive budget, and a
//! native-API client still connects and commits. Loopback only, bounded in
//! time, every process stopped.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use protocol::{Message, NodeRole, encode_frame};
use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{ExecuteEnd, LockMode, Status, Value};
use support::Sandbox;

/// Strangers announcing a 32 MiB frame, per target node.
const SLOW_FRAMES: usize = 100;
/// Payload bytes each of them sends: before the limits, a data node held
/// all of it (100 × 2 MiB), far over the budget checked below.
const SLOW_PAYLOAD_BYTES: usize = 2 << 20;
/// Idle connections, per target node: more than either node had slots.
const IDLE_CONNECTIONS: usize = 2_000;
/// Resident memory a node may gain: its receive budget (at least one
/// 32 MiB frame; ReceiveBufferMemory for each configured node is 2 MiB × 9
/// here) counted by capacity, up to twice that while a growing buffer is
/// copied and the allocator keeps what was freed, and each connection's
/// own room (measured: 66 to 78 MiB). Before the limits, the slow senders
/// alone made a node hold 100 × 2 MiB.
const RESIDENT_GROWTH_BYTES_MAX: u64 = 128 << 20;

/// VmRSS of `pid`, in bytes.
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process alive");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number");
    kib * 1024
}

/// The TCP ports `pid` listens on (its sockets matched against
/// /proc/net/tcp), so the test needs no help from the node to find them.
fn listening_ports(pid: u32) -> Vec<u16> {
    let mut inodes = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .flatten()
    {
        if let Ok(target) = std::fs::read_link(entry.path()) {
            let target = target.to_string_lossy().to_string();
            if let Some(inode) = target
                .strip_prefix("socket:[")
                .and_then(|t| t.strip_suffix(']'))
            {
                inodes.push(inode.to_string());
            }
        }
    }
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let mut ports = Vec::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // local_address, ..., st (0A is LISTEN), ..., inode
        if fields.len() > 9 && fields[3] == "0A" && inodes.iter().any(|i| i == fields[9]) {
            let port = fields[1].rsplit(':').next().expect("port");
            ports.push(u16::from_str_radix(port, 16).expect("hex port"));
        }
    }
    ports
}

/// A frame header announcing `payload_bytes` (magic, version, one message,
/// length, any checksum): the payload is never completed.
fn header_announcing(payload_bytes: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_frame(&[Message::Stop], &mut bytes);
    bytes.truncate(16);
    bytes[8..12].copy_from_slice(&payload_bytes.to_le_bytes());
    bytes
}

fn hello(node: u8) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_frame(
        &[Message::Hello {
            node,
            incarnation: 1,
            role: NodeRole::Api,
            nonce: [7; 16],
        }],
        &mut bytes,
    );
    bytes
}

/// Opens `count` connections to `port` of process `pid` sending `first`,
/// then trickles `payload_bytes` of payload on each in 64 KiB pieces,
/// round robin. Returns how many of them the node closed, and its
/// resident memory while they were all still open on this side.
fn slow_frames(
    pid: u32,
    port: u16,
    count: usize,
    first: impl Fn(usize) -> Vec<u8>,
    payload_bytes: usize,
) -> (usize, u64) {
    let mut streams = Vec::new();
    for index in 0..count {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_write_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let _ = stream.write_all(&first(index));
        streams.push(Some(stream));
    }
    let piece = vec![0x5a_u8; 64 * 1024];
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while sent < payload_bytes && Instant::now() < deadline {
        for slot in &mut streams {
            if let Some(stream) = slot
                && stream.write_all(&piece).is_err()
            {
                *slot = None;
            }
        }
        sent += piece.len();
    }
    // Let the node read what is in flight before looking at its memory.
    std::thread::sleep(Duration::from_millis(300));
    let resident = resident_bytes(pid);
    // A closed connection shows as end of stream (or a reset) on read.
    let mut closed = 0;
    for slot in &mut streams {
        let Some(stream) = slot else {
            closed += 1;
            continue;
        };
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) if stream.peer_addr().is_err() => {
                    closed += 1;
                    break;
                }
                Ok(0) => {
                    closed += 1;
                    break;
                }
                Ok(_) => continue,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    break;
                }
                Err(_) => {
                    closed += 1;
                    break;
                }
            }
        }
    }
    (closed, resident)
}

fn table() -> TableDef {
    TableDef::new(
        "after_strangers",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("value", ColumnType::Varbinary { length: 64 }, true),
        ],
        vec![0],
        vec![],
    )
    .expect("a valid table")
}

#[test]
fn strangers_cannot_take_the_memory_or_the_slots_of_a_cluster() {
    let started = Instant::now();
    let sandbox = Sandbox::start("strangers", 2, 2);
    sandbox.wait_for_line("Cluster ready", Duration::from_secs(60));
    let mgmd = sandbox.processes(" mgmd ");
    let datad = sandbox.processes(" datad ");
    assert_eq!(mgmd.len(), 1, "one management node");
    assert_eq!(datad.len(), 2, "two data nodes");
    let data_port = *listening_ports(datad[0])
        .first()
        .expect("the data node listens");
    let targets = [(mgmd[0], sandbox.mgm_port), (datad[0], data_port)];
    let resident_before: Vec<u64> = targets
        .iter()
        .map(|(pid, _)| resident_bytes(*pid))
        .collect();

    let mut resident_peak = resident_before.clone();
    for (index, (pid, port)) in targets.into_iter().enumerate() {
        // Before a Hello only small frames: every announcer is closed.
        let (closed, resident) = slow_frames(
            pid,
            port,
            SLOW_FRAMES,
            |_| header_announcing(32 << 20),
            SLOW_PAYLOAD_BYTES,
        );
        resident_peak[index] = resident_peak[index].max(resident);
        assert_eq!(
            closed, SLOW_FRAMES,
            "node {pid}: strangers announcing 32 MiB are closed"
        );
        // After a Hello large frames are allowed, but all of them together
        // share one budget: some of these four are closed when it runs out.
        // (Distinct node ids: a data node replaces a node's older connection.)
        let first = |index: usize| {
            let mut bytes = hello(200 + index as u8);
            bytes.extend_from_slice(&header_announcing(32 << 20));
            bytes
        };
        let (closed, resident) = slow_frames(pid, port, 4, first, 24 << 20);
        resident_peak[index] = resident_peak[index].max(resident);
        assert!(
            closed >= 1,
            "node {pid}: the receive budget closed none of four 24 MiB senders"
        );
    }

    // Idle strangers: more than every slot the nodes had, kept open.
    let mut idle = Vec::new();
    for (_, port) in targets {
        for _ in 0..IDLE_CONNECTIONS {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
                idle.push(stream);
            }
        }
    }
    assert!(
        idle.len() >= IDLE_CONNECTIONS,
        "opened {} idle connections",
        idle.len()
    );

    // With the strangers still connected, the cluster answers as before.
    assert_eq!(
        sandbox.processes(" mgmd "),
        mgmd,
        "the management node is up"
    );
    assert_eq!(
        sandbox.processes(" datad "),
        datad,
        "both data nodes are up"
    );
    let (ok, show) = sandbox.mgm("SHOW");
    assert!(ok, "shoal mgm -e SHOW failed:\n{show}");
    assert!(show.contains("[ndbd(NDB)]\t2 node(s)"), "{show}");
    assert_eq!(
        show.matches("Nodegroup: 0").count(),
        2,
        "both data nodes in the cluster:\n{show}"
    );
    let cluster = shoal_client::Cluster::connect(&sandbox.connectstring(), Duration::from_secs(20))
        .expect("a client connects while strangers hold connections");
    cluster
        .create_table(&table(), &TableOptions::default())
        .expect("create table");
    let accounts = cluster.table("after_strangers").expect("table");
    let mut session = cluster.session().expect("session");
    let mut insert = session.start_transaction(None).expect("start");
    insert
        .insert(
            &accounts,
            &[
                (0u16, Value::Int(1)),
                (1u16, Value::Bytes(b"still here".to_vec())),
            ],
        )
        .expect("define");
    session
        .execute(&mut insert, ExecuteEnd::Commit)
        .expect("commit");
    assert_eq!(insert.status(), Status::Committed);
    let mut read = session.start_transaction(None).expect("start");
    let op = read
        .read(
            &accounts,
            &[(0u16, Value::Int(1))],
            &[1],
            LockMode::Committed,
        )
        .expect("define");
    session
        .execute(&mut read, ExecuteEnd::Commit)
        .expect("read");
    assert_eq!(
        read.row(op).expect("row").get(1),
        Some(&Value::Bytes(b"still here".to_vec()))
    );

    for (index, (pid, _)) in targets.iter().enumerate() {
        let now = resident_bytes(*pid);
        let peak = resident_peak[index].max(now);
        let growth = peak.saturating_sub(resident_before[index]);
        eprintln!(
            "node pid {pid}: resident {} MiB before, {} MiB after the strangers",
            resident_before[index] >> 20,
            peak >> 20
        );
        assert!(
            growth <= RESIDENT_GROWTH_BYTES_MAX,
            "pid {pid} grew by {} MiB",
            growth >> 20
        );
    }
    drop(idle);

    // A connection that never says Hello is closed after the
    // identification deadline (5 s), by either node (a data node says its
    // own Hello first, which is read past).
    for (pid, port) in targets {
        let mut silent = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        silent
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let opened = Instant::now();
        let mut buffer = [0u8; 256];
        let closed = loop {
            match silent.read(&mut buffer) {
                Ok(0) => break true,
                Ok(_) => continue,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    break false;
                }
                Err(_) => break true,
            }
        };
        let waited = opened.elapsed();
        assert!(closed, "node {pid} kept a silent connection for {waited:?}");
        assert!(
            waited >= Duration::from_secs(4) && waited < Duration::from_secs(9),
            "node {pid} closed a silent connection after {waited:?}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "bounded in time"
    );
}

/// Peers that say Hello to the management node and stay take its
/// identified slots (the configured nodes and 64 clients); the next client
/// is refused with a message that says so, not a closed connection, and
/// is served again once they leave.
#[test]
fn a_management_node_full_of_identified_peers_says_so() {
    let sandbox = Sandbox::start("mgm-full", 2, 2);
    sandbox.wait_for_line("Cluster ready", Duration::from_secs(60));
    let mut crowd = Vec::new();
    for _ in 0..200 {
        let mut stream = TcpStream::connect(("127.0.0.1", sandbox.mgm_port)).expect("connect");
        stream.write_all(&hello(0)).expect("hello");
        crowd.push(stream);
        // Paced, so each says Hello before the next arrives and none is
        // closed as an unidentified stranger.
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(300));
    let (ok, text) = sandbox.mgm("SHOW");
    assert!(!ok, "SHOW succeeded on a full management node:\n{text}");
    assert!(
        text.contains("already serves") && text.contains("identified connections"),
        "the refusal says why:\n{text}"
    );
    drop(crowd);
    std::thread::sleep(Duration::from_millis(500));
    let (ok, show) = sandbox.mgm("SHOW");
    assert!(ok, "shoal mgm -e SHOW failed once the crowd left:\n{show}");
}
