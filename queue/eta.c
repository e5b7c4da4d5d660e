/* eta.c -- estimated start times, like `squeue --start`: an event
 * simulation over whole-GPU capacity in queue order, driven by the running
 * and just-admitted jobs' predicted ends; quota waits end when enough of
 * the user's or group's own jobs end (prefix sums per owner); budget waits
 * end with the budget window. Estimates only: fragmentation, domains and
 * backfill are not simulated (see docs/queue.md). The pass can stop and
 * resume: with q_input.lazy_eta the cycle skips it and q_eta() runs it
 * only as far as the job asked for. */
#include "queue/q_int.h"

#include <string.h>

static int64_t units(const struct q_job *j) {
    int64_t u = j->gpus > 0 ? j->gpus : (j->gpu_memory_mib > 0 ? 1 : 0);
    return u * q__size(j);
}

typedef struct {
    const struct q_input *in;
    const double *end;
    int scope;
} rel_ctx;

static int owner(const struct q_input *in, int j, int scope) {
    const struct q_job *job = &in->jobs[j];
    int o = scope ? job->group : job->user;
    int n = scope ? in->ngroups : in->nusers;
    return o >= 0 && o < n ? o : -1;
}

static int rel_cmp(const void *vctx, int32_t x, int32_t y) {
    const rel_ctx *c = vctx;
    int ox = owner(c->in, x, c->scope), oy = owner(c->in, y, c->scope);
    if (ox != oy) return ox < oy ? -1 : 1;
    if (c->end[x] != c->end[y]) return c->end[x] < c->end[y] ? -1 : 1;
    return x < y ? -1 : (x > y);
}

/* Builds, per scope, the releasing jobs sorted by (owner, end) with
 * per-owner prefix sums of each quota resource. end[] is indexed by job and
 * lives in tmp scratch (doubles in rel_end[scope] by job index). */
static int build_release(q_state *st, const struct q_input *in) {
    int n = in->njobs;
    for (int s = 0; s < 2; s++) {
        int no = s ? in->ngroups : in->nusers;
        if (Q_GROW(st, st->rel[s], st->cap_rel[s], (size_t)n + 1) ||
            Q_GROW(st, st->rel_end[s], st->cap_rel_end[s], (size_t)n + 1) ||
            Q_GROW(st, st->seg[s], st->cap_seg[s], (size_t)no + 2) ||
            Q_GROW(st, st->pfx[s], st->cap_pfx[s], (size_t)n * Q__NRES + 1) ||
            Q_GROW(st, st->tmp2, st->cap_tmp2, (size_t)n + 1))
            return -1;
        double *end = st->rel_end[s];
        int nr = 0;
        for (int k = 0; k < st->nrunl + st->nadmitted; k++) {
            int i = k < st->nrunl ? st->runl[k] : st->ord[st->admitted[k - st->nrunl]].slot;
            const struct q_job *j = &in->jobs[i];
            double e = j->state == Q_JOB_RUNNING ? j->end_time
                       : (q__pred_runtime(j) > 0 ? in->now + q__pred_runtime(j) : 0);
            end[i] = e;
            if (e > 0 && owner(in, i, s) >= 0) st->rel[s][nr++] = i;
        }
        rel_ctx c = {in, end, s};
        q__msort(st->rel[s], nr, st->tmp2, rel_cmp, &c);
        for (int o = 0; o <= no; o++) st->seg[s][o] = nr;
        for (int k = nr - 1; k >= 0; k--) st->seg[s][owner(in, st->rel[s][k], s)] = k;
        for (int o = no - 1; o >= 0; o--)
            if (st->seg[s][o] > st->seg[s][o + 1]) st->seg[s][o] = st->seg[s][o + 1];
        int prev = -1;
        for (int k = 0; k < nr; k++) {
            int j = st->rel[s][k], o = owner(in, j, s);
            q__res need;
            q__need(&in->jobs[j], &need);
            for (int r = 0; r < Q__NRES; r++) {
                int64_t base = o == prev ? st->pfx[s][(size_t)(k - 1) * Q__NRES + r] : 0;
                st->pfx[s][(size_t)k * Q__NRES + r] = base + need.v[r];
            }
            prev = o;
        }
        st->nrel = nr;
    }
    return 0;
}

/* When enough of the owner's jobs have ended for job j's quota wait to
 * clear; 0 when no predicted end frees enough. */
