#!/bin/sh
# numbers_names.sh -- huge scores and long names (issue 19, items 4 and 5).
# Numbers: a formula whose constant overflows (10 ^ 400 * job.gpus) does
# not compile and the QueuePolicy says where; a formula whose value
# overflows for some jobs only (10 ^ 307 * job.gpus * job.gpus: 1e307 for
# a 1-GPU job, infinite for an 8-GPU one) runs, the infinite scores are
# clamped to the largest double and the policy's status.warnings names the
# term, and every job's status keeps flowing: written while Queued (the
# score as a finite JSON number, never "inf"), then Running, then
# Succeeded. Before the fix scores of about 1.8e304 and more were written
# as inf, the status round trip failed and those jobs' statuses were never
# written again.
# Names: a 63-character AIJob (the CRD's limit) gets its pods
# ("<name>-<replica>", 65 characters: a pod name may have 253; the job
# label value is the 63-character name) and runs to Succeeded; a
# 64-character name is refused with the true limit, 63.
# Status writes that fail: on the local server only (its fault injection
# answers 30% of requests with 500), a job still ends with its status
# saying Succeeded, and each failed write was logged
# (status_write_failed ... retry=next_turn) and counted
# (aiq_status_write_failures_total{kind="AIJob"}).
# servers: local real (the status-write fault probe needs the local server's fault injection)
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 5
op_start

job() { # name gpus duration [replicas]
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: u
  replicas: ${4:-1}
  resources: {gpus: $2, gpuMemoryMiB: 1024, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $3}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
policy() { # name formula
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: $1}
spec:
  formula: "$2"
  levels: [{name: all}]
  backfill: None
  placement: binpack
  active: true
Y
}

# --- numbers -------------------------------------------------------------------
policy overflow "10 ^ 400 * job.gpus" | kubectl apply -f - >/dev/null
wait_for 15 "10 ^ 400 * job.gpus does not compile; the status names the constant" sh -c '
  [ "$(kubectl get queuepolicy overflow -o jsonpath={.status.compiled})" = false ] &&
  kubectl get queuepolicy overflow -o jsonpath={.status.error} | grep -qF "1:1: \"10 ^ 400\" is infinite"'
kubectl delete queuepolicy overflow >/dev/null

policy huge "10 ^ 307 * job.gpus * job.gpus" | kubectl apply -f - >/dev/null
wait_for 15 "10 ^ 307 * job.gpus * job.gpus compiles and is active" sh -c '
  [ "$(kubectl get queuepolicy huge -o jsonpath={.status.compiled}/{.status.active})" = true/true ]'

