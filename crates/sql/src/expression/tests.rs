//! Tests of compiled expressions against MySQL 8.0's documented results
//! (the MySQL 8.0 Reference Manual's examples unless noted).

use super::*;
use crate::value::{Date, Decimal, Time, write_text};
use mysql_protocol::FieldType;
use mysql_protocol::column::flags;
use proptest::prelude::*;
use sqlparser::ast::Expr;
use sqlparser::parser::Parser;
use std::collections::HashMap;

/// Columns c0 (INT), c1 (VARCHAR utf8mb4_0900_ai_ci), c2 (DECIMAL(10,2)),
/// c3 (DATE), c4 (DOUBLE), c5 (VARCHAR utf8mb4_bin), c6 (DATETIME(3)), c7
/// (INT UNSIGNED), c8 (TIME), c9 (ENUM('red','green','blue')).
struct TestScope;

fn enum_type() -> SqlType {
    let mut sql_type = SqlType::string(5, Collation::Utf8mb4AiCi);
    sql_type.field_type = FieldType::String;
    sql_type.flags |= flags::ENUM;
    sql_type
}

fn column_types() -> Vec<(&'static str, SqlType)> {
    vec![
        (
            "c0",
            SqlType::new(FieldType::Long, 0, 11, 0, Collation::Binary),
        ),
        ("c1", SqlType::string(20, Collation::Utf8mb4AiCi)),
        ("c2", SqlType::decimal(10, 2, false)),
        ("c3", SqlType::date()),
        ("c4", SqlType::double()),
        ("c5", SqlType::string(20, Collation::Utf8mb4Bin)),
        ("c6", SqlType::datetime(3)),
        (
            "c7",
            SqlType::new(FieldType::Long, flags::UNSIGNED, 10, 0, Collation::Binary),
        ),
        ("c8", SqlType::time(0)),
        ("c9", enum_type()),
    ]
}

impl Scope for TestScope {
    fn column(&self, _qualifier: Option<&str>, name: &str) -> Result<(usize, SqlType), SqlError> {
        column_types()
            .into_iter()
            .position(|(column, _)| column.eq_ignore_ascii_case(name))
            .map(|slot| (slot, column_types()[slot].1.clone()))
            .ok_or_else(|| SqlError::new(1054, format!("Unknown column '{name}' in 'field list'")))
    }

    fn aggregate(&self, _call: &sqlparser::ast::Function) -> Option<(usize, SqlType)> {
        None
    }

    fn database(&self) -> Option<String> {
        Some("test".to_string())
    }

    fn enum_members(&self, slot: usize) -> Option<std::sync::Arc<[String]>> {
        (slot == 9).then(|| ["red", "green", "blue"].map(str::to_string).to_vec().into())
    }
}

fn row() -> Vec<SqlValue> {
    vec![
        SqlValue::Int(42),
        SqlValue::String(b"Hello".to_vec()),
        SqlValue::Decimal(Decimal::new(1234, 2)),
        SqlValue::Date(Date::new(2024, 2, 29)),
        SqlValue::Double(2.5),
        SqlValue::String(b"abc".to_vec()),
        SqlValue::Datetime(Datetime::new(Date::new(2024, 1, 2), 3, 4, 5, 120_000)),
        SqlValue::UInt(7),
        SqlValue::Time(Time {
            negative: false,
            hours: 10,
            minutes: 11,
            seconds: 12,
            microsecond: 0,
        }),
        SqlValue::String(b"blue".to_vec()),
    ]
}

#[derive(Default)]
struct TestEnvironment {
    warnings: Vec<(WarningLevel, u16, String)>,
    parameters: Vec<SqlValue>,
    last_insert_id: u64,
    strict: bool,
    /// Variables set by `@x := value` (over the fixed `@x` = 10).
    variables: HashMap<String, SqlValue>,
    /// The session's `sql_mode`; None answers 1193 (an unknown variable).
    sql_mode: Option<String>,
}

impl Environment for TestEnvironment {
    fn parameter(&self, index: usize) -> Option<&SqlValue> {
        self.parameters.get(index)
    }
    fn user_variable(&self, name: &str) -> SqlValue {
        if let Some(value) = self.variables.get(name) {
            value.clone()
        } else if name == "x" {
            SqlValue::Int(10)
        } else {
            SqlValue::Null
        }
    }
    fn system_variable(&self, name: &str, _global: bool) -> Result<SqlValue, SqlError> {
        match name {
            "version" => Ok(SqlValue::String(b"8.0.40-shoal".to_vec())),
            "autocommit" => Ok(SqlValue::Int(1)),
            "sql_mode" if self.sql_mode.is_some() => Ok(SqlValue::String(
                self.sql_mode.clone().unwrap_or_default().into_bytes(),
            )),
            _ => Err(SqlError::new(
                1193,
                format!("Unknown system variable '{name}'"),
            )),
        }
    }
    fn set_user_variable(&mut self, name: &str, value: SqlValue) -> Result<(), SqlError> {
        self.variables.insert(name.to_string(), value);
        Ok(())
    }
    fn last_insert_id(&self) -> u64 {
        self.last_insert_id
    }
    fn set_last_insert_id(&mut self, value: u64) {
        self.last_insert_id = value;
    }
    fn row_count(&self) -> i64 {
        -1
    }
    fn found_rows(&self) -> u64 {
        3
    }
    fn now(&self) -> Datetime {
        Datetime::new(Date::new(2024, 1, 2), 3, 4, 5, 123_456)
    }
    fn database(&self) -> Option<String> {
        Some("test".to_string())
    }
    fn user(&self) -> String {
        "root@localhost".to_string()
    }
    fn connection_id(&self) -> u64 {
        7
    }
    fn strict(&self) -> bool {
        self.strict
    }
    fn warn(&mut self, level: WarningLevel, code: u16, message: String) {
        self.warnings.push((level, code, message));
    }
}

fn parse(sql: &str) -> Expr {
    Parser::new(&ShoalDialect::new())
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_expr())
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

fn compiled(sql: &str) -> Expression {
    compile(&parse(sql), &TestScope).unwrap_or_else(|error| panic!("{sql}: {error}"))
}

/// The value, its text as the text protocol sends it (None for NULL), and the warnings.
fn run_with(sql: &str, env: &mut TestEnvironment) -> Result<Option<String>, SqlError> {
    let expression = compile(&parse(sql), &TestScope)?;
    let value = evaluate(&expression, &row(), env)?;
    if value.is_null() {
        return Ok(None);
    }
    let mut out = Vec::new();
    write_text(&value, expression.sql_type(), &mut out);
    Ok(Some(String::from_utf8_lossy(&out).into_owned()))
}

fn text(sql: &str) -> String {
    let mut env = TestEnvironment {
        strict: true,
        ..Default::default()
    };
    match run_with(sql, &mut env) {
        Ok(Some(text)) => text,
        Ok(None) => "NULL".to_string(),
        Err(error) => panic!("{sql}: {error}"),
    }
}

fn warnings(sql: &str) -> Vec<u16> {
    let mut env = TestEnvironment::default();
    let _ = run_with(sql, &mut env);
    env.warnings.iter().map(|(_, code, _)| *code).collect()
}

fn failure(sql: &str) -> SqlError {
    let mut env = TestEnvironment::default();
    match run_with(sql, &mut env) {
        Err(error) => error,
        Ok(value) => panic!("{sql} gave {value:?}"),
    }
}

fn check(cases: &[(&str, &str)]) {
    for (sql, expected) in cases {
        assert_eq!(text(sql), *expected, "{sql}");
    }
}

