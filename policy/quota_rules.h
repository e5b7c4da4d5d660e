/* quota_rules.h -- which UserQuotas of a group are accepted: the sum of
 * the accepted user quotas never passes the group's quota or budget.
 * Pure C, no I/O.
 *
 * Rules (docs/quota-rules.md):
 *  - UserQuotas are considered oldest first (creation time), then by name,
 *    then by their order in the input; each is accepted when, added to the
 *    ones accepted before it, no resource passes the group's limit.
 *  - Resources: gpus, gpuMemoryMiB, cpu, memory, jobs and the GPU-hour
 *    budget. A group resource of -1 (unlimited) never rejects anything.
 *  - An unlimited (-1) user resource inside a limited group counts as the
 *    whole group quota: it is accepted only when nothing of that resource
 *    is allotted yet, and afterwards nothing more of it can be.
 *  - Budgets with different windows are compared per the group's window
 *    (the user's GPU-hours scaled by groupWindow / userWindow).
 *  - A second UserQuota for a user who already has an accepted one is
 *    rejected.
 * A rejected UserQuota gets one message naming the first resource that
 * does not fit and both numbers, in units people read:
 *   "sum of user quotas for gpus would be 20, group vision has 16" */
#ifndef AIQ_QUOTA_RULES_H
#define AIQ_QUOTA_RULES_H

#include <stdbool.h>

#include "common/aiq_err.h"
#include "common/model.h"

/* One UserQuota, borrowed from the caller. name should be unique within
 * the group (use "namespace/name" when the group spans namespaces). */
struct qr_entry {
    const char *name;
    const char *user;
    double creation_time;      /* unix seconds */
    struct aiq_quota quota;
    struct aiq_budget budget;  /* gpu_hours < 0: none (unlimited) */
};

struct qr_verdict {
    bool accepted;
    char message[256];         /* "" when accepted */
};

/* What the accepted UserQuotas add up to (for Group status). A field is
 * -1 when the group does not limit that resource. */
struct qr_allotted {
    struct aiq_quota quota;
    double budget_gpu_hours;   /* per the group's window; -1 without budget */
};

/* Decides every entry of e[0..n) against the group `group` (its name, for
 * messages) with quota gq and budget gb (gb may be NULL: no budget).
 * out (n entries, caller-owned) gets one verdict per entry, in input
 * order; allotted (may be NULL) gets the accepted sums. Deterministic:
 * the same input in any order gives the same verdicts, as long as names
 * are unique. Returns AIQ_OK, AIQ_EINVAL for NULL arguments or n < 0, or
 * AIQ_ENOMEM; after an error out is untouched. */
aiq_rc qr_decide(const char *group, const struct aiq_quota *gq,
                 const struct aiq_budget *gb, const struct qr_entry *e,
                 int n, struct qr_verdict *out, struct qr_allotted *allotted,
                 aiq_err *err);

/* Human units: cpu millicores as "4" or "1500m", memory bytes as "64Gi",
 * "512Mi" or bytes. Write into buf (cap bytes); return buf. */
const char *qr_format_cpu(int64_t milli, char *buf, size_t cap);
const char *qr_format_memory(int64_t bytes, char *buf, size_t cap);

#endif
