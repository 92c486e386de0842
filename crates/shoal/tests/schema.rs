//! Real processes: schema changes on a cluster whose DataMemory fills up,
//! or whose dictionary reaches MaxNoOfTables. A create the data nodes
//! cannot hold is refused as a whole (827, or 707 past MaxNoOfTables),
//! every table that was created can be written and read, and no data node
//! logs a fragment it could not create. Everything runs on 127.0.0.1 with free
//! ports, every wait is bounded, and every process is stopped.

mod support;

use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{Cluster, ExecuteEnd, LockMode, Value};
use support::{Processes, eventually, free_port, scratch_dir};

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

/// Writes a row into each of `created` and reads it back.
fn write_and_read_each(cluster: &Cluster, created: &[String]) {
    let mut session = cluster.session().expect("session");
    for (id, name) in created.iter().enumerate() {
        let route = cluster.table(name).expect("route");
        let mut insert = session.start_transaction(None).expect("start");
        insert
            .insert(
                &route,
                &[
                    (0u16, Value::Int(id as i64)),
                    (1u16, Value::Bytes(name.as_bytes().to_vec())),
                ],
            )
            .expect("define");
        session
            .execute(&mut insert, ExecuteEnd::Commit)
            .unwrap_or_else(|error| panic!("insert into {name}: {error}"));
        let mut read = session.start_transaction(None).expect("start");
        let op = read
            .read(
                &route,
                &[(0u16, Value::Int(id as i64))],
                &[1],
                LockMode::Committed,
            )
            .expect("define");
        session
            .execute(&mut read, ExecuteEnd::Commit)
            .unwrap_or_else(|error| panic!("read from {name}: {error}"));
        assert_eq!(
            read.row(op).expect("row").get(1),
            Some(&Value::Bytes(name.as_bytes().to_vec()))
        );
    }
}

