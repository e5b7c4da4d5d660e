/* bench_sim.c -- the simulator's speed goal: a simulated month of a
 * 1,000-GPU cluster (125 nodes x 8 A100-80GB) runs in seconds.
 *
 * Workload: the seeded synthetic generator, 37,000 jobs at one every 70 s
 * on average (30 days of arrivals, ~70% GPU utilisation under fifo: busy
 * but not permanently saturated), with runtime prediction on and a tick
 * every 600 s, as `aiq-sim run` does. Each preset runs the whole month;
 * fifo is the baseline the others are compared to (same trace, same run
 * of this program). Reported: cycles, wall and CPU seconds (the machine
 * is shared, so CPU time is the steadier number), jobs simulated per CPU
 * second, and the ratio of each policy's CPU time to fifo's.
 *
 * Ends with sim_month_1000gpu_s=<wall seconds of the fifo month> and
 * sim_month_1000gpu_cpu_s=<its CPU seconds>. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "operator/manifest.h"
#include "simulator/sim.h"

static double now_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static oppolicy *load(const char *name) {
    char path[256];
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(path, sizeof path, "examples/policies/%s.yaml", name);
    if (aiq_manifest_parse_file(path, &m, &n, &e) != AIQ_OK || n < 1 || m[0].rc != AIQ_OK) {
        fprintf(stderr, "bench_sim: %s: %s\n", path, e.message);
        aiq_manifests_free(m, n);
        return NULL;
    }
    oppolicy *p = oppolicy_compile(&m[0].u.policy, &e);
    aiq_manifests_free(m, n);
    return p;
}

int main(void) {
    static const char *const pols[] = {"fifo", "srjf", "fairshare"};
    enum { NP = sizeof pols / sizeof pols[0] };
    struct sim_trace *tr = sim_trace_create();
    struct sim_gen_opts g = {.seed = 1, .njobs = 37000, .ngroups = 4, .users_per_group = 5, .mean_interarrival_s = 70};
    aiq_err e;
    aiq_err_clear(&e);
    if (!tr || sim_generate(tr, &g, &e) != AIQ_OK ||
        sim_nodes_from_spec(tr, "125x8xA100-80GB", &e) != AIQ_OK) {
        fprintf(stderr, "bench_sim: %s\n", e.message);
        sim_trace_free(tr);
        return 1;
    }
    double days = tr->jobs[tr->njobs - 1].submit / 86400.0;
    printf("trace: %d jobs over %.1f days, %d nodes, 1000 GPUs\n", tr->njobs, days, tr->nnodes);
    printf("%-10s %8s %8s %8s %8s %12s %10s %8s\n", "policy", "cycles", "wall_s", "cpu_s",
           "util", "jobs/cpu_s", "cpu/fifo", "wait_h");
    double base_cpu = 0, base_wall = 0;
    int rc = 0;
    for (int k = 0; k < NP; k++) {
        oppolicy *p = load(pols[k]);
        if (!p) {
            rc = 1;
            break;
        }
        struct sim_config cfg;
        struct sim_result res;
        struct sim_metrics m;
        sim_config_init(&cfg);
        cfg.trace = tr;
        cfg.nodes = tr->nodes;
        cfg.nnodes = tr->nnodes;
        cfg.policy = p;
        double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        aiq_rc r = sim_run(&cfg, &res, &e);
        double wall = now_s(CLOCK_MONOTONIC) - w0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (r != AIQ_OK || sim_metrics_compute(tr, &res, &m, &e) != AIQ_OK) {
            fprintf(stderr, "bench_sim: %s: %s\n", pols[k], e.message);
            sim_result_deinit(&res);
            oppolicy_free(p);
            rc = 1;
            break;
        }
        if (k == 0) {
            base_cpu = cpu;
            base_wall = wall;
        }
        printf("%-10s %8ld %8.2f %8.2f %8.3f %12.0f %10.2f %8.2f\n", pols[k], res.ncycles, wall,
               cpu, m.util_avg, tr->njobs / cpu, cpu / base_cpu, m.wait_avg);
        sim_result_deinit(&res);
        oppolicy_free(p);
    }
    sim_trace_free(tr);
    if (rc == 0) {
        printf("sim_month_1000gpu_s=%.2f\n", base_wall);
        printf("sim_month_1000gpu_cpu_s=%.2f\n", base_cpu);
    }
    return rc;
}
