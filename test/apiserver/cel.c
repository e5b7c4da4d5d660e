/* cel.c -- a direct-evaluating recursive-descent interpreter for the
 * small CEL subset described in cel.h. Each parse function takes `ev`:
 * with ev = 0 it only parses (the untaken side of && || ?: and the
 * predicate of a macro after its last element), so short-circuiting
 * never evaluates what CEL would not. Evaluation errors travel as
 * CV_ERR values (CEL's || and && absorb them when the other side
 * decides); syntax and unsupported features stop the whole rule.
 * Temporaries (string literals, filter/map results) live in an arena
 * json array freed at the end. */
#include "test/apiserver/cel.h"
#include "test/apiserver/jpatch.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cv_t { CV_ERR, CV_NULL, CV_BOOL, CV_INT, CV_DBL, CV_STR, CV_LIST, CV_MAP, CV_AUTHZ };

struct cv {
    enum cv_t t;
    int b;
    long long i;
    double d;
    const char *s;
    size_t n;
    json_object *j; /* list or map (borrowed); CV_AUTHZ: the check being built */
};

#define CEL_MAX_VARS 8
#define CEL_MAX_DEPTH 64

struct cel {
    const char *p, *end;
    json_object *self;
    json_object *vars;  /* top-level names besides self (object, request, ...) or NULL */
    json_object *arena;
    struct {
        const char *name;
        size_t n;
        struct cv v;
    } var[CEL_MAX_VARS];
    int nvar;
    int fatal;          /* CEL_UNSUPPORTED once set */
    char *msg;
    size_t cap;
    int msg_set;
    int depth;
    cel_authz_fn authz; /* binds `authorizer` when set */
    void *authz_ctx;
};

static struct cv cv_err(struct cel *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static struct cv cv_err(struct cel *c, const char *fmt, ...) {
    struct cv v = {.t = CV_ERR};
    if (!c->msg_set && c->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, c->cap, fmt, ap);
        va_end(ap);
        c->msg_set = 1;
    }
    return v;
}

static struct cv cel_unsupported(struct cel *c, const char *what) {
    if (!c->fatal) {
        c->fatal = 1;
        if (c->cap) snprintf(c->msg, c->cap, "unsupported CEL: %s", what);
        c->msg_set = 1;
    }
    struct cv v = {.t = CV_ERR};
    return v;
}

static struct cv cv_bool(int b) {
    struct cv v = {.t = CV_BOOL, .b = b != 0};
    return v;
}

static struct cv cv_int(long long i) {
    struct cv v = {.t = CV_INT, .i = i};
    return v;
}

static struct cv cv_json(json_object *j) {
    struct cv v = {.t = CV_NULL};
    if (!j) return v;
    switch (json_object_get_type(j)) {
    case json_type_boolean: v.t = CV_BOOL; v.b = json_object_get_boolean(j); break;
    case json_type_int: v.t = CV_INT; v.i = json_object_get_int64(j); break;
    case json_type_double: v.t = CV_DBL; v.d = json_object_get_double(j); break;
    case json_type_string:
        v.t = CV_STR;
        v.s = json_object_get_string(j);
        v.n = (size_t)json_object_get_string_len(j);
        break;
    case json_type_array: v.t = CV_LIST; v.j = j; break;
    case json_type_object: v.t = CV_MAP; v.j = j; break;
    default: break;
    }
    return v;
}

/* A new json value for v (for map() results). */
static json_object *cv_to_json(struct cv v) {
    switch (v.t) {
    case CV_BOOL: return json_object_new_boolean(v.b);
    case CV_INT: return json_object_new_int64(v.i);
    case CV_DBL: return json_object_new_double(v.d);
    case CV_STR: return json_object_new_string_len(v.s, (int)v.n);
    case CV_LIST: case CV_MAP: return json_object_get(v.j);
    default: return NULL;
    }
}

/* Keeps o alive until the end of the evaluation; returns o. */
static json_object *cel_keep(struct cel *c, json_object *o) {
    if (o) json_object_array_add(c->arena, o);
    return o;
}

/* ---- lexing ------------------------------------------------------------------ */

