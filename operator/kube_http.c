/* kube_http.c -- the Kubernetes API client: a pool of curl easy handles,
 * TLS and bearer-token setup from the kubeconfig (or from an exec plugin
 * or oidc, with one retry after a 401), JSON requests
 * (get/create/update/patch/delete), error mapping that keeps the API's
 * Status, the 409 re-read-and-retry helper, and API path building. See
 * kube_http.h for the thread model. */
#include "operator/kube_http.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "operator/kube_auth.h"
#include "operator/kube_http_int.h"
#include "operator/kube_status.h"

#define KUBE_DEFAULT_TIMEOUT_MS 30000L
#define KUBE_DEFAULT_CONNECT_MS 10000L
#define KUBE_DEFAULT_MAX_BODY ((size_t)64 * 1024 * 1024)
#define KUBE_DEFAULT_POOL 4
#define KUBE_MAX_POOL 64
#define KUBE_MAX_PATH 8192
/* Error bodies are parsed up to this size; the rest is not a Status. */
#define KUBE_MAX_ERR_BODY ((size_t)1024 * 1024)
/* A token file is re-read after this many seconds (tokens rotate). */
#define KUBE_TOKEN_RELOAD_S 60

struct kube_client {
    char *server;
    char *url_base;       /* scheme://host:port used in request URLs */
    struct curl_slist *connect_to; /* tls-server-name: name:port -> real host:port */
    long timeout_ms, connect_timeout_ms;
    size_t max_body;
    char *user_agent;
    /* TLS material, copied from the config. */
    char *ca_file, *cert_file, *key_file;
    struct kube_blob ca, cert, key;
    int insecure;
    char *token_file;
    struct kube_auth *auth; /* exec plugin / oidc credential, NULL when none */

    pthread_mutex_t mu;   /* guards everything below */
    pthread_cond_t free_cv;
    CURL **pool;
    unsigned char *busy;
    int npool;
    char *token;          /* current bearer token, NULL for none */
    time_t token_loaded;  /* when token_file was last read */
    unsigned long cred_gen; /* generation of auth's certificate in cert/key */
    unsigned fault_every, fault_count;
    unsigned long nreq;
};

static pthread_once_t kube_curl_once = PTHREAD_ONCE_INIT;
static CURLcode kube_curl_init_rc = CURLE_OK;

