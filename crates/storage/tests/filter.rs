//! Tests of pushed conditions (`storage::filter`): each predicate on each kind
//! of column, SQL's three-valued logic with NULLs in every position, the
//! builder and every compile error, that `matches` never allocates, and a
//! property test against a reference evaluator over `Option<i64>`.
//!
//! Three-valued results are observed through `matches` alone: a condition is
//! TRUE when it matches, FALSE when its NOT matches, UNKNOWN when neither does.

use proptest::prelude::*;
use schema::row::{AttrInfoWriter, RowBuilder};
use schema::{Collation, ColumnDef, ColumnId, ColumnType, ErrorCode, RowView, TableDef, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use storage::filter::{DEPTH_MAX, FORMAT_VERSION, Filter, FilterBuilder, PROGRAM_BYTES_MAX, tag};

// ---------------------------------------------------------------------------
// Counting allocations per thread, so `matches` can be shown not to allocate
// while other tests run on other threads.

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_allocation() {
    // `try_with`: an allocation during thread teardown must not panic.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        unsafe { System.realloc(pointer, layout, new_size) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations_on_this_thread() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// ---------------------------------------------------------------------------
// A table with one column of each kind the filter treats differently.

const ID: ColumnId = 0; // INT NOT NULL, the primary key
const N: ColumnId = 1; // INT NULL
const U: ColumnId = 2; // INT UNSIGNED NULL
const TINY: ColumnId = 3; // TINYINT NULL
const BIG: ColumnId = 4; // BIGINT NULL
const MEDIUM: ColumnId = 5; // MEDIUMINT NULL
const USMALL: ColumnId = 6; // SMALLINT UNSIGNED NULL
const NAME: ColumnId = 7; // VARCHAR(20) utf8mb4_0900_ai_ci NULL
const CODE: ColumnId = 8; // CHAR(4) utf8mb4_0900_ai_ci NULL
const BYTES: ColumnId = 9; // VARBINARY(8) NULL
const REAL: ColumnId = 10; // DOUBLE NULL
const FIXED_BYTES: ColumnId = 11; // BINARY(4) NULL

fn table() -> TableDef {
    let ai_ci = Collation::Utf8mb4AiCi;
    TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("n", ColumnType::Int { unsigned: false }, true),
            ColumnDef::new("u", ColumnType::Int { unsigned: true }, true),
            ColumnDef::new("tiny", ColumnType::TinyInt { unsigned: false }, true),
            ColumnDef::new("big", ColumnType::BigInt { unsigned: false }, true),
            ColumnDef::new("medium", ColumnType::MediumInt { unsigned: false }, true),
            ColumnDef::new("usmall", ColumnType::SmallInt { unsigned: true }, true),
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 20,
                    collation: ai_ci,
                },
                true,
            ),
            ColumnDef::new(
                "code",
                ColumnType::Char {
                    length: 4,
                    collation: ai_ci,
                },
                true,
            ),
            ColumnDef::new("bytes", ColumnType::Varbinary { length: 8 }, true),
            ColumnDef::new("real", ColumnType::Double, true),
            ColumnDef::new("fixed_bytes", ColumnType::Binary { length: 4 }, true),
        ],
        vec![ID],
        vec![],
    )
    .unwrap()
}

/// A column's storage bytes for `value`.
fn encode(table: &TableDef, column: ColumnId, value: impl Into<Value>) -> Vec<u8> {
    let mut out = Vec::new();
    value
        .into()
        .encode(table.column_type(column), &mut out)
        .unwrap();
    out
}

fn int(value: i64) -> Value {
    Value::Int(value)
}

fn uint(value: u64) -> Value {
    Value::UInt(value)
}

fn text(value: &str) -> Value {
    Value::from(value)
}

/// A stored row, as the engine keeps it.
struct Row {
    fixed: Vec<u8>,
    var: Vec<u8>,
}

impl Row {
    fn view(&self) -> RowView<'_> {
        RowView {
            fixed: &self.fixed,
            var: &self.var,
        }
    }
}

/// A row with `id` and the given columns; every other column is NULL.
fn row(table: &TableDef, id: i64, columns: &[(ColumnId, Value)]) -> Row {
    let mut attrinfo = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut attrinfo);
    let id_bytes = encode(table, ID, int(id));
    writer.push(ID, Some(&id_bytes));
    for (column, value) in columns {
        match value {
            Value::Null => writer.push(*column, None),
            value => writer.push(*column, Some(&encode(table, *column, value.clone()))),
        }
    }
    let mut fixed = vec![0; table.layout.fixed_bytes as usize];
    let mut var = Vec::new();
    RowBuilder::default()
        .build(table, None, &attrinfo, &mut fixed, &mut var)
        .unwrap();
    Row { fixed, var }
}

/// The three truth values, as the tests expect them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    True,
    False,
    Unknown,
}

/// The truth of the condition `build` writes, on `row`: TRUE when it
/// matches, FALSE when its negation matches, UNKNOWN when neither does.
fn truth(
    table: &TableDef,
    row: &Row,
    build: impl Fn(&mut FilterBuilder) -> &mut FilterBuilder,
) -> Truth {
    let mut builder = FilterBuilder::new();
    build(&mut builder);
    let positive = Filter::compile(table, &builder.finish().unwrap()).unwrap();
    let mut builder = FilterBuilder::new();
    // The AND makes whatever `build` writes (no node, one, several) one child.
    builder.begin_not().begin_and();
    build(&mut builder);
    builder.end().end();
    let negative = Filter::compile(table, &builder.finish().unwrap()).unwrap();
    match (
        positive.matches(table, row.view()),
        negative.matches(table, row.view()),
    ) {
        (true, false) => Truth::True,
        (false, true) => Truth::False,
        (false, false) => Truth::Unknown,
        (true, true) => panic!("a condition and its negation both matched"),
    }
}

fn truth_of_bool(value: bool) -> Truth {
    if value { Truth::True } else { Truth::False }
}

/// `write` as it is, with its signature pinned down: a closure bound to a
/// name does not infer that its result borrows from its argument.
fn writer<F: Fn(&mut FilterBuilder) -> &mut FilterBuilder>(write: F) -> F {
    write
}

fn compile_error(table: &TableDef, program: &[u8]) -> schema::Error {
    Filter::compile(table, program).expect_err("the program should have been refused")
}

// ---------------------------------------------------------------------------
// Predicates.

