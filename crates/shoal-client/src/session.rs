//! Sessions, transactions, operations and scans (NDB's `Ndb`,
//! `NdbTransaction`, `NdbOperation` and `NdbScanOperation`).
//!
//! A session belongs to one thread. A transaction collects operations;
//! `Session::execute` sends every operation defined since the last execute
//! to the transaction's coordinator in one message and waits for the one
//! answer: one round trip per batch. The asynchronous interface
//! (`prepare_async` + `send_poll`, NDB's `executeAsynchPrepare` and
//! `sendPollNdb`) keeps many transactions in flight from one thread.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use protocol::frame::{FRAME_MESSAGES_MAX, FRAME_PAYLOAD_BYTES_MAX};
use protocol::{
    Bound, Execute, ExecuteEnd, Executed, Message, NodeId, Operation, OperationKind, ScanNext,
    ScanOpen, ScanRows, TransactionState, encode_frame,
};
use schema::distribution::REPLICAS_MAX;
use schema::table::ColumnId;
use schema::{AttrInfoReader, AttrInfoWriter, ErrorCode, Storage, Value};
use transaction::TableRoute;
use transaction::maps::Map;

use crate::connection::{Cluster, Delivery, Mailbox, REQUEST_TIMEOUT};
use crate::error::{ClientError, NODE_FAILURE, RECEIVE_FAILED};

pub(crate) const EXECUTES: usize = 0;
pub(crate) const PK_OPERATIONS: usize = 1;
pub(crate) const SCANS: usize = 2;
pub(crate) const PRUNED_SCANS: usize = 3;
pub(crate) const STARTED: usize = 4;
pub(crate) const COMMITTED: usize = 5;
pub(crate) const ABORTED: usize = 6;
pub(crate) const BYTES_SENT: usize = 7;
pub(crate) const BYTES_RECEIVED: usize = 8;
pub(crate) const DATA_NODE_HOPS: usize = 9;
pub(crate) const SCAN_BATCHES: usize = 10;
pub(crate) const COUNTERS: usize = 11;

/// NDB API counters (`Ndb_api_*_count`), per session or summed over a
/// cluster connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Round trips to the cluster for operations (`execute_count`).
    pub execute_count: u64,
    /// Primary-key operations sent (`pk_op_count`).
    pub pk_op_count: u64,
    pub scan_count: u64,
    /// Scans that ran on one partition (`pruned_scan_count`).
    pub pruned_scan_count: u64,
    /// Scan batches asked for after the first (round trips of scans).
    pub scan_batch_count: u64,
    pub trans_start_count: u64,
    pub trans_commit_count: u64,
    pub trans_abort_count: u64,
    pub bytes_sent_count: u64,
    /// Bytes received: whole frames for a cluster connection, the answers'
    /// row data for a session.
    pub bytes_received_count: u64,
    /// Operations a coordinator had to send to another data node: the extra
    /// round trips inside the cluster that distribution awareness avoids.
    pub data_node_hops: u64,
}

impl Counters {
    pub(crate) fn from_values(values: &[u64; COUNTERS]) -> Counters {
        Counters {
            execute_count: values[EXECUTES],
            pk_op_count: values[PK_OPERATIONS],
            scan_count: values[SCANS],
            pruned_scan_count: values[PRUNED_SCANS],
            scan_batch_count: values[SCAN_BATCHES],
            trans_start_count: values[STARTED],
            trans_commit_count: values[COMMITTED],
            trans_abort_count: values[ABORTED],
            bytes_sent_count: values[BYTES_SENT],
            bytes_received_count: values[BYTES_RECEIVED],
            data_node_hops: values[DATA_NODE_HOPS],
        }
    }
}

/// How a read locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// No lock: the last committed version.
    Committed,
    /// Shared lock until the transaction ends (`LOCK IN SHARE MODE`).
    Shared,
    /// Exclusive lock until the transaction ends (`FOR UPDATE`).
    Exclusive,
}

impl LockMode {
    fn read_kind(self) -> OperationKind {
        match self {
            LockMode::Committed => OperationKind::ReadCommitted,
            LockMode::Shared => OperationKind::ReadShared,
            LockMode::Exclusive => OperationKind::ReadExclusive,
        }
    }
}

/// Where a transaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Operations may be added and executed.
    Open,
    Committed,
    Aborted,
}

/// An operation within its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationId(usize);

/// A distribution hint: start the transaction on a node holding this key.
pub struct Hint<'a> {
    pub table: &'a TableRoute,
    /// At least every distribution-key column.
    pub key: &'a [(ColumnId, Value)],
    /// The transaction only reads committed rows of `table` and ends with
    /// its first execute. Of a table whose reads any replica serves, it
    /// then starts on this API node's neighbour among the replicas (see
    /// `neighbour`) rather than on the primary's node.
    pub committed_read: bool,
}

struct OperationRecord {
    table: Arc<TableRoute>,
    error: u16,
    data: Vec<u8>,
}

/// An upper bound of the bytes an `Execute` of `operations` takes in a
/// frame (the encoding in `protocol::transaction`, rounded up).
fn execute_bytes_max(operations: &[Operation]) -> usize {
    32 + operations
        .iter()
        .map(|o| 32 + o.key.len() + o.values.len() + 2 * o.columns.len())
        .sum::<usize>()
}

/// MySQL's ER_QUERY_INTERRUPTED, for a call interrupted by `Interrupter`.
const QUERY_INTERRUPTED: u16 = 1317;

/// How long the rollback of an abandoned transaction may wait for a
/// congested link; if it cannot be sent, the data node's inactivity timer
/// (or this API node's disconnection) ends the transaction.
const ROLLBACK_SEND_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a commit whose coordinator failed waits, after the failure
/// showed, for the outcome from the takeover (the commit's answer from
/// the president, or its `TakeoverDone`, which means aborted) before it
/// is given up as an unknown result. The cluster removes a failed node
/// within its detection time (2 s by default) and a lease (under 1 s),
/// and the takeover is a round trip after that.
pub const OUTCOME_WAIT: Duration = Duration::from_secs(5);

/// A transaction: its operations, their results, and where it runs.
/// Dropped while open, it rolls back what it did at its coordinator.
pub struct Transaction {
    cluster: Cluster,
    id: u64,
    node: NodeId,
    status: Status,
    /// The coordinator knows the transaction (an execute or scan was sent).
    started: bool,
    defined: Vec<Operation>,
    records: Vec<OperationRecord>,
    error: Option<ClientError>,
    /// Set by `prepare_async`: how the queued batch ends.
    pending_end: Option<ExecuteEnd>,
    next_scan: u32,
    /// The incarnation of the coordinator the last request went to.
    coordinator_incarnation: u64,
    /// Its commit was in flight when the coordinator's connection failed:
    /// until when the session waits for the takeover to say the outcome.
    outcome_until: Option<Instant>,
    /// The epoch its commit was decided in (0: not committed, or nothing
    /// written).
    commit_epoch: u64,
}

/// A row read: the requested columns and their values.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub values: Vec<(ColumnId, Value)>,
}

impl Row {
    pub fn get(&self, column: ColumnId) -> Option<&Value> {
        self.values
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, v)| v)
    }

    /// The primary-key columns of the row (they must have been read), to
    /// update or delete a row found by a scan.
    pub fn key(&self, table: &TableRoute) -> Vec<(ColumnId, Value)> {
        table
            .def
            .primary_key
            .iter()
            .filter_map(|c| self.get(*c).map(|v| (*c, v.clone())))
            .collect()
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.status == Status::Open && self.started {
            self.roll_back_abandoned();
        }
    }
}

