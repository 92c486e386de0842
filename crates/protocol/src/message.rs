//! Every message nodes exchange, with its byte layout.
//!
//! A message starts with a one-byte kind (the `KIND_*` constants below, never
//! reused), followed by its fields in declaration order: integers
//! little-endian, `bool` one byte (0/1), strings and byte strings as a u32
//! length and the bytes, lists as a u32 count and the items, `Option` as a
//! presence byte and the value. Compound types are laid out by the
//! `put_*`/`get_*` pairs below, field by field in the order written.

use crate::codec::{DecodeError, Reader, Writer};
use crate::identity::{ClusterSecret, Nonce, Proof};
use crate::transaction::*;
use crate::types::*;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// First message on every connection, both ways: who the sender
    /// claims to be and a fresh random challenge for the other side
    /// (`crate::identity`).
    Hello {
        node: NodeId,
        incarnation: u64,
        role: NodeRole,
        nonce: Nonce,
    },
    /// The answer to the other side's `Hello`: its nonce and the sender's
    /// claimed identity hashed under the cluster secret.
    HelloProof {
        proof: Proof,
    },
    /// Transport only, between two processes on one host (never handed to
    /// a node's state machine): the side that dialed offers shared memory
    /// for the link, two rings of `ring_bytes` each, passed with this
    /// frame's bytes (`SCM_RIGHTS`). It sends nothing more until the
    /// answer; everything it sends after an acceptance goes through the
    /// rings (`runtime::shared_memory`).
    SharedMemoryOffer {
        ring_bytes: u32,
    },
    /// The answer to `SharedMemoryOffer`, the last frame its sender writes
    /// to the socket when it accepts (everything after goes through the
    /// rings); `reason` says why not when it refuses.
    SharedMemoryAnswer {
        accepted: bool,
        reason: String,
    },
    /// Sent by every member to every other member each heartbeat interval.
    Heartbeat {
        generation: u64,
        version: u64,
        /// The sender's free DataMemory, once its runtime measured it.
        free_pages: Option<FreePages>,
        /// When the sender sent it, on the sender's clock (ms).
        sent_at_ms: u64,
    },
    /// A member's answer to a member's heartbeat, sent at once when it
    /// vouches for the sender: it will not help remove the sender for a
    /// lease's length after it heard that heartbeat, so the sender may
    /// serve reads until `sent_at_ms` (its own clock) plus the lease
    /// (`cluster::lease`).
    HeartbeatEcho {
        sent_at_ms: u64,
    },
    /// A data node without a place in the cluster asks to be admitted.
    Join {
        member: Member,
    },
    /// A member reports that it lost contact with another.
    Suspect {
        version: u64,
        member: Member,
    },
    /// Paxos phase 1 for the change that makes `version`.
    Prepare {
        generation: u64,
        version: u64,
        ballot: Ballot,
    },
    Promise {
        version: u64,
        ballot: Ballot,
        accepted: Option<Box<(Ballot, Change)>>,
    },
    /// The acceptor promised a higher ballot.
    Nack {
        version: u64,
        ballot: Ballot,
        promised: Ballot,
    },
    /// The acceptor has not installed `version - 1` yet and needs the state.
    Behind {
        version: u64,
    },
    /// Paxos phase 2.
    Accept {
        generation: u64,
        version: u64,
        ballot: Ballot,
        change: Box<Change>,
    },
    Accepted {
        version: u64,
        ballot: Ballot,
    },
    /// The full state after a decided change (learners install it).
    Decided {
        state: Box<ClusterState>,
    },
    SchemaRequest {
        request: u64,
        change: SchemaChange,
    },
    SchemaReply {
        request: u64,
        result: Result<u32, ErrorReply>,
    },
    DictionaryRequest {
        request: u64,
    },
    DictionaryReply {
        request: u64,
        state: Box<ClusterState>,
    },
    /// To the management node: give me a node id and the configuration.
    AllocateNodeId {
        role: NodeRole,
        requested: Option<NodeId>,
        listen_port: u16,
    },
    NodeIdAllocated {
        node: NodeId,
        config_file: String,
        config_text: String,
        /// The cluster secret peers prove knowledge of (`crate::identity`).
        secret: ClusterSecret,
    },
    Refused {
        error: ErrorReply,
    },
    /// From the management node: where every data node listens.
    Addresses {
        entries: Vec<Address>,
    },
    StatusReport {
        report: Box<DataNodeReport>,
    },
    StatusRequest {
        request: u64,
    },
    StatusReply {
        request: u64,
        nodes: Vec<NodeStatus>,
    },
    /// Stop one data node, or all of them (`node` = None); with
    /// `include_management` the management node stops afterwards too.
    StopRequest {
        request: u64,
        node: Option<NodeId>,
        include_management: bool,
        /// `N RESTART`: the stopped nodes start again (through their
        /// angels); `None` stops them for good.
        restart: Option<RestartOptions>,
    },
    StopReply {
        request: u64,
        result: Result<Vec<NodeId>, ErrorReply>,
    },
    /// From the management node to a data node: shut down cleanly.
    Stop,
    /// From the management node to every started data node before a
    /// whole-cluster stop (NDB's graceful system shutdown): take no new
    /// transactions (NDB 270), let those open finish (aborting what is
    /// left after a bound), then answer `Drained` and keep answering as
    /// the durable epoch moves, so the management node stops the cluster
    /// once everything committed is on disk everywhere.
    Drain,
    /// From a draining data node: it decides no more commits, and each
    /// it decided or holds in its redo log lies at or below `epoch`;
    /// `durable_epoch` is its `Durability::durable_epoch` now.
    Drained {
        epoch: u64,
        durable_epoch: u64,
    },
    /// A node says goodbye before closing its connections.
    Leaving,
    /// From the management node to a data node: leave the cluster as for
    /// `Stop`, then exit so that the angel starts the node again (at once,
    /// or after `START` with `no_start`).
    Restart(RestartOptions),
    /// From an angel holding its data node in the no-start state (`N
    /// RESTART -n`) to the management node: node `node` waits for START.
    WaitingForStart {
        node: NodeId,
    },
    /// `N START`: start data node `node`, which waits for it.
    StartRequest {
        request: u64,
        node: NodeId,
    },
    StartReply {
        request: u64,
        result: Result<(), ErrorReply>,
    },
    /// From the management node to a waiting angel: start the data node.
    Start,
    /// API → TC: a batch of operations (see `transaction`).
    Execute(Execute),
    /// TC → API: the batch's results.
    Executed(Executed),
    ScanOpen(Box<ScanOpen>),
    ScanRows(ScanRows),
    ScanNext(ScanNext),
    /// API → TC → LQH: stop a scan early; no more batches follow.
    ScanClose {
        transaction: u64,
        scan: u32,
    },
    KeyRequest(KeyRequest),
    KeyConfirm(KeyConfirm),
    KeyRefuse(KeyRefuse),
    Commit(Phase),
    Committed(PhaseDone),
    Complete(Phase),
    Completed(PhaseDone),
    Abort(Phase),
    Aborted(PhaseDone),
    /// TC → LQH: open a scan on one fragment.
    FragmentScanOpen(Box<ScanOpen>),
    /// President's TC → LQH: what do you hold of a failed coordinator's
    /// transactions?
    TakeoverQuery(TakeoverQuery),
    /// LQH → the president's TC.
    TakeoverReport(Box<TakeoverReport>),
    /// Starting LQH → a started LQH: copy a fragment to me.
    CopyRequest(CopyRequest),
    /// Copying LQH → starting LQH: a batch of rows.
    CopyRows(CopyRows),
    /// Starting LQH → copying LQH: batch applied.
    CopyNext(CopyNext),
    /// A starting member → the president: every fragment replica it holds
    /// is copied; make it a started member.
    NodeCopied {
        member: Member,
    },
    /// API → the TC that answered: these commits' answers arrived (the
    /// API's transaction ids), so the replicas may forget their commit
    /// markers (NDB's TC_COMMIT_ACK).
    CommitAck {
        transactions: Box<Vec<u64>>,
    },
    /// TC → LQH: forget the commit markers of these transactions (the
    /// TC's ids): their APIs have their answers (NDB's REMOVE_MARKER_ORD).
    ForgetMarkers {
        transactions: Box<Vec<u64>>,
    },
    /// The president → the API nodes: the takeover of the transactions
    /// data node `failed_node` coordinated, at `failed_incarnation` and
    /// every earlier incarnation, is finished. Each committed one whose
    /// API was known was answered before this (an `Executed` on the same
    /// link), so an API still waiting for an answer from that coordinator
    /// stops waiting (`shoal_client` reports it aborted, 4010). Sent only on
    /// the connections open since the takeover began.
    TakeoverDone {
        failed_node: NodeId,
        failed_incarnation: u64,
    },
    /// One step of the epoch and global checkpoint protocol between the
    /// president and the data nodes (`cluster::epochs`): `epoch` is the
    /// epoch the step is about.
    Epoch {
        step: EpochStep,
        epoch: u64,
    },
}

