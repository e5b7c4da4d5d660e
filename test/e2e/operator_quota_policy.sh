#!/bin/sh
# operator_quota_policy.sh -- a group's GPU quota blocks a job and then
# admits it when quota frees up; UserQuotas that would pass the group
# quota are rejected with the reason; a QueuePolicy change reorders the
# queue; a broken policy reports line:column and never replaces the
# running one; a placement score (spec.placementScore) is accepted, places
# a gang as it says (spread: one replica per node, where binpack packs
# them on one node), and a broken one reports the field and line:column.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start

job() { # ns name priority replicas gpus duration [user]
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $2, namespace: $1}
spec:
  user: ${7:-alice}
  priority: $3
  replicas: $4
  resources: {gpus: $5, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
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
  level: 1
  namespaces: [team-a]
  quota: {gpus: 4}
  members: [{user: alice, level: 1}, {user: bob, level: 1}]
---
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: alice, namespace: team-a}
spec:
  user: alice
  quota: {gpus: 4}
Y
sleep 1
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: bob, namespace: team-a}
spec:
  user: bob
  quota: {gpus: 3}
Y
wait_for 10 "UserQuota within the group quota is accepted" sh -c '
  [ "$(kubectl get userquota alice -n team-a -o jsonpath={.status.accepted})" = true ]'
wait_for 10 "UserQuota passing the group quota is rejected with the reason" sh -c '
  [ "$(kubectl get userquota bob -n team-a -o jsonpath={.status.accepted})" = false ] &&
  [ "$(kubectl get userquota bob -n team-a -o jsonpath={.status.reason})" = ExceedsGroupQuota ] &&
  kubectl get userquota bob -n team-a -o jsonpath={.status.message} | grep -q "would be 7"'

job team-a q1 0 1 4 6s | kubectl apply -f - >/dev/null
wait_for 15 "q1 runs with the whole group quota" sh -c '
  [ "$(kubectl get aijob q1 -n team-a -o jsonpath={.status.phase})" = Running ]'
job team-a q2 0 1 2 5s | kubectl apply -f - >/dev/null
wait_for 10 "q2 waits on quota although GPUs are free" sh -c '
  [ "$(kubectl get aijob q2 -n team-a -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get aijob q2 -n team-a -o jsonpath={.status.conditions[0].reason})" = QuotaFull ] &&
  [ -z "$(kubectl get pods -n team-a -l aiq.dev/job=q2 -o jsonpath={.items[*].spec.nodeName})" ]'
check "the Group shows its usage" sh -c '
  [ "$(kubectl get group team -o jsonpath={.status.usage.gpus})" = 4 ]'
check "q2 is admitted once q1 finished" \
    kubectl wait --for=condition=Admitted aijob/q2 -n team-a --timeout=30s
check "q1 Succeeded" sh -c '[ "$(kubectl get aijob q1 -n team-a -o jsonpath={.status.phase})" = Succeeded ]'

# Policy: fill the cluster, queue two jobs, then flip the order.
job default hold 0 2 8 10m | kubectl apply -f - >/dev/null
wait_for 15 "the cluster is full" sh -c '[ "$(kubectl get aijob hold -o jsonpath={.status.phase})" = Running ]'
job default low 1 1 1 1m | kubectl apply -f - >/dev/null
job default high 100 1 1 1m | kubectl apply -f - >/dev/null
wait_for 10 "built-in policy: priority first" sh -c '
  [ "$(kubectl get aijob high -o jsonpath={.status.position})" = 1 ] &&
  [ "$(kubectl get aijob low -o jsonpath={.status.position})" = 2 ]'
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: humble}
spec:
  active: true
  formula: "100 - job.priority"
  levels: [{name: all}]
Y
wait_for 10 "the new policy reorders the queue" sh -c '
  [ "$(kubectl get aijob low -o jsonpath={.status.position})" = 1 ] &&
  [ "$(kubectl get aijob high -o jsonpath={.status.position})" = 2 ] &&
  [ "$(kubectl get aijob low -o jsonpath={.status.level})" = all ]'
check "the policy reports compiled and active" sh -c '
  [ "$(kubectl get queuepolicy humble -o jsonpath={.status.compiled}/{.status.active})" = true/true ]'
check "score terms explain the score" sh -c '
  kubectl get aijob low -o jsonpath={.status.scoreTerms[*].name} | grep -q "job.priority"'
check "the score terms add up to the score" sh -c '
  terms=$(kubectl get aijob low -o jsonpath="{.status.scoreTerms[*].value}")
  score=$(kubectl get aijob low -o jsonpath="{.status.score}")
  echo "terms=$terms score=$score"
  [ -n "$terms" ] && echo "$terms $score" | awk "{ s = 0; for (i = 1; i < NF; i++) s += \$i;
    d = s - \$NF; if (d < 0) d = -d; exit !(NF > 2 && d < 1e-9) }"'
