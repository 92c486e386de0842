//! The SQL node as its users reach it: `shoal up` starts it, the stock
//! `mariadb` client and drivers talk to it, and what they see is checked.
//! The clients are installed by the test command (`scripts/install-sql-tools`);
//! a test that cannot find one fails saying so.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use support::Sandbox;

/// How long a sandbox may take until its SQL node accepts connections.
const SQL_READY_TIMEOUT: Duration = Duration::from_secs(120);

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(|p| p.parent())
        .expect("crates/shoal is two levels down")
        .to_path_buf()
}

/// The SQL port of a sandbox: the `--sql-port` its support passed.
fn sql_port(sandbox: &Sandbox) -> u16 {
    let line = sandbox.wait_for_line("SQL node ready", SQL_READY_TIMEOUT);

    line.split("-P ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

/// The stock `mariadb` CLI for `port` as `user`, in batch mode, with TLS
/// (the server's certificate is self-signed, so not verified) or without.
fn mariadb(port: u16, user: &str, tls: bool) -> Command {
    let mut command = Command::new("mariadb");
    command.args(["-h", "127.0.0.1", "-P", &port.to_string(), "-u", user]);
    command.args(["--batch", "--connect-timeout=10"]);
    if tls {
        command.args(["--ssl", "--skip-ssl-verify-server-cert"]);
    } else {
        command.arg("--skip-ssl");
    }
    command
}

/// Runs `sql` through the stock `mariadb` CLI in batch mode; returns
/// (success, stdout, stderr).
fn cli(port: u16, user: &str, password: Option<&str>, sql: &str) -> (bool, String, String) {
    let mut command = mariadb(port, user, false);
    command.args(["-e", sql]);
    if let Some(password) = password {
        command.arg(format!("--password={password}"));
    }
    let output = command
        .output()
        .expect("the mariadb client runs (scripts/install-sql-tools installs it)");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_mysql_cli_creates_loads_and_queries_tables() {
    let sandbox = Sandbox::start("sql-cli", 2, 2);
    let port = sql_port(&sandbox);
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        "CREATE DATABASE shop; USE shop; \
         CREATE TABLE items (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20) NOT NULL, \
           price DECIMAL(8,2), UNIQUE KEY name_key (name)) ENGINE=NDBCLUSTER; \
         INSERT INTO items (name, price) VALUES ('apple', 1.50), ('pear', 2.25), ('plum', NULL); \
         SELECT id, name, price FROM items ORDER BY id; \
         SELECT COUNT(*), SUM(price) FROM items; \
         UPDATE items SET price = price * 2 WHERE name = 'pear'; \
         SELECT price FROM items WHERE id = 2; \
         DELETE FROM items WHERE price IS NULL; \
         SELECT name FROM items ORDER BY name DESC;",
    );
    assert!(ok, "stdout {out}\nstderr {err}");
    // On one host every link runs over shared memory (UseShm, on by
    // default): each data node maps one with its peer and one per cluster
    // connection of the SQL node, which maps one per data node and
    // connection.
    let links = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .unwrap_or_default()
            .matches("memfd:shoal-link")
            .count()
    };
    let data_nodes = sandbox.processes("datad");
    let sql_nodes = sandbox.processes("sqld");
    assert_eq!(data_nodes.len(), 2, "{data_nodes:?}");
    assert_eq!(sql_nodes.len(), 1, "{sql_nodes:?}");
    let sql_links = links(sql_nodes[0]);
    assert!(
        sql_links >= 2,
        "the SQL node maps {sql_links} link memories"
    );
    for pid in data_nodes {
        let mapped = links(pid);
        assert_eq!(
            mapped,
            1 + sql_links / 2,
            "data node {pid} maps {mapped} link memories"
        );
    }
    assert_eq!(
        out,
        "id\tname\tprice\n1\tapple\t1.50\n2\tpear\t2.25\n3\tplum\tNULL\n\
         COUNT(*)\tSUM(price)\n3\t3.75\n\
         price\n4.50\n\
         name\npear\napple\n"
    );
    // Statements of one shape are parsed once per connection: the second
    // and third point selects come from the statement cache.
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        "SELECT name FROM shop.items WHERE id = 1; SELECT name FROM shop.items WHERE id = 2; \
         SELECT name FROM shop.items WHERE id = 3; \
         SHOW SESSION STATUS LIKE 'Shoal_statement_cache_%';",
    );
    assert!(ok, "stdout {out}\nstderr {err}");
    assert_eq!(
        out,
        "name\napple\nname\npear\n\
         Variable_name\tValue\nShoal_statement_cache_hits\t2\nShoal_statement_cache_misses\t1\n"
    );
    // An UPDATE of constants and a DELETE by a whole integer primary key
    // take one round trip each (NDB's read before write removal); an
    // UPDATE that reads the row first takes two.
    let executes = "SHOW SESSION STATUS LIKE 'Ndb_execute_count';";
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        &format!(
            "{executes} UPDATE shop.items SET price = 9 WHERE id = 1; {executes} \
             DELETE FROM shop.items WHERE id = 99; {executes} \
             UPDATE shop.items SET price = price + 1 WHERE id = 2; {executes} \
             SELECT id, name FROM shop.items ORDER BY id;"
        ),
    );
    assert!(ok, "stdout {out}\nstderr {err}");
    let counts: Vec<u64> = out
        .lines()
        .filter_map(|line| line.strip_prefix("Ndb_execute_count\t"))
        .map(|count| count.parse().expect("a count"))
        .collect();
    assert_eq!(counts.len(), 4, "{out}");
    assert_eq!(
        [
            counts[1] - counts[0],
            counts[2] - counts[1],
            counts[3] - counts[2]
        ],
        [1, 1, 2],
        "{out}"
    );
    assert!(out.ends_with("id\tname\n1\tapple\n2\tpear\n"), "{out}");
    // A query fetches only the columns it reads: counting ids of rows with
    // a 2000-byte column brings a fraction of what counting that column
    // does, and both count the same rows.
    let status = "SHOW SESSION STATUS LIKE 'Ndb_api_bytes_received_count';";
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        &format!(
            "CREATE TABLE shop.wide (id INT PRIMARY KEY, k INT, pad VARCHAR(2000)) ENGINE=NDB; \
             INSERT INTO shop.wide VALUES (1, 10, REPEAT('x', 2000)), (2, 20, REPEAT('y', 2000)), \
               (3, 30, REPEAT('z', 2000)), (4, 40, REPEAT('w', 2000)); \
             {status} SELECT COUNT(id) FROM shop.wide; {status} \
             SELECT COUNT(pad) FROM shop.wide; {status} \
             SELECT COUNT(pad) FROM shop.wide WHERE k = 20; {status} \
             SELECT COUNT(pad) FROM shop.wide WHERE k BETWEEN 15 AND 35 AND k <> 30; {status}"
        ),
    );
    assert!(ok, "stdout {out}\nstderr {err}");
    let received: Vec<u64> = out
        .lines()
        .filter_map(|line| line.strip_prefix("Ndb_api_bytes_received_count\t"))
        .map(|value| value.parse().expect("a count"))
        .collect();
    assert_eq!(received.len(), 5, "{out}");
    assert!(
        out.contains("COUNT(id)\n4\n") && out.contains("COUNT(pad)\n4\n"),
        "{out}"
    );
    let narrow = received[1] - received[0];
    let wide = received[2] - received[1];
    assert!(
        wide > 8_000,
        "the wide column came back: {wide} bytes\n{out}"
    );
    assert!(
        narrow * 4 < wide,
        "ids only: {narrow} bytes, with pad: {wide}"
    );
    // A condition on a column no index serves is pushed to the data nodes
    // with the scan: only the matching row's 2000 bytes come back, and the
    // SQL node's own check of the WHERE still counts right (k <> 30 is not
    // pushed; 20 is the only k left).
    assert!(out.contains("COUNT(pad)\n1\n"), "{out}");
    let filtered = received[3] - received[2];
    assert!(
        (2_000..4_000).contains(&filtered),
        "one row of pad, not four: {filtered} bytes\n{out}"
    );
    let ranged = received[4] - received[3];
    assert!(
        (4_000..6_000).contains(&ranged),
        "the rows with k in 15..=35 (two), not four: {ranged} bytes\n{out}"
    );
    // A duplicate is 1062 and the connection goes on; an unknown table 1146.
    let (ok, _, err) = cli(
        port,
        "root",
        None,
        "INSERT INTO shop.items (name) VALUES ('apple')",
    );
    assert!(!ok);
    assert!(err.contains("ERROR 1062"), "{err}");
    let (ok, _, err) = cli(port, "root", None, "SELECT * FROM shop.nothing");
    assert!(!ok);
    assert!(err.contains("ERROR 1146"), "{err}");
    let (ok, _, err) = cli(port, "root", None, "SELEC 1");
    assert!(!ok);
    assert!(err.contains("ERROR 1064"), "{err}");
    // The SQL node is a connected API node in the management client.
    let (ok, show) = sandbox.mgm("SHOW");
    assert!(ok, "{show}");
    let api_section = show.split("[mysqld(API)]").nth(1).expect("an API section");
    assert!(
        api_section.contains("@127.0.0.1"),
        "no connected API node:\n{show}"
    );
}