/// The steps of the epoch protocol (`cluster::epochs`), and their byte on
/// the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EpochStep {
    /// President → members: stop deciding commits; `epoch` comes next.
    Prepare = 1,
    /// Member → president: commits stopped (or it is at `epoch` already).
    Prepared = 2,
    /// President → members: decide commits in `epoch` from now on.
    Commit = 3,
    /// Member → president: it is at `epoch`, and every commit it decided
    /// in an earlier epoch has been logged by each of its replicas.
    Completed = 4,
    /// President → members: make every epoch before `epoch` durable in
    /// your redo log.
    Save = 5,
    /// Member → president: done.
    Saved = 6,
    /// President → members: every epoch before `epoch` is durable on every
    /// data node: the cluster restarts at least to it.
    Durable = 7,
}

impl EpochStep {
    fn from_byte(byte: u8) -> Option<EpochStep> {
        Some(match byte {
            1 => EpochStep::Prepare,
            2 => EpochStep::Prepared,
            3 => EpochStep::Commit,
            4 => EpochStep::Completed,
            5 => EpochStep::Save,
            6 => EpochStep::Saved,
            7 => EpochStep::Durable,
            _ => return None,
        })
    }
}

// A message moves several times between the socket and the blocks (decoded
// into a list, dispatched, queued for sending): kept within 128 bytes, a
// move is a few vector instructions rather than a call to memcpy, which a
// profile of the data nodes showed at 8% of their time. The large, rare
// payloads (a cluster state, a consensus change, a scan's definition) are
// boxed for that.
const _: () = assert!(std::mem::size_of::<Message>() <= 128);

const KIND_HELLO: u8 = 1;
const KIND_HEARTBEAT: u8 = 2;
const KIND_JOIN: u8 = 3;
const KIND_SUSPECT: u8 = 4;
const KIND_PREPARE: u8 = 5;
const KIND_PROMISE: u8 = 6;
const KIND_NACK: u8 = 7;
const KIND_BEHIND: u8 = 8;
const KIND_ACCEPT: u8 = 9;
const KIND_ACCEPTED: u8 = 10;
const KIND_DECIDED: u8 = 11;
const KIND_SCHEMA_REQUEST: u8 = 12;
const KIND_SCHEMA_REPLY: u8 = 13;
const KIND_DICTIONARY_REQUEST: u8 = 14;
const KIND_DICTIONARY_REPLY: u8 = 15;
const KIND_ALLOCATE_NODE_ID: u8 = 16;
const KIND_NODE_ID_ALLOCATED: u8 = 17;
const KIND_REFUSED: u8 = 18;
const KIND_ADDRESSES: u8 = 19;
const KIND_STATUS_REPORT: u8 = 20;
const KIND_STATUS_REQUEST: u8 = 21;
const KIND_STATUS_REPLY: u8 = 22;
const KIND_STOP_REQUEST: u8 = 23;
const KIND_STOP_REPLY: u8 = 24;
const KIND_STOP: u8 = 25;
const KIND_LEAVING: u8 = 26;
const KIND_HELLO_PROOF: u8 = 27;
const KIND_RESTART: u8 = 28;
const KIND_WAITING_FOR_START: u8 = 29;
const KIND_START_REQUEST: u8 = 30;
const KIND_START_REPLY: u8 = 31;
const KIND_START: u8 = 32;
const KIND_EXECUTE: u8 = 40;
const KIND_EXECUTED: u8 = 41;
const KIND_SCAN_OPEN: u8 = 42;
const KIND_SCAN_ROWS: u8 = 43;
const KIND_SCAN_NEXT: u8 = 44;
const KIND_SCAN_CLOSE: u8 = 45;
const KIND_KEY_REQUEST: u8 = 50;
const KIND_KEY_CONFIRM: u8 = 51;
const KIND_KEY_REFUSE: u8 = 52;
const KIND_COMMIT: u8 = 53;
const KIND_COMMITTED: u8 = 54;
const KIND_COMPLETE: u8 = 55;
const KIND_COMPLETED: u8 = 56;
const KIND_ABORT: u8 = 57;
const KIND_ABORTED: u8 = 58;
const KIND_FRAGMENT_SCAN_OPEN: u8 = 59;
const KIND_TAKEOVER_QUERY: u8 = 60;
const KIND_TAKEOVER_REPORT: u8 = 61;
const KIND_COPY_REQUEST: u8 = 62;
const KIND_COPY_ROWS: u8 = 63;
const KIND_COPY_NEXT: u8 = 64;
const KIND_HEARTBEAT_ECHO: u8 = 65;
const KIND_COMMIT_ACK: u8 = 66;
const KIND_FORGET_MARKERS: u8 = 67;
const KIND_TAKEOVER_DONE: u8 = 68;
const KIND_EPOCH: u8 = 69;
const KIND_SHARED_MEMORY_OFFER: u8 = 70;
const KIND_SHARED_MEMORY_ANSWER: u8 = 71;
const KIND_NODE_COPIED: u8 = 33;
const KIND_DRAIN: u8 = 34;
const KIND_DRAINED: u8 = 35;

