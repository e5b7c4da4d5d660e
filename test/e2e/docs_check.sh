#!/bin/sh
# docs_check.sh -- the docs that name things in the code must match it:
# every metric (and label) the Grafana dashboard queries and docs/metrics.md
# lists is one that operator/metrics.c renders, every rendered metric is
# documented, the dashboard covers what an operator of the queue watches,
# and relative links in README.md and docs/*.md point at files that exist.
# Needs no build and no cluster: grep, sed and awk only.
# servers: none (needs no cluster)
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
M=$ROOT/operator/metrics.c
DASH=$ROOT/docs/grafana/aiq-dashboard.json
DOC=$ROOT/docs/metrics.md
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }

# Metric families rendered by metrics.c: "# TYPE name" lines and the
# histograms passed to opm__hist (which renders its own TYPE line).
HIST=$(grep -o 'opm__hist([&]*b, "aiq_[a-z_]*"' "$M" | sed 's/.*"\(aiq_[a-z_]*\)"/\1/' | sort -u)
NAMES=$( { grep -o '# TYPE aiq_[a-z_]*' "$M" | sed 's/# TYPE //'; echo "$HIST"; } | sort -u)
[ -n "$HIST" ] && [ "$(echo "$NAMES" | wc -l)" -ge 5 ] && ok "metric names read from operator/metrics.c: $(echo $NAMES)" ||
    bad "could not read metric names from operator/metrics.c"

# labels NAME: the label keys metrics.c prints for family NAME.
labels() {
    if echo "$HIST" | grep -qx "$1"; then echo le; return; fi
    grep -o "\"$1{[^}]*}" "$M" | grep -o '[a-z_]*=' | tr -d '=' | sort -u
}

# known TOKEN: a family, or a histogram's _bucket/_sum/_count series.
known() {
    echo "$NAMES" | grep -qx "$1" && return 0
    base=$(echo "$1" | sed -n 's/_\(bucket\|sum\|count\)$//p')
    [ -n "$base" ] && echo "$HIST" | grep -qx "$base"
}
family() { t=$1; echo "$HIST" | grep -qx "$(echo "$t" | sed 's/_\(bucket\|sum\|count\)$//')" &&
    t=$(echo "$t" | sed 's/_\(bucket\|sum\|count\)$//'); echo "$t"; }

# ---- dashboard -------------------------------------------------------------
EXPRS=$(grep -E '"(expr|definition)":' "$DASH" | sed 's/^[^:]*: *"//; s/",*$//; s/\\"/"/g')
[ -n "$EXPRS" ] && ok "dashboard has $(echo "$EXPRS" | wc -l) queries" || bad "no queries found in $DASH"
unknown=""
for tok in $(echo "$EXPRS" | grep -o 'aiq_[a-z_]*' | sort -u); do
    known "$tok" || unknown="$unknown $tok"
done
[ -z "$unknown" ] && ok "every metric the dashboard queries exists in operator/metrics.c" ||
    bad "dashboard queries metrics operator/metrics.c does not render:$unknown"

# Label matchers metric{k="v"} and groupings "by (a, b) (... metric".
badl=""
for m in $(echo "$EXPRS" | grep -o 'aiq_[a-z_]*{[^}]*}' | sort -u); do
    fam=$(family "${m%%\{*}")
    have=$(labels "$fam")
    for k in $(echo "$m" | sed 's/^[^{]*{//; s/}$//' | grep -o '[a-z_]*\(=~\|!=\|=\)' | sed 's/[=~!]*$//'); do
        echo "$have" | grep -qx "$k" || badl="$badl $fam:$k"
    done
done
echo "$EXPRS" | grep -o 'by ([a-z_, ]*) ([^a]*aiq_[a-z_]*' | while read -r line; do
    fam=$(family "$(echo "$line" | grep -o 'aiq_[a-z_]*')")
    have=$( { labels "$fam"; echo pod; echo instance; echo job; } )
    for k in $(echo "$line" | sed 's/^by (\([^)]*\)).*/\1/' | tr ',' ' '); do
        echo "$have" | grep -qx "$k" || echo "$fam:$k"
    done
