/* test_sim.c -- the simulated cluster (sim_*.c) driven tick by tick
 * against a started local API server (":memory:", port 0): node loading,
 * binding by affinity/selector/resources without overcommit, gates,
 * Unschedulable conditions and events, kubelet phases with time scale. */
#include "test/apiserver/apiserver.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static apisrv *start(void) {
    struct apisrv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.db_path = ":memory:";
    cfg.port = 0;
    cfg.time_scale = 1;
    cfg.history = 1000;
    aiq_err e;
    aiq_err_clear(&e);
    apisrv *s = apisrv_start(&cfg, &e);
    if (!CHECK(s != NULL)) {
        fprintf(stderr, "    apisrv_start: %s\n", e.message);
        return NULL;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/test/fixtures/nodes-small.yaml", th_srcdir());
    aiq_err_clear(&e);
    if (!CHECK_INT(sim_load_nodes(s, path, &e), AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
    return s;
}

/* Creates pod `name` (in "default": metadata.namespace is left out, the
 * server fills it) with one container "main" whose
 * resources are res_json, plus spec_extra (",..." members) and
 * annotations (a JSON object or NULL). */
static void mkpod(apisrv *s, const char *name, const char *res_json, const char *spec_extra,
                  const char *annotations) {
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\""
             "%s%s},\"spec\":{\"containers\":[{\"name\":\"main\","
             "\"image\":\"busybox\",\"resources\":%s}]%s}}",
             name, annotations ? ",\"annotations\":" : "", annotations ? annotations : "",
             res_json ? res_json : "{}", spec_extra ? spec_extra : "");
    json_object *o = json_tokener_parse(buf);
    if (!CHECK(o != NULL)) {
        fprintf(stderr, "    bad pod json %s\n", buf);
        return;
    }
    aiq_err e;
    aiq_err_clear(&e);
    if (!CHECK_INT(apisrv_obj_create(s, "pods", o, &e), AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
}

/* Copies pod's string at a dotted path ("" when absent). */
static const char *pod_str(apisrv *s, const char *name, const char *path) {
    static char out[1024];
    out[0] = '\0';
    json_object *p = apisrv_obj_get(s, "pods", "default", name);
    json_object *v = p;
    char seg[128];
    const char *c = path;
    while (v && *c) {
        const char *dot = strchr(c, '.');
        size_t n = dot ? (size_t)(dot - c) : strlen(c);
        snprintf(seg, sizeof seg, "%.*s", (int)n, c);
        json_object *nx = NULL;
        v = json_object_object_get_ex(v, seg, &nx) ? nx : NULL;
        c = dot ? dot + 1 : c + n;
    }
    if (v && json_object_is_type(v, json_type_string)) snprintf(out, sizeof out, "%s", json_object_get_string(v));
    else if (v) snprintf(out, sizeof out, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    json_object_put(p);
    return out;
}

/* The PodScheduled condition's field k. */
static const char *sched_cond(apisrv *s, const char *name, const char *k) {
    static char out[1024];
    out[0] = '\0';
    json_object *p = apisrv_obj_get(s, "pods", "default", name), *st, *cs;
    if (p && json_object_object_get_ex(p, "status", &st) &&
        json_object_object_get_ex(st, "conditions", &cs)) {
        for (size_t i = 0; i < json_object_array_length(cs); i++) {
            json_object *c = json_object_array_get_idx(cs, i), *t, *v;
            if (json_object_object_get_ex(c, "type", &t) &&
                !strcmp(json_object_get_string(t), "PodScheduled") &&
                json_object_object_get_ex(c, k, &v) && v)
                snprintf(out, sizeof out, "%s", json_object_get_string(v));
        }
    }
    json_object_put(p);
    return out;
}

/* Number of events with reason about pod name, and their summed count. */
static int events(apisrv *s, const char *name, const char *reason, long long *count) {
    json_object *evs = apisrv_obj_list(s, "events", "default");
    int n = 0;
    if (count) *count = 0;
    for (size_t i = 0; evs && i < json_object_array_length(evs); i++) {
        json_object *e = json_object_array_get_idx(evs, i), *io, *v, *r, *c;
        if (!json_object_object_get_ex(e, "involvedObject", &io) ||
            !json_object_object_get_ex(io, "name", &v) || strcmp(json_object_get_string(v), name) ||
            !json_object_object_get_ex(e, "reason", &r) || strcmp(json_object_get_string(r), reason))
            continue;
        n++;
        if (count && json_object_object_get_ex(e, "count", &c)) *count += json_object_get_int64(c);
    }
    json_object_put(evs);
    return n;
}

TEST(sim_nodes_loaded_with_gfd_labels) {
    apisrv *s = start();
    if (!s) return;
    json_object *nodes = apisrv_obj_list(s, "nodes", NULL);
    CHECK_INT(json_object_array_length(nodes), 5);
    json_object_put(nodes);
    json_object *n = apisrv_obj_get(s, "nodes", NULL, "a100-1");
    CHECK(n != NULL);
    json_object *md, *lb, *v, *st, *al;
    if (n && json_object_object_get_ex(n, "metadata", &md) && json_object_object_get_ex(md, "labels", &lb)) {
        CHECK(json_object_object_get_ex(lb, "nvidia.com/gpu.product", &v));
        CHECK_STR(json_object_get_string(v), "NVIDIA-A100-SXM4-80GB");
        CHECK(json_object_object_get_ex(lb, "nvidia.com/gpu.memory", &v));
        CHECK_STR(json_object_get_string(v), "81920");
        CHECK(json_object_object_get_ex(lb, "nvidia.com/gpu.count", &v));
        CHECK_STR(json_object_get_string(v), "8");
        CHECK(json_object_object_get_ex(lb, "aiq.dev/domain", &v));
        CHECK_STR(json_object_get_string(v), "a");
        CHECK(json_object_object_get_ex(lb, "kubernetes.io/hostname", &v));
        CHECK_STR(json_object_get_string(v), "a100-1");
    }
    if (n && json_object_object_get_ex(n, "status", &st) && json_object_object_get_ex(st, "allocatable", &al)) {
        CHECK(json_object_object_get_ex(al, "nvidia.com/gpu", &v));
        CHECK_STR(json_object_get_string(v), "8");
        CHECK(json_object_object_get_ex(al, "pods", &v));
        CHECK_STR(json_object_get_string(v), "110");
        CHECK(json_object_object_get_ex(al, "cpu", &v));
        CHECK_STR(json_object_get_string(v), "96");
    } else {
        CHECK(0);
    }
    json_object_put(n);
    n = apisrv_obj_get(s, "nodes", NULL, "h100-0");
    CHECK(n && strstr(json_object_to_json_string_ext(n, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), "\"aiq.dev/interconnect\":\"nvlink\""));
    CHECK(n && strstr(json_object_to_json_string_ext(n, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), "\"kubeletVersion\":\"v1.32.0\""));
    CHECK(n && strstr(json_object_to_json_string_ext(n, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), "\"type\":\"Ready\",\"status\":\"True\""));
    json_object_put(n);
    apisrv_stop(s);
}

TEST(sim_binds_by_affinity_selector_and_fields) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL);
    mkpod(s, "p-domain-b", "{\"limits\":{\"nvidia.com/gpu\":\"2\"}}",
          ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
          "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"aiq.dev/domain\","
          "\"operator\":\"In\",\"values\":[\"b\"]}]}]}}}", NULL);
    mkpod(s, "p-t4", "{\"requests\":{\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}",
          ",\"nodeSelector\":{\"nvidia.com/gpu.product\":\"Tesla-T4\"}", NULL);
    mkpod(s, "p-field", NULL,
          ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
          "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"aiq.dev/domain\",\"operator\":"
          "\"In\",\"values\":[\"zzz\"]}]},{\"matchFields\":[{\"key\":\"metadata.name\","
          "\"operator\":\"In\",\"values\":[\"a100-1\"]}]}]}}}", NULL);
    mkpod(s, "p-bigmem", "{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpu.memory\":\"1\"}}",
          ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
          "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.memory\","
          "\"operator\":\"Gt\",\"values\":[\"81600\"]},{\"key\":\"aiq.dev/interconnect\","
          "\"operator\":\"DoesNotExist\"}]}]}}}", NULL);
    sim_tick(s, now, 1);
    CHECK_STR(pod_str(s, "p-domain-b", "spec.nodeName"), "h100-0");
    CHECK_STR(pod_str(s, "p-t4", "spec.nodeName"), "t4-0");
    CHECK_STR(pod_str(s, "p-field", "spec.nodeName"), "a100-1");
    CHECK_STR(pod_str(s, "p-bigmem", "spec.nodeName"), "a100-0");
    CHECK_STR(sched_cond(s, "p-domain-b", "status"), "True");
    CHECK_INT(events(s, "p-t4", "Scheduled", NULL), 1);
    json_object *evs = apisrv_obj_list(s, "events", "default");
    CHECK(strstr(json_object_to_json_string_ext(evs, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), "Successfully assigned default/p-t4 to t4-0"));
    json_object_put(evs);
    apisrv_stop(s);
}

TEST(sim_never_overcommits_and_reports_unschedulable) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL);
    const char *aff = ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                      "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"aiq.dev/domain\","
                      "\"operator\":\"In\",\"values\":[\"b\"]}]}]}}}";
    mkpod(s, "g1", "{\"limits\":{\"nvidia.com/gpu\":\"3\"}}", aff, "{\"sim.aiq.dev/duration\":\"10s\"}");
    mkpod(s, "g2", "{\"limits\":{\"nvidia.com/gpu\":\"3\"}}", aff, NULL);
    mkpod(s, "g3", "{\"limits\":{\"nvidia.com/gpu\":\"2\"}}", aff, NULL);
    sim_tick(s, now, 1);
    CHECK_STR(pod_str(s, "g1", "spec.nodeName"), "h100-0");
    CHECK_STR(pod_str(s, "g2", "spec.nodeName"), "h100-1");
    CHECK_STR(pod_str(s, "g3", "spec.nodeName"), "");
    CHECK_STR(pod_str(s, "g3", "status.phase"), "Pending");
    CHECK_STR(sched_cond(s, "g3", "status"), "False");
    CHECK_STR(sched_cond(s, "g3", "reason"), "Unschedulable");
    CHECK_STR(sched_cond(s, "g3", "message"),
              "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, "
              "3 node(s) didn't match Pod's node affinity/selector.");
    long long cnt;
    CHECK_INT(events(s, "g3", "FailedScheduling", &cnt), 1);
    CHECK_INT(cnt, 1);
    /* same situation: no event storm */
    sim_tick(s, now + 1, 1);
    sim_tick(s, now + 2, 1);
    CHECK_INT(events(s, "g3", "FailedScheduling", &cnt), 1);
    CHECK_INT(cnt, 1);
    CHECK_STR(pod_str(s, "g3", "spec.nodeName"), "");
    /* g1 finishes after its 10 s; its 3 GPUs free up and g3 fits */
    sim_tick(s, now + 11, 1);
    CHECK_STR(pod_str(s, "g1", "status.phase"), "Succeeded");
    sim_tick(s, now + 12, 1);
    CHECK_STR(pod_str(s, "g3", "spec.nodeName"), "h100-0");
    CHECK_STR(sched_cond(s, "g3", "status"), "True");
    apisrv_stop(s);
}

