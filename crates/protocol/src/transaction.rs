//! Transaction messages: an API node and the transaction coordinator (TC),
//! and the coordinator and the local query handlers (LQH) of each replica.
//!
//! ## The conversation
//! - API → TC: `Execute` carries every operation defined since the last
//!   execute (one round trip) and how the batch ends: `NoCommit` keeps the
//!   transaction open, `Commit` commits it, `Rollback` aborts it. The TC
//!   answers with one `Executed`. Scans: `ScanOpen`, then `ScanRows` batches
//!   per fragment, `ScanNext` asks for the next batch of named fragments,
//!   `ScanClose` ends the scan early.
//! - TC → LQH (prepare): `KeyRequest` goes to the first replica of the
//!   operation's chain (the primary for writes and locked reads); each replica
//!   executes it and forwards it to the next; the last replica answers the TC
//!   with `KeyConfirm`, and any replica that fails answers with `KeyRefuse`.
//! - Commit runs the chain backwards (`Commit` to the last backup, which
//!   forwards towards the primary; the primary answers `Committed`), then
//!   `Complete` runs through the backups (the last answers `Completed`).
//!   `Abort` runs the chain forwards like the prepare, so it reaches every
//!   replica after any operation forwarded there; the last answers `Aborted`.
//!   A primary keeps a note that it committed a fragment it wrote until
//!   `Complete` reaches it (it is first in that chain), so that a takeover
//!   can tell a committed transaction from one that only prepared.
//! - Takeover (TC of the president → every LQH): when a coordinator is
//!   removed from the cluster, `TakeoverQuery` asks each query handler what
//!   it holds of that coordinator's transactions; each answers with
//!   `TakeoverReport`s (at most `TAKEOVER_REPORT_ENTRIES_MAX` entries each,
//!   the last marked). The president commits every transaction some
//!   replica committed or is committing, aborts the rest, and runs the
//!   phases itself.
//! - Commit markers: `Commit` names the API waiting (`Phase::api`,
//!   `Phase::client`); each replica it first reaches, but one on the
//!   coordinator's own node, keeps that as a marker, reported to a
//!   takeover (`TakeoverReport::markers`). The API acknowledges the
//!   answers marked `Executed::acknowledge` (`Message::CommitAck`, API →
//!   TC), and
//!   the TC tells the replicas to forget the markers
//!   (`Message::ForgetMarkers`). The takeover answers a marked transaction's
//!   API with `Executed` and, when it is finished, tells every API node
//!   (`Message::TakeoverDone`): a commit that got no answer was aborted.
//!
//! ## Byte layout
//! Fields in declaration order, as `message` lays them out. Operation kinds,
//! read modes, execute ends and bounds are one byte each, numbered by their
//! `wire_id`s below, never reused.

use crate::codec::{DecodeError, Reader, Writer};
use crate::message::{get_error, put_error};
use crate::types::{ErrorReply, NodeId};

/// What a key operation does to the row with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OperationKind {
    /// No lock: the last committed version (NDB's committed read).
    #[default]
    ReadCommitted,
    /// A shared lock held until the transaction ends.
    ReadShared,
    /// An exclusive lock held until the transaction ends.
    ReadExclusive,
    Insert,
    Update,
    /// Insert, or update if the row exists (NDB's writeTuple).
    Write,
    Delete,
}

impl OperationKind {
    pub const ALL: [OperationKind; 7] = [
        OperationKind::ReadCommitted,
        OperationKind::ReadShared,
        OperationKind::ReadExclusive,
        OperationKind::Insert,
        OperationKind::Update,
        OperationKind::Write,
        OperationKind::Delete,
    ];

    pub fn wire_id(self) -> u8 {
        match self {
            OperationKind::ReadCommitted => 1,
            OperationKind::ReadShared => 2,
            OperationKind::ReadExclusive => 3,
            OperationKind::Insert => 4,
            OperationKind::Update => 5,
            OperationKind::Write => 6,
            OperationKind::Delete => 7,
        }
    }

    pub fn from_wire_id(id: u8) -> Option<OperationKind> {
        OperationKind::ALL.into_iter().find(|k| k.wire_id() == id)
    }

    /// Whether the operation changes the row (and so visits every replica).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            OperationKind::Insert
                | OperationKind::Update
                | OperationKind::Write
                | OperationKind::Delete
        )
    }

    /// Whether the operation takes a row lock (writes and locked reads).
    pub fn locks(self) -> bool {
        self != OperationKind::ReadCommitted
    }
}

/// How an `Execute` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecuteEnd {
    /// Run the operations; the transaction stays open.
    NoCommit,
    /// Run the operations, then commit.
    Commit,
    /// Abort the transaction (operations sent with it are not run).
    Rollback,
}

