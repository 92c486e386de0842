//! The system file: the few facts a data node's restart starts from (NDB's
//! P0.sysfile): the redo log's generation, where its replay begins, and
//! the local checkpoints to load.
//!
//! It is written in place, so a crash mid-write must not lose it: the file
//! has two slots, each write goes to the slot the last one did not use
//! (`slot_of`) and is synced, and a read takes the valid slot with the
//! higher sequence number. A torn write spoils only the slot it went to;
//! the other still holds the previous contents.
//!
//! ## Slot format, little-endian
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `SHOALSYS` |
//! | 8 | 8 | sequence (the write's number, from 1) |
//! | 16 | 4 | length of the body |
//! | 20 | 4 | CRC-32C of bytes 8..20 and the body |
//! | 24 | length | body: format version (2), then the fields of `SystemFile` |

use crate::redo::Lsn;

/// Bytes of one slot; the file holds two.
pub const SLOT_BYTES: usize = 4096;
pub const FILE_BYTES: u64 = 2 * SLOT_BYTES as u64;
const MAGIC: &[u8; 8] = b"SHOALSYS";
const SLOT_HEADER_BYTES: usize = 24;
/// 2: a chain of checkpoints, each with the parts it wrote whole.
const FORMAT_VERSION: u8 = 2;

/// A local checkpoint a restart can load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The checkpoint's number: its files carry it in their names.
    pub id: u64,
    /// The redo log's records from here on are replayed over it: every
    /// change before this reached the checkpoint.
    pub redo_start: Lsn,
    /// Every change in it is of an epoch below this: it may be loaded only
    /// by a restart to this epoch or a later one.
    pub epoch_limit: u64,
    /// The length of its file: a read that ends elsewhere found it damaged.
    pub bytes: u64,
    /// The parts of every fragment it wrote whole, a bit each
    /// (`storage::CHECKPOINT_PARTS`); of the others it holds the changes
    /// since the checkpoint before it began. All ones: a whole checkpoint.
    pub whole_parts: u64,
}

impl CheckpointInfo {
    pub fn is_whole(&self) -> bool {
        self.whole_parts == u64::MAX
    }
}

/// Checkpoints a chain holds at most: a partial checkpoint writes at least
/// one part in eight whole, so every part is written whole within eight.
pub const CHECKPOINT_CHAIN_MAX: usize = 8;

/// For each of the 64 parts, the position in `chain` (oldest first) of the
/// newest checkpoint that wrote it whole; `None` if some part has none
/// (the chain cannot be restored).
pub fn newest_whole(chain: &[CheckpointInfo]) -> Option<[usize; 64]> {
    let mut newest = [usize::MAX; 64];
    for (position, checkpoint) in chain.iter().enumerate() {
        for (part, slot) in newest.iter_mut().enumerate() {
            if checkpoint.whole_parts & (1 << part) != 0 {
                *slot = position;
            }
        }
    }
    newest.iter().all(|&p| p != usize::MAX).then_some(newest)
}

/// For the checkpoint at `position` of `chain`, the parts a restore takes
/// from it: those no later checkpoint wrote whole.
pub fn parts_taken(newest: &[usize; 64], position: usize) -> u64 {
    newest
        .iter()
        .enumerate()
        .filter(|(_, newest)| **newest <= position)
        .fold(0, |parts, (part, _)| parts | 1 << part)
}

/// The checkpoints of a chain, for a log line: "none", "7", or "3 to 10".
pub fn chain_names(chain: &[CheckpointInfo]) -> String {
    match (chain.first(), chain.last()) {
        (Some(first), Some(last)) if first.id != last.id => format!("{} to {}", first.id, last.id),
        (Some(only), _) => only.id.to_string(),
        _ => "none".to_string(),
    }
}