/// A SQL node killed with SIGKILL while a client's transaction holds a
/// lock: `shoal up` starts it again, the dead node's transaction is rolled
/// back by the data nodes (its change is gone and its lock is free), and
/// what was committed before is all there.
#[test]
fn a_sql_node_killed_mid_transaction_leaves_no_change_or_lock_behind() {
    let sandbox = Sandbox::start("sql-kill", 2, 2);
    let port = sql_port(&sandbox);
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        "CREATE DATABASE bank; CREATE TABLE bank.acct (id INT PRIMARY KEY, bal INT NOT NULL) \
         ENGINE=NDB; INSERT INTO bank.acct VALUES (1, 100), (2, 100);",
    );
    assert!(ok, "{out} {err}");
    // A client in the middle of a transfer: row 1 changed and locked, the
    // transaction open (the client waits for more input).
    let mut holder = cli_session(
        port,
        "BEGIN; UPDATE bank.acct SET bal = bal - 30 WHERE id = 1; SELECT 'held';\n",
    );
    let mut input = holder.stdin.take().expect("stdin");
    input.flush().expect("flush");
    let mut output = std::io::BufReader::new(holder.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("held") {
        line.clear();
        let read = std::io::BufRead::read_line(&mut output, &mut line).expect("read");
        assert!(read > 0, "the client ended before its transaction was open");
    }
    // The lock is held: another client's update of row 1 waits and times out.
    let (ok, _, err) = cli(
        port,
        "root",
        None,
        "UPDATE bank.acct SET bal = bal + 1 WHERE id = 1",
    );
    assert!(!ok && err.contains("ERROR 1205"), "{err}");

    let sqld = sandbox.processes("sqld");
    assert_eq!(sqld.len(), 1, "one SQL node: {sqld:?}");
    assert!(support::signal(sqld[0], rustix::process::Signal::KILL));
    // `shoal up` starts the SQL node again on the same port.
    let restarted = support::eventually(Duration::from_secs(90), || {
        let pids = sandbox.processes("sqld");
        let (ok, _, _) = cli(port, "root", None, "SELECT 1");
        (ok && !pids.is_empty() && pids[0] != sqld[0]).then(|| pids[0])
    });
    assert!(restarted.is_some(), "the SQL node did not come back");
    // The killed node's transaction was rolled back: its change is gone,
    // and its lock no longer stops anyone.
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        "SELECT id, bal FROM bank.acct ORDER BY id; \
         UPDATE bank.acct SET bal = bal + 1 WHERE id = 1; \
         SELECT id, bal FROM bank.acct ORDER BY id;",
    );
    assert!(ok, "{out} {err}");
    assert_eq!(out, "id\tbal\n1\t100\n2\t100\nid\tbal\n1\t101\n2\t100\n");
    // The client that lost its server says so and commits nothing.
    let _ = input.write_all(b"COMMIT;\n");
    drop(input);
    let status = holder.wait().expect("the client ends");
    assert!(
        !status.success(),
        "a client whose server died reported success"
    );
    let (ok, out, err) = cli(port, "root", None, "SELECT SUM(bal) FROM bank.acct");
    assert!(ok, "{out} {err}");
    assert_eq!(out, "SUM(bal)\n201\n");
}

