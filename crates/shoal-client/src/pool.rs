//! A connection pool: several cluster connections in one process, each with
//! its own API node id and its own sockets and receiving threads (NDB's
//! `ndb-cluster-connection-pool`). Sessions are spread over them in turn,
//! so many threads do not queue on one connection's locks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::connection::Cluster;
use crate::error::ClientError;
use crate::session::{Counters, Session};

pub struct ClusterPool {
    connections: Vec<Cluster>,
    next: AtomicUsize,
}

impl ClusterPool {
    /// Opens `size` connections (each takes a free `[api]` slot).
    pub fn connect(
        connectstring: &str,
        size: usize,
        timeout: Duration,
    ) -> Result<ClusterPool, ClientError> {
        if size == 0 {
            return Err(ClientError::usage("a pool needs at least one connection"));
        }
        let connections = (0..size)
            .map(|_| Cluster::connect(connectstring, timeout))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClusterPool {
            connections,
            next: AtomicUsize::new(0),
        })
    }

    pub fn connections(&self) -> &[Cluster] {
        &self.connections
    }

    /// A session on the next connection in turn.
    pub fn session(&self) -> Result<Session, ClientError> {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.connections.len();
        self.connections[index].session()
    }

    /// The counters of every connection, summed.
    pub fn counters(&self) -> Counters {
        let mut total = Counters::default();
        for connection in &self.connections {
            let c = connection.counters();
            total.execute_count += c.execute_count;
            total.pk_op_count += c.pk_op_count;
            total.scan_count += c.scan_count;
            total.pruned_scan_count += c.pruned_scan_count;
            total.scan_batch_count += c.scan_batch_count;
            total.trans_start_count += c.trans_start_count;
            total.trans_commit_count += c.trans_commit_count;
            total.trans_abort_count += c.trans_abort_count;
            total.bytes_sent_count += c.bytes_sent_count;
            total.bytes_received_count += c.bytes_received_count;
            total.data_node_hops += c.data_node_hops;
        }
        total
    }
}
