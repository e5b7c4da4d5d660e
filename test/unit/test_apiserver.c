/* test_apiserver.c -- the local API server over real HTTP (libcurl against
 * an in-process server on a free port with :memory: storage): discovery,
 * create/409 AlreadyExists, 409 Conflict on a stale update, watch replay
 * and 410 Expired, 422 with causes for an invalid custom resource, pod
 * scheduling-gate rules, status subresource and generation rules, dryRun,
 * Table output, 415 for strategic patches on custom resources,
 * finalizers and owner-reference garbage collection, list paging and
 * selectors, bearer tokens, the in-process object API, and APIService
 * availability with the aggregator's reasons. */
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "operator/yaml_json.h"
#include "test/apiserver/apiserver.h"
#include "test/unit/th.h"

/* ---- helpers -------------------------------------------------------------- */

struct buf {
    char *p;
    size_t n;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *u) {
    struct buf *b = u;
    size_t n = sz * nm;
    char *np = realloc(b->p, b->n + n + 1);
    if (!np) return 0;
    b->p = np;
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

/* One request; returns the HTTP status and stores the body (malloc'd,
 * never NULL) in *out when out is non-NULL. */
static long req(apisrv *s, const char *method, const char *path, const char *ctype,
                const char *body, const char *accept, const char *token, char **out) {
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    struct buf b = {calloc(1, 1), 0};
    char url[1024], hdr[512];
    long code = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", apisrv_port(s), path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype ? ctype : "application/json");
    h = curl_slist_append(h, hdr);
    snprintf(hdr, sizeof hdr, "Accept: %s", accept ? accept : "application/json");
    h = curl_slist_append(h, hdr);
    if (token) {
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, hdr);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (out) *out = b.p;
    else free(b.p);
    return code;
}

/* Request whose body is parsed; *o gets the JSON (or NULL). */
static long reqj(apisrv *s, const char *method, const char *path, const char *ctype,
                 const char *body, json_object **o) {
    char *out = NULL;
    long code = req(s, method, path, ctype, body, NULL, NULL, &out);
    *o = json_tokener_parse(out);
    free(out);
    return code;
}

/* String at a dotted path of plain keys, or "" when absent. */
static const char *at(json_object *o, const char *path) {
    char part[128];
    const char *p = path;
    while (o && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof part) return "";
        memcpy(part, p, n);
        part[n] = 0;
        if (json_object_is_type(o, json_type_array)) o = json_object_array_get_idx(o, (size_t)strtol(part, NULL, 10));
        else if (!json_object_object_get_ex(o, part, &o)) return "";
        p = dot ? dot + 1 : p + n;
    }
    return o ? json_object_get_string(o) : "";
}

static apisrv *start(int history, const char *token) {
    struct apisrv_config cfg = {.db_path = ":memory:", .port = 0, .history = history, .token = token};
    aiq_err err;
    aiq_err_clear(&err);
    apisrv *s = apisrv_start(&cfg, &err);
    if (!s) fprintf(stderr, "apisrv_start: %s\n", err.message);
    return s;
}

static const char *const CRD =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"testjobs.test.aiq.dev\"},\"spec\":{\"group\":\"test.aiq.dev\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"testjobs\",\"singular\":\"testjob\","
    "\"kind\":\"TestJob\",\"shortNames\":[\"tj\"],\"categories\":[\"all\"]},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
    "\"additionalPrinterColumns\":[{\"name\":\"User\",\"type\":\"string\",\"jsonPath\":\".spec.user\"},"
    "{\"name\":\"GPUs\",\"type\":\"integer\",\"jsonPath\":\".spec.gpus\"},"
    "{\"name\":\"Phase\",\"type\":\"string\",\"jsonPath\":\".status.phase\"},"
    "{\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\"}],"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"required\":[\"user\"],\"properties\":{"
    "\"user\":{\"type\":\"string\"},\"gpus\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":64}}},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"}}}}}}}]}}";

#define TJ "/apis/test.aiq.dev/v1/namespaces/default/testjobs"

static apisrv *start_with_crd(int history) {
    apisrv *s = start(history, NULL);
    if (s && req(s, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                 NULL, CRD, NULL, NULL, NULL) != 201)
        fprintf(stderr, "CRD create failed\n");
    return s;
}

static long create_tj(apisrv *s, const char *name, const char *user, int gpus) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"test.aiq.dev/v1\",\"kind\":\"TestJob\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"team\":\"a\"}},\"spec\":{\"user\":\"%s\",\"gpus\":%d}}", name, user, gpus);
    return req(s, "POST", TJ, NULL, body, NULL, NULL, NULL);
}

/* ---- tests ------------------------------------------------------------------ */

TEST(apiserver_version_and_discovery) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body = NULL;
    CHECK(s != NULL);
    if (!s) return;
    CHECK_INT(reqj(s, "GET", "/version", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "minor"), "32");
    json_object_put(o);
    CHECK_INT(req(s, "GET", "/openapi/v2", NULL, NULL, NULL, NULL, &body), 200);
    CHECK_STR(body, "");
    free(body);
    CHECK_INT(req(s, "GET", "/openapi/v3", NULL, NULL, NULL, NULL, NULL), 404);
    CHECK_INT(reqj(s, "GET", "/apis/test.aiq.dev/v1", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "resources.0.name"), "testjobs");
    CHECK_STR(at(o, "resources.0.shortNames.0"), "tj");
    CHECK_STR(at(o, "resources.1.name"), "testjobs/status");
    json_object_put(o);
    CHECK_INT(req(s, "GET", "/apis", NULL, NULL,
                  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", NULL, &body), 200);
    CHECK(strstr(body, "\"singularResource\":\"testjob\"") != NULL);
    CHECK(strstr(body, "\"scope\":\"Namespaced\"") != NULL);
    free(body);
    apisrv_stop(s);
}

TEST(apiserver_create_sets_metadata_and_409_already_exists) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    if (!s) return;
    CHECK_INT(create_tj(s, "job1", "alice", 2), 201);
    CHECK_INT(reqj(s, "GET", TJ "/job1", NULL, NULL, &o), 200);
    CHECK(strlen(at(o, "metadata.uid")) == 36);
    CHECK(strlen(at(o, "metadata.creationTimestamp")) == 20);
    CHECK_STR(at(o, "metadata.generation"), "1");
    CHECK(strtol(at(o, "metadata.resourceVersion"), NULL, 10) > 0);
    json_object_put(o);
    char body[300];
    snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"job1\"},\"spec\":{\"user\":\"bob\"}}");
    CHECK_INT(reqj(s, "POST", TJ, NULL, body, &o), 409);
    CHECK_STR(at(o, "reason"), "AlreadyExists");
    CHECK_STR(at(o, "message"), "testjobs.test.aiq.dev \"job1\" already exists");
    CHECK_STR(at(o, "details.kind"), "testjobs");
    json_object_put(o);
    CHECK_INT(reqj(s, "GET", TJ "/nope", NULL, NULL, &o), 404);
    CHECK_STR(at(o, "message"), "testjobs.test.aiq.dev \"nope\" not found");
    CHECK_STR(at(o, "details.group"), "test.aiq.dev");
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_stale_update_conflicts) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL, *cur = NULL;
    if (!s) return;
    create_tj(s, "job1", "alice", 2);
    reqj(s, "GET", TJ "/job1", NULL, NULL, &cur);
    char *stale = strdup(json_object_to_json_string(cur));
    json_object_object_add(json_object_object_get(cur, "spec"), "gpus", json_object_new_int(4));
    CHECK_INT(reqj(s, "PUT", TJ "/job1", NULL, json_object_to_json_string(cur), &o), 200);
    CHECK_STR(at(o, "spec.gpus"), "4");
    CHECK_STR(at(o, "metadata.generation"), "2");
    json_object_put(o);
    CHECK_INT(reqj(s, "PUT", TJ "/job1", NULL, stale, &o), 409);
    CHECK_STR(at(o, "reason"), "Conflict");
    CHECK_STR(at(o, "message"),
              "Operation cannot be fulfilled on testjobs.test.aiq.dev \"job1\": the object has been "
              "modified; please apply your changes to the latest version and try again");
    json_object_put(o);
    free(stale);
    json_object_put(cur);
    apisrv_stop(s);
}

