/* test_operator_metrics.c -- Prometheus rendering and the /metrics,
 * /healthz, /readyz and /journal endpoints on an ephemeral port
 * (operator/metrics.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/version.h"
#include "operator/metrics.h"
#include "operator/store.h"
#include "test/unit/th.h"

TEST(metrics_render_series) {
    opmetrics *m = opmetrics_create();
    CHECK(m != NULL);
    opmetrics_pending_set(m, "interactive", 3);
    opmetrics_pending_set(m, "batch", 7);
    opmetrics_pending_set(m, "batch", 5); /* set, not add */
    opmetrics_admitted_add(m, 2);
    opmetrics_finished_inc(m, "Succeeded");
    opmetrics_finished_inc(m, "Succeeded");
    opmetrics_finished_inc(m, "Failed");
    opmetrics_observe_wait(m, 3);     /* le=5 */
    opmetrics_observe_wait(m, 5);     /* le=5 (bounds are inclusive) */
    opmetrics_observe_wait(m, 1e6);   /* +Inf only */
    opmetrics_observe_cycle(m, 0.002);
    opmetrics_quota_set(m, "vision", "al\"ice", "gpus", 4);
    size_t len = 0;
    char *t = opmetrics_render(m, &len);
    CHECK(t != NULL);
    CHECK_INT(strlen(t), len);
    CHECK(strstr(t, "aiq_pending_jobs{level=\"interactive\"} 3\n") != NULL);
    CHECK(strstr(t, "aiq_pending_jobs{level=\"batch\"} 5\n") != NULL);
    CHECK(strstr(t, "aiq_admitted_total 2\n") != NULL);
    CHECK(strstr(t, "aiq_finished_total{outcome=\"Succeeded\"} 2\n") != NULL);
    CHECK(strstr(t, "aiq_finished_total{outcome=\"Failed\"} 1\n") != NULL);
    CHECK(strstr(t, "aiq_wait_seconds_bucket{le=\"1\"} 0\n") != NULL);
    CHECK(strstr(t, "aiq_wait_seconds_bucket{le=\"5\"} 2\n") != NULL);
    CHECK(strstr(t, "aiq_wait_seconds_bucket{le=\"86400\"} 2\n") != NULL);
    CHECK(strstr(t, "aiq_wait_seconds_bucket{le=\"+Inf\"} 3\n") != NULL);
    CHECK(strstr(t, "aiq_wait_seconds_count 3\n") != NULL);
    CHECK(strstr(t, "aiq_cycle_seconds_bucket{le=\"0.005\"} 1\n") != NULL);
    CHECK(strstr(t, "# TYPE aiq_cycle_seconds histogram\n") != NULL);
    CHECK(strstr(t, "aiq_quota_used{group=\"vision\",user=\"al\\\"ice\",resource=\"gpus\"} 4\n") != NULL);
    CHECK(strstr(t, "aiq_leader 0\n") != NULL);
    CHECK(strstr(t, "aiq_build_info{version=\"" AIQ_RELEASE "\",git=\"") != NULL);
    free(t);

    opmetrics_pending_reset(m);
    opmetrics_quota_reset(m);
    t = opmetrics_render(m, NULL);
    CHECK(strstr(t, "aiq_pending_jobs{") == NULL);
    CHECK(strstr(t, "aiq_quota_used{") == NULL);
    free(t);
    opmetrics_free(m);
    opmetrics_free(NULL);
}

/* Writes text to a new file under dir and returns its path (static buffer
 * per slot). */
