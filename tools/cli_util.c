/* cli_util.c -- the UTIL column and source line of `kubectl aiq nodes`
 * (see cli_util.h). */
#include "tools/cli_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "operator/util_source.h"

static json_object *uv_get(json_object *o, const char *k) {
    json_object *v = NULL;
    return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v)
               ? v
               : NULL;
}

/* "8s", "3m", "2h", "4d". */
static void uv_age(char *buf, size_t cap, double s) {
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, cap, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.0fm", s / 60);
    else if (s < 172800)
        snprintf(buf, cap, "%.0fh", s / 3600);
    else
        snprintf(buf, cap, "%.0fd", s / 86400);
}

json_object *cli_util_node(json_object *doc, const char *node) {
    json_object *nodes = uv_get(doc, "nodes");
    for (size_t i = 0; node && nodes && json_object_is_type(nodes, json_type_array) &&
                       i < json_object_array_length(nodes); i++) {
        json_object *n = json_object_array_get_idx(nodes, i), *name = uv_get(n, "name");
        if (name && strcmp(json_object_get_string(name), node) == 0)
            return n;
    }
    return NULL;
}

/* The sample of GPU g in a node entry, or NULL. */
static json_object *uv_gpu(json_object *n, int g) {
    json_object *gpus = uv_get(n, "gpus");
    for (size_t i = 0; gpus && json_object_is_type(gpus, json_type_array) &&
                       i < json_object_array_length(gpus); i++) {
        json_object *x = json_object_array_get_idx(gpus, i);
        if (json_object_get_int(uv_get(x, "gpu")) == g && uv_get(x, "util"))
            return x;
    }
    return NULL;
}

/* The cell from the Node's Alnair annotations into buf, or NULL when a
 * GPU has none. */
static const char *uv_alnair(json_object *node_obj, int ngpus, char *buf, size_t cap) {
    json_object *ann = uv_get(uv_get(node_obj, "metadata"), "annotations");
    size_t len = 0;
    for (int g = 0; ann && g < ngpus; g++) {
        char key[64];
        const char *field = NULL;
        double pct = 0;
        snprintf(key, sizeof key, "%s%d", OPUTIL_ALNAIR_PREFIX, g);
        json_object *v = uv_get(ann, key);
        if (!v || !json_object_is_type(v, json_type_string) ||
            oputil_alnair_value(json_object_get_string(v), &pct, &field) != 0)
            return NULL;
        int w = snprintf(buf + len, len < cap ? cap - len : 0, "%s%.0f", g ? "," : "",
                         pct > 100 ? 100 : pct);
        len += w > 0 ? (size_t)w : 0;
    }
    if (!ann || len + 1 >= cap)
        return NULL;
    snprintf(buf + len, cap - len, "%% ann");
    return buf;
}

/* The UTIL cell; see cli_util.h. */
const char *cli_util_cell(json_object *doc, const char *node, json_object *node_obj, int ngpus,
                           char *buf, size_t cap) {
    char age[16];
    size_t len = 0;
    double oldest = 0;
    bool stale = false, missing = false;
    json_object *n = cli_util_node(doc, node);
    json_object *al = uv_get(doc, "alnairAnnotations");
    bool alnair = al && json_object_get_boolean(al);
    if (!doc || !n || ngpus <= 0) {
        if (doc && alnair && ngpus > 0 && uv_alnair(node_obj, ngpus, buf, cap))
            return buf;
        snprintf(buf, cap, "%s", doc ? "-" : "?");
        return buf;
    }
    buf[0] = '\0';
    for (int g = 0; g < ngpus; g++) {
        json_object *x = uv_gpu(n, g);
        if (!x) {
            missing = true;
            continue;
        }
        double a = json_object_get_double(uv_get(x, "utilAgeSeconds"));
        stale = stale || json_object_get_boolean(uv_get(x, "stale"));
        oldest = a > oldest ? a : oldest;
        int w = snprintf(buf + len, len < cap ? cap - len : 0, "%s%.0f", g ? "," : "",
                         json_object_get_double(uv_get(x, "util")) * 100);
        len += w > 0 ? (size_t)w : 0;
    }
    uv_age(age, sizeof age, oldest);
    if ((stale || missing) && alnair && uv_alnair(node_obj, ngpus, buf, cap))
        return buf; /* the operator falls back to the annotations the same way */
    if (stale)
        snprintf(buf, cap, "stale %s", age);
    else if (missing)
        snprintf(buf, cap, "partial");
    else if (len + 1 < cap)
        snprintf(buf + len, cap - len, "%% %s", age);
    return buf;
}

/* The source line; see cli_util.h. */
const char *cli_util_summary(json_object *doc, double now, char *buf, size_t cap) {
    json_object *src = uv_get(doc, "source"), *url = uv_get(doc, "url");
    char age[20] = "never";
    buf[0] = '\0';
    if (!src || strcmp(json_object_get_string(src), "prometheus") != 0)
        return buf;
    double last = json_object_get_double(uv_get(doc, "lastSuccess"));
    if (last > 0) {
        char a[12];
        uv_age(a, sizeof a, now - last);
        snprintf(age, sizeof age, "%s ago", a);
    }
    if (json_object_get_boolean(uv_get(doc, "up")))
        snprintf(buf, cap, "utilisation: prometheus %s up, last answer %s",
                 url ? json_object_get_string(url) : "?", age);
    else
        snprintf(buf, cap, "utilisation: prometheus %s DOWN (%s), last answer %s: nodes without "
                           "fresh samples are placed without utilisation",
                 url ? json_object_get_string(url) : "?",
                 json_object_get_string(uv_get(doc, "reason")), age);
    return buf;
}
