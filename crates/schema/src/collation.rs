//! Comparing, sorting and matching strings under a collation.
//!
//! CONTRACT (implemented by the value/collation work item):
//! `utf8mb4_0900_ai_ci` folds case and accents for ASCII and Latin letters
//! (Latin-1 Supplement and Latin Extended-A at least: 'é' = 'E', 'ß' = "ss")
//! and is NO PAD; `latin1_swedish_ci` folds case and is PAD SPACE; the `_bin`
//! collations compare code points (utf8mb4) or bytes (latin1); `binary`
//! compares bytes.

use crate::types::Collation;
use std::cmp::Ordering;

/// Compares two strings (storage bytes) under the collation.
pub fn compare(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
    let _ = (collation, a, b);
    todo!("collation compare")
}

/// Appends the collation's sort key of `text` to `out`: equal under the
/// collation exactly when the sort keys are equal, ordered as the collation
/// orders, and self-delimiting (a string sorts before its extensions, and the
/// bytes that follow in a composite key do not change the order).
pub fn sort_key(collation: Collation, text: &[u8], out: &mut Vec<u8>) {
    let _ = (collation, text, out);
    todo!("collation sort key")
}

/// SQL LIKE with `%` and `_` and an escape byte, under the collation.
pub fn like(collation: Collation, text: &[u8], pattern: &[u8], escape: u8) -> bool {
    let _ = (collation, text, pattern, escape);
    todo!("collation like")
}
