/* test_sim_tune.c -- aiq-sim tune's parts: the numeric literals of a
 * formula (positions, signs, exponents, durations) and their substitution,
 * the objective language over run metrics (values and errors naming the
 * bad token), and the search on a small generated trace: the same seed
 * gives the same result, the objective does not get worse on the search
 * part, and the YAML reads back as the same policy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "operator/manifest.h"
#include "policy/fx.h"
#include "simulator/sim_tune.h"
#include "test/unit/th.h"

/* Substitutes values into src and returns a static copy. */
static const char *subst(const char *src, const double *v, int n) {
    static char buf[512];
    fx_literal l[16];
    aiq_err e;
    aiq_err_clear(&e);
    int k = fx_literals(src, l, 16, &e);
    if (!CHECK_INT(k, n))
        return "";
    if (!CHECK(fx_subst_literals(src, l, v, n, buf, sizeof buf) > 0))
        return "";
    return buf;
}

TEST(literals_found_with_sign_exponent_and_duration) {
    const char *src = "-0.5 * wait.hours + 2.5e-3*job.gpus - 3 + x^2 + y^-1.5 + (1h30m > 2 ? 7 : 0)";
    fx_literal l[16];
    aiq_err e;
    aiq_err_clear(&e);
    int n = fx_literals(src, l, 16, &e);
    CHECK_INT(n, 9);
    /* -0.5: negated, value 0.5, at 1 (after the minus) */
    CHECK_INT((int)l[0].start, 1);
    CHECK_DBL(l[0].value, 0.5, 0);
    CHECK(l[0].negated && !l[0].exponent);
    /* 2.5e-3 is one literal with its exponent notation */
    CHECK_DBL(l[1].value, 2.5e-3, 0);
    CHECK_INT((int)l[1].len, 6);
    CHECK(!l[1].negated);
    /* "- 3" is a binary minus: not negated */
    CHECK_DBL(l[2].value, 3, 0);
    CHECK(!l[2].negated);
    /* x^2 and y^-1.5 are exponents */
    CHECK(l[3].exponent && !l[3].negated);
    CHECK(l[4].exponent && l[4].negated);
    CHECK_DBL(l[4].value, 1.5, 0);
    /* 1h30m: one duration of 1.5 hours */
    CHECK(l[5].duration);
    CHECK_DBL(l[5].value, 1.5, 0);
    CHECK_DBL(l[8].value, 0, 0);
    /* max 0 counts without writing */
    CHECK_INT(fx_literals(src, NULL, 0, &e), 9);
}

TEST(literals_substituted_keep_signs_and_comments) {
    double v1[] = {0.75, 0.004, 6};
    CHECK_STR(subst("-0.5 * a # weight 0.5\n + 2.5e-3*b - 3", v1, 3),
              "-0.75 * a # weight 0.5\n + 0.004*b - 6");
    double v2[] = {3, 36};
    CHECK_STR(subst("wait.hours^2 >= 48h", v2, 2), "wait.hours^3 >= 36h");
    double v3[] = {2, 1.5};
    CHECK_STR(subst("x^-1.5*1h30m", v3, 2), "x^-2*1.5h");
    double v4[] = {1234567};
    CHECK_STR(subst("1e6 * job.gpus", v4, 1), "1.23457e+06 * job.gpus");
    /* huge durations are written without an exponent */
    double v5[] = {2e6};
    CHECK_STR(subst("wait.hours > 1h", v5, 1), "wait.hours > 2000000h");
    /* negative values cannot be written as a literal */
    fx_literal l[2];
    char buf[64];
    CHECK_INT(fx_literals("2 * x", l, 2, NULL), 1);
    double bad = -1, nan_ = NAN;
    CHECK_INT(fx_subst_literals("2 * x", l, &bad, 1, buf, sizeof buf), -1);
    CHECK_INT(fx_subst_literals("2 * x", l, &nan_, 1, buf, sizeof buf), -1);
    /* truncation reports the full length */
    double ok = 10;
    CHECK_INT(fx_subst_literals("2 * x", l, &ok, 1, buf, 3), 6);
    CHECK_STR(buf, "10");
}

