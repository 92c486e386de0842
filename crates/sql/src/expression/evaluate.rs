//! Running the tree over a row: operators with MySQL's semantics, and the
//! conversions with MySQL's warnings that every function uses.

use super::compare::{compare_values, equal_values};
use super::{
    ArithmeticOperator, BitOperator, ComparisonOperator, Environment, Expression, LogicalOperator,
    Node, NumericClass, WarningLevel, cast, functions, regexp,
};
use crate::convert::error;
use crate::error::SqlError;
use crate::value::{Conversion, DIV_PRECISION_INCREMENT, Decimal, SqlValue};
use schema::Collation;
use std::borrow::Cow;
use std::cmp::Ordering;

/// The value of `expression` over `row`.
pub(crate) fn evaluate<'a>(
    expression: &'a Expression,
    row: &'a [SqlValue],
    env: &mut dyn Environment,
) -> Result<Cow<'a, SqlValue>, SqlError> {
    match &expression.node {
        Node::Literal(value) => Ok(Cow::Borrowed(value)),
        Node::Column(slot) | Node::Aggregate(slot) => row
            .get(*slot)
            .map(Cow::Borrowed)
            .ok_or_else(|| error(1105, format!("internal error: no value in slot {slot}"))),
        Node::EnumIndex { operand, members } => {
            let value = evaluate(operand, row, env)?;
            Ok(Cow::Owned(match value.as_ref() {
                SqlValue::Null => SqlValue::Null,
                other => SqlValue::UInt(enum_index(&other.to_text(), members)),
            }))
        }
        Node::Parameter(index) => match env.parameter(*index) {
            Some(value) => Ok(Cow::Owned(value.clone())),
            None => Err(error(1210, "Incorrect arguments to mysqld_stmt_execute")),
        },
        Node::UserVariable(name) => Ok(Cow::Owned(env.user_variable(name))),
        Node::AssignUserVariable { name, value } => {
            let value = evaluate(value, row, env)?.into_owned();
            env.set_user_variable(name, value.clone())?;
            Ok(Cow::Owned(value))
        }
        Node::SystemVariable { name, global } => env.system_variable(name, *global).map(Cow::Owned),
        Node::Negate { operand, text } => {
            let value = evaluate(operand, row, env)?;
            negate(&value, text, env).map(Cow::Owned)
        }
        Node::BitNot(operand) => {
            let value = evaluate(operand, row, env)?;
            if value.is_null() {
                return Ok(Cow::Owned(SqlValue::Null));
            }
            Ok(Cow::Owned(SqlValue::UInt(!bits_of(&value, env))))
        }
        Node::Not(operand) => {
            let value = evaluate(operand, row, env)?;
            Ok(Cow::Owned(boolean(truth(&value, env).map(|truth| !truth))))
        }
        Node::Arithmetic {
            operator,
            class,
            left,
            right,
            text,
        } => {
            let left = evaluate(left, row, env)?;
            if left.is_null() {
                return Ok(Cow::Owned(SqlValue::Null));
            }
            let right = evaluate(right, row, env)?;
            arithmetic(*operator, *class, &left, &right, text, env).map(Cow::Owned)
        }
        Node::Bitwise {
            operator,
            left,
            right,
        } => {
            let left = evaluate(left, row, env)?;
            let right = evaluate(right, row, env)?;
            if left.is_null() || right.is_null() {
                return Ok(Cow::Owned(SqlValue::Null));
            }
            let (left, right) = (bits_of(&left, env), bits_of(&right, env));
            let result = match operator {
                BitOperator::And => left & right,
                BitOperator::Or => left | right,
                BitOperator::Xor => left ^ right,
                BitOperator::ShiftLeft => {
                    if right >= 64 {
                        0
                    } else {
                        left << right
                    }
                }
                BitOperator::ShiftRight => {
                    if right >= 64 {
                        0
                    } else {
                        left >> right
                    }
                }
            };
            Ok(Cow::Owned(SqlValue::UInt(result)))
        }
        Node::Comparison {
            operator,
            left,
            right,
            collation,
        } => {
            let left = evaluate(left, row, env)?;
            let right = evaluate(right, row, env)?;
            Ok(Cow::Owned(comparison(
                *operator, &left, &right, *collation, env,
            )))
        }
        Node::Logical {
            operator,
            left,
            right,
        } => logical(*operator, left, right, row, env).map(Cow::Owned),
        Node::IsNull { operand, negated } => {
            let value = evaluate(operand, row, env)?;
            Ok(Cow::Owned(boolean(Some(value.is_null() != *negated))))
        }
        Node::IsBoolean {
            operand,
            value,
            negated,
        } => {
            let operand = evaluate(operand, row, env)?;
            let matches = truth(&operand, env) == Some(*value);
            Ok(Cow::Owned(boolean(Some(matches != *negated))))
        }
        Node::In {
            operand,
            list,
            negated,
            collation,
        } => {
            let value = evaluate(operand, row, env)?;
            if value.is_null() {
                return Ok(Cow::Owned(SqlValue::Null));
            }
            let mut saw_null = false;
            for item in list {
                let item = evaluate(item, row, env)?;
                match equal_values(&value, &item, *collation, Some(&mut *env)) {
                    Some(true) => return Ok(Cow::Owned(boolean(Some(!*negated)))),
                    Some(false) => {}
                    None => saw_null = true,
                }
            }
            Ok(Cow::Owned(if saw_null {
                SqlValue::Null
            } else {
                boolean(Some(*negated))
            }))
        }
        Node::Between {
            operand,
            low,
            high,
            negated,
            collation,
        } => {
            let value = evaluate(operand, row, env)?;
            let low = evaluate(low, row, env)?;
            let high = evaluate(high, row, env)?;
            let above = compare_values(&value, &low, *collation, Some(&mut *env))
                .map(|ordering| ordering != Ordering::Less);
            let below = compare_values(&value, &high, *collation, Some(&mut *env))
                .map(|ordering| ordering != Ordering::Greater);
            let inside = and3(above, below);
            Ok(Cow::Owned(boolean(inside.map(|inside| inside != *negated))))
        }
        Node::Like {
            operand,
            pattern,
            escape,
            negated,
            collation,
        } => {
            let value = evaluate(operand, row, env)?;
            let pattern = evaluate(pattern, row, env)?;
            let escape = match escape {
                Some(escape) => Some(evaluate(escape, row, env)?),
                None => None,
            };
            like(&value, &pattern, escape.as_deref(), *negated, *collation).map(Cow::Owned)
        }
        Node::Regexp {
            operand,
            pattern,
            compiled,
            negated,
            case_insensitive,
        } => {
            let value = evaluate(operand, row, env)?;
            if value.is_null() {
                return Ok(Cow::Owned(SqlValue::Null));
            }
            let matched = match compiled {
                Some(regex) => regex.is_match(&value.to_text(), *case_insensitive)?,
                None => {
                    let pattern = evaluate(pattern, row, env)?;
                    if pattern.is_null() {
                        return Ok(Cow::Owned(SqlValue::Null));
                    }
                    regexp::is_match(&pattern.to_text(), &value.to_text(), *case_insensitive)?
                }
            };
            Ok(Cow::Owned(boolean(Some(matched != *negated))))
        }
        Node::Case {
            operand,
            branches,
            otherwise,
            collation,
        } => {
            match operand {
                Some(operand) => {
                    let value = evaluate(operand, row, env)?;
                    for (when, result) in branches {
                        let when = evaluate(when, row, env)?;
                        if equal_values(&value, &when, *collation, Some(&mut *env)) == Some(true) {
                            return evaluate(result, row, env);
                        }
                    }
                }
                None => {
                    for (condition, result) in branches {
                        let condition = evaluate(condition, row, env)?;
                        if truth(&condition, env) == Some(true) {
                            return evaluate(result, row, env);
                        }
                    }
                }
            }
            match otherwise {
                Some(otherwise) => evaluate(otherwise, row, env),
                None => Ok(Cow::Owned(SqlValue::Null)),
            }
        }
        Node::Cast {
            operand,
            target,
            text,
        } => {
            let value = evaluate(operand, row, env)?;
            cast::evaluate_cast(target, value, &operand.sql_type, text, env)
        }
        Node::DateAdd {
            operand,
            interval,
            unit,
            subtract,
        } => {
            let value = evaluate(operand, row, env)?;
            let amount = evaluate(interval, row, env)?;
            functions::temporal::date_add(
                &value,
                &operand.sql_type,
                &amount,
                *unit,
                *subtract,
                &expression.sql_type,
                env,
            )
            .map(Cow::Owned)
        }
        Node::Function {
            function,
            arguments,
        } => functions::evaluate_function(*function, arguments, &expression.sql_type, row, env),
    }
}

