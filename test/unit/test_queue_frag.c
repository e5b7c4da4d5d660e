/* test_queue_frag.c -- FGD placement (queue/frag.c, place.c): the
 * fragmentation measure on hand-computed nodes, the placement it makes
 * where binpack would choose otherwise, the workload taken from the jobs,
 * and the workload's errors. */
#include "queue/queue.h"
#include "test/unit/th.h"

#include <stdio.h>
#include <string.h>

/* A node of n GPUs of 1000 MiB with used[] MiB in use and 8 cores. */
static struct q_node node(const char *name, int n, const int64_t *used) {
    struct q_node x;
    memset(&x, 0, sizeof x);
    x.name = name;
    x.ngpus = n;
    for (int g = 0; g < n; g++) {
        x.gpu_mem_total[g] = 1000;
        x.gpu_mem_used[g] = used ? used[g] : 0;
    }
    x.cpu_alloc = 8000;
    x.mem_alloc = 64LL << 30;
    x.schedulable = true;
    return x;
}

TEST(frag_share_and_whole_classes) {
    int64_t used[4] = {0, 500, 900, 1000};
    struct q_node n = node("a", 4, used);
    struct q_task_class w[2] = {{0, 400, 0, 0, 1, 0}, {1, 0, 0, 0, 1, 0}};
    /* share 400: only GPU 2 (0.1 free) is too small -> 0.1;
     * one whole GPU: GPUs 1 and 2 are partly used -> 0.5 + 0.1 */
    CHECK_DBL(q_frag_node(&n, w, 1), 0.1, 1e-12);
    CHECK_DBL(q_frag_node(&n, w + 1, 1), 0.6, 1e-12);
    CHECK_DBL(q_frag_node(&n, w, 2), 0.35, 1e-12);
    w[0].weight = 3; /* (3 x 0.1 + 0.6) / 4 */
    CHECK_DBL(q_frag_node(&n, w, 2), 0.225, 1e-12);
}

TEST(frag_class_that_does_not_fit_counts_all_free) {
    int64_t used[4] = {0, 500, 900, 1000};
    struct q_node n = node("a", 4, used);
    struct q_task_class cpu = {0, 400, 9000, 0, 1, 0};   /* more cpu than the node */
    struct q_task_class big = {1, 2000, 0, 0, 1, 0};     /* no GPU that big */
    struct q_task_class two = {2, 0, 0, 0, 1, 0};        /* one GPU wholly free */
    CHECK_DBL(q_frag_node(&n, &cpu, 1), 1.6, 1e-12);
    CHECK_DBL(q_frag_node(&n, &big, 1), 1.6, 1e-12);
    CHECK_DBL(q_frag_node(&n, &two, 1), 1.6, 1e-12);
}

TEST(frag_cpu_only_and_empty) {
    int64_t used[2] = {300, 0};
    struct q_node n = node("a", 2, used);
    struct q_task_class c = {0, 0, 1000, 0, 1, 0};
    CHECK_DBL(q_frag_node(&n, &c, 1), 0, 0);
    c.cpu_milli = 9000; /* does not fit: 0.7 + 1 */
    CHECK_DBL(q_frag_node(&n, &c, 1), 1.7, 1e-12);
    CHECK_DBL(q_frag_node(&n, &c, 0), 0, 0);
    c.weight = 0;
    CHECK_DBL(q_frag_node(&n, &c, 1), 0, 0);
}

/* One cycle with a single pending share of `share` MiB on nodes a (half
 * used) and b (free); returns the node it lands on, or -1. */
static const q_placer *g_placer; /* the next place_one's placer */
static int g_errors;               /* its nplace_score_errors */

