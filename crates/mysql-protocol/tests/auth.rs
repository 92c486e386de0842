//! Password digests and scramble verification, against vectors computed
//! independently with Python's hashlib.

mod common;

use common::hex;
use mysql_protocol::auth::*;

const SCRAMBLE: &[u8; 20] = b"!\"#$%&'()*+,-./01234";

fn array<const N: usize>(text: &str) -> [u8; N] {
    hex(text).try_into().unwrap()
}

#[test]
fn native_digest_is_double_sha1() {
    // MySQL's PASSWORD('secret') is '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'.
    assert_eq!(
        native_password_digest(b"secret"),
        array::<20>("14e65567abdb5135d0cfd9a70b3032c179a49ee7")
    );
    assert_eq!(
        native_password_digest(b"hunter2"),
        array::<20>("58815970be77b3720276f63db198b1fa42e5cc02")
    );
}

#[test]
fn sha2_digest_is_double_sha256() {
    assert_eq!(
        sha2_password_digest(b"secret"),
        array::<32>("3881219d087dd9c634373fd33dfa33a2cb6bfc6c520b64b8bb60ef2ceb534ae7")
    );
}

#[test]
fn native_scramble_response_matches_reference_and_verifies() {
    let expected = array::<20>("1f44f306295a10870fd7895d358cb5f975d7d47f");
    assert_eq!(native_password_scramble(b"secret", SCRAMBLE), expected);
    let stored = native_password_digest(b"secret");
    assert!(verify_native_password(&expected, SCRAMBLE, &stored));
    assert!(!verify_native_password(
        &native_password_scramble(b"Secret", SCRAMBLE),
        SCRAMBLE,
        &stored
    ));
    let mut other_scramble = *SCRAMBLE;
    other_scramble[19] = b'9';
    assert!(!verify_native_password(&expected, &other_scramble, &stored));
    assert!(!verify_native_password(&expected[..19], SCRAMBLE, &stored));
    assert!(!verify_native_password(&[], SCRAMBLE, &stored));
}

#[test]
fn sha2_scramble_response_matches_reference_and_verifies() {
    let expected = array::<32>("3e6e1d1225dfe8531b46e47caf897453dba8211b1e2fdca5e10ef0f98718b18e");
    assert_eq!(sha2_password_scramble(b"secret", SCRAMBLE), expected);
    let stored = sha2_password_digest(b"secret");
    assert!(verify_sha2_scramble(&expected, SCRAMBLE, &stored));
    let hunter = array::<32>("91e5aa03246175e29bcb7183d98d235e6faf2d08d40a797bb9524b519687c804");
    assert!(verify_sha2_scramble(
        &hunter,
        SCRAMBLE,
        &sha2_password_digest(b"hunter2")
    ));
    assert!(!verify_sha2_scramble(&hunter, SCRAMBLE, &stored));
    let mut flipped = expected;
    flipped[0] ^= 1;
    assert!(!verify_sha2_scramble(&flipped, SCRAMBLE, &stored));
    assert!(!verify_sha2_scramble(&expected[..20], SCRAMBLE, &stored));
}

#[test]
fn cleartext_password_verifies_against_sha2_digest() {
    let stored = sha2_password_digest(b"secret");
    assert!(verify_sha2_cleartext(b"secret", &stored));
    assert!(!verify_sha2_cleartext(b"secret ", &stored));
    assert!(!verify_sha2_cleartext(b"", &sha2_password_digest(b"")));
    assert_eq!(cleartext_password(b"secret\0"), b"secret");
    assert_eq!(cleartext_password(b"secret"), b"secret");
}

#[test]
fn rsa_plaintext_is_unxored_with_the_repeated_scramble() {
    assert_eq!(
        unxor_rsa_password(&hex("52474056405227"), SCRAMBLE),
        b"secret"
    );
    // Longer than the scramble: the scramble repeats.
    let long = hex("400f5145514e425a044644424a035f514241445b53460e415d45424d4d43454b001c1f30");
    assert_eq!(
        unxor_rsa_password(&long, SCRAMBLE),
        b"a-rather-long-password-exceeding-20"
    );
    assert_eq!(unxor_rsa_password(&[], SCRAMBLE), b"");
}

#[test]
fn empty_responses_are_recognised() {
    assert!(is_empty_response(b""));
    assert!(is_empty_response(b"\0"));
    assert!(!is_empty_response(b"\0\0"));
    assert!(!is_empty_response(b"x"));
}

#[test]
fn accounts_store_both_digests_or_none() {
    let account = Account::with_password(AuthPlugin::CachingSha2Password, b"secret");
    assert_eq!(account.sha2_digest, Some(sha2_password_digest(b"secret")));
    assert_eq!(
        account.native_digest,
        Some(native_password_digest(b"secret"))
    );
    assert!(!account.has_empty_password());
    let empty = Account::with_password(AuthPlugin::MysqlNativePassword, b"");
    assert!(empty.has_empty_password());
    assert_eq!(
        AuthPlugin::from_name("caching_sha2_password"),
        Some(AuthPlugin::CachingSha2Password)
    );
    assert_eq!(
        AuthPlugin::from_name(AuthPlugin::MysqlNativePassword.name()),
        Some(AuthPlugin::MysqlNativePassword)
    );
    assert_eq!(AuthPlugin::from_name("sha256_password"), None);
}
