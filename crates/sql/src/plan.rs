//! Access paths for one table: how the rows a WHERE clause can match are
//! fetched from the cluster.
//!
//! The planner looks at the WHERE clause's top-level conjuncts of the
//! forms `column = constant`, `column IN (constants)`, `column BETWEEN a
//! AND b` and `column <op> constant`, and picks, in this order:
//! 1. primary-key lookups (every key column fixed; an `IN` list gives one
//!    lookup per key, all in one round trip);
//! 2. unique-index lookups (every column of a unique index fixed);
//! 3. an ordered-index range (the longest prefix of equalities, then a
//!    range on the next column);
//! 4. a table scan, on one partition when the distribution key is fixed.
//!
//! A constant is used as a key only when it converts to the column's type
//! exactly: the lookup must find every row the comparison would match.
//! Whatever path is taken, the whole WHERE clause is evaluated again on
//! every row fetched, so a path only ever has to return a superset.

use std::sync::Arc;

use schema::{Collation, ColumnId, ColumnType, Value};
use shoal_client::{LockMode, ScanOptions, Transaction};
use sqlparser::ast::{self, BinaryOperator, Expr};
use storage::filter::FilterBuilder;

use crate::catalog::SqlTable;
use crate::convert;
use crate::error::SqlError;
use crate::expression::{self, Expression, Scope};
use crate::session::Session;
use crate::value::{SqlType, SqlValue};

/// Most keys one statement looks up by `IN` list before falling back to
/// a scan.
pub const KEY_LOOKUPS_MAX: usize = 4096;
/// Rows a scan batch asks each fragment for.
pub const SCAN_BATCH_ROWS: u32 = 256;

/// The row a statement works on: every column of the table, as stored.
pub type StoredRow = Vec<Value>;

/// How rows are fetched.
#[derive(Debug, Clone)]
pub enum Access {
    /// Read each key (each a full primary key, in key-column order).
    PrimaryKey(Vec<Vec<(ColumnId, Value)>>),
    /// Read by unique index `index` (its name), each key every column of it.
    Unique {
        index: String,
        keys: Vec<Vec<(ColumnId, Value)>>,
    },
    /// A range of ordered index `index` (its position).
    Range {
        index: u16,
        lower: Option<(Vec<(ColumnId, Value)>, bool)>,
        upper: Option<(Vec<(ColumnId, Value)>, bool)>,
        partition_key: Option<Vec<(ColumnId, Value)>>,
        /// The pushed condition (`pushed_filter`), or empty.
        filter: Vec<u8>,
    },
    /// Every row, of one partition when the key is given.
    Scan {
        partition_key: Option<Vec<(ColumnId, Value)>>,
        /// The pushed condition (`pushed_filter`), or empty.
        filter: Vec<u8>,
    },
    /// No row can match (a key constant that no value of the column equals).
    Nothing,
}

/// Resolves column names of one table (and, after grouping, aggregates).
pub struct TableScope<'a> {
    pub table: &'a SqlTable,
    /// The alias in FROM, if any: then only it qualifies columns.
    pub alias: Option<String>,
    /// Aggregate calls with their slots (after the table's columns).
    pub aggregates: Vec<(String, SqlType)>,
    /// SELECT aliases usable as names (HAVING, ORDER BY), with their slots.
    pub select_aliases: Vec<(String, usize, SqlType)>,
    /// The clause named in 1054 errors ("field list", "where clause"...).
    pub clause: &'static str,
    /// The collation string literals take (the session's
    /// `collation_connection`).
    pub connection_collation: schema::Collation,
}

impl<'a> TableScope<'a> {
    pub fn new(table: &'a SqlTable, alias: Option<String>, clause: &'static str) -> TableScope<'a> {
        TableScope {
            table,
            alias,
            aggregates: Vec::new(),
            select_aliases: Vec::new(),
            clause,
            connection_collation: expression::CONNECTION_COLLATION,
        }
    }
}