static void cel_ws(struct cel *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int cel_is_id(char ch, int first) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
           (!first && ch >= '0' && ch <= '9');
}

/* Consumes tok when it comes next (an operator must not be the prefix of
 * a longer one: "!" is not taken from "!=", "<" not from "<="). */
static int cel_accept(struct cel *c, const char *tok) {
    cel_ws(c);
    size_t n = strlen(tok);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, tok, n) != 0) return 0;
    const char *after = c->p + n;
    if (cel_is_id(tok[0], 1) && after < c->end && cel_is_id(*after, 0)) return 0;
    if ((strcmp(tok, "!") == 0 || strcmp(tok, "<") == 0 || strcmp(tok, ">") == 0 ||
         strcmp(tok, "=") == 0) && after < c->end && *after == '=')
        return 0;
    if ((strcmp(tok, "|") == 0 && after < c->end && *after == '|') ||
        (strcmp(tok, "&") == 0 && after < c->end && *after == '&'))
        return 0;
    c->p = after;
    return 1;
}

static int cel_expect(struct cel *c, const char *tok) {
    if (cel_accept(c, tok)) return 1;
    if (!c->fatal) {
        char what[64];
        snprintf(what, sizeof what, "expected '%s' at offset %d", tok, (int)(c->end - c->p));
        cel_unsupported(c, what);
    }
    return 0;
}

/* Reads an identifier; returns its length (0 if none). */
static size_t cel_ident(struct cel *c, const char **s) {
    cel_ws(c);
    if (c->p >= c->end || !cel_is_id(*c->p, 1)) return 0;
    *s = c->p;
    while (c->p < c->end && cel_is_id(*c->p, 0)) c->p++;
    return (size_t)(c->p - *s);
}

/* ---- helpers ----------------------------------------------------------------- */

static int cv_num(struct cv v, double *d) {
    if (v.t == CV_INT) { *d = (double)v.i; return 1; }
    if (v.t == CV_DBL) { *d = v.d; return 1; }
    return 0;
}

/* -1, 0, 1, or 2 when the values cannot be ordered. */
static int cv_cmp(struct cv a, struct cv b) {
    double x, y;
    if (a.t == CV_INT && b.t == CV_INT) return a.i < b.i ? -1 : a.i > b.i;
    if (cv_num(a, &x) && cv_num(b, &y)) return x < y ? -1 : x > y;
    if (a.t == CV_STR && b.t == CV_STR) {
        size_t n = a.n < b.n ? a.n : b.n;
        int r = memcmp(a.s, b.s, n);
        if (r) return r < 0 ? -1 : 1;
        return a.n < b.n ? -1 : a.n > b.n;
    }
    if (a.t == CV_BOOL && b.t == CV_BOOL) return a.b < b.b ? -1 : a.b > b.b;
    return 2;
}

static int cv_eq(struct cv a, struct cv b) {
    if (a.t == CV_NULL || b.t == CV_NULL) return a.t == b.t;
    if ((a.t == CV_LIST && b.t == CV_LIST) || (a.t == CV_MAP && b.t == CV_MAP))
        return jp_equal(a.j, b.j);
    return cv_cmp(a, b) == 0;
}

static const char *cv_type(struct cv v) {
    static const char *names[] = {"error", "null", "bool", "int", "double", "string", "list", "map",
                                  "Authorizer"};
    return names[v.t];
}

/* ---- grammar ----------------------------------------------------------------- */

static struct cv p_expr(struct cel *c, int ev);

/* The elements a macro iterates: list items, or map keys. */
static size_t cel_elems(struct cv recv) {
    if (recv.t == CV_LIST) return json_object_array_length(recv.j);
    if (recv.t == CV_MAP) return (size_t)json_object_object_length(recv.j);
    return 0;
}

static struct cv cel_elem(struct cel *c, struct cv recv, size_t i) {
    if (recv.t == CV_LIST) return cv_json(json_object_array_get_idx(recv.j, i));
    size_t k = 0;
    json_object_object_foreach(recv.j, key, val) {
        (void)val;
        if (k++ == i) return cv_json(cel_keep(c, json_object_new_string(key)));
    }
    struct cv nv = {.t = CV_NULL};
    return nv;
}

