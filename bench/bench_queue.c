/* bench_queue.c -- a micro-benchmark of the queue core alone: latency and
 * memory of q_cycle_run (queue/) for 1k, 10k and 100k pending jobs on 100,
 * 1k and 5k nodes of 8 GPUs, in process, with a 4-term C scorer. It is not
 * the operator's cycle, which also syncs every job, reads fair-share usage
 * from SQLite, evaluates the policy's bytecode and builds each job's
 * status: that one is measured on the running operator by
 * bench_operator_e2e (the keys there are <server>_e2e_cycle_*).
 *
 * Each cluster is ~90% busy with running jobs (so most pending jobs wait,
 * as in a real backlog), pending jobs mix single-GPU to 8-GPU jobs, gangs,
 * shared-GPU jobs, GPU models, domains, 200 users in 20 groups with quotas,
 * and EASY backfill is on. "full" is a cycle on a fresh state (everything
 * scored and sorted); "incr" is the next cycle on a warm state after the
 * previous cycle's admissions started running (as the operator does) and
 * 20 jobs changed, 5 left and 5 arrived (rescore interval 5 min). The
 * baseline, measured in the same run, is libc qsort of the pending jobs by
 * a precomputed score: the least any from-scratch cycle must do. Memory is
 * counted by an allocator hook (every byte the q_state holds), divided by
 * the pending jobs. Times are medians of thread CPU time (the machine is
 * shared); the wall-clock median of the same runs is printed next to them.
 * "lazy" is the same incremental cycle with q_input.lazy_eta (what the
 * operator should run): decisions, positions and placements for every
 * job, start-time estimates asked for with q_eta() for the first 100 jobs
 * in queue order only (the head of the queue, where an estimate is worth
 * showing); "eta_all" is what asking for every job's estimate adds.
 * Ends with the key=value lines of issue 4 (CPU time), all of the 100k x
 * 5k row and named for the core: core_q_cycle_full_ms_100k_5k,
 * core_q_cycle_incr_lazy_ms_100k_5k (the lazy incremental cycle, with
 * q_input.lazy_eta, which the operator does not set),
 * core_q_cycle_incr_eager_ms_100k_5k (estimates every job) and
 * core_q_state_peak_bytes_per_job_100k_5k (the q_state's peak bytes, not
 * the operator's memory: see <server>_e2e_rss_kib_per_job_*) and
 * core_q_eta_all_ms_100k_5k (the eta_all column: every waiting job's
 * estimate after a lazy cycle, the simulation with the 20 groups' quotas).
 * Then the preemption micro-benchmark (issue 16): a full cycle at 10k x
 * 1k with preemption of lower levels on, and the same cycle with it off
 * (microbench_cycle_preempt_ms_10k_1k, microbench_cycle_nopreempt_ms_10k_1k). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue/queue.h"

#define NOW 1795262400.0
#define GIB (1024LL * 1024 * 1024)

static uint64_t rng = 42;
static uint64_t next(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd(int n) { return (int)(next() % (uint64_t)n); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of this thread: the machine is shared (2 cores, several
 * builds at once), so wall time mostly measures the neighbours. */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Counting allocator hook. */
typedef struct { size_t cur, peak; } counter;
static void *c_alloc(void *ctx, size_t n) {
    counter *c = ctx;
    void *p = malloc(n);
    if (p) {
        c->cur += n;
        if (c->cur > c->peak) c->peak = c->cur;
    }
    return p;
}
static void c_free(void *ctx, void *p, size_t n) {
    counter *c = ctx;
    c->cur -= n;
    free(p);
}

static int b_score(void *ctx, const double *f, double *s) {
    (void)ctx;
    *s = f[Q_F_JOB_PRIORITY] * 1000 + f[Q_F_WAIT_HOURS] * 10 + f[Q_F_USER_LEVEL] - f[Q_F_JOB_GPUS];
    return 0;
}
static int b_level(void *ctx, const double *f, int *lv) {
    (void)ctx;
    double p = f[Q_F_JOB_PRIORITY];
    *lv = p >= 80 ? 0 : p >= 20 ? 1 : 2;
    return 0;
}