impl ExecuteEnd {
    pub fn wire_id(self) -> u8 {
        match self {
            ExecuteEnd::NoCommit => 1,
            ExecuteEnd::Commit => 2,
            ExecuteEnd::Rollback => 3,
        }
    }

    pub fn from_wire_id(id: u8) -> Option<ExecuteEnd> {
        match id {
            1 => Some(ExecuteEnd::NoCommit),
            2 => Some(ExecuteEnd::Commit),
            3 => Some(ExecuteEnd::Rollback),
            _ => None,
        }
    }
}

/// One key operation as the API defines it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Operation {
    pub table: u32,
    pub kind: OperationKind,
    /// The primary key as AttrInfo: every key column, once.
    pub key: Vec<u8>,
    /// Columns to set, as AttrInfo (insert, update, write).
    pub values: Vec<u8>,
    /// Columns to return (reads), by position in the table.
    pub columns: Vec<u16>,
    /// An error of this operation leaves the transaction open (NDB's
    /// AO_IgnoreError); otherwise it aborts the transaction.
    pub ignore_error: bool,
    /// A unique-index operation: the position of a unique index among the
    /// table's ordered indexes, and `key` holds that index's columns
    /// instead of the primary key (reads, updates and deletes only).
    pub index: Option<u16>,
}

/// The wire value of `Operation::index` for a primary-key operation.
const NO_INDEX: u16 = u16::MAX;

/// API → TC: run a batch of operations in a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute {
    /// The API's id for the transaction, never used twice on one API
    /// node connection.
    pub transaction: u64,
    /// This request starts the transaction (NDB's start flag): the first
    /// request of a transaction says so, and the TC refuses a request that
    /// continues a transaction it does not have (4350) instead of starting
    /// a new one.
    pub start: bool,
    pub end: ExecuteEnd,
    pub operations: Vec<Operation>,
}

/// Where a transaction stands after an `Execute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionState {
    /// Still open: more operations may follow.
    Open,
    Committed,
    Aborted,
}

impl TransactionState {
    pub fn wire_id(self) -> u8 {
        match self {
            TransactionState::Open => 1,
            TransactionState::Committed => 2,
            TransactionState::Aborted => 3,
        }
    }

    pub fn from_wire_id(id: u8) -> Option<TransactionState> {
        match id {
            1 => Some(TransactionState::Open),
            2 => Some(TransactionState::Committed),
            3 => Some(TransactionState::Aborted),
            _ => None,
        }
    }
}

/// The outcome of one operation: NDB error code 0 for success.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OperationResult {
    pub error: u16,
    /// Read results as AttrInfo of the requested columns.
    pub data: Vec<u8>,
}

/// TC → API: the answer to one `Execute`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    pub transaction: u64,
    pub state: TransactionState,
    /// Why the transaction aborted (when `state` is `Aborted` for an error).
    pub error: Option<ErrorReply>,
    /// One per operation of the `Execute`, in order (empty for a rollback).
    pub results: Vec<OperationResult>,
    /// Round trips between data nodes on this execute's critical path
    /// (operations the TC had to send to another node), for the
    /// distribution-awareness counters.
    pub hops: u32,
    /// A committed answer whose commit markers the replicas keep until the
    /// API acknowledges it (`Message::CommitAck`); other answers need none.
    pub acknowledge: bool,
    /// The epoch a committed transaction that wrote was decided in (its
    /// global checkpoint is `epoch >> 32`, NDB's `getGCI()`): a system
    /// restart brings it back when that checkpoint is complete. 0 for
    /// every other answer.
    pub epoch: u64,
}

/// One end of an ordered-index range, as AttrInfo of a prefix of the index's columns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Bound {
    #[default]
    Unbounded,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

/// API → TC (and TC → LQH for one fragment): open a scan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScanOpen {
    pub transaction: u64,
    /// API → TC: this request starts the transaction (as `Execute::start`).
    pub start: bool,
    /// The API's id for the scan, unique within the transaction.
    pub scan: u32,
    pub table: u32,
    /// The ordered index to range-scan (position in the table's ordered
    /// indexes), or none for a full table scan.
    pub index: Option<u16>,
    pub lower: Bound,
    pub upper: Bound,
    pub descending: bool,
    /// A pushed filter program (`storage::filter`), or empty.
    pub filter: Vec<u8>,
    pub columns: Vec<u16>,
    /// `ReadCommitted`, `ReadShared` or `ReadExclusive` (scan and lock).
    pub mode: OperationKind,
    /// The one partition to scan when the whole distribution key is fixed
    /// (a pruned scan); none scans every partition in parallel.
    pub partition: Option<u32>,
    /// Rows and bytes a fragment returns per batch.
    pub batch_rows: u32,
    pub batch_bytes: u32,
    /// TC → LQH only: the fragment (index in the table's fragment list) and
    /// the coordinator to answer.
    pub fragment: u32,
    pub coordinator: NodeId,
}

