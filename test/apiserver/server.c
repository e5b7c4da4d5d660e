/* server.c -- the local API server's life cycle and HTTP front: starting
 * and stopping (SQLite, type registry, default namespaces, libmicrohttpd
 * with one thread per connection so watches stream while other requests
 * are served), request body collection with a cap, bearer-token
 * authentication, fault injection, the optional self-signed TLS
 * certificate (made with the openssl command-line tool) and the
 * kubeconfig file for clients. */
#include "test/apiserver/apisrv_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

static bool server_is_write(const char *m) {
    return strcmp(m, "GET") && strcmp(m, "HEAD");
}

static bool server_authorized(apisrv *s, struct apisrv__req *r) {
    const char *h;
    char want[600];
    if (!s->token) return true;
    if (!strcmp(r->url, "/healthz") || !strcmp(r->url, "/readyz") || !strcmp(r->url, "/livez"))
        return true;
    h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    snprintf(want, sizeof want, "Bearer %s", s->token);
    return h && !strcmp(h, want);
}

/* Fault injection; returns true when w now holds the injected answer. */
static bool server_fault(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w) {
    double x, y;
    if (s->faults.latency_ms > 0) usleep((useconds_t)(s->faults.latency_ms * 1000));
    if (s->faults.error_500_ratio <= 0 && s->faults.conflict_ratio <= 0) return false;
    pthread_mutex_lock(&s->mu);
    x = rand_r(&s->rnd) / (RAND_MAX + 1.0);
    y = rand_r(&s->rnd) / (RAND_MAX + 1.0);
    pthread_mutex_unlock(&s->mu);
    if (strncmp(r->url, "/api", 4)) return false;  /* discovery stays reliable */
    if (!strcmp(r->url, "/api") || !strcmp(r->url, "/apis")) return false;
    if (x < s->faults.error_500_ratio) {
        apisrv__resp_err(w, 500, "InternalError",
                         "Internal error occurred: injected fault");
        return true;
    }
    if (server_is_write(r->method) && y < s->faults.conflict_ratio) {
        apisrv__resp_err(w, 409, "Conflict",
                         "Operation cannot be fulfilled: injected conflict; please apply "
                         "your changes to the latest version and try again");
        return true;
    }
    return false;
}

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
    else if (!server_authorized(s, r))
        apisrv__resp_err(&w, 401, "Unauthorized", "Unauthorized");
    else if (!server_fault(s, r, &w))
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

/* ---- TLS and kubeconfig --------------------------------------------------- */

static int server_run(char *const argv[]) {
    pid_t pid;
    int st = 0;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *server_slurp(const char *path, size_t cap) {
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    if (!f) return NULL;
    buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    n = fread(buf, 1, cap, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Makes a self-signed certificate for 127.0.0.1/localhost in a temp dir. */
static aiq_rc server_make_cert(apisrv *s, aiq_err *err) {
    char tmpl[] = "/tmp/aiq-apiserver-tls.XXXXXX", key[300], crt[300];
    if (!mkdtemp(tmpl)) return aiq_err_set(err, AIQ_EIO, "mkdtemp: %s", strerror(errno));
    s->tls_dir = strdup(tmpl);
    snprintf(key, sizeof key, "%s/key.pem", tmpl);
    snprintf(crt, sizeof crt, "%s/cert.pem", tmpl);
    char *argv[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "30", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", NULL};
    if (server_run(argv) != 0)
        return aiq_err_set(err, AIQ_EIO, "openssl could not make a certificate (is the openssl tool installed?)");
    s->tls_key = server_slurp(key, 64 * 1024);
    s->tls_cert = server_slurp(crt, 64 * 1024);
    if (!s->tls_key || !s->tls_cert)
        return aiq_err_set(err, AIQ_EIO, "cannot read the generated certificate in %s", tmpl);
    return AIQ_OK;
}

static aiq_rc server_write_kubeconfig(apisrv *s, const char *path, aiq_err *err) {
    FILE *f = fopen(path, "w");
    char *ca = NULL;
    if (!f) return aiq_err_set(err, AIQ_EIO, "kubeconfig %s: %s", path, strerror(errno));
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: aiq-local\n  cluster:\n"
               "    server: %s://127.0.0.1:%d\n", s->tls ? "https" : "http", s->port);
    if (s->tls && (ca = apisrv__base64((const unsigned char *)s->tls_cert, strlen(s->tls_cert))))
        fprintf(f, "    certificate-authority-data: %s\n", ca);
    free(ca);
    fprintf(f, "contexts:\n- name: aiq-local\n  context:\n    cluster: aiq-local\n"
               "    user: aiq-local\n    namespace: default\ncurrent-context: aiq-local\n"
               "preferences: {}\nusers:\n- name: aiq-local\n");
    if (s->token) fprintf(f, "  user:\n    token: %s\n", s->token);
    else fprintf(f, "  user: {}\n");
    if (fclose(f) != 0) return aiq_err_set(err, AIQ_EIO, "kubeconfig %s: write failed", path);
    return AIQ_OK;
}

/* ---- start / stop ------------------------------------------------------------ */

static int server_sync_crd_row(void *u, const char *key, const char *ns,
                               const char *name, const char *json) {
    json_object *o = json_tokener_parse(json);
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
    s->hist_cap = cfg->history > 0 ? cfg->history : 10000;
    s->hist = calloc((size_t)s->hist_cap, sizeof *s->hist);
    if (!s->hist) {
        aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out_fail;
    }
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
    if (s->tls && server_make_cert(s, err) != AIQ_OK) goto out_fail;
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
    if (cfg->kubeconfig_out && server_write_kubeconfig(s, cfg->kubeconfig_out, err) != AIQ_OK)
        goto out_fail;
    return s;
out_fail:
    apisrv_stop(s);
    return NULL;
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
        json_object_put(s->hist[(s->hist_head + i) % s->hist_cap].obj);
    free(s->hist);
    apisrv__types_free(s);
    apisrv__store_close(s);
    if (s->tls_dir) {
        char p[300];
        snprintf(p, sizeof p, "%s/key.pem", s->tls_dir);
        unlink(p);
        snprintf(p, sizeof p, "%s/cert.pem", s->tls_dir);
        unlink(p);
        rmdir(s->tls_dir);
    }
    free(s->tls_dir);
    free(s->tls_key);
    free(s->tls_cert);
    free(s->token);
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
