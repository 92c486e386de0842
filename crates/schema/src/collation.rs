//! Comparing, sorting and matching strings under a collation.
//!
//! CONTRACT (implemented by the value/collation work item):
//! `utf8mb4_0900_ai_ci` folds case and accents for ASCII and Latin letters
//! (Latin-1 Supplement and Latin Extended-A at least: 'é' = 'E', 'ß' = "ss")
//! and is NO PAD; `latin1_swedish_ci` folds case and is PAD SPACE; the `_bin`
//! collations compare code points (utf8mb4) or bytes (latin1); `binary`
//! compares bytes.
//!
//! ## How each collation weighs characters
//! - `binary` and `utf8mb4_bin`: bytes, which for valid UTF-8 is code point order.
//! - `latin1_bin`: bytes, PAD SPACE.
//! - `latin1_swedish_ci`: MySQL's own one-byte weight table for it
//!   (`sort_order_latin1`): case folded, most accents dropped, Ä = Æ, Å and Ö
//!   after Z (and equal to `[`, `\`, `]`, as in MySQL), Ü = Y; PAD SPACE.
//! - `utf8mb4_0900_ai_ci`: a primary-level subset of the Unicode Collation
//!   Algorithm's default table. ASCII punctuation, then digits, then letters,
//!   in UCA order; letters of Latin-1 Supplement and Latin Extended-A weigh as
//!   their base letters ('é' = 'e', 'ł' = 'l', 'ß' = "ss", 'æ' = "ae",
//!   'œ' = "oe", 'ĳ' = "ij"), with 'ı', 'ŋ', 'ĸ' and 'þ' as letters of their
//!   own after 'i', 'n', 'q' and 'z'; NO-BREAK SPACE weighs as a space;
//!   combining diacritical marks (U+0300..=U+036F) are ignored, so a letter
//!   followed by a combining accent equals the letter. Every other character
//!   weighs by its (simple lowercase) code point, after the letters. Unlike
//!   UCA, control characters are not ignorable: they sort first, so that a
//!   unique key never takes "a\u{1}" for "a". Bytes that are not UTF-8 weigh
//!   after every character, each as itself.
//!
//! ## Sort keys (format version 1)
//! - `binary`: the bytes with each 0x00 written 0x00 0xFF, then 0x00 0x00.
//! - `utf8mb4_bin` is PAD SPACE, as in MySQL 8.0 ('a' = 'a '): its key is
//!   latin1_bin's below, over the UTF-8 bytes (byte order is code-point
//!   order).
//! - `utf8mb4_0900_ai_ci`: each weight as one byte (0x01..=0xBF: ASCII and
//!   Latin letters) or three bytes big-endian (0xE0_0000 + code point, for
//!   every other character), then 0x00.
//! - latin1 (PAD SPACE): the weight bytes, with trailing spaces dropped and
//!   each run of inner spaces written so that the key orders as padding with
//!   spaces would (see `sort_key_pad_space`), then 0x20 0x02.
//!
//! Nothing here allocates: `compare` and `like` work on the borrowed bytes,
//! `sort_key` appends to the caller's buffer.

use crate::types::Collation;
use std::cmp::Ordering;

/// Compares two strings (storage bytes) under the collation.
pub fn compare(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
    match collation {
        Collation::Binary => a.cmp(b),
        Collation::Latin1Bin | Collation::Utf8mb4Bin => compare_pad_space(&IDENTITY_WEIGHTS, a, b),
        Collation::Latin1Ci => compare_pad_space(&LATIN1_SWEDISH_WEIGHTS, a, b),
        Collation::Utf8mb4AiCi => compare_accent_insensitive(a, b),
    }
}

/// Appends the collation's sort key of `text` to `out`: equal under the
/// collation exactly when the sort keys are equal, ordered as the collation
/// orders, and self-delimiting (a string sorts before its extensions, and the
/// bytes that follow in a composite key do not change the order).
pub fn sort_key(collation: Collation, text: &[u8], out: &mut Vec<u8>) {
    match collation {
        Collation::Binary => sort_key_bytes(text, out),
        Collation::Latin1Bin | Collation::Utf8mb4Bin => {
            sort_key_pad_space(&IDENTITY_WEIGHTS, text, out)
        }
        Collation::Latin1Ci => sort_key_pad_space(&LATIN1_SWEDISH_WEIGHTS, text, out),
        Collation::Utf8mb4AiCi => sort_key_accent_insensitive(text, out),
    }
}

