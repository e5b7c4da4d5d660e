/* pod_rules.c -- what a real API server does to a Pod on its way in:
 * defaulting (the v1 SetDefaults_* functions the local server has a use
 * for, requests from limits, quantities rounded to millis and printed in
 * canonical form, and the not-ready/unreachable tolerations of the
 * DefaultTolerationSeconds admission plugin), the QoS class, the checks
 * of ValidatePodCreate a user or the operator can hit (container names
 * and images, resources and extended resources, restart/DNS/pull
 * policies, node selector and affinity, tolerations, scheduling gates),
 * and ValidatePodUpdate of Kubernetes 1.34 (the spec is immutable but for
 * images, activeDeadlineSeconds, a negative grace period becoming 1,
 * added tolerations and removed scheduling gates; while the old pod is
 * gated, node selector additions and appended node affinity
 * requirements). Causes carry the real reasons, field paths and words.
 *
 * Spec comparison follows apimachinery's semantic equality closely
 * enough for JSON: null, "", 0, false, [] and {} count as absent (Go
 * compares zero values of plain fields and empty slices and maps so; it
 * would tell an empty struct pointer from nil, which we cannot). */
#include "test/apiserver/apisrv_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "test/apiserver/quantity.h"

#define PR_GPU "nvidia.com/gpu"
#define PR_MAX_INT32 2147483647LL
#define PR_UPDATABLE "pod updates may not change fields other than " \
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," \
    "`spec.tolerations` (only additions to existing tolerations)," \
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

/* ---- small JSON helpers ---------------------------------------------------- */

