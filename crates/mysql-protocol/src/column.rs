//! Result-set metadata and the values of the binary protocol: the contract
//! between the SQL layer and the wire.

/// MySQL's `enum_field_types`: the type byte of a column definition and of
/// a prepared statement's parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FieldType {
    Decimal = 0,
    Tiny = 1,
    Short = 2,
    Long = 3,
    Float = 4,
    Double = 5,
    Null = 6,
    Timestamp = 7,
    LongLong = 8,
    Int24 = 9,
    Date = 10,
    Time = 11,
    DateTime = 12,
    Year = 13,
    VarChar = 15,
    Bit = 16,
    Json = 245,
    NewDecimal = 246,
    Enum = 247,
    Set = 248,
    TinyBlob = 249,
    MediumBlob = 250,
    LongBlob = 251,
    Blob = 252,
    VarString = 253,
    String = 254,
    Geometry = 255,
}

impl FieldType {
    /// The type with this wire byte, if MySQL defines one.
    pub fn from_byte(byte: u8) -> Option<FieldType> {
        use FieldType::*;
        Some(match byte {
            0 => Decimal,
            1 => Tiny,
            2 => Short,
            3 => Long,
            4 => Float,
            5 => Double,
            6 => Null,
            7 => Timestamp,
            8 => LongLong,
            9 => Int24,
            10 => Date,
            11 => Time,
            12 => DateTime,
            13 => Year,
            15 => VarChar,
            16 => Bit,
            245 => Json,
            246 => NewDecimal,
            247 => Enum,
            248 => Set,
            249 => TinyBlob,
            250 => MediumBlob,
            251 => LongBlob,
            252 => Blob,
            253 => VarString,
            254 => String,
            255 => Geometry,
            _ => return None,
        })
    }
}

/// Column flags of a column definition (`include/mysql_com.h`).
pub mod flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRIMARY_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const ZEROFILL: u16 = 64;
    pub const BINARY: u16 = 128;
    pub const ENUM: u16 = 256;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const TIMESTAMP: u16 = 1024;
    pub const SET: u16 = 2048;
    pub const NO_DEFAULT_VALUE: u16 = 4096;
    pub const ON_UPDATE_NOW: u16 = 8192;
    pub const NUM: u16 = 32768;
}

/// One column of a result set (`Protocol::ColumnDefinition41`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDefinition {
    /// The database, or empty for an expression.
    pub schema: String,
    /// The table's alias, or empty.
    pub table: String,
    /// The table's real name, or empty.
    pub org_table: String,
    /// The column's alias (what the client shows).
    pub name: String,
    /// The column's real name, or empty.
    pub org_name: String,
    /// The collation id (`63` binary for numbers and byte strings).
    pub collation_id: u16,
    /// The display length in bytes, as MySQL computes it.
    pub length: u32,
    pub field_type: FieldType,
    /// `flags::*`.
    pub flags: u16,
    /// Digits after the point: 0x00..0x51; 31 (0x1f) for "not fixed".
    pub decimals: u8,
}

/// A value in the binary protocol: a binary result row's column or a
/// prepared statement's parameter. Strings, decimals, enums, bits and JSON
/// travel as bytes; the integers' width comes from the field type.
#[derive(Debug, Clone, PartialEq)]
pub enum ProtocolValue<'a> {
    Null,
    Int(i64),
    UInt(u64),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
    Date {
        year: u16,
        month: u8,
        day: u8,
    },
    DateTime {
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        microsecond: u32,
    },
    Time {
        negative: bool,
        days: u32,
        hours: u8,
        minutes: u8,
        seconds: u8,
        microsecond: u32,
    },
}
