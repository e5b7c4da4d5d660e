/* sim_kubelet.c -- the simulated kubelet of every node: starts bound
 * Pending pods (Running, podIP, ready container statuses), finishes
 * Running pods once their simulated run time has passed (annotation
 * sim.aiq.dev/duration, a Go duration, default 30s, compared with
 * (now - startTime) * time_scale) with the exit code of annotation
 * sim.aiq.dev/exit-code (default 0: Succeeded, else Failed), and plays its
 * part in graceful deletion: containers stop after
 * sim.aiq.dev/stop-duration (at most the grace period), the pod ends
 * Failed (exit 143, or 137 when killed) and is deleted with grace 0. */
#include "test/apiserver/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "test/apiserver/humantime.h"

/* FNV-1a, for stable fake IPs and container ids. */
static uint32_t sim_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static json_object *sim_find_node(json_object *nodes, const char *name) {
    for (size_t i = 0; i < json_object_array_length(nodes); i++) {
        json_object *n = json_object_array_get_idx(nodes, i);
        const char *nn = aiq_jpath_str(n, "metadata.name");
        if (nn && strcmp(nn, name) == 0) return n;
    }
    return NULL;
}

/* The node's InternalIP, or "10.0.0.1". */
static const char *sim_node_ip(json_object *node) {
    json_object *as = aiq_jpath(node, "status.addresses");
    size_t n = as && json_object_is_type(as, json_type_array) ? json_object_array_length(as) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *a = json_object_array_get_idx(as, i);
        const char *t = aiq_jpath_str(a, "type");
        if (t && strcmp(t, "InternalIP") == 0 && aiq_jpath_str(a, "address"))
            return aiq_jpath_str(a, "address");
    }
    return "10.0.0.1";
}

/* A duration annotation (Go syntax) in seconds, or dflt. */
static double sim_ann_duration(json_object *pod, const char *key, double dflt) {
    json_object *ann = aiq_jpath(pod, "metadata.annotations");
    json_object *v = NULL;
    double secs = dflt;
    if (ann && json_object_object_get_ex(ann, key, &v) && v &&
        json_object_is_type(v, json_type_string)) {
        double x;
        if (human_parse_duration(json_object_get_string(v), &x) == 0 && x >= 0) secs = x;
    }
    return secs;
}

static double sim_duration(json_object *pod) {
    return sim_ann_duration(pod, SIM__ANN_DURATION, SIM__DEFAULT_DURATION);
}

static int sim_exit_code(json_object *pod) {
    json_object *ann = aiq_jpath(pod, "metadata.annotations"), *v = NULL;
    if (!ann || !json_object_object_get_ex(ann, SIM__ANN_EXIT, &v) || !v) return 0;
    if (json_object_is_type(v, json_type_int)) return json_object_get_int(v);
    if (!json_object_is_type(v, json_type_string)) return 0;
    char *e;
    long x = strtol(json_object_get_string(v), &e, 10);
    if (*e || x < -255 || x > 255) return 1; /* unreadable: treat as a failure */
    return (int)x;
}

/* Builds status.containerStatuses for the pod's containers. state is
 * "running" or "terminated". */
static json_object *sim_container_statuses(json_object *pod, const char *state, const char *started,
                                           const char *finished, int exit_code) {
    json_object *out = json_object_new_array();
    json_object *cs = aiq_jpath(pod, "spec.containers");
    size_t n = cs && json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
    const char *uid = aiq_jpath_str(pod, "metadata.uid");
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        const char *name = aiq_jpath_str(c, "name"), *image = aiq_jpath_str(c, "image");
        char cid[96], iid[300];
        snprintf(cid, sizeof cid, "containerd://%08x%08x", sim_hash(uid), sim_hash(name));
        snprintf(iid, sizeof iid, "%s@sha256:%08x", image ? image : "", sim_hash(image));
        json_object *st = json_object_new_object(), *s = json_object_new_object(),
                    *inner = json_object_new_object();
        json_object_object_add(st, "name", json_object_new_string(name ? name : ""));
        json_object_object_add(st, "image", json_object_new_string(image ? image : ""));
        json_object_object_add(st, "imageID", json_object_new_string(iid));
        json_object_object_add(st, "containerID", json_object_new_string(cid));
        json_object_object_add(st, "restartCount", json_object_new_int(0));
        bool running = strcmp(state, "running") == 0;
        json_object_object_add(st, "ready", json_object_new_boolean(running));
        json_object_object_add(st, "started", json_object_new_boolean(running));
        json_object_object_add(inner, "startedAt", json_object_new_string(started));
        if (!running) {
            json_object_object_add(inner, "exitCode", json_object_new_int(exit_code));
            json_object_object_add(inner, "reason", json_object_new_string(exit_code ? "Error" : "Completed"));
            json_object_object_add(inner, "finishedAt", json_object_new_string(finished));
            json_object_object_add(inner, "containerID", json_object_new_string(cid));
        }
        json_object_object_add(s, state, inner);
        json_object_object_add(st, "state", s);
        json_object_array_add(out, st);
    }
    return out;
}

