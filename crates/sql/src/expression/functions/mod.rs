//! Built-in functions: the registry (names, argument counts), their MySQL
//! result types, and evaluation, by family (string, numeric, temporal,
//! control and information functions).

mod control;
mod digest;
mod numeric;
mod string;
pub(crate) mod temporal;

use super::compile::{
    Compiler, aggregate_type, all_not_null, arithmetic_expression, date_add_expression, derived,
    integer_result, literal_int, nullable_if, numeric_class, numeric_operand, string_literal,
    string_result, text_length,
};
use super::evaluate::evaluate;
use super::{
    ArithmeticOperator, CONNECTION_COLLATION, Coercibility, Environment, Expression, Node,
    NumericClass,
};
use crate::convert::error;
use crate::error::SqlError;
use crate::temporal::IntervalUnit;
use crate::value::{NOT_FIXED_DECIMALS, SqlType, SqlValue};
use mysql_protocol::FieldType;
use schema::Collation;
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, TrimWhereField};
use std::borrow::Cow;

/// Which side TRIM removes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrimSide {
    Both,
    Leading,
    Trailing,
}

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Function {
    // Strings.
    Concat,
    ConcatWs,
    Length,
    BitLength,
    CharLength,
    Upper,
    Lower,
    Substring,
    SubstringIndex,
    Left,
    Right,
    Trim(TrimSide),
    Lpad,
    Rpad,
    Replace,
    Locate,
    Instr,
    Reverse,
    Repeat,
    Space,
    Ascii,
    Ord,
    Hex,
    Unhex,
    Md5,
    Sha1,
    Sha2,
    Crc32,
    Format,
    Field,
    Elt,
    Strcmp,
    Char,
    Insert,
    FindInSet,
    Quote,
    Bin,
    Oct,
    ToBase64,
    FromBase64,
    // Numbers.
    Abs,
    Sign,
    Round,
    Truncate,
    Floor,
    Ceiling,
    Power,
    Sqrt,
    Exp,
    Ln,
    Log,
    Log2,
    Log10,
    Pi,
    Rand,
    Conv,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    BitCount,
    // Dates and times.
    Now,
    Sysdate,
    Curdate,
    Curtime,
    UtcTimestamp,
    UtcDate,
    UtcTime,
    UnixTimestamp,
    FromUnixtime,
    Date,
    Time,
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Microsecond,
    DayOfWeek,
    DayOfYear,
    Weekday,
    DayName,
    MonthName,
    LastDay,
    Week,
    WeekOfYear,
    YearWeek,
    Quarter,
    DateDiff,
    TimeDiff,
    TimestampDiff(IntervalUnit),
    DateFormat,
    TimeFormat,
    StrToDate,
    ToDays,
    FromDays,
    ToSeconds,
    Extract(IntervalUnit),
    MakeDate,
    MakeTime,
    SecToTime,
    TimeToSec,
    AddTime,
    SubTime,
    PeriodAdd,
    PeriodDiff,
    // Control flow.
    If,
    IfNull,
    NullIf,
    Coalesce,
    Greatest,
    Least,
    IsNull,
    AnyValue,
    // Information.
    Database,
    User,
    CurrentUser,
    ConnectionId,
    Version,
    LastInsertId,
    RowCount,
    FoundRows,
    Uuid,
}

/// Any number of arguments.
const MANY: usize = usize::MAX;

