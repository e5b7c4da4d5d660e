/* predict.c -- runtime prediction (method in predict.h): the combination
 * rule on collected samples and the in-memory history (rings of the last
 * PRED_WINDOW runs per user, model and size, user and model, user and
 * task, user, group, and of everyone, in a hash table). The store-backed
 * predictor is operator/predict_store.c. */
#include "queue/predict.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"

/* Names of the sources; see predict.h. */
const char *pred_source_name(pred_source s) {
    switch (s) {
    case PRED_USER_MODEL: return "user+model";
    case PRED_USER_ESTIMATE: return "estimate";
    case PRED_GROUP: return "group";
    case PRED_USER_MODEL_SIZE: return "user+model+size";
    case PRED_GLOBAL: return "global";
    default: return "none";
    }
}

static int dcmp__(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of the first n values (sorted in place); n > 0. */
static double median__(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, dcmp__);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cap__(int n) {
    return n > PRED_WINDOW ? PRED_WINDOW : n;
}

/* The median of v[0..n) as *out when n has enough samples. */
static bool enough__(double *v, int n, double *out) {
    n = cap__(n);
    if (n < PRED_MIN_SAMPLES)
        return false;
    *out = median__(v, n);
    return true;
}

/* Combines samples; see predict.h. */
void pred_combine(struct pred_samples *s, double estimate_s,
                  struct pred_result *out) {
    memset(out, 0, sizeof *out);
    out->factor = 1;
    if (estimate_s > 0) {
        double f = 1;
        if (enough__(s->size_ratio, s->nsize_ratio, &f))
            out->samples = cap__(s->nsize_ratio);
        else if (enough__(s->same_ratio, s->nsame_ratio, &f))
            out->samples = cap__(s->nsame_ratio);
        else if (enough__(s->user_ratio, s->nuser_ratio, &f))
            out->samples = cap__(s->nuser_ratio);
        f = f < 0.05 ? 0.05 : f > 20 ? 20 : f;
        out->factor = f;
        out->runtime_s = estimate_s * f;
        out->source = PRED_USER_ESTIMATE;
        return;
    }
    const struct {
        double *v;
        int n;
        pred_source src;
    } chain[] = {{s->size, s->nsize, PRED_USER_MODEL_SIZE},
                 {s->same, s->nsame, PRED_USER_MODEL},
                 {s->group, s->ngroup, PRED_GROUP},
                 {s->global, s->nglobal, PRED_GLOBAL}};
    for (size_t k = 0; k < sizeof chain / sizeof chain[0]; k++) {
        if (enough__(chain[k].v, chain[k].n, &out->runtime_s)) {
            out->source = chain[k].src;
            out->samples = cap__(chain[k].n);
            return;
        }
    }
}

/* ---- in-memory history ---------------------------------------------------- */

struct ring {
    char *key;
    double act[PRED_WINDOW], est[PRED_WINDOW];
    int n, head;   /* head: next slot to write */
};

struct pred_hist {
    struct ring *slot;
    size_t cap, used;   /* cap a power of two */
};

static uint64_t hash__(const char *k) {
    return aiq_fnv_cstr(AIQ_FNV_TABLE_SEED, k);
}

/* Creates a history; see predict.h. */
pred_hist *pred_hist_create(void) {
    pred_hist *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->cap = 256;
    h->slot = calloc(h->cap, sizeof *h->slot);
    if (!h->slot) {
        free(h);
        return NULL;
    }
    return h;
}

/* Frees a history; see predict.h. */
void pred_hist_free(pred_hist *h) {
    if (!h)
        return;
    for (size_t i = 0; i < h->cap; i++)
        free(h->slot[i].key);
    free(h->slot);
    free(h);
}

static const struct ring *find__(const pred_hist *h, const char *key) {
    size_t k = (size_t)hash__(key) & (h->cap - 1);
    while (h->slot[k].key) {
        if (strcmp(h->slot[k].key, key) == 0)
            return &h->slot[k];
        k = (k + 1) & (h->cap - 1);
    }
    return NULL;
}

static int grow__(pred_hist *h) {
    size_t nc = h->cap * 2;
    struct ring *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->slot[i].key)
            continue;
        size_t k = (size_t)hash__(h->slot[i].key) & (nc - 1);
        while (ns[k].key)
            k = (k + 1) & (nc - 1);
        ns[k] = h->slot[i];
    }
    free(h->slot);
    h->slot = ns;
    h->cap = nc;
    return 0;
}

static aiq_rc push__(pred_hist *h, const char *key, double est, double act) {
    if ((h->used + 1) * 2 > h->cap && grow__(h) != 0)
        return AIQ_ENOMEM;
    size_t k = (size_t)hash__(key) & (h->cap - 1);
    while (h->slot[k].key && strcmp(h->slot[k].key, key) != 0)
        k = (k + 1) & (h->cap - 1);
    struct ring *r = &h->slot[k];
    if (!r->key) {
        if (!(r->key = strdup(key)))
            return AIQ_ENOMEM;
        h->used++;
    }
    r->act[r->head] = act;
    r->est[r->head] = est;
    r->head = (r->head + 1) % PRED_WINDOW;
    if (r->n < PRED_WINDOW)
        r->n++;
    return AIQ_OK;
}

