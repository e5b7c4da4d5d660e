/* podsecurity.c -- Pod Security Admission on the local server, the part
 * aiq's tests meet: a pod created in a namespace labelled
 * pod-security.kubernetes.io/enforce=baseline (or restricted) is refused
 * with kube-apiserver's words when it breaks one of four baseline checks,
 * evaluated in the real plugin's order (check IDs sorted):
 *   hostNamespaces   hostNetwork, hostPID, hostIPC
 *   hostPathVolumes  any hostPath volume
 *   hostPorts        any container port with a hostPort
 *   privileged       securityContext.privileged=true on any container
 * Not implemented (a real server refuses these, the local one admits
 * them; docs/local-cluster.md lists it): the other eight baseline checks
 * (capabilities, AppArmor, SELinux, seccomp, procMount, sysctls, host
 * probes, Windows host process), every restricted-only check, audit and
 * warn modes, exemptions, and enforce-version other than latest. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#include "test/apiserver/apisrv_int.h"

#define PS_MAX 1024

/* Appends ", " (after the first) and the formatted text to buf. */
static void ps_add(char *buf, size_t *n, const char *text) {
    size_t len = strlen(text);
    if (*n && *n + 2 < PS_MAX) {
        memcpy(buf + *n, ", ", 2);
        *n += 2;
    }
    if (*n + len >= PS_MAX)
        len = PS_MAX - 1 - *n;
    memcpy(buf + *n, text, len);
    *n += len;
    buf[*n] = '\0';
}

