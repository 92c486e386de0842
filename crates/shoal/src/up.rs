//! `shoal up`: the sandbox. One command starts a whole cluster on this
//! machine — a management node and the data nodes, each a child process
//! running this same binary — and supervises it in the foreground until
//! Ctrl-C or SIGTERM, which stops it cleanly.
//!
//! Life of a sandbox:
//! 1. The flags are checked, `--data-dir` is created and `config.ini` is
//!    written into it (or an existing one is reused as it is).
//! 2. `shoal mgmd` starts; once its port answers a status request, one
//!    `shoal datad` per data node of the configuration starts. Every child's
//!    stdout and stderr go to `out.log` in its node directory.
//! 3. The management node is asked for the status every 200 ms until every
//!    data node has started, then `Cluster ready:` is printed once.
//! 4. Meanwhile a data node that dies is restarted after 1 s, like NDB's
//!    angel process, within a budget of restarts per minute; a data node
//!    that exits with status 0 was stopped on purpose (`shoal mgm -e "2
//!    STOP"`) and stays down. The management node is restarted the same
//!    way, with its own budget; the data nodes go on without it meanwhile
//!    and dial it again. Its clean exit (after SHUTDOWN) ends the sandbox.
//! 5. On a signal, the management node is asked to shut the cluster down,
//!    so data nodes leave cleanly; whatever has not exited within 15 s is
//!    killed, and every child is waited for.
//!
//! Children run in their own process group, so the terminal's Ctrl-C
//! reaches only this process, which then stops them in order (data nodes
//! through the management node, then the management node). [`Children`]
//! kills and reaps whatever is left when it is dropped, so no error path or
//! panic leaves a node running. Only a SIGKILL of `shoal up` itself can
//! orphan them; `shoal mgm -c 127.0.0.1:PORT -e SHUTDOWN` stops those.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use config::ClusterConfig;
use protocol::{Message, NodeId, NodeRole, NodeState, NodeStatus};
use runtime::blocking::BlockingConnection;

use crate::cli::UpArgs;

/// DataMemory of each sandbox data node.
const DATA_MEMORY_BYTES: u64 = 256 * 1024 * 1024;

/// The most data nodes a sandbox starts: NDB's limit for a cluster.
const DATA_NODES_MAX: u16 = 48;

/// Every sandbox node runs on this machine, on the loopback interface.
const SANDBOX_HOST: &str = "127.0.0.1";

/// How long the management node gets to answer on its port.
const MANAGEMENT_START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the data nodes get to start before `shoal up` says which did
/// not (it keeps waiting afterwards).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the management node is asked for the status until ready.
const STATUS_POLL_INTERVAL: Duration = Duration::from_millis(200);

/// How long one status request may take; short, since the supervisor
/// loop waits for it.
const STATUS_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the supervisor looks at its children and the signal flag.
const SUPERVISE_INTERVAL: Duration = Duration::from_millis(100);

/// How long a clean stop may take before the remaining children are
/// killed: the management node's drain (at most 10 s, to make the last
/// commits durable) and the nodes' exits.
const STOP_TIMEOUT: Duration = Duration::from_secs(25);

/// The pause before a dead node is started again, so a node that
/// fails at once does not spin.
const RESTART_DELAY: Duration = Duration::from_secs(1);

/// Restarts allowed per node (data or management) within [`RESTART_WINDOW`].
const RESTARTS_PER_WINDOW_MAX: usize = 10;

/// The sliding window of the restart budget.
const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// Lines of a child's `out.log` shown when it fails to start.
const LOG_TAIL_LINES: usize = 10;

/// `shoal up`.
pub fn run(args: &UpArgs) -> ExitCode {
    if let Err(message) = validate(args.nodes, args.replicas) {
        eprintln!("shoal up: {message}");
        return ExitCode::from(2);
    }
    // Installed first, so a Ctrl-C during start-up also stops cleanly.
    let stop_requested = Arc::new(AtomicBool::new(false));
    // SIGHUP too: a closed terminal must stop the cluster, not orphan it.
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGQUIT,
    ] {
        if let Err(error) = signal_hook::flag::register(signal, Arc::clone(&stop_requested)) {
            eprintln!("shoal up: cannot install the signal handler: {error}");
            return ExitCode::FAILURE;
        }
    }
    // Before anything is written or started, so the error names the cause.
    if let Err(message) = check_port_free(args.mgm_port) {
        eprintln!("shoal up: {message}");
        return ExitCode::FAILURE;
    }
    if let Err(message) = check_port_free(args.sql_port) {
        eprintln!("shoal up: {message} (the SQL port: choose another with --sql-port)");
        return ExitCode::FAILURE;
    }
    let sandbox = match Sandbox::prepare(args) {
        Ok(sandbox) => sandbox,
        Err(message) => {
            eprintln!("shoal up: {message}");
            return ExitCode::FAILURE;
        }
    };
    let mut children = Children::default();
    match start(&sandbox, &mut children, &stop_requested) {
        Ok(()) => {}
        Err(message) => {
            eprintln!("shoal up: {message}");
            // The guard's drop would kill them too; stopping them here
            // gives the data nodes their clean stop first.
            terminate_all(&mut children, Instant::now() + STOP_TIMEOUT);
            return ExitCode::FAILURE;
        }
    }
    supervise(&sandbox, &mut children, &stop_requested)
}

