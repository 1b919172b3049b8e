#!/usr/bin/env bash
# `npm run bench:queries`: builds, makes sure the local ClickHouse answers (starting it if not, and
# stopping then only what it started) and chdb-core is installed, runs the query benchmark
# (QUERY_BENCH_ROWS events, default 20,000,000). Kafka is not needed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
STARTED=""
stop_started() { if [[ -n $STARTED ]]; then bash deploy/local/clickhouse.sh stop || true; fi; }
trap stop_started EXIT
npm run --silent build || exit 1
if ! python3 -c 'import chdb' 2>/dev/null; then
  echo "bench:queries: installing chdb-core (current ClickHouse engine for Python; first run only)..."
  python3 -m pip install --quiet --disable-pip-version-check "chdb-core>=26.9,<27" || exit 1
fi
if ! bash deploy/local/clickhouse.sh status >/dev/null 2>&1; then STARTED=1; fi
bash deploy/local/clickhouse.sh start >/dev/null || exit 1
node dist/test/bench/queries.js
