/* cycle.c -- one queue cycle (q_cycle_run): input checks, the walk over
 * the queue order that decides admit / wait / reject for every pending job,
 * head-of-line blocking, and the EASY backfill reservation for the first
 * job that cannot start. Estimates are left to eta.c. */
#include "queue/q_int.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Field codes for Q_R_INVALID, as in order.c. */
enum { Q_BAD_REPLICAS, Q_BAD_GPUS, Q_BAD_GPU_MEM, Q_BAD_CPU, Q_BAD_MEM,
       Q_BAD_USER, Q_BAD_GROUP, Q_BAD_KEY, Q_BAD_GPU_MILLI };

static int64_t bad_value(const q__orec *o) {
    switch (o->bad) {
    case Q_BAD_REPLICAS: return o->replicas;
    case Q_BAD_GPUS: return o->gpus;
    case Q_BAD_GPU_MEM: return o->gmem;
    case Q_BAD_CPU: return o->cpu;
    case Q_BAD_MEM: return o->mem;
    case Q_BAD_GPU_MILLI: return o->milli;
    case Q_BAD_USER: return o->user;
    case Q_BAD_GROUP: return o->group;
    default: return 0;
    }
}

static void req_of_rec(const q__orec *o, q__req *r) {
    memset(r, 0, sizeof *r);
    r->dom = o->dom;
    r->model = o->model;
    r->replicas = o->replicas;
    r->gpus = o->gpus;
    r->gmem = o->gmem;
    r->milli = o->milli;
    r->cpu = o->cpu;
    r->mem = o->mem;
}

static void req_of(const struct q_job *j, int32_t dom, int32_t model, q__req *r) {
    memset(r, 0, sizeof *r);
    r->dom = dom;
    r->model = model;
    r->replicas = q__size(j);
    r->gpus = j->gpus;
    r->gmem = j->gpu_memory_mib;
    r->milli = j->gpu_milli;
    r->cpu = j->cpu_milli;
    r->mem = j->memory_bytes;
}

/* Checks the input's shape and the running jobs' placements, and lists the
 * running jobs in st->runl. Returns 0, or -1 with err set. */