/// SQL LIKE with `%` and `_` and an escape byte, under the collation.
///
/// `_` is one character (one byte in latin1 and binary, one UTF-8 sequence
/// in utf8mb4); other characters match when the collation finds them equal,
/// one character against one (so 'ß' does not match "ss", as in MySQL). An
/// escape byte makes the character after it literal, even when the escape
/// is `%` or `_`; an escape at the end of the pattern is itself literal.
/// Trailing spaces count under PAD SPACE collations too: LIKE does not pad.
/// Under utf8mb4 only an ASCII escape byte escapes: any other byte is part
/// of a multi-byte character, which one byte cannot stand for.
pub fn like(collation: Collation, text: &[u8], pattern: &[u8], escape: u8) -> bool {
    let utf8 = matches!(collation, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi);
    let escape = (!utf8 || escape.is_ascii()).then_some(escape);
    match collation {
        Collation::Binary | Collation::Latin1Bin => like_with(
            text,
            pattern,
            escape,
            |_| 1,
            |left, right| left[0] == right[0],
        ),
        Collation::Latin1Ci => like_with(
            text,
            pattern,
            escape,
            |_| 1,
            |left, right| {
                LATIN1_SWEDISH_WEIGHTS[usize::from(left[0])]
                    == LATIN1_SWEDISH_WEIGHTS[usize::from(right[0])]
            },
        ),
        Collation::Utf8mb4Bin => like_with(text, pattern, escape, utf8_sequence_length, same_bytes),
        Collation::Utf8mb4AiCi => like_with(
            text,
            pattern,
            escape,
            utf8_sequence_length,
            same_character_accent_insensitive,
        ),
    }
}

// ---------------------------------------------------------------------------
// binary and utf8mb4_bin

/// Escapes 0x00 as 0x00 0xFF and ends with 0x00 0x00, so a string sorts
/// before its extensions ("a" < "a\0" < "a\x01") whatever follows the key.
fn sort_key_bytes(text: &[u8], out: &mut Vec<u8>) {
    out.reserve(text.len() + 2);
    let mut rest = text;
    while let Some(zero) = rest.iter().position(|&byte| byte == 0) {
        out.extend_from_slice(&rest[..zero]);
        out.extend_from_slice(&[0x00, 0xFF]);
        rest = &rest[zero + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0x00, 0x00]);
}

// ---------------------------------------------------------------------------
// latin1: one-byte weights, PAD SPACE

/// The weight of a space in both latin1 tables; no other byte has it.
const SPACE_WEIGHT: u8 = 0x20;

/// In a PAD SPACE sort key, after `SPACE_WEIGHT`: inner spaces followed by a
/// character that weighs less than a space.
const MARK_SPACES_THEN_LOWER: u8 = 0x01;
/// In a PAD SPACE sort key, after `SPACE_WEIGHT`: the end of the string.
const MARK_END: u8 = 0x02;
/// In a PAD SPACE sort key, after `SPACE_WEIGHT`: two or more inner spaces
/// followed by a character that weighs more than a space. (One space
/// followed by such a character is written as the space weight and that
/// character's weight, which is above all three marks.)
const MARK_SPACES_THEN_HIGHER: u8 = 0x03;

const IDENTITY_WEIGHTS: [u8; 256] = {
    let mut weights = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        weights[byte] = byte as u8;
        byte += 1;
    }
    weights
};

/// MySQL's `sort_order_latin1`, the weights of `latin1_swedish_ci`.
#[rustfmt::skip]
const LATIN1_SWEDISH_WEIGHTS: [u8; 256] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F,
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
    0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F,
    0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F,
    0x60, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F,
    0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x7B, 0x7C, 0x7D, 0x7E, 0x7F,
    0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x8F,
    0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F,
    0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,
    0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF,
    0x41, 0x41, 0x41, 0x41, 0x5C, 0x5B, 0x5C, 0x43, 0x45, 0x45, 0x45, 0x45, 0x49, 0x49, 0x49, 0x49,
    0x44, 0x4E, 0x4F, 0x4F, 0x4F, 0x4F, 0x5D, 0xD7, 0xD8, 0x55, 0x55, 0x55, 0x59, 0x59, 0xDE, 0xDF,
    0x41, 0x41, 0x41, 0x41, 0x5C, 0x5B, 0x5C, 0x43, 0x45, 0x45, 0x45, 0x45, 0x49, 0x49, 0x49, 0x49,
    0x44, 0x4E, 0x4F, 0x4F, 0x4F, 0x4F, 0x5D, 0xF7, 0xD8, 0x55, 0x55, 0x55, 0x59, 0x59, 0xDE, 0xFF,
];

