# _workload.sh -- the reliability tests' shared workload and end-state
# checks (sourced after lib.sh; the runner skips _*.sh).
#
#   wl_gen N SEED > FILE     N AIJobs in default: users u1..u4, 1-4 GPU
#                            single pods and 2-4 replica gangs, about one
#                            in eight failing with exit code 1
#                            (backoffLimit 1: two attempts, then Failed).
#                            The failing ones have priority 1 (the others
#                            0), so a requeued job is admitted again soon
#                            rather than behind the whole workload, and a
#                            crash test can land on its re-admission.
#                            Durations 20-50 s of simulated time.
#   wl_expect FILE           "name phase attempts replicas" per job, what
#                            the exit codes say must happen.
#   wl_phases                "name phase attempts" per job, from the API.
#   wl_all_done N            passes when N jobs are Succeeded or Failed.
#   wl_check_end FILE        the end-state checks shared by crash_restart
#                            and api_faults (each one an ok/FAIL line).
#   wl_user_gpus DB          "user gpu_seconds" from the operator's store.
#   wl_cmp_gpus A B TOL      passes when every user's GPU-seconds in A and B
#                            differ by at most TOL (a fraction) of A's.

wl_gen() {
    awk -v n="$1" -v seed="$2" 'BEGIN {
        srand(seed)
        for (i = 0; i < n; i++) {
            name = sprintf("w%04d", i)
            user = "u" (1 + int(rand() * 4))
            if (rand() < 0.2) { rep = 2 + int(rand() * 3); gpus = 1 + int(rand() * 2) }
            else { rep = 1; gpus = 1 + int(rand() * 4) }
            dur = 20 + int(rand() * 31)
            code = (rand() < 0.125) ? 1 : 0
            printf "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\n"
            printf "metadata:\n  name: %s\n  namespace: default\n", name
            printf "  annotations: {sim.aiq.dev/exit-code: \"%d\"}\n", code
            printf "spec:\n  user: %s\n  priority: %d\n  replicas: %d\n  backoffLimit: 1\n", user, code, rep
            printf "  resources: {gpus: %d, gpuMemoryMiB: 20480, cpu: \"1\", memory: 1Gi}\n", gpus
            printf "  template:\n    metadata:\n      annotations: {sim.aiq.dev/duration: %ds}\n", dur
            printf "    spec:\n      containers: [{name: w, image: busybox}]\n---\n"
        }
    }'
}

wl_expect() {
    awk '/^  name: /{n=$2} /exit-code/{c=($0 ~ /"1"/)} /^  replicas: /{r=$2}
         /^---/{ if (c) print n, "Failed", 2, r; else print n, "Succeeded", 1, r }' "$1"
}

wl_phases() {
    kubectl get aijobs -n default -o \
        'jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.attempts}{"\n"}{end}' |
        sort
}

wl_all_done() {
    got=$(wl_phases | awk '$2 == "Succeeded" || $2 == "Failed"' | wc -l)
    echo "$got of $1 jobs finished"
    [ "$got" -eq "$1" ]
}

# wl_apply FILE: applies the workload. Under fault injection a pass over
# hundreds of objects practically always meets a 500 somewhere, so a
# failed pass is followed by a count: done once every AIJob of FILE
# exists (apply is idempotent and the objects never change).
wl_apply() {
    want=$(grep -c '^kind: AIJob' "$1")
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        kubectl apply --validate=false -f "$1" >"$T/apply.out" 2>&1 && return 0
        have=$(kubectl get aijobs -n default -o name 2>/dev/null | wc -l)
        [ "$have" -ge "$want" ] && return 0
        sleep 0.5
    done
    echo "$have of $want AIJobs exist"; tail -5 "$T/apply.out"; return 1
}

