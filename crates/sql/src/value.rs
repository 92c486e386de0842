//! Values while a statement runs (MySQL's `Item` values) and their static
//! types (what a result set's column definition says), with MySQL's
//! conversions between them, exact decimal arithmetic, and the two wire
//! renderings: the text protocol's (`write_text`) and the binary
//! protocol's (`to_protocol`, `from_protocol`).
//!
//! ## Conversions
//! Every conversion returns the value and a [`Conversion`] saying how it
//! went, so that callers can warn as MySQL does (1292 "Truncated incorrect
//! DOUBLE value", 1264 "Out of range value", ...). Strings convert to
//! numbers by their longest numeric prefix after leading spaces, as MySQL's
//! `my_strtod`/`my_strtoll10` read them; anything but trailing spaces after
//! that prefix makes the conversion `Truncated`.
//!
//! ## DECIMAL
//! [`Decimal`] is `mantissa / 10^scale` with an `i128` mantissa: at most
//! [`DECIMAL_DIGITS_MAX`] (38) significant digits, where MySQL allows 65.
//! Arithmetic beyond that is an error (1690 "DECIMAL value is out of
//! range"), never a wrap or a panic. Scales go up to
//! [`DECIMAL_SCALE_MAX`] (30) as in MySQL; division adds
//! [`DIV_PRECISION_INCREMENT`] digits to the dividend's scale.

use crate::error::SqlError;
use crate::temporal::{self, FSP_MAX};
use mysql_protocol::column::flags;
use mysql_protocol::{FieldType, ProtocolValue};
use schema::Collation;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::io::Write;

/// An exact decimal: `mantissa / 10^scale`. 38 significant digits; a
/// DECIMAL wider than that is refused at CREATE TABLE (see `convert`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decimal {
    pub mantissa: i128,
    pub scale: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Datetime {
    pub date: Date,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub microsecond: u32,
}

/// A TIME: a signed duration up to ±838:59:59.999999.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Time {
    pub negative: bool,
    pub hours: u16,
    pub minutes: u8,
    pub seconds: u8,
    pub microsecond: u32,
}

/// A value. Strings are bytes in their expression's character set (its
/// `SqlType::collation` says which, and how they compare); byte strings
/// are strings with the `binary` collation, as in MySQL. ENUM values are
/// their member's text; BIT values are `UInt`; YEAR is `Int`; TIMESTAMP is a
/// `Datetime` in the session's time zone (UTC).
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    UInt(u64),
    Decimal(Decimal),
    Double(f64),
    String(Vec<u8>),
    Date(Date),
    Datetime(Datetime),
    Time(Time),
}

/// The static type of an expression or a column: everything a column
/// definition in a result set carries, and what coercion needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlType {
    pub field_type: FieldType,
    /// `mysql_protocol::column::flags` (UNSIGNED, NOT_NULL, BINARY, ...).
    pub flags: u16,
    /// MySQL's display length in bytes (column definition `length`).
    pub length: u32,
    /// Digits after the point; 31 for "not fixed" (doubles, strings).
    pub decimals: u8,
    /// Strings compare and are sent under it; `Binary` for numbers.
    pub collation: Collation,
}

/// Most significant digits a [`Decimal`] holds (an `i128` holds 38).
pub const DECIMAL_DIGITS_MAX: u32 = 38;
/// Most digits after the point (MySQL's `DECIMAL_MAX_SCALE`).
pub const DECIMAL_SCALE_MAX: u8 = 30;
/// MySQL's `div_precision_increment` default: `/` adds this many digits of scale.
pub const DIV_PRECISION_INCREMENT: u8 = 4;
/// `decimals` of a type whose digits after the point are not fixed
/// (MySQL's `DECIMAL_NOT_SPECIFIED`).
pub const NOT_FIXED_DECIMALS: u8 = 31;
/// Significant digits MySQL prints of a FLOAT (`FLT_DIG`).
const FLOAT_SIGNIFICANT_DIGITS: usize = 6;
/// MySQL's `MAX_DECPT_FOR_F_FORMAT` (`DBL_DIG`): beyond 10^15, or below
/// 10^-15, a double prints in the `e` format.
const FIXED_FORMAT_EXPONENT_MAX: i32 = 15;

const POWERS_OF_TEN: [i128; 39] = {
    let mut powers = [1i128; 39];
    let mut index = 1;
    while index < powers.len() {
        powers[index] = powers[index - 1] * 10;
        index += 1;
    }
    powers
};

fn power_of_ten(exponent: u32) -> Option<i128> {
    POWERS_OF_TEN.get(exponent as usize).copied()
}

/// How a conversion went, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Conversion {
    /// The value converted exactly.
    Exact,
    /// A number lost digits after the point to rounding (MySQL is silent
    /// about this in expressions; storing into a DECIMAL column notes it).
    Rounded,
    /// Text was not entirely a number (or date): its prefix was used.
    Truncated,
    /// The value was beyond the target's range and was clamped.
    OutOfRange,
}

impl Conversion {
    /// The worse of two outcomes.
    pub fn worst(self, other: Conversion) -> Conversion {
        self.max(other)
    }
}

// ---------------------------------------------------------------------------
// Reading numbers from text

/// The longest number at the start of a string, as MySQL reads one.
#[derive(Debug, Clone, Copy)]
struct NumberPrefix<'a> {
    negative: bool,
    integer: &'a [u8],
    fraction: &'a [u8],
    exponent: i64,
    /// Where the number's text (after leading spaces) starts.
    start: usize,
    /// Where the number's text ends.
    end: usize,
    /// Whether there was a digit at all.
    found: bool,
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// Exponents beyond this are saturated (the value is out of range anyway).
const EXPONENT_LIMIT: i64 = 1_000_000;

fn scan_number(text: &[u8]) -> NumberPrefix<'_> {
    let mut position = 0;
    while position < text.len() && is_space(text[position]) {
        position += 1;
    }
    let start = position;
    let mut negative = false;
    if let Some(&sign) = text.get(position)
        && (sign == b'-' || sign == b'+')
    {
        negative = sign == b'-';
        position += 1;
    }
    let integer_start = position;
    while position < text.len() && text[position].is_ascii_digit() {
        position += 1;
    }
    let integer = &text[integer_start..position];
    let mut fraction: &[u8] = &[];
    if text.get(position) == Some(&b'.') {
        let fraction_start = position + 1;
        let mut end = fraction_start;
        while end < text.len() && text[end].is_ascii_digit() {
            end += 1;
        }
        if !integer.is_empty() || end > fraction_start {
            fraction = &text[fraction_start..end];
            position = end;
        }
    }
    let found = !integer.is_empty() || !fraction.is_empty();
    let mut exponent = 0i64;
    if found && matches!(text.get(position), Some(b'e' | b'E')) {
        let mut cursor = position + 1;
        let mut exponent_negative = false;
        if let Some(&sign) = text.get(cursor)
            && (sign == b'-' || sign == b'+')
        {
            exponent_negative = sign == b'-';
            cursor += 1;
        }
        let digits_start = cursor;
        let mut value = 0i64;
        while cursor < text.len() && text[cursor].is_ascii_digit() {
            value = (value * 10 + i64::from(text[cursor] - b'0')).min(EXPONENT_LIMIT);
            cursor += 1;
        }
        if cursor > digits_start {
            exponent = if exponent_negative { -value } else { value };
            position = cursor;
        }
    }
    NumberPrefix {
        negative,
        integer,
        fraction,
        exponent,
        start,
        end: if found { position } else { start },
        found,
    }
}

fn only_spaces_after(text: &[u8], position: usize) -> bool {
    text[position.min(text.len())..]
        .iter()
        .all(|&byte| is_space(byte))
}

/// Reads a string as a DOUBLE: the value and how the conversion went.
pub fn parse_double(text: &[u8]) -> (f64, Conversion) {
    let number = scan_number(text);
    if !number.found {
        // MySQL warns even for '' and '   ': no number was there.
        return (0.0, Conversion::Truncated);
    }
    let conversion = if only_spaces_after(text, number.end) {
        Conversion::Exact
    } else {
        Conversion::Truncated
    };
    let numeric = &text[number.start..number.end];
    // The prefix is ASCII digits, signs, a point and an exponent: UTF-8.
    let parsed = std::str::from_utf8(numeric)
        .ok()
        .and_then(|numeric| numeric.parse::<f64>().ok());
    match parsed {
        Some(value) if value.is_finite() => (value, conversion),
        Some(value) => (
            if value < 0.0 { f64::MIN } else { f64::MAX },
            Conversion::OutOfRange,
        ),
        None => (0.0, Conversion::Truncated),
    }
}

