/* sim_html.c -- aiq-sim's HTML report: what each run contributes (JCT
 * CDF, utilisation and jobs-waiting series binned to at most
 * SIM_HTML_MAX_POINTS points, mean and p95 wait per group and per user,
 * the metrics), inflation curves, and the page itself: a summary table
 * and one inline SVG chart per section (sim_svg.c). See sim_html.h;
 * docs/simulator.md describes each chart. */
#include "simulator/sim_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "simulator/sim_svg.h"

struct hrun {
    char *name;
    double *cdf_x, *cdf_y;   /* JCT hours, fraction of finished jobs */
    int ncdf;
    double *ut_x, *ut_y;     /* hours since the first submission, % busy */
    int nut;
    double *q_x, *q_y;       /* hours, jobs waiting (bin maximum) */
    int nq;
    double *gmean, *gp95;    /* per group, hours; NAN = none started */
    double *umean, *up95;    /* per user */
    struct sim_metrics m;
};

struct hinfl {
    char *name;
    double x[SIM_INFLATE_MAX_POINTS], y[SIM_INFLATE_MAX_POINTS];
    int n;
};

struct sim_html {
    char *title, *note;
    int njobs, ng, nu;       /* from the first run */
    char **gname, **uname;   /* uname: "group/user" */
    struct hrun run[SIM_HTML_MAX_RUNS];
    int nrun;
    struct hinfl infl[SIM_HTML_MAX_RUNS];
    int ninfl;
};