/// The registry: name, function, fewest and most arguments.
const REGISTRY: &[(&str, Function, usize, usize)] = &[
    ("CONCAT", Function::Concat, 1, MANY),
    ("CONCAT_WS", Function::ConcatWs, 2, MANY),
    ("LENGTH", Function::Length, 1, 1),
    ("OCTET_LENGTH", Function::Length, 1, 1),
    ("BIT_LENGTH", Function::BitLength, 1, 1),
    ("CHAR_LENGTH", Function::CharLength, 1, 1),
    ("CHARACTER_LENGTH", Function::CharLength, 1, 1),
    ("UPPER", Function::Upper, 1, 1),
    ("UCASE", Function::Upper, 1, 1),
    ("LOWER", Function::Lower, 1, 1),
    ("LCASE", Function::Lower, 1, 1),
    ("SUBSTRING", Function::Substring, 2, 3),
    ("SUBSTR", Function::Substring, 2, 3),
    ("MID", Function::Substring, 3, 3),
    ("SUBSTRING_INDEX", Function::SubstringIndex, 3, 3),
    ("LEFT", Function::Left, 2, 2),
    ("RIGHT", Function::Right, 2, 2),
    ("TRIM", Function::Trim(TrimSide::Both), 1, 1),
    ("LTRIM", Function::Trim(TrimSide::Leading), 1, 1),
    ("RTRIM", Function::Trim(TrimSide::Trailing), 1, 1),
    ("LPAD", Function::Lpad, 3, 3),
    ("RPAD", Function::Rpad, 3, 3),
    ("REPLACE", Function::Replace, 3, 3),
    ("LOCATE", Function::Locate, 2, 3),
    ("POSITION", Function::Locate, 2, 2),
    ("INSTR", Function::Instr, 2, 2),
    ("REVERSE", Function::Reverse, 1, 1),
    ("REPEAT", Function::Repeat, 2, 2),
    ("SPACE", Function::Space, 1, 1),
    ("ASCII", Function::Ascii, 1, 1),
    ("ORD", Function::Ord, 1, 1),
    ("HEX", Function::Hex, 1, 1),
    ("UNHEX", Function::Unhex, 1, 1),
    ("MD5", Function::Md5, 1, 1),
    ("SHA1", Function::Sha1, 1, 1),
    ("SHA", Function::Sha1, 1, 1),
    ("SHA2", Function::Sha2, 2, 2),
    ("CRC32", Function::Crc32, 1, 1),
    ("FORMAT", Function::Format, 2, 3),
    ("FIELD", Function::Field, 2, MANY),
    ("ELT", Function::Elt, 2, MANY),
    ("STRCMP", Function::Strcmp, 2, 2),
    ("CHAR", Function::Char, 1, MANY),
    ("INSERT", Function::Insert, 4, 4),
    ("FIND_IN_SET", Function::FindInSet, 2, 2),
    ("QUOTE", Function::Quote, 1, 1),
    ("BIN", Function::Bin, 1, 1),
    ("OCT", Function::Oct, 1, 1),
    ("TO_BASE64", Function::ToBase64, 1, 1),
    ("FROM_BASE64", Function::FromBase64, 1, 1),
    ("ABS", Function::Abs, 1, 1),
    ("SIGN", Function::Sign, 1, 1),
    ("ROUND", Function::Round, 1, 2),
    ("TRUNCATE", Function::Truncate, 2, 2),
    ("FLOOR", Function::Floor, 1, 1),
    ("CEIL", Function::Ceiling, 1, 1),
    ("CEILING", Function::Ceiling, 1, 1),
    ("POW", Function::Power, 2, 2),
    ("POWER", Function::Power, 2, 2),
    ("SQRT", Function::Sqrt, 1, 1),
    ("EXP", Function::Exp, 1, 1),
    ("LN", Function::Ln, 1, 1),
    ("LOG", Function::Log, 1, 2),
    ("LOG2", Function::Log2, 1, 1),
    ("LOG10", Function::Log10, 1, 1),
    ("PI", Function::Pi, 0, 0),
    ("RAND", Function::Rand, 0, 1),
    ("CONV", Function::Conv, 3, 3),
    ("DEGREES", Function::Degrees, 1, 1),
    ("RADIANS", Function::Radians, 1, 1),
    ("SIN", Function::Sin, 1, 1),
    ("COS", Function::Cos, 1, 1),
    ("TAN", Function::Tan, 1, 1),
    ("COT", Function::Cot, 1, 1),
    ("ASIN", Function::Asin, 1, 1),
    ("ACOS", Function::Acos, 1, 1),
    ("ATAN", Function::Atan, 1, 2),
    ("ATAN2", Function::Atan2, 2, 2),
    ("BIT_COUNT", Function::BitCount, 1, 1),
    ("NOW", Function::Now, 0, 1),
    ("CURRENT_TIMESTAMP", Function::Now, 0, 1),
    ("LOCALTIME", Function::Now, 0, 1),
    ("LOCALTIMESTAMP", Function::Now, 0, 1),
    ("SYSDATE", Function::Sysdate, 0, 1),
    ("CURDATE", Function::Curdate, 0, 0),
    ("CURRENT_DATE", Function::Curdate, 0, 0),
    ("CURTIME", Function::Curtime, 0, 1),
    ("CURRENT_TIME", Function::Curtime, 0, 1),
    ("UTC_TIMESTAMP", Function::UtcTimestamp, 0, 1),
    ("UTC_DATE", Function::UtcDate, 0, 0),
    ("UTC_TIME", Function::UtcTime, 0, 1),
    ("UNIX_TIMESTAMP", Function::UnixTimestamp, 0, 1),
    ("FROM_UNIXTIME", Function::FromUnixtime, 1, 2),
    ("DATE", Function::Date, 1, 1),
    ("TIME", Function::Time, 1, 1),
    ("YEAR", Function::Year, 1, 1),
    ("MONTH", Function::Month, 1, 1),
    ("DAY", Function::Day, 1, 1),
    ("DAYOFMONTH", Function::Day, 1, 1),
    ("HOUR", Function::Hour, 1, 1),
    ("MINUTE", Function::Minute, 1, 1),
    ("SECOND", Function::Second, 1, 1),
    ("MICROSECOND", Function::Microsecond, 1, 1),
    ("DAYOFWEEK", Function::DayOfWeek, 1, 1),
    ("DAYOFYEAR", Function::DayOfYear, 1, 1),
    ("WEEKDAY", Function::Weekday, 1, 1),
    ("DAYNAME", Function::DayName, 1, 1),
    ("MONTHNAME", Function::MonthName, 1, 1),
    ("LAST_DAY", Function::LastDay, 1, 1),
    ("WEEK", Function::Week, 1, 2),
    ("WEEKOFYEAR", Function::WeekOfYear, 1, 1),
    ("YEARWEEK", Function::YearWeek, 1, 2),
    ("QUARTER", Function::Quarter, 1, 1),
    ("DATEDIFF", Function::DateDiff, 2, 2),
    ("TIMEDIFF", Function::TimeDiff, 2, 2),
    ("DATE_FORMAT", Function::DateFormat, 2, 2),
    ("TIME_FORMAT", Function::TimeFormat, 2, 2),
    ("STR_TO_DATE", Function::StrToDate, 2, 2),
    ("TO_DAYS", Function::ToDays, 1, 1),
    ("FROM_DAYS", Function::FromDays, 1, 1),
    ("TO_SECONDS", Function::ToSeconds, 1, 1),
    ("MAKEDATE", Function::MakeDate, 2, 2),
    ("MAKETIME", Function::MakeTime, 3, 3),
    ("SEC_TO_TIME", Function::SecToTime, 1, 1),
    ("TIME_TO_SEC", Function::TimeToSec, 1, 1),
    ("ADDTIME", Function::AddTime, 2, 2),
    ("SUBTIME", Function::SubTime, 2, 2),
    ("PERIOD_ADD", Function::PeriodAdd, 2, 2),
    ("PERIOD_DIFF", Function::PeriodDiff, 2, 2),
    ("IF", Function::If, 3, 3),
    ("IFNULL", Function::IfNull, 2, 2),
    ("NULLIF", Function::NullIf, 2, 2),
    ("COALESCE", Function::Coalesce, 1, MANY),
    ("GREATEST", Function::Greatest, 2, MANY),
    ("LEAST", Function::Least, 2, MANY),
    ("ISNULL", Function::IsNull, 1, 1),
    ("ANY_VALUE", Function::AnyValue, 1, 1),
    ("DATABASE", Function::Database, 0, 0),
    ("SCHEMA", Function::Database, 0, 0),
    ("USER", Function::User, 0, 0),
    ("SESSION_USER", Function::User, 0, 0),
    ("SYSTEM_USER", Function::User, 0, 0),
    ("CURRENT_USER", Function::CurrentUser, 0, 0),
    ("CONNECTION_ID", Function::ConnectionId, 0, 0),
    ("VERSION", Function::Version, 0, 0),
    ("LAST_INSERT_ID", Function::LastInsertId, 0, 1),
    ("ROW_COUNT", Function::RowCount, 0, 0),
    ("FOUND_ROWS", Function::FoundRows, 0, 0),
    ("UUID", Function::Uuid, 0, 0),
];

