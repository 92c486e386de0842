//! The compiled form of a filter and how it runs on one row.
//!
//! `compile` turns the program into a flat list of nodes in prefix order.
//! Every column is resolved to where its null bit and bytes sit in the stored
//! row, so running the filter reads the row directly, without consulting the
//! layout. AND and OR record where their subtree ends, so a decided group
//! skips its remaining children without walking them.
//!
//! Comparisons on integer columns take a fast path: the constants are turned
//! into order keys once, and the row's bytes are loaded and compared as one
//! `u64` without calling `compare_values`. Everything else compares through
//! `schema::key::compare_values` and `schema::collation::like`.
//!
//! Nothing here allocates: evaluation is a recursion over the node list,
//! bounded by `DEPTH_MAX`.

use super::Filter;
use schema::{Collation, RowView, collation, key};
use std::cmp::Ordering;

/// SQL's three truth values, ordered so that AND is the minimum of its
/// operands and OR the maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Truth {
    False,
    Unknown,
    True,
}

impl Truth {
    #[inline]
    fn negate(self) -> Truth {
        match self {
            Truth::False => Truth::True,
            Truth::Unknown => Truth::Unknown,
            Truth::True => Truth::False,
        }
    }

    #[inline]
    fn from_bool(value: bool) -> Truth {
        if value { Truth::True } else { Truth::False }
    }
}

/// A range of the program's bytes: a constant or a pattern.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub start: u32,
    pub length: u32,
}

/// Where a column's value sits in a stored row.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Location {
    /// `size` bytes at `offset` in the fixed part.
    Fixed { offset: u32, size: u32 },
    /// The `ordinal`-th entry of the variable part.
    Var { ordinal: u16 },
}

/// A column's null bit and value, resolved from the table's layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnAccess {
    /// The byte of the null bitmap holding the column's null bit.
    pub null_byte: u16,
    /// The null bit's mask in that byte; 0 for a NOT NULL column, which
    /// then never reads the bitmap (a table may have none).
    pub null_mask: u8,
    pub location: Location,
}

impl ColumnAccess {
    #[inline(always)]
    fn is_null(&self, row: &RowView<'_>) -> bool {
        self.null_mask != 0 && row.fixed[usize::from(self.null_byte)] & self.null_mask != 0
    }

    /// The column's stored bytes, or `None` when it is NULL.
    #[inline]
    fn bytes<'a>(&self, row: &RowView<'a>) -> Option<&'a [u8]> {
        if self.is_null(row) {
            return None;
        }
        Some(match self.location {
            Location::Fixed { offset, size } => {
                &row.fixed[offset as usize..offset as usize + size as usize]
            }
            Location::Var { ordinal } => var_entry(row.var, ordinal),
        })
    }
}

/// The `ordinal`-th entry of a variable part: each entry is a little-endian
/// u16 length and that many bytes (see `schema::row`).
#[inline]
fn var_entry(var: &[u8], ordinal: u16) -> &[u8] {
    let mut position = 0usize;
    for _ in 0..ordinal {
        position += 2 + usize::from(u16::from_le_bytes([var[position], var[position + 1]]));
    }
    let length = usize::from(u16::from_le_bytes([var[position], var[position + 1]]));
    &var[position + 2..position + 2 + length]
}

/// An integer column (TINYINT to BIGINT) read straight from the fixed part.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntegerAccess {
    pub null_byte: u16,
    /// As in `ColumnAccess`: 0 for a NOT NULL column.
    pub null_mask: u8,
    pub offset: u32,
    /// 1, 2, 3, 4 or 8 bytes.
    pub width: u8,
    pub signed: bool,
}

impl IntegerAccess {
    /// The column's order key (see `order_key`), or `None` when it is NULL.
    #[inline(always)]
    fn read(&self, row: &RowView<'_>) -> Option<u64> {
        if self.null_mask != 0 && row.fixed[usize::from(self.null_byte)] & self.null_mask != 0 {
            return None;
        }
        let offset = self.offset as usize;
        let bytes = &row.fixed[offset..offset + usize::from(self.width)];
        Some(order_key(bytes, self.signed))
    }
}

