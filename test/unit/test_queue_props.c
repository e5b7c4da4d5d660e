/* test_queue_props.c -- randomized property tests of the queue core over
 * thousands of generated clusters (seeded splitmix64, reproducible; set
 * AIQ_QPROPS_SEED / AIQ_QPROPS_N to explore). After every cycle it checks,
 * independently of the queue's own code:
 *   - no GPU, CPU or memory is over-committed, model/domain are honoured;
 *   - gangs are all-or-nothing and stay in one domain;
 *   - no user or group quota or budget is passed;
 *   - the order is by level, then score; strict mode admits nothing behind
 *     a job that waits for capacity; with backfill only backfilled jobs;
 *   - backfill never delays the reserved job (re-run with the backfilled
 *     jobs running: the reserved job starts no later than promised);
 *   - rejected jobs really fit no node; estimates are sane;
 *   - an incremental cycle decides exactly like a fresh state. */
#include "test/unit/th.h"

#include <math.h>
#include <stdlib.h>

#include "queue/queue.h"

#define NOW 1795262400.0
#define GIB (1024LL * 1024 * 1024)
#define MAXN 12
#define MAXJ 48
#define MAXU 5
#define MAXG 3

static uint64_t rng;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd(int n) { return (int)(next() % (uint64_t)n); }
static int chance(int pct) { return rnd(100) < pct; }

static int props_score(void *ctx, const double *pf, double *s) {
    (void)ctx;
    *s = -3 * pf[Q_PF_NODE_FREE_GPUS_AFTER] - pf[Q_PF_FRAG_DELTA] + pf[Q_PF_GANG_SAME_NODE] -
         pf[Q_PF_GPU_MEM_FREE_AFTER] / 64;
    return pf[Q_PF_NODE_GPUS] == 3 ? -1 : 0;
}
static const q_placer props_placer = {NULL, props_score};

static const char *const models[] = {"A100", "H100"};
static const char *const domains[] = {"d1", "d2"};
static const char *const lvnames[] = {"l0", "l1", "l2"};

typedef struct {
    struct q_node nodes[MAXN];
    struct q_job jobs[MAXJ];
    struct q_place pl[MAXJ][8];
    struct q_user users[MAXU];
    struct q_group groups[MAXG];
    char keys[MAXJ][16];
    struct q_input in;
} world;

static int scorer_score(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_JOB_PRIORITY] * 10 + f[Q_F_USER_LEVEL] - f[Q_F_JOB_GPUS] * 0.5;
    return 0;
}
static int scorer_level(void *ctx, const double *f, int *lv) {
    int nl = *(const int *)ctx;
    *lv = (int)f[Q_F_JOB_PRIORITY] % nl;
    return 0;
}

/* A GPU share: fixed MiB, or a fraction (gpu_milli) of the GPU. */
static int is_share(const struct q_job *j) {
    return j->gpus == 0 && (j->gpu_memory_mib > 0 || j->gpu_milli > 0);
}

/* MiB one replica's share takes on a GPU of tot MiB (fractions round
 * down, at least 1). */
static int64_t share_mib(const struct q_job *j, int64_t tot) {
    if (j->gpu_milli <= 0) return j->gpu_memory_mib;
    return tot * j->gpu_milli / 1000 > 0 ? tot * j->gpu_milli / 1000 : 1;
}

static int64_t units(const struct q_job *j) {
    return j->gpus > 0 ? j->gpus : is_share(j);
}

/* Tries to place running job j replica by replica on random nodes (test's
 * own simple placement). Returns 1 and fills nodes' used on success. */
static int place_running(world *w, int ji) {
    struct q_job *j = &w->jobs[ji];
    struct q_node saved[MAXN];
    memcpy(saved, w->nodes, sizeof saved);
    const char *dom = NULL;
    for (int k = 0; k < j->replicas; k++) {
        int done = 0;
        for (int tries = 0; tries < 20 && !done; tries++) {
            int ni = rnd(w->in.nnodes);
            struct q_node *n = &w->nodes[ni];
            if (k > 0 && strcmp(n->domain ? n->domain : "", dom) != 0) continue;
            if (n->cpu_alloc - n->cpu_used < j->cpu_milli || n->mem_alloc - n->mem_used < j->memory_bytes)
                continue;
            if (j->gpu_model && (!n->gpu_model || strcmp(n->gpu_model, j->gpu_model))) continue;
            struct q_place p = {ni, 0, j->gpu_memory_mib};
            if (j->gpus > 0) {
                int got = 0;
                for (int g = 0; g < n->ngpus && got < j->gpus; g++)
                    if (n->gpu_mem_used[g] == 0 && n->gpu_mem_total[g] >= j->gpu_memory_mib) {
                        p.gpu_mask |= 1u << g;
                        got++;
                    }
                if (got < j->gpus) continue;
                for (int g = 0; g < n->ngpus; g++)
                    if ((p.gpu_mask >> g) & 1u) n->gpu_mem_used[g] = n->gpu_mem_total[g];
            } else if (is_share(j)) {
                int g = -1;
                for (int x = 0; x < n->ngpus && g < 0; x++)
                    if (n->gpu_mem_total[x] - n->gpu_mem_used[x] >= share_mib(j, n->gpu_mem_total[x])) g = x;
                if (g < 0) continue;
                p.gpu_mask = 1u << g;
                p.gpu_mem_mib = share_mib(j, n->gpu_mem_total[g]);
                n->gpu_mem_used[g] += p.gpu_mem_mib;
            }
            n->cpu_used += j->cpu_milli;
            n->mem_used += j->memory_bytes;
            w->pl[ji][k] = p;
            if (k == 0) dom = n->domain ? n->domain : "";
            done = 1;
        }
        if (!done) {
            memcpy(w->nodes, saved, sizeof saved);
            return 0;
        }
    }
    j->placement = w->pl[ji];
    return 1;
}

