/* test_queue.c -- scenario tables for the queue core: nodes, jobs, users
 * and groups in, expected decisions, exact messages, positions and
 * estimated starts out. Each table row is one thing a user relies on:
 * level order, quota and budget waits, rejects, gang fit, GPU-memory
 * placement, binpack/spread, EASY backfill, estimates, starvation,
 * suspension and the incremental cycle. */
#include "test/unit/th.h"

#include <math.h>
#include <stdlib.h>

#include "queue/queue.h"

#define NOW 1795262400.0 /* 2026-11-21T12:00:00Z */
#define GIB (1024LL * 1024 * 1024)
#define NONE (-1e300)    /* "do not check" for eta */

typedef struct {
    const char *name, *domain, *model;
    int ngpus;           /* 0 = default 8 */
    int64_t gmem;        /* 0 = default 81920 */
    int unsched;
    int cpu_only;        /* ngpus really 0 */
} n_row;

typedef struct {
    const char *key;
    int user, group;     /* 1-based in the table, 0 = none */
    int prio, replicas, gpus;
    int64_t gmem;
    const char *model, *domain;
    double ago;          /* queued this many seconds ago (default 60) */
    double pred;         /* predicted runtime seconds */
    int run;             /* 1 = running; replica k on node `node + k` */
    int node;
    double end_in;       /* running: predicted end - now */
    int suspended;
} j_row;

typedef struct {
    const char *name;
    int group;           /* 1-based, 0 none */
    int64_t gpus;        /* quota; 0 in the table = unlimited */
    double budget;       /* 0 = none */
    double used;
    double window_end;
} o_row;

typedef struct {
    const char *key;
    int decision;
    const char *msg;     /* NULL = do not check */
    double eta_in;       /* NONE = do not check; else eta - now (-NOW: eta 0) */
    int pos;             /* 0 = do not check */
} e_row;

typedef struct {
    const char *name;
    n_row nodes[6];
    j_row jobs[10];
    o_row users[3], groups[3];
    int backfill, spread;
    double starve;
    e_row exp[10];
    double reserved_in;  /* 0 = no reservation expected */
} scen;

/* ---- fixture ---------------------------------------------------------- */

static const char *const levels[] = {"high", "normal", "low"};

/* level: prio >= 100 high, >= 10 normal, else low. score: prio*1000 plus
 * hours waited (older first among equals). */
static int t_score(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_JOB_PRIORITY] * 1000 + f[Q_F_WAIT_HOURS];
    return 0;
}
static int t_level(void *ctx, const double *f, int *lv) {
    (void)ctx;
    double p = f[Q_F_JOB_PRIORITY];
    *lv = p >= 100 ? 0 : p >= 10 ? 1 : 2;
    return 0;
}
static const q_scorer scorer = {NULL, t_score, t_level};

typedef struct {
    struct q_node nodes[6];
    struct q_job jobs[10];
    struct q_place pl[10][8];
    struct q_user users[3];
    struct q_group groups[3];
    struct q_input in;
} fixture;

static void unlimited(struct aiq_quota *q) {
    q->gpus = q->gpu_memory_mib = q->cpu_milli = q->memory_bytes = q->jobs = -1;
}

static void build(const scen *s, fixture *fx) {
    memset(fx, 0, sizeof *fx);
    struct q_input *in = &fx->in;
    in->now = NOW;
    int nn = 0;
    for (; nn < 6 && s->nodes[nn].name; nn++) {
        const n_row *r = &s->nodes[nn];
        struct q_node *n = &fx->nodes[nn];
        n->name = r->name;
        n->domain = r->domain;
        n->gpu_model = r->model;
        n->ngpus = r->cpu_only ? 0 : r->ngpus ? r->ngpus : 8;
        for (int g = 0; g < n->ngpus; g++) n->gpu_mem_total[g] = r->gmem ? r->gmem : 81920;
        n->cpu_alloc = 64000;
        n->mem_alloc = 512 * GIB;
        n->schedulable = !r->unsched;
    }
    int nu = 0, ng = 0;
    for (; nu < 3 && s->users[nu].name; nu++) {
        const o_row *r = &s->users[nu];
        struct q_user *u = &fx->users[nu];
        u->name = r->name;
        u->group = r->group - 1;
        unlimited(&u->quota);
        if (r->gpus) u->quota.gpus = r->gpus;
        u->budget_gpu_hours = r->budget ? r->budget : -1;
        u->used_gpu_hours = r->used;
        u->window_end = r->window_end;
        u->fairshare = 1;
    }
    for (; ng < 3 && s->groups[ng].name; ng++) {
        const o_row *r = &s->groups[ng];
        struct q_group *g = &fx->groups[ng];
        g->name = r->name;
        unlimited(&g->quota);
        if (r->gpus) g->quota.gpus = r->gpus;
        g->budget_gpu_hours = r->budget ? r->budget : -1;
        g->used_gpu_hours = r->used;
        g->window_end = r->window_end;
        g->fairshare = 1;
    }
    int nj = 0;
    for (; nj < 10 && s->jobs[nj].key; nj++) {
        const j_row *r = &s->jobs[nj];
        struct q_job *j = &fx->jobs[nj];
        j->key = r->key;
        j->uid = r->key;
        j->user = r->user - 1;
        j->group = r->group - 1;
        j->priority = r->prio;
        j->replicas = r->replicas ? r->replicas : 1;
        if (r->replicas < 0) j->replicas = 0; /* invalid on purpose */
        j->gpus = r->gpus;
        j->gpu_memory_mib = r->gmem;
        j->cpu_milli = 1000;
        j->memory_bytes = 4 * GIB;
        j->gpu_model = r->model;
        j->domain = r->domain;
        j->queued = j->created = NOW - (r->ago ? r->ago : 60);
        j->pred_runtime_s = r->pred;
        j->suspended = r->suspended;
        if (r->run) {
            j->state = Q_JOB_RUNNING;
            j->end_time = r->end_in ? NOW + r->end_in : 0;
            for (int k = 0; k < j->replicas; k++) {
                struct q_node *n = &fx->nodes[r->node + k];
                struct q_place *p = &fx->pl[nj][k];
                p->node = r->node + k;
                p->gpu_mem_mib = r->gmem;
                if (j->gpus > 0) {
                    int got = 0;
                    for (int g = 0; g < n->ngpus && got < j->gpus; g++) {
                        if (n->gpu_mem_used[g]) continue;
                        n->gpu_mem_used[g] = n->gpu_mem_total[g];
                        p->gpu_mask |= 1u << g;
                        got++;
                    }
                } else if (r->gmem > 0) {
                    n->gpu_mem_used[0] += r->gmem;
                    p->gpu_mask = 1;
                }
                n->cpu_used += j->cpu_milli;
                n->mem_used += j->memory_bytes;
            }
            j->placement = fx->pl[nj];
        }
    }
    in->nodes = fx->nodes;
    in->nnodes = nn;
    in->users = fx->users;
    in->nusers = nu;
    in->groups = fx->groups;
    in->ngroups = ng;
    in->jobs = fx->jobs;
    in->njobs = nj;
    in->policy.nlevels = 3;
    in->policy.level_names = levels;
    in->policy.backfill = s->backfill ? AIQ_BACKFILL_EASY : AIQ_BACKFILL_NONE;
    in->policy.placement = s->spread ? AIQ_PLACE_SPREAD : AIQ_PLACE_BINPACK;
    in->policy.starvation_after_s = s->starve;
    in->policy.promote_to = 0;
}

static int find(const fixture *fx, const char *key) {
    for (int i = 0; i < fx->in.njobs; i++)
        if (strcmp(fx->jobs[i].key, key) == 0) return i;
    return -1;
}

