/* table.c -- meta.k8s.io/v1 Table responses, which is how kubectl prints
 * `get` output: the server, not kubectl, picks the columns. Custom
 * resources use their CRD's additionalPrinterColumns (JSONPath cells, date
 * columns turned into ages); built-in kinds get the columns the real
 * server prints (pods, nodes, namespaces, events, leases, CRDs). Each row
 * carries PartialObjectMetadata, the full object, or nothing, as
 * includeObject asks. Lock held (reads the type registry). */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <string.h>

#include "test/apiserver/humantime.h"
#include "test/apiserver/jsonpath.h"
#include "common/json.h"

typedef json_object *(*table_cell_fn)(json_object *obj, double now);

struct table_col {
    const char *name, *type, *format;
    int priority;
    const char *desc;
    table_cell_fn cell;
};

/* ---- cell helpers --------------------------------------------------------- */

static json_object *str_or(const char *s, const char *dflt) {
    return json_object_new_string(s && s[0] ? s : dflt);
}

static json_object *age_of(const char *ts, double now) {
    char buf[32];
    double t = ts ? rfc3339_parse(ts) : -1;
    if (t < 0) return json_object_new_string("<unknown>");
    human_duration(now - t, buf, sizeof buf);
    return json_object_new_string(buf);
}

static json_object *c_name(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "metadata.name"), "");
}

static json_object *c_age(json_object *o, double now) {
    return age_of(aiq_jpath_str(o, "metadata.creationTimestamp"), now);
}

static json_object *arr_at(json_object *o, const char *a, const char *b) {
    json_object *x;
    if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &x) ||
        !json_object_is_type(x, json_type_array))
        return NULL;
    return x;
}

static json_object *c_pod_ready(json_object *o, double now) {
    json_object *ctrs = arr_at(o, "spec", "containers"), *cs = arr_at(o, "status", "containerStatuses");
    size_t total = ctrs ? json_object_array_length(ctrs) : 0, ready = 0;
    char buf[32];
    (void)now;
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
        json_object *r;
        if (json_object_object_get_ex(json_object_array_get_idx(cs, i), "ready", &r) &&
            json_object_get_boolean(r))
            ready++;
    }
    snprintf(buf, sizeof buf, "%zu/%zu", ready, total);
    return json_object_new_string(buf);
}

static json_object *c_pod_status(json_object *o, double now) {
    const char *phase = aiq_jpath_str(o, "status.phase"), *reason = aiq_jpath_str(o, "status.reason");
    json_object *gates = arr_at(o, "spec", "schedulingGates"), *cs = arr_at(o, "status", "containerStatuses");
    (void)now;
    if (aiq_jpath_str(o, "metadata.deletionTimestamp")) return json_object_new_string("Terminating");
    if (reason && reason[0]) return json_object_new_string(reason);
    if ((!phase || !strcmp(phase, "Pending")) && gates && json_object_array_length(gates) > 0)
        return json_object_new_string("SchedulingGated");
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        const char *wr = aiq_jpath_str(c, "state.waiting.reason");
        const char *tr = aiq_jpath_str(c, "state.terminated.reason");
        if (wr && wr[0]) return json_object_new_string(wr);
        if (tr && tr[0] && phase && strcmp(phase, "Running")) return json_object_new_string(tr);
    }
    if (phase && !strcmp(phase, "Succeeded")) return json_object_new_string("Completed");
    if (phase && !strcmp(phase, "Failed")) return json_object_new_string("Error");
    return str_or(phase, "Pending");
}

static json_object *c_pod_restarts(json_object *o, double now) {
    json_object *cs = arr_at(o, "status", "containerStatuses"), *r;
    long long n = 0;
    (void)now;
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++)
        if (json_object_object_get_ex(json_object_array_get_idx(cs, i), "restartCount", &r))
            n += json_object_get_int64(r);
    return json_object_new_int64(n);
}

static json_object *c_pod_ip(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "status.podIP"), "<none>");
}

static json_object *c_pod_node(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "spec.nodeName"), "<none>");
}

static json_object *c_none(json_object *o, double now) {
    (void)o; (void)now;
    return json_object_new_string("<none>");
}