static void gen(world *w) {
    memset(w, 0, sizeof *w);
    struct q_input *in = &w->in;
    in->now = NOW;
    in->nnodes = 1 + rnd(MAXN);
    static const int gpu_counts[] = {0, 1, 2, 4, 8, 8};
    static const int64_t gmems[] = {16384, 40960, 81920};
    for (int i = 0; i < in->nnodes; i++) {
        struct q_node *n = &w->nodes[i];
        n->name = "node";
        n->ngpus = gpu_counts[rnd(6)];
        int64_t gm = gmems[rnd(3)];
        for (int g = 0; g < n->ngpus; g++) n->gpu_mem_total[g] = gm;
        n->gpu_model = n->ngpus && chance(60) ? models[rnd(2)] : NULL;
        n->domain = chance(50) ? domains[rnd(2)] : NULL;
        n->cpu_alloc = 8000 + 8000 * rnd(8);
        n->mem_alloc = (32 + 32 * rnd(8)) * GIB;
        n->schedulable = chance(90);
    }
    in->ngroups = rnd(MAXG + 1);
    in->nusers = rnd(MAXU + 1);
    for (int g = 0; g < in->ngroups; g++) {
        struct q_group *gr = &w->groups[g];
        gr->name = "group";
        gr->level = rnd(5);
        gr->quota.gpus = gr->quota.gpu_memory_mib = gr->quota.cpu_milli = -1;
        gr->quota.memory_bytes = gr->quota.jobs = -1;
        gr->budget_gpu_hours = -1;
        gr->window_end = NOW + 86400;
    }
    for (int u = 0; u < in->nusers; u++) {
        struct q_user *us = &w->users[u];
        us->name = "user";
        us->group = in->ngroups ? rnd(in->ngroups) : -1;
        us->level = rnd(5);
        us->quota.gpus = us->quota.gpu_memory_mib = us->quota.cpu_milli = -1;
        us->quota.memory_bytes = us->quota.jobs = -1;
        us->budget_gpu_hours = -1;
        us->window_end = NOW + 86400;
    }
    in->njobs = rnd(MAXJ + 1);
    static const int64_t jm[] = {0, 0, 0, 10000, 30000, 50000, 0, 90000};
    for (int i = 0; i < in->njobs; i++) {
        struct q_job *j = &w->jobs[i];
        snprintf(w->keys[i], sizeof w->keys[i], "ns/j%02d", i);
        j->key = j->uid = w->keys[i];
        j->user = in->nusers && chance(80) ? rnd(in->nusers) : -1;
        j->group = j->user >= 0 ? w->users[j->user].group : (in->ngroups && chance(50) ? rnd(in->ngroups) : -1);
        j->priority = rnd(20);
        j->replicas = chance(70) ? 1 : 1 + rnd(chance(20) ? 6 : 3);
        j->gpus = chance(15) ? 0 : 1 + rnd(8);
        j->gpu_memory_mib = jm[rnd(8)];
        /* a third of the shares are fractions of the GPU they land on */
        j->gpu_milli = 0;
        if (j->gpus == 0 && chance(33)) {
            j->gpu_memory_mib = 0;
            j->gpu_milli = 1 + rnd(999);
        }
        j->cpu_milli = 500 * rnd(8);
        j->memory_bytes = rnd(16) * GIB;
        j->gpu_model = chance(20) ? models[rnd(2)] : NULL;
        j->domain = chance(15) ? domains[rnd(2)] : NULL;
        j->queued = j->created = NOW - rnd(20000);
        j->pred_runtime_s = chance(80) ? 600 * (1 + rnd(12)) : 0;
        j->est_runtime_s = chance(30) ? 3600 : 0;
        j->suspended = chance(4);
        if (chance(40)) {
            j->state = Q_JOB_RUNNING;
            j->suspended = false;
            j->end_time = chance(85) ? NOW + 300 * rnd(40) - 600 * chance(10) : 0;
            if (!place_running(w, i)) j->state = Q_JOB_PENDING;
        }
    }
    /* Quotas and budgets at or above what running jobs already use. */
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? in->ngroups : in->nusers;
        for (int o = 0; o < n; o++) {
            int64_t gp = 0, jobs = 0;
            double hours = 0;
            for (int i = 0; i < in->njobs; i++) {
                const struct q_job *j = &w->jobs[i];
                if (j->state != Q_JOB_RUNNING || (pass ? j->group : j->user) != o) continue;
                gp += (int64_t)j->replicas * j->gpus;
                jobs++;
                if (j->end_time > NOW) hours += (double)(j->replicas * units(j)) * (j->end_time - NOW) / 3600;
            }
            struct aiq_quota *q = pass ? &w->groups[o].quota : &w->users[o].quota;
            if (chance(60)) q->gpus = gp + rnd(12);
            if (chance(30)) q->jobs = jobs + rnd(4);
            if (chance(25)) {
                double *b = pass ? &w->groups[o].budget_gpu_hours : &w->users[o].budget_gpu_hours;
                double *used = pass ? &w->groups[o].used_gpu_hours : &w->users[o].used_gpu_hours;
                *used = rnd(50);
                *b = *used + hours + rnd(60);
            }
        }
    }
    in->nodes = w->nodes;
    in->jobs = w->jobs;
    in->users = w->users;
    in->groups = w->groups;
    in->policy.nlevels = 1 + rnd(3);
    in->policy.level_names = lvnames;
    in->policy.backfill = chance(50) ? AIQ_BACKFILL_EASY : AIQ_BACKFILL_NONE;
    /* binpack, spread, fgd, or a placement score (which fails on nodes of
     * 3 GPUs: those candidates rank last) */
    int pm = rnd(4);
    in->policy.placement = pm == 3 ? AIQ_PLACE_BINPACK : (aiq_placement)pm;
    in->placer = pm == 3 ? &props_placer : NULL;
    in->policy.starvation_after_s = chance(30) ? 3600 * (1 + rnd(4)) : 0;
    in->policy.promote_to = 0;
}

static int failed_once;
#define PCHECK(c, ...)                                             \
    do {                                                           \
        if (!CHECK(c) && !failed_once) {                           \
            failed_once = 1;                                       \
            printf("  iteration %d: ", iter);                      \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
        }                                                          \
    } while (0)

static int same(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* Capacity, gang, model/domain: apply every admitted placement to a copy
 * of the nodes and check each step. */
static void check_capacity(int iter, const world *w, const q_output *out) {
    struct q_node nodes[MAXN];
    memcpy(nodes, w->nodes, sizeof nodes);
    for (int i = 0; i < w->in.njobs; i++) {
        const struct q_result *r = &out->res[i];
        if (r->decision != Q_DEC_ADMIT) continue;
        const struct q_job *j = &w->jobs[i];
        PCHECK(j->state == Q_JOB_PENDING && !j->suspended, "job %d admitted twice or suspended", i);
        int want = j->max_replicas > 0 && j->min_replicas > 0 ? j->min_replicas : j->replicas;
        PCHECK(r->nplace == want, "job %d: %d placements for %d replicas", i, r->nplace, want);
        const char *dom0 = NULL;
        for (int k = 0; k < r->nplace; k++) {
            const struct q_place *p = &out->places[r->place_off + k];
            PCHECK(p->node >= 0 && p->node < w->in.nnodes, "bad node");
            struct q_node *n = &nodes[p->node];
            PCHECK(n->schedulable, "job %d on an unschedulable node", i);
            if (j->gpu_model) PCHECK(same(n->gpu_model, j->gpu_model), "job %d wrong model", i);
            if (j->domain) PCHECK(same(n->domain, j->domain), "job %d wrong domain", i);
            if (k == 0) dom0 = n->domain;
            PCHECK(same(n->domain, dom0), "job %d gang spans domains", i);
            int bits = __builtin_popcount(p->gpu_mask);
            if (j->gpus > 0) {
                PCHECK(bits == j->gpus, "job %d replica %d: %d GPUs, wanted %d", i, k, bits, j->gpus);
                for (int g = 0; g < Q_MAX_GPUS; g++) {
                    if (!((p->gpu_mask >> g) & 1u)) continue;
                    PCHECK(g < n->ngpus, "GPU index out of range");
                    PCHECK(n->gpu_mem_used[g] == 0, "job %d: GPU %d of node %d over-committed", i, g, p->node);
                    PCHECK(n->gpu_mem_total[g] >= j->gpu_memory_mib, "job %d: GPU too small", i);
                    n->gpu_mem_used[g] = n->gpu_mem_total[g];
                }
            } else if (is_share(j)) {
                PCHECK(bits == 1, "shared job %d holds %d GPUs", i, bits);
                int g = __builtin_ctz(p->gpu_mask | (1u << 31));
                PCHECK(g < n->ngpus, "shared GPU index out of range");
                if (g < n->ngpus) {
                    PCHECK(p->gpu_mem_mib == share_mib(j, n->gpu_mem_total[g]),
                           "job %d: share of %lld MiB, wanted %lld", i, (long long)p->gpu_mem_mib,
                           (long long)share_mib(j, n->gpu_mem_total[g]));
                    n->gpu_mem_used[g] += p->gpu_mem_mib;
                    PCHECK(n->gpu_mem_used[g] <= n->gpu_mem_total[g], "job %d: shared GPU over-committed", i);
                }
            }
            n->cpu_used += j->cpu_milli;
            n->mem_used += j->memory_bytes;
            PCHECK(n->cpu_used <= n->cpu_alloc, "job %d: CPU over-committed on node %d", i, p->node);
            PCHECK(n->mem_used <= n->mem_alloc, "job %d: memory over-committed", i);
        }
    }
}

static void check_quota(int iter, const world *w, const q_output *out) {
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? w->in.ngroups : w->in.nusers;
        for (int o = 0; o < n; o++) {
            int64_t gp = 0, jobs = 0;
            double hours = 0;
            for (int i = 0; i < w->in.njobs; i++) {
                const struct q_job *j = &w->jobs[i];
                if ((pass ? j->group : j->user) != o) continue;
                double pr = j->pred_runtime_s > 0 ? j->pred_runtime_s : j->est_runtime_s;
                if (j->state == Q_JOB_RUNNING) {
                    if (j->end_time > NOW) hours += (double)(j->replicas * units(j)) * (j->end_time - NOW) / 3600;
                } else if (out->res[i].decision == Q_DEC_ADMIT) {
                    hours += (double)(j->replicas * units(j)) * pr / 3600;
                } else {
                    continue;
                }
                gp += (int64_t)j->replicas * j->gpus;
                jobs++;
            }
            const struct aiq_quota *q = pass ? &w->groups[o].quota : &w->users[o].quota;
            if (q->gpus >= 0) PCHECK(gp <= q->gpus, "%s %d: %lld GPUs > quota %lld", pass ? "group" : "user", o, (long long)gp, (long long)q->gpus);
            if (q->jobs >= 0) PCHECK(jobs <= q->jobs, "jobs quota passed");
            double b = pass ? w->groups[o].budget_gpu_hours : w->users[o].budget_gpu_hours;
            double used = pass ? w->groups[o].used_gpu_hours : w->users[o].used_gpu_hours;
            if (b >= 0) PCHECK(used + hours <= b + 1e-6, "budget passed: %.3f > %.3f", used + hours, b);
        }
    }
}