/* Every container, init container and ephemeral container of spec. */
typedef void (*ps_visit_fn)(json_object *c, void *u);
static void ps_visit(json_object *spec, ps_visit_fn fn, void *u) {
    static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
    for (size_t l = 0; l < 3; l++) {
        json_object *a = aiq_jget(spec, lists[l]);
        if (!a || !json_object_is_type(a, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(a); i++)
            fn(json_object_array_get_idx(a, i), u);
    }
}

/* "container \"a\"" / "containers \"a\", \"b\"": the names quoted. */
struct ps_names {
    char list[PS_MAX / 2];
    size_t n;
    int count;
};

static void ps_name(struct ps_names *nm, json_object *c) {
    json_object *v = aiq_jget(c, "name");
    const char *name = v ? json_object_get_string(v) : "";
    int w = snprintf(nm->list + nm->n, sizeof nm->list - nm->n, "%s\"%s\"",
                     nm->count ? ", " : "", name);
    if (w > 0 && nm->n + (size_t)w < sizeof nm->list)
        nm->n += (size_t)w;
    nm->count++;
}

static void ps_privileged(json_object *c, void *u) {
    if (aiq_jtrue(aiq_jget(c, "securityContext"), "privileged"))
        ps_name(u, c);
}

struct ps_ports {
    struct ps_names nm;
    char port[64][8]; /* distinct hostPorts seen, as text */
    int count;
};

static int ps_cmp(const void *a, const void *b) { return strcmp(a, b); }

static void ps_hostports(json_object *c, void *u) {
    struct ps_ports *pp = u;
    json_object *ports = aiq_jget(c, "ports");
    bool bad = false;
    for (size_t i = 0; ports && json_object_is_type(ports, json_type_array) &&
                       i < json_object_array_length(ports); i++) {
        json_object *hp = aiq_jget(json_object_array_get_idx(ports, i), "hostPort");
        int v = hp ? json_object_get_int(hp) : 0;
        if (v == 0)
            continue;
        bad = true;
        char num[8];
        snprintf(num, sizeof num, "%d", v);
        int k = 0;
        while (k < pp->count && strcmp(pp->port[k], num) != 0)
            k++;
        if (k == pp->count && pp->count < 64) /* a set, as the real check keeps */
            memcpy(pp->port[pp->count++], num, sizeof num);
    }
    if (bad)
        ps_name(&pp->nm, c);
}

/* The set's ports sorted as text (Go's sets.String.List) and joined. */
static void ps_ports_text(struct ps_ports *pp, char *out, size_t cap) {
    size_t n = 0;
    qsort(pp->port, (size_t)pp->count, sizeof pp->port[0], ps_cmp);
    out[0] = '\0';
    for (int i = 0; i < pp->count; i++) {
        int w = snprintf(out + n, cap - n, "%s%s", i ? ", " : "", pp->port[i]);
        if (w < 0 || n + (size_t)w >= cap)
            break;
        n += (size_t)w;
    }
}

/* The violations of spec against the four checks, in the real order,
 * into out ("" when none). */
static void ps_check(json_object *spec, char *out) {
    char part[PS_MAX * 2];
    size_t n = 0;
    out[0] = '\0';
    char ns[64] = "";
    size_t k = 0;
    const char *hn[] = {"hostNetwork", "hostPID", "hostIPC"};
    for (int i = 0; i < 3; i++)
        if (aiq_jtrue(spec, hn[i]))
            k += (size_t)snprintf(ns + k, sizeof ns - k, "%s%s=true", k ? ", " : "", hn[i]);
    if (k) {
        snprintf(part, sizeof part, "host namespaces (%s)", ns);
        ps_add(out, &n, part);
    }
    struct ps_names vols = {.n = 0};
    json_object *vl = aiq_jget(spec, "volumes");
    for (size_t i = 0; vl && json_object_is_type(vl, json_type_array) &&
                       i < json_object_array_length(vl); i++)
        if (aiq_jget(json_object_array_get_idx(vl, i), "hostPath"))
            ps_name(&vols, json_object_array_get_idx(vl, i));
    if (vols.count) {
        snprintf(part, sizeof part, "hostPath volumes (%s %s)",
                 vols.count == 1 ? "volume" : "volumes", vols.list);
        ps_add(out, &n, part);
    }
    struct ps_ports pp = {.count = 0};
    ps_visit(spec, ps_hostports, &pp);
    if (pp.nm.count) {
        char ports[PS_MAX / 2];
        ps_ports_text(&pp, ports, sizeof ports);
        snprintf(part, sizeof part, "hostPort (%s %s %s %s %s)",
                 pp.nm.count == 1 ? "container" : "containers", pp.nm.list,
                 pp.nm.count == 1 ? "uses" : "use", pp.count == 1 ? "hostPort" : "hostPorts",
                 ports);
        ps_add(out, &n, part);
    }
    struct ps_names priv = {.n = 0};
    ps_visit(spec, ps_privileged, &priv);
    if (priv.count) {
        snprintf(part, sizeof part, "privileged (%s %s must not set securityContext.privileged=true)",
                 priv.count == 1 ? "container" : "containers", priv.list);
        ps_add(out, &n, part);
    }
}

/* See apisrv_int.h. */
int apisrv__pod_security(apisrv *s, const char *ns, const char *name, json_object *pod,
                         struct apisrv__st *st) {
    json_object *nso = apisrv__store_get(s, "/namespaces", "", ns);
    json_object *labels = aiq_jget(aiq_jget(nso, "metadata"), "labels");
    json_object *lv = aiq_jget(labels, "pod-security.kubernetes.io/enforce");
    const char *level = lv ? json_object_get_string(lv) : NULL;
    int rc = 0;
    if (level && (!strcmp(level, "baseline") || !strcmp(level, "restricted"))) {
        char why[PS_MAX];
        ps_check(aiq_jget(pod, "spec"), why);
        if (why[0]) {
            apisrv__st_set(st, 403, "Forbidden",
                           "pods \"%s\" is forbidden: violates PodSecurity \"%s:latest\": %s",
                           name, level, why);
            snprintf(st->name, sizeof st->name, "%s", name);
            snprintf(st->kind, sizeof st->kind, "pods");
            rc = -1;
        }
    }
    json_object_put(nso);
    return rc;
}
