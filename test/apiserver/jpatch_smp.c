/* jpatch_smp.c -- strategic merge patch for the built-in kinds the local
 * server serves (Pod, Node, Lease, Namespace).
 *
 * The patch strategy of each field comes from the `patchStrategy` /
 * `patchMergeKey` struct tags of k8s.io/api core/v1 and meta/v1, written
 * out below as small type tables. Fields not in a table are merged as
 * maps or replaced as lists (what Kubernetes does for atomic lists, e.g.
 * tolerations, node taints, affinity terms).
 *
 * Directives: "$patch": replace|delete|merge in maps and list elements
 * ({"$patch":"replace"} as a list element replaces the whole list),
 * "$retainKeys", "$setElementOrder/<f>", "$deleteFromPrimitiveList/<f>". */
#include "test/apiserver/jpatch.h"
#include "test/apiserver/jpatch_int.h"

#include <stdio.h>
#include <string.h>

enum smp_list { SMP_REPLACE, SMP_KEYED, SMP_PRIM };

struct smp_type;
struct smp_field {
    const char *name;
    enum smp_list list;
    const char *key;             /* patchMergeKey of a keyed list */
    const struct smp_type *sub;  /* type of the map / list elements */
};
struct smp_type {
    const struct smp_field *f;
};

#define SMP_END {NULL, SMP_REPLACE, NULL, NULL}

static const struct smp_field smp_container_f[] = {
    {"env", SMP_KEYED, "name", NULL},
    {"ports", SMP_KEYED, "containerPort", NULL},
    {"volumeMounts", SMP_KEYED, "mountPath", NULL},
    {"volumeDevices", SMP_KEYED, "devicePath", NULL},
    SMP_END};
static const struct smp_type smp_container = {smp_container_f};

static const struct smp_field smp_podspec_f[] = {
    {"containers", SMP_KEYED, "name", &smp_container},
    {"initContainers", SMP_KEYED, "name", &smp_container},
    {"ephemeralContainers", SMP_KEYED, "name", &smp_container},
    {"volumes", SMP_KEYED, "name", NULL},
    {"imagePullSecrets", SMP_KEYED, "name", NULL},
    {"schedulingGates", SMP_KEYED, "name", NULL},
    {"hostAliases", SMP_KEYED, "ip", NULL},
    {"topologySpreadConstraints", SMP_KEYED, "topologyKey", NULL},
    {"resourceClaims", SMP_KEYED, "name", NULL},
    SMP_END};
static const struct smp_type smp_podspec = {smp_podspec_f};

static const struct smp_field smp_podstatus_f[] = {
    {"conditions", SMP_KEYED, "type", NULL},
    {"podIPs", SMP_KEYED, "ip", NULL},
    SMP_END};
static const struct smp_type smp_podstatus = {smp_podstatus_f};

static const struct smp_field smp_meta_f[] = {
    {"finalizers", SMP_PRIM, NULL, NULL},
    {"ownerReferences", SMP_KEYED, "uid", NULL},
    SMP_END};
static const struct smp_type smp_meta = {smp_meta_f};

static const struct smp_field smp_pod_f[] = {
    {"metadata", SMP_REPLACE, NULL, &smp_meta},
    {"spec", SMP_REPLACE, NULL, &smp_podspec},
    {"status", SMP_REPLACE, NULL, &smp_podstatus},
    SMP_END};
static const struct smp_type smp_pod = {smp_pod_f};

static const struct smp_field smp_nodespec_f[] = {
    {"podCIDRs", SMP_PRIM, NULL, NULL},
    SMP_END};
static const struct smp_type smp_nodespec = {smp_nodespec_f};

static const struct smp_field smp_nodestatus_f[] = {
    {"conditions", SMP_KEYED, "type", NULL},
    {"addresses", SMP_KEYED, "type", NULL},
    SMP_END};
static const struct smp_type smp_nodestatus = {smp_nodestatus_f};

static const struct smp_field smp_node_f[] = {
    {"metadata", SMP_REPLACE, NULL, &smp_meta},
    {"spec", SMP_REPLACE, NULL, &smp_nodespec},
    {"status", SMP_REPLACE, NULL, &smp_nodestatus},
    SMP_END};
static const struct smp_type smp_node = {smp_node_f};

/* Lease, Namespace and anything else: only metadata has strategies. */
static const struct smp_field smp_generic_f[] = {
    {"metadata", SMP_REPLACE, NULL, &smp_meta},
    SMP_END};
static const struct smp_type smp_generic = {smp_generic_f};

