/* nodefacts.c -- a Node's GPU facts (count, time-slicing replicas, MIG,
 * memory per GPU, model, pool, cpu, memory) and the reason a node is
 * left out when they are missing or inconsistent (nodefacts.h). */
#include "operator/nodefacts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/units.h"
#include "operator/status.h"

static const char *nf_str(json_object *node, const char *sect, const char *key) {
    return aiq_jstr(aiq_jget(aiq_jget(node, "metadata"), sect), key);
}

/* status.allocatable, else status.capacity (an object), or NULL. */
static json_object *nf_resources(json_object *node) {
    json_object *st = NULL, *a = NULL;
    if (!json_object_object_get_ex(node, "status", &st))
        return NULL;
    if (json_object_object_get_ex(st, "allocatable", &a) && json_object_is_type(a, json_type_object))
        return a;
    if (json_object_object_get_ex(st, "capacity", &a) && json_object_is_type(a, json_type_object))
        return a;
    return NULL;
}

static const char *nf_res(json_object *res, const char *name) {
    return aiq_jstr(res, name);
}

__attribute__((format(printf, 3, 4)))
static int nf_exclude(struct node_facts *f, nodex x, const char *fmt, ...) {
    va_list ap;
    f->excluded = x;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return 0;
}

/* Lists the mixed-strategy MIG resources into f->mig. */
static void nf_mig(json_object *res, struct node_facts *f) {
    size_t pl = strlen(NODEFACTS_RES_MIG_PREFIX), used = 0;
    if (!res)
        return;
    json_object_object_foreach(res, k, v) {
        int64_t n = 0;
        if (strncmp(k, NODEFACTS_RES_MIG_PREFIX, pl) != 0 || !json_object_is_type(v, json_type_string) ||
            aiq_quantity_int(json_object_get_string(v), &n, NULL) != AIQ_OK || n <= 0)
            continue;
        int w = snprintf(f->mig + used, sizeof f->mig - used, "%s%s=%lld", used ? " " : "",
                         k + pl, (long long)n);
        if (w < 0 || (size_t)w >= sizeof f->mig - used)
            break; /* listed for people only: a long list is cut */
        used += (size_t)w;
    }
}

/* GPU memory per GPU: the per-GPU annotation, else the label. Returns 0
 * (f->excluded set on a problem). */
static int nf_memory(json_object *node, struct node_facts *f) {
    struct q_node *q = &f->q;
    const char *list = nf_str(node, "annotations", NODEFACTS_ANN_GPU_MEMORY);
    if (list) {
        int n = 0;
        const char *p = list;
        char item[32];
        while (*p) {
            const char *c = strchr(p, ',');
            size_t len = c ? (size_t)(c - p) : strlen(p);
            int64_t mib = 0;
            snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
            if (len >= sizeof item || aiq_quantity_int(item, &mib, NULL) != AIQ_OK || mib <= 0)
                return nf_exclude(f, NODEX_BAD_GPU_MEMORY,
                                  "annotation " NODEFACTS_ANN_GPU_MEMORY
                                  " \"%.120s\": entry %d is not a positive MiB number",
                                  list, n);
            if (n < Q_MAX_GPUS)
                q->gpu_mem_total[n] = mib;
            n++;
            if (!c)
                break;
            p = c + 1;
        }
        if (n != q->ngpus)
            return nf_exclude(f, NODEX_GPU_MEMORY_COUNT,
                              "annotation " NODEFACTS_ANN_GPU_MEMORY " has %d entr%s, the node "
                              "has %d physical GPUs", n, n == 1 ? "y" : "ies", q->ngpus);
        return 0;
    }
    const char *mem = nf_str(node, "labels", NODEFACTS_LABEL_GPU_MEMORY);
    int64_t mib = 0;
    if (!mem)
        return nf_exclude(f, NODEX_MISSING_GPU_MEMORY,
                          NODEFACTS_RES_GPU ": %d GPUs but no label " NODEFACTS_LABEL_GPU_MEMORY
                          " nor annotation " NODEFACTS_ANN_GPU_MEMORY, q->ngpus);
    if (aiq_quantity_int(mem, &mib, NULL) != AIQ_OK || mib <= 0)
        return nf_exclude(f, NODEX_BAD_GPU_MEMORY,
                          "label " NODEFACTS_LABEL_GPU_MEMORY " \"%.60s\" is not a positive MiB "
                          "number", mem);
    for (int i = 0; i < q->ngpus; i++)
        q->gpu_mem_total[i] = mib;
    return 0;
}

/* GPU count and time-slicing replicas. Returns 0 (f->excluded set on a
 * problem). */
