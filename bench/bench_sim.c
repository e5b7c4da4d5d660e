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
 * sim_month_1000gpu_cpu_s=<its CPU seconds>.
 *
 * Then a simulator result (not a speed): tiresias-las with preemption
 * against fifo on synthetic Tiresias-like traces (issue 16). For 1 node of
 * 8 GPUs and 2 nodes of 8, ten seeds each of `aiq-sim gen --tiresias
 * --jobs 60 --checkpoint-frac 1 --checkpoint-s 600`, --max-gpus 8 and
 * --interarrival 600 on 1x8, --max-gpus 16 and --interarrival 300 on 2x8,
 * A100-80GB nodes, 30 s preemption grace, prediction on, 600 s tick; the
 * average JCT over every job of the ten traces under each policy, and
 * their ratio (below 1: LAS is better). The same LAS without preemption
 * is printed for comparison. Keys: sim_las_preempt_vs_fifo_jct_1x8 and
 * sim_las_preempt_vs_fifo_jct_2x8. */
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

/* Mean JCT (hours) over the done jobs of one run; adds to *sum and *n. */
static int run_jct(const struct sim_trace *tr, oppolicy *p, double *sum, int *n) {
    struct sim_config cfg;
    struct sim_result res;
    struct sim_metrics m;
    aiq_err e;
    aiq_err_clear(&e);
    sim_config_for(&cfg, tr, p);
    int rc = 0;
    if (sim_run(&cfg, &res, &e) != AIQ_OK || sim_metrics_compute(tr, &res, &m, &e) != AIQ_OK) {
        fprintf(stderr, "bench_sim: %s\n", e.message);
        rc = 1;
    } else {
        *sum += m.jct_avg * m.ndone;
        *n += m.ndone;
    }
    sim_result_deinit(&res);
    return rc;
}

/* tiresias-las with preemption (and without) against fifo on
 * Tiresias-like traces; see the top of the file. ratio[0] for 1x8,
 * ratio[1] for 2x8. */
static int las_vs_fifo(double *ratio) {
    oppolicy *fifo = load("fifo"), *las = load("tiresias-las"), *nopre = NULL;
    int rc = fifo && las ? 0 : 1;
    /* the same preset with preemption off */
    struct aiq_manifest *m = NULL;
    int nm = 0;
    aiq_err e;
    aiq_err_clear(&e);
    if (rc == 0 && aiq_manifest_parse_file("examples/policies/tiresias-las.yaml", &m, &nm, &e) == AIQ_OK &&
        nm > 0 && m[0].rc == AIQ_OK) {
        m[0].u.policy.spec.preempt_lower_levels = false;
        nopre = oppolicy_compile(&m[0].u.policy, &e);
    }
    aiq_manifests_free(m, nm);
    if (!nopre)
        rc = 1;
    printf("simulator result, not a speed: average JCT (h) on Tiresias-like traces, 10 seeds x 60 jobs\n");
    printf("%-6s %10s %16s %14s %12s %12s\n", "nodes", "fifo", "las+preemption", "las (no pre.)",
           "las/fifo", "nopre/fifo");
    static const char *const spec[2] = {"1x8xA100-80GB", "2x8xA100-80GB"};
    for (int c = 0; c < 2 && rc == 0; c++) {
        double sf = 0, sl = 0, sn = 0;
        int nf = 0, nl = 0, nn = 0;
        for (int seed = 1; seed <= 10 && rc == 0; seed++) {
            struct sim_trace *tr = sim_trace_create();
            struct sim_gen_opts g = {.seed = (uint64_t)seed, .njobs = 60,
                                     .mean_interarrival_s = c == 0 ? 600 : 300, .tiresias = true,
                                     .max_gpus = c == 0 ? 8 : 16, .checkpoint_frac = 1,
                                     .checkpoint_s = 600};
            aiq_err_clear(&e);
            if (!tr || sim_generate(tr, &g, &e) != AIQ_OK ||
                sim_nodes_from_spec(tr, spec[c], &e) != AIQ_OK) {
                fprintf(stderr, "bench_sim: %s\n", e.message);
                rc = 1;
            } else {
                rc = run_jct(tr, fifo, &sf, &nf) || run_jct(tr, las, &sl, &nl) ||
                     run_jct(tr, nopre, &sn, &nn);
            }
            sim_trace_free(tr);
        }
        if (rc == 0 && nf && nl && nn) {
            double f = sf / nf, l = sl / nl, n = sn / nn;
            ratio[c] = l / f;
            printf("%-6s %10.2f %16.2f %14.2f %12.3f %12.3f\n", c == 0 ? "1x8" : "2x8", f, l, n,
                   l / f, n / f);
        }
    }
    oppolicy_free(fifo);
    oppolicy_free(las);
    oppolicy_free(nopre);
    return rc;
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
        sim_config_for(&cfg, tr, p);
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
    double ratio[2] = {0, 0};
    if (rc == 0)
        rc = las_vs_fifo(ratio);
    if (rc == 0) {
        printf("sim_month_1000gpu_s=%.2f\n", base_wall);
        printf("sim_month_1000gpu_cpu_s=%.2f\n", base_cpu);
        printf("sim_las_preempt_vs_fifo_jct_1x8=%.3f\n", ratio[0]);
        printf("sim_las_preempt_vs_fifo_jct_2x8=%.3f\n", ratio[1]);
    }
    return rc;
}