/// A batch of rows from one fragment (LQH → TC → API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRows {
    pub transaction: u64,
    pub scan: u32,
    pub fragment: u32,
    pub rows: u32,
    /// The rows back to back, each a u32 little-endian length and the
    /// row's AttrInfo (the scan's columns).
    pub data: Vec<u8>,
    /// The fragment has no more rows.
    pub finished: bool,
    pub error: Option<ErrorReply>,
}

impl ScanRows {
    /// The last answer for `fragment` of a scan that failed with `error`:
    /// no rows, finished, so the receiver counts the fragment as over.
    pub fn failed(transaction: u64, scan: u32, fragment: u32, error: ErrorReply) -> ScanRows {
        ScanRows {
            transaction,
            scan,
            fragment,
            rows: 0,
            data: Vec::new(),
            finished: true,
            error: Some(error),
        }
    }
}

/// API → TC → LQH: the next batch of each named fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanNext {
    pub transaction: u64,
    pub scan: u32,
    pub fragments: Vec<u32>,
    /// TC → LQH: whom to answer.
    pub coordinator: NodeId,
}

/// TC → LQH: run one operation on one fragment replica, then pass it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRequest {
    /// The TC's id for the transaction, unique in the cluster.
    pub transaction: u64,
    pub coordinator: NodeId,
    /// The operation's number within the transaction.
    pub operation: u32,
    pub table: u32,
    /// The fragment's index in the table's fragment list.
    pub fragment: u32,
    pub kind: OperationKind,
    pub key: Vec<u8>,
    pub values: Vec<u8>,
    pub columns: Vec<u16>,
    pub ignore_error: bool,
    /// The replicas still to visit after the receiver, in order.
    pub chain: Chain,
    /// The version of the cluster state the coordinator planned the chain
    /// on. A node that joined later refuses it: the chain named an earlier
    /// incarnation of it, whose transaction's abort or commit it would
    /// never see.
    pub planned: u64,
    /// What the first replica returned of a write that asked for `columns`
    /// (the row before it): it passes that on instead of `columns`, and the
    /// last replica confirms with it. A starting replica that has not
    /// copied the row yet could not return it. Boxed: it is rare, and a
    /// message stays within 128 bytes.
    pub before: Option<Box<Vec<u8>>>,
}

/// Replicas a fragment has at most, and so the longest chain a key request
/// carries (NDB's NoOfReplicas is at most 4).
pub const CHAIN_NODES_MAX: usize = 7;

/// The replicas a key request still visits, held inline: a `Vec` would
/// take 24 bytes of every message and an allocation per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chain {
    nodes: [NodeId; CHAIN_NODES_MAX],
    len: u8,
}

impl Chain {
    /// Panics beyond `CHAIN_NODES_MAX` nodes: no fragment has that many.
    pub fn from_slice(nodes: &[NodeId]) -> Chain {
        assert!(
            nodes.len() <= CHAIN_NODES_MAX,
            "a chain of {} replicas",
            nodes.len()
        );
        let mut chain = Chain::default();
        chain.nodes[..nodes.len()].copy_from_slice(nodes);
        chain.len = nodes.len() as u8;
        chain
    }

    pub fn as_slice(&self) -> &[NodeId] {
        &self.nodes[..usize::from(self.len)]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn contains(&self, node: &NodeId) -> bool {
        self.as_slice().contains(node)
    }

    /// Takes the next replica off the front.
    pub fn pop_front(&mut self) -> Option<NodeId> {
        let first = *self.as_slice().first()?;
        self.nodes.copy_within(1..usize::from(self.len), 0);
        self.len -= 1;
        Some(first)
    }
}

/// The last replica (or the reading one) → TC: the operation is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyConfirm {
    pub transaction: u64,
    pub operation: u32,
    pub data: Vec<u8>,
}

/// A replica → TC: the operation failed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRefuse {
    pub transaction: u64,
    pub operation: u32,
    /// The replica that failed: the primary fails before anything changed
    /// anywhere; a backup fails after the primary changed (never ignorable).
    pub node: NodeId,
    pub error: ErrorReply,
}

