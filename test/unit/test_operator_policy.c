/* test_operator_policy.c -- the QueuePolicy adapter (operator/
 * policy_adapter.c): compile errors name the field with line:column, the
 * scorer picks the first level whose `when` holds (last = catch-all), and
 * explain terms add up to the score. */
#include <float.h>
#include <string.h>

#include "policy/policy_adapter.h"
#include "test/unit/th.h"

static struct aiq_policy make(const char *formula, struct aiq_level *lv, int n) {
    struct aiq_policy p;
    memset(&p, 0, sizeof p);
    p.meta.name = (char *)"tiers";
    p.spec.formula = (char *)formula;
    p.spec.levels = lv;
    p.spec.nlevels = n;
    p.spec.starvation_after_s = 3600;
    p.spec.starvation_promote_to = (char *)"small";
    return p;
}

TEST(policy_levels_and_score) {
    struct aiq_level lv[3] = {{(char *)"small", (char *)"job.gpus <= 1"},
                              {(char *)"medium", (char *)"job.gpus <= 4"},
                              {(char *)"large", NULL}};
    struct aiq_policy p = make("job.priority * 10 + wait.hours", lv, 3);
    aiq_err e;
    aiq_err_clear(&e);
    oppolicy *op = oppolicy_compile(&p, &e);
    CHECK(op != NULL);
    if (!op)
        return;
    q_scorer sc;
    oppolicy_scorer(op, &sc);
    double f[FX_NFACTORS];
    memset(f, 0, sizeof f);
    f[FX_F_JOB_PRIORITY] = 3;
    f[FX_F_WAIT_HOURS] = 0.5;
    int level = -1;
    double score = 0;
    f[FX_F_JOB_GPUS] = 1;
    CHECK_INT(sc.level(sc.ctx, f, &level), 0);
    CHECK_INT(level, 0);
    f[FX_F_JOB_GPUS] = 4;
    sc.level(sc.ctx, f, &level);
    CHECK_INT(level, 1);
    f[FX_F_JOB_GPUS] = 8;
    sc.level(sc.ctx, f, &level);
    CHECK_INT(level, 2);
    CHECK_INT(sc.score(sc.ctx, f, &score), 0);
    CHECK_DBL(score, 30.5, 1e-9);

    struct opst_term t[OPST_MAX_TERMS];
    int n = oppolicy_explain(op, f, t, OPST_MAX_TERMS);
    CHECK_INT(n, 2);
    CHECK_DBL(t[0].value + t[1].value, 30.5, 1e-9);
    CHECK_STR(t[0].name, "job.priority * 10");

    struct q_policy qp;
    oppolicy_qpolicy(op, &qp);
    CHECK_INT(qp.nlevels, 3);
    CHECK_STR(qp.level_names[2], "large");
    CHECK_INT(qp.promote_to, 0);
    CHECK_DBL(qp.starvation_after_s, 3600, 0);
    CHECK_STR(oppolicy_level_name(op, 1), "medium");
    CHECK_STR(oppolicy_level_name(op, 7), "");
    CHECK_STR(oppolicy_name(op), "tiers");
    CHECK_DBL(oppolicy_half_life(op), 7 * 86400.0, 0);
    /* A job's recorded terms keep their names past a policy replaced
     * meanwhile: it holds a reference to the labels (ASan would see a
     * read of freed memory below without it). */
    struct opst_tnames *held = opst_tnames_ref(oppolicy_term_names(op));
    CHECK(held != NULL);
    oppolicy_free(op);
    CHECK_STR(t[0].name, "job.priority * 10");
    CHECK(strlen(t[1].name) > 0);
    opst_tnames_unref(held);
    opst_tnames_unref(NULL);
    CHECK(opst_tnames_ref(NULL) == NULL);
    oppolicy_free(NULL);
}

TEST(policy_errors_name_field_and_position) {
    struct aiq_level lv[2] = {{(char *)"a", (char *)"wait.hour > 1"},
                              {(char *)"b", NULL}};
    struct aiq_policy p = make("job.priority", lv, 2);
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK_STR(e.field, "spec.levels[0].when");
    CHECK(strncmp(e.message, "spec.levels[0].when: 1:1", 24) == 0);
    CHECK(strstr(e.message, "wait.hour") != NULL);
    CHECK_INT(e.line, 1);

    lv[0].when = (char *)"job.gpus > 1";
    p.spec.formula = (char *)"job.priority +* 2";
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK_STR(e.field, "spec.formula");
    CHECK(strstr(e.message, "spec.formula: 1:") == e.message);

    p.spec.nlevels = 0;
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, "spec.levels");
}

/* A rescore interval keeps scores between cycles, so the formula and the
 * levels may read only what does not change while the job does not: the
 * compiler names the field and the factor that would go stale. */
