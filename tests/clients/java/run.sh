#!/usr/bin/env bash
# Runs Smoke.java with the Connector/J jar that scripts/install-sql-tools
# fetched into Maven's local repository:
#
#   tests/clients/java/run.sh [HOST [PORT [USER [PASSWORD]]]]
#
# CONNECTOR_J_JAR=/path/to/mysql-connector-j.jar overrides the jar.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=9.5.0
jar=${CONNECTOR_J_JAR:-${MAVEN_REPO:-$HOME/.m2/repository}/com/mysql/mysql-connector-j/$version/mysql-connector-j-$version.jar}
if [[ ! -f "$jar" ]]; then
    echo "java: no Connector/J jar at $jar; run scripts/install-sql-tools" >&2
    exit 1
fi
command -v java >/dev/null 2>&1 || {
    echo "java: no 'java' on PATH (JDK 17 or later needed)" >&2
    exit 1
}
# -XX:TieredStopAtLevel=1 and a small heap: quicker start on a small machine.
exec java -XX:TieredStopAtLevel=1 -Xmx256m -cp "$jar" "$here/Smoke.java" "$@"