/// A builder method writing one comparison.
type Comparison = for<'b> fn(&'b mut FilterBuilder, ColumnId, &[u8]) -> &'b mut FilterBuilder;
/// The Rust operator a comparison stands for.
type Reference = fn(i128, i128) -> bool;

/// The six comparisons, each with the builder method and the Rust operator.
fn comparisons() -> [(&'static str, Comparison, Reference); 6] {
    [
        ("=", FilterBuilder::eq, |a, b| a == b),
        ("<>", FilterBuilder::ne, |a, b| a != b),
        ("<", FilterBuilder::lt, |a, b| a < b),
        ("<=", FilterBuilder::le, |a, b| a <= b),
        (">", FilterBuilder::gt, |a, b| a > b),
        (">=", FilterBuilder::ge, |a, b| a >= b),
    ]
}

/// Every comparison of `column` holding each of `values` against each of `values`.
fn check_integer_comparisons(column: ColumnId, values: &[i128], to_value: fn(i128) -> Value) {
    let table = table();
    for &stored in values {
        let row = row(&table, 1, &[(column, to_value(stored))]);
        for &constant in values {
            let constant_bytes = encode(&table, column, to_value(constant));
            for (name, method, reference) in comparisons() {
                let got = truth(&table, &row, |b| method(b, column, &constant_bytes));
                assert_eq!(
                    got,
                    truth_of_bool(reference(stored, constant)),
                    "column {column}: {stored} {name} {constant}"
                );
            }
        }
    }
}

#[test]
fn comparisons_on_signed_integers() {
    let signed = |value: i128| int(value as i64);
    check_integer_comparisons(
        ID,
        &[i32::MIN.into(), -2, -1, 0, 1, 2, i32::MAX.into()],
        signed,
    );
    check_integer_comparisons(N, &[i32::MIN.into(), -7, 0, 7, i32::MAX.into()], signed);
    check_integer_comparisons(TINY, &[-128, -1, 0, 1, 127], signed);
    check_integer_comparisons(
        MEDIUM,
        &[-8_388_608, -65_536, -1, 0, 65_536, 8_388_607],
        signed,
    );
    check_integer_comparisons(BIG, &[i64::MIN.into(), -1, 0, 1, i64::MAX.into()], signed);
}

#[test]
fn comparisons_on_unsigned_integers() {
    let unsigned = |value: i128| uint(value as u64);
    // 2^31 and above would be negative if read as signed.
    check_integer_comparisons(
        U,
        &[0, 1, 2_147_483_647, 2_147_483_648, u32::MAX.into()],
        unsigned,
    );
    check_integer_comparisons(USMALL, &[0, 1, 32_767, 32_768, 65_535], unsigned);
}

#[test]
fn comparisons_on_a_double_go_through_compare_values() {
    let table = table();
    let row = row(&table, 1, &[(REAL, Value::Double(-1.5))]);
    let constant = |value: f64| encode(&table, REAL, Value::Double(value));
    assert_eq!(
        truth(&table, &row, |b| b.lt(REAL, &constant(0.0))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &row, |b| b.eq(REAL, &constant(-1.5))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &row, |b| b.gt(REAL, &constant(-2.0))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &row, |b| b.ge(REAL, &constant(-1.0))),
        Truth::False
    );
    assert_eq!(
        truth(&table, &row, |b| b.between(
            REAL,
            &constant(-2.0),
            &constant(-1.5)
        )),
        Truth::True
    );
    assert_eq!(
        truth(&table, &row, |b| b
            .in_list(REAL, &[&constant(1.0), &constant(-1.5)])),
        Truth::True
    );
}

#[test]
fn between_includes_both_ends() {
    let table = table();
    let constant = |value: i64| encode(&table, N, int(value));
    for (value, expected) in [(1, false), (2, true), (3, true), (5, true), (6, false)] {
        let row = row(&table, 1, &[(N, int(value))]);
        let got = truth(&table, &row, |b| b.between(N, &constant(2), &constant(5)));
        assert_eq!(got, truth_of_bool(expected), "{value} BETWEEN 2 AND 5");
        // An inverted range is empty, as in SQL.
        let got = truth(&table, &row, |b| b.between(N, &constant(5), &constant(2)));
        assert_eq!(got, Truth::False, "{value} BETWEEN 5 AND 2");
    }
    // The extremes of the unsigned range.
    let row_max = row(&table, 1, &[(U, uint(u32::MAX.into()))]);
    let low = encode(&table, U, uint(1 << 31));
    let high = encode(&table, U, uint(u32::MAX.into()));
    assert_eq!(
        truth(&table, &row_max, |b| b.between(U, &low, &high)),
        Truth::True
    );
}

#[test]
fn in_lists() {
    let table = table();
    let constant = |value: i64| encode(&table, N, int(value));
    let (one, three, minus) = (constant(1), constant(3), constant(-4));
    for (value, expected) in [(1, true), (2, false), (3, true), (-4, true), (0, false)] {
        let row = row(&table, 1, &[(N, int(value))]);
        // Duplicates and any order are fine.
        let got = truth(&table, &row, |b| {
            b.in_list(N, &[&three, &one, &minus, &three])
        });
        assert_eq!(got, truth_of_bool(expected), "{value} IN (3, 1, -4, 3)");
    }
    let names = ["Zoë", "abc", "m"].map(|name| encode(&table, NAME, text(name)));
    let name_list: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    for (value, expected) in [("ABC", true), ("zoe", true), ("M", true), ("ab", false)] {
        let row = row(&table, 1, &[(NAME, text(value))]);
        let got = truth(&table, &row, |b| b.in_list(NAME, &name_list));
        assert_eq!(
            got,
            truth_of_bool(expected),
            "'{value}' IN ('Zoë', 'abc', 'm')"
        );
    }
    // Long lists are binary-searched: every member and non-member.
    let members: Vec<Vec<u8>> = (0..100).map(|i| constant(i * 3)).collect();
    let member_list: Vec<&[u8]> = members.iter().map(Vec::as_slice).collect();
    for value in -2..302 {
        let row = row(&table, 1, &[(N, int(value))]);
        let got = truth(&table, &row, |b| b.in_list(N, &member_list));
        assert_eq!(
            got,
            truth_of_bool(value % 3 == 0 && (0..300).contains(&value)),
            "{value}"
        );
    }
}

#[test]
fn strings_compare_under_their_collation() {
    let table = table();
    let name = |value: &str| encode(&table, NAME, text(value));
    let abc = row(&table, 1, &[(NAME, text("abc")), (CODE, text("abc"))]);
    assert_eq!(
        truth(&table, &abc, |b| b.eq(NAME, &name("ABC"))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &abc, |b| b.eq(NAME, &name("Ábc"))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &abc, |b| b.ne(NAME, &name("ABC"))),
        Truth::False
    );
    assert_eq!(
        truth(&table, &abc, |b| b.lt(NAME, &name("ABD"))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &abc, |b| b.gt(NAME, &name("ab"))),
        Truth::True
    );
    assert_eq!(
        truth(&table, &abc, |b| b.le(NAME, &name("AB"))),
        Truth::False
    );
    assert_eq!(
        truth(&table, &abc, |b| b.between(NAME, &name("AA"), &name("ABZ"))),
        Truth::True
    );
    // CHAR values are stored without pad spaces, and compare ignoring
    // trailing spaces, so a constant sent with them still matches.
    let code = encode(&table, CODE, text("ABC  "));
    assert_eq!(code, b"ABC", "CHAR stores no trailing spaces");
    assert_eq!(truth(&table, &abc, |b| b.eq(CODE, &code)), Truth::True);
    assert_eq!(truth(&table, &abc, |b| b.eq(CODE, b"abc ")), Truth::True);
    assert_eq!(truth(&table, &abc, |b| b.lt(CODE, b"abc!")), Truth::True);
    // Byte strings compare bytewise: case matters.
    let bytes = row(&table, 1, &[(BYTES, Value::Bytes(b"abc".to_vec()))]);
    let upper = encode(&table, BYTES, Value::Bytes(b"ABC".to_vec()));
    assert_eq!(truth(&table, &bytes, |b| b.eq(BYTES, &upper)), Truth::False);
    assert_eq!(truth(&table, &bytes, |b| b.gt(BYTES, &upper)), Truth::True);
}

#[test]
fn like_with_wildcards_and_escapes() {
    let table = table();
    let cases: [(&str, &str, u8, bool); 14] = [
        ("abc", "abc", b'\\', true),
        ("abc", "ABC", b'\\', true),
        ("abc", "a%", b'\\', true),
        ("abc", "%c", b'\\', true),
        ("abc", "%b%", b'\\', true),
        ("abc", "a_c", b'\\', true),
        ("abc", "a_", b'\\', false),
        ("abc", "%d%", b'\\', false),
        ("a%c", "a\\%c", b'\\', true),
        ("abc", "a\\%c", b'\\', false),
        ("a_c", "a!_c", b'!', true),
        ("abc", "a!_c", b'!', false),
        ("50%", "50!%", b'!', true),
        ("", "%", b'\\', true),
    ];
    for (value, pattern, escape, expected) in cases {
        let row = row(&table, 1, &[(NAME, text(value))]);
        let got = truth(&table, &row, |b| b.like(NAME, pattern.as_bytes(), escape));
        assert_eq!(
            got,
            truth_of_bool(expected),
            "'{value}' LIKE '{pattern}' ESCAPE '{}'",
            escape as char
        );
        let got = truth(&table, &row, |b| {
            b.not_like(NAME, pattern.as_bytes(), escape)
        });
        assert_eq!(
            got,
            truth_of_bool(!expected),
            "'{value}' NOT LIKE '{pattern}'"
        );
    }
    // CHAR's pad spaces are not part of the value LIKE sees.
    let code = row(&table, 1, &[(CODE, text("ab"))]);
    assert_eq!(
        truth(&table, &code, |b| b.like(CODE, b"ab", b'\\')),
        Truth::True
    );
    assert_eq!(
        truth(&table, &code, |b| b.like(CODE, b"%b", b'\\')),
        Truth::True
    );
    assert_eq!(
        truth(&table, &code, |b| b.like(CODE, b"ab_", b'\\')),
        Truth::False
    );
    // Byte strings match bytewise; BINARY keeps its zero padding.
    let bytes = row(&table, 1, &[(BYTES, Value::Bytes(b"abc".to_vec()))]);
    assert_eq!(
        truth(&table, &bytes, |b| b.like(BYTES, b"a%", b'\\')),
        Truth::True
    );
    assert_eq!(
        truth(&table, &bytes, |b| b.like(BYTES, b"A%", b'\\')),
        Truth::False
    );
    let padded = row(&table, 1, &[(FIXED_BYTES, Value::Bytes(b"ab".to_vec()))]);
    assert_eq!(
        truth(&table, &padded, |b| b.like(FIXED_BYTES, b"ab", b'\\')),
        Truth::False
    );
    assert_eq!(
        truth(&table, &padded, |b| b.like(FIXED_BYTES, b"ab%", b'\\')),
        Truth::True
    );
}

#[test]
fn is_null_and_is_not_null_are_never_unknown() {
    let table = table();
    let with_null = row(&table, 1, &[]);
    let with_value = row(
        &table,
        1,
        &[(N, int(0)), (NAME, text("")), (BYTES, Value::Bytes(vec![]))],
    );
    for column in [N, NAME, BYTES] {
        assert_eq!(
            truth(&table, &with_null, |b| b.is_null(column)),
            Truth::True
        );
        assert_eq!(
            truth(&table, &with_null, |b| b.is_not_null(column)),
            Truth::False
        );
        // Zero and the empty string are values, not NULL.
        assert_eq!(
            truth(&table, &with_value, |b| b.is_null(column)),
            Truth::False
        );
        assert_eq!(
            truth(&table, &with_value, |b| b.is_not_null(column)),
            Truth::True
        );
    }
    // A NOT NULL column is never NULL.
    assert_eq!(truth(&table, &with_null, |b| b.is_null(ID)), Truth::False);
}

// ---------------------------------------------------------------------------
// Three-valued logic.

#[test]
fn every_predicate_on_a_null_is_unknown() {
    let table = table();
    let nulls = row(&table, 1, &[]);
    let n = encode(&table, N, int(1));
    let name = encode(&table, NAME, text("a"));
    let real = encode(&table, REAL, Value::Double(1.0));
    let code = encode(&table, CODE, text("a"));
    type Leaf<'a> = Box<dyn Fn(&mut FilterBuilder) -> &mut FilterBuilder + 'a>;
    let leaves: Vec<(&str, Leaf)> = vec![
        ("n = 1", Box::new(|b| b.eq(N, &n))),
        ("n <> 1", Box::new(|b| b.ne(N, &n))),
        ("n < 1", Box::new(|b| b.lt(N, &n))),
        ("n <= 1", Box::new(|b| b.le(N, &n))),
        ("n > 1", Box::new(|b| b.gt(N, &n))),
        ("n >= 1", Box::new(|b| b.ge(N, &n))),
        ("n BETWEEN 1 AND 1", Box::new(|b| b.between(N, &n, &n))),
        ("n IN (1)", Box::new(|b| b.in_list(N, &[&n]))),
        ("name = 'a'", Box::new(|b| b.eq(NAME, &name))),
        ("name <> 'a'", Box::new(|b| b.ne(NAME, &name))),
        (
            "name BETWEEN 'a' AND 'a'",
            Box::new(|b| b.between(NAME, &name, &name)),
        ),
        ("name IN ('a')", Box::new(|b| b.in_list(NAME, &[&name]))),
        ("name LIKE '%'", Box::new(|b| b.like(NAME, b"%", b'\\'))),
        (
            "name NOT LIKE 'a'",
            Box::new(|b| b.not_like(NAME, b"a", b'\\')),
        ),
        ("code = 'a'", Box::new(|b| b.eq(CODE, &code))),
        ("code LIKE '%'", Box::new(|b| b.like(CODE, b"%", b'\\'))),
        ("real >= 1.0", Box::new(|b| b.ge(REAL, &real))),
        ("real IN (1.0)", Box::new(|b| b.in_list(REAL, &[&real]))),
    ];
    for (name, leaf) in &leaves {
        assert_eq!(
            truth(&table, &nulls, leaf),
            Truth::Unknown,
            "{name} with NULL"
        );
        // NOT UNKNOWN is UNKNOWN: NOT (n = 1) does not match a NULL n.
        let negated = writer(|b| {
            b.begin_not();
            leaf(b);
            b.end()
        });
        assert_eq!(
            truth(&table, &nulls, negated),
            Truth::Unknown,
            "NOT {name} with NULL"
        );
    }
    // An empty IN list is an empty OR: FALSE, even on NULL.
    assert_eq!(truth(&table, &nulls, |b| b.in_list(N, &[])), Truth::False);
    assert_eq!(
        truth(&table, &nulls, |b| b.in_list(NAME, &[])),
        Truth::False
    );
    let with_value = row(&table, 1, &[(N, int(1))]);
    assert_eq!(
        truth(&table, &with_value, |b| b.in_list(N, &[])),
        Truth::False
    );
}

#[test]
fn and_or_not_follow_sql_truth_tables() {
    let table = table();
    // id = 1 is TRUE, id = 2 is FALSE and n = 1 is UNKNOWN on this row.
    let row = row(&table, 1, &[]);
    let one = encode(&table, ID, int(1));
    let two = encode(&table, ID, int(2));
    let leaf = |b: &mut FilterBuilder, value: Truth| {
        match value {
            Truth::True => b.eq(ID, &one),
            Truth::False => b.eq(ID, &two),
            Truth::Unknown => b.eq(N, &one),
        };
    };
    let values = [Truth::True, Truth::False, Truth::Unknown];
    let and = |a: Truth, b: Truth| match (a, b) {
        (Truth::False, _) | (_, Truth::False) => Truth::False,
        (Truth::True, Truth::True) => Truth::True,
        _ => Truth::Unknown,
    };
    let or = |a: Truth, b: Truth| match (a, b) {
        (Truth::True, _) | (_, Truth::True) => Truth::True,
        (Truth::False, Truth::False) => Truth::False,
        _ => Truth::Unknown,
    };
    for a in values {
        assert_eq!(
            truth(&table, &row, |b| {
                leaf(b, a);
                b
            }),
            a
        );
        for c in values {
            let got = truth(&table, &row, |b| {
                b.begin_and();
                leaf(b, a);
                leaf(b, c);
                b.end()
            });
            assert_eq!(got, and(a, c), "{a:?} AND {c:?}");
            let got = truth(&table, &row, |b| {
                b.begin_or();
                leaf(b, a);
                leaf(b, c);
                b.end()
            });
            assert_eq!(got, or(a, c), "{a:?} OR {c:?}");
        }
    }
    // Empty groups: AND is TRUE, OR is FALSE; an empty builder matches all.
    assert_eq!(truth(&table, &row, |b| b.begin_and().end()), Truth::True);
    assert_eq!(truth(&table, &row, |b| b.begin_or().end()), Truth::False);
    assert_eq!(truth(&table, &row, |b| b), Truth::True);
    // Groups of one are their child.
    assert_eq!(
        truth(&table, &row, |b| {
            b.begin_and();
            leaf(b, Truth::Unknown);
            b.end()
        }),
        Truth::Unknown
    );
    assert_eq!(
        truth(&table, &row, |b| {
            b.begin_or();
            leaf(b, Truth::False);
            b.end()
        }),
        Truth::False
    );
    // Double negation.
    assert_eq!(
        truth(&table, &row, |b| {
            b.begin_not().begin_not();
            leaf(b, Truth::False);
            b.end().end()
        }),
        Truth::False
    );
}

#[test]
fn nested_groups() {
    let table = table();
    let n = |value: i64| encode(&table, N, int(value));
    let name = |value: &str| encode(&table, NAME, text(value));
    // (n BETWEEN 1 AND 10 AND NOT name LIKE 'x%') OR (n IS NULL AND (name = 'B' OR id > 100))
    let build = writer(|b| {
        b.begin_or()
            .begin_and()
            .between(N, &n(1), &n(10))
            .begin_not()
            .like(NAME, b"x%", b'\\')
            .end()
            .end()
            .begin_and()
            .is_null(N)
            .begin_or()
            .eq(NAME, &name("B"))
            .gt(ID, &encode(&table, ID, int(100)))
            .end()
            .end()
            .end()
    });
    let cases = [
        (1, vec![(N, int(5)), (NAME, text("abc"))], Truth::True),
        (1, vec![(N, int(5)), (NAME, text("xyz"))], Truth::False),
        (1, vec![(N, int(5))], Truth::Unknown),
        (1, vec![(N, int(11)), (NAME, text("abc"))], Truth::False),
        (1, vec![(NAME, text("b"))], Truth::True),
        (1, vec![(NAME, text("c"))], Truth::Unknown),
        (1, vec![(NAME, text("xyz"))], Truth::False),
        (101, vec![(NAME, text("c"))], Truth::True),
        (1, vec![], Truth::Unknown),
        (101, vec![], Truth::True),
    ];
    for (id, columns, expected) in cases {
        let row = row(&table, id, &columns);
        assert_eq!(truth(&table, &row, build), expected, "id {id}, {columns:?}");
    }
}

// ---------------------------------------------------------------------------
// The byte format and the builder.

#[test]
fn the_documented_examples_are_what_the_builder_writes() {
    let table = TableDef::new(
        "example",
        vec![
            ColumnDef::new("c0", ColumnType::Int { unsigned: false }, true),
            ColumnDef::new("c1", ColumnType::TinyInt { unsigned: false }, false),
        ],
        vec![1],
        vec![],
    )
    .unwrap();
    let program = FilterBuilder::new()
        .ge(0, &5i32.to_le_bytes())
        .finish()
        .unwrap();
    assert_eq!(
        program,
        [0x01, 0x15, 0x00, 0x00, 0x04, 0x00, 0x05, 0x00, 0x00, 0x00]
    );
    Filter::compile(&table, &program).unwrap();
    let program = FilterBuilder::new()
        .begin_or()
        .is_null(0)
        .between(1, &[1], &[9])
        .end()
        .finish()
        .unwrap();
    let expected = [
        0x01, 0x02, 0x02, 0x00, 0x18, 0x00, 0x00, 0x16, 0x01, 0x00, 0x01, 0x00, 0x01, 0x01, 0x00,
        0x09,
    ];
    assert_eq!(program, expected);
    Filter::compile(&table, &program).unwrap();
}

#[test]
fn the_builder_ands_top_level_nodes() {
    let table = table();
    let one = encode(&table, N, int(1));
    let program = FilterBuilder::new()
        .is_not_null(N)
        .eq(N, &one)
        .finish()
        .unwrap();
    assert_eq!(&program[..4], &[FORMAT_VERSION, tag::AND, 2, 0]);
    let filter = Filter::compile(&table, &program).unwrap();
    assert!(filter.matches(&table, row(&table, 1, &[(N, int(1))]).view()));
    assert!(!filter.matches(&table, row(&table, 1, &[(N, int(2))]).view()));
    assert!(!filter.matches(&table, row(&table, 1, &[]).view()));
    // No node at all: an empty AND, which every row satisfies.
    let program = FilterBuilder::default().finish().unwrap();
    assert_eq!(program, [FORMAT_VERSION, tag::AND, 0, 0]);
    assert!(
        Filter::compile(&table, &program)
            .unwrap()
            .matches(&table, row(&table, 1, &[]).view())
    );
}

#[test]
fn builder_mistakes_are_reported_by_finish() {
    let invalid = |builder: &FilterBuilder, expected: &str| {
        let error = builder.finish().expect_err(expected);
        assert_eq!(error.code, ErrorCode::InvalidFilter);
        assert!(
            error.detail.contains(expected),
            "{:?} should mention {expected:?}",
            error.detail
        );
    };
    invalid(FilterBuilder::new().end(), "no group open");
    invalid(FilterBuilder::new().begin_and().is_null(1), "not ended");
    invalid(
        FilterBuilder::new().begin_and().begin_or().end(),
        "not ended",
    );
    invalid(
        FilterBuilder::new().begin_not().end(),
        "NOT ended with 0 children",
    );
    invalid(
        FilterBuilder::new().begin_not().is_null(1).is_null(2).end(),
        "second child",
    );
    invalid(FilterBuilder::new().eq(1, &vec![0; 70_000]), "70000 bytes");
    invalid(
        FilterBuilder::new().like(7, &vec![b'a'; 70_000], b'\\'),
        "70000 bytes",
    );
    let many = vec![&[0u8; 4][..]; 70_000];
    invalid(FilterBuilder::new().in_list(1, &many), "70000 values");
    let mut wide = FilterBuilder::new();
    wide.begin_or();
    for _ in 0..70_000 {
        wide.is_null(1);
    }
    invalid(wide.end(), "more than 65535 children");
    let mut big = FilterBuilder::new();
    for _ in 0..2 {
        big.eq(9, &[0; 40_000]);
    }
    invalid(&big, "more than 65536");
    // The first mistake is the one reported.
    invalid(FilterBuilder::new().end().begin_and(), "no group open");
}

#[test]
fn the_builder_enforces_the_depth_limit() {
    let table = table();
    let nested = |depth: usize, siblings: bool| {
        let mut builder = FilterBuilder::new();
        for _ in 0..depth - 1 {
            builder.begin_not();
        }
        builder.is_null(N);
        for _ in 0..depth - 1 {
            builder.end();
        }
        if siblings {
            // A second top-level node puts everything under an AND root.
            builder.is_null(N);
        }
        builder.finish()
    };
    let program = nested(DEPTH_MAX, false).unwrap();
    Filter::compile(&table, &program).unwrap();
    assert_eq!(
        nested(DEPTH_MAX + 1, false).unwrap_err().code,
        ErrorCode::InvalidFilter
    );
    let program = nested(DEPTH_MAX - 1, true).unwrap();
    Filter::compile(&table, &program).unwrap();
    assert_eq!(
        nested(DEPTH_MAX, true).unwrap_err().code,
        ErrorCode::InvalidFilter
    );
}

// ---------------------------------------------------------------------------
// Compile errors, one per path.

/// A program of the version byte and `bytes`.
fn program(bytes: &[u8]) -> Vec<u8> {
    let mut program = vec![FORMAT_VERSION];
    program.extend_from_slice(bytes);
    program
}

fn assert_invalid(table: &TableDef, program: &[u8], expected: &str) {
    let error = compile_error(table, program);
    assert_eq!(
        error.code,
        ErrorCode::InvalidFilter,
        "{program:02X?}: {error}"
    );
    assert!(
        error.detail.contains(expected),
        "{program:02X?}: {:?} should mention {expected:?}",
        error.detail
    );
}

#[test]
fn compile_refuses_bad_headers_and_structure() {
    let table = table();
    assert_invalid(&table, &[], "empty");
    assert_invalid(&table, &[2, tag::AND, 0, 0], "format version 2");
    assert_invalid(&table, &[0, tag::AND, 0, 0], "format version 0");
    assert_invalid(&table, &program(&[]), "ends inside a node tag");
    assert_invalid(&table, &program(&[0x7F]), "unknown node tag 0x7F");
    assert_invalid(&table, &program(&[0x00]), "unknown node tag 0x00");
    assert_invalid(
        &table,
        &program(&[tag::AND, 0, 0, 0x42]),
        "1 bytes follow the end",
    );
    assert_invalid(
        &table,
        &program(&[tag::IS_NULL, 1, 0, tag::IS_NULL, 1, 0]),
        "3 bytes follow",
    );
    assert_invalid(&table, &program(&[tag::AND]), "ends inside the child count");
    assert_invalid(
        &table,
        &program(&[tag::OR, 2]),
        "ends inside the child count",
    );
    assert_invalid(
        &table,
        &program(&[tag::AND, 2, 0, tag::IS_NULL, 1, 0]),
        "ends inside a node tag",
    );
    assert_invalid(&table, &program(&[tag::NOT]), "ends inside a node tag");
    assert_invalid(
        &table,
        &program(&[tag::IS_NULL, 1]),
        "ends inside a column id",
    );
    assert_invalid(
        &table,
        &program(&[tag::EQ, 1, 0]),
        "ends inside the length of a value",
    );
    assert_invalid(
        &table,
        &program(&[tag::EQ, 1, 0, 4, 0, 1, 2]),
        "ends inside a value",
    );
    assert_invalid(
        &table,
        &program(&[tag::BETWEEN, 1, 0, 4, 0, 1, 2, 3, 4]),
        "ends inside the length",
    );
    assert_invalid(
        &table,
        &program(&[tag::IN, 1, 0, 2]),
        "ends inside the value count",
    );
    assert_invalid(
        &table,
        &program(&[tag::IN, 1, 0, 2, 0, 4, 0, 1, 2, 3, 4]),
        "ends inside the length",
    );
    assert_invalid(
        &table,
        &program(&[tag::LIKE, 7, 0, 3, 0, b'a']),
        "ends inside a LIKE pattern",
    );
    assert_invalid(
        &table,
        &program(&[tag::LIKE, 7, 0, 1, 0, b'a']),
        "ends inside the escape byte",
    );
    assert_invalid(
        &table,
        &program(&[tag::LIKE, 7, 0, 1]),
        "ends inside the length of a LIKE pattern",
    );
}

#[test]
fn compile_refuses_unknown_columns() {
    let table = table();
    for bytes in [
        &[tag::IS_NULL, 12, 0][..],
        &[tag::EQ, 0xFF, 0xFF, 4, 0, 0, 0, 0, 0],
        &[
            tag::AND,
            2,
            0,
            tag::IS_NULL,
            0,
            0,
            tag::LIKE,
            0,
            1,
            1,
            0,
            b'a',
            b'\\',
        ],
    ] {
        let error = compile_error(&table, &program(bytes));
        assert_eq!(error.code, ErrorCode::NoSuchColumn, "{bytes:02X?}");
        assert!(
            error.detail.contains("table 't' has 12 columns"),
            "{}",
            error.detail
        );
    }
}

#[test]
fn compile_checks_value_lengths() {
    let table = table();
    // INT is exactly 4 bytes.
    assert_invalid(
        &table,
        &program(&[tag::EQ, 1, 0, 2, 0, 1, 2]),
        "2 bytes for column 'n', which stores exactly 4",
    );
    assert_invalid(
        &table,
        &program(&[tag::GE, 4, 0, 4, 0, 1, 2, 3, 4]),
        "stores exactly 8",
    );
    let mut between = vec![tag::BETWEEN, 1, 0, 4, 0, 0, 0, 0, 0, 5, 0];
    between.extend_from_slice(&[0; 5]);
    assert_invalid(&table, &program(&between), "5 bytes for column 'n'");
    let mut in_list = vec![tag::IN, 3, 0, 2, 0, 1, 0, 7, 0, 0];
    in_list.extend_from_slice(&[7]);
    assert_invalid(
        &table,
        &program(&in_list),
        "0 bytes for column 'tiny', which stores exactly 1",
    );
    // CHAR(4) utf8mb4 is at most 16 bytes, stored without pad spaces.
    let mut long = vec![tag::EQ, 8, 0, 17, 0];
    long.extend_from_slice(&[b'a'; 17]);
    assert_invalid(&table, &program(&long), "stores at most 16");
    Filter::compile(&table, &program(&[tag::EQ, 8, 0, 3, 0, b'a', b'b', b'c'])).unwrap();
    // VARBINARY(8) is at most 8 bytes; VARCHAR(20) utf8mb4 at most 80.
    let mut long = vec![tag::EQ, 9, 0, 9, 0];
    long.extend_from_slice(&[0; 9]);
    assert_invalid(
        &table,
        &program(&long),
        "9 bytes for column 'bytes', which stores at most 8",
    );
    let mut long = vec![tag::NE, 7, 0, 81, 0];
    long.extend_from_slice(&[b'a'; 81]);
    assert_invalid(&table, &program(&long), "stores at most 80");
    let mut fits = vec![tag::NE, 7, 0, 80, 0];
    fits.extend_from_slice(&[b'a'; 80]);
    Filter::compile(&table, &program(&fits)).unwrap();
    // utf8mb4 constants must be UTF-8, as stored utf8mb4 text is.
    assert_invalid(
        &table,
        &program(&[tag::EQ, 7, 0, 2, 0, 0xC3, 0x28]),
        "not valid UTF-8",
    );
}

#[test]
fn compile_checks_like() {
    let table = table();
    assert_invalid(
        &table,
        &program(&[tag::LIKE, 1, 0, 1, 0, b'%', b'\\']),
        "column 'n', which is not a string",
    );
    assert_invalid(
        &table,
        &program(&[tag::NOT_LIKE, 10, 0, 1, 0, b'%', b'\\']),
        "column 'real'",
    );
    assert_invalid(
        &table,
        &program(&[tag::LIKE, 7, 0, 2, 0, 0xFF, b'%', b'\\']),
        "not valid UTF-8",
    );
    assert_invalid(
        &table,
        &program(&[tag::LIKE, 7, 0, 1, 0, b'%', 0xA7]),
        "escape byte 0xA7",
    );
    // Byte strings take any pattern and escape byte.
    Filter::compile(&table, &program(&[tag::LIKE, 9, 0, 2, 0, 0xFF, b'%', 0xA7])).unwrap();
    Filter::compile(&table, &program(&[tag::NOT_LIKE, 11, 0, 1, 0, b'%', 0])).unwrap();
    // The pattern is not a column value: longer than the column is fine.
    let mut pattern = vec![tag::LIKE, 9, 0, 20, 0];
    pattern.extend_from_slice(&[b'%'; 20]);
    pattern.push(b'\\');
    Filter::compile(&table, &program(&pattern)).unwrap();
}

#[test]
fn compile_enforces_depth_and_size_limits() {
    let table = table();
    let nots = |count: usize| {
        let mut bytes = vec![tag::NOT; count];
        bytes.extend_from_slice(&[tag::IS_NULL, 1, 0]);
        program(&bytes)
    };
    // DEPTH_MAX - 1 NOTs and a leaf: DEPTH_MAX deep.
    Filter::compile(&table, &nots(DEPTH_MAX - 1)).unwrap();
    assert_invalid(&table, &nots(DEPTH_MAX), "deeper than the limit of 32");
    assert_invalid(&table, &nots(100_000), "more than the limit of 65536");
    // A group of one still counts as a level.
    let mut ands = Vec::new();
    for _ in 0..DEPTH_MAX {
        ands.extend_from_slice(&[tag::AND, 1, 0]);
    }
    ands.extend_from_slice(&[tag::IS_NULL, 1, 0]);
    assert_invalid(&table, &program(&ands), "deeper than the limit");
    // Exactly PROGRAM_BYTES_MAX bytes is allowed, one more is not: the
    // version byte and one LIKE of 7 bytes besides its pattern.
    let like_of = |pattern_length: usize| {
        let mut bytes = vec![tag::LIKE, 9, 0];
        bytes.extend_from_slice(&(pattern_length as u16).to_le_bytes());
        bytes.extend_from_slice(&vec![b'%'; pattern_length]);
        bytes.push(b'\\');
        program(&bytes)
    };
    let exact = like_of(PROGRAM_BYTES_MAX - 7);
    assert_eq!(exact.len(), PROGRAM_BYTES_MAX);
    Filter::compile(&table, &exact).unwrap();
    assert_invalid(&table, &like_of(PROGRAM_BYTES_MAX - 6), "65537 bytes");
}

// ---------------------------------------------------------------------------
// The hot path.

#[test]
fn matches_does_not_allocate() {
    let table = table();
    let n = |value: i64| encode(&table, N, int(value));
    let name = |value: &str| encode(&table, NAME, text(value));
    let real = encode(&table, REAL, Value::Double(2.5));
    let program = FilterBuilder::new()
        .begin_or()
        .between(N, &n(-5), &n(5))
        .in_list(NAME, &[&name("x"), &name("y"), &name("abc")])
        .begin_and()
        .like(NAME, b"%b%", b'\\')
        .not_like(CODE, b"z%", b'\\')
        .ge(REAL, &real)
        .end()
        .begin_not()
        .is_null(BYTES)
        .end()
        .end()
        .finish()
        .unwrap();
    let filter = Filter::compile(&table, &program).unwrap();
    let rows = [
        row(
            &table,
            1,
            &[
                (N, int(7)),
                (NAME, text("ABC")),
                (CODE, text("q")),
                (REAL, Value::Double(3.0)),
            ],
        ),
        row(
            &table,
            2,
            &[
                (NAME, text("cbd")),
                (CODE, text("q")),
                (REAL, Value::Double(3.0)),
            ],
        ),
        row(&table, 3, &[(N, int(0))]),
        row(&table, 4, &[]),
    ];
    let expected: Vec<bool> = rows
        .iter()
        .map(|row| filter.matches(&table, row.view()))
        .collect();
    assert_eq!(expected, [true, true, true, false]);
    let before = allocations_on_this_thread();
    for _ in 0..1_000 {
        for row in &rows {
            std::hint::black_box(filter.matches(&table, row.view()));
        }
    }
    assert_eq!(
        allocations_on_this_thread() - before,
        0,
        "matches allocated"
    );
}

/// Rows per second for the scan hot path's simple predicates on a table of
/// a 4-byte INT key and a 64-byte payload. Run it with
/// `cargo test --release -p storage --test filter -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check; run in release"]
fn throughput() {
    let table = TableDef::new(
        "bench",
        vec![
            ColumnDef::new("k", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("payload", ColumnType::Binary { length: 64 }, false),
            ColumnDef::new("v", ColumnType::BigInt { unsigned: false }, true),
        ],
        vec![0],
        vec![],
    )
    .unwrap();
    let rows: Vec<Row> = (0..4096)
        .map(|k: i64| {
            let mut attrinfo = Vec::new();
            let mut writer = AttrInfoWriter::new(&mut attrinfo);
            writer.push(0, Some(&(k as i32).to_le_bytes()));
            let payload: Vec<u8> = (0..64)
                .map(|i| (k as u8).wrapping_mul(31).wrapping_add(i))
                .collect();
            writer.push(1, Some(&payload));
            writer.push(2, Some(&(k * 7).to_le_bytes()));
            let mut fixed = vec![0; table.layout.fixed_bytes as usize];
            let mut var = Vec::new();
            RowBuilder::default()
                .build(&table, None, &attrinfo, &mut fixed, &mut var)
                .unwrap();
            Row { fixed, var }
        })
        .collect();
    let mut threshold = vec![0x80u8];
    threshold.resize(64, 0);
    let cases = [
        (
            "k BETWEEN 1000 AND 3000",
            FilterBuilder::new()
                .between(0, &1000i32.to_le_bytes(), &3000i32.to_le_bytes())
                .finish(),
        ),
        (
            "payload >= 0x80 00..",
            FilterBuilder::new().ge(1, &threshold).finish(),
        ),
        (
            "v >= 14000",
            FilterBuilder::new()
                .ge(2, &14_000i64.to_le_bytes())
                .finish(),
        ),
        (
            "k > 100 AND (v < 20000 OR payload = ...)",
            FilterBuilder::new()
                .gt(0, &100i32.to_le_bytes())
                .begin_or()
                .lt(2, &20_000i64.to_le_bytes())
                .eq(1, &threshold)
                .end()
                .finish(),
        ),
    ];
    for (name, program) in cases {
        let filter = Filter::compile(&table, &program.unwrap()).unwrap();
        let rounds = 5_000;
        let started = std::time::Instant::now();
        let mut matched = 0u64;
        for _ in 0..rounds {
            for row in &rows {
                matched += u64::from(filter.matches(&table, std::hint::black_box(row.view())));
            }
        }
        let elapsed = started.elapsed();
        let evaluated = (rounds * rows.len()) as f64;
        println!(
            "{name}: {:.1} million rows/s ({:.2} ns/row, {matched} matched)",
            evaluated / elapsed.as_secs_f64() / 1e6,
            elapsed.as_nanos() as f64 / evaluated
        );
    }
}

// ---------------------------------------------------------------------------
// Property test: random conditions over `id INT NOT NULL, n INT NULL`
// against a reference evaluator.

/// A condition over the two columns, as the reference evaluator sees it.
#[derive(Debug, Clone)]
enum Condition {
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
    Compare(ColumnId, usize, i32),
    Between(ColumnId, i32, i32),
    In(ColumnId, Vec<i32>),
    IsNull(ColumnId),
    IsNotNull(ColumnId),
}

/// Values that hit the interesting cases: equal, adjacent, and the extremes.
fn small_int() -> impl Strategy<Value = i32> {
    prop_oneof![6 => -3..=3i32, 1 => Just(i32::MIN), 1 => Just(i32::MAX)]
}

fn column() -> impl Strategy<Value = ColumnId> {
    prop_oneof![Just(0), Just(1)]
}

fn condition() -> impl Strategy<Value = Condition> {
    let leaf = prop_oneof![
        (column(), 0..6usize, small_int()).prop_map(|(c, op, v)| Condition::Compare(c, op, v)),
        (column(), small_int(), small_int())
            .prop_map(|(c, low, high)| Condition::Between(c, low, high)),
        (column(), prop::collection::vec(small_int(), 0..5))
            .prop_map(|(c, values)| Condition::In(c, values)),
        column().prop_map(Condition::IsNull),
        column().prop_map(Condition::IsNotNull),
    ];
    leaf.prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Condition::And),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Condition::Or),
            inner.prop_map(|c| Condition::Not(Box::new(c))),
        ]
    })
}

