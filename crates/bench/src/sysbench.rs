//! `shoal bench sysbench`: sysbench 1.0's OLTP tests against Shoal's SQL
//! node (a cluster it starts, or `--connect`) and, with `--vs`, against
//! another MySQL-protocol server in the same run, alternating cell by cell
//! so both see the same machine, printing both and the ratio.
//!
//! It runs the stock `sysbench` binary and the stock `mariadb` client (to
//! create and drop the database); both are what users run.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tests `--tests` takes by default.
pub const TESTS_DEFAULT: [&str; 5] = [
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_insert",
    "oltp_update_index",
];
/// The database the benchmark creates on each server and drops afterwards.
const DATABASE: &str = "shoal_bench_sysbench";
/// How long a started cluster may take until its SQL node is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
/// DataMemory of each data node of a cluster the benchmark starts. `shoal
/// up`'s 256 MiB holds about 1.2 million sysbench rows; the default tables
/// (4 × 100,000) and a 20 s `oltp_insert` cell at 64 threads (about
/// 45,000 rows/s here, 1.3 million rows in all) need more than that; 1 GiB
/// holds about 4.8 million. A data node commits all of it at start.
const SANDBOX_DATA_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;
/// DataMemory a sysbench row takes (256 MiB held about 1.2 million).
const SYSBENCH_ROW_BYTES: u64 = 220;
/// Rows the default run holds at once: 400,000 prepared plus a 20 s insert
/// cell at 64 threads.
const DEFAULT_RUN_ROWS_MAX: u64 = 1_300_000;
const _: () = assert!(
    SANDBOX_DATA_MEMORY_BYTES / SYSBENCH_ROW_BYTES > 2 * DEFAULT_RUN_ROWS_MAX,
    "the benchmark's cluster needs room for twice the default run's rows"
);
/// The shape of the cluster the benchmark starts.
const SANDBOX_DATA_NODES: u8 = 2;
const SANDBOX_REPLICAS: u8 = 2;

/// A MySQL-protocol server to measure.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
}

impl Target {
    /// `HOST:PORT` as a target called `name` (user root, no password).
    pub fn parse(name: &str, address: &str, user: &str, password: &str) -> Result<Target, String> {
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| format!("{address}: expected HOST:PORT"))?;
        let port = port.parse().map_err(|_| format!("{address}: bad port"))?;
        Ok(Target {
            name: name.to_string(),
            host: host.to_string(),
            port,
            user: user.to_string(),
            password: password.to_string(),
        })
    }
}

#[derive(Debug, Clone)]
pub struct SysbenchOptions {
    pub executable: PathBuf,
    /// Shoal's SQL node; `None` starts a sandbox cluster.
    pub connect: Option<Target>,
    pub versus: Option<Target>,
    pub tests: Vec<String>,
    pub threads: Vec<usize>,
    pub tables: u32,
    pub table_size: u64,
    pub seconds: u32,
    /// Rounds per cell, targets alternating within each; the cell shows
    /// each target's median round (by tps).
    pub runs: u32,
    pub json: bool,
}

/// One measured cell.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub transactions_per_s: f64,
    pub queries_per_s: f64,
    pub latency_p95_ms: f64,
    pub errors: u64,
}

/// One row of the result: a test at a thread count on every target.
#[derive(Debug, Clone)]
pub struct Row {
    pub test: String,
    pub threads: usize,
    pub cells: Vec<Cell>,
}

/// A `shoal up` this benchmark started; stopped when dropped.
struct Sandbox {
    child: Child,
    directory: PathBuf,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.directory);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Writes the config.ini of the benchmark's cluster into `data_dir`, which