static void run_scen(const scen *s) {
    fixture fx;
    build(s, &fx);
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err err;
    aiq_err_clear(&err);
    aiq_rc rc = q_cycle_run(st, &fx.in, &scorer, &out, &err);
    if (!CHECK_INT(rc, AIQ_OK)) {
        printf("  scenario %s: %s\n", s->name, err.message);
        q_state_free(st);
        return;
    }
    for (int e = 0; e < 10 && s->exp[e].key; e++) {
        const e_row *x = &s->exp[e];
        int j = find(&fx, x->key);
        if (!CHECK(j >= 0)) continue;
        char msg[512];
        q_message(&fx.in, &out, j, msg, sizeof msg);
        const struct q_result *r = &out.res[j];
        int ok = CHECK_INT(r->decision, x->decision);
        if (x->msg) ok &= CHECK_STR(msg, x->msg);
        if (x->eta_in != NONE) {
            double want = x->eta_in == -NOW ? 0 : NOW + x->eta_in;
            ok &= CHECK_DBL(r->eta, want, 1e-6);
        }
        if (x->pos) ok &= CHECK_INT(r->pos, x->pos);
        if (!ok) printf("  scenario %s, job %s: got \"%s\"\n", s->name, x->key, msg);
    }
    if (s->reserved_in > 0) {
        CHECK(out.reserved_job >= 0);
        CHECK_DBL(out.reserved_time, NOW + s->reserved_in, 1e-6);
    }
    /* The lazy estimate, asked for in the table's order, is the eager one. */
    fx.in.lazy_eta = true;
    q_state *lz = q_state_create(NULL);
    q_output lout;
    if (CHECK_INT(q_cycle_run(lz, &fx.in, &scorer, &lout, NULL), AIQ_OK)) {
        for (int e = 0; e < 10 && s->exp[e].key; e++) {
            int j = find(&fx, s->exp[e].key);
            double eta = -1;
            if (j < 0 || !CHECK_INT(q_eta(lz, &fx.in, &lout, j, &eta), AIQ_OK)) continue;
            if (!CHECK_DBL(eta, out.res[j].eta, 0))
                printf("  scenario %s, job %s: lazy eta differs\n", s->name, s->exp[e].key);
        }
    }
    q_state_free(lz);
    q_state_free(st);
}

#define A Q_DEC_ADMIT
#define W Q_DEC_WAIT
#define R Q_DEC_REJECT
#define N1 {"n1", 0, 0, 0, 0, 0, 0}
#define N2 {"n2", 0, 0, 0, 0, 0, 0}
#define N3 {"n3", 0, 0, 0, 0, 0, 0}

