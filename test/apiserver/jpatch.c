/* jpatch.c -- JSON merge patch (RFC 7386), JSON patch (RFC 6902) with JSON
 * pointers (RFC 6901), and deep JSON equality. Every function works on a
 * deep copy of the target so a failed patch leaves the input untouched. */
#include "test/apiserver/jpatch.h"
#include "test/apiserver/jpatch_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* See jpatch_int.h. */
json_object *jp__copy(json_object *o) {
    json_object *d = NULL;
    if (!o) return NULL;
    if (json_object_deep_copy(o, &d, NULL) != 0) return NULL;
    return d;
}

/* See jpatch_int.h. */
int jp__array_insert(json_object *arr, size_t idx, json_object *val) {
    size_t n = json_object_array_length(arr);
    if (idx > n) {
        json_object_put(val);
        return -1;
    }
    if (idx == n) {
        if (json_object_array_add(arr, val) != 0) {
            json_object_put(val);
            return -1;
        }
        return 0;
    }
    /* Grow by one holding a second reference to the last element, shift
     * right by re-pointing each slot, then overwrite idx. */
    if (json_object_array_add(arr, json_object_get(json_object_array_get_idx(arr, n - 1))) != 0) {
        json_object_put(json_object_array_get_idx(arr, n - 1));
        json_object_put(val);
        return -1;
    }
    for (size_t i = n - 1; i > idx; i--)
        json_object_array_put_idx(arr, i, json_object_get(json_object_array_get_idx(arr, i - 1)));
    json_object_array_put_idx(arr, idx, val);
    return 0;
}

static int jp_is_num(json_object *o) {
    return json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double);
}

/* See jpatch.h. */
int jp_equal(json_object *a, json_object *b) {
    int an = !a || json_object_is_type(a, json_type_null);
    int bn = !b || json_object_is_type(b, json_type_null);
    if (an || bn) return an && bn;
    if (jp_is_num(a) && jp_is_num(b)) {
        if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int))
            return json_object_get_int64(a) == json_object_get_int64(b);
        return json_object_get_double(a) == json_object_get_double(b);
    }
    if (json_object_get_type(a) != json_object_get_type(b)) return 0;
    switch (json_object_get_type(a)) {
    case json_type_boolean:
        return json_object_get_boolean(a) == json_object_get_boolean(b);
    case json_type_string:
        return json_object_get_string_len(a) == json_object_get_string_len(b) &&
               memcmp(json_object_get_string(a), json_object_get_string(b),
                      (size_t)json_object_get_string_len(a)) == 0;
    case json_type_array: {
        size_t n = json_object_array_length(a);
        if (n != json_object_array_length(b)) return 0;
        for (size_t i = 0; i < n; i++)
            if (!jp_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i)))
                return 0;
        return 1;
    }
    case json_type_object: {
        if (json_object_object_length(a) != json_object_object_length(b)) return 0;
        json_object_object_foreach(a, k, v) {
            json_object *w = NULL;
            if (!json_object_object_get_ex(b, k, &w)) return 0;
            if (!jp_equal(v, w)) return 0;
        }
        return 1;
    }
    default:
        return 0;
    }
}

/* ---- RFC 7386 ------------------------------------------------------------ */

/* Merges patch into t (takes ownership of t, may be NULL); returns the
 * result (new or t itself) or NULL on memory/depth failure. */
