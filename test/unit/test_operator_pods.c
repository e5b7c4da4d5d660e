/* test_operator_pods.c -- gated pod construction (golden JSON) and the
 * release patch of one pod (operator/pods.c, operator/release.c). */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "operator/pods.h"
#include "operator/release.h"
#include "test/unit/th.h"

static const char *js(json_object *o) {
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* A job like examples' gang jobs: 2 replicas, 4 GPUs each. Strings are
 * literals cast away from const; the struct is never deinit'ed. */
static struct aiq_aijob sample_job(const char *template_json) {
    struct aiq_aijob j;
    memset(&j, 0, sizeof j);
    j.meta.name = (char *)"train";
    j.meta.namespace_ = (char *)"team-a";
    j.meta.uid = (char *)"uid-1";
    j.meta.generation = 1;
    j.spec.user = (char *)"alice";
    j.spec.replicas = 2;
    j.spec.resources.gpus = 4;
    j.spec.resources.gpu_memory_mib = 40960;
    j.spec.resources.cpu_milli = 8000;
    j.spec.resources.memory_bytes = 68719476736LL;
    j.spec.backoff_limit = 3;
    j.spec.template_json = (char *)template_json;
    return j;
}

TEST(pods_golden_with_template) {
    const char *tmpl =
        "{\"metadata\":{\"labels\":{\"app\":\"bert\"},"
        "\"annotations\":{\"sim.aiq.dev/duration\":\"30s\",\"note\":\"x\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"trainer:1\","
        "\"env\":[{\"name\":\"AIQ_JOB_NAME\",\"value\":\"spoofed\"},"
        "{\"name\":\"LR\",\"value\":\"0.1\"}]}]}}";
    struct aiq_aijob j = sample_job(tmpl);
    aiq_err e;
    aiq_err_clear(&e);
    json_object *ann = json_tokener_parse(
        "{\"sim.aiq.dev/fail\":\"true\",\"other.io/x\":\"no\"}");
    json_object *pod = pods_build(&j, ann, 1, GPU_MECH_DEVICE_PLUGIN, &e);
    CHECK(pod != NULL);
    CHECK_STR(js(pod),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-1\","
        "\"namespace\":\"team-a\",\"labels\":{\"app\":\"bert\",\"aiq.dev/job\":\"train\","
        "\"aiq.dev/replica-index\":\"1\"},\"annotations\":{\"sim.aiq.dev/duration\":\"30s\","
        "\"note\":\"x\",\"sim.aiq.dev/fail\":\"true\"},\"ownerReferences\":[{\"apiVersion\":"
        "\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"name\":\"train\",\"uid\":\"uid-1\","
        "\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"containers\":[{"
        "\"name\":\"main\",\"image\":\"trainer:1\",\"env\":[{\"name\":\"AIQ_JOB_NAME\","
        "\"value\":\"train\"},{\"name\":\"LR\",\"value\":\"0.1\"},{\"name\":"
        "\"AIQ_REPLICA_INDEX\",\"value\":\"1\"},{\"name\":\"AIQ_REPLICA_COUNT\",\"value\":"
        "\"2\"}],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"},\"requests\":{"
        "\"cpu\":\"8000m\",\"memory\":\"68719476736\",\"nvidia.com/gpu\":\"4\"}}}],"
        "\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}],\"restartPolicy\":\"Never\"}}");
    CHECK_INT(pods_replica_index(pod), 1);
    CHECK_INT(pods_is_gated(pod), 1);
    json_object_put(pod);
    json_object_put(ann);
}