static const scen scenarios[] = {
    {.name = "levels strictly in order, then score, then queued time",
     .nodes = {N1},
     .jobs = {{.key = "t/a", .prio = 5, .gpus = 4},
              {.key = "t/b", .prio = 50, .gpus = 4},
              {.key = "t/c", .prio = 150, .gpus = 4, .ago = 60},
              {.key = "t/d", .prio = 150, .gpus = 4, .ago = 7200}},
     .exp = {{"t/d", A, NULL, 0, 1},
             {"t/c", A, NULL, 0, 2},
             {"t/b", W, "waiting for capacity: 4 x GPU free on one node", NONE, 3},
             {"t/a", W, "blocked behind t/b (level normal, position 1)", NONE, 4}}},
    {.name = "group quota: wait with numbers, others pass, eta from own ends",
     .nodes = {N1, N2, N3},
     .groups = {{"vision", 0, 16, 0, 0, 0}, {"speech", 0, 0, 0, 0, 0}},
     .jobs = {{.key = "v/r1", .group = 1, .replicas = 2, .gpus = 7, .run = 1, .node = 0, .end_in = 7200},
              {.key = "v/r2", .group = 1, .gpus = 1, .run = 1, .node = 2, .end_in = 3600},
              {.key = "v/p", .group = 1, .prio = 100, .gpus = 4},
              {.key = "s/q", .group = 2, .prio = 1, .gpus = 4}},
     .exp = {{"v/p", W, "waiting for 3 GPUs in group vision (quota 16, in use 15)", 7200, 1},
             {"s/q", A, "admitted: 1 replica on n3 GPU 1,2,3,4", 0, 2}}},
    {.name = "user quota",
     .nodes = {N1},
     .users = {{"alice", 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/run", .user = 1, .gpus = 4, .run = 1, .end_in = 600},
              {.key = "t/more", .user = 1, .prio = 10, .gpus = 2}},
     .exp = {{"t/more", W, "waiting for 2 GPUs in user alice (quota 4, in use 4)", 600, 1}}},
    {.name = "quota-blocked jobs ahead: each behind waits for the ones ahead to end",
     .nodes = {N1, N2},
     .users = {{"alice", 0, 4, 0, 0, 0}, {"carol", 0, 0, 0, 0, 0}},
     .jobs = {{.key = "t/run", .user = 1, .gpus = 4, .run = 1, .end_in = 600},
              {.key = "t/a", .user = 1, .prio = 9, .gpus = 4, .pred = 1000},
              {.key = "t/b", .user = 1, .prio = 8, .gpus = 4, .pred = 1000},
              {.key = "t/c", .user = 1, .prio = 7, .gpus = 2, .pred = 1000},
              {.key = "t/d", .user = 1, .prio = 6, .gpus = 2, .pred = 500},
              {.key = "t/o", .user = 2, .prio = 1, .gpus = 8, .pred = 100}},
     .exp = {{"t/a", W, "waiting for 4 GPUs in user alice (quota 4, in use 4)", 600, 1},
             {"t/b", W, NULL, 1600, 2},
             {"t/c", W, NULL, 2600, 3},
             {"t/d", W, NULL, 2600, 4},
             {"t/o", A, NULL, 0, 5}}},
    {.name = "fragmented: enough GPUs in all but no node fits, so not now",
     .nodes = {N1, N2},
     .jobs = {{.key = "t/r1", .gpus = 4, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/r2", .gpus = 4, .run = 1, .node = 1, .end_in = 1200},
              {.key = "t/big", .prio = 5, .gpus = 8, .pred = 100}},
     .exp = {{"t/big", W, "waiting for capacity: 8 x GPU free on one node", 600, 1}}},
    {.name = "gang: all replicas start together, when the last GPUs it needs free up",
     .nodes = {N1, N2},
     .users = {{"alice", 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/r1", .gpus = 8, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/r2", .gpus = 8, .run = 1, .node = 1, .end_in = 1200},
              {.key = "t/gang", .prio = 5, .replicas = 2, .gpus = 8, .pred = 100},
              {.key = "t/q1", .user = 1, .prio = 4, .gpus = 4, .pred = 100},
              {.key = "t/q2", .user = 1, .prio = 3, .gpus = 4, .pred = 50}},
     /* the gang takes all 16 GPUs at +1200 until +1300; alice's two jobs
      * then run one after the other (quota 4) */
     .exp = {{"t/gang", W, NULL, 1200, 1},
             {"t/q1", W, NULL, 1300, 2},
             {"t/q2", W, NULL, 1400, 3}}},
    {.name = "budget: jobs ahead use it up, the next one waits for the window",
     .nodes = {N1},
     .users = {{"bob", 0, 0, 10, 0, NOW + 86400}, {"carol", 0, 0, 0, 0, 0}},
     .jobs = {{.key = "t/big", .user = 2, .gpus = 8, .run = 1, .end_in = 3600},
              {.key = "t/b1", .user = 1, .prio = 3, .gpus = 1, .pred = 6 * 3600},
              {.key = "t/b2", .user = 1, .prio = 2, .gpus = 1, .pred = 6 * 3600},
              {.key = "t/b3", .user = 1, .prio = 1, .gpus = 1, .pred = 3 * 3600}},
     .exp = {{"t/b1", W, "waiting for capacity: 1 x GPU free on one node", 3600, 1},
             {"t/b2", W, NULL, 86400, 2},
             {"t/b3", W, NULL, 3600, 3}}},
    {.name = "budgets: exhausted until the window ends; bigger than the budget rejects",
     .nodes = {N1},
     .users = {{"bob", 0, 0, 100, 99.5, 1796083200.0}},
     .groups = {{"nlp", 0, 0, 10, 0, 1796083200.0}},
     .jobs = {{.key = "t/one", .user = 1, .gpus = 1, .pred = 3600},
              {.key = "t/huge", .group = 1, .gpus = 8, .pred = 7200}},
     .exp = {{"t/one", W, "user budget exhausted until 2026-12-01T00:00:00Z", 1796083200.0 - NOW, 1},
             {"t/huge", R, "rejected: needs 16.0 GPU-hours, group nlp budget is 10.0 per window", -NOW, 0}}},
    {.name = "rejects: over quota, too big for any node, unknown model/domain, gang",
     .nodes = {N1, N2},
     .groups = {{"vision", 0, 16, 0, 0, 0}},
     .jobs = {{.key = "t/q", .group = 1, .replicas = 4, .gpus = 8},
              {.key = "t/big", .gpus = 16},
              {.key = "t/mem", .gpus = 1, .gmem = 90000},
              {.key = "t/model", .gpus = 1, .model = "H100"},
              {.key = "t/dom", .gpus = 1, .domain = "pool-z"},
              {.key = "t/gang", .replicas = 3, .gpus = 8},
              {.key = "t/bad", .replicas = -1, .gpus = 1},
              {.key = "t/ok", .gpus = 1}},
     .exp = {{"t/q", R, "rejected: needs 32 GPUs, group vision quota is 16", -NOW, 0},
             {"t/big", R, "rejected: needs 16 GPUs per replica, largest node has 8", -NOW, 0},
             {"t/mem", R, "rejected: needs 87.9 GiB per GPU, largest GPU has 80 GiB", -NOW, 0},
             {"t/model", R, "rejected: no node has GPU model H100", -NOW, 0},
             {"t/dom", R, "rejected: no node in domain pool-z", -NOW, 0},
             {"t/gang", R, "rejected: gang of 3 replicas does not fit in any domain (at most 2 fit)", -NOW, 0},
             {"t/bad", R, "rejected: spec.replicas must be 1..1024, got 0", -NOW, 0},
             {"t/ok", A, NULL, 0, 1}}},
    {.name = "capacity messages for one node and for a gang",
     .nodes = {{"a1", 0, "A100", 0, 0, 0, 0}, {"a2", 0, "A100", 0, 0, 0, 0}},
     .jobs = {{.key = "t/r", .gpus = 4, .run = 1, .end_in = 3600},
              {.key = "t/one", .prio = 100, .gpus = 8, .gmem = 40000, .model = "A100", .pred = 3600},
              {.key = "t/gang", .prio = 100, .replicas = 2, .gpus = 8, .gmem = 40000, .model = "A100", .ago = 30}},
     .exp = {{"t/one", A, NULL, 0, 1},
             {"t/gang", W, "waiting for capacity: 2 replicas of 8 x A100 >= 39.1 GiB free on one domain", 3600, 2}}},
    {.name = "gang: all replicas or none, then strict blocking",
     .nodes = {N1, N2, N3},
     .jobs = {{.key = "t/r", .gpus = 4, .run = 1, .node = 2, .end_in = 3600},
              {.key = "t/gang", .prio = 100, .replicas = 3, .gpus = 8, .pred = 3600},
              {.key = "t/small", .prio = 1, .gpus = 1}},
     .exp = {{"t/gang", W, "waiting for capacity: 3 replicas of 8 x GPU free on one domain", 3600, 1},
             {"t/small", W, "blocked behind t/gang (level high, position 1)", 3600 + 3600, 2}}},
    {.name = "EASY backfill: short jobs anywhere, long ones off the reservation",
     .backfill = 1,
     .nodes = {N1, N2},
     .jobs = {{.key = "t/r0", .gpus = 6, .run = 1, .node = 0, .end_in = 3600},
              {.key = "t/r1", .gpus = 4, .run = 1, .node = 1, .end_in = 3 * 3600},
              {.key = "t/head", .prio = 100, .gpus = 8, .pred = 3600},
              {.key = "t/long4", .prio = 50, .gpus = 4, .pred = 7200},
              {.key = "t/long2", .prio = 40, .gpus = 2, .pred = 7200},
              {.key = "t/short", .prio = 30, .gpus = 2, .pred = 1800},
              {.key = "t/late", .prio = 20, .gpus = 1, .pred = 600}},
     .exp = {{"t/head", W, "waiting for capacity: 8 x GPU free on one node", 3600, 1},
             {"t/long4", A, "admitted: 1 replica on n2 GPU 4,5,6,7 (backfilled)", 0, 2},
             {"t/long2", W, "blocked behind t/head (level high, position 1)", NONE, 3},
             {"t/short", A, "admitted: 1 replica on n1 GPU 6,7 (backfilled)", 0, 4},
             {"t/late", W, "waiting for capacity: 1 x GPU free on one node", NONE, 5}},
     .reserved_in = 3600},
    {.name = "backfill never takes quota the reserved job needs",
     .backfill = 1,
     .nodes = {N1, N2},
     .groups = {{"vision", 0, 16, 0, 0, 0}},
     .jobs = {{.key = "v/r0", .group = 1, .gpus = 8, .run = 1, .node = 0, .end_in = 3600},
              {.key = "o/r1", .gpus = 4, .run = 1, .node = 1, .end_in = 3 * 3600},
              {.key = "v/head", .group = 1, .prio = 100, .gpus = 8, .pred = 3600},
              {.key = "v/short", .group = 1, .prio = 50, .gpus = 4, .pred = 1800},
              {.key = "o/short", .prio = 40, .gpus = 4, .pred = 1800}},
     .exp = {{"v/head", W, "waiting for capacity: 8 x GPU free on one node", 3600, 1},
             {"v/short", W, "blocked behind v/head (level high, position 1)", NONE, 2},
             {"o/short", A, "admitted: 1 replica on n2 GPU 4,5,6,7 (backfilled)", 0, 3}},
     .reserved_in = 3600},
    {.name = "backfill without predicted ends: no reservation, strict blocking, unknown eta",
     .backfill = 1,
     .nodes = {N1, N2},
     .jobs = {{.key = "t/r0", .gpus = 8, .run = 1, .node = 0},
              {.key = "t/r1", .gpus = 4, .run = 1, .node = 1},
              {.key = "t/head", .prio = 100, .gpus = 8, .pred = 3600},
              {.key = "t/small", .prio = 50, .gpus = 2, .pred = 600}},
     .exp = {{"t/head", W, "waiting for capacity: 8 x GPU free on one node", -NOW, 1},
             {"t/small", W, "blocked behind t/head (level high, position 1)", -NOW, 2}}},
    {.name = "CPU-only jobs and spread gangs",
     .spread = 1,
     .nodes = {{"c1", 0, 0, 0, 0, 0, 1}, N2, N3},
     .jobs = {{.key = "t/cpu", .prio = 10},
              {.key = "t/gang", .prio = 5, .replicas = 2, .gpus = 2}},
     .exp = {{"t/cpu", A, "admitted: 1 replica on c1", 0, 1},
             {"t/gang", A, "admitted: 2 replicas on n2 GPU 0,1, n3 GPU 0,1", 0, 2}}},
    {.name = "no backfill: everything behind the head waits",
     .nodes = {N1, N2},
     .jobs = {{.key = "t/r0", .gpus = 6, .run = 1, .node = 0, .end_in = 3600},
              {.key = "t/r1", .gpus = 4, .run = 1, .node = 1, .end_in = 3 * 3600},
              {.key = "t/head", .prio = 100, .gpus = 8, .pred = 3600},
              {.key = "t/long4", .prio = 50, .gpus = 4, .pred = 7200}},
     .exp = {{"t/head", W, NULL, 3600, 1},
             {"t/long4", W, "blocked behind t/head (level high, position 1)", 3600, 2}}},
    {.name = "estimates follow running ends and queue order",
     .nodes = {N1},
     .jobs = {{.key = "t/r", .gpus = 8, .run = 1, .end_in = 3600},
              {.key = "t/a", .prio = 100, .gpus = 8, .pred = 7200},
              {.key = "t/b", .prio = 50, .gpus = 4, .pred = 3600},
              {.key = "t/c", .prio = 40, .gpus = 4, .pred = 3600},
              {.key = "t/d", .prio = 30, .gpus = 8, .pred = 3600},
              {.key = "t/e", .prio = 20, .gpus = 1}},
     .exp = {{"t/a", W, NULL, 3600, 1},
             {"t/b", W, NULL, 3 * 3600, 2},
             {"t/c", W, NULL, 3 * 3600, 3},
             {"t/d", W, NULL, 4 * 3600, 4},
             {"t/e", W, NULL, 5 * 3600, 5}}},
    {.name = "starvation promotes a long waiter to the first level",
     .starve = 3600,
     .nodes = {N1},
     .jobs = {{.key = "t/old", .prio = 1, .gpus = 8, .ago = 7200},
              {.key = "t/new", .prio = 50, .gpus = 8}},
     .exp = {{"t/old", A, NULL, 0, 1},
             {"t/new", W, "waiting for capacity: 8 x GPU free on one node", NONE, 2}}},
    {.name = "without starvation the higher level goes first",
     .nodes = {N1},
     .jobs = {{.key = "t/old", .prio = 1, .gpus = 8, .ago = 7200},
              {.key = "t/new", .prio = 50, .gpus = 8}},
     .exp = {{"t/new", A, NULL, 0, 1},
             {"t/old", W, "waiting for capacity: 8 x GPU free on one node", NONE, 2}}},
    {.name = "suspended jobs neither run nor block; unschedulable nodes are skipped",
     .nodes = {{"cordoned", 0, 0, 0, 0, 1, 0}, N2},
     .jobs = {{.key = "t/held", .prio = 100, .gpus = 8, .suspended = 1},
              {.key = "t/go", .prio = 1, .gpus = 8},
              {.key = "t/next", .prio = 1, .gpus = 8, .ago = 30}},
     .exp = {{"t/held", W, "suspended (spec.suspend is true)", -NOW, 0},
             {"t/go", A, "admitted: 1 replica on n2 GPU 0,1,2,3,4,5,6,7", 0, 1},
             {"t/next", W, "waiting for capacity: 8 x GPU free on one node", -NOW, 2}}},
    {.name = "model and domain constraints",
     .nodes = {{"a", "pool-a", "A100", 0, 0, 0, 0}, {"h", "pool-b", "H100", 0, 0, 0, 0}},
     .jobs = {{.key = "t/h100", .prio = 10, .gpus = 2, .model = "H100"},
              {.key = "t/poola", .prio = 10, .gpus = 2, .domain = "pool-a"},
              {.key = "t/mix", .prio = 10, .gpus = 2, .model = "H100", .domain = "pool-a"}},
     .exp = {{"t/h100", A, "admitted: 1 replica on h GPU 0,1", 0, 0},
             {"t/poola", A, "admitted: 1 replica on a GPU 0,1", 0, 0},
             {"t/mix", R, "rejected: no node in domain pool-a has GPU model H100", -NOW, 0}}},
    /* Per-node capacity in the estimate (each test gave an earlier start
     * when GPUs were counted over the whole cluster). */
    {.name = "eta per node: a 4-GPU job starts when one node is whole, not when 4 are free",
     .nodes = {{"n1", 0, 0, 4, 0, 0, 0}, {"n2", 0, 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/a", .gpus = 1, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/b", .gpus = 1, .run = 1, .node = 0, .end_in = 1800},
              {.key = "t/c", .gpus = 2, .run = 1, .node = 1, .end_in = 1200},
              {.key = "t/four", .prio = 5, .gpus = 4, .pred = 100}},
     /* 2 + 2 free now, 5 at +600 (n1 3 of 4), n2 whole at +1200 */
     .exp = {{"t/four", W, "waiting for capacity: 4 x GPU free on one node", 1200, 1}}},
    {.name = "eta per node: a gang of 2 x 4 GPUs needs two whole nodes at once",
     .nodes = {{"n1", 0, 0, 4, 0, 0, 0}, {"n2", 0, 0, 4, 0, 0, 0}, {"n3", 0, 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/a", .gpus = 2, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/b", .gpus = 2, .run = 1, .node = 0, .end_in = 2400},
              {.key = "t/c", .gpus = 4, .run = 1, .node = 1, .end_in = 1200},
              {.key = "t/d", .gpus = 2, .run = 1, .node = 2, .end_in = 1800},
              {.key = "t/gang", .prio = 5, .replicas = 2, .gpus = 4, .pred = 100},
              {.key = "t/next", .prio = 4, .gpus = 4, .pred = 100}},
     /* 8 GPUs are free at +1200 (n1 2, n2 4, n3 2), two whole nodes at
      * +1800 (n2, n3); the gang takes them until +1900, when t/next gets
      * one (n1 is whole only at +2400) */
     .exp = {{"t/gang", W, NULL, 1800, 1},
             {"t/next", W, "blocked behind t/gang (level low, position 1)", 1900, 2}}},
    {.name = "eta per node: a model-pinned job waits for a node of its model",
     .nodes = {{"a1", 0, "A100", 4, 0, 0, 0}, {"h1", 0, "H100", 4, 0, 0, 0}},
     .jobs = {{.key = "t/x", .gpus = 4, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/y", .gpus = 4, .run = 1, .node = 1, .end_in = 1800},
              {.key = "t/h", .prio = 5, .gpus = 4, .model = "H100", .pred = 100},
              {.key = "t/any", .prio = 4, .gpus = 4, .pred = 100}},
     /* the A100 node is whole at +600, but t/h needs the H100 one; t/any
      * behind it then starts at +1800 on the A100 node, which the whole-GPU
      * count had given to t/h */
     .exp = {{"t/h", W, NULL, 1800, 1},
             {"t/any", W, NULL, 1800, 2}}},
    {.name = "eta per node: a replica goes to the fullest node that holds it, leaving a whole one",
     .nodes = {{"n1", 0, 0, 4, 0, 0, 0}, {"n2", 0, 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/a", .gpus = 4, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/b", .gpus = 3, .run = 1, .node = 1, .end_in = 600},
              {.key = "t/c", .gpus = 1, .run = 1, .node = 1, .end_in = 7200},
              {.key = "t/one", .prio = 6, .gpus = 1, .pred = 3600},
              {.key = "t/whole", .prio = 5, .gpus = 4, .pred = 100}},
     /* at +600 n1 has 4 free, n2 3: t/one on n2 (first fit would take n1
      * and leave t/whole until +4200) */
     .exp = {{"t/one", W, NULL, 600, 1},
             {"t/whole", W, NULL, 600, 2}}},
    {.name = "eta per node: a gang waits for room in one domain, not across two",
     .nodes = {{"a1", "pool-a", 0, 4, 0, 0, 0}, {"a2", "pool-a", 0, 4, 0, 0, 0},
               {"b1", "pool-b", 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/x", .gpus = 4, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/y", .gpus = 4, .run = 1, .node = 1, .end_in = 1800},
              {.key = "t/z", .gpus = 4, .run = 1, .node = 2, .end_in = 300},
              {.key = "t/gang", .prio = 5, .replicas = 2, .gpus = 4, .pred = 100}},
     /* a1 and b1 are whole at +600, but in two domains: pool-a holds the
      * gang at +1800 */
     .exp = {{"t/gang", W, NULL, 1800, 1}}},
    /* A running job past its planned end (each ETA was now before). */
    {.name = "eta overrun: a job past its planned end is planned to run as long again, then longer",
     .nodes = {N1, N2},
     .jobs = {{.key = "t/over1", .gpus = 8, .run = 1, .node = 0, .pred = 3600, .end_in = -1800},
              {.key = "t/over2", .gpus = 8, .run = 1, .node = 1, .pred = 1000, .end_in = -2500},
              {.key = "t/w1", .prio = 5, .gpus = 8, .pred = 3600},
              {.key = "t/w2", .prio = 4, .gpus = 8, .pred = 3600}},
     /* t/over1 ran 5,400 s of a 3,600-s plan: planned 7,200 s, ends at
      * +1800; t/over2 ran 3,500 s of 1,000: 2,000 is past too, 4,000
      * ends at +500 */
     .exp = {{"t/w1", W, NULL, 500, 1},
             {"t/w2", W, NULL, 1800, 2}}},
    /* EASY backfill in the estimate (each test gave the in-order start,
     * after the head, before the estimate simulated backfill). */
    {.name = "eta backfill: a short job behind a blocked gang starts when it ends before the gang's start",
     .backfill = 1,
     .nodes = {N1, N2},
     .jobs = {{.key = "t/r0", .gpus = 8, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/r1", .gpus = 8, .run = 1, .node = 1, .end_in = 3600},
              {.key = "t/gang", .prio = 100, .replicas = 2, .gpus = 8, .pred = 3600},
              {.key = "t/long", .prio = 60, .gpus = 4, .pred = 7200},
              {.key = "t/short", .prio = 50, .gpus = 4, .pred = 1800}},
     /* the gang needs both nodes at +3600; t/long would hold n1 past that
      * and waits for the gang's end, t/short on n1 from +600 ends at +2400 */
     .exp = {{"t/gang", W, NULL, 3600, 1},
             {"t/long", W, NULL, 7200, 2},
             {"t/short", W, NULL, 600, 3}},
     .reserved_in = 3600},
    {.name = "eta backfill: a long job starts early on a node the head does not need, not on one it does",
     .backfill = 1,
     .nodes = {{"a1", "pool-a", 0, 0, 0, 0, 0}, {"a2", "pool-a", 0, 0, 0, 0, 0},
               {"b1", "pool-b", 0, 0, 0, 0, 0}},
     .jobs = {{.key = "t/x", .gpus = 8, .run = 1, .node = 0, .end_in = 600},
              {.key = "t/y", .gpus = 8, .run = 1, .node = 1, .end_in = 3600},
              {.key = "t/z", .gpus = 8, .run = 1, .node = 2, .end_in = 1200},
              {.key = "t/gang", .prio = 100, .replicas = 2, .gpus = 8, .domain = "pool-a", .pred = 3600},
              {.key = "t/any", .prio = 60, .gpus = 4, .pred = 7200},
              {.key = "t/pinned", .prio = 50, .gpus = 4, .domain = "pool-a", .pred = 7200},
              {.key = "t/short", .prio = 40, .gpus = 2, .domain = "pool-a", .pred = 1200}},
     /* a1 is whole at +600 but the gang takes it at +3600: t/any waits
      * for b1 (+1200), t/pinned for the gang's end; t/short fits a1
      * from the clock (+1200) and ends by +3600 */
     .exp = {{"t/gang", W, NULL, 3600, 1},
             {"t/any", W, NULL, 1200, 2},
             {"t/pinned", W, NULL, 7200, 3},
             {"t/short", W, NULL, 1200, 4}},
     .reserved_in = 3600},
    {.name = "eta backfill: a quota-delayed start the head's look-ahead meets keeps its GPUs",
     .backfill = 1,
     .nodes = {N1, N2},
     .groups = {{"g", 0, 4, 0, 0, 0}},
     .jobs = {{.key = "t/d", .gpus = 4, .run = 1, .node = 0, .end_in = 200},
              {.key = "t/b", .gpus = 4, .run = 1, .node = 0, .end_in = 1800},
              {.key = "g/a", .group = 1, .gpus = 4, .run = 1, .node = 1, .end_in = 300},
              {.key = "t/c", .gpus = 4, .run = 1, .node = 1, .end_in = 1200},
              {.key = "g/q", .group = 1, .prio = 100, .gpus = 4, .pred = 7200},
              {.key = "t/head", .prio = 90, .gpus = 8, .pred = 3600},
              {.key = "t/y", .prio = 80, .gpus = 4, .pred = 600}},
     /* g/q waits for its group's quota until +300 and then takes n1's
      * 4 GPUs freed at +200; t/head needs n2 whole (+1200); t/y fits
      * n2 from +300 (A's end), not n1 at +200 */
     .exp = {{"g/q", W, NULL, 300, 1},
             {"t/head", W, NULL, 1200, 2},
             {"t/y", W, NULL, 300, 3}}},
};

TEST(scenario_tables) {
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) run_scen(&scenarios[i]);
}

/* ---- placement details ------------------------------------------------ */

static fixture *mk(void) {
    fixture *fx = calloc(1, sizeof *fx);
    fx->in.now = NOW;
    fx->in.nodes = fx->nodes;
    fx->in.jobs = fx->jobs;
    fx->in.policy.nlevels = 3;
    fx->in.policy.level_names = levels;
    return fx;
}

static void node(fixture *fx, const char *name, int ngpus, int64_t mib) {
    struct q_node *n = &fx->nodes[fx->in.nnodes++];
    memset(n, 0, sizeof *n);
    n->name = name;
    n->ngpus = ngpus;
    for (int g = 0; g < ngpus; g++) n->gpu_mem_total[g] = mib;
    n->cpu_alloc = 64000;
    n->mem_alloc = 512 * GIB;
    n->schedulable = true;
}

static struct q_job *job(fixture *fx, const char *key, int replicas, int gpus, int64_t mib) {
    struct q_job *j = &fx->jobs[fx->in.njobs++];
    memset(j, 0, sizeof *j);
    j->key = j->uid = key;
    j->user = j->group = -1;
    j->replicas = replicas;
    j->gpus = gpus;
    j->gpu_memory_mib = mib;
    j->cpu_milli = 1000;
    j->memory_bytes = GIB;
    j->queued = NOW - 60 + fx->in.njobs; /* submission order */
    return j;
}

TEST(gpu_memory_whole_and_shared) {
    fixture *fx = mk();
    node(fx, "small", 8, 40960);
    node(fx, "big", 8, 81920);
    fx->nodes[1].gpu_mem_used[3] = 30000; /* a shared GPU in use */
    job(fx, "t/whole", 1, 2, 60000);
    job(fx, "t/shared", 1, 0, 10000);
    job(fx, "t/toobigshare", 1, 0, 60000);
    q_state *st = q_state_create(NULL);
    q_output out;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    /* whole GPUs of >= 60000 MiB exist only on "big", not on GPU 3 */
    const struct q_result *r = &out.res[0];
    CHECK_INT(r->decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[r->place_off].node, 1);
    CHECK_INT(out.places[r->place_off].gpu_mask, 0x3);
    /* binpack: the shared job goes onto the partly used GPU 3 */
    r = &out.res[1];
    CHECK_INT(r->decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[r->place_off].node, 1);
    CHECK_INT(out.places[r->place_off].gpu_mask, 1u << 3);
    CHECK_INT(out.places[r->place_off].gpu_mem_mib, 10000);
    /* 60000 MiB do not fit next to 40000 on GPU 3: a fresh GPU on big */
    r = &out.res[2];
    CHECK_INT(r->decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[r->place_off].node, 1);
    CHECK(out.places[r->place_off].gpu_mask != (1u << 3));
    q_state_free(st);
    free(fx);
}

TEST(binpack_vs_spread_and_gang_nodes) {
    for (int spread = 0; spread < 2; spread++) {
        fixture *fx = mk();
        fx->in.policy.placement = spread ? AIQ_PLACE_SPREAD : AIQ_PLACE_BINPACK;
        node(fx, "empty", 8, 81920);
        node(fx, "half", 8, 81920);
        for (int g = 0; g < 4; g++) fx->nodes[1].gpu_mem_used[g] = 81920;
        node(fx, "empty2", 8, 81920);
        job(fx, "t/two", 1, 2, 0);
        job(fx, "t/gang", 2, 4, 0);
        q_state *st = q_state_create(NULL);
        q_output out;
        CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
        const struct q_result *r = &out.res[0];
        CHECK_INT(r->decision, Q_DEC_ADMIT);
        /* binpack fills the partly used node; spread the emptiest */
        CHECK_INT(out.places[r->place_off].node, spread ? 0 : 1);
        r = &out.res[1];
        CHECK_INT(r->decision, Q_DEC_ADMIT);
        CHECK_INT(r->nplace, 2);
        int a = out.places[r->place_off].node, b = out.places[r->place_off + 1].node;
        if (spread) CHECK(a != b);         /* one replica per node */
        else CHECK(a == b && a != 1);      /* fewest nodes: both on one */
        q_state_free(st);
        free(fx);
    }
}

TEST(bad_input_names_field_and_value) {
    fixture *fx = mk();
    node(fx, "n", 8, 81920);
    fx->nodes[0].ngpus = Q_MAX_GPUS + 1;
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err err;
    aiq_err_clear(&err);
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, &err), AIQ_EINVAL);
    CHECK_STR(err.message, "nodes[0].ngpus: must be 0..64, got 65");
    CHECK_INT(out.njobs, 0);
    fx->nodes[0].ngpus = 8;
    fx->in.policy.nlevels = 0;
    aiq_err_clear(&err);
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, &err), AIQ_EINVAL);
    CHECK_STR(err.message, "policy.nlevels: must be 1..16, got 0");
    fx->in.policy.nlevels = 3;
    struct q_job *j = job(fx, "t/run", 1, 1, 0);
    static const struct q_place bad = {5, 1, 0};
    j->state = Q_JOB_RUNNING;
    j->placement = &bad;
    aiq_err_clear(&err);
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, &err), AIQ_EINVAL);
    CHECK_STR(err.message, "jobs[0] (t/run): placement[0] node 5, GPU mask 0x1 out of range");
    q_state_free(st);
    free(fx);
}

