// Smoke test of a MySQL-protocol server through MySQL Connector/J, with
// server-side prepared statements (useServerPrepStmts=true: the binary
// protocol).
//
//   java -cp mysql-connector-j-9.5.0.jar tests/clients/java/Smoke.java [HOST [PORT [USER [PASSWORD]]]]
//
// (tests/clients/java/run.sh finds the jar that scripts/install-sql-tools
// fetched.) Settings may also come from SQL_HOST, SQL_PORT, SQL_USER,
// SQL_PASSWORD (defaults 127.0.0.1, 3306, root, no password). Uses its own
// database (smoke_java), which it drops at the end. Exits 0 when every check
// passed, 1 with a message naming the first failed check otherwise.
//
// Connection options: sslMode=DISABLED (the test servers have no
// certificates, and Shoal may not speak TLS), so allowPublicKeyRetrieval=true
// lets caching_sha2_password finish without TLS; Connector/J's default
// useAffectedRows=false sets CLIENT_FOUND_ROWS, so its update counts are rows
// *matched* (checked below).
//
// The wrong-password check creates 'smoke_java'@'%' and drops it at the end;
// if the server cannot create users the check is skipped with a message (set
// SQL_AUTH_USER and SQL_AUTH_PASSWORD to use an existing user instead).

import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.Arrays;
import java.util.Objects;

public class Smoke {
    static final String NAME = "java";
    static final String DB = "smoke_java";
    static final String SMOKE_USER = "smoke_java";
    static final String SMOKE_PASSWORD = "pw-Smoke-4";

    static String host, port, user, password;
    static boolean fractionalSeconds = true;

    static class CheckFailed extends RuntimeException {
        CheckFailed(String message) {
            super(message);
        }
    }

    static void step(String what) {
        System.out.println(NAME + ": " + what);
    }

    static void check(boolean condition, String what) {
        if (!condition) throw new CheckFailed(what);
    }

    static void expect(Object got, Object want, String what) {
        if (!Objects.equals(got, want)) {
            String gotType = got == null ? "null" : got.getClass().getSimpleName();
            String wantType = want == null ? "null" : want.getClass().getSimpleName();
            throw new CheckFailed(what + ": got " + got + " (" + gotType + "), want " + want + " (" + wantType + ")");
        }
    }

    static String env(String key, String fallback) {
        String v = System.getenv(key);
        return v == null ? fallback : v;
    }

    static Connection connect(String u, String p, String database) throws SQLException {
        String url = "jdbc:mysql://" + host + ":" + port + "/" + (database == null ? "" : database)
                + "?useServerPrepStmts=true"
                + "&sslMode=DISABLED"
                + "&allowPublicKeyRetrieval=true"
                + "&connectTimeout=10000"
                + "&socketTimeout=30000"
                + "&characterEncoding=UTF-8";
        return DriverManager.getConnection(url, u, p);
    }

    public static void main(String[] args) {
        host = args.length > 0 ? args[0] : env("SQL_HOST", "127.0.0.1");
        port = args.length > 1 ? args[1] : env("SQL_PORT", "3306");
        user = args.length > 2 ? args[2] : env("SQL_USER", "root");
        password = args.length > 3 ? args[3] : env("SQL_PASSWORD", "");
        long started = System.nanoTime();
        boolean[] createdUser = {false};
        int code = 0;
        try {
            run(createdUser);
        } catch (CheckFailed e) {
            System.err.println(NAME + ": FAILED: " + e.getMessage());
            code = 1;
        } catch (SQLException e) {
            System.err.println(NAME + ": FAILED with a server or driver error: " + e
                    + " (error " + e.getErrorCode() + ", SQLSTATE " + e.getSQLState() + ")");
            code = 1;
        }
        cleanup(code != 0, createdUser[0]);
        if (code == 0) {
            System.out.printf("%s: OK (%.1fs)%n", NAME, (System.nanoTime() - started) / 1e9);
        }
        System.exit(code);
    }

