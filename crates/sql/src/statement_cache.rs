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

/// Words after which a literal is an operand like any other.
fn operand_follows(word: &str) -> bool {
    const WORDS: &[&str] = &[
        "WHERE", "AND", "OR", "XOR", "NOT", "IN", "BETWEEN", "LIKE", "IS", "SET", "VALUES",
        "VALUE", "LIMIT", "OFFSET", "THEN", "ELSE", "WHEN", "CASE", "DIV", "MOD", "UPDATE",
    ];
    WORDS.iter().any(|w| word.eq_ignore_ascii_case(w))
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
}

thread_local! {
    /// The literals of the statement this thread runs from the cache.
    /// A session runs one statement at a time on its connection's thread,
    /// and the compiler, deep below the statement, has no session to ask.
    static LITERALS: RefCell<Vec<ast::Value>> = const { RefCell::new(Vec::new()) };
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

/// The literal marker `text` stands for, if it is a marker of the
/// statement being run.
pub fn literal(text: &str) -> Option<ast::Value> {
    let index: usize = text.strip_prefix(LITERAL_MARKER)?.parse().ok()?;
    LITERALS.with(|current| current.borrow().get(index).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::split;

    fn key(text: &str) -> Option<(String, usize)> {
        let statements = split(text).expect("tokens");
        strip(&statements[0]).map(|s| (s.key.replace(LITERAL_MARKER, "#"), s.literals.len()))
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
}
