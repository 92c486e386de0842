//! `CAST(x AS type)`, `CONVERT(x, type)` and `CONVERT(x USING charset)`.

use super::compile::{charset_collation, derived, text_length};
use super::evaluate::{decimal_of, double_of, lossy, warn, warn_truncated};
use super::{CONNECTION_COLLATION, Coercibility, Environment, Expression, Node};
use crate::convert::{convert_charset, error};
use crate::error::SqlError;
use crate::temporal::FSP_MAX;
use crate::value::{
    Conversion, DECIMAL_DIGITS_MAX, DECIMAL_SCALE_MAX, Decimal, SqlType, SqlValue, parse_integer,
    parse_unsigned, write_text,
};
use mysql_protocol::FieldType;
use schema::Collation;
use sqlparser::ast::{CharacterLength, DataType, ExactNumberInfo, TypeModifier};
use std::borrow::Cow;

/// MySQL's default DECIMAL precision in CAST (DECIMAL is DECIMAL(10,0)).
const CAST_DECIMAL_PRECISION_DEFAULT: u8 = 10;
/// MySQL's largest CHAR(n)/BINARY(n) in a CAST before it becomes a BLOB type.
const CAST_LENGTH_MAX: u64 = 4_294_967_295;

/// What a CAST converts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CastTarget {
    Signed,
    Unsigned,
    Char {
        length: Option<u32>,
        collation: Collation,
    },
    Binary {
        length: Option<u32>,
    },
    Decimal {
        precision: u8,
        scale: u8,
    },
    Date,
    Datetime {
        fsp: u8,
    },
    Time {
        fsp: u8,
    },
    Double,
    Float,
    Year,
    /// `CONVERT(x USING charset)`: the text in another character set.
    Convert {
        to: Collation,
    },
}

fn length_of(length: &Option<CharacterLength>) -> Result<Option<u32>, SqlError> {
    match length {
        None => Ok(None),
        Some(CharacterLength::IntegerLength { length, .. }) => {
            if *length > CAST_LENGTH_MAX {
                return Err(error(
                    1074,
                    format!("Column length too big for column 'cast' (max = {CAST_LENGTH_MAX})"),
                ));
            }
            Ok(Some(*length as u32))
        }
        Some(CharacterLength::Max) => Err(SqlError::syntax("near 'MAX'")),
    }
}

fn fsp_of(fsp: Option<u64>) -> Result<u8, SqlError> {
    match fsp {
        None => Ok(0),
        Some(fsp) if fsp <= u64::from(FSP_MAX) => Ok(fsp as u8),
        Some(fsp) => Err(error(
            1426,
            format!("Too-big precision {fsp} specified for 'CAST'. Maximum is 6."),
        )),
    }
}

