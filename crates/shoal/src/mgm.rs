//! `shoal mgm`: the management client, NDB's `ndb_mgm`. It connects to the
//! management node as an API client without a node id and runs `SHOW`,
//! `N STATUS`, `ALL REPORT MEMORY`, `N STOP`, `ALL STOP`, `N RESTART [-n]
//! [-i]`, `N START` and `SHUTDOWN`,
//! printing what `ndb_mgm` prints so that scripts and habits carry over.
//!
//! The module has three layers, so that everything but the socket is tested
//! without a cluster: [`parse_command`] turns a line into an [`MgmCommand`];
//! [`execute`] runs a command against any [`ManagementServer`] and writes its
//! output, with the `format_*` functions building the text; [`Session`] is
//! the real server, a [`BlockingConnection`] to the management node.
//!
//! Output goes to stdout, errors to stderr. With `-e` the command is parsed
//! before connecting (a typo never waits for a connection) and any error
//! ends the process with status 1; the interactive shell prints the error
//! and reads the next line.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

use protocol::{ErrorReply, Message, NodeId, NodeRole, NodeState, NodeStatus, RestartOptions};
use runtime::blocking::BlockingConnection;

use crate::cli::{MGM_PORT_DEFAULT, MgmArgs};

/// The version every node reports in `SHOW`: all roles are one binary.
pub const VERSION: &str = concat!("shoal-", env!("CARGO_PKG_VERSION"));

/// How long to wait for the management node to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long `SHOW`, `STATUS` and `REPORT` wait for the status reply.
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

/// How long `STOP` and `SHUTDOWN` wait: the management node answers once
/// the nodes have disconnected, or after its own 30 s limit (for
/// `SHUTDOWN` and `ALL STOP`, after a drain of at most 10 s).
const STOP_TIMEOUT: Duration = Duration::from_secs(45);

/// The prompt of the interactive shell.
const PROMPT: &str = "shoal> ";

/// The commands `HELP` lists, in `ndb_mgm`'s words.
const HELP_TEXT: &str = "\
---------------------------------------------------------------------------
 Shoal -- Management Client -- Help
---------------------------------------------------------------------------
HELP                                   Print help text
SHOW                                   Print information about the cluster
SHUTDOWN                               Shutdown all data and management nodes
ALL STOP                               Stop all data nodes
<id> STOP                              Stop data node <id>
<id> RESTART [-n] [-i]                 Restart data node <id>; -n: wait for START
<id> START                             Start data node <id>, restarted with -n
ALL STATUS                             Print the status of all data nodes
<id> STATUS                            Print the status of node <id>
ALL REPORT MEMORY                      Print the memory usage of all data nodes
<id> REPORT MEMORY                     Print the memory usage of data node <id>
ALL REPORT DURABILITY                  Print the epochs and redo log of all data nodes
<id> REPORT DURABILITY                 Print the epochs and redo log of data node <id>
QUIT, EXIT                             Quit the management client

<id> = a node id from config.ini; commands ignore case.
";

/// Which nodes a command is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Every data node.
    All,
    /// One node, by id.
    Node(NodeId),
}

/// One line of the management client, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MgmCommand {
    Show,
    Help,
    /// `QUIT` or `EXIT`: leave the shell.
    Quit,
    Status(Target),
    /// `REPORT MEMORY` (or `MEMORYUSAGE`): DataMemory pages in use.
    ReportMemory(Target),
    /// `REPORT DURABILITY`: the current and the durable epoch, and how
    /// full the redo log is.
    ReportDurability(Target),
    /// Stop one data node.
    Stop(NodeId),
    /// Stop every data node; the management node keeps running.
    StopAll,
    /// Restart one data node through its angel.
    Restart {
        node: NodeId,
        options: RestartOptions,
    },
    /// Start a data node that waits for START (`RESTART -n`).
    Start(NodeId),
    /// Stop every data node, then the management node.
    Shutdown,
}

/// Parses one command line. Keywords ignore case and a trailing `;` is
/// dropped, as `ndb_mgm` does. The error is the text to print.
pub fn parse_command(line: &str) -> Result<MgmCommand, String> {
    let text = line.trim().trim_end_matches(';').trim_end();
    let upper: Vec<String> = text
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let words: Vec<&str> = upper.iter().map(String::as_str).collect();
    let command = match words.as_slice() {
        ["SHOW"] => Some(MgmCommand::Show),
        ["HELP"] => Some(MgmCommand::Help),
        ["QUIT"] | ["EXIT"] => Some(MgmCommand::Quit),
        ["SHUTDOWN"] => Some(MgmCommand::Shutdown),
        ["ALL", rest @ ..] => targeted_command(Target::All, rest),
        [id, rest @ ..] if id.bytes().all(|byte| byte.is_ascii_digit()) => {
            let node = match id.parse::<u32>() {
                Ok(node @ 1..=255) => node as NodeId,
                _ => {
                    return Err(format!(
                        "Invalid node id: {id} (node ids are 1 to 255)\nType HELP for help."
                    ));
                }
            };
            targeted_command(Target::Node(node), rest)
        }
        _ => None,
    };
    command.ok_or_else(|| format!("Invalid command: {text}\nType HELP for help."))
}

