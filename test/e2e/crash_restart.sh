#!/bin/sh
# crash_restart.sh -- the operator killed at K moments of an N-job run and
# restarted on the same --db each time; the local cluster restarted once
# under it. Short: 60 jobs, 6 kills. AIQ_SOAK=1: 1,000 jobs, 50 kills.
# solo: real
# (make test runs the real control plane's run alone, after both streams:
# beside the local stream its crash points and quota samples missed their
# windows in 1 of 3 runs; test/run-tests.sh.)
#
# Kills cycle through the named crash points (operator/crashpoint.h: a pod
# created before the status write, an admission recorded before the status
# write, a gang half released, and the first two again for a job requeued
# after a failed attempt) and plain SIGKILLs at random moments. The
# same workload first runs once without kills; afterwards both runs must
# show every job ended as its exit codes say, each Succeeded job owning
# exactly its replicas' pods, started pods = replicas x attempts (no double
# run), one admit decision and one counted attempt per attempt (journal),
# usage equal to the attempts' sum (in all and per user and group), and
# per-user GPU-seconds within the tolerance explained at the comparison
# below.
#
# The jobs run in the namespaces of two Groups whose quotas (28 GPUs in
# all) are below the cluster's 32, with UserQuotas for their users
# (wl_quota_table), and the operator runs without --ungrouped: quota
# holds jobs back. After every kill the operator is started unarmed and,
# once it has finished a cycle, its quota use (aiq_quota_used and the
# Group/UserQuota status) must equal the GPUs the released pods hold, key
# by key (wl_quota_exact); then, if the next kill is a crash point, it is
# stopped (SIGTERM) and started armed. A background sampler checks that no
# group or user ever holds more than its quota and that quota was reached.
WL_NS="team-a team-b"; WL_OP_ARGS=""
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/_workload.sh"

N=60; K=6; SEED=${AIQ_SEED:-7}; LIMIT=240
if [ "${AIQ_SOAK:-}" = 1 ]; then N=1000; K=50; LIMIT=7200; fi
# AIQ_JOBS and AIQ_KILLS override the size (e.g. a soak that fits an hour).
N=${AIQ_JOBS:-$N}; K=${AIQ_KILLS:-$K}
SCALE=10
# How long an armed operator may take to reach its point before the kill
# falls back to SIGKILL (and the point counts as not reached). A point
# such as admit_recorded:4 is the fourth cycle with an admission after
# the start, and admissions come only as running jobs end: on the real
# control plane under make test's load, a restart's relist plus four such
# cycles took longer than 15 s (twice in a row, 2026-11-28).
POINT_WAIT_S=45
echo "crash_restart: $N jobs, $K kills, seed $SEED, time scale $SCALE"
wl_nodes "$T/nodes.yaml"
wl_gen "$N" "$SEED" groups >"$T/wl.yaml"
wl_jobmap "$T/wl.yaml"

# qwatch_start / qwatch_stop LABEL: samples quota use every 0.5 s in the
# background (wl_qsample) and judges all samples at the end: never over a
# quota, no key still and unequal (wl_qjudge), and some key at its quota
# (the quotas really held jobs back).
qwatch_start() {
    rm -f "$T/qstop" "$T/qw.txt"
    # (Also ends when $T is gone: the suite exited without qwatch_stop.)
    ( n=0; while [ ! -f "$T/qstop" ] && [ -d "$T" ]; do
          n=$((n + 1)); wl_qsample bg 2>/dev/null | sed "s/^/$n /" >>"$T/qw.txt"; sleep 0.5
      done ) &
    QW_PID=$!
}
qwatch_ok() {
    wl_qjudge "$T/qw.txt" >"$T/qwj.txt"
    [ $? = 1 ] && { grep -v 'undecided\|equal at' "$T/qwj.txt"; return 1; }
    echo "$(awk '{ print $1 }' "$T/qw.txt" | sort -u | wc -l) samples"
    awk '$7 != "-" && $7 + 0 == $8 + 0 { print "at quota: " $2 " " $3 " holds " $7 " of " $8 " GPUs (sample " $1 ")"; hit = 1; exit }
         END { exit !hit }' "$T/qw.txt"
}
qwatch_stop() {
    touch "$T/qstop"; wait "$QW_PID"
    check "$1: no group or user over its quota at any sample; quota reached" qwatch_ok
    cat "$T/check.out"
}

# --- the clean run --------------------------------------------------------
e2e_start --nodes "$T/nodes.yaml" --time-scale $SCALE
wl_op_up || bad "operator ready"
check "clean run: Groups and UserQuotas accepted" wl_groups_up
t0=$(date +%s)
check "clean run: workload applied" wl_apply "$T/wl.yaml"
qwatch_start
sleep 3
check "clean run: quota use exact mid-run" wl_quota_exact "clean run"
wait_for $LIMIT "clean run: every job finished" wl_all_done "$N"
echo "clean run took $(( $(date +%s) - t0 )) s"
qwatch_stop "clean run"
check "clean run: quota use exact at the end (all 0)" wl_quota_exact "clean end"
wl_check_end "$T/wl.yaml" "$T/op.db"
wl_user_gpus "$T/op.db" >"$T/clean.gpus"
wl_stop_all clean

