//! The catalog: SQL databases and tables over the cluster's dictionary.
//!
//! A SQL table `db.t` is the dictionary table `db/def/t`, as NDB names
//! them, so every SQL node sees the same tables the moment the dictionary
//! has them. What SQL knows beyond the engine's definition (defaults,
//! AUTO_INCREMENT, comments, the engine named at CREATE TABLE) travels in
//! the definition's opaque SQL metadata (`TableOptions::sql_metadata`),
//! created and dropped with the table in one dictionary change.
//!
//! Databases and users are rows of two system tables, `mysql/def/shoal_schemata`
//! and `mysql/def/user`, which the first SQL node to start creates.
//!
//! ## SQL metadata format (version 1)
//! Integers little-endian; a *string* is a u16 length and UTF-8 bytes.
//!
//! | Field                  | Bytes | Contents                                           |
//! |------------------------|-------|----------------------------------------------------|
//! | version                | 1     | `SQL_METADATA_VERSION` (1)                         |
//! | engine                 | 2 + n | string, the ENGINE the user named (`ndbcluster`)   |
//! | comment                | 2 + n | string, the table COMMENT                          |
//! | column count           | 2     | u16, equal to the definition's                     |
//! | each column: flags     | 1     | bit 0 AUTO_INCREMENT, bit 1 has a default, bit 2 the default is CURRENT_TIMESTAMP, bit 3 ON UPDATE CURRENT_TIMESTAMP, bit 4 DEFAULT NULL, bit 5 TINYINT(1) (BOOLEAN), bit 6 UNSIGNED (DECIMAL, FLOAT, DOUBLE) |
//! | each column: default   | 2 + n | string, the default's text (when bit 1 and not bit 2) |
//! | each column: comment   | 2 + n | string                                             |
//! | index count            | 2     | u16, equal to the definition's ordered indexes     |
//! | each index: kind       | 1     | 0 KEY, 1 UNIQUE, 2 the primary key's ordered index |

use std::sync::Arc;

use mysql_protocol::column::flags;
use schema::{ColumnDef, ColumnId, ColumnType, TableDef};
use shoal_client::TableRoute;

use crate::convert;
use crate::error::SqlError;
use crate::value::SqlType;

/// The format version of the SQL metadata.
pub const SQL_METADATA_VERSION: u8 = 1;
/// The database that holds the system tables.
pub const SYSTEM_DATABASE: &str = "mysql";
/// The dictionary name of the table of databases.
pub const SCHEMATA_TABLE: &str = "mysql/def/shoal_schemata";
/// The dictionary name of the table of users.
pub const USER_TABLE: &str = "mysql/def/user";
/// Longest database, table, column or index name (MySQL's `NAME_CHAR_LEN`).
pub const IDENTIFIER_LENGTH_MAX: usize = 64;
/// The name of the ordered index every table gets on its primary key, as
/// NDB creates one unless the key is `USING HASH`: range scans and
/// `ORDER BY` on the key need it.
pub const PRIMARY_INDEX_NAME: &str = "PRIMARY";
/// Databases every SQL node shows that hold no cluster tables.
pub const VIRTUAL_DATABASES: [&str; 2] = ["information_schema", "performance_schema"];

/// The dictionary name of SQL table `table` in `database`.
pub fn dictionary_name(database: &str, table: &str) -> String {
    let mut name = String::new();
    write_dictionary_name(database, table, &mut name);
    name
}

/// `dictionary_name` written into `out` (cleared first).
pub fn write_dictionary_name(database: &str, table: &str, out: &mut String) {
    out.clear();
    out.push_str(database);
    out.push_str("/def/");
    out.push_str(table);
}

/// The database and table of a dictionary name, if it names a SQL table.
pub fn split_dictionary_name(name: &str) -> Option<(&str, &str)> {
    let (database, rest) = name.split_once("/def/")?;
    if database.is_empty() || rest.is_empty() || rest.contains('/') {
        return None;
    }
    Some((database, rest))
}

