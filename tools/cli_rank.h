/* cli_rank.h -- what `kubectl aiq` knows about a queued job, read from
 * the API objects alone (no SQLite), and the queue order a policy would
 * give: the factor vector of each job rebuilt from its spec and status
 * and from the Group/UserQuota objects, and a local ranking under a
 * compiled policy (policy/policy_adapter.h, the same code the
 * operator scores with).
 *
 * Some factors live only in the operator's store (decayed usage,
 * attained GPU time of earlier attempts); those are rebuilt from what
 * the objects' status shows and flagged in cli_job.approx, so the tool
 * can say which numbers are approximate. */
#ifndef AIQ_TOOLS_CLI_RANK_H
#define AIQ_TOOLS_CLI_RANK_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "policy/policy_adapter.h"
#include "policy/fx.h"

#define CLI_MAX_JOBS 20000

/* The cluster as the objects show it. Arrays borrowed; statuses may be
 * NULL. Group/UserQuota structs are decoded with operator/manifest.h. */
struct cli_world {
    const struct aiq_group *groups;
    json_object *const *group_status;
    int ngroups;
    const struct aiq_userquota *uqs;
    json_object *const *uq_status;
    int nuqs;
    double now;           /* unix seconds */
    double free_gpus;     /* GPUs not used by admitted/running jobs */
    double total_gpus;    /* nvidia.com/gpu on the nodes */
};

/* One AIJob as the tool shows it. */
struct cli_job {
    char ns[AIQ_MAX_NAME + 1], name[AIQ_MAX_NAME + 1], uid[128];
    char user[AIQ_MAX_NAME + 1], group[AIQ_MAX_NAME + 1];
    char phase[16], level[64], reason[64], message[512];
    int position;            /* status.position, 0 = none */
    bool has_score;
    double score;            /* status.score */
    long gpus;               /* replicas x gpus */
    double queued, created, eta; /* unix s; 0 = unknown */
    int attempts;
    double at;               /* the world's now the factors were rebuilt at */
    double f[FX_NFACTORS];   /* rebuilt factors */
    uint64_t approx;         /* bit i set: factor i is approximate */
    /* filled by cli_rank */
    int new_level;
    double new_score;
    int new_position;
};

/* Reads one AIJob object (borrowed) into *out, rebuilding its factors
 * from w. The spec is decoded strictly (operator/manifest.h), so a job
 * the API server accepted always loads. AIQ_EINVAL naming the field for
 * a malformed object; *out is zeroed after an error. */
aiq_rc cli_job_load(json_object *obj, const struct cli_world *w,
                    struct cli_job *out, aiq_err *err);

/* Sets j's wait.hours and job.age_hours at the clock p scores with at
 * j->at (its rescore interval's start, operator's q_score_clock), or at
 * j->at itself when p is NULL. cli_rank does it for its policy. */
void cli_job_clock(struct cli_job *j, const oppolicy *p);

/* True for the phases that wait in the queue (Pending, Queued, or no
 * status yet). */
bool cli_job_waiting(const struct cli_job *j);

/* Scores and levels jobs[0..n) under p (their time factors at p's clock,
 * cli_job_clock) and sets new_level, new_score and
 * new_position (1-based: level first, then score high first, then queued
 * time, then ns/name), as the queue orders them. AIQ_ENOMEM, or
 * AIQ_ETOOBIG past CLI_MAX_JOBS; positions are unchanged after an error. */
aiq_rc cli_rank(oppolicy *p, struct cli_job *jobs, int n, aiq_err *err);

/* Sorts jobs by (old) position, jobs without one last, then ns/name. */
void cli_sort_by_position(struct cli_job *jobs, int n);

/* Classic fair share 2^(-U/S) of group g (index into w->groups, -1 for
 * none: both 1) and of user in it, as operator/cycle.c computes it, but
 * from the window GPU-hours the statuses show (the operator uses its
 * decayed usage, so this is an approximation). */
void cli_fairshare(const struct cli_world *w, int g, const char *user,
                   double *fs_group, double *fs_user);

/* The Group a namespace belongs to (index into w->groups) or -1. */
int cli_group_of_ns(const struct cli_world *w, const char *ns);

/* The factors src (a formula or a level's `when`; NULL: none) mentions,
 * found by a word-boundary search: bit i set for fx_factor_name(i). */
uint64_t cli_factors_used(const char *src);

#endif
