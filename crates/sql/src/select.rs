//! SELECT on one table (or none): fetch by the access path, filter by
//! WHERE, group and aggregate, HAVING, project, sort, DISTINCT, LIMIT.
//! Joins, subqueries and UNION come with the next planner.

use std::collections::HashMap;
use std::sync::Arc;

use mysql_protocol::ColumnDefinition;
use shoal_client::LockMode;
use sqlparser::ast::{self, Expr, SelectItem, SetExpr};

use crate::catalog::SqlTable;
use crate::error::SqlError;
use crate::expression::{self, Accumulator, AggregateCall, Expression, Scope};
use crate::outcome::{Outcome, ResultSet, expression_column};
use crate::parse::Parsed;
use crate::plan::{self, Access, ConstantScope, TableScope};
use crate::session::{Session, StatementResult};
use crate::value::{SqlType, SqlValue};

/// Most rows a statement holds in the SQL node to sort, group or return
/// (a bound on the node's memory per statement).
pub const STATEMENT_ROWS_MAX: usize = 4_000_000;

/// Evaluates an expression without columns (SET values, LIMIT).
pub fn evaluate_constant(session: &mut Session, expr: &Expr) -> Result<SqlValue, SqlError> {
    if let Expr::Subquery(query) = expr {
        return match run(session, query, false)? {
            Outcome::Rows(result) => Ok(result
                .rows
                .into_iter()
                .next()
                .and_then(|row| row.into_iter().next())
                .unwrap_or(SqlValue::Null)),
            Outcome::Done { .. } => Ok(SqlValue::Null),
        };
    }
    let compiled = expression::compile(expr, &ConstantScope::of(session))?;
    expression::evaluate(&compiled, &[], session)
}

/// A LIMIT or OFFSET value: a non-negative integer (a parameter may give it).
fn row_count_value(session: &mut Session, expr: &Expr) -> Result<u64, SqlError> {
    // A negative literal is not MySQL syntax there at all.
    if let Expr::UnaryOp {
        op: ast::UnaryOperator::Minus,
        ..
    } = expr
    {
        return Err(SqlError::syntax(format!(
            "check the manual that corresponds to your MySQL server version for the right syntax to use near '{expr}'"
        )));
    }
    match evaluate_constant(session, expr)? {
        SqlValue::Int(v) if v >= 0 => Ok(v as u64),
        SqlValue::UInt(v) => Ok(v),
        SqlValue::String(s) => String::from_utf8_lossy(&s)
            .trim()
            .parse::<u64>()
            .map_err(|_| SqlError::new(1210, "Incorrect arguments to LIMIT")),
        _ => Err(SqlError::new(1210, "Incorrect arguments to LIMIT")),
    }
}

/// `(offset, limit)` of a query.
pub fn limits(
    session: &mut Session,
    clause: Option<&ast::LimitClause>,
) -> Result<(u64, Option<u64>), SqlError> {
    match clause {
        None => Ok((0, None)),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
            let limit = match limit {
                Some(expr) => Some(row_count_value(session, expr)?),
                None => None,
            };
            let offset = match offset {
                Some(offset) => row_count_value(session, &offset.value)?,
                None => 0,
            };
            Ok((offset, limit))
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => Ok((
            row_count_value(session, offset)?,
            Some(row_count_value(session, limit)?),
        )),
    }
}

/// Calls every sub-expression of `expr` (pre-order) that is not inside a
/// subquery.
pub fn walk(expr: &Expr, visit: &mut dyn FnMut(&Expr)) {
    visit(expr);
    let mut each = |e: &Expr| walk(e, visit);
    match expr {
        Expr::BinaryOp { left, right, .. } => {
            each(left);
            each(right);
        }
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr)
        | Expr::IsTrue(expr)
        | Expr::IsNotTrue(expr)
        | Expr::IsFalse(expr)
        | Expr::IsNotFalse(expr)
        | Expr::Cast { expr, .. }
        | Expr::Collate { expr, .. } => each(expr),
        Expr::In { expr, target, .. } => {
            each(expr);
            if let ast::InTarget::List(list) = target {
                list.iter().for_each(&mut each);
            }
        }
        Expr::Between {
            expr, low, high, ..
        } => {
            each(expr);
            each(low);
            each(high);
        }
        Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => {
            each(expr);
            each(pattern);
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(operand) = operand {
                each(operand);
            }
            for when in conditions {
                each(&when.condition);
                each(&when.result);
            }
            if let Some(else_result) = else_result {
                each(else_result);
            }
        }
        Expr::Function(function) => {
            if let ast::FunctionArguments::List(list) = &function.args {
                for argument in &list.args {
                    match argument {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))
                        | ast::FunctionArg::Named {
                            arg: ast::FunctionArgExpr::Expr(e),
                            ..
                        } => each(e),
                        _ => {}
                    }
                }
            }
        }
        Expr::Tuple(items) => items.iter().for_each(&mut each),
        _ => {}
    }
}

/// A copy of `expr` with every identifier `replace` gives an expression
/// for replaced by it.
pub fn map_identifiers(expr: &Expr, replace: &dyn Fn(&ast::Ident) -> Option<Expr>) -> Expr {
    let again = |e: &Expr| Box::new(map_identifiers(e, replace));
    match expr {
        Expr::Identifier(ident) => replace(ident).unwrap_or_else(|| expr.clone()),
        Expr::BinaryOp { left, op, right } => Expr::BinaryOp {
            left: again(left),
            op: op.clone(),
            right: again(right),
        },
        Expr::UnaryOp { op, expr: inner } => Expr::UnaryOp {
            op: *op,
            expr: again(inner),
        },
        Expr::Nested(inner) => Expr::Nested(again(inner)),
        Expr::IsNull(inner) => Expr::IsNull(again(inner)),
        Expr::IsNotNull(inner) => Expr::IsNotNull(again(inner)),
        Expr::Between {
            expr: inner,
            negated,
            low,
            high,
        } => Expr::Between {
            expr: again(inner),
            negated: *negated,
            low: again(low),
            high: again(high),
        },
        Expr::In {
            expr: inner,
            target: ast::InTarget::List(list),
            negated,
            global,
        } => Expr::In {
            expr: again(inner),
            target: ast::InTarget::List(list.iter().map(|e| map_identifiers(e, replace)).collect()),
            negated: *negated,
            global: *global,
        },
        Expr::Function(function) => {
            let mut function = function.clone();
            if let ast::FunctionArguments::List(list) = &mut function.args {
                for argument in &mut list.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = argument {
                        *e = map_identifiers(e, replace);
                    }
                }
            }
            Expr::Function(function)
        }
        other => other.clone(),
    }
}

