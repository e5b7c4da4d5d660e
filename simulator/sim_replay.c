/* sim_replay.c -- the decision journal read back and replayed. A journal
 * (the store's JSON-lines export, or the store itself) gives the
 * workload: node events make the cluster, job arrivals (the AIJob spec)
 * the jobs, departures the real end times and runtimes, decisions the
 * cycle times and what was decided. The exact replay runs the queue core
 * at the recorded cycle times with the recorded departures and compares
 * every decision; the what-if runs the same jobs, with their recorded
 * runtimes, under another policy in simulated time. */
#include "simulator/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/fnv.h"
#include "common/json.h"
#include "common/units.h"
#include "simulator/sim_int.h"

/* Longest journal line accepted (a payload is at most STORE_MAX_JSON). */
#define SIM_MAX_JLINE (4 * STORE_MAX_JSON)

/* uid -> job index (open addressing over the trace's ids). */
struct umap {
    int32_t *slot;
    size_t cap;
};

static uint64_t h__(const char *s) {
    return aiq_fnv_cstr(AIQ_FNV_TABLE_SEED, s);
}

static int umap_find(const struct umap *m, const struct sim_trace *tr, const char *uid) {
    if (!m->slot || !uid)
        return -1;
    size_t k = (size_t)h__(uid) & (m->cap - 1);
    while (m->slot[k] >= 0) {
        if (strcmp(tr->jobs[m->slot[k]].id, uid) == 0)
            return m->slot[k];
        k = (k + 1) & (m->cap - 1);
    }
    return -1;
}

static int umap_put(struct umap *m, const struct sim_trace *tr, int idx) {
    if ((size_t)(idx + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        int32_t *ns = malloc(nc * sizeof *ns);
        if (!ns)
            return -1;
        memset(ns, 0xff, nc * sizeof *ns);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i] >= 0) {
                size_t k = (size_t)h__(tr->jobs[m->slot[i]].id) & (nc - 1);
                while (ns[k] >= 0)
                    k = (k + 1) & (nc - 1);
                ns[k] = m->slot[i];
            }
        free(m->slot);
        m->slot = ns;
        m->cap = nc;
    }
    size_t k = (size_t)h__(tr->jobs[idx].id) & (m->cap - 1);
    while (m->slot[k] >= 0)
        k = (k + 1) & (m->cap - 1);
    m->slot[k] = idx;
    return 0;
}

/* Points uid's entry at idx (a requeued job's newest attempt). */
static void umap_repoint(struct umap *m, const struct sim_trace *tr, const char *uid, int idx) {
    if (!m->slot)
        return;
    size_t k = (size_t)h__(uid) & (m->cap - 1);
    while (m->slot[k] >= 0) {
        if (strcmp(tr->jobs[m->slot[k]].id, uid) == 0) {
            m->slot[k] = idx;
            return;
        }
        k = (k + 1) & (m->cap - 1);
    }
}

/* A number field that must lie in [lo, hi] (def when absent); sets *bad
 * to the field's name when it is out of range or not finite. */
static double gnum_in(json_object *o, const char *k, double lo, double hi, double def,
                      const char **bad) {
    json_object *x = aiq_jget(o, k);
    if (!x || !(json_object_is_type(x, json_type_double) || json_object_is_type(x, json_type_int)))
        return def;
    double v = json_object_get_double(x);
    if (!isfinite(v) || v < lo || v > hi) {
        if (!*bad)
            *bad = k;
        return def;
    }
    return v;
}

/* The error of an arrival whose field bad is out of range. */
static aiq_rc arrival_out_of_range(aiq_err *err, const char *path, int line,
                                   const struct sim_job *j, const char *bad) {
    return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_arrival %.64s: '%s' out of range", path,
                       line, j->id, bad);
}

/* An arrival's sizes: priority, replicas, what each replica asks of its
 * GPUs, the recorded runtime and *est (the journaled estimate, -1 when
 * there is none). Returns the first field out of range, or NULL. */
