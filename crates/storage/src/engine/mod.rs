//! The engine: one LDM's tables, operation records, row locks and local
//! transactions, behind a message-shaped interface.
//!
//! ## Shape
//! Every request carries the caller's transaction id and, for operations
//! that may wait for a lock, a token. `execute` answers at once with
//! `Outcome::Done` (any read result appended to the caller's buffer) or
//! `Outcome::Waiting`: the operation is queued behind a row lock and its
//! result arrives later as a `Completion` (drained with `take_completions`),
//! when the lock is granted or the wait times out. A transaction then runs
//! `prepare` and `commit`, or `abort` at any point. Time comes in as
//! `now_ms` on every call; `next_deadline_ms` tells the runtime when to call
//! `expire_lock_waits` next.
//!
//! ## Versions
//! The row in its slot is always the last committed version, so committed
//! reads never wait and never see uncommitted changes. A transaction's
//! change lives in its operation record: a pending insert is an uncommitted
//! slot, a pending update is a copy slot, a pending delete is a flag. Commit
//! moves the copy into the row's slot (keeping the row's address, so index
//! entries stay valid) and never allocates; abort frees what the
//! transaction added.

mod check;
mod locks;
mod operation;
mod scan;
pub(crate) mod table;
mod transaction;

use crate::memory::{PAGE_SIZE_BYTES, PagePool};
use locks::OperationRecord;
use scan::ScanRecord;
use schema::row::RowBuilder;
use schema::table::{ColumnId, ROW_SIZE_MAX};
use schema::{Error, ErrorCode, TableDef};
use table::Table;

pub use scan::{
    CHECKPOINT_PART_SLOTS, CHECKPOINT_PARTS, CHECKPOINT_SLOTS_PER_BATCH, CheckpointSelection,
    ScanBatch, ScanBound, ScanRequest, checkpoint_part,
};
pub use transaction::{
    CHANGE_DELETE, CHANGE_PUT, CHANGE_ROW_OF_PART, RowOfPart, changes, split_gci, split_row_of_part,
};

/// A table's id on this engine.
pub type TableId = u32;
/// The caller's id for a transaction; 0 means "no transaction".
pub type TransactionId = u64;
/// No transaction: committed reads outside any transaction.
pub const NO_TRANSACTION: TransactionId = 0;

/// Limits of one engine, from the configuration (NDB parameter names in brackets).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// [DataMemory] bytes of the page pool.
    pub data_memory_bytes: u64,
    /// [MaxNoOfConcurrentOperations] operation records: each row a
    /// transaction has locked or changed takes one.
    pub operations_max: u32,
    /// [MaxNoOfConcurrentTransactions] transactions with at least one record.
    pub transactions_max: u32,
    /// [MaxNoOfConcurrentScans] open scans.
    pub scans_max: u32,
    /// Engine tables. Alone, NDB's MaxNoOfTables default; in a data node
    /// each fragment replica is an engine table, so the query handler
    /// sets its per-node fragment replica limit here (MaxNoOfTables bounds
    /// the dictionary's tables instead, see `cluster::dictionary`).
    pub tables_max: u32,
    /// [TransactionDeadlockDetectionTimeout] longest wait for a row lock.
    pub lock_wait_timeout_ms: u64,
    /// Write all of DataMemory at start so the operating system commits it
    /// then, not on first use (data nodes do; tests need not).
    pub touch_memory_at_start: bool,
    /// Called once with DataMemory's bytes after they are reserved and
    /// before they are touched: the runtime's chance to ask the operating
    /// system for huge pages, which this sans-IO crate does not do itself.
    pub memory_advice: Option<fn(&mut [u8])>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            data_memory_bytes: 98 * 1024 * 1024,
            operations_max: 32_768,
            transactions_max: 4_096,
            scans_max: 256,
            tables_max: 128,
            lock_wait_timeout_ms: 1_200,
            touch_memory_at_start: false,
            memory_advice: None,
        }
    }
}

/// How a read treats locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// No lock: the last committed version (or the transaction's own change).
    Committed,
    /// A shared lock held until the transaction ends.
    Shared,
    /// An exclusive lock held until the transaction ends.
    Exclusive,
}

/// What an operation does to the row with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationKind {
    Read(ReadMode),
    Insert,
    Update,
    /// Insert, or update if the row exists (NDB's writeTuple).
    Write,
    Delete,
}

/// One primary-key operation.
#[derive(Debug, Clone, Copy)]
pub struct OperationRequest<'a> {
    pub transaction: TransactionId,
    /// Echoed in the `Completion` if the operation waits.
    pub token: u64,
    pub table: TableId,
    pub kind: OperationKind,
    /// The primary key as AttrInfo: every key column, once.
    pub key: &'a [u8],
    /// Columns to set, as AttrInfo (inserts, updates, writes).
    pub values: &'a [u8],
    /// Columns to return, appended to the output as AttrInfo: for reads the
    /// row read; for updates, writes and deletes of an existing row the row
    /// as it was before the operation (nothing when there was no row).
    pub columns: &'a [ColumnId],
}