/// The part of a command after `ALL` or a node id.
fn targeted_command(target: Target, words: &[&str]) -> Option<MgmCommand> {
    match (words, target) {
        (["STOP"], Target::All) => Some(MgmCommand::StopAll),
        (["STOP"], Target::Node(node)) => Some(MgmCommand::Stop(node)),
        (["START"], Target::Node(node)) => Some(MgmCommand::Start(node)),
        (["RESTART", flags @ ..], Target::Node(node)) => {
            let mut options = RestartOptions::default();
            for flag in flags {
                let seen = match *flag {
                    "-N" => std::mem::replace(&mut options.no_start, true),
                    "-I" => std::mem::replace(&mut options.initial, true),
                    _ => return None,
                };
                // A flag given twice is a typo worth pointing at.
                if seen {
                    return None;
                }
            }
            Some(MgmCommand::Restart { node, options })
        }
        (["STATUS"], _) => Some(MgmCommand::Status(target)),
        (["REPORT", "MEMORY" | "MEMORYUSAGE"], _) => Some(MgmCommand::ReportMemory(target)),
        (["REPORT", "DURABILITY"], _) => Some(MgmCommand::ReportDurability(target)),
        _ => None,
    }
}

/// What the client needs from a management node. [`Session`] is the real
/// one; the tests use a scripted one.
pub trait ManagementServer {
    /// Every configured node, as `Message::StatusReply` lists them. The
    /// error is the text to print (the connection failed or timed out).
    fn status(&mut self) -> Result<Vec<NodeStatus>, String>;

    /// Stops one data node or all of them, and with `include_management`
    /// the management node too; with `restart` the nodes start again. The
    /// outer error is a connection problem, the inner one the management
    /// node's refusal.
    fn stop(
        &mut self,
        node: Option<NodeId>,
        include_management: bool,
        restart: Option<RestartOptions>,
    ) -> Result<Result<Vec<NodeId>, ErrorReply>, String>;

    /// Starts a data node that waits for START.
    fn start(&mut self, node: NodeId) -> Result<Result<(), ErrorReply>, String>;
}

/// Runs one command and writes its output to `out`. The error is the text
/// to print on stderr; with `-e` it makes the exit status 1. `Quit` does
/// nothing here: leaving is the caller's business.
pub fn execute(
    command: MgmCommand,
    server: &mut dyn ManagementServer,
    out: &mut dyn Write,
) -> Result<(), String> {
    match command {
        MgmCommand::Quit => Ok(()),
        MgmCommand::Help => write_text(out, HELP_TEXT),
        MgmCommand::Show => {
            let nodes = server.status()?;
            write_text(out, &format_show(&nodes))
        }
        MgmCommand::Status(target) => {
            let nodes = server.status()?;
            write_text(out, &format_status(target, &nodes)?)
        }
        MgmCommand::ReportMemory(target) => {
            let nodes = server.status()?;
            write_text(out, &format_memory_report(target, &nodes)?)
        }
        MgmCommand::ReportDurability(target) => {
            let nodes = server.status()?;
            write_text(
                out,
                &format_report(target, &nodes, "durability", durability_line)?,
            )
        }
        MgmCommand::Stop(node) => {
            // Checking first means "shutdown initiated" is only printed for
            // a node that can be stopped, and a typo gets a precise answer.
            // A node waiting for START can be stopped (its angel exits),
            // not restarted.
            let nodes = server.status()?;
            let waiting =
                find_node(node, &nodes).is_ok_and(|status| status.state == NodeState::NotStarted);
            if !waiting {
                check_stoppable(node, &nodes)?;
            }
            write_text(out, &format!("Node {node}: Node shutdown initiated\n"))?;
            match server.stop(Some(node), false, None)? {
                Ok(_) => write_text(out, &format!("Node {node}: Node shutdown completed.\n")),
                Err(error) => Err(format_error_reply(&error)),
            }
        }
        MgmCommand::Restart { node, options } => {
            let nodes = server.status()?;
            check_stoppable(node, &nodes)?;
            if options.initial {
                write_text(
                    out,
                    &format!(
                        "Node {node}: an initial restart (-i) is a normal restart: data nodes \
                         keep nothing on disk yet\n"
                    ),
                )?;
            }
            write_text(out, &format!("Node {node}: Node shutdown initiated\n"))?;
            match server.stop(Some(node), false, Some(options))? {
                Ok(_) => write_text(
                    out,
                    &format!(
                        "Node {node}: Node shutdown completed, restarting{}.\n\
                         Node {node} is being restarted\n",
                        if options.no_start { ", no start" } else { "" }
                    ),
                ),
                Err(error) => Err(format_error_reply(&error)),
            }
        }
        MgmCommand::Start(node) => {
            let nodes = server.status()?;
            check_startable(node, &nodes)?;
            match server.start(node)? {
                Ok(()) => write_text(out, &format!("Database node {node} is being started.\n")),
                Err(error) => Err(format!(
                    "Start failed: {} (error {})",
                    error.message, error.ndb_code
                )),
            }
        }
        MgmCommand::StopAll => {
            write_text(out, "Executing STOP on all nodes.\n")?;
            match server.stop(None, false, None)? {
                Ok(stopped) => write_text(
                    out,
                    &format!("{} NDB Cluster node(s) have shutdown.\n", stopped.len()),
                ),
                Err(error) => Err(format_error_reply(&error)),
            }
        }
        MgmCommand::Shutdown => match server.stop(None, true, None)? {
            Ok(stopped) => write_text(
                out,
                &format!(
                    "{} NDB Cluster node(s) have shutdown.\n\
                     Disconnecting to allow management server to shutdown.\n",
                    stopped.len()
                ),
            ),
            Err(error) => Err(format_error_reply(&error)),
        },
    }
}

fn write_text(out: &mut dyn Write, text: &str) -> Result<(), String> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|error| format!("cannot write the output: {error}"))
}

