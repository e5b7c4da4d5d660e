/* sim_sched.c -- the simulated kube-scheduler: binds each schedulable pod
 * (unbound, ungated, not being deleted, for the default scheduler, oldest
 * first; through the pods/binding subresource's rules) to the first node,
 * by name, that passes the filters kube-scheduler would run (in its
 * order, each node rejected by the first failing one): NodeUnschedulable,
 * TaintToleration (NoSchedule/NoExecute taints), NodeAffinity
 * (spec.nodeSelector and required node affinity), and
 * NodeResourcesFit (cpu, memory, nvidia.com/gpu, pod count; never
 * overcommitted). A pod that fits nowhere gets PodScheduled=False /
 * Unschedulable with kube-scheduler's "0/N nodes are available: ..."
 * message, and a FailedScheduling event when that message changes. */
#include "test/apiserver/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define SIM_MAX_NODES 4096

struct sim_node {
    json_object *obj;    /* borrowed from the node list */
    const char *name;
    struct sim__res free;
};

/* ---- node affinity --------------------------------------------------------- */

static bool sim_in_values(json_object *values, const char *v) {
    size_t n = values && json_object_is_type(values, json_type_array)
                   ? json_object_array_length(values) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *x = json_object_array_get_idx(values, i);
        if (x && json_object_is_type(x, json_type_string) && strcmp(json_object_get_string(x), v) == 0)
            return true;
    }
    return false;
}

/* Parses the one integer of a Gt/Lt requirement's values. */
static bool sim_int_of(const char *s, long long *out) {
    char *e;
    if (!s || !*s) return false;
    *out = strtoll(s, &e, 10);
    return *e == '\0';
}

/* One NodeSelectorRequirement against a label set (or, for matchFields,
 * a map holding only metadata.name). */
static bool sim_req_match(json_object *req, json_object *labels) {
    const char *key = aiq_jpath_str(req, "key"), *op = aiq_jpath_str(req, "operator");
    json_object *values = aiq_jpath(req, "values");
    if (!key || !op) return false;
    json_object *lv = NULL;
    bool has = labels && json_object_object_get_ex(labels, key, &lv) && lv &&
               json_object_is_type(lv, json_type_string);
    const char *val = has ? json_object_get_string(lv) : NULL;
    if (strcmp(op, "In") == 0) return has && sim_in_values(values, val);
    if (strcmp(op, "NotIn") == 0) return !has || !sim_in_values(values, val);
    if (strcmp(op, "Exists") == 0) return has;
    if (strcmp(op, "DoesNotExist") == 0) return !has;
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        long long a, b;
        json_object *v0 = values && json_object_is_type(values, json_type_array) &&
                                  json_object_array_length(values) == 1
                              ? json_object_array_get_idx(values, 0) : NULL;
        if (!has || !v0 || !sim_int_of(val, &a) || !sim_int_of(json_object_get_string(v0), &b))
            return false;
        return op[0] == 'G' ? a > b : a < b;
    }
    return false;
}

static bool sim_reqs_match(json_object *reqs, json_object *labels) {
    size_t n = reqs && json_object_is_type(reqs, json_type_array) ? json_object_array_length(reqs) : 0;
    for (size_t i = 0; i < n; i++)
        if (!sim_req_match(json_object_array_get_idx(reqs, i), labels)) return false;
    return true;
}

