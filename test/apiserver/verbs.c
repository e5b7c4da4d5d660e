/* verbs.c -- the resource verbs over HTTP: list (label and field
 * selectors, limit/continue, Table output), get, create, update, the four
 * patch types (merge, JSON patch, strategic merge for built-in kinds only,
 * server-side apply that merges and forgets what a manager stopped
 * applying), delete and deletecollection, each on the main resource or
 * its status subresource, with dryRun and fieldValidation. Lock held. */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/apiserver/jpatch.h"
#include "test/apiserver/selector.h"
#include "common/json.h"

#define VERBS_MAX_LIMIT 100000

/* Go's UTF-8 decoding as encoding/json applies it to strings: each byte
 * that does not start a valid sequence becomes U+FFFD. Returns a malloc'd
 * copy with the replacements (length in *outlen), or NULL when in is
 * valid already (or memory ran out: the body is then parsed as is and
 * json-c keeps the bytes). */
static char *verbs_utf8_fix(const char *in, size_t len, size_t *outlen) {
    const unsigned char *p = (const unsigned char *)in;
    char *out = NULL;
    size_t i = 0, o = 0;
    bool bad = false;
    for (int pass = 0; pass < 2; pass++) {
        for (i = 0, o = 0; i < len;) {
            unsigned char c = p[i];
            size_t n = 0;
            if (c < 0x80) n = 1;
            else if (c >= 0xc2 && c <= 0xdf) n = i + 1 < len && (p[i + 1] & 0xc0) == 0x80 ? 2 : 0;
            else if (c >= 0xe0 && c <= 0xef) {
                unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
                n = i + 2 < len && p[i + 1] >= lo && p[i + 1] <= hi && (p[i + 2] & 0xc0) == 0x80 ? 3 : 0;
            } else if (c >= 0xf0 && c <= 0xf4) {
                unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
                n = i + 3 < len && p[i + 1] >= lo && p[i + 1] <= hi && (p[i + 2] & 0xc0) == 0x80 &&
                            (p[i + 3] & 0xc0) == 0x80 ? 4 : 0;
            }
            if (n == 0) {
                bad = true;
                if (out) memcpy(out + o, "\xef\xbf\xbd", 3);
                o += 3;
                i++;
            } else {
                if (out) memcpy(out + o, p + i, n);
                o += n;
                i += n;
            }
        }
        if (!bad || pass == 1) break;
        if (!(out = malloc(o + 1))) return NULL;
    }
    if (!out) return NULL;
    out[o] = 0;
    *outlen = o;
    return out;
}

/* Go's encoding/json nesting rule: the offset of the '{' or '[' that
 * opens more than APISRV__MAX_JSON_DEPTH containers at once, or -1. (json-c
 * counts a scalar inside the innermost object as a level too, so its own
 * limit is set above ours and this scan decides.) */
static long verbs_too_deep(const char *s, size_t len) {
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > APISRV__MAX_JSON_DEPTH) return (long)i;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return -1;
}

/* Parses the request body as one JSON value (nested at most
 * APISRV__MAX_JSON_DEPTH deep, invalid UTF-8 replaced as Go's decoder
 * does); NULL with a 400 in w. kind names the expected object in the
 * real server's message for a body nested too deep. */
static json_object *verbs_body_kind(struct apisrv__req *r, struct apisrv__resp *w, const char *kind) {
    json_tokener *tok;
    json_object *o = NULL;
    size_t len = r->len;
    char *fixed;
    const char *text = r->body;
    if (!r->body || r->len == 0) {
        apisrv__resp_err(w, 400, "BadRequest", "the request body is empty");
        return NULL;
    }
    fixed = verbs_utf8_fix(r->body, r->len, &len);
    if (fixed) text = fixed;
    long deep = verbs_too_deep(text, len);
    if (deep >= 0) {
        apisrv__resp_err(w, 400, "BadRequest",
                         "the object provided is unrecognized (must be of type %s): couldn't get "
                         "version/kind; json parse error: invalid character '%c' exceeded max depth "
                         "(%.30s ...)", kind, text[deep], text);
        free(fixed);
        return NULL;
    }
    tok = apisrv__tokener();
    if (!tok) {
        free(fixed);
        apisrv__resp_err(w, 500, "InternalError", "out of memory");
        return NULL;
    }
    o = json_tokener_parse_ex(tok, text, (int)len);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        apisrv__resp_err(w, 400, "BadRequest",
                         "the body of the request could not be decoded as JSON at byte %zu: %s",
                         json_tokener_get_parse_end(tok),
                         json_tokener_error_desc(json_tokener_get_error(tok)));
        json_object_put(o);
        o = NULL;
    }
    json_tokener_reset(tok);
    free(fixed);
    return o;
}

