//! Validating a program against a table and compiling it into nodes.
//!
//! Everything a row-time check could trip over is checked here, once per
//! scan: the format version, every tag, every column id, every value's
//! length against its column, LIKE's column types and pattern encoding, the
//! nesting depth, the program size, and that the program is exactly one node
//! with nothing after it. The nodes `compile` produces can then be run
//! without any check beyond the slice bounds Rust enforces.

use super::evaluate::{ColumnAccess, IntegerAccess, Location, Node, Operator, Span, order_key};
use super::{DEPTH_MAX, FORMAT_VERSION, Filter, PROGRAM_BYTES_MAX, tag};
use schema::{Collation, ColumnDef, ColumnType, Error, ErrorCode, Place, Storage, TableDef, key};
use std::fmt::Display;

/// Validates `program` against `table` and compiles it (see `Filter::compile`).
pub(super) fn compile(table: &TableDef, program: &[u8]) -> Result<Filter, Error> {
    if program.len() > PROGRAM_BYTES_MAX {
        return Err(invalid(
            0,
            format!(
                "the program is {} bytes, more than the limit of {PROGRAM_BYTES_MAX}",
                program.len()
            ),
        ));
    }
    let Some(&version) = program.first() else {
        return Err(invalid(
            0,
            "the program is empty; it must start with the format version",
        ));
    };
    if version != FORMAT_VERSION {
        return Err(invalid(
            0,
            format!("format version {version} is not supported (only {FORMAT_VERSION})"),
        ));
    }
    let mut compiler = Compiler {
        table,
        program,
        position: 1,
        filter: Filter {
            nodes: Vec::new(),
            program: program.into(),
            column_types: Vec::new(),
            integers: Vec::new(),
            values: Vec::new(),
            columns: table.columns.len(),
            fixed_bytes: table.layout.fixed_bytes,
        },
    };
    compiler.node(1)?;
    if compiler.position != program.len() {
        return Err(invalid(
            compiler.position,
            format!(
                "{} bytes follow the end of the condition",
                program.len() - compiler.position
            ),
        ));
    }
    Ok(compiler.filter)
}

/// An `InvalidFilter` error about the byte at `at`.
fn invalid(at: usize, detail: impl Display) -> Error {
    Error::new(ErrorCode::InvalidFilter, format!("at byte {at}: {detail}"))
}

/// The integer type's signedness, for the types that take the integer fast path.
fn integer_signedness(column_type: &ColumnType) -> Option<bool> {
    match column_type {
        ColumnType::TinyInt { unsigned }
        | ColumnType::SmallInt { unsigned }
        | ColumnType::MediumInt { unsigned }
        | ColumnType::Int { unsigned }
        | ColumnType::BigInt { unsigned } => Some(!unsigned),
        _ => None,
    }
}

/// Whether LIKE applies to the type: character and byte strings.
/// Whether stored values of the type compare as plain bytes (what
/// `compare_values` does for them), so the filter can skip its dispatch.
fn is_bytewise(column_type: &ColumnType) -> bool {
    matches!(
        column_type,
        ColumnType::Decimal { .. }
            | ColumnType::Datetime { .. }
            | ColumnType::Timestamp { .. }
            | ColumnType::Time { .. }
            | ColumnType::Year
            | ColumnType::Bit { .. }
            | ColumnType::Binary { .. }
            | ColumnType::Varbinary { .. }
            | ColumnType::Blob { .. }
    )
}

fn is_string(column_type: &ColumnType) -> bool {
    matches!(
        column_type,
        ColumnType::Char { .. }
            | ColumnType::Varchar { .. }
            | ColumnType::Text { .. }
            | ColumnType::Binary { .. }
            | ColumnType::Varbinary { .. }
            | ColumnType::Blob { .. }
    )
}

fn is_utf8mb4(collation: Collation) -> bool {
    matches!(collation, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi)
}

/// A column named by the program, resolved against the table.
struct Column<'t> {
    definition: &'t ColumnDef,
    access: ColumnAccess,
}