TEST(pods_default_container_and_deterministic) {
    struct aiq_aijob j = sample_job(NULL);
    j.spec.resources.gpus = 0;
    j.spec.resources.cpu_milli = 0;
    j.spec.resources.memory_bytes = 0;
    json_object *a = pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, NULL);
    json_object *b = pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, NULL);
    CHECK(a && b);
    /* The same inputs give the same pod: a restart re-creates, never
     * duplicates (the name is the identity). */
    CHECK_STR(js(a), js(b));
    CHECK(strstr(js(a), "\"name\":\"train-0\"") != NULL);
    CHECK(strstr(js(a), "\"image\":\"registry.k8s.io/pause:3.9\"") != NULL);
    /* gpus 0 with gpuMemoryMiB is a shared replica: it still receives a
     * GPU (a whole one under the device plugin); no GPU memory at all
     * means no GPU. */
    CHECK(strstr(js(a), "\"nvidia.com/gpu\":\"1\"") != NULL);
    json_object_put(a);
    json_object_put(b);
    j.spec.resources.gpu_memory_mib = 0;
    a = pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, NULL);
    CHECK(a && strstr(js(a), "nvidia.com/gpu") == NULL);
    json_object_put(a);
}

TEST(pods_bad_inputs_name_the_field) {
    struct aiq_aijob j = sample_job("[1,2]");
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, &e) == NULL);
    CHECK_INT(e.code, AIQ_EPARSE);
    CHECK_STR(e.field, "spec.template");

    j = sample_job(NULL);
    aiq_err_clear(&e);
    CHECK(pods_build(&j, NULL, 2, GPU_MECH_DEVICE_PLUGIN, &e) == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK(strstr(e.message, "replica index 2 outside 0..1") != NULL);

    char big[300];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    j.meta.name = big;
    aiq_err_clear(&e);
    CHECK(pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, &e) == NULL);
    CHECK_STR(e.field, "metadata.name");
}

/* Builds job j with template tmpl and expects it refused for field. */
static void expect_refused(const char *tmpl, int gpus, const char *field,
                           const char *why) {
    struct aiq_aijob j = sample_job(tmpl);
    j.spec.resources.gpus = gpus;
    aiq_err e;
    aiq_err_clear(&e);
    json_object *pod = pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, &e);
    CHECK(pod == NULL);
    json_object_put(pod);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, field);
    CHECK(strncmp(e.message, field, strlen(field)) == 0);
    CHECK(strstr(e.message, why) != NULL);
}

/* The probes: gpus 0 and a template limit of 8 GPUs, a template
 * bound to a node, and every other field that carries a queue decision,
 * on any container or init container. */
TEST(pods_template_guard_refuses_queue_fields) {
    expect_refused("{\"spec\":{\"containers\":[{\"name\":\"m\",\"resources\":"
                   "{\"limits\":{\"nvidia.com/gpu\":8}}}]}}", 0,
                   "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]",
                   "extended resource \"nvidia.com/gpu\" is not allowed");
    expect_refused("{\"spec\":{\"nodeName\":\"node-3\",\"containers\":[{\"name\":\"m\"}]}}", 2,
                   "spec.template.spec.nodeName", "must not be set (\"node-3\")");
    expect_refused("{\"spec\":{\"schedulingGates\":[{\"name\":\"x\"}]}}", 1,
                   "spec.template.spec.schedulingGates", "aiq owns");
    expect_refused("{\"spec\":{\"resourceClaims\":[{\"name\":\"g\"}]}}", 1,
                   "spec.template.spec.resourceClaims", "must not be set");
    /* a sidecar, an init container, requests only, another vendor */
    expect_refused("{\"spec\":{\"containers\":[{\"name\":\"m\"},{\"name\":\"s\","
                   "\"resources\":{\"requests\":{\"amd.com/gpu\":\"1\"}}}]}}", 1,
                   "spec.template.spec.containers[1].resources.requests[amd.com/gpu]",
                   "spec.resources");
    expect_refused("{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"resources\":"
                   "{\"limits\":{\"cpu\":\"1\",\"gpu.intel.com/i915\":\"1\"}}}],"
                   "\"containers\":[{\"name\":\"m\"}]}}", 1,
                   "spec.template.spec.initContainers[0].resources.limits[gpu.intel.com/i915]",
                   "not allowed");
    expect_refused("{\"spec\":{\"containers\":[{\"name\":\"m\",\"resources\":"
                   "{\"claims\":[{\"name\":\"g\"}]}}]}}", 1,
                   "spec.template.spec.containers[0].resources.claims", "must not be set");
    expect_refused("{\"spec\":{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}},"
                   "\"containers\":[{\"name\":\"m\"}]}}", 1,
                   "spec.template.spec.resources.limits[nvidia.com/gpu]", "not allowed");
}

