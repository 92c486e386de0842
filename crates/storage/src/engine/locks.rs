//! Operation records and row locks.
//!
//! Each (transaction, row) pair a transaction has locked or changed has one
//! operation record, from a pool sized by `MaxNoOfConcurrentOperations`. A
//! row's records form a list in arrival order, headed from the row slot. A
//! record holds a lock (`held`), or waits for one (`wanted`), or both (a
//! shared holder waiting to upgrade). A new request is granted when no one
//! waits and it is compatible with every lock held; otherwise it queues.
//! When a lock is released the waiters are granted in list order, stopping
//! at the first that is still incompatible, so waiters are served first come
//! first served and upgrades (which are earlier in the list) go first.
//!
//! Waits end with a grant or, after `TransactionDeadlockDetectionTimeout`,
//! with NDB error 266: deadlocks are broken by timeout, as in NDB. Every wait
//! has the same timeout, so the wait queue is in deadline order.

use super::table::{self, COMMITTED, IN_USE, Table};
use super::{Completion, Engine, OperationKind, ReadMode, TableId};
use crate::memory::{ChunkRef, VarRef};
use schema::ErrorCode;

pub(crate) const NO_RECORD: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum LockMode {
    None,
    Shared,
    Exclusive,
}

/// What a waiting record resumes when its lock is granted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Pending {
    None,
    /// A primary-key operation whose request is stored in DataMemory.
    Operation {
        request: VarRef,
        created: bool,
    },
    /// A locking scan, resumed by its next `scan_next`.
    Scan {
        scan: u32,
    },
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct OperationRecord {
    /// The transaction record's index; `NO_RECORD` when the record is free.
    pub transaction: u32,
    pub table: TableId,
    pub row: ChunkRef,
    pub next_in_row: u32,
    pub next_in_transaction: u32,
    pub previous_in_transaction: u32,
    pub held: LockMode,
    pub wanted: LockMode,
    /// The transaction created the row: abort removes it.
    pub inserted: bool,
    /// The transaction deleted the row: commit removes it.
    pub deleted: bool,
    /// The transaction's pending version of the row, if it changed it.
    pub image: ChunkRef,
    /// Ordered indexes where `image` has its own entry (its key differs from the row's).
    pub changed: u64,
    pub deadline_ms: u64,
    pub wait_previous: u32,
    pub wait_next: u32,
    pub token: u64,
    pub pending: Pending,
}

impl OperationRecord {
    const FREE: OperationRecord = OperationRecord {
        transaction: NO_RECORD,
        table: 0,
        row: ChunkRef::NONE,
        next_in_row: NO_RECORD,
        next_in_transaction: NO_RECORD,
        previous_in_transaction: NO_RECORD,
        held: LockMode::None,
        wanted: LockMode::None,
        inserted: false,
        deleted: false,
        image: ChunkRef::NONE,
        changed: 0,
        deadline_ms: 0,
        wait_previous: NO_RECORD,
        wait_next: NO_RECORD,
        token: 0,
        pending: Pending::None,
    };

    pub fn in_use(&self) -> bool {
        self.transaction != NO_RECORD
    }

    pub fn waiting(&self) -> bool {
        self.wanted != LockMode::None
    }

    /// The version of the row this record's transaction sees.
    #[inline]
    pub fn visible(&self, row_flags: u8) -> Option<ChunkRef> {
        if self.deleted {
            None
        } else if !self.image.is_none() {
            Some(self.image)
        } else if self.inserted || row_flags & COMMITTED != 0 {
            Some(self.row)
        } else {
            None
        }
    }
}

/// The pool of records, linked into a free list through `next_in_transaction`.
pub(crate) fn record_pool(count: u32) -> Vec<OperationRecord> {
    (0..count)
        .map(|index| OperationRecord {
            next_in_transaction: if index + 1 == count {
                NO_RECORD
            } else {
                index + 1
            },
            ..OperationRecord::FREE
        })
        .collect()
}

