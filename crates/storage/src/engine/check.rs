//! A consistency check of everything the engine owns, for tests and
//! simulators: every slot, index entry, variable part and record is
//! accounted for, so a leak or a dangling reference fails loudly.

use super::Engine;
use super::locks::{NO_RECORD, Pending};
use super::table::{self, COMMITTED, COPY, IN_USE};
use crate::memory::ChunkRef;

impl Engine {
    /// Panics if any structure disagrees with another.
    pub fn check_invariants(&self) {
        let mut records_seen = 0u32;
        for (table_id, table) in self.tables.iter().enumerate() {
            let Some(table) = table else { continue };
            let mut rows = 0u64;
            let mut committed = 0u64;
            let mut slots = 0u64;
            let mut index_entries = vec![0u64; table.ordered.len()];
            for (position, &page) in table.rows.pages().iter().enumerate() {
                for index in 0..table.rows.chunks_cut(position) {
                    let slot = ChunkRef::new(page, index);
                    let (head, flags) = table::header(&table.rows, &self.pool, slot);
                    if flags & IN_USE == 0 {
                        continue;
                    }
                    slots += 1;
                    if flags & COPY != 0 {
                        let owner = &self.records[head as usize];
                        assert!(owner.in_use(), "copy owned by a free record");
                        assert_eq!(owner.image, slot, "copy not its owner's image");
                        assert_eq!(owner.table as usize, table_id);
                        for (i, count) in index_entries.iter_mut().enumerate() {
                            *count += (owner.changed >> i) & 1;
                        }
                        continue;
                    }
                    rows += 1;
                    let mut inserted = false;
                    let mut at = head;
                    while at != NO_RECORD {
                        let record = &self.records[at as usize];
                        assert!(record.in_use(), "row lists a free record");
                        assert_eq!(record.row, slot, "record on the wrong row");
                        assert_eq!(record.table as usize, table_id);
                        inserted |= record.inserted;
                        records_seen += 1;
                        at = record.next_in_row;
                    }
                    if flags & COMMITTED != 0 {
                        committed += 1;
                    } else {
                        assert!(
                            head != NO_RECORD,
                            "uncommitted row that no record refers to"
                        );
                    }
                    if flags & COMMITTED != 0 || inserted {
                        for count in index_entries.iter_mut() {
                            *count += 1;
                        }
                    }
                }
            }
            assert_eq!(
                slots,
                table.rows.chunks_used(),
                "row slab count disagrees with its slots"
            );
            assert_eq!(
                rows,
                table.hash.entries(),
                "hash index entries disagree with rows"
            );
            assert_eq!(committed, table.rows_committed, "committed row count");
            for (i, index) in table.ordered.iter().enumerate() {
                assert_eq!(
                    index.entries(),
                    index_entries[i],
                    "ordered index {i} entry count"
                );
                let keys = table::RowKeys {
                    def: &table.def,
                    rows: &table.rows,
                    parts: &table.parts,
                    columns: &table.def.ordered_indexes[i].columns,
                };
                index.check_invariants(&self.pool, &keys);
            }
            let parked = self
                .records
                .iter()
                .filter(|r| {
                    r.in_use()
                        && r.table as usize == table_id
                        && matches!(r.pending, Pending::Operation { .. })
                })
                .count() as u64;
            let var_expected = if table.def.layout.var_columns > 0 {
                slots
            } else {
                0
            } + parked;
            assert_eq!(
                table.parts.chunks_used(),
                var_expected,
                "variable parts leaked or lost"
            );
        }
        assert_eq!(records_seen, self.records_used, "records not on any row");
        let mut free = 0u32;
        let mut at = self.records_free;
        while at != NO_RECORD {
            assert!(!self.records[at as usize].in_use());
            free += 1;
            at = self.records[at as usize].next_in_transaction;
        }
        assert_eq!(
            free + self.records_used,
            self.records.len() as u32,
            "record pool leaked"
        );
    }
}