/// Whether `expr` calls an aggregate function.
fn contains_aggregate(expr: &Expr) -> bool {
    let mut found = false;
    walk(expr, &mut |e| {
        if let Expr::Function(f) = e
            && expression::is_aggregate(f)
        {
            found = true;
        }
    });
    found
}

/// The columns `expr` reads outside aggregate calls.
fn columns_outside_aggregates(table: &SqlTable, expr: &Expr, out: &mut Vec<usize>) {
    match expr {
        Expr::Function(f) if expression::is_aggregate(f) => {}
        Expr::Identifier(ident) => {
            if let Some(position) = table.column_position(&ident.value) {
                out.push(position);
            }
        }
        Expr::CompoundIdentifier(parts) => {
            if let Some(position) = parts.last().and_then(|i| table.column_position(&i.value)) {
                out.push(position);
            }
        }
        Expr::BinaryOp { left, right, .. } => {
            columns_outside_aggregates(table, left, out);
            columns_outside_aggregates(table, right, out);
        }
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr) => columns_outside_aggregates(table, expr, out),
        Expr::Function(function) => {
            if let ast::FunctionArguments::List(list) = &function.args {
                for argument in &list.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = argument {
                        columns_outside_aggregates(table, e, out);
                    }
                }
            }
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(operand) = operand {
                columns_outside_aggregates(table, operand, out);
            }
            for when in conditions {
                columns_outside_aggregates(table, &when.condition, out);
                columns_outside_aggregates(table, &when.result, out);
            }
            if let Some(e) = else_result {
                columns_outside_aggregates(table, e, out);
            }
        }
        _ => {}
    }
}

/// MySQL's ONLY_FULL_GROUP_BY: every column a select item reads outside
/// aggregates is grouped on (or the grouping covers the primary key, which
/// determines every column). 1055 with GROUP BY, 1140 without.
fn check_full_group_by(
    table: &SqlTable,
    alias: Option<&str>,
    items: &[(Expr, Option<String>)],
    group_by: &[Expr],
) -> Result<(), SqlError> {
    let mut grouped = Vec::new();
    for expr in group_by {
        if let Expr::Identifier(_) | Expr::CompoundIdentifier(_) = expr {
            columns_outside_aggregates(table, expr, &mut grouped);
        }
    }
    let key_grouped = table
        .def()
        .primary_key
        .iter()
        .all(|c| grouped.contains(&(*c as usize)));
    for (position, (expr, _)) in items.iter().enumerate() {
        if group_by.iter().any(|g| g == expr) || key_grouped {
            continue;
        }
        let mut read = Vec::new();
        columns_outside_aggregates(table, expr, &mut read);
        if let Some(column) = read.iter().find(|c| !grouped.contains(c)) {
            let name = format!(
                "{}.{}.{}",
                table.database,
                alias.unwrap_or(&table.name),
                table.column(*column).name
            );
            return Err(if group_by.is_empty() {
                SqlError::new(
                    1140,
                    format!(
                        "In aggregated query without GROUP BY, expression #{} of SELECT list contains nonaggregated column '{name}'; this is incompatible with sql_mode=only_full_group_by",
                        position + 1
                    ),
                )
            } else {
                SqlError::new(
                    1055,
                    format!(
                        "Expression #{} of SELECT list is not in GROUP BY clause and contains nonaggregated column '{name}' which is not functionally dependent on columns in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by",
                        position + 1
                    ),
                )
            });
        }
    }
    Ok(())
}

/// The aggregate calls in `expr`, in order of appearance.
fn collect_aggregates(expr: &Expr, out: &mut Vec<ast::Function>) {
    walk(expr, &mut |e| {
        if let Expr::Function(function) = e
            && expression::is_aggregate(function)
            && !out
                .iter()
                .any(|f| expression::aggregate_key(f) == expression::aggregate_key(function))
        {
            out.push(function.clone());
        }
    });
}