TEST(rfc3339_and_names) {
    char b[64];
    q_rfc3339(1796083200.0, b, sizeof b);
    CHECK_STR(b, "2026-12-01T00:00:00Z");
    q_rfc3339(0, b, sizeof b);
    CHECK_STR(b, "1970-01-01T00:00:00Z");
    CHECK_STR(q_decision_name(Q_DEC_REJECT), "reject");
    CHECK_STR(q_reason_name(Q_R_BLOCKED), "blocked");
    q_state_free(NULL);
}

/* ---- incremental ------------------------------------------------------ */

/* Orders of two outputs (job keys) are equal. */
static int same_order(const struct q_input *in, const q_output *a, const q_output *b) {
    if (a->norder != b->norder) return 0;
    for (int k = 0; k < a->norder; k++)
        if (strcmp(in->jobs[a->order[k]].key, in->jobs[b->order[k]].key)) return 0;
    return 1;
}

static int counting_scorer(void *ctx, const double *f, double *s) {
    (*(int *)ctx)++;
    *s = f[Q_F_JOB_PRIORITY]; /* time-independent: cached == fresh */
    return 0;
}

TEST(incremental_cycle_rescoring_only_changes) {
    enum { NJ = 200 };
    fixture *fx = mk();
    static struct q_job jobs[NJ + 1];
    static char keys[NJ + 1][16];
    node(fx, "n", 8, 81920);
    fx->in.jobs = jobs;
    for (int i = 0; i < NJ; i++) {
        snprintf(keys[i], sizeof keys[i], "t/j%03d", i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = jobs[i].uid = keys[i];
        jobs[i].user = jobs[i].group = -1;
        jobs[i].replicas = 1;
        jobs[i].gpus = 1 + i % 4;
        jobs[i].priority = (i * 37) % 50;
        jobs[i].queued = NOW - 1000 - i;
    }
    fx->in.njobs = NJ;
    fx->in.policy.rescore_interval_s = 300;
    int calls = 0;
    q_scorer sc = {&calls, counting_scorer, t_level};
    q_state *st = q_state_create(NULL);
    q_state *fresh = q_state_create(NULL);
    q_output out, ref;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, NJ);
    /* Same input, 10 s later: nothing rescored, same order. */
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, 0);
    /* One job changes priority, one is removed (swap with last), one new. */
    jobs[17].priority = 49;
    jobs[17].gen++;
    jobs[5] = jobs[NJ - 1];
    snprintf(keys[NJ], sizeof keys[NJ], "t/new");
    memset(&jobs[NJ - 1], 0, sizeof jobs[NJ - 1]);
    jobs[NJ - 1].key = jobs[NJ - 1].uid = keys[NJ];
    jobs[NJ - 1].user = jobs[NJ - 1].group = -1;
    jobs[NJ - 1].replicas = 1;
    jobs[NJ - 1].gpus = 1;
    jobs[NJ - 1].priority = 25;
    jobs[NJ - 1].queued = NOW;
    fx->in.now += 10;
    calls = 0;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK(out.nscored <= 3 && out.nscored >= 2);
    CHECK_INT(calls, out.nscored);
    /* The merged order equals a from-scratch sort of the same scores. */
    CHECK_INT(q_cycle_run(fresh, &fx->in, &sc, &ref, NULL), AIQ_OK);
    CHECK(same_order(&fx->in, &out, &ref));
    for (int i = 0; i < NJ; i++) CHECK_INT(out.res[i].decision, ref.res[i].decision);
    /* After the interval everything is rescored. */
    fx->in.now += 301;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, NJ);
    /* A new input generation (policy change) rescores everything too. */
    fx->in.gen++;
    fx->in.now += 1;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, NJ);
    /* So does q_state_invalidate. */
    q_state_invalidate(st);
    fx->in.now += 1;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, NJ);
    CHECK(q_state_bytes(st) > 0 && q_state_peak_bytes(st) >= q_state_bytes(st));
    q_state_free(st);
    q_state_free(fresh);
    free(fx);
}