/// The cluster as `SHOW` prints it: one section per role, in `ndb_mgm`'s
/// layout (tabs included, since scripts parse it).
pub fn format_show(nodes: &[NodeStatus]) -> String {
    let mut text = String::from("Cluster Configuration\n---------------------\n");
    let sections = [
        (NodeRole::Data, "ndbd(NDB)"),
        (NodeRole::Management, "ndb_mgmd(MGM)"),
        (NodeRole::Api, "mysqld(API)"),
    ];
    for (role, title) in sections {
        let members: Vec<&NodeStatus> = nodes.iter().filter(|node| node.role == role).collect();
        text.push_str(&format!("[{title}]\t{} node(s)\n", members.len()));
        for node in members {
            text.push_str(&format_show_line(node));
            text.push('\n');
        }
        text.push('\n');
    }
    text
}

/// One node's line in `SHOW`.
fn format_show_line(node: &NodeStatus) -> String {
    let id = if node.node == 0 {
        // A free API slot: it gets an id only when a client takes it.
        "?".to_string()
    } else {
        node.node.to_string()
    };
    if node.state == NodeState::NotConnected {
        let host = if node.configured_host.is_empty() {
            "any host"
        } else {
            node.configured_host.as_str()
        };
        return format!("id={id} (not connected, accepting connect from {host})");
    }
    let address = if !node.address.is_empty() {
        node.address.as_str()
    } else if !node.configured_host.is_empty() {
        node.configured_host.as_str()
    } else {
        "?"
    };
    let mut details = VERSION.to_string();
    if node.role == NodeRole::Data {
        match node.state {
            NodeState::Starting if node.fragments_to_copy > 0 => details.push_str(&format!(
                ", starting (copying fragments: {} of {} done, {} rows)",
                node.fragments_copied, node.fragments_to_copy, node.rows_copied
            )),
            NodeState::Starting => details.push_str(", starting"),
            NodeState::Stopping => details.push_str(", stopping"),
            NodeState::NotStarted => details.push_str(", not started"),
            NodeState::Started | NodeState::NotConnected => {}
        }
        match node.node_group {
            Some(group) => details.push_str(&format!(", Nodegroup: {group}")),
            None => details.push_str(", no nodegroup"),
        }
        if node.president {
            details.push_str(", *");
        }
    }
    format!("id={id}\t@{address}  ({details})")
}

/// The node with id `node`, ignoring free API slots (which come as id 0).
fn find_node(node: NodeId, nodes: &[NodeStatus]) -> Result<&NodeStatus, String> {
    nodes
        .iter()
        .find(|status| status.node == node && node != 0)
        .ok_or_else(|| format!("Node {node}: no such node in the configuration"))
}

/// `N STATUS` or `ALL STATUS` (every data node).
pub fn format_status(target: Target, nodes: &[NodeStatus]) -> Result<String, String> {
    match target {
        Target::Node(node) => Ok(format!("{}\n", status_line(find_node(node, nodes)?))),
        Target::All => Ok(nodes
            .iter()
            .filter(|node| node.role == NodeRole::Data)
            .map(|node| format!("{}\n", status_line(node)))
            .collect()),
    }
}

fn status_line(node: &NodeStatus) -> String {
    let id = node.node;
    match (node.role, node.state) {
        (_, NodeState::NotConnected) => format!("Node {id}: not connected"),
        (NodeRole::Data, state) => format!("Node {id}: {} ({VERSION})", state.name()),
        (NodeRole::Management | NodeRole::Api, _) => format!("Node {id}: connected ({VERSION})"),
    }
}

/// `N REPORT MEMORY` or `ALL REPORT MEMORY` (every connected data node; a
/// node that is not connected has nothing to report).
pub fn format_memory_report(target: Target, nodes: &[NodeStatus]) -> Result<String, String> {
    format_report(target, nodes, "memory", memory_line)
}

/// A `REPORT` of `what`: a line per connected data node.
fn format_report(
    target: Target,
    nodes: &[NodeStatus],
    what: &str,
    line: fn(&NodeStatus) -> String,
) -> Result<String, String> {
    match target {
        Target::All => Ok(nodes
            .iter()
            .filter(|node| node.role == NodeRole::Data && node.state != NodeState::NotConnected)
            .map(|node| format!("{}\n", line(node)))
            .collect()),
        Target::Node(id) => {
            let node = find_node(id, nodes)?;
            if node.role != NodeRole::Data {
                return Err(format!(
                    "Node {id}: not a data node; only data nodes report {what}"
                ));
            }
            if node.state == NodeState::NotConnected {
                return Err(format!("Node {id}: not connected"));
            }
            Ok(format!("{}\n", line(node)))
        }
    }
}

/// `Node 2: Epoch 12/3, durable through GCI 11; redo log 1% used (3 of 256 MiB)`:
/// the epoch as NDB writes it (global checkpoint / micro-epoch), the last
/// global checkpoint that is on disk on every data node (a system restart
/// brings back every commit through it).
fn durability_line(node: &NodeStatus) -> String {
    let durability = &node.durability;
    let epoch = |e: u64| format!("{}/{}", e >> 32, e & 0xffff_ffff);
    let durable = match durability.durable_epoch >> 32 {
        0 => "nothing durable yet".to_string(),
        // Every epoch below it: its global checkpoint's predecessor.
        gci => format!("durable through GCI {}", gci - 1),
    };
    let redo = if durability.redo_total_bytes == 0 {
        "no redo log".to_string()
    } else {
        format!(
            "redo log {}% used ({} of {} MiB)",
            u128::from(durability.redo_used_bytes) * 100 / u128::from(durability.redo_total_bytes),
            durability.redo_used_bytes >> 20,
            durability.redo_total_bytes >> 20
        )
    };
    format!(
        "Node {}: Epoch {}, {durable}; {redo}",
        node.node,
        epoch(durability.epoch)
    )
}

