//! A small regular-expression matcher for REGEXP / RLIKE: the common
//! subset of MySQL's ICU syntax — literals, `.`, `^`, `$`, bracket classes
//! (`[a-z]`, `[^...]`, `[[:alpha:]]`-style names), `\d \w \s` and escapes,
//! groups with `|`, and the quantifiers `* + ? {m} {m,} {m,n}` (greedy).
//! It searches (an unanchored pattern matches anywhere), works on
//! characters (UTF-8), and folds case for case-insensitive collations.
//! Backreferences, lookaround and lazy quantifiers are refused (3690)
//! rather than misread. Matching backtracks with step and depth budgets, so a
//! pathological pattern fails with 3699 (MySQL's "Timeout exceeded in
//! regular expression match") instead of running away.

use crate::convert::error;
use crate::error::SqlError;

/// The most steps one match may take (MySQL's `regexp_time_limit` default
/// is 32 steps of ICU's own measure; this is a budget of the same spirit).
const STEP_LIMIT: usize = 5_000_000;
/// The most nodes a pattern may compile to.
const PATTERN_NODES_MAX: usize = 10_000;
/// The largest repeat count `{m,n}` takes (ICU's limit is similar).
const REPEAT_MAX: u32 = 1_000;
/// The deepest backtracking recursion a match may reach before failing
/// with 3698, well within a thread's stack.
const DEPTH_MAX: usize = 3_000;

#[derive(Debug, Clone)]
enum Item {
    Character(char),
    Any,
    Start,
    End,
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    Group(Vec<Vec<Piece>>),
}

#[derive(Debug, Clone)]
struct Piece {
    item: Item,
    minimum: u32,
    maximum: u32,
}

struct Parser<'a> {
    characters: Vec<char>,
    position: usize,
    nodes: usize,
    pattern: &'a str,
}

