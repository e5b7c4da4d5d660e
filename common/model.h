/* model.h -- aiq's object model: the four aiq.dev/v1alpha1 kinds as small C
 * structs of our own, plus their validation (which mirrors the CRDs in crds/).
 *
 * Pure C: no json-c or libyaml here. operator/model_json.c fills these
 * structs from json-c objects (and YAML, converted to json-c first).
 *
 * Ownership: every char * and array inside a struct is owned by the struct
 * and released by the matching *_deinit(); *_deinit() on a zeroed struct is
 * a no-op, and leaves the struct zeroed. A parser either fills the whole
 * struct or leaves it zeroed (never half-filled).
 *
 * Units (fixed here so every module agrees):
 *   cpu        millicores (int64)       "500m" -> 500, "2" -> 2000
 *   memory     bytes (int64)            "64Gi" -> 68719476736
 *   gpu memory MiB (int64)              per GPU
 *   durations  seconds (double)         "2h30m" -> 9000
 *   times      unix seconds (double), 0 = unset
 */
#ifndef AIQ_MODEL_H
#define AIQ_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/aiq_err.h"

/* Size limits for hostile input (the CRDs carry the same limits). */
#define AIQ_MAX_NAME 253          /* metadata.name, namespace */
#define AIQ_MAX_AIJOB_NAME 63     /* an AIJob's name: its pods' aiq.dev/job label value */
#define AIQ_MAX_STRING 1024       /* any other short string */
#define AIQ_MAX_FORMULA 4096      /* formula and `when` predicates */
#define AIQ_MAX_LIST 256          /* namespaces, members, levels, ... */
#define AIQ_MAX_LEVELS 16
#define AIQ_MAX_REPLICAS 1024
#define AIQ_MAX_GPUS_PER_REPLICA 64
#define AIQ_MAX_MANIFEST (1 << 20) /* bytes in one manifest document */
#define AIQ_MAX_DEPTH 64          /* JSON/YAML nesting */
#define AIQ_MAX_RESCORE_INTERVAL_S 86400.0 /* QueuePolicy spec.rescoreInterval */

#define AIQ_GROUP "aiq.dev"
#define AIQ_VERSION "v1alpha1"
#define AIQ_API_VERSION "aiq.dev/v1alpha1"
#define AIQ_GATE "aiq.dev/admission"

typedef enum {
    AIQ_KIND_UNKNOWN = 0,
    AIQ_KIND_AIJOB,
    AIQ_KIND_QUEUEPOLICY,
    AIQ_KIND_GROUP,
    AIQ_KIND_USERQUOTA,
} aiq_kind;

/* Common object metadata (what we read of it). */
struct aiq_meta {
    char *name;
    char *namespace_;       /* NULL for cluster-scoped kinds */
    char *uid;
    char *resource_version;
    int64_t generation;
    double creation_time;   /* unix seconds */
    double deletion_time;   /* 0 unless being deleted */
};

/* Quota: -1 in any field means "not limited". */
struct aiq_quota {
    int64_t gpus;
    int64_t gpu_memory_mib; /* total across GPUs */
    int64_t cpu_milli;
    int64_t memory_bytes;
    int64_t jobs;           /* concurrent admitted+running jobs */
};

/* GPU-hour budget per window; gpu_hours < 0 means none. */
struct aiq_budget {
    double gpu_hours;
    double window_s;        /* default 30 days (2592000 s) */
};

/* ---- AIJob ------------------------------------------------------------- */

typedef enum {
    AIQ_PHASE_NONE = 0,  /* status not yet written */
    AIQ_PHASE_PENDING,
    AIQ_PHASE_QUEUED,
    AIQ_PHASE_ADMITTED,
    AIQ_PHASE_RUNNING,
    AIQ_PHASE_SUCCEEDED,
    AIQ_PHASE_FAILED,
    AIQ_PHASE_REJECTED,
    AIQ_PHASE_SUSPENDED,
} aiq_phase;

struct aiq_resources {
    int32_t gpus;              /* whole GPUs per replica, 0..64 */
    int64_t gpu_memory_mib;    /* per GPU (or the share when gpus == 0) */
    int64_t cpu_milli;         /* per replica */
    int64_t memory_bytes;      /* per replica */
    char *gpu_model;           /* optional, e.g. "NVIDIA-A100-SXM4-80GB" */
};

struct aiq_aijob_spec {
    char *user;
    int32_t priority;          /* 0..1000000, default 0 */
    int32_t replicas;          /* 1..1024, default 1 */
    struct aiq_resources resources;
    char *domain;              /* optional node pool */
    double estimated_runtime_s;/* 0 = not given */
    char *task_type;           /* optional, descriptive */
    char *model_name;          /* optional */
    int64_t model_parameters;  /* optional, 0 = not given */
    bool suspend;
    int32_t backoff_limit;     /* 0..100, default 3 */
    char *template_json;       /* the pod template as compact JSON, or NULL */
    /* Elastic jobs: minReplicas..maxReplicas (both 0 = a fixed gang of
     * `replicas`). The decoder sets replicas = min_replicas for an elastic
     * job: the gang it starts with. */
    int32_t min_replicas, max_replicas;
    /* Preemption. */
    bool checkpointable;       /* the workload checkpoints: loses little */
    double checkpoint_interval_s; /* 0 = not said */
    double min_runtime_s;      /* protection asked for; the policy caps it */
    bool non_preemptible;      /* only admins may set it (admission policy) */
};

