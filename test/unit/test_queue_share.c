/* test_queue_share.c -- GPU shares as a fraction of the GPU they land on
 * (q_job.gpu_milli): the MiB a fraction takes on GPUs of different sizes,
 * two halves on one GPU, 0.3 + 0.8 on two, under binpack, spread, fgd and
 * a placement score; the FGD measure of a fractional class; the invalid
 * combinations and their message. */
#include "queue/queue.h"
#include "test/unit/th.h"

#include <string.h>

/* A node of n GPUs of mib MiB each, 32 cores, all free. */
static struct q_node node(const char *name, int n, int64_t mib) {
    struct q_node x;
    memset(&x, 0, sizeof x);
    x.name = name;
    x.ngpus = n;
    for (int g = 0; g < n; g++)
        x.gpu_mem_total[g] = mib;
    x.cpu_alloc = 32000;
    x.mem_alloc = 256LL << 30;
    x.schedulable = true;
    return x;
}

static struct q_job share_job(const char *key, int milli) {
    struct q_job j;
    memset(&j, 0, sizeof j);
    j.key = key;
    j.uid = key;
    j.gen = 1;
    j.user = j.group = -1;
    j.replicas = 1;
    j.gpu_milli = milli;
    j.cpu_milli = 1000;
    j.created = j.queued = 100;
    return j;
}

static void input(struct q_input *in, struct q_node *nodes, int nn, struct q_job *jobs, int nj,
                  aiq_placement pl) {
    static const char *const lv[] = {"l"};
    memset(in, 0, sizeof *in);
    in->now = 1000;
    in->nodes = nodes;
    in->nnodes = nn;
    in->jobs = jobs;
    in->njobs = nj;
    in->policy.nlevels = 1;
    in->policy.level_names = lv;
    in->policy.placement = pl;
    in->gen = 1;
}

static const aiq_placement all_pl[] = {AIQ_PLACE_BINPACK, AIQ_PLACE_SPREAD, AIQ_PLACE_FGD};

TEST(half_gpu_takes_half_of_each_size) {
    /* One node of 32 GiB GPUs, one of 80 GiB; a half on each, whatever
     * the placement, takes half of that GPU. */
    for (int p = 0; p < 3; p++) {
        struct q_node nodes[2] = {node("v100", 1, 32768), node("a100", 1, 81920)};
        struct q_job jobs[2] = {share_job("ns/a", 500), share_job("ns/b", 500)};
        struct q_input in;
        input(&in, nodes, 2, jobs, 2, all_pl[p]);
        q_state *st = q_state_create(NULL);
        q_output out;
        aiq_err e;
        aiq_err_clear(&e);
        /* A third half fits too (two halves fill the 32 GiB GPU, or the
         * 80 GiB one): only one of the jobs may use each GPU here. */
        CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
        CHECK_INT(out.res[0].decision, Q_DEC_ADMIT);
        CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
        for (int k = 0; k < 2; k++) {
            const struct q_place *pl = &out.places[out.res[k].place_off];
            int64_t tot = nodes[pl->node].gpu_mem_total[0];
            CHECK_INT(pl->gpu_mask, 1);
            CHECK_INT(pl->gpu_mem_mib, tot / 2);
        }
        q_state_free(st);
    }
}

TEST(fraction_rounds_down_to_whole_mib) {
    /* 0.333 of 1001 MiB is 333.333 -> 333; 0.001 of 500 MiB is 0.5 -> 1
     * (a share never takes nothing); half of 2^62 MiB is 2^61. */
    static const int64_t tot[] = {1001, 500, 1LL << 62};
    static const int milli[] = {333, 1, 500};
    static const int64_t want[] = {333, 1, 1LL << 61}; /* no overflow */
    for (int k = 0; k < 3; k++) {
        struct q_node nodes[1] = {node("a", 1, tot[k])};
        struct q_job jobs[1] = {share_job("ns/a", milli[k])};
        struct q_input in;
        input(&in, nodes, 1, jobs, 1, AIQ_PLACE_BINPACK);
        q_state *st = q_state_create(NULL);
        q_output out;
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
        CHECK_INT(out.places[out.res[0].place_off].gpu_mem_mib, want[k]);
        q_state_free(st);
    }
}

