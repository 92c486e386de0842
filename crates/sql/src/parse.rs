//! Parsing: `sqlparser`'s MySQL dialect, behind a small pre-parser for
//! the MySQL syntax it does not know.
//!
//! The text is tokenized once. The tokens are split into statements at
//! top-level semicolons; in each statement the pre-parser
//! - turns double-quoted words into string literals (MySQL without
//!   `ANSI_QUOTES`: `"abc"` is a string, `COMMENT="NDB_TABLE=..."` too);
//! - takes off a trailing `LOCK IN SHARE MODE` (a flag instead);
//! - takes off `PARTITION BY KEY (columns) [PARTITIONS n]` of a CREATE
//!   TABLE (kept beside the statement);
//! - parses the account statements (`CREATE USER 'u'@'h' IDENTIFIED BY
//!   'p'`, `ALTER USER`, `DROP USER`, `SET PASSWORD [FOR ...] = ...`)
//!   itself, since `sqlparser` does not take `'u'@'h'`;
//!
//! and hands the rest to `sqlparser` as tokens.

use crate::expression::ShoalDialect;
use sqlparser::ast::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Word};

use crate::error::SqlError;

/// Most statements in one COM_QUERY.
pub const STATEMENTS_PER_QUERY_MAX: usize = 4096;
/// Deepest expression nesting the parser follows (sqlparser's recursion
/// limit), so a hostile query cannot overflow the stack.
pub const RECURSION_LIMIT: usize = 200;

/// An account: `'user'@'host'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user: String,
    pub host: String,
}

/// Account statements, parsed here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountStatement {
    Create {
        if_not_exists: bool,
        accounts: Vec<(Account, Option<String>)>,
    },
    Alter {
        if_exists: bool,
        accounts: Vec<(Account, Option<String>)>,
    },
    Drop {
        if_exists: bool,
        accounts: Vec<Account>,
    },
    /// `SET PASSWORD [FOR account] = 'password'`.
    SetPassword {
        account: Option<Account>,
        password: String,
    },
}

/// `PARTITION BY KEY (columns) [PARTITIONS n]` of a CREATE TABLE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Partitioning {
    pub columns: Vec<String>,
    pub partitions: Option<u32>,
}

/// One parsed statement.
#[derive(Debug, Clone)]
pub enum Parsed {
    Sql {
        statement: Box<Statement>,
        /// A trailing `LOCK IN SHARE MODE`.
        share_lock: bool,
        /// `UPDATE IGNORE` (sqlparser drops the word; INSERT keeps it).
        ignore: bool,
        partitioning: Option<Partitioning>,
    },
    Account(AccountStatement),
    /// `ALTER TABLE t PARTITION BY KEY (columns) [PARTITIONS n]`.
    AlterPartitioning {
        table: sqlparser::ast::ObjectName,
        partitioning: Partitioning,
    },
    /// `DO expr, ...`: evaluated, results discarded.
    Do(Vec<sqlparser::ast::Expr>),
    /// `SHOW {INDEX|INDEXES|KEYS} {FROM|IN} table [{FROM|IN} db] [WHERE ...]`.
    ShowIndex {
        table: sqlparser::ast::ObjectName,
        filter: Option<Box<sqlparser::ast::Expr>>,
    },
}

/// One statement's tokens and how many `?` it has.
#[derive(Debug, Clone)]
pub struct StatementTokens {
    pub tokens: Vec<Token>,
    pub placeholders: usize,
}

/// Splits `text` into statements' tokens. Whitespace and comments are
/// dropped; empty statements are skipped.
pub fn split(text: &str) -> Result<Vec<StatementTokens>, SqlError> {
    let dialect = ShoalDialect::new();
    let tokens = Tokenizer::new(&dialect, text)
        .tokenize()
        .map_err(|e| SqlError::syntax(format!("{e} near '{}'", excerpt(text))))?;
    let mut statements = Vec::new();
    let mut current = Vec::new();
    let mut placeholders = 0;
    for token in tokens {
        match token {
            Token::Whitespace(_) => {}
            Token::SemiColon => {
                if !current.is_empty() {
                    statements.push(StatementTokens {
                        tokens: std::mem::take(&mut current),
                        placeholders,
                    });
                    placeholders = 0;
                }
            }
            Token::Word(Word {
                value,
                quote_style: Some('"'),
                ..
            }) => current.push(Token::SingleQuotedString(value)),
            Token::DoubleQuotedString(value) => current.push(Token::SingleQuotedString(value)),
            Token::Placeholder(p) if p == "?" => {
                // Numbered in textual order (`?1`, `?2`, ...), so every
                // expression of the statement knows its parameter's index
                // however the statement is taken apart.
                placeholders += 1;
                current.push(Token::Placeholder(format!("?{placeholders}")));
            }
            token => current.push(token),
        }
        if statements.len() > STATEMENTS_PER_QUERY_MAX {
            return Err(SqlError::new(
                1064,
                format!("more than {STATEMENTS_PER_QUERY_MAX} statements in one query"),
            ));
        }
    }
    if !current.is_empty() {
        statements.push(StatementTokens {
            tokens: current,
            placeholders,
        });
    }
    Ok(statements)
}

