//! The statement cache: a text statement's parsed tree, kept per session
//! under the statement with its literals taken out, so the next statement
//! that differs only in its values (`INSERT ... VALUES (0, 8705, '...')`,
//! `... WHERE id = 42`) is not parsed again.
//!
//! A literal taken out becomes a marker placeholder (`LITERAL_MARKER` and
//! its index) in the tokens handed to the parser; while the statement
//! runs, the compiler reads each marker as the literal it stands for
//! (`with_literals`). The tree the statement runs is therefore the same as
//! a fresh parse would give, literal for literal: only literals whose
//! meaning does not depend on being written out are taken. Left in place,
//! and so part of the key:
//! - literals of a SELECT's select list (they name the column) and of
//!   ORDER BY and GROUP BY (a number there is a position);
//! - literals after a word that is not an operator (`DATE '...'`,
//!   `_utf8mb4'...'`, `INTERVAL 1 DAY`, `ESCAPE '!'`: the parser wants the
//!   literal itself);
//! - every statement with a subquery, a UNION or `INSERT ... SELECT`, and
//!   any statement that is not SELECT, INSERT, REPLACE, UPDATE or DELETE.
//!
//! A statement whose marked tokens do not parse is run the ordinary way,
//! which reports its error as usual.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use sqlparser::ast;
use sqlparser::tokenizer::Token;

use crate::parse::{Parsed, StatementTokens};

/// Statements one session keeps parsed. When it is full the cache starts
/// over: a workload of a few statement shapes refills it at once, and one
/// of ever new shapes gains nothing from keeping them.
pub const STATEMENT_CACHE_ENTRIES_MAX: usize = 256;
/// Longest key kept: a statement longer than this (a bulk INSERT of many
/// rows) is parsed each time; its parse is small beside its work.
pub const STATEMENT_CACHE_KEY_BYTES_MAX: usize = 4096;
/// Starts a marker placeholder's text; a client's `?` never does.
pub const LITERAL_MARKER: char = '\u{1}';

/// A statement's tokens without their literals.
pub struct Stripped {
    pub key: String,
    pub literals: Vec<ast::Value>,
    /// Where each literal was, in `tokens`.
    positions: Vec<usize>,
}

impl Stripped {
    /// The tokens to parse: the statement's, each taken literal replaced
    /// by its marker.
    pub fn marked_tokens(&self, statement: &StatementTokens) -> StatementTokens {
        let mut tokens = statement.tokens.clone();
        for (index, &position) in self.positions.iter().enumerate() {
            tokens[position] = Token::Placeholder(format!("{LITERAL_MARKER}{index}"));
        }
        StatementTokens {
            tokens,
            placeholders: 0,
        }
    }
}

/// Which literals of the current clause may be taken out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Zone {
    /// Kept: part of the key.
    Keep,
    Strip,
}

/// What a word means to the readers of this module.
#[derive(Clone, Copy, Default)]
struct WordRole {
    /// A statement this cache keeps: SELECT, INSERT, REPLACE, UPDATE, DELETE.
    cached_statement: bool,
    /// SELECT or UNION past the first word: a subquery or a union.
    nested_query: bool,
    /// Starts a clause whose literals may be taken out.
    strip_zone: bool,
    /// Starts a clause whose literals stay in the key.
    keep_zone: bool,
    /// A literal after it is an operand like any other.
    operand_follows: bool,
}

/// The role of an unquoted word, by its spelling in any case: one match
/// on the word in capitals (the lists were searched word by word, which
/// was a tenth of a quick read).
fn word_role(word: &str) -> WordRole {
    /// Longer than every word with a role.
    const LONGEST: usize = 8;
    if word.len() > LONGEST {
        return WordRole::default();
    }
    let mut capitals = [0u8; LONGEST];
    for (capital, byte) in capitals.iter_mut().zip(word.bytes()) {
        *capital = byte.to_ascii_uppercase();
    }
    let role = |cached_statement, nested_query, strip_zone, keep_zone, operand_follows| WordRole {
        cached_statement,
        nested_query,
        strip_zone,
        keep_zone,
        operand_follows,
    };
    match &capitals[..word.len()] {
        b"SELECT" => role(true, true, false, false, false),
        b"INSERT" | b"REPLACE" | b"DELETE" => role(true, false, false, false, false),
        b"UPDATE" => role(true, false, true, false, true),
        b"UNION" => role(false, true, false, false, false),
        b"WHERE" | b"LIMIT" | b"VALUES" | b"VALUE" | b"SET" => {
            role(false, false, true, false, true)
        }
        b"ORDER" | b"GROUP" | b"HAVING" | b"FOR" | b"LOCK" | b"INTO" => {
            role(false, false, false, true, false)
        }
        b"AND" | b"OR" | b"XOR" | b"NOT" | b"IN" | b"BETWEEN" | b"LIKE" | b"IS" | b"OFFSET"
        | b"THEN" | b"ELSE" | b"WHEN" | b"CASE" | b"DIV" | b"MOD" => {
            role(false, false, false, false, true)
        }
        _ => WordRole::default(),
    }
}