TEST(apiserver_watch_replays_from_resource_version) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body = NULL, path[256];
    if (!s) return;
    create_tj(s, "job1", "alice", 2);
    reqj(s, "GET", TJ "/job1", NULL, NULL, &o);
    long long rv0 = strtoll(at(o, "metadata.resourceVersion"), NULL, 10);
    json_object_put(o);
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"spec\":{\"gpus\":3}}", &o), 200);
    json_object_put(o);
    create_tj(s, "job2", "bob", 1);
    CHECK_INT(req(s, "DELETE", TJ "/job2", NULL, NULL, NULL, NULL, NULL), 200);
    snprintf(path, sizeof path, TJ "?watch=true&resourceVersion=%lld&timeoutSeconds=1", rv0);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    /* exactly the three writes after rv0, in order, one JSON per line */
    char *l1 = body, *l2 = strchr(l1, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
    CHECK(l3 != NULL && l3[1] && strchr(l3 + 1, '\n') && !strchr(l3 + 1, '\n')[1]);
    if (l3) {
        *l2 = 0;
        *l3 = 0;
        json_object *e1 = json_tokener_parse(l1), *e2 = json_tokener_parse(l2 + 1),
                    *e3 = json_tokener_parse(l3 + 1);
        CHECK_STR(at(e1, "type"), "MODIFIED");
        CHECK_STR(at(e1, "object.spec.gpus"), "3");
        CHECK_INT(strtoll(at(e1, "object.metadata.resourceVersion"), NULL, 10), rv0 + 1);
        CHECK_STR(at(e2, "type"), "ADDED");
        CHECK_STR(at(e2, "object.metadata.name"), "job2");
        CHECK_STR(at(e3, "type"), "DELETED");
        CHECK_STR(at(e3, "object.metadata.name"), "job2");
        json_object_put(e1);
        json_object_put(e2);
        json_object_put(e3);
    }
    free(body);
    /* resourceVersion=0 starts with ADDED for the current state */
    CHECK_INT(req(s, "GET", TJ "?watch=true&resourceVersion=0&timeoutSeconds=1&fieldSelector=metadata.name%3Djob1",
                  NULL, NULL, NULL, NULL, &body), 200);
    CHECK(strncmp(body, "{\"type\":\"ADDED\"", 15) == 0);
    CHECK(strstr(body, "\"name\":\"job1\"") != NULL);
    free(body);
    apisrv_stop(s);
}

TEST(apiserver_watch_410_past_history) {
    apisrv *s = start_with_crd(3);
    json_object *o = NULL;
    if (!s) return;
    for (int i = 0; i < 6; i++) {
        char n[16];
        snprintf(n, sizeof n, "j%d", i);
        create_tj(s, n, "alice", 1);
    }
    long long rv = apisrv_resource_version(s);
    char path[200];
    snprintf(path, sizeof path, TJ "?watch=true&resourceVersion=%lld", rv - 5);
    /* as the real server: 200, one ERROR event with the 410 Status, end */
    char *body = NULL;
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    CHECK(strchr(body, '\n') == body + strlen(body) - 1);
    o = json_tokener_parse(body);
    CHECK_STR(at(o, "type"), "ERROR");
    CHECK_STR(at(o, "object.kind"), "Status");
    CHECK_STR(at(o, "object.code"), "410");
    CHECK_STR(at(o, "object.reason"), "Expired");
    CHECK(strncmp(at(o, "object.message"), "too old resource version", 24) == 0);
    json_object_put(o);
    free(body);
    /* inside the window it still replays */
    snprintf(path, sizeof path, TJ "?watch=true&resourceVersion=%lld&timeoutSeconds=1", rv - 2);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    CHECK(strstr(body, "\"name\":\"j4\"") && strstr(body, "\"name\":\"j5\"") && !strstr(body, "\"name\":\"j3\""));
    free(body);
    apisrv_stop(s);
}

TEST(apiserver_invalid_custom_resource_422_with_causes) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    if (!s) return;
    CHECK_INT(reqj(s, "POST", TJ, NULL,
                   "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"gpus\":100}}", &o), 422);
    CHECK_STR(at(o, "reason"), "Invalid");
    CHECK_STR(at(o, "details.kind"), "TestJob");
    CHECK_STR(at(o, "details.name"), "bad");
    json_object *causes = json_object_object_get(json_object_object_get(o, "details"), "causes");
    CHECK_INT(causes ? json_object_array_length(causes) : 0, 2);
    const char *m = at(o, "message");
    CHECK(strstr(m, "TestJob.test.aiq.dev \"bad\" is invalid") == m);
    CHECK(strstr(m, "spec.user: Required value") != NULL);
    CHECK(strstr(m, "spec.gpus") != NULL);
    json_object_put(o);
    CHECK_INT(req(s, "GET", TJ "/bad", NULL, NULL, NULL, NULL, NULL), 404);
    /* an invalid patch is rejected and leaves the object alone */
    create_tj(s, "ok", "alice", 1);
    CHECK_INT(reqj(s, "PATCH", TJ "/ok", "application/merge-patch+json", "{\"spec\":{\"gpus\":-1}}", &o), 422);
    json_object_put(o);
    reqj(s, "GET", TJ "/ok", NULL, NULL, &o);
    CHECK_STR(at(o, "spec.gpus"), "1");
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_pod_scheduling_gates) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    if (!s) return;
    CHECK_INT(req(s, "POST", "/api/v1/namespaces/default/pods", NULL,
                  "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}],"
                  "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", NULL, NULL, NULL), 201);
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/default/pods/p", "application/json-patch+json",
                   "[{\"op\":\"add\",\"path\":\"/spec/schedulingGates/-\",\"value\":{\"name\":\"x\"}}]", &o), 422);
    CHECK_STR(at(o, "message"),
              "Pod \"p\" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is allowed, "
              "but found new scheduling gate 'x'");
    CHECK_STR(at(o, "details.causes.0.field"), "spec.schedulingGates[1].name");
    json_object_put(o);
    const char *aff = "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                      "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","
                      "\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}}}";
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/default/pods/p", "application/strategic-merge-patch+json", aff, &o), 200);
    CHECK_STR(at(o, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0.matchExpressions.0.values.0"), "n1");
    json_object_put(o);
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/default/pods/p", "application/json-patch+json",
                   "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]", &o), 200);
    CHECK_STR(at(o, "spec.schedulingGates"), "");
    json_object_put(o);
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/default/pods/p", "application/merge-patch+json",
                   "{\"spec\":{\"affinity\":null}}", &o), 422);
    CHECK(strstr(at(o, "message"), "spec: Forbidden: pod updates may not change fields") != NULL);
    json_object_put(o);
    /* a gate cannot come back either */
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/default/pods/p", "application/merge-patch+json",
                   "{\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}}", &o), 422);
    json_object_put(o);
    /* nodeName is set only through the binding subresource, once */
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/default/pods/p", "application/merge-patch+json",
                   "{\"spec\":{\"nodeName\":\"n1\"}}", &o), 422);
    CHECK_STR(at(o, "details.causes.0.field"), "spec");
    json_object_put(o);
    CHECK_INT(reqj(s, "POST", "/api/v1/namespaces/default/pods/p/binding", NULL,
                   "{\"metadata\":{\"name\":\"p\"},\"target\":{\"name\":\"n1\"}}", &o), 201);
    CHECK_STR(at(o, "status"), "Success");
    json_object_put(o);
    CHECK_INT(reqj(s, "POST", "/api/v1/namespaces/default/pods/p/binding", NULL,
                   "{\"metadata\":{\"name\":\"p\"},\"target\":{\"name\":\"n2\"}}", &o), 409);
    CHECK_STR(at(o, "message"), "Operation cannot be fulfilled on pods/binding \"p\": pod p is already "
                                "assigned to node \"n1\"");
    json_object_put(o);
    reqj(s, "GET", "/api/v1/namespaces/default/pods/p", NULL, NULL, &o);
    CHECK_STR(at(o, "spec.nodeName"), "n1");
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_status_subresource_and_generation) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    if (!s) return;
    create_tj(s, "job1", "alice", 2);
    /* status in a create is dropped for kinds with a status subresource */
    CHECK_INT(reqj(s, "PATCH", TJ "/job1/status", "application/merge-patch+json",
                   "{\"status\":{\"phase\":\"Running\"},\"spec\":{\"gpus\":9}}", &o), 200);
    CHECK_STR(at(o, "status.phase"), "Running");
    CHECK_STR(at(o, "spec.gpus"), "2");
    CHECK_STR(at(o, "metadata.generation"), "1");
    json_object_put(o);
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json",
                   "{\"status\":{\"phase\":\"Failed\"},\"metadata\":{\"labels\":{\"x\":\"y\"}}}", &o), 200);
    CHECK_STR(at(o, "status.phase"), "Running");
    CHECK_STR(at(o, "metadata.labels.x"), "y");
    CHECK_STR(at(o, "metadata.generation"), "1");
    json_object_put(o);
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"spec\":{\"gpus\":5}}", &o), 200);
    CHECK_STR(at(o, "metadata.generation"), "2");
    CHECK_STR(at(o, "status.phase"), "Running");
    const char *rv = at(o, "metadata.resourceVersion");
    char rvs[32];
    snprintf(rvs, sizeof rvs, "%s", rv);
    json_object_put(o);
    /* a no-op patch writes nothing */
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"spec\":{\"gpus\":5}}", &o), 200);
    CHECK_STR(at(o, "metadata.resourceVersion"), rvs);
    json_object_put(o);
    /* strategic merge is for built-in kinds only */
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/strategic-merge-patch+json", "{\"spec\":{\"gpus\":1}}", &o), 415);
    CHECK_STR(at(o, "reason"), "UnsupportedMediaType");
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_dry_run_never_persists) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    if (!s) return;
    long long rv = apisrv_resource_version(s);
    CHECK_INT(reqj(s, "POST", TJ "?dryRun=All", NULL,
                   "{\"metadata\":{\"name\":\"dry\"},\"spec\":{\"user\":\"a\"}}", &o), 201);
    CHECK_STR(at(o, "metadata.name"), "dry");
    json_object_put(o);
    CHECK_INT(req(s, "GET", TJ "/dry", NULL, NULL, NULL, NULL, NULL), 404);
    CHECK_INT(apisrv_resource_version(s), rv);
    create_tj(s, "job1", "alice", 2);
    CHECK_INT(reqj(s, "PATCH", TJ "/job1?dryRun=All", "application/merge-patch+json", "{\"spec\":{\"gpus\":7}}", &o), 200);
    CHECK_STR(at(o, "spec.gpus"), "7");
    json_object_put(o);
    CHECK_INT(req(s, "DELETE", TJ "/job1?dryRun=All", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(reqj(s, "GET", TJ "/job1", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "spec.gpus"), "2");
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_table_for_custom_resource) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body = NULL;
    const char *acc = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    if (!s) return;
    create_tj(s, "job1", "alice", 2);
    CHECK_INT(req(s, "GET", TJ "?limit=500", NULL, NULL, acc, NULL, &body), 200);
    o = json_tokener_parse(body);
    CHECK_STR(at(o, "kind"), "Table");
    CHECK_STR(at(o, "columnDefinitions.0.name"), "Name");
    CHECK_STR(at(o, "columnDefinitions.0.format"), "name");
    CHECK_STR(at(o, "columnDefinitions.2.name"), "GPUs");
    CHECK_STR(at(o, "rows.0.cells.0"), "job1");
    CHECK_STR(at(o, "rows.0.cells.1"), "alice");
    CHECK(json_object_is_type(json_object_array_get_idx(json_object_object_get(
              json_object_array_get_idx(json_object_object_get(o, "rows"), 0), "cells"), 2), json_type_int));
    CHECK_STR(at(o, "rows.0.cells.3"), "");   /* missing status.phase is null */
    /* the Age column: a few seconds at most (valgrind is slow) */
    const char *age = at(o, "rows.0.cells.4");
    CHECK(age && strlen(age) == 2 && age[0] >= '0' && age[0] <= '9' && age[1] == 's');
    CHECK_STR(at(o, "rows.0.object.kind"), "PartialObjectMetadata");
    CHECK_STR(at(o, "rows.0.object.metadata.namespace"), "default");
    json_object_put(o);
    free(body);
    CHECK_INT(req(s, "GET", TJ "/job1?includeObject=Object", NULL, NULL, acc, NULL, &body), 200);
    o = json_tokener_parse(body);
    CHECK_STR(at(o, "rows.0.object.spec.user"), "alice");
    json_object_put(o);
    free(body);
    /* pods get the real server's columns */
    req(s, "POST", "/api/v1/namespaces/default/pods", NULL,
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGates\":[{\"name\":\"g\"}],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}", NULL, NULL, NULL);
    CHECK_INT(req(s, "GET", "/api/v1/namespaces/default/pods", NULL, NULL, acc, NULL, &body), 200);
    o = json_tokener_parse(body);
    CHECK_STR(at(o, "columnDefinitions.1.name"), "Ready");
    CHECK_STR(at(o, "rows.0.cells.1"), "0/1");
    CHECK_STR(at(o, "rows.0.cells.2"), "SchedulingGated");
    json_object_put(o);
    free(body);
    apisrv_stop(s);
}

