# _workload.sh -- the reliability tests' shared workload and end-state
# checks (sourced after lib.sh; the runner skips _*.sh).
#
#   wl_gen N SEED [groups] > FILE
#                            N AIJobs in default: users u1..u4, 1-4 GPU
#                            single pods and 2-4 replica gangs, about one
#                            in eight failing with exit code 1
#                            (backoffLimit 1: two attempts, then Failed).
#                            The failing ones have priority 1 (the others
#                            0), so a requeued job is admitted again soon
#                            rather than behind the whole workload, and a
#                            crash test can land on its re-admission.
#                            Durations 20-50 s of simulated time.
#                            With "groups": each job in its user's
#                            namespace team-a (u1, u2, a quarter of u3's) or
#                            team-b (u4, the rest of u3's), and at
#                            most 6 GPUs (gangs of 2-3 x 1-2), so every job
#                            fits the UserQuotas of wl_groups.
#   WL_NS                    the namespaces the checks read (default
#                            "default"; "team-a team-b" with groups).
#   WL_OP_ARGS               the operator's extra flags (default
#                            "--ungrouped run": the plain workload's
#                            namespace has no Group; "" with groups).
#   wl_groups FILE           the Namespaces, Groups and UserQuotas of the
#                            grouped workload; wl_quota_table their quotas.
#   wl_quota_exact WHAT      the operator's quota usage (metrics, Group and
#                            UserQuota status) equals the pods' (see there).
#   wl_expect FILE           "name phase attempts replicas" per job, what
#                            the exit codes say must happen.
#   wl_phases                "name phase attempts" per job, from the API.
#   wl_all_done N            passes when N jobs are Succeeded or Failed.
#   wl_check_end FILE        the end-state checks shared by crash_restart
#                            and api_faults (each one an ok/FAIL line).
#   wl_user_gpus DB          "user gpu_seconds" from the operator's store.
#   wl_cmp_gpus A B TOL      passes when every user's GPU-seconds in A and B
#                            differ by at most TOL (a fraction) of A's.

WL_NS=${WL_NS:-default}
WL_OP_ARGS=${WL_OP_ARGS---ungrouped run}

