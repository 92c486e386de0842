//! Users, stored in the cluster (`mysql.user`) so every SQL node
//! authenticates the same ones.
//!
//! `authentication_string` holds, for a user with a password, the digests
//! both plugins verify against: SHA1(SHA1(password)) for
//! `mysql_native_password` (20 bytes) followed by SHA256(SHA256(password))
//! for `caching_sha2_password`'s fast path (32 bytes); empty for a user
//! without a password. (MySQL keeps a salted, iterated SHA-256 for
//! caching_sha2_password; Shoal keeps the digest its fast path needs, as
//! strong as mysql_native_password's — a known difference.)

use schema::{ColumnId, Value};
use shoal_client::{ExecuteEnd, LockMode};

use crate::catalog;
use crate::error::SqlError;
use crate::expression::WarningLevel;
use crate::outcome::Outcome;
use crate::parse::{Account, AccountStatement};
use crate::session::{Session, StatementResult, single_operation};

/// Bytes of the stored digests of a user with a password.
const AUTHENTICATION_BYTES: usize = 20 + 32;
/// Longest user name (MySQL 8.0: 32 characters).
pub const USER_NAME_LENGTH_MAX: usize = 32;
/// Longest host name in an account.
pub const HOST_NAME_LENGTH_MAX: usize = 255;

/// The stored credentials of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// SHA1(SHA1(password)), or `None` for no password.
    pub native_digest: Option<[u8; 20]>,
    /// SHA256(SHA256(password)), or `None` for no password.
    pub sha2_digest: Option<[u8; 32]>,
}

/// The `mysql.user` row of an account with `password`.
pub fn user_row(host: &str, user: &str, password: &str) -> Vec<(ColumnId, Value)> {
    vec![
        (0, Value::Bytes(host.as_bytes().to_vec())),
        (1, Value::Bytes(user.as_bytes().to_vec())),
        (2, Value::Bytes(b"caching_sha2_password".to_vec())),
        (3, Value::Bytes(authentication_string(password))),
    ]
}

fn authentication_string(password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(AUTHENTICATION_BYTES);
    out.extend_from_slice(&mysql_protocol::native_password_digest(password.as_bytes()));
    out.extend_from_slice(&mysql_protocol::sha2_password_digest(password.as_bytes()));
    out
}

fn credentials(stored: &[u8]) -> Option<Credentials> {
    if stored.is_empty() {
        return Some(Credentials {
            native_digest: None,
            sha2_digest: None,
        });
    }
    if stored.len() != AUTHENTICATION_BYTES {
        return None;
    }
    let mut native = [0u8; 20];
    native.copy_from_slice(&stored[..20]);
    let mut sha2 = [0u8; 32];
    sha2.copy_from_slice(&stored[20..]);
    Some(Credentials {
        native_digest: Some(native),
        sha2_digest: Some(sha2),
    })
}

/// The hosts an account may be stored under for a client at `peer`, most
/// specific first: the address itself, `localhost` for loopback clients
/// (as MySQL resolves them), then `%`.
pub fn candidate_hosts(peer: &str) -> Vec<String> {
    let mut hosts = vec![peer.to_string()];
    let loopback =
        peer == "127.0.0.1" || peer == "::1" || peer == "localhost" || peer.starts_with("127.");
    if loopback && peer != "localhost" {
        hosts.push("localhost".into());
    }
    hosts.push("%".into());
    hosts
}

/// Looks up `user` for a client at `peer`: the matching account's host and
/// credentials, or `None` (1045 to the client, without saying which).
pub fn lookup(
    native: &mut shoal_client::Session,
    user: &str,
    peer: &str,
) -> Result<Option<(String, Credentials)>, SqlError> {
    let route = native
        .table(catalog::USER_TABLE)
        .map_err(crate::session::cluster_error)?;
    let mut transaction = native
        .start_transaction(None)
        .map_err(crate::session::cluster_error)?;
    let hosts = candidate_hosts(peer);
    let mut reads = Vec::with_capacity(hosts.len());
    for host in &hosts {
        let key = [
            (0, Value::Bytes(host.as_bytes().to_vec())),
            (1, Value::Bytes(user.as_bytes().to_vec())),
        ];
        let read = transaction
            .read(&route, &key, &[3], LockMode::Committed)
            .map_err(crate::session::cluster_error)?;
        transaction
            .ignore_error(read)
            .map_err(crate::session::cluster_error)?;
        reads.push(read);
    }
    native
        .execute(&mut transaction, ExecuteEnd::Commit)
        .map_err(crate::session::cluster_error)?;
    for (host, read) in hosts.into_iter().zip(reads) {
        match transaction.row(read) {
            Ok(row) => {
                let stored = match row.get(3) {
                    Some(Value::Bytes(bytes)) => bytes.clone(),
                    _ => Vec::new(),
                };
                return Ok(credentials(&stored).map(|c| (host, c)));
            }
            Err(e) if e.ndb_code == 626 => {}
            Err(e) => return Err(crate::session::cluster_error(e)),
        }
    }
    Ok(None)
}

fn check_account(account: &Account) -> Result<(), SqlError> {
    if account.user.chars().count() > USER_NAME_LENGTH_MAX {
        return Err(SqlError::new(
            1470,
            format!(
                "String '{}' is too long for user name (should be no longer than {USER_NAME_LENGTH_MAX})",
                account.user
            ),
        ));
    }
    if account.host.chars().count() > HOST_NAME_LENGTH_MAX {
        return Err(SqlError::new(
            1470,
            format!(
                "String '{}' is too long for host name (should be no longer than {HOST_NAME_LENGTH_MAX})",
                account.host
            ),
        ));
    }
    Ok(())
}

