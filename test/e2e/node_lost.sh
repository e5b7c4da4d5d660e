#!/bin/sh
# servers: local real
# node_lost.sh -- a running gang whose node goes away (issue 19): the node
# deleted, or NotReady, for longer than --node-lost-timeout ends the
# attempt as a node failure: status.nodeFailures counts it, backoffLimit
# does not (the job has backoffLimit 0 and is never Failed), the pod on
# the lost node is deleted without grace (no kubelet is left to confirm a
# graceful stop), and the gang is requeued at once and runs elsewhere.
# Nothing is placed on a NotReady node; when it is Ready again, the
# waiting gang runs on it.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start --node-lost-timeout 5s --capacity-grace 60s
PORT=$(sed -n 's/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)

cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: train, namespace: default}
spec:
  user: carol
  backoffLimit: 0
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 600s}
    spec:
      terminationGracePeriodSeconds: 30
      containers: [{name: w, image: busybox}]
Y
phase() { kubectl get aijob train -o jsonpath='{.status.phase}'; }
podnode() { kubectl get pod train-0 -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
wait_for 30 "train runs" sh -c '[ "$(kubectl get aijob train -o jsonpath={.status.phase})" = Running ]'
N1=$(podnode)
check "its pod is bound to a node ($N1)" [ -n "$N1" ]

# ---- the node is deleted ---------------------------------------------------
kubectl delete node "$N1" >/dev/null
wait_for 10 "the operator sees the node gone and says it waits for it" \
    grep -q "event=node_lost obj=default/train .*node $N1 of replica 0 was deleted" "$T/op.log"
check "within the timeout the job still runs" sh -c '[ "$(kubectl get aijob train -o jsonpath={.status.phase})" = Running ]'
wait_for 30 "past --node-lost-timeout the gang is requeued as NodeLost" \
    grep -q "event=gang_down obj=default/train .*reason=NodeLost attempts=1 next=Queued" "$T/op.log"
check "the pod on the deleted node was deleted without grace" \
    grep -q "event=pod_deleted obj=default/train-0 .*grace=0 node=$N1" "$T/op.log"
wait_for 40 "train runs again, on the other node" sh -c '
  [ "$(kubectl get aijob train -o jsonpath={.status.phase})" = Running ] &&
  n=$(kubectl get pod train-0 -o jsonpath={.spec.nodeName}) && [ -n "$n" ] && [ "$n" != "$0" ]' "$N1"
check "status: attempts 2, nodeFailures 1" sh -c '
  [ "$(kubectl get aijob train -o jsonpath={.status.attempts})" = 2 ] &&
  [ "$(kubectl get aijob train -o jsonpath={.status.nodeFailures})" = 1 ]'
check "a NodeLost Event names the node" sh -c '
  kubectl get events --field-selector involvedObject.name=train,reason=NodeLost \
    -o jsonpath="{.items[*].message}" | grep -q "node $0 of replica 0 was deleted"' "$N1"
check "metrics: aiq_node_failures_total 1" sh -c '
  curl -s "http://127.0.0.1:$0/metrics" | grep -qx "aiq_node_failures_total 1"' "$PORT"

# ---- the remaining node turns NotReady --------------------------------------
N2=$(podnode)
notready() { # node status reason
    kubectl patch node "$1" --subresource=status --type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\",\"reason\":\"$3\",\"message\":\"set by node_lost.sh\",\"lastHeartbeatTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"lastTransitionTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}]}}" >/dev/null
}
notready "$N2" False KubeletNotReady
check "node $N2 reads NotReady" sh -c '
  [ "$(kubectl get node "$0" -o jsonpath="{.status.conditions[?(@.type==\"Ready\")].status}")" = False ]' "$N2"
wait_for 30 "past the timeout the gang is requeued again (NodeLost, NotReady)" \
    grep -q "event=gang_down obj=default/train .*reason=NodeLost attempts=2 next=Queued .*node $N2 of replica 0 is NotReady (KubeletNotReady)" "$T/op.log"
wait_for 20 "with no Ready node it waits Queued, not Failed, nodeFailures 2" sh -c '
  [ "$(kubectl get aijob train -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get aijob train -o jsonpath={.status.nodeFailures})" = 2 ] &&
  [ -z "$(kubectl get pod train-0 -o jsonpath={.spec.nodeName} 2>/dev/null)" ]'
sleep 2
check "nothing is placed on the NotReady node" sh -c '
  [ "$(kubectl get aijob train -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(grep -c "event=job_admitted obj=default/train " "$T/op.log")" = 2 ]'
notready "$N2" True KubeletReady
wait_for 30 "the node is Ready again: train runs there (attempt 3)" sh -c '
  [ "$(kubectl get aijob train -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob train -o jsonpath={.status.attempts})" = 3 ] &&
  [ "$(kubectl get pod train-0 -o jsonpath={.spec.nodeName})" = "$0" ]' "$N2"
# The journal, read once the operator is stopped.
kill "$OP_PID" 2>/dev/null
wait "$OP_PID" 2>/dev/null
OP_PID=""
check "the journal ends both attempts as NodeLost (not Failed), each requeued without backoff" sh -c '
  "$0" export --db "$T/op.db" --out "$T/j.jsonl" >/dev/null 2>&1 || exit 1
  [ "$(grep "\"kind\":\"job_departure\"" "$T/j.jsonl" | grep -c "\"outcome\":\"NodeLost\"")" = 2 ] &&
  [ "$(grep "\"kind\":\"job_requeue\"" "$T/j.jsonl" | grep -c "\"reason\":\"NodeLost\"")" = 2 ] &&
  ! grep "\"kind\":\"job_departure\"" "$T/j.jsonl" | grep -q "\"outcome\":\"Failed\""' "$BUILD/aiq-sim"
e2e_done
