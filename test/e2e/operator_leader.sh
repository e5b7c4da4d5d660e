#!/bin/sh
# operator_leader.sh -- two operators with --leader-elect: exactly one
# holds the coordination.k8s.io Lease and acts; when it is killed the
# standby takes the lease over (after the 15 s lease duration) and the
# queue keeps moving, without duplicate pods.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start --leader-elect --namespace default --identity op-a
A_PID=$OP_PID
"$BUILD/aiq-operator" --kubeconfig "$T/kubeconfig" --db "$T/op-b.db" --metrics-addr 127.0.0.1:0 \
    --cycle-ms 300 --log-level debug --leader-elect --namespace default --identity op-b --ungrouped run \
    >"$T/op-b.log" 2>&1 &
B_PID=$!
trap 'rc=$?; kill $B_PID 2>/dev/null; wait $B_PID 2>/dev/null; e2e_cleanup $rc' EXIT

job() {
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: dan
  replicas: 2
  resources: {gpus: 1, gpuMemoryMiB: 1024, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 2s}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
wait_for 10 "op-a holds the Lease" sh -c '
  [ "$(kubectl get lease aiq-operator -o jsonpath={.spec.holderIdentity})" = op-a ]'
job one | kubectl apply -f - >/dev/null
wait_for 15 "the leader runs the queue" sh -c '[ "$(kubectl get aijob one -o jsonpath={.status.phase})" = Succeeded ]'
check "the standby did not act" sh -c '! grep -q "event=job_admitted" "$T/op-b.log"'
kill -9 "$A_PID"; wait "$A_PID" 2>/dev/null; OP_PID=""
job two | kubectl apply -f - >/dev/null
wait_for 30 "op-b takes the Lease over" sh -c '
  [ "$(kubectl get lease aiq-operator -o jsonpath={.spec.holderIdentity})" = op-b ] &&
  [ "$(kubectl get lease aiq-operator -o jsonpath={.spec.leaseTransitions})" -ge 1 ]'
wait_for 20 "the new leader runs the queue" sh -c '[ "$(kubectl get aijob two -o jsonpath={.status.phase})" = Succeeded ]'
check "one pod per replica" sh -c '[ "$(kubectl get pods -l aiq.dev/job=two -o name | wc -l)" = 2 ]'
# op-b first saw job one by its watch, already Succeeded: it takes the
# job's state from the live status (job_load, not a listed preload), and
# the finished job stays as it was, not run again.
check "the new leader took the finished job from its status" \
    grep -q "event=job_loaded obj=default/one .*phase=Succeeded attempts=1" "$T/op-b.log"
check "the finished job is left as it was" sh -c '
  [ "$(kubectl get aijob one -o jsonpath={.status.phase}/{.status.attempts})" = Succeeded/1 ] &&
  ! grep -q "event=job_admitted obj=default/one" "$T/op-b.log"'
e2e_done
