//! String functions. Positions and lengths count characters of the
//! argument's character set (bytes for binary strings); case-insensitive
//! collations make LOCATE, INSTR, FIELD, FIND_IN_SET and STRCMP
//! case-insensitive, as in MySQL.

use super::super::compare::{compare_strings, compare_values};
use super::super::evaluate::{bits_of, decimal_of, warn};
use super::super::{Environment, Expression};
use super::{Function, TrimSide, collation_of, digest, int_argument};
use crate::convert::{convert_charset, error};
use crate::error::SqlError;
use crate::value::{SqlType, SqlValue, write_text};
use schema::Collation;
use std::borrow::Cow;
use std::cmp::Ordering;

/// The longest string result (MySQL's `max_allowed_packet` default, 64 MiB):
/// longer results are NULL with warning 1301, as in MySQL.
pub(crate) const STRING_RESULT_MAX: usize = 64 << 20;

fn is_utf8(collation: Collation) -> bool {
    matches!(collation, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi)
}

/// Bytes of the character starting `text` (1 for an invalid byte).
fn character_length(text: &[u8]) -> usize {
    let Some(&first) = text.first() else {
        return 0;
    };
    let length = match first {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    if length > text.len() || text[1..length].iter().any(|&byte| byte & 0xC0 != 0x80) {
        1
    } else {
        length
    }
}

/// Characters in `text`.
fn character_count(text: &[u8], utf8: bool) -> usize {
    if !utf8 {
        return text.len();
    }
    let mut count = 0;
    let mut position = 0;
    while position < text.len() {
        position += character_length(&text[position..]);
        count += 1;
    }
    count
}

/// The byte offset where character `index` (0-based) starts, or the end.
fn byte_offset(text: &[u8], index: usize, utf8: bool) -> usize {
    if !utf8 {
        return index.min(text.len());
    }
    let mut position = 0;
    let mut seen = 0;
    while position < text.len() && seen < index {
        position += character_length(&text[position..]);
        seen += 1;
    }
    position
}

/// The value's text for a string function, in `collation`'s character set.
fn text_in<'v>(value: &'v SqlValue, argument: &Expression, collation: Collation) -> Cow<'v, [u8]> {
    let source: Cow<'v, [u8]> = match value {
        SqlValue::String(text) => Cow::Borrowed(text),
        other => {
            let mut text = Vec::new();
            write_text(other, &argument.sql_type, &mut text);
            Cow::Owned(text)
        }
    };
    let from = collation_of(argument);
    if from.charset_name() == collation.charset_name()
        || from == Collation::Binary
        || collation == Collation::Binary
        || !matches!(value, SqlValue::String(_))
    {
        return source;
    }
    let mut converted = Vec::with_capacity(source.len());
    convert_charset(&source, from, collation, &mut converted);
    Cow::Owned(converted)
}

fn too_long(name: &str, env: &mut dyn Environment) -> SqlValue {
    warn(
        env,
        1301,
        format!(
            "Result of {name}() was larger than max_allowed_packet ({STRING_RESULT_MAX}) - truncated"
        ),
    );
    SqlValue::Null
}

fn upper_or_lower(text: &[u8], collation: Collation, upper: bool) -> Vec<u8> {
    match collation {
        Collation::Binary => text.to_vec(),
        Collation::Latin1Bin | Collation::Latin1Ci => text
            .iter()
            .map(|&byte| {
                // latin1 letters: ASCII, and 0xC0..=0xDE ↔ 0xE0..=0xFE except × ÷.
                if upper {
                    if byte.is_ascii_lowercase() || ((0xE0..=0xFE).contains(&byte) && byte != 0xF7)
                    {
                        byte - 0x20
                    } else {
                        byte
                    }
                } else if byte.is_ascii_uppercase()
                    || ((0xC0..=0xDE).contains(&byte) && byte != 0xD7)
                {
                    byte + 0x20
                } else {
                    byte
                }
            })
            .collect(),
        _ => {
            let mut out = Vec::with_capacity(text.len());
            for chunk in text.utf8_chunks() {
                for character in chunk.valid().chars() {
                    // Simple (one-to-one) case mapping, as MySQL's: 'ß' stays.
                    let mapped = if upper {
                        let mut iterator = character.to_uppercase();
                        match (iterator.next(), iterator.next()) {
                            (Some(single), None) => single,
                            _ => character,
                        }
                    } else {
                        let mut iterator = character.to_lowercase();
                        match (iterator.next(), iterator.next()) {
                            (Some(single), None) => single,
                            _ => character,
                        }
                    };
                    let mut buffer = [0u8; 4];
                    out.extend_from_slice(mapped.encode_utf8(&mut buffer).as_bytes());
                }
                out.extend_from_slice(chunk.invalid());
            }
            out
        }
    }
}