fn lookup(name: &str) -> Option<(Function, usize, usize)> {
    REGISTRY
        .iter()
        .find(|(registered, ..)| registered.eq_ignore_ascii_case(name))
        .map(|&(_, function, minimum, maximum)| (function, minimum, maximum))
}

fn parameter_count_error(name: &str) -> SqlError {
    error(
        1582,
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

fn unknown_function(compiler: &Compiler<'_>, name: &str) -> SqlError {
    match compiler.scope.database() {
        Some(database) => error(1305, format!("FUNCTION {database}.{name} does not exist")),
        None => error(1046, "No database selected"),
    }
}

fn argument_expr<'e>(argument: &'e FunctionArg, name: &str) -> Result<&'e Expr, SqlError> {
    match argument {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Ok(expr),
        _ => Err(SqlError::syntax(format!(
            "near '{argument}' in the call to {name}"
        ))),
    }
}

/// A unit written as the first argument of TIMESTAMPDIFF/TIMESTAMPADD.
fn unit_argument(expr: &Expr) -> Result<IntervalUnit, SqlError> {
    let name = match expr {
        Expr::Identifier(ident) => ident.value.as_str(),
        other => return Err(SqlError::syntax(format!("near '{other}'"))),
    };
    let unit = match name.to_ascii_uppercase().as_str() {
        "FRAC_SECOND" => Some(IntervalUnit::Microsecond),
        other => IntervalUnit::from_name(other),
    };
    match unit {
        Some(unit) if !is_simple_unit(unit) => Err(SqlError::syntax(format!("near '{name}'"))),
        Some(unit) => Ok(unit),
        None => Err(SqlError::syntax(format!("near '{name}'"))),
    }
}

/// Whether the unit is a simple one (TIMESTAMPDIFF takes only those).
fn is_simple_unit(unit: IntervalUnit) -> bool {
    matches!(
        unit,
        IntervalUnit::Microsecond
            | IntervalUnit::Second
            | IntervalUnit::Minute
            | IntervalUnit::Hour
            | IntervalUnit::Day
            | IntervalUnit::Week
            | IntervalUnit::Month
            | IntervalUnit::Quarter
            | IntervalUnit::Year
    )
}

