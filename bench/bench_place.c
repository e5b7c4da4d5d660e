/* bench_place.c -- a micro-benchmark of scored placement: the cost of one
 * placement candidate (a node and the GPUs one replica would take there)
 * under fgd (the FGD measure of the node after the placement) and under a
 * placement score (the binpack preset's expression through the fx VM,
 * which also fills every placement factor and computes frag.delta).
 *
 * One queue cycle places one pending replica on 2,000 nodes of 8 GPUs with
 * random use (a GPU share of 8 GiB, so every GPU with room is a candidate;
 * and one whole GPU, one candidate per node with a free GPU), with a target
 * workload of 16 classes. The candidates are counted by the score run's
 * placer calls. Marginal cost per candidate = (cycle time - binpack's cycle
 * time) / candidates: binpack visits only the nodes it needs, so the
 * difference is what scoring every candidate costs. Timing: the best of
 * many short runs (the machine is shared). Ends with key=value lines:
 * place_fgd_ns_per_candidate, place_score_ns_per_candidate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/fx.h"
#include "queue/queue.h"

#define NNODES 2000
#define NCLASSES 16

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct ctx {
    fx_prog *prog;
    long calls;
};

static int score(void *c, const double *pf, double *s) {
    struct ctx *x = c;
    x->calls++;
    *s = fx_eval(x->prog, pf);
    return 0;
}

static void build_nodes(struct q_node *nodes) {
    uint64_t r = 42;
    for (int i = 0; i < NNODES; i++) {
        struct q_node *n = &nodes[i];
        memset(n, 0, sizeof *n);
        n->name = "n";
        n->ngpus = 8;
        for (int g = 0; g < 8; g++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            n->gpu_mem_total[g] = 32768;
            int k = (int)((r >> 33) % 5); /* 0, 1/4, 1/2, 3/4 or all used */
            n->gpu_mem_used[g] = 8192LL * k;
        }
        n->cpu_alloc = 96000;
        n->cpu_used = 24000;
        n->mem_alloc = 768LL << 30;
        n->schedulable = true;
    }
}

/* Seconds of one cycle placing job j (best of runs). */
static double time_cycle(q_state *st, struct q_input *in, int runs) {
    double best = 1e9;
    q_output out;
    aiq_err e;
    for (int k = 0; k < runs; k++) {
        aiq_err_clear(&e);
        double t0 = now_s();
        if (q_cycle_run(st, in, NULL, &out, &e) != AIQ_OK) {
            fprintf(stderr, "bench_place: %s\n", e.message);
            exit(1);
        }
        double t = now_s() - t0;
        if (out.res[0].decision != Q_DEC_ADMIT) {
            fprintf(stderr, "bench_place: the job was not placed\n");
            exit(1);
        }
        if (t < best) best = t;
    }
    return best;
}

int main(void) {
    static struct q_node nodes[NNODES];
    static const char *const lv[] = {"all"};
    build_nodes(nodes);
    struct q_task_class wl[NCLASSES];
    for (int c = 0; c < NCLASSES; c++) {
        struct q_task_class x = {c % 4 == 0 ? 1 + c / 8 : 0, c % 4 == 0 ? 0 : 2048LL * (c + 1),
                                 1000LL * (1 + c % 8), 4LL << 30, 1.0 + c, 0};
        wl[c] = x;
    }
    aiq_err e;
    aiq_err_clear(&e);
    struct ctx cx = {fx_compile_placement("- 1000 * node.free_gpus_after - "
                                          "node.gpu_mem_free_after_gib", &e), 0};
    if (!cx.prog) {
        fprintf(stderr, "bench_place: %s\n", e.message);
        return 1;
    }
    q_placer placer = {&cx, score};
    printf("micro-benchmark: one cycle placing one replica on %d nodes x 8 GPUs, "
           "%d workload classes (best of 30 runs)\n\n", NNODES, NCLASSES);
    printf("%-10s %-8s %12s %11s %16s\n", "job", "mode", "cycle (us)", "candidates",
           "ns/candidate");
    double per[2][2] = {{0}};
    for (int kind = 0; kind < 2; kind++) {
        struct q_job j;
        memset(&j, 0, sizeof j);
        j.key = "ns/j";
        j.uid = "u";
        j.gen = 1;
        j.user = j.group = -1;
        j.replicas = 1;
        j.gpus = kind == 0 ? 0 : 1;
        j.gpu_memory_mib = kind == 0 ? 8192 : 0;
        j.cpu_milli = 2000;
        struct q_input in;
        memset(&in, 0, sizeof in);
        in.now = 1000;
        in.nodes = nodes;
        in.nnodes = NNODES;
        in.jobs = &j;
        in.njobs = 1;
        in.policy.nlevels = 1;
        in.policy.level_names = lv;
        in.gen = 1;
        in.lazy_eta = true;
        in.workload = wl;
        in.nworkload = NCLASSES;
        q_state *st = q_state_create(NULL);
        if (!st)
            return 1;
        in.policy.placement = AIQ_PLACE_BINPACK;
        double tb = time_cycle(st, &in, 30);
        in.policy.placement = AIQ_PLACE_FGD;
        double tf = time_cycle(st, &in, 30);
        in.policy.placement = AIQ_PLACE_BINPACK;
        in.placer = &placer;
        cx.calls = 0;
        double ts = time_cycle(st, &in, 30);
        long cand = cx.calls / 30;
        q_state_free(st);
        const char *name = kind == 0 ? "share 8GiB" : "1 GPU";
        per[kind][0] = (tf - tb) * 1e9 / (double)cand;
        per[kind][1] = (ts - tb) * 1e9 / (double)cand;
        printf("%-10s %-8s %12.1f %11s %16s\n", name, "binpack", tb * 1e6, "-", "-");
        printf("%-10s %-8s %12.1f %11ld %16.1f\n", name, "fgd", tf * 1e6, cand, per[kind][0]);
        printf("%-10s %-8s %12.1f %11ld %16.1f\n", name, "score", ts * 1e6, cand, per[kind][1]);
    }
    fx_free(cx.prog);
    printf("\nns/candidate: (cycle - binpack cycle) / candidates; score includes "
           "filling the factors and frag.delta\n");
    printf("place_fgd_ns_per_candidate=%.1f\n", per[0][0]);
    printf("place_score_ns_per_candidate=%.1f\n", per[0][1]);
    printf("place_fgd_ns_per_candidate_whole=%.1f\n", per[1][0]);
    printf("place_score_ns_per_candidate_whole=%.1f\n", per[1][1]);
    return 0;
}
