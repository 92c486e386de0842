//! The system file: the few facts a data node's restart starts from (NDB's
//! P0.sysfile): the redo log's generation, where its replay begins, and
//! the local checkpoint to load.
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
//! | 24 | length | body: format version (1), then the fields of `SystemFile` |

use crate::redo::Lsn;

/// Bytes of one slot; the file holds two.
pub const SLOT_BYTES: usize = 4096;
pub const FILE_BYTES: u64 = 2 * SLOT_BYTES as u64;
const MAGIC: &[u8; 8] = b"SHOALSYS";
const SLOT_HEADER_BYTES: usize = 24;
const FORMAT_VERSION: u8 = 1;

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
    /// The local checkpoint a restart loads, if there is one.
    pub checkpoint: Option<CheckpointInfo>,
    /// Earlier restarts' cuts of the redo log, oldest first.
    pub cuts: Vec<Cut>,
}

impl SystemFile {
    /// Slot bytes holding `self` as write number `sequence`.
    pub fn encode(&self, sequence: u64) -> Vec<u8> {
        let mut body = vec![FORMAT_VERSION];
        body.extend_from_slice(&self.generation.to_le_bytes());
        body.extend_from_slice(&self.redo_tail.to_le_bytes());
        match self.checkpoint {
            None => body.push(0),
            Some(checkpoint) => {
                body.push(1);
                body.extend_from_slice(&checkpoint.id.to_le_bytes());
                body.extend_from_slice(&checkpoint.redo_start.to_le_bytes());
                body.extend_from_slice(&checkpoint.epoch_limit.to_le_bytes());
                body.extend_from_slice(&checkpoint.bytes.to_le_bytes());
            }
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
    let checkpoint = match reader.u8()? {
        0 => None,
        1 => Some(CheckpointInfo {
            id: reader.u64()?,
            redo_start: reader.u64()?,
            epoch_limit: reader.u64()?,
            bytes: reader.u64()?,
        }),
        other => return Err(format!("a checkpoint marker {other}")),
    };
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
            checkpoint,
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
            checkpoint: None,
            cuts: Vec::new(),
        };
        let second = SystemFile {
            generation: 4,
            redo_tail: 1 << 40,
            checkpoint: Some(CheckpointInfo {
                id: 9,
                redo_start: 1 << 39,
                epoch_limit: 5 << 32,
                bytes: 123_456,
            }),
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
}
