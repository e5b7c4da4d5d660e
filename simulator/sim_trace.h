/* sim_trace.h -- a workload for the trace simulator: jobs (submit time,
 * user, group, gang shape, resources, actual duration, the user's estimate,
 * model and task type) and, optionally, the cluster's nodes; the trace
 * readers (our CSV, Tiresias, Alibaba cluster-trace-gpu-v2023) and the
 * synthetic generator.
 *
 * Times in a trace are seconds from the trace's start; the simulator adds
 * its own epoch. Strings inside a trace are owned by the trace and freed by
 * sim_trace_free. docs/simulator.md documents the formats. */
#ifndef AIQ_SIM_TRACE_H
#define AIQ_SIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/aiq_err.h"

/* Caps on hostile input. */
#define SIM_MAX_LINE 4096        /* bytes in one CSV line */
#define SIM_MAX_JOBS 2000000     /* jobs in one trace */
#define SIM_MAX_NODES 200000     /* nodes in one cluster */
#define SIM_MAX_FIELDS 64        /* columns in one CSV line */

struct sim_job {
    char *id;            /* unique within the trace */
    char *user;
    char *group;
    char *model;         /* model name, or NULL */
    char *task;          /* task type (cv, nlp, ...), or NULL */
    char *gpu_model;     /* required GPU model, or NULL = any */
    double submit;       /* seconds from the trace start */
    int replicas;        /* 1..1024 */
    int gpus;            /* whole GPUs per replica; 0 = a GPU share */
    int64_t gpu_mem_mib; /* per GPU (the share when gpus == 0) */
    int gpu_milli;       /* a share as thousandths of the GPU it lands on
                          * (1..999, gpus and gpu_mem_mib 0); 0 = none */
    int64_t cpu_milli;   /* per replica */
    int64_t mem_bytes;   /* per replica */
    double duration_s;   /* actual runtime once started, at `replicas` */
    double estimate_s;   /* the user's estimate, 0 = none */
    int priority;
    /* Elastic (0 = fixed): runs on min..max replicas, its speed
     * proportional to its replicas (duration_s is at `replicas`). */
    int min_replicas, max_replicas;
    /* Checkpoints every checkpoint_s of running (0 = never): a preempted
     * job loses only the work since its last checkpoint. */
    double checkpoint_s;
    /* Preemption protections from the AIJob spec (0/false = none):
     * spec.minRuntime, and spec.nonPreemptible (admin-granted). */
    double min_runtime_s;
    bool non_preemptible;
    /* Journal replay only: when the AIJob was created and last queued
     * (seconds from the trace start), which job.age_hours and wait.hours
     * count from; without them both are the submit time. */
    bool times_set;
    double created, queued;
};

struct sim_node {
    char *name;
    char *gpu_model;     /* may be NULL */
    int gpus;            /* 0..16 */
    int64_t gpu_mem_mib; /* per GPU */
    int64_t cpu_milli;
    int64_t mem_bytes;
};

struct sim_trace {
    struct sim_job *jobs;
    int njobs, cjobs;
    struct sim_node *nodes;  /* only when the trace brings its own cluster */
    int nnodes, cnodes;
};

/* Creates an empty trace (NULL on ENOMEM); free with sim_trace_free. */
struct sim_trace *sim_trace_create(void);

/* Frees tr and all its strings; NULL is a no-op. */
void sim_trace_free(struct sim_trace *tr);

/* Appends a copy of j (its strings are duplicated; j stays the caller's).
 * NULL user/group become "default". AIQ_ENOMEM, or AIQ_ETOOBIG past
 * SIM_MAX_JOBS; the trace is unchanged on error. */
aiq_rc sim_trace_add_job(struct sim_trace *tr, const struct sim_job *j,
                         aiq_err *err);

/* Appends a copy of n (strings duplicated). AIQ_ENOMEM / AIQ_ETOOBIG. */
aiq_rc sim_trace_add_node(struct sim_trace *tr, const struct sim_node *n,
                          aiq_err *err);

/* Stable sort of the jobs by submit time (file order breaks ties). */
void sim_trace_sort(struct sim_trace *tr);

/* GPU memory in MiB of a GPU model by its name: a known table (A100-80GB,
 * H100, V100M32, T4, ...), else a trailing "<n>GB"/"<n>G" in the name,
 * else 0 (unknown). */