TEST(apiserver_finalizers_and_garbage_collection) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char body[600];
    if (!s) return;
    create_tj(s, "job1", "alice", 2);
    reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json",
         "{\"metadata\":{\"finalizers\":[\"aiq.dev/cleanup\"]}}", &o);
    snprintf(body, sizeof body,
             "{\"metadata\":{\"name\":\"job1-0\",\"ownerReferences\":[{\"apiVersion\":\"test.aiq.dev/v1\","
             "\"kind\":\"TestJob\",\"name\":\"job1\",\"uid\":\"%s\"}]},\"spec\":{\"containers\":"
             "[{\"name\":\"c\",\"image\":\"i\"}]}}", at(o, "metadata.uid"));
    json_object_put(o);
    CHECK_INT(req(s, "POST", "/api/v1/namespaces/default/pods", NULL, body, NULL, NULL, NULL), 201);
    CHECK_INT(req(s, "DELETE", TJ "/job1", NULL, "{\"propagationPolicy\":\"Background\"}", NULL, NULL, NULL), 200);
    CHECK_INT(reqj(s, "GET", TJ "/job1", NULL, NULL, &o), 200);
    CHECK(at(o, "metadata.deletionTimestamp")[0] != 0);
    json_object_put(o);
    CHECK_INT(req(s, "GET", "/api/v1/namespaces/default/pods/job1-0", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json",
                   "{\"metadata\":{\"finalizers\":null}}", &o), 200);
    json_object_put(o);
    CHECK_INT(req(s, "GET", TJ "/job1", NULL, NULL, NULL, NULL, NULL), 404);
    CHECK_INT(req(s, "GET", "/api/v1/namespaces/default/pods/job1-0", NULL, NULL, NULL, NULL, NULL), 404);
    apisrv_stop(s);
}

TEST(apiserver_list_paging_and_selectors) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    if (!s) return;
    create_tj(s, "a", "alice", 1);
    create_tj(s, "b", "bob", 1);
    create_tj(s, "c", "carol", 1);
    reqj(s, "PATCH", TJ "/b", "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"team\":\"z\"}}}", &o);
    json_object_put(o);
    CHECK_INT(reqj(s, "GET", TJ "?limit=2", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "kind"), "TestJobList");
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 2);
    char path[300];
    snprintf(path, sizeof path, TJ "?limit=2&continue=%s", at(o, "metadata.continue"));
    json_object_put(o);
    CHECK_INT(reqj(s, "GET", path, NULL, NULL, &o), 200);
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 1);
    CHECK_STR(at(o, "items.0.metadata.name"), "c");
    CHECK_STR(at(o, "metadata.continue"), "");
    json_object_put(o);
    CHECK_INT(reqj(s, "GET", TJ "?labelSelector=team%3Da", NULL, NULL, &o), 200);
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 2);
    json_object_put(o);
    CHECK_INT(reqj(s, "GET", "/apis/test.aiq.dev/v1/testjobs?fieldSelector=metadata.name%3Db", NULL, NULL, &o), 200);
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 1);
    CHECK_STR(at(o, "items.0.spec.user"), "bob");
    json_object_put(o);
    /* One namespace and one name: the object read alone, the same as a GET. */
    json_object *one = NULL;
    CHECK_INT(reqj(s, "GET", TJ "?fieldSelector=metadata.name%3Db", NULL, NULL, &o), 200);
    CHECK_INT(reqj(s, "GET", TJ "/b", NULL, NULL, &one), 200);
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 1);
    CHECK(json_object_equal(json_object_array_get_idx(json_object_object_get(o, "items"), 0), one));
    json_object_put(one);
    json_object_put(o);
    /* Nothing selected: still a list with an items array. */
    CHECK_INT(reqj(s, "GET", TJ "?labelSelector=team%3Dnone", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "kind"), "TestJobList");
    CHECK(json_object_is_type(json_object_object_get(o, "items"), json_type_array));
    CHECK_INT(json_object_array_length(json_object_object_get(o, "items")), 0);
    json_object_put(o);
    CHECK_INT(reqj(s, "GET", TJ "?labelSelector=in%20(", NULL, NULL, &o), 400);
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_bearer_token) {
    apisrv *s = start(0, "s3cret");
    json_object *o = NULL;
    char *body = NULL;
    if (!s) return;
    CHECK_INT(req(s, "GET", "/api/v1/namespaces", NULL, NULL, NULL, NULL, &body), 401);
    o = json_tokener_parse(body);
    CHECK_STR(at(o, "reason"), "Unauthorized");
    json_object_put(o);
    free(body);
    CHECK_INT(req(s, "GET", "/api/v1/namespaces", NULL, NULL, NULL, "wrong", NULL), 401);
    CHECK_INT(req(s, "GET", "/api/v1/namespaces", NULL, NULL, NULL, "s3cret", NULL), 200);
    apisrv_stop(s);
}