static const char *const models[] = {"A100", "H100"};
static const char *const doms[] = {"pool-a", "pool-b", "pool-c", "pool-d"};
static const char *const lvn[] = {"high", "normal", "low"};

typedef struct {
    struct q_node *nodes;
    struct q_job *jobs;
    struct q_place *pl;
    struct q_place *pool;  /* placements of jobs admitted by the bench */
    int npool, cappool;
    char (*keys)[24];
    struct q_user users[200];
    struct q_group groups[20];
    struct q_input in;
    int npending, cap;
} cluster;

static void mkjob(cluster *c, int i, int pending) {
    struct q_job *j = &c->jobs[i];
    memset(j, 0, sizeof *j);
    snprintf(c->keys[i], sizeof c->keys[i], "ns%d/job-%d-%d", i % 97, i, rnd(1000000));
    j->key = j->uid = c->keys[i];
    j->user = rnd(200);
    j->group = c->users[j->user].group;
    j->priority = rnd(100);
    int k = rnd(100);
    j->replicas = k < 5 ? 2 + rnd(3) : 1;
    j->gpus = k < 5 ? 8 : k < 10 ? 0 : 1 << rnd(4);
    j->gpu_memory_mib = k >= 5 && k < 10 ? 10000 : (rnd(3) == 0 ? 40000 : 0);
    j->cpu_milli = 4000;
    j->memory_bytes = 16 * GIB;
    j->gpu_model = rnd(5) == 0 ? models[rnd(2)] : NULL;
    j->domain = rnd(10) == 0 ? doms[rnd(4)] : NULL;
    j->queued = j->created = NOW - rnd(86400);
    j->pred_runtime_s = 600 + rnd(36000);
    j->state = pending ? Q_JOB_PENDING : Q_JOB_RUNNING;
}

/* Fills nodes to ~90% with single-node running jobs. */
static void build(cluster *c, int njobs, int nnodes) {
    int maxrun = nnodes * 8;
    c->cap = njobs + maxrun + 16;
    c->nodes = calloc((size_t)nnodes, sizeof *c->nodes);
    c->jobs = calloc((size_t)c->cap, sizeof *c->jobs);
    c->pl = calloc((size_t)c->cap, sizeof *c->pl);
    c->cappool = 200000;
    c->npool = 0;
    c->pool = calloc((size_t)c->cappool, sizeof *c->pool);
    c->keys = calloc((size_t)c->cap, sizeof *c->keys);
    for (int g = 0; g < 20; g++) {
        struct q_group *gr = &c->groups[g];
        memset(gr, 0, sizeof *gr);
        gr->name = "group";
        gr->level = rnd(5);
        gr->quota.gpus = (int64_t)nnodes * 8 / 10;
        gr->quota.gpu_memory_mib = gr->quota.cpu_milli = gr->quota.memory_bytes = gr->quota.jobs = -1;
        gr->budget_gpu_hours = -1;
        gr->fairshare = 1;
    }
    for (int u = 0; u < 200; u++) {
        struct q_user *us = &c->users[u];
        memset(us, 0, sizeof *us);
        us->name = "user";
        us->group = u % 20;
        us->level = rnd(5);
        us->quota.gpus = us->quota.gpu_memory_mib = us->quota.cpu_milli = -1;
        us->quota.memory_bytes = us->quota.jobs = -1;
        us->budget_gpu_hours = -1;
        us->fairshare = 1;
    }
    int nj = 0;
    for (int i = 0; i < nnodes; i++) {
        struct q_node *n = &c->nodes[i];
        n->name = "node";
        n->domain = doms[i % 4];
        n->gpu_model = models[i % 2];
        n->ngpus = 8;
        for (int g = 0; g < 8; g++) n->gpu_mem_total[g] = 81920;
        n->cpu_alloc = 128000;
        n->mem_alloc = 1024 * GIB;
        n->schedulable = true;
        /* running jobs of 1, 2, 4 GPUs until ~90% of the GPUs are used */
        int used = 0, target = rnd(10) == 0 ? 4 : 8;
        while (used < target) {
            int want = 1 << rnd(3);
            if (used + want > target) want = target - used;
            mkjob(c, nj, 0);
            struct q_job *j = &c->jobs[nj];
            j->replicas = 1;
            j->gpus = want;
            j->gpu_memory_mib = 0;
            j->gpu_model = NULL;
            j->domain = NULL;
            j->end_time = NOW + 60 + rnd(36000);
            struct q_place *p = &c->pl[nj];
            p->node = i;
            for (int g = used; g < used + want; g++) {
                p->gpu_mask |= 1u << g;
                n->gpu_mem_used[g] = 81920;
            }
            n->cpu_used += j->cpu_milli;
            n->mem_used += j->memory_bytes;
            j->placement = p;
            used += want;
            nj++;
        }
    }
    for (int k = 0; k < njobs; k++) mkjob(c, nj++, 1);
    c->npending = njobs;
    struct q_input *in = &c->in;
    memset(in, 0, sizeof *in);
    in->now = NOW;
    in->nodes = c->nodes;
    in->nnodes = nnodes;
    in->users = c->users;
    in->nusers = 200;
    in->groups = c->groups;
    in->ngroups = 20;
    in->jobs = c->jobs;
    in->njobs = nj;
    in->policy.nlevels = 3;
    in->policy.level_names = lvn;
    in->policy.backfill = AIQ_BACKFILL_EASY;
    in->policy.placement = AIQ_PLACE_BINPACK;
    in->policy.starvation_after_s = 7 * 86400;
    in->policy.rescore_interval_s = 300;
}

