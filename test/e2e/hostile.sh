#!/bin/sh
# hostile.sh -- bad input through the running operator. Every
# examples/invalid/*.yaml and a table of hostile AIJobs, QueuePolicies,
# Groups and UserQuotas (strings at and past the caps, deep nesting in the
# pod template, absurd numbers, wrong types, unknown fields, non-UTF-8
# bytes, which a real server stores repaired) must end rejected with a
# message naming the field: refused by
# the API server (422/400/413, the schema's or the body cap's message), or
# accepted by the server and then rejected by the operator in the
# object's status (AIJob phase Rejected, QueuePolicy compiled=false,
# UserQuota accepted=false, Group status.message). Objects that the
# server's schema would refuse are also POSTed raw with curl where that
# is the only way to reach the operator (non-UTF-8). Meanwhile a good job
# submitted before and one submitted after all of it run to Succeeded:
# the operator keeps serving everyone.
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 5
op_start
kubectl apply -f "$ROOT/examples/namespaces.yaml" >/dev/null
NAPI=0; NOP=0

good() { # name duration
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: goodie
  resources: {gpus: 2, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $2}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
good good-before 60s | kubectl apply -f - >/dev/null

# rejected_status KIND NAME NS: prints "<rejected?> <message>" from status.
rejected_status() {
    case $1 in
    AIJob) f='{.status.phase}|{.status.message}' ;;
    QueuePolicy) f='{.status.compiled}|{.status.message}' ;;
    UserQuota) f='{.status.accepted}|{.status.message}' ;;
    Group) f='x|{.status.message}' ;;
    esac
    if [ -n "$3" ]; then kubectl get "$1" "$2" -n "$3" -o "jsonpath=$f"
    else kubectl get "$1" "$2" -o "jsonpath=$f"; fi 2>/dev/null
}

# expect_rejected LABEL KIND NAME NS WANT FILE [kubectl flags]: applies FILE;
# passes when the server refuses it with WANT in the message, or the
# operator rejects it with WANT in the status message within 10 s.
expect_rejected() {
    label=$1 kind=$2 name=$3 ns=$4 want=$5 file=$6; shift 6
    if ! kubectl apply "$@" -f "$file" >"$T/h.out" 2>&1; then
        if grep -qF -- "$want" "$T/h.out"; then
            NAPI=$((NAPI + 1)); ok "$label: refused by the API server: $(head -c 160 "$T/h.out" | tr '\n' ' ')"
        else bad "$label: refused, but the message lacks [$want]"; sed 's/^/     /' "$T/h.out" | head -5; fi
        return
    fi
    end=$(( $(date +%s) + 10 ))
    while :; do
        st=$(rejected_status "$kind" "$name" "$ns")
        flag=${st%%|*}; msg=${st#*|}
        case $kind:$flag in
        AIJob:Rejected|QueuePolicy:false|UserQuota:false|Group:x)
            if printf '%s' "$msg" | grep -qF -- "$want"; then
                NOP=$((NOP + 1)); ok "$label: $kind rejected by the operator: $(printf '%s' "$msg" | head -c 160)"; return
            fi ;;
        esac
        if [ "$(date +%s)" -ge "$end" ]; then
            bad "$label: not rejected with [$want] (status: $st)"; return
        fi
        sleep 0.3
    done
}