impl Message {
    /// A short name for logs and counters.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "Hello",
            Message::HelloProof { .. } => "HelloProof",
            Message::SharedMemoryOffer { .. } => "SharedMemoryOffer",
            Message::SharedMemoryAnswer { .. } => "SharedMemoryAnswer",
            Message::Heartbeat { .. } => "Heartbeat",
            Message::HeartbeatEcho { .. } => "HeartbeatEcho",
            Message::Join { .. } => "Join",
            Message::Suspect { .. } => "Suspect",
            Message::Prepare { .. } => "Prepare",
            Message::Promise { .. } => "Promise",
            Message::Nack { .. } => "Nack",
            Message::Behind { .. } => "Behind",
            Message::Accept { .. } => "Accept",
            Message::Accepted { .. } => "Accepted",
            Message::Decided { .. } => "Decided",
            Message::SchemaRequest { .. } => "SchemaRequest",
            Message::SchemaReply { .. } => "SchemaReply",
            Message::DictionaryRequest { .. } => "DictionaryRequest",
            Message::DictionaryReply { .. } => "DictionaryReply",
            Message::AllocateNodeId { .. } => "AllocateNodeId",
            Message::NodeIdAllocated { .. } => "NodeIdAllocated",
            Message::Refused { .. } => "Refused",
            Message::Addresses { .. } => "Addresses",
            Message::StatusReport { .. } => "StatusReport",
            Message::StatusRequest { .. } => "StatusRequest",
            Message::StatusReply { .. } => "StatusReply",
            Message::StopRequest { .. } => "StopRequest",
            Message::StopReply { .. } => "StopReply",
            Message::Stop => "Stop",
            Message::Drain => "Drain",
            Message::Drained { .. } => "Drained",
            Message::Leaving => "Leaving",
            Message::Restart(_) => "Restart",
            Message::WaitingForStart { .. } => "WaitingForStart",
            Message::StartRequest { .. } => "StartRequest",
            Message::StartReply { .. } => "StartReply",
            Message::Start => "Start",
            Message::Execute(_) => "Execute",
            Message::Executed(_) => "Executed",
            Message::ScanOpen(_) => "ScanOpen",
            Message::ScanRows(_) => "ScanRows",
            Message::ScanNext(_) => "ScanNext",
            Message::ScanClose { .. } => "ScanClose",
            Message::TakeoverQuery(_) => "TakeoverQuery",
            Message::TakeoverReport(_) => "TakeoverReport",
            Message::CopyRequest(_) => "CopyRequest",
            Message::CopyRows(_) => "CopyRows",
            Message::CopyNext(_) => "CopyNext",
            Message::NodeCopied { .. } => "NodeCopied",
            Message::CommitAck { .. } => "CommitAck",
            Message::ForgetMarkers { .. } => "ForgetMarkers",
            Message::TakeoverDone { .. } => "TakeoverDone",
            Message::Epoch { .. } => "Epoch",
            Message::KeyRequest(_) => "KeyRequest",
            Message::KeyConfirm(_) => "KeyConfirm",
            Message::KeyRefuse(_) => "KeyRefuse",
            Message::Commit(_) => "Commit",
            Message::Committed(_) => "Committed",
            Message::Complete(_) => "Complete",
            Message::Completed(_) => "Completed",
            Message::Abort(_) => "Abort",
            Message::Aborted(_) => "Aborted",
            Message::FragmentScanOpen(_) => "FragmentScanOpen",
        }
    }

    /// Appends the message's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        match self {
            Message::Hello {
                node,
                incarnation,
                role,
                nonce,
            } => {
                w.u8(KIND_HELLO);
                w.u8(*node);
                w.u64(*incarnation);
                w.u8(role.wire_id());
                w.bytes(nonce);
            }
            Message::HelloProof { proof } => {
                w.u8(KIND_HELLO_PROOF);
                w.bytes(proof);
            }
            Message::SharedMemoryOffer { ring_bytes } => {
                w.u8(KIND_SHARED_MEMORY_OFFER);
                w.u32(*ring_bytes);
            }
            Message::SharedMemoryAnswer { accepted, reason } => {
                w.u8(KIND_SHARED_MEMORY_ANSWER);
                w.bool(*accepted);
                w.string(reason);
            }
            Message::Heartbeat {
                generation,
                version,
                free_pages,
                sent_at_ms,
            } => {
                w.u8(KIND_HEARTBEAT);
                w.u64(*generation);
                w.u64(*version);
                w.bool(free_pages.is_some());
                if let Some(free) = free_pages {
                    w.u64(free.pages);
                    w.u64(free.schema_version);
                }
                w.u64(*sent_at_ms);
            }
            Message::HeartbeatEcho { sent_at_ms } => {
                w.u8(KIND_HEARTBEAT_ECHO);
                w.u64(*sent_at_ms);
            }
            Message::Join { member } => {
                w.u8(KIND_JOIN);
                put_member(&mut w, *member);
            }
            Message::Suspect { version, member } => {
                w.u8(KIND_SUSPECT);
                w.u64(*version);
                put_member(&mut w, *member);
            }
            Message::Prepare {
                generation,
                version,
                ballot,
            } => {
                w.u8(KIND_PREPARE);
                w.u64(*generation);
                w.u64(*version);
                put_ballot(&mut w, *ballot);
            }
            Message::Promise {
                version,
                ballot,
                accepted,
            } => {
                w.u8(KIND_PROMISE);
                w.u64(*version);
                put_ballot(&mut w, *ballot);
                match accepted.as_deref() {
                    None => w.bool(false),
                    Some((accepted_ballot, change)) => {
                        w.bool(true);
                        put_ballot(&mut w, *accepted_ballot);
                        put_change(&mut w, change);
                    }
                }
            }
            Message::Nack {
                version,
                ballot,
                promised,
            } => {
                w.u8(KIND_NACK);
                w.u64(*version);
                put_ballot(&mut w, *ballot);
                put_ballot(&mut w, *promised);
            }
            Message::Behind { version } => {
                w.u8(KIND_BEHIND);
                w.u64(*version);
            }
            Message::Accept {
                generation,
                version,
                ballot,
                change,
            } => {
                w.u8(KIND_ACCEPT);
                w.u64(*generation);
                w.u64(*version);
                put_ballot(&mut w, *ballot);
                put_change(&mut w, change);
            }
            Message::Accepted { version, ballot } => {
                w.u8(KIND_ACCEPTED);
                w.u64(*version);
                put_ballot(&mut w, *ballot);
            }
            Message::Decided { state } => {
                w.u8(KIND_DECIDED);
                put_state(&mut w, state);
            }
            Message::SchemaRequest { request, change } => {
                w.u8(KIND_SCHEMA_REQUEST);
                w.u64(*request);
                match change {
                    SchemaChange::CreateTable { definition } => {
                        w.u8(1);
                        w.bytes(definition);
                    }
                    SchemaChange::DropTable { name } => {
                        w.u8(2);
                        w.string(name);
                    }
                    SchemaChange::RenameTable { from, to } => {
                        w.u8(3);
                        w.string(from);
                        w.string(to);
                    }
                }
            }
            Message::SchemaReply { request, result } => {
                w.u8(KIND_SCHEMA_REPLY);
                w.u64(*request);
                match result {
                    Ok(table_id) => {
                        w.bool(true);
                        w.u32(*table_id);
                    }
                    Err(error) => {
                        w.bool(false);
                        put_error(&mut w, error);
                    }
                }
            }
            Message::DictionaryRequest { request } => {
                w.u8(KIND_DICTIONARY_REQUEST);
                w.u64(*request);
            }
            Message::DictionaryReply { request, state } => {
                w.u8(KIND_DICTIONARY_REPLY);
                w.u64(*request);
                put_state(&mut w, state);
            }
            Message::AllocateNodeId {
                role,
                requested,
                listen_port,
            } => {
                w.u8(KIND_ALLOCATE_NODE_ID);
                w.u8(role.wire_id());
                w.u8(requested.unwrap_or(0));
                w.u16(*listen_port);
            }
            Message::NodeIdAllocated {
                node,
                config_file,
                config_text,
                secret,
            } => {
                w.u8(KIND_NODE_ID_ALLOCATED);
                w.u8(*node);
                w.string(config_file);
                w.string(config_text);
                w.bytes(secret);
            }
            Message::Refused { error } => {
                w.u8(KIND_REFUSED);
                put_error(&mut w, error);
            }
            Message::Addresses { entries } => {
                w.u8(KIND_ADDRESSES);
                w.count(entries.len());
                for entry in entries {
                    w.u8(entry.node);
                    w.string(&entry.host);
                    w.u16(entry.port);
                }
            }
            Message::StatusReport { report } => {
                w.u8(KIND_STATUS_REPORT);
                w.bool(report.started);
                w.u64(report.incarnation);
                w.u64(report.generation);
                w.u64(report.version);
                w.u8(report.president);
                w.bytes(&report.members);
                w.u64(report.schema_version);
                w.u32(report.tables);
                w.u64(report.pages_used);
                w.u64(report.pages_total);
                w.bool(report.recovering);
                w.u32(report.fragments_copied);
                w.u32(report.fragments_to_copy);
                w.u64(report.rows_copied);
                write_durability(&mut w, &report.durability);
                w.u64(report.restorable_epoch);
                w.u64(report.restorable_generation);
                w.u64(report.restored_from_generation);
                w.u64(report.disk_epoch_max);
            }
            Message::StatusRequest { request } => {
                w.u8(KIND_STATUS_REQUEST);
                w.u64(*request);
            }
            Message::StatusReply { request, nodes } => {
                w.u8(KIND_STATUS_REPLY);
                w.u64(*request);
                w.count(nodes.len());
                for node in nodes {
                    w.u8(node.node);
                    w.u8(node.role.wire_id());
                    w.string(&node.configured_host);
                    w.string(&node.address);
                    w.u8(node.state.wire_id());
                    match node.node_group {
                        None => w.bool(false),
                        Some(group) => {
                            w.bool(true);
                            w.u16(group);
                        }
                    }
                    w.bool(node.president);
                    w.u64(node.pages_used);
                    w.u64(node.pages_total);
                    w.u32(node.fragments_copied);
                    w.u32(node.fragments_to_copy);
                    w.u64(node.rows_copied);
                    write_durability(&mut w, &node.durability);
                }
            }
            Message::StopRequest {
                request,
                node,
                include_management,
                restart,
            } => {
                w.u8(KIND_STOP_REQUEST);
                w.u64(*request);
                w.u8(node.unwrap_or(0));
                w.bool(*include_management);
                w.bool(restart.is_some());
                if let Some(restart) = restart {
                    put_restart(&mut w, restart);
                }
            }
            Message::StopReply { request, result } => {
                w.u8(KIND_STOP_REPLY);
                w.u64(*request);
                match result {
                    Ok(nodes) => {
                        w.bool(true);
                        w.bytes(nodes);
                    }
                    Err(error) => {
                        w.bool(false);
                        put_error(&mut w, error);
                    }
                }
            }
            Message::Stop => w.u8(KIND_STOP),
            Message::Drain => w.u8(KIND_DRAIN),
            Message::Drained {
                epoch,
                durable_epoch,
            } => {
                w.u8(KIND_DRAINED);
                w.u64(*epoch);
                w.u64(*durable_epoch);
            }
            Message::Leaving => w.u8(KIND_LEAVING),
            Message::Restart(restart) => {
                w.u8(KIND_RESTART);
                put_restart(&mut w, restart);
            }
            Message::WaitingForStart { node } => {
                w.u8(KIND_WAITING_FOR_START);
                w.u8(*node);
            }
            Message::StartRequest { request, node } => {
                w.u8(KIND_START_REQUEST);
                w.u64(*request);
                w.u8(*node);
            }
            Message::StartReply { request, result } => {
                w.u8(KIND_START_REPLY);
                w.u64(*request);
                match result {
                    Ok(()) => w.bool(true),
                    Err(error) => {
                        w.bool(false);
                        put_error(&mut w, error);
                    }
                }
            }
            Message::Start => w.u8(KIND_START),
            Message::Execute(execute) => {
                w.u8(KIND_EXECUTE);
                put_execute(&mut w, execute);
            }
            Message::Executed(executed) => {
                w.u8(KIND_EXECUTED);
                put_executed(&mut w, executed);
            }
            Message::ScanOpen(open) => {
                w.u8(KIND_SCAN_OPEN);
                put_scan_open(&mut w, open);
            }
            Message::FragmentScanOpen(open) => {
                w.u8(KIND_FRAGMENT_SCAN_OPEN);
                put_scan_open(&mut w, open);
            }
            Message::ScanRows(rows) => {
                w.u8(KIND_SCAN_ROWS);
                put_scan_rows(&mut w, rows);
            }
            Message::ScanNext(next) => {
                w.u8(KIND_SCAN_NEXT);
                put_scan_next(&mut w, next);
            }
            Message::ScanClose { transaction, scan } => {
                w.u8(KIND_SCAN_CLOSE);
                w.u64(*transaction);
                w.u32(*scan);
            }
            Message::TakeoverQuery(query) => {
                w.u8(KIND_TAKEOVER_QUERY);
                put_takeover_query(&mut w, query);
            }
            Message::TakeoverReport(report) => {
                w.u8(KIND_TAKEOVER_REPORT);
                put_takeover_report(&mut w, report);
            }
            Message::CopyRequest(request) => {
                w.u8(KIND_COPY_REQUEST);
                put_copy_request(&mut w, request);
            }
            Message::CopyRows(rows) => {
                w.u8(KIND_COPY_ROWS);
                put_copy_rows(&mut w, rows);
            }
            Message::CopyNext(next) => {
                w.u8(KIND_COPY_NEXT);
                put_copy_next(&mut w, next);
            }
            Message::NodeCopied { member } => {
                w.u8(KIND_NODE_COPIED);
                w.u8(member.node);
                w.u64(member.incarnation);
            }
            Message::CommitAck { transactions } => {
                w.u8(KIND_COMMIT_ACK);
                put_transaction_ids(&mut w, transactions);
            }
            Message::ForgetMarkers { transactions } => {
                w.u8(KIND_FORGET_MARKERS);
                put_transaction_ids(&mut w, transactions);
            }
            Message::TakeoverDone {
                failed_node,
                failed_incarnation,
            } => {
                w.u8(KIND_TAKEOVER_DONE);
                w.u8(*failed_node);
                w.u64(*failed_incarnation);
            }
            Message::Epoch { step, epoch } => {
                w.u8(KIND_EPOCH);
                w.u8(*step as u8);
                w.u64(*epoch);
            }
            Message::KeyRequest(request) => {
                w.u8(KIND_KEY_REQUEST);
                put_key_request(&mut w, request);
            }
            Message::KeyConfirm(confirm) => {
                w.u8(KIND_KEY_CONFIRM);
                put_key_confirm(&mut w, confirm);
            }
            Message::KeyRefuse(refuse) => {
                w.u8(KIND_KEY_REFUSE);
                put_key_refuse(&mut w, refuse);
            }
            Message::Commit(phase) => {
                w.u8(KIND_COMMIT);
                put_phase(&mut w, phase);
            }
            Message::Complete(phase) => {
                w.u8(KIND_COMPLETE);
                put_phase(&mut w, phase);
            }
            Message::Abort(phase) => {
                w.u8(KIND_ABORT);
                put_phase(&mut w, phase);
            }
            Message::Committed(done) => {
                w.u8(KIND_COMMITTED);
                put_phase_done(&mut w, done);
            }
            Message::Completed(done) => {
                w.u8(KIND_COMPLETED);
                put_phase_done(&mut w, done);
            }
            Message::Aborted(done) => {
                w.u8(KIND_ABORTED);
                put_phase_done(&mut w, done);
            }
        }
    }

    /// Decodes exactly one message; trailing bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let mut r = Reader::new(bytes);
        let kind = r.u8("message kind")?;
        let message = match kind {
            KIND_HELLO => Message::Hello {
                node: r.u8("node")?,
                incarnation: r.u64("incarnation")?,
                role: get_role(&mut r)?,
                nonce: fixed(&mut r, "nonce")?,
            },
            KIND_HELLO_PROOF => Message::HelloProof {
                proof: fixed(&mut r, "proof")?,
            },
            KIND_SHARED_MEMORY_OFFER => Message::SharedMemoryOffer {
                ring_bytes: r.u32("ring bytes")?,
            },
            KIND_SHARED_MEMORY_ANSWER => Message::SharedMemoryAnswer {
                accepted: r.bool("accepted")?,
                reason: r.string("reason")?,
            },
            KIND_HEARTBEAT => Message::Heartbeat {
                generation: r.u64("generation")?,
                version: r.u64("version")?,
                free_pages: if r.bool("free pages present")? {
                    Some(FreePages {
                        pages: r.u64("free pages")?,
                        schema_version: r.u64("free pages schema version")?,
                    })
                } else {
                    None
                },
                sent_at_ms: r.u64("sent at")?,
            },
            KIND_HEARTBEAT_ECHO => Message::HeartbeatEcho {
                sent_at_ms: r.u64("sent at")?,
            },
            KIND_JOIN => Message::Join {
                member: get_member(&mut r)?,
            },
            KIND_SUSPECT => Message::Suspect {
                version: r.u64("version")?,
                member: get_member(&mut r)?,
            },
            KIND_PREPARE => Message::Prepare {
                generation: r.u64("generation")?,
                version: r.u64("version")?,
                ballot: get_ballot(&mut r)?,
            },
            KIND_PROMISE => {
                let version = r.u64("version")?;
                let ballot = get_ballot(&mut r)?;
                let accepted = if r.bool("accepted present")? {
                    Some(Box::new((get_ballot(&mut r)?, get_change(&mut r)?)))
                } else {
                    None
                };
                Message::Promise {
                    version,
                    ballot,
                    accepted,
                }
            }
            KIND_NACK => Message::Nack {
                version: r.u64("version")?,
                ballot: get_ballot(&mut r)?,
                promised: get_ballot(&mut r)?,
            },
            KIND_BEHIND => Message::Behind {
                version: r.u64("version")?,
            },
            KIND_ACCEPT => Message::Accept {
                generation: r.u64("generation")?,
                version: r.u64("version")?,
                ballot: get_ballot(&mut r)?,
                change: Box::new(get_change(&mut r)?),
            },
            KIND_ACCEPTED => Message::Accepted {
                version: r.u64("version")?,
                ballot: get_ballot(&mut r)?,
            },
            KIND_DECIDED => Message::Decided {
                state: Box::new(get_state(&mut r)?),
            },
            KIND_SCHEMA_REQUEST => {
                let request = r.u64("request")?;
                let change = match r.u8("schema change kind")? {
                    1 => SchemaChange::CreateTable {
                        definition: r.bytes("definition")?.to_vec(),
                    },
                    2 => SchemaChange::DropTable {
                        name: r.string("table name")?,
                    },
                    3 => SchemaChange::RenameTable {
                        from: r.string("table name")?,
                        to: r.string("new table name")?,
                    },
                    other => {
                        return Err(DecodeError::new(format!(
                            "unknown schema change kind {other}"
                        )));
                    }
                };
                Message::SchemaRequest { request, change }
            }
            KIND_SCHEMA_REPLY => {
                let request = r.u64("request")?;
                let result = if r.bool("ok")? {
                    Ok(r.u32("table id")?)
                } else {
                    Err(get_error(&mut r)?)
                };
                Message::SchemaReply { request, result }
            }
            KIND_DICTIONARY_REQUEST => Message::DictionaryRequest {
                request: r.u64("request")?,
            },
            KIND_DICTIONARY_REPLY => Message::DictionaryReply {
                request: r.u64("request")?,
                state: Box::new(get_state(&mut r)?),
            },
            KIND_ALLOCATE_NODE_ID => Message::AllocateNodeId {
                role: get_role(&mut r)?,
                requested: match r.u8("requested node")? {
                    0 => None,
                    node => Some(node),
                },
                listen_port: r.u16("listen port")?,
            },
            KIND_NODE_ID_ALLOCATED => Message::NodeIdAllocated {
                node: r.u8("node")?,
                config_file: r.string("config file")?,
                config_text: r.string("config text")?,
                secret: fixed(&mut r, "secret")?,
            },
            KIND_REFUSED => Message::Refused {
                error: get_error(&mut r)?,
            },
            KIND_ADDRESSES => {
                let count = r.count(7, "addresses")?;
                let mut entries = Vec::with_capacity(count);
                for _ in 0..count {
                    entries.push(Address {
                        node: r.u8("node")?,
                        host: r.string("host")?,
                        port: r.u16("port")?,
                    });
                }
                Message::Addresses { entries }
            }
            KIND_STATUS_REPORT => Message::StatusReport {
                report: Box::new(DataNodeReport {
                    started: r.bool("started")?,
                    incarnation: r.u64("incarnation")?,
                    generation: r.u64("generation")?,
                    version: r.u64("version")?,
                    president: r.u8("president")?,
                    members: r.bytes("members")?.to_vec(),
                    schema_version: r.u64("schema version")?,
                    tables: r.u32("tables")?,
                    pages_used: r.u64("pages used")?,
                    pages_total: r.u64("pages total")?,
                    recovering: r.bool("recovering")?,
                    fragments_copied: r.u32("fragments copied")?,
                    fragments_to_copy: r.u32("fragments to copy")?,
                    rows_copied: r.u64("rows copied")?,
                    durability: read_durability(&mut r)?,
                    restorable_epoch: r.u64("restorable epoch")?,
                    restorable_generation: r.u64("restorable generation")?,
                    restored_from_generation: r.u64("restored from generation")?,
                    disk_epoch_max: r.u64("disk epoch max")?,
                }),
            },
            KIND_STATUS_REQUEST => Message::StatusRequest {
                request: r.u64("request")?,
            },
            KIND_STATUS_REPLY => {
                let request = r.u64("request")?;
                let count = r.count(29, "node statuses")?;
                let mut nodes = Vec::with_capacity(count);
                for _ in 0..count {
                    nodes.push(NodeStatus {
                        node: r.u8("node")?,
                        role: get_role(&mut r)?,
                        configured_host: r.string("configured host")?,
                        address: r.string("address")?,
                        state: {
                            let id = r.u8("state")?;
                            NodeState::from_wire_id(id).ok_or_else(|| {
                                DecodeError::new(format!("unknown node state {id}"))
                            })?
                        },
                        node_group: if r.bool("node group present")? {
                            Some(r.u16("node group")?)
                        } else {
                            None
                        },
                        president: r.bool("president")?,
                        pages_used: r.u64("pages used")?,
                        pages_total: r.u64("pages total")?,
                        fragments_copied: r.u32("fragments copied")?,
                        fragments_to_copy: r.u32("fragments to copy")?,
                        rows_copied: r.u64("rows copied")?,
                        durability: read_durability(&mut r)?,
                    });
                }
                Message::StatusReply { request, nodes }
            }
            KIND_STOP_REQUEST => Message::StopRequest {
                request: r.u64("request")?,
                node: match r.u8("node")? {
                    0 => None,
                    node => Some(node),
                },
                include_management: r.bool("include management")?,
                restart: if r.bool("restart")? {
                    Some(get_restart(&mut r)?)
                } else {
                    None
                },
            },
            KIND_STOP_REPLY => {
                let request = r.u64("request")?;
                let result = if r.bool("ok")? {
                    Ok(r.bytes("stopped nodes")?.to_vec())
                } else {
                    Err(get_error(&mut r)?)
                };
                Message::StopReply { request, result }
            }
            KIND_STOP => Message::Stop,
            KIND_DRAIN => Message::Drain,
            KIND_DRAINED => Message::Drained {
                epoch: r.u64("epoch")?,
                durable_epoch: r.u64("durable_epoch")?,
            },
            KIND_LEAVING => Message::Leaving,
            KIND_RESTART => Message::Restart(get_restart(&mut r)?),
            KIND_WAITING_FOR_START => Message::WaitingForStart {
                node: r.u8("node")?,
            },
            KIND_START_REQUEST => Message::StartRequest {
                request: r.u64("request")?,
                node: r.u8("node")?,
            },
            KIND_START_REPLY => {
                let request = r.u64("request")?;
                let result = if r.bool("ok")? {
                    Ok(())
                } else {
                    Err(get_error(&mut r)?)
                };
                Message::StartReply { request, result }
            }
            KIND_START => Message::Start,
            KIND_EXECUTE => Message::Execute(get_execute(&mut r)?),
            KIND_EXECUTED => Message::Executed(get_executed(&mut r)?),
            KIND_SCAN_OPEN => Message::ScanOpen(Box::new(get_scan_open(&mut r)?)),
            KIND_FRAGMENT_SCAN_OPEN => Message::FragmentScanOpen(Box::new(get_scan_open(&mut r)?)),
            KIND_SCAN_ROWS => Message::ScanRows(get_scan_rows(&mut r)?),
            KIND_SCAN_NEXT => Message::ScanNext(get_scan_next(&mut r)?),
            KIND_SCAN_CLOSE => Message::ScanClose {
                transaction: r.u64("transaction")?,
                scan: r.u32("scan")?,
            },
            KIND_KEY_REQUEST => Message::KeyRequest(get_key_request(&mut r)?),
            KIND_KEY_CONFIRM => Message::KeyConfirm(get_key_confirm(&mut r)?),
            KIND_KEY_REFUSE => Message::KeyRefuse(get_key_refuse(&mut r)?),
            KIND_COMMIT => Message::Commit(get_phase(&mut r)?),
            KIND_COMPLETE => Message::Complete(get_phase(&mut r)?),
            KIND_ABORT => Message::Abort(get_phase(&mut r)?),
            KIND_COMMITTED => Message::Committed(get_phase_done(&mut r)?),
            KIND_COMPLETED => Message::Completed(get_phase_done(&mut r)?),
            KIND_ABORTED => Message::Aborted(get_phase_done(&mut r)?),
            KIND_TAKEOVER_QUERY => Message::TakeoverQuery(get_takeover_query(&mut r)?),
            KIND_TAKEOVER_REPORT => Message::TakeoverReport(Box::new(get_takeover_report(&mut r)?)),
            KIND_COPY_REQUEST => Message::CopyRequest(get_copy_request(&mut r)?),
            KIND_COPY_ROWS => Message::CopyRows(get_copy_rows(&mut r)?),
            KIND_COPY_NEXT => Message::CopyNext(get_copy_next(&mut r)?),
            KIND_NODE_COPIED => Message::NodeCopied {
                member: Member {
                    node: r.u8("node")?,
                    incarnation: r.u64("incarnation")?,
                },
            },
            KIND_COMMIT_ACK => Message::CommitAck {
                transactions: Box::new(get_transaction_ids(&mut r)?),
            },
            KIND_FORGET_MARKERS => Message::ForgetMarkers {
                transactions: Box::new(get_transaction_ids(&mut r)?),
            },
            KIND_TAKEOVER_DONE => Message::TakeoverDone {
                failed_node: r.u8("failed node")?,
                failed_incarnation: r.u64("failed incarnation")?,
            },
            KIND_EPOCH => {
                let byte = r.u8("epoch step")?;
                Message::Epoch {
                    step: EpochStep::from_byte(byte)
                        .ok_or_else(|| DecodeError::new(format!("unknown epoch step {byte}")))?,
                    epoch: r.u64("epoch")?,
                }
            }
            other => return Err(DecodeError::new(format!("unknown message kind {other}"))),
        };
        r.finish(message.name())?;
        Ok(message)
    }
}

