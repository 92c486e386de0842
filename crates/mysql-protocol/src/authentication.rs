//! The authentication exchange of [`ServerConnection`]: checking the
//! client's answer against the account the runtime looked up, switching
//! plugins, and `caching_sha2_password`'s fast and full paths.
//!
//! Packets of the exchange (all numbered on from the handshake response):
//! AuthSwitchRequest `0xFE plugin\0 scramble\0` → the client's answer (raw
//! bytes); AuthMoreData `0x01 0x03` (fast path verified; OK follows) or
//! `0x01 0x04` (send the password) → the password and a NUL over TLS, or
//! `0x02` (asking for the public key, answered by AuthMoreData `0x01 PEM`)
//! and then the RSA ciphertext.

use crate::auth::{
    Account, AuthPlugin, cleartext_password, is_empty_response, unxor_rsa_password,
    verify_native_password, verify_sha2_cleartext, verify_sha2_scramble,
};
use crate::connection::{
    AuthenticatedSession, AuthenticationRequest, Event, Phase, ServerConnection, Step,
};
use crate::constants::error_codes::{ER_ACCESS_DENIED_ERROR, ER_NOT_SUPPORTED_AUTH_MODE};
use crate::handshake::{
    FAST_AUTH_SUCCESS, PERFORM_FULL_AUTHENTICATION, REQUEST_PUBLIC_KEY, encode_auth_more_data,
    encode_auth_switch_request,
};
use crate::packet::{begin_packet, finish_packet};
use crate::response::write_error_packet;

/// A login waiting for the runtime's account lookup.
#[derive(Debug)]
pub(crate) struct PendingAuthentication {
    pub(crate) request: AuthenticationRequest,
    /// The client's first answer, computed by the plugin it named.
    pub(crate) auth_response: Vec<u8>,
}

/// A login whose account is known, waiting for more from the client.
#[derive(Debug)]
pub(crate) struct Verification {
    account: Account,
    user: String,
    database: Option<String>,
    change_user: bool,
}

impl ServerConnection {
    /// Answers [`Event::Authenticate`]: the account the runtime found for
    /// the user (and peer host), or `None` when there is none. Appends
    /// whatever the exchange needs next to `out` (AuthSwitchRequest,
    /// AuthMoreData, or ERR 1045); then call
    /// [`next_event`](Self::next_event), which reports
    /// [`Event::Authenticated`] or [`Event::AccessDenied`] once decided.
    ///
    /// # Panics
    /// When no `Event::Authenticate` is waiting for an answer.
    pub fn supply_account(&mut self, account: Option<&Account>, out: &mut Vec<u8>) {
        let Phase::AwaitingAccount(pending) = std::mem::replace(&mut self.phase, Phase::Closed)
        else {
            panic!("supply_account answers Event::Authenticate");
        };
        let request = pending.request;
        let Some(account) = account else {
            self.deny(&request.user, request.password_supplied, out);
            return;
        };
        let verification = Verification {
            account: account.clone(),
            user: request.user,
            database: request.database,
            change_user: request.change_user,
        };
        // A client without CLIENT_PLUGIN_AUTH answered with the native
        // scramble; one that named an unknown plugin gets switched.
        let client_plugin = if self.client_supports_plugin_auth() {
            request
                .auth_plugin_name
                .as_deref()
                .and_then(AuthPlugin::from_name)
        } else {
            Some(AuthPlugin::MysqlNativePassword)
        };
        if client_plugin == Some(account.plugin) {
            self.verify_response(verification, &pending.auth_response, out);
        } else if self.client_supports_plugin_auth() {
            let start = begin_packet(out);
            encode_auth_switch_request(account.plugin, &self.scramble, out);
            finish_packet(out, start, &mut self.sequence);
            self.phase = Phase::AwaitingAuthSwitchResponse(verification);
        } else {
            write_error_packet(
                out,
                &mut self.sequence,
                self.capabilities,
                ER_NOT_SUPPORTED_AUTH_MODE,
                "08004",
                "Client does not support authentication protocol requested by server; consider upgrading MySQL client",
            );
            self.phase = Phase::AuthenticationOutcome(Event::AccessDenied {
                user: verification.user,
            });
        }
    }

