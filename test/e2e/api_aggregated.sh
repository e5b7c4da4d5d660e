#!/bin/sh
# servers: local real
# api_aggregated.sh -- the operator's aggregated API query.aiq.dev/v1alpha1
# (issue 15 item 7): kube-apiserver authenticates the caller, checks RBAC
# on queues/journals.query.aiq.dev (crds/roles.yaml) and proxies over TLS
# with its front-proxy client certificate and X-Remote-User/Group; the
# operator believes those headers only from a certificate the front-proxy
# CA signed with an allowed CN, then asks the API server about aijobs
# (SubjectAccessReview). crds/aggregated-api.yaml is applied as shipped;
# the test adds what a real cluster's controllers and cert tooling would:
# the serving certificate (openssl), the APIService's caBundle and the
# Service's EndpointSlice (no endpointslice controller runs on either
# server). Both servers name their front-proxy CA in their listening line.
. "$(dirname "$0")/lib.sh"

ADDR=192.0.2.2
if ! ip -4 addr 2>/dev/null | grep -q "inet $ADDR/"; then
    bad "this test needs the non-loopback address $ADDR on the machine (ip -4 addr)"
    e2e_done
fi
# The demo users, and eve, who is signed in but holds no aiq role.
{ cat "$ROOT/examples/rbac/tokens.csv"; echo 'eve-token,eve,u-eve,'; } >"$T/tokens.csv"
e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1 --tls \
    --admin-token aggr-admin --tokens "$T/tokens.csv" --authz=rbac
PKI=$(dirname "$(sed -n 's/.* front-proxy-ca=\([^ ]*\).*/\1/p' "$T/api.log" | head -1)")
check "the API server wrote its front-proxy CA and client pair ($PKI)" \
    test -s "$PKI/front-proxy-ca.crt" -a -s "$PKI/front-proxy-client.crt" -a -s "$PKI/front-proxy-ca.key"
wait_for 60 "the aiq.dev resources are served" kubectl get groups,aijobs,queuepolicies,userquotas -A
kubectl apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" \
    -f "$ROOT/examples/rbac/" >"$T/apply.out" 2>&1 || { bad "apply the demo namespaces, groups, RBAC"; cat "$T/apply.out"; }

# The operator's serving pair for aiq-operator-api.aiq-system.svc, from a
# CA of the test's own (what cert-manager would issue).
(
    cd "$T" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj /CN=aiq-test-serving-ca -keyout sca.key -out sca.crt &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -subj /CN=aiq-operator-api -keyout srv.key -out srv.csr &&
        printf 'subjectAltName=DNS:aiq-operator-api.aiq-system.svc\nextendedKeyUsage=serverAuth\n' >srv.ext &&
        openssl x509 -req -in srv.csr -CA sca.crt -CAkey sca.key -CAcreateserial -days 2 \
            -extfile srv.ext -out srv.crt
) >"$T/openssl.out" 2>&1 || { bad "openssl serving pair"; cat "$T/openssl.out"; }

op_start --aggregated-addr "$ADDR:0" --aggregated-tls-cert "$T/srv.crt" --aggregated-tls-key "$T/srv.key" \
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
PORT=$(sed -n 's/.*event=aggregated_listening .*port=\([0-9]*\).*/\1/p' "$T/op.log" | head -1)
check "the operator serves query.aiq.dev on $ADDR ($PORT)" [ -n "$PORT" ]

kubectl apply -f "$ROOT/crds/aggregated-api.yaml" >"$T/aggr.out" 2>&1 || { bad "apply crds/aggregated-api.yaml"; cat "$T/aggr.out"; }
kubectl patch apiservice v1alpha1.query.aiq.dev --type merge \
    -p "{\"spec\":{\"caBundle\":\"$(base64 -w0 "$T/sca.crt")\"}}" >/dev/null ||
    bad "set the APIService's caBundle"
kubectl apply -f - >/dev/null <<Y || bad "create the Service's EndpointSlice"
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: aiq-operator-api-test
  namespace: aiq-system
  labels: {kubernetes.io/service-name: aiq-operator-api}
