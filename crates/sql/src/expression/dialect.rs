//! `sqlparser`'s MySQL dialect with the MySQL expression syntax it does
//! not parse, or parses differently from MySQL 8.0:
//!
//! - `a MOD b` (sqlparser reads `MOD` as an alias);
//! - `!x`, MySQL's NOT with the precedence of a unary operator (`!a + 1`
//!   is `(!a) + 1`);
//! - `BINARY x`, a cast of the next operand only (sqlparser casts the
//!   whole rest of the expression: `BINARY 'a' = 'A'` would be
//!   `CAST('a' = 'A' AS BINARY)`);
//! - `INTERVAL expr unit` with MySQL's compound units (`HOUR_MINUTE`,
//!   `SECOND_MICROSECOND`, ...), given as `DateTimeField::Custom`, and
//!   `EXTRACT(YEAR_MONTH FROM ...)` likewise;
//! - `CAST(x AS CHAR(n) CHARACTER SET cs)`, given as the equivalent
//!   `CONVERT(x, CHAR(n) CHARACTER SET cs)` (`Expr::Convert` with both a
//!   type and a character set);
//! - `SET @x := expr` (sqlparser takes only `=` there);
//! - `UPDATE [LOW_PRIORITY] IGNORE t ...`, given as a `Statement::Update`
//!   whose `or` is `SqliteOnConflict::Ignore` (SQLite's `UPDATE OR
//!   IGNORE`, which means the same).
//!
//! Everything else is `MySqlDialect`'s, which the dialect also claims to
//! be (`dialect()`), so that sqlparser's MySQL-only paths stay on.

use sqlparser::ast::{
    CastKind, DataType, DateTimeField, Expr, Ident, Interval, Set, SetAssignment, SqliteOnConflict,
    Statement, UnaryOperator,
};
use sqlparser::dialect::{BindPlaceholderStyle, Dialect, MySqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;
use std::any::TypeId;

/// The dialect the SQL node parses with; see the module docs.
#[derive(Debug, Default, Clone, Copy)]
pub struct ShoalDialect {
    mysql: MySqlDialect,
}

impl ShoalDialect {
    pub const fn new() -> ShoalDialect {
        ShoalDialect {
            mysql: MySqlDialect {},
        }
    }
}

/// Binds tighter than every binary operator: the operand of `!` and
/// `BINARY` is one primary expression, as in MySQL's grammar.
fn unary_operand_precedence(dialect: &ShoalDialect) -> u8 {
    dialect.prec_value(Precedence::DoubleColon)
}

/// The unit word of an INTERVAL: sqlparser's own field for the simple
/// units, `Custom` (upper-cased) for MySQL's compound ones.
fn interval_field(word: &str) -> Option<DateTimeField> {
    let upper = word.to_ascii_uppercase();
    Some(match upper.as_str() {
        "MICROSECOND" => DateTimeField::Microsecond,
        "SECOND" => DateTimeField::Second,
        "MINUTE" => DateTimeField::Minute,
        "HOUR" => DateTimeField::Hour,
        "DAY" => DateTimeField::Day,
        "WEEK" => DateTimeField::Week(None),
        "MONTH" => DateTimeField::Month,
        "QUARTER" => DateTimeField::Quarter,
        "YEAR" => DateTimeField::Year,
        "SECOND_MICROSECOND" | "MINUTE_MICROSECOND" | "MINUTE_SECOND" | "HOUR_MICROSECOND"
        | "HOUR_SECOND" | "HOUR_MINUTE" | "DAY_MICROSECOND" | "DAY_SECOND" | "DAY_MINUTE"
        | "DAY_HOUR" | "YEAR_MONTH" => DateTimeField::Custom(Ident::new(upper)),
        _ => return None,
    })
}

fn is_unquoted_word(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(word) if word.quote_style.is_none() && word.keyword == keyword)
}

/// A user variable's name token (`@x`, not `@@x`).
fn is_user_variable(token: &Token) -> bool {
    matches!(token, Token::Word(word)
        if word.quote_style.is_none() && word.value.starts_with('@') && !word.value.starts_with("@@"))
}