fn excerpt(text: &str) -> String {
    text.chars().take(80).collect()
}

fn is_keyword(token: &Token, keyword: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
}

fn word_text(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) => Some(w.value.clone()),
        Token::SingleQuotedString(s) => Some(s.clone()),
        _ => None,
    }
}

/// Parses one statement's tokens.
pub fn parse(statement: &StatementTokens) -> Result<Parsed, SqlError> {
    let mut tokens = statement.tokens.clone();
    if let Some(account) = parse_account_statement(&tokens)? {
        return Ok(Parsed::Account(account));
    }
    if let Some(show) = parse_show_index(&tokens)? {
        return Ok(show);
    }
    if tokens.first().is_some_and(|t| is_keyword(t, "DO")) {
        let dialect = ShoalDialect::new();
        let mut parser = Parser::new(&dialect)
            .with_recursion_limit(RECURSION_LIMIT)
            .with_tokens(tokens[1..].to_vec());
        let exprs = parser
            .parse_comma_separated(Parser::parse_expr)
            .map_err(|e| SqlError::syntax(e.to_string()))?;
        if parser.peek_token().token != Token::EOF {
            return Err(SqlError::syntax(format!(
                "near '{}'",
                parser.peek_token().token
            )));
        }
        return Ok(Parsed::Do(exprs));
    }
    let mut share_lock = false;
    let n = tokens.len();
    if n >= 4
        && is_keyword(&tokens[n - 4], "LOCK")
        && is_keyword(&tokens[n - 3], "IN")
        && is_keyword(&tokens[n - 2], "SHARE")
        && is_keyword(&tokens[n - 1], "MODE")
    {
        tokens.truncate(n - 4);
        share_lock = true;
    }
    let mut ignore = false;
    if tokens.len() > 2 && is_keyword(&tokens[0], "UPDATE") {
        // `UPDATE [LOW_PRIORITY] [IGNORE] t`.
        let at = if is_keyword(&tokens[1], "LOW_PRIORITY") {
            2
        } else {
            1
        };
        if tokens.get(at).is_some_and(|t| is_keyword(t, "IGNORE")) {
            tokens.remove(at);
            ignore = true;
        }
    }
    if tokens.len() > 3 && is_keyword(&tokens[0], "ALTER") && is_keyword(&tokens[1], "TABLE") {
        let mut rest = tokens.clone();
        if let Some(partitioning) = take_partitioning(&mut rest)? {
            // Only `ALTER TABLE name` may be left: other changes in the same
            // statement are not taken together with a new partitioning.
            let name: Vec<sqlparser::ast::Ident> = rest[2..]
                .iter()
                .filter(|t| **t != Token::Period)
                .map(|t| word_text(t).map(sqlparser::ast::Ident::new))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    SqlError::unsupported("ALTER TABLE with PARTITION BY and other changes")
                })?;
            if name.is_empty() || name.len() > 2 {
                return Err(SqlError::unsupported(
                    "ALTER TABLE with PARTITION BY and other changes",
                ));
            }
            return Ok(Parsed::AlterPartitioning {
                table: sqlparser::ast::ObjectName::from(name),
                partitioning,
            });
        }
    }
    let mut partitioning = None;
    if tokens.len() > 2 && is_keyword(&tokens[0], "CREATE") && is_keyword(&tokens[1], "TABLE") {
        partitioning = take_partitioning(&mut tokens)?;
    }
    let dialect = ShoalDialect::new();
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens(tokens);
    let parsed = parser.parse_statement().map_err(|e| {
        let text = e.to_string();
        let detail = text.strip_prefix("sql parser error: ").unwrap_or(&text);
        SqlError::syntax(format!(
            "check the manual that corresponds to your MySQL server version for the right syntax to use: {detail}"
        ))
    })?;
    if parser.peek_token().token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "check the manual that corresponds to your MySQL server version for the right syntax to use near '{}'",
            parser.peek_token().token
        )));
    }
    Ok(Parsed::Sql {
        statement: Box::new(parsed),
        share_lock,
        ignore,
        partitioning,
    })
}