TEST(apiserver_in_process_api_and_events) {
    apisrv *s = start(0, NULL);
    aiq_err err;
    if (!s) return;
    aiq_err_clear(&err);
    json_object *n = json_tokener_parse(
        "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"nvidia.com/gpu.count\":\"8\"}},"
        "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}");
    CHECK_INT(apisrv_obj_create(s, "nodes", n, &err), AIQ_OK);
    json_object *got = apisrv_obj_get(s, "nodes", NULL, "n1");
    CHECK_STR(at(got, "kind"), "Node");
    json_object *st = json_tokener_parse("{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}");
    json_object_object_add(got, "status", st);
    CHECK_INT(apisrv_obj_update(s, "nodes", json_object_get(got), true, &err), AIQ_OK);
    json_object *again = apisrv_obj_get(s, "nodes", NULL, "n1");
    CHECK_STR(at(again, "status.conditions.0.type"), "Ready");
    json_object_put(again);
    /* a stale in-process update is a conflict */
    CHECK_INT(apisrv_obj_update(s, "nodes", got, true, &err), AIQ_ECONFLICT);
    CHECK_INT(err.http_status, 409);
    aiq_err_clear(&err);
    json_object *dup = json_tokener_parse("{\"metadata\":{\"name\":\"n1\"}}");
    CHECK_INT(apisrv_obj_create(s, "nodes", dup, &err), AIQ_EEXIST);
    json_object *involved = apisrv_obj_get(s, "nodes", NULL, "n1");
    CHECK_INT(apisrv_event(s, involved, "Normal", "Ready", "node is ready", "sim-kubelet"), AIQ_OK);
    CHECK_INT(apisrv_event(s, involved, "Normal", "Ready", "node is ready", "sim-kubelet"), AIQ_OK);
    json_object *evs = apisrv_obj_list(s, "events", "default");
    CHECK_INT(json_object_array_length(evs), 1);
    CHECK_STR(at(evs, "0.count"), "2");
    CHECK_STR(at(evs, "0.involvedObject.name"), "n1");
    json_object_put(evs);
    json_object_put(involved);
    CHECK_INT(apisrv_obj_delete(s, "nodes", NULL, "n1", &err), AIQ_OK);
    CHECK(apisrv_obj_get(s, "nodes", NULL, "n1") == NULL);
    CHECK_INT(apisrv_obj_delete(s, "nodes", NULL, "n1", &err), AIQ_ENOTFOUND);
    apisrv_stop(s);
}

TEST(apiserver_tls_and_kubeconfig) {
    char kc[] = "/tmp/aiq-test-kc.XXXXXX";
    if (system("command -v openssl >/dev/null 2>&1") != 0) {
        printf("note: openssl tool not installed; TLS not tested\n");
        return;
    }
    int fd = mkstemp(kc);
    if (fd < 0) return;
    close(fd);
    struct apisrv_config cfg = {.db_path = ":memory:", .tls = true, .token = "t0k", .kubeconfig_out = kc};
    aiq_err err;
    aiq_err_clear(&err);
    apisrv *s = apisrv_start(&cfg, &err);
    CHECK(s != NULL);
    if (!s) {
        fprintf(stderr, "tls start: %s\n", err.message);
        unlink(kc);
        return;
    }
    FILE *f = fopen(kc, "r");
    char text[8192] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    char want[128];
    snprintf(want, sizeof want, "server: https://127.0.0.1:%d\n", apisrv_port(s));
    CHECK(strstr(text, want) != NULL);
    CHECK(strstr(text, "certificate-authority-data: LS0t") != NULL);  /* base64 of "-----BEGIN" */
    CHECK(strstr(text, "token: t0k") != NULL);
    CURL *c = curl_easy_init();
    struct buf b = {calloc(1, 1), 0};
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer t0k");
    long code = 0;
    snprintf(want, sizeof want, "https://127.0.0.1:%d/api/v1/namespaces/default", apisrv_port(s));
    curl_easy_setopt(c, CURLOPT_URL, want);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    CHECK_INT(code, 200);
    CHECK(strstr(b.p, "\"name\":\"default\"") != NULL);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(b.p);
    apisrv_stop(s);
    unlink(kc);
}

TEST(apiserver_fault_injection) {
    struct apisrv_config cfg = {.db_path = ":memory:", .faults = {.error_500_ratio = 1.0, .seed = 7}};
    aiq_err err;
    json_object *o = NULL;
    aiq_err_clear(&err);
    apisrv *s = apisrv_start(&cfg, &err);
    if (!s) return;
    CHECK_INT(reqj(s, "GET", "/api/v1/namespaces", NULL, NULL, &o), 500);
    CHECK_STR(at(o, "reason"), "InternalError");
    json_object_put(o);
    CHECK_INT(req(s, "GET", "/version", NULL, NULL, NULL, NULL, NULL), 200);  /* discovery stays up */
    CHECK_INT(req(s, "GET", "/api/v1", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "GET", "/apis/coordination.k8s.io/v1", NULL, NULL, NULL, NULL, NULL), 200);
    apisrv_stop(s);
    struct apisrv_config cfg2 = {.db_path = ":memory:", .faults = {.conflict_ratio = 1.0, .watch_cut_s = 1, .seed = 7}};
    s = apisrv_start(&cfg2, &err);
    if (!s) return;
    CHECK_INT(req(s, "POST", "/api/v1/namespaces", NULL, "{\"metadata\":{\"name\":\"x\"}}", NULL, NULL, NULL), 409);
    CHECK_INT(req(s, "GET", "/api/v1/namespaces/x", NULL, NULL, NULL, NULL, NULL), 404);
    /* a watch without timeoutSeconds is still cut after watch_cut_s */
    char *body = NULL;
    CHECK_INT(req(s, "GET", "/api/v1/namespaces?watch=true", NULL, NULL, NULL, NULL, &body), 200);
    CHECK(strstr(body, "\"name\":\"default\"") != NULL);
    free(body);
    apisrv_stop(s);
}

TEST(apiserver_watch_selector_enter_and_leave) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body = NULL, path[256];
    if (!s) return;
    create_tj(s, "job1", "alice", 1);   /* labels team=a */
    long long rv = apisrv_resource_version(s);
    reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"spec\":{\"gpus\":2}}", &o);
    json_object_put(o);
    reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"team\":\"z\"}}}", &o);
    json_object_put(o);
    reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"spec\":{\"gpus\":3}}", &o);
    json_object_put(o);
    reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"team\":\"a\"}}}", &o);
    json_object_put(o);
    snprintf(path, sizeof path, TJ "?watch=true&labelSelector=team%%3Da&resourceVersion=%lld&timeoutSeconds=1", rv);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    /* MODIFIED while matching, DELETED on leaving, nothing while out, ADDED on return */
    const char *p1 = strstr(body, "{\"type\":\"MODIFIED\"");
    const char *p2 = p1 ? strstr(p1, "{\"type\":\"DELETED\"") : NULL;
    const char *p3 = p2 ? strstr(p2, "{\"type\":\"ADDED\"") : NULL;
    CHECK(p1 && p2 && p3);
    int lines = 0;
    for (const char *c = body; *c; c++) lines += *c == '\n';
    CHECK_INT(lines, 3);
    free(body);
    apisrv_stop(s);
}

/* A watch run on its own thread: the request, then its answer. */
struct bg_watch {
    apisrv *s;
    char path[256];
    long code;
    char *body;
};

static void *bg_watch_run(void *u) {
    struct bg_watch *b = u;
    b->code = req(b->s, "GET", b->path, NULL, NULL, NULL, NULL, &b->body);
    return NULL;
}

