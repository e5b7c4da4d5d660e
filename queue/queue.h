/* queue.h -- aiq's queue core: one scheduling cycle over pending and
 * running jobs (multi-level ordering, user/group quota and GPU-hour budgets,
 * gang fit, GPU-memory placement, EASY backfill and start-time estimates).
 *
 * Pure C, no I/O, no globals. The caller (operator, simulator, bench)
 * builds a q_input every cycle from its own objects; names are borrowed
 * const char * and must stay valid while the cycle runs and while messages
 * are formatted from its output. Ids are array indexes into q_input.
 *
 * The queue never calls policy/ directly: it fills each pending job's factor
 * vector (indexed by Q_F_<id>, the same order as FX_F_<id> in
 * policy/fx_factors.def) and asks a q_scorer for a score and a level.
 *
 * docs/queue.md describes the cycle, the ordering, quota, placement,
 * backfill, the estimates and the incremental strategy. */
#ifndef AIQ_QUEUE_H
#define AIQ_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/aiq_err.h"
#include "common/model.h"

/* Factor indexes, generated from the language's factor list. */
enum {
#define FX_FACTOR(id, name, unit, moves, doc) Q_F_##id,
#include "policy/fx_factors.def"
#undef FX_FACTOR
    Q_NFACTORS
};

#define Q_MAX_GPUS 64         /* GPUs on one node (q_place.gpu_mask bits) */
#define Q_MAX_JOBS 4000000    /* jobs in one input */
#define Q_MAX_NODES 1000000   /* nodes in one input */

/* ---- input ----------------------------------------------------------- */

/* One node. gpu_mem_used counts everything on the GPU (a GPU held whole by
 * a job has used == total); cpu_used/mem_used likewise include running
 * jobs. domain/gpu_model may be NULL (= ""). */
struct q_node {
    const char *name;
    const char *domain;
    const char *gpu_model;
    int ngpus;                          /* 0..Q_MAX_GPUS */
    int64_t gpu_mem_total[Q_MAX_GPUS];  /* MiB per GPU */
    int64_t gpu_mem_used[Q_MAX_GPUS];   /* MiB per GPU */
    int64_t cpu_alloc, cpu_used;        /* millicores */
    int64_t mem_alloc, mem_used;        /* bytes */
    bool schedulable;
    bool util_known;
    double gpu_util[Q_MAX_GPUS];  /* 0..1 busy per GPU, valid when util_known */
    const char *topology;         /* rack / NVLink block label; NULL = none */
};

/* One class of the target workload of FGD placement (Weng et al., ATC'23):
 * the shape of one replica and how much of the workload it is (weight >=
 * 0, relative). gpus 0 with gpu_memory_mib > 0 or gpu_milli > 0 is a GPU
 * share (MiB, or thousandths of the GPU it would land on, as in q_job);
 * gpus 0 and neither a CPU-only task. The paper weighs a class by how
 * many tasks it has; where aiq builds a workload (from the cycle's jobs,
 * aiq-sim inflate's trace) it weighs it by the GPUs those tasks ask for,
 * replicas x q_class_gpu_demand (docs/queue.md, "Placement", fgd). */
struct q_task_class {
    int gpus;
    int64_t gpu_memory_mib;     /* per GPU; the share when gpus == 0 */
    int64_t cpu_milli;
    int64_t memory_bytes;
    double weight;
    int gpu_milli;              /* 1..999: a fractional share; 0 none */
};

#define Q_MAX_CLASSES 64      /* task classes in one workload */

/* A group (Group object). quota fields -1 = unlimited; budget_gpu_hours < 0
 * = no budget. usage/fairshare come from history and feed factors only. */
struct q_group {
    const char *name;
    int level;
    struct aiq_quota quota;
    double budget_gpu_hours;
    double used_gpu_hours;      /* consumed in the current window */
    double window_end;          /* unix seconds, 0 = unknown */
    double usage_gpu_hours;     /* decayed usage (usage.group_gpu_hours) */
    double fairshare;           /* fairshare.group */
    /* Borrowing (Kueue's cohorts). Groups with the same cohort > 0 lend
     * each other the quota they do not use: such a group may run above
     * its quota (by at most borrowing_limit) while the cohort has unused
     * lendable quota, and lends at most lending_limit of its own quota.
     * A field of -1 is unlimited (borrowing) or "all of the quota"
     * (lending). cohort 0: no borrowing, the quota is a hard cap (both
     * limits are then ignored). Jobs quota is never borrowed. */
    int cohort;
    struct aiq_quota borrowing_limit;
    struct aiq_quota lending_limit;
};

