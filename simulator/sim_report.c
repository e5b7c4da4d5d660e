/* sim_report.c -- the metrics of a simulated run (definitions in
 * docs/simulator.md, "Metrics"): job completion time and wait (average,
 * nearest-rank p50/p95/p99), GPU utilisation, per group and per user share
 * versus entitlement with Jain's fairness index, GPU fragmentation, ETA
 * error and runtime prediction error; printed as a table (runs side by
 * side) or CSV. */
#include "simulator/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile; see sim.h. */
double sim_percentile(double *v, int n, double p) {
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, dcmp);
    double rank = ceil(p / 100.0 * n);
    int k = rank < 1 ? 0 : rank > n ? n - 1 : (int)rank - 1;
    return v[k];
}

/* Jain's index; see sim.h. */
double sim_jain(const double *x, int n) {
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        s += x[i];
        s2 += x[i] * x[i];
    }
    if (n == 0 || s2 == 0)
        return 1;
    return s * s / (n * s2);
}

/* Unusable free GPU memory fraction; see sim.h. */
double sim_fragmentation(const struct q_node *nodes, int nnodes,
                         int min_whole_gpus, int64_t min_whole_mib,
                         int64_t min_share_mib, int min_share_milli) {
    double free_all = 0, unusable = 0;
    if (min_whole_gpus <= 0 && min_share_mib <= 0 && min_share_milli <= 0)
        return 0;
    for (int i = 0; i < nnodes; i++) {
        const struct q_node *n = &nodes[i];
        if (!n->schedulable)
            continue;
        int whole_free = 0;
        for (int g = 0; g < n->ngpus; g++)
            if (n->gpu_mem_used[g] == 0 && n->gpu_mem_total[g] >= min_whole_mib)
                whole_free++;
        bool whole_ok = min_whole_gpus > 0 && whole_free >= min_whole_gpus;
        for (int g = 0; g < n->ngpus; g++) {
            double f = (double)(n->gpu_mem_total[g] - n->gpu_mem_used[g]);
            if (f <= 0)
                continue;
            free_all += f;
            /* the smallest share fits: in MiB, or as its fraction of this GPU */
            bool share_ok = (min_share_mib > 0 && f >= (double)min_share_mib) ||
                            (min_share_milli > 0 &&
                             f >= (double)(n->gpu_mem_total[g] * min_share_milli / 1000));
            bool usable = share_ok || (n->gpu_mem_used[g] == 0 && whole_ok &&
                                       n->gpu_mem_total[g] >= min_whole_mib);
            if (!usable)
                unusable += f;
        }
    }
    return free_all > 0 ? unusable / free_all : 0;
}

/* What the per-job pass gathers: each finished job's JCT and wait (h),
 * ETA and prediction errors, and the sums the averages divide. */
struct job_sums {
    double *jct, *wait, *etae, *prede;
    double sj, sw;      /* JCT, wait */
    double se;          /* ETA error, h */
    double sp, sest;    /* prediction and estimate error, paired */
    double spa;         /* prediction error, every predicted job */
    int nwaited;        /* finished jobs that waited */
};

/* One pass over the jobs: counts them by outcome into m and gathers the
 * finished ones' times and errors into s. */
