/* kube_framer.c -- the watch stream's line framer and the decoder of one
 * watch line into (type, object). Pure: no I/O; see kube_framer.h. */
#include "operator/kube_framer.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"

void kube_framer_init(struct kube_framer *f, size_t max_line) {
    memset(f, 0, sizeof *f);
    f->max = max_line ? max_line : KUBE_FRAMER_MAX_LINE;
}

void kube_framer_deinit(struct kube_framer *f) {
    if (!f) return;
    free(f->buf);
    f->buf = NULL;
    f->len = f->cap = 0;
}

void kube_framer_reset(struct kube_framer *f) {
    f->len = 0;
}

size_t kube_framer_pending(const struct kube_framer *f) {
    return f->len;
}

/* Delivers one line unless it is empty after dropping a trailing '\r'. */
static aiq_rc framer_emit(const char *line, size_t n, kube_line_fn fn, void *ud) {
    if (n > 0 && line[n - 1] == '\r') n--;
    if (n == 0) return AIQ_OK;
    return fn(ud, line, n);
}

/* Appends n bytes to the carried partial line, growing geometrically but
 * never past the cap (+1 for a '\r' that may still be stripped). */
static aiq_rc framer_append(struct kube_framer *f, const char *p, size_t n, aiq_err *e) {
    size_t need = f->len + n;
    if (need > f->max + 1)
        return aiq_err_set(e, AIQ_ETOOBIG, "watch line longer than %zu bytes (at least %zu seen)",
                           f->max, need);
    if (need > f->cap) {
        size_t nc = f->cap ? f->cap : 4096;
        while (nc < need) nc *= 2;
        if (nc > f->max + 1) nc = f->max + 1;
        char *nb = realloc(f->buf, nc);
        if (!nb) return aiq_err_set(e, AIQ_ENOMEM, "out of memory growing watch line to %zu bytes", nc);
        f->buf = nb;
        f->cap = nc;
    }
    memcpy(f->buf + f->len, p, n);
    f->len = need;
    return AIQ_OK;
}

aiq_rc kube_framer_feed(struct kube_framer *f, const char *data, size_t len,
                        kube_line_fn fn, void *ud, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    const char *p = data, *end = data + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            rc = framer_append(f, p, (size_t)(end - p), e);
            if (rc != AIQ_OK) goto out_reset;
            break;
        }
        size_t n = (size_t)(nl - p);
        if (f->len == 0) {
            /* Whole line inside this chunk: hand it out without copying. */
            size_t body = (n > 0 && p[n - 1] == '\r') ? n - 1 : n;
            if (body > f->max) {
                rc = aiq_err_set(e, AIQ_ETOOBIG, "watch line of %zu bytes passes the %zu byte cap",
                                 body, f->max);
                goto out_reset;
            }
            rc = framer_emit(p, n, fn, ud);
        } else {
            rc = framer_append(f, p, n, e);
            if (rc != AIQ_OK) goto out_reset;
            size_t body = (f->buf[f->len - 1] == '\r') ? f->len - 1 : f->len;
            if (body > f->max) {
                rc = aiq_err_set(e, AIQ_ETOOBIG, "watch line of %zu bytes passes the %zu byte cap",
                                 body, f->max);
                goto out_reset;
            }
            /* Reset before the callback so a callback error leaves a
             * clean state too. */
            f->len = 0;
            rc = framer_emit(f->buf, body, fn, ud);
        }
        if (rc != AIQ_OK) goto out_reset;
        p = nl + 1;
    }
    return AIQ_OK;
out_reset:
    f->len = 0;
    return rc;
}

const char *kube_event_type_name(enum kube_event_type t) {
    switch (t) {
    case KUBE_EV_ADDED: return "ADDED";
    case KUBE_EV_MODIFIED: return "MODIFIED";
    case KUBE_EV_DELETED: return "DELETED";
    case KUBE_EV_BOOKMARK: return "BOOKMARK";
    case KUBE_EV_RELIST_BEGIN: return "RELIST_BEGIN";
    case KUBE_EV_RELIST_END: return "RELIST_END";
    }
    return "?";
}

aiq_rc kube_watch_decode(const char *line, size_t len,
                         enum kube_event_type *type, json_object **obj,
                         aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    json_object *root = NULL, *jt = NULL, *jo = NULL;

    *obj = NULL;
    rc = kube_json_parse(line, len, &root, e);
    if (rc != AIQ_OK) goto out;
    if (!json_object_is_type(root, json_type_object)) {
        rc = aiq_err_field(e, AIQ_EINVAL, "", "watch event is a JSON %s, not an object",
                           json_type_to_name(json_object_get_type(root)));
        goto out_put;
    }
    if (!json_object_object_get_ex(root, "type", &jt) || !json_object_is_type(jt, json_type_string)) {
        rc = aiq_err_field(e, AIQ_EINVAL, "type", "watch event has no string \"type\"");
        goto out_put;
    }
    if (!json_object_object_get_ex(root, "object", &jo) || !json_object_is_type(jo, json_type_object)) {
        rc = aiq_err_field(e, AIQ_EINVAL, "object", "watch event has no \"object\" object");
        goto out_put;
    }
    const char *ts = json_object_get_string(jt);
    if (strcmp(ts, "ADDED") == 0) *type = KUBE_EV_ADDED;
    else if (strcmp(ts, "MODIFIED") == 0) *type = KUBE_EV_MODIFIED;
    else if (strcmp(ts, "DELETED") == 0) *type = KUBE_EV_DELETED;
    else if (strcmp(ts, "BOOKMARK") == 0) *type = KUBE_EV_BOOKMARK;
    else if (strcmp(ts, "ERROR") == 0) {
        json_object *jc = NULL;
        int code = 0;
        if (json_object_object_get_ex(jo, "code", &jc) && json_object_is_type(jc, json_type_int)) {
            int64_t c = json_object_get_int64(jc);
            code = (c >= 0 && c < 1000) ? (int)c : 0;
        }
        const char *reason = aiq_jpath_str(jo, "reason");
        aiq_rc erc = code == 410 || (reason && (strcmp(reason, "Expired") == 0 ||
                                                strcmp(reason, "Gone") == 0))
                         ? AIQ_EGONE
                         : AIQ_EHTTP;
        rc = kube_status_to_err(jo, code, erc, "watch ERROR event without message", e);
        goto out_put;
    } else {
        rc = aiq_err_field(e, AIQ_EINVAL, "type", "unknown watch event type \"%.64s\"", ts);
        goto out_put;
    }
    *obj = json_object_get(jo);
out_put:
    json_object_put(root);
out:
    return rc;
}
