/* test_schema.c -- CRD schema validation, defaults, pruning and the
 * API server's cause and Status wording (schema.c). */
#include "test/apiserver/schema.h"
#include "test/unit/th.h"

static const char *aijob_schema =
    "{\"type\":\"object\",\"properties\":{"
    " \"apiVersion\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},"
    " \"metadata\":{\"type\":\"object\"},"
    " \"spec\":{\"type\":\"object\",\"required\":[\"user\",\"resources\"],\"properties\":{"
    "  \"user\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":5,\"pattern\":\"^[a-z][a-z0-9-]*$\"},"
    "  \"title\":{\"type\":\"string\",\"minLength\":2},"
    "  \"replicas\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":64,\"default\":1},"
    "  \"ratio\":{\"type\":\"number\",\"minimum\":0,\"exclusiveMinimum\":true,\"maximum\":1.5,\"exclusiveMaximum\":true},"
    "  \"suspend\":{\"type\":\"boolean\",\"default\":false},"
    "  \"placement\":{\"type\":\"string\",\"enum\":[\"binpack\",\"spread\"]},"
    "  \"level\":{\"type\":\"integer\",\"enum\":[1,2]},"
    "  \"memory\":{\"x-kubernetes-int-or-string\":true},"
    "  \"startAfter\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "  \"note\":{\"type\":\"string\",\"nullable\":true},"
    "  \"code\":{\"type\":\"string\",\"pattern\":\"^\\\\d{3}-\\\\w+$\"},"
    "  \"args\":{\"type\":\"array\",\"maxItems\":3,\"minItems\":1,\"items\":{\"type\":\"string\"}},"
    "  \"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "  \"extra\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
    "  \"template\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
    "  \"resources\":{\"type\":\"object\",\"properties\":{"
    "   \"gpus\":{\"type\":\"integer\",\"minimum\":0},"
    "   \"gpuModel\":{\"type\":\"string\",\"default\":\"any\"}}},"
    "  \"hosts\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"name\"],"
    "   \"properties\":{\"name\":{\"type\":\"string\"}}}}}},"
    " \"status\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}";

static json_object *schema_obj(void) { return json_tokener_parse(aijob_schema); }

static json_object *job(const char *spec) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\","
             "\"metadata\":{\"name\":\"job1\",\"whatever\":1},\"spec\":%s}", spec);
    json_object *o = json_tokener_parse(buf);
    return o;
}

/* Validates spec and returns the causes (caller frees); *n gets the count. */
static json_object *run(const char *spec, bool strict, int *n, json_object **obj) {
    json_object *s = schema_obj();
    json_object *o = job(spec);
    json_object *causes = json_object_new_array();
    *n = sv_validate(s, o, strict, causes);
    json_object_put(s);
    if (obj) *obj = o;
    else json_object_put(o);
    return causes;
}

static const char *cause_at(json_object *causes, size_t i, const char *k) {
    json_object *c = json_object_array_get_idx(causes, i), *v = NULL;
    if (!c || !json_object_object_get_ex(c, k, &v)) return NULL;
    return json_object_get_string(v);
}