/// Maps a stored integer (little-endian, 1, 2, 3, 4 or 8 bytes) to a `u64`
/// that orders as the integer does: unsigned values as they are, signed ones
/// sign-extended with the sign bit flipped, so `i64::MIN` maps to 0.
#[inline(always)]
pub(crate) fn order_key(bytes: &[u8], signed: bool) -> u64 {
    let raw = match *bytes {
        [b0] => u64::from(b0),
        [b0, b1] => u64::from(u16::from_le_bytes([b0, b1])),
        [b0, b1, b2] => u64::from(u32::from_le_bytes([b0, b1, b2, 0])),
        [b0, b1, b2, b3] => u64::from(u32::from_le_bytes([b0, b1, b2, b3])),
        [b0, b1, b2, b3, b4, b5, b6, b7] => u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]),
        _ => unreachable!("compile only builds integer accesses of 1, 2, 3, 4 or 8 bytes"),
    };
    if signed {
        let unused_bits = 64 - 8 * bytes.len() as u32;
        ((((raw << unused_bits) as i64) >> unused_bits) as u64) ^ (1 << 63)
    } else {
        raw
    }
}

/// The six comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operator {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

impl Operator {
    /// Whether `column <op> constant` holds, given how the column compares to the constant.
    #[inline]
    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Operator::Equal => ordering == Ordering::Equal,
            Operator::NotEqual => ordering != Ordering::Equal,
            Operator::Less => ordering == Ordering::Less,
            Operator::LessOrEqual => ordering != Ordering::Greater,
            Operator::Greater => ordering == Ordering::Greater,
            Operator::GreaterOrEqual => ordering != Ordering::Less,
        }
    }
}

/// One node of a compiled condition.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// The children follow this node; the subtree ends before node `end`.
    And { end: u32 },
    /// As `And`.
    Or { end: u32 },
    /// The child follows this node.
    Not,
    /// IS NULL, or IS NOT NULL when `negated`.
    Null { column: ColumnAccess, negated: bool },
    /// `low <= column <= high` on order keys, or its negation when
    /// `negated`: EQ, NE, LT, LE, GT, GE and BETWEEN on an integer column.
    /// An empty range (`low > high`, as in `c < i64::MIN`) is never TRUE.
    IntegerRange {
        column: IntegerAccess,
        low: u64,
        high: u64,
        negated: bool,
    },
    /// IN on an integer column: `Filter::integers[first..first + count]`, sorted.
    IntegerIn {
        column: IntegerAccess,
        first: u32,
        count: u32,
    },
    /// A comparison through `compare_values` with `Filter::column_types[column_type]`,
    /// or of plain bytes when `bytewise` (the type's stored bytes sort as it does).
    Compare {
        column: ColumnAccess,
        column_type: u16,
        bytewise: bool,
        operator: Operator,
        value: Span,
    },
    /// BETWEEN through `compare_values`, or of plain bytes when `bytewise`.
    Between {
        column: ColumnAccess,
        column_type: u16,
        bytewise: bool,
        low: Span,
        high: Span,
    },
    /// IN through `compare_values`: `Filter::values[first..first + count]`, sorted.
    In {
        column: ColumnAccess,
        column_type: u16,
        first: u32,
        count: u32,
    },
    /// LIKE, or NOT LIKE when `negated`. `trim_pad` strips CHAR's pad spaces first.
    Like {
        column: ColumnAccess,
        collation: Collation,
        trim_pad: bool,
        pattern: Span,
        escape: u8,
        negated: bool,
    },
}

/// Bytewise order, settled by the first eight bytes as one big-endian number
/// whenever they differ (most rows), so no `memcmp` call is made for them.
#[inline]
fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(a_head), Some(b_head)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (a_number, b_number) = (u64::from_be_bytes(*a_head), u64::from_be_bytes(*b_head));
        if a_number != b_number {
            return a_number.cmp(&b_number);
        }
    }
    a.cmp(b)
}

