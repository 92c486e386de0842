//! System variables: the ones MySQL 8.0 clients read at connect time and
//! the ones Shoal acts on. Each has a default, a scope, and whether `SET`
//! may change it.

use std::collections::BTreeMap;

use crate::error::SqlError;
use crate::value::SqlValue;

/// Where a variable lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only `SET GLOBAL`; sessions read the global value.
    Global,
    /// Only per session.
    Session,
    /// A global value that new sessions copy.
    Both,
}

/// One system variable's description.
#[derive(Debug, Clone)]
pub struct Variable {
    pub name: &'static str,
    pub default: SqlValue,
    pub scope: Scope,
    pub read_only: bool,
}

/// MySQL 8.0's default `sql_mode`, which Shoal keeps: strict.
pub const SQL_MODE_DEFAULT: &str = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,\
NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";
/// The version string clients see; the `8.0` prefix makes drivers speak
/// MySQL 8.0's dialect.
pub const SERVER_VERSION: &str = "8.0.40-shoal";
/// `max_allowed_packet`'s default (MySQL 8.0: 64 MiB).
pub const MAX_ALLOWED_PACKET_DEFAULT: i64 = 64 << 20;
/// `max_connections`'s default (MySQL 8.0: 151).
pub const MAX_CONNECTIONS_DEFAULT: i64 = 151;
/// `wait_timeout`'s default in seconds (MySQL: 8 hours).
pub const WAIT_TIMEOUT_DEFAULT: i64 = 28_800;

fn int(value: i64) -> SqlValue {
    SqlValue::Int(value)
}

fn text(value: &str) -> SqlValue {
    SqlValue::String(value.as_bytes().to_vec())
}

/// Every variable Shoal knows, sorted by name.
pub fn all() -> Vec<Variable> {
    use Scope::*;
    let v = |name, default, scope, read_only| Variable {
        name,
        default,
        scope,
        read_only,
    };
    let mut list = vec![
        v("auto_increment_increment", int(1), Both, false),
        v("auto_increment_offset", int(1), Both, false),
        v("autocommit", int(1), Both, false),
        v("big_tables", int(0), Both, false),
        v("character_set_client", text("utf8mb4"), Both, false),
        v("character_set_connection", text("utf8mb4"), Both, false),
        v("character_set_database", text("utf8mb4"), Both, false),
        v("character_set_filesystem", text("binary"), Both, false),
        v("character_set_results", text("utf8mb4"), Both, false),
        v("character_set_server", text("utf8mb4"), Both, false),
        v("character_set_system", text("utf8mb3"), Global, true),
        v(
            "collation_connection",
            text("utf8mb4_0900_ai_ci"),
            Both,
            false,
        ),
        v(
            "collation_database",
            text("utf8mb4_0900_ai_ci"),
            Both,
            false,
        ),
        v("collation_server", text("utf8mb4_0900_ai_ci"), Both, false),
        v("connect_timeout", int(10), Global, false),
        v(
            "default_authentication_plugin",
            text("caching_sha2_password"),
            Global,
            true,
        ),
        v("default_storage_engine", text("ndbcluster"), Both, false),
        v("div_precision_increment", int(4), Both, false),
        v("explicit_defaults_for_timestamp", int(1), Both, false),
        v("foreign_key_checks", int(1), Both, false),
        v("general_log", int(0), Global, false),
        v("group_concat_max_len", int(1024), Both, false),
        v("have_openssl", text("YES"), Global, true),
        v("have_ssl", text("YES"), Global, true),
        v("hostname", text("localhost"), Global, true),
        v("init_connect", text(""), Global, false),
        v("innodb_lock_wait_timeout", int(50), Both, false),
        v("interactive_timeout", int(28_800), Both, false),
        v("last_insert_id", int(0), Session, false),
        v("license", text("Apache-2.0"), Global, true),
        v("lock_wait_timeout", int(31_536_000), Both, false),
        v("long_query_time", SqlValue::Double(10.0), Both, false),
        v("lower_case_table_names", int(0), Global, true),
        v(
            "max_allowed_packet",
            int(MAX_ALLOWED_PACKET_DEFAULT),
            Both,
            false,
        ),
        v(
            "max_connections",
            int(MAX_CONNECTIONS_DEFAULT),
            Global,
            false,
        ),
        v("max_execution_time", int(0), Both, false),
        v("ndb_autoincrement_prefetch_sz", int(512), Both, false),
        v("ndb_use_transactions", int(1), Both, false),
        v("net_buffer_length", int(16_384), Both, false),
        v("net_read_timeout", int(30), Both, false),
        v("net_write_timeout", int(60), Both, false),
        v("performance_schema", int(0), Global, true),
        v("port", int(3306), Global, true),
        v("protocol_version", int(10), Global, true),
        v("query_cache_size", int(0), Global, true),
        v("query_cache_type", text("OFF"), Both, true),
        v("require_secure_transport", int(0), Global, false),
        v("session_track_gtids", text("OFF"), Both, false),
        v("session_track_schema", int(1), Both, false),
        v("session_track_state_change", int(0), Both, false),
        v(
            "session_track_system_variables",
            text(
                "time_zone,autocommit,character_set_client,character_set_results,character_set_connection",
            ),
            Both,
            false,
        ),
        v("session_track_transaction_info", text("OFF"), Both, false),
        v("slow_query_log", int(0), Global, false),
        v("socket", text(""), Global, true),
        v("sql_auto_is_null", int(0), Both, false),
        v("sql_mode", text(SQL_MODE_DEFAULT), Both, false),
        v("sql_notes", int(1), Both, false),
        v("sql_quote_show_create", int(1), Both, false),
        v("sql_safe_updates", int(0), Both, false),
        v("sql_select_limit", SqlValue::UInt(u64::MAX), Both, false),
        v("sql_warnings", int(0), Both, false),
        v("system_time_zone", text("UTC"), Global, true),
        v("time_zone", text("SYSTEM"), Both, false),
        v("transaction_allow_batching", int(0), Session, false),
        // MySQL's default; NDB tables read committed whatever it says.
        v(
            "transaction_isolation",
            text("REPEATABLE-READ"),
            Both,
            false,
        ),
        v("transaction_read_only", int(0), Both, false),
        v("tx_isolation", text("REPEATABLE-READ"), Both, false),
        v("tx_read_only", int(0), Both, false),
        v("unique_checks", int(1), Both, false),
        v("version", text(SERVER_VERSION), Global, true),
        v(
            "version_comment",
            text("Shoal, a shared-nothing in-memory cluster in the family of MySQL NDB Cluster"),
            Global,
            true,
        ),
        v("version_compile_machine", text("x86_64"), Global, true),
        v("version_compile_os", text("Linux"), Global, true),
        v("wait_timeout", int(WAIT_TIMEOUT_DEFAULT), Both, false),
        v("warning_count", int(0), Session, true),
        v("error_count", int(0), Session, true),
        v("identity", int(0), Session, false),
        v("timestamp", int(0), Session, false),
    ];
    list.sort_by_key(|variable| variable.name);
    list
}