/// The name MySQL gives an unaliased select item.
fn item_name(expr: &Expr) -> String {
    match expr {
        Expr::Identifier(ident) => ident.value.clone(),
        Expr::CompoundIdentifier(parts) => {
            parts.last().map(|i| i.value.clone()).unwrap_or_default()
        }
        Expr::Value(value) => match &value.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// One output column of a SELECT.
struct OutputColumn {
    expression: Expression,
    definition: ColumnDefinition,
}

/// A SELECT compiled against its table.
struct CompiledSelect {
    table: Option<Arc<SqlTable>>,
    alias: Option<String>,
    outputs: Vec<OutputColumn>,
    aggregates: Vec<AggregateCall>,
    aggregate_keys: Vec<(String, SqlType)>,
    grouped: bool,
    group_by: Vec<Expression>,
    having: Option<Expression>,
    condition: Option<Expression>,
    order_by: Vec<(Expression, bool)>,
    /// `moved_columns`, worked out once.
    moved: Vec<Option<usize>>,
}

/// When ORDER BY names leading columns of an ordered index, all in one
/// direction, and the access reads a range of that index or scans the
/// table: the index's order is the ORDER BY's, and `access` becomes a
/// range of that index (the whole index for a scan). Returns the direction
/// (true for descending).
fn index_order(
    table: &SqlTable,
    order_by: &[(Expression, bool)],
    access: &mut Access,
) -> Option<bool> {
    let (_, descending) = order_by.first()?;
    let columns: Vec<usize> = order_by
        .iter()
        .map(|(expression, item_descending)| {
            (item_descending == descending)
                .then(|| expression.column())
                .flatten()
        })
        .collect::<Option<_>>()?;
    let leads = |index: &schema::table::IndexDef| {
        index.columns.len() >= columns.len()
            && index
                .columns
                .iter()
                .zip(&columns)
                .all(|(&a, &b)| a as usize == b)
    };
    let indexes = &table.def().ordered_indexes;
    match access {
        Access::Range { index, .. } => leads(&indexes[*index as usize]).then_some(*descending),
        Access::Scan {
            partition_key,
            filter,
        } => {
            let position = indexes.iter().position(leads)?;
            *access = Access::Range {
                index: position as u16,
                lower: None,
                upper: None,
                partition_key: partition_key.take(),
                filter: std::mem::take(filter),
            };
            Some(*descending)
        }
        _ => None,
    }
}

impl CompiledSelect {
    /// The columns of `table` the query reads: only they are fetched. At
    /// least one, so a `COUNT(*)` still gets a row per row.
    fn columns_read(&self, table: &SqlTable) -> Vec<schema::table::ColumnId> {
        let mut used = vec![false; table.def().columns.len()];
        for output in &self.outputs {
            output.expression.mark_columns(&mut used);
        }
        for aggregate in &self.aggregates {
            for argument in &aggregate.arguments {
                argument.mark_columns(&mut used);
            }
        }
        for expression in self
            .group_by
            .iter()
            .chain(&self.having)
            .chain(&self.condition)
            .chain(self.order_by.iter().map(|(expression, _)| expression))
        {
            expression.mark_columns(&mut used);
        }
        let mut columns: Vec<schema::table::ColumnId> = (0..used.len() as u16)
            .filter(|column| used[*column as usize])
            .collect();
        if columns.is_empty() {
            columns.push(table.def().primary_key[0]);
        }
        columns
    }
}

fn column_definition(
    table: &SqlTable,
    alias: Option<&str>,
    position: usize,
    name: &str,
) -> ColumnDefinition {
    let sql_type = &table.column_types[position];
    ColumnDefinition {
        schema: table.database.clone(),
        table: alias.unwrap_or(&table.name).to_string(),
        org_table: table.name.clone(),
        name: name.to_string(),
        org_name: table.column(position).name.clone(),
        collation_id: crate::outcome::collation_id(sql_type),
        length: sql_type.length,
        field_type: sql_type.field_type,
        flags: sql_type.flags,
        decimals: sql_type.decimals,
    }
}

/// A prepared SELECT's compiled form, kept with the statement for its
/// next execution: valid while its table, the current database, the
/// connection's collation and ONLY_FULL_GROUP_BY are those it was compiled
/// under (nothing else the compiler reads can change between executions;
/// parameters are read when the statement runs).
#[derive(Clone)]
pub struct CachedSelect {
    compiled: Arc<CompiledSelect>,
    database: Option<String>,
    collation: schema::Collation,
    only_full_group_by: bool,
}

impl std::fmt::Debug for CachedSelect {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CachedSelect")
            .field("database", &self.database)
            .field("collation", &self.collation)
            .finish_non_exhaustive()
    }
}

/// The table a SELECT reads and its alias (none for no FROM or FROM DUAL).
type SelectTable = (Option<Arc<SqlTable>>, Option<String>);

fn select_table(session: &mut Session, select: &ast::Select) -> Result<SelectTable, SqlError> {
    let dual = |from: &ast::TableWithJoins| {
        matches!(&from.relation, ast::TableFactor::Table { name, alias: None, .. }
            if from.joins.is_empty() && name.0.len() == 1
                && name.0[0].as_ident().is_some_and(|i| i.quote_style.is_none() && i.value.eq_ignore_ascii_case("DUAL")))
    };
    Ok(match select.from.as_slice() {
        [] => (None, None),
        // FROM DUAL: no table, as MySQL.
        [from] if dual(from) => (None, None),
        [from] if from.joins.is_empty() => match &from.relation {
            ast::TableFactor::Table { name, alias, .. } => (
                Some(session.table_by_object_name(name)?),
                alias.as_ref().map(|a| a.name.value.clone()),
            ),
            _ => return Err(SqlError::unsupported("derived tables and table functions")),
        },
        _ => {
            return Err(SqlError::unsupported(
                "joins (they come with the next planner)",
            ));
        }
    })
}

/// `select` compiled, or taken from `cached` when that is still valid.
fn compile_select_cached(
    session: &mut Session,
    select: &ast::Select,
    order_by: &[ast::OrderByExpr],
    cached: Option<CachedSelect>,
) -> Result<CachedSelect, SqlError> {
    let (table, alias) = select_table(session, select)?;
    let database = session.database.clone();
    let collation = session.connection_collation();
    let only_full_group_by = session.sql_mode_has("ONLY_FULL_GROUP_BY");
    if let Some(cached) = cached
        && match (&cached.compiled.table, &table) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
        && cached.database == database
        && cached.collation == collation
        && cached.only_full_group_by == only_full_group_by
    {
        return Ok(cached);
    }
    Ok(CachedSelect {
        compiled: Arc::new(compile_select(session, select, order_by, table, alias)?),
        database,
        collation,
        only_full_group_by,
    })
}

fn compile_select(
    session: &mut Session,
    select: &ast::Select,
    order_by: &[ast::OrderByExpr],
    table: Option<Arc<SqlTable>>,
    alias: Option<String>,
) -> Result<CompiledSelect, SqlError> {
    // Expand * into the table's columns.
    let mut items: Vec<(Expr, Option<String>)> = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) => items.push((expr.clone(), None)),
            SelectItem::ExprWithAlias { expr, alias } => {
                items.push((expr.clone(), Some(alias.value.clone())))
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                let Some(table) = &table else {
                    return Err(SqlError::new(1096, "No tables used"));
                };
                for (_, column) in table.visible() {
                    items.push((Expr::Identifier(ast::Ident::new(column.name.clone())), None));
                }
            }
            other => return Err(SqlError::unsupported(format!("select item {other}"))),
        }
    }
    let group_by_exprs: Vec<Expr> = match &select.group_by {
        ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs.clone(),
        ast::GroupByExpr::Expressions(..) => {
            return Err(SqlError::unsupported("GROUP BY modifiers (WITH ROLLUP)"));
        }
        ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    // Resolve GROUP BY and ORDER BY items that name a select alias or a
    // position to the select item's expression.
    let resolve_item = |expr: &Expr| -> Result<Expr, SqlError> {
        if let Expr::Value(value) = expr
            && let ast::Value::Number(n, _) = &value.value
        {
            let position: usize = n.parse().unwrap_or(0);
            return items
                .get(position.wrapping_sub(1))
                .map(|(e, _)| e.clone())
                .ok_or_else(|| {
                    SqlError::new(1054, format!("Unknown column '{n}' in 'order clause'"))
                });
        }
        if let Expr::Identifier(ident) = expr {
            let is_column = table
                .as_ref()
                .is_some_and(|t| t.column_position(&ident.value).is_some());
            if !is_column
                && let Some((e, _)) = items.iter().find(|(_, alias)| {
                    alias
                        .as_ref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&ident.value))
                })
            {
                return Ok(e.clone());
            }
        }
        Ok(expr.clone())
    };
    let group_by_exprs: Vec<Expr> = group_by_exprs
        .iter()
        .map(&resolve_item)
        .collect::<Result<_, _>>()?;
    // Inside HAVING and ORDER BY expressions a select alias that is not a
    // column stands for its expression.
    let alias_of = |ident: &ast::Ident| -> Option<Expr> {
        if table
            .as_ref()
            .is_some_and(|t| t.column_position(&ident.value).is_some())
        {
            return None;
        }
        items
            .iter()
            .find(|(_, alias)| {
                alias
                    .as_ref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(&ident.value))
            })
            .map(|(e, _)| e.clone())
    };
    let order_by_exprs: Vec<(Expr, bool)> = order_by
        .iter()
        .map(|o| {
            let descending = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            resolve_item(&o.expr).map(|e| (map_identifiers(&e, &alias_of), descending))
        })
        .collect::<Result<_, _>>()?;
    let having_expr = select
        .having
        .as_ref()
        .map(&resolve_item)
        .transpose()?
        .map(|h| map_identifiers(&h, &alias_of));
    if (!group_by_exprs.is_empty() || items.iter().any(|(e, _)| contains_aggregate(e)))
        && let Some(table) = &table
        && session.sql_mode_has("ONLY_FULL_GROUP_BY")
    {
        check_full_group_by(table, alias.as_deref(), &items, &group_by_exprs)?;
    }
    let mut aggregate_functions = Vec::new();
    for (expr, _) in &items {
        collect_aggregates(expr, &mut aggregate_functions);
    }
    if let Some(having) = &having_expr {
        collect_aggregates(having, &mut aggregate_functions);
    }
    for (expr, _) in &order_by_exprs {
        collect_aggregates(expr, &mut aggregate_functions);
    }
    let grouped = !aggregate_functions.is_empty() || !group_by_exprs.is_empty();
    // The row a compiled expression sees: the table's columns, then (when
    // grouped) the aggregates' values.
    let Some(table_ref) = table.as_deref() else {
        return compile_without_table(
            session.database.clone(),
            expression::collation_by_name(&session.session_text("collation_connection"))
                .unwrap_or(expression::CONNECTION_COLLATION),
            items,
            aggregate_functions,
            select,
            order_by_exprs,
            having_expr,
        );
    };
    let mut row_scope = TableScope::new(table_ref, alias.clone(), "where clause");
    row_scope.connection_collation = session.connection_collation();
    let condition = select
        .selection
        .as_ref()
        .map(|c| expression::compile(c, &row_scope))
        .transpose()?;
    row_scope.clause = "field list";
    let mut aggregates = Vec::with_capacity(aggregate_functions.len());
    let mut aggregate_keys = Vec::with_capacity(aggregate_functions.len());
    for function in &aggregate_functions {
        let call = expression::compile_aggregate(function, &row_scope)?;
        aggregate_keys.push((expression::aggregate_key(function), call.sql_type.clone()));
        aggregates.push(call);
    }
    row_scope.clause = "group statement";
    let group_by = group_by_exprs
        .iter()
        .map(|e| expression::compile(e, &row_scope))
        .collect::<Result<Vec<_>, _>>()?;
    let mut scope = TableScope::new(table_ref, alias.clone(), "field list");
    scope.connection_collation = session.connection_collation();
    scope.aggregates = aggregate_keys.clone();
    let mut outputs = Vec::with_capacity(items.len());
    for (expr, item_alias) in &items {
        let expression = expression::compile(expr, &scope)?;
        let name = item_alias.clone().unwrap_or_else(|| item_name(expr));
        let definition = match expression.column() {
            Some(position) if position < table_ref.def().columns.len() => {
                column_definition(table_ref, alias.as_deref(), position, &name)
            }
            _ => expression_column(&name, expression.sql_type()),
        };
        outputs.push(OutputColumn {
            expression,
            definition,
        });
    }
    scope.clause = "having clause";
    let having = having_expr
        .as_ref()
        .map(|h| expression::compile(h, &scope))
        .transpose()?;
    scope.clause = "order clause";
    let order_by = order_by_exprs
        .iter()
        .map(|(e, descending)| {
            expression::compile(e, &scope).map(|c| (expression::ordering_key(c), *descending))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut compiled = CompiledSelect {
        table,
        alias,
        outputs,
        aggregates,
        aggregate_keys,
        grouped,
        group_by,
        having,
        condition,
        order_by,
        moved: Vec::new(),
    };
    compiled.moved = moved_columns(&compiled);
    Ok(compiled)
}

/// A SELECT without FROM: one row of constants (or one group).
fn compile_without_table(
    database: Option<String>,
    collation: schema::Collation,
    items: Vec<(Expr, Option<String>)>,
    aggregate_functions: Vec<ast::Function>,
    select: &ast::Select,
    order_by_exprs: Vec<(Expr, bool)>,
    having_expr: Option<Expr>,
) -> Result<CompiledSelect, SqlError> {
    struct NoTableScope {
        aggregates: Vec<(String, SqlType)>,
        database: Option<String>,
        collation: schema::Collation,
    }
    impl Scope for NoTableScope {
        fn connection_collation(&self) -> schema::Collation {
            self.collation
        }
        fn database(&self) -> Option<String> {
            self.database.clone()
        }

        fn column(
            &self,
            qualifier: Option<&str>,
            name: &str,
        ) -> Result<(usize, SqlType), SqlError> {
            ConstantScope {
                database: None,
                connection_collation: self.collation,
            }
            .column(qualifier, name)
        }
        fn aggregate(&self, call: &ast::Function) -> Option<(usize, SqlType)> {
            let key = expression::aggregate_key(call);
            self.aggregates
                .iter()
                .position(|(k, _)| *k == key)
                .map(|i| (i, self.aggregates[i].1.clone()))
        }
    }
    let mut aggregates = Vec::new();
    let mut aggregate_keys = Vec::new();
    for function in &aggregate_functions {
        let call = expression::compile_aggregate(
            function,
            &ConstantScope {
                database: database.clone(),
                connection_collation: collation,
            },
        )?;
        aggregate_keys.push((expression::aggregate_key(function), call.sql_type.clone()));
        aggregates.push(call);
    }
    let scope = NoTableScope {
        collation,
        aggregates: aggregate_keys.clone(),
        database: database.clone(),
    };
    let condition = select
        .selection
        .as_ref()
        .map(|c| {
            expression::compile(
                c,
                &ConstantScope {
                    database: database.clone(),
                    connection_collation: collation,
                },
            )
        })
        .transpose()?;
    let mut outputs = Vec::new();
    for (expr, alias) in items {
        let expression = expression::compile(&expr, &scope)?;
        let name = alias.clone().unwrap_or_else(|| item_name(&expr));
        let definition = expression_column(&name, expression.sql_type());
        outputs.push(OutputColumn {
            expression,
            definition,
        });
    }
    let having = having_expr
        .as_ref()
        .map(|h| expression::compile(h, &scope))
        .transpose()?;
    let order_by = order_by_exprs
        .iter()
        .map(|(e, d)| expression::compile(e, &scope).map(|c| (c, *d)))
        .collect::<Result<Vec<_>, _>>()?;
    let outputs_len = outputs.len();
    Ok(CompiledSelect {
        table: None,
        alias: None,
        grouped: !aggregates.is_empty(),
        outputs,
        aggregates,
        aggregate_keys,
        group_by: Vec::new(),
        having,
        condition,
        order_by,
        // Without a table there is no row to take values from.
        moved: vec![None; outputs_len],
    })
}

/// The column definitions a prepared SELECT will return.
pub fn prepared_columns(session: &mut Session, parsed: &Parsed) -> Option<Vec<ColumnDefinition>> {
    let Parsed::Sql { statement, .. } = parsed else {
        return None;
    };
    let ast::Statement::Query(query) = statement.as_ref() else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let order_by = order_by_items(query);
    let (table, alias) = select_table(session, select).ok()?;
    let compiled = compile_select(session, select, &order_by, table, alias).ok()?;
    Some(compiled.outputs.into_iter().map(|o| o.definition).collect())
}

fn order_by_items(query: &ast::Query) -> Vec<ast::OrderByExpr> {
    match &query.order_by {
        Some(ast::OrderBy {
            kind: ast::OrderByKind::Expressions(items),
            ..
        }) => items.clone(),
        _ => Vec::new(),
    }
}

/// Runs a query.
pub fn run(session: &mut Session, query: &ast::Query, share_lock: bool) -> StatementResult {
    // A prepared statement's outermost SELECT keeps its compiled form
    // (`Session::prepared_select`); the slot is taken first, so no nested
    // query sees it.
    let slot = session.prepared_select.take();
    if query.with.is_some() {
        return Err(SqlError::unsupported("WITH (common table expressions)"));
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(select) => select,
        SetExpr::Query(inner) => return run(session, inner, share_lock),
        SetExpr::SetOperation { .. } => return run_union(session, query),
        _ => {
            return Err(SqlError::unsupported(
                "INTERSECT, EXCEPT and VALUES statements",
            ));
        }
    };
    let lock = if query
        .locks
        .iter()
        .any(|l| l.lock_type == ast::LockType::Update)
    {
        LockMode::Exclusive
    } else if share_lock
        || query
            .locks
            .iter()
            .any(|l| l.lock_type == ast::LockType::Share)
    {
        LockMode::Shared
    } else {
        LockMode::Committed
    };
    let order_by = order_by_items(query);
    // Uncorrelated subqueries run first; their results become literals.
    let materialized;
    let has_subquery = select_has_subquery(select);
    let select = if has_subquery {
        materialized = materialize_select(session, select)?;
        &materialized
    } else {
        select
    };
    let compiled = match slot {
        Some(cached) if !has_subquery => {
            let cached = compile_select_cached(session, select, &order_by, cached)?;
            let compiled = Arc::clone(&cached.compiled);
            session.prepared_select = Some(Some(cached));
            compiled
        }
        _ => {
            let (table, alias) = select_table(session, select)?;
            Arc::new(compile_select(session, select, &order_by, table, alias)?)
        }
    };
    let (offset, limit) = limits(session, query.limit_clause.as_ref())?;
    let calc_found_rows = select
        .select_modifiers
        .as_ref()
        .is_some_and(|m| m.sql_calc_found_rows);
    let distinct = matches!(select.distinct, Some(ast::Distinct::Distinct));
    // Base rows: the table's (filtered), or one empty row.
    let mut base_rows: Vec<Vec<SqlValue>> = Vec::new();
    // The rows came in ORDER BY order from an ordered index.
    let mut sorted_by_index = false;
    match &compiled.table {
        None => {
            let keep = match &compiled.condition {
                Some(condition) => plan::holds(session, condition, &[])?,
                None => true,
            };
            if keep {
                base_rows.push(Vec::new());
            }
        }
        Some(table) => {
            let mut access = plan::choose_access(
                session,
                table,
                compiled.alias.as_deref(),
                select.selection.as_ref(),
            )?;
            let simple =
                !compiled.grouped && compiled.having.is_none() && !distinct && !calc_found_rows;
            // ORDER BY an ordered index's leading columns: the index gives
            // the order, and a LIMIT stops the scan.
            let ordered = if simple {
                index_order(table, &compiled.order_by, &mut access)
            } else {
                None
            };
            let early_limit = (simple && (compiled.order_by.is_empty() || ordered.is_some()))
                .then(|| limit.map(|l| (l + offset) as usize))
                .flatten();
            if ordered.is_some() {
                sorted_by_index = true;
            }
            let hint_key = match &access {
                Access::PrimaryKey(keys) if keys.len() == 1 => Some(keys[0].clone()),
                _ => None,
            };
            // One committed row read that commits on its own: any
            // replica's node may serve it.
            let committed_read = lock == LockMode::Committed && session.statement_commits();
            let transaction =
                session.take_transaction(hint_key.as_ref().map(|key| shoal_client::Hint {
                    table: &table.route,
                    key,
                    committed_read,
                }))?;
            let mut projection = compiled.columns_read(table);
            if let Access::Range { index, .. } = &access
                && ordered.is_some()
            {
                // The merge of the fragments' rows orders by them.
                for &column in &table.def().ordered_indexes[*index as usize].columns {
                    if !projection.contains(&column) {
                        projection.push(column);
                    }
                }
            }
            // With a limit the condition is checked as rows arrive, so the
            // scan stops after enough rows that hold; otherwise below.
            let condition_in_fetch = early_limit.is_some();
            let mut fetched: Vec<Vec<SqlValue>> = Vec::new();
            let transaction = plan::fetch(
                session,
                table,
                &access,
                lock,
                transaction,
                true,
                &plan::FetchOptions {
                    projection: Some(&projection),
                    limit: early_limit,
                    ordered,
                    condition: compiled.condition.as_ref().filter(|_| condition_in_fetch),
                },
                &mut fetched,
            )?;
            session.finish_statement(transaction)?;
            if fetched.len() > STATEMENT_ROWS_MAX {
                return Err(too_many_rows());
            }
            match &compiled.condition {
                Some(condition) if !condition_in_fetch => {
                    base_rows.reserve(fetched.len());
                    for row in fetched {
                        if plan::holds(session, condition, &row)? {
                            base_rows.push(row);
                        }
                    }
                }
                _ => base_rows = fetched,
            }
        }
    }
    // Grouping: one row per group, the group's first row then the
    // aggregates' values.
    let rows: Vec<Vec<SqlValue>> = if compiled.grouped {
        group(session, &compiled, base_rows)?
    } else {
        base_rows
    };
    // HAVING, projection and sort keys.
    let mut projected: Vec<(Vec<SqlValue>, Vec<SqlValue>)> = Vec::with_capacity(rows.len());
    for mut row in rows {
        if let Some(having) = &compiled.having
            && !plan::holds(session, having, &row)?
        {
            continue;
        }
        let mut values = Vec::with_capacity(compiled.outputs.len());
        for (output, moved) in compiled.outputs.iter().zip(&compiled.moved) {
            values.push(match *moved {
                Some(slot) => std::mem::replace(&mut row[slot], SqlValue::Null),
                None => expression::evaluate(&output.expression, &row, session)?,
            });
        }
        let mut keys = Vec::with_capacity(compiled.order_by.len());
        for (expression, _) in &compiled.order_by {
            keys.push(expression::evaluate(expression, &row, session)?);
        }
        projected.push((values, keys));
    }
    if !compiled.order_by.is_empty() && !sorted_by_index {
        let collations: Vec<_> = compiled
            .order_by
            .iter()
            .map(|(e, d)| (e.sql_type().collation, *d))
            .collect();
        projected.sort_by(|(_, a), (_, b)| compare_keys(a, b, &collations));
    }
    let mut values: Vec<Vec<SqlValue>> = projected.into_iter().map(|(v, _)| v).collect();
    if distinct {
        let types: Vec<SqlType> = compiled
            .outputs
            .iter()
            .map(|o| o.expression.sql_type().clone())
            .collect();
        let mut seen = std::collections::HashSet::new();
        let mut key = Vec::new();
        values.retain(|row| {
            key.clear();
            for (value, sql_type) in row.iter().zip(&types) {
                expression::group_key(value, sql_type, &mut key);
                key.push(0xff);
            }
            seen.insert(key.clone())
        });
    }
    let total = values.len() as u64;
    let start = (offset as usize).min(values.len());
    let end = match limit {
        Some(limit) => start.saturating_add(limit as usize).min(values.len()),
        None => values.len(),
    };
    let values: Vec<Vec<SqlValue>> = values.drain(start..end).collect();
    session.found_rows = if calc_found_rows {
        total
    } else {
        values.len() as u64
    };
    let mut types: Vec<SqlType> = compiled
        .outputs
        .iter()
        .map(|o| o.expression.sql_type().clone())
        .collect();
    let mut columns: Vec<ColumnDefinition> = compiled
        .outputs
        .iter()
        .map(|o| o.definition.clone())
        .collect();
    // A bare `?` is typed by the value bound to it (MySQL types the column
    // at execute time): an integer parameter comes back as an integer.
    for ((column, output), sql_type) in columns.iter_mut().zip(&compiled.outputs).zip(&mut types) {
        let Some(index) = output.expression.parameter() else {
            continue;
        };
        if let Some(value) = session.parameters.get(index)
            && let Some(value_type) = type_of_value(value)
        {
            *column = expression_column(&column.name, &value_type);
            *sql_type = value_type;
        }
    }
    Ok(Outcome::Rows(ResultSet {
        columns,
        types,
        rows: values,
    }))
}

/// For each output, the row slot it can take its value from instead of a
/// copy: a bare column of a table row that nothing else of the query reads
/// (no other output, sort key or HAVING). A grouped row's slots are the
/// group's, so grouped queries copy.
fn moved_columns(compiled: &CompiledSelect) -> Vec<Option<usize>> {
    let width = match &compiled.table {
        Some(table) if !compiled.grouped => table.def().columns.len(),
        _ => return vec![None; compiled.outputs.len()],
    };
    let mut read_elsewhere = vec![false; width];
    let mut bare = vec![0u32; width];
    for output in &compiled.outputs {
        match output.expression.column() {
            Some(slot) if slot < width => bare[slot] += 1,
            _ => output.expression.mark_columns(&mut read_elsewhere),
        }
    }
    for (expression, _) in &compiled.order_by {
        expression.mark_columns(&mut read_elsewhere);
    }
    if let Some(having) = &compiled.having {
        having.mark_columns(&mut read_elsewhere);
    }
    compiled
        .outputs
        .iter()
        .map(|output| {
            output
                .expression
                .column()
                .filter(|&slot| slot < width && bare[slot] == 1 && !read_elsewhere[slot])
        })
        .collect()
}

/// The rows of one side of a UNION, without ORDER BY or LIMIT of its own
/// unless it is a parenthesized query.
fn union_side(session: &mut Session, body: &SetExpr) -> Result<ResultSet, SqlError> {
    let query = ast::Query {
        with: None,
        body: Box::new(body.clone()),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    };
    match body {
        SetExpr::Query(inner) => match run(session, inner, false)? {
            Outcome::Rows(result) => Ok(result),
            Outcome::Done { .. } => Err(SqlError::syntax("a UNION side must return rows")),
        },
        SetExpr::SetOperation { .. } => union_rows(session, body),
        _ => match run(session, &query, false)? {
            Outcome::Rows(result) => Ok(result),
            Outcome::Done { .. } => Err(SqlError::syntax("a UNION side must return rows")),
        },
    }
}

/// UNION [ALL|DISTINCT] of two sides: the left side's columns; DISTINCT
/// (the default) drops repeated rows.
fn union_rows(session: &mut Session, body: &SetExpr) -> Result<ResultSet, SqlError> {
    let SetExpr::SetOperation {
        op,
        set_quantifier,
        left,
        right,
    } = body
    else {
        return union_side(session, body);
    };
    if *op != ast::SetOperator::Union {
        return Err(SqlError::unsupported(format!("{op}")));
    }
    let mut result = union_side(session, left)?;
    let right = union_side(session, right)?;
    if right.columns.len() != result.columns.len() {
        return Err(SqlError::new(
            1222,
            "The used SELECT statements have a different number of columns",
        ));
    }
    result.rows.extend(right.rows);
    if result.rows.len() > STATEMENT_ROWS_MAX {
        return Err(too_many_rows());
    }
    let distinct = !matches!(set_quantifier, ast::SetQuantifier::All);
    if distinct {
        let mut seen = std::collections::HashSet::new();
        let mut key = Vec::new();
        let types = result.types.clone();
        result.rows.retain(|row| {
            key.clear();
            for (value, sql_type) in row.iter().zip(&types) {
                expression::group_key(value, sql_type, &mut key);
                key.push(0xff);
            }
            seen.insert(key.clone())
        });
    }
    Ok(result)
}

/// A UNION query: its sides, then its ORDER BY (by position or output
/// column name) and LIMIT.
fn run_union(session: &mut Session, query: &ast::Query) -> StatementResult {
    let mut result = union_rows(session, &query.body)?;
    let order_by = order_by_items(query);
    if !order_by.is_empty() {
        let mut keys = Vec::with_capacity(order_by.len());
        for item in &order_by {
            let position = match &item.expr {
                Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => {
                        n.parse::<usize>().ok().and_then(|p| p.checked_sub(1))
                    }
                    _ => None,
                },
                Expr::Identifier(ident) => result
                    .columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&ident.value)),
                _ => None,
            };
            let position = position
                .filter(|p| *p < result.columns.len())
                .ok_or_else(|| {
                    SqlError::new(
                        1054,
                        format!("Unknown column '{}' in 'order clause'", item.expr),
                    )
                })?;
            let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            keys.push((position, result.types[position].collation, descending));
        }
        let orders: Vec<_> = keys.iter().map(|(_, c, d)| (*c, *d)).collect();
        result.rows.sort_by(|a, b| {
            let a: Vec<SqlValue> = keys.iter().map(|(p, _, _)| a[*p].clone()).collect();
            let b: Vec<SqlValue> = keys.iter().map(|(p, _, _)| b[*p].clone()).collect();
            compare_keys(&a, &b, &orders)
        });
    }
    let (offset, limit) = limits(session, query.limit_clause.as_ref())?;
    let start = (offset as usize).min(result.rows.len());
    let end = match limit {
        Some(limit) => start.saturating_add(limit as usize).min(result.rows.len()),
        None => result.rows.len(),
    };
    result.rows = result.rows.drain(start..end).collect();
    session.found_rows = result.rows.len() as u64;
    Ok(Outcome::Rows(result))
}