static int place_one(aiq_placement pl, const struct q_task_class *w, int nw, int64_t share,
                     aiq_rc *rc_out, aiq_err *e) {
    static const char *const lv[] = {"l"};
    int64_t half[1] = {500};
    struct q_node nodes[2] = {node("a", 1, half), node("b", 1, NULL)};
    nodes[0].util_known = nodes[1].util_known = true;
    nodes[0].gpu_util[0] = 0.9; /* a is busy, b nearly idle */
    nodes[1].gpu_util[0] = 0.1;
    struct q_job j;
    memset(&j, 0, sizeof j);
    j.key = "ns/j";
    j.uid = "u1";
    j.gen = 1;
    j.user = j.group = -1;
    j.replicas = 1;
    j.gpu_memory_mib = share;
    j.cpu_milli = 100;
    struct q_input in;
    memset(&in, 0, sizeof in);
    in.now = 1000;
    in.nodes = nodes;
    in.nnodes = 2;
    in.jobs = &j;
    in.njobs = 1;
    in.policy.nlevels = 1;
    in.policy.level_names = lv;
    in.policy.placement = pl;
    in.gen = 1;
    in.workload = w;
    in.nworkload = nw;
    in.placer = g_placer;
    q_state *st = q_state_create(NULL);
    q_output out;
    int node_ix = -1;
    *rc_out = q_cycle_run(st, &in, NULL, &out, e);
    if (*rc_out == AIQ_OK && out.res[0].decision == Q_DEC_ADMIT)
        node_ix = out.places[out.res[0].place_off].node;
    g_errors = *rc_out == AIQ_OK ? out.nplace_score_errors : -1;
    q_state_free(st);
    return node_ix;
}

TEST(fgd_keeps_the_half_gpu_for_the_half_tasks) {
    aiq_err e;
    aiq_rc rc;
    aiq_err_clear(&e);
    /* Workload of 500 MiB tasks. A 200 MiB share on a (500 free) would
     * leave 300 nobody of the workload can use (delta 0.3); on b it
     * leaves 800 (delta 0). Binpack takes the fuller GPU, a. */
    struct q_task_class w = {0, 500, 0, 0, 1, 0};
    CHECK_INT(place_one(AIQ_PLACE_BINPACK, &w, 1, 200, &rc, &e), 0);
    CHECK_INT(place_one(AIQ_PLACE_FGD, &w, 1, 200, &rc, &e), 1);
    CHECK_INT(rc, AIQ_OK);
    /* A 500 MiB share fills a exactly: delta -0 there vs 0.5 on b */
    CHECK_INT(place_one(AIQ_PLACE_FGD, &w, 1, 500, &rc, &e), 0);
    /* No workload given: the job's own shape (200 MiB) is the workload;
     * both deltas are 0 and the tie goes to the fuller GPU. */
    CHECK_INT(place_one(AIQ_PLACE_FGD, NULL, 0, 200, &rc, &e), 0);
}

TEST(fgd_workload_errors_name_the_field) {
    aiq_err e;
    aiq_rc rc;
    aiq_err_clear(&e);
    struct q_task_class w = {0, 500, 0, 0, -1, 0};
    CHECK_INT(place_one(AIQ_PLACE_FGD, &w, 1, 200, &rc, &e), -1);
    CHECK_INT(rc, AIQ_EINVAL);
    CHECK(strstr(e.message, "workload[0]") != NULL);
    CHECK(strstr(e.message, "weight -1") != NULL);
    aiq_err_clear(&e);
    w.weight = 1;
    CHECK_INT(place_one(AIQ_PLACE_FGD, &w, Q_MAX_CLASSES + 1, 200, &rc, &e), -1);
    CHECK_INT(rc, AIQ_EINVAL);
    CHECK(strstr(e.message, "workload") != NULL);
    /* binpack never reads the workload */
    aiq_err_clear(&e);
    CHECK_INT(place_one(AIQ_PLACE_BINPACK, &w, Q_MAX_CLASSES + 1, 200, &rc, &e), 0);
}

/* Placers over the placement factors, as a compiled placementScore would
 * be (policy/ is not linked into the queue's tests on purpose). */
static int by_least_free_after(void *ctx, const double *pf, double *s) {
    (void)ctx;
    *s = -pf[Q_PF_GPU_MEM_FREE_AFTER];
    return 0;
}
static int by_idle(void *ctx, const double *pf, double *s) {
    (void)ctx;
    *s = pf[Q_PF_UTIL_KNOWN] ? -pf[Q_PF_GPU_UTIL] : 0;
    return 0;
}
static int by_frag(void *ctx, const double *pf, double *s) {
    (void)ctx;
    *s = -pf[Q_PF_FRAG_DELTA];
    return 0;
}
static int failing(void *ctx, const double *pf, double *s) {
    (void)ctx;
    (void)pf;
    *s = 0;
    return -1;
}

