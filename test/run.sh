#!/usr/bin/env bash
# `npm test`: builds, installs chdb-core if missing, brings up the local stack (reusing servers
# that already answer), runs every uvu test - unit tests, live tests against the real Kafka and
# ClickHouse, and current-ClickHouse checks in chdb - and stops what it started. Exits with the
# test runner's status.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
# shellcheck source=../deploy/local/session.sh
source deploy/local/session.sh
trap stack_down EXIT

npm run --silent build || exit 1
# Current ClickHouse, in-process, for the tests of the current-dialect DDL (PyPI: chdb-core).
if ! python3 -c 'import chdb' 2>/dev/null; then
  echo "test: installing chdb-core (current ClickHouse engine for Python; first run only)..."
  python3 -m pip install --quiet --disable-pip-version-check "chdb-core>=26.9,<27" || exit 1
fi
stack_up || exit 1
npx uvu dist/test '\.test\.js$'
