#!/bin/sh
# lint.sh -- make lint's fast checks inside make test, so CI holds them:
# the layering table of docs/architecture.md and the banned calls
# (scripts/lint-layers.py), and no product function over 80 lines
# (scripts/lint-funclen.py). Each is also tried on a planted violation in
# a copy of the tree, so a check that stopped looking would fail here.
# cppcheck stays in `make lint` alone (minutes on two cores).
# servers: none (needs no build and no cluster)
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }
T=$(mktemp -d /tmp/aiq-lint.XXXXXX)
trap 'rm -rf "$T"' EXIT

for check in lint-layers lint-funclen; do
    if python3 "$ROOT/scripts/$check.py" "$ROOT" >"$T/$check.out" 2>&1; then
        ok "scripts/$check.py passes on the tree"
    else
        bad "scripts/$check.py passes on the tree:"; sed 's/^/    /' "$T/$check.out"
    fi
done

# A copy of what the checks read, with one violation of each kind planted.
mkdir -p "$T/tree"
(cd "$ROOT" && tar cf - docs/architecture.md common policy queue operator simulator tools bench test/unit fuzz) |
    (cd "$T/tree" && tar xf -)
printf '#include "operator/log.h"\nint planted_layer(void) { return 0; }\n' >"$T/tree/queue/planted_layer.c"
{
    echo 'static int planted_one(int x) { return x; }'
    echo 'int planted_long(int x) {'
    i=0; while [ $i -lt 85 ]; do echo "    x += $i;"; i=$((i + 1)); done
    echo '    return x;'
    echo '}'
    echo '/* lint-funclen: a planted exemption, checked below */'
    echo 'int planted_exempt(int x) {'
    i=0; while [ $i -lt 85 ]; do echo "    x -= $i;"; i=$((i + 1)); done
    echo '    return x;'
    echo '}'
} >"$T/tree/common/planted_long.c"
python3 "$ROOT/scripts/lint-layers.py" "$T/tree" >"$T/layers.out" 2>&1
if [ $? != 0 ] && grep -q 'queue/planted_layer.c' "$T/layers.out"; then
    ok "lint-layers refuses queue/ including an operator/ header"
else
    bad "lint-layers refuses queue/ including an operator/ header:"; sed 's/^/    /' "$T/layers.out"
fi
python3 "$ROOT/scripts/lint-funclen.py" "$T/tree" >"$T/len.out" 2>&1
if [ $? != 0 ] && grep -q 'common/planted_long.c:2: planted_long is 88 lines' "$T/len.out"; then
    ok "lint-funclen refuses an 88-line function after a one-line one, naming file, line and length"
else
    bad "lint-funclen refuses an 88-line function:"; sed 's/^/    /' "$T/len.out"
fi
if grep -q planted_exempt "$T/len.out"; then
    bad "lint-funclen skips a function whose line above says why (lint-funclen: ...)"
else
    ok "lint-funclen skips a function whose line above says why (lint-funclen: ...)"
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
