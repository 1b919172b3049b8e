#!/usr/bin/env bash
# `npm run test:faults`: the fault scenarios and the API fuzz run, on a Kafka and a ClickHouse
# of their own (other ports, data under .stack/faults), so stopping servers mid-test touches
# nothing else. Installs schemathesis if missing; stops what it started. Exits with uvu's status.
#   FAULTS_DIST    the build tree to run (default dist, built if missing; another tree, such as one
#                  from `npx tspc -p . --outDir dist-faults`, must be built first)
#   FAULTS_FILES   uvu's pattern of the test files to run (default every *.test.js but alerts.test.js,
#                  which `npm run test:alerts` runs, and deliver-isolation.test.js, over 3 minutes,
#                  which `npm run test:deliver-isolation` runs; one file: '^privacy\.test\.js$')
#   FAULTS_STACK_DIR, FAULTS_*_PORT   where the servers keep their data, and their ports
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT" || exit 1

DIST="${FAULTS_DIST:-dist}"
export STACK_DIR="${FAULTS_STACK_DIR:-$ROOT/.stack/faults}"
export KAFKA_BROKERS="127.0.0.1:${FAULTS_KAFKA_PORT:-19092}"
export KAFKA_CONTROLLER_PORT="${FAULTS_KAFKA_CONTROLLER_PORT:-19093}"
export CLICKHOUSE_URL="http://127.0.0.1:${FAULTS_CLICKHOUSE_PORT:-18123}"
export CLICKHOUSE_TCP_PORT="${FAULTS_CLICKHOUSE_TCP_PORT:-19000}"
export FAULTS_RESULTS="$STACK_DIR/results.jsonl"
mkdir -p "$STACK_DIR"
: >"$FAULTS_RESULTS"

# shellcheck source=../../../deploy/local/session.sh
source deploy/local/session.sh
trap stack_down EXIT

if [[ ! -d $DIST/test/faults/node ]]; then
  if [[ $DIST != dist ]]; then
    echo "faults: $DIST/test/faults/node is missing: build that tree first"
    exit 1
  fi
  npm run --silent build || exit 1
fi
if ! python3 -c 'import schemathesis' 2>/dev/null; then
  echo "faults: installing schemathesis (API fuzzer, PyPI; first run only)..."
  python3 -m pip install --quiet --disable-pip-version-check "schemathesis>=3.39,<5" || exit 1
fi
# shellcheck source=../../support/tools.sh
source test/support/tools.sh
install_prometheus || exit 1
# The scenarios stop and start these servers through this tree's scripts, which stop only what
# they started: a server left on the faults ports by another checkout or run would stay up.
for svc in clickhouse kafka; do
  if status="$(bash "deploy/local/$svc.sh" status 2>&1)" && ! grep -q ": started by us" <<<"$status"; then
    echo "faults: a $svc this checkout did not start answers on the faults ports ($CLICKHOUSE_URL, $KAFKA_BROKERS); the scenarios need their own: stop it first"
    exit 1
  fi
done
stack_up || exit 1
started=$SECONDS
npx uvu "$DIST/test/faults/node" "${FAULTS_FILES:-^(?!alerts\.|deliver-isolation\.)[\w-]+\.test\.js$}"
rc=$?
echo "faults: $((SECONDS - started)) s; results in $FAULTS_RESULTS"
exit "$rc"