static void sim_start(apisrv *s, json_object *pod, json_object *node, double now) {
    char ts[40], start[40], ip[32], msg[400];
    json_object *p = NULL;
    if (json_object_deep_copy(pod, &p, NULL) != 0) return;
    const char *hip = sim_node_ip(node);
    const char *uid = aiq_jpath_str(pod, "metadata.uid");
    unsigned a = 0, b = 0, c = 0;
    /* pod IP: 10.<third octet of the host + 100>.<hash>.<hash> */
    const char *dot = strrchr(hip, '.');
    const char *p2 = strchr(hip, '.');
    if (p2) p2 = strchr(p2 + 1, '.');
    if (p2 && dot && p2 < dot) a = (unsigned)strtoul(p2 + 1, NULL, 10);
    b = sim_hash(uid) % 256;
    c = sim_hash(aiq_jpath_str(pod, "metadata.name")) % 253 + 2;
    snprintf(ip, sizeof ip, "10.%u.%u.%u", 100 + a % 150, b, c);
    sim__time(now, false, ts, sizeof ts);
    sim__time(now, true, start, sizeof start);
    json_object *st = sim__child(p, "status");
    json_object_object_add(st, "phase", json_object_new_string("Running"));
    json_object_object_add(st, "hostIP", json_object_new_string(hip));
    json_object_object_add(st, "podIP", json_object_new_string(ip));
    json_object *ips = json_object_new_array(), *one = json_object_new_object();
    json_object_object_add(one, "ip", json_object_new_string(ip));
    json_object_array_add(ips, one);
    json_object_object_add(st, "podIPs", ips);
    json_object_object_add(st, "startTime", json_object_new_string(start));
    json_object_object_add(st, "containerStatuses",
                           sim_container_statuses(pod, "running", ts, NULL, 0));
    sim__set_condition(p, "PodReadyToStartContainers", "True", NULL, NULL, ts);
    sim__set_condition(p, "Initialized", "True", NULL, NULL, ts);
    sim__set_condition(p, "Ready", "True", NULL, NULL, ts);
    sim__set_condition(p, "ContainersReady", "True", NULL, NULL, ts);
    sim__set_condition(p, "PodScheduled", "True", NULL, NULL, ts);
    if (apisrv_obj_update(s, "pods", p, true, NULL) != AIQ_OK) return;
    json_object *cs = aiq_jpath(pod, "spec.containers");
    for (size_t i = 0; cs && json_object_is_type(cs, json_type_array) &&
                       i < json_object_array_length(cs); i++) {
        const char *name = aiq_jpath_str(json_object_array_get_idx(cs, i), "name");
        snprintf(msg, sizeof msg, "Started container %s", name ? name : "");
        apisrv_event(s, pod, "Normal", "Started", msg, "kubelet");
    }
}

static void sim_finish(apisrv *s, json_object *pod, double now, double start) {
    char ts[40], st0[40], msg[400];
    int code = sim_exit_code(pod);
    json_object *p = NULL;
    if (json_object_deep_copy(pod, &p, NULL) != 0) return;
    sim__time(now, false, ts, sizeof ts);
    sim__time(start, false, st0, sizeof st0);
    json_object *st = sim__child(p, "status");
    json_object_object_add(st, "phase", json_object_new_string(code ? "Failed" : "Succeeded"));
    json_object_object_add(st, "containerStatuses",
                           sim_container_statuses(pod, "terminated", st0, ts, code));
    sim__set_condition(p, "PodReadyToStartContainers", "False", NULL, NULL, ts);
    sim__set_condition(p, "Ready", "False", "PodCompleted", NULL, ts);
    sim__set_condition(p, "ContainersReady", "False", "PodCompleted", NULL, ts);
    if (apisrv_obj_update(s, "pods", p, true, NULL) != AIQ_OK) return;
    if (code == 0) {
        apisrv_event(s, pod, "Normal", "Completed", "All containers exited with code 0", "kubelet");
    } else {
        snprintf(msg, sizeof msg, "Container exited with code %d", code);
        apisrv_event(s, pod, "Warning", "Failed", msg, "kubelet");
    }
}