TEST(literals_every_substitution_compiles_to_its_value) {
    const char *src = "-(runtime.predicted_hours > 0 ? runtime.predicted_hours : 24h)"
                      " + wait.hours / 1000000 - 2^-0.5";
    fx_literal l[8];
    char buf[256];
    CHECK_INT(fx_literals(src, l, 8, NULL), 5);
    double v[] = {0, 12, 500000, 2, 0.25};
    CHECK(fx_subst_literals(src, l, v, 5, buf, sizeof buf) > 0);
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = fx_compile(buf, FX_EXPR, &e);
    if (!CHECK(p != NULL))
        return;
    double f[FX_NFACTORS] = {0};
    f[FX_F_WAIT_HOURS] = 1000;
    CHECK_DBL(fx_eval(p, f), -12 + 1000.0 / 500000 - pow(2, -0.25), 1e-12);
    fx_free(p);
}

TEST(literals_bad_token_named) {
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(fx_literals("2 * x $ 3", NULL, 0, &e), -1);
    CHECK_STR(e.message, "1:7: unexpected character '$'");
    aiq_err_clear(&e);
    CHECK_INT(fx_literals("3q", NULL, 0, &e), -1);
    CHECK(strstr(e.message, "'3q'") != NULL);
}

TEST(objective_values_and_errors) {
    struct sim_metrics m;
    memset(&m, 0, sizeof m);
    m.jct_avg = 10;
    m.wait_p95 = 4;
    m.jain_groups = 0.5;
    m.util_avg = 0.8;
    m.nunfinished = 3;
    aiq_err e;
    aiq_err_clear(&e);
    fx_prog *p = sim_objective_compile("mean_jct + 0.5*p95_wait - 10*jain_groups - utilisation "
                                       "+ unfinished", &e);
    if (CHECK(p != NULL)) {
        CHECK_DBL(sim_objective_eval(p, &m), 10 + 2 - 5 - 0.8 + 3, 1e-12);
        fx_free(p);
    }
    aiq_err_clear(&e);
    CHECK(sim_objective_compile("mean_jct + 0.5*p95_wiat", &e) == NULL);
    CHECK_STR(e.field, "objective");
    CHECK_STR(e.message, "objective: 1:16: unknown metric 'p95_wiat'; did you mean 'p95_wait'?");
    CHECK_INT(e.col, 16);
    aiq_err_clear(&e);
    CHECK(sim_objective_compile("wait.hours", &e) == NULL);
    CHECK_STR(e.message, "objective: 1:1: unknown metric 'wait.hours'");
    aiq_err_clear(&e);
    CHECK(sim_objective_compile("mean_jct +* 2", &e) == NULL);
    CHECK_STR(e.message, "objective: 1:11: expected an expression but found '*'");
    aiq_err_clear(&e);
    CHECK(sim_objective_compile("mean_jct(2)", &e) == NULL);
    CHECK_STR(e.message, "objective: 1:1: 'mean_jct' is a metric, not a function");
    /* the job factors are untouched by the metric table */
    aiq_err_clear(&e);
    fx_prog *q = fx_compile("mean_jct", FX_EXPR, &e);
    CHECK(q == NULL);
    CHECK(strstr(e.message, "unknown factor 'mean_jct'") != NULL);
    for (int i = 0; sim_tune_metric_name(i); i++)
        CHECK(sim_tune_metric_doc(i) != NULL);
}

/* ---- the search ---------------------------------------------------------- */

static const char *policy_yaml =
    "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: srjf-ish}\n"
    "spec:\n"
    "  formula: \"-(runtime.predicted_hours > 0 ? runtime.predicted_hours : 24h) + "
    "wait.hours / 1000\"\n"
    "  levels:\n  - {name: starving, when: \"wait.hours >= 12h\"}\n  - {name: main}\n"
    "  backfill: Easy\n  starvation: {after: 12h, promoteTo: starving}\n";

/* The same with fgd placement, a placement score and a rescore
 * interval, which the tuned YAML must carry over. */
static const char *policy_yaml_fgd =
    "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: srjf-ish}\n"
    "spec:\n"
    "  formula: \"-(runtime.predicted_hours > 0 ? runtime.predicted_hours : 24h) + "
    "wait.hours / 1000\"\n"
    "  levels:\n  - {name: starving, when: \"wait.hours >= 12h\"}\n  - {name: main}\n"
    "  backfill: Easy\n  starvation: {after: 12h, promoteTo: starving}\n"
    "  placement: fgd\n  placementScore: \"-node.free_gpus\"\n  rescoreInterval: 90s\n";

struct fixture {
    struct aiq_manifest *m;
    int nm;
    struct sim_trace *tr;
    struct sim_tune_config cfg;
};

