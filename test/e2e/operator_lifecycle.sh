#!/bin/sh
# operator_lifecycle.sh -- suspend and resume; a failed pod brings the gang
# down and requeues it until backoffLimit, then Failed; the operator
# killed with SIGKILL mid-run and restarted leaves no duplicate pod, keeps
# running jobs running and loses no job; pods recreated for the next
# attempt before the status said so are never run as the old attempt.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start --backoff 1s

job() { # name replicas gpus duration [exit-code] [backoffLimit]
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata:
  name: $1
  namespace: default
  annotations: {sim.aiq.dev/exit-code: "${5:-0}"}
spec:
  user: carol
  replicas: $2
  backoffLimit: ${6:-3}
  resources: {gpus: $3, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $4}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
phase() { kubectl get aijob "$1" -o jsonpath={.status.phase}; }

# --- suspend and resume ---------------------------------------------------
job sus 2 1 10m | kubectl apply -f - >/dev/null
wait_for 15 "job runs" sh -c '[ "$(kubectl get aijob sus -o jsonpath={.status.phase})" = Running ]'
kubectl patch aijob sus --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
wait_for 10 "suspend stops it: Suspended, pods deleted" sh -c '
  [ "$(kubectl get aijob sus -o jsonpath={.status.phase})" = Suspended ] &&
  [ -z "$(kubectl get pods -l aiq.dev/job=sus -o name)" ]'
check "Suspended condition is True" sh -c '
  kubectl get aijob sus -o jsonpath="{.status.conditions[?(@.type==\"Suspended\")].status}" | grep -q True'
kubectl patch aijob sus --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for 15 "resume requeues and runs it again" sh -c '
  [ "$(kubectl get aijob sus -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob sus -o jsonpath={.status.attempts})" = 2 ]'
check "the suspended attempt is counted in status.suspensions" sh -c '
  [ "$(kubectl get aijob sus -o jsonpath={.status.suspensions})" = 1 ]'
job held 1 1 5s | sed 's/^spec:/spec:\n  suspend: true/' | kubectl apply -f - >/dev/null
wait_for 10 "a job created suspended holds" sh -c '
  [ "$(kubectl get aijob held -o jsonpath={.status.phase})" = Suspended ]'
sleep 1
check "a held job's pods stay gated" sh -c '
  [ -z "$(kubectl get pods -l aiq.dev/job=held -o jsonpath={.items[*].spec.nodeName})" ]'

# --- a failed pod requeues the gang ----------------------------------------
job flaky 2 1 2s 1 1 | kubectl apply -f - >/dev/null
wait_for 20 "a failed pod requeues the gang (attempt 1 of 2)" sh -c '
  grep "event=gang_down obj=default/flaky " "$T/op.log" | grep -q "reason=PodFailed attempts=1 next=Queued"'
wait_for 25 "after backoffLimit the job is Failed" sh -c '
  [ "$(kubectl get aijob flaky -o jsonpath={.status.phase})" = Failed ] &&
  [ "$(kubectl get aijob flaky -o jsonpath={.status.attempts})" = 2 ]'
check "the failure message names the pod" sh -c '
  kubectl get aijob flaky -o jsonpath={.status.message} | grep -q "pod flaky-"'
PORT=$(sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$T/op.log" | tail -1)
check "aiq_finished_total counts the failed job once, not its two attempts nor the suspension" sh -c "
  m=\$(curl -fsS http://127.0.0.1:$PORT/metrics) &&
  echo \"\$m\" | grep -qx 'aiq_finished_total{outcome=\"Failed\"} 1' &&
  ! echo \"\$m\" | grep -q 'aiq_finished_total{outcome=\"Suspended\"}'"
check "a failed gang leaves no pods" sh -c '[ -z "$(kubectl get pods -l aiq.dev/job=flaky -o name)" ]'

# --- a suspension does not use up backoffLimit -------------------------------
# backoffLimit 1 allows two failed attempts; suspended once while it runs,
# the job still gets both (3 attempts, 1 of them a suspension).
job sflaky 1 1 6s 1 1 | kubectl apply -f - >/dev/null
wait_for 15 "sflaky runs" sh -c '[ "$(kubectl get aijob sflaky -o jsonpath={.status.phase})" = Running ]'
kubectl patch aijob sflaky --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
wait_for 10 "sflaky suspended" sh -c '
  kubectl get aijob sflaky -o jsonpath={.status.message} | grep -q "suspension 1, not counted against backoffLimit"'
kubectl patch aijob sflaky --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for 20 "after the resume its first failure requeues it (attempt 1 of 2)" sh -c '
  grep "event=gang_down obj=default/sflaky " "$T/op.log" | grep -q "reason=PodFailed attempts=2 next=Queued"'
wait_for 25 "its second failure ends it: Failed after 3 attempts, 1 suspended" sh -c '
  [ "$(kubectl get aijob sflaky -o jsonpath={.status.phase}/{.status.attempts}/{.status.suspensions})" = Failed/3/1 ]'
check "the failure message counts only the failed attempts" sh -c '
  kubectl get aijob sflaky -o jsonpath={.status.message} | grep -q "attempt 2 of 2, backoffLimit 1 reached"'

# --- SIGKILL mid-run ---------------------------------------------------------
job k-run 4 1 20s | kubectl apply -f - >/dev/null
wait_for 15 "k-run runs" sh -c '[ "$(kubectl get aijob k-run -o jsonpath={.status.phase})" = Running ]'
job k-new 3 2 3s | kubectl apply -f - >/dev/null
sleep 0.3
op_kill9
job k-down 2 1 3s | kubectl apply -f - >/dev/null   # created while no operator runs
op_start --backoff 1s
wait_for 30 "after the restart every job finishes" sh -c '
  for j in k-new k-down; do [ "$(kubectl get aijob $j -o jsonpath={.status.phase})" = Succeeded ] || exit 1; done'
wait_for 30 "the job running across the restart succeeds in its first attempt" sh -c '
  [ "$(kubectl get aijob k-run -o jsonpath={.status.phase})/$(kubectl get aijob k-run -o jsonpath={.status.attempts})" = Succeeded/1 ]'
check "no duplicate pods" sh -c '
  for j in k-run:4 k-new:3 k-down:2; do
    n=$(kubectl get pods -l aiq.dev/job=${j%:*} -o name | wc -l)
    [ "$n" = "${j#*:}" ] || { echo "$j has $n pods"; exit 1; }
  done
  [ "$(kubectl get pods -o name | sort | uniq -d | wc -l)" = 0 ]'
check "the restart recovered state from the status" sh -c '
  grep "event=job_loaded obj=default/k-run " "$T/op.log" | tail -1 | grep -q "phase=Running attempts=1"'

# --- pods recreated for the next attempt, status not yet written ------------
# A kill between a teardown's pod re-creation and its status write leaves
# an AIJob whose status still shows the attempt that ended (Admitted here)
# and gated pods made for the next one. Built by hand: the restarted
# operator must tear those pods down and requeue, not release them as the
# attempt the status shows.
job regate 2 1 10m | kubectl apply -f - >/dev/null
wait_for 15 "regate runs" sh -c '[ "$(kubectl get aijob regate -o jsonpath={.status.phase})" = Running ]'
check "a pod carries the attempt it was made for" sh -c '
  [ "$(kubectl get pod regate-0 -o jsonpath="{.metadata.annotations.aiq\.dev/attempt}")" = 1 ]'
op_kill9
uid=$(kubectl get aijob regate -o jsonpath={.metadata.uid})
kubectl delete pod regate-0 regate-1 --wait=true >/dev/null
for i in 0 1; do cat <<Y; done | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: regate-$i
  namespace: default
  labels: {aiq.dev/job: regate, aiq.dev/replica-index: "$i"}
  annotations: {aiq.dev/attempt: "2", sim.aiq.dev/duration: 10m}
  ownerReferences: [{apiVersion: aiq.dev/v1alpha1, kind: AIJob, name: regate, uid: $uid, controller: true, blockOwnerDeletion: true}]
spec:
  schedulingGates: [{name: aiq.dev/admission}]
  containers: [{name: w, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
---
Y
kubectl patch aijob regate --subresource=status --type=merge -p '{"status":{"phase":"Admitted"}}' >/dev/null
op_start --backoff 1s
wait_for 15 "the recreated pods are torn down, not released as attempt 1" sh -c '
  grep "event=gang_down obj=default/regate " "$T/op.log" | grep -q "reason=PodMissing attempts=1 next=Queued"'
check "the message says why" sh -c '
  kubectl get events --field-selector involvedObject.name=regate -o jsonpath="{.items[*].message}" |
    grep -q "2 of 2 pods were recreated for attempt 2"'
wait_for 20 "regate runs again as attempt 2" sh -c '
  [ "$(kubectl get aijob regate -o jsonpath={.status.phase})/$(kubectl get aijob regate -o jsonpath={.status.attempts})" = Running/2 ]'
check "its pods are attempt 2's" sh -c '
  for i in 0 1; do [ "$(kubectl get pod regate-$i -o jsonpath="{.metadata.annotations.aiq\.dev/attempt}")" = 2 ] || exit 1; done'
e2e_done
