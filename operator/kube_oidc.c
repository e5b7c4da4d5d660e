/* kube_oidc.c -- the oidc auth-provider: the exp claim of an id-token,
 * and refreshing it with the refresh-token (discovery, then the token
 * endpoint) over a curl handle of its own. See kube_oidc.h. */
#include "operator/kube_oidc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "common/json.h"
#include "operator/kube_http.h"
#include "operator/kube_http_int.h"
#include "operator/kube_status.h"

#define OIDC_DISCOVERY "/.well-known/openid-configuration"
#define OIDC_CONNECT_MS 10000L

static void wipe(void *p, size_t n) {
    volatile unsigned char *q = p;
    while (n--) *q++ = 0;
}

static void wipe_free(char *s) {
    if (!s) return;
    wipe(s, strlen(s));
    free(s);
}

void kube_oidc_tokens_clear(struct kube_oidc_tokens *t) {
    if (!t) return;
    wipe_free(t->id_token);
    wipe_free(t->refresh_token);
    t->id_token = t->refresh_token = NULL;
}

/* Sets e (first error wins) to "oidc (FIELD): " + fmt. Returns rc. */
static aiq_rc oerr(aiq_err *e, aiq_rc rc, const struct kube_oidc *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static aiq_rc oerr(aiq_err *e, aiq_rc rc, const struct kube_oidc *o, const char *fmt, ...) {
    char msg[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return aiq_err_field(e, rc, o->field, "oidc (%.64s): %s", o->field, msg);
}

aiq_rc kube_jwt_exp(const char *jwt, time_t *exp, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct kube_blob b = {0};
    json_object *claims = NULL, *v = NULL;
    char *std = NULL;

    *exp = 0;
    const char *d1 = jwt ? strchr(jwt, '.') : NULL;
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || d1 == jwt || d2 == d1 + 1 || strchr(d2 + 1, '.'))
        return aiq_err_set(e, AIQ_EINVAL, "not a JWT (want header.payload.signature)");
    /* base64url -> base64, then the kubeconfig's decoder (padding optional). */
    size_t n = (size_t)(d2 - d1 - 1);
    std = malloc(n + 1);
    if (!std) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char ch = d1[1 + i];
        if (ch == '+' || ch == '/' || ch == '=') { /* not base64url */
            rc = aiq_err_set(e, AIQ_EINVAL, "not a JWT: its payload is not base64url");
            goto out;
        }
        std[i] = ch == '-' ? '+' : ch == '_' ? '/' : ch;
    }
    std[n] = '\0';
    aiq_err le;
    aiq_err_clear(&le);
    if (kube_base64_decode(std, n, &b, &le) != AIQ_OK) {
        rc = aiq_err_set(e, AIQ_EINVAL, "not a JWT: its payload is not base64url (%s)", le.message);
        goto out;
    }
    if (kube_json_parse((const char *)b.data, b.len, &claims, &le) != AIQ_OK ||
        !json_object_is_type(claims, json_type_object)) {
        rc = aiq_err_set(e, AIQ_EINVAL, "not a JWT: its payload is not a JSON object");
        goto out;
    }
    if (json_object_object_get_ex(claims, "exp", &v)) {
        if (json_object_is_type(v, json_type_int)) {
            *exp = (time_t)json_object_get_int64(v);
        } else if (json_object_is_type(v, json_type_double)) {
            *exp = (time_t)json_object_get_double(v);
        } else {
            rc = aiq_err_set(e, AIQ_EINVAL, "the JWT's exp claim is not a number");
            goto out;
        }
    }
out:
    json_object_put(claims);
    free(b.data);
    free(std);
    return rc;
}

/* Percent-encodes s into a new string (form and Basic-auth encoding). */
static char *oidc_escape(const char *s) {
    size_t cap = 3 * strlen(s) + 1;
    char *r = malloc(cap);
    if (r && kube_query_escape(r, cap, s, NULL) != AIQ_OK) {
        free(r);
        r = NULL;
    }
    return r;
}

/* One request to the issuer with h: GET url, or POST form when form is
 * non-NULL (with Basic authentication when o has a client-secret). On
 * AIQ_OK *status is the HTTP status and b the body (capped). */
