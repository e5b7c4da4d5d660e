#!/bin/sh
# plugin.sh -- `kubectl aiq` (build/san/kubectl-aiq found on PATH by the
# real kubectl) against the local cluster and the operator: queue, explain,
# usage and policy test, as tables and as -o json / -o yaml. The policy
# test predicts that srjf puts the short job first where fifo had the long
# one first; the test then applies srjf and checks that the operator
# agrees with the prediction.
. "$(dirname "$0")/lib.sh"

export PATH="$BUILD:$PATH" ROOT
# jv KEY FILE: the values of KEY in pretty-printed JSON, in order, each
# followed by a space (no jq needed). A script so that sh -c sees it.
cat >"$T/jv" <<'SH'
#!/bin/sh
sed -n "s/^ *\"$1\": \(.*\)/\1/p" "$2" | sed 's/,$//' | tr '\n' ' '
SH
chmod +x "$T/jv"
export PATH="$T:$PATH"
unset NO_COLOR
e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start
METRICS_PORT=$(sed -n 's/.*event=metrics_listening port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)

job() { # name user priority replicas gpus duration estimate
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: team-a}
spec:
  user: $2
  priority: $3
  replicas: $4
  estimatedRuntime: $7
  resources: {gpus: $5, gpuMemory: 40Gi, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $6}
    spec:
      containers: [{name: w, image: busybox}]
Y
}

cat <<Y | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: aiq.dev/v1alpha1
kind: Group
metadata: {name: team}
spec:
  level: 2
  namespaces: [team-a]
  quota: {gpus: 16, jobs: 10}
  budget: {gpuHours: 100, window: 7d}
  members: [{user: alice, level: 1}, {user: bob, level: 3}]
---
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: alice, namespace: team-a}
spec:
  user: alice
  quota: {gpus: 16, jobs: 5}
Y
kubectl apply -f "$ROOT/examples/policies/fifo.yaml" >/dev/null
job big alice 0 2 8 10m 1h | kubectl apply -f - >/dev/null
wait_for 15 "the cluster is full" sh -c '[ "$(kubectl get aijob big -n team-a -o jsonpath={.status.phase})" = Running ]'
job long alice 5 1 2 1m 10h | kubectl apply -f - >/dev/null
sleep 1.1
job short bob 1 1 2 1m 1h | kubectl apply -f - >/dev/null
wait_for 15 "fifo: long is first, short second" sh -c '
  [ "$(kubectl get aijob long -n team-a -o jsonpath={.status.position})" = 1 ] && [ "$(kubectl get aijob short -n team-a -o jsonpath={.status.position})" = 2 ]'

# ---- kubectl describe: field names that read well ------------------------------
# kubectl's generic describer splits JSON names at case changes:
# gpuMemoryMiB read "Gpu Memory Mi B", totalGPUs "Total GP Us".
kubectl describe aijob big -n team-a >"$T/d" 2>&1
check "describe aijob: spec and placement GPU memory as 'Gpu Memory: 40Gi'" sh -c '
  [ "$(grep -cE "^ +Gpu Memory: +40Gi$" "$T/d")" = 3 ]'
check "describe aijob: 'Total Gpus: 16'" grep -qE '^  Total Gpus: +16$' "$T/d"
check "describe aijob: no label split inside a unit or an acronym" sh -c '
  ! grep -nE "Mi B|GP Us|Gi B" "$T/d"'
kubectl describe group team >"$T/dg" 2>&1
kubectl describe userquota alice -n team-a >"$T/du" 2>&1
check "describe group and userquota: usage 'Gpu Memory: 640Gi', no 'Mi B'" sh -c '
  grep -qE "^ +Gpu Memory: +640Gi$" "$T/dg" && grep -qE "^ +Gpu Memory: +640Gi$" "$T/du" &&
  ! grep -nE "Mi B|GP Us" "$T/dg" "$T/du"'
job both alice 0 1 1 1m 1h | sed "s/gpuMemory: 40Gi/gpuMemory: 40Gi, gpuMemoryMiB: 40960/" >"$T/both.yaml"
check "an AIJob giving gpuMemory and gpuMemoryMiB is refused, naming both" sh -c '
  ! kubectl apply -f "$T/both.yaml" >"$T/both" 2>&1 &&
  grep -q "give gpuMemory or the deprecated gpuMemoryMiB, not both" "$T/both"'