/// `shoal up` then keeps: `SANDBOX_DATA_NODES` data nodes of
/// `SANDBOX_DATA_MEMORY_BYTES` each, `SANDBOX_REPLICAS` replicas.
fn write_sandbox_config(data_dir: &std::path::Path, mgm_port: u16) -> Result<(), String> {
    std::fs::create_dir_all(data_dir)
        .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    let data_dir_text = data_dir
        .to_str()
        .ok_or_else(|| format!("{} is not valid UTF-8", data_dir.display()))?;
    let config_text = config::sandbox_config_text(
        data_dir_text,
        SANDBOX_DATA_NODES,
        SANDBOX_REPLICAS,
        mgm_port,
        SANDBOX_DATA_MEMORY_BYTES,
    );
    let path = data_dir.join("config.ini");
    std::fs::write(&path, config_text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn start_sandbox(executable: &PathBuf) -> Result<(Sandbox, Target), String> {
    let directory =
        std::env::temp_dir().join(format!("shoal-bench-sysbench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    let mgm_port = free_port()?;
    let sql_port = free_port()?;
    let data_dir = directory.join("data");
    write_sandbox_config(&data_dir, mgm_port)?;
    let mut child = Command::new(executable)
        .arg("up")
        .arg("--data-dir")
        .arg(&data_dir)
        .args([
            "--nodes",
            &SANDBOX_DATA_NODES.to_string(),
            "--replicas",
            &SANDBOX_REPLICAS.to_string(),
        ])
        .args([
            "--mgm-port",
            &mgm_port.to_string(),
            "--sql-port",
            &sql_port.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start `{} up`: {e}", executable.display()))?;
    let stdout = child.stdout.take().expect("piped");
    let (ready_sender, ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("SQL node ready") {
                let _ = ready_sender.send(());
            }
        }
    });
    let sandbox = Sandbox { child, directory };
    ready.recv_timeout(READY_TIMEOUT).map_err(|_| {
        format!(
            "the cluster's SQL node was not ready within {} s",
            READY_TIMEOUT.as_secs()
        )
    })?;
    let target = Target {
        name: "shoal".into(),
        host: "127.0.0.1".into(),
        port: sql_port,
        user: "root".into(),
        password: String::new(),
    };
    Ok((sandbox, target))
}

/// Runs one statement through the `mariadb` client.
fn client(target: &Target, sql: &str) -> Result<(), String> {
    let mut command = Command::new("mariadb");
    command
        .args([
            "-h",
            &target.host,
            "-P",
            &target.port.to_string(),
            "-u",
            &target.user,
        ])
        .args(["--skip-ssl", "--connect-timeout=10", "-e", sql]);
    if !target.password.is_empty() {
        command.arg(format!("--password={}", target.password));
    }
    let output = command.output().map_err(|e| {
        format!("cannot run the mariadb client (scripts/install-sql-tools installs it): {e}")
    })?;
    if !output.status.success() {
        return Err(format!(
            "{}: `{sql}` failed: {}",
            target.name,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

fn sysbench(
    target: &Target,
    options: &SysbenchOptions,
    test: &str,
    command: &str,
    threads: usize,
) -> Result<String, String> {
    let mut arguments = vec![
        test.to_string(),
        "--db-driver=mysql".into(),
        format!("--mysql-host={}", target.host),
        format!("--mysql-port={}", target.port),
        format!("--mysql-user={}", target.user),
        format!("--mysql-password={}", target.password),
        format!("--mysql-db={DATABASE}"),
        "--mysql-ssl=off".into(),
        format!("--tables={}", options.tables),
        format!("--table-size={}", options.table_size),
        // prepare loads the tables in parallel, one thread per table.
        format!(
            "--threads={}",
            if command == "prepare" {
                options.tables.max(1) as usize
            } else {
                threads
            }
        ),
        format!("--time={}", options.seconds),
        "--report-interval=0".into(),
        "--percentile=95".into(),
    ];
    arguments.push(command.to_string());
    let output = Command::new("sysbench")
        .args(&arguments)
        .output()
        .map_err(|e| format!("cannot run sysbench (scripts/install-sql-tools installs it): {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || text.contains("FATAL") {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        return Err(format!(
            "{}: sysbench {test} {command} failed:\n{}",
            target.name,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(text)
}

/// A target's median round by tps (the lower of the two middle ones for
/// an even count), with the errors of every round.
pub fn median_cell(mut samples: Vec<Cell>) -> Cell {
    assert!(!samples.is_empty(), "a cell has at least one round");
    let errors = samples.iter().map(|cell| cell.errors).sum();
    samples.sort_by(|a, b| a.transactions_per_s.total_cmp(&b.transactions_per_s));
    let mut median = samples.swap_remove((samples.len() - 1) / 2);
    median.errors = errors;
    median
}

/// The figures of a `sysbench ... run` output.
pub fn parse_run(text: &str) -> Option<Cell> {
    let number_after = |prefix: &str| -> Option<f64> {
        text.lines().find_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix(prefix)?;
            rest.split_whitespace().next()?.parse().ok()
        })
    };
    let per_second = |prefix: &str| -> Option<f64> {
        text.lines().find_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix(prefix)?;
            let start = rest.find('(')? + 1;
            rest[start..].split_whitespace().next()?.parse().ok()
        })
    };
    Some(Cell {
        transactions_per_s: per_second("transactions:")?,
        queries_per_s: per_second("queries:")?,
        latency_p95_ms: number_after("95th percentile:")?,
        errors: number_after("ignored errors:").map_or(0, |e| e as u64),
    })
}

fn prepare(target: &Target, options: &SysbenchOptions) -> Result<(), String> {
    client(
        target,
        &format!("DROP DATABASE IF EXISTS {DATABASE}; CREATE DATABASE {DATABASE}"),
    )?;
    sysbench(target, options, "oltp_common", "prepare", 1)?;
    Ok(())
}

/// Runs the benchmark and prints its figures.
pub fn run(options: &SysbenchOptions) -> Result<Vec<Row>, String> {
    let mut sandbox = None;
    let shoal = match &options.connect {
        Some(target) => target.clone(),
        None => {
            let (started, target) = start_sandbox(&options.executable)?;
            sandbox = Some(started);
            target
        }
    };
    let mut targets = vec![shoal];
    if let Some(versus) = &options.versus {
        targets.push(versus.clone());
    }
    for target in &targets {
        eprintln!(
            "preparing {} × {} rows on {} ...",
            options.tables, options.table_size, target.name
        );
        prepare(target, options)?;
    }
    let mut rows = Vec::new();
    for test in &options.tests {
        for &threads in &options.threads {
            let mut rounds: Vec<Vec<Cell>> = vec![Vec::new(); targets.len()];
            for round in 1..=options.runs.max(1) {
                for (target, samples) in targets.iter().zip(&mut rounds) {
                    let text = sysbench(target, options, test, "run", threads)?;
                    let cell = parse_run(&text).ok_or_else(|| {
                        format!("{}: no figures in sysbench's output:\n{text}", target.name)
                    })?;
                    eprintln!(
                        "{test} {threads} threads on {} (round {round}): {:.0} tps, {:.0} qps, \
                         p95 {:.2} ms, {} errors",
                        target.name,
                        cell.transactions_per_s,
                        cell.queries_per_s,
                        cell.latency_p95_ms,
                        cell.errors
                    );
                    samples.push(cell);
                }
                // oltp_insert grows the tables; the next round and test
                // start from the same data on every target.
                if test == "oltp_insert" {
                    for target in &targets {
                        prepare(target, options)?;
                    }
                }
            }
            rows.push(Row {
                test: test.clone(),
                threads,
                cells: rounds.into_iter().map(median_cell).collect(),
            });
        }
    }
    for target in &targets {
        if let Err(e) = client(target, &format!("DROP DATABASE IF EXISTS {DATABASE}")) {
            eprintln!("{e}");
        }
    }
    drop(sandbox);
    if options.json {
        println!("{}", to_json(&rows, &targets));
    } else {
        print!("{}", render(&rows, &targets));
    }
    Ok(rows)
}

pub fn render(rows: &[Row], targets: &[Target]) -> String {
    let mut text = String::from("test                threads");
    for target in targets {
        text.push_str(&format!(
            " | {:>10} tps {:>9} qps {:>7} p95",
            target.name, "", ""
        ));
    }
    if targets.len() == 2 {
        text.push_str(" | tps ratio");
    }
    text.push('\n');
    for row in rows {
        text.push_str(&format!("{:<19} {:>7}", row.test, row.threads));
        for cell in &row.cells {
            text.push_str(&format!(
                " | {:>14.0} {:>13.0} {:>8.2}ms",
                cell.transactions_per_s, cell.queries_per_s, cell.latency_p95_ms
            ));
        }
        if row.cells.len() == 2 && row.cells[1].transactions_per_s > 0.0 {
            text.push_str(&format!(
                " | {:.2}x",
                row.cells[0].transactions_per_s / row.cells[1].transactions_per_s
            ));
        }
        text.push('\n');
    }
    text
}

pub fn to_json(rows: &[Row], targets: &[Target]) -> String {
    let cells = rows
        .iter()
        .map(|row| {
            let mut object = serde_json::Map::new();
            object.insert("test".into(), row.test.clone().into());
            object.insert("threads".into(), (row.threads as u64).into());
            for (target, cell) in targets.iter().zip(&row.cells) {
                object.insert(
                    target.name.clone(),
                    serde_json::json!({
                        "tps": cell.transactions_per_s,
                        "qps": cell.queries_per_s,
                        "p95_ms": cell.latency_p95_ms,
                        "errors": cell.errors,
                    }),
                );
            }
            if row.cells.len() == 2 && row.cells[1].transactions_per_s > 0.0 {
                object.insert(
                    "tps_ratio".into(),
                    (row.cells[0].transactions_per_s / row.cells[1].transactions_per_s).into(),
                );
            }
            serde_json::Value::Object(object)
        })
        .collect::<Vec<_>>();
    serde_json::json!({ "sysbench": cells }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmarks_cluster_has_room_for_the_default_tables_and_insert_cells() {
        let directory = std::env::temp_dir().join(format!(
            "shoal-bench-sysbench-config-test-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&directory);
        write_sandbox_config(&directory, 41186).unwrap();
        let path = directory.join("config.ini");
        let bytes = std::fs::read(&path).unwrap();
        let config = config::parse_bytes(&bytes, "config.ini").unwrap();
        std::fs::remove_dir_all(&directory).unwrap();
        assert_eq!(config.data_nodes.len(), 2);
        assert_eq!(config.no_of_replicas, 2);
        assert_eq!(config.management_nodes[0].port, 41186);
        // Room for the default run's rows is asserted at compile time,
        // next to SANDBOX_DATA_MEMORY_BYTES.
        for node in &config.data_nodes {
            assert_eq!(node.data_memory_bytes, SANDBOX_DATA_MEMORY_BYTES);
        }
    }

    #[test]
    fn a_run_output_gives_its_figures() {
        let text = "SQL statistics:\n    queries performed:\n        read:                            284020\n    transactions:                        28402  (1419.88 per sec.)\n    queries:                             568040 (28397.60 per sec.)\n    ignored errors:                      3      (0.15 per sec.)\n    reconnects:                          0      (0.00 per sec.)\nLatency (ms):\n         min:                                    0.26\n         95th percentile:                       22.69\n";
        let cell = parse_run(text).unwrap();
        assert_eq!(cell.transactions_per_s, 1419.88);
        assert_eq!(cell.queries_per_s, 28397.60);
        assert_eq!(cell.latency_p95_ms, 22.69);
        assert_eq!(cell.errors, 3);
        assert!(parse_run("nothing here").is_none());
    }

    #[test]
    fn a_cell_is_the_median_round_with_every_rounds_errors() {
        let cell = |tps: f64, errors: u64| Cell {
            transactions_per_s: tps,
            queries_per_s: tps * 2.0,
            latency_p95_ms: 1000.0 / tps,
            errors,
        };
        let median = median_cell(vec![cell(300.0, 0), cell(100.0, 2), cell(200.0, 1)]);
        assert_eq!(median.transactions_per_s, 200.0);
        assert_eq!(median.queries_per_s, 400.0);
        assert_eq!(median.errors, 3);
        // An even count: the lower middle round.
        let median = median_cell(vec![
            cell(400.0, 0),
            cell(100.0, 0),
            cell(300.0, 0),
            cell(200.0, 0),
        ]);
        assert_eq!(median.transactions_per_s, 200.0);
        assert_eq!(median_cell(vec![cell(7.0, 0)]).transactions_per_s, 7.0);
    }
}