/// PAD SPACE comparison (MySQL's `strnncollsp`): the shorter string compares
/// as if padded with spaces to the longer one's length.
fn compare_pad_space(weights: &[u8; 256], a: &[u8], b: &[u8]) -> Ordering {
    let common = a.len().min(b.len());
    for (&left, &right) in a[..common].iter().zip(&b[..common]) {
        if left != right {
            let (left, right) = (weights[usize::from(left)], weights[usize::from(right)]);
            if left != right {
                return left.cmp(&right);
            }
        }
    }
    // The longer string's rest against the shorter one's padding.
    let (rest, longer_is_higher) = if a.len() > common {
        (&a[common..], Ordering::Greater)
    } else {
        (&b[common..], Ordering::Less)
    };
    for &byte in rest {
        let weight = weights[usize::from(byte)];
        if weight != SPACE_WEIGHT {
            return if weight > SPACE_WEIGHT {
                longer_is_higher
            } else {
                longer_is_higher.reverse()
            };
        }
    }
    Ordering::Equal
}

/// A PAD SPACE sort key. Padding makes the end of a string behave like an
/// endless run of spaces, so where one string ends (or has a run of spaces)
/// and the other has a character, what decides is whether that character
/// weighs more or less than a space. Trailing spaces are dropped; each run
/// of inner spaces is written as `SPACE_WEIGHT`, a mark saying whether the
/// character after it weighs less or more than a space, and the run's length
/// (more spaces sort higher before a lower character and lower before a
/// higher one); the end is `SPACE_WEIGHT, MARK_END`, between the two. Plain
/// weights below a space sort below all of these, weights above above them.
fn sort_key_pad_space(weights: &[u8; 256], text: &[u8], out: &mut Vec<u8>) {
    let mut end = text.len();
    while end > 0 && weights[usize::from(text[end - 1])] == SPACE_WEIGHT {
        end -= 1;
    }
    let text = &text[..end];
    out.reserve(text.len() + 2);
    let mut position = 0;
    while position < text.len() {
        let weight = weights[usize::from(text[position])];
        position += 1;
        if weight != SPACE_WEIGHT {
            out.push(weight);
            continue;
        }
        // Trailing spaces are gone, so the run ends before the text does.
        let run_start = position - 1;
        while weights[usize::from(text[position])] == SPACE_WEIGHT {
            position += 1;
        }
        let run = (position - run_start) as u64;
        out.push(SPACE_WEIGHT);
        if weights[usize::from(text[position])] < SPACE_WEIGHT {
            out.push(MARK_SPACES_THEN_LOWER);
            push_increasing_length(run, out);
        } else if run > 1 {
            out.push(MARK_SPACES_THEN_HIGHER);
            push_decreasing_length(run, out);
        }
    }
    out.extend_from_slice(&[SPACE_WEIGHT, MARK_END]);
}

/// A length whose bytes sort as the lengths do: one byte up to 254, else
/// 0xFF and eight bytes big-endian.
fn push_increasing_length(length: u64, out: &mut Vec<u8>) {
    if length < 0xFF {
        out.push(length as u8);
    } else {
        out.push(0xFF);
        out.extend_from_slice(&length.to_be_bytes());
    }
}

/// A length (at least 1) whose bytes sort opposite to the lengths.
fn push_decreasing_length(length: u64, out: &mut Vec<u8>) {
    if length < 0xFF {
        out.push(0xFF - length as u8);
    } else {
        out.push(0x00);
        out.extend_from_slice(&(u64::MAX - length).to_be_bytes());
    }
}

// ---------------------------------------------------------------------------
// utf8mb4_0900_ai_ci

/// ASCII characters other than letters in the order of UCA's default table:
/// control characters (first here; UCA ignores them), white space, then
/// punctuation and symbols, then digits. A character's weight is its
/// position here plus one.
const ASCII_ORDER: &[u8] = b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0E\x0F\x10\x11\x12\x13\x14\
    \x15\x16\x17\x18\x19\x1A\x1B\x1C\x1D\x1E\x1F\x7F\t\n\x0B\x0C\r \
    _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789";

/// The weight of 'a'; each letter is two above the one before, leaving room
/// for the letters UCA puts between them.
const LETTER_A_WEIGHT: u8 = 0x50;
const _: () = assert!(ASCII_ORDER.len() < LETTER_A_WEIGHT as usize);

const fn letter_weight(letter: u8) -> u8 {
    LETTER_A_WEIGHT + 2 * (letter - b'a')
}

const DOTLESS_I_WEIGHT: u8 = letter_weight(b'i') + 1;
const ENG_WEIGHT: u8 = letter_weight(b'n') + 1;
const KRA_WEIGHT: u8 = letter_weight(b'q') + 1;
const THORN_WEIGHT: u8 = letter_weight(b'z') + 1;

/// Weights at or above this are written in three bytes (see the module docs).
const MULTIBYTE_WEIGHT_BASE: u32 = 0xE0_0000;
/// Where bytes that are not UTF-8 go, above every code point.
const INVALID_BYTE_CODE: u32 = 0x11_0000;

