//! The first pass: config.ini text to a [`Document`] of sections, each with
//! the checked values it sets.
//!
//! This pass knows the format and the parameter table: it rejects unknown
//! sections and keys, malformed lines, values that do not read or are out
//! of range, and keys set twice. It does not look across sections; that is
//! `validate.rs`, which can then trust every stored value to be in range.
//!
//! Repeated sections stay separate (each `[ndbd]` is a node), which is why
//! this is not a generic INI parser. The `[x default]` sections of one kind
//! are merged into one set of values, because NDB applies them to every
//! section of the kind wherever they appear in the file.

use crate::error::ConfigError;
use crate::parameters::{Lookup, PARAMETERS, Parameter, SectionKind, ValueKind, lookup};
use crate::value::{ValueError, format_size, parse_boolean, parse_integer, parse_size};

/// A checked value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// Integers, milliseconds, bytes, and booleans as 1 or 0.
    Number(u64),
    Text(String),
}

/// A value and the line that set it, for errors found later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    pub value: Value,
    pub line: u32,
}

/// Settings indexed like [`PARAMETERS`].
pub(crate) type Settings = Vec<Option<Setting>>;

/// One non-default section: a node or a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub kind: SectionKind,
    /// The line of the section header.
    pub line: u32,
    pub settings: Settings,
}

/// A parsed file: the sections in file order and, per kind, the merged
/// values of its `[x default]` sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Document {
    pub sections: Vec<Section>,
    /// Indexed by [`SectionKind::index`].
    pub defaults: Vec<Settings>,
}

/// Where the lines being read go.
#[derive(Debug, Clone, Copy)]
struct Target {
    kind: SectionKind,
    is_default: bool,
}

/// Reads the sections and values of `text`, stopping at the first problem.
pub(crate) fn parse_document(text: &str, file: &str) -> Result<Document, ConfigError> {
    let mut document = Document {
        sections: Vec::new(),
        defaults: SectionKind::ALL.iter().map(|_| empty_settings()).collect(),
    };
    let mut target: Option<Target> = None;
    // Editors on some systems start a file with a byte order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, raw_line) in text.lines().enumerate() {
        let line = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let content = strip_comment(raw_line).trim();
        if content.is_empty() {
            continue;
        }
        if content.starts_with('[') {
            let (kind, is_default) = parse_header(content, file, line)?;
            if !is_default {
                document.sections.push(Section {
                    kind,
                    line,
                    settings: empty_settings(),
                });
            }
            target = Some(Target { kind, is_default });
            continue;
        }
        let (key, written_value) = split_key_value(content, file, line)?;
        let Some(target) = target else {
            return Err(ConfigError::new(
                file,
                line,
                Some(key),
                "parameter outside any section; put it under a section header such as [ndbd]",
            ));
        };
        let header = target.kind.header(target.is_default);
        let index = match lookup(key, target.kind) {
            Lookup::Found(index) => index,
            Lookup::WrongSection(parameter) => {
                let homes: Vec<String> = parameter
                    .sections
                    .iter()
                    .map(|kind| kind.header(false))
                    .collect();
                return Err(ConfigError::new(
                    file,
                    line,
                    Some(key),
                    format!(
                        "unknown parameter in {header} section ({} belongs in {})",
                        parameter.name,
                        homes.join(" or ")
                    ),
                ));
            }
            Lookup::Unknown => {
                return Err(ConfigError::new(
                    file,
                    line,
                    Some(key),
                    format!("unknown parameter in {header} section"),
                ));
            }
        };
        let parameter = &PARAMETERS[index];
        if target.is_default && parameter.per_node {
            return Err(ConfigError::new(
                file,
                line,
                Some(key),
                format!(
                    "cannot be set in a {header} section: {} names one {}, so set it in each \
                     {} section",
                    parameter.name,
                    if target.kind == SectionKind::Tcp {
                        "connection"
                    } else {
                        "node"
                    },
                    target.kind.header(false)
                ),
            ));
        }
        let value = parse_value(parameter, written_value)
            .map_err(|message| ConfigError::new(file, line, Some(key), message))?;
        let settings = if target.is_default {
            &mut document.defaults[target.kind.index()]
        } else {
            let section = document
                .sections
                .last_mut()
                .expect("a non-default target always has its section pushed");
            &mut section.settings
        };
        if let Some(first) = &settings[index] {
            let place = if target.is_default {
                format!("a {header} section")
            } else {
                "this section".to_string()
            };
            return Err(ConfigError::new(
                file,
                line,
                Some(key),
                format!(
                    "{} is given twice in {place} (first on line {}); keep one",
                    parameter.name, first.line
                ),
            ));
        }
        settings[index] = Some(Setting { value, line });
    }
    Ok(document)
}

fn empty_settings() -> Settings {
    vec![None; PARAMETERS.len()]
}