static aiq_rc oidc_do(CURL *h, const struct kube_oidc *o, const char *url, const char *form,
                      long timeout_ms, long *status, struct kube__buf *b, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct curl_slist *hdrs = NULL;
    char errbuf[CURL_ERROR_SIZE], *user = NULL, *pass = NULL;

    *status = 0;
    if (!kube_url_secure(url))
        return oerr(e, AIQ_EINVAL, o, "%.200s must be an https URL (http only to a loopback address)",
                    url);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "aiq-oidc/0.1");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < OIDC_CONNECT_MS ? timeout_ms : OIDC_CONNECT_MS);
    if (o->ca_data.data) {
        struct curl_blob cb = {.data = o->ca_data.data, .len = o->ca_data.len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &cb);
    } else if (o->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file);
    }
    hdrs = curl_slist_append(NULL, "Accept: application/json");
    if (!hdrs) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (form) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, form); /* x-www-form-urlencoded */
        if (o->client_secret) {
            /* RFC 6749 2.3.1: both form-encoded, then Basic. */
            user = oidc_escape(o->client_id);
            pass = oidc_escape(o->client_secret);
            if (!user || !pass) {
                rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
                goto out;
            }
            curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
            curl_easy_setopt(h, CURLOPT_USERNAME, user);
            curl_easy_setopt(h, CURLOPT_PASSWORD, pass);
        }
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, kube__buf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    if (cc != CURLE_OK) {
        if (b->toobig)
            rc = oerr(e, AIQ_ETOOBIG, o, "%.200s: answer passes the %zu byte cap", url, b->max);
        else if (b->nomem)
            rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        else
            rc = oerr(e, cc == CURLE_OPERATION_TIMEDOUT ? AIQ_ETIMEOUT : AIQ_EIO, o, "%s %.200s: %s",
                      form ? "POST" : "GET", url, errbuf[0] ? errbuf : curl_easy_strerror(cc));
    }
out:
    /* Nothing of this call may outlive it in the handle. */
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    wipe_free(user);
    wipe_free(pass);
    return rc;
}

/* A printable prefix of a body for an error message. */
static void snippet(const struct kube__buf *b, char *dst, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; b->p && i < b->len && n + 1 < cap; i++) {
        unsigned char ch = (unsigned char)b->p[i];
        dst[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
    }
    dst[n] = '\0';
}

/* Step 1, discovery: GETs the issuer's openid-configuration with h and
 * copies its token_endpoint into *token_url (a new string; NULL on
 * error). The discovery document is public: freed, not wiped. */
static aiq_rc oidc_discover(CURL *h, const struct kube_oidc *o, long timeout_ms,
                            char **token_url, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct kube__buf b = {.max = KUBE_OIDC_MAX_BODY};
    json_object *doc = NULL;
    long status = 0;
    char snip[160];
    aiq_err le;

    *token_url = NULL;
    size_t il = strlen(o->issuer_url);
    while (il > 0 && o->issuer_url[il - 1] == '/') il--;
    char *url = malloc(il + sizeof OIDC_DISCOVERY);
    if (!url) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    memcpy(url, o->issuer_url, il);
    memcpy(url + il, OIDC_DISCOVERY, sizeof OIDC_DISCOVERY);
    if ((rc = oidc_do(h, o, url, NULL, timeout_ms, &status, &b, e)) != AIQ_OK) goto out;
    if (status != 200) {
        snippet(&b, snip, sizeof snip);
        rc = oerr(e, AIQ_EHTTP, o, "discovery GET %.200s answered HTTP %ld%s%s", url, status,
                  snip[0] ? ": " : "", snip);
        goto out;
    }
    aiq_err_clear(&le);
    if (kube_json_parse(b.p ? b.p : "", b.len, &doc, &le) != AIQ_OK ||
        !json_object_is_type(doc, json_type_object)) {
        rc = oerr(e, AIQ_EINVAL, o, "discovery %.200s: not a JSON object", url);
        goto out;
    }
    const char *te = aiq_jstr(doc, "token_endpoint");
    if (!te || !*te) {
        rc = oerr(e, AIQ_EINVAL, o, "discovery %.200s: no token_endpoint", url);
        goto out;
    }
    if (!(*token_url = strdup(te))) rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
out:
    json_object_put(doc);
    free(b.p);
    free(url);
    return rc;
}

/* The form of step 2, the refresh_token grant: the refresh-token, and
 * the client-id when there is no client-secret (with one, oidc_do sends
 * both in Basic authentication). *form is a new string, NULL on error. */