TEST(sim_resource_messages_and_cpu_memory) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL);
    mkpod(s, "huge-cpu", "{\"requests\":{\"cpu\":\"100\"}}", NULL, NULL);
    mkpod(s, "huge-mem", "{\"requests\":{\"memory\":\"2Ti\",\"cpu\":\"500m\"}}", NULL, NULL);
    mkpod(s, "too-many-gpus", "{\"limits\":{\"nvidia.com/gpu\":\"9\"}}",
          ",\"nodeSelector\":{\"aiq.dev/domain\":\"a\"}", NULL);
    mkpod(s, "fits", "{\"requests\":{\"cpu\":\"90\",\"memory\":\"1000Gi\"}}", NULL, NULL);
    sim_tick(s, now, 1);
    CHECK_STR(sched_cond(s, "huge-cpu", "message"), "0/5 nodes are available: 5 Insufficient cpu.");
    CHECK_STR(sched_cond(s, "huge-mem", "message"), "0/5 nodes are available: 5 Insufficient memory.");
    CHECK_STR(sched_cond(s, "too-many-gpus", "message"),
              "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, "
              "3 node(s) didn't match Pod's node affinity/selector.");
    CHECK_STR(pod_str(s, "fits", "spec.nodeName"), "a100-0");
    /* a100-0 now has 6 cpu left: a second 90-cpu pod goes to a100-1 */
    mkpod(s, "fits2", "{\"requests\":{\"cpu\":\"90\"}}", NULL, NULL);
    sim_tick(s, now + 1, 1);
    CHECK_STR(pod_str(s, "fits2", "spec.nodeName"), "a100-1");
    apisrv_stop(s);
}

