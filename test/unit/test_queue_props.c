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

static int64_t units(const struct q_job *j) {
    return j->gpus > 0 ? j->gpus : (j->gpu_memory_mib > 0 ? 1 : 0);
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
            } else if (j->gpu_memory_mib > 0) {
                int g = -1;
                for (int x = 0; x < n->ngpus && g < 0; x++)
                    if (n->gpu_mem_total[x] - n->gpu_mem_used[x] >= j->gpu_memory_mib) g = x;
                if (g < 0) continue;
                p.gpu_mask = 1u << g;
                n->gpu_mem_used[g] += j->gpu_memory_mib;
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
    in->policy.placement = chance(50) ? AIQ_PLACE_SPREAD : AIQ_PLACE_BINPACK;
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
        PCHECK(r->nplace == j->replicas, "job %d: %d placements for %d replicas", i, r->nplace, j->replicas);
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
            } else if (j->gpu_memory_mib > 0) {
                PCHECK(bits == 1, "shared job %d holds %d GPUs", i, bits);
                int g = __builtin_ctz(p->gpu_mask | (1u << 31));
                PCHECK(g < n->ngpus, "shared GPU index out of range");
                if (g < n->ngpus) {
                    n->gpu_mem_used[g] += j->gpu_memory_mib;
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
                    n->gpu_mem_used[g] = j->gpus > 0 ? n->gpu_mem_total[g] : n->gpu_mem_used[g] + j->gpu_memory_mib;
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

/* Incremental cycles decide exactly like a fresh state on the same input
 * (the scorer is time-independent, so cached scores equal fresh ones). */
TEST(incremental_equals_fresh) {
    static world w;
    int n = env_int("AIQ_QPROPS_N", 3000) / 6;
    for (int iter = 0; iter < n && !failed_once; iter++) {
        rng = 777u * 1000003u + (uint64_t)iter;
        gen(&w);
        w.in.policy.rescore_interval_s = 1e9;
        w.in.policy.starvation_after_s = 0;
        int nl = w.in.policy.nlevels;
        q_scorer sc = {&nl, scorer_score, scorer_level};
        q_state *inc = q_state_create(NULL);
        q_output a, b;
        /* Odd iterations run the incremental state with lazy estimates,
         * asked for in a random order (some jobs twice, running ones
         * too), then all in index order; the fresh state always
         * estimates eagerly. */
        bool lazy = iter % 2 == 1;
        for (int step = 0; step < 4; step++) {
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
            static char extra[4][24];
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
            w.in.now += 30;
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
}
