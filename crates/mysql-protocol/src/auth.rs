//! The two authentication plugins' cryptography and what the server stores.
//!
//! `mysql_native_password`: the server stores SHA1(SHA1(password)); the
//! client answers the 20-byte scramble with
//! SHA1(password) XOR SHA1(scramble || SHA1(SHA1(password))), 20 bytes.
//!
//! `caching_sha2_password`: the server stores SHA256(SHA256(password));
//! the fast path's client answer is
//! SHA256(password) XOR SHA256(SHA256(SHA256(password)) || scramble),
//! 32 bytes. Full authentication sends the password itself: in clear text
//! (NUL-terminated) over TLS, or without TLS as RSA ciphertext of the
//! NUL-terminated password XOR the scramble repeated cyclically.
//!
//! An empty password is answered with an empty response (or a single NUL
//! byte, which some clients send) by both plugins.

use sha1::{Digest, Sha1};
use sha2::Sha256;

/// Bytes of the random scramble (the "nonce") the server sends.
pub const SCRAMBLE_LENGTH: usize = 20;
/// Bytes of a `mysql_native_password` digest and scramble response.
pub const NATIVE_DIGEST_LENGTH: usize = 20;
/// Bytes of a `caching_sha2_password` digest and fast-path response.
pub const SHA2_DIGEST_LENGTH: usize = 32;
/// The longest password full authentication accepts (MySQL's limit).
pub const MAX_PASSWORD_LENGTH: usize = 256;

/// An authentication plugin this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthPlugin {
    /// `mysql_native_password` (SHA-1 based).
    MysqlNativePassword,
    /// `caching_sha2_password` (SHA-256 based), MySQL 8.0's default.
    CachingSha2Password,
}

impl AuthPlugin {
    /// The plugin's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            AuthPlugin::MysqlNativePassword => "mysql_native_password",
            AuthPlugin::CachingSha2Password => "caching_sha2_password",
        }
    }

    /// The plugin with this wire name, if the server speaks it.
    pub fn from_name(name: &str) -> Option<AuthPlugin> {
        match name {
            "mysql_native_password" => Some(AuthPlugin::MysqlNativePassword),
            "caching_sha2_password" => Some(AuthPlugin::CachingSha2Password),
            _ => None,
        }
    }
}

/// What the runtime knows about an account, handed to
/// [`ServerConnection::supply_account`](crate::ServerConnection::supply_account).
///
/// The digest matching `plugin` is the one checked; when it is `None` the
/// account's password is empty and only an empty response passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The plugin the account authenticates with. A client that offered
    /// another plugin is switched to this one (AuthSwitchRequest).
    pub plugin: AuthPlugin,
    /// SHA1(SHA1(password)), see [`native_password_digest`].
    pub native_digest: Option<[u8; NATIVE_DIGEST_LENGTH]>,
    /// SHA256(SHA256(password)), see [`sha2_password_digest`].
    pub sha2_digest: Option<[u8; SHA2_DIGEST_LENGTH]>,
    /// For `caching_sha2_password`: skip the fast path and ask for the
    /// password itself (over TLS, or RSA-encrypted), as MySQL does when the
    /// account is not in its cache yet.
    pub force_full_authentication: bool,
}

impl Account {
    /// An account with `password`, storing both plugins' digests (an empty
    /// password stores none).
    pub fn with_password(plugin: AuthPlugin, password: &[u8]) -> Account {
        let has_password = !password.is_empty();
        Account {
            plugin,
            native_digest: has_password.then(|| native_password_digest(password)),
            sha2_digest: has_password.then(|| sha2_password_digest(password)),
            force_full_authentication: false,
        }
    }

    /// Whether the account's password is empty for its plugin.
    pub fn has_empty_password(&self) -> bool {
        match self.plugin {
            AuthPlugin::MysqlNativePassword => self.native_digest.is_none(),
            AuthPlugin::CachingSha2Password => self.sha2_digest.is_none(),
        }
    }
}

/// SHA1(SHA1(password)): what `mysql_native_password` stores.
pub fn native_password_digest(password: &[u8]) -> [u8; NATIVE_DIGEST_LENGTH] {
    sha1(&[&sha1(&[password])])
}

/// SHA256(SHA256(password)): what `caching_sha2_password` stores.
pub fn sha2_password_digest(password: &[u8]) -> [u8; SHA2_DIGEST_LENGTH] {
    sha256(&[&sha256(&[password])])
}