/// MySQL 8.0's regular-expression errors (ICU's, numbered 3688..=3699).
fn syntax(pattern: &str, what: &str) -> SqlError {
    let (code, message) = match what {
        "missing closing parenthesis" | "unmatched closing parenthesis" => (
            3691,
            "Mismatched parenthesis in regular expression.".to_string(),
        ),
        "missing ']'" => (
            3696,
            "The regular expression contains an unclosed bracket expression.".to_string(),
        ),
        "invalid range in character class" => {
            (3697, "Invalid range in bracket expression.".to_string())
        }
        "invalid repeat count" => (
            3692,
            "Incorrect description of a {min,max} interval.".to_string(),
        ),
        "backreferences are not supported"
        | "lookaround is not supported"
        | "this escape is not supported"
        | "lazy and possessive quantifiers are not supported" => (
            3690,
            format!("Unimplemented functionality in regular expression: {what} in '{pattern}'."),
        ),
        _ => (
            3688,
            format!("Syntax error in regular expression: {what} in '{pattern}'."),
        ),
    };
    error(code, message)
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.characters.get(self.position).copied()
    }

    fn next(&mut self) -> Option<char> {
        let character = self.peek()?;
        self.position += 1;
        Some(character)
    }

    fn alternatives(&mut self, depth: usize) -> Result<Vec<Vec<Piece>>, SqlError> {
        if depth > 100 {
            return Err(syntax(self.pattern, "nesting too deep"));
        }
        let mut alternatives = vec![Vec::new()];
        while let Some(character) = self.peek() {
            match character {
                ')' => break,
                '|' => {
                    self.position += 1;
                    alternatives.push(Vec::new());
                }
                _ => {
                    let piece = self.piece(depth)?;
                    if let Some(last) = alternatives.last_mut() {
                        last.push(piece);
                    }
                }
            }
        }
        Ok(alternatives)
    }

    fn piece(&mut self, depth: usize) -> Result<Piece, SqlError> {
        self.nodes += 1;
        if self.nodes > PATTERN_NODES_MAX {
            return Err(syntax(self.pattern, "pattern too large"));
        }
        let item = self.atom(depth)?;
        let (mut minimum, mut maximum) = (1, 1);
        match self.peek() {
            Some('*') => {
                self.position += 1;
                (minimum, maximum) = (0, u32::MAX);
            }
            Some('+') => {
                self.position += 1;
                (minimum, maximum) = (1, u32::MAX);
            }
            Some('?') => {
                self.position += 1;
                (minimum, maximum) = (0, 1);
            }
            Some('{') => {
                if let Some((low, high)) = self.repeat()? {
                    (minimum, maximum) = (low, high);
                }
            }
            _ => {}
        }
        if matches!(self.peek(), Some('?' | '+')) && (minimum, maximum) != (1, 1) {
            return Err(syntax(
                self.pattern,
                "lazy and possessive quantifiers are not supported",
            ));
        }
        if matches!(item, Item::Start | Item::End) && (minimum, maximum) != (1, 1) {
            return Err(syntax(self.pattern, "quantifier after an anchor"));
        }
        Ok(Piece {
            item,
            minimum,
            maximum,
        })
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.position;
        let mut value: u32 = 0;
        while let Some(digit) = self.peek().and_then(|character| character.to_digit(10)) {
            value = value.saturating_mul(10).saturating_add(digit);
            self.position += 1;
        }
        (self.position > start).then_some(value)
    }

    /// `{m}`, `{m,}`, `{m,n}`; a `{` that starts none of these is a literal.
    fn repeat(&mut self) -> Result<Option<(u32, u32)>, SqlError> {
        let start = self.position;
        self.position += 1;
        let Some(low) = self.number() else {
            self.position = start;
            return Ok(None);
        };
        let high = if self.peek() == Some(',') {
            self.position += 1;
            self.number().unwrap_or(u32::MAX)
        } else {
            low
        };
        if self.next() != Some('}') {
            self.position = start;
            return Ok(None);
        }
        if low > high || low > REPEAT_MAX || (high != u32::MAX && high > REPEAT_MAX) {
            return Err(syntax(self.pattern, "invalid repeat count"));
        }
        Ok(Some((low, high)))
    }

    fn atom(&mut self, depth: usize) -> Result<Item, SqlError> {
        let Some(character) = self.next() else {
            return Err(syntax(self.pattern, "unexpected end"));
        };
        Ok(match character {
            '.' => Item::Any,
            '^' => Item::Start,
            '$' => Item::End,
            '(' => {
                if self.peek() == Some('?') {
                    // Only a non-capturing group is understood.
                    self.position += 1;
                    if self.next() != Some(':') {
                        return Err(syntax(self.pattern, "lookaround is not supported"));
                    }
                }
                let alternatives = self.alternatives(depth + 1)?;
                if self.next() != Some(')') {
                    return Err(syntax(self.pattern, "missing closing parenthesis"));
                }
                Item::Group(alternatives)
            }
            ')' => return Err(syntax(self.pattern, "unmatched closing parenthesis")),
            '[' => self.class()?,
            '\\' => self.escape()?,
            '*' | '+' | '?' => {
                return Err(syntax(
                    self.pattern,
                    "quantifier does not follow a repeatable item",
                ));
            }
            other => Item::Character(other),
        })
    }

    fn escape(&mut self) -> Result<Item, SqlError> {
        let Some(character) = self.next() else {
            return Err(syntax(self.pattern, "trailing backslash"));
        };
        Ok(match character {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                let ranges = match character.to_ascii_lowercase() {
                    'd' => vec![('0', '9')],
                    'w' => vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')],
                    _ => vec![(' ', ' '), ('\t', '\r')],
                };
                Item::Class {
                    ranges,
                    negated: character.is_ascii_uppercase(),
                }
            }
            'n' => Item::Character('\n'),
            't' => Item::Character('\t'),
            'r' => Item::Character('\r'),
            '1'..='9' => return Err(syntax(self.pattern, "backreferences are not supported")),
            'b' | 'B' | 'A' | 'z' | 'Z' => {
                return Err(syntax(self.pattern, "this escape is not supported"));
            }
            other => Item::Character(other),
        })
    }

    fn class(&mut self) -> Result<Item, SqlError> {
        let mut negated = false;
        if self.peek() == Some('^') {
            negated = true;
            self.position += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(character) = self.next() else {
                return Err(syntax(self.pattern, "missing ']'"));
            };
            if character == ']' && !first {
                break;
            }
            first = false;
            if character == '[' && self.peek() == Some(':') {
                let rest: String = self.characters[self.position..].iter().collect();
                let Some(end) = rest.find(":]") else {
                    return Err(syntax(self.pattern, "unterminated character class name"));
                };
                let name = &rest[1..end];
                self.position += end + 2;
                ranges.extend(
                    named_class(name)
                        .ok_or_else(|| syntax(self.pattern, "unknown character class"))?,
                );
                continue;
            }
            let low = if character == '\\' {
                match self.next() {
                    Some('d') => {
                        ranges.push(('0', '9'));
                        continue;
                    }
                    Some('s') => {
                        ranges.push((' ', ' '));
                        ranges.push(('\t', '\r'));
                        continue;
                    }
                    Some('w') => {
                        ranges.extend([('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]);
                        continue;
                    }
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some(other) => other,
                    None => return Err(syntax(self.pattern, "trailing backslash")),
                }
            } else {
                character
            };
            if self.peek() == Some('-')
                && self
                    .characters
                    .get(self.position + 1)
                    .is_some_and(|&next| next != ']')
            {
                self.position += 1;
                let Some(high) = self.next() else {
                    return Err(syntax(self.pattern, "missing ']'"));
                };
                if high < low {
                    return Err(syntax(self.pattern, "invalid range in character class"));
                }
                ranges.push((low, high));
            } else {
                ranges.push((low, low));
            }
        }
        Ok(Item::Class { ranges, negated })
    }
}

fn named_class(name: &str) -> Option<Vec<(char, char)>> {
    Some(match name {
        "alpha" => vec![('a', 'z'), ('A', 'Z')],
        "digit" => vec![('0', '9')],
        "alnum" => vec![('a', 'z'), ('A', 'Z'), ('0', '9')],
        "upper" => vec![('A', 'Z')],
        "lower" => vec![('a', 'z')],
        "space" => vec![(' ', ' '), ('\t', '\r')],
        "blank" => vec![(' ', ' '), ('\t', '\t')],
        "punct" => vec![('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "xdigit" => vec![('0', '9'), ('a', 'f'), ('A', 'F')],
        "cntrl" => vec![('\0', '\u{1F}'), ('\u{7F}', '\u{7F}')],
        "print" => vec![(' ', '~')],
        "graph" => vec![('!', '~')],
        _ => return None,
    })
}

struct Matcher<'a> {
    text: &'a [char],
    case_insensitive: bool,
    steps: usize,
    depth: usize,
}

fn fold(character: char) -> char {
    let mut lower = character.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(single), None) => single,
        _ => character,
    }
}

impl Matcher<'_> {
    fn same(&self, pattern: char, text: char) -> bool {
        pattern == text || (self.case_insensitive && fold(pattern) == fold(text))
    }

    fn item_matches(&self, item: &Item, position: usize) -> bool {
        let Some(&character) = self.text.get(position) else {
            return false;
        };
        match item {
            Item::Character(expected) => self.same(*expected, character),
            Item::Any => true,
            Item::Class { ranges, negated } => {
                let inside = ranges.iter().any(|&(low, high)| {
                    (low..=high).contains(&character)
                        || (self.case_insensitive
                            && ((low..=high).contains(&fold(character))
                                || character
                                    .to_uppercase()
                                    .next()
                                    .is_some_and(|upper| (low..=high).contains(&upper))))
                });
                inside != *negated
            }
            _ => false,
        }
    }

    /// Whether `pieces[index..]` then `continuation` match from `position`.
    fn match_sequence(
        &mut self,
        pieces: &[Piece],
        position: usize,
        continuation: &mut dyn FnMut(&mut Self, usize) -> Result<bool, SqlError>,
    ) -> Result<bool, SqlError> {
        self.steps += 1;
        if self.steps > STEP_LIMIT {
            return Err(error(3699, "Timeout exceeded in regular expression match."));
        }
        if self.depth >= DEPTH_MAX {
            return Err(error(
                3698,
                "Overflow in the regular expression backtrack stack.",
            ));
        }
        self.depth += 1;
        let result = self.match_pieces(pieces, position, continuation);
        self.depth -= 1;
        result
    }

    fn match_pieces(
        &mut self,
        pieces: &[Piece],
        position: usize,
        continuation: &mut dyn FnMut(&mut Self, usize) -> Result<bool, SqlError>,
    ) -> Result<bool, SqlError> {
        let Some((piece, rest)) = pieces.split_first() else {
            return continuation(self, position);
        };
        match &piece.item {
            Item::Start => {
                if position == 0 {
                    self.match_sequence(rest, position, continuation)
                } else {
                    Ok(false)
                }
            }
            Item::End => {
                if position == self.text.len() {
                    self.match_sequence(rest, position, continuation)
                } else {
                    Ok(false)
                }
            }
            Item::Group(alternatives) => {
                self.match_group(piece, alternatives, rest, position, 0, continuation)
            }
            item => {
                // Greedy: take as many as allowed, then give back.
                let mut count = 0u32;
                let mut end = position;
                while count < piece.maximum && self.item_matches(item, end) {
                    count += 1;
                    end += 1;
                }
                loop {
                    if count < piece.minimum {
                        return Ok(false);
                    }
                    if self.match_sequence(rest, end, continuation)? {
                        return Ok(true);
                    }
                    if count == 0 {
                        return Ok(false);
                    }
                    count -= 1;
                    end -= 1;
                }
            }
        }
    }

    /// A repeated group: `done` repetitions so far, greedy.
    fn match_group(
        &mut self,
        piece: &Piece,
        alternatives: &[Vec<Piece>],
        rest: &[Piece],
        position: usize,
        done: u32,
        continuation: &mut dyn FnMut(&mut Self, usize) -> Result<bool, SqlError>,
    ) -> Result<bool, SqlError> {
        if done < piece.maximum {
            for alternative in alternatives {
                let matched =
                    self.match_sequence(alternative, position, &mut |matcher: &mut Self, end| {
                        // An empty repetition would loop forever: stop repeating there.
                        if end == position && done >= piece.minimum {
                            return Ok(false);
                        }
                        matcher.match_group(piece, alternatives, rest, end, done + 1, continuation)
                    })?;
                if matched {
                    return Ok(true);
                }
            }
        }
        if done >= piece.minimum {
            return self.match_sequence(rest, position, continuation);
        }
        Ok(false)
    }
}