/// A function call from the AST.
pub(crate) fn compile_call(
    compiler: &mut Compiler<'_>,
    name: &str,
    arguments: &[FunctionArg],
) -> Result<Expression, SqlError> {
    let upper = name.to_ascii_uppercase();
    match upper.as_str() {
        "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" => {
            if arguments.len() != 2 {
                return Err(parameter_count_error(name));
            }
            let operand = compiler.compile(argument_expr(&arguments[0], name)?)?;
            let subtract = upper == "DATE_SUB" || upper == "SUBDATE";
            return match argument_expr(&arguments[1], name)? {
                Expr::Interval(interval) => compiler.date_add(operand, interval, subtract),
                days if upper == "ADDDATE" || upper == "SUBDATE" => {
                    // ADDDATE(d, n) adds n days.
                    let amount = compiler.compile(days)?;
                    Ok(date_add_expression(
                        operand,
                        amount,
                        IntervalUnit::Day,
                        subtract,
                    ))
                }
                other => Err(SqlError::syntax(format!("near '{other}'"))),
            };
        }
        "TIMESTAMPDIFF" | "TIMESTAMPADD" => {
            if arguments.len() != 3 {
                return Err(parameter_count_error(name));
            }
            let unit = unit_argument(argument_expr(&arguments[0], name)?)?;
            let second = compiler.compile(argument_expr(&arguments[1], name)?)?;
            let third = compiler.compile(argument_expr(&arguments[2], name)?)?;
            if upper == "TIMESTAMPADD" {
                return Ok(date_add_expression(third, second, unit, false));
            }
            return build(Function::TimestampDiff(unit), vec![second, third]);
        }
        "MOD" => {
            if arguments.len() != 2 {
                return Err(parameter_count_error(name));
            }
            let left_expr = argument_expr(&arguments[0], name)?;
            let right_expr = argument_expr(&arguments[1], name)?;
            let left = numeric_operand(compiler.compile(left_expr)?);
            let right = numeric_operand(compiler.compile(right_expr)?);
            let text = format!("({left_expr} % {right_expr})");
            return Ok(arithmetic_expression(
                ArithmeticOperator::Modulo,
                left,
                right,
                text,
            ));
        }
        "CHARSET" | "COLLATION" | "COERCIBILITY" => {
            if arguments.len() != 1 {
                return Err(parameter_count_error(name));
            }
            let argument = compiler.compile(argument_expr(&arguments[0], name)?)?;
            return Ok(describe_string(&upper, &argument));
        }
        _ => {}
    }
    let mut compiled = Vec::with_capacity(arguments.len());
    for argument in arguments {
        compiled.push(compiler.compile(argument_expr(argument, name)?)?);
    }
    compile_named_with(compiler, name, compiled)
}

/// `CHARSET(x)`, `COLLATION(x)`, `COERCIBILITY(x)`: what the argument's
/// static type says, so a constant (MySQL computes them from the type
/// too; a NULL argument is `binary`, coercibility 6).
fn describe_string(function: &str, argument: &Expression) -> Expression {
    let collation = if argument.sql_type.is_string_type() {
        argument.sql_type.collation
    } else {
        Collation::Binary
    };
    let is_null = argument.sql_type.field_type == FieldType::Null;
    let mut expression = match function {
        "COERCIBILITY" => {
            /// MySQL's DERIVATION_IGNORABLE: NULL yields to anything.
            const IGNORABLE: i64 = 6;
            let value = if is_null {
                IGNORABLE
            } else {
                argument.coercibility as i64
            };
            literal_int(value)
        }
        "CHARSET" => string_literal(
            collation.charset_name().as_bytes().to_vec(),
            CONNECTION_COLLATION,
        ),
        _ => string_literal(collation.name().as_bytes().to_vec(), CONNECTION_COLLATION),
    };
    if expression.sql_type.is_string_type() {
        expression.coercibility = Coercibility::SystemConstant;
    }
    expression
}

/// A function by name with compiled arguments (also for the AST's own
/// forms: CEIL, FLOOR, POSITION, SUBSTRING, bare CURRENT_DATE...).
pub(crate) fn compile_named(
    compiler: &mut Compiler<'_>,
    name: &str,
    arguments: Vec<Expression>,
) -> Result<Expression, SqlError> {
    compile_named_with(compiler, name, arguments)
}

fn compile_named_with(
    compiler: &Compiler<'_>,
    name: &str,
    arguments: Vec<Expression>,
) -> Result<Expression, SqlError> {
    let Some((function, minimum, maximum)) = lookup(name) else {
        return Err(unknown_function(compiler, name));
    };
    if arguments.len() < minimum || arguments.len() > maximum {
        return Err(parameter_count_error(name));
    }
    build(function, arguments)
}

/// `TRIM([side] [remove FROM] operand)`.
pub(crate) fn compile_trim(
    side: Option<TrimWhereField>,
    operand: Expression,
    remove: Option<Expression>,
) -> Result<Expression, SqlError> {
    let side = match side {
        None | Some(TrimWhereField::Both) => TrimSide::Both,
        Some(TrimWhereField::Leading) => TrimSide::Leading,
        Some(TrimWhereField::Trailing) => TrimSide::Trailing,
    };
    let mut arguments = vec![operand];
    arguments.extend(remove);
    build(Function::Trim(side), arguments)
}

/// `EXTRACT(unit FROM operand)`.
pub(crate) fn compile_extract(
    unit: IntervalUnit,
    operand: Expression,
) -> Result<Expression, SqlError> {
    build(Function::Extract(unit), vec![operand])
}

fn is_non_deterministic(function: Function) -> bool {
    use Function as F;
    matches!(
        function,
        F::Rand
            | F::Now
            | F::Sysdate
            | F::Curdate
            | F::Curtime
            | F::UtcTimestamp
            | F::UtcDate
            | F::UtcTime
            | F::Database
            | F::User
            | F::CurrentUser
            | F::ConnectionId
            | F::LastInsertId
            | F::RowCount
            | F::FoundRows
            | F::Uuid
    ) || (function == F::UnixTimestamp)
}

/// The fractional-seconds precision a constant argument asks for (NOW(3)).
fn constant_fsp(arguments: &[Expression]) -> Result<u8, SqlError> {
    match arguments.first() {
        None => Ok(0),
        Some(argument) => match argument.literal() {
            Some(SqlValue::Int(fsp)) if (0..=6).contains(fsp) => Ok(*fsp as u8),
            Some(SqlValue::Int(fsp)) => Err(error(
                1426,
                format!("Too-big precision {fsp} specified for 'now'. Maximum is 6."),
            )),
            _ => Err(SqlError::syntax(
                "near the precision: it must be a number 0..6",
            )),
        },
    }
}

