/* quota_rules.c -- accepting UserQuotas against their group's quota and
 * budget (rules in quota_rules.h), with the rejection messages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/quota_rules.h"

#include "common/units.h"

/* See quota_rules.h for each public function's contract. */

const char *qr_format_cpu(int64_t milli, char *buf, size_t cap) {
    if (milli % 1000 == 0) snprintf(buf, cap, "%lld", (long long)(milli / 1000));
    else snprintf(buf, cap, "%lldm", (long long)milli);
    return buf;
}

const char *qr_format_memory(int64_t bytes, char *buf, size_t cap) {
    const int64_t gi = (int64_t)1 << 30, mi = (int64_t)1 << 20, ki = 1024;
    if (bytes != 0 && bytes % gi == 0) snprintf(buf, cap, "%lldGi", (long long)(bytes / gi));
    else if (bytes != 0 && bytes % mi == 0) snprintf(buf, cap, "%lldMi", (long long)(bytes / mi));
    else if (bytes != 0 && bytes % ki == 0) snprintf(buf, cap, "%lldKi", (long long)(bytes / ki));
    else snprintf(buf, cap, "%lld", (long long)bytes);
    return buf;
}

static void qr_format_window(double s, char *buf, size_t cap) {
    if (!(s < 1e15)) snprintf(buf, cap, "%gs", s);
    else if (s >= 86400 && (int64_t)s % 86400 == 0) snprintf(buf, cap, "%lldd", (long long)(s / 86400));
    else if (s >= 3600 && (int64_t)s % 3600 == 0) snprintf(buf, cap, "%lldh", (long long)(s / 3600));
    else snprintf(buf, cap, "%.0fs", s);
}

enum { QR_GPUS, QR_GPU_MEM, QR_CPU, QR_MEM, QR_JOBS, QR_NRES };
static const char *const qr_res_name[QR_NRES] = {"gpus", "gpuMemory", "cpu",
                                                  "memory", "jobs"};

static int64_t qr_get(const struct aiq_quota *q, int r) {
    switch (r) {
    case QR_GPUS: return q->gpus;
    case QR_GPU_MEM: return q->gpu_memory_mib;
    case QR_CPU: return q->cpu_milli;
    case QR_MEM: return q->memory_bytes;
    default: return q->jobs;
    }
}

static void qr_set(struct aiq_quota *q, int r, int64_t v) {
    switch (r) {
    case QR_GPUS: q->gpus = v; break;
    case QR_GPU_MEM: q->gpu_memory_mib = v; break;
    case QR_CPU: q->cpu_milli = v; break;
    case QR_MEM: q->memory_bytes = v; break;
    default: q->jobs = v; break;
    }
}

static void qr_amount(int r, int64_t v, char *buf, size_t cap) {
    if (r == QR_CPU) qr_format_cpu(v, buf, cap);
    else if (r == QR_MEM) qr_format_memory(v, buf, cap);
    else if (r == QR_GPU_MEM) aiq_quantity_format_mib(v, buf, cap);
    else snprintf(buf, cap, "%lld", (long long)v);
}

static int qr_cmp(const void *a, const void *b) {
    const struct qr_entry *x = *(const struct qr_entry *const *)a;
    const struct qr_entry *y = *(const struct qr_entry *const *)b;
    if (x->creation_time < y->creation_time) return -1;
    if (x->creation_time > y->creation_time) return 1;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    if (c) return c;
    return x < y ? -1 : x > y; /* input order */
}

static double qr_window(double w) { return w > 0 ? w : 2592000.0; }

/* The earlier entry in order[0..k) that v accepted for the same user as
 * order[k] (one accepted UserQuota per user), or -1. */
static int qr_same_user(const struct qr_entry *const *order, const struct qr_verdict *v,
                        const struct qr_entry *e, int k) {
    const struct qr_entry *q = order[k];
    for (int j = 0; j < k && q->user; j++)
        if (v[order[j] - e].accepted && order[j]->user &&
            strcmp(order[j]->user, q->user) == 0)
            return j;
    return -1;
}

/* Whether q's quota fits beside sum[] (what is allotted so far) in the
 * group quota gq: next[] gets the sums with q accepted. Returns 1 with
 * d->message saying why when it does not fit, else 0. */
