/* status.c -- Kubernetes Status results (code, reason, message, details,
 * causes) as the real API server words them, plus the small JSON, time and
 * base64 helpers the other server files share. */
#include "test/apiserver/apisrv_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aiq_time.h"
#include "common/json.h"

/* Clears st to "success". */
void apisrv__st_init(struct apisrv__st *st) {
    memset(st, 0, sizeof *st);
}

/* Frees the causes st holds; st is then as after init. */
void apisrv__st_deinit(struct apisrv__st *st) {
    if (st->causes) json_object_put(st->causes);
    apisrv__st_init(st);
}

/* See apisrv_int.h. */
int apisrv__st_set(struct apisrv__st *st, int code, const char *reason,
                   const char *fmt, ...) {
    if (st->code) return -1;
    st->code = code;
    snprintf(st->reason, sizeof st->reason, "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof st->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* "aijobs.aiq.dev", or "pods" for the core group. */
void apisrv__qualified(const struct apisrv__type *t, char *buf, size_t cap) {
    if (t->group[0])
        snprintf(buf, cap, "%s.%s", t->resource, t->group);
    else
        snprintf(buf, cap, "%s", t->resource);
}

/* See apisrv_int.h. */
int apisrv__st_notfound(struct apisrv__st *st, const struct apisrv__type *t,
                        const char *name) {
    char q[256];
    apisrv__qualified(t, q, sizeof q);
    apisrv__st_set(st, 404, "NotFound", "%s \"%s\" not found", q, name);
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->group, sizeof st->group, "%s", t->group);
    snprintf(st->kind, sizeof st->kind, "%s", t->resource);
    return -1;
}

/* See apisrv_int.h. */
void apisrv__st_cause(struct apisrv__st *st, const char *reason, const char *field,
                      const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    json_object *c = json_object_new_object();
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!st->causes) st->causes = json_object_new_array();
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(msg));
    json_object_object_add(c, "field", json_object_new_string(field));
    json_object_array_add(st->causes, c);
}

/* See apisrv_int.h. */
bool apisrv__st_has_causes(const struct apisrv__st *st) {
    return st->causes && json_object_array_length(st->causes) > 0;
}

/* See apisrv_int.h. */
int apisrv__st_invalid(struct apisrv__st *st, const struct apisrv__type *t,
                       const char *name) {
    char q[256], msg[sizeof st->message];
    size_t n = st->causes ? json_object_array_length(st->causes) : 0, len = 0, shown = 0;
    if (t->group[0]) snprintf(q, sizeof q, "%s.%s", t->kind, t->group);
    else snprintf(q, sizeof q, "%s", t->kind);
    msg[0] = 0;
    for (size_t i = 0; i < n && len < sizeof msg - 1; i++) {
        json_object *c = json_object_array_get_idx(st->causes, i);
        const char *f = aiq_jpath_str(c, "field"), *m = aiq_jpath_str(c, "message");
        bool dup = false;
        /* ToAggregate drops an error whose text repeats an earlier one */
        for (size_t k = 0; k < i && !dup; k++) {
            json_object *e = json_object_array_get_idx(st->causes, k);
            const char *ef = aiq_jpath_str(e, "field"), *em = aiq_jpath_str(e, "message");
            dup = !strcmp(f ? f : "", ef ? ef : "") && !strcmp(m ? m : "", em ? em : "");
        }
        if (dup) continue;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s%s%s", shown ? ", " : "",
                                f && f[0] ? f : "", f && f[0] ? ": " : "", m ? m : "");
        shown++;
    }
    if (len >= sizeof msg) len = sizeof msg - 1;
    apisrv__st_set(st, 422, "Invalid", "%s \"%s\" is invalid: %s%s%s", q, name,
                   shown > 1 ? "[" : "", msg, shown > 1 ? "]" : "");
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->group, sizeof st->group, "%s", t->group);
    snprintf(st->kind, sizeof st->kind, "%s", t->kind);
    return -1;
}

/* The Status object for st (new reference). */
json_object *apisrv__st_json(const struct apisrv__st *st) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string("Status"));
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "metadata", json_object_new_object());
    json_object_object_add(o, "status",
        json_object_new_string(st->code < 400 ? "Success" : "Failure"));
    if (st->message[0])
        json_object_object_add(o, "message", json_object_new_string(st->message));
    if (st->reason[0])
        json_object_object_add(o, "reason", json_object_new_string(st->reason));
    if (st->name[0] || st->kind[0] || st->causes) {
        json_object *d = json_object_new_object();
        if (st->name[0]) json_object_object_add(d, "name", json_object_new_string(st->name));
        if (st->group[0]) json_object_object_add(d, "group", json_object_new_string(st->group));
        if (st->kind[0]) json_object_object_add(d, "kind", json_object_new_string(st->kind));
        if (st->causes) json_object_object_add(d, "causes", json_object_get(st->causes));
        json_object_object_add(o, "details", d);
    }
    json_object_object_add(o, "code", json_object_new_int(st->code ? st->code : 200));
    return o;
}

/* See apisrv_int.h. */
aiq_rc apisrv__st_err(const struct apisrv__st *st, aiq_err *err) {
    aiq_rc rc;
    switch (st->code) {
    case 0: return AIQ_OK;
    case 404: rc = AIQ_ENOTFOUND; break;
    case 409: rc = strcmp(st->reason, "AlreadyExists") ? AIQ_ECONFLICT : AIQ_EEXIST; break;
    case 410: rc = AIQ_EGONE; break;
    case 400: case 422: rc = AIQ_EINVAL; break;
    case 415: rc = AIQ_EUNSUPPORTED; break;
    case 401: case 403: rc = AIQ_EAUTH; break;
    default: rc = AIQ_EHTTP; break;
    }
    if (err && err->code == AIQ_OK) {
        aiq_err_set(err, rc, "%s", st->message);
        err->http_status = st->code;
        snprintf(err->reason, sizeof err->reason, "%s", st->reason);
        if (st->causes && json_object_array_length(st->causes) > 0) {
            json_object *f;
            if (json_object_object_get_ex(json_object_array_get_idx(st->causes, 0), "field", &f))
                snprintf(err->field, sizeof err->field, "%s", json_object_get_string(f));
        }
    }
    return rc;
}

/* Wall-clock time in seconds. */
double apisrv__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Current UTC time as "2026-11-21T10:00:00Z". */
void apisrv__now_rfc3339(char *buf, size_t cap) {
    aiq_rfc3339(buf, cap, (double)time(NULL), 0);
}

/* See apisrv_int.h. */
json_object *apisrv__obj_child(json_object *obj, const char *k) {
    json_object *c;
    if (json_object_object_get_ex(obj, k, &c) && json_object_is_type(c, json_type_object))
        return c;
    c = json_object_new_object();
    json_object_object_add(obj, k, c);
    return c;
}

/* Standard base64 of data (malloc'd, NUL-terminated) or NULL. */
char *apisrv__base64(const unsigned char *data, size_t len) {
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1);
    size_t o = 0;
    if (!out) return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)data[i] << 16;
        if (i + 1 < len) v |= (unsigned)data[i + 1] << 8;
        if (i + 2 < len) v |= data[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[o] = 0;
    return out;
}