struct Compiler<'a> {
    table: &'a TableDef,
    program: &'a [u8],
    /// The next byte to read.
    position: usize,
    filter: Filter,
}

impl<'a> Compiler<'a> {
    /// Compiles the node at `position`, which sits at `depth` (the root is 1).
    fn node(&mut self, depth: usize) -> Result<(), Error> {
        let at = self.position;
        if depth > DEPTH_MAX {
            return Err(invalid(
                at,
                format!("nodes nest deeper than the limit of {DEPTH_MAX}"),
            ));
        }
        let node_tag = self.read_u8("a node tag")?;
        match node_tag {
            tag::AND | tag::OR => {
                let count = self.read_u16("the child count of AND or OR")?;
                // A group of one is its child: skip the group node so the
                // child runs without a level of indirection.
                if count == 1 {
                    return self.node(depth + 1);
                }
                let group = self.filter.nodes.len();
                self.filter.nodes.push(Node::Not); // replaced below, once `end` is known
                for _ in 0..count {
                    self.node(depth + 1)?;
                }
                let end = self.filter.nodes.len() as u32;
                self.filter.nodes[group] = if node_tag == tag::AND {
                    Node::And { end }
                } else {
                    Node::Or { end }
                };
            }
            tag::NOT => {
                self.filter.nodes.push(Node::Not);
                self.node(depth + 1)?;
            }
            tag::EQ => self.comparison(Operator::Equal)?,
            tag::NE => self.comparison(Operator::NotEqual)?,
            tag::LT => self.comparison(Operator::Less)?,
            tag::LE => self.comparison(Operator::LessOrEqual)?,
            tag::GT => self.comparison(Operator::Greater)?,
            tag::GE => self.comparison(Operator::GreaterOrEqual)?,
            tag::BETWEEN => self.between()?,
            tag::IN => self.in_list()?,
            tag::IS_NULL | tag::IS_NOT_NULL => {
                let column = self.column()?;
                self.filter.nodes.push(Node::Null {
                    column: column.access,
                    negated: node_tag == tag::IS_NOT_NULL,
                });
            }
            tag::LIKE => self.like(at, false)?,
            tag::NOT_LIKE => self.like(at, true)?,
            unknown => {
                return Err(invalid(at, format!("unknown node tag 0x{unknown:02X}")));
            }
        }
        Ok(())
    }

    /// EQ, NE, LT, LE, GT, GE after the tag.
    fn comparison(&mut self, operator: Operator) -> Result<(), Error> {
        let column = self.column()?;
        let value = self.value(&column)?;
        let node = match self.integer_access(&column) {
            Some(integer) => {
                let constant = order_key(self.bytes_of(value), integer.signed);
                integer_comparison(integer, operator, constant)
            }
            None => Node::Compare {
                column: column.access,
                column_type: self.column_type_index(&column),
                bytewise: is_bytewise(&column.definition.column_type),
                operator,
                value,
            },
        };
        self.filter.nodes.push(node);
        Ok(())
    }

    /// BETWEEN after the tag.
    fn between(&mut self) -> Result<(), Error> {
        let column = self.column()?;
        let low = self.value(&column)?;
        let high = self.value(&column)?;
        let node = match self.integer_access(&column) {
            Some(integer) => Node::IntegerRange {
                column: integer,
                low: order_key(self.bytes_of(low), integer.signed),
                high: order_key(self.bytes_of(high), integer.signed),
                negated: false,
            },
            None => Node::Between {
                column: column.access,
                column_type: self.column_type_index(&column),
                bytewise: is_bytewise(&column.definition.column_type),
                low,
                high,
            },
        };
        self.filter.nodes.push(node);
        Ok(())
    }

