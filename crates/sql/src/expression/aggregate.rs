//! Aggregate functions: COUNT, SUM, AVG, MIN, MAX, GROUP_CONCAT, BIT_AND,
//! BIT_OR, BIT_XOR and the standard deviations and variances, with MySQL's
//! result types (SUM and AVG of exact numbers are DECIMAL, AVG with 4 more
//! digits of scale; of doubles and strings, DOUBLE; MIN and MAX keep the
//! argument's type; COUNT is BIGINT). NULLs are skipped; an empty group
//! gives NULL (COUNT gives 0, BIT_AND all ones, BIT_OR and BIT_XOR 0).

use super::compare::{compare_values, group_key};
use super::compile::{
    Compiler, aggregate_collation, decimal_shape, numeric_class, numeric_operand, text_length,
};
use super::evaluate::{bits_of, decimal_of, double_of, warn};
use super::{Environment, Expression, NumericClass, Scope};
use crate::convert::error;
use crate::error::SqlError;
use crate::value::{
    DECIMAL_SCALE_MAX, DIV_PRECISION_INCREMENT, Decimal, SqlType, SqlValue, decimal_out_of_range,
    write_text,
};
use schema::Collation;
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};
use std::cmp::Ordering;
use std::collections::HashSet;

/// MySQL's `group_concat_max_len` default: longer results are cut, with
/// warning 1260.
pub const GROUP_CONCAT_MAX_LENGTH: usize = 1024;
/// Digits SUM adds to its argument's precision (MySQL's `DECIMAL_LONGLONG_DIGITS`).
const SUM_PRECISION_INCREMENT: u32 = 22;
/// MySQL's largest DECIMAL precision.
const DECIMAL_PRECISION_MAX: u32 = 65;

/// Which aggregate, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateKind {
    Count,
    CountStar,
    CountDistinct,
    Sum,
    SumDistinct,
    Avg,
    AvgDistinct,
    Min,
    Max,
    /// `GROUP_CONCAT([DISTINCT] args [ORDER BY ...] [SEPARATOR s])`: the
    /// ORDER BY expressions are appended to the arguments; `order_by`
    /// names them by argument index, with `true` for DESC.
    GroupConcat {
        distinct: bool,
        separator: Vec<u8>,
        /// How many of the arguments are concatenated (the rest are ORDER BY keys).
        values: usize,
        order_by: Vec<(usize, bool)>,
    },
    BitAnd,
    BitOr,
    BitXor,
    /// STD, STDDEV, STDDEV_POP (population) and STDDEV_SAMP (sample).
    StandardDeviation {
        sample: bool,
    },
    /// VARIANCE, VAR_POP (population) and VAR_SAMP (sample).
    Variance {
        sample: bool,
    },
}

/// A compiled aggregate call.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    pub kind: AggregateKind,
    /// Compiled against the row scope (not the aggregate scope).
    pub arguments: Vec<Expression>,
    pub sql_type: SqlType,
}

const AGGREGATE_NAMES: [&str; 16] = [
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "GROUP_CONCAT",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
];

fn function_name(call: &ast::Function) -> Option<&str> {
    match call.name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(ident)] => Some(ident.value.as_str()),
        _ => None,
    }
}

/// Whether the call is an aggregate (a window function is not one here).
pub fn is_aggregate(call: &ast::Function) -> bool {
    call.over.is_none()
        && function_name(call).is_some_and(|name| {
            AGGREGATE_NAMES
                .iter()
                .any(|aggregate| aggregate.eq_ignore_ascii_case(name))
        })
}

/// A scope that refuses nested aggregates (`SUM(COUNT(x))` is 1111).
struct RowScope<'a> {
    inner: &'a dyn Scope,
}

impl Scope for RowScope<'_> {
    fn column(&self, qualifier: Option<&str>, name: &str) -> Result<(usize, SqlType), SqlError> {
        self.inner.column(qualifier, name)
    }

    fn aggregate(&self, _call: &ast::Function) -> Option<(usize, SqlType)> {
        None
    }

    fn database(&self) -> Option<String> {
        self.inner.database()
    }

    fn enum_members(&self, slot: usize) -> Option<std::sync::Arc<[String]>> {
        self.inner.enum_members(slot)
    }

    fn connection_collation(&self) -> schema::Collation {
        self.inner.connection_collation()
    }
}