    static void run(boolean[] createdUser) throws SQLException {
        step("connect to " + host + ":" + port + " as " + user);
        try (Connection admin = connect(user, password, null)) {
            step("server version");
            try (Statement st = admin.createStatement(); ResultSet rs = st.executeQuery("SELECT VERSION()")) {
                check(rs.next(), "SELECT VERSION() returned no row");
                String version = rs.getString(1);
                check(version != null && !version.isEmpty(), "VERSION() is empty");
                System.out.println(NAME + ": server version " + version + " (metadata: "
                        + admin.getMetaData().getDatabaseProductVersion() + ")");
            }

            step("create database and table");
            try (Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE IF EXISTS " + DB);
                st.execute("CREATE DATABASE " + DB);
            }

            try (Connection conn = connect(user, password, DB)) {
                work(conn);
            }

            step("wrong password");
            createdUser[0] = authCheck(admin);

            step("cleanup");
            try (Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE " + DB);
            }
        }
    }

    static void work(Connection conn) throws SQLException {
        java.sql.DatabaseMetaData dmd = conn.getMetaData();
        int major = dmd.getDatabaseMajorVersion(), minor = dmd.getDatabaseMinorVersion();
        fractionalSeconds = major > 5 || (major == 5 && minor >= 6);
        if (!fractionalSeconds) {
            System.out.println(NAME + ": the server says it is " + major + "." + minor
                    + ": Connector/J will not send fractional seconds");
        }
        try (Statement st = conn.createStatement()) {
            st.execute("CREATE TABLE items ("
                    + " id INT NOT NULL PRIMARY KEY,"
                    + " name VARCHAR(50) NOT NULL,"
                    + " amount DECIMAL(10,2),"
                    + " qty BIGINT UNSIGNED,"
                    + " small SMALLINT,"
                    + " ratio DOUBLE,"
                    + " day DATE,"
                    + " at DATETIME(6),"
                    + " note TEXT,"
                    + " data VARBINARY(16)"
                    + ") ENGINE=NDB");

            step("multi-row INSERT (plain Statement)");
            int n = st.executeUpdate("INSERT INTO items (id, name, amount, qty, small, ratio, day, at, note, data) VALUES"
                    + " (1, 'one', 1.50, 10, -3, 0.5, '2024-02-29', '2024-02-29 13:14:15.123456', 'first', X'00FF'),"
                    + " (2, 'two', -2.25, 18446744073709551615, 32767, -1.25, '1999-12-31', '2000-01-01 00:00:00', NULL, NULL)");
            expect(n, 2, "affected rows of a 2-row INSERT");
        }

        step("server-side prepared INSERT (binary protocol) with every type and NULLs");
        String insert = "INSERT INTO items (id, name, amount, qty, small, ratio, day, at, note, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        try (PreparedStatement ps = conn.prepareStatement(insert)) {
            check(ps.getClass().getName().contains("ServerPrepared"),
                    "the driver did not prepare on the server: " + ps.getClass().getName());
            ps.setInt(1, 3);
            ps.setString(2, "three ✓ 😀");
            ps.setBigDecimal(3, new BigDecimal("12345678.99"));
            ps.setObject(4, new BigInteger("7"));
            ps.setShort(5, (short) -32768);
            ps.setDouble(6, 1e-3);
            ps.setObject(7, LocalDate.of(2024, 1, 2));
            ps.setObject(8, LocalDateTime.of(2024, 1, 2, 3, 4, 5, 600_000_000));
            ps.setString(9, "it's \"quoted\"");
            ps.setBytes(10, new byte[] {1, 2});
            expect(ps.executeUpdate(), 1, "affected rows of a prepared INSERT");

            ps.setInt(1, 4);
            ps.setString(2, "four");
            ps.setNull(3, Types.DECIMAL);
            ps.setNull(4, Types.BIGINT);
            ps.setNull(5, Types.SMALLINT);
            ps.setNull(6, Types.DOUBLE);
            ps.setNull(7, Types.DATE);
            ps.setNull(8, Types.TIMESTAMP);
            ps.setNull(9, Types.VARCHAR);
            ps.setNull(10, Types.VARBINARY);
            ps.executeUpdate();

            ps.setInt(1, 5);
            ps.setString(2, "");
            ps.setBigDecimal(3, new BigDecimal("0.00"));
            ps.setLong(4, 0);
            ps.setInt(5, 0);
            ps.setDouble(6, 0.0);
            ps.setObject(7, LocalDate.of(1000, 1, 1));
            ps.setObject(8, LocalDateTime.of(9999, 12, 31, 23, 59, 59));
            ps.setString(9, "");
            ps.setBytes(10, new byte[0]);
            ps.executeUpdate();
        }