/* recv.name(var, expr) for the macros; c->p is after "(". */
static struct cv p_macro(struct cel *c, int ev, struct cv recv, const char *name, size_t nn) {
    const char *vs;
    size_t vn = cel_ident(c, &vs);
    if (!vn) return cel_unsupported(c, "macro without a variable");
    if (!cel_expect(c, ",")) return cv_err(c, "syntax");
    const char *body = c->p;
    int is = 0;
#define MACRO(s) (nn == strlen(s) && memcmp(name, s, nn) == 0)
    if (MACRO("filter")) is = 1;
    else if (MACRO("exists")) is = 2;
    else if (MACRO("all")) is = 3;
    else if (MACRO("exists_one")) is = 4;
    else if (MACRO("map")) is = 5;
#undef MACRO
    struct cv out = {.t = CV_NULL};
    if (ev && recv.t != CV_ERR && recv.t != CV_LIST && recv.t != CV_MAP)
        out = cv_err(c, "no matching overload for '%.*s' on %s", (int)nn, name, cv_type(recv));
    else if (recv.t == CV_ERR)
        out = recv;
    else if (ev) {
        if (c->nvar == CEL_MAX_VARS) return cel_unsupported(c, "too many nested macros");
        json_object *list = (is == 1 || is == 5) ? cel_keep(c, json_object_new_array()) : NULL;
        int any = 0, all = 1, count = 0, err = 0;
        struct cv first_err = {.t = CV_ERR};
        size_t n = cel_elems(recv);
        for (size_t i = 0; i < n && !c->fatal; i++) {
            struct cv el = cel_elem(c, recv, i);
            c->var[c->nvar].name = vs;
            c->var[c->nvar].n = vn;
            c->var[c->nvar].v = el;
            c->nvar++;
            c->p = body;
            struct cv r = p_expr(c, 1);
            c->nvar--;
            if (is == 5) {
                if (r.t == CV_ERR) { err = 1; first_err = r; }
                else json_object_array_add(list, cv_to_json(r));
                continue;
            }
            if (r.t != CV_BOOL) {
                if (!err) first_err = r.t == CV_ERR ? r : cv_err(c, "predicate is not a bool");
                err = 1;
                continue;
            }
            if (r.b) {
                any = 1;
                count++;
                if (is == 1)
                    json_object_array_add(list, recv.t == CV_LIST
                                                    ? json_object_get(json_object_array_get_idx(recv.j, i))
                                                    : json_object_new_string_len(el.s, (int)el.n));
            } else {
                all = 0;
            }
        }
        if (c->fatal) return cv_err(c, "fatal");
        switch (is) {
        case 1: out = err ? first_err : cv_json(list); break;
        case 2: out = any ? cv_bool(1) : err ? first_err : cv_bool(0); break;
        case 3: out = !all ? cv_bool(0) : err ? first_err : cv_bool(1); break;
        case 4: out = err ? first_err : cv_bool(count == 1); break;
        case 5: out = err ? first_err : cv_json(list); break;
        default: return cel_unsupported(c, "unknown macro");
        }
    }
    if (!is) return cel_unsupported(c, "unknown macro");
    c->p = body;
    p_expr(c, 0); /* find the end of the body */
    if (!cel_expect(c, ")")) return cv_err(c, "syntax");
    return out;
}

static size_t cel_strlen_utf8(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
    return k;
}

static struct cv cel_size(struct cel *c, struct cv v) {
    switch (v.t) {
    case CV_ERR: return v;
    case CV_STR: return cv_int((long long)cel_strlen_utf8(v.s, v.n));
    case CV_LIST: return cv_int((long long)json_object_array_length(v.j));
    case CV_MAP: return cv_int((long long)json_object_object_length(v.j));
    default: return cv_err(c, "no matching overload for 'size' on %s", cv_type(v));
    }
}

