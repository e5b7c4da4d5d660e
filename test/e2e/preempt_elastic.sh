#!/bin/sh
# preempt_elastic.sh -- preemption and elastic jobs carried out by the
# operator (issue 16). On 2 nodes x 8 GPUs, two low-level 8-GPU jobs
# (backoffLimit 0) fill the cluster; a high-level 8-GPU job arrives:
# exactly one low job is chosen (the one not protected by minRuntime), its pod is annotated
# (aiq.dev/preempted-by) and deleted gracefully with its own
# terminationGracePeriodSeconds, the other is untouched, the high job runs
# once the victim's pod is gone, the victim goes back to Queued (Preempted
# condition and Event naming the high job, which gets a Preempting
# condition and Event naming the victim), and later runs again and
# succeeds (its preemption not counted against backoffLimit 0). Then an
# elastic job (2..4 replicas of 4 GPUs) starts at 2, grows to 4 into the
# idle GPUs (pods learn their size through aiq.dev/replicas / AIQ_REPLICAS)
# and is shrunk back to 2 from the top for a newcomer, without being
# preempted. Metrics count both; the journal has job_preempted and
# job_resized, and `aiq-sim replay` reproduces every decision. Last, the
# operator is killed (SIGKILL) while a victim's pod is still stopping: the
# restarted one recovers the teardown from the pods (their placement stays
# counted, the preemption is finished and journaled), so the preemptor
# starts only after the pod is gone and the victim requeues and succeeds.
# And cohorts: a group runs above its quota on a cohort partner's idle
# quota, and the partner takes it back by preemption (reason Reclaimed).
# servers: local real
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start
PORT=$(sed -n 's/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)
OP_METRICS=127.0.0.1:$PORT

mkdir -p "$T/pol"
cat >"$T/pol/preempt-test.yaml" <<'Y'
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: preempt-test}
spec:
  formula: "job.priority + job.age_hours / 1000"
  levels:
    - name: high
      when: "job.priority >= 100"
    - name: low
  backfill: None
  placement: binpack
  preemption:
    lowerLevels: true
  elastic:
    grow: true
  active: true
Y
kubectl apply -f "$T/pol/preempt-test.yaml" >/dev/null
wait_for 20 "the test policy is active" sh -c '
  [ "$(kubectl get queuepolicy preempt-test -o jsonpath={.status.active})" = true ]'

job() { # name gpus duration priority [grace] [stop-duration]
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  priority: $4
  backoffLimit: 0
  resources: {gpus: $2, gpuMemoryMiB: 40960, cpu: "2", memory: 4Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $3, sim.aiq.dev/stop-duration: ${6:-3s}}
    spec:
      terminationGracePeriodSeconds: ${5:-7}
      containers: [{name: w, image: busybox}]
Y
}
phase() { kubectl get aijob "$1" -o jsonpath={.status.phase}; }

# low-a asks not to be preempted in its first hour (spec.minRuntime): the
# victim must be low-b, and the replay must honour the protection too.
job low-a 8 25s 0 | sed 's/^  backoffLimit: 0$/  backoffLimit: 0\n  minRuntime: 1h/' |
  kubectl apply -f - >/dev/null
job low-b 8 25s 0 | kubectl apply -f - >/dev/null
wait_for 30 "two low jobs fill the cluster" sh -c '
  [ "$(kubectl get aijob low-a -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob low-b -o jsonpath={.status.phase})" = Running ]'

job hi 8 4s 100 | kubectl apply -f - >/dev/null
wait_for 20 "one low job is preempted for hi" sh -c '
  grep -q "event=job_preempted .*by=default/hi" "$T/op.log"'
V=$(sed -n 's/.*event=job_preempted obj=default\/\(low-[ab]\) .*by=default\/hi.*/\1/p' "$T/op.log" | head -1)
[ "$V" = low-a ] && K=low-b || K=low-a
VNODE=$(kubectl get pod "$V-0" -o jsonpath={.spec.nodeName} 2>/dev/null)
echo "victim: $V on $VNODE, kept: $K"
check "exactly one victim, low-b (low-a is protected by its minRuntime)" sh -c '
  [ "$(grep -c "event=job_preempted " "$T/op.log")" = 1 ] && [ "$0" = low-b ]' "$V"