/// Checks a database, table, column or index name as MySQL does (1059
/// "Identifier name ... is too long", 1102/1103 for empty or bad names).
pub fn check_identifier(name: &str, what: &str) -> Result<(), SqlError> {
    if name.chars().count() > IDENTIFIER_LENGTH_MAX {
        return Err(SqlError::new(
            1059,
            format!("Identifier name '{name}' is too long"),
        ));
    }
    let bad = name.is_empty() || name.ends_with(' ') || name.contains('/') || name.contains('\0');
    if bad {
        let code = if what == "database" { 1102 } else { 1103 };
        return Err(SqlError::new(
            code,
            format!("Incorrect {what} name '{name}'"),
        ));
    }
    Ok(())
}

/// A column's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnDefault {
    /// No DEFAULT clause: NULL for a nullable column, else none (an insert
    /// without the column is 1364 in strict mode).
    None,
    /// A constant, as its text in the column's type.
    Text(String),
    /// `DEFAULT NULL`.
    Null,
    /// `DEFAULT CURRENT_TIMESTAMP`.
    CurrentTimestamp,
}

/// What SQL keeps about a column beyond the engine's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMetadata {
    pub default: ColumnDefault,
    pub auto_increment: bool,
    pub on_update_current_timestamp: bool,
    pub comment: String,
    /// Declared BOOLEAN or TINYINT(1): shown as `tinyint(1)`, and drivers
    /// read it as a boolean (its display length is 1).
    pub boolean: bool,
    /// A DECIMAL, FLOAT or DOUBLE declared UNSIGNED: negative values are
    /// out of range (the engine's type has no sign flag for them).
    pub unsigned: bool,
}

impl Default for ColumnMetadata {
    fn default() -> ColumnMetadata {
        ColumnMetadata {
            default: ColumnDefault::None,
            auto_increment: false,
            on_update_current_timestamp: false,
            comment: String::new(),
            boolean: false,
            unsigned: false,
        }
    }
}

/// The kind of an ordered index, for SHOW CREATE TABLE and SHOW INDEX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Key,
    Unique,
    Primary,
}

/// What SQL keeps about a table beyond the engine's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlMetadata {
    pub engine: String,
    pub comment: String,
    pub columns: Vec<ColumnMetadata>,
    pub indexes: Vec<IndexKind>,
}

const COLUMN_AUTO_INCREMENT: u8 = 1 << 0;
const COLUMN_HAS_DEFAULT: u8 = 1 << 1;
const COLUMN_DEFAULT_CURRENT_TIMESTAMP: u8 = 1 << 2;
const COLUMN_ON_UPDATE_CURRENT_TIMESTAMP: u8 = 1 << 3;
const COLUMN_DEFAULT_NULL: u8 = 1 << 4;
const COLUMN_BOOLEAN: u8 = 1 << 5;
const COLUMN_UNSIGNED: u8 = 1 << 6;

