//! How one value is written in config.ini: plain integers, sizes with an
//! optional K/M/G suffix, booleans and text; and how sizes are written back
//! in messages and generated files.
//!
//! These functions know nothing of parameters or lines: they say what is
//! wrong with the text, and the parser adds file, line and key.

/// Bytes in a kibibyte, the `K` suffix. NDB's suffixes are powers of 1024.
pub const KIB: u64 = 1024;
/// Bytes in a mebibyte, the `M` suffix.
pub const MIB: u64 = 1024 * KIB;
/// Bytes in a gibibyte, the `G` suffix.
pub const GIB: u64 = 1024 * MIB;
/// Bytes in a tebibyte. There is no `T` suffix (NDB has none); the constant
/// only states limits such as NDB's 16T for DataMemory.
pub const TIB: u64 = 1024 * GIB;

/// Why a value could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueError {
    /// Nothing after the `=`.
    Empty,
    /// Not made of decimal digits (signs, decimals and hex are refused).
    NotANumber,
    /// A size ends in a letter other than K, M or G.
    UnknownSuffix(char),
    /// The number does not fit in 64 bits.
    TooLarge,
    /// Not one of the boolean words.
    NotABoolean,
}

impl ValueError {
    /// The message for `written`, the value as it appeared in the file.
    pub fn describe(self, written: &str) -> String {
        match self {
            ValueError::Empty => "the value is empty".to_string(),
            ValueError::NotANumber => {
                format!("`{written}` is not a number (write a non-negative decimal integer)")
            }
            ValueError::UnknownSuffix(suffix) => {
                format!("`{written}` has an unknown size suffix `{suffix}` (use K, M or G)")
            }
            ValueError::TooLarge => format!("`{written}` is too large"),
            ValueError::NotABoolean => {
                format!("`{written}` is not a boolean (use true/false, yes/no, y/n or 1/0)")
            }
        }
    }
}

/// Reads a non-negative decimal integer with no suffix.
pub fn parse_integer(text: &str) -> Result<u64, ValueError> {
    if text.is_empty() {
        return Err(ValueError::Empty);
    }
    // Checking the digits first means the only way `parse` can fail is
    // overflow, and it keeps `+5`, which `u64::from_str` accepts, out.
    if !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(ValueError::NotANumber);
    }
    text.parse::<u64>().map_err(|_| ValueError::TooLarge)
}

/// Reads a size in bytes: an integer with an optional K, M or G suffix
/// (case-insensitive, powers of 1024), as NDB writes `DataMemory=80M`.
pub fn parse_size(text: &str) -> Result<u64, ValueError> {
    let Some(last) = text.chars().last() else {
        return Err(ValueError::Empty);
    };
    if !last.is_alphabetic() {
        return parse_integer(text);
    }
    let multiplier = match last.to_ascii_uppercase() {
        'K' => KIB,
        'M' => MIB,
        'G' => GIB,
        _ => return Err(ValueError::UnknownSuffix(last)),
    };
    let digits = text[..text.len() - last.len_utf8()].trim_end();
    let number = match parse_integer(digits) {
        Err(ValueError::Empty) => return Err(ValueError::NotANumber),
        other => other?,
    };
    number.checked_mul(multiplier).ok_or(ValueError::TooLarge)
}

/// Reads a boolean: true/false, yes/no, y/n or 1/0, in any case.
pub fn parse_boolean(text: &str) -> Result<bool, ValueError> {
    match text.to_ascii_lowercase().as_str() {
        "" => Err(ValueError::Empty),
        "true" | "yes" | "y" | "1" => Ok(true),
        "false" | "no" | "n" | "0" => Ok(false),
        _ => Err(ValueError::NotABoolean),
    }
}

/// Writes a size the way a person would: with the largest suffix that
/// divides it exactly (`98M`), else in bytes. `parse_size` reads it back.
pub fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0".to_string();
    }
    for (unit, suffix) in [(GIB, 'G'), (MIB, 'M'), (KIB, 'K')] {
        if bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_case_insensitive_binary_suffixes() {
        assert_eq!(parse_size("123"), Ok(123));
        assert_eq!(parse_size("64k"), Ok(64 * 1024));
        assert_eq!(parse_size("64K"), Ok(64 * 1024));
        assert_eq!(parse_size("98M"), Ok(98 * 1024 * 1024));
        assert_eq!(parse_size("2g"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("16 M"), Ok(16 * 1024 * 1024));
    }

    #[test]
    fn sizes_refuse_bad_suffixes_and_overflow() {
        assert_eq!(parse_size("10X"), Err(ValueError::UnknownSuffix('X')));
        assert_eq!(parse_size("10T"), Err(ValueError::UnknownSuffix('T')));
        assert_eq!(parse_size("M"), Err(ValueError::NotANumber));
        assert_eq!(parse_size("1.5G"), Err(ValueError::NotANumber));
        assert_eq!(parse_size("-1"), Err(ValueError::NotANumber));
        assert_eq!(parse_size(""), Err(ValueError::Empty));
        assert_eq!(parse_size("99999999999G"), Err(ValueError::TooLarge));
        assert_eq!(
            parse_size("99999999999999999999"),
            Err(ValueError::TooLarge)
        );
        assert_eq!(parse_size("1é"), Err(ValueError::UnknownSuffix('é')));
    }

    #[test]
    fn integers_have_no_suffix_or_sign() {
        assert_eq!(parse_integer("0"), Ok(0));
        assert_eq!(parse_integer("4096"), Ok(4096));
        assert_eq!(parse_integer("4K"), Err(ValueError::NotANumber));
        assert_eq!(parse_integer("+4"), Err(ValueError::NotANumber));
        assert_eq!(parse_integer(""), Err(ValueError::Empty));
    }

    #[test]
    fn booleans_accept_every_spelling_ndb_does() {
        for word in ["true", "TRUE", "yes", "Y", "1"] {
            assert_eq!(parse_boolean(word), Ok(true), "{word}");
        }
        for word in ["false", "No", "n", "0"] {
            assert_eq!(parse_boolean(word), Ok(false), "{word}");
        }
        assert_eq!(parse_boolean("maybe"), Err(ValueError::NotABoolean));
        assert_eq!(parse_boolean("2"), Err(ValueError::NotABoolean));
    }

    #[test]
    fn formatted_sizes_read_back() {
        for bytes in [0, 1, 1023, 1024, 1536, 98 * MIB, 16 * TIB, GIB + 1] {
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes), "{bytes}");
        }
        assert_eq!(format_size(98 * MIB), "98M");
        assert_eq!(format_size(16 * TIB), "16384G");
    }
}
