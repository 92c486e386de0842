//! Pushed conditions: a small interpreted program a scan runs on each row
//! inside the engine, so only matching rows leave it.
//!
//! CONTRACT (implemented by the filter work item, which documents the
//! program's byte format here).

use schema::{Error, RowView, TableDef};

/// A validated filter program, ready to run on rows of one table.
#[derive(Debug, Clone)]
pub struct Filter {}

impl Filter {
    /// Validates `program` against `table` (column ids, value lengths,
    /// nesting). Runs once per scan; may allocate.
    pub fn compile(table: &TableDef, program: &[u8]) -> Result<Filter, Error> {
        let _ = (table, program);
        todo!("filter")
    }

    /// Whether `row` satisfies the condition (SQL three-valued logic: a row
    /// whose condition is UNKNOWN does not match). Never allocates.
    pub fn matches(&self, table: &TableDef, row: RowView<'_>) -> bool {
        let _ = (table, row);
        todo!("filter")
    }
}