static const char *arrival_sizes(json_object *p, json_object *spec, json_object *res,
                                 struct sim_job *j, double *est) {
    const char *bad = NULL;
    j->priority = (int)gnum_in(spec, "priority", 0, 1000000, 0, &bad);
    j->replicas = (int)gnum_in(spec, "replicas", 1, AIQ_MAX_REPLICAS, 1, &bad);
    j->gpus = (int)gnum_in(res, "gpus", 0, AIQ_MAX_GPUS_PER_REPLICA, 0, &bad);
    j->gpu_mem_mib = (int64_t)gnum_in(res, "gpuMemoryMiB", 0, 1 << 20, 0, &bad);
    j->gpu_milli = (int)gnum_in(res, "gpuMilli", 0, 999, 0, &bad);
    /* The operator journals the spec as written: gpuMemory ("40Gi") or
     * the deprecated gpuMemoryMiB above (never both: it rejects that). */
    const char *gm = aiq_jstr(res, "gpuMemory");
    if (gm) {
        aiq_err me;
        aiq_err_clear(&me);
        if (aiq_quantity_mib(gm, &j->gpu_mem_mib, &me) != AIQ_OK || j->gpu_mem_mib > (1 << 20))
            bad = "gpuMemory";
    }
    j->duration_s = gnum_in(p, "duration_s", 0, 1e10, 0, &bad);
    *est = gnum_in(p, "estimate_s", 0, 1e10, -1, &bad);
    return bad;
}

/* An arrival's elastic range and checkpoint interval, checked. */
static aiq_rc arrival_elastic(json_object *p, json_object *spec, struct sim_job *j,
                              const char *path, int line, aiq_err *err) {
    const char *bad = NULL, *q;
    j->min_replicas = (int)gnum_in(spec, "minReplicas", 1, AIQ_MAX_REPLICAS, 0, &bad);
    j->max_replicas = (int)gnum_in(spec, "maxReplicas", 1, AIQ_MAX_REPLICAS, 0, &bad);
    json_object *ck = aiq_jget(spec, "checkpointable");
    if (ck && json_object_get_boolean(ck)) {
        /* the exact number when the journal has it, else the spec's text */
        j->checkpoint_s = gnum_in(p, "checkpoint_s", 0, 1e9, 0, &bad);
        if (j->checkpoint_s <= 0 && (q = aiq_jstr(spec, "checkpointInterval")) &&
            aiq_duration_parse(q, &j->checkpoint_s, NULL) != AIQ_OK)
            return aiq_err_set(err, AIQ_EPARSE, "%s:%d: spec.checkpointInterval: bad duration "
                               "'%.64s'", path, line, q);
    }
    if (bad)
        return arrival_out_of_range(err, path, line, j, bad);
    if ((j->min_replicas > 0) != (j->max_replicas > 0) || j->min_replicas > j->max_replicas)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_arrival %.64s: minReplicas %d, "
                           "maxReplicas %d (an elastic job needs both, in order)", path, line,
                           j->id, j->min_replicas, j->max_replicas);
    return AIQ_OK;
}

/* An arrival's fields written as Kubernetes text: minRuntime, the GPU
 * model, cpu and memory, and the estimate when est (the journaled one)
 * is -1: spec.estimatedRuntime, else 0. */
static aiq_rc arrival_texts(json_object *spec, json_object *res, double est, struct sim_job *j,
                            const char *path, int line, aiq_err *err) {
    const char *q;
    if ((q = aiq_jstr(spec, "minRuntime")) && aiq_duration_parse(q, &j->min_runtime_s, NULL) != AIQ_OK)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: spec.minRuntime: bad duration '%.64s'", path,
                           line, q);
    json_object *np = aiq_jget(spec, "nonPreemptible");
    j->non_preemptible = np && json_object_get_boolean(np);
    j->gpu_model = (char *)aiq_jstr(res, "gpuModel");
    if ((q = aiq_jstr(res, "cpu")) && aiq_quantity_cpu_milli(q, &j->cpu_milli, NULL) != AIQ_OK)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: spec.resources.cpu: bad quantity '%.64s'",
                           path, line, q);
    if ((q = aiq_jstr(res, "memory")) && aiq_quantity_bytes(q, &j->mem_bytes, NULL) != AIQ_OK)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: spec.resources.memory: bad quantity "
                           "'%.64s'", path, line, q);
    j->estimate_s = est;
    if (j->estimate_s < 0) {
        j->estimate_s = 0;
        if ((q = aiq_jstr(spec, "estimatedRuntime")) &&
            aiq_duration_parse(q, &j->estimate_s, NULL) != AIQ_OK)
            return aiq_err_set(err, AIQ_EPARSE, "%s:%d: spec.estimatedRuntime: bad duration "
                               "'%.64s'", path, line, q);
    }
    return AIQ_OK;
}

