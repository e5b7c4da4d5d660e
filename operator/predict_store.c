/* predict_store.c -- the runtime predictor (queue/predict.h) fed from the
 * store's history of finished, succeeded runs (store_runtime_history). */
#include "operator/predict_store.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct collect {
    double act[PRED_WINDOW], ratio[PRED_WINDOW];
    int nact, nratio;
    bool only_ratio;  /* stop once PRED_WINDOW ratios are in */
    int size;         /* > 0: only runs of this many GPUs in all */
};

static int collect_cb__(const struct store_history_row *r, void *ctx) {
    struct collect *c = ctx;
    if (c->size > 0 && (int64_t)r->gpus * r->replicas != c->size)
        return 0;
    if (!c->only_ratio && c->nact < PRED_WINDOW)
        c->act[c->nact++] = r->actual_runtime_s;
    if (r->estimated_runtime_s > 0 && c->nratio < PRED_WINDOW)
        c->ratio[c->nratio++] = r->actual_runtime_s / r->estimated_runtime_s;
    return c->only_ratio ? c->nratio >= PRED_WINDOW : c->nact >= PRED_WINDOW;
}

static bool given(const char *s) {
    return s && *s;
}

/* Predicts from the store; see predict_store.h. */
aiq_rc predict_runtime(store *s, const struct pred_query *q,
                       struct pred_result *out, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    struct collect same, user, grp, size, all;
    memset(&same, 0, sizeof same);
    memset(&user, 0, sizeof user);
    memset(&grp, 0, sizeof grp);
    memset(&size, 0, sizeof size);
    memset(&all, 0, sizeof all);
    user.only_ratio = true;
    memset(out, 0, sizeof *out);
    if (given(q->user) && given(q->model) && q->size > 0) {
        /* The same size among the user's recent runs of the model. */
        struct store_history_query sq = {q->user, NULL, q->model, NULL, 5 * PRED_WINDOW};
        size.size = q->size;
        if ((rc = store_runtime_history(s, &sq, collect_cb__, &size, err)) != AIQ_OK)
            goto out_fail;
    }
    if (given(q->user) && given(q->model)) {
        struct store_history_query hq = {q->user, NULL, q->model, NULL, PRED_WINDOW};
        if ((rc = store_runtime_history(s, &hq, collect_cb__, &same, err)) != AIQ_OK)
            goto out_fail;
    }
    if (given(q->user) && given(q->task) && same.nact < PRED_MIN_SAMPLES) {
        struct store_history_query tq = {q->user, NULL, NULL, q->task, PRED_WINDOW};
        memset(&same, 0, sizeof same);
        if ((rc = store_runtime_history(s, &tq, collect_cb__, &same, err)) != AIQ_OK)
            goto out_fail;
    }
    if (q->estimate_s > 0 && same.nratio < PRED_MIN_SAMPLES && given(q->user)) {
        /* Rows without an estimate are skipped, so look further back. */
        struct store_history_query uq = {q->user, NULL, NULL, NULL, 5 * PRED_WINDOW};
        if ((rc = store_runtime_history(s, &uq, collect_cb__, &user, err)) != AIQ_OK)
            goto out_fail;
    }
    if (q->estimate_s <= 0 && same.nact < PRED_MIN_SAMPLES && given(q->group)) {
        struct store_history_query gq = {NULL, q->group, NULL, NULL, PRED_WINDOW};
        if ((rc = store_runtime_history(s, &gq, collect_cb__, &grp, err)) != AIQ_OK)
            goto out_fail;
    }
    if (q->estimate_s <= 0 && same.nact < PRED_MIN_SAMPLES && grp.nact < PRED_MIN_SAMPLES &&
        size.nact < PRED_MIN_SAMPLES) {
        struct store_history_query aq = {NULL, NULL, NULL, NULL, PRED_WINDOW};
        if ((rc = store_runtime_history(s, &aq, collect_cb__, &all, err)) != AIQ_OK)
            goto out_fail;
    }
    struct pred_samples ps = {same.act, same.nact, same.ratio, same.nratio,
                              user.ratio, user.nratio, grp.act, grp.nact,
                              size.act, size.nact, size.ratio, size.nratio,
                              all.act, all.nact};
    pred_combine(&ps, q->estimate_s, out);
    return AIQ_OK;
out_fail:
    memset(out, 0, sizeof *out);
    return rc;
}