static void destroy(cluster *c) {
    free(c->nodes);
    free(c->jobs);
    free(c->pl);
    free(c->pool);
    free(c->keys);
}

/* A few changes between cycles: 20 pending jobs edited, 5 removed (swap
 * with the last pending job), 5 new ones at the end. */
static void churn(cluster *c) {
    int first = c->in.njobs - c->npending;
    for (int k = 0; k < 20; k++) {
        struct q_job *j = &c->jobs[first + rnd(c->npending)];
        j->priority = rnd(100);
        j->gen++;
    }
    for (int k = 0; k < 5; k++) {
        int r = first + rnd(c->npending);
        if (c->jobs[r].state != Q_JOB_PENDING || c->jobs[c->in.njobs - 1].state != Q_JOB_PENDING)
            continue;
        c->jobs[r] = c->jobs[c->in.njobs - 1];
        /* keys live in c->keys by slot: keep the moved key */
        memcpy(c->keys[r], c->keys[c->in.njobs - 1], sizeof c->keys[r]);
        c->jobs[r].key = c->jobs[r].uid = c->keys[r];
        c->in.njobs--;
    }
    for (int k = 0; k < 5; k++) mkjob(c, c->in.njobs++, 1);
    c->in.now += 1;
}

/* What the operator does after a cycle: admitted jobs start running on
 * their placements (node use goes up), so the next cycle sees them as
 * running, not pending. */
static void apply(cluster *c, const q_output *out) {
    for (int i = 0; i < c->in.njobs; i++) {
        const struct q_result *r = &out->res[i];
        struct q_job *j = &c->jobs[i];
        if (r->decision != Q_DEC_ADMIT || c->npool + r->nplace > c->cappool) continue;
        struct q_place *p = &c->pool[c->npool];
        memcpy(p, &out->places[r->place_off], sizeof *p * (size_t)r->nplace);
        c->npool += r->nplace;
        for (int k = 0; k < r->nplace; k++) {
            struct q_node *n = &c->nodes[p[k].node];
            for (int g = 0; g < n->ngpus; g++) {
                if (!((p[k].gpu_mask >> g) & 1u)) continue;
                n->gpu_mem_used[g] = j->gpus > 0 ? n->gpu_mem_total[g] : n->gpu_mem_used[g] + j->gpu_memory_mib;
            }
            n->cpu_used += j->cpu_milli;
            n->mem_used += j->memory_bytes;
        }
        j->state = Q_JOB_RUNNING;
        j->placement = p;
        j->end_time = c->in.now + j->pred_runtime_s;
        j->gen++;
        c->npending--;
    }
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static double median(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k] < v[k - 1]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return v[n / 2];
}

