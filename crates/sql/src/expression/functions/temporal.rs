//! Date and time functions, in the session's time zone (UTC).

use super::super::cast::to_datetime_warning;
use super::super::evaluate::{decimal_of, double_of, int_of, lossy, warn};
use super::super::{Environment, Expression};
use super::{Function, int_argument};
use crate::convert::error;
use crate::error::SqlError;
use crate::temporal::{
    self, FSP_MAX, FormatValue, Interval, IntervalUnit, MICROSECONDS_PER_SECOND,
    TIME_MICROSECONDS_MAX,
};
use crate::value::{Conversion, Date, Datetime, Decimal, SqlType, SqlValue, Time};
use mysql_protocol::FieldType;
use std::borrow::Cow;

/// The last second `FROM_UNIXTIME` and `UNIX_TIMESTAMP` accept on 64-bit
/// MySQL 8.0.28+: 3001-01-18 23:59:59 UTC.
const UNIX_SECONDS_MAX: i64 = 32_536_771_199;

/// The interval `amount` of `unit` stands for, as MySQL reads it: whole
/// units (rounded) for simple units, a fraction for SECOND, the text's
/// fields for compound units.
fn interval_of(
    amount: &SqlValue,
    unit: IntervalUnit,
    env: &mut dyn Environment,
) -> Option<Interval> {
    if amount.is_null() {
        return None;
    }
    match unit {
        IntervalUnit::Second => {
            let seconds = decimal_of(amount, env);
            let whole = seconds.truncate(0)?;
            let fraction = seconds.checked_sub(whole)?.rescale(6)?.mantissa;
            let (whole, _) = whole.to_i64();
            Interval::simple(unit, whole, fraction as i64)
        }
        IntervalUnit::Microsecond
        | IntervalUnit::Minute
        | IntervalUnit::Hour
        | IntervalUnit::Day
        | IntervalUnit::Week
        | IntervalUnit::Month
        | IntervalUnit::Quarter
        | IntervalUnit::Year => Interval::simple(unit, int_of(amount, env), 0),
        compound => Interval::parse_compound(compound, &amount.to_text()),
    }
}

fn overflow(env: &mut dyn Environment) -> SqlValue {
    warn(
        env,
        1441,
        "Datetime function: datetime field overflow".to_string(),
    );
    SqlValue::Null
}

fn clamp_time(microseconds: i64, env: &mut dyn Environment) -> SqlValue {
    let (time, conversion) = Time::from_microseconds(microseconds);
    if conversion == Conversion::OutOfRange {
        let mut text = Vec::new();
        Time::from_microseconds(microseconds.signum() * TIME_MICROSECONDS_MAX)
            .0
            .write(0, &mut text);
        warn(
            env,
            1292,
            format!("Truncated incorrect time value: '{}'", lossy(&text)),
        );
    }
    SqlValue::Time(time)
}

/// `DATE_ADD`, `DATE_SUB`, `d ± INTERVAL`, `ADDDATE`, `SUBDATE`, `TIMESTAMPADD`.
pub(crate) fn date_add(
    value: &SqlValue,
    value_type: &SqlType,
    amount: &SqlValue,
    unit: IntervalUnit,
    subtract: bool,
    result_type: &SqlType,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    if value.is_null() || amount.is_null() {
        return Ok(SqlValue::Null);
    }
    let Some(interval) = interval_of(amount, unit, env) else {
        return Ok(SqlValue::Null);
    };
    let interval = if subtract {
        interval.negated()
    } else {
        interval
    };
    if result_type.field_type == FieldType::Time {
        let Some((time, _)) = value.to_time() else {
            return Ok(SqlValue::Null);
        };
        let total = i128::from(time.to_microseconds()) + interval.microseconds;
        let total = i64::try_from(total).unwrap_or(if total < 0 { i64::MIN } else { i64::MAX });
        return Ok(clamp_time(total, env));
    }
    let (datetime, had_time) = match value {
        SqlValue::String(text) => match temporal::parse_datetime(text) {
            Some(parsed) => {
                if parsed.conversion >= Conversion::Truncated {
                    warn(
                        env,
                        1292,
                        format!("Truncated incorrect datetime value: '{}'", lossy(text)),
                    );
                }
                (parsed.value, parsed.has_time)
            }
            None => {
                warn(
                    env,
                    1292,
                    format!("Incorrect datetime value: '{}'", lossy(text)),
                );
                return Ok(SqlValue::Null);
            }
        },
        SqlValue::Date(date) => (Datetime::from_date(*date), false),
        other => match to_datetime_warning(other, "datetime", env) {
            Some(datetime) => (datetime, !matches!(value_type.field_type, FieldType::Date)),
            None => return Ok(SqlValue::Null),
        },
    };
    if datetime.date.has_zero_part() {
        let mut text = Vec::new();
        datetime.write(0, &mut text);
        warn(
            env,
            1292,
            format!("Incorrect datetime value: '{}'", lossy(&text)),
        );
        return Ok(SqlValue::Null);
    }
    let Some(result) = temporal::add_interval(&datetime, interval) else {
        return Ok(overflow(env));
    };
    Ok(match result_type.field_type {
        FieldType::Date => SqlValue::Date(result.date),
        FieldType::DateTime | FieldType::Timestamp => SqlValue::Datetime(result),
        _ => {
            if had_time || unit.has_time_part() || result.microseconds_of_day() != 0 {
                SqlValue::Datetime(result)
            } else {
                SqlValue::Date(result.date)
            }
        }
    })
}

