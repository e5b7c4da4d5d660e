/* jsonpath.c -- a small walker for Kubernetes printer-column JSONPath:
 * dotted fields, quoted bracket keys, array indexes and one-level
 * [?(@.x.y==lit)] filters. No allocation: every step reads the path in
 * place and the result is borrowed from the input object. */
#include "test/apiserver/jsonpath.h"

#include <stdlib.h>
#include <string.h>

/* A cursor over the path text. */
struct jpath_cur {
    const char *p, *end;
    int err;
};

/* Looks up key [k, k+n) in object o; NULL when absent or o not object. */
static json_object *jpath_field(json_object *o, const char *k, size_t n) {
    if (!o || !json_object_is_type(o, json_type_object) || n >= 512) return NULL;
    char key[512];
    memcpy(key, k, n);
    key[n] = '\0';
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v)) return NULL;
    return v;
}

static int jpath_is_name_char(char c) {
    return c != '.' && c != '[' && c != ']' && c != '\0' && c != '=' &&
           c != '!' && c != ')' && c != '<' && c != '>' && c != ' ';
}

/* Walks a dotted path of plain names ("@.a.b" after the '@') starting at
 * o; stops at the first char that cannot start a step. */
static json_object *jpath_walk_simple(json_object *o, struct jpath_cur *c) {
    while (c->p < c->end && *c->p == '.') {
        c->p++;
        const char *s = c->p;
        while (c->p < c->end && jpath_is_name_char(*c->p)) c->p++;
        if (c->p == s) {
            c->err = 1;
            return NULL;
        }
        o = jpath_field(o, s, (size_t)(c->p - s));
    }
    return o;
}

/* Compares element value v with a literal [l, l+n): quoted string, number,
 * true/false/null. Returns 1 when equal. */
static int jpath_lit_eq(json_object *v, const char *l, size_t n) {
    if (n >= 2 && (l[0] == '"' || l[0] == '\'') && l[n - 1] == l[0]) {
        if (!v || !json_object_is_type(v, json_type_string)) return 0;
        const char *s = json_object_get_string(v);
        return strlen(s) == n - 2 && memcmp(s, l + 1, n - 2) == 0;
    }
    if (n == 4 && memcmp(l, "true", 4) == 0)
        return v && json_object_is_type(v, json_type_boolean) &&
               json_object_get_boolean(v);
    if (n == 5 && memcmp(l, "false", 5) == 0)
        return v && json_object_is_type(v, json_type_boolean) &&
               !json_object_get_boolean(v);
    if (n == 4 && memcmp(l, "null", 4) == 0)
        return !v || json_object_is_type(v, json_type_null);
    if (!v || !(json_object_is_type(v, json_type_int) ||
                json_object_is_type(v, json_type_double)))
        return 0;
    char num[64];
    if (n >= sizeof num) return 0;
    memcpy(num, l, n);
    num[n] = '\0';
    char *e;
    double d = strtod(num, &e);
    if (*e) return 0;
    return json_object_get_double(v) == d;
}

/* Parses "?(@.path OP literal)" at c->p (after '[') and returns the first
 * element of array a that matches. c->p ends after the ')'. */
static json_object *jpath_filter(json_object *a, struct jpath_cur *c) {
    /* c->p points at '?' */
    if (c->end - c->p < 4 || c->p[1] != '(' || c->p[2] != '@') {
        c->err = 1;
        return NULL;
    }
    c->p += 3;
    const char *path_start = c->p;
    struct jpath_cur probe = {c->p, c->end, 0};
    jpath_walk_simple(NULL, &probe);
    if (probe.err) {
        c->err = 1;
        return NULL;
    }
    const char *path_end = probe.p;
    c->p = path_end;
    while (c->p < c->end && *c->p == ' ') c->p++;
    int neg = 0, exists_only = 0;
    if (c->end - c->p >= 2 && c->p[0] == '=' && c->p[1] == '=') {
        c->p += 2;
    } else if (c->end - c->p >= 2 && c->p[0] == '!' && c->p[1] == '=') {
        neg = 1;
        c->p += 2;
    } else if (c->p < c->end && *c->p == ')') {
        exists_only = 1;
    } else {
        c->err = 1;
        return NULL;
    }
    while (c->p < c->end && *c->p == ' ') c->p++;
    const char *lit = c->p;
    if (!exists_only) {
        if (c->p < c->end && (*c->p == '"' || *c->p == '\'')) {
            char q = *c->p++;
            while (c->p < c->end && *c->p != q) c->p++;
            if (c->p >= c->end) {
                c->err = 1;
                return NULL;
            }
            c->p++;
        } else {
            while (c->p < c->end && *c->p != ')' && *c->p != ' ') c->p++;
        }
    }
    size_t litn = (size_t)(c->p - lit);
    while (c->p < c->end && *c->p == ' ') c->p++;
    if (c->p >= c->end || *c->p != ')' || (!exists_only && litn == 0)) {
        c->err = 1;
        return NULL;
    }
    c->p++;
    if (!a || !json_object_is_type(a, json_type_array)) return NULL;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; i < n; i++) {
        json_object *el = json_object_array_get_idx(a, i);
        struct jpath_cur sub = {path_start, path_end, 0};
        json_object *v = jpath_walk_simple(el, &sub);
        int match = exists_only ? v != NULL : jpath_lit_eq(v, lit, litn) != neg;
        if (match) return el;
    }
    return NULL;
}

