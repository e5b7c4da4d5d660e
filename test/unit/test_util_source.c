/* test_util_source.c -- the live utilisation source (operator/util_source.c):
 * the Prometheus answer parser (good answers, error status, missing
 * labels, NaN and infinities, huge input, not JSON), the cache's
 * staleness and fill rules, the flag checks, and a fetch from a
 * Prometheus that is not there. */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "operator/util_source.h"
#include "tools/cli_util.h"
#include "test/unit/th.h"

static const char good[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
    "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"gpu\":\"0\",\"UUID\":\"GPU-a\","
    "\"Hostname\":\"n1\"},\"value\":[1700000000.5,\"35\"]},"
    "{\"metric\":{\"gpu\":\"1\",\"Hostname\":\"n1\",\"node\":\"k8s-n1\"},\"value\":[1700000000,\"100\"]},"
    "{\"metric\":{\"gpu\":\"0\",\"kubernetes_node\":\"n2\",\"Hostname\":\"pod-x\"},"
    "\"value\":[1700000000,\"0\"]}]}}";

TEST(parse_good_answer) {
    struct oputil_sample *s = NULL;
    struct oputil_skips sk;
    size_t n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(oputil_parse(good, strlen(good), NULL, &s, &n, &sk, &e), AIQ_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_STR(s[0].node, "n1");
        CHECK_STR(s[0].uuid, "GPU-a");
        CHECK_INT(s[0].gpu, 0);
        CHECK_DBL(s[0].value, 35, 1e-9);
        CHECK_DBL(s[0].t, 1700000000.5, 1e-6);
        /* "node" wins over Hostname, kubernetes_node too */
        CHECK_STR(s[1].node, "k8s-n1");
        CHECK_INT(s[1].gpu, 1);
        CHECK_STR(s[2].node, "n2");
    }
    CHECK_INT(sk.no_node + sk.bad_gpu + sk.bad_value, 0);
    free(s);
    /* an explicit label: only it counts */
    CHECK_INT(oputil_parse(good, strlen(good), "Hostname", &s, &n, &sk, &e), AIQ_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_STR(s[1].node, "n1");
        CHECK_STR(s[2].node, "pod-x");
    }
    free(s);
    CHECK_INT(oputil_parse(good, strlen(good), "instance", &s, &n, &sk, &e), AIQ_OK);
    CHECK_INT(n, 0);
    CHECK(s == NULL);
    CHECK_INT(sk.no_node, 3);
}

TEST(parse_error_status) {
    const char *t = "{\"status\":\"error\",\"errorType\":\"bad_data\","
                    "\"error\":\"invalid parameter \\\"query\\\": 1:1: parse error\"}";
    struct oputil_sample *s = (void *)1;
    size_t n = 7;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(oputil_parse(t, strlen(t), NULL, &s, &n, NULL, &e), AIQ_EINVAL);
    CHECK(s == NULL);
    CHECK_INT(n, 0);
    CHECK(strstr(e.message, "bad_data") != NULL);
    CHECK(strstr(e.message, "parse error") != NULL);
    CHECK_STR(e.field, "status");
}

TEST(parse_wrong_shapes) {
    static const struct {
        const char *text;
        aiq_rc rc;
        const char *needle;
    } cases[] = {
        {"", AIQ_EPARSE, "not JSON"},
        {"<html>502 Bad Gateway</html>", AIQ_EPARSE, "not JSON"},
        {"{\"status\":\"success\"", AIQ_EPARSE, "not JSON"},
        {"[1,2]", AIQ_EPARSE, "status"},
        {"{\"status\":\"success\"}", AIQ_EPARSE, "resultType"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
         AIQ_EUNSUPPORTED, "matrix"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}", AIQ_EPARSE,
         "data.result"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}} trailing",
         AIQ_EPARSE, "not JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct oputil_sample *s = NULL;
        size_t n = 0;
        aiq_err e;
        aiq_err_clear(&e);
        aiq_rc rc = oputil_parse(cases[i].text, strlen(cases[i].text), NULL, &s, &n, NULL, &e);
        if (!CHECK_INT(rc, cases[i].rc) || !CHECK(strstr(e.message, cases[i].needle) != NULL))
            fprintf(stderr, "  case %zu: %s -> %s\n", i, cases[i].text, e.message);
        CHECK(s == NULL);
        free(s);
    }
}

/* Series without a node or a usable gpu label, or with a value that is
 * not a finite number, are skipped and counted; the rest are kept. */