fn truncate_fraction(microsecond: u32, fsp: u8) -> u32 {
    let unit = 10u32.pow(u32::from(FSP_MAX - fsp.min(FSP_MAX)));
    microsecond - microsecond % unit
}

fn date_of(value: &SqlValue, env: &mut dyn Environment) -> Option<Date> {
    to_datetime_warning(value, "datetime", env).map(|datetime| datetime.date)
}

/// A date that must be a calendar day (weekdays, day numbers): zero parts give NULL.
fn calendar_date(value: &SqlValue, env: &mut dyn Environment) -> Option<Date> {
    date_of(value, env).filter(|date| !date.has_zero_part())
}

fn time_of(value: &SqlValue, env: &mut dyn Environment) -> Option<Time> {
    match value.to_time() {
        Some((time, conversion)) => {
            if conversion >= Conversion::Truncated {
                warn(
                    env,
                    1292,
                    format!(
                        "Truncated incorrect time value: '{}'",
                        lossy(&value.to_text())
                    ),
                );
            }
            Some(time)
        }
        None => {
            warn(
                env,
                1292,
                format!(
                    "Truncated incorrect time value: '{}'",
                    lossy(&value.to_text())
                ),
            );
            None
        }
    }
}

fn optional(value: Option<i64>) -> SqlValue {
    value.map_or(SqlValue::Null, SqlValue::Int)
}

/// Whether a value is a TIME for TIMEDIFF/ADDTIME (text without a date part is).
fn is_time_like(value: &SqlValue, value_type: &SqlType) -> bool {
    match value {
        SqlValue::Time(_) => true,
        SqlValue::Date(_) | SqlValue::Datetime(_) => false,
        SqlValue::String(text) => {
            let trimmed = text.trim_ascii_start();
            let digits = trimmed
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            let after = trimmed.get(digits).copied();
            !(matches!(after, Some(b'-' | b'/')) || digits >= 8 && !matches!(after, Some(b':')))
        }
        _ => value_type.field_type == FieldType::Time,
    }
}

