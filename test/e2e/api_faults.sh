#!/bin/sh
# api_faults.sh -- the crash test's workload run twice on the local
# cluster: once clean, once with fault injection on (5% of requests
# answered 500, 1% 409, every watch cut every 3 s, a 50-event history so
# a resumed watch often gets 410 Gone and must relist, 5 ms added to each
# request). Both runs must reach the same end state: the same phases and
# attempts for every job, no duplicate pods, no double run, a consistent
# journal, and per-user GPU-seconds within 20% of each other (see below).
# Short: 60 jobs. AIQ_SOAK=1: 300 jobs.
# servers: local (the fault injection it needs exists only in the local server)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/_workload.sh"

N=60; SEED=${AIQ_SEED:-11}; LIMIT=240
if [ "${AIQ_SOAK:-}" = 1 ]; then N=300; LIMIT=1500; fi
SCALE=10
FAULTS="--fault-500 0.05 --fault-409 0.01 --fault-watch-cut 3 --fault-latency-ms 5 --history 50 --seed $SEED"
echo "api_faults: $N jobs, seed $SEED, time scale $SCALE, faults: $FAULTS"
wl_nodes "$T/nodes.yaml"
wl_gen "$N" "$SEED" >"$T/wl.yaml"

run() { # label [extra apiserver flags]
    label=$1; shift
    e2e_start --nodes "$T/nodes.yaml" --time-scale $SCALE "$@"
    wl_op_up || bad "$label: operator ready"
    t0=$(date +%s)
    check "$label: workload applied" wl_apply "$T/wl.yaml"
    wait_for $LIMIT "$label: every job finished" wl_all_done "$N"
    echo "$label run took $(( $(date +%s) - t0 )) s"
    wl_check_end "$T/wl.yaml" "$T/op.db"
    wl_phases >"$T/$label.phases"
    wl_user_gpus "$T/op.db" >"$T/$label.gpus"
}

run clean
wl_stop_all clean
# kubectl gets the faults too: the test's own reads retry a failed call
# (a 500 or 409 prints nothing on stdout, so a retry cannot double lines).
kubectl() {
    for _ in 1 2 3 4 5 6; do command kubectl "$@" && return 0; sleep 0.2; done
    return 1
}
# shellcheck disable=SC2086
run faults $FAULTS
check "same phases and attempts as the clean run" diff "$T/clean.phases" "$T/faults.phases"
# GPU-seconds are measured in wall time by the operator (all pods Running
# seen -> all done seen); faults delay what it sees by a retry or a relist
# (backoff up to ~1 s) at each edge of an attempt. On 2-5 s attempts that
# is up to ~20-40% for one attempt, but it averages out over a user's ~15
# jobs; a job counted twice would add 100% of its share. 20% per user.
check "per-user GPU-seconds match the clean run within 20%" \
    wl_cmp_gpus "$T/clean.gpus" "$T/faults.gpus" 0.20
cat "$T/check.out"
# What the operator met: calls answered 500/409 (logged with http=...),
# first lists at start-up, relists after a 410 Gone.
echo "faults seen by the operator: $(grep -c 'http=500' "$T/op.log") x 500," \
     "$(grep -c 'http=409' "$T/op.log") x 409, $(grep -c 'event=listed' "$T/op.log") first lists," \
     "$(grep -c 'event=relisted' "$T/op.log") relists"
check "the operator relisted after 410s (the history holds 50 events)" \
    test "$(grep -c 'event=relisted' "$T/op.log")" -ge 1
e2e_done