static double quota_eta(const q_state *st, const struct q_input *in, int j,
                        const struct q_result *r) {
    int s = r->group_scope ? 1 : 0;
    int o = owner(in, j, s);
    if (o < 0) return 0;
    int64_t shortfall = r->inuse + r->need - r->limit;
    int lo = st->seg[s][o], hi = st->seg[s][o + 1];
    /* first k in [lo, hi) with prefix >= shortfall (prefixes grow) */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (st->pfx[s][(size_t)mid * Q__NRES + r->res] >= shortfall) hi = mid;
        else lo = mid + 1;
    }
    if (lo >= st->seg[s][o + 1]) return 0;
    return st->rel_end[s][st->rel[s][lo]];
}

/* ---- radix heap --------------------------------------------------------
 * The simulation's clock never goes back: every pushed end is at or after
 * the last popped one. A radix heap exploits that (keys are milliseconds
 * after now; an event's exact time rides along): push is O(1), pop is
 * amortized O(log range), with no comparisons chasing a tree. Keys that tie
 * within a millisecond pop in insertion order, deterministically. */

static uint64_t rkey(double t, double now) {
    double d = (t - now) * 1000.0;
    if (d <= 0) return 0;
    if (d >= 9.0e18) return (uint64_t)9.0e18;
    return (uint64_t)d;
}

static int rbucket(uint64_t k, uint64_t last) {
    return k == last ? 0 : 64 - __builtin_clzll(k ^ last);
}

static int rpush(q_state *st, q__ev e, uint64_t k) {
    int b = rbucket(k < st->rb_last ? st->rb_last : k, st->rb_last);
    if (Q_GROW(st, st->rb[b], st->cap_rb[b], (size_t)st->nrb[b] + 1)) return -1;
    e.aux2 = k < st->rb_last ? st->rb_last : k;
    st->rb[b][st->nrb[b]++] = e;
    st->rb_size++;
    return 0;
}

/* Pops the earliest event into *out. Returns 0, or -1 out of memory. */
static int rpop(q_state *st, q__ev *out) {
    if (st->nrb[0] == 0) {
        int b = 1;
        while (st->nrb[b] == 0) b++;
        uint64_t m = UINT64_MAX;
        for (int i = 0; i < st->nrb[b]; i++)
            if (st->rb[b][i].aux2 < m) m = st->rb[b][i].aux2;
        st->rb_last = m;
        /* Every event of bucket b moves to a strictly lower bucket. */
        int n = st->nrb[b];
        st->nrb[b] = 0;
        for (int i = 0; i < n; i++) {
            q__ev e = st->rb[b][i];
            int nb = rbucket(e.aux2, m);
            if (Q_GROW(st, st->rb[nb], st->cap_rb[nb], (size_t)st->nrb[nb] + 1)) return -1;
            st->rb[nb][st->nrb[nb]++] = e;
        }
    }
    st->rb_size--;
    /* All keys in bucket 0 are equal; LIFO is as deterministic as FIFO. */
    *out = st->rb[0][--st->nrb[0]];
    return 0;
}

static void rreset(q_state *st) {
    for (int b = 0; b < 65; b++) st->nrb[b] = 0;
    st->rb_last = 0;
    st->rb_size = 0;
}

/* Loads the events (running and just-admitted jobs' ends) and the
 * capacity; the pass starts at order index 0. */
static int eta_begin(q_state *st, const struct q_input *in) {
    if (st->any_quota_wait && build_release(st, in)) return -1;
    rreset(st);
    int64_t total = 0, free_ = 0;
    for (int i = 0; i < st->ns.nn; i++) {
        if (!st->ns.n[i].sched) continue;
        total += st->ns.n[i].ngpus;
        free_ += st->ns.n[i].nfree;
    }
    for (int k = 0; k < st->nrunl + st->nadmitted; k++) {
        int i = k < st->nrunl ? st->runl[k] : st->ord[st->admitted[k - st->nrunl]].slot;
        const struct q_job *j = &in->jobs[i];
        double e = j->state == Q_JOB_RUNNING ? j->end_time
                   : (q__pred_runtime(j) > 0 ? in->now + q__pred_runtime(j) : 0);
        if (e > 0 && rpush(st, (q__ev){e, i, (int32_t)units(j), 0}, rkey(e, in->now))) return -1;
    }
    st->eta_total = total;
    st->eta_free = free_;
    st->eta_t = in->now;
    /* Without a reservation the walk blocks strictly: once a job's start
     * is unknown, so is every later one waiting on capacity. */
    st->eta_strict = st->eta_head < 0;
    st->eta_stuck = false;
    st->eta_k = 0;
    st->eta_started = true;
    return 0;
}