/// `Node 2: Data usage is 5%(177 32K pages of total 3200)`: the percentage
/// rounded down, as `ndb_mgm` prints it.
fn memory_line(node: &NodeStatus) -> String {
    let percent = if node.pages_total == 0 {
        0
    } else {
        u128::from(node.pages_used) * 100 / u128::from(node.pages_total)
    };
    format!(
        "Node {}: Data usage is {percent}%({} 32K pages of total {})",
        node.node, node.pages_used, node.pages_total
    )
}

/// Refuses to stop a node that is not a connected data node, with the
/// reason.
fn check_stoppable(node: NodeId, nodes: &[NodeStatus]) -> Result<(), String> {
    let status = find_node(node, nodes)?;
    match (status.role, status.state) {
        (NodeRole::Data, NodeState::NotConnected) => Err(format!("Node {node}: not connected")),
        (NodeRole::Data, NodeState::NotStarted) => Err(format!(
            "Node {node}: not started; it waits for START (`{node} START`)"
        )),
        (NodeRole::Data, _) => Ok(()),
        (NodeRole::Management, _) => Err(format!(
            "Node {node}: is the management node; use SHUTDOWN to stop the whole cluster"
        )),
        (NodeRole::Api, _) => Err(format!(
            "Node {node}: is an API node; STOP stops data nodes only"
        )),
    }
}

/// Refuses to start a node that does not wait for START, with the reason.
fn check_startable(node: NodeId, nodes: &[NodeStatus]) -> Result<(), String> {
    let status = find_node(node, nodes)?;
    match (status.role, status.state) {
        (NodeRole::Data, NodeState::NotStarted) => Ok(()),
        (NodeRole::Data, NodeState::NotConnected) => Err(format!(
            "Node {node}: not connected; only a node restarted with `{node} RESTART -n` waits \
             for START"
        )),
        (NodeRole::Data, NodeState::Starting | NodeState::Started) => {
            Err(format!("Node {node}: is already started"))
        }
        (NodeRole::Data, NodeState::Stopping) => Err(format!(
            "Node {node}: is stopping; START it once it waits for START"
        )),
        (NodeRole::Management | NodeRole::Api, _) => Err(format!(
            "Node {node}: is not a data node; START starts data nodes only"
        )),
    }
}

/// A refusal from the management node, with its NDB error code.
pub fn format_error_reply(error: &ErrorReply) -> String {
    format!(
        "Shutdown failed: {} (error {})",
        error.message, error.ndb_code
    )
}

/// The `host:port` to connect to from an NDB connect string: a leading
/// `nodeid=N` is skipped, the first host is used, and a host without a port
/// gets the default 1186.
pub fn connect_address(connect_string: &str) -> String {
    let host = connect_string
        .split(',')
        .map(str::trim)
        .find(|part| !part.is_empty() && !part.to_ascii_lowercase().starts_with("nodeid="))
        .unwrap_or("localhost");
    // "[::1]" has colons but no port; only a colon after the bracket counts.
    let after_bracket = host.rsplit(']').next().unwrap_or(host);
    if after_bracket.contains(':') {
        host.to_string()
    } else {
        format!("{host}:{MGM_PORT_DEFAULT}")
    }
}

/// Connects to the management node as an API client without a node id.
fn open_connection(address: &str) -> Result<BlockingConnection, String> {
    BlockingConnection::connect(address, 0, NodeRole::Api, CONNECT_TIMEOUT).map_err(|error| {
        format!("Unable to connect with connect string: nodeid=0,{address}\n{error}")
    })
}

/// A connection to the management node, opened on first use and opened
/// again after it is lost (so the shell survives a management node
/// restart).
pub struct Session {
    address: String,
    connection: Option<BlockingConnection>,
    /// Request ids, so a late reply to an earlier request is never taken
    /// for the current one.
    next_request: u64,
}

impl Session {
    pub fn new(address: String) -> Session {
        Session {
            address,
            connection: None,
            next_request: 1,
        }
    }

    /// Opens the connection unless it is open.
    pub fn connect(&mut self) -> Result<&mut BlockingConnection, String> {
        let connection = match self.connection.take() {
            Some(connection) => connection,
            None => open_connection(&self.address)?,
        };
        Ok(self.connection.insert(connection))
    }

    /// Sends `request(id)` and waits for the reply `reply_id` recognises
    /// (it returns the request id of a reply, or `None` for other
    /// messages). A refusal ends the wait with its message. The connection
    /// is dropped on any error, so the next command connects afresh.
    fn exchange(
        &mut self,
        request: impl FnOnce(u64) -> Message,
        timeout: Duration,
        reply_id: impl Fn(&Message) -> Option<u64>,
    ) -> Result<Message, String> {
        let id = self.next_request;
        self.next_request += 1;
        let connection = self.connect()?;
        let result = connection.request(request(id), timeout, |message| {
            reply_id(message) == Some(id) || matches!(message, Message::Refused { .. })
        });
        match result {
            Ok(Message::Refused { error }) => {
                self.connection = None;
                Err(format!(
                    "The management node refused the request: {} (error {})",
                    error.message, error.ndb_code
                ))
            }
            Ok(reply) => Ok(reply),
            Err(error) => {
                self.connection = None;
                Err(error.to_string())
            }
        }
    }
}

impl ManagementServer for Session {
    fn status(&mut self) -> Result<Vec<NodeStatus>, String> {
        let reply = self.exchange(
            |request| Message::StatusRequest { request },
            STATUS_TIMEOUT,
            |message| match message {
                Message::StatusReply { request, .. } => Some(*request),
                _ => None,
            },
        )?;
        match reply {
            Message::StatusReply { nodes, .. } => Ok(nodes),
            other => Err(format!("unexpected reply {}", other.name())),
        }
    }