/* Fills a job from an arrival payload {"uid","group","spec":{...}}. */
static aiq_rc job_from_arrival(json_object *p, const char *key, double submit, double t_abs,
                               struct sim_job *j, const char *path, int line, aiq_err *err) {
    json_object *spec = aiq_jget(p, "spec"), *res = aiq_jget(spec, "resources"), *model = aiq_jget(spec, "model");
    aiq_rc rc;
    memset(j, 0, sizeof *j);
    j->id = (char *)aiq_jstr(p, "uid");
    if (!j->id)
        j->id = (char *)key;
    if (!j->id || !spec)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_arrival without uid or spec", path, line);
    j->group = (char *)aiq_jstr(p, "group");
    j->user = (char *)aiq_jstr(spec, "user");
    j->submit = submit;
    double est;
    const char *bad = arrival_sizes(p, spec, res, j, &est);
    if (bad)
        return arrival_out_of_range(err, path, line, j, bad);
    if ((rc = arrival_elastic(p, spec, j, path, line, err)) != AIQ_OK ||
        (rc = arrival_texts(spec, res, est, j, path, line, err)) != AIQ_OK)
        return rc;
    /* The operator's creationTimestamp and queue entry, when journaled
     * (absolute unix seconds; t is the arrival's). */
    double created = gnum_in(p, "created", 1, 1e11, -1, &bad);
    double queued = gnum_in(p, "queued", 1, 1e11, -1, &bad);
    if (!bad && created > 0) {
        j->times_set = true;
        j->created = created - (t_abs - submit);
        j->queued = (queued > 0 ? queued : created) - (t_abs - submit);
    }
    if (bad)
        return arrival_out_of_range(err, path, line, j, bad);
    j->task = (char *)aiq_jstr(spec, "taskType");
    j->model = (char *)aiq_jstr(model, "name");
    return AIQ_OK;
}

static aiq_rc add_node(struct sim_journal *jr, const char *name, json_object *p,
                       const char *path, int line, aiq_err *err) {
    struct sim_trace *tr = jr->trace;
    const char *bad = NULL;
    int gpus = (int)gnum_in(p, "gpus", 0, Q_MAX_GPUS, 0, &bad);
    struct sim_node n = {(char *)name, (char *)aiq_jstr(p, "model"), gpus,
                         (int64_t)gnum_in(p, "gpu_memory_mib", 0, 1 << 24, 0, &bad),
                         (int64_t)gnum_in(p, "cpu_milli", 0, 1e12,
                                          (gpus > 0 ? gpus : 1) * 16000.0, &bad),
                         (int64_t)gnum_in(p, "memory_bytes", 0, 1e18,
                                          (gpus > 0 ? gpus : 1) * 137438953472.0, &bad)};
    if (bad)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: node %.64s: '%s' out of range", path, line,
                           name, bad);
    for (int k = 0; k < tr->nnodes; k++)
        if (strcmp(tr->nodes[k].name, name) == 0) { /* a change: keep the newest shape */
            struct sim_node *o = &tr->nodes[k];
            char *keep = o->gpu_model;
            o->gpus = n.gpus;
            o->gpu_mem_mib = n.gpu_mem_mib;
            o->cpu_milli = n.cpu_milli;
            o->mem_bytes = n.mem_bytes;
            if (!n.gpu_model || !keep || strcmp(n.gpu_model, keep) != 0) {
                o->gpu_model = n.gpu_model && *n.gpu_model ? strdup(n.gpu_model) : NULL;
                free(keep);
            }
            return AIQ_OK;
        }
    return sim_trace_add_node(tr, &n, err);
}

static aiq_rc grow(void **p, int *cap, int need, size_t sz, aiq_err *err) {
    if (need <= *cap)
        return AIQ_OK;
    int nc = *cap ? *cap * 2 : 1024;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, (size_t)nc * sz);
    if (!np)
        return aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
    *p = np;
    *cap = nc;
    return AIQ_OK;
}

/* The reader's per-job arrays (depart_t, release_t and the attempt each
 * requeued entry came from), grown together to n entries; the new
 * entries are 0 / -1. */
struct perjob {
    int cap;
    int *prev;      /* the trace index of the attempt before, -1 = none */
};