#[test]
fn users_are_stored_in_the_cluster_and_a_wrong_password_is_1045() {
    let sandbox = Sandbox::start("sql-users", 2, 2);
    let port = sql_port(&sandbox);
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        "CREATE USER 'app'@'%' IDENTIFIED BY 'secret'; SELECT User, Host FROM mysql.user ORDER BY User",
    );
    assert!(ok, "{out} {err}");
    assert!(out.contains("app\t%"), "{out}");
    let (ok, out, err) = cli(port, "app", Some("secret"), "SELECT CURRENT_USER()");
    assert!(ok, "{out} {err}");
    let (ok, _, err) = cli(port, "app", Some("wrong"), "SELECT 1");
    assert!(!ok);
    assert!(err.contains("ERROR 1045"), "{err}");
    let (ok, _, err) = cli(
        port,
        "root",
        None,
        "ALTER USER 'app'@'%' IDENTIFIED BY 'other'",
    );
    assert!(ok, "{err}");
    let (ok, _, err) = cli(port, "app", Some("secret"), "SELECT 1");
    assert!(!ok && err.contains("ERROR 1045"), "{err}");
    let (ok, _, err) = cli(port, "app", Some("other"), "SELECT 1");
    assert!(ok, "{err}");
    let (ok, _, err) = cli(
        port,
        "root",
        None,
        "DROP USER 'app'@'%'; DROP USER 'app'@'%'",
    );
    assert!(!ok && err.contains("ERROR 1396"), "{err}");
}