static json_object *pr_arr(json_object *o, const char *k) {
    json_object *v = aiq_jget(o, k);
    return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

static size_t pr_len(json_object *a) {
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static bool pr_int(json_object *o, const char *k, long long *out) {
    json_object *v = aiq_jget(o, k);
    if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

static void pr_set_str(json_object *o, const char *k, const char *v) {
    json_object_object_add(o, k, json_object_new_string(v));
}

static json_object *pr_copy(json_object *o) {
    json_object *c = NULL;
    if (o && json_object_deep_copy(o, &c, NULL) != 0) return NULL;
    return c;
}

/* Go's %q of a Go value as field.Error prints it into buf. */
static void pr_quote(const char *s, char *buf, size_t cap) { apisrv__go_quote(s ? s : "", buf, cap); }

/* ---- semantic equality ----------------------------------------------------- */

static bool pr_empty(json_object *v) {
    if (!v) return true;
    switch (json_object_get_type(v)) {
    case json_type_null: return true;
    case json_type_string: return json_object_get_string_len(v) == 0;
    case json_type_array: return json_object_array_length(v) == 0;
    case json_type_boolean: return !json_object_get_boolean(v);
    case json_type_int: return json_object_get_int64(v) == 0;
    case json_type_double: return json_object_get_double(v) == 0;
    case json_type_object: {
        json_object_object_foreach(v, k, c) {
            (void)k;
            if (!pr_empty(c)) return false;
        }
        return true;
    }
    }
    return false;
}

/* See the file comment. */
static bool pr_sem_equal(json_object *a, json_object *b) {
    if (pr_empty(a) && pr_empty(b)) return true;
    if (!a || !b) return false;
    bool an = json_object_is_type(a, json_type_int) || json_object_is_type(a, json_type_double);
    bool bn = json_object_is_type(b, json_type_int) || json_object_is_type(b, json_type_double);
    if (an && bn) return json_object_get_double(a) == json_object_get_double(b);
    if (json_object_get_type(a) != json_object_get_type(b)) return false;
    if (json_object_is_type(a, json_type_object)) {
        json_object_object_foreach(a, ka, va) {
            if (!pr_sem_equal(va, aiq_jget(b, ka))) return false;
        }
        json_object_object_foreach(b, kb, vb) {
            if (!aiq_jget(a, kb) && !pr_empty(vb)) return false;
        }
        return true;
    }
    if (json_object_is_type(a, json_type_array)) {
        size_t n = json_object_array_length(a);
        if (n != json_object_array_length(b)) return false;
        for (size_t i = 0; i < n; i++)
            if (!pr_sem_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i)))
                return false;
        return true;
    }
    return json_object_equal(a, b);
}

/* ---- defaulting ---------------------------------------------------------------- */

/* The pull policy SetDefaults_Container picks: Always for ":latest" or no
 * tag at all, IfNotPresent for any other tag or a digest. */
static const char *pr_pull_policy(const char *image) {
    const char *slash = strrchr(image, '/'), *last = slash ? slash + 1 : image;
    const char *colon;
    if (strchr(last, '@')) return "IfNotPresent";
    colon = strrchr(last, ':');
    if (!colon) return "Always";
    return strcmp(colon + 1, "latest") ? "IfNotPresent" : "Always";
}

/* Canonicalizes one ResourceList in place (values rounded up to millis
 * and printed as Quantity.String()). -1 with a 400 in st on a value the
 * decoder refuses. */
static int pr_resource_list(json_object *list, struct apisrv__st *st) {
    if (!list || !json_object_is_type(list, json_type_object)) return 0;
    json_object_object_foreach(list, k, v) {
        struct qty q;
        const char *msg = NULL, *text;
        char buf[64];
        if (!v) continue;
        text = json_object_get_string(v);  /* numbers as their JSON text */
        if (qty_parse(text, &q, &msg))
            return apisrv__st_set(st, 400, "BadRequest",
                                  "Pod in version \"v1\" cannot be handled as a Pod: %s", msg);
        qty_round_up(&q, -3);
        json_object_object_add(list, k, json_object_new_string(qty_string(&q, buf, sizeof buf)));
    }
    return 0;
}

static int pr_default_containers(json_object *ctrs, struct apisrv__st *st) {
    for (size_t i = 0; i < pr_len(ctrs); i++) {
        json_object *c = json_object_array_get_idx(ctrs, i), *res, *lim, *req;
        if (!c || !json_object_is_type(c, json_type_object)) continue;
        if (!aiq_jstr(c, "imagePullPolicy") || !aiq_jstr(c, "imagePullPolicy")[0])
            pr_set_str(c, "imagePullPolicy", pr_pull_policy(aiq_jstr(c, "image") ? aiq_jstr(c, "image") : ""));
        if (!aiq_jstr(c, "terminationMessagePath") || !aiq_jstr(c, "terminationMessagePath")[0])
            pr_set_str(c, "terminationMessagePath", "/dev/termination-log");
        if (!aiq_jstr(c, "terminationMessagePolicy") || !aiq_jstr(c, "terminationMessagePolicy")[0])
            pr_set_str(c, "terminationMessagePolicy", "File");
        res = aiq_jget(c, "resources");
        if (!res || !json_object_is_type(res, json_type_object)) {
            res = json_object_new_object();
            json_object_object_add(c, "resources", res);
        }
        lim = aiq_jget(res, "limits");
        req = aiq_jget(res, "requests");
        if (pr_resource_list(lim, st) || pr_resource_list(req, st)) return -1;
        /* SetDefaults_Pod: a limit without a request is also the request */
        if (lim && json_object_is_type(lim, json_type_object)) {
            if (!req || !json_object_is_type(req, json_type_object)) {
                req = json_object_new_object();
                json_object_object_add(res, "requests", req);
            }
            json_object_object_foreach(lim, k, v) {
                if (!aiq_jget(req, k)) json_object_object_add(req, k, json_object_get(v));
            }
        }
    }
    return 0;
}

/* The DefaultTolerationSeconds admission plugin's two tolerations, each
 * added unless the pod tolerates that NoExecute taint already. */
static void pr_default_tolerations(json_object *spec) {
    static const char *const keys[2] = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"};
    json_object *tols = pr_arr(spec, "tolerations");
    for (int t = 0; t < 2; t++) {
        bool have = false;
        for (size_t i = 0; i < pr_len(tols) && !have; i++) {
            json_object *x = json_object_array_get_idx(tols, i);
            const char *k = aiq_jstr(x, "key"), *e = aiq_jstr(x, "effect");
            have = (!k || !k[0] || !strcmp(k, keys[t])) && (!e || !e[0] || !strcmp(e, "NoExecute"));
        }
        if (have) continue;
        if (!tols) {
            tols = json_object_new_array();
            json_object_object_add(spec, "tolerations", tols);
        }
        json_object *n = json_object_new_object();
        pr_set_str(n, "key", keys[t]);
        pr_set_str(n, "operator", "Exists");
        pr_set_str(n, "effect", "NoExecute");
        json_object_object_add(n, "tolerationSeconds", json_object_new_int64(300));
        json_object_array_add(tols, n);
    }
}

/* See apisrv_int.h. */
int apisrv__pod_default(json_object *pod, struct apisrv__st *st) {
    json_object *spec = aiq_jget(pod, "spec");
    if (!spec || !json_object_is_type(spec, json_type_object)) {
        spec = json_object_new_object();
        json_object_object_add(pod, "spec", spec);
    }
    if (pr_default_containers(pr_arr(spec, "containers"), st) ||
        pr_default_containers(pr_arr(spec, "initContainers"), st))
        return -1;
    if (!aiq_jstr(spec, "dnsPolicy") || !aiq_jstr(spec, "dnsPolicy")[0]) pr_set_str(spec, "dnsPolicy", "ClusterFirst");
    if (!aiq_jstr(spec, "restartPolicy") || !aiq_jstr(spec, "restartPolicy")[0])
        pr_set_str(spec, "restartPolicy", "Always");
    if (!aiq_jget(spec, "securityContext")) json_object_object_add(spec, "securityContext", json_object_new_object());
    if (!aiq_jget(spec, "terminationGracePeriodSeconds"))
        json_object_object_add(spec, "terminationGracePeriodSeconds", json_object_new_int64(30));
    if (!aiq_jstr(spec, "schedulerName") || !aiq_jstr(spec, "schedulerName")[0])
        pr_set_str(spec, "schedulerName", "default-scheduler");
    if (!aiq_jget(spec, "enableServiceLinks"))
        json_object_object_add(spec, "enableServiceLinks", json_object_new_boolean(1));
    pr_default_tolerations(spec);
    return 0;
}

/* ---- QoS ---------------------------------------------------------------------- */

/* Sums cpu or memory of one list into *sum (nanos); true when present and
 * non-zero. */
static bool pr_qty_of(json_object *list, const char *name, __int128 *sum) {
    struct qty q;
    const char *msg;
    json_object *v = aiq_jget(list, name);
    if (!v || qty_parse(json_object_get_string(v), &q, &msg) || q.nanos == 0) return false;
    *sum += q.nanos;
    return true;
}

/* See apisrv_int.h: GetPodQOS for cpu and memory. */
const char *apisrv__pod_qos(json_object *pod) {
    static const char *const names[2] = {"cpu", "memory"};
    json_object *spec = aiq_jget(pod, "spec");
    __int128 req[2] = {0, 0}, lim[2] = {0, 0};
    bool have_req[2] = {false, false}, have_lim[2] = {false, false}, guaranteed = true;
    const char *lists[2] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        json_object *ctrs = pr_arr(spec, lists[l]);
        for (size_t i = 0; i < pr_len(ctrs); i++) {
            json_object *res = aiq_jget(json_object_array_get_idx(ctrs, i), "resources");
            json_object *rq = aiq_jget(res, "requests"), *lm = aiq_jget(res, "limits");
            int found = 0;
            for (int r = 0; r < 2; r++) {
                if (pr_qty_of(rq, names[r], &req[r])) have_req[r] = true;
                if (pr_qty_of(lm, names[r], &lim[r])) {
                    have_lim[r] = true;
                    found++;
                }
            }
            if (found < 2) guaranteed = false;
        }
    }
    if (!have_req[0] && !have_req[1] && !have_lim[0] && !have_lim[1]) return "BestEffort";
    for (int r = 0; r < 2 && guaranteed; r++)
        if (have_req[r] != have_lim[r] || (have_req[r] && req[r] != lim[r])) guaranteed = false;
    return guaranteed ? "Guaranteed" : "Burstable";
}

/* ---- create validation ------------------------------------------------------------- */

static void pr_not_supported(struct apisrv__st *st, const char *field, const char *v,
                             const char *supported) {
    char q[600];
    pr_quote(v, q, sizeof q);
    apisrv__st_cause(st, "FieldValueNotSupported", field, "Unsupported value: %s: supported values: %s",
                     q, supported);
}

static bool pr_in(const char *v, const char *const *set) {
    for (; *set; set++)
        if (!strcmp(v, *set)) return true;
    return false;
}

/* IsNativeResource: no domain, or a kubernetes.io one. */
static bool pr_native(const char *name) {
    const char *slash = strchr(name, '/');
    return !slash || strstr(name, "kubernetes.io/") != NULL;
}

static bool pr_hugepages(const char *name) { return !strncmp(name, "hugepages-", 10); }

