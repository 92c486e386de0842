//! A SQL session: one client connection's state (database, variables,
//! transaction, warnings, prepared statements) and the statement
//! dispatcher. It touches data only through its `shoal_client::Session`.
//!
//! Transactions follow NDB's mysqld: a statement in autocommit mode is one
//! cluster transaction, committed in the same round trip as its last
//! batch; after `BEGIN` (or with `autocommit=0`) the cluster transaction
//! lives until `COMMIT`/`ROLLBACK`. An error from the cluster aborts the
//! whole cluster transaction, as in NDB, and the client is told so.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use shoal_client::{ClientError, ErrorClass, ExecuteEnd, Hint, Transaction};
use sqlparser::ast::{self, Expr, Statement};

use crate::catalog::{self, SqlTable};
use crate::error::SqlError;
use crate::expression::{Environment, WarningLevel};
use crate::outcome::{Outcome, ResultSet};
use crate::parse::{self, Parsed, StatementTokens};
use crate::server::Server;
use crate::statement_cache::{self, StatementCache};
use crate::value::{Date, Datetime, SqlValue};
use crate::variables::{self, Scope as VariableScope};

/// Most warnings kept per statement (`max_error_count`).
pub const WARNINGS_MAX: usize = 1024;
/// Most prepared statements per session (`max_prepared_stmt_count` is
/// global in MySQL; per session here, so one client cannot starve others).
pub const PREPARED_STATEMENTS_MAX: usize = 16_382;
/// Most user variables per session.
pub const USER_VARIABLES_MAX: usize = 4096;

/// A warning, note or error of the last statement (`SHOW WARNINGS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub level: WarningLevel,
    pub code: u16,
    pub message: String,
}

/// A statement prepared with COM_STMT_PREPARE.
#[derive(Debug, Clone)]
pub struct PreparedStatement {
    /// Shared, so an execution does not copy the statement's tree.
    pub parsed: Arc<Parsed>,
    pub text: String,
    pub placeholders: usize,
    /// The result set's columns, as far as they are known at prepare time.
    pub columns: Vec<mysql_protocol::ColumnDefinition>,
    /// A SELECT's compiled form from its last execution.
    compiled: Option<crate::select::CachedSelect>,
}

/// One client connection's SQL state.
pub struct Session {
    pub server: Arc<Server>,
    pub native: shoal_client::Session,
    pub connection_id: u64,
    pub user: String,
    pub host: String,
    pub database: Option<String>,
    variables: BTreeMap<&'static str, SqlValue>,
    /// What statements ask of `variables` per value, read from them once
    /// per change (`set_variable`) instead of searched for each time.
    hot: HotVariables,
    user_variables: HashMap<String, SqlValue>,
    pub(crate) transaction: Option<Transaction>,
    /// `BEGIN`/`START TRANSACTION` was issued and not ended.
    explicit_transaction: bool,
    /// `START TRANSACTION READ ONLY`: writes are 1792 until it ends.
    read_only_transaction: bool,
    pub warnings: Vec<Warning>,
    /// Warnings beyond `WARNINGS_MAX` that were counted and not kept.
    warnings_dropped: u64,
    pub(crate) last_insert_id: u64,
    /// The first auto-increment value this statement generated.
    pub(crate) statement_insert_id: Option<u64>,
    pub(crate) row_count: i64,
    pub(crate) found_rows: u64,
    tables: HashMap<String, Arc<SqlTable>>,
    /// The routing view `routed` was read from, and the tables a name
    /// meant in it: while the cluster connection's view is this one, a
    /// name means the same table without a search of the dictionary.
    routing_seen: Option<Arc<shoal_client::Routing>>,
    routed: HashMap<String, Arc<SqlTable>>,
    /// Scratch for a table's dictionary name, so a lookup that hits
    /// `routed` allocates nothing.
    table_key: String,
    /// While a prepared statement runs: `Some`, holding its SELECT's
    /// compiled form if it has one; `select::run` takes it, uses it when
    /// still valid and leaves the form to keep.
    pub(crate) prepared_select: Option<Option<crate::select::CachedSelect>>,
    statement_start: Datetime,
    pub(crate) parameters: Vec<SqlValue>,
    /// Text statements parsed before, by their shape (`statement_cache`).
    pub statement_cache: StatementCache,
    pub prepared: HashMap<u32, PreparedStatement>,
    next_statement_id: u32,
    /// Set by `KILL QUERY` from another session.
    pub query_killed: Arc<AtomicBool>,
    /// The statement being run, for SHOW PROCESSLIST.
    pub current_statement: Option<String>,
    /// The client asked for CLIENT_FOUND_ROWS: UPDATE reports matched
    /// rows, not changed ones.
    pub client_found_rows: bool,
    /// The statement is INSERT IGNORE or UPDATE IGNORE: conversion errors
    /// become warnings, duplicate rows are skipped with a warning.
    pub(crate) ignore_errors: bool,
}

/// The result of one statement of a query.
pub type StatementResult = Result<Outcome, SqlError>;

/// The session variables asked for per row or value (`sql_mode`, the
/// connection's collation, `autocommit`), as read from their values.
#[derive(Debug, Clone)]
struct HotVariables {
    /// The modes of `sql_mode`, as written there.
    sql_modes: Vec<Vec<u8>>,
    /// STRICT_TRANS_TABLES or STRICT_ALL_TABLES is among them.
    strict: bool,
    collation: schema::Collation,
    autocommit: bool,
}

impl HotVariables {
    fn of(variables: &BTreeMap<&'static str, SqlValue>) -> HotVariables {
        let sql_modes: Vec<Vec<u8>> = match variables.get("sql_mode") {
            Some(SqlValue::String(modes)) => modes
                .split(|byte| *byte == b',')
                .map(<[u8]>::to_vec)
                .collect(),
            _ => Vec::new(),
        };
        let strict = sql_modes.iter().any(|mode| {
            mode.eq_ignore_ascii_case(b"STRICT_TRANS_TABLES")
                || mode.eq_ignore_ascii_case(b"STRICT_ALL_TABLES")
        });
        let collation = match variables.get("collation_connection") {
            Some(SqlValue::String(name)) => std::str::from_utf8(name)
                .ok()
                .and_then(crate::expression::collation_by_name),
            _ => None,
        }
        .unwrap_or(crate::expression::CONNECTION_COLLATION);
        let autocommit = match variables.get("autocommit") {
            Some(SqlValue::Int(v)) => *v != 0,
            Some(SqlValue::UInt(v)) => *v != 0,
            _ => false,
        };
        HotVariables {
            sql_modes,
            strict,
            collation,
            autocommit,
        }
    }
}

