/* test_jsonpath.c -- printer-column JSONPath lookups (jsonpath.c). */
#include "test/apiserver/jsonpath.h"
#include "test/unit/th.h"

static const char *job_json =
    "{\"metadata\":{\"name\":\"job1\",\"labels\":{\"foo\":\"bar\"},"
    "\"annotations\":{\"sim.aiq.dev/duration\":\"30s\"}},"
    "\"spec\":{\"resources\":{\"gpus\":4},\"suspend\":false,\"nothing\":null},"
    "\"status\":{\"phase\":\"Running\",\"score\":1.5,\"conditions\":["
    "{\"type\":\"Admitted\",\"status\":\"True\",\"n\":1},"
    "{\"type\":\"Ready\",\"status\":\"False\",\"n\":2,\"x\":{\"y\":\"z\"}}]}}";

static const char *str_at(json_object *o, const char *p) {
    json_object *v = jpath_get(o, p);
    return v ? json_object_get_string(v) : NULL;
}

TEST(jsonpath_fields) {
    json_object *o = json_tokener_parse(job_json);
    CHECK_STR(str_at(o, ".status.phase"), "Running");
    CHECK_STR(str_at(o, "{.status.phase}"), "Running");
    CHECK_INT(json_object_get_int(jpath_get(o, ".spec.resources.gpus")), 4);
    CHECK_STR(str_at(o, ".metadata.labels.foo"), "bar");
    CHECK_STR(str_at(o, ".metadata.annotations['sim.aiq.dev/duration']"), "30s");
    CHECK_STR(str_at(o, ".metadata.annotations[\"sim.aiq.dev/duration\"]"), "30s");
    CHECK(jpath_get(o, ".spec.suspend") != NULL);
    CHECK(json_object_is_type(jpath_get(o, ".spec.suspend"), json_type_boolean));
    CHECK(jpath_get(o, ".spec.nothing") == NULL);        /* JSON null */
    CHECK(jpath_get(o, ".status.missing") == NULL);
    CHECK(jpath_get(o, ".status.phase.deeper") == NULL); /* through a string */
    json_object_put(o);
}

TEST(jsonpath_indexes_and_filters) {
    json_object *o = json_tokener_parse(job_json);
    CHECK_STR(str_at(o, ".status.conditions[0].type"), "Admitted");
    CHECK_STR(str_at(o, ".status.conditions[1].type"), "Ready");
    CHECK_STR(str_at(o, ".status.conditions[-1].type"), "Ready");
    CHECK(jpath_get(o, ".status.conditions[2]") == NULL);
    CHECK(jpath_get(o, ".status.phase[0]") == NULL);
    CHECK_STR(str_at(o, ".status.conditions[?(@.type==\"Ready\")].status"), "False");
    CHECK_STR(str_at(o, ".status.conditions[?(@.type=='Admitted')].status"), "True");
    CHECK_STR(str_at(o, ".status.conditions[?(@.type != \"Admitted\")].type"), "Ready");
    CHECK_STR(str_at(o, ".status.conditions[?(@.n==2)].type"), "Ready");
    CHECK_STR(str_at(o, ".status.conditions[?(@.x.y==\"z\")].type"), "Ready");
    CHECK_STR(str_at(o, ".status.conditions[?(@.x)].type"), "Ready");
    CHECK(jpath_get(o, ".status.conditions[?(@.type==\"Gone\")].status") == NULL);
    json_object_put(o);
}

TEST(jsonpath_malformed) {
    json_object *o = json_tokener_parse(job_json);
    const char *bad[] = {"", "status.phase", ".", ".status..phase",
                         ".status.conditions[", ".status.conditions[x]",
                         ".metadata.annotations['a", "{.status.phase",
                         ".status.conditions[?(@.type=)]",
                         ".status.conditions[?(@.type==\"Ready\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(jpath_get(o, bad[i]) == NULL);
        if (!CHECK(!jpath_valid(bad[i]))) fprintf(stderr, "    path %s\n", bad[i]);
    }
    CHECK(jpath_valid(".status.conditions[?(@.type==\"Ready\")].status"));
    CHECK(jpath_get(NULL, ".status") == NULL);
    char longp[JPATH_MAX + 8];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '.';
    longp[sizeof longp - 1] = '\0';
    CHECK(!jpath_valid(longp));
    json_object_put(o);
}
