//! Auto-increment values (NDB's `getAutoIncrementValue`): each table has a
//! counter in the cluster, a one-row hidden sequence table
//! (`transaction::routing::sequence_table_id`) holding the next value to
//! hand out. A session takes `ndb_autoincrement_prefetch_sz` values at a
//! time in one short transaction (read the counter with an exclusive lock,
//! move it past the range, commit) and hands them out from memory.
//!
//! No value is handed out twice: a range belongs to the session whose
//! commit moved the counter past it. When that commit's outcome is unknown
//! (the connection failed while it was in flight), the range is dropped
//! unused; at worst the counter has a gap.

use std::sync::Arc;

use schema::Value;
use schema::table::ColumnId;
use transaction::TableRoute;
use transaction::routing::{
    SEQUENCE_KEY, SEQUENCE_KEY_COLUMN, SEQUENCE_NEXT_COLUMN, sequence_table_id,
};

use crate::error::{ClientError, ErrorClass, classify};
use crate::session::{Hint, LockMode, Session};
use protocol::ExecuteEnd;

/// `ndb_autoincrement_prefetch_sz`'s default (NDB's since 7.2).
pub const PREFETCH_DEFAULT: u32 = 1;
/// `ndb_autoincrement_prefetch_sz`'s largest value, as in NDB.
pub const PREFETCH_MAX: u32 = 65_536;
/// Attempts at taking a range when the counter is contended (lock
/// timeouts, two sessions creating the counter at once).
const FETCH_ATTEMPTS_MAX: u32 = 10;
/// MySQL's ER_AUTOINC_READ_FAILED: the counter cannot give another value.
const AUTO_INCREMENT_FAILED_MYSQL_CODE: u16 = 1467;
/// NDB's "tuple already existed" (another session created the counter).
const DUPLICATE_KEY: u16 = 630;
const NO_SUCH_ROW: u16 = 626;

impl Session {
    /// Sets how many values a fetch takes (`ndb_autoincrement_prefetch_sz`,
    /// 1 to 65536). Larger ranges cost fewer round trips; values a session
    /// does not use are lost when it ends, leaving gaps.
    pub fn set_auto_increment_prefetch(&mut self, values: u32) -> Result<(), ClientError> {
        if !(1..=PREFETCH_MAX).contains(&values) {
            return Err(ClientError::usage(format!(
                "ndb_autoincrement_prefetch_sz must be 1 to {PREFETCH_MAX}, not {values}"
            )));
        }
        self.auto_increment_prefetch = values;
        Ok(())
    }

    /// The next auto-increment value of `table`: unique across every
    /// session of every API node, increasing within a session.
    pub fn auto_increment(&mut self, table: &Arc<TableRoute>) -> Result<u64, ClientError> {
        if let Some(range) = self.auto_increment_ranges.get_mut(&table.id)
            && range.0 < range.1
        {
            range.0 += 1;
            return Ok(range.0 - 1);
        }
        let prefetch = u64::from(self.auto_increment_prefetch);
        let start = self.move_counter(table, |next| {
            next.checked_add(prefetch).ok_or_else(|| exhausted(table))
        })?;
        // `move_counter` moved the counter from `start` to `start + prefetch`.
        self.auto_increment_ranges
            .insert(table.id, (start + 1, start + prefetch));
        Ok(start)
    }

    /// Makes every value the cluster hands out for `table` from now on
    /// greater than `used` (after a row was inserted with an explicit
    /// value, as MySQL does). Values this session fetched earlier that are
    /// not above `used` are dropped.
    pub fn raise_auto_increment(
        &mut self,
        table: &Arc<TableRoute>,
        used: u64,
    ) -> Result<(), ClientError> {
        if let Some(range) = self.auto_increment_ranges.get_mut(&table.id) {
            range.0 = range.0.max(used.saturating_add(1));
        }
        let floor = used.checked_add(1).ok_or_else(|| exhausted(table))?;
        if self
            .auto_increment_floors
            .get(&table.id)
            .is_some_and(|known| *known >= floor)
        {
            return Ok(());
        }
        self.move_counter(table, |next| Ok(next.max(floor)))?;
        Ok(())
    }

