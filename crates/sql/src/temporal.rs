//! Dates and times with MySQL's rules: the calendar (MySQL's day numbers,
//! weekdays and week numbers), parsing from strings and numbers the way
//! `str_to_datetime`, `str_to_time` and `number_to_datetime` accept them,
//! the text forms, interval arithmetic, and `DATE_FORMAT`/`STR_TO_DATE`.
//!
//! Every function here is total: invalid input gives `None` (the caller
//! warns and yields NULL, as MySQL does), never a panic.

use crate::value::{Conversion, Date, Datetime, Time};

/// TIME's range is ±838:59:59 (MySQL's limit, from its old 3-byte format).
pub const TIME_HOURS_MAX: u16 = 838;
/// Microseconds in a second.
pub const MICROSECONDS_PER_SECOND: i64 = 1_000_000;
/// Microseconds in a day.
pub const MICROSECONDS_PER_DAY: i64 = 86_400 * MICROSECONDS_PER_SECOND;
/// The largest TIME in microseconds: 838:59:59 (MySQL clamps to it without a fraction).
pub const TIME_MICROSECONDS_MAX: i64 = (838 * 3600 + 59 * 60 + 59) * MICROSECONDS_PER_SECOND;
/// MySQL's day number of 9999-12-31, the last valid date.
pub const DAY_NUMBER_MAX: i64 = 3_652_424;
/// MySQL's day number of 0000-01-01 is 1; numbers below 366 make no date in `FROM_DAYS`.
pub const DAY_NUMBER_MIN_FOR_DATES: i64 = 366;
/// MySQL's day number of 1970-01-01, the Unix epoch.
pub const UNIX_EPOCH_DAY_NUMBER: i64 = 719_528;
/// The last second TIMESTAMP holds: 2038-01-19 03:14:07 UTC.
pub const TIMESTAMP_SECONDS_MAX: i64 = i32::MAX as i64;
/// The most fractional-second digits of any temporal type.
pub const FSP_MAX: u8 = 6;

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The English name of month 1..=12.
pub fn month_name(month: u8) -> Option<&'static str> {
    MONTH_NAMES.get(usize::from(month).checked_sub(1)?).copied()
}

/// The English name of a weekday, 0 = Monday.
pub fn day_name(weekday: u8) -> Option<&'static str> {
    DAY_NAMES.get(usize::from(weekday)).copied()
}

