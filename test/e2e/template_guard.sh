#!/bin/sh
# template_guard.sh -- nothing bypasses the queue through the pod template
# (issue 19, item 1). The fields that carry the queue's decisions belong to
# aiq: an AIJob whose template sets GPU resources (gpus 0 plus a container
# limit of nvidia.com/gpu 8, an init container's amd.com/gpu), nodeName,
# schedulingGates or resourceClaims is refused by the API server through the
# CRD's validation rules, with a message naming the field. With those rules
# gone (an older CRD, an admin's edit) the operator still never creates
# such a pod: the job is Rejected (PodRefused) naming the field, and no pod
# of it exists. A privileged template in a namespace labelled
# pod-security.kubernetes.io/enforce=baseline is refused by Pod Security
# Admission and the AIJob says so (Rejected, PodRefused, "PodSecurity").
# servers: local real
. "$(dirname "$0")/lib.sh"

e2e_start --nodes "$ROOT/test/e2e/nodes-2x8.yaml" --time-scale 5
op_start

job() { # name namespace gpus template-spec-yaml (one line, flow style)
    cat <<Y
apiVersion: aiq.dev/v1alpha1
kind: AIJob
metadata: {name: $1, namespace: $2}
spec:
  user: mallory
  resources: {gpus: $3, gpuMemoryMiB: 1024, cpu: "1", memory: 1Gi}
  template:
    metadata:
      annotations: {sim.aiq.dev/duration: 30s}
    spec: $4
Y
}

# refused LABEL WANT... : the last `kubectl apply` (in $T/a.out) failed and
# its message holds every WANT.
refused() {
    label=$1; shift
    if [ "$APPLY_RC" = 0 ]; then bad "$label: the API server accepted it"; return; fi
    for w in "$@"; do
        if ! grep -qF -- "$w" "$T/a.out"; then
            bad "$label: refused, but the message lacks [$w]"; sed 's/^/     /' "$T/a.out" | head -4; return
        fi
    done
    ok "$label: $(head -c 200 "$T/a.out" | tr '\n' ' ')"
}
apply() { kubectl apply -f "$T/j.yaml" >"$T/a.out" 2>&1; APPLY_RC=$?; }

# --- 1. the API server refuses the fields (CRD validation rules) -----------
job gpu8 default 0 '{containers: [{name: w, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}' >"$T/j.yaml"; apply
refused "gpus 0 + a template limit of nvidia.com/gpu 8 is refused" \
    "spec.template.spec.containers[0].resources.limits" "extended resources"
job amdinit default 1 '{initContainers: [{name: i, image: busybox, resources: {requests: {amd.com/gpu: "1"}}}], containers: [{name: w, image: busybox}]}' >"$T/j.yaml"; apply
refused "an init container's amd.com/gpu request is refused" \
    "spec.template.spec.initContainers[0].resources.requests" "extended resources"
job sidecar default 1 '{containers: [{name: w, image: busybox}, {name: s, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]}' >"$T/j.yaml"; apply
refused "a sidecar's GPU limit is refused" "spec.template.spec.containers[1].resources.limits"
job pinned default 1 '{nodeName: node-1, containers: [{name: w, image: busybox}]}' >"$T/j.yaml"; apply
refused "a template with nodeName is refused" "spec.template.spec.nodeName" "must not be set"
job gated default 1 '{schedulingGates: [{name: mine}], containers: [{name: w, image: busybox}]}' >"$T/j.yaml"; apply
refused "a template with its own scheduling gate is refused" "spec.template.spec.schedulingGates"
job claims default 1 '{resourceClaims: [{name: g, resourceClaimName: c}], containers: [{name: w, image: busybox}]}' >"$T/j.yaml"; apply
refused "a template with resource claims is refused" "spec.template.spec.resourceClaims"
check "none of them exists" sh -c '[ -z "$(kubectl get aijobs -o name)" ]'

job fine default 1 '{containers: [{name: w, image: busybox, resources: {limits: {cpu: "1", memory: 1Gi}}}]}' >"$T/j.yaml"; apply
check "a template with native resources only is accepted" [ "$APPLY_RC" = 0 ]
wait_for 60 "and it runs to Succeeded with the GPU from spec.resources" sh -c '
  [ "$(kubectl get aijob fine -o jsonpath={.status.phase})" = Succeeded ] &&
  [ "$(kubectl get pod fine-0 -o jsonpath="{.spec.containers[0].resources.limits.nvidia\\.com/gpu}")" = 1 ]'