/// TC → LQH, passed along a fragment's chain: commit, complete or abort
/// the transaction's work on one fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    pub transaction: u64,
    pub coordinator: NodeId,
    pub table: u32,
    pub fragment: u32,
    /// The replicas still to visit after the receiver, in order.
    pub chain: Vec<NodeId>,
    /// For a Commit: the API node waiting for the answer and its id for
    /// the transaction, kept by every replica the Commit passes as a
    /// commit marker until the API has its answer (`ForgetMarkers`), so a
    /// takeover can tell the API the outcome. `NO_API` when no API waits
    /// (and in Complete and Abort).
    pub api: NodeId,
    pub client: u64,
    /// For a Commit: the epoch the coordinator decided the commit in
    /// (`cluster::epochs`); each replica logs the commit with it. 0 in
    /// Complete and Abort.
    pub epoch: u64,
}

/// `Phase::api` when no API waits for the answer (node ids start at 1).
pub const NO_API: NodeId = 0;

/// Transaction ids one `CommitAck` or `ForgetMarkers` carries at most.
pub const MARKER_IDS_MAX: usize = 1_024;

/// Entries one `TakeoverReport` carries at most.
pub const TAKEOVER_REPORT_ENTRIES_MAX: usize = 1_024;

/// How far a replica got with one fragment of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkState {
    /// Operations ran; no Commit reached this replica.
    Prepared,
    /// A backup the Commit passed: it will commit at Complete.
    Committing,
    /// The primary committed (and keeps this note until Complete).
    Committed,
}

impl WorkState {
    fn wire_id(self) -> u8 {
        match self {
            WorkState::Prepared => 0,
            WorkState::Committing => 1,
            WorkState::Committed => 2,
        }
    }

    fn from_wire_id(id: u8) -> Option<WorkState> {
        match id {
            0 => Some(WorkState::Prepared),
            1 => Some(WorkState::Committing),
            2 => Some(WorkState::Committed),
            _ => None,
        }
    }
}

/// TC of the president → LQH: report what you hold of the transactions
/// that `failed_node` (at `failed_incarnation`) coordinated, once you have
/// installed the cluster state at `position` (which removed it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TakeoverQuery {
    /// The node whose coordinator takes over, and gets the reports.
    pub asked_by: NodeId,
    pub failed_node: NodeId,
    pub failed_incarnation: u64,
    pub generation: u64,
    pub version: u64,
}

/// One fragment of one transaction, as a replica holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TakeoverEntry {
    pub transaction: u64,
    pub table: u32,
    pub fragment: u32,
    pub state: WorkState,
    /// The epoch of the Commit the replica got (0 while `Prepared`): the
    /// takeover commits in the same one.
    pub epoch: u64,
}

/// A commit marker a replica holds of a failed coordinator's transaction:
/// the transaction was decided to commit, and its API may not have the
/// answer yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerEntry {
    pub transaction: u64,
    pub api: NodeId,
    pub client: u64,
}

/// LQH → the querying TC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakeoverReport {
    pub failed_node: NodeId,
    pub failed_incarnation: u64,
    pub entries: Vec<TakeoverEntry>,
    /// Commit markers; `entries` and `markers` hold at most
    /// `TAKEOVER_REPORT_ENTRIES_MAX` together.
    pub markers: Vec<MarkerEntry>,
    /// No more reports follow from this replica.
    pub last: bool,
}

/// A starting replica → a started replica of the same fragment: send me
/// the fragment's rows (NDB's COPY_FRAGREQ), once you have installed the
/// cluster state at (`generation`, `version`), which lists me as starting.
/// The sender holds the rows of each batch locked until the next
/// `CopyNext`, so a write cannot pass a row on its way to the starter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRequest {
    pub starter: NodeId,
    /// The starter's incarnation. Copies answer by node id, and each
    /// incarnation numbers its copies from 1: a copy asked for by an
    /// incarnation that is gone must never answer its successor.
    pub starter_incarnation: u64,
    /// The starter's id for this copy: a newer one replaces an older.
    pub copy: u64,
    pub table: u32,
    pub fragment: u32,
    pub generation: u64,
    pub version: u64,
    /// The starter restored every commit of the global checkpoints below
    /// this one from its own disk (0: none): a row last written in an
    /// earlier one comes by its key alone, and the starter takes it from
    /// what it restored (NDB's optimized node recovery).
    pub since_gci: u32,
}

/// A copied row sent whole: AttrInfo of every column in column order.
pub const COPIED_ROW_WHOLE: u8 = 0;
/// A copied row sent by its primary key's AttrInfo: it was last written
/// before the request's `since_gci`, so the starter has it.
pub const COPIED_ROW_BY_KEY: u8 = 1;

