//! Shoal's deterministic simulator: every data node and the management node
//! of a cluster run in one thread, on virtual time, over a simulated network
//! that delays, drops, duplicates and reorders messages, cuts links and
//! partitions the cluster, while nodes crash and restart. The same seed
//! gives the same run, event for event, so any failure replays from the
//! seed printed in its message (`shoal sim --seed N ...`).
//!
//! Checkers run on every installed state and at the end:
//! - agreement: every node that installs version v installs the same state;
//! - every agreed state keeps a node of every node group;
//! - a node incarnation installs versions in increasing order;
//! - a member removed from the agreed state never comes back (a restarted
//!   node comes back only as a new incarnation);
//! - members keep their admission order;
//! - after the faults stop, every live data node is a member of one agreed
//!   state that lists exactly the live nodes, and the management node shows
//!   them started;
//! - every table creation the cluster acknowledged is in that state (unless
//!   an acknowledged drop removed it), each table's fragments sit on whole
//!   node groups.
//!
//! Transaction runs (`SimulationOptions::transactions`) also run a
//! transaction coordinator and a local query handler in every data node,
//! over TCP-like links (in order per link, exactly once, retransmission
//! delays), with API clients running a bank, tagged row groups, counters
//! and a table with a unique index. Checkers: the bank keeps its total, a
//! transaction's writes are all there or none, no read returns an
//! uncommitted value or misses the transaction's own writes, no increment
//! is lost, a read by unique key finds the row holding that key, every
//! `Execute` gets one answer, and after quiescence no transaction or lock
//! is left, every replica of every fragment (hidden tables too) holds the
//! same rows, and every unique index holds exactly the rows its base table
//! implies.
//!
//! With `SimulationOptions::crashes`, data nodes crash while the workload
//! runs — at random moments and right after handling a key request, a
//! commit, a complete, an abort or a fragment scan, with only part of that
//! step's messages sent; in half of them coordinators crash too and the
//! president takes their transactions over. Crashed nodes stay down
//! (`run/crashes.rs` says why); the same checkers
//! then prove that no acknowledged commit is lost while every node group
//! keeps a live replica, that every execute gets a true answer (4010 for a
//! transaction a failure aborted), and that the survivors hold no lock,
//! operation or scan record at the end.

mod network;
mod run;

pub use run::{
    CrashMarks, DiskOutcome, Outcome, SimulationOptions, TransactionMarks, TransactionOutcome, run,
};
