#!/bin/sh
# demo.sh -- `make demo`: a local cluster with simulated GPU nodes, the
# operator, and examples/demo/ applied with the real kubectl: the priority
# policy's levels, a job waiting on its user quota, two shared jobs and
# their placement, a gang whose gated pods are released together, a switch
# to srjf that reorders the queue; one line per change (like `kubectl get
# -w`), then a summary per job (waited, ran, where) and what to try next.
# About a minute; test/e2e/demo.sh runs it and checks what it shows. Every process it starts is stopped on exit, unless
# AIQ_DEMO_KEEP=1 (then it prints how to reach the cluster and stop it).
# AIQ_API=real runs the same demo on the real Kubernetes control plane
# (build/realcluster/aiq-realcluster: kube-apiserver, kube-scheduler,
# kube-controller-manager and etcd with the same fake nodes) instead of
# the fast local server.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${AIQ_DEMO_BIN:-$ROOT/build/rel}
AIQ_API=${AIQ_API:-local}
case "$AIQ_API" in
    local) SERVER=$BIN/aiq-apiserver; WHAT="the local cluster" ;;
    real) SERVER=${AIQ_REALCLUSTER:-$ROOT/build/realcluster/aiq-realcluster}
          WHAT="the real Kubernetes control plane (kube-apiserver, kube-scheduler, kube-controller-manager, etcd)" ;;
    *) echo "demo: AIQ_API must be local or real, got \"$AIQ_API\"" >&2; exit 2 ;;
esac
LIMIT=${AIQ_DEMO_SECONDS:-90}         # stop watching the jobs after this long
D=$ROOT/examples/demo
T=$(mktemp -d /tmp/aiq-demo.XXXXXX)
API_PID=""
OP_PID=""
export KUBECONFIG="$T/kubeconfig" KUBECACHEDIR="$T/kcache"
# kubectl finds its plugins on PATH: build/rel/kubectl-aiq is `kubectl aiq`.
export PATH="$BIN:$PATH"