impl Session {
    pub fn new(
        server: Arc<Server>,
        native: shoal_client::Session,
        connection_id: u64,
        user: String,
        host: String,
    ) -> Session {
        let globals = server.globals.read().expect("globals").clone();
        let variables = variables::all()
            .into_iter()
            .filter(|v| v.scope != VariableScope::Global)
            .map(|v| {
                let value = globals.get(v.name).cloned().unwrap_or(v.default);
                (v.name, value)
            })
            .collect();
        let hot = HotVariables::of(&variables);
        Session {
            server,
            native,
            connection_id,
            user,
            host,
            database: None,
            variables,
            hot,
            user_variables: HashMap::new(),
            transaction: None,
            explicit_transaction: false,
            read_only_transaction: false,
            warnings: Vec::new(),
            warnings_dropped: 0,
            last_insert_id: 0,
            statement_insert_id: None,
            row_count: -1,
            found_rows: 0,
            tables: HashMap::new(),
            routing_seen: None,
            routed: HashMap::new(),
            table_key: String::new(),
            prepared_select: None,
            statement_start: now_utc(),
            parameters: Vec::new(),
            statement_cache: StatementCache::default(),
            prepared: HashMap::new(),
            next_statement_id: 1,
            query_killed: Arc::new(AtomicBool::new(false)),
            current_statement: None,
            client_found_rows: false,
            ignore_errors: false,
        }
    }

    /// Whether a transaction is open (`SERVER_STATUS_IN_TRANS`).
    pub fn in_transaction(&self) -> bool {
        self.explicit_transaction || self.transaction.is_some()
    }

    pub fn autocommit(&self) -> bool {
        debug_assert_eq!(self.hot.autocommit, self.session_int("autocommit") != 0);
        self.hot.autocommit
    }

    /// Sets a session variable (every change goes through here, so the
    /// variables read per row stay in step).
    fn set_variable(&mut self, name: &'static str, value: SqlValue) {
        self.variables.insert(name, value);
        if matches!(name, "sql_mode" | "collation_connection" | "autocommit") {
            self.hot = HotVariables::of(&self.variables);
        }
    }

    /// Warnings of the last statement, as the OK packet counts them.
    pub fn warning_count(&self) -> u16 {
        u16::try_from(self.warnings.len() as u64 + self.warnings_dropped).unwrap_or(u16::MAX)
    }

    pub fn session_int(&self, name: &str) -> i64 {
        match self.variables.get(name) {
            Some(SqlValue::Int(v)) => *v,
            Some(SqlValue::UInt(v)) => i64::try_from(*v).unwrap_or(i64::MAX),
            _ => 0,
        }
    }

    pub fn session_text(&self, name: &str) -> String {
        match self.variables.get(name) {
            Some(SqlValue::String(v)) => String::from_utf8_lossy(v).into_owned(),
            _ => String::new(),
        }
    }

    /// The collation string literals take (`collation_connection`).
    pub fn connection_collation(&self) -> schema::Collation {
        self.hot.collation
    }

    /// Whether the session's `sql_mode` is strict for transactional tables
    /// (every cluster table is).
    pub fn is_strict(&self) -> bool {
        self.hot.strict
    }

    /// Whether `sql_mode` holds `mode` (asked per row: no allocation, no
    /// search of the variables).
    pub fn sql_mode_has(&self, mode: &str) -> bool {
        self.hot
            .sql_modes
            .iter()
            .any(|one| one.eq_ignore_ascii_case(mode.as_bytes()))
    }

    /// Runs every statement of a COM_QUERY; stops after the first error,
    /// as MySQL does. `multi_statements` is the client's capability: without
    /// it a second statement is a syntax error.
    pub fn run_query(&mut self, text: &str, multi_statements: bool) -> Vec<StatementResult> {
        self.server.questions.fetch_add(1, Ordering::Relaxed);
        // A statement whose shape ran before skips the tokenizer too.
        let mut quick = statement_cache::quick_strip(text);
        match quick.as_ref().and_then(|q| self.statement_cache.quick(q)) {
            Some(Some(parsed)) => {
                let literals = quick.take().map(|q| q.literals).unwrap_or_default();
                return vec![statement_cache::with_literals(literals, || {
                    self.run_parsed(&parsed, Vec::new())
                })];
            }
            // Known to run the ordinary way.
            Some(None) => quick = None,
            // New to the cache (or not read quickly).
            None => {}
        }
        self.run_statements(text, quick, multi_statements)
    }

    /// Splits and runs a query's statements (`quick`: the shape of a
    /// single statement, new to the statement cache).
    fn run_statements(
        &mut self,
        text: &str,
        mut quick: Option<statement_cache::QuickStripped>,
        multi_statements: bool,
    ) -> Vec<StatementResult> {
        let statements = match parse::split(text) {
            Ok(s) => s,
            Err(e) => return vec![Err(self.fail(e))],
        };
        if statements.is_empty() {
            return vec![Err(self.fail(SqlError::new(1065, "Query was empty")))];
        }
        if statements.len() > 1 && !multi_statements {
            return vec![Err(self.fail(SqlError::syntax(
                "multiple statements in one query need the client's CLIENT_MULTI_STATEMENTS",
            )))];
        }
        let mut results = Vec::with_capacity(statements.len());
        for tokens in &statements {
            let result = self.run_tokens(tokens, quick.take());
            let failed = result.is_err();
            results.push(result);
            if failed {
                break;
            }
        }
        results
    }

    /// Runs one statement of a query; `quick` is its shape as
    /// `quick_strip` read it, new to the cache.
    fn run_tokens(
        &mut self,
        tokens: &StatementTokens,
        quick: Option<statement_cache::QuickStripped>,
    ) -> StatementResult {
        let stripped = statement_cache::strip(tokens);
        let parsed = stripped
            .as_ref()
            .and_then(|stripped| self.statement_cache.parsed(stripped, tokens));
        if let Some(quick) = quick {
            self.statement_cache
                .remember_quick(quick, stripped.as_ref(), parsed.clone());
        }
        // A shape whose marked tokens do not parse runs the ordinary way
        // below, which gives the statement's own error.
        if let (Some(stripped), Some(parsed)) = (stripped, parsed) {
            return statement_cache::with_literals(stripped.literals, || {
                self.run_parsed(&parsed, Vec::new())
            });
        }
        let parsed = match parse::parse(tokens) {
            Ok(p) => p,
            Err(e) => return Err(self.fail(e)),
        };
        if tokens.placeholders > 0 {
            return Err(self.fail(SqlError::syntax(
                "'?' placeholders are for prepared statements",
            )));
        }
        self.run_parsed(&parsed, Vec::new())
    }

