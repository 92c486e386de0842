//! The binary encoding of a table definition and its options: what the
//! management node sends to data and SQL nodes, and later what the
//! dictionary writes to disk. Changing it means a new `TABLE_CODEC_VERSION`.
//!
//! ## Format (version 2; version 1 lacked the SQL metadata and is still read)
//! Integers are little-endian. A *string* is a u16 byte length followed by
//! that many bytes of UTF-8. A *flag byte* has only the bits listed set.
//!
//! | Field                     | Bytes   | Contents                                                  |
//! |---------------------------|---------|-----------------------------------------------------------|
//! | version                   | 1       | `TABLE_CODEC_VERSION` (2)                                 |
//! | key hash function         | 1       | `key::KEY_HASH_FUNCTION_ID` (1); decides where rows live  |
//! | table name                | 2 + n   | string                                                    |
//! | column count              | 2       | u16                                                       |
//! | each column: name         | 2 + n   | string                                                    |
//! | each column: flags        | 1       | bit 0: nullable                                           |
//! | each column: type         | 1 + p   | type tag and parameters, below                            |
//! | primary key column count  | 2       | u16                                                       |
//! | primary key columns       | 2 each  | `ColumnId`, in key order                                  |
//! | index count               | 2       | u16                                                       |
//! | each index: name          | 2 + n   | string                                                    |
//! | each index: flags         | 1       | bit 0: unique                                             |
//! | each index: column count  | 2       | u16                                                       |
//! | each index: columns       | 2 each  | `ColumnId`, in key order                                  |
//! | option flags              | 1       | bit 0: READ_BACKUP, bit 1: FULLY_REPLICATED, bit 2: NOLOGGING |
//! | partition balance         | 1       | 0 FOR_RP_BY_LDM, 1 FOR_RA_BY_LDM, 2 FOR_RP_BY_NODE, 3 FOR_RA_BY_NODE, 4/5/6 FOR_RA_BY_LDM_X_2/3/4 |
//! | partitions                | 4       | u32, explicit `PARTITIONS n`; 0 when the balance decides  |
//! | distribution key count    | 2       | u16; 0 when the primary key is the distribution key       |
//! | distribution key columns  | 2 each  | `ColumnId`, in `PARTITION BY KEY` order                   |
//! | SQL metadata length       | 4       | u32, at most `SQL_METADATA_BYTES_MAX` (version 2 only)    |
//! | SQL metadata              | n       | opaque bytes the SQL layer writes (`crates/sql/src/catalog.rs`) |
//!
//! Column types (tag, then parameters; *unsigned* is a byte 0 or 1, a
//! *collation* is MySQL's collation id, `Collation::wire_id`):
//!
//! | Tag  | Type      | Parameters                       |
//! |------|-----------|----------------------------------|
//! | 0x01 | TINYINT   | unsigned                         |
//! | 0x02 | SMALLINT  | unsigned                         |
//! | 0x03 | MEDIUMINT | unsigned                         |
//! | 0x04 | INT       | unsigned                         |
//! | 0x05 | BIGINT    | unsigned                         |
//! | 0x06 | DECIMAL   | precision u8, scale u8           |
//! | 0x07 | FLOAT     | none                             |
//! | 0x08 | DOUBLE    | none                             |
//! | 0x09 | CHAR      | length u16, collation u8         |
//! | 0x0A | VARCHAR   | length u16, collation u8         |
//! | 0x0B | BINARY    | length u16                       |
//! | 0x0C | VARBINARY | length u16                       |
//! | 0x0D | DATE      | none                             |
//! | 0x0E | DATETIME  | fsp u8                           |
//! | 0x0F | TIMESTAMP | fsp u8                           |
//! | 0x10 | TIME      | fsp u8                           |
//! | 0x11 | YEAR      | none                             |
//! | 0x12 | BIT       | width u8                         |
//! | 0x13 | ENUM      | member count u16, then strings   |
//! | 0x14 | BLOB      | length_max u32                   |
//! | 0x15 | TEXT      | length_max u32, collation u8     |
//!
//! Decoding accepts exactly what encoding produces: unknown tags, flag bits,
//! versions or hash functions, bad UTF-8, truncation and trailing bytes are
//! errors (`CorruptTableDefinition`), and the definition is rebuilt through
//! `TableDef::new` and its options checked with `TableOptions::validate_for`,
//! so a decoded table passed the same validation as a created one and its
//! row layout is derived, never trusted from the wire.

