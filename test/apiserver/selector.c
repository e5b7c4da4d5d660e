/* selector.c -- parsing and matching of label selectors (a small lexer and
 * a loop over comma-separated requirements, as labels.Parse) and field
 * selectors (terms split on unescaped commas, as fields.ParseSelector). */
#include "test/apiserver/selector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sel_op { SEL_EQ, SEL_NE, SEL_IN, SEL_NOTIN, SEL_EXISTS, SEL_NOTEXISTS,
              SEL_GT, SEL_LT };

struct sel_req {
    char *key;
    enum sel_op op;
    int nvals;
    char *vals[SEL_MAX_VALUES];
};

struct sel {
    bool fields;  /* field selector: key is a dotted path */
    int n;
    struct sel_req r[SEL_MAX_REQS];
};

/* See selector.h. */
void sel_free(struct sel *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        free(s->r[i].key);
        for (int j = 0; j < s->r[i].nvals; j++) free(s->r[i].vals[j]);
    }
    free(s);
}

/* See selector.h. */
bool sel_empty(const struct sel *s) { return !s || s->n == 0; }

static char *sel_strndup(const char *p, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

/* ---- label selectors ---------------------------------------------------- */

enum sel_tok { T_END, T_IDENT, T_NOT, T_EQ, T_EQEQ, T_NE, T_LPAREN, T_RPAREN,
               T_COMMA, T_GT, T_LT };

struct sel_lex {
    const char *text, *p;
    enum sel_tok tok;
    const char *ts; /* token start */
    size_t tn;      /* token length */
};

static int sel_is_ident_char(char c) {
    return c && !strchr(" \t\n\r,()=!<>", c);
}

static void sel_next(struct sel_lex *l) {
    while (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r') l->p++;
    l->ts = l->p;
    char c = *l->p;
    l->tn = 1;
    switch (c) {
    case '\0': l->tok = T_END; l->tn = 0; return;
    case ',': l->tok = T_COMMA; break;
    case '(': l->tok = T_LPAREN; break;
    case ')': l->tok = T_RPAREN; break;
    case '<': l->tok = T_LT; break;
    case '>': l->tok = T_GT; break;
    case '!':
        if (l->p[1] == '=') { l->tok = T_NE; l->tn = 2; }
        else l->tok = T_NOT;
        break;
    case '=':
        if (l->p[1] == '=') { l->tok = T_EQEQ; l->tn = 2; }
        else l->tok = T_EQ;
        break;
    default:
        l->tok = T_IDENT;
        while (sel_is_ident_char(l->p[l->tn])) l->tn++;
        break;
    }
    l->p += l->tn;
}

static int sel_tok_is(const struct sel_lex *l, const char *word) {
    return l->tok == T_IDENT && l->tn == strlen(word) &&
           memcmp(l->ts, word, l->tn) == 0;
}

/* Validates a label name part: <= 63 chars, alphanumeric at both ends,
 * '-', '_', '.' inside. Empty allowed only when allow_empty. */
static int sel_valid_name(const char *s, size_t n, int allow_empty) {
    if (n == 0) return allow_empty;
    if (n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || !strchr("-_.", c))) return 0;
    }
    return 1;
}

/* Validates a label key: [prefix/]name, prefix a DNS subdomain <= 253. */
static int sel_valid_key(const char *s, size_t n) {
    const char *slash = memchr(s, '/', n);
    if (!slash) return sel_valid_name(s, n, 0);
    size_t pn = (size_t)(slash - s);
    if (pn == 0 || pn > 253) return 0;
    for (size_t i = 0; i < pn; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
        if (!ok) return 0;
    }
    return sel_valid_name(slash + 1, n - pn - 1, 0);
}

static aiq_rc sel_lab_err(aiq_err *err, const struct sel_lex *l, const char *what) {
    if (l->tok == T_END)
        return aiq_err_field(err, AIQ_EINVAL, "labelSelector",
                             "unable to parse label selector \"%s\": %s at end of input",
                             l->text, what);
    return aiq_err_field(err, AIQ_EINVAL, "labelSelector",
                         "unable to parse label selector \"%s\": found '%.*s' at offset %d, %s",
                         l->text, (int)l->tn, l->ts, (int)(l->ts - l->text), what);
}

