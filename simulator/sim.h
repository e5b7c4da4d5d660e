/* sim.h -- the trace simulator: a workload (sim_trace.h) through the
 * queue core (queue/queue.h) and a compiled QueuePolicy
 * (policy/policy_adapter.h) in simulated time, the metrics of a run, and
 * the replay of a decision journal.
 *
 *   sim_run.c     event loop (arrivals, completions, periodic ticks), one
 *                 q_cycle_run per event time, placement on simulated
 *                 nodes, usage and fair share, runtime prediction, ETA at
 *                 submission, optional journal recording
 *   sim_report.c  JCT/wait percentiles, GPU utilisation, shares and Jain's
 *                 index, fragmentation, ETA and prediction error; table
 *                 and CSV
 *   sim_replay.c  the journal (store or JSON lines) back into a workload,
 *                 exact replay check, what-if under another policy
 *   sim_html.c    the self-contained HTML report (sim_html.h), with
 *                 inline SVG charts from sim_svg.c (sim_svg.h)
 *
 * All times inside a result are unix seconds (the trace's 0 is
 * cfg.epoch). docs/simulator.md defines every metric. */
#ifndef AIQ_SIM_H
#define AIQ_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/aiq_err.h"
#include "policy/policy_adapter.h"
#include "operator/store.h"
#include "simulator/sim_trace.h"

/* Default epoch: 2026-01-01T00:00:00Z. */
#define SIM_EPOCH 1767225600.0

/* Replay script: when cycles ran and when jobs left, taken from a
 * journal. With a script the simulator runs cycles only at cycle_t and
 * ends jobs at depart_t instead of start + duration. */
struct sim_script {
    const double *cycle_t;   /* ascending, absolute */
    int ncycles;
    const double *depart_t;  /* per trace job, absolute; <= 0 = never */
    /* Per trace job (may be NULL): a failed attempt's pods gone, after
     * its depart_t; from depart_t until then it holds its GPUs as a job
     * being stopped (terminating), as the operator's queue saw it.
     * <= depart_t: gone at depart_t. */
    const double *release_t;
    /* When preemptions and shrinks took effect (victims gone, stopped
     * replicas gone), ascending by t. */
    const struct sim_stop *stops;
    int nstops;
};

/* A preempted job gone (replicas < 0) or an elastic job's new size in
 * effect, from the journal's job_preempted / job_resized events. */
struct sim_stop {
    double t;
    int job;                 /* trace index */
    int replicas;            /* new size; -1 = preempted (whole gang gone) */
};

struct sim_config {
    const struct sim_trace *trace;  /* jobs sorted by submit (borrowed) */
    const struct sim_node *nodes;   /* the cluster (borrowed) */
    int nnodes;
    oppolicy *policy;               /* borrowed */
    const char *policy_name;        /* for the journal and reports */
    double epoch;                   /* unix seconds of trace time 0 (> 0:
                                       the queue reads time 0 as unknown,
                                       e.g. a start that protects a job
                                       from preemption) */
    double tick_s;                  /* a cycle every tick_s while jobs wait;
                                       0 = only at arrivals and ends */
    bool predict;                   /* set runtime.predicted_hours from an
                                       in-memory history */
    bool plan_actual;               /* plan every job (ETAs, backfill, the
                                       running jobs' ends) with its real
                                       duration instead of the prediction:
                                       what known runtimes would give (a
                                       diagnostic; the prediction is still
                                       made and reported). The trace's
                                       duration, from a run's start: a
                                       resumed checkpointing job is planned
                                       whole again */
    bool collect_decisions;         /* fill sim_result.dec */
    store *journal;                 /* record into it; NULL = don't */
    const struct sim_script *script;/* replay mode; NULL = simulate */
    /* A preempted job, or the replicas a shrink stops, keep their GPUs
     * this long after the decision (the pods' graceful termination). */
    double preempt_grace_s;
    /* > 0: every group's concurrent GPU quota (no borrowing), so quota
     * waits and their ETAs take part; 0 = unlimited. */
    int64_t group_quota_gpus;
    /* Progress (stderr in aiq-sim): called about every 2% of jobs. */
    void (*progress)(void *ctx, double done_fraction);
    void *progress_ctx;
};

/* Fills cfg with defaults: epoch SIM_EPOCH, tick 600 s, predict on,
 * preemption grace 30 s, everything else zero. */