/// Checks the shape asked for on the command line.
pub fn validate(nodes: u16, replicas: u8) -> Result<(), String> {
    if nodes > DATA_NODES_MAX {
        return Err(format!(
            "--nodes {nodes}: a cluster has at most {DATA_NODES_MAX} data nodes"
        ));
    }
    if !nodes.is_multiple_of(u16::from(replicas)) {
        return Err(format!(
            "--nodes {nodes} does not split into node groups of --replicas {replicas}: \
             the number of data nodes must be a multiple of the replicas"
        ));
    }
    Ok(())
}

/// Where the sandbox lives and what its configuration says.
struct Sandbox {
    /// Absolute, so the paths in config.ini do not depend on where the
    /// children run.
    data_dir: PathBuf,
    config_path: PathBuf,
    config: ClusterConfig,
    mgm_port: u16,
    sql_port: u16,
}

impl Sandbox {
    /// Creates the data directory and writes config.ini, or reuses the one
    /// there (the existing file wins over the flags, so a restarted sandbox
    /// finds its data where it left it).
    fn prepare(args: &UpArgs) -> Result<Sandbox, String> {
        fs::create_dir_all(&args.data_dir)
            .map_err(|error| format!("cannot create {}: {error}", args.data_dir.display()))?;
        let data_dir = fs::canonicalize(&args.data_dir)
            .map_err(|error| format!("cannot resolve {}: {error}", args.data_dir.display()))?;
        let data_dir_text = data_dir
            .to_str()
            .ok_or_else(|| format!("{} is not valid UTF-8", data_dir.display()))?
            .to_string();
        let config_path = data_dir.join("config.ini");
        let config_name = config_path.display().to_string();
        let bytes = if config_path.exists() {
            let bytes = fs::read(&config_path)
                .map_err(|error| format!("cannot read {config_name}: {error}"))?;
            println!("Using existing {config_name}");
            bytes
        } else {
            let data_nodes = u8::try_from(args.nodes).expect("validate() limits --nodes to 48");
            let text = config::sandbox_config_text(
                &data_dir_text,
                data_nodes,
                args.replicas,
                args.mgm_port,
                DATA_MEMORY_BYTES,
            );
            fs::write(&config_path, &text)
                .map_err(|error| format!("cannot write {config_name}: {error}"))?;
            println!("Wrote {config_name}");
            text.into_bytes()
        };
        let config = config::parse_bytes(&bytes, &config_name).map_err(|error| {
            format!(
                "{error}\n(remove {} to start a fresh sandbox)",
                data_dir.display()
            )
        })?;
        if config.management_nodes.is_empty() {
            return Err(format!("{config_name} has no [ndb_mgmd] section"));
        }
        // An existing config.ini may set NDB keys Shoal does not act on;
        // say so here too, not only in the management node's log.
        for notice in &config.notices {
            println!("Note: {notice}");
        }
        let data_nodes = config.data_nodes.len();
        let replicas = config.no_of_replicas;
        println!(
            "Cluster shape: {data_nodes} data node(s), {replicas} replica(s), {} node group(s)",
            config.node_groups.len()
        );
        if data_nodes != usize::from(args.nodes) || replicas != args.replicas {
            println!(
                "Note: the existing config.ini wins over --nodes {} --replicas {}; \
                 remove {} to start a fresh sandbox of another shape",
                args.nodes,
                args.replicas,
                data_dir.display()
            );
        }
        Ok(Sandbox {
            data_dir,
            config_path,
            config,
            mgm_port: args.mgm_port,
            sql_port: args.sql_port,
        })
    }

    fn management_node(&self) -> NodeId {
        self.config.management_nodes[0].node_id
    }

    fn management_address(&self) -> String {
        format!("{SANDBOX_HOST}:{}", self.mgm_port)
    }

    /// The directory holding a node's `out.log`.
    fn node_dir(&self, kind: &str, node: NodeId) -> PathBuf {
        self.data_dir.join(format!("{kind}-{node}"))
    }

    /// The management node's cluster log: `ndb_<id>_cluster.log` in its
    /// DataDir, which a relative path places beside config.ini.
    fn cluster_log_path(&self) -> PathBuf {
        let management = &self.config.management_nodes[0];
        let directory = Path::new(&management.data_dir);
        let directory = if directory.is_absolute() {
            directory.to_path_buf()
        } else {
            self.data_dir.join(directory)
        };
        directory.join(format!("ndb_{}_cluster.log", management.node_id))
    }