/// Takes `PARTITION BY KEY (a, b) [PARTITIONS n]` (also `LINEAR KEY` and
/// `KEY ALGORITHM=2`) off a CREATE TABLE's tokens.
fn take_partitioning(tokens: &mut Vec<Token>) -> Result<Option<Partitioning>, SqlError> {
    let mut depth = 0i32;
    let mut start = None;
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0
                && is_keyword(token, "PARTITION")
                && tokens.get(i + 1).is_some_and(|t| is_keyword(t, "BY")) =>
            {
                start = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(start) = start else {
        return Ok(None);
    };
    let bad = || {
        SqlError::syntax(
            "PARTITION BY: only KEY (columns) [PARTITIONS n] is supported with ndbcluster",
        )
    };
    let mut i = start + 2;
    if tokens.get(i).is_some_and(|t| is_keyword(t, "LINEAR")) {
        i += 1;
    }
    if !tokens.get(i).is_some_and(|t| is_keyword(t, "KEY")) {
        if tokens.get(i).is_some_and(|t| {
            is_keyword(t, "HASH") || is_keyword(t, "RANGE") || is_keyword(t, "LIST")
        }) {
            return Err(SqlError::new(
                1235,
                "This version of Shoal doesn't yet support 'PARTITION BY other than KEY'",
            ));
        }
        return Err(bad());
    }
    i += 1;
    if tokens.get(i).is_some_and(|t| is_keyword(t, "ALGORITHM")) {
        i += 3; // ALGORITHM = n
    }
    if tokens.get(i) != Some(&Token::LParen) {
        return Err(bad());
    }
    i += 1;
    let mut columns = Vec::new();
    loop {
        match tokens.get(i) {
            Some(Token::RParen) => {
                i += 1;
                break;
            }
            Some(Token::Comma) => i += 1,
            Some(Token::Word(w)) => {
                columns.push(w.value.clone());
                i += 1;
            }
            _ => return Err(bad()),
        }
    }
    let mut partitions = None;
    if tokens.get(i).is_some_and(|t| is_keyword(t, "PARTITIONS")) {
        match tokens.get(i + 1) {
            Some(Token::Number(n, _)) => {
                partitions = Some(n.parse::<u32>().map_err(|_| bad())?);
                i += 2;
            }
            _ => return Err(bad()),
        }
    }
    tokens.drain(start..i);
    Ok(Some(Partitioning {
        columns,
        partitions,
    }))
}

/// SHOW INDEX, which sqlparser takes only without a WHERE clause.
fn parse_show_index(tokens: &[Token]) -> Result<Option<Parsed>, SqlError> {
    let mut cursor = Cursor {
        tokens,
        position: 0,
    };
    if !cursor.keyword("SHOW") {
        return Ok(None);
    }
    cursor.keyword("EXTENDED");
    if !(cursor.keyword("INDEX") || cursor.keyword("INDEXES") || cursor.keyword("KEYS")) {
        return Ok(None);
    }
    if !(cursor.keyword("FROM") || cursor.keyword("IN")) {
        return Err(cursor.error());
    }
    let table = cursor
        .tokens
        .get(cursor.position)
        .and_then(word_text)
        .ok_or_else(|| cursor.error())?;
    cursor.position += 1;
    let mut parts = vec![sqlparser::ast::Ident::new(table)];
    if cursor.tokens.get(cursor.position) == Some(&Token::Period) {
        cursor.position += 1;
        let name = cursor
            .tokens
            .get(cursor.position)
            .and_then(word_text)
            .ok_or_else(|| cursor.error())?;
        cursor.position += 1;
        parts.push(sqlparser::ast::Ident::new(name));
    }
    if cursor.keyword("FROM") || cursor.keyword("IN") {
        let database = cursor
            .tokens
            .get(cursor.position)
            .and_then(word_text)
            .ok_or_else(|| cursor.error())?;
        cursor.position += 1;
        parts.insert(0, sqlparser::ast::Ident::new(database));
    }
    let mut filter = None;
    if cursor.keyword("WHERE") {
        let dialect = ShoalDialect::new();
        let mut parser = Parser::new(&dialect)
            .with_recursion_limit(RECURSION_LIMIT)
            .with_tokens(tokens[cursor.position..].to_vec());
        let expr = parser
            .parse_expr()
            .map_err(|e| SqlError::syntax(e.to_string()))?;
        if parser.peek_token().token != Token::EOF {
            return Err(SqlError::syntax(format!(
                "near '{}'",
                parser.peek_token().token
            )));
        }
        filter = Some(Box::new(expr));
    } else if !cursor.done() {
        return Err(cursor.error());
    }
    Ok(Some(Parsed::ShowIndex {
        table: sqlparser::ast::ObjectName::from(parts),
        filter,
    }))
}

/// A cursor over tokens for the account statements.
struct Cursor<'a> {
    tokens: &'a [Token],
    position: usize,
}

