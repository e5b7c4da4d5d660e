#!/bin/sh
# store_faults.sh -- the operator fails closed on storage (issue 19 item
# 2). Its database lives on a real 2 MiB tmpfs. Jobs run; the disk is
# filled while they run and more are submitted: the operator turns
# not-ready with the reason (/readyz 503, aiq_store_healthy 0,
# event=store_failed), releases nothing and publishes no status its store
# did not record, so every AIJob's API phase agrees with the store. The
# disk is freed: the operator exits 3 (store_recovered) and, restarted,
# finishes every job with API and store in agreement. Then the database
# file is deleted under the running operator: it notices, rescues the
# committed data into a new file at the path, exits 3, and after the
# restart no finished attempt or its usage is lost.
# servers: local real
. "$(dirname "$0")/lib.sh"

DISK=$T/disk
DB=$DISK/op.db
mkdir -p "$DISK"
# The mount is the test's own: root is needed (CI runs make test as root).
if ! mount -t tmpfs -o size=2m tmpfs "$DISK" 2>"$T/mount.err"; then
    bad "mount -t tmpfs -o size=2m tmpfs $DISK: $(cat "$T/mount.err")"
    e2e_done
    exit 1
fi
trap 'rc=$?; [ -n "$OP_PID" ] && kill "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null; OP_PID=""
      umount "$DISK" 2>/dev/null; e2e_cleanup $rc' EXIT

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1

# op_up: the operator on the small disk, waiting for a new event=ready.
op_up() {
    before=$(grep -c "event=ready" "$T/op.log" 2>/dev/null)
    before=${before:-0}
    "$BUILD/aiq-operator" --kubeconfig "$T/kubeconfig" --db "$DB" \
        --metrics-addr 127.0.0.1:0 --cycle-ms 300 --log-level info --ungrouped run \
        >>"$T/op.log" 2>&1 &
    OP_PID=$!
    for _ in $(seq 1 200); do
        [ "$(grep -c "event=ready" "$T/op.log")" -gt "$before" ] && return 0
        sleep 0.05
    done
    bad "operator ready"
}
# op_exited: waits (up to 20 s) for the operator to exit; EXIT_CODE gets
# its status.
op_exited() {
    for _ in $(seq 1 200); do
        kill -0 "$OP_PID" 2>/dev/null || break
        sleep 0.1
    done
    wait "$OP_PID"
    EXIT_CODE=$?
    OP_PID=""
}
port() { sed -n "s/.*event=metrics_listening port=\([0-9]*\).*/\1/p" "$T/op.log" | tail -1; }
readyz_is() { curl -s -w ' %{http_code}' "http://127.0.0.1:$(port)/readyz" | tr -d '\n' | tee /dev/stderr | grep -q "$1"; }

job() { # name duration
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: dora
  replicas: 2
  resources: {gpus: 1, gpuMemoryMiB: 10240, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $2}
    spec:
      containers: [{name: w, image: busybox}]
Y
}

# agree: for every AIJob, the API's phase and attempts agree with the
# store: Succeeded in the API <=> the store's last attempt finished as
# Succeeded with GPU-seconds; Running/Admitted <=> an attempt begun and
# not finished; no phase (nothing published) or Queued <=> no attempt
# (or, for a requeue, none unfinished). Prints each disagreement.
agree() {
    kubectl get aijobs -n default -o jsonpath='{range .items[*]}{.metadata.uid} {.metadata.name} {.status.phase} {.status.attempts}{"\n"}{end}' >"$T/api.txt" || return 1
    bad=0
    while read -r uid name phase attempts; do
        [ -n "$uid" ] || continue
        row=$(sqlite3 -separator ' ' "$DB" "SELECT count(*), coalesce(max(attempt),0),
              coalesce(sum(finished > 0),0), coalesce(sum(outcome = 'Succeeded' AND gpu_seconds > 0),0)
              FROM job_attempts WHERE job_uid = '$uid'") || return 1
        set -- $row
        case $phase in
        Succeeded) [ "$2" = "${attempts:-x}" ] && [ "$4" = 1 ] && [ "$3" = "$1" ] ||
                   { echo "$name: API Succeeded (attempts $attempts), store attempts=$1 last=$2 finished=$3 succeeded=$4"; bad=1; } ;;
        Running|Admitted) [ "$2" = "${attempts:-x}" ] && [ "$3" -lt "$1" ] ||
                   { echo "$name: API $phase (attempts $attempts), store attempts=$1 last=$2 finished=$3"; bad=1; } ;;
        ""|Pending|Queued) [ "$3" = "$1" ] ||
                   { echo "$name: API '$phase', store has an unfinished attempt ($1 begun, $3 finished)"; bad=1; } ;;
        *) echo "$name: unexpected phase $phase"; bad=1 ;;
        esac
    done <"$T/api.txt"
    [ "$bad" = 0 ] && echo "$(wc -l <"$T/api.txt") jobs agree"
    [ "$bad" = 0 ]
}
usage_sum() { sqlite3 "$DB" "SELECT printf('%.3f', coalesce(sum(gpu_seconds),0)) FROM usage"; }
attempt_sum() { sqlite3 "$DB" "SELECT printf('%.3f', coalesce(sum(gpu_seconds),0)) FROM job_attempts WHERE finished > 0"; }