impl SqlMetadata {
    /// Metadata for a table created through the native API: every column
    /// without default, every index a KEY (UNIQUE when unique).
    pub fn for_native(def: &TableDef) -> SqlMetadata {
        SqlMetadata {
            engine: "ndbcluster".into(),
            comment: String::new(),
            columns: vec![ColumnMetadata::default(); def.columns.len()],
            indexes: def
                .ordered_indexes
                .iter()
                .map(|index| {
                    if index.name == PRIMARY_INDEX_NAME {
                        IndexKind::Primary
                    } else if index.unique {
                        IndexKind::Unique
                    } else {
                        IndexKind::Key
                    }
                })
                .collect(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![SQL_METADATA_VERSION];
        put_string(&mut out, &self.engine);
        put_string(&mut out, &self.comment);
        out.extend_from_slice(&(self.columns.len() as u16).to_le_bytes());
        for column in &self.columns {
            let mut bits = 0;
            if column.auto_increment {
                bits |= COLUMN_AUTO_INCREMENT;
            }
            if column.on_update_current_timestamp {
                bits |= COLUMN_ON_UPDATE_CURRENT_TIMESTAMP;
            }
            if column.boolean {
                bits |= COLUMN_BOOLEAN;
            }
            if column.unsigned {
                bits |= COLUMN_UNSIGNED;
            }
            let text = match &column.default {
                ColumnDefault::None => "",
                ColumnDefault::Null => {
                    bits |= COLUMN_DEFAULT_NULL;
                    ""
                }
                ColumnDefault::CurrentTimestamp => {
                    bits |= COLUMN_HAS_DEFAULT | COLUMN_DEFAULT_CURRENT_TIMESTAMP;
                    ""
                }
                ColumnDefault::Text(text) => {
                    bits |= COLUMN_HAS_DEFAULT;
                    text
                }
            };
            out.push(bits);
            put_string(&mut out, text);
            put_string(&mut out, &column.comment);
        }
        out.extend_from_slice(&(self.indexes.len() as u16).to_le_bytes());
        for kind in &self.indexes {
            out.push(match kind {
                IndexKind::Key => 0,
                IndexKind::Unique => 1,
                IndexKind::Primary => 2,
            });
        }
        out
    }

    /// Decodes `bytes` for table `def`; a table without metadata (created
    /// through the native API) gets `for_native`.
    pub fn decode(bytes: &[u8], def: &TableDef) -> Result<SqlMetadata, SqlError> {
        if bytes.is_empty() {
            return Ok(SqlMetadata::for_native(def));
        }
        let corrupt = |what: &str| {
            SqlError::new(
                1033,
                format!(
                    "Incorrect information in the SQL metadata of table '{}': {what}",
                    def.name
                ),
            )
        };
        let mut reader = Reader { bytes, position: 0 };
        let version = reader.u8().ok_or_else(|| corrupt("empty"))?;
        if version != SQL_METADATA_VERSION {
            return Err(corrupt("unknown version"));
        }
        let engine = reader.string().ok_or_else(|| corrupt("engine"))?;
        let comment = reader.string().ok_or_else(|| corrupt("comment"))?;
        let count = reader.u16().ok_or_else(|| corrupt("column count"))? as usize;
        if count != def.columns.len() {
            return Err(corrupt("column count differs from the definition"));
        }
        let mut columns = Vec::with_capacity(count);
        for _ in 0..count {
            let bits = reader.u8().ok_or_else(|| corrupt("column flags"))?;
            let text = reader.string().ok_or_else(|| corrupt("column default"))?;
            let column_comment = reader.string().ok_or_else(|| corrupt("column comment"))?;
            let default = if bits & COLUMN_DEFAULT_CURRENT_TIMESTAMP != 0 {
                ColumnDefault::CurrentTimestamp
            } else if bits & COLUMN_HAS_DEFAULT != 0 {
                ColumnDefault::Text(text)
            } else if bits & COLUMN_DEFAULT_NULL != 0 {
                ColumnDefault::Null
            } else {
                ColumnDefault::None
            };
            columns.push(ColumnMetadata {
                default,
                auto_increment: bits & COLUMN_AUTO_INCREMENT != 0,
                on_update_current_timestamp: bits & COLUMN_ON_UPDATE_CURRENT_TIMESTAMP != 0,
                comment: column_comment,
                boolean: bits & COLUMN_BOOLEAN != 0,
                unsigned: bits & COLUMN_UNSIGNED != 0,
            });
        }
        let index_count = reader.u16().ok_or_else(|| corrupt("index count"))? as usize;
        if index_count != def.ordered_indexes.len() {
            return Err(corrupt("index count differs from the definition"));
        }
        let mut indexes = Vec::with_capacity(index_count);
        for _ in 0..index_count {
            indexes.push(match reader.u8() {
                Some(0) => IndexKind::Key,
                Some(1) => IndexKind::Unique,
                Some(2) => IndexKind::Primary,
                _ => return Err(corrupt("index kind")),
            });
        }
        if reader.position != bytes.len() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(SqlMetadata {
            engine,
            comment,
            columns,
            indexes,
        })
    }
}

fn put_string(out: &mut Vec<u8>, text: &str) {
    let length = u16::try_from(text.len()).expect("SQL metadata strings are checked below 64 KiB");
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn take(&mut self, length: usize) -> Option<&[u8]> {
        let end = self.position.checked_add(length)?;
        let taken = self.bytes.get(self.position..end)?;
        self.position = end;
        Some(taken)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn string(&mut self) -> Option<String> {
        let length = self.u16()? as usize;
        let bytes = self.take(length)?;
        String::from_utf8(bytes.to_vec()).ok()
    }
}

/// The column NDB adds as the primary key of a table created without one:
/// an unsigned BIGINT the SQL node fills from the table's auto-increment
/// counter, last among the columns and never shown (`SELECT *`, SHOW,
/// INSERT without a column list, name lookups all skip it).
pub const HIDDEN_PRIMARY_KEY: &str = "$PK";

/// A SQL table: the dictionary's route and what SQL adds.
#[derive(Debug)]
pub struct SqlTable {
    pub database: String,
    pub name: String,
    pub route: Arc<TableRoute>,
    pub metadata: SqlMetadata,
    /// Each column's type in result sets, key flags included.
    pub column_types: Vec<SqlType>,
    /// The AUTO_INCREMENT column, if any.
    pub auto_increment: Option<usize>,
    /// The columns users see: all but a hidden primary key.
    pub visible_columns: usize,
}

impl SqlTable {
    pub fn new(route: Arc<TableRoute>) -> Result<SqlTable, SqlError> {
        let (database, name) = split_dictionary_name(&route.name)
            .map(|(d, t)| (d.to_string(), t.to_string()))
            .unwrap_or_else(|| (String::new(), route.name.clone()));
        let def = &route.def;
        let metadata = SqlMetadata::decode(&route.options.sql_metadata, def)?;
        let mut column_types: Vec<SqlType> =
            def.columns.iter().map(convert::column_sql_type).collect();
        for &column in &def.primary_key {
            column_types[column as usize].flags |= flags::PRIMARY_KEY;
        }
        for (index, kind) in def.ordered_indexes.iter().zip(&metadata.indexes) {
            let Some(&first) = index.columns.first() else {
                continue;
            };
            match kind {
                IndexKind::Primary => {}
                IndexKind::Unique if index.columns.len() == 1 => {
                    column_types[first as usize].flags |= flags::UNIQUE_KEY;
                }
                _ => column_types[first as usize].flags |= flags::MULTIPLE_KEY,
            }
        }
        let mut auto_increment = None;
        for (position, column) in metadata.columns.iter().enumerate() {
            if column.auto_increment {
                column_types[position].flags |= flags::AUTO_INCREMENT;
                auto_increment = Some(position);
            }
            if column.boolean {
                column_types[position].length = 1;
            }
            if column.unsigned {
                column_types[position].flags |= flags::UNSIGNED;
            }
            if matches!(column.default, ColumnDefault::None)
                && !def.columns[position].nullable
                && !column.auto_increment
            {
                column_types[position].flags |= flags::NO_DEFAULT_VALUE;
            }
        }
        let hidden = def.columns.last().is_some_and(|last| {
            last.name == HIDDEN_PRIMARY_KEY
                && def.primary_key == [(def.columns.len() - 1) as ColumnId]
        });
        let visible_columns = def.columns.len() - usize::from(hidden);
        Ok(SqlTable {
            database,
            name,
            route,
            metadata,
            column_types,
            auto_increment,
            visible_columns,
        })
    }

    /// The hidden primary key's position, when the table has one.
    pub fn hidden_primary_key(&self) -> Option<usize> {
        (self.visible_columns < self.def().columns.len()).then_some(self.visible_columns)
    }

    /// The columns users see, with their positions.
    pub fn visible(&self) -> impl Iterator<Item = (usize, &ColumnDef)> {
        self.def().columns[..self.visible_columns]
            .iter()
            .enumerate()
    }

    pub fn def(&self) -> &TableDef {
        &self.route.def
    }

    /// A visible column's position by name.
    pub fn column_position(&self, name: &str) -> Option<usize> {
        self.route.def.columns[..self.visible_columns]
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    pub fn column(&self, position: usize) -> &ColumnDef {
        &self.route.def.columns[position]
    }

    /// The position of the ordered index named `name`.
    pub fn ordered_index(&self, name: &str) -> Option<usize> {
        self.route
            .def
            .ordered_indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(name))
    }
}

/// The definition of the table of databases.
pub fn schemata_table() -> (TableDef, SqlMetadata) {
    let name_type = ColumnType::Varchar {
        length: IDENTIFIER_LENGTH_MAX as u16,
        collation: schema::Collation::Utf8mb4Bin,
    };
    let def = TableDef::new(
        SCHEMATA_TABLE,
        vec![
            ColumnDef::new("SCHEMA_NAME", name_type.clone(), false),
            ColumnDef::new("DEFAULT_COLLATION_NAME", name_type, false),
        ],
        vec![0],
        Vec::new(),
    )
    .expect("the schemata table is valid");
    let metadata = SqlMetadata::for_native(&def);
    (def, metadata)
}

/// The definition of the table of users: MySQL's `mysql.user` columns that
/// authentication needs. `authentication_string` holds the stored digests
/// of both plugins (see `crate::users`).
pub fn user_table() -> (TableDef, SqlMetadata) {
    let text = |length| ColumnType::Varchar {
        length,
        collation: schema::Collation::Utf8mb4Bin,
    };
    let def = TableDef::new(
        USER_TABLE,
        vec![
            ColumnDef::new("Host", text(255), false),
            ColumnDef::new("User", text(32), false),
            ColumnDef::new("plugin", text(64), false),
            ColumnDef::new(
                "authentication_string",
                ColumnType::Varbinary { length: 128 },
                false,
            ),
        ],
        vec![0, 1],
        Vec::new(),
    )
    .expect("the user table is valid");
    let metadata = SqlMetadata::for_native(&def);
    (def, metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_names_split_back() {
        let name = dictionary_name("shop", "orders");
        assert_eq!(name, "shop/def/orders");
        assert_eq!(split_dictionary_name(&name), Some(("shop", "orders")));
        assert_eq!(split_dictionary_name("native_table"), None);
        assert_eq!(split_dictionary_name("a/def/b/c"), None);
        assert_eq!(split_dictionary_name("/def/b"), None);
    }

    #[test]
    fn metadata_round_trips_and_refuses_corruption() {
        let (def, _) = user_table();
        let metadata = SqlMetadata {
            engine: "InnoDB".into(),
            comment: "users ü".into(),
            columns: vec![
                ColumnMetadata {
                    default: ColumnDefault::Text("%".into()),
                    ..ColumnMetadata::default()
                },
                ColumnMetadata {
                    default: ColumnDefault::Null,
                    auto_increment: true,
                    ..ColumnMetadata::default()
                },
                ColumnMetadata {
                    default: ColumnDefault::CurrentTimestamp,
                    on_update_current_timestamp: true,
                    comment: "c".into(),
                    ..ColumnMetadata::default()
                },
                ColumnMetadata::default(),
            ],
            indexes: Vec::new(),
        };
        let bytes = metadata.encode();
        assert_eq!(SqlMetadata::decode(&bytes, &def).unwrap(), metadata);
        for cut in 1..bytes.len() {
            assert!(
                SqlMetadata::decode(&bytes[..cut], &def).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(SqlMetadata::decode(&longer, &def).unwrap_err().code, 1033);
        assert_eq!(
            SqlMetadata::decode(&[], &def).unwrap(),
            SqlMetadata::for_native(&def)
        );
    }

    #[test]
    fn identifiers_are_checked_as_mysql_does() {
        assert!(check_identifier("orders", "table").is_ok());
        assert_eq!(
            check_identifier(&"x".repeat(65), "table").unwrap_err().code,
            1059
        );
        assert_eq!(check_identifier("", "database").unwrap_err().code, 1102);
        assert_eq!(check_identifier("a/b", "table").unwrap_err().code, 1103);
        assert_eq!(
            check_identifier("trailing ", "table").unwrap_err().code,
            1103
        );
    }
}
