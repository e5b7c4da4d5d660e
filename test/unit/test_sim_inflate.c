/* test_sim_inflate.c -- the inflation protocol (simulator/sim_inflate.c)
 * on hand-computed cases: binpack and spread differ where they should,
 * a task that fits nowhere is dropped, nothing departs, shares count as
 * their fraction, report points, the placements CSV, the seeded sample,
 * and the errors. */
#include "simulator/sim.h"
#include "simulator/sim_int.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <string.h>

/* A trace of single-replica tasks of gpus[k] whole GPUs (0: a share of
 * mem[k] MiB) on 2 nodes x 4 A100-80GB. */
static struct sim_trace *mk(const int *gpus, const int64_t *mem, int n) {
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    if (!CHECK(tr != NULL))
        return NULL;
    CHECK_INT(sim_nodes_from_spec(tr, "2x4xA100-80GB", &e), AIQ_OK);
    for (int k = 0; k < n; k++) {
        struct sim_job j;
        memset(&j, 0, sizeof j);
        j.replicas = 1;
        j.gpus = gpus[k];
        j.gpu_mem_mib = mem ? mem[k] : 0;
        j.cpu_milli = 1000;
        j.duration_s = 60;
        j.submit = k;
        CHECK_INT(sim_trace_add_job(tr, &j, &e), AIQ_OK);
    }
    return tr;
}

static void cfg_for(struct sim_inflate_config *c, const struct sim_trace *tr, aiq_placement pl,
                    double from, double to, double step) {
    sim_inflate_config_init(c);
    c->trace = tr;
    c->nodes = tr->nodes;
    c->nnodes = tr->nnodes;
    c->placement = pl;
    c->from = from;
    c->to = to;
    c->step = step;
}

/* 1, 1, then 4 GPUs: binpack keeps a node whole for the 4, spread puts
 * the two small tasks on both nodes and must drop the 4. */
TEST(binpack_and_spread_by_hand) {
    static const int g[] = {1, 1, 4};
    struct sim_trace *tr = mk(g, NULL, 3);
    struct sim_inflate_config c;
    struct sim_inflate_result r;
    aiq_err e;
    aiq_err_clear(&e);
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.25, 0.75, 0.25);
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_OK);
    CHECK_INT(r.nsteps, 3);
    CHECK_INT(r.npoints, 3);
    CHECK_DBL(r.total_gpus, 8, 1e-9);
    CHECK_DBL(r.pt[0].arrived, 0.25, 1e-9);
    CHECK_DBL(r.pt[0].unalloc, 0.75, 1e-9);
    CHECK_INT(r.pt[0].tasks, 2);
    /* the 4-GPU task passes 0.5 and 0.75 at once */
    CHECK_DBL(r.pt[1].target, 0.5, 1e-9);
    CHECK_DBL(r.pt[1].arrived, 0.75, 1e-9);
    CHECK_DBL(r.pt[2].unalloc, 0.25, 1e-9);
    CHECK_INT(r.placed, 3);
    CHECK_INT(r.dropped, 0);

    cfg_for(&c, tr, AIQ_PLACE_SPREAD, 0.25, 0.75, 0.25);
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_OK);
    CHECK_INT(r.npoints, 3);
    CHECK_DBL(r.pt[2].arrived, 0.75, 1e-9);
    CHECK_DBL(r.pt[2].unalloc, 0.75, 1e-9);
    CHECK_INT(r.pt[2].placed, 2);
    CHECK_INT(r.pt[2].dropped, 1);
    sim_trace_free(tr);
}

/* Nothing departs: a cluster filled by 4+4 drops every later task, and a
 * trace that ends early reaches fewer points than asked for. */
