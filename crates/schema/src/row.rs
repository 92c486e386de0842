//! The stored row and the AttrInfo stream.
//!
//! ## Stored row (format version 1)
//! Fixed part, `layout.fixed_bytes` bytes:
//! - null bitmap, `layout.null_bitmap_bytes` bytes; bit `b` is byte `b / 8`,
//!   mask `1 << (b % 8)`; a set bit means NULL;
//! - each fixed-size column at its `Place::Fixed` offset, in its storage
//!   encoding (see `value`). A NULL fixed column holds zero bytes.
//!
//! Variable part: for each variable-size column in column order, a
//! little-endian `u16` length and that many bytes. A NULL column has length 0
//! and its null bit set.
//!
//! ## AttrInfo stream (format version 1)
//! How values travel into and out of the engine: a sequence of entries, each a
//! little-endian `u16` column id, a little-endian `u16` length — `0xFFFF`
//! means NULL and no bytes follow — and the value's bytes in storage encoding.
//! Inserts carry every column they set, updates the columns they change,
//! reads return the columns asked for, in the order asked.

use crate::error::{Error, ErrorCode};
use crate::table::{COLUMNS_PER_TABLE_MAX, ColumnId, Place, ROW_SIZE_MAX, RowLayout, TableDef};

/// The length that marks NULL in an AttrInfo entry.
pub const NULL_LENGTH: u16 = 0xFFFF;

/// A stored row, borrowed from wherever the engine keeps it.
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a> {
    pub fixed: &'a [u8],
    pub var: &'a [u8],
}

impl<'a> RowView<'a> {
    pub fn is_null(&self, layout: &RowLayout, column: ColumnId) -> bool {
        match layout.columns[usize::from(column)].null_bit {
            Some(bit) => self.fixed[usize::from(bit / 8)] & (1 << (bit % 8)) != 0,
            None => false,
        }
    }

    /// The column's stored bytes, or `None` when it is NULL.
    #[inline]
    pub fn column(&self, layout: &RowLayout, column: ColumnId) -> Option<&'a [u8]> {
        if self.is_null(layout, column) {
            return None;
        }
        match layout.columns[usize::from(column)].place {
            Place::Fixed { offset, size } => {
                Some(&self.fixed[offset as usize..(offset + size) as usize])
            }
            Place::Var { ordinal, .. } => Some(var_entry(self.var, ordinal)),
        }
    }

    /// Bytes of the whole row, fixed and variable parts.
    pub fn size_bytes(&self) -> usize {
        self.fixed.len() + self.var.len()
    }
}

#[inline]
fn var_entry(var: &[u8], ordinal: u16) -> &[u8] {
    let mut position = 0usize;
    for _ in 0..ordinal {
        let length = u16::from_le_bytes([var[position], var[position + 1]]) as usize;
        position += 2 + length;
    }
    let length = u16::from_le_bytes([var[position], var[position + 1]]) as usize;
    &var[position + 2..position + 2 + length]
}

/// Appends AttrInfo entries to a caller-owned buffer.
pub struct AttrInfoWriter<'b> {
    pub buffer: &'b mut Vec<u8>,
}

impl<'b> AttrInfoWriter<'b> {
    pub fn new(buffer: &'b mut Vec<u8>) -> AttrInfoWriter<'b> {
        AttrInfoWriter { buffer }
    }

    /// Appends one column; `None` is NULL.
    #[inline]
    pub fn push(&mut self, column: ColumnId, value: Option<&[u8]>) {
        self.buffer.extend_from_slice(&column.to_le_bytes());
        match value {
            None => self.buffer.extend_from_slice(&NULL_LENGTH.to_le_bytes()),
            Some(bytes) => {
                assert!(
                    bytes.len() < usize::from(NULL_LENGTH),
                    "AttrInfo value too long"
                );
                self.buffer
                    .extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                self.buffer.extend_from_slice(bytes);
            }
        }
    }

    /// Appends one non-NULL column whose bytes `encode` appends to the
    /// buffer, without a buffer of their own; on an error nothing of the
    /// column stays.
    #[inline]
    pub fn push_with<E>(
        &mut self,
        column: ColumnId,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.buffer.len();
        self.buffer.extend_from_slice(&column.to_le_bytes());
        self.buffer.extend_from_slice(&0u16.to_le_bytes());
        let value_start = self.buffer.len();
        if let Err(error) = encode(self.buffer) {
            self.buffer.truncate(start);
            return Err(error);
        }
        let length = self.buffer.len() - value_start;
        assert!(length < usize::from(NULL_LENGTH), "AttrInfo value too long");
        self.buffer[value_start - 2..value_start].copy_from_slice(&(length as u16).to_le_bytes());
        Ok(())
    }
}

/// Iterates AttrInfo entries; a truncated stream yields one error and stops.
#[derive(Clone)]
pub struct AttrInfoReader<'a> {
    bytes: &'a [u8],
}