/// Whether `year` has a February 29th (MySQL's rule makes year 0 a common year).
pub fn is_leap_year(year: u32) -> bool {
    year != 0 && year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

/// Days in `month` (1..=12) of `year`; 0 for another month.
pub fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

fn days_in_year(year: i64) -> i64 {
    if u32::try_from(year).is_ok_and(is_leap_year) {
        366
    } else {
        365
    }
}

/// MySQL's `calc_daynr`: days since the (proleptic) year 0, as `TO_DAYS` returns them.
pub fn day_number(year: u32, month: u32, day: u32) -> i64 {
    if year == 0 && month == 0 {
        return 0;
    }
    let (mut year, month, day) = (i64::from(year), i64::from(month), i64::from(day));
    let mut days = 365 * year + 31 * (month - 1) + day;
    if month <= 2 {
        year -= 1;
    } else {
        days -= (month * 4 + 23) / 10;
    }
    // Integer division truncates toward zero, as C's does in MySQL's formula.
    let centuries = ((year / 100 + 1) * 3) / 4;
    days + year / 4 - centuries
}

/// Weekday of a day number, 0 = Monday (or 0 = Sunday when `sunday_first`).
pub fn weekday_of_day_number(day_number: i64, sunday_first: bool) -> u8 {
    (day_number + 5 + i64::from(sunday_first)).rem_euclid(7) as u8
}

impl Date {
    /// The zero date, 0000-00-00.
    pub const ZERO: Date = Date {
        year: 0,
        month: 0,
        day: 0,
    };

    /// A date from its parts (not checked: see `is_calendar_date`).
    pub fn new(year: u16, month: u8, day: u8) -> Date {
        Date { year, month, day }
    }

    /// Whether it is 0000-00-00.
    pub fn is_zero(&self) -> bool {
        self.year == 0 && self.month == 0 && self.day == 0
    }

    /// Whether the month or the day is 0 (MySQL's NO_ZERO_IN_DATE refuses these).
    pub fn has_zero_part(&self) -> bool {
        self.month == 0 || self.day == 0
    }

    /// A real calendar day: year ≤ 9999, month 1..=12, day within the month.
    pub fn is_calendar_date(&self) -> bool {
        self.year <= 9999
            && (1..=12).contains(&self.month)
            && self.day >= 1
            && u32::from(self.day) <= days_in_month(u32::from(self.year), u32::from(self.month))
    }

    /// MySQL's day number (`TO_DAYS`).
    pub fn day_number(&self) -> i64 {
        day_number(
            u32::from(self.year),
            u32::from(self.month),
            u32::from(self.day),
        )
    }

    /// The date with this day number (`FROM_DAYS`); `None` outside 0000..=9999.
    pub fn from_day_number(number: i64) -> Option<Date> {
        if !(DAY_NUMBER_MIN_FOR_DATES..=DAY_NUMBER_MAX).contains(&number) {
            return None;
        }
        // Estimate the year, then correct it: the estimate is off by at most one.
        let mut year = number * 100 / 36525;
        while year > 0 && day_number(year as u32, 1, 1) > number {
            year -= 1;
        }
        while day_number(year as u32 + 1, 1, 1) <= number {
            year += 1;
        }
        let mut day_of_year = number - day_number(year as u32, 1, 1) + 1;
        let mut month = 1u32;
        loop {
            let length = i64::from(days_in_month(year as u32, month));
            if day_of_year <= length || month == 12 {
                break;
            }
            day_of_year -= length;
            month += 1;
        }
        Some(Date::new(year as u16, month as u8, day_of_year as u8))
    }

    /// 0 = Monday (MySQL's `WEEKDAY`).
    pub fn weekday(&self) -> u8 {
        weekday_of_day_number(self.day_number(), false)
    }

    /// 1..=366 (MySQL's `DAYOFYEAR`).
    pub fn day_of_year(&self) -> i64 {
        self.day_number() - day_number(u32::from(self.year), 1, 1) + 1
    }

    /// The date as the number `YYYYMMDD`.
    pub fn to_number(&self) -> i64 {
        i64::from(self.year) * 10_000 + i64::from(self.month) * 100 + i64::from(self.day)
    }

    /// Appends `YYYY-MM-DD`.
    pub fn write(&self, out: &mut Vec<u8>) {
        push_digits(out, u32::from(self.year), 4);
        out.push(b'-');
        push_digits(out, u32::from(self.month), 2);
        out.push(b'-');
        push_digits(out, u32::from(self.day), 2);
    }

    /// The last day of the date's month (`LAST_DAY`).
    pub fn last_day_of_month(&self) -> Option<Date> {
        if !(1..=12).contains(&self.month) {
            return None;
        }
        let last = days_in_month(u32::from(self.year), u32::from(self.month));
        Some(Date::new(self.year, self.month, last as u8))
    }

    /// MySQL's `calc_week` with the behaviour bits of `week_behaviour`; the
    /// year the week belongs to is returned with the week.
    pub fn week(&self, week_behaviour: u8) -> (u32, u16) {
        calculate_week(*self, week_behaviour)
    }
}

/// Week behaviour bit: weeks start on Monday.
pub const WEEK_MONDAY_FIRST: u8 = 1;
/// Week behaviour bit: week numbers run 1..=53 and belong to the year of their days.
pub const WEEK_YEAR: u8 = 2;
/// Week behaviour bit: week 1 is the first week with a first weekday in it.
pub const WEEK_FIRST_WEEKDAY: u8 = 4;

/// The behaviour bits of `WEEK(date, mode)`'s mode 0..=7.
pub fn week_mode(mode: i64) -> u8 {
    let mut behaviour = (mode & 7) as u8;
    if behaviour & WEEK_MONDAY_FIRST == 0 {
        behaviour ^= WEEK_FIRST_WEEKDAY;
    }
    behaviour
}

fn calculate_week(date: Date, week_behaviour: u8) -> (u32, u16) {
    let day = date.day_number();
    let mut first_day = day_number(u32::from(date.year), 1, 1);
    let monday_first = week_behaviour & WEEK_MONDAY_FIRST != 0;
    let mut week_year = week_behaviour & WEEK_YEAR != 0;
    let first_weekday = week_behaviour & WEEK_FIRST_WEEKDAY != 0;
    let mut weekday = i64::from(weekday_of_day_number(first_day, !monday_first));
    let mut year = i64::from(date.year);
    if date.month == 1 && i64::from(date.day) <= 7 - weekday {
        if !week_year && ((first_weekday && weekday != 0) || (!first_weekday && weekday >= 4)) {
            return (0, year as u16);
        }
        week_year = true;
        year -= 1;
        let days = days_in_year(year);
        first_day -= days;
        weekday = (weekday + 53 * 7 - days).rem_euclid(7);
    }
    let days = if (first_weekday && weekday != 0) || (!first_weekday && weekday >= 4) {
        day - (first_day + (7 - weekday))
    } else {
        day - (first_day - weekday)
    };
    if week_year && days >= 52 * 7 {
        let weekday = (weekday + days_in_year(year)).rem_euclid(7);
        if (!first_weekday && weekday < 4) || (first_weekday && weekday == 0) {
            return (1, (year + 1) as u16);
        }
    }
    ((days / 7 + 1).max(0) as u32, year.max(0) as u16)
}

impl Datetime {
    /// The zero datetime, 0000-00-00 00:00:00.
    pub const ZERO: Datetime = Datetime {
        date: Date::ZERO,
        hour: 0,
        minute: 0,
        second: 0,
        microsecond: 0,
    };

    /// A datetime from its parts (not checked).
    pub fn new(date: Date, hour: u8, minute: u8, second: u8, microsecond: u32) -> Datetime {
        Datetime {
            date,
            hour,
            minute,
            second,
            microsecond,
        }
    }

    /// Midnight of `date`.
    pub fn from_date(date: Date) -> Datetime {
        Datetime::new(date, 0, 0, 0, 0)
    }

    /// Whether it is 0000-00-00 00:00:00.
    pub fn is_zero(&self) -> bool {
        self.date.is_zero()
            && self.hour == 0
            && self.minute == 0
            && self.second == 0
            && self.microsecond == 0
    }

    /// The time of day as a TIME.
    pub fn time_of_day(&self) -> Time {
        Time {
            negative: false,
            hours: u16::from(self.hour),
            minutes: self.minute,
            seconds: self.second,
            microsecond: self.microsecond,
        }
    }

    /// Microseconds since midnight.
    pub fn microseconds_of_day(&self) -> i64 {
        (i64::from(self.hour) * 3600 + i64::from(self.minute) * 60 + i64::from(self.second))
            * MICROSECONDS_PER_SECOND
            + i64::from(self.microsecond)
    }

    /// Microseconds since day number 0 (a scale on which differences are exact).
    pub fn total_microseconds(&self) -> i128 {
        i128::from(self.date.day_number()) * i128::from(MICROSECONDS_PER_DAY)
            + i128::from(self.microseconds_of_day())
    }

    /// The datetime `total` microseconds after day number 0; `None` outside 0000..=9999.
    pub fn from_total_microseconds(total: i128) -> Option<Datetime> {
        let day = total.div_euclid(i128::from(MICROSECONDS_PER_DAY));
        let of_day = total.rem_euclid(i128::from(MICROSECONDS_PER_DAY)) as i64;
        let date = Date::from_day_number(i64::try_from(day).ok()?)?;
        Some(datetime_from_day_microseconds(date, of_day))
    }

    /// The datetime as the number `YYYYMMDDhhmmss` (the fraction is not part of it).
    pub fn to_number(&self) -> i64 {
        self.date.to_number() * 1_000_000
            + i64::from(self.hour) * 10_000
            + i64::from(self.minute) * 100
            + i64::from(self.second)
    }

    /// Appends `YYYY-MM-DD hh:mm:ss` and, when `fsp` > 0, a point and `fsp` fraction digits.
    pub fn write(&self, fsp: u8, out: &mut Vec<u8>) {
        self.date.write(out);
        out.push(b' ');
        write_clock(
            u32::from(self.hour),
            self.minute,
            self.second,
            self.microsecond,
            fsp,
            out,
        );
    }

    /// Seconds since the Unix epoch (UTC) and the microseconds.
    pub fn unix_seconds(&self) -> (i64, u32) {
        let days = self.date.day_number() - UNIX_EPOCH_DAY_NUMBER;
        let seconds = days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second);
        (seconds, self.microsecond)
    }

    /// The UTC datetime `seconds` after the Unix epoch.
    pub fn from_unix_seconds(seconds: i64, microsecond: u32) -> Option<Datetime> {
        let days = seconds.div_euclid(86_400);
        let of_day = seconds.rem_euclid(86_400);
        let date = Date::from_day_number(days.checked_add(UNIX_EPOCH_DAY_NUMBER)?)?;
        Some(datetime_from_day_microseconds(
            date,
            of_day * MICROSECONDS_PER_SECOND + i64::from(microsecond.min(999_999)),
        ))
    }

    /// Rounds the fraction to `fsp` digits, half up, carrying into the seconds
    /// (MySQL 8's default when storing or casting to fewer digits).
    pub fn round_to_fsp(&self, fsp: u8) -> Option<Datetime> {
        let unit = 10u32.pow(u32::from(FSP_MAX - fsp.min(FSP_MAX)));
        let rounded = (self.microsecond + unit / 2) / unit * unit;
        if rounded < 1_000_000 {
            return Some(Datetime {
                microsecond: rounded,
                ..*self
            });
        }
        if self.date.has_zero_part() {
            return Some(Datetime {
                microsecond: 0,
                ..*self
            });
        }
        let whole = Datetime {
            microsecond: 0,
            ..*self
        };
        Datetime::from_total_microseconds(whole.total_microseconds() + 1_000_000)
    }

    /// Adds a signed number of months, keeping the day unless the month is
    /// shorter (then its last day), as MySQL's `INTERVAL n MONTH` does.
    pub fn add_months(&self, months: i64) -> Option<Datetime> {
        let index = i64::from(self.date.year)
            .checked_mul(12)?
            .checked_add(i64::from(self.date.month) - 1)?
            .checked_add(months)?;
        if !(0..10_000 * 12).contains(&index) {
            return None;
        }
        let year = (index / 12) as u32;
        let month = (index % 12 + 1) as u32;
        let day = u32::from(self.date.day).min(days_in_month(year, month));
        Some(Datetime {
            date: Date::new(year as u16, month as u8, day as u8),
            ..*self
        })
    }

    /// Adds signed microseconds; `None` outside 0000..=9999.
    pub fn add_microseconds(&self, microseconds: i128) -> Option<Datetime> {
        Datetime::from_total_microseconds(self.total_microseconds().checked_add(microseconds)?)
    }
}

fn datetime_from_day_microseconds(date: Date, of_day: i64) -> Datetime {
    let seconds = of_day / MICROSECONDS_PER_SECOND;
    Datetime {
        date,
        hour: (seconds / 3600) as u8,
        minute: (seconds / 60 % 60) as u8,
        second: (seconds % 60) as u8,
        microsecond: (of_day % MICROSECONDS_PER_SECOND) as u32,
    }
}

