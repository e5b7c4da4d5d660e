/* sim_tune.h -- aiq-sim tune: search a QueuePolicy's numeric constants
 * (the weights of its formula, the thresholds of its levels' `when`s and
 * its starvation time) for the values that minimise an objective the
 * admin writes over a run's metrics, on the earlier part of a workload,
 * and validate the best candidate on the later, held-out part.
 *
 * The objective is an expression in the policy language (policy/fx.h)
 * over the metric names of sim_tune_metric_name (mean_jct, p95_wait,
 * jain_groups, utilisation, ...); smaller is better. The search, its
 * seed and budget are described in docs/simulator.md ("Tuning"). */
#ifndef AIQ_SIM_TUNE_H
#define AIQ_SIM_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "common/model.h"
#include "simulator/sim.h"

#define SIM_TUNE_MAX_PARAMS 64

struct sim_tune_config {
    const struct sim_trace *trace;   /* the workload, jobs sorted by submit
                                        (borrowed) */
    const struct sim_node *nodes;    /* the cluster (borrowed) */
    int nnodes;
    const struct aiq_policy *policy; /* the policy to tune (borrowed) */
    const char *objective;           /* expression over the metrics */
    uint64_t seed;
    int budget;                      /* simulator runs the search may use,
                                        the baseline included, >= 2 */
    double holdout;                  /* fraction of the jobs, the latest
                                        submitted, kept for validation,
                                        0.05..0.9 */
    /* Constants to keep as written, comma-separated, as the report names
     * them: "spec.formula@3:51" (one literal), or a whole field
     * ("spec.levels[0].when", "spec.starvation.after"). NULL = none. */
    const char *fixed;
    double epoch, tick_s, preempt_grace_s; /* as in struct sim_config */
    bool predict;
    /* Progress: the fraction of the budget used. */
    void (*progress)(void *ctx, double done_fraction);
    void *progress_ctx;
};

/* Fills cfg with defaults: budget 60, hold-out 0.3, seed 1, and
 * sim_config_init's epoch, tick, prediction and grace. */
void sim_tune_config_init(struct sim_tune_config *cfg);

/* One constant searched: where it is, as written, and its values. */
struct sim_tune_param {
    char where[40];        /* "spec.formula", "spec.levels[1].when",
                              "spec.starvation.after" */
    int line, col;         /* of the literal in its text; 0 for starvation */
    char text[40];         /* as written ("0.5", "48h") */
    int duration;          /* a duration (value in hours) */
    double before, after;  /* the value before and the best found */
    double lo, hi;         /* the range searched */
};

struct sim_tune_result {
    int nparams;
    struct sim_tune_param param[SIM_TUNE_MAX_PARAMS];
    int runs;                         /* simulator runs of the search */
    int train_jobs, hold_jobs;
    double split_t;                   /* submit time (trace seconds) of the
                                         first held-out job */
    double train_before, train_after; /* objective on the search part */
    double hold_before, hold_after;   /* objective on the held-out part */
    struct sim_metrics mbefore, mafter; /* held-out metrics */
    /* The best policy's texts (owned): formula, each level's when (NULL
     * where the level has none) and the starvation time in seconds. */
    char *formula;
    char *when[AIQ_MAX_LEVELS];
    double starvation_after_s;
};

/* The objective's names: sim_tune_metric_name(i) for i = 0.. until NULL,
 * with sim_tune_metric_doc(i) the definition. */
const char *sim_tune_metric_name(int i);
const char *sim_tune_metric_doc(int i);

/* Compiles an objective; NULL with err (AIQ_EPARSE "objective: 1:9:
 * unknown metric 'p95_wiat'; did you mean 'p95_wait'?") on error. Free
 * with fx_free. */
fx_prog *sim_objective_compile(const char *src, aiq_err *err);

/* The objective's value for the metrics of a run. */
double sim_objective_eval(const fx_prog *obj, const struct sim_metrics *m);

/* Runs the search and the validation. res is caller-owned (release with
 * sim_tune_result_deinit, also after an error). Returns AIQ_OK;
 * AIQ_EPARSE for a bad objective (err->field "objective"); AIQ_EINVAL
 * naming the field for a policy without constants to tune, a --fixed
 * entry that names no constant (err->field "fixed"), a budget or
 * hold-out out of range, a workload too small to split; AIQ_ENOMEM; the
 * simulator's errors. */
aiq_rc sim_tune(const struct sim_tune_config *cfg, struct sim_tune_result *res, aiq_err *err);

void sim_tune_result_deinit(struct sim_tune_result *res);

/* Prints the search's outcome: the split, each constant before and
 * after, the objective on both parts and each held-out metric before and
 * after with the ones that got worse marked. */
void sim_tune_report(FILE *out, const struct sim_tune_config *cfg,
                     const struct sim_tune_result *res);

/* Writes the best policy as a QueuePolicy manifest named name: orig's
 * spec with the tuned texts, active: false, and the measured comparison
 * in comments on top. Write errors are left in the stream (ferror). */
void sim_tune_yaml(FILE *out, const struct aiq_policy *orig, const char *name,
                   const struct sim_tune_config *cfg, const struct sim_tune_result *res);

#endif
