/* predict.h -- runtime prediction from history, for
 * runtime.predicted_hours, ETAs and backfill (pure: no I/O).
 *
 * Method (docs/simulator.md, "Runtime prediction"). "Similar runs" are the
 * user's last PRED_WINDOW finished runs of the same model and size (total
 * GPUs), else of the same model, else of the same task type (each level
 * used when it has PRED_MIN_SAMPLES); first that applies:
 *   1. estimate    the job has an estimate: estimate x the correction
 *                  factor, the median of actual/estimate over the similar
 *                  runs that had an estimate (>= PRED_MIN_SAMPLES), else
 *                  over all the user's last PRED_WINDOW runs with an
 *                  estimate, else 1; clamped to 0.05..20. Users misjudge
 *                  consistently, so history corrects their number;
 *   2. user+model+size, user+model (or task)  no estimate: the median
 *                  actual runtime of the similar runs;
 *   3. group       the median of the group's last PRED_WINDOW runs
 *                  (>= PRED_MIN_SAMPLES);
 *   4. global      the median of the last PRED_WINDOW runs of anyone
 *                  (>= PRED_MIN_SAMPLES);
 *   5. none        0 (the queue then falls back to the policy's default).
 * The median resists the few runs that crash early or hang, which is why
 * it is used rather than a mean.
 *
 * Two sources of history with the same method: the operator's SQLite
 * store (operator/predict_store.h: finished, succeeded runs) and an
 * in-memory history the simulator feeds as its jobs finish. */
#ifndef AIQ_QUEUE_PREDICT_H
#define AIQ_QUEUE_PREDICT_H

#include "common/aiq_err.h"

#define PRED_WINDOW 20
#define PRED_MIN_SAMPLES 3

typedef enum {
    PRED_NONE = 0,
    PRED_USER_MODEL,     /* same user and model (or task type) */
    PRED_USER_ESTIMATE,  /* the estimate x the user's correction factor */
    PRED_GROUP,          /* the group's history */
    PRED_USER_MODEL_SIZE,/* same user, model and size */
    PRED_GLOBAL,         /* everyone's last runs */
} pred_source;

/* What is known of the job. Strings borrowed; NULL or "" = unknown. */
struct pred_query {
    const char *user;
    const char *group;
    const char *model;
    const char *task;
    double estimate_s;   /* the user's estimate, 0 = none */
    int size;            /* GPUs over all replicas, 0 = unknown (a share) */
};

struct pred_result {
    double runtime_s;    /* 0 when source is PRED_NONE */
    pred_source source;
    int samples;         /* history rows the prediction used */
    double factor;       /* PRED_USER_ESTIMATE: the correction factor */
};

/* "user+model", "user+model+size", "estimate", "group", "global",
 * "none". */
const char *pred_source_name(pred_source s);

/* Applies the method to collected samples (newest first; at most
 * PRED_WINDOW of each are used): actual runtimes of the similar runs,
 * actual/estimate of the similar runs that had an estimate, of all the
 * user's runs that had one, the group's runtimes, and the same for the
 * runs of the same size (user+model+size) and everyone's runtimes. The
 * arrays are reordered (sorted). */
struct pred_samples {
    double *same;        int nsame;
    double *same_ratio;  int nsame_ratio;
    double *user_ratio;  int nuser_ratio;
    double *group;       int ngroup;
    double *size;        int nsize;
    double *size_ratio;  int nsize_ratio;
    double *global;      int nglobal;
};
void pred_combine(struct pred_samples *s, double estimate_s,
                  struct pred_result *out);

/* ---- in-memory history (simulator) ------------------------------------ */

typedef struct pred_hist pred_hist;

/* Creates an empty history (NULL on ENOMEM); pred_hist_free(NULL) is a
 * no-op. */
pred_hist *pred_hist_create(void);
void pred_hist_free(pred_hist *h);

/* Records a finished run of `size` GPUs in all (0 = unknown; strings
 * copied; actual_s > 0, else ignored). AIQ_ENOMEM leaves h as it was for
 * the key that failed. */
aiq_rc pred_hist_add(pred_hist *h, const char *user, const char *group,
                     const char *model, const char *task, int size,
                     double estimate_s, double actual_s);

/* Predicts from h with the same method as predict_runtime
 * (operator/predict_store.h). */
void pred_hist_predict(const pred_hist *h, const struct pred_query *q,
                       struct pred_result *out);

#endif