    /// Runs one parsed statement with its parameters.
    pub fn run_parsed(&mut self, parsed: &Parsed, parameters: Vec<SqlValue>) -> StatementResult {
        self.query_killed.store(false, Ordering::Relaxed);
        let keeps_warnings = keeps_diagnostics(parsed);
        if !keeps_warnings {
            self.warnings.clear();
            self.warnings_dropped = 0;
        }
        self.statement_start = now_utc();
        self.statement_insert_id = None;
        self.parameters = parameters;
        let result = self.dispatch(parsed);
        self.parameters.clear();
        match result {
            Ok(outcome) => {
                if let Some(id) = self.statement_insert_id {
                    self.last_insert_id = id;
                }
                self.row_count = match &outcome {
                    Outcome::Done { affected_rows, .. } if writes(parsed) => *affected_rows as i64,
                    Outcome::Rows(_) => -1,
                    _ => 0,
                };
                Ok(outcome)
            }
            Err(error) => {
                self.row_count = -1;
                self.abort_statement();
                Err(self.fail(error))
            }
        }
    }

    /// Records a failed statement's error in the diagnostics area.
    fn fail(&mut self, error: SqlError) -> SqlError {
        self.warnings.clear();
        self.warnings.push(Warning {
            level: WarningLevel::Error,
            code: error.code,
            message: error.message.clone(),
        });
        error
    }

    /// After a failed statement: the cluster transaction is gone (NDB
    /// aborts it on any error); forget it so the next statement starts a
    /// new one.
    fn abort_statement(&mut self) {
        if let Some(mut transaction) = self.transaction.take()
            && transaction.status() == shoal_client::Status::Open
        {
            // A statement that failed before any cluster error (a value
            // conversion, say) leaves the transaction open: roll it back
            // so nothing half-applied survives.
            if let Err(e) = self.native.execute(&mut transaction, ExecuteEnd::Rollback) {
                self.note(
                    WarningLevel::Warning,
                    1196,
                    format!("rollback after the error failed: {e}"),
                );
            }
        }
    }

    fn dispatch(&mut self, parsed: &Parsed) -> StatementResult {
        match parsed {
            Parsed::Account(statement) => crate::users::run(self, statement),
            Parsed::AlterPartitioning {
                table,
                partitioning,
            } => {
                self.commit()?;
                crate::ddl::alter_partitioning(self, table, partitioning)
            }
            Parsed::Do(exprs) => {
                for expr in exprs {
                    crate::select::evaluate_constant(self, expr)?;
                }
                Ok(Outcome::done(0))
            }
            Parsed::ShowIndex { table, filter } => {
                crate::show::index_rows(self, table, filter.as_deref())
            }
            Parsed::Sql {
                statement,
                share_lock,
                ignore,
                partitioning,
            } => {
                self.ignore_errors = *ignore
                    || matches!(statement.as_ref(), Statement::Insert(insert) if insert.ignore);
                let result = self.dispatch_sql(statement, *share_lock, partitioning.as_ref());
                self.ignore_errors = false;
                result
            }
        }
    }

    fn dispatch_sql(
        &mut self,
        statement: &Statement,
        share_lock: bool,
        partitioning: Option<&parse::Partitioning>,
    ) -> StatementResult {
        match statement {
            Statement::Query(query) => {
                self.server.count_command("select");
                crate::select::run(self, query, share_lock)
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
                if self.read_only_transaction
                    || (!self.explicit_transaction
                        && self.session_int("transaction_read_only") != 0) =>
            {
                Err(SqlError::new(
                    1792,
                    "Cannot execute statement in a READ ONLY transaction.",
                ))
            }
            Statement::Insert(insert) => {
                let command = if insert.replace_into {
                    "replace"
                } else if insert
                    .source
                    .as_ref()
                    .is_some_and(|s| !matches!(*s.body, ast::SetExpr::Values(_)))
                {
                    "insert_select"
                } else {
                    "insert"
                };
                self.server.count_command(command);
                crate::write::insert(self, insert)
            }
            Statement::Update(update) => {
                self.server.count_command("update");
                crate::write::update(self, update)
            }
            Statement::Delete(delete) => {
                self.server.count_command("delete");
                crate::write::delete(self, delete)
            }
            Statement::StartTransaction { modes, .. } => {
                self.server.count_command("begin");
                self.commit()?;
                self.explicit_transaction = true;
                self.read_only_transaction = modes.iter().any(|m| {
                    matches!(
                        m,
                        ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly)
                    )
                }) || self.session_int("transaction_read_only") != 0;
                Ok(Outcome::done(0))
            }
            Statement::Commit { .. } => {
                self.server.count_command("commit");
                self.commit()?;
                Ok(Outcome::done(0))
            }
            Statement::Rollback {
                savepoint: None, ..
            } => {
                self.server.count_command("rollback");
                self.rollback()?;
                Ok(Outcome::done(0))
            }
            Statement::Set(set) => {
                self.server.count_command("set_option");
                self.set(set)
            }
            Statement::Use(using) => {
                self.server.count_command("change_db");
                let name = match using {
                    ast::Use::Object(name) | ast::Use::Database(name) | ast::Use::Schema(name) => {
                        object_name_last(name)
                    }
                    _ => return Err(SqlError::syntax("USE needs a database name")),
                };
                self.use_database(&name)?;
                Ok(Outcome::done(0))
            }
            Statement::CreateDatabase { .. }
            | Statement::CreateSchema { .. }
            | Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::Truncate(_)
            | Statement::AlterTable(_)
            | Statement::RenameTable(_) => {
                // DDL commits the open transaction first, as in MySQL.
                self.commit()?;
                crate::ddl::run(self, statement, partitioning)
            }
            Statement::Kill { modifier, id } => {
                self.server.count_command("kill");
                self.kill(*id, matches!(modifier, Some(ast::KillType::Query)))
            }
            Statement::ExplainTable { table_name, .. } => {
                let name = table_name.clone();
                crate::show::columns(self, &name, None, false, None)
            }
            statement if crate::show::handles(statement) => crate::show::run(self, statement),
            other => Err(SqlError::unsupported(statement_kind(other))),
        }
    }