struct aiq_aijob {
    struct aiq_meta meta;
    struct aiq_aijob_spec spec;
};

/* ---- QueuePolicy ------------------------------------------------------- */

typedef enum { AIQ_PLACE_BINPACK = 0, AIQ_PLACE_SPREAD, AIQ_PLACE_FGD } aiq_placement;
typedef enum { AIQ_BACKFILL_NONE = 0, AIQ_BACKFILL_EASY } aiq_backfill;

struct aiq_level {
    char *name;
    char *when;                /* predicate source; NULL for the catch-all */
};

struct aiq_policy_spec {
    char *formula;             /* priority expression source */
    struct aiq_level *levels;  /* 1..AIQ_MAX_LEVELS, last one the catch-all */
    int nlevels;
    aiq_backfill backfill;
    aiq_placement placement;
    /* spec.placementScore: a placement score over the placement factors
     * (policy/fx_place_factors.def), highest wins; NULL = `placement`. */
    char *placement_score;
    double starvation_after_s; /* 0 = no starvation rule */
    char *starvation_promote_to; /* level name; NULL = the first level */
    double fairshare_half_life_s; /* usage decay half-life, default 7 days */
    /* spec.rescoreInterval: score a waiting job again only when this
     * interval ends or the job changes, its time factors read at the
     * interval's start (q_policy.rescore_interval_s); 0 = every cycle. */
    double rescore_interval_s;
    bool active;
    /* spec.preemption: all off when zero (reclaim of borrowed quota and
     * elastic growth are on unless turned off). */
    bool preempt_lower_levels;    /* lowerLevels */
    bool preempt_within_level;    /* withinLevel present */
    double preempt_score_margin;  /* withinLevel.scoreMargin, >= 0 */
    bool preempt_no_reclaim;      /* reclaimBorrowed: false */
    double preempt_min_runtime_s; /* minRuntime */
    double preempt_max_job_min_runtime_s; /* maxJobMinRuntime, default 1h */
    int32_t preempt_max_per_hour; /* maxPerJobPerHour, 0 = no limit */
    /* spec.elastic */
    bool elastic_no_grow;         /* grow: false */
};

struct aiq_policy {
    struct aiq_meta meta;
    struct aiq_policy_spec spec;
};

/* ---- Group ------------------------------------------------------------- */

struct aiq_member {
    char *user;
    int32_t level;             /* user level inside the group, 0..1000 */
};

struct aiq_group_spec {
    int32_t level;             /* group level, 0..1000 */
    char **namespaces;
    int nnamespaces;
    struct aiq_quota quota;
    struct aiq_budget budget;
    struct aiq_member *members;
    int nmembers;
    double shares;             /* fair-share weight; 0 = derive from quota */
    /* Borrowing (Kueue cohorts): groups naming the same cohort lend each
     * other unused quota. NULL = no cohort (the quota is a hard cap). */
    char *cohort;
    struct aiq_quota borrowing_limit; /* -1 field: unlimited */
    struct aiq_quota lending_limit;   /* -1 field: all of the quota */
};

struct aiq_group {
    struct aiq_meta meta;
    struct aiq_group_spec spec;
};

/* ---- UserQuota --------------------------------------------------------- */

struct aiq_userquota_spec {
    char *user;
    struct aiq_quota quota;
    struct aiq_budget budget;
};

struct aiq_userquota {
    struct aiq_meta meta;
    struct aiq_userquota_spec spec;
};

/* ---- functions (common/model.c) --------------------------------------- */

/* Sets q to "nothing limited" (all -1). */
void aiq_quota_unlimited(struct aiq_quota *q);

void aiq_meta_deinit(struct aiq_meta *m);
void aiq_aijob_deinit(struct aiq_aijob *j);
void aiq_policy_deinit(struct aiq_policy *p);
void aiq_group_deinit(struct aiq_group *g);
void aiq_userquota_deinit(struct aiq_userquota *u);

/* Validate a filled struct against the rules the CRD schema states
 * (ranges, required fields, cross-field rules). Returns AIQ_OK or
 * AIQ_EINVAL with err->field set ("spec.resources.gpus") and a message
 * that names the field and the bad value
 * ("spec.resources.gpus: must be >= 0, got -3"). */
aiq_rc aiq_aijob_validate(const struct aiq_aijob *j, aiq_err *err);

/* True when s is a valid object name (RFC 1123 subdomain, at most 253). */
bool aiq_is_dns_subdomain(const char *s);
aiq_rc aiq_policy_validate(const struct aiq_policy *p, aiq_err *err);
aiq_rc aiq_group_validate(const struct aiq_group *g, aiq_err *err);
aiq_rc aiq_userquota_validate(const struct aiq_userquota *u, aiq_err *err);

/* Phase <-> "Pending" ... ; aiq_phase_parse returns AIQ_PHASE_NONE for
 * unknown text. */
const char *aiq_phase_name(aiq_phase p);
aiq_phase aiq_phase_parse(const char *s);

/* "AIJob" ... ; aiq_kind_parse returns AIQ_KIND_UNKNOWN. */
const char *aiq_kind_name(aiq_kind k);
aiq_kind aiq_kind_parse(const char *s);

#endif
