//! Expressions: compiled once from `sqlparser`'s AST into a typed tree
//! (`compile`), then evaluated per row with MySQL 8.0's semantics
//! (`evaluate`).
//!
//! ## Compiling
//! `compile` resolves column references through a [`Scope`] (a column is
//! a slot in the row `evaluate` gets), aggregates through the slots the
//! planner gave them, and computes the static type MySQL reports in result
//! metadata (`Expression::sql_type`). Unknown functions are 1305
//! ("FUNCTION db.name does not exist", or 1046 without a database), wrong
//! argument counts 1582.
//!
//! ## Placeholders
//! `?` placeholders are numbered from 0 in the statement's textual order.
//! sqlparser gives each one as `Value::Placeholder("?")` with no number
//! (and, from pre-split tokens, no source position either), while one
//! statement's expressions are compiled one by one, so the numbering must
//! come from the statement: a placeholder written `?N` or `$N` (N from 1)
//! is parameter N−1. The session rewrites each `Token::Placeholder("?")`
//! to `Token::Placeholder(format!("?{n}"))`, n = 1, 2, … in token order,
//! before parsing (sqlparser keeps the text as given). A bare `?` is
//! numbered by its position among the bare placeholders of the one
//! expression being compiled (left to right): right only for statements
//! whose placeholders all sit in one expression.
//!
//! ## Evaluating
//! `evaluate` never panics: every runtime failure is an `Err(SqlError)`
//! with MySQL's code (1690 for overflows, 1365 when division by zero is an
//! error, ...), and MySQL's warnings go to the [`Environment`]. Division by
//! zero is NULL, with warning 1365 when `sql_mode` has
//! ERROR_FOR_DIVISION_BY_ZERO (MySQL makes it an error only in
//! INSERT/UPDATE under that mode and strict mode; the caller that stores
//! the value can check `strict()` and the warning). Literals and column references evaluate without allocating
//! (except to clone a string out of the row), and [`evaluate_borrowed`]
//! avoids even that.

pub mod aggregate;
mod cast;
mod compare;
mod compile;
pub mod dialect;
mod evaluate;
mod functions;
mod regexp;
#[cfg(test)]
mod tests;

pub use aggregate::{
    Accumulator, AggregateCall, AggregateKind, GROUP_CONCAT_MAX_LENGTH, compile_aggregate,
    is_aggregate,
};
pub use compare::{compare, compare_strings, group_key};
pub use dialect::ShoalDialect;

use crate::error::SqlError;
use crate::temporal::IntervalUnit;
use crate::value::{Datetime, SqlType, SqlValue};
use schema::Collation;
use std::borrow::Cow;
use std::sync::Arc;

/// The collation of string literals and string results with no column in
/// them: MySQL 8.0's default `collation_connection`.
pub const CONNECTION_COLLATION: Collation = Collation::Utf8mb4AiCi;

/// A warning's level, as `SHOW WARNINGS` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarningLevel {
    Note,
    Warning,
    Error,
}

/// What names resolve to while compiling.
pub trait Scope {
    /// A column reference → its slot in the row passed to `evaluate` and
    /// its type; 1054 "Unknown column 'x' in 'field list'" style errors
    /// otherwise (the scope decides the message's clause name). For
    /// `db.t.c` the qualifier is `"db.t"`.
    fn column(&self, qualifier: Option<&str>, name: &str) -> Result<(usize, SqlType), SqlError>;

    /// An aggregate call the planner already gave a slot to (matched by
    /// `aggregate_key`), or None → error 1111 "Invalid use of group function".
    fn aggregate(&self, call: &sqlparser::ast::Function) -> Option<(usize, SqlType)>;

    /// The members of the ENUM column in `slot` (a slot `column` gave
    /// out with the ENUM flag), in order: the expression layer needs them
    /// to read the member's text a row holds as its index. None (the
    /// default) leaves such a column a string everywhere.
    fn enum_members(&self, slot: usize) -> Option<Arc<[String]>> {
        let _ = slot;
        None
    }

    /// `@@collation_connection`: the collation of string literals (so
    /// that after `SET NAMES utf8mb4 COLLATE utf8mb4_bin`, `'a' = 'A'` is
    /// false). The default is MySQL 8.0's.
    fn connection_collation(&self) -> Collation {
        CONNECTION_COLLATION
    }