static void check_order(int iter, const world *w, const q_output *out) {
    bool strict = w->in.policy.backfill == AIQ_BACKFILL_NONE || out->reserved_job < 0;
    int blocked_at = -1, pos = 0;
    for (int k = 0; k < out->norder; k++) {
        int j = out->order[k];
        const struct q_result *r = &out->res[j];
        PCHECK(w->jobs[j].state == Q_JOB_PENDING, "running job in the order");
        if (k > 0) {
            const struct q_result *p = &out->res[out->order[k - 1]];
            PCHECK(p->level < r->level || (p->level == r->level && p->score >= r->score),
                   "order: level %d score %g before level %d score %g", p->level, p->score, r->level, r->score);
        }
        if (r->pos) PCHECK(r->pos == ++pos, "positions not consecutive");
        if (r->decision == Q_DEC_WAIT && (r->reason == Q_R_CAPACITY || r->reason == Q_R_BLOCKED) && blocked_at < 0)
            blocked_at = k;
        if (r->decision == Q_DEC_ADMIT && blocked_at >= 0) {
            if (strict) PCHECK(0, "strict mode admitted job %d behind a waiting job", j);
            else PCHECK(r->backfilled, "job %d admitted past the head without backfill", j);
        }
        if (r->decision == Q_DEC_ADMIT) PCHECK(r->eta == NOW, "admitted eta");
        if (r->eta != 0) PCHECK(r->eta >= NOW - 1e-6, "eta in the past");
        if (r->decision == Q_DEC_WAIT && r->reason == Q_R_BLOCKED)
            PCHECK(r->blocker >= 0 && out->res[r->blocker].decision == Q_DEC_WAIT, "blocker not waiting");
    }
    if (out->reserved_job >= 0)
        PCHECK(out->res[out->reserved_job].reason == Q_R_CAPACITY, "reserved job not waiting for capacity");
}

/* A replica fits an empty node (ignoring use and cordons)? */
static int fits_empty(const struct q_node *n, const struct q_job *j) {
    if (j->gpu_model && !same(n->gpu_model, j->gpu_model)) return 0;
    if (j->domain && !same(n->domain, j->domain)) return 0;
    if (n->cpu_alloc < j->cpu_milli || n->mem_alloc < j->memory_bytes) return 0;
    int c = 0;
    for (int g = 0; g < n->ngpus; g++) c += n->gpu_mem_total[g] >= j->gpu_memory_mib;
    if (j->gpus > 0) return c >= j->gpus;
    if (j->gpu_milli > 0) return n->ngpus >= 1;
    if (j->gpu_memory_mib > 0) return c >= 1;
    return 1;
}

static void check_rejects(int iter, const world *w, const q_output *out) {
    for (int i = 0; i < w->in.njobs; i++) {
        const struct q_result *r = &out->res[i];
        if (r->decision != Q_DEC_REJECT) continue;
        if (r->reason == Q_R_NO_NODE || r->reason == Q_R_NODE_TOO_SMALL)
            for (int n = 0; n < w->in.nnodes; n++)
                PCHECK(!fits_empty(&w->nodes[n], &w->jobs[i]), "job %d rejected but fits node %d", i, n);
        if (r->reason == Q_R_OVER_QUOTA) {
            const struct q_job *j = &w->jobs[i];
            const struct aiq_quota *q = r->group_scope ? &w->groups[j->group].quota : &w->users[j->user].quota;
            PCHECK(r->res != Q_RES_GPUS || (int64_t)j->replicas * j->gpus > q->gpus, "over-quota reject wrong");
        }
    }
}

/* Backfill never delays the reserved job: with every admitted job running
 * (ending at now + its runtime), the reserved job alone must start no later
 * than its reserved time. */
static void check_reservation(int iter, world *w, const q_output *out) {
    int h = out->reserved_job;
    if (h < 0) return;
    static world w2;
    w2 = *w;
    struct q_input *in = &w2.in;
    in->nodes = w2.nodes;
    in->jobs = w2.jobs;
    in->users = w2.users;
    in->groups = w2.groups;
    int nj = 0;
    for (int i = 0; i < w->in.njobs; i++) {
        const struct q_job *j = &w->jobs[i];
        const struct q_result *r = &out->res[i];
        if (j->state != Q_JOB_RUNNING && r->decision != Q_DEC_ADMIT && i != h) continue;
        struct q_job *d = &w2.jobs[nj];
        *d = *j;
        if (j->state == Q_JOB_RUNNING) {
            memcpy(w2.pl[nj], j->placement, sizeof(struct q_place) * (size_t)j->replicas);
        } else if (i != h) {
            d->state = Q_JOB_RUNNING;
            double pr = j->pred_runtime_s > 0 ? j->pred_runtime_s : j->est_runtime_s;
            d->end_time = pr > 0 ? NOW + pr : 0;
            memcpy(w2.pl[nj], &out->places[r->place_off], sizeof(struct q_place) * (size_t)j->replicas);
            for (int k = 0; k < j->replicas; k++) {
                const struct q_place *p = &w2.pl[nj][k];
                struct q_node *n = &w2.nodes[p->node];
                for (int g = 0; g < n->ngpus; g++) {
                    if (!((p->gpu_mask >> g) & 1u)) continue;
                    n->gpu_mem_used[g] = j->gpus > 0 ? n->gpu_mem_total[g] : n->gpu_mem_used[g] + p->gpu_mem_mib;
                }
                n->cpu_used += j->cpu_milli;
                n->mem_used += j->memory_bytes;
            }
            /* The budget the backfilled job will use counts as used. */
        }
        d->placement = d->state == Q_JOB_RUNNING ? w2.pl[nj] : NULL;
        nj++;
    }
    in->njobs = nj;
    int nl = in->policy.nlevels;
    q_scorer sc = {&nl, scorer_score, scorer_level};
    q_state *st = q_state_create(NULL);
    q_output o2;
    aiq_err err;
    aiq_err_clear(&err);
    aiq_rc rc = q_cycle_run(st, in, &sc, &o2, &err);
    PCHECK(rc == AIQ_OK, "re-run failed: %s", err.message);
    if (rc == AIQ_OK) {
        int hh = -1;
        for (int i = 0; i < nj; i++)
            if (w2.jobs[i].state == Q_JOB_PENDING) hh = i;
        const struct q_result *r = &o2.res[hh];
        if (r->decision != Q_DEC_ADMIT) {
            char m[256];
            q_message(in, &o2, hh, m, sizeof m);
            PCHECK(r->reason == Q_R_CAPACITY && o2.reserved_job == hh &&
                   o2.reserved_time <= out->reserved_time + 1e-6,
                   "reserved job delayed: was %.0f, now %s %.0f (%s)", out->reserved_time - NOW,
                   q_reason_name((q_reason)r->reason), o2.reserved_time - NOW, m);
        }
    }
    q_state_free(st);
}

static int env_int(const char *name, int dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *end ? dflt : (int)v;
}

TEST(invariants_over_random_clusters) {
    int n = env_int("AIQ_QPROPS_N", 3000);
    uint64_t seed = (uint64_t)env_int("AIQ_QPROPS_SEED", 20261121);
    static world w;
    int admitted = 0, reserved = 0, waits = 0, rejects = 0;
    for (int iter = 0; iter < n && !failed_once; iter++) {
        rng = seed * 1000003u + (uint64_t)iter;
        gen(&w);
        int nl = w.in.policy.nlevels;
        q_scorer sc = {&nl, scorer_score, scorer_level};
        q_state *st = q_state_create(NULL);
        q_output out;
        aiq_err err;
        aiq_err_clear(&err);
        aiq_rc rc = q_cycle_run(st, &w.in, &sc, &out, &err);
        PCHECK(rc == AIQ_OK, "cycle failed: %s", err.message);
        if (rc == AIQ_OK) {
            check_capacity(iter, &w, &out);
            check_quota(iter, &w, &out);
            check_order(iter, &w, &out);
            check_rejects(iter, &w, &out);
            check_reservation(iter, &w, &out);
            for (int i = 0; i < w.in.njobs; i++) {
                char m[512];
                int len = q_message(&w.in, &out, i, m, sizeof m);
                PCHECK(len > 0 && len < (int)sizeof m && !strchr(m, '\n'), "message");
                admitted += out.res[i].decision == Q_DEC_ADMIT;
                waits += out.res[i].decision == Q_DEC_WAIT;
                rejects += out.res[i].decision == Q_DEC_REJECT;
            }
            reserved += out.reserved_job >= 0;
        }
        q_state_free(st);
    }
    /* The generator must exercise every path, or the checks prove little. */
    CHECK(admitted > n);
    CHECK(waits > n);
    CHECK(rejects > n / 10);
    CHECK(reserved > n / 20);
    printf("  %d clusters: %d admitted, %d waiting, %d rejected, %d reservations\n", n, admitted,
           waits, rejects, reserved);
}