/* Adds value [p, p+n) to r after validating it as a label value. */
static aiq_rc sel_add_value(struct sel_req *r, const struct sel_lex *l,
                            const char *p, size_t n, aiq_err *err) {
    if (r->nvals == SEL_MAX_VALUES)
        return aiq_err_field(err, AIQ_ETOOBIG, "labelSelector",
                             "label selector \"%s\": more than %d values for key \"%s\"",
                             l->text, SEL_MAX_VALUES, r->key);
    if (!sel_valid_name(p, n, 1))
        return aiq_err_field(err, AIQ_EINVAL, "labelSelector",
                             "unable to parse label selector \"%s\": invalid label value: \"%.*s\": "
                             "must be 63 characters or less and consist of alphanumeric "
                             "characters, '-', '_' or '.', starting and ending with an "
                             "alphanumeric character", l->text, (int)n, p);
    r->vals[r->nvals] = sel_strndup(p, n);
    if (!r->vals[r->nvals]) return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    r->nvals++;
    return AIQ_OK;
}

/* Parses one requirement at the lexer's current token into r. */
static aiq_rc sel_parse_req(struct sel_lex *l, struct sel_req *r, aiq_err *err) {
    int negate = 0;
    if (l->tok == T_NOT) {
        negate = 1;
        sel_next(l);
    }
    if (l->tok != T_IDENT) return sel_lab_err(err, l, "expected a label key");
    if (!sel_valid_key(l->ts, l->tn))
        return aiq_err_field(err, AIQ_EINVAL, "labelSelector",
                             "unable to parse label selector \"%s\": invalid label key \"%.*s\"",
                             l->text, (int)l->tn, l->ts);
    r->key = sel_strndup(l->ts, l->tn);
    if (!r->key) return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    sel_next(l);
    if (negate) {
        r->op = SEL_NOTEXISTS;
        return AIQ_OK;
    }
    switch (l->tok) {
    case T_END:
    case T_COMMA:
        r->op = SEL_EXISTS;
        return AIQ_OK;
    case T_EQ:
    case T_EQEQ:
    case T_NE:
        r->op = l->tok == T_NE ? SEL_NE : SEL_EQ;
        sel_next(l);
        if (l->tok == T_END || l->tok == T_COMMA)
            return sel_add_value(r, l, "", 0, err);
        if (l->tok != T_IDENT) return sel_lab_err(err, l, "expected a value");
        {
            aiq_rc rc = sel_add_value(r, l, l->ts, l->tn, err);
            sel_next(l);
            return rc;
        }
    case T_GT:
    case T_LT: {
        r->op = l->tok == T_GT ? SEL_GT : SEL_LT;
        sel_next(l);
        if (l->tok != T_IDENT) return sel_lab_err(err, l, "expected an integer");
        char *e;
        char num[32];
        if (l->tn >= sizeof num) return sel_lab_err(err, l, "expected an integer");
        memcpy(num, l->ts, l->tn);
        num[l->tn] = '\0';
        (void)strtoll(num, &e, 10);
        if (*e || l->tn == 0) return sel_lab_err(err, l, "expected an integer");
        aiq_rc rc = sel_add_value(r, l, l->ts, l->tn, err);
        sel_next(l);
        return rc;
    }
    case T_IDENT:
        if (sel_tok_is(l, "in")) r->op = SEL_IN;
        else if (sel_tok_is(l, "notin")) r->op = SEL_NOTIN;
        else return sel_lab_err(err, l, "expected one of: in, notin, =, ==, !=, >, <");
        sel_next(l);
        if (l->tok != T_LPAREN) return sel_lab_err(err, l, "expected '('");
        sel_next(l);
        for (;;) {
            aiq_rc rc;
            if (l->tok == T_IDENT) {
                rc = sel_add_value(r, l, l->ts, l->tn, err);
                sel_next(l);
            } else if (l->tok == T_COMMA || l->tok == T_RPAREN) {
                rc = sel_add_value(r, l, "", 0, err); /* empty value */
            } else {
                return sel_lab_err(err, l, "expected a value, ',' or ')'");
            }
            if (rc) return rc;
            if (l->tok == T_RPAREN) break;
            if (l->tok != T_COMMA) return sel_lab_err(err, l, "expected ',' or ')'");
            sel_next(l);
        }
        sel_next(l);
        return AIQ_OK;
    default:
        return sel_lab_err(err, l, "expected one of: in, notin, =, ==, !=, >, <");
    }
}