impl Scope for TableScope<'_> {
    fn column(&self, qualifier: Option<&str>, name: &str) -> Result<(usize, SqlType), SqlError> {
        let unknown = || {
            let shown = match qualifier {
                Some(q) => format!("{q}.{name}"),
                None => name.to_string(),
            };
            SqlError::new(
                1054,
                format!("Unknown column '{shown}' in '{}'", self.clause),
            )
        };
        if let Some(qualifier) = qualifier {
            let (database, table) = match qualifier.rsplit_once('.') {
                Some((d, t)) => (Some(d), t),
                None => (None, qualifier),
            };
            let matches_table = match &self.alias {
                Some(alias) => database.is_none() && alias == table,
                None => {
                    table == self.table.name && database.is_none_or(|d| d == self.table.database)
                }
            };
            if !matches_table {
                return Err(unknown());
            }
        } else if let Some((_, slot, sql_type)) = self
            .select_aliases
            .iter()
            .find(|(alias, _, _)| alias.eq_ignore_ascii_case(name))
            && self.table.column_position(name).is_none()
        {
            return Ok((*slot, sql_type.clone()));
        }
        let position = self.table.column_position(name).ok_or_else(unknown)?;
        Ok((position, self.table.column_types[position].clone()))
    }

    fn database(&self) -> Option<String> {
        Some(self.table.database.clone())
    }

    fn connection_collation(&self) -> schema::Collation {
        self.connection_collation
    }

    fn enum_members(&self, slot: usize) -> Option<std::sync::Arc<[String]>> {
        match &self.table.def().columns.get(slot)?.column_type {
            schema::ColumnType::Enum { variants } => Some(variants.as_slice().into()),
            _ => None,
        }
    }

    fn aggregate(&self, call: &ast::Function) -> Option<(usize, SqlType)> {
        let key = expression::aggregate_key(call);
        self.aggregates
            .iter()
            .position(|(k, _)| *k == key)
            .map(|i| {
                (
                    self.table.column_types.len() + i,
                    self.aggregates[i].1.clone(),
                )
            })
    }
}

/// A scope without columns: constants only.
pub struct ConstantScope {
    /// The session's database: an unknown function is 1305 in it, 1046
    /// without one.
    pub database: Option<String>,
    /// The collation string literals take.
    pub connection_collation: schema::Collation,
}

impl ConstantScope {
    pub fn of(session: &Session) -> ConstantScope {
        ConstantScope {
            database: session.database.clone(),
            connection_collation: session.connection_collation(),
        }
    }
}

impl Scope for ConstantScope {
    fn database(&self) -> Option<String> {
        self.database.clone()
    }

    fn connection_collation(&self) -> schema::Collation {
        self.connection_collation
    }

    fn column(&self, qualifier: Option<&str>, name: &str) -> Result<(usize, SqlType), SqlError> {
        let shown = match qualifier {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        Err(SqlError::new(
            1054,
            format!("Unknown column '{shown}' in 'field list'"),
        ))
    }

    fn aggregate(&self, _call: &ast::Function) -> Option<(usize, SqlType)> {
        None
    }
}

/// The conjuncts of a condition (`a AND b AND c` → `[a, b, c]`).
pub fn conjuncts(condition: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    let mut stack = vec![condition];
    while let Some(expr) = stack.pop() {
        match expr {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                stack.push(right);
                stack.push(left);
            }
            Expr::Nested(inner) => stack.push(inner),
            other => out.push(other),
        }
    }
    out
}

/// What the WHERE clause fixes about one column.
#[derive(Debug, Clone, Default)]
struct ColumnConstraint {
    /// `=` (one value) or `IN` (several): the column is one of these.
    values: Option<Vec<Value>>,
    lower: Option<(Value, bool)>,
    upper: Option<(Value, bool)>,
}

/// The one primary key `condition` names when it is nothing but an
/// equality with a constant for each column of an all-integer primary key
/// (`id = 5`, `a = 1 AND b = ?`): the row it names is the only row it can
/// match, so a write by that key needs no read first (NDB's read before
/// write removal). Integers only: a string key's collation and padding
/// rules are left to the path that checks the WHERE on the row fetched.
pub fn exact_primary_key(
    session: &mut Session,
    table: &SqlTable,
    alias: Option<&str>,
    condition: Option<&Expr>,
) -> Result<Option<Vec<(ColumnId, Value)>>, SqlError> {
    let Some(condition) = condition else {
        return Ok(None);
    };
    let def = table.def();
    let primary_key = &def.primary_key;
    let integer = |column: usize| {
        matches!(
            def.columns[column].column_type,
            ColumnType::TinyInt { .. }
                | ColumnType::SmallInt { .. }
                | ColumnType::MediumInt { .. }
                | ColumnType::Int { .. }
                | ColumnType::BigInt { .. }
        )
    };
    let parts = conjuncts(condition);
    if parts.len() != primary_key.len() || !primary_key.iter().all(|&c| integer(c as usize)) {
        return Ok(None);
    }
    let mut named = vec![false; def.columns.len()];
    for part in &parts {
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = part
        else {
            return Ok(None);
        };
        let column = match (
            column_of(table, alias, left),
            column_of(table, alias, right),
        ) {
            (Some(column), None) if is_literal(right) => column,
            (None, Some(column)) if is_literal(left) => column,
            _ => return Ok(None),
        };
        if !primary_key.contains(&(column as ColumnId)) || named[column] {
            return Ok(None);
        }
        named[column] = true;
    }
    Ok(
        match choose_access(session, table, alias, Some(condition))? {
            Access::PrimaryKey(mut keys) if keys.len() == 1 => keys.pop(),
            _ => None,
        },
    )
}