/* A user inside one group (UserQuota + Group.members). group is an index
 * into q_input.groups or -1. */
struct q_user {
    const char *name;
    int group;
    int level;
    struct aiq_quota quota;
    double budget_gpu_hours;
    double used_gpu_hours;
    double window_end;
    double usage_gpu_hours;
    double fairshare;
};

/* Where one replica runs: node index, GPUs (bit i = GPU i) and the GPU
 * memory it holds per GPU. */
struct q_place {
    int32_t node;
    uint64_t gpu_mask;
    int64_t gpu_mem_mib;
};

typedef enum {
    Q_JOB_PENDING = 0,  /* waits for a decision */
    Q_JOB_RUNNING,      /* admitted or running: holds quota and placement */
} q_jstate;

/* One job. Pending and running jobs share the array. A running job must
 * carry `replicas` placements and its predicted end (0 = unknown).
 *
 * Elastic jobs (max_replicas > 0): a pending one starts as a gang of
 * min_replicas (replicas is then ignored); a running one has `replicas`
 * placements and may grow up to max_replicas into idle capacity or be
 * shrunk from the top (replica indexes >= the new size) down to
 * min_replicas. min_replicas 0 = replicas, max_replicas 0 = not elastic.
 *
 * Preemption: a running job named as a victim (q_output.actions) keeps
 * its resources, quota and placement until the caller says it is gone:
 * until then the caller passes it with terminating set (a shrink: with
 * `stopping` top replicas being stopped, `replicas` still counting them),
 * and the queue never counts those resources as free, only as "soon
 * free" for the job it preempted them for. */
struct q_job {
    const char *key;            /* "namespace/name" */
    const char *uid;            /* stable identity across cycles */
    /* Optional, 0 = none: a number the caller derives from uid alone (a
     * hash of it), so that the same uid always gives the same ident.
     * A job whose ident and gen both equal those of the entry at its
     * slot last cycle is taken as that job without comparing uids (two
     * cold strings per job per cycle); any other job is matched by uid.
     * Two jobs would be confused only if the hashes of both their uids
     * and their gens collided. */
    uint64_t ident;
    uint64_t gen;               /* bump when anything below changes */
    int user, group;            /* indexes or -1 */
    int priority;
    int replicas;               /* 1..AIQ_MAX_REPLICAS */
    int gpus;                   /* whole GPUs per replica */
    int64_t gpu_memory_mib;     /* per GPU; the share when gpus == 0 */
    /* A GPU share as a fraction of the GPU it lands on, in thousandths
     * (1..999; 0 = none): needs gpus == 0 and gpu_memory_mib == 0. On a
     * GPU of T MiB it takes floor(T x gpu_milli / 1000) MiB (at least 1),
     * so fractions that add up to at most one GPU fit on it; its
     * placement's gpu_mem_mib records the MiB (docs/queue.md, "GPU
     * shares"). */
    int gpu_milli;
    int64_t cpu_milli;          /* per replica */
    int64_t memory_bytes;       /* per replica */
    const char *gpu_model;      /* NULL = any */
    const char *domain;         /* NULL = any (a gang still uses one) */
    q_jstate state;
    double created, queued;     /* unix seconds */
    double est_runtime_s;       /* the user's estimate, 0 = none */
    double pred_runtime_s;      /* predicted, 0 = fall back to estimate */
    double attained_gpu_hours;
    int attempts;
    bool suspended;
    double end_time;            /* running: predicted end, 0 = unknown */
    const struct q_place *placement; /* running: `replicas` entries */
    /* Elastic range (see above); 0 = a fixed gang of `replicas`. */
    int min_replicas, max_replicas;
    /* Preemption inputs; all zero for a job that never was preempted. */
    bool checkpointable;        /* declares it checkpoints (loses little) */
    bool non_preemptible;       /* granted by an admin: never a victim */
    bool terminating;           /* running: being stopped (still holds all) */
    int stopping;               /* running: top replicas being stopped */
    int preemptions;            /* times preempted so far */
    int preemptions_1h;         /* of those, in the hour before now */
    double started;             /* running: start of this run, 0 = unknown */
    double min_runtime_s;       /* protection it asks for (policy caps it) */
    double checkpoint_interval_s; /* checkpointable: bounds the lost work;
                                   * 0 = unknown (counted as none lost) */
    /* Running elastic job: nodes its growth must not use (indexes into
     * q_input.nodes), e.g. where its last grown replicas did not start;
     * at most Q_MAX_GROW_AVOID, NULL = none. */
    const int32_t *grow_avoid;
    int ngrow_avoid;
};
#define Q_MAX_GROW_AVOID 16