#[test]
fn random_bytes_on_the_sql_port_do_not_hurt_the_node() {
    let sandbox = Sandbox::start("sql-hostile", 2, 2);
    let port = sql_port(&sandbox);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..64 {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            panic!("round {round}: the SQL node stopped accepting connections");
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut greeting = [0u8; 512];
        let _ = stream.read(&mut greeting);
        let length = 1 + (seed % 300) as usize;
        let bytes: Vec<u8> = (0..length)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let _ = stream.write_all(&bytes);
        let mut answer = [0u8; 512];
        let _ = stream.read(&mut answer);
    }
    let (ok, out, err) = cli(port, "root", None, "SELECT 1 + 1 AS two");
    assert!(ok, "{out} {err}");
    assert_eq!(out, "two\n2\n");
}

/// The SQL behaviour files (statements and expected results, the expected
/// results shown to be MySQL's by the same runner against MariaDB).
#[test]
fn sql_behaviour_files_pass() {
    let sandbox = Sandbox::start("sql-behaviour", 2, 2);
    let port = sql_port(&sandbox);
    let root = repository_root();
    let output = Command::new("python3")
        .arg(root.join("tests/sql/run.py"))
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--user",
            "root",
        ])
        .current_dir(&root)
        .output()
        .expect("python3 runs (scripts/install-sql-tools installs PyMySQL)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "behaviour tests failed:\n{stdout}\n{stderr}"
    );
}

/// The mariadb CLI started on `port` with `sql` on its stdin, left
/// running (its stdin stays open until the caller drops or closes it);
/// it prints each result at once and does not reconnect.
/// Starts a further SQL node on `sandbox`'s cluster, on a free port, with
/// `extra` arguments; returns its port once it answers a query.
fn start_sqld(
    nodes: &mut support::Processes,
    sandbox: &Sandbox,
    name: &str,
    scratch: &str,
    extra: &[&str],
) -> u16 {
    let port = support::free_port();
    let dir = support::scratch_dir(scratch);
    let connectstring = sandbox.connectstring();
    let port_arg = port.to_string();
    let dir_arg = dir.display().to_string();
    let mut args = vec![
        "sqld",
        "--ndb-connectstring",
        &connectstring,
        "--port",
        &port_arg,
        "--bind-address",
        "127.0.0.1",
        "--data-dir",
        &dir_arg,
    ];
    args.extend_from_slice(extra);
    nodes.spawn(name, &args, &dir.join("sqld.log"));
    support::eventually(SQL_READY_TIMEOUT, || {
        cli(port, "root", None, "SELECT 1").0.then_some(())
    })
    .unwrap_or_else(|| panic!("{name}: the SQL node did not start"));
    port
}

/// One MySQL packet read from `stream`: (sequence, payload).
fn read_packet(stream: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header)?;
    let length =
        usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload)?;
    Ok((header[3], payload))
}

fn write_packet(stream: &mut TcpStream, sequence: u8, payload: &[u8]) {
    let length = payload.len() as u32;
    let mut bytes = length.to_le_bytes()[..3].to_vec();
    bytes.push(sequence);
    bytes.extend_from_slice(payload);
    stream
        .write_all(&bytes)
        .expect("the SQL node takes the packet");
}

/// A client of its own (no driver queues a command before the last one's
/// answer): logs in as root without a password and returns the socket.
fn raw_login(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the SQL node listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let (_, greeting) = read_packet(&mut stream).expect("a greeting");
    assert_eq!(greeting[0], 10, "protocol 10: {greeting:?}");
    // LONG_PASSWORD | PROTOCOL_41 | TRANSACTIONS | SECURE_CONNECTION | PLUGIN_AUTH
    let capabilities: u32 = 0x1 | 0x200 | 0x2000 | 0x8000 | 0x8_0000;
    let mut response = capabilities.to_le_bytes().to_vec();
    response.extend_from_slice(&(16u32 << 20).to_le_bytes());
    response.push(45);
    response.extend_from_slice(&[0; 23]);
    response.extend_from_slice(b"root\0");
    response.push(0);
    response.extend_from_slice(b"mysql_native_password\0");
    write_packet(&mut stream, 1, &response);
    loop {
        let (sequence, packet) = read_packet(&mut stream).expect("an answer to the login");
        match packet.first() {
            Some(0x00) => return stream,
            // Switch to another plugin: an empty password is empty there too.
            Some(0xFE) => write_packet(&mut stream, sequence + 1, &[]),
            // caching_sha2_password's fast-path result; the OK follows.
            Some(0x01) => {}
            _ => panic!("the login failed: {packet:?}"),
        }
    }
}

