/* order.c -- the queue order: matches this cycle's jobs to the per-job
 * cache (by slot, else by uid), fills the factor vector and asks the scorer
 * only for jobs that are new, changed or due for a periodic rescore,
 * applies the starvation rule, and keeps the order sorted by merging the
 * few re-inserted jobs into the unchanged rest instead of sorting again. */
#include "queue/q_int.h"

#include <math.h>
#include <string.h>

/* Frees every cached uid and forgets the order. */
void q__cache_clear(q_state *st) {
    for (int i = 0; i < st->njc; i++) {
        q__free(st, st->jc[i].uid);
        st->jc[i].uid = NULL;
    }
    for (int i = 0; i < st->nojc; i++) {
        q__free(st, st->ojc[i].uid);
        st->ojc[i].uid = NULL;
    }
    st->njc = st->nojc = st->norder = 0;
    st->warm = false;
}

static const char *uid_of(const struct q_job *j) {
    if (j->uid) return j->uid;
    return j->key ? j->key : "";
}

static double budget_left(double budget, double used, double committed) {
    if (budget < 0) return 1e9;
    double l = budget - used - committed;
    return l > 0 ? l : 0;
}

static double share(int64_t inuse, int64_t lim) {
    if (lim < 0) return 0;
    if (lim == 0) return inuse > 0 ? 1 : 0;
    return (double)inuse / (double)lim;
}

/* Fills f[Q_NFACTORS] for job j at the start of the cycle. A running
 * job (scored to choose victims and growth) has waited 0 hours and has
 * attained its finished runs plus this one. */
void q__fill_factors(const q_state *st, const struct q_input *in, int j,
                     double *f) {
    const struct q_job *job = &in->jobs[j];
    const struct q_user *u = job->user >= 0 && job->user < in->nusers ? &in->users[job->user] : NULL;
    const struct q_group *g = job->group >= 0 && job->group < in->ngroups ? &in->groups[job->group] : NULL;
    q__res need;
    q__need(job, &need);
    for (int k = 0; k < Q_NFACTORS; k++) f[k] = 0;
    f[Q_F_USER_LEVEL] = u ? u->level : 0;
    f[Q_F_GROUP_LEVEL] = g ? g->level : 0;
    f[Q_F_JOB_PRIORITY] = job->priority;
    f[Q_F_JOB_GPUS] = (double)need.v[Q_RES_GPUS];
    f[Q_F_JOB_GPU_MEMORY_GIB] = (double)need.v[Q_RES_GPU_MEM] / 1024.0;
    f[Q_F_JOB_REPLICAS] = job->replicas;
    f[Q_F_JOB_CPU] = (double)need.v[Q_RES_CPU] / 1000.0;
    f[Q_F_JOB_MEMORY_GIB] = (double)need.v[Q_RES_MEM] / 1073741824.0;
    bool running = job->state == Q_JOB_RUNNING;
    double ran = running && job->started > 0 && in->now > job->started ? in->now - job->started : 0;
    /* A waiting job's clock: now, or with a rescore interval the start of
     * the current interval (q__score_clock), so that its score is the
     * same at every cycle of the interval. */
    double t = running ? in->now : q__score_clock(&in->policy, in->now);
    f[Q_F_WAIT_HOURS] = !running && job->queued > 0 && t > job->queued ? (t - job->queued) / 3600.0 : 0;
    f[Q_F_RUNTIME_ESTIMATE_HOURS] = job->est_runtime_s / 3600.0;
    f[Q_F_RUNTIME_PREDICTED_HOURS] = q__pred_runtime(job) / 3600.0;
    f[Q_F_ATTAINED_GPU_HOURS] = job->attained_gpu_hours + (double)need.v[Q_RES_GPUS] * ran / 3600.0;
    f[Q_F_USAGE_USER_GPU_HOURS] = u ? u->usage_gpu_hours : 0;
    f[Q_F_USAGE_GROUP_GPU_HOURS] = g ? g->usage_gpu_hours : 0;
    f[Q_F_FAIRSHARE_USER] = u ? u->fairshare : 1;
    f[Q_F_FAIRSHARE_GROUP] = g ? g->fairshare : 1;
    f[Q_F_QUOTA_USER_SHARE] = u ? share(st->ugpu0[job->user], u->quota.gpus) : 0;
    f[Q_F_QUOTA_GROUP_SHARE] = g ? share(st->ggpu0[job->group], g->quota.gpus) : 0;
    f[Q_F_CLUSTER_FREE_GPUS] = st->cl_free;
    f[Q_F_CLUSTER_TOTAL_GPUS] = st->cl_total;
    f[Q_F_JOB_IS_GANG] = job->replicas > 1;
    f[Q_F_JOB_ATTEMPTS] = job->attempts;
    f[Q_F_JOB_AGE_HOURS] = job->created > 0 && t > job->created ? (t - job->created) / 3600.0 : 0;
    f[Q_F_BUDGET_USER_LEFT] = u ? budget_left(u->budget_gpu_hours, u->used_gpu_hours, st->ubud0[job->user]) : 1e9;
    f[Q_F_BUDGET_GROUP_LEFT] = g ? budget_left(g->budget_gpu_hours, g->used_gpu_hours, st->gbud0[job->group]) : 1e9;
    f[Q_F_JOB_PREEMPTIONS] = job->preemptions;
    f[Q_F_JOB_CHECKPOINTABLE] = job->checkpointable;
    bool elastic = job->max_replicas > 0;
    f[Q_F_JOB_MIN_REPLICAS] = elastic ? q__min_size(job) : job->replicas;
    f[Q_F_JOB_MAX_REPLICAS] = elastic ? job->max_replicas : job->replicas;
    f[Q_F_JOB_CURRENT_REPLICAS] = running ? job->replicas - (job->terminating ? job->replicas : job->stopping) : 0;
    f[Q_F_JOB_RUNNING] = running;
    f[Q_F_RUN_HOURS] = ran / 3600.0;
    f[Q_F_QUOTA_GROUP_BORROWED_GPUS] = g && g->cohort > 0 && g->quota.gpus >= 0 && st->ggpu0[job->group] > g->quota.gpus
                                           ? (double)(st->ggpu0[job->group] - g->quota.gpus) : 0;
}

