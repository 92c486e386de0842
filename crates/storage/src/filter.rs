//! Pushed conditions: a small interpreted program a scan runs on each row
//! inside the engine, so only matching rows leave it.
//!
//! The SQL layer writes a program with [`FilterBuilder`] (or by hand, in the
//! format below) and sends it with the scan request. The engine validates it
//! once with [`Filter::compile`], which resolves every column to its place
//! in the stored row, and then calls [`Filter::matches`] on each row it
//! visits; `matches` never allocates and never re-parses the program.
//!
//! ## Program format (version 1)
//!
//! Every multi-byte integer is little-endian. A program is:
//!
//! | bytes | content                                   |
//! |-------|-------------------------------------------|
//! | 1     | format version, [`FORMAT_VERSION`] (`1`)  |
//! | …     | one node: the condition's root            |
//!
//! and nothing after the root node. A node is a one-byte tag (see [`tag`])
//! followed by its operands, in prefix order (a group's children follow the
//! group's header):
//!
//! | tag    | node          | operands after the tag                         |
//! |--------|---------------|------------------------------------------------|
//! | `0x01` | AND           | count: u16, then `count` nodes                 |
//! | `0x02` | OR            | count: u16, then `count` nodes                 |
//! | `0x03` | NOT           | one node                                       |
//! | `0x10` | EQ `=`        | column: u16, value                             |
//! | `0x11` | NE `<>`       | column: u16, value                             |
//! | `0x12` | LT `<`        | column: u16, value                             |
//! | `0x13` | LE `<=`       | column: u16, value                             |
//! | `0x14` | GT `>`        | column: u16, value                             |
//! | `0x15` | GE `>=`       | column: u16, value                             |
//! | `0x16` | BETWEEN       | column: u16, low value, high value             |
//! | `0x17` | IN            | column: u16, count: u16, then `count` values   |
//! | `0x18` | IS NULL       | column: u16                                    |
//! | `0x19` | IS NOT NULL   | column: u16                                    |
//! | `0x1A` | LIKE          | column: u16, pattern, escape: u8               |
//! | `0x1B` | NOT LIKE      | column: u16, pattern, escape: u8               |
//!
//! - `column` is a column id of the table (its position in the column list).
//! - A **value** is a length (u16) and that many bytes: a non-NULL value in
//!   the column's storage encoding (`schema::value`, the same bytes the
//!   column holds in a stored row). A fixed-size column's value is exactly
//!   the column's size (BINARY(n) padded with zero bytes); a variable-size
//!   column's value (CHAR without trailing spaces, VARCHAR, …) is at most the
//!   column's maximum.
//!   There is no NULL constant: SQL's `c = NULL` is UNKNOWN on every row and
//!   is not worth pushing down.
//! - A **pattern** is a length (u16) and that many bytes of text in the
//!   column's character set, with `%` (any run of characters), `_` (any one
//!   character) and the escape byte, which makes the character after it
//!   literal. LIKE and NOT LIKE take CHAR, VARCHAR, TEXT, BINARY, VARBINARY
//!   and BLOB columns only. Under a utf8mb4 collation the pattern must be
//!   valid UTF-8 and the escape byte ASCII.
//!
//! For example, `c0 >= 5` on an INT column 0 is
//! `01 15 00 00 04 00 05 00 00 00`, and `c0 IS NULL OR c1 BETWEEN 1 AND 9`
//! (c1 a TINYINT) is `01 02 02 00 18 00 00 16 01 00 01 00 01 01 00 09`.
//!
//! ## Limits
//!
//! A program is at most [`PROGRAM_BYTES_MAX`] bytes, version byte included,
//! and nodes nest at most [`DEPTH_MAX`] deep (the root is at depth 1, a
//! group's children one deeper than the group). Both bound the work and the
//! stack `compile` and `matches` use on a program from the network.
//!
//! ## Semantics
//!
//! Conditions follow SQL's three-valued logic. A comparison, BETWEEN, IN or
//! LIKE on a NULL column value is UNKNOWN; NOT UNKNOWN is UNKNOWN; AND is
//! FALSE if any child is FALSE, else UNKNOWN if any child is UNKNOWN, else
//! TRUE; OR is TRUE if any child is TRUE, else UNKNOWN if any is UNKNOWN,
//! else FALSE. So an AND with no children is TRUE and an OR with none is
//! FALSE. IN is the OR of one equality per value: no match is FALSE, and an
//! IN with no values is FALSE even on a NULL column value. IS NULL and IS NOT
//! NULL are never UNKNOWN. A row matches only when its condition is TRUE.
//!
//! Values compare as SQL compares them (`schema::key::compare_values`): by
//! number, date or time, and strings under the column's collation, so
//! `'abc' = 'ABC'` under `utf8mb4_0900_ai_ci`. LIKE matches under the
//! column's collation (`schema::collation::like`); on CHAR columns it sees the
//! text without its trailing pad spaces, as MySQL returns CHAR values.

