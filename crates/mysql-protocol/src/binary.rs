//! The binary protocol's values: COM_STMT_EXECUTE parameters (decoded) and
//! binary result-row columns (encoded).
//!
//! Parameter block of COM_STMT_EXECUTE, for n > 0 parameters: a NULL
//! bitmap of (n+7)/8 bytes (bit i of the bitmap is parameter i), a
//! new-params-bound byte, and when it is 1 the types (2 bytes each: the
//! type byte, then a flags byte whose 0x80 bit means unsigned); then each
//! non-NULL parameter's value, unless it was sent with
//! COM_STMT_SEND_LONG_DATA.
//!
//! Value formats by type: TINY 1 byte; SHORT and YEAR 2; LONG and INT24 4;
//! LONGLONG 8; FLOAT 4 (IEEE single); DOUBLE 8 (IEEE double); DATE,
//! DATETIME, TIMESTAMP a length byte (0, 4, 7 or 11) then year (2), month,
//! day, hour, minute, second (1 each) and microseconds (4), as far as the
//! length reaches; TIME a length byte (0, 8 or 12) then negative (1), days
//! (4), hours, minutes, seconds (1 each) and microseconds (4); NULL no
//! bytes; every other type a length-encoded string. Integers are little
//! endian.

use crate::column::{FieldType, ProtocolValue};
use crate::error::DecodeError;
use crate::packet::{PayloadReader, write_lenenc_bytes};

/// The flags-byte bit of a parameter type that marks it unsigned.
pub const PARAMETER_UNSIGNED_FLAG: u8 = 0x80;
/// Length byte of a date or time value whose fields are all zero.
const TEMPORAL_ZERO_LENGTH: u8 = 0;
/// Length byte of a date, or a datetime at midnight.
const DATE_LENGTH: u8 = 4;
/// Length byte of a datetime without microseconds.
const DATETIME_LENGTH: u8 = 7;
/// Length byte of a datetime with microseconds.
const DATETIME_MICROSECOND_LENGTH: u8 = 11;
/// Length byte of a time without microseconds.
const TIME_LENGTH: u8 = 8;
/// Length byte of a time with microseconds.
const TIME_MICROSECOND_LENGTH: u8 = 12;

/// An owned [`ProtocolValue`]: a decoded prepared-statement parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedProtocolValue {
    /// SQL NULL (the parameter's NULL-bitmap bit, or type NULL).
    Null,
    /// A signed integer of any width.
    Int(i64),
    /// An integer whose type carried the unsigned flag.
    UInt(u64),
    /// FLOAT.
    Float(f32),
    /// DOUBLE.
    Double(f64),
    /// Strings, decimals, blobs, JSON, enums, sets, bits: the raw bytes.
    Bytes(Vec<u8>),
    /// DATE (all zero for `0000-00-00`).
    Date {
        /// Year, 0-9999.
        year: u16,
        /// Month, 1-12 (0 in zero dates).
        month: u8,
        /// Day, 1-31 (0 in zero dates).
        day: u8,
    },
    /// DATETIME and TIMESTAMP.
    DateTime {
        /// Year, 0-9999.
        year: u16,
        /// Month, 1-12 (0 in zero dates).
        month: u8,
        /// Day, 1-31 (0 in zero dates).
        day: u8,
        /// Hour, 0-23.
        hour: u8,
        /// Minute, 0-59.
        minute: u8,
        /// Second, 0-59.
        second: u8,
        /// Microseconds, 0-999999.
        microsecond: u32,
    },
    /// TIME: a signed duration of days and hours-minutes-seconds.
    Time {
        /// Whether the duration is negative.
        negative: bool,
        /// Whole days (TIME's hours beyond 24).
        days: u32,
        /// Hours, 0-23.
        hours: u8,
        /// Minutes, 0-59.
        minutes: u8,
        /// Seconds, 0-59.
        seconds: u8,
        /// Microseconds, 0-999999.
        microsecond: u32,
    },
}

