/* test_predict.c -- runtime prediction (operator/predict.c): the method's
 * rules on hand-made samples (corrected estimate, user+model median, task
 * fallback, group fallback, window, clamping), the store-backed predictor
 * on finished jobs in SQLite, and the in-memory history giving the same
 * answers as the store for the same runs. */
#include "operator/predict_store.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <string.h>

TEST(combine_rules) {
    struct pred_result r;
    double same[4] = {100, 300, 200, 1000}, sr[3] = {0.5, 0.4, 0.6}, ur[3] = {2, 3, 2},
           grp[3] = {50, 70, 60};
    /* no history, an estimate: the estimate itself */
    struct pred_samples s0 = {0};
    pred_combine(&s0, 3600, &r);
    CHECK_INT(r.source, PRED_USER_ESTIMATE);
    CHECK_DBL(r.runtime_s, 3600, 0);
    CHECK_DBL(r.factor, 1, 0);
    /* an estimate and similar runs with estimates: median ratio 0.5 */
    struct pred_samples s1 = {same, 4, sr, 3, ur, 3, grp, 3, NULL, 0, NULL, 0, NULL, 0};
    pred_combine(&s1, 3600, &r);
    CHECK_INT(r.source, PRED_USER_ESTIMATE);
    CHECK_DBL(r.factor, 0.5, 0);
    CHECK_DBL(r.runtime_s, 1800, 0);
    CHECK_INT(r.samples, 3);
    /* too few similar ratios: the user's own ratios (median 2) */
    double sr2[2] = {0.5, 0.4}, ur2[3] = {2, 3, 2};
    struct pred_samples s2 = {same, 4, sr2, 2, ur2, 3, grp, 3, NULL, 0, NULL, 0, NULL, 0};
    pred_combine(&s2, 1000, &r);
    CHECK_DBL(r.factor, 2, 0);
    CHECK_DBL(r.runtime_s, 2000, 0);
    /* no estimate: the median of similar runs (even count: mean of middle) */
    double same3[4] = {100, 300, 200, 1000};
    struct pred_samples s3 = {same3, 4, NULL, 0, NULL, 0, grp, 3, NULL, 0, NULL, 0, NULL, 0};
    pred_combine(&s3, 0, &r);
    CHECK_INT(r.source, PRED_USER_MODEL);
    CHECK_DBL(r.runtime_s, 250, 0);
    CHECK_INT(r.samples, 4);
    /* fewer than 3 similar runs: the group's median */
    double grp4[3] = {50, 70, 60};
    struct pred_samples s4 = {same3, 2, NULL, 0, NULL, 0, grp4, 3, NULL, 0, NULL, 0, NULL, 0};
    pred_combine(&s4, 0, &r);
    CHECK_INT(r.source, PRED_GROUP);
    CHECK_DBL(r.runtime_s, 60, 0);
    /* nothing at all */
    struct pred_samples s5 = {same3, 2, NULL, 0, NULL, 0, grp4, 2, NULL, 0, NULL, 0, NULL, 0};
    pred_combine(&s5, 0, &r);
    CHECK_INT(r.source, PRED_NONE);
    CHECK_DBL(r.runtime_s, 0, 0);
    CHECK_STR(pred_source_name(PRED_NONE), "none");
    CHECK_STR(pred_source_name(PRED_USER_MODEL), "user+model");
    /* the factor is clamped to 0.05..20 */
    double tiny[3] = {0.001, 0.002, 0.001};
    struct pred_samples s6 = {NULL, 0, tiny, 3, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0};
    pred_combine(&s6, 1000, &r);
    CHECK_DBL(r.factor, 0.05, 0);
    CHECK_DBL(r.runtime_s, 50, 1e-9);
}

/* ---- store-backed ---------------------------------------------------------- */

static double t_next = 1767225600;

static void finished_n(store *s, const char *uid, const char *user, const char *group,
                       const char *model, const char *task, double est, double rt,
                       const char *outcome, int replicas, int gpus) {
    aiq_err e;
    aiq_err_clear(&e);
    struct aiq_aijob j;
    memset(&j, 0, sizeof j);
    j.meta.uid = (char *)uid;
    j.meta.name = (char *)uid;
    j.meta.namespace_ = (char *)"ns";
    j.meta.creation_time = t_next;
    j.spec.user = (char *)user;
    j.spec.replicas = replicas;
    j.spec.resources.gpus = gpus;
    j.spec.estimated_runtime_s = est;
    j.spec.model_name = (char *)model;
    j.spec.task_type = (char *)task;
    CHECK_INT(store_upsert_job(s, &j, group, &e), AIQ_OK);
    CHECK_INT(store_attempt_start(s, uid, 1, t_next, &e), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, uid, 1, t_next + rt, rt, outcome, NULL, &e), AIQ_OK);
    /* the end as the operator records it: one write (job_store_final) */
    struct store_job_status st = {strcmp(outcome, "Succeeded") == 0 ? AIQ_PHASE_SUCCEEDED
                                                                    : AIQ_PHASE_FAILED,
                                  0, 0, 0, NULL, 1, t_next + rt};
    CHECK_INT(store_job_set_status(s, uid, &st, &e), AIQ_OK);
    t_next += rt + 10;
}

