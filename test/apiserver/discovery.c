/* discovery.c -- what clients ask before anything else: /version (minor 32
 * so the kubectl dispatcher runs its built-in 1.32), /openapi/v2 (an empty
 * 200 so kubectl skips client-side validation), /openapi/v3 (404), and API
 * discovery in both the legacy form (/api, /apis, /api/v1, /apis/G/V) and
 * the aggregated v2 form when the Accept header asks for it. */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <string.h>

#define DISC_AGG_CTYPE "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

static json_object *disc_verbs(bool sub) {
    static const char *const all[] = {"create", "delete", "get", "list", "patch", "update", "watch"};
    static const char *const subv[] = {"get", "patch", "update"};
    json_object *a = json_object_new_array();
    size_t n = sub ? 3 : 7;
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(sub ? subv[i] : all[i]));
    return a;
}

static json_object *disc_names(const char (*names)[32], int n) {
    json_object *a = json_object_new_array();
    for (int i = 0; i < n; i++) json_object_array_add(a, json_object_new_string(names[i]));
    return a;
}

static json_object *disc_gvk(const struct apisrv__type *t) {
    json_object *k = json_object_new_object();
    json_object_object_add(k, "group", json_object_new_string(t->group));
    json_object_object_add(k, "version", json_object_new_string(t->version));
    json_object_object_add(k, "kind", json_object_new_string(t->kind));
    return k;
}

/* Legacy APIResourceList for group/version, or NULL when nothing is served. */
static json_object *disc_resource_list(apisrv *s, const char *group, const char *version) {
    json_object *res = json_object_new_array(), *o;
    char gv[256];
    for (int i = 0; i < s->n_types; i++) {
        const struct apisrv__type *t = s->types[i];
        if (strcmp(t->group, group) || strcmp(t->version, version)) continue;
        json_object *r = json_object_new_object();
        json_object_object_add(r, "name", json_object_new_string(t->resource));
        json_object_object_add(r, "singularName", json_object_new_string(t->singular));
        json_object_object_add(r, "namespaced", json_object_new_boolean(t->namespaced));
        json_object_object_add(r, "kind", json_object_new_string(t->kind));
        json_object_object_add(r, "verbs", disc_verbs(false));
        if (t->n_short) json_object_object_add(r, "shortNames", disc_names(t->short_names, t->n_short));
        if (t->n_cat) json_object_object_add(r, "categories", disc_names(t->categories, t->n_cat));
        json_object_array_add(res, r);
        if (t->has_status) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s/status", t->resource);
            r = json_object_new_object();
            json_object_object_add(r, "name", json_object_new_string(sub));
            json_object_object_add(r, "singularName", json_object_new_string(""));
            json_object_object_add(r, "namespaced", json_object_new_boolean(t->namespaced));
            json_object_object_add(r, "kind", json_object_new_string(t->kind));
            json_object_object_add(r, "verbs", disc_verbs(true));
            json_object_array_add(res, r);
        }
    }
    if (json_object_array_length(res) == 0) {
        json_object_put(res);
        return NULL;
    }
    o = json_object_new_object();
    if (group[0]) snprintf(gv, sizeof gv, "%s/%s", group, version);
    else snprintf(gv, sizeof gv, "%s", version);
    json_object_object_add(o, "kind", json_object_new_string("APIResourceList"));
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "groupVersion", json_object_new_string(gv));
    json_object_object_add(o, "resources", res);
    return o;
}

/* Appends to items one APIGroupDiscovery per group (core only, or every
 * other group), in registration order. */
static void disc_aggregated(apisrv *s, bool core, json_object *items) {
    for (int i = 0; i < s->n_types; i++) {
        const struct apisrv__type *t = s->types[i];
        bool seen = false;
        if (core != (t->group[0] == 0)) continue;
        for (int k = 0; k < i; k++)
            if (!strcmp(s->types[k]->group, t->group)) seen = true;
        if (seen) continue;
        json_object *g = json_object_new_object(), *md = json_object_new_object();
        json_object *vers = json_object_new_array();
        if (!core) json_object_object_add(md, "name", json_object_new_string(t->group));
        json_object_object_add(g, "metadata", md);
        for (int v = i; v < s->n_types; v++) {
            const struct apisrv__type *tv = s->types[v];
            bool vseen = false;
            if (strcmp(tv->group, t->group)) continue;
            for (int k = i; k < v; k++)
                if (!strcmp(s->types[k]->group, t->group) && !strcmp(s->types[k]->version, tv->version))
                    vseen = true;
            if (vseen) continue;
            json_object *ver = json_object_new_object(), *res = json_object_new_array();
            json_object_object_add(ver, "version", json_object_new_string(tv->version));
            for (int k = v; k < s->n_types; k++) {
                const struct apisrv__type *r = s->types[k];
                if (strcmp(r->group, t->group) || strcmp(r->version, tv->version)) continue;
                json_object *ro = json_object_new_object();
                json_object_object_add(ro, "resource", json_object_new_string(r->resource));
                json_object_object_add(ro, "responseKind", disc_gvk(r));
                json_object_object_add(ro, "scope", json_object_new_string(r->namespaced ? "Namespaced" : "Cluster"));
                json_object_object_add(ro, "singularResource", json_object_new_string(r->singular));
                json_object_object_add(ro, "verbs", disc_verbs(false));
                if (r->n_short) json_object_object_add(ro, "shortNames", disc_names(r->short_names, r->n_short));
                if (r->n_cat) json_object_object_add(ro, "categories", disc_names(r->categories, r->n_cat));
                if (r->has_status) {
                    json_object *subs = json_object_new_array(), *so = json_object_new_object();
                    json_object_object_add(so, "subresource", json_object_new_string("status"));
                    json_object_object_add(so, "responseKind", disc_gvk(r));
                    json_object_object_add(so, "verbs", disc_verbs(true));
                    json_object_array_add(subs, so);
                    json_object_object_add(ro, "subresources", subs);
                }
                json_object_array_add(res, ro);
            }
            json_object_object_add(ver, "resources", res);
            json_object_object_add(ver, "freshness", json_object_new_string("Current"));
            json_object_array_add(vers, ver);
        }
        json_object_object_add(g, "versions", vers);
        json_object_array_add(items, g);
    }
}

