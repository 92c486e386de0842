//! `shoal-client`: Shoal's native API, the counterpart of the NDB API.
//!
//! - `Cluster` (NDB's `Ndb_cluster_connection`): connect through the
//!   management node, which hands this API node its node id and tells it
//!   where the data nodes listen; one connection to every data node; the
//!   dictionary (create and drop tables, partition maps).
//! - `Session` (NDB's `Ndb`), one per thread: transactions started with a
//!   distribution hint on a node that holds the key; `execute` sends a
//!   whole batch in one round trip; `prepare_async` + `send_poll` keep many
//!   transactions in flight from one thread; scans in parallel over
//!   partitions, pruned to one partition when the distribution key is fixed.
//! - `ClusterPool`: several cluster connections in one process.
//! - Counters per session and per connection (`Ndb_api_*_count`), and NDB
//!   error codes with their class (temporary, permanent, unknown result).

mod auto_increment;
mod connection;
mod error;
mod pool;
mod session;
pub mod task;

pub use auto_increment::{
    PREFETCH_DEFAULT as AUTO_INCREMENT_PREFETCH_DEFAULT,
    PREFETCH_MAX as AUTO_INCREMENT_PREFETCH_MAX,
};
pub use connection::{Cluster, LinkReceiver, REQUEST_TIMEOUT, SESSIONS_MAX};
pub use error::{ClientError, ErrorClass, classify};
pub use pool::ClusterPool;
pub use protocol::{ClusterState, ExecuteEnd, OperationKind};
pub use schema::Value;
pub use session::{
    Counters, Hint, Interrupter, LockMode, OperationId, Row, SCAN_BATCH_ROWS_DEFAULT, Scan,
    ScanOptions, Session, Status, Transaction,
};
pub use transaction::{Routing, TableRoute};