static json_object *c_node_status(json_object *o, double now) {
    json_object *conds = arr_at(o, "status", "conditions"), *u, *spec;
    const char *st = "Unknown";
    char buf[64];
    (void)now;
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *ty = aiq_jpath_str(c, "type"), *s = aiq_jpath_str(c, "status");
        if (ty && !strcmp(ty, "Ready")) st = s && !strcmp(s, "True") ? "Ready" : "NotReady";
    }
    bool unsched = json_object_object_get_ex(o, "spec", &spec) &&
                   json_object_object_get_ex(spec, "unschedulable", &u) && json_object_get_boolean(u);
    snprintf(buf, sizeof buf, "%s%s", st, unsched ? ",SchedulingDisabled" : "");
    return json_object_new_string(buf);
}

static json_object *c_node_roles(json_object *o, double now) {
    json_object *md, *labels;
    char buf[256] = "";
    size_t len = 0;
    const char *pfx = "node-role.kubernetes.io/";
    (void)now;
    if (json_object_object_get_ex(o, "metadata", &md) &&
        json_object_object_get_ex(md, "labels", &labels) &&
        json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, k, v) {
            (void)v;
            if (strncmp(k, pfx, strlen(pfx)) || !k[strlen(pfx)]) continue;
            if (len < sizeof buf - 1)
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "", k + strlen(pfx));
        }
    }
    return str_or(buf, "<none>");
}

static json_object *c_node_version(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "status.nodeInfo.kubeletVersion"), "");
}

static json_object *c_node_ip(json_object *o, double now) {
    json_object *addrs = arr_at(o, "status", "addresses");
    (void)now;
    for (size_t i = 0; addrs && i < json_object_array_length(addrs); i++) {
        json_object *a = json_object_array_get_idx(addrs, i);
        const char *ty = aiq_jpath_str(a, "type");
        if (ty && !strcmp(ty, "InternalIP")) return str_or(aiq_jpath_str(a, "address"), "<none>");
    }
    return json_object_new_string("<none>");
}

static json_object *c_node_os(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "status.nodeInfo.osImage"), "<unknown>");
}

static json_object *c_node_kernel(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "status.nodeInfo.kernelVersion"), "<unknown>");
}

static json_object *c_node_runtime(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "status.nodeInfo.containerRuntimeVersion"), "<unknown>");
}

static json_object *c_ns_status(json_object *o, double now) {
    (void)now;
    if (aiq_jpath_str(o, "metadata.deletionTimestamp")) return json_object_new_string("Terminating");
    return str_or(aiq_jpath_str(o, "status.phase"), "Active");
}

static json_object *c_ev_last(json_object *o, double now) {
    const char *ts = aiq_jpath_str(o, "lastTimestamp");
    if (!ts) ts = aiq_jpath_str(o, "eventTime");
    if (!ts) ts = aiq_jpath_str(o, "metadata.creationTimestamp");
    return age_of(ts, now);
}

static json_object *c_ev_type(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "type"), "Normal");
}

static json_object *c_ev_reason(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "reason"), "");
}

static json_object *c_ev_object(json_object *o, double now) {
    const char *k = aiq_jpath_str(o, "involvedObject.kind"), *n = aiq_jpath_str(o, "involvedObject.name");
    char buf[400], kl[128];
    size_t i;
    (void)now;
    for (i = 0; k && k[i] && i + 1 < sizeof kl; i++)
        kl[i] = (char)((k[i] >= 'A' && k[i] <= 'Z') ? k[i] + 32 : k[i]);
    kl[i] = 0;
    snprintf(buf, sizeof buf, "%s/%s", kl, n ? n : "");
    return json_object_new_string(buf);
}

static json_object *c_ev_message(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "message"), "");
}

static json_object *c_lease_holder(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "spec.holderIdentity"), "");
}

static json_object *c_created_at(json_object *o, double now) {
    (void)now;
    return str_or(aiq_jpath_str(o, "metadata.creationTimestamp"), "");
}

#define NAME_DESC "Name must be unique within a namespace."
#define AGE_DESC "CreationTimestamp is a timestamp representing the server time when this object was created."