    /// The SQL node's output.
    fn sql_node_log(&self) -> PathBuf {
        self.data_dir.join("mysqld").join("out.log")
    }

    fn data_node_ids(&self) -> Vec<NodeId> {
        self.config
            .data_nodes
            .iter()
            .map(|node| node.node_id)
            .collect()
    }
}

/// What a data node's supervisor is doing about it.
enum DataNodeState {
    Running(Child),
    /// Dead; to be started again at this time.
    RestartAt(Instant),
    /// Stopped on purpose, or out of restarts: left down.
    Down,
}

struct DataNode {
    node: NodeId,
    log_path: PathBuf,
    state: DataNodeState,
    budget: RestartBudget,
}

/// Every child process. Dropping it kills and reaps whatever still runs,
/// so an early return or a panic leaves nothing behind.
#[derive(Default)]
struct Children {
    management: Option<Child>,
    data_nodes: Vec<DataNode>,
    sql_node: Option<Child>,
}

impl Children {
    fn running(&mut self) -> impl Iterator<Item = &mut Child> {
        self.management
            .iter_mut()
            .chain(self.sql_node.iter_mut())
            .chain(
                self.data_nodes
                    .iter_mut()
                    .filter_map(|data| match &mut data.state {
                        DataNodeState::Running(child) => Some(child),
                        _ => None,
                    }),
            )
    }

    /// Reaps every child that has exited; true when none is left.
    fn reap(&mut self) -> bool {
        if let Some(child) = &mut self.management
            && !matches!(child.try_wait(), Ok(None))
        {
            self.management = None;
        }
        if let Some(child) = &mut self.sql_node
            && !matches!(child.try_wait(), Ok(None))
        {
            self.sql_node = None;
        }
        for data in &mut self.data_nodes {
            if let DataNodeState::Running(child) = &mut data.state
                && !matches!(child.try_wait(), Ok(None))
            {
                data.state = DataNodeState::Down;
            }
        }
        self.running().next().is_none()
    }

