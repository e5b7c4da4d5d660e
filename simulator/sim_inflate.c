/* sim_inflate.c -- the inflation protocol of the FGD paper (Weng et al.,
 * "Beware of Fragmentation", USENIX ATC'23): tasks arrive one after
 * another, in trace order or drawn at random with replacement (seeded),
 * nothing departs, and each task is placed at once by the queue core's
 * placement (q_cycle_run with the task alone pending on the cluster as it
 * is) or dropped when it fits nowhere. Each time the GPU demand that has
 * arrived passes a step (50%, 60%, ... of the cluster's GPUs) the share of
 * GPU capacity left unallocated is recorded. Optionally every placement
 * (node, GPU indexes, share) is written as CSV.
 *
 * Placed tasks are folded into the nodes' used resources rather than
 * passed back as running jobs: nothing ever departs or is preempted, so
 * the queue only needs what is free, and a cycle costs O(nodes) instead of
 * O(tasks placed so far). */
#include "simulator/sim.h"

#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"
#include "simulator/sim_int.h"

/* Sets the protocol's defaults; see sim.h. */
void sim_inflate_config_init(struct sim_inflate_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->placement = AIQ_PLACE_BINPACK;
    cfg->from = 0.5;
    cfg->to = 1.3;
    cfg->step = 0.1;
}

/* splitmix64: a seeded stream, the same on every machine. */
static uint64_t mix_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* GPUs a task asks for: whole GPUs x replicas; a share counts as its
 * fraction: gpu_milli / 1000, or its memory over the cluster's mean GPU
 * memory. */
static double demand(const struct sim_job *j, double mean_mib) {
    struct q_task_class c = {j->gpus, j->gpu_mem_mib, j->cpu_milli, j->mem_bytes, 1,
                             j->gpu_milli};
    return q_class_gpu_demand(&c, mean_mib) * j->replicas;
}

struct inflate {
    const struct sim_inflate_config *cfg;
    struct q_node *nodes;
    q_state *qs;
    struct q_task_class wl[Q_MAX_CLASSES]; /* FGD's target workload */
    int nwl;
    double total_gpus, mean_mib, arrived, allocated;
    struct sim_inflate_result *res;
    char pre[48];            /* "placement,seed," of every CSV row */
};

static aiq_rc nodes_init(struct inflate *in, aiq_err *err) {
    const struct sim_inflate_config *cfg = in->cfg;
    double mib = 0;
    in->nodes = calloc((size_t)cfg->nnodes, sizeof *in->nodes);
    if (!in->nodes)
        return aiq_err_set(err, AIQ_ENOMEM, "inflate: out of memory");
    for (int k = 0; k < cfg->nnodes; k++) {
        const struct sim_node *s = &cfg->nodes[k];
        aiq_rc rc = sim__q_node(s, k, &in->nodes[k], err);
        if (rc != AIQ_OK)
            return rc;
        in->total_gpus += s->gpus;
        mib += (double)s->gpus * (double)s->gpu_mem_mib;
    }
    if (in->total_gpus <= 0)
        return aiq_err_field(err, AIQ_EINVAL, "nodes", "inflate: the cluster has no GPUs "
                             "(%d nodes)", cfg->nnodes);
    in->mean_mib = mib / in->total_gpus;
    return AIQ_OK;
}

/* Writes one CSV row per replica of an admitted task. */
static void write_places(FILE *f, const char *pre, long seq, const struct sim_job *j, const struct q_node *nodes,
                         const struct q_place *p, int n) {
    for (int r = 0; r < n; r++) {
        const struct q_node *nd = &nodes[p[r].node];
        char idx[Q_MAX_GPUS * 3 + 1];
        size_t o = 0;
        double share = j->gpus > 0 ? 1 : 0; /* a CPU-only task holds no GPU */
        idx[0] = '\0';
        for (int g = 0; g < nd->ngpus && o < sizeof idx; g++) {
            if (!((p[r].gpu_mask >> g) & 1u))
                continue;
            int w = snprintf(idx + o, sizeof idx - o, "%s%d", o ? "|" : "", g);
            o += w > 0 ? (size_t)w : 0;
            if (j->gpus == 0)
                share = (double)p[r].gpu_mem_mib / (double)nd->gpu_mem_total[g];
        }
        fprintf(f, "%s%ld,%s,%d,placed,%s,%s,%.4f,%lld\n", pre, seq, j->id, r, nd->name, idx, share,
                (long long)p[r].gpu_mem_mib);
    }
}

/* Applies an admitted task's placements to the nodes; returns the GPUs it
 * holds (a share: its fraction of the GPU). */