static const struct table_col cols_pods[] = {
    {"Name", "string", "name", 0, NAME_DESC, c_name},
    {"Ready", "string", "", 0, "The aggregate readiness state of this pod for accepting traffic.", c_pod_ready},
    {"Status", "string", "", 0, "The aggregate status of the containers in this pod.", c_pod_status},
    {"Restarts", "integer", "", 0, "The number of times the containers in this pod have been restarted.", c_pod_restarts},
    {"Age", "string", "", 0, AGE_DESC, c_age},
    {"IP", "string", "", 1, "IP address allocated to the pod.", c_pod_ip},
    {"Node", "string", "", 1, "Name of the Node the Pod is assigned to.", c_pod_node},
    {"Nominated Node", "string", "", 1, "Name of the node nominated by the scheduler.", c_none},
    {"Readiness Gates", "string", "", 1, "Pod readiness gates.", c_none},
    {NULL, NULL, NULL, 0, NULL, NULL},
};
static const struct table_col cols_nodes[] = {
    {"Name", "string", "name", 0, NAME_DESC, c_name},
    {"Status", "string", "", 0, "The status of the node", c_node_status},
    {"Roles", "string", "", 0, "The roles of the node", c_node_roles},
    {"Age", "string", "", 0, AGE_DESC, c_age},
    {"Version", "string", "", 0, "Kubelet Version reported by the node.", c_node_version},
    {"Internal-IP", "string", "", 1, "Internal IP address of the node.", c_node_ip},
    {"External-IP", "string", "", 1, "External IP address of the node.", c_none},
    {"OS-Image", "string", "", 1, "OS image reported by the node.", c_node_os},
    {"Kernel-Version", "string", "", 1, "Kernel version reported by the node.", c_node_kernel},
    {"Container-Runtime", "string", "", 1, "Container runtime reported by the node.", c_node_runtime},
    {NULL, NULL, NULL, 0, NULL, NULL},
};
static const struct table_col cols_namespaces[] = {
    {"Name", "string", "name", 0, NAME_DESC, c_name},
    {"Status", "string", "", 0, "The status of the namespace", c_ns_status},
    {"Age", "string", "", 0, AGE_DESC, c_age},
    {NULL, NULL, NULL, 0, NULL, NULL},
};
static const struct table_col cols_events[] = {
    {"Last Seen", "string", "", 0, "The last time the event was seen.", c_ev_last},
    {"Type", "string", "", 0, "Type of this event.", c_ev_type},
    {"Reason", "string", "", 0, "Why the event was raised.", c_ev_reason},
    {"Object", "string", "", 0, "The object this event is about.", c_ev_object},
    {"Message", "string", "", 0, "A human-readable description of the event.", c_ev_message},
    {"Name", "string", "name", 1, NAME_DESC, c_name},
    {NULL, NULL, NULL, 0, NULL, NULL},
};
static const struct table_col cols_leases[] = {
    {"Name", "string", "name", 0, NAME_DESC, c_name},
    {"Holder", "string", "", 0, "The holder of the lease.", c_lease_holder},
    {"Age", "string", "", 0, AGE_DESC, c_age},
    {NULL, NULL, NULL, 0, NULL, NULL},
};
static const struct table_col cols_crds[] = {
    {"Name", "string", "name", 0, NAME_DESC, c_name},
    {"Created At", "date", "", 0, AGE_DESC, c_created_at},
    {NULL, NULL, NULL, 0, NULL, NULL},
};
static const struct table_col cols_default[] = {
    {"Name", "string", "name", 0, NAME_DESC, c_name},
    {"Age", "date", "", 0, AGE_DESC, c_age},
    {NULL, NULL, NULL, 0, NULL, NULL},
};

/* See apisrv_int.h. */
bool apisrv__wants_table(const struct apisrv__req *r) {
    return r->accept && strstr(r->accept, "as=Table");
}

static json_object *col_def(const char *name, const char *type, const char *format,
                            int priority, const char *desc) {
    json_object *d = json_object_new_object();
    json_object_object_add(d, "name", json_object_new_string(name));
    json_object_object_add(d, "type", json_object_new_string(type));
    json_object_object_add(d, "format", json_object_new_string(format ? format : ""));
    json_object_object_add(d, "description", json_object_new_string(desc ? desc : ""));
    json_object_object_add(d, "priority", json_object_new_int(priority));
    return d;
}

