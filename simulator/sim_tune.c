/* sim_tune.c -- aiq-sim tune's search (see sim_tune.h and
 * docs/simulator.md, "Tuning"): the objective over run metrics, the
 * constants of a policy, the split of the workload into a search part and
 * a held-out part, and a seeded random search followed by coordinate
 * descent with shrinking steps, in log scale, within a budget of
 * simulator runs. The report and the YAML are in sim_tune_out.c. */
#include "simulator/sim_tune.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the objective's metrics ------------------------------------------ */

struct metric {
    const char *name;
    size_t off;
    bool is_int;
    const char *doc;
};

#define MD(f, n, d) {n, offsetof(struct sim_metrics, f), false, d}
#define MI(f, n, d) {n, offsetof(struct sim_metrics, f), true, d}
static const struct metric metrics[] = {
    MD(jct_avg, "mean_jct", "mean job completion time of finished jobs, hours"),
    MD(jct_p50, "p50_jct", "median job completion time, hours"),
    MD(jct_p95, "p95_jct", "95th percentile job completion time, hours"),
    MD(jct_p99, "p99_jct", "99th percentile job completion time, hours"),
    MD(wait_avg, "mean_wait", "mean wait (submit to start), hours"),
    MD(wait_p50, "p50_wait", "median wait, hours"),
    MD(wait_p95, "p95_wait", "95th percentile wait, hours"),
    MD(wait_p99, "p99_wait", "99th percentile wait, hours"),
    MD(makespan_h, "makespan", "first submit to last event, hours"),
    MD(util_avg, "utilisation", "busy GPU time / (GPUs x makespan), 0..1"),
    MD(util_avg, "utilization", "the same as utilisation"),
    MD(jain_groups, "jain_groups", "Jain's index over groups' contended share / entitlement, 0..1"),
    MD(jain_users, "jain_users", "Jain's index over users, 0..1"),
    MD(frag_avg, "fragmentation", "time-weighted unusable free GPU memory fraction, 0..1"),
    MI(nunfinished, "unfinished", "jobs that never finished"),
    MI(nrejected, "rejected", "jobs the queue rejected"),
    MI(preemptions, "preemptions", "preemptions carried out"),
    MD(lost_gpu_h, "lost_gpu_hours", "GPU-hours of work preemption threw away"),
};
#define NMETRICS ((int)(sizeof metrics / sizeof metrics[0]))

const char *sim_tune_metric_name(int i) {
    return i >= 0 && i < NMETRICS ? metrics[i].name : NULL;
}

const char *sim_tune_metric_doc(int i) {
    return i >= 0 && i < NMETRICS ? metrics[i].doc : NULL;
}

/* Compiles an objective; see sim_tune.h. */
fx_prog *sim_objective_compile(const char *src, aiq_err *err) {
    const char *names[NMETRICS]; /* read only while compiling */
    for (int i = 0; i < NMETRICS; i++)
        names[i] = metrics[i].name;
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = fx_compile_names(src, FX_EXPR, names, NMETRICS, "metric", &e);
    if (!p) {
        aiq_err saved = e;
        aiq_err_field(err, e.code ? e.code : AIQ_EPARSE, "objective", "objective: %s",
                      saved.message);
        if (err) {
            err->offset = saved.offset;
            err->line = saved.line;
            err->col = saved.col;
        }
    }
    return p;
}

/* The objective for metrics m; see sim_tune.h. */
double sim_objective_eval(const fx_prog *obj, const struct sim_metrics *m) {
    double v[NMETRICS];
    for (int i = 0; i < NMETRICS; i++) {
        const char *p = (const char *)m + metrics[i].off;
        v[i] = metrics[i].is_int ? *(const int *)(const void *)p
                                 : *(const double *)(const void *)p;
    }
    return fx_eval(obj, v);
}

/* ---- the constants of a policy ---------------------------------------- */

/* One searched text: which field, its literals (fx_literals) and, per
 * literal, the parameter index (-1 = kept as written, e.g. a zero). */
struct field {
    const char *src;
    int level;               /* -1 = the formula */
    fx_literal lit[SIM_TUNE_MAX_PARAMS];
    int param[SIM_TUNE_MAX_PARAMS];
    int nlit;
};

