#!/usr/bin/env bash
# Local single-node Kafka (KRaft, broker+controller in one JVM) for development and tests.
#
#   deploy/local/kafka.sh start|stop|status|jars
#
# start: if something already answers at KAFKA_BROKERS (first entry, default 127.0.0.1:9092)
#        it is used as is. Otherwise the broker jars are fetched from Maven Central once
#        (into $STACK_DIR/kafka/lib), the data dir is formatted once, and a broker is started
#        in the background (PID in $STACK_DIR/kafka/kafka.pid, output in kafka.log).
#        If it does not answer within 90 s, the tail of kafka.log is printed and we exit 1.
# stop:  stops only a broker that this script started (by the PID in kafka.pid).
# status: says whether the broker answers and whether we started it; exit 1 if it does not answer.
# jars:  only fetches the broker jars.
#
# One node of a multi-node cluster (deploy/local/cluster.sh) sets KAFKA_NODE_ID, KAFKA_QUORUM_VOTERS
# (`id@host:port,...`), KAFKA_CLUSTER_ID (the same for every node), KAFKA_INTERNAL_REPLICAS (replicas
# of Kafka's own topics), KAFKA_LIB (jars shared by the nodes) and KAFKA_HEAP.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STACK_DIR="${STACK_DIR:-$(cd "$HERE/../.." && pwd)/.stack}"
DIR="$STACK_DIR/kafka"
LIB="${KAFKA_LIB:-$DIR/lib}"
PIDFILE="$DIR/kafka.pid"
LOG="$DIR/kafka.log"
PROPS="$DIR/server.properties"

BROKER="${KAFKA_BROKERS:-127.0.0.1:9092}"
BROKER="${BROKER%%,*}"   # first host:port of a comma-separated list
BROKER="${BROKER#*://}"  # tolerate a PLAINTEXT:// prefix
HOST="${BROKER%:*}"
PORT="${BROKER##*:}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
NODE_ID="${KAFKA_NODE_ID:-1}"
VOTERS="${KAFKA_QUORUM_VOTERS:-$NODE_ID@127.0.0.1:$CONTROLLER_PORT}"
INTERNAL_REPLICAS="${KAFKA_INTERNAL_REPLICAS:-1}"
HEAP="${KAFKA_HEAP:-512m}"
# The broker's version: kafka-pom.xml's kafka.version (the production manifests run the same one).
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/kafka-pom.xml")"

# shellcheck disable=SC2034 # NOUN, ENDPOINT and FAIL_LOGS are read by daemon.sh
NOUN=broker ENDPOINT="$HOST:$PORT"
FAIL_LOGS=("$LOG")
# shellcheck source=daemon.sh
source "$HERE/daemon.sh"

say() { echo "kafka: $*"; }

# true if something accepts TCP connections at HOST:PORT (bash /dev/tcp; nc is not always installed)
answers() { timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null; }

# true if PID is a live (non-zombie) broker started with our server.properties
ours() { [[ $1 =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "kafka.Kafka $PROPS"; }



fetch_jars() {
  if [[ -f $LIB/kafka_2.13-$VERSION.jar ]]; then return 0; fi
  say "downloading the jars of Kafka $VERSION from Maven Central (first start only)..."
  rm -rf "$LIB.tmp"
  mvn -B -q -f "$HERE/kafka-pom.xml" dependency:copy-dependencies -DoutputDirectory="$LIB.tmp" \
    >"$DIR/mvn.log" 2>&1 || { tail -n 30 "$DIR/mvn.log"; fail "downloading the broker jars failed"; }
  rm -rf "$LIB"
  mv "$LIB.tmp" "$LIB"
}

write_config() {
  mkdir -p "$DIR/data"
  cat >"$PROPS" <<EOF
# Written by deploy/local/kafka.sh on every start: edit the script, not this file.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$VOTERS
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$DIR/data
num.partitions=3
auto.create.topics.enable=false
offsets.topic.replication.factor=$INTERNAL_REPLICAS
transaction.state.log.replication.factor=$INTERNAL_REPLICAS
transaction.state.log.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
# Committed offsets outlive the topics' 30-day retention (the DLQ replay group is empty between replays).
offsets.retention.minutes=50400
EOF
  # Warnings and errors only, plus the one line that says the server is up.
  # (log4j 2's properties format: Kafka 4 dropped log4j 1.)
  cat >"$DIR/log4j2.properties" <<'EOF'
rootLogger.level=WARN
rootLogger.appenderRef.stderr.ref=STDERR
appender.stderr.type=Console
appender.stderr.name=STDERR
appender.stderr.target=SYSTEM_ERR
appender.stderr.layout.type=PatternLayout
appender.stderr.layout.pattern=[%d] %p %m (%c)%n
logger.server.name=kafka.server.KafkaRaftServer
logger.server.level=INFO
EOF
}

LOG_CONFIG="-Dlog4j2.configurationFile=file:$DIR/log4j2.properties"
java_run() { java "$LOG_CONFIG" -cp "$LIB/*" "$@"; }

format_storage() {
  if [[ -f $DIR/data/meta.properties ]]; then return 0; fi
  if [[ -n ${KAFKA_CLUSTER_ID:-} ]]; then
    echo "$KAFKA_CLUSTER_ID" >"$DIR/cluster.id"
  elif [[ ! -s $DIR/cluster.id ]]; then
    java_run kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 >"$DIR/cluster.id"
  fi
  say "formatting $DIR/data (cluster id $(cat "$DIR/cluster.id"))"
  java_run kafka.tools.StorageTool format -t "$(cat "$DIR/cluster.id")" -c "$PROPS" >"$LOG" 2>&1 ||
    fail "formatting the data dir failed"
}

start() {
  if answers; then
    say "using existing broker at $HOST:$PORT"
    return 0
  fi
  local pid
  pid="$(our_pid)"
  if [[ -n $pid ]]; then
    say "broker we started (pid $pid) is not answering yet; waiting for it"
  else
    clear_stale_pidfile
    mkdir -p "$DIR"
    fetch_jars
    write_config
    format_storage
    say "starting broker at $HOST:$PORT (controller 127.0.0.1:$CONTROLLER_PORT, log $LOG)"
    spawn_detached "$LOG" java "-Xmx$HEAP" -Xms256m "$LOG_CONFIG" -cp "$LIB/*" kafka.Kafka "$PROPS"
    pid=$SPAWNED_PID
  fi
  local deadline=$((SECONDS + 90))
  # The port is bound a moment before requests are served: also wait for "Kafka Server started".
  until answers && grep -q 'Kafka Server started' "$LOG" 2>/dev/null; do
    ours "$pid" || { rm -f "$PIDFILE"; fail "broker exited during startup"; }
    ((SECONDS < deadline)) || fail "broker did not answer at $HOST:$PORT within 90 s (pid $pid left running; use stop)"
    sleep 0.5
  done
  say "broker ready at $HOST:$PORT (pid $pid)"
}


jars() {
  mkdir -p "$DIR"
  fetch_jars
}

case "${1:-}" in
  start | stop | status | jars) "$1" ;;
  *)
    echo "usage: $0 start|stop|status|jars" >&2
    exit 2
    ;;
esac