/* Selects field name of v. */
static struct cv cel_select(struct cel *c, struct cv v, const char *name, size_t n) {
    if (v.t == CV_ERR) return v;
    if (v.t != CV_MAP) return cv_err(c, "no such key: %.*s (on %s)", (int)n, name, cv_type(v));
    char key[256];
    if (n >= sizeof key) return cv_err(c, "key too long");
    memcpy(key, name, n);
    key[n] = '\0';
    json_object *f = NULL;
    if (!json_object_object_get_ex(v.j, key, &f)) return cv_err(c, "no such key: %s", key);
    return cv_json(f);
}

/* Member chain: primary then .field, .method(...), [index]. With
 * has_mode, the last .field is a presence test. */
static struct cv p_member(struct cel *c, int ev, int has_mode);

static struct cv p_primary(struct cel *c, int ev) {
    cel_ws(c);
    if (c->p >= c->end) return cel_unsupported(c, "unexpected end of rule");
    char ch = *c->p;
    if (cel_accept(c, "(")) {
        struct cv v = p_expr(c, ev);
        cel_expect(c, ")");
        return v;
    }
    if (ch >= '0' && ch <= '9') {
        char *e;
        const char *s = c->p;
        while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' ||
                                 *c->p == 'E'))
            c->p++;
        char num[64];
        size_t n = (size_t)(c->p - s);
        if (n >= sizeof num) return cel_unsupported(c, "number too long");
        memcpy(num, s, n);
        num[n] = '\0';
        if (c->p < c->end && (*c->p == 'u' || *c->p == 'U')) c->p++;
        if (strpbrk(num, ".eE")) {
            struct cv v = {.t = CV_DBL, .d = strtod(num, &e)};
            if (*e) return cel_unsupported(c, "bad number");
            return v;
        }
        errno = 0;
        long long i = strtoll(num, &e, 10);
        if (*e || errno == ERANGE) return cel_unsupported(c, "integer literal out of range");
        return cv_int(i);
    }
    if (ch == '\'' || ch == '"') {
        char q = *c->p++;
        char buf[1024];
        size_t j = 0;
        while (c->p < c->end && *c->p != q) {
            char x = *c->p++;
            if (x == '\\' && c->p < c->end) {
                x = *c->p++;
                if (x == 'n') x = '\n';
                else if (x == 't') x = '\t';
            }
            if (j + 1 < sizeof buf) buf[j++] = x;
        }
        if (c->p >= c->end) return cel_unsupported(c, "unterminated string");
        c->p++;
        json_object *s = cel_keep(c, json_object_new_string_len(buf, (int)j));
        return cv_json(s);
    }
    const char *id;
    size_t n = cel_ident(c, &id);
    if (!n) {
        char what[48];
        snprintf(what, sizeof what, "unexpected '%c'", ch);
        return cel_unsupported(c, what);
    }
#define ID(s) (n == strlen(s) && memcmp(id, s, n) == 0)
    if (ID("true")) return cv_bool(1);
    if (ID("false")) return cv_bool(0);
    if (ID("null")) {
        struct cv v = {.t = CV_NULL};
        return v;
    }
    if (ID("self")) return cv_json(c->self);
    if (ID("authorizer") && c->authz) {
        struct cv v = {.t = CV_AUTHZ, .j = cel_keep(c, json_object_new_object())};
        return v.j ? v : cv_err(c, "out of memory");
    }
    if (ID("has")) {
        if (!cel_expect(c, "(")) return cv_err(c, "syntax");
        struct cv v = p_member(c, ev, 1);
        cel_expect(c, ")");
        return v;
    }
    if (ID("size")) {
        if (!cel_expect(c, "(")) return cv_err(c, "syntax");
        struct cv v = p_expr(c, ev);
        cel_expect(c, ")");
        return ev ? cel_size(c, v) : v;
    }
    for (int i = c->nvar - 1; i >= 0; i--)
        if (c->var[i].n == n && memcmp(c->var[i].name, id, n) == 0) return c->var[i].v;
    if (c->vars && n < 64) {
        /* a binding of cel_eval_bool_vars; a JSON null (oldObject on a
         * create) is CEL null */
        char key[64];
        json_object *j;
        memcpy(key, id, n);
        key[n] = 0;
        if (json_object_object_get_ex(c->vars, key, &j)) return cv_json(j);
    }
    if (!ev) {
        /* a macro variable while only parsing: any value will do */
        struct cv v = {.t = CV_NULL};
        if (!ID("oldSelf")) return v;
    }