done >"${TMPDIR:-/tmp}/aiq-docs-by.$$"
badl="$badl $(cat "${TMPDIR:-/tmp}/aiq-docs-by.$$" | tr '\n' ' ')"
rm -f "${TMPDIR:-/tmp}/aiq-docs-by.$$"
[ -z "$(echo "$badl" | tr -d ' ')" ] && ok "every label the dashboard filters or groups by is one the metric carries" ||
    bad "labels not rendered by operator/metrics.c:$badl"

for need in aiq_pending_jobs aiq_wait_seconds_bucket aiq_admitted_total aiq_quota_used aiq_cycle_seconds_bucket; do
    echo "$EXPRS" | grep -q "$need" && ok "dashboard charts $need" || bad "dashboard does not chart $need"
done
echo "$EXPRS" | grep 'aiq_quota_used' | grep -q 'by (group' &&
    ok "dashboard shows quota use per group" || bad "dashboard does not show quota use per group"
echo "$EXPRS" | grep 'aiq_pending_jobs' | grep -q 'by (level)' &&
    ok "dashboard shows queue depth per level" || bad "dashboard does not show queue depth per level"
# Valid JSON (when python3 or jq is there to say so).
if command -v jq >/dev/null 2>&1; then
    jq -e '.panels | length > 0' "$DASH" >/dev/null && ok "dashboard is valid JSON with panels" || bad "dashboard is not valid JSON"
elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["panels"] else 1)' "$DASH" &&
        ok "dashboard is valid JSON with panels" || bad "dashboard is not valid JSON"
fi

# ---- docs/metrics.md -------------------------------------------------------
DOCN=$(grep -o '^| `aiq_[a-z_]*`' "$DOC" | grep -o 'aiq_[a-z_]*' | sort -u)
missing=""
for n in $NAMES; do echo "$DOCN" | grep -qx "$n" || missing="$missing $n"; done
[ -z "$missing" ] && ok "docs/metrics.md documents every metric metrics.c renders" ||
    bad "docs/metrics.md does not document:$missing"
unknown=""
for n in $(grep -o 'aiq_[a-z_]*' "$DOC" | sort -u); do known "$n" || unknown="$unknown $n"; done
[ -z "$unknown" ] && ok "every metric docs/metrics.md names exists" || bad "docs/metrics.md names unknown metrics:$unknown"
badl=""
for n in $DOCN; do
    doc_l=$(grep "^| \`$n\`" "$DOC" | awk -F'|' '{print $4}' | grep -o '`[a-z_]*`' | tr -d '`' | sort)
    code_l=$(labels "$n" | sort)
    [ "$(echo $doc_l)" = "$(echo $code_l)" ] || badl="$badl $n(doc:[$(echo $doc_l)] code:[$(echo $code_l)])"
done
[ -z "$badl" ] && ok "docs/metrics.md labels match the code" || bad "label mismatch:$badl"

# ---- factors and the architecture page ---------------------------------------
DEF=$ROOT/policy/fx_factors.def
FACTORS=$(grep -o '^FX_FACTOR([A-Z_]*, *"[a-z_.]*"' "$DEF" | sed 's/.*"\(.*\)"/\1/')
missing=""
for f in $FACTORS; do grep -q "| \`$f\` |" "$ROOT/docs/policy-language.md" || missing="$missing $f"; done
[ -n "$FACTORS" ] && [ -z "$missing" ] && ok "policy-language.md lists all $(echo $FACTORS | wc -w) factors of fx_factors.def" ||
    bad "factors missing from docs/policy-language.md:$missing"
PFACTORS=$(grep -o '^FX_PFACTOR([A-Z_]*, *"[a-z_.]*"' "$ROOT/policy/fx_place_factors.def" | sed 's/.*"\(.*\)"/\1/')
missing=""
for f in $PFACTORS; do grep -q "| \`$f\` |" "$ROOT/docs/policy-language.md" || missing="$missing $f"; done
[ -n "$PFACTORS" ] && [ -z "$missing" ] && ok "policy-language.md lists all $(echo $PFACTORS | wc -w) placement factors" ||
    bad "placement factors missing from docs/policy-language.md:$missing"
