/* bench_fx.c -- a micro-benchmark of the policy VM alone: evaluations per
 * second of a 12-term priority formula:
 * the bytecode VM (fx_eval) against the same formula written as a C
 * function compiled with -O2, in the same run on the same inputs.
 *
 * Inputs vary per iteration (a ring of 1024 factor vectors) and every
 * result is summed into a checksum that is printed, so the compiler can
 * neither hoist nor drop the work; the native function is noinline so both
 * sides pay one call per evaluation. Timing: many short interleaved runs,
 * the best of each side, so runs that lose the core to another process on
 * the shared 2-core machine do not count (five long runs rarely found a
 * quiet window: the ratio moved by more than 1 between invocations).
 * Ends with formula_vs_native=<ratio>
 * (bytecode time / native time; lower is better, goal <= 2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "policy/fx.h"

static const char *const FORMULA =
    "1000 * min(wait.hours, 168) / 168"
    " + 2000 * fairshare.user"
    " + 500 * fairshare.group"
    " + 10 * job.priority"
    " + 100 * user.level"
    " + 50 * group.level"
    " - 20 * job.gpus"
    " + 300 / (1 + runtime.predicted_hours)"
    " - 5 * attained.gpu_hours"
    " + 200 * (1 - quota.user_share)"
    " + (job.is_gang ? 50 : 0)"
    " + 0.5 * job.age_hours";

/* min with fmin's NaN rule, inline as the VM's is (glibc's fmin is an
 * out-of-line call, which would slow the baseline down). */
static inline double nmin(double a, double b) {
    if (b != b) return a;
    if (a != a) return b;
    return b < a ? b : a;
}

/* The same formula by hand, with the language's rules where they matter
 * (x / 0 is 0: 1 + predicted hours is never 0 here, inputs are >= 0). */
__attribute__((noinline)) static double native(const double *f) {
    return 1000 * nmin(f[FX_F_WAIT_HOURS], 168) / 168
        + 2000 * f[FX_F_FAIRSHARE_USER]
        + 500 * f[FX_F_FAIRSHARE_GROUP]
        + 10 * f[FX_F_JOB_PRIORITY]
        + 100 * f[FX_F_USER_LEVEL]
        + 50 * f[FX_F_GROUP_LEVEL]
        - 20 * f[FX_F_JOB_GPUS]
        + 300 / (1 + f[FX_F_RUNTIME_PREDICTED_HOURS])
        - 5 * f[FX_F_ATTAINED_GPU_HOURS]
        + 200 * (1 - f[FX_F_QUOTA_USER_SHARE])
        + (f[FX_F_JOB_IS_GANG] != 0 ? 50 : 0)
        + 0.5 * f[FX_F_JOB_AGE_HOURS];
}

#define NVEC 1024

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double run_vm(const fx_prog *p, double (*v)[FX_NFACTORS], long n,
                     double *sum) {
    double s = 0, t0 = now_s();
    for (long i = 0; i < n; i++) s += fx_eval(p, v[i & (NVEC - 1)]);
    *sum = s;
    return now_s() - t0;
}

static double run_native(double (*v)[FX_NFACTORS], long n, double *sum) {
    double s = 0, t0 = now_s();
    for (long i = 0; i < n; i++) s += native(v[i & (NVEC - 1)]);
    *sum = s;
    return now_s() - t0;
}

int main(void) {
    int rc = 1;
    aiq_err err;
    aiq_err_clear(&err);
    fx_prog *p = fx_compile(FORMULA, FX_EXPR, &err);
    double(*v)[FX_NFACTORS] = malloc(sizeof(double[NVEC][FX_NFACTORS]));
    if (!p || !v) {
        fprintf(stderr, "bench_fx: %s\n", p ? "out of memory" : err.message);
        goto out;
    }
    unsigned seed = 12345;
    for (int i = 0; i < NVEC; i++)
        for (int j = 0; j < FX_NFACTORS; j++) {
            seed = seed * 1103515245u + 12345u;
            v[i][j] = (double)(seed >> 16 & 0x7fff) / 3276.7; /* 0..10 */
        }
    for (int i = 0; i < NVEC; i++) {
        double a = fx_eval(p, v[i]), b = native(v[i]);
        if (fabs(a - b) > 1e-9 * (1 + fabs(b))) {
            fprintf(stderr, "bench_fx: vm %.17g != native %.17g\n", a, b);
            goto out;
        }
    }
    const long n = 500000;
    const int rounds = 200;
    double best_vm = 1e9, best_nat = 1e9, s1 = 0, s2 = 0;
    for (int r = 0; r < rounds; r++) { /* interleaved, best of each */
        double t = run_vm(p, v, n, &s1);
        if (t < best_vm) best_vm = t;
        t = run_native(v, n, &s2);
        if (t < best_nat) best_nat = t;
    }
    double ratio = best_vm / best_nat;
    printf("bench_fx: fx_eval alone, micro-benchmark: 12-term formula, %ld evaluations per run,\n"
           "best of %d\n", n, rounds);
    printf("  %-22s %14s %10s\n", "variant", "evals/s", "ns/eval");
    printf("  %-22s %14.0f %10.2f\n", "native C (-O2)", n / best_nat, best_nat / n * 1e9);
    printf("  %-22s %14.0f %10.2f\n", "bytecode (fx_eval)", n / best_vm, best_vm / n * 1e9);
    printf("  checksum vm=%.6g native=%.6g\n", s1, s2);
    printf("formula_vs_native=%.2f\n", ratio);
    rc = 0;
out:
    free(v);
    fx_free(p);
    return rc;
}