/// The 1-based position of the member `text` names, 0 for none (MySQL
/// stores an invalid value as the empty string, index 0). A row holds the
/// member's text exactly; case is ignored as a fallback for values from
/// elsewhere.
pub(crate) fn enum_index(text: &[u8], members: &[String]) -> u64 {
    let position = members
        .iter()
        .position(|member| member.as_bytes() == text)
        .or_else(|| {
            members
                .iter()
                .position(|member| member.as_bytes().eq_ignore_ascii_case(text))
        });
    position.map_or(0, |position| position as u64 + 1)
}

// ---------------------------------------------------------------------------
// Conversions with MySQL's warnings

/// Appends a warning (level Warning).
pub(crate) fn warn(env: &mut dyn Environment, code: u16, message: String) {
    env.warn(WarningLevel::Warning, code, message);
}

/// Text for a message: the bytes as UTF-8 (lossy).
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// 1292 "Truncated incorrect KIND value: 'text'".
pub(crate) fn warn_truncated(env: &mut dyn Environment, kind: &str, value: &SqlValue) {
    let text = lossy(&value.to_text());
    warn(
        env,
        1292,
        format!("Truncated incorrect {kind} value: '{text}'"),
    );
}

/// The value as a DOUBLE; text that is not all number warns 1292.
pub(crate) fn double_of(value: &SqlValue, env: &mut dyn Environment) -> f64 {
    let (number, conversion) = value.to_double();
    if conversion >= Conversion::Truncated && matches!(value, SqlValue::String(_)) {
        warn_truncated(env, "DOUBLE", value);
    }
    number
}

