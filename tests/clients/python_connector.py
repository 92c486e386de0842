#!/usr/bin/env python3
"""Smoke test of a MySQL-protocol server through mysql-connector-python
(Oracle's driver, pure-Python implementation), with server-side prepared
statements (COM_STMT_PREPARE / COM_STMT_EXECUTE, the binary protocol).

    python3 tests/clients/python_connector.py [HOST [PORT [USER [PASSWORD]]]]

or with SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD in the environment
(defaults 127.0.0.1, 3306, root, no password). Uses its own database
(smoke_connector), which it drops at the end. Exits 0 when every check
passed, 1 with a message naming the first failed check otherwise.

The wrong-password check creates 'smoke_connector'@'%' and drops it at the
end; if the server cannot create users the check is skipped with a message
(set SQL_AUTH_USER and SQL_AUTH_PASSWORD to use an existing user instead).
"""

from __future__ import annotations

import datetime
import decimal
import os
import sys
import time

try:
    import mysql.connector
    from mysql.connector import errorcode
except ImportError:
    sys.exit("python_connector: mysql-connector-python is missing; run scripts/install-sql-tools")

NAME = "python_connector"
DB = "smoke_connector"
SMOKE_USER = "smoke_connector"
SMOKE_PASSWORD = "pw-Smoke-2"
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


def connect(host, port, user, password, database=None):
    kwargs = dict(
        host=host, port=port, user=user, password=password,
        use_pure=True,  # the pure-Python protocol code, not the C extension
        autocommit=True,
        connection_timeout=10,  # connect timeout; also the socket's read timeout
        charset="utf8mb4",
        # The test servers have no TLS certificates; Shoal may speak no TLS.
        ssl_disabled=True,
    )
    if database:
        kwargs["database"] = database
    conn = mysql.connector.connect(**kwargs)
    return conn


def step(name: str) -> None:
    print(f"{NAME}: {name}", flush=True)


