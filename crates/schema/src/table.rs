//! Table and index definitions, and the row layout derived from them.
//!
//! A stored row has two parts. The **fixed part** holds the null bitmap
//! followed by every fixed-size column at a fixed offset; every row of a
//! table has a fixed part of the same size, so fixed parts live in fixed
//! slots. The **variable part** holds the variable-size columns (VARCHAR,
//! VARBINARY, BLOB, TEXT) in column order, each as a 2-byte little-endian
//! length and its bytes (length 0 for NULL). See `row` for the byte format.

use crate::error::{Error, ErrorCode};
use crate::types::{ColumnType, Storage};

/// A column's position in its table's column list.
pub type ColumnId = u16;

/// The largest row, fixed and variable parts together (NDB's limit).
pub const ROW_SIZE_MAX: u32 = 30_000;
/// Most columns in a table.
pub const COLUMNS_PER_TABLE_MAX: usize = 512;
/// Most ordered indexes on a table: the engine keeps a 64-bit mask per row
/// change saying which indexes' keys moved.
pub const ORDERED_INDEXES_PER_TABLE_MAX: usize = 64;
/// Most columns in a key (primary or index).
pub const KEY_COLUMNS_MAX: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    pub column_type: ColumnType,
    pub nullable: bool,
}

impl ColumnDef {
    pub fn new(name: &str, column_type: ColumnType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: name.to_string(),
            column_type,
            nullable,
        }
    }
}

/// An ordered index over one or more columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub name: String,
    pub columns: Vec<ColumnId>,
    pub unique: bool,
}

/// Where a column's value sits in a stored row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the fixed part at `offset` (from the start of the fixed part), `size` bytes.
    Fixed { offset: u32, size: u32 },
    /// The `ordinal`-th entry of the variable part, at most `length_max` bytes.
    Var { ordinal: u16, length_max: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnLayout {
    /// The column's bit in the null bitmap, if it is nullable.
    pub null_bit: Option<u16>,
    pub place: Place,
}

/// The shape of a table's stored rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLayout {
    /// Bytes of null bitmap at the start of the fixed part.
    pub null_bitmap_bytes: u32,
    /// Bytes of the fixed part: null bitmap and fixed columns.
    pub fixed_bytes: u32,
    /// Number of variable-size columns.
    pub var_columns: u16,
    /// Largest possible variable part, length prefixes included.
    pub var_bytes_max: u32,
    pub columns: Vec<ColumnLayout>,
}

impl RowLayout {
    fn new(columns: &[ColumnDef]) -> RowLayout {
        let nullable = columns.iter().filter(|c| c.nullable).count() as u32;
        let null_bitmap_bytes = nullable.div_ceil(8);
        let mut offset = null_bitmap_bytes;
        let mut null_bits = 0u16;
        let mut var_ordinal = 0u16;
        let mut var_bytes_max = 0u32;
        let mut layouts = Vec::with_capacity(columns.len());
        for column in columns {
            let null_bit = column.nullable.then(|| {
                null_bits += 1;
                null_bits - 1
            });
            let place = match column.column_type.storage() {
                Storage::Fixed(size) => {
                    let place = Place::Fixed { offset, size };
                    offset += size;
                    place
                }
                Storage::Var(length_max) => {
                    let place = Place::Var {
                        ordinal: var_ordinal,
                        length_max,
                    };
                    var_ordinal += 1;
                    var_bytes_max = var_bytes_max.saturating_add(2 + length_max);
                    place
                }
            };
            layouts.push(ColumnLayout { null_bit, place });
        }
        RowLayout {
            null_bitmap_bytes,
            fixed_bytes: offset,
            var_columns: var_ordinal,
            var_bytes_max,
            columns: layouts,
        }
    }
}

/// A table's definition: columns, primary key, ordered indexes, row layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// The primary key's columns, in key order.
    pub primary_key: Vec<ColumnId>,
    pub ordered_indexes: Vec<IndexDef>,
    pub layout: RowLayout,
}

