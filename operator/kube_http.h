/* kube_http.h -- the operator's Kubernetes API client: one handle built
 * from a kube_config, doing JSON requests with libcurl.
 *
 * Thread model: a kube_client is safe to use from any number of threads
 * at once. It keeps a small pool of curl easy handles (connections are
 * reused per handle); a request borrows one, waiting when all are busy.
 * Watches (kube_watch.h) run one thread each with their own handle.
 *
 * TLS: CA from file or data (a blob), client certificate and key from
 * file or data, insecure-skip-tls-verify, and tls-server-name (requests
 * name that host, CURLOPT_CONNECT_TO routes them to the server).
 *
 * Credentials: a token, tokenFile (re-read every 60 s) or client
 * certificate from the config; else its exec credential plugin or oidc
 * auth-provider (kube_auth.h: cached, renewed at expiry, one renewal at a
 * time). A request refused with 401 while such a credential was used
 * renews it and is sent once more (once: a second 401 is returned).
 * A plugin's client certificate replaces the client's, under its lock.
 *
 * Errors: every HTTP status >= 400 maps to an aiq_rc (kube_rc_for_http:
 * 404 AIQ_ENOTFOUND, 409 AIQ_ECONFLICT or AIQ_EEXIST for AlreadyExists,
 * 410 AIQ_EGONE, 422 AIQ_EINVAL, ...) and aiq_err keeps http_status, the
 * Status reason and the Status message verbatim (e->field gets the first
 * cause's field for 422). Transport failures are AIQ_EIO, timeouts
 * AIQ_ETIMEOUT, a body past the cap AIQ_ETOOBIG. */
#ifndef AIQ_KUBE_HTTP_H
#define AIQ_KUBE_HTTP_H

#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "operator/kubeconfig.h"

struct kube_client; /* opaque */

/* Tuning; zero fields take the defaults shown. */
struct kube_client_opts {
    long timeout_ms;         /* whole request, default 30000 */
    long connect_timeout_ms; /* default 10000 */
    size_t max_body;         /* response cap, default 64 MiB (big lists) */
    int pool_size;           /* concurrent requests, default 4, max 64 */
    const char *user_agent;  /* default "aiq-operator/0.1" */
    int may_prompt;          /* 1: a person runs this (kubectl aiq), so an exec
                              * plugin may read a terminal stdin; 0 (the
                              * operator): never, and interactiveMode Always
                              * is an error at create */
    long exec_timeout_ms;    /* exec plugin time limit, default
                              * KUBE_EXEC_TIMEOUT_MS (kube_exec.h) */
};

/* Builds a client from cfg (copied: cfg may be freed afterwards) and opts
 * (NULL for defaults). Initialises libcurl once per process. Runs no
 * credential plugin yet (the first request does). On AIQ_OK *out is a new
 * client for kube_client_free; on error *out is NULL (kube_auth_create
 * lists the credential errors). */
aiq_rc kube_client_create(const struct kube_config *cfg,
                          const struct kube_client_opts *opts,
                          struct kube_client **out, aiq_err *e);

/* Frees c. No request may be running and every watch on c must have been
 * stopped first. c may be NULL. */
void kube_client_free(struct kube_client *c);

/* The server URL (borrowed, lives as long as c). */
const char *kube_client_server(const struct kube_client *c);

/* Fault injection for tests: when n > 0 every n-th request (counting
 * from the next one) fails with AIQ_EIO before anything is sent. 0 turns
 * it off. */
void kube_client_inject_fault(struct kube_client *c, unsigned n);

/* Number of requests c has sent (for tests and metrics). */
unsigned long kube_client_requests(const struct kube_client *c);

/* A raw request. path starts with '/' and may carry a query string (use
 * kube_query_escape for values). body may be NULL (len 0) and is sent
 * with content_type. On AIQ_OK *status is 2xx/3xx and *resp (may be NULL
 * when the caller passes NULL) is the NUL-terminated body the caller
 * frees, *resp_len its length. For a status >= 400 the rc and e are as
 * described above, *status is set and *resp is NULL. */
aiq_rc kube_request(struct kube_client *c, const char *method,
                    const char *path, const char *content_type,
                    const char *body, size_t len, int *status, char **resp,
                    size_t *resp_len, aiq_err *e);