static double occupy(struct q_node *nodes, const struct sim_job *j, const struct q_place *p,
                     int n) {
    double held = 0;
    for (int r = 0; r < n; r++) {
        struct q_node *nd = &nodes[p[r].node];
        for (int g = 0; g < nd->ngpus; g++) {
            if (!((p[r].gpu_mask >> g) & 1u))
                continue;
            if (j->gpus > 0) {
                nd->gpu_mem_used[g] = nd->gpu_mem_total[g];
                held += 1;
            } else {
                nd->gpu_mem_used[g] += p[r].gpu_mem_mib;
                held += (double)p[r].gpu_mem_mib / (double)nd->gpu_mem_total[g];
            }
        }
        nd->cpu_used += j->cpu_milli;
        nd->mem_used += j->mem_bytes;
    }
    return held;
}

/* Offers task j (arrival number seq) to the queue alone; places it or
 * drops it. */
static aiq_rc offer(struct inflate *in, long seq, const struct sim_job *j, aiq_err *err) {
    static const char *const level_names[] = {"inflate"};
    char uid[48];
    snprintf(uid, sizeof uid, "task-%ld", seq);
    struct q_job qj;
    memset(&qj, 0, sizeof qj);
    qj.key = j->id;
    qj.uid = uid;
    qj.gen = 1;
    qj.user = qj.group = -1;
    qj.replicas = j->replicas;
    qj.gpus = j->gpus;
    qj.gpu_memory_mib = j->gpu_mem_mib;
    qj.gpu_milli = j->gpu_milli;
    qj.cpu_milli = j->cpu_milli;
    qj.memory_bytes = j->mem_bytes;
    qj.gpu_model = j->gpu_model;
    qj.state = Q_JOB_PENDING;
    qj.created = qj.queued = SIM_EPOCH + (double)seq;
    struct q_input qi;
    memset(&qi, 0, sizeof qi);
    qi.now = qj.created;
    qi.nodes = in->nodes;
    qi.nnodes = in->cfg->nnodes;
    qi.jobs = &qj;
    qi.njobs = 1;
    qi.policy.nlevels = 1;
    qi.policy.level_names = level_names;
    qi.policy.placement = in->cfg->placement;
    qi.placer = in->cfg->placer;
    qi.workload = in->wl;
    qi.nworkload = in->nwl;
    qi.gen = 1;
    qi.lazy_eta = true;
    q_output out;
    aiq_rc rc = q_cycle_run(in->qs, &qi, NULL, &out, err);
    if (rc != AIQ_OK)
        return rc;
    const struct q_result *r = &out.res[0];
    in->arrived += demand(j, in->mean_mib);
    in->res->tasks++;
    if (r->decision == Q_DEC_ADMIT) {
        const struct q_place *p = out.places + r->place_off;
        in->allocated += occupy(in->nodes, j, p, r->nplace);
        in->res->placed++;
        if (in->cfg->placements)
            write_places(in->cfg->placements, in->pre, seq, j, in->nodes, p, r->nplace);
    } else {
        in->res->dropped++;
        if (in->cfg->placements)
            fprintf(in->cfg->placements, "%s%ld,%s,,dropped:%s,,,,\n", in->pre, seq, j->id,
                    q_reason_name((q_reason)r->reason));
    }
    return AIQ_OK;
}

