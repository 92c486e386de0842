//! Real processes: `shoal up` supervises its management node as it does its
//! data nodes. A management node killed with SIGKILL is started again while
//! the data nodes go on serving a native-API client, and `shoal mgm` works
//! against the new one. A data node's angel (`shoal datad` without
//! `--no-angel`) restarts its killed worker unless StopOnError, never after
//! `N STOP`, gives up on a crash loop, and takes its worker with it when it
//! is killed. Loopback only, free ports, bounded waits, and every process
//! is stopped at the end.

mod support;

use std::time::Duration;

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{Cluster, ExecuteEnd, LockMode, Value};
use support::{Processes, Sandbox, alive, children_of, eventually, free_port, scratch_dir, signal};

fn table() -> TableDef {
    TableDef::new(
        "supervised",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("value", ColumnType::Int { unsigned: false }, true),
        ],
        vec![0],
        vec![],
    )
    .expect("a valid table")
}

/// Writes `value` to row `id` and reads it back, both committed.
fn write_and_read(cluster: &Cluster, id: i64, value: i64) -> Result<(), String> {
    let table = cluster.table("supervised").map_err(|e| e.to_string())?;
    let mut session = cluster.session().map_err(|e| e.to_string())?;
    let mut write = session.start_transaction(None).map_err(|e| e.to_string())?;
    write
        .write(&table, &[(0, Value::Int(id)), (1, Value::Int(value))])
        .map_err(|e| e.to_string())?;
    session
        .execute(&mut write, ExecuteEnd::Commit)
        .map_err(|e| e.to_string())?;
    let mut read = session.start_transaction(None).map_err(|e| e.to_string())?;
    let operation = read
        .read(&table, &[(0, Value::Int(id))], &[1], LockMode::Committed)
        .map_err(|e| e.to_string())?;
    session
        .execute(&mut read, ExecuteEnd::Commit)
        .map_err(|e| e.to_string())?;
    let row = read.row(operation).map_err(|e| e.to_string())?;
    match row.get(1) {
        Some(Value::Int(found)) if *found == value => Ok(()),
        other => Err(format!("row {id} reads {other:?}, not {value}")),
    }
}

#[test]
fn a_killed_management_node_is_restarted_while_the_data_nodes_serve() {
    let mut sandbox = Sandbox::start("mgmd-restart", 2, 2);
    sandbox.wait_for_line("Cluster ready", Duration::from_secs(60));
    let cluster =
        Cluster::connect(&sandbox.connectstring(), Duration::from_secs(10)).expect("connect");
    cluster
        .create_table(&table(), &TableOptions::default())
        .expect("create table");
    write_and_read(&cluster, 1, 1).expect("a write before the kill");

    let management = sandbox.processes(" mgmd ");
    assert_eq!(management.len(), 1, "one management node: {management:?}");
    assert!(signal(management[0], rustix::process::Signal::KILL));
    sandbox.wait_for_line("management node 1 exited", Duration::from_secs(5));

    // While the management node is down or restarting, the data nodes keep
    // committing the client's transactions.
    for id in 2..12 {
        write_and_read(&cluster, id, id * 10)
            .unwrap_or_else(|error| panic!("write {id} without the management node: {error}"));
    }

    sandbox.wait_for_line("management node 1 restarted", Duration::from_secs(10));
    // The new child shows its command line once it has executed.
    let restarted = eventually(Duration::from_secs(5), || {
        let pids = sandbox.processes(" mgmd ");
        (pids.len() == 1).then_some(pids)
    })
    .unwrap_or_else(|| {
        panic!(
            "not one management node again: {:?}",
            sandbox.processes(" mgmd ")
        )
    });
    assert_ne!(restarted, management, "a new process");
    let show = eventually(Duration::from_secs(20), || {
        let (ok, show) = sandbox.mgm("SHOW");
        (ok && show.matches("Nodegroup: 0").count() == 2 && !show.contains("starting"))
            .then_some(show)
    })
    .expect("SHOW answers from the restarted management node with both data nodes started");
    assert!(show.contains("[ndbd(NDB)]\t2 node(s)"), "{show}");
    write_and_read(&cluster, 20, 200).expect("a write after the restart");

    drop(cluster);
    sandbox.stop();
    let left = eventually(Duration::from_secs(5), || {
        sandbox.processes("").is_empty().then_some(())
    });
    assert!(left.is_some(), "left behind: {:?}", sandbox.processes(""));
}

