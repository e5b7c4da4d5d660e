#!/bin/sh
# Runs every benchmark under build/rel/bench/ that has a source
# bench/bench_*.c, in turn, showing its output as it comes (the process
# benchmarks run for minutes). Each bench prints a table and ends with
# key=value lines (e.g. formula_vs_native=1.8); this script repeats those
# lines at the end, with each bench's wall time, so `make bench` ends with
# all of them and runs can be compared.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/build/rel/bench"
KV=$(mktemp /tmp/aiq-bench.XXXXXX)
OUT=$(mktemp /tmp/aiq-bench-out.XXXXXX)
trap 'rm -f "$KV" "$OUT"' EXIT
rc=0
found=0
t_all=$(date +%s)
for b in "$DIR"/bench_*; do
    [ -x "$b" ] || continue
    case "$b" in *.o|*.d) continue ;; esac
    name=$(basename "$b")
    # A binary left from a benchmark that no longer exists is not run.
    [ -f "$ROOT/bench/$name.c" ] || continue
    found=1
    echo "== $name"
    t0=$(date +%s)
    (cd "$ROOT" && "$b" 2>&1; echo "$?" >"$OUT.rc") | tee "$OUT"
    st=$(cat "$OUT.rc" 2>/dev/null || echo 1)
    rm -f "$OUT.rc"
    if [ "$st" != 0 ]; then
        echo "bench: $name exited $st"
        rc=1
    fi
    grep -E '^[A-Za-z_][A-Za-z0-9_]*=[^ ]+$' "$OUT" >>"$KV"
    echo "bench_seconds_$name=$(( $(date +%s) - t0 ))" >>"$KV"
done
[ "$found" = 1 ] || echo "bench: no benchmarks in $DIR (run make bench)"
echo "== summary"
cat "$KV"
echo "bench_seconds_all=$(( $(date +%s) - t_all ))"
exit $rc