impl OwnedProtocolValue {
    /// The borrowed form, as the row writers take it.
    pub fn as_protocol_value(&self) -> ProtocolValue<'_> {
        match *self {
            OwnedProtocolValue::Null => ProtocolValue::Null,
            OwnedProtocolValue::Int(value) => ProtocolValue::Int(value),
            OwnedProtocolValue::UInt(value) => ProtocolValue::UInt(value),
            OwnedProtocolValue::Float(value) => ProtocolValue::Float(value),
            OwnedProtocolValue::Double(value) => ProtocolValue::Double(value),
            OwnedProtocolValue::Bytes(ref bytes) => ProtocolValue::Bytes(bytes),
            OwnedProtocolValue::Date { year, month, day } => {
                ProtocolValue::Date { year, month, day }
            }
            OwnedProtocolValue::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                microsecond,
            } => ProtocolValue::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                microsecond,
            },
            OwnedProtocolValue::Time {
                negative,
                days,
                hours,
                minutes,
                seconds,
                microsecond,
            } => ProtocolValue::Time {
                negative,
                days,
                hours,
                minutes,
                seconds,
                microsecond,
            },
        }
    }
}

/// Decodes COM_STMT_EXECUTE's parameter block
/// ([`StmtExecute::parameters`](crate::StmtExecute)).
///
/// `parameter_count` comes from the prepared statement. `previous_types`
/// holds the types bound by an earlier execute of the statement (empty at
/// first): new types replace them, and an execute that binds none reuses
/// them. `long_data[i]`, when present, is the value COM_STMT_SEND_LONG_DATA
/// accumulated for parameter i; such a parameter has no bytes in the block.
pub fn decode_execute_parameters(
    block: &[u8],
    parameter_count: usize,
    previous_types: &mut Vec<(FieldType, bool)>,
    long_data: &[Option<Vec<u8>>],
) -> Result<Vec<OwnedProtocolValue>, DecodeError> {
    if parameter_count == 0 {
        return Ok(Vec::new());
    }
    let mut reader = PayloadReader::new(block);
    let null_bitmap = reader.read_bytes(parameter_count.div_ceil(8), "NULL bitmap")?;
    let new_parameters_bound = reader.read_u8("new-params-bound flag")?;
    if new_parameters_bound == 1 {
        // The types are checked before any is stored, so a bad packet leaves
        // the statement's earlier types in place.
        let type_bytes = reader.read_bytes(parameter_count * 2, "parameter types")?;
        let mut types = Vec::with_capacity(parameter_count);
        for pair in type_bytes.chunks_exact(2) {
            let field_type = FieldType::from_byte(pair[0]).ok_or(DecodeError::Invalid {
                field: "parameter type",
                reason: "unknown field type",
            })?;
            types.push((field_type, pair[1] & PARAMETER_UNSIGNED_FLAG != 0));
        }
        *previous_types = types;
    } else if new_parameters_bound != 0 {
        return Err(DecodeError::Invalid {
            field: "new-params-bound flag",
            reason: "neither 0 nor 1",
        });
    } else if previous_types.len() != parameter_count {
        return Err(DecodeError::Invalid {
            field: "parameter types",
            reason: "no types bound for these parameters",
        });
    }
    let mut values = Vec::with_capacity(parameter_count);
    for (index, &(field_type, unsigned)) in previous_types.iter().enumerate() {
        if null_bitmap[index / 8] & (1 << (index % 8)) != 0 {
            values.push(OwnedProtocolValue::Null);
            continue;
        }
        if let Some(Some(data)) = long_data.get(index) {
            if !(FieldType::TinyBlob as u8..=FieldType::String as u8).contains(&(field_type as u8))
            {
                return Err(DecodeError::Invalid {
                    field: "parameter type",
                    reason: "long data sent for a parameter that is not a string or blob",
                });
            }
            values.push(OwnedProtocolValue::Bytes(data.clone()));
            continue;
        }
        values.push(decode_binary_value(&mut reader, field_type, unsigned)?);
    }
    Ok(values)
}