# ---- kubectl finds the plugin -------------------------------------------------
check "kubectl aiq --help lists the commands" sh -c 'kubectl aiq --help | grep -q "policy test FILE"'
check "an unknown command fails and says so" sh -c '
  ! kubectl aiq frobnicate 2>"$T/e" && grep -q "unknown command \"frobnicate\"" "$T/e"'

# ---- queue ------------------------------------------------------------------
kubectl aiq queue -A >"$T/q" 2>&1
check "queue -A: kubectl-style header, two spaces between columns" \
    grep -qE '^LEVEL  POS  NAMESPACE  NAME +USER +GROUP  GPUS  SCORE +WAIT  ETA +REASON$' "$T/q"
check "queue -A: long at position 1, short at 2, in level all, running job not listed" sh -c '
  awk "\$4==\"long\"{print \$1,\$2,\$3,\$5,\$6,\$7}" "$T/q" | grep -qx "all 1 team-a alice team 2" &&
  awk "\$4==\"short\"{print \$1,\$2,\$5}" "$T/q" | grep -qx "all 2 bob" &&
  ! grep -q " big " "$T/q" &&
  [ "$(grep -n " long " "$T/q" | cut -d: -f1)" -lt "$(grep -n " short " "$T/q" | cut -d: -f1)" ]'
check "queue -A: the reason is the operator's one-line message" sh -c '
  msg=$(kubectl get aijob long -n team-a -o jsonpath={.status.message}); [ -n "$msg" ] && grep -qF "$msg" "$T/q"'
check "queue -A: ETA from estimatedStartTime" sh -c 'grep " long " "$T/q" | grep -qE " in [0-9]+[smh]"'
check "queue -A names the active policy" grep -q '^Policy: fifo' "$T/q"
check "queue -n team-a: no NAMESPACE column" sh -c '
  kubectl aiq queue -n team-a | grep -qE "^LEVEL  POS  NAME +USER" &&
  ! kubectl aiq queue -n team-a | grep -q NAMESPACE'
check "queue --user bob shows only bob's job" sh -c '
  out=$(kubectl aiq queue -A --user bob); echo "$out" | grep -q " short " && ! echo "$out" | grep -q " long "'
check "queue --level nope is empty" sh -c '
  kubectl aiq queue -A --level nope 2>&1 | grep -q "No jobs waiting"'
check "queue in an empty namespace says so on stderr" sh -c '
  [ -z "$(kubectl aiq queue 2>/dev/null)" ] && kubectl aiq queue 2>&1 | grep -q "No jobs waiting in default namespace"'
check "queue -o json: items in queue order with position and score" sh -c '
  kubectl aiq queue -A -o json >"$T/qj" &&
  grep -q "^  \"kind\": \"QueueView\"," "$T/qj" &&
  [ "$(jv name "$T/qj")" = "\"long\" \"short\" " ] &&
  [ "$(jv position "$T/qj")" = "1 2 " ] && [ "$(jv user "$T/qj")" = "\"alice\" \"bob\" " ] &&
  jv score "$T/qj" | grep -qE "^[0-9.e-]+ [0-9.e-]+ $"'
check "queue -o yaml" sh -c '
  kubectl aiq queue -A -o yaml >"$T/qy" && grep -qx "kind: QueueView" "$T/qy" &&
  grep -qx "\- namespace: team-a" "$T/qy" && grep -qx "  name: short" "$T/qy"'
check "no colour escapes when stdout is not a terminal" sh -c '! grep -q "$(printf "\033")" "$T/q"'
check "colours on a terminal, none with NO_COLOR" sh -c '
  script -qec "kubectl aiq queue -A" /dev/null | grep -q "$(printf "\033")\[" &&
  ! NO_COLOR=1 script -qec "kubectl aiq queue -A" /dev/null | grep -q "$(printf "\033")\["'

