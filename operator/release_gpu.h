/* release_gpu.h -- what the admin's GPU mechanism (gpu_mech.h) needs done
 * when a pod is released, before its gate goes:
 *   hami  the release patch gains nvidia.com/use-gpuuuid with the UUIDs
 *         of the placed GPUs (from the node's hami.io/node-nvidia-register);
 *   dra   the pod's ResourceClaim "<pod>-gpu" is created (POST
 *         resource.k8s.io/v1), selecting exactly the placed devices and
 *         owned by the pod, so the scheduler allocates those and the
 *         garbage collector removes the claim with the pod.
 * A pod whose mechanism step fails is not released this time (fail
 * closed: never ungated without its devices pinned); the release is
 * retried on the next cycle and the start timeout bounds the wait. */
#ifndef AIQ_OPERATOR_RELEASE_GPU_H
#define AIQ_OPERATOR_RELEASE_GPU_H

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "operator/server.h"

/* Does the mechanism's step for gated pod (borrowed) of job j placed at
 * pl; patch (borrowed) is its release patch (release_pod_patch) and may
 * gain annotations. Talks to the API server for dra. Returns 0, or -1
 * with err set (the pod must not be released). */
int release_gpu_prepare(struct server *s, json_object *pod, const struct opst_place *pl,
                        const struct aiq_aijob *j, json_object *patch, aiq_err *err);

#endif