impl Transaction {
    /// Tells the coordinator to roll back a transaction the application
    /// gave up on (dropped, or its answer did not come in time), without
    /// waiting for the answer; the transaction counts as aborted here. A
    /// congested link gets `ROLLBACK_SEND_TIMEOUT` to take the request.
    fn roll_back_abandoned(&mut self) {
        self.status = Status::Aborted;
        // Without a link the data node has seen this API node's connection
        // fail, and rolled back every transaction it had open for it.
        let Some(link) = self.cluster.link(self.node) else {
            return;
        };
        let mut frame = Vec::new();
        encode_frame(
            &[Message::Execute(Execute {
                transaction: self.id,
                start: false,
                end: ExecuteEnd::Rollback,
                operations: Vec::new(),
            })],
            &mut frame,
        );
        // A failed send marks the link down, which the data node sees as
        // this API node failing: it rolls the transaction back then.
        if link
            .send(&frame, Instant::now() + ROLLBACK_SEND_TIMEOUT)
            .is_err()
        {
            debug_assert!(!link.alive.load(Ordering::Acquire));
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The data node coordinating the transaction.
    pub fn coordinator(&self) -> NodeId {
        self.node
    }

    pub fn status(&self) -> Status {
        self.status
    }

    /// The epoch a committed transaction that wrote was decided in; `None`
    /// before the commit, and for a commit that wrote nothing. A system
    /// restart brings the transaction back when the global checkpoint of
    /// its epoch (`commit_gci`) was complete.
    pub fn commit_epoch(&self) -> Option<u64> {
        (self.commit_epoch != 0).then_some(self.commit_epoch)
    }

    /// The global checkpoint a committed transaction that wrote belongs to
    /// (NDB's `NdbTransaction::getGCI()`).
    pub fn commit_gci(&self) -> Option<u32> {
        // The global checkpoint is the epoch's high half (`cluster::epochs`).
        self.commit_epoch().map(|epoch| (epoch >> 32) as u32)
    }

    /// Operations defined and not yet sent (the next execute sends them).
    pub fn unsent(&self) -> usize {
        self.defined.len()
    }

    /// Why the transaction aborted, if it did for an error.
    pub fn error(&self) -> Option<&ClientError> {
        self.error.as_ref()
    }

    /// The batch defined since the last execute must fit in one frame.
    fn check_batch_fits(&self) -> Result<(), ClientError> {
        let bytes = execute_bytes_max(&self.defined);
        if bytes > FRAME_PAYLOAD_BYTES_MAX {
            return Err(ClientError::usage(format!(
                "the batch of transaction {} takes up to {bytes} bytes, more than a frame \
                 carries ({FRAME_PAYLOAD_BYTES_MAX}); execute it in smaller batches",
                self.id
            )));
        }
        Ok(())
    }

    fn check_open(&self) -> Result<(), ClientError> {
        if self.status != Status::Open {
            return Err(ClientError::usage(format!(
                "transaction {} is {:?}: no more operations",
                self.id, self.status
            )));
        }
        Ok(())
    }

    fn define(
        &mut self,
        table: &Arc<TableRoute>,
        kind: OperationKind,
        key: Vec<u8>,
        values: Vec<u8>,
        columns: Vec<ColumnId>,
    ) -> OperationId {
        self.defined.push(Operation {
            table: table.id,
            kind,
            key,
            values,
            columns,
            ignore_error: false,
            index: None,
        });
        self.records.push(OperationRecord {
            table: Arc::clone(table),
            error: 0,
            data: Vec::new(),
        });
        OperationId(self.records.len() - 1)
    }

    /// Defines an operation from typed values: the primary key is taken
    /// from `key`, the columns to set are `values`.
    fn define_typed(
        &mut self,
        table: &Arc<TableRoute>,
        kind: OperationKind,
        key: &[(ColumnId, Value)],
        values: &[(ColumnId, Value)],
        columns: &[ColumnId],
    ) -> Result<OperationId, ClientError> {
        self.check_open()?;
        let key = encode_key(table, key)?;
        let values = encode_values(table, values)?;
        Ok(self.define(table, kind, key, values, columns.to_vec()))
    }

    /// Inserts a row (every NOT NULL column given).
    pub fn insert(
        &mut self,
        table: &Arc<TableRoute>,
        row: &[(ColumnId, Value)],
    ) -> Result<OperationId, ClientError> {
        self.define_typed(table, OperationKind::Insert, row, row, &[])
    }

    /// Inserts a whole row given in column order (value `i` is column
    /// `i`, NULL where the column is NULL): `insert` without pairing each
    /// value with its column.
    pub fn insert_row(
        &mut self,
        table: &Arc<TableRoute>,
        row: &[Value],
    ) -> Result<OperationId, ClientError> {
        self.check_open()?;
        if row.len() != table.def.columns.len() {
            return Err(ClientError::usage(format!(
                "a row of table {} has {} columns, not {}",
                table.name,
                table.def.columns.len(),
                row.len()
            )));
        }
        let key = encode_row_key(table, row)?;
        let values = encode_row(table, row)?;
        Ok(self.define(table, OperationKind::Insert, key, values, Vec::new()))
    }

    /// Inserts the row, or overwrites the row with its key (NDB's writeTuple).
    pub fn write(
        &mut self,
        table: &Arc<TableRoute>,
        row: &[(ColumnId, Value)],
    ) -> Result<OperationId, ClientError> {
        self.define_typed(table, OperationKind::Write, row, row, &[])
    }

    /// Sets `values` in the row with primary key `key`.
    pub fn update(
        &mut self,
        table: &Arc<TableRoute>,
        key: &[(ColumnId, Value)],
        values: &[(ColumnId, Value)],
    ) -> Result<OperationId, ClientError> {
        self.define_typed(table, OperationKind::Update, key, values, &[])
    }

    pub fn delete(
        &mut self,
        table: &Arc<TableRoute>,
        key: &[(ColumnId, Value)],
    ) -> Result<OperationId, ClientError> {
        self.define_typed(table, OperationKind::Delete, key, &[], &[])
    }

    /// Reads `columns` of the row with primary key `key`.
    pub fn read(
        &mut self,
        table: &Arc<TableRoute>,
        key: &[(ColumnId, Value)],
        columns: &[ColumnId],
        lock: LockMode,
    ) -> Result<OperationId, ClientError> {
        self.define_typed(table, lock.read_kind(), key, &[], columns)
    }

    /// Reads `columns` of the row whose unique index `index` has the key
    /// `key` (every column of the index). A read by unique key locks: the
    /// index row and the row stay locked until the transaction ends, and
    /// `LockMode::Committed` takes a shared lock (as NDB does).
    pub fn read_unique(
        &mut self,
        table: &Arc<TableRoute>,
        index: &str,
        key: &[(ColumnId, Value)],
        columns: &[ColumnId],
        lock: LockMode,
    ) -> Result<OperationId, ClientError> {
        self.define_unique(table, index, lock.read_kind(), key, &[], columns)
    }

    /// Sets `values` in the row whose unique index `index` has the key `key`.
    pub fn update_unique(
        &mut self,
        table: &Arc<TableRoute>,
        index: &str,
        key: &[(ColumnId, Value)],
        values: &[(ColumnId, Value)],
    ) -> Result<OperationId, ClientError> {
        self.define_unique(table, index, OperationKind::Update, key, values, &[])
    }

    /// Deletes the row whose unique index `index` has the key `key`.
    pub fn delete_unique(
        &mut self,
        table: &Arc<TableRoute>,
        index: &str,
        key: &[(ColumnId, Value)],
    ) -> Result<OperationId, ClientError> {
        self.define_unique(table, index, OperationKind::Delete, key, &[], &[])
    }

    fn define_unique(
        &mut self,
        table: &Arc<TableRoute>,
        index: &str,
        kind: OperationKind,
        key: &[(ColumnId, Value)],
        values: &[(ColumnId, Value)],
        columns: &[ColumnId],
    ) -> Result<OperationId, ClientError> {
        self.check_open()?;
        let unique = table
            .unique_indexes
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(index))
            .ok_or_else(|| {
                ClientError::schema(
                    ErrorCode::NoSuchIndex,
                    format!("table {} has no unique index {index}", table.name),
                )
            })?;
        let key = encode_columns(table, &unique.columns, key, || {
            format!("the key of index {index}")
        })?;
        let values = encode_values(table, values)?;
        let operation = self.define(table, kind, key, values, columns.to_vec());
        let defined = self.defined.last_mut().expect("just defined");
        defined.index = Some(unique.position);
        Ok(operation)
    }

    /// Defines an operation from AttrInfo already encoded (key: every
    /// primary-key column; values: the columns to set; columns: to read).
    /// The fastest path, for benchmarks and the SQL node.
    pub fn define_encoded(
        &mut self,
        table: &Arc<TableRoute>,
        kind: OperationKind,
        key: Vec<u8>,
        values: Vec<u8>,
        columns: Vec<ColumnId>,
    ) -> Result<OperationId, ClientError> {
        self.check_open()?;
        Ok(self.define(table, kind, key, values, columns))
    }

    /// An error of this operation only fails the operation (NDB's
    /// AO_IgnoreError); by default it aborts the transaction.
    pub fn ignore_error(&mut self, operation: OperationId) -> Result<(), ClientError> {
        let pending_from = self.records.len() - self.defined.len();
        let index = operation
            .0
            .checked_sub(pending_from)
            .filter(|i| *i < self.defined.len())
            .ok_or_else(|| ClientError::usage("the operation was already executed"))?;
        self.defined[index].ignore_error = true;
        Ok(())
    }

    /// The operation's outcome: `Ok` or its error (626 not found, 630
    /// duplicate key, ...).
    pub fn result(&self, operation: OperationId) -> Result<(), ClientError> {
        let record = self
            .records
            .get(operation.0)
            .ok_or_else(|| ClientError::usage("no such operation"))?;
        match record.error {
            0 => Ok(()),
            code => Err(ClientError::from_code(code)),
        }
    }

    /// The AttrInfo a read returned.
    pub fn data(&self, operation: OperationId) -> Result<&[u8], ClientError> {
        self.result(operation)?;
        Ok(&self.records[operation.0].data)
    }

    /// The row a read returned, decoded.
    pub fn row(&self, operation: OperationId) -> Result<Row, ClientError> {
        self.result(operation)?;
        let record = &self.records[operation.0];
        decode_row(&record.table, &record.data)
    }

    /// Takes in the answer to a batch that ended with `end`; returns the
    /// batch's outcome. Every error a data node returns is an error here,
    /// whatever state the transaction is left in (4102, "this execute was
    /// not run", leaves it open), and a commit that did not commit is never
    /// a success. The error is also kept in the transaction (`error`).
    fn absorb(&mut self, end: ExecuteEnd, executed: Executed) -> Result<(), ClientError> {
        let first = self.records.len() - executed.results.len().min(self.records.len());
        for (record, result) in self.records[first..].iter_mut().zip(executed.results) {
            record.error = result.error;
            record.data = result.data;
        }
        match executed.state {
            TransactionState::Open => {}
            TransactionState::Committed => {
                self.status = Status::Committed;
                self.commit_epoch = executed.epoch;
            }
            TransactionState::Aborted => self.status = Status::Aborted,
        }
        let error = match executed.error {
            Some(error) => ClientError::reply(error),
            None if end == ExecuteEnd::Commit && executed.state != TransactionState::Committed => {
                ClientError::new(
                    RECEIVE_FAILED,
                    format!(
                        "data node {} answered a commit of transaction {} with state {:?} \
                         and no error",
                        self.node, self.id, executed.state
                    ),
                )
            }
            None => return Ok(()),
        };
        self.error = Some(error.clone());
        Err(error)
    }
}

/// Bytes an AttrInfo entry of `value` takes, about: its header and its
/// bytes, so a request's buffer is allocated once.
fn encoded_size(value: &Value) -> usize {
    4 + match value {
        Value::Bytes(bytes) => bytes.len() + 2,
        Value::Decimal(text) => text.len(),
        _ => 8,
    }
}

/// Appends `value` for `column` as AttrInfo, checked against its type.
fn push_value(
    writer: &mut AttrInfoWriter<'_>,
    table: &TableRoute,
    column: ColumnId,
    value: &Value,
) -> Result<(), ClientError> {
    let definition = table.def.columns.get(usize::from(column)).ok_or_else(|| {
        ClientError::usage(format!("table {} has no column #{column}", table.name))
    })?;
    if matches!(value, Value::Null) {
        writer.push(column, None);
        return Ok(());
    }
    writer
        .push_with(column, |out| value.encode(&definition.column_type, out))
        .map_err(|e| {
            ClientError::schema(e.code, format!("column {}: {}", definition.name, e.detail))
        })
}

/// Encodes `values` as AttrInfo, each checked against its column's type.
fn encode_values(table: &TableRoute, values: &[(ColumnId, Value)]) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::with_capacity(values.iter().map(|(_, v)| encoded_size(v)).sum());
    let mut writer = AttrInfoWriter::new(&mut out);
    for (column, value) in values {
        push_value(&mut writer, table, *column, value)?;
    }
    Ok(out)
}