/// The target a data type names, as MySQL's CAST allows them.
fn target_of(data_type: &DataType) -> Result<CastTarget, SqlError> {
    Ok(match data_type {
        DataType::Signed | DataType::SignedInteger => CastTarget::Signed,
        DataType::Unsigned | DataType::UnsignedInteger => CastTarget::Unsigned,
        DataType::Char(length) | DataType::Character(length) => CastTarget::Char {
            length: length_of(length)?,
            collation: CONNECTION_COLLATION,
        },
        DataType::Binary(length) => CastTarget::Binary {
            length: length.map(|length| length.min(CAST_LENGTH_MAX) as u32),
        },
        DataType::Decimal(info) | DataType::Dec(info) | DataType::Numeric(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => (u64::from(CAST_DECIMAL_PRECISION_DEFAULT), 0),
                ExactNumberInfo::Precision(precision) => (*precision, 0),
                ExactNumberInfo::PrecisionAndScale(precision, scale) => {
                    (*precision, (*scale).max(0) as u64)
                }
            };
            if precision > 65 || precision == 0 {
                return Err(error(
                    1426,
                    format!("Too-big precision {precision} specified for 'CAST'. Maximum is 65."),
                ));
            }
            if scale > u64::from(DECIMAL_SCALE_MAX) {
                return Err(error(
                    1425,
                    format!("Too big scale {scale} specified for 'CAST'. Maximum is 30."),
                ));
            }
            if scale > precision {
                return Err(error(
                    1427,
                    "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column 'CAST').",
                ));
            }
            CastTarget::Decimal {
                precision: precision as u8,
                scale: scale as u8,
            }
        }
        DataType::Date => CastTarget::Date,
        DataType::Datetime(fsp) | DataType::Timestamp(fsp, _) => {
            CastTarget::Datetime { fsp: fsp_of(*fsp)? }
        }
        DataType::Time(fsp, _) => CastTarget::Time { fsp: fsp_of(*fsp)? },
        DataType::Double(_) | DataType::DoublePrecision | DataType::Real => CastTarget::Double,
        DataType::Float(info) => match info {
            ExactNumberInfo::Precision(precision) if *precision > 24 => CastTarget::Double,
            _ => CastTarget::Float,
        },
        DataType::Custom(name, modifiers) => {
            let name = name.to_string().to_ascii_uppercase();
            match name.as_str() {
                "NCHAR" => {
                    let length = match modifiers.first() {
                        Some(TypeModifier::Number(text, _)) => Some(
                            text.parse::<u32>()
                                .map_err(|_| SqlError::syntax(format!("near '{text}'")))?,
                        ),
                        None => None,
                        Some(other) => return Err(SqlError::syntax(format!("near '{other}'"))),
                    };
                    CastTarget::Char {
                        length,
                        collation: CONNECTION_COLLATION,
                    }
                }
                "YEAR" => CastTarget::Year,
                _ => return Err(SqlError::syntax(format!("near '{data_type}'"))),
            }
        }
        DataType::JSON => return Err(SqlError::unsupported("CAST AS JSON")),
        other => return Err(SqlError::syntax(format!("near '{other}'"))),
    })
}

fn target_type(target: &CastTarget, operand: &Expression) -> SqlType {
    let nullable = operand.sql_type.is_nullable();
    let sql_type = match target {
        CastTarget::Signed => SqlType::integer(21, false),
        CastTarget::Unsigned => SqlType::integer(21, true),
        CastTarget::Char { length, collation } => {
            let characters = length.unwrap_or_else(|| text_length(&operand.sql_type));
            SqlType::string(characters, *collation)
        }
        CastTarget::Binary { length } => {
            let bytes = length.unwrap_or_else(|| {
                text_length(&operand.sql_type)
                    .saturating_mul(operand.sql_type.collation.bytes_per_char_max())
            });
            SqlType::string(bytes, Collation::Binary)
        }
        CastTarget::Decimal { precision, scale } => {
            SqlType::decimal(u32::from(*precision), *scale, false)
        }
        CastTarget::Date => SqlType::date(),
        CastTarget::Datetime { fsp } => SqlType::datetime(*fsp),
        CastTarget::Time { fsp } => SqlType::time(*fsp),
        CastTarget::Double => SqlType::double(),
        CastTarget::Float => SqlType {
            field_type: FieldType::Float,
            length: 12,
            ..SqlType::double()
        },
        CastTarget::Year => SqlType::new(
            FieldType::Year,
            mysql_protocol::column::flags::UNSIGNED | mysql_protocol::column::flags::ZEROFILL,
            4,
            0,
            Collation::Binary,
        ),
        CastTarget::Convert { to } => SqlType::string(text_length(&operand.sql_type), *to),
    };
    // Casts to dates and times give NULL for values that are none; the others keep NULL-ness.
    let may_fail = matches!(
        target,
        CastTarget::Date | CastTarget::Datetime { .. } | CastTarget::Time { .. } | CastTarget::Year
    );
    sql_type.with_not_null(!nullable && !may_fail)
}