unknown=""
for f in $(sed -n '/^### Factor reference/,/^### /p' "$ROOT/docs/admin-guide.md" | grep '^| `' | awk -F'|' '{print $2}' | grep -o '`[a-z_]*\.[a-z_]*`' | tr -d '`'); do
    echo "$FACTORS" | grep -qx "$f" || unknown="$unknown $f"
done
[ -z "$unknown" ] && ok "every factor the admin guide names exists" || bad "admin-guide.md names unknown factors:$unknown"
ARCH=$ROOT/docs/architecture.md
missing=""
for f in $(grep -o '`[a-z_]*\.\(c\|def\)`' "$ARCH" | tr -d '`' | sort -u); do
    found=$(find "$ROOT/common" "$ROOT/policy" "$ROOT/queue" "$ROOT/operator" "$ROOT/simulator" \
        "$ROOT/tools" "$ROOT/test/apiserver" -name "$f" 2>/dev/null | head -1)
    [ -n "$found" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "every file architecture.md names exists" || bad "architecture.md names missing files:$missing"
missing=""
for f in "$ROOT"/operator/*.c; do
    b=$(basename "$f")
    grep -q "\`$b\`" "$ARCH" || missing="$missing $b"
done
[ -z "$missing" ] && ok "architecture.md places every operator/*.c" || bad "operator files architecture.md does not mention:$missing"

# ---- which suite runs on which server -----------------------------------------
# docs/local-cluster.md's table has one row per e2e suite, and its local and
# real columns say what the suite's "# servers:" line says.
LC=$ROOT/docs/local-cluster.md
wrong=""
for sfile in "$ROOT"/test/e2e/*.sh; do
    n=$(basename "$sfile" .sh)
    case "$n" in lib|_*) continue ;; esac
    line=$(sed -n 's/^# servers: *\([a-z ]*\).*/\1/p' "$sfile" | head -1)
    line=${line:-local real}
    row=$(sed -n '/^### Which suite runs on which server/,/^### /p' "$LC" | grep "^| $n |" | head -1)
    if [ -z "$row" ]; then wrong="$wrong $n(no row)"; continue; fi
    loc=$(echo "$row" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
    real=$(echo "$row" | awk -F'|' '{gsub(/ /, "", $4); print $4}')
    case " $line " in
    *" none "*) case "$loc" in -|bothatonce) ;; *) wrong="$wrong $n(local=$loc)" ;; esac ;;
    *) want_l=no; want_r=no
       case " $line " in *" local "*) want_l=yes ;; esac
       case " $line " in *" real "*) want_r=yes ;; esac
       [ "$loc" = "$want_l" ] && [ "$real" = "$want_r" ] || wrong="$wrong $n($loc/$real, want $want_l/$want_r)" ;;
    esac
done
for n in $(sed -n '/^### Which suite runs on which server/,/^### /p' "$LC" | grep -o '^| [a-z_]* |' | awk '{print $2}'); do
    [ "$n" = suite ] && continue
    [ -f "$ROOT/test/e2e/$n.sh" ] || wrong="$wrong $n(no such suite)"
done
[ -z "$wrong" ] && ok "local-cluster.md's suite x server table matches the suites' '# servers:' lines" ||
    bad "local-cluster.md's suite x server table is out of step:$wrong"

# ---- links -------------------------------------------------------------------
broken=""
for f in "$ROOT/README.md" "$ROOT"/docs/*.md; do
    dir=$(dirname "$f")
    for l in $(grep -o '](\([^)#]*\)[)#]' "$f" | sed 's/^](//; s/[)#]$//' | grep -v '^[a-z]*:' | grep -v '^$'); do
        [ -e "$dir/$l" ] || broken="$broken ${f#$ROOT/}:$l"
    done
done
[ -z "$broken" ] && ok "relative links in README.md and docs/*.md resolve" || bad "broken links:$broken"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