/// Encodes a whole row given in column order (value `i` is column `i`).
fn encode_row(table: &TableRoute, row: &[Value]) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::with_capacity(row.iter().map(encoded_size).sum());
    let mut writer = AttrInfoWriter::new(&mut out);
    for (column, value) in row.iter().enumerate() {
        push_value(&mut writer, table, column as ColumnId, value)?;
    }
    Ok(out)
}

/// Encodes the primary-key columns found in `values`.
fn encode_key(table: &TableRoute, values: &[(ColumnId, Value)]) -> Result<Vec<u8>, ClientError> {
    encode_columns(table, &table.def.primary_key, values, || {
        format!("the key of table {}", table.name)
    })
}

/// Encodes `columns` (in that order) from `values`, each of which must be
/// there; `what` names the key in the error (built only then).
fn encode_columns(
    table: &TableRoute,
    columns: &[ColumnId],
    values: &[(ColumnId, Value)],
    what: impl Fn() -> String,
) -> Result<Vec<u8>, ClientError> {
    let missing = |column: ColumnId| {
        ClientError::usage(format!(
            "{} needs column {}",
            what(),
            table.def.columns[usize::from(column)].name
        ))
    };
    let mut out = Vec::with_capacity(columns.len() * 12);
    let mut writer = AttrInfoWriter::new(&mut out);
    for &column in columns {
        let (_, value) = values
            .iter()
            .find(|(c, _)| *c == column)
            .ok_or_else(|| missing(column))?;
        push_value(&mut writer, table, column, value)?;
    }
    Ok(out)
}

/// Encodes the primary key of a whole row given in column order (the
/// caller checked that it has every column).
fn encode_row_key(table: &TableRoute, row: &[Value]) -> Result<Vec<u8>, ClientError> {
    debug_assert_eq!(row.len(), table.def.columns.len());
    let mut out = Vec::with_capacity(table.def.primary_key.len() * 12);
    let mut writer = AttrInfoWriter::new(&mut out);
    for &column in &table.def.primary_key {
        push_value(&mut writer, table, column, &row[usize::from(column)])?;
    }
    Ok(out)
}

/// Decodes one row's AttrInfo; a value that does not fit its column is an error.
fn decode_row(table: &TableRoute, data: &[u8]) -> Result<Row, ClientError> {
    // At most every column once: one allocation per row.
    let mut values = Vec::with_capacity(table.def.columns.len());
    for entry in AttrInfoReader::new(data) {
        let (column, bytes) = entry.map_err(|e| ClientError::new(4000, e.detail.to_string()))?;
        let definition = table
            .def
            .columns
            .get(usize::from(column))
            .ok_or_else(|| ClientError::new(4000, format!("no column #{column}")))?;
        let value = match bytes {
            None => Value::Null,
            Some(bytes) => {
                if let Storage::Fixed(size) = definition.column_type.storage()
                    && size as usize != bytes.len()
                {
                    return Err(ClientError::new(
                        4000,
                        format!(
                            "column {}: {} bytes for a {size}-byte type",
                            definition.name,
                            bytes.len()
                        ),
                    ));
                }
                Value::decode(&definition.column_type, bytes)
            }
        };
        values.push((column, value));
    }
    Ok(Row { values })
}

/// How many ended transactions a session remembers closed scans of, to say
/// why such a scan is closed (beyond them the reason is given generally).
const ENDED_TRANSACTIONS_REMEMBERED: usize = 64;

/// Rows of a scan not yet handed out, and the fragments' progress.
#[derive(Default)]
struct ScanState {
    batches: VecDeque<ScanRows>,
    /// An ordered scan of several fragments: their rows, merged.
    merge: Option<Merge>,
    /// Fragments whose last batch was handed out and that have more rows.
    consumed: Vec<u32>,
    fragments_expected: u32,
    fragments_finished: u32,
    /// Byte position in the front batch.
    position: usize,
    error: Option<ClientError>,
}

/// The rows of an ordered index scan of several fragments, merged into
/// the index's order (NDB's `SF_OrderBy`): each fragment returns its rows
/// in index order, and the next row handed out is the first (or, for a
/// descending scan, the last) of the fragments' first rows. A row is
/// handed out only when every fragment still scanning has one waiting, so
/// none of them can have an earlier row to come.
struct Merge {
    table: Arc<TableRoute>,
    /// The index's columns, in order.
    index_columns: Vec<ColumnId>,
    descending: bool,
    /// Each fragment heard from: its rows not yet handed out, with their
    /// sortable keys.
    queues: BTreeMap<u32, VecDeque<(Vec<u8>, Row)>>,
    finished: BTreeSet<u32>,
}

