//! SHOW statements and DESCRIBE, with MySQL 8.0's column names.

use std::sync::atomic::Ordering;

use sqlparser::ast::{self, Statement};

use crate::catalog::{self, ColumnDefault, IndexKind};
use crate::error::SqlError;
use crate::expression::WarningLevel;
use crate::outcome::{Outcome, ResultSet, expression_column, integer_type, text, text_result};
use crate::server::COMMAND_COUNTERS;
use crate::session::{Session, StatementResult};
use crate::value::SqlValue;
use crate::variables;

/// Whether `statement` is a SHOW this module answers.
pub fn handles(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::ShowVariables { .. }
            | Statement::ShowStatus { .. }
            | Statement::ShowVariable { .. }
            | Statement::ShowCreate { .. }
            | Statement::ShowColumns { .. }
            | Statement::ShowDatabases { .. }
            | Statement::ShowSchemas { .. }
            | Statement::ShowProcessList { .. }
            | Statement::ShowTables { .. }
            | Statement::ShowCollation { .. }
            | Statement::ShowCharset(_)
    )
}

/// The columns of a SHOW result, by name, for its WHERE clause.
struct ShowScope<'a> {
    names: &'a [&'a str],
}

impl crate::expression::Scope for ShowScope<'_> {
    fn column(
        &self,
        _qualifier: Option<&str>,
        name: &str,
    ) -> Result<(usize, crate::SqlType), SqlError> {
        self.names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| (i, crate::outcome::text_type(64)))
            .ok_or_else(|| {
                SqlError::new(1054, format!("Unknown column '{name}' in 'where clause'"))
            })
    }

    fn aggregate(&self, _call: &ast::Function) -> Option<(usize, crate::SqlType)> {
        None
    }
}

/// Keeps the rows `condition` holds for (SHOW ... WHERE).
pub fn where_rows(
    session: &mut Session,
    condition: &ast::Expr,
    names: &[&str],
    rows: Vec<Vec<SqlValue>>,
) -> Result<Vec<Vec<SqlValue>>, SqlError> {
    let compiled = crate::expression::compile(condition, &ShowScope { names })?;
    let mut kept = Vec::with_capacity(rows.len());
    for row in rows {
        if crate::plan::holds(session, &compiled, &row)? {
            kept.push(row);
        }
    }
    Ok(kept)
}

/// MySQL's LIKE for SHOW filters: `%`, `_`, `\` escapes, case-insensitive.
pub fn like(text: &str, pattern: &str) -> bool {
    fn matches(text: &[char], pattern: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('%', rest)) => (0..=text.len()).any(|i| matches(&text[i..], rest)),
            Some(('_', rest)) => !text.is_empty() && matches(&text[1..], rest),
            Some(('\\', rest)) if !rest.is_empty() => {
                !text.is_empty() && text[0] == rest[0] && matches(&text[1..], &rest[1..])
            }
            Some((c, rest)) => !text.is_empty() && text[0] == *c && matches(&text[1..], rest),
        }
    }
    let text: Vec<char> = text.to_lowercase().chars().collect();
    let pattern: Vec<char> = pattern.to_lowercase().chars().collect();
    matches(&text, &pattern)
}

/// Applies a SHOW filter (`LIKE 'p'` on the first column, or `WHERE
/// Variable_name = 'x'`-style conditions on named columns) to rows.
fn filter_rows(
    session: &mut Session,
    filter: Option<&ast::ShowStatementFilter>,
    names: &[&str],
    rows: Vec<Vec<SqlValue>>,
) -> Result<Vec<Vec<SqlValue>>, SqlError> {
    let as_text = |v: &SqlValue| match v {
        SqlValue::String(s) => String::from_utf8_lossy(s).into_owned(),
        SqlValue::Int(i) => i.to_string(),
        SqlValue::UInt(u) => u.to_string(),
        _ => String::new(),
    };
    match filter {
        None => Ok(rows),
        Some(ast::ShowStatementFilter::Like(pattern))
        | Some(ast::ShowStatementFilter::ILike(pattern)) => Ok(rows
            .into_iter()
            .filter(|row| like(&as_text(&row[0]), pattern))
            .collect()),
        Some(ast::ShowStatementFilter::Where(condition)) => {
            where_rows(session, condition, names, rows)
        }
        Some(ast::ShowStatementFilter::NoKeyword(pattern)) => Ok(rows
            .into_iter()
            .filter(|row| like(&as_text(&row[0]), pattern))
            .collect()),
    }
}