static const struct smp_field *smp_field(const struct smp_type *t, const char *name) {
    if (!t) return NULL;
    for (const struct smp_field *f = t->f; f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

struct smp_ctx {
    aiq_err *err;
    char path[512];
    size_t len;
};

static size_t smp_push(struct smp_ctx *c, const char *seg) {
    size_t old = c->len;
    int n = snprintf(c->path + c->len, sizeof c->path - c->len, "%s%s",
                     c->len ? "." : "", seg);
    if (n > 0) c->len += (size_t)n;
    if (c->len >= sizeof c->path) c->len = sizeof c->path - 1;
    return old;
}

static void smp_pop(struct smp_ctx *c, size_t old) {
    c->len = old;
    c->path[old] = '\0';
}

static int smp_fail(struct smp_ctx *c, aiq_rc rc, const char *msg, const char *val) {
    aiq_err_field(c->err, rc, c->path, "strategic merge patch: %s%s%s%s%s",
                  c->len ? "field \"" : "", c->path, c->len ? "\": " : "",
                  msg, val ? val : "");
    return -1;
}

static const char *smp_directive(json_object *p) {
    json_object *d = NULL;
    if (!p || !json_object_is_type(p, json_type_object) ||
        !json_object_object_get_ex(p, "$patch", &d) || !json_object_is_type(d, json_type_string))
        return NULL;
    return json_object_get_string(d);
}

static int smp_map(json_object **o, json_object *p, const struct smp_type *t,
                   struct smp_ctx *c, int depth);

/* Sets parent[k] to nv (owned) unless nv is the value already there. */
static void smp_set(json_object *parent, const char *k, json_object *old, json_object *nv) {
    if (nv == old)
        json_object_put(nv); /* merged in place: drop our extra reference */
    else
        json_object_object_add(parent, k, nv);
}

/* Merges keyed list pl into *ol (owned, replaced when not an array). */
static int smp_keyed(json_object **ol, json_object *pl, const struct smp_field *f,
                     struct smp_ctx *c, int depth) {
    size_t pn = json_object_array_length(pl);
    if (!*ol || !json_object_is_type(*ol, json_type_array)) {
        json_object_put(*ol);
        *ol = json_object_new_array();
        if (!*ol) return smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
    }
    int replace_all = 0;
    for (size_t i = 0; i < pn; i++) {
        const char *d = smp_directive(json_object_array_get_idx(pl, i));
        if (d && strcmp(d, "replace") == 0) replace_all = 1;
    }
    if (replace_all) {
        json_object *nl = json_object_new_array();
        if (!nl) return smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
        json_object_put(*ol);
        *ol = nl;
    }
    for (size_t i = 0; i < pn; i++) {
        json_object *el = json_object_array_get_idx(pl, i);
        if (!el || !json_object_is_type(el, json_type_object)) {
            char what[64];
            snprintf(what, sizeof what, "element %zu is not an object (merge key %s)", i, f->key);
            return smp_fail(c, AIQ_EINVAL, what, NULL);
        }
        const char *d = smp_directive(el);
        if (d && strcmp(d, "replace") == 0) continue;
        json_object *kv = NULL;
        if (!json_object_object_get_ex(el, f->key, &kv) || !kv) {
            char what[128];
            snprintf(what, sizeof what, "element %zu does not contain declared merge key: ", i);
            return smp_fail(c, AIQ_EINVAL, what, f->key);
        }
        size_t n = json_object_array_length(*ol);
        long at = -1;
        for (size_t j = 0; j < n && at < 0; j++) {
            json_object *cur = json_object_array_get_idx(*ol, j), *ck = NULL;
            if (cur && json_object_is_type(cur, json_type_object) &&
                json_object_object_get_ex(cur, f->key, &ck) && jp_equal(ck, kv))
                at = (long)j;
        }
        if (d && strcmp(d, "delete") == 0) {
            if (at >= 0) json_object_array_del_idx(*ol, (size_t)at, 1);
            continue;
        }
        json_object *cur = at >= 0 ? json_object_get(json_object_array_get_idx(*ol, (size_t)at)) : NULL;
        json_object *orig = cur;
        int r = smp_map(&cur, el, f->sub, c, depth + 1);
        if (r < 0) {
            json_object_put(cur);
            return -1;
        }
        if (r == 1) {
            json_object_put(cur);
            if (at >= 0) json_object_array_del_idx(*ol, (size_t)at, 1);
        } else if (at >= 0) {
            if (cur == orig) json_object_put(cur);
            else json_object_array_put_idx(*ol, (size_t)at, cur);
        } else {
            json_object_array_add(*ol, cur);
        }
    }
    return 0;
}

/* Appends each value of pl not already in *ol (a set-like merge). */
static int smp_prim(json_object **ol, json_object *pl, struct smp_ctx *c) {
    if (!*ol || !json_object_is_type(*ol, json_type_array)) {
        json_object_put(*ol);
        *ol = json_object_new_array();
        if (!*ol) return smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
    }
    size_t pn = json_object_array_length(pl);
    for (size_t i = 0; i < pn; i++) {
        json_object *v = json_object_array_get_idx(pl, i);
        if (v && json_object_is_type(v, json_type_object))
            return smp_fail(c, AIQ_EINVAL, "map inside a list of primitives", NULL);
        int found = 0;
        size_t n = json_object_array_length(*ol);
        for (size_t j = 0; j < n && !found; j++)
            found = jp_equal(json_object_array_get_idx(*ol, j), v);
        if (!found) json_object_array_add(*ol, jp__copy(v));
    }
    return 0;
}

/* Reorders list o[field] so the elements named in order come first, in
 * that order; others keep their relative order after them. */
static int smp_order(json_object *o, const char *field, json_object *order,
                     const struct smp_field *f, struct smp_ctx *c) {
    json_object *list = NULL;
    if (!json_object_object_get_ex(o, field, &list) || !list ||
        !json_object_is_type(list, json_type_array))
        return 0;
    if (!json_object_is_type(order, json_type_array))
        return smp_fail(c, AIQ_EINVAL, "$setElementOrder must be a list for ", field);
    size_t n = json_object_array_length(list), on = json_object_array_length(order);
    if (n > 4096) return 0;
    char used[4096] = {0};
    json_object *nl = json_object_new_array();
    if (!nl) return smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
    const char *key = f && f->list == SMP_KEYED ? f->key : NULL;
    for (size_t i = 0; i < on; i++) {
        json_object *want = json_object_array_get_idx(order, i);
        if (key) {
            json_object *wk = NULL;
            if (!want || !json_object_is_type(want, json_type_object) ||
                !json_object_object_get_ex(want, key, &wk))
                continue;
            want = wk;
        }
        for (size_t j = 0; j < n; j++) {
            json_object *el = json_object_array_get_idx(list, j), *ek = el;
            if (used[j]) continue;
            if (key && !(el && json_object_is_type(el, json_type_object) &&
                         json_object_object_get_ex(el, key, &ek)))
                continue;
            if (jp_equal(ek, want)) {
                used[j] = 1;
                json_object_array_add(nl, json_object_get(el));
                break;
            }
        }
    }
    for (size_t j = 0; j < n; j++)
        if (!used[j]) json_object_array_add(nl, json_object_get(json_object_array_get_idx(list, j)));
    json_object_object_add(o, field, nl);
    return 0;
}

static int smp_has_prefix(const char *s, const char *pre) {
    return strncmp(s, pre, strlen(pre)) == 0;
}

#define SMP_SEO "$setElementOrder/"
#define SMP_DFPL "$deleteFromPrimitiveList/"

/* Merges map patch p into *o (owned; replaced when not an object).
 * Returns 0, 1 when p says "$patch": "delete" (caller drops the value), or
 * -1 on error (err filled; *o still owned by the caller). */
static int smp_map(json_object **o, json_object *p, const struct smp_type *t,
                   struct smp_ctx *c, int depth) {
    if (depth > JP_MAX_DEPTH) return smp_fail(c, AIQ_EINVAL, "nested too deep", NULL);
    const char *d = smp_directive(p);
    if (d && strcmp(d, "delete") == 0) return 1;
    if (d && strcmp(d, "replace") == 0) {
        json_object *nw = json_object_new_object();
        if (!nw) return smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
        json_object_put(*o);
        *o = nw; /* then merge the rest of p into the empty map */
    } else if (d && strcmp(d, "merge") != 0) {
        return smp_fail(c, AIQ_EINVAL, "unknown $patch directive: ", d);
    }
    if (!*o || !json_object_is_type(*o, json_type_object)) {
        json_object_put(*o);
        *o = json_object_new_object();
        if (!*o) return smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
    }
    json_object *obj = *o;

    /* $deleteFromPrimitiveList/<f> first, so a value both deleted and
     * added in one patch ends up present. */
    json_object_object_foreach(p, dk, dv) {
        if (!smp_has_prefix(dk, SMP_DFPL)) continue;
        const char *field = dk + strlen(SMP_DFPL);
        json_object *list = NULL;
        if (!dv || !json_object_is_type(dv, json_type_array))
            return smp_fail(c, AIQ_EINVAL, "$deleteFromPrimitiveList must be a list for ", field);
        if (!json_object_object_get_ex(obj, field, &list) || !list ||
            !json_object_is_type(list, json_type_array))
            continue;
        for (size_t j = json_object_array_length(list); j-- > 0;) {
            json_object *el = json_object_array_get_idx(list, j);
            for (size_t i = 0; i < json_object_array_length(dv); i++)
                if (jp_equal(el, json_object_array_get_idx(dv, i))) {
                    json_object_array_del_idx(list, j, 1);
                    break;
                }
        }
    }

    json_object_object_foreach(p, k, v) {
        if (k[0] == '$') {
            if (strcmp(k, "$patch") == 0 || strcmp(k, "$retainKeys") == 0 ||
                smp_has_prefix(k, SMP_SEO) || smp_has_prefix(k, SMP_DFPL))
                continue;
            return smp_fail(c, AIQ_EINVAL, "unknown directive ", k);
        }
        const struct smp_field *f = smp_field(t, k);
        size_t mark = smp_push(c, k);
        int rc = 0;
        if (!v || json_object_is_type(v, json_type_null)) {
            json_object_object_del(obj, k);
        } else if (json_object_is_type(v, json_type_object) ||
                   (json_object_is_type(v, json_type_array) && f && f->list != SMP_REPLACE)) {
            json_object *old = NULL;
            if (json_object_object_get_ex(obj, k, &old) && old) json_object_get(old);
            json_object *cur = old;
            int r;
            if (json_object_is_type(v, json_type_object))
                r = smp_map(&cur, v, f ? f->sub : NULL, c, depth + 1);
            else if (f->list == SMP_KEYED)
                r = smp_keyed(&cur, v, f, c, depth + 1);
            else
                r = smp_prim(&cur, v, c);
            if (r < 0) {
                json_object_put(cur);
                rc = -1;
            } else if (r == 1) {
                json_object_put(cur);
                json_object_object_del(obj, k);
            } else {
                smp_set(obj, k, old, cur);
            }
        } else {
            json_object *cp = jp__copy(v);
            if (!cp) rc = smp_fail(c, AIQ_ENOMEM, "out of memory", NULL);
            else json_object_object_add(obj, k, cp);
        }
        smp_pop(c, mark);
        if (rc) return rc;
    }

    json_object *retain = NULL;
    if (json_object_object_get_ex(p, "$retainKeys", &retain)) {
        if (!retain || !json_object_is_type(retain, json_type_array))
            return smp_fail(c, AIQ_EINVAL, "$retainKeys must be a list", NULL);
        const char *drop[256];
        int nd = 0;
        json_object_object_foreach(obj, rk, rv) {
            (void)rv;
            int keep = 0;
            for (size_t i = 0; i < json_object_array_length(retain) && !keep; i++) {
                json_object *s = json_object_array_get_idx(retain, i);
                keep = s && json_object_is_type(s, json_type_string) &&
                       strcmp(json_object_get_string(s), rk) == 0;
            }
            if (!keep && nd < 256) drop[nd++] = rk;
        }
        for (int i = 0; i < nd; i++) json_object_object_del(obj, drop[i]);
    }

    json_object_object_foreach(p, ok, ov) {
        if (!smp_has_prefix(ok, SMP_SEO)) continue;
        const char *field = ok + strlen(SMP_SEO);
        if (!ov) continue;
        if (smp_order(obj, field, ov, smp_field(t, field), c)) return -1;
    }
    return 0;
}

/* See jpatch.h. */
json_object *jp_strategic_merge(json_object *target, json_object *patch, aiq_err *err) {
    if (!patch || !json_object_is_type(patch, json_type_object)) {
        aiq_err_set(err, AIQ_EINVAL, "strategic merge patch: body must be a JSON object");
        return NULL;
    }
    json_object *kind = NULL;
    if (!target || !json_object_object_get_ex(target, "kind", &kind))
        json_object_object_get_ex(patch, "kind", &kind);
    const char *k = kind && json_object_is_type(kind, json_type_string)
                        ? json_object_get_string(kind) : "";
    const struct smp_type *t = strcmp(k, "Pod") == 0    ? &smp_pod
                               : strcmp(k, "Node") == 0 ? &smp_node
                                                        : &smp_generic;
    struct smp_ctx c = {.err = err};
    json_object *doc = jp__copy(target);
    if (target && !doc) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    int r = smp_map(&doc, patch, t, &c, 0);
    if (r == 1) {
        c.len = 0;
        smp_fail(&c, AIQ_EINVAL, "$patch: delete of the whole object", NULL);
        r = -1;
    }
    if (r < 0) {
        json_object_put(doc);
        return NULL;
    }
    return doc;
}
