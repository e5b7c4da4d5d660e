/* cycle.c -- one queue cycle: level-triggered sync of every job, the
 * queue input built from the caches and the store (nodes with the GPU
 * memory held by admitted gangs, groups with quota, budget, cohort and
 * limits, users, decayed usage and fair share, pending and running jobs,
 * jobs being torn down as terminating with the placement their pods still
 * hold), q_cycle_run with the active policy (actions_on), and the
 * actions: admitted gangs get their placement recorded in status first
 * and are then released; waiting jobs get level, position, score, terms,
 * ETA and the reason; rejected ones are Rejected; then preemptions and
 * elastic resizes (actions.c). Decisions that changed are journaled; one
 * store commit per cycle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "operator/capgrace.h"
#include "operator/crashpoint.h"
#include "operator/kube_status.h"
#include "operator/server.h"
#include "operator/visibility.h"
#include "policy/fairshare.h"

/* The cycle's users (of jobs, Group members, UserQuotas) by (group
 * name, user name), kept between cycles so that a job's user is found
 * without reading its name (its own allocation, a cache miss per job at
 * 10k jobs): a job keeps its entry's index (opjob.user_ix) while its
 * cache entry is unchanged. Entries are not taken back one by one: the
 * directory is emptied (a new epoch) at the start of a cycle when it
 * holds over four times the users the last cycle saw, and over
 * CY_UDIR_MIN. */
#define CY_UDIR_MIN 1024

struct cy_uent {
    char *group, *name;
    uint64_t h;
};

struct cy_udir {
    struct cy_uent *e;
    int n, cap;
    int32_t *slot;   /* entry indexes by h, open addressing; -1 free */
    size_t nslot;    /* power of two, at least 2n */
    uint32_t epoch;  /* from 1: a zeroed opjob matches none */
    int last_users;  /* users of the last cycle */
};

static uint64_t cy_uhash(const char *group, const char *name) {
    return aiq_fnv_str(aiq_fnv_str(AIQ_FNV_TABLE_SEED, group), name);
}

static void cy_udir_clear(struct cy_udir *d) {
    for (int i = 0; i < d->n; i++) {
        free(d->e[i].group);
        free(d->e[i].name);
    }
    d->n = 0;
    if (d->slot)
        memset(d->slot, 0xff, d->nslot * sizeof *d->slot);
    d->epoch++;
}

/* The entry of (group, name), added when missing. Returns its index, or
 * -1 when out of memory. */
static int32_t cy_udir_get(struct cy_udir *d, const char *group, const char *name) {
    uint64_t h = cy_uhash(group, name);
    if ((size_t)(d->n + 1) * 2 > d->nslot) {
        size_t nn = d->nslot ? d->nslot * 2 : 256;
        int32_t *ns = malloc(nn * sizeof *ns);
        if (!ns)
            return -1;
        memset(ns, 0xff, nn * sizeof *ns);
        for (int i = 0; i < d->n; i++) {
            size_t k = (size_t)d->e[i].h & (nn - 1);
            while (ns[k] >= 0)
                k = (k + 1) & (nn - 1);
            ns[k] = i;
        }
        free(d->slot);
        d->slot = ns;
        d->nslot = nn;
    }
    size_t k = (size_t)h & (d->nslot - 1);
    for (; d->slot[k] >= 0; k = (k + 1) & (d->nslot - 1)) {
        const struct cy_uent *u = &d->e[d->slot[k]];
        if (u->h == h && strcmp(u->group, group) == 0 && strcmp(u->name, name) == 0)
            return d->slot[k];
    }
    if (d->n == d->cap) {
        int nc = d->cap ? d->cap * 2 : 64;
        struct cy_uent *ne = realloc(d->e, (size_t)nc * sizeof *ne);
        if (!ne)
            return -1;
        d->e = ne;
        d->cap = nc;
    }
    struct cy_uent *u = &d->e[d->n];
    u->group = strdup(group);
    u->name = strdup(name);
    if (!u->group || !u->name) {
        free(u->group);
        free(u->name);
        return -1;
    }
    u->h = h;
    d->slot[k] = d->n;
    return d->n++;
}

/* A pending job's kept input, moved out of its slot of the input array
 * by an earlier job of the pass, until its own row takes it back. */
struct cy_spill {
    int32_t row;
    uint32_t qver;
    struct q_job qj;
};

/* Each AIJob's cycle input, kept between cycles (s->cyrows) in the
 * AIJob cache's order: row i holds for the entry at index i while its
 * stamps are that entry's put count and state count (cy_row_clean). A
 * put count is unique within the cache, so a new entry, or one that
 * moved (a deletion moves the last entry into its place), never matches
 * a row it did not fill. For a job whose row holds, the passes over the
 * jobs (sync, build, decide) read the row and the entry's stamp in the
 * cache's dense array (opcache_stamp), not the entry, the job's state and
 * parsed AIJob, which at 10k jobs are cache misses over a dozen lines
 * each. */
enum {
    CY_ROW_OUT = 1,  /* not in the queue (finished, backing off, held, ...) */
    CY_ROW_PENDING,  /* pending: its q_job is kept */
    CY_ROW_PLACED    /* running or held: worked out every cycle */
};

/* What a waiting job's status says besides its position and estimated
 * start: the decision's reason and numbers and its level under the
 * policy. For the same job input (and so the same owner's names), equal
 * keys give the same status message (q_message). A preempting job's
 * message names other jobs: it has no key. */
struct cy_wkey {
    uint64_t policy_gen;
    unsigned char num[24];  /* the result's numbers (need, limit, inuse; or t, t2) */
    int16_t level;
    uint8_t reason, res, scope, set;
};

struct cy_row {
    uint64_t changed;     /* the entry's put count when filled (0: never) */
    uint32_t seq;         /* its state_seq then */
    uint8_t kind;         /* CY_ROW_* */
    bool wanted;          /* job_sync_wanted_js then */
    int32_t user_ix;      /* pending: its user directory entry, */
    uint32_t user_epoch;  /* in this directory epoch, */
    uint64_t gver;        /* and its group index under this version (cy_rows_groups) */
    double until;         /* the row holds until then (unix s): a backoff's
                             end, a preemption leaving the last hour */
    struct opjob *js;
    uint32_t qver;        /* bumped whenever the kept q_job is filled */
    int32_t kslot;        /* pending: the slot of the input array its kept
                             q_job was last in (held there while that
                             slot's slot_row and slot_ver say so) */
    /* A waiting job's last decision worked out in full (cy_decide): its
     * key and the entry's stamps after it, and what its state then said
     * (which only a change of the state moves): the position and
     * estimated start last published, whether the status on the server
     * is the one published (wpub), and the position last journaled. */
    struct cy_wkey wkey;
    uint64_t wchanged;
    uint32_t wseq;
    bool wpub;
    int32_t wpos, jpos;
    double weta;
#ifdef AIQ_SELFCHECK
    /* The position and estimated start the state holds: the last
     * decision worked out in full set them, and a kept wait leaves them
     * (see cy_wait_kept), which the self-check checks. */
    int32_t spos;
    double seta;
#endif
};

struct cy_rows {
    struct cy_row *row;
    size_t cap;
    /* The cycle's input array (cy.jobs), kept between cycles: slot k
     * holds row slot_row[k]'s kept q_job of version slot_ver[k] (but its
     * user index), or -1. It is the only copy of a pending job's input:
     * a job kept in the slot it had is not copied; one whose slot moved
     * down (a job before it left) is moved from its old slot, which no
     * job of this cycle has reached yet; one whose slot moved up (a job
     * before it joined) was set aside, when an earlier job took its slot,
     * in spill (spill[spill_head .. nspill), in row order), and is taken
     * back from there (cy_slot_claim, cy_spilled). */
    struct q_job *jobs;
    int32_t *slot_row;
    uint32_t *slot_ver;
    size_t jcap;
    struct cy_spill *spill;
    size_t nspill, spill_head, spill_cap;
    /* The last cycle's group names in order, and their version. */
    char **gname;
    int ngname;
    uint64_t gver;
    /* The usable nodes as the last full build sorted them (cy_nodes),
     * with the node cache's version then; nodes_ok: they were kept. */
    struct q_node *nodes;
    int nnodes, cnodes;
    uint64_t nodes_ver;
    bool nodes_ok;
};

static void cy_rows_groups_free(struct cy_rows *R) {
    for (int g = 0; g < R->ngname; g++)
        free(R->gname[g]);
    free(R->gname);
    R->gname = NULL;
    R->ngname = 0;
}

/* See server.h. */
void cycle_free(struct server *s) {
    struct cy_udir *d = s->udir;
    if (d) {
        cy_udir_clear(d);
        free(d->e);
        free(d->slot);
        free(d);
        s->udir = NULL;
    }
    struct cy_rows *R = s->cyrows;
    if (R) {
        cy_rows_groups_free(R);
        free(R->row);
        free(R->jobs);
        free(R->spill);
        free(R->slot_row);
        free(R->slot_ver);
        free(R->nodes);
        free(R);
        s->cyrows = NULL;
    }
}

/* The capacity the rows and the input array grow to for n jobs: a
 * quarter more than n (at least 256), as the queue core's arrays grow
 * (q__grow): a burst grows them a cycle at a time, and doubling kept up
 * to half of every slot idle after it. */
static size_t cy_rows_cap(size_t n) {
    size_t nc = n + n / 4;
    return nc < 256 ? 256 : nc;
}

/* s->cyrows with room for n rows (the new ones zeroed), NULL when out of
 * memory. */
static struct cy_rows *cy_rows_fit(struct server *s, size_t n) {
    struct cy_rows *R = s->cyrows;
    if (!R && (R = s->cyrows = calloc(1, sizeof *R)) == NULL)
        return NULL;
    if (n <= R->cap)
        return R;
    size_t nc = cy_rows_cap(n);
    struct cy_row *nr = realloc(R->row, nc * sizeof *nr);
    if (!nr)
        return NULL;
    R->row = nr;
    memset(nr + R->cap, 0, (nc - R->cap) * sizeof *nr);
    R->cap = nc;
    return R;
}

/* R's input array with room for n jobs (the new slots holding no row).
 * Returns 0 or -1 (out of memory; what it holds is kept). */
static int cy_rows_jobs_fit(struct cy_rows *R, size_t n) {
    if (n <= R->jcap)
        return 0;
    size_t nc = cy_rows_cap(n);
    struct q_job *nj = realloc(R->jobs, nc * sizeof *nj);
    if (!nj)
        return -1;
    R->jobs = nj;
    int32_t *nr = realloc(R->slot_row, nc * sizeof *nr);
    if (!nr)
        return -1;
    R->slot_row = nr;
    uint32_t *nv = realloc(R->slot_ver, nc * sizeof *nv);
    if (!nv)
        return -1;
    R->slot_ver = nv;
    for (size_t k = R->jcap; k < nc; k++)
        R->slot_row[k] = -1;
    R->jcap = nc;
    return 0;
}

