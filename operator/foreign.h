/* foreign.h -- pods aiq does not run (DaemonSets, inference Deployments,
 * other schedulers' pods), kept as a lean cache of what they hold on
 * their node, so free capacity counts every pod and not only aiq's.
 *
 * The operator watches pods without the aiq.dev/job label (selector
 * "!aiq.dev/job") on a second pod watch; each event is reduced at once to
 * a struct fpod (node, requests, owner) and the JSON dropped. Only pods
 * that hold something are kept: bound to a node (spec.nodeName) and not
 * terminal (phase Succeeded or Failed hold nothing). A pod being deleted
 * still holds until it is gone, as for kube-scheduler.
 *
 * What a pod holds (fpod_read), as kube-scheduler counts requests: per
 * resource, the sum over containers (and restartPolicy Always sidecar
 * init containers) or the largest regular init container, whichever is
 * larger, plus spec.overhead; a container's request is resources.requests
 * or, when absent, resources.limits. Resources read: nvidia.com/gpu,
 * nvidia.com/gpumem (HAMi: MiB per GPU, a shared GPU), cpu, memory.
 * GPU indexes are honoured from the annotation aiq.dev/gpu-indexes
 * ("0,3", the same one aiq writes on its own pods); without it the
 * device plugin's choice is unknown and aiq picks which GPUs to count as
 * taken (foreign_apply). */
#ifndef AIQ_OPERATOR_FOREIGN_H
#define AIQ_OPERATOR_FOREIGN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue/queue.h"

#define FOREIGN_WATCH "foreignpods"            /* the watch's event tag */
#define FOREIGN_SELECTOR "!aiq.dev/job"        /* every pod but aiq's */
#define FOREIGN_ANN_GPUS "aiq.dev/gpu-indexes" /* "0,3": GPUs it holds */

/* What one pod holds on its node. */
struct fpod {
    char *key;              /* "ns/name", owned */
    char *node;             /* spec.nodeName, owned ("" not bound) */
    char *owner;            /* "DaemonSet/dcgm" of the controller, owned ("" none) */
    int64_t gpus;           /* nvidia.com/gpu units (replicas on a time-sliced node) */
    int64_t gpu_mem_mib;    /* nvidia.com/gpumem per GPU, 0 = whole GPUs */
    int64_t cpu_milli, mem_bytes;
    uint64_t gpu_idx;       /* bit i: the annotation names GPU i */
    bool holds;             /* bound and not terminal */
    uint32_t epoch;         /* relist epoch of the last put */
};

/* Reads pod (borrowed) into *p with owned strings (free with
 * fpod_deinit). Returns 0, or -1 for a pod without a name or on ENOMEM
 * (*p then owns nothing). */
int fpod_read(json_object *pod, struct fpod *p);
void fpod_deinit(struct fpod *p);

typedef struct fpods fpods;

/* The cache. NULL on ENOMEM; fpods_free(NULL) does nothing. */
fpods *fpods_create(void);
void fpods_free(fpods *c);

/* Applies a watch event's pod: kept (replacing the old entry, taking
 * p's strings; p is emptied) when it holds something, else removed
 * (p deinit'ed). Returns 0, or -1 on ENOMEM (p deinit'ed, the old entry
 * removed: better counted as free than as stale). */
int fpods_put(fpods *c, struct fpod *p);
/* Removes key's entry; returns 1 when there was one. */
int fpods_del(fpods *c, const char *key);
/* Relist: entries not put between begin and end are dropped; end returns
 * how many. */
void fpods_relist_begin(fpods *c);
size_t fpods_relist_end(fpods *c);

size_t fpods_count(const fpods *c);
/* Calls cb for every entry (unordered); stops at a non-zero return. */
void fpods_each(const fpods *c, int (*cb)(const struct fpod *p, void *ud), void *ud);

/* Counts what p holds against node n (a node of the cycle's queue
 * input): cpu and memory, then the GPUs. The annotated GPUs when the pod
 * names them; else min(units, ngpus) GPUs taken from the most-free ones,
 * highest index first. On a time-sliced node (nvidia.com/gpu.replicas)
 * one unit is a slice of some GPU the device plugin chose, and each unit
 * may be on another GPU, so every unit is counted as a GPU taken: aiq
 * never places a gang on a GPU a foreign pod may be sharing. A gpumem
 * (HAMi) pod adds its MiB to that many GPUs, those with the most free
 * memory, instead of taking them whole. Used memory never passes a GPU's
 * total (the scheduler's view is then simply "full"). Pure. */
void foreign_apply(struct q_node *n, const struct fpod *p);

#endif
