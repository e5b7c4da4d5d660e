/* cli_rank.c -- factor vectors of AIJobs rebuilt from API objects, and
 * the local what-if ranking of `kubectl aiq policy test` (see
 * cli_rank.h). */
#include "tools/cli_rank.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "operator/manifest.h"
#include "operator/status.h"

#define APPROX(id) (1ull << FX_F_##id)

static void clr_copy(char *dst, size_t cap, const char *s) {
    snprintf(dst, cap, "%s", s ? s : "");
}

/* Finds the group of a namespace; see cli_rank.h. */
int cli_group_of_ns(const struct cli_world *w, const char *ns) {
    for (int g = 0; g < w->ngroups; g++)
        for (int i = 0; i < w->groups[g].spec.nnamespaces; i++)
            if (ns && strcmp(w->groups[g].spec.namespaces[i], ns) == 0)
                return g;
    return -1;
}

static int clr_group_by_name(const struct cli_world *w, const char *name) {
    for (int g = 0; g < w->ngroups; g++)
        if (name && w->groups[g].meta.name && strcmp(w->groups[g].meta.name, name) == 0)
            return g;
    return -1;
}

/* The accepted UserQuota of user in group g, or -1. */
static int clr_uq(const struct cli_world *w, int g, const char *user) {
    for (int i = 0; i < w->nuqs; i++) {
        const struct aiq_userquota *u = &w->uqs[i];
        json_object *st = w->uq_status ? w->uq_status[i] : NULL;
        if (!u->spec.user || !user || strcmp(u->spec.user, user) != 0)
            continue;
        if (cli_group_of_ns(w, u->meta.namespace_) != g)
            continue;
        json_object *acc = aiq_jget(st, "accepted");
        if (acc && !json_object_get_boolean(acc))
            continue;
        return i;
    }
    return -1;
}

/* Window GPU-hours in a status's usage (the operator writes them only
 * when a budget is set), else 0. */
static double clr_gpu_hours(json_object *st) {
    return aiq_jnum(aiq_jget(st, "usage"), "gpuHours", 0);
}

/* Fair share from the objects; see cli_rank.h. */
void cli_fairshare(const struct cli_world *w, int g, const char *user,
                           double *fs_group, double *fs_user) {
    double tot_u = 0, tot_s = 0, gshare = 1, gu = 0;
    *fs_group = 1;
    *fs_user = 1;
    if (g < 0)
        return;
    for (int i = 0; i < w->ngroups; i++) {
        const struct aiq_group *ag = &w->groups[i];
        double s = ag->spec.shares > 0 ? ag->spec.shares
                   : (ag->spec.quota.gpus > 0 ? (double)ag->spec.quota.gpus : 1);
        double u = clr_gpu_hours(w->group_status ? w->group_status[i] : NULL);
        tot_s += s;
        tot_u += u;
        if (i == g) {
            gshare = s;
            gu = u;
        }
    }
    double U = tot_u > 0 ? gu / tot_u : 0, S = tot_s > 0 ? gshare / tot_s : 1;
    *fs_group = S > 0 ? pow(2, -U / S) : 0;
    int members = w->groups[g].spec.nmembers;
    double uu = 0;
    for (int i = 0; i < w->nuqs; i++) {
        if (cli_group_of_ns(w, w->uqs[i].meta.namespace_) != g)
            continue;
        int listed = 0;
        for (int k = 0; k < w->groups[g].spec.nmembers; k++)
            listed |= w->uqs[i].spec.user && w->groups[g].spec.members[k].user &&
                      strcmp(w->uqs[i].spec.user, w->groups[g].spec.members[k].user) == 0;
        members += !listed;
        if (user && w->uqs[i].spec.user && strcmp(w->uqs[i].spec.user, user) == 0)
            uu = clr_gpu_hours(w->uq_status ? w->uq_status[i] : NULL);
    }
    double Uu = gu > 0 ? uu / gu : 0, Su = members > 0 ? 1.0 / members : 1;
    *fs_user = *fs_group * pow(2, -Uu / Su);
}