wl_gen() {
    awk -v n="$1" -v seed="$2" -v grouped="${3:-}" 'BEGIN {
        srand(seed)
        for (i = 0; i < n; i++) {
            name = sprintf("w%04d", i)
            user = "u" (1 + int(rand() * 4))
            if (rand() < 0.2) { rep = 2 + int(rand() * (grouped ? 2 : 3)); gpus = 1 + int(rand() * 2) }
            else { rep = 1; gpus = 1 + int(rand() * 4) }
            dur = 20 + int(rand() * 31)
            code = (rand() < 0.125) ? 1 : 0
            ns = "default"
            if (grouped) ns = (user == "u1" || user == "u2" || (user == "u3" && rand() < 0.25)) ? "team-a" : "team-b"
            printf "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\n"
            printf "metadata:\n  name: %s\n  namespace: %s\n", name, ns
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

# wl_get KIND JSONPATH: kubectl get KIND in every namespace of WL_NS.
wl_get() {
    for ns in $WL_NS; do kubectl get "$1" -n "$ns" -o "jsonpath=$2" || return 1; done
}

wl_phases() {
    wl_get aijobs '{range .items[*]}{.metadata.name} {.status.phase} {.status.attempts}{"\n"}{end}' |
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
        have=$(wl_get aijobs '{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null | wc -l)
        [ "$have" -ge "$want" ] && return 0
        sleep 0.5
    done
    echo "$have of $want AIJobs exist"; tail -5 "$T/apply.out"; return 1
}

# wl_pods_ok FILE: Succeeded jobs own exactly `replicas` pods named
# <job>-<i>, each controlled by that AIJob (by uid); Failed jobs own none;
# no pod name twice, no pod of an unknown job.
wl_pods_ok() {
    wl_get aijobs '{range .items[*]}J {.metadata.name} {.metadata.uid} {.status.phase}{"\n"}{end}' >"$T/pj.txt" &&
    wl_get pods '{range .items[*]}P {.metadata.name} {.metadata.labels.aiq\.dev/job} {.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].uid} {.metadata.ownerReferences[0].controller}{"\n"}{end}' >>"$T/pj.txt" &&
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
# The pods still there with a start time count too: the kubelet writes
# the Event after the pod's Running status, and a cluster restart between
# the two loses the Event (the real control plane's kubelet stand-in
# stops with its API server; seen once, 2026-12-06: a Succeeded job with
# 0 of 1 pods started). Adding them can only add pods that ran, so a
# double run still shows.
wl_runs_ok() {
    wl_expect "$1" >"$T/exp.txt"
    { wl_get events '{range .items[?(@.reason=="Started")]}{.involvedObject.name} {.involvedObject.uid}{"\n"}{end}' &&
      wl_get pods '{range .items[?(@.status.startTime)]}{.metadata.name} {.metadata.uid}{"\n"}{end}'; } >"$T/started.raw" ||
        return 1
    sort -u "$T/started.raw" >"$T/started.txt"
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
        FROM jobs j WHERE j.ns IN ($(wl_ns_sql));" | awk -v dups="${2:-0}" 'FNR == NR { att[$1] = $3; next }
        { if (!($1 in att)) next; seen[$1] = 1
          if ($2 != att[$1]) { print $1 ": admit decisions for " $2 " attempts, status.attempts " att[$1]; bad++ }
          extra += $3 - $2
          if ($4 != att[$1]) { print $1 ": " $4 " finished attempts in the store, status.attempts " att[$1]; bad++ } }
        END { for (j in att) if (!(j in seen)) { print j ": not in the store"; bad++ }
              print extra + 0 " admissions decided again after a crash (allowed " dups ")"
              if (extra > dups) bad++
              if (bad) exit 1 }' "$T/ph.txt" -
}

# wl_ns_sql: WL_NS as an SQL list ('a', 'b').
wl_ns_sql() {
    echo "$WL_NS" | awk '{ for (i = 1; i <= NF; i++) printf "%s\047%s\047", (i > 1 ? ", " : ""), $i }'
}

# wl_usage_ok DB: usage buckets hold what the attempts counted, once: in
# all, and per user and group (a usage row carries the group the job
# was counted in; the attempts' group is their job's), so an attempt
# counted in the wrong group or for the wrong user is caught too.
wl_usage_ok() {
    sqlite3 "$1" "SELECT printf('usage %.3f attempts %.3f',
                         (SELECT coalesce(sum(gpu_seconds), 0) FROM usage),
                         (SELECT coalesce(sum(gpu_seconds), 0) FROM job_attempts));" |
        awk '{ print; d = $2 - $4; if (d < 0) d = -d; exit d > 0.01 }' || return 1
    sqlite3 -separator ' ' "$1" "
        SELECT 'U', user, '@' || group_name, printf('%.3f', sum(gpu_seconds)) FROM usage
         GROUP BY user, group_name;
        SELECT 'A', j.user, '@' || coalesce(j.group_name, ''), printf('%.3f', sum(a.gpu_seconds))
          FROM job_attempts a JOIN jobs j ON j.uid = a.job_uid GROUP BY j.user, j.group_name;" |
        awk '$1 == "U" { u[$2 " " $3] = $4; next } { a[$2 " " $3] = $4 }
            END { for (k in u) { d = u[k] - a[k]; if (d < 0) d = -d
                      printf "%s: usage %.3f, attempts %.3f GPU-s\n", k, u[k], a[k]
                      if (d > 0.01) bad++ }
                  for (k in a) if (!(k in u) && a[k] > 0.01) { print k ": attempts " a[k] " GPU-s, no usage"; bad++ }
                  if (bad) exit 1 }'
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
        --metrics-addr 127.0.0.1:0 --cycle-ms 300 --log-level info --backoff 1s $WL_OP_ARGS "$@" \
        >>"$T/op.log" 2>&1 &
    OP_PID=$!
    for _ in $(seq 1 200); do
        [ "$(cat "$T/op.log" 2>/dev/null | grep -c "event=ready")" -gt "$before" ] && return 0
        wl_op_alive || return 0
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
        FROM job_attempts a JOIN jobs j ON j.uid = a.job_uid WHERE j.ns IN ($(wl_ns_sql));" |
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

# --- Groups, UserQuotas and exact quota (the grouped workload) -------------
# Two Groups whose quotas (16 and 12 GPUs, 28 in all) are smaller than the
# 32 GPUs of wl_nodes, so quota, not capacity, holds jobs back; every
# user but u3 in vision has a UserQuota (u3 there is bounded by the group
# alone, and counted in two groups). The largest grouped job (6 GPUs)
# fits every user quota, so none is Rejected.
# wl_quota_table: "G group quota namespace" and "U group user quota".
wl_quota_table() {
    printf '%s\n' "G vision 16 team-a" "G nlp 12 team-b" \
        "U vision u1 6" "U vision u2 6" "U nlp u3 6" "U nlp u4 6"
}

# wl_groups FILE: the Namespaces, Groups and UserQuotas of wl_quota_table.
wl_groups() {
    wl_quota_table | awk '
        $1 == "G" { printf "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", $4
                    printf "apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: %s}\n", $2
                    printf "spec:\n  level: 1\n  namespaces: [%s]\n  quota: {gpus: %d}\n", $4, $3
                    printf "  members: [{user: u1, level: 1}, {user: u2, level: 1}, {user: u3, level: 1}, {user: u4, level: 1}]\n---\n"
                    ns[$2] = $4 }
        $1 == "U" { printf "apiVersion: aiq.dev/v1alpha1\nkind: UserQuota\n"
                    printf "metadata: {name: %s, namespace: %s}\nspec:\n  user: %s\n  quota: {gpus: %d}\n---\n", $3, ns[$2], $3, $4 }' >"$1"
}

# wl_groups_up FILE: applies wl_groups and waits until every UserQuota is
# accepted (so a job's first cycle already sees its user's quota).
wl_groups_up() {
    wl_groups "$T/groups.yaml"
    kubectl apply -f "$T/groups.yaml" >"$T/groups.out" 2>&1 || { cat "$T/groups.out"; return 1; }
    want=$(wl_quota_table | grep -c '^U')
    for _ in $(seq 1 60); do
        n=$(kubectl get userquotas -A -o 'jsonpath={range .items[*]}{.status.accepted}{"\n"}{end}' | grep -c true)
        [ "$n" = "$want" ] && return 0
        sleep 0.5
    done
    echo "$n of $want UserQuotas accepted"; return 1
}

# wl_qsample [TAG]: one sample of quota use (TAG names its temporary
# file, for samplers that run at once), one line per key ("group -" for
# the group's total, "group user" per UserQuota):
#   group user M S P H Q
# M is the operator's aiq_quota_used{resource="gpus"} (its live view),
# S the Group's or UserQuota's .status.usage.gpus, P the GPUs of the
# released (no aiq.dev/admission gate), unfinished, not terminating pods,
# H the GPUs of the bound unfinished pods, terminating ones included (what
# the nodes really hold), Q the quota; "-" for a value not there (yet).
# Quota usage is defined by the jobs the operator counts as Admitted or
# Running (replicas x GPUs, reconcile_userquota.c): once it has caught up
# that is exactly P. A terminating pod belongs to a job torn down, which
# counts no more; it still holds its GPUs, hence H for the bound.
# The user of a pod is its job's spec.user, from the workload file
# ($T/jobmap.txt: "J name namespace user"). A pod holds the larger of the
# sum of its containers' and its largest init container's nvidia.com/gpu
# limits (what Kubernetes counts), as quota_race.sh reads them.
wl_qsample() {
    set -- "${1:-fg}"
    port=$(grep -o 'event=metrics_listening.*port=[0-9]*' "$T/op.log" 2>/dev/null | tail -1 | sed 's/.*port=//')
    {
        wl_quota_table
        cat "$T/jobmap.txt"
        [ -n "$port" ] && curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" |
            sed -n 's/^aiq_quota_used{group="\([^"]*\)",user="\([^"]*\)",resource="gpus"} \([0-9.e+]*\)$/M \1 \2 \3/p' |
            awk '{ if (NF == 3) print $1, $2, "-", $3; else print }'
        api_curl /apis/aiq.dev/v1alpha1/groups | jq -r '.items[] | "S \(.metadata.name) - \(.status.usage.gpus // "-")"'
        api_curl /apis/aiq.dev/v1alpha1/userquotas |
            jq -r '.items[] | "S \(.status.group // "?") \(.spec.user) \(.status.usage.gpus // "-")"'
        # A failed pod list reads as no list (P and H "-"), never as 0.
        api_curl '/api/v1/pods?labelSelector=aiq.dev/job' >"$T/qpods$1.json" 2>/dev/null &&
            jq -e '.items' "$T/qpods$1.json" >/dev/null 2>&1 && echo "L" &&
            jq -r <"$T/qpods$1.json" '
            def gpus(cs): [cs[]?.resources.limits["nvidia.com/gpu"] // "0" | tonumber];
            .items[] | (.status.phase == "Succeeded" or .status.phase == "Failed") as $done
            | "P \(.metadata.namespace) \(.metadata.labels["aiq.dev/job"]) \([(gpus(.spec.containers) | add // 0), (gpus(.spec.initContainers) | max // 0)] | max)"
              + " \(if ((.spec.schedulingGates // []) | map(.name) | index("aiq.dev/admission")) == null and ($done | not) and .metadata.deletionTimestamp == null then 1 else 0 end)"
              + " \(if .spec.nodeName != null and ($done | not) then 1 else 0 end)"'
    } | awk '
        $1 == "G" { q[$2 " -"] = $3; gof[$4] = $2; keys[$2 " -"] = 1; next }
        $1 == "U" { q[$2 " " $3] = $4; keys[$2 " " $3] = 1; next }
        $1 == "J" { user[$2] = $4; next }
        $1 == "M" { m[$2 " " $3] = $4; next }
        $1 == "S" { s[$2 " " $3] = $4; next }
        $1 == "P" { g = gof[$2]; if (g == "") next
                    u = g " " user[$3]
                    if ($5) { p[g " -"] += $4; p[u] += $4 }
                    if ($6) { h[g " -"] += $4; h[u] += $4 } }
        $1 == "L" { listed = 1; next }
        END { for (k in keys) print k, (k in m) ? m[k] : "-", (k in s) ? s[k] : "-",
                                    listed ? p[k] + 0 : "-", listed ? h[k] + 0 : "-", q[k] }' |
        sort
}

# wl_jobmap FILE: "J name namespace user" per job of the workload.
wl_jobmap() {
    awk '/^  name: /{ n = $2 } /^  namespace: /{ ns = $2 } /^  user: /{ print "J", n, ns, $2 }' "$1" >"$T/jobmap.txt"
}

# wl_qjudge FILE: judges samples ("n group user M S P H Q" lines, n the
# sample's number) key by key. The API view and the operator's move
# while they are read, so a sample where they differ proves nothing by
# itself (a pod ended that the operator sees a cycle later). A key passes
# at the first sample where the three, read from three independent
# sources (the operator's /metrics, the API's status, the pod list),
# are equal; it fails when they differ and stayed the same in 5 samples
# in a row (2 s and more, well past a cycle plus watch latency, so not a
# lag). A key that changes all the time stays undecided. Bounds need no
# stillness: no sample may show H, P, M or S above the quota.
# Exits 0 when every key passed, 1 on a failure, 2 while undecided.
wl_qjudge() {
    awk '{ k = $2 " " $3; v = $4 " " $5 " " $6
           for (i = 4; i <= 7; i++) if ($i != "-" && $i + 0 > $8 + 0) {
               if (!over[k]++) { printf "%s %s over its quota %s at sample %d: M %s S %s P %s H %s\n", $2, $3, $8, $1, $4, $5, $6, $7; bad++ } }
           run[k] = (v == last[k]) ? run[k] + 1 : 1; last[k] = v; keys[k] = 1
           if ($4 != "-" && $5 != "-" && $6 != "-") {
               if ($4 == $5 && $5 == $6 && !(k in okat)) okat[k] = $1 " (" $4 " GPUs)"
               if (!($4 == $5 && $5 == $6) && run[k] >= 5 && !(k in wrong)) {
                   wrong[k] = 1; printf "%s %s still for %d samples: metrics %s, status %s, pods %s\n", $2, $3, run[k], $4, $5, $6; bad++ } } }
         END { und = 0
               for (k in keys) if (!(k in okat) && !(k in wrong)) { und++; print k ": undecided, last M S P = " last[k] }
               for (k in keys) if (k in okat) print k ": equal at sample " okat[k]
               exit bad ? 1 : (und ? 2 : 0) }' "$1"
}

# wl_op_alive: the operator (OP_PID) still runs. kill -0 is not enough:
# an operator that ended at its crash point stays a zombie until the
# suite waits for it, and kill -0 succeeds on a zombie.
wl_op_alive() {
    [ -n "${OP_PID:-}" ] || return 1
    st=$(ps -o stat= -p "$OP_PID" 2>/dev/null) || return 1
    case "$st" in Z*|"") return 1 ;; esac
    return 0
}

# wl_quota_exact WHAT: after a (re)start: waits until the operator has
# finished a cycle (aiq_cycle_seconds_count on its /metrics), then
# samples until every key is judged (wl_qjudge), at most QX_WAIT_S (40 s).
# A key is judged equal the first time metrics, status and pods agree;
# while jobs keep starting and ending the three move, and under make
# test's load a sample takes over a second, so 20 s (until 2026-11-29)
# once left a busy group undecided on the real control plane (metrics
# and pods 9, the Group status 12 and changing). Returns 3 when the
# operator (OP_PID) ended before every key was judged.
wl_quota_exact() {
    port=$(grep -o 'event=metrics_listening.*port=[0-9]*' "$T/op.log" 2>/dev/null | tail -1 | sed 's/.*port=//')
    for _ in $(seq 1 100); do
        [ -n "${OP_PID:-}" ] && ! wl_op_alive && { echo "$1: the operator ended before a cycle"; return 3; }
        c=$(curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" | sed -n 's/^aiq_cycle_seconds_count \([0-9]*\).*/\1/p')
        [ "${c:-0}" -ge 1 ] && break
        sleep 0.1
    done
    [ "${c:-0}" -ge 1 ] || { echo "$1: the operator finished no cycle in 10 s"; return 1; }
    : >"$T/qs.txt"
    n=0; end=$(( $(date +%s) + ${QX_WAIT_S:-40} ))
    while :; do
        n=$((n + 1))
        wl_qsample | sed "s/^/$n /" >>"$T/qs.txt"
        wl_qjudge "$T/qs.txt" >"$T/qj.txt"; rc=$?
        # An armed operator may end itself at its crash point meanwhile.
        [ $rc = 2 ] && [ -n "${OP_PID:-}" ] && ! wl_op_alive && { rc=3; break; }
        [ $rc = 2 ] && [ "$(date +%s)" -lt $end ] && { sleep 0.3; continue; }
        break
    done
    cat "$T/qs.txt" >>"$T/qs_all.txt"
    echo "$1: $n samples"; cat "$T/qj.txt"
    # 3 (the operator ended mid-check) is the caller's to handle, not a miss.
    case $rc in 0) return 0 ;; 3) return 3 ;; *) return 1 ;; esac
}