/* What the guard lets through: native resources, empty lists, an empty
 * nodeName; and the GPUs then come from spec.resources alone. */
TEST(pods_template_guard_allows_the_rest) {
    const char *tmpl =
        "{\"spec\":{\"nodeName\":\"\",\"schedulingGates\":[],\"resourceClaims\":[],"
        "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}],"
        "\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{\"memory\":\"1Gi\","
        "\"hugepages-2Mi\":\"2Mi\",\"ephemeral-storage\":\"1Gi\"}}},{\"name\":\"side\"}]}}";
    struct aiq_aijob j = sample_job(tmpl);
    j.spec.resources.gpus = 3;
    aiq_err e;
    aiq_err_clear(&e);
    json_object *pod = pods_build(&j, NULL, 0, GPU_MECH_DEVICE_PLUGIN, &e);
    CHECK(pod != NULL);
    CHECK_INT(e.code, AIQ_OK);
    const char *t = js(pod);
    CHECK(strstr(t, "\"limits\":{\"memory\":\"1Gi\",\"hugepages-2Mi\":\"2Mi\","
                    "\"ephemeral-storage\":\"1Gi\",\"nvidia.com/gpu\":\"3\"}") != NULL);
    /* one GPU limit in the whole pod: container 0's */
    CHECK(strstr(t, "nvidia.com/gpu\":\"3\"") != NULL);
    const char *first = strstr(t, "\"limits\":{\"memory");
    CHECK(first && strstr(strstr(t, "\"name\":\"side\""), "nvidia.com") == NULL);
    json_object_put(pod);
    CHECK_INT(pods_template_check(NULL, NULL), 0);
}

/* The longest name the API gives an AIJob (63, the CRD's maxLength and
 * AIQ_MAX_AIJOB_NAME) makes every pod the operator can be asked for: the
 * last replica's name is 68 characters (a pod name may have 253) and the
 * aiq.dev/job label value is the 63-character name (a label value may
 * have 63). */
TEST(pods_longest_job_name_fits) {
    char name[AIQ_MAX_AIJOB_NAME + 1];
    memset(name, 'n', AIQ_MAX_AIJOB_NAME);
    name[AIQ_MAX_AIJOB_NAME] = '\0';
    struct aiq_aijob j = sample_job(NULL);
    j.meta.name = name;
    j.spec.replicas = AIQ_MAX_REPLICAS;
    aiq_err e;
    aiq_err_clear(&e);
    json_object *pod = pods_build(&j, NULL, AIQ_MAX_REPLICAS - 1, GPU_MECH_DEVICE_PLUGIN, &e);
    CHECK(pod != NULL);
    json_object *m = NULL, *v = NULL, *l = NULL;
    CHECK(json_object_object_get_ex(pod, "metadata", &m) &&
          json_object_object_get_ex(m, "name", &v));
    CHECK_INT((int)strlen(json_object_get_string(v)), AIQ_MAX_AIJOB_NAME + 5);
    CHECK(json_object_object_get_ex(m, "labels", &l) &&
          json_object_object_get_ex(l, PODS_LABEL_JOB, &v));
    CHECK_STR(json_object_get_string(v), name);
    json_object_put(pod);
}

TEST(pods_name_limits) {
    char buf[16];
    CHECK_INT(pods_name(buf, sizeof buf, "job", 12), 0);
    CHECK_STR(buf, "job-12");
    CHECK_INT(pods_name(buf, sizeof buf, "a-very-long-job-name", 1), -1);
    CHECK_STR(buf, "");
}

TEST(pods_replica_index_rejects_garbage) {
    json_object *p = json_tokener_parse(
        "{\"metadata\":{\"labels\":{\"aiq.dev/replica-index\":\"7x\"}}}");
    CHECK_INT(pods_replica_index(p), -1);
    json_object_put(p);
    p = json_tokener_parse("{\"metadata\":{\"labels\":{\"aiq.dev/replica-index\":\"-1\"}}}");
    CHECK_INT(pods_replica_index(p), -1);
    json_object_put(p);
    p = json_tokener_parse("{\"metadata\":{}}");
    CHECK_INT(pods_replica_index(p), -1);
    CHECK_INT(pods_is_gated(p), 0);
    json_object_put(p);
}