/// The 1-based character position of `needle` in `haystack` at or after
/// character `start` (1-based), under the collation; 0 when absent.
fn locate(needle: &[u8], haystack: &[u8], start: i64, collation: Collation) -> i64 {
    let utf8 = is_utf8(collation);
    if start < 1 {
        return 0;
    }
    let start_index = (start - 1) as usize;
    let haystack_count = character_count(haystack, utf8);
    if start_index > haystack_count {
        return 0;
    }
    if needle.is_empty() {
        return start;
    }
    let exact = matches!(
        collation,
        Collation::Binary | Collation::Utf8mb4Bin | Collation::Latin1Bin
    );
    let needle_count = character_count(needle, utf8);
    let mut position = byte_offset(haystack, start_index, utf8);
    let mut index = start_index;
    while position < haystack.len() {
        let matched = if exact {
            haystack[position..].starts_with(needle)
        } else {
            let end = position + byte_offset(&haystack[position..], needle_count, utf8);
            end - position >= needle.len().min(1)
                && schema::collation::compare(collation, &haystack[position..end], needle)
                    == Ordering::Equal
        };
        if matched {
            return index as i64 + 1;
        }
        position += if utf8 {
            character_length(&haystack[position..])
        } else {
            1
        };
        index += 1;
    }
    0
}

/// `SUBSTRING(text, position[, length])` with MySQL's rules: positions
/// from 1, negative ones from the end, 0 gives ''.
fn substring(text: &[u8], position: i64, length: Option<i64>, utf8: bool) -> &[u8] {
    let count = character_count(text, utf8) as i64;
    if position == 0 || position > count || position < -count {
        return &[];
    }
    let start = if position > 0 {
        position - 1
    } else {
        count + position
    };
    let length = length.unwrap_or(count);
    if length <= 0 {
        return &[];
    }
    let end = start.saturating_add(length).min(count);
    let from = byte_offset(text, start as usize, utf8);
    let to = from + byte_offset(&text[from..], (end - start) as usize, utf8);
    &text[from..to]
}

fn trim<'t>(text: &'t [u8], remove: &[u8], side: TrimSide) -> &'t [u8] {
    if remove.is_empty() {
        return text;
    }
    let mut start = 0;
    let mut end = text.len();
    if side != TrimSide::Trailing {
        while text[start..end].starts_with(remove) {
            start += remove.len();
        }
    }
    if side != TrimSide::Leading {
        while end - start >= remove.len() && text[start..end].ends_with(remove) {
            end -= remove.len();
        }
    }
    &text[start..end]
}

fn pad(text: &[u8], length: i64, filler: &[u8], left: bool, utf8: bool) -> Option<Vec<u8>> {
    if length < 0 {
        return None;
    }
    let length = length as usize;
    let count = character_count(text, utf8);
    if count >= length {
        return Some(text[..byte_offset(text, length, utf8)].to_vec());
    }
    if filler.is_empty() {
        return None;
    }
    let needed = length - count;
    let filler_count = character_count(filler, utf8).max(1);
    let mut padding = Vec::with_capacity(needed * filler.len() / filler_count + 4);
    let mut remaining = needed;
    while remaining > 0 {
        if remaining >= filler_count {
            padding.extend_from_slice(filler);
            remaining -= filler_count;
        } else {
            padding.extend_from_slice(&filler[..byte_offset(filler, remaining, utf8)]);
            remaining = 0;
        }
    }
    let mut out = Vec::with_capacity(padding.len() + text.len());
    if left {
        out.extend_from_slice(&padding);
        out.extend_from_slice(text);
    } else {
        out.extend_from_slice(text);
        out.extend_from_slice(&padding);
    }
    Some(out)
}

fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut position = 0;
    while position < text.len() {
        if text[position..].starts_with(from) {
            out.extend_from_slice(to);
            position += from.len();
        } else {
            out.push(text[position]);
            position += 1;
        }
    }
    out
}

fn reverse(text: &[u8], utf8: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut position = text.len();
    if !utf8 {
        out.extend(text.iter().rev());
        return out;
    }
    // Walk back to each character's first byte.
    let mut boundaries = Vec::new();
    let mut cursor = 0;
    while cursor < text.len() {
        boundaries.push(cursor);
        cursor += character_length(&text[cursor..]);
    }
    for &start in boundaries.iter().rev() {
        out.extend_from_slice(&text[start..position]);
        position = start;
    }
    out
}

fn hex_upper(bytes: &[u8], out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 0x0F)]);
    }
}

fn hex_lower(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 0x0F)]);
    }
    out
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |byte: u8| (byte as char).to_digit(16).map(|digit| digit as u8);
    let mut out = Vec::with_capacity(text.len().div_ceil(2));
    let mut rest = text;
    if text.len() % 2 == 1 {
        out.push(digit(text[0])?);
        rest = &text[1..];
    }
    for pair in rest.chunks(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(out)
}

/// `FORMAT(x, d)`: rounded to `d` places with ',' between thousands (en_US).
fn format_number(value: &SqlValue, digits: i64, env: &mut dyn Environment) -> Vec<u8> {
    let digits = digits.clamp(0, 30);
    let mut plain = Vec::new();
    match value {
        SqlValue::Double(double) => {
            crate::value::write_double_fixed(*double, digits as u8, &mut plain);
        }
        other => {
            let decimal = decimal_of(other, env);
            match decimal.round(digits) {
                Some(rounded) => rounded.write_with_scale(digits as u8, &mut plain),
                None => decimal.write(&mut plain),
            }
        }
    }
    let negative = plain.first() == Some(&b'-');
    let unsigned = if negative { &plain[1..] } else { &plain[..] };
    let point = unsigned
        .iter()
        .position(|&byte| byte == b'.')
        .unwrap_or(unsigned.len());
    let (integer, fraction) = unsigned.split_at(point);
    let mut out = Vec::with_capacity(plain.len() + plain.len() / 3);
    if negative {
        out.push(b'-');
    }
    for (index, &digit) in integer.iter().enumerate() {
        if index > 0 && (integer.len() - index) % 3 == 0 {
            out.push(b',');
        }
        out.push(digit);
    }
    out.extend_from_slice(fraction);
    out
}

/// `CONV(text, from, to)`: MySQL reads the text in base `from` (the digits
/// that are valid), as an unsigned 64-bit number unless negative, and
/// writes it in base |to| (signed when `to` is negative).
fn convert_base(text: &[u8], from: i64, to: i64) -> Option<Vec<u8>> {
    let from_base = from.unsigned_abs();
    let to_base = to.unsigned_abs();
    if !(2..=36).contains(&from_base) || !(2..=36).contains(&to_base) {
        return None;
    }
    let text = text.trim_ascii_start();
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let mut value: u64 = 0;
    for &byte in digits {
        let Some(digit) = (byte as char).to_digit(36) else {
            break;
        };
        if u64::from(digit) >= from_base {
            break;
        }
        value = value
            .saturating_mul(from_base)
            .saturating_add(u64::from(digit));
    }
    let (negative_out, magnitude) = if negative {
        if to < 0 {
            (true, value)
        } else {
            (false, value.wrapping_neg())
        }
    } else if to < 0 && from < 0 && value > i64::MAX as u64 {
        (true, value.wrapping_neg())
    } else {
        (false, value)
    };
    let mut out = Vec::new();
    let mut rest = magnitude;
    loop {
        let digit = (rest % to_base) as u32;
        out.push(
            std::char::from_digit(digit, 36)
                .unwrap_or('0')
                .to_ascii_uppercase() as u8,
        );
        rest /= to_base;
        if rest == 0 {
            break;
        }
    }
    if negative_out && magnitude != 0 {
        out.push(b'-');
    }
    out.reverse();
    Some(out)
}

