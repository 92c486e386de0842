//! What the query handler writes to the redo log, and how a restart reads
//! it back.
//!
//! Each replica appends the changes of a transaction on one of its
//! fragments when the first Commit of it arrives there (NDB's LQH writes
//! its redo at prepare and a commit record at commit; here the commit's
//! outcome is known when the record is written, so one record does both
//! and a restart never meets a prepared transaction without its outcome).
//! The record carries the transaction's epoch, so a system restart applies
//! exactly the epochs of the global checkpoints that were made durable.
//!
//! A write reserves its record's bytes when it is prepared (`reserve_bytes`),
//! so a full log or buffer refuses a write (410, 1234) and never a commit.
//!
//! ## Payload of a `KIND_CHANGES` record, little-endian
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 4 | table id |
//! | 4 | 4 | fragment |
//! | 8 | 8 | transaction id |
//! | 16 | rest | changes, as `storage::Engine::prepared_changes` writes them |
//!
//! A transaction whose changes on one fragment exceed one record's payload
//! is written as several records, cut between changes.

use disk::redo::{RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_MAX};
use schema::TableDef;
use schema::table::ROW_SIZE_MAX;
use schema::types::Storage;

/// The record kind of a transaction's changes on one fragment.
pub const KIND_CHANGES: u8 = 1;
/// The record kind a data node appends when it saves a global checkpoint:
/// every change of an epoch below the record's epoch is before it in the
/// log (no payload). A restart finds the highest and knows how far its
/// disk can restore.
pub const KIND_SAVED: u8 = 2;
/// Bytes before the changes in a `KIND_CHANGES` payload.
pub const CHANGES_HEADER_BYTES: usize = 16;
/// A change's own header: its kind and its AttrInfo's length.
const CHANGE_HEADER_BYTES: u64 = 5;
/// An AttrInfo column header: column id and length, two bytes each.
const ATTRINFO_COLUMN_HEADER_BYTES: u64 = 4;

/// The most bytes one write operation on a row of `def` can add to the
/// redo log: the longest change (every column at its longest, within the
/// row size limit) in a record of its own.
pub fn reserve_bytes(def: &TableDef) -> u64 {
    let columns = def.columns.len() as u64;
    let values: u64 = def
        .columns
        .iter()
        .map(|column| match column.column_type.storage() {
            Storage::Fixed(bytes) | Storage::Var(bytes) => u64::from(bytes),
        })
        .sum();
    let change = CHANGE_HEADER_BYTES
        + columns * ATTRINFO_COLUMN_HEADER_BYTES
        + values.min(u64::from(ROW_SIZE_MAX));
    // A change never has to be cut: every one fits a record.
    assert!(change as usize + CHANGES_HEADER_BYTES <= RECORD_PAYLOAD_BYTES_MAX);
    (RECORD_HEADER_BYTES + CHANGES_HEADER_BYTES) as u64 + change
}

/// The payload's header; the changes follow it.
pub fn header(table: u32, fragment: u32, transaction: u64) -> [u8; CHANGES_HEADER_BYTES] {
    let mut bytes = [0; CHANGES_HEADER_BYTES];
    bytes[0..4].copy_from_slice(&table.to_le_bytes());
    bytes[4..8].copy_from_slice(&fragment.to_le_bytes());
    bytes[8..16].copy_from_slice(&transaction.to_le_bytes());
    bytes
}

/// A `KIND_CHANGES` payload, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changes<'a> {
    pub table: u32,
    pub fragment: u32,
    pub transaction: u64,
    /// Read them with `storage::changes`.
    pub changes: &'a [u8],
}

/// Reads a `KIND_CHANGES` payload.
pub fn read_changes(payload: &[u8]) -> Result<Changes<'_>, String> {
    if payload.len() < CHANGES_HEADER_BYTES {
        return Err(format!(
            "a changes record of {} bytes is shorter than its header",
            payload.len()
        ));
    }
    let word = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().expect("4 bytes"));
    Ok(Changes {
        table: word(0),
        fragment: word(4),
        transaction: u64::from_le_bytes(payload[8..16].try_into().expect("8 bytes")),
        changes: &payload[CHANGES_HEADER_BYTES..],
    })
}

/// Cuts `changes` (whole changes, as `prepared_changes` writes them) into
/// pieces that each fit one record's payload beside the header, calling
/// `piece` with each, in order.
pub fn pieces(changes: &[u8], mut piece: impl FnMut(&[u8])) {
    let room = RECORD_PAYLOAD_BYTES_MAX - CHANGES_HEADER_BYTES;
    let mut start = 0;
    let mut at = 0;
    while at < changes.len() {
        let length = u32::from_le_bytes(changes[at + 1..at + 5].try_into().expect("4 bytes"));
        let end = at + CHANGE_HEADER_BYTES as usize + length as usize;
        assert!(end - at <= room, "one change is over a record's payload");
        if end - start > room {
            piece(&changes[start..at]);
            start = at;
        }
        at = end;
    }
    assert_eq!(at, changes.len(), "changes end on a change's end");
    if start < changes.len() {
        piece(&changes[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(length: usize) -> Vec<u8> {
        let mut bytes = vec![storage::CHANGE_PUT];
        bytes.extend_from_slice(&(length as u32).to_le_bytes());
        bytes.extend(std::iter::repeat_n(7u8, length));
        bytes
    }

    #[test]
    fn pieces_cut_between_changes_and_each_fits_a_record() {
        let mut changes = Vec::new();
        for length in [100_000, 100_000, 60_000, 10, 250_000, 3] {
            changes.extend(change(length));
        }
        let mut seen = Vec::new();
        pieces(&changes, |piece| {
            assert!(piece.len() + CHANGES_HEADER_BYTES <= RECORD_PAYLOAD_BYTES_MAX);
            // Each piece is whole changes.
            assert!(storage::changes(piece).all(|c| c.is_ok()));
            seen.extend_from_slice(piece);
        });
        assert_eq!(seen, changes);
    }

    #[test]
    fn a_header_reads_back() {
        let mut payload = header(7, 3, 1 << 40).to_vec();
        payload.extend(change(4));
        let read = read_changes(&payload).unwrap();
        assert_eq!(
            (read.table, read.fragment, read.transaction),
            (7, 3, 1 << 40)
        );
        assert_eq!(read.changes, &change(4)[..]);
        assert!(read_changes(&payload[..10]).is_err());
    }
}