# wl_pods_ok FILE: Succeeded jobs own exactly `replicas` pods named
# <job>-<i>, each controlled by that AIJob (by uid); Failed jobs own none;
# no pod name twice, no pod of an unknown job.
wl_pods_ok() {
    kubectl get aijobs -n default -o \
        'jsonpath={range .items[*]}J {.metadata.name} {.metadata.uid} {.status.phase}{"\n"}{end}' >"$T/pj.txt" &&
    kubectl get pods -n default -o \
        'jsonpath={range .items[*]}P {.metadata.name} {.metadata.labels.aiq\.dev/job} {.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].uid} {.metadata.ownerReferences[0].controller}{"\n"}{end}' >>"$T/pj.txt" &&
    wl_expect "$1" | sed 's/^/E /' | cat - "$T/pj.txt" | awk '
        $1 == "E" { rep[$2] = $5 }
        $1 == "J" { uid[$2] = $3; ph[$2] = $4 }
        $1 == "P" { if (seen[$2]++) { print "duplicate pod name " $2; bad++ }
                    j = $3; np[j]++
                    if (!(j in uid)) { print "pod " $2 " of unknown job " j; bad++; next }
                    if ($4 != "AIJob" || $5 != j || $6 != uid[j] || $7 != "true") {
                        print "pod " $2 ": owner " $4 "/" $5 "/" $6 " controller=" $7 ", want AIJob/" j "/" uid[j]; bad++ }
                    idx = substr($2, length(j) + 2)
                    if (substr($2, 1, length(j) + 1) != j "-" || idx !~ /^[0-9]+$/ || idx + 0 >= rep[j]) {
                        print "pod " $2 " is not " j "-<0.." rep[j] - 1 ">"; bad++ } }
        END { for (j in uid) {
                  want = ph[j] == "Succeeded" ? rep[j] : 0
                  if (np[j] + 0 != want) { print j " (" ph[j] ") has " np[j] + 0 " pods, want " want; bad++ } }
              if (bad) exit 1 }'
}

# wl_runs_ok: no double run. The simulated kubelet records one "Started"
# Event per pod it starts (involvedObject.uid is the pod's uid); every
# attempt creates fresh pods. A job's distinct started pods must be
# exactly replicas x attempts for a job that ran every attempt to its end.
wl_runs_ok() {
    wl_expect "$1" >"$T/exp.txt"
    kubectl get events -n default -o \
        'jsonpath={range .items[?(@.reason=="Started")]}{.involvedObject.name} {.involvedObject.uid}{"\n"}{end}' |
        sort -u >"$T/started.txt" || return 1
    wl_phases | awk 'FNR == NR { rep[$1] = $4; next }
        FILENAME ~ /started/ { j = $1; sub(/-[0-9]+$/, "", j); n[j]++; next }
        { att[$1] = $3 }
        END { for (j in att) {
                  want = rep[j] * att[j]
                  if (n[j] + 0 != want) { print j ": " n[j] + 0 " pods started, want " want " (" rep[j] " replicas x " att[j] " attempts)"; bad++ } }
              if (bad) exit 1 }' "$T/exp.txt" "$T/started.txt" -
}

# wl_journal_ok DB [DUPS]: every job's admit decisions name each of its
# attempts ("(attempt N)" in the message) and no other, and the store has
# one finished attempt row per attempt. An admission recorded but never
# published (the operator killed in between) is decided again for the
# same attempt after the restart: at most DUPS such repeats in all
# (default 0), each one a repeat of an attempt number, never a new one.
wl_journal_ok() {
    wl_phases >"$T/ph.txt"
    sqlite3 -separator ' ' "$1" "
        SELECT j.name,
               (SELECT count(DISTINCT substr(d.message, instr(d.message, '(attempt '))) FROM decisions d
                 WHERE d.job_uid = j.uid AND d.action = 'admit'),
               (SELECT count(*) FROM decisions d WHERE d.job_uid = j.uid AND d.action = 'admit'),
               (SELECT count(*) FROM job_attempts a WHERE a.job_uid = j.uid AND a.finished > 0)
        FROM jobs j WHERE j.ns = 'default';" | awk -v dups="${2:-0}" 'FNR == NR { att[$1] = $3; next }
        { if (!($1 in att)) next; seen[$1] = 1
          if ($2 != att[$1]) { print $1 ": admit decisions for " $2 " attempts, status.attempts " att[$1]; bad++ }
          extra += $3 - $2
          if ($4 != att[$1]) { print $1 ": " $4 " finished attempts in the store, status.attempts " att[$1]; bad++ } }
        END { for (j in att) if (!(j in seen)) { print j ": not in the store"; bad++ }
              print extra + 0 " admissions decided again after a crash (allowed " dups ")"
              if (extra > dups) bad++
              if (bad) exit 1 }' "$T/ph.txt" -
}