/// The client's `mysql_native_password` answer to `scramble` (what a
/// client computes; the server uses it only in tests and tools).
pub fn native_password_scramble(
    password: &[u8],
    scramble: &[u8; SCRAMBLE_LENGTH],
) -> [u8; NATIVE_DIGEST_LENGTH] {
    let stage1 = sha1(&[password]);
    let stage2 = sha1(&[&stage1]);
    xor(&stage1, &sha1(&[scramble, &stage2]))
}

/// The client's `caching_sha2_password` fast-path answer to `scramble`.
pub fn sha2_password_scramble(
    password: &[u8],
    scramble: &[u8; SCRAMBLE_LENGTH],
) -> [u8; SHA2_DIGEST_LENGTH] {
    let stage1 = sha256(&[password]);
    let stage2 = sha256(&[&stage1]);
    xor(&stage1, &sha256(&[&stage2, scramble]))
}

/// Whether `response` is the empty answer of an empty password: no bytes,
/// or the single NUL some clients send.
pub fn is_empty_response(response: &[u8]) -> bool {
    response.is_empty() || response == [0]
}

/// Checks a `mysql_native_password` scramble response against the stored
/// SHA1(SHA1(password)): recovers SHA1(password) from the response and
/// compares its SHA-1 with the stored digest.
pub fn verify_native_password(
    response: &[u8],
    scramble: &[u8; SCRAMBLE_LENGTH],
    stored_digest: &[u8; NATIVE_DIGEST_LENGTH],
) -> bool {
    let Ok(response) = <&[u8; NATIVE_DIGEST_LENGTH]>::try_from(response) else {
        return false;
    };
    let candidate_stage1 = xor(response, &sha1(&[scramble, stored_digest]));
    constant_time_equal(&sha1(&[&candidate_stage1]), stored_digest)
}

/// Checks a `caching_sha2_password` fast-path response against the stored
/// SHA256(SHA256(password)): recovers SHA256(password) and compares its
/// SHA-256 with the stored digest.
pub fn verify_sha2_scramble(
    response: &[u8],
    scramble: &[u8; SCRAMBLE_LENGTH],
    stored_digest: &[u8; SHA2_DIGEST_LENGTH],
) -> bool {
    let Ok(response) = <&[u8; SHA2_DIGEST_LENGTH]>::try_from(response) else {
        return false;
    };
    let candidate_stage1 = xor(response, &sha256(&[stored_digest, scramble]));
    constant_time_equal(&sha256(&[&candidate_stage1]), stored_digest)
}

/// Checks a clear-text password (full authentication) against the stored
/// SHA256(SHA256(password)). An empty password never passes here: the
/// empty-password case is decided before full authentication starts.
pub fn verify_sha2_cleartext(password: &[u8], stored_digest: &[u8; SHA2_DIGEST_LENGTH]) -> bool {
    !password.is_empty()
        && password.len() <= MAX_PASSWORD_LENGTH
        && constant_time_equal(&sha2_password_digest(password), stored_digest)
}

/// Recovers the password from the RSA-decrypted full-authentication packet:
/// the client encrypted (password || NUL) XOR the scramble repeated
/// cyclically, so XOR again and stop at the first NUL.
pub fn unxor_rsa_password(decrypted: &[u8], scramble: &[u8; SCRAMBLE_LENGTH]) -> Vec<u8> {
    decrypted
        .iter()
        .zip(scramble.iter().cycle())
        .map(|(byte, mask)| byte ^ mask)
        .take_while(|&byte| byte != 0)
        .collect()
}

/// The clear-text password of a full-authentication packet sent over TLS:
/// the password with a terminating NUL, which is dropped.
pub fn cleartext_password(packet: &[u8]) -> &[u8] {
    packet.strip_suffix(&[0]).unwrap_or(packet)
}

fn sha1(parts: &[&[u8]]) -> [u8; NATIVE_DIGEST_LENGTH] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn sha256(parts: &[&[u8]]) -> [u8; SHA2_DIGEST_LENGTH] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn xor<const N: usize>(left: &[u8; N], right: &[u8; N]) -> [u8; N] {
    let mut result = [0u8; N];
    for (index, byte) in result.iter_mut().enumerate() {
        *byte = left[index] ^ right[index];
    }
    result
}

/// Compares without an early exit, so the time taken does not reveal how
/// many leading bytes of a guess were right.
fn constant_time_equal(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len()
        && left
            .iter()
            .zip(right)
            .fold(0u8, |difference, (a, b)| difference | (a ^ b))
            == 0
}
