//! The command line of `shoal`: one subcommand per role, with the flags an
//! NDB user expects (`--ndb-connectstring`, `--ndb-nodeid`, `--initial`,
//! `-e`, `--config-file`).
//!
//! Only parsing lives here; what each role does is in `roles`. Flags of roles
//! that are not built yet are already parsed and validated so that scripts
//! written against them keep working once the role exists.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The default port of the management node, as in NDB.
pub const MGM_PORT_DEFAULT: u16 = 1186;

/// The default port of the SQL node, as in MySQL.
pub const SQL_PORT_DEFAULT: u16 = 3306;

/// Shoal: a shared-nothing, in-memory, synchronously replicated database in
/// the family of MySQL Cluster (NDB).
///
/// One binary plays every role of an NDB installation: the management node
/// (ndb_mgmd), the data nodes (ndbmtd), the SQL node (mysqld) and the
/// management client (ndb_mgm); applications use SQL over the MySQL
/// protocol or the native API (the shoal-client crate). Data lives in
/// memory only: there is no redo log, checkpoint or recovery from disk
/// yet. `shoal up` starts a whole local cluster with one command.
#[derive(Debug, Parser)]
#[command(name = "shoal", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sandbox: start a local cluster (1 mgmd, the data nodes, 1 SQL node)
    /// in the foreground.
    ///
    /// Starts one management node, `--nodes` data nodes in node groups of
    /// `--replicas` (NoOfReplicas) and one SQL node on `--sql-port`, all as
    /// children of this process, with their files under `--data-dir`, and
    /// restarts any of them that dies. Ctrl-C stops the cluster cleanly.
    Up(UpArgs),

    /// Management node (ndb_mgmd): configuration, node ids, cluster log,
    /// arbitration.
    ///
    /// Reads `config.ini`, hands every node its node id and the whole
    /// configuration, keeps the cluster log, acts as arbitrator when the
    /// cluster splits, and serves the management protocol that `shoal mgm`
    /// speaks.
    Mgmd(MgmdArgs),

    /// Data node (ndbmtd): stores and replicates rows, coordinates
    /// transactions.
    ///
    /// Stores the rows of the partitions (fragments) it replicates in
    /// DataMemory and runs a transaction coordinator (TC) and a local query
    /// handler (LDM). It fetches its configuration from the management node.
    /// Like ndbd it runs as two processes: an angel that starts the data
    /// node again after a crash (unless StopOnError, the default) or after
    /// `N RESTART`, and the data node itself; `--no-angel` runs one.
    /// Rows live in DataMemory; each node writes a redo log and local
    /// checkpoints in its DataDir (none with Diskless=1), so a restarted
    /// node restores its own disk and copies from its peer only what
    /// changed meanwhile.
    Datad(DatadArgs),

    /// SQL node (mysqld): the MySQL protocol on --port, SQL run on the data
    /// nodes through the native API.
    ///
    /// Connects to the cluster (waiting while it starts), creates the
    /// system tables (users, databases) if it is the first SQL node, and
    /// serves MySQL clients: the mysql CLI, drivers, sysbench. Users and
    /// tables live in the cluster, so every SQL node sees the same ones.
    Sqld(SqldArgs),

    /// Management client (ndb_mgm): SHOW, STATUS, REPORT MEMORY, STOP,
    /// RESTART, START, SHUTDOWN.
    ///
    /// Connects to the management node and runs these commands of ndb_mgm:
    /// `SHOW`, `ALL STATUS`, `N STATUS`, `ALL REPORT MEMORY`,
    /// `N REPORT MEMORY`, `ALL STOP`, `N STOP`, `N RESTART`
    /// (with -n it waits for START; -i, initial, deletes the node's disk
    /// state first), `N START`, `SHUTDOWN`, `HELP`, `QUIT`.
    /// With -e it runs one command and exits; without it, it reads commands
    /// interactively.
    Mgm(MgmArgs),

    /// Benchmarks: the storage engine alone, and primary-key operations
    /// through the native API (in the manner of NDB's flexAsynch).
    Bench(BenchArgs),

    /// Deterministic simulator: run the cluster protocols under seeded
    /// faults, or replay a failing seed.
    ///
    /// Runs every data node and the management node in one thread on
    /// virtual time, with message loss, delay, duplication, link cuts,
    /// partitions, crashes and restarts, and checks agreement on membership
    /// and the dictionary. A failure prints the command that replays it.
    Sim(SimArgs),
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Run the transaction workload and its checkers (bank, atomicity,
    /// uncommitted reads, lost updates, identical replicas); --fault-ms is
    /// how long the clients run after the tables are loaded.
    #[arg(long)]
    pub transactions: bool,

    /// With --transactions: data nodes crash while the workload runs (never
    /// the coordinators, and every node group keeps a live replica).
    #[arg(long, requires = "transactions")]
    pub crashes: bool,

    /// First seed to run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Number of consecutive seeds to run.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,

    /// Data nodes in the simulated cluster.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=48))]
    pub nodes: u8,

    /// NoOfReplicas of the simulated cluster.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub replicas: u8,

    /// Virtual milliseconds of faults.
    #[arg(long, default_value_t = 20_000)]
    pub fault_ms: u64,

    /// Virtual milliseconds without faults before the final checks.
    #[arg(long, default_value_t = 20_000)]
    pub settle_ms: u64,

    /// Run without faults.
    #[arg(long)]
    pub no_faults: bool,

    /// Run without the schema-change client.
    #[arg(long)]
    pub no_schema_changes: bool,

    /// Print the event trace of a passing run too (the last events).
    #[arg(long)]
    pub trace: bool,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    /// Directory holding the data of every node of the sandbox.
    #[arg(long, value_name = "DIR", default_value = "./shoal-data")]
    pub data_dir: PathBuf,

    /// Number of data nodes; a multiple of `--replicas`.
    #[arg(long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub nodes: u16,

    /// Replicas of every partition (NoOfReplicas, 1 to 4).
    #[arg(long, value_name = "R", default_value_t = 2,
          value_parser = clap::value_parser!(u8).range(1..=4))]
    pub replicas: u8,

    /// Port of the management node.
    #[arg(long, value_name = "PORT", default_value_t = MGM_PORT_DEFAULT)]
    pub mgm_port: u16,

    /// Port of the SQL node (MySQL protocol), on 127.0.0.1.
    #[arg(long, value_name = "PORT", default_value_t = SQL_PORT_DEFAULT)]
    pub sql_port: u16,
}