fn variable_text(name: &str, value: &SqlValue) -> SqlValue {
    if variables::is_boolean(name) {
        return text(if matches!(value, SqlValue::Int(0)) {
            "OFF"
        } else {
            "ON"
        });
    }
    match value {
        SqlValue::Int(v) => text(v.to_string()),
        SqlValue::UInt(v) => text(v.to_string()),
        SqlValue::Double(v) => text(format!("{v:.6}")),
        SqlValue::String(_) => value.clone(),
        SqlValue::Null => text(""),
        other => text(format!("{other:?}")),
    }
}

fn show_options_filter(options: &ast::ShowStatementOptions) -> Option<&ast::ShowStatementFilter> {
    match &options.filter_position {
        Some(ast::ShowStatementFilterPosition::Suffix(filter))
        | Some(ast::ShowStatementFilterPosition::Infix(filter)) => Some(filter),
        None => None,
    }
}

fn show_in_name(options: &ast::ShowStatementOptions) -> Option<ast::ObjectName> {
    options.show_in.as_ref().and_then(|i| i.parent_name.clone())
}

pub fn run(session: &mut Session, statement: &Statement) -> StatementResult {
    match statement {
        Statement::ShowVariables { filter, global, .. } => {
            session.server.count_command("show_variables");
            let rows = session
                .variable_values(*global)
                .into_iter()
                .map(|(name, value)| vec![text(name), variable_text(name, &value)])
                .collect();
            let rows = filter_rows(session, filter.as_ref(), &["Variable_name", "Value"], rows)?;
            Ok(Outcome::Rows(text_result(
                &["Variable_name", "Value"],
                rows,
            )))
        }
        Statement::ShowStatus { filter, global, .. } => {
            let rows = status_rows(session, *global);
            let rows = filter_rows(session, filter.as_ref(), &["Variable_name", "Value"], rows)?;
            Ok(Outcome::Rows(text_result(
                &["Variable_name", "Value"],
                rows,
            )))
        }
        Statement::ShowDatabases { show_options, .. }
        | Statement::ShowSchemas { show_options, .. } => {
            let rows = crate::ddl::databases(session)?
                .into_iter()
                .map(|d| vec![text(d)])
                .collect();
            let filter = show_options_filter(show_options);
            let rows = filter_rows(session, filter, &["Database"], rows)?;
            // MySQL names the column after the pattern: `Database (p%)`.
            let header = match filter {
                Some(ast::ShowStatementFilter::Like(pattern)) => format!("Database ({pattern})"),
                _ => "Database".to_string(),
            };
            Ok(Outcome::Rows(text_result(&[header.as_str()], rows)))
        }
        Statement::ShowTables {
            full, show_options, ..
        } => {
            let database = match show_in_name(show_options) {
                Some(name) => name.to_string().trim_matches('`').to_string(),
                None => session.current_database()?.to_string(),
            };
            if !crate::ddl::database_exists(session, &database)? {
                return Err(SqlError::new(
                    1049,
                    format!("Unknown database '{database}'"),
                ));
            }
            if let Err(e) = session.native.cluster().refresh_dictionary() {
                return Err(crate::session::cluster_error(e));
            }
            let column = match show_options_filter(show_options) {
                Some(ast::ShowStatementFilter::Like(pattern)) => {
                    format!("Tables_in_{database} ({pattern})")
                }
                _ => format!("Tables_in_{database}"),
            };
            let rows: Vec<Vec<SqlValue>> = crate::ddl::tables_of(session, &database)
                .into_iter()
                .map(|t| {
                    let mut row = vec![text(t)];
                    if *full {
                        row.push(text("BASE TABLE"));
                    }
                    row
                })
                .collect();
            let mut names = vec![column.as_str()];
            if *full {
                names.push("Table_type");
            }
            let rows = filter_rows(session, show_options_filter(show_options), &names, rows)?;
            Ok(Outcome::Rows(text_result(&names, rows)))
        }
        Statement::ShowColumns {
            full, show_options, ..
        } => {
            let Some(name) = show_in_name(show_options) else {
                return Err(SqlError::syntax("SHOW COLUMNS needs FROM table"));
            };
            columns(
                session,
                &name,
                None,
                *full,
                show_options_filter(show_options),
            )
        }
        Statement::ShowCreate { obj_type, obj_name } => match obj_type {
            ast::ShowCreateObject::Table => {
                let table = session.table_by_object_name(obj_name)?;
                let text_value = crate::ddl::show_create_table(&table);
                Ok(Outcome::Rows(text_result(
                    &["Table", "Create Table"],
                    vec![vec![text(&table.name), text(text_value)]],
                )))
            }
            other => Err(SqlError::unsupported(format!("SHOW CREATE {other}"))),
        },
        Statement::ShowProcessList { .. } => Ok(Outcome::Rows(session.process_rows())),
        Statement::ShowCollation { filter } => {
            let rows = [
                ("binary", "binary", 63, "Yes"),
                ("latin1_bin", "latin1", 47, ""),
                ("latin1_swedish_ci", "latin1", 8, "Yes"),
                ("utf8mb4_0900_ai_ci", "utf8mb4", 255, "Yes"),
                ("utf8mb4_bin", "utf8mb4", 46, ""),
            ]
            .into_iter()
            .map(|(name, charset, id, default)| {
                vec![
                    text(name),
                    text(charset),
                    SqlValue::Int(id),
                    text(default),
                    text("Yes"),
                    SqlValue::Int(1),
                    text("PAD SPACE"),
                ]
            })
            .collect();
            let names = [
                "Collation",
                "Charset",
                "Id",
                "Default",
                "Compiled",
                "Sortlen",
                "Pad_attribute",
            ];
            let rows = filter_rows(session, filter.as_ref(), &names, rows)?;
            Ok(Outcome::Rows(text_result(&names, rows)))
        }
        Statement::ShowCharset(show) => {
            let rows = [
                ("binary", "Binary pseudo charset", "binary", 1),
                ("latin1", "cp1252 West European", "latin1_swedish_ci", 1),
                ("utf8mb4", "UTF-8 Unicode", "utf8mb4_0900_ai_ci", 4),
            ]
            .into_iter()
            .map(|(name, description, collation, length)| {
                vec![
                    text(name),
                    text(description),
                    text(collation),
                    SqlValue::Int(length),
                ]
            })
            .collect();
            let names = ["Charset", "Description", "Default collation", "Maxlen"];
            let rows = filter_rows(session, show.filter.as_ref(), &names, rows)?;
            Ok(Outcome::Rows(text_result(&names, rows)))
        }
        Statement::ShowVariable { variable } => {
            let words: Vec<String> = variable
                .iter()
                .map(|w| w.value.to_ascii_uppercase())
                .collect();
            show_words(session, &words, variable)
        }
        other => Err(SqlError::unsupported(other.to_string())),
    }
}

