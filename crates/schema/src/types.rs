//! Column types and collations, and how many bytes each type takes in a row.
//!
//! Sizes follow MySQL's binary formats so that a value's stored bytes are the
//! same ones a MySQL user would recognise: integers little-endian (as NDB
//! stores them), DECIMAL in MySQL's packed binary format, the temporal types
//! in MySQL's `datetime2`/`timestamp2`/`time2` formats (big-endian), DATE in
//! three bytes. Strings of CHAR(n) take `n` × the character set's widest
//! character, padded with spaces; BINARY(n) is padded with zero bytes.

use crate::error::{Error, ErrorCode};

/// Longest CHAR/BINARY in characters or bytes (MySQL's limit).
pub const CHAR_LENGTH_MAX: u16 = 255;
/// Largest DECIMAL precision (MySQL's limit).
pub const DECIMAL_PRECISION_MAX: u8 = 65;
/// Largest DECIMAL scale (MySQL's limit).
pub const DECIMAL_SCALE_MAX: u8 = 30;
/// Most fractional-second digits of DATETIME, TIMESTAMP, TIME.
pub const FSP_MAX: u8 = 6;
/// Widest BIT column.
pub const BIT_WIDTH_MAX: u8 = 64;
/// Most ENUM members (MySQL's limit).
pub const ENUM_VARIANTS_MAX: usize = 65_535;

/// A collation: a character set and the rule that compares its strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collation {
    /// utf8mb4, compared by code point (`utf8mb4_bin`).
    Utf8mb4Bin,
    /// utf8mb4, accent- and case-insensitive, NO PAD (`utf8mb4_0900_ai_ci`, MySQL 8's default).
    Utf8mb4AiCi,
    /// latin1 (cp1252), compared by byte (`latin1_bin`).
    Latin1Bin,
    /// latin1, case-insensitive, PAD SPACE (`latin1_swedish_ci`, latin1's default).
    Latin1Ci,
    /// Bytes, no character set (BINARY, VARBINARY, BLOB).
    Binary,
}

impl Collation {
    /// The MySQL name of the collation.
    pub fn name(self) -> &'static str {
        match self {
            Collation::Utf8mb4Bin => "utf8mb4_bin",
            Collation::Utf8mb4AiCi => "utf8mb4_0900_ai_ci",
            Collation::Latin1Bin => "latin1_bin",
            Collation::Latin1Ci => "latin1_swedish_ci",
            Collation::Binary => "binary",
        }
    }

    /// The collation with this MySQL name.
    pub fn from_name(name: &str) -> Option<Collation> {
        let all = [
            Collation::Utf8mb4Bin,
            Collation::Utf8mb4AiCi,
            Collation::Latin1Bin,
            Collation::Latin1Ci,
            Collation::Binary,
        ];
        all.into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// MySQL's collation id (`INFORMATION_SCHEMA.COLLATIONS.ID`), which the
    /// table codec stores: these numbers never change in MySQL, and the
    /// client protocol names collations by them too.
    pub fn wire_id(self) -> u8 {
        match self {
            Collation::Utf8mb4Bin => 46,
            Collation::Utf8mb4AiCi => 255,
            Collation::Latin1Bin => 47,
            Collation::Latin1Ci => 8,
            Collation::Binary => 63,
        }
    }

    /// The collation with this MySQL collation id, if Shoal supports it.
    pub fn from_wire_id(id: u8) -> Option<Collation> {
        let all = [
            Collation::Utf8mb4Bin,
            Collation::Utf8mb4AiCi,
            Collation::Latin1Bin,
            Collation::Latin1Ci,
            Collation::Binary,
        ];
        all.into_iter().find(|c| c.wire_id() == id)
    }

    /// The MySQL name of the character set.
    pub fn charset_name(self) -> &'static str {
        match self {
            Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi => "utf8mb4",
            Collation::Latin1Bin | Collation::Latin1Ci => "latin1",
            Collation::Binary => "binary",
        }
    }

    /// Bytes in the widest character of the character set.
    pub fn bytes_per_char_max(self) -> u32 {
        match self {
            Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi => 4,
            Collation::Latin1Bin | Collation::Latin1Ci | Collation::Binary => 1,
        }
    }

    /// Whether trailing spaces are ignored when comparing (MySQL's PAD
    /// SPACE; `utf8mb4_bin` is PAD SPACE in MySQL 8.0 too).
    pub fn pad_space(self) -> bool {
        matches!(
            self,
            Collation::Latin1Bin | Collation::Latin1Ci | Collation::Utf8mb4Bin
        )
    }

    pub fn is_case_insensitive(self) -> bool {
        matches!(self, Collation::Utf8mb4AiCi | Collation::Latin1Ci)
    }
}

