/* yaml_json.c -- YAML (libyaml events) to json-c documents, resolving plain
 * scalars the way kubectl's YAML library does, with limits on size, depth
 * and alias expansion (see yaml_json.h). */
#include "operator/yaml_json.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "common/quote.h"

#define TAG_STR "tag:yaml.org,2002:str"
#define MAX_ANCHORS 4096

struct anchor {
    char *name;
    json_object *obj; /* owned reference */
    size_t weight;    /* expanded size of the anchored node */
};

struct frame {
    json_object *obj; /* owned until attached to its parent */
    bool is_map;
    char *key;        /* pending mapping key, owned */
    char *anchor;     /* anchor to register when the node ends, owned */
    size_t weight;
};

struct conv {
    aiq_err *err;
    struct frame stack[AIQ_MAX_DEPTH];
    int depth;
    struct anchor *anchors;
    int nanchors;
    json_object *root;
    bool have_root;
    size_t doc_weight;
    size_t doc_start;  /* byte offset of the document start */
    int doc_line;
    json_object **docs;
    int *lines;
    int ndocs, capdocs;
};

static aiq_rc conv_err(struct conv *c, aiq_rc rc, const yaml_mark_t *m,
                       const char *what, const char *detail) {
    if (c->err && c->err->code == AIQ_OK) {
        c->err->line = (int)m->line + 1;
        c->err->col = (int)m->column + 1;
        c->err->offset = m->index;
    }
    return aiq_err_set(c->err, rc, "line %d, column %d: %s%s",
                       (int)m->line + 1, (int)m->column + 1, what,
                       detail ? detail : "");
}

static void conv_reset_doc(struct conv *c) {
    for (int i = c->depth - 1; i >= 0; i--) {
        json_object_put(c->stack[i].obj);
        free(c->stack[i].key);
        free(c->stack[i].anchor);
    }
    c->depth = 0;
    for (int i = 0; i < c->nanchors; i++) {
        free(c->anchors[i].name);
        json_object_put(c->anchors[i].obj);
    }
    free(c->anchors);
    c->anchors = NULL;
    c->nanchors = 0;
    json_object_put(c->root);
    c->root = NULL;
    c->have_root = false;
    c->doc_weight = 0;
}

/* Counts weight towards the document's expanded size. */
static aiq_rc conv_weigh(struct conv *c, size_t w, const yaml_mark_t *m) {
    c->doc_weight += w;
    if (c->doc_weight > AIQ_MAX_EXPANDED) {
        char d[96];
        snprintf(d, sizeof d, " (the document expands to more than %d bytes; "
                 "alias bomb?)", AIQ_MAX_EXPANDED);
        return conv_err(c, AIQ_ETOOBIG, m, "document too large", d);
    }
    return AIQ_OK;
}

static aiq_rc conv_anchor(struct conv *c, const char *name, json_object *obj,
                          size_t weight, const yaml_mark_t *m) {
    if (c->nanchors == MAX_ANCHORS)
        return conv_err(c, AIQ_ETOOBIG, m, "too many anchors", NULL);
    if (c->nanchors % 16 == 0) {
        struct anchor *a =
            realloc(c->anchors, (size_t)(c->nanchors + 16) * sizeof *a);
        if (!a) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
        c->anchors = a;
    }
    char *n = strdup(name);
    if (!n) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    c->anchors[c->nanchors].name = n;
    c->anchors[c->nanchors].obj = json_object_get(obj);
    c->anchors[c->nanchors].weight = weight;
    c->nanchors++;
    return AIQ_OK;
}

/* Attaches v (takes ownership, also on error) to the current collection,
 * or makes it the document root. */