TEST(parse_skips_bad_series) {
    const char *t =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"gpu\":\"0\"},\"value\":[1,\"5\"]},"                        /* no node */
        "{\"metric\":{\"node\":\"\",\"gpu\":\"0\"},\"value\":[1,\"5\"]},"          /* empty node */
        "{\"metric\":{\"node\":\"a\"},\"value\":[1,\"5\"]},"                       /* no gpu */
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"x\"},\"value\":[1,\"5\"]},"         /* gpu text */
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"-1\"},\"value\":[1,\"5\"]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"99999\"},\"value\":[1,\"5\"]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[1,\"NaN\"]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[1,\"+Inf\"]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[1,\"-Inf\"]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[1,\"12abc\"]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[1,12]},"             /* not a string */
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[\"1\",\"12\"]},"     /* t a string */
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"},\"value\":[1]},"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"0\"}},"
        "7,"
        "{\"metric\":{\"node\":\"a\",\"gpu\":\"3\"},\"value\":[1,\"1e2\"]}]}}";
    struct oputil_sample *s = NULL;
    struct oputil_skips sk;
    size_t n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(oputil_parse(t, strlen(t), NULL, &s, &n, &sk, &e), AIQ_OK);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(s[0].gpu, 3);
        CHECK_DBL(s[0].value, 100, 1e-9);
    }
    CHECK_INT(sk.no_node, 3); /* the bare 7 has no metric either */
    CHECK_INT(sk.bad_gpu, 4);
    CHECK_INT(sk.bad_value, 8);
    free(s);
}

