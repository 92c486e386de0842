#!/usr/bin/env bash
# sysbench 1.0 OLTP workloads as a smoke test of a MySQL-protocol server:
# prepare / run / cleanup of oltp_read_write, oltp_point_select, oltp_insert and
# oltp_update_index on small tables, each of which must finish with no error.
#
#   tests/clients/sysbench.sh HOST PORT USER [PASSWORD]
#
# (or SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD). Environment knobs:
#   SYSBENCH_TIME=5 SYSBENCH_THREADS=4 SYSBENCH_TABLES=2 SYSBENCH_TABLE_SIZE=10000
#   SYSBENCH_RW_TABLE_SIZE=100000   table size for oltp_read_write: its
#       transactions lock 4 random rows each (and InnoDB also gaps of the k
#       index), so with 4 threads on small tables deadlocks (1213) are normal
#       on InnoDB: about 17 per 5 s run at 1,000 rows, 1 in several runs at
#       10,000, none seen at 100,000. Those count as errors here.
#   SYSBENCH_NDBCLUSTER=auto|1|0   also run oltp_read_write with
#       --mysql-storage-engine=ndbcluster; 'auto' (the default) runs it unless
#       the server is MariaDB, which has no such engine.
# sysbench uses server-side prepared statements (--db-ps-mode=auto) and no
# TLS (--mysql-ssl=off). Uses its own database, smoke_sysbench, dropped at the
# end. Exits 1 if any step failed or reported an error; the codes of errors
# that sysbench ignored (deadlocks and lock wait timeouts by default) are
# printed (from its --verbosity=5 debug lines).
set -uo pipefail

host=${1:-${SQL_HOST:-127.0.0.1}}
port=${2:-${SQL_PORT:-3306}}
user=${3:-${SQL_USER:-root}}
password=${4:-${SQL_PASSWORD:-}}
time_s=${SYSBENCH_TIME:-5}
threads=${SYSBENCH_THREADS:-4}
tables=${SYSBENCH_TABLES:-2}
table_size=${SYSBENCH_TABLE_SIZE:-10000}
rw_table_size=${SYSBENCH_RW_TABLE_SIZE:-100000}
ndb=${SYSBENCH_NDBCLUSTER:-auto}
db=smoke_sysbench
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