static aiq_rc perjob_grow(struct sim_journal *jr, struct perjob *pj, int n, aiq_err *err) {
    if (n <= pj->cap)
        return AIQ_OK;
    int nc = pj->cap ? pj->cap * 2 : 1024;
    while (nc < n)
        nc *= 2;
    double *d = realloc(jr->depart_t, (size_t)nc * sizeof *d);
    if (d)
        jr->depart_t = d;
    double *g = realloc(jr->release_t, (size_t)nc * sizeof *g);
    if (g)
        jr->release_t = g;
    int *p = realloc(pj->prev, (size_t)nc * sizeof *p);
    if (p)
        pj->prev = p;
    if (!d || !g || !p)
        return aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
    for (int i = pj->cap; i < nc; i++) {
        jr->depart_t[i] = jr->release_t[i] = 0;
        pj->prev[i] = -1;
    }
    pj->cap = nc;
    return AIQ_OK;
}

/* A job_requeue {"uid","attempt","queued","backoff_until"} at t: the
 * attempt that ran ends at t (its GPUs free), and the job comes back as a
 * new trace entry with the same uid, arriving when its backoff ends (the
 * operator leaves it out of every cycle before), created when the AIJob
 * was and queued at the payload's "queued". uid then names the newest
 * attempt, so later decisions and the departure go to it. */
static aiq_rc requeue(struct sim_journal *jr, struct umap *um, struct perjob *pj, json_object *p,
                      double t, const char *path, int line, aiq_err *err) {
    aiq_rc rc;
    const char *uid = aiq_jstr(p, "uid"), *bad = NULL;
    int idx = umap_find(um, jr->trace, uid);
    if (idx < 0) {
        jr->skipped++;
        return AIQ_OK;
    }
    (void)gnum_in(p, "attempt", 1, 1e6, 1, &bad);
    double queued = gnum_in(p, "queued", 1, 1e11, t, &bad);
    double until = gnum_in(p, "backoff_until", 0, 1e11, queued, &bad);
    if (bad)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_requeue %.64s: '%s' out of range", path,
                           line, uid, bad);
    if (queued < jr->epoch)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_requeue %.64s: 'queued' %.17g before "
                           "the journal's start %.17g", path, line, uid, queued, jr->epoch);
    struct sim_job nj = jr->trace->jobs[idx];
    jr->depart_t[idx] = t;
    nj.created = nj.times_set ? nj.created : nj.submit;
    nj.times_set = true;
    nj.queued = queued - jr->epoch;
    nj.submit = (until > t ? until : t) - jr->epoch;
    nj.duration_s = 0;
    if ((rc = sim_trace_add_job(jr->trace, &nj, err)) != AIQ_OK)
        return rc;
    if ((rc = perjob_grow(jr, pj, jr->trace->njobs, err)) != AIQ_OK)
        return rc;
    pj->prev[jr->trace->njobs - 1] = idx;
    umap_repoint(um, jr->trace, uid, jr->trace->njobs - 1);
    return AIQ_OK;
}

/* A job_released {"uid","attempt"} at t: the failed attempt's pods are
 * gone. Until now the operator's queue held its GPUs (as a job being
 * stopped) and left the job itself out, so the attempt that departed
 * (job_departure, or the one a job_requeue ended) frees them at t, and a
 * requeued entry arrives no earlier than t. */
static aiq_rc released(struct sim_journal *jr, const struct umap *um, const struct perjob *pj,
                       json_object *p, double t) {
    int idx = umap_find(um, jr->trace, aiq_jstr(p, "uid"));
    if (idx < 0) {
        jr->skipped++;
        return AIQ_OK;
    }
    int gone = jr->depart_t[idx] > 0 ? idx : pj->prev[idx];
    if (gone < 0 || jr->depart_t[gone] <= 0 || t < jr->depart_t[gone]) {
        jr->skipped++;
        return AIQ_OK;
    }
    jr->release_t[gone] = t;
    if (gone != idx && jr->trace->jobs[idx].submit < t - jr->epoch)
        jr->trace->jobs[idx].submit = t - jr->epoch;
    return AIQ_OK;
}

/* A job_start {"uid","attempt","started"}: checked (not skipped). The
 * simulator runs an admitted gang from its admission cycle, so the start
 * time itself is not replayed (see docs/simulator.md). */
static aiq_rc job_start(struct sim_journal *jr, const struct umap *um, json_object *p,
                        const char *path, int line, aiq_err *err) {
    const char *uid = aiq_jstr(p, "uid"), *bad = NULL;
    if (umap_find(um, jr->trace, uid) < 0) {
        jr->skipped++;
        return AIQ_OK;
    }
    (void)gnum_in(p, "attempt", 1, 1e6, 1, &bad);
    (void)gnum_in(p, "started", 1, 1e11, 1, &bad);
    if (bad)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_start %.64s: '%s' out of range", path,
                           line, uid, bad);
    return AIQ_OK;
}