/// SHOW statements sqlparser gives as words: WARNINGS, ERRORS, ENGINES,
/// INDEX/KEYS/INDEXES FROM t [FROM db], TABLE STATUS, CREATE DATABASE...
fn show_words(session: &mut Session, words: &[String], raw: &[ast::Ident]) -> StatementResult {
    let word = |i: usize| words.get(i).map(String::as_str);
    match (word(0), word(1)) {
        (Some("WARNINGS"), _) | (Some("ERRORS"), _) => {
            let errors_only = word(0) == Some("ERRORS");
            let rows = session
                .warnings
                .iter()
                .filter(|w| !errors_only || w.level == WarningLevel::Error)
                .map(|w| {
                    let level = match w.level {
                        WarningLevel::Note => "Note",
                        WarningLevel::Warning => "Warning",
                        WarningLevel::Error => "Error",
                    };
                    vec![
                        text(level),
                        SqlValue::UInt(u64::from(w.code)),
                        text(&w.message),
                    ]
                })
                .collect();
            let mut result = text_result(&["Level", "Code", "Message"], rows);
            result.types[1] = integer_type();
            result.columns[1] = expression_column("Code", &result.types[1]);
            Ok(Outcome::Rows(result))
        }
        (Some("COUNT"), Some(kind)) => {
            let count = if kind == "ERRORS" {
                session
                    .warnings
                    .iter()
                    .filter(|w| w.level == WarningLevel::Error)
                    .count() as u64
            } else {
                u64::from(session.warning_count())
            };
            let name = format!(
                "@@session.{}_count",
                if kind == "ERRORS" { "error" } else { "warning" }
            );
            let sql_type = integer_type();
            Ok(Outcome::Rows(ResultSet {
                columns: vec![expression_column(&name, &sql_type)],
                types: vec![sql_type],
                rows: vec![vec![SqlValue::UInt(count)]],
            }))
        }
        (Some("ENGINES"), _) | (Some("STORAGE"), Some("ENGINES")) => {
            let rows = vec![
                vec![
                    text("ndbcluster"),
                    text("DEFAULT"),
                    text("Clustered, fault-tolerant tables"),
                    text("YES"),
                    text("NO"),
                    text("NO"),
                ],
                vec![
                    text("ndbinfo"),
                    text("YES"),
                    text("MySQL Cluster system information storage engine"),
                    text("NO"),
                    text("NO"),
                    text("NO"),
                ],
            ];
            Ok(Outcome::Rows(text_result(
                &[
                    "Engine",
                    "Support",
                    "Comment",
                    "Transactions",
                    "XA",
                    "Savepoints",
                ],
                rows,
            )))
        }
        (Some("INDEX" | "INDEXES" | "KEYS"), Some("FROM" | "IN")) => {
            let table_name = raw
                .get(2)
                .map(|i| i.value.clone())
                .ok_or_else(|| SqlError::syntax("SHOW INDEX needs a table"))?;
            let mut parts = vec![ast::Ident::new(table_name)];
            if matches!(word(3), Some("FROM" | "IN"))
                && let Some(database) = raw.get(4)
            {
                parts.insert(0, database.clone());
            }
            let name = ast::ObjectName::from(parts);
            index_rows(session, &name, None)
        }
        (Some("TABLE"), Some("STATUS")) => {
            let database = session.current_database()?.to_string();
            let rows = crate::ddl::tables_of(session, &database)
                .into_iter()
                .map(|t| {
                    vec![
                        text(t),
                        text("ndbcluster"),
                        SqlValue::Int(10),
                        text("Dynamic"),
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        SqlValue::Null,
                        text("utf8mb4_0900_ai_ci"),
                        SqlValue::Null,
                        text(""),
                        text(""),
                    ]
                })
                .collect();
            Ok(Outcome::Rows(text_result(
                &[
                    "Name",
                    "Engine",
                    "Version",
                    "Row_format",
                    "Rows",
                    "Avg_row_length",
                    "Data_length",
                    "Max_data_length",
                    "Index_length",
                    "Data_free",
                    "Auto_increment",
                    "Create_time",
                    "Update_time",
                    "Check_time",
                    "Collation",
                    "Checksum",
                    "Create_options",
                    "Comment",
                ],
                rows,
            )))
        }
        (Some("CREATE"), Some("DATABASE" | "SCHEMA")) => {
            let name = raw.last().map(|i| i.value.clone()).unwrap_or_default();
            if !crate::ddl::database_exists(session, &name)? {
                return Err(SqlError::new(1049, format!("Unknown database '{name}'")));
            }
            let create = format!(
                "CREATE DATABASE {} /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci */ /*!80016 DEFAULT ENCRYPTION='N' */",
                crate::ddl::quote_identifier(&name)
            );
            Ok(Outcome::Rows(text_result(
                &["Database", "Create Database"],
                vec![vec![text(name), text(create)]],
            )))
        }
        (Some("PLUGINS"), _) => Ok(Outcome::Rows(text_result(
            &["Name", "Status", "Type", "Library", "License"],
            vec![
                vec![
                    text("mysql_native_password"),
                    text("ACTIVE"),
                    text("AUTHENTICATION"),
                    SqlValue::Null,
                    text("GPL"),
                ],
                vec![
                    text("caching_sha2_password"),
                    text("ACTIVE"),
                    text("AUTHENTICATION"),
                    SqlValue::Null,
                    text("GPL"),
                ],
                vec![
                    text("ndbcluster"),
                    text("ACTIVE"),
                    text("STORAGE ENGINE"),
                    SqlValue::Null,
                    text("GPL"),
                ],
            ],
        ))),
        _ => Err(SqlError::unsupported(format!("SHOW {}", words.join(" ")))),
    }
}