TEST(nothing_departs_and_the_trace_can_end_early) {
    static const int g[] = {4, 4, 1, 2};
    struct sim_trace *tr = mk(g, NULL, 4);
    struct sim_inflate_config c;
    struct sim_inflate_result r;
    aiq_err e;
    aiq_err_clear(&e);
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.5, 1.5, 0.5);
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_OK);
    CHECK_INT(r.nsteps, 3);
    CHECK_INT(r.npoints, 2); /* 11 of 8 GPUs arrived: 1.375 < 1.5 */
    CHECK_DBL(r.pt[1].unalloc, 0, 1e-9);
    CHECK_INT(r.tasks, 4);
    CHECK_INT(r.placed, 2);
    CHECK_INT(r.dropped, 2);
    CHECK_DBL(r.arrived, 11.0 / 8, 1e-9);
    sim_trace_free(tr);
}

/* Shares count as their fraction: two 40 GiB shares on 80 GiB GPUs are
 * one GPU under binpack (the same GPU) and under spread (two halves). */
TEST(shares_count_as_their_fraction) {
    static const int g[] = {0, 0, 0, 0};
    static const int64_t m[] = {40960, 40960, 40960, 40960};
    struct sim_trace *tr = mk(g, m, 4);
    struct sim_inflate_config c;
    struct sim_inflate_result r;
    aiq_err e;
    aiq_err_clear(&e);
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.25, 0.25, 0.1);
    FILE *f = tmpfile();
    if (!CHECK(f != NULL))
        return;
    c.placements = f;
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_OK);
    CHECK_INT(r.npoints, 1);
    CHECK_DBL(r.pt[0].arrived, 0.25, 1e-9);
    CHECK_DBL(r.pt[0].unalloc, 0.75, 1e-9);
    rewind(f);
    char line[256];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        rows++;
        /* binpack puts the second share on the first one's GPU */
        if (rows == 2)
            CHECK_STR(line, "binpack,0,2,job-2,0,placed,node-00000,0,0.5000,40960\n");
    }
    CHECK_INT(rows, 4);
    fclose(f);
    sim_trace_free(tr);
}

/* Fractions (gpu_milli) on GPUs of two sizes: four halves fill one 32 GiB
 * and one 80 GiB GPU exactly, each half taking half of its GPU; the
 * demand is 0.5 a task, so 100% arrives with the fourth. */
TEST(fractions_take_half_of_either_gpu) {
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    if (!CHECK(tr != NULL))
        return;
    CHECK_INT(sim_nodes_from_spec(tr, "1x1xV100M32,1x1xA100-80GB", &e), AIQ_OK);
    for (int k = 0; k < 4; k++) {
        struct sim_job j;
        memset(&j, 0, sizeof j);
        j.replicas = 1;
        j.gpu_milli = 500;
        j.cpu_milli = 1000;
        j.duration_s = 60;
        j.submit = k;
        CHECK_INT(sim_trace_add_job(tr, &j, &e), AIQ_OK);
    }
    struct sim_inflate_config c;
    struct sim_inflate_result r;
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.5, 1.0, 0.5);
    FILE *f = tmpfile();
    if (!CHECK(f != NULL))
        return;
    c.placements = f;
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_OK);
    CHECK_INT(r.npoints, 2);
    CHECK_DBL(r.pt[0].arrived, 0.5, 1e-9);
    CHECK_DBL(r.pt[1].arrived, 1.0, 1e-9);
    CHECK_DBL(r.pt[1].unalloc, 0, 1e-9);
    CHECK_INT(r.placed, 4);
    CHECK_INT(r.dropped, 0);
    rewind(f);
    char line[256];
    int n32 = 0, n80 = 0;
    while (fgets(line, sizeof line, f)) {
        CHECK(strstr(line, ",0.5000,") != NULL);
        n32 += strstr(line, ",16384\n") != NULL;
        n80 += strstr(line, ",40960\n") != NULL;
    }
    CHECK_INT(n32, 2);
    CHECK_INT(n80, 2);
    fclose(f);
    sim_trace_free(tr);
}