    /// Waits until every child has exited or `deadline` passes, then kills
    /// and reaps the rest. Returns how many had to be killed.
    fn wait_all(&mut self, deadline: Instant) -> usize {
        while !self.reap() && Instant::now() < deadline {
            std::thread::sleep(SUPERVISE_INTERVAL);
        }
        let mut killed = 0;
        for child in self.running() {
            // An error means it exited in the meantime; wait() reaps it
            // either way.
            let _ = child.kill();
            let _ = child.wait();
            killed += 1;
        }
        self.management = None;
        self.sql_node = None;
        for data in &mut self.data_nodes {
            data.state = DataNodeState::Down;
        }
        killed
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for child in self.running() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Restarts of one node within a sliding window, like the limit an angel
/// process keeps so a node that cannot start does not loop forever.
#[derive(Debug)]
pub struct RestartBudget(runtime::angel::RestartWindow);

impl Default for RestartBudget {
    fn default() -> RestartBudget {
        RestartBudget(runtime::angel::RestartWindow::new(
            RESTARTS_PER_WINDOW_MAX,
            RESTART_WINDOW,
        ))
    }
}

impl RestartBudget {
    /// Records a restart at `now` if fewer than
    /// [`RESTARTS_PER_WINDOW_MAX`] happened in the window before it; false
    /// when the budget is spent.
    pub fn take(&mut self, now: Instant) -> bool {
        self.0.take(now)
    }
}

/// Starts the management node, waits for it, then starts the data nodes
/// and says where everything is.
fn start(
    sandbox: &Sandbox,
    children: &mut Children,
    stop_requested: &AtomicBool,
) -> Result<(), String> {
    let management = sandbox.management_node();
    let management_dir = sandbox.node_dir("ndb_mgmd", management);
    let management_log = management_dir.join("out.log");
    children.management = Some(spawn(&management_arguments(sandbox), &management_log)?);
    wait_for_management(sandbox, children, &management_log, stop_requested)?;
    println!(
        "management node {management} on {} (cluster log: {}; output: {})",
        sandbox.management_address(),
        sandbox.cluster_log_path().display(),
        management_log.display()
    );
    for node in sandbox.data_node_ids() {
        let log_path = sandbox.node_dir("ndbd", node).join("out.log");
        let child = spawn(&data_node_arguments(sandbox, node), &log_path)?;
        println!("data node {node} (log: {})", log_path.display());
        children.data_nodes.push(DataNode {
            node,
            log_path,
            state: DataNodeState::Running(child),
            budget: RestartBudget::default(),
        });
    }
    let sql_log = sandbox.sql_node_log();
    children.sql_node = Some(spawn(&sql_node_arguments(sandbox), &sql_log)?);
    println!(
        "SQL node on {SANDBOX_HOST}:{} (log: {})",
        sandbox.sql_port,
        sql_log.display()
    );
    println!("Waiting for the data nodes to start...");
    Ok(())
}

/// Refuses to start when something already listens on the management
/// port: the management node would fail with a less direct message.
fn check_port_free(port: u16) -> Result<(), String> {
    // Binding the wildcard address fails when any address has the port.
    TcpListener::bind(("0.0.0.0", port))
        .map(drop)
        .map_err(|error| {
            format!(
                "port {port} is already in use ({error}); is another cluster running? \
             choose another port with --mgm-port"
            )
        })
}

fn management_arguments(sandbox: &Sandbox) -> Vec<String> {
    vec![
        "mgmd".to_string(),
        "--config-file".to_string(),
        sandbox.config_path.display().to_string(),
        "--port".to_string(),
        sandbox.mgm_port.to_string(),
    ]
}

fn sql_node_arguments(sandbox: &Sandbox) -> Vec<String> {
    vec![
        "sqld".to_string(),
        "--ndb-connectstring".to_string(),
        sandbox.management_address(),
        "--port".to_string(),
        sandbox.sql_port.to_string(),
        "--bind-address".to_string(),
        SANDBOX_HOST.to_string(),
        "--data-dir".to_string(),
        sandbox.data_dir.join("mysqld").display().to_string(),
        "--worker-threads".to_string(),
        sandbox_worker_threads(sandbox.config.data_nodes.len()).to_string(),
    ]
}

/// The SQL node's workers in a sandbox: the cores its data nodes (one busy
/// thread each) leave, at least one. Why: a worker more than the free cores
/// takes turns with a data node on a core, each turn a switch between
/// processes (on 2 cores with 2 data nodes, 1 worker gave 10-45% more
/// sysbench throughput than 2).
fn sandbox_worker_threads(data_nodes: usize) -> usize {
    sqld::default_worker_threads()
        .saturating_sub(data_nodes)
        .max(1)
}

fn data_node_arguments(sandbox: &Sandbox, node: NodeId) -> Vec<String> {
    vec![
        "datad".to_string(),
        "--ndb-connectstring".to_string(),
        sandbox.management_address(),
        "--ndb-nodeid".to_string(),
        node.to_string(),
        // `shoal up` is the angel of its data nodes.
        "--no-angel".to_string(),
    ]
}

/// Starts this binary with `arguments`, its output appended to `log_path`.
fn spawn(arguments: &[String], log_path: &Path) -> Result<Child, String> {
    let executable = std::env::current_exe()
        .map_err(|error| format!("cannot find the shoal executable: {error}"))?;
    if let Some(directory) = log_path.parent() {
        fs::create_dir_all(directory)
            .map_err(|error| format!("cannot create {}: {error}", directory.display()))?;
    }
    let open_error = |error: std::io::Error| format!("cannot open {}: {error}", log_path.display());
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .map_err(open_error)?;
    // Marks each start, so restarts are easy to find in the log.
    writeln!(log, "--- shoal up: starting shoal {}", arguments.join(" ")).map_err(open_error)?;
    let stderr = log.try_clone().map_err(open_error)?;
    Command::new(&executable)
        .args(arguments)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        // Own process group: the terminal's Ctrl-C is for `shoal up`, which
        // stops the children in order.
        .process_group(0)
        .spawn()
        .map_err(|error| {
            format!(
                "cannot start {} {}: {error}",
                executable.display(),
                arguments.join(" ")
            )
        })
}

/// Waits until the management node answers a status request, failing fast
/// when it exits.
fn wait_for_management(
    sandbox: &Sandbox,
    children: &mut Children,
    log_path: &Path,
    stop_requested: &AtomicBool,
) -> Result<(), String> {
    let deadline = Instant::now() + MANAGEMENT_START_TIMEOUT;
    let address = sandbox.management_address();
    let mut status = StatusClient::new(address.clone());
    loop {
        if stop_requested.load(Ordering::SeqCst) {
            return Err("stopped by a signal while starting".to_string());
        }
        if let Some(child) = &mut children.management
            && let Ok(Some(exit)) = child.try_wait()
        {
            children.management = None;
            return Err(format!(
                "the management node exited at start ({exit}); its output ({}):\n{}",
                log_path.display(),
                log_tail(log_path)
            ));
        }
        if status.poll().is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the management node did not answer on {address} within {} s; its output ({}):\n{}",
                MANAGEMENT_START_TIMEOUT.as_secs(),
                log_path.display(),
                log_tail(log_path)
            ));
        }
        std::thread::sleep(SUPERVISE_INTERVAL);
    }
}

