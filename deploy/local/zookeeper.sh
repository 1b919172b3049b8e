#!/usr/bin/env bash
# Local single-node ZooKeeper for the ClickHouse cluster (deploy/local/cluster.sh): ClickHouse
# 18.16 keeps its replication log and ON CLUSTER queue there (it has no ClickHouse Keeper).
#
#   deploy/local/zookeeper.sh start|stop|status
#
# start: if something already answers at ZOOKEEPER_PORT (default 22181) on 127.0.0.1 it is used
#        as is. Otherwise Debian's `zookeeper` package is installed if missing (apt-get, once) and
#        a server is started in the background with its own config and data under
#        $STACK_DIR/zookeeper (PID in zookeeper.pid). Exits 1 if it does not answer within 60 s.
# stop:  stops only a server that this script started.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STACK_DIR="${STACK_DIR:-$(cd "$HERE/../.." && pwd)/.stack}"
DIR="$STACK_DIR/zookeeper"
PIDFILE="$DIR/zookeeper.pid"
LOG="$DIR/zookeeper.log"
CFG="$DIR/zoo.cfg"
PORT="${ZOOKEEPER_PORT:-22181}"
JAR=/usr/share/java/zookeeper.jar

# shellcheck disable=SC2034 # NOUN, ENDPOINT and FAIL_LOGS are read by daemon.sh
NOUN=server ENDPOINT="127.0.0.1:$PORT"
FAIL_LOGS=("$LOG")
# shellcheck source=daemon.sh
source "$HERE/daemon.sh"

say() { echo "zookeeper: $*"; }

# true if the server serves requests: its four-letter `srvr` names a mode (standalone, leader,
# follower). `ruok` answers `imok` as soon as the process runs, while the server may still be
# loading its data and drop every client: ClickHouse 18.16 started then logged connection
# failures and its ON CLUSTER queue stopped taking tasks (a cluster start of 2026-11-26).
answers() {
  [[ "$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; printf srvr >&3; cat <&3" 2>/dev/null)" == *$'\nMode: '* ]]
}

# true if PID is a live server started with our zoo.cfg
ours() { [[ $1 =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "QuorumPeerMain $CFG"; }


install_server() {
  if [[ -f $JAR ]]; then return 0; fi
  local sudo=""
  if ((EUID != 0)); then sudo=sudo; fi
  say "installing zookeeper from Debian packages (first start only; apt output in $DIR/apt.log)..."
  {
    $sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y zookeeper
  } >"$DIR/apt.log" 2>&1 || {
    tail -n 30 "$DIR/apt.log"
    fail "apt-get install zookeeper failed"
  }
}

write_config() {
  mkdir -p "$DIR/data"
  cat >"$CFG" <<EOF
# Written by deploy/local/zookeeper.sh on every start: edit the script, not this file.
tickTime=2000
dataDir=$DIR/data
clientPort=$PORT
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
autopurge.purgeInterval=1
EOF
}

start() {
  if answers; then
    say "using existing server at 127.0.0.1:$PORT"
    return 0
  fi
  local pid
  pid="$(our_pid)"
  if [[ -n $pid ]]; then
    say "server we started (pid $pid) is not answering yet; waiting for it"
  else
    clear_stale_pidfile
    mkdir -p "$DIR"
    install_server
    write_config
    say "starting server at 127.0.0.1:$PORT (log $LOG)"
    # The jar's manifest names its dependencies; the package's own /etc config is not read.
    spawn_detached "$LOG" java -Xmx192m -Dzookeeper.jmx.log4j.disable=true -cp "$JAR" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$CFG"
    pid=$SPAWNED_PID
  fi
  wait_ready "$pid" 60
}

case "${1:-}" in
  start | stop | status) "$1" ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