/// `INTERVAL expr unit`, the INTERVAL keyword already taken.
fn parse_interval(parser: &mut Parser) -> Result<Expr, ParserError> {
    let value = parser.parse_expr()?;
    let next = parser.next_token();
    let field = match &next.token {
        Token::Word(word) if word.quote_style.is_none() => interval_field(&word.value),
        _ => None,
    };
    let Some(field) = field else {
        return parser.expected("an INTERVAL unit", next);
    };
    // The standard's `DAY TO SECOND` for MySQL's DAY_SECOND, as sqlparser
    // took it before.
    let last_field = if parser.parse_keyword(Keyword::TO) {
        let next = parser.next_token();
        match &next.token {
            Token::Word(word) if word.quote_style.is_none() => match interval_field(&word.value) {
                Some(field) => Some(field),
                None => return parser.expected("an INTERVAL unit", next),
            },
            _ => return parser.expected("an INTERVAL unit", next),
        }
    } else {
        None
    };
    Ok(Expr::Interval(Interval {
        value: Box::new(value),
        leading_field: Some(field),
        leading_precision: None,
        last_field,
        fractional_seconds_precision: None,
    }))
}

/// `CAST(expr AS type [CHARACTER SET charset])`, `CAST` already taken.
fn parse_cast(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let expr = parser.parse_expr()?;
    parser.expect_keyword_is(Keyword::AS)?;
    let data_type = parser.parse_data_type()?;
    let charset = if parser.parse_keywords(&[Keyword::CHARACTER, Keyword::SET])
        || parser.parse_keyword(Keyword::CHARSET)
    {
        Some(parser.parse_object_name(false)?)
    } else {
        None
    };
    parser.expect_token(&Token::RParen)?;
    Ok(match charset {
        Some(charset) => Expr::Convert {
            is_try: false,
            expr: Box::new(expr),
            data_type: Some(data_type),
            charset: Some(charset),
            target_before_value: false,
            styles: Vec::new(),
        },
        None => Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(expr),
            data_type,
            format: None,
        },
    })
}

