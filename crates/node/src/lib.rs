//! A node's blocks wired together, sans-IO.
//!
//! `data_node`: one data node — the membership and dictionary block
//! (`cluster::DataNode`), the transaction coordinator and the query handler
//! (`transaction`), the routing they share, and the decisions about
//! connections that sit between them and the sockets — which peer a
//! connection belongs to, what a peer may send, messages held for a peer
//! not connected yet, the node's own messages delivered in order, ticks,
//! the management node's connection, and restarting as a new incarnation.
//!
//! `management_node`: the management node — the block
//! (`cluster::ManagementNode`), each connection's `Hello` claim and when it
//! counts as identified, ticks, and the block's events turned into outputs
//! (votes to make durable before the turn's sends, cluster log lines, stop).
//!
//! `datad` and `mgmd` (the production runtime) and the simulator drive
//! these composites, so the simulator runs the wiring production runs; the
//! runtimes keep only sockets, files, clocks, signals and (in the
//! simulator) the model of the network.

pub mod data_node;
pub mod durability;
pub mod management_node;

pub use data_node::{DataNodeComposite, LinkId, NodeMarks, Output};
pub use management_node::{ManagementComposite, ManagementOutput};
