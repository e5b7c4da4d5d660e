#!/bin/sh
# security.sh -- issue 9's security checks on the local cluster with the
# REAL kubectl: the server runs with TLS (kubectl sends bearer tokens only
# over HTTPS), the static token file examples/rbac/tokens.csv, an admin
# token and --authz=rbac. As admin it applies crds/ (roles, the identity
# ValidatingAdmissionPolicy), the demo namespaces, groups and
# examples/rbac/; then, per user (--token) or impersonated (--as), checks
# what each may do and kubectl's exact messages:
#   alice (aiq:vision)  submits as herself in team-vision; cannot submit as
#                       bob, change spec.user, create in team-nlp, or write
#                       UserQuotas;
#   carol (vision admin) writes UserQuotas in team-vision, not team-nlp;
#   bob (aiq:nlp)       cannot read team-vision; cannot impersonate;
#   admin (aiq:admins)  may submit for alice, may not change spec.user;
#   dave (aiq:vision, impersonated) cannot delete alice's job; carol (its
#                       group admin) and an aiq admin can;
#   the operator's service account (crds/rbac.yaml) has the verbs the
#                       operator uses and no more;
# plus a static check that crds/rbac.yaml has no "*" in verbs, resources
# or apiGroups. Prints ok/FAIL per check, ends with "N passed, N failed".
#
# Env: AIQ_BUILD (default build/san, falling back to build/rel), AIQ_SRC.
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${AIQ_BUILD:-$ROOT/build/san}
[ -x "$BUILD/aiq-apiserver" ] || BUILD=$ROOT/build/rel
P=0
F=0
TMP=$(mktemp -d /tmp/aiq-e2e-sec.XXXXXX)
T=$TMP
API_PID=""
. "$ROOT/test/e2e/_server.sh"
ADMIN_TOKEN=security-e2e-admin
OP_SA=system:serviceaccount:aiq-system:aiq-operator

