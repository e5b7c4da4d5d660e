/* server.c -- the local API server's life cycle and HTTP front: starting
 * and stopping (SQLite, type registry, default namespaces, libmicrohttpd
 * with one thread per connection so watches stream while other requests
 * are served), request body collection with a cap, and the order of
 * checks on each request (body size, authentication and impersonation
 * in auth.c, fault injection in faults.c, then routes.c, which applies
 * RBAC in authz.c). */
#include "test/apiserver/apisrv_int.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- responses ------------------------------------------------------------ */

/* See apisrv_int.h. */
void apisrv__resp_text(struct apisrv__resp *w, int code, const char *ctype,
                       const char *text) {
    free(w->body);
    w->code = code;
    w->ctype = ctype;
    w->len = strlen(text);
    w->body = malloc(w->len + 1);
    if (w->body) memcpy(w->body, text, w->len + 1);
    else w->len = 0;
}

/* See apisrv_int.h. */
void apisrv__resp_take(struct apisrv__resp *w, int code, const char *ctype, char *body,
                       size_t len) {
    free(w->body);
    w->code = code;
    w->ctype = ctype;
    w->body = body;
    w->len = len;
}

/* See apisrv_int.h. */
void apisrv__resp_json(struct apisrv__resp *w, int code, json_object *obj) {
    apisrv__resp_text(w, code, "application/json",
                      json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
}

/* See apisrv_int.h. */
void apisrv__resp_status(struct apisrv__resp *w, const struct apisrv__st *st) {
    json_object *o = apisrv__st_json(st);
    apisrv__resp_json(w, st->code ? st->code : 200, o);
    json_object_put(o);
}

/* See apisrv_int.h. */
void apisrv__resp_err(struct apisrv__resp *w, int code, const char *reason,
                      const char *fmt, ...) {
    struct apisrv__st st;
    apisrv__st_init(&st);
    st.code = code;
    snprintf(st.reason, sizeof st.reason, "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st.message, sizeof st.message, fmt, ap);
    va_end(ap);
    apisrv__resp_status(w, &st);
    apisrv__st_deinit(&st);
}

/* See apisrv_int.h. */
const char *apisrv__q(const struct apisrv__req *r, const char *name) {
    if (!r->conn) return NULL;
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* ---- request handling ------------------------------------------------------ */

static enum MHD_Result server_handler(void *cls, struct MHD_Connection *conn,
                                      const char *url, const char *method,
                                      const char *version,
                                      const char *upload_data,
                                      size_t *upload_data_size, void **con_cls) {
    apisrv *s = cls;
    struct apisrv__req *r = *con_cls;
    struct apisrv__resp w = {0};
    struct MHD_Response *resp;
    enum MHD_Result ret;
    (void)version;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->s = s;
        r->conn = conn;
        r->method = method;
        r->url = url;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_big || r->len + n > APISRV__MAX_BODY) {
            r->too_big = true;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t nc = r->cap ? r->cap : 4096;
            while (nc < r->len + n + 1) nc *= 2;
            char *nb = realloc(r->body, nc);
            if (!nb) return MHD_NO;
            r->body = nb;
            r->cap = nc;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        r->body[r->len] = 0;
        return MHD_YES;
    }
    r->accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
    r->ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    if (r->too_big)
        apisrv__resp_err(&w, 413, "RequestEntityTooLarge",
                         "Request entity too large: limit is %u", APISRV__MAX_BODY);
    else if (apisrv__authenticate(s, r, &w) != 0)
        ;   /* w holds the 401 or 403 */
    else if (!apisrv__fault(s, r, &w))
        apisrv__route(r, &w);
    if (w.watch) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
                                                 apisrv__watch_read,
                                                 w.watch, apisrv__watch_free);
    } else if (w.body && w.len) {
        resp = MHD_create_response_from_buffer(w.len, w.body, MHD_RESPMEM_MUST_FREE);
        w.body = NULL;
    } else {
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    free(w.body);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", w.ctype ? w.ctype : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    ret = MHD_queue_response(conn, (unsigned)(w.code ? w.code : 200), resp);
    MHD_destroy_response(resp);
    return ret;
}

static void server_completed(void *cls, struct MHD_Connection *conn,
                             void **con_cls, enum MHD_RequestTerminationCode toe) {
    struct apisrv__req *r = *con_cls;
    (void)cls; (void)conn; (void)toe;
    if (!r) return;
    free(r->body);
    free(r);
    *con_cls = NULL;
}

/* Turns Nagle off so a response written in parts is not delayed. */
static void server_notify(void *cls, struct MHD_Connection *conn,
                          void **socket_context, enum MHD_ConnectionNotificationCode toe) {
    (void)cls; (void)socket_context;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED) return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) {
        int one = 1;
        setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
}

/* ---- start / stop ------------------------------------------------------------ */

static int server_sync_crd_row(void *u, const char *key, const char *ns,
                               const char *name, const char *json) {
    json_object *o = apisrv__parse(json);
    (void)key; (void)ns; (void)name;
    if (o) apisrv__types_sync_crd(u, o, false);
    json_object_put(o);
    return 0;
}