    // ---- Transactions ----

    /// Whether this statement commits on its own when it ends.
    pub(crate) fn statement_commits(&self) -> bool {
        !self.explicit_transaction && self.autocommit()
    }

    /// The open cluster transaction, or a new one started with `hint`.
    pub(crate) fn take_transaction(
        &mut self,
        hint: Option<Hint<'_>>,
    ) -> Result<Transaction, SqlError> {
        if let Some(transaction) = self.transaction.take()
            && transaction.status() == shoal_client::Status::Open
        {
            return Ok(transaction);
        }
        self.native
            .start_transaction(hint)
            .map_err(|e| self.cluster_error(e))
    }

    /// Sends the defined operations: commits when `last` and the statement
    /// commits on its own, else keeps the transaction open and puts it back.
    pub(crate) fn execute_batch(
        &mut self,
        mut transaction: Transaction,
        last: bool,
    ) -> Result<Transaction, SqlError> {
        self.execute_in_place(&mut transaction, last)?;
        Ok(transaction)
    }

    /// `execute_batch` on a borrowed transaction, which stays readable
    /// after an error (which operation failed).
    pub(crate) fn execute_in_place(
        &mut self,
        transaction: &mut Transaction,
        last: bool,
    ) -> Result<(), SqlError> {
        self.check_killed()?;
        let end = if last && self.statement_commits() {
            ExecuteEnd::Commit
        } else {
            ExecuteEnd::NoCommit
        };
        self.native
            .execute(transaction, end)
            .map_err(|e| self.cluster_error(e))
    }

    /// Keeps `transaction` for the next statement unless it ended.
    pub(crate) fn keep_transaction(&mut self, transaction: Transaction) {
        if transaction.status() == shoal_client::Status::Open {
            self.transaction = Some(transaction);
        }
    }

    /// Ends a statement: commits when it commits on its own, else keeps
    /// the transaction.
    pub(crate) fn finish_statement(
        &mut self,
        mut transaction: Transaction,
    ) -> Result<(), SqlError> {
        if self.statement_commits() {
            if transaction.status() == shoal_client::Status::Open {
                self.native
                    .execute(&mut transaction, ExecuteEnd::Commit)
                    .map_err(|e| self.cluster_error(e))?;
            }
            return Ok(());
        }
        self.keep_transaction(transaction);
        Ok(())
    }

    pub fn commit(&mut self) -> Result<(), SqlError> {
        self.explicit_transaction = false;
        self.read_only_transaction = false;
        if let Some(mut transaction) = self.transaction.take()
            && transaction.status() == shoal_client::Status::Open
        {
            self.native
                .execute(&mut transaction, ExecuteEnd::Commit)
                .map_err(|e| self.cluster_error(e))?;
        }
        Ok(())
    }

    pub fn rollback(&mut self) -> Result<(), SqlError> {
        self.explicit_transaction = false;
        self.read_only_transaction = false;
        if let Some(mut transaction) = self.transaction.take()
            && transaction.status() == shoal_client::Status::Open
        {
            self.native
                .execute(&mut transaction, ExecuteEnd::Rollback)
                .map_err(|e| self.cluster_error(e))?;
        }
        Ok(())
    }

    /// Ends the session's transaction when the connection closes or is
    /// reset: rolled back, as MySQL does.
    pub fn reset(&mut self) {
        if let Err(e) = self.rollback() {
            // The cluster rolls back an abandoned transaction by itself
            // (its coordinator's inactivity timeout); nothing is lost.
            self.note(WarningLevel::Warning, e.code, e.message);
        }
        self.user_variables.clear();
        self.prepared.clear();
        self.warnings.clear();
        self.last_insert_id = 0;
        self.database = self.database.take();
    }

    /// A cluster error as MySQL's NDB handler reports it.
    pub(crate) fn cluster_error(&self, error: ClientError) -> SqlError {
        cluster_error(error)
    }

    pub(crate) fn check_killed(&self) -> Result<(), SqlError> {
        if self.query_killed.load(Ordering::Relaxed) {
            return Err(SqlError::new(1317, "Query execution was interrupted"));
        }
        Ok(())
    }

    // ---- Catalog ----

    /// The current database, or 1046.
    pub fn current_database(&self) -> Result<&str, SqlError> {
        self.database
            .as_deref()
            .ok_or_else(|| SqlError::new(1046, "No database selected"))
    }