impl TableDef {
    /// Validates a definition the way MySQL's CREATE TABLE does and derives its layout.
    pub fn new(
        name: &str,
        columns: Vec<ColumnDef>,
        primary_key: Vec<ColumnId>,
        ordered_indexes: Vec<IndexDef>,
    ) -> Result<TableDef, Error> {
        if columns.is_empty() {
            return Err(Error::new(
                ErrorCode::WrongColumnSpec,
                "a table needs at least one column",
            ));
        }
        if columns.len() > COLUMNS_PER_TABLE_MAX {
            return Err(Error::new(
                ErrorCode::TooManyColumns,
                "at most 512 columns per table",
            ));
        }
        for (i, column) in columns.iter().enumerate() {
            column.column_type.validate().map_err(|e| {
                Error::new(e.code, format!("column '{}': {}", column.name, e.detail))
            })?;
            if columns[..i]
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(&column.name))
            {
                return Err(Error::new(
                    ErrorCode::WrongColumnSpec,
                    format!("duplicate column name '{}'", column.name),
                ));
            }
        }
        if primary_key.is_empty() {
            return Err(ErrorCode::PrimaryKeyRequired.into());
        }
        if ordered_indexes.len() > ORDERED_INDEXES_PER_TABLE_MAX {
            return Err(Error::new(
                ErrorCode::TooManyKeys,
                "at most 64 ordered indexes per table",
            ));
        }
        let check_key = |key: &[ColumnId], what: &str| -> Result<(), Error> {
            if key.is_empty() || key.len() > KEY_COLUMNS_MAX {
                return Err(Error::new(
                    ErrorCode::WrongColumnSpec,
                    format!("{what} must have 1..=32 columns"),
                ));
            }
            for (i, &id) in key.iter().enumerate() {
                let Some(column) = columns.get(usize::from(id)) else {
                    return Err(Error::new(
                        ErrorCode::NoSuchColumn,
                        format!("{what} names column #{id}"),
                    ));
                };
                if column.column_type.is_blob() {
                    return Err(Error::new(
                        ErrorCode::BlobInKey,
                        format!("column '{}' in {what}", column.name),
                    ));
                }
                if key[..i].contains(&id) {
                    return Err(Error::new(
                        ErrorCode::WrongColumnSpec,
                        format!("{what} names column '{}' twice", column.name),
                    ));
                }
            }
            Ok(())
        };
        check_key(&primary_key, "the primary key")?;
        for index in &ordered_indexes {
            check_key(&index.columns, "an index")?;
        }
        // MySQL makes primary key columns NOT NULL.
        let mut columns = columns;
        for &id in &primary_key {
            columns[usize::from(id)].nullable = false;
        }
        let layout = RowLayout::new(&columns);
        // BLOB and TEXT are left out of the definition-time check, as in
        // MySQL; their actual length is checked on every write.
        let declared: u32 = layout.fixed_bytes
            + columns
                .iter()
                .filter(|c| !c.column_type.is_blob())
                .map(|c| match c.column_type.storage() {
                    Storage::Var(max) => 2 + max,
                    Storage::Fixed(_) => 0,
                })
                .sum::<u32>();
        if declared > ROW_SIZE_MAX {
            return Err(Error::new(
                ErrorCode::RowTooLarge,
                format!("table '{name}' has a largest row of {declared} bytes"),
            ));
        }
        Ok(TableDef {
            name: name.to_string(),
            columns,
            primary_key,
            ordered_indexes,
            layout,
        })
    }

    /// The column with this name (case-insensitive, as MySQL compares column names).
    pub fn column_id(&self, name: &str) -> Option<ColumnId> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
            .map(|i| i as ColumnId)
    }

    pub fn column_type(&self, id: ColumnId) -> &ColumnType {
        &self.columns[usize::from(id)].column_type
    }
}