struct q_policy {
    int nlevels;                /* 1..AIQ_MAX_LEVELS */
    const char *const *level_names;
    aiq_backfill backfill;
    aiq_placement placement;
    double starvation_after_s;  /* 0 = off */
    int promote_to;             /* level index a starved job moves to */
    /* Rescore interval (as Slurm's PriorityCalcPeriod); 0 = rescore every
     * job every cycle. With an interval I a waiting job's time factors
     * (wait.hours, job.age_hours) are read at the start of the interval
     * now is in (floor(now / I) * I), and a job is scored again only when
     * the interval ends, the job changes (gen, user or group index), a
     * user's or group's level changes or in->gen does. Exact only for
     * a scorer that reads nothing else that changes between cycles
     * (usage, fair share, quota shares, free GPUs, budgets): the
     * QueuePolicy compiler refuses such a formula with an interval
     * (policy_adapter.c). */
    double rescore_interval_s;
    /* Preemption (docs/queue.md). All zero = never preempt (elastic
     * shrinking and cohort reclaim still apply). */
    bool preempt_lower;         /* a job may preempt jobs in lower levels */
    bool preempt_within;        /* ... and in its own level when its score
                                 * beats theirs by preempt_margin or more */
    double preempt_margin;
    bool no_reclaim;            /* borrowed cohort quota is not taken back */
    double min_runtime_s;       /* nobody is preempted before running this */
    double max_job_min_runtime_s; /* cap of a job's own min_runtime_s */
    int max_preemptions_per_hour; /* per job; 0 = no limit */
    bool no_grow;               /* elastic jobs never grow */
};

struct q_input {
    double now;
    const struct q_node *nodes;   int nnodes;
    const struct q_group *groups; int ngroups;
    const struct q_user *users;   int nusers;
    const struct q_job *jobs;     int njobs;
    struct q_policy policy;
    /* Bump when the policy, scorer, users or groups change: every cached
     * score and level is then recomputed. */
    uint64_t gen;
    /* Optional (zero = off). lazy_eta: the cycle does not run the start
     * time estimate; a waiting job's res[].eta stays 0 until q_eta() asks
     * for it (or for a job behind it in the queue order). Decisions,
     * positions and every other field are the same either way. */
    bool lazy_eta;
    /* The caller carries out q_output.actions (stops victims, resizes
     * elastic jobs) and passes jobs being stopped back as terminating /
     * stopping. Without it the cycle never preempts, shrinks, grows or
     * reclaims, whatever the policy says: a job would otherwise wait for
     * victims nobody stops. */
    bool actions_on;
    /* FGD placement's target workload (docs/queue.md, "Placement").
     * nworkload 0: the classes of the input's own jobs (pending and
     * running), the Q_MAX_CLASSES most common. Read only when the policy's
     * placement is fgd or a placement score is set. */
    const struct q_task_class *workload; int nworkload;
    /* A placement score (QueuePolicy.spec.placementScore): when non-NULL it
     * ranks the candidates instead of policy.placement (see q_placer). */
    const struct q_placer *placer;
};

/* Score and level for one factor vector. Both return 0 on success; a
 * failure leaves the job with score 0 in the last level (score_failed). */
