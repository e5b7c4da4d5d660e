#!/usr/bin/env bash
# heap-profile.sh -- where a waiting job's live heap goes, by allocation
# site: runs one row of bench_operator_e2e (default local:1000:10k) with
# the operator under heaptrack, and prints what the operator still held
# when the bench killed it (SIGKILL, the restart probe: after the burst,
# the status drain, the steady window and the arrival/finish probes),
# largest first, in bytes and bytes per pending job.
#
#   bench/heap-profile.sh                 # local:1000:10k
#   HEAP_PLAN=local:1000:1k bench/heap-profile.sh
#   HEAP_TOP=40 bench/heap-profile.sh     # more sites (default 25)
#
# Needs heaptrack (Debian: apt-get install heaptrack); the builds it runs
# are make's (build/rel/aiq-operator, build/rel/bench/bench_operator_e2e).
# heaptrack slows the operator several times over, so the bench's timing
# columns of this run mean nothing; what is live at the kill does not
# depend on them. docs/queue.md ("Twenty-eighth round") has a run of it.
set -euo pipefail
cd "$(dirname "$0")/.."

plan=${HEAP_PLAN:-local:1000:10k}
top=${HEAP_TOP:-25}
ht=$(command -v heaptrack || true)
hp=$(command -v heaptrack_print || true)
if [ -z "$ht" ] || [ -z "$hp" ]; then
    echo "heap-profile: needs heaptrack and heaptrack_print on PATH (apt-get install heaptrack)" >&2
    exit 2
fi
# The heaptrack script finds its preload library and interpreter
# relative to itself; so does this.
lib=$(cd "$(dirname "$(readlink -f "$ht")")/../lib/heaptrack" && pwd)
for f in "$lib/libheaptrack_preload.so" "$lib/libexec/heaptrack_interpret"; do
    [ -e "$f" ] || { echo "heap-profile: $f not found (heaptrack install?)" >&2; exit 2; }
done
for f in build/rel/aiq-operator build/rel/bench/bench_operator_e2e; do
    [ -x "$f" ] || { echo "heap-profile: $f missing: make $f" >&2; exit 2; }
done
command -v zstd >/dev/null || { echo "heap-profile: needs zstd" >&2; exit 2; }

dir=$(mktemp -d /tmp/aiq-heap.XXXXXX)
# The wrapper the bench starts instead of the operator: the same process
# (exec), recording into a fifo that an interpreter turns into a file.
cat > "$dir/operator.sh" <<EOF
#!/usr/bin/env bash
n=\$(ls "$dir"/*.zst 2>/dev/null | wc -l)
fifo="$dir/fifo.\$\$"
mkfifo "\$fifo"
setsid bash -c '"$lib/libexec/heaptrack_interpret" < "\$0" | zstd -q -c > "\$1"' \
    "\$fifo" "$dir/op.\$n.zst" &
LD_PRELOAD="$lib/libheaptrack_preload.so" DUMP_HEAPTRACK_OUTPUT="\$fifo" \
    exec "$PWD/build/rel/aiq-operator" "\$@"
EOF
chmod +x "$dir/operator.sh"

echo "heap-profile: $plan under heaptrack (files in $dir)" >&2
BENCH_OPERATOR="$dir/operator.sh" BENCH_PLAN="$plan" BENCH_VERBOSE=1 \
    build/rel/bench/bench_operator_e2e > "$dir/bench.log" 2>&1 || {
    echo "heap-profile: the bench failed; its output is in $dir/bench.log" >&2
    exit 1
}
# The first operator ran the row; the restart probe killed it.
data="$dir/op.0.zst"
for _ in $(seq 1 100); do # the interpreter finishes after the kill
    pgrep -f "heaptrack_interpret.*" >/dev/null || break
    sleep 0.2
done
[ -s "$data" ] || { echo "heap-profile: no heaptrack data in $data" >&2; exit 1; }

# Pending jobs: the row's own count, as the bench printed it.
jobs=$(awk '$1 == "local" || $1 == "real" { if ($3 ~ /^[0-9]+$/) { print $3; exit } }' "$dir/bench.log")
[ -n "$jobs" ] || { echo "heap-profile: no row in $dir/bench.log" >&2; exit 1; }

"$hp" -l 1 -p 0 -a 0 -T 0 -n 100000 -s 0 "$data" 2>/dev/null > "$dir/leaks.txt"
awk -v jobs="$jobs" -v top="$top" '
function bytes(s,   m) {
    m = 1
    if (s ~ /K$/) m = 1e3; else if (s ~ /M$/) m = 1e6; else if (s ~ /G$/) m = 1e9
    sub(/[KMGB]+$/, "", s)
    return s * m
}
/ leaked over [0-9]+ calls from$/ { # a site (its callers follow with "from:")
    b = bytes($1); c = $4
    getline fn; getline at
    gsub(/^ +| +$/, "", fn); gsub(/^ +(at|in) +| +$/, "", at)
    n++; site[n] = fn " (" at ")"; sz[n] = b; calls[n] = c; total += b
}
/^total memory leaked: / { reported = $4 }
END {
    printf "live heap when the bench killed the operator: %s (%.0f bytes a pending job, %d jobs)\n",
        reported, total / jobs, jobs
    printf "%12s %10s %9s  %s\n", "bytes", "calls", "B/job", "allocated at"
    # largest first (sites come out in heaptrack order, which is by size)
    for (i = 1; i <= n && i <= top; i++)
        printf "%12d %10d %9.0f  %s\n", sz[i], calls[i], sz[i] / jobs, site[i]
}' "$dir/leaks.txt"