/// Whether a SELECT's items, WHERE or HAVING hold a subquery.
fn select_has_subquery(select: &ast::Select) -> bool {
    let mut found = false;
    let mut visit = |e: &Expr| {
        if matches!(
            e,
            Expr::Subquery(_)
                | Expr::Exists { .. }
                | Expr::In {
                    target: ast::InTarget::Subquery(_),
                    ..
                }
        ) {
            found = true;
        }
    };
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            walk(e, &mut visit);
        }
    }
    if let Some(e) = &select.selection {
        walk(e, &mut visit);
    }
    if let Some(e) = &select.having {
        walk(e, &mut visit);
    }
    found
}

/// `select` with its subqueries run and replaced by their results.
fn materialize_select(
    session: &mut Session,
    select: &ast::Select,
) -> Result<ast::Select, SqlError> {
    let mut select = select.clone();
    for item in &mut select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                // The column keeps the subquery's text as its name.
                let name = e.to_string();
                let value = materialize_subqueries(session, e)?;
                if value != *e {
                    *item = SelectItem::ExprWithAlias {
                        expr: value,
                        alias: ast::Ident::new(name),
                    };
                }
            }
            SelectItem::ExprWithAlias { expr, .. } => {
                *expr = materialize_subqueries(session, expr)?
            }
            _ => {}
        }
    }
    if let Some(e) = &select.selection {
        select.selection = Some(materialize_subqueries(session, e)?);
    }
    if let Some(e) = &select.having {
        select.having = Some(materialize_subqueries(session, e)?);
    }
    Ok(select)
}

