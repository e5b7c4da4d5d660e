#!/bin/sh
# Runs aiq's tests and ends with one line "N passed, N failed".
#   test/run-tests.sh BUILD_DIR [unit|e2e|valgrind|all]
# unit: every BUILD_DIR/test/test_* binary (one test file per module).
# e2e: every test/e2e/*.sh script; each prints its own "N passed, N failed".
# valgrind: the unit binaries under valgrind (BUILD_DIR should be build/dbg).
# AIQ_E2E_BUILD (a directory under the root) runs the e2e scripts against
# other binaries than BUILD_DIR's, e.g. build/rel for a faster soak.
# Each e2e script runs once per API server it names in a line
#   # servers: local real        (the default when the line is missing)
# local is the local cluster (aiq-apiserver), real the real Kubernetes
# control plane (aiq-realcluster); "none" runs it once without a server.
# The line says why when a script runs on one server only.
# AIQ_SERVERS="local" (or "real") runs only the scripts' runs on those.
# AIQ_SUITES="crash_restart plugin" runs only those e2e scripts.
# The runs on the local server and those on the real control plane go as
# two streams side by side; AIQ_E2E_SERIAL=1 runs them one after the other.
# AIQ_PROGRESS=SECS (make soak sets 30) prints, every SECS while an e2e
# suite runs, a line "... SUITE: running 5m30s[; what it does now]" (the
# suite's own words, from lib.sh's progress); unset, the output is only
# the result lines below.
set -u
BUILD=${1:-build/san}
WHAT=${2:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export AIQ_SRC="$ROOT" AIQ_BUILD="$ROOT/$BUILD" AIQ_REL="$ROOT/build/rel"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
P=0; F=0
START=$(date +%s)
LOG=$(mktemp -d /tmp/aiq-test.XXXXXX)

# run_suite LABEL CMD...: runs CMD into $LOG/LABEL.out and returns its exit
# status; with AIQ_PROGRESS, prints progress lines while it runs.
run_suite() {
    label=$1; shift
    every=${AIQ_PROGRESS:-0}
    case $every in ''|*[!0-9]*)
        echo "AIQ_PROGRESS must be a whole number of seconds, got \"$every\"" >&2; exit 2 ;;
    esac
    if [ "$every" = 0 ]; then
        "$@" >"$LOG/$label.out" 2>&1
        return
    fi
    AIQ_PROGRESS_FILE="$LOG/$label.progress" "$@" >"$LOG/$label.out" 2>&1 &
    pid=$!
    s0=$(date +%s); next=$((s0 + every))
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        now=$(date +%s)
        [ "$now" -ge "$next" ] && kill -0 "$pid" 2>/dev/null || continue
        next=$((now + every)); el=$((now - s0))
        what=$(tail -1 "$LOG/$label.progress" 2>/dev/null)
        echo "... $label: running $((el / 60))m$((el % 60))s${what:+; $what}"
    done
    wait "$pid"
}