/// The digits of a constant integer argument, if it is one.
fn constant_int(argument: Option<&Expression>) -> Option<i64> {
    match argument?.literal()? {
        SqlValue::Int(value) => Some(*value),
        SqlValue::UInt(value) => i64::try_from(*value).ok(),
        _ => None,
    }
}

fn build(function: Function, arguments: Vec<Expression>) -> Result<Expression, SqlError> {
    use Function as F;
    let mut arguments = arguments;
    if function == F::If
        && let Some(condition) = arguments.first_mut()
    {
        let taken = std::mem::replace(condition, super::compile::null_literal());
        *condition = super::compile::condition_operand(taken);
    }
    let arguments: Vec<Expression> = match function {
        // Numeric functions read hex literals as numbers.
        F::Abs
        | F::Sign
        | F::Round
        | F::Truncate
        | F::Floor
        | F::Ceiling
        | F::Power
        | F::Sqrt
        | F::Exp
        | F::Ln
        | F::Log
        | F::Log2
        | F::Log10
        | F::Degrees
        | F::Radians
        | F::Sin
        | F::Cos
        | F::Tan
        | F::Cot
        | F::Asin
        | F::Acos
        | F::Atan
        | F::Atan2
        | F::BitCount
        | F::Bin
        | F::Oct
        | F::Space
        | F::Char => arguments.into_iter().map(numeric_operand).collect(),
        _ => arguments,
    };
    let references: Vec<&Expression> = arguments.iter().collect();
    let sql_type = result_type(function, &arguments)?;
    let mut expression = derived(
        Node::Function {
            function,
            arguments: arguments.clone(),
        },
        sql_type,
        &references,
    );
    if is_non_deterministic(function) {
        expression.constant = false;
    }
    if matches!(
        function,
        F::User | F::CurrentUser | F::Database | F::Version
    ) {
        expression.coercibility = Coercibility::SystemConstant;
    }
    if matches!(
        function,
        F::If | F::IfNull | F::Coalesce | F::Greatest | F::Least | F::NullIf | F::AnyValue
    ) {
        let sources: &[Expression] = match function {
            F::If => &arguments[1..],
            F::NullIf | F::AnyValue => &arguments[..1],
            _ => &arguments,
        };
        expression.dynamic = sources.iter().all(|source| source.dynamic);
        expression.coercibility = sources
            .iter()
            .map(|source| source.coercibility)
            .min()
            .unwrap_or(Coercibility::Numeric);
    }
    Ok(expression)
}

fn long_type(length: u32) -> SqlType {
    integer_result(length, false)
}