fn cast_expression(operand: Expression, target: CastTarget, text: String) -> Expression {
    let operand = if operand.enum_members.is_some()
        && matches!(
            target,
            CastTarget::Signed
                | CastTarget::Unsigned
                | CastTarget::Decimal { .. }
                | CastTarget::Double
                | CastTarget::Float
        ) {
        // An ENUM cast to a number is its index.
        super::compile::numeric_operand(operand)
    } else {
        operand
    };
    let sql_type = target_type(&target, &operand);
    let children = [&operand];
    let mut expression = derived(
        Node::Cast {
            operand: Box::new(operand.clone()),
            target: target.clone(),
            text: text.into_boxed_str(),
        },
        sql_type,
        &children,
    );
    if matches!(
        target,
        CastTarget::Char { .. } | CastTarget::Binary { .. } | CastTarget::Convert { .. }
    ) {
        // A string made by CAST binds like the operand's text would.
        expression.coercibility = operand.coercibility.min(Coercibility::Coercible);
        if operand.coercibility == Coercibility::Numeric {
            expression.coercibility = Coercibility::Coercible;
        }
    }
    expression
}

/// `CAST(operand AS data_type)`; `text` names it in warnings.
pub(crate) fn compile_cast(
    operand: Expression,
    data_type: &DataType,
    text: String,
) -> Result<Expression, SqlError> {
    let target = target_of(data_type)?;
    Ok(cast_expression(operand, target, text))
}

/// `CAST(operand AS CHAR(n) CHARACTER SET charset)` and
/// `CONVERT(operand, CHAR(n) CHARACTER SET charset)`: the text in that
/// character set (its default collation).
pub(crate) fn compile_cast_with_charset(
    operand: Expression,
    data_type: &DataType,
    charset: &str,
    text: String,
) -> Result<Expression, SqlError> {
    let charset = charset.trim_matches(|character| matches!(character, '`' | '\'' | '"'));
    let Some(to) = charset_collation(charset) else {
        return Err(error(1115, format!("Unknown character set: '{charset}'")));
    };
    let target = match target_of(data_type)? {
        CastTarget::Char { length, .. } => CastTarget::Char {
            length,
            collation: to,
        },
        _ => return Err(SqlError::syntax(format!("near 'CHARACTER SET {charset}'"))),
    };
    Ok(cast_expression(operand, target, text))
}

/// `CONVERT(operand USING charset)`.
pub(crate) fn compile_convert_using(
    operand: Expression,
    charset: &str,
) -> Result<Expression, SqlError> {
    let charset = charset.trim_matches('`');
    let Some(to) = charset_collation(charset) else {
        return Err(error(1115, format!("Unknown character set: '{charset}'")));
    };
    Ok(cast_expression(
        operand,
        CastTarget::Convert { to },
        String::new(),
    ))
}

/// The operand as text in `collation` (a number or date under COLLATE).
pub(crate) fn to_string_expression(operand: Expression, collation: Collation) -> Expression {
    cast_expression(
        operand,
        CastTarget::Char {
            length: None,
            collation,
        },
        String::new(),
    )
}

fn text_of<'a>(value: &'a SqlValue, operand_type: &SqlType) -> Cow<'a, [u8]> {
    match value {
        SqlValue::String(text) => Cow::Borrowed(text),
        other => {
            let mut text = Vec::new();
            write_text(other, operand_type, &mut text);
            Cow::Owned(text)
        }
    }
}

/// Cuts text to `characters` characters of its character set.
fn cut_characters(text: &[u8], characters: usize, utf8: bool) -> Option<usize> {
    if !utf8 {
        return (text.len() > characters).then_some(characters);
    }
    let mut seen = 0;
    for (position, &byte) in text.iter().enumerate() {
        if byte & 0xC0 != 0x80 {
            if seen == characters {
                return Some(position);
            }
            seen += 1;
        }
    }
    None
}

