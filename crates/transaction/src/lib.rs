//! Distributed transactions, sans-IO: the transaction coordinator (TC) that
//! every data node runs, the local query handler (LQH) that drives a node's
//! storage engine, and the routing of keys to fragment replicas that both
//! they and API nodes use.
//!
//! Both blocks take messages and the time as arguments and put the
//! messages they send into a caller's list as `(to, message)`; a message to
//! the node itself is delivered by the runtime like any other, in order.
//! The commit protocol (`coordinator`, `query_handler`) relies on what TCP
//! gives each connection: messages between two nodes arrive in the order
//! they were sent, once, or the connection fails (a node failure).

pub mod coordinator;
pub mod errors;
pub mod maps;
pub mod query_handler;
pub mod redo;
pub mod routing;
pub mod unique;

pub use coordinator::{Coordinator, CoordinatorConfig, CoordinatorCounters, TakeoverCounters};
pub use query_handler::{QueryHandler, QueryHandlerCounters};
pub use routing::{Routing, TableRoute};

use protocol::Message;

/// Whether a message from another data node (or from this node's own
/// coordinator) is for the query handler; the rest of the transaction
/// messages from data nodes are for the coordinator. Messages from API
/// nodes are all for the coordinator.
pub fn for_query_handler(message: &Message) -> bool {
    matches!(
        message,
        Message::KeyRequest(_)
            | Message::Commit(_)
            | Message::Complete(_)
            | Message::Abort(_)
            | Message::FragmentScanOpen(_)
            | Message::ScanNext(_)
            | Message::ScanClose { .. }
            | Message::TakeoverQuery(_)
            | Message::ForgetMarkers { .. }
            | Message::CopyRequest(_)
            | Message::CopyRows(_)
            | Message::CopyNext(_)
    )
}

/// Whether a message is one of the transaction protocol's.
pub fn is_transaction_message(message: &Message) -> bool {
    for_query_handler(message)
        || matches!(
            message,
            Message::Execute(_)
                | Message::Executed(_)
                | Message::ScanOpen(_)
                | Message::ScanRows(_)
                | Message::KeyConfirm(_)
                | Message::KeyRefuse(_)
                | Message::Committed(_)
                | Message::Completed(_)
                | Message::Aborted(_)
                | Message::CommitAck { .. }
                | Message::TakeoverDone { .. }
                | Message::TakeoverReport(_)
                | Message::Epoch { .. }
        )
}