/// Words after which a literal is an operand like any other.
fn operand_follows(word: &str) -> bool {
    word_role(word).operand_follows
}

/// The statement's key and literals, or `None` when it is not cached.
pub fn strip(statement: &StatementTokens) -> Option<Stripped> {
    let tokens = &statement.tokens;
    if statement.placeholders > 0 {
        return None;
    }
    let first = match tokens.first()? {
        Token::Word(word) if word.quote_style.is_none() => word.value.to_ascii_uppercase(),
        _ => return None,
    };
    if !matches!(
        first.as_str(),
        "SELECT" | "INSERT" | "REPLACE" | "UPDATE" | "DELETE"
    ) {
        return None;
    }
    let mut zone = Zone::Keep;
    let mut key = String::with_capacity(128);
    let mut literals = Vec::new();
    let mut positions = Vec::new();
    for (position, token) in tokens.iter().enumerate() {
        if position > 0 {
            key.push(' ');
        }
        match token {
            Token::Word(word) if word.quote_style.is_some() => {
                // Length first, so no quoted name runs into the next token.
                let _ = write!(
                    key,
                    "{:?}{}:{}",
                    word.quote_style,
                    word.value.len(),
                    word.value
                );
            }
            Token::Word(word) => {
                let upper = word.value.to_ascii_uppercase();
                match upper.as_str() {
                    // A subquery, a UNION, INSERT ... SELECT.
                    "SELECT" if position > 0 => return None,
                    "UNION" => return None,
                    "WHERE" | "LIMIT" | "VALUES" | "VALUE" | "SET" => zone = Zone::Strip,
                    // `ON DUPLICATE KEY UPDATE`.
                    "UPDATE" if position > 0 => zone = Zone::Strip,
                    "ORDER" | "GROUP" | "HAVING" | "FOR" | "LOCK" | "INTO" => zone = Zone::Keep,
                    _ => {}
                }
                key.push_str(&word.value);
            }
            Token::Number(..) | Token::SingleQuotedString(_)
                if zone == Zone::Strip && stripped_after(tokens, position) =>
            {
                key.push(LITERAL_MARKER);
                literals.push(match token {
                    Token::Number(text, long) => ast::Value::Number(text.clone(), *long),
                    Token::SingleQuotedString(text) => ast::Value::SingleQuotedString(text.clone()),
                    _ => unreachable!("matched above"),
                });
                positions.push(position);
            }
            Token::Placeholder(text) if text.starts_with(LITERAL_MARKER) => return None,
            // Debug text quotes and escapes what a literal holds, so two
            // different statements never share a key.
            other => {
                let _ = write!(key, "{other:?}");
            }
        }
        if key.len() > STATEMENT_CACHE_KEY_BYTES_MAX {
            return None;
        }
    }
    if literals.is_empty() {
        return None;
    }
    Some(Stripped {
        key,
        literals,
        positions,
    })
}

/// Whether the literal at `position` follows a token after which any
/// operand may stand.
fn stripped_after(tokens: &[Token], position: usize) -> bool {
    match position.checked_sub(1).map(|p| &tokens[p]) {
        Some(Token::Word(word)) => word.quote_style.is_none() && operand_follows(&word.value),
        Some(
            Token::LParen
            | Token::Comma
            | Token::Eq
            | Token::Neq
            | Token::Lt
            | Token::Gt
            | Token::LtEq
            | Token::GtEq
            | Token::Spaceship
            | Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod,
        ) => true,
        _ => false,
    }
}

/// Starts the key of a statement read by `quick_strip`, so its keys and
/// `strip`'s never meet.
const QUICK_KEY_PREFIX: char = '\u{2}';

