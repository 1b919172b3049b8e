#!/usr/bin/env bash
# `npm run test:cluster`: fault scenarios on the local replicated Kafka (deploy/local/cluster.sh,
# three nodes) with a ClickHouse of their own (other ports, data under .stack/cluster), so nothing
# else is touched. Stops what it started. Exits with uvu's status.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1

export CLUSTER_DIR="$ROOT/.stack/cluster"
export STACK_DIR="$CLUSTER_DIR"
export KAFKA_BROKERS="127.0.0.1:21092,127.0.0.1:22092,127.0.0.1:23092"
export CLICKHOUSE_URL="http://127.0.0.1:${CLUSTER_CLICKHOUSE_PORT:-28123}"
export CLICKHOUSE_TCP_PORT="${CLUSTER_CLICKHOUSE_TCP_PORT:-29000}"
export FAULTS_RESULTS="$CLUSTER_DIR/results.jsonl"
mkdir -p "$CLUSTER_DIR"
: >"$FAULTS_RESULTS"

owned=""
down() {
  case " $owned " in *" kafka "*) bash deploy/local/cluster.sh stop || true ;; esac
  case " $owned " in *" clickhouse "*) bash deploy/local/clickhouse.sh stop || true ;; esac
}
trap down EXIT

if [[ ! -d dist/test/faults-cluster ]]; then npm run --silent build || exit 1; fi
bash deploy/local/cluster.sh status >/dev/null 2>&1 || owned="$owned kafka"
bash deploy/local/clickhouse.sh status >/dev/null 2>&1 || owned="$owned clickhouse"
started=$SECONDS
bash deploy/local/clickhouse.sh start || exit 1
bash deploy/local/cluster.sh start || exit 1
echo "cluster: servers up in $((SECONDS - started)) s"
npx uvu dist/test/faults-cluster '\.test\.js$'
rc=$?
echo "cluster: results in $FAULTS_RESULTS"
exit "$rc"