/// Reads a string as a signed integer the way MySQL's `val_int` of a string
/// does: the integer prefix (a point or an exponent ends it, with
/// `Truncated`), clamped to BIGINT with `OutOfRange`.
pub fn parse_integer(text: &[u8]) -> (i64, Conversion) {
    let (negative, magnitude, end, found) = scan_integer(text);
    if !found {
        return (0, Conversion::Truncated);
    }
    let mut conversion = if only_spaces_after(text, end) {
        Conversion::Exact
    } else {
        Conversion::Truncated
    };
    let value = match magnitude {
        Some(magnitude) if negative => {
            if magnitude <= i64::MIN.unsigned_abs() {
                (magnitude as i64).wrapping_neg()
            } else {
                conversion = Conversion::OutOfRange;
                i64::MIN
            }
        }
        Some(magnitude) => match i64::try_from(magnitude) {
            Ok(value) => value,
            Err(_) => {
                conversion = Conversion::OutOfRange;
                i64::MAX
            }
        },
        None => {
            conversion = Conversion::OutOfRange;
            if negative { i64::MIN } else { i64::MAX }
        }
    };
    (value, conversion)
}

/// Reads a string as an unsigned integer (`CAST(... AS UNSIGNED)`): the
/// integer prefix; a negative number wraps to its two's complement as in
/// MySQL, beyond BIGINT UNSIGNED clamps with `OutOfRange`.
pub fn parse_unsigned(text: &[u8]) -> (u64, Conversion) {
    let (negative, magnitude, end, found) = scan_integer(text);
    if !found {
        return (0, Conversion::Truncated);
    }
    let conversion = if only_spaces_after(text, end) {
        Conversion::Exact
    } else {
        Conversion::Truncated
    };
    match magnitude {
        Some(magnitude) if negative => {
            if magnitude <= i64::MIN.unsigned_abs() {
                ((magnitude as i64).wrapping_neg() as u64, conversion)
            } else {
                (i64::MIN as u64, Conversion::OutOfRange)
            }
        }
        Some(magnitude) => (magnitude, conversion),
        None => (u64::MAX, Conversion::OutOfRange),
    }
}

/// Sign, magnitude (None beyond u64), end, and whether there were digits.
fn scan_integer(text: &[u8]) -> (bool, Option<u64>, usize, bool) {
    let mut position = 0;
    while position < text.len() && is_space(text[position]) {
        position += 1;
    }
    let mut negative = false;
    if let Some(&sign) = text.get(position)
        && (sign == b'-' || sign == b'+')
    {
        negative = sign == b'-';
        position += 1;
    }
    let digits_start = position;
    let mut magnitude: Option<u64> = Some(0);
    while position < text.len() && text[position].is_ascii_digit() {
        magnitude = magnitude
            .and_then(|value| value.checked_mul(10))
            .and_then(|value| value.checked_add(u64::from(text[position] - b'0')));
        position += 1;
    }
    (negative, magnitude, position, position > digits_start)
}

// ---------------------------------------------------------------------------
// Decimal

impl Decimal {
    /// 0 (scale 0).
    pub const ZERO: Decimal = Decimal {
        mantissa: 0,
        scale: 0,
    };

    /// `mantissa / 10^scale`.
    pub fn new(mantissa: i128, scale: u8) -> Decimal {
        Decimal { mantissa, scale }
    }

    /// An integer as a decimal of scale 0.
    pub fn from_i64(value: i64) -> Decimal {
        Decimal::new(i128::from(value), 0)
    }

    /// An unsigned integer as a decimal of scale 0.
    pub fn from_u64(value: u64) -> Decimal {
        Decimal::new(i128::from(value), 0)
    }

    /// Whether the number is 0 (at any scale).
    pub fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    /// Whether the number is below 0.
    pub fn is_negative(self) -> bool {
        self.mantissa < 0
    }

    /// Digits of the mantissa (at least 1).
    pub fn digit_count(self) -> u32 {
        let magnitude = self.mantissa.unsigned_abs();
        POWERS_OF_TEN[1..]
            .iter()
            .take_while(|&&power| magnitude >= power as u128)
            .count() as u32
            + 1
    }

    /// Digits before the point (0 for a pure fraction).
    pub fn integer_digit_count(self) -> u32 {
        if self.mantissa == 0 {
            return 0;
        }
        self.digit_count().saturating_sub(u32::from(self.scale))
    }

    /// The same number with `scale` digits after the point: more digits are
    /// exact (`None` if the mantissa overflows), fewer round half away from zero.
    pub fn rescale(self, scale: u8) -> Option<Decimal> {
        match scale.cmp(&self.scale) {
            Ordering::Equal => Some(self),
            Ordering::Greater => {
                let factor = power_of_ten(u32::from(scale - self.scale))?;
                Some(Decimal::new(self.mantissa.checked_mul(factor)?, scale))
            }
            Ordering::Less => Some(Decimal::new(
                divide_rounding(self.mantissa, u32::from(self.scale - scale)),
                scale,
            )),
        }
    }

    /// `ROUND(x, digits)`: half away from zero; the result keeps `digits`
    /// digits after the point (0 when negative: `ROUND(125, -1)` is 130).
    pub fn round(self, digits: i64) -> Option<Decimal> {
        if digits >= 0 {
            return self.rescale(digits.min(i64::from(DECIMAL_SCALE_MAX)) as u8);
        }
        let places = u32::from(self.scale) + digits.unsigned_abs().min(40) as u32;
        if places > DECIMAL_DIGITS_MAX {
            return Some(Decimal::ZERO);
        }
        let rounded = divide_rounding(self.mantissa, places);
        let factor = power_of_ten(places - u32::from(self.scale))?;
        Some(Decimal::new(rounded.checked_mul(factor)?, 0))
    }

    /// `TRUNCATE(x, digits)`: toward zero, keeping `digits` digits after the point.
    pub fn truncate(self, digits: i64) -> Option<Decimal> {
        if digits >= i64::from(self.scale) {
            return self.rescale(digits.min(i64::from(DECIMAL_SCALE_MAX)) as u8);
        }
        let places = i64::from(self.scale).saturating_sub(digits).min(40) as u32;
        if places > DECIMAL_DIGITS_MAX {
            return Some(Decimal::ZERO);
        }
        let divisor = power_of_ten(places)?;
        let truncated = self.mantissa / divisor;
        if digits >= 0 {
            Some(Decimal::new(truncated, digits as u8))
        } else {
            let factor = power_of_ten(places - u32::from(self.scale))?;
            Some(Decimal::new(truncated.checked_mul(factor)?, 0))
        }
    }

    /// The largest integer not above the number (`FLOOR`).
    pub fn floor(self) -> Decimal {
        let divisor = POWERS_OF_TEN[usize::from(self.scale.min(38))];
        Decimal::new(self.mantissa.div_euclid(divisor), 0)
    }

    /// The smallest integer not below the number (`CEILING`).
    pub fn ceil(self) -> Decimal {
        let divisor = POWERS_OF_TEN[usize::from(self.scale.min(38))];
        let floor = self.mantissa.div_euclid(divisor);
        let exact = self.mantissa.rem_euclid(divisor) == 0;
        Decimal::new(if exact { floor } else { floor + 1 }, 0)
    }

    fn aligned(self, other: Decimal) -> Option<(i128, i128, u8)> {
        let scale = self.scale.max(other.scale);
        Some((
            self.rescale(scale)?.mantissa,
            other.rescale(scale)?.mantissa,
            scale,
        ))
    }

    /// The sum at the larger scale; `None` beyond 38 digits.
    pub fn checked_add(self, other: Decimal) -> Option<Decimal> {
        let (left, right, scale) = self.aligned(other)?;
        Decimal::new(left.checked_add(right)?, scale).within_digits()
    }

    /// The difference at the larger scale; `None` beyond 38 digits.
    pub fn checked_sub(self, other: Decimal) -> Option<Decimal> {
        let (left, right, scale) = self.aligned(other)?;
        Decimal::new(left.checked_sub(right)?, scale).within_digits()
    }

    /// The product, with the sum of the scales (at most 30, rounded beyond).
    pub fn checked_mul(self, other: Decimal) -> Option<Decimal> {
        match self.multiply(other) {
            Some(product) => Some(product),
            // Trailing zeros after the point cost digits the product may
            // need: 1.50 × 2.00 is 1.5 × 2 exactly.
            None => self.normalized().multiply(other.normalized()),
        }
    }

    fn multiply(self, other: Decimal) -> Option<Decimal> {
        let scale = u32::from(self.scale) + u32::from(other.scale);
        let product = self.mantissa.checked_mul(other.mantissa)?;
        let product = if scale > u32::from(DECIMAL_SCALE_MAX) {
            let excess = scale - u32::from(DECIMAL_SCALE_MAX);
            Decimal::new(divide_rounding(product, excess), DECIMAL_SCALE_MAX)
        } else {
            Decimal::new(product, scale as u8)
        };
        product.within_digits()
    }

