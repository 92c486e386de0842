//! Shoal's production runtime: real sockets, files, clocks and signals
//! driving the sans-IO blocks of `cluster`. `datad` and `mgmd` are the
//! processes' event loops (mio, one thread each for now); `transport` turns
//! messages into batched frames on TCP; `blocking` is the simple client
//! side used by `shoal mgm`, `shoal up` and tests. `angel` supervises a
//! data node's worker process, with the exit codes of `exit`. `redo_files`
//! are the redo log's files (`disk::RedoLog`'s requests done for real),
//! `node_disk` a data node's file system directory, system file and the
//! thread that does the redo log's writes.

pub mod angel;
pub mod blocking;
pub mod datad;
pub mod exit;
pub mod machine;
pub mod mgmd;
pub mod node_disk;
pub mod redo_files;
pub mod shared_memory;
pub mod transport;

use std::time::{SystemTime, UNIX_EPOCH};

/// `N` bytes from the operating system's random source: connection
/// challenges (`protocol::identity`) and the cluster secret.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random bytes from the system: {e}"))?;
    Ok(bytes)
}

/// A number that grows from one start of a process to the next: the
/// microseconds since the Unix epoch, shifted below 2^47 so a management
/// node's generations fit (see `cluster::management`).
pub fn incarnation_now() -> u64 {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64);
    // 2^47 µs is about 4.5 years: count from 2026-01-01 so it lasts.
    const EPOCH_2026_MICROS: u64 = 1_767_225_600_000_000;
    (micros.saturating_sub(EPOCH_2026_MICROS) / 16).max(1)
}
