/* test_pod_rules.c -- the Kubernetes validation and defaulting rules of
 * the local API server, called directly: name and metadata checks
 * (validate.c) and pod defaulting, QoS, create and update validation
 * (pod_rules.c). Expected reasons, field paths and messages are the real
 * server's (Kubernetes 1.34), as test/e2e/differential.sh measures them. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/apiserver/apisrv_int.h"
#include "test/apiserver/jpatch.h"
#include "test/unit/th.h"
#include "common/json.h"

/* ---- helpers ---------------------------------------------------------------- */

/* The causes of st as "field=reason" joined by spaces (static buffer). */
static const char *causes(const struct apisrv__st *st) {
    static char buf[4096];
    size_t j = 0;
    buf[0] = 0;
    for (size_t i = 0; st->causes && i < json_object_array_length(st->causes); i++) {
        json_object *c = json_object_array_get_idx(st->causes, i);
        j += (size_t)snprintf(buf + j, sizeof buf - j, "%s%s=%s", i ? " " : "",
                              aiq_jpath_str(c, "field"), aiq_jpath_str(c, "reason"));
        if (j >= sizeof buf) break;
    }
    return buf;
}

static const char *cause_msg(const struct apisrv__st *st, size_t i) {
    json_object *c = st->causes && i < json_object_array_length(st->causes)
                         ? json_object_array_get_idx(st->causes, i) : NULL;
    return c ? aiq_jpath_str(c, "message") : "";
}

static json_object *parse(const char *s) {
    json_object *o = json_tokener_parse(s);
    if (!o) fprintf(stderr, "    bad test JSON: %s\n", s);
    return o;
}

/* A pod with one container and SPEC's members merged in (SPEC is the
 * text of a JSON object's members, without braces). */
static json_object *pod(const char *spec) {
    char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]%s%s}}",
             spec && spec[0] ? "," : "", spec ? spec : "");
    return parse(buf);
}

/* Create-validates a defaulted pod; returns its causes. */
static const char *create_causes(json_object *p, struct apisrv__st *st) {
    apisrv__st_init(st);
    if (apisrv__pod_default(p, st) != 0) return "(defaulting failed)";
    apisrv__pod_validate_create(p, st);
    return causes(st);
}

/* ---- names ---------------------------------------------------------------------- */

