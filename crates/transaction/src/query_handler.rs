//! The local query handler (LQH): one data node's fragment replicas in the
//! storage engine, and its part of the linear two-phase commit.
//!
//! ## Fragments
//! Each fragment replica the cluster state places on this node is a table
//! of its own in the engine, created when the state that adds the table is
//! installed and dropped with it.
//!
//! ## One transaction, one engine transaction per fragment
//! A transaction's work on one fragment is one engine transaction, so each
//! fragment commits or aborts on its own as the phase messages reach it. A
//! row lives in exactly one fragment, so two engine transactions of one
//! transaction never wait for each other.
//!
//! ## Operations run in order
//! A transaction's operations on one fragment replica run in the order
//! they arrive: while one waits for a row lock, the ones behind it wait in
//! a queue, so a read sees the write before it in the same batch, and every
//! replica applies a transaction's writes in the order the primary did.
//! Scans are not ordered with key operations (nor are they in NDB): a
//! transaction that wants a key operation to follow a scan of the same
//! fragment waits for the scan's rows first, as scan-and-lock does.
//!
//! ## The phases on a replica
//! - Prepare (`KeyRequest`): run the operation; a write passes on to the next
//!   replica of the chain, and the last replica (or the one that read)
//!   confirms to the coordinator. A failure is reported to the coordinator
//!   at once and goes no further.
//! - Commit runs from the last backup to the primary. A backup only marks
//!   the work as committing (engine prepare): its locks stay and readers
//!   still see the previous version. The primary commits in the engine:
//!   the new version is visible there and its locks are released. Either
//!   first closes the transaction's scans of the fragment, since a scan
//!   ends with its transaction and one still waiting for a lock would
//!   make the engine refuse to prepare.
//! - Complete runs through the backups: each commits in the engine. Only
//!   then does a read of a backup see the change, which is why a READ_BACKUP
//!   table's commit is acknowledged after this phase.
//! - Abort runs the chain forwards, behind any operation forwarded before
//!   it (each link is FIFO), and undoes the work on every replica.
//!
//! Phase messages for work this node no longer has (already done, or never
//! reached) pass on unchanged, so the coordinator can resend a phase along
//! the live part of a chain after a node failure.
//!
//! ## Invariants
//! Every work entry names a transaction the engine holds (work whose first
//! operation failed before the engine began it is forgotten at once); no
//! operation of a work still waits when Commit or Complete reaches it. So
//! the engine's prepare, commit and abort cannot fail in a phase: if one
//! does, the node stops rather than leave its replica different from the
//! others.

use std::collections::{BTreeMap, VecDeque};

use protocol::{
    KeyConfirm, KeyRefuse, KeyRequest, MarkerEntry, Message, NodeId, OperationKind, Phase,
    PhaseDone, ScanNext, ScanOpen, ScanRows, TAKEOVER_REPORT_ENTRIES_MAX, TakeoverEntry,
    TakeoverQuery, TakeoverReport, WorkState,
};
use schema::{Error, ErrorCode, TableDef};
use storage::engine::{
    Completion, EngineConfig, NO_TRANSACTION, OperationRequest, Outcome, ReadMode, ScanBound,
    ScanRequest, TransactionId,
};
use storage::{Engine, MemoryReport};

use crate::errors::reply_for;
use crate::maps::Map;
use crate::redo;
use crate::routing::Routing;
use disk::redo::{RedoError, RedoLog};

mod checkpoint;
mod copy;
pub use checkpoint::CheckpointStart;
pub use copy::{
    COPY_BATCH_BYTES_MAX, COPY_BATCH_ROWS_DEFAULT, COPY_BATCH_ROWS_MAX, COPY_RETRY_DELAY_MS,
    COPY_SILENCE_MS_MAX, CopyStatus,
};

/// Most fragment replicas one node holds (engine tables).
pub const FRAGMENT_REPLICAS_PER_NODE_MAX: u32 = 8_192;
/// Lines one `install` adds to the log about fragments it could not create;
/// the rest are counted in one more line. A fragment that cannot be created
/// is retried at every install but reported once per schema version, so a
/// node short of memory does not write a line per fragment per state change.
pub const FRAGMENT_LOG_LINES_PER_INSTALL_MAX: usize = 16;
/// Rows a scan batch holds at most, whatever the API asks.
pub const SCAN_BATCH_ROWS_MAX: u32 = 992;
/// Bytes a scan batch holds at most, whatever the API asks.
pub const SCAN_BATCH_BYTES_MAX: u32 = 1 << 20;

/// (transaction, table, fragment)
type WorkKey = (u64, u32, u32);

/// A transaction's work on one fragment replica.
#[derive(Debug, Clone, Copy)]
struct Work {
    /// The engine's transaction; `NO_TRANSACTION` once committed here.
    engine: TransactionId,
    state: WorkState,
    /// A write reached this replica: a primary that commits it keeps the
    /// entry (`Committed`) until Complete, so that a takeover learns the
    /// transaction committed even if every other replica that knew died.
    wrote: bool,
    /// The epoch of the first Commit that reached it (0 before): a
    /// takeover commits in the same one.
    epoch: u64,
    /// Redo log bytes its writes reserved (`redo::reserve_bytes` each),
    /// until the first Commit appends its record or an abort gives them
    /// back.
    reserved: u64,
    /// Where its first redo record went (`NOT_LOGGED` before): a local
    /// checkpoint that begins while this backup holds it committing, not
    /// yet committed in the engine, must have the redo from here replayed.
    logged_at: disk::Lsn,
}

/// `Work::logged_at` of work whose changes are not in the redo log.
const NOT_LOGGED: disk::Lsn = disk::Lsn::MAX;

#[derive(Debug, Clone, Copy)]
struct FragmentReplica {
    engine_table: u32,
    schema_version: u64,
    /// Node recovery has not copied this replica yet: it may lack rows the
    /// others have, so an update or delete of a row it lacks changes
    /// nothing here (the copy brings the row as that write left it), and
    /// it serves no read.
    copying: bool,
    /// The newest state version at which another replica of the fragment
    /// joined (as this node knows it): a write planned on an older state
    /// cannot name that replica, so it is refused (1204) rather than
    /// applied without it.
    newest_join: u64,
    /// Redo log bytes one write on it reserves (`redo::reserve_bytes`).
    redo_bytes: u64,
}

/// (transaction, scan, fragment)
type ScanKey = (u64, u32, u32);

struct LocalScan {
    table: u32,
    engine_scan: u32,
    token: u64,
    coordinator: NodeId,
    batch_rows: u32,
    batch_bytes: u32,
    /// A batch is owed to the coordinator (asked for, not yet sent).
    wanted: bool,
}

enum Waiting {
    Key(KeyRequest),
    Scan(ScanKey),
    /// The copy this node runs for a starting node (by its id) waits for a
    /// row lock.
    Copy(NodeId),
    /// A row copied to this starting node waits for a lock here: its
    /// engine transaction, fragment, copy and GCI.
    CopiedRow(TransactionId, (u32, u32), u64, u32),
}

/// Counters of one query handler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryHandlerCounters {
    pub key_operations: u64,
    pub forwarded: u64,
    pub scans_opened: u64,
    pub scan_rows: u64,
    pub commits: u64,
    pub aborts: u64,
    /// Scans that still waited for a lock when their transaction
    /// committed here (the commit closed them first).
    pub waiting_scans_closed_by_commit: u64,
    /// Work entries of failed coordinators reported to a takeover.
    pub takeover_entries_reported: u64,
    /// Commit markers kept (a Commit with an API passed this replica) and
    /// reported to a takeover.
    pub markers_kept: u64,
    pub markers_reported: u64,
    /// Node recovery, on the starting node: fragment replicas and rows
    /// copied (and of those, rows that waited for a transaction holding
    /// them here), updates and deletes of rows not copied yet (nothing to
    /// change), copies started again (their source failed or refused).
    pub fragments_copied: u64,
    pub rows_copied: u64,
    pub rows_copy_skipped_locked: u64,
    pub writes_before_copy: u64,
    pub copies_restarted: u64,
    /// A node restart from its own disk (`restore_for_copy`), on the
    /// starting node: rows copied by key (taken from its restore), rows it
    /// restored that no copy named (deleted while it was down), and
    /// copies by key refused (a restored row missing or of another GCI:
    /// the fragment is copied whole), and restores whose rows outgrew
    /// their bound (every fragment then copied whole).
    pub rows_copied_by_key: u64,
    pub restored_rows_dropped: u64,
    pub copies_by_key_refused: u64,
    pub restores_for_copy_given_up: u64,
    /// Node recovery, on a copying node: batches, whole rows and rows by
    /// key sent.
    pub copy_batches_sent: u64,
    pub copy_rows_sent: u64,
    pub copy_rows_sent_by_key: u64,
    /// Copy scans that waited for a row lock longer than a lock wait may
    /// last, and waited again from that row.
    pub copy_lock_waits_timed_out: u64,
    /// Acknowledged copy batches after which the copy paused to keep to
    /// its rate (`set_copy_rows_per_second`).
    pub copy_pauses: u64,
    /// Copies this node ran for a starting node that ended because an
    /// installed state lists a newer incarnation of it (the state that
    /// removed the one that asked was skipped), and copy requests of such
    /// an incarnation dropped unanswered.
    pub copies_of_replaced_incarnations_ended: u64,
    /// Writes refused (1204) because they were routed on a state from
    /// before this incarnation joined.
    pub writes_planned_before_joining: u64,
    /// Writes refused (1204) because their chain missed a starting replica
    /// of the fragment, or they were planned before another replica of it
    /// joined (planned on a state older than this node's).
    pub writes_missing_starting_replica: u64,
    /// Reads and scans that reached a replica still being copied and were
    /// refused (1204). A router never sends them, so this stays 0.
    pub reads_refused_while_copying: u64,
    /// Reads, scan batches and failed writes (626, 630, 893) refused
    /// (4035) because this node held no membership lease: it may be cut
    /// off from a cluster that removed it.
    pub reads_refused_without_lease: u64,
    /// Work whose commit phase had passed this backup, committed when a
    /// failure made this node its fragment's primary.
    pub commits_on_promotion: u64,
    /// Committed reads refused (1204) because they were routed on a state
    /// this node has not installed yet while the fragment held decided,
    /// uncommitted work (the state may make this node its primary).
    pub reads_ahead_of_promotion: u64,
    /// Scan batches asked of this node while it was not a member, for a
    /// scan an earlier incarnation of it had open, refused (1204).
    pub scan_nexts_refused_as_non_member: u64,
}