static json_object *jp_mp(json_object *t, json_object *p, int depth, aiq_err *err) {
    if (depth > JP_MAX_DEPTH) {
        json_object_put(t);
        aiq_err_set(err, AIQ_EINVAL, "merge patch nested deeper than %d levels", JP_MAX_DEPTH);
        return NULL;
    }
    if (!p || !json_object_is_type(p, json_type_object)) {
        json_object_put(t);
        if (!p) return NULL; /* JSON null at the top: treated as null doc */
        json_object *c = jp__copy(p);
        if (!c) aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return c;
    }
    if (!t || !json_object_is_type(t, json_type_object)) {
        json_object_put(t);
        t = json_object_new_object();
        if (!t) {
            aiq_err_set(err, AIQ_ENOMEM, "out of memory");
            return NULL;
        }
    }
    json_object_object_foreach(p, k, v) {
        if (!v || json_object_is_type(v, json_type_null)) {
            json_object_object_del(t, k);
            continue;
        }
        json_object *old = NULL;
        if (json_object_object_get_ex(t, k, &old) && old) json_object_get(old);
        json_object *nv = jp_mp(old, v, depth + 1, err);
        if (!nv) {
            json_object_put(t);
            return NULL;
        }
        if (nv == old)
            json_object_put(old); /* merged in place; t keeps its reference */
        else
            json_object_object_add(t, k, nv);
    }
    return t;
}

/* See jpatch.h. */
json_object *jp_merge_patch(json_object *target, json_object *patch, aiq_err *err) {
    if (!patch || json_object_is_type(patch, json_type_null)) {
        aiq_err_set(err, AIQ_EINVAL, "merge patch: body is null");
        return NULL;
    }
    json_object *t = jp__copy(target);
    if (target && !t) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    return jp_mp(t, patch, 0, err);
}

/* ---- RFC 6902 ------------------------------------------------------------ */

/* A parsed JSON pointer: tokens unescaped, stored in one buffer. */
struct jp_ptr {
    int n;
    char *tok[JP_MAX_DEPTH];
    char *buf;
};

static void jp_ptr_free(struct jp_ptr *p) { free(p->buf); }

/* Parses s into p: each '/' becomes the NUL ending the previous token
 * and the next token starts right after it. Returns NULL or a static
 * error message; p->buf must be freed with jp_ptr_free either way. */
static const char *jp_ptr_parse(const char *s, struct jp_ptr *p) {
    memset(p, 0, sizeof *p);
    if (*s == '\0') return NULL;
    if (*s != '/') return "JSON pointer must be empty or start with '/'";
    size_t n = strlen(s);
    p->buf = malloc(n + 1);
    if (!p->buf) return "out of memory";
    char *d = p->buf;
    for (const char *c = s; *c; c++) {
        if (*c == '/') {
            if (p->n == JP_MAX_DEPTH) return "JSON pointer too deep";
            *d++ = '\0';
            p->tok[p->n++] = d;
        } else if (*c == '~') {
            if (c[1] == '0') *d++ = '~';
            else if (c[1] == '1') *d++ = '/';
            else return "bad escape in JSON pointer (only ~0 and ~1)";
            c++;
        } else {
            *d++ = *c;
        }
    }
    *d = '\0';
    return NULL;
}

/* Parses an array index token; -2 for "-", -1 for invalid. */
static long jp_index(const char *t) {
    if (strcmp(t, "-") == 0) return -2;
    if (!*t || (t[0] == '0' && t[1]) || strlen(t) > 9) return -1;
    long v = 0;
    for (const char *c = t; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        v = v * 10 + (*c - '0');
    }
    return v;
}

struct jp_opctx {
    aiq_err *err;
    int idx;
    const char *op;
    const char *path;
};

static json_object *jp_fail(struct jp_opctx *c, aiq_rc rc, const char *what, const char *tok) {
    if (tok)
        aiq_err_field(c->err, rc, c->path, "json patch op %d (%s): path \"%s\": %s \"%s\"",
                      c->idx, c->op, c->path, what, tok);
    else
        aiq_err_field(c->err, rc, c->path, "json patch op %d (%s): path \"%s\": %s",
                      c->idx, c->op, c->path, what);
    return NULL;
}

/* Resolves tokens [0, upto) from doc; returns the borrowed value or NULL
 * with err filled. */