TEST(sim_gated_pods_are_never_bound) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL);
    mkpod(s, "gated", NULL, ",\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]", NULL);
    for (int i = 0; i < 3; i++) sim_tick(s, now + i, 1);
    CHECK_STR(pod_str(s, "gated", "spec.nodeName"), "");
    CHECK_STR(sched_cond(s, "gated", "reason"), "SchedulingGated");
    CHECK_INT(events(s, "gated", "FailedScheduling", NULL), 0);
    /* the operator releases it: gate removed, node hint added */
    json_object *p = apisrv_obj_get(s, "pods", "default", "gated"), *spec;
    CHECK(p && json_object_object_get_ex(p, "spec", &spec));
    if (p && spec) {
        json_object_object_del(spec, "schedulingGates");
        json_object_object_add(spec, "nodeSelector",
                               json_tokener_parse("{\"kubernetes.io/hostname\":\"h100-1\"}"));
        aiq_err e;
        aiq_err_clear(&e);
        if (!CHECK_INT(apisrv_obj_update(s, "pods", p, false, &e), AIQ_OK))
            fprintf(stderr, "    %s\n", e.message);
    } else {
        json_object_put(p);
    }
    sim_tick(s, now + 4, 1);
    CHECK_STR(pod_str(s, "gated", "spec.nodeName"), "h100-1");
    apisrv_stop(s);
}