static int check_input(q_state *st, const struct q_input *in, aiq_err *err) {
    if (in->nnodes < 0 || in->nnodes > Q_MAX_NODES || (in->nnodes && !in->nodes))
        return aiq_err_field(err, AIQ_EINVAL, "nnodes", "nnodes: must be 0..%d with nodes set, got %d",
                             Q_MAX_NODES, in->nnodes), -1;
    if (in->njobs < 0 || in->njobs > Q_MAX_JOBS || (in->njobs && !in->jobs))
        return aiq_err_field(err, AIQ_EINVAL, "njobs", "njobs: must be 0..%d with jobs set, got %d",
                             Q_MAX_JOBS, in->njobs), -1;
    if (in->nusers < 0 || (in->nusers && !in->users) || in->ngroups < 0 ||
        (in->ngroups && !in->groups))
        return aiq_err_field(err, AIQ_EINVAL, "nusers", "nusers %d / ngroups %d: must be >= 0 with arrays set",
                             in->nusers, in->ngroups), -1;
    int nl = in->policy.nlevels;
    if (nl < 1 || nl > AIQ_MAX_LEVELS)
        return aiq_err_field(err, AIQ_EINVAL, "policy.nlevels", "policy.nlevels: must be 1..%d, got %d",
                             AIQ_MAX_LEVELS, nl), -1;
    for (int g = 0; g < in->ngroups; g++)
        if (in->groups[g].cohort < 0 || in->groups[g].cohort > in->ngroups)
            return aiq_err_field(err, AIQ_EINVAL, "groups[].cohort", "groups[%d] (%s): cohort must be 0..%d, got %d",
                                 g, in->groups[g].name ? in->groups[g].name : "?", in->ngroups,
                                 in->groups[g].cohort), -1;
    if (Q_GROW(st, st->runl, st->cap_runl, (size_t)in->njobs + 1))
        return aiq_err_set(err, AIQ_ENOMEM, "queue: out of memory"), -1;
    st->nrunl = 0;
    st->any_term = st->any_elastic = false;
    for (int i = 0; i < in->njobs; i++) {
        const struct q_job *j = &in->jobs[i];
        if (j->state == Q_JOB_PENDING) continue;
        if (j->state != Q_JOB_RUNNING)
            return aiq_err_field(err, AIQ_EINVAL, "jobs[].state", "jobs[%d] (%s): state must be pending or running, got %d",
                                 i, j->key ? j->key : "?", (int)j->state), -1;
        st->runl[st->nrunl++] = i;
        if (j->gpus < 0 || j->gpus > Q_MAX_GPUS || j->gpu_memory_mib < 0 ||
            j->gpu_memory_mib > Q__MAX_GPU_MEM || j->cpu_milli < 0 || j->cpu_milli > Q__MAX_CPU ||
            j->memory_bytes < 0 || j->memory_bytes > Q__MAX_MEM || j->gpu_milli < 0 ||
            j->gpu_milli > 999 || (j->gpu_milli > 0 && (j->gpus > 0 || j->gpu_memory_mib > 0)))
            return aiq_err_field(err, AIQ_EINVAL, "jobs[].resources",
                                 "jobs[%d] (%s): running with out-of-range resources (gpus %d, "
                                 "gpuMemoryMiB %lld, gpu_milli %d, cpu %lldm, memory %lld)",
                                 i, j->key ? j->key : "?", j->gpus, (long long)j->gpu_memory_mib,
                                 j->gpu_milli, (long long)j->cpu_milli,
                                 (long long)j->memory_bytes), -1;
        if (j->replicas < 1 || j->replicas > AIQ_MAX_REPLICAS || !j->placement)
            return aiq_err_field(err, AIQ_EINVAL, "jobs[].placement",
                                 "jobs[%d] (%s): running with %d replicas needs that many placements",
                                 i, j->key ? j->key : "?", j->replicas), -1;
        if (j->stopping < 0 || j->stopping >= j->replicas ||
            (j->max_replicas > 0 && (j->max_replicas > AIQ_MAX_REPLICAS || j->replicas > j->max_replicas ||
                                     j->min_replicas < 0)))
            return aiq_err_field(err, AIQ_EINVAL, "jobs[].replicas",
                                 "jobs[%d] (%s): running with %d replicas (%d stopping) outside "
                                 "its range %d..%d", i, j->key ? j->key : "?", j->replicas,
                                 j->stopping, j->min_replicas, j->max_replicas), -1;
        if (j->ngrow_avoid < 0 || j->ngrow_avoid > Q_MAX_GROW_AVOID || (j->ngrow_avoid && !j->grow_avoid))
            return aiq_err_field(err, AIQ_EINVAL, "jobs[].grow_avoid",
                                 "jobs[%d] (%s): ngrow_avoid must be 0..%d with grow_avoid set, got %d",
                                 i, j->key ? j->key : "?", Q_MAX_GROW_AVOID, j->ngrow_avoid), -1;
        for (int k = 0; k < j->ngrow_avoid; k++)
            if (j->grow_avoid[k] < 0 || j->grow_avoid[k] >= in->nnodes)
                return aiq_err_field(err, AIQ_EINVAL, "jobs[].grow_avoid",
                                     "jobs[%d] (%s): grow_avoid[%d] node %d out of range 0..%d",
                                     i, j->key ? j->key : "?", k, (int)j->grow_avoid[k], in->nnodes - 1), -1;
        st->any_term |= j->terminating || j->stopping > 0;
        st->any_elastic |= j->max_replicas > 0 && !j->non_preemptible && !j->terminating &&
                           (j->replicas - j->stopping > q__min_size(j) || j->replicas < j->max_replicas);
        for (int k = 0; k < j->replicas; k++) {
            const struct q_place *p = &j->placement[k];
            int ng = p->node >= 0 && p->node < in->nnodes ? in->nodes[p->node].ngpus : -1;
            if (ng < 0 || ng > Q_MAX_GPUS || (ng < 64 && (p->gpu_mask >> ng) != 0))
                return aiq_err_field(err, AIQ_EINVAL, "jobs[].placement",
                                     "jobs[%d] (%s): placement[%d] node %d, GPU mask 0x%llx out of range",
                                     i, j->key ? j->key : "?", k, p->node,
                                     (unsigned long long)p->gpu_mask), -1;
        }
    }
    return 0;
}

static bool dom_ok(const q__req *r, int d) { return r->dom < 0 || r->dom == d; }

/* Could some allowed domain hold r's whole GPUs? false means q__place and
 * q__probe both fail at their first test (whole free GPUs per domain), so
 * the walk skips them: on a full cluster this decides most of the queue
 * behind the head without a memo lookup. */
