#!/bin/sh
# servers: local real
# api_auth.sh -- the operator's /journal and /queue for callers on other
# hosts (issue 15 item 7): with --api-remote the operator listens on a
# non-loopback address and answers only a Kubernetes bearer token the API
# server accepts (TokenReview) whose user the cluster's RBAC lets do what
# is asked (SubjectAccessReview): list aijobs in the namespace for /queue,
# get aijobs/journal (crds/roles.yaml) for /journal. The demo users of
# examples/rbac: alice (aiq:vision, team-vision), bob (aiq:nlp), admin
# (aiq:admins). kubectl aiq sends the kubeconfig's token to such an
# operator and shows the journal.
. "$(dirname "$0")/lib.sh"

ADDR=192.0.2.2
if ! ip -4 addr 2>/dev/null | grep -q "inet $ADDR/"; then
    bad "this test needs the non-loopback address $ADDR on the machine (ip -4 addr)"
    e2e_done
fi
e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1 --tls \
    --admin-token api-auth-admin --tokens "$ROOT/examples/rbac/tokens.csv" --authz=rbac
wait_for 60 "the aiq.dev resources are served" kubectl get groups,aijobs,queuepolicies,userquotas -A
kubectl apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" \
    -f "$ROOT/examples/rbac/" >"$T/apply.out" 2>&1 || { bad "apply the demo namespaces, groups, RBAC"; cat "$T/apply.out"; }
op_start --metrics-addr "$ADDR:0" --api-remote
PORT=$(sed -n 's/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)
URL=http://$ADDR:$PORT
check "the operator listens on $ADDR ($PORT)" [ -n "$PORT" ]

job() { # name replicas
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: team-vision}
spec:
  user: alice
  replicas: $2
  resources: {gpus: 8, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 600s}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
job first 2 | kubectl --token alice-demo-token apply -f - >/dev/null
wait_for 30 "alice's first job runs on all 16 GPUs" sh -c '
  [ "$(kubectl get aijob first -n team-vision -o jsonpath={.status.phase})" = Running ]'
job big 1 | kubectl --token alice-demo-token apply -f - >/dev/null
wait_for 30 "her second job waits" sh -c '
  [ "$(kubectl get aijob big -n team-vision -o jsonpath={.status.phase})" = Queued ]'

# get TOKEN PATH -> "CODE BODY" in $T/resp
get() {
    if [ -n "$1" ]; then
        curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $1" "$URL$2" >"$T/code"
    else
        curl -s -o "$T/body" -w '%{http_code}' "$URL$2" >"$T/code"
    fi
    echo "$(cat "$T/code") $(cat "$T/body")"
}
expect() { # what TOKEN PATH CODE PATTERN
    what=$1; out=$(get "$2" "$3")
    if [ "${out%% *}" = "$4" ] && echo "$out" | grep -q -- "$5"; then ok "$what"
    else bad "$what (want $4 and /$5/, got: $(echo "$out" | head -c 300))"; fi
}
expect "no token: 401, saying a bearer token is needed" "" "/queue?namespace=team-vision" 401 "no bearer token"
expect "a token the API server does not know: 401" not-a-token "/queue?namespace=team-vision" 401 \
    "not valid for this cluster"
expect "alice reads the live queue of team-vision" alice-demo-token "/queue?namespace=team-vision" 200 '"big"'
expect "bob may not list team-vision's jobs: 403 naming him and the permission" bob-demo-token \
    "/queue?namespace=team-vision" 403 'user \\"bob\\" may not list aijobs (aiq.dev) in namespace team-vision'
expect "alice reads her job's journal" alice-demo-token "/journal?job=team-vision/big" 200 '"items"'
expect "bob may not read it: get aijobs/journal in team-vision" bob-demo-token \
    "/journal?job=team-vision/big" 403 'may not get aijobs/journal (aiq.dev) in namespace team-vision'
expect "alice may not read a journal in team-nlp" alice-demo-token "/journal?job=team-nlp/x" 403 \
    'user \\"alice\\" may not get aijobs/journal (aiq.dev) in namespace team-nlp'
expect "an aiq admin (cluster-wide role) reads alice's journal" admin-demo-token \
    "/journal?job=team-vision/big" 200 '"items"'
expect "a /queue for all namespaces needs a cluster-wide list: alice 403" alice-demo-token "/queue" 403 \
    'may not list aijobs (aiq.dev) cluster-wide'
expect "... an admin has it" admin-demo-token "/queue" 200 '"big"'
expect "/readyz stays open without a token (probes)" "" "/readyz" 200 "ok"

# kubectl aiq as alice: her own kubeconfig (the cluster's, her token).
cp "$T/kubeconfig" "$T/alice.kubeconfig"
KUSER=$(kubectl config view -o jsonpath='{.users[0].name}')
KUBECONFIG=$T/alice.kubeconfig kubectl config set-credentials "$KUSER" --token=alice-demo-token >/dev/null
check "kubectl aiq explain as alice sends her token to the remote operator and shows the journal" sh -c '
  KUBECONFIG=$T/alice.kubeconfig "$0" explain big -n team-vision --operator-url "$1" >"$T/explain.out" 2>&1
  tail -12 "$T/explain.out"
  grep -q "Journal" "$T/explain.out" && ! grep -q "not available" "$T/explain.out"' \
  "$BUILD/kubectl-aiq" "$URL"
e2e_done