static const char *mem_file(const char *dir, const char *name, const char *text) {
    static char paths[4][512];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

/* The memory gauges an admin checks against the container's limit: RSS
 * from statm's pages, the cgroup's limit from v2 (a number or "max"),
 * else v1 (a huge value meaning none), 0 when neither says one. */
TEST(metrics_memory_gauges) {
    char dir[] = "/tmp/aiq-memXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    long ps = sysconf(_SC_PAGESIZE);
    CHECK_INT(opmetrics_resident_bytes(mem_file(dir, "statm", "2000 300 10 1 0 500 0\n")),
              300LL * ps);
    CHECK_INT(opmetrics_resident_bytes(mem_file(dir, "statm2", "garbage\n")), -1);
    CHECK_INT(opmetrics_resident_bytes("/nonexistent/statm"), -1);
    CHECK(opmetrics_resident_bytes("/proc/self/statm") > 0);
    const char *none = "/nonexistent/memory.max";
    CHECK_INT(opmetrics_memory_limit(mem_file(dir, "v2a", "536870912\n"), none), 536870912);
    CHECK_INT(opmetrics_memory_limit(mem_file(dir, "v2b", "max\n"),
                                     mem_file(dir, "v1a", "1073741824\n")), 0);
    CHECK_INT(opmetrics_memory_limit(none, mem_file(dir, "v1b", "1073741824\n")), 1073741824);
    CHECK_INT(opmetrics_memory_limit(none, mem_file(dir, "v1c", "9223372036854771712\n")), 0);
    CHECK_INT(opmetrics_memory_limit(mem_file(dir, "v2c", "lots\n"), none), 0);
    CHECK_INT(opmetrics_memory_limit(none, none), 0);
    const char *names[] = {"statm", "statm2", "v2a", "v2b", "v2c", "v1a", "v1b", "v1c"};
    char p[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    /* And both are rendered: this process's RSS is readable. */
    opmetrics *m = opmetrics_create();
    char *t = m ? opmetrics_render(m, NULL) : NULL;
    CHECK(t != NULL && strstr(t, "\naiq_memory_resident_bytes ") != NULL);
    CHECK(t != NULL && strstr(t, "\naiq_memory_limit_bytes ") != NULL);
    free(t);
    opmetrics_free(m);
}

struct body {
    char buf[8192];
    size_t len;
};

static size_t collect(char *p, size_t sz, size_t n, void *ud) {
    struct body *b = ud;
    size_t k = sz * n;
    if (k > sizeof b->buf - 1 - b->len)
        k = sizeof b->buf - 1 - b->len;
    memcpy(b->buf + b->len, p, k);
    b->len += k;
    b->buf[b->len] = '\0';
    return sz * n;
}

static long get(int port, const char *path, struct body *b) {
    char url[128];
    long code = 0;
    CURL *c = curl_easy_init();
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    memset(b, 0, sizeof *b);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code;
}

TEST(metrics_http_endpoints) {
    opmetrics *m = opmetrics_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(opmetrics_listen(m, "127.0.0.1:0", &e), AIQ_OK);
    int port = opmetrics_port(m);
    CHECK(port > 0);
    CHECK_INT(opmetrics_listen(m, "127.0.0.1:0", NULL), AIQ_ESTATE);
    struct body b;
    CHECK_INT(get(port, "/healthz", &b), 200);
    CHECK_INT(get(port, "/readyz", &b), 503);
    opmetrics_set_ready(m, true);
    CHECK_INT(get(port, "/readyz", &b), 200);
    opmetrics_set_leader(m, true);
    CHECK_INT(get(port, "/metrics", &b), 200);
    CHECK(strstr(b.buf, "aiq_leader 1\n") != NULL);
    CHECK_INT(get(port, "/nope", &b), 404);
    opmetrics_free(m);
}

/* /journal on the metrics port answers from the opapi handle once set,
 * with the job's decisions found by NS/NAME alone, and is a 404 before. */
TEST(metrics_serves_journal) {
    char dir[64], path[96], p[128];
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(dir, sizeof dir, "/tmp/aiq-mj.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/op.db", dir);
    store *s = store_open(path, NULL, &e);
    CHECK(s != NULL);
    struct aiq_aijob j = {0};
    j.meta.namespace_ = (char *)"team-a";
    j.meta.name = (char *)"train";
    j.meta.uid = (char *)"u-1";
    j.spec.user = (char *)"alice";
    CHECK_INT(store_upsert_job(s, &j, NULL, &e), AIQ_OK);
    struct store_decision d = {.cycle = 3, .t = 100, .job_uid = "u-1", .action = "wait",
                               .reason = "QuotaFull", .message = "waiting for 2 GPUs"};
    CHECK_INT(store_journal_decision(s, &d, &e), AIQ_OK);
    opapi *api = NULL;
    CHECK_INT(opapi_create(path, &api, &e), AIQ_OK);
    opmetrics *m = opmetrics_create();
    CHECK_INT(opmetrics_listen(m, "127.0.0.1:0", &e), AIQ_OK);
    int port = opmetrics_port(m);
    struct body b;
    CHECK_INT(get(port, "/journal?job=team-a/train", &b), 404);
    opmetrics_set_api(m, api);
    CHECK_INT(get(port, "/journal?job=team-a/train", &b), 200);
    CHECK(strstr(b.buf, "\"action\":\"wait\"") != NULL);
    CHECK(strstr(b.buf, "\"reason\":\"QuotaFull\"") != NULL);
    CHECK_INT(get(port, "/journal?job=noslash", &b), 400);
    CHECK(strstr(b.buf, "noslash") != NULL);
    CHECK_INT(get(port, "/journal?job=team-a/train&limit=x%22y", &b), 400);
    CHECK(strstr(b.buf, "\"limit: expected a positive integer, got \\\"x\\\"y\\\"\"") != NULL);
    CHECK_INT(get(port, "/journal?job=team-a/other", &b), 200);
    CHECK(strstr(b.buf, "\"items\":[]") != NULL);
    CHECK_INT(get(port, "/metrics", &b), 200);
    opmetrics_free(m);
    opapi_free(api);
    store_close(s);
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
    rmdir(dir);
}

TEST(metrics_bad_addr_named) {
    opmetrics *m = opmetrics_create();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(opmetrics_listen(m, "localhost-8080", &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "\"localhost-8080\"") != NULL);
    aiq_err_clear(&e);
    CHECK_INT(opmetrics_listen(m, "127.0.0.1:99999", &e), AIQ_EINVAL);
    CHECK_INT(opmetrics_port(m), 0);
    opmetrics_free(m);
}

TEST(metrics_nodes_excluded_and_foreign_pods) {
    opmetrics *m = opmetrics_create();
    opmetrics_nodes_excluded_set(m, "MissingGPUMemory", 2);
    opmetrics_nodes_excluded_set(m, "TooManyGPUs", 0);
    opmetrics_nodes_excluded_set(m, "MissingGPUMemory", 1); /* set, not added */
    opmetrics_foreign_pods_set(m, 7);
    char *t = opmetrics_render(m, NULL);
    CHECK(t != NULL);
    CHECK(strstr(t, "# TYPE aiq_nodes_excluded gauge\n") != NULL);
    CHECK(strstr(t, "aiq_nodes_excluded{reason=\"MissingGPUMemory\"} 1\n") != NULL);
    CHECK(strstr(t, "aiq_nodes_excluded{reason=\"TooManyGPUs\"} 0\n") != NULL);
    CHECK(strstr(t, "aiq_foreign_pods 7\n") != NULL);
    free(t);
    opmetrics_free(m);
}

/* The cache's frozen entries, thaws and freezes (cache.h) as the
 * operator last set them. */
TEST(metrics_cache_frozen) {
    opmetrics *m = opmetrics_create();
    opmetrics_cache_set(m, 20000, 3, 20003);
    char *t = opmetrics_render(m, NULL);
    CHECK(t != NULL);
    CHECK(t && strstr(t, "# TYPE aiq_cache_frozen_objects gauge\naiq_cache_frozen_objects 20000\n"));
    CHECK(t && strstr(t, "# TYPE aiq_cache_thaws_total counter\naiq_cache_thaws_total 3\n"));
    CHECK(t && strstr(t, "# TYPE aiq_cache_freezes_total counter\naiq_cache_freezes_total 20003\n"));
    free(t);
    opmetrics_free(m);
}
