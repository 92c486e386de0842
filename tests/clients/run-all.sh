#!/usr/bin/env bash
# Runs every client smoke program against one server and reports which failed:
#
#   tests/clients/run-all.sh HOST PORT USER [PASSWORD]
#
# (or SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD). The programs: PyMySQL (text
# protocol), mysql-connector-python (server-side prepared statements),
# go-sql-driver/mysql (server-side prepared statements), Connector/J
# (useServerPrepStmts=true), and sysbench's OLTP workloads. Install their
# drivers first with scripts/install-sql-tools. A program whose runtime is
# missing (no go, no java) counts as failed, so a CI run cannot pass silently
# without it; SMOKE_SKIP="go java" skips programs by name on purpose.
# Exits 1 if any program failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SQL_HOST=${1:-${SQL_HOST:-127.0.0.1}}
export SQL_PORT=${2:-${SQL_PORT:-3306}}
export SQL_USER=${3:-${SQL_USER:-root}}
export SQL_PASSWORD=${4:-${SQL_PASSWORD:-}}
skip=" ${SMOKE_SKIP:-} "
# Each program gets a time bound, so one hung connection cannot hang the run.
bound=${SMOKE_TIMEOUT:-300}

passed=()
failed=()
skipped=()

run() { # NAME COMMAND...
    local name=$1
    shift
    if [[ "$skip" == *" $name "* ]]; then
        skipped+=("$name")
        echo "=== $name: skipped (SMOKE_SKIP)"
        return
    fi
    echo "=== $name"
    local started=$SECONDS
    if timeout --kill-after=10 "$bound" "$@"; then
        passed+=("$name")
        echo "=== $name: passed ($((SECONDS - started))s)"
    else
        failed+=("$name")
        echo "=== $name: FAILED ($((SECONDS - started))s)"
    fi
}

run python_pymysql python3 "$here/python_pymysql.py" "$SQL_HOST" "$SQL_PORT" "$SQL_USER" "$SQL_PASSWORD"
run python_connector python3 "$here/python_connector.py" "$SQL_HOST" "$SQL_PORT" "$SQL_USER" "$SQL_PASSWORD"
run go "$here/go/run.sh" "$SQL_HOST" "$SQL_PORT" "$SQL_USER" "$SQL_PASSWORD"
run java "$here/java/run.sh" "$SQL_HOST" "$SQL_PORT" "$SQL_USER" "$SQL_PASSWORD"
run sysbench "$here/sysbench.sh" "$SQL_HOST" "$SQL_PORT" "$SQL_USER" "$SQL_PASSWORD"

echo
echo "clients passed: ${passed[*]:-none}"
((${#skipped[@]} > 0)) && echo "clients skipped: ${skipped[*]}"
((${#failed[@]} > 0)) && echo "clients FAILED: ${failed[*]}"
echo "${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
((${#failed[@]} == 0))