/* The tick parses only the pods it may act on, chosen by a test on their
 * stored text (sim.c, sim_pod_in_play): the words of a gate inside an
 * annotation's value must not make an ungated pod look gated. */
TEST(sim_tick_skips_only_idle_gated_pods) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL);
    const char *quoting = "{\"note\":\"{\\\"schedulingGates\\\":[{\\\"name\\\":\\\"x\\\"}]}\"}";
    mkpod(s, "free-quoting-a-gate", NULL, NULL, quoting);
    mkpod(s, "gated-quoting-a-node", NULL, ",\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]",
          "{\"note\":\"{\\\"nodeName\\\":\\\"h100-0\\\"}\"}");
    CHECK(strstr(pod_str(s, "free-quoting-a-gate", "metadata.annotations.note"),
                 "\"schedulingGates\":[{") != NULL);
    sim_tick(s, now, 1);
    CHECK(pod_str(s, "free-quoting-a-gate", "spec.nodeName")[0] != '\0');
    CHECK_STR(pod_str(s, "gated-quoting-a-node", "spec.nodeName"), "");
    CHECK_STR(sched_cond(s, "gated-quoting-a-node", "reason"), "SchedulingGated");
    apisrv_stop(s);
}

TEST(sim_kubelet_phases_with_time_scale) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL) + 0.25;
    mkpod(s, "ok", NULL, NULL, "{\"sim.aiq.dev/duration\":\"1m\"}");
    mkpod(s, "bad", NULL, NULL, "{\"sim.aiq.dev/duration\":\"30s\",\"sim.aiq.dev/exit-code\":\"3\"}");
    mkpod(s, "dflt", NULL, NULL, NULL);
    /* time_scale 10: 1m of simulated run time takes 6 s */
    sim_tick(s, now, 10);
    CHECK_STR(pod_str(s, "ok", "status.phase"), "Running");
    CHECK_STR(pod_str(s, "ok", "status.containerStatuses"), pod_str(s, "ok", "status.containerStatuses"));
    CHECK(strstr(pod_str(s, "ok", "status.containerStatuses"), "\"ready\":true"));
    CHECK(strncmp(pod_str(s, "ok", "status.podIP"), "10.", 3) == 0);
    CHECK(strstr(pod_str(s, "ok", "status.conditions"), "\"type\":\"Ready\",\"status\":\"True\""));
    CHECK_INT(events(s, "ok", "Started", NULL), 1);
    sim_tick(s, now + 2.9, 10); /* 29 s simulated */
    CHECK_STR(pod_str(s, "bad", "status.phase"), "Running");
    CHECK_STR(pod_str(s, "dflt", "status.phase"), "Running");
    sim_tick(s, now + 3.0, 10); /* 30 s: bad and dflt (default 30s) end */
    CHECK_STR(pod_str(s, "bad", "status.phase"), "Failed");
    CHECK(strstr(pod_str(s, "bad", "status.containerStatuses"), "\"exitCode\":3"));
    CHECK(strstr(pod_str(s, "bad", "status.containerStatuses"), "\"reason\":\"Error\""));
    CHECK_INT(events(s, "bad", "Failed", NULL), 1);
    CHECK_STR(pod_str(s, "dflt", "status.phase"), "Succeeded");
    CHECK_STR(pod_str(s, "ok", "status.phase"), "Running");
    sim_tick(s, now + 5.9, 10);
    CHECK_STR(pod_str(s, "ok", "status.phase"), "Running");
    sim_tick(s, now + 6.0, 10);
    CHECK_STR(pod_str(s, "ok", "status.phase"), "Succeeded");
    CHECK(strstr(pod_str(s, "ok", "status.containerStatuses"), "\"exitCode\":0"));
    CHECK(strstr(pod_str(s, "ok", "status.containerStatuses"), "\"reason\":\"Completed\""));
    CHECK_INT(events(s, "ok", "Completed", NULL), 1);
    /* terminal pods are left alone */
    sim_tick(s, now + 100, 10);
    CHECK_INT(events(s, "ok", "Completed", NULL), 1);
    apisrv_stop(s);
}