/// A literal, a negated literal or a parameter: a value known without
/// reading any row.
pub fn is_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Value(_) => true,
        Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => matches!(expr.as_ref(), Expr::Value(_)),
        _ => false,
    }
}

/// The column a bare column reference names, if `expr` is one.
fn column_of(table: &SqlTable, alias: Option<&str>, expr: &Expr) -> Option<usize> {
    let scope = TableScope::new(table, alias.map(str::to_string), "where clause");
    match expr {
        Expr::Identifier(ident) => scope.column(None, &ident.value).ok().map(|(p, _)| p),
        Expr::CompoundIdentifier(parts) => {
            let (name, qualifier) = parts.split_last()?;
            let qualifier: Vec<&str> = qualifier.iter().map(|i| i.value.as_str()).collect();
            scope
                .column(Some(&qualifier.join(".")), &name.value)
                .ok()
                .map(|(p, _)| p)
        }
        Expr::Nested(inner) => column_of(table, alias, inner),
        _ => None,
    }
}

/// The constant `expr` evaluates to, if it has no column references.
fn constant(session: &mut Session, expr: &Expr) -> Option<SqlValue> {
    let compiled = expression::compile(expr, &ConstantScope::of(session)).ok()?;
    expression::evaluate(&compiled, &[], session).ok()
}

/// `value` as column `column` stores it, if the conversion is exact: a
/// lookup by it finds exactly the rows `column = value` matches.
fn exact_key(value: &SqlValue, column: &schema::ColumnDef) -> Option<Value> {
    if matches!(value, SqlValue::Null) {
        return None;
    }
    let string_column = matches!(
        column.column_type,
        ColumnType::Char { .. }
            | ColumnType::Varchar { .. }
            | ColumnType::Binary { .. }
            | ColumnType::Varbinary { .. }
            | ColumnType::Text { .. }
            | ColumnType::Blob { .. }
            | ColumnType::Enum { .. }
    );
    let string_value = matches!(value, SqlValue::String(_));
    // A string column compared with a number compares as numbers ('5.0'
    // equals 5): only strings look up strings, only numbers and temporal
    // values look up the others.
    if string_column != string_value {
        let temporal = matches!(
            column.column_type,
            ColumnType::Date
                | ColumnType::Datetime { .. }
                | ColumnType::Timestamp { .. }
                | ColumnType::Time { .. }
        );
        if !(temporal && string_value) {
            return None;
        }
    }
    if let SqlValue::String(bytes) = value {
        // MySQL's PAD SPACE collations (and utf8mb4_bin, PAD SPACE in
        // MySQL 8.0) equal 'a' and 'a ': the engine's key bytes do not.
        let collation = column.column_type.collation();
        let pads = collation.pad_space() || collation == Collation::Utf8mb4Bin;
        if pads && bytes.last() == Some(&b' ') {
            return None;
        }
        if matches!(column.column_type, ColumnType::Char { .. }) && bytes.last() == Some(&b' ') {
            return None;
        }
        if matches!(column.column_type, ColumnType::Binary { .. }) {
            // BINARY(n) pads with zero bytes; a shorter value never equals.
            return None;
        }
    }
    let mut warned = false;
    let stored = convert::to_stored(value, column, true, 1, &mut |_, _| warned = true).ok()?;
    if warned {
        return None;
    }
    // The stored value must read back as the same value, or the lookup
    // would look for something else (1.5 into an INT is 2).
    let back = convert::from_stored(&stored, &column.column_type);
    let same = match (&back, value) {
        (SqlValue::String(a), SqlValue::String(b)) => a == b,
        _ => {
            expression::compare(&back, value, column.column_type.collation())
                == Some(std::cmp::Ordering::Equal)
        }
    };
    same.then_some(stored)
}