fn account_text(account: &Account) -> String {
    format!("'{}'@'{}'", account.user, account.host)
}

fn key_of(account: &Account) -> [(ColumnId, Value); 2] {
    [
        (0, Value::Bytes(account.host.as_bytes().to_vec())),
        (1, Value::Bytes(account.user.as_bytes().to_vec())),
    ]
}

/// Runs an account statement.
pub fn run(session: &mut Session, statement: &AccountStatement) -> StatementResult {
    session.commit()?;
    let route = session
        .native
        .table(catalog::USER_TABLE)
        .map_err(crate::session::cluster_error)?;
    match statement {
        AccountStatement::Create {
            if_not_exists,
            accounts,
        } => {
            session.server.count_command("create_user");
            let mut failed = Vec::new();
            for (account, password) in accounts {
                check_account(account)?;
                let row = user_row(
                    &account.host,
                    &account.user,
                    password.as_deref().unwrap_or(""),
                );
                let insert = single_operation(&mut session.native, |t| t.insert(&route, &row))?;
                match insert {
                    Ok(()) => {}
                    Err(e) if e.ndb_code == 630 => {
                        if *if_not_exists {
                            session.note(
                                WarningLevel::Note,
                                3163,
                                format!(
                                    "Authorization ID {} already exists.",
                                    account_text(account)
                                ),
                            );
                        } else {
                            failed.push(account_text(account));
                        }
                    }
                    Err(e) => return Err(crate::session::cluster_error(e)),
                }
            }
            if !failed.is_empty() {
                return Err(SqlError::new(
                    1396,
                    format!("Operation CREATE USER failed for {}", failed.join(",")),
                ));
            }
            Ok(Outcome::done(0))
        }
        AccountStatement::Alter {
            if_exists,
            accounts,
        } => {
            let mut failed = Vec::new();
            for (account, password) in accounts {
                check_account(account)?;
                let Some(password) = password else {
                    continue;
                };
                if !set_password(session, &route, account, password)? {
                    if *if_exists {
                        session.note(
                            WarningLevel::Note,
                            3162,
                            format!("Authorization ID {} does not exist.", account_text(account)),
                        );
                    } else {
                        failed.push(account_text(account));
                    }
                }
            }
            if !failed.is_empty() {
                return Err(SqlError::new(
                    1396,
                    format!("Operation ALTER USER failed for {}", failed.join(",")),
                ));
            }
            Ok(Outcome::done(0))
        }
        AccountStatement::Drop {
            if_exists,
            accounts,
        } => {
            session.server.count_command("drop_user");
            let mut failed = Vec::new();
            for account in accounts {
                let key = key_of(account);
                let delete = single_operation(&mut session.native, |t| t.delete(&route, &key))?;
                match delete {
                    Ok(()) => {}
                    Err(e) if e.ndb_code == 626 => {
                        if *if_exists {
                            session.note(
                                WarningLevel::Note,
                                3162,
                                format!(
                                    "Authorization ID {} does not exist.",
                                    account_text(account)
                                ),
                            );
                        } else {
                            failed.push(account_text(account));
                        }
                    }
                    Err(e) => return Err(crate::session::cluster_error(e)),
                }
            }
            if !failed.is_empty() {
                return Err(SqlError::new(
                    1396,
                    format!("Operation DROP USER failed for {}", failed.join(",")),
                ));
            }
            Ok(Outcome::done(0))
        }
        AccountStatement::SetPassword { account, password } => {
            let account = account.clone().unwrap_or(Account {
                user: session.user.clone(),
                host: session.host.clone(),
            });
            if !set_password(session, &route, &account, password)? {
                return Err(SqlError::new(
                    1133,
                    "Can't find any matching row in the user table",
                ));
            }
            Ok(Outcome::done(0))
        }
    }
}

/// Sets an existing account's password; false when there is no such account.
fn set_password(
    session: &mut Session,
    route: &std::sync::Arc<shoal_client::TableRoute>,
    account: &Account,
    password: &str,
) -> Result<bool, SqlError> {
    let key = key_of(account);
    let values = [(3, Value::Bytes(authentication_string(password)))];
    match single_operation(&mut session.native, |t| t.update(route, &key, &values))? {
        Ok(()) => Ok(true),
        Err(e) if e.ndb_code == 626 => Ok(false),
        Err(e) => Err(crate::session::cluster_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_clients_match_localhost_accounts() {
        assert_eq!(
            candidate_hosts("127.0.0.1"),
            vec!["127.0.0.1", "localhost", "%"]
        );
        assert_eq!(candidate_hosts("10.0.0.5"), vec!["10.0.0.5", "%"]);
        assert_eq!(candidate_hosts("localhost"), vec!["localhost", "%"]);
    }

    #[test]
    fn stored_credentials_decode_or_are_refused() {
        assert_eq!(
            credentials(&[]),
            Some(Credentials {
                native_digest: None,
                sha2_digest: None
            })
        );
        let stored = authentication_string("pw");
        assert_eq!(stored.len(), AUTHENTICATION_BYTES);
        let decoded = credentials(&stored).unwrap();
        assert_eq!(
            decoded.native_digest.unwrap(),
            mysql_protocol::native_password_digest(b"pw")
        );
        assert!(credentials(&stored[..10]).is_none());
    }
}