fn result_type(function: Function, arguments: &[Expression]) -> Result<SqlType, SqlError> {
    use Function as F;
    let references: Vec<&Expression> = arguments.iter().collect();
    let not_null = all_not_null(&references);
    let first = arguments.first();
    let first_length = first.map_or(0, |argument| text_length(&argument.sql_type));
    let string_of = |characters: u32, sources: &[&Expression]| {
        let strings: Vec<&Expression> = sources
            .iter()
            .copied()
            .filter(|source| source.sql_type.is_string_type())
            .collect();
        string_result(characters, &strings)
    };
    let sql_type = match function {
        F::Concat => {
            let length = arguments.iter().fold(0u32, |length, argument| {
                length.saturating_add(text_length(&argument.sql_type))
            });
            nullable_if(string_of(length, &references), !not_null)
        }
        F::ConcatWs => {
            let separator = text_length(&arguments[0].sql_type);
            let length = arguments[1..].iter().fold(0u32, |length, argument| {
                length
                    .saturating_add(text_length(&argument.sql_type))
                    .saturating_add(separator)
            });
            nullable_if(
                string_of(length, &references),
                arguments[0].sql_type.is_nullable(),
            )
        }
        F::Length | F::BitLength | F::CharLength | F::Ascii | F::Ord | F::Crc32 => {
            nullable_if(integer_result(10, function == F::Crc32), !not_null)
        }
        F::Field => long_type(11).with_not_null(true),
        F::Locate | F::Instr | F::FindInSet => nullable_if(long_type(11), !not_null),
        F::Strcmp => nullable_if(long_type(2), !not_null),
        F::Upper | F::Lower | F::Reverse | F::Trim(_) | F::Quote => {
            let extra = if function == F::Quote {
                first_length.saturating_add(2)
            } else {
                first_length
            };
            if function == F::Quote {
                string_of(extra, &references[..1]).with_not_null(true)
            } else {
                nullable_if(string_of(extra, &references[..1]), !not_null)
            }
        }
        F::Substring | F::Left | F::Right | F::SubstringIndex => {
            nullable_if(string_of(first_length, &references[..1]), !not_null)
        }
        F::Lpad | F::Rpad => {
            let length = constant_int(arguments.get(1))
                .map_or(first_length, |length| length.clamp(0, 65_535) as u32);
            nullable_if(string_of(length, &[&arguments[0], &arguments[2]]), true)
        }
        F::Replace => nullable_if(string_of(first_length, &references), !not_null),
        F::Insert => {
            let length = first_length.saturating_add(text_length(&arguments[3].sql_type));
            nullable_if(
                string_of(length, &[&arguments[0], &arguments[3]]),
                !not_null,
            )
        }
        F::Repeat | F::Space => {
            let times = constant_int(arguments.last()).unwrap_or(1).clamp(0, 65_535) as u32;
            let unit = if function == F::Space {
                1
            } else {
                first_length
            };
            let sources: &[&Expression] = if function == F::Space {
                &[]
            } else {
                &references[..1]
            };
            nullable_if(string_of(unit.saturating_mul(times), sources), true)
        }
        F::Hex => nullable_if(
            SqlType::string(first_length.saturating_mul(2).max(2), CONNECTION_COLLATION),
            !not_null,
        ),
        F::Unhex | F::FromBase64 => nullable_if(
            SqlType::string(first_length.div_ceil(2), Collation::Binary),
            true,
        ),
        F::ToBase64 => nullable_if(
            SqlType::string(
                first_length.div_ceil(3).saturating_mul(4),
                CONNECTION_COLLATION,
            ),
            !not_null,
        ),
        F::Md5 => nullable_if(SqlType::string(32, CONNECTION_COLLATION), !not_null),
        F::Sha1 => nullable_if(SqlType::string(40, CONNECTION_COLLATION), !not_null),
        F::Sha2 => nullable_if(SqlType::string(128, CONNECTION_COLLATION), true),
        F::Format => nullable_if(
            SqlType::string(
                (first_length.max(1) / 3)
                    .saturating_mul(4)
                    .saturating_add(35),
                CONNECTION_COLLATION,
            ),
            !not_null,
        ),
        F::Elt => {
            let length = arguments[1..]
                .iter()
                .map(|argument| text_length(&argument.sql_type))
                .max()
                .unwrap_or(0);
            let choices: Vec<&Expression> = arguments[1..].iter().collect();
            nullable_if(string_of(length, &choices), true)
        }
        F::Char => SqlType::string(
            (arguments.len() as u32).saturating_mul(4),
            Collation::Binary,
        )
        .with_not_null(true),
        F::Bin | F::Oct | F::Conv => nullable_if(SqlType::string(64, CONNECTION_COLLATION), true),
        F::Abs => {
            let argument = &arguments[0];
            let mut sql_type = match numeric_class(argument) {
                NumericClass::Integer | NumericClass::Unsigned => {
                    integer_result(argument.sql_type.length, argument.sql_type.is_unsigned())
                }
                NumericClass::Decimal => argument_decimal_type(argument),
                _ => SqlType::double(),
            };
            sql_type = nullable_if(sql_type, !not_null);
            sql_type
        }
        F::Sign => nullable_if(long_type(2), !not_null),
        F::Round | F::Truncate => {
            let argument = &arguments[0];
            let digits = if arguments.len() > 1 {
                constant_int(arguments.get(1))
            } else {
                Some(0)
            };
            let sql_type = match numeric_class(argument) {
                NumericClass::Integer | NumericClass::Unsigned => integer_result(
                    argument.sql_type.length.saturating_add(1),
                    argument.sql_type.is_unsigned(),
                ),
                NumericClass::Decimal => {
                    let (integer, scale) = super::compile::decimal_shape(argument);
                    let scale = match digits {
                        Some(digits) => {
                            digits.clamp(0, i64::from(crate::value::DECIMAL_SCALE_MAX)) as u8
                        }
                        None => scale,
                    };
                    SqlType::decimal(integer + 1 + u32::from(scale), scale, false)
                }
                _ => SqlType::double(),
            };
            nullable_if(sql_type, !not_null)
        }
        F::Floor | F::Ceiling => {
            let argument = &arguments[0];
            let sql_type = match numeric_class(argument) {
                NumericClass::Integer | NumericClass::Unsigned => {
                    integer_result(argument.sql_type.length, argument.sql_type.is_unsigned())
                }
                NumericClass::Decimal => {
                    let (integer, _) = super::compile::decimal_shape(argument);
                    // MySQL returns BIGINT when the integer part fits in 18 digits.
                    if integer <= 18 {
                        integer_result(integer + 1, false)
                    } else {
                        SqlType::decimal(integer + 1, 0, false)
                    }
                }
                _ => SqlType::double(),
            };
            nullable_if(sql_type, !not_null)
        }
        F::Power
        | F::Exp
        | F::Degrees
        | F::Radians
        | F::Sin
        | F::Cos
        | F::Tan
        | F::Atan
        | F::Atan2 => nullable_if(SqlType::double(), !not_null),
        F::Sqrt | F::Ln | F::Log | F::Log2 | F::Log10 | F::Cot | F::Asin | F::Acos => {
            nullable_if(SqlType::double(), true)
        }
        F::Pi => {
            let mut sql_type = SqlType::double().with_not_null(true);
            sql_type.decimals = 6;
            sql_type.length = 8;
            sql_type
        }
        F::Rand => SqlType::double().with_not_null(true),
        F::BitCount => nullable_if(long_type(2), !not_null),
        F::Now | F::Sysdate | F::UtcTimestamp => {
            SqlType::datetime(constant_fsp(arguments)?).with_not_null(true)
        }
        F::Curdate | F::UtcDate => SqlType::date().with_not_null(true),
        F::Curtime | F::UtcTime => SqlType::time(constant_fsp(arguments)?).with_not_null(true),
        F::UnixTimestamp => match first {
            None => long_type(11).with_not_null(true),
            Some(argument) => {
                let fsp = temporal_fsp(argument);
                if fsp > 0 {
                    SqlType::decimal(11 + u32::from(fsp), fsp, false)
                } else {
                    long_type(11)
                }
            }
        },
        F::FromUnixtime => {
            if arguments.len() == 2 {
                nullable_if(SqlType::string(64, CONNECTION_COLLATION), true)
            } else {
                let fsp = match numeric_class(&arguments[0]) {
                    NumericClass::Decimal => arguments[0].sql_type.decimals.min(6),
                    NumericClass::Double | NumericClass::Dynamic => 6,
                    _ => 0,
                };
                SqlType::datetime(fsp)
            }
        }
        F::Date | F::LastDay | F::FromDays | F::MakeDate => SqlType::date(),
        F::Time => SqlType::time(first.map_or(0, temporal_fsp)),
        F::Year
        | F::Month
        | F::Day
        | F::Hour
        | F::Minute
        | F::Second
        | F::Microsecond
        | F::DayOfWeek
        | F::DayOfYear
        | F::Weekday
        | F::Week
        | F::WeekOfYear
        | F::YearWeek
        | F::Quarter
        | F::DateDiff
        | F::TimestampDiff(_)
        | F::ToDays
        | F::ToSeconds
        | F::Extract(_)
        | F::TimeToSec => long_type(if function == F::Microsecond { 8 } else { 11 }),
        F::PeriodAdd | F::PeriodDiff => nullable_if(long_type(6), !not_null),
        F::DayName | F::MonthName => SqlType::string(9, CONNECTION_COLLATION),
        F::TimeDiff | F::SecToTime | F::MakeTime => {
            let fsp = arguments.iter().map(temporal_fsp).max().unwrap_or(0);
            SqlType::time(fsp)
        }
        F::DateFormat | F::TimeFormat => SqlType::string(64, CONNECTION_COLLATION),
        F::StrToDate => {
            let format = arguments[1]
                .literal()
                .map(|value| value.to_text().into_owned());
            match format.map(|format| crate::temporal::format_parts(&format)) {
                Some((true, false, _)) => SqlType::date(),
                Some((false, true, fraction)) => SqlType::time(if fraction { 6 } else { 0 }),
                Some((_, _, fraction)) => SqlType::datetime(if fraction { 6 } else { 0 }),
                None => SqlType::datetime(6),
            }
        }
        F::AddTime | F::SubTime => {
            let fsp = arguments.iter().map(temporal_fsp).max().unwrap_or(0);
            match arguments[0].sql_type.field_type {
                FieldType::DateTime | FieldType::Timestamp => SqlType::datetime(fsp),
                FieldType::Time => SqlType::time(fsp),
                _ => SqlType::string(29, CONNECTION_COLLATION),
            }
        }
        F::If => {
            let sql_type = aggregate_type(&references[1..]);
            let nullable = references[1..]
                .iter()
                .any(|source| source.sql_type.is_nullable());
            nullable_if(sql_type, nullable)
        }
        F::IfNull => {
            let sql_type = aggregate_type(&references);
            nullable_if(
                sql_type,
                arguments[0].sql_type.is_nullable() && arguments[1].sql_type.is_nullable(),
            )
        }
        F::Coalesce => {
            let sql_type = aggregate_type(&references);
            nullable_if(
                sql_type,
                references
                    .iter()
                    .all(|source| source.sql_type.is_nullable()),
            )
        }
        F::Greatest | F::Least => nullable_if(aggregate_type(&references), !not_null),
        F::NullIf => arguments[0].sql_type.clone().with_not_null(false),
        F::AnyValue => arguments[0].sql_type.clone(),
        F::IsNull => long_type(1).with_not_null(true),
        F::Database => SqlType::string(64, CONNECTION_COLLATION),
        F::User | F::CurrentUser => SqlType::string(288, CONNECTION_COLLATION).with_not_null(true),
        F::Version => SqlType::string(64, CONNECTION_COLLATION).with_not_null(true),
        F::ConnectionId | F::LastInsertId => integer_result(21, true).with_not_null(true),
        F::RowCount | F::FoundRows => long_type(21).with_not_null(true),
        F::Uuid => SqlType::string(36, CONNECTION_COLLATION).with_not_null(true),
    };
    Ok(sql_type)
}