/// Whether comparing column `column` with `value` compares as the column
/// does (its collation), so the cluster's indexes and filters, which
/// compare as the column does, find what the comparison matches. A string
/// column compared with anything but a plain literal or parameter may
/// compare under another collation (`COLLATE`, `BINARY`, a column's), and
/// is left to the SQL node.
fn compares_as_column(column: &schema::ColumnDef, value: &Expr) -> bool {
    let string_column = matches!(
        column.column_type,
        ColumnType::Char { .. }
            | ColumnType::Varchar { .. }
            | ColumnType::Text { .. }
            | ColumnType::Enum { .. }
    );
    let mut value = value;
    while let Expr::Nested(inner) = value {
        value = inner;
    }
    !string_column || matches!(value, Expr::Value(_))
}

/// Whether the column's stored order is SQL's order of its values: not an
/// ENUM, stored as its member's index but compared as text.
fn orders_as_stored(column: &schema::ColumnDef) -> bool {
    !matches!(column.column_type, ColumnType::Enum { .. })
}

/// Picks the access path for `condition` on `table`.
pub fn choose_access(
    session: &mut Session,
    table: &SqlTable,
    alias: Option<&str>,
    condition: Option<&Expr>,
) -> Result<Access, SqlError> {
    let def = table.def();
    let mut constraints: Vec<ColumnConstraint> =
        vec![ColumnConstraint::default(); def.columns.len()];
    if let Some(condition) = condition {
        for conjunct in conjuncts(condition) {
            constrain(session, table, alias, conjunct, &mut constraints);
        }
    }
    let fixed = |c: usize, constraints: &[ColumnConstraint]| constraints[c].values.is_some();
    // 1. Primary key.
    let primary_key = &def.primary_key;
    if primary_key.iter().all(|&c| fixed(c as usize, &constraints)) {
        let keys = key_combinations(primary_key, &constraints);
        if let Some(keys) = keys {
            return Ok(if keys.is_empty() {
                Access::Nothing
            } else {
                Access::PrimaryKey(keys)
            });
        }
    }
    // 2. Unique indexes.
    for index in &def.ordered_indexes {
        if index.unique
            && index
                .columns
                .iter()
                .all(|&c| fixed(c as usize, &constraints))
            && let Some(keys) = key_combinations(&index.columns, &constraints)
        {
            if keys.is_empty() {
                return Ok(Access::Nothing);
            }
            return Ok(Access::Unique {
                index: index.name.clone(),
                keys,
            });
        }
    }
    let partition_key = partition_key(table, &constraints);
    // 3. Ordered indexes: the longest equality prefix, then a range.
    let mut best: Option<(usize, bool, u16)> = None;
    for (position, index) in def.ordered_indexes.iter().enumerate() {
        let mut prefix = 0;
        for &column in &index.columns {
            match &constraints[column as usize].values {
                Some(values) if values.len() == 1 => prefix += 1,
                _ => break,
            }
        }
        let ranged = index.columns.get(prefix).is_some_and(|&c| {
            let constraint = &constraints[c as usize];
            constraint.lower.is_some() || constraint.upper.is_some()
        });
        if prefix == 0 && !ranged {
            continue;
        }
        let better = match best {
            None => true,
            Some((p, r, _)) => (prefix, ranged) > (p, r),
        };
        if better {
            best = Some((prefix, ranged, position as u16));
        }
    }
    if let Some((prefix, ranged, position)) = best {
        let index = &def.ordered_indexes[position as usize];
        let mut lower_values: Vec<(ColumnId, Value)> = index.columns[..prefix]
            .iter()
            .map(|&c| {
                (
                    c,
                    constraints[c as usize].values.as_ref().expect("fixed")[0].clone(),
                )
            })
            .collect();
        let mut upper_values = lower_values.clone();
        let (mut lower_inclusive, mut upper_inclusive) = (true, true);
        let mut lower_open = prefix == 0;
        let mut upper_open = prefix == 0;
        if ranged {
            let column = index.columns[prefix];
            let constraint = &constraints[column as usize];
            if let Some((value, inclusive)) = &constraint.lower {
                lower_values.push((column, value.clone()));
                lower_inclusive = *inclusive;
                lower_open = false;
            }
            if let Some((value, inclusive)) = &constraint.upper {
                upper_values.push((column, value.clone()));
                upper_inclusive = *inclusive;
                upper_open = false;
            }
        }
        return Ok(Access::Range {
            index: position,
            lower: (!lower_open).then_some((lower_values, lower_inclusive)),
            upper: (!upper_open).then_some((upper_values, upper_inclusive)),
            partition_key,
            filter: pushed_filter(def, &constraints),
        });
    }
    Ok(Access::Scan {
        partition_key,
        filter: pushed_filter(def, &constraints),
    })
}

