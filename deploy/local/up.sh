#!/usr/bin/env bash
# `npm start`: the whole pipeline on this machine. Installs dependencies if missing, builds,
# starts ClickHouse and Kafka (or reuses ones that answer), creates topics and tables, runs the
# sink and the ingest, and prints one ready line. Ctrl-C or SIGTERM stops the ingest (drains
# requests, flushes the producer), then the sink (commits its batches), then what it started
# of the stack. If any step fails it stops what it started and exits non-zero.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=session.sh
source deploy/local/session.sh

if [[ -z ${WRITE_KEYS:-} ]]; then
  export WRITE_KEYS="dev-key=dev"
  echo "start: WRITE_KEYS is not set; using the local key 'dev-key' for workspace 'dev'"
fi
# The admin port (/metrics, the live view) listens on 127.0.0.1 whatever INGEST_HOST says; only
# INGEST_METRICS_HOST moves it. The published development token is used on loopback only: the
# ingest refuses it beyond (ingest/config.ts), so there a random token is made and printed.
METRICS_HOST="${INGEST_METRICS_HOST:-127.0.0.1}"
if [[ -z ${ADMIN_TOKEN:-} ]]; then
  case "$METRICS_HOST" in
    127.* | localhost | ::1)
      export ADMIN_TOKEN="dev-admin-token-change-me"
      echo "start: ADMIN_TOKEN is not set; the live view takes the local token '$ADMIN_TOKEN'"
      ;;
    *)
      ADMIN_TOKEN="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
      export ADMIN_TOKEN
      echo "start: ADMIN_TOKEN is not set and the admin port listens on $METRICS_HOST; the live view takes this run's token '$ADMIN_TOKEN'"
      ;;
  esac
fi
if [[ -z ${DESTINATIONS_SECRET_KEY:-} ]]; then
  export DESTINATIONS_SECRET_KEY="dev-destinations-secret-key-change-me"
  echo "start: DESTINATIONS_SECRET_KEY is not set; destinations' secrets are sealed with a local key"
fi
INGEST_HOST="${INGEST_HOST:-127.0.0.1}"
INGEST_PORT="${INGEST_PORT:-3000}"
INGEST_METRICS_PORT="${INGEST_METRICS_PORT:-3002}"
export INGEST_HOST INGEST_PORT INGEST_METRICS_PORT

INGEST_PID=""
SINK_PID=""
DELIVER_PID=""
stop_all() {
  trap - EXIT INT TERM
  echo "start: stopping"
  if [[ -n $INGEST_PID ]]; then kill -TERM "$INGEST_PID" 2>/dev/null || true; wait "$INGEST_PID" 2>/dev/null || true; fi
  if [[ -n $SINK_PID ]]; then kill -TERM "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true; fi
  if [[ -n $DELIVER_PID ]]; then kill -TERM "$DELIVER_PID" 2>/dev/null || true; wait "$DELIVER_PID" 2>/dev/null || true; fi
  stack_down
  echo "start: stopped"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

if [[ ! -d node_modules ]]; then
  echo "start: installing npm dependencies (npm ci)..."
  npm ci --no-audit --no-fund
fi
echo "start: building (tsc with the typia transform)..."
npm run --silent build
echo "start: starting ClickHouse and Kafka..."
stack_up
echo "start: creating topics and applying ClickHouse migrations..."
node dist/deploy/setup/main.js
node dist/sink/main.js &
SINK_PID=$!
node dist/sink/deliver/main.js &
DELIVER_PID=$!
node dist/deploy/cli.js ingest &
INGEST_PID=$!

BASE="http://$INGEST_HOST:$INGEST_PORT"
for _ in $(seq 1 300); do
  if curl -fsS "$BASE/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$INGEST_PID" 2>/dev/null || ! kill -0 "$SINK_PID" 2>/dev/null || ! kill -0 "$DELIVER_PID" 2>/dev/null; then
    echo "start: a service exited during start-up" >&2
    exit 1
  fi
  sleep 0.1
done
curl -fsS "$BASE/readyz" >/dev/null || { echo "start: ingest not ready after 30 s" >&2; exit 1; }

FIRST="${WRITE_KEYS%%,*}"
KEY="${FIRST%=*}"
echo "start: live events on http://$METRICS_HOST:$INGEST_METRICS_PORT/live (workspace ${FIRST##*=}, the token in ADMIN_TOKEN)"
echo "start: admin pages on http://$METRICS_HOST:$INGEST_METRICS_PORT/admin, the API's document at /admin/v1/openapi.json (the token in ADMIN_TOKEN; docs/ADMIN.md)"
echo "start: webhook destinations: node dist/deploy/cli.js destinations add ${FIRST##*=} webhook <url> (docs/DESTINATIONS.md)"
echo "ready: ingest on $BASE, sink writing to ${CLICKHOUSE_DATABASE:-default}.${CLICKHOUSE_TABLE:-events} - try: curl -i $BASE/api/public/apps/identify -u '$KEY:' -H 'Content-Type: application/json' -d '{\"messageId\":\"m-1\",\"userId\":\"u-1\",\"traits\":{\"plan\":\"pro\"}}'"

# Run until a signal, or until any service exits by itself (then stop the rest).
set +e
wait -n "$INGEST_PID" "$SINK_PID" "$DELIVER_PID"
rc=$?
echo "start: a service exited with code $rc" >&2
exit "$rc"
