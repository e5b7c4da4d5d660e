#!/bin/sh
# A short libFuzzer pass over every fuzz target, seeded with its checked-in
# corpus (fuzz/corpus/<name>/). New inputs go to a temp dir, never into the
# repository. AIQ_SOAK=1 runs each target for 10 minutes instead of 5 s.
# Ends with "N passed, N failed"; skipped (0 passed, 0 failed) without clang.
# servers: none (needs no cluster)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECS=5
[ "${AIQ_SOAK:-}" = 1 ] && SECS=600
P=0; F=0
TMP=$(mktemp -d /tmp/aiq-fuzz.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for bin in "$ROOT"/build/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    short=${name#fuzz_}
    corpus="$ROOT/fuzz/corpus/$short"
    mkdir -p "$TMP/$short"
    set -- "$TMP/$short"
    [ -d "$corpus" ] && set -- "$@" "$corpus"
    dict=""
    [ -f "$ROOT/fuzz/$short.dict" ] && dict="-dict=$ROOT/fuzz/$short.dict"
    if (cd "$TMP" && "$bin" -max_total_time=$SECS -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 $dict "$@") >"$TMP/$name.log" 2>&1; then
        execs=$(grep -E '^stat::number_of_executed_units' "$TMP/$name.log" | awk '{print $2}')
        echo "ok   $name: ${execs:-?} executions in ${SECS}s, no crash, leak or hang"
        P=$((P + 1))
    else
        echo "FAIL $name"
        grep -E 'ERROR|SUMMARY|Sanitizer|deadly|timeout|#[0-9]+ .* in .*(fuzz|common|operator|queue|policy)/' \
            "$TMP/$name.log" | head -24
        # The input that failed, in the log (TMP goes away): replay it with
        # base64 -d > x; build/fuzz/<name> x, and add it to the corpus.
        for art in "$TMP"/crash-* "$TMP"/leak-* "$TMP"/timeout-* "$TMP"/oom-*; do
            [ -f "$art" ] || continue
            echo "input $(basename "$art") ($(wc -c <"$art") bytes), base64:"
            base64 -w 76 "$art" | head -60
            rm -f "$art"
        done
        F=$((F + 1))
    fi
done
echo "$P passed, $F failed"
[ "$F" = 0 ]
