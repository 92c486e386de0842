//! INSERT (IGNORE, ON DUPLICATE KEY UPDATE, ... SELECT), REPLACE, UPDATE
//! and DELETE on one table, batched into as few round trips as the
//! statement allows, with MySQL's affected-rows counts and warnings.

use std::sync::Arc;

use schema::{ColumnId, Value};
use shoal_client::{LockMode, OperationId, Transaction};
use sqlparser::ast::{self, Expr};

use crate::catalog::{ColumnDefault, SqlTable};
use crate::convert;
use crate::error::SqlError;
use crate::expression::{self, Environment, Expression, WarningLevel};
use crate::outcome::Outcome;
use crate::plan::{self, ConstantScope, StoredRow, TableScope};
use crate::session::{Session, StatementResult};
use crate::value::SqlValue;

/// Rows sent to the cluster per round trip of a multi-row write; a frame
/// carries at most `protocol::FRAME_PAYLOAD_BYTES_MAX`, so big rows make
/// smaller batches (see `BATCH_BYTES_MAX`).
pub const ROWS_PER_BATCH: usize = 256;
/// Estimated bytes of operations per round trip.
pub const BATCH_BYTES_MAX: usize = 512 * 1024;

fn table_of(session: &mut Session, object: &ast::TableObject) -> Result<Arc<SqlTable>, SqlError> {
    match object {
        ast::TableObject::TableName(name) => session.table_by_object_name(name),
        _ => Err(SqlError::unsupported("INSERT into a table function")),
    }
}

/// The positions of the named columns (all columns when none are named).
fn target_columns(table: &SqlTable, columns: &[ast::ObjectName]) -> Result<Vec<usize>, SqlError> {
    if columns.is_empty() {
        return Ok((0..table.visible_columns).collect());
    }
    let mut positions = Vec::with_capacity(columns.len());
    for column in columns {
        // A plain name is looked up without a copy.
        let written;
        let name = match column.0.last().and_then(|p| p.as_ident()) {
            Some(ident) => ident.value.as_str(),
            None => {
                written = column.to_string();
                written.as_str()
            }
        };
        let position = table.column_position(name).ok_or_else(|| {
            SqlError::new(1054, format!("Unknown column '{name}' in 'field list'"))
        })?;
        if positions.contains(&position) {
            return Err(SqlError::new(
                1110,
                format!("Column '{name}' specified twice"),
            ));
        }
        positions.push(position);
    }
    Ok(positions)
}

fn is_default_keyword(expr: &Expr) -> bool {
    matches!(expr, Expr::Identifier(ident) if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("DEFAULT"))
}

/// Evaluates a value an INSERT or UPDATE writes. In strict mode with
/// ERROR_FOR_DIVISION_BY_ZERO a division by zero is error 1365 here (a
/// SELECT only warns).
fn evaluate_for_write(
    session: &mut Session,
    expression: &Expression,
    row: &[SqlValue],
) -> Result<SqlValue, SqlError> {
    let before = session.warnings.len();
    let value = expression::evaluate(expression, row, session)?;
    if session.warnings[before..].iter().any(|w| w.code == 1365)
        && session.is_strict()
        && session.sql_mode_has("ERROR_FOR_DIVISION_BY_ZERO")
    {
        session.warnings.truncate(before);
        return Err(SqlError::new(1365, "Division by 0"));
    }
    Ok(value)
}

/// The value of a column an INSERT does not give (or gives `DEFAULT`).
fn default_value(
    session: &mut Session,
    table: &SqlTable,
    position: usize,
    row_number: u64,
) -> Result<SqlValue, SqlError> {
    let column = table.column(position);
    match &table.metadata.columns[position].default {
        ColumnDefault::Text(text) => Ok(SqlValue::String(text.clone().into_bytes())),
        ColumnDefault::Null => Ok(SqlValue::Null),
        ColumnDefault::CurrentTimestamp => Ok(SqlValue::Datetime(session.now())),
        ColumnDefault::None if column.nullable => Ok(SqlValue::Null),
        ColumnDefault::None if table.metadata.columns[position].auto_increment => {
            Ok(SqlValue::Null)
        }
        ColumnDefault::None => {
            let message = format!("Field '{}' doesn't have a default value", column.name);
            if session.is_strict() && !session.ignore_errors {
                return Err(SqlError::new(1364, message));
            }
            session.warn(WarningLevel::Warning, 1364, message);
            let _ = row_number;
            Ok(convert::default_for_type(&column.column_type))
        }
    }
}

/// Converts `value` for column `position`, warnings into the session.
fn store(
    session: &mut Session,
    table: &SqlTable,
    position: usize,
    value: &SqlValue,
    row_number: u64,
) -> Result<Value, SqlError> {
    // IGNORE turns conversion errors into warnings, as non-strict mode.
    let strict = session.is_strict() && !session.ignore_errors;
    let column = table.column(position);
    if matches!(value, SqlValue::Null) && !column.nullable && session.ignore_errors {
        session.warn(
            WarningLevel::Warning,
            1048,
            format!("Column '{}' cannot be null", column.name),
        );
        return convert::to_stored(
            &convert::default_for_type(&column.column_type),
            column,
            false,
            row_number,
            &mut |_, _| {},
        );
    }
    let mut warnings = Vec::new();
    let result = convert::to_stored(
        value,
        table.column(position),
        strict,
        row_number,
        &mut |code, message| {
            warnings.push((code, message));
        },
    );
    for (code, message) in warnings {
        session.warn(WarningLevel::Warning, code, message);
    }
    let stored = result?;
    // DECIMAL/FLOAT/DOUBLE UNSIGNED: the engine's type has no sign, the
    // SQL metadata does.
    if table.metadata.columns[position].unsigned && is_negative(&stored) {
        let message = format!(
            "Out of range value for column '{}' at row {row_number}",
            column.name
        );
        if strict {
            return Err(SqlError::new(1264, message));
        }
        session.warn(WarningLevel::Warning, 1264, message);
        return convert::to_stored(&SqlValue::Int(0), column, false, row_number, &mut |_, _| {});
    }
    Ok(stored)
}