#undef ID
    char what[96];
    snprintf(what, sizeof what, "identifier '%.*s'", (int)(n < 64 ? n : 64), id);
    return cel_unsupported(c, what);
}

/* One method of the authorizer chain on v (CV_AUTHZ): group, resource,
 * subresource, namespace, name and check take a string and give a new
 * check; allowed() asks c->authz. */
static struct cv cel_authz_method(struct cel *c, int ev, struct cv v, const char *name, size_t n) {
    static const char *const setters[] = {"group", "resource", "subresource", "namespace", "name",
                                          "check"};
    if (n == 7 && !memcmp(name, "allowed", 7)) {
        cel_expect(c, ")");
        if (!ev) return cv_bool(0);
        return cv_bool(c->authz(c->authz_ctx, v.j));
    }
    for (size_t k = 0; k < sizeof setters / sizeof setters[0]; k++) {
        if (n != strlen(setters[k]) || memcmp(name, setters[k], n) != 0)
            continue;
        struct cv a = p_expr(c, ev);
        cel_expect(c, ")");
        if (!ev)
            return v;
        if (a.t == CV_ERR)
            return a;
        if (a.t != CV_STR)
            return cv_err(c, "no matching overload for '%s' on %s", setters[k], cv_type(a));
        json_object *nj = cel_keep(c, json_object_new_object());
        if (!nj)
            return cv_err(c, "out of memory");
        json_object_object_foreach(v.j, key, val) {
            json_object_object_add(nj, key, json_object_get(val));
        }
        json_object_object_add(nj, k == 5 ? "verb" : setters[k], json_object_new_string_len(a.s, (int)a.n));
        struct cv out = {.t = CV_AUTHZ, .j = nj};
        return out;
    }
    char what[96];
    snprintf(what, sizeof what, "authorizer method '%.*s'", (int)(n < 64 ? n : 64), name);
    return cel_unsupported(c, what);
}

static struct cv p_member(struct cel *c, int ev, int has_mode) {
    if (++c->depth > CEL_MAX_DEPTH) return cel_unsupported(c, "nested too deeply");
    struct cv v = p_primary(c, ev);
    while (!c->fatal) {
        if (cel_accept(c, ".")) {
            const char *name;
            size_t n = cel_ident(c, &name);
            if (!n) return cel_unsupported(c, "expected a field name after '.'");
            if (cel_accept(c, "(")) {
                if ((n == 4 && !memcmp(name, "size", 4))) {
                    cel_expect(c, ")");
                    if (ev) v = cel_size(c, v);
                } else if ((n == 10 && !memcmp(name, "startsWith", 10)) ||
                           (n == 8 && !memcmp(name, "endsWith", 8)) ||
                           (n == 8 && !memcmp(name, "contains", 8))) {
                    struct cv a = p_expr(c, ev);
                    cel_expect(c, ")");
                    if (!ev || v.t == CV_ERR) continue;
                    if (a.t == CV_ERR) { v = a; continue; }
                    if (v.t != CV_STR || a.t != CV_STR) {
                        v = cv_err(c, "no matching overload for '%.*s'", (int)n, name);
                        continue;
                    }
                    int r;
                    if (name[0] == 's') r = a.n <= v.n && memcmp(v.s, a.s, a.n) == 0;
                    else if (name[0] == 'e') r = a.n <= v.n && memcmp(v.s + v.n - a.n, a.s, a.n) == 0;
                    else {
                        r = 0;
                        for (size_t i = 0; i + a.n <= v.n && !r; i++) r = memcmp(v.s + i, a.s, a.n) == 0;
                    }
                    v = cv_bool(r);
                } else if (v.t == CV_AUTHZ || (!ev && c->authz && v.t == CV_NULL)) {
                    v = cel_authz_method(c, ev, v, name, n);
                } else if ((n == 6 && !memcmp(name, "filter", 6)) || (n == 6 && !memcmp(name, "exists", 6)) ||
                           (n == 3 && !memcmp(name, "all", 3)) || (n == 3 && !memcmp(name, "map", 3)) ||
                           (n == 10 && !memcmp(name, "exists_one", 10))) {
                    v = p_macro(c, ev, v, name, n);
                } else {
                    char what[96];
                    snprintf(what, sizeof what, "method '%.*s'", (int)(n < 64 ? n : 64), name);
                    return cel_unsupported(c, what);
                }
                continue;
            }
            cel_ws(c);
            if (has_mode && c->p < c->end && *c->p == ')') {
                c->depth--;
                if (!ev) return cv_bool(0);
                if (v.t == CV_ERR) return v;
                if (v.t != CV_MAP) return cv_err(c, "invalid type for field selection");
                char key[256];
                if (n >= sizeof key) return cv_err(c, "key too long");
                memcpy(key, name, n);
                key[n] = '\0';
                return cv_bool(json_object_object_get_ex(v.j, key, NULL));
            }
            if (ev) v = cel_select(c, v, name, n);
        } else if (cel_accept(c, "[")) {
            struct cv ix = p_expr(c, ev);
            cel_expect(c, "]");
            if (!ev || v.t == CV_ERR) continue;
            if (ix.t == CV_ERR) { v = ix; continue; }
            if (v.t == CV_LIST && ix.t == CV_INT) {
                long long len = (long long)json_object_array_length(v.j);
                if (ix.i < 0 || ix.i >= len) v = cv_err(c, "index out of bounds: %lld", ix.i);
                else v = cv_json(json_object_array_get_idx(v.j, (size_t)ix.i));
            } else if (v.t == CV_MAP && ix.t == CV_STR) {
                v = cel_select(c, v, ix.s, ix.n);
            } else {
                v = cv_err(c, "no matching overload for index on %s", cv_type(v));
            }
        } else {
            break;
        }
    }
    c->depth--;
    if (has_mode && !c->fatal) {
        return cel_unsupported(c, "has() needs a field selection");
    }
    return v;
}

