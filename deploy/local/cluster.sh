#!/usr/bin/env bash
# Local cluster for the replication tests, all on 127.0.0.1 with data under .stack/cluster:
# three KRaft Kafka nodes, one ZooKeeper, and ClickHouse with two shards of two replicas
# (cluster `pipeline`, coordinated by the ZooKeeper). 18.16's ON CLUSTER queue can stop on a
# replica after an ALTER of a Replicated table (docs/CLUSTER.md).
#
#   deploy/local/cluster.sh start|stop|status|pid N
#   deploy/local/cluster.sh node N start|stop|status          (Kafka node N, 1-3)
#   deploy/local/cluster.sh clickhouse N start|stop|status    (ClickHouse node N, 1-4)
#
# Kafka node N listens on 127.0.0.1:2N092 (controller 2N093); the nodes start together (a KRaft
# quorum of three answers once two are up). `pid N` prints Kafka node N's PID (fault tests kill
# it). ClickHouse node N is shard (N+1)/2, replica 2-N%2: HTTP 2N123, TCP 2N900, interserver
# 2N909 (every port below 32768, outside Linux's ephemeral range, so a client socket cannot hold a
# stopped node's port), macros {shard} and {replica}; ZooKeeper on 22181. CLUSTER_KAFKA_BROKERS and
# CLUSTER_CLICKHOUSE_URL are what to give the services, with CLICKHOUSE_CLUSTER=pipeline.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BASE="${CLUSTER_DIR:-$ROOT/.stack/cluster}"
NODES=(1 2 3)
CH_NODES=(1 2 3 4)
VOTERS="1@127.0.0.1:21093,2@127.0.0.1:22093,3@127.0.0.1:23093"
CLUSTER_KAFKA_BROKERS="127.0.0.1:21092,127.0.0.1:22092,127.0.0.1:23092"
CLUSTER_CLICKHOUSE_URL="http://127.0.0.1:21123"
CLUSTER_NAME=pipeline
ZOOKEEPER_PORT=22181

# node N ACTION: runs kafka.sh ACTION for Kafka node N
node() {
  STACK_DIR="$BASE/kafka-$1" KAFKA_BROKERS="127.0.0.1:2${1}092" KAFKA_CONTROLLER_PORT="2${1}093" \
    KAFKA_NODE_ID="$1" KAFKA_QUORUM_VOTERS="$VOTERS" KAFKA_CLUSTER_ID="$(cluster_id)" \
    KAFKA_INTERNAL_REPLICAS=3 KAFKA_LIB="$BASE/lib" KAFKA_HEAP=384m bash "$HERE/kafka.sh" "$2"
}

# clickhouse N ACTION: runs clickhouse.sh ACTION for ClickHouse node N, with its cluster config
clickhouse() {
  local n=$1
  if [[ $2 == start ]]; then cluster_config "$n"; fi
  STACK_DIR="$BASE/clickhouse-$n" CLICKHOUSE_URL="http://127.0.0.1:2${n}123" CLICKHOUSE_TCP_PORT="2${n}900" \
    bash "$HERE/clickhouse.sh" "$2"
}

zookeeper() { STACK_DIR="$BASE" ZOOKEEPER_PORT=$ZOOKEEPER_PORT bash "$HERE/zookeeper.sh" "$1"; }

# The config.d file of ClickHouse node N (clickhouse.sh writes config.xml; the server merges config.d).
cluster_config() {
  local n=$1 dir="$BASE/clickhouse-$1/clickhouse/config.d" shard replica s r
  shard=$(((n + 1) / 2))
  replica=$((2 - n % 2))
  mkdir -p "$dir"
  {
    echo '<?xml version="1.0"?>'
    echo '<!-- Written by deploy/local/cluster.sh on every start: edit the script, not this file. -->'
    echo '<yandex>'
    echo '    <interserver_http_host>127.0.0.1</interserver_http_host>'
    echo "    <interserver_http_port>2${n}909</interserver_http_port>"
    echo "    <macros><shard>$shard</shard><replica>ch-$shard-$replica</replica></macros>"
    echo "    <zookeeper><node><host>127.0.0.1</host><port>$ZOOKEEPER_PORT</port></node></zookeeper>"
    echo '    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>'
    echo "    <remote_servers><$CLUSTER_NAME>"
    for s in 1 2; do
      echo '        <shard><internal_replication>true</internal_replication>'
      for r in 1 2; do
        echo "            <replica><host>127.0.0.1</host><port>2$(((s - 1) * 2 + r))900</port></replica>"
      done
      echo '        </shard>'
    done
    echo "    </$CLUSTER_NAME></remote_servers>"
    echo '</yandex>'
  } >"$dir/cluster.xml"
}

# The cluster id every Kafka node is formatted with, made once (KRaft: 22 base64url characters).
cluster_id() {
  mkdir -p "$BASE"
  if [[ ! -s $BASE/cluster.id ]]; then
    head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22 >"$BASE/cluster.id"
  fi
  cat "$BASE/cluster.id"
}

# Runs `FN N ACTION` for every N given, in parallel; fails if any failed.
each() {
  local fn=$1 action=$2 pids=() n rc=0
  shift 2
  for n in "$@"; do
    "$fn" "$n" "$action" &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  return "$rc"
}

start() {
  local started=$SECONDS
  STACK_DIR="$BASE/kafka-1" KAFKA_LIB="$BASE/lib" bash "$HERE/kafka.sh" jars
  zookeeper start
  # Made here, once: the nodes start in parallel and would each write their own.
  cluster_id >/dev/null
  each clickhouse start "${CH_NODES[@]}" || exit 1
  each node start "${NODES[@]}" || exit 1
  echo "cluster: ZooKeeper, 4 ClickHouse nodes (2 shards x 2 replicas) and 3 Kafka nodes ready in $((SECONDS - started)) s"
  echo "cluster: KAFKA_BROKERS=$CLUSTER_KAFKA_BROKERS CLICKHOUSE_URL=$CLUSTER_CLICKHOUSE_URL CLICKHOUSE_CLUSTER=$CLUSTER_NAME"
}

stop() {
  each node stop "${NODES[@]}" || true
  each clickhouse stop "${CH_NODES[@]}" || true
  zookeeper stop || true
}

status() {
  local n rc=0
  zookeeper status || rc=1
  for n in "${CH_NODES[@]}"; do clickhouse "$n" status || rc=1; done
  for n in "${NODES[@]}"; do node "$n" status || rc=1; done
  return "$rc"
}

case "${1:-}" in
  start | stop | status) "$1" ;;
  pid) cat "$BASE/kafka-${2:?node 1-3}/kafka/kafka.pid" ;;
  node) node "${2:?node 1-3}" "${3:?start|stop|status}" ;;
  clickhouse) clickhouse "${2:?node 1-4}" "${3:?start|stop|status}" ;;
  *)
    echo "usage: $0 start|stop|status|pid N|node N start|stop|status|clickhouse N start|stop|status" >&2
    exit 2
    ;;
esac