static void sum_jobs(const struct sim_trace *tr, const struct sim_result *res,
                     struct sim_metrics *m, struct job_sums *s) {
    for (int i = 0; i < res->njobs; i++) {
        const struct sim_jobres *j = &res->jobs[i];
        const struct sim_job *t = &tr->jobs[i];
        if (j->state == SIM_J_REJECTED) {
            m->nrejected++;
            continue;
        }
        if (j->state != SIM_J_DONE) {
            m->nunfinished++;
            continue;
        }
        s->jct[m->ndone] = (j->end - j->submit) / 3600.0;
        s->wait[m->ndone] = (j->start - j->submit) / 3600.0;
        s->sj += s->jct[m->ndone];
        s->sw += s->wait[m->ndone];
        m->ndone++;
        double waited_s = j->start - j->submit;
        s->nwaited += j->waited && waited_s > 0;
        if (j->waited && j->eta > 0 && waited_s > 0) {
            s->se += fabs(j->eta - j->start) / 3600.0;
            s->etae[m->eta_n++] = fabs(j->eta - j->start) / waited_s;
        }
        double actual = j->end - j->start;
        if (actual > 0 && j->pred_s > 0 && j->pred_samples > 0)
            s->prede[m->pred_hist_n++] = fabs(j->pred_s - actual) / actual;
        if (actual > 0 && j->pred_s > 0) {
            s->spa += fabs(j->pred_s - actual) / actual;
            m->pred_all_n++;
        }
        /* Paired: jobs with both, so the two errors compare. */
        if (actual > 0 && j->pred_s > 0 && t->estimate_s > 0) {
            s->sp += fabs(j->pred_s - actual) / actual;
            s->sest += fabs(t->estimate_s - actual) / actual;
            m->pred_n++;
        }
    }
}

/* The job metrics from s: averages, percentiles (s's arrays sorted in
 * place), ETA and prediction errors. */
static void job_metrics(struct sim_metrics *m, struct job_sums *s) {
    if (m->ndone > 0) {
        m->jct_avg = s->sj / m->ndone;
        m->wait_avg = s->sw / m->ndone;
        m->jct_p50 = sim_percentile(s->jct, m->ndone, 50);
        m->jct_p95 = sim_percentile(s->jct, m->ndone, 95);
        m->jct_p99 = sim_percentile(s->jct, m->ndone, 99);
        m->wait_p50 = sim_percentile(s->wait, m->ndone, 50);
        m->wait_p95 = sim_percentile(s->wait, m->ndone, 95);
        m->wait_p99 = sim_percentile(s->wait, m->ndone, 99);
    }
    m->eta_mae_h = m->eta_n ? s->se / m->eta_n : 0;
    m->eta_err_p50 = sim_percentile(s->etae, m->eta_n, 50);
    m->eta_known = s->nwaited ? (double)m->eta_n / s->nwaited : 0;
    m->pred_err_p50 = sim_percentile(s->prede, m->pred_hist_n, 50);
    m->pred_mape = m->pred_n ? s->sp / m->pred_n : 0;
    m->est_mape = m->pred_n ? s->sest / m->pred_n : 0;
    m->pred_all_mape = m->pred_all_n ? s->spa / m->pred_all_n : 0;
}

/* The run's metrics: actions, lost work, makespan, utilisation and
 * fragmentation, and Jain's index over the groups' and the users'
 * contended share / entitlement (x: room for the larger count). */
static void run_metrics(const struct sim_result *res, struct sim_metrics *m, double *x) {
    m->preemptions = (int)res->npreempt;
    m->shrinks = (int)res->nshrink;
    m->grows = (int)res->ngrow;
    m->lost_gpu_h = res->lost_gpu_s / 3600.0;
    double span = res->t_end - res->t0;
    m->makespan_h = span / 3600.0;
    m->util_avg = span > 0 && res->total_gpus > 0 ? res->busy_gpu_s / (res->total_gpus * span) : 0;
    m->frag_avg = res->frag_time_s > 0 ? res->frag_unusable_s / res->frag_time_s : 0;
    /* Jain over contended share / entitlement. */
    double tot = 0;
    for (int g = 0; g < res->ngroups; g++)
        tot += res->group_cont_s[g];
    for (int g = 0; g < res->ngroups; g++)
        x[g] = tot > 0 && res->group_ent[g] > 0 ? res->group_cont_s[g] / tot / res->group_ent[g]
                                                : 0;
    m->jain_groups = sim_jain(x, res->ngroups);
    for (int u = 0; u < res->nusers; u++)
        x[u] = tot > 0 && res->user_ent[u] > 0 ? res->user_cont_s[u] / tot / res->user_ent[u] : 0;
    m->jain_users = sim_jain(x, res->nusers);
}