/// A statement's text with its literals taken out, read without the
/// parser's tokenizer (which was most of a cached INSERT's cost).
pub struct QuickStripped {
    pub key: String,
    pub literals: Vec<ast::Value>,
}

/// What the previous token of `quick_strip` was, for `stripped_after`'s
/// rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Previous {
    /// A word or operator after which any operand may stand.
    OperandFollows,
    Other,
}

/// The key and literals of a single statement read straight from its
/// text, or `None` when the text holds anything this reader does not take
/// as sure as the tokenizer (comments, escapes, quotes doubled, hex or
/// exponent numbers, `?`, a second statement, names not in ASCII).
///
/// The key is the text itself with every taken literal replaced by
/// `LITERAL_MARKER`, so two statements share a key only when they differ
/// in those literals alone. Which literals are taken follows `strip`'s
/// rules; a shape is used from the cache only after `strip` took the same
/// literals from it (see `Session::run_query`), so the two readers never
/// disagree on a shape that runs.
pub fn quick_strip(text: &str) -> Option<QuickStripped> {
    let bytes = text.as_bytes();
    let mut key = String::with_capacity(text.len() + 1);
    key.push(QUICK_KEY_PREFIX);
    let mut literals = Vec::new();
    let mut zone = Zone::Keep;
    let mut previous = Previous::Other;
    let mut first_word = true;
    let mut position = 0;
    while position < bytes.len() {
        let byte = bytes[position];
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' => {
                key.push(byte as char);
                position += 1;
            }
            b'\'' | b'"' => {
                let end = position + 1 + bytes[position + 1..].iter().position(|&b| b == byte)?;
                let content = &text[position + 1..end];
                if content.contains('\\') || bytes.get(end + 1) == Some(&byte) {
                    return None;
                }
                if zone == Zone::Strip && previous == Previous::OperandFollows {
                    key.push(LITERAL_MARKER);
                    literals.push(ast::Value::SingleQuotedString(content.to_string()));
                } else {
                    key.push_str(&text[position..=end]);
                }
                previous = Previous::Other;
                position = end + 1;
            }
            b'`' => {
                let end = position + 1 + bytes[position + 1..].iter().position(|&b| b == b'`')?;
                if bytes.get(end + 1) == Some(&b'`') {
                    return None;
                }
                key.push_str(&text[position..=end]);
                previous = Previous::Other;
                position = end + 1;
            }
            b'0'..=b'9' => {
                let mut end = position;
                while end < bytes.len() && bytes[end].is_ascii_digit() {
                    end += 1;
                }
                if bytes.get(end) == Some(&b'.') {
                    end += 1;
                    let digits = end;
                    while end < bytes.len() && bytes[end].is_ascii_digit() {
                        end += 1;
                    }
                    if end == digits {
                        return None;
                    }
                }
                // `1e5`, `0x1F`, `1abc` (a name), `1.2.3`: the tokenizer's.
                if bytes
                    .get(end)
                    .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))
                {
                    return None;
                }
                if zone == Zone::Strip && previous == Previous::OperandFollows {
                    key.push(LITERAL_MARKER);
                    literals.push(ast::Value::Number(text[position..end].to_string(), false));
                } else {
                    key.push_str(&text[position..end]);
                }
                previous = Previous::Other;
                position = end;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let mut end = position;
                while end < bytes.len()
                    && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_')
                {
                    end += 1;
                }
                // `x'1F'`, `_utf8mb4'a'`, `N'a'`, `a$b`: the tokenizer's.
                if bytes
                    .get(end)
                    .is_some_and(|&b| matches!(b, b'\'' | b'"' | b'$') || !b.is_ascii())
                {
                    return None;
                }
                let word = &text[position..end];
                let role = word_role(word);
                if first_word {
                    if !role.cached_statement {
                        return None;
                    }
                    first_word = false;
                } else {
                    if role.nested_query {
                        return None;
                    }
                    if role.strip_zone {
                        zone = Zone::Strip;
                    } else if role.keep_zone {
                        zone = Zone::Keep;
                    }
                }
                previous = if role.operand_follows {
                    Previous::OperandFollows
                } else {
                    Previous::Other
                };
                key.push_str(word);
                position = end;
            }
            // Comments, `?`, `.5`, a second statement, user variables'
            // quoting and everything else not plain: the tokenizer's.
            b'#' | b'?' | b'$' | b'\\' | b'{' | b'}' => return None,
            b'-' if bytes.get(position + 1) == Some(&b'-') => return None,
            b'/' if bytes.get(position + 1) == Some(&b'*') => return None,
            b'.' if bytes.get(position + 1).is_some_and(u8::is_ascii_digit) => return None,
            b';' => {
                if !bytes[position + 1..].iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                break;
            }
            b'(' | b')' | b',' | b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'=' | b'<' | b'>'
            | b'!' | b'|' | b'&' | b'^' | b'~' | b':' | b'@' => {
                // The operator's whole spelling, for `stripped_after`'s list.
                let mut end = position + 1;
                if matches!(byte, b'<' | b'>' | b'!' | b'|' | b'&' | b':' | b'=' | b'-') {
                    while end < bytes.len()
                        && end - position < 3
                        && matches!(bytes[end], b'<' | b'>' | b'=' | b'|' | b'&')
                    {
                        end += 1;
                    }
                }
                let operator = &text[position..end];
                previous = if matches!(
                    operator,
                    "(" | ","
                        | "="
                        | "!="
                        | "<>"
                        | "<"
                        | ">"
                        | "<="
                        | ">="
                        | "<=>"
                        | "+"
                        | "-"
                        | "*"
                        | "/"
                        | "%"
                ) {
                    Previous::OperandFollows
                } else {
                    Previous::Other
                };
                key.push_str(operator);
                position = end;
            }
            _ => return None,
        }
        if key.len() > STATEMENT_CACHE_KEY_BYTES_MAX {
            return None;
        }
    }
    if first_word || literals.is_empty() {
        return None;
    }
    Some(QuickStripped { key, literals })
}