/// The copying replica → the starter: one batch of committed rows, each a
/// little-endian `u32` length (of what follows), the row's GCI (`u32`),
/// its form (`COPIED_ROW_WHOLE` or `COPIED_ROW_BY_KEY`), then its AttrInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRows {
    pub copy: u64,
    pub rows: Vec<u8>,
    /// No rows follow: the starter acknowledges this batch with `more`
    /// false and the fragment is copied.
    pub finished: bool,
    /// The copy failed at the sender (a lock wait timed out, the fragment
    /// went away): the starter copies the fragment again.
    pub failed: bool,
}

/// The starter → the copying replica: the last batch is applied; release
/// its locks and send the next (`more`), or end the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyNext {
    pub starter: NodeId,
    pub copy: u64,
    pub more: bool,
}

/// The end of a chain → TC: the phase is done on every replica of the fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseDone {
    pub transaction: u64,
    pub table: u32,
    pub fragment: u32,
}

pub(crate) fn put_operation_kind(w: &mut Writer, kind: OperationKind) {
    w.u8(kind.wire_id());
}

pub(crate) fn get_operation_kind(r: &mut Reader) -> Result<OperationKind, DecodeError> {
    let id = r.u8("operation kind")?;
    OperationKind::from_wire_id(id)
        .ok_or_else(|| DecodeError::new(format!("unknown operation kind {id}")))
}

pub(crate) fn put_columns(w: &mut Writer, columns: &[u16]) {
    w.count(columns.len());
    for column in columns {
        w.u16(*column);
    }
}

pub(crate) fn get_columns(r: &mut Reader) -> Result<Vec<u16>, DecodeError> {
    let count = r.count(2, "columns")?;
    (0..count).map(|_| r.u16("column")).collect()
}

pub(crate) fn put_execute(w: &mut Writer, execute: &Execute) {
    w.u64(execute.transaction);
    w.bool(execute.start);
    w.u8(execute.end.wire_id());
    w.count(execute.operations.len());
    for operation in &execute.operations {
        w.u32(operation.table);
        put_operation_kind(w, operation.kind);
        w.bytes(&operation.key);
        w.bytes(&operation.values);
        put_columns(w, &operation.columns);
        w.bool(operation.ignore_error);
        w.u16(operation.index.unwrap_or(NO_INDEX));
    }
}

pub(crate) fn get_execute(r: &mut Reader) -> Result<Execute, DecodeError> {
    let transaction = r.u64("transaction")?;
    let start = r.bool("start")?;
    let id = r.u8("execute end")?;
    let end = ExecuteEnd::from_wire_id(id)
        .ok_or_else(|| DecodeError::new(format!("unknown execute end {id}")))?;
    let count = r.count(20, "operations")?;
    let mut operations = Vec::with_capacity(count);
    for _ in 0..count {
        operations.push(Operation {
            table: r.u32("table")?,
            kind: get_operation_kind(r)?,
            key: r.bytes("key")?.to_vec(),
            values: r.bytes("values")?.to_vec(),
            columns: get_columns(r)?,
            ignore_error: r.bool("ignore error")?,
            index: match r.u16("index")? {
                NO_INDEX => None,
                position => Some(position),
            },
        });
    }
    Ok(Execute {
        transaction,
        start,
        end,
        operations,
    })
}

pub(crate) fn put_executed(w: &mut Writer, executed: &Executed) {
    w.u64(executed.transaction);
    w.u8(executed.state.wire_id());
    put_optional_error(w, executed.error.as_ref());
    w.count(executed.results.len());
    for result in &executed.results {
        w.u16(result.error);
        w.bytes(&result.data);
    }
    w.u32(executed.hops);
    w.bool(executed.acknowledge);
    w.u64(executed.epoch);
}

pub(crate) fn get_executed(r: &mut Reader) -> Result<Executed, DecodeError> {
    let transaction = r.u64("transaction")?;
    let id = r.u8("transaction state")?;
    let state = TransactionState::from_wire_id(id)
        .ok_or_else(|| DecodeError::new(format!("unknown transaction state {id}")))?;
    let error = get_optional_error(r)?;
    let count = r.count(6, "operation results")?;
    let mut results = Vec::with_capacity(count);
    for _ in 0..count {
        results.push(OperationResult {
            error: r.u16("operation error")?,
            data: r.bytes("operation data")?.to_vec(),
        });
    }
    Ok(Executed {
        transaction,
        state,
        error,
        results,
        hops: r.u32("hops")?,
        acknowledge: r.bool("acknowledge")?,
        epoch: r.u64("commit epoch")?,
    })
}

fn put_optional_error(w: &mut Writer, error: Option<&ErrorReply>) {
    match error {
        None => w.bool(false),
        Some(error) => {
            w.bool(true);
            put_error(w, error);
        }
    }
}

