#!/bin/sh
# sim_replay.sh -- the operator's decision journal replays exactly: four
# AIJobs (two 8-GPU jobs, a third that waits, a priority job that is
# ordered ahead of it) run on the local cluster under the built-in policy;
# the operator is stopped, `aiq-sim export` lists the journal, `aiq-sim
# replay` re-runs every recorded cycle through the queue core and gets
# every decision back exactly, a tampered journal is caught naming the
# first difference, and a what-if under srjf runs the same jobs. Then the
# same exact replay on fresh stores under fifo (job.age_hours) and
# tiresias-las (wait.hours in a level's when), which needs the journaled
# "created"/"queued" and the nodes' CPU and memory. Last, a run with a
# failing job that is requeued (job_requeue, job_start) replays exactly.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start

job() { # name gpus duration priority
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  priority: $4
  estimatedRuntime: $3
  resources: {gpus: $2, gpuMemoryMiB: 40960, cpu: "2", memory: 4Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $3}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
job a 8 4s 0 | kubectl apply -f - >/dev/null
job b 8 4s 0 | kubectl apply -f - >/dev/null
job c 8 3s 0 | kubectl apply -f - >/dev/null
job d 4 2s 100 | kubectl apply -f - >/dev/null
wait_for 60 "the four jobs succeed" sh -c '
  for j in a b c d; do [ "$(kubectl get aijob $j -o jsonpath={.status.phase})" = Succeeded ] || exit 1; done'

# The store is the operator's while it runs (one open transaction).
kill "$OP_PID" 2>/dev/null
wait "$OP_PID" 2>/dev/null
OP_PID=""

SIM=$BUILD/aiq-sim
check "export: 4 arrivals, 4 departures, decisions" sh -c '
  "$0" export --db "$T/op.db" --out "$T/j.jsonl" 2>/dev/null &&
  [ "$(grep -c "\"kind\":\"job_arrival\"" "$T/j.jsonl")" = 4 ] &&
  [ "$(grep -c "\"kind\":\"job_departure\"" "$T/j.jsonl")" = 4 ] &&
  grep -q "\"type\":\"decision\".*\"reason\":\"WaitingForGPUs\"" "$T/j.jsonl"' "$SIM"
check "replay from the store reproduces every decision" sh -c '
  "$0" replay --db "$T/op.db" --policies-dir "$1/examples/policies" >"$T/r.out" 2>"$T/r.err"; rc=$?
  cat "$T/r.out" "$T/r.err"; [ $rc = 0 ] && grep -q "^replay: exact: [1-9][0-9]* decisions" "$T/r.out"' \
    "$SIM" "$ROOT"
check "replay from the JSON lines too" sh -c '
  "$0" replay --jsonl "$T/j.jsonl" 2>/dev/null | grep -q "^replay: exact:"' "$SIM"
check "a tampered journal is caught, naming the first difference" sh -c '
  sed "0,/\"action\":\"wait\",\"level\":0,\"position\":1/s//\"action\":\"wait\",\"level\":0,\"position\":7/" \
    "$T/j.jsonl" >"$T/bad.jsonl" && ! cmp -s "$T/j.jsonl" "$T/bad.jsonl" &&
  ! "$0" replay --jsonl "$T/bad.jsonl" >"$T/b.out" 2>/dev/null &&
  grep -q "differ" "$T/b.out" && grep -q "recorded: .* position=7" "$T/b.out"' "$SIM"
check "what-if under srjf runs the same jobs" sh -c '
  "$0" replay --db "$T/op.db" --policy "$1/examples/policies/srjf.yaml" >"$T/w.out" 2>/dev/null &&
  grep -q "^jobs  *4  *4" "$T/w.out" && grep -q "^what-if: [0-9]* of 4 jobs" "$T/w.out"' \
    "$SIM" "$ROOT"

# The same under fifo (job.age_hours counts from metadata.creationTimestamp):
# the operator journals "created" and "queued" in each arrival and the
# nodes' CPU and memory, so the scores come back bit for bit too. A fresh
# store, the first run's jobs deleted, fifo active, three jobs that queue.
kubectl delete aijobs --all >/dev/null 2>&1
kubectl apply -f "$ROOT/examples/policies/fifo.yaml" >/dev/null
op_start --db "$T/op2.db"
wait_for 20 "fifo is the operator's active policy" \
    grep -q "event=policy_compiled obj=fifo" "$T/op.log"
job e 8 3s 0 | kubectl apply -f - >/dev/null
job f 8 3s 0 | kubectl apply -f - >/dev/null
job g 8 2s 0 | kubectl apply -f - >/dev/null
job h 8 2s 0 | kubectl apply -f - >/dev/null
wait_for 60 "the four fifo jobs succeed" sh -c '
  for j in e f g h; do [ "$(kubectl get aijob $j -o jsonpath={.status.phase})" = Succeeded ] || exit 1; done'
kill "$OP_PID" 2>/dev/null
wait "$OP_PID" 2>/dev/null
OP_PID=""
check "the journal carries created/queued per arrival and each node's cpu and memory" sh -c '
  "$0" export --db "$T/op2.db" --out "$T/j2.jsonl" 2>/dev/null &&
  [ "$(grep "\"kind\":\"job_arrival\"" "$T/j2.jsonl" | grep "\"created\":[0-9]" | grep -c "\"queued\":[0-9]")" = 4 ] &&
  grep "\"kind\":\"node\"" "$T/j2.jsonl" | grep -q "\"cpu_milli\":[1-9][0-9]*,\"memory_bytes\":[1-9]" &&
  [ "$(grep -c "\"kind\":\"job_start\"" "$T/j2.jsonl")" = 4 ]' "$SIM"
# The operator's cache keeps an AIJob's template only as a string; each
# arrival still journals the whole spec, template included.
check "each arrival journals the spec with its pod template" sh -c '
  [ "$(grep "\"kind\":\"job_arrival\"" "$T/j2.jsonl" | grep "\"template\":" | grep -c "busybox")" = 4 ]'
check "replay under fifo reproduces every decision, scores included" sh -c '
  "$0" replay --db "$T/op2.db" --policies-dir "$1/examples/policies" >"$T/r2.out" 2>"$T/r2.err"; rc=$?
  cat "$T/r2.out" "$T/r2.err"; [ $rc = 0 ] && grep -q "^replay: exact: [1-9][0-9]* decisions" "$T/r2.out" &&
  grep -q "fifo" "$T/r2.out"' "$SIM" "$ROOT"

# And under tiresias-las, whose first level's `when` reads wait.hours (from
# the journaled "queued") and attained.gpu_hours.
kubectl delete aijobs --all >/dev/null 2>&1
kubectl apply -f "$ROOT/examples/policies/tiresias-las.yaml" >/dev/null
kubectl patch queuepolicy fifo --type=merge -p '{"spec":{"active":false}}' >/dev/null
kubectl patch queuepolicy tiresias-las --type=merge -p '{"spec":{"active":true}}' >/dev/null
op_start --db "$T/op3.db"
wait_for 20 "tiresias-las is the operator's active policy" sh -c '
  [ "$(kubectl get queuepolicy tiresias-las -o jsonpath={.status.active})" = true ] ||
  grep -q "event=policy_compiled obj=tiresias-las" "$T/op.log"'
job i 8 3s 0 | kubectl apply -f - >/dev/null
job k 8 3s 0 | kubectl apply -f - >/dev/null
job l 8 2s 0 | kubectl apply -f - >/dev/null
wait_for 60 "the three tiresias-las jobs succeed" sh -c '
  for j in i k l; do [ "$(kubectl get aijob $j -o jsonpath={.status.phase})" = Succeeded ] || exit 1; done'
kill "$OP_PID" 2>/dev/null
wait "$OP_PID" 2>/dev/null
OP_PID=""
check "replay under tiresias-las (levels by wait.hours and attained GPU time) is exact" sh -c '
  "$0" replay --db "$T/op3.db" --policies-dir "$1/examples/policies" >"$T/r3.out" 2>"$T/r3.err"; rc=$?
  cat "$T/r3.out" "$T/r3.err"; [ $rc = 0 ] && grep -q "^replay: exact: [1-9][0-9]* decisions reproduced under tiresias-las" "$T/r3.out"' \
    "$SIM" "$ROOT"

# And with requeues: under fifo again, x's pod always fails (exit code 1,
# backoffLimit 1: requeued once with a 1s backoff, then Failed) while v and
# w (normal jobs) compete for the GPUs. The journal carries job_start and
# job_requeue; the replay brings x back when its backoff ends, queued from
# the requeue, and reproduces every decision.
kubectl delete aijobs --all >/dev/null 2>&1
kubectl patch queuepolicy tiresias-las --type=merge -p '{"spec":{"active":false}}' >/dev/null
kubectl patch queuepolicy fifo --type=merge -p '{"spec":{"active":true}}' >/dev/null
op_start --db "$T/op4.db" --backoff 1s
wait_for 20 "fifo is active again" sh -c '
  [ "$(kubectl get queuepolicy fifo -o jsonpath={.status.active})" = true ]'
cat <<Y | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: x, namespace: default}
spec:
  user: alice
  backoffLimit: 1
  estimatedRuntime: 2s
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "2", memory: 4Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 1s, sim.aiq.dev/exit-code: "1"}
    spec:
      containers: [{name: w, image: busybox}]