static void kube_curl_init(void) {
    kube_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* strdup that maps NULL to NULL and records allocation failure. */
static char *dup_or_null(const char *s, int *failed) {
    if (!s) return NULL;
    char *r = strdup(s);
    if (!r) *failed = 1;
    return r;
}

static void token_wipe_free(char *t) {
    if (!t) return;
    volatile char *p = t;
    while (*p) *p++ = 0;
    free(t);
}

void kube_client_free(struct kube_client *c) {
    if (!c) return;
    for (int i = 0; i < c->npool; i++) curl_easy_cleanup(c->pool[i]);
    kube_auth_free(c->auth);
    free(c->pool);
    free(c->busy);
    pthread_cond_destroy(&c->free_cv);
    pthread_mutex_destroy(&c->mu);
    token_wipe_free(c->token);
    free(c->token_file);
    curl_slist_free_all(c->connect_to);
    free(c->url_base);
    free(c->server);
    free(c->user_agent);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    kube_blob_free(&c->ca);
    kube_blob_free(&c->cert);
    kube_blob_wipe_free(&c->key);
    free(c);
}

/* tls-server-name: requests go to https://NAME:PORT (so curl sends NAME
 * as SNI and verifies the certificate against it) while CONNECT_TO routes
 * the connection to the configured host. Without it url_base is the
 * server as given. */
static aiq_rc client_set_url_base(struct kube_client *c, const char *tls_name, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    CURLU *u = NULL;
    char *host = NULL, *port = NULL, *scheme = NULL, *path = NULL;

    if (!tls_name || !*tls_name) {
        c->url_base = strdup(c->server);
        return c->url_base ? AIQ_OK : aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    }
    for (const char *q = tls_name; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
              *q == '.' || *q == '-'))
            return aiq_err_field(e, AIQ_EINVAL, "tls-server-name",
                                 "tls-server-name \"%.100s\" is not a DNS name", tls_name);
    u = curl_url();
    if (!u) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    if (curl_url_set(u, CURLUPART_URL, c->server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        rc = aiq_err_field(e, AIQ_EINVAL, "server", "server \"%.200s\" is not a valid URL", c->server);
        goto out;
    }
    size_t n = strlen(scheme) + strlen(tls_name) + strlen(port) + strlen(path) + 8;
    c->url_base = malloc(n);
    char *ct = malloc(strlen(tls_name) + strlen(host) + 2 * strlen(port) + 4);
    if (!c->url_base || !ct) {
        free(ct);
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    /* The server may carry a path prefix (a proxy); keep it, minus "/". */
    size_t pl = strlen(path);
    while (pl > 0 && path[pl - 1] == '/') pl--;
    snprintf(c->url_base, n, "%s://%s:%s%.*s", scheme, tls_name, port, (int)pl, path);
    snprintf(ct, strlen(tls_name) + strlen(host) + 2 * strlen(port) + 4, "%s:%s:%s:%s", tls_name,
             port, host, port);
    c->connect_to = curl_slist_append(NULL, ct);
    free(ct);
    if (!c->connect_to) rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

aiq_rc kube_client_create(const struct kube_config *cfg,
                          const struct kube_client_opts *opts,
                          struct kube_client **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct kube_client *c = NULL;
    int failed = 0;

    *out = NULL;
    pthread_once(&kube_curl_once, kube_curl_init);
    if (kube_curl_init_rc != CURLE_OK)
        return aiq_err_set(e, AIQ_EIO, "curl_global_init failed: %s",
                           curl_easy_strerror(kube_curl_init_rc));
    if (!cfg || !cfg->server)
        return aiq_err_field(e, AIQ_EINVAL, "server", "kube config has no server");
    c = calloc(1, sizeof *c);
    if (!c) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->free_cv, NULL);

    c->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : KUBE_DEFAULT_TIMEOUT_MS;
    c->connect_timeout_ms =
        opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : KUBE_DEFAULT_CONNECT_MS;
    c->max_body = opts && opts->max_body > 0 ? opts->max_body : KUBE_DEFAULT_MAX_BODY;
    int npool = opts && opts->pool_size > 0 ? opts->pool_size : KUBE_DEFAULT_POOL;
    if (npool > KUBE_MAX_POOL) npool = KUBE_MAX_POOL;

    c->server = dup_or_null(cfg->server, &failed);
    c->user_agent = dup_or_null(opts && opts->user_agent ? opts->user_agent : "aiq-operator/0.1", &failed);
    c->ca_file = dup_or_null(cfg->ca_file, &failed);
    c->cert_file = dup_or_null(cfg->client_cert_file, &failed);
    c->key_file = dup_or_null(cfg->client_key_file, &failed);
    c->token_file = dup_or_null(cfg->token_file, &failed);
    c->token = dup_or_null(cfg->token, &failed);
    c->insecure = cfg->insecure;
    if (kube_blob_dup(&c->ca, &cfg->ca_data) || kube_blob_dup(&c->cert, &cfg->client_cert_data) ||
        kube_blob_dup(&c->key, &cfg->client_key_data))
        failed = 1;
    /* A token given with the file counts as freshly read. */
    if (c->token) c->token_loaded = time(NULL);
    if (!failed && (rc = client_set_url_base(c, cfg->tls_server_name, e)) != AIQ_OK) goto out_free;
    /* An exec plugin or oidc provider supplies the credential, unless the
     * config also has a static one: that wins, as in kubectl. */
    if (!failed && (cfg->exec || cfg->oidc) && !cfg->token && !cfg->token_file &&
        !cfg->client_cert_file && !cfg->client_cert_data.data) {
        struct kube_auth_opts ao = {.may_prompt = opts ? opts->may_prompt : 0,
                                    .exec_timeout_ms = opts ? opts->exec_timeout_ms : 0,
                                    .oidc_timeout_ms = c->timeout_ms};
        if ((rc = kube_auth_create(cfg, &ao, &c->auth, e)) != AIQ_OK) goto out_free;
    }
    c->pool = calloc((size_t)npool, sizeof *c->pool);
    c->busy = calloc((size_t)npool, 1);
    if (failed || !c->pool || !c->busy) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    for (int i = 0; i < npool; i++) {
        c->pool[i] = curl_easy_init();
        if (!c->pool[i]) {
            rc = aiq_err_set(e, AIQ_ENOMEM, "curl_easy_init failed");
            goto out_free;
        }
        c->npool = i + 1;
    }
    *out = c;
    return AIQ_OK;
out_free:
    kube_client_free(c);
    return rc;
}

const char *kube_client_server(const struct kube_client *c) {
    return c->server;
}

void kube_client_inject_fault(struct kube_client *c, unsigned n) {
    pthread_mutex_lock(&c->mu);
    c->fault_every = n;
    c->fault_count = 0;
    pthread_mutex_unlock(&c->mu);
}

unsigned long kube_client_requests(const struct kube_client *c) {
    pthread_mutex_t *mu = (pthread_mutex_t *)&c->mu; /* lock is not logical state */
    pthread_mutex_lock(mu);
    unsigned long n = c->nreq;
    pthread_mutex_unlock(mu);
    return n;
}

/* Re-reads the token file when due. Called with c->mu held. Keeps the
 * old token if the file cannot be read but one is already known. */
static aiq_rc token_refresh_locked(struct kube_client *c, aiq_err *e) {
    if (!c->token_file) return AIQ_OK;
    time_t now = time(NULL);
    if (c->token && now - c->token_loaded < KUBE_TOKEN_RELOAD_S) return AIQ_OK;
    char *t = NULL;
    size_t len = 0;
    aiq_err le;
    aiq_err_clear(&le);
    aiq_rc rc = kube_read_file(c->token_file, KUBE_CONFIG_MAX_FILE, &t, &len, &le);
    if (rc != AIQ_OK) {
        if (c->token) return AIQ_OK;
        return aiq_err_set(e, rc, "bearer token: %s", le.message);
    }
    while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' ' || t[len - 1] == '\t'))
        t[--len] = '\0';
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)t[i] < 0x21 || (unsigned char)t[i] > 0x7e) {
            token_wipe_free(t);
            return aiq_err_field(e, AIQ_EINVAL, "tokenFile",
                                 "token file %s: byte %zu is not a printable ASCII character",
                                 c->token_file, i);
        }
    token_wipe_free(c->token);
    c->token = t;
    c->token_loaded = now;
    return AIQ_OK;
}

