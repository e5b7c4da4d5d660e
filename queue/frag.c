/* frag.c -- the fragmentation measure of FGD placement (Weng et al.,
 * "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
 * Fragmentation Gradient Descent", USENIX ATC'23) and the per-cycle set-up
 * of scored placement: the target workload (given, or the classes of the
 * input's jobs) and the placement mode.
 *
 * A node's measure is the expected GPU capacity a task drawn from the
 * workload could not use there; FGD places each replica where the measure
 * rises least. place.c keeps each node's value cached (q__node.frag) and
 * recomputes it only for nodes that changed, so a candidate costs one
 * evaluation of the node as it would be after the placement. */
#include "queue/q_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Does one replica of c fit on this node state? */
static bool class_fits(const struct q_task_class *c, const int64_t *tot, const int64_t *used,
                       int ngpus, int64_t cpu_free, int64_t mem_free) {
    if (c->cpu_milli > cpu_free || c->memory_bytes > mem_free) return false;
    if (c->gpus > 0) {
        int k = 0;
        for (int g = 0; g < ngpus; g++) k += used[g] == 0 && tot[g] >= c->gpu_memory_mib;
        return k >= c->gpus;
    }
    if (q__is_share(0, c->gpu_memory_mib, c->gpu_milli)) {
        for (int g = 0; g < ngpus; g++)
            if (tot[g] - used[g] >= q__share_mib(c->gpu_milli, c->gpu_memory_mib, tot[g]))
                return true;
        return false;
    }
    return true;
}

/* The free capacity (in GPUs) class c cannot use on this node state. */
static double class_frag(const struct q_task_class *c, const int64_t *tot, const int64_t *used,
                         int ngpus, int64_t cpu_free, int64_t mem_free) {
    bool fits = class_fits(c, tot, used, ngpus, cpu_free, mem_free);
    if (fits && c->gpus == 0 && !q__is_share(0, c->gpu_memory_mib, c->gpu_milli)) return 0;
    double f = 0;
    for (int g = 0; g < ngpus; g++) {
        int64_t fr = tot[g] - used[g];
        if (fr <= 0) continue;
        bool unusable = !fits ||
                        (c->gpus > 0 ? used[g] != 0 || tot[g] < c->gpu_memory_mib
                                     : fr < q__share_mib(c->gpu_milli, c->gpu_memory_mib, tot[g]));
        if (unusable) f += (double)fr / (double)tot[g];
    }
    return f;
}

static double frag_of(const struct q_task_class *w, int nw, double wsum, const int64_t *tot,
                      const int64_t *used, int ngpus, int64_t cpu_free, int64_t mem_free) {
    if (nw <= 0 || !(wsum > 0)) return 0;
    double f = 0;
    for (int m = 0; m < nw; m++)
        if (w[m].weight > 0)
            f += w[m].weight * class_frag(&w[m], tot, used, ngpus, cpu_free, mem_free);
    return f / wsum;
}

double q__frag(const q_state *st, const int64_t *tot, const int64_t *used, int ngpus,
               int64_t cpu_free, int64_t mem_free) {
    return frag_of(st->wl, st->nwl, st->wsum, tot, used, ngpus, cpu_free, mem_free);
}

/* The FGD measure of node n for workload w; see queue.h. Both borrowed. */
double q_frag_node(const struct q_node *n, const struct q_task_class *w, int nw) {
    if (!n || !w || n->ngpus < 0 || n->ngpus > Q_MAX_GPUS) return 0;
    double wsum = 0;
    for (int m = 0; m < nw; m++)
        if (w[m].weight > 0) wsum += w[m].weight;
    return frag_of(w, nw, wsum, n->gpu_mem_total, n->gpu_mem_used, n->ngpus,
                   n->cpu_alloc - n->cpu_used, n->mem_alloc - n->mem_used);
}

static int class_cmp(const void *a, const void *b) {
    const struct q_task_class *x = a, *y = b;
    if (x->gpus != y->gpus) return x->gpus < y->gpus ? -1 : 1;
    if (x->gpu_memory_mib != y->gpu_memory_mib) return x->gpu_memory_mib < y->gpu_memory_mib ? -1 : 1;
    if (x->cpu_milli != y->cpu_milli) return x->cpu_milli < y->cpu_milli ? -1 : 1;
    if (x->memory_bytes != y->memory_bytes) return x->memory_bytes < y->memory_bytes ? -1 : 1;
    if (x->gpu_milli != y->gpu_milli) return x->gpu_milli < y->gpu_milli ? -1 : 1;
    return 0;
}

static int weight_cmp(const void *a, const void *b) {
    const struct q_task_class *x = a, *y = b;
    if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
    return class_cmp(a, b);
}

/* See queue.h. */
double q_class_gpu_demand(const struct q_task_class *c, double mean_gpu_mib) {
    if (c->gpus > 0) return c->gpus;
    if (c->gpu_milli > 0) return c->gpu_milli / 1000.0;
    if (c->gpu_memory_mib > 0 && mean_gpu_mib > 0) return (double)c->gpu_memory_mib / mean_gpu_mib;
    return 0;
}