impl Merge {
    /// Queues a batch's rows under their fragment.
    fn absorb(&mut self, rows: &ScanRows) -> Result<(), ClientError> {
        let queue = self.queues.entry(rows.fragment).or_default();
        let mut position = 0;
        let mut bytes = Vec::new();
        while position < rows.data.len() {
            let (data, used) = split_row(&rows.data[position..])?;
            position += used;
            let row = decode_row(&self.table, data)?;
            let mut key = Vec::new();
            for &column in &self.index_columns {
                let column_type = &self.table.def.columns[column as usize].column_type;
                match row.get(column) {
                    Some(Value::Null) | None => {
                        schema::key::encode_sortable(column_type, None, &mut key)
                    }
                    Some(value) => {
                        bytes.clear();
                        value
                            .encode(column_type, &mut bytes)
                            .map_err(|e| ClientError::schema(e.code, e.detail))?;
                        schema::key::encode_sortable(column_type, Some(&bytes), &mut key);
                    }
                }
            }
            queue.push_back((key, row));
        }
        if rows.finished {
            self.finished.insert(rows.fragment);
        }
        Ok(())
    }

    /// The next row in index order: `Ok(Some((row, fragment)))`, `Ok(None)`
    /// when every fragment is done, `Err(())` when a fragment still
    /// scanning has no row waiting (its next batch is needed first).
    fn next(&mut self, fragments_expected: u32) -> Result<Option<(Row, u32)>, ()> {
        if (self.queues.len() as u32) < fragments_expected {
            return Err(());
        }
        let mut best: Option<(u32, &[u8])> = None;
        for (&fragment, queue) in &self.queues {
            let Some((key, _)) = queue.front() else {
                if self.finished.contains(&fragment) {
                    continue;
                }
                return Err(());
            };
            let better = match best {
                None => true,
                Some((_, best_key)) if self.descending => key.as_slice() > best_key,
                Some((_, best_key)) => key.as_slice() < best_key,
            };
            if better {
                best = Some((fragment, key));
            }
        }
        let Some((fragment, _)) = best else {
            return Ok(None);
        };
        let (_, row) = self
            .queues
            .get_mut(&fragment)
            .and_then(VecDeque::pop_front)
            .expect("the chosen fragment has a row");
        Ok(Some((row, fragment)))
    }
}

/// An open scan of a transaction (NDB's `NdbScanOperation`).
pub struct Scan {
    transaction: u64,
    scan: u32,
    node: NodeId,
    table: Arc<TableRoute>,
}

/// What to scan.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// The ordered index to range-scan (position in the table's ordered
    /// indexes), or none for a table scan.
    pub index: Option<u16>,
    /// Bounds as values of a prefix of the index's columns.
    pub lower: Option<(Vec<(ColumnId, Value)>, bool)>,
    pub upper: Option<(Vec<(ColumnId, Value)>, bool)>,
    pub descending: bool,
    /// A pushed filter program (`storage::filter`), or empty.
    pub filter: Vec<u8>,
    /// Columns to return; empty for all.
    pub columns: Vec<ColumnId>,
    /// `Shared` or `Exclusive` lock the rows returned (scan and lock).
    pub lock: Option<LockMode>,
    /// Fix the whole distribution key to scan one partition (pruning).
    pub partition_key: Option<Vec<(ColumnId, Value)>>,
    /// Rows per batch and fragment; 0 for the default.
    pub batch_rows: u32,
    /// Return the rows in the index's order (descending with
    /// `descending`), merging the fragments' rows; needs `index`, and the
    /// index's columns among `columns`.
    pub ordered: bool,
}

/// Rows per scan batch and fragment when the options say 0.
pub const SCAN_BATCH_ROWS_DEFAULT: u32 = 256;

/// How often a session waiting for answers looks whether a data node's
/// heartbeat named a newer cluster state (see `wait_for_deliveries`).
const STATE_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// A thread's handle on a cluster connection (NDB's `Ndb`).
pub struct Session {
    cluster: Cluster,
    id: u32,
    mailbox: Arc<Mailbox>,
    counters: [u64; COUNTERS],
    frame: Vec<u8>,
    received: VecDeque<Delivery>,
    /// Asynchronous transactions sent and not yet answered.
    in_flight: Map<u64, Transaction>,
    /// Asynchronous transactions prepared and not yet sent.
    prepared: Vec<Transaction>,
    scans: Map<(u64, u32), ScanState>,
    /// The last `ENDED_TRANSACTIONS_REMEMBERED` transactions whose end
    /// closed scans of theirs, and how they ended: a later `next_row` on
    /// one of those scans says why it is closed.
    ended_with_scans: VecDeque<(u64, Status)>,
    /// Auto-increment values fetched and not yet handed out, per table:
    /// the next one and the end of the range (exclusive).
    pub(crate) auto_increment_ranges: Map<u32, (u64, u64)>,
    /// Values fetched per round trip (`ndb_autoincrement_prefetch_sz`).
    pub(crate) auto_increment_prefetch: u32,
    /// Per table, a value its counter is known to have reached (this
    /// session moved it there, and counters only grow): raising it to
    /// anything below needs no round trip.
    pub(crate) auto_increment_floors: Map<u32, u64>,
    /// How long one call may wait for the cluster.
    timeout: Duration,
    /// A deadline no call passes, until cleared (a statement timeout).
    deadline: Option<Instant>,
    /// Set by an `Interrupter`: the waiting call ends.
    interrupted: Arc<AtomicBool>,
}

/// Interrupts the calls of one session from another thread (the SQL
/// node's KILL QUERY). Cheap to clone.
#[derive(Clone)]
pub struct Interrupter {
    interrupted: Arc<AtomicBool>,
    mailbox: Arc<Mailbox>,
}

impl Interrupter {
    /// The call the session is waiting in returns NDB's 4012 with MySQL's
    /// 1317 (query interrupted), and its transaction is rolled back; with
    /// no call waiting, the next call that waits does.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::Release);
        // Wakes the call waiting on the mailbox, if one is.
        self.mailbox.push(Delivery::Interrupted);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cluster.release_session(self.id);
    }
}

impl Session {
    pub(crate) fn new(cluster: Cluster, id: u32, mailbox: Arc<Mailbox>) -> Session {
        Session {
            cluster,
            id,
            mailbox,
            counters: [0; COUNTERS],
            frame: Vec::with_capacity(4096),
            received: VecDeque::new(),
            in_flight: Map::default(),
            prepared: Vec::new(),
            scans: Map::default(),
            ended_with_scans: VecDeque::new(),
            auto_increment_ranges: Map::default(),
            auto_increment_prefetch: crate::auto_increment::PREFETCH_DEFAULT,
            auto_increment_floors: Map::default(),
            timeout: REQUEST_TIMEOUT,
            deadline: None,
            interrupted: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// How long each call of this session may wait for the cluster, to
    /// send and to be answered (default `REQUEST_TIMEOUT`). A call that
    /// runs out gives NDB's 4012 and rolls its transaction back.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// A moment no call of this session passes (each still has its
    /// timeout), until cleared with `None`: a statement's deadline.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// A handle that interrupts this session's calls from another thread.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            interrupted: Arc::clone(&self.interrupted),
            mailbox: Arc::clone(&self.mailbox),
        }
    }

    /// When the call starting now must be over.
    fn call_deadline(&self) -> Instant {
        let by_timeout = Instant::now() + self.timeout;
        self.deadline
            .map_or(by_timeout, |deadline| deadline.min(by_timeout))
    }

    /// A table by name (see `Cluster::table`).
    pub fn table(&self, name: &str) -> Result<Arc<TableRoute>, ClientError> {
        self.cluster.table(name)
    }

    /// This session's counters.
    pub fn counters(&self) -> Counters {
        Counters::from_values(&self.counters)
    }

    fn count(&mut self, counter: usize, amount: u64) {
        self.counters[counter] += amount;
        self.cluster.inner.shared.counters.values[counter].fetch_add(amount, Ordering::Relaxed);
    }

    /// Starts a transaction. With a hint it starts on the node holding the
    /// hinted key's primary replica (distribution awareness); without one,
    /// on the next data node in turn.
    pub fn start_transaction(
        &mut self,
        hint: Option<Hint<'_>>,
    ) -> Result<Transaction, ClientError> {
        let node = match hint {
            Some(hint) => {
                let partition = hint
                    .table
                    .partition_of_values(hint.key)
                    .map_err(|e| ClientError::schema(e.code, e.detail))?;
                self.node_for_partition(hint.table, partition, hint.committed_read)?
            }
            None => self.cluster.next_node()?,
        };
        Ok(self.transaction_at(node))
    }

