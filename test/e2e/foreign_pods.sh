#!/bin/sh
# servers: local real
# foreign_pods.sh -- capacity from every pod and odd nodes (issue 15):
# a DaemonSet-like pod aiq does not run holds node-a's 8 GPUs, so aiq
# places on node-b and then waits instead of admitting onto taken GPUs;
# node-nomem (GPUs, no nvidia.com/gpu.memory label) is left out with a
# reason (Event on the Node, aiq_nodes_excluded, `kubectl aiq nodes`)
# while the others keep admitting; a released pod kube-scheduler refuses
# (a taint aiq does not read) requeues its gang within seconds with the
# scheduler's reason, not after the 5-minute start timeout.
. "$(dirname "$0")/lib.sh"
# jp as a command, for the sh -c checks.
printf '#!/bin/sh\nexec kubectl get "$1" "$2" -n "${4:-default}" -o "jsonpath=$3"\n' >"$T/jp"
chmod +x "$T/jp"
export PATH="$T:$BUILD:$PATH"

e2e_start --nodes "$ROOT/test/e2e/nodes-foreign.yaml" --time-scale 1
op_start

job() { # name gpus duration
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  replicas: 1
  backoffLimit: 5
  resources: {gpus: $2, gpuMemoryMiB: 40960, cpu: "2", memory: 4Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $3}
    spec:
      containers: [{name: w, image: busybox}]
Y
}

# A pod aiq does not run, bound straight to node-a like a DaemonSet's.
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: gpu-hog
  namespace: default
  annotations: {sim.aiq.dev/duration: 10m}
spec:
  nodeName: node-a
  containers:
  - name: hog
    image: busybox
    resources: {limits: {nvidia.com/gpu: "8", cpu: "1", memory: 1Gi}}
Y
wait_for 30 "the foreign pod runs on node-a" sh -c '[ "$(jp pod gpu-hog {.status.phase})" = Running ]'

job fits 8 10m | kubectl apply -f - >/dev/null
wait_for 30 "an 8-GPU job is placed on node-b, not on node-a's taken GPUs" sh -c '
  [ "$(jp aijob fits {.status.placement[0].node})" = node-b ]'
wait_for 30 "and runs" sh -c '[ "$(jp aijob fits {.status.phase})" = Running ]'

job waits 4 10m | kubectl apply -f - >/dev/null
wait_for 15 "a 4-GPU job waits: node-a is held by the foreign pod, node-nomem is left out" sh -c '
  [ "$(jp aijob waits {.status.phase})" = Queued ] && jp aijob waits {.status.message} | grep -qi gpu'
sleep 3
check "it is still Queued and none of its pods is bound" sh -c '
  [ "$(jp aijob waits {.status.phase})" = Queued ] &&
  [ -z "$(kubectl get pods -l aiq.dev/job=waits -o jsonpath="{.items[*].spec.nodeName}")" ]'
check "the cycles keep running (no cycle_failed)" sh -c '! grep -q "event=cycle_failed" "$T/op.log"'

check "kubectl aiq nodes lists node-nomem as Excluded with the reason" sh -c '
  kubectl aiq nodes --no-color >"$T/nodes.out" 2>&1; cat "$T/nodes.out"
  grep "^node-nomem " "$T/nodes.out" | grep -q "Excluded: MissingGPUMemory" &&
  grep "^node-nomem " "$T/nodes.out" | grep -q "nvidia.com/gpu.memory" &&
  grep "^node-a " "$T/nodes.out" | grep -q Ready'
check "kubectl aiq nodes counts the foreign pod and aiq's job" sh -c '
  kubectl aiq nodes -o json >"$T/nodes.json" &&
  python3 - "$T/nodes.json" <<P
import json, sys
d = {n["name"]: n for n in json.load(open(sys.argv[1]))["items"]}
assert d["node-a"]["otherGPUs"] == 8, d["node-a"]
assert d["node-b"]["aiqGPUs"] == 8, d["node-b"]
assert d["node-nomem"]["reason"] == "MissingGPUMemory", d["node-nomem"]
P'
wait_for 15 "a NodeExcluded Event on node-nomem names the label" sh -c '
  kubectl get events -A --field-selector involvedObject.name=node-nomem -o jsonpath="{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}" |
  grep "NodeExcluded" | grep -q "nvidia.com/gpu.memory"'
check "aiq_nodes_excluded and aiq_foreign_pods on /metrics" sh -c '
  port=$(sed -n "s/.*event=metrics_listening port=\([0-9]*\).*/\1/p" "$T/op.log" | head -1)
  curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics" &&
  grep -q "^aiq_nodes_excluded{reason=\"MissingGPUMemory\"} 1$" "$T/metrics" &&
  grep -q "^aiq_foreign_pods 1$" "$T/metrics"'

# The foreign pod goes: its GPUs are free again.
kubectl delete pod gpu-hog --wait=false >/dev/null
wait_for 40 "once the foreign pod is gone the waiting job is admitted on node-a" sh -c '
  [ "$(jp aijob waits {.status.placement[0].node})" = node-a ]'
wait_for 30 "and runs" sh -c '[ "$(jp aijob waits {.status.phase})" = Running ]'

# The memory label arrives: the node is used again, with an Event.
kubectl label node node-nomem nvidia.com/gpu.memory=81920 >/dev/null
wait_for 15 "node-nomem is Ready once labelled" sh -c '
  kubectl aiq nodes --no-color | grep "^node-nomem " | grep -q Ready'
wait_for 15 "a NodeIncluded Event says so" sh -c '
  kubectl get events -A --field-selector involvedObject.name=node-nomem -o jsonpath="{range .items[*]}{.reason}{\"\\n\"}{end}" | grep -q NodeIncluded'
kubectl label node node-nomem nvidia.com/gpu.memory- >/dev/null

# kube-scheduler refuses what aiq placed: node-a has 4 free GPUs in aiq's
# view but a NoSchedule taint aiq does not read.
kubectl taint node node-a dedicated=inference:NoSchedule >/dev/null
start=$(date +%s)
job refused 2 10m | kubectl apply -f - >/dev/null
wait_for 30 "the refused gang is requeued with reason Unschedulable" sh -c '
  kubectl get aijob refused -o jsonpath="{.status.message}" | grep -q "unschedulable" &&
  [ "$(kubectl get aijob refused -o jsonpath={.status.attempts})" -ge 1 ]'
check "well before the start timeout" sh -c "[ \$((\$(date +%s) - $start)) -lt 60 ]"
check "the message carries the scheduler's reason" sh -c '
  jp aijob refused {.status.message}; echo
  jp aijob refused {.status.message} | grep -q "pinned to node node-a is unschedulable: 0/3 nodes are available"'
wait_for 10 "an Unschedulable Event on the AIJob" sh -c '
  kubectl get events --field-selector involvedObject.name=refused -o jsonpath="{range .items[*]}{.reason}{\"\\n\"}{end}" | grep -q Unschedulable'
check "the operator logged gang_down reason=Unschedulable" grep -q "event=gang_down obj=default/refused .*reason=Unschedulable" "$T/op.log"

e2e_done