static int nf_gpus(json_object *node, json_object *res, struct node_facts *f) {
    const char *g = nf_res(res, NODEFACTS_RES_GPU);
    int64_t adv = 0, rep = 1;
    if (g && (aiq_quantity_int(g, &adv, NULL) != AIQ_OK || adv < 0 || adv > 1000000))
        return nf_exclude(f, NODEX_BAD_GPU_COUNT,
                          NODEFACTS_RES_GPU " \"%.60s\" is not a GPU count", g);
    f->advertised = (int)adv;
    const char *r = nf_str(node, "labels", NODEFACTS_LABEL_REPLICAS);
    if (r && (aiq_quantity_int(r, &rep, NULL) != AIQ_OK || rep < 1 || rep > 1000000))
        return nf_exclude(f, NODEX_BAD_REPLICAS,
                          "label " NODEFACTS_LABEL_REPLICAS " \"%.60s\" is not a positive "
                          "count", r);
    f->replicas = (int)rep;
    if (adv % rep != 0)
        return nf_exclude(f, NODEX_BAD_REPLICAS,
                          NODEFACTS_RES_GPU " %lld is not a multiple of label "
                          NODEFACTS_LABEL_REPLICAS " %lld (time-slicing replicas per GPU)",
                          (long long)adv, (long long)rep);
    int64_t phys = adv / rep;
    if (phys > Q_MAX_GPUS)
        return nf_exclude(f, NODEX_TOO_MANY_GPUS,
                          NODEFACTS_RES_GPU ": %lld physical GPUs, aiq handles at most %d "
                          "per node", (long long)phys, Q_MAX_GPUS);
    f->q.ngpus = (int)phys;
    return 0;
}

/* Reads a node; see nodefacts.h. */
int node_facts_read(json_object *node, struct node_facts *f) {
    memset(f, 0, sizeof *f);
    f->replicas = 1;
    struct q_node *q = &f->q;
    json_object *m = NULL, *n = NULL;
    if (!json_object_object_get_ex(node, "metadata", &m) ||
        !json_object_object_get_ex(m, "name", &n) || !json_object_is_type(n, json_type_string) ||
        !*json_object_get_string(n))
        return -1;
    q->name = json_object_get_string(n);
    q->domain = nf_str(node, "labels", NODEFACTS_LABEL_DOMAIN);
    q->topology = nf_str(node, "labels", NODEFACTS_LABEL_TOPOLOGY);
    q->gpu_model = nf_str(node, "labels", NODEFACTS_LABEL_GPU_PRODUCT);
    const char *strat = nf_str(node, "labels", NODEFACTS_LABEL_MIG_STRATEGY);
    f->mig_single = strat && strcmp(strat, "single") == 0;
    json_object *res = nf_resources(node);
    nf_mig(res, f);
    const char *cpu = nf_res(res, "cpu");
    if (!cpu || aiq_quantity_cpu_milli(cpu, &q->cpu_alloc, NULL) != AIQ_OK)
        q->cpu_alloc = 0;
    const char *mem = nf_res(res, "memory");
    if (!mem || aiq_quantity_bytes(mem, &q->mem_alloc, NULL) != AIQ_OK)
        q->mem_alloc = 0;
    json_object *spec = NULL, *u = NULL;
    /* A NotReady node is not placed on: kube-scheduler would not either
     * (the node-lifecycle controller taints it not-ready/unreachable). */
    q->schedulable = !(json_object_object_get_ex(node, "spec", &spec) &&
                       json_object_object_get_ex(spec, "unschedulable", &u) &&
                       json_object_get_boolean(u)) &&
                     node_ready(node, NULL, NULL);
    nf_gpus(node, res, f);
    if (!f->excluded && q->ngpus > 0)
        nf_memory(node, f);
    if (f->excluded)
        q->ngpus = 0;
    return 0;
}

/* See nodefacts.h. */
bool node_ready(json_object *node, double *since, const char **why) {
    json_object *st = NULL, *conds = NULL;
    if (!json_object_object_get_ex(node, "status", &st) ||
        !json_object_object_get_ex(st, "conditions", &conds) ||
        !json_object_is_type(conds, json_type_array))
        return true;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i), *t = NULL, *v = NULL, *x = NULL;
        if (!json_object_object_get_ex(c, "type", &t) ||
            strcmp(json_object_get_string(t), "Ready") != 0)
            continue;
        if (json_object_object_get_ex(c, "status", &v) &&
            strcmp(json_object_get_string(v), "True") == 0)
            return true;
        if (since)
            *since = json_object_object_get_ex(c, "lastTransitionTime", &x)
                         ? opst_parse_time(json_object_get_string(x)) : 0;
        if (why)
            *why = json_object_object_get_ex(c, "reason", &x) ? json_object_get_string(x) : NULL;
        return false;
    }
    return true;
}

const char *nodex_name(nodex x) {
    static const char *const names[NODEX__N] = {
        [NODEX_NONE] = "",
        [NODEX_BAD_GPU_COUNT] = "BadGPUCount",
        [NODEX_MISSING_GPU_MEMORY] = "MissingGPUMemory",
        [NODEX_BAD_GPU_MEMORY] = "BadGPUMemory",
        [NODEX_GPU_MEMORY_COUNT] = "GPUMemoryCountMismatch",
        [NODEX_BAD_REPLICAS] = "BadGPUReplicas",
        [NODEX_TOO_MANY_GPUS] = "TooManyGPUs",
    };
    return x >= 0 && x < NODEX__N ? names[x] : "Unknown";
}
