//! Control-flow functions (IF, IFNULL, NULLIF, COALESCE, GREATEST, LEAST,
//! ISNULL) and information functions (DATABASE(), USER(), VERSION(), ...).

use super::super::compare::{compare_values, equal_values};
use super::super::compile::aggregate_collation;
use super::super::evaluate::{evaluate, truth};
use super::super::{Environment, Expression};
use super::{Function, int_argument};
use crate::convert::error;
use crate::error::SqlError;
use crate::value::{SqlType, SqlValue};
use std::borrow::Cow;
use std::cmp::Ordering;

/// The functions that evaluate only the arguments they need.
pub(super) fn evaluate_lazy<'a>(
    function: Function,
    arguments: &'a [Expression],
    _sql_type: &SqlType,
    row: &'a [SqlValue],
    env: &mut dyn Environment,
) -> Result<Cow<'a, SqlValue>, SqlError> {
    match function {
        Function::If => {
            let condition = evaluate(&arguments[0], row, env)?;
            if truth(&condition, env) == Some(true) {
                evaluate(&arguments[1], row, env)
            } else {
                evaluate(&arguments[2], row, env)
            }
        }
        Function::IfNull => {
            let first = evaluate(&arguments[0], row, env)?;
            if first.is_null() {
                evaluate(&arguments[1], row, env)
            } else {
                Ok(first)
            }
        }
        Function::Coalesce => {
            for argument in arguments {
                let value = evaluate(argument, row, env)?;
                if !value.is_null() {
                    return Ok(value);
                }
            }
            Ok(Cow::Owned(SqlValue::Null))
        }
        Function::NullIf => {
            let first = evaluate(&arguments[0], row, env)?;
            let second = evaluate(&arguments[1], row, env)?;
            let collation = aggregate_collation(&[&arguments[0], &arguments[1]]);
            if equal_values(&first, &second, collation, Some(env)) == Some(true) {
                Ok(Cow::Owned(SqlValue::Null))
            } else {
                Ok(first)
            }
        }
        Function::AnyValue => evaluate(&arguments[0], row, env),
        other => Err(error(
            1105,
            format!("internal error: {other:?} is not lazy"),
        )),
    }
}

pub(super) fn evaluate_eager(
    function: Function,
    values: &[Cow<'_, SqlValue>],
    arguments: &[Expression],
    sql_type: &SqlType,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    match function {
        Function::IsNull => Ok(SqlValue::Int(i64::from(values[0].is_null()))),
        Function::Greatest | Function::Least => {
            let references: Vec<&Expression> = arguments.iter().collect();
            let collation = if sql_type.is_string_type() {
                sql_type.collation
            } else {
                aggregate_collation(&references)
            };
            let wanted = if function == Function::Greatest {
                Ordering::Greater
            } else {
                Ordering::Less
            };
            let mut best = 0;
            for index in 1..values.len() {
                if compare_values(&values[index], &values[best], collation, Some(&mut *env))
                    == Some(wanted)
                {
                    best = index;
                }
            }
            Ok(values[best].as_ref().clone())
        }
        other => Err(error(
            1105,
            format!("internal error: {other:?} is not a control function"),
        )),
    }
}

/// DATABASE(), USER(), VERSION() and the others that read the session.
pub(super) fn information(
    function: Function,
    values: &[Cow<'_, SqlValue>],
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    Ok(match function {
        Function::Database => match env.database() {
            Some(database) => SqlValue::String(database.into_bytes()),
            None => SqlValue::Null,
        },
        Function::User | Function::CurrentUser => SqlValue::String(env.user().into_bytes()),
        Function::ConnectionId => SqlValue::UInt(env.connection_id()),
        Function::Version => env.system_variable("version", false)?,
        Function::LastInsertId => match values.first() {
            None => SqlValue::UInt(env.last_insert_id()),
            Some(value) if value.is_null() => {
                env.set_last_insert_id(0);
                SqlValue::Null
            }
            Some(value) => {
                let id = int_argument(value, env) as u64;
                env.set_last_insert_id(id);
                SqlValue::UInt(id)
            }
        },
        Function::RowCount => SqlValue::Int(env.row_count()),
        Function::FoundRows => SqlValue::Int(i64::try_from(env.found_rows()).unwrap_or(i64::MAX)),
        Function::Uuid => SqlValue::String(uuid().into_bytes()),
        other => {
            return Err(error(
                1105,
                format!("internal error: {other:?} is not an information function"),
            ));
        }
    })
}

/// 100-nanosecond intervals from the Gregorian reform (1582-10-15) to the
/// Unix epoch: a version 1 UUID counts time from there.
const UUID_EPOCH_OFFSET: u64 = 0x01B2_1DD2_1381_4000;

/// The last timestamp handed out, so that every UUID of the process is
/// unique even within one clock tick (MySQL steps the time the same way).
static UUID_LAST_TIME: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `UUID()`: a version 1 UUID as MySQL makes it (time, clock sequence,
/// node), with a random node and clock sequence per process, since the
/// SQL node has no MAC address of its own to give.
fn uuid() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::OnceLock;
    use std::sync::atomic::Ordering as AtomicOrdering;
    static NODE_AND_SEQUENCE: OnceLock<(u64, u64)> = OnceLock::new();
    let (node, sequence) = *NODE_AND_SEQUENCE.get_or_init(|| {
        let random = |salt: u64| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(salt);
            hasher.finish()
        };
        // A random node sets the multicast bit, as RFC 4122 asks.
        let node = (random(1) & 0xFFFF_FFFF_FFFF) | 0x0100_0000_0000;
        (node, random(2) & 0x3FFF)
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| (elapsed.as_nanos() / 100) as u64)
        .wrapping_add(UUID_EPOCH_OFFSET);
    let previous = UUID_LAST_TIME.fetch_max(now, AtomicOrdering::Relaxed);
    let time = if previous >= now {
        UUID_LAST_TIME.fetch_add(1, AtomicOrdering::Relaxed) + 1
    } else {
        now
    };
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        time & 0xFFFF_FFFF,
        (time >> 32) & 0xFFFF,
        ((time >> 48) & 0x0FFF) | 0x1000,
        sequence | 0x8000,
        node
    )
}