/// Whether `pattern` matches somewhere in `text`.
/// A compiled pattern (compiled once when the pattern is a constant).
#[derive(Debug, Clone)]
pub(crate) struct Regex {
    root: Vec<Piece>,
}

impl Regex {
    pub(crate) fn new(pattern: &[u8]) -> Result<Regex, SqlError> {
        let pattern_text = String::from_utf8_lossy(pattern);
        let mut parser = Parser {
            characters: pattern_text.chars().collect(),
            position: 0,
            nodes: 0,
            pattern: &pattern_text,
        };
        let alternatives = parser.alternatives(0)?;
        if parser.position < parser.characters.len() {
            return Err(syntax(&pattern_text, "unmatched closing parenthesis"));
        }
        Ok(Regex {
            root: vec![Piece {
                item: Item::Group(alternatives),
                minimum: 1,
                maximum: 1,
            }],
        })
    }

    /// Whether the pattern matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &[u8], case_insensitive: bool) -> Result<bool, SqlError> {
        let characters: Vec<char> = String::from_utf8_lossy(text).chars().collect();
        let mut matcher = Matcher {
            text: &characters,
            case_insensitive,
            steps: 0,
            depth: 0,
        };
        for start in 0..=characters.len() {
            if matcher.match_sequence(&self.root, start, &mut |_, _| Ok(true))? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Whether `pattern` matches somewhere in `text`.
pub(crate) fn is_match(
    pattern: &[u8],
    text: &[u8],
    case_insensitive: bool,
) -> Result<bool, SqlError> {
    Regex::new(pattern)?.is_match(text, case_insensitive)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        is_match(pattern.as_bytes(), text.as_bytes(), false).unwrap()
    }

    #[test]
    fn mysql_manual_examples() {
        // From the REGEXP section of the MySQL manual.
        assert!(!matches("^$", "Michael!"));
        assert!(matches("^[A-Z]", "Michael!"));
        assert!(matches("^fo*", "fofo"));
        assert!(matches("^fo+", "fofo"));
        assert!(matches("^a.*$", "abcde"));
        assert!(matches("^(de|abc)", "abcde"));
        assert!(matches("^ba?r$", "br"));
        assert!(!matches("^ba?r$", "baar"));
        assert!(matches("^(ba){2}r$", "babar"));
        assert!(matches("[0-9]+", "abc123"));
        assert!(!matches("^[^a-z]+$", "abc"));
        assert!(matches("[[:alpha:]]{3}", "x1abc"));
        assert!(matches("b", "abc"));
        assert!(is_match(b"ABC", b"xabcx", true).unwrap());
        assert!(!is_match(b"ABC", b"xabcx", false).unwrap());
        assert!(matches("(a|b)*c", "ababc"));
        assert!(matches("(a*)*b", "aaab"));
        assert_eq!(is_match(b"(", b"x", false).unwrap_err().code, 3691);
        assert_eq!(is_match(b"[a", b"x", false).unwrap_err().code, 3696);
        assert_eq!(is_match(b"\\1", b"x", false).unwrap_err().code, 3690);
        let long = "ab".repeat(5_000);
        assert!(is_match(b"^(ab)*$", long.as_bytes(), false).is_err());
    }
}
