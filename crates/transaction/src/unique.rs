//! Unique indexes, as the coordinator keeps and uses them (NDB's way).
//!
//! Each unique index is a hidden table (`routing::UniqueIndex`): its key is
//! the index's columns, its other columns the base row's primary key.
//!
//! - **Lookups.** A read, update or delete by unique key first reads the
//!   index row with a lock (shared, or exclusive for a write), then runs
//!   the operation on the base table with the primary key found there. A
//!   read by unique key is a locked read: the index row and the base row
//!   stay locked until the transaction ends, so neither can change under
//!   the reader.
//! - **Maintenance.** A write on a table with unique indexes returns the
//!   row as it was before (the unique columns only); from that and the
//!   values written, the coordinator deletes the index rows of keys that
//!   went away and inserts those of keys that appeared, in the same
//!   transaction. An insert that finds the index key taken fails with a
//!   duplicate key, which the coordinator reports as NDB's unique
//!   constraint violation (893) and which aborts the transaction.
//!
//! A key with a NULL in any of its columns has no index row, so any number
//! of rows may hold it (MySQL's rule for UNIQUE).

use protocol::{Operation, OperationKind};
use schema::table::ColumnId;
use schema::{AttrInfoReader, AttrInfoWriter, Error, ErrorCode};

use crate::routing::{TableRoute, UniqueIndex};

/// One value of an AttrInfo stream: `None` is NULL.
type Value<'a> = Option<&'a [u8]>;

/// The value of `column` in `attrinfo`: `None` if absent, `Some(None)` if NULL.
fn find(attrinfo: &[u8], column: ColumnId) -> Result<Option<Value<'_>>, Error> {
    AttrInfoReader::find(attrinfo, column)
}

/// A unique-index operation on `route` becomes a lookup of the index row
/// and the operation to run on the base row once its key is known (its
/// key left empty). The operation's values and columns move into the
/// second.
pub fn lookup(
    route: &TableRoute,
    operation: &mut Operation,
) -> Result<(Operation, Operation), Error> {
    let position = operation.index.expect("a unique-index operation");
    let index = route.unique_index(position).ok_or_else(|| {
        Error::new(
            ErrorCode::NoSuchIndex,
            format!(
                "table {} has no unique index at position {position}",
                route.name
            ),
        )
    })?;
    let kind = match operation.kind {
        OperationKind::Insert | OperationKind::Write => {
            return Err(Error::new(
                ErrorCode::WrongTransactionState,
                format!(
                    "index {}: a row is inserted or written by its primary key, not by a unique index",
                    index.name
                ),
            ));
        }
        // Reads by unique key are locked reads (see the module notes).
        OperationKind::ReadCommitted => OperationKind::ReadShared,
        kind => kind,
    };
    let entries = AttrInfoReader::new(&operation.key).count();
    let mut key = Vec::with_capacity(operation.key.len());
    let mut writer = AttrInfoWriter::new(&mut key);
    for (position, &column) in index.columns.iter().enumerate() {
        match find(&operation.key, column)? {
            Some(Some(value)) => writer.push(position as ColumnId, Some(value)),
            Some(None) => {
                return Err(Error::new(
                    ErrorCode::NoSuchRow,
                    format!("index {}: no row has NULL as its unique key", index.name),
                ));
            }
            None => {
                return Err(Error::new(
                    ErrorCode::WrongKey,
                    format!(
                        "index {} needs column {}",
                        index.name,
                        route.def.columns[usize::from(column)].name
                    ),
                ));
            }
        }
    }
    if entries != index.columns.len() {
        return Err(Error::new(
            ErrorCode::WrongKey,
            format!(
                "index {} has {} columns; the key gives {entries}",
                index.name,
                index.columns.len()
            ),
        ));
    }
    let lock = if kind == OperationKind::ReadShared {
        OperationKind::ReadShared
    } else {
        OperationKind::ReadExclusive
    };
    let found = Operation {
        table: index.table,
        kind: lock,
        key,
        values: Vec::new(),
        columns: (0..route.def.primary_key.len())
            .map(|j| index.key_column(j))
            .collect(),
        ignore_error: operation.ignore_error,
        index: None,
    };
    let then = Operation {
        table: route.id,
        kind,
        key: Vec::new(),
        values: std::mem::take(&mut operation.values),
        columns: std::mem::take(&mut operation.columns),
        ignore_error: operation.ignore_error,
        index: None,
    };
    Ok((found, then))
}

