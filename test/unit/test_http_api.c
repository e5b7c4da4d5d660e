/* test_http_api.c -- the read-only /journal endpoint (operator/http_api.c):
 * a job's decisions (by uid) and input events (by ns/name) newest first,
 * the limit, bad requests named, and the same answers over HTTP from its
 * own server while the store stays open for writing. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "operator/http_api.h"
#include "operator/kube_http.h"
#include "operator/kubeconfig.h"
#include "operator/store.h"
#include "test/unit/th.h"

struct fx {
    char dir[64], path[96];
    store *s;
};

/* A store file with journal entries for two jobs. */
static void fx_init(struct fx *f) {
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(f->dir, sizeof f->dir, "/tmp/aiq-api.XXXXXX");
    CHECK(mkdtemp(f->dir) != NULL);
    snprintf(f->path, sizeof f->path, "%s/op.db", f->dir);
    f->s = store_open(f->path, NULL, &e);
    CHECK(f->s != NULL);
    CHECK_INT(store_journal_event(f->s, 100, STORE_EV_JOB_ARRIVAL, "ns/a", "{\"gpus\":2}", &e), AIQ_OK);
    CHECK_INT(store_journal_event(f->s, 100, STORE_EV_JOB_ARRIVAL, "ns/b", NULL, &e), AIQ_OK);
    for (int i = 0; i < 5; i++) {
        struct store_decision d = {.cycle = i + 1, .t = 101 + i, .job_uid = "uid-a", .action = "wait",
                                   .level = 0, .position = 2, .score = 1.5, .reason = "QuotaFull",
                                   .message = "waiting for 2 GPUs"};
        CHECK_INT(store_journal_decision(f->s, &d, &e), AIQ_OK);
        d.job_uid = "uid-b";
        d.position = 1;
        CHECK_INT(store_journal_decision(f->s, &d, &e), AIQ_OK);
    }
    struct store_decision d = {.cycle = 6, .t = 110, .job_uid = "uid-a", .action = "admit",
                               .position = 1, .score = 2};
    CHECK_INT(store_journal_decision(f->s, &d, &e), AIQ_OK);
}

static void fx_deinit(struct fx *f) {
    char p[128];
    store_close(f->s);
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", f->path, sfx[i]);
        unlink(p);
    }
    rmdir(f->dir);
}

static json_object *answer(opapi *a, const char *job, const char *uid, int limit) {
    char *body = NULL;
    size_t len = 0;
    aiq_err e;
    aiq_err_clear(&e);
    if (opapi_journal_json(a, job, uid, limit, &body, &len, &e) != AIQ_OK)
        return NULL;
    json_object *o = json_tokener_parse(body);
    CHECK_INT(strlen(body), len);
    free(body);
    return o;
}

static const char *item_str(json_object *doc, size_t i, const char *k) {
    json_object *items = NULL, *v = NULL;
    json_object_object_get_ex(doc, "items", &items);
    json_object *it = json_object_array_get_idx(items, i);
    return it && json_object_object_get_ex(it, k, &v) && v ? json_object_get_string(v) : NULL;
}

static size_t nitems(json_object *doc) {
    json_object *items = NULL;
    json_object_object_get_ex(doc, "items", &items);
    return items ? json_object_array_length(items) : 0;
}

TEST(journal_of_one_job_newest_first) {
    struct fx f;
    opapi *a = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    fx_init(&f);
    CHECK_INT(opapi_create(f.path, &a, &e), AIQ_OK);
    json_object *doc = answer(a, "ns/a", "uid-a", 0);
    CHECK(doc != NULL);
    CHECK_INT(nitems(doc), 7); /* 6 decisions + its arrival, under the default 10 */
    CHECK_STR(item_str(doc, 0, "action"), "admit");
    CHECK_STR(item_str(doc, 0, "type"), "decision");
    CHECK_STR(item_str(doc, 1, "reason"), "QuotaFull");
    CHECK_STR(item_str(doc, 1, "cycle"), "5");
    CHECK_STR(item_str(doc, 6, "type"), "event");
    CHECK_STR(item_str(doc, 6, "kind"), "job_arrival");
    CHECK_STR(item_str(doc, 6, "payload"), "{ \"gpus\": 2 }");
    json_object_put(doc);
    /* limit cuts the oldest; other jobs' entries never show */
    doc = answer(a, "ns/a", "uid-a", 2);
    CHECK_INT(nitems(doc), 2);
    CHECK_STR(item_str(doc, 1, "cycle"), "5");
    json_object_put(doc);
    doc = answer(a, "ns/b", "uid-b", 100);
    CHECK_INT(nitems(doc), 6);
    CHECK_STR(item_str(doc, 0, "position"), "1");
    json_object_put(doc);
    /* without a uid and no stored job: only the events under the key */
    doc = answer(a, "ns/a", NULL, 10);
    CHECK_INT(nitems(doc), 1);
    json_object_put(doc);
    /* once the job is stored, NS/NAME alone finds its decisions (the
     * newest job under that name: an older uid-old stays out) */
    struct aiq_aijob j = {0};
    j.meta.namespace_ = (char *)"ns";
    j.meta.name = (char *)"a";
    j.meta.uid = (char *)"uid-old";
    j.meta.creation_time = 50;
    j.spec.user = (char *)"alice";
    CHECK_INT(store_upsert_job(f.s, &j, NULL, &e), AIQ_OK);
    struct store_decision d = {.cycle = 1, .t = 60, .job_uid = "uid-old", .action = "admit"};
    CHECK_INT(store_journal_decision(f.s, &d, &e), AIQ_OK);
    j.meta.uid = (char *)"uid-a";
    j.meta.creation_time = 99;
    CHECK_INT(store_upsert_job(f.s, &j, NULL, &e), AIQ_OK);
    doc = answer(a, "ns/a", NULL, 10);
    CHECK_INT(nitems(doc), 7);
    CHECK_STR(item_str(doc, 0, "action"), "admit");
    CHECK_STR(item_str(doc, 0, "cycle"), "6");
    CHECK_STR(item_str(doc, 6, "kind"), "job_arrival");
    json_object_put(doc);
    doc = answer(a, "ns/b", "", 10); /* "" is no uid; ns/b has no stored job */
    CHECK_INT(nitems(doc), 1);
    json_object_put(doc);
    opapi_free(a);
    opapi_free(NULL);
    fx_deinit(&f);
}

