#!/bin/sh
# Runs every benchmark binary under build/rel/bench/ in turn and prints its
# output. Each bench prints a table and ends with key=value lines (one per
# goal, e.g. formula_vs_native=1.8); this script repeats those lines at the
# end so `make bench` ends with all of them and runs can be compared.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/build/rel/bench"
KV=$(mktemp /tmp/aiq-bench.XXXXXX)
trap 'rm -f "$KV"' EXIT
rc=0
found=0
for b in "$DIR"/bench_*; do
    [ -x "$b" ] || continue
    case "$b" in *.o|*.d) continue ;; esac
    found=1
    echo "== $(basename "$b")"
    out=$(cd "$ROOT" && "$b" 2>&1)
    st=$?
    printf '%s\n' "$out"
    if [ "$st" != 0 ]; then
        echo "bench: $(basename "$b") exited $st"
        rc=1
    fi
    printf '%s\n' "$out" | grep -E '^[A-Za-z_][A-Za-z0-9_]*=[^ ]+$' >>"$KV"
done
[ "$found" = 1 ] || echo "bench: no benchmarks in $DIR (run make bench)"
echo "== summary"
cat "$KV"
exit $rc