/// SHOW STATUS rows: the server's counters and the native API's.
fn status_rows(session: &Session, global: bool) -> Vec<Vec<SqlValue>> {
    let server = &session.server;
    let mut rows: Vec<(String, String)> = Vec::new();
    let session_counters = session.native.counters();
    let counters = if global {
        server.pool.counters()
    } else {
        session_counters
    };
    for (i, name) in COMMAND_COUNTERS.iter().enumerate() {
        rows.push((
            format!("Com_{name}"),
            server.command_counts[i].load(Ordering::Relaxed).to_string(),
        ));
    }
    let ndb = [
        (
            "Ndb_api_bytes_received_count",
            counters.bytes_received_count,
        ),
        ("Ndb_api_bytes_sent_count", counters.bytes_sent_count),
        ("Ndb_api_pk_op_count", counters.pk_op_count),
        ("Ndb_api_pruned_scan_count", counters.pruned_scan_count),
        ("Ndb_api_scan_batch_count", counters.scan_batch_count),
        ("Ndb_api_table_scan_count", counters.scan_count),
        ("Ndb_api_trans_abort_count", counters.trans_abort_count),
        ("Ndb_api_trans_commit_count", counters.trans_commit_count),
        ("Ndb_api_trans_start_count", counters.trans_start_count),
        ("Ndb_api_wait_exec_complete_count", counters.execute_count),
        ("Ndb_execute_count", counters.execute_count),
        ("Ndb_pruned_scan_count", counters.pruned_scan_count),
        ("Ndb_scan_count", counters.scan_count),
    ];
    for (name, value) in ndb {
        rows.push((name.to_string(), value.to_string()));
    }
    let data_nodes = session.native.cluster().data_nodes();
    rows.push((
        "Ndb_cluster_node_id".into(),
        session.native.cluster().node_id().to_string(),
    ));
    rows.push((
        "Ndb_number_of_data_nodes".into(),
        data_nodes.len().to_string(),
    ));
    rows.push((
        "Ndb_number_of_ready_data_nodes".into(),
        data_nodes.iter().filter(|(_, up)| *up).count().to_string(),
    ));
    rows.push((
        "Aborted_connects".into(),
        server.aborted_connects.load(Ordering::Relaxed).to_string(),
    ));
    rows.push((
        "Connections".into(),
        server.connections.load(Ordering::Relaxed).to_string(),
    ));
    rows.push((
        "Questions".into(),
        server.questions.load(Ordering::Relaxed).to_string(),
    ));
    rows.push((
        "Queries".into(),
        server.questions.load(Ordering::Relaxed).to_string(),
    ));
    rows.push((
        "Threads_connected".into(),
        server.threads_connected.load(Ordering::Relaxed).to_string(),
    ));
    rows.push(("Threads_running".into(), "1".into()));
    rows.push((
        "Uptime".into(),
        server.started.elapsed().as_secs().to_string(),
    ));
    rows.push(("Ssl_cipher".into(), String::new()));
    // This session's text statements found parsed in its statement cache,
    // and those parsed and added (`statement_cache`).
    rows.push((
        "Shoal_statement_cache_hits".into(),
        session.statement_cache.hits.to_string(),
    ));
    rows.push((
        "Shoal_statement_cache_misses".into(),
        session.statement_cache.misses.to_string(),
    ));
    rows.sort();
    rows.into_iter()
        .map(|(n, v)| vec![text(n), text(v)])
        .collect()
}