static void server_default_namespaces(apisrv *s) {
    static const char *const names[] = {"default", "kube-system", "kube-public", "kube-node-lease"};
    const struct apisrv__type *t = apisrv__type_by_key(s, "/namespaces");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct apisrv__st st;
        json_object *o = json_object_new_object(), *md = json_object_new_object();
        json_object_object_add(md, "name", json_object_new_string(names[i]));
        json_object_object_add(o, "metadata", md);
        apisrv__st_init(&st);
        apisrv__create(s, t, NULL, o, NULL, NULL, &st);  /* exists on restart */
        apisrv__st_deinit(&st);
    }
}

/* See apiserver.h. On failure nothing is left running or allocated. */
apisrv *apisrv_start(const struct apisrv_config *cfg, aiq_err *err) {
    apisrv *s = calloc(1, sizeof *s);
    struct sockaddr_in sa;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    if (!s) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->faults = cfg->faults;
    s->rnd = cfg->faults.seed ? cfg->faults.seed : (unsigned)time(NULL) ^ (unsigned)getpid();
    s->uid_seq = (unsigned long long)time(NULL) << 20;
    s->time_scale = cfg->time_scale > 0 ? cfg->time_scale : 1;
    s->tls = cfg->tls;
    if (cfg->token && cfg->token[0]) s->token = strdup(cfg->token);
    if (cfg->nodes_file) s->nodes_file = strdup(cfg->nodes_file);
    s->authz_rbac = cfg->authz_rbac;
    s->hist_cap = cfg->history > 0 ? cfg->history : 10000;
    s->hist = calloc((size_t)s->hist_cap, sizeof *s->hist);
    if (!s->hist) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out_fail;
    }
    if (cfg->tokens_file && apisrv__tokens_load(s, cfg->tokens_file, err) != AIQ_OK)
        goto out_fail;
    if (apisrv__store_open(s, cfg->db_path ? cfg->db_path : ":memory:", err) != AIQ_OK)
        goto out_fail;
    if (apisrv__types_init(s) != AIQ_OK) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out_fail;
    }
    s->rv = apisrv__store_load_rv(s);
    s->hist_base_rv = s->rv;
    apisrv__store_scan(s, "apiextensions.k8s.io/customresourcedefinitions", NULL, NULL,
                       NULL, server_sync_crd_row, s);
    server_default_namespaces(s);
    if (s->tls && apisrv__tls_make_cert(s, err) != AIQ_OK) goto out_fail;
    if (s->tls && apisrv__aggr_init(s, err) != AIQ_OK) goto out_fail;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)cfg->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s->tls) flags |= MHD_USE_TLS;
    if (s->tls)
        s->mhd = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, server_handler, s,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                  MHD_OPTION_NOTIFY_COMPLETED, server_completed, s,
                                  MHD_OPTION_NOTIFY_CONNECTION, server_notify, s,
                                  MHD_OPTION_HTTPS_MEM_KEY, s->tls_key,
                                  MHD_OPTION_HTTPS_MEM_CERT, s->tls_cert,
                                  MHD_OPTION_END);
    else
        s->mhd = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, server_handler, s,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                  MHD_OPTION_NOTIFY_COMPLETED, server_completed, s,
                                  MHD_OPTION_NOTIFY_CONNECTION, server_notify, s,
                                  MHD_OPTION_END);
    if (!s->mhd) {
        aiq_err_set(err, AIQ_EIO, "cannot listen on 127.0.0.1:%d", cfg->port);
        goto out_fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    if (cfg->kubeconfig_out && apisrv__write_kubeconfig(s, cfg->kubeconfig_out, err) != AIQ_OK)
        goto out_fail;
    return s;
out_fail:
    apisrv_stop(s);
    return NULL;
}

/* See apiserver.h. */
const char *apisrv_front_proxy_dir(const apisrv *s) {
    return s ? s->fp_dir : NULL;
}

/* See apiserver.h. */
int apisrv_port(const apisrv *s) {
    return s ? s->port : 0;
}

/* See apiserver.h. Ends watches first so connection threads can finish. */
void apisrv_stop(apisrv *s) {
    if (!s) return;
    if (s->sim_stop) s->sim_stop(s);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    if (s->mhd) MHD_stop_daemon(s->mhd);
    for (int i = 0; s->hist && i < s->hist_len; i++)
    {
        json_object_put(s->hist[(s->hist_head + i) % s->hist_cap].obj);
        json_object_put(s->hist[(s->hist_head + i) % s->hist_cap].prev);
        free(s->hist[(s->hist_head + i) % s->hist_cap].text);
    }
    free(s->hist);
    apisrv__types_free(s);
    apisrv__store_close(s);
    apisrv__tls_free(s);
    apisrv__aggr_free(s);
    json_object_put(s->aggr_disc);
    free(s->token);
    apisrv__tokens_free(s);
    free(s->nodes_file);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* See apiserver.h. */
long long apisrv_resource_version(apisrv *s) {
    long long rv;
    pthread_mutex_lock(&s->mu);
    rv = s->rv;
    pthread_mutex_unlock(&s->mu);
    return rv;
}
