//! Entry words: one entry `(key, row)` packed into a 128-bit integer so that
//! nearly every comparison the tree makes is one integer comparison, and the
//! probes that compare stored words with what a caller searches for.
//!
//! A word, from its most significant bit down:
//!
//! | bits     | content                                                   |
//! |----------|-----------------------------------------------------------|
//! | 127..40  | the key's first [`PREFIX_BYTES`] bytes, zero-padded       |
//! | 39..32   | length class: the key's length, or [`LENGTH_LONG`] if longer than the prefix |
//! | 31..0    | `row.raw()`                                               |
//!
//! Comparing two words as integers orders their entries exactly as
//! `(key, row)` does, except when both keys are longer than the prefix and
//! share it: then the full keys decide, read through `KeySource`. Why the
//! integer order is right otherwise: if the prefixes differ, the first
//! differing byte is a real byte of both keys or padding of the shorter one,
//! and padding (zero) never exceeds a real byte, so it orders the keys as
//! bytewise comparison does. If the prefixes are equal and either key fits in
//! the prefix, that key is a prefix of the other, so the shorter key sorts
//! first, which is what the length class says; equal keys leave the row to
//! decide.

use super::KeySource;
use crate::memory::{ChunkRef, PagePool};
use std::cell::RefCell;
use std::cmp::Ordering;

/// Key bytes kept in a word: enough for a BIGINT or DATETIME key (eight
/// bytes, nine if nullable) or two INTs (eight, ten if nullable) to compare
/// without a full-key read, while the whole word stays 16 bytes.
pub(super) const PREFIX_BYTES: usize = 11;
/// The length class of a key longer than [`PREFIX_BYTES`].
pub(super) const LENGTH_LONG: u32 = PREFIX_BYTES as u32 + 1;
const LENGTH_SHIFT: u32 = 32;
const LENGTH_MASK: u128 = 0xFF << LENGTH_SHIFT;

/// The word of the entry `(key, row)`.
#[inline]
pub(super) fn entry_word(key: &[u8], row: ChunkRef) -> u128 {
    prefix_bits(key) | (u128::from(length_class(key.len())) << LENGTH_SHIFT) | u128::from(row.raw())
}

/// The row a word points at.
#[inline]
pub(super) fn row_of(word: u128) -> ChunkRef {
    ChunkRef::from_raw(word as u32)
}

/// `word` pointing at `row` instead.
#[inline]
pub(super) fn with_row(word: u128, row: ChunkRef) -> u128 {
    (word & !u128::from(u32::MAX)) | u128::from(row.raw())
}

#[inline]
fn length_class(length: usize) -> u32 {
    length.min(LENGTH_LONG as usize) as u32
}

#[inline]
fn prefix_bits(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let kept = key.len().min(PREFIX_BYTES);
    bytes[..kept].copy_from_slice(&key[..kept]);
    u128::from_be_bytes(bytes)
}

/// Reads full keys from rows for the comparisons a word cannot decide,
/// into a buffer reused from call to call.
pub(super) struct FullKeys<'a, K: KeySource> {
    pub keys: &'a K,
    pub scratch: Scratch<'a>,
}

/// The buffer full keys are read into.
pub(super) enum Scratch<'a> {
    /// Held for the whole operation (the index is borrowed mutably).
    Owned(&'a mut Vec<u8>),
    /// The index's buffer, shared by readers: borrowed only while a key is
    /// compared.
    Shared(&'a RefCell<Vec<u8>>),
}

impl<K: KeySource> FullKeys<'_, K> {
    /// Reads the key of `row` and hands it to `compare`.
    fn with_key<R>(
        &mut self,
        pool: &PagePool,
        row: ChunkRef,
        compare: impl FnOnce(&[u8]) -> R,
    ) -> R {
        let keys = self.keys;
        let read = move |buffer: &mut Vec<u8>| {
            buffer.clear();
            keys.key(pool, row, buffer);
            compare(buffer)
        };
        match &mut self.scratch {
            Scratch::Owned(buffer) => read(buffer),
            Scratch::Shared(shared) => read(&mut shared.borrow_mut()),
        }
    }
}