impl Filter {
    /// The truth of the subtree at `index` on `row`, and the index just past the subtree.
    pub(crate) fn evaluate(&self, index: usize, row: RowView<'_>) -> (Truth, usize) {
        match &self.nodes[index] {
            Node::And { end } => {
                let end = *end as usize;
                let mut result = Truth::True;
                let mut child = index + 1;
                while child < end {
                    let (truth, next) = self.evaluate(child, row);
                    if truth == Truth::False {
                        return (Truth::False, end);
                    }
                    result = result.min(truth);
                    child = next;
                }
                (result, end)
            }
            Node::Or { end } => {
                let end = *end as usize;
                let mut result = Truth::False;
                let mut child = index + 1;
                while child < end {
                    let (truth, next) = self.evaluate(child, row);
                    if truth == Truth::True {
                        return (Truth::True, end);
                    }
                    result = result.max(truth);
                    child = next;
                }
                (result, end)
            }
            Node::Not => {
                let (truth, next) = self.evaluate(index + 1, row);
                (truth.negate(), next)
            }
            leaf => (self.evaluate_leaf(leaf, &row), index + 1),
        }
    }

    #[inline(always)]
    fn evaluate_leaf(&self, node: &Node, row: &RowView<'_>) -> Truth {
        match node {
            Node::IntegerRange {
                column,
                low,
                high,
                negated,
            } => match column.read(row) {
                None => Truth::Unknown,
                Some(value) => Truth::from_bool((*low <= value && value <= *high) != *negated),
            },
            Node::Null { column, negated } => Truth::from_bool(column.is_null(row) != *negated),
            Node::IntegerIn {
                column,
                first,
                count,
            } => match column.read(row) {
                // An IN with no values is an OR with no children: FALSE, even on NULL.
                _ if *count == 0 => Truth::False,
                None => Truth::Unknown,
                Some(value) => {
                    let first = *first as usize;
                    let list = &self.integers[first..first + *count as usize];
                    Truth::from_bool(list.binary_search(&value).is_ok())
                }
            },
            Node::Compare {
                column,
                column_type,
                bytewise,
                operator,
                value,
            } => match column.bytes(row) {
                None => Truth::Unknown,
                Some(bytes) => {
                    let ordering = if *bytewise {
                        compare_bytes(bytes, self.constant(*value))
                    } else {
                        let column_type = &self.column_types[usize::from(*column_type)];
                        key::compare_values(column_type, bytes, self.constant(*value))
                    };
                    Truth::from_bool(operator.holds(ordering))
                }
            },
            Node::Between {
                column,
                column_type,
                bytewise,
                low,
                high,
            } => match column.bytes(row) {
                None => Truth::Unknown,
                Some(bytes) => {
                    let (low, high) = (self.constant(*low), self.constant(*high));
                    let inside = if *bytewise {
                        compare_bytes(bytes, low) != Ordering::Less
                            && compare_bytes(bytes, high) != Ordering::Greater
                    } else {
                        let column_type = &self.column_types[usize::from(*column_type)];
                        key::compare_values(column_type, bytes, low) != Ordering::Less
                            && key::compare_values(column_type, bytes, high) != Ordering::Greater
                    };
                    Truth::from_bool(inside)
                }
            },
            Node::In {
                column,
                column_type,
                first,
                count,
            } => match column.bytes(row) {
                _ if *count == 0 => Truth::False,
                None => Truth::Unknown,
                Some(bytes) => {
                    let column_type = &self.column_types[usize::from(*column_type)];
                    let first = *first as usize;
                    let list = &self.values[first..first + *count as usize];
                    let found = list
                        .binary_search_by(|value| {
                            key::compare_values(column_type, self.constant(*value), bytes)
                        })
                        .is_ok();
                    Truth::from_bool(found)
                }
            },
            Node::Like {
                column,
                collation,
                trim_pad,
                pattern,
                escape,
                negated,
            } => match column.bytes(row) {
                None => Truth::Unknown,
                Some(mut text) => {
                    if *trim_pad {
                        while let [rest @ .., b' '] = text {
                            text = rest;
                        }
                    }
                    let matched =
                        collation::like(*collation, text, self.constant(*pattern), *escape);
                    Truth::from_bool(matched != *negated)
                }
            },
            Node::And { .. } | Node::Or { .. } | Node::Not => {
                unreachable!("groups are evaluated by `evaluate`")
            }
        }
    }

    #[inline(always)]
    fn constant(&self, span: Span) -> &[u8] {
        let start = span.start as usize;
        &self.program[start..start + span.length as usize]
    }
}