    /// Answers [`Event::DecryptPassword`] with the RSA plaintext, or `None`
    /// when decryption failed (the login is then refused). The password is
    /// recovered by un-XORing the scramble and checked against the
    /// account's SHA-256 digest.
    ///
    /// # Panics
    /// When no `Event::DecryptPassword` is waiting for an answer.
    pub fn supply_decrypted_password(&mut self, plaintext: Option<&[u8]>, out: &mut Vec<u8>) {
        let Phase::AwaitingDecryption(verification) =
            std::mem::replace(&mut self.phase, Phase::Closed)
        else {
            panic!("supply_decrypted_password answers Event::DecryptPassword");
        };
        let password = plaintext.map(|plaintext| unxor_rsa_password(plaintext, &self.scramble));
        self.check_full_authentication_password(verification, password.as_deref(), out);
    }

    /// Checks the client's answer for the account's plugin (its first
    /// answer, or its answer to AuthSwitchRequest).
    pub(crate) fn verify_response(
        &mut self,
        verification: Verification,
        response: &[u8],
        out: &mut Vec<u8>,
    ) {
        let empty_response = is_empty_response(response);
        let account = &verification.account;
        // An account without a password takes only an empty answer, and an
        // empty answer passes only for such an account, for both plugins.
        if account.has_empty_password() || empty_response {
            if account.has_empty_password() && empty_response {
                self.succeed(verification);
            } else {
                self.deny(&verification.user, !empty_response, out);
            }
            return;
        }
        match account.plugin {
            AuthPlugin::MysqlNativePassword => {
                let verified = account.native_digest.is_some_and(|digest| {
                    verify_native_password(response, &self.scramble, &digest)
                });
                if verified {
                    self.succeed(verification);
                } else {
                    self.deny(&verification.user, true, out);
                }
            }
            AuthPlugin::CachingSha2Password => {
                let Some(digest) = account.sha2_digest else {
                    // Unreachable: an account without its digest has an empty
                    // password, decided above. Refusing is the safe answer.
                    self.deny(&verification.user, true, out);
                    return;
                };
                if account.force_full_authentication {
                    self.write_auth_more_data(&[PERFORM_FULL_AUTHENTICATION], out);
                    self.phase = Phase::AwaitingFullAuthentication(verification);
                } else if verify_sha2_scramble(response, &self.scramble, &digest) {
                    self.write_auth_more_data(&[FAST_AUTH_SUCCESS], out);
                    self.succeed(verification);
                } else {
                    self.deny(&verification.user, true, out);
                }
            }
        }
    }

    /// Handles the client's packet after `perform_full_authentication`.
    pub(crate) fn on_full_authentication(
        &mut self,
        verification: Verification,
        packet: &[u8],
        out: &mut Vec<u8>,
    ) -> Step {
        if self.tls_active {
            self.check_full_authentication_password(
                verification,
                Some(cleartext_password(packet)),
                out,
            );
            return Step::Continue;
        }
        if packet == [REQUEST_PUBLIC_KEY] {
            let Some(public_key) = self.config.rsa_public_key_pem.clone() else {
                // Without a key the password cannot travel safely: refuse
                // rather than ask for it in clear text.
                self.deny(&verification.user, true, out);
                return Step::Continue;
            };
            self.write_auth_more_data(&public_key, out);
            self.phase = Phase::AwaitingEncryptedPassword(verification);
            return Step::Continue;
        }
        // A client that already has the public key sends the ciphertext
        // straight away.
        self.phase = Phase::AwaitingDecryption(verification);
        Step::Event(Event::DecryptPassword {
            ciphertext: packet.to_vec(),
        })
    }

    fn check_full_authentication_password(
        &mut self,
        verification: Verification,
        password: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) {
        let verified = match (password, verification.account.sha2_digest) {
            (Some(password), Some(digest)) => verify_sha2_cleartext(password, &digest),
            _ => false,
        };
        if verified {
            self.succeed(verification);
        } else {
            self.deny(&verification.user, true, out);
        }
    }

    fn write_auth_more_data(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let start = begin_packet(out);
        encode_auth_more_data(data, out);
        finish_packet(out, start, &mut self.sequence);
    }

    fn succeed(&mut self, verification: Verification) {
        self.user = verification.user.clone();
        self.phase = Phase::AuthenticationOutcome(Event::Authenticated(AuthenticatedSession {
            user: verification.user,
            database: verification.database,
            change_user: verification.change_user,
        }));
    }

    fn deny(&mut self, user: &str, password_supplied: bool, out: &mut Vec<u8>) {
        let message = format!(
            "Access denied for user '{user}'@'{}' (using password: {})",
            self.peer_host,
            if password_supplied { "YES" } else { "NO" }
        );
        write_error_packet(
            out,
            &mut self.sequence,
            self.capabilities,
            ER_ACCESS_DENIED_ERROR,
            "28000",
            &message,
        );
        self.phase = Phase::AuthenticationOutcome(Event::AccessDenied {
            user: user.to_string(),
        });
    }
}