TEST(apiserver_delete_crd_and_namespace) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body = NULL, path[256];
    struct bg_watch bw = {0};
    pthread_t th;
    if (!s) return;
    create_tj(s, "job1", "alice", 1);
    long long rv = apisrv_resource_version(s);
    /* a watch open while the CRD goes sees its instance go (DELETED) */
    bw.s = s;
    snprintf(bw.path, sizeof bw.path, TJ "?watch=true&resourceVersion=%lld&timeoutSeconds=2", rv);
    CHECK(pthread_create(&th, NULL, bg_watch_run, &bw) == 0);
    usleep(300 * 1000);
    CHECK_INT(req(s, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/testjobs.test.aiq.dev",
                  NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "GET", TJ, NULL, NULL, NULL, NULL, NULL), 404);    /* kind no longer served */
    CHECK_INT(req(s, "GET", "/apis/test.aiq.dev/v1", NULL, NULL, NULL, NULL, NULL), 404);
    pthread_join(th, NULL);
    CHECK_INT(bw.code, 200);
    CHECK(bw.body && strstr(bw.body, "{\"type\":\"DELETED\"") != NULL && strstr(bw.body, "\"name\":\"job1\"") != NULL);
    free(bw.body);
    /* re-created, the kind has a new history: the old resourceVersion is
     * too old, as a real server's new watch cache says */
    CHECK_INT(req(s, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, CRD, NULL, NULL, NULL), 201);
    CHECK_INT(req(s, "GET", TJ "/job1", NULL, NULL, NULL, NULL, NULL), 404);
    snprintf(path, sizeof path, TJ "?watch=true&resourceVersion=%lld&timeoutSeconds=1", rv);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    CHECK(strstr(body, "{\"type\":\"ERROR\"") == body && strstr(body, "\"reason\":\"Expired\"") != NULL);
    free(body);
    /* namespaces: the default ones stay; others take their objects along */
    CHECK_INT(reqj(s, "DELETE", "/api/v1/namespaces/default", NULL, NULL, &o), 403);
    CHECK_STR(at(o, "reason"), "Forbidden");
    json_object_put(o);
    CHECK_INT(req(s, "POST", "/api/v1/namespaces", NULL, "{\"metadata\":{\"name\":\"team-x\"}}", NULL, NULL, NULL), 201);
    CHECK_INT(req(s, "POST", "/apis/test.aiq.dev/v1/namespaces/team-x/testjobs", NULL,
                  "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"user\":\"u\"}}", NULL, NULL, NULL), 201);
    CHECK_INT(req(s, "POST", "/apis/test.aiq.dev/v1/namespaces/team-y/testjobs", NULL,
                  "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"user\":\"u\"}}", NULL, NULL, NULL), 404);
    CHECK_INT(req(s, "DELETE", "/api/v1/namespaces/team-x", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "GET", "/apis/test.aiq.dev/v1/namespaces/team-x/testjobs/j", NULL, NULL, NULL, NULL, NULL), 404);
    apisrv_stop(s);
}

/* Reads a YAML file under the source tree as JSON documents. */
static json_object *load_yaml(const char *rel, int want_doc) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", th_srcdir(), rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    json_object **docs = NULL, *out = NULL;
    int nd = 0;
    if (aiq_yaml_to_json(text, n, &docs, &nd, NULL) == AIQ_OK && want_doc < nd)
        out = json_object_get(docs[want_doc]);
    aiq_json_docs_free(docs, nd);
    return out;
}

/* POSTs doc (taken over) to path; the path names the namespace. */
static long post_doc(apisrv *s, const char *path, json_object *doc, json_object **o) {
    json_object *md;
    if (doc && json_object_object_get_ex(doc, "metadata", &md)) json_object_object_del(md, "namespace");
    long code = reqj(s, "POST", path, NULL, doc ? json_object_to_json_string(doc) : "null", o);
    json_object_put(doc);
    return code;
}

TEST(apiserver_real_aijob_crd_accepts_examples_and_rejects_invalid) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    const char *aj = "/apis/aiq.dev/v1alpha1/namespaces/team-vision/aijobs";
    if (!s) return;
    json_object *crd = load_yaml("crds/aijobs.aiq.dev.yaml", 0);
    CHECK(crd != NULL);
    CHECK_INT(post_doc(s, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, &o), 201);
    json_object_put(o);
    CHECK_INT(req(s, "POST", "/api/v1/namespaces", NULL, "{\"metadata\":{\"name\":\"team-vision\"}}",
                  NULL, NULL, NULL), 201);
    CHECK_INT(post_doc(s, aj, load_yaml("examples/jobs/single-gpu.yaml", 0), &o), 201);
    CHECK_STR(at(o, "spec.user"), "alice");
    json_object_put(o);
    CHECK_INT(post_doc(s, aj, load_yaml("examples/invalid/negative-gpus.yaml", 0), &o), 422);
    CHECK_STR(at(o, "details.kind"), "AIJob");
    CHECK(strstr(at(o, "message"), "spec.resources.gpus") != NULL);
    json_object_put(o);
    CHECK_INT(post_doc(s, aj, load_yaml("examples/invalid/replicas-string.yaml", 0), &o), 422);
    CHECK(strstr(at(o, "message"), "spec.replicas") != NULL);
    json_object_put(o);
    /* unknown fields: pruned by default, 400 under fieldValidation=Strict */
    CHECK_INT(post_doc(s, "/apis/aiq.dev/v1alpha1/namespaces/team-vision/aijobs?fieldValidation=Strict",
                       load_yaml("examples/invalid/unknown-field.yaml", 0), &o), 400);
    CHECK(strstr(at(o, "message"), "unknown field \"spec.gpu\"") != NULL);
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_custom_resource_update_needs_resource_version) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    if (!s) return;
    create_tj(s, "job1", "alice", 1);
    CHECK_INT(reqj(s, "PUT", TJ "/job1", NULL,
                   "{\"metadata\":{\"name\":\"job1\"},\"spec\":{\"user\":\"bob\"}}", &o), 422);
    CHECK_STR(at(o, "message"), "TestJob.test.aiq.dev \"job1\" is invalid: metadata.resourceVersion: "
                                "Invalid value: 0x0: must be specified for an update");
    json_object_put(o);
    /* patches stay unconditional, even one that drops the version */
    CHECK_INT(reqj(s, "PATCH", TJ "/job1", "application/merge-patch+json",
                   "{\"metadata\":{\"resourceVersion\":null},\"spec\":{\"user\":\"carol\"}}", &o), 200);
    CHECK_STR(at(o, "spec.user"), "carol");
    json_object_put(o);
    /* built-in kinds such as pods allow an unconditional update */
    req(s, "POST", "/api/v1/namespaces/default/pods", NULL,
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}", NULL, NULL, NULL);
    CHECK_INT(req(s, "PUT", "/api/v1/namespaces/default/pods/p", NULL,
                  "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"j\"}]}}",
                  NULL, NULL, NULL), 200);
    apisrv_stop(s);
}

/* Replaying a watch from a list's resourceVersion must rebuild exactly the
 * state a later list shows (what every informer relies on), through a
 * random mix of creates, patches, status writes, finalizer deletes and
 * deletes. */
