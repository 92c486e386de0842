//! What a data node keeps on disk.
//!
//! - `redo`: the redo log. Committed changes are appended as checksummed
//!   records carrying their epoch into a buffer (`RedoBuffer`) in front of
//!   `NoOfFragmentLogFiles` preallocated files of `FragmentLogFileSize`
//!   bytes used as one circular log. It is sans-IO: writes and syncs come
//!   out as `DiskRequest`s and their completions go back in, so the data
//!   node's event loop never blocks on the disk and the simulator drives
//!   the same code against its disk model. A full log or buffer is NDB's
//!   temporary error 410 or 1234; the node stays up.
//! - `system_file`: what a restart starts from (the redo log's generation
//!   and tail, the local checkpoint to load), in two slots so a torn
//!   write never loses it.
//! - `model`: the simulator's disk: writes not yet synced may be lost, or
//!   torn at a sector, at a crash.
//!
//! The production files are `runtime::redo_files`.

pub mod model;
pub mod redo;
pub mod system_file;

pub use redo::{
    DiskCompletion, DiskRequest, Lsn, RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_MAX, ReadAt,
    RedoConfig, RedoError, RedoLog, RedoRecord, Scan, scan,
};
