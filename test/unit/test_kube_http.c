/* test_kube_http.c -- the Kubernetes HTTP client against an in-test
 * server: methods, content types, bearer token, error mapping that keeps
 * the Status, body cap, timeout, 409 retry, fault injection, pool under
 * concurrency, path building. */
#include "test/unit/th.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "operator/kube_http.h"
#include "test/unit/kube_testsrv.h"

/* gzip of {"kind":"Gz","items":[{"n":0},...,{"n":199}]} (1,913 bytes). */
static const unsigned char gz_list[] = {
    0x1f,0x8b,0x08,0x00,0x00,0x00,0x00,0x00,0x02,0xff,0x4d,0xd5,0x3d,0x6e,0xdd,0x30,
    0x14,0x05,0xe1,0xbd,0xa8,0x76,0xa1,0x43,0x52,0xfc,0x79,0x1b,0xc8,0x22,0x02,0x77,
    0x49,0x61,0x04,0x76,0xe3,0x54,0x31,0xde,0xde,0x03,0x04,0x9a,0x61,0xaa,0xdb,0xcd,
    0x15,0x24,0x7e,0xd4,0xd7,0xf1,0xeb,0xed,0xe3,0xc7,0xf1,0x38,0xbe,0xfd,0x39,0x5e,
    0x8e,0xb7,0xdf,0x3f,0xdf,0x3f,0x8f,0xc7,0xf7,0xaf,0xe3,0xe3,0x78,0x9c,0xcf,0x97,
    0x7f,0x33,0xf7,0x2c,0xf7,0xac,0xf7,0x6c,0xf7,0xbc,0xee,0xd9,0xef,0x39,0xee,0x39,
    0xef,0xb9,0xe8,0x18,0xa4,0x18,0x92,0xa1,0x19,0xa2,0xa1,0x1a,0xb2,0xa1,0x1b,0xc2,
    0xa1,0x5c,0x28,0x17,0x9f,0x95,0x72,0xa1,0x5c,0x28,0x17,0xca,0x85,0x72,0xa1,0x5c,
    0x28,0x17,0xca,0x95,0x72,0xa5,0x5c,0x7d,0x0d,0x94,0x2b,0xe5,0x4a,0xb9,0x52,0xae,
    0x94,0x2b,0xe5,0x4a,0xb9,0x51,0x6e,0x94,0x1b,0xe5,0xe6,0x1b,0xa6,0xdc,0x28,0x37,
    0xca,0x8d,0x72,0xa3,0xdc,0x28,0x5f,0x94,0x2f,0xca,0x17,0xe5,0x8b,0xf2,0xe5,0xc7,
    0xa3,0x7c,0x51,0xbe,0x28,0x5f,0x94,0x2f,0xca,0x9d,0x72,0xa7,0xdc,0x29,0x77,0xca,
    0x9d,0x72,0xf7,0x5c,0x50,0xee,0x94,0x3b,0xe5,0x4e,0x79,0x50,0x1e,0x94,0x07,0xe5,
    0x41,0x79,0x50,0x1e,0x94,0x87,0x47,0x8e,0xf2,0xa0,0x3c,0x28,0x4f,0xca,0x93,0xf2,
    0xa4,0x3c,0x29,0x4f,0xca,0x93,0xf2,0xa4,0x3c,0x3d,0xcd,0x94,0x27,0xe5,0x45,0x79,
    0x51,0x5e,0x94,0x17,0xe5,0x45,0x79,0x51,0x5e,0x94,0x17,0xe5,0x25,0x94,0x2d,0x45,
    0x2a,0xa7,0x56,0x4e,0xb1,0x9c,0x6a,0x39,0xe5,0x72,0xea,0xe5,0x14,0xcc,0xa9,0x98,
    0x53,0x32,0xa7,0x3b,0xfe,0xe3,0xe8,0x8e,0x0d,0x72,0x8b,0xdc,0x24,0xb7,0xc9,0x8d,
    0x72,0xab,0xdc,0x2c,0x75,0x19,0x61,0xa6,0x6c,0xf3,0xee,0xd0,0x66,0xc4,0x19,0x75,
    0x46,0x9e,0xd1,0x67,0x04,0x1a,0x85,0x46,0xa2,0xd1,0x68,0xea,0xbe,0x58,0xdc,0x21,
    0xd3,0xe8,0x34,0x42,0x8d,0x52,0x23,0xd5,0x68,0x35,0x62,0x8d,0x5a,0x23,0xd7,0xb4,
    0x7d,0x7b,0xb9,0x43,0xb1,0x91,0x6c,0x34,0x1b,0xd1,0x46,0xb5,0x91,0x6d,0x74,0x1b,
    0xe1,0x46,0xb9,0xb9,0xf6,0x15,0xe9,0x0e,0xf1,0x46,0xbd,0x91,0x6f,0xf4,0x1b,0x01,
    0x47,0xc1,0x91,0x70,0x34,0x1c,0x11,0xa7,0xef,0x7b,0xd8,0x1d,0x3a,0x8e,0x90,0xa3,
    0xe4,0x48,0x39,0x5a,0x8e,0x98,0xa3,0xe6,0xc8,0x39,0x7a,0xce,0xd8,0x97,0xbd,0x3b,
    0x24,0x1d,0x4d,0x47,0xd4,0x51,0x75,0x64,0x1d,0x5d,0x47,0xd8,0x51,0x76,0xa4,0x9d,
    0xb9,0xff,0x28,0xee,0x50,0x77,0xe4,0x1d,0x7d,0x47,0xe0,0x51,0x78,0x24,0x1e,0x8d,
    0x47,0xe4,0x51,0x79,0xd6,0xfe,0x6d,0xad,0xe7,0xeb,0xf3,0x2f,0x35,0x48,0xef,0xc6,
    0x79,0x07,0x00,0x00};