TEST(policy_rescore_interval) {
    struct aiq_level lv[2] = {{(char *)"small", (char *)"wait.hours >= 2h || job.gpus <= 1"},
                              {(char *)"rest", NULL}};
    struct aiq_policy p = make("job.priority * 10 + user.level + min(wait.hours, 1w) / 169", lv, 2);
    p.spec.rescore_interval_s = 300;
    aiq_err e;
    aiq_err_clear(&e);
    oppolicy *op = oppolicy_compile(&p, &e);
    if (!CHECK(op != NULL))
        return;
    struct q_policy qp;
    oppolicy_qpolicy(op, &qp);
    CHECK_DBL(qp.rescore_interval_s, 300, 0);
    oppolicy_free(op);

    p.spec.formula = (char *)"job.priority + 100 * fairshare.user";
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, "spec.rescoreInterval");
    CHECK_STR(e.message, "spec.rescoreInterval: spec.formula reads fairshare.user, which changes "
                         "between rescores while the job does not; a rescore interval needs a "
                         "score of the job's own fields, user.level, group.level and the clock "
                         "only (remove rescoreInterval or fairshare.user)");

    p.spec.formula = (char *)"job.priority";
    lv[0].when = (char *)"cluster.free_gpus > 8 && job.gpus <= 1";
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK_STR(e.field, "spec.rescoreInterval");
    CHECK(strstr(e.message, "spec.levels[0].when reads cluster.free_gpus") != NULL);

    /* Without an interval the same policy compiles, and its q_policy
     * rescores every cycle. */
    p.spec.rescore_interval_s = 0;
    aiq_err_clear(&e);
    op = oppolicy_compile(&p, &e);
    if (!CHECK(op != NULL))
        return;
    oppolicy_qpolicy(op, &qp);
    CHECK_DBL(qp.rescore_interval_s, 0, 0);
    oppolicy_free(op);
}

TEST(policy_default) {
    oppolicy *op = oppolicy_default();
    CHECK(op != NULL);
    CHECK_INT(oppolicy_nlevels(op), 1);
    CHECK_STR(oppolicy_level_name(op, 0), "default");
    q_scorer sc;
    oppolicy_scorer(op, &sc);
    double f[FX_NFACTORS] = {0}, s = -1;
    f[FX_F_JOB_PRIORITY] = 7;
    sc.score(sc.ctx, f, &s);
    CHECK_DBL(s, 7, 0);
    oppolicy_free(op);
}

/* A score that overflows for some jobs is clamped by the scorer and
 * counted, with the first such term named (oppolicy_clamped), so the
 * operator can say so in the policy's status. */
TEST(policy_clamped_scores_counted) {
    struct aiq_level lv[1] = {{(char *)"all", NULL}};
    struct aiq_policy p = make("job.priority + 10 ^ 300 * job.gpus * job.gpus", lv, 1);
    oppolicy *op = oppolicy_compile(&p, NULL);
    CHECK(op != NULL);
    if (!op)
        return;
    q_scorer sc;
    oppolicy_scorer(op, &sc);
    double f[FX_NFACTORS], score = 0;
    memset(f, 0, sizeof f);
    const char *term = NULL;
    f[FX_F_JOB_GPUS] = 2;
    CHECK_INT(sc.score(sc.ctx, f, &score), 0);
    CHECK_INT((int)oppolicy_clamped(op, &term), 0);
    CHECK_STR(term, "");
    f[FX_F_JOB_GPUS] = 1e5; /* 1e300 * 1e10 overflows */
    CHECK_INT(sc.score(sc.ctx, f, &score), 0);
    CHECK_INT(sc.score(sc.ctx, f, &score), 0);
    CHECK_DBL(score, DBL_MAX, 0);
    CHECK_INT((int)oppolicy_clamped(op, &term), 2);
    CHECK_STR(term, "10 ^ 300 * job.gpus * job.gpus");
    oppolicy_free(op);

    /* The formula: its constant overflows, so it does not compile. */
    p = make("10 ^ 400 * job.gpus", lv, 1);
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK(strstr(e.message, "\"10 ^ 400\" is infinite") != NULL);
}

TEST(policy_placement_score) {
    struct aiq_level lv[1] = {{(char *)"all", NULL}};
    struct aiq_policy p = make("job.priority", lv, 1);
    p.spec.starvation_promote_to = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    oppolicy *op = oppolicy_compile(&p, &e);
    CHECK(op != NULL && oppolicy_placer(op) == NULL); /* none: placement keyword */
    oppolicy_free(op);
    p.spec.placement_score = (char *)"node.free_gpus_after - frag.delta";
    op = oppolicy_compile(&p, &e);
    const q_placer *pl = oppolicy_placer(op);
    if (CHECK(pl != NULL)) {
        double f[FX_NPFACTORS] = {0}, s = 0;
        f[FX_PF_NODE_FREE_GPUS_AFTER] = 3;
        f[FX_PF_FRAG_DELTA] = 0.25;
        CHECK_INT(pl->score(pl->ctx, f, &s), 0);
        CHECK_DBL(s, 2.75, 1e-12);
    }
    oppolicy_free(op);
    p.spec.placement_score = (char *)"node.free_gpus_after +";
    aiq_err_clear(&e);
    CHECK(oppolicy_compile(&p, &e) == NULL);
    CHECK_STR(e.field, "spec.placementScore");
    CHECK(strncmp(e.message, "spec.placementScore: 1:", 23) == 0);
    CHECK_INT(e.line, 1);
}
