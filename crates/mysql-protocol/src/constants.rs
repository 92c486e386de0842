//! The protocol's numbers: capability flags (4 bytes in the handshake),
//! server status flags (2 bytes in OK and EOF packets), command bytes
//! (the first byte of every command packet), cursor flags of
//! COM_STMT_EXECUTE, and the error codes this crate sends.

/// Capability flags (`CLIENT_*` in `include/mysql_com.h`). The server
/// advertises its set in the handshake, the client answers with its own,
/// and the connection uses what both have.
pub mod capabilities {
    /// Use the improved version of the old password hashing.
    pub const CLIENT_LONG_PASSWORD: u32 = 1;
    /// Report found rows instead of changed rows as affected rows.
    pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
    /// Column flags are sent as 2 bytes.
    pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
    /// The handshake response may name a database.
    pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
    /// Do not allow `database.table.column`.
    pub const CLIENT_NO_SCHEMA: u32 = 1 << 4;
    /// zlib compression of the packets.
    pub const CLIENT_COMPRESS: u32 = 1 << 5;
    /// Legacy ODBC flag, no effect.
    pub const CLIENT_ODBC: u32 = 1 << 6;
    /// `LOAD DATA LOCAL` may read client files.
    pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
    /// Spaces before `(` are ignored in function names.
    pub const CLIENT_IGNORE_SPACE: u32 = 1 << 8;
    /// The 4.1 protocol: the only one this crate speaks.
    pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
    /// Interactive client: `interactive_timeout` applies.
    pub const CLIENT_INTERACTIVE: u32 = 1 << 10;
    /// The client switches to TLS after the SSLRequest packet.
    pub const CLIENT_SSL: u32 = 1 << 11;
    /// Client-side only: ignore SIGPIPE.
    pub const CLIENT_IGNORE_SIGPIPE: u32 = 1 << 12;
    /// The client understands the transaction status flags.
    pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
    /// Old flag for the 4.1 protocol.
    pub const CLIENT_RESERVED: u32 = 1 << 14;
    /// 4.1 authentication: the auth response has a 1-byte length.
    pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
    /// Several statements in one COM_QUERY.
    pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
    /// Several result sets for one command.
    pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
    /// Several result sets for one COM_STMT_EXECUTE.
    pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
    /// Pluggable authentication: plugin names in the handshake.
    pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
    /// Connection attributes in the handshake response.
    pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
    /// The auth response is a length-encoded string.
    pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    /// The client can handle expired passwords (sandbox mode).
    pub const CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
    /// Session state change information in OK packets.
    pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
    /// OK packets (header 0xFE) replace EOF packets.
    pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
    /// The client may skip result-set metadata.
    pub const CLIENT_OPTIONAL_RESULTSET_METADATA: u32 = 1 << 25;
    /// zstd compression of the packets.
    pub const CLIENT_ZSTD_COMPRESSION_ALGORITHM: u32 = 1 << 26;
    /// Query attributes precede COM_QUERY and COM_STMT_EXECUTE data.
    /// Never advertised here, so commands carry no attributes.
    pub const CLIENT_QUERY_ATTRIBUTES: u32 = 1 << 27;
    /// Multi-factor authentication.
    pub const MULTI_FACTOR_AUTHENTICATION: u32 = 1 << 28;
    /// Reserved for extending the flags.
    pub const CLIENT_CAPABILITY_EXTENSION: u32 = 1 << 29;
    /// Client-side only: verify the server's certificate.
    pub const CLIENT_SSL_VERIFY_SERVER_CERT: u32 = 1 << 30;
    /// Client-side only: keep options after a failed connect.
    pub const CLIENT_REMEMBER_OPTIONS: u32 = 1 << 31;

    /// What this server always advertises; `CLIENT_SSL` and
    /// `CLIENT_SESSION_TRACK` are added by configuration.
    pub const SERVER_DEFAULT: u32 = CLIENT_LONG_PASSWORD
        | CLIENT_FOUND_ROWS
        | CLIENT_LONG_FLAG
        | CLIENT_CONNECT_WITH_DB
        | CLIENT_IGNORE_SPACE
        | CLIENT_PROTOCOL_41
        | CLIENT_INTERACTIVE
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_STATEMENTS
        | CLIENT_MULTI_RESULTS
        | CLIENT_PS_MULTI_RESULTS
        | CLIENT_PLUGIN_AUTH
        | CLIENT_CONNECT_ATTRS
        | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CLIENT_DEPRECATE_EOF;
}

