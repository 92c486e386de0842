//! Numeric functions. Exact arguments (integers, decimals) give exact
//! results where MySQL's do; the rest compute in doubles.

use super::super::evaluate::{bits_of, decimal_of, double_of, warn};
use super::super::{Environment, Expression};
use super::{Function, int_argument, string};
use crate::convert::error;
use crate::error::SqlError;
use crate::value::{SqlType, SqlValue};
use std::borrow::Cow;
use std::cell::RefCell;

/// MySQL's `my_rnd` modulus.
const RANDOM_MODULUS: u64 = 0x3FFF_FFFF;

/// The state of one RAND() call site within one statement.
#[derive(Debug, Clone, Copy)]
struct RandomState {
    first: u64,
    second: u64,
}

impl RandomState {
    /// MySQL's seeding for RAND(N).
    fn seeded(seed: i64) -> RandomState {
        let seed = seed as u32 as u64;
        RandomState {
            first: (seed.wrapping_mul(0x10001).wrapping_add(55_555_555)) % RANDOM_MODULUS,
            second: (seed.wrapping_mul(0x1000_0001)) % RANDOM_MODULUS,
        }
    }

    /// MySQL's `my_rnd`: the next number in [0, 1).
    fn next(&mut self) -> f64 {
        self.first = (self.first * 3 + self.second) % RANDOM_MODULUS;
        self.second = (self.first + self.second + 33) % RANDOM_MODULUS;
        self.first as f64 / RANDOM_MODULUS as f64
    }
}

/// The statement RAND() states belong to, and the states by call site.
#[derive(Default)]
struct RandomStates {
    statement: Option<(u64, crate::value::Datetime)>,
    sites: Vec<(usize, RandomState)>,
}

/// Most RAND() call sites tracked per statement (more start over).
const RANDOM_SITES_MAX: usize = 64;

thread_local! {
    static RANDOM_STATES: RefCell<RandomStates> = RefCell::new(RandomStates::default());
}

/// RAND() / RAND(seed): a sequence per call site and statement, seeded as
/// MySQL seeds it (so RAND(1) gives MySQL's numbers); an unseeded RAND()
/// starts from the connection id and the statement's time.
fn random(site: usize, seed: Option<(i64, bool)>, env: &mut dyn Environment) -> f64 {
    let statement = (env.connection_id(), env.now());
    RANDOM_STATES.with(|states| {
        let mut states = states.borrow_mut();
        if states.statement != Some(statement) {
            states.statement = Some(statement);
            states.sites.clear();
        }
        // A seed that is not constant reseeds every row, as MySQL does.
        if let Some((seed, false)) = seed {
            return RandomState::seeded(seed).next();
        }
        if let Some((_, state)) = states.sites.iter_mut().find(|(key, _)| *key == site) {
            return state.next();
        }
        let mut state = match seed {
            Some((seed, _)) => RandomState::seeded(seed),
            None => {
                let (seconds, microsecond) = statement.1.unix_seconds();
                let mixed = (statement.0 as i64)
                    .wrapping_mul(0x9E37_79B9)
                    .wrapping_add(seconds)
                    .wrapping_mul(1_000_003)
                    .wrapping_add(i64::from(microsecond));
                RandomState::seeded(mixed)
            }
        };
        let value = state.next();
        if states.sites.len() >= RANDOM_SITES_MAX {
            states.sites.clear();
        }
        states.sites.push((site, state));
        value
    })
}

fn double_out_of_range(text: &str) -> SqlError {
    error(1690, format!("DOUBLE value is out of range in '{text}'"))
}

/// MySQL's `my_double_round`: to `digits` places (negative: tens,
/// hundreds...), half to even as `rint`, or toward zero.
pub(crate) fn round_double(value: f64, digits: i64, truncate: bool) -> f64 {
    let magnitude = digits.unsigned_abs().min(400) as i32;
    let factor = 10f64.powi(magnitude);
    if digits >= 0 && !factor.is_finite() {
        return value;
    }
    if digits < 0 && !factor.is_finite() {
        return 0.0;
    }
    let scaled = if digits >= 0 {
        value * factor
    } else {
        value / factor
    };
    if !scaled.is_finite() {
        return value;
    }
    let rounded = if truncate {
        scaled.trunc()
    } else {
        scaled.round_ties_even()
    };
    if digits >= 0 {
        rounded / factor
    } else {
        rounded * factor
    }
}

/// An integer rounded to 10^-digits (digits < 0), half away from zero or
/// toward zero; `None` when the result overflows.
fn round_integer(value: i128, digits: i64, truncate: bool) -> Option<i128> {
    if digits >= 0 {
        return Some(value);
    }
    let places = digits.unsigned_abs();
    if places > 38 {
        return Some(0);
    }
    let factor = 10i128.checked_pow(places as u32)?;
    let quotient = value / factor;
    let remainder = (value % factor).abs();
    let adjusted = if !truncate && remainder * 2 >= factor {
        if value < 0 {
            quotient - 1
        } else {
            quotient + 1
        }
    } else {
        quotient
    };
    adjusted.checked_mul(factor)
}

