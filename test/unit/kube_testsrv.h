/* kube_testsrv.h -- a tiny in-test HTTP server (libmicrohttpd) for the
 * Kubernetes client tests: each request is logged and answered by a
 * test-supplied route function with a canned body, an error Status, or a
 * streamed body (watch) sent in pieces, optionally held open. Over TLS it
 * can ask for a client certificate and log the one it got.
 * Header-only (static inline) so test_kube_http.c and test_kube_watch.c
 * can each include it without a shared object. Test code only. */
#ifndef AIQ_KUBE_TESTSRV_H
#define AIQ_KUBE_TESTSRV_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netinet/in.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#define TSRV_MAX_LOG 512
#define TSRV_MAX_CHUNKS 64

struct tsrv_req {
    char method[16];
    char path[512];
    char query[1024]; /* k=v&k=v, values unescaped */
    char auth[256];
    char ctype[128];
    char body[8192];
    unsigned char peer_cert[2048]; /* the client's certificate (DER), when asked for */
    size_t peer_cert_len;
};

/* What the route function fills in. body/chunks are copied by the tsrv. */
struct tsrv_resp {
    int status;              /* default 200 */
    const char *ctype;       /* default application/json */
    const char *body;        /* whole body, or NULL */
    size_t body_len;         /* bytes of body when it is binary (0: strlen) */
    const char *encoding;    /* Content-Encoding header, or NULL */
    const char *chunks[TSRV_MAX_CHUNKS]; /* streamed pieces when nchunks > 0 */
    int nchunks;
    int hold_ms;             /* keep the stream open this long after the pieces */
    int delay_ms;            /* sleep before answering */
};

struct tsrv;
typedef void (*tsrv_route_fn)(struct tsrv *s, const struct tsrv_req *r, struct tsrv_resp *out);

struct tsrv {
    struct MHD_Daemon *d;
    int port;
    char url[64];
    tsrv_route_fn route;
    void *ud;
    int mtls;             /* asks for client certificates */
    const gnutls_datum_t *(*get_peers)(gnutls_session_t, unsigned int *);
    pthread_mutex_t mu;
    struct tsrv_req *log; /* TSRV_MAX_LOG entries, heap: too big for a stack */
    int nlog;
    atomic_int stopping;
};

struct tsrv_conn { /* per-request upload accumulator */
    struct tsrv_req req;
    size_t blen;
};

struct tsrv_stream {
    struct tsrv *s;
    char *chunks[TSRV_MAX_CHUNKS];
    int n, idx;
    size_t off;
    int hold_ms;
};

static inline void tsrv_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline enum MHD_Result tsrv_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v) {
    (void)kind;
    struct tsrv_req *r = cls;
    size_t n = strlen(r->query);
    snprintf(r->query + n, sizeof r->query - n, "%s%s=%s", n ? "&" : "", k, v ? v : "");
    return MHD_YES;
}

static inline ssize_t tsrv_stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    struct tsrv_stream *st = cls;
    if (st->idx < st->n) {
        const char *c = st->chunks[st->idx];
        size_t left = strlen(c) - st->off;
        size_t n = left < max ? left : max;
        memcpy(buf, c + st->off, n);
        st->off += n;
        if (st->off == strlen(c)) {
            st->idx++;
            st->off = 0;
            tsrv_sleep_ms(2); /* separate TCP writes: real chunk boundaries */
        }
        if (n == 0) return 0;
        return (ssize_t)n;
    }
    for (int waited = 0; waited < st->hold_ms && !atomic_load(&st->s->stopping); waited += 10) tsrv_sleep_ms(10);
    return MHD_CONTENT_READER_END_OF_STREAM;
}

static inline void tsrv_stream_free(void *cls) {
    struct tsrv_stream *st = cls;
    for (int i = 0; i < st->n; i++) free(st->chunks[i]);
    free(st);
}

