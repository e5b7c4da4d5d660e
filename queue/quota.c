/* quota.c -- quota accounting for one cycle: what a job needs in quota
 * units, user and group concurrent quota (running, admitted and
 * just-admitted jobs count), borrowing between the groups of a cohort
 * (Kueue-style: quota, borrowing limit, lendable share), GPU-hour budgets
 * per window, the "bigger than the quota itself" reject rule, and the
 * soon state the preemption code asks about: usage that is going away
 * (terminating jobs, victims) does not count there. */
#include "queue/q_int.h"

#include <string.h>

/* Whole-GPU equivalents of one replica: a shared GPU counts as one. */
static int64_t gpu_units(const struct q_job *j) {
    return q__units(j->gpus, j->gpu_memory_mib, j->gpu_milli);
}

/* Fills need with job j's request for `replicas` replicas; jobs counts 1
 * when whole (the job itself), 0 for some replicas of it. */
void q__need_n(const struct q_job *j, int replicas, bool whole, q__res *need) {
    int64_t r = replicas;
    need->v[Q_RES_GPUS] = r * j->gpus;
    need->v[Q_RES_GPU_MEM] = j->gpu_memory_mib > 0 ? r * gpu_units(j) * j->gpu_memory_mib : 0;
    need->v[Q_RES_CPU] = r * j->cpu_milli;
    need->v[Q_RES_MEM] = r * j->memory_bytes;
    need->v[Q_RES_JOBS] = whole ? 1 : 0;
}

/* Fills need with job j's total request over all replicas (a pending
 * elastic job: its minimum). */
void q__need(const struct q_job *j, q__res *need) {
    q__need_n(j, q__size(j), true, need);
}

/* Same as q__need, from a pending job's order record. */
void q__need_rec(const q__orec *o, q__res *need) {
    int64_t r = o->replicas;
    int64_t u = q__units(o->gpus, o->gmem, o->milli);
    need->v[Q_RES_GPUS] = r * o->gpus;
    need->v[Q_RES_GPU_MEM] = o->gmem > 0 ? r * u * o->gmem : 0;
    need->v[Q_RES_CPU] = r * o->cpu;
    need->v[Q_RES_MEM] = r * o->mem;
    need->v[Q_RES_JOBS] = 1;
}

/* GPU-hours a pending job will use if it runs its planned runtime (a
 * shared GPU counts as one). */
double q__rec_gpu_hours(const q__orec *o) {
    int64_t u = q__units(o->gpus, o->gmem, o->milli);
    return (double)(o->replicas * u) * o->pred / 3600.0;
}

/* Runtime used for planning: the prediction, else the estimate, else 0
 * (unknown). */
double q__pred_runtime(const struct q_job *j) {
    if (j->pred_runtime_s > 0) return j->pred_runtime_s;
    return j->est_runtime_s > 0 ? j->est_runtime_s : 0;
}

int64_t q__lim_of(const struct aiq_quota *q, int r) {
    switch (r) {
    case Q_RES_GPUS: return q->gpus;
    case Q_RES_GPU_MEM: return q->gpu_memory_mib;
    case Q_RES_CPU: return q->cpu_milli;
    case Q_RES_MEM: return q->memory_bytes;
    default: return q->jobs;
    }
}

/* No concurrent limit at all (every field < 0). */
static bool unlimited(const struct aiq_quota *q) {
    for (int r = 0; r < Q__NRES; r++)
        if (q__lim_of(q, r) >= 0) return false;
    return true;
}

static bool user_ok(const struct q_input *in, int u) { return u >= 0 && u < in->nusers; }
static bool group_ok(const struct q_input *in, int g) { return g >= 0 && g < in->ngroups; }

/* ---- cohorts ------------------------------------------------------------
 * For a group g of cohort c and a borrowable resource r (limited, not the
 * jobs count): lend = lending_limit (-1: the whole quota, at most the
 * quota), guaranteed G = quota - lend. The cohort's lendable total is the
 * sum of lend; its lent total is the sum over its groups of
 * max(0, usage - G). A group may start need n when usage + n stays within
 * quota + borrowing_limit and the lent total with it stays within the
 * lendable total. Without borrowing every group stays within its quota,
 * so the lent total never passes the lendable one: a cohort only limits
 * anyone once somebody borrows, and then a group below its quota gets its
 * lent quota back by preemption (reclaim). */

