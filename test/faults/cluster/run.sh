#!/usr/bin/env bash
# `npm run test:cluster`: fault scenarios on the local cluster (deploy/local/cluster.sh: three
# Kafka nodes, ZooKeeper, ClickHouse of two shards of two replicas, all on their own ports with
# data under .stack/cluster), the services in ClickHouse cluster mode (CLICKHOUSE_CLUSTER).
# Stops what it started. Exits with uvu's status.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT" || exit 1

export CLUSTER_DIR="$ROOT/.stack/cluster"
export KAFKA_BROKERS="127.0.0.1:21092,127.0.0.1:22092,127.0.0.1:23092"
export CLICKHOUSE_URL="http://127.0.0.1:21123"
export CLICKHOUSE_CLUSTER=pipeline
export FAULTS_RESULTS="$CLUSTER_DIR/results.jsonl"
mkdir -p "$CLUSTER_DIR"
: >"$FAULTS_RESULTS"

owned=0
down() { if ((owned)); then bash deploy/local/cluster.sh stop >/dev/null || true; fi; }
trap down EXIT

if [[ ! -d dist/test/faults/cluster ]]; then npm run --silent build || exit 1; fi
# The analyst live test below also runs on current ClickHouse (chdb-core).
# shellcheck source=../../support/tools.sh
source "$ROOT/test/support/tools.sh"
install_chdb || exit 1
bash deploy/local/cluster.sh status >/dev/null 2>&1 || owned=1
bash deploy/local/cluster.sh start || exit 1
npx uvu dist/test/faults/cluster '\.test\.js$'
rc=$?
# The live tests of the analyst model (views, users, identities, the queries of docs/QUERIES.md)
# and of the pipeline, again in cluster mode: they read and write the Distributed tables.
npx uvu dist/test/live '(analyst|pipeline)\.test\.js$' || rc=1
echo "cluster: results in $FAULTS_RESULTS"
exit "$rc"