/// Compiles an aggregate call; its arguments against `scope` (the row
/// scope, not the aggregate scope).
pub fn compile_aggregate(
    call: &ast::Function,
    scope: &dyn Scope,
) -> Result<AggregateCall, SqlError> {
    let Some(name) = function_name(call) else {
        return Err(SqlError::syntax(format!("near '{call}'")));
    };
    let upper = name.to_ascii_uppercase();
    if call.over.is_some() {
        return Err(SqlError::unsupported("window functions"));
    }
    if call.filter.is_some() || !call.within_group.is_empty() {
        return Err(SqlError::syntax(format!("near '{call}'")));
    }
    let list = match &call.args {
        FunctionArguments::List(list) => list,
        _ => return Err(SqlError::syntax(format!("near '{call}'"))),
    };
    let distinct = matches!(
        list.duplicate_treatment,
        Some(ast::DuplicateTreatment::Distinct)
    );
    let row_scope = RowScope { inner: scope };
    let mut compiler = Compiler::new(&row_scope);
    let star = matches!(
        list.args.as_slice(),
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]
    );
    if star {
        if upper != "COUNT" || distinct {
            return Err(SqlError::syntax(format!("near '*' in '{call}'")));
        }
        return Ok(AggregateCall {
            kind: AggregateKind::CountStar,
            arguments: Vec::new(),
            sql_type: SqlType::integer(21, false).with_not_null(true),
        });
    }
    let mut arguments = Vec::with_capacity(list.args.len());
    for argument in &list.args {
        match argument {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => {
                arguments.push(compiler.compile(expr)?);
            }
            other => return Err(SqlError::syntax(format!("near '{other}' in '{call}'"))),
        }
    }
    let mut separator = b",".to_vec();
    let mut order_by = Vec::new();
    let values = arguments.len();
    for clause in &list.clauses {
        match clause {
            ast::FunctionArgumentClause::OrderBy(orders) if upper == "GROUP_CONCAT" => {
                for order in orders {
                    let index = arguments.len();
                    arguments.push(super::ordering_key(compiler.compile(&order.expr)?));
                    let descending = matches!(order.options.sort, Some(ast::OrderBySort::Desc));
                    order_by.push((index, descending));
                }
            }
            ast::FunctionArgumentClause::Separator(value) if upper == "GROUP_CONCAT" => {
                separator = match &value.value {
                    ast::Value::SingleQuotedString(text) | ast::Value::DoubleQuotedString(text) => {
                        text.as_bytes().to_vec()
                    }
                    other => return Err(SqlError::syntax(format!("near 'SEPARATOR {other}'"))),
                };
            }
            other => return Err(SqlError::syntax(format!("near '{other}' in '{call}'"))),
        }
    }
    let exactly_one = |arguments: &[Expression]| {
        if arguments.len() == 1 {
            Ok(())
        } else {
            Err(error(
                1582,
                format!("Incorrect parameter count in the call to native function '{name}'"),
            ))
        }
    };
    let kind = match upper.as_str() {
        "COUNT" => {
            if arguments.is_empty() {
                return Err(SqlError::syntax(format!("near '{call}'")));
            }
            if distinct {
                AggregateKind::CountDistinct
            } else {
                exactly_one(&arguments)?;
                AggregateKind::Count
            }
        }
        "SUM" => {
            exactly_one(&arguments)?;
            if distinct {
                AggregateKind::SumDistinct
            } else {
                AggregateKind::Sum
            }
        }
        "AVG" => {
            exactly_one(&arguments)?;
            if distinct {
                AggregateKind::AvgDistinct
            } else {
                AggregateKind::Avg
            }
        }
        "MIN" => {
            exactly_one(&arguments)?;
            AggregateKind::Min
        }
        "MAX" => {
            exactly_one(&arguments)?;
            AggregateKind::Max
        }
        "GROUP_CONCAT" => {
            if values == 0 {
                return Err(SqlError::syntax(format!("near '{call}'")));
            }
            AggregateKind::GroupConcat {
                distinct,
                separator,
                values,
                order_by,
            }
        }
        "BIT_AND" | "BIT_OR" | "BIT_XOR" => {
            exactly_one(&arguments)?;
            match upper.as_str() {
                "BIT_AND" => AggregateKind::BitAnd,
                "BIT_OR" => AggregateKind::BitOr,
                _ => AggregateKind::BitXor,
            }
        }
        "STD" | "STDDEV" | "STDDEV_POP" | "STDDEV_SAMP" => {
            exactly_one(&arguments)?;
            AggregateKind::StandardDeviation {
                sample: upper == "STDDEV_SAMP",
            }
        }
        _ => {
            exactly_one(&arguments)?;
            AggregateKind::Variance {
                sample: upper == "VAR_SAMP",
            }
        }
    };
    if distinct
        && !matches!(
            kind,
            AggregateKind::CountDistinct
                | AggregateKind::SumDistinct
                | AggregateKind::AvgDistinct
                | AggregateKind::GroupConcat { .. }
                | AggregateKind::Min
                | AggregateKind::Max
        )
    {
        return Err(SqlError::syntax(format!("near 'DISTINCT' in '{call}'")));
    }
    if matches!(
        kind,
        AggregateKind::Sum
            | AggregateKind::SumDistinct
            | AggregateKind::Avg
            | AggregateKind::AvgDistinct
            | AggregateKind::BitAnd
            | AggregateKind::BitOr
            | AggregateKind::BitXor
            | AggregateKind::StandardDeviation { .. }
            | AggregateKind::Variance { .. }
    ) {
        // Numeric aggregates read an ENUM as its index, a hex literal as a number.
        arguments = arguments.into_iter().map(numeric_operand).collect();
    }
    let sql_type = result_type(&kind, &arguments);
    Ok(AggregateCall {
        kind,
        arguments,
        sql_type,
    })
}