/// Waiting records in deadline order, linked through `wait_previous`/`wait_next`.
#[derive(Debug)]
pub(crate) struct WaitQueue {
    head: u32,
    tail: u32,
}

impl Default for WaitQueue {
    fn default() -> Self {
        WaitQueue {
            head: NO_RECORD,
            tail: NO_RECORD,
        }
    }
}

impl WaitQueue {
    pub fn head(&self) -> Option<u32> {
        (self.head != NO_RECORD).then_some(self.head)
    }
}

pub(crate) enum Acquired {
    /// `previous` is the mode the record held before (None if created):
    /// what a failed operation gives back.
    Granted {
        record: u32,
        created: bool,
        previous: LockMode,
    },
    Waiting {
        record: u32,
        created: bool,
    },
}

pub(crate) fn lock_mode(kind: OperationKind) -> LockMode {
    match kind {
        OperationKind::Read(ReadMode::Committed) => LockMode::None,
        OperationKind::Read(ReadMode::Shared) => LockMode::Shared,
        _ => LockMode::Exclusive,
    }
}

impl Engine {
    /// The record of `transaction` on `row`, if it has one.
    #[inline]
    pub(crate) fn own_record(&self, head: u32, transaction: u32) -> Option<u32> {
        let mut at = head;
        while at != NO_RECORD {
            let record = &self.records[at as usize];
            if record.transaction == transaction {
                return Some(at);
            }
            at = record.next_in_row;
        }
        None
    }

    fn allocate_record(&mut self) -> Result<u32, ErrorCode> {
        let index = self.records_free;
        if index == NO_RECORD {
            return Err(ErrorCode::TooManyOperations);
        }
        self.records_free = self.records[index as usize].next_in_transaction;
        self.records_used += 1;
        Ok(index)
    }

    /// A new record of `transaction` on `row`, linked into the transaction's
    /// list and appended to the row's list.
    pub(crate) fn new_record(
        &mut self,
        transaction: u32,
        table_id: TableId,
        row: ChunkRef,
        held: LockMode,
    ) -> Result<u32, ErrorCode> {
        let index = self.allocate_record()?;
        let first = self.transactions.first(transaction);
        self.records[index as usize] = OperationRecord {
            transaction,
            table: table_id,
            row,
            held,
            next_in_transaction: first,
            ..OperationRecord::FREE
        };
        if first != NO_RECORD {
            self.records[first as usize].previous_in_transaction = index;
        }
        self.transactions.set_first(transaction, index);
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let (head, _) = table::header(&table.rows, &self.pool, row);
        if head == NO_RECORD {
            table::set_record(&table.rows, &mut self.pool, row, index);
        } else {
            let mut at = head;
            while self.records[at as usize].next_in_row != NO_RECORD {
                at = self.records[at as usize].next_in_row;
            }
            self.records[at as usize].next_in_row = index;
        }
        Ok(index)
    }