    /// The quotient with the dividend's scale plus `scale_increment` (at
    /// most 30), rounded half away from zero as MySQL rounds `/`. `None`
    /// when `other` is zero or the result does not fit.
    pub fn checked_div(self, other: Decimal, scale_increment: u8) -> Option<Decimal> {
        if other.is_zero() {
            return None;
        }
        let scale =
            (u32::from(self.scale) + u32::from(scale_increment)).min(u32::from(DECIMAL_SCALE_MAX));
        // quotient = self.mantissa * 10^(scale + other.scale - self.scale) / other.mantissa
        let shift = scale + u32::from(other.scale) - u32::from(self.scale);
        let negative = (self.mantissa < 0) != (other.mantissa < 0);
        let numerator = self.mantissa.unsigned_abs();
        let denominator = other.mantissa.unsigned_abs();
        let mut quotient = numerator / denominator;
        let mut remainder = numerator % denominator;
        for _ in 0..shift {
            let widened = remainder.checked_mul(10)?;
            quotient = quotient
                .checked_mul(10)?
                .checked_add(widened / denominator)?;
            remainder = widened % denominator;
        }
        // Round half away from zero: 2 × remainder fits, as remainder < denominator ≤ 2^127.
        if remainder * 2 >= denominator {
            quotient = quotient.checked_add(1)?;
        }
        let magnitude = i128::try_from(quotient).ok()?;
        Decimal::new(if negative { -magnitude } else { magnitude }, scale as u8).within_digits()
    }

    /// The remainder with the sign of the dividend (`MOD`, `%`). `None` when `other` is zero.
    pub fn checked_rem(self, other: Decimal) -> Option<Decimal> {
        if other.is_zero() {
            return None;
        }
        let (left, right, scale) = self.aligned(other)?;
        Some(Decimal::new(left.checked_rem(right)?, scale))
    }

    /// Integer division toward zero (`DIV`). `None` when `other` is zero.
    pub fn checked_integer_div(self, other: Decimal) -> Option<Decimal> {
        if other.is_zero() {
            return None;
        }
        let (left, right, _) = self.aligned(other)?;
        Some(Decimal::new(left.checked_div(right)?, 0))
    }

    /// The number with its sign flipped.
    pub fn negated(self) -> Decimal {
        Decimal::new(-self.mantissa, self.scale)
    }

    /// The magnitude.
    pub fn abs(self) -> Decimal {
        Decimal::new(self.mantissa.abs(), self.scale)
    }

    fn within_digits(self) -> Option<Decimal> {
        (self.mantissa.unsigned_abs() < POWERS_OF_TEN[38] as u128).then_some(self)
    }