static int qr_over_quota(const char *group, const struct aiq_quota *gq,
                         const int64_t sum[QR_NRES], const struct qr_entry *q,
                         int64_t next[QR_NRES], struct qr_verdict *d) {
    char a[48], b[48];
    int bad = 0;
    for (int r = 0; r < QR_NRES && !bad; r++) {
        int64_t g = qr_get(gq, r), u = qr_get(&q->quota, r);
        next[r] = sum[r];
        if (g < 0) continue;
        if (u < 0) {
            if (sum[r] > 0) {
                qr_amount(r, g, a, sizeof a);
                qr_amount(r, sum[r], b, sizeof b);
                snprintf(d->message, sizeof d->message,
                         "user quota for %s is unlimited, but group %.64s limits %s "
                         "to %s and %s is already allotted",
                         qr_res_name[r], group, qr_res_name[r], a, b);
                bad = 1;
            }
            next[r] = g; /* takes the whole group quota */
            continue;
        }
        if (u > INT64_MAX - sum[r] || sum[r] + u > g) {
            if (u > INT64_MAX - sum[r]) snprintf(a, sizeof a, "more than %lld",
                                                 (long long)INT64_MAX);
            else qr_amount(r, sum[r] + u, a, sizeof a);
            qr_amount(r, g, b, sizeof b);
            snprintf(d->message, sizeof d->message,
                     "sum of user quotas for %s would be %s, group %.64s has %s",
                     qr_res_name[r], a, group, b);
            bad = 1;
            continue;
        }
        next[r] = sum[r] + u;
    }
    return bad;
}

/* Whether q's GPU-hour budget, scaled to the group's window gwin, fits
 * beside bsum (allotted so far) in the group budget gb: *bnext gets the
 * sum with q accepted. Returns 1 with d->message saying why when it does
 * not fit, else 0. */
static int qr_over_budget(const char *group, const struct aiq_budget *gb, double gwin,
                          double bsum, const struct qr_entry *q, double *bnext,
                          struct qr_verdict *d) {
    char w[32];
    qr_format_window(gwin, w, sizeof w);
    if (q->budget.gpu_hours < 0) {
        *bnext = gb->gpu_hours;
        if (bsum > 0) {
            snprintf(d->message, sizeof d->message,
                     "user budget is unlimited, but group %.64s has %g GPU-hours "
                     "per %s and %g are already allotted",
                     group, gb->gpu_hours, w, bsum);
            return 1;
        }
        return 0;
    }
    double uh = q->budget.gpu_hours * gwin / qr_window(q->budget.window_s);
    *bnext = bsum + uh;
    /* a little slack for the window scaling's rounding */
    if (*bnext > gb->gpu_hours * (1 + 1e-12)) {
        snprintf(d->message, sizeof d->message,
                 "sum of user budgets would be %g GPU-hours per %s, "
                 "group %.64s has %g",
                 *bnext, w, group, gb->gpu_hours);
        return 1;
    }
    return 0;
}

aiq_rc qr_decide(const char *group, const struct aiq_quota *gq,
                 const struct aiq_budget *gb, const struct qr_entry *e,
                 int n, struct qr_verdict *out, struct qr_allotted *allotted,
                 aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    const struct qr_entry **order = NULL;
    struct qr_verdict *v = NULL;
    if (!gq || n < 0 || (n > 0 && (!e || !out)))
        return aiq_err_set(err, AIQ_EINVAL, "qr_decide: missing group quota or entries");
    if (!group) group = "?";
    if (n > 0) {
        order = malloc((size_t)n * sizeof *order);
        v = calloc((size_t)n, sizeof *v);
        if (!order || !v) {
            rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory deciding user quotas");
            goto out_free;
        }
    }
    for (int i = 0; i < n; i++) order[i] = &e[i];
    if (n > 1) qsort(order, (size_t)n, sizeof *order, qr_cmp);

    int64_t sum[QR_NRES] = {0};
    double bsum = 0;
    int has_budget = gb && gb->gpu_hours >= 0;
    double gwin = has_budget ? qr_window(gb->window_s) : 0;
    for (int k = 0; k < n; k++) {
        const struct qr_entry *q = order[k];
        struct qr_verdict *d = &v[q - e];
        int dup = qr_same_user(order, v, e, k);
        if (dup >= 0) {
            snprintf(d->message, sizeof d->message,
                     "user %.64s already has UserQuota %.64s in group %.64s",
                     q->user, order[dup]->name ? order[dup]->name : "?", group);
            continue;
        }
        int64_t next[QR_NRES];
        double bnext = bsum;
        if (qr_over_quota(group, gq, sum, q, next, d) ||
            (has_budget && qr_over_budget(group, gb, gwin, bsum, q, &bnext, d)))
            continue;
        d->accepted = true;
        memcpy(sum, next, sizeof sum);
        bsum = bnext;
    }
    if (n > 0) memcpy(out, v, (size_t)n * sizeof *v);
    if (allotted) {
        for (int r = 0; r < QR_NRES; r++)
            qr_set(&allotted->quota, r, qr_get(gq, r) < 0 ? -1 : sum[r]);
        allotted->budget_gpu_hours = has_budget ? bsum : -1;
    }
out_free:
    free(v);
    free(order);
    return rc;
}