/// MaxNoOfTables=8 in config.ini: eight tables are created, the ninth is
/// refused with NDB's 707, and the cluster goes on serving the eight.
#[test]
fn the_table_past_max_no_of_tables_is_refused_and_the_others_work() {
    let dir = scratch_dir("schema-max-tables");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let port = free_port();
    let text = config::sandbox_config_text(dir.to_str().expect("UTF-8"), 2, 2, port, 32 << 20)
        .replacen("[ndbd default]\n", "[ndbd default]\nMaxNoOfTables=8\n", 1);
    assert!(text.contains("MaxNoOfTables=8"), "{text}");
    let config_file = dir.join("config.ini");
    std::fs::write(&config_file, text).expect("config");
    let config_arg = config_file.to_str().expect("UTF-8").to_string();
    let port_arg = port.to_string();
    let connectstring = format!("127.0.0.1:{port}");
    let mut processes = Processes::default();
    let mgmd_args = ["mgmd", "--config-file", &config_arg, "--port", &port_arg];
    processes.spawn("mgmd", &mgmd_args, &dir.join("mgmd.log"));
    std::thread::sleep(Duration::from_millis(300));
    for node in ["2", "3"] {
        let args = ["datad", "-c", &connectstring, "--ndb-nodeid", node];
        processes.spawn(
            &format!("datad-{node}"),
            &args,
            &dir.join(format!("datad-{node}.log")),
        );
    }
    let cluster = eventually(Duration::from_secs(20), || {
        Cluster::connect(&connectstring, Duration::from_secs(5)).ok()
    })
    .expect("the cluster accepts an API node");
    eventually(Duration::from_secs(20), || {
        let state = cluster.cluster_state(2).ok()?;
        (state.members.len() == 2).then_some(())
    })
    .expect("both data nodes start");

    let mut created = Vec::new();
    let mut refusal = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    while refusal.is_none() && created.len() < 20 && Instant::now() < deadline {
        let name = format!("t{}", created.len());
        match cluster.create_table(&table(&name), &TableOptions::default()) {
            Ok(_) => created.push(name),
            Err(error) if error.is_temporary() => std::thread::sleep(Duration::from_millis(200)),
            Err(error) => refusal = Some(error),
        }
    }
    let refusal = refusal.expect("MaxNoOfTables=8 refuses a create before 20 tables");
    assert_eq!(created.len(), 8, "{refusal}");
    assert_eq!(refusal.ndb_code, 707, "{refusal}");
    assert!(refusal.message.contains("MaxNoOfTables"), "{refusal}");
    let state = cluster.cluster_state(2).expect("state");
    assert_eq!(
        state.tables.len(),
        8,
        "the refused table is not in the dictionary"
    );
    write_and_read_each(&cluster, &created);
    drop(processes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn creates_beyond_data_memory_are_refused_whole_and_every_created_table_works() {
    let dir = scratch_dir("schema-memory");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let port = free_port();
    // 2 MiB: 64 pages per data node, room for a few tables only.
    let text = config::sandbox_config_text(dir.to_str().expect("UTF-8"), 2, 2, port, 2 << 20);
    let config_file = dir.join("config.ini");
    std::fs::write(&config_file, text).expect("config");
    let config_arg = config_file.to_str().expect("UTF-8").to_string();
    let port_arg = port.to_string();
    let connectstring = format!("127.0.0.1:{port}");
    let mut processes = Processes::default();
    let mgmd_args = ["mgmd", "--config-file", &config_arg, "--port", &port_arg];
    processes.spawn("mgmd", &mgmd_args, &dir.join("mgmd.log"));
    std::thread::sleep(Duration::from_millis(300));
    for node in ["2", "3"] {
        let args = ["datad", "-c", &connectstring, "--ndb-nodeid", node];
        processes.spawn(
            &format!("datad-{node}"),
            &args,
            &dir.join(format!("datad-{node}.log")),
        );
    }
    let cluster = eventually(Duration::from_secs(20), || {
        Cluster::connect(&connectstring, Duration::from_secs(5)).ok()
    })
    .expect("the cluster accepts an API node");
    eventually(Duration::from_secs(20), || {
        let state = cluster.cluster_state(2).ok()?;
        (state.members.len() == 2).then_some(())
    })
    .expect("both data nodes start");

    // Create tables until the cluster says no. A temporary refusal (the
    // president has no memory report yet) is retried.
    let mut created = Vec::new();
    let mut refusal = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    while refusal.is_none() && created.len() < 200 && Instant::now() < deadline {
        let name = format!("t{}", created.len());
        match cluster.create_table(&table(&name), &TableOptions::default()) {
            Ok(_) => created.push(name),
            Err(error) if error.is_temporary() => std::thread::sleep(Duration::from_millis(200)),
            Err(error) => refusal = Some(error),
        }
    }
    let refusal = refusal.expect("64 pages cannot hold 200 tables");
    eprintln!("{} tables created, then: {refusal}", created.len());
    assert_eq!(refusal.ndb_code, 827, "{refusal}");
    assert_eq!(refusal.mysql_code, 1114, "{refusal}");
    assert!(refusal.message.contains("DataMemory"), "{refusal}");
    assert!(!created.is_empty(), "the first tables fit: {refusal}");
    let state = cluster.cluster_state(2).expect("state");
    assert_eq!(
        state.tables.len(),
        created.len(),
        "the refused table is not in the dictionary"
    );

    // Every table the cluster accepted holds its fragments: a row goes in
    // and comes back.
    write_and_read_each(&cluster, &created);

    // DROP then CREATE at once, as sysbench's cleanup then prepare: the
    // memory the drop gave back holds the new table, though the members'
    // last reports were measured before the drop.
    let last = created.pop().expect("tables were created");
    cluster.drop_table(&last).expect("drop");
    let again = format!("{last}_again");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match cluster.create_table(&table(&again), &TableOptions::default()) {
            Ok(_) => break,
            Err(error) if error.is_temporary() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            Err(error) => panic!("the dropped table's memory holds a new one: {error}"),
        }
    }
    write_and_read_each(&cluster, &[again]);
    drop(processes);
    for node in ["2", "3"] {
        let log =
            std::fs::read_to_string(dir.join(format!("datad-{node}.log"))).unwrap_or_default();
        assert!(
            !log.contains("cannot create fragment"),
            "node {node} could not create a fragment of an accepted table:\n{log}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
