/* grow.c -- elastic jobs grow into idle capacity. After the walk has
 * decided every pending job, what is still free (outside the backfill
 * reservation and the claims of jobs that preempt) is idle; running
 * elastic jobs below their maximum, and elastic jobs admitted this cycle,
 * take it one replica at a time, in queue order (level, then score, as
 * the policy ranks them), each as far as it can before the next. A grown
 * replica stays in the job's domain and GPU model and counts against its
 * quota like any other. Growth never takes what a waiting job could use
 * now, and a later job that needs it shrinks the job again (preempt.c)
 * before anyone is preempted. Non-preemptible jobs never grow (their
 * extra replicas could not be taken back). A running job keeps off the
 * nodes the caller says it must avoid (q_job.grow_avoid: where its last
 * growth did not start). Bounded by Q__MAX_GROW replicas per cycle. */
#include "queue/q_int.h"

#include <string.h>

/* A growth candidate: a running job (k >= 0, runl index) or one admitted
 * this cycle (order index a). */
typedef struct {
    double score;
    double queued;
    int32_t level;
    int32_t job;
    int32_t k;
    int32_t place_off;  /* admitted this cycle: its placements */
} gcand;

typedef struct {
    const gcand *c;
    const struct q_input *in;
} gctx;

static int gcand_cmp(const void *vctx, int32_t x, int32_t y) {
    const gctx *g = vctx;
    const gcand *a = &g->c[x], *b = &g->c[y];
    if (a->level != b->level) return a->level < b->level ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->queued != b->queued) return a->queued < b->queued ? -1 : 1;
    return a->job < b->job ? -1 : (a->job > b->job);
}

static bool growable(const struct q_job *j) {
    return j->max_replicas > 0 && !j->non_preemptible && !j->terminating && j->stopping == 0;
}

/* Growth of j keeps off the nodes it must avoid: they are claimed whole
 * (claims are never counted as free) while it grows, then given back as
 * they were (sv holds what was there). on: claim, else restore. */
typedef struct {
    uint64_t cl_mask;
    int64_t cl_cpu, cl_mem;
} claim_sv;

static void avoid_nodes(q_state *st, const struct q_job *j, bool on, claim_sv *sv) {
    for (int k = 0; k < j->ngrow_avoid; k++) {
        q__node *n = &st->ns.n[j->grow_avoid[k]];
        if (on) {
            sv[k].cl_mask = n->cl_mask;
            sv[k].cl_cpu = n->cl_cpu;
            sv[k].cl_mem = n->cl_mem;
            n->cl_mask = ~0ull;
            n->cl_cpu = n->cpu_free > n->cl_cpu ? n->cpu_free : n->cl_cpu;
            n->cl_mem = n->mem_free > n->cl_mem ? n->mem_free : n->cl_mem;
        } else {
            n->cl_mask = sv[k].cl_mask;
            n->cl_cpu = sv[k].cl_cpu;
            n->cl_mem = sv[k].cl_mem;
        }
    }
    st->epoch++; /* cached "fits" answers are stale */
}

/* Is there a job to grow: a running elastic job below its maximum
 * (check_input noted whether any running job is elastic: no pass over
 * running jobs when none is), or one of the few admitted this cycle? */
static inline bool any_growable(const q_state *st, const struct q_input *in) {
    bool any = false;
    for (int k = 0; k < st->nrunl && !any && st->any_elastic; k++) {
        const struct q_job *j = &in->jobs[st->runl[k]];
        any = growable(j) && j->replicas < j->max_replicas;
    }
    for (int a = 0; a < st->nadmitted && !any; a++) {
        const struct q_job *j = &in->jobs[st->ord[st->admitted[a]].slot];
        any = growable(j) && q__size(j) < j->max_replicas;
    }
    return any;
}

/* Fills c with the growth candidates (running jobs that are not victims
 * and not resized this cycle, then jobs admitted this cycle), unsorted;
 * returns how many. */