TEST(sim_nodes_file_errors) {
    struct apisrv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.db_path = ":memory:";
    aiq_err e;
    aiq_err_clear(&e);
    apisrv *s = apisrv_start(&cfg, &e);
    if (!CHECK(s != NULL)) return;
    static const struct { const char *text, *part; } t[] = {
        {"[{\"name\":\"x\",\"gpus\":\"eight\"}]", "entry 0: gpus must be a non-negative integer"},
        {"- name: ok\n- gpus: 2\n", "entry 1: name: Required value"},
        {"- name: m\n  memory: lots\n", "entry 0: invalid memory quantity \"lots\""},
        {"- name: [unclosed\n", "line"},
        {"{\"foo\": 1}", "expected a list of nodes"},
    };
    char path[64];
    snprintf(path, sizeof path, "/tmp/aiq-test-nodes-%d.yaml", (int)getpid());
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        FILE *f = fopen(path, "w");
        if (!CHECK(f != NULL)) break;
        fputs(t[i].text, f);
        fclose(f);
        aiq_err_clear(&e);
        CHECK(sim_load_nodes(s, path, &e) != AIQ_OK);
        if (!CHECK(strstr(e.message, t[i].part) != NULL))
            fprintf(stderr, "    case %zu: %s\n", i, e.message);
    }
    remove(path);
    aiq_err_clear(&e);
    CHECK_INT(sim_load_nodes(s, "/nonexistent/nodes.yaml", &e), AIQ_EIO);
    apisrv_stop(s);
}