fn result_type(kind: &AggregateKind, arguments: &[Expression]) -> SqlType {
    match kind {
        AggregateKind::Count | AggregateKind::CountStar | AggregateKind::CountDistinct => {
            SqlType::integer(21, false).with_not_null(true)
        }
        AggregateKind::Sum | AggregateKind::SumDistinct => match sum_class(&arguments[0]) {
            NumericClass::Double => SqlType::double(),
            _ => {
                let (integer, scale) = decimal_shape(&arguments[0]);
                let precision = (integer + u32::from(scale) + SUM_PRECISION_INCREMENT)
                    .min(DECIMAL_PRECISION_MAX);
                SqlType::decimal(precision, scale, false)
            }
        },
        AggregateKind::Avg | AggregateKind::AvgDistinct => match sum_class(&arguments[0]) {
            NumericClass::Double => SqlType::double(),
            _ => {
                let (integer, scale) = decimal_shape(&arguments[0]);
                let scale = (scale + DIV_PRECISION_INCREMENT).min(DECIMAL_SCALE_MAX);
                let precision = (integer + u32::from(scale)).min(DECIMAL_PRECISION_MAX);
                SqlType::decimal(precision, scale, false)
            }
        },
        AggregateKind::Min | AggregateKind::Max => {
            arguments[0].sql_type.clone().with_not_null(false)
        }
        AggregateKind::GroupConcat { values, .. } => {
            let sources: Vec<&Expression> = arguments[..*values].iter().collect();
            let collation = if sources.iter().any(|source| {
                source.sql_type.collation == Collation::Binary && source.sql_type.is_string_type()
            }) {
                Collation::Binary
            } else {
                aggregate_collation(&sources)
            };
            let _ = text_length;
            SqlType {
                length: GROUP_CONCAT_MAX_LENGTH as u32,
                ..SqlType::string(0, collation)
            }
        }
        AggregateKind::BitAnd | AggregateKind::BitOr | AggregateKind::BitXor => {
            SqlType::integer(21, true).with_not_null(true)
        }
        AggregateKind::StandardDeviation { .. } | AggregateKind::Variance { .. } => {
            SqlType::double()
        }
    }
}

/// SUM and AVG add exactly unless the argument is a double or a string.
fn sum_class(argument: &Expression) -> NumericClass {
    match numeric_class(argument) {
        NumericClass::Integer | NumericClass::Unsigned | NumericClass::Decimal => {
            NumericClass::Decimal
        }
        NumericClass::Dynamic => NumericClass::Dynamic,
        NumericClass::Double => NumericClass::Double,
    }
}