int64_t sim_gpu_model_mib(const char *model);

/* Adds nodes from a spec "COUNTxGPUSxMODEL[/CORES[/MEM]]" (e.g.
 * "125x8xA100-80GB", "100x8xV100M32/96", "549x8xG2-32GB/96/384"), several
 * separated by ','. Each node gets 16 cores and 128 GiB of memory per GPU,
 * or with /CORES that many cores and 8 GiB of memory a core, or with
 * /CORES/MEM that many cores and MEM GiB of memory. AIQ_EINVAL names the
 * bad part ("nodes-spec: '12x': ..."). */
aiq_rc sim_nodes_from_spec(struct sim_trace *tr, const char *spec,
                           aiq_err *err);

/* ---- readers (one file each) ------------------------------------------ */

/* Our CSV (docs/simulator.md, "CSV format"): a header naming the columns,
 * then one job per line. A bad line fails with AIQ_EPARSE and err->message
 * "FILE:LINE:COL: column 'gpus': expected an integer 0..64, got 'x'"
 * (line/col also in err). path is used for messages only. */
aiq_rc sim_read_csv(FILE *f, const char *path, struct sim_trace *tr,
                    aiq_err *err);

/* Tiresias' simulator job CSV
 * (job_id,num_gpu,submit_time,iterations,model_name,duration,interval). */
aiq_rc sim_read_tiresias(FILE *f, const char *path, struct sim_trace *tr,
                         aiq_err *err);

/* Fits a Tiresias trace's gangs to the cluster in tr->nodes (call once the
 * nodes are known): a job of G GPUs becomes G/d replicas of d GPUs, d the
 * largest divisor of G that is at most the biggest machine's GPUs (8 GPUs
 * on 4-GPU machines: 2 x 4; 12 on 8-GPU machines: 2 x 6; 7 on 4: 7 x 1).
 * CPU and memory stay per replica. AIQ_EINVAL when the cluster has no GPUs
 * or a gang would pass 1024 replicas (naming the job); tr is then
 * partly refitted. */
aiq_rc sim_tiresias_fit_nodes(struct sim_trace *tr, aiq_err *err);

/* Alibaba cluster-trace-gpu-v2023: the pod list
 * (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
 * creation_time,deletion_time,scheduled_time) and, when nodes is not
 * NULL, the node list (sn,cpu_milli,memory_mib,gpu,model). Read the nodes
 * first: fractional GPUs map to GPU memory by the GPU model's memory. */
aiq_rc sim_read_alibaba_nodes(FILE *f, const char *path, struct sim_trace *tr,
                              aiq_err *err);
aiq_rc sim_read_alibaba_pods(FILE *f, const char *path, struct sim_trace *tr,
                             aiq_err *err);

/* Writes tr's jobs in our CSV format (header first). AIQ_EIO on a write
 * error. */
aiq_rc sim_write_csv(const struct sim_trace *tr, FILE *out, aiq_err *err);

/* ---- synthetic traces (trace_gen.c) ------------------------------------ */

struct sim_gen_opts {
    uint64_t seed;
    int njobs;
    int ngroups;           /* default 4 */
    int users_per_group;   /* default 5 */
    double mean_interarrival_s; /* default 120 */
    double gpu_mem_mib;    /* per GPU of whole-GPU jobs, default 40960 */
    /* Added later; zero keeps the traces of older seeds byte for byte. */
    bool tiresias;         /* Tiresias-like: one user and group, no
                            * estimates, priorities or GPU shares, GPUs
                            * 1/2/4/8 (16 when max_gpus allows), durations
                            * lognormal (median 30 min, sigma 1.6) with a
                            * Pareto tail (15% of jobs) */
    int max_gpus;          /* largest job in GPUs (1..16), default 16 */
    double checkpoint_frac;/* jobs that checkpoint, 0..1 (default 0) */
    double checkpoint_s;   /* their interval, default 600 s */
    double elastic_frac;   /* multi-GPU jobs made elastic (N x 1 GPU,
                            * N/2..2N replicas, at most 16), 0..1 */
    /* Task shapes of the FGD paper's workloads (trace_gen_fgd.c, docs/
     * simulator.md "FGD placement on FGD-shaped mixes"): SIM_MIX_NONE
     * keeps the shapes above; the others draw one-replica tasks from the
     * shapes tallied from the openb trace's pod lists. */
    int fgd_mix;           /* SIM_MIX_* */
    /* The users' estimates: with estimates_set, estimate_share of the jobs
     * (0..1) carry one, each the runtime x the user's bias x
     * exp(estimate_noise x N(0,1)) (estimate_noise 0..2), and both are
     * read; without, both are ignored and the defaults below apply. A
     * caller given only one knob sets the other to its default. With a
     * share of 1 the normal draw is made for every job, so traces of one
     * seed differ only in the noise's scale. */
    bool estimates_set;
    double estimate_share, estimate_noise;
};
#define SIM_GEN_ESTIMATE_SHARE 0.8 /* the defaults without estimates_set */
#define SIM_GEN_ESTIMATE_NOISE 0.3
enum { SIM_MIX_NONE = 0, SIM_MIX_WHOLE, SIM_MIX_MULTI, SIM_MIX_SHARE, SIM_MIX_DEFAULT };