fn is_negative(value: &Value) -> bool {
    match value {
        Value::Int(v) => *v < 0,
        Value::Float(v) => *v < 0.0,
        Value::Double(v) => *v < 0.0,
        Value::Decimal(text) => {
            text.starts_with('-') && text.bytes().any(|b| (b'1'..=b'9').contains(&b))
        }
        _ => false,
    }
}

/// A full row for an INSERT: given values, defaults, auto-increment.
/// Returns the stored row and the auto-increment value it took, if one
/// was generated.
fn build_row(
    session: &mut Session,
    table: &SqlTable,
    columns: &[usize],
    values: Vec<SqlValue>,
    row_number: u64,
) -> Result<(StoredRow, Option<u64>), SqlError> {
    let width = table.def().columns.len();
    let mut given: Vec<Option<SqlValue>> = vec![None; width];
    for (&position, value) in columns.iter().zip(values) {
        given[position] = Some(value);
    }
    let mut row = Vec::with_capacity(width);
    let mut generated = None;
    for (position, value) in given.into_iter().enumerate() {
        if table.hidden_primary_key() == Some(position) {
            // NDB's hidden key: the next value of the table's counter.
            let next = session
                .native
                .auto_increment(&table.route)
                .map_err(crate::session::cluster_error)?;
            row.push(Value::UInt(next));
            continue;
        }
        let value = match value {
            Some(value) => value,
            None => default_value(session, table, position, row_number)?,
        };
        if table.auto_increment == Some(position) {
            let zero = matches!(value, SqlValue::Int(0) | SqlValue::UInt(0))
                && !session.sql_mode_has("NO_AUTO_VALUE_ON_ZERO");
            if matches!(value, SqlValue::Null) || zero {
                let next = session
                    .native
                    .auto_increment(&table.route)
                    .map_err(crate::session::cluster_error)?;
                generated = Some(next);
                row.push(store(
                    session,
                    table,
                    position,
                    &SqlValue::UInt(next),
                    row_number,
                )?);
                continue;
            }
            let stored = store(session, table, position, &value, row_number)?;
            let used = match &stored {
                Value::Int(v) if *v > 0 => Some(*v as u64),
                Value::UInt(v) if *v > 0 => Some(*v),
                _ => None,
            };
            // Before the row is written, so no session is handed the value
            // meanwhile, and before the next row's generated value, which
            // then follows it. A counter known to be past it costs nothing.
            if let Some(used) = used {
                session
                    .native
                    .raise_auto_increment(&table.route, used)
                    .map_err(crate::session::cluster_error)?;
            }
            row.push(stored);
            continue;
        }
        row.push(store(session, table, position, &value, row_number)?);
    }
    Ok((row, generated))
}

fn pairs(row: &StoredRow) -> Vec<(ColumnId, Value)> {
    row.iter()
        .enumerate()
        .map(|(i, v)| (i as ColumnId, v.clone()))
        .collect()
}

/// MySQL's text of a key in a duplicate-key message: the values joined by '-'.
fn key_text(table: &SqlTable, row: &StoredRow, columns: &[ColumnId]) -> String {
    let mut parts = Vec::with_capacity(columns.len());
    for &column in columns {
        let value = convert::from_stored(
            &row[column as usize],
            &table.column(column as usize).column_type,
        );
        let sql_type = &table.column_types[column as usize];
        let mut text = Vec::new();
        crate::value::write_text(&value, sql_type, &mut text);
        parts.push(String::from_utf8_lossy(&text).into_owned());
    }
    parts.join("-")
}

/// 1062 for `row`, naming the key it collides on (the primary key unless
/// a unique index is named).
fn duplicate_error(table: &SqlTable, row: &StoredRow, ndb_code: u16) -> SqlError {
    let (name, columns): (String, Vec<ColumnId>) = if ndb_code == 893 {
        // A unique index: the first whose key this row has.
        table
            .def()
            .ordered_indexes
            .iter()
            .find(|i| i.unique)
            .map(|i| (i.name.clone(), i.columns.clone()))
            .unwrap_or_else(|| ("PRIMARY".into(), table.def().primary_key.clone()))
    } else {
        ("PRIMARY".into(), table.def().primary_key.clone())
    };
    SqlError::new(
        1062,
        format!(
            "Duplicate entry '{}' for key '{}.{}'",
            key_text(table, row, &columns),
            table.name,
            name
        ),
    )
}

/// The value an INSERT gives column `position`: `DEFAULT`, or an
/// expression (in which `DEFAULT(c)` is column c's default).
fn insert_value(
    session: &mut Session,
    scope: &ConstantScope,
    table: &SqlTable,
    position: usize,
    expr: &Expr,
    row_number: u64,
) -> Result<SqlValue, SqlError> {
    if is_default_keyword(expr) {
        return default_value(session, table, position, row_number);
    }
    let compiled = if has_default_call(expr) {
        let expr = replace_default_calls(session, table, expr, row_number)?;
        expression::compile(&expr, scope)?
    } else {
        // Most values: compiled as written, without a copy of the tree.
        expression::compile(expr, scope)?
    };
    // A literal, the usual value, is moved out rather than evaluated into
    // a copy (evaluating one gives no warning).
    match compiled.into_literal() {
        Ok(value) => Ok(value),
        Err(compiled) => evaluate_for_write(session, &compiled, &[]),
    }
}

