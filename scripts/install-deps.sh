#!/bin/sh
# Installs every build and test dependency of aiq with apt-get, and checks
# that Go is there (it builds the real Kubernetes control plane the tests
# run on, test/realcluster; Debian bookworm's golang-go is too old for the
# Kubernetes 1.34 modules, so Go is not installed from apt here).
# chromium renders aiq-sim's HTML report headless in test/e2e/sim_report.sh.
# Idempotent: when everything is present it prints nothing and exits 0.
set -eu

GO_MIN=24 # Go 1.24, what k8s.io/kubernetes v1.34 asks for in its go.mod
if ! command -v go >/dev/null 2>&1; then
    echo "install-deps: Go 1.$GO_MIN or newer is needed to build test/realcluster (the real" >&2
    echo "install-deps: Kubernetes control plane of the tests) and is not on PATH" >&2
    exit 1
fi
gominor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -z "$gominor" ] || [ "$gominor" -lt $GO_MIN ]; then
    echo "install-deps: Go 1.$GO_MIN or newer is needed; found $(go env GOVERSION)" >&2
    exit 1
fi

PKGS="build-essential pkg-config clang libclang-rt-14-dev valgrind cppcheck \
libcurl4-openssl-dev libjson-c-dev libsqlite3-dev libyaml-dev libmicrohttpd-dev libgnutls28-dev \
sqlite3 curl openssl jq chromium"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q --no-install-recommends $missing >/tmp/aiq-apt.log 2>&1; then
    # The package lists may be stale or absent on a fresh machine.
    $SUDO apt-get update -q >>/tmp/aiq-apt.log 2>&1 || true
    if ! $SUDO apt-get install -y -q --no-install-recommends $missing >>/tmp/aiq-apt.log 2>&1; then
        echo "install-deps: apt-get failed; see /tmp/aiq-apt.log" >&2
        tail -20 /tmp/aiq-apt.log >&2
        exit 1
    fi
fi
echo "install-deps: done"
