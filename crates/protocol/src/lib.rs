//! The contract between Shoal's roles: every message data nodes, the
//! management node and API nodes exchange, the plain data they carry, and
//! the frame format that carries them over TCP. Byte layouts are documented
//! next to the code (`frame`, `message`) and versioned (`PROTOCOL_VERSION`).
//!
//! This crate is data and codecs only, sans-IO: the state machines that
//! decide what to send live in `cluster`, the sockets in `runtime`.

pub mod codec;
pub mod frame;
pub mod identity;
pub mod message;
pub mod persisted;
pub mod transaction;
pub mod types;

pub use codec::DecodeError;
pub use frame::{FrameDecoder, PROTOCOL_VERSION, encode_frame};
pub use message::{EpochStep, Message};
pub use transaction::{
    Bound, CHAIN_NODES_MAX, COPIED_ROW_BY_KEY, COPIED_ROW_WHOLE, Chain, CopyNext, CopyRequest,
    CopyRows, Execute, ExecuteEnd, Executed, KeyConfirm, KeyRefuse, KeyRequest, MARKER_IDS_MAX,
    MarkerEntry, NO_API, Operation, OperationKind, OperationResult, Phase, PhaseDone, ScanNext,
    ScanOpen, ScanRows, TAKEOVER_REPORT_ENTRIES_MAX, TakeoverEntry, TakeoverQuery, TakeoverReport,
    TransactionState, WorkState,
};
pub use types::*;