/* One invalid field each: expected reason, field and message. */
TEST(schema_cause_wording) {
    static const struct { const char *spec, *reason, *field, *message; } t[] = {
        {"{\"user\":\"al\",\"resources\":{},\"replicas\":0}", "FieldValueInvalid", "spec.replicas",
         "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"},
        {"{\"user\":\"al\",\"resources\":{},\"replicas\":65}", "FieldValueInvalid", "spec.replicas",
         "Invalid value: 65: spec.replicas in body should be less than or equal to 64"},
        {"{\"user\":\"al\",\"resources\":{},\"ratio\":0}", "FieldValueInvalid", "spec.ratio",
         "Invalid value: 0: spec.ratio in body should be greater than 0"},
        {"{\"user\":\"al\",\"resources\":{},\"ratio\":1.5}", "FieldValueInvalid", "spec.ratio",
         "Invalid value: 1.5: spec.ratio in body should be less than 1.5"},
        {"{\"user\":\"al\",\"resources\":{},\"replicas\":\"two\"}", "FieldValueTypeInvalid", "spec.replicas",
         "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""},
        {"{\"user\":\"al\",\"resources\":{},\"replicas\":1.5}", "FieldValueTypeInvalid", "spec.replicas",
         "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""},
        {"{\"user\":5,\"resources\":{}}", "FieldValueTypeInvalid", "spec.user",
         "Invalid value: \"integer\": spec.user in body must be of type string: \"integer\""},
        {"{\"user\":\"al\",\"resources\":{},\"suspend\":\"yes\"}", "FieldValueTypeInvalid", "spec.suspend",
         "Invalid value: \"string\": spec.suspend in body must be of type boolean: \"string\""},
        {"{\"resources\":{}}", "FieldValueRequired", "spec.user", "Required value"},
        {"{\"user\":\"al\",\"resources\":{},\"placement\":\"x\"}", "FieldValueNotSupported", "spec.placement",
         "Unsupported value: \"x\": supported values: \"binpack\", \"spread\""},
        {"{\"user\":\"al\",\"resources\":{},\"level\":3}", "FieldValueNotSupported", "spec.level",
         "Unsupported value: 3: supported values: \"1\", \"2\""},
        {"{\"user\":\"al\",\"resources\":{},\"title\":\"x\"}", "FieldValueInvalid", "spec.title",
         "Invalid value: \"x\": spec.title in body should be at least 2 chars long"},
        {"{\"user\":\"abcdef\",\"resources\":{}}", "FieldValueTooLong", "spec.user",
         "Too long: may not be more than 5 bytes"},
        {"{\"user\":\"Al\",\"resources\":{}}", "FieldValueInvalid", "spec.user",
         "Invalid value: \"Al\": spec.user in body should match '^[a-z][a-z0-9-]*$'"},
        {"{\"user\":\"al\",\"resources\":{},\"code\":\"12-x\"}", "FieldValueInvalid", "spec.code",
         "Invalid value: \"12-x\": spec.code in body should match '^\\d{3}-\\w+$'"},
        {"{\"user\":\"al\",\"resources\":{},\"args\":[\"a\",\"b\",\"c\",\"d\"]}", "FieldValueTooMany",
         "spec.args", "Too many: 4: must have at most 3 items"},
        {"{\"user\":\"al\",\"resources\":{},\"args\":[]}", "FieldValueInvalid", "spec.args",
         "Invalid value: []: spec.args in body should have at least 1 items"},
        {"{\"user\":\"al\",\"resources\":{},\"args\":[\"a\",2]}", "FieldValueTypeInvalid", "spec.args[1]",
         "Invalid value: \"integer\": spec.args[1] in body must be of type string: \"integer\""},
        {"{\"user\":\"al\",\"resources\":{\"gpus\":-1}}", "FieldValueInvalid", "spec.resources.gpus",
         "Invalid value: -1: spec.resources.gpus in body should be greater than or equal to 0"},
        {"{\"user\":\"al\",\"resources\":{},\"startAfter\":\"tomorrow\"}", "FieldValueInvalid",
         "spec.startAfter",
         "Invalid value: \"tomorrow\": spec.startAfter in body must be of type date-time: \"tomorrow\""},
        {"{\"user\":\"al\",\"resources\":{},\"memory\":true}", "FieldValueTypeInvalid", "spec.memory",
         "Invalid value: \"boolean\": spec.memory in body must be of type integer,string: \"boolean\""},
        {"{\"user\":\"al\",\"resources\":{},\"labels\":{\"a\":1}}", "FieldValueTypeInvalid", "spec.labels.a",
         "Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\""},
        {"{\"user\":\"al\",\"resources\":{},\"hosts\":[{\"x\":1}]}", "FieldValueRequired",
         "spec.hosts[0].name", "Required value"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int n;
        json_object *c = run(t[i].spec, false, &n, NULL);
        if (!CHECK_INT(n, 1)) {
            fprintf(stderr, "    case %zu: %s\n", i, json_object_to_json_string(c));
        } else {
            CHECK_STR(cause_at(c, 0, "reason"), t[i].reason);
            CHECK_STR(cause_at(c, 0, "field"), t[i].field);
            CHECK_STR(cause_at(c, 0, "message"), t[i].message);
        }
        json_object_put(c);
    }
}

TEST(schema_valid_object_defaults_and_pruning) {
    int n;
    json_object *o = NULL;
    json_object *c = run("{\"user\":\"al\",\"resources\":{\"gpus\":2,\"bogus\":1},\"foo\":{\"a\":1},"
                         "\"memory\":\"8Gi\",\"note\":null,\"replicas\":null,\"ratio\":0.5,"
                         "\"startAfter\":\"2026-11-21T10:16:31Z\",\"code\":\"123-ab_c\","
                         "\"labels\":{\"x\":\"y\"},\"extra\":{\"anything\":[1,{\"b\":2}]},"
                         "\"hosts\":[{\"name\":\"h\",\"junk\":true}]}",
                         false, &n, &o);
    CHECK_INT(n, 0);
    const char *want =
        "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"metadata\":{\"name\":\"job1\","
        "\"whatever\":1},\"spec\":{\"user\":\"al\",\"resources\":{\"gpus\":2,\"gpuModel\":\"any\"},"
        "\"memory\":\"8Gi\",\"note\":null,\"ratio\":0.5,\"startAfter\":\"2026-11-21T10:16:31Z\","
        "\"code\":\"123-ab_c\",\"labels\":{\"x\":\"y\"},\"extra\":{\"anything\":[1,{\"b\":2}]},"
        "\"hosts\":[{\"name\":\"h\"}],\"replicas\":1,\"suspend\":false}}";
    json_object *w = json_tokener_parse(want);
    if (!CHECK(json_object_equal(o, w)))
        fprintf(stderr, "    got  %s\n", json_object_to_json_string(o));
    json_object_put(w);
    json_object_put(o);
    json_object_put(c);
}

TEST(schema_strict_unknown_fields) {
    int n;
    json_object *o = NULL;
    json_object *c = run("{\"user\":\"al\",\"resources\":{\"bogus\":1},\"foo\":2}", true, &n, &o);
    CHECK_INT(n, 2);
    CHECK_STR(cause_at(c, 0, "reason"), "UnknownField");
    CHECK_STR(cause_at(c, 0, "message"), "unknown field \"spec.resources.bogus\"");
    CHECK_STR(cause_at(c, 1, "field"), "spec.foo");
    /* strict does not prune */
    json_object *spec = NULL;
    json_object_object_get_ex(o, "spec", &spec);
    CHECK(json_object_object_get_ex(spec, "foo", NULL));
    char msg[512];
    CHECK_INT(sv_status_message("AIJob", "aiq.dev", "job1", c, msg, sizeof msg), 400);
    CHECK_STR(msg, "strict decoding error: unknown field \"spec.resources.bogus\", "
                   "unknown field \"spec.foo\"");
    json_object_put(o);
    json_object_put(c);
}

TEST(schema_status_message) {
    int n;
    char msg[1024];
    json_object *c = run("{\"user\":\"al\",\"resources\":{},\"replicas\":0}", false, &n, NULL);
    CHECK_INT(sv_status_message("AIJob", "aiq.dev", "job1", c, msg, sizeof msg), 422);
    CHECK_STR(msg, "AIJob.aiq.dev \"job1\" is invalid: spec.replicas: Invalid value: 0: "
                   "spec.replicas in body should be greater than or equal to 1");
    json_object_put(c);
    c = run("{\"replicas\":0}", false, &n, NULL);
    CHECK_INT(n, 3);
    CHECK_INT(sv_status_message("AIJob", "aiq.dev", "job1", c, msg, sizeof msg), 422);
    CHECK_STR(msg, "AIJob.aiq.dev \"job1\" is invalid: [spec.user: Required value, "
                   "spec.resources: Required value, spec.replicas: Invalid value: 0: "
                   "spec.replicas in body should be greater than or equal to 1]");
    json_object_put(c);
    json_object *empty = json_object_new_array();
    CHECK_INT(sv_status_message("AIJob", "aiq.dev", "job1", empty, msg, sizeof msg), 200);
    CHECK_STR(msg, "");
    json_object_put(empty);
    /* truncation never overruns */
    char small[16];
    c = run("{\"replicas\":0}", false, &n, NULL);
    CHECK_INT(sv_status_message("AIJob", "aiq.dev", "job1", c, small, sizeof small), 422);
    CHECK_INT((long)strlen(small), 15);
    json_object_put(c);
}

TEST(schema_missing_spec_and_non_object) {
    json_object *s = json_tokener_parse(
        "{\"type\":\"object\",\"required\":[\"spec\"],\"properties\":{\"spec\":{\"type\":\"object\"}}}");
    json_object *o = json_tokener_parse("{\"apiVersion\":\"v\",\"kind\":\"K\",\"metadata\":{}}");
    json_object *c = json_object_new_array();
    CHECK_INT(sv_validate(s, o, false, c), 1);
    CHECK_STR(cause_at(c, 0, "field"), "spec");
    json_object_put(o);
    json_object_put(c);
    c = json_object_new_array();
    o = json_tokener_parse("{\"spec\":[1]}");
    CHECK_INT(sv_validate(s, o, false, c), 1);
    CHECK_STR(cause_at(c, 0, "message"),
              "Invalid value: \"array\": spec in body must be of type object: \"array\"");
    json_object_put(o);
    json_object_put(c);
    json_object_put(s);
}

TEST(schema_cel_rules) {
    json_object *s = json_tokener_parse(
        "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
        "\"x-kubernetes-validations\":["
        "{\"rule\":\"!has(self.resources) || !has(self.resources.gpuModel) || "
        "(has(self.resources.gpus) && self.resources.gpus > 0)\","
        "\"message\":\"resources.gpuModel needs gpus > 0 or gpuMemoryMiB > 0\","
        "\"fieldPath\":\".resources.gpuModel\"},"
        "{\"rule\":\"self.a == oldSelf.a\",\"message\":\"transition rules are skipped\"},"
        "{\"rule\":\"!has(self.b) || self.b < 10\",\"reason\":\"FieldValueForbidden\"}],"
        "\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0},\"b\":{\"type\":\"integer\"},"
        "\"resources\":{\"type\":\"object\",\"properties\":{\"gpus\":{\"type\":\"integer\"},"
        "\"gpuModel\":{\"type\":\"string\"}}}}}}}");
    static const struct { const char *obj; int n; const char *field, *reason, *message; } t[] = {
        {"{\"spec\":{\"resources\":{\"gpus\":1,\"gpuModel\":\"A100\"},\"b\":3}}", 0, NULL, NULL, NULL},
        {"{\"spec\":{\"resources\":{\"gpuModel\":\"A100\"}}}", 1, "spec.resources.gpuModel",
         "FieldValueInvalid",
         "Invalid value: \"object\": resources.gpuModel needs gpus > 0 or gpuMemoryMiB > 0"},
        {"{\"spec\":{\"b\":12}}", 1, "spec", "FieldValueForbidden",
         "Invalid value: \"object\": failed rule: !has(self.b) || self.b < 10"},
        /* a blocking structural error keeps every rule from running, and
         * one "<nil>" cause says so (the real server's hasBlockingErr) */
        {"{\"spec\":{\"b\":\"x\",\"resources\":{\"gpuModel\":\"A100\"}}}", 2, "spec.b",
         "FieldValueTypeInvalid", NULL},
        /* a non-blocking one (a range) does not: the rule still runs */
        {"{\"spec\":{\"b\":20,\"a\":-1}}", 2, "spec.a", "FieldValueInvalid", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_object *o = json_tokener_parse(t[i].obj), *c = json_object_new_array();
        int n = sv_validate(s, o, false, c);
        if (!CHECK_INT(n, t[i].n)) fprintf(stderr, "    case %zu: %s\n", i, json_object_to_json_string(c));
        else if (n) {
            CHECK_STR(cause_at(c, 0, "field"), t[i].field);
            CHECK_STR(cause_at(c, 0, "reason"), t[i].reason);
            if (t[i].message) CHECK_STR(cause_at(c, 0, "message"), t[i].message);
        }
        if (i == 3 && n == 2) {
            CHECK_STR(cause_at(c, 1, "field"), "<nil>");
            CHECK(strstr(cause_at(c, 1, "message"), "some validation rules were not checked") != NULL);
        }
        if (i == 4 && n == 2) CHECK_STR(cause_at(c, 1, "reason"), "FieldValueForbidden");
        json_object_put(o);
        json_object_put(c);
    }
    json_object_put(s);
}

TEST(schema_metadata_name_and_generate_name) {
    json_object *s = json_tokener_parse(
        "{\"type\":\"object\",\"properties\":{\"metadata\":{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"maxLength\":5},"
        "\"generateName\":{\"type\":\"string\",\"pattern\":\"^j-$\"}}},"
        "\"spec\":{\"type\":\"object\"}}}");
    static const struct { const char *obj; const char *fields; } t[] = {
        {"{\"metadata\":{\"name\":\"abcde\",\"labels\":{\"x\":\"y\"}},\"spec\":{}}", ""},
        {"{\"metadata\":{\"name\":\"abcdef\"},\"spec\":{}}", "metadata.name"},
        {"{\"metadata\":{\"name\":\"abc\",\"generateName\":\"x-\"},\"spec\":{}}", "metadata.generateName"},
        /* the rest of metadata is neither validated nor pruned */
        {"{\"metadata\":{\"name\":\"a\",\"annotations\":{\"k\":\"v\"},\"junk\":1},\"spec\":{}}", ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_object *o = json_tokener_parse(t[i].obj), *c = json_object_new_array();
        sv_validate(s, o, false, c);
        char got[256] = "";
        for (size_t k = 0; k < json_object_array_length(c); k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? "," : "", cause_at(c, k, "field"));
        if (!CHECK_STR(got, t[i].fields)) fprintf(stderr, "    case %zu\n", i);
        if (i == 1) CHECK_STR(cause_at(c, 0, "message"), "Too long: may not be more than 5 bytes");
        if (i == 3) CHECK(json_object_object_get_ex(json_object_object_get(o, "metadata"), "junk", NULL));
        json_object_put(o);
        json_object_put(c);
    }
    json_object_put(s);
}