/* Replaces node name's spec member k with the JSON text v. */
static void node_spec(apisrv *s, const char *name, const char *k, const char *v) {
    json_object *n = apisrv_obj_get(s, "nodes", NULL, name), *spec;
    if (!CHECK(n && json_object_object_get_ex(n, "spec", &spec))) {
        json_object_put(n);
        return;
    }
    json_object_object_add(spec, k, json_tokener_parse(v));
    aiq_err e;
    aiq_err_clear(&e);
    if (!CHECK_INT(apisrv_obj_update(s, "nodes", n, false, &e), AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
}

TEST(sim_cordon_and_taints) {
    apisrv *s = start();
    if (!s) return;
    double now = (double)time(NULL);
    node_spec(s, "h100-0", "unschedulable", "true");
    node_spec(s, "h100-1", "unschedulable", "true");
    node_spec(s, "t4-0", "taints", "[{\"key\":\"dedicated\",\"value\":\"infer\",\"effect\":\"NoSchedule\"},"
                                   "{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"}]");
    const char *not_a = ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                        "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"aiq.dev/domain\","
                        "\"operator\":\"NotIn\",\"values\":[\"a\"]}]}]}}}";
    mkpod(s, "plain", NULL, not_a, NULL);
    char spec[1024];
    snprintf(spec, sizeof spec, "%s,\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\","
             "\"value\":\"infer\",\"effect\":\"NoSchedule\"}]", not_a);
    mkpod(s, "tolerant", NULL, spec, NULL);
    mkpod(s, "cordon-ok", NULL, ",\"nodeSelector\":{\"aiq.dev/domain\":\"b\"},\"tolerations\":"
          "[{\"key\":\"node.kubernetes.io/unschedulable\",\"operator\":\"Exists\"}]", NULL);
    mkpod(s, "wildcard", NULL, ",\"nodeSelector\":{\"aiq.dev/domain\":\"c\"},\"tolerations\":"
          "[{\"operator\":\"Exists\"}]", NULL);
    sim_tick(s, now, 1);
    CHECK_STR(pod_str(s, "plain", "spec.nodeName"), "");
    CHECK_STR(sched_cond(s, "plain", "message"),
              "0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: infer}, "
              "2 node(s) didn't match Pod's node affinity/selector, 2 node(s) were unschedulable.");
    CHECK_STR(pod_str(s, "tolerant", "spec.nodeName"), "t4-0");
    CHECK_STR(pod_str(s, "cordon-ok", "spec.nodeName"), "h100-0");
    CHECK_STR(pod_str(s, "wildcard", "spec.nodeName"), "t4-0");
    /* uncordon: the plain pod lands on h100-0 */
    node_spec(s, "h100-0", "unschedulable", "false");
    sim_tick(s, now + 1, 1);
    CHECK_STR(pod_str(s, "plain", "spec.nodeName"), "h100-0");
    apisrv_stop(s);
}

TEST(sim_demo_nodes_file_loads) {
    struct apisrv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.db_path = ":memory:";
    aiq_err e;
    aiq_err_clear(&e);
    apisrv *s = apisrv_start(&cfg, &e);
    if (!CHECK(s != NULL)) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/cluster/nodes-demo.yaml", th_srcdir());
    if (!CHECK_INT(sim_load_nodes(s, path, &e), AIQ_OK)) fprintf(stderr, "    %s\n", e.message);
    json_object *nodes = apisrv_obj_list(s, "nodes", NULL);
    CHECK_INT(json_object_array_length(nodes), 14);
    json_object_put(nodes);
    /* loading again keeps the existing nodes (restart with a --db file) */
    CHECK_INT(sim_load_nodes(s, path, &e), AIQ_OK);
    nodes = apisrv_obj_list(s, "nodes", NULL);
    CHECK_INT(json_object_array_length(nodes), 14);
    json_object_put(nodes);
    json_object *cpu = apisrv_obj_get(s, "nodes", NULL, "cpu-0");
    CHECK(cpu && !strstr(json_object_to_json_string(cpu), "nvidia.com"));
    json_object_put(cpu);
    apisrv_stop(s);
}

/* A pod for the kubelet tests: scheduler "default-scheduler", duration
 * 1h, the given stop-duration, finalizer x/keep when keep (so that the
 * object and its final status stay to be looked at). */
static void term_pod(apisrv *s, const char *name, const char *stop, bool keep) {
    char buf[1024];
    aiq_err e;
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"%s,\"annotations\":{"
             "\"sim.aiq.dev/duration\":\"1h\",\"sim.aiq.dev/stop-duration\":\"%s\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}",
             name, keep ? ",\"finalizers\":[\"x/keep\"]" : "", stop);
    aiq_err_clear(&e);
    if (!CHECK_INT(apisrv_obj_create(s, "pods", json_tokener_parse(buf), &e), AIQ_OK))
        fprintf(stderr, "    %s\n", e.message);
}

