# lib.sh -- shared helpers of the e2e tests (sourced, not run: the runner
# skips lib.sh).
# Starts an API server and build/san/aiq-operator in a private temp dir,
# drives them with the real kubectl, counts checks, and kills every
# process it started on exit. The API server is AIQ_API's:
#   local  build/san/aiq-apiserver, the fast local cluster (default)
#   real   build/realcluster/aiq-realcluster: the real kube-apiserver,
#          kube-scheduler, kube-controller-manager and etcd, with the same
#          fake nodes and a kubelet stand-in (test/realcluster)
# Both take the same flags and write the same kind of kubeconfig.
#   . test/e2e/lib.sh; e2e_start [apiserver args]; op_start [operator args]
#   check "what" cmd...; wait_for SECS "what" cmd...; e2e_done
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${AIQ_BUILD:-$ROOT/build/san}
T=$(mktemp -d /tmp/aiq-e2e.XXXXXX)
export T
. "$ROOT/test/e2e/_server.sh"
export KUBECONFIG=$T/kubeconfig KUBECACHEDIR=$T/kcache
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
PASS=0
FAIL=0
API_PID=""
OP_PID=""

# Sanitizer reports in any process's log under $T (the operator, the
# local server, tools the suite ran): each one is a failure, found after
# the processes have exited, so leak reports at exit count too.
e2e_sanitizer_check() {
    for f in "$T"/*.log; do
        [ -f "$f" ] || continue
        grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer' "$f" ||
            continue
        bad "sanitizer report in $(basename "$f")"
        grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | head -30 | sed 's/^/     /'
    done
}

# e2e_cleanup [STATUS]: the EXIT trap; STATUS is the script's exit
# status, captured first by a trap that runs other commands before.
e2e_cleanup() {
    rc=${1:-$?}
    [ -n "$OP_PID" ] && kill "$OP_PID" 2>/dev/null
    [ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null
    [ -n "$OP_PID" ] && wait "$OP_PID" 2>/dev/null
    [ -n "$API_PID" ] && wait "$API_PID" 2>/dev/null
    before=$FAIL
    e2e_sanitizer_check
    if [ "$FAIL" != "$before" ]; then
        echo "$PASS passed, $FAIL failed (sanitizer reports after the suite)"
        rc=1
    fi
    if [ "$FAIL" != 0 ]; then
        echo "--- operator log (tail) ---"; tail -40 "$T/op.log" 2>/dev/null
        echo "--- apiserver log (tail) ---"; tail -15 "$T/api.log" 2>/dev/null
    fi
    [ -z "${E2E_KEEP:-}" ] && rm -rf "$T"
    exit "$rc"
}
trap 'e2e_cleanup $?' EXIT
trap 'exit 1' INT TERM

ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }

# progress TEXT: what a long suite is doing now (e.g. "kill 12 of 50"),
# for the runner's progress lines (test/run-tests.sh, AIQ_PROGRESS). One
# line in $AIQ_PROGRESS_FILE, replaced each time; nothing without it.
progress() {
    [ -n "${AIQ_PROGRESS_FILE:-}" ] || return 0
    # A lost progress line only makes the next report less precise.
    printf '%s\n' "$*" >"$AIQ_PROGRESS_FILE.tmp" 2>/dev/null &&
        mv "$AIQ_PROGRESS_FILE.tmp" "$AIQ_PROGRESS_FILE" 2>/dev/null || :
}

# check "what" cmd...: passes when cmd exits 0.
check() {
    what=$1; shift
    if "$@" >"$T/check.out" 2>&1; then ok "$what"; else bad "$what"; sed 's/^/     /' "$T/check.out" | tail -8; fi
}

# wait_for SECS "what" cmd...: retries cmd every 0.5 s until it passes.
wait_for() {
    secs=$1; what=$2; shift 2
    end=$(( $(date +%s) + secs ))
    while :; do
        if "$@" >"$T/check.out" 2>&1; then ok "$what"; return 0; fi
        [ -n "${AIQ_PROGRESS_FILE:-}" ] && progress "waiting for $what: $(tail -1 "$T/check.out" | cut -c1-120)"
        if [ "$(date +%s)" -ge "$end" ]; then
            bad "$what (after ${secs}s)"; sed 's/^/     /' "$T/check.out" | tail -8; return 1
        fi
        sleep 0.5
    done
}

# e2e_start [extra server args]: the API server on a free port, with the
# CRDs, RBAC and admission policy of crds/ applied.
e2e_start() {
    : >"$T/api.log"
    api_up 1 --port 0 "$@" || { bad "API server ($AIQ_API) ready"; return 1; }
    kubectl apply -k "$ROOT/crds/" >"$T/crds.out" 2>&1 || { bad "apply crds"; cat "$T/crds.out"; }
    # A real server serves a new CRD's kind only once it is Established.
    kubectl wait --for condition=established --timeout=60s crd --all >/dev/null 2>&1 ||
        bad "CRDs established"
}

# op_start [extra aiq-operator args]: the operator, waiting until /readyz.
# It uses $OP_KUBECONFIG when set (e.g. its own service account's
# credentials), else the admin kubeconfig. Most suites submit in
# namespaces no Group claims, so it runs with --ungrouped run (said in an
# Event per job); group_conflict.sh checks the default, wait. Cached
# AIJobs and pods are frozen after 250ms unread instead of 2s, so that
# every suite reads frozen objects back (operator/cache.h) under the
# sanitizers; AIQ_E2E_FREEZE_AFTER sets another (0: never).
op_start() {
    "$BUILD/aiq-operator" --kubeconfig "${OP_KUBECONFIG:-$T/kubeconfig}" --db "$T/op.db" \
        --metrics-addr 127.0.0.1:0 --cycle-ms 300 --log-level debug --ungrouped run \
        --cache-freeze-after "${AIQ_E2E_FREEZE_AFTER:-250ms}" "$@" \
        >>"$T/op.log" 2>&1 &
    OP_PID=$!
    for _ in $(seq 1 100); do
        grep -q "event=ready" "$T/op.log" 2>/dev/null && return 0
        sleep 0.1
    done
    bad "operator ready"
}

# op_kill9: SIGKILL the operator (no cleanup at all).
op_kill9() {
    [ -n "$OP_PID" ] && kill -9 "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null
    OP_PID=""
}

# jp KIND NAME JSONPATH [ns]: one jsonpath value.
jp() { kubectl get "$1" "$2" -n "${4:-default}" -o "jsonpath=$3" 2>/dev/null; }

# eq "a" "b": test helper with a readable failure.
eq() { [ "$1" = "$2" ] || { echo "expected [$2] got [$1]"; return 1; }; }

e2e_done() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" = 0 ]
}