TEST(journal_bad_requests_and_missing_db) {
    struct fx f;
    opapi *a = NULL;
    char *body = NULL;
    size_t len = 0;
    aiq_err e;
    fx_init(&f);
    aiq_err_clear(&e);
    CHECK_INT(opapi_create(f.path, &a, &e), AIQ_OK);
    CHECK_INT(opapi_journal_json(a, "noslash", NULL, 1, &body, &len, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "\"noslash\"") != NULL);
    CHECK(body == NULL);
    aiq_err_clear(&e);
    CHECK_INT(opapi_journal_json(a, NULL, NULL, 1, &body, &len, &e), AIQ_EINVAL);
    opapi_free(a);
    aiq_err_clear(&e);
    CHECK_INT(opapi_create("/nonexistent/dir/op.db", &a, &e), AIQ_EDB);
    CHECK(a == NULL);
    CHECK(strstr(e.message, "/nonexistent/dir/op.db") != NULL);
    fx_deinit(&f);
}

TEST(journal_over_http_while_the_store_writes) {
    struct fx f;
    opapi *a = NULL;
    struct kube_client *kc = NULL;
    struct kube_config cfg;
    char url[64];
    json_object *o = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    fx_init(&f);
    CHECK_INT(opapi_create(f.path, &a, &e), AIQ_OK);
    CHECK_INT(opapi_port(a), 0);
    CHECK_INT(opapi_listen(a, "127.0.0.1:0", &e), AIQ_OK);
    CHECK(opapi_port(a) > 0);
    CHECK_INT(opapi_listen(a, "127.0.0.1:0", &e), AIQ_ESTATE);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", opapi_port(a));
    memset(&cfg, 0, sizeof cfg);
    cfg.server = url;
    aiq_err_clear(&e);
    CHECK_INT(kube_client_create(&cfg, NULL, &kc, &e), AIQ_OK);
    /* a decision written after the API opened shows up */
    struct store_decision d = {.cycle = 7, .t = 120, .job_uid = "uid-a", .action = "admit", .position = 1};
    CHECK_INT(store_journal_decision(f.s, &d, &e), AIQ_OK);
    CHECK_INT(kube_get(kc, "/journal?job=ns%2Fa&uid=uid-a&limit=3", &o, &e), AIQ_OK);
    CHECK_INT(nitems(o), 3);
    CHECK_STR(item_str(o, 0, "cycle"), "7");
    json_object_put(o);
    o = NULL;
    aiq_err_clear(&e);
    CHECK(kube_get(kc, "/journal?job=x", &o, &e) != AIQ_OK);
    CHECK_INT(e.http_status, 400);
    aiq_err_clear(&e);
    CHECK(kube_get(kc, "/journal?job=ns%2Fa&limit=zero", &o, &e) != AIQ_OK);
    CHECK_INT(e.http_status, 400);
    aiq_err_clear(&e);
    CHECK(kube_get(kc, "/metrics", &o, &e) != AIQ_OK);
    CHECK_INT(e.http_status, 404);
    kube_client_free(kc);
    opapi_free(a);
    aiq_err_clear(&e);
    CHECK_INT(opapi_create(f.path, &a, &e), AIQ_OK);
    CHECK_INT(opapi_listen(a, "nohost", &e), AIQ_EINVAL);
    opapi_free(a);
    fx_deinit(&f);
}

TEST(listen_addresses_parse_or_fail) {
    struct sockaddr_in sa;
    CHECK_INT(opapi_parse_addr("127.0.0.1:8080", &sa), 0);
    CHECK_INT(ntohs(sa.sin_port), 8080);
    CHECK_INT(ntohl(sa.sin_addr.s_addr), 0x7f000001);
    CHECK_INT(opapi_parse_addr(":9090", &sa), 0);
    CHECK_INT(ntohl(sa.sin_addr.s_addr), 0); /* any */
    CHECK_INT(opapi_parse_addr("localhost:0", &sa), 0);
    CHECK_INT(ntohl(sa.sin_addr.s_addr), 0x7f000001);
    const char *bad[] = {NULL, "", "8080", "127.0.0.1:", "127.0.0.1:65536",
                         "127.0.0.1:-1", "127.0.0.1:80x", "example.org:80", "::1:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(opapi_parse_addr(bad[i], &sa), -1);
}