    /// The current database, for the message about an unknown function:
    /// 1305 "FUNCTION db.name does not exist", or 1046 "No database
    /// selected" when None (the default: implement it to get 1305).
    fn database(&self) -> Option<String> {
        None
    }
}

/// The session, as expressions see it while they run.
pub trait Environment {
    /// '?' placeholders, 0-based in textual order (see the module docs).
    fn parameter(&self, index: usize) -> Option<&SqlValue>;
    /// @x (NULL when unset).
    fn user_variable(&self, name: &str) -> SqlValue;
    /// `@x := value` inside an expression (`name` lower-cased, without
    /// the `@`). A session that keeps no user variables refuses it.
    fn set_user_variable(&mut self, name: &str, value: SqlValue) -> Result<(), SqlError> {
        let _ = (name, value);
        Err(SqlError::unsupported(
            "assignments to user variables (:=) inside expressions",
        ))
    }
    /// @@x / @@session.x / @@global.x; unknown → 1193.
    fn system_variable(&self, name: &str, global: bool) -> Result<SqlValue, SqlError>;
    fn last_insert_id(&self) -> u64;
    /// LAST_INSERT_ID(expr).
    fn set_last_insert_id(&mut self, value: u64);
    fn row_count(&self) -> i64;
    fn found_rows(&self) -> u64;
    /// Statement start, UTC; NOW(), CURRENT_TIMESTAMP, CURDATE...
    fn now(&self) -> Datetime;
    fn database(&self) -> Option<String>;
    /// 'root@localhost'
    fn user(&self) -> String;
    fn connection_id(&self) -> u64;
    fn strict(&self) -> bool;
    /// Level Note/Warning/Error.
    fn warn(&mut self, level: WarningLevel, code: u16, message: String);
}

/// How strongly an operand's collation binds (MySQL's coercibility):
/// lower wins when two strings meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Coercibility {
    /// `COLLATE x`.
    Explicit = 0,
    /// A column.
    Implicit = 2,
    /// USER(), VERSION() and the like.
    SystemConstant = 3,
    /// A literal, a parameter, a function of those.
    Coercible = 4,
    /// NULL and numbers.
    Numeric = 5,
}

/// A compiled expression: a typed tree ready to evaluate.
#[derive(Debug, Clone)]
pub struct Expression {
    pub(crate) node: Node,
    pub(crate) sql_type: SqlType,
    /// No column references, parameters, variables, aggregates or
    /// non-deterministic functions.
    pub(crate) constant: bool,
    pub(crate) coercibility: Coercibility,
    /// A parameter (or an expression of parameters only) whose kind is
    /// known only when it runs.
    pub(crate) dynamic: bool,
    /// A hexadecimal or bit literal, which is a number in numeric context.
    pub(crate) hex_literal: bool,
    /// An ENUM column's members (when the scope knows them): in numeric
    /// context and ORDER BY the column is its member's 1-based index.
    pub(crate) enum_members: Option<Arc<[String]>>,
}

impl Expression {
    /// The value of a lone literal, moved out (what `evaluate` would give
    /// as a copy); the expression itself when it is anything else.
    pub fn into_literal(self) -> Result<SqlValue, Expression> {
        match self.node {
            Node::Literal(value) => Ok(value),
            _ => Err(self),
        }
    }

    /// Result metadata as MySQL 8.0 reports it for this expression.
    pub fn sql_type(&self) -> &SqlType {
        &self.sql_type
    }

    /// No column refs, no params, no non-deterministic fns.
    pub fn is_constant(&self) -> bool {
        self.constant
    }

    /// Some(slot) if it is a bare column reference.
    pub fn column(&self) -> Option<usize> {
        match self.node {
            Node::Column(slot) => Some(slot),
            _ => None,
        }
    }

    /// Some(slot) if it is a bare reference to an aggregate's slot.
    pub fn aggregate_slot(&self) -> Option<usize> {
        match self.node {
            Node::Aggregate(slot) => Some(slot),
            _ => None,
        }
    }

    /// The literal's value, if the expression is a literal.
    pub fn literal(&self) -> Option<&SqlValue> {
        match &self.node {
            Node::Literal(value) => Some(value),
            _ => None,
        }
    }