/// The last lines of a log, indented, for an error message.
fn log_tail(path: &Path) -> String {
    let Ok(file) = File::open(path) else {
        return "  (no output)".to_string();
    };
    let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    let start = lines.len().saturating_sub(LOG_TAIL_LINES);
    lines[start..]
        .iter()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asks the management node for the status over one connection, opened
/// again whenever it fails.
struct StatusClient {
    address: String,
    connection: Option<BlockingConnection>,
    next_request: u64,
}

impl StatusClient {
    fn new(address: String) -> StatusClient {
        StatusClient {
            address,
            connection: None,
            next_request: 1,
        }
    }

    fn connection(&mut self) -> Result<&mut BlockingConnection, String> {
        let connection = match self.connection.take() {
            Some(connection) => connection,
            None => BlockingConnection::connect(&self.address, 0, NodeRole::Api, STATUS_TIMEOUT)
                .map_err(|error| error.to_string())?,
        };
        Ok(self.connection.insert(connection))
    }

    fn poll(&mut self) -> Result<Vec<NodeStatus>, String> {
        let id = self.next_request;
        self.next_request += 1;
        let connection = self.connection()?;
        let reply = connection.request(
            Message::StatusRequest { request: id },
            STATUS_TIMEOUT,
            |message| matches!(message, Message::StatusReply { request, .. } if *request == id),
        );
        match reply {
            Ok(Message::StatusReply { nodes, .. }) => Ok(nodes),
            Ok(other) => Err(format!("unexpected reply {}", other.name())),
            Err(error) => {
                self.connection = None;
                Err(error.to_string())
            }
        }
    }

    /// Asks the management node to stop every data node and then itself.
    fn shutdown(&mut self, timeout: Duration) -> Result<Vec<NodeId>, String> {
        let id = self.next_request;
        self.next_request += 1;
        let connection = self.connection()?;
        let reply = connection.request(
            Message::StopRequest {
                request: id,
                node: None,
                include_management: true,
                restart: None,
            },
            timeout,
            |message| matches!(message, Message::StopReply { request, .. } if *request == id),
        );
        self.connection = None;
        match reply {
            Ok(Message::StopReply { result, .. }) => result.map_err(|error| error.message),
            Ok(other) => Err(format!("unexpected reply {}", other.name())),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// The data nodes among `expected` that have not started, with their state
/// (a node missing from the status counts as not connected). Empty: ready.
pub fn not_started(expected: &[NodeId], nodes: &[NodeStatus]) -> Vec<(NodeId, NodeState)> {
    expected
        .iter()
        .filter_map(|&id| {
            let state = nodes
                .iter()
                .find(|node| node.node == id && node.role == NodeRole::Data)
                .map_or(NodeState::NotConnected, |node| node.state);
            (state != NodeState::Started).then_some((id, state))
        })
        .collect()
}

/// The one line that says the cluster is up.
pub fn ready_line(data_nodes: usize, node_groups: usize, management_address: &str) -> String {
    format!(
        "Cluster ready: {data_nodes} data nodes in {node_groups} node group(s); \
         connect with: shoal mgm -c {management_address}"
    )
}

/// The data nodes still missing, as `data node 3 is not connected, data
/// node 4 is starting`.
fn describe_not_started(missing: &[(NodeId, NodeState)]) -> String {
    missing
        .iter()
        .map(|(node, state)| format!("data node {node} is {}", state.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Watches for the cluster to become ready and says so once.
struct Readiness {
    status: StatusClient,
    expected: Vec<NodeId>,
    next_poll: Instant,
    deadline: Instant,
    ready: bool,
    late_reported: bool,
}

impl Readiness {
    fn step(&mut self, sandbox: &Sandbox, now: Instant) {
        if self.ready || now < self.next_poll {
            return;
        }
        self.next_poll = now + STATUS_POLL_INTERVAL;
        let missing = match self.status.poll() {
            Ok(nodes) => not_started(&self.expected, &nodes),
            Err(_) => self
                .expected
                .iter()
                .map(|&node| (node, NodeState::NotConnected))
                .collect(),
        };
        if missing.is_empty() {
            self.ready = true;
            // The status connection is not needed any more.
            self.status.connection = None;
            println!(
                "{}",
                ready_line(
                    self.expected.len(),
                    sandbox.config.node_groups.len(),
                    &sandbox.management_address()
                )
            );
            println!("Press Ctrl-C to stop the cluster.");
        } else if now >= self.deadline && !self.late_reported {
            self.late_reported = true;
            println!(
                "The cluster is not ready after {} s: {}; still waiting (see the logs under {})",
                READY_TIMEOUT.as_secs(),
                describe_not_started(&missing),
                sandbox.data_dir.display()
            );
        }
    }
}

/// The foreground loop: restarts data nodes and the management node,
/// reports readiness, and stops on a signal or after SHUTDOWN.
fn supervise(sandbox: &Sandbox, children: &mut Children, stop_requested: &AtomicBool) -> ExitCode {
    let started = Instant::now();
    let mut readiness = Readiness {
        status: StatusClient::new(sandbox.management_address()),
        expected: sandbox.data_node_ids(),
        next_poll: started,
        deadline: started + READY_TIMEOUT,
        ready: false,
        late_reported: false,
    };
    let mut sql_node = SqlNode {
        restart_at: None,
        budget: RestartBudget::default(),
        ready_reported: false,
    };
    let mut management = ManagementNode {
        node: sandbox.management_node(),
        log_path: sandbox
            .node_dir("ndb_mgmd", sandbox.management_node())
            .join("out.log"),
        restart_at: None,
        budget: RestartBudget::default(),
    };
    loop {
        if stop_requested.load(Ordering::SeqCst) {
            return stop_cluster(sandbox, children);
        }
        let now = Instant::now();
        for data in &mut children.data_nodes {
            supervise_data_node(sandbox, data, now);
        }
        sql_node.supervise(sandbox, &mut children.sql_node, now);
        if let Some(exit) = management.supervise(sandbox, &mut children.management, now) {
            // A clean exit follows SHUTDOWN (or a signal sent to the
            // management node itself): the cluster is meant to stop.
            println!(
                "management node {} stopped ({exit}): the cluster was shut down",
                management.node
            );
            terminate_all(children, Instant::now() + STOP_TIMEOUT);
            return ExitCode::SUCCESS;
        }
        readiness.step(sandbox, now);
        std::thread::sleep(SUPERVISE_INTERVAL);
    }
}

/// The angel of the management node. Data nodes do not need it to go on
/// (they keep their connections to each other and to API nodes, and dial
/// it again when it is back), so a crash restarts it instead of stopping
/// the cluster.
struct ManagementNode {
    node: NodeId,
    log_path: PathBuf,
    /// Dead; to be started again at this time.
    restart_at: Option<Instant>,
    budget: RestartBudget,
}

impl ManagementNode {
    /// Notices an exit of `child` and restarts it when due. Returns the
    /// exit status of a clean exit, which ends the sandbox.
    fn supervise(
        &mut self,
        sandbox: &Sandbox,
        child: &mut Option<Child>,
        now: Instant,
    ) -> Option<ExitStatus> {
        let node = self.node;
        if let Some(running) = child {
            let exit = match running.try_wait() {
                Ok(Some(exit)) => exit,
                Ok(None) => return None,
                Err(error) => {
                    eprintln!("management node {node}: cannot check the process: {error}");
                    return None;
                }
            };
            *child = None;
            if exit.success() {
                return Some(exit);
            }
            if self.budget.take(now) {
                eprintln!(
                    "management node {node} exited unexpectedly ({exit}); restarting it in {} s, \
                     the data nodes go on meanwhile (log: {})",
                    RESTART_DELAY.as_secs(),
                    self.log_path.display()
                );
                self.restart_at = Some(now + RESTART_DELAY);
            } else {
                eprintln!(
                    "management node {node} exited ({exit}) and has restarted \
                     {RESTARTS_PER_WINDOW_MAX} times within {} s; giving up on it, the data \
                     nodes go on without it and Ctrl-C stops them (see {})",
                    RESTART_WINDOW.as_secs(),
                    self.log_path.display()
                );
            }
            return None;
        }
        if let Some(when) = self.restart_at
            && now >= when
        {
            self.restart_at = None;
            match spawn(&management_arguments(sandbox), &self.log_path) {
                Ok(started) => {
                    println!("management node {node} restarted");
                    *child = Some(started);
                }
                Err(message) => {
                    eprintln!("management node {node}: {message}; leaving it down");
                }
            }
        }
        None
    }
}

/// The angel of the SQL node: restarts it when it dies, and says once
/// when it accepts connections.
struct SqlNode {
    restart_at: Option<Instant>,
    budget: RestartBudget,
    ready_reported: bool,
}

impl SqlNode {
    fn supervise(&mut self, sandbox: &Sandbox, child: &mut Option<Child>, now: Instant) {
        if let Some(running) = child {
            match running.try_wait() {
                Ok(None) => {
                    if !self.ready_reported && sql_node_ready(&sandbox.sql_node_log()) {
                        self.ready_reported = true;
                        println!(
                            "SQL node ready: mysql -h {SANDBOX_HOST} -P {} -u root",
                            sandbox.sql_port
                        );
                    }
                }
                Ok(Some(exit)) => {
                    *child = None;
                    if self.budget.take(now) {
                        eprintln!(
                            "SQL node exited ({exit}); restarting it in {} s (log: {})",
                            RESTART_DELAY.as_secs(),
                            sandbox.sql_node_log().display()
                        );
                        self.restart_at = Some(now + RESTART_DELAY);
                    } else {
                        eprintln!(
                            "SQL node exited ({exit}) and has restarted {RESTARTS_PER_WINDOW_MAX} \
                             times within {} s; giving up on it (see {})",
                            RESTART_WINDOW.as_secs(),
                            sandbox.sql_node_log().display()
                        );
                    }
                }
                Err(error) => eprintln!("SQL node: cannot check the process: {error}"),
            }
            return;
        }
        if let Some(when) = self.restart_at
            && now >= when
        {
            self.restart_at = None;
            self.ready_reported = false;
            match spawn(&sql_node_arguments(sandbox), &sandbox.sql_node_log()) {
                Ok(started) => {
                    println!("SQL node restarted");
                    *child = Some(started);
                }
                Err(message) => eprintln!("SQL node: {message}; leaving it down"),
            }
        }
    }
}

/// Whether the SQL node's latest start (in its log) says it is ready:
/// it has reached the cluster and accepts clients.
fn sql_node_ready(log: &Path) -> bool {
    let Ok(text) = fs::read_to_string(log) else {
        return false;
    };
    let latest = text.rsplit("--- shoal up: starting").next().unwrap_or("");
    latest.contains("sqld: ready for connections")
}

/// The angel of one data node: notices its exit and restarts it.
fn supervise_data_node(sandbox: &Sandbox, data: &mut DataNode, now: Instant) {
    let node = data.node;
    match &mut data.state {
        DataNodeState::Running(child) => {
            let exit = match child.try_wait() {
                Ok(Some(exit)) => exit,
                Ok(None) => return,
                Err(error) => {
                    eprintln!("data node {node}: cannot check the process: {error}");
                    return;
                }
            };
            data.state = after_exit(node, exit, &mut data.budget, now, &data.log_path);
        }
        DataNodeState::RestartAt(when) => {
            if now < *when {
                return;
            }
            match spawn(&data_node_arguments(sandbox, node), &data.log_path) {
                Ok(child) => {
                    println!("data node {node} restarted");
                    data.state = DataNodeState::Running(child);
                }
                Err(message) => {
                    eprintln!("data node {node}: {message}; leaving it down");
                    data.state = DataNodeState::Down;
                }
            }
        }
        DataNodeState::Down => {}
    }
}

/// What to do after a data node exited with `exit`.
fn after_exit(
    node: NodeId,
    exit: ExitStatus,
    budget: &mut RestartBudget,
    now: Instant,
    log_path: &Path,
) -> DataNodeState {
    if exit.success() {
        // A clean exit is a stop someone asked for (`N STOP`, `ALL STOP`):
        // restarting would undo it.
        println!("data node {node} stopped ({exit}); it stays down until the next `shoal up`");
        return DataNodeState::Down;
    }
    let code = exit.code();
    if code == Some(i32::from(runtime::exit::EXIT_RESTART))
        || code == Some(i32::from(runtime::exit::EXIT_RESTART_WAIT_FOR_START))
    {
        // `N RESTART`: `shoal up` plays the angel, so it starts the node
        // again at once. It cannot hold a node for `N START` (`-n`): only
        // the angel of `shoal datad` can, so that restart starts at once
        // too.
        let wait = code == Some(i32::from(runtime::exit::EXIT_RESTART_WAIT_FOR_START));
        if budget.take(now) {
            println!(
                "data node {node} restarting as asked{}",
                if wait {
                    " (shoal up cannot wait for START: it starts the node now)"
                } else {
                    ""
                }
            );
            return DataNodeState::RestartAt(now);
        }
    }
    if budget.take(now) {
        eprintln!(
            "data node {node} exited ({exit}); restarting it in {} s (log: {})",
            RESTART_DELAY.as_secs(),
            log_path.display()
        );
        DataNodeState::RestartAt(now + RESTART_DELAY)
    } else {
        eprintln!(
            "data node {node} exited ({exit}) and has restarted {RESTARTS_PER_WINDOW_MAX} \
             times within {} s; giving up on it (see {})",
            RESTART_WINDOW.as_secs(),
            log_path.display()
        );
        DataNodeState::Down
    }
}

/// Ctrl-C or SIGTERM: a clean cluster shutdown through the management node,
/// bounded by [`STOP_TIMEOUT`].
fn stop_cluster(sandbox: &Sandbox, children: &mut Children) -> ExitCode {
    println!("Stopping the cluster...");
    let deadline = Instant::now() + STOP_TIMEOUT;
    // The SQL node first: its clients' transactions end before the data
    // nodes go.
    if let Some(child) = &children.sql_node {
        send_sigterm(child);
    }
    if children.management.is_some() {
        let mut status = StatusClient::new(sandbox.management_address());
        match status.shutdown(STOP_TIMEOUT) {
            Ok(stopped) => println!("{} data node(s) stopped", stopped.len()),
            Err(message) => {
                eprintln!("the management node did not stop the cluster: {message}");
                // Whatever is left gets SIGTERM; the deadline still holds.
                terminate_all(children, deadline);
            }
        }
    } else {
        terminate_all(children, deadline);
    }
    report_killed(children.wait_all(deadline));
    println!("Cluster stopped.");
    ExitCode::SUCCESS
}

/// Stops every child without the management node's help: SIGTERM (a clean
/// stop for both roles), then a kill at `deadline`.
fn terminate_all(children: &mut Children, deadline: Instant) {
    if let Some(child) = &children.sql_node {
        send_sigterm(child);
    }
    terminate_data_nodes(children);
    if let Some(child) = &children.management {
        send_sigterm(child);
    }
    report_killed(children.wait_all(deadline));
}

fn report_killed(killed: usize) {
    if killed > 0 {
        eprintln!(
            "{killed} process(es) did not stop within {} s and were killed",
            STOP_TIMEOUT.as_secs()
        );
    }
}

fn terminate_data_nodes(children: &mut Children) {
    for data in &children.data_nodes {
        if let DataNodeState::Running(child) = &data.state {
            send_sigterm(child);
        }
    }
}

/// Sends SIGTERM through `kill(1)`: the standard library can only SIGKILL,
/// and this path runs only when the management node cannot stop the
/// cluster. A failure is harmless: the caller kills after its deadline.
fn send_sigterm(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_refuses_incomplete_node_groups_and_too_many_nodes() {
        assert_eq!(validate(2, 2), Ok(()));
        assert_eq!(validate(1, 1), Ok(()));
        assert_eq!(validate(48, 4), Ok(()));
        assert!(
            validate(3, 2)
                .unwrap_err()
                .contains("multiple of the replicas")
        );
        assert!(validate(50, 2).unwrap_err().contains("at most 48"));
    }

    #[test]
    fn sandbox_workers_take_the_cores_the_data_nodes_leave_and_at_least_one() {
        let cores = sqld::default_worker_threads();
        assert_eq!(sandbox_worker_threads(0), cores);
        assert_eq!(sandbox_worker_threads(1), (cores - 1).max(1));
        assert_eq!(sandbox_worker_threads(cores), 1);
        assert_eq!(sandbox_worker_threads(cores + 5), 1);
    }

    #[test]
    fn restart_budget_allows_ten_per_minute_then_refuses_until_the_window_moves() {
        let start = Instant::now();
        let mut budget = RestartBudget::default();
        for second in 0..10 {
            assert!(
                budget.take(start + Duration::from_secs(second)),
                "restart {second}"
            );
        }
        assert!(!budget.take(start + Duration::from_secs(10)));
        assert!(!budget.take(start + Duration::from_secs(59)));
        // The first restart leaves the window at 60 s: one more is allowed.
        assert!(budget.take(start + Duration::from_secs(60)));
        assert!(!budget.take(start + Duration::from_secs(60)));
        // Long after, the whole budget is back.
        let later = start + Duration::from_secs(600);
        for offset in 0..10 {
            assert!(budget.take(later + Duration::from_millis(offset)));
        }
        assert!(!budget.take(later + Duration::from_millis(10)));
    }

    fn status(node: NodeId, role: NodeRole, state: NodeState) -> NodeStatus {
        NodeStatus {
            node,
            role,
            configured_host: SANDBOX_HOST.into(),
            address: String::new(),
            state,
            node_group: None,
            president: false,
            pages_used: 0,
            pages_total: 0,
            fragments_copied: 0,
            fragments_to_copy: 0,
            rows_copied: 0,
            durability: Default::default(),
        }
    }

    #[test]
    fn ready_only_when_every_expected_data_node_has_started() {
        let mut nodes = vec![
            status(2, NodeRole::Data, NodeState::Started),
            status(3, NodeRole::Data, NodeState::Starting),
            status(1, NodeRole::Management, NodeState::Started),
        ];
        assert_eq!(
            not_started(&[2, 3, 4], &nodes),
            vec![(3, NodeState::Starting), (4, NodeState::NotConnected)]
        );
        nodes[1].state = NodeState::Started;
        assert_eq!(not_started(&[2, 3], &nodes), vec![]);
        // A management node with the id of a data node does not count.
        assert_eq!(
            not_started(&[1], &nodes),
            vec![(1, NodeState::NotConnected)]
        );
        assert_eq!(
            describe_not_started(&not_started(&[2, 3, 4], &nodes)),
            "data node 4 is not connected"
        );
    }

    #[test]
    fn ready_line_says_how_to_connect() {
        assert_eq!(
            ready_line(2, 1, "127.0.0.1:1186"),
            "Cluster ready: 2 data nodes in 1 node group(s); connect with: shoal mgm -c \
             127.0.0.1:1186"
        );
    }

    #[test]
    fn a_clean_exit_stays_down_and_a_crash_is_restarted_within_the_budget() {
        use std::os::unix::process::ExitStatusExt;
        let now = Instant::now();
        let log = Path::new("/nonexistent/out.log");
        let mut budget = RestartBudget::default();
        let clean = ExitStatus::from_raw(0);
        let crashed = ExitStatus::from_raw(1 << 8);
        assert!(matches!(
            after_exit(2, clean, &mut budget, now, log),
            DataNodeState::Down
        ));
        for _ in 0..RESTARTS_PER_WINDOW_MAX {
            match after_exit(2, crashed, &mut budget, now, log) {
                DataNodeState::RestartAt(when) => assert_eq!(when, now + RESTART_DELAY),
                _ => panic!("a crash within the budget is restarted"),
            }
        }
        assert!(matches!(
            after_exit(2, crashed, &mut budget, now, log),
            DataNodeState::Down
        ));
    }
}