/// A literal of `value`, for a subquery's result.
fn literal_of(value: &SqlValue, sql_type: &SqlType) -> Expr {
    let literal = match value {
        SqlValue::Null => ast::Value::Null,
        SqlValue::Int(v) => ast::Value::Number(v.to_string(), false),
        SqlValue::UInt(v) => ast::Value::Number(v.to_string(), false),
        SqlValue::Decimal(_) | SqlValue::Double(_) => {
            let mut text = Vec::new();
            crate::value::write_text(value, sql_type, &mut text);
            ast::Value::Number(String::from_utf8_lossy(&text).into_owned(), false)
        }
        _ => {
            let mut text = Vec::new();
            crate::value::write_text(value, sql_type, &mut text);
            ast::Value::SingleQuotedString(String::from_utf8_lossy(&text).into_owned())
        }
    };
    Expr::Value(literal.into())
}

fn subquery_rows(session: &mut Session, query: &ast::Query) -> Result<ResultSet, SqlError> {
    match run(session, query, false)? {
        Outcome::Rows(result) => {
            if result.columns.len() != 1 {
                return Err(SqlError::new(1241, "Operand should contain 1 column(s)"));
            }
            Ok(result)
        }
        Outcome::Done { .. } => Err(SqlError::syntax("a subquery must return rows")),
    }
}