static inline int grow_candidates(const q_state *st, const struct q_input *in, gcand *c) {
    int n = 0;
    for (int k = 0; k < st->nrunl; k++) {
        const struct q_job *j = &in->jobs[st->runl[k]];
        const q__rinf *ri = &st->rinf[k];
        if (!growable(j) || ri->victim || ri->size != j->replicas || j->replicas >= j->max_replicas)
            continue;
        c[n++] = (gcand){ri->score, j->queued, ri->level, st->runl[k], k, 0};
    }
    for (int a = 0; a < st->nadmitted; a++) {
        const q__orec *o = &st->ord[st->admitted[a]];
        const struct q_job *j = &in->jobs[o->slot];
        if (!growable(j) || o->replicas >= j->max_replicas) continue;
        /* eager results are still in queue order (rseq) here */
        int32_t off = st->eta_lazy ? st->res[o->slot].place_off : st->rseq[st->admitted[a]].place_off;
        c[n++] = (gcand){o->score, o->queued, o->level, o->slot, -1, off};
    }
    return n;
}

/* Grows candidate g one replica at a time, while its quota, the free
 * capacity of its domain and *budget allow, and pushes the Q_ACT_GROW
 * action when it grew. Returns 0, or -1 out of memory. */
static int grow_one(q_state *st, const struct q_input *in, const gcand *g, bool spread,
                    int *budget) {
    const struct q_job *j = &in->jobs[g->job];
    int size;
    const struct q_place *first;
    double left;
    if (g->k >= 0) {
        size = j->replicas;
        first = &j->placement[0];
        left = j->end_time > in->now ? j->end_time - in->now : 0;
    } else {
        size = q__size(j);
        first = &st->places[g->place_off];
        left = q__pred_runtime(j);
    }
    q__req req;
    memset(&req, 0, sizeof req);
    req.dom = st->ns.n[first->node].dom; /* a gang stays in its domain */
    req.model = q__resolve(&st->models, j->gpu_model);
    req.replicas = 1;
    req.gpus = j->gpus;
    req.gmem = j->gpu_memory_mib;
    req.milli = j->gpu_milli;
    req.cpu = j->cpu_milli;
    req.mem = j->memory_bytes;
    if (req.model == Q__UNKNOWN || req.gpus > Q_MAX_GPUS) return 0;
    q__res need;
    q__need_n(j, 1, false, &need);
    int64_t u = q__units(j->gpus, j->gpu_memory_mib, j->gpu_milli);
    double hours = (double)u * left / 3600.0;
    int off = st->nplaces, grown = 0;
    claim_sv sv[Q_MAX_GROW_AVOID];
    if (g->k >= 0 && j->ngrow_avoid > 0) avoid_nodes(st, j, true, sv);
    while (size + grown < j->max_replicas && *budget > 0) {
        if (q__quota_fits(st, in, j->user, j->group, &need, hours, false)) break;
        int p = q__place(st, &st->ns, &req, true, spread);
        if (p < 0) return -1; /* the cycle fails: its node set is not used again */
        if (p == 0) break;
        q__quota_add(st, in, j->user, j->group, &need, hours, false);
        st->epoch++;
        grown++;
        (*budget)--;
    }
    if (g->k >= 0 && j->ngrow_avoid > 0) avoid_nodes(st, j, false, sv);
    if (grown == 0) return 0;
    if (g->k >= 0) st->rinf[g->k].size = size + grown;
    struct q_action act = {g->job, -1, size + grown, off, grown, Q_ACT_GROW, Q_R_GROWN};
    return q__act_push(st, &act) ? -1 : 0;
}

/* Elastic growth after the walk; see q_int.h. */
int q__grow_jobs(q_state *st, const struct q_input *in, const q_scorer *sc, bool spread) {
    if (in->policy.no_grow || !in->actions_on) return 0;
    if (!any_growable(st, in)) return 0;
    if (q__rinf_init(st, in)) return -1;
    q__score_running(st, in, sc);
    gcand *c = q__alloc(st, (size_t)(st->nrunl + st->nadmitted + 1) * sizeof *c);
    if (!c) return -1;
    int n = grow_candidates(st, in, c);
    int rc = 0;
    if (Q_GROW(st, st->gcand, st->cap_gcand, (size_t)n + 1) ||
        Q_GROW(st, st->tmp1, st->cap_tmp1, (size_t)n + 1)) {
        rc = -1;
        goto out_free;
    }
    int32_t *idx = st->gcand;
    for (int i = 0; i < n; i++) idx[i] = i;
    gctx gx = {c, in};
    q__msort(idx, n, st->tmp1, gcand_cmp, &gx);
    int budget = Q__MAX_GROW;
    for (int x = 0; x < n && budget > 0 && rc == 0; x++)
        rc = grow_one(st, in, &c[idx[x]], spread, &budget);
out_free:
    q__free(st, c);
    return rc;
}
