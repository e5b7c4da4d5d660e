#!/bin/sh
# differential.sh -- keeps the local API server (aiq-apiserver) honest:
# starts it and the real Kubernetes control plane (aiq-realcluster) side
# by side, applies crds/ to both, sends both the SAME scripted requests
# (curl, and kubectl where its output is what matters) and compares, step
# by step, one normalised line per server:
#   HTTP status | Status reason | the causes' field paths (sorted) | what
#   matters for the step (the message, deletionTimestamp and grace, the
#   node, the gates left, watch event types, a stored string as hex, ...)
# Each step is one ok/FAIL check; a FAIL prints both lines. The real
# server is the truth: a difference is a local-server bug (or, rarely, a
# step that measures timing instead of rules).
#
# Covered: pod create validation (names, labels, annotations, containers,
# images, resources, extended resources, defaulting, restart policy,
# scheduling gates), every allowed and refused mutation of a pod (gated
# and not) through merge, JSON and strategic patches, server-side apply,
# PUT and kubectl, the pods/binding subresource, graceful deletion (bound,
# unbound, finished, grace 0, shortened, killed at the grace end, pending,
# preconditions, garbage collection, namespace deletion, watches seeing
# MODIFIED then DELETED, kubectl's view), a watch from a too-old
# resourceVersion, JSON nesting depth, invalid UTF-8 in bodies, and the
# AIJob name limit from the CRD schema, the pod template guard's CEL
# rules, and Pod Security Admission's baseline checks the local server has.
#
# Env: AIQ_BUILD (default build/san, falling back to build/rel), AIQ_SRC,
# AIQ_REALCLUSTER (see _server.sh); E2E_KEEP=1 keeps the temp dir.
# servers: none (starts both servers itself and compares them)
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${AIQ_BUILD:-$ROOT/build/san}
[ -x "$BUILD/aiq-apiserver" ] || BUILD=$ROOT/build/rel
TOP=$(mktemp -d /tmp/aiq-e2e-diff.XXXXXX)
PASS=0
FAIL=0
LOCAL_PID=""
REAL_PID=""
BGPIDS=""
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}

cleanup() {
    for p in $BGPIDS; do kill "$p" 2>/dev/null; done
    for p in $LOCAL_PID $REAL_PID; do kill "$p" 2>/dev/null; done
    # the servers are not this shell's children (started in subshells)
    for _ in $(seq 1 100); do
        alive=""
        for p in $LOCAL_PID $REAL_PID; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    if [ "$FAIL" != 0 ]; then
        for s in local real; do echo "--- $s api.log (tail) ---"; tail -8 "$TOP/$s/api.log" 2>/dev/null; done
    fi
    [ -z "${E2E_KEEP:-}" ] && rm -rf "$TOP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }
done_() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; }

for tool in jq curl kubectl od; do
    command -v "$tool" >/dev/null 2>&1 || { echo "FAIL $tool not on PATH"; echo "0 passed, 1 failed"; exit 1; }
done

# ---- the two servers -------------------------------------------------------------
# use SRV: the server the following requests go to (T, KUBECONFIG and the
# cached address, token and CA of that server).
use() {
    SRV=$1
    T=$TOP/$1
    export T KUBECONFIG=$TOP/$1/kubeconfig KUBECACHEDIR=$TOP/$1/kcache
}

start_one() {
    use "$1"
    mkdir -p "$T"
    : >"$T/api.log"
    AIQ_API=$1
    . "$ROOT/test/e2e/_server.sh"
    api_up 1 --port 0 --nodes "$ROOT/test/fixtures/nodes-small.yaml" --time-scale 10 || return 1
    echo "$API_PID" >"$T/pid"
    # api_curl writes the CA; its address and token are read once here
    api_curl /version >/dev/null
    kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}' >"$T/url"
    kubectl config view --raw -o jsonpath='{.users[0].user.token}' >"$T/token"
    kubectl apply -k "$ROOT/crds/" >"$T/crds.out" 2>&1 &&
        kubectl wait --for condition=established --timeout=60s crd --all >/dev/null 2>&1
}

# The real control plane takes a few seconds; both start at once.
start_one local & SL=$!
start_one real & SR=$!
wait $SL; rl=$?
wait $SR; rr=$?
LOCAL_PID=$(cat "$TOP/local/pid" 2>/dev/null)
REAL_PID=$(cat "$TOP/real/pid" 2>/dev/null)
if [ "$rl" != 0 ] || [ "$rr" != 0 ]; then
    echo "FAIL servers ready with crds/ applied (local $rl, real $rr)"
    for s in local real; do tail -5 "$TOP/$s/api.log" "$TOP/$s/crds.out" 2>/dev/null; done
    echo "0 passed, 1 failed"
    exit 1
fi
ok "both servers ready with crds/ applied ($(cat "$TOP/local/url"), $(cat "$TOP/real/url"))"

# ---- requests and records ------------------------------------------------------------
P=/api/v1/namespaces/default/pods
J=/apis/aiq.dev/v1alpha1/namespaces/default/aijobs
MP=application/merge-patch+json
JP=application/json-patch+json
SMP=application/strategic-merge-patch+json
AP=application/apply-patch+yaml

# acurl [curl args] PATH: curl to the current server as its admin, no
# pretty-printing (the real server pretty-prints for curl's user agent).
acurl() {
    n=$#
    i=0
    for a in "$@"; do
        i=$((i + 1))
        if [ "$i" = "$n" ]; then set -- "$@" "$(cat "$T/url")$a"; else set -- "$@" "$a"; fi
    done
    shift "$n"
    [ -s "$T/token" ] && set -- -H "Authorization: Bearer $(cat "$T/token")" "$@"
    [ -s "$T/api-ca.crt" ] && set -- --cacert "$T/api-ca.crt" "$@"
    curl -s -A aiq-diff "$@"
}

# call METHOD PATH [CTYPE BODY]: the response body goes to $T/out, the
# status code to $T/code. BODY is JSON text (or @file).
call() {
    m=$1
    p=$2
    if [ $# -ge 4 ]; then
        case "$4" in @*) cp "${4#@}" "$T/body" ;; *) printf '%s' "$4" >"$T/body" ;; esac
        acurl -X "$m" -H "Content-Type: $3" --data-binary @"$T/body" -o "$T/out" -w '%{http_code}' "$p" >"$T/code"
    else
        acurl -X "$m" -o "$T/out" -w '%{http_code}' "$p" >"$T/code"
    fi
}