#[derive(Debug, Args)]
pub struct MgmdArgs {
    /// The cluster configuration, in NDB's config.ini format.
    #[arg(short = 'f', long, value_name = "FILE", default_value = "config.ini")]
    pub config_file: PathBuf,

    /// Port of the management protocol; without it, PortNumber of the
    /// `[ndb_mgmd]` section (1186 when unset).
    #[arg(short = 'P', long, value_name = "PORT")]
    pub port: Option<u16>,
}

#[derive(Debug, Args)]
pub struct DatadArgs {
    /// Where the management node listens.
    #[arg(
        short = 'c',
        long,
        visible_alias = "connect-string",
        value_name = "HOST:PORT",
        default_value = "localhost:1186"
    )]
    pub ndb_connectstring: String,

    /// Node id of this data node, as in config.ini; assigned by the
    /// management node when omitted.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..))]
    pub ndb_nodeid: Option<u8>,

    /// NDB's initial node restart: deletes this node's disk state (redo
    /// log and local checkpoints) before it starts, so it copies
    /// everything from its peers.
    #[arg(long)]
    pub initial: bool,

    /// Run the data node in this process, without the angel process that
    /// restarts it after a crash (as NDB's `--nodaemon` with no angel);
    /// `shoal up` uses it, since it supervises its data nodes itself.
    #[arg(long)]
    pub no_angel: bool,

    /// Internal: this process is the worker an angel started.
    #[arg(long, hide = true, requires_all = ["angel_pid", "report_fd"])]
    pub worker: bool,

    /// Internal: the angel's process id (the worker dies with it).
    #[arg(long, hide = true, value_name = "PID")]
    pub angel_pid: Option<u32>,

    /// Internal: the pipe the worker reports its phases and errors on.
    #[arg(long, hide = true, value_name = "FD")]
    pub report_fd: Option<i32>,
}