cleanup() {
    if [ -n "$API_PID" ]; then
        kill "$API_PID" 2>/dev/null
        wait "$API_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { P=$((P + 1)); echo "ok   $1"; }
bad() { F=$((F + 1)); echo "FAIL $1"; [ -f "$TMP/out" ] && sed 's/^/     | /' "$TMP/out" | head -12; }
# allow NAME PATTERN CMD...: CMD must exit 0 and print PATTERN (ERE).
allow() {
    name=$1; pat=$2; shift 2
    "$@" >"$TMP/out" 2>&1
    rc=$?
    if [ "$rc" = 0 ] && grep -Eq -- "$pat" "$TMP/out"; then ok "$name"
    else bad "$name (exit $rc, want 0 and /$pat/)"; fi
}
# deny NAME PATTERN CMD...: CMD must fail and print PATTERN (fixed string).
deny() {
    name=$1; pat=$2; shift 2
    "$@" >"$TMP/out" 2>&1
    rc=$?
    if [ "$rc" != 0 ] && grep -Fq -- "$pat" "$TMP/out"; then ok "$name"
    else bad "$name (exit $rc, want failure and [$pat])"; fi
}
finish() {
    echo "$P passed, $F failed"
    [ "$F" = 0 ]
    exit $?
}

# ---- static check: the operator's own RBAC ---------------------------------------
# No "*" outside comments, so none in verbs, resources or apiGroups, in
# either YAML list style. (The verbs themselves are checked on the
# server below, once the file is applied.)
RBAC=$ROOT/crds/rbac.yaml
if [ ! -f "$RBAC" ]; then
    bad "crds/rbac.yaml exists"
elif grep -nE '^[^#]*\*' "$RBAC" >"$TMP/out"; then
    bad "crds/rbac.yaml has no wildcard in verbs/resources/apiGroups"
else
    ok "crds/rbac.yaml has no wildcard in verbs/resources/apiGroups"
fi

if ! command -v kubectl >/dev/null 2>&1; then
    echo "FAIL kubectl not on PATH"; F=$((F + 1)); finish
fi
# ---- the cluster -------------------------------------------------------------------------
export KUBECONFIG="$TMP/kubeconfig" KUBECACHEDIR="$TMP/cache"
if ! api_up 1 --port 0 --tls --admin-token "$ADMIN_TOKEN" \
    --tokens "$ROOT/examples/rbac/tokens.csv" --authz=rbac; then
    echo "FAIL server did not start"; F=$((F + 1)); finish
fi
ok "server ready: $(grep listening "$TMP/api.log")"
K="kubectl --request-timeout=20s"
ALICE="$K --token alice-demo-token"
BOB="$K --token bob-demo-token"
CAROL="$K --token carol-demo-token"
OP="$K --as $OP_SA"

allow "admin applies crds/ (roles, identity policy)" \
    'validatingadmissionpolicybinding.admissionregistration.k8s.io/aiq-aijob-identity-binding created' \
    $K apply -k "$ROOT/crds"
allow "admin applies namespaces, groups and examples/rbac" 'rolebinding.rbac.authorization.k8s.io/aiq-users created' \
    $K apply -f "$ROOT/examples/namespaces.yaml" -f "$ROOT/examples/groups/" -f "$ROOT/examples/rbac/"
allow "the operator's Service exposes its HTTP port by name" '^metrics 8080 metrics$' \
    $K get svc aiq-operator -n aiq-system -o 'jsonpath={.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort}'
# examples/monitoring/servicemonitor.yaml (no ServiceMonitor CRD here):
# its selector and port name are the Service's.
svc_label=$($K get svc aiq-operator -n aiq-system -o 'jsonpath={.metadata.labels.app\.kubernetes\.io/name}' 2>/dev/null)
SM=$ROOT/examples/monitoring/servicemonitor.yaml
if [ -n "$svc_label" ] && grep -q "app.kubernetes.io/name: $svc_label\$" "$SM" &&
   grep -q "^    - port: metrics\$" "$SM" && grep -q "matchNames: \[aiq-system\]" "$SM"; then
    ok "the ServiceMonitor selects the Service by its label ($svc_label) and port name"
else bad "the ServiceMonitor selects the Service by its label ($svc_label) and port name"; fi
deny "a wrong token is 401" "error: You must be logged in to the server (Unauthorized)" \
    $K --token not-a-token get aijobs -n team-vision
SERVER=$(sed -n 's/^ *server: //p' "$KUBECONFIG" | head -1)
curl -sk "$SERVER/apis/aiq.dev/v1alpha1/namespaces/team-vision/aijobs" >"$TMP/out" 2>&1
if grep -Fq 'aijobs.aiq.dev is forbidden: User \"system:anonymous\" cannot list resource \"aijobs\"' "$TMP/out" &&
   grep -q '"code": *403' "$TMP/out"; then ok "a request without a token is system:anonymous and forbidden"
else bad "a request without a token is system:anonymous and forbidden"; fi

# The operator's ClusterRole as stored: only the verbs the operator uses
# (crds/rbac.yaml's header), update only on its Lease and on
# aijobs/finalizers (what blockOwnerDeletion needs), never escalate, bind,
# impersonate or deletecollection.
$K get clusterrole aiq-operator -o 'jsonpath={range .rules[*]}{.resources}{" "}{.verbs}{"\n"}{end}' >"$TMP/out" 2>&1
if [ -s "$TMP/out" ] && ! grep -Eq 'escalate|"bind"|impersonate|deletecollection|"\*"' "$TMP/out" &&
   ! grep '"update"' "$TMP/out" | grep -qv '^\["aijobs/finalizers"\] \["update"\]$' &&
   ! grep -E '"(get|list|watch|create|patch|delete|update)"' -v "$TMP/out" | grep -q .; then
    ok "aiq-operator ClusterRole: list/watch/create/patch/delete, update only on aijobs/finalizers; no escalate/bind/impersonate"
else
    bad "aiq-operator ClusterRole: list/watch/create/patch/delete, update only on aijobs/finalizers; no escalate/bind/impersonate"
fi

job() { # job NAME NS USER -> $TMP/NAME.yaml
    cat >"$TMP/$1.yaml" <<EOF
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata:
  name: $1
  namespace: $2
spec:
  user: $3
  resources: {gpus: 1}
  template:
    spec:
      containers: [{name: train, image: busybox}]
EOF
}
quota() { # quota NAME NS USER -> $TMP/NAME.yaml
    cat >"$TMP/$1.yaml" <<EOF
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata:
  name: $1
  namespace: $2
spec:
  user: $3
  quota: {gpus: 2}
EOF
}

# ---- alice, a member of the vision group -------------------------------------------------
job alice-1 team-vision alice
allow "alice submits an AIJob as herself in team-vision" 'aijob.aiq.dev/alice-1 created' \
    $ALICE apply -f "$TMP/alice-1.yaml"
allow "alice sees her job" 'alice-1 +alice' $ALICE get aijobs -n team-vision
job alice-as-bob team-vision bob
deny "alice cannot submit with spec.user: bob (policy message, 403)" \
    "Error from server (Forbidden): error when creating \"$TMP/alice-as-bob.yaml\": aijobs.aiq.dev \"alice-as-bob\" is forbidden: ValidatingAdmissionPolicy 'aiq-aijob-identity' with binding 'aiq-aijob-identity-binding' denied request: spec.user must be the requesting user" \
    $ALICE apply -f "$TMP/alice-as-bob.yaml"
deny "the rejected job was not stored" 'aijobs.aiq.dev "alice-as-bob" not found' \
    $K get aijob alice-as-bob -n team-vision
deny "alice cannot change spec.user of her job (immutable, 422)" \
    "The aijobs \"alice-1\" is invalid: : ValidatingAdmissionPolicy 'aiq-aijob-identity' with binding 'aiq-aijob-identity-binding' denied request: spec.user is immutable" \
    $ALICE patch aijob alice-1 -n team-vision --type=merge -p '{"spec":{"user":"bob"}}'
allow "spec.user is still alice" '^alice$' $K get aijob alice-1 -n team-vision -o 'jsonpath={.spec.user}{"\n"}'
allow "alice holds her job (patch spec.suspend)" 'aijob.aiq.dev/alice-1 patched' \
    $ALICE patch aijob alice-1 -n team-vision --type=merge -p '{"spec":{"suspend":true}}'
allow "alice reads Groups (aiq-viewer)" 'vision' $ALICE get groups
allow "alice reads UserQuotas in her namespace" 'No resources found|NAME' $ALICE get userquotas -n team-vision
job alice-nlp team-nlp alice
deny "alice cannot create AIJobs in team-nlp (another group's namespace)" \
    "Error from server (Forbidden): error when creating \"$TMP/alice-nlp.yaml\": aijobs.aiq.dev is forbidden: User \"alice\" cannot create resource \"aijobs\" in API group \"aiq.dev\" in the namespace \"team-nlp\"" \
    $ALICE create -f "$TMP/alice-nlp.yaml"
deny "alice cannot list AIJobs across namespaces" \
    'aijobs.aiq.dev is forbidden: User "alice" cannot list resource "aijobs" in API group "aiq.dev" at the cluster scope' \
    $ALICE get aijobs -A
quota q-alice team-vision alice
deny "alice cannot create a UserQuota" \
    'userquotas.aiq.dev is forbidden: User "alice" cannot create resource "userquotas" in API group "aiq.dev" in the namespace "team-vision"' \
    $ALICE create -f "$TMP/q-alice.yaml"
deny "alice cannot write job status" \
    'cannot patch resource "aijobs/status" in API group "aiq.dev" in the namespace "team-vision"' \
    $ALICE patch aijob alice-1 -n team-vision --subresource=status --type=merge -p '{"status":{"phase":"Running"}}'
deny "alice cannot edit a Group" \
    'groups.aiq.dev "vision" is forbidden: User "alice" cannot patch resource "groups" in API group "aiq.dev" at the cluster scope' \
    $ALICE patch group vision --type=merge -p '{"spec":{"level":99}}'

# ---- carol, the vision group's admin --------------------------------------------------------
quota q-carol team-vision alice
allow "carol creates a UserQuota in team-vision" 'userquota.aiq.dev/q-carol created' \
    $CAROL apply -f "$TMP/q-carol.yaml"
deny "alice cannot edit the UserQuota carol made" \
    'userquotas.aiq.dev "q-carol" is forbidden: User "alice" cannot patch resource "userquotas" in API group "aiq.dev" in the namespace "team-vision"' \
    $ALICE patch userquota q-carol -n team-vision --type=merge -p '{"spec":{"quota":{"gpus":16}}}'
allow "carol edits it" 'userquota.aiq.dev/q-carol patched' \
    $CAROL patch userquota q-carol -n team-vision --type=merge -p '{"spec":{"quota":{"gpus":3}}}'
quota q-nlp team-nlp bob
deny "carol cannot create a UserQuota in team-nlp" \
    'userquotas.aiq.dev is forbidden: User "carol" cannot create resource "userquotas" in API group "aiq.dev" in the namespace "team-nlp"' \
    $CAROL create -f "$TMP/q-nlp.yaml"
job carol-for-alice team-vision alice
deny "carol (not aiq:admins) cannot submit for alice" \
    "denied request: spec.user must be the requesting user" $CAROL create -f "$TMP/carol-for-alice.yaml"

# ---- bob, impersonation, admin -------------------------------------------------------------
deny "bob cannot read team-vision" \
    'aijobs.aiq.dev is forbidden: User "bob" cannot list resource "aijobs" in API group "aiq.dev" in the namespace "team-vision"' \
    $BOB get aijobs -n team-vision
deny "bob cannot impersonate alice" \
    'users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope' \
    $BOB --as alice get aijobs -n team-vision
job bob-1 team-nlp bob
allow "admin impersonating bob (--as/--as-group) submits in team-nlp" 'aijob.aiq.dev/bob-1 created' \
    $K --as bob --as-group aiq:nlp create -f "$TMP/bob-1.yaml"
deny "impersonated alice is bound by the policy too" "denied request: spec.user must be the requesting user" \
    $K --as alice --as-group aiq:vision create -f "$TMP/alice-as-bob.yaml"
job admin-for-alice team-vision alice
allow "a member of aiq:admins may submit for alice" 'aijob.aiq.dev/admin-for-alice created' \
    $K --token admin-demo-token create -f "$TMP/admin-for-alice.yaml"
deny "nobody may change spec.user, admins included" "denied request: spec.user is immutable" \
    $K --token admin-demo-token patch aijob admin-for-alice -n team-vision --type=merge -p '{"spec":{"user":"erin"}}'

# ---- the operator's service account (crds/rbac.yaml) ----------------------------------------
allow "operator lists AIJobs in all namespaces" 'alice-1' $OP get aijobs -A
allow "operator lists pods and nodes" 'No resources found|NAME' $OP get pods -A
allow "operator watches Groups, QueuePolicies, UserQuotas" 'q-carol' $OP get userquotas -A
# The operator PATCHes status without a GET first (kubectl would GET): speak HTTP.
curl_op() { # curl_op METHOD PATH [BODY]: as the operator's service account
    curl -sk -o "$TMP/curl.out" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $ADMIN_TOKEN" \
        -H "Impersonate-User: $OP_SA" -H "Impersonate-Group: system:serviceaccounts" \
        -H 'Content-Type: application/merge-patch+json' ${3:+--data "$3"} "$SERVER$2"
}
# --api-remote: the operator reviews a remote caller's token and its
# permission; anyone else may not (a TokenReview tells whose a token is).
review() { # review AS-HEADER-VALUE PATH BODY -> HTTP code, answer in $TMP/curl.out
    curl -sk -o "$TMP/curl.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
        -H "Impersonate-User: $1" -H "Impersonate-Group: system:serviceaccounts" \
        -H 'Content-Type: application/json' --data "$3" "$SERVER$2"
}
TR='{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice-demo-token"}}'
SAR='{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","groups":["aiq:vision"],"resourceAttributes":{"group":"aiq.dev","resource":"aijobs","subresource":"journal","verb":"get","namespace":"team-vision"}}}'
code=$(review "$OP_SA" /apis/authentication.k8s.io/v1/tokenreviews "$TR")
if [ "$code" = 201 ] && grep -q '"username": *"alice"' "$TMP/curl.out"; then ok "operator reviews a token (TokenReview: alice)"
else cp "$TMP/curl.out" "$TMP/out"; bad "operator reviews a token (TokenReview: alice) (HTTP $code)"; fi
code=$(review "$OP_SA" /apis/authorization.k8s.io/v1/subjectaccessreviews "$SAR")
if [ "$code" = 201 ] && grep -q '"allowed": *true' "$TMP/curl.out"; then
    ok "operator asks RBAC: alice may get aijobs/journal in team-vision (crds/roles.yaml)"
else cp "$TMP/curl.out" "$TMP/out"; bad "operator asks RBAC: alice may get aijobs/journal in team-vision (HTTP $code)"; fi
code=$(review bob /apis/authentication.k8s.io/v1/tokenreviews "$TR")
if [ "$code" = 403 ]; then ok "bob may not review tokens"
else cp "$TMP/curl.out" "$TMP/out"; bad "bob may not review tokens (HTTP $code)"; fi
code=$(curl_op PATCH /apis/aiq.dev/v1alpha1/namespaces/team-vision/aijobs/alice-1/status '{"status":{"phase":"Queued"}}')
if [ "$code" = 200 ] && grep -q '"phase": *"Queued"' "$TMP/curl.out"; then ok "operator patches aijobs/status"
else cp "$TMP/curl.out" "$TMP/out"; bad "operator patches aijobs/status (HTTP $code)"; fi
code=$(curl_op PATCH /apis/aiq.dev/v1alpha1/namespaces/team-vision/aijobs/alice-1 '{"spec":{"priority":1}}')
if [ "$code" = 403 ] && grep -q 'cannot patch resource \\"aijobs\\"' "$TMP/curl.out"; then ok "operator cannot patch an AIJob's spec"
else cp "$TMP/curl.out" "$TMP/out"; bad "operator cannot patch an AIJob's spec (HTTP $code)"; fi
# The pod as the operator makes it: owned by the AIJob with
# blockOwnerDeletion, which (with the OwnerReferencesPermissionEnforcement
# admission plugin the real control plane runs, as OpenShift and
# hardened clusters do) needs update on aijobs/finalizers.
AJ_UID=$($K get aijob alice-1 -n team-vision -o jsonpath='{.metadata.uid}')
cat >"$TMP/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: alice-1-0
  namespace: team-vision
  ownerReferences: [{apiVersion: aiq.dev/v1alpha1, kind: AIJob, name: alice-1, uid: "$AJ_UID", controller: true, blockOwnerDeletion: true}]
spec:
  schedulingGates: [{name: aiq.dev/admission}]
  containers: [{name: train, image: busybox}]
EOF
allow "operator creates gated pods owned by the AIJob (blockOwnerDeletion)" 'pod/alice-1-0 created' \
    $OP create -f "$TMP/pod.yaml"
allow "operator deletes pods" 'pod "alice-1-0" deleted' $OP delete pod alice-1-0 -n team-vision --wait=false
cat >"$TMP/lease.yaml" <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: aiq-operator, namespace: aiq-system}
spec: {holderIdentity: e2e}
EOF
allow "operator creates its Lease in aiq-system" 'lease.coordination.k8s.io/aiq-operator created' \
    $OP create -f "$TMP/lease.yaml"