TEST(sim_kubelet_graceful_deletion) {
    apisrv *s = start();
    struct apisrv_delete_opts two = {.has_grace = true, .grace = 2};
    json_object *p, *cs = NULL, *st = NULL;
    long long n = 0;
    aiq_err e;
    if (!s) return;
    double now = (double)time(NULL);
    term_pod(s, "t-term", "20s", true);
    term_pod(s, "t-kill", "1h", true);
    term_pod(s, "t-quick", "0s", false);
    sim_tick(s, now, 10);
    sim_tick(s, now + 0.1, 10);
    CHECK_STR(pod_str(s, "t-term", "status.phase"), "Running");
    CHECK_STR(pod_str(s, "t-kill", "status.phase"), "Running");
    CHECK_STR(pod_str(s, "t-quick", "status.phase"), "Running");
    aiq_err_clear(&e);
    CHECK_INT(apisrv_obj_delete(s, "pods", "default", "t-term", &e), AIQ_OK);
    CHECK_INT(apisrv_obj_delete_opts(s, "pods", "default", "t-kill", &two, &e), AIQ_OK);
    CHECK_INT(apisrv_obj_delete(s, "pods", "default", "t-quick", &e), AIQ_OK);
    CHECK_STR(pod_str(s, "t-term", "metadata.deletionGracePeriodSeconds"), "30");
    CHECK_STR(pod_str(s, "t-kill", "metadata.deletionGracePeriodSeconds"), "2");
    /* 1 s in: t-term stops 20 s / 10 = 2 s after its DELETE, t-kill only at
     * its grace end; both said "Stopping container" once */
    sim_tick(s, now + 1, 10);
    sim_tick(s, now + 1.2, 10);
    CHECK_STR(pod_str(s, "t-term", "status.phase"), "Running");
    CHECK_STR(pod_str(s, "t-kill", "status.phase"), "Running");
    CHECK_INT(events(s, "t-term", "Killing", &n), 1);
    CHECK_INT(n, 1);
    /* a pod with nothing to wait for is gone already */
    p = apisrv_obj_get(s, "pods", "default", "t-quick");
    CHECK(p == NULL);
    json_object_put(p);
    sim_tick(s, now + 3.5, 10);
    CHECK_STR(pod_str(s, "t-term", "status.phase"), "Failed");
    p = apisrv_obj_get(s, "pods", "default", "t-term");
    if (p && json_object_object_get_ex(p, "status", &st) && json_object_object_get_ex(st, "containerStatuses", &cs))
        CHECK_STR(json_object_get_string(json_object_object_get(json_object_object_get(json_object_object_get(
                      json_object_array_get_idx(cs, 0), "state"), "terminated"), "exitCode")), "143");
    else
        CHECK(!"t-term has container statuses");
    json_object_put(p);
    CHECK_STR(pod_str(s, "t-kill", "status.phase"), "Failed");
    p = apisrv_obj_get(s, "pods", "default", "t-kill");
    if (p && json_object_object_get_ex(p, "status", &st) && json_object_object_get_ex(st, "containerStatuses", &cs))
        CHECK_STR(json_object_get_string(json_object_object_get(json_object_object_get(json_object_object_get(
                      json_object_array_get_idx(cs, 0), "state"), "terminated"), "exitCode")), "137");
    else
        CHECK(!"t-kill has container statuses");
    json_object_put(p);
    /* a finalizer keeps the object: the kubelet deletes it (grace 0) only
     * once the finalizer is gone; removing it within the grace period
     * does not delete it by itself */
    CHECK_STR(pod_str(s, "t-term", "metadata.deletionGracePeriodSeconds"), "30");
    p = apisrv_obj_get(s, "pods", "default", "t-term");
    json_object_object_del(json_object_object_get(p, "metadata"), "finalizers");
    CHECK_INT(apisrv_obj_update(s, "pods", p, false, &e), AIQ_OK);
    CHECK_STR(pod_str(s, "t-term", "status.phase"), "Failed");
    sim_tick(s, now + 4, 10);
    p = apisrv_obj_get(s, "pods", "default", "t-term");
    CHECK(p == NULL);
    json_object_put(p);
    /* a pod on a node nobody simulates stays Terminating */
    term_pod(s, "t-ghost", "0s", false);
    CHECK_INT(apisrv_obj_bind(s, "default", "t-ghost", "ghost-node", &e), AIQ_OK);
    CHECK_INT(apisrv_obj_delete(s, "pods", "default", "t-ghost", &e), AIQ_OK);
    sim_tick(s, now + 5, 10);
    CHECK_STR(pod_str(s, "t-ghost", "metadata.deletionGracePeriodSeconds"), "30");
    apisrv_stop(s);
}

TEST(sim_scheduler_leaves_other_schedulers_pods) {
    apisrv *s = start();
    if (!s) return;
    mkpod(s, "mine", NULL, NULL, NULL);
    mkpod(s, "theirs", NULL, ",\"schedulerName\":\"other\"", NULL);
    sim_tick(s, (double)time(NULL), 1);
    CHECK(pod_str(s, "mine", "spec.nodeName")[0] != '\0');
    CHECK_STR(pod_str(s, "theirs", "spec.nodeName"), "");
    apisrv_stop(s);
}