# wl_usage_ok DB: usage buckets hold what the attempts counted, once.
wl_usage_ok() {
    sqlite3 "$1" "SELECT printf('usage %.3f attempts %.3f',
                         (SELECT coalesce(sum(gpu_seconds), 0) FROM usage),
                         (SELECT coalesce(sum(gpu_seconds), 0) FROM job_attempts));" |
        awk '{ print; d = $2 - $4; if (d < 0) d = -d; exit d > 0.01 }'
}

wl_user_gpus() {
    sqlite3 -separator ' ' "$1" "SELECT user, printf('%.1f', sum(gpu_seconds)) FROM usage GROUP BY user ORDER BY user;"
}

wl_cmp_gpus() {
    awk -v tol="$3" 'FNR == NR { a[$1] = $2; next } { b[$1] = $2 }
        END { for (u in a) { d = b[u] - a[u]; if (d < 0) d = -d
                  pct = a[u] > 0 ? 100 * d / a[u] : 0
                  printf "%s: %.1f vs %.1f GPU-s (%.1f%%)\n", u, a[u], b[u], pct
                  if (d > tol * a[u] + 1) bad++ }
              for (u in b) if (!(u in a)) { print u ": only in the second run"; bad++ }
              if (bad) exit 1 }' "$1" "$2"
}

# wl_phase_ok FILE: phases and attempts are what the exit codes say.
wl_phase_ok() {
    wl_expect "$1" | awk '{ print $1, $2, $3 }' | sort >"$T/want.txt"
    wl_phases >"$T/got.txt"
    diff "$T/want.txt" "$T/got.txt"
}

# wl_check_end FILE DB [DUPS]: the shared end-state checks.
wl_check_end() {
    check "every job ended as its exit codes say (phase and attempts)" wl_phase_ok "$1"
    check "no duplicate or stray pods; owners match" wl_pods_ok "$1"
    check "no double run: started pods = replicas x attempts" wl_runs_ok "$1"
    check "journal: admit decisions name each attempt; one finished attempt per attempt" wl_journal_ok "$2" "${3:-0}"
    check "usage table equals the sum of finished attempts" wl_usage_ok "$2"
}

# wl_nodes FILE: four 8-GPU nodes (32 GPUs).
wl_nodes() {
    cat >"$1" <<Y
nodes:
  - name: gpu
    count: 4
    gpus: 8
    gpuProduct: NVIDIA-A100-SXM4-80GB
    gpuMemoryMiB: 81920
    cpu: "64"
    memory: 512Gi
Y
}

# wl_op_up [args]: starts the operator (AIQ_CRASH_AT as exported) and
# waits for a new "event=ready" line or the process's death. op.log is
# appended across restarts, so ready lines are counted, not grepped.
wl_op_up() {
    before=$(cat "$T/op.log" 2>/dev/null | grep -c "event=ready")
    "$BUILD/aiq-operator" --kubeconfig "$T/kubeconfig" --db "$T/op.db" \
        --metrics-addr 127.0.0.1:0 --cycle-ms 300 --log-level info --backoff 1s --ungrouped run "$@" \
        >>"$T/op.log" 2>&1 &
    OP_PID=$!
    for _ in $(seq 1 200); do
        [ "$(cat "$T/op.log" 2>/dev/null | grep -c "event=ready")" -gt "$before" ] && return 0
        kill -0 "$OP_PID" 2>/dev/null || return 0
        sleep 0.05
    done
    return 1
}