/// A cluster of a management node and data nodes each started as
/// `shoal datad` with its angel, by hand (no `shoal up`), with `extra`
/// lines in `[ndbd default]`.
struct AngelCluster {
    dir: std::path::PathBuf,
    connectstring: String,
    processes: Processes,
}

impl AngelCluster {
    fn start(name: &str, nodes: u8, replicas: u8, extra: &str) -> AngelCluster {
        let dir = scratch_dir(name);
        let port = free_port();
        let text = config::sandbox_config_text(
            dir.to_str().expect("UTF-8"),
            nodes,
            replicas,
            port,
            32 << 20,
        )
        .replace("[ndbd default]\n", &format!("[ndbd default]\n{extra}"));
        let config_file = dir.join("config.ini");
        std::fs::write(&config_file, text).expect("config");
        let connectstring = format!("127.0.0.1:{port}");
        let mut processes = Processes::default();
        let config_arg = config_file.to_str().expect("UTF-8").to_string();
        let port_arg = port.to_string();
        let mgmd_args = ["mgmd", "--config-file", &config_arg, "--port", &port_arg];
        processes.spawn("mgmd", &mgmd_args, &dir.join("mgmd.log"));
        for node in 2..2 + nodes {
            let node = node.to_string();
            let args = ["datad", "-c", &connectstring, "--ndb-nodeid", &node];
            processes.spawn(&node, &args, &dir.join(format!("datad-{node}.log")));
        }
        let cluster = AngelCluster {
            dir,
            connectstring,
            processes,
        };
        cluster.wait_started(nodes);
        cluster
    }

    fn mgm(&self, command: &str) -> (bool, String) {
        support::mgm(&self.connectstring, command)
    }

    /// Waits until SHOW lists `nodes` started data nodes.
    fn wait_started(&self, nodes: u8) -> String {
        eventually(Duration::from_secs(60), || {
            let (ok, show) = self.mgm("SHOW");
            (ok && show.matches("Nodegroup: ").count() == usize::from(nodes)
                && !show.contains("starting")
                && !show.contains("not started"))
            .then_some(show)
        })
        .unwrap_or_else(|| panic!("{nodes} data nodes never started:\n{}", self.mgm("SHOW").1))
    }

    /// The worker process of data node `node` (the angel's one child).
    fn worker(&self, node: &str) -> u32 {
        let angel = self.processes.pid(node);
        eventually(Duration::from_secs(10), || match children_of(angel)[..] {
            [worker] => Some(worker),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no worker under angel {angel}:\n{}", self.log(node)))
    }

    fn log(&self, node: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("datad-{node}.log"))).unwrap_or_default()
    }

    /// Waits until the log of `node` contains `text` `count` times.
    fn wait_log(&self, node: &str, text: &str, count: usize) {
        eventually(Duration::from_secs(30), || {
            (self.log(node).matches(text).count() >= count).then_some(())
        })
        .unwrap_or_else(|| panic!("{text:?} not {count} times in:\n{}", self.log(node)));
    }

    /// Waits for the angel of `node` to exit, and returns its code.
    fn angel_exit(&mut self, node: &str) -> Option<i32> {
        let status = eventually(Duration::from_secs(30), || self.processes.try_wait(node))
            .unwrap_or_else(|| panic!("the angel of {node} did not exit:\n{}", self.log(node)));
        status.code()
    }
}

impl Drop for AngelCluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn an_angel_restarts_a_killed_worker_which_rejoins_and_n_stop_leaves_it_down() {
    let mut cluster = AngelCluster::start("angel-restart", 2, 2, "StopOnError=0\n");
    let client =
        Cluster::connect(&cluster.connectstring, Duration::from_secs(10)).expect("connect");
    client
        .create_table(&table(), &TableOptions::default())
        .expect("create table");
    write_and_read(&client, 1, 1).expect("a write before the kill");