    /// Some(index) if it is a bare `?` parameter.
    pub fn parameter(&self) -> Option<usize> {
        match self.node {
            Node::Parameter(index) => Some(index),
            _ => None,
        }
    }

    /// Marks in `used` every row slot the expression reads (slots beyond
    /// `used` are ignored): what a query must fetch of a table's row.
    pub fn mark_columns(&self, used: &mut [bool]) {
        let mut mark = |expression: &Expression| expression.mark_columns(used);
        // Exhaustive on purpose: a new node that reads columns must say
        // so here, or its columns would not be fetched.
        match &self.node {
            Node::Column(slot) => {
                if let Some(flag) = used.get_mut(*slot) {
                    *flag = true;
                }
            }
            Node::Literal(_)
            | Node::Aggregate(_)
            | Node::Parameter(_)
            | Node::UserVariable(_)
            | Node::SystemVariable { .. } => {}
            Node::EnumIndex { operand, .. }
            | Node::Negate { operand, .. }
            | Node::BitNot(operand)
            | Node::Not(operand)
            | Node::IsNull { operand, .. }
            | Node::IsBoolean { operand, .. }
            | Node::Cast { operand, .. } => mark(operand),
            Node::AssignUserVariable { value, .. } => mark(value),
            Node::Arithmetic { left, right, .. }
            | Node::Bitwise { left, right, .. }
            | Node::Comparison { left, right, .. }
            | Node::Logical { left, right, .. } => {
                mark(left);
                mark(right);
            }
            Node::In { operand, list, .. } => {
                mark(operand);
                list.iter().for_each(mark);
            }
            Node::Between {
                operand, low, high, ..
            } => {
                mark(operand);
                mark(low);
                mark(high);
            }
            Node::Like {
                operand,
                pattern,
                escape,
                ..
            } => {
                mark(operand);
                mark(pattern);
                if let Some(escape) = escape {
                    mark(escape);
                }
            }
            Node::Regexp {
                operand, pattern, ..
            } => {
                mark(operand);
                mark(pattern);
            }
            Node::Case {
                operand,
                branches,
                otherwise,
                ..
            } => {
                if let Some(operand) = operand {
                    mark(operand);
                }
                for (when, then) in branches {
                    mark(when);
                    mark(then);
                }
                if let Some(otherwise) = otherwise {
                    mark(otherwise);
                }
            }
            Node::DateAdd {
                operand, interval, ..
            } => {
                mark(operand);
                mark(interval);
            }
            Node::Function { arguments, .. } => arguments.iter().for_each(mark),
        }
    }
}

/// The tree. Children are boxed expressions with their own types.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Literal(SqlValue),
    Column(usize),
    /// An ENUM value (its member's text) as the member's 1-based index.
    EnumIndex {
        operand: Box<Expression>,
        members: Arc<[String]>,
    },
    Aggregate(usize),
    Parameter(usize),
    UserVariable(String),
    /// `@name := value`: stores the value and gives it.
    AssignUserVariable {
        name: String,
        value: Box<Expression>,
    },
    SystemVariable {
        name: String,
        global: bool,
    },
    Negate {
        operand: Box<Expression>,
        text: Box<str>,
    },
    BitNot(Box<Expression>),
    Not(Box<Expression>),
    Arithmetic {
        operator: ArithmeticOperator,
        class: NumericClass,
        left: Box<Expression>,
        right: Box<Expression>,
        /// The expression as MySQL names it in 1690 messages.
        text: Box<str>,
    },
    Bitwise {
        operator: BitOperator,
        left: Box<Expression>,
        right: Box<Expression>,
    },
    Comparison {
        operator: ComparisonOperator,
        left: Box<Expression>,
        right: Box<Expression>,
        collation: Collation,
    },
    Logical {
        operator: LogicalOperator,
        left: Box<Expression>,
        right: Box<Expression>,
    },
    IsNull {
        operand: Box<Expression>,
        negated: bool,
    },
    IsBoolean {
        operand: Box<Expression>,
        value: bool,
        negated: bool,
    },
    In {
        operand: Box<Expression>,
        list: Vec<Expression>,
        negated: bool,
        collation: Collation,
    },
    Between {
        operand: Box<Expression>,
        low: Box<Expression>,
        high: Box<Expression>,
        negated: bool,
        collation: Collation,
    },
    Like {
        operand: Box<Expression>,
        pattern: Box<Expression>,
        escape: Option<Box<Expression>>,
        negated: bool,
        collation: Collation,
    },
    Regexp {
        operand: Box<Expression>,
        pattern: Box<Expression>,
        /// The pattern compiled once, when it is a constant string.
        compiled: Option<Box<regexp::Regex>>,
        negated: bool,
        case_insensitive: bool,
    },
    Case {
        operand: Option<Box<Expression>>,
        branches: Vec<(Expression, Expression)>,
        otherwise: Option<Box<Expression>>,
        collation: Collation,
    },
    Cast {
        operand: Box<Expression>,
        target: cast::CastTarget,
        /// The expression as MySQL names it in warnings.
        text: Box<str>,
    },
    DateAdd {
        operand: Box<Expression>,
        interval: Box<Expression>,
        unit: IntervalUnit,
        subtract: bool,
    },
    Function {
        function: functions::Function,
        arguments: Vec<Expression>,
    },
}