const ASCII_WEIGHTS: [u8; 128] = {
    let mut weights = [0u8; 128];
    let mut position = 0;
    while position < ASCII_ORDER.len() {
        weights[ASCII_ORDER[position] as usize] = position as u8 + 1;
        position += 1;
    }
    let mut letter = b'a';
    while letter <= b'z' {
        weights[letter as usize] = letter_weight(letter);
        weights[letter.to_ascii_uppercase() as usize] = letter_weight(letter);
        letter += 1;
    }
    weights
};

/// First code point of `LATIN_FOLDINGS`.
const LATIN_FIRST: u32 = 0xA0;

/// How each of U+00A0..=U+017F weighs, as the ASCII it weighs like: letters
/// fold to lower-case base letters (two for 'ß', 'æ', 'œ', 'ĳ'), `I`, `N`,
/// `K`, `T` stand for 'ı', 'ŋ', 'ĸ', 'þ', and an empty entry means "by code
/// point" (symbols, and × ÷).
#[rustfmt::skip]
const LATIN_FOLDINGS: [&str; 224] = [
    // U+00A0: NO-BREAK SPACE ¡ ¢ £ ¤ ¥ ¦ § ¨ © ª « ¬ SOFT HYPHEN ® ¯
    " ", "", "", "", "", "", "", "", "", "", "a", "", "", "", "", "",
    // U+00B0: ° ± ² ³ ´ µ ¶ · ¸ ¹ º » ¼ ½ ¾ ¿
    "", "", "2", "3", "", "", "", "", "", "1", "o", "", "", "", "", "",
    // U+00C0: À Á Â Ã Ä Å Æ Ç È É Ê Ë Ì Í Î Ï
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    // U+00D0: Ð Ñ Ò Ó Ô Õ Ö × Ø Ù Ú Û Ü Ý Þ ß
    "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "T", "ss",
    // U+00E0: à á â ã ä å æ ç è é ê ë ì í î ï
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    // U+00F0: ð ñ ò ó ô õ ö ÷ ø ù ú û ü ý þ ÿ
    "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "T", "y",
    // U+0100: Ā ā Ă ă Ą ą Ć ć Ĉ ĉ Ċ ċ Č č Ď ď
    "a", "a", "a", "a", "a", "a", "c", "c", "c", "c", "c", "c", "c", "c", "d", "d",
    // U+0110: Đ đ Ē ē Ĕ ĕ Ė ė Ę ę Ě ě Ĝ ĝ Ğ ğ
    "d", "d", "e", "e", "e", "e", "e", "e", "e", "e", "e", "e", "g", "g", "g", "g",
    // U+0120: Ġ ġ Ģ ģ Ĥ ĥ Ħ ħ Ĩ ĩ Ī ī Ĭ ĭ Į į
    "g", "g", "g", "g", "h", "h", "h", "h", "i", "i", "i", "i", "i", "i", "i", "i",
    // U+0130: İ ı Ĳ ĳ Ĵ ĵ Ķ ķ ĸ Ĺ ĺ Ļ ļ Ľ ľ Ŀ
    "i", "I", "ij", "ij", "j", "j", "k", "k", "K", "l", "l", "l", "l", "l", "l", "l",
    // U+0140: ŀ Ł ł Ń ń Ņ ņ Ň ň ŉ Ŋ ŋ Ō ō Ŏ ŏ
    "l", "l", "l", "n", "n", "n", "n", "n", "n", "'n", "N", "N", "o", "o", "o", "o",
    // U+0150: Ő ő Œ œ Ŕ ŕ Ŗ ŗ Ř ř Ś ś Ŝ ŝ Ş ş
    "o", "o", "oe", "oe", "r", "r", "r", "r", "r", "r", "s", "s", "s", "s", "s", "s",
    // U+0160: Š š Ţ ţ Ť ť Ŧ ŧ Ũ ũ Ū ū Ŭ ŭ Ů ů
    "s", "s", "t", "t", "t", "t", "t", "t", "u", "u", "u", "u", "u", "u", "u", "u",
    // U+0170: Ű ű Ų ų Ŵ ŵ Ŷ ŷ Ÿ Ź ź Ż ż Ž ž ſ
    "u", "u", "u", "u", "w", "w", "y", "y", "y", "z", "z", "z", "z", "z", "z", "s",
];

const fn folding_weight(symbol: u8) -> u8 {
    match symbol {
        b'a'..=b'z' => letter_weight(symbol),
        b'I' => DOTLESS_I_WEIGHT,
        b'N' => ENG_WEIGHT,
        b'K' => KRA_WEIGHT,
        b'T' => THORN_WEIGHT,
        _ => ASCII_WEIGHTS[symbol as usize],
    }
}