static bool gpu_room(const q__nodeset *ns, const q__req *r) {
    if (r->gpus <= 0) return true;
    if (r->gpus > Q_MAX_GPUS || r->replicas < 1) return false;
    int64_t want = (int64_t)r->gpus * r->replicas;
    if (r->dom >= 0) return r->dom < ns->ndom && ns->dom_free[r->dom] >= want;
    for (int d = 0; d < ns->ndom; d++)
        if (ns->dom_free[d] >= want) return true;
    return false;
}

/* How many replicas of hr node i of the future set holds (0 outside the
 * domains hr may use). */
static int fut_fit(const q__nodeset *f, int i, const q__req *hr) {
    return dom_ok(hr, f->n[i].dom) ? q__node_fit(&f->n[i], hr, false) : 0;
}

/* Seeds the future node set st->fut with the nodes as they are now, and
 * counts per node how many replicas of hr fit there (st->kfit) and per
 * domain their sum (st->dsum). Returns 0, or -1 when out of memory. */
static int fut_seed(q_state *st, const struct q_input *in, const q__req *hr) {
    q__nodeset *f = &st->fut;
    if (q__nodeset_copy(st, f, &st->ns)) return -1;
    int nn = f->nn, nd = f->ndom;
    if (Q_GROW(st, st->kfit, st->cap_kfit, (size_t)nn + 1) ||
        Q_GROW(st, st->touched, st->cap_touched, (size_t)nn + 1) ||
        Q_GROW(st, st->dsum, st->cap_dsum, (size_t)nd + 1) ||
        Q_GROW(st, st->heap, st->cap_heap, (size_t)in->njobs + 1))
        return -1;
    memset(st->dsum, 0, (size_t)nd * sizeof *st->dsum);
    for (int i = 0; i < nn; i++) {
        int k = fut_fit(f, i, hr);
        st->kfit[i] = k;
        st->dsum[f->n[i].dom] += k;
        st->touched[i] = 0;
    }
    return 0;
}

/* Queues the predicted ends of the running jobs and of the jobs admitted
 * so far in st->heap. Returns how many there are. */
static int fut_queue_ends(q_state *st, const struct q_input *in) {
    int nh = 0;
    for (int k = 0; k < st->nrunl; k++) {
        const struct q_job *j = &in->jobs[st->runl[k]];
        /* Jobs being stopped (or chosen as victims) free their room for
         * whoever preempts them, not for the head: never released here. */
        if (j->terminating || j->stopping > 0 || (st->rinf_on && st->rinf[k].size != j->replicas))
            continue;
        if (j->end_time > 0) st->heap[nh++] = (q__ev){j->end_time, st->runl[k], -1, 0};
    }
    for (int k = 0; k < st->nadmitted; k++) {
        const q__orec *o = &st->ord[st->admitted[k]];
        if (o->pred > 0)
            st->heap[nh++] = (q__ev){in->now + o->pred, o->slot,
                                     st->eta_lazy ? st->res[o->slot].place_off
                                                  : st->rseq[st->admitted[k]].place_off, 0};
    }
    q__heapify(st->heap, nh);
    return nh;
}

/* Does some domain hr may use hold hr's gang in the future set? */
static bool fut_holds(const q_state *st, const q__req *hr) {
    for (int d = 0; d < st->fut.ndom; d++)
        if (dom_ok(hr, d) && st->dsum[d] >= hr->replicas) return true;
    return false;
}

/* Releases in the future set every job that ends at t (the heap's first
 * time), listing the nodes they leave in tl. Returns how many nodes. */
static int fut_release_at(q_state *st, const struct q_input *in, double t, int *nh,
                          int32_t *tl) {
    int ntl = 0;
    while (*nh > 0 && st->heap[0].t == t) {
        q__ev e = q__heap_pop(st->heap, nh);
        const struct q_job *j = &in->jobs[e.job];
        const struct q_place *pl = e.aux < 0 ? j->placement : &st->places[e.aux];
        q__req jr;
        req_of(j, -1, -1, &jr);
        for (int k = 0; k < jr.replicas; k++) {
            q__release(&st->fut, &pl[k], &jr);
            if (!st->touched[pl[k].node]) {
                st->touched[pl[k].node] = 1;
                tl[ntl++] = pl[k].node;
            }
        }
    }
    return ntl;
}