/// A list of transaction ids (commit acknowledgements, markers to forget):
/// at most `MARKER_IDS_MAX`.
fn put_transaction_ids(w: &mut Writer, ids: &[u64]) {
    assert!(
        ids.len() <= MARKER_IDS_MAX,
        "a list of {} transaction ids, more than MARKER_IDS_MAX",
        ids.len()
    );
    w.count(ids.len());
    for id in ids {
        w.u64(*id);
    }
}

fn get_transaction_ids(r: &mut Reader) -> Result<Vec<u64>, DecodeError> {
    let count = r.count(8, "transaction ids")?;
    if count > MARKER_IDS_MAX {
        return Err(DecodeError::new(format!(
            "a list of {count} transaction ids, more than {MARKER_IDS_MAX}"
        )));
    }
    (0..count).map(|_| r.u64("transaction id")).collect()
}

/// A byte string of exactly `N` bytes (nonce, proof, secret).
fn fixed<const N: usize>(r: &mut Reader, what: &str) -> Result<[u8; N], DecodeError> {
    let bytes = r.bytes(what)?;
    <[u8; N]>::try_from(bytes)
        .map_err(|_| DecodeError::new(format!("{what}: {} bytes, not {N}", bytes.len())))
}

fn put_member(w: &mut Writer, member: Member) {
    w.u8(member.node);
    w.u64(member.incarnation);
}

