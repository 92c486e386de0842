#!/usr/bin/env python3
"""Smoke test of a MySQL-protocol server through PyMySQL (text protocol).

    python3 tests/clients/python_pymysql.py [HOST [PORT [USER [PASSWORD]]]]

or with SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD in the environment
(defaults 127.0.0.1, 3306, root, no password). Uses its own database
(smoke_pymysql), which it drops at the end. Exits 0 when every check passed,
1 with a message naming the first failed check otherwise.

The wrong-password check needs a user with a password: the program creates
'smoke_pymysql'@'%' with CREATE USER and drops it at the end; if the server
cannot create users the check is skipped with a message (set SQL_AUTH_USER and
SQL_AUTH_PASSWORD to use an existing user instead).
"""

from __future__ import annotations

import datetime
import decimal
import os
import sys
import time

try:
    import pymysql
except ImportError:
    sys.exit("python_pymysql: PyMySQL is missing; run scripts/install-sql-tools")

NAME = "python_pymysql"
DB = "smoke_pymysql"
SMOKE_USER = "smoke_pymysql"
SMOKE_PASSWORD = "pw-Smoke-1"
TIMEOUT = 30


class CheckFailed(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)


def expect_equal(got, want, what: str) -> None:
    if got != want or type(got) is not type(want):
        raise CheckFailed(f"{what}: got {got!r} ({type(got).__name__}), want {want!r} ({type(want).__name__})")


def settings():
    args = sys.argv[1:]
    host = args[0] if len(args) > 0 else os.environ.get("SQL_HOST", "127.0.0.1")
    port = int(args[1] if len(args) > 1 else os.environ.get("SQL_PORT", "3306"))
    user = args[2] if len(args) > 2 else os.environ.get("SQL_USER", "root")
    password = args[3] if len(args) > 3 else os.environ.get("SQL_PASSWORD", "")
    return host, port, user, password


def connect(host, port, user, password, database=None, **extra):
    return pymysql.connect(
        host=host, port=port, user=user, password=password, database=database,
        charset="utf8mb4", autocommit=True,
        connect_timeout=10, read_timeout=TIMEOUT, write_timeout=TIMEOUT, **extra,
    )


def step(name: str) -> None:
    print(f"{NAME}: {name}", flush=True)