/* Places shares a (milli) and b on one node of ngpus GPUs of 32 GiB;
 * returns how many GPUs they use (0 when one waits). */
static int gpus_used(aiq_placement pl, int ngpus, int a, int b) {
    struct q_node nodes[1] = {node("n", ngpus, 32768)};
    struct q_job jobs[2] = {share_job("ns/a", a), share_job("ns/b", b)};
    jobs[1].queued = 200; /* a first */
    struct q_input in;
    input(&in, nodes, 1, jobs, 2, pl);
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err e;
    aiq_err_clear(&e);
    int used = 0;
    if (q_cycle_run(st, &in, NULL, &out, &e) == AIQ_OK && out.res[0].decision == Q_DEC_ADMIT &&
        out.res[1].decision == Q_DEC_ADMIT) {
        uint64_t m = out.places[out.res[0].place_off].gpu_mask |
                     out.places[out.res[1].place_off].gpu_mask;
        used = __builtin_popcountll(m);
    }
    q_state_free(st);
    return used;
}

TEST(two_halves_share_one_gpu_and_03_08_do_not) {
    /* One GPU: two halves fit on it; 0.3 + 0.8 do not (the second waits). */
    for (int p = 0; p < 3; p++) {
        CHECK_INT(gpus_used(all_pl[p], 1, 500, 500), 1);
        CHECK_INT(gpus_used(all_pl[p], 1, 300, 800), 0);
        /* Two GPUs: 0.3 and 0.8 take one each. */
        CHECK_INT(gpus_used(all_pl[p], 2, 300, 800), 2);
    }
    /* Fractions that add up to one GPU fit on it although 32768 MiB is no
     * multiple of 1000: 0.1 + 0.9 (3276 + 29491 MiB). */
    for (int p = 0; p < 3; p++)
        CHECK_INT(gpus_used(all_pl[p], 1, 100, 900), 1);
    /* Binpack puts the second half next to the first; spread does not. */
    CHECK_INT(gpus_used(AIQ_PLACE_BINPACK, 2, 500, 500), 1);
    CHECK_INT(gpus_used(AIQ_PLACE_SPREAD, 2, 500, 500), 2);
}

/* A placement score reading gpu_mem_free_after: the candidate that
 * leaves the least free on its GPU wins (a best fit written as a score). */
static int score_cb(void *ctx, const double *pf, double *s) {
    (void)ctx;
    *s = -pf[Q_PF_GPU_MEM_FREE_AFTER];
    return 0;
}

TEST(placement_score_sees_the_fraction_in_mib) {
    /* GPU 0 of 32 GiB has 24 GiB used; a half (16 GiB) does not fit it;
     * a quarter (8 GiB) does, and the score prefers it (0 left there). */
    q_placer placer = {NULL, score_cb};
    for (int milli = 250; milli <= 500; milli += 250) {
        struct q_node nodes[1] = {node("n", 2, 32768)};
        nodes[0].gpu_mem_used[0] = 24576;
        struct q_job jobs[1] = {share_job("ns/a", milli)};
        struct q_input in;
        input(&in, nodes, 1, jobs, 1, AIQ_PLACE_BINPACK);
        in.placer = &placer;
        q_state *st = q_state_create(NULL);
        q_output out;
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
        const struct q_place *pl = &out.places[out.res[0].place_off];
        CHECK_INT(pl->gpu_mask, milli == 250 ? 1 : 2);
        CHECK_INT(pl->gpu_mem_mib, milli == 250 ? 8192 : 16384);
        q_state_free(st);
    }
}