pub(crate) fn evaluate_cast<'a>(
    target: &CastTarget,
    value: Cow<'a, SqlValue>,
    operand_type: &SqlType,
    text: &str,
    env: &mut dyn Environment,
) -> Result<Cow<'a, SqlValue>, SqlError> {
    if value.is_null() {
        return Ok(value);
    }
    let owned = |value: SqlValue| Ok(Cow::Owned(value));
    match target {
        CastTarget::Signed => match value.as_ref() {
            SqlValue::Int(_) => Ok(value),
            SqlValue::UInt(unsigned) => owned(SqlValue::Int(*unsigned as i64)),
            SqlValue::String(bytes) => {
                let (number, conversion) = parse_integer(bytes);
                if conversion >= Conversion::Truncated {
                    // MySQL reads a string beyond BIGINT as unsigned when it fits.
                    let (unsigned, unsigned_conversion) = parse_unsigned(bytes);
                    if conversion == Conversion::OutOfRange
                        && unsigned_conversion == Conversion::Exact
                    {
                        return owned(SqlValue::Int(unsigned as i64));
                    }
                    warn_truncated(env, "INTEGER", &value);
                }
                owned(SqlValue::Int(number))
            }
            other => {
                let (number, conversion) = other.to_int();
                if conversion == Conversion::OutOfRange {
                    warn_truncated(env, "INTEGER", other);
                }
                owned(SqlValue::Int(number))
            }
        },
        CastTarget::Unsigned => match value.as_ref() {
            SqlValue::UInt(_) => Ok(value),
            SqlValue::Int(signed) => owned(SqlValue::UInt(*signed as u64)),
            SqlValue::String(bytes) => {
                let (number, conversion) = parse_unsigned(bytes);
                if conversion >= Conversion::Truncated {
                    warn_truncated(env, "INTEGER", &value);
                }
                owned(SqlValue::UInt(number))
            }
            other => {
                let (decimal, _) = other.to_decimal();
                let rounded = decimal.round(0).unwrap_or(decimal);
                let number = if rounded.is_negative() {
                    let (signed, conversion) = rounded.to_i64();
                    if conversion == Conversion::OutOfRange {
                        warn_truncated(env, "INTEGER", other);
                    }
                    signed as u64
                } else {
                    let (unsigned, conversion) = rounded.to_u64();
                    if conversion == Conversion::OutOfRange {
                        warn_truncated(env, "INTEGER", other);
                    }
                    unsigned
                };
                owned(SqlValue::UInt(number))
            }
        },
        CastTarget::Char { length, collation } => {
            let source = text_of(&value, operand_type);
            let mut converted = Vec::with_capacity(source.len());
            let from = if matches!(value.as_ref(), SqlValue::String(_)) {
                operand_type.collation
            } else {
                CONNECTION_COLLATION
            };
            let from = if operand_type.is_string_type() {
                from
            } else {
                CONNECTION_COLLATION
            };
            convert_charset(&source, from, *collation, &mut converted);
            if let Some(length) = length
                && let Some(cut) = cut_characters(
                    &converted,
                    *length as usize,
                    collation.bytes_per_char_max() > 1,
                )
            {
                warn(
                    env,
                    1292,
                    format!(
                        "Truncated incorrect CHAR({length}) value: '{}'",
                        lossy(&converted)
                    ),
                );
                converted.truncate(cut);
            }
            owned(SqlValue::String(converted))
        }
        CastTarget::Binary { length } => {
            let mut bytes = text_of(&value, operand_type).into_owned();
            if let Some(length) = length {
                let length = *length as usize;
                if bytes.len() > length {
                    warn(
                        env,
                        1292,
                        format!(
                            "Truncated incorrect BINARY({length}) value: '{}'",
                            lossy(&bytes)
                        ),
                    );
                    bytes.truncate(length);
                } else {
                    // BINARY(n) pads with zero bytes.
                    bytes.resize(length, 0);
                }
            }
            owned(SqlValue::String(bytes))
        }
        CastTarget::Convert { to } => {
            let source = text_of(&value, operand_type);
            let from = if operand_type.is_string_type() {
                operand_type.collation
            } else {
                CONNECTION_COLLATION
            };
            let mut converted = Vec::with_capacity(source.len());
            convert_charset(&source, from, *to, &mut converted);
            owned(SqlValue::String(converted))
        }
        CastTarget::Decimal { precision, scale } => {
            let decimal = decimal_of(&value, env);
            owned(SqlValue::Decimal(fit_decimal(
                decimal, *precision, *scale, text, env,
            )))
        }
        CastTarget::Double => owned(SqlValue::Double(double_of(&value, env))),
        CastTarget::Float => {
            let number = double_of(&value, env);
            owned(SqlValue::Double(f64::from(number as f32)))
        }
        CastTarget::Date => owned(match to_datetime_warning(&value, "datetime", env) {
            Some(datetime) => SqlValue::Date(datetime.date),
            None => SqlValue::Null,
        }),
        CastTarget::Datetime { fsp } => owned(match to_datetime_warning(&value, "datetime", env) {
            Some(datetime) => match datetime.round_to_fsp(*fsp) {
                Some(rounded) => SqlValue::Datetime(rounded),
                None => SqlValue::Null,
            },
            None => SqlValue::Null,
        }),
        CastTarget::Time { fsp } => owned(match value.to_time() {
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
                SqlValue::Time(time.round_to_fsp(*fsp))
            }
            None => {
                warn(
                    env,
                    1292,
                    format!("Incorrect time value: '{}'", lossy(&value.to_text())),
                );
                SqlValue::Null
            }
        }),
        CastTarget::Year => {
            let year = match value.as_ref() {
                SqlValue::Date(date) => i64::from(date.year),
                SqlValue::Datetime(datetime) => i64::from(datetime.date.year),
                SqlValue::String(bytes) => {
                    let (number, conversion) = parse_integer(bytes);
                    if conversion >= Conversion::Truncated {
                        warn_truncated(env, "INTEGER", &value);
                    }
                    let trimmed = bytes
                        .iter()
                        .filter(|byte| !byte.is_ascii_whitespace())
                        .count();
                    if number == 0 && trimmed < 4 {
                        2000
                    } else {
                        number
                    }
                }
                other => other.to_int().0,
            };
            let year = match year {
                0 => Some(0),
                1..=69 => Some(2000 + year),
                70..=99 => Some(1900 + year),
                1901..=2155 => Some(year),
                _ => None,
            };
            match year {
                Some(year) => owned(SqlValue::Int(year)),
                None => {
                    warn(
                        env,
                        1292,
                        format!(
                            "Truncated incorrect YEAR value: '{}'",
                            lossy(&value.to_text())
                        ),
                    );
                    owned(SqlValue::Null)
                }
            }
        }
    }
}