/* The mean memory of the input nodes' GPUs in MiB (0 without GPUs). */
static double mean_gpu_mib(const struct q_input *in) {
    double mib = 0, n = 0;
    for (int i = 0; i < in->nnodes; i++) {
        const struct q_node *nd = &in->nodes[i];
        for (int g = 0; g < nd->ngpus && g < Q_MAX_GPUS; g++) mib += (double)nd->gpu_mem_total[g];
        n += nd->ngpus > 0 ? nd->ngpus : 0;
    }
    return n > 0 ? mib / n : 0;
}

/* The workload from the input's jobs: one class per replica shape,
 * weighted by the GPUs its replicas ask for (replicas x
 * q_class_gpu_demand: the unallocated capacity FGD keeps low is counted
 * in GPUs, so a class weighs as much as the GPU demand it brings), the
 * Q_MAX_CLASSES heaviest kept. */
static int workload_from_jobs(q_state *st, const struct q_input *in) {
    if (Q_GROW(st, st->wl, st->cap_wl, (size_t)in->njobs + 1)) return -1;
    int n = 0;
    for (int j = 0; j < in->njobs; j++) {
        const struct q_job *jb = &in->jobs[j];
        if (jb->gpus < 0 || jb->gpus > Q_MAX_GPUS || jb->gpu_memory_mib < 0 ||
            jb->replicas < 1 || jb->gpu_milli < 0 || jb->gpu_milli > 999)
            continue; /* invalid: the walk rejects it, it is no workload */
        struct q_task_class c = {jb->gpus, jb->gpu_memory_mib, jb->cpu_milli,
                                 jb->memory_bytes, jb->replicas, jb->gpu_milli};
        st->wl[n++] = c;
    }
    qsort(st->wl, (size_t)n, sizeof *st->wl, class_cmp);
    int u = 0;
    for (int k = 0; k < n; k++) {
        if (u > 0 && class_cmp(&st->wl[u - 1], &st->wl[k]) == 0)
            st->wl[u - 1].weight += st->wl[k].weight;
        else
            st->wl[u++] = st->wl[k];
    }
    double mean = mean_gpu_mib(in);
    for (int k = 0; k < u; k++) st->wl[k].weight *= q_class_gpu_demand(&st->wl[k], mean);
    if (u > Q_MAX_CLASSES) {
        qsort(st->wl, (size_t)u, sizeof *st->wl, weight_cmp);
        u = Q_MAX_CLASSES;
    }
    st->nwl = u;
    return 0;
}

static int workload_copy(q_state *st, const struct q_input *in, aiq_err *err) {
    if (in->nworkload > Q_MAX_CLASSES || !in->workload) {
        aiq_err_field(err, AIQ_EINVAL, "workload",
                      "workload: %d classes (need 1..%d and an array)", in->nworkload,
                      Q_MAX_CLASSES);
        return -1;
    }
    if (Q_GROW(st, st->wl, st->cap_wl, (size_t)in->nworkload + 1)) {
        aiq_err_set(err, AIQ_ENOMEM, "queue: out of memory for the workload");
        return -1;
    }
    for (int m = 0; m < in->nworkload; m++) {
        const struct q_task_class *c = &in->workload[m];
        if (c->gpus < 0 || c->gpus > Q_MAX_GPUS || c->gpu_memory_mib < 0 || c->cpu_milli < 0 ||
            c->memory_bytes < 0 || !isfinite(c->weight) || c->weight < 0 || c->gpu_milli < 0 ||
            c->gpu_milli > 999 || (c->gpu_milli > 0 && (c->gpus > 0 || c->gpu_memory_mib > 0))) {
            aiq_err_field(err, AIQ_EINVAL, "workload[].weight",
                          "workload[%d]: gpus %d (0..%d), gpu memory %lld, cpu %lld, memory "
                          "%lld (>= 0), weight %g (finite, >= 0), gpu_milli %d (0..999, "
                          "only alone)",
                          m, c->gpus, Q_MAX_GPUS, (long long)c->gpu_memory_mib,
                          (long long)c->cpu_milli, (long long)c->memory_bytes, c->weight,
                          c->gpu_milli);
            return -1;
        }
        st->wl[m] = *c;
    }
    st->nwl = in->nworkload;
    return 0;
}

int q__place_setup(q_state *st, const struct q_input *in, aiq_err *err) {
    st->placer = in->placer && in->placer->score ? in->placer : NULL;
    st->pmode = st->placer ? Q__PM_SCORE
                           : in->policy.placement == AIQ_PLACE_FGD ? Q__PM_FGD : Q__PM_LEGACY;
    st->innodes = in->nodes;
    st->nplace_err = 0;
    st->nwl = 0;
    st->wsum = 0;
    if (st->pmode == Q__PM_LEGACY) return 0;
    if (in->nworkload > 0 || in->workload) {
        if (workload_copy(st, in, err)) return -1;
    } else if (workload_from_jobs(st, in)) {
        aiq_err_set(err, AIQ_ENOMEM, "queue: out of memory for the workload");
        return -1;
    }
    for (int m = 0; m < st->nwl; m++) st->wsum += st->wl[m].weight;
    return 0;
}