/* Appends opts->njobs synthetic jobs to tr: Poisson arrivals with a
 * day/night cycle, lognormal durations (median 1 h) with a Pareto tail,
 * gang sizes 1/2/4/8/16 GPUs, users' estimates off by a per-user bias,
 * several groups of users and a few models per task type. The same seed
 * always gives the same trace. AIQ_EINVAL for njobs < 1; AIQ_ENOMEM. */
aiq_rc sim_generate(struct sim_trace *tr, const struct sim_gen_opts *opts,
                    aiq_err *err);

/* Sets j's shape from FGD mix `mix` (SIM_MIX_WHOLE..SIM_MIX_DEFAULT): the
 * table's shape at u (0..1) of its cumulative weight; replicas 1, gpus,
 * gpu_milli, cpu_milli and mem_bytes as the shape gives them, gpu_mem_mib
 * 0. trace_gen_fgd.c. */
void sim__fgd_shape(int mix, double u, struct sim_job *j);

/* ---- internal helpers shared by the readers (trace_csvrow.c) ---------- */

/* One CSV line split into fields in place (quotes removed). */
struct sim__row {
    char buf[SIM_MAX_LINE + 2];
    char *field[SIM_MAX_FIELDS];
    int col[SIM_MAX_FIELDS];   /* 1-based column of each field */
    int n;
};

/* Reads the next line into row (lineno incremented). Returns 1 for a
 * line, 0 at end of file, -1 for a line over SIM_MAX_LINE (err set). */
int sim__row_read(FILE *f, const char *path, int *lineno, struct sim__row *row,
                  aiq_err *err);

/* Reads the header line into hdr, skipping blank and '#' lines first when
 * comments is set. Returns AIQ_OK, AIQ_ETOOBIG for an over-long line, or
 * AIQ_EPARSE "path:1:1: empty file: expected <expect>" at end of file. */
aiq_rc sim__row_header(FILE *f, const char *path, int *lineno,
                       struct sim__row *hdr, int comments, const char *expect,
                       aiq_err *err);

/* Reads the next data line into row: skips empty lines (and, when
 * comments is set, lines starting with '#') and checks the row has as many
 * fields as hdr. Returns 1 for a row, 0 at end of file, -1 on error with
 * *bad set: AIQ_ETOOBIG for a line over SIM_MAX_LINE, AIQ_EPARSE
 * ("path:line:1: expected N fields as in the header, got M") otherwise. */
int sim__row_next(FILE *f, const char *path, int *lineno,
                  const struct sim__row *hdr, struct sim__row *row,
                  int comments, aiq_rc *bad, aiq_err *err);

/* Index of the header field named name, or -1. */
int sim__row_find(const struct sim__row *hdr, const char *name);

/* Field parsers: an empty field gives def; a bad one fails with AIQ_EPARSE
 * naming path:line:col, the column name and the value. */
aiq_rc sim__get_double(const struct sim__row *r, int idx, const char *name,
                       double lo, double hi, double def, double *out,
                       const char *path, int line, aiq_err *err);
aiq_rc sim__get_i64(const struct sim__row *r, int idx, const char *name,
                    int64_t lo, int64_t hi, int64_t def, int64_t *out,
                    const char *path, int line, aiq_err *err);
/* The field's text, or def when the column is absent or empty. */
const char *sim__get_str(const struct sim__row *r, int idx, const char *def);

#endif
