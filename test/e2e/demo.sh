#!/bin/sh
# demo.sh -- runs scripts/demo.sh (`make demo`) on AIQ_API's server and
# checks what its output shows: the priority policy's levels, a job waiting
# on its user quota, the gang's gated pods released together, the shared
# jobs' placement, the queue reordered by the switch to srjf, ETAs that
# come true, one line per change, and the closing summary.
# The demo starts its own cluster and operator (AIQ_DEMO_BIN: AIQ_REL, the
# release build `make demo` runs), so this suite starts neither.
# servers: local real
. "$(dirname "$0")/lib.sh"

OUT=$T/demo.out
start=$(date +%s)
if AIQ_DEMO_BIN=${AIQ_REL:-$BUILD} AIQ_API=$AIQ_API sh "$ROOT/scripts/demo.sh" >"$T/raw.out" 2>&1; then
    ok "scripts/demo.sh exits 0"
else
    bad "scripts/demo.sh exits 0"; tail -20 "$T/raw.out"
fi
took=$(( $(date +%s) - start ))
sed 's/\x1b\[[0-9;]*m//g' "$T/raw.out" >"$OUT"

# section TITLE-REGEX: the lines of the demo step whose "== " title matches.
section() { awk -v re="$1" '/^== / { on = ($0 ~ re) } on' "$OUT"; }
# ev NAME: the event lines about one object (aijob or pod).
ev() { grep -E "^  \+[0-9]+s +(aijob|pod) +$1 " "$OUT"; }
# qorder TITLE-REGEX: the names in a `kubectl aiq queue -A` table, in order.
qorder() { section "$1" | awk '/^LEVEL/ { on = 1; next } on && NF >= 4 { print $1 ":" $4 }' | tr '\n' ' '; }
has() { grep -q -E "$1" "$OUT"; }

check "the priority policy is the active one, fifo and srjf are not" sh -c "
  grep -qE '^priority +true ' '$OUT' && grep -qE '^fifo +false ' '$OUT' && grep -qE '^srjf +false ' '$OUT'"
check "alice's UserQuota (1 GPU) is accepted" grep -qE '^alice +alice +1 +true' "$OUT"

# Wave 1: the quota wait, the shared jobs.
check "alice-2 waits on alice's quota while alice-1 runs" sh -c "
  grep -E '^  \+[0-9]+s +aijob +team-vision/alice-2 +Queued +low +waiting for 1 GPU in user alice \(quota 1, in use 1\)' '$OUT'"
check "the quota wait is shown live, in level low" sh -c "
  awk '/^== alice-2 waits/,/^== Wave 2/' '$OUT' | grep -E '^low +1 +alice-2 .*waiting for 1 GPU in user alice'"
check "alice-2 runs once alice-1 has finished" sh -c "
  a=\$(grep -nE 'aijob +team-vision/alice-1 +Succeeded' '$OUT' | head -1 | cut -d: -f1)
  b=\$(grep -nE 'aijob +team-vision/alice-2 +Running' '$OUT' | head -1 | cut -d: -f1)
  [ -n \"\$a\" ] && [ -n \"\$b\" ] && [ \"\$a\" -lt \"\$b\" ]"
shared=$(section "Two shared jobs" | awk '$1 ~ /^notebook-[ab]$/ { print $2 ":" $3 ":" $4 }' | sort | tr '\n' ' ')
check "the two shared jobs are placed on infer-0, 10000 MiB each, one GPU each under device-plugin ($shared)" sh -c "
  set -- $shared; [ \$# = 2 ] &&
  case \$1 in infer-0:?:10000Mi) ;; *) exit 1 ;; esac &&
  case \$2 in infer-0:?:10000Mi) ;; *) exit 1 ;; esac &&
  [ \"\${1%:10000Mi}\" != \"\${2%:10000Mi}\" ]"
check "the demo says what the device-plugin mechanism does and where sharing is shown" sh -c "
  grep -q 'gets one whole' '$OUT' && grep -q 'gpu-mechanism=hami' '$OUT'"

# Wave 2: the gang's gated pods, the queue under priority, the switch.
check "the gang's 4 pods are listed with aiq's scheduling gate, unbound" sh -c "
  [ \$(grep -cE '^ddp-[0-3] +aiq.dev/admission +<none> +Pending' '$OUT') = 4 ]"
first=$(for i in 0 1 2 3; do ev team-nlp/ddp-$i | head -1 | grep -c 'gated by aiq.dev/admission'; done | tr -d '\n')
check "every ddp pod first appears gated" eq "$first" 1111
order=$(qorder 'Wave 2')
check "under priority: big-long (urgent) before ddp and small-short (normal) before alice-2 (low) ($order)" \
    eq "$order" "urgent:big-long normal:ddp normal:small-short low:alice-2 "
order=$(qorder 'Switch the active policy')
check "the switch to srjf reorders the queue: shortest first, big-long last ($order)" sh -c "
  case '$order' in 'main:small-short main:ddp '*'main:big-long ') ;; *) exit 1 ;; esac"
check "the switched queue says it is srjf's" sh -c "awk '/^== Switch the active policy/,/^== The jobs run/' '$OUT' | grep -q '^Policy: srjf'"