impl Time {
    /// 00:00:00.
    pub const ZERO: Time = Time {
        negative: false,
        hours: 0,
        minutes: 0,
        seconds: 0,
        microsecond: 0,
    };

    /// The signed duration in microseconds.
    pub fn to_microseconds(&self) -> i64 {
        let magnitude =
            (i64::from(self.hours) * 3600 + i64::from(self.minutes) * 60 + i64::from(self.seconds))
                * MICROSECONDS_PER_SECOND
                + i64::from(self.microsecond);
        if self.negative { -magnitude } else { magnitude }
    }

    /// The TIME of a signed duration, clamped to ±838:59:59 (the conversion
    /// says when it was).
    pub fn from_microseconds(microseconds: i64) -> (Time, Conversion) {
        let negative = microseconds < 0;
        let magnitude = microseconds.unsigned_abs();
        let (magnitude, conversion) = if magnitude > TIME_MICROSECONDS_MAX as u64 {
            (TIME_MICROSECONDS_MAX as u64, Conversion::OutOfRange)
        } else {
            (magnitude, Conversion::Exact)
        };
        let seconds = magnitude / MICROSECONDS_PER_SECOND as u64;
        let time = Time {
            negative: negative && magnitude != 0,
            hours: (seconds / 3600) as u16,
            minutes: (seconds / 60 % 60) as u8,
            seconds: (seconds % 60) as u8,
            microsecond: (magnitude % MICROSECONDS_PER_SECOND as u64) as u32,
        };
        (time, conversion)
    }

    /// The time as the number `[-]hhmmss`.
    pub fn to_number(&self) -> i64 {
        let magnitude = i64::from(self.hours) * 10_000
            + i64::from(self.minutes) * 100
            + i64::from(self.seconds);
        if self.negative { -magnitude } else { magnitude }
    }

    /// Whether the duration is 0.
    pub fn is_zero(&self) -> bool {
        self.to_microseconds() == 0
    }

    /// Appends `[-]hh:mm:ss` (at least two hour digits) and `fsp` fraction digits.
    pub fn write(&self, fsp: u8, out: &mut Vec<u8>) {
        if self.negative {
            out.push(b'-');
        }
        write_clock(
            u32::from(self.hours),
            self.minutes,
            self.seconds,
            self.microsecond,
            fsp,
            out,
        );
    }

    /// Rounds the fraction to `fsp` digits, half up.
    pub fn round_to_fsp(&self, fsp: u8) -> Time {
        let unit = 10i64.pow(u32::from(FSP_MAX - fsp.min(FSP_MAX)));
        let microseconds = self.to_microseconds();
        let magnitude = (microseconds.abs() + unit / 2) / unit * unit;
        Time::from_microseconds(if microseconds < 0 {
            -magnitude
        } else {
            magnitude
        })
        .0
    }
}

fn write_clock(hours: u32, minutes: u8, seconds: u8, microsecond: u32, fsp: u8, out: &mut Vec<u8>) {
    push_digits(out, hours, 2);
    out.push(b':');
    push_digits(out, u32::from(minutes), 2);
    out.push(b':');
    push_digits(out, u32::from(seconds), 2);
    write_fraction(microsecond, fsp, out);
}

/// Appends a point and the first `fsp` digits of the microseconds (nothing for 0 digits).
pub fn write_fraction(microsecond: u32, fsp: u8, out: &mut Vec<u8>) {
    let fsp = fsp.min(FSP_MAX);
    if fsp == 0 {
        return;
    }
    out.push(b'.');
    let digits = microsecond.min(999_999) / 10u32.pow(u32::from(FSP_MAX - fsp));
    push_digits(out, digits, usize::from(fsp));
}