addressType: IPv4
ports: [{name: https, port: $PORT, protocol: TCP}]
endpoints: [{addresses: ["$ADDR"], conditions: {ready: true}}]
Y
wait_for 60 "the APIService is Available (kube-aggregator's discovery check passed)" sh -c '
  [ "$(kubectl get apiservice v1alpha1.query.aiq.dev -o jsonpath="{.status.conditions[?(@.type==\"Available\")].status}")" = True ] ||
  { kubectl get apiservice v1alpha1.query.aiq.dev -o jsonpath="{.status.conditions}"; false; }'
check "discovery lists queues and journals" sh -c '
  kubectl api-resources --api-group=query.aiq.dev 2>&1 | tee /dev/stderr | grep -q journals'

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

G=/apis/query.aiq.dev/v1alpha1
# raw TOKEN PATH: kubectl get --raw as that user; output and errors in $T/raw
raw() { kubectl --token "$1" get --raw "$2" >"$T/raw" 2>&1; }
expect() { # what TOKEN PATH ok|fail PATTERN
    if raw "$2" "$3"; then got=ok; else got=fail; fi
    if [ "$got" = "$4" ] && grep -q -- "$5" "$T/raw"; then ok "$1"
    else bad "$1 (want $4 and /$5/, got $got: $(head -c 300 "$T/raw"))"; fi
}
expect "alice reads team-vision's live queue through the API server" alice-demo-token \
    "$G/namespaces/team-vision/queues" ok '"big"'
expect "... and her waiting job's entry by name" alice-demo-token \
    "$G/namespaces/team-vision/queues/big" ok '"big"'
expect "alice reads big's journal through the API server" alice-demo-token \
    "$G/namespaces/team-vision/journals/big" ok '"items"'
expect "eve (no role) is refused by the API server: Forbidden on queues.query.aiq.dev" eve-token \
    "$G/namespaces/team-vision/queues" fail 'cannot list resource "queues" in API group "query.aiq.dev"'
expect "bob (team-nlp) may not read team-vision's journal: Forbidden" bob-demo-token \
    "$G/namespaces/team-vision/journals/big" fail 'Forbidden'
expect "alice may not read the cluster-wide queue" alice-demo-token "$G/queues" fail 'Forbidden'
expect "an aiq admin reads the cluster-wide queue" admin-demo-token "$G/queues" ok '"big"'
expect "an aiq admin reads live GPU utilisation (source off here) through the API server" \
    admin-demo-token "$G/utilisations" ok '"source":"none"'
expect "alice may not read cluster-wide utilisation: Forbidden" alice-demo-token \
    "$G/utilisations" fail 'Forbidden'

# eve given queues.query.aiq.dev but not aijobs: the API server lets her
# through, the operator's own check refuses her.
kubectl apply -f - >/dev/null <<'Y' || bad "give eve only the aggregated queues"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: queues-only, namespace: team-vision}
rules: [{apiGroups: ["query.aiq.dev"], resources: ["queues"], verbs: ["list"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: eve-queues-only, namespace: team-vision}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: queues-only}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: eve}]
Y
wait_for 10 "with only queues.query.aiq.dev, the operator refuses eve: she may not list aijobs" sh -c '
  ! kubectl --token eve-token get --raw '"$G"'/namespaces/team-vision/queues >"$T/raw" 2>&1 &&
  grep -q "eve.* may not list aijobs (aiq.dev) in namespace team-vision" "$T/raw" ||
  { cat "$T/raw"; false; }'

# Straight to the operator's TLS port, around kube-apiserver.
U=https://$ADDR:$PORT$G/namespaces/team-vision/queues
direct() { # what CODE PATTERN [curl args]
    what=$1 code=$2 pat=$3; shift 3
    got=$(curl -s --cacert "$T/sca.crt" --resolve "aiq-operator-api.aiq-system.svc:$PORT:$ADDR" \
        -o "$T/body" -w '%{http_code}' -H 'X-Remote-User: admin' -H 'X-Remote-Group: system:masters' \
        "$@" "https://aiq-operator-api.aiq-system.svc:$PORT$G/namespaces/team-vision/queues")
    if [ "$got" = "$code" ] && grep -q -- "$pat" "$T/body"; then ok "$what"
    else bad "$what (want $code /$pat/, got $got: $(head -c 300 "$T/body"))"; fi
}
direct "no client certificate, forged X-Remote-User: 401" 401 "no client certificate"
(
    cd "$T" &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=front-proxy-client \
            -keyout other.key -out other.csr &&
        printf 'extendedKeyUsage=clientAuth\n' >cl.ext &&
        openssl x509 -req -in other.csr -CA sca.crt -CAkey sca.key -CAcreateserial -days 2 \
            -extfile cl.ext -out other.crt &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=mallory \
            -keyout mallory.key -out mallory.csr &&
        openssl x509 -req -in mallory.csr -CA "$PKI/front-proxy-ca.crt" -CAkey "$PKI/front-proxy-ca.key" \
            -CAcreateserial -days 2 -extfile cl.ext -out mallory.crt
) >"$T/openssl2.out" 2>&1 || { bad "openssl client certificates"; cat "$T/openssl2.out"; }
direct "a client certificate from another CA, CN front-proxy-client: 401" 401 \
    "does not verify against --requestheader-client-ca-file" --cert "$T/other.crt" --key "$T/other.key"
direct "the front-proxy CA but CN mallory: 401 (not an allowed name)" 401 \
    'CN \\"mallory\\" is not in --requestheader-allowed-names' --cert "$T/mallory.crt" --key "$T/mallory.key"
direct "kube-apiserver's own front-proxy pair is believed" 200 '"big"' \
    --cert "$PKI/front-proxy-client.crt" --key "$PKI/front-proxy-client.key"
check "plain HTTP to the TLS port gets no answer" sh -c "
  ! curl -s -m 5 http://$ADDR:$PORT$G | grep -q big"
# kubectl aiq without --operator-url goes through the API server with the
# kubeconfig's credentials: alice's own kubeconfig.
cp "$T/kubeconfig" "$T/alice.kubeconfig"
KUSER=$(kubectl config view -o jsonpath='{.users[0].name}')
KUBECONFIG=$T/alice.kubeconfig kubectl config set-credentials "$KUSER" --token=alice-demo-token >/dev/null
AQ=$BUILD/kubectl-aiq
check "kubectl aiq explain as alice: the journal and the live entry through the API server" sh -c '
  KUBECONFIG=$T/alice.kubeconfig "$0" explain big -n team-vision >"$T/explain.out" 2>&1
  tail -14 "$T/explain.out"
  grep -q "^Journal:   [0-9]* recent entr" "$T/explain.out" && ! grep -q "not available" "$T/explain.out"' "$AQ"
check "kubectl aiq queue as alice shows the live view" sh -c '
  KUBECONFIG=$T/alice.kubeconfig "$0" queue -n team-vision >"$T/queue.out" 2>&1; cat "$T/queue.out"
  grep -q big "$T/queue.out" && ! grep -q "Live view not available" "$T/queue.out"' "$AQ"
kubectl delete endpointslice -n aiq-system aiq-operator-api-test >/dev/null || bad "delete the EndpointSlice"
wait_for 60 "without endpoints the APIService turns unavailable" sh -c '
  [ "$(kubectl get apiservice v1alpha1.query.aiq.dev -o jsonpath="{.status.conditions[?(@.type==\"Available\")].status}")" = False ]'
check "kubectl aiq (admin) names the unavailable APIService and why" sh -c '
  "$0" explain big -n team-vision >"$T/x.out" 2>&1; grep Journal "$T/x.out"
  grep -q "APIService v1alpha1.query.aiq.dev is not available (EndpointsNotFound: cannot find endpointslices" "$T/x.out"' "$AQ"
kubectl delete apiservice v1alpha1.query.aiq.dev >/dev/null || bad "delete the APIService"
wait_for 30 "without the APIService kubectl aiq says it is not installed and how to set it up" sh -c '
  "$0" explain big -n team-vision >"$T/x.out" 2>&1; grep Journal "$T/x.out"
  grep -q "APIService v1alpha1.query.aiq.dev is not installed: apply crds/aggregated-api.yaml" "$T/x.out"' "$AQ"
check "--operator-url still reaches the operator's own port" sh -c '
  port=$(sed -n "s/.*event=metrics_listening .*port=\([0-9]*\).*/\1/p" "$T/op.log" | head -1)
  "$0" explain big -n team-vision --operator-url "http://127.0.0.1:$port" >"$T/x.out" 2>&1
  grep -q "^Journal:   [0-9]* recent entr" "$T/x.out"' "$AQ"
e2e_done