# ---- explain ------------------------------------------------------------------
kubectl aiq explain long -n team-a --operator-url http://127.0.0.1:1 >"$T/x" 2>&1
check "explain: job, user and group" grep -q '^Job:       team-a/long   user alice, group team$' "$T/x"
check "explain: the formula of the active policy and the score term by term" sh -c '
  grep -q "^Formula:   job.age_hours$" "$T/x" &&
  score=$(kubectl get aijob long -n team-a -o jsonpath={.status.score}) &&
  grep -q "^Score:     .* = the sum of these terms" "$T/x" && grep -qE "^ +[0-9.e-]+  job.age_hours$" "$T/x"'
check "explain: the level and the when that held" sh -c '
  grep -q "^Level:     all -- the first level whose" "$T/x" && grep -q "^  => all  *(catch-all)$" "$T/x"'
check "explain: quota headroom of group and user" sh -c '
  grep -q "^Quota:     group team: 16 of 16 in use, 0 left$" "$T/x" &&
  grep -q "^           user alice: 16 of 16 in use, 0 left$" "$T/x" &&
  grep -q "this job needs 2 GPUs" "$T/x"'
check "explain: budget of the group" grep -qE '^Budget:    group: [0-9.e-]+ of 100 GPU-hours used per 7d' "$T/x"
check "explain: what blocks it names the resources, then the status reason and message" sh -c '
  r=$(kubectl get aijob long -n team-a -o jsonpath="{.status.conditions[?(@.type==\"Queued\")].reason}")
  [ -n "$r" ] && grep -q "^Blocked:   by GPUs, group team quota gpus, user alice quota gpus ($r: " "$T/x"'
check "explain: headroom per resource in human units, blocking rows marked" sh -c '
  grep -qE "^  GPUs +need 2 GPUs; 0 unused on 2 nodes; room for 0 of 1 replica  <- blocks$" "$T/x" &&
  grep -qE "^  GPU memory +need 40 GiB per GPU; 0 unused GPUs with 40 GiB or more; room for 0 of 1 replica$" "$T/x" &&
  grep -qE "^  cpu +need 1 core; [0-9.]+ cores free, at most [0-9.]+ cores on one node; room for 1 of 1 replica$" "$T/x" &&
  grep -qE "^  memory +need 1 GiB; [0-9.]+ [GT]iB free, .*room for 1 of 1 replica$" "$T/x" &&
  grep -qE "^  group team quota gpus +need 2 GPUs; 16 GPUs of 16 GPUs in use, 0 GPUs left  <- blocks$" "$T/x" &&
  grep -qE "^  group team quota jobs +need 1 job; 1 job of 10 jobs in use, 9 jobs left$" "$T/x" &&
  grep -qE "^  group team budget +need 20 GPU-hours \(runtime 10 h\); [0-9.e-]+ of 100 GPU-hours used" "$T/x" ||
  { cat "$T/x"; exit 1; }'
check "explain: ETA" grep -qE '^ETA:       20[0-9-]+T[0-9:]+Z \(in ' "$T/x"
check "explain: journal unreachable is said clearly" \
    grep -q '^Journal:   not available: the operator at http://127.0.0.1:1 is not reachable' "$T/x"
# Some other web server at the operator URL (it answers 404 for /journal).
mkdir -p "$T/www"
python3 -m http.server --bind 127.0.0.1 --directory "$T/www" 0 >"$T/www.log" 2>&1 &
WWW_PID=$!
for _ in $(seq 1 50); do grep -q "Serving HTTP" "$T/www.log" && break; sleep 0.1; done
WWW_PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/www.log" | head -1)
check "explain: an operator URL without /journal is named as such" sh -c '
  kubectl aiq explain long -n team-a --operator-url http://127.0.0.1:'"$WWW_PORT"' |
  grep -q "does not serve /journal"'
kill "$WWW_PID" 2>/dev/null; wait "$WWW_PID" 2>/dev/null
# The journal from the operator itself: /journal on its metrics address,
# at --operator-url (the default route, the aggregated API, is in
# api_aggregated.sh).
OPURL="http://127.0.0.1:$METRICS_PORT"
check "the operator's metrics address answers /journal with the job's decisions" sh -c '
  curl -s "'"$OPURL"'/journal?job=team-a/long" >"$T/jcurl" &&
  grep -qF "{\"job\":\"team-a\\/long\",\"items\":[" "$T/jcurl" &&
  grep -q "\"type\":\"decision\"" "$T/jcurl" && grep -q "\"action\":\"wait\"" "$T/jcurl" &&
  grep -q "\"kind\":\"job_arrival\"" "$T/jcurl" || { cat "$T/jcurl"; exit 1; }'