    /// Takes `mode` on `row` for `transaction`, or queues for it.
    pub(crate) fn acquire(
        &mut self,
        now_ms: u64,
        transaction: u32,
        table_id: TableId,
        row: ChunkRef,
        mode: LockMode,
    ) -> Result<Acquired, ErrorCode> {
        debug_assert!(mode != LockMode::None);
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let (head, _) = table::header(&table.rows, &self.pool, row);
        let mut own = NO_RECORD;
        let mut others_held = LockMode::None;
        let mut anyone_waiting = false;
        let mut at = head;
        while at != NO_RECORD {
            let record = &self.records[at as usize];
            if record.transaction == transaction {
                own = at;
            } else {
                others_held = others_held.max(record.held);
            }
            anyone_waiting |= record.waiting();
            at = record.next_in_row;
        }
        if own != NO_RECORD {
            let record = &mut self.records[own as usize];
            if record.waiting() {
                return Err(ErrorCode::WrongTransactionState);
            }
            let previous = record.held;
            if record.held >= mode {
                return Ok(Acquired::Granted {
                    record: own,
                    created: false,
                    previous,
                });
            }
            if others_held == LockMode::None {
                record.held = mode;
                return Ok(Acquired::Granted {
                    record: own,
                    created: false,
                    previous,
                });
            }
            record.wanted = mode;
            self.enqueue_wait(now_ms, own);
            return Ok(Acquired::Waiting {
                record: own,
                created: false,
            });
        }
        let compatible = !anyone_waiting
            && match mode {
                LockMode::Shared => others_held <= LockMode::Shared,
                _ => others_held == LockMode::None,
            };
        let record = self.new_record(transaction, table_id, row, LockMode::None)?;
        if compatible {
            self.records[record as usize].held = mode;
            Ok(Acquired::Granted {
                record,
                created: true,
                previous: LockMode::None,
            })
        } else {
            self.records[record as usize].wanted = mode;
            self.enqueue_wait(now_ms, record);
            Ok(Acquired::Waiting {
                record,
                created: true,
            })
        }
    }

    fn enqueue_wait(&mut self, now_ms: u64, index: u32) {
        let deadline = now_ms + self.config.lock_wait_timeout_ms;
        let tail = self.waits.tail;
        let record = &mut self.records[index as usize];
        record.deadline_ms = deadline;
        record.wait_previous = tail;
        record.wait_next = NO_RECORD;
        if tail == NO_RECORD {
            self.waits.head = index;
        } else {
            assert!(
                self.records[tail as usize].deadline_ms <= deadline,
                "wait queue out of order"
            );
            self.records[tail as usize].wait_next = index;
        }
        self.waits.tail = index;
    }

    pub(crate) fn dequeue_wait(&mut self, index: u32) {
        let OperationRecord {
            wait_previous,
            wait_next,
            ..
        } = self.records[index as usize];
        if wait_previous == NO_RECORD {
            self.waits.head = wait_next;
        } else {
            self.records[wait_previous as usize].wait_next = wait_next;
        }
        if wait_next == NO_RECORD {
            self.waits.tail = wait_previous;
        } else {
            self.records[wait_next as usize].wait_previous = wait_previous;
        }
        let record = &mut self.records[index as usize];
        record.wait_previous = NO_RECORD;
        record.wait_next = NO_RECORD;
    }

    /// Drops whatever a waiting record was going to resume.
    fn drop_pending(&mut self, index: u32) {
        let record = &mut self.records[index as usize];
        if let Pending::Operation { request, .. } = record.pending {
            let table = self.tables[record.table as usize].as_mut().unwrap();
            table.parts.free(&mut self.pool, request);
        }
        record.pending = Pending::None;
    }

    /// Unlinks and frees a record, cancelling its wait. If it was the row's
    /// last record and the row is not committed (an aborted insert, a
    /// committed delete) the row itself is freed. Returns whether the row
    /// still exists. Does not grant waiters: the caller does.
    pub(crate) fn release_record(&mut self, index: u32) -> bool {
        if self.records[index as usize].waiting() {
            self.dequeue_wait(index);
        }
        self.drop_pending(index);
        let record = self.records[index as usize];
        debug_assert!(record.image.is_none(), "release with a pending image");
        // Out of the transaction's list.
        if record.previous_in_transaction == NO_RECORD {
            self.transactions
                .set_first(record.transaction, record.next_in_transaction);
        } else {
            self.records[record.previous_in_transaction as usize].next_in_transaction =
                record.next_in_transaction;
        }
        if record.next_in_transaction != NO_RECORD {
            self.records[record.next_in_transaction as usize].previous_in_transaction =
                record.previous_in_transaction;
        }
        // Out of the row's list.
        let table = self.tables[record.table as usize].as_mut().unwrap();
        let (head, flags) = table::header(&table.rows, &self.pool, record.row);
        if head == index {
            table::set_record(&table.rows, &mut self.pool, record.row, record.next_in_row);
        } else {
            let mut at = head;
            while self.records[at as usize].next_in_row != index {
                at = self.records[at as usize].next_in_row;
                assert_ne!(at, NO_RECORD, "record missing from its row's list");
            }
            self.records[at as usize].next_in_row = record.next_in_row;
        }
        let row_left = head == index && record.next_in_row == NO_RECORD;
        // Back on the free list.
        self.records[index as usize] = OperationRecord {
            next_in_transaction: self.records_free,
            ..OperationRecord::FREE
        };
        self.records_free = index;
        self.records_used -= 1;
        if row_left && flags & COMMITTED == 0 {
            let table = self.tables[record.table as usize].as_mut().unwrap();
            free_row(table, &mut self.pool, record.row, &mut self.scratch.key);
            return false;
        }
        true
    }