TEST(apiserver_watch_replay_rebuilds_list) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body = NULL, path[256], name[32], pbody[256];
    unsigned seed = 12345;
    if (!s) return;
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "seed%d", i);
        create_tj(s, name, "alice", i % 5);
    }
    CHECK_INT(reqj(s, "GET", TJ, NULL, NULL, &o), 200);
    long long rv0 = strtoll(at(o, "metadata.resourceVersion"), NULL, 10);
    json_object *state = json_object_new_object();   /* name -> gpus */
    json_object *items = json_object_object_get(o, "items");
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        json_object_object_add(state, at(it, "metadata.name"), json_object_new_string(at(it, "spec.gpus")));
    }
    json_object_put(o);
    for (int step = 0; step < 150; step++) {
        int k = rand_r(&seed) % 14, op = rand_r(&seed) % 6;
        snprintf(name, sizeof name, k < 10 ? "seed%d" : "new%d", k);
        snprintf(path, sizeof path, TJ "/%s", name);
        if (op == 0) {
            create_tj(s, name, "bob", k);
        } else if (op == 1 || op == 2) {
            snprintf(pbody, sizeof pbody, "{\"spec\":{\"gpus\":%d}}", rand_r(&seed) % 60);
            req(s, "PATCH", path, "application/merge-patch+json", pbody, NULL, NULL, NULL);
        } else if (op == 3) {
            snprintf(path, sizeof path, TJ "/%s/status", name);
            req(s, "PATCH", path, "application/merge-patch+json", "{\"status\":{\"phase\":\"Running\"}}", NULL, NULL, NULL);
        } else if (op == 4) {
            req(s, "PATCH", path, "application/merge-patch+json",
                rand_r(&seed) % 2 ? "{\"metadata\":{\"finalizers\":[\"x/y\"]}}" : "{\"metadata\":{\"finalizers\":null}}",
                NULL, NULL, NULL);
        } else {
            req(s, "DELETE", path, NULL, NULL, NULL, NULL, NULL);
        }
    }
    snprintf(path, sizeof path, TJ "?watch=true&resourceVersion=%lld&timeoutSeconds=1", rv0);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    long long last = rv0;
    int events = 0, ordered = 1;
    for (char *line = body, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = 0;
        json_object *ev = json_tokener_parse(line);
        const char *type = at(ev, "type"), *n = at(ev, "object.metadata.name");
        long long rv = strtoll(at(ev, "object.metadata.resourceVersion"), NULL, 10);
        if (rv <= last) ordered = 0;
        last = rv;
        events++;
        if (!strcmp(type, "DELETED")) json_object_object_del(state, n);
        else json_object_object_add(state, n, json_object_new_string(at(ev, "object.spec.gpus")));
        json_object_put(ev);
    }
    free(body);
    CHECK(ordered);
    CHECK(events > 50);
    CHECK_INT(reqj(s, "GET", TJ, NULL, NULL, &o), 200);
    CHECK_INT(strtoll(at(o, "metadata.resourceVersion"), NULL, 10), last);
    items = json_object_object_get(o, "items");
    CHECK_INT(json_object_array_length(items), json_object_object_length(state));
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i), *v;
        CHECK(json_object_object_get_ex(state, at(it, "metadata.name"), &v) &&
              !strcmp(json_object_get_string(v), at(it, "spec.gpus")));
    }
    json_object_put(o);
    json_object_put(state);
    apisrv_stop(s);
}

/* A ConfigMap owned by uid (in-process create). */
static void owned_cm(apisrv *s, const char *name, const char *uid) {
    char b[400];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"default\"%s%s%s}}", name,
             uid ? ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                   "\"name\":\"boss\",\"uid\":\"" : "",
             uid ? uid : "", uid ? "\"}]" : "");
    apisrv_obj_create(s, "configmaps", json_tokener_parse(b), NULL);
}

static bool cm_exists(apisrv *s, const char *name) {
    json_object *o = apisrv_obj_get(s, "configmaps", "default", name);
    json_object_put(o);
    return o != NULL;
}

/* Garbage collection finds dependents through the owner index: an object
 * whose ownerReferences were removed is not collected, and a database
 * written before the index existed gets it rebuilt when reopened. */
TEST(apiserver_gc_owner_index_follows_updates_and_old_databases) {
    char dir[] = "/tmp/aiq-test-owned.XXXXXX", path[300];
    struct apisrv_config cfg = {.port = 0};
    aiq_err err;
    sqlite3 *db = NULL;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/api.db", dir);
    cfg.db_path = path;
    aiq_err_clear(&err);
    apisrv *s = apisrv_start(&cfg, &err);
    CHECK(s != NULL);
    if (!s) return;
    owned_cm(s, "boss", NULL);
    json_object *boss = apisrv_obj_get(s, "configmaps", "default", "boss");
    char uid[128];
    snprintf(uid, sizeof uid, "%s", at(boss, "metadata.uid"));
    json_object_put(boss);
    owned_cm(s, "dep1", uid);
    owned_cm(s, "dep2", uid);
    owned_cm(s, "freed", uid);
    json_object *fr = apisrv_obj_get(s, "configmaps", "default", "freed");
    json_object_object_del(json_object_object_get(fr, "metadata"), "ownerReferences");
    CHECK(apisrv_obj_update(s, "configmaps", fr, false, NULL) == AIQ_OK);
    apisrv_stop(s);
    /* make it an old database: no owner index */
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "DROP TABLE owned", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    s = apisrv_start(&cfg, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(cm_exists(s, "dep1") && cm_exists(s, "freed"));
        CHECK(apisrv_obj_delete(s, "configmaps", "default", "boss", NULL) == AIQ_OK);
        CHECK(!cm_exists(s, "boss"));
        CHECK(!cm_exists(s, "dep1"));
        CHECK(!cm_exists(s, "dep2"));
        CHECK(cm_exists(s, "freed"));
        apisrv_stop(s);
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* ---- the rules of a real server the differential test keeps us to ------------------- */

#define PODS "/api/v1/namespaces/default/pods"

/* Creates pod NAME (scheduler "none", so nothing binds it) and binds it
 * to node n1 through the binding subresource. */
static void bound_pod(apisrv *s, const char *name, const char *extra_md) {
    char b[1024];
    snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"schedulerName\":\"none\","
                          "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
             name, extra_md ? extra_md : "");
    CHECK_INT(req(s, "POST", PODS, NULL, b, NULL, NULL, NULL), 201);
    snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"%s\"},\"target\":{\"name\":\"n1\"}}", name);
    char path[256];
    snprintf(path, sizeof path, PODS "/%s/binding", name);
    CHECK_INT(req(s, "POST", path, NULL, b, NULL, NULL, NULL), 201);
}