tally() { # $1 = name, $2 = output file, $3 = exit code, $4 = seconds taken
    line=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$2" | tail -1)
    if [ -z "$line" ]; then
        echo "FAIL $1: no result line (exit $3)"; tail -30 "$2"; F=$((F + 1)); return
    fi
    p=$(echo "$line" | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
    f=$(echo "$line" | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
    if [ "$3" != 0 ] && [ "$f" = 0 ]; then f=1; echo "FAIL $1: exit $3 after all checks passed"; tail -30 "$2"; fi
    P=$((P + p)); F=$((F + f))
    if [ "$f" != 0 ]; then echo "== $1: $line (${4:-?}s)"; grep -E 'FAIL|ERROR|runtime error|Sanitizer' "$2" | head -40
    else echo "ok  $1: $line (${4:-?}s)"; fi
}

if [ "$WHAT" = unit ] || [ "$WHAT" = all ] || [ "$WHAT" = valgrind ]; then
    for t in "$ROOT/$BUILD"/test/test_*; do
        [ -x "$t" ] || continue
        n=$(basename "$t")
        t0=$(date +%s)
        if [ "$WHAT" = valgrind ]; then
            (cd "$ROOT" && valgrind -q --error-exitcode=99 --leak-check=full \
                --errors-for-leak-kinds=definite,indirect "$t") >"$LOG/$n.out" 2>&1
        else
            (cd "$ROOT" && "$t") >"$LOG/$n.out" 2>&1
        fi
        rc=$?
        tally "$n" "$LOG/$n.out" $rc $(( $(date +%s) - t0 ))
    done
fi
# With AIQ_VALGRIND_BUILD (a -O0 build dir, e.g. build/dbg), "all" also
# runs that build's unit tests under valgrind (make test does). They run
# in the background beside the e2e suites that need no API server (the
# simulator, the fuzz smoke run, the docs and differential checks), which
# time nothing against a deadline; the suites that start a server and wait
# on the operator run after both, on a quiet machine.
VG_PID=
if [ "$WHAT" = all ] && [ -n "${AIQ_VALGRIND_BUILD:-}" ]; then
    (
        P=0; F=0
        for t in "$ROOT/$AIQ_VALGRIND_BUILD"/test/test_*; do
            [ -x "$t" ] || continue
            n=valgrind:$(basename "$t")
            t0=$(date +%s)
            (cd "$ROOT" && valgrind -q --error-exitcode=99 --leak-check=full \
                --errors-for-leak-kinds=definite,indirect "$t") >"$LOG/$n.out" 2>&1
            rc=$?
            tally "$n" "$LOG/$n.out" $rc $(( $(date +%s) - t0 ))
        done
        echo "$P $F" >"$LOG/valgrind.counts"
    ) >"$LOG/valgrind.lines" 2>&1 &
    VG_PID=$!
fi
# join_counts FILE WHAT: adds the "passed failed" counts a background pass
# left in FILE (a pass that left none is one failure, named WHAT).
join_counts() {
    if read -r jp jf <"$1" 2>/dev/null; then
        P=$((P + jp)); F=$((F + jf))
    else
        echo "FAIL $2: the background pass left no counts"; F=$((F + 1))
    fi
}
# valgrind_join: waits for the background valgrind pass, prints its result
# lines and adds its counts.
valgrind_join() {
    [ -n "$VG_PID" ] || return 0
    wait "$VG_PID"
    VG_PID=
    cat "$LOG/valgrind.lines"
    join_counts "$LOG/valgrind.counts" valgrind
}
# e2e_pass none|local|real|servers: the e2e runs of that kind (no server,
# on that server, on every server), in name order.
e2e_pass() {
    for s in "$ROOT"/test/e2e/*.sh; do
        [ -f "$s" ] || continue
        n=$(basename "$s" .sh)
        # lib.sh and _*.sh are sourced helpers, not tests.
        case "$n" in lib|_*) continue ;; esac
        if [ -n "${AIQ_SUITES:-}" ]; then
            case " $AIQ_SUITES " in *" $n "*) ;; *) continue ;; esac
        fi
        servers=$(sed -n 's/^# servers: *\([a-z ]*\).*/\1/p' "$s" | head -1)
        solo=$(sed -n 's/^# solo: *\([a-z ]*\).*/\1/p' "$s" | head -1)
        for srv in ${servers:-local real}; do
            # E2E_PHASE stream: the runs a "# solo:" line names wait for
            # the solo pass; solo: only those (see below).
            case "${E2E_PHASE:-all} $solo " in
            stream*" $srv "*) continue ;;
            solo*" $srv "*) ;;
            solo*) continue ;;
            esac
            case $1 in
            servers) [ "$srv" != none ] || continue ;;
            *) [ "$srv" = "$1" ] || continue ;;
            esac
            if [ "$srv" != none ] && [ -n "${AIQ_SERVERS:-}" ]; then
                case " $AIQ_SERVERS " in *" $srv "*) ;; *) continue ;; esac
            fi
            label=$n; [ "$srv" != none ] && label="$n[$srv]"
            t0=$(date +%s)
            run_suite "$label" env -C "$ROOT" AIQ_API="$srv" \
                AIQ_BUILD="$ROOT/${AIQ_E2E_BUILD:-$BUILD}" sh "$s"
            rc=$?
            tally "$label" "$LOG/$label.out" $rc $(( $(date +%s) - t0 ))
        done
    done
}
# The suites that start a server run as two streams side by side: every
# suite's run on the real control plane in the background, every run on the
# local server in the foreground. Each suite starts its own server on a
# free port in its own temporary directory, so the streams share nothing
# but the cores; most of a suite's time is spent waiting on its operator's
# cycles and its jobs' run times, not computing. AIQ_E2E_SERIAL=1 runs them
# one after the other instead (the streams' result lines then do not mix).
if [ "$WHAT" = e2e ] || [ "$WHAT" = all ]; then
    e2e_pass none
    valgrind_join
    if [ "${AIQ_E2E_SERIAL:-0}" = 1 ]; then
        e2e_pass servers
    else
        (
            P=0; F=0
            E2E_PHASE=stream e2e_pass real
            echo "$P $F" >"$LOG/real.counts"
        ) &
        REAL_PID=$!
        E2E_PHASE=stream e2e_pass local
        wait "$REAL_PID"
        join_counts "$LOG/real.counts" "e2e[real] (the real control plane's stream)"
        # Then, alone on the machine, the runs a suite's "# solo:" line
        # names: suites whose checks hold timing windows that two streams
        # on two cores stretch past (crash_restart on the real control
        # plane: a crash point reached within 45 s, quota views that agree
        # within 40 s; it failed there in 1 of 3 make test runs, and passed
        # alone).
        E2E_PHASE=solo e2e_pass servers
    fi
fi
valgrind_join
echo "logs: $LOG (took $(( $(date +%s) - START ))s)"
echo "$P passed, $F failed"
[ "$F" = 0 ]
