# shellcheck shell=bash
# Sourced by deploy/local/up.sh and test/run.sh. stack_up starts the local stack and remembers
# which servers this shell started; stack_down stops only those, never a server that was
# already answering when we came (someone else's, or one started by `npm run stack:kafka:start`).
LOCAL_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STACK_OWNED=""

stack_up() {
  local svc
  for svc in clickhouse kafka; do
    if ! bash "$LOCAL_DIR/$svc.sh" status >/dev/null 2>&1; then STACK_OWNED="$STACK_OWNED $svc"; fi
  done
  bash "$LOCAL_DIR/stack.sh" start
}

stack_down() {
  local svc
  for svc in kafka clickhouse; do # Kafka first: its clients are gone by now, ClickHouse last
    case " $STACK_OWNED " in *" $svc "*) bash "$LOCAL_DIR/$svc.sh" stop || true ;; esac
  done
  STACK_OWNED=""
}