    fn stop(
        &mut self,
        node: Option<NodeId>,
        include_management: bool,
        restart: Option<RestartOptions>,
    ) -> Result<Result<Vec<NodeId>, ErrorReply>, String> {
        let reply = self.exchange(
            |request| Message::StopRequest {
                request,
                node,
                include_management,
                restart,
            },
            STOP_TIMEOUT,
            |message| match message {
                Message::StopReply { request, .. } => Some(*request),
                _ => None,
            },
        )?;
        if include_management {
            // The management node is going away: let it close in peace.
            self.connection = None;
        }
        match reply {
            Message::StopReply { result, .. } => Ok(result),
            other => Err(format!("unexpected reply {}", other.name())),
        }
    }

    fn start(&mut self, node: NodeId) -> Result<Result<(), ErrorReply>, String> {
        let reply = self.exchange(
            |request| Message::StartRequest { request, node },
            STATUS_TIMEOUT,
            |message| match message {
                Message::StartReply { request, .. } => Some(*request),
                _ => None,
            },
        )?;
        match reply {
            Message::StartReply { result, .. } => Ok(result),
            other => Err(format!("unexpected reply {}", other.name())),
        }
    }
}

/// `shoal mgm`: one command with `-e`, else the interactive shell.
pub fn run(args: &MgmArgs) -> ExitCode {
    let mut session = Session::new(connect_address(&args.ndb_connectstring));
    match &args.execute {
        Some(line) => run_one(line, &mut session),
        None => run_shell(&mut session),
    }
}