static void finished(store *s, const char *uid, const char *user, const char *group,
                     const char *model, const char *task, double est, double rt,
                     const char *outcome) {
    finished_n(s, uid, user, group, model, task, est, rt, outcome, 1, 1);
}

struct run {
    const char *uid, *user, *group, *model, *task;
    double est, rt;
    const char *outcome;
};

static const struct run runs[] = {
    {"r1", "ann", "nlp", "llama", "nlp", 1000, 2000, "Succeeded"},
    {"r2", "ann", "nlp", "llama", "nlp", 1000, 3000, "Succeeded"},
    {"r3", "ann", "nlp", "llama", "nlp", 0, 2500, "Succeeded"},
    {"r4", "ann", "nlp", "llama", "nlp", 2000, 5000, "Succeeded"},
    {"r5", "ann", "nlp", "bert", "nlp", 100, 50, "Succeeded"},
    {"r6", "ann", "nlp", "llama", "nlp", 10, 99999, "Failed"}, /* ignored */
    {"r7", "bob", "nlp", "gpt2", "nlp", 0, 400, "Succeeded"},
    {"r8", "cat", "nlp", "gpt2", "nlp", 0, 800, "Succeeded"},
};
#define NRUNS ((int)(sizeof runs / sizeof runs[0]))

struct qcase {
    struct pred_query q;
    pred_source src;
    double runtime;
};

/* Expected answers, worked by hand from `runs`. */
static const struct qcase cases[] = {
    /* ann+llama without an estimate: median of 2000, 3000, 2500, 5000 */
    {{"ann", "nlp", "llama", "nlp", 0, 0}, PRED_USER_MODEL, 2750},
    /* with an estimate: llama ratios 2, 3, 2.5 (r3 had none) -> 2.5 */
    {{"ann", "nlp", "llama", "nlp", 600, 0}, PRED_USER_ESTIMATE, 1500},
    /* a new model of a known task: the task's runs (5 of them) */
    {{"ann", "nlp", "t5", "nlp", 0, 0}, PRED_USER_MODEL, 2500},
    /* bert: one run only, the estimate gets ann's overall factor
     * (ratios 2, 3, 2.5, 0.5 -> median 2.25) */
    {{"ann", "nlp", "newmodel", NULL, 100, 0}, PRED_USER_ESTIMATE, 225},
    /* dan is new: the group's median (7 succeeded runs: 50 400 800
     * 2000 2500 3000 5000 -> 2000) */
    {{"dan", "nlp", "gpt2", "nlp", 0, 0}, PRED_GROUP, 2000},
    /* dan with an estimate and no history: the estimate */
    {{"dan", "nlp", NULL, NULL, 700, 0}, PRED_USER_ESTIMATE, 700},
    /* an unknown group and user: everyone's last runs (the 7 succeeded
     * ones, as for the group: 2000) */
    {{"eve", "cv", NULL, NULL, 0, 0}, PRED_GLOBAL, 2000},
    /* ann+llama at the size of its runs (1 GPU): the same 4 runs, now
     * keyed by size too */
    {{"ann", "nlp", "llama", "nlp", 0, 1}, PRED_USER_MODEL_SIZE, 2750},
    /* at a size it never ran: user+model */
    {{"ann", "nlp", "llama", "nlp", 0, 8}, PRED_USER_MODEL, 2750},
};

TEST(store_and_memory_agree_with_hand_values) {
    aiq_err e;
    aiq_err_clear(&e);
    store *s = store_open(":memory:", NULL, &e);
    pred_hist *h = pred_hist_create();
    if (!CHECK(s && h))
        goto out;
    for (int i = 0; i < NRUNS; i++) {
        const struct run *r = &runs[i];
        finished(s, r->uid, r->user, r->group, r->model, r->task, r->est, r->rt, r->outcome);
        if (strcmp(r->outcome, "Succeeded") == 0)
            CHECK_INT(pred_hist_add(h, r->user, r->group, r->model, r->task, 1, r->est, r->rt),
                      AIQ_OK);
    }
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct pred_result a, b;
        CHECK_INT(predict_runtime(s, &cases[k].q, &a, &e), AIQ_OK);
        pred_hist_predict(h, &cases[k].q, &b);
        if (!CHECK_INT(a.source, cases[k].src) || !CHECK_DBL(a.runtime_s, cases[k].runtime, 1e-9))
            printf("    case %zu (store)\n", k);
        if (!CHECK_INT(b.source, cases[k].src) || !CHECK_DBL(b.runtime_s, cases[k].runtime, 1e-9))
            printf("    case %zu (memory)\n", k);
    }
out:
    pred_hist_free(h);
    store_close(s);
}

/* The fallback chain's first level: runs of the same size, for the
 * median and for the estimate's correction factor; store and memory
 * agree. */