    /// The database and table an object name means here.
    pub fn resolve_name(&self, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|part| match part.as_ident() {
                Some(ident) => ident.value.clone(),
                None => part.to_string(),
            })
            .collect();
        match parts.as_slice() {
            [table] => Ok((self.current_database()?.to_string(), table.clone())),
            [database, table] => Ok((database.clone(), table.clone())),
            _ => Err(SqlError::syntax(format!("bad table name '{name}'"))),
        }
    }

    /// The table `database.name`, or 1146.
    pub fn table(&mut self, database: &str, name: &str) -> Result<Arc<SqlTable>, SqlError> {
        let mut key = std::mem::take(&mut self.table_key);
        catalog::write_dictionary_name(database, name, &mut key);
        let table = self.table_by_dictionary_name(&key);
        self.table_key = key;
        table
    }

    /// The table of a dictionary name (`catalog::dictionary_name`), or 1146.
    fn table_by_dictionary_name(
        &mut self,
        dictionary_name: &str,
    ) -> Result<Arc<SqlTable>, SqlError> {
        let routing = self.native.cluster().routing();
        if !self
            .routing_seen
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &routing))
        {
            self.routed.clear();
            self.routing_seen = Some(Arc::clone(&routing));
        }
        if let Some(table) = self.routed.get(dictionary_name) {
            return Ok(Arc::clone(table));
        }
        let route = routing.table_by_name(dictionary_name).cloned();
        let routed = route.is_some();
        let route = match route {
            Some(route) => route,
            None => match self.native.table(dictionary_name) {
                Ok(route) => route,
                Err(e) if e.mysql_code == 1146 => {
                    // A database name holds no '/': the first "/def/" ends it.
                    let (database, name) = dictionary_name
                        .split_once("/def/")
                        .unwrap_or(("", dictionary_name));
                    return Err(SqlError::new(
                        1146,
                        format!("Table '{database}.{name}' doesn't exist"),
                    ));
                }
                Err(e) => return Err(self.cluster_error(e)),
            },
        };
        let table = match self.tables.get(dictionary_name) {
            Some(table) if Arc::ptr_eq(&table.route, &route) => Arc::clone(table),
            _ => {
                let table = Arc::new(SqlTable::new(route)?);
                self.tables
                    .insert(dictionary_name.to_string(), Arc::clone(&table));
                table
            }
        };
        if routed {
            self.routed
                .insert(dictionary_name.to_string(), Arc::clone(&table));
        }
        Ok(table)
    }

    /// The table an object name means here.
    pub fn table_by_object_name(
        &mut self,
        name: &ast::ObjectName,
    ) -> Result<Arc<SqlTable>, SqlError> {
        // Plain names, the common case, are read without copies.
        let mut key = std::mem::take(&mut self.table_key);
        let written = match name.0.as_slice() {
            [table] => match (table.as_ident(), self.current_database()) {
                (Some(table), Ok(database)) => {
                    catalog::write_dictionary_name(database, &table.value, &mut key);
                    true
                }
                _ => false,
            },
            [database, table] => match (database.as_ident(), table.as_ident()) {
                (Some(database), Some(table)) => {
                    catalog::write_dictionary_name(&database.value, &table.value, &mut key);
                    true
                }
                _ => false,
            },
            _ => false,
        };
        let table = if written {
            self.table_by_dictionary_name(&key)
        } else {
            self.resolve_name(name)
                .and_then(|(database, table)| self.table(&database, &table))
        };
        self.table_key = key;
        table
    }

    /// Forgets cached SQL tables (after DDL).
    pub(crate) fn forget_tables(&mut self) {
        self.tables.clear();
        self.routed.clear();
    }

    pub fn use_database(&mut self, name: &str) -> Result<(), SqlError> {
        if !crate::ddl::database_exists(self, name)? {
            return Err(SqlError::new(1049, format!("Unknown database '{name}'")));
        }
        self.database = Some(name.to_string());
        Ok(())
    }

    // ---- Variables ----

    fn set(&mut self, set: &ast::Set) -> StatementResult {
        match set {
            ast::Set::SingleAssignment {
                scope,
                variable,
                values,
                ..
            } => {
                let global = matches!(scope, Some(ast::ContextModifier::Global));
                let value = values
                    .first()
                    .ok_or_else(|| SqlError::syntax("SET needs a value"))?;
                self.assign(&variable.to_string(), global, value)?;
            }
            ast::Set::MultipleAssignments { assignments } => {
                for assignment in assignments {
                    let global = matches!(assignment.scope, Some(ast::ContextModifier::Global));
                    self.assign(&assignment.name.to_string(), global, &assignment.value)?;
                }
            }
            ast::Set::SetNames {
                charset_name,
                collation_name,
            } => {
                let charset = charset_name.to_string().to_ascii_lowercase();
                let charset = charset.trim_matches('\'').to_string();
                if !matches!(
                    charset.as_str(),
                    "utf8mb4" | "utf8" | "utf8mb3" | "latin1" | "binary" | "ascii"
                ) {
                    return Err(SqlError::new(
                        1115,
                        format!("Unknown character set: '{charset}'"),
                    ));
                }
                for name in [
                    "character_set_client",
                    "character_set_connection",
                    "character_set_results",
                ] {
                    self.set_variable(
                        static_name(name),
                        SqlValue::String(charset.clone().into_bytes()),
                    );
                }
                let collation = collation_name
                    .as_ref()
                    .map(|c| c.trim_matches('\'').to_string())
                    .unwrap_or_else(|| default_collation(&charset).to_string());
                self.set_variable(
                    "collation_connection",
                    SqlValue::String(collation.into_bytes()),
                );
            }
            ast::Set::SetNamesDefault {} => {}
            ast::Set::SetTransaction { .. } => {
                // Every cluster transaction reads committed data and locks
                // what it writes, as NDB's; the level is accepted and kept.
            }
            ast::Set::SetSessionParam(_) => {}
            other => return Err(SqlError::unsupported(format!("SET {other}"))),
        }
        Ok(Outcome::done(0))
    }

    /// `SET [GLOBAL|SESSION] name = value`, `SET @x = value`, `SET @@x = value`.
    fn assign(&mut self, name: &str, global: bool, value: &ast::Expr) -> Result<(), SqlError> {
        if let Some(user_variable) = name.strip_prefix('@').filter(|n| !n.starts_with('@')) {
            let value = crate::select::evaluate_constant(self, value)?;
            if self.user_variables.len() >= USER_VARIABLES_MAX
                && !self.user_variables.contains_key(user_variable)
            {
                return Err(SqlError::new(
                    1105,
                    format!("more than {USER_VARIABLES_MAX} user variables in one session"),
                ));
            }
            self.user_variables
                .insert(user_variable.to_ascii_lowercase(), value);
            return Ok(());
        }
        let (name, global) = system_variable_name(name, global);
        let variable = variables::find(&name).ok_or_else(|| variables::unknown(&name))?;
        variables::check_settable(&variable, global)?;
        let value = match value {
            ast::Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case("DEFAULT") => {
                if global {
                    variable.default.clone()
                } else {
                    self.server
                        .global(variable.name)
                        .unwrap_or(variable.default.clone())
                }
            }
            ast::Expr::Identifier(ident) => SqlValue::String(ident.value.clone().into_bytes()),
            other => crate::select::evaluate_constant(self, other)?,
        };
        let value = normalize_variable(variable.name, value)?;
        if variable.name == "autocommit" && !global {
            let on = matches!(value, SqlValue::Int(1));
            if on && !self.autocommit() {
                // Turning autocommit on commits the open transaction.
                self.commit()?;
            }
        }
        if global {
            self.server
                .globals
                .write()
                .expect("globals")
                .values
                .insert(variable.name, value);
        } else {
            self.set_variable(variable.name, value);
        }
        Ok(())
    }

    /// A system variable's value as `@@name` reads it.
    pub fn system_variable_value(&self, name: &str, global: bool) -> Result<SqlValue, SqlError> {
        let (name, global) = system_variable_name(name, global);
        let variable = variables::find(&name).ok_or_else(|| variables::unknown(&name))?;
        match name.as_str() {
            "warning_count" => return Ok(SqlValue::Int(i64::from(self.warning_count()))),
            "error_count" => {
                let errors = self
                    .warnings
                    .iter()
                    .filter(|w| w.level == WarningLevel::Error)
                    .count();
                return Ok(SqlValue::Int(errors as i64));
            }
            "last_insert_id" | "identity" => return Ok(SqlValue::UInt(self.last_insert_id)),
            "timestamp" => {
                let seconds = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
                return Ok(SqlValue::Double(seconds));
            }
            _ => {}
        }
        if global || variable.scope == VariableScope::Global {
            if variable.scope == VariableScope::Session {
                return Err(SqlError::new(
                    1238,
                    format!("Variable '{}' is a SESSION variable", variable.name),
                ));
            }
            return Ok(self
                .server
                .global(variable.name)
                .unwrap_or(variable.default));
        }
        Ok(self
            .variables
            .get(variable.name)
            .cloned()
            .unwrap_or(variable.default))
    }

    /// Every variable with its session (or global) value, for SHOW VARIABLES.
    pub fn variable_values(&self, global: bool) -> Vec<(&'static str, SqlValue)> {
        variables::all()
            .into_iter()
            .map(|v| {
                let value = self
                    .system_variable_value(v.name, global || v.scope == VariableScope::Global)
                    .unwrap_or(v.default);
                (v.name, value)
            })
            .collect()
    }

    pub(crate) fn note(&mut self, level: WarningLevel, code: u16, message: String) {
        if level == WarningLevel::Note && self.session_int("sql_notes") == 0 {
            return;
        }
        if self.warnings.len() >= WARNINGS_MAX {
            self.warnings_dropped += 1;
            return;
        }
        self.warnings.push(Warning {
            level,
            code,
            message,
        });
    }

    // ---- Prepared statements ----

    /// Prepares `text`: parsed once here, never again per execution.
    pub fn prepare(&mut self, text: &str) -> Result<(u32, &PreparedStatement), SqlError> {
        self.server.count_command("stmt_prepare");
        if self.prepared.len() >= PREPARED_STATEMENTS_MAX {
            return Err(SqlError::new(
                1461,
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: {PREPARED_STATEMENTS_MAX})"
                ),
            ));
        }
        let statements = parse::split(text)?;
        let tokens = match statements.as_slice() {
            [] => return Err(SqlError::new(1065, "Query was empty")),
            [one] => one,
            _ => {
                return Err(SqlError::syntax("a prepared statement holds one statement"));
            }
        };
        let parsed = parse::parse(tokens)?;
        let columns = crate::select::prepared_columns(self, &parsed).unwrap_or_default();
        let id = self.next_statement_id;
        self.next_statement_id = self.next_statement_id.wrapping_add(1).max(1);
        self.prepared.insert(
            id,
            PreparedStatement {
                parsed: Arc::new(parsed),
                text: text.to_string(),
                placeholders: tokens.placeholders,
                columns,
                compiled: None,
            },
        );
        Ok((id, &self.prepared[&id]))
    }

    /// Executes prepared statement `id` with `parameters`.
    pub fn execute_prepared(&mut self, id: u32, parameters: Vec<SqlValue>) -> StatementResult {
        self.server.questions.fetch_add(1, Ordering::Relaxed);
        self.server.count_command("stmt_execute");
        let Some(statement) = self.prepared.get(&id) else {
            let error = SqlError::new(
                1243,
                format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
            );
            return Err(self.fail(error));
        };
        if parameters.len() != statement.placeholders {
            let error = SqlError::new(1210, "Incorrect arguments to mysqld_stmt_execute");
            return Err(self.fail(error));
        }
        let parsed = Arc::clone(&statement.parsed);
        self.prepared_select = Some(statement.compiled.clone());
        let result = self.run_parsed(&parsed, parameters);
        let compiled = self.prepared_select.take().flatten();
        if let Some(statement) = self.prepared.get_mut(&id) {
            statement.compiled = compiled;
        }
        result
    }

    // ---- KILL ----

    fn kill(&mut self, id: u64, query_only: bool) -> StatementResult {
        let processes = self.server.processes.lock().expect("processes");
        let Some(process) = processes.get(&id) else {
            return Err(SqlError::new(1094, format!("Unknown thread id: {id}")));
        };
        process.query_killed.store(true, Ordering::Relaxed);
        if !query_only {
            process.connection_killed.store(true, Ordering::Relaxed);
        }
        if id != self.connection_id {
            process.interrupter.interrupt();
            // A connection killed by another closes now, idle or not (its
            // statement, if one runs, still answers first); one that kills
            // itself closes after this answer.
            if !query_only && let Some(closer) = &process.closer {
                closer();
            }
        }
        Ok(Outcome::done(0))
    }

    /// Rows of SHOW PROCESSLIST.
    pub fn process_rows(&self) -> ResultSet {
        let processes = self.server.processes.lock().expect("processes");
        let rows = processes
            .iter()
            .map(|(id, p)| {
                let activity = p.activity.lock().expect("activity");
                vec![
                    SqlValue::UInt(*id),
                    crate::outcome::text(&p.user),
                    crate::outcome::text(&p.host),
                    activity
                        .database
                        .as_ref()
                        .map(crate::outcome::text)
                        .unwrap_or(SqlValue::Null),
                    crate::outcome::text(activity.command),
                    SqlValue::UInt(activity.since.elapsed().as_secs()),
                    crate::outcome::text(if activity.command == "Sleep" {
                        ""
                    } else {
                        "executing"
                    }),
                    activity
                        .info()
                        .map(crate::outcome::text)
                        .unwrap_or(SqlValue::Null),
                ]
            })
            .collect();
        let mut result = crate::outcome::text_result(
            &[
                "Id", "User", "Host", "db", "Command", "Time", "State", "Info",
            ],
            rows,
        );
        result.types[0] = crate::outcome::integer_type();
        result.types[5] = crate::outcome::integer_type();
        for (column, sql_type) in result.columns.iter_mut().zip(&result.types) {
            *column = crate::outcome::expression_column(&column.name, sql_type);
        }
        result
    }
}