    /// Numeric comparison (1.0 equals 1.00).
    pub fn compare(self, other: Decimal) -> Ordering {
        if self.scale == other.scale {
            return self.mantissa.cmp(&other.mantissa);
        }
        match self.aligned(other) {
            Some((left, right, _)) => left.cmp(&right),
            // Rescaling overflowed: the side with fewer fraction digits has a
            // larger magnitude than anything the other can hold.
            None => {
                if self.scale < other.scale {
                    if self.mantissa < 0 {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                } else if other.mantissa < 0 {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
        }
    }

    /// The number without trailing zeros after the point.
    pub fn normalized(self) -> Decimal {
        let mut value = self;
        while value.scale > 0 && value.mantissa % 10 == 0 {
            value = Decimal::new(value.mantissa / 10, value.scale - 1);
        }
        value
    }

    /// The nearest double.
    pub fn to_f64(self) -> f64 {
        const EXACT_LIMIT: u128 = 1 << 53;
        if self.mantissa.unsigned_abs() < EXACT_LIMIT && self.scale <= 22 {
            // Both operands are exact doubles, so the division rounds correctly.
            return self.mantissa as f64 / 10f64.powi(i32::from(self.scale));
        }
        let mut buffer = [0u8; 64];
        let length = {
            let mut cursor = &mut buffer[..];
            let _ = write!(cursor, "{}e-{}", self.mantissa, self.scale);
            64 - cursor.len()
        };
        std::str::from_utf8(&buffer[..length])
            .ok()
            .and_then(|text| text.parse::<f64>().ok())
            .unwrap_or(0.0)
    }

    /// The decimal MySQL makes of a double: its shortest round-trip
    /// digits (`double2decimal`). `None` for NaN, infinities and numbers
    /// beyond 38 integer digits.
    pub fn from_f64(value: f64) -> Option<(Decimal, Conversion)> {
        if !value.is_finite() {
            return None;
        }
        let mut buffer = [0u8; 48];
        let length = {
            let mut cursor = &mut buffer[..];
            let _ = write!(cursor, "{value:e}");
            48 - cursor.len()
        };
        let (decimal, conversion) = Decimal::parse(&buffer[..length])?;
        if conversion == Conversion::OutOfRange {
            return None;
        }
        Some((decimal, conversion))
    }

    /// Rounds (half away from zero) to BIGINT, clamping with `OutOfRange`.
    pub fn to_i64(self) -> (i64, Conversion) {
        let rounded = divide_rounding(self.mantissa, u32::from(self.scale));
        let conversion = if self.scale > 0
            && rounded.checked_mul(POWERS_OF_TEN[usize::from(self.scale.min(38))])
                != Some(self.mantissa)
        {
            Conversion::Rounded
        } else {
            Conversion::Exact
        };
        match i64::try_from(rounded) {
            Ok(value) => (value, conversion),
            Err(_) if rounded < 0 => (i64::MIN, Conversion::OutOfRange),
            Err(_) => (i64::MAX, Conversion::OutOfRange),
        }
    }

    /// Rounds (half away from zero) to BIGINT UNSIGNED, clamping with `OutOfRange`.
    pub fn to_u64(self) -> (u64, Conversion) {
        let rounded = divide_rounding(self.mantissa, u32::from(self.scale));
        let conversion = if self.scale > 0
            && rounded.checked_mul(POWERS_OF_TEN[usize::from(self.scale.min(38))])
                != Some(self.mantissa)
        {
            Conversion::Rounded
        } else {
            Conversion::Exact
        };
        match u64::try_from(rounded) {
            Ok(value) => (value, conversion),
            Err(_) if rounded < 0 => (0, Conversion::OutOfRange),
            Err(_) => (u64::MAX, Conversion::OutOfRange),
        }
    }

    /// Reads the decimal at the start of `text` (after spaces): sign,
    /// digits, point, digits, exponent, as MySQL's `str2decimal`. Digits
    /// beyond the scale limit round (`Rounded`); text after the number is
    /// `Truncated`; more than 38 integer digits clamp to 38 nines
    /// (`OutOfRange`). `None` when the text starts with no number.
    pub fn parse(text: &[u8]) -> Option<(Decimal, Conversion)> {
        let number = scan_number(text);
        if !number.found {
            return None;
        }
        let (decimal, conversion) = decimal_from_parts(
            number.negative,
            number.integer,
            number.fraction,
            number.exponent,
        );
        let conversion = if only_spaces_after(text, number.end) {
            conversion
        } else {
            conversion.worst(Conversion::Truncated)
        };
        Some((decimal, conversion))
    }

    /// Appends the number with exactly `self.scale` digits after the point.
    pub fn write(self, out: &mut Vec<u8>) {
        let magnitude = self.mantissa.unsigned_abs();
        if self.mantissa < 0 {
            out.push(b'-');
        }
        let mut digits = [0u8; 40];
        let mut position = digits.len();
        let mut rest = magnitude;
        loop {
            position -= 1;
            digits[position] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let digits = &digits[position..];
        let scale = usize::from(self.scale);
        if scale == 0 {
            out.extend_from_slice(digits);
            return;
        }
        if digits.len() <= scale {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', scale - digits.len()));
            out.extend_from_slice(digits);
        } else {
            let point = digits.len() - scale;
            out.extend_from_slice(&digits[..point]);
            out.push(b'.');
            out.extend_from_slice(&digits[point..]);
        }
    }

    /// Appends the number with exactly `scale` digits after the point
    /// (rounding, or padding with zeros).
    pub fn write_with_scale(self, scale: u8, out: &mut Vec<u8>) {
        match self.rescale(scale.min(DECIMAL_SCALE_MAX)) {
            Some(value) => value.write(out),
            None => {
                // Too many digits to pad in an i128: write then append the zeros.
                self.write(out);
                if self.scale == 0 {
                    out.push(b'.');
                }
                out.extend(std::iter::repeat_n(b'0', usize::from(scale - self.scale)));
            }
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::with_capacity(42);
        self.write(&mut text);
        formatter.write_str(&String::from_utf8_lossy(&text))
    }
}

/// `value / 10^places`, rounded half away from zero.
fn divide_rounding(value: i128, places: u32) -> i128 {
    if places == 0 {
        return value;
    }
    let Some(divisor) = power_of_ten(places) else {
        return 0;
    };
    let quotient = value / divisor;
    let remainder = (value % divisor).unsigned_abs();
    if remainder * 2 >= divisor as u128 {
        if value < 0 {
            quotient - 1
        } else {
            quotient + 1
        }
    } else {
        quotient
    }
}

fn decimal_from_parts(
    negative: bool,
    integer: &[u8],
    fraction: &[u8],
    exponent: i64,
) -> (Decimal, Conversion) {
    let leading_zeros = integer.iter().take_while(|&&digit| digit == b'0').count();
    let integer = &integer[leading_zeros..];
    let digit_at = |index: i64| -> u8 {
        if index < 0 {
            return 0;
        }
        let index = index as usize;
        if index < integer.len() {
            integer[index] - b'0'
        } else {
            fraction
                .get(index - integer.len())
                .map_or(0, |digit| digit - b'0')
        }
    };
    let length = (integer.len() + fraction.len()) as i64;
    // The point sits after `point` digits of integer ++ fraction.
    let point = integer.len() as i64 + exponent;
    let first_significant = (0..length).find(|&index| digit_at(index) != 0);
    let Some(first_significant) = first_significant else {
        return (Decimal::ZERO, Conversion::Exact);
    };
    let integer_digits = (point - first_significant).max(0);
    if integer_digits > i64::from(DECIMAL_DIGITS_MAX) {
        let nines = POWERS_OF_TEN[38] - 1;
        return (
            Decimal::new(if negative { -nines } else { nines }, 0),
            Conversion::OutOfRange,
        );
    }
    let wanted_scale = (length - point).clamp(0, i64::from(DECIMAL_SCALE_MAX));
    // Keep within 38 significant digits: leading zeros after the point are free.
    let significant_room = i64::from(DECIMAL_DIGITS_MAX) - integer_digits;
    let zeros_after_point = if integer_digits == 0 {
        (first_significant - point).max(0)
    } else {
        0
    };
    let scale = wanted_scale.min(significant_room + zeros_after_point);
    let mut mantissa: i128 = 0;
    for index in 0..(point + scale) {
        mantissa = mantissa * 10 + i128::from(digit_at(index));
    }
    let cut = point + scale;
    let mut conversion = Conversion::Exact;
    if (cut.max(0)..length).any(|index| digit_at(index) != 0) {
        conversion = Conversion::Rounded;
        if digit_at(cut) >= 5 && cut >= 0 {
            mantissa += 1;
        }
    }
    let mantissa = if negative { -mantissa } else { mantissa };
    (Decimal::new(mantissa, scale as u8), conversion)
}

// ---------------------------------------------------------------------------
// Doubles as MySQL prints them

/// The significant digits (ASCII, no trailing zeros) and the decimal
/// point position of a finite, positive double: the shortest round-trip
/// digits, or at most `precision` digits.
fn real_digits(value: f64, precision: Option<usize>, digits: &mut [u8; 40]) -> (usize, i32) {
    let mut text = [0u8; 48];
    let length = {
        let mut cursor = &mut text[..];
        let _ = match precision {
            None => write!(cursor, "{value:e}"),
            Some(precision) => write!(cursor, "{:.*e}", precision.saturating_sub(1), value),
        };
        48 - cursor.len()
    };
    let text = &text[..length];
    let exponent_at = text.iter().position(|&byte| byte == b'e').unwrap_or(length);
    let mut count = 0;
    for &byte in &text[..exponent_at] {
        if byte.is_ascii_digit() && count < digits.len() {
            digits[count] = byte;
            count += 1;
        }
    }
    while count > 1 && digits[count - 1] == b'0' {
        count -= 1;
    }
    let exponent = std::str::from_utf8(&text[(exponent_at + 1).min(length)..])
        .ok()
        .and_then(|exponent| exponent.parse::<i32>().ok())
        .unwrap_or(0);
    (count, exponent + 1)
}

/// Appends a double as MySQL's `my_gcvt` prints it in a wide field: the
/// shortest digits that read back as the same double (at most
/// `precision`), in plain notation from 1e-15 to 1e15 and for numbers with
/// digits after the point, else as `1.5e20` / `1e-16` (no '+', no padding).
fn write_real(value: f64, precision: Option<usize>, out: &mut Vec<u8>) {
    if !value.is_finite() {
        out.push(b'0');
        return;
    }
    if value.is_sign_negative() {
        out.push(b'-');
    }
    let magnitude = value.abs();
    if magnitude == 0.0 {
        out.push(b'0');
        return;
    }
    let mut digits = [0u8; 40];
    let (length, point) = real_digits(magnitude, precision, &mut digits);
    let digits = &digits[..length];
    let length = length as i32;
    let fixed = point > -FIXED_FORMAT_EXPONENT_MAX
        && (point <= FIXED_FORMAT_EXPONENT_MAX || length > point);
    if fixed {
        if point <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-point) as usize));
            out.extend_from_slice(digits);
        } else if length > point {
            out.extend_from_slice(&digits[..point as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[point as usize..]);
        } else {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', (point - length) as usize));
        }
    } else {
        out.push(digits[0]);
        if length > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        let exponent = point - 1;
        if exponent < 0 {
            out.push(b'-');
        }
        let _ = write!(out, "{}", exponent.unsigned_abs());
    }
}

/// Appends a DOUBLE as MySQL's text protocol prints it: `0.1`, `1e20`,
/// `0.00000015`, `1.2345678901234568e17`.
pub fn write_double(value: f64, out: &mut Vec<u8>) {
    write_real(value, None, out);
}

/// Appends a FLOAT column's value as MySQL prints it: at most 6
/// significant digits (`FLT_DIG`), so a FLOAT 0.1 prints `0.1`.
pub fn write_float(value: f64, out: &mut Vec<u8>) {
    write_real(value, Some(FLOAT_SIGNIFICANT_DIGITS), out);
}

/// Appends a double with exactly `decimals` digits after the point (MySQL's `my_fcvt`).
pub fn write_double_fixed(value: f64, decimals: u8, out: &mut Vec<u8>) {
    if !value.is_finite() {
        out.push(b'0');
        return;
    }
    let _ = write!(out, "{:.*}", usize::from(decimals), value);
}

fn write_integer(value: i64, out: &mut Vec<u8>) {
    let _ = write!(out, "{value}");
}

fn write_unsigned(value: u64, out: &mut Vec<u8>) {
    let _ = write!(out, "{value}");
}

// ---------------------------------------------------------------------------
// SqlValue conversions

/// Rounds a double to an integer as MySQL's `rint` does (half to even).
fn double_to_i64(value: f64) -> (i64, Conversion) {
    if value.is_nan() {
        return (0, Conversion::OutOfRange);
    }
    let rounded = value.round_ties_even();
    let conversion = if rounded != value {
        Conversion::Rounded
    } else {
        Conversion::Exact
    };
    if rounded < -9.223_372_036_854_776e18 {
        (i64::MIN, Conversion::OutOfRange)
    } else if rounded >= 9.223_372_036_854_776e18 {
        (i64::MAX, Conversion::OutOfRange)
    } else {
        (rounded as i64, conversion)
    }
}

fn double_to_u64(value: f64) -> (u64, Conversion) {
    if value.is_nan() {
        return (0, Conversion::OutOfRange);
    }
    let rounded = value.round_ties_even();
    let conversion = if rounded != value {
        Conversion::Rounded
    } else {
        Conversion::Exact
    };
    if rounded < 0.0 {
        (0, Conversion::OutOfRange)
    } else if rounded >= 1.844_674_407_370_955_2e19 {
        (u64::MAX, Conversion::OutOfRange)
    } else {
        (rounded as u64, conversion)
    }
}

impl Datetime {
    /// The datetime as a number: `YYYYMMDDhhmmss`, with the microseconds
    /// as 6 digits after the point when there are any.
    pub fn to_decimal(&self) -> Decimal {
        if self.microsecond == 0 {
            Decimal::from_i64(self.to_number())
        } else {
            Decimal::new(
                i128::from(self.to_number()) * 1_000_000 + i128::from(self.microsecond),
                6,
            )
        }
    }
}

impl Time {
    /// The time as a number: `[-]hhmmss`, with the microseconds after the point.
    pub fn to_decimal(&self) -> Decimal {
        if self.microsecond == 0 {
            Decimal::from_i64(self.to_number())
        } else {
            let magnitude =
                i128::from(self.to_number().abs()) * 1_000_000 + i128::from(self.microsecond);
            Decimal::new(if self.negative { -magnitude } else { magnitude }, 6)
        }
    }
}

impl SqlValue {
    /// Whether the value is SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, SqlValue::Null)
    }

    /// The value as a DOUBLE (NULL is 0.0; the caller checks for NULL first).
    pub fn to_double(&self) -> (f64, Conversion) {
        match self {
            SqlValue::Null => (0.0, Conversion::Exact),
            SqlValue::Int(value) => (*value as f64, Conversion::Exact),
            SqlValue::UInt(value) => (*value as f64, Conversion::Exact),
            SqlValue::Decimal(value) => (value.to_f64(), Conversion::Exact),
            SqlValue::Double(value) => (*value, Conversion::Exact),
            SqlValue::String(text) => parse_double(text),
            SqlValue::Date(date) => (date.to_number() as f64, Conversion::Exact),
            SqlValue::Datetime(datetime) => (datetime.to_decimal().to_f64(), Conversion::Exact),
            SqlValue::Time(time) => (time.to_decimal().to_f64(), Conversion::Exact),
        }
    }

    /// The value as a BIGINT: numbers round (decimals half away from zero,
    /// doubles half to even as MySQL's `rint`), strings take their integer
    /// prefix, temporals their number form; clamped with `OutOfRange`.
    pub fn to_int(&self) -> (i64, Conversion) {
        match self {
            SqlValue::Null => (0, Conversion::Exact),
            SqlValue::Int(value) => (*value, Conversion::Exact),
            SqlValue::UInt(value) => match i64::try_from(*value) {
                Ok(value) => (value, Conversion::Exact),
                Err(_) => (i64::MAX, Conversion::OutOfRange),
            },
            SqlValue::Decimal(value) => value.to_i64(),
            SqlValue::Double(value) => double_to_i64(*value),
            SqlValue::String(text) => parse_integer(text),
            SqlValue::Date(date) => (date.to_number(), Conversion::Exact),
            SqlValue::Datetime(datetime) => datetime.to_decimal().to_i64(),
            SqlValue::Time(time) => time.to_decimal().to_i64(),
        }
    }

    /// The value as a BIGINT UNSIGNED: negative numbers clamp to 0 with
    /// `OutOfRange` (CAST AS UNSIGNED wraps them instead; see `expression`).
    pub fn to_uint(&self) -> (u64, Conversion) {
        match self {
            SqlValue::Null => (0, Conversion::Exact),
            SqlValue::Int(value) => match u64::try_from(*value) {
                Ok(value) => (value, Conversion::Exact),
                Err(_) => (0, Conversion::OutOfRange),
            },
            SqlValue::UInt(value) => (*value, Conversion::Exact),
            SqlValue::Decimal(value) => value.to_u64(),
            SqlValue::Double(value) => double_to_u64(*value),
            SqlValue::String(text) => {
                let (negative, magnitude, _, _) = scan_integer(text);
                if negative && magnitude != Some(0) {
                    (0, Conversion::OutOfRange)
                } else {
                    parse_unsigned(text)
                }
            }
            SqlValue::Date(date) => (date.to_number() as u64, Conversion::Exact),
            SqlValue::Datetime(datetime) => datetime.to_decimal().to_u64(),
            SqlValue::Time(time) => time.to_decimal().to_u64(),
        }
    }

    /// The value as a DECIMAL (doubles by their shortest digits, as MySQL).
    pub fn to_decimal(&self) -> (Decimal, Conversion) {
        match self {
            SqlValue::Null => (Decimal::ZERO, Conversion::Exact),
            SqlValue::Int(value) => (Decimal::from_i64(*value), Conversion::Exact),
            SqlValue::UInt(value) => (Decimal::from_u64(*value), Conversion::Exact),
            SqlValue::Decimal(value) => (*value, Conversion::Exact),
            SqlValue::Double(value) => Decimal::from_f64(*value).unwrap_or_else(|| {
                let nines = POWERS_OF_TEN[38] - 1;
                (
                    Decimal::new(if *value < 0.0 { -nines } else { nines }, 0),
                    Conversion::OutOfRange,
                )
            }),
            SqlValue::String(text) => {
                Decimal::parse(text).unwrap_or((Decimal::ZERO, Conversion::Truncated))
            }
            SqlValue::Date(date) => (Decimal::from_i64(date.to_number()), Conversion::Exact),
            SqlValue::Datetime(datetime) => (datetime.to_decimal(), Conversion::Exact),
            SqlValue::Time(time) => (time.to_decimal(), Conversion::Exact),
        }
    }

    /// The value in a boolean context: NULL is unknown, numbers are true
    /// when not zero, strings by their DOUBLE value ('0.5' is true), dates
    /// when not the zero date.
    pub fn to_bool(&self) -> Option<bool> {
        match self {
            SqlValue::Null => None,
            SqlValue::Int(value) => Some(*value != 0),
            SqlValue::UInt(value) => Some(*value != 0),
            SqlValue::Decimal(value) => Some(!value.is_zero()),
            SqlValue::Double(value) => Some(*value != 0.0),
            SqlValue::String(text) => Some(parse_double(text).0 != 0.0),
            SqlValue::Date(date) => Some(!date.is_zero()),
            SqlValue::Datetime(datetime) => Some(!datetime.is_zero()),
            SqlValue::Time(time) => Some(!time.is_zero()),
        }
    }

    /// The value as a DATETIME: strings as `str_to_datetime` reads them,
    /// numbers as `number_to_datetime`, dates at midnight. `None` when it is
    /// no datetime (and for TIME, which needs the current date: see `expression`).
    pub fn to_datetime(&self) -> Option<(Datetime, Conversion)> {
        match self {
            SqlValue::Datetime(datetime) => Some((*datetime, Conversion::Exact)),
            SqlValue::Date(date) => Some((Datetime::from_date(*date), Conversion::Exact)),
            SqlValue::String(text) => {
                let parsed = temporal::parse_datetime(text)?;
                Some((parsed.value, parsed.conversion))
            }
            SqlValue::Int(value) => temporal::datetime_from_number(*value)
                .map(|parsed| (parsed.value, parsed.conversion)),
            SqlValue::UInt(value) => temporal::datetime_from_number(i64::try_from(*value).ok()?)
                .map(|parsed| (parsed.value, parsed.conversion)),
            SqlValue::Decimal(value) => {
                let whole = value.truncate(0)?;
                let (number, _) = whole.to_i64();
                let fraction = value
                    .checked_sub(whole)?
                    .rescale(6)?
                    .mantissa
                    .unsigned_abs();
                let parsed = temporal::datetime_from_number(number)?;
                let datetime = Datetime {
                    microsecond: fraction as u32,
                    ..parsed.value
                };
                Some((datetime, Conversion::Exact))
            }
            SqlValue::Double(value) => {
                let (decimal, _) = Decimal::from_f64(*value)?;
                SqlValue::Decimal(decimal).to_datetime()
            }
            SqlValue::Null | SqlValue::Time(_) => None,
        }
    }

    /// The value as a DATE (a datetime's date part, which MySQL notes as truncation only when storing).
    pub fn to_date(&self) -> Option<(Date, Conversion)> {
        self.to_datetime()
            .map(|(datetime, conversion)| (datetime.date, conversion))
    }

    /// The value as a TIME: strings as `str_to_time` reads them, numbers as
    /// `[-]hhmmss`, datetimes by their time of day.
    pub fn to_time(&self) -> Option<(Time, Conversion)> {
        match self {
            SqlValue::Time(time) => Some((*time, Conversion::Exact)),
            SqlValue::Datetime(datetime) => Some((datetime.time_of_day(), Conversion::Exact)),
            SqlValue::Date(_) => Some((Time::ZERO, Conversion::Exact)),
            SqlValue::String(text) => temporal::parse_time(text),
            SqlValue::Int(value) => temporal::time_from_number(*value, 0),
            SqlValue::UInt(value) => temporal::time_from_number(i64::try_from(*value).ok()?, 0),
            SqlValue::Decimal(value) => {
                let whole = value.truncate(0)?;
                let (number, _) = whole.to_i64();
                let fraction = value
                    .checked_sub(whole)?
                    .rescale(6)?
                    .mantissa
                    .unsigned_abs();
                temporal::time_from_number(number, fraction as u32)
            }
            SqlValue::Double(value) => {
                let (decimal, _) = Decimal::from_f64(*value)?;
                SqlValue::Decimal(decimal).to_time()
            }
            SqlValue::Null => None,
        }
    }

    /// Appends the value's text form as MySQL's `val_str` gives it
    /// (fractions of datetimes with 6 digits when there are any).
    pub fn write_text_form(&self, out: &mut Vec<u8>) {
        match self {
            SqlValue::Null => {}
            SqlValue::Int(value) => write_integer(*value, out),
            SqlValue::UInt(value) => write_unsigned(*value, out),
            SqlValue::Decimal(value) => value.write(out),
            SqlValue::Double(value) => write_double(*value, out),
            SqlValue::String(text) => out.extend_from_slice(text),
            SqlValue::Date(date) => date.write(out),
            SqlValue::Datetime(datetime) => datetime.write(
                if datetime.microsecond != 0 {
                    FSP_MAX
                } else {
                    0
                },
                out,
            ),
            SqlValue::Time(time) => {
                time.write(if time.microsecond != 0 { FSP_MAX } else { 0 }, out)
            }
        }
    }

    /// The value's text form: borrowed for strings, rendered otherwise.
    pub fn to_text(&self) -> Cow<'_, [u8]> {
        match self {
            SqlValue::String(text) => Cow::Borrowed(text),
            other => {
                let mut text = Vec::new();
                other.write_text_form(&mut text);
                Cow::Owned(text)
            }
        }
    }
}