/// Whether `expr` holds a `DEFAULT(column)` that `replace_default_calls`
/// would replace (it looks where that function does).
fn has_default_call(expr: &Expr) -> bool {
    match expr {
        Expr::Function(function) => {
            function.name.to_string().eq_ignore_ascii_case("DEFAULT")
                || match &function.args {
                    ast::FunctionArguments::List(list) => list.args.iter().any(|argument| {
                        matches!(argument,
                            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))
                                if has_default_call(e))
                    }),
                    _ => false,
                }
        }
        Expr::BinaryOp { left, right, .. } => has_default_call(left) || has_default_call(right),
        Expr::Nested(inner) => has_default_call(inner),
        _ => false,
    }
}

/// `expr` with every `DEFAULT(column)` replaced by the column's default.
fn replace_default_calls(
    session: &mut Session,
    table: &SqlTable,
    expr: &Expr,
    row_number: u64,
) -> Result<Expr, SqlError> {
    Ok(match expr {
        Expr::Function(function) if function.name.to_string().eq_ignore_ascii_case("DEFAULT") => {
            let column = match &function.args {
                ast::FunctionArguments::List(list) => match list.args.as_slice() {
                    [
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(Expr::Identifier(c))),
                    ] => c.value.clone(),
                    _ => return Err(SqlError::syntax("DEFAULT() takes one column")),
                },
                _ => return Err(SqlError::syntax("DEFAULT() takes one column")),
            };
            let position = table.column_position(&column).ok_or_else(|| {
                SqlError::new(1054, format!("Unknown column '{column}' in 'field list'"))
            })?;
            let value = default_value(session, table, position, row_number)?;
            let literal = match value {
                SqlValue::Null => ast::Value::Null,
                other => {
                    let mut text = Vec::new();
                    crate::value::write_text(&other, &table.column_types[position], &mut text);
                    ast::Value::SingleQuotedString(String::from_utf8_lossy(&text).into_owned())
                }
            };
            Expr::Value(literal.into())
        }
        Expr::Function(function) => {
            let mut function = function.clone();
            if let ast::FunctionArguments::List(list) = &mut function.args {
                for argument in &mut list.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = argument {
                        *e = replace_default_calls(session, table, e, row_number)?;
                    }
                }
            }
            Expr::Function(function)
        }
        Expr::BinaryOp { left, op, right } => Expr::BinaryOp {
            left: Box::new(replace_default_calls(session, table, left, row_number)?),
            op: op.clone(),
            right: Box::new(replace_default_calls(session, table, right, row_number)?),
        },
        Expr::Nested(inner) => Expr::Nested(Box::new(replace_default_calls(
            session, table, inner, row_number,
        )?)),
        other => other.clone(),
    })
}

/// The rows an INSERT writes, as SQL values in `columns` order.
fn source_rows(
    session: &mut Session,
    insert: &ast::Insert,
    table: &SqlTable,
    columns: &[usize],
) -> Result<Vec<Vec<SqlValue>>, SqlError> {
    if !insert.assignments.is_empty() {
        // INSERT ... SET a = 1, b = 2: one row of the assigned columns.
        let scope = ConstantScope::of(session);
        let mut out = Vec::with_capacity(insert.assignments.len());
        for (assignment, &position) in insert.assignments.iter().zip(columns) {
            out.push(insert_value(
                session,
                &scope,
                table,
                position,
                &assignment.value,
                1,
            )?);
        }
        return Ok(vec![out]);
    }
    let Some(source) = &insert.source else {
        return Err(SqlError::syntax("INSERT needs VALUES or SELECT"));
    };
    match source.body.as_ref() {
        ast::SetExpr::Values(values) => {
            let scope = ConstantScope::of(session);
            let mut rows = Vec::with_capacity(values.rows.len());
            for (i, row) in values.rows.iter().enumerate() {
                let row_number = i as u64 + 1;
                if row.content.len() != columns.len() {
                    return Err(SqlError::new(
                        1136,
                        format!("Column count doesn't match value count at row {row_number}"),
                    ));
                }
                let mut out = Vec::with_capacity(row.content.len());
                for (expr, &position) in row.content.iter().zip(columns) {
                    out.push(insert_value(
                        session, &scope, table, position, expr, row_number,
                    )?);
                }
                rows.push(out);
            }
            Ok(rows)
        }
        _ => match crate::select::run(session, source, false)? {
            Outcome::Rows(result) => {
                if result.columns.len() != columns.len() {
                    return Err(SqlError::new(
                        1136,
                        "Column count doesn't match value count at row 1",
                    ));
                }
                Ok(result.rows)
            }
            Outcome::Done { .. } => Ok(Vec::new()),
        },
    }
}