/* A kubelet's part in graceful deletion (as the real cluster's kubelet
 * stand-in plays it): the containers get SIGTERM and exit after
 * sim.aiq.dev/stop-duration (scaled by the time scale), or are killed at
 * the end of the grace period; the pod then gets its terminal status
 * (Failed, exit 143, or 137 when killed) and is deleted with grace 0 and
 * a uid precondition, unless finalizers keep it. */
static void sim_terminate(apisrv *s, json_object *pod, double now, double time_scale) {
    const char *ns = aiq_jpath_str(pod, "metadata.namespace");
    const char *name = aiq_jpath_str(pod, "metadata.name");
    json_object *fin = aiq_jpath(pod, "metadata.finalizers");
    json_object *g = aiq_jpath(pod, "metadata.deletionGracePeriodSeconds");
    struct apisrv_delete_opts d = {.has_grace = true, .grace = 0,
                                   .uid = aiq_jpath_str(pod, "metadata.uid")};
    if (!sim__pod_terminal(pod)) {
        double grace = g ? (double)json_object_get_int64(g) : 30;
        double stop = sim_ann_duration(pod, SIM__ANN_STOP, 0) / time_scale;
        double began = rfc3339_parse(aiq_jpath_str(pod, "metadata.deletionTimestamp")) - grace;
        bool killed = false;
        char ts[40], st0[40], msg[400];
        json_object *p = NULL, *cs = aiq_jpath(pod, "spec.containers");
        if (stop > grace) {
            stop = grace;
            killed = true;
        }
        if (stop - (now - began) > 0) {
            for (size_t i = 0; cs && json_object_is_type(cs, json_type_array) &&
                               i < json_object_array_length(cs); i++) {
                const char *cn = aiq_jpath_str(json_object_array_get_idx(cs, i), "name");
                snprintf(msg, sizeof msg, "Stopping container %s", cn ? cn : "");
                apisrv_event_once(s, pod, "Normal", "Killing", msg, "kubelet");
            }
            return;
        }
        if (json_object_deep_copy(pod, &p, NULL) != 0) return;
        sim__time(now, false, ts, sizeof ts);
        double start = rfc3339_parse(aiq_jpath_str(pod, "status.startTime"));
        sim__time(start < 0 ? now : start, false, st0, sizeof st0);
        const char *phase = aiq_jpath_str(pod, "status.phase");
        json_object *st = sim__child(p, "status");
        if (phase && strcmp(phase, "Running") == 0)
            json_object_object_add(st, "containerStatuses",
                                   sim_container_statuses(pod, "terminated", st0, ts, killed ? 137 : 143));
        json_object_object_add(st, "phase", json_object_new_string("Failed"));
        sim__set_condition(p, "Ready", "False", "PodCompleted", NULL, ts);
        sim__set_condition(p, "ContainersReady", "False", "PodCompleted", NULL, ts);
        sim__set_condition(p, "PodReadyToStartContainers", "False", NULL, NULL, ts);
        if (apisrv_obj_update(s, "pods", p, true, NULL) != AIQ_OK) return;
    }
    if (fin && json_object_is_type(fin, json_type_array) && json_object_array_length(fin) > 0) return;
    apisrv_obj_delete_opts(s, "pods", ns, name, &d, NULL);   /* gone or recreated: nothing to do */
}

/* See sim_int.h. */
void sim__kubelet(apisrv *s, double now, double time_scale, json_object *pods,
                  json_object *nodes) {
    size_t np = json_object_array_length(pods);
    for (size_t i = 0; i < np && !sim__stop_requested(s); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *node = aiq_jpath_str(pod, "spec.nodeName");
        if (!aiq_jpath_str(pod, "metadata.name") || !node || !*node) continue;
        json_object *n = sim_find_node(nodes, node);
        if (!n) continue; /* bound to a node we do not simulate */
        if (aiq_jpath(pod, "metadata.deletionTimestamp")) {
            sim_terminate(s, pod, now, time_scale);
            continue;
        }
        if (sim__pod_terminal(pod)) continue;
        const char *phase = aiq_jpath_str(pod, "status.phase");
        if (!phase || strcmp(phase, "Pending") == 0) {
            sim_start(s, pod, n, now);
        } else if (strcmp(phase, "Running") == 0) {
            double start = rfc3339_parse(aiq_jpath_str(pod, "status.startTime"));
            if (start < 0) start = now;
            if ((now - start) * time_scale >= sim_duration(pod)) sim_finish(s, pod, now, start);
        }
    }
}