impl Environment for Session {
    fn parameter(&self, index: usize) -> Option<&SqlValue> {
        self.parameters.get(index)
    }

    fn user_variable(&self, name: &str) -> SqlValue {
        self.user_variables
            .get(&name.to_ascii_lowercase())
            .cloned()
            .unwrap_or(SqlValue::Null)
    }

    fn system_variable(&self, name: &str, global: bool) -> Result<SqlValue, SqlError> {
        self.system_variable_value(name, global)
    }

    fn last_insert_id(&self) -> u64 {
        self.last_insert_id
    }

    fn set_last_insert_id(&mut self, value: u64) {
        self.last_insert_id = value;
        self.statement_insert_id = None;
    }

    fn row_count(&self) -> i64 {
        self.row_count
    }

    fn found_rows(&self) -> u64 {
        self.found_rows
    }

    fn now(&self) -> Datetime {
        self.statement_start
    }

    fn database(&self) -> Option<String> {
        self.database.clone()
    }

    fn user(&self) -> String {
        format!("{}@{}", self.user, self.host)
    }

    fn connection_id(&self) -> u64 {
        self.connection_id
    }

    fn strict(&self) -> bool {
        self.is_strict()
    }

    fn warn(&mut self, level: WarningLevel, code: u16, message: String) {
        self.note(level, code, message);
    }