fn get_member(r: &mut Reader) -> Result<Member, DecodeError> {
    Ok(Member {
        node: r.u8("member node")?,
        incarnation: r.u64("member incarnation")?,
    })
}

fn put_members(w: &mut Writer, members: &[Member]) {
    w.count(members.len());
    for member in members {
        put_member(w, *member);
    }
}

fn get_members(r: &mut Reader) -> Result<Vec<Member>, DecodeError> {
    let count = r.count(9, "members")?;
    (0..count).map(|_| get_member(r)).collect()
}

pub(crate) fn put_ballot(w: &mut Writer, ballot: Ballot) {
    w.u32(ballot.round);
    w.u8(ballot.node);
}

pub(crate) fn get_ballot(r: &mut Reader) -> Result<Ballot, DecodeError> {
    Ok(Ballot {
        round: r.u32("ballot round")?,
        node: r.u8("ballot node")?,
    })
}

fn get_role(r: &mut Reader) -> Result<NodeRole, DecodeError> {
    let id = r.u8("role")?;
    NodeRole::from_wire_id(id).ok_or_else(|| DecodeError::new(format!("unknown node role {id}")))
}

pub(crate) fn put_error(w: &mut Writer, error: &ErrorReply) {
    w.u16(error.ndb_code);
    w.u16(error.mysql_code);
    w.string(&error.message);
}

