#!/bin/sh
# servers: local real
# util_source.sh -- live GPU utilisation from Prometheus (issue 17 item 2),
# against aiq-promfake (test/promfake), a fake Prometheus serving DCGM
# exporter series from a spec file: with --util-prometheus-url the
# operator fills every node's utilisation (aiq_util_nodes_known, GET
# /util, the UTIL column of `kubectl aiq nodes`), and with the
# utilization-aware preset active a job goes to the idle node, also where
# binpack would choose the busy one; samples older than
# --util-stale-after are unknown (aiq_util_samples_stale, "stale"); when
# the source is killed, errs or answers garbage the operator says so once
# per change (event=util_source_down reason=..., aiq_util_source_up 0,
# the DOWN line of `kubectl aiq nodes`) and admission keeps working
# without utilisation; with --util-alnair-annotations, a node annotated
# the way Alnair's profiler does is known from its annotations meanwhile;
# when the source is back, so is the utilisation, and it wins.
. "$(dirname "$0")/lib.sh"
export PATH="$BUILD:$PATH"
PF_PID=""
trap 'rc=$?; [ -n "$PF_PID" ] && kill "$PF_PID" 2>/dev/null; e2e_cleanup $rc' EXIT

SPEC=$T/prom.spec
spec() { # mode age [busy idle]: both nodes, 8 GPUs each, the busy node
          # (gpu-0) at 10..80 %, the idle one (gpu-1) at 5 %
    { echo "mode $1"; echo "age $2"
      for g in 0 1 2 3 4 5 6 7; do echo "${3:-gpu-0} $g $(( (g + 1) * 10 )) $(( g * 1000 ))"; done
      for g in 0 1 2 3 4 5 6 7; do echo "${4:-gpu-1} $g 5 512"; done; } >"$SPEC.tmp" && mv "$SPEC.tmp" "$SPEC"
}
pf_start() { # [port]
    : >"$T/pf.port"
    "$BUILD/aiq-promfake" --spec "$SPEC" --addr "127.0.0.1:${1:-0}" --port-file "$T/pf.port" \
        >>"$T/promfake.log" 2>&1 &
    PF_PID=$!
    for _ in $(seq 1 50); do [ -s "$T/pf.port" ] && break; sleep 0.1; done
    PP=$(cat "$T/pf.port")
}
spec ok 600
pf_start
check "the fake Prometheus listens (port $PP)" [ -n "$PP" ]

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start --util-prometheus-url "http://127.0.0.1:$PP/" --util-interval 1s --util-stale-after 4s \
    --util-alnair-annotations
PORT=$(sed -n 's/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)
OPURL=http://127.0.0.1:$PORT

check "the operator logs the source it reads" \
    grep -q "event=util_source_started .*url=http://127.0.0.1:$PP/ interval_s=1 stale_after_s=4" "$T/op.log"

# ---- stale timestamps: the source answers, but with 10 min old samples ------
wait_for 15 "samples 10 min old are stale: aiq_util_samples_stale 16, nodes_known 0, still up" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_samples_stale //p")" = 16 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_known //p")" = 0 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_source_up //p")" = 1 ]' "$OPURL"
check "kubectl aiq nodes says stale" sh -c 'kubectl aiq nodes --operator-url "$0" --no-color 2>&1 |
  grep "^gpu-0 " | grep -q "stale 10m"' "$OPURL"
spec ok 0

wait_for 20 "both nodes have live utilisation (aiq_util_source_up 1, aiq_util_nodes_known 2)" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_source_up //p")" = 1 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_known //p")" = 2 ]' "$OPURL"
check "no sample is stale, no series skipped" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_samples_stale //p")" = 0 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_series_skipped //p")" = 0 ]' "$OPURL"
check "GET /util: gpu-0 GPU 7 at 0.8 busy with 7000 MiB framebuffer used" sh -c '
  curl -s "$0/util" >"$1/util.json" && jq -e ".up == true and (.nodes[] | select(.name == \"gpu-0\")
    | .gpus[] | select(.gpu == 7) | .util == 0.8 and .fbUsedMiB == 7000 and .stale == false)" "$1/util.json"' "$OPURL" "$T"
