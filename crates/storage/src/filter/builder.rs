//! `FilterBuilder`: writes filter programs in the format `Filter::compile` reads.
//!
//! Groups are written as they are begun, with a placeholder child count that
//! `end` fills in, so building is one pass over the condition. The builder
//! does not know the table: column ids and value lengths are checked by
//! `Filter::compile`; the builder checks only what it can alone (balanced
//! groups, NOT's single child, the u16 fields, the size and depth limits).

use super::{DEPTH_MAX, FORMAT_VERSION, PROGRAM_BYTES_MAX, tag};
use schema::{ColumnId, Error, ErrorCode};

/// Builds a filter program.
///
/// Leaves (`eq`, `is_null`, `like`, ...) and groups (`begin_and` ... `end`)
/// are added to the innermost open group. Nodes added outside any group are
/// ANDed: `finish` writes a single one as the root as it is, several under
/// an AND, and none as an empty AND (every row matches).
///
/// Values are a column's storage bytes (`schema::Value::encode`). Mistakes
/// — an `end` with no open group, a group left open, a NOT with other than
/// one child, a value, pattern or list longer than the format's u16 fields,
/// a program over `PROGRAM_BYTES_MAX` or `DEPTH_MAX` — do not panic: the
/// first one is kept and `finish` returns it as an `InvalidFilter` error,
/// since the values usually come from a user's query.
///
/// ```
/// use storage::filter::FilterBuilder;
/// // c0 >= 5 AND (c1 IS NULL OR NOT c1 = 7), c0 and c1 INT columns.
/// let program = FilterBuilder::new()
///     .ge(0, &5i32.to_le_bytes())
///     .begin_or()
///     .is_null(1)
///     .begin_not()
///     .eq(1, &7i32.to_le_bytes())
///     .end()
///     .end()
///     .finish()
///     .unwrap();
/// assert_eq!(program[0], storage::filter::FORMAT_VERSION);
/// ```
#[derive(Debug, Clone)]
pub struct FilterBuilder {
    /// Version byte, then the implicit top-level AND's header, then the nodes.
    bytes: Vec<u8>,
    /// Open groups, outermost first; `groups[0]` is the implicit top-level AND.
    groups: Vec<Group>,
    /// The deepest node so far, a top-level node being at depth 1.
    deepest: usize,
    /// The first mistake, reported by `finish`.
    error: Option<Error>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupKind {
    And,
    Or,
    Not,
}

#[derive(Debug, Clone, Copy)]
struct Group {
    kind: GroupKind,
    /// Where the group's u16 child count goes (unused for NOT).
    count_at: usize,
    children: usize,
}

/// Bytes of the implicit top-level AND's header: tag and u16 count.
const TOP_HEADER_BYTES: usize = 3;

impl Default for FilterBuilder {
    fn default() -> Self {
        FilterBuilder::new()
    }
}

impl FilterBuilder {
    pub fn new() -> FilterBuilder {
        FilterBuilder {
            bytes: vec![FORMAT_VERSION, tag::AND, 0, 0],
            groups: vec![Group {
                kind: GroupKind::And,
                count_at: 2,
                children: 0,
            }],
            deepest: 0,
            error: None,
        }
    }

    /// Begins an AND group; its children are the nodes added until `end`.
    pub fn begin_and(&mut self) -> &mut Self {
        self.begin_group(GroupKind::And, tag::AND)
    }

    /// Begins an OR group; its children are the nodes added until `end`.
    pub fn begin_or(&mut self) -> &mut Self {
        self.begin_group(GroupKind::Or, tag::OR)
    }

    /// Begins a NOT; exactly one node must be added before its `end`.
    pub fn begin_not(&mut self) -> &mut Self {
        self.begin_group(GroupKind::Not, tag::NOT)
    }

    /// Ends the innermost open group.
    pub fn end(&mut self) -> &mut Self {
        if self.groups.len() == 1 {
            self.fail("end() with no group open".to_string());
            return self;
        }
        let group = self
            .groups
            .pop()
            .expect("the top-level group is never popped");
        match group.kind {
            GroupKind::Not if group.children != 1 => {
                self.fail(format!(
                    "NOT ended with {} children instead of one",
                    group.children
                ));
            }
            GroupKind::Not => {}
            GroupKind::And | GroupKind::Or => {
                // `add_node` keeps `children` within u16.
                let count = (group.children as u16).to_le_bytes();
                self.bytes[group.count_at..group.count_at + 2].copy_from_slice(&count);
            }
        }
        self
    }

    /// `column = value`.
    pub fn eq(&mut self, column: ColumnId, value: &[u8]) -> &mut Self {
        self.comparison(tag::EQ, column, value)
    }

    /// `column <> value`.
    pub fn ne(&mut self, column: ColumnId, value: &[u8]) -> &mut Self {
        self.comparison(tag::NE, column, value)
    }

    /// `column < value`.
    pub fn lt(&mut self, column: ColumnId, value: &[u8]) -> &mut Self {
        self.comparison(tag::LT, column, value)
    }

    /// `column <= value`.
    pub fn le(&mut self, column: ColumnId, value: &[u8]) -> &mut Self {
        self.comparison(tag::LE, column, value)
    }

    /// `column > value`.
    pub fn gt(&mut self, column: ColumnId, value: &[u8]) -> &mut Self {
        self.comparison(tag::GT, column, value)
    }