#[test]
fn result_metadata_is_mysqls() {
    let one = compiled("1");
    assert_eq!(
        (one.sql_type().field_type, one.sql_type().length),
        (FieldType::LongLong, 1)
    );
    assert!(!one.sql_type().is_nullable());
    let decimal = compiled("1.5");
    let decimal_type = decimal.sql_type();
    assert_eq!(
        (
            decimal_type.field_type,
            decimal_type.length,
            decimal_type.decimals
        ),
        (FieldType::NewDecimal, 4, 1)
    );
    let string = compiled("'ab'");
    assert_eq!(
        (
            string.sql_type().field_type,
            string.sql_type().length,
            string.sql_type().collation
        ),
        (FieldType::VarString, 8, Collation::Utf8mb4AiCi)
    );
    let now = compiled("NOW()");
    assert_eq!(
        (now.sql_type().field_type, now.sql_type().length),
        (FieldType::DateTime, 19)
    );
    assert!(!now.is_constant());
    assert_eq!(compiled("NOW(3)").sql_type().decimals, 3);
    assert_eq!(
        compiled("CONCAT('a', c0)").sql_type().field_type,
        FieldType::VarString
    );
    assert_eq!(
        compiled("c0 + 1").sql_type().field_type,
        FieldType::LongLong
    );
    assert_eq!(
        compiled("c0 / 2").sql_type().field_type,
        FieldType::NewDecimal
    );
    assert_eq!(compiled("c0 / 2").sql_type().decimals, 4);
    assert_eq!(compiled("c4 + 1").sql_type().field_type, FieldType::Double);
    assert_eq!(compiled("c2 * c2").sql_type().decimals, 4);
    assert_eq!(
        compiled("c7 + 1").sql_type().flags & flags::UNSIGNED,
        flags::UNSIGNED
    );
    assert_eq!(compiled("c1 = 'x'").sql_type().length, 1);
    assert_eq!(compiled("CURDATE()").sql_type().field_type, FieldType::Date);
    assert_eq!(compiled("NULL").sql_type().field_type, FieldType::Null);
    assert_eq!(
        compiled("IF(c0, 1, 1.5)").sql_type().field_type,
        FieldType::NewDecimal
    );
    assert_eq!(
        compiled("IFNULL(c1, 'x')").sql_type().field_type,
        FieldType::VarString
    );
    assert_eq!(
        compiled("DATE_ADD(c3, INTERVAL 1 DAY)")
            .sql_type()
            .field_type,
        FieldType::Date
    );
    assert_eq!(
        compiled("DATE_ADD(c3, INTERVAL 1 HOUR)")
            .sql_type()
            .field_type,
        FieldType::DateTime
    );
    assert_eq!(
        compiled("CAST(c1 AS SIGNED)").sql_type().field_type,
        FieldType::LongLong
    );
    assert_eq!(compiled("X'41'").sql_type().collation, Collation::Binary);
    assert!(compiled("1 + 2").is_constant());
    assert!(!compiled("c0 + 2").is_constant());
    assert_eq!(compiled("c3").column(), Some(3));
    assert_eq!(compiled("`c3` + 0").column(), None);
}