int kube__auth_rejected(struct kube_client *c, unsigned long gen) {
    return c->auth && gen ? kube_auth_rejected(c->auth, gen) : 0;
}

/* Builds "Authorization: Bearer TOKEN" into *out (new string, or NULL
 * when token is NULL). */
static aiq_rc auth_header(const char *token, char **out, aiq_err *e) {
    static const char pre[] = "Authorization: Bearer ";
    *out = NULL;
    if (!token) return AIQ_OK;
    size_t tl = strlen(token);
    *out = malloc(sizeof pre + tl);
    if (!*out) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    memcpy(*out, pre, sizeof pre - 1);
    memcpy(*out + sizeof pre - 1, token, tl + 1);
    return AIQ_OK;
}

/* The request URL, url_base + path, into *out (a new string). path must
 * start with '/' and be at most KUBE_MAX_PATH bytes. */
static aiq_rc request_url(const struct kube_client *c, const char *path, char **out, aiq_err *e) {
    *out = NULL;
    if (!path || path[0] != '/')
        return aiq_err_set(e, AIQ_EINVAL, "API path \"%.100s\" does not start with '/'", path ? path : "");
    size_t plen = strlen(path);
    if (plen > KUBE_MAX_PATH)
        return aiq_err_set(e, AIQ_ETOOBIG, "API path of %zu bytes passes the %d byte cap", plen, KUBE_MAX_PATH);
    size_t blen = strlen(c->url_base);
    char *url = malloc(blen + plen + 1);
    if (!url) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    memcpy(url, c->url_base, blen);
    memcpy(url + blen, path, plen + 1);
    *out = url;
    return AIQ_OK;
}

/* Resets h and sets what does not change between requests of c: the
 * URL and method, timeouts, the route for tls-server-name, compression
 * and how the server's certificate is checked. */
