/* test_gpu_mech.c -- the GPU mechanisms (operator/gpu_mech.c): the pod's
 * request under each, a shared replica's whole GPU where sharing is not
 * possible, HAMi's node device list (both forms) and pinning annotation,
 * and the DRA ResourceClaim. */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "operator/gpu_mech.h"
#include "operator/pods.h"
#include "test/unit/th.h"

static const char *js(json_object *o) {
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* A one-replica job; gpus 0 with memory is a shared one. */
static struct aiq_aijob job(int gpus, int64_t mib) {
    struct aiq_aijob j;
    memset(&j, 0, sizeof j);
    j.meta.name = (char *)"infer";
    j.meta.namespace_ = (char *)"team-a";
    j.meta.uid = (char *)"uid-9";
    j.spec.user = (char *)"alice";
    j.spec.replicas = 2;
    j.spec.resources.gpus = gpus;
    j.spec.resources.gpu_memory_mib = mib;
    j.spec.resources.cpu_milli = 1000;
    return j;
}

/* The first container's resources of pod 0 of j under m, as JSON text
 * (caller frees), or NULL when the build failed. */
static char *c0_resources(const struct aiq_aijob *j, enum gpu_mech m, json_object **podp) {
    aiq_err e;
    aiq_err_clear(&e);
    json_object *pod = pods_build(j, NULL, 0, m, &e), *spec = NULL, *cs = NULL, *res = NULL;
    if (!pod)
        return NULL;
    json_object_object_get_ex(pod, "spec", &spec);
    json_object_object_get_ex(spec, "containers", &cs);
    json_object_object_get_ex(json_object_array_get_idx(cs, 0), "resources", &res);
    char *out = strdup(js(res));
    if (podp)
        *podp = pod;
    else
        json_object_put(pod);
    return out;
}

TEST(gpu_mech_parse_and_names) {
    enum gpu_mech m = GPU_MECH_HAMI;
    CHECK_INT(gpu_mech_parse("device-plugin", &m), 0);
    CHECK_INT(m, GPU_MECH_DEVICE_PLUGIN);
    CHECK_INT(gpu_mech_parse("dra", &m), 0);
    CHECK_INT(m, GPU_MECH_DRA);
    CHECK_INT(gpu_mech_parse("hami", &m), 0);
    CHECK_INT(m, GPU_MECH_HAMI);
    CHECK_INT(gpu_mech_parse("HAMi", &m), -1);
    CHECK_INT(gpu_mech_parse("", &m), -1);
    CHECK_INT(gpu_mech_parse(NULL, &m), -1);
    CHECK_INT(m, GPU_MECH_HAMI);
    CHECK_STR(gpu_mech_name(GPU_MECH_DRA), "dra");
}

TEST(gpu_mech_shared_holds_a_whole_gpu_unless_hami) {
    struct aiq_resources shared = {.gpus = 0, .gpu_memory_mib = 20480};
    struct aiq_resources whole = {.gpus = 2, .gpu_memory_mib = 0};
    struct aiq_resources none = {.gpus = 0, .gpu_memory_mib = 0};
    CHECK_INT(gpu_mech_gpus(GPU_MECH_DEVICE_PLUGIN, &shared), 1);
    CHECK_INT(gpu_mech_gpus(GPU_MECH_DRA, &shared), 1);
    CHECK_INT(gpu_mech_gpus(GPU_MECH_HAMI, &shared), 0);
    CHECK_INT(gpu_mech_shares(GPU_MECH_HAMI, &shared), 1);
    CHECK_INT(gpu_mech_shares(GPU_MECH_DRA, &shared), 0);
    CHECK_INT(gpu_mech_gpus(GPU_MECH_DRA, &whole), 2);
    CHECK_INT(gpu_mech_gpus(GPU_MECH_HAMI, &whole), 2);
    CHECK_INT(gpu_mech_gpus(GPU_MECH_DEVICE_PLUGIN, &none), 0);
}

TEST(gpu_mech_pod_device_plugin) {
    struct aiq_aijob s = job(0, 20480), w = job(4, 0), n = job(0, 0);
    char *r = c0_resources(&s, GPU_MECH_DEVICE_PLUGIN, NULL);
    CHECK_STR(r, "{\"limits\":{\"nvidia.com/gpu\":\"1\"},"
                 "\"requests\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"1000m\"}}");
    free(r);
    r = c0_resources(&w, GPU_MECH_DEVICE_PLUGIN, NULL);
    CHECK_STR(r, "{\"limits\":{\"nvidia.com/gpu\":\"4\"},"
                 "\"requests\":{\"nvidia.com/gpu\":\"4\",\"cpu\":\"1000m\"}}");
    free(r);
    r = c0_resources(&n, GPU_MECH_DEVICE_PLUGIN, NULL);
    CHECK_STR(r, "{\"limits\":{},\"requests\":{\"cpu\":\"1000m\"}}");
    free(r);
}

TEST(gpu_mech_pod_hami) {
    struct aiq_aijob s = job(0, 20480), w = job(2, 40960);
    char *r = c0_resources(&s, GPU_MECH_HAMI, NULL);
    CHECK_STR(r, "{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"20480\"},"
                 "\"requests\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"20480\","
                 "\"cpu\":\"1000m\"}}");
    free(r);
    r = c0_resources(&w, GPU_MECH_HAMI, NULL);
    CHECK_STR(r, "{\"limits\":{\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpumem-percentage\":\"100\"},"
                 "\"requests\":{\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpumem-percentage\":\"100\","
                 "\"cpu\":\"1000m\"}}");
    free(r);
}

TEST(gpu_mech_pod_dra) {
    struct aiq_aijob s = job(0, 20480);
    json_object *pod = NULL, *spec = NULL, *rc = NULL;
    char *r = c0_resources(&s, GPU_MECH_DRA, &pod);
    CHECK_STR(r, "{\"limits\":{},\"requests\":{\"cpu\":\"1000m\"},\"claims\":[{\"name\":\"gpu\"}]}");
    free(r);
    json_object_object_get_ex(pod, "spec", &spec);
    CHECK(json_object_object_get_ex(spec, "resourceClaims", &rc));
    CHECK_STR(js(rc), "[{\"name\":\"gpu\",\"resourceClaimName\":\"infer-0-gpu\"}]");
    json_object_put(pod);

    /* A pod name that leaves no room for "-gpu" is refused, named. */
    char longname[260];
    memset(longname, 'a', 249);
    longname[249] = '\0';
    s.meta.name = longname; /* "aaa...-0" is 251 characters */
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(pods_build(&s, NULL, 0, GPU_MECH_DRA, &e) == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, "metadata.name");
    CHECK(strstr(e.message, "ResourceClaim") != NULL);
}

/* A Node with HAMi's annotation set to v. */
static json_object *hami_node(const char *v) {
    json_object *n = json_tokener_parse("{\"metadata\":{\"name\":\"gpu-a-0\",\"annotations\":{}}}");
    json_object *m = NULL, *a = NULL;
    json_object_object_get_ex(n, "metadata", &m);
    json_object_object_get_ex(m, "annotations", &a);
    if (v)
        json_object_object_add(a, GPU_MECH_HAMI_NODE_ANN, json_object_new_string(v));
    return n;
}

TEST(gpu_mech_hami_uuid_text_and_json) {
    char buf[GPU_MECH_MAX_UUID];
    aiq_err e;
    /* HAMi's documented form: 7 fields, the index is the position. */
    json_object *n = hami_node("GPU-aaa,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
                               "GPU-bbb,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:");
    CHECK_INT(gpu_mech_hami_uuid(n, 1, buf, sizeof buf, &e), 0);
    CHECK_STR(buf, "GPU-bbb");
    aiq_err_clear(&e);
    CHECK_INT(gpu_mech_hami_uuid(n, 2, buf, sizeof buf, &e), -1);
    CHECK_INT(e.code, AIQ_ENOTFOUND);
    CHECK(strstr(e.message, "gpu-a-0") && strstr(e.message, "index 2"));
    json_object_put(n);
    /* 9 fields: the index is the 8th. */
    n = hami_node("GPU-x,10,81920,100,A100,0,true,3,hami-core:GPU-y,10,81920,100,A100,0,true,1,hami-core:");
    CHECK_INT(gpu_mech_hami_uuid(n, 1, buf, sizeof buf, &e), 0);
    CHECK_STR(buf, "GPU-y");
    CHECK_INT(gpu_mech_hami_uuid(n, 3, buf, sizeof buf, &e), 0);
    CHECK_STR(buf, "GPU-x");
    json_object_put(n);
    /* JSON list. */
    n = hami_node("[{\"id\":\"GPU-j0\",\"index\":0},{\"id\":\"GPU-j1\",\"index\":1}]");
    CHECK_INT(gpu_mech_hami_uuid(n, 1, buf, sizeof buf, &e), 0);
    CHECK_STR(buf, "GPU-j1");
    json_object_put(n);
    /* Malformed, missing. */
    n = hami_node("GPU-a,10,32768:");
    aiq_err_clear(&e);
    CHECK_INT(gpu_mech_hami_uuid(n, 0, buf, sizeof buf, &e), -1);
    CHECK_INT(e.code, AIQ_EPARSE);
    json_object_put(n);
    n = hami_node(NULL);
    aiq_err_clear(&e);
    CHECK_INT(gpu_mech_hami_uuid(n, 0, buf, sizeof buf, &e), -1);
    CHECK_INT(e.code, AIQ_ENOTFOUND);
    CHECK(strstr(e.message, GPU_MECH_HAMI_NODE_ANN) != NULL);
    json_object_put(n);
}

TEST(gpu_mech_release_hami_annotation) {
    struct opst_place pl;
    memset(&pl, 0, sizeof pl);
    snprintf(pl.node, sizeof pl.node, "gpu-a-0");
    pl.gpus[0] = 0;
    pl.gpus[1] = 2;
    pl.ngpus = 2;
    json_object *n = hami_node("GPU-0,10,1,100,T,0,true:GPU-1,10,1,100,T,0,true:GPU-2,10,1,100,T,0,true:");
    json_object *ann = json_object_new_object();
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(gpu_mech_release(ann, &pl, n, GPU_MECH_HAMI, &e), 0);
    CHECK_STR(js(ann), "{\"nvidia.com/use-gpuuuid\":\"GPU-0,GPU-2\"}");
    /* Nothing for the others; an unknown node fails closed for hami. */
    json_object *ann2 = json_object_new_object();
    CHECK_INT(gpu_mech_release(ann2, &pl, n, GPU_MECH_DEVICE_PLUGIN, &e), 0);
    CHECK_INT(gpu_mech_release(ann2, &pl, n, GPU_MECH_DRA, &e), 0);
    CHECK_STR(js(ann2), "{}");
    CHECK_INT(gpu_mech_release(ann2, &pl, NULL, GPU_MECH_HAMI, &e), -1);
    CHECK_STR(js(ann2), "{}");
    json_object_put(ann2);
    json_object_put(ann);
    json_object_put(n);
}

TEST(gpu_mech_claim_selects_the_placed_devices) {
    struct opst_place pl;
    memset(&pl, 0, sizeof pl);
    snprintf(pl.node, sizeof pl.node, "gpu-a-1");
    pl.gpus[0] = 3;
    pl.gpus[1] = 5;
    pl.ngpus = 2;
    json_object *pod = json_tokener_parse(
        "{\"metadata\":{\"name\":\"train-0\",\"namespace\":\"team-a\",\"uid\":\"pod-uid-1\","
        "\"labels\":{\"aiq.dev/job\":\"train\"}}}");
    aiq_err e;
    aiq_err_clear(&e);
    json_object *c = gpu_mech_claim(pod, &pl, 40960, &e);
    CHECK(c != NULL);
    CHECK_STR(js(c),
              "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
              "\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
              "\"name\":\"train-0\",\"uid\":\"pod-uid-1\"}],\"labels\":{\"aiq.dev/job\":\"train\"},"
              "\"name\":\"train-0-gpu\",\"namespace\":\"team-a\"},"
              "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
              "\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\",\"count\":2,"
              "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes[\\\"gpu.nvidia.com\\\"].index "
              "in [3, 5] && device.capacity[\\\"gpu.nvidia.com\\\"].memory.compareTo("
              "quantity(\\\"40960Mi\\\")) >= 0\"}}]}}]}}}");
    CHECK_INT(gpu_mech_claim_owned_by(c, "pod-uid-1"), 1);
    CHECK_INT(gpu_mech_claim_owned_by(c, "pod-uid-2"), 0);
    json_object_put(c);
    /* No memory asked: no capacity term. */
    c = gpu_mech_claim(pod, &pl, 0, &e);
    CHECK(strstr(js(c), "in [3, 5]\"") != NULL);
    json_object_put(c);
    /* No GPU placed, no uid: refused. */
    pl.ngpus = 0;
    aiq_err_clear(&e);
    CHECK(gpu_mech_claim(pod, &pl, 0, &e) == NULL);
    CHECK_STR(e.field, "status.placement");
    json_object_put(pod);
    pl.ngpus = 1;
    pod = json_tokener_parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"}}");
    aiq_err_clear(&e);
    CHECK(gpu_mech_claim(pod, &pl, 0, &e) == NULL);
    CHECK_STR(e.field, "metadata");
    json_object_put(pod);
}
