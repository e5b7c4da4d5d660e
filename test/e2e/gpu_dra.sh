#!/bin/sh
# gpu_dra.sh -- --gpu-mechanism=dra on the real control plane: NVIDIA's DRA
# driver's DeviceClass and ResourceSlices (driver gpu.nvidia.com, devices
# gpu-<index> with attributes type, uuid, index and capacity memory) are
# published for the fake nodes, as the driver's kubelet plugin would; aiq
# places shared and whole-GPU jobs, creates each pod's ResourceClaim
# selecting exactly the placed devices, and the real kube-scheduler's
# DynamicResources plugin allocates them: every claim's
# status.allocation names the node and devices aiq placed the replica on.
# A shared replica gets a whole device (DRA devices are exclusive per
# claim), so a third job waits while both GPUs are held. A foreign pod
# holding the placed device shows the pin is enforced: the scheduler keeps
# aiq's pod waiting for that device rather than handing out another.
# servers: real (the local server does not serve resource.k8s.io; the claim allocation needs the real kube-scheduler)
. "$(dirname "$0")/lib.sh"

cat >"$T/nodes.yaml" <<Y
nodes:
  - {name: dra, gpus: 2, gpuProduct: NVIDIA-A100-SXM4-40GB, gpuMemoryMiB: 40960, cpu: "32", memory: 128Gi}
Y
e2e_start --nodes "$T/nodes.yaml" --time-scale 1

check "the server serves resource.k8s.io/v1" sh -c 'kubectl api-versions | grep -qx resource.k8s.io/v1'
# What NVIDIA's DRA driver installs (its DeviceClass) and publishes per
# node (its ResourceSlice).
cat >"$T/dra.yaml" <<Y
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: dra-gpu.nvidia.com}
spec:
  driver: gpu.nvidia.com
  nodeName: dra
  pool: {name: dra, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
      uuid: {string: GPU-dra-0000}
      index: {int: 0}
      productName: {string: NVIDIA A100-SXM4-40GB}
    capacity:
      memory: {value: 40Gi}
  - name: gpu-1
    attributes:
      type: {string: gpu}
      uuid: {string: GPU-dra-0001}
      index: {int: 1}
      productName: {string: NVIDIA A100-SXM4-40GB}
    capacity:
      memory: {value: 40Gi}
Y
check "publish the DeviceClass and the node's ResourceSlice" kubectl apply -f "$T/dra.yaml"

# A pod aiq does not manage holds gpu-0 through its own claim (aiq does not
# see it: counting foreign pods is item 1 of issue 15). aiq will place the
# first job on gpu-0; the claim pins that device, so the scheduler must NOT
# hand out the free gpu-1 instead: the pod waits until gpu-0 is free.
cat >"$T/foreign.yaml" <<Y
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: foreign-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1,
                selectors: [{cel: {expression: 'device.attributes["gpu.nvidia.com"].index == 0'}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: foreign, namespace: default, annotations: {sim.aiq.dev/duration: 10m}}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: foreign-gpu}]
  containers: [{name: w, image: busybox, resources: {claims: [{name: gpu}]}}]
Y
kubectl apply -f "$T/foreign.yaml" >/dev/null
wait_for 30 "a foreign pod holds gpu-0 through its own claim" sh -c "
  [ \"\$(kubectl get resourceclaim foreign-gpu -o jsonpath='{.status.allocation.devices.results[0].device}')\" = gpu-0 ]"
op_start --gpu-mechanism=dra

job() { # name gpus MiB
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: default}
spec:
  user: alice
  replicas: 1
  resources: {gpus: $2, gpuMemoryMiB: $3, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 10m}
    spec:
      containers: [{name: w, image: busybox}]
Y
}
job whole 1 0 | kubectl apply -f - >/dev/null
wait_for 30 "whole: admitted onto gpu-0" sh -c '
  [ "$(kubectl get aijob whole -o jsonpath={.status.placement[0].gpuIndexes[0]})" = 0 ] &&
  [ -z "$(kubectl get pod whole-0 -o jsonpath={.spec.schedulingGates})" ]'
