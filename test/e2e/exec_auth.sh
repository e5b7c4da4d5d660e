#!/bin/sh
# exec_auth.sh -- `kubectl aiq` and the operator with the credentials of
# managed clusters, against a TLS server with static tokens and RBAC:
#  - an exec credential plugin (test/fixtures/exec/token.sh, the shape of
#    aws eks get-token or gke-gcloud-auth-plugin): it prints token
#    exec-e2e-N on its N-th run, and the server's token file lists
#    exec-e2e-1..200. Its tokens expire 3 s after they are made, so the
#    operator is seen to run it again while it admits jobs. A second
#    plugin's first token (exec-late-1) is not listed: the 401 makes the
#    client run it again and retry once.
#  - the oidc auth-provider with an expired id-token and a refresh-token,
#    refreshed at a fake issuer (test/fixtures/oidc/issuer.py) that
#    answers with a JWT-shaped id-token the token file lists.
. "$(dirname "$0")/lib.sh"

export PATH="$BUILD:$PATH"
ISSUER=$ROOT/test/fixtures/oidc/issuer.py
ISSUER_PID=""
trap 'rc=$?; [ -n "$ISSUER_PID" ] && kill "$ISSUER_PID" 2>/dev/null; e2e_cleanup $rc' EXIT
EXPIRED=$(python3 "$ISSUER" jwt 1000000000 expired-sig)
FRESH=$(python3 "$ISSUER" jwt $(( $(date +%s) + 86400 )) fresh-sig)
{ for i in $(seq 1 200); do echo "exec-e2e-$i,exec-user,u-exec,\"system:masters\""; done
  echo 'exec-late-2,late-user,u-late,"system:masters"'
  echo "$FRESH,oidc-user,u-oidc,\"system:masters\""
} >"$T/tokens.csv"
e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1 --tls \
    --admin-token exec-auth-admin --tokens "$T/tokens.csv" --authz=rbac
# The real server may still say "storage is (re)initializing" for a new
# CRD's resources just after it is Established: wait until all four list.
wait_for 60 "the aiq.dev resources are served" kubectl get groups,aijobs,queuepolicies,userquotas -A
SRV=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
CA=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')

# exec_kubeconfig FILE DIR PREFIX EXPIRES: a kubeconfig whose user runs
# token.sh with its state in DIR.
exec_kubeconfig() {
    mkdir -p "$2"
    cat >"$1" <<Y
apiVersion: v1
kind: Config
current-context: exec
clusters:
- name: c
  cluster:
    server: $SRV
    certificate-authority-data: $CA
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: e2e}
contexts:
- name: exec
  context: {cluster: c, user: plugin-user}
users:
- name: plugin-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $ROOT/test/fixtures/exec/token.sh
      interactiveMode: Never
      provideClusterInfo: true
      installHint: token.sh is in test/fixtures/exec
      env:
      - {name: AIQ_PLUGIN_DIR, value: "$2"}
      - {name: AIQ_TOKEN_PREFIX, value: "$3"}
      - {name: AIQ_EXPIRES, value: "$4"}
Y
}
runs() { cat "$1/runs" 2>/dev/null || echo 0; }

