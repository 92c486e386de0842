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
    CHANGE_DELETE, CHANGE_PUT, CHANGE_ROW_OF_PART, CHECKPOINT_PARTS, CheckpointSelection,
    Completion, Engine, EngineConfig, MemoryReport, NO_TRANSACTION, OperationKind,
    OperationRequest, Outcome, ReadMode, RowOfPart, ScanBatch, ScanBound, ScanRequest, TableId,
    TableMemory, TransactionId, changes, checkpoint_part, split_gci, split_row_of_part,
};
