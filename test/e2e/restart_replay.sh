#!/bin/sh
# restart_replay.sh -- what a restart's replay reads for every job at once
# (jobs_replay_begin, reconcile_aijob.c) gives each job what it had before
# the restart. A history of finished runs (alice's of model m1), then
# waiting jobs on cordoned nodes whose runtime predictions come from it:
# two of alice's with the same query (the second answered from the
# replay's memo), one of alice's of another model, and one of bob's that
# asks what hers ask but for the user. The operator is killed (SIGKILL) and started again: every
# job's prediction (seconds, source, samples) and its status's
# predictedRuntime are what they were, and alice's and bob's stay apart.
# (The preemptions read in the same scan are checked across a restart by
# preempt_elastic.sh.)
# servers: local real
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 10
op_start

job() { # name user model duration estimate
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: $2
  model: {name: $3}
  taskType: train
  estimatedRuntime: $5
  resources: {gpus: 1, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $4}
    spec:
      containers: [{name: w, image: busybox}]
Y
}

# alice's history: three runs of m1 (30 s of simulated time each, 3 s here)
for n in 1 2 3; do job "h$n" alice m1 30s 10m | kubectl apply -f - >/dev/null; done
wait_for 60 "alice's three history runs succeeded" sh -c '
  for n in 1 2 3; do
    [ "$(kubectl get aijob h$n -o jsonpath={.status.phase})" = Succeeded ] || exit 1
  done'

NODES=$(kubectl get nodes -o name)
for n in $NODES; do kubectl cordon "${n#node/}" >/dev/null; done
job a1 alice m1 30s 10m | kubectl apply -f - >/dev/null
job a2 alice m1 30s 10m | kubectl apply -f - >/dev/null
job a3 alice m2 30s 20m | kubectl apply -f - >/dev/null
job b1 bob m1 30s 10m | kubectl apply -f - >/dev/null

# pred FILE JOB: the job's last runtime_predicted line's numbers and source.
pred() {
    grep "event=runtime_predicted obj=default/$2 " "$1" | tail -1 |
        sed 's/.* \(seconds=[^ ]* source=[^ ]* samples=[^ ]*\).*/\1/'
}
wait_for 30 "the four waiting jobs have a runtime prediction, in the log and in their status" sh -c '
  for j in a1 a2 a3 b1; do
    grep -q "event=runtime_predicted obj=default/$j " "'"$T"'/op.log" || exit 1
    [ -n "$(kubectl get aijob $j -o jsonpath={.status.predictedRuntime})" ] || exit 1
  done'
for j in a1 a2 a3 b1; do
    eval "P_$j=\"\$(pred \"\$T/op.log\" $j)\""
    eval "S_$j=\"\$(jp aijob $j {.status.predictedRuntime})\""
done
echo "before the restart: a1 [$P_a1] a2 [$P_a2] a3 [$P_a3] b1 [$P_b1]"
# Her runs took a fraction of their 10m estimates: her estimates are
# corrected by that ratio (at least x0.05); bob has no runs of his own.
check "alice's m1 jobs are predicted from her three finished runs" sh -c "
  case '$P_a1' in *source=estimate\ samples=3) ;; *) exit 1 ;; esac; [ '$P_a1' = '$P_a2' ]"
check "so is her m2 job (her runs of any model): not its 20m estimate as it is" sh -c "
  case '$P_a3' in *source=estimate\ samples=3) ;; *) exit 1 ;; esac
  [ '$P_a3' != 'seconds=1200 source=estimate samples=0' ]"
check "bob's m1 job, asking what a1 asks but for its user, has its estimate as it is" \
    eq "$P_b1" "seconds=600 source=estimate samples=0"

op_kill9
mv "$T/op.log" "$T/op1.log" # op_start waits for this run's "ready"
op_start
wait_for 30 "the restarted operator predicted every waiting job again" sh -c '
  for j in a1 a2 a3 b1; do
    grep -q "event=runtime_predicted obj=default/$j " "'"$T"'/op.log" || exit 1
  done'
for j in a1 a2 a3 b1; do
    eval "before=\"\$P_$j\"; status=\"\$S_$j\""
    check "$j: the replay predicts what the first run did ($before)" \
        eq "$(pred "$T/op.log" $j)" "$before"
    check "$j: its status's predicted runtime is unchanged ($status)" \
        eq "$(jp aijob $j {.status.predictedRuntime})" "$status"
done
check "the replay read every job's preemptions in one scan" \
    sh -c "! grep -q event=replay_not_preloaded '$T/op.log'"
check "the ready line counts the jobs the replay loaded ($(kubectl get aijobs -o name | wc -l))" \
    sh -c "grep -q 'event=ready .*jobs_loaded=$(kubectl get aijobs -o name | wc -l) replay_s=' '$T/op.log'"

for n in $NODES; do kubectl uncordon "${n#node/}" >/dev/null; done
kubectl delete aijob --all --wait=false >/dev/null
e2e_done