/* A scorer that reads the clock and the levels, as a QueuePolicy with a
 * rescore interval may (wait.hours and job.age_hours at the interval's
 * start, user.level, group.level): a tie-break by wait, and the level
 * moves up after 3 hours of waiting. */
static int scorer_timed_score(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_JOB_PRIORITY] * 10 + f[Q_F_USER_LEVEL] + f[Q_F_GROUP_LEVEL] * 0.25 +
         f[Q_F_WAIT_HOURS] / 7 + f[Q_F_JOB_AGE_HOURS] / 1000;
    return 0;
}
static int scorer_timed_level(void *ctx, const double *f, int *lv) {
    int nl = *(const int *)ctx;
    *lv = f[Q_F_WAIT_HOURS] >= 3 ? 0 : (int)f[Q_F_JOB_PRIORITY] % nl;
    return 0;
}

/* Incremental cycles decide exactly like a fresh state on the same input.
 * Untimed: the scorer is time-independent, so cached scores equal fresh
 * ones. Timed: the scorer reads the clock and the levels, the rescore
 * interval is 90 s and the clock moves 30 s a cycle, starvation is on,
 * and now and then a user's or a group's level changes: a score kept
 * within an interval must still be the one a fresh state computes. */
static void incremental_vs_fresh(uint64_t seed, bool timed) {
    static world w;
    int n = env_int("AIQ_QPROPS_N", 3000) / 6;
    int kept = 0, rescored = 0;
    for (int iter = 0; iter < n && !failed_once; iter++) {
        rng = seed * 1000003u + (uint64_t)iter;
        gen(&w);
        w.in.policy.rescore_interval_s = timed ? 90 : 1e9;
        if (!timed)
            w.in.policy.starvation_after_s = 0;
        int nl = w.in.policy.nlevels;
        q_scorer sc = {&nl, timed ? scorer_timed_score : scorer_score,
                       timed ? scorer_timed_level : scorer_level};
        q_state *inc = q_state_create(NULL);
        q_output a, b;
        /* Odd iterations run the incremental state with lazy estimates,
         * asked for in a random order (some jobs twice, running ones
         * too), then all in index order; the fresh state always
         * estimates eagerly. */
        bool lazy = iter % 2 == 1;
        for (int step = 0; step < (timed ? 8 : 4); step++) {
            if (timed && step > 0 && chance(15)) {
                if (w.in.nusers && chance(50))
                    w.users[rnd(w.in.nusers)].level = rnd(5);
                else if (w.in.ngroups)
                    w.groups[rnd(w.in.ngroups)].level = rnd(5);
            }
            w.in.lazy_eta = lazy;
            CHECK_INT(q_cycle_run(inc, &w.in, &sc, &a, NULL), AIQ_OK);
            w.in.lazy_eta = false;
            q_state *fresh = q_state_create(NULL);
            CHECK_INT(q_cycle_run(fresh, &w.in, &sc, &b, NULL), AIQ_OK);
            if (lazy) {
                for (int q = 0; q < w.in.njobs; q++) {
                    int i = rnd(w.in.njobs);
                    double e = -1;
                    CHECK_INT(q_eta(inc, &w.in, &a, i, &e), AIQ_OK);
                    PCHECK(e == b.res[i].eta, "step %d job %d: lazy eta %.3f, eager %.3f", step, i, e,
                           b.res[i].eta);
                }
                for (int i = 0; i < w.in.njobs; i++) {
                    double e = -1;
                    CHECK_INT(q_eta(inc, &w.in, &a, i, &e), AIQ_OK);
                    PCHECK(e == b.res[i].eta, "step %d job %d: lazy eta %.3f, eager %.3f", step, i, e,
                           b.res[i].eta);
                }
            } else {
                double e = -1;
                CHECK_INT(q_eta(inc, &w.in, &a, w.in.njobs, &e), AIQ_EINVAL);
                CHECK_INT(q_eta(fresh, &w.in, &a, 0, &e), AIQ_EINVAL); /* not fresh's output */
            }
            if (step > 0) {
                kept += a.nscored < b.nscored;
                rescored += a.nscored == b.nscored;
            }
            PCHECK(a.norder == b.norder, "order length %d vs %d", a.norder, b.norder);
            for (int k = 0; k < a.norder && k < b.norder; k++)
                PCHECK(a.order[k] == b.order[k], "step %d: order differs at %d", step, k);
            PCHECK(a.nadmitted == b.nadmitted && a.reserved_job == b.reserved_job &&
                   a.reserved_time == b.reserved_time, "step %d: admitted %d/%d reserved %d/%d",
                   step, a.nadmitted, b.nadmitted, a.reserved_job, b.reserved_job);
            for (int i = 0; i < w.in.njobs; i++) {
                const struct q_result *x = &a.res[i], *y = &b.res[i];
                PCHECK(x->decision == y->decision && x->reason == y->reason,
                       "step %d job %d: incremental %s/%s, fresh %s/%s", step, i,
                       q_decision_name((q_decision)x->decision), q_reason_name((q_reason)x->reason),
                       q_decision_name((q_decision)y->decision), q_reason_name((q_reason)y->reason));
                PCHECK(x->eta == y->eta, "step %d job %d: eta %.3f vs %.3f", step, i, x->eta, y->eta);
                PCHECK(x->pos == y->pos && x->pos_level == y->pos_level && x->level == y->level &&
                       x->score == y->score && x->blocker == y->blocker && x->nplace == y->nplace &&
                       x->backfilled == y->backfilled && x->promoted == y->promoted,
                       "step %d job %d: pos %d/%d level %d/%d blocker %d/%d", step, i, x->pos, y->pos,
                       x->level, y->level, x->blocker, y->blocker);
                for (int p = 0; p < x->nplace && p < y->nplace; p++) {
                    const struct q_place *pa = &a.places[x->place_off + p], *pb = &b.places[y->place_off + p];
                    PCHECK(pa->node == pb->node && pa->gpu_mask == pb->gpu_mask &&
                           pa->gpu_mem_mib == pb->gpu_mem_mib, "step %d job %d: placement %d differs",
                           step, i, p);
                }
            }
            q_state_free(fresh);
            /* As the operator does: up to two admitted jobs start running
             * on their placements (before any slot moves below). */
            for (int i = 0, started = 0; i < w.in.njobs && started < 2; i++) {
                const struct q_result *x = &a.res[i];
                if (x->decision != Q_DEC_ADMIT || x->nplace > 8) continue;
                memcpy(w.pl[i], &a.places[x->place_off], sizeof w.pl[i][0] * (size_t)x->nplace);
                w.jobs[i].state = Q_JOB_RUNNING;
                w.jobs[i].placement = w.pl[i];
                w.jobs[i].end_time = w.jobs[i].pred_runtime_s > 0 ? w.in.now + w.jobs[i].pred_runtime_s : 0;
                w.jobs[i].gen++;
                started++;
            }
            /* A running job is requeued; a new job arrives at the end. */
            if (w.in.njobs > 0 && chance(30)) {
                struct q_job *j = &w.jobs[rnd(w.in.njobs)];
                if (j->state == Q_JOB_RUNNING) {
                    j->state = Q_JOB_PENDING;
                    j->placement = NULL;
                    j->gen++;
                }
            }
            static char extra[8][24];
            if (w.in.njobs > 0 && w.in.njobs < MAXJ && chance(50)) {
                struct q_job *j = &w.jobs[w.in.njobs];
                *j = w.jobs[rnd(w.in.njobs)];
                snprintf(extra[step], sizeof extra[step], "ns/new%d", step);
                j->key = j->uid = extra[step];
                j->state = Q_JOB_PENDING;
                j->placement = NULL;
                w.in.njobs++;
            }
            /* A few changes: priorities, a removal (swap with last), a
             * suspension toggle. */
            w.in.now += timed ? 30 + rnd(31) : 30;
            for (int c = 0; c < 3 && w.in.njobs; c++) {
                struct q_job *j = &w.jobs[rnd(w.in.njobs)];
                if (j->state != Q_JOB_PENDING) continue;
                j->priority = rnd(20);
                j->suspended = chance(20);
                j->gen++;
            }
            if (w.in.njobs > 1 && chance(50)) {
                int r = rnd(w.in.njobs);
                if (w.jobs[r].state == Q_JOB_PENDING && w.jobs[w.in.njobs - 1].state == Q_JOB_PENDING) {
                    w.jobs[r] = w.jobs[w.in.njobs - 1];
                    w.in.njobs--;
                }
            }
        }
        q_state_free(inc);
    }
    /* Both paths ran: cycles that kept scores and cycles that rescored
     * every job (an interval's end, a level's change). */
    CHECK(kept > n / 2);
    if (timed)
        CHECK(rescored > n / 2);
    printf("  %s: %d cycles kept scores, %d rescored all\n", timed ? "timed" : "untimed", kept,
           rescored);
}