/* A job_preempted {"uid","queued",...} or job_resized {"uid","replicas"}
 * at t: when the victim was gone or the new size took effect. */
static aiq_rc add_stop(struct sim_journal *jr, const struct umap *um, int *cap, json_object *p,
                       double t, bool preempted, const char *path, int line, aiq_err *err) {
    const char *uid = aiq_jstr(p, "uid"), *bad = NULL;
    int idx = umap_find(um, jr->trace, uid);
    if (idx < 0) {
        jr->skipped++;
        return AIQ_OK;
    }
    int replicas = preempted ? -1 : (int)gnum_in(p, "replicas", 0, AIQ_MAX_REPLICAS, -2, &bad);
    if (bad || replicas == -2)
        return aiq_err_set(err, AIQ_EPARSE, "%s:%d: job_resized %.64s: 'replicas' missing or out "
                           "of range", path, line, uid);
    aiq_rc rc = grow((void **)&jr->stops, cap, jr->nstops + 1, sizeof *jr->stops, err);
    if (rc == AIQ_OK)
        jr->stops[jr->nstops++] = (struct sim_stop){t, idx, replicas};
    return rc;
}

struct byarr {
    double submit;
    int idx;
};

static int byarr_cmp(const void *a, const void *b) {
    const struct byarr *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Puts the trace back in arrival order (a requeued attempt arrives after
 * its backoff, possibly after jobs journaled later), renumbering the
 * decisions and departures. */
static aiq_rc sort_arrivals(struct sim_journal *j, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    struct sim_trace *tr = j->trace;
    int n = tr->njobs;
    bool sorted = true;
    for (int i = 1; i < n && sorted; i++)
        sorted = tr->jobs[i - 1].submit <= tr->jobs[i].submit;
    if (sorted)
        return AIQ_OK;
    struct byarr *ord = malloc((size_t)n * sizeof *ord);
    int *inv = malloc((size_t)n * sizeof *inv);
    struct sim_job *jobs = malloc((size_t)n * sizeof *jobs);
    double *dep = malloc((size_t)n * sizeof *dep), *rel = malloc((size_t)n * sizeof *rel);
    if (!ord || !inv || !jobs || !dep || !rel) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
        goto out_free;
    }
    for (int i = 0; i < n; i++)
        ord[i] = (struct byarr){tr->jobs[i].submit, i};
    qsort(ord, (size_t)n, sizeof *ord, byarr_cmp);
    for (int k = 0; k < n; k++) {
        inv[ord[k].idx] = k;
        jobs[k] = tr->jobs[ord[k].idx];
        dep[k] = j->depart_t[ord[k].idx];
        rel[k] = j->release_t[ord[k].idx];
    }
    memcpy(tr->jobs, jobs, (size_t)n * sizeof *jobs);
    memcpy(j->depart_t, dep, (size_t)n * sizeof *dep);
    memcpy(j->release_t, rel, (size_t)n * sizeof *rel);
    for (int k = 0; k < j->ndec; k++) {
        j->dec[k].job = inv[j->dec[k].job];
        if (j->dec[k].by >= 0)
            j->dec[k].by = inv[j->dec[k].by];
    }
    for (int k = 0; k < j->nstops; k++)
        j->stops[k].job = inv[j->stops[k].job];
out_free:
    free(ord);
    free(inv);
    free(jobs);
    free(dep);
    free(rel);
    return rc;
}

/* One journal file being read: the journal filled, the uid map, the
 * per-job arrays and the capacities of the journal's growing arrays. */
struct jread {
    struct sim_journal *j;
    struct umap um;
    struct perjob pj;
    int cdec, ccyc, cstop; /* capacities of j->dec, j->cycle_t, j->stops */
    const char *path;
    int lineno;
};

/* Parses one line (len bytes) into a JSON object *o with its time *t.
 * On error *o is NULL, *t 0 and err says where. */
static aiq_rc parse_line(const struct jread *r, const char *line, ssize_t len, json_object **o,
                         double *t, aiq_err *err) {
    *o = NULL;
    *t = 0;
    json_tokener *tok = json_tokener_new_ex(AIQ_MAX_DEPTH);
    if (!tok)
        return aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
    json_object *x = json_tokener_parse_ex(tok, line, (int)len);
    enum json_tokener_error te = json_tokener_get_error(tok);
    size_t off = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!x || te != json_tokener_success) {
        json_object_put(x);
        aiq_rc rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d:%zu: not a JSON object: %s", r->path,
                                r->lineno, off + 1, json_tokener_error_desc(te));
        if (err)
            err->line = r->lineno, err->col = (int)off + 1;
        return rc;
    }
    *t = aiq_jnum(x, "t", 0);
    if (!isfinite(*t) || *t < 0 || *t > 1e11) {
        json_object_put(x);
        aiq_rc rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d: 't' out of range", r->path, r->lineno);
        if (err)
            err->line = r->lineno, err->col = 1;
        return rc;
    }
    *o = x;
    return AIQ_OK;
}