/// The DECIMAL type of a decimal-class argument (ABS keeps it).
fn argument_decimal_type(argument: &Expression) -> SqlType {
    let (integer, scale) = super::compile::decimal_shape(argument);
    SqlType::decimal(integer + u32::from(scale), scale, false)
}

/// Fraction digits a temporal argument carries (0 for others, 6 for strings).
fn temporal_fsp(argument: &Expression) -> u8 {
    let sql_type = &argument.sql_type;
    if sql_type.is_temporal_type() || sql_type.is_decimal_type() {
        sql_type.decimals.min(6)
    } else if sql_type.is_string_type() || sql_type.decimals == NOT_FIXED_DECIMALS {
        if argument.literal().is_some() {
            // A literal's fraction digits are known.
            let text = argument
                .literal()
                .map(|value| value.to_text().into_owned())
                .unwrap_or_default();
            match text.iter().position(|&byte| byte == b'.') {
                Some(point) => text[point + 1..]
                    .iter()
                    .take_while(|byte| byte.is_ascii_digit())
                    .count()
                    .min(6) as u8,
                None => 0,
            }
        } else {
            6
        }
    } else {
        0
    }
}

/// Up to four argument values without a heap allocation.
pub(crate) struct Values<'a> {
    inline: [Cow<'a, SqlValue>; 4],
    heap: Vec<Cow<'a, SqlValue>>,
    count: usize,
}

