#!/bin/sh
# Installs every build and test dependency of aiq with apt-get.
# Idempotent: when everything is present it prints nothing and exits 0.
set -eu

PKGS="build-essential pkg-config clang libclang-rt-14-dev valgrind cppcheck \
libcurl4-openssl-dev libjson-c-dev libsqlite3-dev libyaml-dev libmicrohttpd-dev \
sqlite3 curl openssl"

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