TEST(incremental_equals_fresh) {
    incremental_vs_fresh(777u, false);
}

TEST(incremental_equals_fresh_rescore_interval) {
    incremental_vs_fresh(4242u, true);
}

/* ---- preemption, borrowing and elastic jobs, over rounds ------------------
 * Worlds with preemption rules, cohorts, elastic and protected jobs run
 * for several rounds; between rounds the test does what a caller does
 * (victims terminate, then go; shrunk replicas stop, then go; admitted and
 * grown replicas run). After every cycle, independently of the queue:
 *   - nothing over-committed, counting jobs being stopped;
 *   - no quota, borrowing limit or cohort lending passed at any instant
 *     (running, stopping, admitted and grown replicas all count);
 *   - every victim was allowed (rule, protections) and every resize is
 *     inside the job's range;
 *   - preemption makes room: with the victims and the stopping jobs gone,
 *     every job that waits for room starts;
 *   - victims are minimal: for the first job preempting in a round
 *     without jobs already stopping, keeping any one victim (or one more
 *     replica of a shrunk job) running leaves it unable to start, with
 *     the jobs ordered behind it still pending (check_minimal);
 *   - no reclaim loop: a job is never reclaimed twice for the same
 *     preemptor over a world's rounds;
 *   - an incremental cycle decides and acts exactly like a fresh state.
 * AIQ_QPROPS_DEBUG=1 prints the world when "makes room" or "starts with
 * its victims gone" fails; AIQ_QPROPS_TRACE=<iteration> prints that
 * world and its decisions every round. */

static void place_apply(struct q_node *nodes, const struct q_job *j, const struct q_place *p, int sign) {
    struct q_node *n = &nodes[p->node];
    for (int g = 0; g < n->ngpus; g++) {
        if (!((p->gpu_mask >> g) & 1u)) continue;
        if (j->gpus > 0) n->gpu_mem_used[g] = sign > 0 ? n->gpu_mem_total[g] : 0;
        else n->gpu_mem_used[g] += sign * p->gpu_mem_mib;
    }
    n->cpu_used += sign * j->cpu_milli;
    n->mem_used += sign * j->memory_bytes;
}

static void gen_pre(world *w) {
    gen(w);
    w->in.actions_on = true;
    struct q_policy *p = &w->in.policy;
    p->preempt_lower = chance(80);
    p->preempt_within = chance(30);
    p->preempt_margin = rnd(10);
    p->min_runtime_s = chance(30) ? 600 * (1 + rnd(4)) : 0;
    p->max_job_min_runtime_s = chance(50) ? 3600 : 0;
    p->max_preemptions_per_hour = chance(20) ? 1 + rnd(3) : 0;
    p->no_grow = chance(10);
    /* Cohorts: every group shares the cluster's GPUs as quota, at least
     * what it runs already (so nobody borrows at the start). */
    bool coh = chance(50) && w->in.ngroups > 1;
    if (coh && chance(50)) p->preempt_lower = p->preempt_within = false; /* only reclaim */
    int64_t total = 0;
    for (int i = 0; i < w->in.nnodes; i++) total += w->nodes[i].ngpus;
    for (int g = 0; g < w->in.ngroups; g++) {
        struct q_group *gr = &w->groups[g];
        gr->borrowing_limit.gpus = gr->borrowing_limit.gpu_memory_mib = gr->borrowing_limit.cpu_milli = -1;
        gr->borrowing_limit.memory_bytes = gr->borrowing_limit.jobs = -1;
        gr->lending_limit = gr->borrowing_limit;
        if (!coh) continue;
        gr->cohort = 1 + (chance(20) ? rnd(2) : 0);
        int64_t use = 0;
        for (int i = 0; i < w->in.njobs; i++)
            if (w->jobs[i].state == Q_JOB_RUNNING && w->jobs[i].group == g)
                use += (int64_t)w->jobs[i].replicas * w->jobs[i].gpus;
        int64_t share = total / (2 * w->in.ngroups);
        gr->quota.jobs = -1; /* cohorts share GPUs here, not job counts */
        gr->quota.gpus = use > share ? use : share;
        if (chance(30)) gr->borrowing_limit.gpus = rnd(8);
        if (chance(30)) gr->lending_limit.gpus = rnd(8);
    }
    for (int u = 0; u < w->in.nusers && coh; u++) {
        w->users[u].quota.gpus = w->users[u].quota.jobs = -1;
        w->users[u].budget_gpu_hours = -1;
    }
    for (int i = 0; i < w->in.njobs; i++) {
        struct q_job *j = &w->jobs[i];
        j->started = NOW - rnd(7200);
        j->non_preemptible = chance(8);
        j->checkpointable = chance(30);
        j->checkpoint_interval_s = chance(50) ? 600 : 0;
        j->min_runtime_s = chance(20) ? 1800 : 0;
        j->preemptions_1h = rnd(3);
        if (j->state == Q_JOB_PENDING && chance(25) && j->replicas <= 4) {
            j->min_replicas = 1 + rnd(j->replicas);
            j->max_replicas = j->replicas + rnd(4);
        } else if (j->state == Q_JOB_RUNNING && chance(40)) {
            j->min_replicas = 1 + rnd(j->replicas);
            j->max_replicas = j->replicas + rnd(3);
            if (j->max_replicas > 8) j->max_replicas = 8;
        }
        if (j->state == Q_JOB_PENDING) j->started = 0;
    }
}

/* Level and score of job j as the test scorer sees it (from the queue's
 * factor vector, which test_queue.c checks on its own). */
static void rank_of(q_state *st, const world *w, int j, int *lv, double *score) {
    double f[Q_NFACTORS];
    q_job_factors(st, &w->in, j, f);
    int nl = w->in.policy.nlevels;
    scorer_level(&nl, f, lv);
    scorer_score(&nl, f, score);
}

static int act_of(const q_output *out, int j, int kind) {
    for (int i = 0; i < out->nactions; i++)
        if (out->actions[i].job == j && out->actions[i].kind == kind) return i;
    return -1;
}

/* A copy of w where the caller did everything: jobs stopping and victims
 * gone (drop_for: -1 = every action; else only the actions for that job
 * plus the jobs already stopping), admitted jobs and growth running
 * (unless upto_order >= 0: only admissions before keep_pending's order
 * position), and only job `keep_pending` still waiting (upto_order > 0:
 * also every job ordered after it, as it was). keep_victim: a victim (or
 * a shrunk job, one replica less shrunk) that stays running. */
static void after_world(const world *w, const q_output *out, world *w2, int keep_pending,
                        int drop_for, int upto_order, int keep_victim) {
    *w2 = *w;
    struct q_input *in = &w2->in;
    in->nodes = w2->nodes;
    in->jobs = w2->jobs;
    in->users = w2->users;
    in->groups = w2->groups;
    int pos_of_keep = 0;
    for (int k = 0; k < out->norder; k++)
        if (out->order[k] == keep_pending) pos_of_keep = k;
    int nj = 0;
    for (int i = 0; i < w->in.njobs; i++) {
        const struct q_job *j = &w->jobs[i];
        const struct q_result *r = &out->res[i];
        struct q_job *d = &w2->jobs[nj];
        *d = *j;
        if (j->state == Q_JOB_RUNNING) {
            int size = j->replicas;
            int a = -1;
            if (j->terminating) size = 0;
            else if (j->stopping) size = j->replicas - j->stopping;
            if ((a = act_of(out, i, Q_ACT_PREEMPT)) >= 0 && (drop_for < 0 || out->actions[a].for_job == drop_for))
                size = i == keep_victim ? size : 0;
            if ((a = act_of(out, i, Q_ACT_SHRINK)) >= 0 && (drop_for < 0 || out->actions[a].for_job == drop_for))
                size = out->actions[a].replicas + (i == keep_victim);
            for (int k = size; k < j->replicas; k++) place_apply(w2->nodes, j, &j->placement[k], -1);
            if (size == 0) continue;
            memcpy(w2->pl[nj], j->placement, sizeof(struct q_place) * (size_t)size);
            d->replicas = size;
            d->stopping = 0;
            d->terminating = false;
            if (upto_order < 0 && (a = act_of(out, i, Q_ACT_GROW)) >= 0 && size == j->replicas) {
                for (int k = 0; k < out->actions[a].nplace; k++) {
                    w2->pl[nj][size + k] = out->places[out->actions[a].place_off + k];
                    place_apply(w2->nodes, j, &w2->pl[nj][size + k], +1);
                }
                d->replicas = out->actions[a].replicas;
            }
            d->placement = w2->pl[nj];
            nj++;
            continue;
        }
        if (i == keep_pending) {
            nj++;
            continue;
        }
        int pos = -1;
        for (int k = 0; k < out->norder; k++)
            if (out->order[k] == i) pos = k;
        if (upto_order > 0 && pos > pos_of_keep) { /* still pending, behind it */
            nj++;
            continue;
        }
        if (r->decision != Q_DEC_ADMIT) continue;
        if (upto_order >= 0 && pos >= pos_of_keep) continue;
        d->state = Q_JOB_RUNNING;
        d->replicas = r->nplace;
        memcpy(w2->pl[nj], &out->places[r->place_off], sizeof(struct q_place) * (size_t)r->nplace);
        for (int k = 0; k < r->nplace; k++) place_apply(w2->nodes, d, &w2->pl[nj][k], +1);
        int a = act_of(out, i, Q_ACT_GROW);
        if (upto_order < 0 && a >= 0) {
            for (int k = 0; k < out->actions[a].nplace; k++) {
                w2->pl[nj][r->nplace + k] = out->places[out->actions[a].place_off + k];
                place_apply(w2->nodes, d, &w2->pl[nj][r->nplace + k], +1);
            }
            d->replicas = out->actions[a].replicas;
        }
        d->placement = w2->pl[nj];
        double pr = j->pred_runtime_s > 0 ? j->pred_runtime_s : j->est_runtime_s;
        d->end_time = pr > 0 ? w->in.now + pr : 0;
        d->started = w->in.now;
        nj++;
    }
    in->njobs = nj;
}