/// A filter leaf of one column and value (`FilterBuilder::ge`, ...).
type Leaf = for<'a> fn(&'a mut FilterBuilder, ColumnId, &[u8]) -> &'a mut FilterBuilder;
/// A constraint's bound, with its leaf when inclusive and when not.
type Bound<'c> = (&'c Option<(Value, bool)>, Leaf, Leaf);

/// The condition a scan pushes to the data nodes, so rows that cannot
/// match never leave them: every column's constraint (`=`, `IN`, the range
/// bounds), ANDed. Each is implied by the WHERE clause (the constraints
/// hold only exact conversions, compared as the column compares), and the
/// SQL node still evaluates the whole WHERE on every row it gets, so the
/// filter only ever takes away rows the WHERE would. Empty when there is
/// nothing to push, or when the program would be too large (the scan then
/// brings every row, as without pushdown).
fn pushed_filter(def: &schema::TableDef, constraints: &[ColumnConstraint]) -> Vec<u8> {
    let mut builder = FilterBuilder::new();
    let mut leaves = 0;
    let mut bytes = Vec::new();
    let mut encode = |value: &Value, column: usize| -> Option<Vec<u8>> {
        bytes.clear();
        value
            .encode(&def.columns[column].column_type, &mut bytes)
            .ok()?;
        Some(bytes.clone())
    };
    for (column, constraint) in constraints.iter().enumerate() {
        let id = column as ColumnId;
        if let Some(values) = &constraint.values {
            let encoded: Option<Vec<Vec<u8>>> =
                values.iter().map(|value| encode(value, column)).collect();
            let Some(encoded) = encoded else {
                continue;
            };
            match encoded.as_slice() {
                [one] => builder.eq(id, one),
                many => {
                    let slices: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
                    builder.in_list(id, &slices)
                }
            };
            leaves += 1;
        }
        // Each bound with its leaf when inclusive, and when not.
        let bounds: [Bound<'_>; 2] = [
            (&constraint.lower, FilterBuilder::ge, FilterBuilder::gt),
            (&constraint.upper, FilterBuilder::le, FilterBuilder::lt),
        ];
        for (bound, inclusive_leaf, exclusive_leaf) in bounds {
            if let Some((value, inclusive)) = bound
                && let Some(encoded) = encode(value, column)
            {
                let leaf = if *inclusive {
                    inclusive_leaf
                } else {
                    exclusive_leaf
                };
                leaf(&mut builder, id, &encoded);
                leaves += 1;
            }
        }
    }
    if leaves == 0 {
        return Vec::new();
    }
    builder.finish().unwrap_or_default()
}

/// Every combination of the fixed values of `columns`, or `None` when
/// there would be more than `KEY_LOOKUPS_MAX`.
fn key_combinations(
    columns: &[ColumnId],
    constraints: &[ColumnConstraint],
) -> Option<Vec<Vec<(ColumnId, Value)>>> {
    // One value per column (a point lookup): one key, built without the
    // product below.
    let single: Option<Vec<(ColumnId, Value)>> = columns
        .iter()
        .map(
            |&column| match constraints[column as usize].values.as_deref() {
                Some([value]) => Some((column, value.clone())),
                _ => None,
            },
        )
        .collect();
    if let Some(key) = single {
        return Some(vec![key]);
    }
    let mut keys: Vec<Vec<(ColumnId, Value)>> = vec![Vec::new()];
    for &column in columns {
        let values = constraints[column as usize].values.as_ref()?;
        if keys.len().saturating_mul(values.len()) > KEY_LOOKUPS_MAX {
            return None;
        }
        let mut next = Vec::with_capacity(keys.len() * values.len());
        for key in &keys {
            for value in values {
                let mut extended = key.clone();
                extended.push((column, value.clone()));
                next.push(extended);
            }
        }
        keys = next;
    }
    // Duplicates in an IN list are looked up once.
    keys.dedup();
    Some(keys)
}

/// The distribution key, when every column of it is fixed to one value.
fn partition_key(
    table: &SqlTable,
    constraints: &[ColumnConstraint],
) -> Option<Vec<(ColumnId, Value)>> {
    let columns = schema::distribution::distribution_key_columns(table.def(), &table.route.options);
    let mut key = Vec::with_capacity(columns.len());
    for &column in columns {
        match &constraints[column as usize].values {
            Some(values) if values.len() == 1 => key.push((column, values[0].clone())),
            _ => return None,
        }
    }
    Some(key)
}