/* See queue.h. */
double q_score_clock(const struct q_policy *p, double now) {
    return q__score_clock(p, now);
}

/* See queue.h. */
void q_job_factors(const q_state *st, const struct q_input *in, int j,
                   double *f) {
    if (!st || !in || j < 0 || j >= in->njobs || !st->ugpu0 || !st->ggpu0 ||
        !st->ubud0 || !st->gbud0) {
        for (int k = 0; k < Q_NFACTORS; k++) f[k] = 0;
        return;
    }
    q__fill_factors(st, in, j, f);
}

static void score_job(const q_state *st, const struct q_input *in,
                      const q_scorer *sc, int j, q__jc *e) {
    double f[Q_NFACTORS];
    q__fill_factors(st, in, j, f);
    int nl = in->policy.nlevels;
    e->score_failed = false;
    e->score = in->jobs[j].priority;
    e->base_level = 0;
    if (sc && sc->score && sc->score(sc->ctx, f, &e->score) != 0) {
        e->score = 0;
        e->score_failed = true;
    }
    if (isnan(e->score)) {
        e->score = 0;
        e->score_failed = true;
    }
    if (sc && sc->level) {
        int lv = 0;
        if (sc->level(sc->ctx, f, &lv) != 0 || lv < 0 || lv >= nl) {
            lv = nl - 1;
            e->score_failed = true;
        }
        e->base_level = lv;
    }
}

typedef struct {
    const struct q_input *in;
    const q__jc *jc;
} order_ctx;

static int scmp(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "");
}

/* The first 16 bytes of key, big-endian and zero-padded, so that
 * comparing the two words orders as strcmp does on those bytes. */
