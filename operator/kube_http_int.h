/* kube_http_int.h -- module-internal parts of the HTTP client shared with
 * kube_watch.c: setting up a curl easy handle for a request to the API
 * server (URL, TLS, bearer token, headers) and mapping curl failures. */
#ifndef AIQ_KUBE_HTTP_INT_H
#define AIQ_KUBE_HTTP_INT_H

#include <curl/curl.h>

#include "operator/kube_http.h"

/* Resets h and sets URL (server + path), method, TLS and auth options,
 * timeouts (timeout_ms 0: none, for watches) and headers (Accept JSON,
 * Content-Type when content_type is non-NULL, Authorization). Getting the
 * credential may run an exec plugin or refresh an oidc token first
 * (kube_auth_get). *hdrs gets the header list the caller frees with
 * curl_slist_free_all after the transfer (also on error); *cred_gen the
 * generation of the changing credential used (0: none), for
 * kube__auth_rejected. Returns AIQ_OK or AIQ_ENOMEM/AIQ_EIO/AIQ_ETOOBIG,
 * or the credential's error. */
aiq_rc kube__easy_prepare(struct kube_client *c, CURL *h, const char *method,
                          const char *path, const char *content_type,
                          long timeout_ms, struct curl_slist **hdrs,
                          unsigned long *cred_gen, aiq_err *e);

/* The server answered 401 to a request sent with credential generation
 * gen (from kube__easy_prepare). Returns 1 when a retry may succeed: the
 * changing credential was renewed since or will be before the next
 * request. 0 when the client has no changing credential or cannot renew
 * it. */
int kube__auth_rejected(struct kube_client *c, unsigned long gen);

/* Maps a curl failure to AIQ_ETIMEOUT (timeouts) or AIQ_EIO, with a
 * message naming method, path and curl's error text. Returns the rc. */
aiq_rc kube__curl_err(CURLcode cc, const char *errbuf, const char *method,
                      const char *path, aiq_err *e);

/* Fills e from an error response (status >= 400) whose body is body/len
 * (may be a Status or anything else). Returns the mapped rc. */
aiq_rc kube__http_err(int status, const char *body, size_t len,
                      const char *method, const char *path, aiq_err *e);

/* A response body buffer with a cap (curl dynbuf "toobig" style): p is
 * NUL-terminated, grown on demand, owned by the caller (free(p)). */
struct kube__buf {
    char *p;
    size_t len, cap, max;
    int toobig, nomem;
};

/* CURLOPT_WRITEFUNCTION for a struct kube__buf (ud): appends the data, or
 * returns 0 (aborting the transfer) with toobig set when it would pass max
 * or nomem set when allocation fails. */
size_t kube__buf_write(char *data, size_t size, size_t nmemb, void *ud);

#endif