/* validateContainerResourceName */
static void pr_resource_name(const char *name, const char *field, struct apisrv__st *st) {
    static const char *const standard[] = {
        "cpu", "memory", "ephemeral-storage", "pods", "services", "replicationcontrollers",
        "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "storage",
        "requests.cpu", "requests.memory", "requests.ephemeral-storage", "requests.storage",
        "limits.cpu", "limits.memory", "limits.ephemeral-storage", "services.nodeports",
        "services.loadbalancers", NULL};
    static const char *const container[] = {"cpu", "memory", "ephemeral-storage", NULL};
    struct apisrv__msgs m = {0};
    char q[300];
    apisrv__is_qualified_name(name, &m);
    apisrv__cause_invalid_msgs(st, field, name, &m);
    pr_quote(name, q, sizeof q);
    if (!strchr(name, '/')) {
        if (m.n == 0 && !pr_in(name, standard) && !pr_hugepages(name))
            apisrv__st_cause(st, "FieldValueInvalid", field,
                             "Invalid value: %s: must be a standard resource type or fully qualified", q);
        if (!pr_in(name, container) && !pr_hugepages(name))
            apisrv__st_cause(st, "FieldValueInvalid", field,
                             "Invalid value: %s: must be a standard resource for containers", q);
    } else if (!pr_native(name)) {
        char ext[300];
        struct apisrv__msgs em = {0};
        snprintf(ext, sizeof ext, "requests.%s", name);
        apisrv__is_qualified_name(ext, &em);
        if (!strncmp(name, "requests.", 9) || em.n)
            apisrv__st_cause(st, "FieldValueInvalid", field,
                             "Invalid value: %s: doesn't follow extended resource name standard", q);
    }
}

/* ValidateResourceQuantityValue: non-negative, whole for integer resources. */
static void pr_quantity_value(const char *name, const char *text, const char *field,
                              struct apisrv__st *st) {
    struct qty q;
    const char *msg;
    char qt[100];
    if (qty_parse(text, &q, &msg)) return;   /* refused when defaulting */
    pr_quote(text, qt, sizeof qt);
    if (q.nanos < 0)
        apisrv__st_cause(st, "FieldValueInvalid", field, "Invalid value: %s: must be greater than or equal to 0", qt);
    if (!pr_native(name) && !qty_is_integer(&q))
        apisrv__st_cause(st, "FieldValueInvalid", field, "Invalid value: %s: must be an integer", qt);
}

/* validateResourceRequirements for a container at path. */
static void pr_resources(json_object *res, const char *path, struct apisrv__st *st) {
    char f[1024], lp[160], rp[160];
    json_object *lim = aiq_jget(res, "limits"), *req = aiq_jget(res, "requests");
    snprintf(lp, sizeof lp, "%.140s.limits", path);
    snprintf(rp, sizeof rp, "%.140s.requests", path);
    if (lim && json_object_is_type(lim, json_type_object)) {
        json_object_object_foreach(lim, k, v) {
            snprintf(f, sizeof f, "%s[%.800s]", lp, k);
            pr_resource_name(k, f, st);
            if (v) pr_quantity_value(k, json_object_get_string(v), f, st);
        }
    }
    if (!req || !json_object_is_type(req, json_type_object)) return;
    json_object_object_foreach(req, k, v) {
        json_object *l = aiq_jget(lim, k);
        bool overcommit = pr_native(k) && !pr_hugepages(k);
        snprintf(f, sizeof f, "%s[%.800s]", rp, k);
        pr_resource_name(k, f, st);
        if (!v) continue;
        pr_quantity_value(k, json_object_get_string(v), f, st);
        if (l) {
            struct qty a, b;
            const char *msg;
            char qa[100];
            if (qty_parse(json_object_get_string(v), &a, &msg) ||
                qty_parse(json_object_get_string(l), &b, &msg))
                continue;
            pr_quote(json_object_get_string(v), qa, sizeof qa);
            if (qty_cmp(&a, &b) != 0 && !overcommit)
                apisrv__st_cause(st, "FieldValueInvalid", rp, "Invalid value: %s: must be equal to %s limit of %s",
                                 qa, k, json_object_get_string(l));
            else if (qty_cmp(&a, &b) > 0)
                apisrv__st_cause(st, "FieldValueInvalid", rp,
                                 "Invalid value: %s: must be less than or equal to %s limit of %s",
                                 qa, k, json_object_get_string(l));
        } else if (!overcommit) {
            apisrv__st_cause(st, "FieldValueRequired", lp,
                             "Required value: Limit must be set for non overcommitable resources");
        }
    }
}

/* validateContainerCommon plus the pod-only whitespace rule. */
static void pr_container(json_object *c, const char *path, struct apisrv__st *st) {
    char f[512], q[600];
    const char *name = aiq_jstr(c, "name"), *image = aiq_jstr(c, "image");
    const char *tmp = aiq_jstr(c, "terminationMessagePolicy"), *pull = aiq_jstr(c, "imagePullPolicy");
    snprintf(f, sizeof f, "%s.name", path);
    if (!name || !name[0]) {
        apisrv__st_cause(st, "FieldValueRequired", f, "Required value");
    } else {
        struct apisrv__msgs m = {0};
        apisrv__is_dns1123_label(name, &m);
        apisrv__cause_invalid_msgs(st, f, name, &m);
    }
    snprintf(f, sizeof f, "%s.image", path);
    if (!image || !image[0]) apisrv__st_cause(st, "FieldValueRequired", f, "Required value");
    snprintf(f, sizeof f, "%s.terminationMessagePolicy", path);
    if (!tmp || !tmp[0]) apisrv__st_cause(st, "FieldValueRequired", f, "Required value");
    else if (strcmp(tmp, "File") && strcmp(tmp, "FallbackToLogsOnError"))
        pr_not_supported(st, f, tmp, "\"File\", \"FallbackToLogsOnError\"");
    snprintf(f, sizeof f, "%s.imagePullPolicy", path);
    if (!pull || !pull[0]) apisrv__st_cause(st, "FieldValueRequired", f, "Required value");
    else if (strcmp(pull, "Always") && strcmp(pull, "IfNotPresent") && strcmp(pull, "Never"))
        pr_not_supported(st, f, pull, "\"Always\", \"IfNotPresent\", \"Never\"");
    snprintf(f, sizeof f, "%s.resources", path);
    pr_resources(aiq_jget(c, "resources"), f, st);
    if (image && image[0]) {
        size_t n = strlen(image);
        if (image[0] == ' ' || image[0] == '\t' || image[0] == '\n' || image[0] == '\r' ||
            image[n - 1] == ' ' || image[n - 1] == '\t' || image[n - 1] == '\n' || image[n - 1] == '\r') {
            snprintf(f, sizeof f, "%s.image", path);
            pr_quote(image, q, sizeof q);
            apisrv__st_cause(st, "FieldValueInvalid", f,
                             "Invalid value: %s: must not have leading or trailing whitespace", q);
        }
    }
}