/// `chain` with `next` appended and the oldest checkpoints no restore
/// needs any more dropped; and the ids of those dropped.
pub fn chain_with(
    chain: &[CheckpointInfo],
    next: CheckpointInfo,
) -> (Vec<CheckpointInfo>, Vec<u64>) {
    let mut chain = chain.to_vec();
    chain.push(next);
    let newest = newest_whole(&chain);
    let keep_from = match newest {
        Some(newest) => newest.iter().copied().min().expect("64 parts"),
        // Not restorable yet (a partial checkpoint before any whole one
        // cannot be installed): nothing is dropped.
        None => 0,
    };
    let dropped = chain.drain(..keep_from).map(|c| c.id).collect();
    (chain, dropped)
}

/// Most cuts the file keeps (`SystemFile::cuts`); a local checkpoint
/// drops those its tail passed, so a node holds a few at most.
pub const CUTS_MAX: usize = 64;

/// Records before `end` of epochs at or above `epoch` are dead: a restart
/// to `epoch` left them behind (they were never part of the cluster it
/// restored), and no later restart may replay them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub end: Lsn,
    pub epoch: u64,
}

impl Cut {
    /// Whether a record at `lsn` of `epoch` survives the cut.
    pub fn keeps(&self, lsn: Lsn, epoch: u64) -> bool {
        lsn >= self.end || epoch < self.epoch
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemFile {
    /// The redo log's run; raised, and this file synced, before a run's
    /// first append (see `redo`'s recovery).
    pub generation: u32,
    /// Where a restart's scan of the redo log begins.
    pub redo_tail: Lsn,
    /// The local checkpoints a restart loads, oldest first: each part of
    /// every fragment from the newest that wrote it whole, then the
    /// changes of every later one (`parts_taken`). The newest's
    /// `redo_start` is `redo_tail`. Empty: none.
    pub checkpoints: Vec<CheckpointInfo>,
    /// Earlier restarts' cuts of the redo log, oldest first.
    pub cuts: Vec<Cut>,
}

impl SystemFile {
    /// Slot bytes holding `self` as write number `sequence`.
    pub fn encode(&self, sequence: u64) -> Vec<u8> {
        let mut body = vec![FORMAT_VERSION];
        body.extend_from_slice(&self.generation.to_le_bytes());
        body.extend_from_slice(&self.redo_tail.to_le_bytes());
        assert!(
            self.checkpoints.len() <= CHECKPOINT_CHAIN_MAX,
            "{} checkpoints",
            self.checkpoints.len()
        );
        body.push(self.checkpoints.len() as u8);
        for checkpoint in &self.checkpoints {
            body.extend_from_slice(&checkpoint.id.to_le_bytes());
            body.extend_from_slice(&checkpoint.redo_start.to_le_bytes());
            body.extend_from_slice(&checkpoint.epoch_limit.to_le_bytes());
            body.extend_from_slice(&checkpoint.bytes.to_le_bytes());
            body.extend_from_slice(&checkpoint.whole_parts.to_le_bytes());
        }
        assert!(self.cuts.len() <= CUTS_MAX, "{} cuts", self.cuts.len());
        body.push(self.cuts.len() as u8);
        for cut in &self.cuts {
            body.extend_from_slice(&cut.end.to_le_bytes());
            body.extend_from_slice(&cut.epoch.to_le_bytes());
        }
        let mut slot = Vec::with_capacity(SLOT_BYTES);
        slot.extend_from_slice(MAGIC);
        slot.extend_from_slice(&sequence.to_le_bytes());
        slot.extend_from_slice(&(body.len() as u32).to_le_bytes());
        slot.extend_from_slice(&[0; 4]);
        slot.extend_from_slice(&body);
        let checksum = slot_checksum(&slot);
        slot[20..24].copy_from_slice(&checksum.to_le_bytes());
        assert!(slot.len() <= SLOT_BYTES);
        slot.resize(SLOT_BYTES, 0);
        slot
    }

    /// The contents of the file (`FILE_BYTES`, zeros where never written)
    /// and the sequence of the write that holds them; `Ok(None)` for a file
    /// never written. A file with no valid slot but some bytes is an error:
    /// a restart must not take it for a new node.
    pub fn decode(file: &[u8]) -> Result<Option<(SystemFile, u64)>, String> {
        let mut best: Option<(SystemFile, u64)> = None;
        let mut problems = Vec::new();
        for slot in 0..2 {
            let bytes = file
                .get(slot * SLOT_BYTES..(slot + 1) * SLOT_BYTES)
                .unwrap_or(&[]);
            if bytes.iter().all(|b| *b == 0) {
                continue;
            }
            match decode_slot(bytes) {
                Ok((contents, sequence)) => {
                    if best
                        .as_ref()
                        .is_none_or(|(_, best_sequence)| sequence > *best_sequence)
                    {
                        best = Some((contents, sequence));
                    }
                }
                Err(problem) => problems.push(format!("slot {slot}: {problem}")),
            }
        }
        match best {
            Some(found) => Ok(Some(found)),
            None if problems.is_empty() => Ok(None),
            None => Err(format!(
                "the system file has no valid slot ({})",
                problems.join("; ")
            )),
        }
    }
}

/// The slot write number `sequence` goes to.
pub fn slot_of(sequence: u64) -> u64 {
    sequence % 2
}

fn slot_checksum(slot: &[u8]) -> u32 {
    let length = u32::from_le_bytes(slot[16..20].try_into().expect("4 bytes")) as usize;
    let checksum = crc32c::crc32c(&slot[8..20]);
    crc32c::crc32c_append(
        checksum,
        &slot[SLOT_HEADER_BYTES..SLOT_HEADER_BYTES + length],
    )
}

fn decode_slot(slot: &[u8]) -> Result<(SystemFile, u64), String> {
    if slot.len() < SLOT_HEADER_BYTES || &slot[0..8] != MAGIC {
        return Err("not a system file slot".to_string());
    }
    let sequence = u64::from_le_bytes(slot[8..16].try_into().expect("8 bytes"));
    let length = u32::from_le_bytes(slot[16..20].try_into().expect("4 bytes")) as usize;
    if length == 0 || SLOT_HEADER_BYTES + length > slot.len() {
        return Err(format!("a body of {length} bytes"));
    }
    let stored = u32::from_le_bytes(slot[20..24].try_into().expect("4 bytes"));
    if slot_checksum(slot) != stored {
        return Err("a checksum that fails (a torn write)".to_string());
    }
    let body = &slot[SLOT_HEADER_BYTES..SLOT_HEADER_BYTES + length];
    if body[0] != FORMAT_VERSION {
        return Err(format!(
            "format version {} (this Shoal reads {FORMAT_VERSION})",
            body[0]
        ));
    }
    let mut reader = Reader { bytes: body, at: 1 };
    let generation = reader.u32()?;
    let redo_tail = reader.u64()?;
    let chained = usize::from(reader.u8()?);
    if chained > CHECKPOINT_CHAIN_MAX {
        return Err(format!("a chain of {chained} checkpoints"));
    }
    let mut checkpoints = Vec::with_capacity(chained);
    for _ in 0..chained {
        checkpoints.push(CheckpointInfo {
            id: reader.u64()?,
            redo_start: reader.u64()?,
            epoch_limit: reader.u64()?,
            bytes: reader.u64()?,
            whole_parts: reader.u64()?,
        });
    }
    if !checkpoints.is_empty() && newest_whole(&checkpoints).is_none() {
        return Err("a chain of checkpoints that misses a part".to_string());
    }
    let count = usize::from(reader.u8()?);
    if count > CUTS_MAX {
        return Err(format!("{count} cuts"));
    }
    let mut cuts = Vec::with_capacity(count);
    for _ in 0..count {
        cuts.push(Cut {
            end: reader.u64()?,
            epoch: reader.u64()?,
        });
    }
    Ok((
        SystemFile {
            generation,
            redo_tail,
            checkpoints,
            cuts,
        },
        sequence,
    ))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let piece = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or_else(|| "a body cut short".to_string())?;
        self.at += n;
        Ok(piece)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(writes: &[(SystemFile, u64)]) -> Vec<u8> {
        let mut file = vec![0u8; FILE_BYTES as usize];
        for (contents, sequence) in writes {
            let at = slot_of(*sequence) as usize * SLOT_BYTES;
            file[at..at + SLOT_BYTES].copy_from_slice(&contents.encode(*sequence));
        }
        file
    }

    #[test]
    fn the_newer_slot_wins_and_a_torn_one_leaves_the_older() {
        let first = SystemFile {
            generation: 3,
            redo_tail: 77,
            checkpoints: Vec::new(),
            cuts: Vec::new(),
        };
        let second = SystemFile {
            generation: 4,
            redo_tail: 1 << 40,
            checkpoints: vec![
                CheckpointInfo {
                    id: 9,
                    redo_start: 1 << 38,
                    epoch_limit: 4 << 32,
                    bytes: 123_456,
                    whole_parts: u64::MAX,
                },
                CheckpointInfo {
                    id: 10,
                    redo_start: 1 << 39,
                    epoch_limit: 5 << 32,
                    bytes: 2_345,
                    whole_parts: 0x0101_0101_0101_0101,
                },
            ],
            cuts: vec![
                Cut {
                    end: 1 << 39,
                    epoch: 3 << 32,
                };
                CUTS_MAX
            ],
        };
        assert_eq!(SystemFile::decode(&[0u8; 100]), Ok(None), "never written");
        let mut file = file_with(&[(first.clone(), 1), (second.clone(), 2)]);
        assert_eq!(SystemFile::decode(&file), Ok(Some((second, 2))));
        // Write 2 torn: a byte of its body never reached the disk.
        file[SLOT_BYTES * slot_of(2) as usize + SLOT_HEADER_BYTES + 3] ^= 1;
        assert_eq!(SystemFile::decode(&file), Ok(Some((first, 1))));
        // Both spoiled: an error, not a new node.
        file[SLOT_BYTES * slot_of(1) as usize + 10] ^= 1;
        assert!(SystemFile::decode(&file).is_err());
    }

    /// A chain keeps each part's newest whole checkpoint and every later
    /// one; a restore takes each part from there on.
    #[test]
    fn a_chain_keeps_each_parts_newest_whole_checkpoint() {
        let checkpoint = |id, whole_parts| CheckpointInfo {
            id,
            redo_start: id * 100,
            epoch_limit: id << 32,
            bytes: 10,
            whole_parts,
        };
        let residue = |r: u32| 0x0101_0101_0101_0101u64 << r;
        let (chain, dropped) = chain_with(&[], checkpoint(1, u64::MAX));
        assert_eq!(dropped, Vec::<u64>::new());
        let mut chain = chain;
        for id in 2..=8 {
            let (next, dropped) = chain_with(&chain, checkpoint(id, residue(id as u32 - 2)));
            assert!(dropped.is_empty(), "{id}: the whole one is still needed");
            chain = next;
        }
        // The eighth partial writes the last residue whole: the whole
        // checkpoint is no longer needed.
        let (next, dropped) = chain_with(&chain, checkpoint(9, residue(7)));
        assert_eq!(dropped, vec![1]);
        assert_eq!(next.len(), CHECKPOINT_CHAIN_MAX);
        let newest = newest_whole(&next).expect("every part");
        assert_eq!(parts_taken(&newest, 0), residue(0));
        assert_eq!(parts_taken(&newest, 7), u64::MAX);
        // A whole checkpoint ends the chain.
        let (next, dropped) = chain_with(&next, checkpoint(10, u64::MAX));
        assert_eq!(next.len(), 1);
        assert_eq!(dropped, (2..=9).collect::<Vec<_>>());
        // A chain that misses a part is not read as one.
        let broken = SystemFile {
            checkpoints: vec![checkpoint(3, residue(1))],
            ..SystemFile::default()
        };
        assert!(SystemFile::decode(&broken.encode(1)).is_err());
    }
}