/// The variable named `name` (case-insensitive), if Shoal knows it.
pub fn find(name: &str) -> Option<Variable> {
    let lower = name.to_ascii_lowercase();
    all().into_iter().find(|v| v.name == lower)
}

/// Global values, shared by the SQL node's sessions.
#[derive(Debug, Clone)]
pub struct GlobalVariables {
    pub values: BTreeMap<&'static str, SqlValue>,
}

impl GlobalVariables {
    pub fn new(overrides: &[(&str, SqlValue)]) -> GlobalVariables {
        let mut values: BTreeMap<&'static str, SqlValue> =
            all().into_iter().map(|v| (v.name, v.default)).collect();
        for (name, value) in overrides {
            if let Some(variable) = find(name) {
                values.insert(variable.name, value.clone());
            }
        }
        GlobalVariables { values }
    }

    pub fn get(&self, name: &str) -> Option<&SqlValue> {
        self.values.get(name)
    }
}

/// 1193 for a variable Shoal does not know.
pub fn unknown(name: &str) -> SqlError {
    SqlError::new(1193, format!("Unknown system variable '{name}'"))
}

/// 1238 for a read-only variable, 1228/1229 for scope mistakes.
pub fn check_settable(variable: &Variable, global: bool) -> Result<(), SqlError> {
    if variable.read_only {
        return Err(SqlError::new(
            1238,
            format!("Variable '{}' is a read only variable", variable.name),
        ));
    }
    match (variable.scope, global) {
        (Scope::Global, false) => Err(SqlError::new(
            1229,
            format!(
                "Variable '{}' is a GLOBAL variable and should be set with SET GLOBAL",
                variable.name
            ),
        )),
        (Scope::Session, true) => Err(SqlError::new(
            1228,
            format!(
                "Variable '{}' is a SESSION variable and can't be used with SET GLOBAL",
                variable.name
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether a variable holds a boolean (ON/OFF) in MySQL, so `SET x = ON`
/// and `SET x = 'OFF'` work and `SHOW VARIABLES` prints ON/OFF.
pub fn is_boolean(name: &str) -> bool {
    matches!(
        name,
        "autocommit"
            | "big_tables"
            | "explicit_defaults_for_timestamp"
            | "foreign_key_checks"
            | "general_log"
            | "ndb_use_transactions"
            | "performance_schema"
            | "require_secure_transport"
            | "session_track_schema"
            | "session_track_state_change"
            | "slow_query_log"
            | "sql_auto_is_null"
            | "sql_notes"
            | "sql_quote_show_create"
            | "sql_safe_updates"
            | "sql_warnings"
            | "transaction_allow_batching"
            | "transaction_read_only"
            | "tx_read_only"
            | "unique_checks"
    )
}
