#!/bin/sh
# servers: local real
# sim_tune.sh -- aiq-sim tune (issue 17 item 6): a synthetic trace is run
# under srjf with --journal, and tune searches srjf's constants on that
# journal for mean_jct + 0.5*p95_wait: the objective improves on the
# search part and on the held-out part, the same seed gives the same
# YAML byte for byte, a trace gives what its journal gives, and a bad
# objective is refused naming the token with a caret. The tuned policy is
# applied with kubectl to the server (local and real): the CRD's schema
# takes it, it reads back with the tuned formula, the operator compiles
# it (status.compiled), and `kubectl aiq policy test` shows the measured
# comparison (the aiq.dev/tuned-* annotations) beside its reordering.
. "$(dirname "$0")/lib.sh"

SIM=$BUILD/aiq-sim
P=$ROOT/examples/policies
OBJ='mean_jct + 0.5*p95_wait'

"$SIM" gen --seed 7 --jobs 400 --interarrival 120 --out "$T/t.csv" 2>/dev/null
check "a synthetic journal: srjf on the generated trace, recorded with --journal" \
    "$SIM" run --trace "$T/t.csv" --nodes-spec 4x8xA100-80GB --policy "$P/srjf.yaml" \
    --journal "$T/j.db"
check "tune on the journal (its policy from --policies-dir) writes a YAML and reports" sh -c '
  "$0" tune --journal "$1/j.db" --policies-dir "$2" --objective "$3" --seed 3 --budget 30 \
    --progress --out "$1/tuned.yaml" >"$1/report" 2>"$1/err" &&
  grep -q "^tune: objective mean_jct + 0.5\*p95_wait (lower is better), seed 3, 30 runs$" "$1/report" &&
  grep -q "^split: search on the first 280 jobs, validated on the last 120" "$1/report" &&
  grep -q "^  spec.formula@1:59: 24h -> " "$1/report" &&
  grep -q "^  spec.levels\[0\].when@1:15: 48h -> " "$1/report" &&
  grep -q "^trade-offs: " "$1/report" && grep -q "tune: 100% in [0-9]* s" "$1/err" &&
  grep -q "wrote QueuePolicy srjf-tuned to" "$1/err"' "$SIM" "$T" "$P" "$OBJ"
# "search part   68.03   54.06   -20.5%": after < before on both parts.
improved() { # label
    awk -v l="$1" 'index($0, l) == 1 { n = split($0, f, " +"); b = f[n - 2]; a = f[n - 1];
        found = 1; exit !(a + 0 < b + 0) } END { if (!found) exit 1 }' "$T/report"
}
check "the objective improves on the search part" improved "search part"
check "and on the held-out part (validated by replay), with the verdict saying so" sh -c '
  awk "index(\$0, \"held-out part\") == 1 { n = split(\$0, f, \" +\"); exit !(f[n - 1] + 0 < f[n - 2] + 0) }" "$0/report" &&
  grep -q "^verdict: the tuned policy improves the objective on the held-out part$" "$0/report"' "$T"
check "the YAML says what was measured, as comments over the manifest" sh -c '
  grep -q "^# Tuned by aiq-sim tune from QueuePolicy srjf: objective mean_jct + 0.5\*p95_wait, seed 3, 30 runs.$" "$0/tuned.yaml" &&
  grep -q "^# Held-out part (last 120 jobs): objective " "$0/tuned.yaml" &&
  grep -q "^kind: QueuePolicy$" "$0/tuned.yaml" && grep -q "^  active: false$" "$0/tuned.yaml"' "$T"
check "same seed, same YAML; a trace gives what its journal gives" sh -c '
  "$0" tune --trace "$1/t.csv" --nodes-spec 4x8xA100-80GB --policy "$2/srjf.yaml" --objective "$3" \
    --seed 3 --budget 30 --out "$1/again.yaml" >/dev/null 2>&1 && cmp "$1/tuned.yaml" "$1/again.yaml"' \
    "$SIM" "$T" "$P" "$OBJ"
