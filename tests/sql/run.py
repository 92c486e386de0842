#!/usr/bin/env python3
"""Runs Shoal's SQL behaviour tests (tests/sql/*.test) against a MySQL-protocol server.

    python3 tests/sql/run.py --host 127.0.0.1 --port 3306 --user root \
        [--password X] [--record] [--verbose] [FILES or DIRS ...]

The file format is described in tests/sql/README.md. Each file runs on its own
connection in a fresh database `sqltest_<file name>` that the runner creates,
USEs and drops at the end. Exits 0 when every check passed, 1 when one failed,
2 on a usage error or when the server cannot be reached.

Needs Python 3.11 and PyMySQL (scripts/install-sql-tools).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from pathlib import Path

try:
    import pymysql
    from pymysql.constants import CLIENT
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("run.py: PyMySQL is missing; run scripts/install-sql-tools")

HERE = Path(__file__).resolve().parent
SERVER_KINDS = ("mariadb", "mysql", "shoal")
# Client-side error numbers after which the connection is gone.
CONNECTION_LOST = {2006, 2013, 2014, 2055}


# --------------------------------------------------------------------------
# Parsing


@dataclasses.dataclass
class Record:
    """One block of a test file: a statement or a query with what it expects."""

    kind: str  # "statement" or "query"
    line: int  # 1-based line of the header
    header_index: int  # 0-based index of the header line in the file
    sql: str
    conditions: list[tuple[str, str]]  # ("skipif"|"onlyif", server kind)
    connection: str
    # statement ok / statement error
    expect_error: bool = False
    error_code: int | None = None
    error_regex: str | None = None
    # modifiers (None = not checked)
    affected: int | None = None
    insert_id: int | None = None
    warnings: list[int] | None = None
    # query
    rowsort: bool = False
    columns: bool = False
    pick: list[str] | None = None
    expected: list[str] = dataclasses.field(default_factory=list)
    # 0-based [start, end) of the expected lines ("----" excluded); the index
    # where "----" is or would be inserted
    result_start: int = 0
    result_end: int = 0
    has_separator: bool = False
    sql_end: int = 0  # 0-based index just past the last SQL line


@dataclasses.dataclass
class Directive:
    kind: str  # "halt"
    line: int


class ParseError(Exception):
    pass


def parse_warnings(tokens: list[str], i: int, where: str) -> tuple[list[int], int]:
    """Parses the codes after `warnings`: `none`, or codes split by commas or spaces."""
    codes: list[int] = []
    if i < len(tokens) and tokens[i] == "none":
        return [], i + 1
    while i < len(tokens):
        parts = [p for p in tokens[i].split(",") if p]
        if not parts or not all(p.isdigit() for p in parts):
            break
        codes.extend(int(p) for p in parts)
        i += 1
    if not codes:
        raise ParseError(f"{where}: 'warnings' needs error codes or 'none'")
    return codes, i


def parse_modifiers(rec: Record, tokens: list[str], where: str, allowed: set[str]) -> None:
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if word not in allowed:
            raise ParseError(f"{where}: unknown word {word!r} in header (allowed: {', '.join(sorted(allowed))})")
        if word in ("affected", "insertid"):
            if i + 1 >= len(tokens) or not tokens[i + 1].isdigit():
                raise ParseError(f"{where}: '{word}' needs a number")
            if word == "affected":
                rec.affected = int(tokens[i + 1])
            else:
                rec.insert_id = int(tokens[i + 1])
            i += 2
        elif word == "warnings":
            rec.warnings, i = parse_warnings(tokens, i + 1, where)
        elif word == "rowsort":
            rec.rowsort = True
            i += 1
        elif word == "nosort":
            i += 1
        elif word == "columns":
            rec.columns = True
            i += 1
        elif word == "pick":
            if i + 1 >= len(tokens):
                raise ParseError(f"{where}: 'pick' needs column names split by commas")
            rec.pick = [p for p in tokens[i + 1].split(",") if p]
            i += 2


def parse_file(path: Path, lines: list[str]) -> list[Record | Directive]:
    items: list[Record | Directive] = []
    conditions: list[tuple[str, str]] = []
    connection = "default"
    i = 0
    n = len(lines)
    while i < n:
        raw = lines[i]
        stripped = raw.strip()
        where = f"{path}:{i + 1}"
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        tokens = stripped.split()
        head = tokens[0]
        if head in ("skipif", "onlyif"):
            if len(tokens) < 2 or tokens[1] not in SERVER_KINDS:
                raise ParseError(f"{where}: '{head}' needs one of {', '.join(SERVER_KINDS)}")
            conditions.append((head, tokens[1]))
            i += 1
            continue
        if head == "connection":
            if len(tokens) != 2 or not re.fullmatch(r"\w+", tokens[1]):
                raise ParseError(f"{where}: 'connection' needs one name")
            if conditions:
                raise ParseError(f"{where}: skipif/onlyif must come right before a statement or query")
            connection = tokens[1]
            i += 1
            continue
        if head == "halt":
            items.append(Directive("halt", i + 1))
            conditions = []
            i += 1
            continue
        if head not in ("statement", "query"):
            raise ParseError(f"{where}: expected 'statement', 'query', a directive or a comment, got {stripped!r}")

        rec = Record(kind=head, line=i + 1, header_index=i, sql="", conditions=conditions, connection=connection)
        conditions = []
        if head == "statement":
            if len(tokens) < 2 or tokens[1] not in ("ok", "error"):
                raise ParseError(f"{where}: 'statement' must be followed by 'ok' or 'error'")
            if tokens[1] == "ok":
                parse_modifiers(rec, tokens[2:], where, {"affected", "warnings", "insertid"})
            else:
                rec.expect_error = True
                # statement error [CODE [REGEX...]] - the regex is the rest of the line
                m = re.match(r"statement\s+error(?:\s+(\d+))?(?:\s+(.*))?$", stripped)
                if not m:
                    raise ParseError(f"{where}: bad 'statement error' line")
                if m.group(1):
                    rec.error_code = int(m.group(1))
                if m.group(2):
                    rec.error_regex = m.group(2)
                    try:
                        re.compile(rec.error_regex)
                    except re.error as e:
                        raise ParseError(f"{where}: bad regex: {e}") from None
        else:
            parse_modifiers(rec, tokens[1:], where, {"rowsort", "nosort", "columns", "warnings", "pick"})

        # SQL: the lines up to a blank line (statement) or '----' (query)
        i += 1
        sql_lines: list[str] = []
        while i < n and lines[i].strip() and lines[i].rstrip() != "----":
            sql_lines.append(lines[i].rstrip("\n"))
            i += 1
        if not sql_lines:
            raise ParseError(f"{where}: no SQL after the header")
        rec.sql = "\n".join(sql_lines)
        rec.sql_end = i
        if head == "statement":
            if i < n and lines[i].rstrip() == "----":
                raise ParseError(f"{path}:{i + 1}: '----' after a statement (use 'query')")
        else:
            if i < n and lines[i].rstrip() == "----":
                rec.has_separator = True
                i += 1
                rec.result_start = i
                while i < n and lines[i].strip():
                    rec.expected.append(lines[i].rstrip("\n"))
                    i += 1
                rec.result_end = i
            else:
                rec.result_start = rec.result_end = i
        items.append(rec)
    if conditions:
        raise ParseError(f"{path}: skipif/onlyif at the end of the file, before no statement")
    return items


# --------------------------------------------------------------------------
# Rendering values


def render_value(value: bytes | str | None) -> str:
    """The text protocol's value as one line-safe string.

    NULL -> NULL, '' -> (empty); bytes are decoded as UTF-8, and a tab, newline,
    carriage return, backslash, other control characters and bytes that are not
    UTF-8 are written as \\t, \\n, \\r, \\\\, \\xNN."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        value = value.encode("utf-8")
    if value == b"":
        return "(empty)"
    text = value.decode("utf-8", errors="surrogateescape")
    out = []
    for ch in text:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that is not UTF-8
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


