//! Property tests of the collations: `sort_key` orders exactly as `compare`
//! and is self-delimiting, case-insensitive collations order ASCII text as
//! its lowercase does, and `like` agrees with a plain reference matcher.

use proptest::collection::vec;
use proptest::prelude::*;
use schema::Collation;
use schema::collation::{compare, like, sort_key};
use std::cmp::Ordering;

const ALL: [Collation; 5] = [
    Collation::Utf8mb4Bin,
    Collation::Utf8mb4AiCi,
    Collation::Latin1Bin,
    Collation::Latin1Ci,
    Collation::Binary,
];

fn collation() -> impl Strategy<Value = Collation> {
    proptest::sample::select(ALL.to_vec())
}

/// Short strings from an alphabet chosen to hit the interesting cases:
/// case, accents, expansions, spaces and characters around a space's weight,
/// zero bytes, multi-byte UTF-8 and bytes that are not UTF-8.
fn text() -> impl Strategy<Value = Vec<u8>> {
    let pieces: Vec<&'static [u8]> = vec![
        b"a",
        b"A",
        b"b",
        b"B",
        b"s",
        b"S",
        b"e",
        b"E",
        b"z",
        b" ",
        b" ",
        b" ",
        b"\t",
        b"\0",
        b"\x01",
        b"0",
        b"-",
        b"_",
        b"%",
        b"\x7F",
        "é".as_bytes(),
        "É".as_bytes(),
        "ß".as_bytes(),
        "æ".as_bytes(),
        "\u{301}".as_bytes(),
        "\u{A0}".as_bytes(),
        "日".as_bytes(),
        "😀".as_bytes(),
        "ı".as_bytes(),
        b"\xE9",
        b"\xC9",
        b"\xC5",
        b"\xFF",
        b"\xC3",
    ];
    vec(proptest::sample::select(pieces), 0..8).prop_map(|pieces| pieces.concat())
}

fn key(collation: Collation, text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    sort_key(collation, text, &mut out);
    out
}