/* The workload keeps the heaviest shapes, not the first seen, weighing
 * each by the GPUs its tasks ask for: 70 one-GPU shapes twice each (cpu
 * 1..70 cores: weight 2), then a 2-GPU shape ten times (20), a share of
 * 0.25 (a fraction is its own class) twelve times (3) and a CPU-only
 * shape five times (0: it asks for no GPU, so it is the first cut). */
TEST(workload_keeps_the_heaviest_shapes) {
    struct sim_trace *tr = sim_trace_create();
    aiq_err e;
    aiq_err_clear(&e);
    if (!CHECK(tr != NULL))
        return;
    for (int k = 0; k < 140 + 10 + 12 + 5; k++) {
        struct sim_job j;
        memset(&j, 0, sizeof j);
        j.replicas = 1;
        j.gpus = k < 140 ? 1 : k < 150 ? 2 : 0;
        j.gpu_milli = k >= 150 && k < 162 ? 250 : 0;
        j.cpu_milli = k < 140 ? 1000 * (1 + k / 2) : 4000;
        j.duration_s = 60;
        CHECK_INT(sim_trace_add_job(tr, &j, &e), AIQ_OK);
    }
    struct q_task_class wl[Q_MAX_CLASSES];
    int n = -1;
    CHECK_INT(sim__workload(tr, 81920, wl, &n, &e), AIQ_OK);
    CHECK_INT(n, Q_MAX_CLASSES);
    CHECK_INT(wl[0].gpus, 2);
    CHECK_DBL(wl[0].weight, 20, 0);
    CHECK_INT(wl[1].gpu_milli, 250);
    CHECK_DBL(wl[1].weight, 3, 1e-12);
    /* then the 62 lightest-cpu of the 70 twice-seen shapes, by shape */
    CHECK_DBL(wl[2].weight, 2, 0);
    CHECK_INT(wl[2].cpu_milli, 1000);
    CHECK_INT(wl[63].cpu_milli, 62000);
    for (int k = 0; k < n; k++)
        CHECK(wl[k].gpus > 0 || wl[k].gpu_milli > 0);
    sim_trace_free(tr);
}

/* The sample: the same seed gives the same run; tasks are drawn with
 * replacement past the trace's end until the last point. */
TEST(sample_is_seeded_and_runs_past_the_trace) {
    static const int g[] = {1, 2, 3};
    struct sim_trace *tr = mk(g, NULL, 3);
    struct sim_inflate_config c;
    struct sim_inflate_result a, b;
    aiq_err e;
    aiq_err_clear(&e);
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.5, 1.3, 0.1);
    c.sample = true;
    c.seed = 7;
    CHECK_INT(sim_inflate(&c, &a, &e), AIQ_OK);
    CHECK_INT(sim_inflate(&c, &b, &e), AIQ_OK);
    CHECK_INT(a.npoints, 9);
    CHECK(a.tasks > 3);
    CHECK(a.arrived >= 1.3);
    CHECK_INT(a.tasks, b.tasks);
    CHECK_INT(a.dropped, b.dropped);
    for (int k = 0; k < a.npoints; k++)
        CHECK_DBL(a.pt[k].unalloc, b.pt[k].unalloc, 0);
    /* at 130% arrived on 8 GPUs something must have been dropped */
    CHECK(a.dropped > 0);
    sim_trace_free(tr);
}

TEST(inflate_errors_name_the_problem) {
    static const int g[] = {0};
    struct sim_trace *tr = mk(g, NULL, 1); /* CPU only */
    struct sim_inflate_config c;
    struct sim_inflate_result r;
    aiq_err e;
    aiq_err_clear(&e);
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.5, 1.3, 0.1);
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "asks for a GPU") != NULL);
    aiq_err_clear(&e);
    cfg_for(&c, tr, AIQ_PLACE_BINPACK, 0.5, 100, 0.01);
    CHECK_INT(sim_inflate(&c, &r, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "steps from 0.5 to 100") != NULL);
    sim_trace_free(tr);
}
