/* release.h -- the patches that release an admitted gang.
 *
 * Release order (see reconcile code in cycle.c): the AIJob's status records
 * phase Admitted and the placement FIRST; only then are the pods patched.
 * So an operator killed mid-release finds the placement in the status at
 * restart and re-applies the same one.
 *
 * Each pod gets ONE merge patch that both sets its node hint (node
 * affinity requiredDuringScheduling matchFields metadata.name In [node],
 * annotations aiq.dev/node, aiq.dev/gpu-indexes "0,1" and
 * aiq.dev/gpu-memory-mib) and removes the aiq.dev/admission gate. The API
 * server applies a patch atomically, so no pod is ever ungated without its
 * hint, and releasing an N-pod gang costs N requests (the Kubernetes rule
 * that node affinity may change while a pod is gated is checked against
 * the pod before the patch). All pods of the gang are patched in one pass.
 * A pod that is already ungated is skipped, so release is idempotent.
 *
 * Pure json-c: no I/O. */
#ifndef AIQ_OPERATOR_RELEASE_H
#define AIQ_OPERATOR_RELEASE_H

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "operator/status.h"

#define RELEASE_ANN_NODE "aiq.dev/node"
#define RELEASE_ANN_GPUS "aiq.dev/gpu-indexes"
#define RELEASE_ANN_GPU_MEM "aiq.dev/gpu-memory-mib"

/* Builds the merge patch for one gated pod (borrowed) and its placement
 * (borrowed): annotations, node affinity and the gate removal. Existing
 * nodeSelectorTerms of the pod are kept, each ANDed with our
 * metadata.name requirement (a previous requirement of ours on
 * metadata.name is replaced, so building twice gives the same patch).
 * Other scheduling gates stay; when ours was the only one the patch sets
 * schedulingGates to null. Returns a new object (caller owns) or NULL
 * with err set (AIQ_EINVAL for an empty node name, AIQ_ENOMEM). */
json_object *release_pod_patch(json_object *pod, const struct opst_place *p,
                               aiq_err *err);

/* Writes the GPU indexes as "0,1,3" into buf (cap bytes, cut at cap).
 * Returns buf. */
const char *release_gpu_list(char *buf, size_t cap, const struct opst_place *p);

/* Returns the node a pod is bound to (spec.nodeName), or NULL. */
const char *release_pod_node(json_object *pod);

#endif