# --- every invalid example --------------------------------------------------
for f in "$ROOT"/examples/invalid/*.yaml; do
    want=$(sed -n 's/^# expect: //p' "$f" | head -1)
    kind=$(sed -n 's/^kind: //p' "$f" | head -1)
    name=$(awk '/^metadata:/{m=1} m && /^  name: /{print $2; exit}' "$f")
    ns=$(awk '/^metadata:/{m=1} m && /^  namespace: /{print $2; exit}' "$f")
    # The field path is what must be named; the operator's own message is
    # the example's expect line.
    field=${want%%:*}
    field=${field%%\[*}   # the server may name spec.levels, we spec.levels[1].when
    expect_rejected "$(basename "$f")" "$kind" "$name" "$ns" "$field" "$f"
    case $kind in AIJob)
        check "$(basename "$f"): no pod was created" sh -c "[ -z \"\$(kubectl get pods -n $ns -l aiq.dev/job=$name -o name 2>/dev/null)\" ]" ;;
    esac
done

# --- the hostile table ---------------------------------------------------------
aijob() { # name spec-lines...: an AIJob with the given spec body
    n=$1; shift
    printf 'apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: %s, namespace: default}\nspec:\n' "$n"
    for l in "$@"; do printf '  %s\n' "$l"; done
}
long() { head -c "$1" /dev/zero | tr '\0' "${2:-a}"; }
H=$T/hostile; mkdir -p "$H"

aijob h-user-long "user: $(long 1100)" "resources: {gpus: 1}" >"$H/1.yaml"
expect_rejected "user of 1100 bytes" AIJob h-user-long default spec.user "$H/1.yaml"
aijob h-task-huge "user: eve" "taskType: $(long 300000)" "resources: {gpus: 1}" >"$H/2.yaml"
expect_rejected "taskType of 300 kB" AIJob h-task-huge default spec.taskType "$H/2.yaml"
aijob h-body-huge "user: eve" "taskType: $(long 9000000)" "resources: {gpus: 1}" >"$H/3.yaml"
expect_rejected "a 9 MB object (the body cap is 8 MiB)" AIJob h-body-huge default "too large" "$H/3.yaml"
aijob h-gpus-absurd "user: eve" "resources: {gpus: 1000000000000000000}" >"$H/4.yaml"
expect_rejected "gpus 1e18" AIJob h-gpus-absurd default spec.resources.gpus "$H/4.yaml"
aijob h-replicas-absurd "user: eve" "replicas: 2147483648" "resources: {gpus: 1}" >"$H/5.yaml"
expect_rejected "replicas 2^31" AIJob h-replicas-absurd default spec.replicas "$H/5.yaml"
aijob h-mem-absurd "user: eve" "resources: {gpus: 1, memory: \"1e400\"}" >"$H/6.yaml"
expect_rejected "memory 1e400" AIJob h-mem-absurd default spec.resources.memory "$H/6.yaml"
aijob h-cpu-absurd "user: eve" "resources: {gpus: 1, cpu: \"99999999999999999999999\"}" >"$H/7.yaml"
expect_rejected "cpu 1e23 cores" AIJob h-cpu-absurd default spec.resources.cpu "$H/7.yaml"
aijob h-runtime-absurd "user: eve" "estimatedRuntime: 99999999999999h" "resources: {gpus: 1}" >"$H/8.yaml"
expect_rejected "estimatedRuntime 1e14 h" AIJob h-runtime-absurd default spec.estimatedRuntime "$H/8.yaml"
aijob h-gpus-type "user: eve" "resources: {gpus: many}" >"$H/9.yaml"
expect_rejected "gpus as a word" AIJob h-gpus-type default spec.resources.gpus "$H/9.yaml"
aijob h-resources-list "user: eve" "resources: [1, 2]" >"$H/10.yaml"
expect_rejected "resources as a list" AIJob h-resources-list default spec.resources "$H/10.yaml"
aijob h-user-number "user: 12345" "resources: {gpus: 1}" >"$H/11.yaml"
expect_rejected "user as a number" AIJob h-user-number default spec.user "$H/11.yaml"
aijob h-unknown "user: eve" "resources: {gpus: 1, gpuz: 2}" >"$H/12.yaml"
expect_rejected "unknown field spec.resources.gpuz" AIJob h-unknown default spec.resources.gpuz "$H/12.yaml"
aijob h-replicas-zero "user: eve" "replicas: 0" "resources: {gpus: 1}" >"$H/13.yaml"
expect_rejected "replicas 0" AIJob h-replicas-zero default spec.replicas "$H/13.yaml"
# 100 levels of nesting in the pod template (preserved unknown fields).
deep=$(awk 'BEGIN { for (i = 0; i < 100; i++) printf "{\"a\":"; printf "1"; for (i = 0; i < 100; i++) printf "}" }')
aijob h-deep "user: eve" "resources: {gpus: 1}" "template: {metadata: {annotations: {x: y}}, spec: {containers: [{name: w, image: busybox}], deep: $deep}}" >"$H/14.yaml"
expect_rejected "template nested 100 deep" AIJob h-deep default "nesting too deep" "$H/14.yaml"
# 25 deep passes the server (32) and the operator's parsers (64 and 96):
# the job must be handled like any other, and the watch must not wedge.
deep=$(awk 'BEGIN { for (i = 0; i < 20; i++) printf "{\"a\":"; printf "1"; for (i = 0; i < 20; i++) printf "}" }')
aijob h-deep25 "user: eve" "resources: {gpus: 1}" "template: {metadata: {annotations: {sim.aiq.dev/duration: 5s}}, spec: {containers: [{name: w, image: busybox}], deep: $deep}}" >"$H/15.yaml"
check "template nested 25 deep: accepted by the server" kubectl apply -f "$H/15.yaml"
wait_for 30 "template nested 25 deep: the operator runs it or rejects it, it never hangs" sh -c '
  case "$(kubectl get aijob h-deep25 -o jsonpath={.status.phase})" in Succeeded|Rejected) exit 0 ;; esac; exit 1'

cat >"$H/p1.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: h-formula-long}
spec:
  formula: "$(awk 'BEGIN { for (i = 0; i < 1500; i++) printf "job.gpus + "; printf "1" }')"
  levels: [{name: all}]
Y
expect_rejected "formula of 16 kB" QueuePolicy h-formula-long "" spec.formula "$H/p1.yaml"
cat >"$H/p2.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: h-formula-deep}
spec:
  formula: "$(awk 'BEGIN { for (i = 0; i < 1000; i++) printf "("; printf "1"; for (i = 0; i < 1000; i++) printf ")" }')"
  levels: [{name: all}]
Y
expect_rejected "formula nested 1000 deep" QueuePolicy h-formula-deep "" spec.formula "$H/p2.yaml"
cat >"$H/p3.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: h-formula-factor}
spec:
  formula: "job.gpus * no.such_factor"
  levels: [{name: all}]
Y
expect_rejected "formula with an unknown factor" QueuePolicy h-formula-factor "" "no.such_factor" "$H/p3.yaml"
cat >"$H/q1.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: h-quota-absurd, namespace: team-nlp}
spec:
  user: eve
  quota: {gpus: 100000000000000000000}
Y
expect_rejected "UserQuota gpus 1e20" UserQuota h-quota-absurd team-nlp spec.quota.gpus "$H/q1.yaml"
cat >"$H/q2.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: h-quota-type, namespace: team-nlp}
spec:
  user: eve
  quota: {memory: [1]}
Y
expect_rejected "UserQuota memory as a list" UserQuota h-quota-type team-nlp spec.quota.memory "$H/q2.yaml"
cat >"$H/g1.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: Group
metadata: {name: h-group-level}
spec:
  level: "high"
  namespaces: [team-vision-dev]
Y
expect_rejected "Group level as a word" Group h-group-level "" spec.level "$H/g1.yaml"

# Non-UTF-8: kubectl's YAML reader refuses it on the client, so it is
# POSTed raw. A real API server decodes JSON as Go does: each invalid byte
# becomes U+FFFD and the object is stored (201); the job is then an
# ordinary one, which the operator must not choke on.
printf '{"apiVersion":"aiq.dev/v1alpha1","kind":"AIJob","metadata":{"name":"h-utf8","namespace":"default"},"spec":{"user":"ev\377\376e","resources":{"gpus":1}}}' >"$H/u.json"
code=$(api_curl -o "$T/u.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary @"$H/u.json" /apis/aiq.dev/v1alpha1/namespaces/default/aijobs)
check "non-UTF-8 user: stored (201, got $code) with U+FFFD for each bad byte" sh -c '
  [ "$(kubectl get aijob h-utf8 -o jsonpath={.spec.user} | od -An -tx1 | tr -d " \n")" = 6576efbfbdefbfbd65 ]'
wait_for 30 "non-UTF-8 user: the operator handles the repaired job like any other" sh -c '
  case "$(kubectl get aijob h-utf8 -o jsonpath={.status.phase})" in Queued|Admitted|Running|Succeeded) ;; *) exit 1 ;; esac'

# --- everyone else is still served ----------------------------------------------
check "the operator is alive after all of it" kill -0 "$OP_PID"
good good-after 10s | kubectl apply -f - >/dev/null
wait_for 60 "the good job submitted before runs to Succeeded" sh -c '
  [ "$(kubectl get aijob good-before -o jsonpath={.status.phase})" = Succeeded ]'
wait_for 30 "a good job submitted after runs to Succeeded" sh -c '
  [ "$(kubectl get aijob good-after -o jsonpath={.status.phase})" = Succeeded ]'
# h-deep25 and h-utf8 (once stored with U+FFFD) are valid jobs.
check "no hostile AIJob got a pod" sh -c '[ -z "$(kubectl get pods -o name | grep -E "pod/h-" | grep -v -e pod/h-deep25- -e pod/h-utf8-)" ]'
echo "refused by the API server: $NAPI, rejected by the operator: $NOP"
e2e_done