/// Appends `value` in decimal with at least `width` digits (zero-padded).
pub fn push_digits(out: &mut Vec<u8>, value: u32, width: usize) {
    let mut buffer = [b'0'; 10];
    let mut position = buffer.len();
    let mut rest = value;
    loop {
        position -= 1;
        buffer[position] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = buffer.len() - position;
    for _ in digits..width {
        out.push(b'0');
    }
    out.extend_from_slice(&buffer[position..]);
}

// ---------------------------------------------------------------------------
// Parsing

/// A datetime parsed from text or a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParsedDatetime {
    pub value: Datetime,
    /// Whether a time of day was given (a DATE has none).
    pub has_time: bool,
    /// Digits of fraction given (0..=6).
    pub fraction_digits: u8,
    /// `Truncated` when text followed the value (MySQL warns and uses the value).
    pub conversion: Conversion,
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

fn two_digit_year(year: u32) -> u32 {
    if year < 70 { year + 2000 } else { year + 1900 }
}

/// Reads digits starting at `position`; returns the value (saturating) and the digit count.
fn read_digits(text: &[u8], position: &mut usize, limit: usize) -> (u32, usize) {
    let mut value: u32 = 0;
    let mut count = 0;
    while *position < text.len() && text[*position].is_ascii_digit() && count < limit {
        value = value
            .saturating_mul(10)
            .saturating_add(u32::from(text[*position] - b'0'));
        *position += 1;
        count += 1;
    }
    (value, count)
}

/// Reads a fraction after a point: up to 6 digits, rounded half up by the
/// seventh (MySQL 8 rounds); the rest of the digits are skipped.
fn read_fraction(text: &[u8], position: &mut usize) -> (u32, u8, bool) {
    let mut microsecond: u32 = 0;
    let mut digits = 0u8;
    let mut round_up = false;
    let mut extra = 0;
    while *position < text.len() && text[*position].is_ascii_digit() {
        let digit = u32::from(text[*position] - b'0');
        if digits < FSP_MAX {
            microsecond = microsecond * 10 + digit;
            digits += 1;
        } else {
            if extra == 0 {
                round_up = digit >= 5;
            }
            extra += 1;
        }
        *position += 1;
    }
    for _ in digits..FSP_MAX {
        microsecond *= 10;
    }
    (microsecond, digits, round_up)
}

fn rest_is_space(text: &[u8], position: usize) -> bool {
    text[position.min(text.len())..]
        .iter()
        .all(|&byte| is_space(byte))
}

/// Parses a DATE or DATETIME as MySQL's `str_to_datetime` does: delimited
/// fields (`2024-01-02`, `2024/1/2 3:04:05.5`, `24-01-02`, a `T` between the
/// date and the time) or digits alone (`20240102`, `240102`,
/// `20240102030405`). Two-digit years 70..=99 are 19xx, others 20xx. The
/// zero date and dates with zero parts are accepted (the caller applies the
/// SQL mode); impossible dates (month 13, February 30) are `None`.
pub fn parse_datetime(text: &[u8]) -> Option<ParsedDatetime> {
    let mut position = 0;
    while position < text.len() && is_space(text[position]) {
        position += 1;
    }
    let start = position;
    let digit_run = text[start..]
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if digit_run == 0 {
        return None;
    }
    let after_run = text.get(start + digit_run).copied();
    let delimited = matches!(after_run, Some(byte) if byte != b'.' && !is_space(byte))
        || (digit_run <= 4 && after_run.is_some_and(|byte| byte != b'.'));
    let mut fields = [0u32; 6];
    let mut field_count;
    let mut has_time;
    if !delimited && digit_run >= 5 {
        // Digits alone: the year takes four digits for 8 and 14 digits, else two.
        let year_length = if digit_run == 8 || digit_run >= 14 {
            4
        } else {
            2
        };
        let (year, _) = read_digits(text, &mut position, year_length);
        fields[0] = if year_length == 2 {
            two_digit_year(year)
        } else {
            year
        };
        field_count = 1;
        while field_count < 6 && position < start + digit_run {
            let (value, count) = read_digits(text, &mut position, 2);
            if count == 0 {
                break;
            }
            fields[field_count] = value;
            field_count += 1;
        }
        if position < start + digit_run {
            return None;
        }
        if field_count < 3 {
            return None;
        }
        has_time = field_count > 3;
    } else {
        let (year, year_digits) = read_digits(text, &mut position, usize::MAX);
        fields[0] = if year_digits <= 2 {
            two_digit_year(year)
        } else {
            year
        };
        field_count = 1;
        has_time = false;
        while field_count < 6 && position < text.len() {
            let byte = text[position];
            let before_delimiter = position;
            if field_count == 3 {
                // Between the date and the time: spaces or one 'T'.
                if byte == b'T' {
                    position += 1;
                } else if is_space(byte) {
                    while position < text.len() && is_space(text[position]) {
                        position += 1;
                    }
                } else {
                    break;
                }
            } else if byte.is_ascii_punctuation() && byte != b'.' {
                position += 1;
                // MySQL allows several delimiters in a row in the date part.
                while field_count < 3
                    && position < text.len()
                    && text[position].is_ascii_punctuation()
                {
                    position += 1;
                }
            } else if byte == b'.' && field_count < 3 {
                position += 1;
            } else {
                break;
            }
            let (value, count) = read_digits(text, &mut position, usize::MAX);
            if count == 0 {
                if field_count < 3 {
                    return None;
                }
                // A time that does not start with a digit is trailing text.
                position = before_delimiter;
                break;
            }
            fields[field_count] = value;
            field_count += 1;
            has_time = field_count > 3;
        }
        if field_count < 3 {
            return None;
        }
    }
    let mut microsecond = 0;
    let mut fraction_digits = 0;
    let mut round_up = false;
    if field_count >= 4 && position < text.len() && text[position] == b'.' {
        position += 1;
        (microsecond, fraction_digits, round_up) = read_fraction(text, &mut position);
    }
    let conversion = if rest_is_space(text, position) {
        Conversion::Exact
    } else {
        Conversion::Truncated
    };
    let [year, month, day, hour, minute, second] = fields;
    if year > 9999 || month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if month != 0 && day > days_in_month(year, month) && !(month == 2 && day == 29 && year == 0) {
        return None;
    }
    let date = Date::new(year as u16, month as u8, day as u8);
    let mut value = Datetime::new(date, hour as u8, minute as u8, second as u8, microsecond);
    if round_up {
        value = Datetime {
            microsecond: value.microsecond + 1,
            ..value
        }
        .round_to_fsp(FSP_MAX)?;
    }
    Some(ParsedDatetime {
        value,
        has_time,
        fraction_digits,
        conversion,
    })
}

/// Parses a TIME as MySQL's `str_to_time` does: `[-][D ]hh:mm[:ss][.f]`,
/// digits alone (`hhmmss`, `mmss`, `ss`), or a datetime (its time of day).
/// Minutes or seconds above 59 are `None`; hours beyond 838 clamp to
/// 838:59:59 with `OutOfRange`.
pub fn parse_time(text: &[u8]) -> Option<(Time, Conversion)> {
    let mut position = 0;
    while position < text.len() && is_space(text[position]) {
        position += 1;
    }
    let negative = text.get(position) == Some(&b'-');
    if negative {
        position += 1;
    }
    let start = position;
    let digit_run = text[start..]
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if digit_run == 0 {
        return None;
    }
    // A datetime ("2024-01-02 10:00:00", or 12+ digits) gives its time of day.
    let after_run = text.get(start + digit_run).copied();
    if !negative
        && (matches!(after_run, Some(b'-' | b'/')) && digit_run >= 2
            || (digit_run >= 12 && !matches!(after_run, Some(b':'))))
    {
        let parsed = parse_datetime(text)?;
        return Some((parsed.value.time_of_day(), parsed.conversion));
    }
    let mut days: u64 = 0;
    let (hours, minutes, seconds);
    if after_run.is_some_and(is_space)
        && text[start + digit_run..]
            .iter()
            .skip_while(|&&byte| is_space(byte))
            .take_while(|byte| byte.is_ascii_digit())
            .count()
            > 0
    {
        // "D hh:mm:ss": days first.
        let (value, _) = read_digits(text, &mut position, usize::MAX);
        days = u64::from(value);
        while position < text.len() && is_space(text[position]) {
            position += 1;
        }
    }
    let run_start = position;
    let run = text[run_start..]
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if text.get(run_start + run) == Some(&b':') {
        let (first, _) = read_digits(text, &mut position, usize::MAX);
        position += 1;
        let (second_field, count) = read_digits(text, &mut position, usize::MAX);
        if count == 0 {
            return None;
        }
        let mut third = 0;
        if text.get(position) == Some(&b':') {
            position += 1;
            let (value, count) = read_digits(text, &mut position, usize::MAX);
            if count == 0 {
                return None;
            }
            third = value;
        }
        hours = u64::from(first);
        minutes = second_field;
        seconds = third;
    } else {
        // Digits alone, read from the right: ss, mmss, hhmmss, hhhmmss.
        let (value, _) = read_digits(text, &mut position, usize::MAX);
        let value = u64::from(value);
        hours = value / 10_000;
        minutes = (value / 100 % 100) as u32;
        seconds = (value % 100) as u32;
    }
    let mut microsecond = 0;
    let mut round_up = false;
    if text.get(position) == Some(&b'.') {
        position += 1;
        (microsecond, _, round_up) = read_fraction(text, &mut position);
    }
    let conversion = if rest_is_space(text, position) {
        Conversion::Exact
    } else {
        Conversion::Truncated
    };
    if minutes > 59 || seconds > 59 {
        return None;
    }
    let total_hours = days.saturating_mul(24).saturating_add(hours);
    let magnitude =
        (total_hours.min(1_000_000) as i64 * 3600 + i64::from(minutes) * 60 + i64::from(seconds))
            * MICROSECONDS_PER_SECOND
            + i64::from(microsecond)
            + i64::from(round_up);
    let (time, clamped) = Time::from_microseconds(if negative { -magnitude } else { magnitude });
    let conversion = if clamped == Conversion::OutOfRange {
        Conversion::OutOfRange
    } else {
        conversion
    };
    Some((time, conversion))
}

/// MySQL's `number_to_datetime`: `YYYYMMDD`, `YYMMDD`, `YYYYMMDDhhmmss`,
/// `YYMMDDhhmmss`; 0 is the zero datetime. `None` for numbers that are no date.
pub fn datetime_from_number(number: i64) -> Option<ParsedDatetime> {
    if number == 0 {
        return Some(ParsedDatetime {
            value: Datetime::ZERO,
            has_time: false,
            fraction_digits: 0,
            conversion: Conversion::Exact,
        });
    }
    let (full, has_time) = match number {
        101..=691_231 => (number + 20_000_000, false),
        700_101..=991_231 => (number + 19_000_000, false),
        10_000_101..=99_991_231 => (number, false),
        101_000_000..=691_231_235_959 => (number + 20_000_000_000_000, true),
        700_101_000_000..=991_231_235_959 => (number + 19_000_000_000_000, true),
        10_000_101_000_000..=99_991_231_235_959 => (number, true),
        _ => return None,
    };
    let (date_part, time_part) = if has_time {
        (full / 1_000_000, full % 1_000_000)
    } else {
        (full, 0)
    };
    let year = (date_part / 10_000) as u32;
    let month = (date_part / 100 % 100) as u32;
    let day = (date_part % 100) as u32;
    let hour = (time_part / 10_000) as u32;
    let minute = (time_part / 100 % 100) as u32;
    let second = (time_part % 100) as u32;
    if month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if month != 0 && day > days_in_month(year, month) {
        return None;
    }
    Some(ParsedDatetime {
        value: Datetime::new(
            Date::new(year as u16, month as u8, day as u8),
            hour as u8,
            minute as u8,
            second as u8,
            0,
        ),
        has_time,
        fraction_digits: 0,
        conversion: Conversion::Exact,
    })
}

/// MySQL's `number_to_time`: `[-]hhmmss` (hours may exceed 99); a number of
/// 12 or more digits is a datetime whose time of day is taken.
pub fn time_from_number(number: i64, microsecond: u32) -> Option<(Time, Conversion)> {
    let magnitude = number.unsigned_abs();
    if magnitude >= 10_000_000_000 {
        let parsed = datetime_from_number(number)?;
        let time = Time {
            microsecond,
            ..parsed.value.time_of_day()
        };
        return Some((time, Conversion::Exact));
    }
    let hours = magnitude / 10_000;
    let minutes = magnitude / 100 % 100;
    let seconds = magnitude % 100;
    if minutes > 59 || seconds > 59 {
        return None;
    }
    let total = ((hours * 3600 + minutes * 60 + seconds) as i64) * MICROSECONDS_PER_SECOND
        + i64::from(microsecond.min(999_999));
    Some(Time::from_microseconds(if number < 0 {
        -total
    } else {
        total
    }))
}

// ---------------------------------------------------------------------------
// Intervals

/// An `INTERVAL` unit (MySQL's `interval_type`), simple or compound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntervalUnit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    YearMonth,
    DayHour,
    DayMinute,
    DaySecond,
    HourMinute,
    HourSecond,
    MinuteSecond,
    DayMicrosecond,
    HourMicrosecond,
    MinuteMicrosecond,
    SecondMicrosecond,
}