/* A policy event: the active policy's name, whether it predicts
 * runtimes, and its cycle tick. */
static void policy_event(struct sim_journal *j, const char *key, json_object *p) {
    snprintf(j->policy, sizeof j->policy, "%s", aiq_jstr(p, "active") ? aiq_jstr(p, "active")
                                                                    : (key ? key : ""));
    json_object *pr = aiq_jget(p, "predict");
    j->predict = pr && json_object_get_boolean(pr);
    j->tick_s = aiq_jnum(p, "tick_s", j->tick_s);
}

/* A job_arrival at t: a new trace entry, unless its uid is known. */
static aiq_rc arrival(struct jread *r, const char *key, json_object *p, double t,
                      aiq_err *err) {
    struct sim_journal *j = r->j;
    struct sim_job sj;
    aiq_rc rc = job_from_arrival(p, key, t - j->epoch, t, &sj, r->path, r->lineno, err);
    if (rc != AIQ_OK || umap_find(&r->um, j->trace, sj.id) >= 0)
        return rc;
    if ((rc = sim_trace_add_job(j->trace, &sj, err)) == AIQ_OK &&
        umap_put(&r->um, j->trace, j->trace->njobs - 1) != 0)
        rc = aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
    if (rc == AIQ_OK)
        rc = perjob_grow(j, &r->pj, j->trace->njobs, err);
    return rc;
}

/* A job_departure {"uid","runtime_s"} at t: the job's end, and its
 * runtime when the arrival had none. */
static void departure(struct jread *r, json_object *p, double t) {
    struct sim_journal *j = r->j;
    int idx = umap_find(&r->um, j->trace, aiq_jstr(p, "uid"));
    if (idx < 0) {
        j->skipped++;
        return;
    }
    j->depart_t[idx] = t;
    double rt = aiq_jnum(p, "runtime_s", 0);
    if (j->trace->jobs[idx].duration_s <= 0 && rt > 0 && rt < 1e10)
        j->trace->jobs[idx].duration_s = rt;
}

/* An event record at t, by its kind; the kinds replay does not use are
 * counted as skipped (quota events are known and not counted). */
static aiq_rc read_event(struct jread *r, json_object *o, double t, aiq_err *err) {
    struct sim_journal *j = r->j;
    const char *kind = aiq_jstr(o, "kind"), *key = aiq_jstr(o, "key");
    json_object *p = aiq_jget(o, "payload");
    if (kind && strcmp(kind, "policy") == 0)
        policy_event(j, key, p);
    else if (kind && strcmp(kind, "node") == 0 && key)
        return add_node(j, key, p, r->path, r->lineno, err);
    else if (kind && strcmp(kind, "job_arrival") == 0)
        return arrival(r, key, p, t, err);
    else if (kind && strcmp(kind, "job_departure") == 0)
        departure(r, p, t);
    else if (kind && strcmp(kind, "job_requeue") == 0)
        return requeue(j, &r->um, &r->pj, p, t, r->path, r->lineno, err);
    else if (kind && strcmp(kind, "job_released") == 0)
        return released(j, &r->um, &r->pj, p, t);
    else if (kind && strcmp(kind, "job_start") == 0)
        return job_start(j, &r->um, p, r->path, r->lineno, err);
    else if (kind && (strcmp(kind, "job_preempted") == 0 || strcmp(kind, "job_resized") == 0))
        return add_stop(j, &r->um, &r->cstop, p, t, strcmp(kind, "job_preempted") == 0, r->path,
                        r->lineno, err);
    else if (!kind || strcmp(kind, "quota") != 0)
        j->skipped++;
    return AIQ_OK;
}

/* A decision record at t: appended to the journal's decisions, and t to
 * its cycle times when a new cycle begins. */