/// INSERT and REPLACE.
pub fn insert(session: &mut Session, insert: &ast::Insert) -> StatementResult {
    let table = table_of(session, &insert.table)?;
    let columns = if insert.assignments.is_empty() {
        target_columns(&table, &insert.columns)?
    } else {
        let names: Vec<ast::ObjectName> = insert
            .assignments
            .iter()
            .map(|a| match &a.target {
                ast::AssignmentTarget::ColumnName(name) => Ok(name.clone()),
                ast::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported("tuple assignments")),
            })
            .collect::<Result<_, _>>()?;
        target_columns(&table, &names)?
    };
    let rows = source_rows(session, insert, &table, &columns)?;
    let on_duplicate = match &insert.on {
        Some(ast::OnInsert::DuplicateKeyUpdate(assignments)) => Some(assignments.as_slice()),
        Some(_) => return Err(SqlError::unsupported("ON CONFLICT")),
        None => None,
    };
    if table.auto_increment.is_some() || table.hidden_primary_key().is_some() {
        // NDB takes `ndb_autoincrement_prefetch_sz` values per fetch, and
        // at least 32 within a statement of several rows.
        let mut prefetch = session
            .session_int("ndb_autoincrement_prefetch_sz")
            .clamp(1, i64::from(shoal_client::AUTO_INCREMENT_PREFETCH_MAX));
        if rows.len() > 1 {
            prefetch = prefetch.max(32);
        }
        session
            .native
            .set_auto_increment_prefetch(prefetch as u32)
            .map_err(crate::session::cluster_error)?;
    }
    let mut built = Vec::with_capacity(rows.len());
    let mut first_generated = None;
    // Without a generated value the OK packet carries the explicit
    // AUTO_INCREMENT value given (mysql_insert_id()), LAST_INSERT_ID()
    // stays.
    let mut explicit_auto = None;
    for (i, values) in rows.into_iter().enumerate() {
        let (row, generated) = build_row(session, &table, &columns, values, i as u64 + 1)?;
        if first_generated.is_none() {
            first_generated = generated;
        }
        if generated.is_none()
            && let Some(position) = table.auto_increment
        {
            explicit_auto = match &row[position] {
                schema::Value::Int(v) if *v > 0 => Some(*v as u64),
                schema::Value::UInt(v) if *v > 0 => Some(*v),
                _ => explicit_auto,
            };
        }
        built.push(row);
    }
    let affected = if insert.replace_into {
        replace_rows(session, &table, &built)?
    } else if let Some(assignments) = on_duplicate {
        upsert_rows(session, &table, &built, assignments)?
    } else {
        insert_rows(session, &table, &built, insert.ignore)?
    };
    if let Some(id) = first_generated {
        session.statement_insert_id = Some(id);
    }
    let info = if built.len() > 1
        || insert
            .source
            .as_ref()
            .is_some_and(|s| !matches!(*s.body, ast::SetExpr::Values(_)))
    {
        format!(
            "Records: {}  Duplicates: {}  Warnings: {}",
            built.len(),
            (built.len() as u64).saturating_sub(affected.min(built.len() as u64)),
            session.warning_count()
        )
    } else {
        String::new()
    };
    Ok(Outcome::Done {
        affected_rows: affected,
        last_insert_id: first_generated.or(explicit_auto).unwrap_or(0),
        info,
    })
}

/// Splits rows into batches by count and estimated size.
fn batches(rows: &[StoredRow]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, row) in rows.iter().enumerate() {
        let size = 64 + row.iter().map(value_size).sum::<usize>();
        if i > start && (i - start >= ROWS_PER_BATCH || bytes + size > BATCH_BYTES_MAX) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < rows.len() {
        out.push(start..rows.len());
    }
    out
}

fn value_size(value: &Value) -> usize {
    match value {
        Value::Bytes(b) => b.len() + 2,
        Value::Decimal(d) => d.len() + 2,
        _ => 8,
    }
}

fn hint_transaction(
    session: &mut Session,
    table: &SqlTable,
    first: Option<&StoredRow>,
) -> Result<Transaction, SqlError> {
    let key = first.map(|row| plan::primary_key_of(table, row));
    session.take_transaction(key.as_ref().map(|key| shoal_client::Hint {
        table: &table.route,
        key,
        committed_read: false,
    }))
}

/// Most rows `transaction_allow_batching` keeps unsent in a transaction:
/// beyond them an INSERT is sent at once (with what was kept), so the
/// batch stays within one execute's limits.
const DEFERRED_WRITES_MAX: usize = 256;

fn insert_rows(
    session: &mut Session,
    table: &SqlTable,
    rows: &[StoredRow],
    ignore: bool,
) -> Result<u64, SqlError> {
    let mut transaction = hint_transaction(session, table, rows.first())?;
    let ranges = batches(rows);
    let mut inserted = 0u64;
    if ranges.is_empty() {
        session.finish_statement(transaction)?;
        return Ok(0);
    }
    // NDB's transaction_allow_batching (with autocommit off): a plain
    // INSERT is defined in the transaction and sent with the next
    // statement that goes to the cluster, or the COMMIT; its rows count as
    // inserted, and an error (a duplicate key) comes with that later
    // statement, which then rolls the transaction back, as in NDB.
    if !ignore
        && !session.autocommit()
        && session.session_int("transaction_allow_batching") != 0
        && ranges.len() == 1
        && transaction.unsent() + rows.len() <= DEFERRED_WRITES_MAX
    {
        for row in rows {
            transaction
                .insert_row(&table.route, row)
                .map_err(crate::session::cluster_error)?;
        }
        session.keep_transaction(transaction);
        return Ok(rows.len() as u64);
    }
    let count = ranges.len();
    for (batch, range) in ranges.into_iter().enumerate() {
        let mut operations: Vec<(OperationId, usize)> = Vec::with_capacity(range.len());
        for i in range {
            let operation = transaction
                .insert_row(&table.route, &rows[i])
                .map_err(crate::session::cluster_error)?;
            if ignore {
                transaction
                    .ignore_error(operation)
                    .map_err(crate::session::cluster_error)?;
            }
            operations.push((operation, i));
        }
        let last = batch + 1 == count;
        match session.execute_in_place(&mut transaction, last) {
            Ok(()) => {}
            Err(error) if error.code == 1062 => {
                return Err(
                    first_duplicate(&transaction, table, rows, &operations).unwrap_or(error)
                );
            }
            Err(error) => return Err(error),
        }
        for (operation, i) in operations {
            match transaction.result(operation) {
                Ok(()) => inserted += 1,
                Err(e) if ignore && (e.ndb_code == 630 || e.ndb_code == 893) => {
                    let error = duplicate_error(table, &rows[i], e.ndb_code);
                    session.warn(WarningLevel::Warning, 1062, error.message);
                }
                Err(e) => return Err(crate::session::cluster_error(e)),
            }
        }
    }
    session.finish_statement(transaction)?;
    Ok(inserted)
}