/// `SET @a := x [, @b := y | , name = z ...]`, from `SET` on.
fn parse_set_with_assignments(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword_is(Keyword::SET)?;
    let mut assignments = Vec::new();
    loop {
        let name = parser.parse_object_name(false)?;
        if !parser.consume_token(&Token::Assignment) {
            parser.expect_token(&Token::Eq)?;
        }
        let value = parser.parse_expr()?;
        assignments.push(SetAssignment {
            scope: None,
            name,
            value,
        });
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    if assignments.len() == 1
        && let Some(assignment) = assignments.pop()
    {
        return Ok(Statement::Set(Set::SingleAssignment {
            scope: None,
            hivevar: false,
            variable: assignment.name,
            values: vec![assignment.value],
        }));
    }
    Ok(Statement::Set(Set::MultipleAssignments { assignments }))
}

/// `UPDATE [LOW_PRIORITY] IGNORE ...`, nothing taken yet.
fn parse_update_ignore(parser: &mut Parser) -> Result<Statement, ParserError> {
    let update_token = parser.next_token();
    // LOW_PRIORITY means nothing to NDB tables (nor to InnoDB).
    let _ = parser.parse_keyword(Keyword::LOW_PRIORITY);
    parser.expect_keyword_is(Keyword::IGNORE)?;
    let mut statement = parser.parse_update(update_token)?;
    if let Statement::Update(update) = &mut statement {
        update.or = Some(SqliteOnConflict::Ignore);
    }
    Ok(statement)
}

impl Dialect for ShoalDialect {
    fn dialect(&self) -> TypeId {
        self.mysql.dialect()
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let token = parser.peek_token_ref().token.clone();
        match token {
            Token::ExclamationMark => {
                parser.next_token();
                let precedence = unary_operand_precedence(self);
                Some(
                    parser
                        .parse_subexpr(precedence)
                        .map(|operand| Expr::UnaryOp {
                            op: UnaryOperator::Not,
                            expr: Box::new(operand),
                        }),
                )
            }
            Token::Word(word) if word.quote_style.is_none() => match word.keyword {
                Keyword::BINARY => {
                    parser.next_token();
                    let precedence = unary_operand_precedence(self);
                    Some(parser.parse_subexpr(precedence).map(|operand| Expr::Cast {
                        kind: CastKind::Cast,
                        expr: Box::new(operand),
                        data_type: DataType::Binary(None),
                        format: None,
                    }))
                }
                Keyword::INTERVAL => {
                    parser.next_token();
                    Some(parse_interval(parser))
                }
                Keyword::CAST if parser.peek_nth_token_ref(1).token == Token::LParen => {
                    parser.next_token();
                    Some(parse_cast(parser))
                }
                _ => self.mysql.parse_prefix(parser),
            },
            _ => self.mysql.parse_prefix(parser),
        }
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        if is_unquoted_word(&parser.peek_token_ref().token, Keyword::MOD) {
            parser.next_token();
            return Some(
                parser
                    .parse_subexpr(precedence)
                    .map(|right| Expr::BinaryOp {
                        left: Box::new(expr.clone()),
                        op: sqlparser::ast::BinaryOperator::Modulo,
                        right: Box::new(right),
                    }),
            );
        }
        self.mysql.parse_infix(parser, expr, precedence)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        if is_unquoted_word(&parser.peek_token_ref().token, Keyword::MOD) {
            return Some(Ok(self.prec_value(Precedence::MulDivModOp)));
        }
        self.mysql.get_next_precedence(parser)
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        let first = parser.peek_token_ref().token.clone();
        if is_unquoted_word(&first, Keyword::SET)
            && is_user_variable(&parser.peek_nth_token_ref(1).token)
            && parser.peek_nth_token_ref(2).token == Token::Assignment
        {
            return Some(parse_set_with_assignments(parser));
        }
        if is_unquoted_word(&first, Keyword::UPDATE) {
            let second = parser.peek_nth_token_ref(1).token.clone();
            let third = parser.peek_nth_token_ref(2).token.clone();
            if is_unquoted_word(&second, Keyword::IGNORE)
                || (is_unquoted_word(&second, Keyword::LOW_PRIORITY)
                    && is_unquoted_word(&third, Keyword::IGNORE))
            {
                return Some(parse_update_ignore(parser));
            }
        }
        self.mysql.parse_statement(parser)
    }

    fn allow_extract_custom(&self) -> bool {
        true
    }

    // Everything below is MySqlDialect's, unchanged.

    fn supports_string_literal_table_alias(&self, explicit: bool) -> bool {
        self.mysql.supports_string_literal_table_alias(explicit)
    }

    fn is_identifier_start(&self, character: char) -> bool {
        self.mysql.is_identifier_start(character)
    }

    fn is_identifier_part(&self, character: char) -> bool {
        self.mysql.is_identifier_part(character)
    }

    fn is_delimited_identifier_start(&self, character: char) -> bool {
        self.mysql.is_delimited_identifier_start(character)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.mysql.identifier_quote_style(identifier)
    }

    fn ordered_bind_placeholder_style(&self) -> Option<BindPlaceholderStyle> {
        self.mysql.ordered_bind_placeholder_style()
    }

    fn supports_string_literal_backslash_escape(&self) -> bool {
        self.mysql.supports_string_literal_backslash_escape()
    }

    fn supports_string_literal_concatenation(&self) -> bool {
        self.mysql.supports_string_literal_concatenation()
    }

    fn ignores_wildcard_escapes(&self) -> bool {
        self.mysql.ignores_wildcard_escapes()
    }

    fn supports_numeric_prefix(&self) -> bool {
        self.mysql.supports_numeric_prefix()
    }

    fn supports_literal_prefix_in_qualified_name(&self) -> bool {
        self.mysql.supports_literal_prefix_in_qualified_name()
    }

    fn supports_bitwise_shift_operators(&self) -> bool {
        self.mysql.supports_bitwise_shift_operators()
    }

    fn supports_singular_value_keyword(&self) -> bool {
        self.mysql.supports_singular_value_keyword()
    }

    fn supports_multiline_comment_hints(&self) -> bool {
        self.mysql.supports_multiline_comment_hints()
    }

    fn require_interval_qualifier(&self) -> bool {
        self.mysql.require_interval_qualifier()
    }

    fn supports_limit_comma(&self) -> bool {
        self.mysql.supports_limit_comma()
    }

    fn supports_create_table_select(&self) -> bool {
        self.mysql.supports_create_table_select()
    }

    fn supports_insert_set(&self) -> bool {
        self.mysql.supports_insert_set()
    }

    fn supports_user_host_grantee(&self) -> bool {
        self.mysql.supports_user_host_grantee()
    }

    fn is_table_factor_alias(
        &self,
        explicit: bool,
        keyword: &Keyword,
        parser: &mut Parser,
    ) -> bool {
        self.mysql.is_table_factor_alias(explicit, keyword, parser)
    }

    fn supports_table_hints(&self) -> bool {
        self.mysql.supports_table_hints()
    }

    fn requires_single_line_comment_whitespace(&self) -> bool {
        self.mysql.requires_single_line_comment_whitespace()
    }

    fn supports_hash_comment(&self) -> bool {
        self.mysql.supports_hash_comment()
    }

    fn supports_match_against(&self) -> bool {
        self.mysql.supports_match_against()
    }

    fn supports_select_modifiers(&self) -> bool {
        self.mysql.supports_select_modifiers()
    }

    fn supports_set_names(&self) -> bool {
        self.mysql.supports_set_names()
    }

    fn supports_comma_separated_set_assignments(&self) -> bool {
        self.mysql.supports_comma_separated_set_assignments()
    }

    fn supports_alter_column_position(&self) -> bool {
        self.mysql.supports_alter_column_position()
    }

    fn supports_update_order_by(&self) -> bool {
        self.mysql.supports_update_order_by()
    }

    fn supports_data_type_signed_suffix(&self) -> bool {
        self.mysql.supports_data_type_signed_suffix()
    }

    fn supports_data_type_zerofill_suffix(&self) -> bool {
        self.mysql.supports_data_type_zerofill_suffix()
    }

    fn supports_cross_join_constraint(&self) -> bool {
        self.mysql.supports_cross_join_constraint()
    }

    fn supports_double_ampersand_operator(&self) -> bool {
        self.mysql.supports_double_ampersand_operator()
    }

    fn supports_binary_kw_as_cast(&self) -> bool {
        self.mysql.supports_binary_kw_as_cast()
    }

    fn supports_table_partitions(&self) -> bool {
        self.mysql.supports_table_partitions()
    }

    fn supports_comment_optimizer_hint(&self) -> bool {
        self.mysql.supports_comment_optimizer_hint()
    }

    fn supports_constraint_keyword_without_name(&self) -> bool {
        self.mysql.supports_constraint_keyword_without_name()
    }

    fn supports_key_column_option(&self) -> bool {
        self.mysql.supports_key_column_option()
    }

    fn supports_group_by_with_modifier(&self) -> bool {
        self.mysql.supports_group_by_with_modifier()
    }

    fn supports_left_associative_joins_without_parens(&self) -> bool {
        self.mysql.supports_left_associative_joins_without_parens()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expression(sql: &str) -> Expr {
        let dialect = ShoalDialect::new();
        Parser::new(&dialect)
            .try_with_sql(sql)
            .and_then(|mut parser| parser.parse_expr())
            .unwrap_or_else(|error| panic!("{sql}: {error}"))
    }

    fn statement(sql: &str) -> Statement {
        Parser::parse_sql(&ShoalDialect::new(), sql)
            .ok()
            .and_then(|mut statements| statements.pop())
            .unwrap_or_else(|| panic!("{sql} does not parse"))
    }

    #[test]
    fn mod_is_the_remainder_operator() {
        assert_eq!(expression("7 MOD 3 + 1").to_string(), "7 % 3 + 1");
        assert_eq!(expression("-7 mod 3").to_string(), "-7 % 3");
        assert_eq!(expression("MOD(7, 3)").to_string(), "MOD(7, 3)");
    }

    #[test]
    fn bang_binds_to_one_operand() {
        let Expr::BinaryOp { left, .. } = expression("!1 + 1") else {
            panic!("!1 + 1 is a sum");
        };
        assert!(matches!(
            *left,
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                ..
            }
        ));
        let Expr::BinaryOp { left, .. } = expression("!a = 0") else {
            panic!("!a = 0 is a comparison");
        };
        assert!(matches!(
            *left,
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                ..
            }
        ));
        assert_eq!(expression("1 != 2").to_string(), "1 <> 2");
    }

    #[test]
    fn binary_casts_one_operand() {
        let Expr::BinaryOp { left, .. } = expression("BINARY 'a' = 'A'") else {
            panic!("BINARY 'a' = 'A' is a comparison");
        };
        assert!(matches!(
            *left,
            Expr::Cast {
                data_type: DataType::Binary(None),
                ..
            }
        ));
        assert!(matches!(
            expression("CAST('a' AS BINARY(4))"),
            Expr::Cast {
                data_type: DataType::Binary(Some(4)),
                ..
            }
        ));
    }

    #[test]
    fn compound_interval_units() {
        for (sql, unit) in [
            ("INTERVAL '1:30' HOUR_MINUTE", "HOUR_MINUTE"),
            ("INTERVAL '1.5' second_microsecond", "SECOND_MICROSECOND"),
            ("INTERVAL 1 + 1 DAY", "DAY"),
        ] {
            let Expr::Interval(interval) = expression(sql) else {
                panic!("{sql} is an interval");
            };
            let field = interval.leading_field.map(|field| field.to_string());
            assert_eq!(field.as_deref(), Some(unit), "{sql}");
        }
        assert_eq!(
            expression("d + INTERVAL 1 DAY - 2").to_string(),
            "d + INTERVAL 1 DAY - 2"
        );
        let Expr::Extract { field, .. } = expression("EXTRACT(YEAR_MONTH FROM d)") else {
            panic!("EXTRACT");
        };
        assert_eq!(field.to_string(), "YEAR_MONTH");
    }

    #[test]
    fn cast_with_a_character_set() {
        assert!(matches!(
            expression("CAST('é' AS CHAR CHARACTER SET utf8mb4)"),
            Expr::Convert {
                data_type: Some(DataType::Char(None)),
                charset: Some(_),
                ..
            }
        ));
        assert!(matches!(
            expression("CAST(1 AS SIGNED)"),
            Expr::Cast {
                data_type: DataType::Signed,
                ..
            }
        ));
    }

    #[test]
    fn set_with_colon_equals() {
        assert_eq!(statement("SET @x := @x * 2").to_string(), "SET @x = @x * 2");
        assert_eq!(
            statement("SET @a := 1, @b = 2").to_string(),
            "SET @a = 1, @b = 2"
        );
        assert!(matches!(
            statement("SET @x = 1"),
            Statement::Set(Set::SingleAssignment { .. })
        ));
        assert!(matches!(
            expression("@x := 5"),
            Expr::BinaryOp {
                op: sqlparser::ast::BinaryOperator::Assignment,
                ..
            }
        ));
    }

    #[test]
    fn update_ignore() {
        let Statement::Update(update) = statement("UPDATE IGNORE t SET a = 1 WHERE b = 2") else {
            panic!("UPDATE");
        };
        assert_eq!(update.or, Some(SqliteOnConflict::Ignore));
        assert_eq!(update.table.to_string(), "t");
        let Statement::Update(update) = statement("UPDATE t SET a = 1") else {
            panic!("UPDATE");
        };
        assert_eq!(update.or, None);
    }
}