check "the tuned policy runs in aiq-sim and beats srjf on the whole trace" sh -c '
  "$0" compare --trace "$1/t.csv" --nodes-spec 4x8xA100-80GB --policy "$2/srjf.yaml" \
    --policy "$1/tuned.yaml" --csv "$1/cmp.csv" >/dev/null 2>&1 &&
  awk -F, "NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
           { o[NR] = \$(c[\"jct_avg_h\"]) + 0.5 * \$(c[\"wait_p95_h\"]) }
           END { print o[2], o[3]; exit !(o[3] < o[2]) }" "$1/cmp.csv"' "$SIM" "$T" "$P"
check "a bad objective names the token, with a caret (exit 1)" sh -c '
  "$0" tune --trace "$1/t.csv" --policy "$2/srjf.yaml" --objective "mean_jct + 0.5*p95_wiat" \
    >/dev/null 2>"$1/bad"; rc=$?
  [ $rc = 1 ] &&
  grep -q "^aiq-sim: --objective: objective: 1:16: unknown metric .p95_wiat.; did you mean .p95_wait.?$" "$1/bad" &&
  grep -q "^               ^$" "$1/bad"' "$SIM" "$T" "$P"
check "--name names the policy; a name the API server would refuse is refused first" sh -c '
  "$0" tune --trace "$1/t.csv" --policy "$2/srjf.yaml" --objective mean_jct --budget 3 \
    --name srjf-v2 2>/dev/null | grep -q "^  name: \"srjf-v2\"$" &&
  ! "$0" tune --trace "$1/t.csv" --policy "$2/srjf.yaml" --objective mean_jct --budget 3 \
    --name Bad_Name >/dev/null 2>"$1/e" &&
  grep -q "^aiq-sim: --name: .Bad_Name. is not a valid object name" "$1/e"' "$SIM" "$T" "$P"
check "--fixed keeps a constant as written; an entry that names none is refused" sh -c '
  "$0" tune --trace "$1/t.csv" --policy "$2/srjf.yaml" --objective mean_jct --budget 3 \
    --fixed "spec.formula@1:59,spec.starvation.after" >"$1/fx" 2>/dev/null &&
  ! grep -q "^  spec.formula@1:59" "$1/fx" && ! grep -q "^  spec.starvation.after" "$1/fx" &&
  grep -q "^  spec.formula@2:18: 1000000 -> " "$1/fx" &&
  grep -q "^  kept as written (--fixed): spec.formula@1:59,spec.starvation.after$" "$1/fx" &&
  grep -q "runtime.predicted_hours : 24h)" "$1/fx" &&
  ! "$0" tune --trace "$1/t.csv" --policy "$2/srjf.yaml" --objective mean_jct --budget 3 \
    --fixed spec.formula@9:9 >/dev/null 2>"$1/e" &&
  grep -q "^aiq-sim: tune: fixed: .spec.formula@9:9. names no nonzero constant" "$1/e"' "$SIM" "$T" "$P"
check "a policy without constants to tune is refused naming it (exit 1)" sh -c '
  "$0" tune --trace "$1/t.csv" --policy "$2/fifo.yaml" --objective mean_jct >/dev/null 2>"$1/e"
  [ $? = 1 ] && grep -q "policy .fifo. has no nonzero numbers" "$1/e"' "$SIM" "$T" "$P"

# --- the tuned policy on the server ------------------------------------------
e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml"
op_start
check "kubectl applies the tuned policy (the CRD's schema takes it)" sh -c '
  kubectl apply -f "$0/tuned.yaml" 2>&1 | tee "$0/apply.out" | grep -q "queuepolicy.aiq.dev/srjf-tuned created"' "$T"
check "it reads back with the tuned formula and threshold" sh -c '
  f=$(kubectl get queuepolicy srjf-tuned -o jsonpath={.spec.formula}) &&
  echo "$f" | grep -q "runtime.predicted_hours : [0-9.]*h)" && ! echo "$f" | grep -q " 24h)" &&
  w=$(kubectl get queuepolicy srjf-tuned -o "jsonpath={.spec.levels[0].when}") &&
  grep -q "when: \"$w\"" "$0/tuned.yaml"' "$T"
wait_for 20 "the operator compiles it" sh -c '
  [ "$(kubectl get queuepolicy srjf-tuned -o jsonpath={.status.compiled})" = true ]'
check "the measured comparison travels as annotations" sh -c '
  kubectl get queuepolicy srjf-tuned -o "jsonpath={.metadata.annotations.aiq\.dev/tuned-result}" |
    grep -q "^held-out part (last 120 jobs): objective [0-9.]* -> [0-9.]* (-[0-9.]*%); search part"'
check "kubectl aiq policy test shows the same comparison beside the reordering" sh -c '
  PATH="$1:$PATH" kubectl aiq policy test "$0/tuned.yaml" >"$0/pt" 2>&1 &&
  grep -q "^QueuePolicy srjf-tuned compiles" "$0/pt" &&
  grep -q "^Tuned by aiq-sim tune from QueuePolicy srjf: objective mean_jct + 0.5\*p95_wait, seed 3, 30 runs$" "$0/pt" &&
  grep -q "^Measured: held-out part (last 120 jobs): objective " "$0/pt" &&
  PATH="$1:$PATH" kubectl aiq policy test "$0/tuned.yaml" -o json | grep -q "\"tunedResult\": \"held-out part"' \
    "$T" "$BUILD"
check "a server-side dry run of the same file is unchanged" sh -c '
  kubectl apply --server-side --dry-run=server -f "$0/tuned.yaml" >/dev/null' "$T"
e2e_done