/* Advances time through the queued ends, releasing each in the future set
 * and recounting the nodes it left, until some domain holds hr's gang.
 * Returns true with *t the time it does, false when the ends run out. */
static bool fut_advance(q_state *st, const struct q_input *in, const q__req *hr, int nh,
                        double *t) {
    q__nodeset *f = &st->fut;
    bool found = fut_holds(st, hr);
    int32_t *tl = st->tmp3;
    while (!found && nh > 0) {
        *t = st->heap[0].t;
        int ntl = fut_release_at(st, in, *t, &nh, tl);
        for (int k = 0; k < ntl; k++) {
            int i = tl[k];
            st->touched[i] = 0;
            int nk = fut_fit(f, i, hr);
            st->dsum[f->n[i].dom] += nk - st->kfit[i];
            st->kfit[i] = nk;
            if (dom_ok(hr, f->n[i].dom) && st->dsum[f->n[i].dom] >= hr->replicas) found = true;
        }
    }
    return found;
}

/* Places the head hr on the future set and holds the GPUs, CPU and memory
 * it took there on the current nodes (res_mask, res_cpu, res_mem); the
 * placements themselves are dropped. Returns 1, 0 when it does not fit
 * after all, -1 when out of memory. */
static int hold_head(q_state *st, const q__req *hr, bool spread) {
    int off = st->nplaces;
    int rc = q__place(st, &st->fut, hr, false, spread);
    if (rc <= 0) return rc;
    for (int k = off; k < st->nplaces; k++) {
        q__node *n = &st->ns.n[st->places[k].node];
        n->res_mask |= st->places[k].gpu_mask;
        n->res_cpu += hr->cpu;
        n->res_mem += hr->mem;
    }
    st->nplaces = off;
    return 1;
}

/* Counts per domain what backfill candidates can get without touching the
 * reservation or the claims (see avoid_room): wholly free GPUs (dgfree)
 * and the largest free share of one GPU (dgmax). Returns 0, or -1 when
 * out of memory. */
static int backfill_room(q_state *st) {
    if (Q_GROW(st, st->dgmax, st->cap_dgmax, (size_t)st->ns.ndom + 1) ||
        Q_GROW(st, st->dgfree, st->cap_dgfree, (size_t)st->ns.ndom + 1))
        return -1;
    for (int d = 0; d < st->ns.ndom; d++) st->dgmax[d] = st->dgfree[d] = 0;
    for (int i = 0; i < st->ns.nn; i++) {
        const q__node *n = &st->ns.n[i];
        if (!n->sched) continue;
        for (int g = 0; g < n->ngpus; g++) {
            if (((n->res_mask | n->cl_mask) >> g) & 1u) continue;
            int64_t fr = n->tot[g] - n->used[g];
            if (fr > st->dgmax[n->dom]) st->dgmax[n->dom] = fr;
            st->dgfree[n->dom] += n->used[g] == 0;
        }
    }
    return 0;
}

/* Finds when the head job h can start from the running and just-admitted
 * jobs' predicted ends, and holds its resources on st->ns (res_mask,
 * res_cpu, res_mem). Returns 1 with *t_res set, 0 when no predicted end
 * frees enough, -1 when out of memory. */
static int reserve(q_state *st, const struct q_input *in, const q__req *hr,
                   bool spread, double *t_res) {
    if (fut_seed(st, in, hr)) return -1;
    int nh = fut_queue_ends(st, in);
    double t = in->now;
    if (!fut_advance(st, in, hr, nh, &t)) return 0;
    int rc = hold_head(st, hr, spread);
    if (rc <= 0) return rc; /* 0 cannot happen: the counts said it fits */
    *t_res = t > in->now ? t : in->now;
    return backfill_room(st) ? -1 : 1;
}

/* Could r fit without the resources held for the reservation? false means
 * q__place(avoid) fails: a whole-GPU gang needs gpus x replicas free GPUs
 * outside the reservation in one allowed domain (st->dgfree), a shared
 * one a GPU outside it with gmem free (st->dgmax). Both were counted when
 * the reservation was made and only shrink during the rest of the walk
 * (admissions take; a probe gives back what it took), so they are upper
 * bounds. CPU-only requests: true (not decided here). */