#[test]
fn arithmetic_follows_mysql_types() {
    check(&[
        ("1 + 1", "2"),
        ("1 / 3", "0.3333"),
        ("2 / 3", "0.6667"),
        ("1.0 / 3", "0.33333"),
        ("5 DIV 2", "2"),
        ("-7 % 3", "-1"),
        ("7 % -3", "1"),
        ("MOD(7.5, 2)", "1.5"),
        ("0.1 + 0.2", "0.3"),
        ("0.1e0 + 0.2e0", "0.30000000000000004"),
        ("1.5 * 2.25", "3.375"),
        ("c2 * 2", "24.68"),
        ("c0 * c2", "518.28"),
        ("c4 * 2", "5"),
        ("-c0", "-42"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("18446744073709551615", "18446744073709551615"),
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
        ("0x41 + 0", "65"),
        ("b'101' + 0", "5"),
        ("X'41'", "A"),
        ("'1abc' + 1", "2"),
        ("'1.5e1' * 2", "30"),
        ("5 & 3", "1"),
        ("5 | 3", "7"),
        ("5 ^ 3", "6"),
        ("1 << 3", "8"),
        ("~0", "18446744073709551615"),
        ("c7 - 2", "5"),
        ("c3 + 0", "20240229"),
        ("TRUE + TRUE", "2"),
    ]);
    // SELECT '1abc' + 1 → 2 with warning 1292 "Truncated incorrect DOUBLE value: '1abc'".
    assert_eq!(warnings("'1abc' + 1"), vec![1292]);
    let mut env = TestEnvironment::default();
    run_with("'1abc' + 1", &mut env).unwrap();
    assert_eq!(
        env.warnings[0].2,
        "Truncated incorrect DOUBLE value: '1abc'"
    );
    // Division by zero is NULL with warning 1365.
    assert_eq!(text("1 / 0"), "NULL");
    assert_eq!(warnings("1 / 0"), vec![1365]);
    assert_eq!(text("1 DIV 0"), "NULL");
    assert_eq!(text("1 % 0"), "NULL");
    // BIGINT overflow is error 1690.
    let overflow = failure("9223372036854775807 + 1");
    assert_eq!(overflow.code, 1690);
    assert_eq!(
        overflow.message,
        "BIGINT value is out of range in '(9223372036854775807 + 1)'"
    );
    assert_eq!(&overflow.sqlstate, b"22003");
    assert_eq!(
        failure("CAST(1 AS UNSIGNED) - 2")
            .message
            .split(" value")
            .next(),
        Some("BIGINT UNSIGNED")
    );
    assert_eq!(failure("-(-9223372036854775807 - 1)").code, 1690);
    assert_eq!(failure("1e308 * 10").code, 1690);
}

#[test]
fn comparisons_and_logic() {
    check(&[
        ("1 = 1", "1"),
        ("'a' = 'A'", "1"),
        // utf8mb4_0900_ai_ci is NO PAD; utf8mb4_bin is PAD SPACE in MySQL 8.0.
        ("'a' = 'a '", "0"),
        ("'a' = 'a ' COLLATE utf8mb4_bin", "1"),
        ("c5 = 'abc  '", "1"),
        ("c5 = 'ABC'", "0"),
        ("c1 = 'HELLO'", "1"),
        ("'é' = 'E'", "1"),
        ("1 = '1'", "1"),
        ("'10' > '9'", "0"),
        ("10 > '9'", "1"),
        ("NULL = NULL", "NULL"),
        ("NULL <=> NULL", "1"),
        ("1 <=> NULL", "0"),
        ("1 <> 2", "1"),
        ("1 != 1", "0"),
        ("c3 = '2024-02-29'", "1"),
        ("c3 < '2024-03-01'", "1"),
        ("c3 = 20240229", "1"),
        ("c6 > '2024-01-02'", "1"),
        ("c6 = '2024-01-02 03:04:05.12'", "1"),
        ("c8 = '10:11:12'", "1"),
        ("1 AND NULL", "NULL"),
        ("0 AND NULL", "0"),
        ("1 OR NULL", "1"),
        ("0 OR NULL", "NULL"),
        ("1 XOR 1", "0"),
        ("1 XOR NULL", "NULL"),
        ("NOT 0", "1"),
        ("NOT NULL", "NULL"),
        ("1 && 0", "0"),
        ("1 || 0", "1"),
        ("NULL IS NULL", "1"),
        ("c0 IS NOT NULL", "1"),
        ("NULL IS TRUE", "0"),
        ("NULL IS NOT FALSE", "1"),
        ("2 IS TRUE", "1"),
        ("1 IN (1, NULL)", "1"),
        ("2 IN (1, NULL)", "NULL"),
        ("2 NOT IN (1, NULL)", "NULL"),
        ("2 NOT IN (1, 3)", "1"),
        ("'b' IN ('A', 'B')", "1"),
        ("2 BETWEEN 1 AND 3", "1"),
        ("2 NOT BETWEEN 1 AND 3", "0"),
        ("NULL BETWEEN 1 AND 3", "NULL"),
        ("'b' BETWEEN 'A' AND 'C'", "1"),
        ("c3 BETWEEN '2024-01-01' AND '2024-12-31'", "1"),
        ("0x41 = 65", "1"),
        ("'abc' LIKE 'A%'", "1"),
        ("'abc' LIKE BINARY 'A%'", "0"),
        ("c5 LIKE 'A%'", "0"),
        ("'a%c' LIKE 'a!%c' ESCAPE '!'", "1"),
        ("'abc' NOT LIKE 'a_c'", "0"),
        ("123 LIKE '1%'", "1"),
        ("NULL LIKE 'a'", "NULL"),
        ("'Michael!' REGEXP '^[A-Z]'", "1"),
        ("'abc' REGEXP 'B'", "1"),
        ("'abc' NOT REGEXP '^b'", "1"),
        ("c0 IS DISTINCT FROM NULL", "1"),
    ]);
}

#[test]
fn control_flow() {
    check(&[
        (
            "CASE 1 WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'more' END",
            "one",
        ),
        ("CASE WHEN 1 > 0 THEN 'true' ELSE 'false' END", "true"),
        (
            "CASE BINARY 'B' WHEN 'a' THEN 1 WHEN 'b' THEN 2 END",
            "NULL",
        ),
        ("CASE 'B' WHEN 'a' THEN 1 WHEN 'b' THEN 2 END", "2"),
        ("IF(1 > 2, 2, 3)", "3"),
        ("IF(1 < 2, 'yes', 'no')", "yes"),
        ("IF(NULL, 1, 2)", "2"),
        ("IF(c0, 1, 1.5)", "1.0"),
        ("IFNULL(1, 0)", "1"),
        ("IFNULL(NULL, 10)", "10"),
        ("IFNULL(1 / 0, 'yes')", "yes"),
        ("NULLIF(1, 1)", "NULL"),
        ("NULLIF(1, 2)", "1"),
        ("COALESCE(NULL, 1)", "1"),
        ("COALESCE(NULL, NULL, NULL)", "NULL"),
        ("GREATEST(2, 0)", "2"),
        ("GREATEST(34.0, 3.0, 5.0, 767.0)", "767.0"),
        ("GREATEST('B', 'A', 'C')", "C"),
        ("GREATEST(1, NULL)", "NULL"),
        ("LEAST(2, 0)", "0"),
        ("LEAST(34.0, 3.0, 5.0, 767.0)", "3.0"),
        ("LEAST('B', 'A', 'C')", "A"),
        ("ISNULL(1 + 1)", "0"),
        ("ISNULL(1 / 0)", "1"),
    ]);
}

#[test]
fn string_functions() {
    check(&[
        ("CONCAT('My', 'S', 'QL')", "MySQL"),
        ("CONCAT('My', NULL, 'QL')", "NULL"),
        ("CONCAT(14.3)", "14.3"),
        ("CONCAT(c2, '|', c6)", "12.34|2024-01-02 03:04:05.120"),
        (
            "CONCAT_WS(',', 'First name', 'Second name', 'Last Name')",
            "First name,Second name,Last Name",
        ),
        (
            "CONCAT_WS(',', 'First name', NULL, 'Last Name')",
            "First name,Last Name",
        ),
        ("CONCAT_WS(NULL, 'a')", "NULL"),
        ("LENGTH('text')", "4"),
        ("LENGTH('é')", "2"),
        ("OCTET_LENGTH('é')", "2"),
        ("CHAR_LENGTH('é')", "1"),
        ("CHARACTER_LENGTH('日本')", "2"),
        ("BIT_LENGTH('text')", "32"),
        ("UPPER('Hej')", "HEJ"),
        ("UCASE('straße')", "STRAßE"),
        ("LOWER('QUADRATICALLY')", "quadratically"),
        ("LCASE('ÄÖ')", "äö"),
        ("SUBSTRING('Quadratically', 5)", "ratically"),
        ("SUBSTRING('foobarbar' FROM 4)", "barbar"),
        ("SUBSTRING('Quadratically', 5, 6)", "ratica"),
        ("SUBSTRING('Sakila', -3)", "ila"),
        ("SUBSTRING('Sakila', -5, 3)", "aki"),
        ("SUBSTRING('Sakila' FROM -4 FOR 2)", "ki"),
        ("SUBSTR('Sakila', 2)", "akila"),
        ("MID('Sakila', 2, 3)", "aki"),
        ("SUBSTRING_INDEX('www.mysql.com', '.', 2)", "www.mysql"),
        ("SUBSTRING_INDEX('www.mysql.com', '.', -2)", "mysql.com"),
        ("LEFT('foobarbar', 5)", "fooba"),
        ("RIGHT('foobarbar', 4)", "rbar"),
        ("TRIM('  bar   ')", "bar"),
        ("TRIM(LEADING 'x' FROM 'xxxbarxxx')", "barxxx"),
        ("TRIM(BOTH 'x' FROM 'xxxbarxxx')", "bar"),
        ("TRIM(TRAILING 'xyz' FROM 'barxxyz')", "barx"),
        ("LTRIM('  barbar')", "barbar"),
        ("RTRIM('barbar   ')", "barbar"),
        ("LPAD('hi', 4, '??')", "??hi"),
        ("LPAD('hi', 1, '??')", "h"),
        ("RPAD('hi', 5, '?')", "hi???"),
        ("RPAD('hi', 1, '?')", "h"),
        ("REPLACE('www.mysql.com', 'w', 'Ww')", "WwWwWw.mysql.com"),
        ("LOCATE('bar', 'foobarbar')", "4"),
        ("LOCATE('xbar', 'foobar')", "0"),
        ("LOCATE('bar', 'foobarbar', 5)", "7"),
        ("INSTR('foobarbar', 'bar')", "4"),
        ("INSTR('xbar', 'foobar')", "0"),
        ("POSITION('bar' IN 'foobarbar')", "4"),
        ("REVERSE('abc')", "cba"),
        ("REPEAT('MySQL', 3)", "MySQLMySQLMySQL"),
        ("CONCAT('[', SPACE(3), ']')", "[   ]"),
        ("ASCII('2')", "50"),
        ("ASCII('dx')", "100"),
        ("ASCII('')", "0"),
        ("ORD('2')", "50"),
        ("HEX('abc')", "616263"),
        ("HEX(255)", "FF"),
        ("HEX(-1)", "FFFFFFFFFFFFFFFF"),
        ("UNHEX('4D7953514C')", "MySQL"),
        ("UNHEX('GG')", "NULL"),
        ("MD5('testing')", "ae2b1fca515949e5d54fb22b8ed95575"),
        ("SHA1('abc')", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            "SHA2('abc', 224)",
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
        ),
        ("SHA2('abc', 7)", "NULL"),
        ("CRC32('MySQL')", "3259397556"),
        ("FORMAT(12332.123456, 4)", "12,332.1235"),
        ("FORMAT(12332.1, 4)", "12,332.1000"),
        ("FORMAT(12332.2, 0)", "12,332"),
        ("FORMAT(-1234567.891, 2)", "-1,234,567.89"),
        ("FIELD('Bb', 'Aa', 'Bb', 'Cc', 'Dd', 'Ff')", "2"),
        ("FIELD('Gg', 'Aa', 'Bb', 'Cc', 'Dd', 'Ff')", "0"),
        ("ELT(1, 'Aa', 'Bb', 'Cc', 'Dd')", "Aa"),
        ("ELT(4, 'Aa', 'Bb', 'Cc', 'Dd')", "Dd"),
        ("ELT(5, 'Aa', 'Bb')", "NULL"),
        ("STRCMP('text', 'text2')", "-1"),
        ("STRCMP('text2', 'text')", "1"),
        ("STRCMP('text', 'text')", "0"),
        ("CHAR(77, 121, 83, 81, '76')", "MySQL"),
        ("INSERT('Quadratic', 3, 4, 'What')", "QuWhattic"),
        ("INSERT('Quadratic', -1, 4, 'What')", "Quadratic"),
        ("INSERT('Quadratic', 3, 100, 'What')", "QuWhat"),
        ("FIND_IN_SET('b', 'a,b,c,d')", "2"),
        ("QUOTE('Don''t!')", "'Don\\'t!'"),
        ("QUOTE(NULL)", "NULL"),
        ("BIN(12)", "1100"),
        ("OCT(12)", "14"),
        ("CONV('a', 16, 2)", "1010"),
        ("CONV('6E', 18, 8)", "172"),
        ("CONV(-17, 10, -18)", "-H"),
        ("TO_BASE64('abc')", "YWJj"),
        ("FROM_BASE64(TO_BASE64('abc'))", "abc"),
        ("CONVERT('abc' USING utf8mb4)", "abc"),
    ]);
    let mut env = TestEnvironment::default();
    let expression = compiled("CONVERT('é' USING latin1)");
    assert_eq!(
        evaluate(&expression, &row(), &mut env).unwrap(),
        SqlValue::String(vec![0xE9])
    );
    assert_eq!(expression.sql_type().collation, Collation::Latin1Ci);
}

#[test]
fn numeric_functions() {
    check(&[
        ("ABS(2)", "2"),
        ("ABS(-32)", "32"),
        ("ABS(-1.50)", "1.50"),
        ("SIGN(-32)", "-1"),
        ("SIGN(0)", "0"),
        ("SIGN(234)", "1"),
        ("ROUND(-1.23)", "-1"),
        ("ROUND(-1.58)", "-2"),
        ("ROUND(1.58)", "2"),
        ("ROUND(1.298, 1)", "1.3"),
        ("ROUND(1.298, 0)", "1"),
        ("ROUND(23.298, -1)", "20"),
        (
            "ROUND(.12345678901234567890123456789, 35)",
            "0.123456789012345678901234567890",
        ),
        ("ROUND(2.5)", "3"),
        ("ROUND(25E-1)", "2"),
        ("ROUND(150, -2)", "200"),
        ("TRUNCATE(1.223, 1)", "1.2"),
        ("TRUNCATE(1.999, 1)", "1.9"),
        ("TRUNCATE(1.999, 0)", "1"),
        ("TRUNCATE(-1.999, 1)", "-1.9"),
        ("TRUNCATE(122, -2)", "100"),
        ("FLOOR(1.23)", "1"),
        ("FLOOR(-1.23)", "-2"),
        ("CEILING(1.23)", "2"),
        ("CEIL(-1.23)", "-1"),
        ("FLOOR(1.5e0)", "1"),
        ("POW(2, 2)", "4"),
        ("POWER(2, -2)", "0.25"),
        ("SQRT(4)", "2"),
        ("SQRT(20)", "4.47213595499958"),
        ("SQRT(-16)", "NULL"),
        ("EXP(0)", "1"),
        ("LN(1)", "0"),
        ("LOG(2, 65536)", "16"),
        ("LOG(10, 100)", "2"),
        ("LOG2(65536)", "16"),
        ("LOG10(100)", "2"),
        ("PI()", "3.141593"),
        ("DEGREES(PI())", "180"),
        ("RADIANS(90)", "1.5707963267948966"),
        ("COS(PI())", "-1"),
        ("ATAN(-2, 2)", "-0.7853981633974483"),
        ("BIT_COUNT(29)", "4"),
        ("RAND(1)", "0.40540353712197724"),
        ("ABS(0x41)", "65"),
    ]);
    assert_eq!(text("LN(0)"), "NULL");
    assert_eq!(warnings("LN(0)"), vec![3020]);
    assert_eq!(warnings("LOG(-2)"), vec![3020]);
    assert_eq!(failure("ABS(-9223372036854775807 - 1)").code, 1690);
    assert_eq!(failure("COT(0)").code, 1690);
}

#[test]
fn dates_and_times() {
    check(&[
        ("NOW()", "2024-01-02 03:04:05"),
        ("NOW(3)", "2024-01-02 03:04:05.123"),
        ("CURRENT_TIMESTAMP", "2024-01-02 03:04:05"),
        ("CURDATE()", "2024-01-02"),
        ("CURRENT_DATE", "2024-01-02"),
        ("CURTIME()", "03:04:05"),
        ("UTC_TIMESTAMP()", "2024-01-02 03:04:05"),
        ("DATE('2003-12-31 01:02:03')", "2003-12-31"),
        ("TIME('2003-12-31 01:02:03')", "01:02:03"),
        ("TIME('2003-12-31 01:02:03.000123')", "01:02:03.000123"),
        ("YEAR('1987-01-01')", "1987"),
        ("MONTH('2008-02-03')", "2"),
        ("DAY('2007-02-03')", "3"),
        ("DAYOFMONTH('2007-02-03')", "3"),
        ("HOUR('10:05:03')", "10"),
        ("HOUR('272:59:59')", "272"),
        ("MINUTE('2008-02-03 10:05:03')", "5"),
        ("SECOND('10:05:03')", "3"),
        ("MICROSECOND('12:00:00.123456')", "123456"),
        ("MICROSECOND('2019-12-31 23:59:59.000010')", "10"),
        ("DAYOFWEEK('2007-02-03')", "7"),
        ("WEEKDAY('2008-02-03 22:23:00')", "6"),
        ("WEEKDAY('2007-11-06')", "1"),
        ("DAYOFYEAR('2007-02-03')", "34"),
        ("DAYNAME('2007-02-03')", "Saturday"),
        ("MONTHNAME('2008-02-03')", "February"),
        ("LAST_DAY('2003-02-05')", "2003-02-28"),
        ("LAST_DAY('2004-02-05')", "2004-02-29"),
        ("LAST_DAY('2004-01-01 01:01:01')", "2004-01-31"),
        ("LAST_DAY('2003-03-32')", "NULL"),
        ("WEEK('2008-02-20')", "7"),
        ("WEEK('2008-02-20', 0)", "7"),
        ("WEEK('2008-02-20', 1)", "8"),
        ("WEEK('2008-12-31', 1)", "53"),
        ("WEEKOFYEAR('2008-02-20')", "8"),
        ("YEARWEEK('1987-01-01')", "198652"),
        ("QUARTER('2008-04-01')", "2"),
        ("DATE_ADD('2018-05-01', INTERVAL 1 DAY)", "2018-05-02"),
        ("DATE_SUB('2018-05-01', INTERVAL 1 YEAR)", "2017-05-01"),
        (
            "DATE_ADD('2020-12-31 23:59:59', INTERVAL 1 SECOND)",
            "2021-01-01 00:00:00",
        ),
        (
            "DATE_ADD('2018-12-31 23:59:59', INTERVAL 1 DAY)",
            "2019-01-01 23:59:59",
        ),
        (
            "DATE_SUB('2025-01-01 00:00:00', INTERVAL '1 1:1:1' DAY TO SECOND)",
            "2024-12-30 22:58:59",
        ),
        (
            "DATE_ADD('1900-01-01 00:00:00', INTERVAL '-1 10' DAY TO HOUR)",
            "1899-12-30 14:00:00",
        ),
        ("DATE_SUB('1998-01-02', INTERVAL 31 DAY)", "1997-12-02"),
        (
            "DATE_ADD('1992-12-31 23:59:59.000002', INTERVAL '1.999999' SECOND)",
            "1993-01-01 00:00:01.000001",
        ),
        ("DATE_ADD('2024-01-31', INTERVAL 1 MONTH)", "2024-02-29"),
        (
            "'2008-12-31 23:59:59' + INTERVAL 1 SECOND",
            "2009-01-01 00:00:00",
        ),
        ("INTERVAL 1 DAY + '2008-12-31'", "2009-01-01"),
        ("'2005-01-01' - INTERVAL 1 SECOND", "2004-12-31 23:59:59"),
        ("ADDDATE('2008-01-02', 31)", "2008-02-02"),
        ("SUBDATE('2008-01-02 12:00:00', 31)", "2007-12-02 12:00:00"),
        ("c3 + INTERVAL 1 DAY", "2024-03-01"),
        ("c3 - INTERVAL 1 YEAR", "2023-02-28"),
        ("DATEDIFF('2007-12-31 23:59:59', '2007-12-30')", "1"),
        ("DATEDIFF('2010-11-30 23:59:59', '2010-12-31')", "-31"),
        (
            "TIMEDIFF('2000-01-01 00:00:00', '2000-01-01 00:00:00.000001')",
            "-00:00:00.000001",
        ),
        (
            "TIMEDIFF('2008-12-31 23:59:59.000001', '2008-12-30 01:01:01.000002')",
            "46:58:57.999999",
        ),
        ("TIMEDIFF('10:00:00', '2000-01-01 00:00:00')", "NULL"),
        ("TIMESTAMPDIFF(MONTH, '2003-02-01', '2003-05-01')", "3"),
        ("TIMESTAMPDIFF(YEAR, '2002-05-01', '2001-01-01')", "-1"),
        (
            "TIMESTAMPDIFF(MINUTE, '2003-02-01', '2003-05-01 12:05:55')",
            "128885",
        ),
        (
            "TIMESTAMPADD(MINUTE, 1, '2003-01-02')",
            "2003-01-02 00:01:00",
        ),
        ("TIMESTAMPADD(WEEK, 1, '2003-01-02')", "2003-01-09"),
        (
            "DATE_FORMAT('2009-10-04 22:23:00', '%W %M %Y')",
            "Sunday October 2009",
        ),
        ("DATE_FORMAT('2007-10-04 22:23:00', '%H:%i:%s')", "22:23:00"),
        (
            "DATE_FORMAT('1900-10-04 22:23:00', '%D %y %a %d %m %b %j')",
            "4th 00 Thu 04 10 Oct 277",
        ),
        (
            "DATE_FORMAT('1997-10-04 22:23:00', '%H %k %I %r %T %S %w')",
            "22 22 10 10:23:00 PM 22:23:00 00 6",
        ),
        ("DATE_FORMAT('1999-01-01', '%X %V')", "1998 52"),
        ("DATE_FORMAT('2006-06-00', '%d')", "00"),
        (
            "TIME_FORMAT('100:00:00', '%H %k %h %I %l')",
            "100 100 04 04 4",
        ),
        ("STR_TO_DATE('01,5,2013', '%d,%m,%Y')", "2013-05-01"),
        ("STR_TO_DATE('May 1, 2013', '%M %d,%Y')", "2013-05-01"),
        ("STR_TO_DATE('a09:30:17', 'a%h:%i:%s')", "09:30:17"),
        ("STR_TO_DATE('09:30:17a', '%h:%i:%s')", "09:30:17"),
        ("STR_TO_DATE('a09:30:17', '%h:%i:%s')", "NULL"),
        ("TO_DAYS(950501)", "728779"),
        ("TO_DAYS('2007-10-07')", "733321"),
        ("FROM_DAYS(730669)", "2000-07-03"),
        ("TO_SECONDS(950501)", "62966505600"),
        ("EXTRACT(YEAR FROM '2019-07-02')", "2019"),
        ("EXTRACT(MONTH FROM '2019-07-02 01:02:03')", "7"),
        (
            "EXTRACT(MICROSECOND FROM '2003-01-02 10:30:00.000123')",
            "123",
        ),
        ("UNIX_TIMESTAMP('2015-11-13 10:20:19')", "1447410019"),
        (
            "UNIX_TIMESTAMP('2015-11-13 10:20:19.012')",
            "1447410019.012",
        ),
        ("UNIX_TIMESTAMP()", "1704164645"),
        ("FROM_UNIXTIME(1447430881)", "2015-11-13 16:08:01"),
        (
            "FROM_UNIXTIME(1447430881, '%Y %D %M %h:%i:%s %x')",
            "2015 13th November 04:08:01 2015",
        ),
        ("MAKEDATE(2011, 31)", "2011-01-31"),
        ("MAKEDATE(2011, 32)", "2011-02-01"),
        ("MAKEDATE(2011, 0)", "NULL"),
        ("MAKETIME(12, 15, 30)", "12:15:30"),
        ("SEC_TO_TIME(2378)", "00:39:38"),
        ("TIME_TO_SEC('22:23:00')", "80580"),
        ("TIME_TO_SEC('00:39:38')", "2378"),
        (
            "ADDTIME('2007-12-31 23:59:59.999999', '1 1:1:1.000002')",
            "2008-01-02 01:01:01.000001",
        ),
        (
            "ADDTIME('01:00:00.999999', '02:00:00.999998')",
            "03:00:01.999997",
        ),
        (
            "SUBTIME('01:00:00.999999', '02:00:00.999998')",
            "-00:59:59.999999",
        ),
        ("DATE '2024-01-02'", "2024-01-02"),
        ("TIME '10:11:12'", "10:11:12"),
        ("TIMESTAMP '2024-01-02 10:11:12'", "2024-01-02 10:11:12"),
        ("c6", "2024-01-02 03:04:05.120"),
        ("c6 + 0", "20240102030405.120"),
    ]);
    // Invalid dates are NULL with warning 1292.
    assert_eq!(text("DATE('2024-13-01')"), "NULL");
    assert_eq!(warnings("DATE('2024-13-01')"), vec![1292]);
    assert_eq!(text("DATE_ADD('9999-12-31', INTERVAL 1 DAY)"), "NULL");
    assert_eq!(
        warnings("DATE_ADD('9999-12-31', INTERVAL 1 DAY)"),
        vec![1441]
    );
    assert_eq!(warnings("STR_TO_DATE('x', '%Y')"), vec![1411]);
    assert_eq!(failure("DATE 'x'").code, 1525);
}

#[test]
fn casts() {
    check(&[
        ("CAST(1.5 AS SIGNED)", "2"),
        ("CAST(-1.5 AS SIGNED)", "-2"),
        ("CAST(1.5e0 AS SIGNED)", "2"),
        ("CAST(2.5e0 AS SIGNED)", "2"),
        ("CAST('1.5' AS SIGNED)", "1"),
        ("CAST(-1 AS UNSIGNED)", "18446744073709551615"),
        ("CAST(18446744073709551615 AS SIGNED)", "-1"),
        ("CAST(CAST(1 - 2 AS UNSIGNED) AS SIGNED)", "-1"),
        ("CAST('10 ' AS UNSIGNED)", "10"),
        ("CAST(1 AS DECIMAL(5, 2))", "1.00"),
        ("CAST(1.239 AS DECIMAL(5, 2))", "1.24"),
        ("CAST(1000 AS DECIMAL(3, 0))", "999"),
        ("CAST('2024-01-02' AS DATE)", "2024-01-02"),
        (
            "CAST('2024-01-02 10:11:12.5' AS DATETIME)",
            "2024-01-02 10:11:13",
        ),
        (
            "CAST('2024-01-02 10:11:12.5' AS DATETIME(1))",
            "2024-01-02 10:11:12.5",
        ),
        ("CAST('10:11:12' AS TIME)", "10:11:12"),
        ("CAST(20240102 AS DATE)", "2024-01-02"),
        ("CAST('abc' AS DATE)", "NULL"),
        ("CAST(12.5 AS CHAR)", "12.5"),
        ("CAST('abc' AS CHAR(2))", "ab"),
        ("CAST(c3 AS CHAR)", "2024-02-29"),
        ("CAST(1 AS DOUBLE)", "1"),
        ("CAST('1.25' AS DOUBLE)", "1.25"),
        ("CONVERT('42', SIGNED)", "42"),
        ("CONVERT(3.5, CHAR)", "3.5"),
        ("(BINARY 'a') = 'A'", "0"),
    ]);
    assert_eq!(warnings("CAST('1.5' AS SIGNED)"), vec![1292]);
    assert_eq!(warnings("CAST(1000 AS DECIMAL(3, 0))"), vec![1264]);
    assert_eq!(warnings("CAST('abc' AS DATE)"), vec![1292]);
    assert_eq!(warnings("CAST('abc' AS CHAR(2))"), vec![1292]);
    let mut env = TestEnvironment::default();
    let expression = compiled("CAST('a' AS BINARY(3))");
    assert_eq!(
        evaluate(&expression, &row(), &mut env).unwrap(),
        SqlValue::String(b"a\0\0".to_vec())
    );
}

#[test]
fn variables_information_and_parameters() {
    check(&[
        ("@x", "10"),
        ("@y", "NULL"),
        ("@x + 1", "11"),
        ("@@version", "8.0.40-shoal"),
        ("@@session.autocommit", "1"),
        ("DATABASE()", "test"),
        ("SCHEMA()", "test"),
        ("USER()", "root@localhost"),
        ("CURRENT_USER()", "root@localhost"),
        ("CURRENT_USER", "root@localhost"),
        ("CONNECTION_ID()", "7"),
        ("VERSION()", "8.0.40-shoal"),
        ("ROW_COUNT()", "-1"),
        ("FOUND_ROWS()", "3"),
    ]);
    assert_eq!(failure("@@nonsense").code, 1193);
    let mut env = TestEnvironment::default();
    assert_eq!(
        run_with("LAST_INSERT_ID(5)", &mut env).unwrap().as_deref(),
        Some("5")
    );
    assert_eq!(env.last_insert_id, 5);
    assert_eq!(
        run_with("LAST_INSERT_ID()", &mut env).unwrap().as_deref(),
        Some("5")
    );
    // Bare `?` are numbered left to right; `?N` is parameter N−1.
    let mut env = TestEnvironment {
        parameters: vec![SqlValue::Int(2), SqlValue::String(b"3".to_vec())],
        ..Default::default()
    };
    assert_eq!(run_with("? + ?", &mut env).unwrap().as_deref(), Some("5"));
    assert_eq!(
        run_with("?2 * 10", &mut env).unwrap().as_deref(),
        Some("30")
    );
    assert_eq!(compiled("?2").parameter(), Some(1));
    assert_eq!(
        run_with("c2 + ?", &mut env).unwrap().as_deref(),
        Some("14.34")
    );
    assert_eq!(run_with("c0 = ?", &mut env).unwrap().as_deref(), Some("0"));
    assert_eq!(
        run_with("? IS NULL", &mut env).unwrap().as_deref(),
        Some("0")
    );
    let mut missing = TestEnvironment::default();
    assert_eq!(run_with("?", &mut missing).unwrap_err().code, 1210);
}

#[test]
fn compile_errors_are_mysqls() {
    let unknown = failure("foo(1)");
    assert_eq!(
        (unknown.code, unknown.message.as_str()),
        (1305, "FUNCTION test.foo does not exist")
    );
    assert_eq!(&unknown.sqlstate, b"42000");
    let count = failure("ABS(1, 2)");
    assert_eq!(
        (count.code, count.message.as_str()),
        (
            1582,
            "Incorrect parameter count in the call to native function 'ABS'"
        )
    );
    assert_eq!(failure("nosuch + 1").code, 1054);
    assert_eq!(failure("SUM(c0)").code, 1111);
    assert_eq!(failure("c0 COLLATE nonsense").code, 1273);
    assert_eq!(failure("_nonsense'x'").code, 1115);
    assert_eq!(failure("1 := 1").code, 1064);
    assert_eq!(failure("(SELECT 1)").code, 1235);
    assert_eq!(failure("SUM(c0) OVER ()").code, 1235);
    assert_eq!(failure("'[' REGEXP '['").code, 3696);
}

#[test]
fn comparison_and_grouping_helpers() {
    use std::cmp::Ordering;
    let text = |value: &str| SqlValue::String(value.as_bytes().to_vec());
    assert_eq!(
        compare(&SqlValue::Int(1), &text("1"), CONNECTION_COLLATION),
        Some(Ordering::Equal)
    );
    assert_eq!(
        compare(&text("10"), &text("9"), CONNECTION_COLLATION),
        Some(Ordering::Less)
    );
    assert_eq!(
        compare(&SqlValue::Int(10), &text("9"), CONNECTION_COLLATION),
        Some(Ordering::Greater)
    );
    assert_eq!(
        compare(&SqlValue::Null, &SqlValue::Int(1), CONNECTION_COLLATION),
        None
    );
    assert_eq!(
        compare(
            &SqlValue::UInt(u64::MAX),
            &SqlValue::Int(-1),
            CONNECTION_COLLATION
        ),
        Some(Ordering::Greater)
    );
    assert_eq!(
        compare(
            &SqlValue::Decimal(Decimal::new(10, 1)),
            &SqlValue::Int(1),
            CONNECTION_COLLATION
        ),
        Some(Ordering::Equal)
    );
    assert_eq!(
        compare_strings(Collation::Utf8mb4Bin, b"a", b"a  "),
        Ordering::Equal
    );
    assert_eq!(
        compare_strings(Collation::Utf8mb4Bin, b"a\t", b"a"),
        Ordering::Less
    );
    let key = |value: &SqlValue, sql_type: &SqlType| {
        let mut out = Vec::new();
        group_key(value, sql_type, &mut out);
        out
    };
    let ci = SqlType::string(10, Collation::Utf8mb4AiCi);
    let bin = SqlType::string(10, Collation::Utf8mb4Bin);
    let number = SqlType::decimal(10, 2, false);
    assert_eq!(key(&text("a"), &ci), key(&text("A"), &ci));
    assert_ne!(key(&text("a"), &bin), key(&text("A"), &bin));
    assert_eq!(key(&text("a"), &bin), key(&text("a  "), &bin));
    assert_eq!(
        key(&SqlValue::Int(1), &number),
        key(&SqlValue::Decimal(Decimal::new(100, 2)), &number)
    );
    assert_eq!(
        key(&SqlValue::Double(1.0), &number),
        key(&SqlValue::Int(1), &number)
    );
    assert_ne!(
        key(&SqlValue::Null, &number),
        key(&SqlValue::Int(0), &number)
    );
    assert_eq!(
        key(&SqlValue::Date(Date::new(2024, 1, 2)), &SqlType::date()),
        key(
            &SqlValue::Datetime(Datetime::from_date(Date::new(2024, 1, 2))),
            &SqlType::date()
        )
    );
    // Composite keys stay apart: ('a', 'bc') and ('ab', 'c').
    let mut first = key(&text("a"), &ci);
    first.extend(key(&text("bc"), &ci));
    let mut second = key(&text("ab"), &ci);
    second.extend(key(&text("c"), &ci));
    assert_ne!(first, second);
    let call = |sql: &str| match parse(sql) {
        Expr::Function(call) => call,
        other => panic!("{other}"),
    };
    assert_eq!(
        aggregate_key(&call("count(*)")),
        aggregate_key(&call("COUNT(*)"))
    );
    assert_ne!(
        aggregate_key(&call("SUM(c0)")),
        aggregate_key(&call("SUM(c2)"))
    );
    let condition = compiled("c0 > 40");
    assert!(evaluate_condition(&condition, &row(), &mut TestEnvironment::default()).unwrap());
    let unknown = compiled("NULL > 40");
    assert!(!evaluate_condition(&unknown, &row(), &mut TestEnvironment::default()).unwrap());
}

fn aggregate_over(sql: &str, rows: &[Vec<SqlValue>]) -> (SqlValue, AggregateCall, Vec<u16>) {
    let Expr::Function(call) = parse(sql) else {
        panic!("{sql} is no call");
    };
    assert!(is_aggregate(&call), "{sql}");
    let compiled =
        compile_aggregate(&call, &TestScope).unwrap_or_else(|error| panic!("{sql}: {error}"));
    let mut accumulator = Accumulator::new(&compiled);
    let mut env = TestEnvironment::default();
    for row in rows {
        let arguments: Vec<SqlValue> = compiled
            .arguments
            .iter()
            .map(|argument| evaluate(argument, row, &mut env).unwrap())
            .collect();
        accumulator.update(&arguments, &mut env).unwrap();
    }
    let codes = env.warnings.iter().map(|(_, code, _)| *code).collect();
    (accumulator.finish(), compiled, codes)
}

fn rows_of(values: &[(i64, &str)]) -> Vec<Vec<SqlValue>> {
    values
        .iter()
        .map(|(number, text)| {
            let mut row = row();
            row[0] = SqlValue::Int(*number);
            row[1] = if text.is_empty() {
                SqlValue::Null
            } else {
                SqlValue::String(text.as_bytes().to_vec())
            };
            row
        })
        .collect()
}

#[test]
fn aggregates() {
    let rows = rows_of(&[(1, "b"), (2, "A"), (2, ""), (4, "c")]);
    let rendered = |sql: &str| {
        let (value, call, _) = aggregate_over(sql, &rows);
        let mut out = Vec::new();
        write_text(&value, &call.sql_type, &mut out);
        (String::from_utf8_lossy(&out).into_owned(), call.sql_type)
    };
    let (count, count_type) = rendered("COUNT(*)");
    assert_eq!(
        (count.as_str(), count_type.field_type),
        ("4", FieldType::LongLong)
    );
    assert_eq!(rendered("COUNT(c1)").0, "3");
    assert_eq!(rendered("COUNT(DISTINCT c0)").0, "3");
    assert_eq!(rendered("COUNT(DISTINCT c0, c1)").0, "3");
    let (sum, sum_type) = rendered("SUM(c0)");
    assert_eq!(
        (sum.as_str(), sum_type.field_type, sum_type.decimals),
        ("9", FieldType::NewDecimal, 0)
    );
    assert_eq!(rendered("SUM(DISTINCT c0)").0, "7");
    let (average, average_type) = rendered("AVG(c0)");
    assert_eq!((average.as_str(), average_type.decimals), ("2.2500", 4));
    assert_eq!(rendered("AVG(c4)").0, "2.5");
    assert_eq!(rendered("SUM(c2)").0, "49.36");
    assert_eq!(rendered("AVG(c2)").0, "12.340000");
    assert_eq!(rendered("MIN(c0)").0, "1");
    assert_eq!(rendered("MAX(c1)").0, "c");
    assert_eq!(rendered("MIN(c1)").0, "A");
    assert_eq!(rendered("GROUP_CONCAT(c1)").0, "b,A,c");
    assert_eq!(
        rendered("GROUP_CONCAT(c1 ORDER BY c1 DESC SEPARATOR ';')").0,
        "c;b;A"
    );
    assert_eq!(rendered("GROUP_CONCAT(DISTINCT c0 ORDER BY c0)").0, "1,2,4");
    assert_eq!(rendered("BIT_OR(c0)").0, "7");
    assert_eq!(rendered("BIT_AND(c0)").0, "0");
    assert_eq!(rendered("BIT_XOR(c0)").0, "5");
    assert_eq!(rendered("STDDEV_POP(c0)").0, "1.0897247358851685");
    assert_eq!(rendered("VAR_SAMP(c0)").0, "1.5833333333333333");
    // An empty group: COUNT is 0, SUM NULL, BIT_AND all ones.
    let empty: Vec<Vec<SqlValue>> = Vec::new();
    assert_eq!(aggregate_over("COUNT(*)", &empty).0, SqlValue::Int(0));
    assert_eq!(aggregate_over("SUM(c0)", &empty).0, SqlValue::Null);
    assert_eq!(aggregate_over("MAX(c0)", &empty).0, SqlValue::Null);
    assert_eq!(aggregate_over("GROUP_CONCAT(c1)", &empty).0, SqlValue::Null);
    assert_eq!(
        aggregate_over("BIT_AND(c0)", &empty).0,
        SqlValue::UInt(u64::MAX)
    );
    // group_concat_max_len: 1024 bytes, then warning 1260.
    let long_rows = rows_of(&[(1, &"x".repeat(600)), (2, &"y".repeat(600))]);
    let (value, _, codes) = aggregate_over("GROUP_CONCAT(c1)", &long_rows);
    assert_eq!(value.to_text().len(), GROUP_CONCAT_MAX_LENGTH);
    assert_eq!(codes, vec![1260]);
    let Expr::Function(call) = parse("SUM(COUNT(c0))") else {
        panic!("no call");
    };
    assert_eq!(compile_aggregate(&call, &TestScope).unwrap_err().code, 1111);
}

// ---------------------------------------------------------------------------
// No input panics

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("NULL".to_string()),
        (-5i64..5).prop_map(|value| value.to_string()),
        Just("9223372036854775807".to_string()),
        Just("18446744073709551615".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("99999999999999999999999999999999999999".to_string()),
        Just("0.000000000000000000000000000001".to_string()),
        Just("1e-300".to_string()),
        Just("'99999999999999999999'".to_string()),
        Just("-0.5".to_string()),
        Just("1e308".to_string()),
        Just("'abc'".to_string()),
        Just("''".to_string()),
        Just("'2024-02-29 10:11:12.5'".to_string()),
        Just("'-838:59:59'".to_string()),
        Just("'1x'".to_string()),
        Just("X'FF'".to_string()),
        Just("'é'".to_string()),
        Just("?".to_string()),
        Just("@x".to_string()),
        (0usize..10).prop_map(|column| format!("c{column}")),
    ]
}