check "the victim pod is terminating gracefully with its own grace period" sh -c '
  [ -n "$(kubectl get pod "$0-0" -o jsonpath={.metadata.deletionTimestamp} 2>/dev/null)" ] &&
  [ "$(kubectl get pod "$0-0" -o jsonpath={.metadata.deletionGracePeriodSeconds})" = 7 ] &&
  [ "$(kubectl get pod "$0-0" -o jsonpath="{.metadata.annotations.aiq\.dev/preempted-by}")" = default/hi ]' "$V"
check "hi waits while the victim's pod still holds the GPUs" sh -c '
  [ "$(kubectl get aijob hi -o jsonpath={.status.phase})" = Queued ] &&
  [ -z "$(kubectl get pod hi-0 -o jsonpath={.spec.nodeName})" ]'
check "the other low job is untouched" sh -c '
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.phase})" = Running ] &&
  [ -z "$(kubectl get pod "$0-0" -o jsonpath={.metadata.deletionTimestamp})" ] &&
  [ -z "$(kubectl get aijob "$0" -o jsonpath={.status.preemptions})" ]' "$K"
check "the victim is Queued with the Preempted condition naming hi" sh -c '
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.preemptions})" = 1 ] &&
  kubectl get aijob "$0" -o jsonpath="{.status.conditions[?(@.type==\"Preempted\")].message}" |
    grep -q default/hi' "$V"
wait_for 20 "hi gets the Preempting condition naming the victim" sh -c '
  kubectl get aijob hi -o jsonpath="{.status.conditions[?(@.type==\"Preempting\")].message}" |
    grep -q "default/$0"' "$V"
wait_for 30 "hi runs once the victim's pod is gone" sh -c '
  [ "$(kubectl get aijob hi -o jsonpath={.status.phase})" = Running ]'
check "the victim waits again, keeping the GPU time of its preempted run" sh -c '
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob "$0" -o jsonpath={.status.attainedGPUHours} | grep -q "^0\.[0-9]*[1-9]"' "$V"
check "hi landed where the victim was" sh -c '
  [ -n "$0" ] && [ "$(kubectl get aijob hi -o jsonpath={.status.placement[0].node})" = "$0" ] &&
  [ "$(kubectl get pod hi-0 -o jsonpath={.spec.nodeName})" = "$0" ]' "$VNODE"
wait_for 20 "Events on both jobs name the other" sh -c '
  kubectl get events --field-selector involvedObject.name="$0",reason=Preempted -o jsonpath="{.items[*].message}" | grep -q default/hi &&
  kubectl get events --field-selector involvedObject.name=hi,reason=Preempting -o jsonpath="{.items[*].message}" | grep -q "default/$0"' "$V"
wait_for 60 "the victim runs again and succeeds (backoffLimit 0 not spent)" sh -c '
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.attempts})" = 2 ]' "$V"
wait_for 60 "hi and the kept job succeed" sh -c '
  [ "$(kubectl get aijob hi -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.phase})" = Succeeded ]' "$K"
check "the victim's attained service was kept" sh -c '
  kubectl get aijob "$0" -o jsonpath={.status.attainedGPUHours} | grep -q "^0\.[0-9]*[1-9]"' "$V"
check "kubectl aiq explain shows the preemption, by whom, and the journal's preempt decision" sh -c '
  PATH=$2:$PATH kubectl aiq explain "$0" --operator-url "http://$1" >"$T/x" 2>&1; cat "$T/x"
  grep -q "^Preemption: preempted 1 time" "$T/x" &&
  grep -q "Preempted (Preempted): preempted by default/hi" "$T/x" &&
  grep -q "preempt .*Preempted" "$T/x" && grep -q "event job_preempted" "$T/x"' "$V" "$OP_METRICS" "$BUILD"
