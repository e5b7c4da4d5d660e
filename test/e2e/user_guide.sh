#!/bin/sh
# user_guide.sh -- runs docs/user-guide.md as a newcomer would: a
# cluster (examples/cluster/nodes-demo.yaml at time scale 8, the
# operator, the example namespaces, groups, quotas and policies: the
# groups and quotas a kept `make demo` cluster has, on other nodes), then
# every ```sh block in
# order, in one working directory, each with `sh -e`. A block passes when
# it exits 0 and its output matches every `<!-- expect: REGEX -->` line
# written under it (grep -E). The guide is the test's only script, so the
# two cannot drift.
. "$(dirname "$0")/lib.sh"

GUIDE=${AIQ_GUIDE:-$ROOT/docs/user-guide.md}
export PATH="$BUILD:$PATH"
e2e_start --nodes "$ROOT/examples/cluster/nodes-demo.yaml" --time-scale 8
op_start --cycle-ms 500 --backoff 2s
kubectl apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" \
    -f "$ROOT/examples/quotas/" -f "$ROOT/examples/policies/" >"$T/setup.out" 2>&1 ||
    { bad "demo setup"; cat "$T/setup.out"; }
wait_for 10 "the demo's UserQuota for alice is accepted" sh -c '
  [ "$(kubectl get userquota alice -n team-vision -o jsonpath={.status.accepted})" = true ]'
wait_for 10 "the example UserQuotas for bob and carol are accepted" sh -c '
  [ "$(kubectl get userquota bob -n team-nlp -o jsonpath={.status.accepted})" = true ] &&
  [ "$(kubectl get userquota carol -n team-nlp -o jsonpath={.status.accepted})" = true ]'
wait_for 10 "only over-allocated.yaml (erin) is rejected, with its documented reason" sh -c '
  [ "$(kubectl get userquota erin -n team-vision -o jsonpath={.status.accepted})" = false ] &&
  kubectl get userquota erin -n team-vision -o jsonpath={.status.message} |
    grep -qx "sum of user quotas for gpus would be 20, group vision has 16"'

# Split the guide into blocks: $T/blocks/N.sh and $T/blocks/N.expect.
mkdir -p "$T/blocks" "$T/work"
awk -v dir="$T/blocks" '
  /^```sh[ \t]*$/ { n++; inb = 1; last = n; next }
  inb && /^```[ \t]*$/ { inb = 0; next }
  inb { print > (dir "/" n ".sh"); next }
  /^<!-- expect: .* -->[ \t]*$/ && last {
      sub(/^<!-- expect: /, ""); sub(/ -->[ \t]*$/, ""); print > (dir "/" last ".expect"); next }
  /^[ \t]*$/ { next }
  { last = 0 }
' "$GUIDE"
NB=$(ls "$T/blocks" | grep -c '\.sh$')
[ "$NB" -ge 8 ] && ok "the guide has $NB runnable blocks" || bad "the guide has only $NB runnable blocks"
NE=$(cat "$T/blocks"/*.expect 2>/dev/null | wc -l)
[ "$NE" -ge "$NB" ] && ok "the guide states $NE expected outputs" || bad "only $NE expected outputs for $NB blocks"

i=1
while [ "$i" -le "$NB" ]; do
    b="$T/blocks/$i.sh"
    what="block $i: $(grep '^kubectl' "$b" | head -1 | cut -c1-70 | tr -d '\\')"
    if (cd "$T/work" && sh -e "$b") >"$T/blocks/$i.out" 2>&1; then
        miss=""
        if [ -f "$T/blocks/$i.expect" ]; then
            while IFS= read -r re; do
                grep -Eq -- "$re" "$T/blocks/$i.out" || miss="$miss [$re]"
            done <"$T/blocks/$i.expect"
        fi
        if [ -z "$miss" ]; then ok "$what"; else
            bad "$what: output lacks$miss"; sed 's/^/     /' "$T/blocks/$i.out" | tail -15
        fi
    else
        bad "$what: exit status $?"; sed 's/^/     /' "$T/blocks/$i.out" | tail -15
    fi
    i=$((i + 1))
done
check "after the guide no AIJob is left in team-vision" sh -c '
  [ -z "$(kubectl get aijobs -n team-vision -o name 2>/dev/null)" ]'
e2e_done