pub struct QueryHandler {
    node: NodeId,
    engine: Engine,
    fragments: Map<(u32, u32), FragmentReplica>,
    free_engine_tables: Vec<u32>,
    work: Map<WorkKey, Work>,
    /// Commit markers (NDB's commit-ack markers): transaction → the API
    /// node waiting for its commit's answer and the API's id for it. Kept
    /// from the Commit phase until the coordinator says the API has its
    /// answer (`ForgetMarkers`), past the Complete that ends the work, so
    /// a takeover can still tell that API the transaction committed. At
    /// most one per transaction; each coordinator keeps at most
    /// MaxNoOfConcurrentTransactions awaiting answers, which bounds them.
    markers: Map<u64, (NodeId, u64)>,
    /// Work with an operation waiting for a lock: that operation's token
    /// in `waiting`, and the operations that arrived after it, in order.
    blocked: Map<WorkKey, (u64, VecDeque<KeyRequest>)>,
    next_engine_transaction: TransactionId,
    waiting: Map<u64, Waiting>,
    /// Open scans, ordered by transaction first: a commit finds the scans
    /// of its transaction by a range, not by walking every open scan.
    scans: BTreeMap<ScanKey, LocalScan>,
    next_token: u64,
    counters: QueryHandlerCounters,
    /// The installed cluster state lists this node as a member.
    member: bool,
    log: Vec<String>,
    /// Fragments whose creation failed and was logged, with the schema
    /// version that was tried: retried at every install, logged once.
    failed_fragments: Map<(u32, u32), u64>,
    /// The installed cluster state's (generation, version).
    position: (u64, u64),
    /// The version of the first installed state that lists this node as
    /// a member: writes planned on an older state are refused (see
    /// `KeyRequest::planned`).
    member_since: Option<u64>,
    /// Until when this node may serve reads (its clock): the membership's
    /// lease (`cluster::lease`), set by the composite. A read after it
    /// could miss writes a cluster that removed this node committed.
    read_lease_until_ms: u64,
    /// Per member: its incarnation and the state version at which this
    /// node first saw it (a lower bound of what a write must be planned on
    /// to reach it).
    joined_at: Map<NodeId, (u64, u64)>,
    /// Takeover queries for a state not yet installed here (the president
    /// may install it first).
    queued_queries: Vec<TakeoverQuery>,
    /// Node recovery of this node, while it is starting.
    copy_in: Option<copy::CopyIn>,
    /// Copies this node runs for starting nodes, by starter. Each serves
    /// the incarnation that asked for it, and ends when the installed
    /// state lists that incarnation as starting no more.
    copies_out: Map<NodeId, copy::CopyOut>,
    /// The starting members of the installed state and their
    /// incarnations.
    starting_incarnations: Map<NodeId, u64>,
    /// Copy requests for a state not yet installed here.
    queued_copies: Vec<protocol::CopyRequest>,
    /// Fragments here with starting replicas elsewhere: every write must
    /// still pass them (the chain planned for it must name them).
    starting_replicas: Map<(u32, u32), Vec<NodeId>>,
    /// For each fragment replica here, the started replica to copy it
    /// from (the acting primary), when this node is starting.
    copy_sources: Map<(u32, u32), NodeId>,
    /// Node recovery lines for the node's log.
    copy_log: Vec<String>,
    /// A node restart from this node's own disk (`restore_for_copy`): per
    /// fragment replica, the rows it restored by key, with their GCI,
    /// until the fragment's copy names them.
    restored_aside: Option<Map<(u32, u32), copy::RestoredRows>>,
    /// Its copies ask for rows written in this GCI or later.
    restored_since_gci: u32,
    /// Heap bytes the rows put aside took (`copy::restored_row_bytes`
    /// each), and the most they may take: DataMemory's size, what the
    /// node could hold of them anyway. Past it the rows aside are dropped
    /// and every fragment is copied whole (`restored_aside_given_up`).
    restored_aside_bytes: u64,
    restored_aside_bytes_max: u64,
    restored_aside_given_up: bool,
    /// That restore is still reading the node's disk (a step at a time):
    /// the copies wait.
    restore_for_copy_pending: bool,
    /// Fragments whose copy by key was refused: copied whole.
    full_copies: std::collections::BTreeSet<(u32, u32)>,
    /// Scan output of a copy this node runs, before it becomes `CopyRows`.
    copy_scratch: Vec<u8>,
    /// Rows a copy batch this node sends holds at most.
    copy_batch_rows: u32,
    /// Rows a copy this node runs sends per second at most.
    copy_rows_per_second: u64,
    /// The redo log (`set_redo`); without one (a node that keeps nothing
    /// on disk, benchmarks of the handler alone) nothing is logged.
    redo: Option<RedoLog>,
    /// A commit's changes, gathered before they are appended.
    redo_scratch: Vec<u8>,
    /// The highest epoch of any change logged here.
    logged_epoch_max: u64,
    /// What changed since the last local checkpoint began, for the next
    /// partial one (`checkpoint`).
    changes: checkpoint::ChangeLog,
}

impl QueryHandler {
    /// `config.tables_max` is replaced by `FRAGMENT_REPLICAS_PER_NODE_MAX`.
    pub fn new(node: NodeId, mut config: EngineConfig) -> Result<QueryHandler, Error> {
        config.tables_max = FRAGMENT_REPLICAS_PER_NODE_MAX;
        // Every engine transaction holds at least one operation record.
        config.transactions_max = config.operations_max;
        let restored_aside_bytes_max = config.data_memory_bytes;
        let engine = Engine::new(config)?;
        Ok(QueryHandler {
            node,
            engine,
            fragments: Map::default(),
            free_engine_tables: (0..FRAGMENT_REPLICAS_PER_NODE_MAX).rev().collect(),
            work: Map::default(),
            markers: Map::default(),
            blocked: Map::default(),
            next_engine_transaction: 1,
            waiting: Map::default(),
            scans: BTreeMap::new(),
            next_token: 1,
            counters: QueryHandlerCounters::default(),
            member: false,
            log: Vec::new(),
            failed_fragments: Map::default(),
            position: (0, 0),
            member_since: None,
            // Until a membership sets one, nothing limits reads (a query
            // handler driven alone, in benchmarks and tests).
            read_lease_until_ms: u64::MAX,
            joined_at: Map::default(),
            queued_queries: Vec::new(),
            copy_in: None,
            copies_out: Map::default(),
            queued_copies: Vec::new(),
            starting_replicas: Map::default(),
            starting_incarnations: Map::default(),
            copy_sources: Map::default(),
            copy_log: Vec::new(),
            restored_aside: None,
            restored_since_gci: 0,
            restored_aside_bytes: 0,
            restored_aside_bytes_max,
            restored_aside_given_up: false,
            restore_for_copy_pending: false,
            full_copies: std::collections::BTreeSet::new(),
            copy_scratch: Vec::new(),
            copy_batch_rows: COPY_BATCH_ROWS_DEFAULT,
            copy_rows_per_second: copy::COPY_ROWS_PER_SECOND_DEFAULT,
            redo: None,
            redo_scratch: Vec::new(),
            logged_epoch_max: 0,
            changes: checkpoint::ChangeLog::new(),
        })
    }

    /// From now on every commit's changes go to `log` (see `crate::redo`).
    /// Set before any write arrives.
    pub fn set_redo(&mut self, log: RedoLog) {
        assert!(self.work.is_empty(), "the redo log is set before any write");
        // The keys a partial checkpoint keeps of deletes are bounded by the
        // redo buffer's configured size (their records passed through it).
        self.changes.set_bytes_max(log.config().buffer_bytes);
        self.redo = Some(log);
    }

    pub fn redo(&self) -> Option<&RedoLog> {
        self.redo.as_ref()
    }

    /// The runtime drives the log's writes and syncs through this.
    pub fn redo_mut(&mut self) -> Option<&mut RedoLog> {
        self.redo.as_mut()
    }

    /// The membership lease reads are served under (`cluster::lease`).
    pub fn set_read_lease_until_ms(&mut self, until_ms: u64) {
        self.read_lease_until_ms = until_ms;
    }

    /// Whether this node may serve a read at `now_ms`.
    fn holds_read_lease(&self, now_ms: u64) -> bool {
        now_ms < self.read_lease_until_ms
    }