static json_object *verbs_body(struct apisrv__req *r, struct apisrv__resp *w) {
    return verbs_body_kind(r, w, "object");
}

static bool verbs_ctype_is(const struct apisrv__req *r, const char *want) {
    size_t n = strlen(want);
    return r->ctype && !strncmp(r->ctype, want, n) &&
           (r->ctype[n] == 0 || r->ctype[n] == ';' || r->ctype[n] == ' ');
}

static void verbs_opts(struct apisrv__req *r, const struct apisrv__target *tg,
                       struct apisrv__wopts *o) {
    const char *dry = apisrv__q(r, "dryRun"), *fv = apisrv__q(r, "fieldValidation");
    memset(o, 0, sizeof *o);
    o->dry_run = dry && !strcmp(dry, "All");
    o->strict = fv && !strcmp(fv, "Strict");
    o->status_only = tg->sub != NULL;
    o->manager = apisrv__q(r, "fieldManager");
    o->propagation = apisrv__q(r, "propagationPolicy");
    o->user = &r->user;   /* HTTP writes go through admission */
    const char *g = apisrv__q(r, "gracePeriodSeconds");
    if (g && g[0]) {
        char *end;
        long long v = strtoll(g, &end, 10);
        if (!*end) {
            o->has_grace = true;
            o->grace = v;
        }
    }
}

/* See apisrv_int.h. */
int apisrv__selectors(struct apisrv__req *r, struct sel **ls, struct sel **fs,
                      struct apisrv__resp *w) {
    aiq_err err;
    aiq_err_clear(&err);
    *ls = *fs = NULL;
    const char *l = apisrv__q(r, "labelSelector"), *f = apisrv__q(r, "fieldSelector");
    if (l && l[0] && !(*ls = sel_parse_labels(l, &err))) {
        apisrv__resp_err(w, 400, "BadRequest", "unable to parse requirement: %s", err.message);
        return -1;
    }
    if (f && f[0] && !(*fs = sel_parse_fields(f, &err))) {
        sel_free(*ls);
        *ls = NULL;
        apisrv__resp_err(w, 400, "BadRequest", "invalid field selector: %s", err.message);
        return -1;
    }
    return 0;
}

static void verbs_send_obj(apisrv *s, struct apisrv__req *r, const struct apisrv__type *t,
                           struct apisrv__resp *w, int code, json_object *obj) {
    if (apisrv__wants_table(r) && !strcmp(r->method, "GET")) {
        json_object *items = json_object_new_array();
        json_object_array_add(items, json_object_get(obj));
        json_object *tab = apisrv__table(s, t, items, apisrv__q(r, "includeObject"), true);
        apisrv__resp_json(w, code, tab);
        json_object_put(tab);
        json_object_put(items);
        return;
    }
    const char *text = apisrv__last_text(s, obj);
    if (text) apisrv__resp_text(w, code, "application/json", text);
    else apisrv__resp_json(w, code, obj);
}

static void verbs_send_st(struct apisrv__resp *w, struct apisrv__st *st) {
    apisrv__resp_status(w, st);
    apisrv__st_deinit(st);
}

/* ---- list ------------------------------------------------------------------ */

/* A list's items as JSON text, joined with commas. */
struct list_text {
    char *p;
    size_t len, cap;
    bool nomem;
};