check "kubectl aiq nodes: UTIL per GPU with the sample age, and the source is up" sh -c '
  kubectl aiq nodes --operator-url "$0" --no-color >"$1/nodes.out" 2>&1; cat "$1/nodes.out"
  grep -qE "^NODE .* UTIL +STATUS" "$1/nodes.out" &&
  grep "^gpu-0 " "$1/nodes.out" | grep -qE "10,20,30,40,50,60,70,80% [0-9]+s" &&
  grep "^gpu-1 " "$1/nodes.out" | grep -qE "5,5,5,5,5,5,5,5% [0-9]+s" &&
  grep -q "utilisation: prometheus http://127.0.0.1:.* up, last answer" "$1/nodes.out"' "$OPURL" "$T"
check "kubectl aiq nodes -o json carries the samples and the source" sh -c '
  kubectl aiq nodes --operator-url "$0" -o json >"$1/nodes.json" &&
  jq -e "(.items[] | select(.name == \"gpu-1\") | .utilization.gpus | length) == 8 and
         .utilizationSource.up == true" "$1/nodes.json"' "$OPURL" "$T"

# ---- placement by live utilisation: the utilization-aware preset ------------
# Both nodes are empty, so binpack alone has no preference; the first job
# must go to the idle node. Then the nodes swap (gpu-1 busy, gpu-0 idle):
# binpack would now put the second job beside the first on gpu-1 (fewest
# free GPUs left), utilisation sends it to gpu-0.
sed 's/^  backfill: Easy$/  backfill: Easy\n  active: true/' "$ROOT/examples/policies/utilization-aware.yaml" |
    kubectl apply -f - >/dev/null
wait_for 15 "the utilization-aware preset is the active policy" sh -c '
  [ "$(kubectl get queuepolicy utilization-aware -o jsonpath={.status.compiled}/{.status.active})" = true/true ]'
ujob() { # name: a 2-GPU job that runs for 10 minutes
    printf '%s\n' "apiVersion: aiq.dev/v1alpha1" "kind: AIJob" \
        "metadata: {name: $1, namespace: default}" "spec:" "  user: dana" \
        "  resources: {gpus: 2, gpuMemory: 40Gi, cpu: \"1\", memory: 1Gi}" "  template:" \
        "    metadata: {annotations: {sim.aiq.dev/duration: 600s}}" \
        "    spec: {containers: [{name: w, image: busybox}]}" | kubectl apply -f - >/dev/null
}
ujob cool-a
wait_for 30 "a job placed while gpu-0 is busy (10..80 %) and gpu-1 idle (5 %) runs on gpu-1" sh -c '
  [ "$(kubectl get aijob cool-a -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob cool-a -o jsonpath={.status.placement[0].node})" = gpu-1 ]'