/// The duplicate-key error naming the row that collided: the first
/// operation of the failed batch whose result says so.
fn first_duplicate(
    transaction: &Transaction,
    table: &SqlTable,
    rows: &[StoredRow],
    operations: &[(OperationId, usize)],
) -> Option<SqlError> {
    operations
        .iter()
        .find_map(|(operation, i)| match transaction.result(*operation) {
            Err(e) if e.ndb_code == 630 || e.ndb_code == 893 => {
                Some(duplicate_error(table, &rows[*i], e.ndb_code))
            }
            _ => None,
        })
}

/// The rows `row` collides with, each once, locked: the one with its
/// primary key, then those holding one of its unique keys, in index order
/// (NULLs are never duplicates). One round trip.
fn conflicting_rows(
    session: &mut Session,
    transaction: &mut Transaction,
    table: &SqlTable,
    row: &StoredRow,
) -> Result<Vec<StoredRow>, SqlError> {
    let columns: Vec<ColumnId> = (0..table.def().columns.len() as u16).collect();
    let mut reads = Vec::new();
    let key = plan::primary_key_of(table, row);
    reads.push(
        transaction
            .read(&table.route, &key, &columns, LockMode::Exclusive)
            .map_err(crate::session::cluster_error)?,
    );
    for index in table.def().ordered_indexes.iter().filter(|i| i.unique) {
        let key: Vec<(ColumnId, Value)> = index
            .columns
            .iter()
            .map(|&c| (c, row[c as usize].clone()))
            .collect();
        if key.iter().any(|(_, v)| matches!(v, Value::Null)) {
            continue;
        }
        reads.push(
            transaction
                .read_unique(
                    &table.route,
                    &index.name,
                    &key,
                    &columns,
                    LockMode::Exclusive,
                )
                .map_err(crate::session::cluster_error)?,
        );
    }
    for read in &reads {
        transaction
            .ignore_error(*read)
            .map_err(crate::session::cluster_error)?;
    }
    session.execute_in_place(transaction, false)?;
    let mut found: Vec<StoredRow> = Vec::new();
    for read in reads {
        match transaction.row(read) {
            Ok(existing) => {
                let mut old = vec![Value::Null; table.def().columns.len()];
                for (column, value) in existing.values {
                    old[column as usize] = value;
                }
                let old_key = plan::primary_key_of(table, &old);
                if !found
                    .iter()
                    .any(|f| plan::primary_key_of(table, f) == old_key)
                {
                    found.push(old);
                }
            }
            Err(e) if e.ndb_code == 626 => {}
            Err(e) => return Err(crate::session::cluster_error(e)),
        }
    }
    Ok(found)
}

/// REPLACE: every row a new row collides with (by primary or unique key)
/// is deleted and the new row written; affected rows count 1 for the new
/// row and 1 for each row it replaced, as MySQL counts them.
fn replace_rows(
    session: &mut Session,
    table: &SqlTable,
    rows: &[StoredRow],
) -> Result<u64, SqlError> {
    let mut transaction = hint_transaction(session, table, rows.first())?;
    let mut affected = 0;
    for (i, row) in rows.iter().enumerate() {
        let conflicts = conflicting_rows(session, &mut transaction, table, row)?;
        let key = plan::primary_key_of(table, row);
        let mut deleted = false;
        for old in &conflicts {
            let old_key = plan::primary_key_of(table, old);
            if old_key != key {
                transaction
                    .delete(&table.route, &old_key)
                    .map_err(crate::session::cluster_error)?;
                deleted = true;
            }
        }
        if deleted {
            // The row deleted holds a unique key the new one takes: its
            // index row must be gone before the new one's goes in, and the
            // operations of one batch on different rows run side by side
            // (as in NDB).
            session.execute_in_place(&mut transaction, false)?;
        }
        transaction
            .write(&table.route, &pairs(row))
            .map_err(crate::session::cluster_error)?;
        affected += 1 + conflicts.len() as u64;
        transaction = session.execute_batch(transaction, i + 1 == rows.len())?;
    }
    session.finish_statement(transaction)?;
    Ok(affected)
}

/// INSERT ... ON DUPLICATE KEY UPDATE: a row that collides with an
/// existing one (by primary key, then unique keys) updates that row by the
/// assignments (2 affected rows when that changes it, 0 when not); the
/// others are inserted (1).
fn upsert_rows(
    session: &mut Session,
    table: &Arc<SqlTable>,
    rows: &[StoredRow],
    assignments: &[ast::Assignment],
) -> Result<u64, SqlError> {
    let compiled = compile_assignments(table, assignments, true)?;
    let mut transaction = hint_transaction(session, table, rows.first())?;
    let mut affected = 0;
    for (i, row) in rows.iter().enumerate() {
        let conflicts = conflicting_rows(session, &mut transaction, table, row)?;
        match conflicts.into_iter().next() {
            Some(old) => {
                // VALUES(c) and the new row's columns come after the old
                // row's in the row the assignments see.
                let mut sql_row = Vec::new();
                plan::sql_row(table, &old, &mut sql_row);
                let mut new_values = Vec::new();
                plan::sql_row(table, row, &mut new_values);
                sql_row.extend(new_values);
                let (new, changed) =
                    apply_assignments(session, table, &old, &mut sql_row, &compiled, i as u64 + 1)?;
                if changed {
                    write_changed(session, &mut transaction, table, &old, &new)?;
                    affected += 2;
                } else if session.client_found_rows {
                    affected += 1;
                }
            }
            None => {
                transaction
                    .insert(&table.route, &pairs(row))
                    .map_err(crate::session::cluster_error)?;
                affected += 1;
            }
        }
    }
    session.finish_statement(transaction)?;
    Ok(affected)
}