/// `+ - * / DIV %`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithmeticOperator {
    Add,
    Subtract,
    Multiply,
    Divide,
    IntegerDivide,
    Modulo,
}

/// `& | ^ << >>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOperator {
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRight,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ComparisonOperator {
    Equal,
    NullSafeEqual,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogicalOperator {
    And,
    Or,
    Xor,
}

/// How arithmetic computes, from its operands' static types (MySQL's
/// result type): exact integers (signed or unsigned), exact decimals, or
/// doubles; `Dynamic` when only parameters decide (at run time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumericClass {
    Integer,
    Unsigned,
    Decimal,
    Double,
    Dynamic,
}

/// `compile`'s entry point.
pub fn compile(expr: &sqlparser::ast::Expr, scope: &dyn Scope) -> Result<Expression, SqlError> {
    compile::Compiler::new(scope).compile(expr)
}

/// Evaluates `expression` over `row` (the slots `Scope::column` and
/// `Scope::aggregate` gave out).
pub fn evaluate(
    expression: &Expression,
    row: &[SqlValue],
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    evaluate::evaluate(expression, row, env).map(Cow::into_owned)
}

/// [`evaluate`] without cloning a value that a literal or the row already
/// holds.
pub fn evaluate_borrowed<'a>(
    expression: &'a Expression,
    row: &'a [SqlValue],
    env: &mut dyn Environment,
) -> Result<Cow<'a, SqlValue>, SqlError> {
    evaluate::evaluate(expression, row, env)
}

/// An ORDER BY key: an ENUM column sorts by its member's index, as in
/// MySQL (its members' order, not their text's); anything else as it is.
pub fn ordering_key(expression: Expression) -> Expression {
    if expression.enum_members.is_some() {
        compile::numeric_operand(expression)
    } else {
        expression
    }
}

/// A WHERE/HAVING/ON condition: true only when the value is TRUE (NULL and
/// FALSE both reject the row).
pub fn evaluate_condition(
    expression: &Expression,
    row: &[SqlValue],
    env: &mut dyn Environment,
) -> Result<bool, SqlError> {
    let value = evaluate::evaluate(expression, row, env)?;
    if let Some(members) = &expression.enum_members {
        // A bare ENUM column as the condition: true for every member.
        return Ok(!value.is_null() && evaluate::enum_index(&value.to_text(), members) != 0);
    }
    Ok(evaluate::truth(&value, env) == Some(true))
}

/// The collation a `COLLATE` name stands for (also for
/// `@@collation_connection`), as CREATE TABLE stores it; None if unknown.
pub fn collation_by_name(name: &str) -> Option<Collation> {
    compile::collation_named(name)
}

/// A canonical text of the call so the planner and Scope agree: the call
/// as sqlparser prints it, with the function name upper-cased.
pub fn aggregate_key(call: &sqlparser::ast::Function) -> String {
    let mut canonical = call.clone();
    for part in &mut canonical.name.0 {
        if let sqlparser::ast::ObjectNamePart::Identifier(ident) = part {
            ident.value = ident.value.to_ascii_uppercase();
            ident.quote_style = None;
        }
    }
    canonical.to_string()
}
