/* gpu_mech.h -- how a placement reaches the container: the GPU mechanism
 * the admin picks with --gpu-mechanism.
 *
 *   device-plugin  whole GPUs through the NVIDIA device plugin:
 *                  nvidia.com/gpu on the pod. The device plugin picks
 *                  which GPUs; aiq's GPU indexes are informational. A
 *                  shared replica (gpus 0, gpuMemoryMiB set) asks for one
 *                  whole GPU and is placed and counted as one: sharing
 *                  is not possible with whole-GPU requests.
 *   hami           HAMi's requests: nvidia.com/gpu (count), nvidia.com/gpumem
 *                  (MiB per GPU) for a share or nvidia.com/gpumem-percentage
 *                  100 for whole GPUs, and at release the annotation
 *                  nvidia.com/use-gpuuuid naming the placed GPUs' UUIDs,
 *                  read from the node annotation HAMi's device plugin
 *                  publishes (hami.io/node-nvidia-register). Real sharing.
 *   dra            Dynamic Resource Allocation (resource.k8s.io/v1): the
 *                  pod references the ResourceClaim "<pod>-gpu"; at release
 *                  aiq creates that claim selecting exactly the placed
 *                  devices of NVIDIA's DRA driver (gpu.nvidia.com, device
 *                  attribute index, capacity memory), owned by the pod, so
 *                  kube-scheduler allocates exactly those devices. DRA
 *                  devices are exclusive per claim (sharing one device
 *                  between claims needs the alpha DRAConsumableCapacity),
 *                  so a shared replica gets one whole GPU, as with the
 *                  device plugin.
 *
 * Pure json-c: no I/O. */
#ifndef AIQ_OPERATOR_GPU_MECH_H
#define AIQ_OPERATOR_GPU_MECH_H

#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "operator/status.h"

enum gpu_mech {
    GPU_MECH_DEVICE_PLUGIN = 0, /* the default: works wherever GPUs do */
    GPU_MECH_HAMI,
    GPU_MECH_DRA,
};

#define GPU_MECH_RES_GPU "nvidia.com/gpu"
#define GPU_MECH_RES_GPUMEM "nvidia.com/gpumem"
#define GPU_MECH_RES_GPUMEM_PCT "nvidia.com/gpumem-percentage"
#define GPU_MECH_ANN_UUID "nvidia.com/use-gpuuuid"
#define GPU_MECH_HAMI_NODE_ANN "hami.io/node-nvidia-register"
#define GPU_MECH_DRA_DRIVER "gpu.nvidia.com"
#define GPU_MECH_DRA_CLASS "gpu.nvidia.com"
/* The name of the pod's claim entry and the suffix of the claim's name. */
#define GPU_MECH_CLAIM_ENTRY "gpu"
#define GPU_MECH_CLAIM_SUFFIX "-gpu"
#define GPU_MECH_MAX_UUID 96

/* Parses "device-plugin", "hami" or "dra" into *out. Returns 0, or -1
 * (out untouched) for anything else. */
int gpu_mech_parse(const char *s, enum gpu_mech *out);

/* The flag spelling of m. Static string. */
const char *gpu_mech_name(enum gpu_mech m);

/* Whole GPUs one replica holds in aiq's placement and quota under m:
 * r->gpus, except that a shared replica (gpus 0, gpuMemoryMiB > 0) holds
 * one whole GPU under device-plugin and dra. */
int gpu_mech_gpus(enum gpu_mech m, const struct aiq_resources *r);

/* Whether a replica shares a GPU with others under m (only hami). */
int gpu_mech_shares(enum gpu_mech m, const struct aiq_resources *r);

/* Writes the claim name of pod pod_name ("<pod>-gpu") into buf (cap
 * bytes). Returns 0, or -1 when it would pass 253 characters or cap. */
int gpu_mech_claim_name(char *buf, size_t cap, const char *pod_name);

/* Puts the GPU request of job's replica on pod (borrowed, the pod being
 * built: spec.containers must exist) under m: resources on the first
 * container, and for dra spec.resourceClaims plus the container's
 * resources.claims. A job without GPUs (gpus 0, no gpuMemoryMiB) gets
 * nothing. Returns 0, or -1 with err set (AIQ_EINVAL naming the field
 * when the claim name does not fit, AIQ_ENOMEM); the pod may then be
 * half-changed and is the caller's to drop. */
int gpu_mech_pod(json_object *pod, const struct aiq_aijob *job, enum gpu_mech m,
                 aiq_err *err);

/* Reads the UUID of GPU `index` of node (borrowed Node JSON) from HAMi's
 * annotation hami.io/node-nvidia-register: either HAMi's text form
 * "UUID,count,mem,cores,type,numa,healthy[,index,mode]:..." (the device's
 * index is its 9-field index, else its position) or a JSON list of
 * objects with "id" and "index". Writes it into buf (cap bytes).
 * Returns 0, or -1 with err (AIQ_ENOTFOUND when the node has no such
 * annotation or no such GPU, AIQ_EPARSE for a malformed one), naming the
 * node and the annotation. */
int gpu_mech_hami_uuid(json_object *node, int index, char *buf, size_t cap,
                       aiq_err *err);

/* Adds, under m, what the release patch of a pod placed at p carries
 * beyond aiq's own hint: for hami the annotation nvidia.com/use-gpuuuid
 * (comma-separated UUIDs of p's GPUs on node, read as above) into ann
 * (the patch's metadata.annotations, borrowed). node may be NULL when
 * not in the cache (an error for hami). Nothing for the others. Returns
 * 0, or -1 with err set (nothing is added then). */
int gpu_mech_release(json_object *ann, const struct opst_place *p,
                     json_object *node, enum gpu_mech m, aiq_err *err);

/* Builds the ResourceClaim for pod (borrowed; name, namespace, uid and
 * the aiq.dev/job label are read from it) placed at p: one request of
 * exactly p->ngpus devices of class gpu.nvidia.com whose index attribute
 * is one of p's GPU indexes and, when min_mib > 0, whose memory capacity
 * is at least min_mib MiB; owned by the pod (garbage-collected with it).
 * Returns a new object (caller owns), or NULL with err (AIQ_EINVAL for a
 * pod without name/namespace/uid or a placement without GPUs,
 * AIQ_ENOMEM). */
json_object *gpu_mech_claim(json_object *pod, const struct opst_place *p,
                            int64_t min_mib, aiq_err *err);

/* Returns 1 when claim (borrowed ResourceClaim JSON) is owned by the pod
 * with uid pod_uid, else 0. */
int gpu_mech_claim_owned_by(json_object *claim, const char *pod_uid);

#endif