/* spec.nodeSelector and requiredDuringScheduling node affinity. */
static bool sim_affinity_ok(json_object *pod, json_object *node) {
    json_object *labels = aiq_jpath(node, "metadata.labels");
    json_object *sel = aiq_jpath(pod, "spec.nodeSelector");
    if (sel && json_object_is_type(sel, json_type_object)) {
        json_object_object_foreach(sel, k, v) {
            json_object *lv = NULL;
            if (!labels || !json_object_object_get_ex(labels, k, &lv) || !lv || !v ||
                strcmp(json_object_get_string(lv), json_object_get_string(v)) != 0)
                return false;
        }
    }
    json_object *terms = aiq_jpath(pod, "spec.affinity.nodeAffinity."
                                       "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    if (!terms) return true;
    if (!json_object_is_type(terms, json_type_array)) return false;
    json_object *fields = json_object_new_object();
    const char *name = aiq_jpath_str(node, "metadata.name");
    json_object_object_add(fields, "metadata.name", json_object_new_string(name ? name : ""));
    bool ok = false;
    for (size_t i = 0; i < json_object_array_length(terms) && !ok; i++) {
        json_object *t = json_object_array_get_idx(terms, i);
        json_object *me = aiq_jpath(t, "matchExpressions"), *mf = aiq_jpath(t, "matchFields");
        size_t ne = me && json_object_is_type(me, json_type_array) ? json_object_array_length(me) : 0;
        size_t nf = mf && json_object_is_type(mf, json_type_array) ? json_object_array_length(mf) : 0;
        if (ne + nf == 0) continue; /* an empty term matches no node */
        ok = sim_reqs_match(me, labels) && sim_reqs_match(mf, fields);
    }
    json_object_put(fields);
    return ok;
}

/* ---- taints and tolerations ------------------------------------------------ */

/* Does toleration tol tolerate taint (key, value, effect)? (Kubernetes'
 * Toleration.ToleratesTaint: empty key with Exists matches every taint;
 * empty effect matches every effect; operator Equal by default.) */
static bool sim_tolerates(json_object *tol, const char *key, const char *value, const char *effect) {
    const char *tk = aiq_jpath_str(tol, "key"), *op = aiq_jpath_str(tol, "operator");
    const char *tv = aiq_jpath_str(tol, "value"), *te = aiq_jpath_str(tol, "effect");
    if (te && *te && strcmp(te, effect) != 0) return false;
    if (tk && *tk && strcmp(tk, key) != 0) return false;
    if (op && strcmp(op, "Exists") == 0) return true;
    if (!tk || !*tk) return false; /* an empty key needs Exists */
    return strcmp(tv ? tv : "", value) == 0;
}

static bool sim_pod_tolerates(json_object *pod, const char *key, const char *value,
                              const char *effect) {
    json_object *tols = aiq_jpath(pod, "spec.tolerations");
    size_t n = tols && json_object_is_type(tols, json_type_array) ? json_object_array_length(tols) : 0;
    for (size_t i = 0; i < n; i++)
        if (sim_tolerates(json_object_array_get_idx(tols, i), key, value, effect)) return true;
    return false;
}

/* The first NoSchedule/NoExecute taint of node the pod does not tolerate,
 * as kube-scheduler words it ("{key: value}"), into buf; false if none. */
static bool sim_untolerated(json_object *pod, json_object *node, char *buf, size_t cap) {
    json_object *taints = aiq_jpath(node, "spec.taints");
    size_t n = taints && json_object_is_type(taints, json_type_array) ? json_object_array_length(taints) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        const char *k = aiq_jpath_str(t, "key"), *v = aiq_jpath_str(t, "value");
        const char *e = aiq_jpath_str(t, "effect");
        if (!k || !e || (strcmp(e, "NoSchedule") != 0 && strcmp(e, "NoExecute") != 0)) continue;
        if (sim_pod_tolerates(pod, k, v ? v : "", e)) continue;
        snprintf(buf, cap, "node(s) had untolerated taint {%s: %s}", k, v ? v : "");
        return true;
    }
    return false;
}

/* ---- reasons histogram ------------------------------------------------------ */

#define SIM_MAX_REASONS 16

struct sim_reasons {
    char text[SIM_MAX_REASONS][160];
    int count[SIM_MAX_REASONS];
    int n;
};

static void sim_reason(struct sim_reasons *r, const char *text) {
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->text[i], text) == 0) {
            r->count[i]++;
            return;
        }
    if (r->n < SIM_MAX_REASONS) {
        snprintf(r->text[r->n], sizeof r->text[r->n], "%s", text);
        r->count[r->n++] = 1;
    }
}