static bool avoid_room(const q_state *st, const q__req *r) {
    if (r->replicas < 1) return true;
    const q__nodeset *ns = &st->ns;
    const int64_t *have = r->gpus > 0 ? st->dgfree : st->dgmax;
    int64_t want = r->gpus > 0 ? (int64_t)r->gpus * r->replicas : r->gmem;
    /* A fraction's MiB depends on the GPU: left to q__place. */
    if (r->gpus == 0 && (r->gmem <= 0 || r->milli > 0)) return true;
    if (r->dom >= 0) return r->dom < ns->ndom && have[r->dom] >= want;
    for (int d = 0; d < ns->ndom; d++)
        if (have[d] >= want) return true;
    return false;
}

/* Fills req from o and checks once per node shapes whether o can never
 * start (too big for its quota, no node or domain that holds it).
 * Returns 1 with r filled when rejected, else 0. */
static int rejected(q_state *st, const struct q_input *in, q__orec *o, q__req *req,
                    struct q_result *r) {
    req_of_rec(o, req);
    if (o->fit_key == st->fit_key) return 0;
    if (o->dom == Q__UNKNOWN || o->model == Q__UNKNOWN) {
        /* The nodes changed: maybe the name exists now. */
        o->dom = req->dom = q__resolve(&st->doms, in->jobs[o->slot].domain);
        o->model = req->model = q__resolve(&st->models, in->jobs[o->slot].gpu_model);
    }
    if (q__quota_reject(st, in, o, r) || q__reject_check(st, req, r)) return 1;
    o->fit_key = st->fit_key; /* clean jobs skip this next cycle */
    return 0;
}

/* Before the walk: the pending jobs of cohort groups that could start
 * within their group's quota hold their need against borrowers until the
 * walk reaches them (quota.c, "pending demand"). */
static void pend_init(q_state *st, const struct q_input *in) {
    if (!st->any_cohort) return;
    for (int k = 0; k < st->norder; k++) {
        q__orec *o = &st->ord[k];
        o->held = 0;
        if (o->bad >= 0 || o->suspended || !q__pend_wants(st, in, o)) continue;
        q__req req;
        struct q_result tmp;
        memset(&tmp, 0, sizeof tmp);
        if (rejected(st, in, o, &req, &tmp)) continue; /* the walk says why */
        o->held = 1;
        q__pend_hold(st, o, +1);
    }
}

static void admit(q_state *st, const struct q_input *in, q__orec *o, int k,
                  struct q_result *r, int off, const q__req *req) {
    r->decision = Q_DEC_ADMIT;
    r->reason = Q_R_NONE;
    r->place_off = off;
    r->nplace = (int16_t)o->replicas;
    r->eta = in->now;
    q__quota_commit(st, in, o);
    q__soon_admit(st, off, req);
    st->admitted[st->nadmitted++] = k;
    st->epoch++; /* capacity changed: cached "fits" answers are stale */
}

/* Stores one 64-byte result at its job index. The stores land all over
 * a 6 MB array, so on x86 they bypass the cache (streaming stores): no
 * read of the old line, no write-back later. */
static void store_result(struct q_result *dst, const struct q_result *src) {
#if defined(__SSE2__)
    const __m128i *s = (const __m128i *)src;
    __m128i *d = (__m128i *)dst;
    _mm_stream_si128(d, _mm_loadu_si128(s));
    _mm_stream_si128(d + 1, _mm_loadu_si128(s + 1));
    _mm_stream_si128(d + 2, _mm_loadu_si128(s + 2));
    _mm_stream_si128(d + 3, _mm_loadu_si128(s + 3));
#else
    *dst = *src;
#endif
}

/* What the walk carries from one job to the next. */
typedef struct {
    bool backfill, spread, lazy;
    int head;             /* slot of the head (first job that waits for capacity), -1 */
    int pos, lvl, poslvl; /* positions so far, over the queue and in level lvl */
    bool have_res;        /* the head has a reservation at t_res */
    double t_res;
    q__res hneed;         /* the head's need, quota and budget, for backfill */
    double hhours;
    int32_t huser, hgroup;
} walker;

/* Starts job o's result: its score, level and flags, no blocker. */
static inline void result_start(struct q_result *r, const q__orec *o) {
    memset(r, 0, sizeof *r);
    r->score = o->score;
    r->level = o->level;
    r->promoted = o->promoted;
    r->score_failed = o->score_failed;
    r->blocker = -1;
}

