#!/usr/bin/env bash
# Local ClickHouse server for development and tests, with its own config and data under
# $STACK_DIR/clickhouse (the system's /etc/clickhouse-server is never used or touched).
#
#   deploy/local/clickhouse.sh start|stop|status
#
# start: if CLICKHOUSE_URL (default http://127.0.0.1:8123) already answers /ping it is used
#        as is. Otherwise clickhouse-server is installed from Debian if missing (apt-get, once),
#        and started in the background (PID in $STACK_DIR/clickhouse/clickhouse.pid).
#        If /ping does not answer within 60 s, the tail of its logs is printed and we exit 1.
# stop:  stops only a server that this script started (by the PID in clickhouse.pid).
# status: says whether the server answers and whether we started it; exit 1 if it does not answer.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STACK_DIR="${STACK_DIR:-$(cd "$HERE/../.." && pwd)/.stack}"
DIR="$STACK_DIR/clickhouse"
PIDFILE="$DIR/clickhouse.pid"
CONFIG="$DIR/config.xml"
LOGS="$DIR/logs"

URL="${CLICKHOUSE_URL:-http://127.0.0.1:8123}"
URL="${URL%/}"
HOSTPORT="${URL#*://}"
HOSTPORT="${HOSTPORT%%/*}"
HTTP_PORT=8123
if [[ $HOSTPORT == *:* ]]; then HTTP_PORT="${HOSTPORT##*:}"; fi
TCP_PORT="${CLICKHOUSE_TCP_PORT:-9000}"

# shellcheck disable=SC2034 # NOUN, ENDPOINT and FAIL_LOGS are read by daemon.sh
NOUN=server ENDPOINT="$URL"
FAIL_LOGS=("$LOGS/clickhouse-server.err.log" "$LOGS/stdout.log")
# shellcheck source=daemon.sh
source "$HERE/daemon.sh"

say() { echo "clickhouse: $*"; }

answers() { [[ "$(curl -fsS --max-time 2 "$URL/ping" 2>/dev/null)" == "Ok." ]]; }

# true if PID is a live (non-zombie) clickhouse-server started with our config
ours() { [[ $1 =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- "--config-file=$CONFIG"; }



server_bin() { command -v clickhouse-server || { [[ -x /usr/sbin/clickhouse-server ]] && echo /usr/sbin/clickhouse-server; }; }

install_server() {
  if server_bin >/dev/null; then return 0; fi
  local sudo=""
  if ((EUID != 0)); then sudo=sudo; fi
  say "installing clickhouse-server from Debian packages (first start only; apt output in $DIR/apt.log)..."
  mkdir -p "$DIR"
  {
    $sudo apt-get update &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y clickhouse-server clickhouse-client
  } >"$DIR/apt.log" 2>&1 || {
    tail -n 30 "$DIR/apt.log"
    fail "apt-get install clickhouse-server failed"
  }
}

write_config() {
  mkdir -p "$DIR/data" "$DIR/tmp" "$DIR/user_files" "$DIR/format_schemas" "$LOGS"
  cat >"$CONFIG" <<EOF
<?xml version="1.0"?>
<!-- Written by deploy/local/clickhouse.sh on every start: edit the script, not this file. -->
<yandex>
    <logger>
        <level>warning</level>
        <log>$LOGS/clickhouse-server.log</log>
        <errorlog>$LOGS/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$HTTP_PORT</http_port>
    <tcp_port>$TCP_PORT</tcp_port>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>1073741824</uncompressed_cache_size>
    <mark_cache_size>536870912</mark_cache_size>
    <path>$DIR/data/</path>
    <tmp_path>$DIR/tmp/</tmp_path>
    <user_files_path>$DIR/user_files/</user_files_path>
    <format_schema_path>$DIR/format_schemas/</format_schema_path>
    <users_config>$DIR/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
</yandex>
EOF
  cat >"$DIR/users.xml" <<'EOF'
<?xml version="1.0"?>
<!-- Written by deploy/local/clickhouse.sh on every start: edit the script, not this file. -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
        </default>
        <!-- For test/live/grants.test.ts: a sink logged in as these users must refuse to start. -->
        <readonly>
            <readonly>1</readonly>
        </readonly>
        <no_ddl>
            <allow_ddl>0</allow_ddl>
        </no_ddl>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>::1</ip>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <sink_readonly>
            <password></password>
            <networks>
                <ip>::1</ip>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>readonly</profile>
            <quota>default</quota>
        </sink_readonly>
        <sink_no_ddl>
            <password></password>
            <networks>
                <ip>::1</ip>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>no_ddl</profile>
            <quota>default</quota>
        </sink_no_ddl>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
EOF
}

start() {
  if answers; then
    say "using existing server at $URL"
    return 0
  fi
  local pid
  pid="$(our_pid)"
  if [[ -n $pid ]]; then
    say "server we started (pid $pid) is not answering yet; waiting for it"
  else
    clear_stale_pidfile
    install_server
    # On a machine that lets packages start services, the install may have started one.
    if answers; then
      say "using existing server at $URL (started by the package install)"
      return 0
    fi
    write_config
    : >"$LOGS/clickhouse-server.err.log" # so a failure shows this start's errors only
    say "starting server at $URL (tcp port $TCP_PORT, logs in $LOGS)"
    spawn_detached "$LOGS/stdout.log" "$(server_bin)" --config-file="$CONFIG"
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