static int cohort_of(const q_state *st, const struct q_input *in, int g) {
    if (!st->any_cohort || !group_ok(in, g)) return 0;
    int c = in->groups[g].cohort;
    return c > 0 && c < st->ncoh ? c : 0;
}

static int64_t contrib(int64_t u, int64_t guar) { return u > guar ? u - guar : 0; }

/* a + b for b >= 0, saturating (limits come from the caller, unchecked) */
static int64_t sat_add(int64_t a, int64_t b) {
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Is r borrowable for group g (in a cohort, limited, not jobs)? */
static bool pooled(const q_state *st, int g, int r) {
    return r != Q_RES_JOBS && st->gguar[g].v[r] >= 0;
}

/* Sets the cohort tables (st->ccap, st->cnow, st->gguar) from in. */
static int cohort_init(q_state *st, const struct q_input *in) {
    int ncoh = 0;
    for (int g = 0; g < in->ngroups; g++)
        if (in->groups[g].cohort > ncoh && in->groups[g].cohort < in->ngroups + 1)
            ncoh = in->groups[g].cohort;
    st->any_cohort = ncoh > 0;
    st->ncoh = ncoh + 1;
    if (!st->any_cohort) return 0;
    if (Q_GROW(st, st->ccap, st->cap_ccap, (size_t)st->ncoh) ||
        Q_GROW(st, st->cnow, st->cap_cnow, (size_t)st->ncoh) ||
        Q_GROW(st, st->csoon, st->cap_csoon, (size_t)st->ncoh) ||
        Q_GROW(st, st->gguar, st->cap_gguar, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->gnp, st->cap_gnp, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->gnpadj, st->cap_gnpadj, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->gpend, st->cap_gpend, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->gblk, st->cap_gblk, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->cblk, st->cap_cblk, (size_t)st->ncoh + 1))
        return -1;
    memset(st->gpend, 0, (size_t)in->ngroups * sizeof *st->gpend);
    memset(st->gblk, 0, (size_t)in->ngroups * sizeof *st->gblk);
    memset(st->cblk, 0, (size_t)st->ncoh * sizeof *st->cblk);
    memset(st->ccap, 0, (size_t)st->ncoh * sizeof *st->ccap);
    memset(st->cnow, 0, (size_t)st->ncoh * sizeof *st->cnow);
    memset(st->gnp, 0, (size_t)in->ngroups * sizeof *st->gnp);
    memset(st->gnpadj, 0, (size_t)in->ngroups * sizeof *st->gnpadj);
    /* What non-preemptible jobs hold: it must stay within the quota. */
    for (int k = 0; k < st->nrunl; k++) {
        const struct q_job *j = &in->jobs[st->runl[k]];
        if (!j->non_preemptible || !group_ok(in, j->group)) continue;
        q__res need;
        q__need(j, &need);
        for (int r = 0; r < Q__NRES; r++) st->gnp[j->group].v[r] += need.v[r];
    }
    for (int g = 0; g < in->ngroups; g++) {
        const struct q_group *gr = &in->groups[g];
        int c = gr->cohort > 0 && gr->cohort < st->ncoh ? gr->cohort : 0;
        for (int r = 0; r < Q__NRES; r++) {
            int64_t q = q__lim_of(&gr->quota, r);
            if (c == 0 || q < 0 || r == Q_RES_JOBS) {
                st->gguar[g].v[r] = -1;
                continue;
            }
            int64_t ll = q__lim_of(&gr->lending_limit, r);
            int64_t lend = ll < 0 || ll > q ? q : ll;
            st->gguar[g].v[r] = q - lend;
            st->ccap[c].v[r] = sat_add(st->ccap[c].v[r], lend);
            st->cnow[c].v[r] += contrib(st->gin[g].v[r], q - lend);
        }
    }
    return 0;
}

/* Sets st->uin/gin (quota in use) and st->ubud/gbud (GPU-hours committed
 * by running jobs for the rest of their planned runtime) from the running
 * jobs of in. Returns 0 or -1 when out of memory. */
int q__quota_init(q_state *st, const struct q_input *in) {
    if (Q_GROW(st, st->uin, st->cap_uin, (size_t)in->nusers + 1) ||
        Q_GROW(st, st->gin, st->cap_gin, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->ubud, st->cap_ubud, (size_t)in->nusers + 1) ||
        Q_GROW(st, st->gbud, st->cap_gbud, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->uopen, st->cap_uopen, (size_t)in->nusers + 1) ||
        Q_GROW(st, st->gopen, st->cap_gopen, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->ugpu0, st->cap_ugpu0, (size_t)in->nusers + 1) ||
        Q_GROW(st, st->ggpu0, st->cap_ggpu0, (size_t)in->ngroups + 1) ||
        Q_GROW(st, st->ubud0, st->cap_ubud0, (size_t)in->nusers + 1) ||
        Q_GROW(st, st->gbud0, st->cap_gbud0, (size_t)in->ngroups + 1))
        return -1;
    for (int u = 0; u < in->nusers; u++)
        st->uopen[u] = unlimited(&in->users[u].quota) && in->users[u].budget_gpu_hours < 0;
    for (int g = 0; g < in->ngroups; g++)
        st->gopen[g] = unlimited(&in->groups[g].quota) && in->groups[g].budget_gpu_hours < 0;
    memset(st->uin, 0, (size_t)in->nusers * sizeof *st->uin);
    memset(st->gin, 0, (size_t)in->ngroups * sizeof *st->gin);
    for (int u = 0; u < in->nusers; u++) st->ubud[u] = 0;
    for (int g = 0; g < in->ngroups; g++) st->gbud[g] = 0;
    for (int k = 0; k < st->nrunl; k++) {
        const struct q_job *j = &in->jobs[st->runl[k]];
        q__res need;
        q__need(j, &need);
        double left = j->end_time > in->now ? j->end_time - in->now : 0;
        double h = (double)((int64_t)j->replicas * gpu_units(j)) * left / 3600.0;
        if (user_ok(in, j->user)) {
            for (int r = 0; r < Q__NRES; r++) st->uin[j->user].v[r] += need.v[r];
            st->ubud[j->user] += h;
        }
        if (group_ok(in, j->group)) {
            for (int r = 0; r < Q__NRES; r++) st->gin[j->group].v[r] += need.v[r];
            st->gbud[j->group] += h;
        }
    }
    for (int u = 0; u < in->nusers; u++) {
        st->ugpu0[u] = st->uin[u].v[Q_RES_GPUS];
        st->ubud0[u] = st->ubud[u];
    }
    for (int g = 0; g < in->ngroups; g++) {
        st->ggpu0[g] = st->gin[g].v[Q_RES_GPUS];
        st->gbud0[g] = st->gbud[g];
    }
    return cohort_init(st, in);
}

static int over(const struct aiq_quota *q, const q__res *inuse,
                const q__res *need, const q__res *extra, struct q_result *res,
                int scope) {
    for (int r = 0; r < Q__NRES; r++) {
        int64_t lim = q__lim_of(q, r);
        if (lim < 0) continue;
        int64_t x = extra ? extra->v[r] : 0;
        if (inuse->v[r] + need->v[r] + x > lim) {
            res->reason = Q_R_QUOTA;
            res->group_scope = (uint8_t)scope;
            res->res = (uint8_t)r;
            res->need = need->v[r];
            res->limit = lim;
            res->inuse = inuse->v[r] + x;
            return 1;
        }
    }
    return 0;
}

static int over_budget(double budget, double used, double committed,
                       double cost, double extra, double window_end,
                       struct q_result *res, int scope) {
    if (budget < 0) return 0;
    /* A small tolerance so that float sums of exact fits still fit. */
    if (used + committed + cost + extra <= budget + 1e-9) return 0;
    res->reason = Q_R_BUDGET;
    res->group_scope = (uint8_t)scope;
    res->t = window_end;
    res->t2 = budget;
    return 1;
}

/* ---- pending demand held against borrowers ------------------------------
 * A group's pending jobs that fit its quota on their own hold their need
 * (st->gpend) until the walk reaches them. What the other groups of g's
 * cohort hold of resource r, counted as it would add to the lent total
 * (each group's held demand capped by the room left in its quota, usage
 * now or soon), is what a job of g may not borrow: without it a borrower
 * ordered ahead of a lender's job takes the room a reclaim freed for
 * that job, is reclaimed again, and so on (docs/queue.md "Borrowing"). */

bool q__pend_wants(const q_state *st, const struct q_input *in, const q__orec *o) {
    int g = o->group;
    if (cohort_of(st, in, g) == 0) return false;
    q__res need;
    q__need_rec(o, &need);
    bool any = false;
    for (int r = 0; r < Q__NRES; r++) {
        if (!pooled(st, g, r)) continue;
        if (need.v[r] > q__lim_of(&in->groups[g].quota, r)) return false;
        any |= need.v[r] > 0;
    }
    return any;
}

void q__pend_hold(q_state *st, const q__orec *o, int sign) {
    q__res need;
    q__need_rec(o, &need);
    for (int r = 0; r < Q__NRES; r++) st->gpend[o->group].v[r] += sign * need.v[r];
}

/* Lenders' jobs that wait for room: the walk reached them (their hold
 * ended) and they wait for capacity or behind the head. Borrowers of the
 * cohort do not backfill past them (cycle.c). */
void q__lender_blocked(q_state *st, const struct q_input *in, const q__orec *o) {
    int c = cohort_of(st, in, o->group);
    if (c == 0) return;
    st->gblk[o->group]++;
    st->cblk[c]++;
}

bool q__blocked_lenders(const q_state *st, const struct q_input *in, const q__orec *o) {
    int c = cohort_of(st, in, o->group);
    return c > 0 && st->cblk[c] - st->gblk[o->group] > 0;
}

bool q__would_borrow(const q_state *st, const struct q_input *in, const q__orec *o) {
    if (cohort_of(st, in, o->group) == 0) return false;
    q__res need;
    q__need_rec(o, &need);
    for (int r = 0; r < Q__NRES; r++)
        if (pooled(st, o->group, r) && st->gin[o->group].v[r] + need.v[r] > q__lim_of(&in->groups[o->group].quota, r))
            return true;
    return false;
}

static int64_t held_by_others(const q_state *st, const struct q_input *in, int g, int r,
                              bool soon) {
    int c = cohort_of(st, in, g);
    int64_t held = 0;
    for (int h = 0; h < in->ngroups; h++) {
        if (h == g || cohort_of(st, in, h) != c || !pooled(st, h, r) || st->gpend[h].v[r] <= 0)
            continue;
        int64_t u = st->gin[h].v[r] - (soon && st->soon_on ? st->gadj[h].v[r] : 0);
        int64_t room = q__lim_of(&in->groups[h].quota, r) - u;
        if (room <= 0) continue;
        int64_t e = st->gpend[h].v[r] < room ? st->gpend[h].v[r] : room;
        int64_t guar = st->gguar[h].v[r];
        held += contrib(u + e, guar) - contrib(u, guar);
    }
    return held;
}

/* Group g's check in a cohort: quota + borrowing limit, then what the
 * cohort can lend (usage inuse and the cohort's lent total `lent`, now or
 * soon). np: the job may not borrow (it could never be reclaimed), so the
 * group's non-preemptible jobs (usage np) must stay within its quota.
 * Borrowing (above the quota) also leaves alone what the other groups'
 * pending jobs hold: then inuse in res counts it with the lent total. */
static int cohort_over(const q_state *st, const struct q_input *in, int g,
                       const q__res *inuse, const q__res *need, const q__res *extra,
                       const q__res *lent, const q__res *np, bool soon, struct q_result *res) {
    const struct q_group *gr = &in->groups[g];
    int c = cohort_of(st, in, g);
    for (int r = 0; r < Q__NRES; r++) {
        int64_t q = q__lim_of(&gr->quota, r);
        if (q < 0) continue;
        int64_t x = extra ? extra->v[r] : 0, u = inuse->v[r] + x;
        int64_t lim = q;
        if (pooled(st, g, r)) {
            int64_t bl = q__lim_of(&gr->borrowing_limit, r);
            lim = bl < 0 ? INT64_MAX : sat_add(q, bl);
            if (np && np->v[r] + need->v[r] > q) {
                res->reason = Q_R_QUOTA;
                res->group_scope = 1;
                res->res = (uint8_t)r;
                res->need = need->v[r];
                res->limit = q;
                res->inuse = np->v[r];
                return 1;
            }
        }
        if (u + need->v[r] > lim) {
            res->reason = Q_R_QUOTA;
            res->group_scope = 1;
            res->res = (uint8_t)r;
            res->need = need->v[r];
            res->limit = lim;
            res->inuse = u;
            return 1;
        }
        if (!pooled(st, g, r)) continue;
        int64_t guar = st->gguar[g].v[r];
        int64_t after = lent->v[r] - contrib(inuse->v[r], guar) + contrib(u + need->v[r], guar);
        int64_t held = u + need->v[r] > q ? held_by_others(st, in, g, r, soon) : 0;
        if (after > st->ccap[c].v[r] - held) {
            res->reason = Q_R_BORROW;
            res->group_scope = 1;
            res->res = (uint8_t)r;
            res->need = need->v[r];
            res->limit = st->ccap[c].v[r];
            res->inuse = lent->v[r] + held;
            return 1;
        }
    }
    return 0;
}

/* The group part of a check: cohort rules when g has a cohort, the plain
 * quota otherwise. soon: usage going away does not count. */
static int group_over(q_state *st, const struct q_input *in, int g, const q__res *need,
                      const q__res *extra, bool soon, bool nonpre, struct q_result *res) {
    q__res u = st->gin[g];
    if (soon && st->soon_on)
        for (int r = 0; r < Q__NRES; r++) u.v[r] -= st->gadj[g].v[r];
    int c = cohort_of(st, in, g);
    if (c > 0) {
        q__res np = st->gnp[g];
        if (soon && st->soon_on)
            for (int r = 0; r < Q__NRES; r++) np.v[r] -= st->gnpadj[g].v[r];
        return cohort_over(st, in, g, &u, need, extra, soon ? &st->csoon[c] : &st->cnow[c],
                           nonpre ? &np : NULL, soon, res);
    }
    return over(&in->groups[g].quota, &u, need, extra, res, 1);
}

int q__quota_check(q_state *st, const struct q_input *in, const q__orec *job,
                   const q__res *extra_u, const q__res *extra_g,
                   double extra_hours_u, double extra_hours_g,
                   struct q_result *res) {
    /* An owner without limits or budget can never fail its checks. */
    bool cu = user_ok(in, job->user) && !st->uopen[job->user];
    bool cg = group_ok(in, job->group) && !st->gopen[job->group];
    if (!cu && !cg) return 0;
    q__res need;
    q__need_rec(job, &need);
    double cost = q__rec_gpu_hours(job);
    if (cu && over(&in->users[job->user].quota, &st->uin[job->user], &need, extra_u, res, 0))
        return 1;
    if (cg && group_over(st, in, job->group, &need, extra_g, false,
                         job->nonpre, res))
        return 1;
    if (cu) {
        const struct q_user *u = &in->users[job->user];
        if (over_budget(u->budget_gpu_hours, u->used_gpu_hours, st->ubud[job->user],
                        cost, extra_hours_u, u->window_end, res, 0))
            return 1;
    }
    if (cg) {
        const struct q_group *g = &in->groups[job->group];
        if (over_budget(g->budget_gpu_hours, g->used_gpu_hours, st->gbud[job->group],
                        cost, extra_hours_g, g->window_end, res, 1))
            return 1;
    }
    return 0;
}

static int too_big(const struct aiq_quota *q, const q__res *need,
                   struct q_result *res, int scope) {
    for (int r = 0; r < Q__NRES; r++) {
        int64_t lim = q__lim_of(q, r);
        if (lim >= 0 && need->v[r] > lim) {
            res->reason = Q_R_OVER_QUOTA;
            res->group_scope = (uint8_t)scope;
            res->res = (uint8_t)r;
            res->need = need->v[r];
            res->limit = lim;
            return 1;
        }
    }
    return 0;
}

int q__quota_reject(const q_state *st, const struct q_input *in, const q__orec *job,
                    struct q_result *res) {
    if (job->user < 0 && job->group < 0) return 0;
    q__res need;
    q__need_rec(job, &need);
    double cost = q__rec_gpu_hours(job);
    if (user_ok(in, job->user) && too_big(&in->users[job->user].quota, &need, res, 0))
        return 1;
    if (group_ok(in, job->group)) {
        /* In a cohort a job may be as big as quota + borrowing limit
         * (unless it may not borrow at all). */
        struct aiq_quota q = in->groups[job->group].quota;
        if (cohort_of(st, in, job->group) > 0 && !job->nonpre) {
            const struct aiq_quota *bl = &in->groups[job->group].borrowing_limit;
            int64_t *f[] = {&q.gpus, &q.gpu_memory_mib, &q.cpu_milli, &q.memory_bytes};
            for (int r = 0; r < 4; r++) {
                if (*f[r] < 0 || !pooled(st, job->group, r)) continue;
                int64_t b = q__lim_of(bl, r);
                *f[r] = b < 0 || *f[r] > INT64_MAX - b ? -1 : *f[r] + b;
            }
        }
        if (too_big(&q, &need, res, 1)) return 1;
    }
    for (int scope = 0; scope < 2; scope++) {
        double b = -1;
        if (scope == 0 && user_ok(in, job->user)) b = in->users[job->user].budget_gpu_hours;
        if (scope == 1 && group_ok(in, job->group)) b = in->groups[job->group].budget_gpu_hours;
        if (b >= 0 && cost > b + 1e-9) {
            res->reason = Q_R_OVER_BUDGET;
            res->group_scope = (uint8_t)scope;
            res->t = cost;
            res->t2 = b;
            return 1;
        }
    }
    return 0;
}

/* Adds need (and hours of budget) to user and group, keeping the
 * cohort totals (now, and soon once the soon state exists). */
void q__quota_add(q_state *st, const struct q_input *in, int user, int group,
                  const q__res *need, double hours, bool nonpre) {
    if (nonpre && group_ok(in, group) && cohort_of(st, in, group) > 0)
        for (int r = 0; r < Q__NRES; r++) st->gnp[group].v[r] += need->v[r];
    if (user_ok(in, user)) {
        for (int r = 0; r < Q__NRES; r++) st->uin[user].v[r] += need->v[r];
        st->ubud[user] += hours;
    }
    if (group_ok(in, group)) {
        int c = cohort_of(st, in, group);
        for (int r = 0; r < Q__NRES; r++) {
            int64_t u0 = st->gin[group].v[r];
            st->gin[group].v[r] += need->v[r];
            if (c > 0 && pooled(st, group, r)) {
                int64_t guar = st->gguar[group].v[r];
                st->cnow[c].v[r] += contrib(u0 + need->v[r], guar) - contrib(u0, guar);
                if (st->soon_on) {
                    int64_t s0 = u0 - st->gadj[group].v[r];
                    st->csoon[c].v[r] += contrib(s0 + need->v[r], guar) - contrib(s0, guar);
                }
            }
        }
        st->gbud[group] += hours;
    }
}

/* Counts admitted job j against its user and group. */
void q__quota_commit(q_state *st, const struct q_input *in, const q__orec *job) {
    q__res need;
    q__need_rec(job, &need);
    q__quota_add(st, in, job->user, job->group, &need, q__rec_gpu_hours(job),
                 job->nonpre);
}

int q__quota_check_soon(q_state *st, const struct q_input *in, const q__orec *job,
                        struct q_result *res) {
    bool cu = user_ok(in, job->user) && !st->uopen[job->user];
    bool cg = group_ok(in, job->group) && !st->gopen[job->group];
    if (!cu && !cg) return 0;
    q__res need;
    q__need_rec(job, &need);
    if (cu) {
        q__res u = st->uin[job->user];
        for (int r = 0; r < Q__NRES; r++) u.v[r] -= st->uadj[job->user].v[r];
        if (over(&in->users[job->user].quota, &u, &need, NULL, res, 0)) return 1;
    }
    if (cg && group_over(st, in, job->group, &need, NULL, true,
                         job->nonpre, res))
        return 1;
    /* Budgets: as now (what victims would still have used is not given
     * back; conservative). */
    double cost = q__rec_gpu_hours(job);
    if (cu) {
        const struct q_user *u = &in->users[job->user];
        if (over_budget(u->budget_gpu_hours, u->used_gpu_hours, st->ubud[job->user], cost, 0,
                        u->window_end, res, 0))
            return 1;
    }
    if (cg) {
        const struct q_group *g = &in->groups[job->group];
        if (over_budget(g->budget_gpu_hours, g->used_gpu_hours, st->gbud[job->group], cost, 0,
                        g->window_end, res, 1))
            return 1;
    }
    return 0;
}

int q__quota_fits(q_state *st, const struct q_input *in, int user, int group,
                  const q__res *need, double hours, bool nonpre) {
    struct q_result tmp;
    memset(&tmp, 0, sizeof tmp);
    if (user_ok(in, user) && !st->uopen[user]) {
        const struct q_user *u = &in->users[user];
        if (over(&u->quota, &st->uin[user], need, NULL, &tmp, 0) ||
            over_budget(u->budget_gpu_hours, u->used_gpu_hours, st->ubud[user], hours, 0,
                        u->window_end, &tmp, 0))
            return 1;
    }
    if (group_ok(in, group) && !st->gopen[group]) {
        const struct q_group *g = &in->groups[group];
        if (group_over(st, in, group, need, NULL, false, nonpre, &tmp) ||
            over_budget(g->budget_gpu_hours, g->used_gpu_hours, st->gbud[group], hours, 0,
                        g->window_end, &tmp, 1))
            return 1;
    }
    return 0;
}

void q__quota_adj(q_state *st, const struct q_input *in, int user, int group,
                  const q__res *need, int sign, bool nonpre) {
    if (nonpre && group_ok(in, group) && cohort_of(st, in, group) > 0)
        for (int r = 0; r < Q__NRES; r++) st->gnpadj[group].v[r] += sign * need->v[r];
    if (user_ok(in, user))
        for (int r = 0; r < Q__NRES; r++) st->uadj[user].v[r] += sign * need->v[r];
    if (!group_ok(in, group)) return;
    int c = cohort_of(st, in, group);
    for (int r = 0; r < Q__NRES; r++) {
        int64_t a0 = st->gadj[group].v[r], a1 = a0 + sign * need->v[r];
        st->gadj[group].v[r] = a1;
        if (c > 0 && pooled(st, group, r)) {
            int64_t u = st->gin[group].v[r], guar = st->gguar[group].v[r];
            st->csoon[c].v[r] += contrib(u - a1, guar) - contrib(u - a0, guar);
        }
    }
}

int q__within_nominal(const q_state *st, const struct q_input *in, int g,
                      const q__res *need) {
    if (cohort_of(st, in, g) == 0) return 1;
    for (int r = 0; r < Q__NRES; r++) {
        if (!pooled(st, g, r)) continue;
        int64_t u = st->gin[g].v[r] - (st->soon_on ? st->gadj[g].v[r] : 0);
        if (u + need->v[r] > q__lim_of(&in->groups[g].quota, r)) return 0;
    }
    return 1;
}

int q__borrowing(const q_state *st, const struct q_input *in, int g, const q__res *need) {
    if (cohort_of(st, in, g) == 0) return 0;
    for (int r = 0; r < Q__NRES; r++) {
        if (!pooled(st, g, r) || (need && need->v[r] <= 0)) continue;
        int64_t u = st->gin[g].v[r] - (st->soon_on ? st->gadj[g].v[r] : 0);
        if (u > q__lim_of(&in->groups[g].quota, r)) return 1;
    }
    return 0;
}