# norm: what differs between any two servers and never matters: uids.
norm() { sed -E 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<uid>/g'; }

# rec [JQ]: the record of the last call: code|reason|fields|JQ's value.
# JQ is a jq expression on the response body ("-" when it yields nothing).
rec() {
    code=$(cat "$T/code")
    line=$(jq -r --arg code "$code" "[\$code,
        (if .kind == \"Status\" then (.reason // \"-\") else \"-\" end),
        ([.details.causes[]?.field] | unique | join(\",\")),
        ([${1:-empty}] | map(tostring) | join(\";\"))] | join(\"|\")" "$T/out" 2>/dev/null) ||
        line="$code|(body not JSON: $(head -c 80 "$T/out" | tr '\n' ' '))"
    printf '%s\n' "$line" | norm >"$T/rec"
}

# recm [JQ]: rec plus the first line of the Status message (the real
# server appends a Go struct diff after it to "pod updates may not
# change fields": kubectl shows it, ours names the fields instead).
recm() { rec "(.message // \"-\" | split(\"\\n\")[0])${1:+, $1}"; }

# both WHAT FN [ARGS]: runs FN ARGS once against each server (each FN ends
# with rec/recm or writes $T/rec itself) and compares the two records.
both() {
    what=$1
    shift
    for s in local real; do
        use "$s"
        rm -f "$T/rec"
        "$@"
        [ -f "$T/rec" ] || echo "(no record)" >"$T/rec"
    done
    l=$(cat "$TOP/local/rec")
    r=$(cat "$TOP/real/rec")
    if [ "$l" = "$r" ]; then
        ok "$what: $(printf '%s' "$l" | cut -c1-110)"
    else
        bad "$what"
        echo "     local: $l"
        echo "     real:  $r"
    fi
}

# until_ SECS CMD...: retries CMD every 0.2 s for up to SECS seconds.
until_() {
    end=$(($(date +%s) + $1))
    shift
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.2
    done
}

# podjson NAME SPEC META: a pod with one container "c" (busybox), SPEC and
# META (JSON objects) merged into spec and metadata.
podjson() {
    jq -cn --arg n "$1" --argjson spec "$2" --argjson md "$3" \
        '{apiVersion: "v1", kind: "Pod", metadata: ({name: $n} + $md),
          spec: ({containers: [{name: "c", image: "busybox"}]} + $spec)}'
}

# ---- 1. pod create validation ------------------------------------------------------------
# s_create NAME SPEC META [JQ]: POST the pod; the record has the message.
s_create() { call POST $P application/json "$(podjson "$1" "$2" "$3")"; recm "${4:-}"; }
NOSCHED='{"schedulerName":"none"}'
LONG71=$(printf '%071d' 0 | tr 0 x)

both "create: metadata.name not a DNS subdomain" s_create Bad_Name "$NOSCHED" '{}'
both "create: label value of 71 characters" s_create c-l1 "$NOSCHED" "{\"labels\":{\"a\":\"$LONG71\"}}"
both "create: label key with two slashes" s_create c-l2 "$NOSCHED" '{"labels":{"-a/b/c":"x"}}'
both "create: label key with an empty prefix" s_create c-l2b "$NOSCHED" '{"labels":{"/b":"x"}}'
both "create: label value starting with a dash" s_create c-l3 "$NOSCHED" '{"labels":{"a":"-x"}}'
both "create: annotation key with a space" s_create c-l4 "$NOSCHED" '{"annotations":{"a b":"x"}}'
big=$(head -c 262145 /dev/zero | tr '\0' x)
printf '%s' "$big" >"$TOP/big.txt"
jq -cn --rawfile v "$TOP/big.txt" '{annotations: {a: $v}}' >"$TOP/bigmeta.json"
# (too big for a command line: the body is built in a file)
s_create_big() {
    jq -c --argjson spec "$NOSCHED" '{apiVersion: "v1", kind: "Pod", metadata: ({name: "c-l5"} + .),
        spec: ({containers: [{name: "c", image: "busybox"}]} + $spec)}' "$TOP/bigmeta.json" >"$T/big.json"
    call POST $P application/json @"$T/big.json"
    recm
}
both "create: annotations over 256 KiB" s_create_big
both "create: no containers" s_create c-c1 '{"containers":[]}' '{}'
both "create: container name not a DNS label" s_create c-c2 '{"containers":[{"name":"C_1","image":"x"}]}' '{}'
both "create: duplicate container names" s_create c-c3 '{"containers":[{"name":"a","image":"x"},{"name":"a","image":"x"}]}' '{}'
both "create: init container named like a container" s_create c-c3b \
    '{"initContainers":[{"name":"a","image":"x"}],"containers":[{"name":"a","image":"x"}]}' '{}'
both "create: container without an image" s_create c-c4 '{"containers":[{"name":"a"}]}' '{}'
both "create: container without a name" s_create c-c5 '{"containers":[{"image":"x"}]}' '{}'
both "create: image with trailing space" s_create c-c6 '{"containers":[{"name":"a","image":"x "}]}' '{}'
both "create: unparsable quantity (400 at decoding)" s_create c-r1 \
    '{"containers":[{"name":"a","image":"x","resources":{"limits":{"cpu":"abc"}}}]}' '{}'
both "create: quantity with a bad suffix" s_create c-r1b \
    '{"containers":[{"name":"a","image":"x","resources":{"limits":{"memory":"1K"}}}]}' '{}'
both "create: cpu request above its limit" s_create c-r2 \
    '{"containers":[{"name":"a","image":"x","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"2"}}}]}' '{}'
both "create: fractional GPU" s_create c-r3 \
    '{"containers":[{"name":"a","image":"x","resources":{"limits":{"nvidia.com/gpu":"500m"}}}]}' '{}'
both "create: GPU request without a limit" s_create c-r4 \
    '{"containers":[{"name":"a","image":"x","resources":{"requests":{"nvidia.com/gpu":"1"}}}]}' '{}'
both "create: GPU request unlike its limit" s_create c-r5 \
    '{"containers":[{"name":"a","image":"x","resources":{"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"2"}}}]}' '{}'
both "create: negative cpu request" s_create c-r6 \
    '{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"-1"}}}]}' '{}'
both "create: resource name that is no standard one" s_create c-r7 \
    '{"containers":[{"name":"a","image":"x","resources":{"limits":{"gpu":"1"}}}]}' '{}'
both "create: unknown restartPolicy" s_create c-s1 '{"restartPolicy":"Sometimes"}' '{}'
both "create: scheduling gate name with a space" s_create c-g1 '{"schedulingGates":[{"name":"bad gate"}]}' '{}'
both "create: duplicate scheduling gates" s_create c-g2 '{"schedulingGates":[{"name":"a/b"},{"name":"a/b"}]}' '{}'
both "create: nodeName on a gated pod" s_create c-g3 '{"schedulingGates":[{"name":"a/b"}],"nodeName":"a100-0"}' '{}'
both "create: node affinity without terms" s_create c-a1 \
    '{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}' '{}'
both "create: node selector requirement In without values" s_create c-a2 \
    '{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"In"}]}]}}}}' '{}'
both "create: node field selector In with two values" s_create c-a3 \
    '{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["a100-0","a100-1"]}]}]}}}}' '{}'
both "create: node field selector on a field other than metadata.name" s_create c-a4 \
    '{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"spec.unschedulable","operator":"In","values":["true"]}]}]}}}}' '{}'
both "create: toleration Exists with a value" s_create c-t1 \
    '{"tolerations":[{"key":"k","operator":"Exists","value":"v"}]}' '{}'
both "create: defaults, requests from limits, canonical quantities, QoS" s_create c-ok1 \
    '{"schedulerName":"none","containers":[{"name":"a","image":"busybox:1.36","resources":{"limits":{"cpu":"1000m","memory":"1024Mi","nvidia.com/gpu":"2"}}}]}' '{}' \
    '(.spec.containers[0].resources.requests | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(",")),
     (.spec.containers[0].resources.limits | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(",")),
     .spec.containers[0].imagePullPolicy, .spec.containers[0].terminationMessagePolicy, .spec.restartPolicy,
     .spec.terminationGracePeriodSeconds, .spec.dnsPolicy, .status.phase, .status.qosClass,
     ([.spec.tolerations[]?.key] | join(","))'
both "create: burstable pod, pull policy for :latest" s_create c-ok2 \
    '{"schedulerName":"none","containers":[{"name":"a","image":"busybox:latest","resources":{"requests":{"cpu":"0.5"}}}]}' '{}' \
    '.spec.containers[0].resources.requests.cpu, .spec.containers[0].imagePullPolicy, .status.qosClass'
both "create: gated pod starts Pending with PodScheduled=False" s_create c-ok3 \
    '{"schedulingGates":[{"name":"x/g"}]}' '{}' \
    '.status.phase, ([.status.conditions[]? | "\(.type)=\(.status)/\(.reason)"] | join(","))'
both "create: generateName of 64 characters gives a 63-character name" s_create "" "$NOSCHED" \
    "{\"generateName\":\"$(printf '%064d' 0 | tr 0 g)\"}" '(.metadata.name | length)'

# ---- 2. pod updates -------------------------------------------------------------------------
# A gated pod with a node selector, a required node affinity term, one
# toleration and the default grace period; s_update creates it afresh
# (named NAME, SPEC merged over the base) and sends one patch.
BASE='{"schedulerName":"none","schedulingGates":[{"name":"x/g1"},{"name":"x/g2"}],"nodeSelector":{"a":"1"},
 "tolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoSchedule"}],"terminationGracePeriodSeconds":30,
 "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"In","values":["1"]}]}]}}}}'
AFF=/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms
SEEN='.spec.containers[0].image, (.spec.nodeSelector // {} | to_entries | map("\(.key)=\(.value)") | join(",")),
 ([.spec.schedulingGates[]?.name] | join(",")),
 ([.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]? |
   [(.matchExpressions // [])[].key, (.matchFields // [])[].key] | join("+")] | join(",")),
 ([.spec.tolerations[]?.key] | join(",")), .spec.activeDeadlineSeconds, .spec.terminationGracePeriodSeconds'

# s_update NAME CTYPE PATCH [SPEC]
s_update() {
    over=${4:-}
    [ -n "$over" ] || over='{}'
    spec=$(jq -cn --argjson a "$BASE" --argjson b "$over" '$a + $b | with_entries(select(.value != null))')
    call POST $P application/json "$(podjson "$1" "$spec" '{}')"
    if [ "$(cat "$T/code")" != 201 ]; then rec '"setup: create failed"'; return; fi
    q=""
    [ "$2" = $AP ] && q="?fieldManager=diff&force=true"
    call PATCH "$P/$1$q" "$2" "$3"
    recm "$SEEN"
}
# s_put NAME JQ [SPEC]: GET, change with JQ, PUT back (what clients do).
s_put() {
    over=${3:-}
    [ -n "$over" ] || over='{}'
    spec=$(jq -cn --argjson a "$BASE" --argjson b "$over" '$a + $b | with_entries(select(.value != null))')
    call POST $P application/json "$(podjson "$1" "$spec" '{}')"
    if [ "$(cat "$T/code")" != 201 ]; then rec '"setup: create failed"'; return; fi
    call GET "$P/$1"
    jq -c "$2" "$T/out" >"$T/put.json"
    call PUT "$P/$1" application/json @"$T/put.json"
    recm "$SEEN"
}
UNGATED='{"schedulingGates":null}'
NOAFF='{"affinity":null}'

both "update: image (strategic merge patch)" s_update u-img1 $SMP '{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}'
both "update: image (JSON patch)" s_update u-img2 $JP '[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:3"}]'
both "update: image via merge patch re-defaults the pull policy (refused)" s_update u-img3 $MP \
    '{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}'
both "update: image emptied" s_update u-img4 $JP '[{"op":"replace","path":"/spec/containers/0/image","value":""}]'
both "update: container removed" s_update u-ctr1 $JP '[{"op":"remove","path":"/spec/containers/0"}]'
both "update: container added" s_update u-ctr2 $JP '[{"op":"add","path":"/spec/containers/-","value":{"name":"d","image":"x"}}]'
both "gated: nodeSelector entry added" s_update u-sel1 $MP '{"spec":{"nodeSelector":{"b":"2"}}}'
both "gated: nodeSelector value changed" s_update u-sel2 $MP '{"spec":{"nodeSelector":{"a":"2"}}}'
both "gated: nodeSelector entry removed" s_update u-sel3 $MP '{"spec":{"nodeSelector":{"a":null}}}'
both "gated: nodeSelector removed (JSON patch)" s_update u-sel4 $JP '[{"op":"remove","path":"/spec/nodeSelector"}]'
both "gated: nodeSelector set on a pod without one" s_update u-sel5 $MP '{"spec":{"nodeSelector":{"z":"1"}}}' '{"nodeSelector":null}'
both "gated: matchExpressions appended" s_update u-aff1 $JP \
    "[{\"op\":\"add\",\"path\":\"$AFF/0/matchExpressions/-\",\"value\":{\"key\":\"b\",\"operator\":\"Exists\"}}]"
both "gated: matchFields added" s_update u-aff2 $JP \
    "[{\"op\":\"add\",\"path\":\"$AFF/0/matchFields\",\"value\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"a100-0\"]}]}]"
both "gated: matchExpression changed" s_update u-aff3 $JP \
    "[{\"op\":\"replace\",\"path\":\"$AFF/0/matchExpressions/0/values\",\"value\":[\"2\"]}]"
both "gated: matchExpression put first (old ones no longer a prefix)" s_update u-aff4 $JP \
    "[{\"op\":\"add\",\"path\":\"$AFF/0/matchExpressions/0\",\"value\":{\"key\":\"b\",\"operator\":\"Exists\"}}]"
both "gated: node selector term added" s_update u-aff5 $JP \
    "[{\"op\":\"add\",\"path\":\"$AFF/-\",\"value\":{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}}]"
both "gated: affinity removed" s_update u-aff6 $JP '[{"op":"remove","path":"/spec/affinity"}]'
both "gated: preferred node affinity added" s_update u-aff7 $JP \
    '[{"op":"add","path":"/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution","value":[{"weight":1,"preference":{"matchExpressions":[{"key":"b","operator":"Exists"}]}}]}]'
both "gated: required node affinity set where there was none" s_update u-aff8 $MP \
    '{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"z","operator":"Exists"}]},{"matchExpressions":[{"key":"y","operator":"Exists"}]}]}}}}}' \
    "$NOAFF"
both "gated: an empty term cannot gain requirements" s_update u-aff9 $JP \
    "[{\"op\":\"add\",\"path\":\"$AFF/0/matchExpressions\",\"value\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}]" \
    '{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{}]}}}}'
both "gated: pod affinity added" s_update u-paf1 $MP \
    '{"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"a":"b"}},"topologyKey":"kubernetes.io/hostname"}]}}}}'
both "gated: pod anti-affinity added" s_update u-paf2 $MP \
    '{"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"a":"b"}},"topologyKey":"kubernetes.io/hostname"}]}}}}' \
    "$NOAFF"
both "update: toleration added" s_update u-tol1 $JP '[{"op":"add","path":"/spec/tolerations/-","value":{"key":"k2","operator":"Exists","effect":"NoSchedule"}}]'
both "update: toleration removed" s_update u-tol2 $JP '[{"op":"remove","path":"/spec/tolerations/0"}]'
both "update: toleration changed" s_update u-tol3 $JP '[{"op":"replace","path":"/spec/tolerations/0/value","value":"w"}]'
both "update: terminationGracePeriodSeconds changed" s_update u-gr1 $MP '{"spec":{"terminationGracePeriodSeconds":10}}'
both "update: negative grace period set to 1" s_update u-gr2 $MP '{"spec":{"terminationGracePeriodSeconds":1}}' \
    '{"terminationGracePeriodSeconds":-5}'
both "update: negative grace period set to 2" s_update u-gr3 $MP '{"spec":{"terminationGracePeriodSeconds":2}}' \
    '{"terminationGracePeriodSeconds":-5}'
both "update: activeDeadlineSeconds set" s_update u-ad1 $MP '{"spec":{"activeDeadlineSeconds":100}}'
both "update: activeDeadlineSeconds lowered" s_update u-ad2 $MP '{"spec":{"activeDeadlineSeconds":50}}' '{"activeDeadlineSeconds":100}'
both "update: activeDeadlineSeconds raised" s_update u-ad3 $MP '{"spec":{"activeDeadlineSeconds":150}}' '{"activeDeadlineSeconds":100}'
both "update: activeDeadlineSeconds removed" s_update u-ad4 $MP '{"spec":{"activeDeadlineSeconds":null}}' '{"activeDeadlineSeconds":100}'
both "update: activeDeadlineSeconds negative" s_update u-ad5 $MP '{"spec":{"activeDeadlineSeconds":-1}}'
both "update: scheduling gate added" s_update u-gt1 $JP '[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"x/g3"}}]'
both "update: one scheduling gate removed" s_update u-gt2 $JP '[{"op":"remove","path":"/spec/schedulingGates/0"}]'
both "update: every scheduling gate removed" s_update u-gt3 $MP '{"spec":{"schedulingGates":null}}'
both "update: a gate swapped for another" s_update u-gt4 $MP '{"spec":{"schedulingGates":[{"name":"x/g1"},{"name":"x/new"}]}}'
both "update: nodeName set on a gated pod" s_update u-nn1 $MP '{"spec":{"nodeName":"a100-0"}}'
both "update: nodeName set on an ungated pod" s_update u-nn2 $MP '{"spec":{"nodeName":"a100-0"}}' "$UNGATED"
both "ungated: nodeSelector entry added" s_update u-ug1 $MP '{"spec":{"nodeSelector":{"b":"2"}}}' "$UNGATED"
both "ungated: matchExpressions appended" s_update u-ug2 $JP \
    "[{\"op\":\"add\",\"path\":\"$AFF/0/matchExpressions/-\",\"value\":{\"key\":\"b\",\"operator\":\"Exists\"}}]" "$UNGATED"
both "update: restartPolicy changed" s_update u-rp1 $MP '{"spec":{"restartPolicy":"Never"}}'
both "update: label added" s_update u-lb1 $MP '{"metadata":{"labels":{"x":"y"}}}'
both "update: label value of 64 characters" s_update u-lb2 $MP "{\"metadata\":{\"labels\":{\"x\":\"$(printf '%064d' 0 | tr 0 y)\"}}}"
both "update: server-side apply changes the node selector" s_update u-ssa1 $AP \
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u-ssa1"},"spec":{"nodeSelector":{"a":"2"}}}'
both "update: server-side apply adds a label" s_update u-ssa2 $AP \
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u-ssa2","labels":{"team":"a"}}}'
both "update: PUT with a toleration removed" s_put u-put1 'del(.spec.tolerations[] | select(.key == "k"))'
both "update: PUT with a gate removed" s_put u-put2 '.spec.schedulingGates |= .[1:]'
both "update: PUT with the default fields left out" s_put u-put3 \
    'del(.spec.dnsPolicy, .spec.restartPolicy, .spec.schedulerName, .spec.containers[0].terminationMessagePath)'
both "update: PUT moving the pod to a node" s_put u-put4 '.spec.nodeName = "a100-0"' "$UNGATED"

# kubectl's view of a refused and an allowed change (its exit code and
# what it prints).
# s_kubectl ARGS...: the record is the exit code and kubectl's output.
s_kubectl() {
    kubectl --request-timeout=20s "$@" >"$T/k.out" 2>&1
    echo "exit $?|$(norm <"$T/k.out" | tr '\n' ' ')" >"$T/rec"
}
s_kpod() { call POST $P application/json "$(podjson "$1" "$BASE" '{}')"; }
for s in local real; do use $s; s_kpod k-1; done
both "kubectl patch: node selector value (strategic)" s_kubectl patch pod k-1 -p '{"spec":{"nodeSelector":{"a":"2"}}}'
both "kubectl patch: node selector entry added" s_kubectl patch pod k-1 -p '{"spec":{"nodeSelector":{"b":"2"}}}'
both "kubectl label" s_kubectl label pod k-1 team=a
both "kubectl annotate: key with a space" s_kubectl annotate pod k-1 "a b=c"
cat >"$TOP/k2.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: k-2
  labels: {a: "$LONG71"}
spec:
  containers: [{name: c}]
EOF
both "kubectl apply: invalid pod" s_kubectl apply -f "$TOP/k2.yaml"

s_kget_gated() {
    kubectl --request-timeout=20s get pod c-ok3 --no-headers >"$T/k.out" 2>&1
    echo "exit $?|$(awk '{print $1, $2, $3, $4}' "$T/k.out")" >"$T/rec"
}
both "kubectl get: a gated pod is SchedulingGated" s_kget_gated
s_ns() { call POST /api/v1/namespaces application/json "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}"; recm; }
both "namespace: a name with a dot" s_ns a.b
both "namespace: a name of 64 characters (its name label too)" s_ns "$(printf '%064d' 0 | tr 0 n)"
s_ns_ok() { call POST /api/v1/namespaces application/json '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"diff-ok"}}'
    rec '(.metadata.labels | to_entries | map("\(.key)=\(.value)") | join(",")), (.spec.finalizers | join(",")), .status.phase'; }
both "namespace: created with its name label and the kubernetes finalizer" s_ns_ok

# Pod Security Admission (enforce=baseline on the namespace): the four
# baseline checks the local server has (test/apiserver/podsecurity.c), one
# at a time and all at once (the real order and wording).
s_ns_psa() { call POST /api/v1/namespaces application/json '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"diff-psa","labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}'
    rec '.metadata.labels["pod-security.kubernetes.io/enforce"]'; }
both "namespace: diff-psa enforces baseline" s_ns_psa
PSA=/api/v1/namespaces/diff-psa/pods
s_psa() { call POST $PSA application/json "$(podjson "$1" "$2" '{}')"; recm '.details.kind // "-"'; }
both "psa: a privileged container is refused" s_psa p-priv \
    '{"schedulerName":"none","containers":[{"name":"w","image":"busybox","securityContext":{"privileged":true}}]}'
both "psa: host namespaces" s_psa p-hostns '{"schedulerName":"none","hostNetwork":true,"hostIPC":true}'
both "psa: a hostPath volume" s_psa p-hostpath \
    '{"schedulerName":"none","volumes":[{"name":"root","hostPath":{"path":"/"}}]}'
both "psa: everything at once, in the real order" s_psa p-all \
    '{"schedulerName":"none","hostPID":true,"volumes":[{"name":"a","hostPath":{"path":"/a"}},{"name":"b","hostPath":{"path":"/b"}}],"initContainers":[{"name":"i","image":"busybox","securityContext":{"privileged":true}}],"containers":[{"name":"w","image":"busybox","ports":[{"containerPort":80,"hostPort":8080},{"containerPort":81,"hostPort":8081}],"securityContext":{"privileged":true}},{"name":"x","image":"busybox","ports":[{"containerPort":82,"hostPort":9000}]}]}'
both "psa: a plain pod is admitted" s_psa p-plain '{"schedulerName":"none"}'

# ---- 3. the binding subresource ------------------------------------------------------------
# s_bind NAME BINDING-JSON [PATH-NAME]
s_bind() { call POST "$P/${3:-$1}/binding" application/json "$2"; recm; }
s_get() { call GET "$P/$1"; rec "${2:-}"; }
binding() {
    bmd=${3:-}
    [ -n "$bmd" ] || bmd='{}'
    jq -cn --arg n "$1" --arg node "$2" --argjson md "$bmd" \
        '{apiVersion: "v1", kind: "Binding", metadata: ({name: $n} + $md), target: {name: $node}}'
}
for s in local real; do
    use $s
    call POST $P application/json "$(podjson b-gated '{"schedulingGates":[{"name":"x/g"}]}' '{}')"
    call POST $P application/json "$(podjson b-1 "$NOSCHED" '{"annotations":{"sim.aiq.dev/duration":"1h"}}')"
done
both "binding: gated pod" s_bind b-gated "$(binding b-gated a100-0)"
both "binding: name unlike the URL's" s_bind b-1 "$(binding other a100-0)"
both "binding: no target name (a bare 500)" s_bind b-1 '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"b-1"},"target":{}}'
both "binding: target of kind Pod" s_bind b-1 '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"b-1"},"target":{"kind":"Pod","name":"x"}}'
both "binding: missing pod" s_bind b-none "$(binding b-none a100-0)"
both "binding: uid precondition fails" s_bind b-1 "$(binding b-1 a100-0 '{"uid":"0d3b1c2e-0000-4000-8000-000000000000"}')"
both "binding: binds, with the Binding's annotations" s_bind b-1 \
    "$(jq -cn '{apiVersion: "v1", kind: "Binding", metadata: {name: "b-1", annotations: {x: "y"}}, target: {kind: "Node", name: "a100-0"}}')"
both "binding: the pod's node, PodScheduled and annotation" s_get b-1 \
    '.spec.nodeName, ([.status.conditions[]? | select(.type == "PodScheduled") | .status] | join(",")), .metadata.annotations.x, .metadata.generation'
both "binding: already bound" s_bind b-1 "$(binding b-1 a100-1)"
both "binding: nodeName changed by patch" s_update b-2 $MP '{"spec":{"nodeName":"a100-1"}}' "$UNGATED"
for s in local real; do
    use $s
    call POST $P application/json "$(podjson b-del "$NOSCHED" '{"finalizers":["aiq.dev/test"]}')"
    call DELETE "$P/b-del"
done
both "binding: pod being deleted" s_bind b-del "$(binding b-del a100-0)"
s_unfinalize() {
    call PATCH "$P/$1" $MP '{"metadata":{"finalizers":null}}'
    pc=$(cat "$T/code")
    call GET "$P/$1"
    echo "patch $pc|get $(cat "$T/code")" >"$T/rec"
}
both "finalizer removed: a deleted unbound pod goes" s_unfinalize b-del

# ---- 4. graceful deletion ---------------------------------------------------------------------
# Pods bound through the binding subresource to a simulated node; the
# kubelet (either one) runs them, and stops them sim.aiq.dev/stop-duration
# after a DELETE (time scale 10), at most at the end of the grace period.
# gpod NAME STOP: creates, binds and waits until Running.
gpod() {
    call POST $P application/json "$(podjson "$1" "$NOSCHED" \
        "{\"annotations\":{\"sim.aiq.dev/duration\":\"1h\",\"sim.aiq.dev/stop-duration\":\"$2\"}}")"
    call POST "$P/$1/binding" application/json "$(binding "$1" a100-0)"
    until_ 30 running "$1"
}
running() { call GET "$P/$1"; [ "$(jq -r .status.phase "$T/out")" = Running ]; }
gone() { call GET "$P/$1"; [ "$(cat "$T/code")" = 404 ]; }
# watch_bg NAME [NS]: a watch on that one pod, from now, for 60 s.
watch_bg() {
    ns=${2:-default}
    call GET "/api/v1/namespaces/$ns/pods?fieldSelector=metadata.name%3D$1"
    rv=$(jq -r .metadata.resourceVersion "$T/out")
    acurl -N "/api/v1/namespaces/$ns/pods?watch=true&resourceVersion=$rv&timeoutSeconds=60&fieldSelector=metadata.name%3D$1" \
        >"$T/watch-$1" 2>/dev/null &
    BGPIDS="$BGPIDS $!"
    sleep 0.3
}
# watch_rec NAME: the events once the pod had a deletionTimestamp (event
# types with repeats collapsed), and the last event's phase and exit codes.
watch_rec() {
    until_ 40 gone "$1"
    sleep 0.5
    jq -rs '[.[] | select(.object.metadata.deletionTimestamp != null)] as $d |
        [($d | map(.type) | reduce .[] as $t ([]; if .[-1] == $t then . else . + [$t] end) | join(",")),
         ($d[-1].object.status.phase // "-"),
         ([$d[-1].object.status.containerStatuses[]?.state.terminated.exitCode] | map(tostring) | join(","))]
        | join("|")' "$T/watch-$1" >"$T/rec" 2>/dev/null || echo "watch unreadable" >"$T/rec"
}
DELREC='(.metadata.deletionTimestamp != null), .metadata.deletionGracePeriodSeconds, .metadata.generation,
 (.status | objects | .phase)'

# (g-1 stops 6 s after its DELETE: the steps in between run well within)
for s in local real; do use $s; gpod g-1 60s; gpod g-2 1h; gpod g-3 1h; gpod g-4 1h; gpod g-5 0s; done
both "bound pods Running on both" s_get g-1 '.status.phase, .spec.nodeName'

s_del() { call DELETE "$1"; rec "$DELREC"; }
s_del_body() { call DELETE "$1" application/json "$2"; rec "$DELREC"; }
for s in local real; do use $s; watch_bg g-1; done
both "delete: a bound Running pod keeps its object (grace 30)" s_del $P/g-1
both "delete: it is still there, Terminating" s_get g-1 '(.metadata.deletionTimestamp != null), .status.phase'
# the default columns but AGE (which differs by a second now and then)
s_kget() {
    kubectl --request-timeout=20s get pod "$1" --no-headers >"$T/k.out" 2>&1
    echo "exit $?|$(awk '{print $1, $2, $3, $4}' "$T/k.out")" >"$T/rec"
}
both "kubectl get: STATUS Terminating" s_kget g-1
both "delete again with a longer grace changes nothing" s_del "$P/g-1?gracePeriodSeconds=60"
both "delete: wrong uid precondition" s_del_body $P/g-1 '{"preconditions":{"uid":"0d3b1c2e-0000-4000-8000-000000000000"}}'
both "watch: MODIFIED then DELETED; stopped on SIGTERM (143)" watch_rec g-1

for s in local real; do use $s; watch_bg g-2; done
both "delete: grace 2 in DeleteOptions" s_del_body $P/g-2 '{"gracePeriodSeconds":2}'
both "watch: killed at the end of the grace period (137)" watch_rec g-2

both "delete: dryRun=All answers as if, changes nothing" s_del "$P/g-3?dryRun=All"
both "delete: after the dry run the pod is untouched" s_get g-3 '(.metadata.deletionTimestamp != null), .status.phase'
s_del_msg() { call DELETE "$1" application/json "$2"; recm; }
both "delete: unknown propagationPolicy" s_del_msg $P/g-3 '{"propagationPolicy":"Bogus"}'
both "delete: unknown propagationPolicy of a missing pod" s_del_msg $P/none '{"propagationPolicy":"Bogus"}'
for s in local real; do use $s; watch_bg g-3; done
both "delete: default grace" s_del $P/g-3
both "delete again with grace 3 shortens it" s_del "$P/g-3?gracePeriodSeconds=3"
both "watch: killed after the shortened grace (137)" watch_rec g-3

for s in local real; do use $s; watch_bg g-4; done
both "delete: gracePeriodSeconds=0 deletes at once" s_del "$P/g-4?gracePeriodSeconds=0"
both "delete: gone at once" s_get g-4
both "watch: grace 0 is MODIFIED then DELETED too" watch_rec g-4

for s in local real; do use $s; watch_bg g-5; done
both "kubectl delete --wait=false (stop-duration 0)" s_kubectl delete pod g-5 --wait=false
both "kubelet: a pod with no stop time goes" watch_rec g-5

s_finished() {
    call POST $P application/json "$(podjson "$1" "$NOSCHED" '{"annotations":{"sim.aiq.dev/duration":"1s"}}')"
    call POST "$P/$1/binding" application/json "$(binding "$1" a100-1)"
    until_ 30 finished "$1"
    call DELETE "$P/$1"
    rec "$DELREC"
}
finished() { call GET "$P/$1"; [ "$(jq -r .status.phase "$T/out")" = Succeeded ]; }
both "delete: a finished pod goes at once (grace 0)" s_finished g-6
both "delete: the finished pod is gone" s_get g-6
both "delete: an unbound pod goes at once (grace 0)" s_del $P/c-ok3
both "delete: the unbound pod is gone" s_get c-ok3

# garbage collection of a bound pod: its owner (a ConfigMap) is deleted
s_gc_setup() {
    call POST /api/v1/namespaces/default/configmaps application/json '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"g-owner"}}'
    uid=$(jq -r .metadata.uid "$T/out")
    call POST $P application/json "$(podjson g-7 "$NOSCHED" \
        "{\"annotations\":{\"sim.aiq.dev/duration\":\"1h\",\"sim.aiq.dev/stop-duration\":\"20s\"},
          \"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"g-owner\",\"uid\":\"$uid\"}]}")"
    call POST "$P/g-7/binding" application/json "$(binding g-7 a100-0)"
    until_ 30 running g-7
    watch_bg g-7
    call DELETE /api/v1/namespaces/default/configmaps/g-owner
}
for s in local real; do use $s; s_gc_setup; done
both "garbage collection: the owned bound pod stops gracefully (143)" watch_rec g-7

# namespace deletion with a bound pod in it
s_ns_setup() {
    call POST /api/v1/namespaces application/json '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"diff-ns"}}'
    # the real server admits pods once the namespace has its service account
    [ "$SRV" = real ] && until_ 30 sh -c "kubectl get sa default -n diff-ns"
    call POST /api/v1/namespaces/diff-ns/pods application/json "$(podjson g-8 "$NOSCHED" \
        '{"annotations":{"sim.aiq.dev/duration":"1h","sim.aiq.dev/stop-duration":"20s"}}')"
    call POST /api/v1/namespaces/diff-ns/pods/g-8/binding application/json "$(binding g-8 a100-0)"
    until_ 30 sh -c "kubectl get pod g-8 -n diff-ns -o jsonpath={.status.phase} | grep -qx Running"
    watch_bg g-8 diff-ns
    call DELETE /api/v1/namespaces/diff-ns
}
nsgone() { call GET /api/v1/namespaces/diff-ns/pods/g-8; [ "$(cat "$T/code")" = 404 ]; }
s_ns_rec() {
    until_ 60 nsgone
    sleep 0.5
    jq -rs '[.[] | select(.object.metadata.deletionTimestamp != null)] as $d |
        [($d | map(.type) | reduce .[] as $t ([]; if .[-1] == $t then . else . + [$t] end) | join(",")),
         ([$d[-1].object.status.containerStatuses[]?.state.terminated.exitCode] | map(tostring) | join(","))]
        | join("|")' "$T/watch-g-8" >"$T/rec" 2>/dev/null || echo "watch unreadable" >"$T/rec"
}
for s in local real; do use $s; s_ns_setup; done
both "namespace deletion: its bound pod stops gracefully (143)" s_ns_rec

# ---- 5. a watch from a too-old resourceVersion ------------------------------------------------
s_oldwatch() {
    acurl -N -o "$T/out" -w '%{http_code}' "$J?watch=true&resourceVersion=1&timeoutSeconds=5" >"$T/code"
    echo "$(cat "$T/code")|$(wc -l <"$T/out" | tr -d ' ')|$(jq -r '[.type, .object.kind, .object.code, .object.reason,
        (.object.message | sub("[0-9]+ \\([0-9]+\\)"; "N (M)"))] | map(tostring) | join("|")' "$T/out")" >"$T/rec"
}
both "watch from resourceVersion 1: 200, one ERROR event (410 Expired), end" s_oldwatch

# ---- 6. JSON nesting depth ----------------------------------------------------------------------
# deep NAME DEPTH: an AIJob whose body nests DEPTH levels (spec.template
# keeps unknown fields). The real server answers 500 at 9997-9999 levels
# (its managedFields add levels), so the depths used stay clear of that.
deep() {
    n=$(($2 - 1))
    {
        printf '{"apiVersion":"aiq.dev/v1alpha1","kind":"AIJob","metadata":{"name":"%s"},"spec":{"user":"u","template":' "$1"
        head -c $((n - 1)) /dev/zero | sed 's/\x0/{"a":/g'
        printf '1'
        head -c $((n - 1)) /dev/zero | tr '\0' '}'
        printf '}}'
    } >"$TOP/deep-$1.json"
}
deep d-5000 5000
deep d-10000 10000
deep d-10001 10001
# (jq stops short of 10000 levels: a deep answer records its code only)
s_deep() {
    call POST $J application/json @"$TOP/deep-$1.json"
    if [ "$(cat "$T/code")" = 201 ]; then echo "201" >"$T/rec"; else recm; fi
}
s_deep_get() { call GET "$J/$1"; echo "$(cat "$T/code")|$(head -c 60 "$T/out" | cut -c1-20)" >"$T/rec"; }
both "nesting: 5000 levels stored" s_deep d-5000
both "nesting: 10000 levels stored" s_deep d-10000
both "nesting: and read back" s_deep_get d-10000
both "nesting: 10001 levels refused (400)" s_deep d-10001 msg
for s in local real; do use $s; call DELETE $J/d-5000; call DELETE $J/d-10000; done

# ---- 7. invalid UTF-8 in a body -------------------------------------------------------------
s_utf8() {
    printf '{"apiVersion":"aiq.dev/v1alpha1","kind":"AIJob","metadata":{"name":"%s"},"spec":{"user":"%b"}}' "$1" "$2" >"$T/u.json"
    call POST $J application/json @"$T/u.json"
    code=$(cat "$T/code")
    call GET "$J/$1"
    echo "$code|$(jq -j .spec.user "$T/out" | od -An -tx1 | tr -d ' \n')" >"$T/rec"
}
both "UTF-8: invalid bytes stored as U+FFFD" s_utf8 utf-1 'ev\0377\0376e'
both "UTF-8: surrogate and overlong and cut sequences" s_utf8 utf-2 'a\0355\0240\0200b\0300\0257c\0342\0202d'
both "UTF-8: lone surrogate escapes" s_utf8 utf-3 'a\\ud800b\\udc00c\\u00e9'

# ---- 8. the AIJob name limit from the CRD schema -------------------------------------------
s_aijob() { call POST $J application/json "$(jq -cn --argjson md "$1" '{apiVersion: "aiq.dev/v1alpha1", kind: "AIJob", metadata: $md, spec: {user: "u"}}')"; recm "${2:-}"; }
both "AIJob: 64-character name refused (schema maxLength)" s_aijob "{\"name\":\"$(printf '%064d' 0 | tr 0 a)\"}"
both "AIJob: 63-character name stored" s_aijob "{\"name\":\"$(printf '%063d' 0 | tr 0 a)\"}" '(.metadata.name | length)'
both "AIJob: generateName of 64 characters" s_aijob "{\"generateName\":\"$(printf '%064d' 0 | tr 0 b)\"}" '(.metadata.name | length)'
both "AIJob: invalid label and too long name together" s_aijob \
    "{\"name\":\"$(printf '%064d' 0 | tr 0 a)\",\"labels\":{\"a\":\"-x\"}}"
s_aijob_spec() { call POST $J application/json "$(jq -cn --arg n "$1" --argjson spec "$2" '{apiVersion: "aiq.dev/v1alpha1", kind: "AIJob", metadata: {name: $n}, spec: $spec}')"; recm; }
both "AIJob: a range error alone" s_aijob_spec aij-r1 '{"user":"u","priority":-1}'
both "AIJob: a range error leaves the CEL rules running" s_aijob_spec aij-r2 '{"user":"u","priority":-1,"resources":{"gpuModel":"A100"}}'
both "AIJob: a type error keeps them from running" s_aijob_spec aij-r3 '{"user":"u","priority":"x","resources":{"gpuModel":"A100"}}'
both "AIJob: the CEL rule alone" s_aijob_spec aij-r4 '{"user":"u","resources":{"gpuModel":"A100"}}'

# ---- 9. the template guard's CEL rules (crds/aijobs.aiq.dev.yaml) ---------------------------
tg() { printf '{"user":"u","template":{"spec":%s}}' "$1"; }
both "AIJob: template GPU limit refused" s_aijob_spec aij-t1 "$(tg '{"containers":[{"name":"w","resources":{"limits":{"nvidia.com/gpu":8}}}]}')"
both "AIJob: template nodeName refused" s_aijob_spec aij-t2 "$(tg '{"nodeName":"n1","containers":[{"name":"w"}]}')"
# Several rules failing at once: the real server walks an object's keys in
# Go map order (apiextensions cel/validation.go validateMap), so the order
# of the causes varies run to run; compare them sorted, with each message.
s_aijob_causes() { call POST $J application/json "$(jq -cn --arg n "$1" --argjson spec "$2" '{apiVersion: "aiq.dev/v1alpha1", kind: "AIJob", metadata: {name: $n}, spec: $spec}')"; rec '([.details.causes[]? | .field + ": " + .message] | sort | join(" / "))'; }
both "AIJob: template gates, claims and an init container's amd.com/gpu together" s_aijob_causes aij-t3 \
    "$(tg '{"schedulingGates":[{"name":"g"}],"resourceClaims":[{"name":"c"}],"initContainers":[{"name":"i","resources":{"requests":{"amd.com/gpu":"1"},"claims":[{"name":"c"}]}}],"containers":[{"name":"w"}]}')"
both "AIJob: template pod-level GPU limit refused" s_aijob_spec aij-t4 "$(tg '{"resources":{"limits":{"nvidia.com/gpu":"1"}},"containers":[{"name":"w"}]}')"
both "AIJob: template GPU limit of any type refused" s_aijob_spec aij-t5 "$(tg '{"containers":[{"name":"w","resources":{"limits":{"nvidia.com/gpu":true}}}]}')"
# The rules need the limits typed (a CEL map of int-or-string; a
# preserve-unknown-fields value cannot be converted to a CEL type), so a
# quantity written as a YAML float is refused, as in spec.resources.
# (One bad field only: with two, the real server lists the errors in map
# order, which varies from run to run.)
both "AIJob: template cpu limit as a YAML float refused (integer or string)" s_aijob_spec aij-t8 \
    "$(tg '{"containers":[{"name":"w","resources":{"limits":{"cpu":0.5}}}]}')"
both "AIJob: template with 65 containers" s_aijob_spec aij-t6 "$(tg "$(jq -cn '[range(65) | {name: "c\(.)"}] | {containers: .}')")"
both "AIJob: template with native resources and empty lists stored" s_aijob_spec aij-t7 \
    "$(tg '{"nodeName":"","schedulingGates":[],"containers":[{"name":"w","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]}')"

done_