static void disc_send_aggregated(apisrv *s, bool core, struct apisrv__resp *w) {
    json_object *o = json_object_new_object(), *items = json_object_new_array();
    json_object_object_add(o, "kind", json_object_new_string("APIGroupDiscoveryList"));
    json_object_object_add(o, "apiVersion", json_object_new_string("apidiscovery.k8s.io/v2"));
    json_object_object_add(o, "metadata", json_object_new_object());
    disc_aggregated(s, core, items);
    if (!core) apisrv__aggr_discovery(s, true, items);
    json_object_object_add(o, "items", items);
    apisrv__resp_json(w, 200, o);
    w->ctype = DISC_AGG_CTYPE;
    json_object_put(o);
}

static json_object *disc_group_list(apisrv *s) {
    json_object *o = json_object_new_object(), *groups = json_object_new_array();
    json_object_object_add(o, "kind", json_object_new_string("APIGroupList"));
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    for (int i = 0; i < s->n_types; i++) {
        const struct apisrv__type *t = s->types[i];
        bool seen = !t->group[0];
        for (int k = 0; k < i && !seen; k++)
            if (!strcmp(s->types[k]->group, t->group)) seen = true;
        if (seen) continue;
        json_object *g = json_object_new_object(), *vers = json_object_new_array(), *pref = NULL;
        json_object_object_add(g, "name", json_object_new_string(t->group));
        for (int v = i; v < s->n_types; v++) {
            const struct apisrv__type *tv = s->types[v];
            bool vseen = false;
            if (strcmp(tv->group, t->group)) continue;
            for (int k = i; k < v; k++)
                if (!strcmp(s->types[k]->group, t->group) && !strcmp(s->types[k]->version, tv->version))
                    vseen = true;
            if (vseen) continue;
            char gv[256];
            snprintf(gv, sizeof gv, "%s/%s", tv->group, tv->version);
            json_object *vo = json_object_new_object();
            json_object_object_add(vo, "groupVersion", json_object_new_string(gv));
            json_object_object_add(vo, "version", json_object_new_string(tv->version));
            if (!pref) json_object_deep_copy(vo, &pref, NULL);
            json_object_array_add(vers, vo);
        }
        json_object_object_add(g, "versions", vers);
        json_object_object_add(g, "preferredVersion", pref);
        json_object_array_add(groups, g);
    }
    apisrv__aggr_discovery(s, false, groups);
    json_object_object_add(o, "groups", groups);
    return o;
}

/* Answers discovery, version and OpenAPI paths; returns false for any
 * other path (w untouched). */
bool apisrv__discovery(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w) {
    const char *u = r->url;
    bool agg = r->accept && strstr(r->accept, "v=v2;as=APIGroupDiscoveryList");
    json_object *o = NULL;
    char g[128], v[64];
    if (strcmp(r->method, "GET")) return false;
    if (!strcmp(u, "/version") || !strcmp(u, "/version/")) {
        apisrv__resp_text(w, 200, "application/json",
            "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.0-aiq\","
            "\"gitCommit\":\"0000000000000000000000000000000000000000\","
            "\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
            "\"goVersion\":\"go1.23.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}");
        return true;
    }
    if (!strcmp(u, "/openapi/v2")) {
        apisrv__resp_text(w, 200, "application/octet-stream", "");
        return true;
    }
    if (!strncmp(u, "/openapi/", 9)) {
        apisrv__resp_err(w, 404, "NotFound", "the server could not find the requested resource");
        return true;
    }
    if (!strcmp(u, "/api") || !strcmp(u, "/api/")) {
        if (agg) {
            disc_send_aggregated(s, true, w);
            return true;
        }
        char buf[256];
        snprintf(buf, sizeof buf,
                 "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":"
                 "[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"127.0.0.1:%d\"}]}", s->port);
        apisrv__resp_text(w, 200, "application/json", buf);
        return true;
    }
    if (!strcmp(u, "/apis") || !strcmp(u, "/apis/")) {
        if (agg) {
            disc_send_aggregated(s, false, w);
            return true;
        }
        o = disc_group_list(s);
        apisrv__resp_json(w, 200, o);
        json_object_put(o);
        return true;
    }
    if (!strcmp(u, "/api/v1") || !strcmp(u, "/api/v1/")) {
        o = disc_resource_list(s, "", "v1");
    } else if (!strncmp(u, "/apis/", 6)) {
        const char *p = u + 6, *slash = strchr(p, '/');
        if (!slash || (size_t)(slash - p) >= sizeof g) return false;
        const char *vend = strchr(slash + 1, '/');
        if (vend && vend[1]) return false;   /* a resource path */
        size_t vl = vend ? (size_t)(vend - slash - 1) : strlen(slash + 1);
        if (vl == 0 || vl >= sizeof v) return false;
        memcpy(g, p, (size_t)(slash - p));
        g[slash - p] = 0;
        memcpy(v, slash + 1, vl);
        v[vl] = 0;
        o = disc_resource_list(s, g, v);
    } else {
        return false;
    }
    if (!o) {
        apisrv__resp_err(w, 404, "NotFound", "the server could not find the requested resource");
        return true;
    }
    apisrv__resp_json(w, 200, o);
    json_object_put(o);
    return true;
}