/* Gives o its positions, over the queue and within its level. */
static inline void count_position(walker *w, const q__orec *o, struct q_result *r) {
    w->pos++;
    if (o->level != w->lvl) {
        w->lvl = o->level;
        w->poslvl = 0;
    }
    r->pos = w->pos;
    r->pos_level = ++w->poslvl;
}

/* o waits for quota (r says which): before the head, quota that victims
 * (or jobs being stopped) give back may be claimed for it, like every
 * preemption. Returns 0, or -1 when out of memory. */
static int quota_wait(q_state *st, const struct q_input *in, const q_scorer *sc,
                      const walker *w, q__orec *o, const q__req *req, struct q_result *r) {
    if (st->room_any && w->head < 0 && (r->reason == Q_R_QUOTA || r->reason == Q_R_BORROW)) {
        struct q_result keep = *r;
        int rc = q__make_room(st, in, sc, o, req, w->spread, r);
        if (rc < 0) return -1;
        if (rc == 1) return 0;
        *r = keep;
    }
    return 0;
}

/* o comes after the head: it waits blocked behind it, or with a
 * reservation it may backfill, never taking quota, budget or resources
 * the reserved job needs. Returns 0, or -1 when out of memory. */
static inline int behind_head(q_state *st, const struct q_input *in, const walker *w,
                              q__orec *o, int k, const q__req *req, struct q_result *r) {
    r->blocker = w->head;
    r->reason = Q_R_BLOCKED;
    if (!w->have_res) return 0;
    /* A borrower does not backfill past a lender's job that waits for
     * room (the room may be what a reclaim freed for it). */
    if (q__blocked_lenders(st, in, o) && q__would_borrow(st, in, o)) return 0;
    bool su = o->user >= 0 && o->user == w->huser;
    bool sg = o->group >= 0 && o->group == w->hgroup;
    if (su || sg) {
        struct q_result tmp;
        memset(&tmp, 0, sizeof tmp);
        if (q__quota_check(st, in, o, su ? &w->hneed : NULL, sg ? &w->hneed : NULL,
                           su ? w->hhours : 0, sg ? w->hhours : 0, &tmp))
            return 0;
    }
    if (gpu_room(&st->ns, req)) {
        bool shortjob = o->pred > 0 && in->now + o->pred <= w->t_res;
        int off = st->nplaces;
        int rc = shortjob || avoid_room(st, req) ? q__place(st, &st->ns, req, !shortjob, w->spread) : 0;
        if (rc < 0) return -1;
        if (rc == 1) {
            admit(st, in, o, k, r, off, req);
            r->backfilled = true;
            r->blocker = -1;
            return 0;
        }
        if (!shortjob) {
            rc = q__probe(st, req, false, w->spread);
            if (rc < 0) return -1;
            if (rc == 1) return 0; /* fits, but only by delaying the head */
        }
    }
    r->reason = Q_R_CAPACITY;
    r->blocker = -1;
    return 0;
}

/* Before the head: o starts now if it fits, else room may be made for it,
 * else it becomes the head, with a reservation under EASY backfill.
 * Returns 0, or -1 when out of memory. */
static inline int start_or_head(q_state *st, const struct q_input *in, const q_scorer *sc,
                                walker *w, q__orec *o, int k, const q__req *req,
                                struct q_result *r) {
    int off = st->nplaces;
    int rc = q__place(st, &st->ns, req, false, w->spread);
    if (rc < 0) return -1;
    if (rc == 1) {
        admit(st, in, o, k, r, off, req);
        return 0;
    }
    if (st->room_any) {
        rc = q__make_room(st, in, sc, o, req, w->spread, r);
        if (rc < 0) return -1;
        if (rc == 1) return 0;
    }
    w->head = o->slot;
    r->reason = Q_R_CAPACITY;
    if (!w->backfill) return 0;
    double t_res = w->t_res;
    rc = reserve(st, in, req, w->spread, &t_res);
    if (rc < 0) return -1;
    w->t_res = t_res;
    w->have_res = rc == 1;
    q__need_rec(o, &w->hneed);
    w->hhours = q__rec_gpu_hours(o);
    w->huser = o->user;
    w->hgroup = o->group;
    return 0;
}

/* Decides job o (the k-th of the order) into r. Returns 0, or -1 when out
 * of memory. */