    /// Grants waiting records of `row` in list order while they are compatible,
    /// resuming what each waited for.
    pub(crate) fn grant_waiters(&mut self, table_id: TableId, row: ChunkRef) {
        loop {
            let Some(table) = self.tables[table_id as usize].as_ref() else {
                return;
            };
            let (head, flags) = table::header(&table.rows, &self.pool, row);
            if flags & IN_USE == 0 || head == NO_RECORD {
                return;
            }
            let mut waiter = NO_RECORD;
            let mut at = head;
            while at != NO_RECORD {
                if self.records[at as usize].waiting() {
                    waiter = at;
                    break;
                }
                at = self.records[at as usize].next_in_row;
            }
            if waiter == NO_RECORD {
                return;
            }
            let mut others_held = LockMode::None;
            let mut at = head;
            while at != NO_RECORD {
                if at != waiter {
                    others_held = others_held.max(self.records[at as usize].held);
                }
                at = self.records[at as usize].next_in_row;
            }
            let wanted = self.records[waiter as usize].wanted;
            let compatible = match wanted {
                LockMode::Shared => others_held <= LockMode::Shared,
                _ => others_held == LockMode::None,
            };
            if !compatible {
                return;
            }
            self.dequeue_wait(waiter);
            let record = &mut self.records[waiter as usize];
            let previous = record.held;
            record.held = record.held.max(wanted);
            record.wanted = LockMode::None;
            self.resume(waiter, previous);
        }
    }

    /// Runs what a record waited for, now that its lock is granted.
    fn resume(&mut self, index: u32, previous: LockMode) {
        let record = self.records[index as usize];
        self.records[index as usize].pending = Pending::None;
        let transaction = self.transactions.id(record.transaction);
        match record.pending {
            Pending::None => {}
            Pending::Scan { scan } => {
                if let Some(Some(scan)) = self.scans.get_mut(scan as usize) {
                    scan.lock_granted = true;
                    let token = scan.token;
                    self.completions.push(Completion {
                        token,
                        transaction,
                        result: Ok(()),
                        data: Vec::new(),
                        inserted: false,
                    });
                }
            }
            Pending::Operation { request, created } => {
                // Copy the stored request out of DataMemory before running it:
                // running it may allocate and free chunks of the same table.
                let table = self.tables[record.table as usize].as_mut().unwrap();
                self.scratch.request.clear();
                self.scratch
                    .request
                    .extend_from_slice(table.parts.part(&self.pool, request));
                table.parts.free(&mut self.pool, request);
                let stored = std::mem::take(&mut self.scratch.request);
                let (kind, columns, values) = decode_stored(&stored);
                let mut data = Vec::new();
                self.write_inserted = false;
                let result =
                    self.apply(kind, index, created, previous, values, &columns, &mut data);
                self.scratch.request = stored;
                self.completions.push(Completion {
                    token: record.token,
                    transaction,
                    result: result.map(|_| ()).map_err(|e| e.code),
                    data,
                    inserted: self.write_inserted,
                });
            }
        }
    }