use crate::distribution::{PartitionBalance, TableOptions};
use crate::error::{Error, ErrorCode};
use crate::key::KEY_HASH_FUNCTION_ID;
use crate::table::{ColumnDef, ColumnId, IndexDef, TableDef};
use crate::types::{Collation, ColumnType};

/// The format version written first; bumped on any change to the format.
pub const TABLE_CODEC_VERSION: u8 = 2;
/// The version before the SQL metadata; decoded as having none.
const TABLE_CODEC_VERSION_WITHOUT_SQL_METADATA: u8 = 1;
/// Most bytes of SQL metadata a table carries.
pub const SQL_METADATA_BYTES_MAX: usize = 64 * 1024;

const COLUMN_NULLABLE: u8 = 1 << 0;
const INDEX_UNIQUE: u8 = 1 << 0;
const OPTION_READ_BACKUP: u8 = 1 << 0;
const OPTION_FULLY_REPLICATED: u8 = 1 << 1;
const OPTION_NOLOGGING: u8 = 1 << 2;

const TAG_TINYINT: u8 = 0x01;
const TAG_SMALLINT: u8 = 0x02;
const TAG_MEDIUMINT: u8 = 0x03;
const TAG_INT: u8 = 0x04;
const TAG_BIGINT: u8 = 0x05;
const TAG_DECIMAL: u8 = 0x06;
const TAG_FLOAT: u8 = 0x07;
const TAG_DOUBLE: u8 = 0x08;
const TAG_CHAR: u8 = 0x09;
const TAG_VARCHAR: u8 = 0x0A;
const TAG_BINARY: u8 = 0x0B;
const TAG_VARBINARY: u8 = 0x0C;
const TAG_DATE: u8 = 0x0D;
const TAG_DATETIME: u8 = 0x0E;
const TAG_TIMESTAMP: u8 = 0x0F;
const TAG_TIME: u8 = 0x10;
const TAG_YEAR: u8 = 0x11;
const TAG_BIT: u8 = 0x12;
const TAG_ENUM: u8 = 0x13;
const TAG_BLOB: u8 = 0x14;
const TAG_TEXT: u8 = 0x15;

/// Appends the encoding of `def` and `options` to `out`.
///
/// Panics if a name or ENUM member is longer than 65,535 bytes, or a count
/// exceeds 65,535: `TableDef::new` and MySQL's identifier limits keep valid
/// definitions far below both. Panics if the SQL metadata exceeds
/// `SQL_METADATA_BYTES_MAX`: the SQL layer checks it first.
pub fn encode_table(def: &TableDef, options: &TableOptions, out: &mut Vec<u8>) {
    out.push(TABLE_CODEC_VERSION);
    out.push(KEY_HASH_FUNCTION_ID);
    put_string(out, &def.name);
    put_count(out, def.columns.len());
    for column in &def.columns {
        put_string(out, &column.name);
        out.push(if column.nullable { COLUMN_NULLABLE } else { 0 });
        put_column_type(out, &column.column_type);
    }
    put_column_ids(out, &def.primary_key);
    put_count(out, def.ordered_indexes.len());
    for index in &def.ordered_indexes {
        put_string(out, &index.name);
        out.push(if index.unique { INDEX_UNIQUE } else { 0 });
        put_column_ids(out, &index.columns);
    }
    let mut flags = 0;
    if options.read_backup {
        flags |= OPTION_READ_BACKUP;
    }
    if options.fully_replicated {
        flags |= OPTION_FULLY_REPLICATED;
    }
    if options.nologging {
        flags |= OPTION_NOLOGGING;
    }
    out.push(flags);
    out.push(balance_wire_id(options.partition_balance));
    // PARTITIONS 0 is invalid, so 0 is free to mean "no explicit count".
    out.extend_from_slice(&options.partitions.unwrap_or(0).to_le_bytes());
    // An empty list means the primary key, so a count of 0 needs no flag.
    put_column_ids(out, &options.distribution_key);
    assert!(
        options.sql_metadata.len() <= SQL_METADATA_BYTES_MAX,
        "SQL metadata is checked against its limit before encoding"
    );
    out.extend_from_slice(&(options.sql_metadata.len() as u32).to_le_bytes());
    out.extend_from_slice(&options.sql_metadata);
}