static aiq_rc read_decision(struct jread *r, json_object *o, double t, aiq_err *err) {
    struct sim_journal *j = r->j;
    aiq_rc rc;
    int idx = umap_find(&r->um, j->trace, aiq_jstr(o, "job"));
    int action = sim__action_parse(aiq_jstr(o, "action"));
    /* preempt/shrink: the message is the uid of the job it is for */
    int by = action == Q_DEC_PREEMPT || action == Q_DEC_RESIZE
                 ? umap_find(&r->um, j->trace, aiq_jstr(o, "message")) : -1;
    bool bf = false;
    int reason = sim__reason_parse(aiq_jstr(o, "reason"), &bf);
    if (idx < 0 || action == 0) {
        j->skipped++;
        return AIQ_OK;
    }
    if ((rc = grow((void **)&j->dec, &r->cdec, j->ndec + 1, sizeof *j->dec, err)) != AIQ_OK ||
        (rc = grow((void **)&j->cycle_t, &r->ccyc, j->ncycles + 1, sizeof *j->cycle_t, err)) !=
            AIQ_OK)
        return rc;
    const char *bad = NULL;
    j->dec[j->ndec++] = (struct sim_decision){
        (int64_t)gnum_in(o, "cycle", 0, 9e15, 0, &bad), t, idx, (uint8_t)action,
        (uint8_t)(reason < 0 ? Q_R_SCORE_ERROR : reason), bf,
        (int32_t)gnum_in(o, "level", 0, AIQ_MAX_LEVELS, 0, &bad),
        (int32_t)gnum_in(o, "position", 0, 2e9, 0, &bad), aiq_jnum(o, "score", 0), by};
    if (bad)
        rc = aiq_err_set(err, AIQ_EPARSE, "%s:%d: decision: '%s' out of range", r->path,
                         r->lineno, bad);
    if (j->ncycles == 0 || j->cycle_t[j->ncycles - 1] != t)
        j->cycle_t[j->ncycles++] = t;
    return rc;
}

/* Reads JSON lines; see sim.h. */
aiq_rc sim_journal_read_jsonl(FILE *f, const char *path, struct sim_journal *j,
                              aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    struct jread r = {j, {NULL, 0}, {0, NULL}, 0, 0, 0, path, 0};
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    bool have_epoch = false;
    memset(j, 0, sizeof *j);
    j->tick_s = 600;
    if (!(j->trace = sim_trace_create()))
        return aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
    while ((len = getline(&line, &lcap, f)) >= 0) {
        r.lineno++;
        if (len > SIM_MAX_JLINE) {
            rc = aiq_err_set(err, AIQ_ETOOBIG, "%s:%d: line longer than %d bytes", path, r.lineno,
                             SIM_MAX_JLINE);
            goto out_free;
        }
        if (len <= 1)
            continue;
        json_object *o;
        double t;
        if ((rc = parse_line(&r, line, len, &o, &t, err)) != AIQ_OK)
            goto out_free;
        if (!have_epoch) {
            j->epoch = t;
            have_epoch = true;
        }
        const char *type = aiq_jstr(o, "type");
        if (type && strcmp(type, "event") == 0)
            rc = read_event(&r, o, t, err);
        else if (type && strcmp(type, "decision") == 0)
            rc = read_decision(&r, o, t, err);
        else
            j->skipped++;
        json_object_put(o);
        if (rc != AIQ_OK)
            goto out_free;
    }
    if ((rc = sort_arrivals(j, err)) != AIQ_OK)
        goto out_free;
    /* Jobs that never finished in the recording keep a duration for the
     * what-if: their estimate, else an hour. */
    for (int i = 0; i < j->trace->njobs; i++) {
        struct sim_job *sj = &j->trace->jobs[i];
        if (sj->duration_s <= 0)
            sj->duration_s = sj->estimate_s > 0 ? sj->estimate_s : 3600;
    }
out_free:
    free(line);
    free(r.um.slot);
    free(r.pj.prev);
    if (rc != AIQ_OK)
        sim_journal_deinit(j);
    return rc;
}

/* Reads a store's journal; see sim.h. */
aiq_rc sim_journal_read_store(store *s, struct sim_journal *j, aiq_err *err) {
    aiq_rc rc;
    FILE *f = tmpfile();
    memset(j, 0, sizeof *j);
    if (!f)
        return aiq_err_set(err, AIQ_EIO, "journal: cannot create a temporary file");
    if ((rc = store_journal_export_jsonl(s, f, 0, NULL, err)) == AIQ_OK) {
        rewind(f);
        rc = sim_journal_read_jsonl(f, "journal", j, err);
    }
    fclose(f);
    return rc;
}