fn run_one(line: &str, session: &mut Session) -> ExitCode {
    let command = match parse_command(line) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let stdout = io::stdout();
    match execute(command, session, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run_shell(session: &mut Session) -> ExitCode {
    if let Err(message) = session.connect() {
        eprintln!("{message}");
        return ExitCode::FAILURE;
    }
    println!("Connected to Management Server at: {}", session.address);
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut bytes = Vec::new();
    loop {
        let mut stdout = io::stdout().lock();
        // A failed prompt write means stdout is gone; the reads still end
        // the loop at EOF, so it is not worth an error of its own.
        let _ = stdout.write_all(PROMPT.as_bytes());
        let _ = stdout.flush();
        bytes.clear();
        match input.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                eprintln!("cannot read the standard input: {error}");
                return ExitCode::FAILURE;
            }
        }
        // A line that is not UTF-8 (a stray Latin-1 key, pasted binary) is
        // one bad command, not the end of the session.
        let line = match read_line(&bytes) {
            Ok(line) => line,
            Err(message) => {
                eprintln!("{message}");
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match parse_command(line) {
            Err(message) => eprintln!("{message}"),
            Ok(MgmCommand::Quit) => break,
            Ok(command) => {
                if let Err(message) = execute(command, session, &mut stdout) {
                    eprintln!("{message}");
                }
            }
        }
    }
    ExitCode::SUCCESS
}

/// One line of input as text, or the error to print when it is not UTF-8.
pub fn read_line(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|error| {
        format!(
            "Invalid command: the line is not UTF-8 text (byte 0x{:02x} at column {})\n\
             Type HELP for help.",
            bytes[error.valid_up_to()],
            error.valid_up_to() + 1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(node: NodeId, state: NodeState, president: bool) -> NodeStatus {
        NodeStatus {
            node,
            role: NodeRole::Data,
            configured_host: "127.0.0.1".into(),
            address: if state == NodeState::NotConnected {
                String::new()
            } else {
                "127.0.0.1".into()
            },
            state,
            node_group: Some(0),
            president,
            pages_used: 177,
            pages_total: 3200,
            fragments_copied: 0,
            fragments_to_copy: 0,
            rows_copied: 0,
            durability: Default::default(),
        }
    }

    fn other(node: NodeId, role: NodeRole, host: &str, connected: bool) -> NodeStatus {
        NodeStatus {
            node,
            role,
            configured_host: host.into(),
            address: if connected {
                "127.0.0.1".into()
            } else {
                String::new()
            },
            state: if connected {
                NodeState::Started
            } else {
                NodeState::NotConnected
            },
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

    /// A small sandbox: two data nodes (one president), the management
    /// node, the SQL slot, a connected API slot and a free one.
    fn cluster() -> Vec<NodeStatus> {
        vec![
            data(2, NodeState::Started, true),
            data(3, NodeState::Started, false),
            other(1, NodeRole::Management, "127.0.0.1", true),
            other(145, NodeRole::Api, "127.0.0.1", false),
            other(146, NodeRole::Api, "127.0.0.1", true),
            other(0, NodeRole::Api, "", false),
        ]
    }

    #[test]
    fn parses_commands_ignoring_case_and_a_trailing_semicolon() {
        assert_eq!(parse_command("show"), Ok(MgmCommand::Show));
        assert_eq!(parse_command("  SHOW;  "), Ok(MgmCommand::Show));
        assert_eq!(parse_command("Help"), Ok(MgmCommand::Help));
        assert_eq!(parse_command("quit"), Ok(MgmCommand::Quit));
        assert_eq!(parse_command("exit"), Ok(MgmCommand::Quit));
        assert_eq!(parse_command("shutdown"), Ok(MgmCommand::Shutdown));
        assert_eq!(parse_command("all stop"), Ok(MgmCommand::StopAll));
        assert_eq!(parse_command("2 stop"), Ok(MgmCommand::Stop(2)));
        assert_eq!(
            parse_command("3 Status"),
            Ok(MgmCommand::Status(Target::Node(3)))
        );
        assert_eq!(
            parse_command("all status"),
            Ok(MgmCommand::Status(Target::All))
        );
        assert_eq!(
            parse_command("ALL REPORT MEMORY"),
            Ok(MgmCommand::ReportMemory(Target::All))
        );
        assert_eq!(
            parse_command("all report memoryusage"),
            Ok(MgmCommand::ReportMemory(Target::All))
        );
        assert_eq!(
            parse_command("2  report   memory"),
            Ok(MgmCommand::ReportMemory(Target::Node(2)))
        );
    }

    #[test]
    fn refuses_unknown_commands_with_a_hint() {
        for line in [
            "",
            "SHOWW",
            "2",
            "ALL",
            "2 STARTT",
            "STOP",
            "ALL REPORT",
            "x STATUS",
        ] {
            let error = parse_command(line).expect_err(line);
            assert_eq!(
                error,
                format!("Invalid command: {}\nType HELP for help.", line.trim()),
                "{line:?}"
            );
        }
    }

    #[test]
    fn refuses_node_ids_out_of_range() {
        for line in ["0 STATUS", "256 STATUS", "99999999999999999999 STOP"] {
            let error = parse_command(line).expect_err(line);
            assert!(error.starts_with("Invalid node id: "), "{line}: {error}");
        }
    }

    #[test]
    fn show_prints_every_role_like_ndb_mgm() {
        let expected = format!(
            "Cluster Configuration\n\
             ---------------------\n\
             [ndbd(NDB)]\t2 node(s)\n\
             id=2\t@127.0.0.1  ({VERSION}, Nodegroup: 0, *)\n\
             id=3\t@127.0.0.1  ({VERSION}, Nodegroup: 0)\n\
             \n\
             [ndb_mgmd(MGM)]\t1 node(s)\n\
             id=1\t@127.0.0.1  ({VERSION})\n\
             \n\
             [mysqld(API)]\t3 node(s)\n\
             id=145 (not connected, accepting connect from 127.0.0.1)\n\
             id=146\t@127.0.0.1  ({VERSION})\n\
             id=? (not connected, accepting connect from any host)\n\
             \n"
        );
        assert_eq!(format_show(&cluster()), expected);
    }

    #[test]
    fn show_marks_starting_stopping_and_absent_data_nodes() {
        let mut nodes = vec![
            data(2, NodeState::Starting, false),
            data(3, NodeState::NotConnected, false),
            data(4, NodeState::Stopping, false),
        ];
        nodes[2].node_group = None;
        nodes[2].address = "10.0.0.4".into();
        let show = format_show(&nodes);
        assert!(
            show.contains(&format!(
                "id=2\t@127.0.0.1  ({VERSION}, starting, Nodegroup: 0)\n"
            )),
            "{show}"
        );
        assert!(
            show.contains("id=3 (not connected, accepting connect from 127.0.0.1)\n"),
            "{show}"
        );
        assert!(
            show.contains(&format!(
                "id=4\t@10.0.0.4  ({VERSION}, stopping, no nodegroup)\n"
            )),
            "{show}"
        );
        assert!(show.contains("[ndb_mgmd(MGM)]\t0 node(s)\n"), "{show}");
    }

    #[test]
    fn status_names_the_state_of_one_node_or_every_data_node() {
        let mut nodes = cluster();
        nodes[1].state = NodeState::Starting;
        nodes.push(data(4, NodeState::NotConnected, false));
        let one = |node| format_status(Target::Node(node), &nodes);
        assert_eq!(one(2), Ok(format!("Node 2: started ({VERSION})\n")));
        assert_eq!(one(3), Ok(format!("Node 3: starting ({VERSION})\n")));
        assert_eq!(one(4), Ok("Node 4: not connected\n".to_string()));
        assert_eq!(one(1), Ok(format!("Node 1: connected ({VERSION})\n")));
        assert_eq!(one(145), Ok("Node 145: not connected\n".to_string()));
        assert_eq!(
            one(9),
            Err("Node 9: no such node in the configuration".to_string())
        );
        assert_eq!(
            format_status(Target::All, &nodes),
            Ok(format!(
                "Node 2: started ({VERSION})\nNode 3: starting ({VERSION})\nNode 4: not connected\n"
            ))
        );
    }

    #[test]
    fn durability_report_names_the_epoch_the_durable_checkpoint_and_the_redo_log() {
        let mut nodes = cluster();
        nodes[1].durability = protocol::Durability {
            epoch: (12 << 32) | 3,
            durable_epoch: 12 << 32,
            redo_used_bytes: 3 << 20,
            redo_total_bytes: 256 << 20,
        };
        nodes.push(data(4, NodeState::NotConnected, false));
        assert_eq!(
            parse_command("all report durability"),
            Ok(MgmCommand::ReportDurability(Target::All))
        );
        assert_eq!(
            format_report(Target::All, &nodes, "durability", durability_line),
            Ok("Node 2: Epoch 0/0, nothing durable yet; no redo log\n\
                Node 3: Epoch 12/3, durable through GCI 11; redo log 1% used (3 of 256 MiB)\n"
                .to_string())
        );
        assert_eq!(
            format_report(Target::Node(1), &nodes, "durability", durability_line),
            Err("Node 1: not a data node; only data nodes report durability".to_string())
        );
    }

    #[test]
    fn memory_report_rounds_down_and_skips_absent_nodes() {
        let mut nodes = cluster();
        nodes[1].pages_used = 3199;
        nodes.push(data(4, NodeState::NotConnected, false));
        assert_eq!(
            format_memory_report(Target::All, &nodes),
            Ok("Node 2: Data usage is 5%(177 32K pages of total 3200)\n\
                Node 3: Data usage is 99%(3199 32K pages of total 3200)\n"
                .to_string())
        );
        assert_eq!(
            format_memory_report(Target::Node(4), &nodes),
            Err("Node 4: not connected".to_string())
        );
        assert!(format_memory_report(Target::Node(1), &nodes).is_err());
        assert!(format_memory_report(Target::Node(9), &nodes).is_err());
        nodes[0].pages_total = 0;
        nodes[0].pages_used = 0;
        assert_eq!(
            format_memory_report(Target::Node(2), &nodes),
            Ok("Node 2: Data usage is 0%(0 32K pages of total 0)\n".to_string())
        );
    }

    #[test]
    fn connect_address_takes_the_first_host_and_adds_the_default_port() {
        assert_eq!(connect_address("localhost:1186"), "localhost:1186");
        assert_eq!(connect_address("127.0.0.1"), "127.0.0.1:1186");
        assert_eq!(connect_address("nodeid=4, host1:2000,host2"), "host1:2000");
        assert_eq!(connect_address("[::1]"), "[::1]:1186");
        assert_eq!(connect_address("[::1]:1187"), "[::1]:1187");
        assert_eq!(connect_address(""), "localhost:1186");
    }

    /// A management node that answers from a script and records the stops
    /// asked of it.
    struct ScriptedServer {
        nodes: Vec<NodeStatus>,
        stop_result: Result<Vec<NodeId>, ErrorReply>,
        stops: Vec<(Option<NodeId>, bool)>,
        restarts: Vec<(NodeId, RestartOptions)>,
        starts: Vec<NodeId>,
    }

    impl ManagementServer for ScriptedServer {
        fn status(&mut self) -> Result<Vec<NodeStatus>, String> {
            Ok(self.nodes.clone())
        }

        fn stop(
            &mut self,
            node: Option<NodeId>,
            include_management: bool,
            restart: Option<RestartOptions>,
        ) -> Result<Result<Vec<NodeId>, ErrorReply>, String> {
            match restart {
                None => self.stops.push((node, include_management)),
                Some(options) => {
                    assert!(!include_management, "a restart never includes mgmd");
                    self.restarts
                        .push((node.expect("a restart names its node"), options));
                }
            }
            Ok(self.stop_result.clone())
        }

        fn start(&mut self, node: NodeId) -> Result<Result<(), ErrorReply>, String> {
            self.starts.push(node);
            Ok(Ok(()))
        }
    }

    /// What one scripted command did: its result, its output, and the
    /// stops it asked for.
    struct Run {
        result: Result<(), String>,
        text: String,
        stops: Vec<(Option<NodeId>, bool)>,
        restarts: Vec<(NodeId, RestartOptions)>,
        starts: Vec<NodeId>,
    }

    fn run_scripted(command: &str, stop_result: Result<Vec<NodeId>, ErrorReply>) -> Run {
        run_scripted_on(cluster(), command, stop_result)
    }

    fn run_scripted_on(
        nodes: Vec<NodeStatus>,
        command: &str,
        stop_result: Result<Vec<NodeId>, ErrorReply>,
    ) -> Run {
        let mut server = ScriptedServer {
            nodes,
            stop_result,
            stops: Vec::new(),
            restarts: Vec::new(),
            starts: Vec::new(),
        };
        let mut out = Vec::new();
        let command = parse_command(command).expect("a valid command");
        let result = execute(command, &mut server, &mut out);
        let text = String::from_utf8(out).expect("UTF-8 output");
        Run {
            result,
            text,
            stops: server.stops,
            restarts: server.restarts,
            starts: server.starts,
        }
    }

    #[test]
    fn parses_restart_with_its_flags_and_start() {
        let restart = |node, initial, no_start| MgmCommand::Restart {
            node,
            options: RestartOptions { initial, no_start },
        };
        assert_eq!(parse_command("2 restart"), Ok(restart(2, false, false)));
        assert_eq!(parse_command("2 RESTART -n"), Ok(restart(2, false, true)));
        assert_eq!(parse_command("3 restart -i"), Ok(restart(3, true, false)));
        assert_eq!(
            parse_command("3 restart -i -N;"),
            Ok(restart(3, true, true))
        );
        assert_eq!(parse_command("3 restart -n -i"), Ok(restart(3, true, true)));
        assert_eq!(parse_command("4 start"), Ok(MgmCommand::Start(4)));
        for line in [
            "2 RESTART -x",
            "2 RESTART -n -n",
            "2 RESTART now",
            "ALL RESTART",
            "ALL START",
            "2 START -n",
        ] {
            let error = parse_command(line).expect_err(line);
            assert!(error.starts_with("Invalid command: "), "{line}: {error}");
        }
    }

    #[test]
    fn restart_reports_the_stop_then_the_restart() {
        let Run {
            result,
            text,
            stops,
            restarts,
            ..
        } = run_scripted("3 RESTART", Ok(vec![3]));
        assert_eq!(result, Ok(()));
        assert_eq!(
            text,
            "Node 3: Node shutdown initiated\n\
             Node 3: Node shutdown completed, restarting.\n\
             Node 3 is being restarted\n"
        );
        assert!(stops.is_empty());
        assert_eq!(restarts, vec![(3, RestartOptions::default())]);

        let Run { text, restarts, .. } = run_scripted("3 RESTART -n -i", Ok(vec![3]));
        assert!(
            text.starts_with("Node 3: an initial restart (-i) is a normal restart"),
            "{text}"
        );
        assert!(
            text.contains("Node 3: Node shutdown completed, restarting, no start.\n"),
            "{text}"
        );
        let options = RestartOptions {
            initial: true,
            no_start: true,
        };
        assert_eq!(restarts, vec![(3, options)]);
    }

    #[test]
    fn restart_of_a_node_that_cannot_restart_sends_nothing() {
        let mut nodes = cluster();
        nodes.push(data(4, NodeState::NotStarted, false));
        nodes.push(data(5, NodeState::NotConnected, false));
        for (command, expected) in [
            ("9 RESTART", "Node 9: no such node in the configuration"),
            ("1 RESTART", "Node 1: is the management node"),
            ("146 RESTART", "Node 146: is an API node"),
            ("4 RESTART", "Node 4: not started; it waits for START"),
            ("5 RESTART -n", "Node 5: not connected"),
        ] {
            let run = run_scripted_on(nodes.clone(), command, Ok(vec![]));
            let error = run.result.expect_err(command);
            assert!(error.starts_with(expected), "{command}: {error}");
            assert_eq!(run.text, "", "{command}");
            assert!(run.restarts.is_empty(), "{command}");
        }
    }

    #[test]
    fn stop_stops_a_node_that_waits_for_start() {
        let mut nodes = cluster();
        nodes.push(data(4, NodeState::NotStarted, false));
        let run = run_scripted_on(nodes, "4 STOP", Ok(vec![4]));
        assert_eq!(run.result, Ok(()));
        assert_eq!(
            run.text,
            "Node 4: Node shutdown initiated\nNode 4: Node shutdown completed.\n"
        );
        assert_eq!(run.stops, vec![(Some(4), false)]);
    }

    #[test]
    fn start_only_starts_a_node_that_waits_for_it() {
        let mut nodes = cluster();
        nodes.push(data(4, NodeState::NotStarted, false));
        nodes.push(data(5, NodeState::NotConnected, false));
        let run = run_scripted_on(nodes.clone(), "4 START", Ok(vec![]));
        assert_eq!(run.result, Ok(()));
        assert_eq!(run.text, "Database node 4 is being started.\n");
        assert_eq!(run.starts, vec![4]);
        for (command, expected) in [
            ("2 START", "Node 2: is already started"),
            (
                "5 START",
                "Node 5: not connected; only a node restarted with `5 RESTART -n`",
            ),
            ("1 START", "Node 1: is not a data node"),
            ("146 START", "Node 146: is not a data node"),
            ("9 START", "Node 9: no such node in the configuration"),
        ] {
            let run = run_scripted_on(nodes.clone(), command, Ok(vec![]));
            let error = run.result.expect_err(command);
            assert!(error.starts_with(expected), "{command}: {error}");
            assert!(run.starts.is_empty(), "{command}");
        }
    }

    #[test]
    fn show_and_status_name_a_node_waiting_for_start() {
        let mut nodes = cluster();
        nodes.push(data(4, NodeState::NotStarted, false));
        let show = format_show(&nodes);
        assert!(show.contains("id=4\t@127.0.0.1  (shoal-"), "{show}");
        assert!(show.contains(", not started, Nodegroup: 0)"), "{show}");
        let status = format_status(Target::Node(4), &nodes).expect("node 4");
        assert!(status.starts_with("Node 4: not started ("), "{status}");
    }

    #[test]
    fn stop_reports_initiation_then_completion() {
        let Run {
            result,
            text,
            stops,
            ..
        } = run_scripted("2 STOP", Ok(vec![2]));
        assert_eq!(result, Ok(()));
        assert_eq!(
            text,
            "Node 2: Node shutdown initiated\nNode 2: Node shutdown completed.\n"
        );
        assert_eq!(stops, vec![(Some(2), false)]);
    }

    #[test]
    fn stop_of_a_node_that_cannot_stop_sends_nothing() {
        for command in ["9 STOP", "1 STOP", "146 STOP"] {
            let Run {
                result,
                text,
                stops,
                ..
            } = run_scripted(command, Ok(vec![]));
            assert!(result.is_err(), "{command}");
            assert_eq!(text, "", "{command}");
            assert!(stops.is_empty(), "{command}");
        }
    }

    #[test]
    fn stop_refused_by_the_management_node_is_an_error() {
        let refusal = ErrorReply {
            ndb_code: 5024,
            mysql_code: 0,
            message: "node(s) [2] did not stop within 30 s".into(),
        };
        let Run { result, text, .. } = run_scripted("2 STOP", Err(refusal));
        assert_eq!(
            result,
            Err("Shutdown failed: node(s) [2] did not stop within 30 s (error 5024)".into())
        );
        assert_eq!(text, "Node 2: Node shutdown initiated\n");
    }

    #[test]
    fn all_stop_keeps_the_management_node_and_shutdown_does_not() {
        let Run {
            result,
            text,
            stops,
            ..
        } = run_scripted("ALL STOP", Ok(vec![2, 3]));
        assert_eq!(result, Ok(()));
        assert_eq!(
            text,
            "Executing STOP on all nodes.\n2 NDB Cluster node(s) have shutdown.\n"
        );
        assert_eq!(stops, vec![(None, false)]);

        let Run {
            result,
            text,
            stops,
            ..
        } = run_scripted("SHUTDOWN", Ok(vec![2, 3]));
        assert_eq!(result, Ok(()));
        assert_eq!(
            text,
            "2 NDB Cluster node(s) have shutdown.\n\
             Disconnecting to allow management server to shutdown.\n"
        );
        assert_eq!(stops, vec![(None, true)]);
    }

    #[test]
    fn help_lists_every_command() {
        let Run { result, text, .. } = run_scripted("HELP", Ok(vec![]));
        assert_eq!(result, Ok(()));
        for command in [
            "SHOW",
            "SHUTDOWN",
            "ALL STOP",
            "<id> STOP",
            "<id> RESTART [-n] [-i]",
            "<id> START",
            "<id> STATUS",
            "REPORT MEMORY",
            "QUIT",
        ] {
            assert!(text.contains(command), "HELP does not list {command}");
        }
    }
}