/// A session's parsed statements by key.
#[derive(Default)]
pub struct StatementCache {
    /// `None` for a shape whose marked tokens do not parse: it runs the
    /// ordinary way without being tried again.
    entries: HashMap<String, Option<Arc<Parsed>>>,
    pub hits: u64,
    pub misses: u64,
}

impl StatementCache {
    /// The tree of `stripped`'s shape, parsed now if it is new; `None`
    /// when the shape cannot run from the cache.
    pub fn parsed(
        &mut self,
        stripped: &Stripped,
        statement: &StatementTokens,
    ) -> Option<Arc<Parsed>> {
        if let Some(entry) = self.entries.get(&stripped.key) {
            self.hits += 1;
            return entry.clone();
        }
        self.misses += 1;
        let parsed = crate::parse::parse(&stripped.marked_tokens(statement))
            .ok()
            .map(Arc::new);
        if self.entries.len() >= STATEMENT_CACHE_ENTRIES_MAX {
            self.entries.clear();
        }
        self.entries.insert(stripped.key.clone(), parsed.clone());
        parsed
    }

    /// The tree of a `quick_strip` shape: `None` when the shape is new,
    /// `Some(None)` when it runs the ordinary way.
    pub fn quick(&mut self, quick: &QuickStripped) -> Option<Option<Arc<Parsed>>> {
        let entry = self.entries.get(&quick.key)?.clone();
        if entry.is_some() {
            self.hits += 1;
        }
        Some(entry)
    }

    /// Remembers a `quick_strip` shape: its tree when `strip` took the
    /// same literals from it (so the marker numbers agree), else `None`.
    pub fn remember_quick(
        &mut self,
        quick: QuickStripped,
        stripped: Option<&Stripped>,
        parsed: Option<Arc<Parsed>>,
    ) {
        let agrees = stripped.is_some_and(|stripped| stripped.literals == quick.literals);
        if self.entries.len() >= STATEMENT_CACHE_ENTRIES_MAX {
            self.entries.clear();
        }
        self.entries
            .insert(quick.key, if agrees { parsed } else { None });
    }
}

thread_local! {
    /// The literals of the statement this thread runs from the cache.
    /// A session runs one statement at a time, and the compiler, deep
    /// below the statement, has no session to ask. A thread that runs
    /// several sessions as tasks (the SQL node's workers) keeps each
    /// task's literals with the task while it is suspended
    /// (`swap_literals`), so a statement that compiles after waiting for
    /// the cluster reads its own.
    static LITERALS: RefCell<Vec<ast::Value>> = const { RefCell::new(Vec::new()) };
}