/// Assignments compiled against the table (and, for ON DUPLICATE KEY
/// UPDATE, `VALUES(c)` against the new row after it).
struct Assignments {
    targets: Vec<usize>,
    values: Vec<Expression>,
}

/// A scope for ON DUPLICATE KEY UPDATE: columns are the old row's;
/// `VALUES(c)` (rewritten to `__new.c`) the new row's, after them.
struct UpsertScope<'a> {
    base: TableScope<'a>,
}

impl expression::Scope for UpsertScope<'_> {
    fn column(
        &self,
        qualifier: Option<&str>,
        name: &str,
    ) -> Result<(usize, crate::value::SqlType), SqlError> {
        if qualifier == Some(NEW_ROW_QUALIFIER) {
            let (position, sql_type) = self.base.column(None, name)?;
            return Ok((position + self.base.table.def().columns.len(), sql_type));
        }
        self.base.column(qualifier, name)
    }

    fn aggregate(&self, _call: &ast::Function) -> Option<(usize, crate::value::SqlType)> {
        None
    }

    fn database(&self) -> Option<String> {
        self.base.database()
    }
}

/// The qualifier `VALUES(c)` is rewritten to.
const NEW_ROW_QUALIFIER: &str = "__new_row";

/// Rewrites `VALUES(c)` into a reference to the new row's `c`.
fn rewrite_values_function(expr: &Expr) -> Expr {
    match expr {
        Expr::Function(function) if function.name.to_string().eq_ignore_ascii_case("VALUES") => {
            if let ast::FunctionArguments::List(list) = &function.args
                && let [
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(Expr::Identifier(column))),
                ] = list.args.as_slice()
            {
                return Expr::CompoundIdentifier(vec![
                    ast::Ident::new(NEW_ROW_QUALIFIER),
                    column.clone(),
                ]);
            }
            expr.clone()
        }
        Expr::BinaryOp { left, op, right } => Expr::BinaryOp {
            left: Box::new(rewrite_values_function(left)),
            op: op.clone(),
            right: Box::new(rewrite_values_function(right)),
        },
        Expr::Nested(inner) => Expr::Nested(Box::new(rewrite_values_function(inner))),
        Expr::UnaryOp { op, expr } => Expr::UnaryOp {
            op: *op,
            expr: Box::new(rewrite_values_function(expr)),
        },
        other => other.clone(),
    }
}

fn compile_assignments(
    table: &SqlTable,
    assignments: &[ast::Assignment],
    upsert: bool,
) -> Result<Assignments, SqlError> {
    let mut targets = Vec::with_capacity(assignments.len());
    let mut values = Vec::with_capacity(assignments.len());
    let base = TableScope::new(table, None, "field list");
    let upsert_scope = UpsertScope {
        base: TableScope::new(table, None, "field list"),
    };
    for assignment in assignments {
        let ast::AssignmentTarget::ColumnName(name) = &assignment.target else {
            return Err(SqlError::unsupported("tuple assignments"));
        };
        let column = name
            .0
            .last()
            .and_then(|p| p.as_ident().map(|i| i.value.clone()))
            .unwrap_or_else(|| name.to_string());
        let position = table.column_position(&column).ok_or_else(|| {
            SqlError::new(1054, format!("Unknown column '{column}' in 'field list'"))
        })?;
        targets.push(position);
        let value = if is_default_keyword(&assignment.value) {
            // Compiled as NULL; `apply_assignments` puts the default in.
            expression::compile(&Expr::Value(ast::Value::Null.into()), &base)?
        } else if upsert {
            expression::compile(&rewrite_values_function(&assignment.value), &upsert_scope)?
        } else {
            expression::compile(&assignment.value, &base)?
        };
        values.push(value);
    }
    Ok(Assignments { targets, values })
}

/// Applies assignments to one row, left to right (each sees the earlier
/// ones' results, as MySQL's single-table UPDATE). Returns the new stored
/// row and whether it differs from `old`.
fn apply_assignments(
    session: &mut Session,
    table: &SqlTable,
    old: &StoredRow,
    sql_row: &mut [SqlValue],
    assignments: &Assignments,
    row_number: u64,
) -> Result<(StoredRow, bool), SqlError> {
    let mut new = old.clone();
    let mut assigned = vec![false; new.len()];
    for (&position, expression) in assignments.targets.iter().zip(&assignments.values) {
        let value = evaluate_for_write(session, expression, sql_row)?;
        let stored = store(session, table, position, &value, row_number)?;
        sql_row[position] = convert::from_stored(&stored, &table.column(position).column_type);
        new[position] = stored;
        assigned[position] = true;
    }
    let changed = new != *old;
    if changed {
        // ON UPDATE CURRENT_TIMESTAMP columns not assigned take the time.
        for (position, metadata) in table.metadata.columns.iter().enumerate() {
            if metadata.on_update_current_timestamp && !assigned[position] {
                let now = SqlValue::Datetime(session.now());
                new[position] = store(session, table, position, &now, row_number)?;
            }
        }
    }
    Ok((new, changed))
}