static aiq_rc conv_add(struct conv *c, json_object *v, size_t weight,
                       const yaml_mark_t *m) {
    if (c->depth == 0) {
        c->root = v;
        c->have_root = true;
        return AIQ_OK;
    }
    struct frame *f = &c->stack[c->depth - 1];
    f->weight += weight;
    if (!f->is_map) {
        if (json_object_array_add(f->obj, v) != 0) {
            json_object_put(v);
            return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
        }
        return AIQ_OK;
    }
    /* f->key is set: conv_key() ran for this entry. */
    if (json_object_object_get_ex(f->obj, f->key, NULL)) {
        char q[96], d[128];
        json_object_put(v);
        snprintf(d, sizeof d, " %s", aiq_quotes(q, sizeof q, f->key));
        return conv_err(c, AIQ_EPARSE, m, "duplicate key", d);
    }
    int r = json_object_object_add(f->obj, f->key, v);
    free(f->key);
    f->key = NULL;
    if (r != 0) {
        json_object_put(v);
        return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    }
    return AIQ_OK;
}

/* ---- scalar resolution ------------------------------------------------ */

static bool word_in(const char *s, size_t n, const char *const *list) {
    for (; *list; list++)
        if (strlen(*list) == n && memcmp(*list, s, n) == 0) return true;
    return false;
}