impl IntervalUnit {
    /// The unit named `name` (case-insensitive, MySQL's spelling).
    pub fn from_name(name: &str) -> Option<IntervalUnit> {
        use IntervalUnit::*;
        let all = [
            ("MICROSECOND", Microsecond),
            ("SECOND", Second),
            ("MINUTE", Minute),
            ("HOUR", Hour),
            ("DAY", Day),
            ("WEEK", Week),
            ("MONTH", Month),
            ("QUARTER", Quarter),
            ("YEAR", Year),
            ("YEAR_MONTH", YearMonth),
            ("DAY_HOUR", DayHour),
            ("DAY_MINUTE", DayMinute),
            ("DAY_SECOND", DaySecond),
            ("HOUR_MINUTE", HourMinute),
            ("HOUR_SECOND", HourSecond),
            ("MINUTE_SECOND", MinuteSecond),
            ("DAY_MICROSECOND", DayMicrosecond),
            ("HOUR_MICROSECOND", HourMicrosecond),
            ("MINUTE_MICROSECOND", MinuteMicrosecond),
            ("SECOND_MICROSECOND", SecondMicrosecond),
        ];
        all.iter()
            .find(|(unit_name, _)| unit_name.eq_ignore_ascii_case(name))
            .map(|&(_, unit)| unit)
    }

    /// Whether adding the unit can change the time of day (a DATE then becomes a DATETIME).
    pub fn has_time_part(self) -> bool {
        !matches!(
            self,
            IntervalUnit::Day
                | IntervalUnit::Week
                | IntervalUnit::Month
                | IntervalUnit::Quarter
                | IntervalUnit::Year
                | IntervalUnit::YearMonth
        )
    }

    /// Whether the unit counts months (added with `add_months`).
    pub fn is_month_based(self) -> bool {
        matches!(
            self,
            IntervalUnit::Month
                | IntervalUnit::Quarter
                | IntervalUnit::Year
                | IntervalUnit::YearMonth
        )
    }

    /// The fields a compound unit's text holds, from the largest: their
    /// sizes in the unit below (`None` for months and years).
    fn compound_fields(self) -> &'static [CompoundField] {
        use CompoundField::*;
        match self {
            IntervalUnit::YearMonth => &[Years, Months],
            IntervalUnit::DayHour => &[Days, Hours],
            IntervalUnit::DayMinute => &[Days, Hours, Minutes],
            IntervalUnit::DaySecond => &[Days, Hours, Minutes, Seconds],
            IntervalUnit::HourMinute => &[Hours, Minutes],
            IntervalUnit::HourSecond => &[Hours, Minutes, Seconds],
            IntervalUnit::MinuteSecond => &[Minutes, Seconds],
            IntervalUnit::DayMicrosecond => &[Days, Hours, Minutes, Seconds, Microseconds],
            IntervalUnit::HourMicrosecond => &[Hours, Minutes, Seconds, Microseconds],
            IntervalUnit::MinuteMicrosecond => &[Minutes, Seconds, Microseconds],
            IntervalUnit::SecondMicrosecond => &[Seconds, Microseconds],
            _ => &[],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CompoundField {
    Years,
    Months,
    Days,
    Hours,
    Minutes,
    Seconds,
    Microseconds,
}

/// An interval ready to add: months and microseconds, both signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Interval {
    pub months: i64,
    pub microseconds: i128,
}

impl Interval {
    /// The interval the other way (DATE_SUB).
    pub fn negated(self) -> Interval {
        Interval {
            months: -self.months,
            microseconds: -self.microseconds,
        }
    }

    /// An interval of `count` simple units (`count` already rounded to an
    /// integer, except for SECOND, which takes `microseconds` of fraction).
    pub fn simple(unit: IntervalUnit, count: i64, fraction_microseconds: i64) -> Option<Interval> {
        let count128 = i128::from(count);
        let micro = |per_unit: i128| -> Option<Interval> {
            Some(Interval {
                months: 0,
                microseconds: count128.checked_mul(per_unit)?,
            })
        };
        let second = i128::from(MICROSECONDS_PER_SECOND);
        match unit {
            IntervalUnit::Microsecond => micro(1),
            IntervalUnit::Second => Some(Interval {
                months: 0,
                microseconds: count128.checked_mul(second)? + i128::from(fraction_microseconds),
            }),
            IntervalUnit::Minute => micro(60 * second),
            IntervalUnit::Hour => micro(3600 * second),
            IntervalUnit::Day => micro(86_400 * second),
            IntervalUnit::Week => micro(7 * 86_400 * second),
            IntervalUnit::Month => Some(Interval {
                months: count,
                microseconds: 0,
            }),
            IntervalUnit::Quarter => Some(Interval {
                months: count.checked_mul(3)?,
                microseconds: 0,
            }),
            IntervalUnit::Year => Some(Interval {
                months: count.checked_mul(12)?,
                microseconds: 0,
            }),
            _ => None,
        }
    }