fn get_optional_error(r: &mut Reader) -> Result<Option<ErrorReply>, DecodeError> {
    if r.bool("error present")? {
        Ok(Some(get_error(r)?))
    } else {
        Ok(None)
    }
}

fn put_bound(w: &mut Writer, bound: &Bound) {
    match bound {
        Bound::Unbounded => w.u8(0),
        Bound::Inclusive(key) => {
            w.u8(1);
            w.bytes(key);
        }
        Bound::Exclusive(key) => {
            w.u8(2);
            w.bytes(key);
        }
    }
}

fn get_bound(r: &mut Reader) -> Result<Bound, DecodeError> {
    match r.u8("bound kind")? {
        0 => Ok(Bound::Unbounded),
        1 => Ok(Bound::Inclusive(r.bytes("bound key")?.to_vec())),
        2 => Ok(Bound::Exclusive(r.bytes("bound key")?.to_vec())),
        other => Err(DecodeError::new(format!("unknown bound kind {other}"))),
    }
}

pub(crate) fn put_scan_open(w: &mut Writer, open: &ScanOpen) {
    w.u64(open.transaction);
    w.bool(open.start);
    w.u32(open.scan);
    w.u32(open.table);
    match open.index {
        None => w.bool(false),
        Some(index) => {
            w.bool(true);
            w.u16(index);
        }
    }
    put_bound(w, &open.lower);
    put_bound(w, &open.upper);
    w.bool(open.descending);
    w.bytes(&open.filter);
    put_columns(w, &open.columns);
    put_operation_kind(w, open.mode);
    match open.partition {
        None => w.bool(false),
        Some(partition) => {
            w.bool(true);
            w.u32(partition);
        }
    }
    w.u32(open.batch_rows);
    w.u32(open.batch_bytes);
    w.u32(open.fragment);
    w.u8(open.coordinator);
}

pub(crate) fn get_scan_open(r: &mut Reader) -> Result<ScanOpen, DecodeError> {
    let transaction = r.u64("transaction")?;
    let start = r.bool("start")?;
    let scan = r.u32("scan")?;
    let table = r.u32("table")?;
    let index = if r.bool("index present")? {
        Some(r.u16("index")?)
    } else {
        None
    };
    let lower = get_bound(r)?;
    let upper = get_bound(r)?;
    let descending = r.bool("descending")?;
    let filter = r.bytes("filter")?.to_vec();
    let columns = get_columns(r)?;
    let mode = get_operation_kind(r)?;
    if mode.is_write() {
        return Err(DecodeError::new(format!("a scan cannot {mode:?}")));
    }
    let partition = if r.bool("partition present")? {
        Some(r.u32("partition")?)
    } else {
        None
    };
    Ok(ScanOpen {
        transaction,
        start,
        scan,
        table,
        index,
        lower,
        upper,
        descending,
        filter,
        columns,
        mode,
        partition,
        batch_rows: r.u32("batch rows")?,
        batch_bytes: r.u32("batch bytes")?,
        fragment: r.u32("fragment")?,
        coordinator: r.u8("coordinator")?,
    })
}

pub(crate) fn put_scan_rows(w: &mut Writer, rows: &ScanRows) {
    w.u64(rows.transaction);
    w.u32(rows.scan);
    w.u32(rows.fragment);
    w.u32(rows.rows);
    w.bytes(&rows.data);
    w.bool(rows.finished);
    put_optional_error(w, rows.error.as_ref());
}

pub(crate) fn get_scan_rows(r: &mut Reader) -> Result<ScanRows, DecodeError> {
    Ok(ScanRows {
        transaction: r.u64("transaction")?,
        scan: r.u32("scan")?,
        fragment: r.u32("fragment")?,
        rows: r.u32("rows")?,
        data: r.bytes("rows data")?.to_vec(),
        finished: r.bool("finished")?,
        error: get_optional_error(r)?,
    })
}

pub(crate) fn put_scan_next(w: &mut Writer, next: &ScanNext) {
    w.u64(next.transaction);
    w.u32(next.scan);
    w.count(next.fragments.len());
    for fragment in &next.fragments {
        w.u32(*fragment);
    }
    w.u8(next.coordinator);
}

pub(crate) fn get_scan_next(r: &mut Reader) -> Result<ScanNext, DecodeError> {
    let transaction = r.u64("transaction")?;
    let scan = r.u32("scan")?;
    let count = r.count(4, "fragments")?;
    let fragments = (0..count)
        .map(|_| r.u32("fragment"))
        .collect::<Result<_, _>>()?;
    Ok(ScanNext {
        transaction,
        scan,
        fragments,
        coordinator: r.u8("coordinator")?,
    })
}