    /// The refusal of a read without a lease (counted).
    fn no_lease_refusal(&mut self) -> Error {
        self.counters.reads_refused_without_lease += 1;
        Error::new(
            ErrorCode::NotMember,
            format!(
                "data node {} holds no membership lease: it has not heard from every other \
                 member lately and may be cut off from the cluster; try again",
                self.node
            ),
        )
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn memory_report(&self) -> MemoryReport {
        self.engine.memory_report()
    }

    pub fn counters(&self) -> QueryHandlerCounters {
        self.counters
    }

    /// Lines for the node's log (fragment creation problems).
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Opens a full scan of a fragment replica's committed rows, every
    /// column, each with its GCI: the engine's error if the replica is not
    /// here.
    fn open_committed_scan(&mut self, table: u32, fragment: u32) -> Result<u32, Error> {
        let not_here = || {
            Error::new(
                ErrorCode::NoSuchTable,
                format!(
                    "node {} holds no fragment {fragment} of table {table}",
                    self.node
                ),
            )
        };
        let replica = self
            .fragments
            .get(&(table, fragment))
            .copied()
            .ok_or_else(not_here)?;
        let column_count = self
            .engine
            .table_def(replica.engine_table)
            .ok_or_else(not_here)?
            .columns
            .len();
        let columns: Vec<u16> = (0..column_count as u16).collect();
        let token = self.next_token;
        self.next_token += 1;
        self.engine.open_scan(&ScanRequest {
            transaction: NO_TRANSACTION,
            token,
            table: replica.engine_table,
            index: None,
            lower: ScanBound::Unbounded,
            upper: ScanBound::Unbounded,
            descending: false,
            filter: &[],
            columns: &columns,
            mode: ReadMode::Committed,
            gci: true,
        })
    }

    /// The committed rows of a fragment replica here, each as AttrInfo of
    /// every column in column order, sorted; an error (723) if the replica
    /// is not here, or the engine's if it cannot scan it. For checkers:
    /// every replica of a fragment must hold the same rows once no
    /// transaction is in flight.
    pub fn committed_rows(&mut self, table: u32, fragment: u32) -> Result<Vec<Vec<u8>>, Error> {
        let rows = self.committed_rows_with_gci(table, fragment)?;
        Ok(rows.into_iter().map(|(row, _)| row).collect())
    }

    /// Each committed row of a fragment replica with its GCI, sorted by
    /// row (`committed_rows`): replicas stamp every commit with the same
    /// GCI, and node recovery copies a row's, so they must agree on these
    /// too.
    pub fn committed_rows_with_gci(
        &mut self,
        table: u32,
        fragment: u32,
    ) -> Result<Vec<(Vec<u8>, u32)>, Error> {
        let scan = self.open_committed_scan(table, fragment)?;
        let mut rows = Vec::new();
        let mut data = Vec::new();
        let scanned = loop {
            data.clear();
            let batch = match self.engine.scan_next(
                0,
                scan,
                SCAN_BATCH_ROWS_MAX,
                SCAN_BATCH_BYTES_MAX,
                &mut data,
            ) {
                Ok(batch) => batch,
                Err(error) => break Err(error),
            };
            // Scan output: each row a little-endian u32 length, then its
            // GCI and AttrInfo.
            let mut rest = data.as_slice();
            while rest.len() >= 4 {
                let length = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let (gci, row) =
                    storage::split_gci(&rest[4..4 + length]).expect("a scanned row's GCI");
                rows.push((row.to_vec(), gci));
                rest = &rest[4 + length..];
            }
            if batch.finished {
                break Ok(());
            }
        };
        // The scan was opened above, so closing it cannot fail.
        self.engine
            .close_scan(scan)
            .expect("a scan opened here is open");
        scanned?;
        rows.sort_unstable();
        Ok(rows)
    }

    /// Engine transactions this handler has open (work not yet committed
    /// or aborted everywhere).
    pub fn open_work(&self) -> usize {
        self.work.len()
    }

    /// Commit markers held (for checkers: none may outlive quiescence).
    pub fn open_markers(&self) -> usize {
        self.markers.len()
    }

    /// The markers held, for a checker's report: transaction, API node and
    /// the API's id, sorted.
    pub fn describe_markers(&self) -> Vec<String> {
        let mut markers: Vec<(&u64, &(NodeId, u64))> = self.markers.iter().collect();
        markers.sort_unstable();
        markers
            .into_iter()
            .map(|(transaction, (api, client))| {
                format!("transaction {transaction:#x} of API node {api} ({client})")
            })
            .collect()
    }

    /// The open work, for a checker's report: transaction, table,
    /// fragment and state of each entry, sorted.
    pub fn describe_open_work(&self) -> Vec<String> {
        let mut entries: Vec<(&WorkKey, &Work)> = self.work.iter().collect();
        entries.sort_unstable_by_key(|(key, _)| **key);
        entries
            .into_iter()
            .map(|(key, work)| {
                format!(
                    "transaction {:#x} table {} fragment {}: {:?}{}",
                    key.0,
                    key.1,
                    key.2,
                    work.state,
                    if work.wrote { ", wrote" } else { "" }
                )
            })
            .collect()
    }

    /// Creates the fragment replicas `state` places here and drops those of
    /// tables no longer in it.
    pub fn install(&mut self, routing: &Routing) {
        self.member = routing.is_live(self.node);
        self.position = routing.version();
        if !self.member {
            self.member_since = None;
            self.joined_at.clear();
            // A node out of the cluster (restarting) is no replica of any
            // transaction's outcome: the takeovers asked the members.
            self.markers.clear();
        } else {
            let since = *self.member_since.get_or_insert(self.position.1);
            self.joined_at.retain(|node, (incarnation, _)| {
                routing.is_live(*node) && routing.incarnation(*node) == *incarnation
            });
            for node in 0..=NodeId::MAX {
                if routing.is_live(node) && !self.joined_at.contains_key(&node) {
                    // A member new here joined at this state or before it
                    // (states may be skipped); those found when this node
                    // joined are older than its own membership, and
                    // writes planned before that are refused anyway.
                    self.joined_at.insert(
                        node,
                        (routing.incarnation(node), self.position.1.max(since)),
                    );
                }
            }
        }
        // A scan's coordinator that left the cluster will never ask for
        // more or close it; a locking scan's locks stay with its work,
        // which the takeover of that coordinator ends. Nor will one whose
        // node is live as a later incarnation (this node skipped the state
        // that removed the one that opened the scan, whose id names it).
        let mut orphaned: Vec<(u64, u32, u32)> = self
            .scans
            .iter()
            .filter(|(key, scan)| {
                scan.coordinator != self.node
                    && (!routing.is_live(scan.coordinator)
                        || !crate::coordinator::made_by(
                            key.0,
                            scan.coordinator,
                            routing.incarnation(scan.coordinator),
                        ))
            })
            .map(|(key, scan)| (key.0, scan.table, key.2))
            .collect();
        orphaned.sort_unstable();
        orphaned.dedup();
        for (transaction, table, fragment) in orphaned {
            self.close_scans_of(transaction, table, fragment);
        }
        let mut wanted = Vec::new();
        for route in routing.tables() {
            for (index, fragment) in route.fragments.iter().enumerate() {
                if fragment.replicas.contains(&self.node) {
                    wanted.push((route.id, index as u32, route.schema_version, &route.def));
                }
            }
        }
        let mut stale: Vec<(u32, u32)> = self
            .fragments
            .iter()
            .filter(|(key, replica)| {
                !wanted
                    .iter()
                    .any(|w| (w.0, w.1) == **key && w.2 == replica.schema_version)
            })
            .map(|(key, _)| *key)
            .collect();
        stale.sort_unstable();
        for key in stale {
            let replica = self.fragments.remove(&key).expect("listed above");
            self.drop_fragment_work(key);
            if let Err(error) = self.engine.drop_table(replica.engine_table) {
                self.log.push(format!(
                    "dropping fragment {} of table {}: {}",
                    key.1, key.0, error.detail
                ));
            }
            self.free_engine_tables.push(replica.engine_table);
        }
        self.commit_decided_work_as_primary(routing);
        self.failed_fragments.retain(|key, schema_version| {
            wanted
                .iter()
                .any(|w| (w.0, w.1) == *key && w.2 == *schema_version)
        });
        let mut lines = 0;
        let mut unlogged = 0;
        for (table, fragment, schema_version, def) in wanted {
            if self.fragments.contains_key(&(table, fragment)) {
                continue;
            }
            match self.create_fragment(table, fragment, schema_version, def) {
                Ok(()) => {
                    self.failed_fragments.remove(&(table, fragment));
                }
                Err(error) => {
                    let reported = self
                        .failed_fragments
                        .insert((table, fragment), schema_version)
                        == Some(schema_version);
                    if reported {
                        continue;
                    }
                    if lines < FRAGMENT_LOG_LINES_PER_INSTALL_MAX {
                        lines += 1;
                        // The error's display names its NDB and MySQL codes
                        // and message, so the line says why even when the
                        // engine gave no detail.
                        self.log.push(format!(
                            "cannot create fragment {fragment} of table {table} ({}): {error}",
                            def.name
                        ));
                    } else {
                        unlogged += 1;
                    }
                }
            }
        }
        if unlogged > 0 {
            self.log.push(format!(
                "cannot create {unlogged} more fragment(s) either (at most \
                 {FRAGMENT_LOG_LINES_PER_INSTALL_MAX} are named per state change); operations on \
                 them fail until memory is freed and the next state change creates them"
            ));
        }
        self.install_copies(routing);
    }

    fn create_fragment(
        &mut self,
        table: u32,
        fragment: u32,
        schema_version: u64,
        def: &TableDef,
    ) -> Result<(), Error> {
        let engine_table = self.free_engine_tables.pop().ok_or_else(|| {
            Error::new(
                ErrorCode::TooManyPartitions,
                format!("more than {FRAGMENT_REPLICAS_PER_NODE_MAX} fragment replicas on one node"),
            )
        })?;
        // The engine wants a name of its own for each of its tables, and a
        // node may hold several fragments of one table.
        let redo_bytes = redo::reserve_bytes(def);
        let mut def = def.clone();
        def.name = format!("{}#{table}/{fragment}", def.name);
        // A fragment sees only its own rows: unique indexes are plain
        // ordered indexes here, and uniqueness is checked cluster-wide in
        // each index's hidden table (see `unique`).
        for index in &mut def.ordered_indexes {
            index.unique = false;
        }
        if let Err(error) = self.engine.create_table(engine_table, def) {
            self.free_engine_tables.push(engine_table);
            return Err(error);
        }
        self.fragments.insert(
            (table, fragment),
            FragmentReplica {
                engine_table,
                schema_version,
                copying: false,
                newest_join: 0,
                redo_bytes,
            },
        );
        Ok(())
    }

    /// Forgets the work and scans of a dropped fragment (the engine drops
    /// its rows and records with the table).
    fn drop_fragment_work(&mut self, key: (u32, u32)) {
        let mut doomed: Vec<WorkKey> = self
            .work
            .keys()
            .filter(|w| (w.1, w.2) == key)
            .copied()
            .collect();
        doomed.sort_unstable();
        self.blocked.retain(|work, _| (work.1, work.2) != key);
        // A copied row waiting for a lock holds its copy transaction open
        // in the engine (and so the table): it ends with the fragment.
        let mut copied_rows: Vec<TransactionId> = Vec::new();
        self.waiting.retain(|_, waiting| match waiting {
            Waiting::Key(request) => (request.table, request.fragment) != key,
            Waiting::CopiedRow(transaction, fragment, _, _) => {
                if *fragment == key {
                    copied_rows.push(*transaction);
                }
                *fragment != key
            }
            Waiting::Scan(_) | Waiting::Copy(_) => true,
        });
        copied_rows.sort_unstable();
        copied_rows.dedup();
        for transaction in copied_rows {
            if self.engine.has_transaction(transaction) {
                self.abort_work(transaction);
            }
        }
        for work_key in doomed {
            let work = self.work.remove(&work_key).expect("listed above");
            self.unreserve(work.reserved);
            if work.state != WorkState::Committed {
                self.abort_work(work.engine);
            }
        }
        self.close_scans_of_fragment(key.0, key.1);
        self.cancel_copies_of_fragment(key);
    }

    /// Commits the work of fragments this node is now the primary of that
    /// the commit phase already passed here (a backup commits only at the
    /// complete phase, so that no backup shows a write before the primary
    /// does). The commit was decided, and, the old primary having failed,
    /// may have been acknowledged: a committed read here must see it now,
    /// not once the takeover's phases arrive.
    fn commit_decided_work_as_primary(&mut self, routing: &Routing) {
        let mut decided: Vec<WorkKey> = self
            .work
            .iter()
            .filter(|(key, work)| {
                work.state == WorkState::Committing
                    && routing.table(key.1).is_some_and(|route| {
                        (key.2 as usize) < route.fragments.len()
                            && routing.live_replicas(route, key.2).first() == Some(&self.node)
                    })
            })
            .map(|(key, _)| *key)
            .collect();
        decided.sort_unstable();
        for key in decided {
            let work = self.work[&key];
            self.commit_as_primary(key, work);
            self.counters.commits_on_promotion += 1;
        }
    }

    /// The primary commits prepared `work` of `key` in its engine; it keeps
    /// a note that it committed a fragment it wrote (a takeover needs it if
    /// the coordinator and the backups die) until the complete phase.
    fn commit_as_primary(&mut self, key: WorkKey, work: Work) {
        self.commit_work(work.engine, key, protocol::gci_of(work.epoch));
        self.counters.commits += 1;
        if work.wrote {
            let entry = self.work.get_mut(&key).expect("present");
            entry.engine = NO_TRANSACTION;
            entry.state = WorkState::Committed;
        } else {
            // Only locks were taken here: nothing to remember.
            assert_eq!(work.reserved, 0, "work without writes reserved redo");
            self.work.remove(&key);
        }
    }

    /// When the engine next needs `tick` (a lock wait deadline), or a
    /// node-recovery copy is due to start again or to end its pause.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        [
            self.engine.next_deadline_ms(),
            self.copy_retry_at_ms(),
            self.copy_resume_at_ms(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Ends lock waits whose time is up; starts a failed copy again.
    pub fn tick(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        self.engine.expire_lock_waits(now_ms);
        self.drain_completions(now_ms, out);
        self.retry_copy(now_ms, out);
        self.resume_paced_copies(now_ms, out);
    }

    /// Handles a message from the coordinator or another replica. Returns
    /// the message back if it is not one for the query handler.
    pub fn on_message(
        &mut self,
        now_ms: u64,
        message: Message,
        out: &mut Vec<(NodeId, Message)>,
    ) -> Option<Message> {
        match message {
            Message::KeyRequest(request) => self.on_key_request(now_ms, request, out),
            Message::Commit(phase) => self.on_commit(phase, out),
            Message::Complete(phase) => self.on_complete(phase, out),
            Message::Abort(phase) => self.on_abort(phase, out),
            Message::FragmentScanOpen(open) => self.on_scan_open(now_ms, *open, out),
            Message::ScanNext(next) => self.on_scan_next(now_ms, next, out),
            Message::ScanClose { transaction, scan } => self.on_scan_close(transaction, scan),
            Message::TakeoverQuery(query) => self.on_takeover_query(query, out),
            Message::ForgetMarkers { transactions } => {
                for transaction in transactions.iter() {
                    self.markers.remove(transaction);
                }
            }
            Message::CopyRequest(request) => self.on_copy_request(now_ms, request, out),
            Message::CopyRows(rows) => self.on_copy_rows(now_ms, rows, out),
            Message::CopyNext(next) => self.on_copy_next(now_ms, next, out),
            other => return Some(other),
        }
        self.drain_completions(now_ms, out);
        if !self.copies_out.is_empty() {
            // A phase may have ended the last transaction a copy waits for.
            self.advance_copies_out(now_ms, out);
        }
        None
    }

    fn on_key_request(
        &mut self,
        now_ms: u64,
        request: KeyRequest,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let key = (request.transaction, request.table, request.fragment);
        if let Some((_, queue)) = self.blocked.get_mut(&key) {
            queue.push_back(request);
            return;
        }
        self.counters.key_operations += 1;
        let Some(replica) = self
            .fragments
            .get(&(request.table, request.fragment))
            .copied()
        else {
            let error = self.no_fragment(request.table, request.fragment);
            self.refuse(request, &error, out);
            return;
        };
        if !request.kind.is_write() && replica.copying {
            self.counters.reads_refused_while_copying += 1;
            let error = copying_refusal(self.node, request.table, request.fragment);
            self.refuse(request, &error, out);
            return;
        }
        if !request.kind.is_write() && !self.holds_read_lease(now_ms) {
            let error = self.no_lease_refusal();
            self.refuse(request, &error, out);
            return;
        }
        if request.kind == OperationKind::ReadCommitted
            && request.planned > self.position.1
            && self.work.iter().any(|(key, work)| {
                (key.1, key.2) == (request.table, request.fragment)
                    && work.state == WorkState::Committing
            })
        {
            // Routed on a state that may make this node the primary, before
            // it installed that state and committed what the old primary
            // acknowledged: the row may show a value older than an
            // acknowledged commit. Temporary: the retry finds it installed.
            self.counters.reads_ahead_of_promotion += 1;
            let error = Error::new(
                ErrorCode::DistributionChanged,
                format!(
                    "the read was routed on state version {}, which node {} has not installed \
                     yet: retry the transaction",
                    request.planned, self.node
                ),
            );
            self.refuse(request, &error, out);
            return;
        }
        if request.kind.is_write()
            && self
                .member_since
                .is_some_and(|since| request.planned < since)
        {
            // Routed on a state from before this incarnation joined: the
            // chain named an earlier one (and this node would not be told
            // how the transaction ends if it aborts for that one's failure).
            self.counters.writes_planned_before_joining += 1;
            let error = Error::new(
                ErrorCode::DistributionChanged,
                format!(
                    "the write was routed on state version {}, before node {} joined at version \
                     {}: retry the transaction",
                    request.planned,
                    self.node,
                    self.member_since.unwrap_or_default()
                ),
            );
            self.refuse(request, &error, out);
            return;
        }
        if request.kind.is_write() && request.planned < replica.newest_join {
            // Planned before another replica of the fragment joined: the
            // chain cannot name it, and that replica would miss the write.
            self.counters.writes_missing_starting_replica += 1;
            let error = Error::new(
                ErrorCode::DistributionChanged,
                format!(
                    "the write was routed on state version {}, before a replica of fragment {} \
                     of table {} joined (version {}): retry the transaction",
                    request.planned, request.fragment, request.table, replica.newest_join
                ),
            );
            self.refuse(request, &error, out);
            return;
        }
        if request.kind.is_write()
            && !self.starting_replicas.is_empty()
            && let Some(missing) = self.missing_starting_replica(&request)
        {
            self.counters.writes_missing_starting_replica += 1;
            let error = Error::new(
                ErrorCode::DistributionChanged,
                format!(
                    "the write was routed without node {missing}, which is copying fragment {} \
                     of table {}: retry the transaction",
                    request.fragment, request.table
                ),
            );
            self.refuse(request, &error, out);
            return;
        }
        // A write reserves the redo bytes of its commit now, so that a full
        // log or buffer refuses the write and never its commit.
        let mut reserved = 0;
        if request.kind.is_write()
            && let Some(log) = self.redo.as_mut()
        {
            if let Err(error) = log.reserve(replica.redo_bytes) {
                let error = redo_refusal(&error);
                self.refuse(request, &error, out);
                return;
            }
            reserved = replica.redo_bytes;
        }
        let engine_transaction = if request.kind.locks() {
            let engine_transaction = self.work_or_begin(key, request.kind.is_write());
            self.work.get_mut(&key).expect("begun").reserved += reserved;
            engine_transaction
        } else {
            // A committed read sees the transaction's own changes on this
            // fragment, if it has any here.
            self.work
                .get(&key)
                .map_or(NO_TRANSACTION, |work| work.engine)
        };
        let token = self.next_token;
        self.next_token += 1;
        let mut data = Vec::new();
        let result = self.engine.execute(
            now_ms,
            &OperationRequest {
                transaction: engine_transaction,
                token,
                table: replica.engine_table,
                kind: engine_kind(request.kind),
                key: &request.key,
                values: &request.values,
                columns: &request.columns,
            },
            &mut data,
        );
        match result {
            Ok(Outcome::Done) => {
                let inserted = self.engine.write_inserted();
                self.key_done(request, data, inserted, out)
            }
            Err(error)
                if error.code == ErrorCode::NoSuchRow
                    && replica.copying
                    && matches!(request.kind, OperationKind::Update | OperationKind::Delete)
                    && request.columns.is_empty() =>
            {
                // Not copied here yet: the copy reads the row only after
                // this transaction released it at the replica copied from,
                // so it brings the row as this write leaves it.
                self.counters.writes_before_copy += 1;
                self.forget_unbegun(key);
                self.key_done(request, Vec::new(), false, out);
            }
            Err(error) if error.code == ErrorCode::NoSuchRow && replica.copying => {
                // The write wants the row as it was (to keep unique
                // indexes), and only the copy can bring it here: the
                // transaction tries again once it has.
                self.give_back(key, reserved);
                self.forget_unbegun(key);
                let error = copying_refusal(self.node, request.table, request.fragment);
                self.refuse(request, &error, out);
            }
            Ok(Outcome::Waiting) => {
                assert!(request.kind.locks(), "a committed read never waits");
                self.waiting.insert(token, Waiting::Key(request));
                let previous = self.blocked.insert(key, (token, VecDeque::new()));
                assert!(previous.is_none(), "work waits for one operation at a time");
            }
            Err(error) => {
                self.give_back(key, reserved);
                self.forget_unbegun(key);
                // A write's failure reads the row (626 when it is missing,
                // 630 when an insert finds it): without a membership lease
                // it is refused instead, as a read is. A node cut off from
                // the others would answer from rows they have since changed
                // (the simulator's seed 42996: updates answered 626 for rows
                // the rest of the cluster had inserted). A write that
                // succeeds answers nothing about the row and goes on to
                // every other replica, which a cut-off node cannot reach,
                // so it needs no lease (`refuses_write_failure`).
                let error = if self.refuses_write_failure(now_ms, &request, error.code) {
                    self.no_lease_refusal()
                } else {
                    error
                };
                self.refuse(request, &error, out);
            }
        }
    }

    /// Whether a write's failure with `code` is refused (4035) instead of
    /// answered: it says what the row holds (its absence, its presence, a
    /// unique value in use), and this node holds no membership lease.
    /// Other failures (lock waits, memory) say nothing about the rows and
    /// keep their codes; a replica being copied answers nothing the first
    /// replica does not.
    fn refuses_write_failure(&self, now_ms: u64, request: &KeyRequest, code: ErrorCode) -> bool {
        request.kind.is_write()
            && matches!(
                code,
                ErrorCode::NoSuchRow | ErrorCode::DuplicateKey | ErrorCode::UniqueViolation
            )
            && !self
                .fragments
                .get(&(request.table, request.fragment))
                .is_some_and(|replica| replica.copying)
            && !self.holds_read_lease(now_ms)
    }

    /// Gives back the redo bytes an operation of `key`'s work reserved
    /// when the operation failed (the work's other writes keep theirs).
    fn give_back(&mut self, key: WorkKey, bytes: u64) {
        if bytes > 0 {
            let work = self.work.get_mut(&key).expect("the work reserved");
            work.reserved -= bytes;
            self.unreserve(bytes);
        }
    }

    /// Forgets the work of `key` if the engine never began its transaction
    /// (the first operation failed before the engine took a record), so
    /// that every work entry names a transaction the engine holds: the
    /// phases can then treat any engine error as a broken invariant.
    /// The refusal of a request for a fragment this node does not hold:
    /// temporary (1204) while the node has not installed a state that makes
    /// it a member (a forwarded write can outrun the state that admits this
    /// node), else the table or fragment is not here (723).
    fn no_fragment(&self, table: u32, fragment: u32) -> Error {
        if self.member {
            Error::new(
                ErrorCode::NoSuchTable,
                format!(
                    "node {} holds no fragment {fragment} of table {table}",
                    self.node
                ),
            )
        } else {
            Error::new(
                ErrorCode::DistributionChanged,
                format!(
                    "node {} is not a member of the cluster yet: it holds no fragment \
                     {fragment} of table {table}",
                    self.node
                ),
            )
        }
    }

    fn forget_unbegun(&mut self, key: WorkKey) {
        if let Some(work) = self.work.get(&key)
            && work.state == WorkState::Prepared
            && !self.engine.has_transaction(work.engine)
        {
            assert!(
                !self.blocked.contains_key(&key),
                "work the engine never began has an operation waiting"
            );
            let work = self.work.remove(&key).expect("present");
            self.unreserve(work.reserved);
        }
    }

    fn work_or_begin(&mut self, key: WorkKey, write: bool) -> TransactionId {
        let next = &mut self.next_engine_transaction;
        let work = self.work.entry(key).or_insert_with(|| {
            *next += 1;
            Work {
                engine: *next - 1,
                state: WorkState::Prepared,
                wrote: false,
                epoch: 0,
                reserved: 0,
                logged_at: NOT_LOGGED,
            }
        });
        // The coordinator sends no operation once it began the commit; a
        // scan opened before the commit and overtaken by it is refused
        // before it gets here (`on_scan_open`).
        assert_eq!(
            work.state,
            WorkState::Prepared,
            "node {}: an operation of transaction {} after its commit reached fragment {} of \
             table {}",
            self.node,
            key.0,
            key.2,
            key.1
        );
        work.wrote |= write;
        work.engine
    }

    fn key_done(
        &mut self,
        mut request: KeyRequest,
        data: Vec<u8>,
        inserted: bool,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        if request.kind.is_write()
            && let Some(next) = request.chain.pop_front()
        {
            self.counters.forwarded += 1;
            // The replicas behind do what this one did: a `Write` is an
            // insert or an update from here on, so a starting replica that
            // lacks the row can tell a new row (which it must take) from a
            // change of one it has not copied yet (which the copy brings).
            if request.kind == OperationKind::Write {
                request.kind = if inserted {
                    OperationKind::Insert
                } else {
                    OperationKind::Update
                };
            }
            // The row before, as the first replica saw it, travels with
            // the request; the others need not read it again (and a
            // starting replica may not have it yet).
            if request.before.is_none() && !request.columns.is_empty() {
                request.before = Some(Box::new(data));
                request.columns = Vec::new();
            }
            out.push((next, Message::KeyRequest(request)));
        } else {
            let data = match request.before {
                Some(before) => *before,
                None => data,
            };
            out.push((
                request.coordinator,
                Message::KeyConfirm(KeyConfirm {
                    transaction: request.transaction,
                    operation: request.operation,
                    data,
                }),
            ));
        }
    }

    fn refuse(&mut self, request: KeyRequest, error: &Error, out: &mut Vec<(NodeId, Message)>) {
        out.push((
            request.coordinator,
            Message::KeyRefuse(KeyRefuse {
                transaction: request.transaction,
                operation: request.operation,
                node: self.node,
                error: reply_for(error),
            }),
        ));
    }

    fn on_commit(&mut self, mut phase: Phase, out: &mut Vec<(NodeId, Message)>) {
        let key = (phase.transaction, phase.table, phase.fragment);
        // The coordinator starts the commit only once every operation of
        // the transaction was confirmed or refused, so no key operation of
        // this work can still wait here.
        assert!(
            !self.blocked.contains_key(&key),
            "node {}: Commit of transaction {} on fragment {} of table {} while one of its \
             operations waits for a lock",
            self.node,
            phase.transaction,
            phase.fragment,
            phase.table
        );
        // A scan of the transaction ends with it (the API may not have read
        // it to the end, and its ScanClose may still be on its way from the
        // coordinator). Closing the fragment's scans first also cancels a
        // lock wait a locking scan may have: the engine refuses to prepare
        // a transaction that waits, and committing around that refusal
        // would lose the work and orphan its locks.
        let waited = self.close_scans_of(phase.transaction, phase.table, phase.fragment);
        self.counters.waiting_scans_closed_by_commit += waited;
        // The marker is left by the first Commit to reach prepared work
        // here: a Commit that finds the work committing or gone is a
        // repeat (a resend after a failure, or one held for a reconnect)
        // and may come after the API acknowledged the answer and the
        // marker was forgotten.
        let first_commit_here = self
            .work
            .get(&key)
            .is_some_and(|work| work.state == WorkState::Prepared);
        // A marker on the coordinator's own node would die with the
        // coordinator: only the other replicas keep one.
        if first_commit_here
            && phase.coordinator != self.node
            && phase.api != protocol::NO_API
            && self
                .markers
                .insert(phase.transaction, (phase.api, phase.client))
                .is_none()
        {
            self.counters.markers_kept += 1;
        }
        // Each step is taken once, so a phase resent after a failure (or
        // by a takeover) changes nothing where it already passed.
        let primary = phase.chain.is_empty();
        if first_commit_here && let Some(work) = self.work.get_mut(&key) {
            work.epoch = phase.epoch;
        }
        if let Some(work) = self.work.get(&key).copied() {
            match (work.state, primary) {
                (WorkState::Prepared, false) => {
                    self.prepare_work(work.engine, &phase);
                    self.log_commit(key, phase.epoch);
                    self.set_state(key, WorkState::Committing);
                }
                (WorkState::Prepared | WorkState::Committing, true) => {
                    // The primary, last in the commit chain (or a backup
                    // that became the primary after a failure).
                    if work.state == WorkState::Prepared {
                        self.prepare_work(work.engine, &phase);
                        self.log_commit(key, phase.epoch);
                    }
                    self.commit_as_primary(key, work);
                }
                (WorkState::Committing, false) | (WorkState::Committed, _) => {}
            }
        }
        if phase.chain.is_empty() {
            out.push((phase.coordinator, Message::Committed(done(&phase))));
        } else {
            let next = phase.chain.remove(0);
            out.push((next, Message::Commit(phase)));
        }
    }

    fn on_complete(&mut self, mut phase: Phase, out: &mut Vec<(NodeId, Message)>) {
        let key = (phase.transaction, phase.table, phase.fragment);
        if let Some(work) = self.work.remove(&key) {
            assert!(
                !self.blocked.contains_key(&key),
                "Complete of work with an operation waiting"
            );
            match work.state {
                // Complete follows Commit along the same chain, so this
                // backup prepared the work; the engine's commit of a
                // prepared transaction cannot fail.
                WorkState::Committing => {
                    self.commit_work(work.engine, key, protocol::gci_of(work.epoch));
                    self.counters.commits += 1;
                }
                // The primary's note of its commit is no longer needed.
                WorkState::Committed => {}
                WorkState::Prepared => panic!(
                    "node {}: Complete of transaction {} on fragment {} of table {} before its \
                     Commit",
                    self.node, phase.transaction, phase.fragment, phase.table
                ),
            }
        }
        if phase.chain.is_empty() {
            out.push((phase.coordinator, Message::Completed(done(&phase))));
        } else {
            let next = phase.chain.remove(0);
            out.push((next, Message::Complete(phase)));
        }
    }

    fn on_abort(&mut self, mut phase: Phase, out: &mut Vec<(NodeId, Message)>) {
        let key = (phase.transaction, phase.table, phase.fragment);
        // Operations of this work still waiting for a lock are cancelled by
        // the engine's abort; forget them so no late answer goes out.
        // Scans of this work are closed below, with their waits.
        if let Some((token, _)) = self.blocked.remove(&key) {
            self.waiting.remove(&token);
        }
        self.close_scans_of(phase.transaction, phase.table, phase.fragment);
        if let Some(work) = self.work.remove(&key) {
            // No coordinator aborts after its Commit went out, and a
            // takeover aborts only what no replica began to commit.
            assert_eq!(
                work.state,
                WorkState::Prepared,
                "node {}: Abort of transaction {} on fragment {} of table {} after its Commit",
                self.node,
                phase.transaction,
                phase.fragment,
                phase.table
            );
            self.abort_work(work.engine);
            self.unreserve(work.reserved);
            self.counters.aborts += 1;
        }
        if phase.chain.is_empty() {
            out.push((phase.coordinator, Message::Aborted(done(&phase))));
        } else {
            let next = phase.chain.remove(0);
            out.push((next, Message::Abort(phase)));
        }
    }

    fn on_scan_open(&mut self, now_ms: u64, open: ScanOpen, out: &mut Vec<(NodeId, Message)>) {
        self.counters.scans_opened += 1;
        let scan_key = (open.transaction, open.scan, open.fragment);
        let fail = |error: &Error, out: &mut Vec<(NodeId, Message)>| {
            out.push((
                open.coordinator,
                Message::ScanRows(ScanRows::failed(
                    open.transaction,
                    open.scan,
                    open.fragment,
                    reply_for(error),
                )),
            ));
        };
        let Some(replica) = self.fragments.get(&(open.table, open.fragment)).copied() else {
            let error = self.no_fragment(open.table, open.fragment);
            fail(&error, out);
            return;
        };
        if replica.copying {
            self.counters.reads_refused_while_copying += 1;
            fail(&copying_refusal(self.node, open.table, open.fragment), out);
            return;
        }
        if self.scans.contains_key(&scan_key) {
            let error = Error::new(ErrorCode::NoSuchScan, "the scan is already open");
            fail(&error, out);
            return;
        }
        let work_key = (open.transaction, open.table, open.fragment);
        if self
            .work
            .get(&work_key)
            .is_some_and(|work| work.state != WorkState::Prepared)
        {
            // The transaction's commit overtook this open (it came through
            // the backups): the scan ended with the transaction.
            let error = Error::new(
                ErrorCode::NoSuchScan,
                "the scan's transaction committed before the scan opened",
            );
            fail(&error, out);
            return;
        }
        let engine_transaction = if open.mode.locks() {
            self.work_or_begin(work_key, false)
        } else {
            self.work
                .get(&work_key)
                .map_or(NO_TRANSACTION, |work| work.engine)
        };
        let token = self.next_token;
        self.next_token += 1;
        let mode = match open.mode {
            OperationKind::ReadShared => ReadMode::Shared,
            OperationKind::ReadExclusive => ReadMode::Exclusive,
            _ => ReadMode::Committed,
        };
        let opened = self.engine.open_scan(&ScanRequest {
            transaction: engine_transaction,
            token,
            table: replica.engine_table,
            index: open.index,
            lower: bound(&open.lower),
            upper: bound(&open.upper),
            descending: open.descending,
            filter: &open.filter,
            columns: &open.columns,
            mode,
            gci: false,
        });
        match opened {
            Ok(engine_scan) => {
                self.scans.insert(
                    scan_key,
                    LocalScan {
                        table: open.table,
                        engine_scan,
                        token,
                        coordinator: open.coordinator,
                        batch_rows: open.batch_rows.clamp(1, SCAN_BATCH_ROWS_MAX),
                        batch_bytes: open.batch_bytes.clamp(1, SCAN_BATCH_BYTES_MAX),
                        wanted: true,
                    },
                );
                self.run_scan(now_ms, scan_key, out);
            }
            Err(error) => {
                if open.mode.locks() {
                    self.forget_unbegun(work_key);
                }
                fail(&error, out);
            }
        }
    }

    fn on_scan_next(&mut self, now_ms: u64, next: ScanNext, out: &mut Vec<(NodeId, Message)>) {
        for fragment in next.fragments {
            let scan_key = (next.transaction, next.scan, fragment);
            match self.scans.get_mut(&scan_key) {
                Some(scan) => {
                    scan.wanted = true;
                    self.run_scan(now_ms, scan_key, out);
                }
                None => {
                    let error = self.scan_not_open();
                    out.push((
                        next.coordinator,
                        Message::ScanRows(ScanRows::failed(
                            next.transaction,
                            next.scan,
                            fragment,
                            reply_for(&error),
                        )),
                    ));
                }
            }
        }
    }

    /// The refusal of a `ScanNext` for a scan not open here. On a node
    /// that is not a member of its installed state, the cluster changed
    /// under the scan: most often this is a restarted incarnation, not
    /// admitted yet, and the scan was opened on the earlier one, whose
    /// connection failed; the coordinator's node has not installed the
    /// state that removes that incarnation, so its wiring handed the
    /// request to the new connection (seed 660514). That is a node failure
    /// the coordinator has not acted on yet: temporary (1204, the retry
    /// routes afresh), as a request for a fragment a non-member does not
    /// hold (`no_fragment`), not an "unknown scan" no client expects.
    fn scan_not_open(&mut self) -> Error {
        if self.member {
            return Error::new(ErrorCode::NoSuchScan, "the scan is not open on this node");
        }
        self.counters.scan_nexts_refused_as_non_member += 1;
        Error::new(
            ErrorCode::DistributionChanged,
            format!(
                "node {} is not a member of the cluster: it restarted or left since the scan \
                 opened here, and the scan is not open on it; retry the transaction",
                self.node
            ),
        )
    }

    fn on_scan_close(&mut self, transaction: u64, scan: u32) {
        let mut keys: Vec<ScanKey> = self
            .scans
            .keys()
            .filter(|k| k.0 == transaction && k.1 == scan)
            .copied()
            .collect();
        keys.sort_unstable();
        for key in keys {
            self.close_scan(key);
        }
    }

    /// Closes the transaction's scans of a fragment; returns how many of
    /// them waited for a lock.
    fn close_scans_of(&mut self, transaction: u64, table: u32, fragment: u32) -> u64 {
        let keys: Vec<ScanKey> = self
            .scans
            .range((transaction, 0, 0)..=(transaction, u32::MAX, u32::MAX))
            .filter(|(k, scan)| k.2 == fragment && scan.table == table)
            .map(|(k, _)| *k)
            .collect();
        let mut waited = 0;
        for key in keys {
            let token = self.scans[&key].token;
            if matches!(self.waiting.get(&token), Some(Waiting::Scan(_))) {
                waited += 1;
            }
            self.close_scan(key);
        }
        waited
    }

    fn close_scans_of_fragment(&mut self, table: u32, fragment: u32) {
        let keys: Vec<ScanKey> = self
            .scans
            .iter()
            .filter(|(k, scan)| k.2 == fragment && scan.table == table)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.close_scan(key);
        }
    }

    fn close_scan(&mut self, key: ScanKey) {
        if let Some(scan) = self.scans.remove(&key) {
            self.waiting.remove(&scan.token);
            // Every scan in `scans` is open in the engine: it leaves the
            // map exactly when the engine closes it.
            if let Err(error) = self.engine.close_scan(scan.engine_scan) {
                panic!(
                    "node {}: closing scan {} of transaction {}: {}",
                    self.node, key.1, key.0, error
                );
            }
        }
    }

    /// Answers the takeover queries that waited for the state just
    /// installed; the runtime calls it after `install`.
    pub fn answer_queued_queries(&mut self, out: &mut Vec<(NodeId, Message)>) {
        let queued = std::mem::take(&mut self.queued_queries);
        for query in queued {
            self.on_takeover_query(query, out);
        }
    }

    fn set_state(&mut self, key: WorkKey, state: WorkState) {
        self.work.get_mut(&key).expect("present").state = state;
    }

    /// Reports what this replica holds of the failed coordinator's
    /// transactions, once the state that removed it is installed here (so
    /// no phase of that coordinator arrives after the report: the node
    /// drops messages from removed incarnations).
    fn on_takeover_query(&mut self, query: TakeoverQuery, out: &mut Vec<(NodeId, Message)>) {
        if self.position < (query.generation, query.version) {
            self.queued_queries.push(query);
            return;
        }
        // The work of every incarnation of the failed node but a live one:
        // the president names only the newest removed incarnation of each
        // node (`ClusterState::removed`), and an older one's takeover may
        // have died with an earlier president.
        let live = self
            .joined_at
            .get(&query.failed_node)
            .map(|(incarnation, _)| *incarnation);
        let failed = |transaction: u64| {
            crate::coordinator::coordinator_node(transaction) == query.failed_node
                && live.is_none_or(|live| {
                    !crate::coordinator::made_by(transaction, query.failed_node, live)
                })
        };
        let mut markers: Vec<MarkerEntry> = self
            .markers
            .iter()
            .filter(|(transaction, _)| failed(**transaction))
            .map(|(transaction, (api, client))| MarkerEntry {
                transaction: *transaction,
                api: *api,
                client: *client,
            })
            .collect();
        markers.sort_unstable_by_key(|marker| marker.transaction);
        self.counters.markers_reported += markers.len() as u64;
        let mut entries: Vec<TakeoverEntry> = self
            .work
            .iter()
            .filter(|(key, _)| failed(key.0))
            .map(|(key, work)| TakeoverEntry {
                transaction: key.0,
                table: key.1,
                fragment: key.2,
                state: work.state,
                epoch: work.epoch,
            })
            .collect();
        entries.sort_unstable_by_key(|entry| (entry.transaction, entry.table, entry.fragment));
        self.counters.takeover_entries_reported += entries.len() as u64;
        // Work first, then markers, each report within the limit.
        let mut reports: Vec<(Vec<TakeoverEntry>, Vec<MarkerEntry>)> = entries
            .chunks(TAKEOVER_REPORT_ENTRIES_MAX)
            .map(|chunk| (chunk.to_vec(), Vec::new()))
            .collect();
        reports.extend(
            markers
                .chunks(TAKEOVER_REPORT_ENTRIES_MAX)
                .map(|chunk| (Vec::new(), chunk.to_vec())),
        );
        if reports.is_empty() {
            reports.push((Vec::new(), Vec::new()));
        }
        let count = reports.len();
        for (index, (entries, markers)) in reports.into_iter().enumerate() {
            out.push((
                query.asked_by,
                takeover_report(&query, entries, markers, index + 1 == count),
            ));
        }
    }

    /// The engine's prepare of work whose operations were all answered.
    /// It can fail only if an operation still waits for a lock or the
    /// engine does not hold the transaction; either means this node's
    /// bookkeeping is broken, and it stops rather than commit a replica
    /// that differs from the others.
    fn prepare_work(&mut self, work: TransactionId, phase: &Phase) {
        if let Err(error) = self.engine.prepare(work) {
            panic!(
                "node {}: prepare of transaction {} on fragment {} of table {} failed: {}",
                self.node, phase.transaction, phase.fragment, phase.table, error
            );
        }
    }

    /// Appends the changes of prepared work to the redo log, in `epoch`,
    /// from the bytes its writes reserved, and gives back the rest.
    fn log_commit(&mut self, key: WorkKey, epoch: u64) {
        let Some(redo) = self.redo.as_mut() else {
            return;
        };
        let work = self.work.get_mut(&key).expect("present");
        let reserved = std::mem::take(&mut work.reserved);
        assert_ne!(epoch, 0, "a Commit without its epoch");
        self.redo_scratch.clear();
        if let Err(error) = self
            .engine
            .prepared_changes(work.engine, &mut self.redo_scratch)
        {
            panic!(
                "node {}: the changes of prepared transaction {} on fragment {} of table {}: {}",
                self.node, key.0, key.2, key.1, error
            );
        }
        let mut left = reserved;
        let mut first = NOT_LOGGED;
        let header = redo::header(key.1, key.2, key.0);
        redo::pieces(&self.redo_scratch, |changes| {
            let lsn =
                redo.append_reserved_parts(epoch, redo::KIND_CHANGES, &[&header, changes], left);
            first = first.min(lsn);
            left -= (disk::redo::RECORD_HEADER_BYTES + header.len() + changes.len()) as u64;
        });
        redo.unreserve(left);
        work.logged_at = first;
        self.changes
            .logged((key.1, key.2), first, &self.redo_scratch);
        self.logged_epoch_max = self.logged_epoch_max.max(epoch);
    }

    /// The highest epoch of any change logged here (0 before the first).
    pub fn logged_epoch_max(&self) -> u64 {
        self.logged_epoch_max
    }

    /// The fragment replicas this node holds, in order.
    pub fn fragment_replicas(&self) -> Vec<(u32, u32)> {
        let mut keys: Vec<(u32, u32)> = self.fragments.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    /// Applies changes read back from a local checkpoint or the redo log
    /// to a fragment replica: a put writes the whole row, a delete removes
    /// the row if it is there (a checkpoint taken while writes went on may
    /// or may not hold it). A checkpoint's rows (`CHANGE_ROW_OF_PART`)
    /// are applied only if their part is in `parts` (a bit per part; the
    /// restore takes each part from the newest checkpoint that wrote it
    /// whole on) and carry their own GCI; other rows are stamped with
    /// `gci`, the record's. Changes of a fragment this node does not hold
    /// (its table was dropped) are skipped. A node restart's restore
    /// (`restore_for_copy`) keeps the rows aside for its copy instead.
    /// Returns how many were applied.
    pub fn restore_changes(
        &mut self,
        table: u32,
        fragment: u32,
        changes: &[u8],
        gci: u32,
        parts: u64,
    ) -> Result<u32, Error> {
        let Some(replica) = self.fragments.get(&(table, fragment)).copied() else {
            return Ok(0);
        };
        let primary_key = self
            .engine
            .table_def(replica.engine_table)
            .expect("a fragment's engine table")
            .primary_key
            .clone();
        let mut key = Vec::new();
        let mut data = Vec::new();
        let mut applied = 0;
        // Puts of one GCI in a row commit together (a checkpoint's rows
        // each carry their own).
        let mut open: Option<(TransactionId, u32)> = None;
        let result = (|| {
            for change in storage::changes(changes) {
                let (kind, change) = change?;
                let (row_gci, attrinfo) = match kind {
                    storage::CHANGE_ROW_OF_PART => {
                        let row = storage::split_row_of_part(change)?;
                        if parts & (1 << row.part) == 0 {
                            continue;
                        }
                        (row.gci, row.attrinfo)
                    }
                    _ => (gci, change),
                };
                key.clear();
                if kind == storage::CHANGE_DELETE {
                    key.extend_from_slice(attrinfo);
                } else {
                    let mut writer = schema::AttrInfoWriter::new(&mut key);
                    for &column in &primary_key {
                        let value =
                            schema::AttrInfoReader::find(attrinfo, column)?.ok_or_else(|| {
                                Error::new(
                                    ErrorCode::WrongKey,
                                    "a restored row without its primary key",
                                )
                            })?;
                        writer.push(column, value);
                    }
                }
                if let Some(aside) = self.restored_aside.as_mut() {
                    applied += 1;
                    if self.restored_aside_given_up {
                        continue;
                    }
                    let rows = aside.entry((table, fragment)).or_default();
                    if kind == storage::CHANGE_DELETE {
                        rows.remove(&key);
                        continue;
                    }
                    // Counted as they are put aside and never taken back
                    // (a delete frees less than it looks): the peak stays
                    // under the bound.
                    self.restored_aside_bytes += copy::restored_row_bytes(&key, attrinfo);
                    if self.restored_aside_bytes > self.restored_aside_bytes_max {
                        self.give_up_restored_aside();
                        continue;
                    }
                    let row = copy::RestoredRow {
                        gci: row_gci,
                        row: attrinfo.to_vec(),
                        named: false,
                    };
                    rows.insert(key.clone(), row);
                    continue;
                }
                let transaction = match open {
                    Some((transaction, open_gci)) if open_gci == row_gci => transaction,
                    _ => {
                        if let Some((transaction, open_gci)) = open.take() {
                            self.commit_restored(transaction, (table, fragment), open_gci);
                        }
                        let transaction = self.next_engine_transaction;
                        self.next_engine_transaction += 1;
                        open = Some((transaction, row_gci));
                        transaction
                    }
                };
                let kind = if kind == storage::CHANGE_DELETE {
                    storage::engine::OperationKind::Delete
                } else {
                    storage::engine::OperationKind::Write
                };
                let token = self.next_token;
                self.next_token += 1;
                data.clear();
                let outcome = self.engine.execute(
                    0,
                    &OperationRequest {
                        transaction,
                        token,
                        table: replica.engine_table,
                        kind,
                        key: &key,
                        values: if kind == storage::engine::OperationKind::Write {
                            attrinfo
                        } else {
                            &[]
                        },
                        columns: &[],
                    },
                    &mut data,
                );
                match outcome {
                    Ok(Outcome::Done) => applied += 1,
                    Err(error)
                        if error.code == ErrorCode::NoSuchRow
                            && kind == storage::engine::OperationKind::Delete => {}
                    Ok(Outcome::Waiting) => {
                        panic!("a restore waited for a lock: nothing else runs during a restore")
                    }
                    Err(error) => return Err(error),
                }
            }
            Ok(())
        })();
        if let Some((transaction, open_gci)) = open
            && self.engine.has_transaction(transaction)
        {
            match result {
                Ok(()) => self.commit_restored(transaction, (table, fragment), open_gci),
                // The restore fails and the node stops: what it applied
                // before goes with it.
                Err(_) => self.abort_work(transaction),
            }
        }
        result.map(|()| applied)
    }

    fn commit_restored(
        &mut self,
        transaction: TransactionId,
        (table, fragment): (u32, u32),
        gci: u32,
    ) {
        if !self.engine.has_transaction(transaction) {
            // Only deletes of rows that were not there.
            return;
        }
        if let Err(error) = self.engine.prepare(transaction) {
            panic!("node {}: prepare of a restore failed: {error}", self.node);
        }
        self.commit_work(transaction, (0, table, fragment), gci);
    }

    /// Gives back redo log bytes reserved for writes that will not commit.
    fn unreserve(&mut self, bytes: u64) {
        if bytes > 0 {
            self.redo
                .as_mut()
                .expect("only a redo log reserves")
                .unreserve(bytes);
        }
    }

    /// The engine's commit of prepared work in global checkpoint `gci`,
    /// which cannot fail (see `prepare_work` for why the node stops if it
    /// does).
    fn commit_work(&mut self, work: TransactionId, key: WorkKey, gci: u32) {
        self.changes.committed(gci);
        if let Err(error) = self.engine.commit(work, gci) {
            panic!(
                "node {}: commit of transaction {} on fragment {} of table {} failed: {}",
                self.node, key.0, key.2, key.1, error
            );
        }
        assert!(
            !self.engine.has_transaction(work),
            "committed work still open in the engine"
        );
    }

    /// The engine's abort of work, which fails only for a transaction the
    /// engine does not hold; every work entry names one it holds (see
    /// `forget_unbegun`).
    fn abort_work(&mut self, work: TransactionId) {
        if let Err(error) = self.engine.abort(work) {
            panic!(
                "node {}: abort of engine transaction {work} failed: {}",
                self.node, error
            );
        }
        assert!(
            !self.engine.has_transaction(work),
            "aborted work still open in the engine"
        );
    }

    /// Produces the batch the coordinator asked for, unless the scan waits
    /// for a lock (then the completion resumes it).
    fn run_scan(&mut self, now_ms: u64, key: ScanKey, out: &mut Vec<(NodeId, Message)>) {
        let Some(scan) = self.scans.get(&key) else {
            return;
        };
        if !scan.wanted {
            return;
        }
        let (engine_scan, token, coordinator) = (scan.engine_scan, scan.token, scan.coordinator);
        let (batch_rows, batch_bytes) = (scan.batch_rows, scan.batch_bytes);
        let mut data = Vec::new();
        let result = if self.holds_read_lease(now_ms) {
            self.engine
                .scan_next(now_ms, engine_scan, batch_rows, batch_bytes, &mut data)
        } else {
            Err(self.no_lease_refusal())
        };
        let (rows, finished, error) = match result {
            Ok(batch) if batch.waiting && batch.rows == 0 => {
                self.waiting.insert(token, Waiting::Scan(key));
                return;
            }
            Ok(batch) => (batch.rows, batch.finished, None),
            Err(error) => (0, true, Some(reply_for(&error))),
        };
        self.counters.scan_rows += u64::from(rows);
        if finished {
            self.close_scan(key);
        } else if let Some(scan) = self.scans.get_mut(&key) {
            scan.wanted = false;
        }
        out.push((
            coordinator,
            Message::ScanRows(ScanRows {
                transaction: key.0,
                scan: key.1,
                fragment: key.2,
                rows,
                data,
                finished,
                error,
            }),
        ));
    }

    /// Answers operations and scans whose lock wait ended.
    pub(super) fn drain_completions(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        loop {
            let completions = self.engine.take_completions();
            if completions.is_empty() {
                return;
            }
            for Completion {
                token,
                result,
                data,
                inserted,
                ..
            } in completions
            {
                match self.waiting.remove(&token) {
                    Some(Waiting::Key(request)) => {
                        let key = (request.transaction, request.table, request.fragment);
                        // A waiting key operation blocks its work, and only it.
                        let (blocked_token, queue) = self
                            .blocked
                            .remove(&key)
                            .expect("a waiting key operation blocks its work");
                        assert_eq!(blocked_token, token, "the work waits for another operation");
                        match result {
                            // A read that waited for its lock reads now:
                            // only under a lease (the abort frees its lock).
                            Ok(())
                                if !request.kind.is_write() && !self.holds_read_lease(now_ms) =>
                            {
                                let error = self.no_lease_refusal();
                                self.refuse(request, &error, out);
                            }
                            Ok(()) => self.key_done(request, data, inserted, out),
                            Err(ErrorCode::NoSuchRow)
                                if matches!(
                                    request.kind,
                                    OperationKind::Update | OperationKind::Delete
                                ) && request.columns.is_empty()
                                    && self
                                        .fragments
                                        .get(&(request.table, request.fragment))
                                        .is_some_and(|replica| replica.copying) =>
                            {
                                // As in `on_key_request`: not copied yet.
                                self.counters.writes_before_copy += 1;
                                self.key_done(request, Vec::new(), false, out);
                            }
                            Err(ErrorCode::NoSuchRow)
                                if self
                                    .fragments
                                    .get(&(request.table, request.fragment))
                                    .is_some_and(|replica| replica.copying) =>
                            {
                                let error =
                                    copying_refusal(self.node, request.table, request.fragment);
                                self.refuse(request, &error, out);
                            }
                            Err(code) if self.refuses_write_failure(now_ms, &request, code) => {
                                // As in `on_key_request`: the failure reads
                                // the row.
                                let error = self.no_lease_refusal();
                                self.refuse(request, &error, out);
                            }
                            Err(code) => {
                                let error = Error::new(code, code.message());
                                self.refuse(request, &error, out);
                            }
                        }
                        // The operations queued behind it run now, in
                        // order, until one waits again.
                        for request in queue {
                            self.on_key_request(now_ms, request, out);
                        }
                    }
                    Some(Waiting::Scan(key)) => self.run_scan(now_ms, key, out),
                    Some(Waiting::Copy(starter)) => self.run_copy_out(now_ms, starter, out),
                    Some(Waiting::CopiedRow(transaction, _, copy, gci)) => {
                        self.copied_row_done(now_ms, (transaction, gci), copy, result, out)
                    }
                    None => {}
                }
            }
        }
    }
}

/// The temporary refusal of a write the redo log has no room for.
fn redo_refusal(error: &RedoError) -> Error {
    // The code's own text names the overload; the detail says by how much.
    let (code, detail) = match error {
        RedoError::LogFull { needed, free } => (
            ErrorCode::RedoLogFull,
            format!("{needed} bytes needed, {free} free until a local checkpoint completes"),
        ),
        RedoError::BufferFull { buffered, needed } => (
            ErrorCode::RedoBufferFull,
            format!("RedoBuffer holds {buffered} bytes not yet written, {needed} more do not fit"),
        ),
        RedoError::RecordTooLarge { .. } => (ErrorCode::RedoBufferFull, error.to_string()),
    };
    Error::new(code, detail)
}

/// The refusal of a read of a replica that is still being copied: the
/// router sends reads to started replicas only, so it planned on an older
/// state; a retry routes afresh.
fn copying_refusal(node: NodeId, table: u32, fragment: u32) -> Error {
    Error::new(
        ErrorCode::DistributionChanged,
        format!("node {node} is still copying fragment {fragment} of table {table}"),
    )
}

fn done(phase: &Phase) -> PhaseDone {
    PhaseDone {
        transaction: phase.transaction,
        table: phase.table,
        fragment: phase.fragment,
    }
}

fn engine_kind(kind: OperationKind) -> storage::engine::OperationKind {
    use storage::engine::OperationKind as Engine;
    match kind {
        OperationKind::ReadCommitted => Engine::Read(ReadMode::Committed),
        OperationKind::ReadShared => Engine::Read(ReadMode::Shared),
        OperationKind::ReadExclusive => Engine::Read(ReadMode::Exclusive),
        OperationKind::Insert => Engine::Insert,
        OperationKind::Update => Engine::Update,
        OperationKind::Write => Engine::Write,
        OperationKind::Delete => Engine::Delete,
    }
}

fn bound(bound: &protocol::Bound) -> ScanBound<'_> {
    match bound {
        protocol::Bound::Unbounded => ScanBound::Unbounded,
        protocol::Bound::Inclusive(key) => ScanBound::Inclusive(key),
        protocol::Bound::Exclusive(key) => ScanBound::Exclusive(key),
    }
}

fn takeover_report(
    query: &TakeoverQuery,
    entries: Vec<TakeoverEntry>,
    markers: Vec<MarkerEntry>,
    last: bool,
) -> Message {
    Message::TakeoverReport(Box::new(TakeoverReport {
        failed_node: query.failed_node,
        failed_incarnation: query.failed_incarnation,
        entries,
        markers,
        last,
    }))
}