/// `expr` with each uncorrelated subquery run once and replaced by its
/// result: a scalar subquery by its value (1242 for more than one row),
/// `IN (SELECT ...)` by the list of values, `EXISTS` by TRUE or FALSE. A
/// subquery that names the outer query's columns is refused by the
/// subquery itself (1054): correlated subqueries come with the next
/// planner.
pub fn materialize_subqueries(session: &mut Session, expr: &Expr) -> Result<Expr, SqlError> {
    let again = |session: &mut Session, e: &Expr| materialize_subqueries(session, e).map(Box::new);
    Ok(match expr {
        Expr::Subquery(query) => {
            let result = subquery_rows(session, query)?;
            match result.rows.len() {
                0 => Expr::Value(ast::Value::Null.into()),
                1 => literal_of(&result.rows[0][0], &result.types[0]),
                _ => return Err(SqlError::new(1242, "Subquery returns more than 1 row")),
            }
        }
        Expr::Exists { subquery, negated } => {
            let found = match run(session, subquery, false)? {
                Outcome::Rows(result) => !result.rows.is_empty(),
                Outcome::Done { .. } => false,
            };
            Expr::Value(ast::Value::Boolean(found != *negated).into())
        }
        Expr::In {
            expr: inner,
            target: ast::InTarget::Subquery(query),
            negated,
            global,
        } => {
            let result = subquery_rows(session, query)?;
            let inner = again(session, inner)?;
            if result.rows.is_empty() {
                // Nothing is IN an empty set.
                return Ok(Expr::Value(ast::Value::Boolean(*negated).into()));
            }
            Expr::In {
                expr: inner,
                target: ast::InTarget::List(
                    result
                        .rows
                        .iter()
                        .map(|row| literal_of(&row[0], &result.types[0]))
                        .collect(),
                ),
                negated: *negated,
                global: *global,
            }
        }
        Expr::BinaryOp { left, op, right } => Expr::BinaryOp {
            left: again(session, left)?,
            op: op.clone(),
            right: again(session, right)?,
        },
        Expr::UnaryOp { op, expr: inner } => Expr::UnaryOp {
            op: *op,
            expr: again(session, inner)?,
        },
        Expr::Nested(inner) => Expr::Nested(again(session, inner)?),
        Expr::IsNull(inner) => Expr::IsNull(again(session, inner)?),
        Expr::IsNotNull(inner) => Expr::IsNotNull(again(session, inner)?),
        Expr::Between {
            expr: inner,
            negated,
            low,
            high,
        } => Expr::Between {
            expr: again(session, inner)?,
            negated: *negated,
            low: again(session, low)?,
            high: again(session, high)?,
        },
        Expr::Function(function) => {
            let mut function = function.clone();
            if let ast::FunctionArguments::List(list) = &mut function.args {
                for argument in &mut list.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = argument {
                        *e = materialize_subqueries(session, e)?;
                    }
                }
            }
            Expr::Function(function)
        }
        other => other.clone(),
    })
}