// ---------------------------------------------------------------------------
// SqlType

impl SqlType {
    /// A type from its column-definition fields.
    pub fn new(
        field_type: FieldType,
        flags: u16,
        length: u32,
        decimals: u8,
        collation: Collation,
    ) -> SqlType {
        SqlType {
            field_type,
            flags,
            length,
            decimals,
            collation,
        }
    }

    /// The type of `NULL`: MySQL's NULL field type, binary.
    pub fn null() -> SqlType {
        SqlType::new(FieldType::Null, flags::BINARY, 0, 0, Collation::Binary)
    }

    /// BIGINT with this display length.
    pub fn integer(length: u32, unsigned: bool) -> SqlType {
        let unsigned_flag = if unsigned { flags::UNSIGNED } else { 0 };
        SqlType::new(
            FieldType::LongLong,
            flags::BINARY | unsigned_flag,
            length,
            0,
            Collation::Binary,
        )
    }

    /// DOUBLE with unfixed decimals (MySQL's length 22).
    pub fn double() -> SqlType {
        SqlType::new(
            FieldType::Double,
            flags::BINARY,
            22,
            NOT_FIXED_DECIMALS,
            Collation::Binary,
        )
    }

    /// DECIMAL(precision, scale).
    pub fn decimal(precision: u32, scale: u8, unsigned: bool) -> SqlType {
        let precision = precision.clamp(1, 65);
        let scale = scale.min(DECIMAL_SCALE_MAX);
        let unsigned_flag = if unsigned { flags::UNSIGNED } else { 0 };
        SqlType::new(
            FieldType::NewDecimal,
            flags::BINARY | unsigned_flag,
            decimal_display_length(precision, scale, unsigned),
            scale,
            Collation::Binary,
        )
    }