# --- the run with kills -------------------------------------------------------
# The kill plan, reproducible from the seed: point or "kill" and a delay.
awk -v k=$K -v seed=$SEED 'BEGIN { srand(seed + 1)
    split("pod_created retry_pod_created retry_admit_recorded admit_recorded release_mid kill kill", what, " ")
    for (i = 0; i < k; i++) {
        w = what[i % 7 + 1]; pass = 1 + int(rand() * 4); delay = 0.5 + rand() * 3.5
        # A requeued job passes its points a few times in a whole run:
        # armed at the first pass, so the point is not missed.
        if (w ~ /^retry_/) pass = 1
        # A gang half released comes only with multi-replica jobs, and the
        # plan arms it fifth, late in the run: its 4th pass after that
        # restart was not reached in 45 s in 2 of the last 3 make test
        # runs (once with the suite running alone), the workload nearly
        # done. So at most its 2nd.
        if (w == "release_mid" && pass > 2) pass = 2
        printf "%s %d %.2f\n", w, pass, delay } }' >"$T/plan.txt"
e2e_start --nodes "$T/nodes.yaml" --time-scale $SCALE
# The first operator is already armed with the plan's first point, so a
# pod_created crash lands while the workload's pods are being created.
read -r what pass delay <"$T/plan.txt"
[ "$what" != kill ] && export AIQ_CRASH_AT="$what:$pass"
wl_op_up || bad "operator ready"
unset AIQ_CRASH_AT
check "crash run: Groups and UserQuotas accepted" wl_groups_up
t0=$(date +%s)
check "crash run: workload applied" wl_apply "$T/wl.yaml"
qwatch_start
kills=0; self=0; sig=0; i=0; qok=0
# op_up_for LINE: starts the operator armed for plan line LINE when that
# line names a crash point (so every kill is one the plan counts).
op_up_for() {
    nw=$(sed -n "${1}p" "$T/plan.txt" | awk '{ print $1 ":" $2 }')
    case $nw in ""|kill:*) wl_op_up ;; *) export AIQ_CRASH_AT="$nw"; wl_op_up; unset AIQ_CRASH_AT ;; esac
}
# after_kill I [up]: the operator down since $td after kill I. Starts it
# (unless "up": already running, unarmed) armed for the next kill as the
# plan says, and checks quota exactly once it has finished a cycle. An
# armed operator may reach its crash point in the middle of the check:
# then that crash is the next kill (the loop counts it) and the check
# is owed; it is done after that kill's restart, which comes first
# (owed > 0: started unarmed, checked, stopped with SIGTERM, started
# armed), so every kill is followed by a check before the next one but
# the plan is not slowed down when the check is quick. Every outage goes
# to outages.txt (wl_attempts_ok).
owed=0; merged=0
after_kill() {
    armed=0
    if [ -z "${2:-}" ]; then
        if [ $owed = 0 ]; then
            op_up_for $(($1 + 1))
            [ -n "$(sed -n "$(($1 + 1))p" "$T/plan.txt" | awk '$1 != "kill"')" ] && armed=1
        else wl_op_up; fi
        echo "$td $(date +%s.%N)" >>"$T/outages.txt"
    fi
    wl_quota_exact "after kill $1" >"$T/qx.out" 2>&1; rc=$?
    case $rc in
        0) qok=$((qok + 1)); owed=0 ;;
        3) owed=1; merged=$((merged + 1)); echo "after kill $1: crash point reached during the quota check; checked after the next kill" ;;
        *) bad "after kill $1: quota use exact"; sed 's/^/     /' "$T/qx.out" | tail -12; owed=0 ;;
    esac
    [ $rc = 3 ] && return
    nw=$(sed -n "$(($1 + 1))p" "$T/plan.txt" | awk '{ print $1 }')
    if [ $armed = 0 ] && [ -n "$nw" ] && [ "$nw" != kill ]; then
        td=$(date +%s.%N)
        kill "$OP_PID"; wait "$OP_PID" 2>/dev/null; OP_PID=""
        op_up_for $(($1 + 1))
        echo "$td $(date +%s.%N)" >>"$T/outages.txt"
    fi
}
while read -r what pass delay; do
    i=$((i + 1))
    if [ "$what" != kill ]; then
        # Running armed since its start: it ends itself at the pass-th hit.
        w=0
        while wl_op_alive && [ $w -lt $((POINT_WAIT_S * 10)) ]; do sleep 0.1; w=$((w + 1)); done
        if wl_op_alive; then
            op_kill9; sig=$((sig + 1)); echo "kill $i: $what:$pass not reached in $POINT_WAIT_S s, SIGKILL"
            td=$(date +%s.%N)
        else
            td=$(date +%s.%N)
            wait "$OP_PID"; rc=$?; OP_PID=""
            [ $rc = 137 ] && { self=$((self + 1)); echo "$what" >>"$T/reached.txt"; }
            echo "kill $i: crash point $what:$pass, exit $rc"
        fi
    else
        sleep "$delay"
        op_kill9; sig=$((sig + 1)); echo "kill $i: SIGKILL after ${delay}s"
        td=$(date +%s.%N)
    fi
    kills=$((kills + 1))
    progress "kill $kills of $K done ($self at crash points, $sig by SIGKILL)" # no kubectl here: it would lengthen the outage
    # Halfway, restart the local cluster under a live (unarmed) operator.
    if [ $i = $(( (K + 1) / 2 )) ]; then
        wl_op_up
        echo "$td $(date +%s.%N)" >>"$T/outages.txt"
        sleep 1
        td=$(date +%s.%N)
        if wl_api_restart --nodes "$T/nodes.yaml" --time-scale $SCALE; then
            ok "local cluster restarted on the same --db and port"
        else bad "local cluster restart"; fi
        sleep 2
        echo "$td $(date +%s.%N)" >>"$T/outages.txt"
        # The quota check after this kill runs once the cluster is back
        # (the operator's view of it resumed or relisted).
        after_kill $i up
        continue
    fi
    after_kill $i