    /// Stores a waiting operation's request in DataMemory so it can run when granted.
    pub(crate) fn park_operation(
        &mut self,
        index: u32,
        created: bool,
        token: u64,
        kind: OperationKind,
        columns: &[u16],
        values: &[u8],
    ) -> Result<(), ErrorCode> {
        let stored = &mut self.scratch.request;
        stored.clear();
        stored.push(encode_kind(kind));
        stored.extend_from_slice(&(columns.len() as u16).to_le_bytes());
        for column in columns {
            stored.extend_from_slice(&column.to_le_bytes());
        }
        stored.extend_from_slice(values);
        let record = self.records[index as usize];
        let table = self.tables[record.table as usize].as_mut().unwrap();
        if stored.len() > u16::MAX as usize - 8 {
            return Err(ErrorCode::DataTooLong);
        }
        let request = table.parts.store(&mut self.pool, stored)?;
        let record = &mut self.records[index as usize];
        record.pending = Pending::Operation { request, created };
        record.token = token;
        Ok(())
    }

    /// Ends every lock wait whose deadline has passed with NDB error 266.
    pub fn expire_lock_waits(&mut self, now_ms: u64) {
        while let Some(index) = self.waits.head() {
            let record = self.records[index as usize];
            if record.deadline_ms > now_ms {
                return;
            }
            self.dequeue_wait(index);
            self.records[index as usize].wanted = LockMode::None;
            let transaction = self.transactions.id(record.transaction);
            let token = match record.pending {
                Pending::Scan { scan } => match self.scans.get_mut(scan as usize) {
                    Some(Some(scan)) => {
                        scan.failed = Some(ErrorCode::LockWaitTimeout);
                        scan.token
                    }
                    _ => record.token,
                },
                _ => record.token,
            };
            self.drop_pending(index);
            self.completions.push(Completion {
                token,
                transaction,
                result: Err(ErrorCode::LockWaitTimeout),
                data: Vec::new(),
                inserted: false,
            });
            let row_exists = if record.held == LockMode::None {
                self.release_record(index)
            } else {
                true
            };
            if row_exists {
                self.grant_waiters(record.table, record.row);
            }
        }
    }
}

/// Frees a row that no transaction refers to any more: its hash entry,
/// variable part and slot. It has no ordered-index entries by then.
pub(crate) fn free_row(
    table: &mut Table,
    pool: &mut crate::memory::PagePool,
    row: ChunkRef,
    key: &mut Vec<u8>,
) {
    table::slot_key(table, pool, None, row, key);
    let hash = schema::key::key_hash(key);
    let removed = table.hash.remove(pool, hash, row);
    assert!(removed, "row missing from the hash index");
    table.free_version(pool, row);
}

fn encode_kind(kind: OperationKind) -> u8 {
    match kind {
        OperationKind::Read(ReadMode::Committed) => 0,
        OperationKind::Read(ReadMode::Shared) => 1,
        OperationKind::Read(ReadMode::Exclusive) => 2,
        OperationKind::Insert => 3,
        OperationKind::Update => 4,
        OperationKind::Write => 5,
        OperationKind::Delete => 6,
    }
}

fn decode_stored(stored: &[u8]) -> (OperationKind, Vec<u16>, &[u8]) {
    let kind = match stored[0] {
        0 => OperationKind::Read(ReadMode::Committed),
        1 => OperationKind::Read(ReadMode::Shared),
        2 => OperationKind::Read(ReadMode::Exclusive),
        3 => OperationKind::Insert,
        4 => OperationKind::Update,
        5 => OperationKind::Write,
        _ => OperationKind::Delete,
    };
    let count = u16::from_le_bytes([stored[1], stored[2]]) as usize;
    let columns = (0..count)
        .map(|i| u16::from_le_bytes([stored[3 + 2 * i], stored[4 + 2 * i]]))
        .collect();
    (kind, columns, &stored[3 + 2 * count..])
}