/// The immediate answer to an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Queued behind a lock: a `Completion` with the request's token follows.
    Waiting,
}

/// The late answer to an operation or scan that waited for a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub token: u64,
    pub transaction: TransactionId,
    pub result: Result<(), ErrorCode>,
    /// Read results (AttrInfo), for reads that waited.
    pub data: Vec<u8>,
    /// A write that waited created its row (see `Engine::write_inserted`).
    pub inserted: bool,
}

/// DataMemory use: the pool and each table (in pages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryReport {
    pub page_size_bytes: u64,
    pub pages_total: u32,
    pub pages_used: u32,
    pub tables: Vec<TableMemory>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMemory {
    pub table: TableId,
    pub name: String,
    pub rows: u64,
    pub row_pages: usize,
    pub var_pages: usize,
    pub hash_index_pages: usize,
    pub ordered_index_pages: usize,
}

impl TableMemory {
    pub fn pages(&self) -> usize {
        self.row_pages + self.var_pages + self.hash_index_pages + self.ordered_index_pages
    }
}

/// Buffers reused by every operation, so the hot paths do not allocate.
pub(crate) struct Scratch {
    pub key: Vec<u8>,
    pub key_other: Vec<u8>,
    pub fixed: Vec<u8>,
    pub var: Vec<u8>,
    pub request: Vec<u8>,
    /// Index entries found by unique-key checks.
    pub found: Vec<crate::memory::ChunkRef>,
    pub builder: RowBuilder,
}

/// The local storage engine of one LDM.
pub struct Engine {
    config: EngineConfig,
    pool: PagePool,
    tables: Vec<Option<Table>>,
    records: Vec<OperationRecord>,
    records_free: u32,
    records_used: u32,
    transactions: transaction::Transactions,
    waits: locks::WaitQueue,
    scans: Vec<Option<ScanRecord>>,
    completions: Vec<Completion>,
    scratch: Scratch,
    /// The last write that ran (`execute`, or a waiting one resumed)
    /// created its row rather than changing one: a replica passing a
    /// `Write` on tells the next one which it was.
    write_inserted: bool,
}

