/* pods.h -- builds the gated pods of an AIJob from its pod template.
 *
 * Pod i of job J is named "J-i" (deterministic, so a restarted operator
 * that creates it again gets 409 AlreadyExists instead of a duplicate).
 * Each pod carries the scheduling gate aiq.dev/admission, an owner
 * reference to the AIJob (controller, blockOwnerDeletion), the labels
 * aiq.dev/job and aiq.dev/replica-index, env AIQ_JOB_NAME,
 * AIQ_REPLICA_INDEX and AIQ_REPLICA_COUNT, on its first container the
 * cpu/memory requests from spec.resources, and the GPU request of the
 * admin's mechanism (gpu_mech.h: nvidia.com/gpu, HAMi's resources, or a
 * DRA ResourceClaim reference). The
 * reconciler stamps each pod with the attempt it is for (aiq.dev/attempt),
 * so a pod recreated for the next attempt is never taken for one of the
 * attempt the status still shows. */
#ifndef AIQ_OPERATOR_PODS_H
#define AIQ_OPERATOR_PODS_H

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "operator/gpu_mech.h"

#define PODS_LABEL_JOB "aiq.dev/job"
#define PODS_LABEL_INDEX "aiq.dev/replica-index"
#define PODS_SIM_PREFIX "sim.aiq.dev/"
/* The attempt a pod was created for (annotation, set by the reconciler). */
#define PODS_ANN_ATTEMPT "aiq.dev/attempt"

/* Writes "<job>-<index>" into buf (cap bytes). Returns 0, or -1 when the
 * name does not fit in cap or passes 253 characters (buf then holds ""). */
int pods_name(char *buf, size_t cap, const char *job, int index);

/* Refuses a template whose pod spec (tspec, borrowed; NULL or not an
 * object passes) sets a field that carries the queue's decisions:
 * spec.nodeName, spec.schedulingGates, spec.resourceClaims, container
 * resources.claims, or any extended resource (a name with a domain, such
 * as nvidia.com/gpu or amd.com/gpu) in the pod's or any container's or
 * init container's resources.limits/requests. Returns 0, or -1 with err
 * (AIQ_EINVAL) naming the field as "spec.template.spec.<path>: why". The
 * CRD's validation rules refuse the same fields at the API server; this
 * is the check that holds when they were bypassed. */
int pods_template_check(json_object *tspec, aiq_err *err);

/* Builds pod `index` (0 <= index < spec.replicas) of job as a new json-c
 * object (caller owns it; json_object_put). job is borrowed and must
 * carry meta.name, meta.namespace_ and meta.uid. job_annotations is the
 * AIJob's own metadata.annotations (borrowed, may be NULL): its
 * "sim.aiq.dev/..." entries are copied onto the pod, after the template's
 * annotations, so a test can steer the simulated kubelet per job.
 * The template is checked first (pods_template_check).
 * Returns NULL and fills err (AIQ_EINVAL with the field, or AIQ_EPARSE for
 * a template that is not a JSON object, or AIQ_ENOMEM). mech is the GPU
 * mechanism (see gpu_mech_pod). */
json_object *pods_build(const struct aiq_aijob *job,
                        json_object *job_annotations, int index,
                        enum gpu_mech mech, aiq_err *err);

/* Drops from an AIJob's metadata.annotations (meta: its metadata object,
 * which the caller owns and may change; NULL is a no-op) every entry
 * pods_build does not read, that is all but the "sim.aiq.dev/" ones, and
 * the annotations object itself when none is left. A job applied with
 * kubectl carries its whole manifest, template included, as the
 * last-applied-configuration annotation: the operator's cache of every
 * AIJob would otherwise keep it. Returns how many entries went. */
int pods_job_annotations_trim(json_object *meta);

/* Returns the replica index a pod's aiq.dev/replica-index label names, or
 * -1 when the label is absent or not a number in 0..AIQ_MAX_REPLICAS-1. */
int pods_replica_index(json_object *pod);

/* Returns 1 when the pod (json) still has the aiq.dev/admission gate,
 * else 0. */
int pods_is_gated(json_object *pod);

/* Stamps the pod with the attempt (>= 1) it is created for. Returns 0, or
 * -1 on ENOMEM. */
int pods_set_attempt(json_object *pod, int attempt);

/* The attempt the pod was created for, or 0 when it carries no readable
 * aiq.dev/attempt annotation (a pod made before the annotation existed). */
int pods_attempt(json_object *pod);

/* What a job's sync reads of each of its pods on every event about the
 * job, packed into one number: the pod cache keeps it at every put
 * (opcache_set_facts), so that a frozen pod is not parsed back for it.
 * The gate (pods_is_gated), the attempt (pods_attempt) and status.phase. */
enum pod_phase {
    POD_PHASE_NONE = 0, /* no status.phase */
    POD_PHASE_PENDING,
    POD_PHASE_RUNNING,
    POD_PHASE_SUCCEEDED,
    POD_PHASE_FAILED,
    POD_PHASE_OTHER     /* Unknown, or anything else */
};
uint64_t pods_facts(json_object *pod);
static inline int pods_facts_gated(uint64_t f) {
    return (int)(f & 1);
}
static inline enum pod_phase pods_facts_phase(uint64_t f) {
    return (enum pod_phase)((f >> 1) & 7);
}
static inline int pods_facts_attempt(uint64_t f) {
    return (int)(f >> 8); /* pods_attempt's range, 0..1000000, fits */
}

#endif