/// The column type a value of its own calls for.
fn type_of_value(value: &SqlValue) -> Option<SqlType> {
    Some(match value {
        SqlValue::Null => return None,
        SqlValue::Int(_) => SqlType::integer(21, false),
        SqlValue::UInt(_) => SqlType::integer(20, true),
        SqlValue::Double(_) => SqlType::double(),
        SqlValue::Decimal(d) => SqlType::decimal(38, d.scale, false),
        SqlValue::String(bytes) => {
            SqlType::string(bytes.len() as u32, expression::CONNECTION_COLLATION)
        }
        SqlValue::Date(_) => SqlType::date(),
        SqlValue::Datetime(d) => SqlType::datetime(if d.microsecond == 0 { 0 } else { 6 }),
        SqlValue::Time(_) => return None,
    })
}

fn too_many_rows() -> SqlError {
    SqlError::new(
        1114,
        format!(
            "The statement holds more than {STATEMENT_ROWS_MAX} rows in the SQL node; add a WHERE or LIMIT"
        ),
    )
}

/// Groups `rows` by the GROUP BY keys and runs the aggregates.
fn group(
    session: &mut Session,
    compiled: &CompiledSelect,
    rows: Vec<Vec<SqlValue>>,
) -> Result<Vec<Vec<SqlValue>>, SqlError> {
    let width = compiled.table.as_ref().map_or(0, |t| t.def().columns.len());
    let group_types: Vec<SqlType> = compiled
        .group_by
        .iter()
        .map(|e| e.sql_type().clone())
        .collect();
    let mut groups: Vec<(Vec<SqlValue>, Vec<Accumulator>)> = Vec::new();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut key = Vec::new();
    let mut arguments = Vec::new();
    for row in rows {
        key.clear();
        for (expression, sql_type) in compiled.group_by.iter().zip(&group_types) {
            let value = expression::evaluate(expression, &row, session)?;
            expression::group_key(&value, sql_type, &mut key);
            key.push(0xff);
        }
        let position = match index.get(&key) {
            Some(&p) => p,
            None => {
                let accumulators = compiled.aggregates.iter().map(Accumulator::new).collect();
                groups.push((row.clone(), accumulators));
                index.insert(key.clone(), groups.len() - 1);
                groups.len() - 1
            }
        };
        let accumulators = &mut groups[position].1;
        for (accumulator, call) in accumulators.iter_mut().zip(&compiled.aggregates) {
            arguments.clear();
            for argument in &call.arguments {
                arguments.push(expression::evaluate(argument, &row, session)?);
            }
            accumulator.update(&arguments, session)?;
        }
        if groups.len() > STATEMENT_ROWS_MAX {
            return Err(too_many_rows());
        }
    }
    if groups.is_empty() && compiled.group_by.is_empty() {
        // Aggregates without GROUP BY give one row even over no rows.
        let accumulators = compiled.aggregates.iter().map(Accumulator::new).collect();
        groups.push((vec![SqlValue::Null; width], accumulators));
    }
    let _ = &compiled.aggregate_keys;
    Ok(groups
        .into_iter()
        .map(|(mut row, accumulators)| {
            row.resize(width, SqlValue::Null);
            row.extend(accumulators.iter().map(Accumulator::finish));
            row
        })
        .collect())
}