/* Computes the metrics; see sim.h. */
aiq_rc sim_metrics_compute(const struct sim_trace *tr,
                           const struct sim_result *res,
                           struct sim_metrics *m, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    int n = res->njobs;
    memset(m, 0, sizeof *m);
    m->njobs = n;
    struct job_sums s;
    memset(&s, 0, sizeof s);
    s.jct = malloc((size_t)(n ? n : 1) * sizeof *s.jct);
    s.wait = malloc((size_t)(n ? n : 1) * sizeof *s.wait);
    double *x = malloc((size_t)(res->nusers + res->ngroups + 1) * sizeof *x);
    s.etae = malloc((size_t)(n ? n : 1) * sizeof *s.etae);
    s.prede = malloc((size_t)(n ? n : 1) * sizeof *s.prede);
    if (!s.jct || !s.wait || !x || !s.etae || !s.prede) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "metrics: out of memory");
        goto out_free;
    }
    sum_jobs(tr, res, m, &s);
    job_metrics(m, &s);
    run_metrics(res, m, x);
out_free:
    free(s.etae);
    free(s.prede);
    free(s.jct);
    free(s.wait);
    free(x);
    return rc;
}

struct col {
    const char *label;
    size_t off;
    bool is_int;
    const char *fmt;
};

#define D(f, l, fm) {l, offsetof(struct sim_metrics, f), false, fm}
#define I(f, l) {l, offsetof(struct sim_metrics, f), true, "%d"}
static const struct col cols[] = {
    I(njobs, "jobs"),          I(ndone, "finished"),
    I(nrejected, "rejected"),  I(nunfinished, "unfinished"),
    D(jct_avg, "jct_avg_h", "%.2f"),   D(jct_p50, "jct_p50_h", "%.2f"),
    D(jct_p95, "jct_p95_h", "%.2f"),   D(jct_p99, "jct_p99_h", "%.2f"),
    D(wait_avg, "wait_avg_h", "%.2f"), D(wait_p50, "wait_p50_h", "%.2f"),
    D(wait_p95, "wait_p95_h", "%.2f"), D(wait_p99, "wait_p99_h", "%.2f"),
    D(makespan_h, "makespan_h", "%.1f"), D(util_avg, "gpu_util", "%.3f"),
    D(jain_groups, "jain_groups", "%.3f"), D(jain_users, "jain_users", "%.3f"),
    D(frag_avg, "frag_unusable", "%.3f"), D(eta_mae_h, "eta_mae_h", "%.2f"),
    I(eta_n, "eta_jobs"),      D(eta_err_p50, "eta_err_p50", "%.3f"),
    D(eta_known, "eta_known", "%.3f"), D(pred_mape, "pred_mape", "%.3f"),
    D(est_mape, "estimate_mape", "%.3f"), I(pred_n, "pred_est_jobs"),
    D(pred_all_mape, "pred_mape_all", "%.3f"), I(pred_all_n, "pred_jobs"),
    D(pred_err_p50, "pred_err_p50", "%.3f"), I(pred_hist_n, "pred_hist_jobs"),
    I(preemptions, "preemptions"), I(shrinks, "shrinks"), I(grows, "grows"),
    D(lost_gpu_h, "lost_gpu_h", "%.1f"),
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static void cell(char *buf, size_t cap, const struct sim_metrics *m, const struct col *c) {
    const char *p = (const char *)m + c->off;
    if (c->is_int)
        snprintf(buf, cap, "%d", *(const int *)(const void *)p);
    else
        snprintf(buf, cap, c->fmt, *(const double *)(const void *)p);
}

/* Prints runs side by side; see sim.h. */
void sim_metrics_table(FILE *out, const char *const *names,
                       const struct sim_metrics *m, int n) {
    char buf[64];
    fprintf(out, "%-14s", "metric");
    for (int k = 0; k < n; k++)
        fprintf(out, " %13.13s", names[k]);
    fputc('\n', out);
    for (int c = 0; c < NCOLS; c++) {
        fprintf(out, "%-14s", cols[c].label);
        for (int k = 0; k < n; k++) {
            cell(buf, sizeof buf, &m[k], &cols[c]);
            fprintf(out, " %13s", buf);
        }
        fputc('\n', out);
    }
}

static const char *verdict(double v, int n, double goal) {
    return n == 0 ? "n/a" : v <= goal ? "met" : "not met";
}

/* Prints the goals of issue 17; see sim.h. */
void sim_goals_table(FILE *out, const char *const *names,
                     const struct sim_metrics *m, int n) {
    fprintf(out, "goals (issue 17): ETA median |ETA - start| / wait <= 20%%; runtime prediction "
                 "median |pred - actual| / actual <= 50%% where history exists\n");
    fprintf(out, "%-16s %9s %8s %9s %-8s %9s %8s %-8s\n", "policy", "eta_err", "eta_jobs",
            "eta_known", "goal", "pred_err", "jobs", "goal");
    for (int k = 0; k < n; k++)
        fprintf(out, "%-16.16s %8.1f%% %8d %8.1f%% %-8s %8.1f%% %8d %-8s\n", names[k],
                100 * m[k].eta_err_p50, m[k].eta_n, 100 * m[k].eta_known,
                verdict(m[k].eta_err_p50, m[k].eta_n, 0.20), 100 * m[k].pred_err_p50,
                m[k].pred_hist_n, verdict(m[k].pred_err_p50, m[k].pred_hist_n, 0.50));
}

/* Prints runs as CSV; see sim.h. */
void sim_metrics_csv(FILE *out, const char *const *names,
                     const struct sim_metrics *m, int n) {
    char buf[64];
    fputs("policy", out);
    for (int c = 0; c < NCOLS; c++)
        fprintf(out, ",%s", cols[c].label);
    fputc('\n', out);
    for (int k = 0; k < n; k++) {
        fputs(names[k], out);
        for (int c = 0; c < NCOLS; c++) {
            cell(buf, sizeof buf, &m[k], &cols[c]);
            fprintf(out, ",%s", buf);
        }
        fputc('\n', out);
    }
}

/* Prints shares versus entitlement; see sim.h. */
void sim_shares_table(FILE *out, const struct sim_result *res) {
    double tot = 0, cont = 0;
    for (int g = 0; g < res->ngroups; g++) {
        tot += res->group_gpu_s[g];
        cont += res->group_cont_s[g];
    }
    fprintf(out, "%-24s %12s %8s %10s %8s %8s\n", "group/user", "gpu_hours", "share",
            "contended", "entitled", "ratio");
    for (int g = 0; g < res->ngroups; g++) {
        double sh = tot > 0 ? res->group_gpu_s[g] / tot : 0;
        double cs = cont > 0 ? res->group_cont_s[g] / cont : 0;
        fprintf(out, "%-24.24s %12.1f %8.3f %10.3f %8.3f %8.2f\n", res->group_name[g],
                res->group_gpu_s[g] / 3600, sh, cs, res->group_ent[g],
                res->group_ent[g] > 0 ? cs / res->group_ent[g] : 0);
        for (int u = 0; u < res->nusers; u++) {
            if (res->user_group[u] != g)
                continue;
            double us = tot > 0 ? res->user_gpu_s[u] / tot : 0;
            double uc = cont > 0 ? res->user_cont_s[u] / cont : 0;
            fprintf(out, "  %-22.22s %12.1f %8.3f %10.3f %8.3f %8.2f\n", res->user_name[u],
                    res->user_gpu_s[u] / 3600, us, uc, res->user_ent[u],
                    res->user_ent[u] > 0 ? uc / res->user_ent[u] : 0);
        }
    }
}

/* Hourly utilisation as CSV; see sim.h. */
void sim_util_csv(FILE *out, const char *policy, const struct sim_result *res, bool header) {
    if (header)
        fputs("policy,hour,gpu_utilisation\n", out);
    for (int h = 0; h < res->nutil; h++)
        fprintf(out, "%s,%d,%.4f\n", policy, h, res->util[h]);
}