    /// Runs one transaction that moves `table`'s counter from its value
    /// `next` to `to(next)`; returns `next`, and remembers that the counter
    /// reached `to(next)`. Retries what may succeed on retry.
    fn move_counter(
        &mut self,
        table: &Arc<TableRoute>,
        to: impl Fn(u64) -> Result<u64, ClientError>,
    ) -> Result<u64, ClientError> {
        let routing = self.cluster().routing();
        let sequence = routing
            .table(sequence_table_id(table.id))
            .cloned()
            .ok_or_else(|| {
                ClientError::new(
                    723,
                    format!("table {} has no auto-increment counter", table.name),
                )
            })?;
        let key: [(ColumnId, Value); 1] =
            [(SEQUENCE_KEY_COLUMN, Value::UInt(u64::from(SEQUENCE_KEY)))];
        let mut last_error = None;
        for _ in 0..FETCH_ATTEMPTS_MAX {
            match self.try_move_counter(&sequence, &key, &to) {
                Ok((next, moved)) => {
                    let known = self.auto_increment_floors.entry(table.id).or_default();
                    *known = (*known).max(moved);
                    return Ok(next);
                }
                Err(error) => {
                    let retry = error.ndb_code == DUPLICATE_KEY
                        || matches!(
                            classify(error.ndb_code),
                            ErrorClass::Temporary | ErrorClass::UnknownResult
                        );
                    if !retry {
                        return Err(error);
                    }
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.expect("at least one attempt"))
    }

    fn try_move_counter(
        &mut self,
        sequence: &Arc<TableRoute>,
        key: &[(ColumnId, Value)],
        to: &impl Fn(u64) -> Result<u64, ClientError>,
    ) -> Result<(u64, u64), ClientError> {
        let mut transaction = self.start_transaction(Some(Hint {
            table: sequence,
            key,
            committed_read: false,
        }))?;
        let read = transaction.read(sequence, key, &[SEQUENCE_NEXT_COLUMN], LockMode::Exclusive)?;
        transaction.ignore_error(read)?;
        self.execute(&mut transaction, ExecuteEnd::NoCommit)?;
        let current = match transaction.row(read) {
            Ok(row) => match row.get(SEQUENCE_NEXT_COLUMN) {
                Some(Value::UInt(next)) => Some(*next),
                other => {
                    return Err(ClientError::new(
                        4000,
                        format!("{}: the counter reads {other:?}", sequence.name),
                    ));
                }
            },
            Err(error) if error.ndb_code == NO_SUCH_ROW => None,
            Err(error) => return Err(error),
        };
        // A table's first value is 1, as in MySQL.
        let next = current.unwrap_or(1);
        let moved = match to(next) {
            Ok(moved) => moved,
            Err(error) => {
                self.execute(&mut transaction, ExecuteEnd::Rollback)?;
                return Err(error);
            }
        };
        let value = [(SEQUENCE_NEXT_COLUMN, Value::UInt(moved))];
        let defined = match current {
            Some(_) => transaction.update(sequence, key, &value),
            // Another session creating it at the same time makes this
            // insert fail with 630, and that session's range stands.
            None => transaction.insert(sequence, &[key[0].clone(), value[0].clone()]),
        };
        if let Err(error) = defined {
            self.execute(&mut transaction, ExecuteEnd::Rollback)?;
            return Err(error);
        }
        self.execute(&mut transaction, ExecuteEnd::Commit)?;
        Ok((next, moved))
    }
}

fn exhausted(table: &TableRoute) -> ClientError {
    ClientError {
        ndb_code: 4000,
        mysql_code: AUTO_INCREMENT_FAILED_MYSQL_CODE,
        message: format!(
            "table {}: the auto-increment counter has no more values",
            table.name
        ),
    }
}