impl Cursor<'_> {
    fn keyword(&mut self, keyword: &str) -> bool {
        if self
            .tokens
            .get(self.position)
            .is_some_and(|t| is_keyword(t, keyword))
        {
            self.position += 1;
            true
        } else {
            false
        }
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<(), SqlError> {
        if self.keyword(keyword) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn error(&self) -> SqlError {
        let near = self
            .tokens
            .get(self.position)
            .map(|t| t.to_string())
            .unwrap_or_default();
        SqlError::syntax(format!(
            "check the manual that corresponds to your MySQL server version for the right syntax to use near '{near}'"
        ))
    }

    fn done(&self) -> bool {
        self.position >= self.tokens.len()
    }

    fn string(&mut self) -> Result<String, SqlError> {
        match self.tokens.get(self.position) {
            Some(Token::SingleQuotedString(s)) => {
                self.position += 1;
                Ok(s.clone())
            }
            _ => Err(self.error()),
        }
    }

    /// `user`, `'user'`, `` `user` ``, optionally `@host` (a separate
    /// `@` token or a word starting with it); the host defaults to `%`.
    fn account(&mut self) -> Result<Account, SqlError> {
        let user = self
            .tokens
            .get(self.position)
            .and_then(word_text)
            .ok_or_else(|| self.error())?;
        self.position += 1;
        let mut host = "%".to_string();
        match self.tokens.get(self.position) {
            Some(Token::AtSign) => {
                self.position += 1;
                host = self
                    .tokens
                    .get(self.position)
                    .and_then(word_text)
                    .ok_or_else(|| self.error())?;
                self.position += 1;
            }
            Some(Token::Word(w)) if w.value.starts_with('@') && w.quote_style.is_none() => {
                host = w.value[1..].to_string();
                self.position += 1;
            }
            _ => {}
        }
        // `'u'@'h'` may tokenize as a string followed by a placeholder-like
        // word `@'h'`; both shapes end here.
        Ok(Account { user, host })
    }
}

fn parse_account_statement(tokens: &[Token]) -> Result<Option<AccountStatement>, SqlError> {
    let mut cursor = Cursor {
        tokens,
        position: 0,
    };
    let create = cursor.keyword("CREATE");
    let alter = !create && cursor.keyword("ALTER");
    let drop = !create && !alter && cursor.keyword("DROP");
    if create || alter || drop {
        if !cursor.keyword("USER") {
            return Ok(None);
        }
        let mut if_exists = false;
        let mut if_not_exists = false;
        if cursor.keyword("IF") {
            if cursor.keyword("NOT") {
                if_not_exists = true;
            } else {
                if_exists = true;
            }
            cursor.expect_keyword("EXISTS")?;
        }
        if drop {
            let mut accounts = vec![cursor.account()?];
            while cursor.tokens.get(cursor.position) == Some(&Token::Comma) {
                cursor.position += 1;
                accounts.push(cursor.account()?);
            }
            if !cursor.done() {
                return Err(cursor.error());
            }
            return Ok(Some(AccountStatement::Drop {
                if_exists,
                accounts,
            }));
        }
        let mut accounts = Vec::new();
        loop {
            let account = cursor.account()?;
            let mut password = None;
            if cursor.keyword("IDENTIFIED") {
                if cursor.keyword("WITH") {
                    // The plugin name: both plugins are kept for every user.
                    cursor.position += 1;
                }
                if cursor.keyword("BY") {
                    password = Some(cursor.string()?);
                } else if !cursor.done() && cursor.keyword("AS") {
                    return Err(SqlError::unsupported("IDENTIFIED ... AS 'hash'"));
                }
            }
            accounts.push((account, password));
            if cursor.tokens.get(cursor.position) == Some(&Token::Comma) {
                cursor.position += 1;
                continue;
            }
            break;
        }
        // Resource and password options (REQUIRE, WITH, PASSWORD EXPIRE,
        // ACCOUNT LOCK...) are not kept yet: refused rather than ignored.
        if !cursor.done() {
            return Err(SqlError::unsupported(format!(
                "{} USER option '{}'",
                if create { "CREATE" } else { "ALTER" },
                cursor.tokens[cursor.position]
            )));
        }
        return Ok(Some(if create {
            AccountStatement::Create {
                if_not_exists,
                accounts,
            }
        } else {
            AccountStatement::Alter {
                if_exists,
                accounts,
            }
        }));
    }
    let mut cursor = Cursor {
        tokens,
        position: 0,
    };
    if cursor.keyword("SET") && cursor.keyword("PASSWORD") {
        let account = if cursor.keyword("FOR") {
            Some(cursor.account()?)
        } else {
            None
        };
        if cursor.tokens.get(cursor.position) != Some(&Token::Eq) {
            return Err(cursor.error());
        }
        cursor.position += 1;
        let password = cursor.string()?;
        if !cursor.done() {
            return Err(cursor.error());
        }
        return Ok(Some(AccountStatement::SetPassword { account, password }));
    }
    Ok(None)
}

/// Whether a keyword token is `keyword` (for callers matching statements).
pub fn token_is(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(w) if w.keyword == keyword && w.quote_style.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Parsed {
        let statements = split(text).unwrap();
        assert_eq!(statements.len(), 1, "{text}");
        parse(&statements[0]).unwrap()
    }

    #[test]
    fn statements_split_at_top_level_semicolons_only() {
        let statements = split("SELECT 'a;b'; SELECT ?, ? ;; -- c;\n SELECT 3;").unwrap();
        assert_eq!(statements.len(), 3);
        assert_eq!(statements[1].placeholders, 2);
        let Parsed::Sql { statement, .. } = parse(&statements[1]).unwrap() else {
            panic!("not SQL");
        };
        assert_eq!(statement.to_string(), "SELECT ?1, ?2");
        assert!(split("  -- only a comment\n").unwrap().is_empty());
    }

    #[test]
    fn double_quotes_are_strings_as_in_mysql() {
        let Parsed::Sql { statement, .. } = one("SELECT \"abc\"") else {
            panic!("not SQL");
        };
        assert_eq!(statement.to_string(), "SELECT 'abc'");
        let Parsed::Sql { statement, .. } =
            one("CREATE TABLE t (a INT PRIMARY KEY) COMMENT=\"NDB_TABLE=READ_BACKUP=1\"")
        else {
            panic!("not SQL");
        };
        assert!(statement.to_string().contains("'NDB_TABLE=READ_BACKUP=1'"));
    }

    #[test]
    fn lock_in_share_mode_and_partitioning_are_taken_off() {
        let Parsed::Sql {
            share_lock,
            statement,
            ..
        } = one("SELECT c FROM t WHERE id = ? LOCK IN SHARE MODE")
        else {
            panic!("not SQL");
        };
        assert!(share_lock);
        assert_eq!(statement.to_string(), "SELECT c FROM t WHERE id = ?1");
        let Parsed::Sql {
            partitioning,
            statement,
            ..
        } = one(
            "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b)) ENGINE=NDB PARTITION BY KEY (b) PARTITIONS 4",
        )
        else {
            panic!("not SQL");
        };
        assert_eq!(
            partitioning,
            Some(Partitioning {
                columns: vec!["b".into()],
                partitions: Some(4)
            })
        );
        assert!(!statement.to_string().contains("PARTITION"));
        let statements = split("CREATE TABLE t (a INT) PARTITION BY RANGE (a)").unwrap();
        assert_eq!(parse(&statements[0]).unwrap_err().code, 1235);
    }

    #[test]
    fn account_statements_parse() {
        let Parsed::Account(AccountStatement::Create {
            accounts,
            if_not_exists,
        }) = one("CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY 'secret'")
        else {
            panic!("not CREATE USER");
        };
        assert!(if_not_exists);
        assert_eq!(
            accounts,
            vec![(
                Account {
                    user: "app".into(),
                    host: "%".into()
                },
                Some("secret".into())
            )]
        );
        let Parsed::Account(AccountStatement::Drop { accounts, .. }) =
            one("DROP USER 'a'@'localhost', b")
        else {
            panic!("not DROP USER");
        };
        assert_eq!(accounts[0].host, "localhost");
        assert_eq!(accounts[1].host, "%");
        let Parsed::Account(AccountStatement::SetPassword { account, password }) =
            one("SET PASSWORD FOR 'a'@'h' = 'x'")
        else {
            panic!("not SET PASSWORD");
        };
        assert_eq!(account.unwrap().host, "h");
        assert_eq!(password, "x");
    }

    #[test]
    fn syntax_errors_are_1064() {
        let statements = split("SELEC 1").unwrap();
        assert_eq!(parse(&statements[0]).unwrap_err().code, 1064);
        let statements = split("SELECT 1 2 3").unwrap();
        assert_eq!(parse(&statements[0]).unwrap_err().code, 1064);
    }
}