typedef struct q_scorer {
    void *ctx;
    int (*score)(void *ctx, const double *factors, double *score);
    int (*level)(void *ctx, const double *factors, int *level_index);
} q_scorer;

/* Placement factor indexes, generated from the placement factor list. */
enum {
#define FX_PFACTOR(id, name, unit, doc) Q_PF_##id,
#include "policy/fx_place_factors.def"
#undef FX_PFACTOR
    Q_NPFACTORS
};

/* A placement score: one number per candidate (a node and the GPUs one
 * replica would take there) from its factor vector (Q_PF_<id>); the
 * highest wins. Returns 0, or nonzero when it cannot score: that
 * candidate then ranks below every scored one and q_output counts it. */
typedef struct q_placer {
    void *ctx;
    int (*score)(void *ctx, const double *pfactors, double *score);
} q_placer;

/* The FGD fragmentation measure of one node for a workload: the expected
 * GPU capacity (in GPUs; a partly used GPU counts its free fraction) that
 * a task drawn from w cannot use on n. Per class: all free GPU capacity
 * when one replica does not fit (GPUs, memory, cpu or host memory); else
 * for a share the free capacity of GPUs with less free memory than it
 * asks, for whole GPUs that of GPUs not wholly free or too small; a
 * CPU-only task that fits leaves no fragment. Classes weigh
 * weight / sum of weights; 0 when w is empty or weighs nothing. */
double q_frag_node(const struct q_node *n, const struct q_task_class *w, int nw);

/* Tells whether a queue position moved enough to be told (1-based; 0 =
 * none): appearing or going, any change while either is within the first
 * 10, beyond that a move of more than 10% of the old position. The
 * status economy (a status rewritten) and the decision journal (a wait
 * journaled again) both use it, in the operator and in aiq-sim alike, so
 * one arrival at the head does not rewrite or journal every job behind. */
bool q_pos_moved(int was_pos, int pos);

/* The GPUs one replica of class c asks for: its whole GPUs, its share's
 * fraction (gpu_milli / 1000, or its MiB over mean_gpu_mib, the cluster's
 * mean GPU memory; 0 when that is not > 0), 0 for a CPU-only task. */
double q_class_gpu_demand(const struct q_task_class *c, double mean_gpu_mib);

/* ---- output ---------------------------------------------------------- */

typedef enum {
    Q_DEC_NONE = 0,   /* not a pending job, or a running one left alone */
    Q_DEC_ADMIT,
    Q_DEC_WAIT,
    Q_DEC_REJECT,
    Q_DEC_PREEMPT,    /* running: stop it (whole gang) for res.blocker */
    Q_DEC_RESIZE,     /* running: new size res.nplace (shrink or grow) */
} q_decision;

typedef enum {
    Q_R_NONE = 0,       /* admitted */
    Q_R_SUSPENDED,      /* spec.suspend */
    Q_R_QUOTA,          /* user/group concurrent quota full */
    Q_R_BUDGET,         /* user/group GPU-hour budget exhausted */
    Q_R_CAPACITY,       /* no free place for the gang now */
    Q_R_BLOCKED,        /* behind a job that cannot start (ordering) */
    Q_R_NO_NODE,        /* reject: no node with the model/domain */
    Q_R_NODE_TOO_SMALL, /* reject: one replica fits no node */
    Q_R_GANG_TOO_BIG,   /* reject: the gang fits no domain */
    Q_R_OVER_QUOTA,     /* reject: bigger than the quota itself */
    Q_R_OVER_BUDGET,    /* reject: bigger than the budget itself */
    Q_R_INVALID,        /* reject: the job's fields are out of range */
    Q_R_SCORE_ERROR,    /* never decided by the queue (see score_failed);
                         * free for callers' own bookkeeping */
    Q_R_PREEMPTING,     /* wait: jobs are being stopped to make room
                         * for it (inuse: how many this cycle) */
    Q_R_BORROW,         /* wait: its cohort has no quota left to lend
                         * (need, limit = lendable, inuse = lent plus
                         * what the lenders' pending jobs hold) */
    Q_R_PREEMPTED,      /* running, preempt: by a job of a higher level */
    Q_R_PREEMPTED_SCORE,/* running, preempt: same level, score margin */
    Q_R_RECLAIMED,      /* running, preempt: its group borrowed the quota */
    Q_R_SHRUNK,         /* running, resize: elastic, made smaller */
    Q_R_GROWN,          /* running or admitted, resize: elastic growth */
    Q__NREASONS
} q_reason;

