/* bench_api_servers.c -- the raw rates of both API servers, each started
 * as its own process by this program: build/rel/aiq-apiserver (local,
 * plain HTTP, SQLite file) and build/realcluster/aiq-realcluster (the
 * real kube-apiserver over HTTPS with a bearer token, etcd, scheduler,
 * controller manager and the kubelet stand-in), measured the same way in
 * the same run. These are the ceilings the operator's end-to-end figures
 * (bench_operator_e2e) are compared against.
 *
 *   pod create   POST of the gated pod the operator creates for a replica
 *                (operator/pods.c, without the owner reference and the
 *                aiq.dev/job label, so no controller takes it for its own)
 *   pod patch    the merge patch the operator's release sends to a gated
 *                pod (operator/release.c: node hint annotations, node
 *                affinity, gate removal), once per pod
 *   watch        delivery latency: one client patches an annotation of a
 *                pod, waits for the response, and the time until the
 *                MODIFIED event arrives on a watch of that pod is taken;
 *                the next write goes once the event is in (an idle
 *                server: the latency, not a throughput)
 *
 * Each rate is measured with one client and with 4 parallel clients (a
 * gang release runs on 4 threads: the caller and 3 short-lived helpers,
 * release_exec.c), through the operator's own kube
 * client (keep-alive, TLS and token as the operator sends them), with the
 * request bodies built before the clock starts. Nodes are cordoned, so the
 * ungated pods stay unscheduled on both servers (the real scheduler still
 * tries each once). Nothing else of ours runs meanwhile.
 *
 * Knobs: BENCH_SERVERS (local,real), BENCH_RAW_N (pods per phase, 3000),
 * BENCH_RAW_CAP_S (seconds per phase, 10), BENCH_WATCH_N (writes, 300),
 * BENCH_RAW_PATCH=annotations (patch only the node hint annotations and
 * leave the pods gated, to see what the ungating costs; the keys then
 * still say pod_patch, so do not mix such a run with others).
 * Ends with <server>_pod_create_1c_per_s=, _4c_per_s=, <server>_pod_patch_1c_per_s=,
 * _4c_per_s=, <server>_watch_latency_p50_ms= and _p99_ms=. */
#include <curl/curl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bproc.h"
#include "common/json.h"

#define NS "default"
#define PODS "/api/v1/namespaces/" NS "/pods"
#define MAX_WATCH 100000

struct raw {
    struct bp_server *s;
    char **bodies;   /* per operation: create body or patch body */
    char **paths;    /* per operation (patches) */
};

static int op_create(void *ctx, long i) {
    struct raw *r = ctx;
    return bp_req(r->s, "POST", PODS, "application/json", r->bodies[i], NULL) == 201 ? 0 : -1;
}

static int op_patch(void *ctx, long i) {
    struct raw *r = ctx;
    return bp_req(r->s, "PATCH", r->paths[i], "application/merge-patch+json", r->bodies[i], NULL) ==
                   200
               ? 0
               : -1;
}

struct row {
    const char *op;
    int clients;
    long n, ok;
    double secs;
};

/* The watch-latency probe: the watch thread stamps the arrival of write
 * number k (annotation bench/seq) in t_evt[k]. */
struct wl {
    double *t_evt;
    atomic_long seen;
};

static void wl_line(void *ud, const char *line, size_t len, double t) {
    (void)len;
    struct wl *w = ud;
    char v[32];
    if (strncmp(line, "{\"type\":\"MODIFIED\"", 18) != 0 ||
        !bp_json_str(line, NULL, "bench/seq", v, sizeof v))
        return;
    long k = strtol(v, NULL, 10);
    if (k >= 0 && k < MAX_WATCH && w->t_evt[k] == 0) {
        w->t_evt[k] = t;
        atomic_fetch_add(&w->seen, 1);
    }
}

struct server_result {
    struct row rows[4];
    int nrows;
    double lat_p50, lat_p99, lat_min, rtt_p50;
    int lat_n, lat_lost;
    double ready_s;
    long rss_kib;
    int ok;
};

