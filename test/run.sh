#!/usr/bin/env bash
# `npm test`: builds, installs chdb-core, Chromium and kustomize if missing, brings up the local
# stack (reusing servers that already answer), runs every uvu test - unit tests, live tests against
# the real Kafka and ClickHouse, and current-ClickHouse checks in chdb - stops what it started, then
# runs the fault scenarios and the API fuzz on a stack of their own (test/faults/run.sh), and, with
# CLUSTER=1, the cluster scenarios (test/faults-cluster/run.sh, else `npm run test:cluster`).
# Exits non-zero if any test failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
# shellcheck source=../deploy/local/session.sh
source deploy/local/session.sh
trap stack_down EXIT

npm run --silent build || exit 1
# Current ClickHouse, in-process, for the tests of the current-dialect DDL (PyPI: chdb-core).
if ! python3 -c 'import chdb' 2>/dev/null; then
  echo "test: installing chdb-core (current ClickHouse engine for Python; first run only)..."
  python3 -m pip install --quiet --disable-pip-version-check "chdb-core>=26.9,<27" || exit 1
fi
# A real browser for test/browser.test.ts: Debian's Chromium, driven by puppeteer-core (no download).
if [[ -z ${CHROMIUM_PATH:-} ]] && ! command -v chromium >/dev/null 2>&1; then
  echo "test: installing chromium from Debian's packages (first run only)..."
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || exit 1
fi
# The real kustomize for the manifest and boot tests (Go module proxy; test/kustomize.ts has the
# same version). Kept under .stack, so later runs download nothing.
KUSTOMIZE_VERSION=v5.5.0
export KUSTOMIZE="${STACK_DIR:-$ROOT/.stack}/kustomize/$KUSTOMIZE_VERSION/kustomize"
if [[ ! -x $KUSTOMIZE ]]; then
  echo "test: installing kustomize $KUSTOMIZE_VERSION from the Go module proxy (first run only)..."
  GOBIN="$(dirname "$KUSTOMIZE")" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" || exit 1
fi
# The real kubeconform for the manifests' schema checks (Go module proxy; test/kubeconform.ts has
# the same versions), and the Kubernetes JSON Schemas it reads. Its default schema source, GitHub,
# is out of reach: PyPI's kubernetes-validate ships the same per-kind schemas (strict variant:
# unknown fields refused). The strict schemas of the oldest and newest Kubernetes it carries are
# extracted under .stack, their references to kubernetes.io/api/_definitions.json made relative.
KUBECONFORM_VERSION=v0.8.0
export KUBECONFORM="${STACK_DIR:-$ROOT/.stack}/kubeconform/$KUBECONFORM_VERSION/kubeconform"
if [[ ! -x $KUBECONFORM ]]; then
  echo "test: installing kubeconform $KUBECONFORM_VERSION from the Go module proxy (first run only)..."
  GOBIN="$(dirname "$KUBECONFORM")" go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" || exit 1
fi
SCHEMA_PACKAGE_VERSION=1.37.0
SCHEMA_KUBERNETES_VERSIONS=(v1.25.0 v1.37.0)
export KUBECONFORM_SCHEMAS="${STACK_DIR:-$ROOT/.stack}/kubernetes-json-schema/$SCHEMA_PACKAGE_VERSION"
schemas_missing=0
for version in "${SCHEMA_KUBERNETES_VERSIONS[@]}"; do
  [[ -f $KUBECONFORM_SCHEMAS/$version-local-strict/_definitions.json ]] || schemas_missing=1
done
if ((schemas_missing)); then
  echo "test: installing the Kubernetes JSON Schemas of kubernetes-validate $SCHEMA_PACKAGE_VERSION from PyPI (first run only)..."
  wheels="$(mktemp -d)"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: -d "$wheels" \
    "kubernetes-validate==$SCHEMA_PACKAGE_VERSION" || exit 1
  python3 - "$wheels"/kubernetes_validate-*.whl "$KUBECONFORM_SCHEMAS" "${SCHEMA_KUBERNETES_VERSIONS[@]}" <<'PY' || exit 1
import json, os, shutil, sys, zipfile

wheel, dest, *versions = sys.argv[1:]
partial = dest + ".partial"
shutil.rmtree(partial, ignore_errors=True)

def relative(node):
    if isinstance(node, dict):
        if str(node.get("$ref", "")).startswith("/api/"):
            node["$ref"] = node["$ref"][len("/api/"):]
        for value in node.values():
            relative(value)
    elif isinstance(node, list):
        for value in node:
            relative(value)

with zipfile.ZipFile(wheel) as z:
    for version in versions:
        prefix = f"kubernetes_validate/kubernetes-json-schema/{version}-local-strict/"
        names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
        if not names:
            sys.exit(f"{wheel} has no {prefix}")
        os.makedirs(os.path.join(partial, version + "-local-strict"))
        for name in names:
            schema = json.loads(z.read(name))
            schema.pop("$id", None)  # https://kubernetes.io/api/...: resolve from the file instead
            relative(schema)
            with open(os.path.join(partial, version + "-local-strict", name[len(prefix):]), "w") as f:
                json.dump(schema, f, separators=(",", ":"))
shutil.rmtree(dest, ignore_errors=True)
os.replace(partial, dest)
PY
  rm -rf "$wheels"
fi
stack_up || exit 1
npx uvu dist/test '\.test\.js$' --ignore faults
rc=$?
stack_down
# The fault scenarios and the fuzz run bring up a Kafka and a ClickHouse of their own.
# FAULTS=0 skips them (8 to 15 minutes on 2 cores, the fuzz run included).
if [[ ${FAULTS:-1} != 0 ]]; then
  bash test/faults/run.sh || rc=1
fi
# The cluster scenarios (three Kafka nodes, ClickHouse 2 shards x 2 replicas; about 4 minutes) are
# `npm run test:cluster`, a suite of their own that keeps npm test under 20 minutes; CLUSTER=1
# runs them here too.
if [[ ${CLUSTER:-0} != 0 ]]; then
  bash test/faults-cluster/run.sh || rc=1
fi
exit "$rc"