/* See cli_rank.h. */
void cli_job_clock(struct cli_job *j, const oppolicy *p) {
    double t = p ? oppolicy_score_clock(p, j->at) : j->at;
    j->f[FX_F_WAIT_HOURS] = j->queued > 0 && t > j->queued ? (t - j->queued) / 3600.0 : 0;
    j->f[FX_F_JOB_AGE_HOURS] = j->created > 0 && t > j->created ? (t - j->created) / 3600.0 : 0;
}

/* Fills j->f from the decoded job and w, mirroring operator/cycle.c's
 * factor vector; flags what the objects cannot tell exactly. */
static void clr_factors(const struct aiq_aijob *aj, json_object *status,
                        const struct cli_world *w, int g, struct cli_job *j) {
    double *f = j->f;
    const struct aiq_group *grp = g >= 0 ? &w->groups[g] : NULL;
    json_object *gst = g >= 0 && w->group_status ? w->group_status[g] : NULL;
    int per = aj->spec.resources.gpus > 0 ? aj->spec.resources.gpus : 1;
    int uq = clr_uq(w, g, aj->spec.user);
    json_object *ust = uq >= 0 && w->uq_status ? w->uq_status[uq] : NULL;
    memset(f, 0, sizeof j->f);
    if (grp)
        for (int i = 0; i < grp->spec.nmembers; i++)
            if (grp->spec.members[i].user && aj->spec.user &&
                strcmp(grp->spec.members[i].user, aj->spec.user) == 0)
                f[FX_F_USER_LEVEL] = grp->spec.members[i].level;
    f[FX_F_GROUP_LEVEL] = grp ? grp->spec.level : 0;
    f[FX_F_JOB_PRIORITY] = aj->spec.priority;
    f[FX_F_JOB_GPUS] = (double)aj->spec.replicas * aj->spec.resources.gpus;
    f[FX_F_JOB_GPU_MEMORY_GIB] = (double)aj->spec.replicas * per *
                                 (double)aj->spec.resources.gpu_memory_mib / 1024.0;
    f[FX_F_JOB_REPLICAS] = aj->spec.replicas;
    f[FX_F_JOB_CPU] = (double)aj->spec.replicas * (double)aj->spec.resources.cpu_milli / 1000.0;
    f[FX_F_JOB_MEMORY_GIB] = (double)aj->spec.replicas *
                             (double)aj->spec.resources.memory_bytes / 1073741824.0;
    j->at = w->now;
    cli_job_clock(j, NULL); /* wait.hours and job.age_hours at now */
    if (j->queued <= 0)
        j->approx |= APPROX(WAIT_HOURS);
    f[FX_F_RUNTIME_ESTIMATE_HOURS] = aj->spec.estimated_runtime_s / 3600.0;
    double pred = aiq_jnum(status, "predictedRuntime", 0);
    if (pred <= 0) {
        pred = aj->spec.estimated_runtime_s;
        j->approx |= APPROX(RUNTIME_PREDICTED_HOURS);
    }
    f[FX_F_RUNTIME_PREDICTED_HOURS] = pred / 3600.0;
    f[FX_F_ATTAINED_GPU_HOURS] = 0; /* earlier attempts live in the store */
    if (j->attempts > 0)
        j->approx |= APPROX(ATTAINED_GPU_HOURS);
    f[FX_F_USAGE_USER_GPU_HOURS] = clr_gpu_hours(ust);
    f[FX_F_USAGE_GROUP_GPU_HOURS] = clr_gpu_hours(gst);
    cli_fairshare(w, g, aj->spec.user, &f[FX_F_FAIRSHARE_GROUP], &f[FX_F_FAIRSHARE_USER]);
    j->approx |= APPROX(USAGE_USER_GPU_HOURS) | APPROX(USAGE_GROUP_GPU_HOURS) |
                 APPROX(FAIRSHARE_USER) | APPROX(FAIRSHARE_GROUP);
    double used_u = aiq_jnum(aiq_jget(ust, "usage"), "gpus", 0);
    double used_g = aiq_jnum(aiq_jget(gst, "usage"), "gpus", 0);
    f[FX_F_QUOTA_USER_SHARE] = uq >= 0 && w->uqs[uq].spec.quota.gpus > 0
                                   ? used_u / (double)w->uqs[uq].spec.quota.gpus : 0;
    f[FX_F_QUOTA_GROUP_SHARE] = grp && grp->spec.quota.gpus > 0
                                    ? used_g / (double)grp->spec.quota.gpus : 0;
    f[FX_F_CLUSTER_FREE_GPUS] = w->free_gpus;
    f[FX_F_CLUSTER_TOTAL_GPUS] = w->total_gpus;
    j->approx |= APPROX(CLUSTER_FREE_GPUS);
    f[FX_F_JOB_IS_GANG] = aj->spec.replicas > 1;
    f[FX_F_JOB_ATTEMPTS] = j->attempts;
    const struct aiq_userquota *u = uq >= 0 ? &w->uqs[uq] : NULL;
    f[FX_F_BUDGET_USER_LEFT] = u && u->spec.budget.gpu_hours >= 0
                                   ? fmax(0, u->spec.budget.gpu_hours - clr_gpu_hours(ust)) : 1e9;
    f[FX_F_BUDGET_GROUP_LEFT] = grp && grp->spec.budget.gpu_hours >= 0
                                    ? fmax(0, grp->spec.budget.gpu_hours - clr_gpu_hours(gst)) : 1e9;
}