/* Resource kinds for quota messages. */
typedef enum {
    Q_RES_GPUS = 0, Q_RES_GPU_MEM, Q_RES_CPU, Q_RES_MEM, Q_RES_JOBS, Q__NRES
} q_res;

/* What stopped a replica from fitting a node (Q_R_NODE_TOO_SMALL). */
typedef enum {
    Q_TOO_GPUS = 0, Q_TOO_GPU_MEM, Q_TOO_CPU, Q_TOO_MEM, Q_TOO_COMBINED
} q_too;

/* One job's outcome: 64 bytes, so a cycle over 100k jobs writes one cache
 * line per job. */
struct q_result {
    double score;
    double eta;            /* estimated start, unix seconds; 0 = unknown */
    union {
        struct {           /* quota waits, rejects, invalid fields */
            int64_t need, limit, inuse; /* numbers for the message */
        };
        struct {           /* budget waits and over-budget rejects */
            double t;      /* wait: window end; reject: the job's GPU-hours */
            double t2;     /* the budget in GPU-hours */
        };
    };
    int32_t pos;           /* 1-based over all levels; 0 = not queued */
    int32_t pos_level;     /* 1-based within the level */
    int32_t blocker;       /* Q_R_BLOCKED: job index of the head */
    int32_t place_off;     /* admitted: placements in q_output.places */
    int16_t level;         /* level index */
    int16_t nplace;        /* admitted: number of placements (= replicas) */
    uint8_t decision;      /* q_decision */
    uint8_t reason;        /* q_reason */
    uint8_t res : 4;       /* q_res, q_too or the invalid field */
    uint8_t group_scope : 1; /* quota/budget: 1 = group, 0 = user */
    bool promoted : 1;     /* moved up by the starvation rule */
    bool score_failed : 1;
    bool backfilled : 1;   /* admitted past a reserved head job */
};

/* What the caller must do to a running job (or one admitted this cycle,
 * for growth). Every cycle lists its actions in a fixed order: shrinks and
 * preemptions in the order of the jobs they make room for, then growth.
 *   Q_ACT_PREEMPT  stop the whole gang gracefully (for_job, reason); the
 *                  job goes back to the queue keeping its attained
 *                  service; it does not count against backoffLimit.
 *                  Until its pods are gone pass it with terminating.
 *   Q_ACT_SHRINK   stop replicas [replicas, old size) gracefully; until
 *                  they are gone pass `stopping` = how many are left.
 *   Q_ACT_GROW     start replicas [old size, replicas) at the nplace
 *                  placements from place_off in q_output.places. */
typedef enum { Q_ACT_PREEMPT = 1, Q_ACT_SHRINK, Q_ACT_GROW } q_act_kind;

struct q_action {
    int32_t job;        /* index into q_input.jobs */
    int32_t for_job;    /* pending job the room is for; -1 (growth) */
    int32_t replicas;   /* shrink/grow: the new size; preempt: 0 */
    int32_t place_off;  /* grow: first new placement */
    int32_t nplace;     /* grow: new placements (= replicas - old size) */
    uint8_t kind;       /* q_act_kind */
    uint8_t reason;     /* q_reason: Q_R_PREEMPTED ... Q_R_GROWN */
};

/* Per-cycle output; arrays belong to the q_state and stay valid until the
 * next q_cycle_run on that state or q_state_free. */
typedef struct q_output {
    int njobs;
    struct q_result *res;        /* one per input job (index = job index) */
    const int32_t *order;        /* pending jobs in queue order (job idx) */
    int norder;
    const struct q_place *places;
    int nadmitted;
    int reserved_job;            /* backfill head with a reservation, -1 */
    double reserved_time;        /* its reserved start */
    int nscored;                 /* scorer calls this cycle (incremental) */
    const struct q_action *actions; /* preemptions and resizes, see above */
    int nactions;
    int nsearched;               /* victim searches this cycle (bounded) */
    int nplace_score_errors;     /* placement score calls that failed */
} q_output;

