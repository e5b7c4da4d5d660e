#!/bin/sh
# operator_gang.sh -- an 8-replica gang stays gated until 8 GPUs are free,
# then all 8 pods are ungated in one pass and land where the placement
# said; `kubectl wait --for=condition=Admitted` works; a bad AIJob is
# Rejected with its message; a gang bigger than any node is Rejected; a
# burst of 300 pods is created over several loop turns, all of them.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start

job() { # name replicas gpus duration
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  replicas: $2
  resources: {gpus: $3, gpuMemoryMiB: 40960, cpu: "2", memory: 4Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $4}
    spec:
      containers: [{name: w, image: busybox}]
Y
}

# 8 + 2 GPUs busy: 6 of 16 free.
job hold-8 1 8 10m | kubectl apply -f - >/dev/null
job hold-2 1 2 8s | kubectl apply -f - >/dev/null
wait_for 20 "blockers run" sh -c '[ "$(kubectl get aijob hold-8 -o jsonpath={.status.phase})" = Running ] && [ "$(kubectl get aijob hold-2 -o jsonpath={.status.phase})" = Running ]'

job gang 8 1 10m | kubectl apply -f - >/dev/null
wait_for 10 "gang is Queued with 8 gated pods" sh -c '
  [ "$(kubectl get aijob gang -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get pods -l aiq.dev/job=gang -o name | wc -l)" = 8 ] &&
  [ "$(kubectl get pods -l aiq.dev/job=gang -o jsonpath="{range .items[*]}{.spec.schedulingGates[0].name}{\"\\n\"}{end}" | grep -c aiq.dev/admission)" = 8 ]'
check "no gang pod is bound while 6 GPUs are free" sh -c '
  [ -z "$(kubectl get pods -l aiq.dev/job=gang -o jsonpath="{.items[*].spec.nodeName}")" ]'
wait_for 10 "the status says why it waits" sh -c '
  kubectl get aijob gang -o jsonpath={.status.message} | grep -qi gpu'
check "pods carry owner, labels and env" sh -c '
  [ "$(kubectl get pod gang-3 -o jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller})" = AIJob/gang/true ] &&
  [ "$(kubectl get pod gang-3 -o jsonpath={.metadata.labels.aiq\\.dev/replica-index})" = 3 ] &&
  kubectl get pod gang-3 -o jsonpath="{.spec.containers[0].env}" | grep -q AIQ_REPLICA_COUNT &&
  [ "$(kubectl get pod gang-3 -o jsonpath="{.spec.containers[0].resources.limits.nvidia\\.com/gpu}")" = 1 ]'

# hold-2 finishes after 8 s: 8 GPUs free, the gang is admitted.
check "kubectl wait --for=condition=Admitted" \
    kubectl wait --for=condition=Admitted aijob/gang --timeout=40s
wait_for 10 "all 8 pods released in one pass" sh -c '
  grep "event=gang_released obj=default/gang " "$T/op.log" | grep -q "pods=8 replicas=8"'
wait_for 15 "all 8 pods ungated and bound" sh -c '
  [ "$(kubectl get pods -l aiq.dev/job=gang -o jsonpath="{range .items[*]}{.spec.schedulingGates}{\"\\n\"}{end}" | grep -c admission)" = 0 ] &&
  [ "$(kubectl get pods -l aiq.dev/job=gang -o jsonpath="{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}" | grep -c .)" = 8 ]'
check "each pod landed where the placement said" sh -c '
  for i in 0 1 2 3 4 5 6 7; do
    want=$(kubectl get aijob gang -o jsonpath="{.status.placement[$i].node}")
    rep=$(kubectl get aijob gang -o jsonpath="{.status.placement[$i].replica}")
    got=$(kubectl get pod gang-$rep -o jsonpath={.spec.nodeName})
    gi=$(kubectl get pod gang-$rep -o jsonpath="{.metadata.annotations.aiq\\.dev/gpu-indexes}")
    [ -n "$want" ] && [ "$want" = "$got" ] && [ -n "$gi" ] || { echo "replica $rep: placement $want, bound $got, gpus [$gi]"; exit 1; }
  done'
wait_for 20 "the gang runs" sh -c '[ "$(kubectl get aijob gang -o jsonpath={.status.phase})" = Running ]'
check "Events recorded for the AIJob" sh -c 'kubectl describe aijob gang | grep -q Admitted'

# Bad AIJobs: accepted by the API server's schema, refused by the operator.
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: bad-model, namespace: default}
spec:
  user: alice
  resources: {gpus: 1, cpu: "1e30"}
Y
wait_for 10 "invalid AIJob is Rejected naming the field" sh -c '
  [ "$(kubectl get aijob bad-model -o jsonpath={.status.phase})" = Rejected ] &&
  kubectl get aijob bad-model -o jsonpath={.status.message} | grep -q "spec.resources.cpu.*1e30" &&
  kubectl get aijob bad-model -o jsonpath="{.status.conditions[?(@.type==\"Rejected\")].status}" | grep -q True'
check "a rejected AIJob gets no pods" sh -c '[ -z "$(kubectl get pods -l aiq.dev/job=bad-model -o name)" ]'
job too-big 1 16 1m | kubectl apply -f - >/dev/null
wait_for 10 "a replica bigger than any node is Rejected" sh -c '
  [ "$(kubectl get aijob too-big -o jsonpath={.status.phase})" = Rejected ] &&
  [ -n "$(kubectl get aijob too-big -o jsonpath={.status.message})" ] &&
  [ -z "$(kubectl get pods -l aiq.dev/job=too-big -o name)" ]'
# A template with required node affinity of its own, including a
# metadata.name field requirement: the release may only append to each
# term (a real API server refuses any other change of a gated pod's
# affinity with 422), so both terms keep theirs and gain the node. The
# two long jobs make room for it first.
kubectl delete aijob gang hold-8 --wait=false >/dev/null
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: pinned, namespace: default}
spec:
  user: alice
  replicas: 2
  resources: {gpus: 1, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 5s}
    spec:
      containers: [{name: w, image: busybox}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: aiq.dev/domain, operator: In, values: [train]}]
              matchFields: [{key: metadata.name, operator: NotIn, values: [retired-node]}]