/* What the queue keeps for n waiting jobs (a fresh state, two cycles:
 * the second keeps the cross-cycle tables of both), in bytes. */
static size_t state_bytes_for(struct q_job *jobs, char (*keys)[16], int n) {
    fixture *fx = mk();
    node(fx, "n", 8, 81920);
    fx->in.jobs = jobs;
    for (int i = 0; i < n; i++) {
        snprintf(keys[i], 16, "t/j%05d", i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = jobs[i].uid = keys[i];
        jobs[i].user = jobs[i].group = -1;
        jobs[i].replicas = 1;
        jobs[i].gpus = 16; /* fits nowhere: every job waits */
        jobs[i].priority = i % 50;
        jobs[i].queued = NOW - 1000 - i;
    }
    fx->in.njobs = n;
    int calls = 0;
    q_scorer sc = {&calls, counting_scorer, t_level};
    q_state *st = q_state_create(NULL);
    q_output out;
    size_t bytes = 0;
    if (q_cycle_run(st, &fx->in, &sc, &out, NULL) == AIQ_OK) {
        fx->in.now += 10;
        if (q_cycle_run(st, &fx->in, &sc, &out, NULL) == AIQ_OK) bytes = q_state_bytes(st);
    }
    q_state_free(st);
    free(fx);
    return bytes;
}

/* The queue's per-job arrays grow to what the jobs need and a quarter
 * more, not to the next power of two: 4,100 waiting jobs cost about
 * what 4,000 do (doubling gave them 8,192 slots against 4,096, nearly
 * twice the bytes), and a job costs a bounded number of bytes at both
 * sizes. */
TEST(state_grows_with_jobs_not_powers_of_two) {
    enum { NJ = 4100 };
    static struct q_job jobs[NJ];
    static char keys[NJ][16];
    size_t below = state_bytes_for(jobs, keys, 4000);
    size_t above = state_bytes_for(jobs, keys, NJ);
    CHECK(below > 0 && above > 0);
    CHECK(above > below);
    CHECK((double)above / (double)below < 1.15);
    CHECK(below / 4000 < 2048 && above / NJ < 2048);
}

static int key_strcmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The caller's ident: a job at last cycle's slot with a different ident is
 * a new job even when its gen is the same; ties in score and queued time
 * sort by key as strcmp does, also where keys share their first 16 bytes
 * (the cached prefix) or one is a prefix of another, through both sorts
 * (over 256 jobs and under). */
TEST(incremental_cycle_ident_and_key_ties) {
    enum { NJ = 300 };
    fixture *fx = mk();
    static struct q_job jobs[NJ];
    static char keys[NJ + 1][40];
    const char *sorted[NJ];
    node(fx, "n", 8, 81920);
    fx->in.jobs = jobs;
    for (int i = 0; i < NJ; i++) {
        /* Every third key is one of two long ones sharing 18 bytes; the
         * rest are short, some a prefix of others ("t/7", "t/70"). */
        if (i % 3 == 0)
            snprintf(keys[i], sizeof keys[i], "t/xxxxxxxxxxxxxxxx%03d", NJ - i);
        else
            snprintf(keys[i], sizeof keys[i], "t/%d", i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = jobs[i].uid = keys[i];
        jobs[i].ident = 1000 + (uint64_t)i;
        jobs[i].user = jobs[i].group = -1;
        jobs[i].replicas = 1;
        jobs[i].gpus = 64; /* never fits: every job waits */
        jobs[i].queued = NOW - 100;
    }
    fx->in.njobs = NJ;
    fx->in.policy.rescore_interval_s = 300;
    int calls = 0;
    q_scorer sc = {&calls, counting_scorer, t_level};
    q_state *st = q_state_create(NULL);
    q_output out, ref;
    for (int round = 0; round < 3; round++) {
        if (round == 1) { /* slot 7 now holds another job with the same gen */
            snprintf(keys[NJ], sizeof keys[NJ], "t/xxxxxxxxxxxxxxxx%03d", 999);
            jobs[7].key = jobs[7].uid = keys[NJ];
            jobs[7].ident = 99999;
        }
        if (round == 2) { /* same ident, new gen: rescored, same place */
            jobs[9].gen++;
        }
        fx->in.now += 10;
        CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
        CHECK_INT(out.nscored, round == 0 ? NJ : 1);
        for (int i = 0; i < NJ; i++)
            sorted[i] = jobs[i].key;
        qsort(sorted, NJ, sizeof sorted[0], key_strcmp);
        for (int k = 0; k < NJ; k++)
            CHECK_STR(jobs[out.order[k]].key, sorted[k]);
        q_state *fresh = q_state_create(NULL);
        CHECK_INT(q_cycle_run(fresh, &fx->in, &sc, &ref, NULL), AIQ_OK);
        CHECK(same_order(&fx->in, &out, &ref));
        q_state_free(fresh);
    }
    /* Under 256 jobs (the small sort), the same order by key. */
    fx->in.njobs = 40;
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    for (int i = 0; i < 40; i++)
        sorted[i] = jobs[i].key;
    qsort(sorted, 40, sizeof sorted[0], key_strcmp);
    for (int k = 0; k < 40; k++)
        CHECK_STR(jobs[out.order[k]].key, sorted[k]);
    q_state_free(st);
    free(fx);
}

/* lazy_eta: waiting jobs' estimates appear only when asked, only up to
 * the job asked for in the queue order, and equal the eager ones. */
TEST(lazy_estimates_on_demand_equal_eager) {
    enum { NJ = 12 };
    fixture *fx = mk();
    static struct q_job jobs[NJ];
    static char keys[NJ][16];
    node(fx, "n", 8, 81920);
    fx->in.jobs = jobs;
    for (int i = 0; i < NJ; i++) {
        snprintf(keys[i], sizeof keys[i], "t/j%02d", i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = jobs[i].uid = keys[i];
        jobs[i].user = jobs[i].group = -1;
        jobs[i].replicas = 1;
        jobs[i].gpus = 8;
        jobs[i].priority = 5;
        jobs[i].pred_runtime_s = 3600;
        jobs[i].queued = NOW - 100 * (NJ - i); /* job i is position i (0 admitted) */
    }
    jobs[4].suspended = true;
    fx->in.njobs = NJ;
    q_state *eager = q_state_create(NULL), *lazy = q_state_create(NULL);
    q_output a, b;
    CHECK_INT(q_cycle_run(eager, &fx->in, &scorer, &a, NULL), AIQ_OK);
    fx->in.lazy_eta = true;
    CHECK_INT(q_cycle_run(lazy, &fx->in, &scorer, &b, NULL), AIQ_OK);
    /* Job 11 is the last in the order: jobs 1..3 start an hour apart,
     * 4 is held, 5 starts at +4 h, ... */
    CHECK_DBL(a.res[11].eta - NOW, 10 * 3600.0, 1e-6);
    CHECK_INT(b.res[0].decision, Q_DEC_ADMIT);
    CHECK_DBL(b.res[0].eta, NOW, 1e-6); /* admissions are never lazy */
    for (int i = 1; i < NJ; i++) {
        CHECK_INT(b.res[i].decision, a.res[i].decision);
        CHECK_INT(b.res[i].pos, a.res[i].pos);
        CHECK_DBL(b.res[i].eta, 0, 0);
    }
    double e = -1;
    CHECK_INT(q_eta(lazy, &fx->in, &b, 6, &e), AIQ_OK);
    CHECK_DBL(e - NOW, 5 * 3600.0, 1e-6);
    for (int i = 1; i <= 6; i++) CHECK_DBL(b.res[i].eta, a.res[i].eta, 0);
    for (int i = 7; i < NJ; i++) CHECK_DBL(b.res[i].eta, 0, 0); /* not run yet */
    /* Backwards, the held job and a running-free admitted one: stored. */
    CHECK_INT(q_eta(lazy, &fx->in, &b, 2, &e), AIQ_OK);
    CHECK_DBL(e, a.res[2].eta, 0);
    CHECK_INT(q_eta(lazy, &fx->in, &b, 4, &e), AIQ_OK);
    CHECK_DBL(e, 0, 0);
    CHECK_INT(q_eta(lazy, &fx->in, &b, 0, &e), AIQ_OK);
    CHECK_DBL(e, NOW, 0);
    for (int i = NJ - 1; i >= 0; i--) {
        CHECK_INT(q_eta(lazy, &fx->in, &b, i, &e), AIQ_OK);
        CHECK_DBL(e, a.res[i].eta, 0);
        CHECK_DBL(b.res[i].eta, a.res[i].eta, 0);
    }
    /* Eager output: q_eta just reads it. Misuse is refused. */
    CHECK_INT(q_eta(eager, &fx->in, &a, 11, &e), AIQ_OK);
    CHECK_DBL(e, a.res[11].eta, 0);
    CHECK_INT(q_eta(lazy, &fx->in, &b, NJ, &e), AIQ_EINVAL);
    CHECK_INT(q_eta(lazy, &fx->in, &b, -1, &e), AIQ_EINVAL);
    CHECK_INT(q_eta(lazy, &fx->in, &a, 1, &e), AIQ_EINVAL); /* eager's output */
    CHECK_INT(q_eta(lazy, &fx->in, &b, 1, NULL), AIQ_EINVAL);
    /* After a failed cycle there is no output to estimate. */
    fx->in.policy.nlevels = 0;
    CHECK_INT(q_cycle_run(lazy, &fx->in, &scorer, &b, NULL), AIQ_EINVAL);
    b.res = a.res; /* even a stale pointer is refused */
    CHECK_INT(q_eta(lazy, &fx->in, &b, 1, &e), AIQ_EINVAL);
    q_state_free(eager);
    q_state_free(lazy);
    free(fx);
}

static int failing_scorer(void *ctx, const double *f, double *s) {
    (void)ctx;
    (void)f;
    *s = 1;
    return -1;
}

TEST(scorer_failure_puts_job_last_with_flag) {
    fixture *fx = mk();
    node(fx, "n", 8, 81920);
    job(fx, "t/a", 1, 1, 0);
    q_scorer sc = {NULL, failing_scorer, NULL};
    q_state *st = q_state_create(NULL);
    q_output out;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK(out.res[0].score_failed);
    CHECK_DBL(out.res[0].score, 0, 0);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    q_state_free(st);
    free(fx);
}

TEST(domain_that_appears_later_is_found_without_rescoring) {
    fixture *fx = mk();
    node(fx, "old", 8, 81920);
    struct q_job *j = job(fx, "t/pool", 1, 2, 0);
    j->domain = "pool-new";
    fx->in.policy.rescore_interval_s = 3600;
    q_state *st = q_state_create(NULL);
    q_output out;
    char m[256];
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_REJECT);
    q_message(&fx->in, &out, 0, m, sizeof m);
    CHECK_STR(m, "rejected: no node in domain pool-new");
    /* the pool is added: same job, no gen bump, within the interval */
    node(fx, "new", 8, 81920);
    fx->nodes[1].domain = "pool-new";
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, 0);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[out.res[0].place_off].node, 1);
    q_state_free(st);
    free(fx);
}