static bool pr_name_in(json_object *ctrs, size_t upto, const char *name) {
    for (size_t i = 0; i < upto; i++) {
        const char *n = aiq_jstr(json_object_array_get_idx(ctrs, i), "name");
        if (n && !strcmp(n, name)) return true;
    }
    return false;
}

static void pr_containers(json_object *spec, struct apisrv__st *st) {
    json_object *ctrs = pr_arr(spec, "containers"), *init = pr_arr(spec, "initContainers");
    char path[64], f[80], q[600];
    if (pr_len(ctrs) == 0) apisrv__st_cause(st, "FieldValueRequired", "spec.containers", "Required value");
    for (size_t i = 0; i < pr_len(ctrs); i++) {
        json_object *c = json_object_array_get_idx(ctrs, i);
        const char *name = aiq_jstr(c, "name");
        snprintf(path, sizeof path, "spec.containers[%zu]", i);
        pr_container(c, path, st);
        if (name && pr_name_in(ctrs, i, name)) {
            snprintf(f, sizeof f, "%s.name", path);
            pr_quote(name, q, sizeof q);
            apisrv__st_cause(st, "FieldValueDuplicate", f, "Duplicate value: %s", q);
        }
    }
    for (size_t i = 0; i < pr_len(init); i++) {
        json_object *c = json_object_array_get_idx(init, i);
        const char *name = aiq_jstr(c, "name");
        snprintf(path, sizeof path, "spec.initContainers[%zu]", i);
        pr_container(c, path, st);
        if (name && name[0] && (pr_name_in(ctrs, pr_len(ctrs), name) || pr_name_in(init, i, name))) {
            snprintf(f, sizeof f, "%s.name", path);
            pr_quote(name, q, sizeof q);
            apisrv__st_cause(st, "FieldValueDuplicate", f, "Duplicate value: %s", q);
        }
    }
}