    /// Starts a transaction whose coordinator is `node` (for tests and for
    /// measuring what distribution awareness saves).
    pub fn transaction_at(&mut self, node: NodeId) -> Transaction {
        let id = self.cluster.next_transaction_id(self.id);
        self.count(STARTED, 1);
        Transaction {
            cluster: self.cluster.clone(),
            id,
            node,
            status: Status::Open,
            started: false,
            defined: Vec::new(),
            records: Vec::new(),
            error: None,
            pending_end: None,
            next_scan: 1,
            coordinator_incarnation: 0,
            outcome_until: None,
            commit_epoch: 0,
        }
    }

    /// The node holding the primary replica of `partition` (of the copy
    /// nearest nobody in particular), if it is connected; for a committed
    /// read of a table read from any replica, this API node's neighbour
    /// among the replicas (see `neighbour`).
    fn node_for_partition(
        &self,
        table: &TableRoute,
        partition: u32,
        committed_read: bool,
    ) -> Result<NodeId, ClientError> {
        let routing = self.cluster.current_routing();
        let fragment = table.fragments_of(partition).start;
        let replicas = &table.fragments[fragment as usize].replicas;
        let usable = |node: NodeId| routing.is_started(node) && self.cluster.link(node).is_some();
        if committed_read
            && table.reads_any_replica()
            && let Some(node) = neighbour(replicas, self.cluster.node_id(), usable)
        {
            return Ok(node);
        }
        match replicas.iter().copied().find(|&node| usable(node)) {
            Some(node) => Ok(node),
            None => self.cluster.next_node(),
        }
    }

    /// Sends the operations defined since the last execute and waits for
    /// the answer. `Commit` commits, `Rollback` aborts, `NoCommit` keeps
    /// the transaction open. An operation error that was not ignored
    /// aborts the transaction and is returned.
    pub fn execute(
        &mut self,
        transaction: &mut Transaction,
        end: ExecuteEnd,
    ) -> Result<(), ClientError> {
        transaction.check_open()?;
        transaction.check_batch_fits()?;
        if end == ExecuteEnd::Rollback && !transaction.started {
            transaction.defined.clear();
            transaction.status = Status::Aborted;
            self.count(ABORTED, 1);
            return Ok(());
        }
        if transaction.defined.is_empty() && end == ExecuteEnd::NoCommit {
            return Ok(());
        }
        if transaction.defined.is_empty() && end == ExecuteEnd::Commit && !transaction.started {
            transaction.status = Status::Committed;
            self.count(COMMITTED, 1);
            return Ok(());
        }
        let node = transaction.node;
        // The link first: a transaction is started only by a request sent.
        let link = self.cluster.link_or_connect(node)?;
        let message = self.execute_message(transaction, end);
        self.frame.clear();
        encode_frame(&[message], &mut self.frame);
        self.count(BYTES_SENT, self.frame.len() as u64);
        let deadline = self.call_deadline();
        transaction.coordinator_incarnation = link.incarnation;
        if let Err(error) = link.send(&self.frame, deadline) {
            // Nothing or a part of the batch went out; a part closed the
            // link, and the data node rolls back what it had.
            return Err(self.abandon(transaction, end, error));
        }
        let executed = loop {
            let wait_until = transaction
                .outcome_until
                .map_or(deadline, |d| d.min(deadline));
            let delivery = match self.next_delivery(wait_until) {
                Ok(delivery) => delivery,
                Err(error) if transaction.outcome_until.is_none() => {
                    return Err(self.abandon(transaction, end, error));
                }
                // The coordinator failed and no takeover told the outcome
                // in time (or the call was interrupted meanwhile).
                Err(_) => return Err(self.outcome_unknown(transaction, end)),
            };
            match delivery {
                // From the coordinator, or from the president that took
                // over the transaction after the coordinator failed.
                Delivery::Message(Message::Executed(executed))
                    if executed.transaction == transaction.id =>
                {
                    break executed;
                }
                Delivery::NodeDown(down) if down == node && transaction.outcome_until.is_none() => {
                    if end == ExecuteEnd::Commit && self.cluster.refusal(node).is_none() {
                        // Its replicas know whether it committed: the
                        // president's takeover will say.
                        transaction.outcome_until = Some(Instant::now() + OUTCOME_WAIT);
                        continue;
                    }
                    return Err(self.outcome_unknown(transaction, end));
                }
                Delivery::TakeoverDone {
                    node: failed,
                    incarnation,
                } if failed == node && incarnation >= transaction.coordinator_incarnation => {
                    let error = taken_over_without_answer(node, transaction.id, end);
                    transaction.status = Status::Aborted;
                    transaction.error = Some(error.clone());
                    self.count(ABORTED, 1);
                    self.end_scans(transaction.id, Status::Aborted);
                    return Err(error);
                }
                other => self.park(other),
            }
        };
        transaction.outcome_until = None;
        self.finish_execute(transaction, end, executed)
    }

    /// The coordinator's connection failed with `end` in flight and no
    /// takeover said what became of it: a commit's result is unknown,
    /// anything else was aborted.
    fn outcome_unknown(&mut self, transaction: &mut Transaction, end: ExecuteEnd) -> ClientError {
        let node = transaction.node;
        let error = lost_answer(node, end, self.cluster.refusal(node));
        transaction.status = Status::Aborted;
        transaction.outcome_until = None;
        transaction.error = Some(error.clone());
        error
    }

    /// Gives up on a batch whose answer did not come: the transaction is
    /// rolled back at its coordinator (a commit already under way goes on:
    /// the result of a commit is unknown) and can take no more operations,
    /// so a late answer can never be taken for a later batch's.
    fn abandon(
        &mut self,
        transaction: &mut Transaction,
        end: ExecuteEnd,
        error: ClientError,
    ) -> ClientError {
        let what = if end == ExecuteEnd::Commit {
            format!(
                "the commit of transaction {} may or may not have happened",
                transaction.id()
            )
        } else {
            format!("transaction {} was rolled back", transaction.id())
        };
        let error = ClientError {
            message: format!("{}: {what}", error.message),
            ..error
        };
        transaction.error = Some(error.clone());
        transaction.roll_back_abandoned();
        self.count(ABORTED, 1);
        self.end_scans(transaction.id, Status::Aborted);
        error
    }

    fn execute_message(&mut self, transaction: &mut Transaction, end: ExecuteEnd) -> Message {
        // The first request of a transaction starts it at the coordinator.
        let start = !transaction.started;
        transaction.started = true;
        let operations = std::mem::take(&mut transaction.defined);
        self.count(EXECUTES, 1);
        self.count(PK_OPERATIONS, operations.len() as u64);
        Message::Execute(Execute {
            transaction: transaction.id,
            start,
            end,
            operations,
        })
    }

    fn finish_execute(
        &mut self,
        transaction: &mut Transaction,
        end: ExecuteEnd,
        executed: Executed,
    ) -> Result<(), ClientError> {
        self.count(DATA_NODE_HOPS, u64::from(executed.hops));
        // A session's own received bytes are the answers' row data (the
        // connection's counter, summed over sessions, counts whole frames).
        let data: usize = executed.results.iter().map(|r| r.data.len()).sum();
        self.counters[BYTES_RECEIVED] += data as u64;
        let outcome = transaction.absorb(end, executed);
        match transaction.status {
            Status::Committed => self.count(COMMITTED, 1),
            Status::Aborted => self.count(ABORTED, 1),
            Status::Open => {}
        }
        if transaction.status != Status::Open {
            self.end_scans(transaction.id, transaction.status);
        }
        outcome
    }

    /// Transaction `transaction` ended (`status`): the data nodes closed
    /// its open scans with it, so they are closed here too, and no ScanNext
    /// is sent for them (see `next_row`).
    fn end_scans(&mut self, transaction: u64, status: Status) {
        let before = self.scans.len();
        self.scans.retain(|(owner, _), _| *owner != transaction);
        if self.scans.len() == before {
            return;
        }
        if self.ended_with_scans.len() == ENDED_TRANSACTIONS_REMEMBERED {
            self.ended_with_scans.pop_front();
        }
        self.ended_with_scans.push_back((transaction, status));
    }

