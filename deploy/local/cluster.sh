#!/usr/bin/env bash
# Local Kafka cluster for the replication tests: three KRaft nodes (each broker and controller),
# all on 127.0.0.1, data under .stack/cluster/kafka-N, one shared set of jars.
#
#   deploy/local/cluster.sh start|stop|status|pid N
#
# Node N (1-3) listens on 127.0.0.1:2N092 (controller 2N093). The nodes start together: a KRaft
# quorum of three answers once two of them are up. `pid N` prints node N's PID (fault tests kill
# it). Kafka's own topics get 3 replicas; topics setup creates get 3 and min.insync.replicas 2
# (sink/topics.ts). CLUSTER_KAFKA_BROKERS is the bootstrap list to give the services.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BASE="${CLUSTER_DIR:-$ROOT/.stack/cluster}"
NODES=(1 2 3)
VOTERS="1@127.0.0.1:21093,2@127.0.0.1:22093,3@127.0.0.1:23093"
CLUSTER_KAFKA_BROKERS="127.0.0.1:21092,127.0.0.1:22092,127.0.0.1:23092"

# node N ACTION: runs kafka.sh ACTION for node N
node() {
  STACK_DIR="$BASE/kafka-$1" KAFKA_BROKERS="127.0.0.1:2${1}092" KAFKA_CONTROLLER_PORT="2${1}093" \
    KAFKA_NODE_ID="$1" KAFKA_QUORUM_VOTERS="$VOTERS" KAFKA_CLUSTER_ID="$(cluster_id)" \
    KAFKA_INTERNAL_REPLICAS=3 KAFKA_LIB="$BASE/lib" KAFKA_HEAP=384m bash "$HERE/kafka.sh" "$2"
}

# The cluster id every node is formatted with, made once (KRaft: 22 base64url characters).
cluster_id() {
  mkdir -p "$BASE"
  if [[ ! -s $BASE/cluster.id ]]; then
    head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22 >"$BASE/cluster.id"
  fi
  cat "$BASE/cluster.id"
}

start() {
  local started=$SECONDS pids=() n rc=0
  STACK_DIR="$BASE/kafka-1" KAFKA_LIB="$BASE/lib" bash "$HERE/kafka.sh" jars
  for n in "${NODES[@]}"; do
    node "$n" start &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  ((rc == 0)) || exit 1
  echo "cluster: 3 Kafka nodes ready in $((SECONDS - started)) s; KAFKA_BROKERS=$CLUSTER_KAFKA_BROKERS"
}

stop() {
  local n
  for n in "${NODES[@]}"; do node "$n" stop || true; done
}

status() {
  local n rc=0
  for n in "${NODES[@]}"; do node "$n" status || rc=1; done
  return "$rc"
}

case "${1:-}" in
  start | stop | status) "$1" ;;
  pid) cat "$BASE/kafka-${2:?node 1-3}/kafka/kafka.pid" ;;
  node) node "${2:?node 1-3}" "${3:?start|stop|status}" ;;
  *)
    echo "usage: $0 start|stop|status|pid N|node N start|stop|status" >&2
    exit 2
    ;;
esac