/* ValidateNodeSelectorRequirement at path. */
static void pr_node_requirement(json_object *r, const char *path, struct apisrv__st *st) {
    const char *op = aiq_jstr(r, "operator"), *key = aiq_jstr(r, "key");
    json_object *vals = pr_arr(r, "values");
    size_t nv = pr_len(vals);
    char f[600], q[300];
    snprintf(f, sizeof f, "%s.values", path);
    if (op && (!strcmp(op, "In") || !strcmp(op, "NotIn"))) {
        if (nv == 0)
            apisrv__st_cause(st, "FieldValueRequired", f,
                             "Required value: must be specified when `operator` is 'In' or 'NotIn'");
    } else if (op && (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist"))) {
        if (nv > 0)
            apisrv__st_cause(st, "FieldValueForbidden", f,
                             "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    } else if (op && (!strcmp(op, "Gt") || !strcmp(op, "Lt"))) {
        if (nv != 1)
            apisrv__st_cause(st, "FieldValueRequired", f,
                             "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
    } else {
        snprintf(f, sizeof f, "%s.operator", path);
        pr_quote(op, q, sizeof q);
        apisrv__st_cause(st, "FieldValueInvalid", f, "Invalid value: %s: not a valid selector operator", q);
    }
    snprintf(f, sizeof f, "%s.key", path);
    {
        struct apisrv__msgs m = {0};
        apisrv__is_qualified_name(key ? key : "", &m);
        apisrv__cause_invalid_msgs(st, f, key ? key : "", &m);
    }
    for (size_t i = 0; i < nv; i++) {
        json_object *v = json_object_array_get_idx(vals, i);
        struct apisrv__msgs m = {0};
        if (!v || !json_object_is_type(v, json_type_string)) continue;
        snprintf(f, sizeof f, "%s.values[%zu]", path, i);
        apisrv__is_label_value(json_object_get_string(v), &m);
        apisrv__cause_invalid_msgs(st, f, json_object_get_string(v), &m);
    }
}

/* ValidateNodeFieldSelectorRequirement at path: only metadata.name, with
 * In or NotIn and exactly one value, a node name. */
static void pr_node_field_requirement(json_object *r, const char *path, struct apisrv__st *st) {
    const char *op = aiq_jstr(r, "operator"), *key = aiq_jstr(r, "key");
    json_object *vals = pr_arr(r, "values");
    size_t nv = pr_len(vals);
    char f[600], q[300];
    if (op && (!strcmp(op, "In") || !strcmp(op, "NotIn"))) {
        if (nv != 1) {
            snprintf(f, sizeof f, "%s.values", path);
            apisrv__st_cause(st, "FieldValueRequired", f,
                             "Required value: must be only one value when `operator` is 'In' or "
                             "'NotIn' for node field selector");
        }
    } else {
        snprintf(f, sizeof f, "%s.operator", path);
        pr_quote(op, q, sizeof q);
        apisrv__st_cause(st, "FieldValueInvalid", f, "Invalid value: %s: not a valid selector operator", q);
    }
    if (!key || strcmp(key, "metadata.name") != 0) {
        snprintf(f, sizeof f, "%s.key", path);
        pr_quote(key, q, sizeof q);
        apisrv__st_cause(st, "FieldValueInvalid", f, "Invalid value: %s: not a valid field selector key", q);
        return;
    }
    for (size_t i = 0; i < nv; i++) {
        json_object *v = json_object_array_get_idx(vals, i);
        struct apisrv__msgs m = {0};
        if (!v || !json_object_is_type(v, json_type_string)) continue;
        snprintf(f, sizeof f, "%s.values[%zu]", path, i);
        apisrv__is_dns1123_subdomain(json_object_get_string(v), &m);
        apisrv__cause_invalid_msgs(st, f, json_object_get_string(v), &m);
    }
}

static void pr_node_term(json_object *term, const char *path, struct apisrv__st *st) {
    char p[400]; /* room for ".values[N]" and the like within the callees' 600 */
    json_object *me = pr_arr(term, "matchExpressions"), *mf = pr_arr(term, "matchFields");
    for (size_t j = 0; j < pr_len(me); j++) {
        snprintf(p, sizeof p, "%s.matchExpressions[%zu]", path, j);
        pr_node_requirement(json_object_array_get_idx(me, j), p, st);
    }
    for (size_t j = 0; j < pr_len(mf); j++) {
        snprintf(p, sizeof p, "%s.matchFields[%zu]", path, j);
        pr_node_field_requirement(json_object_array_get_idx(mf, j), p, st);
    }
}

static void pr_affinity(json_object *spec, struct apisrv__st *st) {
    json_object *na = aiq_jget(aiq_jget(spec, "affinity"), "nodeAffinity");
    json_object *req = aiq_jget(na, "requiredDuringSchedulingIgnoredDuringExecution");
    json_object *pref = pr_arr(na, "preferredDuringSchedulingIgnoredDuringExecution");
    char p[300];
    if (req && json_object_is_type(req, json_type_object)) {
        json_object *terms = pr_arr(req, "nodeSelectorTerms");
        const char *tp = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        if (pr_len(terms) == 0)
            apisrv__st_cause(st, "FieldValueRequired", tp, "Required value: must have at least one node selector term");
        for (size_t i = 0; i < pr_len(terms); i++) {
            snprintf(p, sizeof p, "%s[%zu]", tp, i);
            pr_node_term(json_object_array_get_idx(terms, i), p, st);
        }
    }
    for (size_t i = 0; i < pr_len(pref); i++) {
        json_object *t = json_object_array_get_idx(pref, i);
        long long w = 0;
        snprintf(p, sizeof p, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%zu]", i);
        if (!pr_int(t, "weight", &w) || w < 1 || w > 100) {
            char f[400];
            snprintf(f, sizeof f, "%s.weight", p);
            apisrv__st_cause(st, "FieldValueInvalid", f, "Invalid value: %lld: must be in the range 1-100", w);
        }
        strncat(p, ".preference", sizeof p - strlen(p) - 1);
        pr_node_term(aiq_jget(t, "preference"), p, st);
    }
}

/* ValidateTolerations at path ("spec.tolerations"). */
static void pr_tolerations(json_object *tols, struct apisrv__st *st) {
    for (size_t i = 0; i < pr_len(tols); i++) {
        json_object *t = json_object_array_get_idx(tols, i);
        const char *key = aiq_jstr(t, "key"), *op = aiq_jstr(t, "operator"), *val = aiq_jstr(t, "value");
        const char *eff = aiq_jstr(t, "effect");
        char p[64], f[96], q[300];
        snprintf(p, sizeof p, "spec.tolerations[%zu]", i);
        if (key && key[0]) {
            struct apisrv__msgs m = {0};
            snprintf(f, sizeof f, "%s.key", p);
            apisrv__is_qualified_name(key, &m);
            apisrv__cause_invalid_msgs(st, f, key, &m);
        }
        snprintf(f, sizeof f, "%s.operator", p);
        if ((!key || !key[0]) && !(op && !strcmp(op, "Exists"))) {
            pr_quote(op, q, sizeof q);
            apisrv__st_cause(st, "FieldValueInvalid", f,
                             "Invalid value: %s: operator must be Exists when `key` is empty, which means "
                             "\"match all values and all keys\"", q);
        }
        if (aiq_jget(t, "tolerationSeconds") && !(eff && !strcmp(eff, "NoExecute"))) {
            char fe[96];
            snprintf(fe, sizeof fe, "%s.effect", p);
            pr_quote(eff, q, sizeof q);
            apisrv__st_cause(st, "FieldValueInvalid", fe,
                             "Invalid value: %s: effect must be 'NoExecute' when `tolerationSeconds` is set", q);
        }
        if (!op || !op[0] || !strcmp(op, "Equal")) {
            struct apisrv__msgs m = {0};
            apisrv__is_label_value(val ? val : "", &m);
            if (m.n) {
                char joined[1100];
                snprintf(joined, sizeof joined, "%s%s%s", m.m[0], m.n > 1 ? ";" : "", m.n > 1 ? m.m[1] : "");
                pr_quote(val, q, sizeof q);
                apisrv__st_cause(st, "FieldValueInvalid", f, "Invalid value: %s: %s", q, joined);
            }
        } else if (!strcmp(op, "Exists")) {
            if (val && val[0]) {
                pr_quote(val, q, sizeof q);
                apisrv__st_cause(st, "FieldValueInvalid", f,
                                 "Invalid value: %s: value must be empty when `operator` is 'Exists'", q);
            }
        } else {
            pr_not_supported(st, f, op, "\"Equal\", \"Exists\"");
        }
        if (eff && eff[0] && strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") &&
            strcmp(eff, "NoExecute")) {
            char fe[96];
            snprintf(fe, sizeof fe, "%s.effect", p);
            pr_not_supported(st, fe, eff, "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
        }
    }
}

static void pr_gates(json_object *spec, struct apisrv__st *st) {
    json_object *gates = pr_arr(spec, "schedulingGates");
    for (size_t i = 0; i < pr_len(gates); i++) {
        const char *g = aiq_jstr(json_object_array_get_idx(gates, i), "name");
        struct apisrv__msgs m = {0};
        char f[64], q[300];
        snprintf(f, sizeof f, "spec.schedulingGates[%zu]", i);
        apisrv__is_qualified_name(g ? g : "", &m);
        apisrv__cause_invalid_msgs(st, f, g ? g : "", &m);
        for (size_t k = 0; g && k < i; k++) {
            const char *o = aiq_jstr(json_object_array_get_idx(gates, k), "name");
            if (o && !strcmp(o, g)) {
                pr_quote(g, q, sizeof q);
                apisrv__st_cause(st, "FieldValueDuplicate", f, "Duplicate value: %s", q);
                break;
            }
        }
    }
}

/* validatePodMetadataAndSpec minus ObjectMeta (validate.c does that for
 * every kind): the ValidatePodSpec checks the local server knows. */
static void pr_spec(json_object *pod, struct apisrv__st *st) {
    static const char *const restart[] = {"Always", "OnFailure", "Never", NULL};
    static const char *const dns[] = {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None", NULL};
    json_object *spec = aiq_jget(pod, "spec");
    const char *rp = aiq_jstr(spec, "restartPolicy"), *dp = aiq_jstr(spec, "dnsPolicy");
    const char *node = aiq_jstr(spec, "nodeName"), *sa = aiq_jstr(spec, "serviceAccountName");
    long long ads;
    if (!aiq_jget(spec, "terminationGracePeriodSeconds"))
        apisrv__st_cause(st, "FieldValueRequired", "spec.terminationGracePeriodSeconds", "Required value");
    pr_containers(spec, st);
    if (!rp || !rp[0]) apisrv__st_cause(st, "FieldValueRequired", "spec.restartPolicy", "Required value");
    else if (!pr_in(rp, restart))
        pr_not_supported(st, "spec.restartPolicy", rp, "\"Always\", \"OnFailure\", \"Never\"");
    if (!dp || !dp[0]) apisrv__st_cause(st, "FieldValueRequired", "spec.dnsPolicy", "Required value");
    else if (!pr_in(dp, dns))
        pr_not_supported(st, "spec.dnsPolicy", dp,
                         "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"");
    apisrv__validate_labels(aiq_jget(spec, "nodeSelector"), "spec.nodeSelector", st);
    pr_affinity(spec, st);
    pr_gates(spec, st);
    if (sa && sa[0]) {
        struct apisrv__msgs m = {0};
        apisrv__is_dns1123_subdomain(sa, &m);
        apisrv__cause_invalid_msgs(st, "spec.serviceAccountName", sa, &m);
    }
    if (node && node[0]) {
        struct apisrv__msgs m = {0};
        apisrv__is_dns1123_subdomain(node, &m);
        apisrv__cause_invalid_msgs(st, "spec.nodeName", node, &m);
    }
    if (pr_int(spec, "activeDeadlineSeconds", &ads) && (ads < 1 || ads > PR_MAX_INT32))
        apisrv__st_cause(st, "FieldValueInvalid", "spec.activeDeadlineSeconds",
                         "Invalid value: %lld: must be between 1 and 2147483647, inclusive", ads);
    pr_tolerations(pr_arr(spec, "tolerations"), st);
}

/* See apisrv_int.h. */
void apisrv__pod_validate_create(json_object *pod, struct apisrv__st *st) {
    json_object *spec = aiq_jget(pod, "spec");
    const char *node = aiq_jstr(spec, "nodeName");
    pr_spec(pod, st);
    if (pr_len(pr_arr(spec, "ephemeralContainers")) > 0)
        apisrv__st_cause(st, "FieldValueForbidden", "spec.ephemeralContainers", "Forbidden: cannot be set on create");
    if (node && node[0] && pr_len(pr_arr(spec, "schedulingGates")) > 0)
        apisrv__st_cause(st, "FieldValueForbidden", "spec.nodeName",
                         "Forbidden: cannot be set until all schedulingGates have been cleared");
}

/* ---- update validation ------------------------------------------------------------- */


/* Appends printf text at buf + *j without passing cap. */
static void pr_cat(char *buf, size_t cap, size_t *j, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void pr_cat(char *buf, size_t cap, size_t *j, const char *fmt, ...) {
    va_list ap;
    int n;
    if (*j + 1 >= cap) return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *j, cap - *j, fmt, ap);
    va_end(ap);
    if (n > 0) *j = *j + (size_t)n < cap ? *j + (size_t)n : cap - 1;
}

/* The JSON text of a string (Go's json.Marshal keeps '/' unescaped). */
static void pr_cat_jstr(char *buf, size_t cap, size_t *j, const char *s) {
    json_object *o = json_object_new_string(s ? s : "");
    pr_cat(buf, cap, j, "%s",
           json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* json.Marshal of the internal []NodeSelectorRequirement: absent is null,
 * fields capitalised (internal types carry no json tags). */
static void pr_cat_reqs(char *buf, size_t cap, size_t *j, json_object *reqs) {
    if (!reqs || !json_object_is_type(reqs, json_type_array)) {
        pr_cat(buf, cap, j, "null");
        return;
    }
    pr_cat(buf, cap, j, "[");
    for (size_t i = 0; i < json_object_array_length(reqs); i++) {
        json_object *r = json_object_array_get_idx(reqs, i), *vals = pr_arr(r, "values");
        pr_cat(buf, cap, j, "%s{\"Key\":", i ? "," : "");
        pr_cat_jstr(buf, cap, j, aiq_jstr(r, "key"));
        pr_cat(buf, cap, j, ",\"Operator\":");
        pr_cat_jstr(buf, cap, j, aiq_jstr(r, "operator"));
        pr_cat(buf, cap, j, ",\"Values\":");
        if (!vals) {
            pr_cat(buf, cap, j, "null");
        } else {
            pr_cat(buf, cap, j, "[");
            for (size_t k = 0; k < json_object_array_length(vals); k++) {
                if (k) pr_cat(buf, cap, j, ",");
                pr_cat_jstr(buf, cap, j, json_object_get_string(json_object_array_get_idx(vals, k)));
            }
            pr_cat(buf, cap, j, "]");
        }
        pr_cat(buf, cap, j, "}");
    }
    pr_cat(buf, cap, j, "]");
}

static void pr_cat_term(char *buf, size_t cap, size_t *j, json_object *term) {
    pr_cat(buf, cap, j, "{\"MatchExpressions\":");
    pr_cat_reqs(buf, cap, j, pr_arr(term, "matchExpressions"));
    pr_cat(buf, cap, j, ",\"MatchFields\":");
    pr_cat_reqs(buf, cap, j, pr_arr(term, "matchFields"));
    pr_cat(buf, cap, j, "}");
}

static int pr_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* json.Marshal of a map[string]string: keys sorted, nil as null. */
static void pr_cat_map(char *buf, size_t cap, size_t *j, json_object *m) {
    const char *keys[256];
    size_t n = 0;
    if (!m || !json_object_is_type(m, json_type_object)) {
        pr_cat(buf, cap, j, "null");
        return;
    }
    json_object_object_foreach(m, k, v) {
        (void)v;
        if (n < 256) keys[n++] = k;
    }
    qsort(keys, n, sizeof keys[0], pr_cmp_str);
    pr_cat(buf, cap, j, "{");
    for (size_t i = 0; i < n; i++) {
        pr_cat(buf, cap, j, "%s", i ? "," : "");
        pr_cat_jstr(buf, cap, j, keys[i]);
        pr_cat(buf, cap, j, ":");
        pr_cat_jstr(buf, cap, j, aiq_jstr(m, keys[i]));
    }
    pr_cat(buf, cap, j, "}");
}

/* ValidateContainerUpdates: true when validation must stop (a container
 * was added or removed). */
static bool pr_container_updates(json_object *nc, json_object *oc, const char *path,
                                 struct apisrv__st *st) {
    char f[96], q[600];
    if (pr_len(nc) != pr_len(oc)) {
        apisrv__st_cause(st, "FieldValueForbidden", path, "Forbidden: pod updates may not add or remove containers");
        return true;
    }
    for (size_t i = 0; i < pr_len(nc); i++) {
        const char *img = aiq_jstr(json_object_array_get_idx(nc, i), "image");
        size_t n = img ? strlen(img) : 0;
        snprintf(f, sizeof f, "%s[%zu].image", path, i);
        if (n == 0) {
            apisrv__st_cause(st, "FieldValueRequired", f, "Required value");
        } else if (img[0] == ' ' || img[0] == '\t' || img[n - 1] == ' ' || img[n - 1] == '\t' ||
                   img[0] == '\n' || img[n - 1] == '\n' || img[0] == '\r' || img[n - 1] == '\r') {
            pr_quote(img, q, sizeof q);
            apisrv__st_cause(st, "FieldValueInvalid", f,
                             "Invalid value: %s: must not have leading or trailing whitespace", q);
        }
    }
    return false;
}

/* pr_empty of v with its top-level key skip left out. */
static bool pr_empty_skip(json_object *v, const char *skip) {
    if (!v || !json_object_is_type(v, json_type_object)) return pr_empty(v);
    json_object_object_foreach(v, k, c) {
        if (strcmp(k, skip) && !pr_empty(c)) return false;
    }
    return true;
}

/* pr_sem_equal of a and b with the top-level key skip left out of each
 * that is an object: what comparing copies with skip deleted gives,
 * without the copies (every pair of old and new tolerations is compared
 * on every pod update). */
static bool pr_sem_equal_skip(json_object *a, json_object *b, const char *skip) {
    bool ao = a && json_object_is_type(a, json_type_object);
    bool bo = b && json_object_is_type(b, json_type_object);
    if (!ao && !bo) return pr_sem_equal(a, b);
    if (pr_empty_skip(a, skip) && pr_empty_skip(b, skip)) return true;
    if (!ao || !bo) return false;
    json_object_object_foreach(a, ka, va) {
        if (strcmp(ka, skip) && !pr_sem_equal(va, aiq_jget(b, ka))) return false;
    }
    json_object_object_foreach(b, kb, vb) {
        if (strcmp(kb, skip) && !aiq_jget(a, kb) && !pr_empty(vb)) return false;
    }
    return true;
}

/* validateOnlyAddedTolerations: every old toleration must still be there
 * (its tolerationSeconds may change); then the new list is validated. */
static void pr_only_added_tolerations(json_object *nt, json_object *ot, struct apisrv__st *st) {
    for (size_t i = 0; i < pr_len(ot); i++) {
        json_object *o = json_object_array_get_idx(ot, i);
        bool found = false;
        for (size_t k = 0; k < pr_len(nt) && !found; k++)
            found = pr_sem_equal_skip(o, json_object_array_get_idx(nt, k), "tolerationSeconds");
        if (!found) {
            apisrv__st_cause(st, "FieldValueForbidden", "spec.tolerations",
                             "Forbidden: existing toleration can not be modified except its tolerationSeconds");
            return;
        }
    }
    pr_tolerations(nt, st);
}

static bool pr_gate_in(json_object *gates, const char *name) {
    for (size_t i = 0; i < pr_len(gates); i++) {
        const char *g = aiq_jstr(json_object_array_get_idx(gates, i), "name");
        if (g && !strcmp(g, name)) return true;
    }
    return false;
}

/* validateOnlyDeletedSchedulingGates: a cause per gate name not in the
 * old list, at the index of its last occurrence. */
static void pr_only_deleted_gates(json_object *ng, json_object *og, struct apisrv__st *st) {
    for (size_t i = 0; i < pr_len(ng); i++) {
        const char *g = aiq_jstr(json_object_array_get_idx(ng, i), "name");
        bool later = false;
        char f[80];
        if (!g || pr_gate_in(og, g)) continue;
        for (size_t k = i + 1; k < pr_len(ng) && !later; k++) {
            const char *h = aiq_jstr(json_object_array_get_idx(ng, k), "name");
            later = h && !strcmp(h, g);
        }
        if (later) continue;
        snprintf(f, sizeof f, "spec.schedulingGates[%zu].name", i);
        apisrv__st_cause(st, "FieldValueForbidden", f,
                         "Forbidden: only deletion is allowed, but found new scheduling gate '%s'", g);
    }
}

/* A JSON value that stands for a Go nil pointer. */
static bool pr_nil(json_object *v) { return !v || json_object_is_type(v, json_type_null); }

/* validateNodeSelectorTermHasOnlyAdditions */
static bool pr_term_only_additions(json_object *nt, json_object *ot) {
    static const char *const lists[2] = {"matchExpressions", "matchFields"};
    if (pr_len(pr_arr(ot, lists[0])) == 0 && pr_len(pr_arr(ot, lists[1])) == 0 &&
        (pr_len(pr_arr(nt, lists[0])) > 0 || pr_len(pr_arr(nt, lists[1])) > 0))
        return false;
    for (int l = 0; l < 2; l++) {
        json_object *o = pr_arr(ot, lists[l]), *n = pr_arr(nt, lists[l]);
        size_t k = pr_len(o);
        if (k == 0) continue;
        if (pr_len(n) < k) return false;
        for (size_t i = 0; i < k; i++)
            if (!pr_sem_equal(json_object_array_get_idx(n, i), json_object_array_get_idx(o, i))) return false;
    }
    return true;
}

/* validateNodeAffinityMutation */
static void pr_node_affinity_mutation(json_object *nna, json_object *ona, struct apisrv__st *st) {
    static const char tp[] =
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    json_object *oreq = aiq_jget(ona, "requiredDuringSchedulingIgnoredDuringExecution");
    json_object *nreq = aiq_jget(nna, "requiredDuringSchedulingIgnoredDuringExecution");
    json_object *ot, *nt;
    char msg[4000], f[200];
    size_t j = 0;
    if (pr_nil(ona) || pr_nil(oreq)) return;   /* anything may be set */
    ot = pr_arr(oreq, "nodeSelectorTerms");
    nt = pr_nil(nna) || pr_nil(nreq) ? NULL : pr_arr(nreq, "nodeSelectorTerms");
    if (pr_len(ot) > 0 && pr_len(ot) != pr_len(nt)) {
        if (!nt) {
            pr_cat(msg, sizeof msg, &j, "null");
        } else {
            pr_cat(msg, sizeof msg, &j, "[");
            for (size_t i = 0; i < pr_len(nt); i++) {
                if (i) pr_cat(msg, sizeof msg, &j, ",");
                pr_cat_term(msg, sizeof msg, &j, json_object_array_get_idx(nt, i));
            }
            pr_cat(msg, sizeof msg, &j, "]");
        }
        apisrv__st_cause(st, "FieldValueInvalid", tp,
                         "Invalid value: %s: no additions/deletions to non-empty NodeSelectorTerms list are allowed",
                         msg);
        return;
    }
    for (size_t i = 0; i < pr_len(ot); i++) {
        json_object *n = json_object_array_get_idx(nt, i);
        if (pr_term_only_additions(n, json_object_array_get_idx(ot, i))) continue;
        j = 0;
        pr_cat_term(msg, sizeof msg, &j, n);
        snprintf(f, sizeof f, "%s[%zu]", tp, i);
        apisrv__st_cause(st, "FieldValueInvalid", f,
                         "Invalid value: %s: only additions are allowed (no mutations or deletions)", msg);
    }
}

/* The gated part of ValidatePodUpdate: node selector additions and node
 * affinity mutations are checked, then put back to the old values in
 * munged so that the final comparison ignores them. */
static void pr_gated_mutations(json_object *munged, json_object *os, struct apisrv__st *st) {
    json_object *nsel = aiq_jget(munged, "nodeSelector"), *osel = aiq_jget(os, "nodeSelector");
    json_object *oaff = aiq_jget(os, "affinity"), *maff = aiq_jget(munged, "affinity");
    json_object *ona = pr_nil(oaff) ? NULL : aiq_jget(oaff, "nodeAffinity");
    json_object *mna = pr_nil(maff) ? NULL : aiq_jget(maff, "nodeAffinity");
    if (!pr_sem_equal(nsel, osel)) {
        bool ok = true;
        if (osel && json_object_is_type(osel, json_type_object)) {
            json_object_object_foreach(osel, k, v) {
                const char *nv = aiq_jstr(nsel, k);
                if (ok && (!nv || !v || strcmp(nv, json_object_get_string(v)))) ok = false;
            }
        }
        if (!ok) {
            char msg[4000];
            size_t j = 0;
            pr_cat_map(msg, sizeof msg, &j, nsel);
            apisrv__st_cause(st, "FieldValueInvalid", "spec.nodeSelector",
                             "Invalid value: %s: only additions to spec.nodeSelector are allowed "
                             "(no mutations or deletions)", msg);
        }
        if (osel) json_object_object_add(munged, "nodeSelector", pr_copy(osel));
        else json_object_object_del(munged, "nodeSelector");
    }
    if (pr_nil(ona)) ona = NULL;
    if (pr_nil(mna)) mna = NULL;
    if (pr_sem_equal(ona, mna)) return;
    pr_node_affinity_mutation(mna, ona, st);
    if (pr_nil(maff) && !ona) {
        /* already effectively nil */
    } else if (pr_nil(maff)) {
        json_object *a = json_object_new_object();
        json_object_object_add(a, "nodeAffinity", pr_copy(ona));
        json_object_object_add(munged, "affinity", a);
    } else if (pr_nil(oaff) && pr_nil(aiq_jget(maff, "podAffinity")) && pr_nil(aiq_jget(maff, "podAntiAffinity"))) {
        json_object_object_del(munged, "affinity");
    } else if (ona) {
        json_object_object_add(maff, "nodeAffinity", pr_copy(ona));
    } else {
        json_object_object_del(maff, "nodeAffinity");
    }
}

/* Copies old's field k into munged (removing it when old lacks it). */
static void pr_take_old(json_object *munged, json_object *os, const char *k) {
    json_object *v = aiq_jget(os, k);
    if (v) json_object_object_add(munged, k, pr_copy(v));
    else json_object_object_del(munged, k);
}

/* See apisrv_int.h. */
void apisrv__pod_validate_update(json_object *nw, json_object *old, struct apisrv__st *st) {
    static const char *const lists[2] = {"containers", "initContainers"};
    json_object *ns = aiq_jget(nw, "spec"), *os = aiq_jget(old, "spec"), *munged;
    long long na = 0, oa = 0, og = 0, mg = 0;
    bool hn, ho;
    pr_spec(nw, st);
    for (int l = 0; l < 2; l++) {
        char path[32];
        snprintf(path, sizeof path, "spec.%s", lists[l]);
        if (pr_container_updates(pr_arr(ns, lists[l]), pr_arr(os, lists[l]), path, st)) return;
    }
    hn = pr_int(ns, "activeDeadlineSeconds", &na);
    ho = pr_int(os, "activeDeadlineSeconds", &oa);
    if (hn) {
        if (na < 0 || na > PR_MAX_INT32) {
            apisrv__st_cause(st, "FieldValueInvalid", "spec.activeDeadlineSeconds",
                             "Invalid value: %lld: must be between 0 and 2147483647, inclusive", na);
            return;
        }
        if (ho && oa < na) {
            apisrv__st_cause(st, "FieldValueInvalid", "spec.activeDeadlineSeconds",
                             "Invalid value: %lld: must be less than or equal to previous value", na);
            return;
        }
    } else if (ho) {
        apisrv__st_cause(st, "FieldValueInvalid", "spec.activeDeadlineSeconds",
                         "Invalid value: null: must not update from a positive integer to nil value");
    }
    pr_only_added_tolerations(pr_arr(ns, "tolerations"), pr_arr(os, "tolerations"), st);
    pr_only_deleted_gates(pr_arr(ns, "schedulingGates"), pr_arr(os, "schedulingGates"), st);
    if (pr_sem_equal(ns, os)) return;

    /* the fields an update may change take their old values, then
     * anything still different is forbidden */
    munged = ns ? pr_copy(ns) : json_object_new_object();
    if (!munged) return;
    for (int l = 0; l < 2; l++) {
        json_object *mc = pr_arr(munged, lists[l]), *oc = pr_arr(os, lists[l]);
        for (size_t i = 0; i < pr_len(mc) && i < pr_len(oc); i++) {
            json_object *c = json_object_array_get_idx(mc, i);
            const char *img = aiq_jstr(json_object_array_get_idx(oc, i), "image");
            if (!c || !json_object_is_type(c, json_type_object)) continue;
            if (img) pr_set_str(c, "image", img);
            else json_object_object_del(c, "image");
        }
    }
    pr_take_old(munged, os, "activeDeadlineSeconds");
    pr_take_old(munged, os, "schedulingGates");
    pr_take_old(munged, os, "tolerations");
    if (pr_int(os, "terminationGracePeriodSeconds", &og) && og < 0 &&
        pr_int(munged, "terminationGracePeriodSeconds", &mg) && mg == 1)
        pr_take_old(munged, os, "terminationGracePeriodSeconds");
    if (pr_len(pr_arr(os, "schedulingGates")) > 0) pr_gated_mutations(munged, os, st);
    if (!pr_sem_equal(munged, os)) {
        /* The real message ends in a Go struct diff; ours names the
         * changed fields of the spec. */
        char changed[1024];
        size_t j = 0;
        json_object_object_foreach(munged, k, v) {
            if (!pr_sem_equal(v, aiq_jget(os, k))) pr_cat(changed, sizeof changed, &j, "%sspec.%s", j ? ", " : "", k);
        }
        if (os && json_object_is_type(os, json_type_object)) {
            json_object_object_foreach(os, ko, vo) {
                if (!aiq_jget(munged, ko) && !pr_empty(vo))
                    pr_cat(changed, sizeof changed, &j, "%sspec.%s", j ? ", " : "", ko);
            }
        }
        if (j == 0) changed[0] = 0;
        apisrv__st_cause(st, "FieldValueForbidden", "spec", "Forbidden: %s\n  changed: %s", PR_UPDATABLE,
                         changed);
    }
    json_object_put(munged);
}