struct http_state {
    int patch_conflicts; /* PATCHes to answer with 409 before accepting */
    int rv;              /* resourceVersion served by GET /obj */
};

static void route(struct tsrv *s, const struct tsrv_req *r, struct tsrv_resp *o) {
    struct http_state *st = s->ud;
    static char buf[512];
    if (strcmp(r->path, "/ok") == 0) {
        o->body = "{\"kind\":\"Thing\",\"metadata\":{\"name\":\"x\"}}";
    } else if (strcmp(r->path, "/echo") == 0) {
        o->body = r->body[0] ? r->body : "{}";
        o->status = strcmp(r->method, "POST") == 0 ? 201 : 200;
    } else if (strcmp(r->path, "/notfound") == 0) {
        o->status = 404;
        o->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                  "\"reason\":\"NotFound\",\"code\":404,\"message\":\"aijobs.aiq.dev \\\"x\\\" not found\"}";
    } else if (strcmp(r->path, "/conflict") == 0) {
        o->status = 409;
        o->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Conflict\",\"code\":409,"
                  "\"message\":\"Operation cannot be fulfilled on aijobs.aiq.dev \\\"x\\\": the object has been modified\"}";
    } else if (strcmp(r->path, "/exists") == 0) {
        o->status = 409;
        o->body = "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"code\":409,\"message\":\"pods \\\"p\\\" already exists\"}";
    } else if (strcmp(r->path, "/invalid") == 0) {
        o->status = 422;
        o->body = "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"code\":422,\"message\":\"AIJob.aiq.dev \\\"j\\\" is invalid: spec.gpus: must be >= 0\","
                  "\"details\":{\"kind\":\"AIJob\",\"causes\":[{\"reason\":\"FieldValueInvalid\",\"field\":\"spec.gpus\",\"message\":\"must be >= 0\"}]}}";
    } else if (strcmp(r->path, "/gone") == 0) {
        o->status = 410;
        o->body = "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,\"message\":\"too old resource version: 5 (90)\"}";
    } else if (strcmp(r->path, "/forbidden") == 0) {
        o->status = 403;
        o->body = "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"code\":403,\"message\":\"pods is forbidden: User \\\"x\\\" cannot list\"}";
    } else if (strcmp(r->path, "/plain500") == 0) {
        o->status = 500;
        o->ctype = "text/plain";
        o->body = "internal\nboom";
    } else if (strcmp(r->path, "/big") == 0) {
        static char big[100000];
        memset(big, 'a', sizeof big - 1);
        big[0] = '"';
        big[sizeof big - 2] = '"';
        o->body = big;
    } else if (strcmp(r->path, "/slow") == 0) {
        o->delay_ms = 2000;
        o->body = "{}";
    } else if (strcmp(r->path, "/gzip") == 0) {
        o->body = (const char *)gz_list;
        o->body_len = sizeof gz_list;
        o->encoding = "gzip";
    } else if (strcmp(r->path, "/badjson") == 0) {
        o->body = "{\"a\":";
    } else if (strcmp(r->path, "/obj") == 0 || strcmp(r->path, "/obj/status") == 0) {
        pthread_mutex_lock(&s->mu);
        if (strcmp(r->method, "GET") == 0) {
            snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"o\",\"resourceVersion\":\"%d\"},\"spec\":{\"n\":%d}}",
                     st->rv, st->rv);
            o->body = buf;
        } else if (st->patch_conflicts > 0) {
            st->patch_conflicts--;
            st->rv++;
            o->status = 409;
            o->body = "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409,\"message\":\"the object has been modified\"}";
        } else {
            o->body = r->body;
        }
        pthread_mutex_unlock(&s->mu);
    } else {
        o->status = 404;
        o->body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404,\"message\":\"no route\"}";
    }
}