/// `LATIN_FOLDINGS` as weights; `[0, 0]` for "by code point".
const LATIN_WEIGHTS: [[u8; 2]; 224] = {
    let mut weights = [[0u8; 2]; 224];
    let mut index = 0;
    while index < LATIN_FOLDINGS.len() {
        let folding = LATIN_FOLDINGS[index].as_bytes();
        let mut position = 0;
        while position < folding.len() {
            weights[index][position] = folding_weight(folding[position]);
            position += 1;
        }
        index += 1;
    }
    weights
};

/// Decodes the UTF-8 sequence at the start of `bytes` (not empty): its code
/// point and length. A byte that does not start a valid sequence is one
/// character of its own, `INVALID_BYTE_CODE + byte`.
#[inline]
fn decode_utf8(bytes: &[u8]) -> (u32, usize) {
    let first = bytes[0];
    if first < 0x80 {
        return (u32::from(first), 1);
    }
    let invalid = (INVALID_BYTE_CODE + u32::from(first), 1);
    let (length, minimum, initial) = match first {
        0xC2..=0xDF => (2, 0x80, first & 0x1F),
        0xE0..=0xEF => (3, 0x800, first & 0x0F),
        0xF0..=0xF4 => (4, 0x1_0000, first & 0x07),
        _ => return invalid,
    };
    if bytes.len() < length {
        return invalid;
    }
    let mut code = u32::from(initial);
    for &byte in &bytes[1..length] {
        if byte & 0xC0 != 0x80 {
            return invalid;
        }
        code = code << 6 | u32::from(byte & 0x3F);
    }
    if code < minimum || (0xD800..=0xDFFF).contains(&code) || code > 0x10_FFFF {
        return invalid;
    }
    (code, length)
}

#[inline]
fn utf8_sequence_length(bytes: &[u8]) -> usize {
    if bytes[0] < 0x80 {
        1
    } else {
        decode_utf8(bytes).1
    }
}

/// The one-byte weights of a character from the ASCII and Latin tables, if it is in them.
#[inline]
fn table_weights(code: u32) -> Option<[u32; 2]> {
    if code < 0x80 {
        return Some([u32::from(ASCII_WEIGHTS[code as usize]), 0]);
    }
    let [first, second] = *LATIN_WEIGHTS.get(code.checked_sub(LATIN_FIRST)? as usize)?;
    (first != 0).then_some([u32::from(first), u32::from(second)])
}

/// The primary weights of a character: one or two (0 = none), or none at
/// all for an ignorable combining mark.
#[inline]
fn character_weights(code: u32) -> [u32; 2] {
    if let Some(weights) = table_weights(code) {
        return weights;
    }
    if (0x300..=0x36F).contains(&code) {
        return [0, 0];
    }
    // Case folds by the simple lowercase mapping; a few characters fold into
    // the tables above (KELVIN SIGN to 'k', ANGSTROM SIGN to 'å').
    let folded = char::from_u32(code)
        .and_then(|character| character.to_lowercase().next())
        .map_or(code, u32::from);
    if folded != code
        && let Some(weights) = table_weights(folded)
    {
        return weights;
    }
    [MULTIBYTE_WEIGHT_BASE + folded, 0]
}

/// The weights of UTF-8 text under `utf8mb4_0900_ai_ci`, one at a time.
struct AccentInsensitiveWeights<'a> {
    text: &'a [u8],
    position: usize,
    /// The second weight of the last character, still to come (0 = none).
    pending: u32,
}

impl<'a> AccentInsensitiveWeights<'a> {
    fn new(text: &'a [u8]) -> Self {
        AccentInsensitiveWeights {
            text,
            position: 0,
            pending: 0,
        }
    }
}

impl Iterator for AccentInsensitiveWeights<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.pending != 0 {
            return Some(std::mem::take(&mut self.pending));
        }
        loop {
            let &byte = self.text.get(self.position)?;
            if byte < 0x80 {
                self.position += 1;
                return Some(u32::from(ASCII_WEIGHTS[usize::from(byte)]));
            }
            let (code, length) = decode_utf8(&self.text[self.position..]);
            self.position += length;
            let [first, second] = character_weights(code);
            if first != 0 {
                self.pending = second;
                return Some(first);
            }
        }
    }
}

fn compare_accent_insensitive(a: &[u8], b: &[u8]) -> Ordering {
    // Identical leading bytes weigh the same, since every character weighs on
    // its own (there are no contractions): start at the last character
    // boundary (in both strings) of the common prefix.
    let common = a
        .iter()
        .zip(b)
        .take_while(|(left, right)| left == right)
        .count();
    let is_continuation =
        |text: &[u8], position: usize| text.get(position).is_some_and(|&byte| byte & 0xC0 == 0x80);
    let mut position = common;
    while position > 0 && (is_continuation(a, position) || is_continuation(b, position)) {
        position -= 1;
    }
    // Fast path: while both sides are ASCII, a weight is one table lookup.
    let common = a.len().min(b.len());
    while position < common {
        let (left, right) = (a[position], b[position]);
        if left >= 0x80 || right >= 0x80 {
            break;
        }
        if left != right {
            let (left, right) = (
                ASCII_WEIGHTS[usize::from(left)],
                ASCII_WEIGHTS[usize::from(right)],
            );
            if left != right {
                return left.cmp(&right);
            }
        }
        position += 1;
    }
    // Both sides are at a character boundary. One side ending here does not
    // decide yet: the other may go on with only ignorable characters.
    let mut left = AccentInsensitiveWeights::new(&a[position..]);
    let mut right = AccentInsensitiveWeights::new(&b[position..]);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(left), Some(right)) if left != right => return left.cmp(&right),
            _ => {}
        }
    }
}

