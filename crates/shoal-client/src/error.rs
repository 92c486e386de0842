//! Errors as the NDB API reports them: NDB's code, MySQL's, a message that
//! says what to do, and a class that says whether to retry.

use protocol::ErrorReply;

/// NDB's error classification, reduced to what an application acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retry the transaction: lock timeouts, node failures, full resources.
    Temporary,
    /// Retrying gives the same error: no such row, duplicate key, bad value.
    Permanent,
    /// The commit may or may not have happened (the connection failed while
    /// it was in flight): read back before retrying.
    UnknownResult,
}

/// An error with NDB's code where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    pub ndb_code: u16,
    pub mysql_code: u16,
    pub message: String,
}

/// NDB's 4009: cluster failure, no connection to the cluster.
pub const CLUSTER_FAILURE: u16 = 4009;
/// NDB's 4010: node failure caused abort of transaction.
pub const NODE_FAILURE: u16 = 4010;
/// NDB's 4008: receive from NDB failed — with a commit in flight, the
/// result is unknown.
pub const RECEIVE_FAILED: u16 = 4008;
/// NDB's 4012: request timed out waiting for the data node.
pub const REQUEST_TIMEOUT_CODE: u16 = 4012;
/// A usage error in the API itself (NDB's 4000 range).
pub const API_USAGE: u16 = 4264;

impl ClientError {
    pub(crate) fn new(ndb_code: u16, message: impl Into<String>) -> ClientError {
        ClientError {
            ndb_code,
            mysql_code: if ndb_code == API_USAGE { 1105 } else { 1296 },
            message: message.into(),
        }
    }

    pub(crate) fn connection(message: impl Into<String>) -> ClientError {
        ClientError::new(CLUSTER_FAILURE, message)
    }

    pub(crate) fn usage(message: impl Into<String>) -> ClientError {
        ClientError::new(API_USAGE, message)
    }

    /// An error of the schema layer (values, keys, indexes), with its NDB
    /// and MySQL codes.
    pub(crate) fn schema(code: schema::ErrorCode, message: impl Into<String>) -> ClientError {
        ClientError {
            ndb_code: code.ndb_code().unwrap_or(4000),
            mysql_code: code.mysql_code(),
            message: message.into(),
        }
    }

    pub(crate) fn reply(error: ErrorReply) -> ClientError {
        ClientError {
            ndb_code: error.ndb_code,
            mysql_code: error.mysql_code,
            message: error.message,
        }
    }

    /// The error behind an operation's NDB code (results carry only codes).
    pub(crate) fn from_code(ndb_code: u16) -> ClientError {
        let (mysql_code, message) = match ndb_code {
            626 => (1032, "Tuple did not exist"),
            630 => (1062, "Tuple already existed when attempting to insert"),
            893 => (
                1062,
                "Constraint violation e.g. duplicate value in unique index",
            ),
            4243 => (1176, "Index not found"),
            266 => (
                1205,
                "Time-out in NDB, probably caused by deadlock: lock wait timeout exceeded; \
                 try restarting transaction",
            ),
            827 => (
                1114,
                "Out of memory in Ndb Kernel, table data (increase DataMemory)",
            ),
            839 => (1048, "Illegal null attribute"),
            4209 => (1406, "Data too long for column"),
            723 => (1146, "No such table existed"),
            _ => (1296, "operation failed"),
        };
        ClientError {
            ndb_code,
            mysql_code,
            message: message.to_string(),
        }
    }

    pub fn class(&self) -> ErrorClass {
        classify(self.ndb_code)
    }

    /// Whether retrying may succeed (NDB's temporary error class).
    pub fn is_temporary(&self) -> bool {
        self.class() == ErrorClass::Temporary
    }
}

/// The class of an NDB error code.
pub fn classify(ndb_code: u16) -> ErrorClass {
    match ndb_code {
        // Lock wait timeout, out of records (TC and LDM), too many scans
        // and transactions, node failure, cluster failure, dictionary busy,
        // request to a non-president, send buffers, redo overload, a data
        // node whose connection slots are taken, a data node not yet a
        // member, a distribution that changed under a request, a node id
        // still held by an old connection being checked (5020), a cluster
        // shutting down (270).
        266 | 233 | 1217 | 488 | 4006 | NODE_FAILURE | CLUSTER_FAILURE | 702 | 711 | 1218
        | 1220 | 410 | 1234 | 5019 | 5020 | 4035 | 270 | 1204 => ErrorClass::Temporary,
        RECEIVE_FAILED | REQUEST_TIMEOUT_CODE => ErrorClass::UnknownResult,
        _ => ErrorClass::Permanent,
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {}", self.ndb_code, self.message)
    }
}

impl std::error::Error for ClientError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// NDB files 827 (out of DataMemory) under "insufficient space", a
    /// class whose status is permanent: retrying the same transaction fails
    /// the same way until rows are deleted or DataMemory grows.
    #[test]
    fn out_of_data_memory_is_permanent_as_in_ndb() {
        let error = ClientError::from_code(827);
        assert_eq!(error.mysql_code, 1114);
        assert_eq!(error.class(), ErrorClass::Permanent);
        assert!(!error.is_temporary());
        assert!(!schema::ErrorCode::TableFull.is_temporary());
        assert_eq!(schema::ErrorCode::TableFull.ndb_code(), Some(827));
        assert_eq!(schema::ErrorCode::TableFull.mysql_code(), 1114);
    }

    /// The engine's temporary errors are temporary to a client too: a
    /// retry loop that takes 270 (a cluster shutting down) or 410 as
    /// permanent gives up on work that would succeed.
    #[test]
    fn the_engines_temporary_errors_are_temporary_to_clients() {
        use schema::ErrorCode::*;
        for code in [
            LockWaitTimeout,
            TooManyOperations,
            TooManyTransactions,
            TooManyCoordinatorOperations,
            NodeFailure,
            NotMember,
            NodeShutdown,
            DistributionChanged,
            TooManyScans,
            RedoLogFull,
            RedoBufferFull,
        ] {
            assert!(code.is_temporary(), "{code:?}");
            let ndb_code = code.ndb_code().expect("a temporary error has an NDB code");
            assert_eq!(classify(ndb_code), ErrorClass::Temporary, "{code:?}");
        }
    }
}
