#!/bin/sh
# servers: local real
# release_order.sh -- an admission releases its pods before it writes the
# job's status (docs/operator.md, step 4): the store holds the admission
# and its placement first, the pods leave their gates, and the status
# (phase Admitted, the placement) follows within the write budget. The
# operator is killed after the first pod of an 8-replica gang left its
# gate (crash point release_mid): the status must still say the job waits
# and hold no placement, while at least one pod is out. Restarted, the
# operator takes the admission back from its store: the job runs as
# attempt 1 on the placement the released pods already hold (no second
# admission, no pod torn down), every other pod is released onto that
# same placement, and the journal has one admit decision.
# Then a second gang, killed the same way, whose store record is made to
# disagree with where its pods went: the restart must not take that
# record (admission_not_recovered), tear the released pods down instead,
# and run the gang again on one consistent placement.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_exited() { ! kill -0 "$OP_PID" 2>/dev/null; }
# crash_with NAME [OPERATOR FLAG...]: the operator armed to exit at its
# first released pod (crash point release_mid), an 8 x 1-GPU gang NAME
# applied, and the crash awaited.
crash_with() {
    name=$1
    shift
    export AIQ_CRASH_AT=release_mid:1
    op_start "$@"
    unset AIQ_CRASH_AT
    cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $name, namespace: default}
spec:
  user: carol
  replicas: 8
  resources: {gpus: 1, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 10m}
    spec:
      containers: [{name: w, image: busybox}]
Y
    wait_for 60 "$name: the operator reached release_mid and exited" op_exited
    OP_PID=""
}

# pods_gates [JOB]: "<pod> <gated: 1, or 0> <aiq.dev/node or ->" per pod
# of the job (gang by default), by name.
pods_gates() {
    kubectl get pods -l aiq.dev/job="${1:-gang}" -o go-template='{{range .items}}{{.metadata.name}} {{if .spec.schedulingGates}}1{{else}}0{{end}} {{or (index .metadata.annotations "aiq.dev/node") "-"}}{{"\n"}}{{end}}' |
        sort
}
# A write budget of one a second: the Queued status most likely never
# went out before the admission, so the queue time comes from the store.
crash_with gang --status-writes-per-s 1
check "it crashed at the crash point" grep -q "crash point reached" "$T/op.log"
pods_gates >"$T/before.txt"
out=$(awk '$2 == 0' "$T/before.txt" | wc -l)
echo "pods released before the crash: $out of 8"
check "at least one pod left its gate before the crash" test "$out" -ge 1
check "every released pod carries its node" sh -c "! awk '\$2 == 0 && \$3 == \"-\"' '$T/before.txt' | grep -q ."
phase=$(jp aijob gang '{.status.phase}')
check "the status was not written before the pods: not Admitted ($phase)" \
    sh -c "case '$phase' in Admitted|Running) exit 1 ;; esac"
check "the status holds no placement yet" eq "$(jp aijob gang '{.status.placement}')" ""
check "the store has the admission" sh -c \
    "[ \"\$(sqlite3 '$T/op.db' \"SELECT count(*) FROM job_attempts WHERE attempt = 1 AND placement IS NOT NULL\")\" = 1 ]"

op_start
wait_for 60 "restarted: the job runs" sh -c '[ "$(kubectl get aijob gang -o jsonpath={.status.phase})" = Running ]'
check "the admission was taken back from the store" grep -q "event=admission_recovered obj=default/gang" "$T/op.log"
wait_for 20 "an AdmissionRecovered Event on the job says so" sh -c \
    "kubectl get events --field-selector involvedObject.name=gang,reason=AdmissionRecovered -o name | grep -q ."
check "attempt 1, not a second admission" eq "$(jp aijob gang '{.status.attempts}')" 1
qt=$(jp aijob gang '{.status.queuedTime}')
at=$(jp aijob gang '{.status.admittedTime}')
check "the status has a queue time ($qt; before the crash: $phase), not after its admission ($at)" \
    sh -c "[ -n '$qt' ] && [ -n '$at' ] && ! expr '$qt' '>' '$at' >/dev/null"
check "no teardown after the restart" sh -c "! grep -q 'event=job_teardown' '$T/op.log'"
pods_gates >"$T/after.txt"
check "every pod released" sh -c "! awk '\$2 != 0' '$T/after.txt' | grep -q ."
# Each pod released before the crash kept its node; the status's
# placement names, for every replica, the node its pod was released to.
check "the pods released before the crash kept their nodes" sh -c \
    "awk '\$2 == 0' '$T/before.txt' | while read -r p g n; do grep -qx \"\$p 0 \$n\" '$T/after.txt' || exit 1; done"
kubectl get aijob gang -o go-template='{{range .status.placement}}gang-{{.replica}} 0 {{.node}}{{"\n"}}{{end}}' |
    sort >"$T/placement.txt"
check "the status's placement is where the pods went" sh -c "diff '$T/placement.txt' '$T/after.txt'"
check "the pods are bound where they were released" sh -c '
  kubectl get pods -l aiq.dev/job=gang -o go-template="{{range .items}}{{.spec.nodeName}}={{index .metadata.annotations \"aiq.dev/node\"}}{{\"\n\"}}{{end}}" |
    awk -F= "\$1 != \$2 { bad = 1 } END { exit bad }"'
check "one admit decision in the journal" sh -c \
    "[ \"\$(sqlite3 '$T/op.db' \"SELECT count(*) FROM decisions WHERE action = 'admit'\")\" = 1 ]"

# --- a store record the released pods contradict --------------------------
op_kill9
crash_with gang2
pods_gates gang2 >"$T/before2.txt"
check "gang2: a pod left its gate before the crash" sh -c "awk '\$2 == 0' '$T/before2.txt' | grep -q ."
uid=$(jp aijob gang2 '{.metadata.uid}')
sqlite3 "$T/op.db" "UPDATE job_attempts SET placement = replace(placement, '\"node\":\"gpu-', '\"node\":\"gone-')
                    WHERE job_uid = '$uid'"
op_start
wait_for 60 "gang2: the contradicted record is not taken" \
    grep -q "event=admission_not_recovered obj=default/gang2 .*not on the node the store" "$T/op.log"
check "gang2: its released pods are torn down instead" grep -q "event=job_teardown_recovered obj=default/gang2" "$T/op.log"
wait_for 90 "gang2 runs again" sh -c '[ "$(kubectl get aijob gang2 -o jsonpath={.status.phase})" = Running ]'
pods_gates gang2 >"$T/after2.txt"
kubectl get aijob gang2 -o go-template='{{range .status.placement}}gang2-{{.replica}} 0 {{.node}}{{"\n"}}{{end}}' |
    sort >"$T/placement2.txt"
check "gang2: the status's placement is where its pods went" sh -c "diff '$T/placement2.txt' '$T/after2.txt'"
check "gang2: no pod on a node that does not exist" sh -c "! grep -q gone- '$T/after2.txt'"
e2e_done