        step("server-side prepared SELECT with parameters: values come back typed");
        String select = "SELECT id, name, amount, qty, small, ratio, day, at, note, data FROM items WHERE id = ?";
        try (PreparedStatement ps = conn.prepareStatement(select)) {
            ps.setInt(1, 1);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "row 1 not found");
                expect(rs.getObject(1), 1, "INT as Integer");
                expect(rs.getObject(2), "one", "VARCHAR as String");
                expect(rs.getObject(3), new BigDecimal("1.50"), "DECIMAL as BigDecimal");
                expect(rs.getObject(4), new BigInteger("10"), "BIGINT UNSIGNED as BigInteger");
                expect(rs.getObject(5), -3, "SMALLINT as Integer");
                expect(rs.getObject(6), 0.5, "DOUBLE as Double");
                expect(rs.getObject(7, LocalDate.class), LocalDate.of(2024, 2, 29), "DATE");
                expect(rs.getObject(8, LocalDateTime.class), LocalDateTime.of(2024, 2, 29, 13, 14, 15, 123_456_000), "DATETIME(6)");
                expect(rs.getString(9), "first", "TEXT");
                check(Arrays.equals(rs.getBytes(10), new byte[] {0, (byte) 0xff}), "VARBINARY: got " + Arrays.toString(rs.getBytes(10)));
                check(!rs.next(), "more than one row for a primary key");