/// Decodes one binary-protocol value of `field_type`.
pub fn decode_binary_value(
    reader: &mut PayloadReader<'_>,
    field_type: FieldType,
    unsigned: bool,
) -> Result<OwnedProtocolValue, DecodeError> {
    use FieldType::*;
    const FIELD: &str = "parameter value";
    let integer = |value: i64, unsigned_value: u64| {
        if unsigned {
            OwnedProtocolValue::UInt(unsigned_value)
        } else {
            OwnedProtocolValue::Int(value)
        }
    };
    Ok(match field_type {
        Null => OwnedProtocolValue::Null,
        Tiny => {
            let byte = reader.read_u8(FIELD)?;
            integer(i64::from(byte as i8), u64::from(byte))
        }
        Short | Year => {
            let value = reader.read_u16(FIELD)?;
            integer(i64::from(value as i16), u64::from(value))
        }
        Long | Int24 => {
            let value = reader.read_u32(FIELD)?;
            integer(i64::from(value as i32), u64::from(value))
        }
        LongLong => {
            let value = reader.read_u64(FIELD)?;
            integer(value as i64, value)
        }
        Float => OwnedProtocolValue::Float(f32::from_le_bytes(reader.read_array(FIELD)?)),
        Double => OwnedProtocolValue::Double(f64::from_le_bytes(reader.read_array(FIELD)?)),
        Date | DateTime | Timestamp => decode_datetime(reader, field_type)?,
        Time => decode_time(reader)?,
        Decimal | VarChar | Bit | Json | NewDecimal | Enum | Set | TinyBlob | MediumBlob
        | LongBlob | Blob | VarString | String | Geometry => {
            OwnedProtocolValue::Bytes(reader.read_lenenc_bytes(FIELD)?.to_vec())
        }
    })
}

fn decode_datetime(
    reader: &mut PayloadReader<'_>,
    field_type: FieldType,
) -> Result<OwnedProtocolValue, DecodeError> {
    const FIELD: &str = "date/time value";
    let length = reader.read_u8(FIELD)?;
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut microsecond) =
        (0, 0, 0, 0, 0, 0, 0);
    match length {
        TEMPORAL_ZERO_LENGTH | DATE_LENGTH | DATETIME_LENGTH | DATETIME_MICROSECOND_LENGTH => {}
        _ => {
            return Err(DecodeError::Invalid {
                field: FIELD,
                reason: "length is not 0, 4, 7 or 11",
            });
        }
    }
    if length >= DATE_LENGTH {
        year = reader.read_u16(FIELD)?;
        month = reader.read_u8(FIELD)?;
        day = reader.read_u8(FIELD)?;
    }
    if length >= DATETIME_LENGTH {
        hour = reader.read_u8(FIELD)?;
        minute = reader.read_u8(FIELD)?;
        second = reader.read_u8(FIELD)?;
    }
    if length >= DATETIME_MICROSECOND_LENGTH {
        microsecond = reader.read_u32(FIELD)?;
    }
    Ok(if field_type == FieldType::Date {
        OwnedProtocolValue::Date { year, month, day }
    } else {
        OwnedProtocolValue::DateTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            microsecond,
        }
    })
}

fn decode_time(reader: &mut PayloadReader<'_>) -> Result<OwnedProtocolValue, DecodeError> {
    const FIELD: &str = "time value";
    let length = reader.read_u8(FIELD)?;
    let (mut negative, mut days, mut hours, mut minutes, mut seconds, mut microsecond) =
        (false, 0, 0, 0, 0, 0);
    match length {
        TEMPORAL_ZERO_LENGTH | TIME_LENGTH | TIME_MICROSECOND_LENGTH => {}
        _ => {
            return Err(DecodeError::Invalid {
                field: FIELD,
                reason: "length is not 0, 8 or 12",
            });
        }
    }
    if length >= TIME_LENGTH {
        negative = reader.read_u8(FIELD)? != 0;
        days = reader.read_u32(FIELD)?;
        hours = reader.read_u8(FIELD)?;
        minutes = reader.read_u8(FIELD)?;
        seconds = reader.read_u8(FIELD)?;
    }
    if length >= TIME_MICROSECOND_LENGTH {
        microsecond = reader.read_u32(FIELD)?;
    }
    Ok(OwnedProtocolValue::Time {
        negative,
        days,
        hours,
        minutes,
        seconds,
        microsecond,
    })
}