/// A column's SQL type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnType {
    TinyInt {
        unsigned: bool,
    },
    SmallInt {
        unsigned: bool,
    },
    MediumInt {
        unsigned: bool,
    },
    Int {
        unsigned: bool,
    },
    BigInt {
        unsigned: bool,
    },
    /// Exact decimal with `precision` digits, `scale` of them after the point.
    Decimal {
        precision: u8,
        scale: u8,
    },
    Float,
    Double,
    /// Fixed-length string of `length` characters.
    Char {
        length: u16,
        collation: Collation,
    },
    /// Variable-length string of at most `length` characters.
    Varchar {
        length: u16,
        collation: Collation,
    },
    /// Fixed-length byte string of `length` bytes.
    Binary {
        length: u16,
    },
    /// Variable-length byte string of at most `length` bytes.
    Varbinary {
        length: u16,
    },
    Date,
    Datetime {
        fsp: u8,
    },
    Timestamp {
        fsp: u8,
    },
    Time {
        fsp: u8,
    },
    Year,
    Bit {
        width: u8,
    },
    /// One of the listed members; stored as its 1-based index.
    Enum {
        variants: Vec<String>,
    },
    /// Bytes, stored inline (for now) up to the row size limit.
    Blob {
        length_max: u32,
    },
    /// Characters, stored inline (for now) up to the row size limit.
    Text {
        length_max: u32,
        collation: Collation,
    },
}

/// Where and how a column's value sits in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Always exactly this many bytes, in the fixed part.
    Fixed(u32),
    /// At most this many bytes, in the variable part behind a 2-byte length.
    Var(u32),
}

/// Bytes MySQL's packed decimal format uses for 0..=8 leftover digits.
const DECIMAL_DIGIT_BYTES: [u32; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// Bytes of MySQL's binary DECIMAL(precision, scale).
pub fn decimal_bytes(precision: u8, scale: u8) -> u32 {
    let integer = u32::from(precision - scale);
    let fraction = u32::from(scale);
    integer / 9 * 4
        + DECIMAL_DIGIT_BYTES[(integer % 9) as usize]
        + fraction / 9 * 4
        + DECIMAL_DIGIT_BYTES[(fraction % 9) as usize]
}

/// Bytes of the fractional-seconds tail of MySQL's temporal formats.
fn fsp_bytes(fsp: u8) -> u32 {
    u32::from(fsp).div_ceil(2)
}

impl ColumnType {
    /// How the column is stored: fixed bytes, or variable up to a maximum.
    pub fn storage(&self) -> Storage {
        use ColumnType::*;
        match self {
            TinyInt { .. } | Year => Storage::Fixed(1),
            SmallInt { .. } => Storage::Fixed(2),
            MediumInt { .. } | Date => Storage::Fixed(3),
            Int { .. } | Float => Storage::Fixed(4),
            BigInt { .. } | Double => Storage::Fixed(8),
            Decimal { precision, scale } => Storage::Fixed(decimal_bytes(*precision, *scale)),
            // CHAR is stored without its pad spaces, as MySQL returns it: a
            // CHAR(120) utf8mb4 column of sysbench text holds and sends 120
            // bytes instead of 480. The pad spaces carry no information,
            // because every comparison of CHAR ignores trailing spaces.
            Char { length, collation } | Varchar { length, collation } => {
                Storage::Var(u32::from(*length) * collation.bytes_per_char_max())
            }
            Binary { length } => Storage::Fixed(u32::from(*length)),
            Datetime { fsp } => Storage::Fixed(5 + fsp_bytes(*fsp)),
            Timestamp { fsp } => Storage::Fixed(4 + fsp_bytes(*fsp)),
            Time { fsp } => Storage::Fixed(3 + fsp_bytes(*fsp)),
            Bit { width } => Storage::Fixed(u32::from(*width).div_ceil(8)),
            Enum { variants } => Storage::Fixed(if variants.len() <= 255 { 1 } else { 2 }),
            Varbinary { length } => Storage::Var(u32::from(*length)),
            Blob { length_max } | Text { length_max, .. } => Storage::Var(*length_max),
        }
    }

    /// The collation values of this type compare under (`Binary` for non-strings).
    pub fn collation(&self) -> Collation {
        match self {
            ColumnType::Char { collation, .. }
            | ColumnType::Varchar { collation, .. }
            | ColumnType::Text { collation, .. } => *collation,
            _ => Collation::Binary,
        }
    }

    pub fn is_blob(&self) -> bool {
        matches!(self, ColumnType::Blob { .. } | ColumnType::Text { .. })
    }

    /// Checks the type's own parameters against MySQL's limits.
    pub fn validate(&self) -> Result<(), Error> {
        use ColumnType::*;
        let bad = |what: &'static str| Err(Error::new(ErrorCode::WrongColumnSpec, what));
        match self {
            Decimal { precision, scale } => {
                if *precision == 0 || *precision > DECIMAL_PRECISION_MAX {
                    return bad("DECIMAL precision must be 1..=65");
                }
                if *scale > DECIMAL_SCALE_MAX || scale > precision {
                    return bad("DECIMAL scale must be 0..=30 and at most the precision");
                }
            }
            Char { length, .. } if *length > CHAR_LENGTH_MAX => {
                return bad("CHAR length must be at most 255");
            }
            Binary { length } if *length > CHAR_LENGTH_MAX => {
                return bad("BINARY length must be at most 255");
            }
            Datetime { fsp } | Timestamp { fsp } | Time { fsp } if *fsp > FSP_MAX => {
                return bad("fractional seconds precision must be 0..=6");
            }
            Bit { width } if *width == 0 || *width > BIT_WIDTH_MAX => {
                return bad("BIT width must be 1..=64");
            }
            Enum { variants } if variants.is_empty() || variants.len() > ENUM_VARIANTS_MAX => {
                return bad("ENUM must have 1..=65535 members");
            }
            _ => {}
        }
        Ok(())
    }
}