int main(void) {
    static const int J[] = {1000, 10000, 100000};
    static const int N[] = {100, 1000, 5000};
    double full_key = 0, incr_key = 0, eager_key = 0, bpj_key = 0, etaall_key = 0;
    q_scorer sc = {NULL, b_score, b_level};
    printf("core q_cycle_run, micro-benchmark (the queue core in process with a C scorer, not the\n"
           "operator's cycle: see bench_operator_e2e): EASY backfill, binpack, ~90%% busy cluster,\n"
           "median CPU ms (wall ms)\n");
    printf("%8s %6s %9s %8s %9s %8s %8s %9s %8s %9s %9s %8s %8s %8s %8s\n", "pending", "nodes", "full_ms",
           "(wall)", "incr_ms", "(wall)", "full/inc", "qsort_ms", "full/qs", "admitted", "bytes/job",
           "peak/job", "lazy_ms", "(wall)", "eta_all");
    /* AIQ_BENCH_QUEUE_ONLY_BIG=1: only 100k x 5k (for profiling). */
    const char *only = getenv("AIQ_BENCH_QUEUE_ONLY_BIG");
    int start = only && *only == '1' ? 2 : 0;
    for (int a = start; a < 3; a++) {
        for (int b = start; b < 3; b++) {
            cluster c;
            build(&c, J[a], N[b]);
            int reps = J[a] >= 100000 ? 3 : 5;
            double full[5], incr[7], qs[5], fullw[5], incrw[7];
            counter cnt = {0, 0};
            struct q_alloc al = {&cnt, c_alloc, c_free};
            q_output out;
            aiq_err err;
            int admitted = 0;
            for (int r = 0; r < reps; r++) {
                cnt.cur = cnt.peak = 0;
                q_state *st = q_state_create(&al);
                double t0 = now_ms(), c0 = cpu_ms();
                if (q_cycle_run(st, &c.in, &sc, &out, &err) != AIQ_OK) {
                    fprintf(stderr, "cycle failed: %s\n", err.message);
                    return 1;
                }
                full[r] = cpu_ms() - c0;
                fullw[r] = now_ms() - t0;
                admitted = out.nadmitted;
                q_state_free(st);
                /* baseline: sort the pending jobs by a precomputed score */
                double *s = malloc(sizeof *s * (size_t)c.npending);
                for (int k = 0; k < c.npending; k++) s[k] = c.jobs[c.in.njobs - c.npending + k].priority * 1000.0 + rnd(1000);
                c0 = cpu_ms();
                qsort(s, (size_t)c.npending, sizeof *s, cmp_dbl);
                qs[r] = cpu_ms() - c0;
                free(s);
            }
            /* incremental: warm state, then churn + cycle */
            cnt.cur = cnt.peak = 0;
            q_state *st = q_state_create(&al);
            q_cycle_run(st, &c.in, &sc, &out, &err);
            int ireps = 7;
            for (int r = 0; r < ireps; r++) {
                apply(&c, &out);
                churn(&c);
                double t0 = now_ms(), c0 = cpu_ms();
                if (q_cycle_run(st, &c.in, &sc, &out, &err) != AIQ_OK) {
                    fprintf(stderr, "cycle failed: %s\n", err.message);
                    return 1;
                }
                incr[r] = cpu_ms() - c0;
                incrw[r] = now_ms() - t0;
                if (out.nscored > 40) fprintf(stderr, "warning: incremental cycle scored %d jobs\n", out.nscored);
            }
            double bpj = (double)cnt.cur / c.npending, ppj = (double)cnt.peak / c.npending;
            if (cnt.cur != q_state_bytes(st)) fprintf(stderr, "warning: hook %zu != state %zu\n", cnt.cur, q_state_bytes(st));
            q_state_free(st);
            /* lazy estimates: the same churn on a warm lazy state */
            double lazy[7], lazyw[7], etaall[7];
            c.in.lazy_eta = true;
            st = q_state_create(NULL);
            q_cycle_run(st, &c.in, &sc, &out, &err);
            for (int r = 0; r < ireps; r++) {
                apply(&c, &out);
                churn(&c);
                double t0 = now_ms(), c0 = cpu_ms();
                if (q_cycle_run(st, &c.in, &sc, &out, &err) != AIQ_OK) {
                    fprintf(stderr, "cycle failed: %s\n", err.message);
                    return 1;
                }
                double eta;
                for (int k = 0; k < out.norder && k < 100; k++)
                    q_eta(st, &c.in, &out, out.order[k], &eta);
                lazy[r] = cpu_ms() - c0;
                lazyw[r] = now_ms() - t0;
                c0 = cpu_ms();
                for (int k = 0; k < out.norder; k++) q_eta(st, &c.in, &out, out.order[k], &eta);
                etaall[r] = cpu_ms() - c0;
            }
            q_state_free(st);
            c.in.lazy_eta = false;
            double fm = median(full, reps), im = median(incr, ireps), qm = median(qs, reps);
            double fw = median(fullw, reps), iw = median(incrw, ireps);
            double lm = median(lazy, ireps), lw = median(lazyw, ireps), em = median(etaall, ireps);
            printf("%8d %6d %9.2f %8.1f %9.2f %8.1f %8.1f %9.2f %8.1f %9d %9.0f %8.0f %8.2f %8.1f %8.2f\n", J[a],
                   N[b], fm, fw, im, iw, fm / im, qm, fm / qm, admitted, bpj, ppj, lm, lw, em);
            fflush(stdout);
            if (a == 2 && b == 2) {
                full_key = fm;
                incr_key = lm;
                eager_key = im;
                bpj_key = ppj;
                etaall_key = em;
            }
            destroy(&c);
        }
    }
    /* Micro-benchmark: a full cycle with preemption on (higher levels
     * preempt lower ones, every running job preemptible), against the
     * same cycle with it off, on 10k pending x 1k nodes. The first jobs
     * that do not fit search for victims (at most 16 searches a cycle,
     * 256 candidates each; running jobs are scored once). */
    double pre_ms = 0, nopre_ms = 0;
    int nsearch = 0, nact = 0;
    if (start == 0) {
        cluster c;
        build(&c, 10000, 1000);
        /* running jobs all in the lowest level, so the pending jobs of
         * the two upper levels may preempt them */
        for (int i = 0; i < c.in.njobs; i++)
            if (c.jobs[i].state == Q_JOB_RUNNING) {
                c.jobs[i].started = NOW - 3600;
                c.jobs[i].priority = 5;
            }
        double on[5], off[5];
        q_output out;
        aiq_err err;
        for (int r = 0; r < 5; r++) {
            for (int pass = 0; pass < 2; pass++) {
                c.in.policy.preempt_lower = pass == 0;
                c.in.actions_on = true;
                q_state *st = q_state_create(NULL);
                double c0 = cpu_ms();
                if (q_cycle_run(st, &c.in, &sc, &out, &err) != AIQ_OK) {
                    fprintf(stderr, "cycle failed: %s\n", err.message);
                    return 1;
                }
                (pass == 0 ? on : off)[r] = cpu_ms() - c0;
                if (pass == 0) {
                    nsearch = out.nsearched;
                    nact = out.nactions;
                }
                q_state_free(st);
            }
        }
        c.in.policy.preempt_lower = false;
        c.in.actions_on = false;
        pre_ms = median(on, 5);
        nopre_ms = median(off, 5);
        printf("micro-benchmark, preemption (10k pending x 1k nodes, full cycle, median CPU ms): "
               "on %.2f (%d searches, %d actions), off %.2f\n", pre_ms, nsearch, nact, nopre_ms);
        destroy(&c);
    }
    printf("core goals (issue 4): full < 100 ms, incremental < 10 ms (lazy), < 2048 bytes of q_state\n"
           "per pending job (peak)\n");
    printf("core_q_cycle_full_ms_100k_5k=%.2f\n", full_key);
    printf("core_q_cycle_incr_lazy_ms_100k_5k=%.2f\n", incr_key);
    printf("core_q_cycle_incr_eager_ms_100k_5k=%.2f\n", eager_key);
    printf("core_q_state_peak_bytes_per_job_100k_5k=%.0f\n", bpj_key);
    printf("core_q_eta_all_ms_100k_5k=%.2f\n", etaall_key);
    if (start == 0) {
        printf("microbench_cycle_preempt_ms_10k_1k=%.2f\n", pre_ms);
        printf("microbench_cycle_nopreempt_ms_10k_1k=%.2f\n", nopre_ms);
    }
    return 0;
}