TEST(apiserver_binding_answers) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    if (!s) return;
    CHECK_INT(req(s, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulerName\":\"none\","
                  "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", NULL, NULL, NULL), 201);
    CHECK_INT(reqj(s, "POST", PODS "/p/binding", NULL, "{\"metadata\":{\"name\":\"q\"},\"target\":{\"name\":\"n1\"}}", &o), 400);
    CHECK_STR(at(o, "message"), "name in URL does not match name in Binding object");
    json_object_put(o);
    /* an invalid target is a bare 500, the two errors aggregated */
    CHECK_INT(reqj(s, "POST", PODS "/p/binding", NULL, "{\"metadata\":{\"name\":\"p\"},\"target\":{\"kind\":\"Pod\"}}", &o), 500);
    CHECK_STR(at(o, "reason"), "");
    CHECK_STR(at(o, "message"), "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", "
                                "target.name: Required value]");
    json_object_put(o);
    CHECK_INT(reqj(s, "POST", PODS "/none/binding", NULL, "{\"metadata\":{\"name\":\"none\"},\"target\":{\"name\":\"n1\"}}", &o), 404);
    json_object_put(o);
    CHECK_INT(reqj(s, "POST", PODS "/p/binding", NULL,
                   "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"1\"},\"target\":{\"name\":\"n1\"}}", &o), 409);
    CHECK_STR(at(o, "details.kind"), "pods");
    CHECK(strstr(at(o, "message"), "Precondition failed: ResourceVersion in precondition: 1, ") != NULL);
    json_object_put(o);
    CHECK_INT(reqj(s, "POST", PODS "/p/binding", NULL,
                   "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"a\":\"b\"}},\"target\":{\"name\":\"n1\"}}", &o), 201);
    CHECK_STR(at(o, "kind"), "Status");
    CHECK_STR(at(o, "code"), "201");
    json_object_put(o);
    reqj(s, "GET", PODS "/p", NULL, NULL, &o);
    CHECK_STR(at(o, "spec.nodeName"), "n1");
    CHECK_STR(at(o, "metadata.annotations.a"), "b");
    CHECK_STR(at(o, "metadata.generation"), "1");   /* binding is no spec update */
    CHECK_STR(at(o, "status.conditions.0.type"), "PodScheduled");
    CHECK_STR(at(o, "status.conditions.0.status"), "True");
    json_object_put(o);
    /* the binding subresource takes POST only */
    CHECK_INT(req(s, "GET", PODS "/p/binding", NULL, NULL, NULL, NULL, NULL), 405);
    /* a pod being deleted (kept by a finalizer) cannot be bound */
    CHECK_INT(req(s, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"x/y\"]},\"spec\":{"
                  "\"schedulerName\":\"none\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", NULL, NULL, NULL), 201);
    CHECK_INT(req(s, "DELETE", PODS "/f", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(reqj(s, "POST", PODS "/f/binding", NULL, "{\"metadata\":{\"name\":\"f\"},\"target\":{\"name\":\"n1\"}}", &o), 409);
    CHECK_STR(at(o, "message"), "Operation cannot be fulfilled on pods/binding \"f\": pod f is being deleted, "
                                "cannot be assigned to a host");
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_graceful_pod_deletion) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    char *body = NULL, path[256];
    if (!s) return;
    bound_pod(s, "g", NULL);
    long long rv = apisrv_resource_version(s);
    /* bound, not finished: kept with deletionTimestamp and the pod's grace */
    CHECK_INT(reqj(s, "DELETE", PODS "/g", NULL, NULL, &o), 200);
    CHECK(at(o, "metadata.deletionTimestamp")[0] != 0);
    CHECK_STR(at(o, "metadata.deletionGracePeriodSeconds"), "30");
    CHECK_STR(at(o, "metadata.generation"), "2");
    json_object_put(o);
    CHECK_INT(req(s, "GET", PODS "/g", NULL, NULL, NULL, NULL, NULL), 200);
    /* a longer or absent grace changes nothing; a shorter one shortens */
    CHECK_INT(reqj(s, "DELETE", PODS "/g?gracePeriodSeconds=60", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "metadata.deletionGracePeriodSeconds"), "30");
    json_object_put(o);
    CHECK_INT(reqj(s, "DELETE", PODS "/g", NULL, "{\"gracePeriodSeconds\":5}", &o), 200);
    CHECK_STR(at(o, "metadata.deletionGracePeriodSeconds"), "5");
    json_object_put(o);
    /* preconditions */
    CHECK_INT(reqj(s, "DELETE", PODS "/g", NULL, "{\"preconditions\":{\"uid\":\"nope\"}}", &o), 409);
    CHECK(strstr(at(o, "message"), "Operation cannot be fulfilled on Pod \"g\": the UID in the precondition (nope) "
                                   "does not match the UID in record") == at(o, "message"));
    json_object_put(o);
    CHECK_INT(reqj(s, "DELETE", PODS "/g", NULL, "{\"preconditions\":{\"resourceVersion\":\"1\"}}", &o), 409);
    json_object_put(o);
    /* grace 0 (what a kubelet sends at the end): gone */
    CHECK_INT(reqj(s, "DELETE", PODS "/g?gracePeriodSeconds=0", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "metadata.deletionGracePeriodSeconds"), "0");
    json_object_put(o);
    CHECK_INT(req(s, "GET", PODS "/g", NULL, NULL, NULL, NULL, NULL), 404);
    /* watchers saw MODIFIED (30), MODIFIED (5), MODIFIED (0), DELETED */
    snprintf(path, sizeof path, PODS "?watch=true&resourceVersion=%lld&timeoutSeconds=1", rv);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    const char *p1 = strstr(body, "{\"type\":\"MODIFIED\"");
    const char *p2 = p1 ? strstr(p1 + 1, "{\"type\":\"MODIFIED\"") : NULL;
    const char *p3 = p2 ? strstr(p2 + 1, "{\"type\":\"MODIFIED\"") : NULL;
    const char *p4 = p3 ? strstr(p3 + 1, "{\"type\":\"DELETED\"") : NULL;
    int lines = 0;
    for (const char *c = body; *c; c++) lines += *c == '\n';
    if (!CHECK(p1 && p2 && p3 && p4 && lines == 4)) fprintf(stderr, "    %s\n", body);
    /* each event has its own resourceVersion */
    CHECK(p3 && p4 && strstr(p3, "\"resourceVersion\":\"9\"") && strstr(p4, "\"resourceVersion\":\"10\""));
    free(body);

    /* an unbound pod goes at once, with a MODIFIED (grace 0) first */
    CHECK_INT(req(s, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"u\"},\"spec\":{\"schedulerName\":\"none\","
                  "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", NULL, NULL, NULL), 201);
    rv = apisrv_resource_version(s);
    CHECK_INT(reqj(s, "DELETE", PODS "/u", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "metadata.deletionGracePeriodSeconds"), "0");
    json_object_put(o);
    CHECK_INT(req(s, "GET", PODS "/u", NULL, NULL, NULL, NULL, NULL), 404);
    snprintf(path, sizeof path, PODS "?watch=true&resourceVersion=%lld&timeoutSeconds=1", rv);
    CHECK_INT(req(s, "GET", path, NULL, NULL, NULL, NULL, &body), 200);
    p1 = strstr(body, "{\"type\":\"MODIFIED\"");
    CHECK(p1 == body && strstr(p1, "{\"type\":\"DELETED\"") != NULL);
    free(body);

    /* a finished pod goes at once too */
    bound_pod(s, "done", NULL);
    CHECK_INT(reqj(s, "GET", PODS "/done", NULL, NULL, &o), 200);
    json_object_object_add(json_object_object_get(o, "status"), "phase", json_object_new_string("Succeeded"));
    CHECK_INT(req(s, "PUT", PODS "/done/status", NULL, json_object_to_json_string(o), NULL, NULL, NULL), 200);
    json_object_put(o);
    CHECK_INT(req(s, "DELETE", PODS "/done", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "GET", PODS "/done", NULL, NULL, NULL, NULL, NULL), 404);

    /* finalizers: the last one removed before the grace is over leaves
     * the pod to its kubelet; removed at grace 0 it goes */
    bound_pod(s, "fin", ",\"finalizers\":[\"x/y\"]");
    CHECK_INT(req(s, "DELETE", PODS "/fin", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "PATCH", PODS "/fin", "application/merge-patch+json", "{\"metadata\":{\"finalizers\":null}}",
                  NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "GET", PODS "/fin", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "DELETE", PODS "/fin?gracePeriodSeconds=0", NULL, NULL, NULL, NULL, NULL), 200);
    CHECK_INT(req(s, "GET", PODS "/fin", NULL, NULL, NULL, NULL, NULL), 404);
    apisrv_stop(s);
}

TEST(apiserver_create_order_and_generate_name) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    char body[512], name[80];
    if (!s) return;
    CHECK_INT(req(s, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                  "\"image\":\"x\"}]}}", NULL, NULL, NULL), 201);
    /* validation comes before AlreadyExists, as on a real server */
    CHECK_INT(reqj(s, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", &o), 422);
    CHECK_STR(at(o, "details.causes.0.field"), "spec.containers[0].image");
    json_object_put(o);
    CHECK_INT(reqj(s, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                   "\"image\":\"x\"}]}}", &o), 409);
    CHECK_STR(at(o, "reason"), "AlreadyExists");
    json_object_put(o);
    /* a generateName gives at most 58 characters of the name */
    memset(name, 'g', 64);
    name[64] = 0;
    snprintf(body, sizeof body, "{\"metadata\":{\"generateName\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                                "\"image\":\"x\"}]}}", name);
    CHECK_INT(reqj(s, "POST", PODS, NULL, body, &o), 201);
    CHECK_INT(strlen(at(o, "metadata.name")), 63);
    CHECK(strncmp(at(o, "metadata.name"), name, 58) == 0);
    json_object_put(o);
    apisrv_stop(s);
}

TEST(apiserver_json_depth_and_utf8) {
    apisrv *s = start_with_crd(0);
    json_object *o = NULL;
    char *body;
    size_t cap = 200000;
    if (!s) return;
    body = malloc(cap);
    if (!CHECK(body != NULL)) {
        apisrv_stop(s);
        return;
    }
    /* depth = 2 (body, spec) + n: extra preserved fields nest n more */
    for (int depth = 10000; depth <= 10001; depth++) {
        size_t j = (size_t)snprintf(body, cap, "{\"metadata\":{\"name\":\"d%d\"},\"spec\":{\"user\":\"u\",\"extra\":", depth);
        for (int i = 0; i < depth - 2; i++) j += (size_t)snprintf(body + j, cap - j, "{\"a\":");
        j += (size_t)snprintf(body + j, cap - j, "1");
        for (int i = 0; i < depth - 2; i++) body[j++] = '}';
        snprintf(body + j, cap - j, "}}");
        long code = reqj(s, "POST", TJ, NULL, body, &o);
        if (depth == 10000) {
            CHECK_INT(code, 201);
        } else {
            CHECK_INT(code, 400);
            CHECK(strstr(at(o, "message"), "the object provided is unrecognized (must be of type TestJob): couldn't "
                                           "get version/kind; json parse error: invalid character '{' exceeded max "
                                           "depth ({\"metadata\":{\"name\":\"d10001\"}, ...)") == at(o, "message"));
        }
        json_object_put(o);
    }
    /* stored that deep, read back (get, list, watch) */
    char *got = NULL;
    CHECK_INT(req(s, "GET", TJ "/d10000", NULL, NULL, NULL, NULL, &got), 200);
    CHECK(strstr(got, "\"name\":\"d10000\"") != NULL);
    free(got);
    CHECK_INT(req(s, "GET", TJ, NULL, NULL, NULL, NULL, &got), 200);
    CHECK(strstr(got, "\"name\":\"d10000\"") != NULL);
    free(got);
    /* invalid UTF-8: each bad byte becomes U+FFFD, the object is stored */
    CHECK_INT(req(s, "POST", TJ, NULL, "{\"metadata\":{\"name\":\"u1\"},\"spec\":{\"user\":\"ev\xff\xfe" "e\xed\xa0\x80x\"}}",
                  NULL, NULL, NULL), 201);
    CHECK_INT(reqj(s, "GET", TJ "/u1", NULL, NULL, &o), 200);
    CHECK_STR(at(o, "spec.user"), "ev\xef\xbf\xbd\xef\xbf\xbd" "e\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx");
    json_object_put(o);
    free(body);
    apisrv_stop(s);
}

TEST(apiserver_aijob_name_limit_from_the_crd) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    char body[512], name[80];
    const char *aj = "/apis/aiq.dev/v1alpha1/namespaces/default/aijobs";
    if (!s) return;
    CHECK_INT(post_doc(s, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       load_yaml("crds/aijobs.aiq.dev.yaml", 0), &o), 201);
    json_object_put(o);
    memset(name, 'a', 64);
    name[64] = 0;
    snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"user\":\"u\"}}", name);
    CHECK_INT(reqj(s, "POST", aj, NULL, body, &o), 422);
    CHECK_STR(at(o, "details.causes.0.field"), "metadata.name");
    CHECK_STR(at(o, "details.causes.0.reason"), "FieldValueTooLong");
    CHECK_STR(at(o, "details.causes.0.message"), "Too long: may not be more than 63 bytes");
    /* the CRD has CEL rules: they wait for the blocking error */
    CHECK_STR(at(o, "details.causes.1.field"), "<nil>");
    json_object_put(o);
    name[63] = 0;
    snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"user\":\"u\"}}", name);
    CHECK_INT(req(s, "POST", aj, NULL, body, NULL, NULL, NULL), 201);
    apisrv_stop(s);
}