/* Estimates order indexes st->eta_k .. kend-1 and leaves the pass there.
 * The results are st->rseq[k] (eager) or st->res[slot] (lazy). */
static int eta_steps(q_state *st, const struct q_input *in, int kend) {
    double t = st->eta_t;
    int64_t total = st->eta_total, free_ = st->eta_free;
    bool strict = st->eta_strict, stuck = st->eta_stuck, lazy = st->eta_lazy;
    int head = st->eta_head, k = st->eta_k, rc = 0;
    double t_res = st->eta_tres;
    for (; k < kend; k++) {
        const q__orec *o = &st->ord[k];
        uint8_t why = st->dw[2 * k + 1];
        if (st->dw[2 * k] != Q_DEC_WAIT || why == Q_R_SUSPENDED) continue;
        int j = o->slot;
        struct q_result *r = lazy ? &st->res[j] : &st->rseq[k];
        if (why == Q_R_QUOTA) {
            double q = quota_eta(st, in, j, r);
            r->eta = q > 0 ? (q > t ? q : t) : 0;
            continue;
        }
        if (why == Q_R_BUDGET) {
            r->eta = r->t > in->now ? (r->t > t ? r->t : t) : 0;
            continue;
        }
        /* Room is being made for it: it starts once the jobs it waits for
         * are gone (a grace period the queue does not know). Waiting for
         * a cohort to have quota to lend: unknown. Neither takes part in
         * the capacity simulation. */
        if (why == Q_R_PREEMPTING) {
            r->eta = t;
            continue;
        }
        if (why == Q_R_BORROW) {
            r->eta = 0;
            continue;
        }
        int64_t need = (int64_t)o->replicas * (o->gpus > 0 ? o->gpus : (o->gmem > 0 ? 1 : 0));
        if (stuck) continue;
        if (need > total) {
            stuck = strict;
            continue;
        }
        while (free_ < need && st->rb_size > 0) {
            q__ev e;
            if (rpop(st, &e)) {
                rc = -1;
                goto out;
            }
            if (e.t > t) t = e.t;
            free_ += e.aux;
        }
        if (free_ < need) { /* no predicted end frees enough */
            stuck = strict;
            continue;
        }
        double start = t;
        if (j == head && t_res > start) start = t_res;
        t = start;
        r->eta = start;
        free_ -= need;
        if (o->pred > 0 && need > 0 &&
            rpush(st, (q__ev){start + o->pred, j, (int32_t)need, 0}, rkey(start + o->pred, in->now))) {
            rc = -1;
            goto out;
        }
    }
out:
    st->eta_t = t;
    st->eta_free = free_;
    st->eta_stuck = stuck;
    st->eta_k = k;
    return rc;
}

int q__eta_run(q_state *st, const struct q_input *in, int head, double t_res) {
    st->eta_head = head;
    st->eta_tres = t_res;
    st->eta_started = false;
    st->eta_failed = false;
    st->eta_k = 0;
    if (st->eta_lazy) return 0;
    if (eta_begin(st, in)) return -1;
    return eta_steps(st, in, st->norder);
}

int q__eta_upto(q_state *st, const struct q_input *in, int kend) {
    if (st->eta_failed) return -1;
    if (!st->eta_started && eta_begin(st, in)) goto fail;
    if (kend + 1 > st->eta_k && eta_steps(st, in, kend + 1 < st->norder ? kend + 1 : st->norder))
        goto fail;
    return 0;
fail:
    st->eta_failed = true;
    return -1;
}

aiq_rc q_eta(q_state *st, const struct q_input *in, q_output *out, int j, double *eta) {
    if (eta) *eta = 0;
    if (!st || !in || !out || !eta) return AIQ_EINVAL;
    if (!st->out_valid || out->res != st->res || out->njobs != in->njobs || j < 0 || j >= out->njobs)
        return AIQ_EINVAL;
    struct q_result *r = &st->res[j];
    if (st->eta_lazy && r->decision == Q_DEC_WAIT && r->reason != Q_R_SUSPENDED &&
        st->kof[j] >= st->eta_k) {
        if (q__eta_upto(st, in, st->kof[j])) return AIQ_ENOMEM;
    }
    *eta = r->eta;
    return AIQ_OK;
}