static char *dup_str(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

struct sim_html *sim_html_create(const char *title) {
    struct sim_html *h = calloc(1, sizeof *h);
    if (h && !(h->title = dup_str(title))) {
        free(h);
        h = NULL;
    }
    return h;
}

static void hrun_deinit(struct hrun *r) {
    free(r->name);
    free(r->cdf_x);
    free(r->cdf_y);
    free(r->ut_x);
    free(r->ut_y);
    free(r->q_x);
    free(r->q_y);
    free(r->gmean);
    free(r->gp95);
    free(r->umean);
    free(r->up95);
    memset(r, 0, sizeof *r);
}

static void free_names(char **v, int n) {
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void sim_html_free(struct sim_html *h) {
    if (!h)
        return;
    for (int k = 0; k < h->nrun; k++)
        hrun_deinit(&h->run[k]);
    for (int k = 0; k < h->ninfl; k++)
        free(h->infl[k].name);
    free_names(h->gname, h->ng);
    free_names(h->uname, h->nu);
    free(h->title);
    free(h->note);
    free(h);
}

aiq_rc sim_html_set_note(struct sim_html *h, const char *note, aiq_err *err) {
    char *n = dup_str(note);
    if (!n)
        return aiq_err_set(err, AIQ_ENOMEM, "report: out of memory");
    free(h->note);
    h->note = n;
    return AIQ_OK;
}

/* ---- what a run contributes -------------------------------------------- */

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The JCT CDF: finished jobs' completion times (hours) sorted, as at
 * most SIM_HTML_MAX_POINTS evenly spaced ranks (a first point at 0). */
static int jct_cdf(const struct sim_result *res, struct hrun *r) {
    int n = 0;
    double *v = malloc(sizeof *v * (size_t)(res->njobs > 0 ? res->njobs : 1));
    if (!v)
        return -1;
    for (int i = 0; i < res->njobs; i++)
        if (res->jobs[i].state == SIM_J_DONE)
            v[n++] = (res->jobs[i].end - res->jobs[i].submit) / 3600;
    qsort(v, (size_t)n, sizeof *v, dcmp);
    int np = n <= SIM_HTML_MAX_POINTS ? n : SIM_HTML_MAX_POINTS;
    r->cdf_x = malloc(sizeof(double) * (size_t)(np + 1));
    r->cdf_y = malloc(sizeof(double) * (size_t)(np + 1));
    if (!r->cdf_x || !r->cdf_y) {
        free(v);
        return -1;
    }
    if (n > 0) {
        r->cdf_x[0] = v[0];
        r->cdf_y[0] = 0;
        for (int j = 0; j < np; j++) {
            int i = (int)ceil((double)(j + 1) * n / np) - 1;
            r->cdf_x[j + 1] = v[i];
            r->cdf_y[j + 1] = (double)(i + 1) / n;
        }
        r->ncdf = np + 1;
    }
    free(v);
    return 0;
}

/* Hourly utilisation as %, binned by mean, with a closing point at the
 * end of the last bin so the last step shows. */
static int util_series(const struct sim_result *res, struct hrun *r) {
    int n = res->nutil, b = (n + SIM_HTML_MAX_POINTS - 1) / SIM_HTML_MAX_POINTS;
    int nb = b > 0 ? (n + b - 1) / b : 0;
    r->ut_x = malloc(sizeof(double) * (size_t)(nb + 1));
    r->ut_y = malloc(sizeof(double) * (size_t)(nb + 1));
    if (!r->ut_x || !r->ut_y)
        return -1;
    for (int k = 0; k < nb; k++) {
        double s = 0;
        int c = 0;
        for (int h = k * b; h < n && h < (k + 1) * b; h++, c++)
            s += res->util[h];
        r->ut_x[k] = (double)k * b;
        r->ut_y[k] = s / c * 100;
    }
    if (nb > 0) {
        r->ut_x[nb] = n;
        r->ut_y[nb] = r->ut_y[nb - 1];
        r->nut = nb + 1;
    }
    return 0;
}

struct ev {
    double t;
    int d;                   /* +1 submitted, -1 started */
};

static int evcmp(const void *a, const void *b) {
    const struct ev *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : x->d - y->d;
}

/* Jobs waiting (submitted, not yet started the first time; a job that
 * never started waits to the end; rejected jobs not at all) over time:
 * the maximum in each of up to SIM_HTML_MAX_POINTS bins. */
static int queue_series(const struct sim_result *res, struct hrun *r) {
    struct ev *e = malloc(sizeof *e * (size_t)(2 * res->njobs + 1));
    r->q_x = malloc(sizeof(double) * (SIM_HTML_MAX_POINTS + 1));
    r->q_y = malloc(sizeof(double) * (SIM_HTML_MAX_POINTS + 1));
    if (!e || !r->q_x || !r->q_y) {
        free(e);
        return -1;
    }
    int ne = 0;
    for (int i = 0; i < res->njobs; i++) {
        const struct sim_jobres *j = &res->jobs[i];
        if (j->state == SIM_J_REJECTED)
            continue;
        e[ne++] = (struct ev){j->submit, +1};
        e[ne++] = (struct ev){j->start > 0 ? j->start : res->t_end, -1};
    }
    qsort(e, (size_t)ne, sizeof *e, evcmp);
    double span = res->t_end - res->t0;
    int nb = span > 0 ? SIM_HTML_MAX_POINTS : 1, cur = 0, ei = 0;
    for (int b = 0; b < nb; b++) {
        double end = res->t0 + span * (b + 1) / nb;
        int mx = cur;
        while (ei < ne && (b == nb - 1 || e[ei].t < end)) {
            double t = e[ei].t;
            for (; ei < ne && e[ei].t == t; ei++)
                cur += e[ei].d;
            mx = cur > mx ? cur : mx;
        }
        r->q_x[b] = span / 3600 * b / nb;
        r->q_y[b] = mx;
    }
    r->q_x[nb] = span / 3600;
    r->q_y[nb] = cur;
    r->nq = nb + 1;
    free(e);
    return 0;
}

/* Mean and nearest-rank p95 wait (hours) per category of the jobs that
 * started; cat[i] is job i's category (-1 = none). NAN where no job of
 * the category started. */
static int wait_stats(const struct sim_result *res, const int *cat, int ncat, double *mean,
                      double *p95) {
    int *cnt = calloc((size_t)ncat + 1, sizeof *cnt);
    double *v = malloc(sizeof *v * (size_t)(res->njobs + 1));
    if (!cnt || !v) {
        free(cnt);
        free(v);
        return -1;
    }
    for (int i = 0; i < res->njobs; i++)
        if (res->jobs[i].start > 0 && cat[i] >= 0)
            cnt[cat[i] + 1]++;
    for (int c = 0; c < ncat; c++)
        cnt[c + 1] += cnt[c];           /* cnt[c] = where category c starts */
    int *pos = calloc((size_t)ncat + 1, sizeof *pos);
    if (!pos) {
        free(cnt);
        free(v);
        return -1;
    }
    memcpy(pos, cnt, sizeof *pos * (size_t)ncat);
    for (int i = 0; i < res->njobs; i++)
        if (res->jobs[i].start > 0 && cat[i] >= 0)
            v[pos[cat[i]]++] = (res->jobs[i].start - res->jobs[i].submit) / 3600;
    for (int c = 0; c < ncat; c++) {
        int n = cnt[c + 1] - cnt[c];
        double s = 0;
        for (int i = cnt[c]; i < cnt[c + 1]; i++)
            s += v[i];
        mean[c] = n > 0 ? s / n : NAN;
        p95[c] = n > 0 ? sim_percentile(v + cnt[c], n, 95) : NAN;
    }
    free(pos);
    free(cnt);
    free(v);
    return 0;
}

/* ---- groups and users -------------------------------------------------- */

struct key {
    const char *name;
    int group;               /* a user's group index; 0 for groups */
    int idx;
};

static int keycmp(const void *a, const void *b) {
    const struct key *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* idx of (name, group) in the sorted keys, or -1. */
static int key_find(const struct key *k, int n, const char *name, int group) {
    struct key q = {name ? name : "default", group, 0};
    const struct key *f = bsearch(&q, k, (size_t)n, sizeof *k, keycmp);
    return f ? f->idx : -1;
}

/* Each job's group and user index in res's numbering, from the names;
 * -1 when res does not know them. */
static int job_cats(const struct sim_trace *tr, const struct sim_result *res, int *jg, int *ju) {
    struct key *g = malloc(sizeof *g * (size_t)(res->ngroups + 1));
    struct key *u = malloc(sizeof *u * (size_t)(res->nusers + 1));
    if (!g || !u) {
        free(g);
        free(u);
        return -1;
    }
    for (int i = 0; i < res->ngroups; i++)
        g[i] = (struct key){res->group_name[i], 0, i};
    for (int i = 0; i < res->nusers; i++)
        u[i] = (struct key){res->user_name[i], res->user_group[i], i};
    qsort(g, (size_t)res->ngroups, sizeof *g, keycmp);
    qsort(u, (size_t)res->nusers, sizeof *u, keycmp);
    for (int i = 0; i < tr->njobs; i++) {
        jg[i] = key_find(g, res->ngroups, tr->jobs[i].group, 0);
        ju[i] = jg[i] < 0 ? -1 : key_find(u, res->nusers, tr->jobs[i].user, jg[i]);
    }
    free(g);
    free(u);
    return 0;
}

/* The first run's group names and "group/user" labels. */
static int copy_names(struct sim_html *h, const struct sim_result *res) {
    h->gname = calloc((size_t)res->ngroups + 1, sizeof *h->gname);
    h->uname = calloc((size_t)res->nusers + 1, sizeof *h->uname);
    if (!h->gname || !h->uname)
        return -1;
    h->ng = res->ngroups;
    h->nu = res->nusers;
    for (int i = 0; i < h->ng; i++)
        if (!(h->gname[i] = dup_str(res->group_name[i])))
            return -1;
    for (int i = 0; i < h->nu; i++) {
        const char *g = res->group_name[res->user_group[i]], *n = res->user_name[i];
        size_t len = strlen(g) + strlen(n) + 2;
        if (!(h->uname[i] = malloc(len)))
            return -1;
        snprintf(h->uname[i], len, "%s/%s", g, n);
    }
    return 0;
}

/* The per-group and per-user waits of one run. */
static int run_waits(const struct sim_html *h, const struct sim_trace *tr,
                     const struct sim_result *res, struct hrun *r) {
    int *jg = malloc(sizeof *jg * (size_t)(tr->njobs + 1));
    int *ju = malloc(sizeof *ju * (size_t)(tr->njobs + 1));
    r->gmean = malloc(sizeof(double) * (size_t)(h->ng + 1));
    r->gp95 = malloc(sizeof(double) * (size_t)(h->ng + 1));
    r->umean = malloc(sizeof(double) * (size_t)(h->nu + 1));
    r->up95 = malloc(sizeof(double) * (size_t)(h->nu + 1));
    int bad = !jg || !ju || !r->gmean || !r->gp95 || !r->umean || !r->up95 ||
              job_cats(tr, res, jg, ju) != 0 ||
              wait_stats(res, jg, h->ng, r->gmean, r->gp95) != 0 ||
              wait_stats(res, ju, h->nu, r->umean, r->up95) != 0;
    free(jg);
    free(ju);
    return bad ? -1 : 0;
}

aiq_rc sim_html_add_run(struct sim_html *h, const char *policy, const struct sim_trace *tr,
                        const struct sim_result *res, const struct sim_metrics *m,
                        aiq_err *err) {
    if (h->nrun == SIM_HTML_MAX_RUNS)
        return aiq_err_set(err, AIQ_ETOOBIG, "report: at most %d runs", SIM_HTML_MAX_RUNS);
    if (tr->njobs != res->njobs || (h->nrun > 0 && (res->njobs != h->njobs ||
                                                     res->ngroups != h->ng ||
                                                     res->nusers != h->nu)))
        return aiq_err_set(err, AIQ_EINVAL, "report: run '%s' has %d jobs, %d groups, %d users; "
                           "the report's trace has %d jobs, %d groups, %d users (one trace "
                           "per report)", policy ? policy : "", res->njobs, res->ngroups,
                           res->nusers, h->nrun > 0 ? h->njobs : tr->njobs,
                           h->nrun > 0 ? h->ng : res->ngroups, h->nrun > 0 ? h->nu : res->nusers);
    bool first = h->nrun == 0;
    struct hrun *r = &h->run[h->nrun];
    memset(r, 0, sizeof *r);
    r->m = *m;
    if ((first && copy_names(h, res) != 0) || !(r->name = dup_str(policy)) ||
        jct_cdf(res, r) != 0 || util_series(res, r) != 0 || queue_series(res, r) != 0 ||
        run_waits(h, tr, res, r) != 0) {
        hrun_deinit(r);
        if (first) {
            free_names(h->gname, h->ng);
            free_names(h->uname, h->nu);
            h->gname = h->uname = NULL;
            h->ng = h->nu = 0;
        }
        return aiq_err_set(err, AIQ_ENOMEM, "report: out of memory");
    }
    h->njobs = res->njobs;
    h->nrun++;
    return AIQ_OK;
}

aiq_rc sim_html_add_inflate(struct sim_html *h, const char *placement, const double *arrived_pct,
                            const double *unalloc_pct, int n, aiq_err *err) {
    if (h->ninfl == SIM_HTML_MAX_RUNS || n < 0 || n > SIM_INFLATE_MAX_POINTS)
        return aiq_err_set(err, AIQ_ETOOBIG, "report: at most %d curves of %d points",
                           SIM_HTML_MAX_RUNS, SIM_INFLATE_MAX_POINTS);
    struct hinfl *c = &h->infl[h->ninfl];
    if (!(c->name = dup_str(placement)))
        return aiq_err_set(err, AIQ_ENOMEM, "report: out of memory");
    for (int i = 0; i < n; i++) {
        c->x[i] = arrived_pct[i];
        c->y[i] = unalloc_pct[i];
    }
    c->n = n;
    h->ninfl++;
    return AIQ_OK;
}

/* ---- the page ---------------------------------------------------------- */

static const char style[] =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}"
    "table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "th:first-child,td:first-child{text-align:left}"
    "svg.chart{display:block;margin:8px 0}"
    "svg .title{font-size:15px;font-weight:bold}svg .axis-label{font-size:12px}"
    "p.caption{font-size:13px;color:#444;max-width:780px}";

static void head(FILE *out, const struct sim_html *h) {
    /* Also well-formed XML (XHTML): void elements self-closed, the XHTML
     * namespace; test/e2e/sim_report.sh has Chromium parse it as XML. */
    fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n"
          "<head>\n<meta charset=\"utf-8\"/>\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\"/>\n<title>", out);
    sim_svg_escape(out, h->title, 0);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
    sim_svg_escape(out, h->title, 0);
    fputs("</h1>\n", out);
    if (h->note) {
        fputs("<p class=\"note\">", out);
        sim_svg_escape(out, h->note, 0);
        fputs("</p>\n", out);
    }
}

static void caption(FILE *out, const char *text) {
    fprintf(out, "<p class=\"caption\">%s</p>\n", text);
}

/* The metrics of each run side by side (docs/simulator.md, "Metrics"). */
static void summary(FILE *out, const struct sim_html *h) {
    fputs("<h2 id=\"summary\">Summary</h2>\n<table class=\"summary\">\n<tr><th>policy</th>"
          "<th>jobs done</th><th>rejected</th><th>JCT mean (h)</th><th>JCT p95 (h)</th>"
          "<th>wait mean (h)</th><th>wait p95 (h)</th><th>GPU utilisation (%)</th>"
          "<th>Jain (groups)</th><th>makespan (h)</th></tr>\n", out);
    for (int k = 0; k < h->nrun; k++) {
        const struct sim_metrics *m = &h->run[k].m;
        fputs("<tr><td>", out);
        sim_svg_escape(out, h->run[k].name, 0);
        fprintf(out, "</td><td>%d of %d</td><td>%d</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                "<td>%.2f</td><td>%.1f</td><td>%.3f</td><td>%.1f</td></tr>\n", m->ndone,
                m->njobs, m->nrejected, m->jct_avg, m->jct_p95, m->wait_avg, m->wait_p95,
                m->util_avg * 100, m->jain_groups, m->makespan_h);
    }
    fputs("</table>\n", out);
}

/* One line chart over the runs, the series picked by which (0 JCT CDF,
 * 1 utilisation, 2 jobs waiting). */
static void run_lines(FILE *out, const struct sim_html *h, const struct sim_svg_chart *c,
                      int which) {
    struct sim_svg_series s[SIM_HTML_MAX_RUNS];
    for (int k = 0; k < h->nrun; k++) {
        const struct hrun *r = &h->run[k];
        s[k].name = r->name;
        s[k].x = which == 0 ? r->cdf_x : which == 1 ? r->ut_x : r->q_x;
        s[k].y = which == 0 ? r->cdf_y : which == 1 ? r->ut_y : r->q_y;
        s[k].n = which == 0 ? r->ncdf : which == 1 ? r->nut : r->nq;
    }
    sim_svg_lines(out, c, s, h->nrun);
}

struct pick {
    double key;
    int idx;
};

static int pickcmp(const void *a, const void *b) {
    const struct pick *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->idx - y->idx;
}

/* Wait bars for groups (users = false) or users: all of them, or the
 * SIM_HTML_MAX_BARS with the longest mean wait under any policy. */
static void wait_bars(FILE *out, const struct sim_html *h, bool users) {
    int n = users ? h->nu : h->ng, nsel = n < SIM_HTML_MAX_BARS ? n : SIM_HTML_MAX_BARS;
    struct pick p[SIM_HTML_MAX_BARS];
    int np = 0;
    for (int i = 0; i < n; i++) {
        double key = -1;
        for (int k = 0; k < h->nrun; k++) {
            double v = users ? h->run[k].umean[i] : h->run[k].gmean[i];
            key = isfinite(v) && v > key ? v : key;
        }
        /* keep the nsel largest: p holds them sorted, largest first */
        if (np == nsel && pickcmp(&(struct pick){key, i}, &p[np - 1]) > 0)
            continue;
        p[np < nsel ? np++ : np - 1] = (struct pick){key, i};
        qsort(p, (size_t)np, sizeof *p, pickcmp);
    }
    if (n > np)
        fprintf(out, "<p class=\"caption\">The %d of %d %s with the longest mean wait under "
                "any policy.</p>\n", np, n, users ? "users" : "groups");
    const char *cats[SIM_HTML_MAX_BARS];
    double val[SIM_HTML_MAX_RUNS][SIM_HTML_MAX_BARS], wh[SIM_HTML_MAX_RUNS][SIM_HTML_MAX_BARS];
    struct sim_svg_bars b[SIM_HTML_MAX_RUNS];
    for (int i = 0; i < np; i++)
        cats[i] = users ? h->uname[p[i].idx] : h->gname[p[i].idx];
    for (int k = 0; k < h->nrun; k++) {
        for (int i = 0; i < np; i++) {
            val[k][i] = users ? h->run[k].umean[p[i].idx] : h->run[k].gmean[p[i].idx];
            wh[k][i] = users ? h->run[k].up95[p[i].idx] : h->run[k].gp95[p[i].idx];
        }
        b[k] = (struct sim_svg_bars){h->run[k].name, val[k], wh[k]};
    }
    struct sim_svg_chart c = {.id = users ? "wait-users" : "wait-groups",
                              .title = users ? "Wait by user" : "Wait by group",
                              .ylabel = "wait (hours)",
                              .y_from_zero = true};
    sim_svg_bar_chart(out, &c, cats, np, b, h->nrun, "p95");
}

static void runs_section(FILE *out, const struct sim_html *h) {
    summary(out, h);
    fputs("<h2 id=\"jct\">Job completion time</h2>\n", out);
    caption(out, "Fraction of finished jobs that completed (submission to end) within x hours; "
            "a curve further up and left is better.");
    run_lines(out, h, &(struct sim_svg_chart){.id = "jct-cdf", .title = "JCT CDF per policy",
              .xlabel = "job completion time (hours)", .ylabel = "fraction of finished jobs",
              .x_from_zero = true, .y_from_zero = true, .y_max = 1, .steps = true}, 0);
    fputs("<h2 id=\"util\">GPU utilisation</h2>\n", out);
    caption(out, "GPUs held by running jobs as a percentage of the cluster's GPUs, hour by hour "
            "(mean per bin on long runs).");
    run_lines(out, h, &(struct sim_svg_chart){.id = "gpu-util", .title = "GPU utilisation over "
              "time", .xlabel = "time since the first submission (hours)", .ylabel =
              "GPUs in use (%)", .x_from_zero = true, .y_from_zero = true, .y_max = 100,
              .steps = true}, 1);
    fputs("<h2 id=\"queue\">Queue length</h2>\n", out);
    caption(out, "Jobs submitted and not yet started (the largest number in each time bin); "
            "a job that never started waits to the end, rejected jobs are not counted.");
    run_lines(out, h, &(struct sim_svg_chart){.id = "queue-len", .title = "Jobs waiting over "
              "time", .xlabel = "time since the first submission (hours)", .ylabel =
              "jobs waiting", .x_from_zero = true, .y_from_zero = true, .steps = true}, 2);
    fputs("<h2 id=\"wait\">Wait by group and user</h2>\n", out);
    caption(out, "Wait from submission to first start of the jobs that started: the bar is the "
            "mean, the whisker the 95th percentile (nearest rank).");
    wait_bars(out, h, false);
    wait_bars(out, h, true);
}

/* The curves' values as a table: one row per step (labelled with the
 * first curve's x there), one column per placement, "-" where a curve
 * has no value. */
static void inflate_table(FILE *out, const struct sim_html *h) {
    int rows = 0;
    fputs("<table class=\"inflate\">\n<tr><th>arrived (%)</th>", out);
    for (int k = 0; k < h->ninfl; k++) {
        fputs("<th>", out);
        sim_svg_escape(out, h->infl[k].name, 0);
        fputs(" (% unallocated)</th>", out);
        rows = h->infl[k].n > rows ? h->infl[k].n : rows;
    }
    fputs("</tr>\n", out);
    for (int i = 0; i < rows; i++) {
        double x = NAN;
        for (int k = 0; k < h->ninfl && !isfinite(x); k++)
            if (i < h->infl[k].n)
                x = h->infl[k].x[i];
        if (isfinite(x))
            fprintf(out, "<tr><td>%.0f</td>", x);
        else
            fputs("<tr><td>-</td>", out);
        for (int k = 0; k < h->ninfl; k++) {
            const struct hinfl *c = &h->infl[k];
            if (i < c->n && isfinite(c->y[i]))
                fprintf(out, "<td>%.2f</td>", c->y[i]);
            else
                fputs("<td>-</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void inflate_section(FILE *out, const struct sim_html *h) {
    struct sim_svg_series s[SIM_HTML_MAX_RUNS];
    fputs("<h2 id=\"inflate\">Unallocated GPUs (inflation protocol)</h2>\n", out);
    caption(out, "Tasks arrive and never leave; a task that fits nowhere is dropped. The share "
            "of the cluster's GPU capacity left unallocated as the GPU demand arrived grows; "
            "lower is better.");
    for (int k = 0; k < h->ninfl; k++)
        s[k] = (struct sim_svg_series){h->infl[k].name, h->infl[k].x, h->infl[k].y,
                                       h->infl[k].n};
    sim_svg_lines(out, &(struct sim_svg_chart){.id = "unalloc", .title = "Unallocated GPU % "
                  "per placement", .xlabel = "GPU demand arrived (% of the cluster's GPUs)",
                  .ylabel = "GPUs unallocated (%)", .y_from_zero = true, .markers = true,
                  .yfmt = "%.2f%%"}, s, h->ninfl);
    inflate_table(out, h);
}

void sim_html_write(FILE *out, const struct sim_html *h) {
    head(out, h);
    if (h->nrun > 0)
        runs_section(out, h);
    if (h->ninfl > 0)
        inflate_section(out, h);
    if (h->nrun == 0 && h->ninfl == 0)
        fputs("<p>no data</p>\n", out);
    fputs("</body>\n</html>\n", out);
}