    let worker = cluster.worker("3");
    cluster.wait_log("3", "reported phase=started", 1);
    assert!(signal(worker, rustix::process::Signal::KILL));
    cluster.wait_log("3", "ended (signal: 9 (SIGKILL))", 1);
    let restarted = eventually(Duration::from_secs(10), || {
        let now = cluster.worker("3");
        (now != worker).then_some(now)
    })
    .expect("a new worker");
    assert!(!alive(worker), "the killed worker is gone");
    // The new worker rejoins: SHOW lists both data nodes started again, and
    // the cluster still commits.
    cluster.wait_log("3", "reported phase=started", 2);
    cluster.wait_started(2);
    for id in 2..6 {
        write_and_read(&client, id, id * 10)
            .unwrap_or_else(|error| panic!("write {id} after the restart: {error}"));
    }

    // N STOP: the worker exits 0, and the angel with it; nothing restarts.
    let (ok, stop) = cluster.mgm("3 STOP");
    assert!(ok, "{stop}");
    assert!(stop.contains("Node 3: Node shutdown completed"), "{stop}");
    assert_eq!(cluster.angel_exit("3"), Some(0), "{}", cluster.log("3"));
    assert!(!alive(restarted));
    assert!(
        cluster.log("3").contains("stopped on purpose"),
        "{}",
        cluster.log("3")
    );
    // A write routed while node 3's removal was being agreed is aborted
    // with 4010, a temporary error an application retries.
    let mut last_error = String::new();
    eventually(Duration::from_secs(10), || {
        write_and_read(&client, 10, 100)
            .map_err(|error| last_error = error)
            .ok()
    })
    .unwrap_or_else(|| panic!("node 2 serves alone: {last_error}"));
    drop(client);

    // SIGKILL of the angel takes its worker with it.
    let worker = cluster.worker("2");
    cluster.processes.kill("2");
    let gone = eventually(Duration::from_secs(5), || (!alive(worker)).then_some(()));
    assert!(gone.is_some(), "worker {worker} outlived its angel");
}

#[test]
fn with_stop_on_error_a_killed_worker_stays_down() {
    // StopOnError is not set: NDB's default (1) applies.
    let mut cluster = AngelCluster::start("angel-stop-on-error", 1, 1, "");
    let worker = cluster.worker("2");
    cluster.wait_log("2", "reported stop_on_error=1", 1);
    assert!(signal(worker, rustix::process::Signal::KILL));
    assert_eq!(cluster.angel_exit("2"), Some(1));
    let log = cluster.log("2");
    assert!(log.contains("StopOnError is set"), "{log}");
    assert_eq!(log.matches("started the data node").count(), 1, "{log}");
}

#[test]
fn an_angel_gives_up_on_a_crash_loop_after_its_restarts_per_minute() {
    let mut cluster = AngelCluster::start(
        "angel-crash-loop",
        1,
        1,
        "StopOnError=0\nMaxStartFailRetries=0\n",
    );
    // Five restarts are allowed within a minute; the sixth crash ends it.
    for round in 1..=6 {
        cluster.wait_log("2", "reported stop_on_error=0", round);
        let worker = cluster.worker("2");
        assert!(signal(worker, rustix::process::Signal::KILL));
        if round < 6 {
            cluster.wait_log("2", "ended (signal: 9 (SIGKILL)); starting it again", round);
        }
    }
    assert_eq!(cluster.angel_exit("2"), Some(1));
    let log = cluster.log("2");
    assert!(log.contains("restarted 5 times within 60 s"), "{log}");
    assert_eq!(log.matches("started the data node").count(), 6, "{log}");
}

