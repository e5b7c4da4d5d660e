#!/bin/sh
# gpu_sharing.sh -- a shared job (gpus: 0, gpuMemoryMiB set) under the
# device-plugin and hami GPU mechanisms (--gpu-mechanism): the released pod
# carries what a real GPU node honours.
#   device-plugin  the shared pod asks for nvidia.com/gpu: 1 (it always
#                  receives a GPU) and aiq counts it as the whole GPU, so a
#                  second shared job waits instead of being placed on a GPU
#                  the device plugin has already handed out.
#   hami           two shared jobs land on the same GPU; each pod asks for
#                  nvidia.com/gpu: 1 and nvidia.com/gpumem: <MiB> and is
#                  pinned with nvidia.com/use-gpuuuid to the UUID HAMi's
#                  device plugin published for the placed GPU index
#                  (hami.io/node-nvidia-register on the Node); a node
#                  without that annotation is never released onto.
# The dra mechanism needs resource.k8s.io, which the local server does not
# serve: see gpu_dra.sh (real server only).
# servers: local real
. "$(dirname "$0")/lib.sh"

cat >"$T/nodes.yaml" <<Y
nodes:
  - {name: one, gpus: 1, gpuProduct: NVIDIA-L4, gpuMemoryMiB: 24576, cpu: "16", memory: 64Gi, domain: one}
  - {name: two, gpus: 2, gpuProduct: NVIDIA-A100-SXM4-40GB, gpuMemoryMiB: 40960, cpu: "32", memory: 128Gi, domain: two}
  - {name: bare, gpus: 2, gpuProduct: NVIDIA-A100-SXM4-40GB, gpuMemoryMiB: 40960, cpu: "32", memory: 128Gi, domain: bare}
Y
e2e_start --nodes "$T/nodes.yaml" --time-scale 1