def main() -> int:
    host, port, user, password = settings()
    started = time.monotonic()
    step(f"connect to {host}:{port} as {user}")
    conn = connect(host, port, user, password)
    created_user = None
    try:
        cur = conn.cursor()

        step("server version")
        cur.execute("SELECT VERSION()")
        (version,) = cur.fetchone()
        check(isinstance(version, str) and version != "", f"VERSION() gave {version!r}")
        print(f"{NAME}: server version {version}")

        step("create database and table")
        cur.execute(f"DROP DATABASE IF EXISTS {DB}")
        cur.execute(f"CREATE DATABASE {DB}")
        cur.execute(f"USE {DB}")
        cur.execute(
            """CREATE TABLE items (
                 id INT NOT NULL PRIMARY KEY,
                 name VARCHAR(50) NOT NULL,
                 amount DECIMAL(10,2),
                 qty BIGINT UNSIGNED,
                 ratio DOUBLE,
                 day DATE,
                 at DATETIME(6),
                 note TEXT,
                 data VARBINARY(16)
               ) ENGINE=NDB"""
        )

        step("multi-row INSERT")
        n = cur.execute(
            "INSERT INTO items (id, name, amount, qty, ratio, day, at, note, data) VALUES "
            "(1, 'one', 1.50, 10, 0.5, '2024-02-29', '2024-02-29 13:14:15.123456', 'first', X'00FF'), "
            "(2, 'two', -2.25, 18446744073709551615, -1.25, '1999-12-31', '2000-01-01 00:00:00', NULL, NULL), "
            "(3, 'three', NULL, NULL, NULL, NULL, NULL, '', '')"
        )
        expect_equal(n, 3, "affected rows of a 3-row INSERT")

        step("parameters (client-side, as PyMySQL does) and executemany")
        n = cur.executemany(
            "INSERT INTO items (id, name, amount, qty, ratio, day, at, note, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (4, "quote's \"and\" back\\slash", decimal.Decimal("12345678.99"), 0, 1e-3,
                 datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), "ünïcødé ✓ 😀", b"\x01\x02"),
                (5, "five", None, 5, None, None, None, None, None),
            ],
        )
        expect_equal(n, 2, "affected rows of executemany")

        cur.execute("SELECT id, name, amount, qty, ratio, day, at, note, data FROM items WHERE id = %s", (1,))
        row = cur.fetchone()
        expect_equal(row[0], 1, "INT")
        expect_equal(row[1], "one", "VARCHAR")
        expect_equal(row[2], decimal.Decimal("1.50"), "DECIMAL")
        expect_equal(row[3], 10, "BIGINT UNSIGNED")
        expect_equal(row[4], 0.5, "DOUBLE")
        expect_equal(row[5], datetime.date(2024, 2, 29), "DATE")
        expect_equal(row[6], datetime.datetime(2024, 2, 29, 13, 14, 15, 123456), "DATETIME(6)")
        expect_equal(row[7], "first", "TEXT")
        expect_equal(row[8], b"\x00\xff", "VARBINARY")

        cur.execute("SELECT qty, amount, note, data FROM items WHERE id = %s", (2,))
        expect_equal(cur.fetchone(), (18446744073709551615, decimal.Decimal("-2.25"), None, None), "row 2")

        cur.execute("SELECT amount, note, data FROM items WHERE id = %s", (3,))
        expect_equal(cur.fetchone(), (None, "", b""), "NULL and empty values")

        cur.execute("SELECT name, amount, at, note, data FROM items WHERE id = %s", (4,))
        expect_equal(
            cur.fetchone(),
            ("quote's \"and\" back\\slash", decimal.Decimal("12345678.99"),
             datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), "ünïcødé ✓ 😀", b"\x01\x02"),
            "escaped and non-ASCII values",
        )

        cur.execute("SELECT id FROM items WHERE id IN %s AND name <> %s ORDER BY id", ((1, 2, 5), "two"))
        expect_equal(cur.fetchall(), ((1,), (5,)), "IN with a parameter list")

        cur.execute("SELECT COUNT(*), SUM(amount) FROM items")
        expect_equal(cur.fetchone(), (5, decimal.Decimal("12345678.24")), "COUNT and SUM")

        step("UPDATE affected rows (changed rows, no CLIENT_FOUND_ROWS)")
        n = cur.execute("UPDATE items SET qty = 10 WHERE id IN (1, 5)")
        expect_equal(n, 1, "rows changed by UPDATE")

        step("transaction with COMMIT")
        other = connect(host, port, user, password, DB)
        ocur = other.cursor()
        conn.begin()
        cur.execute("INSERT INTO items (id, name) VALUES (10, 'committed')")
        ocur.execute("SELECT COUNT(*) FROM items WHERE id = 10")
        expect_equal(ocur.fetchone()[0], 0, "uncommitted row seen by another connection")
        conn.commit()
        ocur.execute("SELECT name FROM items WHERE id = 10")
        expect_equal(ocur.fetchone(), ("committed",), "committed row from another connection")

        step("transaction with ROLLBACK")
        conn.begin()
        cur.execute("INSERT INTO items (id, name) VALUES (11, 'rolled back')")
        cur.execute("UPDATE items SET name = 'changed' WHERE id = 1")
        cur.execute("SELECT COUNT(*) FROM items WHERE id = 11")
        expect_equal(cur.fetchone()[0], 1, "own uncommitted row")
        conn.rollback()
        cur.execute("SELECT COUNT(*) FROM items WHERE id = 11")
        expect_equal(cur.fetchone()[0], 0, "row after ROLLBACK")
        cur.execute("SELECT name FROM items WHERE id = 1")
        expect_equal(cur.fetchone()[0], "one", "update after ROLLBACK")
        other.close()

        step("duplicate key error")
        try:
            cur.execute("INSERT INTO items (id, name) VALUES (1, 'dup')")
        except pymysql.err.IntegrityError as e:
            expect_equal(e.args[0], 1062, "error code of a duplicate key")
        else:
            raise CheckFailed("a duplicate key INSERT succeeded")
        cur.execute("SELECT 1")
        expect_equal(cur.fetchone(), (1,), "the connection after an error")

        step("syntax error")
        try:
            cur.execute("SELEC 1")
        except pymysql.err.ProgrammingError as e:
            expect_equal(e.args[0], 1064, "error code of a syntax error")
        else:
            raise CheckFailed("a syntax error succeeded")

        step("wrong password")
        created_user = auth_check(cur, host, port)

        step("cleanup")
        cur.execute(f"DROP DATABASE {DB}")
    except CheckFailed as e:
        print(f"{NAME}: FAILED: {e}", file=sys.stderr)
        cleanup(host, port, user, password, created_user)
        return 1
    except pymysql.err.MySQLError as e:
        print(f"{NAME}: FAILED with a server or driver error: {e!r}", file=sys.stderr)
        cleanup(host, port, user, password, created_user)
        return 1
    finally:
        conn.close()
    if created_user:
        cleanup(host, port, user, password, created_user, drop_db=False)
    print(f"{NAME}: OK ({time.monotonic() - started:.1f}s)")
    return 0