static bool setup(struct fixture *fx, const char *yaml) {
    aiq_err e;
    aiq_err_clear(&e);
    memset(fx, 0, sizeof *fx);
    if (!CHECK_INT(aiq_manifest_parse_text(yaml, strlen(yaml), &fx->m, &fx->nm, &e), AIQ_OK) ||
        !CHECK(fx->nm == 1 && fx->m[0].rc == AIQ_OK))
        return false;
    struct sim_gen_opts g = {.seed = 11, .njobs = 120, .mean_interarrival_s = 300};
    fx->tr = sim_trace_create();
    if (!CHECK(fx->tr) || !CHECK_INT(sim_generate(fx->tr, &g, &e), AIQ_OK) ||
        !CHECK_INT(sim_nodes_from_spec(fx->tr, "2x8xA100-80GB", &e), AIQ_OK))
        return false;
    sim_trace_sort(fx->tr);
    sim_tune_config_init(&fx->cfg);
    fx->cfg.trace = fx->tr;
    fx->cfg.nodes = fx->tr->nodes;
    fx->cfg.nnodes = fx->tr->nnodes;
    fx->cfg.policy = &fx->m[0].u.policy;
    fx->cfg.objective = "mean_jct + 0.5*p95_wait";
    fx->cfg.budget = 14;
    fx->cfg.seed = 5;
    return true;
}

static void teardown(struct fixture *fx) {
    sim_trace_free(fx->tr);
    aiq_manifests_free(fx->m, fx->nm);
}

TEST(search_reproducible_with_seed) {
    struct fixture fx;
    struct sim_tune_result a, b, c;
    aiq_err e;
    aiq_err_clear(&e);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    if (!setup(&fx, policy_yaml))
        goto out;
    if (!CHECK_INT(sim_tune(&fx.cfg, &a, &e), AIQ_OK) ||
        !CHECK_INT(sim_tune(&fx.cfg, &b, &e), AIQ_OK))
        goto out;
    /* 24h, 1000, 12h in the when, and starvation.after */
    CHECK_INT(a.nparams, 4);
    CHECK_STR(a.param[0].where, "spec.formula");
    CHECK_STR(a.param[0].text, "24h");
    CHECK_STR(a.param[2].where, "spec.levels[0].when");
    CHECK_STR(a.param[3].where, "spec.starvation.after");
    CHECK_INT(a.runs, 14);
    CHECK_INT(a.train_jobs, 84);
    CHECK_INT(a.hold_jobs, 36);
    for (int i = 0; i < a.nparams; i++) {
        CHECK_DBL(a.param[i].after, b.param[i].after, 0);
        CHECK(a.param[i].after >= a.param[i].lo && a.param[i].after <= a.param[i].hi);
    }
    CHECK_STR(a.formula, b.formula);
    CHECK_DBL(a.train_after, b.train_after, 0);
    CHECK_DBL(a.hold_after, b.hold_after, 0);
    /* the best is never worse than the start on the search part */
    CHECK(a.train_after <= a.train_before);
    /* another seed draws other candidates */
    fx.cfg.seed = 6;
    if (!CHECK_INT(sim_tune(&fx.cfg, &c, &e), AIQ_OK))
        goto out;
    bool differ = false;
    for (int i = 0; i < a.nparams; i++)
        differ |= a.param[i].after != c.param[i].after;
    CHECK(differ || a.train_after == a.train_before);
out:
    sim_tune_result_deinit(&a);
    sim_tune_result_deinit(&b);
    sim_tune_result_deinit(&c);
    teardown(&fx);
}