    /// VARCHAR of `characters` characters in `collation` (`VAR_STRING` on the wire).
    pub fn string(characters: u32, collation: Collation) -> SqlType {
        let binary = if collation == Collation::Binary {
            flags::BINARY
        } else {
            0
        };
        SqlType::new(
            FieldType::VarString,
            binary,
            characters.saturating_mul(collation.bytes_per_char_max()),
            NOT_FIXED_DECIMALS,
            collation,
        )
    }

    /// A LONGTEXT/LONGBLOB-like result (MySQL's type for very long strings).
    pub fn long_string(collation: Collation) -> SqlType {
        let binary = if collation == Collation::Binary {
            flags::BINARY
        } else {
            0
        };
        SqlType::new(
            FieldType::LongBlob,
            flags::BLOB | binary,
            u32::MAX,
            NOT_FIXED_DECIMALS,
            collation,
        )
    }

    /// DATE (length 10).
    pub fn date() -> SqlType {
        SqlType::new(FieldType::Date, flags::BINARY, 10, 0, Collation::Binary)
    }

    /// DATETIME(fsp): length 19, plus a point and the digits.
    pub fn datetime(fsp: u8) -> SqlType {
        let fsp = fsp.min(FSP_MAX);
        SqlType::new(
            FieldType::DateTime,
            flags::BINARY,
            19 + if fsp > 0 { u32::from(fsp) + 1 } else { 0 },
            fsp,
            Collation::Binary,
        )
    }

    /// TIME(fsp): length 10, plus a point and the digits.
    pub fn time(fsp: u8) -> SqlType {
        let fsp = fsp.min(FSP_MAX);
        SqlType::new(
            FieldType::Time,
            flags::BINARY,
            10 + if fsp > 0 { u32::from(fsp) + 1 } else { 0 },
            fsp,
            Collation::Binary,
        )
    }

    /// Whether the UNSIGNED flag is set.
    pub fn is_unsigned(&self) -> bool {
        self.flags & flags::UNSIGNED != 0
    }

    /// Whether values may be NULL (no NOT_NULL flag).
    pub fn is_nullable(&self) -> bool {
        self.flags & flags::NOT_NULL == 0
    }

    /// The type with the NOT_NULL flag set or cleared.
    pub fn with_not_null(mut self, not_null: bool) -> SqlType {
        if not_null {
            self.flags |= flags::NOT_NULL;
        } else {
            self.flags &= !flags::NOT_NULL;
        }
        self
    }

    /// The integer field types (with YEAR and BIT).
    pub fn is_integer_type(&self) -> bool {
        matches!(
            self.field_type,
            FieldType::Tiny
                | FieldType::Short
                | FieldType::Long
                | FieldType::Int24
                | FieldType::LongLong
                | FieldType::Year
                | FieldType::Bit
        )
    }

    /// DECIMAL.
    pub fn is_decimal_type(&self) -> bool {
        matches!(self.field_type, FieldType::NewDecimal | FieldType::Decimal)
    }

    /// FLOAT and DOUBLE.
    pub fn is_real_type(&self) -> bool {
        matches!(self.field_type, FieldType::Float | FieldType::Double)
    }

    /// Integers, decimals and reals.
    pub fn is_numeric_type(&self) -> bool {
        self.is_integer_type() || self.is_decimal_type() || self.is_real_type()
    }

    /// DATE, DATETIME, TIMESTAMP and TIME.
    pub fn is_temporal_type(&self) -> bool {
        matches!(
            self.field_type,
            FieldType::Date | FieldType::DateTime | FieldType::Timestamp | FieldType::Time
        )
    }

    /// Strings, byte strings, ENUM, SET, JSON.
    pub fn is_string_type(&self) -> bool {
        matches!(
            self.field_type,
            FieldType::VarChar
                | FieldType::VarString
                | FieldType::String
                | FieldType::TinyBlob
                | FieldType::MediumBlob
                | FieldType::LongBlob
                | FieldType::Blob
                | FieldType::Enum
                | FieldType::Set
                | FieldType::Json
        )
    }

    /// The precision of a DECIMAL type, from its display length.
    pub fn decimal_precision(&self) -> u32 {
        let point = u32::from(self.decimals > 0 && self.decimals != NOT_FIXED_DECIMALS);
        let sign = u32::from(!self.is_unsigned());
        self.length.saturating_sub(point + sign).max(1)
    }

    /// Characters of a string type (its length over the widest character).
    pub fn character_length(&self) -> u32 {
        self.length / self.collation.bytes_per_char_max().max(1)
    }
}

/// MySQL's `my_decimal_precision_to_length_no_truncation`: digits, a point
/// when there is a scale, a sign unless unsigned.
pub fn decimal_display_length(precision: u32, scale: u8, unsigned: bool) -> u32 {
    let precision = precision.max(u32::from(scale)).max(1);
    precision + u32::from(scale > 0) + u32::from(!unsigned)
}

// ---------------------------------------------------------------------------
// Wire renderings

fn write_bits(value: u64, ty: &SqlType, out: &mut Vec<u8>) {
    let bytes = (ty.length.clamp(1, 64)).div_ceil(8) as usize;
    out.extend_from_slice(&value.to_be_bytes()[8 - bytes..]);
}

fn temporal_fsp(ty: &SqlType, microsecond: u32) -> u8 {
    if ty.is_temporal_type() && ty.decimals <= FSP_MAX {
        ty.decimals
    } else if microsecond != 0 {
        FSP_MAX
    } else {
        0
    }
}

