#!/bin/sh
# servers: local real
# eta_overrun.sh -- the estimated start of a job waiting behind one that
# outlives its predicted runtime (issue 17). `over` (two replicas of 8
# GPUs, an estimate of 4 s) fills both nodes and runs for 10 min; `next`
# waits for its GPUs. Once `over` is past its predicted end, the estimate
# must not promise `next` a start now: the queue plans an overrunning job
# at twice its plan from its start, again until it ends after now
# (docs/queue.md, "Estimated start"). Checked in the live view the
# operator serves on demand (/queue: what `kubectl aiq queue` and
# `explain` show), once and again after a second doubling.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start
PORT=$(sed -n 's/.*event=metrics_listening port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)

job() { # name replicas duration estimate
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  replicas: $2
  estimatedRuntime: $4
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "1", memory: 2Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $3}
    spec:
      containers: [{name: w, image: busybox}]
Y
}

job over 2 10m 4s | kubectl apply -f - >/dev/null
wait_for 40 "over runs on both nodes" sh -c '
  [ "$(kubectl get aijob over -o jsonpath={.status.phase})" = Running ]'
job next 1 1m 1m | kubectl apply -f - >/dev/null
wait_for 20 "next waits behind it" sh -c '
  [ "$(kubectl get aijob next -o jsonpath={.status.phase})" = Queued ] &&
  [ "$(kubectl get aijob next -o jsonpath={.status.position})" = 1 ]'

START=$(date -d "$(jp aijob over {.status.startTime})" +%s 2>/dev/null || echo 0)
PRED=$(jp aijob over {.status.predictedRuntime})
check "over has a start time and a predicted runtime of a few seconds (no history)" sh -c "
  [ $START -gt 0 ] && [ -n '$PRED' ] && [ '$PRED' -ge 1 ] && [ '$PRED' -le 20 ]"
PRED=${PRED:-4}

# eta_ahead MIN: next's estimated start, from the live view, is at least
# MIN seconds after now (and says when).
cat >"$T/eta_ahead" <<SH
#!/bin/sh
curl -sf "http://127.0.0.1:$PORT/queue?namespace=default&name=next" >"$T/q.json" || exit 1
eta=\$(sed -n 's/.*"estimatedStartTime": *"\([^"]*\)".*/\1/p' "$T/q.json")
[ -n "\$eta" ] || { echo "no estimate: \$(cat "$T/q.json")"; exit 1; }
now=\$(date +%s); at=\$(date -d "\$eta" +%s)
echo "next: estimated start \$eta, \$((at - now)) s from now; over started $START, predicted ${PRED} s"
[ \$((at - now)) -ge "\$1" ]
SH
chmod +x "$T/eta_ahead"

# Past the predicted end (plus a cycle or two): planned at 2x, then 4x.
until [ "$(date +%s)" -ge $((START + PRED + 1)) ]; do sleep 0.5; done
check "past over's predicted end, next's estimate is still ahead, not now" "$T/eta_ahead" 1
until [ "$(date +%s)" -ge $((START + 2 * PRED + 1)) ]; do sleep 0.5; done
check "past twice the prediction, the estimate is ahead again" "$T/eta_ahead" 1
check "over still runs (the fake kubelet's 10 min), next still waits" sh -c '
  [ "$(kubectl get aijob over -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob next -o jsonpath={.status.phase})" = Queued ]'

e2e_done