static struct kube_client *client_for(struct tsrv *s, const struct kube_client_opts *o) {
    struct kube_config cfg;
    struct kube_client *c = NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = s->url;
    cfg.token = "s3cret-token";
    kube_client_create(&cfg, o, &c, NULL);
    return c;
}

TEST(get_sends_bearer_and_parses) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client *c = client_for(&s, NULL);
    json_object *o = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/ok", &o, &e), AIQ_OK);
    CHECK_STR(json_object_get_string(json_object_object_get(o, "kind")), "Thing");
    struct tsrv_req r = tsrv_log(&s, 0);
    CHECK_STR(r.method, "GET");
    CHECK_STR(r.auth, "Bearer s3cret-token");
    CHECK_INT(kube_client_requests(c), 1);
    json_object_put(o);
    kube_client_free(c);
    tsrv_stop(&s);
}

TEST(write_methods_and_content_types) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client *c = client_for(&s, NULL);
    json_object *body = json_tokener_parse("{\"spec\":{\"gpus\":2}}");
    json_object *o = NULL;
    aiq_err e;

    aiq_err_clear(&e);
    CHECK_INT(kube_create(c, "/echo", body, &o, &e), AIQ_OK);
    CHECK_INT(json_object_get_int(json_object_object_get(json_object_object_get(o, "spec"), "gpus")), 2);
    json_object_put(o);
    CHECK_INT(kube_update(c, "/echo", body, NULL, &e), AIQ_OK);
    CHECK_INT(kube_patch(c, "/echo", KUBE_PATCH_MERGE, body, NULL, &e), AIQ_OK);
    json_object *jp = json_tokener_parse("[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]");
    CHECK_INT(kube_patch(c, "/echo", KUBE_PATCH_JSON, jp, NULL, &e), AIQ_OK);
    CHECK_INT(kube_patch(c, "/echo", KUBE_PATCH_STRATEGIC, body, NULL, &e), AIQ_OK);
    CHECK_INT(kube_delete(c, "/echo", "Background", NULL, &e), AIQ_OK);

    struct tsrv_req r = tsrv_log(&s, 0);
    CHECK_STR(r.method, "POST");
    CHECK_STR(r.ctype, "application/json");
    CHECK_STR(r.body, "{\"spec\":{\"gpus\":2}}");
    r = tsrv_log(&s, 1);
    CHECK_STR(r.method, "PUT");
    r = tsrv_log(&s, 2);
    CHECK_STR(r.method, "PATCH");
    CHECK_STR(r.ctype, "application/merge-patch+json");
    r = tsrv_log(&s, 3);
    CHECK_STR(r.ctype, "application/json-patch+json");
    CHECK_STR(r.body, "[{\"op\":\"remove\",\"path\":\"\\/spec\\/schedulingGates\"}]");
    r = tsrv_log(&s, 4);
    CHECK_STR(r.ctype, "application/strategic-merge-patch+json");
    r = tsrv_log(&s, 5);
    CHECK_STR(r.method, "DELETE");
    CHECK_STR(r.body, "{\"propagationPolicy\":\"Background\"}");

    /* A create whose object the caller keeps as text (the operator's
     * queued gated pods): sent byte for byte, the reply parsed. */
    const char *txt = "{\"metadata\":{\"name\":\"p-0\"},\"spec\":{\"gpus\":3}}";
    o = NULL;
    CHECK_INT(kube_create_text(c, "/echo", txt, strlen(txt), &o, &e), AIQ_OK);
    CHECK_INT(json_object_get_int(json_object_object_get(json_object_object_get(o, "spec"), "gpus")), 3);
    json_object_put(o);
    r = tsrv_log(&s, 6);
    CHECK_STR(r.method, "POST");
    CHECK_STR(r.ctype, "application/json");
    CHECK_STR(r.body, txt);
    /* No text is a caller's error, named, and nothing is sent. */
    aiq_err_clear(&e);
    CHECK_INT(kube_create_text(c, "/echo", NULL, 0, NULL, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "no body") != NULL);
    CHECK_INT(tsrv_nlog(&s), 7);
    json_object_put(jp);
    json_object_put(body);
    kube_client_free(c);
    tsrv_stop(&s);
}