static void key_prefix(const char *key, uint64_t kp[2]) {
    kp[0] = kp[1] = 0;
    for (int i = 0; key && i < 16 && key[i]; i++)
        kp[i / 8] |= (uint64_t)(unsigned char)key[i] << (8 * (7 - i % 8));
}

/* Compares two key prefixes as strcmp would the keys' first 16 bytes. */
static int kpre_cmp(const uint64_t a[2], const uint64_t b[2]) {
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    if (a[1] != b[1]) return a[1] < b[1] ? -1 : 1;
    return 0;
}

/* Queue order: level, then score (high first), then queued time, then
 * key (its cached prefix first), then uid. */
static int order_cmp(const void *vctx, int32_t x, int32_t y) {
    const order_ctx *c = vctx;
    const q__jc *a = &c->jc[x], *b = &c->jc[y];
    if (a->level != b->level) return a->level < b->level ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    const struct q_job *ja = &c->in->jobs[x], *jb = &c->in->jobs[y];
    if (ja->queued != jb->queued) return ja->queued < jb->queued ? -1 : 1;
    int k = kpre_cmp(a->kpre, b->kpre);
    if (k) return k;
    k = scmp(ja->key, jb->key);
    if (k) return k;
    k = scmp(a->uid, b->uid);
    if (k) return k;
    return x < y ? -1 : (x > y);
}

/* Sort key packed next to the slot so that big sorts stay in cache. */
typedef struct {
    double nscore;      /* -score: ascending order */
    double queued;
    uint64_t kpre[2];   /* q__jc.kpre: most ties end here */
    int32_t level;
    int32_t slot;
} pkey;

static int pkey_cmp(const order_ctx *c, const pkey *a, const pkey *b) {
    if (a->level != b->level) return a->level < b->level ? -1 : 1;
    if (a->nscore != b->nscore) return a->nscore < b->nscore ? -1 : 1;
    if (a->queued != b->queued) return a->queued < b->queued ? -1 : 1;
    int k = kpre_cmp(a->kpre, b->kpre);
    if (k) return k;
    return order_cmp(c, a->slot, b->slot);
}

/* Sorts slots a[0..n) in queue order through packed keys: a natural
 * merge sort. Ascending runs already in a[] are kept (runs shorter than 16
 * are extended by insertion sort), then neighbouring runs are merged until
 * one is left. The caller passes the jobs in their last order where it
 * can, so a steady queue, rescored every cycle but hardly reordered, costs
 * one comparison per job instead of n log n. The order is total (it ends
 * on the slot), so the result is the one any sort gives. */
