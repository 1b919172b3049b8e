# shellcheck shell=bash
# Sourced by kafka.sh, clickhouse.sh and zookeeper.sh: a background server tracked by the PID in a pidfile.
# The caller defines NOUN (broker, server), ENDPOINT (for messages), PIDFILE, FAIL_LOGS (the log
# files fail prints the end of), and the functions say MSG, answers (it serves requests) and
# ours PID (PID is that server with our config: this machine reaps no zombies, so `kill -0` is
# not enough, and a reused PID must never be killed).

# Says MSG, prints the last 30 lines of each non-empty file of FAIL_LOGS, and exits 1.
fail() {
  say "$*"
  local f
  for f in "${FAIL_LOGS[@]}"; do
    if [[ -s $f ]]; then
      say "last 30 lines of $f:"
      tail -n 30 "$f"
    fi
  done
  exit 1
}

# PID from the pidfile if that server is still running, else nothing.
our_pid() {
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  if ours "$pid"; then echo "$pid"; fi
}

# Removes a pidfile whose server is gone.
clear_stale_pidfile() {
  if [[ -f $PIDFILE ]]; then
    say "removing stale pidfile (pid $(cat "$PIDFILE") is gone)"
    rm -f "$PIDFILE"
  fi
}

# spawn_detached LOG CMD...: runs CMD in a new session (a Ctrl-C in this terminal does not reach
# it) with output to LOG; the inner bash writes its own PID and then becomes CMD (exec), so the
# pidfile holds the server's PID. Sets SPAWNED_PID.
spawn_detached() {
  local log=$1
  shift
  # shellcheck disable=SC2016 # $$ and $@ are for the inner bash
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "$@" >"$log" 2>&1 </dev/null &
  SPAWNED_PID=""
  for _ in $(seq 50); do
    SPAWNED_PID="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ -n $SPAWNED_PID ]] && break
    sleep 0.1
  done
}

# wait_ready PID SECONDS: waits until the server answers; fails (with the caller's `fail`) if
# PID exits first or SECONDS pass.
wait_ready() {
  local pid=$1 deadline=$((SECONDS + $2))
  until answers; do
    ours "$pid" || { rm -f "$PIDFILE"; fail "$NOUN exited during startup"; }
    ((SECONDS < deadline)) || fail "$NOUN did not answer at $ENDPOINT within $2 s (pid $pid left running; use stop)"
    sleep 0.3
  done
  say "$NOUN ready at $ENDPOINT (pid $pid)"
}

# Stops the server we started: SIGTERM, then SIGKILL after 30 s.
stop() {
  if [[ ! -f $PIDFILE ]]; then
    say "nothing to stop"
    return 0
  fi
  local pid
  pid="$(our_pid)"
  if [[ -z $pid ]]; then
    say "$NOUN (pid $(cat "$PIDFILE")) was not running; removed stale pidfile"
    rm -f "$PIDFILE"
    return 0
  fi
  say "stopping $NOUN (pid $pid)..."
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 300); do
    ours "$pid" || break
    sleep 0.1
  done
  if ours "$pid"; then
    say "still running after 30 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
  say "stopped"
}

# Says whether the server answers and whether we started it; exit status 1 if it does not answer.
status() {
  local pid up=0
  pid="$(our_pid)"
  answers && up=1
  if ((up)); then say "$NOUN answers at $ENDPOINT"; else say "nothing answers at $ENDPOINT"; fi
  if [[ -n $pid ]]; then say "started by us (pid $pid)"; else say "not started by us"; fi
  ((up))
}