/* One error case: path, expected rc, status, reason, message fragment. */
static void check_err(struct kube_client *c, const char *path, aiq_rc want, int status,
                      const char *reason, const char *msg) {
    json_object *o = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, path, &o, &e), want);
    CHECK(o == NULL);
    CHECK_INT(e.code, want);
    CHECK_INT(e.http_status, status);
    CHECK_STR(e.reason, reason);
    if (!CHECK(strstr(e.message, msg) != NULL)) fprintf(stderr, "    message: %s\n", e.message);
}

TEST(errors_keep_status_reason_and_message) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client *c = client_for(&s, NULL);
    check_err(c, "/notfound", AIQ_ENOTFOUND, 404, "NotFound", "aijobs.aiq.dev \"x\" not found");
    check_err(c, "/conflict", AIQ_ECONFLICT, 409, "Conflict", "the object has been modified");
    check_err(c, "/exists", AIQ_EEXIST, 409, "AlreadyExists", "pods \"p\" already exists");
    check_err(c, "/gone", AIQ_EGONE, 410, "Expired", "too old resource version: 5 (90)");
    check_err(c, "/forbidden", AIQ_EAUTH, 403, "Forbidden", "cannot list");
    check_err(c, "/plain500", AIQ_EHTTP, 500, "", "HTTP 500 from GET /plain500: internal boom");
    check_err(c, "/invalid", AIQ_EINVAL, 422, "Invalid", "spec.gpus: must be >= 0");
    aiq_err e;
    aiq_err_clear(&e);
    json_object *o = NULL;
    kube_get(c, "/invalid", &o, &e);
    CHECK_STR(e.field, "spec.gpus");
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/badjson", &o, &e), AIQ_EPARSE);
    CHECK(strstr(e.message, "GET /badjson: response:") != NULL);
    kube_client_free(c);
    tsrv_stop(&s);
}

TEST(body_cap_and_timeout_and_refused) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client_opts opts = {.max_body = 50000, .timeout_ms = 300};
    struct kube_client *c = client_for(&s, &opts);
    json_object *o = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/big", &o, &e), AIQ_ETOOBIG);
    CHECK(strstr(e.message, "50000 byte cap") != NULL);
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/slow", &o, &e), AIQ_ETIMEOUT);
    /* The handle still works after an aborted transfer. */
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/ok", &o, &e), AIQ_OK);
    json_object_put(o);
    kube_client_free(c);
    int port = s.port;
    tsrv_stop(&s);

    struct kube_config cfg;
    char url[64];
    memset(&cfg, 0, sizeof cfg);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    cfg.server = url;
    CHECK_INT(kube_client_create(&cfg, NULL, &c, NULL), AIQ_OK);
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/ok", &o, &e), AIQ_EIO);
    CHECK(strstr(e.message, "GET /ok:") != NULL);
    kube_client_free(c);
}

