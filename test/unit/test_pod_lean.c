/* test_pod_lean.c -- the lean copy of a pod the operator caches
 * (operator/pod_lean.c): every reader the operator runs on a cached pod
 * gives the same answer on the lean copy as on the pod a real API server
 * sends, the rest is dropped, the pod itself is left unchanged, the
 * cache keeps the lean copy when told to, and lean copies made with a
 * pool share their equal spec, status and annotations and nothing
 * else. */
#include <json-c/json.h>
#include <string.h>

#include "common/json.h"
#include "operator/cache.h"
#include "operator/foreign.h"
#include "operator/gpu_mech.h"
#include "operator/pod_lean.h"
#include "operator/pods.h"
#include "operator/release.h"
#include "test/unit/th.h"

/* A pod as kube-apiserver 1.34 returns it: managed fields, defaults,
 * the service-account volume, status. node "" = gated and unbound. */
static json_object *real_pod(const char *node, const char *cond) {
    char buf[8192];
    snprintf(buf, sizeof buf,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-1\","
        "\"namespace\":\"team-a\",\"uid\":\"u-123\",\"resourceVersion\":\"4711\","
        "\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"generation\":1,"
        "\"deletionTimestamp\":\"2025-01-01T00:10:00Z\","
        "\"labels\":{\"aiq.dev/job\":\"train\",\"aiq.dev/replica-index\":\"1\",\"app\":\"x\"},"
        "\"annotations\":{\"aiq.dev/attempt\":\"3\",\"aiq.dev/node\":\"n1\","
        "\"aiq.dev/gpu-indexes\":\"0,3\",\"aiq.dev/gpu-memory-mib\":\"8000\","
        "\"aiq.dev/stop-reason\":\"Preempted\",\"aiq.dev/preempted-by\":\"team-b/big\","
        "\"aiq.dev/replicas\":\"2\",\"kubectl.kubernetes.io/last-applied-configuration\":\"{...}\","
        "\"sim.aiq.dev/run-seconds\":\"5\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"aiq.dev/v1\",\"kind\":\"AIJob\",\"name\":\"train\","
        "\"uid\":\"j-1\",\"controller\":true,\"blockOwnerDeletion\":true}],"
        "\"managedFields\":[{\"manager\":\"aiq-operator\",\"operation\":\"Update\","
        "\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}}}}]},"
        "\"spec\":{\"nodeName\":\"%s\",\"schedulingGates\":[{\"name\":\"other.io/gate\"},"
        "{\"name\":\"aiq.dev/admission\"}],"
        "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
        "\"values\":[\"a\"]}]}]}}},"
        "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"sleep\",\"5\"],"
        "\"env\":[{\"name\":\"AIQ_JOB_NAME\",\"value\":\"train\"}],"
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"},\"requests\":{\"cpu\":\"2\","
        "\"memory\":\"4Gi\",\"nvidia.com/gpu\":\"2\"}},\"terminationMessagePath\":\"/dev/t\","
        "\"volumeMounts\":[{\"name\":\"kube-api-access\",\"mountPath\":\"/var/run\"}]}],"
        "\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\",\"image\":\"s\","
        "\"resources\":{\"requests\":{\"memory\":\"1Gi\"}}}],\"overhead\":{\"cpu\":\"100m\"},"
        "\"volumes\":[{\"name\":\"kube-api-access\",\"projected\":{\"sources\":[]}}],"
        "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\"}],"
        "\"restartPolicy\":\"Never\",\"dnsPolicy\":\"ClusterFirst\"},"
        "\"status\":{\"phase\":\"Pending\",\"qosClass\":\"Burstable\","
        "\"startTime\":\"2025-01-01T00:00:05Z\",\"conditions\":[{\"type\":\"Initialized\","
        "\"status\":\"True\"},%s]}}",
        node, cond);
    return json_tokener_parse(buf);
}

#define GATED_COND "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"SchedulingGated\"}"
#define UNSCHED_COND                                                                          \
    "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","          \
    "\"message\":\"0/3 nodes are available\",\"lastTransitionTime\":\"2025-01-01T00:00:06Z\"}"