/// `RestartOptions`: `initial`, then `no_start`, one bool byte each.
fn put_restart(w: &mut Writer, restart: &RestartOptions) {
    w.bool(restart.initial);
    w.bool(restart.no_start);
}

fn get_restart(r: &mut Reader) -> Result<RestartOptions, DecodeError> {
    Ok(RestartOptions {
        initial: r.bool("initial")?,
        no_start: r.bool("no start")?,
    })
}

pub(crate) fn get_error(r: &mut Reader) -> Result<ErrorReply, DecodeError> {
    Ok(ErrorReply {
        ndb_code: r.u16("ndb code")?,
        mysql_code: r.u16("mysql code")?,
        message: r.string("error message")?,
    })
}

fn put_table(w: &mut Writer, table: &TableEntry) {
    w.u32(table.id);
    w.string(&table.name);
    w.u64(table.schema_version);
    w.bytes(&table.definition);
    w.u32(table.partition_count);
    w.bool(table.fully_replicated);
    w.bool(table.read_backup);
    w.count(table.fragments.len());
    for fragment in &table.fragments {
        w.u32(fragment.partition);
        w.u16(fragment.node_group);
        w.bytes(&fragment.replicas);
        w.u32(fragment.ldm);
    }
}

fn get_table(r: &mut Reader) -> Result<TableEntry, DecodeError> {
    let id = r.u32("table id")?;
    let name = r.string("table name")?;
    let schema_version = r.u64("table schema version")?;
    let definition = r.bytes("table definition")?.to_vec();
    let partition_count = r.u32("partition count")?;
    let fully_replicated = r.bool("fully replicated")?;
    let read_backup = r.bool("read backup")?;
    let count = r.count(14, "fragments")?;
    let mut fragments = Vec::with_capacity(count);
    for _ in 0..count {
        fragments.push(Fragment {
            partition: r.u32("partition")?,
            node_group: r.u16("node group")?,
            replicas: r.bytes("replicas")?.to_vec(),
            ldm: r.u32("ldm")?,
        });
    }
    Ok(TableEntry {
        id,
        name,
        schema_version,
        definition,
        partition_count,
        fully_replicated,
        read_backup,
        fragments,
    })
}

