/* validate.c -- the generic Kubernetes validation rules the local server
 * applies to every object, worded as k8s.io/apimachinery words them:
 * DNS-1123 subdomains and labels, qualified names, label values, and
 * ObjectMeta (name or generateName, labels, annotation keys and their
 * 256 KiB total, owner references, finalizers). Kind-specific rules live
 * with their kind (pod_rules.c, objects.c). Lock held where it matters
 * (nothing here touches the server). */
#include "test/apiserver/apisrv_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

#define V_QNAME_MSG "must consist of alphanumeric characters, '-', '_' or '.', and must " \
    "start and end with an alphanumeric character"
#define V_QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define V_QNAME_EX "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '" \
    V_QNAME_FMT "')"
#define V_SUBDOMAIN_MSG "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric " \
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. " \
    "'example.com', regex used for validation is " \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define V_LABEL_MSG "a lowercase RFC 1123 label must consist of lower case alphanumeric " \
    "characters or '-', and must start and end with an alphanumeric character (e.g. " \
    "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define V_VALUE_MSG "a valid label must be an empty string or consist of alphanumeric " \
    "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. " \
    "'MyValue',  or 'my_value',  or '12345', regex used for validation is " \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define V_ANNOTATIONS_MAX (256 * 1024)

static void msgs_add(struct apisrv__msgs *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void msgs_add(struct apisrv__msgs *m, const char *fmt, ...) {
    va_list ap;
    if (m->n >= APISRV__MAX_MSGS) return;
    va_start(ap, fmt);
    vsnprintf(m->m[m->n++], sizeof m->m[0], fmt, ap);
    va_end(ap);
}

static bool v_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
static bool v_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static bool v_is_label_re(const char *s, size_t n) {
    if (n == 0 || !v_lower_alnum(s[0]) || !v_lower_alnum(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!v_lower_alnum(s[i]) && s[i] != '-') return false;
    return true;
}

/* label(\.label)* */
static bool v_is_subdomain_re(const char *s, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!v_is_label_re(s + start, i - start)) return false;
            start = i + 1;
        }
    }
    return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool v_is_qname_re(const char *s, size_t n) {
    if (n == 0 || !v_alnum(s[0]) || !v_alnum(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!v_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') return false;
    return true;
}

/* See apisrv_int.h. */
void apisrv__is_dns1123_subdomain(const char *v, struct apisrv__msgs *m) {
    size_t n = strlen(v);
    if (n > 253) msgs_add(m, "must be no more than 253 characters");
    if (!v_is_subdomain_re(v, n)) msgs_add(m, "%s", V_SUBDOMAIN_MSG);
}

/* See apisrv_int.h. */
void apisrv__is_dns1123_label(const char *v, struct apisrv__msgs *m) {
    size_t n = strlen(v);
    if (n > 63) msgs_add(m, "must be no more than 63 characters");
    if (!v_is_label_re(v, n)) {
        if (v_is_subdomain_re(v, n)) msgs_add(m, "must not contain dots");
        else msgs_add(m, "%s", V_LABEL_MSG);
    }
}

/* See apisrv_int.h: IsQualifiedName. */
void apisrv__is_qualified_name(const char *v, struct apisrv__msgs *m) {
    const char *slash = strchr(v, '/'), *name = v;
    if (slash && strchr(slash + 1, '/')) {
        msgs_add(m, "a qualified name " V_QNAME_MSG " " V_QNAME_EX
                 " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
        return;
    }
    if (slash) {
        char prefix[300];
        size_t pn = (size_t)(slash - v);
        struct apisrv__msgs pm = {0};
        name = slash + 1;
        if (pn == 0) {
            msgs_add(m, "prefix part must be non-empty");
        } else {
            snprintf(prefix, sizeof prefix, "%.*s", (int)(pn < 299 ? pn : 299), v);
            if (pn > 253) msgs_add(&pm, "must be no more than 253 characters");
            if (!v_is_subdomain_re(v, pn)) msgs_add(&pm, "%s", V_SUBDOMAIN_MSG);
            for (int i = 0; i < pm.n; i++) msgs_add(m, "prefix part %s", pm.m[i]);
        }
    }
    size_t nn = strlen(name);
    if (nn == 0) msgs_add(m, "name part must be non-empty");
    else if (nn > 63) msgs_add(m, "name part must be no more than 63 characters");
    if (!v_is_qname_re(name, nn)) msgs_add(m, "name part " V_QNAME_MSG " " V_QNAME_EX);
}

/* See apisrv_int.h. */
void apisrv__is_label_value(const char *v, struct apisrv__msgs *m) {
    size_t n = strlen(v);
    if (n > 63) msgs_add(m, "must be no more than 63 characters");
    if (n > 0 && !v_is_qname_re(v, n)) msgs_add(m, "%s", V_VALUE_MSG);
}

/* See apisrv_int.h: strconv.Quote for the values field.Error shows. */
void apisrv__go_quote(const char *s, char *buf, size_t cap) {
    size_t j = 0;
    if (cap < 3) {
        if (cap) buf[0] = 0;
        return;
    }
    buf[j++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && j + 8 < cap; p++) {
        unsigned char c = *p;
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\t': esc = "\\t"; break;
        case '\r': esc = "\\r"; break;
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\v': esc = "\\v"; break;
        default: break;
        }
        if (esc) {
            j += (size_t)snprintf(buf + j, cap - j, "%s", esc);
        } else if (c < 0x20 || c == 0x7f) {
            j += (size_t)snprintf(buf + j, cap - j, "\\x%02x", c);
        } else {
            buf[j++] = (char)c;
        }
    }
    buf[j++] = '"';
    buf[j] = 0;
}

/* See apisrv_int.h. */
void apisrv__cause_invalid_msgs(struct apisrv__st *st, const char *field, const char *value,
                                const struct apisrv__msgs *m) {
    char q[600];
    apisrv__go_quote(value, q, sizeof q);
    for (int i = 0; i < m->n; i++)
        apisrv__st_cause(st, "FieldValueInvalid", field, "Invalid value: %s: %s", q, m->m[i]);
}

/* See apisrv_int.h: ValidateLabels. */
void apisrv__validate_labels(json_object *labels, const char *field, struct apisrv__st *st) {
    if (!labels || !json_object_is_type(labels, json_type_object)) return;
    json_object_object_foreach(labels, k, v) {
        struct apisrv__msgs km = {0}, vm = {0};
        apisrv__is_qualified_name(k, &km);
        apisrv__cause_invalid_msgs(st, field, k, &km);
        if (v && json_object_is_type(v, json_type_string)) {
            apisrv__is_label_value(json_object_get_string(v), &vm);
            apisrv__cause_invalid_msgs(st, field, json_object_get_string(v), &vm);
        }
    }
}

/* ValidateAnnotations: keys are qualified names once lower-cased, and
 * keys plus values stay within 256 KiB. */
static void v_annotations(json_object *ann, struct apisrv__st *st) {
    size_t total = 0;
    if (!ann || !json_object_is_type(ann, json_type_object)) return;
    json_object_object_foreach(ann, k, v) {
        char low[512];
        struct apisrv__msgs m = {0};
        size_t i;
        for (i = 0; i < sizeof low - 1 && k[i]; i++)
            low[i] = (k[i] >= 'A' && k[i] <= 'Z') ? (char)(k[i] - 'A' + 'a') : k[i];
        low[i] = 0;
        apisrv__is_qualified_name(low, &m);
        apisrv__cause_invalid_msgs(st, "metadata.annotations", k, &m);
        total += strlen(k);
        if (v && json_object_is_type(v, json_type_string)) total += (size_t)json_object_get_string_len(v);
    }
    if (total > V_ANNOTATIONS_MAX)
        apisrv__st_cause(st, "FieldValueTooLong", "metadata.annotations",
                         "Too long: may not be more than %d bytes", V_ANNOTATIONS_MAX);
}

static void v_owner_refs(json_object *refs, struct apisrv__st *st) {
    size_t n = refs && json_object_is_type(refs, json_type_array) ? json_object_array_length(refs) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        const char *av = aiq_jpath_str(r, "apiVersion"), *k = aiq_jpath_str(r, "kind");
        const char *nm = aiq_jpath_str(r, "name"), *uid = aiq_jpath_str(r, "uid");
        const char *slash = av ? strchr(av, '/') : NULL;
        char q[600];
        /* schema.FromAPIVersionAndKind: the version follows the slash */
        if (!av || !av[0] || (slash && !slash[1])) {
            apisrv__go_quote(av ? av : "", q, sizeof q);
            apisrv__st_cause(st, "FieldValueInvalid", "metadata.ownerReferences.apiVersion",
                             "Invalid value: %s: version must not be empty", q);
        }
        if (!k || !k[0])
            apisrv__st_cause(st, "FieldValueInvalid", "metadata.ownerReferences.kind",
                             "Invalid value: \"\": must not be empty");
        if (!nm || !nm[0])
            apisrv__st_cause(st, "FieldValueInvalid", "metadata.ownerReferences.name",
                             "Invalid value: \"\": must not be empty");
        if (!uid || !uid[0])
            apisrv__st_cause(st, "FieldValueInvalid", "metadata.ownerReferences.uid",
                             "Invalid value: \"\": must not be empty");
    }
}

static void v_finalizers(json_object *fins, struct apisrv__st *st) {
    size_t n = fins && json_object_is_type(fins, json_type_array) ? json_object_array_length(fins) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *f = json_object_array_get_idx(fins, i);
        struct apisrv__msgs m = {0};
        if (!f || !json_object_is_type(f, json_type_string)) continue;
        apisrv__is_qualified_name(json_object_get_string(f), &m);
        apisrv__cause_invalid_msgs(st, "metadata.finalizers", json_object_get_string(f), &m);
    }
}

/* The name rule of a kind: namespaces are DNS labels, everything the
 * local server serves otherwise a DNS subdomain. prefix: generateName,
 * whose trailing dash is masked (the random suffix follows it). */
static void v_name(const struct apisrv__type *t, const char *v, bool prefix,
                   struct apisrv__msgs *m) {
    char buf[APISRV__MAX_NAME * 2];
    size_t n;
    snprintf(buf, sizeof buf, "%s", v);
    n = strlen(buf);
    if (prefix && n && buf[n - 1] == '-') buf[n - 1] = 'a';
    if (!strcmp(t->key, "/namespaces")) apisrv__is_dns1123_label(buf, m);
    else apisrv__is_dns1123_subdomain(buf, m);
}

/* See apisrv_int.h: ValidateObjectMetaAccessor. */
void apisrv__validate_meta(const struct apisrv__type *t, json_object *obj, struct apisrv__st *st) {
    json_object *md = NULL, *v;
    const char *gen, *name;
    if (!json_object_object_get_ex(obj, "metadata", &md) || !json_object_is_type(md, json_type_object))
        return;
    gen = aiq_jpath_str(md, "generateName");
    name = aiq_jpath_str(md, "name");
    if (gen && gen[0]) {
        struct apisrv__msgs m = {0};
        v_name(t, gen, true, &m);
        apisrv__cause_invalid_msgs(st, "metadata.generateName", gen, &m);
    }
    if (!name || !name[0]) {
        apisrv__st_cause(st, "FieldValueRequired", "metadata.name",
                         "Required value: name or generateName is required");
    } else {
        struct apisrv__msgs m = {0};
        v_name(t, name, false, &m);
        apisrv__cause_invalid_msgs(st, "metadata.name", name, &m);
    }
    if (json_object_object_get_ex(md, "labels", &v)) apisrv__validate_labels(v, "metadata.labels", st);
    if (json_object_object_get_ex(md, "annotations", &v)) v_annotations(v, st);
    if (json_object_object_get_ex(md, "ownerReferences", &v)) v_owner_refs(v, st);
    if (json_object_object_get_ex(md, "finalizers", &v)) v_finalizers(v, st);
}