/// Records what `conjunct` fixes about a column.
fn constrain(
    session: &mut Session,
    table: &SqlTable,
    alias: Option<&str>,
    conjunct: &Expr,
    constraints: &mut [ColumnConstraint],
) {
    let def = table.def();
    match conjunct {
        Expr::BinaryOp { left, op, right } => {
            let (column, value_expr, op) = match (
                column_of(table, alias, left),
                column_of(table, alias, right),
            ) {
                (Some(c), None) => (c, right.as_ref(), op.clone()),
                (None, Some(c)) => (c, left.as_ref(), mirror(op)),
                _ => return,
            };
            let column_def = &def.columns[column];
            if !compares_as_column(column_def, value_expr) {
                return;
            }
            let Some(value) = constant(session, value_expr) else {
                return;
            };
            let constraint = &mut constraints[column];
            match op {
                BinaryOperator::Eq => {
                    let Some(key) = exact_key(&value, column_def) else {
                        if matches!(value, SqlValue::Null) {
                            // `c = NULL` matches nothing.
                            constraint.values = Some(Vec::new());
                        }
                        return;
                    };
                    match &mut constraint.values {
                        Some(values) if values.len() == 1 && values[0] != key => values.clear(),
                        Some(_) => {}
                        None => constraint.values = Some(vec![key]),
                    }
                }
                BinaryOperator::Gt | BinaryOperator::GtEq if orders_as_stored(column_def) => {
                    if let Some(key) = exact_key(&value, column_def) {
                        constraint.lower = Some((key, op == BinaryOperator::GtEq));
                    }
                }
                BinaryOperator::Lt | BinaryOperator::LtEq if orders_as_stored(column_def) => {
                    if let Some(key) = exact_key(&value, column_def) {
                        constraint.upper = Some((key, op == BinaryOperator::LtEq));
                    }
                }
                _ => {}
            }
        }
        Expr::In {
            expr,
            target: ast::InTarget::List(list),
            negated: false,
            ..
        } => {
            let Some(column) = column_of(table, alias, expr) else {
                return;
            };
            if list.len() > KEY_LOOKUPS_MAX {
                return;
            }
            let column_def = &def.columns[column];
            let mut keys = Vec::with_capacity(list.len());
            for item in list {
                if !compares_as_column(column_def, item) {
                    return;
                }
                let Some(value) = constant(session, item) else {
                    return;
                };
                if matches!(value, SqlValue::Null) {
                    continue;
                }
                match exact_key(&value, column_def) {
                    Some(key) => keys.push(key),
                    None => return,
                }
            }
            if constraints[column].values.is_none() {
                constraints[column].values = Some(keys);
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => {
            let Some(column) = column_of(table, alias, expr) else {
                return;
            };
            let column_def = &def.columns[column];
            if !orders_as_stored(column_def)
                || !compares_as_column(column_def, low)
                || !compares_as_column(column_def, high)
            {
                return;
            }
            let low = constant(session, low).and_then(|v| exact_key(&v, column_def));
            let high = constant(session, high).and_then(|v| exact_key(&v, column_def));
            if let Some(low) = low {
                constraints[column].lower = Some((low, true));
            }
            if let Some(high) = high {
                constraints[column].upper = Some((high, true));
            }
        }
        _ => {}
    }
}

/// `a < b` is `b > a`.
fn mirror(op: &BinaryOperator) -> BinaryOperator {
    match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        other => other.clone(),
    }
}

/// How `fetch` reads.
#[derive(Default)]
pub struct FetchOptions<'a> {
    /// The columns to read (the others are NULL in the rows); all when
    /// `None`.
    pub projection: Option<&'a [ColumnId]>,
    /// Stop after this many rows (kept rows when `condition` is given).
    pub limit: Option<usize>,
    /// A range's rows in its index's order, descending when true (the
    /// projection must hold the index's columns).
    pub ordered: Option<bool>,
    /// Keep only the rows this holds for; without it every row fetched
    /// is returned and the caller checks its condition.
    pub condition: Option<&'a Expression>,
}