static struct cv p_unary(struct cel *c, int ev) {
    if (cel_accept(c, "!")) {
        struct cv v = p_unary(c, ev);
        if (!ev || v.t == CV_ERR) return v;
        if (v.t != CV_BOOL) return cv_err(c, "no matching overload for '!' on %s", cv_type(v));
        return cv_bool(!v.b);
    }
    if (cel_accept(c, "-")) {
        struct cv v = p_unary(c, ev);
        if (!ev || v.t == CV_ERR) return v;
        if (v.t == CV_INT) return v.i == LLONG_MIN ? cv_err(c, "integer overflow") : cv_int(-v.i);
        if (v.t == CV_DBL) { v.d = -v.d; return v; }
        return cv_err(c, "no matching overload for '-' on %s", cv_type(v));
    }
    return p_member(c, ev, 0);
}

static struct cv cel_arith(struct cel *c, char op, struct cv a, struct cv b) {
    if (a.t == CV_ERR) return a;
    if (b.t == CV_ERR) return b;
    if (a.t == CV_INT && b.t == CV_INT) {
        long long r = 0;
        int ovf = 0;
        switch (op) {
        case '+': ovf = __builtin_add_overflow(a.i, b.i, &r); break;
        case '-': ovf = __builtin_sub_overflow(a.i, b.i, &r); break;
        case '*': ovf = __builtin_mul_overflow(a.i, b.i, &r); break;
        case '/':
        case '%':
            if (!b.i) return cv_err(c, op == '/' ? "division by zero" : "modulus by zero");
            if (a.i == LLONG_MIN && b.i == -1) ovf = 1;
            else r = op == '/' ? a.i / b.i : a.i % b.i;
            break;
        }
        return ovf ? cv_err(c, "integer overflow") : cv_int(r);
    }
    if (a.t == CV_DBL && b.t == CV_DBL && op != '%') {
        struct cv v = {.t = CV_DBL};
        v.d = op == '+' ? a.d + b.d : op == '-' ? a.d - b.d : op == '*' ? a.d * b.d : a.d / b.d;
        return v;
    }
    if (a.t == CV_STR && b.t == CV_STR && op == '+') {
        size_t n = a.n + b.n;
        char *buf = malloc(n + 1);
        if (!buf) return cv_err(c, "out of memory");
        memcpy(buf, a.s, a.n);
        memcpy(buf + a.n, b.s, b.n);
        json_object *s = cel_keep(c, json_object_new_string_len(buf, (int)n));
        free(buf);
        return cv_json(s);
    }
    return cv_err(c, "no matching overload for '%c' on %s, %s", op, cv_type(a), cv_type(b));
}

