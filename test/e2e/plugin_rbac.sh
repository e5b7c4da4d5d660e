#!/bin/sh
# plugin_rbac.sh -- `kubectl aiq` as a real user sees it: the local cluster
# with TLS, the demo tokens and RBAC (crds/roles.yaml bound by
# examples/rbac/), and the plugin run with a kubeconfig context of alice
# (aiq-user in team-vision only, aiq-viewer cluster-wide). What she may
# not list (UserQuotas and AIJobs of other namespaces, Nodes) must not
# break queue, explain or usage; what she asks for explicitly (-A, another
# group's namespace) fails with the server's Forbidden message. Also shows
# that --context and the context's namespace are honoured.
# The operator itself runs as its service account (crds/rbac.yaml, least
# privilege) with a static token, so every call it makes is checked
# against that role; on the real control plane with the admission plugins
# a hardened cluster runs (OwnerReferencesPermissionEnforcement).
. "$(dirname "$0")/lib.sh"

export PATH="$BUILD:$PATH"
{ cat "$ROOT/examples/rbac/tokens.csv"
  echo 'plugin-rbac-operator,system:serviceaccount:aiq-system:aiq-operator,u-aiq-operator,"system:serviceaccounts,system:serviceaccounts:aiq-system"'
} >"$T/tokens.csv"
e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1 --tls \
    --admin-token plugin-rbac-admin --tokens "$T/tokens.csv" --authz=rbac
cp "$T/kubeconfig" "$T/op-kubeconfig"
KUBECONFIG=$T/op-kubeconfig kubectl config set-credentials \
    "$(kubectl config view -o jsonpath='{.contexts[0].context.user}')" --token=plugin-rbac-operator >/dev/null
OP_KUBECONFIG=$T/op-kubeconfig op_start
check "the operator's credentials are its service account's, and no more" sh -c '
  ! KUBECONFIG=$T/op-kubeconfig kubectl get secrets -n default >/dev/null 2>"$T/e" &&
  grep -q "User \"system:serviceaccount:aiq-system:aiq-operator\" cannot list resource \"secrets\"" "$T/e"'
kubectl apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" \
    -f "$ROOT/examples/rbac/bindings.yaml" -f "$ROOT/examples/quotas/alice.yaml" \
    -f "$ROOT/examples/policies/fifo.yaml" >"$T/setup.out" 2>&1 || { bad "setup"; cat "$T/setup.out"; }
CLUSTER=$(kubectl config view -o jsonpath='{.contexts[0].context.cluster}')
for u in alice bob; do
    kubectl config set-credentials "$u" --token="$u-demo-token" >/dev/null
done
kubectl config set-context alice --cluster="$CLUSTER" --user=alice --namespace=team-vision >/dev/null
kubectl config set-context bob --cluster="$CLUSTER" --user=bob --namespace=team-nlp >/dev/null
wait_for 10 "alice's UserQuota (8 GPUs) is accepted" sh -c '
  [ "$(kubectl get userquota alice -n team-vision -o jsonpath={.status.accepted})" = true ]'

job() { # name gpus
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1}
spec:
  user: alice
  replicas: 1
  resources: {gpus: $2, gpuMemoryMiB: 40960, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 10m}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
job a1 8 | kubectl --context alice apply -f - >/dev/null
wait_for 15 "alice's first job runs on her whole quota" sh -c '
  [ "$(kubectl get aijob a1 -n team-vision -o jsonpath={.status.phase})" = Running ]'
job a2 4 | kubectl --context alice apply -f - >/dev/null
wait_for 10 "her second job waits on her quota" sh -c '
  [ "$(kubectl get aijob a2 -n team-vision -o jsonpath={.status.conditions[0].reason})" = QuotaFull ]'

check "alice cannot list UserQuotas cluster-wide (the setup this test relies on)" sh -c '
  ! kubectl --context alice get userquotas -A >/dev/null 2>&1'
check "queue as alice: her namespace from the context, her waiting job, no warning" sh -c '
  kubectl aiq --context alice queue >"$T/q" 2>"$T/qe" &&
  awk "\$3==\"a2\"{print \$1,\$2,\$4,\$5,\$6}" "$T/q" | grep -qx "all 1 alice vision 4" &&
  [ ! -s "$T/qe" ]'
check "queue -A as alice fails with the server's Forbidden message" sh -c '
  ! kubectl aiq --context alice queue -A >/dev/null 2>"$T/e" &&
  grep -q "listing aijobs: .*forbidden" "$T/e"'
check "explain as alice: her quota headroom from her namespace's UserQuota; no capacity rows without node access" sh -c '
  kubectl aiq --context alice explain a2 --operator-url http://127.0.0.1:1 >"$T/x" 2>&1 &&
  grep -q "^           user alice: 8 of 8 in use, 0 left$" "$T/x" &&
  grep -q "^Blocked:   by user alice quota gpus (QuotaFull: " "$T/x" &&
  grep -q "nodes not readable" "$T/x" && ! grep -q "^  GPUs " "$T/x"'
check "usage as alice: her group, from what she may read" sh -c '
  kubectl aiq --context alice usage --group vision >"$T/u" 2>&1 &&
  awk "\$1==\"alice\"{print \$2,\$3,\$4,\$NF}" "$T/u" | grep -qx "20 8 8 Accepted"'
check "bob cannot look at vision's namespace" sh -c '
  ! kubectl aiq --context bob queue -n team-vision >/dev/null 2>"$T/e" && grep -q forbidden "$T/e"'
check "bob's own (empty) namespace works" sh -c '
  kubectl aiq --context bob queue 2>&1 | grep -q "No jobs waiting in team-nlp namespace"'
check "the operator was never refused by RBAC or admission" sh -c '! grep -Eqi "forbidden|http=403" "$T/op.log"'
check "the operator's role lists and watches every pod (capacity from foreign pods)" sh -c '
  KUBECONFIG=$T/op-kubeconfig kubectl get pods --all-namespaces -l "!aiq.dev/job" >/dev/null &&
  grep -q "event=listed .*watch=foreignpods" "$T/op.log"'
check "nodes as alice (no Node access) fails with the server's Forbidden message" sh -c '
  ! kubectl aiq --context alice nodes >/dev/null 2>"$T/e" &&
  grep -q "listing nodes: .*forbidden" "$T/e"'
check "an unknown context is an error naming it" sh -c '
  ! kubectl aiq --context nobody queue 2>"$T/e" && grep -q nobody "$T/e"'
e2e_done
