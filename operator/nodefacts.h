/* nodefacts.h -- what aiq knows about one Node's GPUs, read from the
 * labels and resources real GPU clusters carry, and whether the node can
 * be used at all.
 *
 * Read (docs/admin-guide.md, "Node facts", is the user-facing version):
 *   GPUs        status.allocatable["nvidia.com/gpu"] (else capacity)
 *   time-slicing label nvidia.com/gpu.replicas = N > 1: the device plugin
 *               advertises N x the physical GPUs as nvidia.com/gpu; aiq
 *               counts advertised / N physical GPUs (and promises no
 *               isolation between pods sharing one)
 *   MIG, mixed  status.allocatable["nvidia.com/mig-<profile>"]: MIG
 *               devices are their own resources, not nvidia.com/gpu;
 *               aiq does not place on them (listed, never counted)
 *   MIG, single label nvidia.com/mig.strategy = single: nvidia.com/gpu
 *               counts MIG devices; each is an isolated device with the
 *               slice's memory (nvidia.com/gpu.memory), so aiq counts
 *               each as one GPU of that memory
 *   GPU memory  annotation aiq.dev/gpu-memory-mib = "81920,81920,40960"
 *               (MiB per GPU index, one entry per physical GPU: GPUs may
 *               differ within a node), else the label
 *               nvidia.com/gpu.memory (MiB, the same for every GPU, as
 *               GPU feature discovery publishes it)
 *   model       label nvidia.com/gpu.product; pool: label aiq.dev/domain
 *   topology    label aiq.dev/topology (placement factor gang.same_topology)
 *   cpu, memory status.allocatable (else capacity)
 *   schedulable !spec.unschedulable, and not NotReady (node_ready)
 * A node whose facts are missing or inconsistent is excluded with a
 * CamelCase reason and a message naming the field and value; a node
 * without GPUs is fine (it serves CPU-only jobs). */
#ifndef AIQ_OPERATOR_NODEFACTS_H
#define AIQ_OPERATOR_NODEFACTS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "queue/queue.h"

#define NODEFACTS_ANN_GPU_MEMORY "aiq.dev/gpu-memory-mib" /* "MiB,MiB,..." per GPU */
#define NODEFACTS_LABEL_GPU_MEMORY "nvidia.com/gpu.memory" /* MiB per GPU */
#define NODEFACTS_LABEL_GPU_PRODUCT "nvidia.com/gpu.product"
#define NODEFACTS_LABEL_REPLICAS "nvidia.com/gpu.replicas"
#define NODEFACTS_LABEL_MIG_STRATEGY "nvidia.com/mig.strategy"
#define NODEFACTS_LABEL_DOMAIN "aiq.dev/domain"
#define NODEFACTS_LABEL_TOPOLOGY "aiq.dev/topology" /* NVLink block, NUMA or rack */
#define NODEFACTS_RES_GPU "nvidia.com/gpu"
#define NODEFACTS_RES_MIG_PREFIX "nvidia.com/mig-"

/* Why a node is left out. Append only (the names are metric labels). */
typedef enum {
    NODEX_NONE = 0,
    NODEX_BAD_GPU_COUNT,        /* nvidia.com/gpu unreadable */
    NODEX_MISSING_GPU_MEMORY,   /* GPUs but no memory label/annotation */
    NODEX_BAD_GPU_MEMORY,       /* memory not a positive MiB number */
    NODEX_GPU_MEMORY_COUNT,     /* the per-GPU list has the wrong length */
    NODEX_BAD_REPLICAS,         /* gpu.replicas unreadable or not dividing */
    NODEX_TOO_MANY_GPUS,        /* more physical GPUs than Q_MAX_GPUS */
    NODEX__N
} nodex;

struct node_facts {
    struct q_node q;       /* the queue's view (strings borrowed from the node) */
    nodex excluded;        /* NODEX_NONE: usable */
    char message[256];     /* why excluded, naming the field and value */
    int advertised;        /* nvidia.com/gpu allocatable as the node reports it */
    int replicas;          /* time-slicing replicas per GPU, 1 = none */
    bool mig_single;       /* nvidia.com/gpu counts MIG devices */
    char mig[160];         /* mixed MIG resources "1g.10gb=7 2g.20gb=1" ("" none) */
};

/* Reads node (borrowed; f's strings point into it) into f. Returns 0 when
 * the node has a name (f->excluded says whether it can be used), -1 for
 * a node without metadata.name. */
int node_facts_read(json_object *node, struct node_facts *f);

/* Tells whether node (borrowed) is Ready: false when its Ready condition
 * says anything but "True" (False, Unknown: kubelet stopped reporting);
 * a node without a Ready condition (not reported yet) counts as ready.
 * *since (may be NULL) gets the condition's lastTransitionTime (unix s,
 * 0 unknown) and *why its reason (NULL none), both only when not ready. */
bool node_ready(json_object *node, double *since, const char **why);

/* CamelCase name of a reason ("MissingGPUMemory"), "" for NODEX_NONE. */
const char *nodex_name(nodex x);

#endif