struct mut_ud {
    int calls;
    char seen_rv[8][16];
};

static aiq_rc bump(void *ud, json_object *cur, json_object **patch) {
    struct mut_ud *m = ud;
    const char *rv = json_object_get_string(
        json_object_object_get(json_object_object_get(cur, "metadata"), "resourceVersion"));
    if (m->calls < 8) snprintf(m->seen_rv[m->calls], sizeof m->seen_rv[0], "%s", rv ? rv : "");
    m->calls++;
    *patch = json_tokener_parse("{\"status\":{\"phase\":\"Queued\"}}");
    return AIQ_OK;
}

static aiq_rc no_change(void *ud, json_object *cur, json_object **patch) {
    (void)cur;
    ((struct mut_ud *)ud)->calls++;
    *patch = NULL;
    return AIQ_OK;
}

TEST(patch_retry_rereads_on_conflict) {
    struct tsrv s;
    struct http_state st = {.patch_conflicts = 2, .rv = 7};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client *c = client_for(&s, NULL);
    struct mut_ud m = {0};
    json_object *o = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_patch_retry(c, "/obj/status", bump, &m, 5, &o, &e), AIQ_OK);
    CHECK_INT(m.calls, 3);
    CHECK_STR(m.seen_rv[0], "7");
    CHECK_STR(m.seen_rv[2], "9"); /* re-read after each conflict */
    /* The patch carries the resourceVersion it was computed from. */
    struct tsrv_req r = tsrv_log(&s, 5);
    CHECK_STR(r.method, "PATCH");
    CHECK_STR(r.body, "{\"status\":{\"phase\":\"Queued\"},\"metadata\":{\"resourceVersion\":\"9\"}}");
    CHECK_STR(json_object_get_string(json_object_object_get(json_object_object_get(o, "status"), "phase")),
              "Queued");
    json_object_put(o);

    /* Bounded: conflicts beyond max_tries come back as AIQ_ECONFLICT. */
    st.patch_conflicts = 10;
    m.calls = 0;
    aiq_err_clear(&e);
    CHECK_INT(kube_patch_retry(c, "/obj", bump, &m, 3, NULL, &e), AIQ_ECONFLICT);
    CHECK_INT(m.calls, 3);
    CHECK_INT(e.http_status, 409);
    CHECK_STR(e.reason, "Conflict");

    /* No change: no PATCH sent, current object returned. */
    int before = tsrv_nlog(&s);
    m.calls = 0;
    aiq_err_clear(&e);
    CHECK_INT(kube_patch_retry(c, "/obj", no_change, &m, 3, &o, &e), AIQ_OK);
    CHECK_INT(tsrv_nlog(&s), before + 1);
    CHECK(o != NULL);
    json_object_put(o);

    /* A missing object is not retried. */
    m.calls = 0;
    aiq_err_clear(&e);
    CHECK_INT(kube_patch_retry(c, "/notfound", bump, &m, 3, NULL, &e), AIQ_ENOTFOUND);
    CHECK_INT(m.calls, 0);
    kube_client_free(c);
    tsrv_stop(&s);
}

TEST(token_file_and_fault_injection) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    char tf[] = "/tmp/aiq-token-XXXXXX";
    int fd = mkstemp(tf);
    CHECK(fd >= 0);
    CHECK(write(fd, "rotating-1\n", 11) == 11);
    close(fd);
    struct kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = s.url;
    cfg.token_file = tf;
    struct kube_client *c = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_client_create(&cfg, NULL, &c, &e), AIQ_OK);
    json_object *o = NULL;
    CHECK_INT(kube_get(c, "/ok", &o, &e), AIQ_OK);
    json_object_put(o);
    CHECK_STR(tsrv_log(&s, 0).auth, "Bearer rotating-1");

    kube_client_inject_fault(c, 2);
    int fails = 0;
    for (int i = 0; i < 6; i++) {
        aiq_err_clear(&e);
        aiq_rc rc = kube_get(c, "/ok", &o, &e);
        if (rc == AIQ_EIO && strstr(e.message, "injected fault")) fails++;
        else json_object_put(o);
    }
    CHECK_INT(fails, 3);
    CHECK_INT(tsrv_nlog(&s), 4); /* faults never reach the server */
    kube_client_inject_fault(c, 0);
    kube_client_free(c);
    unlink(tf);

    /* A token file that cannot be read fails the request, naming it. */
    cfg.token_file = "/nonexistent/token";
    CHECK_INT(kube_client_create(&cfg, NULL, &c, &e), AIQ_OK);
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/ok", &o, &e), AIQ_EIO);
    CHECK(strstr(e.message, "/nonexistent/token") != NULL);
    kube_client_free(c);
    tsrv_stop(&s);
}

