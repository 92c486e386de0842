//! The one error type of the crate: what is wrong with a config.ini, and
//! where.
//!
//! Parsing stops at the first error, so there is only ever one to report,
//! and it always names the file and line so the operator can go straight to
//! it. Errors about the cluster as a whole (no `[ndbd]` section at all) have
//! no line; they carry line 0 and display without one.

use std::fmt;

/// A config.ini that cannot be used, with the place to fix it.
///
/// Displays as `config.ini:12: DataMemroy: unknown parameter in [ndbd]
/// section`: file, line, then the parameter (or the section header, for
/// errors about a section) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file name given to [`crate::parse`].
    pub file: String,
    /// The 1-based line to fix; 0 when the problem belongs to no line.
    pub line: u32,
    /// The parameter as written (or its canonical name when the problem was
    /// found after parsing), or the section header such as `[ndbx]` for
    /// errors about a section; `None` when no key is involved.
    pub key: Option<String>,
    /// What is wrong, in a sentence that says what is expected.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(
        file: &str,
        line: u32,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: file.to_string(),
            line,
            // A key can be a whole runaway line; the error repeats only its
            // start.
            key: key.map(crate::parse::excerpt),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:", self.file)?;
        if self.line != 0 {
            write!(formatter, "{}:", self.line)?;
        }
        if let Some(key) = &self.key {
            write!(formatter, " {key}:")?;
        }
        write!(formatter, " {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_key() {
        let error = ConfigError::new(
            "config.ini",
            12,
            Some("DataMemroy"),
            "unknown parameter in [ndbd] section",
        );
        assert_eq!(
            error.to_string(),
            "config.ini:12: DataMemroy: unknown parameter in [ndbd] section"
        );
    }

    #[test]
    fn display_leaves_out_a_missing_line_and_key() {
        let error = ConfigError::new("config.ini", 0, None, "no [ndbd] section");
        assert_eq!(error.to_string(), "config.ini: no [ndbd] section");
    }
}
