/* test_selector.c -- label and field selector parsing and matching. */
#include "test/apiserver/selector.h"
#include "test/unit/th.h"

static json_object *pod(const char *labels_json, const char *node, const char *phase) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"team-a\",\"labels\":%s},"
             "\"spec\":{%s%s%s},\"status\":{\"phase\":\"%s\",\"restarts\":3,\"ok\":true}}",
             labels_json, node ? "\"nodeName\":\"" : "", node ? node : "",
             node ? "\"" : "", phase);
    return json_tokener_parse(buf);
}

/* Parses a label selector and matches it; -1 when it does not parse. */
static int lmatch(const char *sel, json_object *o) {
    aiq_err e;
    aiq_err_clear(&e);
    struct sel *s = sel_parse_labels(sel, &e);
    if (!s) return -1;
    int r = sel_match(s, o);
    sel_free(s);
    return r;
}

static int fmatch(const char *sel, json_object *o) {
    aiq_err e;
    aiq_err_clear(&e);
    struct sel *s = sel_parse_fields(sel, &e);
    if (!s) return -1;
    int r = sel_match(s, o);
    sel_free(s);
    return r;
}

TEST(label_selector_table) {
    json_object *o = pod("{\"app\":\"train\",\"tier\":\"gpu\",\"aiq.dev/job\":\"job1\",\"gen\":\"5\"}",
                         NULL, "Pending");
    static const struct { const char *sel; int want; } t[] = {
        {"", 1}, {"app=train", 1}, {"app==train", 1}, {"app=serve", 0},
        {"app!=serve", 1}, {"app!=train", 0}, {"missing!=x", 1},
        {"app", 1}, {"missing", 0}, {"!missing", 1}, {"!app", 0},
        {"app in (train,serve)", 1}, {"app in (serve)", 0},
        {"app notin (serve, x)", 1}, {"app notin (train)", 0},
        {"missing notin (a)", 1}, {"missing in (a)", 0},
        {"app=train,tier=gpu", 1}, {"app=train, tier=cpu", 0},
        {" app = train , !missing ", 1}, {"aiq.dev/job=job1", 1},
        {"gen>4", 1}, {"gen>5", 0}, {"gen<6", 1}, {"app>1", 0},
        {"missing=", 0}, {"app in (train,)", 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!CHECK_INT(lmatch(t[i].sel, o), t[i].want)) fprintf(stderr, "    selector: %s\n", t[i].sel);
    json_object_put(o);
    /* no labels at all */
    json_object *bare = json_tokener_parse("{\"metadata\":{\"name\":\"x\"}}");
    CHECK_INT(lmatch("app!=x", bare), 1);
    CHECK_INT(lmatch("app", bare), 0);
    CHECK_INT(lmatch("!app", bare), 1);
    json_object_put(bare);
}

TEST(label_selector_errors_name_the_part) {
    static const struct { const char *sel; const char *part; } t[] = {
        {"app=", NULL},  /* valid: empty value */
        {"app in train", "'train'"},
        {"app in (a", "at end of input"},
        {"app ~ x", "'~'"},
        {"a b", "'b'"},
        {"=x", "'='"},
        {"app=a b", "'b'"},
        {"-bad=x", "\"-bad\""},
        {"app=bad value!", "'value'"},
        {"app=-x", "\"-x\""},
        {"gen>abc", "'abc'"},
        {"app,", "at end of input"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        aiq_err e;
        aiq_err_clear(&e);
        struct sel *s = sel_parse_labels(t[i].sel, &e);
        if (!t[i].part) {
            CHECK(s != NULL);
            sel_free(s);
            continue;
        }
        if (!CHECK(s == NULL)) { sel_free(s); continue; }
        CHECK_INT(e.code, AIQ_EINVAL);
        CHECK_STR(e.field, "labelSelector");
        if (!CHECK(strstr(e.message, t[i].part) != NULL))
            fprintf(stderr, "    selector %s: message %s\n", t[i].sel, e.message);
    }
}

TEST(field_selector_table) {
    json_object *bound = pod("{}", "gpu-a-0", "Running");
    json_object *unbound = pod("{}", NULL, "Pending");
    CHECK_INT(fmatch("metadata.name=p1", bound), 1);
    CHECK_INT(fmatch("metadata.name==p1", bound), 1);
    CHECK_INT(fmatch("metadata.name=p2", bound), 0);
    CHECK_INT(fmatch("metadata.namespace=team-a", bound), 1);
    CHECK_INT(fmatch("metadata.namespace!=team-a", bound), 0);
    CHECK_INT(fmatch("spec.nodeName=gpu-a-0", bound), 1);
    CHECK_INT(fmatch("spec.nodeName=", unbound), 1);
    CHECK_INT(fmatch("spec.nodeName=", bound), 0);
    CHECK_INT(fmatch("spec.nodeName!=", bound), 1);
    CHECK_INT(fmatch("status.phase!=Succeeded,status.phase!=Failed", bound), 1);
    CHECK_INT(fmatch("spec.nodeName=gpu-a-0,status.phase!=Running", bound), 0);
    CHECK_INT(fmatch("status.restarts=3", bound), 1);
    CHECK_INT(fmatch("status.ok=true", bound), 1);
    CHECK_INT(fmatch("", bound), 1);
    json_object *ev = json_tokener_parse(
        "{\"involvedObject\":{\"uid\":\"u-1\",\"name\":\"job1\",\"namespace\":\"default\","
        "\"kind\":\"AIJob\"},\"reason\":\"a,b=c\"}");
    CHECK_INT(fmatch("involvedObject.uid=u-1,involvedObject.name=job1,"
                     "involvedObject.namespace=default,involvedObject.kind=AIJob", ev), 1);
    CHECK_INT(fmatch("involvedObject.kind=Pod", ev), 0);
    CHECK_INT(fmatch("reason=a\\,b\\=c", ev), 1);
    json_object_put(ev);

    aiq_err e;
    aiq_err_clear(&e);
    struct sel *s = sel_parse_fields("metadata.name=p1,spec.nodeName=n", &e);
    CHECK_STR(sel_required_value(s, "metadata.name"), "p1");
    CHECK(sel_required_value(s, "metadata.namespace") == NULL);
    CHECK(!sel_empty(s));
    sel_free(s);
    json_object_put(bound);
    json_object_put(unbound);
}

TEST(field_selector_errors) {
    static const struct { const char *sel; const char *part; } t[] = {
        {"metadata.name", "\"metadata.name\" has no operator"},
        {"=x", "no field name"},
        {"a=b,,c=d", "empty term at offset 4"},
        {"a..b=c", "bad field name \"a..b\""},
        {"a=b\\x", "bad escape"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        aiq_err e;
        aiq_err_clear(&e);
        struct sel *s = sel_parse_fields(t[i].sel, &e);
        if (!CHECK(s == NULL)) { sel_free(s); continue; }
        CHECK_STR(e.field, "fieldSelector");
        if (!CHECK(strstr(e.message, t[i].part) != NULL))
            fprintf(stderr, "    selector %s: message %s\n", t[i].sel, e.message);
    }
    sel_free(NULL);
    CHECK(sel_match(NULL, NULL));
    CHECK(sel_empty(NULL));
}

TEST(selector_caps) {
    char big[SEL_MAX_LEN + 10];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(sel_parse_labels(big, &e) == NULL);
    CHECK_INT(e.code, AIQ_ETOOBIG);
    char many[2048];
    size_t len = 0;
    for (int i = 0; i < SEL_MAX_REQS + 1; i++)
        len += (size_t)snprintf(many + len, sizeof many - len, "%sk", i ? "," : "");
    aiq_err_clear(&e);
    CHECK(sel_parse_labels(many, &e) == NULL);
    CHECK_INT(e.code, AIQ_ETOOBIG);
}
