#!/bin/sh
# servers: local real
# status_economy.sh -- a waiting job's status is written only when
# something a user acts on changed (docs/operator.md "Status writes"):
# nothing is written at steady state; a newcomer ahead moves the positions
# of the first ten, which are rewritten and journaled (those further back
# neither); the exact live queue comes from the operator's /queue
# (kubectl aiq queue and explain show it); the write budget
# (--status-writes-per-s) holds during a burst and every job still gets
# its status; jobs that rejoin the queue ahead of others keep the
# others' inputs (moved through the cycle's set-aside).
. "$(dirname "$0")/lib.sh"
export PATH="$BUILD:$PATH" # kubectl aiq is build/*/kubectl-aiq

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 1
op_start
PORT=$(sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$T/op.log" | tail -1)
URL=http://127.0.0.1:$PORT

job() { # name replicas gpus duration [priority]
    cat <<Y
---
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: carol
  replicas: $2
  priority: ${5:-0}
  resources: {gpus: $3, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $4}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
metric() { curl -fsS "$URL/metrics" | sed -n "s/^$1 //p"; }
rvs() { kubectl get aijobs -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}'; }

# The whole cluster busy for 10 minutes, twelve 1-GPU jobs behind it.
job big 2 8 10m | kubectl apply -f - >/dev/null
wait_for 20 "the big job runs" sh -c '[ "$(kubectl get aijob big -o jsonpath={.status.phase})" = Running ]'
# Priorities 100 down to 89 fix the order (equal scores would tie on the
# queued time, which the pods' creation order decides).
for i in $(seq 1 12); do job "w$i" 1 1 1m $((101 - i)); done | kubectl apply -f - >/dev/null
wait_for 20 "twelve jobs wait with positions 1..12" sh -c '
  [ "$(kubectl get aijobs -o jsonpath="{range .items[?(@.status.phase==\"Queued\")]}{.status.position} {end}" |
      tr " " "\n" | grep -c .)" = 12 ] &&
  [ "$(kubectl get aijob w12 -o jsonpath={.status.position})" = 12 ]'

# --- steady state: nothing written --------------------------------------------
sleep 2
before=$(rvs)
w0=$(metric aiq_status_writes_total)
t0=$(metric aiq_cache_thaws_total)
c0=$(grep -c "event=cycle " "$T/op.log")
sleep 5 # about 16 cycles at --cycle-ms 300
after=$(rvs)
w1=$(metric aiq_status_writes_total)
check "no AIJob changes in 5 s of steady state" eq "$after" "$before"
check "aiq_status_writes_total did not move" eq "$w1" "$w0"
# Unread, the waiting jobs' AIJobs and gated pods are kept as text
# (operator/cache.h), and no steady cycle reads one back.
check "the twelve waiting jobs' AIJobs and pods are frozen at rest ($(metric aiq_cache_frozen_objects))" \
    [ "$(metric aiq_cache_frozen_objects)" -ge 24 ]
check "no steady cycle thawed one (aiq_cache_thaws_total $t0 -> $(metric aiq_cache_thaws_total))" \
    eq "$(metric aiq_cache_thaws_total)" "$t0"
check "the operator ran cycles meanwhile" [ "$(grep -c "event=cycle " "$T/op.log")" -gt $((c0 + 8)) ]
# Nothing changed, so the cycles of that window (its first 8) took
# every waiting job's input and decision from the last cycle's
# (docs/operator.md "Between cycles"): 12 jobs kept, 12 waits kept (the
# running job is worked out each cycle), and the line has its phases.
check "steady cycles keep the twelve waiting jobs' input and decisions" sh -c "
  grep 'event=cycle ' '$T/op.log' | sed -n '$((c0 + 1)),$((c0 + 8))p' >'$T/steady.cycles' &&
  [ \$(grep -c ' jobs=13 .* kept=12 moved=0 set_aside=0 waits_kept=12 ms=[0-9.]* sync_ms=[0-9.]* build_ms=[0-9.]* core_ms=[0-9.]* decide_ms=[0-9.]* release_ms=[0-9.]* actions_ms=[0-9.]*\$' '$T/steady.cycles') = 8 ]"

# --- the live queue --------------------------------------------------------
check "/queue lists the twelve in order with scores" sh -c "
  curl -fsS '$URL/queue?namespace=default' >'$T/q.json' &&
  [ \"\$(jq -r '[.items[].name] | join(\" \")' '$T/q.json')\" = 'w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12' ] &&
  [ \"\$(jq -r '[.items[].position] | join(\" \")' '$T/q.json')\" = '1 2 3 4 5 6 7 8 9 10 11 12' ] &&
  jq -e '.kind == \"QueueView\" and (.items[0].score != null) and (.items[0].message | length > 0)' '$T/q.json' >/dev/null"
check "/queue for one job carries its terms" sh -c "
  curl -fsS '$URL/queue?namespace=default&name=w3' | jq -e '.items | length == 1 and (.[0].terms | length >= 1)' >/dev/null"
check "/queue for a job not waiting is 404 naming it" sh -c "
  [ \"\$(curl -s -o '$T/nf.json' -w '%{http_code}' '$URL/queue?namespace=default&name=big')\" = 404 ] &&
  grep -q 'default/big is not waiting' '$T/nf.json'"
check "kubectl aiq queue says its positions are live" sh -c "
  kubectl aiq queue --operator-url $URL >'$T/aq.out' 2>&1 && grep -q 'live' '$T/aq.out' && grep -q 'w12' '$T/aq.out'"
check "kubectl aiq explain shows the live terms" sh -c "
  kubectl aiq explain w3 --operator-url $URL >'$T/ax.out' 2>&1 && grep -q 'live, from the operator' '$T/ax.out'"
check "without the operator kubectl aiq queue says the view is as last written" sh -c "
  kubectl aiq queue --operator-url http://127.0.0.1:1 >'$T/aq2.out' 2>&1 && grep -q 'Live view not available' '$T/aq2.out' &&
  grep -q 'as last written' '$T/aq2.out'"

# --- a newcomer ahead: the first ten move and are rewritten ---------------------
# and journaled again; w12 (12 -> 13, under 10% beyond the first ten) is not,
# and neither w11 nor w12 is rewritten for the new job at the head.
decisions() { curl -s "$URL/journal?job=default/$1" | grep -o '"type":"decision"' | wc -l; }
d1=$(decisions w1); d12=$(decisions w12)
rv() { kubectl get aijob "$1" -o jsonpath={.metadata.resourceVersion}; }
rv11=$(rv w11); rv12=$(rv w12)
job urgent 1 1 1m 1000 | kubectl apply -f - >/dev/null
wait_for 10 "the newcomer takes position 1 and w1 shows position 2" sh -c '
  [ "$(kubectl get aijob urgent -o jsonpath={.status.position})" = 1 ] &&
  [ "$(kubectl get aijob w1 -o jsonpath={.status.position})" = 2 ] &&
  [ "$(kubectl get aijob w9 -o jsonpath={.status.position})" = 10 ]'
sleep 1 # a few cycles more: nothing else moves
check "w1's move (1 -> 2) is journaled: $d1 -> $(decisions w1) decisions" \
    [ "$(decisions w1)" -eq $((d1 + 1)) ]
check "w12's (12 -> 13) is not, as its status is not rewritten: $d12 -> $(decisions w12)" \
    [ "$(decisions w12)" -eq "$d12" -a "$d12" -ge 1 ]
# The job they are all blocked behind changed (w1 -> urgent), which a
# status naming it would have had to say 11 times: it does not name it.
check "w11 and w12 (blocked, further back) were not rewritten for the new head" \
    eq "$(rv w11) $(rv w12)" "$rv11 $rv12"
check "their status says why without naming the blocker; explain names it" sh -c "
  kubectl get aijob w12 -o jsonpath={.status.message} | grep -q '^blocked behind a job ahead of it that cannot start yet' &&
  kubectl aiq explain w12 --operator-url $URL | grep -q 'blocked behind default/urgent'"

# --- a restart ---------------------------------------------------------------
# Nothing a user acts on changed while the operator was down: the restarted
# one writes no status, and the store tells it which arrivals the journal
# has, so none is journaled a second time, and which decisions it made
# last, so none of the thirteen waiting jobs' is journaled again.
arrivals() { curl -s "$URL/journal?job=default/$1" | grep -o '"kind":"job_arrival"' | wc -l; }
ndec() { sqlite3 "$T/op.db" "SELECT count(*) FROM decisions"; }
check "w12's arrival is journaled once" [ "$(arrivals w12)" -eq 1 ]
before=$(rvs)
op_kill9
ndec0=$(ndec)
mv "$T/op.log" "$T/op0.log"
op_start
PORT=$(sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$T/op.log" | tail -1)
URL=http://127.0.0.1:$PORT
wait_for 10 "the restarted operator runs cycles" sh -c "[ \$(grep -c 'event=cycle ' '$T/op.log') -ge 5 ]"
check "after the restart no AIJob was rewritten" eq "$(rvs)" "$before"
check "aiq_status_writes_total of the restarted operator is 0" eq "$(metric aiq_status_writes_total)" 0
check "w12's and w1's arrivals are still journaled once each" \
    [ "$(arrivals w12)" -eq 1 -a "$(arrivals w1)" -eq 1 ]
check "the restart journaled no decision again ($ndec0 rows before, $(ndec) after)" eq "$(ndec)" "$ndec0"
check "... and the replay read the last decisions in one scan (no replay_not_preloaded)" \
    sh -c "! grep -q 'event=replay_not_preloaded' '$T/op.log'"

# --- the write budget ----------------------------------------------------------
op_kill9
mv "$T/op.log" "$T/op1.log" # op_start waits for the new operator's "ready"
op_start --status-writes-per-s 2
PORT=$(sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$T/op.log" | tail -1)
URL=http://127.0.0.1:$PORT
for i in $(seq 1 20); do job "b$i" 1 1 1m; done | kubectl apply -f - >/dev/null
sleep 1
w1=$(metric aiq_status_writes_total)
sleep 5
w2=$(metric aiq_status_writes_total)
d=$(metric aiq_status_writes_deferred)
check "at most 2 writes/s (+2 of burst) in a 5 s window of a burst: $w1 -> $w2" [ $((w2 - w1)) -le 12 ]
check "due statuses wait for the budget (aiq_status_writes_deferred=$d)" [ "${d:-0}" -gt 0 ]
wait_for 40 "every burst job still gets its Queued status" sh -c '
  [ "$(kubectl get aijobs -o jsonpath="{range .items[?(@.status.phase==\"Queued\")]}{.metadata.name} {end}" |
      tr " " "\n" | grep -c "^b")" = 20 ]'
# The status is built when its write goes out, seconds after the job was
# queued for the last of them (20 at 2 a second), but a condition says
# when its change happened: Queued's lastTransitionTime is the cycle that
# queued the job (its queuedTime, or the cycle right after it), not the
# write's time.
late=$(kubectl get aijobs -o jsonpath='{range .items[*]}{.metadata.name} {.status.queuedTime} {.status.conditions[?(@.type=="Queued")].lastTransitionTime}{"\n"}{end}' |
    awk '$1 ~ /^b[0-9]+$/ { print $1, $2, $3 }' | while read -r n q t; do
        d=$(( $(date -d "$t" +%s) - $(date -d "$q" +%s) ))
        [ "$d" -ge 0 ] && [ "$d" -le 2 ] || echo "$n:${d}s"
    done)
check "each burst job's Queued condition has the time it was queued, not of the write (off: ${late:-none})" \
    eq "$late" ""

# --- a job that rejoins ahead of kept ones ---------------------------------------
# Suspended, w1 leaves the queue and the jobs after it in the operator's
# cache move down a slot of the cycle's input; resumed, it rejoins at
# its place, and the jobs after it whose inputs the cycle keeps move up
# a slot: each is set aside when the job before it takes its slot and
# taken back (docs/operator.md "Between cycles"). This suite's operator
# is built with -DAIQ_SELFCHECK, which works every kept input out afresh
# and compares, byte for byte.
c0=$(grep -c "event=cycle " "$T/op.log")
kubectl patch aijob w1 --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
wait_for 20 "w1 suspended leaves the live queue" sh -c "
  [ \"\$(curl -s -o /dev/null -w '%{http_code}' '$URL/queue?namespace=default&name=w1')\" = 404 ]"
kubectl patch aijob w1 --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for 30 "w1 resumed is back in the live queue" sh -c "
  [ \"\$(curl -s -o /dev/null -w '%{http_code}' '$URL/queue?namespace=default&name=w1')\" = 200 ]"
sleep 1 # a cycle after it
check "a cycle moved kept inputs up a slot, through the set-aside" sh -c "
  grep 'event=cycle ' '$T/op.log' | sed -n '$((c0 + 1)),\$p' | grep -q ' moved=[1-9][0-9]* set_aside=[1-9]'"
check "the live order is as before: urgent w1 w2 ... w12" sh -c "
  curl -fsS '$URL/queue?namespace=default' |
    jq -r '[.items[].name | select(test(\"^(w[0-9]+|urgent)\$\"))] | join(\" \")' |
    grep -qx 'urgent w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12'"
op_kill9

# --- /queue and /journal answer loopback clients only, unless --api-remote ----
IP=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+\.' | grep -v '^127\.' | head -1)
if [ -z "$IP" ]; then
    ok "skipped: this machine has no non-loopback IPv4 address to ask from"
else
    mv "$T/op.log" "$T/op2.log"
    op_start --metrics-addr 0.0.0.0:0
    PORT=$(sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$T/op.log" | tail -1)
    check "from $IP /queue is 403, saying how to reach it" sh -c "
      [ \"\$(curl -s -o '$T/r.json' -w '%{http_code}' 'http://$IP:$PORT/queue')\" = 403 ] &&
      grep -q 'loopback clients only' '$T/r.json'"
    check "and /journal too, while /metrics answers" sh -c "
      [ \"\$(curl -s -o /dev/null -w '%{http_code}' 'http://$IP:$PORT/journal?job=default/w1')\" = 403 ] &&
      curl -fsS 'http://$IP:$PORT/metrics' | grep -q '^aiq_leader'"
    check "from loopback /queue answers" sh -c "curl -fsS 'http://127.0.0.1:$PORT/queue' | grep -q QueueView"
    op_kill9
    mv "$T/op.log" "$T/op3.log"
    op_start --metrics-addr 0.0.0.0:0 --api-remote
    PORT=$(sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$T/op.log" | tail -1)
    # Remote callers then need a Kubernetes token and RBAC (api_auth.sh
    # checks the whole flow); without one, 401 saying so.
    check "with --api-remote, /queue from $IP without a token is 401, saying a token is needed" sh -c "
      [ \"\$(curl -s -o '$T/r2.json' -w '%{http_code}' 'http://$IP:$PORT/queue')\" = 401 ] &&
      grep -q 'no bearer token' '$T/r2.json'"
    check "... and loopback still answers without one" sh -c "curl -fsS 'http://127.0.0.1:$PORT/queue' | grep -q QueueView"
    op_kill9
fi
e2e_done