static bool all_in(const char *s, const char *set) {
    if (!*s) return false;
    for (; *s; s++)
        if (!strchr(set, *s)) return false;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_yaml_float(const char *s) {
    if (*s == '+' || *s == '-') s++;
    bool digits = false;
    while (*s >= '0' && *s <= '9') { s++; digits = true; }
    if (*s == '.') {
        s++;
        bool frac = false;
        while (*s >= '0' && *s <= '9') { s++; frac = true; }
        if (!digits && !frac) return false;
    } else if (!digits) {
        return false;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return false;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

/* Parses digits of base into *v; false on overflow. */
static bool parse_base(const char *s, int base, uint64_t *v) {
    uint64_t x = 0;
    for (; *s; s++) {
        int d = *s >= '0' && *s <= '9' ? *s - '0'
              : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
              : *s - 'A' + 10;
        if (x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
        x = x * (uint64_t)base + (uint64_t)d;
    }
    *v = x;
    return true;
}

/* Resolves an untagged plain scalar. *out may be NULL (JSON null). */
static aiq_rc resolve_plain(struct conv *c, const char *s, size_t n,
                            json_object **out, const yaml_mark_t *m) {
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const yes[] = {"y", "Y", "yes", "Yes", "YES", "true",
                                      "True", "TRUE", "on", "On", "ON", NULL};
    static const char *const no[] = {"n", "N", "no", "No", "NO", "false",
                                     "False", "FALSE", "off", "Off", "OFF", NULL};
    static const char *const nonfinite[] = {
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf",
        "+.INF", "-.inf", "-.Inf", "-.INF", NULL};

    *out = NULL;
    if (word_in(s, n, nulls)) return AIQ_OK;
    if (word_in(s, n, yes) || word_in(s, n, no)) {
        *out = json_object_new_boolean(word_in(s, n, yes));
        goto check_alloc;
    }
    if (word_in(s, n, nonfinite))
        return conv_err(c, AIQ_EPARSE, m, "infinity and NaN cannot be "
                        "represented in JSON; quote the value", NULL);
    /* Numbers: only scalars that start like one, and short enough. */
    if (n > 0 && n < 128 && strchr("+-.0123456789", s[0])) {
        char b[128];
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (s[i] != '_') b[k++] = s[i];
        b[k] = '\0';
        if (memchr(s, '\0', n)) goto string;
        const char *p = b;
        bool neg = false;
        if (*p == '+' || *p == '-') neg = *p++ == '-';
        uint64_t mag = 0;
        bool isint = false, fits = false;
        if ((p[0] == '0') && (p[1] == 'x' || p[1] == 'X') &&
            all_in(p + 2, "0123456789abcdefABCDEF")) {
            isint = true; fits = parse_base(p + 2, 16, &mag);
        } else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O') &&
                   all_in(p + 2, "01234567")) {
            isint = true; fits = parse_base(p + 2, 8, &mag);
        } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B') &&
                   all_in(p + 2, "01")) {
            isint = true; fits = parse_base(p + 2, 2, &mag);
        } else if (p[0] == '0' && p[1] && all_in(p + 1, "01234567")) {
            isint = true; fits = parse_base(p + 1, 8, &mag);
        } else if (all_in(p, "0123456789") && (p[0] != '0' || !p[1])) {
            isint = true; fits = parse_base(p, 10, &mag);
        }
        if (isint && fits) {
            if (!neg && mag <= (uint64_t)INT64_MAX)
                *out = json_object_new_int64((int64_t)mag);
            else if (!neg)
                *out = json_object_new_uint64(mag);
            else if (mag <= (uint64_t)INT64_MAX)
                *out = json_object_new_int64(-(int64_t)mag);
            else if (mag == (uint64_t)INT64_MAX + 1)
                *out = json_object_new_int64(INT64_MIN);
            if (*out) return AIQ_OK;
        }
        if (is_yaml_float(b)) {
            errno = 0;
            double d = strtod(b, NULL);
            if (!(errno == ERANGE && isinf(d))) {
                *out = json_object_new_double(d);
                goto check_alloc;
            }
        }
    }
string:
    *out = json_object_new_string_len(s, (int)n);
check_alloc:
    if (!*out) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    return AIQ_OK;
}

/* ---- events ----------------------------------------------------------- */

static aiq_rc on_scalar(struct conv *c, const yaml_event_t *ev) {
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    const yaml_mark_t *m = &ev->start_mark;
    json_object *v = NULL;
    aiq_rc rc = AIQ_OK;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                 (!tag || strcmp(tag, TAG_STR) != 0) &&
                 (!tag || strcmp(tag, "!") != 0);

    if (n > (size_t)INT32_MAX)
        return conv_err(c, AIQ_ETOOBIG, m, "scalar too large", NULL);
    struct frame *f = c->depth ? &c->stack[c->depth - 1] : NULL;
    if (f && f->is_map && !f->key) {
        /* A mapping key. */
        if (memchr(s, '\0', n))
            return conv_err(c, AIQ_EPARSE, m, "mapping keys must not contain "
                            "NUL characters", NULL);
        if (plain && n == 2 && memcmp(s, "<<", 2) == 0)
            return conv_err(c, AIQ_EPARSE, m, "YAML merge keys (<<) are not "
                            "supported", NULL);
        if (ev->data.scalar.anchor)
            return conv_err(c, AIQ_EPARSE, m, "anchors on mapping keys are not "
                            "supported", NULL);
        if ((rc = conv_weigh(c, n + 1, m))) return rc;
        f->key = strndup(s, n);
        if (!f->key) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
        return AIQ_OK;
    }
    if (plain)
        rc = resolve_plain(c, s, n, &v, m);
    else if (!(v = json_object_new_string_len(s, (int)n)))
        rc = aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    if (rc) return rc;
    if ((rc = conv_weigh(c, n + 1, m))) goto out_put;
    if (ev->data.scalar.anchor &&
        (rc = conv_anchor(c, (const char *)ev->data.scalar.anchor, v, n + 1, m)))
        goto out_put;
    return conv_add(c, v, n + 1, m);
out_put:
    json_object_put(v);
    return rc;
}

static aiq_rc on_start(struct conv *c, const yaml_event_t *ev, bool is_map) {
    const yaml_mark_t *m = &ev->start_mark;
    const unsigned char *anchor = is_map ? ev->data.mapping_start.anchor
                                         : ev->data.sequence_start.anchor;
    aiq_rc rc = AIQ_OK;
    if (c->depth && c->stack[c->depth - 1].is_map && !c->stack[c->depth - 1].key)
        return conv_err(c, AIQ_EPARSE, m, "mapping keys must be scalars", NULL);
    if (c->depth == AIQ_MAX_DEPTH) {
        char d[64];
        snprintf(d, sizeof d, " (more than %d levels)", AIQ_MAX_DEPTH);
        return conv_err(c, AIQ_ETOOBIG, m, "nesting too deep", d);
    }
    if ((rc = conv_weigh(c, 1, m))) return rc;
    struct frame *f = &c->stack[c->depth];
    memset(f, 0, sizeof *f);
    f->is_map = is_map;
    f->weight = 1;
    f->obj = is_map ? json_object_new_object() : json_object_new_array();
    if (!f->obj) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    c->depth++;
    if (anchor && !(f->anchor = strdup((const char *)anchor)))
        return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    return AIQ_OK;
}

static aiq_rc on_end(struct conv *c, const yaml_event_t *ev) {
    aiq_rc rc = AIQ_OK;
    struct frame f = c->stack[--c->depth];
    if (f.anchor) {
        rc = conv_anchor(c, f.anchor, f.obj, f.weight, &ev->start_mark);
        free(f.anchor);
        if (rc) {
            json_object_put(f.obj);
            free(f.key);
            return rc;
        }
    }
    free(f.key); /* a key without value cannot happen; be safe */
    return conv_add(c, f.obj, f.weight, &ev->start_mark);
}

static aiq_rc on_alias(struct conv *c, const yaml_event_t *ev) {
    const char *name = (const char *)ev->data.alias.anchor;
    const yaml_mark_t *m = &ev->start_mark;
    aiq_rc rc = AIQ_OK;
    char q[96], d[128];
    if (c->depth && c->stack[c->depth - 1].is_map && !c->stack[c->depth - 1].key)
        return conv_err(c, AIQ_EPARSE, m, "aliases as mapping keys are not "
                        "supported", NULL);
    for (int i = c->nanchors - 1; i >= 0; i--) {
        if (strcmp(c->anchors[i].name, name) != 0) continue;
        if ((rc = conv_weigh(c, c->anchors[i].weight, m))) return rc;
        return conv_add(c, json_object_get(c->anchors[i].obj),
                        c->anchors[i].weight, m);
    }
    snprintf(d, sizeof d, " %s", aiq_quotes(q, sizeof q, name));
    return conv_err(c, AIQ_EPARSE, m, "unknown anchor", d);
}

static aiq_rc on_doc_end(struct conv *c, const yaml_event_t *ev) {
    if (!c->have_root || !c->root) {
        conv_reset_doc(c);
        return AIQ_OK; /* empty document: skipped, as kubectl does */
    }
    if (c->ndocs == AIQ_MAX_DOCS) {
        char d[64];
        snprintf(d, sizeof d, " (more than %d)", AIQ_MAX_DOCS);
        return conv_err(c, AIQ_ETOOBIG, &ev->start_mark, "too many documents", d);
    }
    if (c->ndocs == c->capdocs) {
        int cap = c->capdocs ? c->capdocs * 2 : 4;
        json_object **d = realloc(c->docs, (size_t)cap * sizeof *d);
        if (!d) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
        c->docs = d;
        int *l = realloc(c->lines, (size_t)cap * sizeof *l);
        if (!l) return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
        c->lines = l;
        c->capdocs = cap;
    }
    c->docs[c->ndocs] = c->root;
    c->lines[c->ndocs] = c->doc_line;
    c->ndocs++;
    c->root = NULL;
    conv_reset_doc(c);
    return AIQ_OK;
}

/* Sets the error for a failed yaml_parser_parse: out of memory, or a
 * syntax error at the parser's mark (an encoding error at the line and
 * column of its byte offset in text). Returns the code. */
static aiq_rc parse_error(struct conv *c, const yaml_parser_t *parser, const char *text,
                          size_t len) {
    char d[300];
    snprintf(d, sizeof d, "%s%s%s",
             parser->problem ? parser->problem : "syntax error",
             parser->context ? " " : "",
             parser->context ? parser->context : "");
    if (parser->error == YAML_MEMORY_ERROR)
        return aiq_err_set(c->err, AIQ_ENOMEM, "out of memory");
    if (parser->error == YAML_READER_ERROR) {
        /* Encoding errors carry a byte offset, not a mark. */
        yaml_mark_t at = {parser->problem_offset, 0, 0};
        for (size_t i = 0; i < parser->problem_offset && i < len; i++) {
            if (text[i] == '\n') { at.line++; at.column = 0; }
            else at.column++;
        }
        return conv_err(c, AIQ_EPARSE, &at, "YAML syntax error: ", d);
    }
    return conv_err(c, AIQ_EPARSE, &parser->problem_mark, "YAML syntax error: ", d);
}

/* Hands one event to its handler; *done at the end of the stream. */
static aiq_rc on_event(struct conv *c, const yaml_event_t *ev, bool *done) {
    switch (ev->type) {
    case YAML_STREAM_END_EVENT: *done = true; return AIQ_OK;
    case YAML_DOCUMENT_START_EVENT:
        conv_reset_doc(c);
        c->doc_start = ev->start_mark.index;
        c->doc_line = (int)ev->start_mark.line + 1;
        return AIQ_OK;
    case YAML_DOCUMENT_END_EVENT: return on_doc_end(c, ev);
    case YAML_SCALAR_EVENT: return on_scalar(c, ev);
    case YAML_ALIAS_EVENT: return on_alias(c, ev);
    case YAML_MAPPING_START_EVENT: return on_start(c, ev, true);
    case YAML_SEQUENCE_START_EVENT: return on_start(c, ev, false);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT: return on_end(c, ev);
    default: return AIQ_OK;
    }
}

aiq_rc aiq_yaml_to_json_lines(const char *text, size_t len,
                              json_object ***docs, int *ndocs, int **lines,
                              aiq_err *err) {
    yaml_parser_t parser;
    struct conv c;
    aiq_rc rc = AIQ_OK;
    bool done = false;

    *docs = NULL;
    *ndocs = 0;
    if (lines) *lines = NULL;
    if (len > AIQ_MAX_FILE)
        return aiq_err_set(err, AIQ_ETOOBIG, "manifest is %zu bytes, more than "
                           "the limit of %d", len, AIQ_MAX_FILE);
    memset(&c, 0, sizeof c);
    c.err = err;
    if (!yaml_parser_initialize(&parser))
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    while (!done && rc == AIQ_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parse_error(&c, &parser, text, len);
            break;
        }
        if (ev.type != YAML_STREAM_START_EVENT && ev.type != YAML_STREAM_END_EVENT &&
            ev.end_mark.index > c.doc_start &&
            ev.end_mark.index - c.doc_start > AIQ_MAX_MANIFEST) {
            char d[96];
            snprintf(d, sizeof d, " (document starting at line %d is over %d "
                     "bytes)", c.doc_line, AIQ_MAX_MANIFEST);
            rc = conv_err(&c, AIQ_ETOOBIG, &ev.start_mark, "document too large", d);
            yaml_event_delete(&ev);
            break;
        }
        rc = on_event(&c, &ev, &done);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    conv_reset_doc(&c);
    if (rc != AIQ_OK) {
        aiq_json_docs_free(c.docs, c.ndocs);
        free(c.lines);
        return rc;
    }
    *docs = c.docs;
    *ndocs = c.ndocs;
    if (lines) *lines = c.lines;
    else free(c.lines);
    return AIQ_OK;
}

aiq_rc aiq_yaml_to_json(const char *text, size_t len, json_object ***docs,
                        int *ndocs, aiq_err *err) {
    return aiq_yaml_to_json_lines(text, len, docs, ndocs, NULL, err);
}

void aiq_json_docs_free(json_object **docs, int n) {
    if (!docs) return;
    for (int i = 0; i < n; i++) json_object_put(docs[i]);
    free(docs);
}
