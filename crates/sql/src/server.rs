//! What the SQL node's sessions share: the cluster connections, global
//! variables, status counters, the process list and the limits.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use shoal_client::{ClusterPool, Interrupter};

use crate::value::SqlValue;
use crate::variables::GlobalVariables;

/// The commands counted as `Com_*` status variables.
pub const COMMAND_COUNTERS: [&str; 24] = [
    "admin_commands",
    "begin",
    "change_db",
    "commit",
    "create_db",
    "create_index",
    "create_table",
    "create_user",
    "delete",
    "drop_db",
    "drop_table",
    "drop_user",
    "insert",
    "insert_select",
    "kill",
    "replace",
    "rollback",
    "select",
    "set_option",
    "show_variables",
    "stmt_execute",
    "stmt_prepare",
    "truncate",
    "update",
];

/// What a connection is doing, for SHOW PROCESSLIST. Each connection
/// has its own lock, so a statement's start and end never wait on the
/// others'.
pub struct Activity {
    pub database: Option<String>,
    /// `Sleep`, `Query`, `Execute`...
    pub command: &'static str,
    /// When the current command began (or the connection went idle).
    pub since: Instant,
    /// The statement's text, shown while `info_shown`; kept between
    /// statements so the next one reuses its buffer.
    pub info: String,
    pub info_shown: bool,
}

impl Activity {
    /// The process list's `Info`: the statement running, if one is.
    pub fn info(&self) -> Option<&str> {
        self.info_shown.then_some(self.info.as_str())
    }
}

/// A connection in the process list.
pub struct Process {
    pub user: String,
    pub host: String,
    pub activity: Arc<Mutex<Activity>>,
    /// Interrupts the session's wait on the cluster (`KILL QUERY`).
    pub interrupter: Interrupter,
    /// Set by `KILL QUERY`: the statement ends with 1317.
    pub query_killed: Arc<AtomicBool>,
    /// Set by `KILL [CONNECTION]`: the connection closes.
    pub connection_killed: Arc<AtomicBool>,
    /// Ends the connection's wait for its client's next command (shuts
    /// the socket's reading side), so `KILL` closes an idle connection at
    /// once instead of at its next command; `None` where there is no
    /// socket to shut.
    pub closer: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// Shared by every session of one SQL node.
pub struct Server {
    pub pool: ClusterPool,
    pub globals: RwLock<GlobalVariables>,
    pub started: Instant,
    pub questions: AtomicU64,
    pub connections: AtomicU64,
    pub threads_connected: AtomicU64,
    pub aborted_connects: AtomicU64,
    pub command_counts: [AtomicU64; COMMAND_COUNTERS.len()],
    pub processes: Mutex<BTreeMap<u64, Process>>,
    next_connection_id: AtomicU64,
}

impl Server {
    pub fn new(pool: ClusterPool, overrides: &[(&str, SqlValue)]) -> Server {
        Server {
            pool,
            globals: RwLock::new(GlobalVariables::new(overrides)),
            started: Instant::now(),
            questions: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            threads_connected: AtomicU64::new(0),
            aborted_connects: AtomicU64::new(0),
            command_counts: std::array::from_fn(|_| AtomicU64::new(0)),
            processes: Mutex::new(BTreeMap::new()),
            next_connection_id: AtomicU64::new(1),
        }
    }

    /// A new connection id: never reused while the SQL node runs.
    pub fn next_connection_id(&self) -> u64 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts one `Com_<command>`.
    pub fn count_command(&self, command: &str) {
        if let Some(i) = COMMAND_COUNTERS.iter().position(|c| *c == command) {
            self.command_counts[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A global variable's value.
    pub fn global(&self, name: &str) -> Option<SqlValue> {
        self.globals.read().expect("globals").get(name).cloned()
    }

    /// A global integer variable, or `default` when it is not an integer.
    pub fn global_int(&self, name: &str, default: i64) -> i64 {
        match self.global(name) {
            Some(SqlValue::Int(v)) => v,
            Some(SqlValue::UInt(v)) => i64::try_from(v).unwrap_or(i64::MAX),
            _ => default,
        }
    }
}
