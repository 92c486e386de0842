//! The local storage engine of a data node: what NDB calls the LDM.
//!
//! One `Engine` owns the partitions of one LDM thread: their rows, their
//! primary-key hash indexes and ordered indexes, all in one DataMemory page
//! pool, and the row locks and operation records of the local half of every
//! transaction touching them. It is sans-IO: requests come in as plain data
//! with the current time, responses go out as plain data; no clock, thread,
//! socket or file is used here.

pub mod engine;
pub mod filter;
pub mod hash_index;
pub mod memory;
pub mod ordered_index;

pub use engine::{
    CHANGE_DELETE, CHANGE_PUT, CHANGE_PUT_AT, Completion, Engine, EngineConfig, MemoryReport,
    NO_TRANSACTION, OperationKind, OperationRequest, Outcome, ReadMode, ScanBatch, ScanBound,
    ScanRequest, TableId, TableMemory, TransactionId, changes, split_gci,
};