/// SQL's truth of `condition` on a row: `None` is UNKNOWN.
fn reference(condition: &Condition, id: i64, n: Option<i64>) -> Option<bool> {
    let value = |column: ColumnId| if column == 0 { Some(id) } else { n };
    match condition {
        Condition::And(children) => {
            let results: Vec<Option<bool>> = children.iter().map(|c| reference(c, id, n)).collect();
            if results.contains(&Some(false)) {
                Some(false)
            } else if results.contains(&None) {
                None
            } else {
                Some(true)
            }
        }
        Condition::Or(children) => {
            let results: Vec<Option<bool>> = children.iter().map(|c| reference(c, id, n)).collect();
            if results.contains(&Some(true)) {
                Some(true)
            } else if results.contains(&None) {
                None
            } else {
                Some(false)
            }
        }
        Condition::Not(child) => reference(child, id, n).map(|truth| !truth),
        Condition::Compare(column, operator, constant) => {
            let constant = i64::from(*constant);
            value(*column).map(|v| match operator {
                0 => v == constant,
                1 => v != constant,
                2 => v < constant,
                3 => v <= constant,
                4 => v > constant,
                _ => v >= constant,
            })
        }
        Condition::Between(column, low, high) => {
            value(*column).map(|v| i64::from(*low) <= v && v <= i64::from(*high))
        }
        // IN is the OR of one equality per value.
        Condition::In(_, values) if values.is_empty() => Some(false),
        Condition::In(column, values) => {
            value(*column).map(|v| values.iter().any(|&c| i64::from(c) == v))
        }
        Condition::IsNull(column) => Some(value(*column).is_none()),
        Condition::IsNotNull(column) => Some(value(*column).is_some()),
    }
}