/// Fetches the rows `access` names in `transaction`; `last` ends the
/// transaction with the read when it is a key lookup (one round trip for
/// an autocommit point select). Returns the rows and the transaction
/// (ended if committed).
#[allow(clippy::too_many_arguments)]
pub fn fetch(
    session: &mut Session,
    table: &Arc<SqlTable>,
    access: &Access,
    lock: LockMode,
    mut transaction: Transaction,
    last: bool,
    fetch_options: &FetchOptions<'_>,
    rows: &mut Vec<impl FetchedRow>,
) -> Result<Transaction, SqlError> {
    let projection = fetch_options.projection;
    let route = &table.route;
    let all: Vec<ColumnId>;
    let columns = match projection {
        Some(columns) => columns,
        None => {
            all = (0..route.def.columns.len() as u16).collect();
            &all
        }
    };
    match access {
        Access::Nothing => Ok(transaction),
        Access::PrimaryKey(keys) | Access::Unique { keys, .. } => {
            let mut operations = Vec::with_capacity(keys.len());
            for key in keys {
                let operation = match access {
                    Access::Unique { index, .. } => {
                        transaction.read_unique(route, index, key, columns, lock)
                    }
                    _ => transaction.read(route, key, columns, lock),
                }
                .map_err(|e| session.cluster_error(e))?;
                transaction
                    .ignore_error(operation)
                    .map_err(|e| session.cluster_error(e))?;
                operations.push(operation);
            }
            let transaction = session.execute_batch(transaction, last)?;
            let mut sql = Vec::new();
            for operation in operations {
                match transaction.row(operation) {
                    Ok(row) => keep_row(session, table, fetch_options, row, &mut sql, rows)?,
                    Err(e) if e.ndb_code == 626 => {}
                    Err(e) => return Err(session.cluster_error(e)),
                }
            }
            Ok(transaction)
        }
        Access::Range {
            index,
            lower,
            upper,
            partition_key,
            filter,
        } => {
            let options = ScanOptions {
                index: Some(*index),
                lower: lower.clone(),
                upper: upper.clone(),
                lock: (lock != LockMode::Committed).then_some(lock),
                partition_key: partition_key.clone(),
                batch_rows: SCAN_BATCH_ROWS,
                columns: columns.to_vec(),
                filter: filter.clone(),
                descending: fetch_options.ordered == Some(true),
                ordered: fetch_options.ordered.is_some(),
            };
            scan(session, table, &options, transaction, fetch_options, rows)
        }
        Access::Scan {
            partition_key,
            filter,
        } => {
            let options = ScanOptions {
                lock: (lock != LockMode::Committed).then_some(lock),
                partition_key: partition_key.clone(),
                batch_rows: SCAN_BATCH_ROWS,
                columns: columns.to_vec(),
                filter: filter.clone(),
                ..ScanOptions::default()
            };
            transaction = scan(session, table, &options, transaction, fetch_options, rows)?;
            Ok(transaction)
        }
    }
}

fn scan(
    session: &mut Session,
    table: &Arc<SqlTable>,
    options: &ScanOptions,
    mut transaction: Transaction,
    fetch_options: &FetchOptions<'_>,
    rows: &mut Vec<impl FetchedRow>,
) -> Result<Transaction, SqlError> {
    if transaction.unsent() > 0 {
        // Rows kept unsent by transaction_allow_batching go first, so the
        // scan sees them (a scan sends none of the defined operations).
        session.execute_in_place(&mut transaction, false)?;
    }
    let scan = session
        .native
        .scan(&mut transaction, &table.route, options)
        .map_err(cluster_error_of)?;
    let start = rows.len();
    let mut sql = Vec::new();
    loop {
        session.check_killed()?;
        if fetch_options
            .limit
            .is_some_and(|limit| rows.len() - start >= limit)
        {
            break;
        }
        match session.native.next_row(&scan) {
            Ok(Some(row)) => keep_row(session, table, fetch_options, row, &mut sql, rows)?,
            Ok(None) => break,
            Err(e) => return Err(cluster_error_of(e)),
        }
    }
    session.native.close_scan(scan).map_err(cluster_error_of)?;
    Ok(transaction)
}

/// Adds a fetched row to `rows` unless the fetch's condition rejects it
/// (`sql` is scratch for the row as SQL values).
fn keep_row<R: FetchedRow>(
    session: &mut Session,
    table: &SqlTable,
    fetch_options: &FetchOptions<'_>,
    row: shoal_client::Row,
    sql: &mut Vec<SqlValue>,
    rows: &mut Vec<R>,
) -> Result<(), SqlError> {
    let row = R::from_fetched(table, row);
    if let Some(condition) = fetch_options.condition
        && !holds(session, condition, row.as_sql(table, sql))?
    {
        return Ok(());
    }
    rows.push(row);
    Ok(())
}