/* The attempt stamp: written as a string annotation, read back; absent,
 * non-numeric, zero or negative values read as 0 (unknown). */
TEST(pods_attempt_stamp) {
    json_object *p = json_tokener_parse("{\"metadata\":{\"name\":\"j-0\"}}");
    CHECK_INT(pods_attempt(p), 0);
    CHECK_INT(pods_set_attempt(p, 3), 0);
    CHECK_INT(pods_attempt(p), 3);
    CHECK_STR(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
              "{\"metadata\":{\"name\":\"j-0\",\"annotations\":{\"aiq.dev/attempt\":\"3\"}}}");
    json_object_put(p);
    static const char *const bad[] = {"\"\"", "\"2x\"", "\"0\"", "\"-1\"", "2", "\"99999999999\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[128];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"annotations\":{\"aiq.dev/attempt\":%s}}}", bad[i]);
        p = json_tokener_parse(doc);
        CHECK(p != NULL);
        CHECK_INT(pods_attempt(p), 0);
        json_object_put(p);
    }
}

TEST(release_patch_golden) {
    struct opst_place pl;
    memset(&pl, 0, sizeof pl);
    pl.replica = 0;
    snprintf(pl.node, sizeof pl.node, "gpu-a100-3");
    pl.gpus[0] = 0;
    pl.gpus[1] = 1;
    pl.ngpus = 2;
    pl.gpu_memory_mib = 40960;
    json_object *pod = json_tokener_parse(
        "{\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}}");
    aiq_err e;
    aiq_err_clear(&e);
    json_object *patch = release_pod_patch(pod, &pl, &e);
    CHECK(patch != NULL);
    CHECK_STR(js(patch),
        "{\"metadata\":{\"annotations\":{\"aiq.dev/node\":\"gpu-a100-3\","
        "\"aiq.dev/gpu-indexes\":\"0,1\",\"aiq.dev/gpu-memory-mib\":\"40960\"}},"
        "\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
        "\"values\":[\"gpu-a100-3\"]}]}]}}},\"schedulingGates\":null}}");
    json_object_put(patch);
    json_object_put(pod);
}