# --- 2. validation bypassed: the operator refuses to build the pod ---------
# The CRD without the template rules (what an older aiq installed, or an
# admin's edit): the server stores anything under spec.template.
python3 - "$ROOT/crds/aijobs.aiq.dev.yaml" >"$T/crd-open.yaml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
t = d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["template"]
t.pop("properties")
print(yaml.safe_dump(d))
PY
check "install the CRD without the template rules" kubectl apply -f "$T/crd-open.yaml"
# A real server takes a moment to serve the new schema: retry the create.
for _ in $(seq 1 60); do
    job gpu8 default 0 '{containers: [{name: w, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]}' >"$T/j.yaml"; apply
    [ "$APPLY_RC" = 0 ] && break
    sleep 0.5
done
check "the open CRD stores the 8-GPU template" [ "$APPLY_RC" = 0 ]
job pinned default 1 '{nodeName: node-1, containers: [{name: w, image: busybox}]}' >"$T/j.yaml"; apply
check "and the nodeName template" [ "$APPLY_RC" = 0 ]
wait_for 20 "the operator rejects the 8-GPU job, naming the field" sh -c '
  [ "$(kubectl get aijob gpu8 -o jsonpath={.status.phase})" = Rejected ] &&
  kubectl get aijob gpu8 -o jsonpath={.status.message} |
    grep -qF "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: extended resource"'
wait_for 20 "the operator rejects the nodeName job, naming the field" sh -c '
  [ "$(kubectl get aijob pinned -o jsonpath={.status.phase})" = Rejected ] &&
  kubectl get aijob pinned -o jsonpath={.status.message} | grep -qF "spec.template.spec.nodeName: must not be set"'
check "the condition says PodRefused" sh -c '
  kubectl get aijob gpu8 -o jsonpath="{.status.conditions[?(@.type==\"Rejected\")].reason}" | grep -qx PodRefused'
check "no pod of either was ever created" sh -c '
  [ -z "$(kubectl get pods -l aiq.dev/job=gpu8 -o name)" ] &&
  [ -z "$(kubectl get pods -l aiq.dev/job=pinned -o name)" ] &&
  ! grep -q "event=pod_created obj=default/gpu8-\|event=pod_created obj=default/pinned-" "$T/op.log"'
kubectl delete aijob gpu8 pinned --wait=false >/dev/null 2>&1
check "restore the CRD with the rules" kubectl apply -f "$ROOT/crds/aijobs.aiq.dev.yaml"

# --- 3. Pod Security Admission on the group's namespace ---------------------
# The shipped namespaces: each enforces baseline.
check "examples/namespaces.yaml applies" kubectl apply -f "$ROOT/examples/namespaces.yaml"
job priv research 1 '{containers: [{name: w, image: busybox, securityContext: {privileged: true}}]}' >"$T/j.yaml"; apply
check "a privileged template is accepted as an AIJob (PSA judges pods)" [ "$APPLY_RC" = 0 ]
wait_for 30 "the privileged job is Rejected: PodRefused by PodSecurity (baseline)" sh -c '
  [ "$(kubectl get aijob priv -n research -o jsonpath={.status.phase})" = Rejected ] &&
  kubectl get aijob priv -n research -o jsonpath="{.status.conditions[?(@.type==\"Rejected\")].reason}" | grep -qx PodRefused &&
  kubectl get aijob priv -n research -o jsonpath={.status.message} | grep -q "PodSecurity \"baseline:latest\"" &&
  kubectl get aijob priv -n research -o jsonpath={.status.message} | grep -q privileged'
check "no privileged pod exists" sh -c '[ -z "$(kubectl get pods -n research -o name)" ]'
job plain research 1 '{containers: [{name: w, image: busybox}]}' >"$T/j.yaml"; apply
wait_for 60 "a plain job in the same namespace runs to Succeeded" sh -c '
  [ "$(kubectl get aijob plain -n research -o jsonpath={.status.phase})" = Succeeded ]'

e2e_done