/// MySQL's QUOTE: in single quotes, with \ ' NUL and Ctrl-Z escaped.
fn quote(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 2);
    out.push(b'\'');
    for &byte in text {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\'' => out.extend_from_slice(b"\\'"),
            0 => out.extend_from_slice(b"\\0"),
            0x1A => out.extend_from_slice(b"\\Z"),
            other => out.push(other),
        }
    }
    out.push(b'\'');
    out
}

pub(super) fn evaluate(
    function: Function,
    values: &[Cow<'_, SqlValue>],
    arguments: &[Expression],
    sql_type: &SqlType,
    env: &mut dyn Environment,
) -> Result<SqlValue, SqlError> {
    use Function as F;
    let collation = if sql_type.is_string_type() {
        sql_type.collation
    } else {
        super::super::compile::aggregate_collation(&arguments.iter().collect::<Vec<_>>())
    };
    let utf8 = is_utf8(collation);
    let text =
        |index: usize| -> Cow<'_, [u8]> { text_in(&values[index], &arguments[index], collation) };
    let string = |bytes: Vec<u8>| Ok(SqlValue::String(bytes));
    match function {
        F::Concat => {
            let mut out = Vec::new();
            for index in 0..values.len() {
                out.extend_from_slice(&text(index));
                if out.len() > STRING_RESULT_MAX {
                    return Ok(too_long("concat", env));
                }
            }
            string(out)
        }
        F::ConcatWs => {
            if values[0].is_null() {
                return Ok(SqlValue::Null);
            }
            let separator = text(0).into_owned();
            let mut out = Vec::new();
            let mut first = true;
            for (index, value) in values.iter().enumerate().skip(1) {
                if value.is_null() {
                    continue;
                }
                if !first {
                    out.extend_from_slice(&separator);
                }
                first = false;
                out.extend_from_slice(&text(index));
                if out.len() > STRING_RESULT_MAX {
                    return Ok(too_long("concat_ws", env));
                }
            }
            string(out)
        }
        F::Length => Ok(SqlValue::Int(values[0].to_text().len() as i64)),
        F::BitLength => Ok(SqlValue::Int(values[0].to_text().len() as i64 * 8)),
        F::CharLength => {
            let own = collation_of(&arguments[0]);
            Ok(SqlValue::Int(
                character_count(&values[0].to_text(), is_utf8(own)) as i64,
            ))
        }
        F::Upper | F::Lower => string(upper_or_lower(&text(0), collation, function == F::Upper)),
        F::Substring => {
            let position = int_argument(&values[1], env);
            let length = values.get(2).map(|length| int_argument(length, env));
            let source = text(0);
            string(substring(&source, position, length, utf8).to_vec())
        }
        F::SubstringIndex => {
            let source = text(0);
            let delimiter = text(1);
            let count = int_argument(&values[2], env);
            if delimiter.is_empty() || count == 0 {
                return string(Vec::new());
            }
            let positions: Vec<usize> = source
                .windows(delimiter.len())
                .enumerate()
                .filter(|(_, window)| *window == &delimiter[..])
                .map(|(position, _)| position)
                .collect();
            // Occurrences do not overlap: keep those that start after the previous one ends.
            let mut occurrences = Vec::with_capacity(positions.len());
            let mut next_allowed = 0;
            for position in positions {
                if position >= next_allowed {
                    occurrences.push(position);
                    next_allowed = position + delimiter.len();
                }
            }
            let wanted = count.unsigned_abs() as usize;
            if count > 0 {
                match occurrences.get(wanted - 1) {
                    Some(&position) => string(source[..position].to_vec()),
                    None => string(source.to_vec()),
                }
            } else if wanted <= occurrences.len() {
                let position = occurrences[occurrences.len() - wanted];
                string(source[position + delimiter.len()..].to_vec())
            } else {
                string(source.to_vec())
            }
        }
        F::Left | F::Right => {
            let length = int_argument(&values[1], env);
            let source = text(0);
            if length <= 0 {
                return string(Vec::new());
            }
            let count = character_count(&source, utf8);
            let length = (length as u64).min(count as u64) as usize;
            if function == F::Left {
                string(source[..byte_offset(&source, length, utf8)].to_vec())
            } else {
                string(source[byte_offset(&source, count - length, utf8)..].to_vec())
            }
        }
        F::Trim(side) => {
            let source = text(0);
            let remove: Cow<'_, [u8]> = if values.len() > 1 {
                text(1)
            } else {
                Cow::Borrowed(b" ")
            };
            string(trim(&source, &remove, side).to_vec())
        }
        F::Lpad | F::Rpad => {
            let length = int_argument(&values[1], env);
            if length > STRING_RESULT_MAX as i64 {
                return Ok(too_long(
                    if function == F::Lpad { "lpad" } else { "rpad" },
                    env,
                ));
            }
            let source = text(0);
            let filler = text(2);
            Ok(
                match pad(&source, length, &filler, function == F::Lpad, utf8) {
                    Some(padded) => SqlValue::String(padded),
                    None => SqlValue::Null,
                },
            )
        }
        F::Replace => {
            let result = replace(&text(0), &text(1), &text(2));
            if result.len() > STRING_RESULT_MAX {
                return Ok(too_long("replace", env));
            }
            string(result)
        }
        F::Locate => {
            let start = values.get(2).map_or(1, |start| int_argument(start, env));
            Ok(SqlValue::Int(locate(&text(0), &text(1), start, collation)))
        }
        F::Instr => Ok(SqlValue::Int(locate(&text(1), &text(0), 1, collation))),
        F::Reverse => string(reverse(&text(0), utf8)),
        F::Repeat => {
            let times = int_argument(&values[1], env);
            let source = text(0);
            if times <= 0 || source.is_empty() {
                return string(Vec::new());
            }
            if (times as u64).saturating_mul(source.len() as u64) > STRING_RESULT_MAX as u64 {
                return Ok(too_long("repeat", env));
            }
            string(source.repeat(times as usize))
        }
        F::Space => {
            let count = int_argument(&values[0], env);
            if count <= 0 {
                return string(Vec::new());
            }
            if count as u64 > STRING_RESULT_MAX as u64 {
                return Ok(too_long("space", env));
            }
            string(vec![b' '; count as usize])
        }
        F::Ascii => Ok(SqlValue::Int(
            values[0]
                .to_text()
                .first()
                .map_or(0, |&byte| i64::from(byte)),
        )),
        F::Ord => {
            let source = values[0].to_text();
            let own_utf8 = is_utf8(collation_of(&arguments[0]));
            let length = if own_utf8 {
                character_length(&source)
            } else {
                source.len().min(1)
            };
            let code = source[..length]
                .iter()
                .fold(0i64, |code, &byte| code * 256 + i64::from(byte));
            Ok(SqlValue::Int(code))
        }
        F::Hex => {
            let mut out = Vec::new();
            match values[0].as_ref() {
                SqlValue::String(bytes) => hex_upper(bytes, &mut out),
                other => {
                    let bits = bits_of(other, env);
                    out.extend_from_slice(format!("{bits:X}").as_bytes());
                }
            }
            string(out)
        }
        F::Unhex => Ok(match unhex(&values[0].to_text()) {
            Some(bytes) => SqlValue::String(bytes),
            None => SqlValue::Null,
        }),
        F::Md5 => string(hex_lower(&digest::md5(&values[0].to_text()))),
        F::Sha1 => string(hex_lower(&digest::sha1(&values[0].to_text()))),
        F::Sha2 => {
            if values[0].is_null() || values[1].is_null() {
                return Ok(SqlValue::Null);
            }
            let bits = int_argument(&values[1], env);
            let source = values[0].to_text();
            let hash = match bits {
                0 | 256 => digest::sha256(&source).to_vec(),
                224 => digest::sha224(&source).to_vec(),
                384 => digest::sha384(&source).to_vec(),
                512 => digest::sha512(&source).to_vec(),
                _ => {
                    warn(env, 1210, "Incorrect arguments to sha2".to_string());
                    return Ok(SqlValue::Null);
                }
            };
            string(hex_lower(&hash))
        }
        F::Crc32 => Ok(SqlValue::UInt(u64::from(digest::crc32(
            &values[0].to_text(),
        )))),
        F::Format => {
            let digits = int_argument(&values[1], env);
            string(format_number(&values[0], digits, env))
        }
        F::Field => {
            if values[0].is_null() {
                return Ok(SqlValue::Int(0));
            }
            let all_strings = values
                .iter()
                .all(|value| matches!(value.as_ref(), SqlValue::String(_) | SqlValue::Null));
            for index in 1..values.len() {
                if values[index].is_null() {
                    continue;
                }
                let equal = if all_strings {
                    compare_strings(collation, &values[0].to_text(), &values[index].to_text())
                        == Ordering::Equal
                } else {
                    compare_values(&values[0], &values[index], collation, Some(&mut *env))
                        == Some(Ordering::Equal)
                };
                if equal {
                    return Ok(SqlValue::Int(index as i64));
                }
            }
            Ok(SqlValue::Int(0))
        }
        F::Elt => {
            if values[0].is_null() {
                return Ok(SqlValue::Null);
            }
            let index = int_argument(&values[0], env);
            if index < 1 || index as usize >= values.len() {
                return Ok(SqlValue::Null);
            }
            let index = index as usize;
            if values[index].is_null() {
                return Ok(SqlValue::Null);
            }
            string(text(index).into_owned())
        }
        F::Strcmp => {
            let ordering = compare_strings(collation, &text(0), &text(1));
            Ok(SqlValue::Int(match ordering {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            }))
        }
        F::Char => {
            let mut out = Vec::new();
            for value in values {
                if value.is_null() {
                    continue;
                }
                let code = bits_of(value, env) as u32;
                let bytes = code.to_be_bytes();
                let first = bytes.iter().position(|&byte| byte != 0).unwrap_or(3);
                out.extend_from_slice(&bytes[first..]);
            }
            string(out)
        }
        F::Insert => {
            let source = text(0);
            let position = int_argument(&values[1], env);
            let length = int_argument(&values[2], env);
            let replacement = text(3);
            let count = character_count(&source, utf8) as i64;
            if position < 1 || position > count {
                return string(source.into_owned());
            }
            let start = byte_offset(&source, (position - 1) as usize, utf8);
            let end = if length < 0 || (position - 1).saturating_add(length) >= count {
                source.len()
            } else {
                start + byte_offset(&source[start..], length as usize, utf8)
            };
            let mut out = Vec::with_capacity(source.len() + replacement.len());
            out.extend_from_slice(&source[..start]);
            out.extend_from_slice(&replacement);
            out.extend_from_slice(&source[end..]);
            string(out)
        }
        F::FindInSet => {
            let needle = text(0);
            let list = text(1);
            if needle.contains(&b',') {
                return Ok(SqlValue::Int(0));
            }
            for (index, item) in list.split(|&byte| byte == b',').enumerate() {
                if compare_strings(collation, item, &needle) == Ordering::Equal {
                    return Ok(SqlValue::Int(index as i64 + 1));
                }
            }
            Ok(SqlValue::Int(0))
        }
        F::Quote => {
            if values[0].is_null() {
                return string(b"NULL".to_vec());
            }
            string(quote(&text(0)))
        }
        F::Bin | F::Oct => {
            let number = values[0].to_text();
            let base = if function == F::Bin { 2 } else { 8 };
            let bits = bits_of(&values[0], env);
            let _ = number;
            Ok(match convert_base(bits.to_string().as_bytes(), 10, base) {
                Some(text) => SqlValue::String(text),
                None => SqlValue::Null,
            })
        }
        F::ToBase64 => string(digest::to_base64(&values[0].to_text())),
        F::FromBase64 => Ok(match digest::from_base64(&values[0].to_text()) {
            Some(bytes) => SqlValue::String(bytes),
            None => SqlValue::Null,
        }),
        _ => Err(error(
            1105,
            format!("internal error: {function:?} is not a string function"),
        )),
    }
}