/// Server status flags (`SERVER_STATUS_*`), sent in OK and EOF packets.
pub mod status {
    /// A transaction is open.
    pub const SERVER_STATUS_IN_TRANS: u16 = 1;
    /// Autocommit is on.
    pub const SERVER_STATUS_AUTOCOMMIT: u16 = 1 << 1;
    /// Another result set follows this one.
    pub const SERVER_MORE_RESULTS_EXISTS: u16 = 1 << 3;
    /// The query used an index, but not a good one.
    pub const SERVER_STATUS_NO_GOOD_INDEX_USED: u16 = 1 << 4;
    /// The query used no index.
    pub const SERVER_STATUS_NO_INDEX_USED: u16 = 1 << 5;
    /// A cursor is open (COM_STMT_EXECUTE with a cursor).
    pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 1 << 6;
    /// The cursor's last row was sent.
    pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 1 << 7;
    /// The current database was dropped.
    pub const SERVER_STATUS_DB_DROPPED: u16 = 1 << 8;
    /// `NO_BACKSLASH_ESCAPES` is in the SQL mode.
    pub const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 1 << 9;
    /// A prepared statement's metadata changed since it was prepared.
    pub const SERVER_STATUS_METADATA_CHANGED: u16 = 1 << 10;
    /// The query was slow.
    pub const SERVER_QUERY_WAS_SLOW: u16 = 1 << 11;
    /// The result set holds a procedure's OUT parameters.
    pub const SERVER_PS_OUT_PARAMS: u16 = 1 << 12;
    /// The open transaction is read-only.
    pub const SERVER_STATUS_IN_TRANS_READONLY: u16 = 1 << 13;
    /// Session state changed; the OK packet carries the changes.
    pub const SERVER_SESSION_STATE_CHANGED: u16 = 1 << 14;
}

/// Command bytes (`enum_server_command`): the first byte of a command packet.
pub mod commands {
    /// Internal server state; refused as a command.
    pub const COM_SLEEP: u8 = 0x00;
    /// The client is leaving.
    pub const COM_QUIT: u8 = 0x01;
    /// Change the default database.
    pub const COM_INIT_DB: u8 = 0x02;
    /// Run SQL text.
    pub const COM_QUERY: u8 = 0x03;
    /// List a table's columns (deprecated).
    pub const COM_FIELD_LIST: u8 = 0x04;
    /// Create a database (removed in MySQL 8.0).
    pub const COM_CREATE_DB: u8 = 0x05;
    /// Drop a database (removed in MySQL 8.0).
    pub const COM_DROP_DB: u8 = 0x06;
    /// Flush tables, logs, ... (deprecated).
    pub const COM_REFRESH: u8 = 0x07;
    /// Shut the server down (removed in MySQL 8.0).
    pub const COM_SHUTDOWN: u8 = 0x08;
    /// A short status string.
    pub const COM_STATISTICS: u8 = 0x09;
    /// The process list (deprecated).
    pub const COM_PROCESS_INFO: u8 = 0x0A;
    /// Internal server state; refused as a command.
    pub const COM_CONNECT: u8 = 0x0B;
    /// Kill a connection (deprecated in favour of KILL).
    pub const COM_PROCESS_KILL: u8 = 0x0C;
    /// Dump debug information to the server log.
    pub const COM_DEBUG: u8 = 0x0D;
    /// Check that the server is alive.
    pub const COM_PING: u8 = 0x0E;
    /// Internal server state; refused as a command.
    pub const COM_TIME: u8 = 0x0F;
    /// Internal server state; refused as a command.
    pub const COM_DELAYED_INSERT: u8 = 0x10;
    /// Re-authenticate as another user and reset the session.
    pub const COM_CHANGE_USER: u8 = 0x11;
    /// Replication: stream the binary log.
    pub const COM_BINLOG_DUMP: u8 = 0x12;
    /// Replication: dump a table (removed).
    pub const COM_TABLE_DUMP: u8 = 0x13;
    /// Internal server state; refused as a command.
    pub const COM_CONNECT_OUT: u8 = 0x14;
    /// Replication: register a replica.
    pub const COM_REGISTER_SLAVE: u8 = 0x15;
    /// Prepare a statement.
    pub const COM_STMT_PREPARE: u8 = 0x16;
    /// Execute a prepared statement.
    pub const COM_STMT_EXECUTE: u8 = 0x17;
    /// Send part of a prepared statement's parameter.
    pub const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
    /// Deallocate a prepared statement.
    pub const COM_STMT_CLOSE: u8 = 0x19;
    /// Reset a prepared statement's long data and cursor.
    pub const COM_STMT_RESET: u8 = 0x1A;
    /// Turn multi-statements on or off.
    pub const COM_SET_OPTION: u8 = 0x1B;
    /// Fetch rows from a prepared statement's cursor.
    pub const COM_STMT_FETCH: u8 = 0x1C;
    /// Internal server state; refused as a command.
    pub const COM_DAEMON: u8 = 0x1D;
    /// Replication: stream the binary log from a GTID set.
    pub const COM_BINLOG_DUMP_GTID: u8 = 0x1E;
    /// Reset the session without re-authenticating.
    pub const COM_RESET_CONNECTION: u8 = 0x1F;
    /// The clone plugin's protocol.
    pub const COM_CLONE: u8 = 0x20;
}

