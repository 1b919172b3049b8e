#!/usr/bin/env bash
# `npm test`: builds, brings up the local stack (reusing servers that already answer), runs every
# uvu test - unit tests and the live tests against the real Kafka and ClickHouse - and stops
# what it started. Exits with the test runner's status.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
# shellcheck source=../deploy/local/session.sh
source deploy/local/session.sh
trap stack_down EXIT

npm run --silent build || exit 1
stack_up || exit 1
npx uvu dist/test '\.test\.js$'