struct space {
    struct field f[AIQ_MAX_LEVELS + 1];
    int nf;
    int starv;               /* parameter index of starvation.after, -1 */
    const char *fixed;       /* cfg->fixed */
    uint64_t fixed_used;     /* bit i: entry i of fixed matched */
};

#define MAX_FIXED 64

/* True when the constant of field `where` at line:col (0:0 for
 * starvation.after) is one --fixed keeps: the entry "where@line:col" or
 * the whole field "where". Marks the entries that match. */
static bool is_fixed(struct space *sp, const char *where, int line, int col) {
    char at[64];
    bool hit = false;
    snprintf(at, sizeof at, "%s@%d:%d", where, line, col);
    int i = 0;
    for (const char *p = sp->fixed; p && *p && i < MAX_FIXED; i++) {
        size_t len = strcspn(p, ",");
        if ((len == strlen(where) && strncmp(p, where, len) == 0) ||
            (line > 0 && len == strlen(at) && strncmp(p, at, len) == 0)) {
            hit = true;
            sp->fixed_used |= 1ull << i;
        }
        p += len + (p[len] == ',');
    }
    return hit;
}

/* AIQ_EINVAL naming the first --fixed entry that matched nothing. */
static aiq_rc check_fixed(const struct space *sp, aiq_err *err) {
    int i = 0;
    for (const char *p = sp->fixed; p && *p; i++) {
        size_t len = strcspn(p, ",");
        if (i >= MAX_FIXED)
            return aiq_err_field(err, AIQ_EINVAL, "fixed", "fixed: more than %d entries",
                                 MAX_FIXED);
        if (!(sp->fixed_used & (1ull << i)))
            return aiq_err_field(err, AIQ_EINVAL, "fixed",
                                 "fixed: '%.*s' names no nonzero constant of the policy (write "
                                 "FIELD@LINE:COL as the report prints them, or a whole field)",
                                 (int)(len < 200 ? len : 200), p);
        p += len + (p[len] == ',');
    }
    return AIQ_OK;
}

