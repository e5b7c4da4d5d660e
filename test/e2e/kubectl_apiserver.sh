#!/bin/sh
# kubectl_apiserver.sh -- drives the REAL kubectl on PATH against the local
# API server (aiq-apiserver) and checks kubectl's output: CRDs from
# crds/ (kubectl apply -k), AIJobs (apply, get -A/-o wide/-o yaml/-w,
# describe with events, patch merge/json/status, label, wait, delete with
# garbage collection), pods with scheduling gates run by the simulator, and
# nodes. Prints "ok"/"FAIL" per check and ends with "N passed, N failed".
#
# Runs on both servers (AIQ_API, test/e2e/_server.sh): what kubectl shows
# must be the same on the local server and on the real control plane.
#
# Env: AIQ_BUILD (default build/san, falling back to build/rel), AIQ_SRC, AIQ_API.
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${AIQ_BUILD:-$ROOT/build/san}
[ -x "$BUILD/aiq-apiserver" ] || BUILD=$ROOT/build/rel
P=0
F=0
TMP=$(mktemp -d /tmp/aiq-e2e-api.XXXXXX)
T=$TMP
API_PID=""
. "$ROOT/test/e2e/_server.sh"

cleanup() {
    if [ -n "$API_PID" ]; then
        kill "$API_PID" 2>/dev/null
        wait "$API_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

ok() { P=$((P + 1)); echo "ok   $1"; }
bad() { F=$((F + 1)); echo "FAIL $1"; [ -f "$TMP/out" ] && sed 's/^/     | /' "$TMP/out" | head -20; }
# check NAME PATTERN CMD...: runs CMD (stdout+stderr to $TMP/out) and
# passes when the output matches the extended regex PATTERN.
check() {
    name=$1; pat=$2; shift 2
    "$@" >"$TMP/out" 2>&1
    if grep -Eq -- "$pat" "$TMP/out"; then ok "$name"; else bad "$name (want /$pat/)"; fi
}
# check_rc NAME RC CMD...: passes when CMD exits with RC.
check_rc() {
    name=$1; want=$2; shift 2
    "$@" >"$TMP/out" 2>&1
    rc=$?
    if [ "$rc" = "$want" ]; then ok "$name"; else bad "$name (exit $rc, want $want)"; fi
}

if ! command -v kubectl >/dev/null 2>&1; then
    echo "FAIL kubectl not on PATH"
    echo "0 passed, 1 failed"
    exit 1
fi
export KUBECONFIG="$TMP/kubeconfig" KUBECACHEDIR="$TMP/cache"
if ! api_up 1 --port 0 --nodes "$ROOT/test/fixtures/nodes-small.yaml" --time-scale 20; then
    echo "FAIL server did not start"
    echo "0 passed, 1 failed"
    exit 1
fi
ok "server ready: $(grep listening "$TMP/api.log")"
K="kubectl --request-timeout=20s"

# The local server says 1.32 (the kubectl dispatcher runs the 1.32 client
# for it); the real control plane is Kubernetes 1.34.
if [ "$AIQ_API" = real ]; then VERSION='v1\.34'; else VERSION='v1\.32'; fi
check "version reports the server" "Server Version: $VERSION" $K version

# ---- CRDs ---------------------------------------------------------------------
if [ -f "$ROOT/crds/kustomization.yaml" ] && grep -rqs "kind: AIJob" "$ROOT/crds"; then
    check "apply -k crds/" 'customresourcedefinition.apiextensions.k8s.io/aijobs.aiq.dev (created|configured)' \
        $K apply -k "$ROOT/crds"
    RES=aijobs; KIND=AIJob; GROUP=aiq.dev; API=aiq.dev/v1alpha1; SHORT=aij
    SPEC='  user: alice
  priority: 5
  replicas: 1
  resources:
    gpus: 1
    cpu: "2"
    memory: 8Gi
  estimatedRuntime: 1h
  template:
    spec:
      containers:
      - name: main
        image: busybox'
    GPUPATH='{.spec.resources.gpus}'
    PATCH_MERGE='{"spec":{"resources":{"gpus":2}}}'
    PATCH_JSON='[{"op":"replace","path":"/spec/resources/gpus","value":3}]'
else
    echo "note: crds/ has no kustomization with the AIJob CRD yet; using test/fixtures/apiserver-crd.yaml"
    check "apply CRD fixture" 'testjobs.test.aiq.dev created' $K apply -f "$ROOT/test/fixtures/apiserver-crd.yaml"
    RES=testjobs; KIND=TestJob; GROUP=test.aiq.dev; API=test.aiq.dev/v1; SHORT=tj
    SPEC='  user: alice
  gpus: 1
  queue: high'
    GPUPATH='{.spec.gpus}'
    PATCH_MERGE='{"spec":{"gpus":2}}'
    PATCH_JSON='[{"op":"replace","path":"/spec/gpus","value":3}]'
fi
check "CRD established" 'condition met' $K wait --for=condition=Established "crd/$RES.$GROUP" --timeout=10s
check "api-resources lists the kind with its short name" "^$RES +$SHORT +$API +true +$KIND" $K api-resources

cat >"$TMP/job.yaml" <<EOF
apiVersion: $API
kind: $KIND
metadata:
  name: e2e-job1
  labels:
    team: vision
spec:
$SPEC
EOF

# ---- AIJobs: apply / get -------------------------------------------------------------
check "apply creates" "$RES.$GROUP/e2e-job1 created|$(echo "$KIND" | tr 'A-Z' 'a-z').$GROUP/e2e-job1 created" \
    $K apply -f "$TMP/job.yaml"
check "apply again is unchanged" 'e2e-job1 unchanged' $K apply -f "$TMP/job.yaml"
check "get shows printer columns" '^NAME +.*AGE' $K get "$RES"
check "get shows the job row" '^e2e-job1 ' $K get "$RES"
check "get by short name" '^e2e-job1 ' $K get "$SHORT" e2e-job1
check "get -A has a namespace column" '^default +e2e-job1 ' $K get "$RES" -A
$K get "$RES" >"$TMP/narrow" 2>&1
$K get "$RES" -o wide >"$TMP/wide" 2>&1
nn=$(head -1 "$TMP/narrow" | wc -w); nw=$(head -1 "$TMP/wide" | wc -w)
if [ "$nw" -ge "$nn" ] && grep -q '^e2e-job1 ' "$TMP/wide"; then ok "get -o wide ($nn -> $nw header words)"; else bad "get -o wide ($nn -> $nw)"; fi
check "get -o yaml shows spec and server metadata" 'user: alice' $K get "$RES" e2e-job1 -o yaml
check "get -o yaml has uid and resourceVersion" 'resourceVersion: "[0-9]+"' $K get "$RES" e2e-job1 -o yaml
check "get --show-labels" 'team=vision' $K get "$RES" --show-labels
check "get all includes the category" "e2e-job1" $K get all

# ---- patch / label ----------------------------------------------------------------------
check "patch --type=merge" 'e2e-job1 patched' $K patch "$RES" e2e-job1 --type=merge -p "$PATCH_MERGE"
check "merge patch applied" '^2$' $K get "$RES" e2e-job1 -o "jsonpath=$GPUPATH"
check "patch --type=json" 'e2e-job1 patched' $K patch "$RES" e2e-job1 --type=json -p "$PATCH_JSON"
check "json patch applied, generation bumped" '^3 3$' $K get "$RES" e2e-job1 -o "jsonpath=$GPUPATH {.metadata.generation}"
check "strategic patch refused for a custom resource" 'not supported' $K patch "$RES" e2e-job1 -p "$PATCH_MERGE"
check "patch --subresource=status" 'e2e-job1 patched' $K patch "$RES" e2e-job1 --subresource=status --type=merge \
    -p '{"status":{"phase":"Queued","message":"waiting in level 1"}}'
check "status written, spec and generation kept" '^Queued 3 3$' \
    $K get "$RES" e2e-job1 -o "jsonpath={.status.phase} $GPUPATH {.metadata.generation}"
check "label" 'e2e-job1 labeled' $K label "$RES" e2e-job1 env=prod
check "label selector" '^e2e-job1 ' $K get "$RES" -l env=prod
check "label selector excludes" 'No resources found' $K get "$RES" -l env=dev
check "patch --dry-run=server answers" 'e2e-job1 patched' \
    $K patch "$RES" e2e-job1 --type=merge -p "$PATCH_MERGE" --dry-run=server
check "after dry-run the value is unchanged" '^3$' $K get "$RES" e2e-job1 -o "jsonpath=$GPUPATH"

# ---- watch ----------------------------------------------------------------------------------
timeout 4 $K get "$RES" -w >"$TMP/watch" 2>&1 &
WPID=$!
sleep 1.5
$K label "$RES" e2e-job1 watched=yes >/dev/null 2>&1
wait $WPID 2>/dev/null
n=$(grep -c '^e2e-job1 ' "$TMP/watch")
if [ "$n" -ge 2 ] && grep -q '^NAME ' "$TMP/watch"; then ok "get -w prints the list then the change ($n rows)"; else cp "$TMP/watch" "$TMP/out"; bad "get -w ($n rows)"; fi

timeout 4 $K get "$RES" e2e-job1 -w -o json >"$TMP/watch1" 2>&1 &
WPID=$!
sleep 1.5
$K annotate "$RES" e2e-job1 note=seen >/dev/null 2>&1
wait $WPID 2>/dev/null
n=$(grep -c '"name": "e2e-job1"' "$TMP/watch1")
if [ "$n" -ge 2 ] && grep -q '"note": "seen"' "$TMP/watch1"; then ok "get NAME -w -o json streams the object and its change"; else cp "$TMP/watch1" "$TMP/out"; bad "get NAME -w -o json ($n objects)"; fi

# ---- wait --------------------------------------------------------------------------------------
$K patch "$RES" e2e-job1 --subresource=status --type=merge -p \
    '{"status":{"observedGeneration":3,"conditions":[{"type":"Admitted","status":"True","reason":"Fits","message":"gang fits","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' >/dev/null 2>&1
check "wait --for=condition=Admitted" 'condition met' $K wait --for=condition=Admitted "$RES/e2e-job1" --timeout=10s
check_rc "wait on a missing condition times out with exit 1" 1 $K wait --for=condition=Running "$RES/e2e-job1" --timeout=2s
cp "$TMP/out" "$TMP/waitout"
check "  ... and says so" 'timed out waiting for the condition' cat "$TMP/waitout"

# ---- describe with events ---------------------------------------------------------------------
UID1=$($K get "$RES" e2e-job1 -o 'jsonpath={.metadata.uid}')
cat >"$TMP/event.yaml" <<EOF
apiVersion: v1
kind: Event
metadata:
  name: e2e-job1.queued
involvedObject:
  apiVersion: $API
  kind: $KIND
  name: e2e-job1
  namespace: default
  uid: $UID1
reason: Queued
message: waiting in level 1 behind 2 jobs
type: Normal
count: 3
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
source:
  component: aiq-operator
EOF
$K apply -f "$TMP/event.yaml" >/dev/null 2>&1
check "describe shows the job" 'Name: +e2e-job1' $K describe "$RES" e2e-job1
check "describe shows its events" 'Normal +Queued +.*\(x3 over .*\) +aiq-operator +waiting in level 1 behind 2 jobs' \
    $K describe "$RES" e2e-job1

# ---- validation --------------------------------------------------------------------------------
cat >"$TMP/bad.yaml" <<EOF
apiVersion: $API
kind: $KIND
metadata:
  name: e2e-bad
spec:
  replicas: "many"
  gpus: "lots"
EOF
check "invalid object rejected with the field named" "The $KIND \"e2e-bad\" is invalid|strict decoding error" $K apply -f "$TMP/bad.yaml"

# ---- pods and nodes (simulated) -----------------------------------------------------------------
check "get nodes" '^a100-0 +Ready ' $K get nodes
check "get nodes -o wide" 'INTERNAL-IP' $K get nodes -o wide
check "describe node shows GPU capacity" 'nvidia.com/gpu' $K describe node a100-0
cat >"$TMP/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: e2e-job1-0
  annotations:
    sim.aiq.dev/duration: 600s
  ownerReferences:
  - apiVersion: $API
    kind: $KIND
    name: e2e-job1
    uid: $UID1
spec:
  schedulingGates:
  - name: aiq.dev/admission
  containers:
  - name: main
    image: busybox
    resources:
      limits:
        nvidia.com/gpu: "1"
EOF
check "apply a gated pod" 'pod/e2e-job1-0 created' $K apply -f "$TMP/pod.yaml"
sleep 0.5
check "gated pod shows SchedulingGated" '^e2e-job1-0 +0/1 +SchedulingGated ' $K get pods
check "adding a gate is refused" "only deletion is allowed, but found new scheduling gate 'x'" \
    $K patch pod e2e-job1-0 --type=json -p '[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"x"}}]'
check "node affinity may be set while gated" 'pod/e2e-job1-0 patched' $K patch pod e2e-job1-0 -p \
    '{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["h100-1"]}]}]}}}}}'
check "removing the gate" 'pod/e2e-job1-0 patched' $K patch pod e2e-job1-0 --type=json \
    -p '[{"op":"remove","path":"/spec/schedulingGates"}]'
i=0
while [ $i -lt 50 ] && ! $K get pods 2>/dev/null | grep -q '^e2e-job1-0 .*Running'; do sleep 0.2; i=$((i + 1)); done
check "simulator binds to the affinity node and runs it" '^e2e-job1-0 +1/1 +Running .* h100-1 ' $K get pods -o wide
# kubectl logs reaches the node's kubelet on a real cluster; the fake nodes
# of the real control plane have none, so only the local server answers.
if [ "$AIQ_API" = local ]; then
    check "logs tells what the simulated container did" 'simulated container main of pod e2e-job1-0 on node h100-1' \
        $K logs e2e-job1-0
fi
check "describe pod shows the scheduling event" 'Scheduled .*default/e2e-job1-0 to h100-1' $K describe pod e2e-job1-0
check "affinity is frozen once ungated" 'Forbidden' $K patch pod e2e-job1-0 -p '{"spec":{"affinity":null}}'
check "field selector on spec.nodeName" '^e2e-job1-0 ' $K get pods --field-selector spec.nodeName=h100-1

# ---- server-side apply, events by field ------------------------------------------------------------
check "events selected by involvedObject fields" 'Queued +.*waiting in level 1' \
    $K get events --field-selector "involvedObject.name=e2e-job1,involvedObject.kind=$KIND"
sed 's/name: e2e-job1/name: e2e-ssa/' "$TMP/job.yaml" >"$TMP/ssa.yaml"
check "apply --server-side creates" 'e2e-ssa serverside-applied' $K apply --server-side -f "$TMP/ssa.yaml"
check "apply --server-side again merges" 'e2e-ssa serverside-applied' $K apply --server-side -f "$TMP/ssa.yaml"
check "server-side applied object is served" '^e2e-ssa ' $K get "$RES"
check "delete -f" 'e2e-ssa" deleted' $K delete -f "$TMP/ssa.yaml"

# ---- delete -----------------------------------------------------------------------------------------
check "delete" "e2e-job1\" deleted" $K delete "$RES" e2e-job1
check "deleted job is gone" 'NotFound' $K get "$RES" e2e-job1
# The real garbage collector learns of a new CRD's kind at its next
# discovery resync (every 30 s), so an owner deleted soon after the CRD
# was made may wait that long for its dependents to go.
i=0
while [ $i -lt 300 ] && $K get pod e2e-job1-0 >/dev/null 2>&1; do sleep 0.2; i=$((i + 1)); done
check "owned pod garbage-collected" 'NotFound' $K get pod e2e-job1-0
check_rc "deleting a missing job exits 1" 1 $K delete "$RES" e2e-job1

kill "$API_PID" 2>/dev/null
wait "$API_PID" 2>/dev/null
API_PID=""
if grep -q 'Sanitizer' "$TMP/api.log"; then cp "$TMP/api.log" "$TMP/out"; bad "server sanitizer report"; else ok "server exits clean"; fi
echo "$P passed, $F failed"
[ "$F" = 0 ]
