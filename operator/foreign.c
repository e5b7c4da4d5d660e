/* foreign.c -- the lean cache of pods aiq does not run: reading what a
 * pod holds (kube-scheduler's request rules), a chained hash table keyed
 * by "ns/name" with relist epochs, and counting a pod against its node
 * (foreign.h). */
#include "operator/foreign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/json.h"
#include "common/units.h"

/* ---- reading a pod ----------------------------------------------------------- */

enum { FR_GPU, FR_GPUMEM, FR_CPU, FR_MEM, FR__N };
static const char *const fr_names[FR__N] = {"nvidia.com/gpu", "nvidia.com/gpumem", "cpu",
                                            "memory"};

/* One quantity of resource r; 0 when absent or unreadable (a pod the API
 * server admitted has valid quantities). */
static int64_t fp_qty(json_object *list, int r) {
    const char *s = aiq_jstr(list, fr_names[r]);
    int64_t v = 0;
    if (!s)
        return 0;
    aiq_rc rc = r == FR_CPU ? aiq_quantity_cpu_milli(s, &v, NULL)
                : r == FR_MEM ? aiq_quantity_bytes(s, &v, NULL)
                              : aiq_quantity_int(s, &v, NULL);
    return rc == AIQ_OK && v > 0 ? v : 0;
}

/* A container's requests (else limits) into v. */
static void fp_container(json_object *c, int64_t *v) {
    json_object *res = aiq_jget(c, "resources");
    json_object *req = aiq_jget(res, "requests"), *lim = aiq_jget(res, "limits");
    for (int r = 0; r < FR__N; r++)
        v[r] = aiq_jget(req, fr_names[r]) ? fp_qty(req, r) : fp_qty(lim, r);
}

/* The pod's effective requests (see foreign.h) into v. */
static void fp_requests(json_object *spec, int64_t *v) {
    int64_t sum[FR__N] = {0}, init_max[FR__N] = {0}, c[FR__N];
    json_object *cs = aiq_jget(spec, "containers"), *ics = aiq_jget(spec, "initContainers");
    for (size_t i = 0; cs && json_object_is_type(cs, json_type_array) &&
                       i < json_object_array_length(cs); i++) {
        fp_container(json_object_array_get_idx(cs, i), c);
        for (int r = 0; r < FR__N; r++)
            sum[r] += c[r];
    }
    for (size_t i = 0; ics && json_object_is_type(ics, json_type_array) &&
                       i < json_object_array_length(ics); i++) {
        json_object *ic = json_object_array_get_idx(ics, i);
        const char *rp = aiq_jstr(ic, "restartPolicy");
        fp_container(ic, c);
        for (int r = 0; r < FR__N; r++) {
            if (rp && strcmp(rp, "Always") == 0)
                sum[r] += c[r]; /* a sidecar runs beside the containers */
            else if (c[r] > init_max[r])
                init_max[r] = c[r];
        }
    }
    json_object *ov = aiq_jget(spec, "overhead");
    for (int r = 0; r < FR__N; r++)
        v[r] = (sum[r] > init_max[r] ? sum[r] : init_max[r]) + fp_qty(ov, r);
}

/* Bits of the GPU indexes "0,3" names; 0 when absent or malformed (the
 * pod is then counted without indexes). */
static uint64_t fp_indexes(const char *s) {
    uint64_t m = 0;
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p;) {
        char *end = NULL;
        long g = strtol(p, &end, 10);
        if (end == p || g < 0 || g >= 64)
            return 0;
        m |= 1ull << g;
        if (*end == '\0')
            break;
        if (*end != ',')
            return 0;
        p = end + 1;
    }
    return m;
}

static char *fp_dup(const char *s) {
    return strdup(s ? s : "");
}

/* Reads a pod; see foreign.h. */
int fpod_read(json_object *pod, struct fpod *p) {
    memset(p, 0, sizeof *p);
    json_object *meta = aiq_jget(pod, "metadata"), *spec = aiq_jget(pod, "spec");
    const char *name = aiq_jstr(meta, "name"), *ns = aiq_jstr(meta, "namespace");
    if (!name || !*name)
        return -1;
    char key[520];
    snprintf(key, sizeof key, "%s/%s", ns ? ns : "", name);
    char owner[160] = "";
    json_object *refs = aiq_jget(meta, "ownerReferences");
    for (size_t i = 0; refs && json_object_is_type(refs, json_type_array) &&
                       i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i), *ctl = aiq_jget(r, "controller");
        if (ctl && json_object_get_boolean(ctl)) {
            snprintf(owner, sizeof owner, "%.60s/%.90s", aiq_jstr(r, "kind") ? aiq_jstr(r, "kind") : "",
                     aiq_jstr(r, "name") ? aiq_jstr(r, "name") : "");
            break;
        }
    }
    const char *node = aiq_jstr(spec, "nodeName");
    const char *phase = aiq_jstr(aiq_jget(pod, "status"), "phase");
    p->key = fp_dup(key);
    p->node = fp_dup(node);
    p->owner = fp_dup(owner);
    if (!p->key || !p->node || !p->owner) {
        fpod_deinit(p);
        return -1;
    }
    p->holds = node && *node &&
               !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
    int64_t v[FR__N];
    fp_requests(spec, v);
    p->gpus = v[FR_GPU];
    p->gpu_mem_mib = v[FR_GPUMEM];
    p->cpu_milli = v[FR_CPU];
    p->mem_bytes = v[FR_MEM];
    p->gpu_idx = fp_indexes(aiq_jstr(aiq_jget(meta, "annotations"), FOREIGN_ANN_GPUS));
    return 0;
}

