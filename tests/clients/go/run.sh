#!/usr/bin/env bash
# Builds and runs the Go smoke program (go-sql-driver/mysql v1.10.1, pinned in
# go.mod/go.sum; scripts/install-sql-tools downloads it):
#
#   tests/clients/go/run.sh [HOST [PORT [USER [PASSWORD]]]]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v go >/dev/null 2>&1 || {
    echo "go: no 'go' on PATH" >&2
    exit 1
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# -modcacherw: a module cache that 'rm -rf' can remove; -buildvcs=false: the
# work tree's git state is none of this program's business.
(cd "$here" && GOFLAGS="-modcacherw -buildvcs=false" go build -o "$out/smoke-go" .)
"$out/smoke-go" "$@"
