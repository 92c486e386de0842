//! Errors with the NDB and MySQL codes a user of NDB expects to see.
//!
//! `ErrorCode` is `Copy` and carries static messages so that the engine can
//! return an error on a hot path (a read of a missing key, a lock timeout)
//! without touching the heap. `Error` adds an optional detail for the cold
//! paths (schema validation) where naming the column helps the user.

use std::borrow::Cow;
use std::fmt;

/// Every error the storage engine and schema layer can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A read, update or delete found no row with the key.
    NoSuchRow,
    /// An insert found a row with the key already.
    DuplicateKey,
    /// DataMemory has no free page for the row or index entry.
    TableFull,
    /// A lock wait exceeded `TransactionDeadlockDetectionTimeout`.
    LockWaitTimeout,
    /// A row (or a table's largest possible row) exceeds the row size limit.
    RowTooLarge,
    /// A NOT NULL column was given NULL or left out of an insert.
    NullNotAllowed,
    /// A value is longer than its column allows.
    DataTooLong,
    /// A value does not fit its column's type or range.
    WrongValue,
    /// The table id or name is unknown.
    NoSuchTable,
    /// The table name is in use.
    TableExists,
    /// A column id or name is unknown in the table.
    NoSuchColumn,
    /// A column or index definition is not valid (sizes, precision, names).
    WrongColumnSpec,
    /// A table needs a primary key (Shoal has no hidden key yet).
    PrimaryKeyRequired,
    /// A BLOB or TEXT column cannot be part of a key.
    BlobInKey,
    /// More indexes than `ordered_indexes_per_table_max`.
    TooManyKeys,
    /// More columns than `columns_per_table_max`.
    TooManyColumns,
    /// The key given to an operation does not name exactly the key columns.
    WrongKey,
    /// The operation record pool (`MaxNoOfConcurrentOperations`) is empty.
    TooManyOperations,
    /// The transaction pool (`MaxNoOfConcurrentTransactions`) is empty.
    TooManyTransactions,
    /// The scan pool is empty.
    TooManyScans,
    /// The transaction id is not active (never began, already committed or aborted).
    NoSuchTransaction,
    /// The scan id is not open.
    NoSuchScan,
    /// An operation arrived in a state that does not allow it (commit before prepare, ...).
    WrongTransactionState,
    /// A pushed filter program is malformed.
    InvalidFilter,
    /// The configured size is not usable (too small, too large).
    BadConfiguration,
    /// A table option (an `NDB_TABLE=` comment) is malformed or unknown.
    IllegalTableOption,
    /// A table would have more partitions than `PARTITIONS_MAX`.
    TooManyPartitions,
    /// A table was given `PARTITIONS 0`.
    NoPartitions,
    /// An encoded table definition is corrupt or from a newer format version.
    CorruptTableDefinition,
    /// A distribution key (`PARTITION BY KEY`) column is not in the primary key.
    DistributionKeyOutsidePrimaryKey,
    /// A distribution key (`PARTITION BY KEY`) names a column the table lacks.
    NoSuchDistributionKeyColumn,
    /// A distribution key (`PARTITION BY KEY`) names a column twice.
    DuplicateDistributionKeyColumn,
    /// The transaction coordinator has no operation record free.
    TooManyCoordinatorOperations,
    /// A node the transaction used failed; the transaction was aborted.
    NodeFailure,
    /// This data node is not (yet) a member of the cluster: it takes no
    /// transactions until it is (NDB's 4035, a temporary error).
    NotMember,
    /// The cluster is shutting down: the node takes no new transactions,
    /// and one still open when the shutdown's wait ends is aborted (NDB's
    /// 270, a temporary error: retry once the cluster is back).
    NodeShutdown,
    /// A request reached a replica whose view of the cluster does not yet
    /// place the fragment there (NDB's 1204, a temporary error).
    DistributionChanged,
    /// The redo log's files have no room until a local checkpoint frees
    /// some (NDB 410).
    RedoLogFull,
    /// The redo log's buffer is full: the disk does not keep up (NDB 1234).
    RedoBufferFull,
    /// The transaction coordinator is busy with this transaction (an
    /// execute arrived before the previous one was answered).
    TransactionBusy,
    /// A write would give a unique index a second row with the same key.
    UniqueViolation,
    /// The operation names an index the table does not have (or one that
    /// is not unique, for a unique-index operation).
    NoSuchIndex,
}