static int index_in(const world *w2, const char *key) {
    for (int i = 0; i < w2->in.njobs; i++)
        if (strcmp(w2->jobs[i].key, key) == 0) return i;
    return -1;
}

/* Quota at this instant: running (stopping included), admitted and grown. */
static void check_quota_instant(int iter, const world *w, const q_output *out) {
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? w->in.ngroups : w->in.nusers;
        for (int o = 0; o < n; o++) {
            int64_t gp = 0, jobs = 0;
            for (int i = 0; i < w->in.njobs; i++) {
                const struct q_job *j = &w->jobs[i];
                if ((pass ? j->group : j->user) != o) continue;
                int size = 0;
                if (j->state == Q_JOB_RUNNING) size = j->replicas;
                else if (out->res[i].decision == Q_DEC_ADMIT) size = out->res[i].nplace;
                else continue;
                int a = act_of(out, i, Q_ACT_GROW);
                if (a >= 0) size = out->actions[a].replicas;
                gp += (int64_t)size * j->gpus;
                jobs++;
            }
            const struct aiq_quota *q = pass ? &w->groups[o].quota : &w->users[o].quota;
            int64_t lim = q->gpus;
            if (pass && w->groups[o].cohort > 0 && lim >= 0)
                lim = w->groups[o].borrowing_limit.gpus < 0 ? INT64_MAX : lim + w->groups[o].borrowing_limit.gpus;
            if (lim >= 0) PCHECK(gp <= lim, "%s %d: %lld GPUs > limit %lld", pass ? "group" : "user", o,
                                 (long long)gp, (long long)lim);
            if (q->jobs >= 0) PCHECK(jobs <= q->jobs, "jobs quota passed");
        }
    }
    /* non-preemptible jobs of a cohort group stay within its quota */
    for (int g = 0; g < w->in.ngroups; g++) {
        if (w->groups[g].cohort == 0 || w->groups[g].quota.gpus < 0) continue;
        int64_t np = 0;
        for (int i = 0; i < w->in.njobs; i++) {
            const struct q_job *j = &w->jobs[i];
            if (j->group != g || !j->non_preemptible) continue;
            int size = j->state == Q_JOB_RUNNING ? j->replicas
                       : out->res[i].decision == Q_DEC_ADMIT ? out->res[i].nplace : 0;
            np += (int64_t)size * j->gpus;
        }
        PCHECK(np <= w->groups[g].quota.gpus, "group %d: non-preemptible jobs hold %lld > quota %lld", g,
               (long long)np, (long long)w->groups[g].quota.gpus);
    }
    /* cohort lending: sum of max(0, use - guaranteed) <= sum of lendable */
    for (int c = 1; c <= w->in.ngroups; c++) {
        int64_t cap = 0, lent = 0;
        for (int g = 0; g < w->in.ngroups; g++) {
            const struct q_group *gr = &w->groups[g];
            if (gr->cohort != c || gr->quota.gpus < 0) continue;
            int64_t q = gr->quota.gpus, ll = gr->lending_limit.gpus;
            int64_t lend = ll < 0 || ll > q ? q : ll, guar = q - lend, use = 0;
            for (int i = 0; i < w->in.njobs; i++) {
                const struct q_job *j = &w->jobs[i];
                if (j->group != g) continue;
                int size = j->state == Q_JOB_RUNNING ? j->replicas
                           : out->res[i].decision == Q_DEC_ADMIT ? out->res[i].nplace : 0;
                int a = act_of(out, i, Q_ACT_GROW);
                if (a >= 0) size = out->actions[a].replicas;
                use += (int64_t)size * j->gpus;
            }
            cap += lend;
            lent += use > guar ? use - guar : 0;
        }
        PCHECK(lent <= cap, "cohort %d lends %lld of %lld", c, (long long)lent, (long long)cap);
    }
}

/* Growth placements are free, in the job's domain and model. */
static void check_growth(int iter, const world *w, const q_output *out) {
    struct q_node nodes[MAXN];
    memcpy(nodes, w->nodes, sizeof nodes);
    for (int i = 0; i < w->in.njobs; i++) {
        const struct q_result *r = &out->res[i];
        if (r->decision != Q_DEC_ADMIT) continue;
        for (int k = 0; k < r->nplace; k++) place_apply(nodes, &w->jobs[i], &out->places[r->place_off + k], +1);
    }
    for (int a = 0; a < out->nactions; a++) {
        const struct q_action *x = &out->actions[a];
        if (x->kind != Q_ACT_GROW) continue;
        const struct q_job *j = &w->jobs[x->job];
        const struct q_place *p0 = j->state == Q_JOB_RUNNING ? &j->placement[0] : &out->places[out->res[x->job].place_off];
        for (int k = 0; k < x->nplace; k++) {
            const struct q_place *p = &out->places[x->place_off + k];
            struct q_node *n = &nodes[p->node];
            PCHECK(same(n->domain, nodes[p0->node].domain), "job %d grew out of its domain", x->job);
            if (j->gpu_model) PCHECK(same(n->gpu_model, j->gpu_model), "job %d grew on a wrong model", x->job);
            PCHECK(n->schedulable, "job %d grew onto a cordoned node", x->job);
            for (int g = 0; g < n->ngpus && j->gpus > 0; g++)
                if ((p->gpu_mask >> g) & 1u) PCHECK(n->gpu_mem_used[g] == 0, "job %d grew onto a used GPU", x->job);
            place_apply(nodes, j, p, +1);
            PCHECK(n->cpu_used <= n->cpu_alloc && n->mem_used <= n->mem_alloc, "growth over-commits node %d", p->node);
        }
    }
}

/* Each action is allowed: rules, protections, ranges; one per job. */
static void check_actions(int iter, q_state *st, const world *w, const q_output *out) {
    const struct q_policy *p = &w->in.policy;
    for (int a = 0; a < out->nactions; a++) {
        const struct q_action *x = &out->actions[a];
        const struct q_job *v = &w->jobs[x->job];
        for (int b = 0; b < a; b++) PCHECK(out->actions[b].job != x->job, "job %d acted on twice", x->job);
        if (x->kind == Q_ACT_GROW) {
            PCHECK(v->max_replicas > 0 && x->replicas <= v->max_replicas && !v->non_preemptible,
                   "growth of job %d to %d outside 1..%d", x->job, x->replicas, v->max_replicas);
            continue;
        }
        PCHECK(v->state == Q_JOB_RUNNING && !v->terminating, "victim %d not a running job", x->job);
        PCHECK(x->for_job >= 0 && out->res[x->for_job].reason == Q_R_PREEMPTING, "victim %d for a job not waiting for room", x->job);
        PCHECK(!v->non_preemptible, "non-preemptible job %d acted on", x->job);
        if (x->kind == Q_ACT_SHRINK) {
            int minr = v->min_replicas > 0 ? v->min_replicas : v->replicas;
            PCHECK(v->max_replicas > 0 && x->replicas >= minr && x->replicas < v->replicas - v->stopping,
                   "shrink of %d to %d outside its range", x->job, x->replicas);
            continue;
        }
        double jm = v->min_runtime_s < p->max_job_min_runtime_s ? v->min_runtime_s : p->max_job_min_runtime_s;
        double eff = jm > p->min_runtime_s ? jm : p->min_runtime_s;
        double ran = v->started > 0 ? w->in.now - v->started : 0;
        PCHECK(eff <= 0 || ran >= eff, "victim %d ran %.0f s < %.0f s", x->job, ran, eff);
        PCHECK(p->max_preemptions_per_hour == 0 || v->preemptions_1h < p->max_preemptions_per_hour,
               "victim %d over the hourly limit", x->job);
        /* the preemptor's level after starvation promotion, as queued */
        int lj = out->res[x->for_job].level, lv;
        double sj = out->res[x->for_job].score, sv;
        rank_of(st, w, x->job, &lv, &sv);
        const struct q_job *J = &w->jobs[x->for_job];
        if (x->reason == Q_R_PREEMPTED) PCHECK(p->preempt_lower && lv > lj, "level rule: %d over %d", lj, lv);
        else if (x->reason == Q_R_PREEMPTED_SCORE)
            PCHECK(p->preempt_within && lv == lj && sj >= sv + p->preempt_margin, "margin rule");
        else if (x->reason == Q_R_RECLAIMED)
            PCHECK(!p->no_reclaim && J->group >= 0 && v->group >= 0 && J->group != v->group &&
                   w->groups[J->group].cohort > 0 && w->groups[J->group].cohort == w->groups[v->group].cohort,
                   "reclaim across cohorts");
        else PCHECK(0, "victim %d with reason %d", x->job, x->reason);
    }
}

