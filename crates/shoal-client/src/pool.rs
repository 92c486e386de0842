//! A connection pool: several cluster connections in one process, each with
//! its own API node id and its own sockets and receiving threads (NDB's
//! `ndb-cluster-connection-pool`). Sessions are spread over them in turn,
//! so many threads do not queue on one connection's locks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::connection::Cluster;
use crate::error::ClientError;
use crate::session::{COUNTERS, Counters, Session};

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
        ClusterPool::connect_with(connectstring, size, size, timeout, Cluster::connect)
    }

    /// `connect` with driven connections (`Cluster::connect_driven`): at
    /// least `required` of them (past those, one that cannot be opened,
    /// say for want of a free API slot, ends the pool there).
    pub fn connect_driven(
        connectstring: &str,
        size: usize,
        required: usize,
        timeout: Duration,
    ) -> Result<ClusterPool, ClientError> {
        ClusterPool::connect_with(
            connectstring,
            size,
            required,
            timeout,
            Cluster::connect_driven,
        )
    }

    fn connect_with(
        connectstring: &str,
        size: usize,
        required: usize,
        timeout: Duration,
        connect: fn(&str, Duration) -> Result<Cluster, ClientError>,
    ) -> Result<ClusterPool, ClientError> {
        if size == 0 || required == 0 || required > size {
            return Err(ClientError::usage(
                "a pool needs at least one connection, and no more required than wanted",
            ));
        }
        let mut connections = Vec::with_capacity(size);
        for index in 0..size {
            match connect(connectstring, timeout) {
                Ok(connection) => connections.push(connection),
                Err(error) if index < required => return Err(error),
                Err(_) => break,
            }
        }
        Cluster::join_pool(&connections);
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

    /// A session on connection `index` (modulo the pool's size): a
    /// runtime that reads each connection's sockets on its own thread
    /// keeps that thread's sessions on it.
    pub fn session_on(&self, index: usize) -> Result<Session, ClientError> {
        self.connections[index % self.connections.len()].session()
    }

    /// The counters of every connection, summed.
    pub fn counters(&self) -> Counters {
        let mut total = [0u64; COUNTERS];
        for connection in &self.connections {
            for (sum, value) in total.iter_mut().zip(connection.counter_values()) {
                *sum += value;
            }
        }
        Counters::from_values(&total)
    }
}