/// Decodes what `encode_table` wrote, validating it as `CREATE TABLE` would.
pub fn decode_table(bytes: &[u8]) -> Result<(TableDef, TableOptions), Error> {
    let mut reader = Reader { bytes, position: 0 };
    let version = reader.u8("the format version")?;
    if version != TABLE_CODEC_VERSION && version != TABLE_CODEC_VERSION_WITHOUT_SQL_METADATA {
        return Err(corrupt(format!(
            "format version {version}; this build reads version {TABLE_CODEC_VERSION}"
        )));
    }
    let hash_function = reader.u8("the key hash function id")?;
    if hash_function != KEY_HASH_FUNCTION_ID {
        return Err(corrupt(format!(
            "key hash function {hash_function}; this build knows only {KEY_HASH_FUNCTION_ID}"
        )));
    }
    let name = reader.string("the table name")?;
    let column_count = reader.u16("the column count")?;
    let mut columns = Vec::with_capacity(reader.capacity_for(column_count, 4));
    for _ in 0..column_count {
        let column_name = reader.string("a column name")?;
        let flags = reader.flags(COLUMN_NULLABLE, "column flags")?;
        let column_type = reader.column_type()?;
        columns.push(ColumnDef {
            name: column_name,
            column_type,
            nullable: flags & COLUMN_NULLABLE != 0,
        });
    }
    let primary_key = reader.column_ids("the primary key")?;
    let index_count = reader.u16("the index count")?;
    let mut ordered_indexes = Vec::with_capacity(reader.capacity_for(index_count, 5));
    for _ in 0..index_count {
        let index_name = reader.string("an index name")?;
        let flags = reader.flags(INDEX_UNIQUE, "index flags")?;
        let index_columns = reader.column_ids("an index")?;
        ordered_indexes.push(IndexDef {
            name: index_name,
            columns: index_columns,
            unique: flags & INDEX_UNIQUE != 0,
        });
    }
    let flags = reader.flags(
        OPTION_READ_BACKUP | OPTION_FULLY_REPLICATED | OPTION_NOLOGGING,
        "option flags",
    )?;
    let balance_position = reader.position;
    let balance_id = reader.u8("the partition balance")?;
    let partition_balance = balance_from_wire_id(balance_id).ok_or_else(|| {
        corrupt(format!(
            "unknown partition balance {balance_id} at byte {balance_position}"
        ))
    })?;
    let partitions = reader.u32("the partition count")?;
    let distribution_key = reader.column_ids("the distribution key")?;
    let mut sql_metadata = Vec::new();
    if version == TABLE_CODEC_VERSION {
        let length = reader.u32("the SQL metadata length")? as usize;
        if length > SQL_METADATA_BYTES_MAX {
            return Err(corrupt(format!(
                "SQL metadata of {length} bytes, more than {SQL_METADATA_BYTES_MAX}"
            )));
        }
        sql_metadata = reader.take(length, "the SQL metadata")?.to_vec();
    }
    if reader.position != bytes.len() {
        return Err(corrupt(format!(
            "{} trailing byte(s) after the table definition",
            bytes.len() - reader.position
        )));
    }
    let options = TableOptions {
        read_backup: flags & OPTION_READ_BACKUP != 0,
        partition_balance,
        partitions: (partitions != 0).then_some(partitions),
        fully_replicated: flags & OPTION_FULLY_REPLICATED != 0,
        nologging: flags & OPTION_NOLOGGING != 0,
        distribution_key,
        sql_metadata,
    };
    options.validate()?;
    let def = TableDef::new(&name, columns, primary_key, ordered_indexes)?;
    options.validate_for(&def)?;
    Ok((def, options))
}

fn corrupt(detail: String) -> Error {
    Error::new(ErrorCode::CorruptTableDefinition, detail)
}

fn balance_wire_id(balance: PartitionBalance) -> u8 {
    match balance {
        PartitionBalance::ForRpByLdm => 0,
        PartitionBalance::ForRaByLdm => 1,
        PartitionBalance::ForRpByNode => 2,
        PartitionBalance::ForRaByNode => 3,
        PartitionBalance::ForRaByLdmX2 => 4,
        PartitionBalance::ForRaByLdmX3 => 5,
        PartitionBalance::ForRaByLdmX4 => 6,
    }
}