Y
wait_for 90 "a template with its own node affinity is released and runs" sh -c '
  case "$(kubectl get aijob pinned -o jsonpath={.status.phase})" in Running|Succeeded) exit 0 ;; esac; exit 1'
check "its pods keep the template's requirements and gain the node" sh -c '
  kubectl get pod pinned-0 -o jsonpath="{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[*].values[*]}" |
    grep -Eq "^retired-node gpu-[01]$"'
check "metrics count the admissions" sh -c '
  port=$(sed -n "s/.*event=metrics_listening port=\([0-9]*\).*/\1/p" "$T/op.log" | head -1)
  curl -sf "http://127.0.0.1:$port/metrics" | grep -q "^aiq_admitted_total [3-9]" &&
  curl -sf "http://127.0.0.1:$port/readyz" | grep -q ok'

# More gated pods at once than one loop turn creates (SRV_PODS_PER_TURN,
# 250): 150 gangs of 2 applied while the operator is down reach the next
# one in its first list, 300 pods due in one turn. They go out over
# several turns (a batch of 250, then the rest), every one of them; a few
# gangs run, hold-8 keeps the rest waiting.
op_kill9
mv "$T/op.log" "$T/op1.log" # op_start waits for the new operator's "ready"
for i in $(seq 1 150); do echo ---; job "burst$i" 2 1 10m; done | kubectl apply -f - >/dev/null
op_start
wait_for 120 "all 150 burst gangs are past Pending (Queued or further)" sh -c '
  [ "$(kubectl get aijobs -o jsonpath="{range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}" |
      grep "^burst" | grep -cE " (Queued|Admitted|Running)$")" = 150 ]'
check "with their 300 pods" sh -c '
  [ "$(kubectl get pods -o name | grep -c "^pod/burst")" = 300 ]'
check "created 250 in the first turn, the rest later, no batch larger" sh -c '
  sed -n "s/.*event=pods_batch pods=\([0-9]*\).*/\1/p" "$T/op.log" > "$T/batches" &&
  [ "$(head -1 "$T/batches")" = 250 ] && [ "$(sort -n "$T/batches" | tail -1)" = 250 ] &&
  [ "$(awk "{ s += \$1 } END { print s }" "$T/batches")" -ge 300 ]'
e2e_done