#[derive(Debug, Args)]
pub struct SqldArgs {
    /// Port of the MySQL protocol.
    #[arg(short = 'P', long, value_name = "PORT", default_value_t = SQL_PORT_DEFAULT)]
    pub port: u16,

    /// Address to listen on (0.0.0.0: every interface).
    #[arg(long, value_name = "ADDRESS", default_value = "0.0.0.0")]
    pub bind_address: String,

    /// Where the management node listens.
    #[arg(
        short = 'c',
        long,
        visible_alias = "connect-string",
        value_name = "HOST:PORT",
        default_value = "localhost:1186"
    )]
    pub ndb_connectstring: String,

    /// Cluster connections this SQL node opens (each takes an API slot);
    /// client connections are spread over them. By default one per worker
    /// thread up to 4, as many as there are free API slots (at least one).
    #[arg(long, value_name = "N")]
    pub ndb_cluster_connection_pool: Option<usize>,

    /// Where the SQL node keeps its TLS certificate and RSA keys.
    #[arg(
        long,
        visible_alias = "datadir",
        value_name = "DIR",
        default_value = "./shoal-sqld"
    )]
    pub data_dir: PathBuf,

    /// TLS certificate (PEM); a self-signed one is generated into the data
    /// directory when not given.
    #[arg(long, value_name = "FILE", requires = "ssl_key")]
    pub ssl_cert: Option<PathBuf>,

    /// TLS private key (PEM), with --ssl-cert.
    #[arg(long, value_name = "FILE", requires = "ssl_cert")]
    pub ssl_key: Option<PathBuf>,

    /// Most client connections at once (max_connections); one more is kept
    /// for an administrator, as in MySQL.
    #[arg(long, value_name = "N", default_value_t = 151)]
    pub max_connections: usize,

    /// Largest packet a client may send (max_allowed_packet), in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_allowed_packet: usize,

    /// Seconds an idle connection is kept (wait_timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 28_800)]
    pub wait_timeout: u64,

    /// Seconds to wait for the cluster at start before giving up
    /// (mysqld's ndb-wait-connected).
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub ndb_wait_connected: u64,

    /// Threads that serve the client connections, each many at once as
    /// tasks (default: one per core); 0 gives each connection a thread of
    /// its own.
    #[arg(long, value_name = "N", default_value_t = sqld::default_worker_threads())]
    pub worker_threads: usize,

    /// Microseconds a worker with nothing to run polls its sockets before
    /// it sleeps, 0 to 500 (as a data node's SchedulerSpinTimer).
    #[arg(long, value_name = "MICROSECONDS", default_value_t = sqld::WORKER_SPIN_DEFAULT_US)]
    pub worker_spin: u64,
}

#[derive(Debug, Args)]
pub struct MgmArgs {
    /// Where the management node listens.
    #[arg(
        short = 'c',
        long,
        visible_alias = "connect-string",
        value_name = "HOST:PORT",
        default_value = "localhost:1186"
    )]
    pub ndb_connectstring: String,

    /// Run this one command (for example "SHOW") and exit.
    #[arg(short = 'e', long, value_name = "COMMAND")]
    pub execute: Option<String>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// One partition of the storage engine, single-threaded: primary-key
    /// reads, inserts, updates, deletes, scans, memory per row and heap
    /// allocations per read.
    Storage(BenchStorageArgs),
    /// Primary-key operations through the native API against a cluster
    /// (seed 000 Table 1): synchronous threads, asynchronous batches, and
    /// round trips per read with and without distribution awareness.
    Pk(BenchPkArgs),
    /// Data node failure and restart on a cluster it starts (2 data nodes):
    /// SIGKILL and SIGSTOP to the first commit on the dead node's
    /// partitions, node restart time idle and under a write load, and the
    /// write latency during the restart.
    Failover(BenchFailoverArgs),
    /// Durability's cost and the restarts, on clusters it starts (2 data
    /// nodes): insert and update throughput with the redo log and
    /// checkpoints beside in memory only (Diskless), the data nodes' disk
    /// write bandwidth, a node restart after 10% of the rows changed, and
    /// a system restart after every process is killed.
    Restart(BenchRestartArgs),
    /// sysbench's OLTP tests against the SQL node (a cluster it starts, or
    /// --connect) and, with --vs, another MySQL-protocol server in the same
    /// run, alternating, with the ratio.
    Sysbench(BenchSysbenchArgs),
}