static json_object *path(json_object *o, const char *a, const char *b) {
    json_object *x = NULL, *y = NULL;
    if (!json_object_object_get_ex(o, a, &x))
        return NULL;
    if (!b)
        return x;
    return json_object_object_get_ex(x, b, &y) ? y : NULL;
}

/* The string readers the operator runs (aiq_jpath_str paths). */
static void same_strings(json_object *full, json_object *lean) {
    static const char *const paths[] = {"metadata.name", "metadata.namespace", "metadata.uid",
                                        "metadata.resourceVersion", "metadata.deletionTimestamp",
                                        "metadata.creationTimestamp",
                                        "spec.nodeName", "status.phase", "status.startTime"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        CHECK(aiq_jpath_str(lean, paths[i]) != NULL);
        CHECK_STR(aiq_jpath_str(lean, paths[i]) ? aiq_jpath_str(lean, paths[i]) : "(none)",
                  aiq_jpath_str(full, paths[i]));
    }
}

static void same_release(json_object *full, json_object *lean) {
    struct opst_place pl = {.replica = 1, .node = "n1", .gpus = {0, 3}, .ngpus = 2,
                            .gpu_memory_mib = 8000};
    aiq_err e;
    aiq_err_clear(&e);
    json_object *a = release_pod_patch(full, &pl, &e), *b = release_pod_patch(lean, &pl, &e);
    CHECK(a && b && json_object_equal(a, b));
    json_object_put(a);
    json_object_put(b);
    a = gpu_mech_claim(full, &pl, 8000, &e);
    b = gpu_mech_claim(lean, &pl, 8000, &e);
    CHECK(a && b && json_object_equal(a, b)); /* DRA: name, uid, labels */
    json_object_put(a);
    json_object_put(b);
}

TEST(pod_lean_gated_keeps_what_is_read) {
    json_object *full = real_pod("", GATED_COND);
    const char *before = json_object_to_json_string(full);
    size_t full_len = strlen(before);
    char *copy = strdup(before);
    json_object *lean = pod_lean(full, NULL);
    CHECK(lean != NULL);
    CHECK_STR(json_object_to_json_string(full), copy); /* the pod is not changed */
    free(copy);
    CHECK_INT(pods_is_gated(lean), 1);
    CHECK_INT(pods_attempt(lean), 3);
    /* what a job's sync reads of it, packed (pods_facts) */
    CHECK(pods_facts(lean) == pods_facts(full));
    CHECK_INT(pods_facts_gated(pods_facts(lean)), 1);
    CHECK_INT(pods_facts_attempt(pods_facts(lean)), 3);
    CHECK_STR(aiq_jpath_str(lean, "status.phase"), "Pending");
    CHECK_INT((int)pods_facts_phase(pods_facts(lean)), POD_PHASE_PENDING);
    char k1[OPCACHE_KEY_MAX], k2[OPCACHE_KEY_MAX];
    CHECK_INT(opcache_key(k1, sizeof k1, full), 0);
    CHECK_INT(opcache_key(k2, sizeof k2, lean), 0);
    CHECK_STR(k2, k1);
    CHECK(aiq_jpath_str(lean, "spec.nodeName") && !*aiq_jpath_str(lean, "spec.nodeName"));
    same_strings(full, lean);
    same_release(full, lean);
    CHECK(json_object_equal(path(full, "metadata", "labels"), path(lean, "metadata", "labels")));
    /* Every aiq.dev/ annotation, and nothing else. */
    json_object *ann = path(lean, "metadata", "annotations");
    CHECK_INT(json_object_object_length(ann), 7);
    CHECK(json_object_object_get_ex(ann, "aiq.dev/stop-reason", NULL));
    CHECK(!json_object_object_get_ex(ann, "kubectl.kubernetes.io/last-applied-configuration", NULL));
    CHECK(!json_object_object_get_ex(ann, "sim.aiq.dev/run-seconds", NULL));
    /* Dropped: what nobody reads, and what only a bound pod's count reads. */
    CHECK(!path(lean, "metadata", "managedFields"));
    CHECK(!path(lean, "metadata", "ownerReferences"));
    CHECK(!path(lean, "spec", "containers"));
    CHECK(!path(lean, "spec", "volumes"));
    CHECK(!path(lean, "spec", "tolerations"));
    CHECK(!path(lean, "status", "conditions")); /* SchedulingGated is no verdict */
    CHECK(!path(lean, "status", "qosClass"));
    CHECK(!path(lean, "apiVersion", NULL));
    size_t lean_len = strlen(json_object_to_json_string(lean));
    printf("# pod JSON %zu bytes, lean copy %zu\n", full_len, lean_len);
    CHECK(lean_len * 2 < full_len);
    json_object_put(full);
    json_object_put(lean); /* ASan: the shared subtrees are freed once */
}