    /// NDB's 4120 for a scan that is no longer open, saying why where known.
    fn scan_already_complete(&self, scan: &Scan) -> ClientError {
        let why = match self
            .ended_with_scans
            .iter()
            .find(|(transaction, _)| *transaction == scan.transaction)
        {
            Some((_, Status::Committed)) => {
                "its transaction committed, which closed the transaction's open scans"
            }
            Some(_) => "its transaction was rolled back or aborted, which closed its scans",
            None => "it returned its last row, failed, or was closed",
        };
        ClientError::new(
            protocol::SCAN_ALREADY_COMPLETE_NDB_CODE,
            format!("Scan already complete: scan {} is closed: {why}", scan.scan),
        )
    }

    /// An interrupt from another thread, if one came: it ends this call.
    fn take_interrupt(&self) -> Result<(), ClientError> {
        // A plain load first: no read-modify-write on every delivery.
        if self.interrupted.load(Ordering::Acquire)
            && self.interrupted.swap(false, Ordering::AcqRel)
        {
            return Err(ClientError {
                ndb_code: crate::error::REQUEST_TIMEOUT_CODE,
                mysql_code: QUERY_INTERRUPTED,
                message: "the call was interrupted (KILL)".to_string(),
            });
        }
        Ok(())
    }

    /// The next delivery, from the parked ones or the mailbox.
    fn next_delivery(&mut self, deadline: Instant) -> Result<Delivery, ClientError> {
        loop {
            self.take_interrupt()?;
            if let Some(delivery) = self.received.pop_front() {
                return Ok(delivery);
            }
            if !self.wait_for_deliveries(deadline) {
                return Err(ClientError::new(
                    crate::error::REQUEST_TIMEOUT_CODE,
                    "no answer from the cluster by the call's deadline",
                ));
            }
        }
    }

    /// Waits until the mailbox has deliveries (true) or `deadline` passes
    /// (false). Meanwhile, if a heartbeat named a newer cluster state, the
    /// routing is read again, which closes the link to a node the cluster
    /// removed: a call waiting on a stopped node is answered when the
    /// cluster has agreed it is gone, not after this connection's own
    /// silence limit.
    fn wait_for_deliveries(&mut self, deadline: Instant) -> bool {
        loop {
            let slice_end = (Instant::now() + STATE_CHECK_INTERVAL).min(deadline);
            if self.mailbox.take(slice_end, &mut self.received) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.cluster.current_routing();
        }
    }

    /// Keeps a delivery for whoever waits for it (another transaction or scan).
    fn park(&mut self, delivery: Delivery) {
        match delivery {
            Delivery::Message(Message::Executed(executed))
                if !self.in_flight.contains_key(&executed.transaction) =>
            {
                // The coordinator ended a transaction nobody waits on (its
                // inactivity timer): its open scans end with that error.
                if executed.state == TransactionState::Aborted {
                    let error = executed.error.map(ClientError::reply).unwrap_or_else(|| {
                        ClientError::new(NODE_FAILURE, "the transaction was aborted")
                    });
                    for ((transaction, _), state) in self.scans.iter_mut() {
                        if *transaction == executed.transaction && state.error.is_none() {
                            state.error = Some(error.clone());
                        }
                    }
                }
            }
            Delivery::Message(Message::Executed(executed)) => {
                if let Some(mut transaction) = self.in_flight.remove(&executed.transaction) {
                    transaction.outcome_until = None;
                    let end = transaction.pending_end.unwrap_or(ExecuteEnd::NoCommit);
                    // The outcome stays in the transaction (`error`), which
                    // `send_poll` hands back to the caller.
                    let _ = self.finish_execute(&mut transaction, end, executed);
                    self.prepared_done(transaction);
                }
            }
            Delivery::Message(Message::ScanRows(rows)) => self.absorb_scan_rows(rows),
            // The flag it came with is read by the call waiting, or the next.
            Delivery::Message(_) | Delivery::Interrupted => {}
            Delivery::TakeoverDone { node, incarnation } => {
                let mut aborted: Vec<u64> = self
                    .in_flight
                    .iter()
                    .filter(|(_, t)| t.node == node && t.coordinator_incarnation <= incarnation)
                    .map(|(id, _)| *id)
                    .collect();
                aborted.sort_unstable();
                for id in aborted {
                    let mut transaction = self.in_flight.remove(&id).expect("listed");
                    let end = transaction.pending_end.unwrap_or(ExecuteEnd::NoCommit);
                    transaction.status = Status::Aborted;
                    transaction.outcome_until = None;
                    transaction.error = Some(taken_over_without_answer(node, id, end));
                    self.count(ABORTED, 1);
                    self.prepared_done(transaction);
                }
            }
            Delivery::NodeDown(node) => {
                let mut lost: Vec<u64> = self
                    .in_flight
                    .iter()
                    .filter(|(_, t)| t.node == node && t.outcome_until.is_none())
                    .map(|(id, _)| *id)
                    .collect();
                lost.sort_unstable();
                let refused = self.cluster.refusal(node);
                for id in lost {
                    let transaction = self.in_flight.get_mut(&id).expect("listed");
                    let end = transaction.pending_end.unwrap_or(ExecuteEnd::NoCommit);
                    if end == ExecuteEnd::Commit && refused.is_none() {
                        // The takeover will say (see `execute`).
                        transaction.outcome_until = Some(Instant::now() + OUTCOME_WAIT);
                        continue;
                    }
                    let mut transaction = self.in_flight.remove(&id).expect("listed");
                    transaction.status = Status::Aborted;
                    transaction.error = Some(lost_answer(node, end, refused.clone()));
                    self.count(ABORTED, 1);
                    self.prepared_done(transaction);
                }
                for state in self.scans.values_mut() {
                    if state.error.is_none() {
                        state.error = Some(self.cluster.inner.shared.down_error(node));
                    }
                }
            }
        }
    }

    fn prepared_done(&mut self, mut transaction: Transaction) {
        transaction.pending_end = None;
        self.prepared.push(transaction);
    }

    /// Queues `transaction`'s batch for the next `send_poll` (NDB's
    /// `executeAsynchPrepare`); the transaction comes back from `send_poll`.
    pub fn prepare_async(
        &mut self,
        mut transaction: Transaction,
        end: ExecuteEnd,
    ) -> Result<(), ClientError> {
        transaction.check_open()?;
        transaction.check_batch_fits()?;
        transaction.pending_end = Some(end);
        self.prepared.push(transaction);
        Ok(())
    }

    /// Sends every prepared batch (one frame per data node) and waits until
    /// at least `min_done` of the transactions in flight are answered or
    /// `timeout` passes (NDB's `sendPollNdb`). Returns the answered ones.
    pub fn send_poll(
        &mut self,
        min_done: usize,
        timeout: Duration,
    ) -> Result<Vec<Transaction>, ClientError> {
        let mut finished = Vec::new();
        // Frames per data node: (node, messages, their transactions, bytes
        // at most); a node gets another frame when one is full.
        let mut frames: Vec<(NodeId, Vec<Message>, Vec<u64>, usize)> = Vec::new();
        for mut transaction in std::mem::take(&mut self.prepared) {
            let Some(end) = transaction.pending_end else {
                finished.push(transaction);
                continue;
            };
            let bytes = execute_bytes_max(&transaction.defined);
            let message = self.execute_message(&mut transaction, end);
            let node = transaction.node;
            let room = frames.iter_mut().rev().find(|(n, messages, _, used)| {
                *n == node
                    && messages.len() < FRAME_MESSAGES_MAX
                    && used + bytes <= FRAME_PAYLOAD_BYTES_MAX
            });
            match room {
                Some((_, messages, ids, used)) => {
                    messages.push(message);
                    ids.push(transaction.id);
                    *used += bytes;
                }
                None => frames.push((node, vec![message], vec![transaction.id], bytes)),
            }
            self.in_flight.insert(transaction.id, transaction);
        }
        let send_deadline = self.call_deadline();
        for (node, messages, ids, _) in frames {
            self.frame.clear();
            encode_frame(&messages, &mut self.frame);
            self.count(BYTES_SENT, self.frame.len() as u64);
            let sent = self.cluster.link_or_connect(node).and_then(|link| {
                for id in &ids {
                    if let Some(transaction) = self.in_flight.get_mut(id) {
                        transaction.coordinator_incarnation = link.incarnation;
                    }
                }
                link.send(&self.frame, send_deadline)
            });
            let Err(error) = sent else {
                continue;
            };
            if self.cluster.link(node).is_some() {
                // The link is up and took none of the frame: only its
                // transactions failed; the others' answers still come.
                for id in ids {
                    let mut transaction = self.in_flight.remove(&id).expect("just sent");
                    transaction.error = Some(error.clone());
                    transaction.roll_back_abandoned();
                    self.count(ABORTED, 1);
                    self.prepared_done(transaction);
                }
            } else {
                self.park(Delivery::NodeDown(node));
            }
        }
        let deadline = (Instant::now() + timeout).min(self.call_deadline());
        loop {
            // Answers parked by `park` land in `prepared` without an end.
            let (done, waiting): (Vec<Transaction>, Vec<Transaction>) =
                std::mem::take(&mut self.prepared)
                    .into_iter()
                    .partition(|t| t.pending_end.is_none());
            self.prepared = waiting;
            finished.extend(done);
            finished.extend(self.expire_outcome_waits());
            if finished.len() >= min_done || self.in_flight.is_empty() {
                return Ok(finished);
            }
            // Transactions still in flight stay in the session; their
            // answers are taken in by later calls.
            self.take_interrupt()?;
            let wait_until = self
                .in_flight
                .values()
                .filter_map(|t| t.outcome_until)
                .min()
                .map_or(deadline, |until| until.min(deadline));
            if self.received.is_empty() && !self.wait_for_deliveries(wait_until) {
                if Instant::now() >= deadline {
                    finished.extend(self.expire_outcome_waits());
                    return Ok(finished);
                }
                continue;
            }
            while let Some(delivery) = self.received.pop_front() {
                self.park(delivery);
            }
        }
    }