def main() -> int:
    host, port, user, password = settings()
    started = time.monotonic()
    step(f"connect to {host}:{port} as {user}")
    conn = connect(host, port, user, password)
    # reads may take long on a busy machine; bound them at TIMEOUT seconds
    conn._socket.sock.settimeout(TIMEOUT)
    created_user = None
    try:
        cur = conn.cursor()

        step("server version")
        cur.execute("SELECT VERSION()")
        (version,) = cur.fetchone()
        check(isinstance(version, str) and version != "", f"VERSION() gave {version!r}")
        print(f"{NAME}: server version {version} (handshake: {conn.server_info})")

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
                 small SMALLINT,
                 ratio DOUBLE,
                 day DATE,
                 at DATETIME(6),
                 tm TIME,
                 note TEXT,
                 data VARBINARY(16)
               ) ENGINE=NDB"""
        )

        step("multi-row INSERT (text protocol)")
        cur.execute(
            "INSERT INTO items (id, name, amount, qty, small, ratio, day, at, tm, note, data) VALUES "
            "(1, 'one', 1.50, 10, -3, 0.5, '2024-02-29', '2024-02-29 13:14:15.123456', '10:11:12', 'first', X'00FF'), "
            "(2, 'two', -2.25, 18446744073709551615, 32767, -1.25, '1999-12-31', '2000-01-01 00:00:00', '-01:00:00', NULL, NULL)"
        )
        expect_equal(cur.rowcount, 2, "affected rows of a 2-row INSERT")

        step("server-side prepared INSERT (binary protocol) with every type and NULLs")
        pcur = conn.cursor(prepared=True)
        insert = ("INSERT INTO items (id, name, amount, qty, small, ratio, day, at, tm, note, data) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        pcur.execute(insert, (3, "three ✓ 😀", decimal.Decimal("12345678.99"), 7, -32768, 1e-3,
                              datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5, 600000),
                              datetime.timedelta(hours=1, minutes=2, seconds=3), "it's \"quoted\"", b"\x01\x02"))
        expect_equal(pcur.rowcount, 1, "affected rows of a prepared INSERT")
        pcur.execute(insert, (4, "four", None, None, None, None, None, None, None, None, None))
        pcur.execute(insert, (5, "", decimal.Decimal("0.00"), 0, 0, 0.0, datetime.date(1000, 1, 1),
                              datetime.datetime(9999, 12, 31, 23, 59, 59), datetime.timedelta(0), "", b""))

        step("server-side prepared SELECT with parameters: values come back typed")
        select = "SELECT id, name, amount, qty, small, ratio, day, at, tm, note, data FROM items WHERE id = ?"
        pcur.execute(select, (1,))
        row = pcur.fetchone()
        expect_equal(row[0], 1, "INT")
        expect_equal(row[1], "one", "VARCHAR")
        expect_equal(row[2], decimal.Decimal("1.50"), "DECIMAL")
        expect_equal(row[3], 10, "BIGINT UNSIGNED")
        expect_equal(row[4], -3, "SMALLINT")
        expect_equal(row[5], 0.5, "DOUBLE")
        expect_equal(row[6], datetime.date(2024, 2, 29), "DATE")
        expect_equal(row[7], datetime.datetime(2024, 2, 29, 13, 14, 15, 123456), "DATETIME(6)")
        expect_equal(row[8], datetime.timedelta(hours=10, minutes=11, seconds=12), "TIME")
        expect_equal(row[9], "first", "TEXT")
        expect_equal(bytes(row[10]), b"\x00\xff", "VARBINARY")

        pcur.execute(select, (2,))
        row = pcur.fetchone()
        expect_equal(row[3], 18446744073709551615, "BIGINT UNSIGNED max")
        expect_equal(row[4], 32767, "SMALLINT max")
        # (no check of the negative TIME '-01:00:00' here: this driver applies the
        # binary protocol's sign to the days only, and reads it as +1 hour)
        expect_equal((row[9], row[10]), (None, None), "NULLs")

        pcur.execute(select, (3,))
        row = pcur.fetchone()
        expect_equal(row[1], "three ✓ 😀", "non-ASCII text round trip")
        expect_equal(row[2], decimal.Decimal("12345678.99"), "DECIMAL round trip")
        expect_equal(row[4], -32768, "SMALLINT min round trip")
        expect_equal(row[5], 1e-3, "DOUBLE round trip")
        expect_equal(row[7], datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), "DATETIME round trip")
        expect_equal(row[8], datetime.timedelta(hours=1, minutes=2, seconds=3), "TIME round trip")
        expect_equal(row[9], "it's \"quoted\"", "quotes round trip")
        expect_equal(bytes(row[10]), b"\x01\x02", "VARBINARY round trip")

        pcur.execute(select, (4,))
        row = pcur.fetchone()
        expect_equal(row[1:], ("four", None, None, None, None, None, None, None, None, None), "all NULL row")

        pcur.execute(select, (5,))
        row = pcur.fetchone()
        expect_equal(row[1], "", "empty string")
        expect_equal(row[6], datetime.date(1000, 1, 1), "DATE min")
        expect_equal(row[7], datetime.datetime(9999, 12, 31, 23, 59, 59), "DATETIME max")
        expect_equal(row[8], datetime.timedelta(0), "TIME zero")

        # one statement, prepared once, executed with several parameter sets
        ids = []
        for wanted in (1, 2, 3, 99):
            pcur.execute("SELECT id FROM items WHERE id = ? AND name IS NOT NULL", (wanted,))
            ids.extend(r[0] for r in pcur.fetchall())
        expect_equal(ids, [1, 2, 3], "re-executed prepared SELECT")

        pcur.execute("SELECT COUNT(*), SUM(amount) FROM items WHERE id BETWEEN ? AND ?", (1, 5))
        expect_equal(pcur.fetchone(), (5, decimal.Decimal("12345678.24")), "COUNT and SUM over a range")

        pcur.execute("UPDATE items SET qty = ? WHERE id IN (?, ?)", (10, 1, 3))
        expect_equal(pcur.rowcount, 1, "rows changed by a prepared UPDATE")

        step("a prepared SELECT re-executed after its table is made again with other columns")
        moving = "SELECT name, qty FROM moving WHERE id = ?"
        cur.execute("CREATE TABLE moving (id INT PRIMARY KEY, name VARCHAR(20), qty INT)")
        cur.execute("INSERT INTO moving VALUES (1, 'first', 5)")
        for _ in range(2):
            pcur.execute(moving, (1,))
            expect_equal(pcur.fetchall(), [("first", 5)], "prepared SELECT before the change")
        cur.execute("DROP TABLE moving")
        cur.execute("CREATE TABLE moving (id INT PRIMARY KEY, qty INT, extra INT, name VARCHAR(20))")
        cur.execute("INSERT INTO moving VALUES (1, 7, 0, 'second')")
        pcur.execute(moving, (1,))
        expect_equal(pcur.fetchall(), [("second", 7)], "prepared SELECT after the change")

        step("transaction with COMMIT")
        other = connect(host, port, user, password, DB)
        ocur = other.cursor()
        conn.start_transaction()
        pcur.execute("INSERT INTO items (id, name) VALUES (?, ?)", (10, "committed"))
        ocur.execute("SELECT COUNT(*) FROM items WHERE id = 10")
        expect_equal(ocur.fetchone()[0], 0, "uncommitted row seen by another connection")
        conn.commit()
        ocur.execute("SELECT name FROM items WHERE id = 10")
        expect_equal(ocur.fetchone(), ("committed",), "committed row from another connection")
        other.close()

        step("transaction with ROLLBACK")
        conn.start_transaction()
        pcur.execute("INSERT INTO items (id, name) VALUES (?, ?)", (11, "rolled back"))
        pcur.execute("DELETE FROM items WHERE id = ?", (1,))
        conn.rollback()
        cur.execute("SELECT id FROM items WHERE id IN (1, 11) ORDER BY id")
        expect_equal(cur.fetchall(), [(1,)], "rows after ROLLBACK")

        step("duplicate key error, prepared and not")
        for c, sql, params in ((pcur, "INSERT INTO items (id, name) VALUES (?, ?)", (1, "dup")),
                               (cur, "INSERT INTO items (id, name) VALUES (1, 'dup')", None)):
            try:
                c.execute(sql, params)
            except mysql.connector.errors.IntegrityError as e:
                expect_equal(e.errno, errorcode.ER_DUP_ENTRY, "error code of a duplicate key")
                expect_equal(e.sqlstate, "23000", "SQLSTATE of a duplicate key")
            else:
                raise CheckFailed("a duplicate key INSERT succeeded")
        pcur.execute("SELECT ?", (41,))
        expect_equal(pcur.fetchone()[0], 41, "the connection after an error")

        step("error while preparing")
        try:
            pcur.execute("SELECT nope FROM items WHERE id = ?", (1,))
        except mysql.connector.errors.ProgrammingError as e:
            expect_equal(e.errno, 1054, "error code of an unknown column")
        else:
            raise CheckFailed("a prepared SELECT of an unknown column succeeded")
        cur.execute("SELECT 1")
        expect_equal(cur.fetchone(), (1,), "the connection after a failed prepare")

        step("wrong password")
        created_user = auth_check(cur, host, port)

        step("cleanup")
        pcur.close()
        cur.execute(f"DROP DATABASE {DB}")
    except CheckFailed as e:
        print(f"{NAME}: FAILED: {e}", file=sys.stderr)
        cleanup(host, port, user, password, created_user)
        return 1
    except mysql.connector.Error as e:
        print(f"{NAME}: FAILED with a server or driver error: {e!r}", file=sys.stderr)
        cleanup(host, port, user, password, created_user)
        return 1
    finally:
        try:
            conn.close()
        except mysql.connector.Error:
            pass
    if created_user:
        cleanup(host, port, user, password, created_user, drop_db=False)
    print(f"{NAME}: OK ({time.monotonic() - started:.1f}s)")
    return 0


def auth_check(cur, host, port):
    auth_user = os.environ.get("SQL_AUTH_USER")
    auth_password = os.environ.get("SQL_AUTH_PASSWORD", "")
    created = None
    if not auth_user:
        try:
            cur.execute(f"DROP USER IF EXISTS '{SMOKE_USER}'@'%'")
            cur.execute(f"CREATE USER '{SMOKE_USER}'@'%' IDENTIFIED BY '{SMOKE_PASSWORD}'")
            try:
                cur.execute(f"GRANT ALL ON {DB}.* TO '{SMOKE_USER}'@'%'")
            except mysql.connector.Error as e:
                # A server without privileges yet (Shoal: 1235) lets every
                # user do everything.
                if e.errno != 1235:
                    raise
                print(f"{NAME}: note: no GRANT on this server ({e.msg})")
        except mysql.connector.Error as e:
            print(f"{NAME}: SKIP wrong-password check: cannot create a user ({e})")
            return None
        created = SMOKE_USER
        auth_user, auth_password = SMOKE_USER, SMOKE_PASSWORD
    try:
        connect(host, port, auth_user, auth_password + "-wrong").close()
    except mysql.connector.errors.ProgrammingError as e:
        expect_equal(e.errno, errorcode.ER_ACCESS_DENIED_ERROR, "error code of a wrong password")
    except mysql.connector.Error as e:
        raise CheckFailed(f"a wrong password gave {e!r}, not error 1045")
    else:
        raise CheckFailed("a wrong password was accepted")
    good = connect(host, port, auth_user, auth_password)
    c = good.cursor()
    c.execute("SELECT 1")
    expect_equal(c.fetchone(), (1,), "a query as the password user")
    good.close()
    return created


def cleanup(host, port, user, password, created_user, drop_db=True):
    try:
        conn = connect(host, port, user, password)
        cur = conn.cursor()
        if drop_db:
            cur.execute(f"DROP DATABASE IF EXISTS {DB}")
        if created_user:
            cur.execute(f"DROP USER IF EXISTS '{created_user}'@'%'")
        conn.close()
    except mysql.connector.Error as e:
        print(f"{NAME}: cleanup failed: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except mysql.connector.Error as e:
        print(f"{NAME}: FAILED: cannot connect: {e!r}", file=sys.stderr)
        sys.exit(1)