fn integer_value(value: i128, unsigned: bool, text: &str) -> Result<SqlValue, SqlError> {
    if unsigned {
        return u64::try_from(value).map(SqlValue::UInt).map_err(|_| {
            error(
                1690,
                format!("BIGINT UNSIGNED value is out of range in '{text}'"),
            )
        });
    }
    match i64::try_from(value) {
        Ok(value) => Ok(SqlValue::Int(value)),
        Err(_) => u64::try_from(value)
            .map(SqlValue::UInt)
            .map_err(|_| error(1690, format!("BIGINT value is out of range in '{text}'"))),
    }
}

fn logarithm_argument(env: &mut dyn Environment) -> SqlValue {
    warn(env, 3020, "Invalid argument for logarithm".to_string());
    SqlValue::Null
}

fn function_name(function: Function) -> &'static str {
    match function {
        Function::Abs => "abs",
        Function::Round => "round",
        Function::Truncate => "truncate",
        Function::Power => "pow",
        Function::Exp => "exp",
        Function::Cot => "cot",
        _ => "function",
    }
}

pub(super) fn evaluate(
    function: Function,
    values: &[Cow<'_, SqlValue>],
    arguments: &[Expression],
    sql_type: &SqlType,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    use Function as F;
    let name = function_name(function);
    let text = || {
        let shown: Vec<String> = values
            .iter()
            .map(|value| String::from_utf8_lossy(&value.to_text()).into_owned())
            .collect();
        format!("{name}({})", shown.join(","))
    };
    let double = |value: f64| -> Result<SqlValue, SqlError> {
        if value.is_finite() {
            Ok(SqlValue::Double(value))
        } else {
            Err(double_out_of_range(&text()))
        }
    };
    match function {
        F::Abs => match values[0].as_ref() {
            SqlValue::Int(value) => match value.checked_abs() {
                Some(absolute) => Ok(SqlValue::Int(absolute)),
                None => Err(error(
                    1690,
                    format!("BIGINT value is out of range in '{}'", text()),
                )),
            },
            SqlValue::UInt(value) => Ok(SqlValue::UInt(*value)),
            SqlValue::Decimal(value) => Ok(SqlValue::Decimal(value.abs())),
            other if sql_type.is_decimal_type() => {
                Ok(SqlValue::Decimal(decimal_of(other, env).abs()))
            }
            other => double(double_of(other, env).abs()),
        },
        F::Sign => {
            let sign = match values[0].as_ref() {
                SqlValue::Int(value) => value.signum(),
                SqlValue::UInt(value) => i64::from(*value > 0),
                SqlValue::Decimal(value) => value.mantissa.signum() as i64,
                other => {
                    let number = double_of(other, env);
                    if number > 0.0 {
                        1
                    } else if number < 0.0 {
                        -1
                    } else {
                        0
                    }
                }
            };
            Ok(SqlValue::Int(sign))
        }
        F::Round | F::Truncate => {
            let truncate = function == F::Truncate;
            let digits = values.get(1).map_or(0, |digits| int_argument(digits, env));
            match values[0].as_ref() {
                SqlValue::Int(value) => {
                    let rounded =
                        round_integer(i128::from(*value), digits, truncate).ok_or_else(|| {
                            error(
                                1690,
                                format!("BIGINT value is out of range in '{}'", text()),
                            )
                        })?;
                    integer_value(rounded, false, &text())
                }
                SqlValue::UInt(value) => {
                    let rounded =
                        round_integer(i128::from(*value), digits, truncate).ok_or_else(|| {
                            error(
                                1690,
                                format!("BIGINT UNSIGNED value is out of range in '{}'", text()),
                            )
                        })?;
                    integer_value(rounded, true, &text())
                }
                other if matches!(other, SqlValue::Decimal(_)) || sql_type.is_decimal_type() => {
                    let decimal = decimal_of(other, env);
                    let rounded = if truncate {
                        decimal.truncate(digits)
                    } else {
                        decimal.round(digits)
                    };
                    let rounded =
                        rounded.ok_or_else(|| crate::value::decimal_out_of_range(&text()))?;
                    if sql_type.is_integer_type() {
                        let (value, _) = rounded.to_i64();
                        return Ok(SqlValue::Int(value));
                    }
                    Ok(SqlValue::Decimal(rounded))
                }
                other => {
                    let number = double_of(other, env);
                    double(round_double(number, digits, truncate))
                }
            }
        }
        F::Floor | F::Ceiling => {
            let ceiling = function == F::Ceiling;
            match values[0].as_ref() {
                SqlValue::Int(_) | SqlValue::UInt(_) => Ok(values[0].as_ref().clone()),
                other
                    if matches!(other, SqlValue::Decimal(_))
                        || sql_type.is_decimal_type()
                        || sql_type.is_integer_type()
                            && !matches!(other, SqlValue::Double(_) | SqlValue::String(_)) =>
                {
                    let decimal = decimal_of(other, env);
                    let whole = if ceiling {
                        decimal.ceil()
                    } else {
                        decimal.floor()
                    };
                    if sql_type.is_integer_type() {
                        let (value, conversion) = whole.to_i64();
                        if conversion == crate::value::Conversion::OutOfRange {
                            return Err(error(
                                1690,
                                format!("BIGINT value is out of range in '{}'", text()),
                            ));
                        }
                        return Ok(SqlValue::Int(value));
                    }
                    Ok(SqlValue::Decimal(whole))
                }
                other => {
                    let number = double_of(other, env);
                    double(if ceiling {
                        number.ceil()
                    } else {
                        number.floor()
                    })
                }
            }
        }
        F::Power => {
            let base = double_of(&values[0], env);
            let exponent = double_of(&values[1], env);
            double(base.powf(exponent))
        }
        F::Sqrt => {
            let number = double_of(&values[0], env);
            Ok(if number < 0.0 {
                SqlValue::Null
            } else {
                SqlValue::Double(number.sqrt())
            })
        }
        F::Exp => double(double_of(&values[0], env).exp()),
        F::Ln | F::Log2 | F::Log10 => {
            let number = double_of(&values[0], env);
            if number <= 0.0 {
                return Ok(logarithm_argument(env));
            }
            Ok(SqlValue::Double(match function {
                F::Ln => number.ln(),
                F::Log2 => number.log2(),
                _ => number.log10(),
            }))
        }
        F::Log => {
            if values.len() == 1 {
                let number = double_of(&values[0], env);
                if number <= 0.0 {
                    return Ok(logarithm_argument(env));
                }
                return Ok(SqlValue::Double(number.ln()));
            }
            let base = double_of(&values[0], env);
            let number = double_of(&values[1], env);
            if number <= 0.0 || base <= 0.0 || base == 1.0 {
                return Ok(logarithm_argument(env));
            }
            Ok(SqlValue::Double(number.ln() / base.ln()))
        }
        F::Pi => Ok(SqlValue::Double(std::f64::consts::PI)),
        F::Rand => {
            let site = sql_type as *const SqlType as usize;
            let seed = match (values.first(), arguments.first()) {
                (Some(value), Some(argument)) => {
                    let seed = if value.is_null() {
                        0
                    } else {
                        int_argument(value, env)
                    };
                    Some((seed, argument.is_constant()))
                }
                _ => None,
            };
            Ok(SqlValue::Double(random(site, seed, env)))
        }
        F::Conv => {
            let from = int_argument(&values[1], env);
            let to = int_argument(&values[2], env);
            Ok(string::conv(&values[0], from, to))
        }
        F::Degrees => double(double_of(&values[0], env).to_degrees()),
        F::Radians => double(double_of(&values[0], env).to_radians()),
        F::Sin => double(double_of(&values[0], env).sin()),
        F::Cos => double(double_of(&values[0], env).cos()),
        F::Tan => double(double_of(&values[0], env).tan()),
        F::Cot => {
            let number = double_of(&values[0], env);
            let tangent = number.tan();
            if tangent == 0.0 {
                return Err(double_out_of_range(&text()));
            }
            double(1.0 / tangent)
        }
        F::Asin | F::Acos => {
            let number = double_of(&values[0], env);
            if !(-1.0..=1.0).contains(&number) {
                return Ok(SqlValue::Null);
            }
            Ok(SqlValue::Double(if function == F::Asin {
                number.asin()
            } else {
                number.acos()
            }))
        }
        F::Atan => {
            if values.len() == 2 {
                let y = double_of(&values[0], env);
                let x = double_of(&values[1], env);
                return double(y.atan2(x));
            }
            double(double_of(&values[0], env).atan())
        }
        F::Atan2 => {
            let y = double_of(&values[0], env);
            let x = double_of(&values[1], env);
            double(y.atan2(x))
        }
        F::BitCount => Ok(SqlValue::Int(i64::from(
            bits_of(&values[0], env).count_ones(),
        ))),
        _ => Err(error(
            1105,
            format!("internal error: {function:?} is not a numeric function"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_follows_mysql() {
        // ROUND(1.298, 1) is decimal; doubles: ROUND(25E-1) → 2 (rint), ROUND(-1.58E0) → -2.
        assert_eq!(round_double(2.5, 0, false), 2.0);
        assert_eq!(round_double(-1.58, 0, false), -2.0);
        assert_eq!(round_double(1.298, 1, false), 1.3);
        assert_eq!(round_double(1.999, 1, true), 1.9);
        assert_eq!(round_double(122.0, -2, true), 100.0);
        assert_eq!(round_integer(125, -1, false), Some(130));
        assert_eq!(round_integer(-125, -1, false), Some(-130));
        assert_eq!(round_integer(125, -1, true), Some(120));
        assert_eq!(round_integer(5, -40, false), Some(0));
    }

    #[test]
    fn random_matches_mysql_seeding() {
        // MySQL: SELECT RAND(1) → 0.40540353712197724.
        let mut state = RandomState::seeded(1);
        assert!((state.next() - 0.405_403_537_121_977_24).abs() < 1e-15);
    }
}