TEST(pod_lean_bound_keeps_its_count) {
    json_object *full = real_pod("n1", UNSCHED_COND);
    json_object *lean = pod_lean(full, NULL);
    CHECK(lean != NULL);
    same_strings(full, lean);
    CHECK(pods_facts(lean) == pods_facts(full));
    struct fpod a, b;
    CHECK_INT(fpod_read(full, &a), 0);
    CHECK_INT(fpod_read(lean, &b), 0);
    CHECK_STR(b.key, a.key);
    CHECK_STR(b.node, a.node);
    CHECK_STR(b.owner, "AIJob/train");
    CHECK_STR(b.owner, a.owner);
    CHECK_INT(b.holds, a.holds);
    CHECK_INT(b.gpus, 2);
    CHECK_INT(b.gpus, a.gpus);
    CHECK_INT(b.cpu_milli, 2100); /* with the overhead */
    CHECK_INT(b.cpu_milli, a.cpu_milli);
    CHECK_INT(b.mem_bytes, a.mem_bytes); /* with the sidecar */
    CHECK_INT(b.gpu_mem_mib, a.gpu_mem_mib);
    CHECK_INT((long long)b.gpu_idx, (long long)a.gpu_idx);
    fpod_deinit(&a);
    fpod_deinit(&b);
    /* The scheduler's verdict is kept, whole. */
    json_object *conds = path(lean, "status", "conditions");
    CHECK(conds && json_object_array_length(conds) == 1);
    CHECK_STR(aiq_jpath_str(json_object_array_get_idx(conds, 0), "message"),
              "0/3 nodes are available");
    CHECK(!path(json_object_array_get_idx(path(lean, "spec", "containers"), 0), "image", NULL));
    json_object_put(full);
    json_object_put(lean);
}

TEST(pod_lean_minimal_and_bad) {
    json_object *o = json_tokener_parse("{\"metadata\":{\"name\":\"p\"}}");
    json_object *l = pod_lean(o, NULL);
    CHECK(l != NULL);
    CHECK_STR(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN),
              "{\"metadata\":{\"name\":\"p\"}}");
    CHECK_INT(pods_is_gated(l), 0);
    CHECK(pods_facts(l) == 0); /* no gate, no phase, attempt 0 */
    json_object_put(l);
    json_object_put(o);
    /* each phase, and one the API may add */
    static const struct {
        const char *phase;
        enum pod_phase want;
    } ph[] = {{"Pending", POD_PHASE_PENDING},     {"Running", POD_PHASE_RUNNING},
              {"Succeeded", POD_PHASE_SUCCEEDED}, {"Failed", POD_PHASE_FAILED},
              {"Unknown", POD_PHASE_OTHER},       {"", POD_PHASE_OTHER}};
    for (size_t i = 0; i < sizeof ph / sizeof ph[0]; i++) {
        char b[256];
        snprintf(b, sizeof b,
                 "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"aiq.dev/attempt\":\"1000000\"}},"
                 "\"status\":{\"phase\":\"%s\"}}", ph[i].phase);
        o = json_tokener_parse(b);
        uint64_t f = pods_facts(o);
        CHECK_INT((int)pods_facts_phase(f), (int)ph[i].want);
        CHECK_INT(pods_facts_attempt(f), 1000000);
        CHECK_INT(pods_facts_gated(f), 0);
        json_object_put(o);
    }
    o = json_object_new_array();
    CHECK(pod_lean(o, NULL) == NULL); /* not an object */
    json_object_put(o);
}

