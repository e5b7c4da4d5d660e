/* model.c -- the object model's life cycle (deinit), names of phases and
 * kinds, and validation of the four kinds. The rules here are the ones
 * the crds/ YAML files state in their OpenAPI schemas and x-kubernetes-validations;
 * change both together. */
#include "common/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/field_err.h"
#include "common/quote.h"
#include "common/units.h"

/* Ranges shared with the CRDs. */
#define MAX_PRIORITY 1000000
#define MAX_LEVEL 1000
#define MAX_BACKOFF 100
#define MAX_GPU_MEMORY_MIB (1 << 20) /* 1 TiB per GPU */
#define MAX_LABEL 63

/* ---- life cycle ------------------------------------------------------- */

void aiq_quota_unlimited(struct aiq_quota *q) {
    q->gpus = q->gpu_memory_mib = q->cpu_milli = q->memory_bytes = q->jobs = -1;
}

void aiq_meta_deinit(struct aiq_meta *m) {
    if (!m) return;
    free(m->name);
    free(m->namespace_);
    free(m->uid);
    free(m->resource_version);
    memset(m, 0, sizeof *m);
}

void aiq_aijob_deinit(struct aiq_aijob *j) {
    if (!j) return;
    aiq_meta_deinit(&j->meta);
    free(j->spec.user);
    free(j->spec.resources.gpu_model);
    free(j->spec.domain);
    free(j->spec.task_type);
    free(j->spec.model_name);
    free(j->spec.template_json);
    memset(j, 0, sizeof *j);
}

void aiq_policy_deinit(struct aiq_policy *p) {
    if (!p) return;
    aiq_meta_deinit(&p->meta);
    free(p->spec.formula);
    free(p->spec.placement_score);
    for (int i = 0; i < p->spec.nlevels; i++) {
        free(p->spec.levels[i].name);
        free(p->spec.levels[i].when);
    }
    free(p->spec.levels);
    free(p->spec.starvation_promote_to);
    memset(p, 0, sizeof *p);
}

void aiq_group_deinit(struct aiq_group *g) {
    if (!g) return;
    aiq_meta_deinit(&g->meta);
    for (int i = 0; i < g->spec.nnamespaces; i++) free(g->spec.namespaces[i]);
    free(g->spec.namespaces);
    for (int i = 0; i < g->spec.nmembers; i++) free(g->spec.members[i].user);
    free(g->spec.members);
    free(g->spec.cohort);
    memset(g, 0, sizeof *g);
}

void aiq_userquota_deinit(struct aiq_userquota *u) {
    if (!u) return;
    aiq_meta_deinit(&u->meta);
    free(u->spec.user);
    memset(u, 0, sizeof *u);
}

/* ---- names ------------------------------------------------------------ */

static const char *const phase_names[] = {
    [AIQ_PHASE_NONE] = "",
    [AIQ_PHASE_PENDING] = "Pending",
    [AIQ_PHASE_QUEUED] = "Queued",
    [AIQ_PHASE_ADMITTED] = "Admitted",
    [AIQ_PHASE_RUNNING] = "Running",
    [AIQ_PHASE_SUCCEEDED] = "Succeeded",
    [AIQ_PHASE_FAILED] = "Failed",
    [AIQ_PHASE_REJECTED] = "Rejected",
    [AIQ_PHASE_SUSPENDED] = "Suspended",
};
#define NPHASES ((int)(sizeof phase_names / sizeof phase_names[0]))

const char *aiq_phase_name(aiq_phase p) {
    if ((int)p < 0 || (int)p >= NPHASES) return "";
    return phase_names[p];
}

aiq_phase aiq_phase_parse(const char *s) {
    if (!s) return AIQ_PHASE_NONE;
    for (int i = 1; i < NPHASES; i++)
        if (strcmp(s, phase_names[i]) == 0) return (aiq_phase)i;
    return AIQ_PHASE_NONE;
}

static const char *const kind_names[] = {
    [AIQ_KIND_UNKNOWN] = "",
    [AIQ_KIND_AIJOB] = "AIJob",
    [AIQ_KIND_QUEUEPOLICY] = "QueuePolicy",
    [AIQ_KIND_GROUP] = "Group",
    [AIQ_KIND_USERQUOTA] = "UserQuota",
};
#define NKINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

const char *aiq_kind_name(aiq_kind k) {
    if ((int)k < 0 || (int)k >= NKINDS) return "";
    return kind_names[k];
}

aiq_kind aiq_kind_parse(const char *s) {
    if (!s) return AIQ_KIND_UNKNOWN;
    for (int i = 1; i < NKINDS; i++)
        if (strcmp(s, kind_names[i]) == 0) return (aiq_kind)i;
    return AIQ_KIND_UNKNOWN;
}

