//! The simulator's disk: files whose writes become durable only when their
//! file is synced. At a crash each write made since the last sync of its
//! file is kept, lost, or torn (some of its sectors kept, others not), as
//! a disk with a volatile cache may do; every sector is either its old or
//! its new content (sectors are written whole).

use std::collections::BTreeMap;

use crate::redo::{DiskRequest, ReadAt};

/// The unit a disk writes whole.
pub const SECTOR_BYTES: u64 = 512;

/// What a crash does to one unsynced write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFate {
    Kept,
    Lost,
    /// Each sector kept or lost by the chooser.
    Torn,
}

#[derive(Debug, Default, Clone)]
struct FileState {
    /// What survives a crash.
    durable: Vec<u8>,
    /// What a read sees: `durable` with `pending` applied.
    current: Vec<u8>,
    /// Writes since the last sync, in order.
    pending: Vec<(u64, Vec<u8>)>,
}

/// Files by name (`K`), each a byte array.
#[derive(Debug, Clone)]
pub struct DiskModel<K: Ord + Clone> {
    files: BTreeMap<K, FileState>,
}

impl<K: Ord + Clone> Default for DiskModel<K> {
    fn default() -> Self {
        DiskModel {
            files: BTreeMap::new(),
        }
    }
}

fn put(into: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if into.len() < end {
        into.resize(end, 0);
    }
    into[offset as usize..end].copy_from_slice(bytes);
}

impl<K: Ord + Clone> DiskModel<K> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn write(&mut self, file: &K, offset: u64, bytes: &[u8]) {
        let state = self.files.entry(file.clone()).or_default();
        put(&mut state.current, offset, bytes);
        state.pending.push((offset, bytes.to_vec()));
    }

    pub fn sync(&mut self, file: &K) {
        if let Some(state) = self.files.get_mut(file) {
            state.durable.clone_from(&state.current);
            state.pending.clear();
        }
    }

    /// Reads what is there now; bytes never written read as zero.
    pub fn read(&self, file: &K, offset: u64, into: &mut [u8]) {
        into.fill(0);
        let Some(state) = self.files.get(file) else {
            return;
        };
        let start = (offset as usize).min(state.current.len());
        let end = (offset as usize + into.len()).min(state.current.len());
        into[..end - start].copy_from_slice(&state.current[start..end]);
    }

    /// Bytes written to `file` and not yet synced.
    pub fn unsynced_bytes(&self, file: &K) -> u64 {
        self.files.get(file).map_or(0, |state| {
            state.pending.iter().map(|(_, b)| b.len() as u64).sum()
        })
    }

    /// Deletes `file` (at once and for good: the simulator's deletes are of
    /// files nothing reads again).
    pub fn remove(&mut self, file: &K) {
        self.files.remove(file);
    }

    /// Deletes every file (an `--initial` start).
    pub fn wipe(&mut self) {
        self.files.clear();
    }

    /// The power fails: each unsynced write is kept, lost or torn, and a
    /// torn write keeps each of its sectors or not, as `choose` says
    /// (`choose(n)` is a number below `n`: the simulator's seeded random
    /// numbers). Afterwards every file holds only what survived.
    pub fn crash(&mut self, mut choose: impl FnMut(u64) -> u64) {
        self.crash_with(
            |choose| match choose(3) {
                0 => WriteFate::Kept,
                1 => WriteFate::Lost,
                _ => WriteFate::Torn,
            },
            |choose| choose(2) == 0,
            &mut choose,
        );
    }

    /// `crash` with the fates and the kept sectors picked by the callers.
    pub fn crash_with<C: ?Sized>(
        &mut self,
        mut fate: impl FnMut(&mut C) -> WriteFate,
        mut keep_sector: impl FnMut(&mut C) -> bool,
        chooser: &mut C,
    ) {
        for state in self.files.values_mut() {
            for (offset, bytes) in std::mem::take(&mut state.pending) {
                match fate(chooser) {
                    WriteFate::Kept => put(&mut state.durable, offset, &bytes),
                    WriteFate::Lost => {}
                    WriteFate::Torn => {
                        // Sectors are aligned to the file, not the write.
                        let end = offset + bytes.len() as u64;
                        let mut at = offset;
                        while at < end {
                            let sector_end = ((at / SECTOR_BYTES) + 1) * SECTOR_BYTES;
                            let piece_end = sector_end.min(end);
                            if keep_sector(chooser) {
                                put(
                                    &mut state.durable,
                                    at,
                                    &bytes[(at - offset) as usize..(piece_end - offset) as usize],
                                );
                            }
                            at = piece_end;
                        }
                    }
                }
            }
            state.current.clone_from(&state.durable);
        }
    }
}

/// The model as a data node's redo files, named by their numbers.
impl DiskModel<u32> {
    /// Does `request` at once (the simulator decides when it completes).
    pub fn perform(&mut self, request: &DiskRequest) {
        match request {
            DiskRequest::Write {
                file,
                offset,
                bytes,
                ..
            } => self.write(file, *offset, bytes),
            DiskRequest::Sync { file, .. } => self.sync(file),
        }
    }
}

impl ReadAt for DiskModel<u32> {
    fn read_at(&mut self, file: u32, offset: u64, into: &mut [u8]) -> Result<(), String> {
        self.read(&file, offset, into);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_keeps_synced_bytes_and_decides_each_unsynced_write() {
        let mut disk = DiskModel::<u32>::new();
        disk.write(&1, 0, b"synced");
        disk.sync(&1);
        disk.write(&1, 6, b"kept");
        disk.write(&1, 10, b"lost");
        let mut buffer = [0u8; 14];
        disk.read(&1, 0, &mut buffer);
        assert_eq!(&buffer, b"syncedkeptlost");
        let mut fates = [WriteFate::Kept, WriteFate::Lost].into_iter();
        disk.crash_with(
            |fates| fates.next().expect("two writes"),
            |_| true,
            &mut fates,
        );
        disk.read(&1, 0, &mut buffer);
        assert_eq!(&buffer, b"syncedkept\0\0\0\0");
        assert_eq!(disk.unsynced_bytes(&1), 0);
    }

    #[test]
    fn a_torn_write_keeps_whole_sectors_only() {
        let mut disk = DiskModel::<u32>::new();
        let old = vec![1u8; 2048];
        disk.write(&7, 0, &old);
        disk.sync(&7);
        // From the middle of sector 0 to the middle of sector 3.
        disk.write(&7, 256, &[2u8; 1536]);
        let mut kept = [true, false, true, false].into_iter();
        disk.crash_with(
            |_| WriteFate::Torn,
            |kept| kept.next().expect("four sectors touched"),
            &mut kept,
        );
        let mut buffer = vec![0u8; 2048];
        disk.read(&7, 0, &mut buffer);
        assert!(buffer[..256].iter().all(|b| *b == 1));
        assert!(buffer[256..512].iter().all(|b| *b == 2), "sector 0 kept");
        assert!(buffer[512..1024].iter().all(|b| *b == 1), "sector 1 lost");
        assert!(buffer[1024..1536].iter().all(|b| *b == 2), "sector 2 kept");
        assert!(buffer[1536..].iter().all(|b| *b == 1), "sector 3 lost");
    }
}