const CHANGE_MEMBERSHIP: u8 = 1;
const CHANGE_CREATE_TABLE: u8 = 2;
const CHANGE_DROP_TABLE: u8 = 3;
const CHANGE_NODE_STARTED: u8 = 4;
const CHANGE_RENAME_TABLE: u8 = 5;

pub(crate) fn put_change(w: &mut Writer, change: &Change) {
    match change {
        Change::Membership { members } => {
            w.u8(CHANGE_MEMBERSHIP);
            put_members(w, members);
        }
        Change::CreateTable { table, origin } => {
            w.u8(CHANGE_CREATE_TABLE);
            put_table(w, table);
            put_origin(w, *origin);
        }
        Change::DropTable { table_id, origin } => {
            w.u8(CHANGE_DROP_TABLE);
            w.u32(*table_id);
            put_origin(w, *origin);
        }
        Change::RenameTable {
            table_id,
            name,
            definition,
            origin,
        } => {
            w.u8(CHANGE_RENAME_TABLE);
            w.u32(*table_id);
            w.string(name);
            w.bytes(definition);
            put_origin(w, *origin);
        }
        Change::NodeStarted { member } => {
            w.u8(CHANGE_NODE_STARTED);
            put_members(w, std::slice::from_ref(member));
        }
    }
}