static json_object *jp_walk(json_object *doc, const struct jp_ptr *p, int upto,
                            struct jp_opctx *c) {
    json_object *o = doc;
    for (int i = 0; i < upto; i++) {
        if (o && json_object_is_type(o, json_type_object)) {
            json_object *v = NULL;
            if (!json_object_object_get_ex(o, p->tok[i], &v))
                return jp_fail(c, AIQ_EINVAL, "missing key", p->tok[i]);
            o = v;
        } else if (o && json_object_is_type(o, json_type_array)) {
            long ix = jp_index(p->tok[i]);
            if (ix < 0 || (size_t)ix >= json_object_array_length(o))
                return jp_fail(c, AIQ_EINVAL, "array index out of range or invalid", p->tok[i]);
            o = json_object_array_get_idx(o, (size_t)ix);
        } else {
            return jp_fail(c, AIQ_EINVAL, "cannot traverse a scalar at", p->tok[i]);
        }
        if (!o) return jp_fail(c, AIQ_EINVAL, "null value at", p->tok[i]);
    }
    return o;
}

/* Adds val (takes ownership) at p in *doc. */
static int jp_do_add(json_object **doc, const struct jp_ptr *p, json_object *val,
                     struct jp_opctx *c) {
    if (p->n == 0) {
        json_object_put(*doc);
        *doc = val;
        return 0;
    }
    json_object *parent = jp_walk(*doc, p, p->n - 1, c);
    const char *last = p->tok[p->n - 1];
    if (!parent) goto out_put;
    if (json_object_is_type(parent, json_type_object)) {
        json_object_object_add(parent, last, val);
        return 0;
    }
    if (json_object_is_type(parent, json_type_array)) {
        long ix = jp_index(last);
        size_t n = json_object_array_length(parent);
        if (ix == -2) ix = (long)n;
        if (ix < 0 || (size_t)ix > n) {
            jp_fail(c, AIQ_EINVAL, "array index out of range or invalid", last);
            goto out_put;
        }
        if (jp__array_insert(parent, (size_t)ix, val) != 0) {
            aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
            return -1;
        }
        return 0;
    }
    jp_fail(c, AIQ_EINVAL, "parent is not an object or array at", last);
out_put:
    json_object_put(val);
    return -1;
}

/* Removes the value at p; when out is non-NULL stores a new reference to
 * the removed value there. */
static int jp_do_remove(json_object **doc, const struct jp_ptr *p, json_object **out,
                        struct jp_opctx *c) {
    if (p->n == 0) {
        jp_fail(c, AIQ_EINVAL, "cannot remove the whole document", NULL);
        return -1;
    }
    json_object *parent = jp_walk(*doc, p, p->n - 1, c);
    const char *last = p->tok[p->n - 1];
    if (!parent) return -1;
    if (json_object_is_type(parent, json_type_object)) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(parent, last, &v)) {
            jp_fail(c, AIQ_EINVAL, "missing key", last);
            return -1;
        }
        if (out) *out = json_object_get(v);
        json_object_object_del(parent, last);
        return 0;
    }
    if (json_object_is_type(parent, json_type_array)) {
        long ix = jp_index(last);
        if (ix < 0 || (size_t)ix >= json_object_array_length(parent)) {
            jp_fail(c, AIQ_EINVAL, "array index out of range or invalid", last);
            return -1;
        }
        if (out) *out = json_object_get(json_object_array_get_idx(parent, (size_t)ix));
        json_object_array_del_idx(parent, (size_t)ix, 1);
        return 0;
    }
    jp_fail(c, AIQ_EINVAL, "parent is not an object or array at", last);
    return -1;
}