/// A row as `fetch` collects it: stored values, for statements that write
/// them back, or SQL values, for a SELECT (made straight from the fetched
/// values, without a stored row between them).
pub trait FetchedRow: Sized {
    /// Every column of the table in order; the ones not fetched are NULL.
    fn from_fetched(table: &SqlTable, row: shoal_client::Row) -> Self;
    /// The row as SQL values, converted into `scratch` when it must be.
    fn as_sql<'a>(&'a self, table: &SqlTable, scratch: &'a mut Vec<SqlValue>) -> &'a [SqlValue];
}

impl FetchedRow for StoredRow {
    fn from_fetched(table: &SqlTable, row: shoal_client::Row) -> Self {
        stored_row(table, row)
    }

    fn as_sql<'a>(&'a self, table: &SqlTable, scratch: &'a mut Vec<SqlValue>) -> &'a [SqlValue] {
        sql_row(table, self, scratch);
        scratch
    }
}

impl FetchedRow for Vec<SqlValue> {
    fn from_fetched(table: &SqlTable, row: shoal_client::Row) -> Self {
        let columns = &table.def().columns;
        let mut values = vec![SqlValue::Null; columns.len()];
        for (column, value) in row.values {
            if let (Some(slot), Some(definition)) = (
                values.get_mut(column as usize),
                columns.get(column as usize),
            ) {
                *slot = convert::from_stored_owned(value, &definition.column_type);
            }
        }
        values
    }

    fn as_sql<'a>(&'a self, _: &SqlTable, _: &'a mut Vec<SqlValue>) -> &'a [SqlValue] {
        self
    }
}

fn cluster_error_of(error: shoal_client::ClientError) -> SqlError {
    crate::session::cluster_error(error)
}

/// A row the cluster returned, every column in order.
fn stored_row(table: &SqlTable, row: shoal_client::Row) -> StoredRow {
    let mut values = vec![Value::Null; table.def().columns.len()];
    for (column, value) in row.values {
        if let Some(slot) = values.get_mut(column as usize) {
            *slot = value;
        }
    }
    values
}

/// A stored row as SQL values.
pub fn sql_row(table: &SqlTable, row: &StoredRow, out: &mut Vec<SqlValue>) {
    out.clear();
    for (value, column) in row.iter().zip(&table.def().columns) {
        out.push(convert::from_stored(value, &column.column_type));
    }
}

/// The primary key of a stored row.
pub fn primary_key_of(table: &SqlTable, row: &StoredRow) -> Vec<(ColumnId, Value)> {
    table
        .def()
        .primary_key
        .iter()
        .map(|&c| (c, row[c as usize].clone()))
        .collect()
}

/// Compiles `condition` against the table scope.
pub fn compile_condition(
    table: &SqlTable,
    alias: Option<&str>,
    condition: &Expr,
) -> Result<Expression, SqlError> {
    expression::compile(
        condition,
        &TableScope::new(table, alias.map(str::to_string), "where clause"),
    )
}

/// Whether `condition` holds for `row` (NULL and FALSE do not).
pub fn holds(
    session: &mut Session,
    condition: &Expression,
    row: &[SqlValue],
) -> Result<bool, SqlError> {
    let value = expression::evaluate(condition, row, session)?;
    Ok(truth(&value))
}

/// MySQL's truth of a value in a condition.
pub fn truth(value: &SqlValue) -> bool {
    match value {
        SqlValue::Null => false,
        SqlValue::Int(v) => *v != 0,
        SqlValue::UInt(v) => *v != 0,
        SqlValue::Double(v) => *v != 0.0,
        SqlValue::Decimal(d) => d.mantissa != 0,
        SqlValue::String(s) => {
            // A string is true when its numeric prefix is not zero.
            let text = String::from_utf8_lossy(s);
            let trimmed = text.trim_start();
            let end = trimmed
                .char_indices()
                .take_while(|(i, c)| {
                    c.is_ascii_digit()
                        || *c == '.'
                        || ((*c == '-' || *c == '+') && *i == 0)
                        || *c == 'e'
                        || *c == 'E'
                })
                .map(|(i, c)| i + c.len_utf8())
                .last()
                .unwrap_or(0);
            trimmed[..end]
                .parse::<f64>()
                .map(|v| v != 0.0)
                .unwrap_or(false)
        }
        SqlValue::Date(_) | SqlValue::Datetime(_) | SqlValue::Time(_) => true,
    }
}