pub(crate) fn put_key_request(w: &mut Writer, request: &KeyRequest) {
    w.u64(request.transaction);
    w.u8(request.coordinator);
    w.u32(request.operation);
    w.u32(request.table);
    w.u32(request.fragment);
    put_operation_kind(w, request.kind);
    w.bytes(&request.key);
    w.bytes(&request.values);
    put_columns(w, &request.columns);
    w.bool(request.ignore_error);
    w.bytes(request.chain.as_slice());
    w.u64(request.planned);
    match &request.before {
        None => w.bool(false),
        Some(before) => {
            w.bool(true);
            w.bytes(before);
        }
    }
}

pub(crate) fn get_key_request(r: &mut Reader) -> Result<KeyRequest, DecodeError> {
    Ok(KeyRequest {
        transaction: r.u64("transaction")?,
        coordinator: r.u8("coordinator")?,
        operation: r.u32("operation")?,
        table: r.u32("table")?,
        fragment: r.u32("fragment")?,
        kind: get_operation_kind(r)?,
        key: r.bytes("key")?.to_vec(),
        values: r.bytes("values")?.to_vec(),
        columns: get_columns(r)?,
        ignore_error: r.bool("ignore error")?,
        chain: {
            let nodes = r.bytes("chain")?;
            if nodes.len() > CHAIN_NODES_MAX {
                return Err(DecodeError::new(format!(
                    "a chain of {} replicas, more than {CHAIN_NODES_MAX}",
                    nodes.len()
                )));
            }
            Chain::from_slice(nodes)
        },
        planned: r.u64("planned version")?,
        before: if r.bool("row before present")? {
            Some(Box::new(r.bytes("row before")?.to_vec()))
        } else {
            None
        },
    })
}

pub(crate) fn put_key_confirm(w: &mut Writer, confirm: &KeyConfirm) {
    w.u64(confirm.transaction);
    w.u32(confirm.operation);
    w.bytes(&confirm.data);
}

pub(crate) fn get_key_confirm(r: &mut Reader) -> Result<KeyConfirm, DecodeError> {
    Ok(KeyConfirm {
        transaction: r.u64("transaction")?,
        operation: r.u32("operation")?,
        data: r.bytes("data")?.to_vec(),
    })
}

pub(crate) fn put_key_refuse(w: &mut Writer, refuse: &KeyRefuse) {
    w.u64(refuse.transaction);
    w.u32(refuse.operation);
    w.u8(refuse.node);
    put_error(w, &refuse.error);
}

pub(crate) fn get_key_refuse(r: &mut Reader) -> Result<KeyRefuse, DecodeError> {
    Ok(KeyRefuse {
        transaction: r.u64("transaction")?,
        operation: r.u32("operation")?,
        node: r.u8("node")?,
        error: get_error(r)?,
    })
}

pub(crate) fn put_phase(w: &mut Writer, phase: &Phase) {
    w.u64(phase.transaction);
    w.u8(phase.coordinator);
    w.u32(phase.table);
    w.u32(phase.fragment);
    w.bytes(&phase.chain);
    w.u8(phase.api);
    w.u64(phase.client);
    w.u64(phase.epoch);
}

pub(crate) fn get_phase(r: &mut Reader) -> Result<Phase, DecodeError> {
    Ok(Phase {
        transaction: r.u64("transaction")?,
        coordinator: r.u8("coordinator")?,
        table: r.u32("table")?,
        fragment: r.u32("fragment")?,
        chain: r.bytes("chain")?.to_vec(),
        api: r.u8("api")?,
        client: r.u64("client")?,
        epoch: r.u64("epoch")?,
    })
}

pub(crate) fn put_phase_done(w: &mut Writer, done: &PhaseDone) {
    w.u64(done.transaction);
    w.u32(done.table);
    w.u32(done.fragment);
}

pub(crate) fn get_phase_done(r: &mut Reader) -> Result<PhaseDone, DecodeError> {
    Ok(PhaseDone {
        transaction: r.u64("transaction")?,
        table: r.u32("table")?,
        fragment: r.u32("fragment")?,
    })
}

pub(crate) fn put_takeover_query(w: &mut Writer, query: &TakeoverQuery) {
    w.u8(query.asked_by);
    w.u8(query.failed_node);
    w.u64(query.failed_incarnation);
    w.u64(query.generation);
    w.u64(query.version);
}