/// The line without its comment. A comment is a whole line starting with
/// `#` or `;`, or the rest of a line from a `#` or `;` that follows
/// whitespace (so `DataDir=/data/c#1` keeps its `#`).
fn strip_comment(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') || trimmed.starts_with(';') {
        return "";
    }
    let mut previous_is_whitespace = false;
    for (at, character) in line.char_indices() {
        if previous_is_whitespace && (character == '#' || character == ';') {
            return &line[..at];
        }
        previous_is_whitespace = character.is_whitespace();
    }
    line
}

/// Reads `[ndbd]` or `[ndbd default]` (any case, any spacing).
fn parse_header(content: &str, file: &str, line: u32) -> Result<(SectionKind, bool), ConfigError> {
    let Some(inner) = content
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    else {
        return Err(ConfigError::new(
            file,
            line,
            Some(content),
            "section header without a closing `]`",
        ));
    };
    let words: Vec<&str> = inner.split_whitespace().collect();
    let parsed = match words.as_slice() {
        [name] => SectionKind::from_name(name).map(|kind| (kind, false)),
        [name, default] if default.eq_ignore_ascii_case("default") => {
            SectionKind::from_name(name).map(|kind| (kind, true))
        }
        _ => None,
    };
    parsed.ok_or_else(|| {
        ConfigError::new(
            file,
            line,
            Some(content),
            "unknown section (expected ndbd, ndb_mgmd, mysqld, api or tcp, optionally followed \
             by `default`)",
        )
    })
}

/// Splits `key=value` or `key: value` at the first `=` or `:`, trimming
/// both sides.
fn split_key_value<'line>(
    content: &'line str,
    file: &str,
    line: u32,
) -> Result<(&'line str, &'line str), ConfigError> {
    let Some(at) = content.find(['=', ':']) else {
        return Err(ConfigError::new(
            file,
            line,
            None,
            format!("expected `key=value` or `key: value`, found `{content}`"),
        ));
    };
    let key = content[..at].trim();
    let value = content[at + 1..].trim();
    if key.is_empty() {
        return Err(ConfigError::new(
            file,
            line,
            None,
            format!("no parameter name before the `{}`", &content[at..at + 1]),
        ));
    }
    Ok((key, value))
}

/// Reads and range-checks one value; the error is the message alone.
fn parse_value(parameter: &Parameter, written: &str) -> Result<Value, String> {
    let describe = |error: ValueError| error.describe(written);
    let number = match parameter.kind {
        ValueKind::Text => {
            if written.is_empty() {
                return Err(describe(ValueError::Empty));
            }
            return Ok(Value::Text(written.to_string()));
        }
        ValueKind::Boolean => u64::from(parse_boolean(written).map_err(describe)?),
        ValueKind::Integer | ValueKind::Milliseconds => parse_integer(written).map_err(describe)?,
        ValueKind::Size => parse_size(written).map_err(describe)?,
    };
    if !(parameter.min..=parameter.max).contains(&number) {
        let range = match parameter.kind {
            ValueKind::Size => format!(
                "{}..={} bytes",
                format_size(parameter.min),
                format_size(parameter.max)
            ),
            ValueKind::Milliseconds => format!("{}..={} ms", parameter.min, parameter.max),
            _ => format!("{}..={}", parameter.min, parameter.max),
        };
        return Err(format!("`{written}` is out of range {range}"));
    }
    Ok(Value::Number(number))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_whole_lines_or_follow_whitespace() {
        assert_eq!(strip_comment("# all of it"), "");
        assert_eq!(strip_comment("   ; all of it"), "");
        assert_eq!(strip_comment("DataMemory=80M # rows"), "DataMemory=80M ");
        assert_eq!(strip_comment("DataMemory=80M\t;rows"), "DataMemory=80M\t");
        assert_eq!(strip_comment("DataDir=/data/c#1"), "DataDir=/data/c#1");
    }

    #[test]
    fn headers_take_any_case_spacing_and_aliases() {
        let header = |text| parse_header(text, "f", 1);
        assert_eq!(header("[NDBD]"), Ok((SectionKind::DataNode, false)));
        assert_eq!(header("[ db ]"), Ok((SectionKind::DataNode, false)));
        assert_eq!(header("[ndbmtd]"), Ok((SectionKind::DataNode, false)));
        assert_eq!(
            header("[mgm  DEFAULT]"),
            Ok((SectionKind::Management, true))
        );
        assert_eq!(header("[TCP default]"), Ok((SectionKind::Tcp, true)));
        assert!(header("[ndbd extra]").is_err());
        assert!(header("[]").is_err());
        assert!(header("[ndbd").is_err());
    }

    #[test]
    fn default_sections_of_one_kind_merge() {
        let document = parse_document(
            "[ndbd default]\nDataMemory=2M\n[ndbd]\n[ndbd default]\nRedoBuffer=4M\n",
            "f",
        )
        .expect("parses");
        assert_eq!(document.sections.len(), 1);
        let defaults = &document.defaults[SectionKind::DataNode.index()];
        assert_eq!(defaults.iter().flatten().count(), 2);
    }
}