fn extract(unit: IntervalUnit, value: &SqlValue, env: &mut dyn Environment) -> SqlValue {
    use IntervalUnit as U;
    let time_units = matches!(
        unit,
        U::Hour
            | U::Minute
            | U::Second
            | U::Microsecond
            | U::HourMinute
            | U::HourSecond
            | U::MinuteSecond
            | U::HourMicrosecond
            | U::MinuteMicrosecond
            | U::SecondMicrosecond
    );
    if time_units {
        let Some(time) = time_of(value, env) else {
            return SqlValue::Null;
        };
        let sign = if time.negative { -1 } else { 1 };
        let (hours, minutes, seconds, micro) = (
            i64::from(time.hours),
            i64::from(time.minutes),
            i64::from(time.seconds),
            i64::from(time.microsecond),
        );
        let magnitude = match unit {
            U::Hour => hours,
            U::Minute => minutes,
            U::Second => seconds,
            U::Microsecond => micro,
            U::HourMinute => hours * 100 + minutes,
            U::HourSecond => hours * 10_000 + minutes * 100 + seconds,
            U::MinuteSecond => minutes * 100 + seconds,
            U::HourMicrosecond => (hours * 10_000 + minutes * 100 + seconds) * 1_000_000 + micro,
            U::MinuteMicrosecond => (minutes * 100 + seconds) * 1_000_000 + micro,
            _ => seconds * 1_000_000 + micro,
        };
        return SqlValue::Int(sign * magnitude);
    }
    let Some(datetime) = to_datetime_warning(value, "datetime", env) else {
        return SqlValue::Null;
    };
    let date = datetime.date;
    let (day, hour, minute, second, micro) = (
        i64::from(date.day),
        i64::from(datetime.hour),
        i64::from(datetime.minute),
        i64::from(datetime.second),
        i64::from(datetime.microsecond),
    );
    SqlValue::Int(match unit {
        U::Year => i64::from(date.year),
        U::Month => i64::from(date.month),
        U::Day => day,
        U::Quarter => (i64::from(date.month) + 2) / 3,
        U::Week => {
            if date.has_zero_part() {
                return SqlValue::Null;
            }
            i64::from(date.week(temporal::week_mode(0)).0)
        }
        U::YearMonth => i64::from(date.year) * 100 + i64::from(date.month),
        U::DayHour => day * 100 + hour,
        U::DayMinute => day * 10_000 + hour * 100 + minute,
        U::DaySecond => day * 1_000_000 + hour * 10_000 + minute * 100 + second,
        U::DayMicrosecond => {
            (day * 1_000_000 + hour * 10_000 + minute * 100 + second) * 1_000_000 + micro
        }
        _ => 0,
    })
}