#[derive(Debug, Clone)]
enum State {
    Count(i64),
    Sum {
        exact: bool,
        decimal: Decimal,
        double: f64,
        count: u64,
    },
    Extreme(Option<SqlValue>),
    GroupConcat {
        /// (ORDER BY keys, text) per row; without ORDER BY only the text.
        rows: Vec<(Vec<SqlValue>, Vec<u8>)>,
        length: usize,
        cut: bool,
        seen_rows: u64,
    },
    Bits(u64),
    Moments {
        count: u64,
        mean: f64,
        squares: f64,
    },
}

/// One group's running aggregate.
#[derive(Debug, Clone)]
pub struct Accumulator {
    kind: AggregateKind,
    argument_types: Vec<SqlType>,
    result_type: SqlType,
    collation: Collation,
    state: State,
    /// Keys of the distinct values seen (COUNT/SUM/AVG/GROUP_CONCAT DISTINCT).
    distinct: Option<HashSet<Vec<u8>>>,
}

impl Accumulator {
    /// An empty group's accumulator for the call.
    pub fn new(call: &AggregateCall) -> Accumulator {
        let exact = !matches!(call.sql_type.field_type, mysql_protocol::FieldType::Double);
        let state = match &call.kind {
            AggregateKind::Count | AggregateKind::CountStar | AggregateKind::CountDistinct => {
                State::Count(0)
            }
            AggregateKind::Sum
            | AggregateKind::SumDistinct
            | AggregateKind::Avg
            | AggregateKind::AvgDistinct => State::Sum {
                exact,
                decimal: Decimal::ZERO,
                double: 0.0,
                count: 0,
            },
            AggregateKind::Min | AggregateKind::Max => State::Extreme(None),
            AggregateKind::GroupConcat { .. } => State::GroupConcat {
                rows: Vec::new(),
                length: 0,
                cut: false,
                seen_rows: 0,
            },
            AggregateKind::BitAnd => State::Bits(u64::MAX),
            AggregateKind::BitOr | AggregateKind::BitXor => State::Bits(0),
            AggregateKind::StandardDeviation { .. } | AggregateKind::Variance { .. } => {
                State::Moments {
                    count: 0,
                    mean: 0.0,
                    squares: 0.0,
                }
            }
        };
        let distinct = matches!(
            call.kind,
            AggregateKind::CountDistinct
                | AggregateKind::SumDistinct
                | AggregateKind::AvgDistinct
                | AggregateKind::GroupConcat { distinct: true, .. }
        )
        .then(HashSet::new);
        let references: Vec<&Expression> = call.arguments.iter().collect();
        let collation = if references.is_empty() {
            Collation::Binary
        } else {
            aggregate_collation(&references[..1])
        };
        Accumulator {
            kind: call.kind.clone(),
            argument_types: call
                .arguments
                .iter()
                .map(|argument| argument.sql_type.clone())
                .collect(),
            result_type: call.sql_type.clone(),
            collation,
            state,
            distinct,
        }
    }

    /// Whether these values were seen before (for DISTINCT); records them.
    fn seen_before(&mut self, values: &[SqlValue]) -> bool {
        let Some(seen) = &mut self.distinct else {
            return false;
        };
        let mut key = Vec::with_capacity(16 * values.len());
        for (value, sql_type) in values.iter().zip(&self.argument_types) {
            group_key(value, sql_type, &mut key);
        }
        !seen.insert(key)
    }

