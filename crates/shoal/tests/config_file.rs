//! Real processes and config.ini: the management node listens on the
//! PortNumber of its section when the command line names no port, refuses
//! a file that is not UTF-8 naming the line, and a data node refuses at
//! start a DataMemory the machine cannot hold, saying so. Loopback only,
//! free ports, bounded waits, every process stopped.

mod support;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{free_port, scratch_dir};

/// A child process killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shoal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("shoal runs")
}

fn spawn(args: &[&str], log: &Path) -> Running {
    let file = std::fs::File::create(log).expect("log file");
    Running(
        Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("shoal starts"),
    )
}

/// Waits for `child` to exit within `timeout`.
fn wait_exit(child: &mut Running, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.0.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn the_management_node_listens_on_port_number_without_a_port_flag() {
    let dir = scratch_dir("port-number");
    let port = free_port();
    let file = dir.join("config.ini");
    std::fs::write(
        &file,
        format!(
            "[ndbd default]\nNoOfReplicas=1\nDataMemory=16M\n[ndb_mgmd]\nHostName=127.0.0.1\n\
             PortNumber={port}\nDataDir={}\n[ndbd]\nHostName=127.0.0.1\n",
            dir.display()
        ),
    )
    .expect("config");
    let config_arg = file.to_str().expect("UTF-8").to_string();
    let _mgmd = spawn(
        &["mgmd", "--config-file", &config_arg],
        &dir.join("mgmd.log"),
    );
    let connectstring = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let show = loop {
        let output = shoal(&["mgm", "-c", &connectstring, "-e", "SHOW"]);
        let text = String::from_utf8_lossy(&output.stdout).to_string();
        if output.status.success() && text.contains("[ndb_mgmd(MGM)]") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no management node on PortNumber {port}: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(dir.join("mgmd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(show.contains("[ndbd(NDB)]\t1 node(s)"), "{show}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_management_node_refuses_a_file_that_is_not_utf8_naming_the_line() {
    let dir = scratch_dir("latin1");
    let file = dir.join("config.ini");
    let mut bytes = b"[ndbd default]\nNoOfReplicas=1\n# Datenknoten f".to_vec();
    bytes.push(0xfc);
    bytes.extend_from_slice(b"r alle\n[ndb_mgmd]\n[ndbd]\n");
    std::fs::write(&file, bytes).expect("config");
    let config_arg = file.to_str().expect("UTF-8").to_string();
    let port = free_port().to_string();
    let output = shoal(&["mgmd", "--config-file", &config_arg, "--port", &port]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("config.ini:3: not UTF-8 text: byte 0xfc at column 16"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// MemAvailable of this machine, from /proc/meminfo.
fn memory_available_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    let line = meminfo
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))
        .expect("MemAvailable");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|number| number.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

#[test]
fn a_data_node_refuses_more_data_memory_than_the_machine_has() {
    // The engine's own limit is just under 64G: this test needs a machine
    // with less available than that, which the project's machines are.
    let available = memory_available_bytes();
    let data_memory_gib = 63;
    if available >= data_memory_gib << 30 {
        eprintln!("skipped: {available} bytes available, more than {data_memory_gib}G");
        return;
    }
    let dir = scratch_dir("too-much-memory");
    let port = free_port();
    let file = dir.join("config.ini");
    std::fs::write(
        &file,
        format!(
            "[ndbd default]\nNoOfReplicas=1\nDataMemory={data_memory_gib}G\n[ndb_mgmd]\n\
             HostName=127.0.0.1\nDataDir={}\n[ndbd]\nHostName=127.0.0.1\nDataDir={}\n",
            dir.display(),
            dir.display()
        ),
    )
    .expect("config");
    let config_arg = file.to_str().expect("UTF-8").to_string();
    let port_arg = port.to_string();
    let _mgmd = spawn(
        &["mgmd", "--config-file", &config_arg, "--port", &port_arg],
        &dir.join("mgmd.log"),
    );
    let connectstring = format!("127.0.0.1:{port}");
    let log = dir.join("datad.log");
    let mut datad = spawn(&["datad", "-c", &connectstring], &log);
    let status = wait_exit(&mut datad, Duration::from_secs(30))
        .expect("the data node exits instead of reserving the memory");
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(
        output.contains("DataMemory is 63G but this machine has only"),
        "{output}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// MaxNoOfConcurrentScans bounds the scans a data node's transaction
/// coordinator runs at once, as in NDB: one more is refused with 488.
#[test]
fn max_no_of_concurrent_scans_bounds_the_coordinators_scans() {
    use schema::distribution::TableOptions;
    use schema::{ColumnDef, ColumnType, TableDef};
    use shoal_client::{Cluster, ExecuteEnd, ScanOptions, Value};

    let dir = scratch_dir("concurrent-scans");
    let port = free_port();
    let file = dir.join("config.ini");
    std::fs::write(
        &file,
        format!(
            "[ndbd default]\nNoOfReplicas=1\nDataMemory=16M\nMaxNoOfConcurrentScans=2\n\
             [ndb_mgmd]\nHostName=127.0.0.1\nDataDir={}\n[ndbd]\nHostName=127.0.0.1\n\
             DataDir={}\n[api]\n[api]\n",
            dir.display(),
            dir.display()
        ),
    )
    .expect("config");
    let config_arg = file.to_str().expect("UTF-8").to_string();
    let port_arg = port.to_string();
    let _mgmd = spawn(
        &["mgmd", "--config-file", &config_arg, "--port", &port_arg],
        &dir.join("mgmd.log"),
    );
    let connectstring = format!("127.0.0.1:{port}");
    let _datad = spawn(&["datad", "-c", &connectstring], &dir.join("datad.log"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let cluster = loop {
        let table = TableDef::new(
            "scanned",
            vec![
                ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
                ColumnDef::new("value", ColumnType::Int { unsigned: false }, true),
            ],
            vec![0],
            vec![],
        )
        .expect("a valid table");
        if let Ok(cluster) = Cluster::connect(&connectstring, Duration::from_secs(5))
            && cluster
                .create_table(&table, &TableOptions::default())
                .is_ok()
        {
            break cluster;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster did not start: {}",
            std::fs::read_to_string(dir.join("datad.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let table = cluster.table("scanned").expect("table");
    let mut session = cluster.session().expect("session");
    let mut load = session.start_transaction(None).expect("start");
    for id in 0..20 {
        load.insert(&table, &[(0, Value::Int(id)), (1, Value::Int(id))])
            .expect("define");
    }
    session
        .execute(&mut load, ExecuteEnd::Commit)
        .expect("load");

    // Scans of one row per batch stay open while rows are left to fetch.
    let options = ScanOptions {
        batch_rows: 1,
        ..ScanOptions::default()
    };
    let mut transaction = session.start_transaction(None).expect("start");
    let mut open = Vec::new();
    for _ in 0..2 {
        let scan = session
            .scan(&mut transaction, &table, &options)
            .expect("scan");
        assert!(session.next_row(&scan).expect("a first row").is_some());
        open.push(scan);
    }
    let third = session.scan(&mut transaction, &table, &options);
    let error = match third {
        Err(error) => error,
        Ok(scan) => session
            .next_row(&scan)
            .expect_err("a third scan is over MaxNoOfConcurrentScans=2"),
    };
    assert_eq!(error.ndb_code, 488, "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}