/// Defines the write that turns `old` into `new`: an update of the
/// changed columns, or a delete and insert when the primary key changed
/// (the delete executed first when the table has a unique index).
fn write_changed(
    session: &mut Session,
    transaction: &mut Transaction,
    table: &SqlTable,
    old: &StoredRow,
    new: &StoredRow,
) -> Result<(), SqlError> {
    let key_changed = table
        .def()
        .primary_key
        .iter()
        .any(|&c| old[c as usize] != new[c as usize]);
    if key_changed {
        transaction
            .delete(&table.route, &plan::primary_key_of(table, old))
            .map_err(crate::session::cluster_error)?;
        if !table.route.unique_indexes.is_empty() {
            // The new row may keep a unique key of the old one: the old
            // row's index row must be gone before the new one's goes in,
            // and operations on different rows of one batch run side by
            // side (as in NDB).
            session.execute_in_place(transaction, false)?;
        }
        transaction
            .insert(&table.route, &pairs(new))
            .map_err(crate::session::cluster_error)?;
        return Ok(());
    }
    let changed: Vec<(ColumnId, Value)> = new
        .iter()
        .enumerate()
        .filter(|(i, v)| old[*i] != **v)
        .map(|(i, v)| (i as ColumnId, v.clone()))
        .collect();
    transaction
        .update(&table.route, &plan::primary_key_of(table, old), &changed)
        .map_err(crate::session::cluster_error)?;
    Ok(())
}

fn single_table(
    session: &mut Session,
    from: &ast::TableWithJoins,
) -> Result<(Arc<SqlTable>, Option<String>), SqlError> {
    if !from.joins.is_empty() {
        return Err(SqlError::unsupported("multi-table UPDATE and DELETE"));
    }
    match &from.relation {
        ast::TableFactor::Table { name, alias, .. } => Ok((
            session.table_by_object_name(name)?,
            alias.as_ref().map(|a| a.name.value.clone()),
        )),
        _ => Err(SqlError::unsupported("UPDATE or DELETE of a derived table")),
    }
}

/// UPDATE.
pub fn update(session: &mut Session, update: &ast::Update) -> StatementResult {
    if update.from.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM"));
    }
    let (table, alias) = single_table(session, &update.table)?;
    let assignments = compile_assignments(&table, &update.assignments, false)?;
    let defaults: Vec<bool> = update
        .assignments
        .iter()
        .map(|a| is_default_keyword(&a.value))
        .collect();
    // Constants into columns of the row one primary key names: the read
    // goes with the write, in one round trip.
    let constants = update
        .assignments
        .iter()
        .all(|a| plan::is_literal(&a.value));
    let distinct = assignments
        .targets
        .iter()
        .enumerate()
        .all(|(i, t)| !assignments.targets[..i].contains(t));
    let key_untouched = assignments
        .targets
        .iter()
        .all(|&t| !table.def().primary_key.contains(&(t as ColumnId)));
    let stamped = table
        .metadata
        .columns
        .iter()
        .any(|c| c.on_update_current_timestamp);
    if constants
        && distinct
        && key_untouched
        && !stamped
        && update.order_by.is_empty()
        && update.limit.is_none()
        && !session.ignore_errors
        && let Some(key) =
            plan::exact_primary_key(session, &table, alias.as_deref(), update.selection.as_ref())?
        && let Some(outcome) = update_by_key(session, &table, key, &assignments)?
    {
        return Ok(outcome);
    }
    let (rows, mut transaction) = crate::select::rows_to_change(
        session,
        &table,
        alias.as_deref(),
        update.selection.as_ref(),
        &update.order_by,
        update.limit.as_ref(),
    )?;
    let matched = rows.len() as u64;
    let mut changed = 0u64;
    let mut sql_row = Vec::new();
    let mut pending = 0;
    for (i, old) in rows.iter().enumerate() {
        plan::sql_row(&table, old, &mut sql_row);
        // DEFAULT in SET: the column's default, not NULL.
        for (j, is_default) in defaults.iter().enumerate() {
            if *is_default {
                let position = assignments.targets[j];
                let _ = default_value(session, &table, position, i as u64 + 1)?;
            }
        }
        let (new, row_changed) = apply_assignments(
            session,
            &table,
            old,
            &mut sql_row,
            &assignments,
            i as u64 + 1,
        )?;
        if row_changed && session.ignore_errors {
            // UPDATE IGNORE skips a row whose new primary key is taken.
            let new_key = plan::primary_key_of(&table, &new);
            if new_key != plan::primary_key_of(&table, old) {
                let key_columns = table.def().primary_key.clone();
                let read = transaction
                    .read(&table.route, &new_key, &key_columns, LockMode::Exclusive)
                    .map_err(crate::session::cluster_error)?;
                transaction
                    .ignore_error(read)
                    .map_err(crate::session::cluster_error)?;
                session.execute_in_place(&mut transaction, false)?;
                pending = 0;
                if transaction.result(read).is_ok() {
                    let error = duplicate_error(&table, &new, 630);
                    session.warn(WarningLevel::Warning, 1062, error.message);
                    continue;
                }
            }
        }
        if row_changed {
            write_changed(session, &mut transaction, &table, old, &new)?;
            changed += 1;
            pending += 1;
            if pending >= ROWS_PER_BATCH {
                transaction = session.execute_batch(transaction, false)?;
                pending = 0;
            }
        }
    }
    if pending > 0 {
        transaction = session.execute_batch(transaction, true)?;
    }
    session.finish_statement(transaction)?;
    let affected = if session.client_found_rows {
        matched
    } else {
        changed
    };
    Ok(Outcome::Done {
        affected_rows: affected,
        last_insert_id: 0,
        info: format!(
            "Rows matched: {matched}  Changed: {changed}  Warnings: {}",
            session.warning_count()
        ),
    })
}