TEST(size_level_of_the_chain) {
    aiq_err e;
    aiq_err_clear(&e);
    store *s = store_open(":memory:", NULL, &e);
    pred_hist *h = pred_hist_create();
    if (!CHECK(s && h))
        goto out;
    char uid[16];
    for (int i = 0; i < 6; i++) { /* 1 GPU: 100 s (est 500); 2x4 GPUs: 1000 s (est 500) */
        int big = i % 2;
        double rt = big ? 1000 : 100;
        snprintf(uid, sizeof uid, "z%d", i);
        finished_n(s, uid, "ann", "g", "m", "cv", 500, rt, "Succeeded", big ? 2 : 1, big ? 4 : 1);
        CHECK_INT(pred_hist_add(h, "ann", "g", "m", "cv", big ? 8 : 1, 500, rt), AIQ_OK);
    }
    const struct qcase sc[] = {
        {{"ann", "g", "m", "cv", 0, 8}, PRED_USER_MODEL_SIZE, 1000},
        {{"ann", "g", "m", "cv", 0, 1}, PRED_USER_MODEL_SIZE, 100},
        /* no run of 4 GPUs: all 6 of the model, (100 + 1000) / 2 */
        {{"ann", "g", "m", "cv", 0, 4}, PRED_USER_MODEL, 550},
        /* the estimate corrected by the same size's ratios (2 and 0.2),
         * else by the model's (median of 0.2 x3 and 2 x3: 1.1) */
        {{"ann", "g", "m", "cv", 300, 8}, PRED_USER_ESTIMATE, 600},
        {{"ann", "g", "m", "cv", 300, 1}, PRED_USER_ESTIMATE, 60},
        {{"ann", "g", "m", "cv", 300, 4}, PRED_USER_ESTIMATE, 330},
    };
    for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++) {
        struct pred_result a, b;
        CHECK_INT(predict_runtime(s, &sc[k].q, &a, &e), AIQ_OK);
        pred_hist_predict(h, &sc[k].q, &b);
        if (!CHECK_INT(a.source, sc[k].src) || !CHECK_DBL(a.runtime_s, sc[k].runtime, 1e-9))
            printf("    size case %zu (store)\n", k);
        if (!CHECK_INT(b.source, sc[k].src) || !CHECK_DBL(b.runtime_s, sc[k].runtime, 1e-9))
            printf("    size case %zu (memory)\n", k);
    }
    CHECK_STR(pred_source_name(PRED_USER_MODEL_SIZE), "user+model+size");
    CHECK_STR(pred_source_name(PRED_GLOBAL), "global");
out:
    pred_hist_free(h);
    store_close(s);
}

TEST(memory_window_keeps_the_last_runs) {
    pred_hist *h = pred_hist_create();
    if (!CHECK(h != NULL))
        return;
    /* 30 old runs of 100 s, then 20 of 900 s: only the last 20 count. */
    for (int i = 0; i < 30; i++)
        CHECK_INT(pred_hist_add(h, "ann", "g", "m", NULL, 1, 0, 100), AIQ_OK);
    for (int i = 0; i < PRED_WINDOW; i++)
        CHECK_INT(pred_hist_add(h, "ann", "g", "m", NULL, 1, 0, 900), AIQ_OK);
    struct pred_query q = {"ann", "g", "m", NULL, 0, 0};
    struct pred_result r;
    pred_hist_predict(h, &q, &r);
    CHECK_DBL(r.runtime_s, 900, 0);
    CHECK_INT(r.samples, PRED_WINDOW);
    /* many keys: the table grows and keeps them all */
    char user[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(user, sizeof user, "u%d", i);
        for (int k = 0; k < 3; k++)
            CHECK_INT(pred_hist_add(h, user, "g", "m", NULL, 1, 0, 10 + i), AIQ_OK);
    }
    struct pred_query q2 = {"u777", "g", "m", NULL, 0, 0};
    pred_hist_predict(h, &q2, &r);
    CHECK_DBL(r.runtime_s, 787, 0);
    /* a non-positive runtime is not history: zed has none, so the
     * global window answers: the last 20 runs are u993 x2 and u994..u999
     * x3 (1003..1009), median 1006 */
    CHECK_INT(pred_hist_add(h, "zed", "g", "m", NULL, 1, 0, 0), AIQ_OK);
    struct pred_query q3 = {"zed", "none", "m", NULL, 0, 0};
    pred_hist_predict(h, &q3, &r);
    CHECK_INT(r.source, PRED_GLOBAL);
    CHECK_DBL(r.runtime_s, 1006, 0);
    pred_hist_free(h);
    /* an empty history: nothing */
    h = pred_hist_create();
    if (!CHECK(h != NULL))
        return;
    pred_hist_predict(h, &q3, &r);
    CHECK_INT(r.source, PRED_NONE);
    CHECK_DBL(r.runtime_s, 0, 0);
    pred_hist_free(h);
    pred_hist_free(NULL);
}
