//! Real processes: `shoal up` supervises its management node as it does its
//! data nodes. A management node killed with SIGKILL is started again while
//! the data nodes go on serving a native-API client, and `shoal mgm` works
//! against the new one. Loopback only, free ports, bounded waits, and every
//! process is stopped at the end.

mod support;

use std::time::Duration;

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{Cluster, ExecuteEnd, LockMode, Value};
use support::{Sandbox, eventually, signal};

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