check "the operator's /journal: 400 naming a bad job" sh -c '
  [ "$(curl -s -o "$T/jbad" -w "%{http_code}" "'"$OPURL"'/journal?job=noslash")" = 400 ] &&
  grep -q "noslash" "$T/jbad" || { cat "$T/jbad"; exit 1; }'
check "explain: the job's recent journal entries from the operator's own endpoint" sh -c '
  kubectl aiq explain long -n team-a --operator-url '"$OPURL"' >"$T/xjl" &&
  grep -qE "^Journal:   [0-9]+ recent entr" "$T/xjl" &&
  grep -qE "^  20[0-9-]+T[0-9:]+Z  cycle [0-9]+ +wait +pos 1 +QuotaFull: waiting for 2 GPUs" "$T/xjl" &&
  grep -qE "^  20[0-9-]+T[0-9:]+Z  event job_arrival" "$T/xjl" || { cat "$T/xjl"; exit 1; }'
# The same journal from the standalone tool, read-only from the operator's
# store (for when the operator is down or elsewhere).
"$BUILD/aiq-journal" --db "$T/op.db" --addr 127.0.0.1:0 >"$T/journal.log" 2>&1 &
JOURNAL_PID=$!
for _ in $(seq 1 50); do grep -q listening "$T/journal.log" 2>/dev/null && break; sleep 0.1; done
JURL=$(sed -n 's/^aiq-journal listening on //p' "$T/journal.log")
check "explain -o json carries the journal items (aiq-journal)" sh -c '
  kubectl aiq explain short -n team-a --operator-url '"$JURL"' -o json | grep -q "\"action\": \"wait\""'
kill "$JOURNAL_PID" 2>/dev/null; wait "$JOURNAL_PID"; echo $? >"$T/journal.rc"
check "aiq-journal exits 0 on SIGTERM, no leak reported" sh -c '
  [ "$(cat "$T/journal.rc")" = 0 ] && ! grep -q Sanitizer "$T/journal.log"'

check "explain -o json" sh -c '
  kubectl aiq explain short -n team-a --operator-url http://127.0.0.1:1 -o json >"$T/xj" &&
  [ "$(jv name "$T/xj")" = "\"short\" \"job.age_hours\" " ] &&
  [ "$(jv formula "$T/xj")" = "\"job.age_hours\" " ] &&
  grep -A3 "\"scoreTerms\": \[" "$T/xj" | grep -q "\"name\": \"job.age_hours\"" &&
  [ "$(jv levelByLocalEval "$T/xj")" = "\"all\" " ] && jv journalError "$T/xj" | grep -q "^\"..*"'
check "explain of a missing job fails with NotFound wording" sh -c '
  ! kubectl aiq explain nope -n team-a 2>"$T/e" && grep -q "aijobs.aiq.dev \"nope\" not found" "$T/e"'
check "explain without a name says how to call it" sh -c '
  ! kubectl aiq explain 2>"$T/e" && grep -q "explain needs a job name" "$T/e"'

# ---- usage ------------------------------------------------------------------
kubectl aiq usage >"$T/u" 2>&1
check "usage: header like sshare" \
    grep -qE '^GROUP  USER +LEVEL  GPU-QUOTA  GPUS-USED  JOBS-QUOTA  JOBS-USED  BUDGET-GPUH  USED-GPUH  FAIRSHARE  STATUS$' "$T/u"
check "usage: the group row with its quota and use" sh -c '
  awk "\$1==\"team\"{print \$2,\$3,\$4,\$5,\$6,\$7,\$8}" "$T/u" | grep -qx "\* 2 16 16 10 1 100"'
check "usage: alice (UserQuota, accepted) and bob (member without one)" sh -c '
  awk "\$1==\"alice\"{print \$2,\$3,\$4,\$5,\$6,\$NF}" "$T/u" | grep -qx "1 16 16 5 1 Accepted" &&
  awk "\$1==\"bob\"{print \$2,\$3,\$4,\$NF}" "$T/u" | grep -qx "3 - 0 member"'