# wl_api_restart: stops the API server (SIGTERM) and starts it again on
# the same --db and port, so the running operator must resume or relist.
wl_api_restart() {
    port=$(sed -n 's#.*server: https\{0,1\}://127.0.0.1:\([0-9]*\).*#\1#p' "$T/kubeconfig" | head -1)
    n=$(grep -c listening "$T/api.log")
    kill "$API_PID"; wait "$API_PID" 2>/dev/null
    api_up $((n + 1)) --port "$port" "$@"
}

# wl_stop_all: stops operator and cluster and moves their files aside
# (to $T/$1/), ready for a second run in the same test.
wl_stop_all() {
    [ -n "$OP_PID" ] && kill "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null
    [ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null && wait "$API_PID" 2>/dev/null
    OP_PID=""; API_PID=""
    mkdir -p "$T/$1"
    for f in api.db api.db-wal api.db-shm op.db op.db-wal op.db-shm op.log api.log \
             kubeconfig kcache; do
        [ -e "$T/$f" ] && mv "$T/$f" "$T/$1/"
    done
}

# wl_attempts_ok FILE DB OUTAGES SLACK CATCHUP: every finished attempt was billed
# for the time its pods really ran. The simulated pods run exactly their
# duration / time scale (10), so an attempt's GPU-seconds divided by its
# GPUs must be that runtime within SLACK seconds (observation delay at
# each edge: a cycle plus watch latency), widened by any operator outage
# ("t_down t_up" lines in OUTAGES, unix seconds) that overlaps the attempt
# (an edge seen at the restart), plus CATCHUP seconds per such outage: a
# restarted operator is "ready" once it listed, but works through the
# backlog of listed objects after that (measured up to ~1.2 s with 300
# jobs on the loaded 2-core machine). Billing an attempt not at all or
# for a whole extra runtime is caught; counting it twice is caught
# exactly by wl_journal_ok and wl_usage_ok.
wl_attempts_ok() {
    awk '/^  name: /{ n = $2 } /^  replicas: /{ r = $2 }
         /resources: /{ match($0, /gpus: [0-9]+/); g = substr($0, RSTART + 6, RLENGTH - 6) }
         /duration: /{ match($0, /duration: [0-9]+/); print "N", n, r * g, substr($0, RSTART + 10, RLENGTH - 10) / 10 }' "$1" >"$T/nominal.txt"
    touch "$3"
    catchup=${5:-0}
    sqlite3 -separator ' ' "$2" "SELECT 'A', j.name, a.attempt, a.started, a.finished, a.gpu_seconds
        FROM job_attempts a JOIN jobs j ON j.uid = a.job_uid WHERE j.ns = 'default';" |
        cat "$T/nominal.txt" "$3" - | awk -v slack="$4" -v cu="$catchup" '
        $1 == "N" { gp[$2] = $3; nom[$2] = $4; next }
        $1 == "A" { n++
                    if (!($2 in gp) || gp[$2] <= 0) { print $2 ": not in the workload"; bad++; next }
                    ran = $6 / gp[$2]; lo = $4 - nom[$2] - 2; hi = $5 + 2; ov = 0
                    for (i = 0; i < no; i++) { a = od[i] > lo ? od[i] : lo; b = ou[i] < hi ? ou[i] : hi; if (b > a) ov += b - a + cu }
                    d = ran - nom[$2]; if (d < 0) d = -d
                    if (d > max) max = d
                    if (d > slack + ov) { printf "%s attempt %d: billed %.2f s x %d GPUs, ran %.2f s (outage overlap %.1f s)\n", $2, $3, ran, gp[$2], nom[$2], ov; bad++ }
                    next }
        NF == 2 { od[no] = $1; ou[no] = $2; no++ }
        END { printf "%d attempts, %d outages, largest deviation %.2f s\n", n, no, max
              if (bad || n == 0) exit 1 }'
}