/* ---- validation helpers ----------------------------------------------- */

static aiq_rc check_range(aiq_err *err, const char *field, int64_t v,
                          int64_t lo, int64_t hi) {
    if (v < lo)
        return aiq_field_err(err, field, "must be >= %lld, got %lld",
                             (long long)lo, (long long)v);
    if (v > hi)
        return aiq_field_err(err, field, "must be <= %lld, got %lld",
                             (long long)hi, (long long)v);
    return AIQ_OK;
}

/* A required or optional string with a length cap. */
static aiq_rc check_str(aiq_err *err, const char *field, const char *s,
                        bool required, size_t max) {
    if (!s || !*s)
        return required ? aiq_field_err(err, field, "is required") : AIQ_OK;
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return aiq_field_err(err, field, "must be at most %zu characters, got %zu",
                             max, strlen(s));
    return AIQ_OK;
}

static bool is_lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, 1..63 characters. */
static bool is_dns_label(const char *s, size_t n) {
    if (n == 0 || n > MAX_LABEL) return false;
    if (!is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-') return false;
    return true;
}

/* RFC 1123 subdomain: dot-separated labels, at most 253 characters. */
static bool is_dns_subdomain(const char *s) {
    size_t n = strnlen(s, AIQ_MAX_NAME + 1);
    if (n == 0 || n > AIQ_MAX_NAME) return false;
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        if (!is_dns_label(p, l)) return false;
        if (!dot) return true;
        p = dot + 1;
    }
}

/* See model.h. */
bool aiq_is_dns_subdomain(const char *s) {
    return s && is_dns_subdomain(s);
}

