//! Real processes: `shoal up` starts a cluster, `shoal mgm` shows it, a
//! table's partition map reaches every data node, a data node killed with
//! SIGKILL is removed by the others within the detection time and comes
//! back, and stopping `shoal up` leaves no process behind. Everything runs
//! on 127.0.0.1 with free ports, and every wait is bounded.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::Cluster;
use support::{Processes, Sandbox, eventually, free_port, scratch_dir, signal};

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

#[test]
fn a_four_node_cluster_forms_agrees_and_survives_a_killed_node() {
    let mut sandbox = Sandbox::start("four", 4, 2);
    sandbox.wait_for_line("Cluster ready", Duration::from_secs(60));

    let (ok, show) = sandbox.mgm("SHOW");
    assert!(ok, "shoal mgm -e SHOW failed:\n{show}");
    assert!(show.contains("[ndbd(NDB)]\t4 node(s)"), "{show}");
    assert_eq!(show.matches("Nodegroup: 0").count(), 2, "{show}");
    assert_eq!(show.matches("Nodegroup: 1").count(), 2, "{show}");
    assert_eq!(show.matches(", *)").count(), 1, "one president:\n{show}");
    assert!(!show.contains("starting"), "{show}");

    // A table's partition map reaches every data node, identical.
    let cluster =
        Cluster::connect(&sandbox.connectstring(), Duration::from_secs(10)).expect("connect");
    let table_id = cluster
        .create_table(&table("subscriber"), &TableOptions::default())
        .expect("create table");
    let nodes: Vec<u8> = cluster.data_nodes().iter().map(|(n, _)| *n).collect();
    assert_eq!(nodes.len(), 4);
    let mut maps = Vec::new();
    for node in &nodes {
        let state = cluster.cluster_state(*node).expect("dictionary");
        let entry = state
            .table_by_name("subscriber")
            .unwrap_or_else(|| panic!("node {node} does not know the table"))
            .clone();
        assert_eq!(entry.id, table_id);
        maps.push(entry);
    }
    assert!(
        maps.windows(2).all(|w| w[0] == w[1]),
        "nodes disagree: {maps:?}"
    );
    // FOR_RP_BY_LDM: 4 data nodes × 1 LDM thread = 4 partitions, one
    // primary on each node, every replica set a whole node group.
    let map = &maps[0];
    assert_eq!(map.partition_count, 4);
    let mut primaries: Vec<u8> = map.fragments.iter().map(|f| f.replicas[0]).collect();
    primaries.sort_unstable();
    assert_eq!(primaries, nodes);
    for fragment in &map.fragments {
        let mut replicas = fragment.replicas.clone();
        replicas.sort_unstable();
        let group = usize::from(fragment.node_group);
        assert_eq!(replicas, nodes[group * 2..group * 2 + 2].to_vec());
    }

    // A fully replicated table on two node groups is refused (1478): the
    // coordinators write one group's copy only, and the other group would
    // read without the row.
    let everywhere = TableOptions {
        fully_replicated: true,
        ..TableOptions::default()
    };
    let refused = cluster
        .create_table(&table("everywhere"), &everywhere)
        .expect_err("FULLY_REPLICATED on two node groups is refused");
    assert_eq!(refused.mysql_code, 1478, "{refused:?}");
    assert!(cluster.table("everywhere").is_err(), "nothing half-created");

    // kill -9 the last data node: the others agree on removing it within
    // the detection time (a closed connection counts at once, and the
    // removal waits only for their lease promises, half of that time).
    let victim = *nodes.last().expect("four nodes");
    let before = cluster.cluster_state(nodes[0]).expect("state");
    let old = before.member_of(victim).expect("a member");
    let pids = sandbox.processes(&format!("--ndb-nodeid {victim}"));
    assert_eq!(pids.len(), 1, "one process for node {victim}: {pids:?}");
    let killed_at = Instant::now();
    assert!(
        signal(pids[0], rustix::process::Signal::KILL),
        "SIGKILL was delivered"
    );
    let survivors = &nodes[..3];
    let agreed = eventually(Duration::from_secs(6), || {
        let states: Vec<_> = survivors
            .iter()
            .map(|n| cluster.cluster_state(*n).ok())
            .collect::<Option<Vec<_>>>()?;
        let removed = states.iter().all(|s| !s.contains(old));
        let same = states
            .windows(2)
            .all(|w| w[0].position() == w[1].position() && w[0].members == w[1].members);
        (removed && same).then(|| states[0].clone())
    })
    .expect("the survivors agree on removing the killed node within 6 s");
    eprintln!(
        "survivors agreed on {:?} {} ms after the kill",
        agreed.members,
        killed_at.elapsed().as_millis()
    );
    // The removal waits for the survivors' lease promises to the killed
    // node (`cluster::lease`), so `shoal up` may have restarted it by then
    // and its new incarnation be admitted in the same state.
    assert_eq!(
        agreed.members.iter().filter(|m| m.node != victim).count(),
        3,
        "{agreed:?}"
    );
    assert!(
        agreed
            .member_of(victim)
            .is_none_or(|member| member.incarnation > old.incarnation),
        "{agreed:?}"
    );

    // `shoal up` restarts it, like NDB's angel; it rejoins as a new incarnation.
    eventually(Duration::from_secs(30), || {
        let state = cluster.cluster_state(nodes[0]).ok()?;
        let back = state.member_of(victim)?;
        // The restarted node listens on a new port: the client must find it.
        let own = cluster.cluster_state(victim).ok()?;
        (back.incarnation != old.incarnation
            && state.members.len() == 4
            && own.position() == state.position())
        .then_some(())
    })
    .expect("the killed node rejoins within 30 s and answers the client");

    // SIGTERM stops every process of the sandbox.
    drop(cluster);
    sandbox.stop();
    let left = eventually(Duration::from_secs(5), || {
        sandbox.processes("").is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "processes left behind: {:?}",
        sandbox.processes("")
    );
}

#[test]
fn a_bad_config_file_names_file_line_and_key() {
    let dir = scratch_dir("badconfig");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("config.ini");
    std::fs::write(
        &file,
        "[ndbd default]\nNoOfReplicas=2\n\n[ndb_mgmd]\nNodeId=1\n\n[ndbd]\nNodeId=2\nDataMemroy=80M\n\n[ndbd]\nNodeId=3\n",
    )
    .expect("write config");
    let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["mgmd", "--config-file"])
        .arg(&file)
        .args(["--port", &free_port().to_string()])
        .output()
        .expect("shoal mgmd runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("config.ini:9"), "names the line: {stderr}");
    assert!(stderr.contains("DataMemroy"), "names the key: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_nodes_survive_a_failure_through_the_arbitrator_after_it_restarted() {
    let dir = scratch_dir("arbitrator");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let port = free_port();
    let text = config::sandbox_config_text(dir.to_str().expect("UTF-8"), 2, 2, port, 32 << 20);
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
        processes.spawn(node, &args, &dir.join(format!("datad-{node}.log")));
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

    // The management node restarts: its votes come back from its DataDir.
    processes.kill("mgmd");
    processes.spawn("mgmd", &mgmd_args, &dir.join("mgmd-again.log"));
    eventually(Duration::from_secs(20), || {
        let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["mgm", "-c", &connectstring, "-e", "SHOW"])
            .output()
            .ok()?;
        let show = String::from_utf8_lossy(&output.stdout).to_string();
        (show.matches("Nodegroup: 0").count() == 2 && !show.contains("starting")).then_some(())
    })
    .expect("both data nodes report to the restarted management node");

    // One of two nodes fails: the survivor is exactly half and goes on only
    // with the arbitrator's vote.
    let before = cluster.cluster_state(2).expect("state");
    let old = before.member_of(3).expect("node 3 is a member");
    processes.kill("3");
    let after = eventually(Duration::from_secs(6), || {
        let state = cluster.cluster_state(2).ok()?;
        (!state.contains(old)).then_some(state)
    })
    .unwrap_or_else(|| {
        let log = std::fs::read_to_string(dir.join("datad-2.log")).unwrap_or_default();
        panic!("node 2 did not go on alone within 6 s:\n{log}")
    });
    assert_eq!(after.members.len(), 1);
    assert!(
        dir.join("ndb_mgmd-1").join("arbitrator.votes").exists(),
        "the votes are on disk"
    );
    drop(processes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mgm_stops_a_node_and_shuts_the_cluster_down() {
    let mut sandbox = Sandbox::start("shutdown", 2, 2);
    sandbox.wait_for_line("Cluster ready", Duration::from_secs(60));

    let (ok, memory) = sandbox.mgm("ALL REPORT MEMORY");
    assert!(ok, "{memory}");
    assert_eq!(memory.matches("Data usage is").count(), 2, "{memory}");
    assert!(memory.contains("32K pages of total"), "{memory}");
    let (ok, status) = sandbox.mgm("3 STATUS");
    assert!(ok && status.contains("Node 3: started"), "{status}");

    // A stopped node stays down (it is not restarted like a crashed one),
    // and the other goes on with the arbitrator's vote.
    let (ok, stop) = sandbox.mgm("3 STOP");
    assert!(ok, "{stop}");
    assert!(stop.contains("Node 3: Node shutdown completed."), "{stop}");
    let show = eventually(Duration::from_secs(10), || {
        let (_, show) = sandbox.mgm("SHOW");
        (show.contains("id=3 (not connected") && show.contains("Nodegroup: 0, *)")).then_some(show)
    })
    .expect("node 3 shows as not connected while node 2 presides");
    assert!(!show.contains("starting"), "{show}");

    let (ok, shutdown) = sandbox.mgm("SHUTDOWN");
    assert!(ok, "{shutdown}");
    assert!(
        shutdown.contains("NDB Cluster node(s) have shutdown."),
        "{shutdown}"
    );
    let status = sandbox
        .wait_exit(Duration::from_secs(30))
        .expect("shoal up exits after SHUTDOWN");
    assert!(status.success(), "shoal up: {status:?}");
    let left = eventually(Duration::from_secs(5), || {
        sandbox.processes("").is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "processes left behind: {:?}",
        sandbox.processes("")
    );
}

/// The native API against real processes: multi-partition transactions,
/// batched reads in one round trip, rollback, errors with NDB codes,
/// read-your-writes on every replica, parallel and pruned scans, async,
/// unique indexes and auto-increment values.
#[test]
fn transactions_through_the_native_api() {
    use shoal_client::{ErrorClass, ExecuteEnd, Hint, LockMode, ScanOptions, Status, Value};

    let sandbox = Sandbox::start("transactions", 2, 2);
    sandbox.wait_for_line("Cluster ready", Duration::from_secs(60));
    let cluster =
        Cluster::connect(&sandbox.connectstring(), Duration::from_secs(10)).expect("connect");
    cluster
        .create_table(&table("accounts"), &TableOptions::default())
        .expect("create table");
    let accounts = cluster.table("accounts").expect("table");
    assert!(accounts.partition_count >= 2, "several partitions");
    let mut session = cluster.session().expect("session");
    let row =
        |id: i64, value: &[u8]| vec![(0u16, Value::Int(id)), (1u16, Value::Bytes(value.to_vec()))];
    let key = |id: i64| vec![(0u16, Value::Int(id))];

    // 40 rows over every partition in one transaction and one round trip.
    let before = session.counters();
    let mut insert = session.start_transaction(None).expect("start");
    for id in 0..40 {
        insert.insert(&accounts, &row(id, b"v1")).expect("define");
    }
    session
        .execute(&mut insert, ExecuteEnd::Commit)
        .expect("commit");
    assert_eq!(insert.status(), Status::Committed);
    assert_eq!(session.counters().execute_count - before.execute_count, 1);

    // A committed write is read back from every replica (READ_BACKUP).
    for node in [2u8, 3] {
        let mut read = session.transaction_at(node);
        let op = read
            .read(&accounts, &key(17), &[1], LockMode::Committed)
            .expect("define");
        session
            .execute(&mut read, ExecuteEnd::Commit)
            .expect("read");
        assert_eq!(
            read.row(op).expect("row").get(1),
            Some(&Value::Bytes(b"v1".to_vec())),
            "node {node}"
        );
    }

    // A rollback leaves nothing behind; a duplicate key aborts with 630.
    let mut rolled_back = session.start_transaction(None).expect("start");
    rolled_back
        .insert(&accounts, &row(100, b"x"))
        .expect("define");
    rolled_back
        .update(&accounts, &key(1), &[(1, Value::Bytes(b"gone".to_vec()))])
        .expect("define");
    session
        .execute(&mut rolled_back, ExecuteEnd::NoCommit)
        .expect("no commit");
    session
        .execute(&mut rolled_back, ExecuteEnd::Rollback)
        .expect("rollback");
    let mut duplicate = session.start_transaction(None).expect("start");
    duplicate
        .insert(&accounts, &row(101, b"y"))
        .expect("define");
    duplicate
        .insert(&accounts, &row(5, b"dup"))
        .expect("define");
    let error = session
        .execute(&mut duplicate, ExecuteEnd::Commit)
        .expect_err("duplicate key");
    assert_eq!(error.ndb_code, 630, "{error}");
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert_eq!(duplicate.status(), Status::Aborted);

    // Ten reads in one batch: one round trip; rows 100 and 101 are absent
    // (626, ignored) and row 1 kept its value.
    let before = session.counters();
    let mut batch = session.start_transaction(None).expect("start");
    let mut operations = Vec::new();
    for id in [0, 1, 2, 3, 4, 5, 6, 7, 100, 101] {
        let op = batch
            .read(&accounts, &key(id), &[0, 1], LockMode::Committed)
            .expect("define");
        batch.ignore_error(op).expect("ignore");
        operations.push(op);
    }
    session
        .execute(&mut batch, ExecuteEnd::Commit)
        .expect("reads");
    assert_eq!(session.counters().execute_count - before.execute_count, 1);
    assert_eq!(session.counters().pk_op_count - before.pk_op_count, 10);
    for op in &operations[..8] {
        assert_eq!(
            batch.row(*op).expect("row").get(1),
            Some(&Value::Bytes(b"v1".to_vec()))
        );
    }
    for op in &operations[8..] {
        assert_eq!(batch.result(*op).expect_err("absent").ndb_code, 626);
    }

    // A parallel scan sees the 40 rows; a pruned scan sees only its partition.
    let mut scanning = session.start_transaction(None).expect("start");
    let scan = session
        .scan(&mut scanning, &accounts, &ScanOptions::default())
        .expect("scan");
    let mut ids = Vec::new();
    while let Some(found) = session.next_row(&scan).expect("row") {
        match found.get(0) {
            Some(Value::Int(id)) => ids.push(*id),
            other => panic!("id {other:?}"),
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..40).collect::<Vec<i64>>());
    let pruned_before = session.counters().pruned_scan_count;
    let pruned = session
        .scan(
            &mut scanning,
            &accounts,
            &ScanOptions {
                partition_key: Some(key(17)),
                ..ScanOptions::default()
            },
        )
        .expect("pruned scan");
    let mut in_partition = 0;
    let mut has_17 = false;
    while let Some(found) = session.next_row(&pruned).expect("row") {
        in_partition += 1;
        has_17 |= found.get(0) == Some(&Value::Int(17));
    }
    session
        .execute(&mut scanning, ExecuteEnd::Commit)
        .expect("end scans");
    assert!(has_17 && in_partition < 40, "{in_partition} rows");
    assert_eq!(session.counters().pruned_scan_count, pruned_before + 1);

    // Scan and lock, then delete every row found: the table ends empty.
    let mut deleting = session.start_transaction(None).expect("start");
    let locked = session
        .scan(
            &mut deleting,
            &accounts,
            &ScanOptions {
                lock: Some(LockMode::Exclusive),
                ..ScanOptions::default()
            },
        )
        .expect("locking scan");
    let mut found = Vec::new();
    while let Some(row) = session.next_row(&locked).expect("row") {
        found.push(row.key(&accounts));
    }
    for row_key in &found {
        deleting.delete(&accounts, row_key).expect("define");
    }
    session
        .execute(&mut deleting, ExecuteEnd::Commit)
        .expect("delete all");
    assert_eq!(found.len(), 40);

    // Many transactions in flight from one thread.
    for id in 0..20 {
        let mut transaction = session
            .start_transaction(Some(Hint {
                table: &accounts,
                key: &key(id),
                committed_read: false,
            }))
            .expect("start");
        transaction
            .insert(&accounts, &row(id, b"async"))
            .expect("define");
        session
            .prepare_async(transaction, ExecuteEnd::Commit)
            .expect("prepare");
    }
    let mut done = Vec::new();
    while done.len() < 20 {
        done.extend(
            session
                .send_poll(20, Duration::from_secs(10))
                .expect("poll"),
        );
    }
    assert!(done.iter().all(|t| t.status() == Status::Committed));
    let mut check = session.start_transaction(None).expect("start");
    let count = session
        .scan(&mut check, &accounts, &ScanOptions::default())
        .expect("scan");
    let mut rows = 0;
    while session.next_row(&count).expect("row").is_some() {
        rows += 1;
    }
    assert_eq!(rows, 20);

    // A committed read of a READ_BACKUP table starts on this API node's
    // neighbour (the replica its node id picks) whatever the key; every
    // other transaction, and any of a table read from its primaries only,
    // on the key's primary, which differs between keys.
    let options = TableOptions {
        read_backup: false,
        ..TableOptions::default()
    };
    cluster
        .create_table(&table("primaries"), &options)
        .expect("create table");
    let primaries = cluster.table("primaries").expect("table");
    let neighbour = [2u8, 3][usize::from(cluster.node_id()) % 2];
    let mut coordinators = std::collections::BTreeSet::new();
    let mut primary_coordinators = std::collections::BTreeSet::new();
    for id in 0..40 {
        let start = |session: &mut shoal_client::Session, table, committed_read| {
            let key = key(id);
            session
                .start_transaction(Some(Hint {
                    table,
                    key: &key,
                    committed_read,
                }))
                .expect("start")
                .coordinator()
        };
        assert_eq!(start(&mut session, &accounts, true), neighbour, "id {id}");
        coordinators.insert(start(&mut session, &accounts, false));
        primary_coordinators.insert(start(&mut session, &primaries, true));
    }
    assert_eq!(
        coordinators.len(),
        2,
        "primaries on both nodes: {coordinators:?}"
    );
    assert_eq!(primary_coordinators, coordinators);
    // And the neighbour reads what was written.
    let mut read = session
        .start_transaction(Some(Hint {
            table: &accounts,
            key: &key(7),
            committed_read: true,
        }))
        .expect("start");
    let op = read
        .read(&accounts, &key(7), &[1], LockMode::Committed)
        .expect("define");
    session
        .execute(&mut read, ExecuteEnd::Commit)
        .expect("read");
    assert_eq!(read.coordinator(), neighbour);
    assert_eq!(
        read.row(op).expect("row").get(1),
        Some(&Value::Bytes(b"async".to_vec()))
    );

    unique_indexes_on_a_running_cluster(&cluster);
    auto_increment_on_a_running_cluster(&cluster, &sandbox.connectstring());
}

/// Unique-index reads, updates and deletes through the native API, and a
/// duplicate refused with 893 (checked cluster-wide: the rows are in
/// different partitions).
fn unique_indexes_on_a_running_cluster(cluster: &Cluster) {
    use shoal_client::{ExecuteEnd, LockMode, Status, Value};

    let users = TableDef::new(
        "users",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("email", ColumnType::Varbinary { length: 64 }, true),
        ],
        vec![0],
        vec![schema::IndexDef {
            name: "email".into(),
            columns: vec![1],
            unique: true,
        }],
    )
    .expect("a valid table");
    cluster
        .create_table(&users, &TableOptions::default())
        .expect("create table");
    let users = cluster.table("users").expect("table");
    let mut session = cluster.session().expect("session");
    let email = |address: &str| vec![(1u16, Value::Bytes(address.as_bytes().to_vec()))];
    let mut insert = session.start_transaction(None).expect("start");
    for id in 0..20i64 {
        insert
            .insert(
                &users,
                &[
                    (0, Value::Int(id)),
                    (1, Value::Bytes(format!("u{id}@x").into_bytes())),
                ],
            )
            .expect("define");
    }
    session
        .execute(&mut insert, ExecuteEnd::Commit)
        .expect("commit");

    let mut find = session.start_transaction(None).expect("start");
    let found = find
        .read_unique(&users, "email", &email("u13@x"), &[0], LockMode::Committed)
        .expect("define");
    session
        .execute(&mut find, ExecuteEnd::Commit)
        .expect("read");
    assert_eq!(find.row(found).expect("row").get(0), Some(&Value::Int(13)));

    // Row 4 takes row 13's address: refused cluster-wide with 893.
    let mut steal = session.start_transaction(None).expect("start");
    steal
        .update(&users, &[(0, Value::Int(4))], &email("u13@x"))
        .expect("define");
    let error = session
        .execute(&mut steal, ExecuteEnd::Commit)
        .expect_err("duplicate");
    assert_eq!((error.ndb_code, error.mysql_code), (893, 1062), "{error}");
    assert_eq!(steal.status(), Status::Aborted);

    // Rename by unique key, then delete by the new one.
    let mut rename = session.start_transaction(None).expect("start");
    rename
        .update_unique(&users, "email", &email("u13@x"), &email("new@x"))
        .expect("define");
    session
        .execute(&mut rename, ExecuteEnd::Commit)
        .expect("rename");
    let mut check = session.start_transaction(None).expect("start");
    let old = check
        .read_unique(&users, "email", &email("u13@x"), &[0], LockMode::Committed)
        .expect("define");
    check.ignore_error(old).expect("ignore");
    let new = check
        .read_unique(&users, "email", &email("new@x"), &[0], LockMode::Committed)
        .expect("define");
    session
        .execute(&mut check, ExecuteEnd::Commit)
        .expect("read");
    assert_eq!(check.result(old).expect_err("gone").ndb_code, 626);
    assert_eq!(check.row(new).expect("row").get(0), Some(&Value::Int(13)));
    let mut delete = session.start_transaction(None).expect("start");
    delete
        .delete_unique(&users, "email", &email("new@x"))
        .expect("define");
    session
        .execute(&mut delete, ExecuteEnd::Commit)
        .expect("delete");
    // The address is free again.
    let mut reuse = session.start_transaction(None).expect("start");
    reuse
        .update(&users, &[(0, Value::Int(4))], &email("new@x"))
        .expect("define");
    session
        .execute(&mut reuse, ExecuteEnd::Commit)
        .expect("reuse");
    assert!(
        cluster.table("users$email$unique").is_err(),
        "the hidden index table is not a user table"
    );
}

/// Auto-increment values from two connections and several sessions, with
/// ranges of different sizes: never one value twice.
fn auto_increment_on_a_running_cluster(cluster: &Cluster, connectstring: &str) {
    let accounts = cluster.table("accounts").expect("table");
    let other =
        Cluster::connect(connectstring, Duration::from_secs(10)).expect("second connection");
    let threads: Vec<_> = [(cluster.clone(), 1u32), (cluster.clone(), 7), (other, 50)]
        .into_iter()
        .map(|(connection, prefetch)| {
            let accounts = accounts.clone();
            std::thread::spawn(move || {
                let mut session = connection.session().expect("session");
                session
                    .set_auto_increment_prefetch(prefetch)
                    .expect("prefetch");
                let values: Vec<u64> = (0..120)
                    .map(|_| session.auto_increment(&accounts).expect("value"))
                    .collect();
                assert!(
                    values.windows(2).all(|w| w[0] < w[1]),
                    "increasing per session"
                );
                values
            })
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|thread| thread.join().expect("thread"))
        .collect();
    let handed_out = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), handed_out, "no value handed out twice");
    assert!(all[0] >= 1);

    // After an explicit value, the next ones are above it.
    let mut session = cluster.session().expect("session");
    session
        .raise_auto_increment(&accounts, 1_000_000)
        .expect("raise");
    assert!(session.auto_increment(&accounts).expect("value") > 1_000_000);
    // The counter is known to be past a smaller explicit value: raising
    // to it is no round trip, and the next value still comes after.
    let before = session.counters().execute_count;
    session
        .raise_auto_increment(&accounts, 999_000)
        .expect("raise below the counter");
    assert_eq!(session.counters().execute_count, before);
    // One it has not reached is moved in the cluster.
    session
        .raise_auto_increment(&accounts, 2_000_000)
        .expect("raise");
    assert!(session.counters().execute_count > before);
    assert!(session.auto_increment(&accounts).expect("value") > 2_000_000);
    assert!(session.set_auto_increment_prefetch(0).is_err());
    assert!(session.set_auto_increment_prefetch(65_537).is_err());
}