/// The value as a BIGINT (rounded); text that is not all integer, and
/// numbers beyond BIGINT, warn 1292.
pub(crate) fn int_of(value: &SqlValue, env: &mut dyn Environment) -> i64 {
    let (number, conversion) = value.to_int();
    if conversion == Conversion::OutOfRange
        || (conversion == Conversion::Truncated && matches!(value, SqlValue::String(_)))
    {
        warn_truncated(env, "INTEGER", value);
    }
    number
}

/// The value as a DECIMAL; text that is not all number warns 1292.
pub(crate) fn decimal_of(value: &SqlValue, env: &mut dyn Environment) -> Decimal {
    let (number, conversion) = value.to_decimal();
    if conversion >= Conversion::Truncated
        && matches!(value, SqlValue::String(_) | SqlValue::Double(_))
    {
        warn_truncated(env, "DECIMAL", value);
    }
    number
}

/// The value's 64 bits for the bit operators (`&`, `|`, `~`, ...):
/// negative integers as their two's complement.
pub(crate) fn bits_of(value: &SqlValue, env: &mut dyn Environment) -> u64 {
    match value {
        SqlValue::Int(value) => *value as u64,
        SqlValue::UInt(value) => *value,
        SqlValue::String(_) => {
            let (number, conversion) = value.to_decimal();
            if conversion >= Conversion::Truncated {
                warn_truncated(env, "INTEGER", value);
            }
            let (rounded, _) = number.to_i64();
            if number.is_negative() {
                rounded as u64
            } else {
                number.to_u64().0
            }
        }
        other => {
            let (number, _) = other.to_decimal();
            if number.is_negative() {
                number.to_i64().0 as u64
            } else {
                number.to_u64().0
            }
        }
    }
}

/// The value in a boolean context (strings by their DOUBLE value, with the warning).
pub(crate) fn truth(value: &SqlValue, env: &mut dyn Environment) -> Option<bool> {
    match value {
        SqlValue::String(_) => Some(double_of(value, env) != 0.0),
        other => other.to_bool(),
    }
}

/// 1 / 0 / NULL.
pub(crate) fn boolean(value: Option<bool>) -> SqlValue {
    match value {
        Some(true) => SqlValue::Int(1),
        Some(false) => SqlValue::Int(0),
        None => SqlValue::Null,
    }
}