/* Frees a journal; see sim.h. */
void sim_journal_deinit(struct sim_journal *j) {
    sim_trace_free(j->trace);
    free(j->depart_t);
    free(j->release_t);
    free(j->cycle_t);
    free(j->dec);
    free(j->stops);
    memset(j, 0, sizeof *j);
}

static void cfg_from(const struct sim_journal *j, oppolicy *pol, const char *name,
                     struct sim_config *cfg) {
    sim_config_for(cfg, j->trace, pol);
    cfg->policy_name = name;
    cfg->epoch = j->epoch;
    cfg->tick_s = j->tick_s;
    cfg->predict = j->predict;
    cfg->collect_decisions = true;
}

static void describe(char *buf, size_t cap, const struct sim_trace *tr, const char *who,
                     const struct sim_decision *d) {
    char ts[40];
    q_rfc3339(d->t, ts, sizeof ts);
    snprintf(buf, cap, "%s: %s %s %s level=%d position=%d score=%.17g reason=%s%s%s", who, ts,
             tr->jobs[d->job].id, sim__action_str(d->action), (int)d->level, (int)d->pos,
             d->score, sim__reason_str(d->reason, d->backfilled), d->by >= 0 ? " for=" : "",
             d->by >= 0 ? tr->jobs[d->by].id : "");
}

/* Exact replay; see sim.h. */
aiq_rc sim_replay_check(const struct sim_journal *j, oppolicy *pol,
                        const char *policy_name, long *mismatches,
                        char *first, size_t cap, aiq_err *err) {
    aiq_rc rc;
    struct sim_config cfg;
    struct sim_result res;
    struct sim_script sc = {j->cycle_t, j->ncycles, j->depart_t, j->release_t, j->stops,
                            j->nstops};
    *mismatches = 0;
    if (cap)
        first[0] = '\0';
    cfg_from(j, pol, policy_name, &cfg);
    cfg.script = &sc;
    if ((rc = sim_run(&cfg, &res, err)) != AIQ_OK) {
        sim_result_deinit(&res);
        return rc;
    }
    int n = res.ndec > j->ndec ? res.ndec : j->ndec;
    for (int k = 0; k < n; k++) {
        const struct sim_decision *a = k < j->ndec ? &j->dec[k] : NULL;
        const struct sim_decision *b = k < res.ndec ? &res.dec[k] : NULL;
        bool same = a && b && a->t == b->t && a->job == b->job && a->action == b->action &&
                    a->level == b->level && a->pos == b->pos && a->score == b->score &&
                    a->reason == b->reason && a->backfilled == b->backfilled && a->by == b->by;
        if (same)
            continue;
        if (*mismatches == 0 && cap) {
            char x[400], y[400];
            if (a)
                describe(x, sizeof x, j->trace, "recorded", a);
            else
                snprintf(x, sizeof x, "recorded: (nothing)");
            if (b)
                describe(y, sizeof y, j->trace, "replayed", b);
            else
                snprintf(y, sizeof y, "replayed: (nothing)");
            snprintf(first, cap, "decision %d: %s; %s", k + 1, x, y);
        }
        (*mismatches)++;
    }
    sim_result_deinit(&res);
    return AIQ_OK;
}

/* What-if; see sim.h. */
aiq_rc sim_replay_whatif(const struct sim_journal *j, oppolicy *pol,
                         const char *policy_name, struct sim_result *res,
                         long *changed, aiq_err *err) {
    aiq_rc rc;
    struct sim_config cfg;
    double *rec = NULL;
    *changed = 0;
    cfg_from(j, pol, policy_name, &cfg);
    if ((rc = sim_run(&cfg, res, err)) != AIQ_OK)
        return rc;
    int n = j->trace->njobs;
    if (!(rec = calloc((size_t)(n ? n : 1), sizeof *rec)))
        return aiq_err_set(err, AIQ_ENOMEM, "journal: out of memory");
    for (int k = 0; k < j->ndec; k++)
        if (j->dec[k].action == Q_DEC_ADMIT && rec[j->dec[k].job] == 0)
            rec[j->dec[k].job] = j->dec[k].t;
    /* A recorded start lags its cycle by the operator's reaction time
     * (milliseconds); a second of slack keeps that from counting. */
    for (int i = 0; i < n; i++)
        if ((rec[i] == 0) != (res->jobs[i].start == 0) || fabs(rec[i] - res->jobs[i].start) > 1.0)
            (*changed)++;
    free(rec);
    return AIQ_OK;
}