static int sort_packed(q_state *st, const order_ctx *c, int32_t *a, int n) {
    size_t bytes = (size_t)n * sizeof(pkey);
    pkey *k = q__alloc(st, 2 * bytes + ((size_t)n + 1) * sizeof(int32_t));
    if (!k) return -1;
    pkey *src = k, *dst = k + n;
    int32_t *runs = (int32_t *)(void *)(k + 2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        const q__jc *e = &c->jc[a[i]];
        src[i] = (pkey){-e->score, c->in->jobs[a[i]].queued, {e->kpre[0], e->kpre[1]}, e->level,
                        a[i]};
    }
    const int minrun = 16;
    int nr = 0;
    for (int lo = 0; lo < n;) {
        int hi = lo + 1;
        while (hi < n && pkey_cmp(c, &src[hi], &src[hi - 1]) > 0) hi++;
        if (hi - lo < minrun) {
            int end = lo + minrun < n ? lo + minrun : n;
            for (int i = hi; i < end; i++) {
                pkey x = src[i];
                int j = i - 1;
                while (j >= lo && pkey_cmp(c, &x, &src[j]) < 0) {
                    src[j + 1] = src[j];
                    j--;
                }
                src[j + 1] = x;
            }
            hi = end;
        }
        runs[nr++] = lo;
        lo = hi;
    }
    runs[nr] = n;
    while (nr > 1) {
        int w = 0;
        for (int r = 0; r < nr; r += 2) {
            int lo = runs[r];
            runs[w++] = lo;
            if (r + 1 >= nr) { /* an odd run out: copied as it is */
                memcpy(dst + lo, src + lo, (size_t)(n - lo) * sizeof *src);
                break;
            }
            int mid = runs[r + 1], hi = runs[r + 2];
            int i = lo, j = mid, o = lo;
            while (i < mid && j < hi) dst[o++] = pkey_cmp(c, &src[j], &src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        runs[w] = n;
        nr = w;
        pkey *t = src;
        src = dst;
        dst = t;
    }
    for (int i = 0; i < n; i++) a[i] = src[i].slot;
    q__free(st, k);
    return 0;
}

/* Field codes for invalid jobs (q_result.res of Q_R_INVALID). */
enum { Q_BAD_REPLICAS, Q_BAD_GPUS, Q_BAD_GPU_MEM, Q_BAD_CPU, Q_BAD_MEM,
       Q_BAD_USER, Q_BAD_GROUP, Q_BAD_KEY, Q_BAD_GPU_MILLI };

static int bad_field(const struct q_input *in, const struct q_job *j) {
    if (!j->key) return Q_BAD_KEY;
    if (j->max_replicas > 0 &&
        (j->max_replicas > AIQ_MAX_REPLICAS || j->min_replicas < 0 || q__min_size(j) < 1 ||
         q__min_size(j) > j->max_replicas))
        return Q_BAD_REPLICAS;
    if (q__size(j) < 1 || q__size(j) > AIQ_MAX_REPLICAS) return Q_BAD_REPLICAS;
    if (j->gpus < 0 || j->gpus > AIQ_MAX_GPUS_PER_REPLICA) return Q_BAD_GPUS;
    if (j->gpu_memory_mib < 0 || j->gpu_memory_mib > Q__MAX_GPU_MEM) return Q_BAD_GPU_MEM;
    /* A fraction is 1..999 thousandths of one GPU, never with whole GPUs
     * or a fixed MiB share. */
    if (j->gpu_milli < 0 || j->gpu_milli > 999 ||
        (j->gpu_milli > 0 && (j->gpus > 0 || j->gpu_memory_mib > 0)))
        return Q_BAD_GPU_MILLI;
    if (j->cpu_milli < 0 || j->cpu_milli > Q__MAX_CPU) return Q_BAD_CPU;
    if (j->memory_bytes < 0 || j->memory_bytes > Q__MAX_MEM) return Q_BAD_MEM;
    if (j->user < -1 || j->user >= in->nusers) return Q_BAD_USER;
    if (j->group < -1 || j->group >= in->ngroups) return Q_BAD_GROUP;
    return -1;
}

/* Builds the order record of pending job `slot` from the job and its
 * cache entry. */
static void make_rec(const struct q_input *in, const q__jc *e, int slot, q__orec *o) {
    const struct q_job *j = &in->jobs[slot];
    memset(o, 0, sizeof *o);
    o->slot = slot;
    o->level = e->level;
    o->score = e->score;
    o->queued = j->queued;
    o->pred = q__pred_runtime(j);
    o->gmem = j->gpu_memory_mib;
    /* kept as given up to int16 for the invalid-field message; a job
     * outside 0..999 is rejected (o->bad) before anything uses it */
    o->milli = (int16_t)(j->gpu_milli < -1 ? -1 : j->gpu_milli > 32767 ? 32767 : j->gpu_milli);
    o->cpu = j->cpu_milli;
    o->mem = j->memory_bytes;
    o->replicas = q__size(j);
    o->gpus = j->gpus;
    o->user = j->user;
    o->group = j->group;
    o->dom = e->dom;
    o->model = e->model;
    o->bad = (int8_t)bad_field(in, j);
    o->suspended = j->suspended;
    o->promoted = e->promoted;
    o->score_failed = e->score_failed;
    o->nonpre = j->non_preemptible;
}

/* rec_cmp of a against the record b with its slot replaced by bslot. */
static int rec_cmp_at(const order_ctx *c, const q__orec *a, const q__orec *b, int32_t bslot) {
    if (a->level != b->level) return a->level < b->level ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->queued != b->queued) return a->queued < b->queued ? -1 : 1;
    return order_cmp(c, a->slot, bslot);
}

static int old_lookup(q_state *st, const char *uid) {
    size_t m = st->cap_otab ? st->cap_otab - 1 : 0;
    if (!st->cap_otab) return -1;
    for (size_t i = q__hash(uid) & m;; i = (i + 1) & m) {
        int32_t oi = st->otab[i];
        if (oi < 0) return -1;
        if (st->ojc[oi].uid && strcmp(st->ojc[oi].uid, uid) == 0) return oi;
    }
}

static int old_index(q_state *st) {
    size_t cap = 64;
    while (cap < (size_t)st->nojc * 2) cap *= 2;
    if (Q_GROW_P2(st, st->otab, st->cap_otab, cap)) return -1;
    cap = st->cap_otab;
    for (size_t i = 0; i < cap; i++) st->otab[i] = -1;
    for (int k = 0; k < st->nojc; k++) {
        if (!st->ojc[k].uid) continue;
        size_t i = q__hash(st->ojc[k].uid) & (cap - 1);
        while (st->otab[i] >= 0) i = (i + 1) & (cap - 1);
        st->otab[i] = k;
    }
    return 0;
}

/* Per-cycle context of the cache update. */
typedef struct {
    q_state *st;
    const struct q_input *in;
    const q_scorer *sc;
    bool all;
    int32_t *map;       /* old slot -> new slot of clean jobs (of every job with all) */
    int ndirty;
    int *nscored;
} upd;

/* Fills the cache entry of pending job i from its old entry (oi >= 0,
 * *old) or as new, scores it when needed, applies starvation, and files it
 * as dirty (re-inserted into the order) or clean (kept in place). Returns
 * 0 or -1 when out of memory. */
static int take_job(upd *u, int i, int oi, const q__jc *old) {
    q_state *st = u->st;
    const struct q_input *in = u->in;
    const struct q_policy *pol = &in->policy;
    const struct q_job *job = &in->jobs[i];
    q__jc *e = &st->jc[i];
    bool need_score = true, same_job = false;
    int32_t old_level = -1;
    if (oi >= 0) {
        if (e != old) *e = *old;
        same_job = e->gen == job->gen && e->user == job->user && e->group == job->group;
        need_score = u->all || !e->pending || !same_job;
        old_level = e->pending ? e->level : -1;
        if (e->gen != job->gen) key_prefix(job->key, e->kpre);
    } else {
        const char *uid = uid_of(job);
        size_t len = strlen(uid);
        e->uid = q__alloc(st, len + 1);
        if (!e->uid) return -1;
        memcpy(e->uid, uid, len + 1);
        key_prefix(job->key, e->kpre);
    }
    e->ident = job->ident;
    if (need_score) {
        /* Only names some node has are interned (jobs cannot grow the
         * tables); others resolve to Q__UNKNOWN and are re-resolved when
         * the nodes change (cycle.c). Ids are never taken back, so an
         * unchanged job rescored (a time-dependent score rescores every
         * job every cycle) keeps the ones it has; an unknown name is
         * looked up again, as before. */
        if (!same_job || e->dom == Q__UNKNOWN || e->model == Q__UNKNOWN) {
            e->dom = q__resolve(&st->doms, job->domain);
            e->model = q__resolve(&st->models, job->gpu_model);
        }
        if (bad_field(in, job) < 0) {
            score_job(st, in, u->sc, i, e);
        } else { /* rejected by the walk; its sizes may not even add up */
            e->score = 0;
            e->base_level = pol->nlevels - 1;
            e->score_failed = false;
        }
        e->gen = job->gen;
        e->user = job->user;
        e->group = job->group;
        (*u->nscored)++;
    }
    e->pending = true;
    e->level = e->base_level;
    e->promoted = false;
    if (pol->starvation_after_s > 0 && job->queued > 0 &&
        in->now - job->queued > pol->starvation_after_s &&
        pol->promote_to >= 0 && pol->promote_to < e->base_level) {
        e->level = pol->promote_to;
        e->promoted = true;
    }
    e->dirty = need_score || e->level != old_level || u->all;
    if (e->dirty) st->tmp2[u->ndirty++] = i;
    if (oi >= 0 && (!e->dirty || u->all))
        u->map[oi] = i; /* with all, only for last_order (the merge is skipped) */
    return 0;
}

/* With every job rescored (all): rewrites dirty[0..n) as the jobs of the
 * last order in that order (map: old slot -> new slot), then the new ones
 * in slot order, so that sort_packed finds the runs the queue kept.
 * Clears map. Returns 0 or -1 when out of memory. */
static int last_order(q_state *st, int32_t *dirty, int n, int nold) {
    int32_t *map = st->tmp1, *seq = st->tmp3;
    uint8_t *placed = q__alloc(st, (size_t)st->njc + 1);
    if (!placed) return -1;
    memset(placed, 0, (size_t)st->njc + 1);
    int m = 0;
    for (int k = 0; k < st->norder && m < n; k++) {
        int32_t s = st->ord[k].slot;
        if (s < 0 || s >= nold || map[s] < 0) continue;
        seq[m++] = map[s];
        placed[map[s]] = 1;
        map[s] = -1;
    }
    for (int k = 0; k < n && m < n; k++)
        if (!placed[dirty[k]]) seq[m++] = dirty[k];
    memcpy(dirty, seq, (size_t)n * sizeof *dirty);
    q__free(st, placed);
    return 0;
}

/* Frees the side table's uids (entries of jobs no longer at their slot)
 * and empties it. */
static void side_clear(q_state *st) {
    for (int k = 0; k < st->nojc; k++) {
        q__free(st, st->ojc[k].uid);
        st->ojc[k].uid = NULL;
    }
    st->nojc = 0;
}

/* Starts the cache update for n jobs, nold of them cached by slot: a cold
 * state forgets its entries and its order, the side table is emptied, and
 * the scratch is sized; map (st->tmp1) is cleared. Returns 0, or -1 when
 * out of memory. */
static int cache_begin(q_state *st, int n, int nold) {
    if (!st->warm) {
        for (int k = 0; k < st->njc; k++) {
            q__free(st, st->jc[k].uid);
            st->jc[k].uid = NULL;
        }
        st->norder = 0;
    }
    side_clear(st); /* normally empty */
    size_t nside = (size_t)(nold > n ? nold : n) + 1;
    if (Q_GROW(st, st->jc, st->cap_jc, (size_t)n + 1) ||
        Q_GROW(st, st->ojc, st->cap_ojc, nside) ||
        Q_GROW(st, st->tmp1, st->cap_tmp1, (size_t)nold + 1) ||
        Q_GROW(st, st->tmp2, st->cap_tmp2, (size_t)n + 1) ||
        Q_GROW(st, st->tmp3, st->cap_tmp3, (size_t)n + 1) ||
        Q_GROW(st, st->order, st->cap_order, (size_t)n + 1))
        return -1;
    for (int k = 0; k < nold; k++) st->tmp1[k] = -1;
    return 0;
}

/* Tells whether the entry e (of last cycle's job at this slot) is job:
 * by the caller's ident where both have one (an unchanged job needs no
 * uid comparison; different idents are different uids), else by uid. */
static bool same_job(const q__jc *e, const struct q_job *job) {
    if (job->ident && e->ident) {
        if (e->ident != job->ident) return false;
        if (e->gen == job->gen) return true;
    }
    return strcmp(e->uid, uid_of(job)) == 0;
}

/* Matches each job to the cache entry at its slot: a pending job with the
 * same uid there is taken at once; an entry whose slot now holds another
 * job, is no longer pending, or is gone (slots n..nold) moves to the side
 * table with its old slot. Lists the pending jobs still unmatched in
 * unmatched[]. Returns how many, or -1 when out of memory. */
static int match_by_slot(upd *u, int nold, int32_t *unmatched) {
    q_state *st = u->st;
    const struct q_input *in = u->in;
    int n = in->njobs, nun = 0;
    for (int i = 0; i < n; i++) {
        const struct q_job *job = &in->jobs[i];
        q__jc *e = &st->jc[i];
        if (i < nold && e->uid) {
            if (job->state == Q_JOB_PENDING && same_job(e, job)) {
                if (take_job(u, i, i, e)) return -1;
                continue;
            }
            e->oslot = i; /* someone else's now, or no longer pending */
            st->ojc[st->nojc++] = *e;
            e->uid = NULL;
        } else if (i < nold && job->state != Q_JOB_PENDING) {
            continue; /* an empty entry stays empty */
        }
        memset(e, 0, sizeof *e);
        if (job->state == Q_JOB_PENDING) unmatched[nun++] = i;
    }
    for (int k = n; k < nold; k++) {
        if (!st->jc[k].uid) continue;
        st->jc[k].oslot = k;
        st->ojc[st->nojc++] = st->jc[k];
        st->jc[k].uid = NULL;
    }
    st->njc = n;
    return nun;
}

/* Finds each unmatched pending job's old entry in the side table by uid
 * (a moved job) or takes it as new. Returns 0, or -1 when out of memory. */
static int match_by_uid(upd *u, const int32_t *unmatched, int nun) {
    q_state *st = u->st;
    if (nun > 0 && st->nojc > 0 && old_index(st)) return -1;
    for (int k = 0; k < nun; k++) {
        int i = unmatched[k];
        int oi = st->nojc > 0 ? old_lookup(st, uid_of(&u->in->jobs[i])) : -1;
        q__jc old = {0};
        if (oi >= 0) {
            old = st->ojc[oi];
            st->ojc[oi].uid = NULL;
        }
        if (take_job(u, i, oi >= 0 ? old.oslot : -1, &old)) return -1;
    }
    return 0;
}

/* Sorts the dirty jobs in queue order: many through packed keys, from the
 * last order when every job was rescored (all), few by merge sort.
 * Returns 0, or -1 when out of memory. */
static int sort_dirty(q_state *st, const order_ctx *oc, int32_t *dirty, int ndirty, bool all,
                      int nold) {
    if (all && ndirty > 256 && last_order(st, dirty, ndirty, nold)) return -1;
    if (ndirty > 256) return sort_packed(st, oc, dirty, ndirty);
    q__msort(dirty, ndirty, st->tmp3, order_cmp, oc);
    return 0;
}

/* One pass over the old order: each kept job's record moves to its new
 * slot (map: old slot -> new slot, cleared as it goes), and each
 * re-inserted (dirty, sorted) job goes in front of the first kept job it
 * sorts before. The result is written to ord2, which then becomes the
 * order (one copy of the records, no second buffer of kept jobs); with
 * all, every job is dirty and the old order is not read. */
static void merge_order(q_state *st, const order_ctx *oc, const int32_t *dirty, int ndirty,
                        bool all, int nold) {
    const struct q_input *in = oc->in;
    int32_t *map = st->tmp1;
    q__orec *out = st->ord2;
    int o = 0, b = 0;
    q__orec x;
    if (ndirty > 0) make_rec(in, &st->jc[dirty[0]], dirty[0], &x);
    for (int k = 0; !all && k < st->norder; k++) {
        const q__orec *old = &st->ord[k];
        if (old->slot >= nold || map[old->slot] < 0) continue;
        int ns = map[old->slot];
        map[old->slot] = -1; /* a slot appears once */
        while (b < ndirty) {
            if (rec_cmp_at(oc, &x, old, ns) >= 0) break;
            st->order[o] = x.slot;
            out[o++] = x;
            if (++b < ndirty) make_rec(in, &st->jc[dirty[b]], dirty[b], &x);
        }
        out[o] = *old;
        out[o].slot = ns;
        st->order[o++] = ns;
    }
    while (b < ndirty) {
        st->order[o] = x.slot;
        out[o++] = x;
        if (++b < ndirty) make_rec(in, &st->jc[dirty[b]], dirty[b], &x);
    }
    q__orec *tr = st->ord; st->ord = st->ord2; st->ord2 = tr;
    size_t trc = st->cap_ord; st->cap_ord = st->cap_ord2; st->cap_ord2 = trc;
    st->norder = o;
}

/* A hash of every user's and group's level (the factors user.level and
 * group.level), in index order. */
static uint64_t levels_hash(const struct q_input *in) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < in->nusers; i++)
        h = (h ^ (uint64_t)(uint32_t)in->users[i].level) * 1099511628211ULL;
    h = (h ^ (uint64_t)(uint32_t)in->nusers) * 1099511628211ULL;
    for (int i = 0; i < in->ngroups; i++)
        h = (h ^ (uint64_t)(uint32_t)in->groups[i].level) * 1099511628211ULL;
    return (h ^ (uint64_t)(uint32_t)in->ngroups) * 1099511628211ULL;
}