    /// `column >= value`.
    pub fn ge(&mut self, column: ColumnId, value: &[u8]) -> &mut Self {
        self.comparison(tag::GE, column, value)
    }

    /// `column BETWEEN low AND high`, both ends included.
    pub fn between(&mut self, column: ColumnId, low: &[u8], high: &[u8]) -> &mut Self {
        self.leaf(tag::BETWEEN, column);
        self.value(low);
        self.value(high);
        self
    }

    /// `column IN (values...)`; an empty list is FALSE on every row.
    pub fn in_list(&mut self, column: ColumnId, values: &[&[u8]]) -> &mut Self {
        self.leaf(tag::IN, column);
        let Ok(count) = u16::try_from(values.len()) else {
            self.fail(format!(
                "IN list of {} values, more than {}",
                values.len(),
                u16::MAX
            ));
            return self;
        };
        self.bytes.extend_from_slice(&count.to_le_bytes());
        for value in values {
            self.value(value);
        }
        self
    }

    /// `column IS NULL`.
    pub fn is_null(&mut self, column: ColumnId) -> &mut Self {
        self.leaf(tag::IS_NULL, column);
        self
    }

    /// `column IS NOT NULL`.
    pub fn is_not_null(&mut self, column: ColumnId) -> &mut Self {
        self.leaf(tag::IS_NOT_NULL, column);
        self
    }

    /// `column LIKE pattern ESCAPE escape` (SQL's default escape is `b'\\'`).
    pub fn like(&mut self, column: ColumnId, pattern: &[u8], escape: u8) -> &mut Self {
        self.pattern(tag::LIKE, column, pattern, escape)
    }

    /// `column NOT LIKE pattern ESCAPE escape`.
    pub fn not_like(&mut self, column: ColumnId, pattern: &[u8], escape: u8) -> &mut Self {
        self.pattern(tag::NOT_LIKE, column, pattern, escape)
    }

    /// The program, or the first mistake made building it (see the type's doc).
    pub fn finish(&self) -> Result<Vec<u8>, Error> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        if self.groups.len() > 1 {
            return Err(invalid(format!(
                "{} groups begun but not ended",
                self.groups.len() - 1
            )));
        }
        let top_level = self.groups[0].children;
        let (program, depth) = if top_level == 1 {
            // A single node is the root itself: drop the implicit AND's header.
            let mut program = Vec::with_capacity(self.bytes.len() - TOP_HEADER_BYTES);
            program.push(FORMAT_VERSION);
            program.extend_from_slice(&self.bytes[1 + TOP_HEADER_BYTES..]);
            (program, self.deepest)
        } else {
            let mut program = self.bytes.clone();
            program[2..4].copy_from_slice(&(top_level as u16).to_le_bytes());
            // The AND is the root, one level above the top-level nodes.
            (program, self.deepest + 1)
        };
        if depth > DEPTH_MAX {
            return Err(invalid(format!(
                "nodes nest {depth} deep, more than {DEPTH_MAX}"
            )));
        }
        if program.len() > PROGRAM_BYTES_MAX {
            return Err(invalid(format!(
                "the program is {} bytes, more than {PROGRAM_BYTES_MAX}",
                program.len()
            )));
        }
        Ok(program)
    }

    /// Counts a new node in the innermost open group.
    fn add_node(&mut self) {
        self.deepest = self.deepest.max(self.groups.len());
        let group = self
            .groups
            .last_mut()
            .expect("the top-level group is always open");
        group.children += 1;
        let (kind, children) = (group.kind, group.children);
        if kind == GroupKind::Not && children > 1 {
            self.fail("NOT given a second child".to_string());
        } else if children > usize::from(u16::MAX) {
            self.fail(format!("a group of more than {} children", u16::MAX));
        }
    }

    fn begin_group(&mut self, kind: GroupKind, node_tag: u8) -> &mut Self {
        self.add_node();
        self.bytes.push(node_tag);
        let count_at = self.bytes.len();
        if kind != GroupKind::Not {
            self.bytes.extend_from_slice(&[0, 0]);
        }
        self.groups.push(Group {
            kind,
            count_at,
            children: 0,
        });
        self
    }

    fn leaf(&mut self, node_tag: u8, column: ColumnId) {
        self.add_node();
        self.bytes.push(node_tag);
        self.bytes.extend_from_slice(&column.to_le_bytes());
    }

    fn comparison(&mut self, node_tag: u8, column: ColumnId, value: &[u8]) -> &mut Self {
        self.leaf(node_tag, column);
        self.value(value);
        self
    }

    fn pattern(&mut self, node_tag: u8, column: ColumnId, pattern: &[u8], escape: u8) -> &mut Self {
        self.leaf(node_tag, column);
        self.value(pattern);
        self.bytes.push(escape);
        self
    }

    /// Appends a u16 length and the bytes.
    fn value(&mut self, value: &[u8]) {
        match u16::try_from(value.len()) {
            Ok(length) => {
                self.bytes.extend_from_slice(&length.to_le_bytes());
                self.bytes.extend_from_slice(value);
            }
            Err(_) => self.fail(format!(
                "a value of {} bytes, more than {}",
                value.len(),
                u16::MAX
            )),
        }
    }

    fn fail(&mut self, detail: String) {
        if self.error.is_none() {
            self.error = Some(invalid(detail));
        }
    }
}

fn invalid(detail: String) -> Error {
    Error::new(
        ErrorCode::InvalidFilter,
        format!("filter builder: {detail}"),
    )
}