/* GET path and parse it. On AIQ_OK *out is a new reference. */
aiq_rc kube_get(struct kube_client *c, const char *path, json_object **out,
                aiq_err *e);

/* POST obj to a collection path (create). out may be NULL; on AIQ_OK
 * *out is the created object (new reference). AlreadyExists is
 * AIQ_EEXIST, so idempotent creators can treat it as success. */
aiq_rc kube_create(struct kube_client *c, const char *path, json_object *obj,
                   json_object **out, aiq_err *e);
/* The same with the object as JSON text already (len bytes of body),
 * for a caller that keeps it as text until it is sent. */
aiq_rc kube_create_text(struct kube_client *c, const char *path, const char *body,
                        size_t len, json_object **out, aiq_err *e);

/* PUT obj (full replace; include metadata.resourceVersion to guard
 * against lost updates: a stale one is AIQ_ECONFLICT). out may be NULL. */
aiq_rc kube_update(struct kube_client *c, const char *path, json_object *obj,
                   json_object **out, aiq_err *e);

enum kube_patch_type {
    KUBE_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
    KUBE_PATCH_JSON,      /* application/json-patch+json (RFC 6902) */
    KUBE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds) */
};

/* PATCH path (an object, or ".../status" for the status subresource)
 * with patch. out may be NULL. */
aiq_rc kube_patch(struct kube_client *c, const char *path,
                  enum kube_patch_type type, json_object *patch,
                  json_object **out, aiq_err *e);

/* DELETE path with {"propagationPolicy": propagation} when propagation is
 * non-NULL ("Background", "Foreground", "Orphan"). A missing object is
 * AIQ_ENOTFOUND (callers deleting idempotently treat it as done). */
aiq_rc kube_delete(struct kube_client *c, const char *path,
                   const char *propagation, json_object **out, aiq_err *e);

/* kube_delete with "gracePeriodSeconds": grace_s too (>= 0; 0 deletes a
 * pod at once, without waiting for a kubelet to confirm: for a pod on a
 * node that is gone). */
aiq_rc kube_delete_grace(struct kube_client *c, const char *path, const char *propagation,
                         int grace_s, json_object **out, aiq_err *e);

/* Builds the merge patch for kube_patch_retry from the object as now
 * read (borrowed). Set *patch to a new object (taken by the caller) or
 * leave it NULL when nothing needs to change. A non-AIQ_OK return stops
 * the retry loop and is returned as is. */
typedef aiq_rc (*kube_mutate_fn)(void *ud, json_object *current,
                                 json_object **patch);

/* Optimistic-concurrency write: GET path, call fn, send its merge patch
 * with metadata.resourceVersion of what was read (so a concurrent write
 * gives 409), and on AIQ_ECONFLICT re-GET and call fn again, at most
 * max_tries times in all (<= 0 means 5). Works for ".../status" paths.
 * On AIQ_OK *out (if out is non-NULL) is the written object, or the
 * current one when fn asked for no change. After max_tries conflicts
 * returns AIQ_ECONFLICT with the last Status in e. */
aiq_rc kube_patch_retry(struct kube_client *c, const char *path,
                        kube_mutate_fn fn, void *ud, int max_tries,
                        json_object **out, aiq_err *e);

/* Writes an API path into buf (cap bytes): /api/v1 for group "" or NULL,
 * else /apis/GROUP/VERSION; then /namespaces/NS when ns is non-empty,
 * /RESOURCE, /NAME and /SUB when non-empty. Name parts are checked to be
 * DNS-subdomain-safe characters ([a-z0-9.-]; names with anything else are
 * AIQ_EINVAL naming the part). AIQ_ETOOBIG when buf is too small. */
aiq_rc kube_path(char *buf, size_t cap, const char *group,
                 const char *version, const char *ns, const char *resource,
                 const char *name, const char *sub, aiq_err *e);

/* Percent-encodes s for a query value into buf (cap bytes): unreserved
 * characters stay, everything else becomes %XX. AIQ_ETOOBIG if it does
 * not fit. */
aiq_rc kube_query_escape(char *buf, size_t cap, const char *s, aiq_err *e);

#endif