TEST(release_patch_keeps_other_terms_and_gates) {
    struct opst_place pl;
    memset(&pl, 0, sizeof pl);
    snprintf(pl.node, sizeof pl.node, "n2");
    pl.gpus[0] = 5;
    pl.ngpus = 1;
    json_object *pod = json_tokener_parse(
        "{\"spec\":{\"schedulingGates\":[{\"name\":\"other/gate\"},{\"name\":\"aiq.dev/admission\"}],"
        "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}],"
        "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"old\"]}]},"
        "{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}]}]}}}}}");
    json_object *patch = release_pod_patch(pod, &pl, NULL);
    CHECK(patch != NULL);
    const char *s = js(patch);
    /* Both ORed terms are kept, each ANDed with our node: a gated pod's
     * required node affinity may only gain entries at the end of each
     * term (the real API server refuses anything else with 422), so the
     * template's own metadata.name requirement stays in front of ours. */
    CHECK(strstr(s, "{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}],"
                    "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"old\"]},"
                    "{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n2\"]}]}") != NULL);
    CHECK(strstr(s, "\"values\":[\"b\"]}],\"matchFields\":[{\"key\":\"metadata.name\","
                    "\"operator\":\"In\",\"values\":[\"n2\"]}]}") != NULL);
    CHECK(strstr(s, "\"schedulingGates\":[{\"name\":\"other/gate\"}]") != NULL);
    CHECK(strstr(s, "\"aiq.dev/gpu-indexes\":\"5\"") != NULL);
    json_object_put(patch);

    memset(pl.node, 0, sizeof pl.node);
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(release_pod_patch(pod, &pl, &e) == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    json_object_put(pod);
}

TEST(release_patch_only_appends_to_terms) {
    struct opst_place pl;
    memset(&pl, 0, sizeof pl);
    snprintf(pl.node, sizeof pl.node, "n7");
    pl.gpus[0] = 0;
    pl.ngpus = 1;
    /* An empty term matches no node and may gain nothing: kept as is.
     * A term that already ends with our requirement (a release sent
     * again) does not get it twice. */
    json_object *pod = json_tokener_parse(
        "{\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}],"
        "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[{},{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
        "\"values\":[\"n7\"]}]}]}}}}}");
    json_object *patch = release_pod_patch(pod, &pl, NULL);
    CHECK(patch != NULL);
    CHECK(strstr(js(patch), "\"nodeSelectorTerms\":[{},{\"matchFields\":[{\"key\":\"metadata.name\","
                            "\"operator\":\"In\",\"values\":[\"n7\"]}]}]") != NULL);
    json_object_put(patch);
    json_object_put(pod);
}

TEST(release_gpu_list_cuts) {
    struct opst_place pl;
    memset(&pl, 0, sizeof pl);
    for (int i = 0; i < 8; i++)
        pl.gpus[i] = i;
    pl.ngpus = 8;
    char buf[8];
    CHECK_STR(release_gpu_list(buf, sizeof buf, &pl), "0,1,2,3");
    char big[64];
    CHECK_STR(release_gpu_list(big, sizeof big, &pl), "0,1,2,3,4,5,6,7");
}

/* What the operator keeps of an AIJob's annotations (its cache, for
 * pods_build): the sim.aiq.dev/ ones only, so the pods come out the same,
 * and nothing of kubectl's last-applied copy of the manifest. */
TEST(pods_job_annotations_trim_keeps_what_pods_copy) {
    char big[4096];
    int n = snprintf(big, sizeof big,
                     "{\"name\":\"train\",\"annotations\":{\"kubectl.kubernetes.io/"
                     "last-applied-configuration\":\"{\\\"kind\\\":\\\"AIJob\\\"}\","
                     "\"sim.aiq.dev/duration\":\"30s\"");
    for (int i = 0; i < 100 && n > 0 && (size_t)n < sizeof big - 64; i++) /* past one round */
        n += snprintf(big + n, sizeof big - (size_t)n, ",\"note%d\":\"x\"", i);
    snprintf(big + n, sizeof big - (size_t)n, ",\"sim.aiq.dev/fail\":\"true\"}}");
    json_object *meta = json_tokener_parse(big), *ann = NULL;
    CHECK(meta != NULL);
    struct aiq_aijob j = sample_job(NULL);
    aiq_err e;
    aiq_err_clear(&e);
    json_object_object_get_ex(meta, "annotations", &ann);
    json_object *before = pods_build(&j, ann, 0, GPU_MECH_DEVICE_PLUGIN, &e);
    CHECK_INT(pods_job_annotations_trim(meta), 101);
    CHECK_STR(js(meta), "{\"name\":\"train\",\"annotations\":{\"sim.aiq.dev/duration\":"
                        "\"30s\",\"sim.aiq.dev/fail\":\"true\"}}");
    json_object_object_get_ex(meta, "annotations", &ann);
    json_object *after = pods_build(&j, ann, 0, GPU_MECH_DEVICE_PLUGIN, &e);
    CHECK(before && after && json_object_equal(before, after));
    CHECK_INT(pods_job_annotations_trim(meta), 0); /* again: nothing */
    json_object_put(before);
    json_object_put(after);
    json_object_put(meta);
    /* None left: the object goes too; none at all, or not an object. */
    meta = json_tokener_parse("{\"annotations\":{\"a\":\"1\"}}");
    CHECK_INT(pods_job_annotations_trim(meta), 1);
    CHECK_STR(js(meta), "{}");
    CHECK_INT(pods_job_annotations_trim(meta), 0);
    json_object_put(meta);
    meta = json_tokener_parse("{\"annotations\":7}");
    CHECK_INT(pods_job_annotations_trim(meta), 1);
    CHECK_STR(js(meta), "{}");
    json_object_put(meta);
    CHECK_INT(pods_job_annotations_trim(NULL), 0);
}
