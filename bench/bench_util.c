/* bench_util.c -- a micro-benchmark of the live utilisation source
 * (operator/util_source.c) without the network: parsing one Prometheus
 * answer of DCGM_FI_DEV_GPU_UTIL (one series per GPU, labels as
 * dcgm-exporter writes them), merging it into the cache, and the per-cycle
 * fill of every node's q_node (the only part on the queue cycle's path),
 * for clusters of 100, 1,000 and 5,000 nodes of 8 GPUs. The fill's cost
 * is compared with the parse's, which runs on the worker thread every
 * --util-interval. Ends with util_fill_ms_5000_nodes= and
 * util_parse_ms_5000_nodes=. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "operator/util_source.h"

#define GPUS 8

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An answer for nn nodes; caller frees. */
static char *answer(int nn, size_t *len) {
    size_t cap = (size_t)nn * GPUS * 300 + 256, n = 0;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[");
    for (int i = 0; i < nn; i++)
        for (int g = 0; g < GPUS; g++)
            n += (size_t)snprintf(b + n, cap - n,
                                  "%s{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"gpu\":\"%d\","
                                  "\"UUID\":\"GPU-%08d-%d\",\"device\":\"nvidia%d\",\"modelName\":"
                                  "\"NVIDIA A100-SXM4-80GB\",\"Hostname\":\"gpu-node-%05d\"},"
                                  "\"value\":[1700000000.5,\"%d\"]}",
                                  i || g ? "," : "", g, i, g, g, i, (i * 7 + g * 13) % 101);
    n += (size_t)snprintf(b + n, cap - n, "]}}");
    *len = n;
    return b;
}

static int run(int nn, double *parse_ms, double *fill_ms) {
    size_t len = 0, ns = 0;
    char *body = answer(nn, &len);
    struct oputil_sample *s = NULL;
    struct q_node *nodes = calloc((size_t)nn, sizeof *nodes);
    char (*names)[32] = calloc((size_t)nn, sizeof *names);
    struct oputil_opts o = {"http://127.0.0.1:1", 15, 60, 1, NULL};
    oputil *u = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    int rc = -1;
    if (!body || !nodes || !names || oputil_create(&o, &u, &e) != AIQ_OK)
        goto out;
    int reps = nn >= 5000 ? 5 : 20;
    double t0 = now_s();
    for (int r = 0; r < reps; r++) {
        free(s);
        s = NULL;
        if (oputil_parse(body, len, NULL, &s, &ns, NULL, &e) != AIQ_OK)
            goto out;
    }
    *parse_ms = (now_s() - t0) * 1000 / reps;
    if (ns != (size_t)nn * GPUS || oputil__merge(u, s, ns, true) != 0)
        goto out;
    for (int i = 0; i < nn; i++) {
        snprintf(names[i], sizeof names[i], "gpu-node-%05d", i);
        nodes[i].name = names[i];
        nodes[i].ngpus = GPUS;
    }
    long known = 0;
    reps = 50;
    t0 = now_s();
    for (int r = 0; r < reps; r++)
        oputil_fill(u, nodes, nn, 1700000001, &known, NULL);
    *fill_ms = (now_s() - t0) * 1000 / reps;
    rc = known == nn ? 0 : -1;
out:
    oputil_free(u);
    free(names);
    free(nodes);
    free(s);
    free(body);
    return rc;
}

int main(void) {
    static const int sizes[] = {100, 1000, 5000};
    double last_parse = 0, last_fill = 0;
    printf("micro-benchmark: utilisation source, parse (worker thread) vs fill (queue cycle)\n");
    printf("%8s %8s %12s %12s %14s %10s\n", "nodes", "gpus", "parse_ms", "fill_ms", "fill_ns/gpu",
           "parse/fill");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        double p = 0, f = 0;
        if (run(sizes[i], &p, &f) != 0) {
            fprintf(stderr, "bench_util: run of %d nodes failed\n", sizes[i]);
            return 1;
        }
        printf("%8d %8d %12.3f %12.3f %14.1f %10.1f\n", sizes[i], sizes[i] * GPUS, p, f,
               f * 1e6 / (sizes[i] * GPUS), f > 0 ? p / f : 0);
        last_parse = p;
        last_fill = f;
    }
    printf("util_parse_ms_5000_nodes=%.3f\nutil_fill_ms_5000_nodes=%.3f\n", last_parse, last_fill);
    return 0;
}