TEST(apiserver_namespace_defaults_and_delete_options) {
    apisrv *s = start(0, NULL);
    json_object *o = NULL;
    if (!s) return;
    CHECK_INT(reqj(s, "POST", "/api/v1/namespaces", NULL, "{\"metadata\":{\"name\":\"team-a\"}}", &o), 201);
    CHECK_STR(at(o, "spec.finalizers.0"), "kubernetes");
    json_object *l = json_object_object_get(json_object_object_get(o, "metadata"), "labels");
    CHECK_STR(json_object_get_string(json_object_object_get(l, "kubernetes.io/metadata.name")), "team-a");
    json_object_put(o);
    /* the label follows the name and cannot be changed away */
    CHECK_INT(reqj(s, "PATCH", "/api/v1/namespaces/team-a", "application/merge-patch+json",
                   "{\"metadata\":{\"labels\":{\"kubernetes.io/metadata.name\":\"other\",\"x\":\"y\"}},"
                   "\"spec\":{\"finalizers\":[]}}", &o), 200);
    l = json_object_object_get(json_object_object_get(o, "metadata"), "labels");
    CHECK_STR(json_object_get_string(json_object_object_get(l, "kubernetes.io/metadata.name")), "team-a");
    CHECK_STR(at(o, "spec.finalizers.0"), "kubernetes");
    json_object_put(o);
    /* DeleteOptions are checked before the object is looked up */
    CHECK_INT(reqj(s, "DELETE", "/api/v1/namespaces/default/pods/none", NULL, "{\"propagationPolicy\":\"Bogus\"}", &o), 422);
    CHECK_STR(at(o, "message"), "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: "
                                "\"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"");
    CHECK_STR(at(o, "details.kind"), "DeleteOptions");
    CHECK_STR(at(o, "details.causes.0.field"), "propagationPolicy");
    json_object_put(o);
    CHECK_INT(req(s, "DELETE", "/api/v1/namespaces/default/pods/none?propagationPolicy=Orphan", NULL, NULL,
                  NULL, NULL, NULL), 404);
    apisrv_stop(s);
}

/* The Available condition of APIService name, polled until its reason
 * is want or 5 s pass; returns the last reason and message in buf. */
static bool apiservice_reason(apisrv *s, const char *name, const char *want, char *buf,
                              size_t cap) {
    char path[256];
    snprintf(path, sizeof path, "/apis/apiregistration.k8s.io/v1/apiservices/%s", name);
    for (int i = 0; i < 50; i++) {
        json_object *o = NULL;
        reqj(s, "GET", path, NULL, NULL, &o);
        snprintf(buf, cap, "%s: %s", at(o, "status.conditions.0.reason"),
                 at(o, "status.conditions.0.message"));
        bool ok = !strcmp(at(o, "status.conditions.0.reason"), want);
        json_object_put(o);
        if (ok) return true;
        usleep(100 * 1000);
    }
    return false;
}

TEST(apiserver_apiservice_availability_like_the_aggregator) {
    apisrv *s = start(0, NULL);
    aiq_err err;
    aiq_err_clear(&err);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_INT(apisrv_sim_start(s, &err), AIQ_OK); /* its thread checks APIServices */
    char msg[1024];
    CHECK_INT(req(s, "POST", "/apis/apiregistration.k8s.io/v1/apiservices", NULL,
                  "{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\","
                  "\"metadata\":{\"name\":\"v1.q.test\"},\"spec\":{\"group\":\"q.test\","
                  "\"version\":\"v1\",\"service\":{\"namespace\":\"default\",\"name\":\"q\","
                  "\"port\":443},\"groupPriorityMinimum\":1,\"versionPriority\":1}}",
                  NULL, NULL, NULL), 201);
    CHECK(apiservice_reason(s, "v1.q.test", "ServiceNotFound", msg, sizeof msg));
    CHECK(strstr(msg, "service/q in \"default\" is not present") != NULL);
    CHECK_INT(req(s, "POST", "/api/v1/namespaces/default/services", NULL,
                  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"q\"},"
                  "\"spec\":{\"ports\":[{\"name\":\"web\",\"port\":80}]}}", NULL, NULL, NULL), 201);
    CHECK(apiservice_reason(s, "v1.q.test", "ServicePortError", msg, sizeof msg));
    CHECK(strstr(msg, "is not listening on port 443") != NULL);
    CHECK_INT(req(s, "PUT", "/api/v1/namespaces/default/services/q", NULL,
                  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"q\"},"
                  "\"spec\":{\"ports\":[{\"name\":\"https\",\"port\":443}]}}", NULL, NULL, NULL), 200);
    CHECK(apiservice_reason(s, "v1.q.test", "EndpointsNotFound", msg, sizeof msg));
    CHECK_INT(req(s, "POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", NULL,
                  "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":"
                  "{\"name\":\"q-1\",\"labels\":{\"kubernetes.io/service-name\":\"q\"}},"
                  "\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"https\",\"port\":1}],"
                  "\"endpoints\":[{\"addresses\":[\"192.0.2.9\"],\"conditions\":{\"ready\":false}}]}",
                  NULL, NULL, NULL), 201);
    CHECK(apiservice_reason(s, "v1.q.test", "MissingEndpoints", msg, sizeof msg));
    CHECK(strstr(msg, "have no addresses with port name \"https\"") != NULL);
    CHECK_INT(req(s, "PUT", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/q-1", NULL,
                  "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":"
                  "{\"name\":\"q-1\",\"labels\":{\"kubernetes.io/service-name\":\"q\"}},"
                  "\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"https\",\"port\":1}],"
                  "\"endpoints\":[{\"addresses\":[\"192.0.2.9\"],\"conditions\":{\"ready\":true}}]}",
                  NULL, NULL, NULL), 200);
    /* reachable on paper, but this server has no --tls: no front-proxy pair */
    CHECK(apiservice_reason(s, "v1.q.test", "FailedDiscoveryCheck", msg, sizeof msg));
    CHECK(strstr(msg, "without --tls") != NULL);
    char *body = NULL;
    CHECK_INT(req(s, "GET", "/apis/q.test/v1/namespaces/default/things", NULL, NULL, NULL, NULL,
                  &body), 503);
    CHECK(strstr(body, "only when it serves TLS (--tls)") != NULL);
    free(body);
    CHECK_INT(req(s, "POST", "/apis/q.test/v1/namespaces/default/things", NULL, "{}", NULL, NULL,
                  NULL), 405);
    apisrv_stop(s);
}