/// LIKE by the book, for ASCII text and patterns under a binary collation
/// or ASCII case folding: recursion over the pattern, which is slow but
/// obviously right.
fn reference_like(text: &[u8], pattern: &[u8], escape: u8, fold_case: bool) -> bool {
    let same = |a: u8, b: u8| {
        if fold_case {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    match pattern.split_first() {
        None => text.is_empty(),
        Some((&first, rest)) if first == escape && !rest.is_empty() => {
            !text.is_empty()
                && same(text[0], rest[0])
                && reference_like(&text[1..], &rest[1..], escape, fold_case)
        }
        Some((b'%', rest)) => {
            (0..=text.len()).any(|skip| reference_like(&text[skip..], rest, escape, fold_case))
        }
        Some((b'_', rest)) => {
            !text.is_empty() && reference_like(&text[1..], rest, escape, fold_case)
        }
        Some((&first, rest)) => {
            !text.is_empty()
                && same(text[0], first)
                && reference_like(&text[1..], rest, escape, fold_case)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn sort_key_orders_as_compare(collation in collation(), a in text(), b in text()) {
        let order = compare(collation, &a, &b);
        prop_assert_eq!(compare(collation, &b, &a), order.reverse());
        prop_assert_eq!(compare(collation, &a, &a), Ordering::Equal);
        prop_assert_eq!(key(collation, &a).cmp(&key(collation, &b)), order, "{:?}: {:?} vs {:?}", collation, a, b);
    }

    #[test]
    fn sort_key_is_self_delimiting(
        collation in collation(),
        a in text(),
        b in text(),
        a_suffix in vec(any::<u8>(), 0..4),
        b_suffix in vec(any::<u8>(), 0..4),
    ) {
        // Whatever follows a sort key in a composite key only matters when the strings are equal.
        let (mut a_key, mut b_key) = (key(collation, &a), key(collation, &b));
        a_key.extend_from_slice(&a_suffix);
        b_key.extend_from_slice(&b_suffix);
        let expected = compare(collation, &a, &b).then_with(|| a_suffix.cmp(&b_suffix));
        prop_assert_eq!(a_key.cmp(&b_key), expected, "{:?}: {:?} vs {:?}", collation, a, b);
    }

    #[test]
    fn compare_is_transitive(collation in collation(), mut texts in vec(text(), 3)) {
        texts.sort_by(|a, b| compare(collation, a, b));
        prop_assert_ne!(compare(collation, &texts[0], &texts[1]), Ordering::Greater);
        prop_assert_ne!(compare(collation, &texts[1], &texts[2]), Ordering::Greater);
        prop_assert_ne!(compare(collation, &texts[0], &texts[2]), Ordering::Greater);
    }

    #[test]
    fn case_insensitive_collations_order_ascii_as_lowercase(a in "[a-zA-Z0-9]{0,8}", b in "[a-zA-Z0-9]{0,8}") {
        let expected = a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase());
        for collation in [Collation::Utf8mb4AiCi, Collation::Latin1Ci] {
            prop_assert_eq!(compare(collation, a.as_bytes(), b.as_bytes()), expected);
        }
        prop_assert_eq!(compare(Collation::Utf8mb4AiCi, a.to_uppercase().as_bytes(), a.to_lowercase().as_bytes()), Ordering::Equal);
        prop_assert_eq!(key(Collation::Latin1Ci, a.to_uppercase().as_bytes()), key(Collation::Latin1Ci, a.to_lowercase().as_bytes()));
    }

    #[test]
    fn pad_space_ignores_trailing_spaces(a in "[a-z \t]{0,6}", spaces in 1usize..4) {
        let padded = format!("{a}{}", " ".repeat(spaces));
        // MySQL 8.0: the latin1 collations and utf8mb4_bin are PAD SPACE,
        // utf8mb4_0900_ai_ci is NO PAD.
        for collation in [Collation::Latin1Bin, Collation::Latin1Ci, Collation::Utf8mb4Bin] {
            prop_assert_eq!(compare(collation, a.as_bytes(), padded.as_bytes()), Ordering::Equal);
            prop_assert_eq!(key(collation, a.as_bytes()), key(collation, padded.as_bytes()));
        }
        for collation in [Collation::Utf8mb4AiCi, Collation::Binary] {
            prop_assert_eq!(compare(collation, a.as_bytes(), padded.as_bytes()), Ordering::Less);
        }
    }

    #[test]
    fn like_agrees_with_reference(text in "[abAB_%!]{0,8}", pattern in "[abAB_%!]{0,6}") {
        let (text, pattern) = (text.as_bytes(), pattern.as_bytes());
        for collation in [Collation::Binary, Collation::Utf8mb4Bin, Collation::Latin1Bin] {
            prop_assert_eq!(like(collation, text, pattern, b'!'), reference_like(text, pattern, b'!', false));
        }
        for collation in [Collation::Utf8mb4AiCi, Collation::Latin1Ci] {
            prop_assert_eq!(like(collation, text, pattern, b'!'), reference_like(text, pattern, b'!', true));
        }
    }

    #[test]
    fn like_counts_characters_in_utf8(text in "[aé日😀]{0,6}") {
        let underscores = "_".repeat(text.chars().count());
        let one_too_many = format!("{underscores}_");
        let surrounded = format!("%{text}%");
        for collation in [Collation::Utf8mb4Bin, Collation::Utf8mb4AiCi] {
            prop_assert!(like(collation, text.as_bytes(), underscores.as_bytes(), b'\\'));
            prop_assert!(!like(collation, text.as_bytes(), one_too_many.as_bytes(), b'\\'));
            prop_assert!(like(collation, text.as_bytes(), surrounded.as_bytes(), b'\\'));
        }
    }
}

#[test]
fn accent_insensitive_equalities() {
    let equal = |a: &str, b: &str| {
        assert_eq!(
            compare(Collation::Utf8mb4AiCi, a.as_bytes(), b.as_bytes()),
            Ordering::Equal,
            "{a} {b}"
        );
        assert_eq!(
            key(Collation::Utf8mb4AiCi, a.as_bytes()),
            key(Collation::Utf8mb4AiCi, b.as_bytes()),
            "{a} {b}"
        );
    };
    equal("abc", "ABC");
    equal("é", "E");
    equal("ÀÁÂÃÄÅàáâãäåĀāĂăĄą", "aaaaaaaaaaaaaaaaaa");
    equal("Ææ", "aeAE");
    equal("ß", "ss");
    equal("Œuvre", "oeuvre");
    equal("Ĳssel", "ijssel");
    equal("Dvořák", "dvorak");
    equal("Ÿ", "y");
    equal("ſ", "s");
    equal("\u{A0}", " ");
}
