// Smoke test of a MySQL-protocol server through go-sql-driver/mysql, with
// server-side prepared statements (interpolateParams=false: every query with
// arguments is COM_STMT_PREPARE + COM_STMT_EXECUTE, the binary protocol).
//
//	cd tests/clients/go && go run . [HOST [PORT [USER [PASSWORD]]]]
//
// or with SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD in the environment
// (defaults 127.0.0.1, 3306, root, no password). Uses its own database
// (smoke_go), which it drops at the end. Exits 0 when every check passed, 1
// with a message naming the first failed check otherwise.
//
// The wrong-password check creates 'smoke_go'@'%' and drops it at the end; if
// the server cannot create users the check is skipped with a message (set
// SQL_AUTH_USER and SQL_AUTH_PASSWORD to use an existing user instead).
package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

const (
	name          = "go"
	dbName        = "smoke_go"
	smokeUser     = "smoke_go"
	smokePassword = "pw-Smoke-3"
)

type settings struct {
	host, port, user, password string
}

func getSettings() settings {
	s := settings{
		host:     envOr("SQL_HOST", "127.0.0.1"),
		port:     envOr("SQL_PORT", "3306"),
		user:     envOr("SQL_USER", "root"),
		password: os.Getenv("SQL_PASSWORD"),
	}
	args := os.Args[1:]
	if len(args) > 0 {
		s.host = args[0]
	}
	if len(args) > 1 {
		s.port = args[1]
	}
	if len(args) > 2 {
		s.user = args[2]
	}
	if len(args) > 3 {
		s.password = args[3]
	}
	return s
}

func envOr(key, fallback string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return fallback
}

func dsn(s settings, user, password, database string) string {
	cfg := mysql.NewConfig()
	cfg.User = user
	cfg.Passwd = password
	cfg.Net = "tcp"
	cfg.Addr = s.host + ":" + s.port
	cfg.DBName = database
	cfg.Timeout = 10 * time.Second
	cfg.ReadTimeout = 30 * time.Second
	cfg.WriteTimeout = 30 * time.Second
	cfg.InterpolateParams = false // server-side prepared statements
	cfg.ParseTime = true          // DATE/DATETIME as time.Time
	cfg.Loc = time.UTC
	cfg.TLSConfig = "false" // the test servers have no certificates
	return cfg.FormatDSN()
}

type failure struct{ msg string }

func fail(format string, args ...any) {
	panic(failure{fmt.Sprintf(format, args...)})
}

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func step(what string) {
	fmt.Printf("%s: %s\n", name, what)
}

func expect[T comparable](got, want T, what string) {
	if got != want {
		fail("%s: got %#v, want %#v", what, got, want)
	}
}

func main() {
	s := getSettings()
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	createdUser := false
	code := 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				f, ok := r.(failure)
				if !ok {
					panic(r)
				}
				fmt.Fprintf(os.Stderr, "%s: FAILED: %s\n", name, f.msg)
				code = 1
			}
		}()
		createdUser = run(ctx, s)
	}()
	cleanup(s, code != 0, createdUser)
	if code == 0 {
		fmt.Printf("%s: OK (%.1fs)\n", name, time.Since(started).Seconds())
	}
	os.Exit(code)
}