/* Label value: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63. */
static bool is_label_value(const char *s) {
    size_t n = strnlen(s, MAX_LABEL + 1);
    if (n == 0 || n > MAX_LABEL) return false;
    if (!is_alnum(s[0]) || !is_alnum(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

static aiq_rc check_label_value(aiq_err *err, const char *field,
                                const char *s) {
    char q[96];
    if (!s) return AIQ_OK;
    if (!is_label_value(s))
        return aiq_field_err(err, field,
                             "must be a label value (at most 63 letters, "
                             "digits, '-', '_' or '.', starting and ending "
                             "with a letter or digit), got %s",
                             aiq_quotes(q, sizeof q, s));
    return AIQ_OK;
}

static aiq_rc check_meta(aiq_err *err, const struct aiq_meta *m) {
    char q[96];
    if (!m->name || !*m->name)
        return aiq_field_err(err, "metadata.name", "is required");
    if (!is_dns_subdomain(m->name))
        return aiq_field_err(err, "metadata.name",
                             "must be a lowercase RFC 1123 subdomain (a-z, "
                             "0-9, '-', '.'; at most 253), got %s",
                             aiq_quotes(q, sizeof q, m->name));
    if (m->namespace_ && !is_dns_label(m->namespace_, strlen(m->namespace_)))
        return aiq_field_err(err, "metadata.namespace",
                             "must be a lowercase RFC 1123 label (a-z, 0-9, "
                             "'-'; at most 63), got %s",
                             aiq_quotes(q, sizeof q, m->namespace_));
    return AIQ_OK;
}

/* Quota fields: -1 (not limited) or >= 0. */
static aiq_rc check_quota(aiq_err *err, const char *base,
                          const struct aiq_quota *qt) {
    char f[64];
    char v[32];
    snprintf(f, sizeof f, "%s.gpus", base);
    if (qt->gpus < -1) return check_range(err, f, qt->gpus, 0, INT64_MAX);
    snprintf(f, sizeof f, "%s.gpuMemoryMiB", base);
    if (qt->gpu_memory_mib < -1)
        return check_range(err, f, qt->gpu_memory_mib, 0, INT64_MAX);
    snprintf(f, sizeof f, "%s.jobs", base);
    if (qt->jobs < -1) return check_range(err, f, qt->jobs, 0, INT64_MAX);
    snprintf(f, sizeof f, "%s.cpu", base);
    if (qt->cpu_milli < -1)
        return aiq_field_err(err, f, "must be >= 0, got %s",
                             aiq_quantity_format_milli(qt->cpu_milli, v, sizeof v));
    snprintf(f, sizeof f, "%s.memory", base);
    if (qt->memory_bytes < -1)
        return aiq_field_err(err, f, "must be >= 0, got %s",
                             aiq_quantity_format_bytes(qt->memory_bytes, v, sizeof v));
    return AIQ_OK;
}

static aiq_rc check_budget(aiq_err *err, const struct aiq_budget *b) {
    char d[48];
    if (!isfinite(b->gpu_hours) || (b->gpu_hours < 0 && b->gpu_hours != -1))
        return aiq_field_err(err, "spec.budget.gpuHours", "must be >= 0, got %g",
                             b->gpu_hours);
    if (!isfinite(b->window_s) || b->window_s <= 0)
        return aiq_field_err(err, "spec.budget.window", "must be > 0, got %s",
                             aiq_duration_format(b->window_s, d, sizeof d));
    return AIQ_OK;
}

/* ---- the four kinds --------------------------------------------------- */

aiq_rc aiq_aijob_validate(const struct aiq_aijob *j, aiq_err *err) {
    const struct aiq_aijob_spec *s = &j->spec;
    const struct aiq_resources *r = &s->resources;
    char v[48];
    aiq_rc rc = AIQ_OK;

    if ((rc = check_meta(err, &j->meta))) return rc;
    /* The pods carry the job's name in the aiq.dev/job label, whose values
     * are at most 63 characters; a longer name could never start. */
    if (strnlen(j->meta.name, AIQ_MAX_AIJOB_NAME + 1) > AIQ_MAX_AIJOB_NAME)
        return aiq_field_err(err, "metadata.name",
                             "must be no more than %d characters (an AIJob's pods "
                             "carry its name in the aiq.dev/job label), got %zu",
                             AIQ_MAX_AIJOB_NAME, strlen(j->meta.name));
    if ((rc = check_str(err, "spec.user", s->user, true, AIQ_MAX_NAME))) return rc;
    if ((rc = check_range(err, "spec.priority", s->priority, 0, MAX_PRIORITY))) return rc;
    if ((rc = check_range(err, "spec.replicas", s->replicas, 1, AIQ_MAX_REPLICAS))) return rc;
    if ((rc = check_range(err, "spec.resources.gpus", r->gpus, 0,
                          AIQ_MAX_GPUS_PER_REPLICA)))
        return rc;
    if ((rc = check_range(err, "spec.resources.gpuMemoryMiB", r->gpu_memory_mib,
                          0, MAX_GPU_MEMORY_MIB)))
        return rc;
    if (r->cpu_milli < 0)
        return aiq_field_err(err, "spec.resources.cpu", "must be >= 0, got %s",
                             aiq_quantity_format_milli(r->cpu_milli, v, sizeof v));
    if (r->memory_bytes < 0)
        return aiq_field_err(err, "spec.resources.memory", "must be >= 0, got %s",
                             aiq_quantity_format_bytes(r->memory_bytes, v, sizeof v));
    if ((rc = check_label_value(err, "spec.resources.gpuModel", r->gpu_model)))
        return rc;
    if (r->gpu_model && r->gpus == 0 && r->gpu_memory_mib == 0)
        return aiq_field_err(err, "spec.resources.gpuModel",
                             "needs gpus > 0 or gpuMemory > 0");
    if ((rc = check_label_value(err, "spec.domain", s->domain))) return rc;
    if (!isfinite(s->estimated_runtime_s) || s->estimated_runtime_s < 0)
        return aiq_field_err(err, "spec.estimatedRuntime", "must be >= 0, got %s",
                             aiq_duration_format(s->estimated_runtime_s, v, sizeof v));
    if ((rc = check_str(err, "spec.taskType", s->task_type, false, MAX_LABEL))) return rc;
    if ((rc = check_str(err, "spec.model.name", s->model_name, false, AIQ_MAX_NAME)))
        return rc;
    if ((rc = check_range(err, "spec.model.parameters", s->model_parameters, 0,
                          INT64_MAX)))
        return rc;
    if ((rc = check_range(err, "spec.backoffLimit", s->backoff_limit, 0, MAX_BACKOFF)))
        return rc;
    if (s->min_replicas || s->max_replicas) {
        if ((rc = check_range(err, "spec.minReplicas", s->min_replicas, 1, AIQ_MAX_REPLICAS)))
            return rc;
        if ((rc = check_range(err, "spec.maxReplicas", s->max_replicas, s->min_replicas,
                              AIQ_MAX_REPLICAS)))
            return rc;
    }
    if (!isfinite(s->checkpoint_interval_s) || s->checkpoint_interval_s < 0)
        return aiq_field_err(err, "spec.checkpointInterval", "must be >= 0, got %s",
                             aiq_duration_format(s->checkpoint_interval_s, v, sizeof v));
    if (!isfinite(s->min_runtime_s) || s->min_runtime_s < 0)
        return aiq_field_err(err, "spec.minRuntime", "must be >= 0, got %s",
                             aiq_duration_format(s->min_runtime_s, v, sizeof v));
    return AIQ_OK;
}

/* The QueuePolicy's durations and numbers: each in its range. */
static aiq_rc policy_numbers(const struct aiq_policy_spec *s, aiq_err *err) {
    char d[48], lim[48];
    if (!isfinite(s->starvation_after_s) || s->starvation_after_s < 0)
        return aiq_field_err(err, "spec.starvation.after", "must be >= 0, got %s",
                             aiq_duration_format(s->starvation_after_s, d, sizeof d));
    if (!isfinite(s->rescore_interval_s) || s->rescore_interval_s < 0 ||
        s->rescore_interval_s > AIQ_MAX_RESCORE_INTERVAL_S)
        return aiq_field_err(err, "spec.rescoreInterval", "must be between 0 and %s, got %s",
                             aiq_duration_format(AIQ_MAX_RESCORE_INTERVAL_S, lim, sizeof lim),
                             aiq_duration_format(s->rescore_interval_s, d, sizeof d));
    if (!isfinite(s->fairshare_half_life_s) || s->fairshare_half_life_s <= 0)
        return aiq_field_err(err, "spec.fairShare.halfLife", "must be > 0, got %s",
                             aiq_duration_format(s->fairshare_half_life_s, d, sizeof d));
    if (!isfinite(s->preempt_score_margin) || s->preempt_score_margin < 0)
        return aiq_field_err(err, "spec.preemption.withinLevel.scoreMargin",
                             "must be >= 0, got %g", s->preempt_score_margin);
    if (!isfinite(s->preempt_min_runtime_s) || s->preempt_min_runtime_s < 0)
        return aiq_field_err(err, "spec.preemption.minRuntime", "must be >= 0, got %s",
                             aiq_duration_format(s->preempt_min_runtime_s, d, sizeof d));
    if (!isfinite(s->preempt_max_job_min_runtime_s) || s->preempt_max_job_min_runtime_s < 0)
        return aiq_field_err(err, "spec.preemption.maxJobMinRuntime", "must be >= 0, got %s",
                             aiq_duration_format(s->preempt_max_job_min_runtime_s, d, sizeof d));
    return check_range(err, "spec.preemption.maxPerJobPerHour", s->preempt_max_per_hour, 0, 1000);
}

aiq_rc aiq_policy_validate(const struct aiq_policy *p, aiq_err *err) {
    const struct aiq_policy_spec *s = &p->spec;
    char f[64], q[96];
    aiq_rc rc = AIQ_OK;

    if ((rc = check_meta(err, &p->meta))) return rc;
    if ((rc = check_str(err, "spec.formula", s->formula, true, AIQ_MAX_FORMULA)))
        return rc;
    if ((rc = check_str(err, "spec.placementScore", s->placement_score, false, AIQ_MAX_FORMULA)))
        return rc;
    if (s->nlevels < 1 || !s->levels)
        return aiq_field_err(err, "spec.levels", "must have at least 1 level");
    if (s->nlevels > AIQ_MAX_LEVELS)
        return aiq_field_err(err, "spec.levels", "must have at most %d levels, got %d",
                             AIQ_MAX_LEVELS, s->nlevels);
    for (int i = 0; i < s->nlevels; i++) {
        const struct aiq_level *l = &s->levels[i];
        bool last = i == s->nlevels - 1;
        snprintf(f, sizeof f, "spec.levels[%d].name", i);
        if (!l->name || !*l->name) return aiq_field_err(err, f, "is required");
        if (!is_dns_label(l->name, strnlen(l->name, MAX_LABEL + 1)))
            return aiq_field_err(err, f,
                                 "must be a lowercase RFC 1123 label (a-z, 0-9, "
                                 "'-'; at most 63), got %s",
                                 aiq_quotes(q, sizeof q, l->name));
        for (int k = 0; k < i; k++)
            if (strcmp(s->levels[k].name, l->name) == 0)
                return aiq_field_err(err, f, "duplicate level name %s",
                                     aiq_quotes(q, sizeof q, l->name));
        snprintf(f, sizeof f, "spec.levels[%d].when", i);
        if (last && l->when && *l->when)
            return aiq_field_err(err, f,
                                 "must be empty on the last level (the "
                                 "catch-all), got %s",
                                 aiq_quotes(q, sizeof q, l->when));
        if (!last && (!l->when || !*l->when))
            return aiq_field_err(err, f,
                                 "is required on every level but the last");
        if ((rc = check_str(err, f, l->when, false, AIQ_MAX_FORMULA))) return rc;
    }
    if (s->backfill != AIQ_BACKFILL_NONE && s->backfill != AIQ_BACKFILL_EASY)
        return aiq_field_err(err, "spec.backfill", "must be None or Easy, got %d",
                             (int)s->backfill);
    if (s->placement != AIQ_PLACE_BINPACK && s->placement != AIQ_PLACE_SPREAD &&
        s->placement != AIQ_PLACE_FGD)
        return aiq_field_err(err, "spec.placement",
                             "must be binpack, spread or fgd, got %d", (int)s->placement);
    if ((rc = policy_numbers(s, err))) return rc;
    if (s->starvation_promote_to) {
        bool found = false;
        for (int i = 0; i < s->nlevels; i++)
            if (strcmp(s->levels[i].name, s->starvation_promote_to) == 0) found = true;
        if (!found)
            return aiq_field_err(err, "spec.starvation.promoteTo",
                                 "no level named %s",
                                 aiq_quotes(q, sizeof q, s->starvation_promote_to));
    }
    return AIQ_OK;
}

aiq_rc aiq_group_validate(const struct aiq_group *g, aiq_err *err) {
    const struct aiq_group_spec *s = &g->spec;
    char f[64], q[96];
    aiq_rc rc = AIQ_OK;

    if ((rc = check_meta(err, &g->meta))) return rc;
    if ((rc = check_range(err, "spec.level", s->level, 0, MAX_LEVEL))) return rc;
    if (s->nnamespaces > AIQ_MAX_LIST)
        return aiq_field_err(err, "spec.namespaces", "must have at most %d items, got %d",
                             AIQ_MAX_LIST, s->nnamespaces);
    for (int i = 0; i < s->nnamespaces; i++) {
        const char *ns = s->namespaces[i];
        snprintf(f, sizeof f, "spec.namespaces[%d]", i);
        if (!ns || !is_dns_label(ns, strnlen(ns, MAX_LABEL + 1)))
            return aiq_field_err(err, f,
                                 "must be a lowercase RFC 1123 label (a-z, 0-9, "
                                 "'-'; at most 63), got %s",
                                 aiq_quotes(q, sizeof q, ns));
        for (int k = 0; k < i; k++)
            if (strcmp(s->namespaces[k], ns) == 0)
                return aiq_field_err(err, f, "duplicate namespace %s",
                                     aiq_quotes(q, sizeof q, ns));
    }
    if ((rc = check_quota(err, "spec.quota", &s->quota))) return rc;
    if ((rc = check_budget(err, &s->budget))) return rc;
    if (s->nmembers > AIQ_MAX_LIST)
        return aiq_field_err(err, "spec.members", "must have at most %d items, got %d",
                             AIQ_MAX_LIST, s->nmembers);
    for (int i = 0; i < s->nmembers; i++) {
        const struct aiq_member *m = &s->members[i];
        snprintf(f, sizeof f, "spec.members[%d].user", i);
        if ((rc = check_str(err, f, m->user, true, AIQ_MAX_NAME))) return rc;
        for (int k = 0; k < i; k++)
            if (strcmp(s->members[k].user, m->user) == 0)
                return aiq_field_err(err, f, "duplicate member %s",
                                     aiq_quotes(q, sizeof q, m->user));
        snprintf(f, sizeof f, "spec.members[%d].level", i);
        if ((rc = check_range(err, f, m->level, 0, MAX_LEVEL))) return rc;
    }
    if (!isfinite(s->shares) || s->shares < 0)
        return aiq_field_err(err, "spec.shares", "must be >= 0, got %g", s->shares);
    if (s->cohort && !is_dns_label(s->cohort, strnlen(s->cohort, MAX_LABEL + 1)))
        return aiq_field_err(err, "spec.cohort",
                             "must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most "
                             "63), got %s", aiq_quotes(q, sizeof q, s->cohort));
    if ((rc = check_quota(err, "spec.borrowingLimit", &s->borrowing_limit))) return rc;
    if ((rc = check_quota(err, "spec.lendingLimit", &s->lending_limit))) return rc;
    return AIQ_OK;
}

aiq_rc aiq_userquota_validate(const struct aiq_userquota *u, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    if ((rc = check_meta(err, &u->meta))) return rc;
    if ((rc = check_str(err, "spec.user", u->spec.user, true, AIQ_MAX_NAME))) return rc;
    if ((rc = check_quota(err, "spec.quota", &u->spec.quota))) return rc;
    if ((rc = check_budget(err, &u->spec.budget))) return rc;
    return AIQ_OK;
}
