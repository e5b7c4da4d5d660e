#!/bin/sh
# quota_race.sh -- 100 AIJobs submitted in parallel (100 background
# `kubectl apply` processes) by one user whose UserQuota is 8 GPUs, in a
# group whose quota is 10 GPUs, while a second member (quota 2) submits
# too; 32 GPUs exist, so only quota holds them back. While they run, the
# pods are sampled every 0.1 s: the GPUs of bound, unfinished pods never
# pass 8 for the user nor 10 for the group at any sample. The count comes
# from the pods (nvidia.com/gpu limits of pods with a nodeName that are
# not Succeeded/Failed; every container and init container), not from the
# operator's bookkeeping.
# AIQ_SOAK=1: 400 jobs, in waves of 100.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/_workload.sh"

N=100; WAVES=1
[ "${AIQ_SOAK:-}" = 1 ] && WAVES=4
USER_Q=8; GROUP_Q=10
wl_nodes "$T/nodes.yaml"
e2e_start --nodes "$T/nodes.yaml" --time-scale 10
wl_op_up || bad "operator ready"

cat <<Y | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Namespace
metadata: {name: race}
---
apiVersion: aiq.dev/v1alpha1
kind: Group
metadata: {name: racers}
spec:
  level: 1
  namespaces: [race]
  quota: {gpus: $GROUP_Q}
  members: [{user: racer, level: 1}, {user: other, level: 1}]
---
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: racer, namespace: race}
spec:
  user: racer
  quota: {gpus: $USER_Q}
---
apiVersion: aiq.dev/v1alpha1
kind: UserQuota
metadata: {name: other, namespace: race}
spec:
  user: other
  quota: {gpus: 2}
Y
wait_for 15 "both UserQuotas accepted" sh -c '
  [ "$(kubectl get userquota racer -n race -o jsonpath={.status.accepted})" = true ] &&
  [ "$(kubectl get userquota other -n race -o jsonpath={.status.accepted})" = true ]'

# job NAME USER REPLICAS GPUS DURATION: one AIJob file.
job() {
    cat >"$T/jobs/$1.yaml" <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: race}
spec:
  user: $2
  replicas: $3
  resources: {gpus: $4, gpuMemoryMiB: 20480, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: $5}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
mkdir -p "$T/jobs"
# Sizes 1-4 GPUs (gangs of 2x1 and 2x2 among them), 5-15 s simulated.
i=0
while [ $i -lt $((N * WAVES)) ]; do
    case $((i % 6)) in
        0) job r$i racer 1 1 5s ;; 1) job r$i racer 1 3 10s ;; 2) job r$i racer 2 1 8s ;;
        3) job r$i racer 2 2 15s ;; 4) job r$i racer 1 4 5s ;; 5) job r$i racer 1 2 12s ;;
    esac
    i=$((i + 1))
done
for k in 0 1 2 3 4 5 6 7 8 9; do job o$k other 1 1 10s; done

# The sampler: one line per sample, "racer_gpus group_gpus". A pod holds
# what Kubernetes counts for it: the larger of the sum over its containers
# and the largest init container, of nvidia.com/gpu (limits; requests
# equal them for extended resources), for every bound pod that has not
# ended. One API request per sample (kubectl would cost a process start).
sample() {
    api_curl /api/v1/namespaces/race/pods | jq -r '
        def gpus(cs): [cs[]?.resources.limits["nvidia.com/gpu"] // "0" | tonumber];
        [.items[] | select(.spec.nodeName != null and .status.phase != "Succeeded" and .status.phase != "Failed")
         | {job: .metadata.labels["aiq.dev/job"],
            g: ([(gpus(.spec.containers) | add // 0), (gpus(.spec.initContainers) | max // 0)] | max)}]
        | "\([.[] | select(.job | startswith("r")) | .g] | add // 0) \([.[].g] | add // 0)"'
}
(
    while [ ! -f "$T/stop" ]; do
        s=$(sample 2>/dev/null) && [ -n "$s" ] && echo "$s $(date +%s.%N)" >>"$T/samples.txt"
        sleep 0.1
    done
) &
SAMPLER=$!

w=0
while [ $w -lt $WAVES ]; do
    # Every job of the wave at once, one kubectl process each.
    pids=""
    i=$((w * N))
    while [ $i -lt $(((w + 1) * N)) ]; do
        kubectl apply -f "$T/jobs/r$i.yaml" >"$T/jobs/r$i.out" 2>&1 &
        pids="$pids $!"
        i=$((i + 1))
    done
    if [ $w = 0 ]; then
        for k in 0 1 2 3 4 5 6 7 8 9; do kubectl apply -f "$T/jobs/o$k.yaml" >/dev/null 2>&1 & pids="$pids $!"; done
    fi
    nf=0
    for p in $pids; do wait "$p" || nf=$((nf + 1)); done
    [ $nf = 0 ] && ok "wave $w: $N parallel kubectl apply processes succeeded" || bad "wave $w: $nf applies failed"
    w=$((w + 1))
done

done_all() {
    n=$(kubectl get aijobs -n race -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Succeeded)
    echo "$n of $((N * WAVES + 10)) Succeeded"
    [ "$n" -eq $((N * WAVES + 10)) ]
}
wait_for $((240 * WAVES)) "every job Succeeded" done_all
touch "$T/stop"; wait "$SAMPLER"

ns=$(wc -l <"$T/samples.txt")
check "sampled the pods at least 50 times ($ns samples)" test "$ns" -ge 50
check "the user's running GPUs never passed its quota ($USER_Q) at any sample" \
    awk -v q=$USER_Q '$1 > q { print "sample at " $3 ": user holds " $1 " GPUs"; bad = 1 } END { exit bad }' "$T/samples.txt"
check "the group's running GPUs never passed its quota ($GROUP_Q) at any sample" \
    awk -v q=$GROUP_Q '$2 > q { print "sample at " $3 ": group holds " $2 " GPUs"; bad = 1 } END { exit bad }' "$T/samples.txt"
# Not vacuous: the quota was actually reached while jobs were waiting.
check "the user reached its quota (the limit was contended)" \
    awk -v q=$USER_Q '$1 == q { hit = 1 } END { exit !hit }' "$T/samples.txt"
echo "samples: $ns, max user GPUs $(awk 'm < $1 { m = $1 } END { print m + 0 }' "$T/samples.txt")," \
     "max group GPUs $(awk 'm < $2 { m = $2 } END { print m + 0 }' "$T/samples.txt")"
e2e_done
