/* bench_api.c -- a micro-benchmark of the local API server in process
 * (apisrv_start, test/apiserver): custom-resource creates, merge patches
 * and gets over HTTP keep-alive (libcurl, one client), and watch events
 * delivered per second to one HTTP watcher while the same process writes
 * through the in-process object API. The baseline is GET /version on the
 * same server in the same run (the cost of an HTTP round trip with no
 * storage work), so the ratios show what storage, validation and events
 * add. Both servers as separate processes, with the operator's pods and
 * release patch and 1 and 4 clients, are measured by bench_api_servers;
 * that is the baseline the operator's end-to-end figures are compared
 * with. Ends with inproc_local_api_create_per_s=,
 * inproc_local_api_patch_per_s= and inproc_local_watch_events_per_s=
 * (and the others below). */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/apiserver/apiserver.h"

#define N_OPS 2000
#define N_WATCH 5000

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t sink(char *d, size_t sz, size_t nm, void *u) {
    (void)d; (void)u;
    return sz * nm;
}

struct client {
    CURL *c;
    struct curl_slist *h_json, *h_merge;
    int port;
};

static long call(struct client *cl, const char *method, const char *path,
                 const char *body, bool merge) {
    char url[512];
    long code = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", cl->port, path);
    curl_easy_setopt(cl->c, CURLOPT_URL, url);
    curl_easy_setopt(cl->c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(cl->c, CURLOPT_HTTPGET, body ? 0L : 1L);
    if (body) curl_easy_setopt(cl->c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cl->c, CURLOPT_HTTPHEADER, merge ? cl->h_merge : cl->h_json);
    if (curl_easy_perform(cl->c) == CURLE_OK)
        curl_easy_getinfo(cl->c, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static const char *const CRD =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"benchjobs.bench.aiq.dev\"},\"spec\":{\"group\":\"bench.aiq.dev\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"benchjobs\",\"kind\":\"BenchJob\"},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"required\":[\"user\"],\"properties\":{"
    "\"user\":{\"type\":\"string\"},\"gpus\":{\"type\":\"integer\",\"minimum\":0},"
    "\"replicas\":{\"type\":\"integer\",\"minimum\":1},\"model\":{\"type\":\"string\"}}},"
    "\"status\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}}}]}}";

#define BJ "/apis/bench.aiq.dev/v1/namespaces/default/benchjobs"

struct row {
    const char *op;
    int n, failed;
    double secs;
};

static void run_ops(struct client *cl, struct row *r, const char *what, const char *prefix) {
    char path[256], body[512];
    double t0 = now_s();
    r->failed = 0;
    for (int i = 0; i < r->n; i++) {
        long code = 0;
        if (!strcmp(what, "version")) {
            code = call(cl, "GET", "/version", NULL, false) == 200;
        } else if (!strcmp(what, "create")) {
            snprintf(body, sizeof body,
                     "{\"apiVersion\":\"bench.aiq.dev/v1\",\"kind\":\"BenchJob\",\"metadata\":{\"name\":\"%s%d\","
                     "\"labels\":{\"team\":\"t%d\"}},\"spec\":{\"user\":\"u%d\",\"gpus\":%d,\"replicas\":2,"
                     "\"model\":\"llama\"}}", prefix, i, i % 7, i % 13, i % 8);
            code = call(cl, "POST", BJ, body, false) == 201;
        } else if (!strcmp(what, "patch")) {
            snprintf(path, sizeof path, BJ "/%s%d", prefix, i % 500);
            snprintf(body, sizeof body, "{\"spec\":{\"gpus\":%d}}", 100 + i);
            code = call(cl, "PATCH", path, body, true) == 200;
        } else if (!strcmp(what, "status")) {
            snprintf(path, sizeof path, BJ "/%s%d/status", prefix, i % 500);
            snprintf(body, sizeof body, "{\"status\":{\"phase\":\"Queued\",\"position\":%d}}", i);
            code = call(cl, "PATCH", path, body, true) == 200;
        } else if (!strcmp(what, "get")) {
            snprintf(path, sizeof path, BJ "/%s%d", prefix, i % 500);
            code = call(cl, "GET", path, NULL, false) == 200;
        }
        if (!code) r->failed++;
    }
    r->secs = now_s() - t0;
}

/* ---- watch ---------------------------------------------------------------- */

struct watcher {
    int port;
    long long from_rv;
    volatile long lines;
    volatile int stop;
    double t_last;
};

static size_t on_watch(char *d, size_t sz, size_t nm, void *u) {
    struct watcher *w = u;
    size_t n = sz * nm;
    for (size_t i = 0; i < n; i++)
        if (d[i] == '\n') w->lines++;
    w->t_last = now_s();
    return w->stop ? 0 : n;
}

static void *watch_thread(void *arg) {
    struct watcher *w = arg;
    char url[256];
    CURL *c = curl_easy_init();
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/namespaces/default/pods?watch=true"
             "&resourceVersion=%lld&timeoutSeconds=60", w->port, w->from_rv);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    return NULL;
}

int main(void) {
    struct apisrv_config cfg = {.db_path = ":memory:", .history = 20000};
    aiq_err err;
    struct client cl;
    struct row rows[8];
    int nrows = 0;
    char dbfile[] = "/tmp/aiq-bench-api.XXXXXX";

    curl_global_init(CURL_GLOBAL_DEFAULT);
    aiq_err_clear(&err);
    apisrv *s = apisrv_start(&cfg, &err);
    if (!s) {
        fprintf(stderr, "bench_api: %s\n", err.message);
        return 1;
    }
    cl.c = curl_easy_init();
    cl.port = apisrv_port(s);
    cl.h_json = curl_slist_append(NULL, "Content-Type: application/json");
    cl.h_merge = curl_slist_append(NULL, "Content-Type: application/merge-patch+json");
    curl_easy_setopt(cl.c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(cl.c, CURLOPT_TCP_NODELAY, 1L);
    if (call(&cl, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD, false) != 201) {
        fprintf(stderr, "bench_api: CRD create failed\n");
        return 1;
    }

    rows[nrows] = (struct row){"GET /version (baseline)", N_OPS, 0, 0};
    run_ops(&cl, &rows[nrows++], "version", "");
    rows[nrows] = (struct row){"create custom resource", N_OPS, 0, 0};
    run_ops(&cl, &rows[nrows++], "create", "j");
    rows[nrows] = (struct row){"merge patch spec", N_OPS, 0, 0};
    run_ops(&cl, &rows[nrows++], "patch", "j");
    rows[nrows] = (struct row){"merge patch /status", N_OPS, 0, 0};
    run_ops(&cl, &rows[nrows++], "status", "j");
    rows[nrows] = (struct row){"get one object", N_OPS, 0, 0};
    run_ops(&cl, &rows[nrows++], "get", "j");

    /* watch: one HTTP watcher, writes through the in-process API */
    struct watcher w = {.port = cl.port, .from_rv = apisrv_resource_version(s)};
    pthread_t th;
    pthread_create(&th, NULL, watch_thread, &w);
    usleep(200 * 1000);
    double t0 = now_s();
    int wfailed = 0;
    for (int i = 0; i < N_WATCH; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"name\":\"w%d\",\"namespace\":\"default\"},\"spec\":{\"containers\":"
                 "[{\"name\":\"c\",\"image\":\"busybox\"}]}}", i);
        if (apisrv_obj_create(s, "pods", json_tokener_parse(body), NULL) != AIQ_OK) wfailed++;
    }
    double t_write = now_s() - t0;
    for (int i = 0; i < 3000 && w.lines < N_WATCH - wfailed; i++) usleep(10 * 1000);
    double t_watch = w.t_last - t0;
    long got = w.lines;
    w.stop = 1;
    apisrv_stop(s);   /* ends the watch stream */
    pthread_join(th, NULL);

    /* the same creates against a file database (WAL, synchronous=NORMAL) */
    int fd = mkstemp(dbfile);
    if (fd >= 0) close(fd);
    struct apisrv_config fcfg = {.db_path = dbfile};
    s = fd >= 0 ? apisrv_start(&fcfg, &err) : NULL;
    double file_create = 0;
    if (s) {
        cl.port = apisrv_port(s);
        curl_easy_reset(cl.c);
        curl_easy_setopt(cl.c, CURLOPT_WRITEFUNCTION, sink);
        call(&cl, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD, false);
        rows[nrows] = (struct row){"create (SQLite file)", N_OPS / 2, 0, 0};
        run_ops(&cl, &rows[nrows], "create", "f");
        file_create = rows[nrows].n / rows[nrows].secs;
        nrows++;
        apisrv_stop(s);
    }
    unlink(dbfile);
    {
        char p[64];
        snprintf(p, sizeof p, "%s-wal", dbfile);
        unlink(p);
        snprintf(p, sizeof p, "%s-shm", dbfile);
        unlink(p);
    }

    double base = rows[0].n / rows[0].secs;
    printf("local API server in process (apisrv_start), one client, micro-benchmark; both servers\n"
           "as processes: bench_api_servers\n");
    printf("%-28s %7s %7s %9s %10s %9s\n", "operation", "n", "failed", "seconds", "per_s", "vs_base");
    for (int i = 0; i < nrows; i++) {
        double ps = rows[i].n / rows[i].secs;
        printf("%-28s %7d %7d %9.3f %10.0f %9.2f\n", rows[i].op, rows[i].n, rows[i].failed,
               rows[i].secs, ps, ps / base);
    }
    double wps = t_watch > 0 ? got / t_watch : 0;
    printf("%-28s %7ld %7d %9.3f %10.0f %9.2f  (writes took %.3f s)\n", "watch events delivered", got,
           (int)(N_WATCH - got), t_watch, wps, wps / base, t_write);
    printf("inproc_local_api_baseline_per_s=%.0f\n", base);
    printf("inproc_local_api_create_per_s=%.0f\n", rows[1].n / rows[1].secs);
    printf("inproc_local_api_patch_per_s=%.0f\n", rows[2].n / rows[2].secs);
    printf("inproc_local_api_status_patch_per_s=%.0f\n", rows[3].n / rows[3].secs);
    printf("inproc_local_api_get_per_s=%.0f\n", rows[4].n / rows[4].secs);
    if (file_create > 0) printf("inproc_local_api_create_file_db_per_s=%.0f\n", file_create);
    printf("inproc_local_watch_events_per_s=%.0f\n", wps);
    curl_slist_free_all(cl.h_json);
    curl_slist_free_all(cl.h_merge);
    curl_easy_cleanup(cl.c);
    curl_global_cleanup();
    return (rows[1].failed || rows[2].failed || got < N_WATCH - wfailed) ? 1 : 0;
}
