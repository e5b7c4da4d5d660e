/* cli_headroom.h -- what a waiting job needs against what is free or left,
 * one row per resource, for `kubectl aiq explain`: GPUs, GPU memory (per
 * GPU for a whole-GPU job, on one shared GPU for a shared job), cpu and
 * memory on the nodes, then the group's and user's quota and GPU-hour
 * budget. Amounts in human units ("40 GiB", "1.5 cores"); each row says
 * whether it blocks the job on its own.
 *
 * Node rows count, for that resource alone, how many of the job's
 * replicas the free capacity holds (summed over the usable nodes); a last
 * "together" row blocks when every resource fits alone but no domain has
 * them on the same nodes. This is the queue's fit (queue/place.c) per
 * resource, without backfill reservations or claims of preempting jobs,
 * which the objects do not show. Pure: no I/O. */
#ifndef AIQ_TOOLS_CLI_HEADROOM_H
#define AIQ_TOOLS_CLI_HEADROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/model.h"
#include "queue/queue.h"

#define CLI_HR_MAX_ROWS 24

/* The job's request. */
struct cli_hr_ask {
    int replicas;            /* >= 1 */
    int gpus;                /* whole GPUs per replica */
    int64_t gpu_mem_mib;     /* per GPU, or the share when gpus == 0 */
    int64_t cpu_milli, mem_bytes; /* per replica */
    double runtime_s;        /* predicted or estimated, 0 unknown (budget) */
    const char *gpu_model;   /* NULL: any */
    const char *domain;      /* NULL: any */
};

/* One owner's limits and use: quota fields -1 = unlimited, budget
 * gpu_hours < 0 = none. */
struct cli_hr_owner {
    const char *label;       /* "group team", "user alice" (borrowed) */
    struct aiq_quota quota, used;
    double budget_gpu_hours, used_gpu_hours;
};

struct cli_hr_row {
    char resource[64];       /* "GPUs", "cpu", "group team gpus" ... */
    char need[192];
    char avail[256];
    bool blocks;
};

/* Fills rows[0..max) for ask against nodes[0..nn) (free capacity: total
 * minus used; only schedulable nodes count; nn < 0: the nodes are not
 * known, e.g. not readable, and no capacity row is written) and
 * owners[0..nown). Rows for
 * resources the job does not ask for, and unlimited quotas, are left out.
 * Returns the number of rows written. */
int cli_headroom(const struct q_node *nodes, int nn, const struct cli_hr_ask *ask,
                 const struct cli_hr_owner *owners, int nown, struct cli_hr_row *rows,
                 int max);

/* Millicores as cores: "1 core", "2 cores", "0.5 cores", "1.25 cores". */
const char *cli_cores_text(char *buf, size_t cap, int64_t milli);

#endif