    /// Parses a compound unit's text (`'1:30'` HOUR_MINUTE, `'1-2'`
    /// YEAR_MONTH, `'2 3:04:05.5'` DAY_MICROSECOND): numbers separated by any
    /// non-digits, the last fields given when fewer are written, as MySQL
    /// reads them; a leading '-' negates the whole interval.
    pub fn parse_compound(unit: IntervalUnit, text: &[u8]) -> Option<Interval> {
        let fields = unit.compound_fields();
        if fields.is_empty() {
            return None;
        }
        let mut position = 0;
        while position < text.len() && is_space(text[position]) {
            position += 1;
        }
        let negative = text.get(position) == Some(&b'-');
        if negative {
            position += 1;
        }
        let mut values = [0i64; 5];
        let mut count = 0;
        let mut microsecond_digits = 0;
        while count < fields.len() {
            while position < text.len() && !text[position].is_ascii_digit() {
                position += 1;
            }
            if position >= text.len() {
                break;
            }
            let before = position;
            let (value, _) = read_digits(text, &mut position, usize::MAX);
            values[count] = i64::from(value);
            microsecond_digits = position - before;
            count += 1;
        }
        if count == 0 {
            return None;
        }
        // Fewer values than fields: they are the last fields (MySQL right-aligns them).
        let shift = fields.len() - count;
        let mut interval = Interval::default();
        for (index, value) in values[..count].iter().enumerate() {
            let value = i128::from(*value);
            let second = i128::from(MICROSECONDS_PER_SECOND);
            match fields[index + shift] {
                CompoundField::Years => interval.months += (value * 12) as i64,
                CompoundField::Months => interval.months += value as i64,
                CompoundField::Days => interval.microseconds += value * 86_400 * second,
                CompoundField::Hours => interval.microseconds += value * 3600 * second,
                CompoundField::Minutes => interval.microseconds += value * 60 * second,
                CompoundField::Seconds => interval.microseconds += value * second,
                CompoundField::Microseconds => {
                    // The digits are a fraction of a second: '.5' is 500000.
                    let mut micro = value;
                    for _ in microsecond_digits..6 {
                        micro *= 10;
                    }
                    interval.microseconds += micro;
                }
            }
        }
        Some(if negative {
            interval.negated()
        } else {
            interval
        })
    }
}

/// Adds an interval to a datetime (months first, as MySQL's `date_add_interval`).
pub fn add_interval(datetime: &Datetime, interval: Interval) -> Option<Datetime> {
    let moved = if interval.months != 0 {
        datetime.add_months(interval.months)?
    } else {
        *datetime
    };
    if interval.microseconds == 0 {
        return Some(moved);
    }
    moved.add_microseconds(interval.microseconds)
}

/// `TIMESTAMPDIFF(unit, from, to)`: whole units from `from` to `to`
/// (months compare the day and time too, as MySQL does).
pub fn timestamp_difference(unit: IntervalUnit, from: &Datetime, to: &Datetime) -> Option<i64> {
    let second = i128::from(MICROSECONDS_PER_SECOND);
    let difference = to.total_microseconds() - from.total_microseconds();
    let per = |units: i128| Some((difference / units) as i64);
    match unit {
        IntervalUnit::Microsecond => per(1),
        IntervalUnit::Second => per(second),
        IntervalUnit::Minute => per(60 * second),
        IntervalUnit::Hour => per(3600 * second),
        IntervalUnit::Day => per(86_400 * second),
        IntervalUnit::Week => per(7 * 86_400 * second),
        IntervalUnit::Month | IntervalUnit::Quarter | IntervalUnit::Year => {
            let (earlier, later, sign) = if difference >= 0 {
                (from, to, 1)
            } else {
                (to, from, -1)
            };
            let mut months = (i64::from(later.date.year) - i64::from(earlier.date.year)) * 12
                + i64::from(later.date.month)
                - i64::from(earlier.date.month);
            let later_rest = (later.date.day, later.microseconds_of_day());
            let earlier_rest = (earlier.date.day, earlier.microseconds_of_day());
            if later_rest < earlier_rest {
                months -= 1;
            }
            let months = months * sign;
            Some(match unit {
                IntervalUnit::Month => months,
                IntervalUnit::Quarter => months / 3,
                _ => months / 12,
            })
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// DATE_FORMAT and STR_TO_DATE

/// The value `DATE_FORMAT` formats: a date and a time of day, or a TIME
/// (whose hours may exceed 23).
#[derive(Debug, Clone, Copy)]
pub struct FormatValue {
    pub datetime: Datetime,
    /// The hours for `%H`/`%k` when formatting a TIME (which may exceed 23).
    pub hours: u32,
    pub negative: bool,
}

impl FormatValue {
    /// A date and time of day to format.
    pub fn from_datetime(datetime: Datetime) -> FormatValue {
        FormatValue {
            datetime,
            hours: u32::from(datetime.hour),
            negative: false,
        }
    }

    /// A TIME to format (hours beyond 23 kept for %H and %k).
    pub fn from_time(time: Time) -> FormatValue {
        FormatValue {
            datetime: Datetime::new(
                Date::ZERO,
                (time.hours % 24) as u8,
                time.minutes,
                time.seconds,
                time.microsecond,
            ),
            hours: u32::from(time.hours),
            negative: time.negative,
        }
    }
}

/// MySQL's `DATE_FORMAT`: appends the formatted value. Returns false when a
/// date specifier meets a value without a date (MySQL's NULL for TIME_FORMAT
/// with date parts is not distinguished here; the caller decides).
pub fn date_format(value: &FormatValue, format: &[u8], out: &mut Vec<u8>) {
    let datetime = &value.datetime;
    let date = datetime.date;
    let mut position = 0;
    while position < format.len() {
        let byte = format[position];
        position += 1;
        if byte != b'%' || position >= format.len() {
            out.push(byte);
            continue;
        }
        let specifier = format[position];
        position += 1;
        let hour12 = match value.hours % 12 {
            0 => 12,
            hour => hour,
        };
        let pm = value.hours % 24 >= 12;
        match specifier {
            b'a' => {
                if date.is_calendar_date() {
                    let name = day_name(date.weekday()).unwrap_or("");
                    out.extend_from_slice(&name.as_bytes()[..3]);
                }
            }
            b'b' => {
                if let Some(name) = month_name(date.month) {
                    out.extend_from_slice(&name.as_bytes()[..3]);
                }
            }
            b'c' => push_digits(out, u32::from(date.month), 1),
            b'D' => {
                push_digits(out, u32::from(date.day), 1);
                let suffix: &[u8] = match (date.day % 100, date.day % 10) {
                    (11..=13, _) => b"th",
                    (_, 1) => b"st",
                    (_, 2) => b"nd",
                    (_, 3) => b"rd",
                    _ => b"th",
                };
                out.extend_from_slice(suffix);
            }
            b'd' => push_digits(out, u32::from(date.day), 2),
            b'e' => push_digits(out, u32::from(date.day), 1),
            b'f' => push_digits(out, datetime.microsecond, 6),
            b'H' => push_digits(out, value.hours, 2),
            b'h' | b'I' => push_digits(out, hour12, 2),
            b'i' => push_digits(out, u32::from(datetime.minute), 2),
            b'j' => {
                if date.is_calendar_date() {
                    push_digits(out, date.day_of_year() as u32, 3);
                }
            }
            b'k' => push_digits(out, value.hours, 1),
            b'l' => push_digits(out, hour12, 1),
            b'M' => {
                if let Some(name) = month_name(date.month) {
                    out.extend_from_slice(name.as_bytes());
                }
            }
            b'm' => push_digits(out, u32::from(date.month), 2),
            b'p' => out.extend_from_slice(if pm { b"PM" } else { b"AM" }),
            b'r' => {
                push_digits(out, hour12, 2);
                out.push(b':');
                push_digits(out, u32::from(datetime.minute), 2);
                out.push(b':');
                push_digits(out, u32::from(datetime.second), 2);
                out.extend_from_slice(if pm { b" PM" } else { b" AM" });
            }
            b'S' | b's' => push_digits(out, u32::from(datetime.second), 2),
            b'T' => {
                push_digits(out, value.hours, 2);
                out.push(b':');
                push_digits(out, u32::from(datetime.minute), 2);
                out.push(b':');
                push_digits(out, u32::from(datetime.second), 2);
            }
            b'U' | b'u' | b'V' | b'v' => {
                let behaviour = match specifier {
                    b'U' => WEEK_FIRST_WEEKDAY,
                    b'u' => WEEK_MONDAY_FIRST,
                    b'V' => WEEK_YEAR | WEEK_FIRST_WEEKDAY,
                    _ => WEEK_MONDAY_FIRST | WEEK_YEAR,
                };
                if date.is_calendar_date() {
                    push_digits(out, date.week(behaviour).0, 2);
                }
            }
            b'W' => {
                if date.is_calendar_date() {
                    out.extend_from_slice(day_name(date.weekday()).unwrap_or("").as_bytes());
                }
            }
            b'w' => {
                if date.is_calendar_date() {
                    push_digits(
                        out,
                        u32::from(weekday_of_day_number(date.day_number(), true)),
                        1,
                    );
                }
            }
            b'X' | b'x' => {
                let behaviour = if specifier == b'X' {
                    WEEK_YEAR | WEEK_FIRST_WEEKDAY
                } else {
                    WEEK_MONDAY_FIRST | WEEK_YEAR
                };
                if date.is_calendar_date() {
                    push_digits(out, u32::from(date.week(behaviour).1), 4);
                }
            }
            b'Y' => push_digits(out, u32::from(date.year), 4),
            b'y' => push_digits(out, u32::from(date.year) % 100, 2),
            other => out.push(other),
        }
    }
}

/// What `STR_TO_DATE` found: the value and which parts the format named.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParsedByFormat {
    pub datetime: Datetime,
    pub has_date: bool,
    pub has_time: bool,
    /// Whether `%f` appeared (the result then has 6 fraction digits).
    pub has_fraction: bool,
}

/// Which parts a `STR_TO_DATE` format names: (date, time, fraction).
pub fn format_parts(format: &[u8]) -> (bool, bool, bool) {
    let (mut has_date, mut has_time, mut has_fraction) = (false, false, false);
    let mut position = 0;
    while position + 1 < format.len() {
        if format[position] == b'%' {
            match format[position + 1] {
                b'a' | b'b' | b'c' | b'D' | b'd' | b'e' | b'j' | b'M' | b'm' | b'U' | b'u'
                | b'V' | b'v' | b'W' | b'w' | b'X' | b'x' | b'Y' | b'y' => has_date = true,
                b'H' | b'h' | b'I' | b'i' | b'k' | b'l' | b'p' | b'r' | b'S' | b's' | b'T' => {
                    has_time = true
                }
                b'f' => {
                    has_time = true;
                    has_fraction = true;
                }
                _ => {}
            }
            position += 2;
        } else {
            position += 1;
        }
    }
    (has_date, has_time, has_fraction)
}

/// MySQL's `STR_TO_DATE` (the common specifiers; weeks are not supported).
/// `None` when the text does not match the format or makes no valid date.
pub fn str_to_date(text: &[u8], format: &[u8]) -> Option<ParsedByFormat> {
    let (has_date, has_time, has_fraction) = format_parts(format);
    let mut year: Option<u32> = None;
    let (mut month, mut day, mut hour, mut minute, mut second, mut microsecond) =
        (0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
    let mut day_of_year: Option<u32> = None;
    let mut pm: Option<bool> = None;
    let mut twelve_hour = false;
    let mut position = 0;
    let mut format_position = 0;
    let skip_spaces = |position: &mut usize| {
        while *position < text.len() && is_space(text[*position]) {
            *position += 1;
        }
    };
    while format_position < format.len() {
        let byte = format[format_position];
        if is_space(byte) {
            format_position += 1;
            skip_spaces(&mut position);
            continue;
        }
        if byte != b'%' || format_position + 1 >= format.len() {
            if text.get(position) != Some(&byte) {
                return None;
            }
            position += 1;
            format_position += 1;
            continue;
        }
        let specifier = format[format_position + 1];
        format_position += 2;
        skip_spaces(&mut position);
        let number = |position: &mut usize, limit: usize| -> Option<u32> {
            let (value, count) = read_digits(text, position, limit);
            (count > 0).then_some(value)
        };
        match specifier {
            b'Y' => {
                let before = position;
                let value = number(&mut position, 4)?;
                year = Some(if position - before <= 2 {
                    two_digit_year(value)
                } else {
                    value
                });
            }
            b'y' => year = Some(two_digit_year(number(&mut position, 2)?)),
            b'm' | b'c' => month = number(&mut position, 2)?,
            b'd' | b'e' => day = number(&mut position, 2)?,
            b'D' => {
                day = number(&mut position, 2)?;
                // The English suffix: two letters.
                let suffix = text.get(position..position + 2)?;
                if !suffix.iter().all(u8::is_ascii_alphabetic) {
                    return None;
                }
                position += 2;
            }
            b'H' | b'k' => hour = number(&mut position, 2)?,
            b'h' | b'I' | b'l' => {
                hour = number(&mut position, 2)?;
                twelve_hour = true;
            }
            b'i' => minute = number(&mut position, 2)?,
            b'S' | b's' => second = number(&mut position, 2)?,
            b'f' => {
                let (value, digits, _) = {
                    let mut local = position;
                    let result = read_fraction(text, &mut local);
                    position = local;
                    result
                };
                if digits == 0 {
                    return None;
                }
                microsecond = value;
            }
            b'j' => day_of_year = Some(number(&mut position, 3)?),
            b'p' => {
                let word = text.get(position..position + 2)?;
                pm = Some(if word.eq_ignore_ascii_case(b"PM") {
                    true
                } else if word.eq_ignore_ascii_case(b"AM") {
                    false
                } else {
                    return None;
                });
                position += 2;
            }
            b'M' | b'b' => {
                let rest = &text[position..];
                let found = MONTH_NAMES.iter().enumerate().find_map(|(index, name)| {
                    let name = name.as_bytes();
                    let length = if specifier == b'b' { 3 } else { name.len() };
                    let candidate = rest.get(..length)?;
                    candidate
                        .eq_ignore_ascii_case(&name[..length])
                        .then_some((index, length))
                });
                let (index, length) = found?;
                month = index as u32 + 1;
                position += length;
            }
            b'W' | b'a' => {
                let rest = &text[position..];
                let length = DAY_NAMES.iter().find_map(|name| {
                    let name = name.as_bytes();
                    let length = if specifier == b'a' { 3 } else { name.len() };
                    let candidate = rest.get(..length)?;
                    candidate
                        .eq_ignore_ascii_case(&name[..length])
                        .then_some(length)
                })?;
                position += length;
            }
            b'T' | b'r' => {
                hour = number(&mut position, 2)?;
                if text.get(position) != Some(&b':') {
                    return None;
                }
                position += 1;
                minute = number(&mut position, 2)?;
                if text.get(position) != Some(&b':') {
                    return None;
                }
                position += 1;
                second = number(&mut position, 2)?;
                if specifier == b'r' {
                    twelve_hour = true;
                    skip_spaces(&mut position);
                    let word = text.get(position..position + 2)?;
                    pm = Some(word.eq_ignore_ascii_case(b"PM"));
                    position += 2;
                }
            }
            b'%' => {
                if text.get(position) != Some(&b'%') {
                    return None;
                }
                position += 1;
            }
            _ => return None,
        }
    }
    if twelve_hour {
        if hour == 0 || hour > 12 {
            return None;
        }
        hour %= 12;
    }
    if pm == Some(true) {
        hour += 12;
    }
    let year = year.unwrap_or(0);
    if let Some(day_of_year) = day_of_year {
        let first = day_number(year, 1, 1);
        let date = Date::from_day_number(first + i64::from(day_of_year) - 1)?;
        month = u32::from(date.month);
        day = u32::from(date.day);
    }
    if year > 9999 || month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if month != 0 && day > days_in_month(year, month) {
        return None;
    }
    let datetime = Datetime::new(
        Date::new(year as u16, month as u8, day as u8),
        hour as u8,
        minute as u8,
        second as u8,
        microsecond,
    );
    Some(ParsedByFormat {
        datetime,
        has_date,
        has_time,
        has_fraction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(year: u16, month: u8, day: u8) -> Date {
        Date::new(year, month, day)
    }

    #[test]
    fn day_numbers_match_mysql_to_days() {
        // MySQL: SELECT TO_DAYS('2024-01-01') → 739251; TO_DAYS('1970-01-01') → 719528.
        assert_eq!(date(2024, 1, 1).day_number(), 739_251);
        assert_eq!(date(1970, 1, 1).day_number(), UNIX_EPOCH_DAY_NUMBER);
        assert_eq!(date(9999, 12, 31).day_number(), DAY_NUMBER_MAX);
        assert_eq!(Date::from_day_number(739_251), Some(date(2024, 1, 1)));
        for number in [366, 730_000, 738_000, 739_251, 739_311, DAY_NUMBER_MAX] {
            let found = Date::from_day_number(number).unwrap();
            assert_eq!(found.day_number(), number, "{found:?}");
        }
        assert_eq!(Date::from_day_number(365), None);
    }

    #[test]
    fn weekdays_and_weeks() {
        // 2024-01-01 was a Monday: WEEKDAY → 0, DAYOFWEEK → 2.
        assert_eq!(date(2024, 1, 1).weekday(), 0);
        // MySQL: WEEK('2024-01-01', 0) → 0, WEEK('2024-01-07', 0) → 1, WEEK('2024-01-01', 3) → 1.
        assert_eq!(date(2024, 1, 1).week(week_mode(0)).0, 0);
        assert_eq!(date(2024, 1, 7).week(week_mode(0)).0, 1);
        assert_eq!(date(2024, 1, 1).week(week_mode(3)).0, 1);
        // ISO week of 2021-01-01 is week 53 of 2020.
        assert_eq!(date(2021, 1, 1).week(week_mode(3)), (53, 2020));
    }

    #[test]
    fn parses_datetimes_like_mysql() {
        let parse = |text: &str| parse_datetime(text.as_bytes()).map(|parsed| parsed.value);
        let expected = Datetime::new(date(2024, 1, 2), 3, 4, 5, 123_000);
        assert_eq!(parse("2024-01-02 03:04:05.123"), Some(expected));
        assert_eq!(parse("2024-01-02T03:04:05.123"), Some(expected));
        assert_eq!(parse("20240102030405.123"), Some(expected));
        assert_eq!(
            parse("2024-1-2"),
            Some(Datetime::from_date(date(2024, 1, 2)))
        );
        assert_eq!(
            parse("24-01-02"),
            Some(Datetime::from_date(date(2024, 1, 2)))
        );
        assert_eq!(
            parse("99/01/02"),
            Some(Datetime::from_date(date(1999, 1, 2)))
        );
        assert_eq!(
            parse("20240102"),
            Some(Datetime::from_date(date(2024, 1, 2)))
        );
        assert_eq!(parse("240102"), Some(Datetime::from_date(date(2024, 1, 2))));
        assert_eq!(parse("0000-00-00"), Some(Datetime::ZERO));
        assert_eq!(parse("2024-13-01"), None);
        assert_eq!(parse("2023-02-29"), None);
        assert_eq!(
            parse("2024-02-29").map(|value| value.date),
            Some(date(2024, 2, 29))
        );
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("2024-01"), None);
        let trailing = parse_datetime(b"2024-01-02 junk").unwrap();
        assert_eq!(trailing.conversion, Conversion::Truncated);
        assert!(!trailing.has_time);
        // Seven fraction digits round (MySQL 8 rounds by default).
        assert_eq!(
            parse("2024-01-02 23:59:59.9999995"),
            Some(Datetime::from_date(date(2024, 1, 3)))
        );
    }

    #[test]
    fn parses_times_like_mysql() {
        let parse = |text: &str| parse_time(text.as_bytes());
        let time = |negative, hours, minutes, seconds, microsecond| Time {
            negative,
            hours,
            minutes,
            seconds,
            microsecond,
        };
        assert_eq!(
            parse("10:11:12"),
            Some((time(false, 10, 11, 12, 0), Conversion::Exact))
        );
        assert_eq!(parse("-838:59:59").unwrap().0, time(true, 838, 59, 59, 0));
        assert_eq!(
            parse("839:00:00").unwrap(),
            (time(false, 838, 59, 59, 0), Conversion::OutOfRange)
        );
        assert_eq!(parse("101112").unwrap().0, time(false, 10, 11, 12, 0));
        assert_eq!(parse("1112").unwrap().0, time(false, 0, 11, 12, 0));
        assert_eq!(parse("11:12").unwrap().0, time(false, 11, 12, 0, 0));
        assert_eq!(parse("1 10:00:00").unwrap().0, time(false, 34, 0, 0, 0));
        assert_eq!(
            parse("10:11:12.5").unwrap().0,
            time(false, 10, 11, 12, 500_000)
        );
        assert_eq!(
            parse("2024-01-02 10:11:12").unwrap().0,
            time(false, 10, 11, 12, 0)
        );
        assert_eq!(parse("10:61:00"), None);
        assert_eq!(parse("x"), None);
    }

    #[test]
    fn numbers_to_datetimes() {
        let parse = |number| datetime_from_number(number).map(|parsed| parsed.value);
        assert_eq!(parse(20240102), Some(Datetime::from_date(date(2024, 1, 2))));
        assert_eq!(parse(240102), Some(Datetime::from_date(date(2024, 1, 2))));
        assert_eq!(
            parse(20240102030405),
            Some(Datetime::new(date(2024, 1, 2), 3, 4, 5, 0))
        );
        assert_eq!(parse(99), None);
        assert_eq!(parse(20241302), None);
        assert_eq!(time_from_number(101112, 0).unwrap().0.to_number(), 101112);
        assert_eq!(time_from_number(-1112, 0).unwrap().0.to_number(), -1112);
    }

    #[test]
    fn intervals() {
        let start = Datetime::from_date(date(2024, 1, 31));
        let plus_month = add_interval(&start, Interval::simple(IntervalUnit::Month, 1, 0).unwrap());
        // MySQL: DATE_ADD('2024-01-31', INTERVAL 1 MONTH) → 2024-02-29.
        assert_eq!(plus_month.unwrap().date, date(2024, 2, 29));
        let hour_minute = Interval::parse_compound(IntervalUnit::HourMinute, b"1:30").unwrap();
        assert_eq!(hour_minute.microseconds, 90 * 60 * 1_000_000);
        let year_month = Interval::parse_compound(IntervalUnit::YearMonth, b"-1-2").unwrap();
        assert_eq!(year_month.months, -14);
        let second_micro =
            Interval::parse_compound(IntervalUnit::SecondMicrosecond, b"1.5").unwrap();
        assert_eq!(second_micro.microseconds, 1_500_000);
        assert_eq!(
            add_interval(
                &Datetime::from_date(date(9999, 12, 31)),
                Interval::simple(IntervalUnit::Day, 1, 0).unwrap()
            ),
            None
        );
        let from = Datetime::from_date(date(2024, 1, 31));
        let to = Datetime::from_date(date(2024, 2, 29));
        assert_eq!(
            timestamp_difference(IntervalUnit::Month, &from, &to),
            Some(0)
        );
        assert_eq!(
            timestamp_difference(IntervalUnit::Day, &from, &to),
            Some(29)
        );
    }

    #[test]
    fn formats_dates() {
        let value = FormatValue::from_datetime(Datetime::new(date(2024, 1, 2), 15, 4, 5, 120));
        let mut out = Vec::new();
        date_format(&value, b"%Y-%m-%d %H:%i:%s %W %M %D %j %p %f %%", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "2024-01-02 15:04:05 Tuesday January 2nd 002 PM 000120 %"
        );
        let parsed = str_to_date(b"01,5,2013", b"%d,%m,%Y").unwrap();
        assert_eq!(parsed.datetime.date, date(2013, 5, 1));
        assert!(parsed.has_date && !parsed.has_time);
        let parsed = str_to_date(b"May 1, 2013 10:30 PM", b"%M %d, %Y %h:%i %p").unwrap();
        assert_eq!(parsed.datetime.hour, 22);
        assert_eq!(str_to_date(b"2013-13-01", b"%Y-%m-%d"), None);
    }
}