/// SHOW COLUMNS / DESCRIBE.
pub fn columns(
    session: &mut Session,
    name: &ast::ObjectName,
    _database: Option<&str>,
    full: bool,
    filter: Option<&ast::ShowStatementFilter>,
) -> StatementResult {
    let table = session.table_by_object_name(name)?;
    let def = table.def();
    let mut rows = Vec::with_capacity(def.columns.len());
    for (position, column) in table.visible() {
        let metadata = &table.metadata.columns[position];
        let id = position as u16;
        let key = if def.primary_key.contains(&id) {
            "PRI"
        } else if def
            .ordered_indexes
            .iter()
            .zip(&table.metadata.indexes)
            .any(|(i, k)| *k == IndexKind::Unique && i.columns.len() == 1 && i.columns[0] == id)
        {
            "UNI"
        } else if def
            .ordered_indexes
            .iter()
            .any(|i| i.columns.first() == Some(&id))
        {
            "MUL"
        } else {
            ""
        };
        let default = match &metadata.default {
            ColumnDefault::Text(t) => text(t),
            ColumnDefault::CurrentTimestamp => text("CURRENT_TIMESTAMP"),
            _ => SqlValue::Null,
        };
        let mut extra = Vec::new();
        if metadata.auto_increment {
            extra.push("auto_increment");
        }
        if matches!(metadata.default, ColumnDefault::CurrentTimestamp) {
            extra.push("DEFAULT_GENERATED");
        }
        if metadata.on_update_current_timestamp {
            extra.push("on update CURRENT_TIMESTAMP");
        }
        let collation = column.column_type.collation();
        let type_name = if metadata.boolean {
            "tinyint(1)".to_string()
        } else if metadata.unsigned {
            format!("{} unsigned", crate::ddl::type_text(&column.column_type))
        } else {
            crate::ddl::type_text(&column.column_type)
        };
        let mut row = vec![text(&column.name), text(type_name)];
        if full {
            row.push(if collation == schema::Collation::Binary {
                SqlValue::Null
            } else {
                text(collation.name())
            });
        }
        row.push(text(if column.nullable { "YES" } else { "NO" }));
        row.push(text(key));
        row.push(default);
        row.push(text(extra.join(" ")));
        if full {
            row.push(text("select,insert,update,references"));
            row.push(text(&metadata.comment));
        }
        rows.push(row);
    }
    let names: Vec<&str> = if full {
        vec![
            "Field",
            "Type",
            "Collation",
            "Null",
            "Key",
            "Default",
            "Extra",
            "Privileges",
            "Comment",
        ]
    } else {
        vec!["Field", "Type", "Null", "Key", "Default", "Extra"]
    };
    let rows = filter_rows(session, filter, &names, rows)?;
    let _ = catalog::PRIMARY_INDEX_NAME;
    Ok(Outcome::Rows(text_result(&names, rows)))
}