/// Appends one non-NULL binary-row value for a column of `field_type`:
/// integers take the type's width, dates and times the shortest form that
/// holds them, and every other type a length-encoded string.
///
/// # Panics
/// When the value's kind does not fit the column type (e.g. bytes for an
/// INT column, or NULL, which the row's NULL bitmap carries instead): that
/// is a bug in the caller's result metadata, not client input.
pub fn encode_binary_value(out: &mut Vec<u8>, field_type: FieldType, value: &ProtocolValue<'_>) {
    use FieldType::*;
    match (field_type, value) {
        (Tiny, &ProtocolValue::Int(value)) => out.push(value as u8),
        (Tiny, &ProtocolValue::UInt(value)) => out.push(value as u8),
        (Short | Year, &ProtocolValue::Int(value)) => {
            out.extend_from_slice(&(value as u16).to_le_bytes())
        }
        (Short | Year, &ProtocolValue::UInt(value)) => {
            out.extend_from_slice(&(value as u16).to_le_bytes())
        }
        (Long | Int24, &ProtocolValue::Int(value)) => {
            out.extend_from_slice(&(value as u32).to_le_bytes())
        }
        (Long | Int24, &ProtocolValue::UInt(value)) => {
            out.extend_from_slice(&(value as u32).to_le_bytes())
        }
        (LongLong, &ProtocolValue::Int(value)) => out.extend_from_slice(&value.to_le_bytes()),
        (LongLong, &ProtocolValue::UInt(value)) => out.extend_from_slice(&value.to_le_bytes()),
        (Float, &ProtocolValue::Float(value)) => out.extend_from_slice(&value.to_le_bytes()),
        (Float, &ProtocolValue::Double(value)) => {
            out.extend_from_slice(&(value as f32).to_le_bytes())
        }
        (Double, &ProtocolValue::Double(value)) => out.extend_from_slice(&value.to_le_bytes()),
        (Double, &ProtocolValue::Float(value)) => {
            out.extend_from_slice(&f64::from(value).to_le_bytes())
        }
        (Date, &ProtocolValue::Date { year, month, day })
        | (
            Date,
            &ProtocolValue::DateTime {
                year, month, day, ..
            },
        ) => encode_date(out, year, month, day),
        (DateTime | Timestamp, &ProtocolValue::Date { year, month, day }) => {
            encode_date(out, year, month, day)
        }
        (
            DateTime | Timestamp,
            &ProtocolValue::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                microsecond,
            },
        ) => {
            if microsecond != 0 {
                out.push(DATETIME_MICROSECOND_LENGTH);
            } else if hour != 0 || minute != 0 || second != 0 {
                out.push(DATETIME_LENGTH);
            } else {
                encode_date(out, year, month, day);
                return;
            }
            out.extend_from_slice(&year.to_le_bytes());
            out.extend_from_slice(&[month, day, hour, minute, second]);
            if microsecond != 0 {
                out.extend_from_slice(&microsecond.to_le_bytes());
            }
        }
        (
            Time,
            &ProtocolValue::Time {
                negative,
                days,
                hours,
                minutes,
                seconds,
                microsecond,
            },
        ) => {
            if microsecond != 0 {
                out.push(TIME_MICROSECOND_LENGTH);
            } else if days != 0 || hours != 0 || minutes != 0 || seconds != 0 {
                out.push(TIME_LENGTH);
            } else {
                out.push(TEMPORAL_ZERO_LENGTH);
                return;
            }
            out.push(u8::from(negative));
            out.extend_from_slice(&days.to_le_bytes());
            out.extend_from_slice(&[hours, minutes, seconds]);
            if microsecond != 0 {
                out.extend_from_slice(&microsecond.to_le_bytes());
            }
        }
        (
            Decimal | VarChar | Bit | Json | NewDecimal | Enum | Set | TinyBlob | MediumBlob
            | LongBlob | Blob | VarString | String | Geometry,
            &ProtocolValue::Bytes(bytes),
        ) => write_lenenc_bytes(out, bytes),
        (field_type, value) => {
            panic!("binary row: value {value:?} does not fit a column of type {field_type:?}")
        }
    }
}

fn encode_date(out: &mut Vec<u8>, year: u16, month: u8, day: u8) {
    if year == 0 && month == 0 && day == 0 {
        out.push(TEMPORAL_ZERO_LENGTH);
    } else {
        out.push(DATE_LENGTH);
        out.extend_from_slice(&year.to_le_bytes());
        out.extend_from_slice(&[month, day]);
    }
}