                ResultSetMetaData md = rs.getMetaData();
                expect(md.getColumnCount(), 10, "column count");
                expect(md.getColumnName(3), "amount", "column name");
                expect(md.getColumnTypeName(3), "DECIMAL", "type of DECIMAL(10,2)");
                expect(md.getPrecision(3), 10, "precision of DECIMAL(10,2)");
                expect(md.getScale(3), 2, "scale of DECIMAL(10,2)");
                expect(md.getColumnTypeName(4), "BIGINT UNSIGNED", "type of BIGINT UNSIGNED");
                expect(md.isSigned(4), false, "BIGINT UNSIGNED is not signed");
                expect(md.getColumnTypeName(7), "DATE", "type of DATE");
                expect(md.getColumnTypeName(8), "DATETIME", "type of DATETIME");
                expect(md.isNullable(1), ResultSetMetaData.columnNoNulls, "nullability of the NOT NULL id");
                expect(md.isNullable(3), ResultSetMetaData.columnNullable, "nullability of amount");
            }

            ps.setInt(1, 2);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "row 2 not found");
                expect(rs.getObject(4), new BigInteger("18446744073709551615"), "BIGINT UNSIGNED max");
                expect(rs.getObject(5), 32767, "SMALLINT max");
                expect(rs.getObject(3), new BigDecimal("-2.25"), "negative DECIMAL");
                expect(rs.getObject(9), null, "NULL TEXT");
                check(rs.getBytes(10) == null && rs.wasNull(), "NULL VARBINARY");
            }

            ps.setInt(1, 3);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "row 3 not found");
                expect(rs.getString(2), "three ✓ 😀", "non-ASCII text round trip");
                expect(rs.getBigDecimal(3), new BigDecimal("12345678.99"), "DECIMAL round trip");
                expect(rs.getObject(5), -32768, "SMALLINT min round trip");
                expect(rs.getDouble(6), 1e-3, "DOUBLE round trip");
                expect(rs.getObject(7, LocalDate.class), LocalDate.of(2024, 1, 2), "DATE round trip");
                // Connector/J sends fractional seconds only to servers that say they
                // are MySQL 5.6.4 or later; MariaDB's handshake says 5.5.5-10.11...
                int nanos = fractionalSeconds ? 600_000_000 : 0;
                expect(rs.getObject(8, LocalDateTime.class), LocalDateTime.of(2024, 1, 2, 3, 4, 5, nanos), "DATETIME round trip");
                expect(rs.getString(9), "it's \"quoted\"", "quotes round trip");
                check(Arrays.equals(rs.getBytes(10), new byte[] {1, 2}), "VARBINARY round trip");
            }

            ps.setInt(1, 4);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "row 4 not found");
                for (int i = 3; i <= 10; i++) {
                    expect(rs.getObject(i), null, "NULL in column " + i);
                }
            }

            ps.setInt(1, 5);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "row 5 not found");
                expect(rs.getString(2), "", "empty string");
                expect(rs.getObject(7, LocalDate.class), LocalDate.of(1000, 1, 1), "DATE min");
                expect(rs.getObject(8, LocalDateTime.class), LocalDateTime.of(9999, 12, 31, 23, 59, 59), "DATETIME max");
            }

            ps.setInt(1, 99);
            try (ResultSet rs = ps.executeQuery()) {
                check(!rs.next(), "a row for a missing id");
            }
        }

        try (PreparedStatement ps = conn.prepareStatement("SELECT COUNT(*), SUM(amount) FROM items WHERE id BETWEEN ? AND ?")) {
            ps.setInt(1, 1);
            ps.setInt(2, 5);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "no aggregate row");
                expect(rs.getLong(1), 5L, "COUNT(*)");
                expect(rs.getBigDecimal(2), new BigDecimal("12345678.24"), "SUM(amount)");
            }
        }

        step("update counts (Connector/J sets CLIENT_FOUND_ROWS: rows matched)");
        try (PreparedStatement ps = conn.prepareStatement("UPDATE items SET qty = ? WHERE id IN (?, ?)")) {
            ps.setInt(1, 10);
            ps.setInt(2, 1);
            ps.setInt(3, 3);
            expect(ps.executeUpdate(), 2, "rows matched by a prepared UPDATE");
        }

        step("batch of prepared INSERTs and generated keys");
        try (Statement st = conn.createStatement()) {
            st.execute("CREATE TABLE auto (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=NDB");
        }
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO auto (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
            ps.setInt(1, 1);
            expect(ps.executeUpdate(), 1, "INSERT into auto");
            try (ResultSet keys = ps.getGeneratedKeys()) {
                check(keys.next(), "no generated key");
                expect(keys.getLong(1), 1L, "generated key");
            }
            for (int v = 2; v <= 4; v++) {
                ps.setInt(1, v);
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            expect(Arrays.toString(counts), "[1, 1, 1]", "batch update counts");
        }

        step("transaction with COMMIT");
        try (Connection other = connect(user, password, DB)) {
            conn.setAutoCommit(false);
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)")) {
                ps.setInt(1, 10);
                ps.setString(2, "committed");
                ps.executeUpdate();
            }
            expect(countWhere(other, "id = 10"), 0L, "uncommitted row seen by another connection");
            conn.commit();
            expect(countWhere(other, "id = 10"), 1L, "committed row from another connection");

            step("transaction with ROLLBACK");
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)")) {
                ps.setInt(1, 11);
                ps.setString(2, "rolled back");
                ps.executeUpdate();
            }
            try (Statement st = conn.createStatement()) {
                st.executeUpdate("DELETE FROM items WHERE id = 1");
            }
            expect(countWhere(conn, "id IN (1, 11)"), 1L, "own changes in the transaction");
            conn.rollback();
            conn.setAutoCommit(true);
            expect(countWhere(conn, "id = 11"), 0L, "inserted row after ROLLBACK");
            expect(countWhere(conn, "id = 1"), 1L, "deleted row after ROLLBACK");
        }

        step("duplicate key error, prepared and not");
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)")) {
            ps.setInt(1, 1);
            ps.setString(2, "dup");
            ps.executeUpdate();
            throw new CheckFailed("a duplicate key INSERT succeeded");
        } catch (SQLIntegrityConstraintViolationException e) {
            expect(e.getErrorCode(), 1062, "error code of a duplicate key");
            expect(e.getSQLState(), "23000", "SQLSTATE of a duplicate key");
        }
        try (Statement st = conn.createStatement()) {
            st.executeUpdate("INSERT INTO items (id, name) VALUES (1, 'dup')");
            throw new CheckFailed("a duplicate key INSERT succeeded");
        } catch (SQLIntegrityConstraintViolationException e) {
            expect(e.getErrorCode(), 1062, "error code of a duplicate key");
        }
        expect(countWhere(conn, "id = 1"), 1L, "the connection after an error");

        step("error while preparing");
        try (PreparedStatement ps = conn.prepareStatement("SELECT nope FROM items WHERE id = ?")) {
            ps.setInt(1, 1);
            ps.executeQuery().close();
            throw new CheckFailed("a prepared SELECT of an unknown column succeeded");
        } catch (SQLException e) {
            if (e instanceof SQLIntegrityConstraintViolationException) throw e;
            expect(e.getErrorCode(), 1054, "error code of an unknown column");
        }
        expect(countWhere(conn, "id = 1"), 1L, "the connection after a failed prepare");
    }

    static long countWhere(Connection c, String where) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM items WHERE " + where)) {
            check(rs.next(), "COUNT(*) returned no row");
            return rs.getLong(1);
        }
    }

    static boolean authCheck(Connection admin) throws SQLException {
        String u = System.getenv("SQL_AUTH_USER");
        String p = env("SQL_AUTH_PASSWORD", "");
        boolean created = false;
        if (u == null || u.isEmpty()) {
            try (Statement st = admin.createStatement()) {
                st.execute("DROP USER IF EXISTS '" + SMOKE_USER + "'@'%'");
                st.execute("CREATE USER '" + SMOKE_USER + "'@'%' IDENTIFIED BY '" + SMOKE_PASSWORD + "'");
                created = true;
                try {
                    st.execute("GRANT ALL ON " + DB + ".* TO '" + SMOKE_USER + "'@'%'");
                } catch (SQLException e) {
                    // A server without privileges yet (Shoal: 1235) lets
                    // every user do everything.
                    if (e.getErrorCode() != 1235) {
                        throw e;
                    }
                    System.out.println(NAME + ": note: no GRANT on this server (" + e.getMessage() + ")");
                }
            } catch (SQLException e) {
                System.out.println(NAME + ": SKIP wrong-password check: cannot create a user (" + e.getMessage() + ")");
                return created;
            }
            u = SMOKE_USER;
            p = SMOKE_PASSWORD;
        }
        try (Connection bad = connect(u, p + "-wrong", null)) {
            throw new CheckFailed("a wrong password was accepted");
        } catch (SQLException e) {
            expect(e.getErrorCode(), 1045, "error code of a wrong password (" + e.getMessage() + ")");
            expect(e.getSQLState(), "28000", "SQLSTATE of a wrong password");
        }
        try (Connection good = connect(u, p, null);
                Statement st = good.createStatement();
                ResultSet rs = st.executeQuery("SELECT 1")) {
            check(rs.next() && rs.getInt(1) == 1, "SELECT 1 as the password user");
        }
        return created;
    }

    static void cleanup(boolean dropDb, boolean dropUser) {
        if (!dropDb && !dropUser) return;
        try (Connection c = connect(user, password, null); Statement st = c.createStatement()) {
            if (dropDb) st.execute("DROP DATABASE IF EXISTS " + DB);
            if (dropUser) st.execute("DROP USER IF EXISTS '" + SMOKE_USER + "'@'%'");
        } catch (SQLException e) {
            System.err.println(NAME + ": cleanup failed: " + e);
        }
    }
}