impl ErrorCode {
    /// The NDB error number, where NDB has one for this condition.
    pub fn ndb_code(self) -> Option<u16> {
        use ErrorCode::*;
        Some(match self {
            NoSuchRow => 626,
            DuplicateKey => 630,
            TableFull => 827,
            LockWaitTimeout => 266,
            RowTooLarge => 738,
            NullNotAllowed => 839,
            DataTooLong => 4209,
            NoSuchTable => 723,
            TableExists => 721,
            NoSuchColumn => 4004,
            TooManyOperations => 1217,
            TooManyTransactions => 4006,
            TooManyCoordinatorOperations => 233,
            NodeFailure => 4010,
            NotMember => 4035,
            NodeShutdown => 270,
            DistributionChanged => 1204,
            RedoLogFull => 410,
            RedoBufferFull => 1234,
            TransactionBusy => 4102,
            UniqueViolation => 893,
            NoSuchIndex => 4243,
            TooManyScans => 488,
            NoSuchTransaction => 4350,
            WrongKey => 4259,
            InvalidFilter => 4260,
            WrongTransactionState => 4000,
            WrongValue
            | WrongColumnSpec
            | PrimaryKeyRequired
            | BlobInKey
            | TooManyKeys
            | TooManyColumns
            | NoSuchScan
            | BadConfiguration
            | IllegalTableOption
            | TooManyPartitions
            | NoPartitions
            | CorruptTableDefinition
            | DistributionKeyOutsidePrimaryKey
            | NoSuchDistributionKeyColumn
            | DuplicateDistributionKeyColumn => return None,
        })
    }

    /// The MySQL error number a SQL client sees.
    pub fn mysql_code(self) -> u16 {
        use ErrorCode::*;
        match self {
            NoSuchRow => 1032,
            DuplicateKey | UniqueViolation => 1062,
            NoSuchIndex => 1176,
            TableFull => 1114,
            LockWaitTimeout => 1205,
            RowTooLarge => 1118,
            NullNotAllowed => 1048,
            DataTooLong => 1406,
            WrongValue => 1366,
            NoSuchTable => 1146,
            TableExists => 1050,
            NoSuchColumn => 1054,
            WrongColumnSpec => 1063,
            PrimaryKeyRequired => 1173,
            BlobInKey => 1170,
            TooManyKeys => 1069,
            TooManyColumns => 1117,
            IllegalTableOption => 1478,
            TooManyPartitions => 1499,
            NoPartitions => 1504,
            CorruptTableDefinition => 1033,
            DistributionKeyOutsidePrimaryKey => 1503,
            NoSuchDistributionKeyColumn => 1488,
            DuplicateDistributionKeyColumn => 1652,
            TooManyOperations
            | TooManyTransactions
            | TooManyScans
            | TooManyCoordinatorOperations
            | NodeFailure
            | NotMember
            | NodeShutdown
            | DistributionChanged
            | RedoLogFull
            | RedoBufferFull => 1297,
            TransactionBusy => 1105,
            WrongKey
            | NoSuchTransaction
            | NoSuchScan
            | WrongTransactionState
            | InvalidFilter
            | BadConfiguration => 1105,
        }
    }

    /// Whether retrying the whole transaction may succeed (NDB's "temporary error").
    pub fn is_temporary(self) -> bool {
        matches!(
            self,
            ErrorCode::LockWaitTimeout
                | ErrorCode::TooManyOperations
                | ErrorCode::TooManyTransactions
                | ErrorCode::TooManyCoordinatorOperations
                | ErrorCode::NodeFailure
                | ErrorCode::NotMember
                | ErrorCode::NodeShutdown
                | ErrorCode::DistributionChanged
                | ErrorCode::TooManyScans
                | ErrorCode::RedoLogFull
                | ErrorCode::RedoBufferFull
        )
    }