    fn set_user_variable(&mut self, name: &str, value: SqlValue) -> Result<(), SqlError> {
        let name = name.to_ascii_lowercase();
        if self.user_variables.len() >= USER_VARIABLES_MAX
            && !self.user_variables.contains_key(&name)
        {
            return Err(SqlError::new(
                1105,
                format!("more than {USER_VARIABLES_MAX} user variables in one session"),
            ));
        }
        self.user_variables.insert(name, value);
        Ok(())
    }
}

/// The current time in UTC, to the microsecond.
pub fn now_utc() -> Datetime {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    Datetime {
        date: Date { year, month, day },
        hour: (rest / 3600) as u8,
        minute: (rest / 60 % 60) as u8,
        second: (rest % 60) as u8,
        microsecond: since_epoch.subsec_micros(),
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (u16, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year as u16, month as u8, day as u8)
}

/// Runs the one operation `define` defines in a transaction of its own,
/// committed in one round trip, and gives the operation's own outcome (626
/// "no such row", 630 "duplicate", ...) for the caller to judge; a failure
/// of the transaction itself is the error.
pub fn single_operation(
    native: &mut shoal_client::Session,
    define: impl FnOnce(&mut Transaction) -> Result<shoal_client::OperationId, ClientError>,
) -> Result<Result<(), ClientError>, SqlError> {
    let mut transaction = native.start_transaction(None).map_err(cluster_error)?;
    let operation = define(&mut transaction).map_err(cluster_error)?;
    transaction.ignore_error(operation).map_err(cluster_error)?;
    native
        .execute(&mut transaction, ExecuteEnd::Commit)
        .map_err(cluster_error)?;
    Ok(transaction.result(operation))
}

/// A cluster error as MySQL's NDB handler reports it: MySQL's own code
/// where there is one (1062, 1205, 1146, 1114...), else 1297 for a
/// temporary error and 1296 for a permanent one, the NDB code in the text.
pub fn cluster_error(error: ClientError) -> SqlError {
    let ndb = error.ndb_code;
    match error.mysql_code {
        1205 => SqlError::new(
            1205,
            format!("Lock wait timeout exceeded; try restarting transaction (NDB error {ndb})"),
        ),
        1296 | 1297 | 1105 | 0 => match error.class() {
            ErrorClass::Temporary => SqlError::new(
                1297,
                format!(
                    "Got temporary error {ndb} '{}' from NDBCLUSTER",
                    error.message
                ),
            ),
            ErrorClass::UnknownResult => SqlError::new(
                1296,
                format!(
                    "Got error {ndb} '{}' from NDBCLUSTER: the outcome of the commit is unknown",
                    error.message
                ),
            ),
            ErrorClass::Permanent => SqlError::new(
                1296,
                format!("Got error {ndb} '{}' from NDBCLUSTER", error.message),
            ),
        },
        code => SqlError::new(code, format!("{} (NDB error {ndb})", error.message)),
    }
}

fn object_name_last(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|part| part.as_ident().map(|i| i.value.clone()))
        .unwrap_or_else(|| name.to_string())
}

/// `@@session.x`, `@@global.x`, `@@x`, `session.x`, `x` → the bare name
/// and whether it is the global value.
fn system_variable_name(name: &str, global: bool) -> (String, bool) {
    let name = name.trim_start_matches("@@");
    let lower = name.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("global.") {
        return (rest.to_string(), true);
    }
    if let Some(rest) = lower
        .strip_prefix("session.")
        .or_else(|| lower.strip_prefix("local."))
    {
        return (rest.to_string(), false);
    }
    (lower, global)
}

/// The `&'static str` of a known variable name.
fn static_name(name: &str) -> &'static str {
    variables::find(name)
        .map(|v| v.name)
        .expect("a known variable")
}

fn default_collation(charset: &str) -> &'static str {
    match charset {
        "latin1" => "latin1_swedish_ci",
        "binary" => "binary",
        "ascii" => "ascii_general_ci",
        "utf8" | "utf8mb3" => "utf8mb3_general_ci",
        _ => "utf8mb4_0900_ai_ci",
    }
}