static void free_strs(char **v, long n) {
    for (long i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static int run_rates(struct bp_server *s, long n, double cap_s, struct server_result *res) {
    json_object *pod = bp_gated_pod(NS, "tmpl");
    char *patch[10];
    int rc = -1;
    if (!pod)
        return -1;
    /* BENCH_RAW_PATCH=annotations: the same node hint annotations but the
     * pod stays gated (no affinity, no ungating): what the ungating and
     * the scheduler's attempt that follows it cost. */
    int annot = strcmp(bp_env_str("BENCH_RAW_PATCH", "release"), "annotations") == 0;
    for (int k = 0; k < 10; k++) {
        char node[32];
        snprintf(node, sizeof node, "gpu0-%d", k);
        if (annot) {
            char b[256];
            snprintf(b, sizeof b,
                     "{\"metadata\":{\"annotations\":{\"aiq.dev/node\":\"%s\",\"aiq.dev/gpu-indexes\":"
                     "\"0\",\"aiq.dev/gpu-memory-mib\":\"81920\"}}}",
                     node);
            patch[k] = strdup(b);
        } else {
            patch[k] = bp_release_patch(pod, node);
        }
    }
    for (int c = 0; c < 2; c++) {
        int clients = c == 0 ? 1 : 4;
        char **bodies = calloc((size_t)n, sizeof *bodies), **paths = calloc((size_t)n, sizeof *paths);
        json_object *meta = NULL;
        struct raw r = {s, bodies, paths};
        long done = 0, ok = 0;
        if (!bodies || !paths || !json_object_object_get_ex(pod, "metadata", &meta)) {
            free(bodies);
            free(paths);
            goto out;
        }
        for (long i = 0; i < n; i++) {
            char name[64], path[160];
            snprintf(name, sizeof name, "raw%dc-%06ld", clients, i);
            /* a body left NULL (out of memory) makes its request fail: counted */
            bodies[i] = aiq_jset(meta, "name", json_object_new_string(name), NULL) == 0
                            ? strdup(json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN))
                            : NULL;
            snprintf(path, sizeof path, PODS "/%s", name);
            paths[i] = strdup(path);
        }
        struct row *rw = &res->rows[res->nrows++];
        rw->op = "pod create";
        rw->clients = clients;
        bp_log("pod create, %d client(s)", clients);
        rw->secs = bp_parallel(clients, n, cap_s, op_create, &r, &done, &ok);
        rw->n = done;
        rw->ok = ok;
        /* Patch the pods just created, as many as exist. */
        long created = done;
        for (long i = 0; i < n; i++) {
            free(bodies[i]);
            bodies[i] = patch[i % 10] ? strdup(patch[i % 10]) : NULL;
        }
        rw = &res->rows[res->nrows++];
        rw->op = annot ? "pod patch (annotations)" : "pod patch (release)";
        rw->clients = clients;
        bp_log("pod patch, %d client(s)", clients);
        rw->secs = bp_parallel(clients, created, cap_s, op_patch, &r, &done, &ok);
        rw->n = done;
        rw->ok = ok;
        free_strs(bodies, n);
        free_strs(paths, n);
    }
    rc = 0;
out:
    for (int k = 0; k < 10; k++)
        free(patch[k]);
    json_object_put(pod);
    /* Order the rows: creates first, then patches. */
    if (rc == 0 && res->nrows == 4) {
        struct row t = res->rows[1];
        res->rows[1] = res->rows[2];
        res->rows[2] = t;
    }
    return rc;
}

static int run_watch(struct bp_server *s, int n, struct server_result *res) {
    struct wl w;
    double *lat = calloc((size_t)n, sizeof *lat), *rtt = calloc((size_t)n, sizeof *rtt);
    json_object *pod = bp_gated_pod(NS, "watch-probe"), *meta = NULL, *labels = NULL;
    int got = 0, rc = -1;
    w.t_evt = calloc((size_t)n, sizeof *w.t_evt);
    atomic_init(&w.seen, 0);
    if (!lat || !rtt || !w.t_evt || !pod || !json_object_object_get_ex(pod, "metadata", &meta) ||
        !json_object_object_get_ex(meta, "labels", &labels))
        goto out;
    if (aiq_jset(labels, "bench", json_object_new_string("watch"), NULL) != 0)
        goto out;
    if (bp_req(s, "POST", PODS, NULL, json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN),
               NULL) != 201)
        goto out;
    struct bp_watch *wt = bp_watch_start(s, PODS "?watch=true&labelSelector=bench%3Dwatch", wl_line, &w);
    if (!wt)
        goto out;
    usleep(300000); /* let the stream open */
    bp_log("watch latency, %d writes", n);
    for (int k = 0; k < n; k++) {
        char body[96];
        snprintf(body, sizeof body, "{\"metadata\":{\"annotations\":{\"bench/seq\":\"%d\"}}}", k);
        double t0 = bp_now();
        int st = bp_req(s, "PATCH", PODS "/watch-probe", "application/merge-patch+json", body, NULL);
        double t1 = bp_now();
        if (st != 200)
            continue;
        while (w.t_evt[k] == 0 && bp_now() - t1 < 2)
            usleep(50);
        if (w.t_evt[k] == 0)
            continue; /* lost (or later than 2 s): counted below */
        lat[got] = (w.t_evt[k] - t1) * 1e3;
        rtt[got] = (t1 - t0) * 1e3;
        got++;
    }
    bp_watch_stop(wt);
    res->lat_n = got;
    res->lat_lost = n - got;
    res->lat_p50 = bp_pct(lat, got, 0.5);
    res->lat_p99 = bp_pct(lat, got, 0.99);
    res->lat_min = got ? lat[0] : 0;
    res->rtt_p50 = bp_pct(rtt, got, 0.5);
    rc = got > 0 ? 0 : -1;
out:
    json_object_put(pod);
    free(lat);
    free(rtt);
    free(w.t_evt);
    return rc;
}