static const char *jp_str_member(json_object *op, const char *k) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(op, k, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* Applies one op to *doc. */
static int jp_apply_op(json_object **doc, json_object *op, struct jp_opctx *c) {
    int rc = -1;
    struct jp_ptr path, from;
    memset(&from, 0, sizeof from);
    memset(&path, 0, sizeof path);
    const char *perr;
    json_object *value = NULL;
    int has_value = json_object_object_get_ex(op, "value", &value);

    if ((perr = jp_ptr_parse(c->path, &path))) {
        jp_fail(c, AIQ_EINVAL, perr, NULL);
        goto out;
    }
    if (strcmp(c->op, "add") == 0 || strcmp(c->op, "replace") == 0) {
        if (!has_value) {
            jp_fail(c, AIQ_EINVAL, "missing \"value\"", NULL);
            goto out;
        }
        if (c->op[0] == 'r' && path.n > 0) {
            json_object *old = NULL;
            if (jp_do_remove(doc, &path, &old, c)) goto out;
            /* replace keeps the array position: re-insert where it was */
            json_object_put(old);
        }
        json_object *cp = value ? jp__copy(value) : NULL;
        if (value && !cp) {
            aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
            goto out;
        }
        rc = jp_do_add(doc, &path, cp, c);
    } else if (strcmp(c->op, "remove") == 0) {
        rc = jp_do_remove(doc, &path, NULL, c);
    } else if (strcmp(c->op, "move") == 0 || strcmp(c->op, "copy") == 0) {
        const char *fs = jp_str_member(op, "from");
        if (!fs) {
            jp_fail(c, AIQ_EINVAL, "missing \"from\"", NULL);
            goto out;
        }
        if ((perr = jp_ptr_parse(fs, &from))) {
            jp_fail(c, AIQ_EINVAL, perr, fs);
            goto out;
        }
        json_object *v = NULL;
        if (c->op[0] == 'm') {
            size_t fl = strlen(fs);
            if (strncmp(c->path, fs, fl) == 0 && c->path[fl] == '/') {
                jp_fail(c, AIQ_EINVAL, "cannot move a value into its own child, from", fs);
                goto out;
            }
            if (strcmp(c->path, fs) == 0) {
                rc = jp_walk(*doc, &from, from.n, c) ? 0 : -1;
                goto out;
            }
            if (jp_do_remove(doc, &from, &v, c)) goto out;
        } else {
            json_object *src = jp_walk(*doc, &from, from.n, c);
            if (!src) goto out;
            v = jp__copy(src);
            if (!v) {
                aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
                goto out;
            }
        }
        rc = jp_do_add(doc, &path, v, c);
    } else if (strcmp(c->op, "test") == 0) {
        if (!has_value) {
            jp_fail(c, AIQ_EINVAL, "missing \"value\"", NULL);
            goto out;
        }
        json_object *cur = jp_walk(*doc, &path, path.n, c);
        if (!cur && path.n > 0) goto out;
        if (!jp_equal(cur, value)) {
            jp_fail(c, AIQ_ECONFLICT, "test failed: value differs", NULL);
            goto out;
        }
        rc = 0;
    } else {
        jp_fail(c, AIQ_EINVAL, "unknown op (add, remove, replace, move, copy, test)", NULL);
    }
out:
    jp_ptr_free(&path);
    jp_ptr_free(&from);
    return rc;
}

/* See jpatch.h. */
json_object *jp_json_patch(json_object *target, json_object *ops, aiq_err *err) {
    if (!ops || !json_object_is_type(ops, json_type_array)) {
        aiq_err_set(err, AIQ_EINVAL, "json patch: body must be a JSON array of operations");
        return NULL;
    }
    size_t n = json_object_array_length(ops);
    if (n > JP_MAX_OPS) {
        aiq_err_set(err, AIQ_ETOOBIG, "json patch: %zu operations (max %d)", n, JP_MAX_OPS);
        return NULL;
    }
    json_object *doc = jp__copy(target);
    if (target && !doc) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *op = json_object_array_get_idx(ops, i);
        struct jp_opctx c = {err, (int)i, "?", "?"};
        if (!op || !json_object_is_type(op, json_type_object)) {
            aiq_err_set(err, AIQ_EINVAL, "json patch op %zu: not an object", i);
            goto out_free;
        }
        c.op = jp_str_member(op, "op");
        c.path = jp_str_member(op, "path");
        if (!c.op || !c.path) {
            aiq_err_set(err, AIQ_EINVAL, "json patch op %zu: missing \"%s\"", i,
                        !c.op ? "op" : "path");
            goto out_free;
        }
        if (jp_apply_op(&doc, op, &c)) goto out_free;
    }
    return doc;
out_free:
    json_object_put(doc);
    return NULL;
}