/// Checks and normalizes a value assigned to a system variable: booleans
/// from ON/OFF/TRUE/1, integers from text, `sql_mode` upper-cased.
fn normalize_variable(name: &'static str, value: SqlValue) -> Result<SqlValue, SqlError> {
    let wrong = |v: &SqlValue| {
        let shown = match v {
            SqlValue::String(s) => String::from_utf8_lossy(s).into_owned(),
            SqlValue::Null => "NULL".into(),
            SqlValue::Int(i) => i.to_string(),
            SqlValue::UInt(u) => u.to_string(),
            other => format!("{other:?}"),
        };
        SqlError::new(
            1231,
            format!("Variable '{name}' can't be set to the value of '{shown}'"),
        )
    };
    if variables::is_boolean(name) {
        return match &value {
            SqlValue::Int(0) | SqlValue::UInt(0) => Ok(SqlValue::Int(0)),
            SqlValue::Int(1) | SqlValue::UInt(1) => Ok(SqlValue::Int(1)),
            SqlValue::String(s) => match String::from_utf8_lossy(s).to_ascii_uppercase().as_str() {
                "ON" | "TRUE" | "1" => Ok(SqlValue::Int(1)),
                "OFF" | "FALSE" | "0" => Ok(SqlValue::Int(0)),
                _ => Err(wrong(&value)),
            },
            _ => Err(wrong(&value)),
        };
    }
    let default = variables::find(name)
        .map(|v| v.default)
        .unwrap_or(SqlValue::Null);
    match (&default, &value) {
        (SqlValue::Int(_) | SqlValue::UInt(_), SqlValue::Int(v)) if *v >= 0 => Ok(value),
        (SqlValue::Int(_) | SqlValue::UInt(_), SqlValue::UInt(_)) => Ok(value),
        (SqlValue::Int(_) | SqlValue::UInt(_), SqlValue::String(s)) => String::from_utf8_lossy(s)
            .trim()
            .parse::<i64>()
            .map(SqlValue::Int)
            .map_err(|_| wrong(&value)),
        (SqlValue::Int(_) | SqlValue::UInt(_), _) => Err(wrong(&value)),
        (SqlValue::Double(_), SqlValue::Int(v)) => Ok(SqlValue::Double(*v as f64)),
        (SqlValue::Double(_), SqlValue::Double(_)) => Ok(value),
        (SqlValue::String(_), SqlValue::Null) if name.starts_with("character_set") => {
            Ok(SqlValue::String(Vec::new()))
        }
        (SqlValue::String(_), SqlValue::String(s)) if name == "sql_mode" => {
            let mode = String::from_utf8_lossy(s).to_ascii_uppercase();
            for part in mode.split(',').filter(|p| !p.is_empty()) {
                if !SQL_MODES.contains(&part) {
                    return Err(wrong(&value));
                }
            }
            Ok(SqlValue::String(mode.into_bytes()))
        }
        (SqlValue::String(_), SqlValue::String(_)) => Ok(value),
        (SqlValue::String(_), SqlValue::Int(_) | SqlValue::UInt(_)) if name == "sql_mode" => {
            Err(wrong(&value))
        }
        (SqlValue::String(_), _) => Err(wrong(&value)),
        _ => Ok(value),
    }
}

/// The `sql_mode` words MySQL 8.0 accepts.
const SQL_MODES: [&str; 21] = [
    "ALLOW_INVALID_DATES",
    "ANSI_QUOTES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "HIGH_NOT_PRECEDENCE",
    "IGNORE_SPACE",
    "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES",
    "NO_DIR_IN_CREATE",
    "NO_ENGINE_SUBSTITUTION",
    "NO_UNSIGNED_SUBTRACTION",
    "NO_ZERO_DATE",
    "NO_ZERO_IN_DATE",
    "ONLY_FULL_GROUP_BY",
    "PAD_CHAR_TO_FULL_LENGTH",
    "PIPES_AS_CONCAT",
    "REAL_AS_FLOAT",
    "STRICT_ALL_TABLES",
    "STRICT_TRANS_TABLES",
    "TIME_TRUNCATE_FRACTIONAL",
    "TRADITIONAL",
    "ANSI",
];

/// Statements that read the diagnostics area rather than clear it.
fn keeps_diagnostics(parsed: &Parsed) -> bool {
    let Parsed::Sql { statement, .. } = parsed else {
        return false;
    };
    match statement.as_ref() {
        Statement::ShowVariable { variable } => variable.first().is_some_and(|w| {
            let word = w.value.to_ascii_uppercase();
            word == "WARNINGS" || word == "ERRORS" || word == "COUNT"
        }),
        // `SELECT @@warning_count` (looked for without formatting the
        // query: this runs before every statement).
        Statement::Query(query) => {
            let ast::SetExpr::Select(select) = query.body.as_ref() else {
                return false;
            };
            let mut reads = false;
            for item in &select.projection {
                let (ast::SelectItem::UnnamedExpr(expr)
                | ast::SelectItem::ExprWithAlias { expr, .. }) = item
                else {
                    continue;
                };
                crate::select::walk(expr, &mut |e| {
                    let names: &[ast::Ident] = match e {
                        Expr::Identifier(ident) => std::slice::from_ref(ident),
                        Expr::CompoundIdentifier(parts) => parts,
                        _ => &[],
                    };
                    reads |= names.iter().any(|ident| {
                        ["@@warning_count", "@@error_count"]
                            .iter()
                            .any(|name| ident.value.eq_ignore_ascii_case(name))
                    });
                });
            }
            reads
        }
        _ => false,
    }
}

/// Statements whose affected rows `ROW_COUNT()` reports.
fn writes(parsed: &Parsed) -> bool {
    matches!(
        parsed,
        Parsed::Sql { statement, .. }
            if matches!(statement.as_ref(), Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_))
    )
}

/// A short name of a statement kind, for "not supported" errors.
fn statement_kind(statement: &Statement) -> String {
    let text = statement.to_string();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The elapsed time since `since`, in whole seconds, for SHOW PROCESSLIST.
pub fn seconds_since(since: Instant) -> u64 {
    since.elapsed().as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_from_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn system_variable_names_take_scope_prefixes() {
        assert_eq!(
            system_variable_name("@@session.AUTOCOMMIT", true),
            ("autocommit".into(), false)
        );
        assert_eq!(
            system_variable_name("@@global.x", false),
            ("x".into(), true)
        );
        assert_eq!(system_variable_name("x", false), ("x".into(), false));
    }

    #[test]
    fn variables_are_normalized_or_refused() {
        assert_eq!(
            normalize_variable("autocommit", SqlValue::String(b"off".to_vec())).unwrap(),
            SqlValue::Int(0)
        );
        assert_eq!(
            normalize_variable("autocommit", SqlValue::Int(2))
                .unwrap_err()
                .code,
            1231
        );
        assert_eq!(
            normalize_variable(
                "sql_mode",
                SqlValue::String(b"strict_trans_tables".to_vec())
            )
            .unwrap(),
            SqlValue::String(b"STRICT_TRANS_TABLES".to_vec())
        );
        assert_eq!(
            normalize_variable("sql_mode", SqlValue::String(b"NOT_A_MODE".to_vec()))
                .unwrap_err()
                .code,
            1231
        );
        assert_eq!(
            normalize_variable("wait_timeout", SqlValue::String(b"abc".to_vec()))
                .unwrap_err()
                .code,
            1231
        );
    }

    #[test]
    fn cluster_errors_keep_the_ndb_code() {
        let error = cluster_error(ClientError {
            ndb_code: 4010,
            mysql_code: 1297,
            message: "Node failure caused abort of transaction".into(),
        });
        assert_eq!(error.code, 1297);
        assert!(error.message.contains("4010"), "{}", error.message);
        let error = cluster_error(ClientError {
            ndb_code: 266,
            mysql_code: 1205,
            message: "Time-out".into(),
        });
        assert_eq!(error.code, 1205);
    }
}