    /// Commits in flight whose coordinator failed and whose outcome no
    /// takeover told within `OUTCOME_WAIT`: unknown results.
    fn expire_outcome_waits(&mut self) -> Vec<Transaction> {
        let now = Instant::now();
        let mut expired: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, t)| t.outcome_until.is_some_and(|until| until <= now))
            .map(|(id, _)| *id)
            .collect();
        expired.sort_unstable();
        let mut done = Vec::with_capacity(expired.len());
        for id in expired {
            let mut transaction = self.in_flight.remove(&id).expect("listed");
            let node = transaction.node;
            transaction.status = Status::Aborted;
            transaction.outcome_until = None;
            transaction.pending_end = None;
            transaction.error = Some(lost_answer(
                node,
                ExecuteEnd::Commit,
                self.cluster.refusal(node),
            ));
            self.count(ABORTED, 1);
            done.push(transaction);
        }
        done
    }

    /// Transactions sent with `send_poll` and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Opens a scan in `transaction` at its coordinator: every partition in
    /// parallel, or the one partition `partition_key` fixes.
    pub fn scan(
        &mut self,
        transaction: &mut Transaction,
        table: &Arc<TableRoute>,
        options: &ScanOptions,
    ) -> Result<Scan, ClientError> {
        transaction.check_open()?;
        let columns: Vec<ColumnId> = if options.columns.is_empty() {
            (0..table.def.columns.len() as u16).collect()
        } else {
            options.columns.clone()
        };
        let bound = |side: &Option<(Vec<(ColumnId, Value)>, bool)>| -> Result<Bound, ClientError> {
            Ok(match side {
                None => Bound::Unbounded,
                Some((values, true)) => Bound::Inclusive(encode_values(table, values)?),
                Some((values, false)) => Bound::Exclusive(encode_values(table, values)?),
            })
        };
        let partition = match &options.partition_key {
            Some(key) => Some(
                table
                    .partition_of_values(key)
                    .map_err(|e| ClientError::schema(e.code, e.detail))?,
            ),
            None => None,
        };
        let fragments_expected = if partition.is_some() {
            1
        } else {
            table.partition_count
        };
        let merge = match options.index {
            Some(index) if options.ordered && fragments_expected > 1 => {
                let index_columns = table
                    .def
                    .ordered_indexes
                    .get(index as usize)
                    .map(|index| index.columns.clone())
                    .ok_or_else(|| {
                        ClientError::usage(format!("table {} has no index {index}", table.name))
                    })?;
                if let Some(missing) = index_columns.iter().find(|c| !columns.contains(c)) {
                    return Err(ClientError::usage(format!(
                        "an ordered scan must return the index's columns (column {missing} is \
                         not asked for)"
                    )));
                }
                Some(Merge {
                    table: Arc::clone(table),
                    index_columns,
                    descending: options.descending,
                    queues: BTreeMap::new(),
                    finished: BTreeSet::new(),
                })
            }
            _ => None,
        };
        let scan = transaction.next_scan;
        transaction.next_scan += 1;
        let start = !transaction.started;
        transaction.started = true;
        let open = ScanOpen {
            transaction: transaction.id,
            start,
            scan,
            table: table.id,
            index: options.index,
            lower: bound(&options.lower)?,
            upper: bound(&options.upper)?,
            descending: options.descending,
            filter: options.filter.clone(),
            columns,
            mode: options.lock.unwrap_or(LockMode::Committed).read_kind(),
            partition,
            batch_rows: if options.batch_rows == 0 {
                SCAN_BATCH_ROWS_DEFAULT
            } else {
                options.batch_rows
            },
            batch_bytes: 256 * 1024,
            fragment: 0,
            coordinator: 0,
        };
        self.count(SCANS, 1);
        if partition.is_some() {
            self.count(PRUNED_SCANS, 1);
        }
        self.scans.insert(
            (transaction.id, scan),
            ScanState {
                fragments_expected,
                merge,
                ..ScanState::default()
            },
        );
        self.frame.clear();
        encode_frame(&[Message::ScanOpen(Box::new(open))], &mut self.frame);
        self.count(BYTES_SENT, self.frame.len() as u64);
        let link = self.cluster.link_or_connect(transaction.node)?;
        link.send(&self.frame, self.call_deadline())?;
        Ok(Scan {
            transaction: transaction.id,
            scan,
            node: transaction.node,
            table: Arc::clone(table),
        })
    }

    fn absorb_scan_rows(&mut self, rows: ScanRows) {
        // The session's share only (see `finish_execute`).
        self.counters[BYTES_RECEIVED] += rows.data.len() as u64;
        let Some(state) = self.scans.get_mut(&(rows.transaction, rows.scan)) else {
            return;
        };
        if let Some(error) = &rows.error {
            state.error = Some(ClientError::reply(error.clone()));
        }
        if rows.finished {
            state.fragments_finished += 1;
        }
        if let Some(merge) = &mut state.merge {
            if let Err(error) = merge.absorb(&rows) {
                state.error = Some(error);
            }
            return;
        }
        state.batches.push_back(rows);
    }

    /// The scan's next row, or `None` when every fragment is done. Asks the
    /// fragments for their next batches as their rows are used up.
    pub fn next_row(&mut self, scan: &Scan) -> Result<Option<Row>, ClientError> {
        let key = (scan.transaction, scan.scan);
        let deadline = self.call_deadline();
        loop {
            let Some(state) = self.scans.get_mut(&key) else {
                return Err(self.scan_already_complete(scan));
            };
            if let Some(error) = state.error.take() {
                self.scans.remove(&key);
                return Err(error);
            }
            if let Some(merge) = &mut state.merge {
                match merge.next(state.fragments_expected) {
                    Ok(Some((row, fragment))) => {
                        let drained = merge.queues.get(&fragment).is_some_and(VecDeque::is_empty);
                        if drained && !merge.finished.contains(&fragment) {
                            state.consumed.push(fragment);
                        }
                        return Ok(Some(row));
                    }
                    Ok(None) => {
                        self.scans.remove(&key);
                        return Ok(None);
                    }
                    // A fragment's next batch is needed: asked for below.
                    Err(()) => {}
                }
            } else if let Some(front) = state.batches.front() {
                if state.position < front.data.len() {
                    let (row, used) = split_row(&front.data[state.position..])?;
                    state.position += used;
                    return decode_row(&scan.table, row).map(Some);
                }
                let done = state.batches.pop_front().expect("front");
                state.position = 0;
                if !done.finished {
                    state.consumed.push(done.fragment);
                }
                continue;
            }
            if state.fragments_finished >= state.fragments_expected {
                self.scans.remove(&key);
                return Ok(None);
            }
            if !state.consumed.is_empty() {
                let fragments = std::mem::take(&mut state.consumed);
                self.frame.clear();
                encode_frame(
                    &[Message::ScanNext(ScanNext {
                        transaction: scan.transaction,
                        scan: scan.scan,
                        fragments,
                        coordinator: 0,
                    })],
                    &mut self.frame,
                );
                self.count(BYTES_SENT, self.frame.len() as u64);
                self.count(SCAN_BATCHES, 1);
                let link = self.cluster.link_or_connect(scan.node)?;
                link.send(&self.frame, self.call_deadline())?;
            }
            let delivery = self.next_delivery(deadline)?;
            self.park(delivery);
        }
    }

    /// Stops a scan before its end.
    pub fn close_scan(&mut self, scan: Scan) -> Result<(), ClientError> {
        if self.scans.remove(&(scan.transaction, scan.scan)).is_none() {
            return Ok(());
        }
        self.frame.clear();
        encode_frame(
            &[Message::ScanClose {
                transaction: scan.transaction,
                scan: scan.scan,
            }],
            &mut self.frame,
        );
        let link = self.cluster.link_or_connect(scan.node)?;
        link.send(&self.frame, self.call_deadline())
    }
}