/* Walks the whole path; sets c->err on syntax errors. Missing values
 * continue to be parsed (o stays NULL) so syntax is always checked. */
static json_object *jpath_walk(json_object *o, struct jpath_cur *c) {
    while (c->p < c->end && !c->err) {
        if (*c->p == '.') {
            c->p++;
            const char *s = c->p;
            while (c->p < c->end && jpath_is_name_char(*c->p)) c->p++;
            if (c->p == s) {
                c->err = 1;
                break;
            }
            o = jpath_field(o, s, (size_t)(c->p - s));
        } else if (*c->p == '[') {
            c->p++;
            if (c->p < c->end && (*c->p == '\'' || *c->p == '"')) {
                char q = *c->p++;
                const char *s = c->p;
                while (c->p < c->end && *c->p != q) c->p++;
                if (c->p >= c->end || c->p + 1 >= c->end || c->p[1] != ']') {
                    c->err = 1;
                    break;
                }
                o = jpath_field(o, s, (size_t)(c->p - s));
                c->p += 2;
            } else if (c->p < c->end && *c->p == '?') {
                o = jpath_filter(o, c);
                if (c->err) break;
                if (c->p >= c->end || *c->p != ']') {
                    c->err = 1;
                    break;
                }
                c->p++;
            } else {
                int neg = 0;
                long idx = 0;
                int nd = 0;
                if (c->p < c->end && *c->p == '-') {
                    neg = 1;
                    c->p++;
                }
                while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && nd < 9) {
                    idx = idx * 10 + (*c->p - '0');
                    c->p++;
                    nd++;
                }
                if (nd == 0 || c->p >= c->end || *c->p != ']') {
                    c->err = 1;
                    break;
                }
                c->p++;
                if (o && json_object_is_type(o, json_type_array)) {
                    long n = (long)json_object_array_length(o);
                    if (neg) idx = n - idx;
                    o = (idx >= 0 && idx < n) ? json_object_array_get_idx(o, (size_t)idx)
                                              : NULL;
                } else {
                    o = NULL;
                }
            }
        } else {
            c->err = 1;
        }
    }
    return o;
}

/* Sets up a cursor over path, stripping one pair of braces. */
static int jpath_cursor(const char *path, struct jpath_cur *c) {
    if (!path) return -1;
    size_t n = strnlen(path, JPATH_MAX + 1);
    if (n == 0 || n > JPATH_MAX) return -1;
    c->p = path;
    c->end = path + n;
    c->err = 0;
    if (*c->p == '{') {
        if (c->end[-1] != '}') return -1;
        c->p++;
        c->end--;
    }
    if (c->p >= c->end || (*c->p != '.' && *c->p != '[')) return -1;
    return 0;
}

/* See jsonpath.h. */
json_object *jpath_get(json_object *obj, const char *path) {
    struct jpath_cur c;
    if (jpath_cursor(path, &c)) return NULL;
    json_object *v = jpath_walk(obj, &c);
    if (c.err) return NULL;
    if (v && json_object_is_type(v, json_type_null)) return NULL;
    return v;
}

/* See jsonpath.h. */
int jpath_valid(const char *path) {
    struct jpath_cur c;
    if (jpath_cursor(path, &c)) return 0;
    jpath_walk(NULL, &c);
    return !c.err;
}