#[derive(Debug, Args)]
pub struct BenchSysbenchArgs {
    /// A running SQL node ("host:port", user root without password);
    /// without it the benchmark starts a cluster (2 data nodes).
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,

    /// Another MySQL-protocol server to measure beside Shoal ("host:port").
    #[arg(long, value_name = "HOST:PORT")]
    pub vs: Option<String>,

    /// The user of the --vs server.
    #[arg(long, value_name = "USER", default_value = "root")]
    pub vs_user: String,

    /// The password of the --vs server.
    #[arg(long, value_name = "PASSWORD", default_value = "")]
    pub vs_password: String,

    /// sysbench tests, comma separated.
    #[arg(long, value_name = "TEST,...", value_delimiter = ',',
          default_values_t = bench::sysbench::TESTS_DEFAULT.map(String::from))]
    pub tests: Vec<String>,

    /// Thread counts, comma separated.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_values_t = [1usize, 16, 64])]
    pub threads: Vec<usize>,

    /// Tables sysbench prepares.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub tables: u32,

    /// Rows per table.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub table_size: u64,

    /// Seconds per cell.
    #[arg(long, value_name = "S", default_value_t = 20)]
    pub time: u32,

    /// Rounds per cell, the servers alternating in each; each server's
    /// median round is shown (runs on a shared machine vary).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub runs: u32,

    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchRestartArgs {
    /// Rows inserted (and then updated, restarted, counted).
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    pub rows: u32,

    /// Bytes of each row's payload.
    #[arg(long, value_name = "BYTES", default_value_t = 256)]
    pub row_bytes: u16,

    /// Client threads, each running one-row transactions.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub threads: usize,

    /// Seconds of random updates on each cluster.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub update_seconds: f64,

    /// Rounds of the load, alternating between the two clusters (by
    /// default one per 50,000 rows, 4 to 40).
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchFailoverArgs {
    /// Rows loaded before measuring.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub rows: u32,

    /// Bytes of each row's payload.
    #[arg(long, value_name = "BYTES", default_value_t = 512)]
    pub row_bytes: u16,

    /// Writes per second during the restart under load.
    #[arg(long, value_name = "N", default_value_t = 2_000)]
    pub updates_per_s: u32,

    /// NodeRecoveryCopyRowsPerSecond of the cluster (default: the
    /// configuration's default).
    #[arg(long, value_name = "N")]
    pub copy_rows_per_second: Option<u64>,

    /// NodeRecoveryCopyBatchRows of the cluster (default: the
    /// configuration's default).
    #[arg(long, value_name = "N")]
    pub copy_batch_rows: Option<u32>,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchPkArgs {
    /// A running cluster's management node ("host:port"); without it the
    /// benchmark starts its own clusters (2 data nodes, then 4).
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,

    /// Thread counts of the synchronous runs, comma separated.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_values_t = [1usize, 16])]
    pub threads: Vec<usize>,

    /// Rows each thread inserts, reads, updates and deletes.
    #[arg(long, value_name = "N", default_value_t = 2_000)]
    pub rows: u32,

    /// Committed reads per asynchronous transaction.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub batch: u32,

    /// Asynchronous transactions in flight.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub in_flight: u32,

    /// Seconds of the asynchronous run.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub async_seconds: f64,

    /// Skip the 4-data-node cluster for the round-trip figures.
    #[arg(long)]
    pub no_four_nodes: bool,

    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchStorageArgs {
    /// Rows loaded into the partition before measuring.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub rows: u64,

    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