impl<'a> AttrInfoReader<'a> {
    pub fn new(bytes: &'a [u8]) -> AttrInfoReader<'a> {
        AttrInfoReader { bytes }
    }

    /// The value of `column` in the stream: `None` if absent, `Some(None)` if NULL.
    pub fn find(bytes: &'a [u8], column: ColumnId) -> Result<Option<Option<&'a [u8]>>, Error> {
        let mut found = None;
        for entry in AttrInfoReader::new(bytes) {
            let (id, value) = entry?;
            if id == column {
                found = Some(value);
            }
        }
        Ok(found)
    }
}

impl<'a> Iterator for AttrInfoReader<'a> {
    type Item = Result<(ColumnId, Option<&'a [u8]>), Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.bytes.is_empty() {
            return None;
        }
        if self.bytes.len() < 4 {
            self.bytes = &[];
            return Some(Err(Error::new(
                ErrorCode::WrongValue,
                "truncated AttrInfo header",
            )));
        }
        let column = u16::from_le_bytes([self.bytes[0], self.bytes[1]]);
        let length = u16::from_le_bytes([self.bytes[2], self.bytes[3]]);
        if length == NULL_LENGTH {
            self.bytes = &self.bytes[4..];
            return Some(Ok((column, None)));
        }
        let end = 4 + usize::from(length);
        if self.bytes.len() < end {
            self.bytes = &[];
            return Some(Err(Error::new(
                ErrorCode::WrongValue,
                "truncated AttrInfo value",
            )));
        }
        let value = &self.bytes[4..end];
        self.bytes = &self.bytes[end..];
        Some(Ok((column, Some(value))))
    }
}

/// Builds stored rows from AttrInfo, for inserts (from nothing) and updates
/// (from the current row). Holds no state between calls beyond scratch space.
pub struct RowBuilder {
    /// Per variable column: 0 = keep the base row's value (or NULL), otherwise
    /// 1 + the offset of the entry's header in the AttrInfo stream.
    var_sources: Vec<u32>,
}

impl Default for RowBuilder {
    fn default() -> Self {
        RowBuilder {
            var_sources: Vec::with_capacity(COLUMNS_PER_TABLE_MAX),
        }
    }
}

impl RowBuilder {
    /// Writes the new row's fixed part into `fixed` (exactly
    /// `layout.fixed_bytes` long) and its variable part into `var` (cleared
    /// first). With `base`, columns absent from `attrinfo` keep the base
    /// row's values (an update); without it they are NULL, and a NOT NULL
    /// column that is absent is an error (an insert).
    ///
    /// `var` should have capacity `ROW_SIZE_MAX`; then no allocation happens.
    pub fn build(
        &mut self,
        table: &TableDef,
        base: Option<RowView<'_>>,
        attrinfo: &[u8],
        fixed: &mut [u8],
        var: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let layout = &table.layout;
        assert_eq!(fixed.len(), layout.fixed_bytes as usize);
        let mut given = [0u64; COLUMNS_PER_TABLE_MAX / 64];
        match base {
            Some(row) => fixed.copy_from_slice(row.fixed),
            None => {
                fixed.fill(0);
                for column in &layout.columns {
                    if let Some(bit) = column.null_bit {
                        fixed[usize::from(bit / 8)] |= 1 << (bit % 8);
                    }
                }
            }
        }
        self.var_sources.clear();
        self.var_sources.resize(usize::from(layout.var_columns), 0);

        let mut offset = 0usize;
        let mut reader = AttrInfoReader::new(attrinfo);
        while let Some(entry) = reader.next() {
            let (column, value) = entry?;
            let entry_offset = offset;
            offset = attrinfo.len() - reader.bytes.len();
            let Some(column_layout) = layout.columns.get(usize::from(column)) else {
                return Err(Error::new(
                    ErrorCode::NoSuchColumn,
                    "AttrInfo names an unknown column id",
                ));
            };
            given[usize::from(column / 64)] |= 1 << (column % 64);
            match column_layout.null_bit {
                Some(bit) => {
                    let mask = 1u8 << (bit % 8);
                    if value.is_none() {
                        fixed[usize::from(bit / 8)] |= mask;
                    } else {
                        fixed[usize::from(bit / 8)] &= !mask;
                    }
                }
                None if value.is_none() => return Err(ErrorCode::NullNotAllowed.into()),
                None => {}
            }
            match column_layout.place {
                Place::Fixed { offset: at, size } => {
                    let target = &mut fixed[at as usize..(at + size) as usize];
                    match value {
                        Some(bytes) if bytes.len() == size as usize => {
                            target.copy_from_slice(bytes)
                        }
                        Some(_) => {
                            return Err(Error::new(
                                ErrorCode::WrongValue,
                                "fixed-size column given a value of the wrong length",
                            ));
                        }
                        None => target.fill(0),
                    }
                }
                Place::Var {
                    ordinal,
                    length_max,
                } => {
                    if let Some(bytes) = value
                        && bytes.len() > length_max as usize
                    {
                        return Err(ErrorCode::DataTooLong.into());
                    }
                    self.var_sources[usize::from(ordinal)] = entry_offset as u32 + 1;
                }
            }
        }
        if base.is_none() {
            for (id, column) in layout.columns.iter().enumerate() {
                if column.null_bit.is_none() && given[id / 64] & (1 << (id % 64)) == 0 {
                    return Err(ErrorCode::NullNotAllowed.into());
                }
            }
        }

        var.clear();
        let mut base_position = 0usize;
        for ordinal in 0..usize::from(layout.var_columns) {
            let base_value = base.map(|row| {
                let length =
                    u16::from_le_bytes([row.var[base_position], row.var[base_position + 1]])
                        as usize;
                let value = &row.var[base_position + 2..base_position + 2 + length];
                base_position += 2 + length;
                value
            });
            let value: &[u8] = match self.var_sources[ordinal] {
                0 => base_value.unwrap_or(&[]),
                source => {
                    let at = source as usize - 1;
                    let length = u16::from_le_bytes([attrinfo[at + 2], attrinfo[at + 3]]);
                    if length == NULL_LENGTH {
                        &[]
                    } else {
                        &attrinfo[at + 4..at + 4 + usize::from(length)]
                    }
                }
            };
            var.extend_from_slice(&(value.len() as u16).to_le_bytes());
            var.extend_from_slice(value);
        }
        if fixed.len() + var.len() > ROW_SIZE_MAX as usize {
            return Err(ErrorCode::RowTooLarge.into());
        }
        Ok(())
    }
}

/// Appends the requested columns of `row` to `out` as AttrInfo.
#[inline]
pub fn project(layout: &RowLayout, row: RowView<'_>, columns: &[ColumnId], out: &mut Vec<u8>) {
    let mut writer = AttrInfoWriter::new(out);
    for &column in columns {
        writer.push(column, row.column(layout, column));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::ColumnDef;
    use crate::types::{Collation, ColumnType};

    fn table() -> TableDef {
        TableDef::new(
            "t",
            vec![
                ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
                ColumnDef::new(
                    "name",
                    ColumnType::Varchar {
                        length: 10,
                        collation: Collation::Utf8mb4AiCi,
                    },
                    true,
                ),
                ColumnDef::new("n", ColumnType::SmallInt { unsigned: false }, true),
                ColumnDef::new("b", ColumnType::Varbinary { length: 4 }, false),
            ],
            vec![0],
            vec![],
        )
        .unwrap()
    }

    fn build(
        table: &TableDef,
        base: Option<RowView<'_>>,
        attrinfo: &[u8],
    ) -> Result<(Vec<u8>, Vec<u8>), Error> {
        let mut fixed = vec![0; table.layout.fixed_bytes as usize];
        let mut var = Vec::new();
        RowBuilder::default().build(table, base, attrinfo, &mut fixed, &mut var)?;
        Ok((fixed, var))
    }

    #[test]
    fn insert_then_update_keeps_untouched_columns() {
        let table = table();
        let mut attrinfo = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut attrinfo);
        writer.push(0, Some(&7i32.to_le_bytes()));
        writer.push(1, Some(b"abc"));
        writer.push(3, Some(b"xy"));
        let (fixed, var) = build(&table, None, &attrinfo).unwrap();
        let row = RowView {
            fixed: &fixed,
            var: &var,
        };
        assert_eq!(row.column(&table.layout, 0), Some(&7i32.to_le_bytes()[..]));
        assert_eq!(row.column(&table.layout, 1), Some(&b"abc"[..]));
        assert_eq!(row.column(&table.layout, 2), None);
        assert_eq!(row.column(&table.layout, 3), Some(&b"xy"[..]));

        let mut update = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut update);
        writer.push(1, None);
        writer.push(2, Some(&5i16.to_le_bytes()));
        let (fixed2, var2) = build(&table, Some(row), &update).unwrap();
        let row2 = RowView {
            fixed: &fixed2,
            var: &var2,
        };
        assert_eq!(row2.column(&table.layout, 1), None);
        assert_eq!(row2.column(&table.layout, 2), Some(&5i16.to_le_bytes()[..]));
        assert_eq!(row2.column(&table.layout, 3), Some(&b"xy"[..]));

        let mut out = Vec::new();
        project(&table.layout, row2, &[3, 1], &mut out);
        let entries: Vec<_> = AttrInfoReader::new(&out).map(|e| e.unwrap()).collect();
        assert_eq!(entries, vec![(3, Some(&b"xy"[..])), (1, None)]);
    }

