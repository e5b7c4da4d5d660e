#!/bin/sh
# servers: local real
# group_conflict.sh -- jobs and Groups (issue 15): with the default
# --ungrouped wait, a job in a namespace no Group claims waits and says
# why, and runs once a Group claims it; two Groups claiming one namespace
# both get a Conflict condition naming the other, and that namespace's
# new jobs wait with a message naming both until one lets go; with
# --ungrouped GROUP such jobs count in that Group, and wait, saying so,
# when that Group does not exist; a restart does not tell a waiting job's
# NoGroup Event again.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start --ungrouped wait
# (apply sends JSON; kubectl create namespace sends protobuf, which the
# local server does not read)
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n' |
    kubectl apply -f - >/dev/null

job() { # name namespace
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: $2}
spec:
  user: carol
  replicas: 1
  resources: {gpus: 1, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 2s}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
group() { # name namespace...
    n=$1; shift
    printf 'apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: %s}\nspec:\n  namespaces: [%s]\n  quota: {gpus: 8}\n' \
        "$n" "$(echo "$@" | tr ' ' ',')"
}
st() { kubectl get aijob "$1" -n "$2" -o "jsonpath={.status.$3}"; }
cond() { # group type field
    kubectl get group "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].$3}"
}

# --- no Group: the job waits and says so -------------------------------------
job lonely team-a | kubectl apply -f - >/dev/null
wait_for 15 "a job in a namespace no Group claims waits, naming the namespace" sh -c '
  [ "$(kubectl get aijob lonely -n team-a -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob lonely -n team-a -o jsonpath={.status.message} | grep -q "no Group claims namespace team-a"'
sleep 2
check "it is not admitted meanwhile" [ "$(st lonely team-a phase)" = Queued ]
check "a NoGroup Event says so" sh -c '
  kubectl get events -n team-a --field-selector involvedObject.name=lonely -o jsonpath="{range .items[*]}{.reason}{\"\\n\"}{end}" | grep -q NoGroup'
check "it says so once, not again at each sync after its Queued Event" sh -c '
  r=$(kubectl get events -n team-a --field-selector involvedObject.name=lonely -o jsonpath="{range .items[*]}{.reason}{\"\\n\"}{end}")
  [ "$(echo "$r" | grep -c "^NoGroup$")" = 1 ] && echo "$r" | grep -q "^Queued$"'

# --- a Group claims it: the job runs ---------------------------------------------
group ga team-a | kubectl apply -f - >/dev/null
wait_for 30 "once Group ga claims team-a the job runs and succeeds, counted in ga" sh -c '
  [ "$(kubectl get aijob lonely -n team-a -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob lonely -n team-a -o jsonpath={.status.group})" = ga ]'
wait_for 10 "ga has no conflict" sh -c '
  [ "$(kubectl get group ga -o "jsonpath={.status.conditions[?(@.type==\"Conflict\")].status}")" = False ]'

# --- two Groups on one namespace: Conflict on both, jobs wait ---------------------
group gb team-a | kubectl apply -f - >/dev/null
wait_for 15 "both Groups get Conflict=True naming the other" sh -c '
  [ "$(kubectl get group ga -o "jsonpath={.status.conditions[?(@.type==\"Conflict\")].status}")" = True ] &&
  [ "$(kubectl get group gb -o "jsonpath={.status.conditions[?(@.type==\"Conflict\")].status}")" = True ] &&
  kubectl get group ga -o "jsonpath={.status.conditions[?(@.type==\"Conflict\")].message}" | grep -q "namespace team-a is also claimed by Group gb" &&
  kubectl get group gb -o "jsonpath={.status.conditions[?(@.type==\"Conflict\")].message}" | grep -q "namespace team-a is also claimed by Group ga"'
job torn team-a | kubectl apply -f - >/dev/null
wait_for 15 "a new job there waits with a message naming both Groups" sh -c '
  [ "$(kubectl get aijob torn -n team-a -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob torn -n team-a -o jsonpath={.status.message} | grep -q "claimed by Groups ga and gb"'
sleep 2
check "it is not admitted meanwhile" [ "$(st torn team-a phase)" = Queued ]
kubectl delete group gb >/dev/null
wait_for 30 "gb lets go: the job runs in ga and the conflict clears" sh -c '
  [ "$(kubectl get aijob torn -n team-a -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob torn -n team-a -o jsonpath={.status.group})" = ga ] &&
  [ "$(kubectl get group ga -o "jsonpath={.status.conditions[?(@.type==\"Conflict\")].status}")" = False ]'

# --- --ungrouped GROUP: jobs of unclaimed namespaces count there ------------------
op_kill9
mv "$T/op.log" "$T/op1.log" # op_start waits for the new operator's "ready"
op_start --ungrouped ga
job adopted team-b | kubectl apply -f - >/dev/null
wait_for 30 "with --ungrouped ga a job in unclaimed team-b runs counted in ga" sh -c '
  [ "$(kubectl get aijob adopted -n team-b -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob adopted -n team-b -o jsonpath={.status.group})" = ga ]'

# --- --ungrouped naming a Group that does not exist: the jobs wait, and say why ----
op_kill9
mv "$T/op.log" "$T/op2.log"
op_start --ungrouped nosuch
job stray team-b | kubectl apply -f - >/dev/null
wait_for 15 "with --ungrouped nosuch a job in unclaimed team-b waits, naming the missing Group" sh -c '
  [ "$(kubectl get aijob stray -n team-b -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob stray -n team-b -o jsonpath={.status.message} |
    grep -q "no Group claims namespace team-b and the default Group nosuch (--ungrouped) does not exist"'
sleep 2
check "it is not admitted meanwhile" [ "$(st stray team-b phase)" = Queued ]

# --- a restart: the waiting job's NoGroup Event is not told again --------------
nogroups() {
    kubectl get events -n team-b --field-selector involvedObject.name=stray \
        -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep -c '^NoGroup$'
}
wait_for 10 "stray's NoGroup Event is posted" sh -c "[ \"\$(kubectl get events -n team-b --field-selector involvedObject.name=stray -o jsonpath='{.items[*].reason}' | grep -o NoGroup | wc -l)\" -ge 1 ]"
n0=$(nogroups)
op_kill9
mv "$T/op.log" "$T/op3.log"
op_start --ungrouped nosuch
sleep 3 # cycles of the restarted operator, its Events posted
check "a restart does not tell stray's NoGroup again (its status says it): $n0 -> $(nogroups)" \
    [ "$n0" = 1 -a "$(nogroups)" = 1 ]
check "and stray still waits, saying why" sh -c '
  [ "$(kubectl get aijob stray -n team-b -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob stray -n team-b -o jsonpath={.status.message} | grep -q "the default Group nosuch (--ungrouped) does not exist"'
e2e_done