/// Appends the value as MySQL's text protocol renders a column of type
/// `ty` (NULL appends nothing: the caller writes the NULL marker).
/// Integers plain; DECIMAL with exactly the type's scale; DOUBLE in
/// MySQL's `%g`-like shortest form (or fixed when the type has decimals);
/// FLOAT with 6 significant digits; dates `YYYY-MM-DD`; datetimes and TIME
/// with exactly the type's fraction digits; YEAR in 4 digits; BIT as its
/// big-endian bytes; strings as their bytes.
pub fn write_text(value: &SqlValue, ty: &SqlType, out: &mut Vec<u8>) {
    let fixed_decimals = (ty.decimals < NOT_FIXED_DECIMALS).then_some(ty.decimals);
    match (value, ty.field_type) {
        (SqlValue::Null, _) => {}
        (SqlValue::Int(year), FieldType::Year) => {
            temporal::push_digits(out, (*year).clamp(0, 9999) as u32, 4)
        }
        (SqlValue::UInt(year), FieldType::Year) => {
            temporal::push_digits(out, (*year).min(9999) as u32, 4)
        }
        (SqlValue::Int(bits), FieldType::Bit) => write_bits(*bits as u64, ty, out),
        (SqlValue::UInt(bits), FieldType::Bit) => write_bits(*bits, ty, out),
        (SqlValue::Int(_) | SqlValue::UInt(_) | SqlValue::Decimal(_), FieldType::NewDecimal) => {
            let (decimal, _) = value.to_decimal();
            decimal.write_with_scale(fixed_decimals.unwrap_or(decimal.scale), out);
        }
        (SqlValue::Int(value), _) => write_integer(*value, out),
        (SqlValue::UInt(value), _) => write_unsigned(*value, out),
        (SqlValue::Decimal(decimal), FieldType::Double | FieldType::Float) => {
            write_real_typed(decimal.to_f64(), ty, out)
        }
        (SqlValue::Decimal(decimal), _) if ty.is_integer_type() => {
            write_integer(decimal.to_i64().0, out)
        }
        (SqlValue::Decimal(decimal), _) => decimal.write(out),
        (SqlValue::Double(double), FieldType::NewDecimal) => match Decimal::from_f64(*double) {
            Some((decimal, _)) => {
                decimal.write_with_scale(fixed_decimals.unwrap_or(decimal.scale), out)
            }
            None => write_double(*double, out),
        },
        (SqlValue::Double(double), _) if ty.is_integer_type() => {
            write_integer(double_to_i64(*double).0, out)
        }
        (SqlValue::Double(double), _) => write_real_typed(*double, ty, out),
        (SqlValue::String(text), _) => write_string(text, ty.collation, out),
        (SqlValue::Date(date), _) => date.write(out),
        (SqlValue::Datetime(datetime), FieldType::Date) => datetime.date.write(out),
        (SqlValue::Datetime(datetime), _) => {
            datetime.write(temporal_fsp(ty, datetime.microsecond), out)
        }
        (SqlValue::Time(time), _) => time.write(temporal_fsp(ty, time.microsecond), out),
    }
}

/// Whether strings of this collation are sent converted to UTF-8: the
/// results' character set is utf8mb4 (MySQL's default
/// `character_set_results`), so latin1 text is converted on the way out
/// while its value (LENGTH, HEX, comparisons) stays latin1 bytes.
fn is_sent_converted(collation: Collation) -> bool {
    matches!(collation, Collation::Latin1Bin | Collation::Latin1Ci)
}

/// A string's bytes as the client receives them (see [`is_sent_converted`]).
fn write_string(text: &[u8], collation: Collation, out: &mut Vec<u8>) {
    if is_sent_converted(collation) {
        crate::convert::convert_charset(text, collation, Collation::Utf8mb4Bin, out);
    } else {
        out.extend_from_slice(text);
    }
}

fn write_real_typed(value: f64, ty: &SqlType, out: &mut Vec<u8>) {
    if ty.decimals < NOT_FIXED_DECIMALS {
        write_double_fixed(value, ty.decimals, out);
    } else if ty.field_type == FieldType::Float {
        write_float(value, out);
    } else {
        write_double(value, out);
    }
}

/// The value as a binary-protocol column of type `ty`. Values that travel
/// as text (DECIMAL, BIT, and strings rendered from numbers) are written
/// into `scratch` (cleared first) and borrowed from it, so a caller that
/// serializes each column before converting the next reuses one buffer for
/// the whole result set. A value of another kind than the type is converted.
pub fn to_protocol<'a>(
    value: &'a SqlValue,
    ty: &SqlType,
    scratch: &'a mut Vec<u8>,
) -> ProtocolValue<'a> {
    if value.is_null() {
        return ProtocolValue::Null;
    }
    match ty.field_type {
        FieldType::Null => ProtocolValue::Null,
        FieldType::Tiny
        | FieldType::Short
        | FieldType::Long
        | FieldType::Int24
        | FieldType::LongLong
        | FieldType::Year => {
            if ty.is_unsigned() {
                ProtocolValue::UInt(match value {
                    SqlValue::Int(value) => *value as u64,
                    other => other.to_uint().0,
                })
            } else {
                ProtocolValue::Int(match value {
                    SqlValue::UInt(value) => *value as i64,
                    other => other.to_int().0,
                })
            }
        }
        FieldType::Float => ProtocolValue::Float(value.to_double().0 as f32),
        FieldType::Double => ProtocolValue::Double(value.to_double().0),
        FieldType::Date => match value.to_date() {
            Some((date, _)) => ProtocolValue::Date {
                year: date.year,
                month: date.month,
                day: date.day,
            },
            None => ProtocolValue::Null,
        },
        FieldType::DateTime | FieldType::Timestamp => match value.to_datetime() {
            Some((datetime, _)) => ProtocolValue::DateTime {
                year: datetime.date.year,
                month: datetime.date.month,
                day: datetime.date.day,
                hour: datetime.hour,
                minute: datetime.minute,
                second: datetime.second,
                microsecond: datetime.microsecond,
            },
            None => ProtocolValue::Null,
        },
        FieldType::Time => match value.to_time() {
            Some((time, _)) => ProtocolValue::Time {
                negative: time.negative,
                days: u32::from(time.hours / 24),
                hours: (time.hours % 24) as u8,
                minutes: time.minutes,
                seconds: time.seconds,
                microsecond: time.microsecond,
            },
            None => ProtocolValue::Null,
        },
        _ => match value {
            SqlValue::String(text) if !is_sent_converted(ty.collation) => {
                ProtocolValue::Bytes(text)
            }
            other => {
                scratch.clear();
                write_text(other, ty, scratch);
                ProtocolValue::Bytes(scratch)
            }
        },
    }
}

/// A prepared statement's parameter as a value. Strings stay bytes: the
/// expression the parameter stands in gives their collation (MySQL gives a
/// string parameter the connection's `utf8mb4` collation, and a BLOB-typed
/// one `binary`). A DECIMAL parameter (sent as text) becomes a `Decimal`;
/// a TIME's days fold into its hours (clamped to 838:59:59).
pub fn from_protocol(value: &ProtocolValue<'_>, field_type: FieldType) -> SqlValue {
    match value {
        ProtocolValue::Null => SqlValue::Null,
        ProtocolValue::Int(value) => SqlValue::Int(*value),
        ProtocolValue::UInt(value) => SqlValue::UInt(*value),
        ProtocolValue::Float(value) => SqlValue::Double(f64::from(*value)),
        ProtocolValue::Double(value) => SqlValue::Double(*value),
        ProtocolValue::Bytes(bytes) => {
            if matches!(field_type, FieldType::NewDecimal | FieldType::Decimal)
                && let Some((decimal, Conversion::Exact | Conversion::Rounded)) =
                    Decimal::parse(bytes)
            {
                return SqlValue::Decimal(decimal);
            }
            SqlValue::String(bytes.to_vec())
        }
        ProtocolValue::Date { year, month, day } => SqlValue::Date(Date::new(*year, *month, *day)),
        ProtocolValue::DateTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            microsecond,
        } => {
            let datetime = Datetime::new(
                Date::new(*year, *month, *day),
                *hour,
                *minute,
                *second,
                (*microsecond).min(999_999),
            );
            if field_type == FieldType::Date {
                SqlValue::Date(datetime.date)
            } else {
                SqlValue::Datetime(datetime)
            }
        }
        ProtocolValue::Time {
            negative,
            days,
            hours,
            minutes,
            seconds,
            microsecond,
        } => {
            let total = ((i64::from(*days) * 24 + i64::from(*hours)) * 3600
                + i64::from(*minutes) * 60
                + i64::from(*seconds))
                * temporal::MICROSECONDS_PER_SECOND
                + i64::from((*microsecond).min(999_999));
            let (time, _) = Time::from_microseconds(if *negative { -total } else { total });
            SqlValue::Time(time)
        }
    }
}

