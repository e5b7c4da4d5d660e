/* test_operator_nodefacts.c -- a Node's GPU facts and the reasons a node
 * is left out (operator/nodefacts.c): memory label and per-GPU
 * annotation, time-slicing replicas, MIG mixed and single, the GPU cap. */
#include <json-c/json.h>
#include <string.h>

#include "operator/nodefacts.h"
#include "test/unit/th.h"

/* A node named n with labels, annotations and allocatable (JSON texts). */
static json_object *node(const char *labels, const char *ann, const char *alloc) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"n1\",\"labels\":%s,\"annotations\":%s},"
             "\"status\":{\"allocatable\":%s}}",
             labels, ann, alloc);
    return json_tokener_parse(buf);
}

TEST(nodefacts_plain_node) {
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"81920\",\"nvidia.com/gpu.product\":\"A100\","
                          "\"aiq.dev/domain\":\"train\"}", "{}",
                          "{\"nvidia.com/gpu\":\"8\",\"cpu\":\"64\",\"memory\":\"512Gi\"}");
    struct node_facts f;
    CHECK_INT(node_facts_read(n, &f), 0);
    CHECK_INT(f.excluded, NODEX_NONE);
    CHECK_INT(f.q.ngpus, 8);
    CHECK_INT(f.q.gpu_mem_total[7], 81920);
    CHECK_STR(f.q.gpu_model, "A100");
    CHECK_STR(f.q.domain, "train");
    CHECK_INT(f.q.cpu_alloc, 64000);
    CHECK(f.q.schedulable);
    json_object_put(n);
}

/* Ready condition: only "True" is ready; a node that reports none yet is
 * taken as ready. A NotReady node is not schedulable (nothing is placed
 * there), and node_ready says since when and why. */
TEST(nodefacts_not_ready_is_unschedulable) {
    const char *fmt = "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"nvidia.com/gpu.memory\":"
                      "\"81920\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"},"
                      "\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
                      "{\"type\":\"Ready\",\"status\":\"%s\",\"reason\":\"R\","
                      "\"lastTransitionTime\":\"2026-01-02T03:04:05Z\"}]}}";
    const char *states[] = {"True", "False", "Unknown"};
    for (int i = 0; i < 3; i++) {
        char buf[1024];
        snprintf(buf, sizeof buf, fmt, states[i]);
        json_object *n = json_tokener_parse(buf);
        struct node_facts f;
        double since = 0;
        const char *why = NULL;
        CHECK_INT(node_facts_read(n, &f), 0);
        CHECK_INT(f.excluded, NODEX_NONE); /* left out of placement, not excluded */
        CHECK(f.q.schedulable == (i == 0));
        CHECK(node_ready(n, &since, &why) == (i == 0));
        if (i > 0) {
            CHECK(since == 1767323045.0);
            CHECK_STR(why, "R");
        }
        json_object_put(n);
    }
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"81920\"}", "{}",
                          "{\"nvidia.com/gpu\":\"8\"}");
    CHECK(node_ready(n, NULL, NULL)); /* no conditions yet */
    json_object_put(n);
}

TEST(nodefacts_missing_memory_is_excluded_not_fatal) {
    json_object *n = node("{}", "{}", "{\"nvidia.com/gpu\":\"8\",\"cpu\":\"8\"}");
    struct node_facts f;
    CHECK_INT(node_facts_read(n, &f), 0);
    CHECK_INT(f.excluded, NODEX_MISSING_GPU_MEMORY);
    CHECK_STR(nodex_name(f.excluded), "MissingGPUMemory");
    CHECK(strstr(f.message, "nvidia.com/gpu.memory") != NULL);
    CHECK_INT(f.q.ngpus, 0);
    json_object_put(n);
}

TEST(nodefacts_cpu_only_node_is_fine) {
    json_object *n = node("{}", "{}", "{\"cpu\":\"8\",\"memory\":\"16Gi\"}");
    struct node_facts f;
    CHECK_INT(node_facts_read(n, &f), 0);
    CHECK_INT(f.excluded, NODEX_NONE);
    CHECK_INT(f.q.ngpus, 0);
    json_object_put(n);
}