struct par {
    struct kube_client *c;
    int ok;
};

static void *par_main(void *arg) {
    struct par *p = arg;
    for (int i = 0; i < 20; i++) {
        json_object *o = NULL;
        if (kube_get(p->c, "/ok", &o, NULL) == AIQ_OK) p->ok++;
        json_object_put(o);
    }
    return NULL;
}

TEST(pool_under_concurrency) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client_opts opts = {.pool_size = 2};
    struct kube_client *c = client_for(&s, &opts);
    pthread_t t[6];
    struct par p[6];
    for (int i = 0; i < 6; i++) {
        p[i].c = c;
        p[i].ok = 0;
        pthread_create(&t[i], NULL, par_main, &p[i]);
    }
    int ok = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        ok += p[i].ok;
    }
    CHECK_INT(ok, 120);
    CHECK_INT(tsrv_nlog(&s), 120);
    kube_client_free(c);
    tsrv_stop(&s);
}

TEST(gzip_responses_decoded_and_capped) {
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start(&s, route, &st) == 0);
    struct kube_client *c = client_for(&s, NULL);
    json_object *o = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/gzip", &o, &e), AIQ_OK);
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 200);
    json_object_put(o);
    kube_client_free(c);
    /* The cap counts decompressed bytes: 452 on the wire, 1,913 inflated. */
    struct kube_client_opts opts = {.max_body = 1000};
    c = client_for(&s, &opts);
    aiq_err_clear(&e);
    CHECK_INT(kube_get(c, "/gzip", &o, &e), AIQ_ETOOBIG);
    kube_client_free(c);
    tsrv_stop(&s);
}

TEST(path_and_query_building) {
    char b[128];
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_path(b, sizeof b, "aiq.dev", "v1alpha1", "team-a", "aijobs", "j1", "status", &e), AIQ_OK);
    CHECK_STR(b, "/apis/aiq.dev/v1alpha1/namespaces/team-a/aijobs/j1/status");
    CHECK_INT(kube_path(b, sizeof b, "", "v1", NULL, "nodes", NULL, NULL, &e), AIQ_OK);
    CHECK_STR(b, "/api/v1/nodes");
    CHECK_INT(kube_path(b, sizeof b, NULL, "v1", "ns", "pods", NULL, NULL, &e), AIQ_OK);
    CHECK_STR(b, "/api/v1/namespaces/ns/pods");
    CHECK_INT(kube_path(b, sizeof b, NULL, "v1", "ns", "pods", "a/../b", NULL, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "name");
    aiq_err_clear(&e);
    CHECK_INT(kube_path(b, sizeof b, NULL, "v1", "..", "pods", NULL, NULL, &e), AIQ_EINVAL);
    aiq_err_clear(&e);
    CHECK_INT(kube_path(b, 10, "aiq.dev", "v1alpha1", NULL, "aijobs", NULL, NULL, &e), AIQ_ETOOBIG);
    aiq_err_clear(&e);
    CHECK_INT(kube_query_escape(b, sizeof b, "app in (a,b),!x", &e), AIQ_OK);
    CHECK_STR(b, "app%20in%20%28a%2Cb%29%2C%21x");
    CHECK_INT(kube_query_escape(b, 4, "abcd", &e), AIQ_ETOOBIG);
}

TEST(create_needs_server) {
    struct kube_config cfg;
    struct kube_client *c = (struct kube_client *)1;
    aiq_err e;
    memset(&cfg, 0, sizeof cfg);
    aiq_err_clear(&e);
    CHECK_INT(kube_client_create(&cfg, NULL, &c, &e), AIQ_EINVAL);
    CHECK(c == NULL);
    kube_client_free(NULL);
}

