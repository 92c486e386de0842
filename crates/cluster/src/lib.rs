//! The cluster's distributed state machines, sans-IO: a data node's
//! membership and dictionary block (`data_node`), the management node
//! (`management`: node ids, configuration, status, arbitration, starting
//! the cluster), and the rules they share (`state`, `acceptor`,
//! `dictionary`, `lease`).
//!
//! Every block is driven by `(now, input) -> Effects`; the production
//! runtime (`runtime`) and the deterministic simulator (`simulator`) are the
//! two drivers.

pub mod acceptor;
pub mod data_node;
pub mod dictionary;
pub mod effects;
pub mod epochs;
pub mod lease;
pub mod management;
pub mod state;

pub use data_node::{DataNode, DataNodeSettings};
pub use effects::{Effects, Event};
pub use management::{ManagementNode, ManagementSettings};
