/* schema.c -- a walker that validates, defaults and prunes a custom
 * resource against its CRD openAPIV3Schema and reports causes worded as
 * kube-apiserver does (k8s.io/apimachinery field.Error bodies around
 * kube-openapi validation messages). */
#include "test/apiserver/schema.h"
#include "common/json.h"
#include "test/apiserver/cel.h"
#include "test/apiserver/humantime.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two passes over an object: SV_STRUCT checks types, values, required
 * fields, defaults and prunes; SV_CEL runs the x-kubernetes-validations
 * rules, and only when the first pass left no blocking error (as the real
 * server's hasBlockingErr decides). */
enum sv_mode { SV_STRUCT, SV_CEL };

struct sv_ctx {
    bool strict;
    json_object *causes;
    int n;
    enum sv_mode mode;
    bool in_cel;     /* the cause being added comes from a rule */
};

/* ---- small helpers --------------------------------------------------------- */

static bool sv_num(json_object *schema, const char *k, double *out) {
    json_object *v = aiq_jget(schema, k);
    if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return false;
    *out = json_object_get_double(v);
    return true;
}

static void sv_cause(struct sv_ctx *c, const char *reason, const char *field, const char *msg) {
    json_object *o;
    if (c->mode == SV_CEL && !c->in_cel) return;   /* reported by the first pass */
    o = json_object_new_object();
    if (!o) return;
    json_object_object_add(o, "reason", json_object_new_string(reason));
    json_object_object_add(o, "field", json_object_new_string(field));
    json_object_object_add(o, "message", json_object_new_string(msg));
    json_object_array_add(c->causes, o);
    c->n++;
}

/* Go's %v of a float64: integers without a fraction below 1e21, else
 * the shortest %g that reads back to the same value. */
static void sv_fmt_num(double d, char *buf, size_t cap) {
    if (d == floor(d) && fabs(d) < 1e21) {
        snprintf(buf, cap, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
}

/* Go's %q of a string (escapes ", \ and control characters). */
static void sv_quote(const char *s, char *buf, size_t cap) {
    size_t j = 0;
    if (cap < 3) {
        if (cap) buf[0] = '\0';
        return;
    }
    buf[j++] = '"';
    for (; *s && j + 6 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            buf[j++] = '\\';
            buf[j++] = (char)ch;
        } else if (ch == '\n') {
            buf[j++] = '\\';
            buf[j++] = 'n';
        } else if (ch == '\t') {
            buf[j++] = '\\';
            buf[j++] = 't';
        } else if (ch < 0x20 || ch == 0x7f) {
            j += (size_t)snprintf(buf + j, cap - j, "\\x%02x", ch);
        } else {
            buf[j++] = (char)ch;
        }
    }
    buf[j++] = '"';
    buf[j] = '\0';
}

/* The bad value as field.Error prints it: numbers and booleans plain,
 * strings quoted, null as null, objects/arrays as compact JSON. */
static void sv_fmt_value(json_object *v, char *buf, size_t cap) {
    if (!v) {
        snprintf(buf, cap, "null");
    } else if (json_object_is_type(v, json_type_string)) {
        sv_quote(json_object_get_string(v), buf, cap);
    } else if (json_object_is_type(v, json_type_int)) {
        snprintf(buf, cap, "%lld", (long long)json_object_get_int64(v));
    } else if (json_object_is_type(v, json_type_double)) {
        sv_fmt_num(json_object_get_double(v), buf, cap);
    } else if (json_object_is_type(v, json_type_boolean)) {
        snprintf(buf, cap, "%s", json_object_get_boolean(v) ? "true" : "false");
    } else {
        snprintf(buf, cap, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    }
}

/* JSON-schema type name of a value; integral doubles count as integers
 * (the API server decodes 2.0 as int64 2). */
static const char *sv_type_of(json_object *v) {
    if (!v) return "null";
    switch (json_object_get_type(v)) {
    case json_type_boolean: return "boolean";
    case json_type_int: return "integer";
    case json_type_double: {
        double d = json_object_get_double(v);
        return d == floor(d) && fabs(d) < 9.2e18 ? "integer" : "number";
    }
    case json_type_string: return "string";
    case json_type_array: return "array";
    case json_type_object: return "object";
    default: return "null";
    }
}

static bool sv_type_ok(const char *want, const char *have) {
    if (strcmp(want, have) == 0) return true;
    return strcmp(want, "number") == 0 && strcmp(have, "integer") == 0;
}

/* Field path helpers: "spec.x", "spec.list[3]". */
static void sv_child(char *out, size_t cap, const char *path, const char *key) {
    snprintf(out, cap, "%s%s%s", path, *path ? "." : "", key);
}

/* Translates an ECMA pattern to POSIX ERE (see schema.h). */
static void sv_regex_translate(const char *in, char *out, size_t cap) {
    size_t j = 0;
    int in_bracket = 0;
    for (const char *p = in; *p && j + 16 < cap; p++) {
        if (!in_bracket && p[0] == '(' && p[1] == '?' && p[2] == ':') {
            out[j++] = '(';
            p += 2;
            continue;
        }
        if (*p == '\\' && p[1]) {
            const char *rep = NULL;
            switch (p[1]) {
            case 'd': rep = in_bracket ? "0-9" : "[0-9]"; break;
            case 'D': rep = in_bracket ? NULL : "[^0-9]"; break;
            case 'w': rep = in_bracket ? "A-Za-z0-9_" : "[A-Za-z0-9_]"; break;
            case 'W': rep = in_bracket ? NULL : "[^A-Za-z0-9_]"; break;
            case 's': rep = in_bracket ? "[:space:]" : "[[:space:]]"; break;
            case 'S': rep = in_bracket ? NULL : "[^[:space:]]"; break;
            default: break;
            }
            if (rep) {
                j += (size_t)snprintf(out + j, cap - j, "%s", rep);
                p++;
                continue;
            }
            if (in_bracket) {
                /* POSIX brackets have no escapes: keep the literal char */
                out[j++] = p[1];
                p++;
                continue;
            }
            out[j++] = *p++;
            out[j++] = *p;
            continue;
        }
        if (*p == '[' && !in_bracket) {
            in_bracket = 1;
            out[j++] = *p;
            if (p[1] == '^') out[j++] = *++p;
            if (p[1] == ']') out[j++] = *++p;
            continue;
        }
        if (*p == ']' && in_bracket) in_bracket = 0;
        out[j++] = *p;
    }
    out[j] = '\0';
}

/* ---- the walker -------------------------------------------------------------- */

static void sv_node(struct sv_ctx *c, json_object *schema, json_object *v,
                    const char *path, int depth);

static void sv_object(struct sv_ctx *c, json_object *schema, json_object *v,
                      const char *path, int depth) {
    json_object *props = aiq_jget(schema, "properties");
    json_object *addl = aiq_jget(schema, "additionalProperties");
    bool preserve = aiq_jtrue(schema, "x-kubernetes-preserve-unknown-fields");
    bool top = depth == 0;
    char cp[512], msg[1024];

    /* Drop nulls of non-nullable properties, then apply defaults. */
    if (props && json_object_is_type(props, json_type_object)) {
        const char *drop[128];
        int nd = 0;
        json_object_object_foreach(v, nk, nv) {
            json_object *ps = aiq_jget(props, nk);
            if (!nv && ps && !aiq_jtrue(ps, "nullable") && nd < 128) drop[nd++] = nk;
        }
        for (int i = 0; i < nd; i++) json_object_object_del(v, drop[i]);
        json_object_object_foreach(props, dk, ds) {
            json_object *def = aiq_jget(ds, "default");
            if (!def || aiq_jget(v, dk)) continue;
            if (top && (strcmp(dk, "metadata") == 0)) continue;
            json_object *copy = NULL;
            if (json_object_deep_copy(def, &copy, NULL) == 0)
                json_object_object_add(v, dk, copy);
        }
    }

    json_object *req = aiq_jget(schema, "required");
    if (req && json_object_is_type(req, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(req); i++) {
            json_object *r = json_object_array_get_idx(req, i);
            if (!r || !json_object_is_type(r, json_type_string)) continue;
            const char *rk = json_object_get_string(r);
            if (top && strcmp(rk, "metadata") == 0) continue;
            json_object *have = NULL;
            if (!json_object_object_get_ex(v, rk, &have)) {
                sv_child(cp, sizeof cp, path, rk);
                sv_cause(c, "FieldValueRequired", cp, "Required value");
            }
        }
    }

    /* The schema may restrict metadata.name and metadata.generateName
     * (nothing else of metadata is validated, defaulted or pruned). */
    if (top && c->mode == SV_STRUCT) {
        static const char *const mk[2] = {"name", "generateName"};
        json_object *ms = aiq_jget(aiq_jget(props, "metadata"), "properties"), *md = aiq_jget(v, "metadata");
        for (int i = 0; i < 2 && ms; i++) {
            json_object *ks = aiq_jget(ms, mk[i]), *kv = aiq_jget(md, mk[i]);
            if (!ks || !kv || !json_object_is_type(kv, json_type_string)) continue;
            sv_child(cp, sizeof cp, "metadata", mk[i]);
            sv_node(c, ks, kv, cp, depth + 1);
        }
    }

    const char *prune[256];
    int np = 0;
    json_object_object_foreach(v, k, val) {
        if (top && (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0 ||
                    strcmp(k, "metadata") == 0))
            continue;
        sv_child(cp, sizeof cp, path, k);
        json_object *ps = props ? aiq_jget(props, k) : NULL;
        if (ps) {
            sv_node(c, ps, val, cp, depth + 1);
        } else if (addl && json_object_is_type(addl, json_type_object)) {
            sv_node(c, addl, val, cp, depth + 1);
        } else if ((addl && json_object_is_type(addl, json_type_boolean) &&
                    json_object_get_boolean(addl)) || preserve) {
            continue;
        } else if (c->strict) {
            snprintf(msg, sizeof msg, "unknown field \"%s\"", cp);
            sv_cause(c, "UnknownField", cp, msg);
        } else if (np < 256) {
            prune[np++] = k;
        }
    }
    for (int i = 0; i < np; i++) json_object_object_del(v, prune[i]);
}

/* Compiled patterns, kept for the life of the process: every string with
 * a pattern (an AIJob has several) had its regex compiled and freed on
 * each validation, 6% of the server's CPU while AIJobs were created.
 * Shared by every server in the process, so it has its own lock; glibc's
 * regexec may run on one regex_t from several threads. Full, a pattern is
 * compiled for the one use as before. */
#define SV_RE_CACHE 64
static struct {
    char *ere;
    regex_t re;
} sv_re_cache[SV_RE_CACHE];
static int sv_re_n;
static pthread_mutex_t sv_re_mu = PTHREAD_MUTEX_INITIALIZER;

/* Whether s matches the ERE ere: 1 yes, 0 no, -1 when ere does not
 * compile. */
static int sv_re_match(const char *ere, const char *s) {
    regex_t *re = NULL, own;
    int rc;
    pthread_mutex_lock(&sv_re_mu);
    for (int i = 0; i < sv_re_n && !re; i++)
        if (!strcmp(sv_re_cache[i].ere, ere)) re = &sv_re_cache[i].re;
    if (!re && sv_re_n < SV_RE_CACHE && (sv_re_cache[sv_re_n].ere = strdup(ere))) {
        if (regcomp(&sv_re_cache[sv_re_n].re, ere, REG_EXTENDED | REG_NOSUB) == 0) {
            re = &sv_re_cache[sv_re_n++].re;
        } else {
            free(sv_re_cache[sv_re_n].ere);
            sv_re_cache[sv_re_n].ere = NULL;
        }
    }
    pthread_mutex_unlock(&sv_re_mu);
    if (re) return regexec(re, s, 0, NULL, 0) == 0;
    if (regcomp(&own, ere, REG_EXTENDED | REG_NOSUB) != 0) return -1;
    rc = regexec(&own, s, 0, NULL, 0) == 0;
    regfree(&own);
    return rc;
}

static void sv_string(struct sv_ctx *c, json_object *schema, json_object *v, const char *path) {
    char msg[2048], val[512];
    const char *s = json_object_get_string(v);
    size_t len = strlen(s);
    double lim;
    sv_fmt_value(v, val, sizeof val);
    if (sv_num(schema, "maxLength", &lim) && (double)len > lim) {
        snprintf(msg, sizeof msg, "Too long: may not be more than %.0f bytes", lim);
        sv_cause(c, "FieldValueTooLong", path, msg);
    }
    if (sv_num(schema, "minLength", &lim) && (double)len < lim) {
        snprintf(msg, sizeof msg, "Invalid value: %s: %s in body should be at least %.0f chars long",
                 val, path, lim);
        sv_cause(c, "FieldValueInvalid", path, msg);
    }
    json_object *pat = aiq_jget(schema, "pattern");
    if (pat && json_object_is_type(pat, json_type_string)) {
        char ere[1024];
        sv_regex_translate(json_object_get_string(pat), ere, sizeof ere);
        int m = sv_re_match(ere, s);
        if (m < 0) {
            snprintf(msg, sizeof msg, "Internal error: pattern '%s' is not supported by the local "
                     "server's POSIX regex engine", json_object_get_string(pat));
            sv_cause(c, "InternalError", path, msg);
        } else if (m == 0) {
            snprintf(msg, sizeof msg, "Invalid value: %s: %s in body should match '%s'",
                     val, path, json_object_get_string(pat));
            sv_cause(c, "FieldValueInvalid", path, msg);
        }
    }
    json_object *fmt = aiq_jget(schema, "format");
    if (fmt && json_object_is_type(fmt, json_type_string) &&
        strcmp(json_object_get_string(fmt), "date-time") == 0 && rfc3339_parse(s) < 0) {
        snprintf(msg, sizeof msg, "Invalid value: %s: %s in body must be of type date-time: %s",
                 val, path, val);
        sv_cause(c, "FieldValueInvalid", path, msg);
    }
}

static void sv_number(struct sv_ctx *c, json_object *schema, json_object *v, const char *path) {
    char msg[2048], val[128], b[64];
    double d = json_object_get_double(v), lim;
    sv_fmt_value(v, val, sizeof val);
    if (sv_num(schema, "minimum", &lim)) {
        bool ex = aiq_jtrue(schema, "exclusiveMinimum");
        if (ex ? d <= lim : d < lim) {
            sv_fmt_num(lim, b, sizeof b);
            snprintf(msg, sizeof msg, "Invalid value: %s: %s in body should be greater than %s%s",
                     val, path, ex ? "" : "or equal to ", b);
            sv_cause(c, "FieldValueInvalid", path, msg);
        }
    }
    if (sv_num(schema, "maximum", &lim)) {
        bool ex = aiq_jtrue(schema, "exclusiveMaximum");
        if (ex ? d >= lim : d > lim) {
            sv_fmt_num(lim, b, sizeof b);
            snprintf(msg, sizeof msg, "Invalid value: %s: %s in body should be less than %s%s",
                     val, path, ex ? "" : "or equal to ", b);
            sv_cause(c, "FieldValueInvalid", path, msg);
        }
    }
}

static void sv_array(struct sv_ctx *c, json_object *schema, json_object *v,
                     const char *path, int depth) {
    char msg[2048], cp[512];
    size_t n = json_object_array_length(v);
    double lim;
    if (sv_num(schema, "maxItems", &lim) && (double)n > lim) {
        snprintf(msg, sizeof msg, "Too many: %zu: must have at most %.0f items", n, lim);
        sv_cause(c, "FieldValueTooMany", path, msg);
    }
    if (sv_num(schema, "minItems", &lim) && (double)n < lim) {
        char val[512];
        sv_fmt_value(v, val, sizeof val);
        snprintf(msg, sizeof msg, "Invalid value: %s: %s in body should have at least %.0f items",
                 val, path, lim);
        sv_cause(c, "FieldValueInvalid", path, msg);
    }
    json_object *items = aiq_jget(schema, "items");
    if (!items || !json_object_is_type(items, json_type_object)) return;
    for (size_t i = 0; i < n; i++) {
        snprintf(cp, sizeof cp, "%s[%zu]", path, i);
        sv_node(c, items, json_object_array_get_idx(v, i), cp, depth + 1);
    }
}

static void sv_enum(struct sv_ctx *c, json_object *schema, json_object *v, const char *path) {
    json_object *en = aiq_jget(schema, "enum");
    if (!en || !json_object_is_type(en, json_type_array)) return;
    size_t n = json_object_array_length(en);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(en, i);
        char a[512], b[512];
        sv_fmt_value(e, a, sizeof a);
        sv_fmt_value(v, b, sizeof b);
        if (strcmp(sv_type_of(e), sv_type_of(v)) == 0 && strcmp(a, b) == 0) return;
    }
    char msg[2048];
    size_t j = 0;
    char val[256];
    sv_fmt_value(v, val, sizeof val);
    j += (size_t)snprintf(msg + j, sizeof msg - j, "Unsupported value: %s: supported values: ", val);
    for (size_t i = 0; i < n && j < sizeof msg; i++) {
        json_object *e = json_object_array_get_idx(en, i);
        char q[256];
        /* Kubernetes lists the allowed values as quoted strings. */
        if (e && json_object_is_type(e, json_type_string)) {
            sv_quote(json_object_get_string(e), q, sizeof q);
        } else {
            char raw[200];
            sv_fmt_value(e, raw, sizeof raw);
            sv_quote(raw, q, sizeof q);
        }
        j += (size_t)snprintf(msg + j, sizeof msg - j, "%s%s", i ? ", " : "", q);
    }
    sv_cause(c, "FieldValueNotSupported", path, msg);
}

/* Runs the node's x-kubernetes-validations rules (cel.c). A false rule
 * gives `Invalid value: "<type>": <message>` at path+fieldPath with the
 * rule's reason (FieldValueInvalid by default); rules the evaluator does
 * not support are skipped. */
static void sv_cel(struct sv_ctx *c, json_object *schema, json_object *v, const char *path,
                   const char *type) {
    json_object *rules = aiq_jget(schema, "x-kubernetes-validations");
    if (!rules || !json_object_is_type(rules, json_type_array)) return;
    for (size_t i = 0; i < json_object_array_length(rules); i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        json_object *rule = aiq_jget(r, "rule"), *m = aiq_jget(r, "message");
        json_object *fp = aiq_jget(r, "fieldPath"), *rs = aiq_jget(r, "reason");
        if (!rule || !json_object_is_type(rule, json_type_string)) continue;
        char err[256], field[512], msg[2048], text[1024];
        enum cel_result res = cel_eval_bool(json_object_get_string(rule), v, err, sizeof err);
        if (res == CEL_TRUE || res == CEL_UNSUPPORTED) continue;
        const char *f = fp && json_object_is_type(fp, json_type_string) ? json_object_get_string(fp) : "";
        if (*path) snprintf(field, sizeof field, "%s%s", path, f);
        else snprintf(field, sizeof field, "%s", *f == '.' ? f + 1 : f);
        if (res == CEL_ERROR)
            snprintf(text, sizeof text, "rule evaluation error: %s", err);
        else if (m && json_object_is_type(m, json_type_string))
            snprintf(text, sizeof text, "%s", json_object_get_string(m));
        else
            snprintf(text, sizeof text, "failed rule: %s", json_object_get_string(rule));
        snprintf(msg, sizeof msg, "Invalid value: \"%s\": %s", type, text);
        const char *reason = rs && json_object_is_type(rs, json_type_string)
                                 ? json_object_get_string(rs) : "FieldValueInvalid";
        c->in_cel = true;
        sv_cause(c, reason, field, msg);
        c->in_cel = false;
    }
}

static void sv_node(struct sv_ctx *c, json_object *schema, json_object *v,
                    const char *path, int depth) {
    char msg[2048];
    if (!schema || !json_object_is_type(schema, json_type_object)) return;
    if (depth > SV_MAX_DEPTH) {
        sv_cause(c, "FieldValueInvalid", path, "Invalid value: nested deeper than the limit");
        return;
    }
    const char *have = sv_type_of(v);
    json_object *t = aiq_jget(schema, "type");
    const char *want = t && json_object_is_type(t, json_type_string) ? json_object_get_string(t) : NULL;
    if (!want && aiq_jget(schema, "properties")) want = "object";

    if (!v) {
        if (aiq_jtrue(schema, "nullable") || !want) return;
    }
    if (aiq_jtrue(schema, "x-kubernetes-int-or-string")) {
        if (strcmp(have, "integer") != 0 && strcmp(have, "string") != 0) {
            snprintf(msg, sizeof msg,
                     "Invalid value: \"%s\": %s in body must be of type integer,string: \"%s\"",
                     have, path, have);
            sv_cause(c, "FieldValueTypeInvalid", path, msg);
            return;
        }
    } else if (want && !sv_type_ok(want, have)) {
        snprintf(msg, sizeof msg, "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"",
                 have, path, want, have);
        sv_cause(c, "FieldValueTypeInvalid", path, msg);
        return;
    }
    if (!v) return;
    sv_enum(c, schema, v, path);
    if (strcmp(have, "object") == 0) {
        if (want || !aiq_jtrue(schema, "x-kubernetes-preserve-unknown-fields") ||
            aiq_jget(schema, "properties"))
            sv_object(c, schema, v, path, depth);
    } else if (strcmp(have, "array") == 0) {
        sv_array(c, schema, v, path, depth);
    } else if (strcmp(have, "string") == 0) {
        sv_string(c, schema, v, path);
    } else if (strcmp(have, "integer") == 0 || strcmp(have, "number") == 0) {
        sv_number(c, schema, v, path);
    }
    if (c->mode == SV_CEL) sv_cel(c, schema, v, path, want ? want : have);
}

/* True when schema (or anything below it) carries CEL rules. */
static bool sv_has_rules(json_object *schema, int depth) {
    json_object *props, *items, *addl;
    if (!schema || !json_object_is_type(schema, json_type_object) || depth > SV_MAX_DEPTH) return false;
    if (aiq_jget(schema, "x-kubernetes-validations")) return true;
    props = aiq_jget(schema, "properties");
    if (props && json_object_is_type(props, json_type_object)) {
        json_object_object_foreach(props, k, ps) {
            (void)k;
            if (sv_has_rules(ps, depth + 1)) return true;
        }
    }
    items = aiq_jget(schema, "items");
    addl = aiq_jget(schema, "additionalProperties");
    return sv_has_rules(items, depth + 1) || sv_has_rules(addl, depth + 1);
}

/* hasBlockingErr: an error of these types keeps the rules from running. */
static bool sv_blocking(json_object *causes) {
    static const char *const types[] = {"FieldValueNotSupported", "FieldValueRequired",
                                        "FieldValueTooLong", "FieldValueTooMany",
                                        "FieldValueTypeInvalid", "UnknownField", NULL};
    for (size_t i = 0; i < json_object_array_length(causes); i++) {
        json_object *r = aiq_jget(json_object_array_get_idx(causes, i), "reason");
        const char *rs = r && json_object_is_type(r, json_type_string) ? json_object_get_string(r) : "";
        for (int k = 0; types[k]; k++)
            if (!strcmp(rs, types[k])) return true;
    }
    return false;
}

/* See schema.h. */
int sv_validate(json_object *schema, json_object *obj, bool strict, json_object *causes) {
    struct sv_ctx c = {strict, causes, 0, SV_STRUCT, false};
    if (!causes || !json_object_is_type(causes, json_type_array)) return 0;
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        sv_cause(&c, "FieldValueTypeInvalid", "",
                 "Invalid value: the object must be a JSON object");
        return c.n;
    }
    sv_object(&c, schema, obj, "", 0);
    if (!sv_has_rules(schema, 0)) return c.n;
    if (sv_blocking(causes)) {
        sv_cause(&c, "FieldValueInvalid", "<nil>",
                 "Invalid value: null: some validation rules were not checked because the object "
                 "was invalid; correct the existing errors to complete validation");
        return c.n;
    }
    c.mode = SV_CEL;
    sv_object(&c, schema, obj, "", 0);
    return c.n;
}

static const char *sv_cause_str(json_object *cause, const char *k) {
    json_object *v = aiq_jget(cause, k);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* See schema.h. */
int sv_status_message(const char *kind, const char *group, const char *name,
                      json_object *causes, char *buf, size_t cap) {
    if (!buf || cap == 0) return 500;
    buf[0] = '\0';
    size_t n = causes && json_object_is_type(causes, json_type_array)
                   ? json_object_array_length(causes) : 0;
    if (n == 0) return 200;
    size_t j = 0;
    int unknown = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *ca = json_object_array_get_idx(causes, i);
        if (strcmp(sv_cause_str(ca, "reason"), "UnknownField") != 0) continue;
        j += (size_t)snprintf(buf + j, j < cap ? cap - j : 0, "%s%s",
                              unknown++ ? ", " : "strict decoding error: ",
                              sv_cause_str(ca, "message"));
    }
    if (unknown) return 400;

    /* Collect distinct "field: message" strings in order. */
    char *items[64];
    size_t ni = 0;
    for (size_t i = 0; i < n && ni < 64; i++) {
        json_object *ca = json_object_array_get_idx(causes, i);
        const char *f = sv_cause_str(ca, "field"), *m = sv_cause_str(ca, "message");
        size_t len = strlen(f) + strlen(m) + 3;
        char *s = malloc(len);
        if (!s) break;
        snprintf(s, len, "%s%s%s", f, *f ? ": " : "", m);
        int dup = 0;
        for (size_t k = 0; k < ni && !dup; k++) dup = strcmp(items[k], s) == 0;
        if (dup) free(s);
        else items[ni++] = s;
    }
    j = (size_t)snprintf(buf, cap, "%s%s%s \"%s\" is invalid: %s", kind,
                         group && *group ? "." : "", group ? group : "", name ? name : "",
                         ni > 1 ? "[" : "");
    for (size_t i = 0; i < ni; i++) {
        j += (size_t)snprintf(buf + (j < cap ? j : cap - 1), j < cap ? cap - j : 1, "%s%s",
                              i ? ", " : "", items[i]);
        free(items[i]);
    }
    if (ni > 1 && j < cap) snprintf(buf + j, cap - j, "]");
    return 422;
}