mod builder;
mod compile;
mod evaluate;

pub use builder::FilterBuilder;

use evaluate::{Node, Span};
use schema::{ColumnType, Error, RowView, TableDef};

/// The program format [`Filter::compile`] reads and [`FilterBuilder`] writes.
pub const FORMAT_VERSION: u8 = 1;

/// Largest program, in bytes, version byte included.
pub const PROGRAM_BYTES_MAX: usize = 64 * 1024;

/// Deepest nesting of nodes; the root is at depth 1.
pub const DEPTH_MAX: usize = 32;

/// The node tags of format version 1.
pub mod tag {
    /// Logical AND of `count: u16` child nodes.
    pub const AND: u8 = 0x01;
    /// Logical OR of `count: u16` child nodes.
    pub const OR: u8 = 0x02;
    /// Logical NOT of one child node.
    pub const NOT: u8 = 0x03;
    /// Column equals a value.
    pub const EQ: u8 = 0x10;
    /// Column differs from a value.
    pub const NE: u8 = 0x11;
    /// Column is less than a value.
    pub const LT: u8 = 0x12;
    /// Column is less than or equal to a value.
    pub const LE: u8 = 0x13;
    /// Column is greater than a value.
    pub const GT: u8 = 0x14;
    /// Column is greater than or equal to a value.
    pub const GE: u8 = 0x15;
    /// Column lies between two values, both included.
    pub const BETWEEN: u8 = 0x16;
    /// Column equals one of `count: u16` values.
    pub const IN: u8 = 0x17;
    /// Column is NULL.
    pub const IS_NULL: u8 = 0x18;
    /// Column is not NULL.
    pub const IS_NOT_NULL: u8 = 0x19;
    /// Column matches a LIKE pattern.
    pub const LIKE: u8 = 0x1A;
    /// Column does not match a LIKE pattern.
    pub const NOT_LIKE: u8 = 0x1B;
}

/// A validated filter program, ready to run on rows of one table.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The condition in prefix order; the root is `nodes[0]`.
    nodes: Vec<Node>,
    /// The program as received: the constants' bytes, which `Span`s point into.
    program: Box<[u8]>,
    /// Types of the columns compared through `compare_values`, which
    /// `Node::Compare`, `Between` and `In` refer to by index.
    column_types: Vec<ColumnType>,
    /// Order keys of the integer IN lists, each list sorted.
    integers: Vec<u64>,
    /// Values of the other IN lists, each list sorted by `compare_values`.
    values: Vec<Span>,
    /// The table shape the filter was compiled for, checked in debug builds
    /// so a filter is not run on another table's rows by mistake.
    columns: usize,
    fixed_bytes: u32,
}

impl Filter {
    /// Validates `program` against `table` (column ids, value lengths,
    /// nesting). Runs once per scan; may allocate.
    ///
    /// Errors are `InvalidFilter`, naming the byte offset and the problem,
    /// or `NoSuchColumn` for a column id the table does not have.
    pub fn compile(table: &TableDef, program: &[u8]) -> Result<Filter, Error> {
        compile::compile(table, program)
    }

    /// Whether `row` satisfies the condition (SQL three-valued logic: a row
    /// whose condition is UNKNOWN does not match). Never allocates.
    #[inline]
    pub fn matches(&self, table: &TableDef, row: RowView<'_>) -> bool {
        debug_assert!(
            table.columns.len() == self.columns && table.layout.fixed_bytes == self.fixed_bytes,
            "filter compiled for another table than '{}'",
            table.name
        );
        self.evaluate(0, row).0 == evaluate::Truth::True
    }
}