class PickError(Exception):
    pass


def render_rows(rows, description, rec: Record) -> list[str]:
    names = [render_value(d[0]) for d in (description or ())]
    if rec.pick is not None:
        lower = [n.lower() for n in names]
        indexes = []
        for want in rec.pick:
            if want.lower() not in lower:
                raise PickError(f"no column {want!r} in the result (columns: {', '.join(names)})")
            indexes.append(lower.index(want.lower()))
        rows = [[row[i] for i in indexes] for row in rows]
        names = [names[i] for i in indexes]
    lines = ["\t".join(render_value(v) for v in row) for row in rows]
    if rec.rowsort:
        lines.sort()
    if rec.columns:
        lines.insert(0, "\t".join(names))
    return lines


def format_warnings(codes: list[int] | None) -> str:
    if codes is None:
        return "(not checked)"
    return ",".join(str(c) for c in codes) if codes else "none"


# --------------------------------------------------------------------------
# Running


@dataclasses.dataclass
class Outcome:
    error: tuple[int, str] | None = None
    rows: list[str] | None = None
    affected: int | None = None
    insert_id: int | None = None
    warnings: list[int] | None = None


class Session:
    """The connections of one test file, all in that file's database."""

    def __init__(self, args, database: str):
        self.args = args
        self.database = database
        self.connections: dict[str, pymysql.connections.Connection] = {}

    def connect(self, database: str | None):
        return pymysql.connect(
            host=self.args.host,
            port=self.args.port,
            user=self.args.user,
            password=self.args.password or "",
            database=database,
            charset="utf8mb4",
            # No type conversion: every value stays as the text protocol's bytes.
            conv={},
            use_unicode=False,
            # Not CLIENT.FOUND_ROWS, like the mysql command-line client: the
            # affected-rows count of an UPDATE is the number of rows *changed*,
            # not matched. MULTI_STATEMENTS is off too: one statement a block.
            client_flag=0,
            # Leave the server's autocommit (ON) as it is; PyMySQL's default
            # autocommit=False would send SET AUTOCOMMIT=0.
            autocommit=True,
            connect_timeout=self.args.timeout,
            read_timeout=self.args.timeout,
            write_timeout=self.args.timeout,
        )

    def get(self, name: str):
        conn = self.connections.get(name)
        if conn is None:
            conn = self.connect(self.database)
            self.connections[name] = conn
        return conn

    def drop(self, name: str) -> None:
        conn = self.connections.pop(name, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def close(self) -> None:
        for name in list(self.connections):
            self.drop(name)


def execute(session: Session, rec: Record) -> Outcome:
    conn = session.get(rec.connection)
    cur = conn.cursor()
    out = Outcome()
    try:
        cur.execute(rec.sql)
    except pymysql.err.MySQLError as e:
        code = e.args[0] if e.args and isinstance(e.args[0], int) else -1
        msg = e.args[1] if len(e.args) > 1 else str(e)
        if isinstance(msg, bytes):
            msg = msg.decode("utf-8", errors="replace")
        out.error = (code, str(msg))
        if code in CONNECTION_LOST or isinstance(e, pymysql.err.InterfaceError):
            session.drop(rec.connection)
        return out
    result = conn._result
    if cur.description is not None:
        try:
            out.rows = render_rows(cur.fetchall(), cur.description, rec)
        except PickError as e:
            out.error = (-1, str(e))
            return out
    out.affected = result.affected_rows if result is not None else cur.rowcount
    out.insert_id = result.insert_id if result is not None else cur.lastrowid
    warning_count = result.warning_count if result is not None else 0
    cur.close()
    if rec.warnings is not None:
        if warning_count == 0:
            out.warnings = []
        else:
            # Only asked for when the block checks warnings: SHOW WARNINGS
            # leaves the warnings as they are but resets ROW_COUNT() and
            # FOUND_ROWS().
            wcur = conn.cursor()
            try:
                wcur.execute("SHOW WARNINGS")
                out.warnings = [int(row[1]) for row in wcur.fetchall()]
            except pymysql.err.MySQLError as e:
                out.error = (e.args[0] if e.args else -1, f"SHOW WARNINGS failed: {e}")
            finally:
                wcur.close()
    return out


def should_run(rec: Record, kind: str) -> bool:
    for cond, k in rec.conditions:
        if cond == "skipif" and k == kind:
            return False
        if cond == "onlyif" and k != kind:
            return False
    return True


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) if text else "    (nothing)"