TEST(pod_rules_name_checks) {
    struct apisrv__msgs m = {0};
    apisrv__is_qualified_name("aiq.dev/admission", &m);
    CHECK_INT(m.n, 0);
    apisrv__is_qualified_name("-a/b/c", &m);
    CHECK_INT(m.n, 1);
    CHECK(strstr(m.m[0], "a qualified name must consist of") == m.m[0]);
    CHECK(strstr(m.m[0], "with an optional DNS subdomain prefix and '/'") != NULL);
    memset(&m, 0, sizeof m);
    apisrv__is_qualified_name("/b", &m);
    CHECK_INT(m.n, 1);
    CHECK_STR(m.m[0], "prefix part must be non-empty");
    memset(&m, 0, sizeof m);
    apisrv__is_qualified_name("Ex.com/x", &m);
    CHECK_INT(m.n, 1);
    CHECK(strncmp(m.m[0], "prefix part a lowercase RFC 1123 subdomain", 42) == 0);
    memset(&m, 0, sizeof m);
    char long64[70];
    memset(long64, 'x', 64);
    long64[64] = 0;
    apisrv__is_qualified_name(long64, &m);
    CHECK_INT(m.n, 1);
    CHECK_STR(m.m[0], "name part must be no more than 63 characters");
    memset(&m, 0, sizeof m);
    apisrv__is_label_value(long64, &m);
    CHECK_INT(m.n, 1);
    CHECK_STR(m.m[0], "must be no more than 63 characters");
    memset(&m, 0, sizeof m);
    long64[63] = 0;   /* 63 is the most a value may have */
    apisrv__is_label_value(long64, &m);
    apisrv__is_label_value("", &m);
    CHECK_INT(m.n, 0);
    apisrv__is_dns1123_label("a.b", &m);
    CHECK_INT(m.n, 1);
    CHECK_STR(m.m[0], "must not contain dots");
    memset(&m, 0, sizeof m);
    apisrv__is_dns1123_subdomain("Bad_Name", &m);
    CHECK_INT(m.n, 1);
    CHECK(strstr(m.m[0], "(e.g. 'example.com', regex used for validation is "
                         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')") != NULL);
}

TEST(pod_rules_object_meta) {
    struct apisrv__type t;
    struct apisrv__st st;
    memset(&t, 0, sizeof t);
    snprintf(t.key, sizeof t.key, "/pods");
    /* annotations: exactly 256 KiB of keys and values is fine, one more
     * byte is TooLong */
    size_t n = 256 * 1024 - 1;
    char *v = malloc(n + 1);
    if (!CHECK(v != NULL)) {
        free(v);   /* NULL: nothing, but says so to cppcheck */
        return;
    }
    memset(v, 'x', n);
    v[n] = 0;
    json_object *o = parse("{\"metadata\":{\"name\":\"p\",\"annotations\":{}}}");
    json_object *ann = json_object_object_get(json_object_object_get(o, "metadata"), "annotations");
    json_object_object_add(ann, "a", json_object_new_string(v));
    apisrv__st_init(&st);
    apisrv__validate_meta(&t, o, &st);
    CHECK_STR(causes(&st), "");
    apisrv__st_deinit(&st);
    json_object_object_add(ann, "ab", json_object_new_string(""));
    apisrv__validate_meta(&t, o, &st);
    CHECK_STR(causes(&st), "metadata.annotations=FieldValueTooLong");
    CHECK_STR(cause_msg(&st, 0), "Too long: may not be more than 262144 bytes");
    apisrv__st_deinit(&st);
    json_object_put(o);
    free(v);
    /* keys lower-cased first; owner references; finalizers; a name */
    o = parse("{\"metadata\":{\"generateName\":\"job-\",\"annotations\":{\"Example.COM/Key\":\"v\"},"
              "\"labels\":{\"ok\":\"\",\"k\":\"-v\"},\"finalizers\":[\"a b\"],"
              "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"\",\"name\":\"n\",\"uid\":\"u\"}]}}");
    apisrv__validate_meta(&t, o, &st);
    CHECK_STR(causes(&st), "metadata.name=FieldValueRequired metadata.labels=FieldValueInvalid "
                           "metadata.ownerReferences.kind=FieldValueInvalid metadata.finalizers=FieldValueInvalid");
    CHECK_STR(cause_msg(&st, 0), "Required value: name or generateName is required");
    apisrv__st_deinit(&st);
    json_object_put(o);
    /* a namespace is a DNS label, a pod a subdomain */
    o = parse("{\"metadata\":{\"name\":\"a.b\"}}");
    apisrv__validate_meta(&t, o, &st);
    CHECK_STR(causes(&st), "");
    snprintf(t.key, sizeof t.key, "/namespaces");
    apisrv__validate_meta(&t, o, &st);
    CHECK_STR(causes(&st), "metadata.name=FieldValueInvalid");
    CHECK_STR(cause_msg(&st, 0), "Invalid value: \"a.b\": must not contain dots");
    apisrv__st_deinit(&st);
    json_object_put(o);
}

/* ---- defaulting and QoS -------------------------------------------------------------- */

TEST(pod_rules_defaults) {
    struct apisrv__st st;
    json_object *p = pod("\"initContainers\":[{\"name\":\"i\",\"image\":\"reg:5000/tool@sha256:ab\"}],"
                         "\"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
                         "\"effect\":\"NoExecute\",\"tolerationSeconds\":10}]");
    json_object *c = json_object_array_get_idx(json_object_object_get(json_object_object_get(p, "spec"), "containers"), 0);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "limits", parse("{\"cpu\":\"1000m\",\"memory\":\"1024Mi\",\"nvidia.com/gpu\":2}"));
    json_object_object_add(res, "requests", parse("{\"cpu\":\"0.5\"}"));
    json_object_object_add(c, "resources", res);
    apisrv__st_init(&st);
    CHECK_INT(apisrv__pod_default(p, &st), 0);
    CHECK_STR(aiq_jpath_str(p, "spec.restartPolicy"), "Always");
    CHECK_STR(aiq_jpath_str(p, "spec.dnsPolicy"), "ClusterFirst");
    CHECK_STR(aiq_jpath_str(p, "spec.schedulerName"), "default-scheduler");
    CHECK_INT(json_object_get_int(json_object_object_get(json_object_object_get(p, "spec"),
                                                         "terminationGracePeriodSeconds")), 30);
    CHECK_STR(aiq_jpath_str(c, "imagePullPolicy"), "Always");
    CHECK_STR(aiq_jpath_str(c, "terminationMessagePolicy"), "File");
    CHECK_STR(aiq_jpath_str(c, "resources.limits.cpu"), "1");
    CHECK_STR(aiq_jpath_str(c, "resources.limits.memory"), "1Gi");
    json_object *req = json_object_object_get(json_object_object_get(c, "resources"), "requests");
    CHECK_STR(json_object_get_string(json_object_object_get(req, "cpu")), "500m");   /* its own */
    CHECK_STR(json_object_get_string(json_object_object_get(req, "memory")), "1Gi"); /* from the limit */
    CHECK_STR(json_object_get_string(json_object_object_get(req, "nvidia.com/gpu")), "2");
    json_object *ic = json_object_array_get_idx(
        json_object_object_get(json_object_object_get(p, "spec"), "initContainers"), 0);
    CHECK_STR(aiq_jpath_str(ic, "imagePullPolicy"), "IfNotPresent");   /* a digest */
    /* the admission plugin's tolerations: not-ready added, unreachable
     * already tolerated; defaulting twice adds nothing more */
    CHECK_INT(apisrv__pod_default(p, &st), 0);
    json_object *tols = json_object_object_get(json_object_object_get(p, "spec"), "tolerations");
    CHECK_INT(json_object_array_length(tols), 2);
    CHECK_STR(aiq_jpath_str(json_object_array_get_idx(tols, 1), "key"), "node.kubernetes.io/not-ready");
    CHECK_STR(apisrv__pod_qos(p), "Burstable");
    apisrv__st_deinit(&st);
    json_object_put(p);

    static const struct { const char *image, *policy; } pulls[] = {
        {"busybox", "Always"}, {"busybox:latest", "Always"}, {"busybox:1.36", "IfNotPresent"},
        {"reg:5000/busybox", "Always"}, {"reg:5000/busybox:2", "IfNotPresent"},
    };
    for (size_t i = 0; i < sizeof pulls / sizeof pulls[0]; i++) {
        char spec[200];
        snprintf(spec, sizeof spec, "\"containers\":[{\"name\":\"c\",\"image\":\"%s\"}]", pulls[i].image);
        p = pod(spec);
        apisrv__st_init(&st);
        apisrv__pod_default(p, &st);
        CHECK_STR(aiq_jpath_str(json_object_array_get_idx(
                                    json_object_object_get(json_object_object_get(p, "spec"), "containers"), 0),
                                "imagePullPolicy"), pulls[i].policy);
        apisrv__st_deinit(&st);
        json_object_put(p);
    }

    /* an unparsable quantity is the decoder's 400 */
    p = pod("\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":{\"cpu\":\"1K\"}}}]");
    apisrv__st_init(&st);
    CHECK_INT(apisrv__pod_default(p, &st), -1);
    CHECK_INT(st.code, 400);
    CHECK_STR(st.message, "Pod in version \"v1\" cannot be handled as a Pod: unable to parse quantity's suffix");
    apisrv__st_deinit(&st);
    json_object_put(p);
}

TEST(pod_rules_qos) {
    static const struct { const char *res, *qos; } t[] = {
        {"{}", "BestEffort"},
        {"{\"limits\":{\"nvidia.com/gpu\":\"1\"}}", "BestEffort"},   /* neither cpu nor memory */
        {"{\"requests\":{\"cpu\":\"1\"}}", "Burstable"},
        {"{\"limits\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"}}", "Burstable"},
        {"{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}", "Guaranteed"},
        {"{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"500m\"}}", "Burstable"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char spec[400];
        struct apisrv__st st;
        snprintf(spec, sizeof spec, "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":%s}]", t[i].res);
        json_object *p = pod(spec);
        apisrv__st_init(&st);
        apisrv__pod_default(p, &st);
        if (!CHECK_STR(apisrv__pod_qos(p), t[i].qos)) fprintf(stderr, "    resources %s\n", t[i].res);
        apisrv__st_deinit(&st);
        json_object_put(p);
    }
}

/* ---- create validation ------------------------------------------------------------------ */

TEST(pod_rules_create_validation) {
    static const struct { const char *spec, *want, *msg0; } t[] = {
        {"", "", NULL},
        {"\"containers\":[]", "spec.containers=FieldValueRequired", "Required value"},
        {"\"containers\":[{\"name\":\"C_1\",\"image\":\"x\"}]", "spec.containers[0].name=FieldValueInvalid", NULL},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"a\",\"image\":\"x\"}]",
         "spec.containers[1].name=FieldValueDuplicate", "Duplicate value: \"a\""},
        {"\"initContainers\":[{\"name\":\"c\",\"image\":\"x\"}]", "spec.initContainers[0].name=FieldValueDuplicate", NULL},
        {"\"containers\":[{\"name\":\"a\"}]", "spec.containers[0].image=FieldValueRequired", "Required value"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x \"}]", "spec.containers[0].image=FieldValueInvalid",
         "Invalid value: \"x \": must not have leading or trailing whitespace"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"limits\":{\"cpu\":\"1\"},"
         "\"requests\":{\"cpu\":\"2\"}}}]", "spec.containers[0].resources.requests=FieldValueInvalid",
         "Invalid value: \"2\": must be less than or equal to cpu limit of 1"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"500m\"}}}]",
         "spec.containers[0].resources.limits[nvidia.com/gpu]=FieldValueInvalid "
         "spec.containers[0].resources.requests[nvidia.com/gpu]=FieldValueInvalid",
         "Invalid value: \"500m\": must be an integer"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"}}}]",
         "spec.containers[0].resources.limits=FieldValueRequired",
         "Required value: Limit must be set for non overcommitable resources"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"},"
         "\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]", "spec.containers[0].resources.requests=FieldValueInvalid",
         "Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"-1\"}}}]",
         "spec.containers[0].resources.requests[cpu]=FieldValueInvalid",
         "Invalid value: \"-1\": must be greater than or equal to 0"},
        {"\"restartPolicy\":\"Sometimes\"", "spec.restartPolicy=FieldValueNotSupported",
         "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""},
        {"\"schedulingGates\":[{\"name\":\"a/b\"},{\"name\":\"a/b\"}]", "spec.schedulingGates[1]=FieldValueDuplicate",
         "Duplicate value: \"a/b\""},
        {"\"schedulingGates\":[{\"name\":\"a b\"}]", "spec.schedulingGates[0]=FieldValueInvalid", NULL},
        {"\"schedulingGates\":[{\"name\":\"a/b\"}],\"nodeName\":\"n1\"", "spec.nodeName=FieldValueForbidden",
         "Forbidden: cannot be set until all schedulingGates have been cleared"},
        {"\"nodeSelector\":{\"a\":\"-x\"}", "spec.nodeSelector=FieldValueInvalid", NULL},
        {"\"activeDeadlineSeconds\":0", "spec.activeDeadlineSeconds=FieldValueInvalid",
         "Invalid value: 0: must be between 1 and 2147483647, inclusive"},
        {"\"tolerations\":[{\"operator\":\"Equal\",\"value\":\"v\"}]", "spec.tolerations[0].operator=FieldValueInvalid", NULL},
        {"\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
         "[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}]}}}",
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
         ".matchExpressions[0].values=FieldValueForbidden", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct apisrv__st st;
        json_object *p = pod(t[i].spec);
        if (!CHECK_STR(create_causes(p, &st), t[i].want)) fprintf(stderr, "    spec: %s\n", t[i].spec);
        else if (t[i].msg0) CHECK_STR(cause_msg(&st, 0), t[i].msg0);
        apisrv__st_deinit(&st);
        json_object_put(p);
    }
}

/* ---- update validation -------------------------------------------------------------------- */

#define GATED "\"schedulerName\":\"none\",\"schedulingGates\":[{\"name\":\"x/g1\"},{\"name\":\"x/g2\"}]," \
    "\"nodeSelector\":{\"a\":\"1\"},\"tolerations\":[{\"key\":\"k\",\"operator\":\"Equal\",\"value\":\"v\"," \
    "\"effect\":\"NoSchedule\"}],\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"1\"]}]}]}}}"
#define UNGATED "\"schedulerName\":\"none\",\"nodeSelector\":{\"a\":\"1\"}," \
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"1\"]}]}]}}}"
#define TERM0 "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0"

/* Applies an RFC 6902 patch to a copy of old (both defaulted) and
 * update-validates the result; returns the causes. */
static const char *update_causes(const char *old_spec, const char *patch, struct apisrv__st *st) {
    static char out[4096];
    json_object *old = pod(old_spec), *p = parse(patch), *nw = NULL;
    aiq_err err;
    aiq_err_clear(&err);
    apisrv__st_init(st);
    apisrv__pod_default(old, st);
    if (!p || !(nw = jp_json_patch(old, p, &err))) {
        snprintf(out, sizeof out, "(patch failed: %s)", err.message);
    } else {
        apisrv__pod_default(nw, st);
        apisrv__pod_validate_update(nw, old, st);
        snprintf(out, sizeof out, "%s", causes(st));
    }
    json_object_put(nw);
    json_object_put(p);
    json_object_put(old);
    return out;
}

TEST(pod_rules_update_validation) {
    static const struct { const char *old, *patch, *want, *msg0; } t[] = {
        {GATED, "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"busybox:2\"}]", "", NULL},
        {GATED, "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"\"}]",
         "spec.containers[0].image=FieldValueRequired spec.containers[0].image=FieldValueRequired", NULL},
        {GATED, "[{\"op\":\"add\",\"path\":\"/spec/containers/-\",\"value\":{\"name\":\"d\",\"image\":\"x\"}}]",
         "spec.containers=FieldValueForbidden", "Forbidden: pod updates may not add or remove containers"},
        {GATED, "[{\"op\":\"add\",\"path\":\"/spec/nodeSelector/b\",\"value\":\"2\"}]", "", NULL},
        {GATED, "[{\"op\":\"replace\",\"path\":\"/spec/nodeSelector/a\",\"value\":\"2\"}]", "spec.nodeSelector=FieldValueInvalid",
         "Invalid value: {\"a\":\"2\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"},
        {GATED, "[{\"op\":\"remove\",\"path\":\"/spec/nodeSelector\"}]", "spec.nodeSelector=FieldValueInvalid",
         "Invalid value: null: only additions to spec.nodeSelector are allowed (no mutations or deletions)"},
        {GATED, "[{\"op\":\"add\",\"path\":\"" TERM0 "/matchExpressions/-\",\"value\":{\"key\":\"b\",\"operator\":\"Exists\"}}]",
         "", NULL},
        {GATED, "[{\"op\":\"add\",\"path\":\"" TERM0 "/matchExpressions/0\",\"value\":{\"key\":\"b\",\"operator\":\"Exists\"}}]",
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]=FieldValueInvalid",
         "Invalid value: {\"MatchExpressions\":[{\"Key\":\"b\",\"Operator\":\"Exists\",\"Values\":null},"
         "{\"Key\":\"a\",\"Operator\":\"In\",\"Values\":[\"1\"]}],\"MatchFields\":null}: only additions are allowed "
         "(no mutations or deletions)"},
        {GATED, "[{\"op\":\"remove\",\"path\":\"/spec/affinity\"}]",
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms=FieldValueInvalid",
         "Invalid value: null: no additions/deletions to non-empty NodeSelectorTerms list are allowed"},
        {GATED, "[{\"op\":\"add\",\"path\":\"/spec/affinity/podAffinity\",\"value\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "[{\"labelSelector\":{\"matchLabels\":{\"a\":\"b\"}},\"topologyKey\":\"h\"}]}}]", "spec=FieldValueForbidden", NULL},
        {GATED, "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":{\"key\":\"k2\",\"operator\":\"Exists\"}}]", "", NULL},
        {GATED, "[{\"op\":\"remove\",\"path\":\"/spec/tolerations/0\"}]", "spec.tolerations=FieldValueForbidden",
         "Forbidden: existing toleration can not be modified except its tolerationSeconds"},
        /* only tolerationSeconds may change in an old toleration (the
         * defaulted not-ready and unreachable ones follow the pod's own) */
        {GATED, "[{\"op\":\"replace\",\"path\":\"/spec/tolerations/1/tolerationSeconds\",\"value\":60}]", "", NULL},
        {GATED, "[{\"op\":\"remove\",\"path\":\"/spec/tolerations/2/tolerationSeconds\"}]", "", NULL},
        {GATED, "[{\"op\":\"replace\",\"path\":\"/spec/tolerations/0/value\",\"value\":\"w\"}]",
         "spec.tolerations=FieldValueForbidden",
         "Forbidden: existing toleration can not be modified except its tolerationSeconds"},
        {GATED, "[{\"op\":\"replace\",\"path\":\"/spec/terminationGracePeriodSeconds\",\"value\":10}]",
         "spec=FieldValueForbidden", NULL},
        {GATED ",\"terminationGracePeriodSeconds\":-5",
         "[{\"op\":\"replace\",\"path\":\"/spec/terminationGracePeriodSeconds\",\"value\":1}]", "", NULL},
        {GATED ",\"activeDeadlineSeconds\":100", "[{\"op\":\"replace\",\"path\":\"/spec/activeDeadlineSeconds\",\"value\":50}]",
         "", NULL},
        {GATED ",\"activeDeadlineSeconds\":100", "[{\"op\":\"replace\",\"path\":\"/spec/activeDeadlineSeconds\",\"value\":150}]",
         "spec.activeDeadlineSeconds=FieldValueInvalid", "Invalid value: 150: must be less than or equal to previous value"},
        {GATED ",\"activeDeadlineSeconds\":100", "[{\"op\":\"remove\",\"path\":\"/spec/activeDeadlineSeconds\"}]",
         "spec.activeDeadlineSeconds=FieldValueInvalid",
         "Invalid value: null: must not update from a positive integer to nil value"},
        {GATED, "[{\"op\":\"add\",\"path\":\"/spec/schedulingGates/-\",\"value\":{\"name\":\"x/g3\"}}]",
         "spec.schedulingGates[2].name=FieldValueForbidden",
         "Forbidden: only deletion is allowed, but found new scheduling gate 'x/g3'"},
        {GATED, "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/0\"}]", "", NULL},
        {GATED, "[{\"op\":\"add\",\"path\":\"/spec/nodeName\",\"value\":\"n1\"}]", "spec=FieldValueForbidden", NULL},
        {UNGATED, "[{\"op\":\"add\",\"path\":\"/spec/nodeSelector/b\",\"value\":\"2\"}]", "spec=FieldValueForbidden", NULL},
        {UNGATED, "[{\"op\":\"add\",\"path\":\"" TERM0 "/matchExpressions/-\",\"value\":{\"key\":\"b\",\"operator\":\"Exists\"}}]",
         "spec=FieldValueForbidden", NULL},
        /* what a client leaves out is defaulted again: no change */
        {UNGATED, "[{\"op\":\"remove\",\"path\":\"/spec/dnsPolicy\"},{\"op\":\"remove\",\"path\":\"/spec/tolerations\"}]", "", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct apisrv__st st;
        if (!CHECK_STR(update_causes(t[i].old, t[i].patch, &st), t[i].want))
            fprintf(stderr, "    case %zu: %s\n", i, t[i].patch);
        else if (t[i].msg0)
            CHECK_STR(cause_msg(&st, 0), t[i].msg0);
        apisrv__st_deinit(&st);
    }
    /* the forbidden message starts as the real one and names the fields */
    struct apisrv__st st;
    update_causes(GATED, "[{\"op\":\"add\",\"path\":\"/spec/nodeName\",\"value\":\"n1\"},"
                         "{\"op\":\"replace\",\"path\":\"/spec/restartPolicy\",\"value\":\"Never\"}]", &st);
    const char *m = cause_msg(&st, 0);
    CHECK(strncmp(m, "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,", 83) == 0);
    CHECK(strstr(m, "\n  changed: ") != NULL && strstr(m, "spec.nodeName") != NULL &&
          strstr(m, "spec.restartPolicy") != NULL);
    apisrv__st_deinit(&st);
}
