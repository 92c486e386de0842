//! The config.ini of a local sandbox cluster, as `shoal up` writes it.
//!
//! The text goes through [`crate::parse`] like any other file, so this
//! module checks nothing itself: a bad combination (three data nodes with
//! two replicas) comes back as the same error a hand-written file would get.

use std::fmt::Write;

use crate::value::format_size;

/// The management node's id in a sandbox.
const SANDBOX_MANAGEMENT_NODE_ID: u8 = 1;
/// The SQL node's id: the first id above the data node range (1..=144), so
/// it never collides with a data node whatever their count.
const SANDBOX_MYSQLD_NODE_ID: u8 = 145;
/// Free API slots for tools and benchmarks, and the SQL node's further
/// cluster connections (one per worker thread, up to four).
const SANDBOX_API_SLOTS: usize = 8;
/// Every sandbox node runs on this machine.
const SANDBOX_HOST: &str = "127.0.0.1";

/// Writes a config.ini for a cluster on this machine: one `[ndb_mgmd]` with
/// id 1 listening on `mgm_port`, data nodes with ids 2..=`data_nodes`+1, one
/// `[mysqld]` with id 145 and eight `[api]` slots without ids. Each node with
/// a directory gets its own under `data_dir` (`ndb_mgmd-1`, `ndbd-2`, ...).
pub fn sandbox_config_text(
    data_dir: &str,
    data_nodes: u8,
    replicas: u8,
    mgm_port: u16,
    data_memory_bytes: u64,
) -> String {
    let node_dir = |name: &str| {
        if data_dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", data_dir.trim_end_matches('/'))
        }
    };
    let mut text = String::new();
    // Writing to a String cannot fail, hence the ignored results below.
    let _ = writeln!(
        text,
        "# A local sandbox cluster, written by `shoal up`.\n\
         \n\
         [ndbd default]\n\
         NoOfReplicas={replicas}\n\
         DataMemory={}\n\
         HostName={SANDBOX_HOST}\n\
         \n\
         [ndb_mgmd]\n\
         NodeId={SANDBOX_MANAGEMENT_NODE_ID}\n\
         HostName={SANDBOX_HOST}\n\
         PortNumber={mgm_port}\n\
         DataDir={}",
        format_size(data_memory_bytes),
        node_dir(&format!("ndb_mgmd-{SANDBOX_MANAGEMENT_NODE_ID}")),
    );
    for offset in 0..u16::from(data_nodes) {
        // Ids past 255 are written as they are, so that `parse` reports them.
        let node_id = u16::from(SANDBOX_MANAGEMENT_NODE_ID) + 1 + offset;
        let _ = writeln!(
            text,
            "\n[ndbd]\nNodeId={node_id}\nDataDir={}",
            node_dir(&format!("ndbd-{node_id}"))
        );
    }
    let _ = writeln!(
        text,
        "\n[mysqld]\nNodeId={SANDBOX_MYSQLD_NODE_ID}\nHostName={SANDBOX_HOST}"
    );
    for _ in 0..SANDBOX_API_SLOTS {
        let _ = writeln!(text, "\n[api]\nHostName={SANDBOX_HOST}");
    }
    text
}