TEST(nodefacts_bad_memory_label) {
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"lots\"}", "{}", "{\"nvidia.com/gpu\":\"2\"}");
    struct node_facts f;
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_BAD_GPU_MEMORY);
    CHECK(strstr(f.message, "\"lots\"") != NULL);
    json_object_put(n);
}

TEST(nodefacts_per_gpu_memory_annotation) {
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"81920\"}",
                          "{\"aiq.dev/gpu-memory-mib\":\"81920,81920,40960,40960\"}",
                          "{\"nvidia.com/gpu\":\"4\"}");
    struct node_facts f;
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_NONE);
    CHECK_INT(f.q.gpu_mem_total[0], 81920);
    CHECK_INT(f.q.gpu_mem_total[3], 40960);
    json_object_put(n);
    n = node("{}", "{\"aiq.dev/gpu-memory-mib\":\"81920,40960\"}", "{\"nvidia.com/gpu\":\"4\"}");
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_GPU_MEMORY_COUNT);
    CHECK(strstr(f.message, "2 entries") && strstr(f.message, "4 physical"));
    json_object_put(n);
    n = node("{}", "{\"aiq.dev/gpu-memory-mib\":\"81920,,1\"}", "{\"nvidia.com/gpu\":\"3\"}");
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_BAD_GPU_MEMORY);
    json_object_put(n);
}

TEST(nodefacts_time_slicing_counts_physical_gpus) {
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"24576\",\"nvidia.com/gpu.replicas\":\"4\"}",
                          "{}", "{\"nvidia.com/gpu\":\"32\"}");
    struct node_facts f;
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_NONE);
    CHECK_INT(f.advertised, 32);
    CHECK_INT(f.replicas, 4);
    CHECK_INT(f.q.ngpus, 8);
    json_object_put(n);
    n = node("{\"nvidia.com/gpu.memory\":\"24576\",\"nvidia.com/gpu.replicas\":\"3\"}", "{}",
             "{\"nvidia.com/gpu\":\"32\"}");
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_BAD_REPLICAS);
    CHECK(strstr(f.message, "not a multiple") != NULL);
    json_object_put(n);
}

TEST(nodefacts_mig_mixed_listed_not_counted) {
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"81920\",\"nvidia.com/mig.strategy\":\"mixed\"}",
                          "{}", "{\"nvidia.com/gpu\":\"6\",\"nvidia.com/mig-1g.10gb\":\"14\"}");
    struct node_facts f;
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_NONE);
    CHECK_INT(f.q.ngpus, 6);
    CHECK(!f.mig_single);
    CHECK_STR(f.mig, "1g.10gb=14");
    json_object_put(n);
    /* single: nvidia.com/gpu counts the slices, each one an isolated GPU. */
    n = node("{\"nvidia.com/gpu.memory\":\"9984\",\"nvidia.com/mig.strategy\":\"single\"}", "{}",
             "{\"nvidia.com/gpu\":\"14\"}");
    node_facts_read(n, &f);
    CHECK(f.mig_single);
    CHECK_INT(f.q.ngpus, 14);
    CHECK_INT(f.q.gpu_mem_total[13], 9984);
    json_object_put(n);
}

TEST(nodefacts_gpu_cap) {
    char alloc[64];
    snprintf(alloc, sizeof alloc, "{\"nvidia.com/gpu\":\"%d\"}", Q_MAX_GPUS);
    json_object *n = node("{\"nvidia.com/gpu.memory\":\"1\"}", "{}", alloc);
    struct node_facts f;
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_NONE);
    CHECK_INT(f.q.ngpus, Q_MAX_GPUS);
    json_object_put(n);
    snprintf(alloc, sizeof alloc, "{\"nvidia.com/gpu\":\"%d\"}", Q_MAX_GPUS + 1);
    n = node("{\"nvidia.com/gpu.memory\":\"1\"}", "{}", alloc);
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_TOO_MANY_GPUS);
    json_object_put(n);
    n = node("{}", "{}", "{\"nvidia.com/gpu\":\"x\"}");
    node_facts_read(n, &f);
    CHECK_INT(f.excluded, NODEX_BAD_GPU_COUNT);
    json_object_put(n);
    n = json_tokener_parse("{\"metadata\":{}}");
    CHECK_INT(node_facts_read(n, &f), -1);
    json_object_put(n);
}