    /// The message, in the words NDB and MySQL use, with what to do about it.
    pub fn message(self) -> &'static str {
        use ErrorCode::*;
        match self {
            NoSuchRow => "Tuple did not exist",
            DuplicateKey => "Tuple already existed when attempting to insert",
            TableFull => {
                "Out of memory in Ndb Kernel, table data (increase DataMemory): The table is full"
            }
            LockWaitTimeout => {
                "Time-out in NDB, probably caused by deadlock: Lock wait timeout exceeded; try restarting transaction"
            }
            RowTooLarge => "Row size too large; the maximum row size is 30000 bytes",
            NullNotAllowed => "Illegal null attribute: column cannot be null",
            DataTooLong => "Data too long for column",
            WrongValue => "Incorrect value for column",
            NoSuchTable => "No such table existed",
            TableExists => "Table already exists",
            NoSuchColumn => "Unknown column",
            WrongColumnSpec => "Incorrect column specifier",
            PrimaryKeyRequired => "This table type requires a primary key",
            BlobInKey => "BLOB/TEXT column used in key specification",
            TooManyKeys => "Too many keys specified",
            TooManyColumns => "Too many columns",
            WrongKey => "The key does not name exactly the key columns of the table or index",
            UniqueViolation => "Constraint violation e.g. duplicate value in unique index",
            NoSuchIndex => "Index not found",
            TooManyOperations => {
                "Out of operation records in local data manager (increase MaxNoOfConcurrentOperations)"
            }
            TooManyTransactions => {
                "Out of transaction records (increase MaxNoOfConcurrentTransactions)"
            }
            TooManyScans => "Too many active scans (increase MaxNoOfConcurrentScans)",
            NoSuchTransaction => "Unknown or already finished transaction",
            NoSuchScan => "Unknown or already closed scan",
            WrongTransactionState => "Operation not allowed in the transaction's current state",
            InvalidFilter => "Interpreted program of the pushed condition is invalid",
            BadConfiguration => "Invalid configuration value",
            IllegalTableOption => {
                "Table storage engine 'ndbcluster' does not support the create option"
            }
            TooManyPartitions => "Too many partitions (including subpartitions) were defined",
            NoPartitions => "Number of partitions = 0 is not an allowed value",
            CorruptTableDefinition => {
                "Incorrect information in table definition: it is corrupt or from a newer Shoal"
            }
            DistributionKeyOutsidePrimaryKey => {
                "A PRIMARY KEY must include all columns in the table's partitioning function"
            }
            NoSuchDistributionKeyColumn => {
                "Field in list of fields for partition function not found in table"
            }
            DuplicateDistributionKeyColumn => "Duplicate partition field name",
            TooManyCoordinatorOperations => {
                "Out of operation records in transaction coordinator (increase MaxNoOfConcurrentOperations)"
            }
            NodeFailure => "Node failure caused abort of transaction; try it again",
            NotMember => {
                "Cluster temporary unavailable: this data node is not a member of the cluster yet; try it again"
            }
            NodeShutdown => {
                "Transaction aborted due to node shutdown; try it again once the cluster is back"
            }
            DistributionChanged => "Temporary failure, distribution changed; try it again",
            RedoLogFull => {
                "REDO log files overloaded (decrease TimeBetweenLocalCheckpoints or increase NoOfFragmentLogFiles)"
            }
            RedoBufferFull => "REDO log files overloaded (increase disk hardware)",
            TransactionBusy => {
                "The transaction is still executing its previous batch: wait for its answer first"
            }
        }
    }
}

/// An error code with an optional detail for the user (which column, which limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub detail: Cow<'static, str>,
}

impl Error {
    pub fn new(code: ErrorCode, detail: impl Into<Cow<'static, str>>) -> Error {
        Error {
            code,
            detail: detail.into(),
        }
    }
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Error {
        Error {
            code,
            detail: Cow::Borrowed(""),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ndb_code() {
            Some(ndb) => write!(
                f,
                "ERROR {} (NDB {}): {}",
                self.mysql_code(),
                ndb,
                self.message()
            ),
            None => write!(f, "ERROR {}: {}", self.mysql_code(), self.message()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{} ({})", self.code, self.detail)
        }
    }
}

impl std::error::Error for Error {}