static void easy_set_transport(const struct kube_client *c, CURL *h, const char *method,
                               const char *url, long timeout_ms) {
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    if (timeout_ms > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (c->connect_to) curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
    /* Let the server compress large lists; the body cap applies to the
     * decompressed bytes, so a compression bomb still stops at the cap. */
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (strcmp(method, "GET") == 0) curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    else if (strcmp(method, "POST") != 0) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);

    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (c->ca.data) {
        struct curl_blob b = {.data = c->ca.data, .len = c->ca.len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    } else if (c->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
}

/* Called with c->mu held. With a changing credential (c->auth), keeps
 * the certificate ac carries when it is newer than ours (ac gives it
 * up); without one, re-reads the token file when due and builds *auth,
 * the Authorization header, from the static token. Then hands the client
 * certificate and key to h (curl copies blobs), also after an error. */
static aiq_rc easy_set_credentials_locked(struct kube_client *c, CURL *h,
                                          struct kube_auth_cred *ac, char **auth, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    if (c->auth) {
        /* ac carries a certificate copy only when its generation is not
         * the one we hold; a newer one replaces ours (an older one, from
         * a thread that was overtaken, is dropped). */
        if (ac->gen > c->cred_gen) {
            kube_blob_free(&c->cert);
            kube_blob_wipe_free(&c->key);
            c->cert = ac->cert;
            c->key = ac->key;
            memset(&ac->cert, 0, sizeof ac->cert);
            memset(&ac->key, 0, sizeof ac->key);
            c->cred_gen = ac->gen;
        }
    } else {
        rc = token_refresh_locked(c, e);
        if (rc == AIQ_OK) rc = auth_header(c->token, auth, e);
    }
    if (c->cert.data) {
        struct curl_blob b = {.data = c->cert.data, .len = c->cert.len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (c->cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
    }
    if (c->key.data) {
        struct curl_blob b = {.data = c->key.data, .len = c->key.len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (c->key_file) {
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
    }
    return rc;
}

/* The request's header list into *out (a new list; NULL on error):
 * Accept, no Expect, the Content-Type when content_type is non-NULL and
 * the Authorization line auth when non-NULL. */
static aiq_rc request_headers(const char *content_type, const char *auth,
                              struct curl_slist **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct curl_slist *l = NULL, *tmp = NULL;

    *out = NULL;
    /* "Expect:" off: curl would otherwise wait for 100-continue on larger
     * bodies, a stall with servers that never send it. */
    static const char *const fixed[] = {"Accept: application/json", "Expect:"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        tmp = curl_slist_append(l, fixed[i]);
        if (!tmp) goto out_nomem;
        l = tmp;
    }
    if (content_type) {
        char ct[128];
        if ((size_t)snprintf(ct, sizeof ct, "Content-Type: %s", content_type) >= sizeof ct) {
            rc = aiq_err_set(e, AIQ_EINVAL, "content type \"%.64s\" too long", content_type);
            goto out;
        }
        tmp = curl_slist_append(l, ct);
        if (!tmp) goto out_nomem;
        l = tmp;
    }
    if (auth) {
        tmp = curl_slist_append(l, auth);
        if (!tmp) goto out_nomem;
        l = tmp;
    }
    *out = l;
    l = NULL;
    goto out;
out_nomem:
    rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory building request headers");
out:
    curl_slist_free_all(l);
    return rc;
}

aiq_rc kube__easy_prepare(struct kube_client *c, CURL *h, const char *method,
                          const char *path, const char *content_type,
                          long timeout_ms, struct curl_slist **hdrs,
                          unsigned long *cred_gen, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    char *url = NULL, *auth = NULL;
    struct curl_slist *l = NULL;
    struct kube_auth_cred ac;

    *hdrs = NULL;
    *cred_gen = 0;
    memset(&ac, 0, sizeof ac);
    if ((rc = request_url(c, path, &url, e)) != AIQ_OK) return rc;

    if (c->auth) {
        /* May run the plugin (or wait for another thread's run): not
         * under c->mu, which every request needs. */
        pthread_mutex_lock(&c->mu);
        unsigned long have = c->cred_gen;
        pthread_mutex_unlock(&c->mu);
        if ((rc = kube_auth_get(c->auth, have, &ac, e)) != AIQ_OK) goto out;
        *cred_gen = ac.gen;
        if ((rc = auth_header(ac.token, &auth, e)) != AIQ_OK) goto out;
    }
    easy_set_transport(c, h, method, url, timeout_ms);
    /* The client certificate and the static token may change under us
     * (a plugin's new certificate, a re-read token file): read them, and
     * hand them to curl, under the lock. */
    pthread_mutex_lock(&c->mu);
    rc = easy_set_credentials_locked(c, h, &ac, &auth, e);
    pthread_mutex_unlock(&c->mu);
    if (rc != AIQ_OK) goto out;
    if ((rc = request_headers(content_type, auth, &l, e)) != AIQ_OK) goto out;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    /* CURLOPT_URL copied the string; the header list must outlive the
     * transfer, so it goes to the caller. */
    *hdrs = l;
out:
    token_wipe_free(auth);
    kube_auth_cred_clear(&ac);
    free(url);
    return rc;
}

aiq_rc kube__curl_err(CURLcode cc, const char *errbuf, const char *method,
                      const char *path, aiq_err *e) {
    aiq_rc rc = cc == CURLE_OPERATION_TIMEDOUT ? AIQ_ETIMEOUT : AIQ_EIO;
    return aiq_err_set(e, rc, "%s %.200s: %s", method, path,
                       errbuf && *errbuf ? errbuf : curl_easy_strerror(cc));
}

aiq_rc kube__http_err(int status, const char *body, size_t len,
                      const char *method, const char *path, aiq_err *e) {
    json_object *st = NULL;
    char fallback[400];
    char snippet[201];
    size_t n = 0;

    if (body && len > 0 && len <= KUBE_MAX_ERR_BODY) {
        if (kube_json_parse(body, len, &st, NULL) != AIQ_OK) st = NULL;
    }
    /* A body that is not a Status still says something: keep a printable
     * prefix of it. */
    for (size_t i = 0; body && i < len && n + 1 < sizeof snippet; i++) {
        unsigned char ch = (unsigned char)body[i];
        snippet[n++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : ' ';
    }
    snippet[n] = '\0';
    snprintf(fallback, sizeof fallback, "HTTP %d from %s %.120s%s%s", status, method, path,
             n ? ": " : "", snippet);
    const char *reason = aiq_jpath_str(st, "reason");
    aiq_rc rc = kube_rc_for_http(status, reason);
    if (rc == AIQ_OK) rc = AIQ_EHTTP;
    kube_status_to_err(st, status, rc, fallback, e);
    json_object_put(st);
    return rc;
}

/* Appends to a capped buffer; see kube_http_int.h. */
size_t kube__buf_write(char *data, size_t size, size_t nmemb, void *ud) {
    struct kube__buf *b = ud;
    size_t n = size * nmemb;
    if (n > b->max - b->len) {
        b->toobig = 1;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 16384;
        while (nc < b->len + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->nomem = 1;
            return 0;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

/* Borrows a free pool handle, waiting while all are in use. */
static int pool_get(struct kube_client *c) {
    pthread_mutex_lock(&c->mu);
    for (;;) {
        for (int i = 0; i < c->npool; i++)
            if (!c->busy[i]) {
                c->busy[i] = 1;
                pthread_mutex_unlock(&c->mu);
                return i;
            }
        pthread_cond_wait(&c->free_cv, &c->mu);
    }
}

static void pool_put(struct kube_client *c, int i) {
    pthread_mutex_lock(&c->mu);
    c->busy[i] = 0;
    pthread_cond_signal(&c->free_cv);
    pthread_mutex_unlock(&c->mu);
}

/* Counts one request of c; returns 1 when kube_client_inject_fault says
 * this one fails. */
static int request_count(struct kube_client *c) {
    int fault = 0;
    pthread_mutex_lock(&c->mu);
    c->nreq++;
    if (c->fault_every && ++c->fault_count % c->fault_every == 0) fault = 1;
    pthread_mutex_unlock(&c->mu);
    return fault;
}

/* What a finished transfer (curl result cc, HTTP status code, curl's
 * message errbuf, the answer in buf) comes to: the error of a failed
 * transfer (the body cap, memory, curl's reason), the API's Status for
 * an HTTP error, or AIQ_OK with the body handed to *resp when resp is
 * non-NULL ("" for none; buf->p is then NULL) and its length to
 * *resp_len when that is non-NULL. */
static aiq_rc request_outcome(const struct kube_client *c, CURLcode cc, long code,
                              const char *errbuf, struct kube__buf *buf, const char *method,
                              const char *path, char **resp, size_t *resp_len, aiq_err *e) {
    if (cc != CURLE_OK) {
        if (buf->toobig)
            return aiq_err_set(e, AIQ_ETOOBIG, "%s %.200s: response passes the %zu byte cap",
                               method, path, c->max_body);
        if (buf->nomem)
            return aiq_err_set(e, AIQ_ENOMEM, "%s %.200s: out of memory for the response",
                               method, path);
        return kube__curl_err(cc, errbuf, method, path, e);
    }
    if (code >= 400) return kube__http_err((int)code, buf->p, buf->len, method, path, e);
    if (resp) {
        if (!buf->p) {
            buf->p = calloc(1, 1);
            if (!buf->p) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        }
        *resp = buf->p;
        buf->p = NULL;
    }
    if (resp_len) *resp_len = buf->len;
    return AIQ_OK;
}

aiq_rc kube_request(struct kube_client *c, const char *method,
                    const char *path, const char *content_type,
                    const char *body, size_t len, int *status, char **resp,
                    size_t *resp_len, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct curl_slist *hdrs = NULL;
    struct kube__buf buf = {.max = c->max_body};
    char errbuf[CURL_ERROR_SIZE];
    long code = 0;

    if (status) *status = 0;
    if (resp) *resp = NULL;
    if (resp_len) *resp_len = 0;
    if (request_count(c)) return aiq_err_set(e, AIQ_EIO, "%s %.200s: injected fault", method, path);

    int slot = pool_get(c);
    CURL *h = c->pool[slot];
    CURLcode cc = CURLE_OK;
    for (int attempt = 0;; attempt++) {
        unsigned long gen = 0;
        rc = kube__easy_prepare(c, h, method, path, content_type, c->timeout_ms, &hdrs, &gen, e);
        if (rc != AIQ_OK) goto out_put;
        if (body || strcmp(method, "POST") == 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        }
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, kube__buf_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &buf);
        errbuf[0] = '\0';
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        cc = curl_easy_perform(h);
        code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        /* The error buffer and body pointers die with this call. */
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
        /* Refused with a changing credential: renew it and send the
         * request once more (never twice: a plugin whose tokens the
         * server never takes must not run in a loop). */
        if (cc != CURLE_OK || code != 401 || attempt > 0 || !kube__auth_rejected(c, gen)) break;
        free(buf.p);
        buf = (struct kube__buf){.max = c->max_body};
        curl_slist_free_all(hdrs);
        hdrs = NULL;
        pthread_mutex_lock(&c->mu);
        c->nreq++; /* the retry is one more request sent */
        pthread_mutex_unlock(&c->mu);
    }
    if (status) *status = (int)code;
    rc = request_outcome(c, cc, code, errbuf, &buf, method, path, resp, resp_len, e);
    free(buf.p);
    curl_slist_free_all(hdrs);
out_put:
    pool_put(c, slot);
    return rc;
}

/* Sends body (blen bytes of JSON text; NULL for none) and parses the
 * reply into *out when out is non-NULL. */
static aiq_rc kube_text_call(struct kube_client *c, const char *method, const char *path,
                             const char *ctype, const char *body, size_t blen,
                             json_object **out, aiq_err *e) {
    char *resp = NULL;
    size_t rlen = 0;

    if (out) *out = NULL;
    aiq_rc rc = kube_request(c, method, path, body ? ctype : NULL, body, blen, NULL,
                             out ? &resp : NULL, &rlen, e);
    if (rc != AIQ_OK || !out) goto out;
    rc = kube_json_parse(resp, rlen, out, e);
    if (rc != AIQ_OK) {
        /* Keep the parse message but say where the body came from. */
        if (e) {
            char m[sizeof e->message];
            memcpy(m, e->message, sizeof m);
            snprintf(e->message, sizeof e->message, "%s %.120s: response: %.300s", method, path, m);
        }
    }
out:
    free(resp);
    return rc;
}

/* Sends in (may be NULL) as JSON and parses the reply into *out when out
 * is non-NULL. */
static aiq_rc kube_json_call(struct kube_client *c, const char *method, const char *path,
                             const char *ctype, json_object *in, json_object **out, aiq_err *e) {
    const char *body = NULL;
    size_t blen = 0;

    if (out) *out = NULL;
    if (in) {
        body = json_object_to_json_string_length(in, JSON_C_TO_STRING_PLAIN, &blen);
        if (!body) return aiq_err_set(e, AIQ_ENOMEM, "out of memory serialising %s body", method);
    }
    return kube_text_call(c, method, path, ctype, body, blen, out, e);
}

aiq_rc kube_get(struct kube_client *c, const char *path, json_object **out,
                aiq_err *e) {
    return kube_json_call(c, "GET", path, NULL, NULL, out, e);
}

aiq_rc kube_create(struct kube_client *c, const char *path, json_object *obj,
                   json_object **out, aiq_err *e) {
    return kube_json_call(c, "POST", path, "application/json", obj, out, e);
}

aiq_rc kube_create_text(struct kube_client *c, const char *path, const char *body,
                        size_t len, json_object **out, aiq_err *e) {
    if (!body) return aiq_err_set(e, AIQ_EINVAL, "POST %.200s: no body", path);
    return kube_text_call(c, "POST", path, "application/json", body, len, out, e);
}

aiq_rc kube_update(struct kube_client *c, const char *path, json_object *obj,
                   json_object **out, aiq_err *e) {
    return kube_json_call(c, "PUT", path, "application/json", obj, out, e);
}

aiq_rc kube_patch(struct kube_client *c, const char *path,
                  enum kube_patch_type type, json_object *patch,
                  json_object **out, aiq_err *e) {
    const char *ct = type == KUBE_PATCH_JSON        ? "application/json-patch+json"
                     : type == KUBE_PATCH_STRATEGIC ? "application/strategic-merge-patch+json"
                                                    : "application/merge-patch+json";
    if (!patch) return aiq_err_set(e, AIQ_EINVAL, "PATCH %.200s: no patch body", path);
    return kube_json_call(c, "PATCH", path, ct, patch, out, e);
}

aiq_rc kube_delete(struct kube_client *c, const char *path,
                   const char *propagation, json_object **out, aiq_err *e) {
    return kube_delete_grace(c, path, propagation, -1, out, e);
}

/* Adds key = v (taken, may be NULL from a failed allocation) to opts.
 * Returns 0, or -1 (v freed). */
static int kube_opt(json_object *opts, const char *key, json_object *v) {
    if (!v || json_object_object_add(opts, key, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* See kube_http.h; grace_s < 0 leaves the object's own grace period. */
aiq_rc kube_delete_grace(struct kube_client *c, const char *path, const char *propagation,
                         int grace_s, json_object **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    json_object *opts = NULL;
    if (propagation || grace_s >= 0) {
        opts = json_object_new_object();
        if (!opts ||
            (propagation &&
             kube_opt(opts, "propagationPolicy", json_object_new_string(propagation)) != 0) ||
            (grace_s >= 0 &&
             kube_opt(opts, "gracePeriodSeconds", json_object_new_int(grace_s)) != 0)) {
            rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
            goto out;
        }
    }
    rc = kube_json_call(c, "DELETE", path, "application/json", opts, out, e);
out:
    json_object_put(opts);
    return rc;
}

/* Adds metadata.resourceVersion = rv to patch unless it has one. */
static aiq_rc patch_add_rv(json_object *patch, const char *rv, aiq_err *e) {
    json_object *md = NULL, *v = NULL;
    if (!rv || !json_object_is_type(patch, json_type_object)) return AIQ_OK;
    if (!json_object_object_get_ex(patch, "metadata", &md)) {
        md = json_object_new_object();
        if (!md || json_object_object_add(patch, "metadata", md) != 0) {
            json_object_put(md);
            return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        }
    }
    if (!json_object_is_type(md, json_type_object))
        return aiq_err_field(e, AIQ_EINVAL, "metadata", "patch metadata is not an object");
    if (json_object_object_get_ex(md, "resourceVersion", NULL)) return AIQ_OK;
    v = json_object_new_string(rv);
    if (!v || json_object_object_add(md, "resourceVersion", v) != 0) {
        json_object_put(v);
        return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    }
    return AIQ_OK;
}

aiq_rc kube_patch_retry(struct kube_client *c, const char *path,
                        kube_mutate_fn fn, void *ud, int max_tries,
                        json_object **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    aiq_err le;
    json_object *cur = NULL, *patch = NULL;

    if (out) *out = NULL;
    if (max_tries <= 0) max_tries = 5;
    for (int attempt = 1; attempt <= max_tries; attempt++) {
        aiq_err_clear(&le);
        json_object_put(cur);
        cur = NULL;
        rc = kube_get(c, path, &cur, &le);
        if (rc != AIQ_OK) break;
        patch = NULL;
        rc = fn(ud, cur, &patch);
        if (rc != AIQ_OK) {
            json_object_put(patch);
            patch = NULL;
            aiq_err_set(&le, rc, "PATCH %.200s: the update callback failed: %s", path, aiq_strerror(rc));
            break;
        }
        if (!patch) { /* nothing to change */
            if (out) {
                *out = cur;
                cur = NULL;
            }
            break;
        }
        rc = patch_add_rv(patch, aiq_jpath_str(cur, "metadata.resourceVersion"), &le);
        if (rc == AIQ_OK) rc = kube_patch(c, path, KUBE_PATCH_MERGE, patch, out, &le);
        json_object_put(patch);
        patch = NULL;
        if (rc != AIQ_ECONFLICT) break;
    }
    json_object_put(cur);
    if (rc != AIQ_OK && e && e->code == AIQ_OK) *e = le;
    return rc;
}

/* A path segment: non-empty, not "." or "..", and only characters that
 * need no escaping in a path. */
static int seg_ok(const char *s) {
    if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return 0;
    for (; *s; s++) {
        char ch = *s;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-' || ch == '_' || ch == ':'))
            return 0;
    }
    return 1;
}

aiq_rc kube_path(char *buf, size_t cap, const char *group,
                 const char *version, const char *ns, const char *resource,
                 const char *name, const char *sub, aiq_err *e) {
    struct { const char *what, *v; int need; } parts[] = {
        {"group", group, 0}, {"version", version, 1}, {"namespace", ns, 0},
        {"resource", resource, 1}, {"name", name, 0}, {"subresource", sub, 0},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const char *v = parts[i].v;
        if ((!v || !*v) && !parts[i].need) continue;
        if (!v || !seg_ok(v))
            return aiq_err_field(e, AIQ_EINVAL, parts[i].what, "%s \"%.100s\" is not a valid path segment",
                                 parts[i].what, v ? v : "");
    }
    int n;
    if (group && *group)
        n = snprintf(buf, cap, "/apis/%s/%s", group, version);
    else
        n = snprintf(buf, cap, "/api/%s", version);
    if (n < 0 || (size_t)n >= cap) goto toobig;
    if (ns && *ns) {
        int m = snprintf(buf + n, cap - (size_t)n, "/namespaces/%s", ns);
        if (m < 0 || (size_t)m >= cap - (size_t)n) goto toobig;
        n += m;
    }
    const char *tail[] = {resource, name, sub};
    for (size_t i = 0; i < 3; i++) {
        if (!tail[i] || !*tail[i]) {
            if (i == 1) break; /* no name: no subresource either */
            continue;
        }
        int m = snprintf(buf + n, cap - (size_t)n, "/%s", tail[i]);
        if (m < 0 || (size_t)m >= cap - (size_t)n) goto toobig;
        n += m;
    }
    return AIQ_OK;
toobig:
    if (cap) buf[0] = '\0';
    return aiq_err_set(e, AIQ_ETOOBIG, "API path does not fit in %zu bytes", cap);
}

aiq_rc kube_query_escape(char *buf, size_t cap, const char *s, aiq_err *e) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '-' || ch == '.' || ch == '_' || ch == '~';
        size_t need = plain ? 1 : 3;
        if (n + need + 1 > cap) {
            if (cap) buf[0] = '\0';
            return aiq_err_set(e, AIQ_ETOOBIG, "query value does not fit in %zu bytes", cap);
        }
        if (plain) {
            buf[n++] = (char)ch;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[ch >> 4];
            buf[n++] = hex[ch & 15];
        }
    }
    if (cap == 0) return aiq_err_set(e, AIQ_ETOOBIG, "query value does not fit in 0 bytes");
    buf[n] = '\0';
    return AIQ_OK;
}