/* Rescored every cycle (rescore interval 0, as a wait-time score is):
 * an unchanged job keeps the domain and model ids it resolved, and one
 * whose domain or model no node had finds it once a node has it. */
TEST(rescored_every_cycle_keeps_and_finds_domain_and_model) {
    fixture *fx = mk();
    node(fx, "a0", 8, 81920);
    fx->nodes[0].domain = "pool-a";
    fx->nodes[0].gpu_model = "A100";
    struct q_job *jb = job(fx, "t/b", 1, 8, 0);
    jb->domain = "pool-b";
    jb->gpu_model = "H100";
    struct q_job *ja = job(fx, "t/a", 1, 8, 0);
    ja->domain = "pool-a";
    ja->gpu_model = "A100";
    fx->in.policy.rescore_interval_s = 0;
    q_state *st = q_state_create(NULL);
    q_output out;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_REJECT);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    /* b's pool and model come with a new node, full at first; a's node
     * is full too (of something the queue does not place) */
    for (int g = 0; g < 8; g++)
        fx->nodes[0].gpu_mem_used[g] = 81920;
    node(fx, "b0", 8, 81920);
    fx->nodes[1].domain = "pool-b";
    fx->nodes[1].gpu_model = "H100";
    memcpy(fx->nodes[1].gpu_mem_used, fx->nodes[0].gpu_mem_used, sizeof fx->nodes[1].gpu_mem_used);
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.nscored, 2);
    CHECK_INT(out.res[0].decision, Q_DEC_WAIT);
    CHECK_INT(out.res[1].decision, Q_DEC_WAIT);
    /* b0 frees, the nodes' shapes unchanged: b starts there */
    memset(fx->nodes[1].gpu_mem_used, 0, sizeof fx->nodes[1].gpu_mem_used);
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[out.res[0].place_off].node, 1);
    CHECK_INT(out.res[1].decision, Q_DEC_WAIT);
    /* a's node is free again: it starts there, not in b's pool */
    memset(fx->nodes[0].gpu_mem_used, 0, sizeof fx->nodes[0].gpu_mem_used);
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[out.res[1].place_off].node, 0);
    /* the two edited into each other's pool (new versions: gen moves):
     * looked up again */
    ja->domain = "pool-b";
    ja->gpu_model = "H100";
    jb->domain = "pool-a";
    jb->gpu_model = "A100";
    ja->gen++;
    jb->gen++;
    fx->in.now += 10;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[out.res[0].place_off].node, 0);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[out.res[1].place_off].node, 1);
    q_state_free(st);
    free(fx);
}