cleanup() {
    if [ -n "${AIQ_DEMO_KEEP:-}" ] && [ "${1:-}" = done ]; then
        # docs/user-guide.md (you are alice) expects examples/quotas/:
        # alice's 8 GPUs instead of the demo's 1.
        kubectl apply -f "$ROOT/examples/quotas/" >/dev/null 2>&1 ||
            echo "demo: kubectl apply -f examples/quotas/ failed" >&2
        echo
        echo "The cluster keeps running (AIQ_DEMO_KEEP=1), with examples/quotas/ applied"
        echo "(alice may now use 8 GPUs, as docs/user-guide.md expects):"
        echo "  export KUBECONFIG=$KUBECONFIG KUBECACHEDIR=$KUBECACHEDIR PATH=$BIN:\$PATH"
        echo "  operator log: $T/operator.log    stop: kill $OP_PID $API_PID"
        return
    fi
    [ -n "$OP_PID" ] && kill "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null
    [ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null && wait "$API_PID" 2>/dev/null
    rm -rf "$T"
}
trap 'cleanup' EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

for p in "$SERVER" "$BIN/aiq-operator" "$BIN/kubectl-aiq"; do
    [ -x "$p" ] || die "$p is missing (run: make)"
done
command -v kubectl >/dev/null || die "kubectl is not on PATH"

say "Starting $WHAT (3 simulated GPU nodes from examples/demo/nodes.yaml)"
"$SERVER" --db "$T/cluster.db" --port 0 --kubeconfig "$KUBECONFIG" \
    --nodes "$D/nodes.yaml" --time-scale 1 \
    >"$T/apiserver.log" 2>&1 &
API_PID=$!
for _ in $(seq 1 1200); do
    grep -q listening "$T/apiserver.log" 2>/dev/null && break
    kill -0 "$API_PID" 2>/dev/null || die "the cluster did not start: $(tail -3 "$T/apiserver.log")"
    sleep 0.1
done
grep -q listening "$T/apiserver.log" || die "the cluster is not ready after 120 s: $(tail -3 "$T/apiserver.log")"
kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.count,aiq.dev/domain

say "kubectl apply -k crds/   (CRDs, RBAC, the operator's Deployment for real clusters)"
kubectl apply -k "$ROOT/crds/" | sed 's/^/  /'
kubectl wait --for condition=established --timeout=60s crd --all >/dev/null ||
    die "the CRDs were not established within 60 s"

say "Starting aiq-operator"
"$BIN/aiq-operator" --kubeconfig "$KUBECONFIG" --db "$T/aiq.db" --metrics-addr 127.0.0.1:0 \
    --cycle-ms 500 --backoff 2s --log-level info >"$T/operator.log" 2>&1 &
OP_PID=$!
for _ in $(seq 1 100); do
    grep -q "event=ready" "$T/operator.log" 2>/dev/null && break
    kill -0 "$OP_PID" 2>/dev/null || die "the operator did not start: $(tail -3 "$T/operator.log")"
    sleep 0.1
done
METRICS_PORT=$(sed -n 's/.*event=metrics_listening port=\([0-9]*\).*/\1/p' "$T/operator.log" | head -1)
OP_URL=http://127.0.0.1:$METRICS_PORT
echo "  ready; metrics on http://127.0.0.1:$METRICS_PORT/metrics, journal on /journal"

say "Groups, a user quota, the queue policies; activate the priority policy"
kubectl apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" \
    -f "$D/quota-alice.yaml" -f "$ROOT/examples/policies/" >/dev/null || die "kubectl apply of the examples failed"
kubectl patch queuepolicy fifo --type=merge -p '{"spec":{"active":false}}' | sed 's/^/  /'
kubectl patch queuepolicy priority --type=merge -p '{"spec":{"active":true}}' | sed 's/^/  /'
kubectl get queuepolicies fifo priority srjf
echo "  priority's levels, first served first: urgent (job.priority >= 1000), normal (>= 100), low"
kubectl get userquota alice -n team-vision

# ---- the event view: one line per change, like `kubectl get -w` ----------
# snap: one line per AIJob and per pod: key|state fields.
snap() {
    kubectl get aijobs -A -o jsonpath='{range .items[*]}aijob {.metadata.namespace}/{.metadata.name}|{.status.phase}|{.status.level}|{range .status.placement[*]}{.node}/gpu{.gpuIndexes} {end}|{.status.message}{"\n"}{end}' 2>/dev/null
    kubectl get pods -A -o jsonpath='{range .items[*]}pod {.metadata.namespace}/{.metadata.name}|{.status.phase}|{.spec.schedulingGates[*].name}|{.spec.nodeName}{"\n"}{end}' 2>/dev/null
}
echo "#" >"$T/prev"   # never empty: awk tells the two files apart by NR == FNR
# changes: print what differs from the last snapshot, stamped with the
# seconds since the first jobs were submitted (T0).
changes() {
    { echo "#"; snap; } >"$T/cur"
    el=$(( $(date +%s) - T0 ))
    awk -F'|' -v t="+${el}s" '
        NR == FNR { old[$1] = $0; next }
        old[$1] == $0 { next }
        $1 ~ /^aijob / && $2 == "" { next }   # no status yet: the operator has not seen it
        $1 ~ /^aijob / { split($1, k, " ")
            why = ($2 == "Queued" || $2 == "Pending") ? $5 : ""
            if (length(why) > 84) why = substr(why, 1, 81) "..."
            p = $4; sub(/ +$/, "", p)
            printf "  %-6s aijob %-24s %-9s %-7s %s%s\n", t, k[2], $2, $3, (p != "" ? "on " p : ""), why
            next }
        { split($1, k, " ")
          st = $3 != "" ? "gated by " $3 : ($4 != "" ? "node " $4 : "released, not yet bound")
          printf "  %-6s pod   %-24s %-9s %s\n", t, k[2], $2, st }
    ' "$T/prev" "$T/cur" | tee -a "$T/events"
    mv "$T/cur" "$T/prev"
}
# watch_until SECONDS CONDITION...: print changes every second until the
# condition holds or SECONDS pass.
watch_until() {
    lim=$1; shift
    w0=$(date +%s)
    while :; do
        changes
        "$@" && return 0
        [ $(( $(date +%s) - w0 )) -ge "$lim" ] && return 1
        sleep 1
    done
}
# at: when the next table was read, in seconds since T0.
at() { echo "  at +$(( $(date +%s) - T0 ))s:"; }
phase() { kubectl get aijob "$2" -n "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
is_phase() { p=$(phase "$1" "$2"); shift 2; for want; do [ "$p" = "$want" ] && return 0; done; return 1; }
running() { is_phase "$1" "$2" Running Succeeded; }
all_done() {
    kubectl get aijobs -A -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null |
        grep -q -v -E '^(Succeeded|Failed|Rejected)$' && return 1
    return 0
}
two_running() { running research warmup && running team-vision alice-1 && running team-nlp notebook-a && running team-nlp notebook-b; }

say "Wave 1: warmup fills the training nodes; two shared jobs; alice's two jobs"
kubectl apply -f "$D/jobs-1.yaml" | sed 's/^/  /'
T0=$(date +%s)
echo "  TIME   KIND  NAME                     PHASE     LEVEL   PLACEMENT / WHY IT WAITS"
watch_until 30 two_running || echo "  (wave 1 did not start within 30 s)"
sleep 2; changes

say "Two shared jobs (gpus: 0, 10000 MiB each) and their placement"
kubectl get aijobs -n team-nlp notebook-a notebook-b \
    -o custom-columns='NAME:.metadata.name,NODE:.status.placement[0].node,GPU:.status.placement[0].gpuIndexes[0],GPU-MEMORY:.status.placement[0].gpuMemory,PHASE:.status.phase'
cat <<TXT
  This demo runs the operator with --gpu-mechanism=device-plugin (the
  default): a shared pod asks for nvidia.com/gpu: 1, so it gets one whole
  GPU and aiq counts it as one -- the two notebooks sit on two GPUs above.
  With --gpu-mechanism=hami (HAMi installed on the nodes) aiq puts both on
  one GPU and HAMi limits each to its 10000 MiB: test/e2e/gpu_sharing.sh.
TXT

say "alice-2 waits on alice's quota (1 GPU), not on the cluster (infer-0 has a free GPU)"
at; kubectl aiq queue -n team-vision --operator-url "$OP_URL"

say "Wave 2 while warmup holds the training nodes: a gang of 4 and two more jobs"
kubectl apply -f "$D/jobs-2.yaml" | sed 's/^/  /'
sleep 2; changes
echo
echo "  The gang's pods exist but wait behind aiq's scheduling gate:"
kubectl get pods -n team-nlp -l aiq.dev/job=ddp \
    -o custom-columns='NAME:.metadata.name,GATES:.spec.schedulingGates[*].name,NODE:.spec.nodeName,PHASE:.status.phase'
echo
echo "  The queue under priority (level first, then score; ETAs from the estimates):"
at; kubectl aiq queue -A --operator-url "$OP_URL"

say "Switch the active policy to srjf (shortest predicted runtime first)"
kubectl patch queuepolicy priority --type=merge -p '{"spec":{"active":false}}' | sed 's/^/  /'
kubectl patch queuepolicy srjf --type=merge -p '{"spec":{"active":true}}' | sed 's/^/  /'
sleep 2
at; kubectl aiq queue -A --operator-url "$OP_URL"

say "The jobs run to the end (one line per change)"
echo "  TIME   KIND  NAME                     PHASE     LEVEL   PLACEMENT / WHY IT WAITS"
watch_until "$LIMIT" all_done || echo "  (jobs still moving after $LIMIT s; stopping the view)"

say "Summary"
gate_times=$(awk '$2 == "pod" && $3 ~ /^team-nlp\/ddp-/ && $5 != "gated" && !seen[$3]++ { print $1 }' "$T/events" | tr -d '+s' | sort -nu)
n=$(awk '$2 == "pod" && $3 ~ /^team-nlp\/ddp-/ && $5 != "gated" && !seen[$3]++' "$T/events" | wc -l)
# span FIRST ... LAST: when the pods left the gate. Each pod's gate goes
# in its own write (the API has no write of several objects), all sent at
# once; a poll of this view can still fall between them.
span() {
    if [ $# -le 1 ]; then
        echo "+${1:-?}s"
    else
        eval "last=\${$#}"
        echo "+$1s to +${last}s (a poll of this view fell between the pods' writes)"
    fi
}
echo "  the gang ddp: $n pods left the gate at $(span $gate_times)"
secs() { [ -n "$1" ] && date -u -d "$1" +%s; }
printf '  %-22s %-10s %-7s %-7s %s\n' JOB PHASE WAITED RAN WHERE
kubectl get aijobs -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.phase} {.metadata.creationTimestamp} {.status.startTime} {.status.completionTime} {range .status.placement[*]}{.node}/gpu{.gpuIndexes},{end}{"\n"}{end}' |
while read -r name ph created started done where; do
    c=$(secs "$created"); s=$(secs "$started"); e=$(secs "$done")
    waited=-; ran=-
    [ -n "$s" ] && waited="$((s - c))s"
    [ -n "$s" ] && [ -n "$e" ] && ran="$((e - s))s"
    printf '  %-22s %-10s %-7s %-7s %s\n' "$name" "$ph" "$waited" "$ran" "${where%,}"
done
echo "  ($(( $(date +%s) - T0 )) s since the first job was submitted)"

say "What to try next"
cat <<TXT
  Keep the cluster after the demo:   AIQ_DEMO_KEEP=1 make demo
  Then, with the printed KUBECONFIG and PATH:
    kubectl aiq queue -A                  # the queue in order, with the reasons
    kubectl aiq explain big-long -n research --operator-url http://127.0.0.1:$METRICS_PORT
                                          # score, level, quota, ETA and the decision journal
    kubectl get aijobs -A -o wide         # every job, its level, position and message
    kubectl patch queuepolicy srjf --type=merge -p '{"spec":{"active":false}}'
    kubectl patch queuepolicy fairshare --type=merge -p '{"spec":{"active":true}}'
    kubectl apply -f examples/invalid/    # the API server and the operator say what is wrong
  Tests: make test      Benchmarks: make bench
TXT
cleanup done
trap - EXIT