/// Reads one statement's answer: `Err(code)` for an error packet, else
/// the text rows of a result set (none for an OK).
fn raw_answer(stream: &mut TcpStream) -> Result<Vec<Vec<String>>, u16> {
    let (_, first) = read_packet(stream).expect("an answer");
    match first[0] {
        0x00 => return Ok(Vec::new()),
        0xFF => return Err(u16::from_le_bytes([first[1], first[2]])),
        _ => {}
    }
    let columns = usize::from(first[0]);
    for _ in 0..columns {
        read_packet(stream).expect("a column definition");
    }
    let (_, eof) = read_packet(stream).expect("the end of the columns");
    assert_eq!(eof[0], 0xFE, "{eof:?}");
    let mut rows = Vec::new();
    loop {
        let (_, row) = read_packet(stream).expect("a row");
        if row[0] == 0xFE && row.len() < 9 {
            return Ok(rows);
        }
        let mut values = Vec::new();
        let mut rest = &row[..];
        while let Some((&length, tail)) = rest.split_first() {
            let length = usize::from(length);
            values.push(String::from_utf8_lossy(&tail[..length]).into_owned());
            rest = &tail[length..];
        }
        rows.push(values);
    }
}

fn cli_session(port: u16, sql: &str) -> std::process::Child {
    let mut child = mariadb(port, "root", false)
        .args(["--skip-reconnect", "--unbuffered"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the mariadb client runs (scripts/install-sql-tools installs it)");
    child
        .stdin
        .as_mut()
        .expect("stdin")
        .write_all(sql.as_bytes())
        .expect("the client takes its statements");
    child
}

/// Both ways the SQL node serves connections: worker threads that run
/// each connection as a task (the default; here one worker, so every
/// connection shares it) and a thread per connection (`--worker-threads
/// 0`). In each, a statement waiting for a row lock does not hold up the
/// other connections, the waiter gets 1205 when the lock stays taken, TLS
/// works, and an idle session is closed after its `wait_timeout`.
#[test]
fn both_serving_modes_wait_without_holding_up_others() {
    let sandbox = Sandbox::start("sql-modes", 2, 2);
    let main_port = sql_port(&sandbox);
    let (ok, out, err) = cli(
        main_port,
        "root",
        None,
        "CREATE DATABASE modes; CREATE TABLE modes.t (id INT PRIMARY KEY, v INT) ENGINE=NDB; \
         INSERT INTO modes.t VALUES (1, 0), (2, 0);",
    );
    assert!(ok, "{out} {err}");
    let mut nodes = support::Processes::default();
    for (name, workers) in [("workers", "1"), ("threads", "0")] {
        let port = start_sqld(
            &mut nodes,
            &sandbox,
            name,
            &format!("sql-modes-{name}"),
            &["--worker-threads", workers],
        );

        // A holds row 1; B waits for it; C, meanwhile, is answered.
        let (ok, out, err) = cli(port, "root", None, "UPDATE modes.t SET v = 0 WHERE id = 1");
        assert!(ok, "{name}: {out} {err}");
        let mut holder = cli_session(port, "BEGIN; UPDATE modes.t SET v = v + 1 WHERE id = 1;\n");
        // The lock is taken once another writer of the row times out.
        support::eventually(Duration::from_secs(60), || {
            let (_, _, err) = cli(port, "root", None, "UPDATE modes.t SET v = v WHERE id = 1");
            err.contains("1205").then_some(())
        })
        .unwrap_or_else(|| panic!("{name}: the holder never took the lock"));
        let processes = |port| cli(port, "root", None, "SHOW PROCESSLIST").1;
        let mut waiter = cli_session(port, "UPDATE modes.t SET v = v + 10 WHERE id = 1;\n");
        drop(waiter.stdin.take());
        support::eventually(Duration::from_secs(30), || {
            processes(port).contains("v = v + 10").then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "{name}: the waiting UPDATE never showed: {:?} {}",
                waiter.try_wait(),
                processes(port)
            )
        });
        let (ok, out, err) = cli(port, "root", None, "SELECT v FROM modes.t WHERE id = 2");
        assert!(ok, "{name}: {out} {err}");
        assert_eq!(out, "v\n0\n", "{name}");
        assert!(
            waiter.try_wait().expect("wait").is_none(),
            "{name}: the other connection was answered only after the lock wait ended"
        );
        let waited = waiter.wait_with_output().expect("the waiter ends");
        assert!(
            String::from_utf8_lossy(&waited.stderr).contains("1205"),
            "{name}: {waited:?}"
        );
        // A statement sent while the one before still waits for the lock
        // is answered right after it: it came while its connection's task
        // waited for the cluster, and the socket is edge-triggered, so no
        // later readiness announces it (the connection reads the socket
        // again after every answer before it waits).
        let mut pipelined = raw_login(port);
        write_packet(
            &mut pipelined,
            0,
            b"\x03UPDATE modes.t SET v = v + 100 WHERE id = 1",
        );
        std::thread::sleep(Duration::from_millis(300));
        write_packet(&mut pipelined, 0, b"\x03SELECT 40 + 2");
        assert_eq!(raw_answer(&mut pipelined), Err(1205), "{name}");
        let answered = std::time::Instant::now();
        assert_eq!(
            raw_answer(&mut pipelined),
            Ok(vec![vec!["42".to_string()]]),
            "{name}: the statement sent during the lock wait"
        );
        // At once, not at some later wake of the task.
        assert!(
            answered.elapsed() < Duration::from_millis(500),
            "{name}: the pipelined statement was answered {:?} after the one before",
            answered.elapsed()
        );
        drop(pipelined);
        let stdin = holder.stdin.as_mut().expect("stdin");
        stdin.write_all(b"COMMIT;\n").expect("the holder commits");
        drop(holder.stdin.take());
        let held = holder.wait_with_output().expect("the holder ends");
        assert!(held.status.success(), "{name}: {held:?}");

        // TLS, through the server's self-signed certificate.
        let tls = mariadb(port, "root", true)
            .args(["-e", "SELECT v FROM modes.t WHERE id = 1"])
            .output()
            .expect("mariadb runs");
        assert!(tls.status.success(), "{name}: {tls:?}");
        assert_eq!(String::from_utf8_lossy(&tls.stdout), "v\n1\n", "{name}");

        // An idle session is closed after its wait_timeout, with MySQL's
        // 4031 (or, if the client reads no more, as a lost connection).
        let mut idle = cli_session(port, "SET SESSION wait_timeout = 1; SELECT 1;\n");
        std::thread::sleep(Duration::from_secs(4));
        let stdin = idle.stdin.as_mut().expect("stdin");
        let _ = stdin.write_all(b"SELECT 2;\n");
        drop(idle.stdin.take());
        let idled = idle.wait_with_output().expect("the idle client ends");
        let said = String::from_utf8_lossy(&idled.stderr);
        assert!(
            ["4031", "2006", "2013"]
                .iter()
                .any(|code| said.contains(code)),
            "{name}: the idle session was not closed: {idled:?}"
        );

        // KILL closes an idle connection at once, not at its next command.
        let mut victim = cli_session(port, "SELECT CONNECTION_ID();\n");
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
            victim.stdout.take().expect("stdout"),
        ));
        let header = lines.next().expect("a header").expect("read");
        assert_eq!(header, "CONNECTION_ID()", "{name}");
        let id: u64 = lines
            .next()
            .expect("an id")
            .expect("read")
            .parse()
            .expect("a number");
        let listed = |id: u64| {
            processes(port)
                .lines()
                .any(|line| line.starts_with(&format!("{id}\t")))
        };
        assert!(listed(id), "{name}: {}", processes(port));
        let (ok, out, err) = cli(port, "root", None, &format!("KILL {id}"));
        assert!(ok, "{name}: {out} {err}");
        support::eventually(Duration::from_secs(10), || (!listed(id)).then_some(()))
            .unwrap_or_else(|| {
                panic!(
                    "{name}: the killed idle connection {id} stayed: {}",
                    processes(port)
                )
            });
        let stdin = victim.stdin.as_mut().expect("stdin");
        let _ = stdin.write_all(b"SELECT 3;\n");
        drop(victim.stdin.take());
        let killed = victim.wait_with_output().expect("the killed client ends");
        assert!(
            !killed.status.success(),
            "{name}: the killed connection still answered: {killed:?}"
        );
    }
}