int q__order_update(q_state *st, const struct q_input *in, const q_scorer *sc,
                    int *nscored, aiq_err *err) {
    int n = in->njobs;
    const struct q_policy *pol = &in->policy;
    /* With a rescore interval an unchanged job keeps its score until the
     * interval ends: every factor the policy may read then is the job's
     * own (its gen), its user's and group's levels (checked here), or
     * the clock, which stands at the interval's start for the whole
     * interval (q__score_clock). So a kept score is the score a fresh
     * state would compute, and a replay at other cycle times gets the
     * same. */
    double clock = q__score_clock(pol, in->now);
    uint64_t levels = pol->rescore_interval_s > 0 ? levels_hash(in) : 0;
    bool all = !st->warm || in->gen != st->gen || pol->rescore_interval_s <= 0 ||
               clock != st->rescore_at || levels != st->levels;
    *nscored = 0;

    /* The cache is updated in place: a job still at its slot with the
     * same uid keeps its entry where it is (no copy). Entries whose slot
     * now holds another job, or is gone, move to the side table st->ojc
     * (with their old slot) and are looked up by uid afterwards. */
    int nold = st->warm ? st->njc : 0;
    if (cache_begin(st, n, nold)) goto oom;
    upd u = {st, in, sc, all, st->tmp1, 0, nscored};
    int nun = match_by_slot(&u, nold, st->tmp3);
    if (nun < 0 || match_by_uid(&u, st->tmp3, nun)) goto oom;
    side_clear(st); /* entries of jobs that are gone */

    order_ctx oc = {in, st->jc};
    if (sort_dirty(st, &oc, st->tmp2, u.ndirty, all, nold)) goto oom;
    if (Q_GROW(st, st->ord, st->cap_ord, (size_t)n + 1) ||
        Q_GROW(st, st->ord2, st->cap_ord2, (size_t)n + 1))
        goto oom;
    merge_order(st, &oc, st->tmp2, u.ndirty, all, nold);
    st->rescore_at = clock;
    st->levels = levels;
    st->gen = in->gen;
    st->warm = true;
    return 0;
oom:
    q__cache_clear(st);
    aiq_err_set(err, AIQ_ENOMEM, "queue: out of memory ordering jobs");
    return -1;
}

/* See queue.h. */
bool q_pos_moved(int was_pos, int pos) {
    if ((was_pos > 0) != (pos > 0)) return true;
    if (pos <= 0 || pos == was_pos) return false;
    int d = pos > was_pos ? pos - was_pos : was_pos - pos;
    return was_pos <= 10 || pos <= 10 || (int64_t)d * 10 > was_pos;
}