/* Prints the world and the cycle's decisions (AIQ_QPROPS_DEBUG, and
 * every round of iteration AIQ_QPROPS_TRACE). */
static void dump_world(const world *w, const q_output *out) {
    char m[300];
    for (int x = 0; x < w->in.njobs; x++) {
        const struct q_job *j = &w->jobs[x];
        q_message(&w->in, out, x, m, sizeof m);
        printf("    job %d %s u%d g%d prio %d %dx%d gpus st %d term %d stop %d min %d max %d: %s\n", x, j->key,
               j->user, j->group, j->priority, j->replicas, j->gpus, j->state, j->terminating, j->stopping,
               j->min_replicas, j->max_replicas, m);
    }
    for (int g = 0; g < w->in.ngroups; g++)
        printf("    group %d cohort %d quota %lld jobs %lld bl %lld ll %lld\n", g, w->groups[g].cohort,
               (long long)w->groups[g].quota.gpus, (long long)w->groups[g].quota.jobs,
               (long long)w->groups[g].borrowing_limit.gpus, (long long)w->groups[g].lending_limit.gpus);
    for (int u = 0; u < w->in.nusers; u++)
        printf("    user %d group %d quota %lld jobs %lld budget %g\n", u, w->users[u].group,
               (long long)w->users[u].quota.gpus, (long long)w->users[u].quota.jobs, w->users[u].budget_gpu_hours);
    for (int i = 0; i < w->in.nnodes; i++)
        printf("    node %d %s %s %s %d GPUs sched %d\n", i, w->nodes[i].name, w->nodes[i].gpu_model ? w->nodes[i].gpu_model : "-",
               w->nodes[i].domain ? w->nodes[i].domain : "-", w->nodes[i].ngpus, w->nodes[i].schedulable);
    for (int a = 0; a < out->nactions; a++)
        printf("    action %d: job %d kind %d for %d replicas %d reason %d\n", a, out->actions[a].job,
               out->actions[a].kind, out->actions[a].for_job, out->actions[a].replicas, out->actions[a].reason);
}

/* With everything stopped gone, every job waiting for room starts. */
static void check_makes_room(int iter, const world *w, const q_output *out) {
    static world w2;
    for (int i = 0; i < w->in.njobs && !failed_once; i++) {
        if (out->res[i].decision != Q_DEC_WAIT || out->res[i].reason != Q_R_PREEMPTING) continue;
        after_world(w, out, &w2, i, -1, -1, -1);
        int nl = w2.in.policy.nlevels;
        q_scorer sc = {&nl, scorer_score, scorer_level};
        q_state *s2 = q_state_create(NULL);
        q_output o2;
        aiq_rc rc = q_cycle_run(s2, &w2.in, &sc, &o2, NULL);
        int k = index_in(&w2, w->jobs[i].key);
        if (getenv("AIQ_QPROPS_DEBUG") && !(rc == AIQ_OK && k >= 0 && o2.res[k].decision == Q_DEC_ADMIT)) {
            char m[300];
            q_message(&w2.in, &o2, k, m, sizeof m);
            printf("    re-run: %s\n", m);
            dump_world(w, out);
        }
        PCHECK(rc == AIQ_OK && k >= 0 && o2.res[k].decision == Q_DEC_ADMIT,
               "job %d waited for room but does not start once it is made (%s)", i,
               rc == AIQ_OK && k >= 0 ? q_reason_name((q_reason)o2.res[k].reason) : "cycle failed");
        q_state_free(s2);
    }
}

/* Victims are minimal for the first preemptor J: in the world J's cycle
 * saw when it chose them (the jobs already admitted ahead of J running,
 * the jobs ordered behind J still pending: their demand, held against
 * borrowers, is part of what J had to fit in), keeping any one victim
 * running leaves J unable to start, and with all of them gone it starts.
 * The jobs ahead of J that were not admitted have been decided by then
 * and hold nothing, so they are left out. */
static void check_minimal(int iter, const world *w, const q_output *out) {
    for (int i = 0; i < w->in.njobs; i++)
        if (w->jobs[i].state == Q_JOB_RUNNING && (w->jobs[i].terminating || w->jobs[i].stopping)) return;
    int J = -1;
    for (int k = 0; k < out->norder && J < 0; k++) {
        int j = out->order[k];
        if (out->res[j].reason == Q_R_PREEMPTING) J = j;
    }
    if (J < 0 || out->res[J].inuse == 0) return;
    static world w2;
    int tried = 0;
    for (int a = 0; a < out->nactions && !failed_once; a++) {
        const struct q_action *x = &out->actions[a];
        if (x->for_job != J) continue;
        after_world(w, out, &w2, J, J, 1, x->job);
        int nl = w2.in.policy.nlevels;
        q_scorer sc = {&nl, scorer_score, scorer_level};
        q_state *s2 = q_state_create(NULL);
        q_output o2;
        aiq_rc rc = q_cycle_run(s2, &w2.in, &sc, &o2, NULL);
        int k = index_in(&w2, w->jobs[J].key);
        PCHECK(rc == AIQ_OK && k >= 0 && o2.res[k].decision != Q_DEC_ADMIT,
               "job %d starts although victim %d (%s) keeps running: not minimal", J, x->job,
               x->kind == Q_ACT_SHRINK ? "one more replica" : "whole");
        q_state_free(s2);
        tried++;
    }
    /* and with all of them gone it starts */
    after_world(w, out, &w2, J, J, 1, -1);
    int nl = w2.in.policy.nlevels;
    q_scorer sc = {&nl, scorer_score, scorer_level};
    q_state *s2 = q_state_create(NULL);
    q_output o2;
    aiq_rc rc = q_cycle_run(s2, &w2.in, &sc, &o2, NULL);
    int k = index_in(&w2, w->jobs[J].key);
    if (getenv("AIQ_QPROPS_DEBUG") && tried > 0 && !(rc == AIQ_OK && k >= 0 && o2.res[k].decision == Q_DEC_ADMIT)) {
        printf("    re-run with its victims gone:\n");
        dump_world(&w2, &o2);
    }
    PCHECK(tried == 0 || (rc == AIQ_OK && k >= 0 && o2.res[k].decision == Q_DEC_ADMIT),
           "job %d does not start with exactly its victims gone", J);
    q_state_free(s2);
}

static int nprops_preempt, nprops_shrink, nprops_grow, nprops_reclaim, nprops_minimal;

/* No reclaim loop: a job reclaimed for a preemptor is never reclaimed
 * for the same preemptor again in later rounds of the world (it came
 * back to the queue and took the room it had freed, or the room another
 * borrower gave). seen[] holds "victim>preemptor" keys of the world. */
#define MAXRECL 64
typedef struct {
    char pair[MAXRECL][40];
    int round[MAXRECL];
    int n;
} reclaims;