static aiq_rc oidc_grant_form(const struct kube_oidc *o, const char *refresh_token,
                              char **form, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    char *rt = oidc_escape(refresh_token);
    char *cid = o->client_secret ? NULL : oidc_escape(o->client_id);

    *form = NULL;
    if (!rt || (!o->client_secret && !cid)) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    size_t fl = strlen(rt) + (cid ? strlen(cid) : 0) + 64;
    *form = malloc(fl);
    if (!*form) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(*form, fl, "grant_type=refresh_token&refresh_token=%s%s%s", rt,
             cid ? "&client_id=" : "", cid ? cid : "");
out:
    wipe_free(rt);
    free(cid);
    return rc;
}

/* Step 2's answer from token_url (HTTP status, body b): the new id-token
 * and, when the issuer sent one, the new refresh-token into out (new
 * strings; out is left empty on error). The tokens in the parsed answer
 * are wiped before it is freed. */
static aiq_rc oidc_take_tokens(const struct kube_oidc *o, const char *token_url, long status,
                               const struct kube__buf *b, struct kube_oidc_tokens *out,
                               aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    json_object *doc = NULL;
    char snip[160];
    aiq_err le;

    aiq_err_clear(&le);
    if (kube_json_parse(b->p ? b->p : "", b->len, &doc, &le) != AIQ_OK ||
        !json_object_is_type(doc, json_type_object)) {
        json_object_put(doc);
        doc = NULL;
    }
    if (status != 200) {
        /* RFC 6749 5.2: {"error": ..., "error_description": ...}. */
        const char *er = aiq_jstr(doc, "error"), *ed = aiq_jstr(doc, "error_description");
        snippet(b, snip, sizeof snip);
        rc = oerr(e, AIQ_EAUTH, o, "the issuer refused the refresh-token: POST %.160s answered HTTP %ld: %.80s%s%.160s",
                  token_url, status, er ? er : snip, ed ? ": " : "", ed ? ed : "");
        goto out;
    }
    const char *idt = aiq_jstr(doc, "id_token"), *nrt = aiq_jstr(doc, "refresh_token");
    if (!doc || !idt || !*idt) {
        rc = oerr(e, AIQ_EINVAL, o,
                  "the token response of %.160s has no id_token (was the openid scope requested "
                  "at login?)", token_url);
        goto out;
    }
    for (const char *q = idt; *q; q++)
        if ((unsigned char)*q < 0x21 || (unsigned char)*q > 0x7e) {
            rc = oerr(e, AIQ_EINVAL, o, "the id_token from %.160s has a byte 0x%02x that cannot go "
                      "in an HTTP header", token_url, (unsigned char)*q);
            goto out;
        }
    out->id_token = strdup(idt);
    out->refresh_token = nrt && *nrt ? strdup(nrt) : NULL;
    if (!out->id_token || (nrt && *nrt && !out->refresh_token)) {
        kube_oidc_tokens_clear(out);
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    }
out:
    if (doc) {
        /* The parsed answer holds the new tokens: wipe them. */
        const char *keys[] = {"id_token", "refresh_token", "access_token"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const char *s = aiq_jstr(doc, keys[i]);
            if (s) wipe((char *)s, strlen(s));
        }
    }
    json_object_put(doc);
    return rc;
}

aiq_rc kube_oidc_refresh(const struct kube_oidc *o, const char *refresh_token,
                         long timeout_ms, struct kube_oidc_tokens *out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    CURL *h = NULL;
    char *form = NULL, *token_url = NULL;
    struct kube__buf b = {.max = KUBE_OIDC_MAX_BODY};
    long status = 0;

    memset(out, 0, sizeof *out);
    if (timeout_ms <= 0) timeout_ms = KUBE_OIDC_TIMEOUT_MS;
    if (!refresh_token || !*refresh_token)
        return oerr(e, AIQ_EAUTH, o, "no refresh-token to get a new id-token with");
    h = curl_easy_init();
    if (!h) return aiq_err_set(e, AIQ_ENOMEM, "curl_easy_init failed");

    /* 1. Discovery: where the token endpoint is. */
    if ((rc = oidc_discover(h, o, timeout_ms, &token_url, e)) != AIQ_OK) goto out;
    /* 2. The refresh_token grant. */
    if ((rc = oidc_grant_form(o, refresh_token, &form, e)) != AIQ_OK) goto out;
    if ((rc = oidc_do(h, o, token_url, form, timeout_ms, &status, &b, e)) != AIQ_OK) goto out;
    rc = oidc_take_tokens(o, token_url, status, &b, out, e);
out:
    if (b.p) wipe(b.p, b.len);
    free(b.p);
    wipe_free(form);
    free(token_url);
    curl_easy_cleanup(h);
    return rc;
}
