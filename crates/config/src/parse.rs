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
    /// The NDB parameters set in the file that Shoal does not act on, in
    /// file order, each checked like any other value.
    pub without_effect: Vec<IgnoredSetting>,
}

/// An NDB parameter accepted without effect, and where it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IgnoredSetting {
    pub name: &'static str,
    pub line: u32,
    /// The section that set it: an index into `Document::sections`, or the
    /// kind of a `[x default]` section. Only used to refuse a key given
    /// twice in one section.
    scope: Scope,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Section(usize),
    Default(SectionKind),
}

/// The most characters of the file's own text an error repeats: a value or
/// line longer than this is cut, so a runaway line (a pasted binary, a
/// missing newline) does not flood the terminal.
const ECHO_CHARS_MAX: usize = 80;

/// `text` as an error repeats it: whole when short, else its first
/// [`ECHO_CHARS_MAX`] characters and how long it really was.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS_MAX) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}... ({} bytes in all)", &text[..cut], text.len()),
    }
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
        without_effect: Vec::new(),
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
            Lookup::WithoutEffect(parameter) => {
                check_per_node(parameter, target, key, file, line)?;
                parse_value(parameter, written_value)
                    .map_err(|message| ConfigError::new(file, line, Some(key), message))?;
                let scope = if target.is_default {
                    Scope::Default(target.kind)
                } else {
                    Scope::Section(document.sections.len() - 1)
                };
                if let Some(first) = document
                    .without_effect
                    .iter()
                    .find(|setting| setting.scope == scope && setting.name == parameter.name)
                {
                    return Err(given_twice(parameter, target, first.line, key, file, line));
                }
                document.without_effect.push(IgnoredSetting {
                    name: parameter.name,
                    line,
                    scope,
                });
                continue;
            }
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
        check_per_node(parameter, target, key, file, line)?;
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
            return Err(given_twice(parameter, target, first.line, key, file, line));
        }
        settings[index] = Some(Setting { value, line });
    }
    Ok(document)
}

/// Refuses a key that names one node or connection in a `[x default]`
/// section.
fn check_per_node(
    parameter: &Parameter,
    target: Target,
    key: &str,
    file: &str,
    line: u32,
) -> Result<(), ConfigError> {
    if !target.is_default || !parameter.per_node {
        return Ok(());
    }
    Err(ConfigError::new(
        file,
        line,
        Some(key),
        format!(
            "cannot be set in a {} section: {} names one {}, so set it in each {} section",
            target.kind.header(true),
            parameter.name,
            if target.kind.is_node() {
                "node"
            } else {
                "connection"
            },
            target.kind.header(false)
        ),
    ))
}

fn given_twice(
    parameter: &Parameter,
    target: Target,
    first_line: u32,
    key: &str,
    file: &str,
    line: u32,
) -> ConfigError {
    let place = if target.is_default {
        format!("a {} section", target.kind.header(true))
    } else {
        "this section".to_string()
    };
    ConfigError::new(
        file,
        line,
        Some(key),
        format!(
            "{} is given twice in {place} (first on line {first_line}); keep one",
            parameter.name
        ),
    )
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
            Some(&excerpt(content)),
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
            Some(&excerpt(content)),
            "unknown section (expected ndbd, ndb_mgmd, mysqld, api, tcp, shm, system or \
             computer, optionally followed by `default`)",
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
            format!(
                "expected `key=value` or `key: value`, found `{}`",
                excerpt(content)
            ),
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
    let shown = excerpt(written);
    let describe = |error: ValueError| error.describe(&shown);
    let number = match parameter.kind {
        ValueKind::Text => {
            if written.is_empty() {
                return Err(describe(ValueError::Empty));
            }
            return Ok(Value::Text(written.to_string()));
        }
        ValueKind::Choice(words) => {
            return match words.iter().find(|word| word.eq_ignore_ascii_case(written)) {
                Some(word) => Ok(Value::Text((*word).to_string())),
                None => Err(format!("`{shown}` is not one of {}", words.join(", "))),
            };
        }
        ValueKind::CpuList => {
            check_cpu_list(written, parameter.max)?;
            return Ok(Value::Text(written.to_string()));
        }
        ValueKind::Boolean => u64::from(parse_boolean(written).map_err(describe)?),
        // NDB reads every integer with an optional K, M or G suffix.
        ValueKind::Integer | ValueKind::Milliseconds | ValueKind::Size => {
            // A word is no number, whatever its last letter.
            if written.starts_with(|first: char| first.is_alphabetic()) {
                return Err(describe(ValueError::NotANumber));
            }
            parse_size(written).map_err(describe)?
        }
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
        let note = if parameter.range_note.is_empty() {
            String::new()
        } else {
            format!(" ({})", parameter.range_note)
        };
        return Err(format!("`{shown}` is out of range {range}{note}"));
    }
    Ok(Value::Number(number))
}

/// Checks a CPU list such as `0-3,8,10-11`: ids and ascending ranges of
/// ids, each at most `cpu_max`, separated by commas.
fn check_cpu_list(written: &str, cpu_max: u64) -> Result<(), String> {
    let shown = excerpt(written);
    if written.is_empty() {
        return Err(ValueError::Empty.describe(&shown));
    }
    let cpu = |text: &str| -> Result<u64, String> {
        let id = parse_integer(text.trim())
            .map_err(|_| format!("`{shown}` is not a CPU list such as `0-3,8`"))?;
        if id > cpu_max {
            return Err(format!(
                "`{shown}` names CPU {id}, out of range 0..={cpu_max}"
            ));
        }
        Ok(id)
    };
    for part in written.split(',') {
        match part.split_once('-') {
            Some((first, last)) => {
                if cpu(first)? > cpu(last)? {
                    return Err(format!(
                        "`{shown}` has the range `{}` whose end is below its start",
                        part.trim()
                    ));
                }
            }
            None => {
                cpu(part)?;
            }
        }
    }
    Ok(())
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