impl<'a> Values<'a> {
    fn evaluate(
        arguments: &'a [Expression],
        row: &'a [SqlValue],
        env: &mut dyn Environment,
    ) -> Result<Values<'a>, SqlError> {
        let mut values = Values {
            inline: std::array::from_fn(|_| Cow::Owned(SqlValue::Null)),
            heap: Vec::new(),
            count: arguments.len(),
        };
        if arguments.len() <= values.inline.len() {
            for (slot, argument) in values.inline.iter_mut().zip(arguments) {
                *slot = evaluate(argument, row, env)?;
            }
        } else {
            values.heap.reserve(arguments.len());
            for argument in arguments {
                values.heap.push(evaluate(argument, row, env)?);
            }
        }
        Ok(values)
    }

    fn as_slice(&self) -> &[Cow<'a, SqlValue>] {
        if self.heap.is_empty() {
            &self.inline[..self.count.min(self.inline.len())]
        } else {
            &self.heap
        }
    }
}

/// Whether any argument NULL makes the result NULL without calling the function.
fn null_propagates(function: Function) -> bool {
    use Function as F;
    !matches!(
        function,
        F::ConcatWs
            | F::Field
            | F::Elt
            | F::Char
            | F::Rand
            | F::LastInsertId
            | F::If
            | F::IfNull
            | F::NullIf
            | F::Coalesce
            | F::IsNull
            | F::AnyValue
            | F::Now
            | F::Sysdate
            | F::Curtime
            | F::UtcTimestamp
            | F::UtcTime
            | F::UnixTimestamp
            | F::Quote
    )
}

/// Evaluates a function call.
pub(crate) fn evaluate_function<'a>(
    function: Function,
    arguments: &'a [Expression],
    sql_type: &SqlType,
    row: &'a [SqlValue],
    env: &mut dyn Environment,
) -> Result<Cow<'a, SqlValue>, SqlError> {
    use Function as F;
    match function {
        F::If | F::IfNull | F::NullIf | F::Coalesce | F::AnyValue => {
            return control::evaluate_lazy(function, arguments, sql_type, row, env);
        }
        _ => {}
    }
    let values = Values::evaluate(arguments, row, env)?;
    let values = values.as_slice();
    if null_propagates(function) && values.iter().any(|value| value.is_null()) {
        return Ok(Cow::Owned(SqlValue::Null));
    }
    let result = match function {
        F::Concat
        | F::ConcatWs
        | F::Length
        | F::BitLength
        | F::CharLength
        | F::Upper
        | F::Lower
        | F::Substring
        | F::SubstringIndex
        | F::Left
        | F::Right
        | F::Trim(_)
        | F::Lpad
        | F::Rpad
        | F::Replace
        | F::Locate
        | F::Instr
        | F::Reverse
        | F::Repeat
        | F::Space
        | F::Ascii
        | F::Ord
        | F::Hex
        | F::Unhex
        | F::Md5
        | F::Sha1
        | F::Sha2
        | F::Crc32
        | F::Format
        | F::Field
        | F::Elt
        | F::Strcmp
        | F::Char
        | F::Insert
        | F::FindInSet
        | F::Quote
        | F::Bin
        | F::Oct
        | F::ToBase64
        | F::FromBase64 => string::evaluate(function, values, arguments, sql_type, env)?,
        F::Abs
        | F::Sign
        | F::Round
        | F::Truncate
        | F::Floor
        | F::Ceiling
        | F::Power
        | F::Sqrt
        | F::Exp
        | F::Ln
        | F::Log
        | F::Log2
        | F::Log10
        | F::Pi
        | F::Rand
        | F::Conv
        | F::Degrees
        | F::Radians
        | F::Sin
        | F::Cos
        | F::Tan
        | F::Cot
        | F::Asin
        | F::Acos
        | F::Atan
        | F::Atan2
        | F::BitCount => numeric::evaluate(function, values, arguments, sql_type, env)?,
        F::Greatest | F::Least | F::IsNull => {
            control::evaluate_eager(function, values, arguments, sql_type, env)?
        }
        F::Database
        | F::User
        | F::CurrentUser
        | F::ConnectionId
        | F::Version
        | F::LastInsertId
        | F::RowCount
        | F::FoundRows
        | F::Uuid => control::information(function, values, env)?,
        _ => temporal::evaluate(function, values, arguments, sql_type, env)?,
    };
    Ok(Cow::Owned(result))
}

/// The integer an argument gives (with MySQL's conversion warnings).
pub(crate) fn int_argument(value: &SqlValue, env: &mut dyn Environment) -> i64 {
    super::evaluate::int_of(value, env)
}

/// The collation a string argument is in (its static type's).
pub(crate) fn collation_of(argument: &Expression) -> Collation {
    if argument.sql_type.is_string_type() {
        argument.sql_type.collation
    } else {
        CONNECTION_COLLATION
    }
}