fn balance_from_wire_id(id: u8) -> Option<PartitionBalance> {
    PartitionBalance::ALL
        .into_iter()
        .find(|&balance| balance_wire_id(balance) == id)
}

fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_count(out: &mut Vec<u8>, count: usize) {
    put_u16(
        out,
        u16::try_from(count).expect("a table codec count fits in u16"),
    );
}

fn put_string(out: &mut Vec<u8>, text: &str) {
    put_count(out, text.len());
    out.extend_from_slice(text.as_bytes());
}

fn put_column_ids(out: &mut Vec<u8>, ids: &[ColumnId]) {
    put_count(out, ids.len());
    for &id in ids {
        put_u16(out, id);
    }
}

fn put_column_type(out: &mut Vec<u8>, column_type: &ColumnType) {
    use ColumnType as Type;
    match column_type {
        Type::TinyInt { unsigned } => out.extend_from_slice(&[TAG_TINYINT, u8::from(*unsigned)]),
        Type::SmallInt { unsigned } => out.extend_from_slice(&[TAG_SMALLINT, u8::from(*unsigned)]),
        Type::MediumInt { unsigned } => {
            out.extend_from_slice(&[TAG_MEDIUMINT, u8::from(*unsigned)])
        }
        Type::Int { unsigned } => out.extend_from_slice(&[TAG_INT, u8::from(*unsigned)]),
        Type::BigInt { unsigned } => out.extend_from_slice(&[TAG_BIGINT, u8::from(*unsigned)]),
        Type::Decimal { precision, scale } => {
            out.extend_from_slice(&[TAG_DECIMAL, *precision, *scale])
        }
        Type::Float => out.push(TAG_FLOAT),
        Type::Double => out.push(TAG_DOUBLE),
        Type::Char { length, collation } => {
            out.push(TAG_CHAR);
            put_u16(out, *length);
            out.push(collation.wire_id());
        }
        Type::Varchar { length, collation } => {
            out.push(TAG_VARCHAR);
            put_u16(out, *length);
            out.push(collation.wire_id());
        }
        Type::Binary { length } => {
            out.push(TAG_BINARY);
            put_u16(out, *length);
        }
        Type::Varbinary { length } => {
            out.push(TAG_VARBINARY);
            put_u16(out, *length);
        }
        Type::Date => out.push(TAG_DATE),
        Type::Datetime { fsp } => out.extend_from_slice(&[TAG_DATETIME, *fsp]),
        Type::Timestamp { fsp } => out.extend_from_slice(&[TAG_TIMESTAMP, *fsp]),
        Type::Time { fsp } => out.extend_from_slice(&[TAG_TIME, *fsp]),
        Type::Year => out.push(TAG_YEAR),
        Type::Bit { width } => out.extend_from_slice(&[TAG_BIT, *width]),
        Type::Enum { variants } => {
            out.push(TAG_ENUM);
            put_count(out, variants.len());
            for variant in variants {
                put_string(out, variant);
            }
        }
        Type::Blob { length_max } => {
            out.push(TAG_BLOB);
            out.extend_from_slice(&length_max.to_le_bytes());
        }
        Type::Text {
            length_max,
            collation,
        } => {
            out.push(TAG_TEXT);
            out.extend_from_slice(&length_max.to_le_bytes());
            out.push(collation.wire_id());
        }
    }
}