void sim_config_init(struct sim_config *cfg);

/* sim_config_init, then a run of policy over trace on the trace's own
 * cluster (its nodes from the reader or --nodes-spec). */
void sim_config_for(struct sim_config *cfg, const struct sim_trace *trace, oppolicy *policy);

typedef enum {
    SIM_J_DONE = 0,      /* ran to its end */
    SIM_J_UNFINISHED,    /* never started, or still running at the end */
    SIM_J_REJECTED,      /* the queue rejected it (fits no node, ...) */
} sim_jstate;

struct sim_jobres {
    double submit, start, end;   /* 0 = did not happen */
    double eta;                  /* predicted start at submission, 0 = unknown */
    bool waited;                 /* not admitted in its first cycle */
    double pred_s;               /* runtime predicted at submission, 0 = none */
    int pred_samples;            /* history runs that prediction used, 0 = none */
    double gpus;                 /* GPUs held when it first started */
    sim_jstate state;
    uint8_t reject_reason;       /* q_reason when rejected */
    int preemptions;             /* times it was preempted */
    double lost_s;               /* work lost to preemptions (seconds at
                                    its trace size) */
};

/* One journaled decision (the same "changed since the job's last
 * decision" rule as the operator). */
struct sim_decision {
    int64_t cycle;
    double t;
    int job;                 /* trace index */
    uint8_t action;          /* q_decision (preempt/resize: an action) */
    uint8_t reason;          /* q_reason */
    bool backfilled;
    int32_t level, pos;      /* resize: pos is the new size */
    double score;
    int by;                  /* preempt/shrink: the job it is for, -1 */
};

struct sim_result {
    int njobs;
    struct sim_jobres *jobs;     /* per trace job */
    double t0, t_end;            /* first submit, last event */
    double total_gpus;           /* whole GPUs of the cluster */
    double busy_gpu_s;           /* integral of GPUs held over time */
    double *util;                /* hourly utilisation from t0, 0..1 */
    int nutil;
    double frag_unusable_s;      /* integral of unusable free GPU memory
                                    fraction, over time with jobs waiting */
    double frag_time_s;          /* time with jobs waiting */
    long ncycles;
    long npreempt, nshrink, ngrow; /* actions carried out */
    double lost_gpu_s;           /* GPU-seconds of work lost to preemption */
    struct sim_decision *dec;
    int ndec, cdec;
    /* Groups and users of the trace with their entitlement (normalised
     * shares) and the GPU-seconds they received. Names borrowed from the
     * trace. */
    int ngroups, nusers;
    const char **group_name;
    double *group_ent, *group_gpu_s;
    const char **user_name;
    int *user_group;
    double *user_ent, *user_gpu_s;
    /* GPU-seconds held while some job waited (the cluster was
     * contended): fairness is judged on these, since once every job has
     * run, total GPU-seconds are the workload's, whatever the policy. */
    double *group_cont_s, *user_cont_s;
};

/* Runs the simulation. res is caller-owned and filled (release with
 * sim_result_deinit, also after an error). Returns AIQ_OK; AIQ_EINVAL
 * when the trace is unsorted or empty, or there are no nodes (err names
 * it); AIQ_ENOMEM; AIQ_EDB when journaling fails. */
aiq_rc sim_run(const struct sim_config *cfg, struct sim_result *res,
               aiq_err *err);

/* Frees what res holds and zeroes it; a zeroed res is a no-op. */
void sim_result_deinit(struct sim_result *res);

/* ---- the inflation protocol (sim_inflate.c) ---------------------------- */

#define SIM_INFLATE_MAX_POINTS 64

/* The FGD paper's protocol (docs/simulator.md, "Inflation"): tasks arrive
 * one by one, nothing departs, each is placed at once or dropped. */
struct sim_inflate_config {
    const struct sim_trace *trace;  /* the tasks, in arrival order (borrowed) */
    const struct sim_node *nodes;   /* the cluster (borrowed) */
    int nnodes;
    aiq_placement placement;        /* the queue core's placement */
    const q_placer *placer;         /* optional: a placement score, ranks
                                       candidates instead (borrowed) */
    const char *label;              /* optional: the CSV rows' placement
                                       column (default: placement's name) */
    bool sample;                    /* draw tasks uniformly at random, with
                                       replacement, from `seed` (else trace
                                       order, ending with the trace) */
    uint64_t seed;
    double from, to, step;          /* report points, as fractions of the
                                       cluster's GPUs: 0.5, 1.3, 0.1 */
    FILE *placements;               /* optional: one CSV row per replica
                                       placed or task dropped, after
                                       SIM_INFLATE_CSV_HEADER) */
    void (*progress)(void *ctx, double done_fraction);
    void *progress_ctx;
};