    #[test]
    fn push_with_writes_what_push_writes_and_nothing_on_an_error() {
        let mut pushed = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut pushed);
        writer.push(3, Some(b"xyz"));
        writer.push(1, Some(b""));
        let mut encoded = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut encoded);
        writer
            .push_with(3, |out| {
                out.extend_from_slice(b"xyz");
                Ok::<(), ()>(())
            })
            .unwrap();
        writer.push_with(1, |_| Ok::<(), ()>(())).unwrap();
        let before = writer.buffer.len();
        assert_eq!(
            writer.push_with(2, |out| {
                out.extend_from_slice(b"half");
                Err("too long")
            }),
            Err("too long")
        );
        assert_eq!(writer.buffer.len(), before);
        assert_eq!(encoded, pushed);
    }

    #[test]
    fn insert_errors() {
        let table = table();
        let mut attrinfo = Vec::new();
        AttrInfoWriter::new(&mut attrinfo).push(0, Some(&7i32.to_le_bytes()));
        assert_eq!(
            build(&table, None, &attrinfo).unwrap_err().code,
            ErrorCode::NullNotAllowed
        );
        AttrInfoWriter::new(&mut attrinfo).push(3, Some(b"12345"));
        assert_eq!(
            build(&table, None, &attrinfo).unwrap_err().code,
            ErrorCode::DataTooLong
        );
        let mut bad = Vec::new();
        AttrInfoWriter::new(&mut bad).push(0, Some(&7i16.to_le_bytes()));
        assert_eq!(
            build(&table, None, &bad).unwrap_err().code,
            ErrorCode::WrongValue
        );
        assert_eq!(
            build(&table, None, &[1, 0, 5]).unwrap_err().code,
            ErrorCode::WrongValue
        );
    }

    #[test]
    fn row_size_limit_is_checked_at_definition_and_write() {
        let wide = |length: u16| {
            TableDef::new(
                "w",
                vec![
                    ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
                    ColumnDef::new("a", ColumnType::Varbinary { length }, true),
                    ColumnDef::new("b", ColumnType::Varbinary { length }, true),
                ],
                vec![0],
                vec![],
            )
        };
        assert!(wide(14_990).is_ok());
        assert_eq!(wide(15_000).unwrap_err().code, ErrorCode::RowTooLarge);

        let blob = TableDef::new(
            "b",
            vec![
                ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
                ColumnDef::new("b", ColumnType::Blob { length_max: 65_535 }, true),
            ],
            vec![0],
            vec![],
        )
        .unwrap();
        let mut attrinfo = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut attrinfo);
        writer.push(0, Some(&1i32.to_le_bytes()));
        writer.push(1, Some(&vec![7u8; 30_000]));
        assert_eq!(
            build(&blob, None, &attrinfo).unwrap_err().code,
            ErrorCode::RowTooLarge
        );
    }
}