fn put_origin(w: &mut Writer, origin: SchemaRequestId) {
    w.u8(origin.node);
    w.u64(origin.request);
}

fn get_origin(r: &mut Reader) -> Result<SchemaRequestId, DecodeError> {
    Ok(SchemaRequestId {
        node: r.u8("request node")?,
        request: r.u64("request id")?,
    })
}

pub(crate) fn get_change(r: &mut Reader) -> Result<Change, DecodeError> {
    match r.u8("change kind")? {
        CHANGE_MEMBERSHIP => Ok(Change::Membership {
            members: get_members(r)?,
        }),
        CHANGE_CREATE_TABLE => Ok(Change::CreateTable {
            table: get_table(r)?,
            origin: get_origin(r)?,
        }),
        CHANGE_DROP_TABLE => Ok(Change::DropTable {
            table_id: r.u32("table id")?,
            origin: get_origin(r)?,
        }),
        CHANGE_RENAME_TABLE => Ok(Change::RenameTable {
            table_id: r.u32("table id")?,
            name: r.string("table name")?,
            definition: r.bytes("definition")?.to_vec(),
            origin: get_origin(r)?,
        }),
        CHANGE_NODE_STARTED => match get_members(r)?.as_slice() {
            [member] => Ok(Change::NodeStarted { member: *member }),
            other => Err(DecodeError::new(format!(
                "a started node change names {} members",
                other.len()
            ))),
        },
        other => Err(DecodeError::new(format!("unknown change kind {other}"))),
    }
}

pub(crate) fn put_state(w: &mut Writer, state: &ClusterState) {
    w.u64(state.generation);
    w.u64(state.version);
    put_members(w, &state.members);
    put_members(w, &state.removed);
    put_members(w, &state.starting);
    put_members(w, &state.recovered);
    w.u64(state.schema_version);
    w.u32(state.next_table_id);
    w.count(state.tables.len());
    for table in &state.tables {
        put_table(w, table);
    }
    w.count(state.schema_outcomes.len());
    for outcome in &state.schema_outcomes {
        put_origin(w, outcome.origin);
        w.u32(outcome.table_id);
    }
    w.u64(state.restore_epoch);
    w.u64(state.epoch_floor);
}

pub(crate) fn get_state(r: &mut Reader) -> Result<ClusterState, DecodeError> {
    let generation = r.u64("generation")?;
    let version = r.u64("state version")?;
    let members = get_members(r)?;
    let removed = get_members(r)?;
    let starting = get_members(r)?;
    let recovered = get_members(r)?;
    let schema_version = r.u64("schema version")?;
    let next_table_id = r.u32("next table id")?;
    let count = r.count(30, "tables")?;
    let mut tables = Vec::with_capacity(count);
    for _ in 0..count {
        tables.push(get_table(r)?);
    }
    let count = r.count(13, "schema outcomes")?;
    let mut schema_outcomes = Vec::with_capacity(count);
    for _ in 0..count {
        schema_outcomes.push(SchemaOutcome {
            origin: get_origin(r)?,
            table_id: r.u32("outcome table id")?,
        });
    }
    let restore_epoch = r.u64("restore epoch")?;
    let epoch_floor = r.u64("epoch floor")?;
    Ok(ClusterState {
        generation,
        version,
        members,
        removed,
        starting,
        recovered,
        schema_version,
        next_table_id,
        tables,
        schema_outcomes,
        restore_epoch,
        epoch_floor,
    })
}

fn write_durability(w: &mut Writer<'_>, durability: &Durability) {
    w.u64(durability.epoch);
    w.u64(durability.durable_epoch);
    w.u64(durability.redo_used_bytes);
    w.u64(durability.redo_total_bytes);
}

fn read_durability(r: &mut Reader<'_>) -> Result<Durability, DecodeError> {
    Ok(Durability {
        epoch: r.u64("epoch")?,
        durable_epoch: r.u64("durable epoch")?,
        redo_used_bytes: r.u64("redo bytes used")?,
        redo_total_bytes: r.u64("redo bytes")?,
    })
}