TEST(quota_counts_gpu_memory_cpu_and_jobs) {
    fixture *fx = mk();
    node(fx, "n", 8, 81920);
    static struct q_group g;
    memset(&g, 0, sizeof g);
    g.name = "vision";
    unlimited(&g.quota);
    g.quota.jobs = 1;
    g.budget_gpu_hours = -1;
    fx->in.groups = &g;
    fx->in.ngroups = 1;
    job(fx, "t/a", 1, 1, 0)->group = 0;
    job(fx, "t/b", 1, 1, 0)->group = 0;
    q_state *st = q_state_create(NULL);
    q_output out;
    char m[256];
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[1].decision, Q_DEC_WAIT);
    q_message(&fx->in, &out, 1, m, sizeof m);
    CHECK_STR(m, "waiting for 1 job in group vision (quota 1, in use 1)");
    /* GPU memory quota: 2 x 30000 MiB shared fits 60000, a third does not */
    g.quota.jobs = -1;
    g.quota.gpu_memory_mib = 60000;
    fx->in.gen++;
    fx->jobs[0].gpus = fx->jobs[1].gpus = 0;
    fx->jobs[0].gpu_memory_mib = fx->jobs[1].gpu_memory_mib = 30000;
    job(fx, "t/c", 1, 0, 30000)->group = 0;
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[2].decision, Q_DEC_WAIT);
    q_message(&fx->in, &out, 2, m, sizeof m);
    CHECK_STR(m, "waiting for 29.3 GiB of GPU memory in group vision (quota 58.6 GiB, in use 58.6 GiB)");
    /* both shares sit on one GPU (binpack), never beyond its 81920 MiB */
    CHECK_INT(out.places[out.res[0].place_off].gpu_mask, out.places[out.res[1].place_off].gpu_mask);
    q_state_free(st);
    free(fx);
}