/// SHOW INDEX.
pub fn index_rows(
    session: &mut Session,
    name: &ast::ObjectName,
    filter: Option<&ast::Expr>,
) -> StatementResult {
    let table = session.table_by_object_name(name)?;
    let def = table.def();
    let mut rows = Vec::new();
    for (index, kind) in def.ordered_indexes.iter().zip(&table.metadata.indexes) {
        // A hidden primary key is not shown, nor its index.
        if *kind == IndexKind::Primary && table.hidden_primary_key().is_some() {
            continue;
        }
        let non_unique = if matches!(kind, IndexKind::Primary | IndexKind::Unique) {
            0
        } else {
            1
        };
        for (sequence, &column) in index.columns.iter().enumerate() {
            let column_def = &def.columns[column as usize];
            rows.push(vec![
                text(&table.name),
                SqlValue::Int(non_unique),
                text(&index.name),
                SqlValue::Int(sequence as i64 + 1),
                text(&column_def.name),
                text("A"),
                SqlValue::Int(0),
                SqlValue::Null,
                SqlValue::Null,
                text(if column_def.nullable { "YES" } else { "" }),
                text("BTREE"),
                text(""),
                text(""),
                text("YES"),
                SqlValue::Null,
            ]);
        }
    }
    let names = [
        "Table",
        "Non_unique",
        "Key_name",
        "Seq_in_index",
        "Column_name",
        "Collation",
        "Cardinality",
        "Sub_part",
        "Packed",
        "Null",
        "Index_type",
        "Comment",
        "Index_comment",
        "Visible",
        "Expression",
    ];
    let rows = match filter {
        Some(condition) => where_rows(session, condition, &names, rows)?,
        None => rows,
    };
    let mut result = text_result(&names, rows);
    for i in [1, 3, 6] {
        result.types[i] = integer_type();
        result.columns[i] = expression_column(names[i], &result.types[i]);
    }
    Ok(Outcome::Rows(result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_as_mysql() {
        assert!(like("sql_mode", "sql%"));
        assert!(like("SQL_MODE", "sql\\_mode"));
        assert!(!like("sqlxmode", "sql\\_mode"));
        assert!(like("abc", "a_c"));
        assert!(!like("abcd", "a_c"));
        assert!(like("", "%"));
    }
}