sleep 3
check "whole: the scheduler keeps the pod waiting for gpu-0 (not the free gpu-1)" sh -c "
  [ -z \"\$(kubectl get pod whole-0 -o jsonpath={.spec.nodeName})\" ] &&
  [ -z \"\$(kubectl get resourceclaim whole-0-gpu -o jsonpath={.status.allocation})\" ] &&
  kubectl get pod whole-0 -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -qx Unschedulable"
kubectl delete pod foreign --wait=false >/dev/null
job share 0 10240 | kubectl apply -f - >/dev/null
for j in whole share; do
    wait_for 60 "$j: Running (claim allocated by kube-scheduler, pod bound)" sh -c "
      [ \"\$(kubectl get aijob $j -o jsonpath={.status.phase})\" = Running ]"
    check "$j: the pod references its claim and asks for no nvidia.com/gpu" sh -c "
      [ \"\$(kubectl get pod $j-0 -o jsonpath='{.spec.resourceClaims[0].resourceClaimName}')\" = $j-0-gpu ] &&
      [ -z \"\$(kubectl get pod $j-0 -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpu}')\" ]"
    node=$(kubectl get aijob $j -o 'jsonpath={.status.placement[0].node}')
    gpu=$(kubectl get aijob $j -o 'jsonpath={.status.placement[0].gpuIndexes[0]}')
    check "$j: the claim's allocation equals aiq's placement ($node gpu-$gpu)" sh -c "
      [ -n \"$gpu\" ] &&
      [ \"\$(kubectl get resourceclaim $j-0-gpu -o jsonpath='{range .status.allocation.devices.results[*]}{.pool}/{.device} {end}')\" = \"$node/gpu-$gpu \" ]"
    check "$j: the claim is reserved for the pod and owned by it" sh -c "
      uid=\$(kubectl get pod $j-0 -o jsonpath={.metadata.uid}) &&
      [ \"\$(kubectl get resourceclaim $j-0-gpu -o jsonpath='{.status.reservedFor[0].uid}')\" = \"\$uid\" ] &&
      [ \"\$(kubectl get resourceclaim $j-0-gpu -o jsonpath='{.metadata.ownerReferences[0].uid}')\" = \"\$uid\" ]"
    check "$j: the pod is bound to the placed node" sh -c "[ \"\$(kubectl get pod $j-0 -o jsonpath={.spec.nodeName})\" = $node ]"
done
gw=$(kubectl get aijob whole -o 'jsonpath={.status.placement[0].gpuIndexes[0]}')
gs=$(kubectl get aijob share -o 'jsonpath={.status.placement[0].gpuIndexes[0]}')
check "the shared job got the other GPU, whole ($gw, $gs)" sh -c "[ -n \"$gs\" ] && [ \"$gw\" != \"$gs\" ]"
check "the claim's CEL selector names the placed index and the shared memory" sh -c "
  kubectl get resourceclaim share-0-gpu -o jsonpath='{.spec.devices.requests[0].exactly.selectors[0].cel.expression}' |
  grep -q 'index in \[$gs\] && device.capacity\[\"gpu.nvidia.com\"\].memory.compareTo(quantity(\"10240Mi\")) >= 0'"
job third 0 1024 | kubectl apply -f - >/dev/null
sleep 3
check "a third shared job waits: both devices are held whole" sh -c '
  [ "$(kubectl get aijob third -o jsonpath={.status.phase})" = Queued ] && ! kubectl get resourceclaim third-0-gpu >/dev/null 2>&1'
kubectl delete aijob whole --wait=false >/dev/null
wait_for 60 "the finished job's claim is removed with its pod; the third job runs on the freed device" sh -c "
  ! kubectl get resourceclaim whole-0-gpu >/dev/null 2>&1 &&
  [ \"\$(kubectl get aijob third -o jsonpath={.status.phase})\" = Running ] &&
  [ \"\$(kubectl get resourceclaim third-0-gpu -o jsonpath='{.status.allocation.devices.results[0].device}')\" = gpu-$gw ]"
e2e_done