static struct sel *sel_alloc(const char *text, bool fields, aiq_err *err) {
    if (text && strnlen(text, SEL_MAX_LEN + 1) > SEL_MAX_LEN) {
        aiq_err_field(err, AIQ_ETOOBIG, fields ? "fieldSelector" : "labelSelector",
                      "selector longer than %d bytes", SEL_MAX_LEN);
        return NULL;
    }
    struct sel *s = calloc(1, sizeof *s);
    if (!s) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    s->fields = fields;
    return s;
}

struct sel *sel_parse_labels(const char *text, aiq_err *err) {
    struct sel *s = sel_alloc(text, false, err);
    if (!s || !text) return s;
    struct sel_lex l = {.text = text, .p = text};
    sel_next(&l);
    if (l.tok == T_END) return s;
    for (;;) {
        if (s->n == SEL_MAX_REQS) {
            aiq_err_field(err, AIQ_ETOOBIG, "labelSelector",
                          "label selector has more than %d requirements", SEL_MAX_REQS);
            goto out_free;
        }
        struct sel_req *r = &s->r[s->n++];
        if (sel_parse_req(&l, r, err)) goto out_free;
        if (l.tok == T_END) break;
        if (l.tok != T_COMMA) {
            sel_lab_err(err, &l, "expected ','");
            goto out_free;
        }
        sel_next(&l);
    }
    return s;
out_free:
    if (err && err->code == AIQ_OK) aiq_err_set(err, AIQ_EINVAL, "invalid label selector");
    sel_free(s);
    return NULL;
}

/* ---- field selectors ---------------------------------------------------- */

/* Copies [p, p+n) removing '\' escapes; returns NULL on a dangling '\'. */
static char *sel_unescape(const char *p, size_t n, int *bad) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\') {
            if (i + 1 >= n || !strchr("\\,=", p[i + 1])) {
                *bad = 1;
                free(d);
                return NULL;
            }
            i++;
        }
        d[j++] = p[i];
    }
    d[j] = '\0';
    return d;
}

/* Parses one "path op value" term [p, p+n) into r. */
static aiq_rc sel_parse_term(const char *text, const char *p, size_t n,
                             struct sel_req *r, aiq_err *err) {
    size_t i = 0, klen = 0, vstart = 0;
    int found = 0;
    for (i = 0; i < n; i++) {
        if (p[i] == '\\') { i++; continue; }
        if (p[i] == '!' && i + 1 < n && p[i + 1] == '=') {
            r->op = SEL_NE; klen = i; vstart = i + 2; found = 1; break;
        }
        if (p[i] == '=') {
            r->op = SEL_EQ; klen = i;
            vstart = (i + 1 < n && p[i + 1] == '=') ? i + 2 : i + 1;
            found = 1; break;
        }
    }
    if (!found)
        return aiq_err_field(err, AIQ_EINVAL, "fieldSelector",
                             "invalid field selector \"%s\": term \"%.*s\" has no operator "
                             "(=, == or !=)", text, (int)n, p);
    if (klen == 0)
        return aiq_err_field(err, AIQ_EINVAL, "fieldSelector",
                             "invalid field selector \"%s\": term \"%.*s\" has no field name",
                             text, (int)n, p);
    for (size_t k = 0; k < klen; k++) {
        char c = p[k];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || strchr("._-/", c);
        if (!ok || (c == '.' && (k == 0 || k == klen - 1 || p[k - 1] == '.')))
            return aiq_err_field(err, AIQ_EINVAL, "fieldSelector",
                                 "invalid field selector \"%s\": bad field name \"%.*s\"",
                                 text, (int)klen, p);
    }
    r->key = sel_strndup(p, klen);
    if (!r->key) return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    int bad = 0;
    r->vals[0] = sel_unescape(p + vstart, n - vstart, &bad);
    if (!r->vals[0]) {
        if (bad)
            return aiq_err_field(err, AIQ_EINVAL, "fieldSelector",
                                 "invalid field selector \"%s\": bad escape in value \"%.*s\"",
                                 text, (int)(n - vstart), p + vstart);
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    }
    r->nvals = 1;
    return AIQ_OK;
}