static struct cv p_mul(struct cel *c, int ev) {
    struct cv l = p_unary(c, ev);
    for (;;) {
        char op = cel_accept(c, "*") ? '*' : cel_accept(c, "/") ? '/' : cel_accept(c, "%") ? '%' : 0;
        if (!op) return l;
        struct cv r = p_unary(c, ev);
        if (ev) l = cel_arith(c, op, l, r);
    }
}

static struct cv p_add(struct cel *c, int ev) {
    struct cv l = p_mul(c, ev);
    for (;;) {
        char op = cel_accept(c, "+") ? '+' : cel_accept(c, "-") ? '-' : 0;
        if (!op) return l;
        struct cv r = p_mul(c, ev);
        if (ev) l = cel_arith(c, op, l, r);
    }
}

static struct cv p_rel(struct cel *c, int ev) {
    struct cv l = p_add(c, ev);
    static const char *ops[] = {"==", "!=", "<=", ">=", "<", ">", "in"};
    int op = -1;
    for (int i = 0; i < 7 && op < 0; i++)
        if (cel_accept(c, ops[i])) op = i;
    if (op < 0) return l;
    struct cv r = p_add(c, ev);
    if (!ev) return l;
    if (l.t == CV_ERR) return l;
    if (r.t == CV_ERR) return r;
    if (op == 0) return cv_bool(cv_eq(l, r));
    if (op == 1) return cv_bool(!cv_eq(l, r));
    if (op == 6) {
        if (r.t == CV_LIST) {
            for (size_t i = 0; i < json_object_array_length(r.j); i++)
                if (cv_eq(l, cv_json(json_object_array_get_idx(r.j, i)))) return cv_bool(1);
            return cv_bool(0);
        }
        if (r.t == CV_MAP && l.t == CV_STR) return cv_bool(cel_select(c, r, l.s, l.n).t != CV_ERR);
        return cv_err(c, "no matching overload for 'in' on %s", cv_type(r));
    }
    int k = cv_cmp(l, r);
    if (k == 2) return cv_err(c, "no matching overload for '%s' on %s, %s", ops[op], cv_type(l), cv_type(r));
    switch (op) {
    case 2: return cv_bool(k <= 0);
    case 3: return cv_bool(k >= 0);
    case 4: return cv_bool(k < 0);
    default: return cv_bool(k > 0);
    }
}

static struct cv p_and(struct cel *c, int ev) {
    struct cv l = p_rel(c, ev);
    while (cel_accept(c, "&&")) {
        if (!ev || (l.t == CV_BOOL && !l.b)) {
            p_rel(c, 0);
            continue;
        }
        struct cv r = p_rel(c, 1);
        if (r.t == CV_BOOL && !r.b) l = r;                 /* false absorbs errors */
        else if (l.t == CV_ERR) continue;
        else if (r.t == CV_ERR) l = r;
        else if (l.t != CV_BOOL || r.t != CV_BOOL) l = cv_err(c, "no matching overload for '&&'");
        else l = cv_bool(1);
    }
    return l;
}

static struct cv p_or(struct cel *c, int ev) {
    struct cv l = p_and(c, ev);
    while (cel_accept(c, "||")) {
        if (!ev || (l.t == CV_BOOL && l.b)) {
            p_and(c, 0);
            continue;
        }
        struct cv r = p_and(c, 1);
        if (r.t == CV_BOOL && r.b) l = r;                  /* true absorbs errors */
        else if (l.t == CV_ERR) continue;
        else if (r.t == CV_ERR) l = r;
        else if (l.t != CV_BOOL || r.t != CV_BOOL) l = cv_err(c, "no matching overload for '||'");
        else l = cv_bool(0);
    }
    return l;
}