static int sim_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s)
 * didn't match Pod's node affinity/selector." -- entries "N reason"
 * sorted as strings, as kube-scheduler's FitError does. */
static void sim_fit_message(const struct sim_reasons *r, int nnodes, char *buf, size_t cap) {
    char items[SIM_MAX_REASONS][176];
    const char *ptrs[SIM_MAX_REASONS] = {NULL};
    for (int i = 0; i < r->n; i++) {
        snprintf(items[i], sizeof items[i], "%d %s", r->count[i], r->text[i]);
        ptrs[i] = items[i];
    }
    qsort(ptrs, (size_t)r->n, sizeof ptrs[0], sim_cmp_str);
    if (nnodes == 0) {
        snprintf(buf, cap, "no nodes available to schedule pods");
        return;
    }
    size_t j = (size_t)snprintf(buf, cap, "0/%d nodes are available", nnodes);
    for (int i = 0; i < r->n && j < cap; i++)
        j += (size_t)snprintf(buf + j, cap - j, "%s%s", i ? ", " : ": ", ptrs[i]);
    if (j < cap) snprintf(buf + j, cap - j, ".");
}

/* ---- the pass ----------------------------------------------------------------- */

struct sim_pending {
    json_object *pod;
    const char *created;
    const char *ns, *name;
};

