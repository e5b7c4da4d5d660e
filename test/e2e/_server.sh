# _server.sh -- starts the API server an e2e suite runs against (sourced
# by lib.sh and by the suites that keep their own check helpers; the
# runner skips _*.sh). Needs ROOT, BUILD and T (the suite's temp dir).
# AIQ_API picks the server:
#   local  BUILD/aiq-apiserver, the fast local cluster (default)
#   real   build/realcluster/aiq-realcluster: the real kube-apiserver,
#          kube-scheduler, kube-controller-manager and etcd, with the same
#          fake nodes and a kubelet stand-in (test/realcluster)
# Both take the same flags and write the same kind of kubeconfig; api.log
# in T collects the server's output.
AIQ_API=${AIQ_API:-local}
REALCLUSTER=${AIQ_REALCLUSTER:-$ROOT/build/realcluster/aiq-realcluster}
case "$AIQ_API" in
    local) APIBIN=$BUILD/aiq-apiserver ;;
    real) APIBIN=$REALCLUSTER ;;
    *) echo "_server.sh: AIQ_API must be local or real, got \"$AIQ_API\"" >&2; exit 2 ;;
esac
if [ ! -x "$APIBIN" ]; then
    echo "_server.sh: $APIBIN is missing: run make (AIQ_API=$AIQ_API)"; echo "0 passed, 1 failed"; exit 1
fi

# api_up N [args]: starts the API server (AIQ_API's) on --db $T/api.db
# with args, appending to api.log, and waits until api.log has N
# "listening" lines (the local server is ready in well under a second,
# the real control plane in a few) or the server died.
api_up() {
    n=$1; shift
    "$APIBIN" --db "$T/api.db" --kubeconfig "$T/kubeconfig" "$@" >>"$T/api.log" 2>&1 &
    API_PID=$!
    for _ in $(seq 1 1200); do
        [ -s "$T/kubeconfig" ] && [ "$(grep -c listening "$T/api.log" 2>/dev/null)" -ge "$n" ] && return 0
        kill -0 "$API_PID" 2>/dev/null || { echo "API server exited:"; tail -20 "$T/api.log"; return 1; }
        sleep 0.1
    done
    echo "API server not ready after 120 s"; tail -20 "$T/api.log"; return 1
}

# api_curl [curl args]: curl against the API server as the kubeconfig's
# user (its server, bearer token and CA), e.g. api_curl -X POST ... /api/v1/...
# An argument that is an API path (/api..., /version, /healthz, /readyz,
# /livez, /openapi...) is put after the server address. The server, token
# and CA are read from the kubeconfig once (cached in $T/api.env until the
# kubeconfig changes), so a test can call it in a tight loop.
api_curl() {
    if [ ! -s "$T/api.env" ] || [ "$KUBECONFIG" -nt "$T/api.env" ]; then
        {
            echo "srv='$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')'"
            echo "tok='$(kubectl config view --raw -o jsonpath='{.users[0].user.token}')'"
        } >"$T/api.env.tmp"
        kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
            base64 -d >"$T/api-ca.crt" 2>/dev/null
        mv "$T/api.env.tmp" "$T/api.env"
    fi
    . "$T/api.env"
    set -- "$@" ""
    for a in "$@"; do
        shift
        case "$a" in
        /api|/api/*|/apis|/apis/*|/version*|/healthz*|/readyz*|/livez*|/openapi*) set -- "$@" "$srv$a" ;;
        "") ;;
        *) set -- "$@" "$a" ;;
        esac
    done
    if [ -s "$T/api-ca.crt" ]; then set -- --cacert "$T/api-ca.crt" "$@"; fi
    if [ -n "$tok" ]; then set -- -H "Authorization: Bearer $tok" "$@"; fi
    curl -s "$@"
}