check "usage: fair-share factors in 0..1" sh -c '
  awk "NR>1 && NF>=10 {v=\$(NF-1); if (v+0 < 0 || v+0 > 1) bad=1} END{exit bad}" "$T/u"'
check "usage --group team -o json" sh -c '
  kubectl aiq usage --group team -o json >"$T/uj" && grep -q "^  \"kind\": \"UsageView\"," "$T/uj" &&
  [ "$(jv user "$T/uj")" = "null \"alice\" \"bob\" " ] && [ "$(jv gpuQuota "$T/uj")" = "16 16 -1 " ]'
check "usage --group nope fails naming the group" sh -c '
  ! kubectl aiq usage --group nope 2>"$T/e" && grep -q "groups.aiq.dev \"nope\" not found" "$T/e"'

# ---- policy test ------------------------------------------------------------
kubectl aiq policy test "$ROOT/examples/policies/srjf.yaml" >"$T/p" 2>&1
check "policy test: compiles and names the levels" \
    grep -q '^QueuePolicy srjf compiles: formula .* 2 levels (starving, main)$' "$T/p"
check "policy test: srjf puts the short job first (old 2 -> new 1), long goes down" sh -c '
  awk "\$5==\"short\"{print \$1,\$2,\$3}" "$T/p" | grep -qx "1 2 +1" &&
  awk "\$5==\"long\"{print \$1,\$2,\$3}" "$T/p" | grep -qx "2 1 -1"'
check "policy test: new scores are minus the predicted hours" sh -c '
  awk "\$5==\"short\"{print \$9}" "$T/p" | grep -qx -- "-1" && awk "\$5==\"long\"{print \$9}" "$T/p" | grep -qx -- "-10"'
check "policy test -o json" sh -c '
  kubectl aiq policy test "$ROOT/examples/policies/srjf.yaml" -o json >"$T/pj" &&
  [ "$(jv name "$T/pj")" = "\"short\" \"long\" " ] && [ "$(jv oldPosition "$T/pj")" = "2 1 " ] &&
  [ "$(jv newPosition "$T/pj")" = "1 2 " ] && [ "$(jv compiled "$T/pj")" = "true " ]'
printf 'apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: typo}\nspec:\n  formula: "job.priority + wait.hour * 2"\n  levels: [{name: all}]\n' >"$T/bad.yaml"
check "policy test: a typo fails with line:col and a caret under it" sh -c '
  ! kubectl aiq policy test "$T/bad.yaml" 2>"$T/pe" >/dev/null &&
  grep -q "spec.formula: 1:16: unknown factor .wait.hour." "$T/pe" &&
  grep -qx "job.priority + wait.hour \* 2" "$T/pe" &&
  grep -qx "               ^" "$T/pe"'
check "policy test: a schema error names the field" sh -c '
  ! kubectl aiq policy test "$ROOT/examples/invalid/policy-last-level-when.yaml" 2>"$T/pe2" &&
  grep -q "spec.levels" "$T/pe2"'
check "policy test: a missing file is an error naming it" sh -c '
  ! kubectl aiq policy test /nonexistent.yaml 2>"$T/e" && grep -q "/nonexistent.yaml" "$T/e"'

# The operator, once srjf is applied, agrees with the prediction.
kubectl patch queuepolicy fifo --type=merge -p '{"spec":{"active":false}}' >/dev/null
kubectl apply -f "$ROOT/examples/policies/srjf.yaml" >/dev/null
kubectl patch queuepolicy srjf --type=merge -p '{"spec":{"active":true}}' >/dev/null
wait_for 15 "after applying srjf the operator orders as predicted: short 1, long 2" sh -c '
  [ "$(kubectl get aijob short -n team-a -o jsonpath={.status.position})" = 1 ] && [ "$(kubectl get aijob long -n team-a -o jsonpath={.status.position})" = 2 ]'
check "queue now shows level main and policy srjf" sh -c '
  kubectl aiq queue -A | grep -q "^Policy: srjf" &&
  kubectl aiq queue -A | awk "\$4==\"short\"{print \$1,\$2}" | grep -qx "main 1"'