/* One report point: the first moment the arrived GPU demand reached
 * `target` x the cluster's GPUs. */
struct sim_inflate_point {
    double target;       /* the step, e.g. 0.5 */
    double arrived;      /* arrived GPU demand / cluster GPUs (>= target) */
    double unalloc;      /* GPUs not allocated / cluster GPUs, 0..1 */
    long tasks, placed, dropped;  /* counts so far */
};

struct sim_inflate_result {
    double total_gpus;
    int nsteps;                      /* points asked for */
    int npoints;                     /* points reached (fewer: trace ended) */
    struct sim_inflate_point pt[SIM_INFLATE_MAX_POINTS];
    long tasks, placed, dropped;     /* at the end */
    double arrived, unalloc;         /* at the end, as in a point */
};

/* Fills cfg with defaults: binpack, trace order, points 0.5..1.3 by 0.1. */
void sim_inflate_config_init(struct sim_inflate_config *cfg);

/* The header line of the placements CSV. */
#define SIM_INFLATE_CSV_HEADER "placement,seed,seq,job,replica,outcome,node,gpus,gpu_share,gpu_mem_mib\n"

/* Runs the protocol and fills *res (caller-owned, nothing to free).
 * Returns AIQ_OK; AIQ_EINVAL naming the field (no tasks, no GPU demand in
 * the trace, a cluster without GPUs, bad steps); AIQ_ENOMEM. Write errors
 * on cfg->placements are left in the stream for the caller (ferror). */
aiq_rc sim_inflate(const struct sim_inflate_config *cfg, struct sim_inflate_result *res,
                   aiq_err *err);

/* ---- metrics (sim_report.c) -------------------------------------------- */

struct sim_metrics {
    int njobs, ndone, nrejected, nunfinished;
    double jct_avg, jct_p50, jct_p95, jct_p99;     /* hours */
    double wait_avg, wait_p50, wait_p95, wait_p99; /* hours */
    double makespan_h;
    double util_avg;            /* busy GPU-seconds / (GPUs x span) */
    double jain_groups, jain_users; /* over contended share / entitlement */
    double frag_avg;            /* time-weighted unusable fraction */
    double eta_mae_h;           /* mean |eta - start| of jobs that waited */
    int eta_n;
    /* Mean |x - actual| / actual over the jobs that have both a
     * prediction and an estimate (pred_n), so the two compare; and of the
     * prediction over every predicted job. */
    double pred_mape, est_mape;
    int pred_n;
    double pred_all_mape;
    int pred_all_n;
    /* Issue 17's goals, as medians: |ETA - start| / wait over the jobs
     * that waited and got an ETA (eta_n); the share of the jobs that
     * waited that got one; |prediction - actual| / actual over the jobs
     * whose prediction used history (pred_hist_n). */
    double eta_err_p50, eta_known;
    double pred_err_p50;
    int pred_hist_n;
    int preemptions, shrinks, grows;
    double lost_gpu_h;          /* GPU-hours of work preemption threw away */
};

/* Nearest-rank percentile: the value at rank ceil(p/100 x n) of the n
 * values sorted ascending (v is sorted in place); 0 when n == 0. */
double sim_percentile(double *v, int n, double p);

/* Jain's fairness index (sum x)^2 / (n sum x^2) of n values; 1 when all
 * are equal, 1/n when one has everything; 1 when n == 0 or all are 0. */
double sim_jain(const double *x, int n);

/* Free GPU memory unusable by the pending mix, as a fraction of all free
 * GPU memory (0 when nothing is free or nothing waits). A free slice is
 * usable when some waiting replica could take it: a fully free GPU when
 * its node has at least as many fully free GPUs (each big enough) as the
 * smallest whole-GPU replica needs, or a share fits in it; a partly used
 * GPU when the smallest waiting share fits in its free memory.
 * min_whole_gpus: GPUs of the smallest waiting whole-GPU replica (0 =
 * none), min_whole_mib its per-GPU memory; min_share_mib: the smallest
 * waiting share in MiB (0 = none); min_share_milli: the smallest waiting
 * fractional share, thousandths of the GPU (0 = none). */