/// A cursor over the encoded bytes; every read names what it reads so a
/// truncation error says where the encoding broke off.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn take(&mut self, length: usize, what: &str) -> Result<&[u8], Error> {
        let remaining = self.bytes.len() - self.position;
        if length > remaining {
            return Err(corrupt(format!(
                "truncated at byte {} reading {what} ({length} bytes needed, {remaining} left)",
                self.position
            )));
        }
        let taken = &self.bytes[self.position..self.position + length];
        self.position += length;
        Ok(taken)
    }

    fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, Error> {
        let bytes = self.take(2, what)?;
        Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A flag byte that may only have bits of `allowed` set.
    fn flags(&mut self, allowed: u8, what: &str) -> Result<u8, Error> {
        let position = self.position;
        let flags = self.u8(what)?;
        if flags & !allowed != 0 {
            return Err(corrupt(format!(
                "unknown bits {:#04x} in {what} at byte {position}",
                flags & !allowed
            )));
        }
        Ok(flags)
    }

    /// The unsigned byte of an integer type: 0 or 1.
    fn unsigned(&mut self) -> Result<bool, Error> {
        let position = self.position;
        match self.u8("an integer's unsigned flag")? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(corrupt(format!(
                "unsigned flag {other} at byte {position} is neither 0 nor 1"
            ))),
        }
    }

    fn string(&mut self, what: &str) -> Result<String, Error> {
        let length = self.u16(what)?;
        let position = self.position;
        let bytes = self.take(usize::from(length), what)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_string()),
            Err(error) => Err(corrupt(format!(
                "{what} at byte {position} is not valid UTF-8 ({error})"
            ))),
        }
    }

    fn collation(&mut self) -> Result<Collation, Error> {
        let position = self.position;
        let id = self.u8("a collation id")?;
        Collation::from_wire_id(id)
            .ok_or_else(|| corrupt(format!("unknown collation id {id} at byte {position}")))
    }

    fn column_ids(&mut self, what: &str) -> Result<Vec<ColumnId>, Error> {
        let count = self.u16(what)?;
        let mut ids = Vec::with_capacity(self.capacity_for(count, 2));
        for _ in 0..count {
            ids.push(self.u16(what)?);
        }
        Ok(ids)
    }

    /// A capacity for `count` items of at least `bytes_each` bytes that a
    /// corrupt count cannot inflate beyond what the input could hold.
    fn capacity_for(&self, count: u16, bytes_each: usize) -> usize {
        usize::from(count).min((self.bytes.len() - self.position) / bytes_each)
    }

    fn column_type(&mut self) -> Result<ColumnType, Error> {
        use ColumnType as Type;
        let position = self.position;
        let tag = self.u8("a column type tag")?;
        Ok(match tag {
            TAG_TINYINT => Type::TinyInt {
                unsigned: self.unsigned()?,
            },
            TAG_SMALLINT => Type::SmallInt {
                unsigned: self.unsigned()?,
            },
            TAG_MEDIUMINT => Type::MediumInt {
                unsigned: self.unsigned()?,
            },
            TAG_INT => Type::Int {
                unsigned: self.unsigned()?,
            },
            TAG_BIGINT => Type::BigInt {
                unsigned: self.unsigned()?,
            },
            TAG_DECIMAL => Type::Decimal {
                precision: self.u8("a DECIMAL precision")?,
                scale: self.u8("a DECIMAL scale")?,
            },
            TAG_FLOAT => Type::Float,
            TAG_DOUBLE => Type::Double,
            TAG_CHAR => Type::Char {
                length: self.u16("a CHAR length")?,
                collation: self.collation()?,
            },
            TAG_VARCHAR => Type::Varchar {
                length: self.u16("a VARCHAR length")?,
                collation: self.collation()?,
            },
            TAG_BINARY => Type::Binary {
                length: self.u16("a BINARY length")?,
            },
            TAG_VARBINARY => Type::Varbinary {
                length: self.u16("a VARBINARY length")?,
            },
            TAG_DATE => Type::Date,
            TAG_DATETIME => Type::Datetime {
                fsp: self.u8("a DATETIME precision")?,
            },
            TAG_TIMESTAMP => Type::Timestamp {
                fsp: self.u8("a TIMESTAMP precision")?,
            },
            TAG_TIME => Type::Time {
                fsp: self.u8("a TIME precision")?,
            },
            TAG_YEAR => Type::Year,
            TAG_BIT => Type::Bit {
                width: self.u8("a BIT width")?,
            },
            TAG_ENUM => {
                let count = self.u16("an ENUM member count")?;
                let mut variants = Vec::with_capacity(self.capacity_for(count, 2));
                for _ in 0..count {
                    variants.push(self.string("an ENUM member")?);
                }
                Type::Enum { variants }
            }
            TAG_BLOB => Type::Blob {
                length_max: self.u32("a BLOB length")?,
            },
            TAG_TEXT => Type::Text {
                length_max: self.u32("a TEXT length")?,
                collation: self.collation()?,
            },
            unknown => {
                return Err(corrupt(format!(
                    "unknown column type tag {unknown:#04x} at byte {position}"
                )));
            }
        })
    }
}
