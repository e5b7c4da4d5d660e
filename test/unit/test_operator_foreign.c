/* test_operator_foreign.c -- what a pod aiq does not run holds
 * (operator/foreign.c): the scheduler's request rules, terminal and
 * unbound pods, the lean cache with relists, and counting against a
 * node. */
#include <json-c/json.h>
#include <string.h>

#include "operator/foreign.h"
#include "test/unit/th.h"

static json_object *pod(const char *name, const char *node, const char *phase, const char *spec_extra,
                        const char *ann) {
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"annotations\":%s,"
             "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"dcgm\",\"controller\":true}]},"
             "\"spec\":{\"nodeName\":\"%s\",%s},\"status\":{\"phase\":\"%s\"}}",
             name, ann, node, spec_extra, phase);
    return json_tokener_parse(buf);
}

TEST(foreign_requests_follow_the_scheduler) {
    /* limits stand for requests; init max vs sum; sidecar adds; overhead adds. */
    json_object *o = pod("p", "n1", "Running",
        "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\",\"cpu\":\"1\"}}},"
        "{\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}}],"
        "\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"4\"}}},"
        "{\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"memory\":\"1Gi\"}}}],"
        "\"overhead\":{\"cpu\":\"100m\"}", "{}");
    struct fpod p;
    CHECK_INT(fpod_read(o, &p), 0);
    CHECK_STR(p.key, "ns/p");
    CHECK_STR(p.node, "n1");
    CHECK_STR(p.owner, "DaemonSet/dcgm");
    CHECK(p.holds);
    CHECK_INT(p.gpus, 2);
    CHECK_INT(p.cpu_milli, 4100);            /* max(1.5, 4) + 0.1 */
    CHECK_INT(p.mem_bytes, 2LL << 30);       /* 1Gi + sidecar 1Gi */
    fpod_deinit(&p);
    json_object_put(o);
}

TEST(foreign_terminal_and_unbound_hold_nothing) {
    struct fpod p;
    json_object *o = pod("p", "n1", "Succeeded", "\"containers\":[]", "{}");
    fpod_read(o, &p);
    CHECK(!p.holds);
    fpod_deinit(&p);
    json_object_put(o);
    o = pod("p", "n1", "Failed", "\"containers\":[]", "{}");
    fpod_read(o, &p);
    CHECK(!p.holds);
    fpod_deinit(&p);
    json_object_put(o);
    o = pod("p", "", "Pending", "\"containers\":[]", "{}");
    fpod_read(o, &p);
    CHECK(!p.holds);
    fpod_deinit(&p);
    json_object_put(o);
}

static int count_cb(const struct fpod *p, void *ud) {
    (void)p;
    (*(int *)ud)++;
    return 0;
}

TEST(foreign_cache_put_del_relist) {
    fpods *c = fpods_create();
    char name[32];
    for (int i = 0; i < 600; i++) { /* past the first bucket count: grows */
        snprintf(name, sizeof name, "p%d", i);
        json_object *o = pod(name, "n1", "Running", "\"containers\":[]", "{}");
        struct fpod p;
        CHECK_INT(fpod_read(o, &p), 0);
        CHECK_INT(fpods_put(c, &p), 0);
        json_object_put(o);
    }
    CHECK_INT(fpods_count(c), 600);
    /* Finishing removes it. */
    json_object *o = pod("p0", "n1", "Succeeded", "\"containers\":[]", "{}");
    struct fpod p;
    fpod_read(o, &p);
    fpods_put(c, &p);
    json_object_put(o);
    CHECK_INT(fpods_count(c), 599);
    CHECK_INT(fpods_del(c, "ns/p1"), 1);
    CHECK_INT(fpods_del(c, "ns/p1"), 0);
    /* A relist that sees only p2: everything else is dropped. */
    fpods_relist_begin(c);
    o = pod("p2", "n1", "Running", "\"containers\":[]", "{}");
    fpod_read(o, &p);
    fpods_put(c, &p);
    json_object_put(o);
    CHECK_INT(fpods_relist_end(c), 597);
    int n = 0;
    fpods_each(c, count_cb, &n);
    CHECK_INT(n, 1);
    fpods_free(c);
    fpods_free(NULL);
}

static void node8(struct q_node *n) {
    memset(n, 0, sizeof *n);
    n->name = "n1";
    n->ngpus = 8;
    for (int g = 0; g < 8; g++)
        n->gpu_mem_total[g] = 81920;
    n->cpu_alloc = 64000;
}

TEST(foreign_apply_whole_gpus_and_indexes) {
    struct q_node n;
    node8(&n);
    n.gpu_mem_used[7] = 81920; /* aiq holds GPU 7 */
    struct fpod p;
    memset(&p, 0, sizeof p);
    p.gpus = 2;
    p.cpu_milli = 1000;
    foreign_apply(&n, &p);
    /* The most-free GPUs, highest index first: 6 and 5. */
    CHECK_INT(n.gpu_mem_used[6], 81920);
    CHECK_INT(n.gpu_mem_used[5], 81920);
    CHECK_INT(n.gpu_mem_used[4], 0);
    CHECK_INT(n.cpu_used, 1000);
    /* Annotated indexes are exact; used never passes total. */
    p.gpus = 2;
    p.gpu_idx = (1ull << 0) | (1ull << 7);
    foreign_apply(&n, &p);
    CHECK_INT(n.gpu_mem_used[0], 81920);
    CHECK_INT(n.gpu_mem_used[7], 81920);
    /* More units than GPUs (a time-sliced node): every GPU is taken. */
    node8(&n);
    memset(&p, 0, sizeof p);
    p.gpus = 20;
    foreign_apply(&n, &p);
    for (int g = 0; g < 8; g++)
        CHECK_INT(n.gpu_mem_used[g], 81920);
}

TEST(foreign_apply_gpumem_share) {
    struct q_node n;
    node8(&n);
    for (int g = 0; g < 8; g++)
        n.gpu_mem_used[g] = 40000;
    n.gpu_mem_used[2] = 0;
    struct fpod p;
    memset(&p, 0, sizeof p);
    p.gpus = 1;
    p.gpu_mem_mib = 10000;
    foreign_apply(&n, &p);
    CHECK_INT(n.gpu_mem_used[2], 10000); /* the most free memory */
    p.gpu_mem_mib = 1 << 20;                  /* more than a GPU has */
    p.gpu_idx = 1ull << 3;
    foreign_apply(&n, &p);
    CHECK_INT(n.gpu_mem_used[3], 81920);
}

TEST(foreign_bad_indexes_are_ignored) {
    json_object *o = pod("p", "n1", "Running",
                         "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]",
                         "{\"aiq.dev/gpu-indexes\":\"0,x\"}");
    struct fpod p;
    fpod_read(o, &p);
    CHECK_INT(p.gpu_idx, 0);
    fpod_deinit(&p);
    json_object_put(o);
    o = pod("p", "n1", "Running", "\"containers\":[]", "{\"aiq.dev/gpu-indexes\":\"1,3\"}");
    fpod_read(o, &p);
    CHECK_INT(p.gpu_idx, 0xa);
    fpod_deinit(&p);
    json_object_put(o);
}