double sim_fragmentation(const struct q_node *nodes, int nnodes,
                         int min_whole_gpus, int64_t min_whole_mib,
                         int64_t min_share_mib, int min_share_milli);

/* Computes the metrics of a run (trace = the run's trace, for estimates
 * and actual durations). Returns AIQ_OK or AIQ_ENOMEM. */
aiq_rc sim_metrics_compute(const struct sim_trace *tr,
                           const struct sim_result *res,
                           struct sim_metrics *m, aiq_err *err);

/* Prints the metrics of one or more runs side by side (one column per
 * run, named by names[i]) as a table, or as CSV (one row per run). */
/* Prints issue 17's goals per run: the ETA's median error as a share of
 * the wait (goal <= 20%) and the runtime prediction's median error where
 * history exists (goal <= 50%), each with "met" or "not met" ("n/a"
 * without jobs to measure). */
void sim_goals_table(FILE *out, const char *const *names,
                     const struct sim_metrics *m, int n);

void sim_metrics_table(FILE *out, const char *const *names,
                       const struct sim_metrics *m, int n);
void sim_metrics_csv(FILE *out, const char *const *names,
                     const struct sim_metrics *m, int n);

/* Prints per group and per user: GPU-hours, share of the total, share
 * while contended, entitlement, contended share / entitlement. */
void sim_shares_table(FILE *out, const struct sim_result *res);

/* Writes the hourly utilisation of one policy's run as CSV rows
 * (policy,hour,gpu_utilisation), after the header line when header is
 * true: several runs append to one file, one series per policy. */
void sim_util_csv(FILE *out, const char *policy, const struct sim_result *res, bool header);

/* ---- journal replay (sim_replay.c) --------------------------------------- */

/* A journal read back: the workload it implies and what it recorded. */
struct sim_journal {
    struct sim_trace *trace;      /* jobs (by arrival) and nodes */
    double epoch;                 /* time of the first entry */
    double *depart_t;             /* per job, absolute; 0 = never */
    double *release_t;            /* per job: its pods gone (job_released); 0 = at depart_t */
    double *cycle_t;              /* distinct decision times, ascending */
    int ncycles;
    struct sim_stop *stops;       /* preemptions and shrinks taking effect */
    int nstops;
    struct sim_decision *dec;     /* recorded decisions (job = trace index) */
    int ndec;
    char policy[256];             /* the active policy's name, or "" */
    bool predict;                 /* recorded with prediction on */
    double tick_s;
    int skipped;                  /* lines not understood (counted) */
};

/* Reads a journal in JSON lines (store_journal_export_jsonl's format) from
 * f. Returns AIQ_OK and fills *j (release with sim_journal_deinit), or
 * AIQ_EPARSE naming path:line for a line that is not JSON, AIQ_ENOMEM. */
aiq_rc sim_journal_read_jsonl(FILE *f, const char *path,
                              struct sim_journal *j, aiq_err *err);

/* Reads the journal of a store (through its JSON-lines export). */
aiq_rc sim_journal_read_store(store *s, struct sim_journal *j,
                              aiq_err *err);

void sim_journal_deinit(struct sim_journal *j);

/* Replays j through the queue with policy pol exactly as recorded (same
 * cycle times, same departures) and compares the decisions one by one.
 * *mismatches gets the count of differing decisions (0 = exact); the
 * first difference is described in first (cap bytes; "" when exact).
 * AIQ_OK unless the replay itself fails. */
aiq_rc sim_replay_check(const struct sim_journal *j, oppolicy *pol,
                        const char *policy_name, long *mismatches,
                        char *first, size_t cap, aiq_err *err);

/* What-if: the journal's jobs (their recorded runtimes as durations) run
 * under pol in simulated time. res filled as by sim_run (with
 * decisions); *changed gets how many jobs started more than a second
 * away from their recorded start (or started in one and not the other).
 * Release res with sim_result_deinit. */
aiq_rc sim_replay_whatif(const struct sim_journal *j, oppolicy *pol,
                         const char *policy_name, struct sim_result *res,
                         long *changed, aiq_err *err);

#endif