/* Loads one job; see cli_rank.h. */
aiq_rc cli_job_load(json_object *obj, const struct cli_world *w,
                    struct cli_job *out, aiq_err *err) {
    struct aiq_aijob aj;
    memset(out, 0, sizeof *out);
    aiq_rc rc = aiq_aijob_from_json(obj, &aj, err);
    if (rc != AIQ_OK)
        return rc;
    json_object *st = aiq_jget(obj, "status");
    clr_copy(out->ns, sizeof out->ns, aj.meta.namespace_ ? aj.meta.namespace_ : "default");
    clr_copy(out->name, sizeof out->name, aj.meta.name);
    clr_copy(out->uid, sizeof out->uid, aj.meta.uid);
    clr_copy(out->user, sizeof out->user, aj.spec.user);
    clr_copy(out->phase, sizeof out->phase, aiq_jstr(st, "phase"));
    clr_copy(out->level, sizeof out->level, aiq_jstr(st, "level"));
    clr_copy(out->message, sizeof out->message, aiq_jstr(st, "message"));
    json_object *conds = aiq_jget(st, "conditions");
    size_t nc = conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < nc; i++) { /* the reason of the phase's condition */
        json_object *c = json_object_array_get_idx(conds, i);
        const char *ty = aiq_jstr(c, "type"), *cs = aiq_jstr(c, "status");
        if (ty && cs && strcmp(ty, out->phase) == 0 && strcmp(cs, "True") == 0)
            clr_copy(out->reason, sizeof out->reason, aiq_jstr(c, "reason"));
    }
    out->position = (int)aiq_jnum(st, "position", 0);
    out->has_score = aiq_jget(st, "score") != NULL;
    out->score = aiq_jnum(st, "score", 0);
    out->gpus = (long)aj.spec.replicas * aj.spec.resources.gpus;
    out->queued = opst_parse_time(aiq_jstr(st, "queuedTime"));
    out->created = aj.meta.creation_time;
    out->eta = opst_parse_time(aiq_jstr(st, "estimatedStartTime"));
    out->attempts = (int)aiq_jnum(st, "attempts", 0);
    int g = clr_group_by_name(w, aiq_jstr(st, "group"));
    if (g < 0)
        g = cli_group_of_ns(w, out->ns);
    if (g >= 0)
        clr_copy(out->group, sizeof out->group, w->groups[g].meta.name);
    clr_factors(&aj, st, w, g, out);
    aiq_aijob_deinit(&aj);
    return AIQ_OK;
}

