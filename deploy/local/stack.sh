#!/usr/bin/env bash
# Local stack for development and tests: ClickHouse and Kafka, each reused if already
# answering, otherwise started in the background under $STACK_DIR (default <project>/.stack).
#
#   deploy/local/stack.sh start|stop|status
#
# start: starts ClickHouse and Kafka side by side (their lines are prefixed "clickhouse:" and
#        "kafka:"); exits 1 if either failed (the other one is left running: use stop).
# stop:  stops Kafka, then ClickHouse, but only what these scripts started (by pidfile).
# status: status of both; exits 1 unless both answer.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

case "${1:-}" in
  start)
    bash "$HERE/clickhouse.sh" start &
    ch=$!
    bash "$HERE/kafka.sh" start &
    kf=$!
    rc=0
    wait "$ch" || { echo "stack: clickhouse failed to start"; rc=1; }
    wait "$kf" || { echo "stack: kafka failed to start"; rc=1; }
    if ((rc == 0)); then echo "stack: ready"; fi
    exit "$rc"
    ;;
  stop)
    rc=0
    bash "$HERE/kafka.sh" stop || rc=1
    bash "$HERE/clickhouse.sh" stop || rc=1
    exit "$rc"
    ;;
  status)
    rc=0
    bash "$HERE/clickhouse.sh" status || rc=1
    bash "$HERE/kafka.sh" status || rc=1
    exit "$rc"
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