TEST(search_yaml_reads_back) {
    struct fixture fx;
    struct sim_tune_result r;
    struct aiq_manifest *m = NULL;
    int nm = 0;
    char *buf = NULL;
    size_t len = 0;
    aiq_err e;
    aiq_err_clear(&e);
    memset(&r, 0, sizeof r);
    if (!setup(&fx, policy_yaml_fgd) || !CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_OK))
        goto out;
    FILE *f = open_memstream(&buf, &len);
    if (!CHECK(f))
        goto out;
    sim_tune_yaml(f, fx.cfg.policy, "srjf-ish-tuned", &fx.cfg, &r);
    CHECK_INT(fclose(f), 0);
    if (!CHECK_INT(aiq_manifest_parse_text(buf, len, &m, &nm, &e), AIQ_OK) || !CHECK_INT(nm, 1) ||
        !CHECK_INT(m[0].rc, AIQ_OK))
        goto out;
    const struct aiq_policy *p = &m[0].u.policy;
    CHECK_STR(p->meta.name, "srjf-ish-tuned");
    CHECK_STR(p->spec.formula, r.formula);
    CHECK_STR(p->spec.levels[0].when, r.when[0]);
    CHECK_INT(p->spec.nlevels, 2);
    CHECK(p->spec.levels[1].when == NULL);
    CHECK_DBL(p->spec.starvation_after_s, r.starvation_after_s, 0);
    CHECK_STR(p->spec.starvation_promote_to, "starving");
    CHECK_INT(p->spec.backfill, AIQ_BACKFILL_EASY);
    CHECK_INT(p->spec.placement, AIQ_PLACE_FGD);
    CHECK_STR(p->spec.placement_score, "-node.free_gpus");
    CHECK_DBL(p->spec.rescore_interval_s, 90, 0);
    CHECK(!p->spec.active);
    CHECK(strstr(buf, "# Tuned by aiq-sim tune from QueuePolicy srjf-ish") != NULL);
    CHECK(strstr(buf, "    aiq.dev/tuned-by: \"aiq-sim tune from QueuePolicy srjf-ish: objective "
                      "mean_jct + 0.5*p95_wait, seed 5, 14 runs\"\n") != NULL);
    CHECK(strstr(buf, "    aiq.dev/tuned-result: \"held-out part (last 36 jobs): objective ") != NULL);
    aiq_err_clear(&e);
    CHECK_INT(aiq_policy_validate(p, &e), AIQ_OK);
out:
    free(buf);
    aiq_manifests_free(m, nm);
    sim_tune_result_deinit(&r);
    teardown(&fx);
}

TEST(search_fixed_keeps_constants) {
    struct fixture fx;
    struct sim_tune_result r;
    aiq_err e;
    memset(&r, 0, sizeof r);
    if (!setup(&fx, policy_yaml))
        goto out;
    /* 1000 is at 1:79 of the formula; the when and starvation as fields */
    fx.cfg.fixed = "spec.formula@1:79,spec.levels[0].when,spec.starvation.after";
    fx.cfg.budget = 6;
    aiq_err_clear(&e);
    if (!CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_OK))
        goto out;
    CHECK_INT(r.nparams, 1);
    CHECK_STR(r.param[0].text, "24h");
    CHECK(strstr(r.formula, "wait.hours / 1000") != NULL);
    CHECK_STR(r.when[0], "wait.hours >= 12h");
    CHECK_DBL(r.starvation_after_s, 0, 0); /* not searched: the policy's stays */
    sim_tune_result_deinit(&r);
    fx.cfg.fixed = "spec.formula@1:80";
    aiq_err_clear(&e);
    CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "fixed");
    CHECK(strstr(e.message, "fixed: 'spec.formula@1:80' names no nonzero constant") != NULL);
    sim_tune_result_deinit(&r);
    fx.cfg.fixed = "spec.formula,spec.levels[0].when,spec.starvation.after";
    aiq_err_clear(&e);
    CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "that are not fixed: nothing to tune") != NULL);
out:
    sim_tune_result_deinit(&r);
    teardown(&fx);
}

TEST(search_errors_name_the_field) {
    struct fixture fx;
    struct sim_tune_result r;
    aiq_err e;
    memset(&r, 0, sizeof r);
    if (!setup(&fx, "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: f}\n"
                    "spec: {formula: job.age_hours - 0 * job.gpus, levels: [{name: all}]}\n"))
        goto out;
    aiq_err_clear(&e);
    CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "policy 'f' has no nonzero numbers") != NULL);
    sim_tune_result_deinit(&r);
    fx.cfg.budget = 1;
    aiq_err_clear(&e);
    CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "budget: need 2..100000 runs, got 1");
    fx.cfg.budget = 10;
    fx.cfg.holdout = 0.95;
    aiq_err_clear(&e);
    CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "holdout");
    fx.cfg.holdout = 0.3;
    fx.cfg.objective = "mean_jct + ";
    aiq_err_clear(&e);
    CHECK_INT(sim_tune(&fx.cfg, &r, &e), AIQ_EPARSE);
    CHECK_STR(e.field, "objective");
out:
    sim_tune_result_deinit(&r);
    teardown(&fx);
}