#[inline]
fn push_weight(weight: u32, out: &mut Vec<u8>) {
    if weight < 0x100 {
        out.push(weight as u8);
    } else {
        out.extend_from_slice(&weight.to_be_bytes()[1..]);
    }
}

fn sort_key_accent_insensitive(text: &[u8], out: &mut Vec<u8>) {
    out.reserve(text.len() + 1);
    let mut position = 0;
    while position < text.len() {
        let byte = text[position];
        if byte < 0x80 {
            out.push(ASCII_WEIGHTS[usize::from(byte)]);
            position += 1;
            continue;
        }
        let (code, length) = decode_utf8(&text[position..]);
        position += length;
        for weight in character_weights(code) {
            if weight != 0 {
                push_weight(weight, out);
            }
        }
    }
    out.push(0x00);
}

/// Whether two single characters (their UTF-8 bytes) are equal under `utf8mb4_0900_ai_ci`.
fn same_character_accent_insensitive(left: &[u8], right: &[u8]) -> bool {
    match (left, right) {
        (&[left], &[right]) if left < 0x80 && right < 0x80 => {
            ASCII_WEIGHTS[usize::from(left)] == ASCII_WEIGHTS[usize::from(right)]
        }
        _ => {
            same_bytes(left, right)
                || character_weights(decode_utf8(left).0) == character_weights(decode_utf8(right).0)
        }
    }
}

/// Byte equality of two characters, short enough that a loop beats a call to `memcmp`.
#[inline]
fn same_bytes(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len() && left.iter().zip(right).all(|(left, right)| left == right)
}

// ---------------------------------------------------------------------------
// LIKE

