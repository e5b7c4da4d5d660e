/* pod_lean.h -- the part of one of aiq's pods that the operator keeps in
 * its pod cache: only the fields some code reads, so that a queue of
 * gated pods does not cost a whole json-c tree each (every JSON object,
 * even {}, is a hash table of about 700 bytes; a pod from a real API
 * server has dozens).
 *
 * Kept (everything else is dropped):
 *   metadata.name, namespace, uid, resourceVersion, deletionTimestamp,
 *   creationTimestamp             (a growth recovered after a restart
 *                                 times out from its pods' creation)
 *   metadata.labels               whole (aiq.dev/job; a DRA claim copies them all)
 *   metadata.annotations          only the "aiq.dev/" ones (attempt, release
 *                                 placement, stop reason, replicas)
 *   spec.nodeName, spec.schedulingGates, spec.affinity
 *   status.phase, status.startTime
 *   status.conditions             only PodScheduled, and only when it is
 *                                 False with reason Unschedulable (the
 *                                 scheduler's verdict, unsched.c)
 * and, for a bound pod only (spec.nodeName set: an unbound pod holds no
 * capacity, and capacity_others reads nothing else of it):
 *   metadata.ownerReferences      only the controller's
 *   spec.containers[].resources, spec.initContainers[].resources and
 *   .restartPolicy, spec.overhead (foreign.h's request rules)
 *
 * A new field read from a cached pod must be added here; test_pod_lean
 * runs the operator's readers on a pod and on its lean copy. */
#ifndef AIQ_OPERATOR_POD_LEAN_H
#define AIQ_OPERATOR_POD_LEAN_H

#include <json-c/json.h>

#include "operator/jshare.h"

/* Distinct subtrees the operator's pool for lean pods keeps (jshare.h):
 * waiting pods have a handful; a running pod's status (its start time)
 * and a bound pod's spec (its node) are each their own, so the pool lets
 * go of all at this bound and refills with what pods have in common. */
#define POD_LEAN_SHARE_MAX 4096

/* The prefix of the annotations kept. */
#define POD_LEAN_ANN_PREFIX "aiq.dev/"

/* Returns a new object (caller owns it) holding the fields of pod
 * (borrowed, unchanged) listed above; subtrees kept whole are shared
 * with pod by reference, so neither may be changed in place afterwards.
 * With share (may be NULL), the copy's spec, status and
 * metadata.annotations are the pool's when an equal one is there (every
 * waiting gated pod has the same three): shared by every pod that has
 * them, so never changed in place either. NULL on ENOMEM or when pod is
 * not a JSON object. */
json_object *pod_lean(json_object *pod, struct jshare *share);

/* pod_lean for opcache_set_lean: share is a struct jshare * or NULL. */
json_object *pod_lean_cache(json_object *pod, void *share);

#endif