static struct cv p_expr(struct cel *c, int ev) {
    if (++c->depth > CEL_MAX_DEPTH) return cel_unsupported(c, "nested too deeply");
    struct cv cond = p_or(c, ev);
    if (cel_accept(c, "?")) {
        int take = ev && cond.t == CV_BOOL && cond.b, other = ev && cond.t == CV_BOOL && !cond.b;
        struct cv a = p_expr(c, take);
        cel_expect(c, ":");
        struct cv b = p_expr(c, other);
        c->depth--;
        if (!ev) return cond;
        if (cond.t == CV_ERR) return cond;
        if (cond.t != CV_BOOL) return cv_err(c, "no matching overload for '?:'");
        return cond.b ? a : b;
    }
    c->depth--;
    return cond;
}

/* Runs rule. With sout set, a string result is copied there (scap
 * bytes, cut) and counts as CEL_TRUE; otherwise the result must be a
 * boolean. */
static enum cel_result cel_run(const char *rule, json_object *self, json_object *vars,
                               cel_authz_fn authz, void *actx, char *msg, size_t cap,
                               char *sout, size_t scap) {
    struct cel c;
    memset(&c, 0, sizeof c);
    c.authz = authz;
    c.authz_ctx = actx;
    c.msg = msg;
    c.cap = cap;
    if (cap) msg[0] = '\0';
    size_t n = rule ? strnlen(rule, CEL_MAX_RULE + 1) : 0;
    if (!rule || n > CEL_MAX_RULE) {
        if (cap) snprintf(msg, cap, "unsupported CEL: rule missing or longer than %d bytes", CEL_MAX_RULE);
        return CEL_UNSUPPORTED;
    }
    c.p = rule;
    c.end = rule + n;
    c.self = self;
    c.vars = vars && json_object_is_type(vars, json_type_object) ? vars : NULL;
    c.arena = json_object_new_array();
    if (!c.arena) return CEL_ERROR;
    struct cv v = p_expr(&c, 1);
    cel_ws(&c);
    if (!c.fatal && c.p != c.end) {
        char what[64];
        snprintf(what, sizeof what, "unexpected text at offset %d", (int)(c.p - rule));
        cel_unsupported(&c, what);
    }
    enum cel_result r;
    if (c.fatal) r = CEL_UNSUPPORTED;
    else if (v.t == CV_ERR) r = CEL_ERROR;
    else if (sout && v.t == CV_STR && scap) {
        size_t k = v.n < scap - 1 ? v.n : scap - 1;
        memcpy(sout, v.s, k);
        sout[k] = '\0';
        r = CEL_TRUE;
        if (cap) msg[0] = '\0';
    } else if (sout) {
        if (cap) snprintf(msg, cap, "messageExpression result is %s, not string", cv_type(v));
        r = CEL_ERROR;
    } else if (v.t != CV_BOOL) {
        if (cap) snprintf(msg, cap, "rule result is %s, not bool", cv_type(v));
        r = CEL_ERROR;
    } else {
        r = v.b ? CEL_TRUE : CEL_FALSE;
        if (cap) msg[0] = '\0';
    }
    json_object_put(c.arena);
    return r;
}

/* See cel.h. */
enum cel_result cel_eval_bool(const char *rule, json_object *self, char *msg, size_t cap) {
    return cel_run(rule, self, NULL, NULL, NULL, msg, cap, NULL, 0);
}

/* See cel.h. */
enum cel_result cel_eval_bool_vars(const char *rule, json_object *vars, char *msg, size_t cap) {
    return cel_run(rule, NULL, vars, NULL, NULL, msg, cap, NULL, 0);
}

/* See cel.h. */
enum cel_result cel_eval_bool_vars_authz(const char *rule, json_object *vars, cel_authz_fn authz,
                                         void *ctx, char *msg, size_t cap) {
    return cel_run(rule, NULL, vars, authz, ctx, msg, cap, NULL, 0);
}

/* See cel.h. */
enum cel_result cel_eval_string_vars(const char *rule, json_object *vars, char *out, size_t ocap,
                                     char *msg, size_t cap) {
    return cel_run(rule, NULL, vars, NULL, NULL, msg, cap, out, ocap);
}