/* Waiting phases; see cli_rank.h. */
bool cli_job_waiting(const struct cli_job *j) {
    return !j->phase[0] || strcmp(j->phase, "Pending") == 0 ||
           strcmp(j->phase, "Queued") == 0;
}

static int clr_key_cmp(const struct cli_job *a, const struct cli_job *b) {
    int k = strcmp(a->ns, b->ns);
    return k ? k : strcmp(a->name, b->name);
}

static int clr_new_cmp(const void *va, const void *vb) {
    const struct cli_job *a = *(const struct cli_job *const *)va;
    const struct cli_job *b = *(const struct cli_job *const *)vb;
    if (a->new_level != b->new_level)
        return a->new_level < b->new_level ? -1 : 1;
    if (a->new_score != b->new_score)
        return a->new_score > b->new_score ? -1 : 1;
    if (a->queued != b->queued)
        return a->queued < b->queued ? -1 : 1;
    return clr_key_cmp(a, b);
}

/* Ranks jobs under p; see cli_rank.h. */
aiq_rc cli_rank(oppolicy *p, struct cli_job *jobs, int n, aiq_err *err) {
    q_scorer sc;
    if (n > CLI_MAX_JOBS)
        return aiq_err_set(err, AIQ_ETOOBIG, "%d jobs: at most %d can be ranked", n, CLI_MAX_JOBS);
    if (n <= 0)
        return AIQ_OK;
    struct cli_job **idx = malloc((size_t)n * sizeof *idx);
    if (!idx)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory ranking %d jobs", n);
    oppolicy_scorer(p, &sc);
    for (int i = 0; i < n; i++) {
        double s = 0;
        int lv = 0;
        cli_job_clock(&jobs[i], p); /* p's clock, as the queue reads it under p */
        sc.score(sc.ctx, jobs[i].f, &s);
        sc.level(sc.ctx, jobs[i].f, &lv);
        jobs[i].new_score = s;
        jobs[i].new_level = lv;
        idx[i] = &jobs[i];
    }
    qsort(idx, (size_t)n, sizeof *idx, clr_new_cmp);
    for (int i = 0; i < n; i++)
        idx[i]->new_position = i + 1;
    free(idx);
    return AIQ_OK;
}

static int clr_pos_cmp(const void *va, const void *vb) {
    const struct cli_job *a = va, *b = vb;
    int pa = a->position > 0 ? a->position : 0x7fffffff;
    int pb = b->position > 0 ? b->position : 0x7fffffff;
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return clr_key_cmp(a, b);
}

/* Sorts by position; see cli_rank.h. */
void cli_sort_by_position(struct cli_job *jobs, int n) {
    if (n > 1)
        qsort(jobs, (size_t)n, sizeof *jobs, clr_pos_cmp);
}

/* The factor names src mentions; see cli_rank.h. */
_Static_assert(FX_NFACTORS <= 64, "factor masks are 64 bits");
uint64_t cli_factors_used(const char *src) {
    uint64_t m = 0;
    for (int i = 0; src && i < FX_NFACTORS; i++) {
        const char *name = fx_factor_name(i), *p = src;
        size_t ln = strlen(name);
        while ((p = strstr(p, name)) != NULL) {
            char before = p > src ? p[-1] : ' ', after = p[ln];
            bool wb = !(before == '.' || before == '_' || (before >= 'a' && before <= 'z'));
            bool wa = !(after == '.' || after == '_' || (after >= 'a' && after <= 'z'));
            if (wb && wa) {
                m |= 1ull << i;
                break;
            }
            p += ln;
        }
    }
    return m;
}