func run(ctx context.Context, s settings) (createdUser bool) {
	step(fmt.Sprintf("connect to %s:%s as %s", s.host, s.port, s.user))
	admin, err := sql.Open("mysql", dsn(s, s.user, s.password, ""))
	must(err, "open")
	defer admin.Close()
	must(admin.PingContext(ctx), "connect")

	step("server version")
	var version string
	must(admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version), "SELECT VERSION()")
	if version == "" {
		fail("VERSION() is empty")
	}
	fmt.Printf("%s: server version %s\n", name, version)

	step("create database and table")
	_, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbName)
	must(err, "DROP DATABASE")
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+dbName)
	must(err, "CREATE DATABASE")

	db, err := sql.Open("mysql", dsn(s, s.user, s.password, dbName))
	must(err, "open the test database")
	defer db.Close()
	db.SetMaxOpenConns(4)
	_, err = db.ExecContext(ctx, `CREATE TABLE items (
		id INT NOT NULL PRIMARY KEY,
		name VARCHAR(50) NOT NULL,
		amount DECIMAL(10,2),
		qty BIGINT UNSIGNED,
		small SMALLINT,
		ratio DOUBLE,
		day DATE,
		at DATETIME(6),
		note TEXT,
		data VARBINARY(16)
	) ENGINE=NDB`)
	must(err, "CREATE TABLE")

	step("multi-row INSERT (text protocol: no arguments)")
	res, err := db.ExecContext(ctx, `INSERT INTO items (id, name, amount, qty, small, ratio, day, at, note, data) VALUES
		(1, 'one', 1.50, 10, -3, 0.5, '2024-02-29', '2024-02-29 13:14:15.123456', 'first', X'00FF'),
		(2, 'two', -2.25, 18446744073709551615, 32767, -1.25, '1999-12-31', '2000-01-01 00:00:00', NULL, NULL)`)
	must(err, "multi-row INSERT")
	n, err := res.RowsAffected()
	must(err, "RowsAffected")
	expect(n, int64(2), "affected rows of a 2-row INSERT")

	step("prepared INSERT (binary protocol) with every type and NULLs")
	ins, err := db.PrepareContext(ctx, "INSERT INTO items (id, name, amount, qty, small, ratio, day, at, note, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	must(err, "prepare INSERT")
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	at := time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC)
	_, err = ins.ExecContext(ctx, 3, "three ✓ 😀", "12345678.99", uint64(7), -32768, 1e-3, day, at, `it's "quoted"`, []byte{1, 2})
	must(err, "prepared INSERT of row 3")
	_, err = ins.ExecContext(ctx, 4, "four", nil, nil, nil, nil, nil, nil, nil, nil)
	must(err, "prepared INSERT of NULLs")
	_, err = ins.ExecContext(ctx, 5, "", "0.00", uint64(0), 0, 0.0, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "", []byte{})
	must(err, "prepared INSERT of edge values")
	must(ins.Close(), "close prepared INSERT")

	step("prepared SELECT with arguments: values come back typed")
	type row struct {
		id     int64
		name   string
		amount sql.NullString
		qty    sql.Null[uint64]
		small  sql.NullInt64
		ratio  sql.NullFloat64
		day    sql.NullTime
		at     sql.NullTime
		note   sql.NullString
		data   []byte
	}
	get := func(id int) row {
		var r row
		err := db.QueryRowContext(ctx, "SELECT id, name, amount, qty, small, ratio, day, at, note, data FROM items WHERE id = ?", id).
			Scan(&r.id, &r.name, &r.amount, &r.qty, &r.small, &r.ratio, &r.day, &r.at, &r.note, &r.data)
		must(err, fmt.Sprintf("prepared SELECT of row %d", id))
		return r
	}
	r := get(1)
	expect(r.id, int64(1), "INT")
	expect(r.name, "one", "VARCHAR")
	expect(r.amount, sql.NullString{String: "1.50", Valid: true}, "DECIMAL (as text, all digits of the scale)")
	expect(r.qty, sql.Null[uint64]{V: 10, Valid: true}, "BIGINT UNSIGNED")
	expect(r.small, sql.NullInt64{Int64: -3, Valid: true}, "SMALLINT")
	expect(r.ratio, sql.NullFloat64{Float64: 0.5, Valid: true}, "DOUBLE")
	expect(r.day.Time, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "DATE")
	expect(r.at.Time, time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC), "DATETIME(6)")
	expect(r.note, sql.NullString{String: "first", Valid: true}, "TEXT")
	if !bytes.Equal(r.data, []byte{0, 0xff}) {
		fail("VARBINARY: got %x", r.data)
	}

	r = get(2)
	expect(r.qty.V, uint64(18446744073709551615), "BIGINT UNSIGNED max")
	expect(r.small.Int64, int64(32767), "SMALLINT max")
	expect(r.amount.String, "-2.25", "negative DECIMAL")
	expect(r.note.Valid, false, "NULL TEXT")
	if r.data != nil {
		fail("NULL VARBINARY: got %x", r.data)
	}

	r = get(3)
	expect(r.name, "three ✓ 😀", "non-ASCII text round trip")
	expect(r.amount.String, "12345678.99", "DECIMAL round trip")
	expect(r.small.Int64, int64(-32768), "SMALLINT min round trip")
	expect(r.ratio.Float64, 1e-3, "DOUBLE round trip")
	expect(r.day.Time, day, "DATE round trip")
	expect(r.at.Time, at, "DATETIME round trip")
	expect(r.note.String, `it's "quoted"`, "quotes round trip")
	if !bytes.Equal(r.data, []byte{1, 2}) {
		fail("VARBINARY round trip: got %x", r.data)
	}

	r = get(4)
	if r.amount.Valid || r.qty.Valid || r.small.Valid || r.ratio.Valid || r.day.Valid || r.at.Valid || r.note.Valid || r.data != nil {
		fail("all-NULL row: got %+v", r)
	}

	r = get(5)
	expect(r.name, "", "empty string")
	expect(r.day.Time, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), "DATE min")
	expect(r.at.Time, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "DATETIME max")

	// a prepared statement executed several times, returning several rows
	sel, err := db.PrepareContext(ctx, "SELECT id, name FROM items WHERE id BETWEEN ? AND ? ORDER BY id")
	must(err, "prepare SELECT")
	for _, tc := range []struct {
		lo, hi int
		want   string
	}{{1, 2, "1:one,2:two,"}, {3, 10, "3:three ✓ 😀,4:four,5:,"}, {50, 60, ""}} {
		rows, err := sel.QueryContext(ctx, tc.lo, tc.hi)
		must(err, "prepared SELECT")
		got := ""
		for rows.Next() {
			var id int
			var nm string
			must(rows.Scan(&id, &nm), "scan")
			got += strconv.Itoa(id) + ":" + nm + ","
		}
		must(rows.Err(), "rows")
		rows.Close()
		expect(got, tc.want, fmt.Sprintf("rows %d..%d", tc.lo, tc.hi))
	}
	must(sel.Close(), "close prepared SELECT")

	var count int64
	var sum string
	must(db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(amount) FROM items WHERE id BETWEEN ? AND ?", 1, 5).Scan(&count, &sum), "COUNT and SUM")
	expect(count, int64(5), "COUNT(*)")
	expect(sum, "12345678.24", "SUM(amount)")

	res, err = db.ExecContext(ctx, "UPDATE items SET qty = ? WHERE id IN (?, ?)", 10, 1, 3)
	must(err, "prepared UPDATE")
	n, _ = res.RowsAffected()
	expect(n, int64(1), "rows changed by a prepared UPDATE (no CLIENT_FOUND_ROWS)")

	step("LAST_INSERT_ID through the OK packet")
	_, err = db.ExecContext(ctx, "CREATE TABLE auto (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=NDB")
	must(err, "CREATE TABLE auto")
	res, err = db.ExecContext(ctx, "INSERT INTO auto (v) VALUES (?), (?)", 1, 2)
	must(err, "INSERT into auto")
	last, err := res.LastInsertId()
	must(err, "LastInsertId")
	expect(last, int64(1), "LastInsertId of a 2-row INSERT")

	step("transaction with COMMIT")
	tx, err := db.BeginTx(ctx, nil)
	must(err, "BEGIN")
	_, err = tx.ExecContext(ctx, "INSERT INTO items (id, name) VALUES (?, ?)", 10, "committed")
	must(err, "INSERT in a transaction")
	must(db.QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE id = ?", 10).Scan(&count), "read from another connection")
	expect(count, int64(0), "uncommitted row seen by another connection")
	must(tx.Commit(), "COMMIT")
	var got string
	must(db.QueryRowContext(ctx, "SELECT name FROM items WHERE id = ?", 10).Scan(&got), "read after COMMIT")
	expect(got, "committed", "committed row")

	step("transaction with ROLLBACK")
	tx, err = db.BeginTx(ctx, nil)
	must(err, "BEGIN")
	_, err = tx.ExecContext(ctx, "INSERT INTO items (id, name) VALUES (?, ?)", 11, "rolled back")
	must(err, "INSERT in a transaction")
	_, err = tx.ExecContext(ctx, "DELETE FROM items WHERE id = ?", 1)
	must(err, "DELETE in a transaction")
	must(tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE id IN (1, 11)").Scan(&count), "read in the transaction")
	expect(count, int64(1), "own changes in the transaction")
	must(tx.Rollback(), "ROLLBACK")
	must(db.QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE id = 11").Scan(&count), "read after ROLLBACK")
	expect(count, int64(0), "inserted row after ROLLBACK")
	must(db.QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE id = 1").Scan(&count), "read after ROLLBACK")
	expect(count, int64(1), "deleted row after ROLLBACK")

	step("duplicate key error, prepared and not")
	for _, q := range []struct {
		sql  string
		args []any
	}{{"INSERT INTO items (id, name) VALUES (?, ?)", []any{1, "dup"}}, {"INSERT INTO items (id, name) VALUES (1, 'dup')", nil}} {
		_, err = db.ExecContext(ctx, q.sql, q.args...)
		var me *mysql.MySQLError
		if !errors.As(err, &me) {
			fail("a duplicate key INSERT gave %v, not a *mysql.MySQLError", err)
		}
		expect(me.Number, uint16(1062), "error number of a duplicate key")
		expect(string(me.SQLState[:]), "23000", "SQLSTATE of a duplicate key")
	}
	var one int
	must(db.QueryRowContext(ctx, "SELECT ?", 1).Scan(&one), "the connection after an error")
	expect(one, 1, "SELECT ? after an error")

	step("error while preparing")
	_, err = db.ExecContext(ctx, "UPDATE items SET nope = ? WHERE id = ?", 1, 1)
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		fail("a prepared UPDATE of an unknown column gave %v", err)
	}
	expect(me.Number, uint16(1054), "error number of an unknown column")

	step("wrong password")
	createdUser = authCheck(ctx, s, admin)

	step("cleanup")
	_, err = admin.ExecContext(ctx, "DROP DATABASE "+dbName)
	must(err, "DROP DATABASE")
	return createdUser
}

func authCheck(ctx context.Context, s settings, admin *sql.DB) (created bool) {
	user, password := os.Getenv("SQL_AUTH_USER"), os.Getenv("SQL_AUTH_PASSWORD")
	if user == "" {
		for _, q := range []string{
			"DROP USER IF EXISTS '" + smokeUser + "'@'%'",
			"CREATE USER '" + smokeUser + "'@'%' IDENTIFIED BY '" + smokePassword + "'",
			"GRANT ALL ON " + dbName + ".* TO '" + smokeUser + "'@'%'",
		} {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				// A server without privileges yet (Shoal: 1235) lets every
				// user do everything: its GRANT is not needed.
				var notYet *mysql.MySQLError
				if strings.HasPrefix(q, "GRANT") && errors.As(err, &notYet) && notYet.Number == 1235 {
					fmt.Printf("%s: note: no GRANT on this server (%v)\n", name, err)
					continue
				}
				fmt.Printf("%s: SKIP wrong-password check: cannot create a user (%v)\n", name, err)
				return created
			}
			created = true
		}
		user, password = smokeUser, smokePassword
	}
	bad, err := sql.Open("mysql", dsn(s, user, password+"-wrong", ""))
	must(err, "open with a wrong password")
	err = bad.PingContext(ctx)
	bad.Close()
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		fail("a wrong password gave %v, not a *mysql.MySQLError", err)
	}
	expect(me.Number, uint16(1045), "error number of a wrong password")
	good, err := sql.Open("mysql", dsn(s, user, password, ""))
	must(err, "open with the right password")
	defer good.Close()
	var one int
	must(good.QueryRowContext(ctx, "SELECT 1").Scan(&one), "query as the password user")
	return created
}

func cleanup(s settings, dropDB, dropUser bool) {
	if !dropDB && !dropUser {
		return
	}
	db, err := sql.Open("mysql", dsn(s, s.user, s.password, ""))
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if dropDB {
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbName); err != nil {
			fmt.Fprintf(os.Stderr, "%s: cleanup: %v\n", name, err)
		}
	}
	if dropUser {
		if _, err := db.ExecContext(ctx, "DROP USER IF EXISTS '"+smokeUser+"'@'%'"); err != nil {
			fmt.Fprintf(os.Stderr, "%s: cleanup: %v\n", name, err)
		}
	}
}