/* Everything one cycle allocates. */
struct cy {
    struct q_node *nodes;
    int nnodes;
    struct q_group *groups;
    int ngroups;
    struct opcache_obj **gobj;
    struct q_user *users;
    int nusers, cusers;
    struct cy_udir *udir; /* s->udir (borrowed) */
    int32_t *uslot;  /* per user directory entry: its index in users, -1 none yet */
    int nuslot;
    struct q_job *jobs;    /* s->cyrows->jobs (borrowed) */
    struct opcache_obj **jobj;
    struct opjob **jobjs;  /* per job: its state (jobj[i]'s) */
    int32_t *jrow;         /* per job: its row (cache index) */
    int njobs;
    int nkept, nwkept;     /* jobs taken from their rows; waits kept */
    int nmoved, nspilled;  /* of the kept: moved to another slot; of those,
                              taken back from the spill */
    struct q_place *places;
    int nplaces, cplaces;
    int *poff;  /* per job: its placement's offset in places, -1 none */
};

static int cy_node_cmp(const void *a, const void *b) {
    return strcmp(((const struct q_node *)a)->name, ((const struct q_node *)b)->name);
}

static int cy_node_index(const struct cy *c, const char *name) {
    int lo = 0, hi = c->nnodes - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, r = strcmp(c->nodes[mid].name, name);
        if (r == 0)
            return mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int cy_group_index(const struct cy *c, const char *name) {
    if (!name || !*name)
        return -1;
    for (int i = 0; i < c->ngroups; i++)
        if (strcmp(c->groups[i].name, name) == 0)
            return i;
    return -1;
}

/* The directory's group key of the cycle's group gi: its name, "" for
 * none (-1), so every user without a group is one user, as the queue
 * counts it. */
static const char *cy_ugroup(const struct cy *c, int gi) {
    return gi >= 0 && gi < c->ngroups ? c->groups[gi].name : "";
}

/* The index in c->users of directory entry ix, whose group is the
 * cycle's group gi, adding the user on its first job or mention this
 * cycle. Returns -1 when out of memory. */
static int cy_user_at(struct cy *c, int gi, int32_t ix) {
    const struct cy_udir *d = c->udir;
    if (ix >= c->nuslot) {
        int nn = c->nuslot ? c->nuslot : 64;
        while (nn <= ix || nn < d->n)
            nn *= 2;
        int32_t *ns = realloc(c->uslot, (size_t)nn * sizeof *ns);
        if (!ns)
            return -1;
        memset(ns + c->nuslot, 0xff, (size_t)(nn - c->nuslot) * sizeof *ns);
        c->uslot = ns;
        c->nuslot = nn;
    }
    if (c->uslot[ix] >= 0)
        return c->uslot[ix];
    if (c->nusers == c->cusers) {
        int nc = c->cusers ? c->cusers * 2 : 64;
        struct q_user *nu = realloc(c->users, (size_t)nc * sizeof *nu);
        if (!nu)
            return -1;
        c->users = nu;
        c->cusers = nc;
    }
    struct q_user *u = &c->users[c->nusers];
    memset(u, 0, sizeof *u);
    u->name = d->e[ix].name; /* the directory keeps it until the next cycle */
    u->group = gi;
    aiq_quota_unlimited(&u->quota);
    u->budget_gpu_hours = -1;
    u->fairshare = 1;
    c->uslot[ix] = c->nusers;
    return c->nusers++;
}

/* Returns the user index of (group gi, name), adding it; -1 on ENOMEM. */
static int cy_user(struct cy *c, int gi, const char *name) {
    int32_t ix = cy_udir_get(c->udir, cy_ugroup(c, gi), name ? name : "");
    return ix < 0 ? -1 : cy_user_at(c, gi, ix);
}

/* The user of job js (group gi, spec.user name) at cache put count at:
 * its directory entry is kept in js, so an unchanged job's user is found
 * without reading its name. Returns the index in c->users or -1. */
static int cy_job_user(struct cy *c, struct opjob *js, uint64_t at, int gi, const char *name) {
    struct cy_udir *d = c->udir;
    const char *gk = cy_ugroup(c, gi);
    int32_t ix = js->user_ix;
    if (js->user_at != at || js->user_epoch != d->epoch || ix < 0 || ix >= d->n ||
        strcmp(d->e[ix].group, gk) != 0) {
        ix = cy_udir_get(d, gk, name ? name : "");
        if (ix < 0)
            return -1;
        js->user_ix = ix;
        js->user_at = at;
        js->user_epoch = d->epoch;
    }
    return cy_user_at(c, gi, ix);
}

static void cy_free(struct cy *c) {
    free(c->nodes);
    free(c->groups);
    free(c->gobj);
    free(c->users);
    free(c->uslot);
    free(c->jobj);
    free(c->jobjs);
    free(c->jrow);
    free(c->places);
    free(c->poff);
}

/* Makes room for k more placements in c->places. Returns 0 or -1. */
static int cy_places_room(struct cy *c, int k) {
    if (c->places && c->nplaces + k <= c->cplaces)
        return 0;
    int nc = c->cplaces ? c->cplaces : 256;
    while (nc < c->nplaces + k)
        nc *= 2;
    struct q_place *np = realloc(c->places, (size_t)nc * sizeof *np);
    if (!np)
        return -1;
    c->places = np;
    c->cplaces = nc;
    return 0;
}

/* Usage callback: decayed GPU-hours per (user, group). */
struct cy_usage_ctx {
    struct cy *c;
};

static int cy_usage_cb(const char *user, const char *group, double h, void *ud) {
    struct cy *c = ((struct cy_usage_ctx *)ud)->c;
    int g = cy_group_index(c, group);
    if (g < 0)
        return 0;
    c->groups[g].usage_gpu_hours += h;
    for (int i = 0; i < c->nusers; i++)
        if (c->users[i].group == g && strcmp(c->users[i].name, user) == 0)
            c->users[i].usage_gpu_hours += h;
    return 0;
}

/* Fair-share factors through policy/fairshare.h (fs_compute, the classic
 * group -> user form of docs/fairshare.md). Shares: a group's
 * Group.spec.shares, else its GPU quota, else 1; a user's the same rule on
 * its accepted UserQuota (no explicit weight there), else 1. Users
 * without a group keep factor 1. On ENOMEM or an input fs_compute
 * refuses, every factor stays at the 1 the builders set (no fair-share
 * ordering this cycle rather than a wrong one). */
static void cy_fairshare(struct cy *c) {
    int ng = c->ngroups, nu = 0;
    struct fs_group *gs = calloc((size_t)(ng ? ng : 1), sizeof *gs);
    struct fs_user *us = calloc((size_t)(c->nusers ? c->nusers : 1), sizeof *us);
    int *uidx = calloc((size_t)(c->nusers ? c->nusers : 1), sizeof *uidx);
    struct fs_factor *gout = calloc((size_t)(ng ? ng : 1), sizeof *gout);
    struct fs_factor *uout = calloc((size_t)(c->nusers ? c->nusers : 1), sizeof *uout);
    if (!gs || !us || !uidx || !gout || !uout)
        goto out_free;
    for (int g = 0; g < ng; g++) {
        const struct aiq_group *ag = c->gobj[g]->parsed;
        gs[g].shares = fs_shares_from_quota(ag->spec.shares, &ag->spec.quota);
        gs[g].usage = c->groups[g].usage_gpu_hours;
    }
    for (int i = 0; i < c->nusers; i++) {
        const struct q_user *u = &c->users[i];
        if (u->group < 0 || u->group >= ng)
            continue;
        us[nu].group = u->group;
        us[nu].shares = fs_shares_from_quota(0, &u->quota);
        us[nu].usage = u->usage_gpu_hours;
        uidx[nu++] = i;
    }
    if (fs_compute(gs, ng, us, nu, gout, uout, NULL) != AIQ_OK)
        goto out_free;
    for (int g = 0; g < ng; g++)
        c->groups[g].fairshare = gout[g].factor;
    for (int k = 0; k < nu; k++)
        c->users[uidx[k]].fairshare = uout[k].factor;
out_free:
    free(uout);
    free(gout);
    free(uidx);
    free(us);
    free(gs);
}

/* The queue fills the factor vector it scores with; explain reads the
 * same vector back through q_job_factors, so the terms add up to the
 * queue's score. Both index the same fx_factors.def list. */
_Static_assert((int)Q_NFACTORS == (int)FX_NFACTORS,
               "queue and policy disagree on the factor list");

/* CamelCase condition reason for a waiting or rejected job. */
static const char *cy_reason(int r) {
    switch (r) {
    case Q_R_NONE: return "Admitted";
    case Q_R_SUSPENDED: return "Suspended";
    case Q_R_QUOTA: return "QuotaFull";
    case Q_R_BUDGET: return "BudgetExhausted";
    case Q_R_CAPACITY: return "WaitingForGPUs";
    case Q_R_BLOCKED: return "BehindHigherPriority";
    case Q_R_NO_NODE: return "NoMatchingNode";
    case Q_R_NODE_TOO_SMALL: return "ReplicaTooBig";
    case Q_R_GANG_TOO_BIG: return "GangTooBig";
    case Q_R_OVER_QUOTA: return "OverQuota";
    case Q_R_OVER_BUDGET: return "OverBudget";
    case Q_R_INVALID: return "Invalid";
    case Q_R_PREEMPTING: return "Preempting";
    case Q_R_BORROW: return "WaitingToBorrow";
    case Q_R_PREEMPTED: case Q_R_PREEMPTED_SCORE: case Q_R_RECLAIMED: case Q_R_SHRUNK:
    case Q_R_GROWN: return actions_reason(r);
    default: return "Waiting";
    }
}

#ifdef AIQ_SELFCHECK
_Noreturn static void cy_selfcheck_failed(struct server *s, const char *what, const char *key);

/* Whether two nodes say the same, field by field (not their padding). */
static bool cy_node_same(const struct q_node *a, const struct q_node *b) {
    return a->name == b->name && a->domain == b->domain && a->gpu_model == b->gpu_model &&
           a->topology == b->topology && a->ngpus == b->ngpus &&
           memcmp(a->gpu_mem_total, b->gpu_mem_total, sizeof a->gpu_mem_total) == 0 &&
           memcmp(a->gpu_mem_used, b->gpu_mem_used, sizeof a->gpu_mem_used) == 0 &&
           a->cpu_alloc == b->cpu_alloc && a->cpu_used == b->cpu_used &&
           a->mem_alloc == b->mem_alloc && a->mem_used == b->mem_used &&
           a->schedulable == b->schedulable && a->util_known == b->util_known &&
           memcmp(a->gpu_util, b->gpu_util, sizeof a->gpu_util) == 0;
}
#endif

/* The usable nodes, sorted by name, into c->nodes (room for every cached
 * node). Taken from the last full build while the node cache is as it
 * was then (no put, no deletion: each node's input, strings included, is
 * what it was) and no live utilisation source sets them by the clock;
 * the capacity grace's fingerprint of the same nodes is the same. At 1k
 * nodes the build, its sort and the fingerprint were some 13% of the
 * operator's samples in a steady window (perf). The selfcheck build also
 * builds them and compares. */
static void cy_nodes(struct server *s, struct cy *c, struct cy_rows *R, double now) {
    uint64_t ver = opcache_version(s->cache[OPK_NODE]);
    if (R->nodes_ok && R->nodes_ver == ver && !s->util && !s->flags.util_alnair) {
        memcpy(c->nodes, R->nodes, (size_t)R->nnodes * sizeof *c->nodes);
        c->nnodes = R->nnodes;
#ifdef AIQ_SELFCHECK
        /* room for every cached node: capacity_nodes fills a slot for
         * each before it knows whether the node is usable */
        struct q_node *f = calloc(opcache_count(s->cache[OPK_NODE]) + 1, sizeof *f);
        int n = f ? capacity_nodes(s, f) : -1;
        if (f)
            qsort(f, (size_t)n, sizeof *f, cy_node_cmp);
        for (int i = 0; f && i < n; i++)
            if (n != R->nnodes || !cy_node_same(&f[i], &c->nodes[i]))
                cy_selfcheck_failed(s, "kept_nodes", f[i].name);
        free(f);
#endif
        return;
    }
    c->nnodes = capacity_nodes(s, c->nodes);
    qsort(c->nodes, (size_t)c->nnodes, sizeof *c->nodes, cy_node_cmp);
    capgrace_observe(s, c->nodes, c->nnodes, now);
    R->nodes_ok = false;
    if (c->nnodes > R->cnodes) {
        struct q_node *k = realloc(R->nodes, (size_t)c->nnodes * sizeof *k);
        if (!k)
            return; /* not kept: built in full again next cycle */
        R->nodes = k;
        R->cnodes = c->nnodes;
    }
    if (c->nnodes > 0)
        memcpy(R->nodes, c->nodes, (size_t)c->nnodes * sizeof *c->nodes);
    R->nnodes = c->nnodes;
    R->nodes_ver = ver;
    R->nodes_ok = true;
}

/* Builds nodes, groups and users. Returns 0 or -1 (ENOMEM). */
static int cy_build_cluster(struct server *s, struct cy *c, struct cy_rows *R, double now) {
    opcache *nc = s->cache[OPK_NODE], *gc = s->cache[OPK_GROUP], *uc = s->cache[OPK_USERQUOTA];
    size_t nn = opcache_count(nc), ng = opcache_count(gc);
    c->nodes = calloc(nn ? nn : 1, sizeof *c->nodes);
    c->groups = calloc(ng ? ng : 1, sizeof *c->groups);
    c->gobj = calloc(ng ? ng : 1, sizeof *c->gobj);
    if (!c->nodes || !c->groups || !c->gobj)
        return -1;
    cy_nodes(s, c, R, now);
    for (size_t i = 0; i < ng; i++) {
        struct opcache_obj *o = opcache_at(gc, i);
        if (!o->parse_ok || !o->parsed)
            continue;
        const struct aiq_group *g = o->parsed;
        struct q_group *qg = &c->groups[c->ngroups];
        qg->name = g->meta.name;
        qg->level = g->spec.level;
        qg->quota = g->spec.quota;
        qg->budget_gpu_hours = g->spec.budget.gpu_hours;
        if (g->spec.budget.gpu_hours >= 0) {
            double w = g->spec.budget.window_s > 0 ? g->spec.budget.window_s : 2592000;
            aiq_err e;
            aiq_err_clear(&e);
            /* A failed read makes the store unhealthy: the cycle stops
             * before any decision (cycle_run checks the health). */
            (void)srv_store_ok(s, store_usage_window(s->db, NULL, g->meta.name, now - w,
                                                     &qg->used_gpu_hours, &e),
                               "usage_window", g->meta.name, &e);
            qg->window_end = now + w;
        }
        qg->fairshare = 1;
        c->gobj[c->ngroups++] = o;
    }
    /* Members first (their levels), then accepted UserQuotas. */
    for (int gi = 0; gi < c->ngroups; gi++) {
        const struct aiq_group *g = c->gobj[gi]->parsed;
        for (int m = 0; m < g->spec.nmembers; m++) {
            int u = cy_user(c, gi, g->spec.members[m].user);
            if (u < 0)
                return -1;
            c->users[u].level = g->spec.members[m].level;
        }
    }
    for (size_t i = 0; i < opcache_count(uc); i++) {
        struct opcache_obj *o = opcache_at(uc, i);
        struct opext *x = o->ext;
        if (!x || !x->accepted || !x->group || !o->parse_ok)
            continue;
        const struct aiq_userquota *uq = o->parsed;
        int gi = cy_group_index(c, x->group);
        if (gi < 0)
            continue;
        int u = cy_user(c, gi, uq->spec.user);
        if (u < 0)
            return -1;
        struct q_user *qu = &c->users[u];
        qu->quota = uq->spec.quota;
        qu->budget_gpu_hours = uq->spec.budget.gpu_hours;
        if (uq->spec.budget.gpu_hours >= 0) {
            double w = uq->spec.budget.window_s > 0 ? uq->spec.budget.window_s : 2592000;
            aiq_err e;
            aiq_err_clear(&e);
            (void)srv_store_ok(s, store_usage_window(s->db, uq->spec.user, x->group, now - w,
                                                     &qu->used_gpu_hours, &e),
                               "usage_window", uq->spec.user, &e); /* checked in cycle_run */
            qu->window_end = now + w;
        }
    }
    return 0;
}

/* Cohorts (Group.spec.cohort, Kueue's) as the queue's numbers: groups
 * naming the same cohort get the same id > 0 (first seen, first
 * numbered; ids only have to agree within one cycle), with their
 * borrowing and lending limits. A group without a cohort keeps 0: its
 * quota is a hard cap. */
static void cy_cohorts(struct cy *c) {
    int next = 0;
    for (int g = 0; g < c->ngroups; g++) {
        const struct aiq_group *ag = c->gobj[g]->parsed;
        struct q_group *qg = &c->groups[g];
        qg->borrowing_limit = ag->spec.borrowing_limit;
        qg->lending_limit = ag->spec.lending_limit;
        if (!ag->spec.cohort || !*ag->spec.cohort)
            continue;
        for (int h = 0; h < g && !qg->cohort; h++) {
            const struct aiq_group *bg = c->gobj[h]->parsed;
            if (bg->spec.cohort && strcmp(bg->spec.cohort, ag->spec.cohort) == 0)
                qg->cohort = c->groups[h].cohort;
        }
        if (!qg->cohort)
            qg->cohort = ++next;
    }
}


/* The nodes a running job's growth keeps off (see struct opgrow_avoid),
 * as node indexes of this cycle; names no longer among the nodes drop. */
static void cy_grow_avoid(struct q_job *qj, const struct cy *c, struct opgrow_avoid *a) {
    int n = 0;
    for (int k = 0; k < a->n && n < Q_MAX_GROW_AVOID; k++) {
        int ni = cy_node_index(c, a->node[k]);
        if (ni >= 0)
            a->idx[n++] = ni;
    }
    qj->grow_avoid = n ? a->idx : NULL;
    qj->ngrow_avoid = n;
}

/* Bits of a double, for a generation. */
static inline uint64_t cy_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* The job's q_job.gen: changes whenever anything the queue reads from the
 * job changes (the object, its phase, attempt, size, stopping replicas,
 * teardown, preemptions, queue entry, predicted runtime, attained
 * service), so that a rescore interval may keep an unchanged job's score
 * (q_policy.rescore_interval_s). */
static uint64_t cy_job_gen(uint64_t changed, aiq_phase p, const struct opjob *js, bool held) {
    uint64_t v[] = {changed, (uint64_t)p, (uint64_t)js->st.attempts,
                    (uint64_t)js->st.nplacement, (uint64_t)js->stopping, (uint64_t)js->held,
                    (uint64_t)held, (uint64_t)js->st.preemptions, cy_bits(js->st.queued_at),
                    cy_bits(js->predicted_s), cy_bits(js->attained_gpu_s)};
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        h = (h ^ v[i]) * 1099511628211ULL;
    return h;
}

/* The q_job fields for preemption and elastic resizing. nonPreemptible
 * is honoured as given: the identity admission policy lets only members
 * of aiq:admins set it (crds/admission-identity.yaml). A running job's
 * `started` is its admission (the simulator's run start, so a replay
 * sees the same protection), and its attained service is the finished
 * runs': the queue adds the current run. */
static void cy_job_preempt_fields(struct q_job *qj, const struct aiq_aijob *j,
                                  const struct opjob *js, double now) {
    qj->min_replicas = j->spec.max_replicas > 0 ? j->spec.min_replicas : 0;
    qj->max_replicas = j->spec.max_replicas;
    qj->checkpointable = j->spec.checkpointable;
    qj->checkpoint_interval_s = j->spec.checkpoint_interval_s;
    qj->non_preemptible = j->spec.non_preemptible;
    qj->min_runtime_s = j->spec.min_runtime_s;
    qj->preemptions = js->st.preemptions;
    for (int k = 0; k < js->npre_t && k < 8; k++)
        qj->preemptions_1h += js->pre_t[k] > now - 3600;
    qj->started = js->st.admitted_at;
}

/* The fields of qj (zeroed by the caller) that any job in the queue has,
 * from the AIJob j and its state js; mgpus is its GPUs per replica under
 * the GPU mechanism. Returns 0 or -1 (out of memory). */
static inline int cy_job_fill(struct cy *c, struct q_job *qj,
                              const struct opcache_obj *o, const struct aiq_aijob *j,
                              struct opjob *js, int mgpus, bool pending, bool held,
                              double now) {
    qj->key = o->key;
    qj->uid = j->meta.uid;
    /* The uid is hashed once per version of the object, so the queue
     * matches an unchanged job to its entry without reading the uid. */
    if (js->ident_at != o->changed || !js->ident) {
        js->ident = aiq_fnv_cstr(AIQ_FNV_OFFSET, j->meta.uid ? j->meta.uid : "") | 1;
        js->ident_at = o->changed;
    }
    qj->ident = js->ident;
    qj->gen = cy_job_gen(o->changed, js->st.phase, js, held);
    qj->group = cy_group_index(c, opstatus_group(&js->st));
    qj->user = cy_job_user(c, js, o->changed, qj->group, j->spec.user);
    if (qj->user < 0)
        return -1;
    qj->priority = j->spec.priority;
    qj->replicas = j->spec.replicas;
    qj->gpus = mgpus;
    qj->gpu_memory_mib = j->spec.resources.gpu_memory_mib;
    qj->cpu_milli = j->spec.resources.cpu_milli;
    qj->memory_bytes = j->spec.resources.memory_bytes;
    qj->gpu_model = j->spec.resources.gpu_model;
    qj->domain = j->spec.domain;
    qj->created = j->meta.creation_time;
    qj->queued = js->st.queued_at > 0 ? js->st.queued_at : j->meta.creation_time;
    qj->est_runtime_s = j->spec.estimated_runtime_s;
    qj->pred_runtime_s = js->predicted_s;
    qj->attained_gpu_hours = js->attained_gpu_s / 3600.0;
    qj->attempts = js->st.attempts;
    qj->state = pending ? Q_JOB_PENDING : Q_JOB_RUNNING;
    cy_job_preempt_fields(qj, j, js, now);
    return 0;
}

/* A running or held job's nplace replicas: its placement appended to
 * c->places (c->poff[c->njobs] records where), its end time, and the GPU
 * memory, cpu and memory it uses on its nodes. Returns 1, 0 when one of
 * its nodes is gone (it then holds nothing we can see and is left out),
 * or -1 (out of memory). */
static inline int cy_job_placed(struct cy *c, struct q_job *qj, const struct aiq_aijob *j,
                                const struct opjob *js, int nplace, int mgpus, bool held,
                                double now) {
    if (cy_places_room(c, nplace) != 0)
        return -1;
    struct q_place *pl = &c->places[c->nplaces];
    for (int k = 0; k < nplace; k++) {
        int ni = cy_node_index(c, js->place[k].node);
        if (ni < 0)
            return 0;
        pl[k].node = ni;
        pl[k].gpu_mask = 0;
        for (int g = 0; g < js->place[k].ngpus; g++)
            if (js->place[k].gpus[g] >= 0 && js->place[k].gpus[g] < Q_MAX_GPUS)
                pl[k].gpu_mask |= 1ull << js->place[k].gpus[g];
        pl[k].gpu_mem_mib = js->place[k].gpu_memory_mib;
    }
    /* An offset until every placement is in (c->places may move). */
    c->poff[c->njobs] = c->nplaces;
    c->nplaces += nplace;
    double rt = js->predicted_s > 0 ? js->predicted_s : j->spec.estimated_runtime_s;
    qj->end_time = (rt > 0 && js->st.started_at > 0) ? js->st.started_at + rt : 0;
    if (held)
        qj->end_time = now; /* being stopped: free once its pods are gone */
    /* The gang's GPU memory, cpu and memory are in use on its nodes. */
    for (int k = 0; k < nplace; k++) {
        struct q_node *qn = &c->nodes[pl[k].node];
        for (int g = 0; g < qn->ngpus && g < Q_MAX_GPUS; g++)
            if (pl[k].gpu_mask & (1ull << g))
                qn->gpu_mem_used[g] += mgpus > 0 ? qn->gpu_mem_total[g] : pl[k].gpu_mem_mib;
        qn->cpu_used += j->spec.resources.cpu_milli;
        qn->mem_used += j->spec.resources.memory_bytes;
    }
    return 1;
}

/* The decide pass prefetches what a job CY_AHEAD further on reads
 * (the sync and build passes read rows and the cache's dense stamps,
 * in order, which the hardware prefetches by itself). */
#define CY_AHEAD 8

/* o's job state, NULL when it has none yet. */
static inline struct opjob *cy_js_of(const struct opcache_obj *o) {
    const struct opext *x = o->ext;
    return x ? x->job : NULL;
}

static inline void cy_prefetch_js(const struct opjob *js) {
    /* struct opjob keeps what a cycle reads first, then st's hot fields
     * up to its group and message (pointers: their text is read only
     * for a job the cycle decides anew). */
    if (!js)
        return;
    const char *p = (const char *)js, *end = (const char *)&js->st.message_;
    for (; p <= end; p += 64)
        __builtin_prefetch(p);
}

/* The cache entry's first line: ext, the put and state counts. */
static inline void cy_prefetch_obj(const struct opcache_obj *o) {
    __builtin_prefetch(o);
}

/* Whether row was filled from its entry as the entry is now (st: the
 * entry's stamp, read from the cache's dense array, not the entry). */
static inline bool cy_row_clean(const struct cy_row *row, struct opcache_stamp st) {
    return row->changed == st.changed && row->seq == st.state_seq;
}

#ifdef AIQ_SELFCHECK
/* A kept row or decision differs from the one worked out in full: a
 * writer of the job's state did not say so (opcache_state_changed). */
_Noreturn static void cy_selfcheck_failed(struct server *s, const char *what, const char *key) {
    OPLOG(&s->log, OPLOG_ERROR, "selfcheck_failed", key, NULL, "what=%s", what);
    abort();
}
#endif

/* Counts a change of the cycle's groups (their names, in order): a kept
 * job's group index holds while the version does. Returns 0 or -1. */
static int cy_rows_groups(struct cy_rows *R, const struct cy *c) {
    bool same = R->ngname == c->ngroups;
    for (int g = 0; same && g < c->ngroups; g++)
        same = strcmp(R->gname[g], c->groups[g].name) == 0;
    if (same)
        return 0;
    cy_rows_groups_free(R);
    R->gver++;
    if (c->ngroups == 0)
        return 0;
    /* Out of memory the names kept are fewer: the next cycle bumps the
     * version again, so no row is taken under the wrong groups. */
    if ((R->gname = calloc((size_t)c->ngroups, sizeof *R->gname)) == NULL)
        return -1;
    for (int g = 0; g < c->ngroups; g++) {
        if ((R->gname[g] = strdup(c->groups[g].name)) == NULL)
            return -1;
        R->ngname++;
    }
    return 0;
}

/* When the job's count of preemptions in the last hour
 * (q_job.preemptions_1h) next drops; INFINITY when it has none there. */
static double cy_pre_until(const struct opjob *js, double now) {
    double u = INFINITY;
    for (int k = 0; k < js->npre_t && k < 8; k++)
        if (js->pre_t[k] > now - 3600 && js->pre_t[k] + 3600 < u)
            u = js->pre_t[k] + 3600;
    return u;
}

/* The row kind job js (AIJob j) takes now: pending (Queued, past
 * backoff), placed (Admitted or Running with its placement, or *held:
 * torn down, its terminating pods holding their placement) or out. */
static int cy_job_kind(const struct opjob *js, const struct aiq_aijob *j, double now,
                       bool *held) {
    aiq_phase p = js->st.phase;
    *held = js->teardown && js->held > 0;
    bool pending = p == AIQ_PHASE_QUEUED && !js->teardown && !js->group_hold &&
                   js->backoff_until <= now && !j->spec.suspend && js->pods_ready;
    bool running = (p == AIQ_PHASE_ADMITTED || p == AIQ_PHASE_RUNNING) && !js->teardown &&
                   job_size_ok(j, js->st.nplacement);
    if (running || *held)
        return CY_ROW_PLACED;
    return pending ? CY_ROW_PENDING : CY_ROW_OUT;
}

static inline void cy_push(struct cy *c, struct opcache_obj *o, struct opjob *js, size_t i) {
    c->jobjs[c->njobs] = js;
    c->jobj[c->njobs] = o;
    c->jrow[c->njobs++] = (int32_t)i;
}

/* Makes slot k of the input array ready for row i's job: a later row's
 * kept input in it is set aside first (struct cy_rows). Returns 0 or -1
 * (out of memory). */
static int cy_slot_claim(struct cy_rows *R, int32_t k, size_t i) {
    int32_t r = R->slot_row[k];
    if (r < 0 || (size_t)r <= i || (size_t)r >= R->cap || R->row[r].kslot != k ||
        R->slot_ver[k] != R->row[r].qver)
        return 0;
    if (R->spill_head > 0 && R->spill_head * 2 >= R->nspill) {
        memmove(R->spill, R->spill + R->spill_head, (R->nspill - R->spill_head) * sizeof *R->spill);
        R->nspill -= R->spill_head;
        R->spill_head = 0;
    }
    if (R->nspill == R->spill_cap) {
        size_t nc = R->spill_cap ? R->spill_cap * 2 : 16;
        struct cy_spill *ns = realloc(R->spill, nc * sizeof *ns);
        if (!ns)
            return -1;
        R->spill = ns;
        R->spill_cap = nc;
    }
    struct cy_spill *sp = &R->spill[R->nspill++];
    sp->row = r;
    sp->qver = R->row[r].qver;
    memcpy(&sp->qj, &R->jobs[k], sizeof sp->qj);
    R->row[r].kslot = -1;
    R->slot_row[k] = -1;
    return 0;
}

/* Row i's input set aside this pass (the spill's rows before i were not
 * kept and are dropped), or NULL. */
static const struct q_job *cy_spilled(struct cy_rows *R, size_t i) {
    while (R->spill_head < R->nspill && (size_t)R->spill[R->spill_head].row < i)
        R->spill_head++;
    if (R->spill_head == R->nspill || (size_t)R->spill[R->spill_head].row != i)
        return NULL;
    const struct cy_spill *sp = &R->spill[R->spill_head++];
    return sp->qver == R->row[i].qver ? &sp->qj : NULL;
}

/* Appends job o (row i, of the given kind) worked out from its state js
 * and AIJob j, placed jobs with their placements (c->places grows).
 * Returns 1, 0 when a node of its placement is gone (it then holds
 * nothing we can see and is left out), or -1 (out of memory). */
static int cy_job_in(struct server *s, struct cy *c, struct opcache_obj *o, struct opjob *js,
                     const struct aiq_aijob *j, int kind, bool held, size_t i, double now) {
    bool pending = kind == CY_ROW_PENDING, running = !pending && !held;
    int nplace = held ? js->held : js->st.nplacement;
    struct q_job *qj = &c->jobs[c->njobs];
    if (cy_slot_claim(s->cyrows, c->njobs, i) != 0)
        return -1;
    memset(qj, 0, sizeof *qj);
    s->cyrows->slot_row[c->njobs] = -1;
    c->poff[c->njobs] = -1;
    /* Under a mechanism that cannot share a GPU, a shared replica is
     * placed and counted as the whole GPU it will receive. */
    int mgpus = gpu_mech_gpus(s->flags.gpu_mech, &j->spec.resources);
    if (cy_job_fill(c, qj, o, j, js, mgpus, pending, held, now) != 0)
        return -1;
    if (running && js->grow_avoid && js->grow_avoid->until > now)
        cy_grow_avoid(qj, c, js->grow_avoid);
    if (!pending) {
        qj->replicas = nplace;
        qj->stopping = held ? 0 : js->stopping;
        qj->terminating = held;
        if (held && !job_size_ok(j, nplace))
            qj->min_replicas = qj->max_replicas = 0; /* spec changed since: as it was */
        int rc = cy_job_placed(c, qj, j, js, nplace, mgpus, held, now);
        if (rc <= 0)
            return rc;
    }
    cy_push(c, o, js, i);
    return 1;
}

/* Job o at row i worked out from its state and parsed AIJob, and its row
 * filled. Returns 0 or -1 (out of memory). */
static int cy_job_take(struct server *s, struct cy *c, struct cy_rows *R, size_t i,
                       struct opcache_obj *o, double now) {
    struct opjob *js = cy_js_of(o);
    const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
    struct cy_row *row = &R->row[i];
    bool held = false;
    int kind = js && j ? cy_job_kind(js, j, now, &held) : CY_ROW_OUT;
    int rc = kind == CY_ROW_OUT ? 0 : cy_job_in(s, c, o, js, j, kind, held, i, now);
    if (rc < 0) {
        row->changed = 0;
        return -1;
    }
    row->kind = (uint8_t)kind;
    row->js = js;
    row->wanted = job_sync_wanted_js(js);
    row->until = INFINITY;
    if (kind == CY_ROW_OUT && js && js->st.phase == AIQ_PHASE_QUEUED && js->backoff_until > now)
        row->until = js->backoff_until; /* pending from then */
    if (kind == CY_ROW_PENDING) {
        row->qver++;
        row->kslot = c->njobs - 1;
        R->slot_row[c->njobs - 1] = (int32_t)i;
        R->slot_ver[c->njobs - 1] = row->qver;
        row->user_ix = js->user_ix;
        row->user_epoch = js->user_epoch;
        row->gver = R->gver;
        row->until = cy_pre_until(js, now);
    }
    row->seq = o->state_seq;
    row->changed = o->changed;
    return 0;
}

/* Whether slot k of the input array holds row i's kept q_job. */
static inline bool cy_slot_holds(const struct cy_rows *R, int32_t k, size_t i) {
    return k >= 0 && (size_t)k < R->jcap && R->slot_row[k] == (int32_t)i &&
           R->slot_ver[k] == R->row[i].qver;
}

/* A pending job whose row holds: its kept input, with this cycle's
 * index of its user (see struct cy_rows for where the input is found).
 * Returns 0 or -1 (out of memory). */
static int cy_job_kept(struct server *s, struct cy *c, struct cy_rows *R, size_t i,
                       struct opcache_obj *o, double now) {
    struct cy_row *row = &R->row[i];
    int k = c->njobs;
    struct q_job *qj = &c->jobs[k];
    if (row->kslot != k || !cy_slot_holds(R, k, i)) {
        /* Slots below k are this pass's: a later one can hold it, or
         * the spill when an earlier job took its slot. */
        if (cy_slot_claim(R, k, i) != 0)
            return -1;
        const struct q_job *from = NULL;
        if (row->kslot > k && cy_slot_holds(R, row->kslot, i)) {
            from = &c->jobs[row->kslot];
            R->slot_row[row->kslot] = -1;
        } else if ((from = cy_spilled(R, i)) != NULL) {
            c->nspilled++;
        } else {
            return cy_job_take(s, c, R, i, o, now);
        }
        memcpy(qj, from, sizeof *qj);
        c->nmoved++;
        R->slot_row[k] = (int32_t)i;
        R->slot_ver[k] = row->qver;
        row->kslot = k;
    }
    qj->user = cy_user_at(c, qj->group, row->user_ix);
    if (qj->user < 0)
        return -1;
#ifdef AIQ_SELFCHECK
    struct q_job fresh;
    const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
    bool held;
    memset(&fresh, 0, sizeof fresh);
    if (!j || cy_js_of(o) != row->js || cy_job_kind(row->js, j, now, &held) != CY_ROW_PENDING)
        cy_selfcheck_failed(s, "kept_pending", o->key);
    if (cy_job_fill(c, &fresh, o, j, row->js, gpu_mech_gpus(s->flags.gpu_mech, &j->spec.resources),
                    true, false, now) != 0)
        return -1;
    if (memcmp(&fresh, qj, sizeof fresh) != 0)
        cy_selfcheck_failed(s, "kept_input", o->key);
#endif
    c->poff[c->njobs] = -1;
    cy_push(c, o, row->js, i);
    c->nkept++;
    return 0;
}

/* Adds the AIJobs: pending (Queued, past backoff) and running (Admitted,
 * Running, with their placement), in one pass over the cache's jobs; a
 * job whose row holds is taken from it (the placements array grows as
 * it goes). Returns 0 or -1. */
static int cy__build_jobs(struct server *s, struct cy *c, struct cy_rows *R, double now) {
    opcache *jc = s->cache[OPK_AIJOB];
    size_t n = opcache_count(jc);
    /* each job taken is zeroed below (or is its kept input); the rest is
     * never read */
    if (cy_rows_jobs_fit(R, n ? n : 1) != 0)
        return -1;
    c->jobs = R->jobs;
    c->jobj = malloc((n ? n : 1) * sizeof *c->jobj);
    c->jobjs = malloc((n ? n : 1) * sizeof *c->jobjs);
    c->jrow = malloc((n ? n : 1) * sizeof *c->jrow);
    c->poff = malloc((n ? n : 1) * sizeof *c->poff);
    if (!c->jobj || !c->jobjs || !c->jrow || !c->poff)
        return -1;
    R->nspill = R->spill_head = 0;
    for (size_t i = 0; i < n; i++) {
        struct opcache_obj *o = opcache_at(jc, i);
        const struct cy_row *row = &R->row[i];
        bool holds = cy_row_clean(row, opcache_stamp(jc, i)) && now < row->until;
        int rc = 0;
        if (holds && row->kind == CY_ROW_OUT) {
#ifdef AIQ_SELFCHECK
            bool held;
            const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
            if (cy_js_of(o) && j && cy_job_kind(cy_js_of(o), j, now, &held) != CY_ROW_OUT)
                cy_selfcheck_failed(s, "kept_out", o->key);
#endif
            continue;
        }
        if (holds && row->kind == CY_ROW_PENDING && row->user_epoch == c->udir->epoch &&
            row->gver == R->gver)
            rc = cy_job_kept(s, c, R, i, o, now);
        else
            rc = cy_job_take(s, c, R, i, o, now);
        if (rc < 0)
            return -1;
    }
    if (R->spill_cap > 256) { /* a large move is rare: not kept for it */
        free(R->spill);
        R->spill = NULL;
        R->spill_cap = 0;
    }
    R->nspill = R->spill_head = 0;
    for (int k = 0; k < c->njobs; k++)
        if (c->poff[k] >= 0)
            c->jobs[k].placement = &c->places[c->poff[k]];
    return 0;
}

/* Converts the queue's placement of an admitted job into js->place.
 * Returns 0, -1 for a placement out of range, -2 on ENOMEM. */
static int cy_take_place(struct opjob *js, const struct cy *c, const q_output *out,
                         const struct q_result *r, const struct aiq_aijob *j) {
    if (r->nplace <= 0 || r->nplace > AIQ_MAX_REPLICAS)
        return -1;
    if (job_place_reserve(js, r->nplace) != 0)
        return -2;
    for (int k = 0; k < r->nplace; k++) {
        const struct q_place *qp = &out->places[r->place_off + k];
        struct opst_place *p = &js->place[k];
        memset(p, 0, sizeof *p);
        p->replica = k;
        if (qp->node < 0 || qp->node >= c->nnodes)
            return -1;
        snprintf(p->node, sizeof p->node, "%s", c->nodes[qp->node].name);
        for (int g = 0; g < Q_MAX_GPUS && p->ngpus < AIQ_MAX_GPUS_PER_REPLICA; g++)
            if (qp->gpu_mask & (1ull << g))
                p->gpus[p->ngpus++] = g;
        p->gpu_memory_mib = qp->gpu_mem_mib > 0 ? qp->gpu_mem_mib : j->spec.resources.gpu_memory_mib;
    }
    js->st.nplacement = r->nplace;
    js->st.placement = js->place;
    return 0;
}

/* Tells whether a decision differs from the job's last journaled one. */
static bool cy_journal_due(const struct opjob *js, const char *action, const struct q_result *r,
                           const char *reason) {
    /* The attempt is part of the signature: a re-admission with the same
     * level, position and reason is a new decision, not a repeat. A wait
     * whose position moved only a little since it was journaled is a
     * repeat (q_pos_moved, as aiq-sim records): one arrival ahead of 10k
     * waiting jobs journaled all 10k. The numbers are compared first:
     * most cycles repeat most decisions. */
    const struct opdecision *ld = &js->last_dec;
    return !(ld->level == r->level && !q_pos_moved(ld->pos, r->pos) &&
             ld->attempts == js->st.attempts && strcmp(ld->action, action) == 0 &&
             strcmp(ld->reason, reason) == 0);
}

/* Journals a decision (cy_journal_due said it is due). */
static void cy_journal_write(struct server *s, struct opjob *js, const struct aiq_aijob *j,
                             double now, const char *action, const struct q_result *r,
                             const char *reason, const char *msg) {
    struct opdecision *ld = &js->last_dec;
    ld->level = r->level;
    ld->pos = r->pos;
    ld->attempts = js->st.attempts;
    snprintf(ld->action, sizeof ld->action, "%s", action);
    snprintf(ld->reason, sizeof ld->reason, "%s", reason);
    struct store_decision d = {s->ncycles, now, j->meta.uid, action, r->level, r->pos,
                               r->score, NULL, reason, msg};
    aiq_err e;
    aiq_err_clear(&e);
    if (store_journal_decision(s->db, &d, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", j->meta.name, NULL,
              "op=journal_decision msg=\"%s\"", e.message);
}

/* Journals a decision when it differs from the job's last one. */
static void cy_journal(struct server *s, struct opjob *js, const struct aiq_aijob *j,
                       double now, const char *action, const struct q_result *r,
                       const char *reason, const char *msg) {
    if (cy_journal_due(js, action, r, reason))
        cy_journal_write(s, js, j, now, action, r, reason, msg);
}

/* Copies src into dst (cap bytes), cut to fit: the per-job copies of the
 * wait path, where snprintf's formatting showed in profiles. */
static void cy_set(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memmove(dst, src, n);
    dst[n] = '\0';
}

/* Sets the job's score and its terms (the factors explained by the
 * policy) in its status. */
static void cy_score_terms(struct server *s, const struct q_input *in, oppolicy *pol, int i,
                           const struct q_result *r, struct opjob *js) {
    double f[FX_NFACTORS];
    struct opst_term t[OPST_MAX_TERMS];
    js->st.has_score = true;
    js->st.score = r->score;
    q_job_factors(s->q, in, i, f);
    int n = oppolicy_explain(pol, f, t, OPST_MAX_TERMS);
    /* Kept to size (the policy's few terms), not OPST_MAX_TERMS per job. */
    if (n > js->terms_cap) {
        struct opst_term *nt = realloc(js->terms, (size_t)n * sizeof *nt);
        if (!nt) {
            OPLOG(&s->log, OPLOG_ERROR, "score_terms_dropped", NULL, NULL,
                  "terms=%d msg=\"out of memory\"", n);
            n = 0; /* shown without its terms; the old storage stays */
        } else {
            js->terms = nt;
            js->terms_cap = n;
        }
    }
    if (n > 0) {
        memcpy(js->terms, t, (size_t)n * sizeof *t);
        /* The names are the policy's: keep them while the job shows them. */
        struct opst_tnames *tn = oppolicy_term_names(pol);
        if (js->tnames != tn) {
            opst_tnames_unref(js->tnames);
            js->tnames = opst_tnames_ref(tn);
        }
    }
    js->st.terms = js->terms;
    js->st.nterms = n;
}

/* What the visibility answer needs from the cycle (all borrowed). */
struct cy_vis {
    struct server *s;
    const struct cy *c;
    const struct q_input *in;
    const q_output *out;
    oppolicy *pol;
};

/* A waiting job of the view: its position and its index in the cycle. */
struct cy_vis_row {
    int32_t pos;
    int i;
};

static int cy_vis_pos_cmp(const void *a, const void *b) {
    const struct cy_vis_row *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sets o[k] = v (owned). v NULL is a JSON null when none was wanted
 * (want false), else a constructor that ran out of memory. Returns 0, or
 * -1 (v put) so the live view answers 500 rather than a document with a
 * member silently missing. */
static int cy_vis_set(json_object *o, const char *k, json_object *v, bool want) {
    if ((want && !v) || json_object_object_add(o, k, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* The score terms of waiting job i, as the explanation gives them. NULL
 * on ENOMEM. */
static json_object *cy_vis_terms(const struct cy_vis *v, int i) {
    double f[FX_NFACTORS];
    struct opst_term tm[OPST_MAX_TERMS];
    q_job_factors(v->s->q, v->in, i, f);
    int n = oppolicy_explain(v->pol, f, tm, OPST_MAX_TERMS);
    json_object *arr = json_object_new_array();
    for (int k = 0; arr && k < n; k++) {
        json_object *e = json_object_new_object();
        bool fin = isfinite(tm[k].value);
        if (!e || cy_vis_set(e, "name", json_object_new_string(tm[k].name), true) ||
            cy_vis_set(e, "value", fin ? json_object_new_double(tm[k].value) : NULL, fin) ||
            json_object_array_add(arr, e) != 0) {
            json_object_put(e);
            json_object_put(arr);
            return NULL;
        }
    }
    return arr;
}

/* One waiting job of the live view; terms only when asked for one job.
 * NULL on ENOMEM. */
static json_object *cy_vis_item(const struct cy_vis *v, int i, bool terms) {
    const struct q_result *r = &v->out->res[i];
    const struct aiq_aijob *j = v->c->jobj[i]->parsed;
    json_object *it = json_object_new_object();
    char msg[512], t[40];
    bool score = isfinite(r->score), eta = r->eta > 0;
    if (!it)
        return NULL;
    q_message(v->in, v->out, i, msg, sizeof msg);
    if (cy_vis_set(it, "namespace", json_object_new_string(j->meta.namespace_), true) ||
        cy_vis_set(it, "name", json_object_new_string(j->meta.name), true) ||
        cy_vis_set(it, "level", json_object_new_string(oppolicy_level_name(v->pol, r->level)),
                   true) ||
        cy_vis_set(it, "position", json_object_new_int(r->pos), true) ||
        cy_vis_set(it, "positionInLevel", json_object_new_int(r->pos_level), true) ||
        cy_vis_set(it, "score", score ? json_object_new_double(r->score) : NULL, score) ||
        cy_vis_set(it, "estimatedStartTime",
                   eta ? json_object_new_string(opst_time(t, sizeof t, r->eta)) : NULL, eta) ||
        cy_vis_set(it, "reason", json_object_new_string(cy_reason(r->reason)), true) ||
        cy_vis_set(it, "message", json_object_new_string(msg), true) ||
        (terms && cy_vis_set(it, "terms", cy_vis_terms(v, i), true))) {
        json_object_put(it);
        return NULL;
    }
    return it;
}

/* The waiting jobs the request asks for (ns, name may be NULL: all), in
 * queue order, into items. Returns how many, or -1 on ENOMEM. */
static int cy_vis_items(const struct cy_vis *v, const char *ns, const char *name,
                        json_object *items) {
    struct cy_vis_row *idx = calloc((size_t)(v->c->njobs ? v->c->njobs : 1), sizeof *idx);
    int n = 0;
    if (!idx)
        return -1;
    for (int i = 0; i < v->c->njobs; i++) {
        const struct aiq_aijob *j = v->c->jobj[i]->parsed;
        if (v->in->jobs[i].state != Q_JOB_PENDING || v->out->res[i].decision != Q_DEC_WAIT)
            continue;
        if (ns && strcmp(ns, j->meta.namespace_) != 0)
            continue;
        if (name && strcmp(name, j->meta.name) != 0)
            continue;
        idx[n].pos = v->out->res[i].pos;
        idx[n++].i = i;
    }
    qsort(idx, (size_t)n, sizeof *idx, cy_vis_pos_cmp);
    for (int k = 0; k < n; k++) {
        json_object *it = cy_vis_item(v, idx[k].i, name != NULL);
        if (!it || json_object_array_add(items, it) != 0) {
            json_object_put(it);
            free(idx);
            return -1;
        }
    }
    free(idx);
    return n;
}

/* Answers one /queue request from this cycle (opvis_fill_fn). NULL on
 * ENOMEM (the request is answered 500). */
static json_object *cy_vis_fill(void *ctx, const char *ns, const char *name, int *status) {
    const struct cy_vis *v = ctx;
    json_object *doc = json_object_new_object(), *items = json_object_new_array();
    char t[40];
    int n = doc && items ? cy_vis_items(v, ns, name, items) : -1;
    const char *pol = v->s->active_policy[0] ? v->s->active_policy : "(built-in default)";
    if (n < 0 || cy_vis_set(doc, "kind", json_object_new_string("QueueView"), true) ||
        cy_vis_set(doc, "cycle", json_object_new_int64(v->s->ncycles), true) ||
        cy_vis_set(doc, "time", json_object_new_string(opst_time(t, sizeof t, v->in->now)),
                   true) ||
        cy_vis_set(doc, "policy", json_object_new_string(pol), true)) {
        json_object_put(doc);
        json_object_put(items);
        return NULL;
    }
    if (cy_vis_set(doc, "items", items, true)) { /* items put there */
        json_object_put(doc);
        return NULL;
    }
    *status = 200;
    if (name && n == 0) {
        char msg[2 * AIQ_MAX_NAME + 96];
        snprintf(msg, sizeof msg, "%s/%s is not waiting in the queue", ns ? ns : "*", name);
        if (cy_vis_set(doc, "message", json_object_new_string(msg), true)) {
            json_object_put(doc);
            return NULL;
        }
        *status = 404;
    }
    return doc;
}

/* Level-triggered: brings every job up to date with its pods first;
 * pods the syncs queued are created before anything is admitted, up to
 * SRV_PODS_PER_TURN a flush (the jobs whose pods wait for a later turn
 * stay Pending, out of this cycle's queue). A job whose row holds wants
 * a sync as its row says (job_sync_wanted_js reads only its state). */
static void cy_sync_pass(struct server *s, opcache *jc, double now) {
    const struct cy_rows *R = s->cyrows;
    size_t n = opcache_count(jc); /* a sync adds and removes no AIJob */
    for (size_t i = 0; i < n; i++) {
        struct opcache_obj *o = opcache_at(jc, i);
        const struct cy_row *row = R && i < R->cap ? &R->row[i] : NULL;
        bool wanted;
        if (row && cy_row_clean(row, opcache_stamp(jc, i))) {
            wanted = row->wanted;
#ifdef AIQ_SELFCHECK
            if (wanted != job_sync_wanted_js(cy_js_of(o)))
                cy_selfcheck_failed(s, "kept_sync", o->key);
#endif
        } else {
            wanted = job_sync_wanted_js(cy_js_of(o));
        }
        if (wanted)
            job_sync(s, o, now);
    }
}

/* Syncs the jobs that want it. */
static void cy_sync_jobs(struct server *s, double now) {
    opcache *jc = s->cache[OPK_AIJOB];
    srv__flush_pods(s, SRV_PODS_PER_TURN);
    cy_sync_pass(s, jc, now);
    if (srv__flush_pods(s, SRV_PODS_PER_TURN) > 0)
        cy_sync_pass(s, jc, now);
    quota_refresh(s, now);
}

/* Builds the cycle's input: nodes, cohorts, jobs, what others hold, usage
 * and fair share. Returns 0, or -1 when nothing can be decided this turn
 * (out of memory, logged; or a failing store, which store_guard.c
 * retries). */
static int cy_build(struct server *s, struct cy *c, oppolicy *pol, double now) {
    if (!s->udir && (s->udir = calloc(1, sizeof *s->udir)) != NULL)
        s->udir->epoch = 1;
    struct cy_udir *d = c->udir = s->udir;
    if (d && d->n > CY_UDIR_MIN && d->n > 4 * d->last_users)
        cy_udir_clear(d); /* bounded: users no job names any more go */
    struct cy_rows *R = cy_rows_fit(s, opcache_count(s->cache[OPK_AIJOB]));
    int brc = d && R ? cy_build_cluster(s, c, R, now) : -1;
    if (brc == 0) {
        cy_cohorts(c);
        brc = cy_rows_groups(R, c);
        if (brc == 0)
            brc = cy__build_jobs(s, c, R, now);
        d->last_users = c->nusers;
    }
    if (brc != 0) {
        OPLOG(&s->log, OPLOG_ERROR, "cycle_failed", NULL, NULL, "msg=\"out of memory\"");
        return -1;
    }
    capacity_others(s, c->nodes, c->nnodes); /* after the gangs' own placements */
    struct cy_usage_ctx uctx = {c};
    aiq_err ue;
    aiq_err_clear(&ue);
    (void)srv_store_ok(s, store_usage_each(s->db, now, oppolicy_half_life(pol), cy_usage_cb,
                                           &uctx, &ue),
                       "usage_each", NULL, &ue);
    /* Quota and fair share read from a failing store would be wrong:
     * decide nothing this turn (store_guard.c retries). */
    if (!srv_store_publishable(s))
        return -1;
    cy_fairshare(c);
    return 0;
}

/* The queue core's input over c's arrays and the policy. */
static void cy_input(struct server *s, struct cy *c, oppolicy *pol, double now,
                     struct q_input *in) {
    memset(in, 0, sizeof *in);
    in->now = now;
    in->nodes = c->nodes;
    in->nnodes = c->nnodes;
    in->groups = c->groups;
    in->ngroups = c->ngroups;
    in->users = c->users;
    in->nusers = c->nusers;
    in->jobs = c->jobs;
    in->njobs = c->njobs;
    oppolicy_qpolicy(pol, &in->policy);
    in->placer = oppolicy_placer(pol);
    in->gen = s->policy_gen;
    /* The operator carries out preemptions and resizes (actions.c) and
     * passes jobs being stopped back as terminating / stopping. */
    in->actions_on = true;
}

/* An admitted job: its placement, attempt and status, journaled; msg
 * (cap bytes) gets the admission message. Returns 0, or -1 when the
 * placement is invalid (logged; the job waits). */
static int cy_admit(struct server *s, const struct cy *c, const q_output *out,
                    const struct q_result *r, struct opcache_obj *o, struct opjob *js,
                    double now, char *msg, size_t cap) {
    const struct aiq_aijob *j = o->parsed;
    int took = cy_take_place(js, c, out, r, j);
    if (took != 0) {
        OPLOG(&s->log, OPLOG_ERROR, took == -2 ? "placement_not_kept" : "placement_invalid",
              o->key, NULL, "nplace=%d%s", (int)r->nplace,
              took == -2 ? " msg=\"out of memory\"" : "");
        return -1;
    }
    opcache_state_changed(o);
    js->st.attempts++;
    js->st.admitted_at = now;
    js->seg_t = now; /* this run's GPU time counts from here */
    js->run_gpu_s = 0;
    js->stopping = js->grow_from = js->grow_start = 0;
    js->st.current_replicas = r->nplace;
    js->st.position = 0;
    js->st.estimated_start = 0;
    js->released = false;
    snprintf(msg, cap, "admitted: %d replica%s on %s%s (attempt %d)", r->nplace,
             r->nplace == 1 ? "" : "s", js->place[0].node,
             r->nplace > 1 ? " and others" : "", js->st.attempts);
    js->st.phase = AIQ_PHASE_ADMITTED;
    snprintf(js->st.reason, sizeof js->st.reason, "%s", r->backfilled ? "Backfilled" : "Admitted");
    (void)opstatus_set_message(&js->st, msg); /* ENOMEM: the earlier message stays */
    opmetrics_admitted_add(s->metrics, 1);
    opmetrics_observe_wait(s->metrics, now - js->st.queued_at);
    job_publish(s, o, now);
    cy_journal(s, js, j, now, "admit", r, js->st.reason, msg);
    OPLOG(&s->log, OPLOG_INFO, "job_admitted", o->key, srv__rv(opcache_raw(o)),
          "level=%s score=%.4f replicas=%d node0=%s attempt=%d wait_s=%.1f",
          js->st.level, r->score, r->nplace, js->place[0].node, js->st.attempts,
          now - js->st.queued_at);
    return 0;
}

/* A rejected job: Rejected, its pods deleted, journaled. */
static void cy_reject(struct server *s, const struct q_result *r, struct opcache_obj *o,
                      struct opjob *js, double now, const char *msg) {
    const struct aiq_aijob *j = o->parsed;
    opcache_state_changed(o);
    js->st.phase = AIQ_PHASE_REJECTED;
    js->st.position = 0;
    snprintf(js->st.reason, sizeof js->st.reason, "%s", cy_reason(r->reason));
    (void)opstatus_set_message(&js->st, msg); /* ENOMEM: the earlier message stays */
    srv__event_of(s, o, "Warning", "Rejected", msg);
    job_delete_pods(s, o);
    cy_journal(s, js, j, now, "reject", r, cy_reason(r->reason), msg);
    OPLOG(&s->log, OPLOG_WARN, "job_rejected", o->key, srv__rv(opcache_raw(o)),
          "reason=%s msg=\"%s\"", cy_reason(r->reason), msg);
}

/* The status message of a job blocked behind another: the core's message
 * names the blocker, which changes whenever the head of the queue does
 * (an arrival ahead, an admission), and every job behind it would then
 * have a due status. The status says why without naming it; the live
 * view (/queue, kubectl aiq explain) names it. */
#define CY_BLOCKED_MSG \
    "blocked behind a job ahead of it that cannot start yet (kubectl aiq explain names it)"

/* A waiting job: position, ETA, reason; its score with a due status.
 * msg (cap bytes) is the core's message, or "" for a blocked job, whose
 * status does not carry it: it is made here only for the journal. */
static void cy_wait(struct server *s, const struct q_input *in, const q_output *out,
                    oppolicy *pol, int i, const struct q_result *r, struct opcache_obj *o,
                    struct opjob *js, double now, char *msg, size_t cap,
                    long *pending_per_level) {
    const struct aiq_aijob *j = o->parsed;
    bool blocked = r->reason == Q_R_BLOCKED;
    js->st.position = r->pos;
    js->st.estimated_start = r->eta;
    cy_set(js->st.reason, sizeof js->st.reason, cy_reason(r->reason));
    /* ENOMEM: the earlier message stays */
    (void)opstatus_set_message(&js->st, blocked ? CY_BLOCKED_MSG : msg);
    /* Score and terms are written with a due status only; the
     * live ones come from the visibility endpoint (/queue). */
    if (job_status_due(o, js, now)) {
        cy_score_terms(s, in, pol, i, r, js);
        job_publish(s, o, now);
    }
    if (r->level >= 0 && r->level < AIQ_MAX_LEVELS)
        pending_per_level[r->level]++;
    if (!cy_journal_due(js, "wait", r, cy_reason(r->reason)))
        return;
    if (blocked)
        q_message(in, out, i, msg, cap);
    cy_journal_write(s, js, j, now, "wait", r, cy_reason(r->reason), msg);
}

/* The key of a waiting job's decision r (cy_wkey) into *k; false for
 * a preempting job's, which has none. */
static bool cy_wait_key(const struct server *s, const struct q_result *r, struct cy_wkey *k) {
    memset(k, 0, sizeof *k);
    if (r->decision != Q_DEC_WAIT || r->reason == Q_R_PREEMPTING)
        return false;
    k->policy_gen = s->policy_gen;
    _Static_assert(sizeof k->num == 3 * sizeof r->need, "the result's numbers");
    memcpy(k->num, &r->need, sizeof k->num);
    k->level = r->level;
    k->reason = r->reason;
    k->res = r->res;
    k->scope = r->group_scope;
    k->set = 1;
    return true;
}

#ifdef AIQ_SELFCHECK
/* A kept wait's status line against the one worked out in full. */
static void cy_wait_check(struct server *s, const struct q_input *in, const q_output *out,
                          oppolicy *pol, int i, const struct q_result *r,
                          struct opcache_obj *o, struct opjob *js, double now) {
    char msg[512];
    q_message(in, out, i, msg, sizeof msg);
    const char *m = r->reason == Q_R_BLOCKED ? CY_BLOCKED_MSG : msg;
    if (strncmp(opstatus_message(&js->st), m, OPST_MESSAGE_MAX - 1) != 0 ||
        strncmp(js->st.level, oppolicy_level_name(pol, r->level), sizeof js->st.level - 1) != 0 ||
        strncmp(js->st.reason, cy_reason(r->reason), sizeof js->st.reason - 1) != 0 ||
        job_status_due(o, js, now))
        cy_selfcheck_failed(s, "kept_wait", o->key);
}
#endif

/* What deciding job k reads unless its last wait may be kept (a kept
 * wait reads only its row, and touches its state only when its position
 * or estimate moved): its cache entry's first line and its state's hot
 * lines. */
static inline void cy_prefetch_decide(const struct cy *c, const struct cy_rows *R, int k) {
    if (R->row[c->jrow[k]].wkey.set)
        return;
    cy_prefetch_obj(c->jobj[k]);
    cy_prefetch_js(c->jobjs[k]);
}

/* Whether a waiting job's decision r with key k can be kept (row says
 * how its last one went). The row's own stamps are the cache entry's as
 * the build read them this cycle (kept or filled), and nothing since
 * changed this job, so the entry itself is not read. */
static inline bool cy_wait_keeps(const struct cy_row *row, const struct cy_wkey *k,
                                 const struct q_result *r, double now) {
    return row->wchanged == row->changed && row->wseq == row->seq && row->wpub &&
           memcmp(&row->wkey, k, sizeof *k) == 0 &&
           !opstatus_moved(row->wpos, row->weta, r->pos, r->eta, now);
}

/* Notes in row how a waiting job's decision worked out in full left its
 * state (after the wait's own publish and journal). */
static void cy_wait_note(struct cy_row *row, const struct cy_wkey *k,
                         const struct opcache_obj *o, const struct opjob *js) {
    row->wkey = *k;
    row->wchanged = o->changed;
    row->wseq = o->state_seq;
    row->wpub = js->pub_rv != OPCACHE_RV_NONE && js->pub_seen == o->changed;
    row->wpos = js->pub_pos;
    row->weta = js->pub_eta;
    row->jpos = js->last_dec.pos;
#ifdef AIQ_SELFCHECK
    row->spos = js->st.position;
    row->seta = js->st.estimated_start;
#endif
}

/* A waiting job whose last decision was worked out in full with the same
 * key, its job unchanged since (cy_wait_keeps): its level, reason and
 * message are what that decision set, and its status is not due (its
 * position and estimated start did not move as a status write's must),
 * so only they are set, and the decision journaled when its position
 * moved as the journal's must. */
static void cy_wait_kept(struct server *s, const struct q_input *in, const q_output *out,
                         oppolicy *pol, int i, const struct q_result *r, struct cy_row *row,
                         struct opcache_obj *o, struct opjob *js, double now,
                         long *pending_per_level) {
    /* The state keeps the position and estimated start of the last
     * decision worked out in full, within the status band of these (or
     * the wait would not be kept), and so does any status written from
     * it meanwhile: the live ones come from the visibility endpoint.
     * Writing them here touched every waiting job's state when an
     * arrival went ahead of them all (a cache miss each: 1.5 ms of the
     * arrival's cycle at 10k). */
    const char *why = cy_reason(r->reason);
    bool journal = q_pos_moved(row->jpos, r->pos);
#ifdef AIQ_SELFCHECK
    cy_wait_check(s, in, out, pol, i, r, o, js, now);
    if (row->changed != o->changed || row->seq != o->state_seq ||
        js->st.position != row->spos || js->st.estimated_start != row->seta ||
        js->pub_pos != row->wpos || js->pub_eta != row->weta || js->pub_rv == OPCACHE_RV_NONE ||
        js->pub_seen != o->changed || js->last_dec.pos != row->jpos ||
        journal != cy_journal_due(js, "wait", r, why))
        cy_selfcheck_failed(s, "kept_wait_state", o->key);
#else
    (void)pol;
#endif
    if (r->level >= 0 && r->level < AIQ_MAX_LEVELS)
        pending_per_level[r->level]++;
    if (journal) {
        char msg[512];
        q_message(in, out, i, msg, sizeof msg);
        cy_journal_write(s, js, o->parsed, now, "wait", r, why, msg);
        row->jpos = r->pos;
    }
}

/* Applies the core's decision to every pending job; the admitted ones go
 * to admitted[] (*nadm of them) for recording and release. A waiting
 * job's decision is kept when cy_wait_kept says so; one worked out in
 * full leaves its key in its row. */
static void cy_decide(struct server *s, struct cy *c, struct q_input *in, q_output *out,
                      oppolicy *pol, double now, struct opcache_obj **admitted, int *nadm) {
    long pending_per_level[AIQ_MAX_LEVELS] = {0};
    for (int i = 0; i < c->njobs; i++) {
        if (i + CY_AHEAD < c->njobs)
            cy_prefetch_decide(c, s->cyrows, i + CY_AHEAD);
        if (c->jobs[i].state != Q_JOB_PENDING)
            continue;
        struct opcache_obj *o = c->jobj[i];
        struct opjob *js = c->jobjs[i];
        const struct q_result *r = &out->res[i];
        struct cy_row *row = &s->cyrows->row[c->jrow[i]];
        struct cy_wkey k;
        if (cy_wait_key(s, r, &k) && cy_wait_keeps(row, &k, r, now)) {
            cy_wait_kept(s, in, out, pol, i, r, row, o, js, now, pending_per_level);
            c->nwkept++;
            continue;
        }
        char msg[512];
        /* A blocked job's message is made only when it is journaled
         * (cy_wait): its status does not carry it. */
        if (r->decision == Q_DEC_WAIT && r->reason == Q_R_BLOCKED)
            msg[0] = '\0';
        else
            q_message(in, out, i, msg, sizeof msg);
        cy_set(js->st.level, sizeof js->st.level, oppolicy_level_name(pol, r->level));
        if (r->decision != Q_DEC_WAIT)
            cy_score_terms(s, in, pol, i, r, js);
        if (r->decision == Q_DEC_ADMIT) {
            if (cy_admit(s, c, out, r, o, js, now, msg, sizeof msg) == 0)
                admitted[(*nadm)++] = o;
        } else if (r->decision == Q_DEC_REJECT && !capgrace_hold(s, r->reason, now, msg, sizeof msg)) {
            cy_reject(s, r, o, js, now, msg);
        } else {
            cy_wait(s, in, out, pol, i, r, o, js, now, msg, sizeof msg, pending_per_level);
        }
        cy_wait_note(row, &k, o, js);
    }
    if (opvis_waiting(s->vis)) {
        struct cy_vis vis = {s, c, in, out, pol};
        opvis_answer(s->vis, cy_vis_fill, &vis);
    }
    opmetrics_pending_reset(s->metrics);
    for (int l = 0; l < oppolicy_nlevels(pol); l++)
        opmetrics_pending_set(s->metrics, oppolicy_level_name(pol, l), pending_per_level[l]);
}

/* Records every admission (attempt and job mark) and commits. False when
 * the store did not take them all: nothing of this turn is published or
 * released (fail closed). */
static bool cy_record(struct server *s, struct opcache_obj **admitted, int nadm, double now) {
    aiq_err ue;
    for (int k = 0; k < nadm; k++) {
        struct opcache_obj *o = admitted[k];
        struct opjob *js = ((struct opext *)o->ext)->job;
        const struct aiq_aijob *j = o->parsed;
        char *pj = job_place_json(js);
        aiq_err_clear(&ue);
        if (srv_store_ok(s, store_attempt_begin(s->db, j->meta.uid, js->st.attempts, now, pj, &ue),
                         "attempt_begin", o->key, &ue))
            (void)srv_store_ok(s, store_job_mark(s->db, j->meta.uid, STORE_JOB_ADMITTED, now, &ue),
                               "job_mark", o->key, &ue); /* settled below */
        free(pj);
    }
    /* Fail closed: no admission of this turn is published or
     * released unless all of them are committed. */
    aiq_err_clear(&ue);
    if (!srv_store_settle(s) || !srv_store_ok(s, store_begin(s->db, &ue), "begin", NULL, &ue))
        return false;
    crashpoint("admit_recorded");
    for (int k = 0; k < nadm; k++)
        if (((struct opext *)admitted[k]->ext)->job->st.attempts > 1) {
            crashpoint("retry_admit_recorded"); /* a requeued job among them */
            break;
        }
    return true;
}

/* Releases the admitted gangs. The store holds each admission and its
 * placement already (cy_record), so the pods go first, one merge patch
 * each in one parallel batch; the statuses (phase Admitted, the
 * placement) are due and urgent, and the flush after this turn writes
 * them within the write budget, at most a quarter second's worth in this
 * turn (release_turn), so the next cycle's release does not wait behind
 * them. A restart between the two takes the admission back from the
 * store (job_recover_admission). */
static void cy_release(struct server *s, struct opcache_obj **admitted, int nadm) {
    int npods = jobs_release(s, admitted, nadm);
    s->release_turn = s->release_turn || npods > 0;
    for (int k = 0; k < nadm; k++) {
        struct opcache_obj *o = admitted[k];
        struct opjob *js = ((struct opext *)o->ext)->job;
        srv__event_of(s, o, "Normal", "Admitted", opstatus_message(&js->st));
        OPLOG(&s->log, OPLOG_INFO, "gang_released", o->key, srv__rv(opcache_raw(o)),
              "pods=%d replicas=%d released=%d", js->released ? js->st.nplacement : 0,
              js->st.nplacement, (int)js->released);
    }
    OPLOG(&s->log, OPLOG_DEBUG, "cycle_released", NULL, NULL, "jobs=%d pods=%d", nadm, npods);
}

/* Runs one cycle; see server.h. Steps: sync the jobs, build the input,
 * decide (q_cycle_run), record, release, then the preemptions and
 * resizes. */
void cycle_run(struct server *s, double now) {
    struct cy c;
    q_output out;
    aiq_err e;
    double t0 = srv_now();
    memset(&c, 0, sizeof c);
    memset(&out, 0, sizeof out);
    aiq_err_clear(&e);
    s->ncycles++;

    /* where the cycle's time goes, for the debug log: sync, build,
     * core, decide, record and release, actions */
    double tp[6] = {0};
    cy_sync_jobs(s, now);
    tp[0] = srv_now();
    oppolicy *pol = srv__policy(s);
    if (cy_build(s, &c, pol, now) != 0)
        goto out;
    struct q_input in;
    cy_input(s, &c, pol, now, &in);
    q_scorer sc;
    oppolicy_scorer(pol, &sc);
    tp[1] = srv_now();
    if (q_cycle_run(s->q, &in, &sc, &out, &e) != AIQ_OK) {
        OPLOG(&s->log, OPLOG_ERROR, "cycle_failed", NULL, NULL, "field=%s msg=\"%s\"",
              e.field, e.message);
        goto out;
    }
    struct opcache_obj **admitted = calloc((size_t)(c.njobs ? c.njobs : 1), sizeof *admitted);
    int nadm = 0;
    if (!admitted)
        goto out;
    tp[2] = srv_now();
    cy_decide(s, &c, &in, &out, pol, now, admitted, &nadm);
    tp[3] = srv_now();
    /* Record first, release second: the placement is in the AIJob status
     * and in the store before any pod loses its gate, so a restart in
     * between re-applies the same placement. */
    if (nadm > 0 && !cy_record(s, admitted, nadm, now)) {
        free(admitted);
        goto out;
    }
    if (nadm > 0)
        cy_release(s, admitted, nadm);
    free(admitted);
    tp[4] = srv_now();
    /* Then the preemptions and resizes, after every admission's record. */
    cycle_actions(s, &in, &out, c.jobj, now);
    tp[5] = srv_now();

out:;
    double t1 = srv_now(), dt = t1 - t0, ph[6];
    /* a phase not reached (the cycle stopped before it) counts 0 */
    for (int k = 0, prev = -1; k < 6; k++) {
        ph[k] = tp[k] > 0 ? (tp[k] - (prev < 0 ? t0 : tp[prev])) * 1000 : 0;
        if (tp[k] > 0)
            prev = k;
    }
    opmetrics_observe_cycle(s->metrics, dt);
    OPLOG(&s->log, OPLOG_DEBUG, "cycle", NULL, NULL,
          "n=%lld jobs=%d nodes=%d groups=%d users=%d admitted=%d kept=%d moved=%d "
          "set_aside=%d waits_kept=%d ms=%.2f sync_ms=%.2f build_ms=%.2f core_ms=%.2f decide_ms=%.2f release_ms=%.2f "
          "actions_ms=%.2f",
          (long long)s->ncycles, c.njobs, c.nnodes, c.ngroups, c.nusers, out.nadmitted, c.nkept,
          c.nmoved, c.nspilled, c.nwkept, dt * 1000, ph[0], ph[1], ph[2], ph[3], ph[4], ph[5]);
    cy_free(&c);
}