TEST(pod_lean_in_the_cache) {
    opcache *c = opcache_create(NULL, NULL);
    opcache_set_lean(c, pod_lean_cache, NULL);
    opcache_set_facts(c, pods_facts);
    json_object *full = real_pod("", GATED_COND);
    /* A caller may keep using what it put (srv__create_pod sends it). */
    struct opcache_obj *o = opcache_put(c, json_object_get(full), NULL);
    CHECK(o != NULL);
    CHECK(o && o->facts == pods_facts(full) && o->facts != 0);
    CHECK(o && opcache_raw(o) != full);
    CHECK(o && !path(opcache_raw(o), "spec", "containers"));
    CHECK(path(full, "spec", "containers") != NULL);
    CHECK(path(full, "metadata", "managedFields") != NULL);
    CHECK(o && pods_is_gated(opcache_raw(o)));
    json_object_put(full);
    opcache_free(c);
}

/* Two waiting pods of two jobs: one spec, one status and one set of
 * annotations between them; names, labels and versions their own; every
 * reader's answer as without the pool; a pod that moves on (bound, a new
 * attempt) gets its own again without changing the other's. */
TEST(pod_lean_shares_what_waiting_pods_have_in_common) {
    struct jshare *share = jshare_new(64);
    opcache *c = opcache_create(NULL, NULL);
    CHECK(share && c);
    opcache_set_lean(c, pod_lean_cache, share);
    json_object *full = real_pod("", GATED_COND);
    char txt[8192];
    snprintf(txt, sizeof txt, "%s", json_object_to_json_string_ext(full, JSON_C_TO_STRING_PLAIN));
    /* The second pod: another job's replica 0, same template. */
    json_object *other = json_tokener_parse(txt);
    json_object *md = path(other, "metadata", NULL), *lab = path(other, "metadata", "labels");
    json_object_object_add(md, "name", json_object_new_string("eval-0"));
    json_object_object_add(md, "uid", json_object_new_string("u-456"));
    json_object_object_add(md, "resourceVersion", json_object_new_string("4712"));
    json_object_object_add(lab, "aiq.dev/job", json_object_new_string("eval"));
    struct opcache_obj *a = opcache_put(c, json_object_get(full), NULL);
    struct opcache_obj *b = opcache_put(c, json_object_get(other), NULL);
    CHECK(a && b);
    if (!a || !b)
        return;
    CHECK(path(opcache_raw(a), "spec", NULL) == path(opcache_raw(b), "spec", NULL));
    CHECK(path(opcache_raw(a), "status", NULL) == path(opcache_raw(b), "status", NULL));
    CHECK(path(opcache_raw(a), "metadata", "annotations") == path(opcache_raw(b), "metadata", "annotations"));
    CHECK(path(opcache_raw(a), "metadata", NULL) != path(opcache_raw(b), "metadata", NULL));
    CHECK_STR(aiq_jpath_str(opcache_raw(b), "metadata.name"), "eval-0");
    CHECK_STR(aiq_jpath_str(opcache_raw(a), "metadata.name"), "train-1");
    CHECK(json_object_equal(path(opcache_raw(b), "metadata", "labels"), lab));
    /* The readers, on the shared copy as on the pod itself. */
    CHECK_INT(pods_is_gated(opcache_raw(b)), 1);
    CHECK_INT(pods_attempt(opcache_raw(b)), 3);
    same_release(other, opcache_raw(b));
    /* The first pod is bound by the scheduler after its release: its own
     * spec and status now, the other's untouched. */
    json_object *bound = real_pod("n1", UNSCHED_COND);
    a = opcache_put(c, bound, NULL);
    CHECK(a != NULL);
    if (a) {
        CHECK(path(opcache_raw(a), "spec", NULL) != path(opcache_raw(b), "spec", NULL));
        CHECK_STR(aiq_jpath_str(opcache_raw(a), "spec.nodeName"), "n1");
    }
    CHECK_STR(aiq_jpath_str(opcache_raw(b), "spec.nodeName"), "");
    CHECK_INT(pods_is_gated(opcache_raw(b)), 1);
    CHECK(!path(opcache_raw(b), "status", "conditions"));
    /* The pool outlives nothing it shares: freeing it first is fine. */
    jshare_free(share);
    CHECK_INT(pods_attempt(opcache_raw(b)), 3);
    opcache_free(c);
    json_object_put(full);
    json_object_put(other);
}