TEST(parse_huge_inputs) {
    struct oputil_sample *s = NULL;
    size_t n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    /* past the byte cap: refused before parsing */
    CHECK_INT(oputil_parse("{}", (size_t)OPUTIL_MAX_BODY + 1, NULL, &s, &n, NULL, &e), AIQ_ETOOBIG);
    /* deeply nested: the tokenizer's depth limit, not a stack overflow */
    size_t depth = 100000;
    char *deep = malloc(depth + 1);
    if (!CHECK(deep != NULL))
        return;
    memset(deep, '[', depth);
    deep[depth] = '\0';
    aiq_err_clear(&e);
    CHECK_INT(oputil_parse(deep, depth, NULL, &s, &n, NULL, &e), AIQ_EPARSE);
    free(deep);
    /* many series: all read (under the series cap) */
    const char *head = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[";
    const char *one = "{\"metric\":{\"node\":\"n\",\"gpu\":\"1\"},\"value\":[1,\"50\"]},";
    size_t k = 20000, cap = strlen(head) + k * strlen(one) + 16, len = 0;
    char *big = malloc(cap);
    if (!CHECK(big != NULL))
        return;
    len += (size_t)snprintf(big + len, cap - len, "%s", head);
    for (size_t i = 0; i < k; i++)
        len += (size_t)snprintf(big + len, cap - len, "%s", one);
    big[len - 1] = ']'; /* replace the last comma */
    len += (size_t)snprintf(big + len, cap - len, "}}");
    aiq_err_clear(&e);
    CHECK_INT(oputil_parse(big, len, NULL, &s, &n, NULL, &e), AIQ_OK);
    CHECK_INT(n, k);
    free(s);
    free(big);
}

static oputil *mk(double stale) {
    struct oputil_opts o = {"http://127.0.0.1:1/", 15, stale, 1, NULL};
    oputil *u = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(oputil_create(&o, &u, &e), AIQ_OK);
    return u;
}

static struct oputil_sample smp(const char *node, int gpu, double v, double t) {
    struct oputil_sample s;
    memset(&s, 0, sizeof s);
    snprintf(s.node, sizeof s.node, "%s", node);
    s.gpu = gpu;
    s.value = v;
    s.t = t;
    return s;
}

/* A node is known only when every GPU has a fresh sample; values are
 * fractions clamped to 0..1; old samples are stale and counted. */
TEST(fill_known_stale_partial) {
    oputil *u = mk(60);
    if (!u)
        return;
    struct oputil_sample s[] = {smp("a", 0, 35, 1000), smp("a", 1, 150, 1000),
                                smp("b", 0, 20, 1000), /* b has 2 GPUs: one missing */
                                smp("c", 0, 10, 900),  /* old */
                                smp("a", 0, 40, 1010)};/* newer sample of a/0 in the same answer */
    CHECK_INT(oputil__merge(u, s, 5, true), 0);
    struct q_node n[4];
    memset(n, 0, sizeof n);
    n[0].name = "a";
    n[0].ngpus = 2;
    n[1].name = "b";
    n[1].ngpus = 2;
    n[2].name = "c";
    n[2].ngpus = 1;
    n[3].name = "d";
    n[3].ngpus = 1;
    n[3].util_known = true; /* a stale value from before is cleared */
    n[3].gpu_util[0] = 0.5;
    long known = -1, stale = -1;
    oputil_fill(u, n, 4, 1030, &known, &stale);
    CHECK(n[0].util_known);
    CHECK_DBL(n[0].gpu_util[0], 0.40, 1e-9);
    CHECK_DBL(n[0].gpu_util[1], 1.0, 1e-9);
    CHECK(!n[1].util_known);
    CHECK_DBL(n[1].gpu_util[0], 0, 0);
    CHECK(!n[2].util_known);
    CHECK(!n[3].util_known);
    CHECK_DBL(n[3].gpu_util[0], 0, 0);
    CHECK_INT(known, 1);
    CHECK_INT(stale, 1);
    /* time passes with no new answer: a's samples go stale too */
    oputil_fill(u, n, 4, 1010 + 61, &known, &stale);
    CHECK(!n[0].util_known);
    CHECK_INT(known, 0);
    CHECK_INT(stale, 4);
    /* an older sample never replaces a newer one */
    struct oputil_sample old = smp("a", 0, 99, 500);
    CHECK_INT(oputil__merge(u, &old, 1, true), 0);
    oputil_fill(u, n, 1, 1040, &known, NULL);
    CHECK_DBL(n[0].gpu_util[0], 0.40, 1e-9);
    /* framebuffer samples do not make a node known */
    struct oputil_sample fb = smp("d", 0, 1234, 1040);
    CHECK_INT(oputil__merge(u, &fb, 1, false), 0);
    oputil_fill(u, &n[3], 1, 1040, &known, NULL);
    CHECK(!n[3].util_known);
    size_t len = 0;
    char *j = oputil_json(u, false, 1040, &len);
    CHECK(j && strstr(j, "\"fbUsedMiB\":1234") && strstr(j, "\"name\":\"d\""));
    free(j);
    oputil_free(u);
}

TEST(state_and_json) {
    oputil *u = mk(60);
    if (!u)
        return;
    struct oputil_state st;
    oputil_stats(u, &st);
    CHECK(!st.up);
    CHECK_INT(st.fetches, 0);
    oputil__outcome(u, NULL, 100, 2);
    oputil_stats(u, &st);
    CHECK(st.up);
    CHECK_DBL(st.last_ok, 100, 0);
    CHECK_INT(st.skipped, 2);
    oputil__outcome(u, "query X: Connection refused", 110, 0);
    oputil_stats(u, &st);
    CHECK(!st.up);
    CHECK_INT(st.failures, 1);
    CHECK_DBL(st.last_ok, 100, 0);
    CHECK_STR(st.reason, "query X: Connection refused");
    char *j = oputil_json(u, false, 120, NULL);
    CHECK(j && strstr(j, "\"up\":false") && strstr(j, "Connection refused") &&
          strstr(j, "\"url\":\"http:\\/\\/127.0.0.1:1\""));
    free(j);
    j = oputil_json(NULL, true, 120, NULL);
    CHECK(j && strcmp(j, "{\"source\":\"none\",\"alnairAnnotations\":true}") == 0);
    free(j);
    oputil_free(u);
}

TEST(create_checks_flags) {
    static const struct {
        struct oputil_opts o;
        const char *field;
    } bad[] = {
        {{NULL, 15, 60, 1, NULL}, "--util-prometheus-url"},
        {{"prometheus:9090", 15, 60, 1, NULL}, "--util-prometheus-url"},
        {{"file:///etc/passwd", 15, 60, 1, NULL}, "--util-prometheus-url"},
        {{"http://p:9090", 0, 60, 1, NULL}, "--util-interval"},
        {{"http://p:9090", 15, -1, 1, NULL}, "--util-stale-after"},
        {{"http://p:9090", 15, NAN, 1, NULL}, "--util-stale-after"},
        {{"http://p:9090", 15, 60, 0, NULL}, "--util-timeout"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        oputil *u = (void *)1;
        aiq_err e;
        aiq_err_clear(&e);
        CHECK_INT(oputil_create(&bad[i].o, &u, &e), AIQ_EINVAL);
        CHECK(u == NULL);
        CHECK_STR(e.field, bad[i].field);
        CHECK(strstr(e.message, bad[i].field) != NULL);
    }
}

/* Nothing listens on port 1: the fetch fails, the state says so and
 * names the query; the cache keeps what it had. */
TEST(fetch_unreachable) {
    oputil *u = mk(60);
    if (!u)
        return;
    struct oputil_sample s = smp("a", 0, 30, 1000);
    CHECK_INT(oputil__merge(u, &s, 1, true), 0);
    CHECK_INT(oputil_fetch_once(u, 1001), -1);
    struct oputil_state st;
    oputil_stats(u, &st);
    CHECK(!st.up);
    CHECK_INT(st.failures, 1);
    CHECK(strstr(st.reason, OPUTIL_Q_UTIL) != NULL);
    struct q_node n;
    memset(&n, 0, sizeof n);
    n.name = "a";
    n.ngpus = 1;
    oputil_fill(u, &n, 1, 1001, NULL, NULL);
    CHECK(n.util_known); /* the cached sample is still fresh */
    oputil_free(u);
}

/* Alnair's profiler writes a Python dict's str() per GPU annotation. */
TEST(alnair_annotation_values) {
    double pct = -1;
    const char *field = NULL;
    CHECK_INT(oputil_alnair_value("{'mem_used': '4GB', 'mem_free': '8GB', 'process_cnt': 1, "
                                  "'cyclic_pattern': False, 'max_mem_util': '34.0'}",
                                  &pct, &field), 0);
    CHECK_DBL(pct, 34, 1e-9);
    CHECK_STR(field, "max_mem_util");
    CHECK_INT(oputil_alnair_value("{'max_mem_util': '5', 'max_gpu_util': 60}", &pct, &field), 0);
    CHECK_DBL(pct, 60, 1e-9);
    CHECK_STR(field, "max_gpu_util");
    CHECK_INT(oputil_alnair_value("{'mem_used': '4GB'}", &pct, &field), -1);
    CHECK_INT(oputil_alnair_value("{'max_mem_util': 'nan'}", &pct, &field), -1);
    CHECK_INT(oputil_alnair_value("{'max_mem_util': '-3'}", &pct, &field), -1);
    CHECK_INT(oputil_alnair_value("{'max_mem_util': ''}", &pct, &field), -1);
    CHECK_INT(oputil_alnair_value(NULL, &pct, &field), -1);
}

/* The UTIL cell of kubectl aiq nodes (cli_util.c) from a /util answer. */
TEST(view_cells) {
    json_object *doc = json_tokener_parse(
        "{\"source\":\"prometheus\",\"alnairAnnotations\":true,\"up\":false,"
        "\"url\":\"http://p:9090\",\"reason\":\"query X: refused\",\"lastSuccess\":100,"
        "\"nodes\":[{\"name\":\"a\",\"gpus\":["
        "{\"gpu\":0,\"util\":0.35,\"utilAgeSeconds\":3,\"stale\":false},"
        "{\"gpu\":1,\"util\":1,\"utilAgeSeconds\":8.4,\"stale\":false}]},"
        "{\"name\":\"b\",\"gpus\":[{\"gpu\":0,\"util\":0.1,\"utilAgeSeconds\":300,\"stale\":true}]},"
        "{\"name\":\"c\",\"gpus\":[{\"gpu\":0,\"fbUsedMiB\":5,\"stale\":true}]}]}");
    json_object *ann = json_tokener_parse(
        "{\"metadata\":{\"annotations\":{\"ai.centaurus.io/gpu-0\":\"{'max_mem_util': '12.0'}\","
        "\"ai.centaurus.io/gpu-1\":\"{'max_mem_util': '7'}\"}}}");
    char buf[64], line[400];
    if (!CHECK(doc && ann))
        return;
    CHECK_STR(cli_util_cell(doc, "a", NULL, 2, buf, sizeof buf), "35,100% 8s");
    CHECK_STR(cli_util_cell(doc, "a", NULL, 3, buf, sizeof buf), "partial");
    CHECK_STR(cli_util_cell(doc, "b", NULL, 1, buf, sizeof buf), "stale 5m");
    CHECK_STR(cli_util_cell(doc, "c", NULL, 1, buf, sizeof buf), "partial");
    CHECK_STR(cli_util_cell(doc, "zz", NULL, 1, buf, sizeof buf), "-");
    CHECK_STR(cli_util_cell(NULL, "a", NULL, 2, buf, sizeof buf), "?");
    /* annotations stand in where Prometheus has nothing fresh */
    CHECK_STR(cli_util_cell(doc, "zz", ann, 2, buf, sizeof buf), "12,7% ann");
    CHECK_STR(cli_util_cell(doc, "b", ann, 1, buf, sizeof buf), "12% ann");
    CHECK_STR(cli_util_cell(doc, "zz", ann, 3, buf, sizeof buf), "-"); /* gpu-2 has none */
    CHECK(strstr(cli_util_summary(doc, 160, line, sizeof line),
                 "prometheus http://p:9090 DOWN (query X: refused), last answer 60s ago") != NULL);
    json_object *none = json_tokener_parse("{\"source\":\"none\",\"alnairAnnotations\":false}");
    CHECK_STR(cli_util_summary(none, 160, line, sizeof line), "");
    CHECK_STR(cli_util_cell(none, "zz", ann, 2, buf, sizeof buf), "-");
    json_object_put(none);
    json_object_put(doc);
    json_object_put(ann);
}