/// A data node killed (SIGKILL) while clients insert through the SQL node,
/// whose workers read the data nodes' sockets themselves: every client
/// finishes (no statement waits forever for an answer from the dead
/// node), every insert the SQL node acknowledged is there afterwards, and
/// once `shoal up` has started the node again the SQL node uses it. A
/// reader of committed rows runs through the kill as well, at the node
/// its reads start on: every read is answered, with the true row or a
/// retryable error.
#[test]
fn a_data_node_killed_under_sql_load_loses_no_acknowledged_insert() {
    const CLIENTS: usize = 3;
    const INSERTS: usize = 4_000;
    const READS: usize = 20_000;
    const FIXED_ROWS: usize = 200;
    let sandbox = Sandbox::start("sql-datad-kill", 2, 2);
    let port = sql_port(&sandbox);
    let mut fixed = String::from("INSERT INTO load.fixed VALUES ");
    for id in 0..FIXED_ROWS {
        if id > 0 {
            fixed.push_str(", ");
        }
        fixed.push_str(&format!("({id}, {})", id * 7));
    }
    let (ok, out, err) = cli(
        port,
        "root",
        None,
        &format!(
            "CREATE DATABASE load; CREATE TABLE load.r (id INT PRIMARY KEY, client INT NOT NULL) \
             ENGINE=NDB; CREATE TABLE load.fixed (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=NDB; \
             {fixed};"
        ),
    );
    assert!(ok, "{out} {err}");
    let victims = sandbox.processes("--ndb-nodeid 3");
    assert_eq!(victims.len(), 1, "one data node 3: {victims:?}");
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let mut script = String::new();
            for line in 0..INSERTS {
                script.push_str(&format!(
                    "INSERT INTO load.r VALUES ({}, {client});\n",
                    client * INSERTS + line
                ));
            }
            // `--force` goes on after an error, which names its line.
            let mut child = mariadb(port, "root", false)
                .args(["--force", "--skip-reconnect"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the mariadb client runs (scripts/install-sql-tools installs it)");
            let mut input = child.stdin.take().expect("stdin");
            std::thread::spawn(move || {
                let _ = input.write_all(script.as_bytes());
            });
            child
        })
        .collect();
    // The kill lands while the clients insert: some rows are in already.
    support::eventually(Duration::from_secs(60), || {
        let (ok, out, _) = cli(port, "root", None, "SELECT COUNT(*) FROM load.r");
        let count: usize = out.lines().nth(1)?.trim().parse().ok()?;
        (ok && count >= 500).then_some(())
    })
    .expect("the clients insert");
    // A reader of committed rows, whose reads start on the SQL node's
    // neighbour, node 3 (`neighbour` in shoal-client: 145 picks the second
    // of [2, 3]), while that node is killed: each answer is the row or an
    // error of the retryable class.
    let mut reader_script = String::new();
    for line in 0..READS {
        reader_script.push_str(&format!(
            "SELECT id, v FROM load.fixed WHERE id = {};\n",
            line % FIXED_ROWS
        ));
    }
    let mut reader = mariadb(port, "root", false)
        .args(["--force", "--skip-reconnect", "--skip-column-names"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the mariadb client runs");
    let mut reader_input = reader.stdin.take().expect("stdin");
    std::thread::spawn(move || {
        let _ = reader_input.write_all(reader_script.as_bytes());
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(support::signal(victims[0], rustix::process::Signal::KILL));

    let output = output_within(reader, Duration::from_secs(300), "the reader");
    let answers = String::from_utf8_lossy(&output.stdout).to_string();
    let errors = String::from_utf8_lossy(&output.stderr).to_string();
    let mut rows_read = 0;
    for line in answers.lines() {
        let fields: Vec<i64> = line
            .split('\t')
            .map(|f| f.parse().expect("a number"))
            .collect();
        assert_eq!(fields.len(), 2, "{line}");
        assert_eq!(fields[1], fields[0] * 7, "a true row: {line}");
        rows_read += 1;
    }
    let mut failed_reads = 0;
    for line in errors.lines().filter(|line| line.starts_with("ERROR")) {
        assert!(
            ["1297", "4010", "1205", "1296"]
                .iter()
                .any(|code| line.contains(code)),
            "reader: {line}"
        );
        failed_reads += 1;
    }
    eprintln!("{rows_read} reads answered, {failed_reads} failed");
    assert_eq!(rows_read + failed_reads, READS, "every read has one answer");
    assert!(rows_read > READS / 2, "most reads succeed");

    let mut acknowledged = Vec::new();
    let mut failures = 0;
    for (client, child) in clients.into_iter().enumerate() {
        let output = output_within(child, Duration::from_secs(300), "every client");
        let errors = String::from_utf8_lossy(&output.stderr).to_string();
        let failed: std::collections::BTreeSet<usize> = errors
            .lines()
            .filter_map(|line| {
                line.split(" at line ")
                    .nth(1)?
                    .split(':')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        for line in errors.lines() {
            // A node failure, or a temporary error while the node group
            // takes over: never an internal error or a wrong answer.
            assert!(
                ["1297", "4010", "1205", "1296", "1114"]
                    .iter()
                    .any(|code| line.contains(code))
                    || !line.starts_with("ERROR"),
                "client {client}: {line}"
            );
        }
        failures += failed.len();
        acknowledged.extend(
            (1..=INSERTS)
                .filter(|line| !failed.contains(line))
                .map(|line| client * INSERTS + line - 1),
        );
    }
    eprintln!(
        "{} inserts acknowledged, {failures} failed",
        acknowledged.len()
    );
    assert!(
        acknowledged.len() > CLIENTS * INSERTS / 2,
        "most inserts succeed ({failures} failed)"
    );
    // Every acknowledged insert is there.
    let (ok, out, err) = cli(port, "root", None, "SELECT id FROM load.r ORDER BY id");
    assert!(ok, "{err}");
    let present: std::collections::BTreeSet<usize> =
        out.lines().skip(1).filter_map(|l| l.parse().ok()).collect();
    let missing: Vec<_> = acknowledged
        .iter()
        .filter(|id| !present.contains(id))
        .collect();
    assert!(missing.is_empty(), "acknowledged and missing: {missing:?}");
    // `shoal up` starts the node again; once it is started, the SQL node
    // reaches it again (a write to a key it holds first opens the link).
    support::eventually(Duration::from_secs(120), || {
        let (_, show) = sandbox.mgm("SHOW");
        (show.matches("Nodegroup: 0").count() == 2 && !show.contains("starting")).then_some(())
    })
    .expect("data node 3 is started again");
    let mut next_id = 1_000_000;
    let ready = support::eventually(Duration::from_secs(60), || {
        let mut sql = String::from("REPLACE INTO load.r VALUES ");
        for offset in 0..32 {
            if offset > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("({}, 99)", next_id + offset));
        }
        next_id += 32;
        sql.push_str("; SHOW STATUS LIKE 'Ndb_number_of_ready_data_nodes'");
        let (ok, out, _) = cli(port, "root", None, &sql);
        (ok && out.contains("Ndb_number_of_ready_data_nodes\t2")).then_some(())
    });
    assert!(
        ready.is_some(),
        "the SQL node does not reach the restarted node"
    );
}

/// The output of `child` once it ends, which must be within `limit`: no
/// statement may wait forever (`what` names it in the failure).
fn output_within(child: std::process::Child, limit: Duration, what: &str) -> std::process::Output {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    receiver
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what} finishes within {limit:?}: nothing waits forever"))
        .unwrap_or_else(|error| panic!("{what}'s output: {error}"))
}

/// A SQL node with a pool of two cluster connections (two workers, a
/// connection each): a table dropped through one connection is gone
/// through the other at once, and one created through one is there
/// through the other, as sysbench's cleanup then prepare needs. Each
/// `mariadb` run is a new client connection, which the workers take in
/// turn, so consecutive statements go through different connections.
/// Before the pool shared its dictionary, the CREATE after a DROP failed
/// with 1050 until a heartbeat told the other connection.
#[test]
fn a_pool_of_connections_shares_the_dictionary() {
    let sandbox = Sandbox::start("sql-pool", 2, 2);
    let main_port = sql_port(&sandbox);
    let (ok, out, err) = cli(main_port, "root", None, "CREATE DATABASE pool");
    assert!(ok, "{out} {err}");
    let mut nodes = support::Processes::default();
    let port = start_sqld(
        &mut nodes,
        &sandbox,
        "pooled",
        "sql-pool-sqld",
        &[
            "--worker-threads",
            "2",
            "--ndb-cluster-connection-pool",
            "2",
        ],
    );
    for round in 0..6 {
        let steps = [
            "DROP TABLE IF EXISTS pool.t".to_string(),
            "CREATE TABLE pool.t (id INT PRIMARY KEY, v INT) ENGINE=NDB".to_string(),
            format!("INSERT INTO pool.t VALUES ({round}, {round})"),
        ];
        for step in &steps {
            let (ok, out, err) = cli(port, "root", None, step);
            assert!(ok, "round {round}, {step}: {out} {err}");
        }
        let (ok, out, err) = cli(port, "root", None, "SELECT id, v FROM pool.t");
        assert!(ok, "round {round}: {out} {err}");
        assert_eq!(out, format!("id\tv\n{round}\t{round}\n"), "round {round}");
    }
}