/// What stored words are compared with: a whole entry `(key, row)`, or a key
/// prefix that compares only the first `key.len()` bytes of each entry's key.
///
/// `before` splits the entries in two runs, those before the probe and those
/// not; the tree's searches find where the first run ends.
#[derive(Clone, Copy)]
pub(super) struct Probe<'k> {
    key: &'k [u8],
    /// What a stored word becomes comparable with, once masked and clamped.
    word: u128,
    /// The bits of a stored word the probe looks at: all but the length class
    /// for an entry probe; the first `key.len()` key bytes for a prefix probe.
    mask: u128,
    /// A stored length class above this compares as this: a prefix probe
    /// sees an entry's key cut to the probe's length.
    length_clamp: u32,
    /// The probe's key is longer than the prefix, so words with the same
    /// prefix and a long key need the full key.
    long: bool,
    prefix: bool,
    /// Whether entries equal to the probe count as before it.
    include_equal: bool,
}

impl<'k> Probe<'k> {
    /// Compares whole entries with `(key, row)`.
    pub fn entry(key: &'k [u8], row: ChunkRef, include_equal: bool) -> Probe<'k> {
        Probe {
            key,
            word: entry_word(key, row),
            mask: !LENGTH_MASK,
            length_clamp: LENGTH_LONG,
            long: key.len() > PREFIX_BYTES,
            prefix: false,
            include_equal,
        }
    }

    /// Compares each entry's key, cut to `key.len()` bytes, with `key`.
    pub fn prefix(key: &'k [u8], include_equal: bool) -> Probe<'k> {
        let covered = key.len().min(PREFIX_BYTES);
        let mask = if covered == 0 {
            0
        } else {
            u128::MAX << (128 - 8 * covered as u32)
        };
        let length_clamp = length_class(key.len());
        Probe {
            key,
            word: prefix_bits(key) | (u128::from(length_clamp) << LENGTH_SHIFT),
            mask,
            length_clamp,
            long: key.len() > PREFIX_BYTES,
            prefix: true,
            include_equal,
        }
    }

    /// How the stored entry `stored` compares with the probe.
    #[inline]
    pub fn compare<K: KeySource>(
        &self,
        stored: u128,
        pool: &PagePool,
        full: &mut FullKeys<'_, K>,
    ) -> Ordering {
        let length = ((stored >> LENGTH_SHIFT) as u32 & 0xFF).min(self.length_clamp);
        let comparable = (stored & self.mask) | (u128::from(length) << LENGTH_SHIFT);
        if !self.long || (comparable ^ self.word) >> LENGTH_SHIFT != 0 {
            return comparable.cmp(&self.word);
        }
        self.compare_full_keys(stored, pool, full)
    }

    /// Whether the stored entry is in the run before the probe.
    #[inline]
    pub fn before<K: KeySource>(
        &self,
        stored: u128,
        pool: &PagePool,
        full: &mut FullKeys<'_, K>,
    ) -> bool {
        match self.compare(stored, pool, full) {
            Ordering::Less => true,
            Ordering::Equal => self.include_equal,
            Ordering::Greater => false,
        }
    }

    /// Both keys are longer than the prefix and share it: read the entry's.
    #[cold]
    #[inline(never)]
    fn compare_full_keys<K: KeySource>(
        &self,
        stored: u128,
        pool: &PagePool,
        full: &mut FullKeys<'_, K>,
    ) -> Ordering {
        let stored_row = row_of(stored);
        let (probe_key, prefix, probe_row) = (self.key, self.prefix, self.word as u32);
        full.with_key(pool, stored_row, |stored_key| {
            debug_assert!(
                stored_key.len() > PREFIX_BYTES
                    && prefix_bits(stored_key) == prefix_bits(probe_key),
                "row {stored_row:?} has a key that disagrees with its index entry"
            );
            if prefix {
                let compared = stored_key.len().min(probe_key.len());
                let shorter = if stored_key.len() < probe_key.len() {
                    Ordering::Less
                } else {
                    Ordering::Equal
                };
                stored_key[..compared]
                    .cmp(&probe_key[..compared])
                    .then(shorter)
            } else {
                stored_key
                    .cmp(probe_key)
                    .then(stored_row.raw().cmp(&probe_row))
            }
        })
    }
}