/// `CONV(n, from, to)` (also used by BIN and OCT).
pub(super) fn conv(value: &SqlValue, from: i64, to: i64) -> SqlValue {
    match convert_base(&value.to_text(), from, to) {
        Some(text) => SqlValue::String(text),
        None => SqlValue::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_follow_mysql() {
        // MySQL: SUBSTRING('Quadratically', 5) → 'ratically'; SUBSTRING('Sakila', -3) → 'ila';
        // SUBSTRING('Quadratically', 5, 6) → 'ratica'; SUBSTRING('Sakila', -5, 3) → 'aki'.
        assert_eq!(substring(b"Quadratically", 5, None, true), b"ratically");
        assert_eq!(substring(b"Sakila", -3, None, true), b"ila");
        assert_eq!(substring(b"Quadratically", 5, Some(6), true), b"ratica");
        assert_eq!(substring(b"Sakila", -5, Some(3), true), b"aki");
        assert_eq!(substring(b"Sakila", 0, None, true), b"");
        assert_eq!(
            substring("häll".as_bytes(), 2, Some(2), true),
            "äl".as_bytes()
        );
    }

    #[test]
    fn locate_and_pad() {
        // LOCATE('bar', 'foobarbar') → 4; LOCATE('bar', 'foobarbar', 5) → 7; LOCATE('xbar', 'foobar') → 0.
        assert_eq!(locate(b"bar", b"foobarbar", 1, Collation::Utf8mb4AiCi), 4);
        assert_eq!(locate(b"bar", b"foobarbar", 5, Collation::Utf8mb4AiCi), 7);
        assert_eq!(locate(b"xbar", b"foobar", 1, Collation::Utf8mb4AiCi), 0);
        assert_eq!(locate(b"BAR", b"foobar", 1, Collation::Utf8mb4AiCi), 4);
        assert_eq!(locate(b"BAR", b"foobar", 1, Collation::Utf8mb4Bin), 0);
        // LPAD('hi', 4, '??') → '??hi'; LPAD('hi', 1, '??') → 'h'.
        assert_eq!(pad(b"hi", 4, b"??", true, true), Some(b"??hi".to_vec()));
        assert_eq!(pad(b"hi", 1, b"??", true, true), Some(b"h".to_vec()));
        assert_eq!(pad(b"hi", 5, b"ab", false, true), Some(b"hiaba".to_vec()));
        assert_eq!(pad(b"hi", -1, b"?", true, true), None);
        assert_eq!(trim(b"xxbarxx", b"x", TrimSide::Both), b"bar");
        assert_eq!(trim(b"xxxbarxxx", b"xyz", TrimSide::Trailing), b"xxxbarxxx");
        assert_eq!(reverse("abč".as_bytes(), true), "čba".as_bytes());
    }

    #[test]
    fn numbers_as_text() {
        // CONV('a', 16, 2) → '1010'; CONV(-17, 10, -18) → '-H'.
        assert_eq!(convert_base(b"a", 16, 2), Some(b"1010".to_vec()));
        assert_eq!(convert_base(b"-17", 10, -18), Some(b"-H".to_vec()));
        assert_eq!(convert_base(b"6E", 18, 8), Some(b"172".to_vec()));
        assert_eq!(unhex(b"4D7953514C"), Some(b"MySQL".to_vec()));
        assert_eq!(unhex(b"GG"), None);
        assert_eq!(quote(b"Don't!"), b"'Don\\'t!'".to_vec());
        assert_eq!(
            upper_or_lower("straße".as_bytes(), Collation::Utf8mb4AiCi, true),
            "STRAßE".as_bytes()
        );
    }
}