    /// IN after the tag. The list is sorted here so that each row costs a
    /// binary search rather than a pass over the list.
    fn in_list(&mut self) -> Result<(), Error> {
        let column = self.column()?;
        let count = self.read_u16("the value count of IN")?;
        let mut values = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            values.push(self.value(&column)?);
        }
        let node = match self.integer_access(&column) {
            Some(integer) => {
                let mut keys: Vec<u64> = values
                    .iter()
                    .map(|value| order_key(self.bytes_of(*value), integer.signed))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                let first = self.filter.integers.len() as u32;
                self.filter.integers.extend_from_slice(&keys);
                Node::IntegerIn {
                    column: integer,
                    first,
                    count: keys.len() as u32,
                }
            }
            None => {
                let column_type = &column.definition.column_type;
                values.sort_by(|a, b| {
                    key::compare_values(column_type, self.bytes_of(*a), self.bytes_of(*b))
                });
                let first = self.filter.values.len() as u32;
                self.filter.values.extend_from_slice(&values);
                Node::In {
                    column: column.access,
                    column_type: self.column_type_index(&column),
                    first,
                    count: values.len() as u32,
                }
            }
        };
        self.filter.nodes.push(node);
        Ok(())
    }

    /// LIKE or NOT LIKE after the tag, which is at `at`.
    fn like(&mut self, at: usize, negated: bool) -> Result<(), Error> {
        let column = self.column()?;
        let column_type = &column.definition.column_type;
        let name = &column.definition.name;
        if !is_string(column_type) {
            return Err(invalid(
                at,
                format!("LIKE on column '{name}', which is not a string or binary column"),
            ));
        }
        let collation = column_type.collation();
        let pattern_at = self.position;
        let length = self.read_u16("the length of a LIKE pattern")?;
        let pattern = self.read_span(usize::from(length), "a LIKE pattern")?;
        // `like` may rely on utf8mb4 text being UTF-8, and an escape byte
        // that is not ASCII would be part of a character, not one.
        if is_utf8mb4(collation) && std::str::from_utf8(self.bytes_of(pattern)).is_err() {
            return Err(invalid(
                pattern_at,
                format!("the LIKE pattern on column '{name}' is not valid UTF-8"),
            ));
        }
        let escape_at = self.position;
        let escape = self.read_u8("the escape byte of a LIKE pattern")?;
        if is_utf8mb4(collation) && !escape.is_ascii() {
            return Err(invalid(
                escape_at,
                format!("the LIKE escape byte 0x{escape:02X} is not an ASCII character"),
            ));
        }
        self.filter.nodes.push(Node::Like {
            column: column.access,
            collation,
            // MySQL returns CHAR values without their pad spaces, and LIKE
            // sees what a SELECT would return.
            trim_pad: matches!(column_type, ColumnType::Char { .. }),
            pattern,
            escape,
            negated,
        });
        Ok(())
    }

    fn read_u8(&mut self, what: &str) -> Result<u8, Error> {
        let byte = *self
            .program
            .get(self.position)
            .ok_or_else(|| self.truncated(what))?;
        self.position += 1;
        Ok(byte)
    }

    fn read_u16(&mut self, what: &str) -> Result<u16, Error> {
        let bytes = self
            .program
            .get(self.position..self.position + 2)
            .ok_or_else(|| self.truncated(what))?;
        self.position += 2;
        Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
    }

    fn read_span(&mut self, length: usize, what: &str) -> Result<Span, Error> {
        if self.program.len() - self.position < length {
            return Err(self.truncated(what));
        }
        let span = Span {
            start: self.position as u32,
            length: length as u32,
        };
        self.position += length;
        Ok(span)
    }

    fn truncated(&self, what: &str) -> Error {
        invalid(self.position, format!("the program ends inside {what}"))
    }

    fn bytes_of(&self, span: Span) -> &'a [u8] {
        &self.program[span.start as usize..(span.start + span.length) as usize]
    }

    /// Reads a column id and resolves it against the table.
    fn column(&mut self) -> Result<Column<'a>, Error> {
        let at = self.position;
        let id = self.read_u16("a column id")?;
        let Some(definition) = self.table.columns.get(usize::from(id)) else {
            return Err(Error::new(
                ErrorCode::NoSuchColumn,
                format!(
                    "at byte {at}: the filter names column #{id}, but table '{}' has {} columns",
                    self.table.name,
                    self.table.columns.len()
                ),
            ));
        };
        let layout = self.table.layout.columns[usize::from(id)];
        let (null_byte, null_mask) = match layout.null_bit {
            Some(bit) => (bit / 8, 1u8 << (bit % 8)),
            None => (0, 0),
        };
        let location = match layout.place {
            Place::Fixed { offset, size } => Location::Fixed { offset, size },
            Place::Var { ordinal, .. } => Location::Var { ordinal },
        };
        Ok(Column {
            definition,
            access: ColumnAccess {
                null_byte,
                null_mask,
                location,
            },
        })
    }

    /// Reads a value for `column`, checking its length against the column's storage.
    fn value(&mut self, column: &Column<'_>) -> Result<Span, Error> {
        let at = self.position;
        let length = usize::from(self.read_u16("the length of a value")?);
        let name = &column.definition.name;
        match column.definition.column_type.storage() {
            Storage::Fixed(size) if length != size as usize => {
                return Err(invalid(
                    at,
                    format!(
                        "a value of {length} bytes for column '{name}', which stores exactly {size}"
                    ),
                ));
            }
            Storage::Var(length_max) if length > length_max as usize => {
                return Err(invalid(
                    at,
                    format!(
                        "a value of {length} bytes for column '{name}', which stores at most {length_max}"
                    ),
                ));
            }
            _ => {}
        }
        let span = self.read_span(length, "a value")?;
        // `compare_values` may rely on utf8mb4 text being UTF-8, as it is in
        // stored rows; a constant from the network gets the same guarantee.
        let column_type = &column.definition.column_type;
        if is_string(column_type)
            && is_utf8mb4(column_type.collation())
            && std::str::from_utf8(self.bytes_of(span)).is_err()
        {
            return Err(invalid(
                at,
                format!("the value for column '{name}' is not valid UTF-8"),
            ));
        }
        Ok(span)
    }

    /// The integer fast path's access to `column`, if it is an integer column.
    fn integer_access(&self, column: &Column<'_>) -> Option<IntegerAccess> {
        let signed = integer_signedness(&column.definition.column_type)?;
        let Location::Fixed { offset, size } = column.access.location else {
            return None;
        };
        Some(IntegerAccess {
            null_byte: column.access.null_byte,
            null_mask: column.access.null_mask,
            offset,
            width: size as u8,
            signed,
        })
    }

    /// The index of `column`'s type in `Filter::column_types`, added on first use.
    fn column_type_index(&mut self, column: &Column<'_>) -> u16 {
        let types = &mut self.filter.column_types;
        let column_type = &column.definition.column_type;
        let index = match types.iter().position(|known| known == column_type) {
            Some(index) => index,
            None => {
                types.push(column_type.clone());
                types.len() - 1
            }
        };
        // At most one entry per column, and a table has at most 512 columns.
        index as u16
    }
}

/// A comparison on an integer column as a range of order keys.
fn integer_comparison(column: IntegerAccess, operator: Operator, constant: u64) -> Node {
    // `low > high` is an empty range: the comparison is FALSE on every value.
    const EMPTY: (u64, u64) = (1, 0);
    let ((low, high), negated) = match operator {
        Operator::Equal => ((constant, constant), false),
        Operator::NotEqual => ((constant, constant), true),
        Operator::Less => (
            constant.checked_sub(1).map_or(EMPTY, |high| (0, high)),
            false,
        ),
        Operator::LessOrEqual => ((0, constant), false),
        Operator::Greater => (
            constant.checked_add(1).map_or(EMPTY, |low| (low, u64::MAX)),
            false,
        ),
        Operator::GreaterOrEqual => ((constant, u64::MAX), false),
    };
    Node::IntegerRange {
        column,
        low,
        high,
        negated,
    }
}