#[test]
fn n_restart_brings_the_node_back_and_restart_n_waits_for_start() {
    // StopOnError stays at NDB's default: a restart someone asked for is
    // not a crash.
    let mut cluster = AngelCluster::start("angel-mgm-restart", 2, 2, "");
    let first = cluster.worker("3");
    let (ok, restart) = cluster.mgm("3 RESTART");
    assert!(ok, "{restart}");
    assert!(
        restart.contains("Node 3: Node shutdown completed, restarting.\nNode 3 is being restarted"),
        "{restart}"
    );
    let second = eventually(Duration::from_secs(10), || {
        let now = cluster.worker("3");
        (now != first).then_some(now)
    })
    .expect("a new worker after RESTART");
    cluster.wait_log("3", "reported phase=started", 2);
    cluster.wait_started(2);

    // -n: the angel holds the node, SHOW says so, START releases it.
    let (ok, restart) = cluster.mgm("3 RESTART -n");
    assert!(ok, "{restart}");
    assert!(restart.contains("restarting, no start."), "{restart}");
    let show = eventually(Duration::from_secs(10), || {
        let (ok, show) = cluster.mgm("SHOW");
        (ok && show.contains(", not started, Nodegroup: 0)")).then_some(show)
    })
    .unwrap_or_else(|| {
        panic!(
            "node 3 never showed as not started:\n{}",
            cluster.mgm("SHOW").1
        )
    });
    assert!(show.contains("id=3\t@127.0.0.1"), "{show}");
    assert!(!alive(second), "the worker is gone while the node waits");
    assert!(children_of(cluster.processes.pid("3")).is_empty());
    let (ok, status) = cluster.mgm("3 STATUS");
    assert!(ok && status.contains("Node 3: not started"), "{status}");
    // Another START or RESTART of a started node is refused.
    let (ok, refused) = cluster.mgm("2 START");
    assert!(
        !ok && refused.contains("Node 2: is already started"),
        "{refused}"
    );

    let (ok, start) = cluster.mgm("3 START");
    assert!(ok, "{start}");
    assert!(
        start.contains("Database node 3 is being started."),
        "{start}"
    );
    cluster.wait_log("3", "START received", 1);
    cluster.wait_log("3", "reported phase=started", 3);
    cluster.wait_started(2);
    let mgmd_log = std::fs::read_to_string(cluster.dir.join("mgmd.log")).unwrap_or_default();
    for line in [
        "Node 3: Node shutdown completed, restarting",
        "Node 3: Node shutdown completed, restarting, no start",
        "Node 3: not started, waiting for START",
        "Node 3: Start initiated",
        "Node 3: data node started",
    ] {
        assert!(
            mgmd_log.contains(line),
            "{line:?} not in the cluster log:\n{mgmd_log}"
        );
    }
    assert_eq!(
        cluster.processes.try_wait("3"),
        None,
        "the angel of node 3 still runs"
    );

    // N STOP of a node waiting for START: its angel exits, nothing starts.
    let (ok, restart) = cluster.mgm("3 RESTART -n");
    assert!(ok, "{restart}");
    cluster.wait_log("3", "reported phase=restarting, waiting for START", 1);
    eventually(Duration::from_secs(10), || {
        let (ok, show) = cluster.mgm("SHOW");
        (ok && show.contains(", not started, Nodegroup: 0)")).then_some(())
    })
    .expect("node 3 waits for START again");
    let (ok, stop) = cluster.mgm("3 STOP");
    assert!(
        ok && stop.contains("Node 3: Node shutdown completed."),
        "{stop}"
    );
    assert_eq!(cluster.angel_exit("3"), Some(0), "{}", cluster.log("3"));
    assert!(cluster.log("3").contains("stopped while waiting for START"));
    let (_, show) = cluster.mgm("SHOW");
    assert!(
        show.contains("id=3 (not connected, accepting connect from 127.0.0.1)"),
        "{show}"
    );
}

#[test]
fn sigterm_to_the_angel_stops_the_data_node_for_good() {
    let mut cluster = AngelCluster::start("angel-sigterm", 1, 1, "StopOnError=0\n");
    let worker = cluster.worker("2");
    cluster.wait_log("2", "reported phase=started", 1);
    assert!(signal(
        cluster.processes.pid("2"),
        rustix::process::Signal::TERM
    ));
    assert_eq!(cluster.angel_exit("2"), Some(0), "{}", cluster.log("2"));
    assert!(!alive(worker));
    let log = cluster.log("2");
    assert!(
        log.contains("passing the signal on to the data node"),
        "{log}"
    );
    assert!(log.contains("reported signal=SIGTERM"), "{log}");
    assert!(log.contains("reported phase=stopped"), "{log}");
    assert_eq!(log.matches("started the data node").count(), 1, "{log}");
}