# All 16 GPUs busy for a while, so the two jobs wait and their Queued
# statuses (with the scores) must be written.
job block 8 25s 2 | kubectl apply -f - >/dev/null
wait_for 30 "the blocker runs" sh -c '[ "$(kubectl get aijob block -o jsonpath={.status.phase})" = Running ]'
job one 1 5s | kubectl apply -f - >/dev/null
job eight 8 5s | kubectl apply -f - >/dev/null
wait_for 20 "the 1-GPU job's Queued status is written with its score 1e307" sh -c '
  [ "$(kubectl get aijob one -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob one -o json | jq -e ".status.score == 1e307 and .status.scoreTerms[0].value == 1e307" >/dev/null'
wait_for 20 "the 8-GPU job's score is clamped to the largest double, written finite" sh -c '
  [ "$(kubectl get aijob eight -o jsonpath={.status.phase})" = Queued ] &&
  kubectl get aijob eight -o json | jq -e ".status.score == 1.7976931348623157e+308" >/dev/null'
wait_for 15 "the policy's status warns, naming the term" sh -c '
  kubectl get queuepolicy huge -o jsonpath="{.status.warnings[0]}" |
    grep -qF "the term \"10 ^ 307 * job.gpus * job.gpus\" is not a finite number for some jobs"'
check "the operator logged it once and counted it" sh -c '
  [ "$(grep -c "event=policy_score_clamped obj=huge .*term=\"10 ^ 307 \* job.gpus \* job.gpus\"" "$T/op.log")" = 1 ] &&
  port=$(sed -n "s/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p" "$T/op.log" | tail -1) &&
  n=$(curl -s "http://127.0.0.1:$port/metrics" | sed -n "s/^aiq_scores_clamped_total //p") &&
  [ "$n" -ge 1 ]'
check "no status was ever unencodable or unwritable" sh -c '
  ! grep -E "event=(status_encode_failed|status_write_failed)" "$T/op.log"'
wait_for 90 "both jobs finish and their statuses say so" sh -c '
  [ "$(kubectl get aijob one -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get aijob eight -o jsonpath={.status.phase})" = Succeeded ]'
kubectl delete queuepolicy huge >/dev/null

# --- names ---------------------------------------------------------------------
n63=$(printf '%063d' 0 | tr 0 n)
n64=$(printf '%064d' 0 | tr 0 n)
job "$n64" 1 5s >"$T/j64.yaml"
if kubectl apply -f "$T/j64.yaml" >"$T/a64.out" 2>&1; then
    bad "a 64-character AIJob name is refused"
else
    check "a 64-character AIJob name is refused with the true limit, 63" \
        grep -qF "may not be more than 63" "$T/a64.out"
fi
job "$n63" 1 5s 2 | kubectl apply -f - >/dev/null
wait_for 30 "a 63-character AIJob gets its pods ($n63-0, 65 characters)" sh -c "
  [ \"\$(kubectl get pods -l aiq.dev/job=$n63 -o name | wc -l)\" = 2 ] &&
  kubectl get pod $n63-1 -o jsonpath={.metadata.labels.aiq\\\\.dev/job} | grep -qx $n63"
wait_for 60 "and runs to Succeeded" sh -c "
  [ \"\$(kubectl get aijob $n63 -o jsonpath={.status.phase})\" = Succeeded ]"
check "no pod_build_failed for it" sh -c '! grep -q "event=pod_build_failed" "$T/op.log"'

# --- status writes that fail are logged, counted and retried (local) -----------
if [ "${AIQ_API:-local}" = local ]; then
    kill "$OP_PID" "$API_PID" 2>/dev/null; wait "$OP_PID" "$API_PID" 2>/dev/null
    OP_PID=""; API_PID=""
    # The same stored state (CRDs, nodes) on a restarted server, now with
    # faults; a fresh operator database.
    mkdir -p "$T/before-faults"
    for f in op.log op.db op.db-wal op.db-shm kcache; do
        [ -e "$T/$f" ] && mv "$T/$f" "$T/before-faults/"
    done
    rm -f "$T/kubeconfig" "$T/api.env"
    api_up 2 --port 0 --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 5 \
        --fault-500 0.3 --seed 19 || bad "API server restarted with faults"
    # kubectl gets the faults too: retry.
    kubectl() { for _ in 1 2 3 4 5 6 7 8; do command kubectl "$@" && return 0; sleep 0.2; done; return 1; }
    op_start
    job faulty 1 5s >"$T/jf.yaml"
    check "a job is created under 30% injected 500s" kubectl apply -f "$T/jf.yaml"
    wait_for 90 "its status still ends Succeeded" sh -c '
      for _ in 1 2 3 4 5; do p=$(kubectl get aijob faulty -o jsonpath={.status.phase} 2>/dev/null) && break; done
      [ "$p" = Succeeded ]'
    check "failed status writes were logged with the retry" \
        grep -q "event=status_write_failed .*kind=AIJob .*retry=next_turn" "$T/op.log"
    check "and counted in aiq_status_write_failures_total" sh -c '
      port=$(sed -n "s/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p" "$T/op.log" | tail -1) &&
      n=$(curl -s "http://127.0.0.1:$port/metrics" | sed -n "s/^aiq_status_write_failures_total{kind=\"AIJob\"} //p") &&
      [ "$n" -ge 1 ] && [ "$n" = "$(grep -c "event=status_write_failed .*kind=AIJob" "$T/op.log")" ]'
else
    echo "skip the status-write fault probe: fault injection exists only in the local server"
fi

e2e_done