# A rescore interval keeps scores between cycles: the CRD takes the field,
# the policy compiles and orders as before; a formula reading a factor
# that moves between rescores is refused, naming the field and the factor.
kubectl patch queuepolicy humble --type=merge \
  -p '{"spec":{"rescoreInterval":"1m","formula":"100 - job.priority + wait.hours / 1000"}}' >/dev/null
wait_for 10 "a policy with rescoreInterval compiles and keeps the order" sh -c '
  [ "$(kubectl get queuepolicy humble -o jsonpath={.spec.rescoreInterval}/{.status.compiled})" = 1m/true ] &&
  [ "$(kubectl get aijob low -o jsonpath={.status.position})" = 1 ] &&
  [ "$(kubectl get aijob high -o jsonpath={.status.position})" = 2 ]'
kubectl patch queuepolicy humble --type=merge \
  -p '{"spec":{"formula":"100 - job.priority + fairshare.user"}}' >/dev/null
wait_for 10 "rescoreInterval with fairshare.user is refused, naming both" sh -c '
  [ "$(kubectl get queuepolicy humble -o jsonpath={.status.compiled})" = false ] &&
  kubectl get queuepolicy humble -o jsonpath={.status.error} |
    grep -q "spec.rescoreInterval: spec.formula reads fairshare.user"'
kubectl patch queuepolicy humble --type=merge -p '{"spec":{"formula":"100 - job.prio"}}' >/dev/null
wait_for 10 "a broken edit reports line:column" sh -c '
  [ "$(kubectl get queuepolicy humble -o jsonpath={.status.compiled})" = false ] &&
  kubectl get queuepolicy humble -o jsonpath={.status.error} | grep -q "1:7"'
sleep 1
check "the broken edit did not replace the running policy" sh -c '
  [ "$(kubectl get aijob low -o jsonpath={.status.position})" = 1 ]'
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: second}
spec:
  active: true
  formula: "job.priority"
  levels: [{name: all}]
Y
wait_for 10 "two active policies are a conflict reported in status" sh -c '
  kubectl get queuepolicy second -o jsonpath={.status.message} | grep -q conflict'

# Placement scores: the built-in binpack puts a 2 x 1-GPU gang on one
# node; the spread preset's score puts its replicas on different nodes.
kubectl delete queuepolicy humble second >/dev/null
kubectl delete aijob hold low high >/dev/null
job default pack 0 2 1 10m | kubectl apply -f - >/dev/null
wait_for 20 "binpack (no placement score): both replicas on one node" sh -c '
  [ "$(kubectl get aijob pack -o jsonpath={.status.phase})" = Running ] &&
  a=$(kubectl get aijob pack -o jsonpath={.status.placement[0].node}) &&
  [ -n "$a" ] && [ "$a" = "$(kubectl get aijob pack -o jsonpath={.status.placement[1].node})" ]'
kubectl delete aijob pack >/dev/null
sed 's/^  name: spread$/  name: place/; s/^  backfill: Easy$/  backfill: Easy\n  active: true/' \
    "$ROOT/examples/policies/spread.yaml" | kubectl apply -f - >/dev/null
wait_for 10 "a policy with a placement score is accepted and compiled" sh -c '
  [ "$(kubectl get queuepolicy place -o jsonpath={.status.compiled}/{.status.active})" = true/true ] &&
  kubectl get queuepolicy place -o jsonpath={.spec.placementScore} | grep -q gang.same_node &&
  kubectl get queuepolicy place -o wide | grep -q "gang.same_node"'
job default apart 0 2 1 10m | kubectl apply -f - >/dev/null
wait_for 20 "the spread score places the gang's replicas on different nodes" sh -c '
  [ "$(kubectl get aijob apart -o jsonpath={.status.phase})" = Running ] &&
  a=$(kubectl get aijob apart -o jsonpath={.status.placement[0].node}) &&
  b=$(kubectl get aijob apart -o jsonpath={.status.placement[1].node}) &&
  [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]'
kubectl patch queuepolicy place --type=merge -p '{"spec":{"placementScore":"- job.gpus"}}' >/dev/null
wait_for 10 "a broken placement score names the field and line:column" sh -c '
  [ "$(kubectl get queuepolicy place -o jsonpath={.status.compiled})" = false ] &&
  kubectl get queuepolicy place -o jsonpath={.status.error} | grep -q "spec.placementScore: 1:3: .job.gpus. is a job factor"'
e2e_done