pub(crate) fn get_takeover_query(r: &mut Reader) -> Result<TakeoverQuery, DecodeError> {
    Ok(TakeoverQuery {
        asked_by: r.u8("asked by")?,
        failed_node: r.u8("failed node")?,
        failed_incarnation: r.u64("failed incarnation")?,
        generation: r.u64("generation")?,
        version: r.u64("version")?,
    })
}

pub(crate) fn put_takeover_report(w: &mut Writer, report: &TakeoverReport) {
    assert!(
        report.entries.len() + report.markers.len() <= TAKEOVER_REPORT_ENTRIES_MAX,
        "a takeover report holds at most TAKEOVER_REPORT_ENTRIES_MAX entries"
    );
    w.u8(report.failed_node);
    w.u64(report.failed_incarnation);
    w.count(report.entries.len());
    for entry in &report.entries {
        w.u64(entry.transaction);
        w.u32(entry.table);
        w.u32(entry.fragment);
        w.u8(entry.state.wire_id());
        w.u64(entry.epoch);
    }
    w.count(report.markers.len());
    for marker in &report.markers {
        w.u64(marker.transaction);
        w.u8(marker.api);
        w.u64(marker.client);
    }
    w.bool(report.last);
}

pub(crate) fn get_takeover_report(r: &mut Reader) -> Result<TakeoverReport, DecodeError> {
    let failed_node = r.u8("failed node")?;
    let failed_incarnation = r.u64("failed incarnation")?;
    let count = r.count(25, "takeover entries")?;
    if count > TAKEOVER_REPORT_ENTRIES_MAX {
        return Err(DecodeError::new(format!(
            "a takeover report of {count} entries, more than {TAKEOVER_REPORT_ENTRIES_MAX}"
        )));
    }
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let transaction = r.u64("transaction")?;
        let table = r.u32("table")?;
        let fragment = r.u32("fragment")?;
        let id = r.u8("work state")?;
        let state = WorkState::from_wire_id(id)
            .ok_or_else(|| DecodeError::new(format!("unknown work state {id}")))?;
        entries.push(TakeoverEntry {
            transaction,
            table,
            fragment,
            state,
            epoch: r.u64("epoch")?,
        });
    }
    let count = r.count(17, "commit markers")?;
    if entries.len() + count > TAKEOVER_REPORT_ENTRIES_MAX {
        return Err(DecodeError::new(format!(
            "a takeover report of {} entries and {count} markers, more than \
             {TAKEOVER_REPORT_ENTRIES_MAX}",
            entries.len()
        )));
    }
    let mut markers = Vec::with_capacity(count);
    for _ in 0..count {
        markers.push(MarkerEntry {
            transaction: r.u64("transaction")?,
            api: r.u8("api")?,
            client: r.u64("client")?,
        });
    }
    Ok(TakeoverReport {
        failed_node,
        failed_incarnation,
        entries,
        markers,
        last: r.bool("last")?,
    })
}

pub(crate) fn put_copy_request(w: &mut Writer, request: &CopyRequest) {
    w.u8(request.starter);
    w.u64(request.starter_incarnation);
    w.u64(request.copy);
    w.u32(request.table);
    w.u32(request.fragment);
    w.u64(request.generation);
    w.u64(request.version);
    w.u32(request.since_gci);
}

pub(crate) fn get_copy_request(r: &mut Reader) -> Result<CopyRequest, DecodeError> {
    Ok(CopyRequest {
        starter: r.u8("starter")?,
        starter_incarnation: r.u64("starter incarnation")?,
        copy: r.u64("copy")?,
        table: r.u32("table")?,
        fragment: r.u32("fragment")?,
        generation: r.u64("generation")?,
        version: r.u64("version")?,
        since_gci: r.u32("since GCI")?,
    })
}

pub(crate) fn put_copy_rows(w: &mut Writer, rows: &CopyRows) {
    w.u64(rows.copy);
    w.bytes(&rows.rows);
    w.bool(rows.finished);
    w.bool(rows.failed);
}

pub(crate) fn get_copy_rows(r: &mut Reader) -> Result<CopyRows, DecodeError> {
    Ok(CopyRows {
        copy: r.u64("copy")?,
        rows: r.bytes("copied rows")?.to_vec(),
        finished: r.bool("finished")?,
        failed: r.bool("failed")?,
    })
}

pub(crate) fn put_copy_next(w: &mut Writer, next: &CopyNext) {
    w.u8(next.starter);
    w.u64(next.copy);
    w.bool(next.more);
}

pub(crate) fn get_copy_next(r: &mut Reader) -> Result<CopyNext, DecodeError> {
    Ok(CopyNext {
        starter: r.u8("starter")?,
        copy: r.u64("copy")?,
        more: r.bool("more")?,
    })
}