/// LIKE by characters: `character_length` gives the length of the character
/// starting a slice, `same` whether two characters match. Matches greedily
/// and, on a mismatch, lets the last `%` take one more character: with only
/// `%` and single-character `_`, that finds a match whenever one exists, in
/// O(text × pattern) steps and no memory.
#[inline]
fn like_with(
    text: &[u8],
    pattern: &[u8],
    escape: Option<u8>,
    character_length: impl Fn(&[u8]) -> usize,
    same: impl Fn(&[u8], &[u8]) -> bool,
) -> bool {
    let mut text_position = 0;
    let mut pattern_position = 0;
    // Where to retry after the last `%`: the pattern after it, and the text
    // position that `%` currently stops at.
    let mut retry: Option<(usize, usize)> = None;
    loop {
        if pattern_position < pattern.len() {
            let byte = pattern[pattern_position];
            let escaped = Some(byte) == escape && pattern_position + 1 < pattern.len();
            if !escaped && byte == b'%' {
                pattern_position += 1;
                retry = Some((pattern_position, text_position));
                continue;
            }
            if text_position < text.len() {
                let text_length = character_length(&text[text_position..]);
                if !escaped && byte == b'_' {
                    text_position += text_length;
                    pattern_position += 1;
                    continue;
                }
                let literal = pattern_position + usize::from(escaped);
                let literal_length = character_length(&pattern[literal..]);
                if same(
                    &text[text_position..text_position + text_length],
                    &pattern[literal..literal + literal_length],
                ) {
                    text_position += text_length;
                    pattern_position = literal + literal_length;
                    continue;
                }
            }
        } else if text_position == text.len() {
            return true;
        }
        match retry {
            Some((after_percent, stop)) if stop < text.len() => {
                let stop = stop + character_length(&text[stop..]);
                retry = Some((after_percent, stop));
                pattern_position = after_percent;
                text_position = stop;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Collation::*;

    const ALL: [Collation; 5] = [Utf8mb4Bin, Utf8mb4AiCi, Latin1Bin, Latin1Ci, Binary];

    fn key(collation: Collation, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        sort_key(collation, text, &mut out);
        out
    }

    fn check_consistent(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
        let order = compare(collation, a, b);
        assert_eq!(
            order,
            compare(collation, b, a).reverse(),
            "{collation:?} {a:?} {b:?}"
        );
        assert_eq!(
            key(collation, a).cmp(&key(collation, b)),
            order,
            "{collation:?} {a:?} {b:?}"
        );
        order
    }

    #[test]
    fn ascii_weights_cover_every_character() {
        for byte in 0..128u8 {
            assert_ne!(ASCII_WEIGHTS[usize::from(byte)], 0, "{byte}");
            for other in 0..byte {
                let same = ASCII_WEIGHTS[usize::from(byte)] == ASCII_WEIGHTS[usize::from(other)];
                assert_eq!(same, byte.eq_ignore_ascii_case(&other), "{byte} {other}");
            }
        }
        assert!(ASCII_WEIGHTS.iter().all(|&weight| weight < 0xC0));
        assert!(LATIN_WEIGHTS.iter().flatten().all(|&weight| weight < 0xC0));
    }

    #[test]
    fn accent_and_case_insensitive() {
        let equal = |a: &str, b: &str| check_consistent(Utf8mb4AiCi, a.as_bytes(), b.as_bytes());
        assert_eq!(equal("abc", "ABC"), Ordering::Equal);
        assert_eq!(equal("é", "E"), Ordering::Equal);
        assert_eq!(equal("Crème Brûlée", "creme brulee"), Ordering::Equal);
        assert_eq!(equal("straße", "STRASSE"), Ordering::Equal);
        assert_eq!(equal("Æble", "aeble"), Ordering::Equal);
        assert_eq!(equal("Łódź", "lodz"), Ordering::Equal);
        assert_eq!(equal("e\u{301}", "é"), Ordering::Equal);
        assert_eq!(equal("\u{212A}", "k"), Ordering::Equal);
        assert_eq!(equal("ΑΒΓ", "αβγ"), Ordering::Equal);
        assert_eq!(equal("a", "a "), Ordering::Less);
        assert_eq!(equal("a", "b"), Ordering::Less);
        assert_eq!(equal("ß", "st"), Ordering::Less);
        assert_eq!(equal("z", "þ"), Ordering::Less);
        assert_eq!(equal("i", "ı"), Ordering::Less);
        assert_eq!(equal("ı", "j"), Ordering::Less);
        assert_eq!(equal("-", "0"), Ordering::Less);
        assert_eq!(equal("9", "a"), Ordering::Less);
        assert_eq!(equal("z", "α"), Ordering::Less);
        assert_eq!(equal("\u{1}", " "), Ordering::Less);
        assert_eq!(equal("a\u{0}", "a"), Ordering::Greater);
        assert_eq!(
            check_consistent(Utf8mb4AiCi, b"a\xFF", "a\u{10FFFF}".as_bytes()),
            Ordering::Greater
        );
        assert_eq!(
            check_consistent(Utf8mb4AiCi, b"\xC3", b"\xC3\xA9"),
            Ordering::Greater
        );
    }

    #[test]
    fn bin_collations_compare_bytes() {
        assert_eq!(check_consistent(Utf8mb4Bin, b"a", b"A"), Ordering::Greater);
        // PAD SPACE, as MySQL 8.0's utf8mb4_bin: trailing spaces do not count.
        assert_eq!(check_consistent(Utf8mb4Bin, b"a", b"a "), Ordering::Equal);
        assert_eq!(check_consistent(Utf8mb4Bin, b"a", b"a"), Ordering::Less);
        assert_eq!(
            check_consistent(Utf8mb4Bin, "é".as_bytes(), "z".as_bytes()),
            Ordering::Greater
        );
        assert_eq!(check_consistent(Binary, b"a", b"a\0"), Ordering::Less);
        assert_eq!(check_consistent(Binary, b"a\0", b"a\x01"), Ordering::Less);
        assert_eq!(check_consistent(Binary, b"", b"\0"), Ordering::Less);
        assert_eq!(key(Binary, b"a\0b"), b"a\x00\xFFb\x00\x00");
    }

    #[test]
    fn latin1_pad_space() {
        for collation in [Latin1Bin, Latin1Ci] {
            assert_eq!(check_consistent(collation, b"a", b"a   "), Ordering::Equal);
            assert_eq!(check_consistent(collation, b"", b"  "), Ordering::Equal);
            // Tab weighs less than space, so "a\t" < "a" padded.
            assert_eq!(check_consistent(collation, b"a\t", b"a"), Ordering::Less);
            assert_eq!(check_consistent(collation, b"a \t", b"a"), Ordering::Less);
            assert_eq!(
                check_consistent(collation, b"a  \t", b"a \t"),
                Ordering::Greater
            );
            assert_eq!(check_consistent(collation, b"a b", b"a"), Ordering::Greater);
            assert_eq!(check_consistent(collation, b"a  b", b"a b"), Ordering::Less);
            assert_eq!(check_consistent(collation, b"a b", b"ab"), Ordering::Less);
            let long_run = [b"a".as_slice(), &[b' '; 300], b"b"].concat();
            let longer_run = [b"a".as_slice(), &[b' '; 301], b"b"].concat();
            assert_eq!(
                check_consistent(collation, &long_run, &longer_run),
                Ordering::Greater
            );
            assert_eq!(
                check_consistent(collation, &long_run, b"a b"),
                Ordering::Less
            );
            let long_lower = [b"a".as_slice(), &[b' '; 300], b"\t"].concat();
            let longer_lower = [b"a".as_slice(), &[b' '; 301], b"\t"].concat();
            assert_eq!(
                check_consistent(collation, &long_lower, &longer_lower),
                Ordering::Less
            );
            assert_eq!(
                check_consistent(collation, &long_lower, b"a"),
                Ordering::Less
            );
        }
        assert_eq!(check_consistent(Latin1Ci, b"abc", b"ABC"), Ordering::Equal);
        // 0xE9 'é' and 0xC9 'É' both weigh as 'E' in latin1_swedish_ci.
        assert_eq!(check_consistent(Latin1Ci, b"\xE9", b"E"), Ordering::Equal);
        assert_eq!(
            check_consistent(Latin1Ci, b"\xE9", b"\xC9"),
            Ordering::Equal
        );
        // Swedish: 'Å' (0xC5) and 'Ö' (0xD6) sort after 'Z'.
        assert_eq!(check_consistent(Latin1Ci, b"\xC5", b"z"), Ordering::Greater);
        assert_eq!(
            check_consistent(Latin1Ci, b"\xD6", b"\xC5"),
            Ordering::Greater
        );
        assert_eq!(
            check_consistent(Latin1Bin, b"abc", b"ABC"),
            Ordering::Greater
        );
    }

    #[test]
    fn like_cases() {
        for collation in ALL {
            assert!(like(collation, b"abc", b"abc", b'\\'));
            assert!(like(collation, b"abc", b"a%", b'\\'));
            assert!(like(collation, b"abc", b"%c", b'\\'));
            assert!(like(collation, b"abc", b"%b%", b'\\'));
            assert!(like(collation, b"abc", b"a_c", b'\\'));
            assert!(like(collation, b"abc", b"%%%", b'\\'));
            assert!(like(collation, b"", b"%", b'\\'));
            assert!(!like(collation, b"", b"_", b'\\'));
            assert!(!like(collation, b"abc", b"ab", b'\\'));
            assert!(!like(collation, b"abc", b"abcd", b'\\'));
            assert!(!like(collation, b"abc", b"a_", b'\\'));
            assert!(like(collation, b"a%c", b"a\\%c", b'\\'));
            assert!(!like(collation, b"abc", b"a\\%c", b'\\'));
            assert!(like(collation, b"a_c", b"a\\_c", b'\\'));
            assert!(!like(collation, b"abc", b"a\\_c", b'\\'));
            assert!(like(collation, b"a\\", b"a\\", b'\\'));
            assert!(like(collation, b"a%c", b"a!%c", b'!'));
            assert!(like(collation, b"mississippi", b"%iss%ppi", b'\\'));
            assert!(like(collation, b"mississippi", b"m%s_s%i", b'\\'));
            assert!(!like(collation, b"mississippi", b"m%s_s%x", b'\\'));
            assert!(!like(collation, b"a ", b"a", b'\\'));
        }
        assert!(like(Utf8mb4AiCi, b"ABC", b"a%", b'\\'));
        assert!(like(Utf8mb4AiCi, "Crème".as_bytes(), b"creme", b'\\'));
        assert!(like(
            Utf8mb4AiCi,
            "日本語".as_bytes(),
            b"__\xE8\xAA\x9E",
            b'\\'
        ));
        assert!(like(Utf8mb4AiCi, "日本語".as_bytes(), b"___", b'\\'));
        assert!(!like(Utf8mb4AiCi, "ß".as_bytes(), b"ss", b'\\'));
        assert!(like(Utf8mb4Bin, "日本語".as_bytes(), b"_%", b'\\'));
        assert!(!like(Utf8mb4Bin, b"ABC", b"a%", b'\\'));
        assert!(!like(Binary, "é".as_bytes(), b"_", b'\\'));
        assert!(like(Binary, "é".as_bytes(), b"__", b'\\'));
        assert!(like(Latin1Ci, b"\xC9t\xE9", b"ETE", b'\\'));
        assert!(!like(Latin1Bin, b"ABC", b"a%", b'\\'));
        // 0xC3 starts 'é' in UTF-8, so it cannot be a utf8mb4 escape; in latin1 it can.
        assert!(like(Utf8mb4Bin, "é".as_bytes(), "é".as_bytes(), 0xC3));
        assert!(like(Latin1Bin, b"%", b"\xC3%", 0xC3));
    }
}
