//! Real processes: `shoal up` supervises its management node as it does its
//! data nodes. A management node killed with SIGKILL is started again while
//! the data nodes go on serving a native-API client, and `shoal mgm` works
//! against the new one. Loopback only, free ports, bounded waits, and every
//! process is stopped at the end.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{Cluster, ExecuteEnd, LockMode, Value};

/// Sends `signal` to `pid` without relying on a `kill` binary.
fn signal(pid: u32, signal: rustix::process::Signal) -> bool {
    rustix::process::Pid::from_raw(pid as i32)
        .is_some_and(|pid| rustix::process::kill_process(pid, signal).is_ok())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Polls `check` until it returns `Some`, for at most `timeout`.
fn eventually<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A `shoal up` child, killed with everything it started on drop.
struct Sandbox {
    child: Child,
    lines: mpsc::Receiver<String>,
    mgm_port: u16,
    dir: PathBuf,
}

impl Sandbox {
    fn start(name: &str) -> Sandbox {
        let dir = std::env::temp_dir().join(format!("shoal-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mgm_port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["up", "--data-dir"])
            .arg(&dir)
            .args(["--nodes", "2", "--replicas", "2"])
            .args(["--mgm-port", &mgm_port.to_string()])
            .args(["--sql-port", &free_port().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("shoal up starts");
        let (sender, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("piped")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("piped")),
        ] {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    eprintln!("[shoal up] {line}");
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Sandbox {
            child,
            lines,
            mgm_port,
            dir,
        }
    }

    /// Waits for a line of `shoal up` (stdout or stderr) containing `text`.
    fn wait_for_line(&self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => continue,
                Err(_) => panic!("no line containing {text:?} within {timeout:?}"),
            }
        }
    }

    fn connectstring(&self) -> String {
        format!("127.0.0.1:{}", self.mgm_port)
    }

    fn mgm(&self, command: &str) -> (bool, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["mgm", "-c", &self.connectstring(), "-e", command])
            .output()
            .expect("shoal mgm runs");
        let text = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.success(), text)
    }

    /// Pids of this sandbox's processes whose command line contains `extra`
    /// (they all name its management port).
    fn processes(&self, extra: &str) -> Vec<u32> {
        let needles = [
            format!("127.0.0.1:{}", self.mgm_port),
            format!("--port {}", self.mgm_port),
        ];
        let mut pids = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
            if needles.iter().any(|n| cmdline.contains(n.as_str())) && cmdline.contains(extra) {
                pids.push(pid);
            }
        }
        pids
    }

    fn stop(&mut self) {
        signal(self.child.id(), rustix::process::Signal::TERM);
        let stopped = eventually(Duration::from_secs(30), || {
            self.child.try_wait().ok().flatten()
        });
        assert!(stopped.is_some(), "shoal up did not stop within 30 s");
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for pid in self.processes("") {
            signal(pid, rustix::process::Signal::KILL);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
    let mut sandbox = Sandbox::start("mgmd-restart");
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