impl Engine {
    /// Reserves DataMemory and every record pool from the configuration.
    pub fn new(config: EngineConfig) -> Result<Engine, Error> {
        let mut pool = PagePool::new(config.data_memory_bytes)?;
        if let Some(advise) = config.memory_advice {
            advise(pool.bytes_mut());
        }
        if config.touch_memory_at_start {
            pool.touch_all();
        }
        if config.operations_max >= table::RECORDS_MAX {
            return Err(Error::new(
                ErrorCode::BadConfiguration,
                format!(
                    "MaxNoOfConcurrentOperations must be below {}",
                    table::RECORDS_MAX
                ),
            ));
        }
        for (value, name) in [
            (config.operations_max, "MaxNoOfConcurrentOperations"),
            (config.transactions_max, "MaxNoOfConcurrentTransactions"),
            (config.scans_max, "MaxNoOfConcurrentScans"),
            (config.tables_max, "MaxNoOfTables"),
        ] {
            if value == 0 || value == locks::NO_RECORD {
                return Err(Error::new(
                    ErrorCode::BadConfiguration,
                    format!("{name} must be 1..{}", locks::NO_RECORD - 1),
                ));
            }
        }
        let records = locks::record_pool(config.operations_max);
        Ok(Engine {
            records_free: 0,
            records_used: 0,
            records,
            transactions: transaction::Transactions::new(config.transactions_max),
            waits: locks::WaitQueue::default(),
            scans: (0..config.scans_max).map(|_| None).collect(),
            tables: (0..config.tables_max).map(|_| None).collect(),
            completions: Vec::with_capacity(64),
            scratch: Scratch {
                key: Vec::with_capacity(PAGE_SIZE_BYTES),
                key_other: Vec::with_capacity(PAGE_SIZE_BYTES),
                fixed: vec![0; ROW_SIZE_MAX as usize],
                var: Vec::with_capacity(ROW_SIZE_MAX as usize + 64),
                request: Vec::with_capacity(PAGE_SIZE_BYTES),
                found: Vec::with_capacity(4),
                builder: RowBuilder::default(),
            },
            pool,
            config,
            write_inserted: false,
        })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Creates a table (one partition of it) under `id`.
    pub fn create_table(&mut self, id: TableId, def: TableDef) -> Result<(), Error> {
        let slot = self.tables.get(id as usize).ok_or_else(|| {
            Error::new(
                ErrorCode::BadConfiguration,
                format!("table id {id} is beyond MaxNoOfTables"),
            )
        })?;
        if slot.is_some() {
            return Err(Error::new(ErrorCode::TableExists, format!("table id {id}")));
        }
        if self.tables.iter().flatten().any(|t| t.def.name == def.name) {
            return Err(Error::new(ErrorCode::TableExists, def.name.clone()));
        }
        let table = Table::new(def, &mut self.pool)?;
        self.tables[id as usize] = Some(table);
        Ok(())
    }

    /// Drops a table and returns all its pages to the pool. Refused while a
    /// transaction holds a record on it or a scan is open on it.
    pub fn drop_table(&mut self, id: TableId) -> Result<(), Error> {
        self.check_idle(id)?;
        let mut table = self.tables[id as usize].take().unwrap();
        table.release_all(&mut self.pool);
        Ok(())
    }

    /// Removes every row of a table and returns its pages to the pool.
    pub fn truncate_table(&mut self, id: TableId) -> Result<(), Error> {
        self.check_idle(id)?;
        let mut table = self.tables[id as usize].take().unwrap();
        table.release_all(&mut self.pool);
        let fresh = Table::new(table.def, &mut self.pool)?;
        self.tables[id as usize] = Some(fresh);
        Ok(())
    }

    fn check_idle(&self, id: TableId) -> Result<(), Error> {
        let Some(Some(table)) = self.tables.get(id as usize) else {
            return Err(ErrorCode::NoSuchTable.into());
        };
        if table.scans_open > 0 || self.records.iter().any(|r| r.in_use() && r.table == id) {
            return Err(Error::new(
                ErrorCode::WrongTransactionState,
                "the table is in use by a transaction or scan",
            ));
        }
        Ok(())
    }

    pub fn table_def(&self, id: TableId) -> Option<&TableDef> {
        self.tables.get(id as usize)?.as_ref().map(|t| &t.def)
    }

    /// Committed rows in a table.
    pub fn row_count(&self, id: TableId) -> Option<u64> {
        Some(self.tables.get(id as usize)?.as_ref()?.rows_committed)
    }

    /// Pages of DataMemory in use, in total and per table.
    pub fn memory_report(&self) -> MemoryReport {
        MemoryReport {
            page_size_bytes: PAGE_SIZE_BYTES as u64,
            pages_total: self.pool.pages_total(),
            pages_used: self.pool.pages_used(),
            tables: self
                .tables
                .iter()
                .enumerate()
                .filter_map(|(id, table)| {
                    let table = table.as_ref()?;
                    Some(TableMemory {
                        table: id as TableId,
                        name: table.def.name.clone(),
                        rows: table.rows_committed,
                        row_pages: table.rows.pages().len(),
                        var_pages: table.parts.pages(),
                        hash_index_pages: table.hash.pages(),
                        ordered_index_pages: table.ordered.iter().map(|i| i.pages()).sum(),
                    })
                })
                .collect(),
        }
    }

    /// Operation records in use (locks held or waited for, changes pending).
    pub fn operations_in_use(&self) -> u32 {
        self.records_used
    }

    /// Scan records open (for checkers: none may outlive its scan).
    pub fn scans_in_use(&self) -> usize {
        self.scans.iter().filter(|scan| scan.is_some()).count()
    }

    /// Transactions with at least one operation record.
    pub fn transactions_in_use(&self) -> usize {
        self.transactions.in_use()
    }

    /// Whether the engine has begun `transaction` and not yet committed or
    /// aborted it. A caller that keeps its own map of transactions uses this
    /// to tell one the engine never began (its first operation failed before
    /// the engine took a record) from one it must still end.
    pub fn has_transaction(&self, transaction: TransactionId) -> bool {
        self.transactions.lookup(transaction).is_some()
    }

    /// Answers to operations that waited, in the order they were decided.
    /// Whether the last write `execute` ran created its row (an insert, or
    /// a `Write` of a row its transaction did not see) rather than changing
    /// one. Meaningful right after `execute` returned `Done`.
    pub fn write_inserted(&self) -> bool {
        self.write_inserted
    }

    /// Begins `transaction` if the engine does not hold it: a node-recovery
    /// copy ends its transaction after each batch (releasing the batch's
    /// locks) and goes on with the same scan under the same id.
    pub fn begin_transaction(&mut self, transaction: TransactionId) -> Result<(), Error> {
        self.transactions.get_or_begin(transaction).map(|_| ())
    }

    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// When the oldest lock wait times out, for the runtime's timer.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.waits
            .head()
            .map(|record| self.records[record as usize].deadline_ms)
    }

    fn table(&self, id: TableId) -> Result<&Table, ErrorCode> {
        self.tables
            .get(id as usize)
            .and_then(Option::as_ref)
            .ok_or(ErrorCode::NoSuchTable)
    }
}