static bool set__(const char *s) {
    return s && *s;
}

/* Builds "kind\x1fa\x1fb" into buf; false when it does not fit. */
static bool key__(char *buf, size_t cap, char kind, const char *a, const char *b) {
    int n = snprintf(buf, cap, "%c\x1f%s\x1f%s", kind, a ? a : "", b ? b : "");
    return n > 0 && (size_t)n < cap;
}

/* Builds "s\x1fuser\x1fmodel\x1fsize" into buf; false when it does not fit. */
static bool size_key__(char *buf, size_t cap, const char *user, const char *model, int size) {
    int n = snprintf(buf, cap, "s\x1f%s\x1f%s\x1f%d", user, model, size);
    return n > 0 && (size_t)n < cap;
}

/* Records a run; see predict.h. */
aiq_rc pred_hist_add(pred_hist *h, const char *user, const char *group,
                     const char *model, const char *task, int size,
                     double estimate_s, double actual_s) {
    aiq_rc rc = AIQ_OK;
    char key[600];
    if (!(actual_s > 0))
        return AIQ_OK;
    if (set__(user) && set__(model) && size > 0 &&
        size_key__(key, sizeof key, user, model, size) &&
        (rc = push__(h, key, estimate_s, actual_s)) != AIQ_OK)
        return rc;
    if (key__(key, sizeof key, '*', NULL, NULL) && (rc = push__(h, key, estimate_s, actual_s)) != AIQ_OK)
        return rc;
    if (set__(user) && set__(model) && key__(key, sizeof key, 'm', user, model) &&
        (rc = push__(h, key, estimate_s, actual_s)) != AIQ_OK)
        return rc;
    if (set__(user) && set__(task) && key__(key, sizeof key, 't', user, task) &&
        (rc = push__(h, key, estimate_s, actual_s)) != AIQ_OK)
        return rc;
    if (set__(user) && estimate_s > 0 && key__(key, sizeof key, 'u', user, NULL) &&
        (rc = push__(h, key, estimate_s, actual_s)) != AIQ_OK)
        return rc;
    if (set__(group) && key__(key, sizeof key, 'g', group, NULL) &&
        (rc = push__(h, key, estimate_s, actual_s)) != AIQ_OK)
        return rc;
    return rc;
}

/* Copies a ring's values newest first (ratios: actual/estimate). */
static int take__(const struct ring *r, double *v, bool ratio) {
    int n = 0;
    if (!r)
        return 0;
    for (int i = 0; i < r->n; i++) {
        int k = (r->head - 1 - i + 2 * PRED_WINDOW) % PRED_WINDOW;
        if (ratio) {
            if (r->est[k] > 0)
                v[n++] = r->act[k] / r->est[k];
        } else {
            v[n++] = r->act[k];
        }
    }
    return n;
}

/* Predicts from memory; see predict.h. */
void pred_hist_predict(const pred_hist *h, const struct pred_query *q,
                       struct pred_result *out) {
    double same[PRED_WINDOW], sr[PRED_WINDOW], ur[PRED_WINDOW], grp[PRED_WINDOW];
    double sz[PRED_WINDOW], szr[PRED_WINDOW], all[PRED_WINDOW];
    struct pred_samples ps = {same, 0, sr, 0, ur, 0, grp, 0, sz, 0, szr, 0, all, 0};
    char key[600];
    const struct ring *r = NULL;
    if (set__(q->user) && set__(q->model) && q->size > 0 &&
        size_key__(key, sizeof key, q->user, q->model, q->size)) {
        const struct ring *rs = find__(h, key);
        ps.nsize = take__(rs, sz, false);
        ps.nsize_ratio = take__(rs, szr, true);
    }
    if (key__(key, sizeof key, '*', NULL, NULL))
        ps.nglobal = take__(find__(h, key), all, false);
    if (set__(q->user) && set__(q->model) && key__(key, sizeof key, 'm', q->user, q->model))
        r = find__(h, key);
    if ((!r || r->n < PRED_MIN_SAMPLES) && set__(q->user) && set__(q->task) &&
        key__(key, sizeof key, 't', q->user, q->task))
        r = find__(h, key);
    ps.nsame = take__(r, same, false);
    ps.nsame_ratio = take__(r, sr, true);
    if (set__(q->user) && key__(key, sizeof key, 'u', q->user, NULL))
        ps.nuser_ratio = take__(find__(h, key), ur, true);
    if (set__(q->group) && key__(key, sizeof key, 'g', q->group, NULL))
        ps.ngroup = take__(find__(h, key), grp, false);
    pred_combine(&ps, q->estimate_s, out);
}