allow "operator gets its Lease" 'aiq-operator' $OP get lease aiq-operator -n aiq-system
sed 's/aiq-system/default/' "$TMP/lease.yaml" >"$TMP/lease-default.yaml"
deny "operator cannot touch Leases elsewhere" \
    'cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default"' \
    $OP create -f "$TMP/lease-default.yaml"
deny "operator cannot delete AIJobs" \
    'aijobs.aiq.dev "alice-1" is forbidden: User "system:serviceaccount:aiq-system:aiq-operator" cannot delete resource "aijobs" in API group "aiq.dev" in the namespace "team-vision"' \
    $OP delete aijob alice-1 -n team-vision
deny "operator cannot write UserQuotas" 'cannot create resource "userquotas"' \
    $OP create -f "$TMP/q-nlp.yaml"
deny "operator cannot read secrets" 'cannot list resource "secrets" in API group "" in the namespace "team-vision"' \
    $OP get secrets -n team-vision

# ---- deleting another user's job: the owner, a group admin, an aiq admin (aiq-aijob-delete) ----
job alice-2 team-vision alice
allow "alice submits a second job" 'aijob.aiq.dev/alice-2 created' $ALICE apply -f "$TMP/alice-2.yaml"
deny "dave (a vision member, not its admin) cannot delete alice's job; the message names the owner" \
    "ValidatingAdmissionPolicy 'aiq-aijob-delete' with binding 'aiq-aijob-delete-binding' denied request: only alice (the job's owner), a group admin of namespace team-vision or an aiq admin may delete AIJob alice-2" \
    $K --as dave --as-group aiq:vision delete aijob alice-2 -n team-vision
allow "alice-2 is still there" 'alice-2' $ALICE get aijob alice-2 -n team-vision
allow "carol, vision's group admin, deletes alice's job" 'aijob.aiq.dev "alice-2" deleted' \
    $CAROL delete aijob alice-2 -n team-vision
job alice-3 team-vision alice
allow "alice submits a third job" 'aijob.aiq.dev/alice-3 created' $ALICE apply -f "$TMP/alice-3.yaml"
allow "an aiq admin deletes it" 'aijob.aiq.dev "alice-3" deleted' \
    $K --as admin --as-group aiq:admins delete aijob alice-3 -n team-vision

# ---- users delete their own jobs ---------------------------------------------------------------
allow "alice deletes her job" 'aijob.aiq.dev "alice-1" deleted' $ALICE delete aijob alice-1 -n team-vision
finish