    /// Adds one row's argument values.
    pub fn update(
        &mut self,
        arguments: &[SqlValue],
        env: &mut dyn Environment,
    ) -> Result<(), SqlError> {
        const NULL: SqlValue = SqlValue::Null;
        let first = arguments.first().unwrap_or(&NULL);
        match self.kind.clone() {
            AggregateKind::CountStar => {
                if let State::Count(count) = &mut self.state {
                    *count += 1;
                }
            }
            AggregateKind::Count => {
                if !first.is_null()
                    && let State::Count(count) = &mut self.state
                {
                    *count += 1;
                }
            }
            AggregateKind::CountDistinct => {
                if arguments.iter().any(SqlValue::is_null) || arguments.is_empty() {
                    return Ok(());
                }
                if !self.seen_before(arguments)
                    && let State::Count(count) = &mut self.state
                {
                    *count += 1;
                }
            }
            AggregateKind::Sum
            | AggregateKind::SumDistinct
            | AggregateKind::Avg
            | AggregateKind::AvgDistinct => {
                if first.is_null() {
                    return Ok(());
                }
                if matches!(
                    self.kind,
                    AggregateKind::SumDistinct | AggregateKind::AvgDistinct
                ) && self.seen_before(std::slice::from_ref(first))
                {
                    return Ok(());
                }
                let addend_exact = !matches!(first, SqlValue::Double(_) | SqlValue::String(_));
                if let State::Sum {
                    exact,
                    decimal,
                    double,
                    count,
                } = &mut self.state
                {
                    if *exact && addend_exact {
                        let value = decimal_of(first, env);
                        *decimal = decimal
                            .checked_add(value)
                            .ok_or_else(|| decimal_out_of_range("sum"))?;
                    } else if *exact {
                        // A double among exact values (a parameter): continue in doubles.
                        *exact = false;
                        *double = decimal.to_f64() + double_of(first, env);
                    } else {
                        *double += double_of(first, env);
                    }
                    *count += 1;
                }
            }
            AggregateKind::Min | AggregateKind::Max => {
                if first.is_null() {
                    return Ok(());
                }
                let wanted = if self.kind == AggregateKind::Max {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
                let collation = self.collation;
                if let State::Extreme(best) = &mut self.state {
                    let replace = match best {
                        None => true,
                        Some(current) => {
                            compare_values(first, current, collation, Some(env)) == Some(wanted)
                        }
                    };
                    if replace {
                        *best = Some(first.clone());
                    }
                }
            }
            AggregateKind::GroupConcat {
                separator,
                values,
                order_by,
                ..
            } => {
                let concatenated = &arguments[..values.min(arguments.len())];
                if concatenated.iter().any(SqlValue::is_null) || concatenated.is_empty() {
                    return Ok(());
                }
                if self.distinct.is_some() && self.seen_before(concatenated) {
                    return Ok(());
                }
                let mut text = Vec::new();
                for (value, sql_type) in concatenated.iter().zip(&self.argument_types) {
                    match value {
                        SqlValue::String(bytes) => text.extend_from_slice(bytes),
                        other => write_text(other, sql_type, &mut text),
                    }
                }
                let keys: Vec<SqlValue> = order_by
                    .iter()
                    .map(|(index, _)| arguments.get(*index).cloned().unwrap_or(SqlValue::Null))
                    .collect();
                if let State::GroupConcat {
                    rows,
                    length,
                    cut,
                    seen_rows,
                } = &mut self.state
                {
                    *seen_rows += 1;
                    let added = text.len() + if rows.is_empty() { 0 } else { separator.len() };
                    if *length + added > GROUP_CONCAT_MAX_LENGTH && !*cut {
                        *cut = true;
                        warn(
                            env,
                            1260,
                            format!("Row {seen_rows} was cut by GROUP_CONCAT()"),
                        );
                    }
                    // Without ORDER BY nothing past the limit can show.
                    if order_by.is_empty() && *length > GROUP_CONCAT_MAX_LENGTH {
                        return Ok(());
                    }
                    *length += added;
                    rows.push((keys, text));
                }
            }
            AggregateKind::BitAnd | AggregateKind::BitOr | AggregateKind::BitXor => {
                if first.is_null() {
                    return Ok(());
                }
                let bits = bits_of(first, env);
                if let State::Bits(value) = &mut self.state {
                    match self.kind {
                        AggregateKind::BitAnd => *value &= bits,
                        AggregateKind::BitOr => *value |= bits,
                        _ => *value ^= bits,
                    }
                }
            }
            AggregateKind::StandardDeviation { .. } | AggregateKind::Variance { .. } => {
                if first.is_null() {
                    return Ok(());
                }
                let number = double_of(first, env);
                if let State::Moments {
                    count,
                    mean,
                    squares,
                } = &mut self.state
                {
                    // Welford's update keeps the variance accurate in one pass.
                    *count += 1;
                    let delta = number - *mean;
                    *mean += delta / *count as f64;
                    *squares += delta * (number - *mean);
                }
            }
        }
        Ok(())
    }

    /// The group's result.
    pub fn finish(&self) -> SqlValue {
        match (&self.kind, &self.state) {
            (_, State::Count(count)) => SqlValue::Int(*count),
            (
                kind,
                State::Sum {
                    exact,
                    decimal,
                    double,
                    count,
                },
            ) => {
                if *count == 0 {
                    return SqlValue::Null;
                }
                let average = matches!(kind, AggregateKind::Avg | AggregateKind::AvgDistinct);
                match (*exact, average) {
                    (true, false) => SqlValue::Decimal(*decimal),
                    (true, true) => match decimal
                        .checked_div(Decimal::from_u64(*count), DIV_PRECISION_INCREMENT)
                    {
                        Some(quotient) => SqlValue::Decimal(quotient),
                        None => SqlValue::Double(decimal.to_f64() / *count as f64),
                    },
                    (false, false) => SqlValue::Double(*double),
                    (false, true) => SqlValue::Double(*double / *count as f64),
                }
            }
            (_, State::Extreme(best)) => best.clone().unwrap_or(SqlValue::Null),
            (
                AggregateKind::GroupConcat {
                    separator,
                    order_by,
                    ..
                },
                State::GroupConcat { rows, .. },
            ) => {
                if rows.is_empty() {
                    return SqlValue::Null;
                }
                let mut ordered: Vec<&(Vec<SqlValue>, Vec<u8>)> = rows.iter().collect();
                if !order_by.is_empty() {
                    let collations: Vec<Collation> = order_by
                        .iter()
                        .map(|(index, _)| {
                            self.argument_types
                                .get(*index)
                                .map_or(Collation::Binary, |sql_type| sql_type.collation)
                        })
                        .collect();
                    ordered.sort_by(|left, right| {
                        for (position, (_, descending)) in order_by.iter().enumerate() {
                            let (a, b) = (&left.0[position], &right.0[position]);
                            let ordering = match (a.is_null(), b.is_null()) {
                                (true, true) => Ordering::Equal,
                                (true, false) => Ordering::Less,
                                (false, true) => Ordering::Greater,
                                _ => compare_values(a, b, collations[position], None)
                                    .unwrap_or(Ordering::Equal),
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
                    });
                }
                let mut out = Vec::new();
                for (index, (_, text)) in ordered.iter().enumerate() {
                    if index > 0 {
                        out.extend_from_slice(separator);
                    }
                    out.extend_from_slice(text);
                    if out.len() >= GROUP_CONCAT_MAX_LENGTH {
                        break;
                    }
                }
                cut_at_character(
                    &mut out,
                    GROUP_CONCAT_MAX_LENGTH,
                    self.result_type.collation,
                );
                SqlValue::String(out)
            }
            (_, State::Bits(bits)) => SqlValue::UInt(*bits),
            (kind, State::Moments { count, squares, .. }) => {
                let sample = matches!(
                    kind,
                    AggregateKind::StandardDeviation { sample: true }
                        | AggregateKind::Variance { sample: true }
                );
                let divisor = if sample {
                    count.saturating_sub(1)
                } else {
                    *count
                };
                if divisor == 0 {
                    return SqlValue::Null;
                }
                let variance = (*squares / divisor as f64).max(0.0);
                if matches!(kind, AggregateKind::StandardDeviation { .. }) {
                    SqlValue::Double(variance.sqrt())
                } else {
                    SqlValue::Double(variance)
                }
            }
            _ => SqlValue::Null,
        }
    }
}

/// Cuts text to at most `limit` bytes without splitting a UTF-8 character.
fn cut_at_character(text: &mut Vec<u8>, limit: usize, collation: Collation) {
    if text.len() <= limit {
        return;
    }
    let mut end = limit;
    if matches!(collation, Collation::Utf8mb4AiCi | Collation::Utf8mb4Bin) {
        while end > 0 && text[end] & 0xC0 == 0x80 {
            end -= 1;
        }
    }
    text.truncate(end);
}