struct sel *sel_parse_fields(const char *text, aiq_err *err) {
    struct sel *s = sel_alloc(text, true, err);
    if (!s || !text || !*text) return s;
    const char *p = text;
    for (;;) {
        const char *e = p;
        while (*e && *e != ',') {
            if (*e == '\\' && e[1]) e++;
            e++;
        }
        if (e == p) {
            aiq_err_field(err, AIQ_EINVAL, "fieldSelector",
                          "invalid field selector \"%s\": empty term at offset %d",
                          text, (int)(p - text));
            goto out_free;
        }
        if (s->n == SEL_MAX_REQS) {
            aiq_err_field(err, AIQ_ETOOBIG, "fieldSelector",
                          "field selector has more than %d terms", SEL_MAX_REQS);
            goto out_free;
        }
        if (sel_parse_term(text, p, (size_t)(e - p), &s->r[s->n++], err)) goto out_free;
        if (!*e) break;
        p = e + 1;
    }
    return s;
out_free:
    sel_free(s);
    return NULL;
}

/* ---- matching ----------------------------------------------------------- */

/* Returns the value at dotted path in obj, or NULL. */
static json_object *sel_lookup(json_object *obj, const char *path) {
    json_object *o = obj;
    const char *p = path;
    char seg[256];
    while (*p && o) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof seg) return NULL;
        memcpy(seg, p, n);
        seg[n] = '\0';
        json_object *v = NULL;
        if (!json_object_is_type(o, json_type_object) ||
            !json_object_object_get_ex(o, seg, &v))
            return NULL;
        o = v;
        p = dot ? dot + 1 : p + n;
    }
    return o;
}

/* The text a field compares as: strings as is, null/missing as "". */
static const char *sel_field_text(json_object *v) {
    if (!v || json_object_is_type(v, json_type_null)) return "";
    if (json_object_is_type(v, json_type_string)) return json_object_get_string(v);
    return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

static bool sel_match_label(const struct sel_req *r, json_object *labels) {
    json_object *v = NULL;
    bool has = labels && json_object_is_type(labels, json_type_object) &&
               json_object_object_get_ex(labels, r->key, &v) && v &&
               json_object_is_type(v, json_type_string);
    const char *val = has ? json_object_get_string(v) : NULL;
    bool in = false;
    if (has)
        for (int i = 0; i < r->nvals; i++)
            if (strcmp(val, r->vals[i]) == 0) in = true;
    switch (r->op) {
    case SEL_EQ: case SEL_IN: return has && in;
    case SEL_NE: case SEL_NOTIN: return !has || !in;
    case SEL_EXISTS: return has;
    case SEL_NOTEXISTS: return !has;
    case SEL_GT: case SEL_LT: {
        if (!has) return false;
        char *e;
        long long lv = strtoll(val, &e, 10);
        if (*e || !*val) return false;
        long long rv = strtoll(r->vals[0], NULL, 10);
        return r->op == SEL_GT ? lv > rv : lv < rv;
    }
    }
    return false;
}

/* See selector.h. */
bool sel_match(const struct sel *s, json_object *obj) {
    if (!s) return true;
    json_object *labels = s->fields ? NULL : sel_lookup(obj, "metadata.labels");
    for (int i = 0; i < s->n; i++) {
        const struct sel_req *r = &s->r[i];
        if (s->fields) {
            const char *t = sel_field_text(sel_lookup(obj, r->key));
            bool eq = strcmp(t, r->vals[0]) == 0;
            if (eq != (r->op == SEL_EQ)) return false;
        } else if (!sel_match_label(r, labels)) {
            return false;
        }
    }
    return true;
}

/* See selector.h. */
const char *sel_required_value(const struct sel *s, const char *path) {
    if (!s || !path) return NULL;
    for (int i = 0; i < s->n; i++)
        if ((s->r[i].op == SEL_EQ || (s->r[i].op == SEL_IN && s->r[i].nvals == 1)) &&
            strcmp(s->r[i].key, path) == 0)
            return s->r[i].vals[0];
    return NULL;
}