static inline int decide(q_state *st, const struct q_input *in, const q_scorer *sc,
                         walker *w, q__orec *o, int k, struct q_result *r) {
    if (o->bad >= 0) {
        r->decision = Q_DEC_REJECT;
        r->reason = Q_R_INVALID;
        r->res = (uint8_t)o->bad;
        r->need = bad_value(o);
        return 0;
    }
    if (o->suspended) {
        r->decision = Q_DEC_WAIT;
        r->reason = Q_R_SUSPENDED;
        return 0;
    }
    q__req req;
    if (rejected(st, in, o, &req, r)) {
        r->decision = Q_DEC_REJECT;
        return 0;
    }
    count_position(w, o, r);
    r->decision = Q_DEC_WAIT;
    if (q__quota_check(st, in, o, NULL, NULL, 0, 0, r)) return quota_wait(st, in, sc, w, o, &req, r);
    if (w->head >= 0) return behind_head(st, in, w, o, k, &req, r);
    return start_or_head(st, in, sc, w, o, k, &req, r);
}

/* Records the decision of the k-th job (o): its lender's hold when it
 * waits for room, the decision and reason in st->dw, and the result at its
 * job index (lazy) or in order (eager: the estimate pass reads them). */
static inline void record(q_state *st, const struct q_input *in, bool lazy, q__orec *o, int k,
                          bool was_held, const struct q_result *r) {
    if (was_held && r->decision == Q_DEC_WAIT && (r->reason == Q_R_BLOCKED || r->reason == Q_R_CAPACITY))
        q__lender_blocked(st, in, o);
    st->dw[2 * k] = r->decision;
    st->dw[2 * k + 1] = r->reason;
    if (lazy) { /* no estimate pass over rseq: store in place */
        store_result(&st->res[o->slot], r);
        st->kof[o->slot] = k;
    } else {
        st->rseq[k] = *r; /* in order: sequential; scattered after the ETA */
    }
}

/* Decides every job in queue order. Results are built in a local struct
 * and stored once, so the walk streams through the order records and only
 * writes each job's result line. */
static int walk(q_state *st, const struct q_input *in, const q_scorer *sc, int *head_out,
                double *t_res_out) {
    walker w;
    memset(&w, 0, sizeof w);
    w.backfill = in->policy.backfill == AIQ_BACKFILL_EASY;
    w.spread = in->policy.placement == AIQ_PLACE_SPREAD;
    w.lazy = st->eta_lazy;
    w.head = w.lvl = -1;
    w.huser = w.hgroup = -1;
    st->nadmitted = 0;
    for (int k = 0; k < st->norder; k++) {
        q__orec *o = &st->ord[k];
#if !defined(__SSE2__) /* streaming stores need no line in cache */
        if (w.lazy && k + 8 < st->norder) __builtin_prefetch(&st->res[st->ord[k + 8].slot], 1);
#endif
        struct q_result rr;
        result_start(&rr, o);
        bool was_held = o->held;
        if (o->held) { /* reached: its demand is decided now */
            o->held = 0;
            if (st->any_cohort) q__pend_hold(st, o, -1);
        }
        if (decide(st, in, sc, &w, o, k, &rr)) return -1;
        record(st, in, w.lazy, o, k, was_held, &rr);
    }
#if defined(__SSE2__)
    if (w.lazy) _mm_sfence(); /* order the streaming stores before any reader */
#endif
    *head_out = w.have_res ? w.head : -1;
    *t_res_out = w.t_res;
    return 0;
}

/* Checks the input and builds the working node set and the placement
 * context; counts the schedulable nodes' whole GPUs, total and free, for
 * the factors. Returns AIQ_OK, or the error's code with err set. */
static aiq_rc cycle_nodes(q_state *st, const struct q_input *in, aiq_err *err) {
    if (check_input(st, in, err) || q__nodeset_build(st, in, err) || q__place_setup(st, in, err))
        return err && err->code ? err->code : AIQ_EINVAL;
    st->cl_free = st->cl_total = 0;
    for (int i = 0; i < st->ns.nn; i++) {
        if (!st->ns.n[i].sched) continue;
        st->cl_total += st->ns.n[i].ngpus;
        st->cl_free += st->ns.n[i].nfree;
    }
    return AIQ_OK;
}

/* Sizes the walk's scratch for this cycle: the results (rewritten every
 * cycle, so no copy; aligned so each one is exactly one cache line), the
 * admitted list, the decisions and, per mode, the results in order
 * (eager) or each job's place in the order (lazy). Returns 0, or -1 when
 * out of memory. */