static inline enum MHD_Result tsrv_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                           const char *method, const char *version,
                                           const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    struct tsrv *s = cls;
    struct tsrv_conn *sc = *con_cls;
    if (!sc) {
        sc = calloc(1, sizeof *sc);
        if (!sc) return MHD_NO;
        snprintf(sc->req.method, sizeof sc->req.method, "%s", method);
        snprintf(sc->req.path, sizeof sc->req.path, "%s", url);
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, tsrv_arg, &sc->req);
        const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        snprintf(sc->req.auth, sizeof sc->req.auth, "%s", a ? a : "");
        const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
        snprintf(sc->req.ctype, sizeof sc->req.ctype, "%s", ct ? ct : "");
        const union MHD_ConnectionInfo *ci =
            s->mtls && s->get_peers ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;
        unsigned int npeer = 0;
        const gnutls_datum_t *peer = ci ? s->get_peers((gnutls_session_t)ci->tls_session, &npeer) : NULL;
        if (peer && npeer > 0 && peer[0].size <= sizeof sc->req.peer_cert) {
            memcpy(sc->req.peer_cert, peer[0].data, peer[0].size);
            sc->req.peer_cert_len = peer[0].size;
        }
        *con_cls = sc;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        if (n > sizeof sc->req.body - 1 - sc->blen) n = sizeof sc->req.body - 1 - sc->blen;
        memcpy(sc->req.body + sc->blen, upload, n);
        sc->blen += n;
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&s->mu);
    if (s->nlog < TSRV_MAX_LOG) s->log[s->nlog++] = sc->req;
    pthread_mutex_unlock(&s->mu);

    struct tsrv_resp out = {.status = 200};
    s->route(s, &sc->req, &out);
    if (out.delay_ms) {
        for (int w = 0; w < out.delay_ms && !atomic_load(&s->stopping); w += 10) tsrv_sleep_ms(10);
    }
    struct MHD_Response *resp;
    if (out.nchunks > 0) {
        struct tsrv_stream *st = calloc(1, sizeof *st);
        if (!st) return MHD_NO;
        st->s = s;
        st->hold_ms = out.hold_ms;
        for (int i = 0; i < out.nchunks; i++) st->chunks[st->n++] = strdup(out.chunks[i]);
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, tsrv_stream_read, st,
                                                 tsrv_stream_free);
    } else {
        const char *b = out.body ? out.body : "";
        size_t blen = out.body_len ? out.body_len : strlen(b);
        resp = MHD_create_response_from_buffer(blen, (void *)b, MHD_RESPMEM_MUST_COPY);
    }
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", out.ctype ? out.ctype : "application/json");
    if (out.encoding) MHD_add_response_header(resp, "Content-Encoding", out.encoding);
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)out.status, resp);
    MHD_destroy_response(resp);
    return r;
}

static inline void tsrv_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                  enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)conn;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

/* Starts the tsrv on 127.0.0.1 with an ephemeral port; with key and
 * cert (PEM text that must outlive the tsrv) it serves HTTPS, and with
 * trust too (a CA, PEM) it asks each client for a certificate and logs
 * it (peer_cert; not verified: the test compares it). Returns 0 on
 * success. */
static inline int tsrv_start_mtls(struct tsrv *s, tsrv_route_fn route, void *ud, const char *key,
                                  const char *cert, const char *trust) {
    memset(s, 0, sizeof *s);
    if (trust) {
        /* libmicrohttpd links GnuTLS; its one function we need is found
         * at run time, so the tests need not link GnuTLS themselves. */
        void *lib = dlopen("libgnutls.so.30", RTLD_NOW);
        if (!lib) return -1;
        *(void **)&s->get_peers = dlsym(lib, "gnutls_certificate_get_peers");
        dlclose(lib); /* still loaded: libmicrohttpd holds it */
        if (!s->get_peers) return -1;
        s->mtls = 1;
    }
    s->route = route;
    s->ud = ud;
    s->log = calloc(TSRV_MAX_LOG, sizeof *s->log);
    if (!s->log) return -1;
    pthread_mutex_init(&s->mu, NULL);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC;
    if (key && cert && trust) {
        s->d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, tsrv_handler, s,
                                MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
                                tsrv_completed, s, MHD_OPTION_HTTPS_MEM_KEY, key,
                                MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_TRUST, trust,
                                MHD_OPTION_END);
    } else if (key && cert) {
        s->d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, tsrv_handler, s,
                                MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
                                tsrv_completed, s, MHD_OPTION_HTTPS_MEM_KEY, key,
                                MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_END);
    } else {
        s->d = MHD_start_daemon(flags, 0, NULL, NULL, tsrv_handler, s, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, tsrv_completed, s, MHD_OPTION_END);
    }
    if (!s->d) return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    snprintf(s->url, sizeof s->url, "%s://127.0.0.1:%d", key && cert ? "https" : "http", s->port);
    return s->port ? 0 : -1;
}

/* HTTPS without client certificates. */
static inline int tsrv_start_tls(struct tsrv *s, tsrv_route_fn route, void *ud, const char *key,
                                 const char *cert) {
    return tsrv_start_mtls(s, route, ud, key, cert, NULL);
}

/* Plain-HTTP tsrv_start_tls. */
static inline int tsrv_start(struct tsrv *s, tsrv_route_fn route, void *ud) {
    return tsrv_start_tls(s, route, ud, NULL, NULL);
}

static inline void tsrv_stop(struct tsrv *s) {
    atomic_store(&s->stopping, 1);
    if (s->d) MHD_stop_daemon(s->d);
    s->d = NULL;
    pthread_mutex_destroy(&s->mu);
    free(s->log);
    s->log = NULL;
}

/* Copy of log entry i (zeroed when out of range). */
static inline struct tsrv_req tsrv_log(struct tsrv *s, int i) {
    struct tsrv_req r;
    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&s->mu);
    if (i >= 0 && i < s->nlog) r = s->log[i];
    pthread_mutex_unlock(&s->mu);
    return r;
}

static inline int tsrv_nlog(struct tsrv *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->nlog;
    pthread_mutex_unlock(&s->mu);
    return n;
}

#endif