/// The 1690 error for a DECIMAL result beyond 38 digits, naming the expression.
pub fn decimal_out_of_range(expression: &str) -> SqlError {
    SqlError {
        code: 1690,
        sqlstate: *b"22003",
        message: format!("DECIMAL value is out of range in '{expression}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(text: &str) -> Decimal {
        Decimal::parse(text.as_bytes()).unwrap().0
    }

    fn text_of(decimal: Decimal) -> String {
        decimal.to_string()
    }

    #[test]
    fn decimals_parse_and_print_with_their_scale() {
        assert_eq!(decimal("1.50"), Decimal::new(150, 2));
        assert_eq!(text_of(decimal("-0.05")), "-0.05");
        assert_eq!(text_of(decimal(".5")), "0.5");
        assert_eq!(text_of(decimal("5.")), "5");
        assert_eq!(text_of(decimal("1.5e3")), "1500");
        assert_eq!(text_of(decimal("12345e-7")), "0.0012345");
        assert_eq!(text_of(decimal("007")), "7");
        assert_eq!(Decimal::parse(b"abc"), None);
        assert_eq!(Decimal::parse(b"1.5x").unwrap().1, Conversion::Truncated);
        assert_eq!(
            Decimal::parse(b" 1.5 ").unwrap(),
            (Decimal::new(15, 1), Conversion::Exact)
        );
        let (clamped, conversion) = Decimal::parse(b"1e50").unwrap();
        assert_eq!(conversion, Conversion::OutOfRange);
        assert_eq!(clamped.digit_count(), 38);
        // 31 fraction digits round to 30 (MySQL's scale limit).
        let (rounded, conversion) = Decimal::parse(b"0.0000000000000000000000000000005").unwrap();
        assert_eq!(
            (text_of(rounded).len(), conversion),
            (32, Conversion::Rounded)
        );
        let mut out = Vec::new();
        Decimal::new(5, 1).write_with_scale(3, &mut out);
        assert_eq!(out, b"0.500");
    }

    #[test]
    fn decimal_arithmetic_is_exact() {
        assert_eq!(
            text_of(decimal("0.1").checked_add(decimal("0.2")).unwrap()),
            "0.3"
        );
        assert_eq!(
            text_of(decimal("1.5").checked_mul(decimal("2.25")).unwrap()),
            "3.375"
        );
        // MySQL: SELECT 1/3 → 0.3333; 2/3 → 0.6667 (div_precision_increment = 4).
        assert_eq!(
            text_of(decimal("1").checked_div(decimal("3"), 4).unwrap()),
            "0.3333"
        );
        assert_eq!(
            text_of(decimal("2").checked_div(decimal("3"), 4).unwrap()),
            "0.6667"
        );
        assert_eq!(
            text_of(decimal("-2").checked_div(decimal("3"), 4).unwrap()),
            "-0.6667"
        );
        assert_eq!(
            text_of(decimal("1.00").checked_div(decimal("8"), 4).unwrap()),
            "0.125000"
        );
        assert_eq!(decimal("1").checked_div(Decimal::ZERO, 4), None);
        assert_eq!(
            text_of(decimal("-7.5").checked_rem(decimal("2")).unwrap()),
            "-1.5"
        );
        assert_eq!(
            decimal("99999999999999999999999999999999999999").checked_add(decimal("1")),
            None
        );
        assert_eq!(decimal("1.0").compare(decimal("1.00")), Ordering::Equal);
        assert_eq!(decimal("-1.5").compare(decimal("1")), Ordering::Less);
        assert_eq!(text_of(decimal("2.5").round(0).unwrap()), "3");
        assert_eq!(text_of(decimal("-2.5").round(0).unwrap()), "-3");
        assert_eq!(text_of(decimal("125").round(-1).unwrap()), "130");
        assert_eq!(text_of(decimal("1.5").round(3).unwrap()), "1.500");
        assert_eq!(text_of(decimal("1.999").truncate(1).unwrap()), "1.9");
        assert_eq!(text_of(decimal("-1.5").floor()), "-2");
        assert_eq!(text_of(decimal("-1.5").ceil()), "-1");
        assert_eq!(decimal("2.5").to_i64(), (3, Conversion::Rounded));
        assert_eq!(decimal("0.1").to_f64(), 0.1);
        assert_eq!(Decimal::from_f64(0.1).unwrap().0, Decimal::new(1, 1));
    }

    #[test]
    fn doubles_print_as_mysql() {
        let print = |value: f64| {
            let mut out = Vec::new();
            write_double(value, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(print(0.1), "0.1");
        assert_eq!(print(1e20), "1e20");
        assert_eq!(print(1e15), "1e15");
        assert_eq!(print(1e14), "100000000000000");
        assert_eq!(print(1.5e-7), "0.00000015");
        assert_eq!(print(1e-16), "1e-16");
        assert_eq!(print(-2.5), "-2.5");
        assert_eq!(print(100.0), "100");
        assert_eq!(print(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(print(123_456_789_012_345_680.0), "1.2345678901234568e17");
        assert_eq!(print(0.0), "0");
        let float = |value: f32| {
            let mut out = Vec::new();
            write_float(f64::from(value), &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(2.718_281_7), "2.71828");
        assert_eq!(float(1_234_567.0), "1234570");
        let mut out = Vec::new();
        write_double_fixed(1.0, 2, &mut out);
        assert_eq!(out, b"1.00");
    }

    #[test]
    fn strings_convert_by_their_numeric_prefix() {
        // MySQL: SELECT '1abc' + 1 → 2 with warning 1292.
        assert_eq!(parse_double(b"1abc"), (1.0, Conversion::Truncated));
        assert_eq!(parse_double(b" 1.5e1 "), (15.0, Conversion::Exact));
        assert_eq!(parse_double(b"abc"), (0.0, Conversion::Truncated));
        assert_eq!(parse_double(b"1e"), (1.0, Conversion::Truncated));
        assert_eq!(parse_double(b"-.5"), (-0.5, Conversion::Exact));
        // CAST('1.5' AS SIGNED) → 1 with a warning.
        assert_eq!(
            SqlValue::String(b"1.5".to_vec()).to_int(),
            (1, Conversion::Truncated)
        );
        assert_eq!(
            SqlValue::String(b"99999999999999999999".to_vec()).to_int(),
            (i64::MAX, Conversion::OutOfRange)
        );
        assert_eq!(SqlValue::Double(2.5).to_int(), (2, Conversion::Rounded));
        assert_eq!(SqlValue::Double(3.5).to_int(), (4, Conversion::Rounded));
        assert_eq!(SqlValue::Int(-1).to_uint(), (0, Conversion::OutOfRange));
        assert_eq!(parse_unsigned(b"-1"), (u64::MAX, Conversion::Exact));
        assert_eq!(SqlValue::String(b"0.5".to_vec()).to_bool(), Some(true));
        assert_eq!(SqlValue::Null.to_bool(), None);
    }

    #[test]
    fn text_protocol_rendering() {
        let render = |value: SqlValue, ty: SqlType| {
            let mut out = Vec::new();
            write_text(&value, &ty, &mut out);
            out
        };
        assert_eq!(render(SqlValue::Int(-5), SqlType::integer(2, false)), b"-5");
        assert_eq!(
            render(
                SqlValue::Decimal(Decimal::new(15, 1)),
                SqlType::decimal(10, 3, false)
            ),
            b"1.500"
        );
        let datetime = Datetime::new(Date::new(2024, 1, 2), 3, 4, 5, 120_000);
        assert_eq!(
            render(SqlValue::Datetime(datetime), SqlType::datetime(0)),
            b"2024-01-02 03:04:05"
        );
        assert_eq!(
            render(SqlValue::Datetime(datetime), SqlType::datetime(3)),
            b"2024-01-02 03:04:05.120"
        );
        let time = Time {
            negative: true,
            hours: 838,
            minutes: 59,
            seconds: 59,
            microsecond: 0,
        };
        assert_eq!(
            render(SqlValue::Time(time), SqlType::time(0)),
            b"-838:59:59"
        );
        let year = SqlType::new(FieldType::Year, 0, 4, 0, Collation::Binary);
        assert_eq!(render(SqlValue::Int(0), year.clone()), b"0000");
        assert_eq!(render(SqlValue::Int(2024), year), b"2024");
        let bit = SqlType::new(FieldType::Bit, 0, 10, 0, Collation::Binary);
        assert_eq!(render(SqlValue::UInt(0x102), bit), [0x01, 0x02]);
    }

    #[test]
    fn binary_protocol_round_trip() {
        let mut scratch = Vec::new();
        let value = SqlValue::Decimal(Decimal::new(-1234, 2));
        let rendered = to_protocol(&value, &SqlType::decimal(6, 2, false), &mut scratch);
        assert_eq!(rendered, ProtocolValue::Bytes(b"-12.34"));
        let back = from_protocol(&ProtocolValue::Bytes(b"-12.34"), FieldType::NewDecimal);
        assert_eq!(back, value);
        let time = from_protocol(
            &ProtocolValue::Time {
                negative: false,
                days: 1,
                hours: 2,
                minutes: 3,
                seconds: 4,
                microsecond: 0,
            },
            FieldType::Time,
        );
        assert_eq!(time.to_time().unwrap().0.hours, 26);
        let mut scratch = Vec::new();
        let int = SqlValue::String(b"42".to_vec());
        assert_eq!(
            to_protocol(&int, &SqlType::integer(2, false), &mut scratch),
            ProtocolValue::Int(42)
        );
    }
}
