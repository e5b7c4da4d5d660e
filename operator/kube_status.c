/* kube_status.c -- maps Kubernetes API errors (HTTP status + Status body)
 * to aiq_rc and aiq_err, and the strict, depth-capped JSON parse used for
 * every body and watch line the operator reads from the network. */
#include "operator/kube_status.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

/* One parse with the given depth cap; *deep is set when only the cap
 * stopped it. */
static aiq_rc kube_json_parse_depth(const char *s, size_t len, int depth, json_object **out,
                                    bool *deep, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    json_tokener *tok = NULL;
    json_object *o = NULL;

    *out = NULL;
    *deep = false;
    if (len > (size_t)INT_MAX) {
        rc = aiq_err_set(e, AIQ_ETOOBIG, "JSON document of %zu bytes passes the parser limit", len);
        goto out;
    }
    tok = json_tokener_new_ex(depth);
    if (!tok) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory creating JSON tokener");
        goto out;
    }
    /* Strict: no single quotes, comments or trailing commas; the API
     * server only sends RFC 8259 JSON, anything else is hostile or broken.
     * UTF-8 validation keeps non-UTF-8 bytes out of our strings. */
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, s, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (!o || jerr != json_tokener_success) {
        if (e && e->code == AIQ_OK) e->offset = end;
        if (jerr == json_tokener_continue)
            rc = aiq_err_set(e, AIQ_EPARSE, "truncated JSON at byte %zu", end);
        else if (jerr == json_tokener_error_depth) {
            *deep = true;
            rc = aiq_err_set(e, AIQ_EPARSE, "JSON nested deeper than %d at byte %zu", depth, end);
        }
        else
            rc = aiq_err_set(e, AIQ_EPARSE, "invalid JSON at byte %zu: %s", end,
                             json_tokener_error_desc(jerr));
        goto out_put;
    }
    for (size_t i = end; i < len; i++) {
        char c = s[i];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
            if (e && e->code == AIQ_OK) e->offset = i;
            rc = aiq_err_set(e, AIQ_EPARSE, "trailing data after JSON at byte %zu", i);
            goto out_put;
        }
    }
    *out = o;
    o = NULL;
out_put:
    json_object_put(o);
    json_tokener_free(tok);
out:
    return rc;
}

aiq_rc kube_json_parse(const char *s, size_t len, json_object **out,
                       aiq_err *e) {
    bool deep = false;
    aiq_err first;
    aiq_err_clear(&first);
    aiq_rc rc = kube_json_parse_depth(s, len, KUBE_JSON_MAX_DEPTH, out, &deep, &first);
    if (rc == AIQ_OK || !deep) {
        if (rc != AIQ_OK && e && e->code == AIQ_OK) *e = first;
        return rc;
    }
    /* Rare and legitimate on a real server: see KUBE_JSON_DEEP_DEPTH. */
    return kube_json_parse_depth(s, len, KUBE_JSON_DEEP_DEPTH, out, &deep, e);
}

aiq_rc kube_rc_for_http(int http_status, const char *reason) {
    if (http_status < 400) return AIQ_OK;
    switch (http_status) {
    case 401:
    case 403: return AIQ_EAUTH;
    case 404: return AIQ_ENOTFOUND;
    case 408:
    case 504: return AIQ_ETIMEOUT;
    case 409:
        return (reason && strcmp(reason, "AlreadyExists") == 0) ? AIQ_EEXIST : AIQ_ECONFLICT;
    case 410: return AIQ_EGONE;
    case 415: return AIQ_EUNSUPPORTED;
    case 422: return AIQ_EINVAL;
    default: return AIQ_EHTTP;
    }
}

aiq_rc kube_status_to_err(json_object *st, int http_status, aiq_rc rc,
                          const char *fallback, aiq_err *e) {
    if (!e || e->code != AIQ_OK) return rc;
    const char *kind = aiq_jpath_str(st, "kind");
    if (st && kind && strcmp(kind, "Status") != 0) st = NULL;
    const char *msg = aiq_jpath_str(st, "message");
    const char *reason = aiq_jpath_str(st, "reason");
    int code = http_status;
    json_object *jc = NULL;
    if (code == 0 && st && json_object_object_get_ex(st, "code", &jc) &&
        json_object_is_type(jc, json_type_int))
        code = (int)json_object_get_int64(jc);

    aiq_err_set(e, rc, "%s", (msg && *msg) ? msg : (fallback ? fallback : aiq_strerror(rc)));
    e->http_status = code;
    if (reason) snprintf(e->reason, sizeof e->reason, "%s", reason);
    /* For Invalid (422) keep the first cause's field: callers put it in
     * conditions ("spec.gpus: ..."). */
    json_object *details = NULL, *causes = NULL;
    if (st && json_object_object_get_ex(st, "details", &details) &&
        json_object_object_get_ex(details, "causes", &causes) &&
        json_object_is_type(causes, json_type_array) && json_object_array_length(causes) > 0) {
        const char *field = aiq_jpath_str(json_object_array_get_idx(causes, 0), "field");
        if (field) snprintf(e->field, sizeof e->field, "%s", field);
    }
    return rc;
}
