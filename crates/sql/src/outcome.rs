//! What a statement gives back: an OK with counts, or a result set.

use mysql_protocol::ColumnDefinition;
use schema::Collation;

use crate::value::{SqlType, SqlValue};

/// A result set: column definitions, their types, and the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    pub columns: Vec<ColumnDefinition>,
    pub types: Vec<SqlType>,
    pub rows: Vec<Vec<SqlValue>>,
}

/// How a statement ended, when it did not fail.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done {
        affected_rows: u64,
        last_insert_id: u64,
        /// The OK packet's info text ("Rows matched: 1  Changed: 1  Warnings: 0").
        info: String,
    },
    Rows(ResultSet),
}

impl Outcome {
    pub fn done(affected_rows: u64) -> Outcome {
        Outcome::Done {
            affected_rows,
            last_insert_id: 0,
            info: String::new(),
        }
    }
}

/// The column definition of an expression column named `name`.
pub fn expression_column(name: &str, sql_type: &SqlType) -> ColumnDefinition {
    ColumnDefinition {
        schema: String::new(),
        table: String::new(),
        org_table: String::new(),
        name: name.to_string(),
        org_name: String::new(),
        collation_id: collation_id(sql_type),
        length: sql_type.length,
        field_type: sql_type.field_type,
        flags: sql_type.flags,
        decimals: sql_type.decimals,
    }
}

/// The collation id a column definition carries: the string's collation,
/// `binary` (63) for everything else.
pub fn collation_id(sql_type: &SqlType) -> u16 {
    u16::from(sql_type.collation.wire_id())
}

/// A VARCHAR result column of `characters` utf8mb4 characters, for SHOW.
pub fn text_type(characters: u32) -> SqlType {
    SqlType {
        field_type: mysql_protocol::FieldType::VarString,
        flags: 0,
        length: characters * 4,
        decimals: 0,
        collation: Collation::Utf8mb4AiCi,
    }
}

/// A BIGINT result column, for SHOW.
pub fn integer_type() -> SqlType {
    SqlType {
        field_type: mysql_protocol::FieldType::LongLong,
        flags: mysql_protocol::column::flags::NUM,
        length: 21,
        decimals: 0,
        collation: Collation::Binary,
    }
}

/// A result set of text columns, for SHOW statements.
pub fn text_result(names: &[&str], rows: Vec<Vec<SqlValue>>) -> ResultSet {
    let types: Vec<SqlType> = names.iter().map(|_| text_type(64)).collect();
    ResultSet {
        columns: names
            .iter()
            .zip(&types)
            .map(|(name, t)| expression_column(name, t))
            .collect(),
        types,
        rows,
    }
}

/// A text value.
pub fn text(value: impl AsRef<str>) -> SqlValue {
    SqlValue::String(value.as_ref().as_bytes().to_vec())
}
