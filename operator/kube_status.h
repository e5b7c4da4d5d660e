/* kube_status.h -- Kubernetes API error mapping and small JSON helpers
 * shared by the HTTP client and the watch decoder: how an HTTP status and
 * a Status body become an aiq_rc plus aiq_err details (http_status,
 * reason, message), which are never thrown away. */
#ifndef AIQ_KUBE_STATUS_H
#define AIQ_KUBE_STATUS_H

#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"

/* JSON nesting of the first parse of a body or watch line: every object
 * the operator means to act on is far shallower. */
#define KUBE_JSON_MAX_DEPTH 96
/* The real kube-apiserver stores objects nested up to 10,000 levels (its
 * JSON decoder's maxDepth, k8s.io/apimachinery/pkg/util/json), e.g. in
 * an AIJob's free-form pod template. A body deeper than
 * KUBE_JSON_MAX_DEPTH is parsed again with this cap plus room for the
 * list or watch event around the object, so one such object does not
 * make a whole list or watch undecodable: the manifest reader then
 * rejects that object alone, by name, as nested too deep. */
#define KUBE_JSON_DEEP_DEPTH (10000 + 16)

/* Parses len bytes of JSON (need not be NUL-terminated) into *out with
 * the depth caps above. The input must be exactly one JSON value,
 * whitespace allowed around it. Returns AIQ_OK and a new reference in
 * *out, or AIQ_EPARSE with the byte offset in e->offset (*out NULL). */
aiq_rc kube_json_parse(const char *s, size_t len, json_object **out,
                       aiq_err *e);

/* The aiq_rc for an HTTP error status and Status reason (reason may be
 * NULL): 404 AIQ_ENOTFOUND, 409 AlreadyExists AIQ_EEXIST, other 409
 * AIQ_ECONFLICT, 410 AIQ_EGONE, 401/403 AIQ_EAUTH, 415 AIQ_EUNSUPPORTED,
 * 422 AIQ_EINVAL, 408/504 AIQ_ETIMEOUT, anything else >= 400 AIQ_EHTTP.
 * Returns AIQ_OK for status < 400. */
aiq_rc kube_rc_for_http(int http_status, const char *reason);

/* Fills e from a Kubernetes Status object: http_status (the Status "code"
 * when http_status is 0), reason, message, and for 422 the first
 * details.causes[].field as e->field. When st is NULL or carries no
 * message, fallback is the message. First error wins (aiq_err_set), so an
 * e that already holds an error is left alone. Returns rc. */
aiq_rc kube_status_to_err(json_object *st, int http_status, aiq_rc rc,
                          const char *fallback, aiq_err *e);

#endif
