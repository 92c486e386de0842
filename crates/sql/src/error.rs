//! Errors of the SQL layer: a MySQL error code, its SQLSTATE and a message,
//! exactly what goes into an ERR packet.

use std::fmt;

/// An error a statement ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    /// MySQL's error number (1064, 1146, ...).
    pub code: u16,
    /// The five-character SQLSTATE.
    pub sqlstate: [u8; 5],
    pub message: String,
}

impl SqlError {
    /// An error with MySQL code `code`; the SQLSTATE is MySQL's for it.
    pub fn new(code: u16, message: impl Into<String>) -> SqlError {
        SqlError {
            code,
            sqlstate: sqlstate_of(code),
            message: message.into(),
        }
    }

    /// 1064: the statement does not parse.
    pub fn syntax(detail: impl fmt::Display) -> SqlError {
        SqlError::new(
            1064,
            format!("You have an error in your SQL syntax; {detail}"),
        )
    }

    /// 1235: valid SQL that Shoal does not run yet.
    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new(
            1235,
            format!("This version of Shoal doesn't yet support '{what}'"),
        )
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            String::from_utf8_lossy(&self.sqlstate),
            self.message
        )
    }
}

impl std::error::Error for SqlError {}

/// MySQL's SQLSTATE for an error code (`include/mysqld_ername.h`); `HY000`
/// for the codes that have no specific one.
pub fn sqlstate_of(code: u16) -> [u8; 5] {
    let state: &[u8; 5] = match code {
        1022 | 1062 | 1586 => b"23000",
        1048 | 1451 | 1452 => b"23000",
        1040 => b"08004",
        1044 | 1045 | 1142 | 1143 | 1227 => b"28000",
        1046 => b"3D000",
        1049 => b"42000",
        1050 => b"42S01",
        1051 | 1146 => b"42S02",
        1054 => b"42S22",
        1052 | 1060 | 1061 | 1064 | 1059 | 1063 | 1067 | 1068 | 1075 | 1102 | 1103 | 1166
        | 1149 | 1235 | 1231 | 1232 | 1110 | 1091 => b"42000",
        1053 => b"08S01",
        1153 => b"08S01",
        1136 => b"21S01",
        1192 => b"25000",
        1205 | 1213 => b"40001",
        1264 | 1406 => b"22003",
        1292 => b"22007",
        1265 => b"01000",
        1690 => b"22003",
        1582 | 1305 => b"42000",
        1441 => b"22008",
        1366 | 1367 => b"HY000",
        1364 => b"HY000",
        1365 => b"22012",
        1193 => b"HY000",
        1317 => b"70100",
        _ => b"HY000",
    };
    // 1406 is "22001" (string data, right truncation), not 22003.
    if code == 1406 {
        return *b"22001";
    }
    *state
}