fn and3(left: Option<bool>, right: Option<bool>) -> Option<bool> {
    match (left, right) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// A division by zero: NULL, with warning 1365 only under
/// ERROR_FOR_DIVISION_BY_ZERO (without it MySQL is silent). The statement
/// that stores the value turns the warning into an error in strict mode.
pub(crate) fn division_by_zero(env: &mut dyn Environment) -> SqlValue {
    if sql_mode_has(env, "ERROR_FOR_DIVISION_BY_ZERO") {
        warn(env, 1365, "Division by 0".to_string());
    }
    SqlValue::Null
}

/// Whether the session's `sql_mode` holds `mode`. A session that cannot
/// tell counts as MySQL 8.0's default mode, which holds every mode asked
/// about here.
pub(crate) fn sql_mode_has(env: &mut dyn Environment, mode: &str) -> bool {
    match env.system_variable("sql_mode", false) {
        Ok(SqlValue::String(modes)) => modes
            .split(|byte| *byte == b',')
            .any(|name| name.trim_ascii().eq_ignore_ascii_case(mode.as_bytes())),
        Ok(_) => false,
        Err(_) => true,
    }
}

fn out_of_range(kind: &str, text: &str) -> SqlError {
    error(1690, format!("{kind} value is out of range in '{text}'"))
}

// ---------------------------------------------------------------------------
// Operators

fn runtime_class(value: &SqlValue) -> NumericClass {
    match value {
        SqlValue::Int(_) | SqlValue::Null | SqlValue::Date(_) => NumericClass::Integer,
        SqlValue::UInt(_) => NumericClass::Unsigned,
        SqlValue::Decimal(_) => NumericClass::Decimal,
        SqlValue::Double(_) | SqlValue::String(_) => NumericClass::Double,
        SqlValue::Datetime(datetime) if datetime.microsecond != 0 => NumericClass::Decimal,
        SqlValue::Time(time) if time.microsecond != 0 => NumericClass::Decimal,
        SqlValue::Datetime(_) | SqlValue::Time(_) => NumericClass::Integer,
    }
}

fn combine_runtime(left: NumericClass, right: NumericClass) -> NumericClass {
    use NumericClass::*;
    match (left, right) {
        (Double, _) | (_, Double) => Double,
        (Decimal, _) | (_, Decimal) => Decimal,
        (Unsigned, _) | (_, Unsigned) => Unsigned,
        _ => Integer,
    }
}

/// An integer operand as i128 (exact for both BIGINT and BIGINT UNSIGNED).
fn wide_integer(value: &SqlValue, env: &mut dyn Environment) -> i128 {
    match value {
        SqlValue::Int(value) => i128::from(*value),
        SqlValue::UInt(value) => i128::from(*value),
        SqlValue::Decimal(decimal) => decimal.round(0).map_or(0, |rounded| rounded.mantissa),
        other => {
            let (number, conversion) = other.to_decimal();
            if conversion >= Conversion::Truncated && matches!(other, SqlValue::String(_)) {
                warn_truncated(env, "INTEGER", other);
            }
            number.round(0).map_or(0, |rounded| rounded.mantissa)
        }
    }
}

pub(crate) fn arithmetic(
    operator: ArithmeticOperator,
    class: NumericClass,
    left: &SqlValue,
    right: &SqlValue,
    text: &str,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    if left.is_null() || right.is_null() {
        return Ok(SqlValue::Null);
    }
    let mut class = class;
    if class == NumericClass::Dynamic {
        class = combine_runtime(runtime_class(left), runtime_class(right));
        if operator == ArithmeticOperator::Divide
            && matches!(class, NumericClass::Integer | NumericClass::Unsigned)
        {
            class = NumericClass::Decimal;
        }
    }
    match class {
        NumericClass::Integer | NumericClass::Unsigned => integer_arithmetic(
            operator,
            class == NumericClass::Unsigned,
            left,
            right,
            text,
            env,
        ),
        NumericClass::Decimal => decimal_arithmetic(operator, left, right, text, env),
        NumericClass::Double | NumericClass::Dynamic => {
            double_arithmetic(operator, left, right, text, env)
        }
    }
}

fn integer_arithmetic(
    operator: ArithmeticOperator,
    unsigned: bool,
    left: &SqlValue,
    right: &SqlValue,
    text: &str,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    let kind = if unsigned {
        "BIGINT UNSIGNED"
    } else {
        "BIGINT"
    };
    let (a, b) = (wide_integer(left, env), wide_integer(right, env));
    let result = match operator {
        ArithmeticOperator::Add => a.checked_add(b),
        ArithmeticOperator::Subtract => a.checked_sub(b),
        ArithmeticOperator::Multiply => a.checked_mul(b),
        ArithmeticOperator::IntegerDivide | ArithmeticOperator::Divide => {
            if b == 0 {
                return Ok(division_by_zero(env));
            }
            Some(a / b)
        }
        ArithmeticOperator::Modulo => {
            if b == 0 {
                return Ok(division_by_zero(env));
            }
            // The remainder has the dividend's sign and kind.
            let remainder = a % b;
            return Ok(match (left, i64::try_from(remainder)) {
                (SqlValue::UInt(_), _) if remainder >= 0 => SqlValue::UInt(remainder as u64),
                (_, Ok(value)) => SqlValue::Int(value),
                _ => SqlValue::UInt(remainder as u64),
            });
        }
    };
    let Some(result) = result else {
        return Err(out_of_range(kind, text));
    };
    if unsigned {
        match u64::try_from(result) {
            Ok(value) => Ok(SqlValue::UInt(value)),
            Err(_) => Err(out_of_range(kind, text)),
        }
    } else {
        match i64::try_from(result) {
            Ok(value) => Ok(SqlValue::Int(value)),
            Err(_) => Err(out_of_range(kind, text)),
        }
    }
}

fn decimal_arithmetic(
    operator: ArithmeticOperator,
    left: &SqlValue,
    right: &SqlValue,
    text: &str,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    let (a, b) = (decimal_of(left, env), decimal_of(right, env));
    let overflow = || out_of_range("DECIMAL", text);
    let result = match operator {
        ArithmeticOperator::Add => a.checked_add(b).ok_or_else(overflow)?,
        ArithmeticOperator::Subtract => a.checked_sub(b).ok_or_else(overflow)?,
        ArithmeticOperator::Multiply => a.checked_mul(b).ok_or_else(overflow)?,
        ArithmeticOperator::Divide => {
            if b.is_zero() {
                return Ok(division_by_zero(env));
            }
            a.checked_div(b, DIV_PRECISION_INCREMENT)
                .ok_or_else(overflow)?
        }
        ArithmeticOperator::IntegerDivide => {
            if b.is_zero() {
                return Ok(division_by_zero(env));
            }
            let quotient = a.checked_integer_div(b).ok_or_else(overflow)?;
            let (value, conversion) = quotient.to_i64();
            if conversion == Conversion::OutOfRange {
                return Err(out_of_range("BIGINT", text));
            }
            return Ok(SqlValue::Int(value));
        }
        ArithmeticOperator::Modulo => {
            if b.is_zero() {
                return Ok(division_by_zero(env));
            }
            a.checked_rem(b).ok_or_else(overflow)?
        }
    };
    Ok(SqlValue::Decimal(result))
}

fn double_arithmetic(
    operator: ArithmeticOperator,
    left: &SqlValue,
    right: &SqlValue,
    text: &str,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    let (a, b) = (double_of(left, env), double_of(right, env));
    let result = match operator {
        ArithmeticOperator::Add => a + b,
        ArithmeticOperator::Subtract => a - b,
        ArithmeticOperator::Multiply => a * b,
        ArithmeticOperator::Divide => {
            if b == 0.0 {
                return Ok(division_by_zero(env));
            }
            a / b
        }
        ArithmeticOperator::IntegerDivide => {
            if b == 0.0 {
                return Ok(division_by_zero(env));
            }
            let quotient = (a / b).trunc();
            if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&quotient) {
                return Err(out_of_range("BIGINT", text));
            }
            return Ok(SqlValue::Int(quotient as i64));
        }
        ArithmeticOperator::Modulo => {
            if b == 0.0 {
                return Ok(division_by_zero(env));
            }
            a % b
        }
    };
    if !result.is_finite() {
        return Err(out_of_range("DOUBLE", text));
    }
    Ok(SqlValue::Double(result))
}