def auth_check(cur, host, port):
    """Checks that a wrong password gives 1045 and the right one connects.

    Returns the user it created (to drop), or None."""
    auth_user = os.environ.get("SQL_AUTH_USER")
    auth_password = os.environ.get("SQL_AUTH_PASSWORD", "")
    created = None
    if not auth_user:
        try:
            cur.execute(f"DROP USER IF EXISTS '{SMOKE_USER}'@'%'")
            cur.execute(f"CREATE USER '{SMOKE_USER}'@'%' IDENTIFIED BY '{SMOKE_PASSWORD}'")
            grant(cur)
        except pymysql.err.MySQLError as e:
            print(f"{NAME}: SKIP wrong-password check: cannot create a user ({e.args[0]}: {e.args[1]})")
            return None
        created = SMOKE_USER
        auth_user, auth_password = SMOKE_USER, SMOKE_PASSWORD
    try:
        connect(host, port, auth_user, auth_password + "-wrong").close()
    except pymysql.err.OperationalError as e:
        expect_equal(e.args[0], 1045, "error code of a wrong password")
    else:
        raise CheckFailed("a wrong password was accepted")
    good = connect(host, port, auth_user, auth_password)
    with good.cursor() as c:
        c.execute("SELECT 1")
        expect_equal(c.fetchone(), (1,), "a query as the password user")
    good.close()
    return created


def grant(cur):
    """GRANT the smoke user the database. A server without privileges yet
    (Shoal: 1235, every user may do everything) is fine."""
    try:
        cur.execute(f"GRANT ALL ON {DB}.* TO '{SMOKE_USER}'@'%'")
    except pymysql.err.MySQLError as e:
        if e.args[0] != 1235:
            raise
        print(f"{NAME}: note: no GRANT on this server ({e.args[1]})")


def cleanup(host, port, user, password, created_user, drop_db=True):
    try:
        conn = connect(host, port, user, password)
        with conn.cursor() as cur:
            if drop_db:
                cur.execute(f"DROP DATABASE IF EXISTS {DB}")
            if created_user:
                cur.execute(f"DROP USER IF EXISTS '{created_user}'@'%'")
        conn.close()
    except pymysql.err.MySQLError as e:
        print(f"{NAME}: cleanup failed: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except pymysql.err.MySQLError as e:
        print(f"{NAME}: FAILED: cannot connect: {e!r}", file=sys.stderr)
        sys.exit(1)