void fpod_deinit(struct fpod *p) {
    if (!p)
        return;
    free(p->key);
    free(p->node);
    free(p->owner);
    memset(p, 0, sizeof *p);
}

/* ---- the cache ------------------------------------------------------------------ */

struct fp_ent {
    struct fpod p;
    struct fp_ent *next;
};

struct fpods {
    struct fp_ent **b;
    size_t nb, n;   /* nb: power of two */
    uint32_t epoch;
};

static size_t fp_hash(const char *s, size_t nb) {
    uint64_t h = aiq_fnv_cstr(AIQ_FNV_TABLE_SEED, s);
    return (size_t)(h ^ (h >> 29)) & (nb - 1);
}

fpods *fpods_create(void) {
    fpods *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->nb = 256;
    c->b = calloc(c->nb, sizeof *c->b);
    if (!c->b) {
        free(c);
        return NULL;
    }
    return c;
}

void fpods_free(fpods *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->nb; i++)
        for (struct fp_ent *e = c->b[i], *nx; e; e = nx) {
            nx = e->next;
            fpod_deinit(&e->p);
            free(e);
        }
    free(c->b);
    free(c);
}

/* Doubles the buckets when the table is full; a failed grow is harmless
 * (longer chains). */
static void fp_grow(fpods *c) {
    if (c->n < c->nb)
        return;
    size_t nb = c->nb * 2;
    struct fp_ent **b = calloc(nb, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < c->nb; i++)
        for (struct fp_ent *e = c->b[i], *nx; e; e = nx) {
            nx = e->next;
            size_t h = fp_hash(e->p.key, nb);
            e->next = b[h];
            b[h] = e;
        }
    free(c->b);
    c->b = b;
    c->nb = nb;
}

int fpods_del(fpods *c, const char *key) {
    for (struct fp_ent **pp = &c->b[fp_hash(key, c->nb)]; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->p.key, key) == 0) {
            struct fp_ent *e = *pp;
            *pp = e->next;
            fpod_deinit(&e->p);
            free(e);
            c->n--;
            return 1;
        }
    return 0;
}

int fpods_put(fpods *c, struct fpod *p) {
    if (!p->holds) {
        fpods_del(c, p->key);
        fpod_deinit(p);
        return 0;
    }
    for (struct fp_ent *e = c->b[fp_hash(p->key, c->nb)]; e; e = e->next)
        if (strcmp(e->p.key, p->key) == 0) {
            fpod_deinit(&e->p);
            e->p = *p;
            e->p.epoch = c->epoch;
            memset(p, 0, sizeof *p);
            return 0;
        }
    struct fp_ent *e = calloc(1, sizeof *e);
    if (!e) {
        fpods_del(c, p->key);
        fpod_deinit(p);
        return -1;
    }
    fp_grow(c);
    e->p = *p;
    e->p.epoch = c->epoch;
    memset(p, 0, sizeof *p);
    size_t h = fp_hash(e->p.key, c->nb);
    e->next = c->b[h];
    c->b[h] = e;
    c->n++;
    return 0;
}

void fpods_relist_begin(fpods *c) {
    c->epoch++;
}

size_t fpods_relist_end(fpods *c) {
    size_t dropped = 0;
    for (size_t i = 0; i < c->nb; i++)
        for (struct fp_ent **pp = &c->b[i]; *pp;) {
            struct fp_ent *e = *pp;
            if (e->p.epoch == c->epoch) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            fpod_deinit(&e->p);
            free(e);
            c->n--;
            dropped++;
        }
    return dropped;
}

size_t fpods_count(const fpods *c) {
    return c ? c->n : 0;
}

void fpods_each(const fpods *c, int (*cb)(const struct fpod *p, void *ud), void *ud) {
    for (size_t i = 0; c && i < c->nb; i++)
        for (const struct fp_ent *e = c->b[i]; e; e = e->next)
            if (cb(&e->p, ud) != 0)
                return;
}

/* ---- counting a pod against its node ------------------------------------------- */

/* Index of the GPU with the most free memory not in `taken` (highest
 * index on ties), -1 when none is left. */
static int fp_most_free(const struct q_node *n, uint64_t taken) {
    int best = -1;
    int64_t bf = -1;
    for (int g = n->ngpus - 1; g >= 0; g--) {
        int64_t f = n->gpu_mem_total[g] - n->gpu_mem_used[g];
        if (!((taken >> g) & 1) && f > bf) {
            bf = f;
            best = g;
        }
    }
    return best;
}

static void fp_hold(struct q_node *n, int g, int64_t mib) {
    int64_t room = n->gpu_mem_total[g] - n->gpu_mem_used[g];
    n->gpu_mem_used[g] += mib < 0 || mib > room ? room : mib;
}

void foreign_apply(struct q_node *n, const struct fpod *p) {
    n->cpu_used += p->cpu_milli;
    n->mem_used += p->mem_bytes;
    if (p->gpus <= 0 || n->ngpus <= 0)
        return;
    /* -1: the whole GPU. */
    int64_t each = p->gpu_mem_mib > 0 ? p->gpu_mem_mib : -1;
    uint64_t idx = p->gpu_idx;
    if (n->ngpus < 64)
        idx &= (1ull << n->ngpus) - 1;
    if (idx) {
        for (int g = 0; g < n->ngpus; g++)
            if ((idx >> g) & 1)
                fp_hold(n, g, each);
        return;
    }
    int64_t k = p->gpus < n->ngpus ? p->gpus : n->ngpus;
    uint64_t taken = 0;
    for (int64_t i = 0; i < k; i++) {
        int g = fp_most_free(n, taken);
        if (g < 0)
            break;
        taken |= 1ull << g;
        fp_hold(n, g, each);
    }
}