Y
job v 8 3s 0 | kubectl apply -f - >/dev/null
job w 8 2s 0 | kubectl apply -f - >/dev/null
wait_for 90 "x fails after two attempts, v and w succeed" sh -c '
  [ "$(kubectl get aijob x -o jsonpath={.status.phase})" = Failed ] &&
  for j in v w; do [ "$(kubectl get aijob $j -o jsonpath={.status.phase})" = Succeeded ] || exit 1; done'
kill "$OP_PID" 2>/dev/null
wait "$OP_PID" 2>/dev/null
OP_PID=""
check "the journal has x's requeue, when its pods were gone, and the gangs' starts" sh -c '
  "$0" export --db "$T/op4.db" --out "$T/j4.jsonl" 2>/dev/null &&
  [ "$(grep -c "\"kind\":\"job_requeue\"" "$T/j4.jsonl")" = 1 ] &&
  [ "$(grep "\"kind\":\"job_released\"" "$T/j4.jsonl" | grep -c "\"attempt\":[12]")" = 2 ] &&
  grep "\"kind\":\"job_requeue\"" "$T/j4.jsonl" | grep -q "\"backoff_until\":[0-9]" &&
  grep -q "\"kind\":\"job_start\"" "$T/j4.jsonl"' "$SIM"
check "replay of a run with a requeue is exact (0 mismatches, nothing skipped)" sh -c '
  "$0" replay --db "$T/op4.db" --policies-dir "$1/examples/policies" >"$T/r4.out" 2>"$T/r4.err"; rc=$?
  cat "$T/r4.out" "$T/r4.err"; [ $rc = 0 ] &&
  grep -q "^replay: exact: [1-9][0-9]* decisions reproduced under fifo" "$T/r4.out" &&
  ! grep -qi "skipped" "$T/r4.out" "$T/r4.err"' "$SIM" "$ROOT"
check "the requeue matters: without it the replay differs" sh -c '
  grep -v "\"kind\":\"job_requeue\"" "$T/j4.jsonl" >"$T/j4b.jsonl" &&
  ! "$0" replay --jsonl "$T/j4b.jsonl" >"$T/r4b.out" 2>/dev/null && grep -q "differ" "$T/r4b.out"' "$SIM"

e2e_done