/* Reads a TLS fixture into a blob (caller frees .data). */
static struct kube_blob tls_fixture(const char *name) {
    char path[1024];
    char *text = NULL;
    size_t len = 0;
    struct kube_blob b = {0};
    snprintf(path, sizeof path, "%s/test/fixtures/tls/%s", th_srcdir(), name);
    if (kube_read_file(path, 65536, &text, &len, NULL) == AIQ_OK) {
        b.data = (unsigned char *)text;
        b.len = len;
    }
    return b;
}

static aiq_rc tls_get(struct kube_config *cfg, aiq_err *e) {
    struct kube_client *c = NULL;
    json_object *o = NULL;
    aiq_err_clear(e);
    aiq_rc rc = kube_client_create(cfg, NULL, &c, e);
    if (rc == AIQ_OK) rc = kube_get(c, "/ok", &o, e);
    json_object_put(o);
    kube_client_free(c);
    return rc;
}

TEST(tls_ca_data_file_insecure_and_client_cert) {
    struct kube_blob key = tls_fixture("server.key"), cert = tls_fixture("server.crt");
    struct kube_blob ca = tls_fixture("ca.crt");
    struct kube_blob ckey = tls_fixture("client.key"), ccert = tls_fixture("client.crt");
    CHECK(key.data && cert.data && ca.data && ckey.data && ccert.data);
    struct tsrv s;
    struct http_state st = {0};
    CHECK(tsrv_start_tls(&s, route, &st, (char *)key.data, (char *)cert.data) == 0);
    CHECK(strncmp(s.url, "https://", 8) == 0);
    struct kube_config cfg;
    aiq_err e;
    char ca_path[1024];
    snprintf(ca_path, sizeof ca_path, "%s/test/fixtures/tls/ca.crt", th_srcdir());

    /* Unknown CA: the handshake must fail. */
    memset(&cfg, 0, sizeof cfg);
    cfg.server = s.url;
    CHECK_INT(tls_get(&cfg, &e), AIQ_EIO);
    CHECK(strstr(e.message, "GET /ok") != NULL);
    /* CA from certificate-authority-data (a blob, no temp file). */
    cfg.ca_data = ca;
    cfg.token = "tls-token";
    CHECK_INT(tls_get(&cfg, &e), AIQ_OK);
    CHECK_STR(tsrv_log(&s, tsrv_nlog(&s) - 1).auth, "Bearer tls-token");
    /* CA from a file. */
    memset(&cfg.ca_data, 0, sizeof cfg.ca_data);
    cfg.ca_file = ca_path;
    CHECK_INT(tls_get(&cfg, &e), AIQ_OK);
    /* insecure-skip-tls-verify. */
    cfg.ca_file = NULL;
    cfg.insecure = 1;
    CHECK_INT(tls_get(&cfg, &e), AIQ_OK);
    /* Client certificate and key blobs are handed to curl: a matching
     * pair connects, a broken certificate fails the request. */
    cfg.insecure = 0;
    cfg.ca_data = ca;
    cfg.client_cert_data = ccert;
    cfg.client_key_data = ckey;
    CHECK_INT(tls_get(&cfg, &e), AIQ_OK);
    struct kube_blob junk = {(unsigned char *)"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 0};
    junk.len = strlen((char *)junk.data);
    cfg.client_cert_data = junk;
    CHECK_INT(tls_get(&cfg, &e), AIQ_EIO);
    cfg.client_cert_data = ccert;
    /* tls-server-name: the certificate is checked against that name
     * (it lists localhost, not wrong.example) while we still connect to
     * 127.0.0.1. */
    cfg.tls_server_name = "localhost";
    CHECK_INT(tls_get(&cfg, &e), AIQ_OK);
    cfg.tls_server_name = "wrong.example";
    CHECK_INT(tls_get(&cfg, &e), AIQ_EIO);
    cfg.tls_server_name = "bad name";
    CHECK_INT(tls_get(&cfg, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "tls-server-name");
    tsrv_stop(&s);
    free(key.data);
    free(cert.data);
    free(ca.data);
    free(ckey.data);
    free(ccert.data);
}