pub(crate) fn negate(
    value: &SqlValue,
    text: &str,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    Ok(match value {
        SqlValue::Null => SqlValue::Null,
        SqlValue::Int(value) => match value.checked_neg() {
            Some(negated) => SqlValue::Int(negated),
            None => return Err(out_of_range("BIGINT", text)),
        },
        SqlValue::UInt(value) => {
            if *value <= i64::MIN.unsigned_abs() {
                SqlValue::Int((*value as i64).wrapping_neg())
            } else {
                return Err(out_of_range("BIGINT", text));
            }
        }
        SqlValue::Decimal(decimal) => SqlValue::Decimal(decimal.negated()),
        SqlValue::Double(double) => SqlValue::Double(-double),
        SqlValue::String(_) => SqlValue::Double(-double_of(value, env)),
        SqlValue::Date(date) => SqlValue::Int(-date.to_number()),
        SqlValue::Datetime(datetime) => SqlValue::Decimal(datetime.to_decimal().negated()),
        SqlValue::Time(time) => SqlValue::Decimal(time.to_decimal().negated()),
    })
}

pub(crate) fn comparison(
    operator: ComparisonOperator,
    left: &SqlValue,
    right: &SqlValue,
    collation: Collation,
    env: &mut dyn Environment,
) -> SqlValue {
    if operator == ComparisonOperator::NullSafeEqual {
        return boolean(Some(match (left.is_null(), right.is_null()) {
            (true, true) => true,
            (true, false) | (false, true) => false,
            _ => equal_values(left, right, collation, Some(env)) == Some(true),
        }));
    }
    if operator == ComparisonOperator::Equal || operator == ComparisonOperator::NotEqual {
        let equal = equal_values(left, right, collation, Some(env));
        return boolean(equal.map(|equal| equal == (operator == ComparisonOperator::Equal)));
    }
    let ordering = compare_values(left, right, collation, Some(env));
    boolean(ordering.map(|ordering| match operator {
        ComparisonOperator::Less => ordering == Ordering::Less,
        ComparisonOperator::LessOrEqual => ordering != Ordering::Greater,
        ComparisonOperator::Greater => ordering == Ordering::Greater,
        _ => ordering != Ordering::Less,
    }))
}