TEST(placer_ranks_the_candidates) {
    aiq_err e;
    aiq_rc rc;
    aiq_err_clear(&e);
    struct q_task_class w = {0, 500, 0, 0, 1, 0};
    q_placer p = {NULL, by_least_free_after};
    g_placer = &p; /* a: 300 MiB left, b: 800 */
    CHECK_INT(place_one(AIQ_PLACE_SPREAD, &w, 1, 200, &rc, &e), 0);
    CHECK_INT(g_errors, 0);
    p.score = by_idle; /* a busy 0.9, b 0.1 */
    CHECK_INT(place_one(AIQ_PLACE_BINPACK, &w, 1, 200, &rc, &e), 1);
    p.score = by_frag; /* as fgd: b */
    CHECK_INT(place_one(AIQ_PLACE_BINPACK, &w, 1, 200, &rc, &e), 1);
    p.score = failing; /* every candidate fails: still placed, counted */
    CHECK_INT(place_one(AIQ_PLACE_BINPACK, &w, 1, 200, &rc, &e), 0);
    CHECK_INT(g_errors, 2);
    g_placer = NULL;
}

/* With no workload given, the jobs' shapes weigh as the GPUs they ask
 * for, not as task counts. Node a: 8 GPUs wholly free, 64 cores; node b:
 * 2 GPUs free, 8 cores. One 1-GPU, 4-core job j goes first; behind it
 * twenty 1-GPU, 6-core jobs and one 8-GPU, 32-core job. On a, j shuts
 * the 8-GPU class out of 7 GPUs; on b it leaves 1 GPU and 4 cores, which
 * the twenty 6-core tasks cannot use. Counted by tasks (8-GPU class 1
 * of 22) b costs more (20 - 1 against 7); counted by GPUs (8 of 29) a
 * does (7 x 8 = 56 against 20 - 8 = 12), so FGD fills b, as binpack
 * would, and keeps the whole node for the 8-GPU job. */
TEST(fgd_workload_from_jobs_weighs_gpus) {
    static const char *const lv[] = {"l"};
    static char keys[22][16], uids[22][16];
    int64_t six[8] = {1000, 1000, 1000, 1000, 1000, 1000, 0, 0};
    struct q_node nodes[2] = {node("a", 8, NULL), node("b", 8, six)};
    nodes[0].cpu_alloc = 64000;
    nodes[1].cpu_alloc = 64000;
    nodes[1].cpu_used = 56000;
    struct q_job jobs[22];
    memset(jobs, 0, sizeof jobs);
    for (int k = 0; k < 22; k++) {
        snprintf(keys[k], sizeof keys[k], "ns/j%02d", k);
        snprintf(uids[k], sizeof uids[k], "u%02d", k);
        jobs[k].key = keys[k];
        jobs[k].uid = uids[k];
        jobs[k].gen = 1;
        jobs[k].user = jobs[k].group = -1;
        jobs[k].replicas = 1;
        jobs[k].gpus = k == 21 ? 8 : 1;
        jobs[k].cpu_milli = k == 0 ? 4000 : k == 21 ? 32000 : 6000;
        jobs[k].created = jobs[k].queued = 100 + k; /* j00 first */
    }
    struct q_input in;
    memset(&in, 0, sizeof in);
    in.now = 1000;
    in.nodes = nodes;
    in.nnodes = 2;
    in.jobs = jobs;
    in.njobs = 22;
    in.policy.nlevels = 1;
    in.policy.level_names = lv;
    in.policy.placement = AIQ_PLACE_FGD;
    in.gen = 1;
    q_state *st = q_state_create(NULL);
    if (!CHECK(st != NULL))
        return;
    q_output out;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
    if (out.res[0].decision == Q_DEC_ADMIT)
        CHECK_INT(out.places[out.res[0].place_off].node, 1);
    q_state_free(st);
}