/* line:col of byte off in src. */
static void line_col(const char *src, unsigned off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (unsigned i = 0; i < off && src[i]; i++) {
        if (src[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* Adds a parameter for literal l of f; the range is x1/8..x8 of the
 * value, x1/2..x2 for an exponent. */
static aiq_rc add_param(struct space *sp, struct sim_tune_result *res, struct field *f, int k,
                        const char *where, aiq_err *err) {
    const fx_literal *l = &f->lit[k];
    int line, col;
    f->param[k] = -1;
    line_col(f->src, l->start, &line, &col);
    if (l->value == 0 || is_fixed(sp, where, line, col))
        return AIQ_OK; /* a zero has no scale to search; --fixed keeps it */
    if (res->nparams == SIM_TUNE_MAX_PARAMS)
        return aiq_err_field(err, AIQ_EINVAL, where, "%s: more than %d constants to tune",
                             where, SIM_TUNE_MAX_PARAMS);
    struct sim_tune_param *p = &res->param[res->nparams];
    snprintf(p->where, sizeof p->where, "%s", where);
    p->line = line;
    p->col = col;
    snprintf(p->text, sizeof p->text, "%.*s", (int)(l->len < 39 ? l->len : 39),
             f->src + l->start);
    p->duration = l->duration;
    p->before = p->after = l->value;
    double r = l->exponent ? 2 : 8;
    p->lo = l->value / r;
    p->hi = l->value * r;
    f->param[k] = res->nparams++;
    return AIQ_OK;
}

/* Finds the literals of one text. */
static aiq_rc scan_field(struct space *sp, struct sim_tune_result *res, const char *src,
                         int level, aiq_err *err) {
    char where[40];
    aiq_err e;
    aiq_err_clear(&e);
    if (level < 0)
        snprintf(where, sizeof where, "spec.formula");
    else
        snprintf(where, sizeof where, "spec.levels[%d].when", level);
    struct field *f = &sp->f[sp->nf];
    memset(f, 0, sizeof *f);
    f->src = src;
    f->level = level;
    int n = fx_literals(src, f->lit, SIM_TUNE_MAX_PARAMS, &e);
    if (n < 0)
        return aiq_err_field(err, e.code, where, "%s: %s", where, e.message);
    if (n > SIM_TUNE_MAX_PARAMS)
        return aiq_err_field(err, AIQ_EINVAL, where, "%s: %d numbers; at most %d can be tuned",
                             where, n, SIM_TUNE_MAX_PARAMS);
    f->nlit = n;
    sp->nf++;
    for (int k = 0; k < n; k++) {
        aiq_rc rc = add_param(sp, res, f, k, where, err);
        if (rc != AIQ_OK)
            return rc;
    }
    return AIQ_OK;
}

/* The search space of a policy: formula, the levels' whens (the last
 * level's is ignored by the queue, so it is not searched) and the
 * starvation time. */
static aiq_rc find_space(const struct aiq_policy *pol, const char *fixed, struct space *sp,
                         struct sim_tune_result *res, aiq_err *err) {
    aiq_rc rc;
    memset(sp, 0, sizeof *sp);
    sp->starv = -1;
    sp->fixed = fixed;
    if ((rc = scan_field(sp, res, pol->spec.formula ? pol->spec.formula : "job.priority", -1,
                         err)) != AIQ_OK)
        return rc;
    for (int i = 0; i + 1 < pol->spec.nlevels && i < AIQ_MAX_LEVELS; i++)
        if (pol->spec.levels[i].when &&
            (rc = scan_field(sp, res, pol->spec.levels[i].when, i, err)) != AIQ_OK)
            return rc;
    if (pol->spec.starvation_after_s > 0 && !is_fixed(sp, "spec.starvation.after", 0, 0) &&
        res->nparams < SIM_TUNE_MAX_PARAMS) {
        struct sim_tune_param *p = &res->param[res->nparams];
        snprintf(p->where, sizeof p->where, "spec.starvation.after");
        double h = pol->spec.starvation_after_s / 3600;
        snprintf(p->text, sizeof p->text, "%.6gh", h);
        p->duration = 1;
        p->before = p->after = h;
        p->lo = h / 8;
        p->hi = h * 8;
        sp->starv = res->nparams++;
    }
    if ((rc = check_fixed(sp, err)) != AIQ_OK)
        return rc;
    if (res->nparams == 0)
        return aiq_err_field(err, AIQ_EINVAL, "spec.formula",
                             "policy '%s' has no nonzero numbers in spec.formula, the levels' "
                             "when or spec.starvation.after that are not fixed: nothing to tune",
                             pol->meta.name ? pol->meta.name : "");
    return AIQ_OK;
}

/* The texts of candidate v (one value per parameter) into res's formula,
 * when[] and starvation time (replacing what they held). */
static aiq_rc apply(const struct space *sp, const double *v, struct sim_tune_result *res,
                    aiq_err *err) {
    for (int i = 0; i < sp->nf; i++) {
        const struct field *f = &sp->f[i];
        double val[SIM_TUNE_MAX_PARAMS];
        for (int k = 0; k < f->nlit; k++)
            val[k] = f->param[k] >= 0 ? v[f->param[k]] : f->lit[k].value;
        int n = fx_subst_literals(f->src, f->lit, val, f->nlit, NULL, 0);
        char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (n < 0 || !buf) {
            free(buf);
            return aiq_err_set(err, n < 0 ? AIQ_EINVAL : AIQ_ENOMEM,
                               n < 0 ? "tune: a constant left its range" : "tune: out of memory");
        }
        /* The same call as the sizing one above, which succeeded. */
        (void)fx_subst_literals(f->src, f->lit, val, f->nlit, buf, (size_t)n + 1);
        char **slot = f->level < 0 ? &res->formula : &res->when[f->level];
        free(*slot);
        *slot = buf;
    }
    if (sp->starv >= 0) /* whole minutes, so the YAML duration is exact */
        res->starvation_after_s = fmax(60, round(v[sp->starv] * 60) * 60);
    return AIQ_OK;
}

/* ---- running a candidate ----------------------------------------------- */

struct evalctx {
    const struct sim_tune_config *cfg;
    const struct space *sp;
    const fx_prog *obj;
    struct sim_tune_result *res;  /* its texts are the candidate's */
};

/* Simulates the candidate whose texts res holds on tr; fills *m. */
static aiq_rc run_texts(const struct evalctx *c, const struct sim_trace *tr,
                        struct sim_metrics *m, aiq_err *err) {
    const struct aiq_policy *o = c->cfg->policy;
    struct aiq_level lv[AIQ_MAX_LEVELS];
    struct aiq_policy p = *o;
    for (int i = 0; i < o->spec.nlevels && i < AIQ_MAX_LEVELS; i++) {
        lv[i] = o->spec.levels[i];
        if (c->res->when[i])
            lv[i].when = c->res->when[i];
    }
    p.spec.levels = lv;
    p.spec.formula = c->res->formula;
    if (c->sp->starv >= 0)
        p.spec.starvation_after_s = c->res->starvation_after_s;
    aiq_err e;
    aiq_err_clear(&e);
    oppolicy *pol = oppolicy_compile(&p, &e);
    if (!pol)
        return aiq_err_field(err, e.code, e.field, "tuned policy does not compile: %s",
                             e.message);
    struct sim_config sc;
    struct sim_result r;
    sim_config_init(&sc);
    sc.trace = tr;
    sc.nodes = c->cfg->nodes;
    sc.nnodes = c->cfg->nnodes;
    sc.policy = pol;
    sc.policy_name = o->meta.name;
    sc.epoch = c->cfg->epoch;
    sc.tick_s = c->cfg->tick_s;
    sc.predict = c->cfg->predict;
    sc.preempt_grace_s = c->cfg->preempt_grace_s;
    aiq_rc rc = sim_run(&sc, &r, err);
    if (rc == AIQ_OK)
        rc = sim_metrics_compute(tr, &r, m, err);
    sim_result_deinit(&r);
    oppolicy_free(pol);
    return rc;
}

/* Runs candidate v on tr: *obj gets the objective, or +inf when the
 * candidate finishes fewer jobs than min_done (a policy that leaves jobs
 * behind must not win on the ones it finished). */
static aiq_rc run_candidate(const struct evalctx *c, const double *v, const struct sim_trace *tr,
                            int min_done, double *obj, struct sim_metrics *m, aiq_err *err) {
    aiq_rc rc = apply(c->sp, v, c->res, err);
    if (rc == AIQ_OK)
        rc = run_texts(c, tr, m, err);
    if (rc != AIQ_OK)
        return rc;
    *obj = m->ndone < min_done ? INFINITY : sim_objective_eval(c->obj, m);
    c->res->runs++;
    if (c->cfg->progress)
        c->cfg->progress(c->cfg->progress_ctx, fmin(1, (double)c->res->runs / c->cfg->budget));
    return AIQ_OK;
}

/* ---- the search --------------------------------------------------------- */

/* splitmix64: the seeded random numbers of the search. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) {
    return (double)(next_u64(s) >> 11) / 9007199254740992.0;
}

/* Value of parameter p at log-offset x from its start (clamped). */
static double at(const struct sim_tune_param *p, double x) {
    double v = p->before * exp(x);
    return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
}

/* A candidate is better when its objective is lower by more than a
 * rounding error. */
static bool better(double a, double b) {
    return a < b - 1e-12 * fmax(1, fabs(b));
}

struct search {
    const struct evalctx *c;
    const struct sim_trace *tr;
    int min_done;
    double best_obj;
    double best_x[SIM_TUNE_MAX_PARAMS];   /* log-offsets of the best */
};

/* Runs the candidate at log-offsets x; keeps it when better. */
static aiq_rc try_x(struct search *s, const double *x, bool *improved, aiq_err *err) {
    double v[SIM_TUNE_MAX_PARAMS], obj;
    struct sim_metrics m;
    int n = s->c->res->nparams;
    for (int i = 0; i < n; i++)
        v[i] = at(&s->c->res->param[i], x[i]);
    aiq_rc rc = run_candidate(s->c, v, s->tr, s->min_done, &obj, &m, err);
    *improved = rc == AIQ_OK && better(obj, s->best_obj);
    if (*improved) {
        s->best_obj = obj;
        memcpy(s->best_x, x, (size_t)n * sizeof *x);
    }
    return rc;
}

/* Random phase: a third of the budget, each constant drawn log-uniformly
 * in its range. */
static aiq_rc random_phase(struct search *s, uint64_t *rng, int runs, aiq_err *err) {
    const struct sim_tune_result *res = s->c->res;
    double x[SIM_TUNE_MAX_PARAMS];
    for (int k = 0; k < runs; k++) {
        for (int i = 0; i < res->nparams; i++) {
            double lo = log(res->param[i].lo / res->param[i].before);
            double hi = log(res->param[i].hi / res->param[i].before);
            x[i] = lo + (hi - lo) * uniform(rng);
        }
        bool imp;
        aiq_rc rc = try_x(s, x, &imp, err);
        if (rc != AIQ_OK)
            return rc;
    }
    return AIQ_OK;
}

/* Coordinate descent from the best: each constant in turn up and down by
 * the step (log scale, starting at ln 2); after a sweep without a gain
 * the step halves; ends with the budget or below a step of ln(2)/64. */
static aiq_rc descent_phase(struct search *s, int budget, aiq_err *err) {
    const struct sim_tune_result *res = s->c->res;
    double step = log(2);
    while (s->c->res->runs < budget && step > log(2) / 64) {
        bool gained = false;
        for (int i = 0; i < res->nparams && s->c->res->runs < budget; i++) {
            for (int dir = 1; dir >= -1 && s->c->res->runs < budget; dir -= 2) {
                double x[SIM_TUNE_MAX_PARAMS];
                memcpy(x, s->best_x, sizeof x);
                double lo = log(res->param[i].lo / res->param[i].before);
                double hi = log(res->param[i].hi / res->param[i].before);
                x[i] = fmin(hi, fmax(lo, x[i] + dir * step));
                if (x[i] == s->best_x[i])
                    continue;
                bool imp;
                aiq_rc rc = try_x(s, x, &imp, err);
                if (rc != AIQ_OK)
                    return rc;
                if (imp) {
                    gained = true;
                    break;
                }
            }
        }
        if (!gained)
            step /= 2;
    }
    return AIQ_OK;
}

/* ---- split and validation ---------------------------------------------- */

/* Jobs [from, to) of src into a new trace *out. */
static aiq_rc part(const struct sim_trace *src, int from, int to, struct sim_trace **out,
                   aiq_err *err) {
    struct sim_trace *t = sim_trace_create();
    if (!t)
        return aiq_err_set(err, AIQ_ENOMEM, "tune: out of memory");
    for (int i = from; i < to; i++) {
        aiq_rc rc = sim_trace_add_job(t, &src->jobs[i], err);
        if (rc != AIQ_OK) {
            sim_trace_free(t);
            return rc;
        }
    }
    *out = t;
    return AIQ_OK;
}

void sim_tune_config_init(struct sim_tune_config *cfg) {
    struct sim_config sc;
    sim_config_init(&sc);
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->budget = 60;
    cfg->holdout = 0.3;
    cfg->epoch = sc.epoch;
    cfg->tick_s = sc.tick_s;
    cfg->predict = sc.predict;
    cfg->preempt_grace_s = sc.preempt_grace_s;
}

void sim_tune_result_deinit(struct sim_tune_result *res) {
    if (!res)
        return;
    free(res->formula);
    for (int i = 0; i < AIQ_MAX_LEVELS; i++)
        free(res->when[i]);
    memset(res, 0, sizeof *res);
}

static aiq_rc check_config(const struct sim_tune_config *cfg, aiq_err *err) {
    if (cfg->budget < 2 || cfg->budget > 100000)
        return aiq_err_field(err, AIQ_EINVAL, "budget", "budget: need 2..100000 runs, got %d",
                             cfg->budget);
    if (!(cfg->holdout >= 0.05 && cfg->holdout <= 0.9))
        return aiq_err_field(err, AIQ_EINVAL, "holdout", "holdout: need 0.05..0.9, got %g",
                             cfg->holdout);
    if (!cfg->trace || !cfg->policy)
        return aiq_err_set(err, AIQ_EINVAL, "tune: no workload or no policy");
    int n = cfg->trace->njobs, nh = (int)ceil(n * cfg->holdout);
    if (n - nh < 10 || nh < 10)
        return aiq_err_field(err, AIQ_EINVAL, "trace",
                             "trace: %d jobs split %d/%d; each part needs at least 10", n,
                             n - nh, nh);
    return AIQ_OK;
}

/* The search on the first part, then baseline and best on the second. */
static aiq_rc search_and_validate(struct evalctx *c, const struct sim_trace *train,
                                  const struct sim_trace *hold, aiq_err *err) {
    struct sim_tune_result *res = c->res;
    struct search s = {.c = c, .tr = train};
    double v[SIM_TUNE_MAX_PARAMS];
    struct sim_metrics m;
    for (int i = 0; i < res->nparams; i++)
        v[i] = res->param[i].before;
    aiq_rc rc = run_candidate(c, v, train, 0, &res->train_before, &m, err);
    if (rc != AIQ_OK)
        return rc;
    s.min_done = m.ndone;
    s.best_obj = res->train_before;
    uint64_t rng = c->cfg->seed;
    int nrand = (c->cfg->budget - 1) / 3;
    if ((rc = random_phase(&s, &rng, nrand, err)) != AIQ_OK ||
        (rc = descent_phase(&s, c->cfg->budget, err)) != AIQ_OK)
        return rc;
    res->train_after = s.best_obj;
    for (int i = 0; i < res->nparams; i++)
        res->param[i].after = at(&res->param[i], s.best_x[i]);
    /* Validation: the held-out part under the policy as given and as tuned. */
    for (int i = 0; i < res->nparams; i++)
        v[i] = res->param[i].before;
    if ((rc = apply(c->sp, v, res, err)) != AIQ_OK ||
        (rc = run_texts(c, hold, &res->mbefore, err)) != AIQ_OK)
        return rc;
    res->hold_before = sim_objective_eval(c->obj, &res->mbefore);
    for (int i = 0; i < res->nparams; i++)
        v[i] = res->param[i].after;
    if ((rc = apply(c->sp, v, res, err)) != AIQ_OK ||
        (rc = run_texts(c, hold, &res->mafter, err)) != AIQ_OK)
        return rc;
    if (c->sp->starv >= 0) /* as written: whole minutes */
        res->param[c->sp->starv].after = res->starvation_after_s / 3600;
    res->hold_after = res->mafter.ndone < res->mbefore.ndone
                          ? INFINITY
                          : sim_objective_eval(c->obj, &res->mafter);
    return AIQ_OK;
}

/* The search and its validation; see sim_tune.h. */
aiq_rc sim_tune(const struct sim_tune_config *cfg, struct sim_tune_result *res, aiq_err *err) {
    aiq_rc rc;
    struct space *sp = NULL;
    struct sim_trace *train = NULL, *hold = NULL;
    fx_prog *obj = NULL;
    memset(res, 0, sizeof *res);
    if ((rc = check_config(cfg, err)) != AIQ_OK)
        return rc;
    if (!(obj = sim_objective_compile(cfg->objective ? cfg->objective : "", err)))
        return err && err->code ? err->code : AIQ_EPARSE;
    if (!(sp = malloc(sizeof *sp))) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "tune: out of memory");
        goto out;
    }
    if ((rc = find_space(cfg->policy, cfg->fixed, sp, res, err)) != AIQ_OK)
        goto out;
    int n = cfg->trace->njobs, nh = (int)ceil(n * cfg->holdout);
    if ((rc = part(cfg->trace, 0, n - nh, &train, err)) != AIQ_OK ||
        (rc = part(cfg->trace, n - nh, n, &hold, err)) != AIQ_OK)
        goto out;
    res->train_jobs = n - nh;
    res->hold_jobs = nh;
    res->split_t = cfg->trace->jobs[n - nh].submit;
    struct evalctx c = {cfg, sp, obj, res};
    rc = search_and_validate(&c, train, hold, err);
out:
    sim_trace_free(train);
    sim_trace_free(hold);
    free(sp);
    fx_free(obj);
    return rc;
}