/// The flags byte of COM_STMT_EXECUTE (`enum_cursor_type`).
pub mod cursor {
    /// Results come back at once, no cursor.
    pub const CURSOR_TYPE_NO_CURSOR: u8 = 0;
    /// A read-only cursor read with COM_STMT_FETCH.
    pub const CURSOR_TYPE_READ_ONLY: u8 = 1;
    /// A cursor for update.
    pub const CURSOR_TYPE_FOR_UPDATE: u8 = 2;
    /// A scrollable cursor.
    pub const CURSOR_TYPE_SCROLLABLE: u8 = 4;
    /// The parameter count precedes the parameters (only with query
    /// attributes, which this server does not advertise).
    pub const PARAMETER_COUNT_AVAILABLE: u8 = 8;
    /// The bits that ask for a cursor.
    pub const CURSOR_TYPE_MASK: u8 =
        CURSOR_TYPE_READ_ONLY | CURSOR_TYPE_FOR_UPDATE | CURSOR_TYPE_SCROLLABLE;
}

/// The values of COM_SET_OPTION.
pub mod set_option {
    /// Enable several statements per COM_QUERY.
    pub const MYSQL_OPTION_MULTI_STATEMENTS_ON: u16 = 0;
    /// Disable several statements per COM_QUERY.
    pub const MYSQL_OPTION_MULTI_STATEMENTS_OFF: u16 = 1;
}

/// Error codes this crate sends, or that the runtime needs around it.
pub mod error_codes {
    /// "Unknown database '%s'" (42000).
    pub const ER_BAD_DB_ERROR: u16 = 1049;
    /// "Access denied for user '%s'@'%s' (using password: %s)" (28000).
    pub const ER_ACCESS_DENIED_ERROR: u16 = 1045;
    /// "Bad handshake" (08S01).
    pub const ER_HANDSHAKE_ERROR: u16 = 1043;
    /// "Unknown command" (08S01).
    pub const ER_UNKNOWN_COM_ERROR: u16 = 1047;
    /// "Got a packet bigger than 'max_allowed_packet' bytes" (08S01).
    pub const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
    /// "Got packets out of order" (08S01).
    pub const ER_NET_PACKETS_OUT_OF_ORDER: u16 = 1156;
    /// "Client does not support authentication protocol requested by
    /// server; consider upgrading MySQL client" (08004).
    pub const ER_NOT_SUPPORTED_AUTH_MODE: u16 = 1251;
    /// "Malformed communication packet." (HY000).
    pub const ER_MALFORMED_PACKET: u16 = 1835;
}

/// The collation the server announces: `utf8mb4_0900_ai_ci`.
pub const UTF8MB4_0900_AI_CI: u8 = 255;

/// The collation of numbers and byte strings in column definitions.
pub const BINARY_COLLATION: u16 = 63;

/// The handshake protocol version: 10 since MySQL 3.21.
pub const PROTOCOL_VERSION: u8 = 10;