/* Orders task classes by shape (gpus, MiB, fraction, cpu, memory). */
static int class_shape_cmp(const void *pa, const void *pb) {
    const struct q_task_class *x = pa, *y = pb;
    int64_t a[5] = {x->gpus, x->gpu_memory_mib, x->gpu_milli, x->cpu_milli, x->memory_bytes};
    int64_t b[5] = {y->gpus, y->gpu_memory_mib, y->gpu_milli, y->cpu_milli, y->memory_bytes};
    for (int k = 0; k < 5; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* Heaviest first; equal weights by shape, so the choice is stable. */
static int class_weight_cmp(const void *pa, const void *pb) {
    const struct q_task_class *x = pa, *y = pb;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return class_shape_cmp(pa, pb);
}

/* FGD's target workload: the trace's replica shapes (the paper takes the
 * task distribution of the trace it inflates), each weighted by the GPUs
 * the trace's replicas of that shape ask for (replicas x
 * q_class_gpu_demand; the paper counts tasks, see queue.h), the
 * Q_MAX_CLASSES heaviest: every shape is weighed, then the heaviest kept
 * (a trace with thousands of shapes, like Alibaba's, keeps its heaviest
 * ones, not the first ones seen). Declared in sim_int.h. */
aiq_rc sim__workload(const struct sim_trace *tr, double mean_mib, struct q_task_class *wl,
                     int *nwl, aiq_err *err) {
    *nwl = 0;
    struct q_task_class *all = calloc((size_t)tr->njobs + 1, sizeof *all);
    if (!all)
        return aiq_err_set(err, AIQ_ENOMEM, "inflate: out of memory for the workload");
    for (int i = 0; i < tr->njobs; i++) {
        const struct sim_job *j = &tr->jobs[i];
        struct q_task_class c = {j->gpus, j->gpu_mem_mib, j->cpu_milli, j->mem_bytes,
                                 j->replicas, j->gpu_milli};
        all[i] = c;
    }
    qsort(all, (size_t)tr->njobs, sizeof *all, class_shape_cmp);
    int n = 0;
    for (int i = 0; i < tr->njobs; i++) {
        if (n > 0 && class_shape_cmp(&all[n - 1], &all[i]) == 0)
            all[n - 1].weight += all[i].weight;
        else
            all[n++] = all[i];
    }
    for (int k = 0; k < n; k++)
        all[k].weight *= q_class_gpu_demand(&all[k], mean_mib);
    qsort(all, (size_t)n, sizeof *all, class_weight_cmp);
    *nwl = n < Q_MAX_CLASSES ? n : Q_MAX_CLASSES;
    memcpy(wl, all, (size_t)*nwl * sizeof *all);
    free(all);
    return AIQ_OK;
}

/* Records every step the arrived demand has now passed. */
static void record(struct inflate *in) {
    struct sim_inflate_result *res = in->res;
    const struct sim_inflate_config *cfg = in->cfg;
    while (res->npoints < res->nsteps) {
        double at = cfg->from + cfg->step * res->npoints;
        if (in->arrived < at * in->total_gpus - 1e-9)
            return;
        struct sim_inflate_point *pt = &res->pt[res->npoints++];
        pt->target = at;
        pt->arrived = in->arrived / in->total_gpus;
        pt->unalloc = (in->total_gpus - in->allocated) / in->total_gpus;
        pt->tasks = res->tasks;
        pt->placed = res->placed;
        pt->dropped = res->dropped;
    }
}

static aiq_rc check_config(const struct sim_inflate_config *cfg, aiq_err *err) {
    if (!cfg->trace || cfg->trace->njobs == 0)
        return aiq_err_field(err, AIQ_EINVAL, "trace", "inflate: the trace has no tasks");
    if (!(cfg->step > 0) || !(cfg->from > 0) || cfg->to < cfg->from ||
        (cfg->to - cfg->from) / cfg->step + 1.000001 > SIM_INFLATE_MAX_POINTS)
        return aiq_err_field(err, AIQ_EINVAL, "steps", "inflate: steps from %g to %g by %g: "
                             "need 0 < from <= to, step > 0 and at most %d points", cfg->from,
                             cfg->to, cfg->step, SIM_INFLATE_MAX_POINTS);
    return AIQ_OK;
}

/* Runs the protocol; see sim.h. */
aiq_rc sim_inflate(const struct sim_inflate_config *cfg, struct sim_inflate_result *res,
                   aiq_err *err) {
    struct inflate in;
    memset(&in, 0, sizeof in);
    in.cfg = cfg;
    in.res = res;
    snprintf(in.pre, sizeof in.pre, "%s,%llu,",
             cfg->label                         ? cfg->label
             : cfg->placement == AIQ_PLACE_SPREAD ? "spread"
             : cfg->placement == AIQ_PLACE_FGD  ? "fgd"
                                                : "binpack",
             cfg->sample ? (unsigned long long)cfg->seed : 0ULL);
    memset(res, 0, sizeof *res);
    aiq_rc rc = check_config(cfg, err);
    if (rc != AIQ_OK)
        return rc;
    res->nsteps = (int)((cfg->to - cfg->from) / cfg->step + 1.000001);
    if ((rc = nodes_init(&in, err)) != AIQ_OK)
        goto out_free;
    if ((rc = sim__workload(cfg->trace, in.mean_mib, in.wl, &in.nwl, err)) != AIQ_OK)
        goto out_free;
    res->total_gpus = in.total_gpus;
    const struct sim_trace *tr = cfg->trace;
    bool any = false;
    for (int i = 0; i < tr->njobs && !any; i++)
        any = demand(&tr->jobs[i], in.mean_mib) > 0;
    if (!any) {
        rc = aiq_err_field(err, AIQ_EINVAL, "trace", "inflate: no task of the trace asks for "
                           "a GPU, so the arrived GPU demand never grows");
        goto out_free;
    }
    if (!(in.qs = q_state_create(NULL))) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "inflate: out of memory");
        goto out_free;
    }
    uint64_t seed = cfg->seed;
    double goal = cfg->from + cfg->step * (res->nsteps - 1);
    for (long seq = 1; res->npoints < res->nsteps; seq++) {
        int i = (int)(seq - 1);
        if (cfg->sample)
            i = (int)(mix_next(&seed) % (uint64_t)tr->njobs);
        else if (i >= tr->njobs)
            break; /* the trace ran out before the last step */
        if ((rc = offer(&in, seq, &tr->jobs[i], err)) != AIQ_OK)
            goto out_free;
        record(&in);
        if (cfg->progress && seq % 256 == 0)
            cfg->progress(cfg->progress_ctx, in.arrived / (goal * in.total_gpus));
    }
    res->arrived = in.arrived / in.total_gpus;
    res->unalloc = (in.total_gpus - in.allocated) / in.total_gpus;
    if (cfg->progress)
        cfg->progress(cfg->progress_ctx, 1.0);
out_free:
    q_state_free(in.qs);
    free(in.nodes);
    return rc;
}