static int sim_cmp_pending(const void *a, const void *b) {
    const struct sim_pending *x = a, *y = b;
    int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");
    if (c) return c;
    c = strcmp(x->ns ? x->ns : "", y->ns ? y->ns : "");
    return c ? c : strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* Binds pod to node: spec.nodeName (main resource), then PodScheduled
 * (status). Returns true when the binding was stored. */
/* Binds pod to node through the pods/binding rules (which also set
 * PodScheduled=True), as kube-scheduler posts a Binding; false when the
 * pod changed under us (bound, gated again or being deleted). */
static bool sim_bind(apisrv *s, json_object *pod, const char *node) {
    char msg[600];
    const char *ns = aiq_jpath_str(pod, "metadata.namespace");
    const char *name = aiq_jpath_str(pod, "metadata.name");
    if (!name || apisrv_obj_bind(s, ns, name, node, NULL) != AIQ_OK) return false;
    snprintf(msg, sizeof msg, "Successfully assigned %s/%s to %s", ns ? ns : "default",
             name ? name : "", node);
    apisrv_event(s, pod, "Normal", "Scheduled", msg, "default-scheduler");
    return true;
}

/* Records why pod cannot be scheduled, once per distinct message. */
static void sim_unschedulable(apisrv *s, json_object *pod, const char *msg, double now) {
    json_object *c = sim__condition(pod, "PodScheduled");
    const char *om = c ? aiq_jpath_str(c, "message") : NULL;
    const char *orr = c ? aiq_jpath_str(c, "reason") : NULL;
    if (om && orr && strcmp(om, msg) == 0 && strcmp(orr, "Unschedulable") == 0) return;
    char ts[40];
    json_object *u = NULL;
    if (json_object_deep_copy(pod, &u, NULL) != 0) return;
    sim__time(now, false, ts, sizeof ts);
    sim__set_condition(u, "PodScheduled", "False", "Unschedulable", msg, ts);
    if (apisrv_obj_update(s, "pods", u, true, NULL) == AIQ_OK)
        apisrv_event(s, pod, "Warning", "FailedScheduling", msg, "default-scheduler");
}

/* See sim_int.h. */
int sim__schedule(apisrv *s, double now, json_object *pods, json_object *nodes) {
    int bound = 0;
    size_t nn = json_object_array_length(nodes), np = json_object_array_length(pods);
    if (nn > SIM_MAX_NODES) nn = SIM_MAX_NODES;
    struct sim_node *nv = calloc(nn ? nn : 1, sizeof *nv);
    struct sim_pending *pend = calloc(np ? np : 1, sizeof *pend);
    size_t npend = 0;
    if (!nv || !pend) goto out_free;
    for (size_t i = 0; i < nn; i++) {
        nv[i].obj = json_object_array_get_idx(nodes, i);
        nv[i].name = aiq_jpath_str(nv[i].obj, "metadata.name");
        sim__node_allocatable(nv[i].obj, &nv[i].free);
    }
    /* Subtract what bound, non-terminated pods use. */
    for (size_t i = 0; i < np; i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        const char *on = aiq_jpath_str(p, "spec.nodeName");
        if (on && *on) {
            if (sim__pod_terminal(p)) continue;
            struct sim__res r;
            sim__pod_requests(p, &r);
            for (size_t k = 0; k < nn; k++)
                if (nv[k].name && strcmp(nv[k].name, on) == 0) {
                    nv[k].free.cpu_m -= r.cpu_m;
                    nv[k].free.mem_b -= r.mem_b;
                    nv[k].free.gpu -= r.gpu;
                    nv[k].free.pods -= r.pods;
                }
            continue;
        }
        if (sim__pod_gated(p) || aiq_jpath(p, "metadata.deletionTimestamp") || sim__pod_terminal(p))
            continue;
        /* pods for another scheduler are not ours to place */
        const char *sched = aiq_jpath_str(p, "spec.schedulerName");
        if (sched && sched[0] && strcmp(sched, "default-scheduler") != 0) continue;
        pend[npend].pod = p;
        pend[npend].created = aiq_jpath_str(p, "metadata.creationTimestamp");
        pend[npend].ns = aiq_jpath_str(p, "metadata.namespace");
        pend[npend].name = aiq_jpath_str(p, "metadata.name");
        npend++;
    }
    qsort(pend, npend, sizeof *pend, sim_cmp_pending);

    for (size_t i = 0; i < npend && !sim__stop_requested(s); i++) {
        json_object *p = pend[i].pod;
        struct sim__res r;
        struct sim_reasons why = {.n = 0};
        sim__pod_requests(p, &r);
        long chosen = -1;
        for (size_t k = 0; k < nn && chosen < 0; k++) {
            json_object *unsched = aiq_jpath(nv[k].obj, "spec.unschedulable");
            char taint[160];
            if (unsched && json_object_get_boolean(unsched) &&
                !sim_pod_tolerates(p, "node.kubernetes.io/unschedulable", "", "NoSchedule")) {
                sim_reason(&why, "node(s) were unschedulable");
                continue;
            }
            if (sim_untolerated(p, nv[k].obj, taint, sizeof taint)) {
                sim_reason(&why, taint);
                continue;
            }
            if (!sim_affinity_ok(p, nv[k].obj)) {
                sim_reason(&why, "node(s) didn't match Pod's node affinity/selector");
                continue;
            }
            bool fit = true;
            if (r.pods > nv[k].free.pods) { sim_reason(&why, "Too many pods"); fit = false; }
            if (r.cpu_m > nv[k].free.cpu_m) { sim_reason(&why, "Insufficient cpu"); fit = false; }
            if (r.mem_b > nv[k].free.mem_b) { sim_reason(&why, "Insufficient memory"); fit = false; }
            if (r.gpu > 0 && r.gpu > nv[k].free.gpu) {
                sim_reason(&why, "Insufficient " SIM__GPU);
                fit = false;
            }
            if (fit) chosen = (long)k;
        }
        if (chosen >= 0) {
            if (sim_bind(s, p, nv[chosen].name)) {
                bound++;
                nv[chosen].free.cpu_m -= r.cpu_m;
                nv[chosen].free.mem_b -= r.mem_b;
                nv[chosen].free.gpu -= r.gpu;
                nv[chosen].free.pods -= r.pods;
            }
        } else {
            char msg[1024];
            sim_fit_message(&why, (int)nn, msg, sizeof msg);
            sim_unschedulable(s, p, msg, now);
        }
    }
out_free:
    free(nv);
    free(pend);
    return bound;
}