/// Compares sort keys: NULL first ascending (last descending), as MySQL.
fn compare_keys(
    a: &[SqlValue],
    b: &[SqlValue],
    orders: &[(schema::Collation, bool)],
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for ((x, y), (collation, descending)) in a.iter().zip(b).zip(orders) {
        let ordering = match (x, y) {
            (SqlValue::Null, SqlValue::Null) => Ordering::Equal,
            (SqlValue::Null, _) => Ordering::Less,
            (_, SqlValue::Null) => Ordering::Greater,
            _ => expression::compare(x, y, *collation).unwrap_or(Ordering::Equal),
        };
        let ordering = if *descending {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// The rows (stored, every column) an UPDATE or DELETE works on, locked
/// exclusively in the session's transaction, in ORDER BY order and cut at
/// LIMIT. Returns them with the transaction.
pub fn rows_to_change(
    session: &mut Session,
    table: &Arc<SqlTable>,
    alias: Option<&str>,
    selection: Option<&Expr>,
    order_by: &[ast::OrderByExpr],
    limit: Option<&Expr>,
) -> Result<(Vec<plan::StoredRow>, shoal_client::Transaction), SqlError> {
    let materialized = selection
        .map(|c| materialize_subqueries(session, c))
        .transpose()?;
    let selection = materialized.as_ref();
    let condition = selection
        .map(|c| plan::compile_condition(table, alias, c))
        .transpose()?;
    let scope = TableScope::new(table, alias.map(str::to_string), "order clause");
    let order: Vec<(Expression, bool)> = order_by
        .iter()
        .map(|o| {
            expression::compile(&o.expr, &scope)
                .map(|e| (e, matches!(o.options.sort, Some(ast::OrderBySort::Desc))))
        })
        .collect::<Result<_, _>>()?;
    let limit = limit.map(|l| row_count_value(session, l)).transpose()?;
    let access = plan::choose_access(session, table, alias, selection)?;
    let hint_key = match &access {
        Access::PrimaryKey(keys) if keys.len() == 1 => Some(keys[0].clone()),
        _ => None,
    };
    let transaction =
        session.take_transaction(hint_key.as_ref().map(|key| shoal_client::Hint {
            table: &table.route,
            key,
            committed_read: false,
        }))?;
    let mut stored = Vec::new();
    let transaction = plan::fetch(
        session,
        table,
        &access,
        LockMode::Exclusive,
        transaction,
        false,
        &plan::FetchOptions::default(),
        &mut stored,
    )?;
    if stored.len() > STATEMENT_ROWS_MAX {
        return Err(too_many_rows());
    }
    let mut kept: Vec<(plan::StoredRow, Vec<SqlValue>)> = Vec::new();
    let mut row = Vec::new();
    for stored_row in stored {
        plan::sql_row(table, &stored_row, &mut row);
        let keep = match &condition {
            Some(condition) => plan::holds(session, condition, &row)?,
            None => true,
        };
        if keep {
            let mut keys = Vec::with_capacity(order.len());
            for (expression, _) in &order {
                keys.push(expression::evaluate(expression, &row, session)?);
            }
            kept.push((stored_row, keys));
        }
    }
    if !order.is_empty() {
        let orders: Vec<_> = order
            .iter()
            .map(|(e, d)| (e.sql_type().collation, *d))
            .collect();
        kept.sort_by(|(_, a), (_, b)| compare_keys(a, b, &orders));
    }
    if let Some(limit) = limit {
        kept.truncate(limit as usize);
    }
    Ok((kept.into_iter().map(|(row, _)| row).collect(), transaction))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_sort_first_ascending_and_last_descending() {
        use std::cmp::Ordering;
        let ascending = [(schema::Collation::Binary, false)];
        let descending = [(schema::Collation::Binary, true)];
        let null = [SqlValue::Null];
        let one = [SqlValue::Int(1)];
        assert_eq!(compare_keys(&null, &one, &ascending), Ordering::Less);
        assert_eq!(compare_keys(&null, &one, &descending), Ordering::Greater);
    }
}