fn expression_text() -> impl Strategy<Value = String> {
    let operators = prop_oneof![
        Just("+"),
        Just("-"),
        Just("*"),
        Just("/"),
        Just("DIV"),
        Just("%"),
        Just("="),
        Just("<=>"),
        Just("<"),
        Just(">="),
        Just("AND"),
        Just("OR"),
        Just("XOR"),
        Just("&"),
        Just("|"),
        Just("<<"),
        Just("LIKE"),
        Just("REGEXP"),
    ];
    let functions = prop_oneof![
        Just("CONCAT"),
        Just("SUBSTRING"),
        Just("LEFT"),
        Just("LPAD"),
        Just("REPEAT"),
        Just("ROUND"),
        Just("TRUNCATE"),
        Just("ABS"),
        Just("POW"),
        Just("LOG"),
        Just("DATE_FORMAT"),
        Just("DATEDIFF"),
        Just("TIMEDIFF"),
        Just("STR_TO_DATE"),
        Just("IF"),
        Just("COALESCE"),
        Just("GREATEST"),
        Just("FIELD"),
        Just("ELT"),
        Just("CONV"),
        Just("HEX"),
        Just("UNHEX"),
        Just("FORMAT"),
        Just("LOCATE"),
        Just("INSERT"),
        Just("MAKETIME"),
        Just("SEC_TO_TIME"),
        Just("FROM_UNIXTIME"),
        Just("FROM_DAYS"),
        Just("WEEK"),
        Just("CHAR"),
        Just("SPACE"),
        Just("LAST_DAY"),
        Just("YEAR"),
        Just("HOUR"),
        Just("TIME"),
        Just("DATE"),
        Just("SHA2"),
        Just("ADDTIME"),
        Just("MAKEDATE"),
    ];
    let types = prop_oneof![
        Just("SIGNED"),
        Just("UNSIGNED"),
        Just("CHAR(2)"),
        Just("BINARY(3)"),
        Just("DECIMAL(5,2)"),
        Just("DATE"),
        Just("DATETIME(3)"),
        Just("TIME"),
        Just("DOUBLE"),
        Just("YEAR"),
    ];
    let units = prop_oneof![
        Just("MICROSECOND"),
        Just("SECOND"),
        Just("DAY"),
        Just("MONTH"),
        Just("YEAR"),
        Just("HOUR TO MINUTE"),
    ];
    leaf().prop_recursive(4, 40, 4, move |inner| {
        prop_oneof![
            (inner.clone(), operators.clone(), inner.clone())
                .prop_map(|(left, operator, right)| format!("({left} {operator} {right})")),
            (
                functions.clone(),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(name, arguments)| format!("{name}({})", arguments.join(", "))),
            inner.clone().prop_map(|operand| format!("-({operand})")),
            inner.clone().prop_map(|operand| format!("NOT ({operand})")),
            (inner.clone(), types.clone())
                .prop_map(|(operand, target)| format!("CAST({operand} AS {target})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("CASE {a} WHEN {b} THEN {c} ELSE {a} END")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("{a} IN ({b}, {c})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("{a} BETWEEN {b} AND {c}")),
            (inner.clone(), inner.clone(), units.clone())
                .prop_map(|(a, b, unit)| format!("DATE_ADD({a}, INTERVAL {b} {unit})")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("TIMESTAMPDIFF(MONTH, {a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("SUBSTRING_INDEX({a}, {b}, {c})")),
            inner.clone().prop_map(|a| format!("EXTRACT(DAY FROM {a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} LIKE {b} ESCAPE '!'")),
        ]
    })
}

fn value_strategy() -> impl Strategy<Value = SqlValue> {
    prop_oneof![
        Just(SqlValue::Null),
        any::<i64>().prop_map(SqlValue::Int),
        any::<u64>().prop_map(SqlValue::UInt),
        (any::<i64>(), 0u8..=30).prop_map(|(mantissa, scale)| SqlValue::Decimal(Decimal::new(
            i128::from(mantissa),
            scale
        ))),
        any::<f64>()
            .prop_filter("finite", |value| value.is_finite())
            .prop_map(SqlValue::Double),
        prop::collection::vec(any::<u8>(), 0..12).prop_map(SqlValue::String),
        (0u16..=9999, 0u8..=12, 0u8..=31)
            .prop_map(|(year, month, day)| SqlValue::Date(Date::new(year, month, day))),
        (0u16..=838, 0u8..60, 0u8..60, 0u32..1_000_000, any::<bool>()).prop_map(
            |(hours, minutes, seconds, microsecond, negative)| SqlValue::Time(Time {
                negative,
                hours,
                minutes,
                seconds,
                microsecond
            })
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn random_expressions_never_panic(
        sql in expression_text(),
        values in prop::collection::vec(value_strategy(), 9),
        parameter in value_strategy(),
    ) {
        let Ok(expr) = Parser::new(&ShoalDialect::new()).try_with_sql(&sql).and_then(|mut parser| parser.parse_expr()) else {
            return Ok(());
        };
        let Ok(expression) = compile(&expr, &TestScope) else {
            return Ok(());
        };
        let mut env = TestEnvironment { parameters: vec![parameter], ..Default::default() };
        if let Ok(value) = evaluate(&expression, &values, &mut env) {
            let mut out = Vec::new();
            write_text(&value, expression.sql_type(), &mut out);
            let mut scratch = Vec::new();
            let _ = crate::value::to_protocol(&value, expression.sql_type(), &mut scratch);
            let mut key = Vec::new();
            group_key(&value, expression.sql_type(), &mut key);
        }
    }

    #[test]
    fn conversions_never_panic(value in value_strategy(), text in prop::collection::vec(any::<u8>(), 0..24)) {
        let _ = value.to_int();
        let _ = value.to_uint();
        let _ = value.to_double();
        let _ = value.to_decimal();
        let _ = value.to_datetime();
        let _ = value.to_time();
        let string = SqlValue::String(text.clone());
        let _ = string.to_decimal();
        let _ = string.to_datetime();
        let _ = string.to_time();
        let _ = crate::temporal::str_to_date(&text, b"%Y-%m-%d %H:%i:%s.%f");
        let _ = crate::temporal::Interval::parse_compound(crate::temporal::IntervalUnit::DayMicrosecond, &text);
        let _ = compare(&value, &string, CONNECTION_COLLATION);
    }
}

// ---------------------------------------------------------------------------
// MySQL syntax and semantics added with the SQL behaviour tests

#[test]
fn mysql_operators_from_the_dialect() {
    check(&[
        ("7 MOD 3", "1"),
        ("-7 MOD 3", "-1"),
        ("7.5 MOD 2", "1.5"),
        ("!1", "0"),
        ("!0 + 1", "2"),
        ("BINARY 'a' = 'A'", "0"),
        ("'a' = 'A'", "1"),
        ("CAST('é' AS CHAR CHARACTER SET utf8mb4)", "é"),
        ("HEX(CONVERT('é', CHAR CHARACTER SET latin1))", "E9"),
        (
            "DATE_ADD('2024-01-01 00:00:00', INTERVAL '1:30' HOUR_MINUTE)",
            "2024-01-01 01:30:00",
        ),
        ("EXTRACT(YEAR_MONTH FROM '2024-02-29')", "202402"),
    ]);
    assert_eq!(warnings("5 MOD 0"), vec![1365]);
}

#[test]
fn division_by_zero_warns_only_under_its_sql_mode() {
    for sql in ["1 / 0", "5 MOD 0", "5 DIV 0", "1.5 / 0", "1e0 / 0"] {
        let mut default_mode = TestEnvironment {
            sql_mode: Some("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO".to_string()),
            ..Default::default()
        };
        assert_eq!(run_with(sql, &mut default_mode).unwrap(), None, "{sql}");
        assert_eq!(default_mode.warnings.len(), 1, "{sql}");
        let mut empty_mode = TestEnvironment {
            sql_mode: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(run_with(sql, &mut empty_mode).unwrap(), None, "{sql}");
        assert!(empty_mode.warnings.is_empty(), "{sql}");
    }
}

#[test]
fn user_variable_assignment_in_expressions() {
    let mut env = TestEnvironment::default();
    assert_eq!(
        run_with("@y := c0 + 1", &mut env).unwrap().as_deref(),
        Some("43")
    );
    assert_eq!(env.variables.get("y"), Some(&SqlValue::Int(43)));
    assert_eq!(run_with("@Y * 2", &mut env).unwrap().as_deref(), Some("86"));
    assert!(!compiled("@y := 1").is_constant());
    assert_eq!(failure("c0 := 1").code, 1064);
}

#[test]
fn character_set_functions() {
    check(&[
        ("CHARSET('abc')", "utf8mb4"),
        ("CHARSET(CONVERT('abc' USING latin1))", "latin1"),
        ("CHARSET(X'41')", "binary"),
        ("CHARSET(123)", "binary"),
        ("CHARSET(NULL)", "binary"),
        ("COLLATION(c5)", "utf8mb4_bin"),
        ("COLLATION('a' COLLATE utf8mb4_bin)", "utf8mb4_bin"),
        ("COLLATION(c1)", "utf8mb4_0900_ai_ci"),
        ("COERCIBILITY('a' COLLATE utf8mb4_bin)", "0"),
        ("COERCIBILITY(c1)", "2"),
        ("COERCIBILITY('a')", "4"),
        ("COERCIBILITY(1)", "5"),
        ("COERCIBILITY(NULL)", "6"),
    ]);
    assert_eq!(failure("CHARSET(1, 2)").code, 1582);
}

#[test]
fn collation_names_and_illegal_mixes() {
    check(&[
        ("'abc' COLLATE utf8mb4_general_ci = 'ABC'", "1"),
        ("'a' COLLATE 'utf8mb4_bin' = 'A'", "0"),
        ("c1 = c5", "0"),
    ]);
    assert_eq!(
        compile(
            &parse("'abc' COLLATE utf8mb4_0900_ai_ci = 'ABC' COLLATE utf8mb4_bin"),
            &TestScope
        )
        .unwrap_err()
        .code,
        1267
    );
    assert_eq!(
        compile(
            &parse("'a' COLLATE utf8mb4_bin IN ('b' COLLATE utf8mb4_0900_ai_ci)"),
            &TestScope
        )
        .unwrap_err()
        .code,
        1267
    );
    assert_eq!(failure("'a' COLLATE nonsense_ci").code, 1273);
}

#[test]
fn periods() {
    check(&[
        ("PERIOD_ADD(202401, 2)", "202403"),
        ("PERIOD_ADD(202412, 1)", "202501"),
        ("PERIOD_ADD(2401, -1)", "202312"),
        ("PERIOD_ADD(9912, 1)", "200001"),
        ("PERIOD_ADD(0, 5)", "0"),
        ("PERIOD_DIFF(202403, 202312)", "3"),
        ("PERIOD_DIFF(9801, 200001)", "-24"),
        ("PERIOD_ADD(NULL, 1)", "NULL"),
    ]);
    assert_eq!(failure("PERIOD_ADD(202413, 1)").code, 1210);
    assert_eq!(failure("PERIOD_DIFF(202400, 202401)").code, 1210);
}

#[test]
fn enum_columns_are_their_index_in_numeric_context() {
    check(&[
        ("c9", "blue"),
        ("c9 + 0", "3"),
        ("c9 = 3", "1"),
        ("c9 = 'blue'", "1"),
        ("c9 IN (1, 3)", "1"),
        ("CAST(c9 AS SIGNED)", "3"),
        ("CONCAT(c9, '!')", "blue!"),
        ("IF(c9, 'yes', 'no')", "yes"),
        ("NOT c9", "0"),
        ("c9 LIKE 'bl%'", "1"),
    ]);
    let key = ordering_key(compiled("c9"));
    let value = evaluate(&key, &row(), &mut TestEnvironment::default()).unwrap();
    assert_eq!(value, SqlValue::UInt(3));
    let condition = compiled("c9");
    assert!(evaluate_condition(&condition, &row(), &mut TestEnvironment::default()).unwrap());
    assert_eq!(
        ordering_key(compiled("c1")).column(),
        Some(1),
        "other columns order as they are"
    );
}

#[test]
fn latin1_text_is_sent_as_utf8() {
    let latin1 = SqlType::string(10, Collation::Latin1Ci);
    let value = SqlValue::String(vec![b'c', b'a', b'f', 0xE9]);
    let mut out = Vec::new();
    write_text(&value, &latin1, &mut out);
    assert_eq!(out, "café".as_bytes());
    let mut scratch = Vec::new();
    assert_eq!(
        crate::value::to_protocol(&value, &latin1, &mut scratch),
        mysql_protocol::ProtocolValue::Bytes("café".as_bytes())
    );
    check(&[
        ("CONVERT('é' USING latin1)", "é"),
        ("LENGTH(CONVERT('é' USING latin1))", "1"),
    ]);
}

#[test]
fn uuids_are_version_one_and_unique() {
    let first = text("UUID()");
    let second = text("UUID()");
    assert_ne!(first, second);
    assert_eq!(first.len(), 36);
    let parts: Vec<&str> = first.split('-').collect();
    assert_eq!(
        parts.iter().map(|part| part.len()).collect::<Vec<_>>(),
        vec![8, 4, 4, 4, 12]
    );
    assert!(parts[2].starts_with('1'), "version 1: {first}");
    assert!(!compiled("UUID()").is_constant());
    check(&[("LENGTH(UUID())", "36"), ("UUID() <> UUID()", "1")]);
}

#[test]
fn string_literals_take_the_connection_collation() {
    struct BinaryConnection;
    impl Scope for BinaryConnection {
        fn column(
            &self,
            qualifier: Option<&str>,
            name: &str,
        ) -> Result<(usize, SqlType), SqlError> {
            TestScope.column(qualifier, name)
        }
        fn aggregate(&self, _call: &sqlparser::ast::Function) -> Option<(usize, SqlType)> {
            None
        }
        fn connection_collation(&self) -> Collation {
            Collation::Utf8mb4Bin
        }
    }
    let expression = compile(&parse("'a' = 'A'"), &BinaryConnection).unwrap();
    let value = evaluate(&expression, &row(), &mut TestEnvironment::default()).unwrap();
    assert_eq!(value, SqlValue::Int(0));
    assert_eq!(text("'a' = 'A'"), "1");
    assert_eq!(
        collation_by_name("utf8mb4_bin"),
        Some(Collation::Utf8mb4Bin)
    );
}