TEST(huge_sizes_are_rejected_not_overflowed) {
    fixture *fx = mk();
    node(fx, "n", 8, 81920);
    struct q_job *j = job(fx, "t/huge", 1024, 1, 0);
    j->cpu_milli = 1LL << 62;
    job(fx, "t/ok", 1, 1, 0);
    q_state *st = q_state_create(NULL);
    q_output out;
    char m[256];
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_REJECT);
    q_message(&fx->in, &out, 0, m, sizeof m);
    CHECK_STR(m, "rejected: spec.resources.cpu must be 0..2^40 millicores, got 4611686018427387904");
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    /* a node reporting negative use is an input error, not a free lunch */
    fx->nodes[0].cpu_used = -5;
    aiq_err err;
    aiq_err_clear(&err);
    CHECK_INT(q_cycle_run(st, &fx->in, NULL, &out, &err), AIQ_EINVAL);
    CHECK_STR(err.message, "nodes[0] (n): cpu -5/64000m or memory 0/549755813888 bytes out of range");
    q_state_free(st);
    free(fx);
}

/* A scorer that reads the factors admissions could move: free GPUs and the
 * group's quota share. */
static int share_scorer(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_CLUSTER_FREE_GPUS] * 10 + f[Q_F_QUOTA_GROUP_SHARE] * 1000 +
         f[Q_F_WAIT_HOURS];
    return 0;
}

TEST(job_factors_reproduce_each_score_after_admissions) {
    fixture *fx = mk();
    node(fx, "n", 8, 81920);
    static struct q_group g;
    memset(&g, 0, sizeof g);
    g.name = "vision";
    unlimited(&g.quota);
    g.quota.gpus = 16;
    g.budget_gpu_hours = -1;
    fx->in.groups = &g;
    fx->in.ngroups = 1;
    job(fx, "t/a", 1, 4, 0)->group = 0;
    job(fx, "t/b", 1, 4, 0)->group = 0;
    job(fx, "t/c", 1, 4, 0)->group = 0;
    const q_scorer sc = {NULL, share_scorer, NULL};
    q_state *st = q_state_create(NULL);
    q_output out;
    CHECK_INT(q_cycle_run(st, &fx->in, &sc, &out, NULL), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    CHECK_INT(out.res[2].decision, Q_DEC_WAIT);
    for (int j = 0; j < 3; j++) {
        double f[Q_NFACTORS], s = -1;
        q_job_factors(st, &fx->in, j, f);
        /* the cycle-start view: all 8 GPUs free, nothing of the quota used,
         * although a and b were admitted during the walk */
        CHECK_DBL(f[Q_F_CLUSTER_FREE_GPUS], 8, 0);
        CHECK_DBL(f[Q_F_QUOTA_GROUP_SHARE], 0, 0);
        CHECK_DBL(f[Q_F_JOB_GPUS], 4, 0);
        share_scorer(NULL, f, &s);
        CHECK(s == out.res[j].score); /* bit for bit */
    }
    double f[Q_NFACTORS];
    f[0] = 42;
    q_job_factors(st, &fx->in, 3, f); /* out of range: zeroed */
    CHECK_DBL(f[0], 0, 0);
    q_state_free(st);
    free(fx);
}

/* A 64-GPU node (the cap): a gang is placed on its high GPUs and a
 * running job's placement on GPU 63 is honoured (64-bit masks). */
TEST(queue_64_gpu_node) {
    static struct q_node n;
    memset(&n, 0, sizeof n);
    n.name = "big";
    n.ngpus = Q_MAX_GPUS;
    for (int g = 0; g < n.ngpus; g++)
        n.gpu_mem_total[g] = 81920;
    n.cpu_alloc = 1000000;
    n.mem_alloc = 1LL << 40;
    n.schedulable = true;
    static struct q_job jobs[2];
    memset(jobs, 0, sizeof jobs);
    struct q_place run = {0, 1ull << 63, 0};
    n.gpu_mem_used[63] = 81920;
    jobs[0] = (struct q_job){.key = "ns/run", .uid = "u0", .user = -1, .group = -1,
                             .replicas = 1, .gpus = 1, .state = Q_JOB_RUNNING,
                             .placement = &run};
    jobs[1] = (struct q_job){.key = "ns/wide", .uid = "u1", .user = -1, .group = -1,
                             .replicas = 1, .gpus = 63, .state = Q_JOB_PENDING};
    struct q_input in;
    memset(&in, 0, sizeof in);
    in.nodes = &n;
    in.nnodes = 1;
    in.jobs = jobs;
    in.njobs = 2;
    in.policy.nlevels = 1;
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err err;
    aiq_err_clear(&err);
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &err), AIQ_OK);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    CHECK_INT(out.places[out.res[1].place_off].gpu_mask, (1ull << 63) - 1);
    q_state_free(st);
}

/* q_pos_moved, the band the status economy and the journal share: any
 * move within the first ten, appearing or going, and beyond ten more than
 * 10% of the old position. */
TEST(pos_moved_band) {
    CHECK(q_pos_moved(0, 5));       /* appears */
    CHECK(q_pos_moved(7, 0));       /* goes */
    CHECK(!q_pos_moved(0, 0));
    CHECK(!q_pos_moved(4, 4));
    CHECK(q_pos_moved(1, 2));       /* the first ten: any move */
    CHECK(q_pos_moved(10, 11));
    CHECK(q_pos_moved(11, 10));
    CHECK(!q_pos_moved(12, 13));    /* 1 of 12: under 10% */
    CHECK(!q_pos_moved(100, 110));  /* exactly 10% */
    CHECK(q_pos_moved(100, 111));
    CHECK(q_pos_moved(100, 89));
    CHECK(!q_pos_moved(2000000000, 1999999999));
}