job() { # name replicas gpus
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: carol
  replicas: $2
  resources: {gpus: $3, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 10m}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
phase() { kubectl get aijob "$1" -o jsonpath={.status.phase}; }

# ---- exec plugin: kubectl aiq -------------------------------------------------
exec_kubeconfig "$T/cli.kubeconfig" "$T/cli" exec-e2e +3
check "kubectl aiq queue with an exec plugin: works, the plugin ran once" sh -c '
  KUBECONFIG=$T/cli.kubeconfig kubectl aiq queue 2>"$T/e" >/dev/null; rc=$?
  grep -q "No jobs waiting in default namespace" "$T/e" && [ $rc = 0 ] && [ "$(cat $T/cli/runs)" = 1 ]'
check "the plugin got KUBERNETES_EXEC_INFO with the cluster (provideClusterInfo)" sh -c '
  grep -q "\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\"" "$T/cli/info.1" &&
  grep -qF "\"server\":\"$0\"" "$T/cli/info.1" && grep -q "\"config\":{\"audience\":\"e2e\"}" "$T/cli/info.1" &&
  grep -q "\"interactive\":false" "$T/cli/info.1"' "$SRV"
exec_kubeconfig "$T/late.kubeconfig" "$T/late" exec-late ""
check "a refused plugin token (401): the plugin runs again and the request is retried" sh -c '
  KUBECONFIG=$T/late.kubeconfig kubectl aiq queue >/dev/null 2>&1 && [ "$(cat $T/late/runs)" = 2 ]'
check "a plugin that is not installed: the error names it and shows the installHint" sh -c '
  sed "s|command: .*|command: aiq-e2e-no-such-plugin|" "$T/cli.kubeconfig" >"$T/missing.kubeconfig"
  ! KUBECONFIG=$T/missing.kubeconfig kubectl aiq queue 2>"$T/e" >/dev/null &&
  grep -q "exec plugin aiq-e2e-no-such-plugin (users\[0\].user.exec): command not found in \$PATH. token.sh is in test/fixtures/exec" "$T/e"'

# ---- exec plugin: the operator ----------------------------------------------------
exec_kubeconfig "$T/op.kubeconfig" "$T/op" exec-e2e +3
OP_KUBECONFIG=$T/op.kubeconfig op_start
check "the operator started with its exec plugin" sh -c '[ "$(cat $T/op/runs)" -ge 1 ]'
R0=$(runs "$T/op")
sleep 4 # past the token's expirationTimestamp
job first 2 8 | kubectl apply -f - >/dev/null
wait_for 20 "the operator admits a job (it fills the cluster)" sh -c '[ "$(kubectl get aijob first -o jsonpath={.status.phase})" = Running ]'
check "the operator ran the plugin again after its token expired" sh -c "[ \$(cat $T/op/runs) -gt $R0 ]"
job second 1 8 | kubectl apply -f - >/dev/null
wait_for 15 "a second job waits in the queue" sh -c '
  [ "$(kubectl get aijob second -o jsonpath={.status.position})" = 1 ]'
check "kubectl aiq queue shows it (a new process: the plugin runs again)" sh -c '
  KUBECONFIG=$T/cli.kubeconfig kubectl aiq queue >"$T/q" 2>&1 &&
  awk "\$3==\"second\"{print \$2,\$4}" "$T/q" | grep -qx "1 carol" && [ "$(cat $T/cli/runs)" = 2 ]'
check "kubectl aiq explain with the exec plugin" sh -c '
  KUBECONFIG=$T/cli.kubeconfig kubectl aiq explain second --operator-url http://127.0.0.1:1 >"$T/x" 2>&1 &&
  grep -q "^Job:       default/second   user carol" "$T/x"'
check "the operator was never refused" sh -c '! grep -Eqi "unauthorized|http=401|forbidden" "$T/op.log"'

# ---- oidc ----------------------------------------------------------------------------
python3 "$ISSUER" serve "$T/issuer.port" "$T/issuer.log" "$FRESH" rt-e2e-1 >"$T/issuer.out" 2>&1 &
ISSUER_PID=$!
for _ in $(seq 1 100); do [ -s "$T/issuer.port" ] && break; sleep 0.1; done
IPORT=$(cat "$T/issuer.port" 2>/dev/null)
oidc_kubeconfig() { # FILE
    cat >"$1" <<Y
apiVersion: v1
kind: Config
current-context: oidc
clusters:
- name: c
  cluster: {server: "$SRV", certificate-authority-data: "$CA"}
contexts:
- name: oidc
  context: {cluster: c, user: oidc-user}
users:
- name: oidc-user
  user:
    auth-provider:
      name: oidc
      config:
        idp-issuer-url: http://127.0.0.1:$IPORT
        client-id: aiq-e2e
        client-secret: e2e-secret
        id-token: $EXPIRED
        refresh-token: rt-e2e-1
Y
}
oidc_kubeconfig "$T/oidc.kubeconfig"
cp "$T/oidc.kubeconfig" "$T/oidc.kubeconfig.orig"
check "the fake issuer is up" sh -c '[ -n "$0" ]' "$IPORT"
check "kubectl aiq with an expired oidc id-token: refreshed at the issuer, then works" sh -c '
  KUBECONFIG=$T/oidc.kubeconfig kubectl aiq queue >"$T/q" 2>&1 &&
  awk "\$3==\"second\"{print \$2,\$4}" "$T/q" | grep -qx "1 carol" &&
  [ "$(grep -c "^POST /token " "$T/issuer.log")" = 1 ] &&
  grep -q "^POST /token Basic [A-Za-z0-9+/=]* grant_type=refresh_token&refresh_token=rt-e2e-1$" "$T/issuer.log"'
check "the refreshed tokens are not written back to the kubeconfig" cmp -s "$T/oidc.kubeconfig" "$T/oidc.kubeconfig.orig"

# The operator again, now with the oidc kubeconfig: it refreshes too and
# admits the waiting job once the first one is gone.
kill "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null
OP_PID=""
mv "$T/op.log" "$T/op-exec.log"
OP_KUBECONFIG=$T/oidc.kubeconfig op_start
check "the operator refreshed the expired id-token at the issuer" sh -c '
  [ "$(grep -c "^POST /token " "$T/issuer.log")" = 2 ]'
kubectl delete aijob first >/dev/null
wait_for 30 "the operator (oidc) admits the waiting job" sh -c '[ "$(kubectl get aijob second -o jsonpath={.status.phase})" = Running ]'
check "the oidc operator was never refused" sh -c '! grep -Eqi "unauthorized|http=401|forbidden" "$T/op.log"'
kill "$ISSUER_PID" 2>/dev/null && wait "$ISSUER_PID" 2>/dev/null
ISSUER_PID=""
e2e_done
