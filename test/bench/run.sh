#!/usr/bin/env bash
# `npm run bench`: builds, brings up or reuses the local stack, runs the benchmark (BENCH_SECONDS
# per phase, default 20), stops what it started. BENCH_PROFILE_DIR=DIR also writes CPU profiles
# of ingest and sink there (read them with node dist/test/bench/profile-top.js DIR/*.cpuprofile).
# `run.sh SCRIPT ARGS...` runs dist/test/bench/SCRIPT.js ARGS instead (bench:compare, bench:curves).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
# shellcheck source=../../deploy/local/session.sh
source deploy/local/session.sh
trap stack_down EXIT
npm run --silent build || exit 1
stack_up >/dev/null || exit 1
node "dist/test/bench/${1:-main}.js" "${@:2}"
