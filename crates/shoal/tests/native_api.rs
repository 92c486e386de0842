//! Real processes: the native API's contract with a running cluster. A
//! client link idle for a minute still commits; with a data node killed, a
//! new client still connects through the survivor, a restarted management
//! node is reconnected, full data nodes say why they refuse. A management node and
//! two data nodes run on 127.0.0.1 with free ports; every wait is bounded
//! and every process is killed when its test ends.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{Cluster, ExecuteEnd, LockMode, Status, Value};
use support::{eventually, free_port, signal};

/// A management node and two data nodes (one node group, two replicas),
/// started directly so a test can kill one; all killed on drop.
struct TwoNodes {
    children: Vec<(String, Child)>,
    dir: PathBuf,
    connectstring: String,
}

impl TwoNodes {
    /// Starts the cluster with `extra` appended to the `[ndbd default]`
    /// section of the sandbox configuration.
    fn start(name: &str, extra: &str) -> TwoNodes {
        let dir = std::env::temp_dir().join(format!("shoal-native-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let port = free_port();
        let text = config::sandbox_config_text(dir.to_str().expect("UTF-8"), 2, 2, port, 32 << 20)
            .replacen("[ndbd default]", &format!("[ndbd default]\n{extra}"), 1);
        let config_file = dir.join("config.ini");
        std::fs::write(&config_file, text).expect("config");
        let mut cluster = TwoNodes {
            children: Vec::new(),
            connectstring: format!("127.0.0.1:{port}"),
            dir,
        };
        let config_arg = config_file.to_str().expect("UTF-8").to_string();
        let port_arg = port.to_string();
        cluster.spawn(
            "mgmd",
            &["mgmd", "--config-file", &config_arg, "--port", &port_arg],
        );
        std::thread::sleep(Duration::from_millis(300));
        let connectstring = cluster.connectstring.clone();
        for node in ["2", "3"] {
            cluster.spawn(node, &["datad", "-c", &connectstring, "--ndb-nodeid", node]);
        }
        cluster
    }

    fn spawn(&mut self, name: &str, args: &[&str]) {
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(log)
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

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// A client once both data nodes are members of the started cluster.
    fn connect_when_started(&self) -> Cluster {
        let cluster = eventually(Duration::from_secs(30), || {
            Cluster::connect(&self.connectstring, Duration::from_secs(5)).ok()
        })
        .unwrap_or_else(|| panic!("no client connected:\n{}", self.log("2")));
        eventually(Duration::from_secs(30), || {
            let state = cluster.cluster_state(2).ok()?;
            (state.members.len() == 2).then_some(())
        })
        .expect("both data nodes start");
        cluster
    }
}

impl Drop for TwoNodes {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn table(name: &str) -> TableDef {
    TableDef::new(
        name,
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("value", ColumnType::Varbinary { length: 64 }, true),
        ],
        vec![0],
        vec![],
    )
    .expect("a valid table")
}

fn row(id: i64, value: &[u8]) -> Vec<(u16, Value)> {
    vec![(0, Value::Int(id)), (1, Value::Bytes(value.to_vec()))]
}

/// Reads row `id`'s value through a new transaction.
fn read_value(session: &mut shoal_client::Session, id: i64) -> Option<Value> {
    let accounts = session.table("accounts").ok()?;
    let mut read = session.start_transaction(None).ok()?;
    let op = read
        .read(&accounts, &[(0, Value::Int(id))], &[1], LockMode::Committed)
        .ok()?;
    session.execute(&mut read, ExecuteEnd::Commit).ok()?;
    read.row(op).ok()?.get(1).cloned()
}

/// A client that does nothing for a minute (longer than every timeout of
/// the client and the data nodes) still has its links, and its next
/// transaction commits.
#[test]
fn a_client_idle_for_a_minute_still_commits() {
    let nodes = TwoNodes::start("idle", "");
    let cluster = nodes.connect_when_started();
    cluster
        .create_table(&table("accounts"), &TableOptions::default())
        .expect("create table");
    let accounts = cluster.table("accounts").expect("table");
    let mut session = cluster.session().expect("session");
    let mut first = session.start_transaction(None).expect("start");
    first.insert(&accounts, &row(1, b"before")).expect("define");
    session
        .execute(&mut first, ExecuteEnd::Commit)
        .expect("commit before the idle minute");

    std::thread::sleep(Duration::from_secs(60));
    assert!(
        cluster.data_nodes().iter().all(|(_, connected)| *connected),
        "a link died while idle: {:?}",
        cluster.data_nodes()
    );
    for id in 2..6 {
        let mut after = session.start_transaction(None).expect("start");
        after.insert(&accounts, &row(id, b"after")).expect("define");
        session
            .execute(&mut after, ExecuteEnd::Commit)
            .unwrap_or_else(|e| panic!("commit {id} after the idle minute: {e}"));
        assert_eq!(after.status(), Status::Committed);
    }
    assert_eq!(
        read_value(&mut session, 5),
        Some(Value::Bytes(b"after".to_vec()))
    );
}

/// With one data node of the node group killed, a new client connects
/// through the survivor, reads and writes; a client that asks for the
/// dead node by name gets an error naming that node.
#[test]
fn a_new_client_connects_while_a_data_node_is_down() {
    let mut nodes = TwoNodes::start("node-down", "");
    let first = nodes.connect_when_started();
    first
        .create_table(&table("accounts"), &TableOptions::default())
        .expect("create table");
    let old = first
        .cluster_state(2)
        .expect("state")
        .member_of(3)
        .expect("node 3 is a member");
    nodes.kill("3");
    eventually(Duration::from_secs(10), || {
        let state = first.cluster_state(2).ok()?;
        (!state.contains(old)).then_some(())
    })
    .unwrap_or_else(|| panic!("node 2 did not go on alone:\n{}", nodes.log("2")));
    drop(first);

    let started = Instant::now();
    let cluster = Cluster::connect(&nodes.connectstring, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("connect with node 3 down: {e}"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "connecting took {:?}",
        started.elapsed()
    );
    assert_eq!(cluster.data_nodes(), vec![(2, true), (3, false)]);
    let accounts = cluster.table("accounts").expect("table");
    let mut session = cluster.session().expect("session");
    for id in 0..8 {
        let mut write = session.start_transaction(None).expect("start");
        write.insert(&accounts, &row(id, b"alone")).expect("define");
        session
            .execute(&mut write, ExecuteEnd::Commit)
            .unwrap_or_else(|e| panic!("insert {id} on the survivor: {e}"));
    }
    assert_eq!(
        read_value(&mut session, 7),
        Some(Value::Bytes(b"alone".to_vec()))
    );
    let error = cluster.cluster_state(3).expect_err("node 3 is down");
    assert!(error.message.contains("data node 3"), "{error}");
}

/// A session dropped with an uncommitted update leaves nothing behind: the
/// next session on the connection takes its mailbox but not its
/// transaction ids, so its read-only commit cannot commit the update, and
/// the dropped transaction's locks are freed at once.
#[test]
fn a_dropped_session_rolls_back_and_its_ids_are_not_reused() {
    let nodes = TwoNodes::start("dropped", "");
    let cluster = nodes.connect_when_started();
    // Both data nodes run on this host: the client reaches them through
    // their local sockets, not loopback TCP.
    #[cfg(target_os = "linux")]
    assert_eq!(cluster.local_links(), vec![2, 3]);
    cluster
        .create_table(&table("accounts"), &TableOptions::default())
        .expect("create table");
    let accounts = cluster.table("accounts").expect("table");
    let mut session = cluster.session().expect("session");
    let mut insert = session.start_transaction(None).expect("start");
    insert
        .insert(&accounts, &row(1, b"committed"))
        .expect("define");
    session
        .execute(&mut insert, ExecuteEnd::Commit)
        .expect("insert");
    drop(insert);
    drop(session);

    for _ in 0..3 {
        let mut dropped = cluster.session().expect("session");
        let mut update = dropped.transaction_at(2);
        update
            .update(
                &accounts,
                &[(0, Value::Int(1))],
                &[(1, Value::Bytes(b"uncommitted".to_vec()))],
            )
            .expect("define");
        dropped
            .execute(&mut update, ExecuteEnd::NoCommit)
            .expect("update without commit");
        drop(dropped);
        drop(update);

        let mut next = cluster.session().expect("session");
        let mut read_only = next.transaction_at(2);
        let op = read_only
            .read(&accounts, &[(0, Value::Int(1))], &[1], LockMode::Committed)
            .expect("define");
        next.execute(&mut read_only, ExecuteEnd::Commit)
            .expect("read-only commit");
        assert_eq!(
            read_only.row(op).expect("row").get(1),
            Some(&Value::Bytes(b"committed".to_vec()))
        );
        // The row's lock is free: an exclusive read does not wait.
        let mut locking = next.transaction_at(3);
        locking
            .read(&accounts, &[(0, Value::Int(1))], &[1], LockMode::Exclusive)
            .expect("define");
        next.execute(&mut locking, ExecuteEnd::Commit)
            .unwrap_or_else(|e| panic!("the dropped transaction still holds the row: {e}"));
        drop(next);
    }
    let mut session = cluster.session().expect("session");
    assert_eq!(
        read_value(&mut session, 1),
        Some(Value::Bytes(b"committed".to_vec()))
    );
}

/// The management node restarts (killed, started again on the same port
/// and DataDir) under a connected client: the client reopens its
/// management connection with the same API node id, and what needs the
/// management node works again — here, the address of a data node that
/// restarted meanwhile (on a new port), so the client reconnects to it —
/// and a table is created.
#[test]
fn the_client_reopens_its_management_connection_after_a_restart() {
    let mut nodes = TwoNodes::start("mgmd-restart", "");
    let cluster = nodes.connect_when_started();
    let node_id = cluster.node_id();
    cluster
        .create_table(&table("accounts"), &TableOptions::default())
        .expect("create table");

    nodes.kill("mgmd");
    eventually(Duration::from_secs(10), || {
        (!cluster.management_connected()).then_some(())
    })
    .expect("the client notices the management node is gone");
    let config_arg = nodes.dir.join("config.ini");
    let config_arg = config_arg.to_str().expect("UTF-8").to_string();
    let port_arg = nodes
        .connectstring
        .rsplit(':')
        .next()
        .expect("a port")
        .to_string();
    nodes.spawn(
        "mgmd",
        &["mgmd", "--config-file", &config_arg, "--port", &port_arg],
    );
    eventually(Duration::from_secs(20), || {
        cluster.management_connected().then_some(())
    })
    .unwrap_or_else(|| panic!("the management connection was not reopened"));
    assert_eq!(cluster.node_id(), node_id, "the API node id changed");

    // Data node 3 restarts; it listens on a new port that only the
    // management node can tell the client.
    let old = cluster
        .cluster_state(2)
        .expect("state")
        .member_of(3)
        .expect("node 3 is a member");
    nodes.kill("3");
    eventually(Duration::from_secs(15), || {
        let state = cluster.cluster_state(2).ok()?;
        (!state.contains(old)).then_some(())
    })
    .unwrap_or_else(|| panic!("node 2 did not go on alone:\n{}", nodes.log("2")));
    let connectstring = nodes.connectstring.clone();
    nodes.spawn("3", &["datad", "-c", &connectstring, "--ndb-nodeid", "3"]);
    eventually(Duration::from_secs(40), || {
        let state = cluster.cluster_state(3).ok()?;
        (state.members.len() == 2).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the client did not reconnect to the restarted node 3: {:?}\n{}",
            cluster.cluster_state(3).err(),
            nodes.log("3")
        )
    });
    cluster
        .create_table(&table("after_restart"), &TableOptions::default())
        .expect("create a table after the management node restarted");
    let after = cluster.table("after_restart").expect("table");
    let mut session = cluster.session().expect("session");
    let mut write = session.transaction_at(3);
    write.insert(&after, &row(1, b"three")).expect("define");
    session
        .execute(&mut write, ExecuteEnd::Commit)
        .expect("commit through the restarted node 3");
}

/// Data nodes whose connection slots are taken (by connections that said
/// Hello) refuse a new client's connections; `Cluster::connect` reports
/// the refusal with its codes (5019, MySQL's 1040 "Too many connections")
/// and names the data node, rather than a generic failure to connect.
#[test]
fn a_client_refused_by_full_data_nodes_is_told_why() {
    use protocol::{Message, NodeRole};
    use runtime::blocking::BlockingConnection;
    let nodes = TwoNodes::start("refused", "");
    let first = nodes.connect_when_started();
    // The data nodes' addresses, as the management node hands them out.
    let mut management = BlockingConnection::connect(
        &nodes.connectstring,
        0,
        NodeRole::Api,
        Duration::from_secs(5),
    )
    .expect("management node");
    let allocated = management
        .request(
            Message::AllocateNodeId {
                role: NodeRole::Api,
                requested: None,
                listen_port: 0,
            },
            Duration::from_secs(5),
            |m| matches!(m, Message::NodeIdAllocated { .. }),
        )
        .expect("an API node id");
    let Message::NodeIdAllocated { secret, .. } = allocated else {
        panic!("expected NodeIdAllocated, got {allocated:?}");
    };
    let addresses = eventually(Duration::from_secs(5), || {
        match management.receive(Duration::from_millis(200)).ok()?? {
            Message::Addresses { entries } if entries.len() == 2 => Some(entries),
            _ => None,
        }
    })
    .expect("both data nodes' addresses");
    // Every slot of both data nodes taken: each holds one per configured
    // node (12 in the sandbox configuration), for peers that proved their
    // claim with the cluster secret (a Hello alone takes no slot).
    let mut holders = Vec::new();
    for entry in &addresses {
        let address = format!("{}:{}", entry.host, entry.port);
        for claimed in 0..14u8 {
            let mut holder = BlockingConnection::connect(
                &address,
                200 + claimed,
                NodeRole::Api,
                Duration::from_secs(5),
            )
            .expect("a connection");
            // A data node refuses the holders beyond its slots instead of
            // answering their proof: only those it accepted hold a slot.
            if holder.prove(&secret, Duration::from_secs(5)).is_ok() {
                holders.push(holder);
            }
        }
    }
    assert!(
        holders.len() < 28,
        "the data nodes accepted every holder: {} of 28",
        holders.len()
    );
    // The holders heartbeat as live API nodes do: a data node closes the
    // connection of an API node silent for MaxMissedHeartbeats intervals.
    let keep_holding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let holding = std::sync::Arc::clone(&keep_holding);
    let keeper = std::thread::spawn(move || {
        while holding.load(std::sync::atomic::Ordering::Relaxed) {
            for holder in &mut holders {
                let heartbeat = Message::Heartbeat {
                    generation: 0,
                    version: 0,
                    free_pages: None,
                    sent_at_ms: 0,
                };
                let _ = holder.send(&[heartbeat]);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        holders
    });
    std::thread::sleep(Duration::from_millis(500));
    let error = match Cluster::connect(&nodes.connectstring, Duration::from_secs(3)) {
        Ok(_) => panic!("connected to data nodes whose slots are all taken"),
        Err(error) => error,
    };
    assert_eq!((error.ndb_code, error.mysql_code), (5019, 1040), "{error}");
    assert!(error.message.contains("data node"), "{error}");
    assert!(error.message.contains("refused"), "{error}");
    keep_holding.store(false, std::sync::atomic::Ordering::Relaxed);
    drop(keeper.join().expect("the keeper thread"));
    drop(first);
}
