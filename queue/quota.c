/* quota.c -- quota accounting for one cycle: what a job needs in quota
 * units, user and group concurrent quota (running, admitted and
 * just-admitted jobs count), GPU-hour budgets per window, and the
 * "bigger than the quota itself" reject rule. */
#include "queue/q_int.h"

#include <string.h>

/* Whole-GPU equivalents of one replica: a shared GPU counts as one. */
static int64_t gpu_units(const struct q_job *j) {
    if (j->gpus > 0) return j->gpus;
    return j->gpu_memory_mib > 0 ? 1 : 0;
}

/* Fills need with job j's total request over all replicas. */
void q__need(const struct q_job *j, q__res *need) {
    int64_t r = j->replicas;
    need->v[Q_RES_GPUS] = r * j->gpus;
    need->v[Q_RES_GPU_MEM] = j->gpu_memory_mib > 0 ? r * gpu_units(j) * j->gpu_memory_mib : 0;
    need->v[Q_RES_CPU] = r * j->cpu_milli;
    need->v[Q_RES_MEM] = r * j->memory_bytes;
    need->v[Q_RES_JOBS] = 1;
}

/* Same as q__need, from a pending job's order record. */
void q__need_rec(const q__orec *o, q__res *need) {
    int64_t r = o->replicas;
    int64_t u = o->gpus > 0 ? o->gpus : (o->gmem > 0 ? 1 : 0);
    need->v[Q_RES_GPUS] = r * o->gpus;
    need->v[Q_RES_GPU_MEM] = o->gmem > 0 ? r * u * o->gmem : 0;
    need->v[Q_RES_CPU] = r * o->cpu;
    need->v[Q_RES_MEM] = r * o->mem;
    need->v[Q_RES_JOBS] = 1;
}

/* GPU-hours a pending job will use if it runs its planned runtime (a
 * shared GPU counts as one). */
double q__rec_gpu_hours(const q__orec *o) {
    int64_t u = o->gpus > 0 ? o->gpus : (o->gmem > 0 ? 1 : 0);
    return (double)(o->replicas * u) * o->pred / 3600.0;
}

/* Runtime used for planning: the prediction, else the estimate, else 0
 * (unknown). */
double q__pred_runtime(const struct q_job *j) {
    if (j->pred_runtime_s > 0) return j->pred_runtime_s;
    return j->est_runtime_s > 0 ? j->est_runtime_s : 0;
}

static int64_t lim_of(const struct aiq_quota *q, int r) {
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
        if (lim_of(q, r) >= 0) return false;
    return true;
}

static bool user_ok(const struct q_input *in, int u) { return u >= 0 && u < in->nusers; }
static bool group_ok(const struct q_input *in, int g) { return g >= 0 && g < in->ngroups; }

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
        double h = (double)(j->replicas * gpu_units(j)) * left / 3600.0;
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
    return 0;
}

static int over(const struct aiq_quota *q, const q__res *inuse,
                const q__res *need, const q__res *extra, struct q_result *res,
                int scope) {
    for (int r = 0; r < Q__NRES; r++) {
        int64_t lim = lim_of(q, r);
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
    if (cg && over(&in->groups[job->group].quota, &st->gin[job->group], &need, extra_g, res, 1))
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
        int64_t lim = lim_of(q, r);
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

int q__quota_reject(const struct q_input *in, const q__orec *job, struct q_result *res) {
    if (job->user < 0 && job->group < 0) return 0;
    q__res need;
    q__need_rec(job, &need);
    double cost = q__rec_gpu_hours(job);
    if (user_ok(in, job->user) && too_big(&in->users[job->user].quota, &need, res, 0))
        return 1;
    if (group_ok(in, job->group) && too_big(&in->groups[job->group].quota, &need, res, 1))
        return 1;
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

/* Counts admitted job j against its user and group. */
void q__quota_commit(q_state *st, const struct q_input *in, const q__orec *job) {
    q__res need;
    q__need_rec(job, &need);
    double cost = q__rec_gpu_hours(job);
    if (user_ok(in, job->user)) {
        for (int r = 0; r < Q__NRES; r++) st->uin[job->user].v[r] += need.v[r];
        st->ubud[job->user] += cost;
    }
    if (group_ok(in, job->group)) {
        for (int r = 0; r < Q__NRES; r++) st->gin[job->group].v[r] += need.v[r];
        st->gbud[job->group] += cost;
    }
}
