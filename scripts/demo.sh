#!/bin/sh
# demo.sh -- `make demo`: a local cluster with simulated GPU nodes, the
# operator, and the examples applied with the real kubectl; shows the queue
# moving until the jobs finish (about a minute and a half), then says what
# to try next. Every process it starts is stopped on exit, unless
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
SCALE=${AIQ_DEMO_TIME_SCALE:-8}       # the simulated kubelet runs 8x faster
LIMIT=${AIQ_DEMO_SECONDS:-100}        # stop watching after this long
T=$(mktemp -d /tmp/aiq-demo.XXXXXX)
API_PID=""
OP_PID=""
export KUBECONFIG="$T/kubeconfig" KUBECACHEDIR="$T/kcache"
# kubectl finds its plugins on PATH: build/rel/kubectl-aiq is `kubectl aiq`.
export PATH="$BIN:$PATH"

cleanup() {
    if [ -n "${AIQ_DEMO_KEEP:-}" ] && [ "${1:-}" = done ]; then
        echo
        echo "The cluster keeps running (AIQ_DEMO_KEEP=1):"
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

say "Starting $WHAT (simulated GPU nodes from examples/cluster/nodes-demo.yaml, time x$SCALE)"
"$SERVER" --db "$T/cluster.db" --port 0 --kubeconfig "$KUBECONFIG" \
    --nodes "$ROOT/examples/cluster/nodes-demo.yaml" --time-scale "$SCALE" \
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
echo "  ready; metrics on http://127.0.0.1:$METRICS_PORT/metrics, journal on /journal"

say "Groups, user quotas and queue policies (fifo is the active one)"
kubectl apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" \
    -f "$ROOT/examples/quotas/" -f "$ROOT/examples/policies/" | sed 's/^/  /'
sleep 1
kubectl get groups
kubectl get userquotas -A

say "Submitting the example AIJobs"
kubectl apply -f "$ROOT/examples/jobs/" | sed 's/^/  /'
sleep 2
say "kubectl aiq queue -A   (the plugin: who waits, in queue order, and why)"
kubectl aiq queue -A

# Jobs still moving: anything not finished, rejected or held.
active() {
    kubectl get aijobs -A -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null |
        grep -c -E '^(|Pending|Queued|Admitted|Running)$'
}
start=$(date +%s)
tty=0; [ -t 1 ] && tty=1
while :; do
    now=$(date +%s); el=$((now - start))
    [ "$tty" = 1 ] && printf '\033[H\033[2J'
    say "kubectl get aijobs -A   (every 2 s; ${el}s elapsed)"
    kubectl get aijobs -A
    n=$(active)
    [ "$n" = 0 ] && break
    [ "$el" -ge "$LIMIT" ] && { echo "  ($n jobs still moving; stopping the view)"; break; }
    sleep 2
done

say "Where things ended"
kubectl get aijobs -A -o wide
kubectl get groups
echo
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" 2>/dev/null |
    grep -E '^aiq_(admitted_total|finished_total|pending_jobs)' | sed 's/^/  /'

say "What to try next"
cat <<TXT
  Keep the cluster after the demo:   AIQ_DEMO_KEEP=1 make demo
  Then, with the printed KUBECONFIG and PATH:
    kubectl aiq queue -A                                   # the queue in order, with the reasons
    kubectl aiq explain gpt-13b-pretrain -n team-nlp --operator-url http://127.0.0.1:$METRICS_PORT
                                           # score, level, quota, ETA and the decision journal
    kubectl describe aijob bert-large-ddp -n team-nlp      # score term by term, Events
    kubectl patch aijob sd-finetune -n team-vision --type=merge -p '{"spec":{"suspend":false}}'
    kubectl patch queuepolicy fifo --type=merge -p '{"spec":{"active":false}}'
    kubectl patch queuepolicy srjf --type=merge -p '{"spec":{"active":true}}'   # reorders the queue
    kubectl apply -f examples/invalid/   # the API server and the operator say what is wrong
    kubectl get userquotas -A            # over-allocated quotas are rejected with the reason
  Tests: make test      Benchmarks: make bench
TXT
cleanup done
trap - EXIT