/* ---- API ------------------------------------------------------------- */

typedef struct q_state q_state;

/* Optional allocator hook; all queue memory goes through it (NULL: libc).
 * free gets the size that was allocated. */
struct q_alloc {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *p, size_t size);
};

/* Creates the cross-cycle state (caches, scratch, output arrays). alloc is
 * copied; NULL means malloc/free. Returns NULL when out of memory. */
q_state *q_state_create(const struct q_alloc *alloc);

/* Frees st and everything it owns; q_state_free(NULL) does nothing. */
void q_state_free(q_state *st);

/* Bytes the state holds now and at most so far (allocations it made). */
size_t q_state_bytes(const q_state *st);
size_t q_state_peak_bytes(const q_state *st);

/* Forgets every cached score, level and order: the next cycle redoes all
 * the work (like bumping q_input.gen). */
void q_state_invalidate(q_state *st);

/* Runs one cycle over in with scorer sc (borrowed; score may be NULL =
 * priority, level may be NULL = level 0). Fills *out (arrays owned by st).
 * Returns AIQ_OK, AIQ_EINVAL for malformed input (err names the field and
 * value, e.g. "nodes[3].ngpus: must be 0..64, got 80") or AIQ_ENOMEM. On
 * error *out is emptied and the caches are invalidated. */
aiq_rc q_cycle_run(q_state *st, const struct q_input *in, const q_scorer *sc,
                   q_output *out, aiq_err *err);

/* Estimated start of job j (unix seconds, 0 = unknown or not waiting) from
 * the cycle that produced out on st, with in that cycle's input (borrowed,
 * unchanged). Without in->lazy_eta it returns out->res[j].eta. With it,
 * the first call runs the estimate up to j's place in the queue order and
 * stores it, and every estimate before it, in out->res[].eta; later calls
 * continue from there, so asking in queue order costs one pass in all and
 * asking only for the first N jobs costs about N steps. Equal to the eager
 * estimate. Returns AIQ_OK with *eta set, AIQ_EINVAL when out is not st's
 * latest output or j is out of range, AIQ_ENOMEM (then every later q_eta
 * on this output fails too; the next cycle is unaffected). */
aiq_rc q_eta(q_state *st, const struct q_input *in, q_output *out, int j,
             double *eta);

/* The clock a waiting job's wait.hours and job.age_hours are read at
 * under p at now: now, or with a rescore interval the interval's start
 * (q_policy.rescore_interval_s). For tools that rebuild the factors. */
double q_score_clock(const struct q_policy *p, double now);

/* Fills f[Q_NFACTORS] with the factor values job j of in was scored with
 * in st's latest cycle: the same function the cycle uses, reading the
 * start-of-cycle accounting it kept (GPUs in use, committed budget, free
 * GPUs) rather than the walk's running totals. A running job gets the
 * vector it is ranked with to choose victims and growth (waited 0 hours,
 * attained service including this run, job.running 1). Exact for every
 * job scored in that cycle, and with a rescore interval for a kept score
 * too when the scorer reads only what q_policy.rescore_interval_s allows
 * (a waiting job's clock is the interval's start either way). in must be
 * the input of st's latest cycle; j must be in range (otherwise f is zeroed). */
void q_job_factors(const q_state *st, const struct q_input *in, int j,
                   double *f);

/* Formats the one-line message for job j of out into buf (cap bytes, always
 * NUL-terminated when cap > 0), e.g. "waiting for 3 GPUs in group vision
 * (quota 16, in use 15)". in must be the input of that cycle. Returns the
 * length the full message has (like snprintf). */
int q_message(const struct q_input *in, const q_output *out, int j,
              char *buf, size_t cap);

/* Formats t (unix seconds) as RFC 3339 UTC "2026-12-01T00:00:00Z". */
int q_rfc3339(double t, char *buf, size_t cap);

/* Static names: "admit", "wait", "reject"; "quota", "capacity", ... */
const char *q_decision_name(q_decision d);
const char *q_reason_name(q_reason r);

#endif