fn write(condition: &Condition, builder: &mut FilterBuilder) {
    let bytes = |value: i32| value.to_le_bytes();
    match condition {
        Condition::And(children) | Condition::Or(children) => {
            if matches!(condition, Condition::And(_)) {
                builder.begin_and();
            } else {
                builder.begin_or();
            }
            for child in children {
                write(child, builder);
            }
            builder.end();
        }
        Condition::Not(child) => {
            builder.begin_not();
            write(child, builder);
            builder.end();
        }
        Condition::Compare(column, operator, constant) => {
            let (_, method, _) = comparisons()[*operator];
            method(builder, *column, &bytes(*constant));
        }
        Condition::Between(column, low, high) => {
            builder.between(*column, &bytes(*low), &bytes(*high));
        }
        Condition::In(column, values) => {
            let encoded: Vec<[u8; 4]> = values.iter().map(|v| bytes(*v)).collect();
            let list: Vec<&[u8]> = encoded.iter().map(|v| &v[..]).collect();
            builder.in_list(*column, &list);
        }
        Condition::IsNull(column) => {
            builder.is_null(*column);
        }
        Condition::IsNotNull(column) => {
            builder.is_not_null(*column);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn matches_agrees_with_the_reference(
        condition in condition(),
        rows in prop::collection::vec((small_int(), prop::option::of(small_int())), 1..12),
    ) {
        let table = TableDef::new(
            "p",
            vec![
                ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
                ColumnDef::new("n", ColumnType::Int { unsigned: false }, true),
            ],
            vec![0],
            vec![],
        )
        .unwrap();
        let mut builder = FilterBuilder::new();
        write(&condition, &mut builder);
        let positive = Filter::compile(&table, &builder.finish().unwrap()).unwrap();
        let mut builder = FilterBuilder::new();
        builder.begin_not();
        write(&condition, &mut builder);
        builder.end();
        let negative = Filter::compile(&table, &builder.finish().unwrap()).unwrap();
        for (id, n) in rows {
            let mut attrinfo = Vec::new();
            let mut writer = AttrInfoWriter::new(&mut attrinfo);
            writer.push(0, Some(&encode(&table, 0, int(id.into()))));
            let n_bytes = n.map(|n| encode(&table, 1, int(n.into())));
            writer.push(1, n_bytes.as_deref());
            let mut fixed = vec![0; table.layout.fixed_bytes as usize];
            let mut var = Vec::new();
            RowBuilder::default().build(&table, None, &attrinfo, &mut fixed, &mut var).unwrap();
            let view = RowView { fixed: &fixed, var: &var };
            let expected = reference(&condition, id.into(), n.map(i64::from));
            prop_assert_eq!(positive.matches(&table, view), expected == Some(true), "row ({}, {:?})", id, n);
            prop_assert_eq!(negative.matches(&table, view), expected == Some(false), "NOT, row ({}, {:?})", id, n);
        }
    }
}