op_up
check "readyz ok on a healthy store" readyz_is 'ok 200'

# --- a full disk ---------------------------------------------------------------
for n in r1 r2 r3; do job $n 6s | kubectl apply -f - >/dev/null; done
wait_for 30 "three jobs run" sh -c '[ "$(kubectl get aijobs -n default -o jsonpath="{.items[*].status.phase}")" = "Running Running Running" ]'
# Fill the disk to the last byte (the WAL has not checkpointed: every new
# frame needs new space).
dd if=/dev/zero of="$DISK/fill" bs=4k >/dev/null 2>&1
check "the disk is full" sh -c "[ \"\$(df --output=avail -k '$DISK' | tail -1 | tr -d ' ')\" = 0 ]"
for n in q1 q2; do job $n 2s | kubectl apply -f - >/dev/null; done
wait_for 30 "a failed store write or commit logs event=store_failed" \
    grep -q "event=store_failed .*op=.*msg=.*full" "$T/op.log"
wait_for 10 "/readyz answers 503 with the store's reason" readyz_is 'not ready: store: .*full.* 503'
check "aiq_store_healthy is 0 and aiq_store_failures_total counts" sh -c \
    "curl -s http://127.0.0.1:$(port)/metrics | tee $T/m.txt | grep -q '^aiq_store_healthy 0' &&
     grep -q '^aiq_store_failures_total{op=\"[a-z_]*\"} [1-9]' $T/m.txt"
sleep 8 # the running jobs' pods finish on the full disk
check "no AIJob status disagrees with the store (full disk)" agree
check "the jobs submitted on the full disk were not released" sh -c '
  for n in q1 q2; do
    [ -z "$(kubectl get pods -n default -l aiq.dev/job=$n -o jsonpath="{.items[*].spec.nodeName}")" ] || exit 1
    p=$(kubectl get aijob $n -o jsonpath={.status.phase}); [ -z "$p" ] || [ "$p" = Pending ] || [ "$p" = Queued ] || exit 1
  done'
check "the finished pods' jobs still show Running (their finish is not recorded)" sh -c \
    '[ "$(kubectl get aijobs r1 r2 r3 -n default -o jsonpath="{.items[*].status.phase}")" = "Running Running Running" ]'

rm -f "$DISK/fill"
wait_for 15 "freed, the probe write succeeds and the operator exits 3 to rebuild" \
    grep -q "event=store_recovered how=probe_write_ok .*exit_code=3" "$T/op.log"
op_exited
check "exit status 3" eq "$EXIT_CODE" 3
op_up
wait_for 40 "restarted, every job finishes" sh -c \
    '[ "$(kubectl get aijobs -n default -o jsonpath="{.items[*].status.phase}")" = "Succeeded Succeeded Succeeded Succeeded Succeeded" ]'
check "no AIJob status disagrees with the store (recovered)" agree
usage_ok() { [ "$(usage_sum)" = "$(attempt_sum)" ] && [ "$(usage_sum)" != 0.000 ] || { echo "usage $(usage_sum) attempts $(attempt_sum)"; return 1; }; }
check "usage equals the finished attempts' GPU-seconds" usage_ok
check "readyz ok again" readyz_is 'ok 200'

# --- the database file deleted under the running operator -----------------------
before_att=$(sqlite3 "$DB" "SELECT count(*) FROM job_attempts WHERE finished > 0")
before_use=$(usage_sum)
rm -f "$DB"
wait_for 10 "the removal is detected (event=store_failed op=file_removed)" \
    grep -q "event=store_failed .*op=file_removed .*was removed" "$T/op.log"
wait_for 10 "the committed data is rescued into the path and the operator exits 3" \
    grep -q "event=store_recovered how=rescued_removed_file .*exit_code=3" "$T/op.log"
op_exited
check "exit status 3" eq "$EXIT_CODE" 3
op_up
job after 2s | kubectl apply -f - >/dev/null
wait_for 30 "restarted on the rescued file, a new job runs to the end" sh -c \
    '[ "$(kubectl get aijob after -o jsonpath={.status.phase})" = Succeeded ]'
check "no finished attempt lost ($before_att before the removal)" sh -c \
    "[ \$(sqlite3 '$DB' \"SELECT count(*) FROM job_attempts WHERE finished > 0\") = $((before_att + 1)) ]"
check "no usage lost" sh -c "[ \"\$(sqlite3 '$DB' \"SELECT printf('%.3f', coalesce(sum(a.gpu_seconds),0)) FROM job_attempts a JOIN jobs j ON j.uid = a.job_uid WHERE a.finished > 0 AND j.name != 'after'\")\" = '$before_use' ]"
check "no AIJob status disagrees with the store (after the rescue)" agree
check "usage still equals the finished attempts' GPU-seconds" usage_ok
check "no job is left unrecorded in the store" sh -c \
    "[ \$(sqlite3 '$DB' \"SELECT count(*) FROM jobs WHERE ns = 'default'\") = 6 ]"
e2e_done