int main(void) {
    const char *servers = bp_env_str("BENCH_SERVERS", "local,real");
    long n = bp_env_long("BENCH_RAW_N", 3000);
    double cap_s = bp_env_double("BENCH_RAW_CAP_S", 10);
    int nw = (int)bp_env_long("BENCH_WATCH_N", 300);
    char dir[] = "/tmp/aiq-bench-api.XXXXXX", nodes[256];
    struct server_result res[2];
    int which[2], nsrv = 0, failed = 0;
    double t_start = bp_now();

    if (nw > MAX_WATCH)
        nw = MAX_WATCH;
    if (strstr(servers, "local"))
        which[nsrv++] = BP_LOCAL;
    if (strstr(servers, "real"))
        which[nsrv++] = BP_REAL;
    curl_global_init(CURL_GLOBAL_ALL); /* before any thread makes a handle */
    if (!mkdtemp(dir))
        return 1;
    snprintf(nodes, sizeof nodes, "%s/nodes.yaml", dir);
    if (bp_write_nodes(nodes, 10, 1, 0) != 0)
        return 1;
    memset(res, 0, sizeof res);
    for (int k = 0; k < nsrv; k++) {
        struct bp_server s;
        char sdir[256], err[512];
        enum bp_kind kind = (enum bp_kind)which[k];
        snprintf(sdir, sizeof sdir, "%s/%s", dir, bp_kind_name(kind));
        if (bp_server_start(&s, kind, sdir, nodes, NULL, 4, 300, err, sizeof err) != 0) {
            fprintf(stderr, "bench_api_servers: %s: %s\n", bp_kind_name(kind), err);
            failed = 1;
            continue;
        }
        res[k].ready_s = s.ready_s;
        bp_log("%s: ready in %.1f s", bp_kind_name(kind), s.ready_s);
        /* The real server admits pods only once the namespace's service
         * account exists. */
        if (kind == BP_REAL &&
            bp_wait_get(&s, "/api/v1/namespaces/" NS "/serviceaccounts/default", 60) != 0)
            fprintf(stderr, "bench_api_servers: %s: no default service account\n", bp_kind_name(kind));
        if (run_rates(&s, n, cap_s, &res[k]) != 0 || run_watch(&s, nw, &res[k]) != 0) {
            fprintf(stderr, "bench_api_servers: %s: a phase failed (see %s)\n", bp_kind_name(kind),
                    s.log);
            failed = 1;
        } else {
            res[k].ok = 1;
        }
        res[k].rss_kib = bp_rss_kib(s.pid);
        bp_log("%s: stopping", bp_kind_name(kind));
        bp_server_stop(&s);
        bp_log("%s: stopped", bp_kind_name(kind));
    }

    printf("raw API server rates: each server its own process, started by this bench; the\n"
           "operator's kube client; gated pods as the operator makes them, patched with its\n"
           "release patch; up to %ld operations or %.0f s per row\n", n, cap_s);
    printf("%-7s %-22s %8s %7s %7s %9s %9s\n", "server", "operation", "clients", "n", "failed",
           "seconds", "per_s");
    for (int k = 0; k < nsrv; k++)
        for (int i = 0; i < res[k].nrows; i++) {
            struct row *r = &res[k].rows[i];
            printf("%-7s %-22s %8d %7ld %7ld %9.2f %9.0f\n", bp_kind_name((enum bp_kind)which[k]), r->op,
                   r->clients, r->n, r->n - r->ok, r->secs, r->secs > 0 ? r->ok / r->secs : 0);
        }
    printf("\nwatch delivery latency: write response -> MODIFIED event on a watch of the pod\n");
    printf("%-7s %6s %6s %9s %9s %9s %13s %9s %10s\n", "server", "n", "lost", "p50_ms", "p99_ms",
           "min_ms", "write_rtt_ms", "ready_s", "rss_MiB");
    for (int k = 0; k < nsrv; k++)
        printf("%-7s %6d %6d %9.3f %9.3f %9.3f %13.3f %9.1f %10.0f\n",
               bp_kind_name((enum bp_kind)which[k]), res[k].lat_n, res[k].lat_lost, res[k].lat_p50,
               res[k].lat_p99, res[k].lat_min, res[k].rtt_p50, res[k].ready_s,
               res[k].rss_kib / 1024.0);
    printf("(min < 0: the event came before the write's response; rss: the server's main process\n"
           "at the end; the real one holds etcd and kube-apiserver)\n");
    printf("whole run: %.0f s\n", bp_now() - t_start);
    for (int k = 0; k < nsrv; k++) {
        const char *nm = bp_kind_name((enum bp_kind)which[k]);
        if (!res[k].ok)
            continue;
        for (int i = 0; i < res[k].nrows; i++) {
            struct row *r = &res[k].rows[i];
            printf("%s_pod_%s_%dc_per_s=%.0f\n", nm, strncmp(r->op, "pod create", 10) == 0 ? "create" : "patch",
                   r->clients, r->secs > 0 ? r->ok / r->secs : 0);
        }
        printf("%s_watch_latency_p50_ms=%.3f\n", nm, res[k].lat_p50);
        printf("%s_watch_latency_p99_ms=%.3f\n", nm, res[k].lat_p99);
    }
    if (!getenv("BENCH_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_api_servers: could not remove %s\n", dir);
    } else {
        fprintf(stderr, "kept %s\n", dir);
    }
    curl_global_cleanup();
    return failed;
}