check "metrics: aiq_preemptions_total{reason=Preempted} 1" sh -c '
  curl -sf "http://$0/metrics" | grep -q "^aiq_preemptions_total{reason=\"Preempted\"} 1$"' "$OP_METRICS"

# ---- elastic: grow into idle GPUs, shrink for a newcomer ----------------
cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: el, namespace: default}
spec:
  user: alice
  minReplicas: 2
  maxReplicas: 4
  resources: {gpus: 4, gpuMemoryMiB: 40960, cpu: "1", memory: 2Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 40s, sim.aiq.dev/stop-duration: 2s}
    spec:
      terminationGracePeriodSeconds: 5
      containers: [{name: w, image: busybox}]
Y
wait_for 30 "the elastic job grows to 4 replicas into idle GPUs" sh -c '
  [ "$(kubectl get aijob el -o jsonpath={.status.currentReplicas})" = 4 ] &&
  [ "$(kubectl get pods -l aiq.dev/job=el -o jsonpath="{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}" | grep -c .)" = 4 ]'
check "it started at its minimum, then grew" sh -c '
  grep -q "event=job_growing obj=default/el .*from=2 to=4" "$T/op.log"'
check "Resized condition says Grown" sh -c '
  [ "$(kubectl get aijob el -o jsonpath="{.status.conditions[?(@.type==\"Resized\")].reason}")" = Grown ]'
wait_for 20 "every pod knows the size (aiq.dev/replicas=4, env AIQ_REPLICAS)" sh -c '
  for i in 0 1 2 3; do
    [ "$(kubectl get pod el-$i -o jsonpath="{.metadata.annotations.aiq\.dev/replicas}")" = 4 ] || exit 1
    kubectl get pod el-$i -o jsonpath="{.spec.containers[0].env[?(@.name==\"AIQ_REPLICAS\")].valueFrom.fieldRef.fieldPath}" |
      grep -q "aiq.dev/replicas" || exit 1
  done'

job nw 8 15s 0 | kubectl apply -f - >/dev/null
wait_for 20 "the elastic job is shrunk to 2 for the newcomer" sh -c '
  grep -q "event=job_shrinking obj=default/el .*from=4 to=2 by=default/nw" "$T/op.log"'
check "its top replicas are stopping gracefully, the bottom ones are not" sh -c '
  for i in 2 3; do
    d=$(kubectl get pod el-$i -o jsonpath={.metadata.deletionTimestamp} 2>/dev/null)
    [ -n "$d" ] || ! kubectl get pod el-$i >/dev/null 2>&1 || exit 1
  done
  for i in 0 1; do [ -z "$(kubectl get pod el-$i -o jsonpath={.metadata.deletionTimestamp})" ] || exit 1; done'
wait_for 30 "the newcomer runs; el runs on with 2 replicas, not preempted" sh -c '
  [ "$(kubectl get aijob nw -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.currentReplicas})" = 2 ] &&
  [ -z "$(kubectl get aijob el -o jsonpath={.status.preemptions})" ] &&
  [ "$(kubectl get aijob el -o jsonpath="{.status.conditions[?(@.type==\"Resized\")].reason}")" = Shrunk ]'
wait_for 20 "the remaining pods say 2" sh -c '
  [ "$(kubectl get pod el-0 -o jsonpath="{.metadata.annotations.aiq\.dev/replicas}")" = 2 ]'
check "metrics: one grow and one shrink" sh -c '
  m=$(curl -sf "http://$0/metrics")
  echo "$m" | grep -q "^aiq_resizes_total{direction=\"grow\"} 1$" &&
  echo "$m" | grep -q "^aiq_resizes_total{direction=\"shrink\"} 1$"' "$OP_METRICS"
wait_for 40 "once the newcomer is done, el grows back to 4" sh -c '
  [ "$(kubectl get aijob nw -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.currentReplicas})" = 4 ]'
wait_for 90 "both finish" sh -c '
  [ "$(kubectl get aijob nw -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.phase})" = Succeeded ]'

# The journal, read back once the operator is stopped.
kill "$OP_PID" 2>/dev/null
wait "$OP_PID" 2>/dev/null
OP_PID=""
SIM=$BUILD/aiq-sim
check "journal: job_preempted, job_resized (grow, shrink, grow) and their decisions" sh -c '
  "$0" export --db "$T/op.db" --out "$T/j.jsonl" 2>/dev/null &&
  [ "$(grep -c "\"kind\":\"job_preempted\"" "$T/j.jsonl")" = 1 ] &&
  [ "$(grep "\"kind\":\"job_resized\"" "$T/j.jsonl" | grep -o "\"replicas\":[0-9]*" | tr -d "\n")" = \
    "\"replicas\":4\"replicas\":2\"replicas\":4" ] &&
  [ "$(grep -c "\"action\":\"resize\"" "$T/j.jsonl")" = 3 ] &&
  grep -q "\"action\":\"preempt\".*\"reason\":\"Preempted\"" "$T/j.jsonl"' "$SIM"
check "replay reproduces every decision, preemption and resizes included" sh -c '
  "$0" replay --db "$T/op.db" --policies-dir "$1" >"$T/r.out" 2>"$T/r.err"; rc=$?
  cat "$T/r.out" "$T/r.err"; [ $rc = 0 ] && grep -q "^replay: exact: [1-9][0-9]* decisions" "$T/r.out"' \
  "$SIM" "$T/pol"
# The operator again, from its store.
mv "$T/op.log" "$T/op0.log"
op_start
check "the restarted operator reads back the victim's preemption of the last hour (hourly limit)" sh -c '
  grep -q "event=job_preemptions_loaded obj=default/$0 .*last_hour=1 " "$T/op.log"' "$V"

# ---- a restart while a victim's pod is still stopping ------------------
# The victims stop slowly (15 s), so the restart falls inside the stop.
job low-c 8 25s 0 30 15s | kubectl apply -f - >/dev/null
job low-d 8 25s 0 30 15s | kubectl apply -f - >/dev/null
wait_for 30 "two more low jobs fill the cluster" sh -c '
  [ "$(kubectl get aijob low-c -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob low-d -o jsonpath={.status.phase})" = Running ]'
job hi2 8 4s 100 12 8s | kubectl apply -f - >/dev/null
wait_for 20 "hi2 preempts one of them" sh -c 'grep -q "event=job_preempted .*by=default/hi2" "$T/op.log"'
V2=$(sed -n 's/.*event=job_preempted obj=default\/\(low-[cd]\) .*by=default\/hi2.*/\1/p' "$T/op.log" | head -1)
# Killed once the victim's pod is stopping: the deletion is in the API;
# its status may or may not be (the status writer batches), and the
# restarted operator must carry the preemption on either way.
wait_for 20 "the victim's pod is stopping" sh -c '
  [ -n "$(kubectl get pod "$0-0" -o jsonpath={.metadata.deletionTimestamp})" ]' "$V2"
op_kill9
mv "$T/op.log" "$T/op1.log" # op_start waits for this run's "ready"
op_start
wait_for 10 "the restarted operator carries on the victim's teardown (its GPUs still held)" sh -c '
  grep -q "event=job_teardown_recovered obj=default/$0 .*phase=Queued held=1 preempted=1 by=default/hi2" "$T/op.log"' "$V2"
wait_for 40 "hi2 runs" sh -c '[ "$(kubectl get aijob hi2 -o jsonpath={.status.phase})" = Running ]'
check "hi2 was admitted only after the victim's pod was gone; its run's GPU time counted" sh -c '
  gone=$(grep -n "event=job_requeued obj=default/$0 " "$T/op.log" | tail -1 | cut -d: -f1)
  adm=$(grep -n "event=job_admitted obj=default/hi2 " "$T/op.log" | tail -1 | cut -d: -f1)
  echo "gone=$gone admitted=$adm"; [ -n "$gone" ] && [ -n "$adm" ] && [ "$gone" -lt "$adm" ] &&
  grep "event=job_requeued obj=default/$0 " "$T/op.log" | grep -q "run_gpu_s=[1-9][0-9.]* counted=1"' "$V2"
wait_for 60 "the victim runs again and succeeds after the restart" sh -c '
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.attempts})" = 2 ] &&
  [ "$(kubectl get aijob "$0" -o jsonpath={.status.preemptions})" = 1 ]' "$V2"
wait_for 60 "hi2 and the other succeed" sh -c '
  [ "$(kubectl get aijob hi2 -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijobs -o jsonpath="{.items[*].status.phase}" | tr " " "\n" | grep -vc Succeeded)" = 0 ]'

# ---- cohorts: a group borrows idle quota, its owner takes it back -------
cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Namespace
metadata: {name: ga}
---
apiVersion: v1
kind: Namespace
metadata: {name: gb}
---
apiVersion: aiq.dev/v1alpha1
kind: Group
metadata: {name: ga}
spec: {namespaces: [ga], quota: {gpus: 8}, cohort: shared}
---
apiVersion: aiq.dev/v1alpha1
kind: Group
metadata: {name: gb}
spec: {namespaces: [gb], quota: {gpus: 8}, cohort: shared}
Y
gjob() { # namespace name [priority]
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $2, namespace: $1}
spec:
  user: alice
  priority: ${3:-0}
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "2", memory: 4Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 20s, sim.aiq.dev/stop-duration: 1s}
    spec:
      terminationGracePeriodSeconds: 5
      containers: [{name: w, image: busybox}]
Y
}
gjob gb b1 | kubectl apply -f - >/dev/null
gjob gb b2 | kubectl apply -f - >/dev/null
wait_for 30 "gb runs 16 GPUs on a quota of 8, borrowing ga's idle quota" sh -c '
  [ "$(kubectl get aijob b1 -n gb -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob b2 -n gb -o jsonpath={.status.phase})" = Running ]'
# a1 has the gb jobs' level and priority (no longer ordered first on
# purpose): whichever way the reclaimed victim is ordered when it is back
# in the queue, it must not borrow the freed room again (quota its owner's
# pending jobs want is not lent: docs/queue.md, "Borrowing"), so exactly
# one reclaim. test_queue_preempt covers the victim-first order exactly.
gjob ga a1 | kubectl apply -f - >/dev/null
wait_for 20 "ga takes its quota back: one gb job is preempted as Reclaimed for ga/a1" sh -c '
  grep -q "event=job_preempted obj=gb/b[12] .*by=ga/a1 reason=Reclaimed" "$T/op.log" &&
  [ "$(grep -c "event=job_preempted obj=gb/" "$T/op.log")" = 1 ]'
wait_for 30 "a1 runs" sh -c '[ "$(kubectl get aijob a1 -n ga -o jsonpath={.status.phase})" = Running ]'
check "the reclaimed job waits (gb back within its own quota), the other gb job runs on" sh -c '
  v=$(sed -n "s/.*event=job_preempted obj=gb\/\(b[12]\) .*/\1/p" "$T/op.log" | head -1)
  [ "$v" = b1 ] && o=b2 || o=b1
  [ "$(kubectl get aijob $v -n gb -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get aijob $v -n gb -o jsonpath="{.status.conditions[?(@.type==\"Preempted\")].reason}")" = Reclaimed ] &&
  [ "$(kubectl get aijob $o -n gb -o jsonpath={.status.phase})" = Running ]'
wait_for 90 "all three finish" sh -c '
  for x in ga/a1 gb/b1 gb/b2; do
    [ "$(kubectl get aijob ${x#*/} -n ${x%/*} -o jsonpath={.status.phase})" = Succeeded ] || exit 1
  done'

e2e_done