/// The base table's primary key (AttrInfo) from an index row's key columns
/// as a lookup read them.
pub fn base_key(route: &TableRoute, index: &UniqueIndex, found: &[u8]) -> Result<Vec<u8>, Error> {
    let mut key = Vec::with_capacity(found.len());
    let mut writer = AttrInfoWriter::new(&mut key);
    for (j, &column) in route.def.primary_key.iter().enumerate() {
        match find(found, index.key_column(j))? {
            Some(value) => writer.push(column, value),
            None => {
                return Err(Error::new(
                    ErrorCode::WrongKey,
                    format!("index {}: its row lacks a key column", index.name),
                ));
            }
        }
    }
    Ok(key)
}

/// The values of `index`'s columns, or `None` when the key has a NULL (no
/// index row). `value_of` gives each column's value.
fn index_key<'a>(
    index: &UniqueIndex,
    mut value_of: impl FnMut(ColumnId) -> Result<Value<'a>, Error>,
) -> Result<Option<Vec<&'a [u8]>>, Error> {
    let mut key = Vec::with_capacity(index.columns.len());
    for &column in &index.columns {
        match value_of(column)? {
            Some(value) => key.push(value),
            None => return Ok(None),
        }
    }
    Ok(Some(key))
}

fn key_attrinfo(values: &[&[u8]], out: &mut Vec<u8>) {
    let mut writer = AttrInfoWriter::new(out);
    for (position, value) in values.iter().enumerate() {
        writer.push(position as ColumnId, Some(value));
    }
}

/// The index-row changes a confirmed write on `route` makes: `write` is
/// the operation as the API defined it (primary key and values), `before`
/// the unique columns of the row before it (empty when there was none).
pub fn maintenance(
    route: &TableRoute,
    write: &Operation,
    before: &[u8],
) -> Result<Vec<Operation>, Error> {
    debug_assert!(write.kind.is_write());
    let existed = !before.is_empty();
    let mut changes = Vec::new();
    for index in &route.unique_indexes {
        let old = if existed {
            index_key(index, |column| Ok(find(before, column)?.flatten()))?
        } else {
            None
        };
        let new = if write.kind == OperationKind::Delete {
            None
        } else {
            index_key(index, |column| match find(&write.values, column)? {
                Some(value) => Ok(value),
                // Not written: the row keeps the value it had, and a new
                // row gets NULL (columns have no other default).
                None if existed => Ok(find(before, column)?.flatten()),
                None => Ok(None),
            })?
        };
        if old == new {
            continue;
        }
        if let Some(old) = old {
            let mut key = Vec::new();
            key_attrinfo(&old, &mut key);
            changes.push(Operation {
                table: index.table,
                kind: OperationKind::Delete,
                key,
                ..Operation::default()
            });
        }
        if let Some(new) = new {
            let mut key = Vec::new();
            key_attrinfo(&new, &mut key);
            let mut values = key.clone();
            let mut writer = AttrInfoWriter::new(&mut values);
            for (j, &column) in route.def.primary_key.iter().enumerate() {
                let value = find(&write.key, column)?.ok_or_else(|| {
                    Error::new(ErrorCode::WrongKey, "the write's key lacks a key column")
                })?;
                writer.push(index.key_column(j), value);
            }
            changes.push(Operation {
                table: index.table,
                kind: OperationKind::Insert,
                key,
                values,
                ..Operation::default()
            });
        }
    }
    Ok(changes)
}