TEST(frag_of_a_fractional_class) {
    /* 2 GPUs: 32 GiB with 20 GiB used (12 free = 0.375), 80 GiB with 50
     * GiB used (30 free = 0.375 of it). A 0.4 class fits neither GPU:
     * both free parts are fragments (0.375 + 0.375). A 0.3 class fits
     * both: no fragment. */
    struct q_node n = node("n", 2, 32768);
    n.gpu_mem_total[1] = 81920;
    n.gpu_mem_used[0] = 20480;
    n.gpu_mem_used[1] = 51200;
    struct q_task_class c = {0, 0, 1000, 0, 1, 400};
    CHECK_DBL(q_frag_node(&n, &c, 1), 0.75, 1e-12);
    c.gpu_milli = 300;
    CHECK_DBL(q_frag_node(&n, &c, 1), 0, 1e-12);
}

TEST(running_fraction_is_released_by_its_mib) {
    /* A running half on GPU 0 (16 GiB held, passed in the node's used
     * memory and its placement); a pending 0.6 does not fit next to it,
     * a pending half does. */
    struct q_node nodes[1] = {node("n", 1, 32768)};
    nodes[0].gpu_mem_used[0] = 16384;
    nodes[0].cpu_used = 1000;
    struct q_place run = {0, 1, 16384};
    struct q_job jobs[2] = {share_job("ns/run", 500), share_job("ns/p", 600)};
    jobs[0].state = Q_JOB_RUNNING;
    jobs[0].placement = &run;
    struct q_input in;
    input(&in, nodes, 1, jobs, 2, AIQ_PLACE_BINPACK);
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
    CHECK_INT(out.res[1].decision, Q_DEC_WAIT);
    jobs[1].gpu_milli = 500;
    jobs[1].gen = 2;
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
    CHECK_INT(out.res[1].decision, Q_DEC_ADMIT);
    q_state_free(st);
}

TEST(invalid_fractions_are_rejected_with_the_field) {
    struct q_node nodes[1] = {node("n", 1, 32768)};
    struct q_job jobs[3] = {share_job("ns/big", 1000), share_job("ns/whole", 500),
                            share_job("ns/mib", 500)};
    jobs[1].gpus = 1;
    jobs[2].gpu_memory_mib = 1024;
    struct q_input in;
    input(&in, nodes, 1, jobs, 3, AIQ_PLACE_BINPACK);
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
    char buf[256];
    for (int k = 0; k < 3; k++) {
        CHECK_INT(out.res[k].decision, Q_DEC_REJECT);
        CHECK_INT(out.res[k].reason, Q_R_INVALID);
        q_message(&in, &out, k, buf, sizeof buf);
        CHECK(strstr(buf, "gpu_milli must be 1..999") != NULL);
    }
    q_message(&in, &out, 0, buf, sizeof buf);
    CHECK(strstr(buf, "got 1000") != NULL);
    q_state_free(st);
    /* A running job with a bad fraction is an input error naming it. */
    struct q_place run = {0, 1, 16384};
    jobs[0].state = Q_JOB_RUNNING;
    jobs[0].placement = &run;
    st = q_state_create(NULL);
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "gpu_milli 1000") != NULL);
    q_state_free(st);
}

TEST(waiting_message_names_the_fraction) {
    struct q_node nodes[1] = {node("n", 1, 32768)};
    nodes[0].gpu_mem_used[0] = 32768;
    struct q_job jobs[1] = {share_job("ns/a", 250)};
    struct q_input in;
    input(&in, nodes, 1, jobs, 1, AIQ_PLACE_BINPACK);
    q_state *st = q_state_create(NULL);
    q_output out;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(q_cycle_run(st, &in, NULL, &out, &e), AIQ_OK);
    CHECK_INT(out.res[0].decision, Q_DEC_WAIT);
    char buf[256];
    q_message(&in, &out, 0, buf, sizeof buf);
    CHECK(strstr(buf, "0.250 of one shared GPU") != NULL);
    q_state_free(st);
}