command -v sysbench >/dev/null 2>&1 || {
    echo "sysbench: not installed; run scripts/install-sql-tools" >&2
    exit 1
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One SQL statement through PyMySQL (installed with the other tools).
sql() {
    SQL_HOST=$host SQL_PORT=$port SQL_USER=$user SQL_PASSWORD=$password python3 - "$1" <<'PY'
import os, sys
import pymysql
conn = pymysql.connect(host=os.environ["SQL_HOST"], port=int(os.environ["SQL_PORT"]),
                       user=os.environ["SQL_USER"], password=os.environ["SQL_PASSWORD"],
                       connect_timeout=10, read_timeout=60, write_timeout=60, autocommit=True)
with conn.cursor() as cur:
    cur.execute(sys.argv[1])
    if cur.description:
        for row in cur.fetchall():
            print("\t".join("NULL" if v is None else str(v) for v in row))
conn.close()
PY
}

common=(
    --db-driver=mysql
    --mysql-host="$host" --mysql-port="$port" --mysql-user="$user" --mysql-password="$password"
    --mysql-db="$db" --mysql-ssl=off
    --tables="$tables"
)

failures=()
passes=0

# run_step NAME LOGFILE ARGS... : runs sysbench with a time bound, checks its
# exit code, FATAL lines, and for 'run' the error counters.
run_step() {
    local name=$1 log=$2
    shift 2
    local bound=$((time_s * 4 + 120))
    timeout --kill-after=10 "$bound" sysbench "$@" >"$log" 2>&1
    local rc=$?
    local problem=""
    if ((rc != 0)); then
        problem="exit code $rc"
    elif grep -q -E 'FATAL|ALERT' "$log"; then
        problem="FATAL in the output"
    elif [[ " $* " == *" run "* ]]; then
        local ignored reconnects transactions
        ignored=$(sed -n -E 's/^ *ignored errors: *([0-9]+).*/\1/p' "$log")
        reconnects=$(sed -n -E 's/^ *reconnects: *([0-9]+).*/\1/p' "$log")
        transactions=$(sed -n -E 's/^ *transactions: *([0-9]+).*/\1/p' "$log")
        if [[ -z "$ignored" || -z "$transactions" ]]; then
            problem="no statistics in the output"
        elif ((ignored != 0)); then
            local codes
            codes=$(sed -n -E 's/.*Ignoring error ([0-9]+).*/\1/p' "$log" | sort -u | paste -sd, -)
            problem="ignored errors: $ignored (error codes seen: ${codes:-unknown})"
        elif [[ -n "$reconnects" ]] && ((reconnects != 0)); then
            problem="reconnects: $reconnects"
        elif ((transactions == 0)); then
            problem="no transaction finished"
        fi
        local tps
        tps=$(sed -n -E 's/^ *transactions: *[0-9]+ *\(([0-9.]+) per sec.*/\1/p' "$log")
        [[ -z "$problem" ]] && echo "sysbench: $name: ok, $transactions transactions ($tps/s), 0 errors"
    fi
    if [[ -n "$problem" ]]; then
        echo "sysbench: $name: FAILED ($problem); its output:" >&2
        tail -30 "$log" | sed 's/^/    /' >&2
        failures+=("$name")
        return 1
    fi
    passes=$((passes + 1))
    return 0
}

workload() { # TEST [extra sysbench options...]
    local test=$1
    shift
    local label=$test arg
    for arg in "$@"; do
        [[ "$arg" == --table-size=* ]] || label+=" $arg"
    done
    sysbench "$test" "${common[@]}" "$@" cleanup >/dev/null 2>&1 || true
    if run_step "$label prepare" "$logs/$test.prepare" "$test" "${common[@]}" "$@" --threads=1 prepare; then
        run_step "$label run" "$logs/$test.run" "$test" "${common[@]}" "$@" \
            --threads="$threads" --time="$time_s" --events=0 --report-interval=0 --verbosity=5 run
    fi
    run_step "$label cleanup" "$logs/$test.cleanup" "$test" "${common[@]}" "$@" cleanup >/dev/null
}

version=$(sql "SELECT VERSION()") || {
    echo "sysbench: cannot connect to $host:$port as $user" >&2
    exit 1
}
echo "sysbench: server $host:$port: $version; $tables tables x $table_size rows ($rw_table_size for oltp_read_write), $threads threads, ${time_s}s runs"
sql "DROP DATABASE IF EXISTS $db" && sql "CREATE DATABASE $db" || {
    echo "sysbench: cannot create database $db" >&2
    exit 1
}

workload oltp_read_write --table-size="$rw_table_size"
for test in oltp_point_select oltp_insert oltp_update_index; do
    workload "$test" --table-size="$table_size"
done

case "$ndb" in
1 | yes | true) run_ndb=1 ;;
0 | no | false) run_ndb=0 ;;
*) if [[ "$version" == *MariaDB* ]]; then run_ndb=0; else run_ndb=1; fi ;;
esac
if ((run_ndb)); then
    workload oltp_read_write --table-size="$rw_table_size" --mysql-storage-engine=ndbcluster
else
    echo "sysbench: oltp_read_write --mysql-storage-engine=ndbcluster: skipped (MariaDB has no ndbcluster engine; SYSBENCH_NDBCLUSTER=1 forces it)"
fi

sql "DROP DATABASE IF EXISTS $db" >/dev/null || echo "sysbench: could not drop $db" >&2

if ((${#failures[@]} > 0)); then
    echo "sysbench: FAILED: ${failures[*]}" >&2
    echo "sysbench: $passes passed, ${#failures[@]} failed"
    exit 1
fi
echo "sysbench: $passes passed, 0 failed"