static int walk_scratch(q_state *st, const struct q_input *in) {
    if ((size_t)in->njobs + 1 > st->cap_res) {
        size_t cap = st->cap_res ? st->cap_res : 16;
        while (cap < (size_t)in->njobs + 1) cap *= 2;
        void *raw = q__alloc(st, cap * sizeof *st->res + 64);
        if (!raw) return -1;
        q__free(st, st->res_raw);
        st->res_raw = raw;
        st->res = (struct q_result *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
        st->cap_res = cap;
    }
    if (Q_GROW(st, st->admitted, st->cap_admitted, (size_t)in->njobs + 1) ||
        Q_GROW(st, st->tmp3, st->cap_tmp3, (size_t)in->nnodes + (size_t)in->njobs + 1))
        return -1;
    if (!st->eta_lazy && Q_GROW(st, st->rseq, st->cap_rseq, (size_t)st->norder + 1)) return -1;
    if (Q_GROW(st, st->dw, st->cap_dw, 2 * (size_t)st->norder + 2)) return -1;
    if (st->eta_lazy && Q_GROW(st, st->kof, st->cap_kof, (size_t)in->njobs + 1)) return -1;
    return 0;
}

/* Stores every result at its job index: eager, the pending jobs' from
 * the order, one store per job (lazy: the walk stored them in place);
 * running jobs get an empty one. Then the actions' results. */
static void store_results(q_state *st) {
    for (int k = 0; !st->eta_lazy && k < st->norder; k++) {
#if !defined(__SSE2__)
        if (k + 8 < st->norder) __builtin_prefetch(&st->res[st->ord[k + 8].slot], 1);
#endif
        store_result(&st->res[st->ord[k].slot], &st->rseq[k]);
    }
    struct q_result empty;
    memset(&empty, 0, sizeof empty);
    empty.blocker = -1;
    for (int k = 0; k < st->nrunl; k++) store_result(&st->res[st->runl[k]], &empty);
#if defined(__SSE2__)
    _mm_sfence();
#endif
    q__actions_results(st);
}

/* Fills out from the cycle's state: everything it points to is st's. */
static void output_fill(const q_state *st, const struct q_input *in, int head, double t_res,
                        int nscored, q_output *out) {
    out->njobs = in->njobs;
    out->res = st->res;
    out->order = st->order;
    out->norder = st->norder;
    out->places = st->places;
    out->nadmitted = st->nadmitted;
    out->reserved_job = head;
    out->reserved_time = head >= 0 ? t_res : 0;
    out->nscored = nscored;
    out->actions = st->acts;
    out->nactions = st->nacts;
    out->nsearched = st->nsearch;
    out->nplace_score_errors = st->nplace_err;
}

aiq_rc q_cycle_run(q_state *st, const struct q_input *in, const q_scorer *sc,
                   q_output *out, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    if (!st || !in || !out) return aiq_err_set(err, AIQ_EINVAL, "q_cycle_run: NULL argument");
    memset(out, 0, sizeof *out);
    out->reserved_job = -1;
    st->out_valid = false;
    st->eta_lazy = in->lazy_eta;
    rc = cycle_nodes(st, in, err);
    if (rc != AIQ_OK) goto out_invalidate;
    if (q__quota_init(st, in)) goto out_oom;
    int nscored = 0;
    if (q__order_update(st, in, sc, &nscored, err)) {
        rc = AIQ_ENOMEM;
        goto out_invalidate;
    }
    if (walk_scratch(st, in)) goto out_oom;
    st->nplaces = 0;
    q__memo_clear(st);
    q__room_scan(st, in);
    pend_init(st, in);
    int head = -1;
    double t_res = 0;
    if (walk(st, in, sc, &head, &t_res)) goto out_oom;
    if (q__grow_jobs(st, in, sc, in->policy.placement == AIQ_PLACE_SPREAD)) goto out_oom;
    if (q__eta_run(st, in, head, t_res)) goto out_oom;
    store_results(st);
    output_fill(st, in, head, t_res, nscored, out);
    st->out_valid = true;
    return AIQ_OK;
out_oom:
    rc = aiq_err_set(err, AIQ_ENOMEM, "queue: out of memory in cycle");
out_invalidate:
    q__cache_clear(st);
    memset(out, 0, sizeof *out);
    out->reserved_job = -1;
    return rc;
}