pub(super) fn evaluate(
    function: Function,
    values: &[Cow<'_, SqlValue>],
    arguments: &[Expression],
    sql_type: &SqlType,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    use Function as F;
    let fsp = sql_type.decimals.min(FSP_MAX);
    let now = env.now();
    Ok(match function {
        F::Now | F::Sysdate | F::UtcTimestamp => SqlValue::Datetime(Datetime {
            microsecond: truncate_fraction(now.microsecond, fsp),
            ..now
        }),
        F::Curdate | F::UtcDate => SqlValue::Date(now.date),
        F::Curtime | F::UtcTime => SqlValue::Time(Time {
            microsecond: truncate_fraction(now.microsecond, fsp),
            ..now.time_of_day()
        }),
        F::UnixTimestamp => {
            let datetime = match values.first() {
                None => Datetime {
                    microsecond: 0,
                    ..now
                },
                Some(value) if value.is_null() => return Ok(SqlValue::Null),
                Some(value) => match to_datetime_warning(value, "datetime", env) {
                    Some(datetime) => datetime,
                    None => return Ok(SqlValue::Null),
                },
            };
            let (seconds, microsecond) = datetime.unix_seconds();
            if !(0..=UNIX_SECONDS_MAX).contains(&seconds) || datetime.date.has_zero_part() {
                return Ok(if sql_type.is_decimal_type() {
                    SqlValue::Decimal(Decimal::new(0, sql_type.decimals))
                } else {
                    SqlValue::Int(0)
                });
            }
            if sql_type.is_decimal_type() {
                let scale = sql_type.decimals.min(FSP_MAX);
                let fraction = i128::from(microsecond / 10u32.pow(u32::from(FSP_MAX - scale)));
                SqlValue::Decimal(Decimal::new(
                    i128::from(seconds) * 10i128.pow(u32::from(scale)) + fraction,
                    scale,
                ))
            } else {
                SqlValue::Int(seconds)
            }
        }
        F::FromUnixtime => {
            let seconds = decimal_of(&values[0], env);
            if seconds.is_negative() {
                return Ok(SqlValue::Null);
            }
            let whole = seconds.truncate(0).unwrap_or(Decimal::ZERO);
            let (whole_seconds, _) = whole.to_i64();
            if whole_seconds > UNIX_SECONDS_MAX {
                return Ok(SqlValue::Null);
            }
            let fraction = seconds
                .checked_sub(whole)
                .and_then(|fraction| fraction.rescale(6))
                .map_or(0, |fraction| fraction.mantissa as u32);
            let Some(datetime) = Datetime::from_unix_seconds(whole_seconds, fraction) else {
                return Ok(SqlValue::Null);
            };
            if values.len() == 2 {
                let mut out = Vec::new();
                temporal::date_format(
                    &FormatValue::from_datetime(datetime),
                    &values[1].to_text(),
                    &mut out,
                );
                SqlValue::String(out)
            } else {
                let fsp = sql_type.decimals.min(FSP_MAX);
                SqlValue::Datetime(datetime.round_to_fsp(fsp).unwrap_or(datetime))
            }
        }
        F::Date => date_of(&values[0], env).map_or(SqlValue::Null, SqlValue::Date),
        F::Time => time_of(&values[0], env).map_or(SqlValue::Null, |time| {
            SqlValue::Time(time.round_to_fsp(fsp))
        }),
        F::Year => optional(date_of(&values[0], env).map(|date| i64::from(date.year))),
        F::Month => optional(date_of(&values[0], env).map(|date| i64::from(date.month))),
        F::Day => optional(date_of(&values[0], env).map(|date| i64::from(date.day))),
        F::Quarter => {
            optional(date_of(&values[0], env).map(|date| (i64::from(date.month) + 2) / 3))
        }
        F::Hour => optional(time_of(&values[0], env).map(|time| i64::from(time.hours))),
        F::Minute => optional(time_of(&values[0], env).map(|time| i64::from(time.minutes))),
        F::Second => optional(time_of(&values[0], env).map(|time| i64::from(time.seconds))),
        F::Microsecond => {
            optional(time_of(&values[0], env).map(|time| i64::from(time.microsecond)))
        }
        F::DayOfWeek => {
            optional(calendar_date(&values[0], env).map(|date| {
                i64::from(temporal::weekday_of_day_number(date.day_number(), true)) + 1
            }))
        }
        F::Weekday => {
            optional(calendar_date(&values[0], env).map(|date| i64::from(date.weekday())))
        }
        F::DayOfYear => optional(calendar_date(&values[0], env).map(|date| date.day_of_year())),
        F::DayName => match calendar_date(&values[0], env)
            .and_then(|date| temporal::day_name(date.weekday()))
        {
            Some(name) => SqlValue::String(name.as_bytes().to_vec()),
            None => SqlValue::Null,
        },
        F::MonthName => {
            match date_of(&values[0], env).and_then(|date| temporal::month_name(date.month)) {
                Some(name) => SqlValue::String(name.as_bytes().to_vec()),
                None => SqlValue::Null,
            }
        }
        F::LastDay => match date_of(&values[0], env).and_then(|date| date.last_day_of_month()) {
            Some(date) => SqlValue::Date(date),
            None => SqlValue::Null,
        },
        F::Week | F::WeekOfYear | F::YearWeek => {
            let Some(date) = calendar_date(&values[0], env) else {
                return Ok(SqlValue::Null);
            };
            let mode = match function {
                F::WeekOfYear => 3,
                _ => values.get(1).map_or(0, |mode| int_argument(mode, env)),
            };
            if function == F::YearWeek {
                let (week, year) = date.week(temporal::week_mode(mode) | temporal::WEEK_YEAR);
                SqlValue::Int(i64::from(year) * 100 + i64::from(week))
            } else {
                SqlValue::Int(i64::from(date.week(temporal::week_mode(mode)).0))
            }
        }
        F::ToDays => optional(calendar_date(&values[0], env).map(|date| date.day_number())),
        F::ToSeconds => {
            let Some(datetime) = to_datetime_warning(&values[0], "datetime", env) else {
                return Ok(SqlValue::Null);
            };
            if datetime.date.has_zero_part() {
                return Ok(SqlValue::Null);
            }
            SqlValue::Int(
                datetime.date.day_number() * 86_400
                    + datetime.microseconds_of_day() / MICROSECONDS_PER_SECOND,
            )
        }
        F::FromDays => {
            let number = int_argument(&values[0], env);
            if number < temporal::DAY_NUMBER_MIN_FOR_DATES {
                SqlValue::Date(Date::ZERO)
            } else {
                Date::from_day_number(number).map_or(SqlValue::Null, SqlValue::Date)
            }
        }
        F::DateDiff => {
            let first = calendar_date(&values[0], env);
            let second = calendar_date(&values[1], env);
            match (first, second) {
                (Some(first), Some(second)) => {
                    SqlValue::Int(first.day_number() - second.day_number())
                }
                _ => SqlValue::Null,
            }
        }
        F::TimeDiff => {
            let first_is_time = is_time_like(&values[0], &arguments[0].sql_type);
            let second_is_time = is_time_like(&values[1], &arguments[1].sql_type);
            if first_is_time != second_is_time {
                return Ok(SqlValue::Null);
            }
            if first_is_time {
                let (Some(first), Some(second)) =
                    (time_of(&values[0], env), time_of(&values[1], env))
                else {
                    return Ok(SqlValue::Null);
                };
                clamp_time(first.to_microseconds() - second.to_microseconds(), env)
            } else {
                let first = to_datetime_warning(&values[0], "datetime", env);
                let second = to_datetime_warning(&values[1], "datetime", env);
                let (Some(first), Some(second)) = (first, second) else {
                    return Ok(SqlValue::Null);
                };
                let difference = first.total_microseconds() - second.total_microseconds();
                let difference = i64::try_from(difference).unwrap_or(if difference < 0 {
                    i64::MIN
                } else {
                    i64::MAX
                });
                clamp_time(difference, env)
            }
        }
        F::TimestampDiff(unit) => {
            let first = to_datetime_warning(&values[0], "datetime", env);
            let second = to_datetime_warning(&values[1], "datetime", env);
            match (first, second) {
                (Some(first), Some(second)) => {
                    optional(temporal::timestamp_difference(unit, &first, &second))
                }
                _ => SqlValue::Null,
            }
        }
        F::DateFormat => {
            let Some(datetime) = to_datetime_warning(&values[0], "datetime", env) else {
                return Ok(SqlValue::Null);
            };
            let mut out = Vec::new();
            temporal::date_format(
                &FormatValue::from_datetime(datetime),
                &values[1].to_text(),
                &mut out,
            );
            SqlValue::String(out)
        }
        F::TimeFormat => {
            let Some(time) = time_of(&values[0], env) else {
                return Ok(SqlValue::Null);
            };
            let mut out = Vec::new();
            temporal::date_format(
                &FormatValue::from_time(time),
                &values[1].to_text(),
                &mut out,
            );
            SqlValue::String(out)
        }
        F::StrToDate => {
            let text = values[0].to_text();
            let parsed = temporal::str_to_date(&text, &values[1].to_text());
            let parsed = parsed.filter(|parsed| {
                // NO_ZERO_IN_DATE (part of the strict default sql_mode) refuses zero months and days.
                !(parsed.has_date && parsed.datetime.date.has_zero_part() && env.strict())
            });
            match parsed {
                None => {
                    warn(
                        env,
                        1411,
                        format!(
                            "Incorrect datetime value: '{}' for function str_to_date",
                            lossy(&text)
                        ),
                    );
                    SqlValue::Null
                }
                Some(parsed) => match sql_type.field_type {
                    FieldType::Date => SqlValue::Date(parsed.datetime.date),
                    FieldType::Time => SqlValue::Time(parsed.datetime.time_of_day()),
                    _ => SqlValue::Datetime(parsed.datetime),
                },
            }
        }
        F::Extract(unit) => extract(unit, &values[0], env),
        F::MakeDate => {
            let year = int_argument(&values[0], env);
            let day_of_year = int_argument(&values[1], env);
            if day_of_year <= 0 || !(0..=9999).contains(&year) {
                return Ok(SqlValue::Null);
            }
            let year = match year {
                0..=69 => year + 2000,
                70..=99 => year + 1900,
                other => other,
            };
            let first = temporal::day_number(year as u32, 1, 1);
            match first
                .checked_add(day_of_year - 1)
                .and_then(Date::from_day_number)
            {
                Some(date) if date.year <= 9999 => SqlValue::Date(date),
                _ => SqlValue::Null,
            }
        }
        F::MakeTime => {
            let hours = int_argument(&values[0], env);
            let minutes = int_argument(&values[1], env);
            let seconds = decimal_of(&values[2], env);
            if !(0..=59).contains(&minutes)
                || seconds.is_negative()
                || seconds.compare(Decimal::from_i64(60)) != std::cmp::Ordering::Less
            {
                return Ok(SqlValue::Null);
            }
            let second_micro = seconds.rescale(6).map_or(0, |value| value.mantissa as i64);
            let magnitude = (hours.unsigned_abs().min(1_000_000) as i64 * 3600 + minutes * 60)
                * MICROSECONDS_PER_SECOND
                + second_micro;
            clamp_time(if hours < 0 { -magnitude } else { magnitude }, env)
        }
        F::SecToTime => {
            let seconds = decimal_of(&values[0], env);
            let micro = seconds.rescale(6).map_or(
                if seconds.is_negative() {
                    i64::MIN
                } else {
                    i64::MAX
                },
                |value| i64::try_from(value.mantissa).unwrap_or(i64::MAX),
            );
            let time = clamp_time(micro, env);
            match time {
                SqlValue::Time(time) => SqlValue::Time(time.round_to_fsp(fsp)),
                other => other,
            }
        }
        F::TimeToSec => optional(
            time_of(&values[0], env).map(|time| time.to_microseconds() / MICROSECONDS_PER_SECOND),
        ),
        F::AddTime | F::SubTime => {
            let Some(delta) = time_of(&values[1], env) else {
                return Ok(SqlValue::Null);
            };
            let delta = if function == F::SubTime {
                -delta.to_microseconds()
            } else {
                delta.to_microseconds()
            };
            if is_time_like(&values[0], &arguments[0].sql_type) {
                let Some(time) = time_of(&values[0], env) else {
                    return Ok(SqlValue::Null);
                };
                clamp_time(time.to_microseconds().saturating_add(delta), env)
            } else {
                let Some(datetime) = to_datetime_warning(&values[0], "datetime", env) else {
                    return Ok(SqlValue::Null);
                };
                match datetime.add_microseconds(i128::from(delta)) {
                    Some(result) => SqlValue::Datetime(result),
                    None => overflow(env),
                }
            }
        }
        F::PeriodAdd => {
            let period = int_argument(&values[0], env);
            let months = int_argument(&values[1], env);
            if period == 0 {
                // MySQL answers 0 for the zero period before checking it.
                return Ok(SqlValue::Int(0));
            }
            let Some(month) = period_month(period) else {
                return Err(wrong_period_arguments("period_add"));
            };
            SqlValue::Int(month_period(month.saturating_add(months)))
        }
        F::PeriodDiff => {
            let first = int_argument(&values[0], env);
            let second = int_argument(&values[1], env);
            match (period_month(first), period_month(second)) {
                (Some(first), Some(second)) => SqlValue::Int(first.saturating_sub(second)),
                _ => return Err(wrong_period_arguments("period_diff")),
            }
        }
        _ => {
            let _ = double_of;
            return Err(error(
                1105,
                format!("internal error: {function:?} is not a date function"),
            ));
        }
    })
}

/// Two-digit years below this are 20YY, the others 19YY (MySQL's `YY_PART_YEAR`).
const TWO_DIGIT_YEAR_PIVOT: i64 = 70;

/// A period (`YYMM` or `YYYYMM`) as a count of months since year 0, or
/// None when it is no period (MySQL's `valid_period`: a month 1..12, at
/// most six digits, not negative).
fn period_month(period: i64) -> Option<i64> {
    if !(1..=999_999).contains(&period) || !(1..=12).contains(&(period % 100)) {
        return None;
    }
    let mut year = period / 100;
    if year < TWO_DIGIT_YEAR_PIVOT {
        year += 2000;
    } else if year < 100 {
        year += 1900;
    }
    Some(year * 12 + period % 100 - 1)
}

/// A count of months as a `YYYYMM` period (MySQL's `convert_month_to_period`).
fn month_period(month: i64) -> i64 {
    if month <= 0 {
        return 0;
    }
    let mut year = month / 12;
    if year < 100 {
        year += if year < TWO_DIGIT_YEAR_PIVOT {
            2000
        } else {
            1900
        };
    }
    year * 100 + month % 12 + 1
}

/// 1210, as MySQL 8.0 answers a period that is none.
fn wrong_period_arguments(function: &str) -> SqlError {
    error(1210, format!("Incorrect arguments to {function}"))
}