check "policy test of the active policy moves nothing" sh -c '
  kubectl aiq policy test "$ROOT/examples/policies/srjf.yaml" | awk "NR>3 && \$3!=\"=\"{bad=1} END{exit bad}"'

# ---- rerun ------------------------------------------------------------------
check "rerun of a job still queued is refused, naming its phase" sh -c '
  ! kubectl aiq rerun long -n team-a 2>"$T/e" &&
  grep -q "aijob team-a/long is Queued: only a finished job (Succeeded, Failed or Rejected) can be rerun" "$T/e" &&
  [ "$(kubectl get aijob long -n team-a -o jsonpath={.status.phase})" = Queued ]'
check "rerun of a missing job names it" sh -c '
  ! kubectl aiq rerun nope -n team-a 2>"$T/e" && grep -q "aijob team-a/nope not found" "$T/e"'
check "rerun without a name says how to call it" sh -c '
  ! kubectl aiq rerun 2>"$T/e" && grep -q "usage: kubectl aiq rerun JOB" "$T/e"'
kubectl delete aijob big -n team-a >/dev/null
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: once, namespace: team-a, labels: {app: once}}
spec:
  user: alice
  replicas: 2
  resources: {gpus: 1, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 1s}
    spec:
      containers: [{name: w, image: busybox}]
Y
wait_for 40 "once succeeds" sh -c '[ "$(kubectl get aijob once -n team-a -o jsonpath={.status.phase})" = Succeeded ]'
UID1=$(kubectl get aijob once -n team-a -o jsonpath={.metadata.uid})
wait_for 20 "aiq_quota_used has bob (no UserQuota) with his running job's GPUs, alice too" sh -c '
  [ "$(kubectl get aijob short -n team-a -o jsonpath={.status.phase})" = Running ] &&
  m=$(curl -fsS http://127.0.0.1:'"$METRICS_PORT"'/metrics) &&
  echo "$m" | grep -qx "aiq_quota_used{group=\"team\",user=\"bob\",resource=\"gpus\"} 2" &&
  echo "$m" | grep -qx "aiq_quota_used{group=\"team\",user=\"bob\",resource=\"jobs\"} 1" &&
  echo "$m" | grep -q "aiq_quota_used{group=\"team\",user=\"alice\",resource=\"gpus\"}"'
check "rerun of a succeeded job creates run 2" sh -c '
  kubectl aiq rerun once -n team-a >"$T/r" 2>&1 &&
  grep -qx "aijob.aiq.dev/once rerun: run 2 created (run 1 ended Succeeded; its history is kept)" "$T/r" ||
  { cat "$T/r"; exit 1; }'
check "the new run is a new object with the same spec, labels and the run annotations" sh -c '
  [ "$(kubectl get aijob once -n team-a -o jsonpath={.metadata.uid})" != "'"$UID1"'" ] &&
  [ "$(kubectl get aijob once -n team-a -o jsonpath={.spec.replicas}/{.metadata.labels.app})" = 2/once ] &&
  [ "$(kubectl get aijob once -n team-a -o jsonpath="{.metadata.annotations.aiq\.dev/run}")" = 2 ] &&
  [ "$(kubectl get aijob once -n team-a -o jsonpath="{.metadata.annotations.aiq\.dev/rerun-of}")" = "'"$UID1"'" ]'
wait_for 40 "the new run runs and succeeds in its own first attempt" sh -c '
  [ "$(kubectl get aijob once -n team-a -o jsonpath={.status.phase}/{.status.attempts})" = Succeeded/1 ]'
check "the store keeps both runs: two arrivals and two departures in the journal" sh -c '
  curl -s "'"$OPURL"'/journal?job=team-a/once" >"$T/jr" &&
  [ "$(grep -o "\"kind\":\"job_arrival\"" "$T/jr" | wc -l)" = 2 ] &&
  [ "$(grep -o "\"kind\":\"job_departure\"" "$T/jr" | wc -l)" = 2 ] || { cat "$T/jr"; exit 1; }'
check "a second rerun counts on: run 3" sh -c '
  kubectl aiq rerun once -n team-a | grep -q "run 3 created (run 2 ended Succeeded"'
e2e_done
