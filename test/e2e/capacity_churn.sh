#!/bin/sh
# servers: local real
# capacity_churn.sh -- capacity that comes and goes (issue 19): a node
# that leaves the usable set for two seconds (its GPU memory label taken
# away, so aiq leaves it out) does not make a 2x8 gang that needs it
# Rejected: it waits, says why, and runs when the node is back. A node
# gone longer than --capacity-grace rejects the gang ("can never fit");
# when the node comes back the gang is examined again and runs. Two nodes
# uncordoned by one command are placed by one cycle (the operator lets a
# stream of Node events settle first), both waiting jobs admitted in it.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
# The grace is long enough for the first part's kubectl round trips on a
# busy machine (a real API server answers each in a few hundred ms): the
# blip check must fall inside it, or it tests nothing.
op_start --capacity-grace 15s
N1=$(kubectl get nodes -o jsonpath='{.items[1].metadata.name}')
MEM=$(kubectl get node "$N1" -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.memory}')

gang() { # name
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: carol
  replicas: 2
  resources: {gpus: 8, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 3s}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
phase() { kubectl get aijob "$1" -o jsonpath='{.status.phase}'; }
check "node $N1 carries its GPU memory label ($MEM)" [ -n "$MEM" ]

# --- two seconds without the node: the gang waits ------------------------------
kubectl label node "$N1" nvidia.com/gpu.memory- >/dev/null
GONE=$(date +%s)
sleep 0.5
gang blip | kubectl apply -f - >/dev/null
wait_for 10 "the gang that cannot fit now waits, saying the nodes changed" sh -c '
  [ "$(kubectl get aijob blip -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob blip -o jsonpath={.status.message} | grep -q "rejected only if it still cannot fit"'
sleep 1
echo "the node has been away $(( $(date +%s) - GONE )) s of the 15 s grace"
check "it is not Rejected within the grace" sh -c '[ "$(kubectl get aijob blip -o jsonpath={.status.phase})" != Rejected ]'
kubectl label node "$N1" "nvidia.com/gpu.memory=$MEM" >/dev/null
wait_for 30 "the node is back: the gang runs and succeeds" sh -c '
  [ "$(kubectl get aijob blip -o jsonpath={.status.phase})" = Succeeded ]'
check "blip was never Rejected (attempts 1)" sh -c '
  [ "$(kubectl get aijob blip -o jsonpath={.status.attempts})" = 1 ] &&
  ! grep "event=job_rejected obj=default/blip " "$T/op.log" | grep -q .'

# --- gone past the grace: Rejected, then examined again when it returns --------
kubectl label node "$N1" nvidia.com/gpu.memory- >/dev/null
sleep 0.5
gang long | kubectl apply -f - >/dev/null
wait_for 40 "past --capacity-grace the gang is Rejected (GangTooBig)" sh -c '
  [ "$(kubectl get aijob long -o jsonpath={.status.phase})" = Rejected ] &&
  [ "$(kubectl get aijob long -o jsonpath="{.status.conditions[?(@.type==\"Rejected\")].reason}")" = GangTooBig ]'
check "a Rejected gang keeps no pods" sh -c '[ -z "$(kubectl get pods -l aiq.dev/job=long -o name)" ]'
kubectl label node "$N1" "nvidia.com/gpu.memory=$MEM" >/dev/null
wait_for 30 "the node returns: the Rejected gang is examined again and succeeds" sh -c '
  [ "$(kubectl get aijob long -o jsonpath={.status.phase})" = Succeeded ]'
check "the operator logged the requeue with the old reason" \
    grep -q "event=job_requeued obj=default/long .*reason=NodesChanged was=GangTooBig" "$T/op.log"
check "a Requeued Event was posted" sh -c '
  kubectl get events --field-selector involvedObject.name=long -o jsonpath="{range .items[*]}{.reason}{\"\\n\"}{end}" | grep -q Requeued'

# --- nodes that come back together are placed in one cycle ---------------------
# Both nodes cordoned, one whole-node job for each; one `kubectl uncordon`
# of both. The operator (cycles 3 s apart at rest, so the first Node
# event would otherwise start a cycle at once) waits until no Node has
# become placeable for a tenth of a second: one cycle sees both nodes and
# admits both jobs (docs/operator.md, "The loop").
op_kill9
op_start --cycle-ms 3000
N0=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
kubectl cordon "$N0" "$N1" >/dev/null
whole() { # name
    gang "$1" | sed 's/replicas: 2/replicas: 1/'
}
whole pair-a | kubectl apply -f - >/dev/null
whole pair-b | kubectl apply -f - >/dev/null
wait_for 20 "both jobs wait on the cordoned nodes (Queued)" sh -c '
  [ "$(kubectl get aijob pair-a -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get aijob pair-b -o jsonpath={.status.phase})" = Queued ]'
sleep 3.5 # past the next cycle at rest: the uncordon comes to an idle loop
L=$(($(wc -l <"$T/op.log") + 1))
kubectl uncordon "$N0" "$N1" >/dev/null
wait_for 30 "uncordoned together: both jobs are admitted" sh -c '
  for j in pair-a pair-b; do
    case "$(kubectl get aijob $j -o jsonpath={.status.phase})" in
    Admitted|Running|Succeeded) ;; *) exit 1 ;; esac
  done'
UA=$(jp aijob pair-a '{.metadata.uid}')
UB=$(jp aijob pair-b '{.metadata.uid}')
check "both admissions are one cycle's (journal decisions)" eq "$(sqlite3 "$T/op.db" \
    "SELECT count(DISTINCT cycle) || ' ' || count(*) FROM decisions WHERE action = 'admit' AND job_uid IN ('$UA', '$UB')")" "1 2"
check "that cycle waited for the nodes to settle (log nodes_settled)" \
    sh -c "tail -n +$L '$T/op.log' | grep -q 'event=nodes_settled .*waited_ms='"
e2e_done