/// The outcome of an operation whose error was ignored: whether it found
/// its row (626, no such row, is the only error that is an answer).
fn found_row(outcome: Result<(), shoal_client::ClientError>) -> Result<bool, SqlError> {
    match outcome {
        Ok(()) => Ok(true),
        Err(e) if e.ndb_code == NO_SUCH_ROW => Ok(false),
        Err(e) => Err(crate::session::cluster_error(e)),
    }
}

/// NDB's error 626: the row of the key does not exist.
const NO_SUCH_ROW: u16 = 626;

/// UPDATE of the row `key` names with constants (NDB's read before write
/// removal, with MySQL's counts kept): the exclusive read of the assigned
/// columns and the update go in one batch, the read answering with the
/// row as it was, so "Changed" compares old and new as MySQL does. `None`
/// when a value does not convert cleanly: a warning or an error is only
/// MySQL's when a row matches, which the ordinary path finds out first.
fn update_by_key(
    session: &mut Session,
    table: &SqlTable,
    key: Vec<(ColumnId, Value)>,
    assignments: &Assignments,
) -> Result<Option<Outcome>, SqlError> {
    let warnings = session.warnings.len();
    let mut values = Vec::with_capacity(assignments.targets.len());
    for (&position, expression) in assignments.targets.iter().zip(&assignments.values) {
        let stored = evaluate_for_write(session, expression, &[])
            .and_then(|value| store(session, table, position, &value, 1));
        match stored {
            Ok(stored) if session.warnings.len() == warnings => {
                values.push((position as ColumnId, stored));
            }
            _ => {
                session.warnings.truncate(warnings);
                return Ok(None);
            }
        }
    }
    let columns: Vec<ColumnId> = values.iter().map(|(column, _)| *column).collect();
    let mut transaction = session.take_transaction(Some(shoal_client::Hint {
        table: &table.route,
        key: &key,
        committed_read: false,
    }))?;
    let read = transaction
        .read(&table.route, &key, &columns, LockMode::Exclusive)
        .map_err(crate::session::cluster_error)?;
    transaction
        .ignore_error(read)
        .map_err(crate::session::cluster_error)?;
    let write = transaction
        .update(&table.route, &key, &values)
        .map_err(crate::session::cluster_error)?;
    transaction
        .ignore_error(write)
        .map_err(crate::session::cluster_error)?;
    let transaction = session.execute_batch(transaction, true)?;
    let old = transaction.row(read);
    let written = transaction.result(write);
    session.finish_statement(transaction)?;
    let old = match old {
        Ok(row) => Some(row),
        Err(e) if e.ndb_code == NO_SUCH_ROW => None,
        Err(e) => return Err(crate::session::cluster_error(e)),
    };
    let wrote = found_row(written)?;
    if old.is_some() != wrote {
        // One key, one batch, the row locked by the read: a data node
        // that answers otherwise is wrong, and the answer is not trusted.
        return Err(SqlError::new(
            1105,
            "the read and the update of one key in one batch disagree on whether the row exists",
        ));
    }
    let matched = u64::from(wrote);
    let changed = u64::from(old.is_some_and(|row| {
        values.iter().any(|(column, value)| {
            row.values
                .iter()
                .find(|(c, _)| c == column)
                .is_none_or(|(_, old)| old != value)
        })
    }));
    let affected = if session.client_found_rows {
        matched
    } else {
        changed
    };
    Ok(Some(Outcome::Done {
        affected_rows: affected,
        last_insert_id: 0,
        info: format!(
            "Rows matched: {matched}  Changed: {changed}  Warnings: {}",
            session.warning_count()
        ),
    }))
}

/// DELETE.
pub fn delete(session: &mut Session, delete: &ast::Delete) -> StatementResult {
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(tables) | ast::FromTable::WithoutKeyword(tables) => tables,
    };
    if !delete.tables.is_empty() || from.len() != 1 || delete.using.is_some() {
        return Err(SqlError::unsupported("multi-table DELETE"));
    }
    let (table, alias) = single_table(session, &from[0])?;
    // The row one primary key names: deleted without a read first (NDB's
    // read before write removal); the delete says whether it was there.
    if delete.order_by.is_empty()
        && delete.limit.is_none()
        && !session.ignore_errors
        && let Some(key) =
            plan::exact_primary_key(session, &table, alias.as_deref(), delete.selection.as_ref())?
    {
        let mut transaction = session.take_transaction(Some(shoal_client::Hint {
            table: &table.route,
            key: &key,
            committed_read: false,
        }))?;
        let operation = transaction
            .delete(&table.route, &key)
            .map_err(crate::session::cluster_error)?;
        transaction
            .ignore_error(operation)
            .map_err(crate::session::cluster_error)?;
        let transaction = session.execute_batch(transaction, true)?;
        let outcome = transaction.result(operation);
        session.finish_statement(transaction)?;
        return Ok(Outcome::done(u64::from(found_row(outcome)?)));
    }
    let (rows, mut transaction) = crate::select::rows_to_change(
        session,
        &table,
        alias.as_deref(),
        delete.selection.as_ref(),
        &delete.order_by,
        delete.limit.as_ref(),
    )?;
    let deleted = rows.len() as u64;
    for (i, row) in rows.iter().enumerate() {
        transaction
            .delete(&table.route, &plan::primary_key_of(&table, row))
            .map_err(crate::session::cluster_error)?;
        let last = i + 1 == rows.len();
        if last || (i + 1) % ROWS_PER_BATCH == 0 {
            transaction = session.execute_batch(transaction, last)?;
        }
    }
    session.finish_statement(transaction)?;
    Ok(Outcome::done(deleted))
}