/* One cell of a CRD printer column. */
static json_object *crd_cell(json_object *col, json_object *obj, double now) {
    const char *path = aiq_jpath_str(col, "jsonPath"), *type = aiq_jpath_str(col, "type");
    json_object *v = path ? jpath_get(obj, path) : NULL;
    if (!v) return NULL;
    if (type && !strcmp(type, "date")) {
        if (!json_object_is_type(v, json_type_string)) return NULL;
        return age_of(json_object_get_string(v), now);
    }
    if (type && !strcmp(type, "integer") && json_object_is_type(v, json_type_int))
        return json_object_new_int64(json_object_get_int64(v));
    if (type && !strcmp(type, "number") &&
        (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
        return json_object_new_double(json_object_get_double(v));
    if (type && !strcmp(type, "boolean") && json_object_is_type(v, json_type_boolean))
        return json_object_new_boolean(json_object_get_boolean(v));
    if (json_object_is_type(v, json_type_string)) return json_object_new_string(json_object_get_string(v));
    return json_object_new_string(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static const struct table_col *builtin_cols(const struct apisrv__type *t) {
    if (!strcmp(t->key, "/pods")) return cols_pods;
    if (!strcmp(t->key, "/nodes")) return cols_nodes;
    if (!strcmp(t->key, "/namespaces")) return cols_namespaces;
    if (!strcmp(t->key, "/events")) return cols_events;
    if (!strcmp(t->key, "coordination.k8s.io/leases")) return cols_leases;
    if (!strcmp(t->key, "apiextensions.k8s.io/customresourcedefinitions")) return cols_crds;
    return cols_default;
}

static json_object *row_object(json_object *obj, const char *include) {
    json_object *md, *p;
    if (include && !strcmp(include, "None")) return NULL;
    if (include && !strcmp(include, "Object")) return json_object_get(obj);
    p = json_object_new_object();
    json_object_object_add(p, "kind", json_object_new_string("PartialObjectMetadata"));
    json_object_object_add(p, "apiVersion", json_object_new_string("meta.k8s.io/v1"));
    if (json_object_object_get_ex(obj, "metadata", &md))
        json_object_object_add(p, "metadata", json_object_get(md));
    else
        json_object_object_add(p, "metadata", json_object_new_object());
    return p;
}

/* See apisrv_int.h. */
json_object *apisrv__table(apisrv *s, const struct apisrv__type *t,
                           json_object *items, const char *include,
                           bool with_defs) {
    json_object *tab = json_object_new_object(), *defs = json_object_new_array();
    json_object *rows = json_object_new_array(), *md = json_object_new_object();
    const struct table_col *bc = NULL;
    json_object *cc = t->custom ? t->columns : NULL;
    double now = apisrv__now();
    char rvs[32];
    size_t ncc = cc ? json_object_array_length(cc) : 0;
    snprintf(rvs, sizeof rvs, "%lld", s->rv);
    json_object_object_add(md, "resourceVersion", json_object_new_string(rvs));
    json_object_object_add(tab, "kind", json_object_new_string("Table"));
    json_object_object_add(tab, "apiVersion", json_object_new_string("meta.k8s.io/v1"));
    json_object_object_add(tab, "metadata", md);
    if (t->custom && ncc > 0) {
        json_object_array_add(defs, col_def("Name", "string", "name", 0, NAME_DESC));
        for (size_t i = 0; i < ncc; i++) {
            json_object *c = json_object_array_get_idx(cc, i), *p;
            int prio = json_object_object_get_ex(c, "priority", &p) ? json_object_get_int(p) : 0;
            json_object_array_add(defs, col_def(aiq_jpath_str(c, "name") ? aiq_jpath_str(c, "name") : "",
                                                aiq_jpath_str(c, "type") ? aiq_jpath_str(c, "type") : "string",
                                                aiq_jpath_str(c, "format"), prio,
                                                aiq_jpath_str(c, "description")));
        }
    } else {
        bc = builtin_cols(t);
        for (const struct table_col *c = bc; c->name; c++)
            json_object_array_add(defs, col_def(c->name, c->type, c->format, c->priority, c->desc));
    }
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *obj = json_object_array_get_idx(items, i);
        json_object *row = json_object_new_object(), *cells = json_object_new_array(), *ro;
        if (bc) {
            for (const struct table_col *c = bc; c->name; c++)
                json_object_array_add(cells, c->cell(obj, now));
        } else {
            json_object_array_add(cells, c_name(obj, now));
            for (size_t k = 0; k < ncc; k++)
                json_object_array_add(cells, crd_cell(json_object_array_get_idx(cc, k), obj, now));
        }
        json_object_object_add(row, "cells", cells);
        if ((ro = row_object(obj, include))) json_object_object_add(row, "object", ro);
        json_object_array_add(rows, row);
    }
    if (with_defs) json_object_object_add(tab, "columnDefinitions", defs);
    else {
        json_object_put(defs);
        json_object_object_add(tab, "columnDefinitions", NULL);
    }
    json_object_object_add(tab, "rows", rows);
    return tab;
}