shared() { # name domain MiB
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  replicas: 1
  domain: $2
  resources: {gpus: 0, gpuMemoryMiB: $3, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 10m}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
lim() { kubectl get pod "$1" -o "jsonpath={.spec.containers[0].resources.limits['$2']}"; }
req() { kubectl get pod "$1" -o "jsonpath={.spec.containers[0].resources.requests['$2']}"; }
ann() { kubectl get pod "$1" -o "jsonpath={.metadata.annotations['$2']}"; }

# ---- device-plugin (the default: no flag) ----------------------------------
op_start
shared dp-a one 4096 | kubectl apply -f - >/dev/null
wait_for 30 "device-plugin: the shared job runs" sh -c '[ "$(kubectl get aijob dp-a -o jsonpath={.status.phase})" = Running ]'
check "device-plugin: the shared pod asks for one whole GPU (limit and request)" sh -c "
  [ \"\$(kubectl get pod dp-a-0 -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpu}')\" = 1 ] &&
  [ \"\$(kubectl get pod dp-a-0 -o jsonpath='{.spec.containers[0].resources.requests.nvidia\.com/gpu}')\" = 1 ]"
check "device-plugin: and no HAMi resource or pin" sh -c "
  [ -z \"\$(kubectl get pod dp-a-0 -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpumem}')\" ] &&
  [ -z \"\$(kubectl get pod dp-a-0 -o jsonpath='{.metadata.annotations.nvidia\.com/use-gpuuuid}')\" ]"
check "device-plugin: the pod is bound to the placed node" sh -c '[ "$(kubectl get pod dp-a-0 -o jsonpath={.spec.nodeName})" = one ]'
shared dp-b one 4096 | kubectl apply -f - >/dev/null
sleep 3
check "device-plugin: a second shared job waits: the node's only GPU is held whole" sh -c '
  [ "$(kubectl get aijob dp-b -o jsonpath={.status.phase})" = Queued ] &&
  [ -z "$(kubectl get pod dp-b-0 -o jsonpath={.spec.nodeName})" ]'
kubectl delete aijob dp-a dp-b --wait=false >/dev/null
op_kill9

# ---- hami ------------------------------------------------------------------
# What HAMi's device plugin publishes on a node it runs on (its protocol:
# UUID,split count,memory MiB,cores,type,numa,healthy, one GPU per ':').
kubectl annotate node two --overwrite \
  'hami.io/node-nvidia-register=GPU-two-0000,10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:GPU-two-0001,10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:' >/dev/null
op_start --gpu-mechanism=hami --db "$T/op-hami.db"
# A whole-GPU job first, so the shares go to the other GPU (index 1).
shared hm-w two 0 | sed 's/gpus: 0/gpus: 1/' | kubectl apply -f - >/dev/null
wait_for 30 "hami: a whole-GPU job is admitted first" sh -c '
  p=$(kubectl get aijob hm-w -o jsonpath={.status.phase}); [ "$p" = Admitted ] || [ "$p" = Running ]'
gw=$(kubectl get aijob hm-w -o 'jsonpath={.status.placement[0].gpuIndexes[0]}')
wait_for 15 "hami: the whole-GPU pod is pinned to its GPU, all of its memory" sh -c "
  [ \"\$(kubectl get pod hm-w-0 -o jsonpath='{.metadata.annotations.nvidia\.com/use-gpuuuid}')\" = GPU-two-000$gw ] &&
  [ \"\$(kubectl get pod hm-w-0 -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpumem-percentage}')\" = 100 ]"
shared hm-a two 10240 | kubectl apply -f - >/dev/null
shared hm-b two 10240 | kubectl apply -f - >/dev/null
wait_for 30 "hami: both shared jobs are admitted" sh -c '
  for j in hm-a hm-b; do p=$(kubectl get aijob $j -o jsonpath={.status.phase}); [ "$p" = Admitted ] || [ "$p" = Running ] || exit 1; done'
ga=$(kubectl get aijob hm-a -o 'jsonpath={.status.placement[0].gpuIndexes[0]}')
gb=$(kubectl get aijob hm-b -o 'jsonpath={.status.placement[0].gpuIndexes[0]}')
check "hami: binpack put both shares on the one free GPU ($ga, $gb; the whole job has $gw)" sh -c "[ -n \"$ga\" ] && [ \"$ga\" = \"$gb\" ] && [ \"$ga\" != \"$gw\" ]"
wait_for 15 "hami: both pods are released" sh -c '
  [ -z "$(kubectl get pod hm-a-0 -o jsonpath={.spec.schedulingGates})" ] && [ -z "$(kubectl get pod hm-b-0 -o jsonpath={.spec.schedulingGates})" ]'
for p in hm-a-0 hm-b-0; do
    check "hami: $p asks for nvidia.com/gpu 1 and nvidia.com/gpumem 10240 (limits)" sh -c "
      [ \"\$(kubectl get pod $p -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpu}')\" = 1 ] &&
      [ \"\$(kubectl get pod $p -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpumem}')\" = 10240 ]"
    check "hami: $p is pinned to the placed GPU's UUID" sh -c "
      [ \"\$(kubectl get pod $p -o jsonpath='{.metadata.annotations.nvidia\.com/use-gpuuuid}')\" = GPU-two-000$ga ]"
    check "hami: $p's node affinity names the placed node" sh -c "
      kubectl get pod $p -o jsonpath='{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]}' | grep -qx two"
done

# A node without HAMi's annotation: placed, but never released (fail closed).
shared hm-bare bare 10240 | kubectl apply -f - >/dev/null
wait_for 30 "hami: a job placed on a node without HAMi's annotation is admitted" sh -c '
  p=$(kubectl get aijob hm-bare -o jsonpath={.status.phase}); [ "$p" = Admitted ]'
sleep 2
check "hami: ... but its pod keeps its gate (no UUID to pin)" sh -c '
  kubectl get pod hm-bare-0 -o jsonpath={.spec.schedulingGates[0].name} | grep -qx aiq.dev/admission'
check "hami: ... and the operator says why" grep -q 'pod_gpu_prepare_failed.*hami.io/node-nvidia-register' "$T/op.log"

e2e_done