/// A datetime from any value, warning 1292 as MySQL does when it is none.
pub(crate) fn to_datetime_warning(
    value: &SqlValue,
    kind: &str,
    env: &mut dyn Environment,
) -> Option<crate::value::Datetime> {
    if let SqlValue::Time(time) = value {
        // A TIME on today's date, as MySQL converts it.
        let today = crate::value::Datetime::from_date(env.now().date);
        return today.add_microseconds(i128::from(time.to_microseconds()));
    }
    match value.to_datetime() {
        Some((datetime, conversion)) => {
            if conversion >= Conversion::Truncated {
                warn(
                    env,
                    1292,
                    format!(
                        "Truncated incorrect {kind} value: '{}'",
                        lossy(&value.to_text())
                    ),
                );
            }
            Some(datetime)
        }
        None => {
            warn(
                env,
                1292,
                format!("Incorrect {kind} value: '{}'", lossy(&value.to_text())),
            );
            None
        }
    }
}

/// Rounds to the scale and clamps to the precision, warning 1264 as
/// MySQL does for `CAST(1000 AS DECIMAL(3,0))` (999).
fn fit_decimal(
    decimal: Decimal,
    precision: u8,
    scale: u8,
    text: &str,
    env: &mut dyn Environment,
) -> Decimal {
    let integer_digits = u32::from(precision - scale.min(precision));
    match decimal.rescale(scale) {
        Some(rounded) if rounded.integer_digit_count() <= integer_digits => rounded,
        _ => {
            warn(
                env,
                1264,
                format!("Out of range value for column '{text}' at row 1"),
            );
            let digits = u32::from(precision).min(DECIMAL_DIGITS_MAX);
            let nines = 10i128.pow(digits) - 1;
            Decimal::new(
                if decimal.is_negative() { -nines } else { nines },
                scale.min(precision),
            )
        }
    }
}