done <"$T/plan.txt"
[ -n "$OP_PID" ] || wl_op_up
# A check owed by the last kill is done now, by the operator just started.
[ $owed = 1 ] && { wl_quota_exact "after the last kill" >"$T/qx.out" 2>&1 && qok=$((qok + 1)) || sed 's/^/     /' "$T/qx.out" | tail -12; }
check "crash run: quota use exact after the kills ($qok checks, $kills kills; one owed during a crash point is done after the next)" \
    test $((qok + merged)) -eq "$kills"
wait_for $LIMIT "crash run: every job finished after $kills kills" wl_all_done "$N"
echo "crash run took $(( $(date +%s) - t0 )) s"
qwatch_stop "crash run"
check "crash run: quota use exact at the end (all 0)" wl_quota_exact "crash end"
check "the kills happened ($self at crash points, $sig by SIGKILL)" \
    test $((self + sig)) -eq "$K" -a "$self" -ge 1
# Every point the plan names must have been reached at least once (one
# not reached in POINT_WAIT_S falls back to a SIGKILL, which would hide it).
echo "crash points reached: $(sort "$T/reached.txt" 2>/dev/null | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')"
points_reached() {
    for p in $(awk '$1 != "kill" { print $1 }' "$T/plan.txt" | sort -u); do
        grep -qx "$p" "$T/reached.txt" 2>/dev/null || { echo "$p never reached"; return 1; }
    done
}
check "every crash point in the plan was reached" points_reached
echo "operator starts seen (ready lines): $(grep -c 'event=ready' "$T/op.log")"
# A kill at admit_recorded voids the admissions of that cycle (recorded,
# never published); they are decided again for the same attempt. One
# cycle admits at most 32 jobs (32 GPUs), hence the bound.
adm=$(grep -cE "crash point armed: (retry_)?admit_recorded" "$T/op.log")
wl_check_end "$T/wl.yaml" "$T/op.db" $((adm * 32))
wl_user_gpus "$T/op.db" >"$T/crash.gpus"
# Usage equal to a clean run's: GPU-seconds are wall time from the
# operator seeing a gang all Running to seeing it done, so per-user totals
# cannot match a clean run to the second (measured: 2-9% over on the short
# run, 11-16% over with 50 kills in 160 s, all from attempts that ended
# during an outage). The test is per attempt: billed runtime = the pods'
# real runtime within 4 s of observation delay (measured: up to 2.8 s on
# the loaded machine), plus the outages it overlapped and 2 s of catch-up
# after each. The clean run passes the same check with no outages.
check "clean run: each attempt billed for its real runtime (within 4 s)" \
    wl_attempts_ok "$T/wl.yaml" "$T/clean/op.db" "$T/none.txt" 4
cat "$T/check.out"
check "crash run: each attempt billed for its real runtime (4 s + outages overlapped + 2 s each)" \
    wl_attempts_ok "$T/wl.yaml" "$T/op.db" "$T/outages.txt" 4 2
cat "$T/check.out"
echo "per-user GPU-seconds, clean vs crash run:"
wl_cmp_gpus "$T/clean.gpus" "$T/crash.gpus" 1
echo "kills survived: $kills ($self crash points, $sig SIGKILL), cluster restarts: 1, jobs: $N"
e2e_done