static void list_text_add(struct list_text *b, const char *s, size_t n) {
    if (b->nomem) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->nomem = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* One scan of a list: items either parsed (items, for a Table) or kept
 * as the stored text (text): an object is parsed only when a selector
 * must look into it, and never written out again. */
struct list_ctx {
    struct sel *ls, *fs;
    json_object *items;
    struct list_text text;
    long limit, n;
    char cont[600];
    bool more;
};

static int list_row(void *u, const char *key, const char *ns, const char *name,
                    const char *json) {
    struct list_ctx *c = u;
    json_object *o = NULL;
    (void)key;
    if (c->items || c->ls || c->fs) {
        o = apisrv__parse(json);
        if (!o) return 0;
        if (!sel_match(c->ls, o) || !sel_match(c->fs, o)) {
            json_object_put(o);
            return 0;
        }
    }
    if (c->limit > 0 && c->n == c->limit) {
        c->more = true;
        json_object_put(o);
        return 1;
    }
    if (c->items) {
        json_object_array_add(c->items, o);
    } else {
        json_object_put(o);
        if (c->n) list_text_add(&c->text, ",", 1);
        list_text_add(&c->text, json, strlen(json));
    }
    c->n++;
    snprintf(c->cont, sizeof c->cont, "%s/%s", ns, name);
    return 0;
}

/* The list answer from the items' text: {"kind":..,"apiVersion":..,
 * "metadata":md,"items":[text]}. */
static void list_text_resp(struct apisrv__resp *w, const char *kind, const char *gv,
                           json_object *md, struct list_text *items) {
    struct list_text b = {0};
    char head[512];
    int n = snprintf(head, sizeof head, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":",
                     kind, gv);
    const char *m = json_object_to_json_string_ext(md, JSON_C_TO_STRING_PLAIN);
    list_text_add(&b, head, (size_t)n);
    list_text_add(&b, m, strlen(m));
    list_text_add(&b, ",\"items\":[", 10);
    if (items->p) list_text_add(&b, items->p, items->len);
    list_text_add(&b, "]}", 2);
    if (b.nomem || items->nomem) {
        free(b.p);
        apisrv__resp_err(w, 500, "InternalError", "out of memory building the list");
        return;
    }
    apisrv__resp_take(w, 200, "application/json", b.p, b.len);
}

static void verbs_list(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                       struct apisrv__resp *w) {
    struct list_ctx c = {0};
    const struct apisrv__type *t = tg->t;
    const char *lim = apisrv__q(r, "limit"), *cont = apisrv__q(r, "continue");
    char after_ns[300] = "", *after_name = NULL, rvs[32], gv[256];
    const char *one;
    if (apisrv__selectors(r, &c.ls, &c.fs, w)) return;
    if (lim && lim[0]) {
        char *end;
        c.limit = strtol(lim, &end, 10);
        if (*end || c.limit < 0) c.limit = 0;
        if (c.limit > VERBS_MAX_LIMIT) c.limit = VERBS_MAX_LIMIT;
    }
    if (cont && cont[0]) {
        const char *slash = strchr(cont, '/');
        if (!slash || (size_t)(slash - cont) >= sizeof after_ns) {
            apisrv__resp_err(w, 400, "BadRequest", "invalid continue token %.100s", cont);
            goto out;
        }
        memcpy(after_ns, cont, (size_t)(slash - cont));
        after_ns[slash - cont] = 0;
        after_name = (char *)slash + 1;
    }
    bool table = apisrv__wants_table(r);
    if (table) c.items = json_object_new_array();
    one = sel_required_value(c.fs, "metadata.name");
    if (one && !after_name) {
        const char *nsq = tg->ns ? tg->ns : sel_required_value(c.fs, "metadata.namespace");
        if (t->namespaced && !nsq) {
            apisrv__store_scan(s, t->key, NULL, NULL, NULL, list_row, &c);
        } else {
            json_object *o = apisrv__store_get(s, t->key, t->namespaced ? nsq : NULL, one);
            if (o && sel_match(c.ls, o) && sel_match(c.fs, o)) {
                if (table) {
                    json_object_array_add(c.items, o);
                    o = NULL;
                } else {
                    const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                    list_text_add(&c.text, txt, strlen(txt));
                }
            }
            json_object_put(o);
        }
    } else {
        apisrv__store_scan(s, t->key, tg->ns, after_name ? after_ns : NULL, after_name,
                           list_row, &c);
    }
    snprintf(rvs, sizeof rvs, "%lld", s->rv);
    json_object *out, *md = json_object_new_object();
    json_object_object_add(md, "resourceVersion", json_object_new_string(rvs));
    if (c.more) json_object_object_add(md, "continue", json_object_new_string(c.cont));
    if (table) {
        out = apisrv__table(s, t, c.items, apisrv__q(r, "includeObject"), true);
        json_object_object_add(out, "metadata", md);
        apisrv__resp_json(w, 200, out);
        json_object_put(out);
    } else {
        char kind[128];
        snprintf(kind, sizeof kind, "%sList", t->kind);
        if (t->group[0]) snprintf(gv, sizeof gv, "%s/%s", t->group, t->version);
        else snprintf(gv, sizeof gv, "%s", t->version);
        list_text_resp(w, kind, gv, md, &c.text);
        json_object_put(md);
    }
out:
    free(c.text.p);
    json_object_put(c.items);
    sel_free(c.ls);
    sel_free(c.fs);
}

/* ---- patch ------------------------------------------------------------------- */

/* The merge patch that turns what a manager applied before (prev) into
 * what it applies now (cur): cur plus a null for every field prev set and
 * cur no longer does, recursively through objects. New reference. */
static json_object *verbs_ssa_patch(json_object *prev, json_object *cur) {
    json_object *out = NULL;
    if (json_object_deep_copy(cur, &out, NULL) != 0) return NULL;
    if (!prev || !json_object_is_type(prev, json_type_object) ||
        !json_object_is_type(cur, json_type_object))
        return out;
    json_object_object_foreach(prev, k, pv) {
        json_object *cv;
        if (!json_object_object_get_ex(cur, k, &cv)) {
            json_object_object_add(out, k, NULL);
        } else if (json_object_is_type(pv, json_type_object) &&
                   json_object_is_type(cv, json_type_object)) {
            json_object_object_add(out, k, verbs_ssa_patch(pv, cv));
        }
    }
    return out;
}

static void verbs_patch(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                        struct apisrv__resp *w) {
    const struct apisrv__type *t = tg->t;
    struct apisrv__wopts o;
    struct apisrv__st st;
    aiq_err err;
    json_object *patch = NULL, *old = NULL, *nw = NULL, *out = NULL, *ssa = NULL;
    bool apply = verbs_ctype_is(r, "application/apply-patch+yaml");
    const char *ns = t->namespaced ? (tg->ns ? tg->ns : "default") : NULL;
    apisrv__st_init(&st);
    aiq_err_clear(&err);
    verbs_opts(r, tg, &o);
    if (!apply && !verbs_ctype_is(r, "application/merge-patch+json") &&
        !verbs_ctype_is(r, "application/json-patch+json") &&
        !(verbs_ctype_is(r, "application/strategic-merge-patch+json") && !t->custom)) {
        apisrv__resp_err(w, 415, "UnsupportedMediaType",
                         "the body of the request was in an unknown format - accepted media types "
                         "include: application/json-patch+json, application/merge-patch+json, "
                         "application/apply-patch+yaml%s",
                         t->custom ? "" : ", application/strategic-merge-patch+json");
        return;
    }
    if (!(patch = verbs_body(r, w))) return;
    old = apisrv__store_get(s, t->key, ns, tg->name);
    if (apply) {
        const char *mgr = o.manager;
        if (!mgr || !mgr[0]) {
            apisrv__resp_err(w, 422, "Invalid",
                             "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                             "is required for apply patch");
            goto out;
        }
        if (!json_object_is_type(patch, json_type_object)) {
            apisrv__resp_err(w, 400, "BadRequest", "an apply patch must be a JSON object");
            goto out;
        }
        if (!old) {
            if (tg->sub) {
                apisrv__st_notfound(&st, t, tg->name);
                verbs_send_st(w, &st);
                goto out;
            }
            json_object *body = NULL;
            json_object_deep_copy(patch, &body, NULL);
            json_object_object_add(apisrv__obj_child(body, "metadata"), "name",
                                   json_object_new_string(tg->name));
            if (apisrv__create(s, t, ns, body, &o, &out, &st)) {
                verbs_send_st(w, &st);
                goto out;
            }
            if (!o.dry_run)
                apisrv__store_applied_put(s, t->key, ns, tg->name, mgr, patch);
            verbs_send_obj(s, r, t, w, 201, out);
            goto out;
        }
        json_object *prev = apisrv__store_applied_get(s, t->key, ns, tg->name, mgr);
        ssa = verbs_ssa_patch(prev, patch);
        json_object_put(prev);
        nw = ssa ? jp_merge_patch(old, ssa, &err) : NULL;
    } else {
        if (!old) {
            apisrv__st_notfound(&st, t, tg->name);
            verbs_send_st(w, &st);
            goto out;
        }
        if (verbs_ctype_is(r, "application/merge-patch+json"))
            nw = jp_merge_patch(old, patch, &err);
        else if (verbs_ctype_is(r, "application/json-patch+json"))
            nw = jp_json_patch(old, patch, &err);
        else
            nw = jp_strategic_merge(old, patch, &err);
    }
    if (!nw) {
        apisrv__resp_err(w, 422, "Invalid", "%s", err.message[0] ? err.message : "the patch could not be applied");
        goto out;
    }
    if (json_object_is_type(nw, json_type_object) &&
        !aiq_jpath_str(nw, "metadata.resourceVersion") && aiq_jpath_str(old, "metadata.resourceVersion"))
        /* a patch is conditional only when it names a resourceVersion */
        json_object_object_add(apisrv__obj_child(nw, "metadata"), "resourceVersion",
                               json_object_new_string(aiq_jpath_str(old, "metadata.resourceVersion")));
    if (apisrv__update_cur(s, t, ns, tg->name, nw, old, &o, &out, &st)) {
        verbs_send_st(w, &st);
        goto out;
    }
    if (apply && !o.dry_run)
        apisrv__store_applied_put(s, t->key, ns, tg->name, o.manager, patch);
    verbs_send_obj(s, r, t, w, 200, out);
out:
    json_object_put(out);
    json_object_put(ssa);
    json_object_put(old);
    json_object_put(patch);
    apisrv__st_deinit(&st);
}

/* ---- the rest ------------------------------------------------------------------ */

static void verbs_delete(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                         struct apisrv__resp *w) {
    struct apisrv__wopts o;
    struct apisrv__st st;
    json_object *body = NULL, *out = NULL, *v;
    const char *ns = tg->t->namespaced ? (tg->ns ? tg->ns : "default") : NULL;
    char prop[256] = "";
    apisrv__st_init(&st);
    verbs_opts(r, tg, &o);
    if (r->len > 0) {
        if (!(body = verbs_body(r, w))) return;
        if (json_object_object_get_ex(body, "propagationPolicy", &v))
            snprintf(prop, sizeof prop, "%s", json_object_get_string(v));
        if (json_object_object_get_ex(body, "dryRun", &v) &&
            json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0)
            o.dry_run = !strcmp(json_object_get_string(json_object_array_get_idx(v, 0)), "All");
        if (prop[0]) o.propagation = prop;
        /* DeleteOptions: the body's grace period wins over the query's */
        if (json_object_object_get_ex(body, "gracePeriodSeconds", &v) && v &&
            (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
            o.has_grace = true;
            o.grace = json_object_get_int64(v);
        }
        if (json_object_object_get_ex(body, "preconditions", &v) && v) {
            json_object *p;
            if (json_object_object_get_ex(v, "uid", &p) && json_object_is_type(p, json_type_string))
                o.uid_pre = json_object_get_string(p);
            if (json_object_object_get_ex(v, "resourceVersion", &p) && json_object_is_type(p, json_type_string))
                o.rv_pre = json_object_get_string(p);
        }
    }
    if (o.propagation && strcmp(o.propagation, "Foreground") && strcmp(o.propagation, "Background") &&
        strcmp(o.propagation, "Orphan")) {
        /* ValidateDeleteOptions: the handler's check, before any lookup */
        char q[300];
        apisrv__go_quote(o.propagation, q, sizeof q);
        apisrv__st_cause(&st, "FieldValueNotSupported", "propagationPolicy",
                         "Unsupported value: %s: supported values: \"Foreground\", \"Background\", "
                         "\"Orphan\", \"nil\"", q);
        apisrv__st_set(&st, 422, "Invalid", "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: "
                       "Unsupported value: %s: supported values: \"Foreground\", \"Background\", \"Orphan\", "
                       "\"nil\"", q);
        snprintf(st.group, sizeof st.group, "meta.k8s.io");
        snprintf(st.kind, sizeof st.kind, "DeleteOptions");
        verbs_send_st(w, &st);
        goto out;
    }
    if (tg->name) {
        if (apisrv__delete(s, tg->t, ns, tg->name, &o, &out, &st)) verbs_send_st(w, &st);
        else apisrv__resp_json(w, 200, out);
    } else {
        struct list_ctx c = {0};
        if (apisrv__selectors(r, &c.ls, &c.fs, w)) goto out;
        c.items = json_object_new_array();
        apisrv__store_scan(s, tg->t->key, tg->ns, NULL, NULL, list_row, &c);
        for (size_t i = 0; i < json_object_array_length(c.items); i++) {
            json_object *it = json_object_array_get_idx(c.items, i);
            const char *ins = aiq_jpath_str(it, "metadata.namespace");
            apisrv__delete(s, tg->t, ins, aiq_jpath_str(it, "metadata.name"), &o, NULL, &st);
            apisrv__st_deinit(&st);
        }
        json_object_put(c.items);
        sel_free(c.ls);
        sel_free(c.fs);
        st.code = 200;
        verbs_send_st(w, &st);
    }
out:
    json_object_put(out);
    json_object_put(body);
    apisrv__st_deinit(&st);
}

/* POST pods/NAME/binding (binding.c); a Status Success 201 when bound. */
static void verbs_binding(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                          struct apisrv__resp *w) {
    struct apisrv__wopts o;
    struct apisrv__st st;
    json_object *b;
    if (strcmp(r->method, "POST")) {
        apisrv__resp_err(w, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
        return;
    }
    if (!(b = verbs_body_kind(r, w, "Binding"))) return;
    verbs_opts(r, tg, &o);
    apisrv__st_init(&st);
    if (apisrv__pod_bind(s, tg->ns ? tg->ns : "default", tg->name, b, o.dry_run, &st) == 0) st.code = 201;
    verbs_send_st(w, &st);
    json_object_put(b);
}

/* See apisrv_int.h. */
void apisrv__verb(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                  struct apisrv__resp *w) {
    const char *m = r->method;
    const struct apisrv__type *t = tg->t;
    const char *ns = t->namespaced ? (tg->ns ? tg->ns : "default") : NULL;
    struct apisrv__wopts o;
    struct apisrv__st st;
    json_object *obj, *out = NULL;
    apisrv__st_init(&st);
    verbs_opts(r, tg, &o);
    if (tg->sub && !strcmp(tg->sub, "binding")) {
        verbs_binding(s, r, tg, w);
        return;
    }
    if (!strcmp(m, "GET")) {
        const char *wq = apisrv__q(r, "watch");
        if (wq && (!strcmp(wq, "true") || !strcmp(wq, "1"))) {
            apisrv__watch_start(s, r, tg, w);
        } else if (tg->name) {
            obj = apisrv__store_get(s, t->key, ns, tg->name);
            if (!obj) {
                apisrv__st_notfound(&st, t, tg->name);
                verbs_send_st(w, &st);
                return;
            }
            verbs_send_obj(s, r, t, w, 200, obj);
            json_object_put(obj);
        } else {
            verbs_list(s, r, tg, w);
        }
        return;
    }
    if (!strcmp(m, "DELETE")) {
        verbs_delete(s, r, tg, w);
        return;
    }
    if (strcmp(m, "POST") && strcmp(m, "PUT") && strcmp(m, "PATCH")) {
        apisrv__resp_err(w, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
        return;
    }
    if (r->ctype && strstr(r->ctype, "protobuf")) {
        apisrv__resp_err(w, 415, "UnsupportedMediaType",
                         "the body of the request was in an unknown format - accepted media types "
                         "include: application/json, application/yaml");
        return;
    }
    if (!strcmp(m, "PATCH")) {
        if (!tg->name) {
            apisrv__resp_err(w, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
            return;
        }
        verbs_patch(s, r, tg, w);
        return;
    }
    if (!strcmp(m, "POST") && (tg->name || tg->sub)) {
        apisrv__resp_err(w, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
        return;
    }
    if (!strcmp(m, "PUT") && !tg->name) {
        apisrv__resp_err(w, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
        return;
    }
    if (!(obj = verbs_body_kind(r, w, t->kind))) return;
    if (!strcmp(m, "POST")) {
        if (apisrv__create(s, t, tg->ns, obj, &o, &out, &st)) verbs_send_st(w, &st);
        else apisrv__resp_json(w, 201, out);
    } else {
        if (apisrv__update(s, t, ns, tg->name, obj, &o, &out, &st)) verbs_send_st(w, &st);
        else apisrv__resp_json(w, 200, out);
    }
    json_object_put(out);
    apisrv__st_deinit(&st);
}
