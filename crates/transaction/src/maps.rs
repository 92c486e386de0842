//! Hash maps with a fixed, fast hasher: iteration order is the same in every
//! run (the simulator replays runs byte for byte), and keys here are small
//! integers and tuples of them, for which SipHash would be wasted work.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate mixing of integer keys (the Fx hash of the Rust compiler).
#[derive(Default, Clone, Copy)]
pub struct IntegerHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl IntegerHasher {
    #[inline]
    fn add(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(SEED);
    }
}

impl Hasher for IntegerHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // Fold the high bits down: hashbrown takes its bucket from the low
        // bits and its tag from the top seven.
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }
}

pub type Map<K, V> = HashMap<K, V, BuildHasherDefault<IntegerHasher>>;