# The run: the gang released together, srjf's order kept, ETAs that hold.
# Together: seen ungated in one poll of the demo's view, or in the next
# when a poll fell between the four writes (each pod's gate is its own
# PATCH; on the real API server on a loaded machine a list can land
# between them, as one make test run saw). The view polls about every
# 1.3 s and stamps whole seconds since the start, so two polls in a row
# are at most 2 s apart; a pod released later than that fails.
check "the gang's 4 pods leave the gate together (one poll, or two when a poll fell between the writes)" sh -c "
  grep -E '^  the gang ddp: 4 pods left the gate at ' '$OUT' |
    sed -nE 's/.* at \+([0-9]+)s( to \+([0-9]+)s .*)?$/\1 \3/p' |
    awk 'NF == 1 { ok = 1 } NF == 2 && \$2 - \$1 <= 2 { ok = 1 } END { exit !ok }'"
# Running follows the gate: pods released across two polls (above) show
# Running across two as well, so the same bound holds: the four Running
# stamps at most 2 s apart (one poll, or two in a row).
check "the 4 ddp pods start running together (one poll, or two in a row)" sh -c "
  grep -E 'pod +team-nlp/ddp-[0-3] +Running' '$OUT' | awk '{print \$1}' | tr -d '+s' |
    awk 'NR == 1 || \$1 < lo { lo = \$1 } NR == 1 || \$1 > hi { hi = \$1 } END { exit !(NR == 4 && hi - lo <= 2) }'"
# ETAs: small-short's ETA after the switch is warmup's remaining time; it
# must start within 4 s of it (a cycle and a poll of the event view).
eta=$(section 'Switch the active policy' | awk '$4 == "small-short" { for (i = 1; i < NF; i++) if ($i == "in") { print $(i+1); exit } }' | tr -d s)
shown=$(section 'Switch the active policy' | sed -n 's/^  at +\([0-9]*\)s:$/\1/p')
started=$(ev team-nlp/small-short | awk '$4 == "Running" { print $1; exit }' | tr -d '+s')
check "small-short's ETA under srjf (at +${shown}s: in ${eta}s) comes true (started at +${started}s)" sh -c "
  [ -n '$eta' ] && [ -n '$shown' ] && [ -n '$started' ] &&
  d=\$(($started - $shown - $eta)) && [ \$d -ge -4 ] && [ \$d -le 4 ]"
first_run() { ev "$1" | awk '$4 == "Running" { print $1; exit }' | tr -d '+s'; }
a=$(first_run research/big-long); b=$(first_run team-nlp/small-short); c=$(first_run team-nlp/ddp)
check "small-short (+${b}s) and ddp (+${c}s) run before big-long (+${a}s): srjf, not priority" \
    sh -c "[ -n '$a' ] && [ -n '$b' ] && [ -n '$c' ] && [ '$b' -lt '$a' ] && [ '$c' -lt '$a' ]"
check "only changes are printed: no object's line repeats its previous state" sh -c "
  grep -E '^  \+[0-9]+s +(aijob|pod) ' '$OUT' | sed -E 's/^  \+[0-9]+s +//' |
    awk '{ k = \$1 \" \" \$2; s = \$0; if (last[k] == s) { print \"repeated: \" s; bad = 1 } last[k] = s } END { exit bad }'"

# The summary: every job, its wait, runtime and place.
sum=$(section '^== Summary' | awk '$1 ~ /\// && NF >= 5')
check "the summary lists all 8 jobs, each Succeeded" sh -c "
  [ \$(echo '$sum' | grep -c ' Succeeded ') = 8 ]"
check "each job ran for its simulated duration (within 3 s)" sh -c "
  echo '$sum' | awk '
    BEGIN { d[\"research/warmup\"] = 20; d[\"research/big-long\"] = 15; d[\"team-nlp/ddp\"] = 12
            d[\"team-nlp/small-short\"] = 8; d[\"team-nlp/notebook-a\"] = 30; d[\"team-nlp/notebook-b\"] = 30
            d[\"team-vision/alice-1\"] = 15; d[\"team-vision/alice-2\"] = 15 }
    { r = \$4 + 0; if (!(\$1 in d) || r < d[\$1] - 3 || r > d[\$1] + 3) { print; bad = 1 } }
    END { exit bad }'"
check "alice-2 waited about alice-1's 15 s; warmup did not wait" sh -c "
  w=\$(echo '$sum' | awk '\$1 == \"team-vision/alice-2\" { sub(/s\$/, \"\", \$3); print \$3 }')
  v=\$(echo '$sum' | awk '\$1 == \"research/warmup\" { sub(/s\$/, \"\", \$3); print \$3 }')
  [ \"\$w\" -ge 12 ] && [ \"\$w\" -le 20 ] && [ \"\$v\" -le 4 ]"
check "the summary says where: ddp's 4 replicas on one training node" sh -c "
  echo '$sum' | grep -E '^ *team-nlp/ddp .* (train-[01])/gpu\[[0-3]\],\1/gpu\[[0-3]\],\1/gpu\[[0-3]\],\1/gpu\[[0-3]\]$'"
check "the whole demo takes under 2 minutes (${took}s)" [ "$took" -lt 120 ]
e2e_done