/// Exchanges the literals of the statement this thread runs with
/// `other`: a task that suspends takes its statement's out, and puts them
/// back when it resumes.
pub fn swap_literals(other: &mut Vec<ast::Value>) {
    LITERALS.with(|current| std::mem::swap(&mut *current.borrow_mut(), other));
}

/// Runs `run` with `literals` standing for the markers it compiles.
pub fn with_literals<R>(literals: Vec<ast::Value>, run: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            LITERALS.with(|current| current.borrow_mut().clear());
        }
    }
    LITERALS.with(|current| *current.borrow_mut() = literals);
    let _clear = Clear;
    run()
}

/// `read` of the literal marker `text` stands for, without a copy of it;
/// `None` if `text` is no marker of the statement being run. `read` may
/// read other markers, not run a statement.
pub fn with_literal<R>(text: &str, read: impl FnOnce(&ast::Value) -> R) -> Option<R> {
    let index: usize = text.strip_prefix(LITERAL_MARKER)?.parse().ok()?;
    LITERALS.with(|current| current.borrow().get(index).map(read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::split;

    fn key(text: &str) -> Option<(String, usize)> {
        let statements = split(text).expect("tokens");
        strip(&statements[0]).map(|s| (s.key.replace(LITERAL_MARKER, "#"), s.literals.len()))
    }

    fn literal(marker: &str) -> Option<ast::Value> {
        with_literal(marker, ast::Value::clone)
    }

    #[test]
    fn a_suspended_statement_keeps_its_literals_while_another_runs() {
        let mine = vec![ast::Value::Number("7".into(), false)];
        let marker = format!("{LITERAL_MARKER}0");
        with_literals(mine, || {
            // Suspending: the task takes its literals along.
            let mut kept = Vec::new();
            swap_literals(&mut kept);
            assert_eq!(literal(&marker), None);
            // Another task's statement runs meanwhile, start to end.
            with_literals(vec![ast::Value::Number("8".into(), false)], || {
                assert_eq!(
                    literal(&marker),
                    Some(ast::Value::Number("8".into(), false))
                );
            });
            // Resuming: its own are back.
            swap_literals(&mut kept);
            assert!(kept.is_empty());
            assert_eq!(
                literal(&marker),
                Some(ast::Value::Number("7".into(), false))
            );
        });
        assert_eq!(literal(&marker), None);
    }

    #[test]
    fn values_and_conditions_are_taken_out() {
        let (a, n) = key("INSERT INTO t (id, c) VALUES (0, 'abc')").expect("cached");
        assert_eq!(n, 2);
        assert_eq!(
            key("INSERT INTO t (id, c) VALUES (17, 'x')")
                .expect("cached")
                .0,
            a
        );
        assert_eq!(
            key("SELECT c FROM t WHERE id = 5 LIMIT 10")
                .expect("cached")
                .0,
            "SELECT c FROM t WHERE id Eq # LIMIT #"
        );
        assert_eq!(
            key("UPDATE t SET k = k + 1 WHERE id = 3")
                .expect("cached")
                .0,
            "UPDATE t SET k Eq k Plus # WHERE id Eq #"
        );
        // Quoted names and kept strings cannot run into each other.
        assert_ne!(
            key("SELECT 'a', 'b' FROM t WHERE id = 1"),
            key("SELECT 'a'', ''b' FROM t WHERE id = 1")
        );
    }

    #[test]
    fn literals_that_name_or_position_stay() {
        // The select list names the column; ORDER BY 1 is a position.
        assert_eq!(
            key("SELECT 1, 'a' FROM t WHERE id = 2 ORDER BY 1")
                .expect("cached")
                .0,
            "SELECT Number(\"1\", false) Comma SingleQuotedString(\"a\") FROM t WHERE id Eq # \
             ORDER BY Number(\"1\", false)"
        );
        // Typed literals and introducers need the literal itself.
        assert_eq!(
            key("SELECT c FROM t WHERE d = DATE '2020-01-01' AND e = 3")
                .expect("cached")
                .0,
            "SELECT c FROM t WHERE d Eq DATE SingleQuotedString(\"2020-01-01\") AND e Eq #"
        );
        assert_eq!(key("SELECT c FROM t WHERE id IN (SELECT 1)"), None);
        assert_eq!(key("INSERT INTO t SELECT * FROM u WHERE a = 1"), None);
        assert_eq!(key("SET @a = 1"), None);
        assert_eq!(key("SELECT 1"), None);
    }

    /// `quick_strip` takes exactly the literals `strip` takes, wherever it
    /// reads a statement at all.
    #[test]
    fn the_quick_reader_agrees_with_the_tokenizer() {
        let statements = [
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 5033, '6837-91', '2239-2')",
            "INSERT INTO t VALUES (1, \"two\", 3.25), (-4, '', 5)",
            "SELECT c FROM sbtest1 WHERE id=10 LIMIT 5",
            "SELECT 1, 'a' FROM t WHERE id = 2 ORDER BY 1",
            "SELECT c FROM t WHERE d = DATE '2020-01-01' AND e = 3",
            "SELECT `a`, t.b FROM `t` WHERE t.c IN (1, 2, 3) AND b <> 'x' OR c <= 7",
            "SELECT a FROM t WHERE a <=> 5 AND b != 6 AND c >= 7 AND d > 8 AND e < 9",
            "UPDATE t SET k = k + 1, c = 'z' WHERE id BETWEEN 3 AND 9 LIMIT 2",
            "DELETE FROM t WHERE id = 3 ORDER BY id LIMIT 1",
            "REPLACE INTO t (a) VALUE (7);",
            "INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = 3",
            "SELECT a FROM t WHERE b LIKE 'a%' AND c IS NOT NULL AND d = 1 * 2 / 3 % 4",
            "SELECT a FROM t WHERE b = 'é' GROUP BY a HAVING COUNT(*) > 1",
            "SELECT a FROM t WHERE b = 1 FOR UPDATE",
            "SELECT a FROM t WHERE b = 1 LOCK IN SHARE MODE",
            "SELECT a FROM t WHERE b := 1 || 2 && 3 AND c = 4",
        ];
        for text in statements {
            let quick = quick_strip(text).unwrap_or_else(|| panic!("quick: {text}"));
            let split = split(text).expect("tokens");
            assert_eq!(split.len(), 1);
            let stripped = strip(&split[0]).unwrap_or_else(|| panic!("strip: {text}"));
            assert_eq!(quick.literals, stripped.literals, "{text}");
        }
        // Not read: what the tokenizer reads in its own way.
        for text in [
            "SELECT a FROM t WHERE b = 'it''s'",
            "SELECT a FROM t WHERE b = 'a\\'b'",
            "SELECT a FROM t WHERE b = 0x1F",
            "SELECT a FROM t WHERE b = 1e5",
            "SELECT a FROM t WHERE b = .5",
            "SELECT a FROM t WHERE b = x'1F'",
            "SELECT a FROM t WHERE b = _utf8mb4'a'",
            "SELECT a FROM t WHERE b = 1 -- c",
            "SELECT a FROM t WHERE b = 1 # c",
            "SELECT a FROM t WHERE b = /* c */ 1",
            "SELECT a FROM t WHERE b = ?",
            "SELECT a FROM t WHERE b = 1; SELECT 2",
            "SELECT a FROM t WHERE b IN (SELECT 1)",
            "SELECT a FROM t WHERE b = 1 UNION SELECT 2",
            "SET @a = 1",
            "SELECT 1",
            "SELECT a FROM t WHERE b = 'unterminated",
        ] {
            assert!(quick_strip(text).is_none(), "{text}");
        }
    }

    #[test]
    fn quick_keys_differ_in_everything_but_taken_literals() {
        let key = |text| quick_strip(text).expect("read").key;
        assert_eq!(
            key("SELECT c FROM t WHERE id = 1"),
            key("SELECT c FROM t WHERE id = 'abc'")
        );
        assert_ne!(
            key("SELECT c FROM t WHERE id = 1"),
            key("SELECT c FROM t WHERE id =  1")
        );
        assert_ne!(
            key("SELECT 1, c FROM t WHERE id = 1"),
            key("SELECT 2, c FROM t WHERE id = 1")
        );
        assert_ne!(
            key("SELECT c FROM t WHERE id = 1"),
            key("SELECT c FROM u WHERE id = 1")
        );
        // Never a key of `strip`'s.
        let split = split("SELECT c FROM t WHERE id = 1").expect("tokens");
        assert_ne!(
            strip(&split[0]).expect("stripped").key,
            key("SELECT c FROM t WHERE id = 1")
        );
    }
}