/// Splits the first row off a batch: a u32 little-endian length, then the
/// row's AttrInfo. Returns the row and the bytes used.
fn split_row(data: &[u8]) -> Result<(&[u8], usize), ClientError> {
    let truncated = || ClientError::new(4000, "a scan batch ends inside a row");
    let length = data
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")) as usize)
        .ok_or_else(truncated)?;
    let row = data.get(4..4 + length).ok_or_else(truncated)?;
    Ok((row, 4 + length))
}

/// The error for a request whose coordinator failed and whose takeover
/// ended without answering it: NDB's 4010, aborted. The president answers
/// every commit it finds committed (a replica holds its marker) before it
/// announces the takeover done, on the same connection, and announces it
/// only on the connections that were open when the takeover began, so an
/// announcement with no answer before it means the takeover aborted the
/// transaction. (Sent on a connection opened later, the announcement could
/// overtake an answer given before it opened; real processes showed that
/// once, with two data nodes killed at once.)
fn taken_over_without_answer(node: NodeId, transaction: u64, end: ExecuteEnd) -> ClientError {
    let what = if end == ExecuteEnd::Commit {
        "the commit of transaction"
    } else {
        "transaction"
    };
    ClientError::new(
        NODE_FAILURE,
        format!(
            "data node {node} failed while it coordinated {what} {transaction}; the \
             takeover of its transactions aborted it"
        ),
    )
}

/// The error for a batch whose answer was lost with its connection: a
/// commit may have happened (unknown result); anything else was aborted.
/// A data node that refused the connection (`refusal`) is named with its
/// reason; an aborted batch takes the refusal's codes, while a commit keeps
/// the unknown result, since the node may have read the batch before it
/// counted the connection against its limit.
fn lost_answer(node: NodeId, end: ExecuteEnd, refusal: Option<ClientError>) -> ClientError {
    match (end, refusal) {
        (ExecuteEnd::Commit, refusal) => ClientError::new(
            RECEIVE_FAILED,
            format!(
                "the connection to data node {node} failed while a commit was in flight: \
                 the transaction may or may not have committed{}",
                refusal.map_or(String::new(), |refused| format!(" ({})", refused.message))
            ),
        ),
        (_, Some(refused)) => ClientError {
            message: format!("{}; the transaction was aborted", refused.message),
            ..refused
        },
        (_, None) => ClientError::new(
            NODE_FAILURE,
            format!("the connection to data node {node} failed: the transaction was aborted"),
        ),
    }
}

/// The replica a committed read of a READ_BACKUP or fully replicated table
/// starts on, for the API node `own`: of the usable replicas in node-id
/// order, the one at `own` modulo their number. NDB's
/// `ndb_data_node_neighbour`, chosen without configuration: every key of
/// every such table reads at the same data node, and each SQL node of a
/// cluster (each connection of a pool) has its own.
///
/// Why: such a read is served at its coordinator's node when that node
/// holds a replica, so any replica answers it in one hop, and sending
/// every one to the same node keeps that node busy and awake (no doorbell
/// to ring, no thread to wake) while the others sleep. Measured with
/// sysbench `oltp_point_select` at 16 threads on 2 cores (two SQL nodes of
/// one cluster, nine rotating 5 s rounds): 46,959 against 41,694 per
/// second with the first awake replica, which itself was 1.14x the
/// primary's node. Writes and longer transactions keep the primary's
/// node: concentrating them on one node cost `oltp_read_write` 10%.
/// `None` when no replica is usable.
pub(crate) fn neighbour(
    replicas: &[NodeId],
    own: NodeId,
    usable: impl Fn(NodeId) -> bool,
) -> Option<NodeId> {
    assert!(
        replicas.len() <= REPLICAS_MAX,
        "{} replicas of one fragment",
        replicas.len()
    );
    // Each replica asked once (`usable` takes the link's lock), into a
    // buffer on the stack: no allocation on a read's path.
    let mut candidates = [0; REPLICAS_MAX];
    let mut count = 0;
    for &node in replicas {
        if usable(node) {
            candidates[count] = node;
            count += 1;
        }
    }
    let candidates = &mut candidates[..count];
    candidates.sort_unstable();
    candidates.get(usize::from(own) % count.max(1)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::SESSION_SHIFT;
    use protocol::ErrorReply;

    #[test]
    fn the_neighbour_is_picked_by_the_api_node_id_among_usable_replicas() {
        let all = |_: NodeId| true;
        // Node-id order, whatever the replicas' order (primary first).
        assert_eq!(neighbour(&[3, 2], 145, all), Some(3));
        assert_eq!(neighbour(&[2, 3], 145, all), Some(3));
        assert_eq!(neighbour(&[2, 3], 146, all), Some(2));
        assert_eq!(neighbour(&[5, 2, 9], 7, all), Some(5));
        assert_eq!(neighbour(&[5, 2, 9], 8, all), Some(9));
        assert_eq!(neighbour(&[5, 2, 9], 9, all), Some(2));
        // A replica that is down or unlinked is skipped: the others share
        // its readers.
        assert_eq!(neighbour(&[2, 3], 145, |node| node != 3), Some(2));
        assert_eq!(neighbour(&[5, 2, 9], 8, |node| node != 9), Some(2));
        assert_eq!(neighbour(&[5, 2, 9], 9, |node| node != 9), Some(5));
        assert_eq!(neighbour(&[2, 3], 145, |_| false), None);
        assert_eq!(neighbour(&[], 145, all), None);
    }

    /// A transaction that was never sent: dropping it sends nothing.
    fn open_transaction() -> Transaction {
        let (cluster, _management) = crate::connection::offline_cluster(&[2]);
        Transaction {
            cluster,
            id: 1 << SESSION_SHIFT | 1,
            node: 2,
            status: Status::Open,
            started: false,
            defined: Vec::new(),
            records: Vec::new(),
            error: None,
            pending_end: None,
            next_scan: 1,
            coordinator_incarnation: 0,
            outcome_until: None,
            commit_epoch: 0,
        }
    }

    fn executed(state: TransactionState, error: Option<u16>) -> Executed {
        Executed {
            transaction: 1 << SESSION_SHIFT | 1,
            state,
            error: error.map(|ndb_code| ErrorReply {
                ndb_code,
                mysql_code: 1296,
                message: format!("error {ndb_code}"),
            }),
            results: Vec::new(),
            hops: 0,
            acknowledge: false,
            epoch: 0,
        }
    }

    /// 4102 (the batch was not run) comes with the transaction still open:
    /// it is an error all the same, never a success.
    #[test]
    fn an_error_with_the_transaction_open_is_an_error() {
        let mut transaction = open_transaction();
        let outcome = transaction.absorb(
            ExecuteEnd::NoCommit,
            executed(TransactionState::Open, Some(4102)),
        );
        assert_eq!(outcome.map_err(|e| e.ndb_code), Err(4102));
        assert_eq!(transaction.status(), Status::Open);
    }

    #[test]
    fn a_commit_answered_without_committing_is_an_error() {
        let mut transaction = open_transaction();
        let outcome =
            transaction.absorb(ExecuteEnd::Commit, executed(TransactionState::Open, None));
        assert!(outcome.is_err());
        let mut committed = open_transaction();
        let outcome = committed.absorb(
            ExecuteEnd::Commit,
            executed(TransactionState::Committed, None),
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(committed.status(), Status::Committed);
    }

    #[test]
    fn an_asked_for_rollback_is_a_success() {
        let mut transaction = open_transaction();
        let outcome = transaction.absorb(
            ExecuteEnd::Rollback,
            executed(TransactionState::Aborted, None),
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(transaction.status(), Status::Aborted);
    }
}