static void check_no_reclaim_loop(int iter, int round, const world *w, const q_output *out, reclaims *rc) {
    for (int a = 0; a < out->nactions; a++) {
        const struct q_action *x = &out->actions[a];
        if (x->reason != Q_R_RECLAIMED || x->for_job < 0) continue;
        char key[40];
        snprintf(key, sizeof key, "%s>%s", w->jobs[x->job].key, w->jobs[x->for_job].key);
        for (int i = 0; i < rc->n; i++)
            PCHECK(strcmp(rc->pair[i], key) != 0, "reclaim loop: %s reclaimed for %s in rounds %d and %d",
                   w->jobs[x->job].key, w->jobs[x->for_job].key, rc->round[i], round);
        if (rc->n < MAXRECL) {
            snprintf(rc->pair[rc->n], sizeof rc->pair[0], "%s", key);
            rc->round[rc->n++] = round;
        }
    }
}

/* What a caller does between cycles. */
static void apply_round(world *w, const q_output *out) {
    static world w2;
    w2 = *w;
    int nj = 0;
    for (int i = 0; i < w->in.njobs; i++) {
        const struct q_job *j = &w->jobs[i];
        struct q_job *d = &w2.jobs[nj];
        *d = *j;
        memcpy(w2.pl[nj], w->pl[i], sizeof w2.pl[nj]);
        memcpy(w2.keys[nj], w->keys[i], sizeof w2.keys[nj]);
        d->key = d->uid = w2.keys[nj];
        const struct q_result *r = &out->res[i];
        if (j->state == Q_JOB_RUNNING) {
            if (j->terminating) { /* gone: back to the queue */
                for (int k = 0; k < j->replicas; k++) place_apply(w2.nodes, j, &j->placement[k], -1);
                d->state = Q_JOB_PENDING;
                d->terminating = false;
                d->placement = NULL;
                d->preemptions++;
                d->preemptions_1h++;
                d->queued = w->in.now;
                d->started = 0;
                d->replicas = j->max_replicas > 0 ? (j->min_replicas > 0 ? j->min_replicas : j->replicas) : j->replicas;
                d->gen++;
            } else if (j->stopping) {
                for (int k = j->replicas - j->stopping; k < j->replicas; k++)
                    place_apply(w2.nodes, j, &j->placement[k], -1);
                d->replicas -= j->stopping;
                d->stopping = 0;
                d->gen++;
            }
            int a;
            if ((a = act_of(out, i, Q_ACT_PREEMPT)) >= 0) d->terminating = true;
            if ((a = act_of(out, i, Q_ACT_SHRINK)) >= 0) d->stopping = d->replicas - out->actions[a].replicas;
            if ((a = act_of(out, i, Q_ACT_GROW)) >= 0) {
                for (int k = 0; k < out->actions[a].nplace; k++) {
                    w2.pl[nj][d->replicas + k] = out->places[out->actions[a].place_off + k];
                    place_apply(w2.nodes, j, &w2.pl[nj][d->replicas + k], +1);
                }
                d->replicas = out->actions[a].replicas;
            }
            d->placement = d->state == Q_JOB_RUNNING ? w2.pl[nj] : NULL;
        } else if (r->decision == Q_DEC_ADMIT) {
            d->state = Q_JOB_RUNNING;
            d->replicas = r->nplace;
            memcpy(w2.pl[nj], &out->places[r->place_off], sizeof(struct q_place) * (size_t)r->nplace);
            int a = act_of(out, i, Q_ACT_GROW);
            if (a >= 0) {
                memcpy(&w2.pl[nj][r->nplace], &out->places[out->actions[a].place_off],
                       sizeof(struct q_place) * (size_t)out->actions[a].nplace);
                d->replicas = out->actions[a].replicas;
            }
            for (int k = 0; k < d->replicas; k++) place_apply(w2.nodes, d, &w2.pl[nj][k], +1);
            d->placement = w2.pl[nj];
            d->started = w->in.now;
            double pr = j->pred_runtime_s > 0 ? j->pred_runtime_s : j->est_runtime_s;
            d->end_time = pr > 0 ? w->in.now + pr : 0;
            d->gen++;
        }
        nj++;
    }
    /* New work arrives: a copy of a random job, often urgent and often
     * elastic, so later rounds preempt, borrow and shrink too. */
    for (int x = 0; x < 2 && nj < MAXJ && nj > 0; x++) {
        struct q_job *d = &w2.jobs[nj];
        *d = w2.jobs[rnd(nj)];
        snprintf(w2.keys[nj], sizeof w2.keys[nj], "ns/r%d", (int)(rng % 100000));
        d->key = d->uid = w2.keys[nj];
        d->state = Q_JOB_PENDING;
        d->placement = NULL;
        d->terminating = false;
        d->stopping = 0;
        d->started = 0;
        d->preemptions = d->preemptions_1h = 0;
        d->queued = d->created = w->in.now;
        if (chance(50)) d->priority = rnd(3) * w->in.policy.nlevels; /* level 0 */
        if (d->max_replicas > 0 && d->min_replicas > d->replicas) d->replicas = d->min_replicas;
        d->gen = 0;
        nj++;
    }
    w2.in.njobs = nj;
    *w = w2;
    w->in.nodes = w->nodes;
    w->in.jobs = w->jobs;
    w->in.users = w->users;
    w->in.groups = w->groups;
    w->in.now += 1200; /* past most minimum runtimes in a few rounds */
}

TEST(preemption_borrowing_elastic_over_rounds) {
    static world w;
    int n = env_int("AIQ_QPROPS_N", 3000) / 3;
    uint64_t seed = (uint64_t)env_int("AIQ_QPROPS_SEED", 20261121);
    for (int iter = 0; iter < n && !failed_once; iter++) {
        rng = seed * 7919u + (uint64_t)iter;
        gen_pre(&w);
        int nl = w.in.policy.nlevels;
        q_scorer sc = {&nl, scorer_score, scorer_level};
        q_state *st = q_state_create(NULL);
        reclaims seen = {.n = 0};
        for (int round = 0; round < 6 && !failed_once; round++) {
            q_output out, fo;
            aiq_err err;
            aiq_err_clear(&err);
            aiq_rc rc = q_cycle_run(st, &w.in, &sc, &out, &err);
            PCHECK(rc == AIQ_OK, "round %d: cycle failed: %s", round, err.message);
            if (rc != AIQ_OK) break;
            if (env_int("AIQ_QPROPS_TRACE", -1) == iter) {
                printf("  round %d (now %.0f):\n", round, w.in.now);
                dump_world(&w, &out);
            }
            check_capacity(iter, &w, &out);
            check_growth(iter, &w, &out);
            check_quota_instant(iter, &w, &out);
            check_actions(iter, st, &w, &out);
            check_makes_room(iter, &w, &out);
            check_minimal(iter, &w, &out);
            check_no_reclaim_loop(iter, round, &w, &out, &seen);
            for (int a = 0; a < out.nactions; a++) {
                nprops_preempt += out.actions[a].kind == Q_ACT_PREEMPT;
                nprops_shrink += out.actions[a].kind == Q_ACT_SHRINK;
                nprops_grow += out.actions[a].kind == Q_ACT_GROW;
                nprops_reclaim += out.actions[a].reason == Q_R_RECLAIMED;
            }
            for (int i = 0; i < w.in.njobs; i++) {
                char m[512];
                int len = q_message(&w.in, &out, i, m, sizeof m);
                PCHECK(len > 0 && len < (int)sizeof m, "message of job %d", i);
            }
            q_state *fresh = q_state_create(NULL);
            PCHECK(q_cycle_run(fresh, &w.in, &sc, &fo, NULL) == AIQ_OK, "fresh cycle failed");
            PCHECK(fo.nactions == out.nactions, "round %d: %d actions incremental, %d fresh", round,
                   out.nactions, fo.nactions);
            for (int a = 0; a < out.nactions && a < fo.nactions; a++) {
                const struct q_action *x = &out.actions[a], *y = &fo.actions[a];
                PCHECK(x->job == y->job && x->for_job == y->for_job && x->replicas == y->replicas &&
                       x->place_off == y->place_off && x->nplace == y->nplace && x->kind == y->kind &&
                       x->reason == y->reason, "action %d differs", a);
            }
            for (int i = 0; i < w.in.njobs; i++)
                PCHECK(out.res[i].decision == fo.res[i].decision && out.res[i].reason == fo.res[i].reason,
                       "round %d job %d: incremental %d/%d fresh %d/%d", round, i, out.res[i].decision,
                       out.res[i].reason, fo.res[i].decision, fo.res[i].reason);
            q_state_free(fresh);
            apply_round(&w, &out);
        }
        q_state_free(st);
    }
    printf("  %d worlds x 6 rounds: %d preemptions, %d shrinks, %d growths, %d reclaims\n", n,
           nprops_preempt, nprops_shrink, nprops_grow, nprops_reclaim);
    (void)nprops_minimal;
    CHECK(nprops_preempt > n / 4);
    CHECK(nprops_shrink > n / 50);
    CHECK(nprops_grow > n / 20);
    CHECK(nprops_reclaim > 0);
}