spec ok 0 gpu-1 gpu-0
wait_for 15 "the samples swap: gpu-1 GPU 7 at 0.8, gpu-0 at 0.05" sh -c '
  curl -s "$0/util" | jq -e "(.nodes[] | select(.name == \"gpu-1\") | .gpus[] | select(.gpu == 7) | .util == 0.8)
    and (.nodes[] | select(.name == \"gpu-0\") | .gpus[] | select(.gpu == 7) | .util == 0.05)"' "$OPURL"
ujob cool-b
wait_for 30 "the next job goes to the now idle gpu-0, not beside cool-a as binpack would put it" sh -c '
  [ "$(kubectl get aijob cool-b -o jsonpath={.status.phase})" = Running ] &&
  [ "$(kubectl get aijob cool-b -o jsonpath={.status.placement[0].node})" = gpu-0 ]'
kubectl delete aijob cool-a cool-b --wait=false >/dev/null
spec ok 0

# ---- the source goes down ---------------------------------------------------
kill "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID=""
wait_for 15 "killed: aiq_util_source_up 0 and one util_source_down line with the reason" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_source_up //p")" = 0 ] &&
  grep -q "event=util_source_down .*reason=\"query DCGM_FI_DEV_GPU_UTIL: Couldn.t connect to server\" fallback=\"placement without utilisation" "$1/op.log"' "$OPURL" "$T"
wait_for 15 "past --util-stale-after every node is placed without utilisation" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_known //p")" = 0 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_samples_stale //p")" = 16 ]' "$OPURL"
check "kubectl aiq nodes shows the source DOWN and the nodes stale" sh -c '
  kubectl aiq nodes --operator-url "$0" --no-color >"$1/nodes.out" 2>&1; cat "$1/nodes.out"
  grep -q "utilisation: prometheus http://127.0.0.1:[0-9]* DOWN (query DCGM_FI_DEV_GPU_UTIL: Couldn.t connect to server), last answer [0-9]*s ago: nodes without fresh samples are placed without utilisation" "$1/nodes.out" &&
  grep "^gpu-1 " "$1/nodes.out" | grep -q "stale"' "$OPURL" "$T"
cat <<'Y' | kubectl apply -f - >/dev/null
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: blind, namespace: default}
spec:
  user: dana
  resources: {gpus: 2, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 600s}
    spec:
      containers: [{name: w, image: busybox}]
Y
wait_for 40 "admission keeps working without utilisation (the job runs)" sh -c '
  [ "$(kubectl get aijob blind -o jsonpath={.status.phase})" = Running ]'
check "the metric counts the failed fetches" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_fetch_failures_total //p")" -ge 2 ]' "$OPURL"
check "down is logged once, not per failed fetch" sh -c '
  [ "$(grep -c "event=util_source_down" "$0/op.log")" = 1 ]' "$T"

# ---- Alnair's profiler annotations stand in while Prometheus is down ----------
for g in 0 1 2 3 4 5 6 7; do
    echo "ai.centaurus.io/gpu-$g={'mem_used': '4GB', 'mem_free': '76GB', 'process_cnt': 1, 'cyclic_pattern': False, 'max_mem_util': '$((g * 5)).0'}"
done | xargs -d '\n' kubectl annotate node gpu-1 --overwrite >/dev/null
wait_for 15 "gpu-1 is known from its annotations (aiq_util_nodes_from_annotations 1)" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_from_annotations //p")" = 1 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_known //p")" = 1 ]' "$OPURL"
check "kubectl aiq nodes: gpu-1 from annotations, gpu-0 still stale" sh -c '
  kubectl aiq nodes --operator-url "$0" --no-color >"$1/nodes.out" 2>&1; cat "$1/nodes.out"
  grep "^gpu-1 " "$1/nodes.out" | grep -q "0,5,10,15,20,25,30,35% ann" &&
  grep "^gpu-0 " "$1/nodes.out" | grep -q "stale"' "$OPURL" "$T"

# ---- back ---------------------------------------------------------------------
pf_start "$PP"
wait_for 20 "restarted: util_source_up logged, aiq_util_source_up 1, nodes_known 2, fresh samples win over annotations" sh -c '
  grep -q "event=util_source_up .*nodes_known=2 nodes=2" "$1/op.log" &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_source_up //p")" = 1 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_known //p")" = 2 ] &&
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_nodes_from_annotations //p")" = 0 ]' "$OPURL" "$T"

# ---- errors and garbage ---------------------------------------------------------
spec error 0
wait_for 15 "an error status is down with Prometheus's own message" sh -c '
  grep -q "event=util_source_down .*reason=\"query DCGM_FI_DEV_GPU_UTIL: HTTP 400: Prometheus answered status ..error..: bad_data: invalid parameter ..query..: fake error\"" "$0/op.log"' "$T"
spec garbage 0
wait_for 15 "garbage is down too (GET /util names it), still one more down line only" sh -c '
  curl -s "$0/util" | jq -e ".up == false and (.reason | test(\"not JSON\"))" &&
  [ "$(grep -c "event=util_source_down" "$1/op.log")" = 2 ]' "$OPURL" "$T"
spec ok 0
wait_for 15 "good answers again: up" sh -c '
  [ "$(curl -s "$0/metrics" | sed -n "s/^aiq_util_source_up //p")" = 1 ] &&
  [ "$(grep -c "event=util_source_up" "$1/op.log")" = 3 ]' "$OPURL" "$T"
check "the job admitted while blind still runs" sh -c '
  [ "$(kubectl get aijob blind -o jsonpath={.status.phase})" = Running ]'
e2e_done