fn logical(
    operator: LogicalOperator,
    left: &Expression,
    right: &Expression,
    row: &[SqlValue],
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    let left = evaluate(left, row, env)?;
    let left = truth(&left, env);
    match operator {
        LogicalOperator::And if left == Some(false) => return Ok(boolean(Some(false))),
        LogicalOperator::Or if left == Some(true) => return Ok(boolean(Some(true))),
        _ => {}
    }
    let right = evaluate(right, row, env)?;
    let right = truth(&right, env);
    Ok(boolean(match operator {
        LogicalOperator::And => and3(left, right),
        LogicalOperator::Or => match (left, right) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        LogicalOperator::Xor => match (left, right) {
            (Some(left), Some(right)) => Some(left != right),
            _ => None,
        },
    }))
}

/// The byte that stands for "no escape character": one the pattern does not use.
fn unused_byte(pattern: &[u8]) -> u8 {
    (1..=u8::MAX)
        .find(|byte| *byte != b'%' && *byte != b'_' && !pattern.contains(byte))
        .unwrap_or(0)
}

fn like(
    value: &SqlValue,
    pattern: &SqlValue,
    escape: Option<&SqlValue>,
    negated: bool,
    collation: Collation,
) -> Result<SqlValue, SqlError> {
    if value.is_null() || pattern.is_null() {
        return Ok(SqlValue::Null);
    }
    let text = value.to_text();
    let pattern = pattern.to_text();
    let escape = match escape {
        None | Some(SqlValue::Null) => b'\\',
        Some(escape) => {
            let escape = escape.to_text();
            match escape.len() {
                0 => unused_byte(&pattern),
                1 => escape[0],
                _ if std::str::from_utf8(&escape).is_ok_and(|text| text.chars().count() == 1) => {
                    // A multi-byte escape character cannot escape in the byte matcher.
                    unused_byte(&pattern)
                }
                _ => return Err(error(1210, "Incorrect arguments to ESCAPE")),
            }
        }
    };
    let matched = schema::collation::like(collation, &text, &pattern, escape);
    Ok(boolean(Some(matched != negated)))
}
