#!/bin/sh
# servers: local real
# grow_timeout.sh -- an elastic job whose grown replica cannot start is
# shrunk back (issue 16): `fill` holds one node's 8 GPUs, the elastic job
# `el` (1..2 replicas of 8 GPUs) runs one replica on the other node. The
# filler's node gets a NoSchedule taint aiq does not read, so when `fill`
# ends aiq grows `el` onto it and kube-scheduler refuses the new pod. After
# --start-timeout the operator stops the grown replica again: condition
# Resized with reason GrowTimedOut, a GrowTimedOut Event, the log line
# job_grow_timeout, and the job runs on at its old size (not requeued).
# The refused node is remembered for --grow-backoff: with growth on again
# the job does not grow back onto it until the back-off is over. The
# operator is restarted mid-growth once: the growth, its start timeout
# and its undo survive (rebuilt from the status and the pods).
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start --start-timeout 8s --grow-backoff 25s

cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: grow-test}
spec:
  formula: "job.priority"
  levels:
    - name: all
  backfill: None
  placement: binpack
  elastic:
    grow: true
  active: true
Y
wait_for 20 "the test policy is active" sh -c '
  [ "$(kubectl get queuepolicy grow-test -o jsonpath={.status.active})" = true ]'

cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: fill, namespace: default}
spec:
  user: alice
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "1", memory: 2Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 15s}
    spec:
      containers: [{name: w, image: busybox}]
Y
wait_for 30 "the filler runs" sh -c '[ "$(kubectl get aijob fill -o jsonpath={.status.phase})" = Running ]'
N=$(kubectl get aijob fill -o jsonpath='{.status.placement[0].node}')
cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: el, namespace: default}
spec:
  user: alice
  minReplicas: 1
  maxReplicas: 2
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "1", memory: 2Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 10m, sim.aiq.dev/stop-duration: 1s}
    spec:
      terminationGracePeriodSeconds: 3
      containers: [{name: w, image: busybox}]
Y
wait_for 30 "the elastic job runs one replica beside the filler" sh -c '
  [ "$(kubectl get aijob el -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.currentReplicas})" = 1 ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.placement[0].node})" != "$0" ]' "$N"
# kube-scheduler will refuse new pods on the filler's node; aiq does not
# read taints, so it sees 8 idle GPUs there once the filler is done.
kubectl taint node "$N" dedicated=inference:NoSchedule >/dev/null
wait_for 40 "the filler ends and el grows onto its node" sh -c '
  grep -q "event=job_growing obj=default/el .*from=1 to=2" "$T/op.log"'
# No growth after this one, so what the timeout leaves stays to be seen.
kubectl patch queuepolicy grow-test --type merge -p '{"spec":{"elastic":{"grow":false}}}' >/dev/null
# The operator dies mid-growth: the new one takes the growth up again from
# the status and the pods (the start timeout below still applies).
op_kill9
op_start --start-timeout 8s --grow-backoff 25s
wait_for 20 "after a restart mid-growth the growth is recovered" sh -c '
  grep -q "event=job_growth_recovered obj=default/el .*from=1 to=2" "$T/op.log"'
wait_for 10 "kube-scheduler refuses the grown pod (the taint)" sh -c '
  [ -z "$(kubectl get pod el-1 -o jsonpath={.spec.nodeName})" ] &&
  kubectl get pod el-1 -o jsonpath="{.status.conditions[?(@.type==\"PodScheduled\")].reason}" | grep -q Unschedulable'
wait_for 30 "after --start-timeout the growth is undone (job_grow_timeout)" sh -c '
  grep -q "event=job_grow_timeout obj=default/el .*from=2 back_to=1" "$T/op.log"'
wait_for 10 "condition Resized says GrowTimedOut" sh -c '
  [ "$(kubectl get aijob el -o jsonpath="{.status.conditions[?(@.type==\"Resized\")].reason}")" = GrowTimedOut ]'
wait_for 10 "a GrowTimedOut Event on the AIJob names the replica and the timeout" sh -c '
  kubectl get events --field-selector involvedObject.name=el \
    -o jsonpath="{range .items[*]}{.reason} {.message}{\"\\n\"}{end}" |
    grep -q "^GrowTimedOut replicas 1..1 did not all start within 8s: back to 1$"'
wait_for 20 "the grown replica is stopped and el runs on at 1 replica (not requeued)" sh -c '
  grep -q "event=job_resized obj=default/el .*replicas=1" "$T/op.log" &&
  [ "$(kubectl get aijob el -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob el -o jsonpath={.status.attempts})" = 1 ] &&
  ! grep -q "event=gang_down obj=default/el " "$T/op.log"'
check "job_grow_timeout names the node growth now avoids and for how long" \
  grep -q "event=job_grow_timeout obj=default/el .*avoid=$N avoid_for=25s" "$T/op.log"
# Growth on again: the only idle GPUs are on the refused node, so el waits.
kubectl patch queuepolicy grow-test --type merge -p '{"spec":{"elastic":{"grow":true}}}' >/dev/null
wait_for 10 "growth is on again" sh -c '
  kubectl get queuepolicy grow-test -o jsonpath={.spec.elastic.grow} | grep -q true'
sleep 5 # many cycles (--cycle-ms 300), well inside the back-off
check "during the back-off el does not grow onto the refused node again" sh -c '
  [ "$(grep -c "event=job_growing obj=default/el " "$T/op.log")" = 1 ]'
wait_for 40 "once the back-off is over el grows there again" sh -c '
  [ "$(grep -c "event=job_growing obj=default/el " "$T/op.log")" = 2 ]'
kubectl delete aijob el --wait=false >/dev/null
kubectl taint node "$N" dedicated- >/dev/null

e2e_done
