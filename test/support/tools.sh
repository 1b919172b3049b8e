#!/usr/bin/env bash
# The real tools the tests drive, installed on first use and kept under .stack, so later runs
# download nothing. Sourced by test/run.sh; each function exports the variable the tests read.
#   install_kustomize    sigs.k8s.io/kustomize (Go module proxy)           -> KUSTOMIZE
#   install_kubeconform  github.com/yannh/kubeconform (Go module proxy)    -> KUBECONFORM
#                        and the strict Kubernetes JSON Schemas of the oldest and newest Kubernetes
#                        PyPI's kubernetes-validate carries (kubeconform's default source, GitHub,
#                        is out of reach)                                    -> KUBECONFORM_SCHEMAS
#   install_chdb         chdb-core, current ClickHouse in-process (PyPI)
#   install_chromium     Debian's Chromium, driven by puppeteer-core (no download of its own)
#   install_shellcheck   Debian's shellcheck, for the repository checks of the shell scripts
#   install_prometheus   Debian's prometheus (2.42) and promtool, for the alert rules' checks and
#                        the live alert test                                 -> PROMETHEUS, PROMTOOL
# The versions are also named in test/support/kustomize.ts and test/support/kubeconform.ts.

TOOLS_DIR="${STACK_DIR:-${ROOT:?}/.stack}"

install_kustomize() {
  local version=v5.5.0
  export KUSTOMIZE="$TOOLS_DIR/kustomize/$version/kustomize"
  [[ -x $KUSTOMIZE ]] && return 0
  echo "test: installing kustomize $version from the Go module proxy (first run only)..."
  GOBIN="$(dirname "$KUSTOMIZE")" go install "sigs.k8s.io/kustomize/kustomize/v5@$version"
}

install_kubeconform() {
  local version=v0.8.0 package=1.37.0 kubernetes=(v1.25.0 v1.37.0) missing=0 wheels
  export KUBECONFORM="$TOOLS_DIR/kubeconform/$version/kubeconform"
  if [[ ! -x $KUBECONFORM ]]; then
    echo "test: installing kubeconform $version from the Go module proxy (first run only)..."
    GOBIN="$(dirname "$KUBECONFORM")" go install "github.com/yannh/kubeconform/cmd/kubeconform@$version" || return 1
  fi
  export KUBECONFORM_SCHEMAS="$TOOLS_DIR/kubernetes-json-schema/$package"
  for v in "${kubernetes[@]}"; do [[ -f $KUBECONFORM_SCHEMAS/$v-local-strict/_definitions.json ]] || missing=1; done
  ((missing)) || return 0
  echo "test: installing the Kubernetes JSON Schemas of kubernetes-validate $package from PyPI (first run only)..."
  wheels="$(mktemp -d)"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: -d "$wheels" \
    "kubernetes-validate==$package" &&
    python3 "$ROOT/test/support/k8s_schemas.py" "$wheels"/kubernetes_validate-*.whl "$KUBECONFORM_SCHEMAS" "${kubernetes[@]}"
  local rc=$?
  rm -rf "$wheels"
  return "$rc"
}

install_chdb() {
  python3 -c 'import chdb' 2>/dev/null && return 0
  echo "test: installing chdb-core (current ClickHouse engine for Python; first run only)..."
  python3 -m pip install --quiet --disable-pip-version-check "chdb-core>=26.9,<27"
}

install_chromium() {
  [[ -n ${CHROMIUM_PATH:-} ]] && return 0
  command -v chromium >/dev/null 2>&1 && return 0
  echo "test: installing chromium from Debian's packages (first run only)..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
}

install_shellcheck() {
  command -v shellcheck >/dev/null 2>&1 && return 0
  echo "test: installing shellcheck from Debian's packages (first run only)..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
}

install_prometheus() {
  export PROMETHEUS="${PROMETHEUS:-/usr/bin/prometheus}" PROMTOOL="${PROMTOOL:-/usr/bin/promtool}"
  [[ -x $PROMETHEUS && -x $PROMTOOL ]] && return 0
  echo "test: installing prometheus from Debian's packages (first run only)..."
  # The package's service is not wanted: policy-rc.d 101 keeps it from starting.
  local policy=/usr/sbin/policy-rc.d had=0
  [[ -e $policy ]] && had=1
  if ((!had)); then printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"; fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  local rc=$?
  ((had)) || rm -f "$policy"
  return "$rc"
}
