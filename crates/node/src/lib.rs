//! One data node's blocks wired together, sans-IO: the membership and
//! dictionary block (`cluster::DataNode`), the transaction coordinator and
//! the query handler (`transaction`), the routing they share, and the
//! decisions about connections that sit between them and the sockets —
//! which peer a connection belongs to, what a peer may send, messages held
//! for a peer not connected yet, the node's own messages delivered in
//! order, ticks, the management node's connection, and restarting as a new
//! incarnation.
//!
//! `datad` (the production runtime) and the simulator both drive this
//! composite, so the simulator runs the wiring production runs; the
//! runtimes keep only sockets, clocks, signals and (in the simulator) the
//! model of the network.

pub mod data_node;

pub use data_node::{DataNodeComposite, LinkId, NodeMarks, Output};