class FileRun:
    def __init__(self, args, path: Path, server_kind: str):
        self.args = args
        self.path = path
        self.server_kind = server_kind
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        # index of the header line -> (new header, new result lines or None)
        self.rewrites: dict[int, tuple[str, list[str] | None]] = {}

    def fail(self, rec: Record, problem: str, expected: str, got: str) -> None:
        self.failed += 1
        print(f"FAIL {self.display()}:{rec.line}: {problem}")
        print(indent(rec.sql))
        print("  expected:")
        print(indent(expected))
        print("  got:")
        print(indent(got))
        sys.stdout.flush()

    def display(self) -> str:
        try:
            return str(self.path.relative_to(Path.cwd()))
        except ValueError:
            return str(self.path)

    def check(self, rec: Record, out: Outcome) -> None:
        record = self.args.record
        # --- errors
        if rec.expect_error:
            if out.error is None:
                self.fail(rec, "expected an error, the statement succeeded",
                          f"error {rec.error_code or ''} {rec.error_regex or ''}".strip(), "ok")
                return
            code, msg = out.error
            problems = []
            if rec.error_code is not None and code != rec.error_code:
                problems.append("error code")
            if rec.error_regex is not None and not re.search(rec.error_regex, msg):
                problems.append("error message")
            if problems and record and problems == ["error code"]:
                header = f"statement error {code}" + (f" {rec.error_regex}" if rec.error_regex else "")
                self.rewrites[rec.header_index] = (header, None)
                self.passed += 1
                return
            if problems:
                self.fail(rec, " and ".join(problems) + " differ",
                          f"error {rec.error_code if rec.error_code is not None else '(any)'}"
                          + (f" matching /{rec.error_regex}/" if rec.error_regex else ""),
                          f"error {code}: {msg}")
                return
            self.passed += 1
            return
        if out.error is not None:
            code, msg = out.error
            expected = "ok" if rec.kind == "statement" else "\n".join(rec.expected)
            self.fail(rec, "unexpected error", expected, f"error {code}: {msg}")
            return
        # --- success
        problems = []
        if rec.kind == "query":
            if out.rows is None:
                out.rows = []  # a statement without a result set: no rows
            expected = sorted(rec.expected) if rec.rowsort and not rec.columns else list(rec.expected)
            if rec.rowsort and rec.columns and expected:
                expected = expected[:1] + sorted(expected[1:])
            if expected != out.rows:
                problems.append(("rows", "\n".join(rec.expected), "\n".join(out.rows)))
        if rec.affected is not None and out.affected != rec.affected:
            problems.append(("affected rows", str(rec.affected), str(out.affected)))
        if rec.insert_id is not None and out.insert_id != rec.insert_id:
            problems.append(("insert id", str(rec.insert_id), str(out.insert_id)))
        if rec.warnings is not None and out.warnings != rec.warnings:
            problems.append(("warnings", format_warnings(rec.warnings), format_warnings(out.warnings)))
        if not problems:
            self.passed += 1
            return
        if record:
            self.rewrites[rec.header_index] = (self.new_header(rec, out), out.rows if rec.kind == "query" else None)
            self.passed += 1
            return
        for what, exp, got in problems:
            self.fail(rec, f"{what} differ", exp, got)
            break  # one failure per block
        # count the block once even when several aspects differ

    def new_header(self, rec: Record, out: Outcome) -> str:
        words = [rec.kind]
        if rec.kind == "statement":
            words.append("ok")
            if rec.affected is not None:
                words += ["affected", str(out.affected)]
            if rec.insert_id is not None:
                words += ["insertid", str(out.insert_id)]
        else:
            if rec.rowsort:
                words.append("rowsort")
            if rec.columns:
                words.append("columns")
            if rec.pick is not None:
                words += ["pick", ",".join(rec.pick)]
        if rec.warnings is not None:
            words += ["warnings", format_warnings(out.warnings)]
        return " ".join(words)

    def run(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        try:
            items = parse_file(self.path, lines)
        except ParseError as e:
            print(f"ERROR {e}")
            self.failed += 1
            return
        database = "sqltest_" + re.sub(r"\W", "_", self.path.stem.lower())
        session = Session(self.args, database)
        admin = None
        started = time.monotonic()
        try:
            try:
                admin = session.connect(None)
                with admin.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
                    cur.execute(f"CREATE DATABASE `{database}`")
            except pymysql.err.MySQLError as e:
                print(f"ERROR {self.display()}: cannot create database {database}: {e}")
                self.failed += 1
                return
            for item in items:
                if isinstance(item, Directive):
                    if item.kind == "halt":
                        if self.args.verbose:
                            print(f"  {self.display()}:{item.line}: halt")
                        break
                    continue
                rec = item
                if not should_run(rec, self.server_kind):
                    self.skipped += 1
                    if self.args.verbose:
                        print(f"  skip {self.display()}:{rec.line}")
                    continue
                if self.args.verbose:
                    first = rec.sql.splitlines()[0]
                    print(f"  {self.display()}:{rec.line}: {first[:100]}")
                try:
                    out = execute(session, rec)
                except pymysql.err.MySQLError as e:  # connecting failed
                    out = Outcome(error=(e.args[0] if e.args else -1, str(e)))
                self.check(rec, out)
        finally:
            session.close()
            if admin is not None and not self.args.keep_db:
                try:
                    with admin.cursor() as cur:
                        cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
                except pymysql.err.MySQLError as e:
                    # the admin connection may have been idle too long; try anew
                    try:
                        again = session.connect(None)
                        with again.cursor() as cur:
                            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
                        again.close()
                    except pymysql.err.MySQLError:
                        print(f"WARNING {self.display()}: could not drop database {database}: {e}")
            if admin is not None:
                admin.close()
        if self.args.record and self.rewrites:
            self.write_back(lines)
        elapsed = time.monotonic() - started
        status = "ok" if self.failed == 0 else "FAILED"
        print(f"{self.display()}: {status} ({self.passed} passed, {self.failed} failed, "
              f"{self.skipped} skipped, {elapsed:.2f}s)")

    def write_back(self, lines: list[str]) -> None:
        items = parse_file(self.path, lines)
        records = {it.header_index: it for it in items if isinstance(it, Record)}
        out: list[str] = []
        i = 0
        n = len(lines)
        while i < n:
            if i in self.rewrites:
                rec = records[i]
                header, rows = self.rewrites[i]
                out.append(header)
                out.extend(lines[i + 1:rec.sql_end])
                if rec.kind == "query":
                    out.append("----")
                    out.extend(rows or [])
                    i = rec.result_end
                else:
                    i = rec.sql_end
                continue
            out.append(lines[i])
            i += 1
        self.path.write_text("\n".join(out) + "\n", encoding="utf-8")
        print(f"{self.display()}: recorded {len(self.rewrites)} block(s)")


def detect_server_kind(args) -> tuple[str, str]:
    conn = pymysql.connect(
        host=args.host, port=args.port, user=args.user, password=args.password or "",
        connect_timeout=args.timeout, read_timeout=args.timeout, write_timeout=args.timeout,
        autocommit=True,
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            version = cur.fetchone()[0]
    finally:
        conn.close()
    if isinstance(version, bytes):
        version = version.decode()
    low = version.lower()
    if "mariadb" in low:
        return "mariadb", version
    if "shoal" in low:
        return "shoal", version
    return "mysql", version


def collect(paths: list[str]) -> list[Path]:
    if not paths:
        paths = [str(HERE)]
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files.extend(sorted(path.glob("*.test")))
        elif path.is_file():
            files.append(path)
        else:
            sys.exit(f"run.py: no such file or directory: {p}")
    return [f.resolve() for f in files]


def main() -> int:
    parser = argparse.ArgumentParser(description="Runs the SQL behaviour tests (tests/sql/README.md).")
    parser.add_argument("--host", default=os.environ.get("SQL_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("SQL_PORT", "3306")))
    parser.add_argument("--user", default=os.environ.get("SQL_USER", "root"))
    parser.add_argument("--password", default=os.environ.get("SQL_PASSWORD", ""))
    parser.add_argument("--record", action="store_true",
                        help="rewrite the expected results in the files with what the server returns")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every block as it runs")
    parser.add_argument("--timeout", type=int, default=30, help="connect/read/write timeout in seconds (30)")
    parser.add_argument("--server-kind", choices=SERVER_KINDS,
                        help="for skipif/onlyif; detected from SELECT VERSION() when not given")
    parser.add_argument("--keep-db", action="store_true", help="do not drop the test databases (debugging)")
    parser.add_argument("files", nargs="*", help="test files or directories (default: tests/sql/)")
    args = parser.parse_args()

    files = collect(args.files)
    if not files:
        print("run.py: no .test files found", file=sys.stderr)
        return 2
    try:
        kind, version = detect_server_kind(args)
    except pymysql.err.MySQLError as e:
        print(f"run.py: cannot connect to {args.host}:{args.port} as {args.user}: {e}", file=sys.stderr)
        return 2
    if args.server_kind:
        kind = args.server_kind
    print(f"server {args.host}:{args.port}: {version} (as {kind})")

    started = time.monotonic()
    passed = failed = skipped = 0
    failed_files = []
    for path in files:
        run = FileRun(args, path, kind)
        run.run()
        passed += run.passed
        failed += run.failed
        skipped += run.skipped
        if run.failed:
            failed_files.append(run.display())
    elapsed = time.monotonic() - started
    if failed_files:
        print(f"failed files: {' '.join(failed_files)}")
    print(f"{len(files)} files in {elapsed:.1f}s")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
