/* test_kube_auth.c -- credentials that change, through the client
 * against an in-test server that takes some tokens and answers 401 to
 * the rest: exec plugins (the scripts of test/fixtures/exec: run once and
 * reused, run again after expiry and after a 401 with one retry, a
 * client certificate, every way a plugin can fail, KUBERNETES_EXEC_INFO,
 * many threads at once) and the oidc auth-provider against a fake issuer
 * served by the same server (an expired id-token is refreshed, a fresh
 * one is not, the new refresh-token is used next). Also the
 * ExecCredential reader and the JWT exp reader on their own. */
#include "test/unit/th.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "operator/kube_auth.h"
#include "operator/kube_exec.h"
#include "operator/kube_http.h"
#include "operator/kube_oidc.h"
#include "operator/kube_status.h"
#include "test/unit/kube_testsrv.h"

/* ---- the server --------------------------------------------------------- */

struct auth_state {
    atomic_int min_ok;        /* tokens numbered below this get 401 */
    atomic_int token_posts;   /* requests to the fake issuer's token endpoint */
    atomic_int discoveries;   /* requests to its discovery document */
    int refuse_refresh;       /* the token endpoint answers 400 invalid_grant */
    int no_discovery;         /* the discovery document is 404 */
    const char *token_endpoint; /* overrides the advertised token endpoint */
    int next_sig;             /* number of the next id_token the issuer makes */
    char last_form[8192];     /* last token request's form and Authorization */
    char last_auth[256];
};

/* The number N of an accepted-looking bearer token ("tok-N" from the
 * plugin, "H.P.sig-N" from the issuer), or -1. */
static int token_number(const char *auth) {
    if (strncmp(auth, "Bearer ", 7) != 0) return -1;
    const char *t = auth + 7, *dash = strrchr(t, '-');
    if ((strncmp(t, "tok-", 4) != 0 && !strstr(t, ".sig-")) || !dash || !dash[1]) return -1;
    char *end = NULL;
    long n = strtol(dash + 1, &end, 10);
    return *end ? -1 : (int)n;
}

/* base64url without padding of s into dst (cap bytes). */
static void b64url(const char *s, char *dst, size_t cap) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(s), k = 0;
    for (size_t i = 0; i < n && k + 5 < cap; i += 3) {
        unsigned v = (unsigned char)s[i] << 16;
        if (i + 1 < n) v |= (unsigned char)s[i + 1] << 8;
        if (i + 2 < n) v |= (unsigned char)s[i + 2];
        dst[k++] = tab[(v >> 18) & 63];
        dst[k++] = tab[(v >> 12) & 63];
        if (i + 1 < n) dst[k++] = tab[(v >> 6) & 63];
        if (i + 2 < n) dst[k++] = tab[v & 63];
    }
    dst[k] = '\0';
}

/* A JWT-shaped token with claim exp and signature "sig-N". */
static void make_jwt(char *dst, size_t cap, long exp, int n) {
    char h[64], p[256], claims[128];
    b64url("{\"alg\":\"none\",\"typ\":\"JWT\"}", h, sizeof h);
    snprintf(claims, sizeof claims, "{\"sub\":\"u\",\"exp\":%ld}", exp);
    b64url(claims, p, sizeof p);
    snprintf(dst, cap, "%s.%s.sig-%d", h, p, n);
}

static const char unauthorized[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Unauthorized\","
    "\"reason\":\"Unauthorized\",\"code\":401}";

static void route(struct tsrv *s, const struct tsrv_req *r, struct tsrv_resp *o) {
    struct auth_state *st = s->ud;
    static _Thread_local char buf[2048];
    if (strcmp(r->path, "/api/thing") == 0) {
        int n = token_number(r->auth);
        if (n >= 0 && n >= atomic_load(&st->min_ok)) {
            o->body = "{\"kind\":\"Thing\"}";
        } else {
            o->status = 401;
            o->body = unauthorized;
        }
    } else if (strcmp(r->path, "/open") == 0) {
        o->body = "{\"kind\":\"Open\"}";
    } else if (strcmp(r->path, "/idp/.well-known/openid-configuration") == 0) {
        atomic_fetch_add(&st->discoveries, 1);
        if (st->no_discovery) {
            o->status = 404;
            o->body = "no such thing";
            return;
        }
        if (st->token_endpoint)
            snprintf(buf, sizeof buf, "{\"issuer\":\"%s/idp\",\"token_endpoint\":\"%s\"}", s->url,
                     st->token_endpoint);
        else
            snprintf(buf, sizeof buf, "{\"issuer\":\"%s/idp\",\"token_endpoint\":\"%s/idp/token\"}",
                     s->url, s->url);
        o->body = buf;
    } else if (strcmp(r->path, "/idp/token") == 0 && strcmp(r->method, "POST") == 0) {
        atomic_fetch_add(&st->token_posts, 1);
        pthread_mutex_lock(&s->mu);
        snprintf(st->last_form, sizeof st->last_form, "%s", r->body);
        snprintf(st->last_auth, sizeof st->last_auth, "%s", r->auth);
        int n = st->next_sig++;
        pthread_mutex_unlock(&s->mu);
        if (st->refuse_refresh) {
            o->status = 400;
            o->body = "{\"error\":\"invalid_grant\",\"error_description\":\"refresh token revoked\"}";
            return;
        }
        char jwt[512];
        make_jwt(jwt, sizeof jwt, (long)time(NULL) + 3600, n);
        snprintf(buf, sizeof buf,
                 "{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"expires_in\":3600,"
                 "\"id_token\":\"%s\",\"refresh_token\":\"rt-%d\"}", jwt, n);
        o->body = buf;
    } else {
        o->status = 404;
        o->body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404,\"message\":\"no route\"}";
    }
}

/* ---- helpers ------------------------------------------------------------------ */

/* A fresh state directory for a plugin. */
static void dir_make(char *dir, size_t cap) {
    snprintf(dir, cap, "/tmp/aiq-exec-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
}

static void dir_remove(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[512];
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* The text of DIR/NAME (caller frees), or NULL. */
static char *dir_read(const char *dir, const char *name) {
    char p[512], *t = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (kube_read_file(p, 1 << 20, &t, &len, NULL) != AIQ_OK) return NULL;
    return t;
}

/* How many times the plugin with state dir ran. */
static int runs(const char *dir) {
    char *t = dir_read(dir, "runs");
    int n = t ? (int)strtol(t, NULL, 10) : 0;
    free(t);
    return n;
}

static const char *fixture(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/test/fixtures/exec/%s", th_srcdir(), name);
    return buf;
}

/* A kubeconfig for server whose user runs the exec plugin command with
 * args (a YAML flow list, or NULL), AIQ_PLUGIN_DIR=dir plus the env
 * lines env (each "      - {name: ..., value: ...}\n", or ""), and more
 * exec fields in extra (each "      key: value\n"). cluster: more lines
 * of the cluster (4 spaces in). */
static struct kube_config *exec_config(const char *server, const char *cluster, const char *command,
                                       const char *args, const char *dir, const char *env,
                                       const char *extra, aiq_err *e) {
    char y[8192];
    struct kube_config *cfg = NULL;
    /* interactiveMode is required in v1: Never unless extra says. */
    const char *mode = extra && strstr(extra, "interactiveMode") ? "" : "      interactiveMode: Never\n";
    snprintf(y, sizeof y,
             "current-context: c\n"
             "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
             "clusters:\n- name: k\n  cluster:\n    server: %s\n%s"
             "users:\n- name: u\n  user:\n    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: %s\n"
             "      args: %s\n"
             "      env:\n      - {name: AIQ_PLUGIN_DIR, value: \"%s\"}\n%s"
             "%s%s",
             server, cluster ? cluster : "", command, args ? args : "[]", dir, env ? env : "", mode,
             extra ? extra : "");
    aiq_err_clear(e);
    if (kube_config_parse(y, strlen(y), NULL, NULL, &cfg, e) != AIQ_OK) return NULL;
    return cfg;
}

static struct kube_client *client(const struct kube_config *cfg, const struct kube_client_opts *o,
                                  aiq_err *e) {
    struct kube_client *c = NULL;
    aiq_err_clear(e);
    if (kube_client_create(cfg, o, &c, e) != AIQ_OK) return NULL;
    return c;
}

static aiq_rc get(struct kube_client *c, const char *path, aiq_err *e) {
    json_object *o = NULL;
    aiq_err_clear(e);
    aiq_rc rc = kube_get(c, path, &o, e);
    json_object_put(o);
    return rc;
}

/* ---- exec plugins through the client ----------------------------------------- */

TEST(exec_token_is_reused_until_refused) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    dir_make(dir, sizeof dir);
    struct kube_config *cfg = exec_config(s.url, NULL, fixture("token.sh", cmd, sizeof cmd), NULL,
                                          dir, NULL, NULL, &e);
    CHECK(cfg != NULL);
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    /* No request yet: nothing ran. */
    CHECK_INT(runs(dir), 0);
    /* Three requests, one run: without an expiry the token is kept. */
    for (int i = 0; i < 3; i++) CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(runs(dir), 1);
    CHECK_INT(tsrv_nlog(&s), 3);
    CHECK_STR(tsrv_log(&s, 2).auth, "Bearer tok-1");

    /* The server stops taking tok-1: the 401 runs the plugin again and
     * the request is sent once more, with tok-2. */
    atomic_store(&st.min_ok, 2);
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(runs(dir), 2);
    CHECK_INT(tsrv_nlog(&s), 5);
    CHECK_STR(tsrv_log(&s, 3).auth, "Bearer tok-1");
    CHECK_STR(tsrv_log(&s, 4).auth, "Bearer tok-2");
    CHECK_INT(kube_client_requests(c), 5);

    /* The server takes none: one more run and one retry, then the 401
     * is the answer (no loop). */
    atomic_store(&st.min_ok, 1000);
    CHECK_INT(get(c, "/api/thing", &e), AIQ_EAUTH);
    CHECK_INT(e.http_status, 401);
    CHECK_STR(e.reason, "Unauthorized");
    CHECK_INT(runs(dir), 3);
    CHECK_INT(tsrv_nlog(&s), 7);
    CHECK_STR(tsrv_log(&s, 6).auth, "Bearer tok-3");
    /* The next request tries tok-3 again, and renews once on its 401:
     * one run per refused request, never more. */
    CHECK_INT(get(c, "/api/thing", &e), AIQ_EAUTH);
    CHECK_INT(runs(dir), 4);
    CHECK_INT(tsrv_nlog(&s), 9);
    CHECK_STR(tsrv_log(&s, 7).auth, "Bearer tok-3");
    CHECK_STR(tsrv_log(&s, 8).auth, "Bearer tok-4");
out:
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);
    tsrv_stop(&s);
}

TEST(exec_runs_again_after_expiry) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    dir_make(dir, sizeof dir);
    /* Already expired when it arrives: every request runs it (once). */
    struct kube_config *cfg = exec_config(s.url, NULL, fixture("token.sh", cmd, sizeof cmd), NULL, dir,
                                          "      - {name: AIQ_EXPIRES, value: \"2001-09-09T01:46:40Z\"}\n",
                                          NULL, &e);
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(runs(dir), 2);
    CHECK_STR(tsrv_log(&s, 1).auth, "Bearer tok-2");
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);

    /* Valid for 2 s: reused within them, renewed after. */
    dir_make(dir, sizeof dir);
    cfg = exec_config(s.url, NULL, cmd, NULL, dir, "      - {name: AIQ_EXPIRES, value: \"+2\"}\n", NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(runs(dir), 1);
    tsrv_sleep_ms(2300);
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(runs(dir), 2);
    CHECK_STR(tsrv_log(&s, tsrv_nlog(&s) - 1).auth, "Bearer tok-2");
out:
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);
    tsrv_stop(&s);
}

/* Reads a TLS fixture (caller frees .data). */
static struct kube_blob tls_fixture(const char *name) {
    char path[1024];
    char *text = NULL;
    size_t len = 0;
    struct kube_blob b = {0};
    snprintf(path, sizeof path, "%s/test/fixtures/tls/%s", th_srcdir(), name);
    if (kube_read_file(path, 65536, &text, &len, NULL) == AIQ_OK) {
        b.data = (unsigned char *)text;
        b.len = len;
    }
    return b;
}

/* The DER of the first certificate in PEM text (caller frees .data). */
static struct kube_blob pem_to_der(const char *pem) {
    struct kube_blob b = {0};
    const char *begin = pem ? strstr(pem, "-----BEGIN CERTIFICATE-----") : NULL;
    const char *end = begin ? strstr(begin, "-----END CERTIFICATE-----") : NULL;
    if (!end) return b;
    begin += strlen("-----BEGIN CERTIFICATE-----");
    if (kube_base64_decode(begin, (size_t)(end - begin), &b, NULL) != AIQ_OK) memset(&b, 0, sizeof b);
    return b;
}

TEST(exec_client_certificate_is_used) {
    struct kube_blob key = tls_fixture("server.key"), cert = tls_fixture("server.crt");
    struct kube_blob ca = tls_fixture("ca.crt"), ccert = tls_fixture("client.crt");
    struct kube_blob der = pem_to_der((const char *)ccert.data);
    CHECK(key.data && cert.data && ca.data && der.data && der.len > 100);
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512];
    aiq_err e;
    struct kube_config *cfg = NULL;
    struct kube_client *c = NULL;
    CHECK(tsrv_start_mtls(&s, route, &st, (char *)key.data, (char *)cert.data, (char *)ca.data) == 0);
    dir_make(dir, sizeof dir);

    /* The control: with only a token, the server sees no certificate. */
    struct kube_config plain;
    memset(&plain, 0, sizeof plain);
    plain.server = s.url;
    plain.ca_data = ca;
    plain.token = "tok-1";
    c = client(&plain, NULL, &e);
    CHECK(c != NULL);
    CHECK_INT(c ? get(c, "/open", &e) : AIQ_EIO, AIQ_OK);
    CHECK_INT(tsrv_log(&s, 0).peer_cert_len, 0);
    kube_client_free(c);

    /* The plugin's certificate and key go to curl in place of any. */
    cfg = exec_config(s.url, NULL, fixture("cert.sh", cmd, sizeof cmd), NULL, dir, NULL, NULL, &e);
    CHECK(cfg != NULL);
    if (!cfg) goto out;
    free(cfg->ca_file);
    cfg->ca_file = NULL;
    cfg->ca_data.data = malloc(ca.len + 1);
    if (cfg->ca_data.data) {
        memcpy(cfg->ca_data.data, ca.data, ca.len + 1);
        cfg->ca_data.len = ca.len;
    }
    c = client(cfg, NULL, &e);
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(get(c, "/open", &e), AIQ_OK);
    CHECK_INT(get(c, "/open", &e), AIQ_OK);
    CHECK_INT(runs(dir), 1);
    struct tsrv_req r = tsrv_log(&s, tsrv_nlog(&s) - 1);
    CHECK_INT(r.peer_cert_len, der.len);
    CHECK(r.peer_cert_len == der.len && memcmp(r.peer_cert, der.data, der.len) == 0);
    CHECK_STR(r.auth, ""); /* a certificate, no token */
out:
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);
    tsrv_stop(&s);
    free(key.data);
    free(cert.data);
    free(ca.data);
    free(ccert.data);
    free(der.data);
}

TEST(exec_failures_name_the_command) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512], args[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    dir_make(dir, sizeof dir);
    fixture("misbehave.sh", cmd, sizeof cmd);
    struct kube_config *cfg = NULL;
    struct kube_client *c = NULL;

    /* Exits 3 with a reason on stderr: both in the error. */
    cfg = exec_config(s.url, NULL, cmd, "[fail]", dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EAUTH);
    CHECK(strstr(e.message, "misbehave.sh") != NULL);
    CHECK(strstr(e.message, "users[0].user.exec") != NULL);
    CHECK(strstr(e.message, "exited with status 3") != NULL);
    CHECK(strstr(e.message, "misbehave: the cached session has expired misbehave: run 'misbehave login' first") != NULL);
    CHECK_INT(tsrv_nlog(&s), 0); /* nothing was sent */
    kube_client_free(c);
    kube_config_free(cfg);

    /* Not JSON. */
    cfg = exec_config(s.url, NULL, cmd, "[print, \"this is not json\"]", dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EPARSE);
    CHECK(strstr(e.message, "misbehave.sh") && strstr(e.message, "output is not JSON"));
    kube_client_free(c);
    kube_config_free(cfg);

    /* The wrong apiVersion. */
    snprintf(args, sizeof args, "[print, '%s']",
             "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"tok-1\"}}");
    cfg = exec_config(s.url, NULL, cmd, args, dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EINVAL);
    CHECK_STR(e.field, "apiVersion");
    CHECK(strstr(e.message, "apiVersion is \"client.authentication.k8s.io/v1beta1\", but the "
                            "kubeconfig configures client.authentication.k8s.io/v1") != NULL);
    kube_client_free(c);
    kube_config_free(cfg);

    /* Too much output: cut at the cap, and killed. */
    cfg = exec_config(s.url, NULL, cmd, "[flood]", dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_ETOOBIG);
    CHECK(strstr(e.message, "misbehave.sh") && strstr(e.message, "printed more than 1048576 bytes; killed it"));
    kube_client_free(c);
    kube_config_free(cfg);

    /* No such command: the installHint is shown. */
    cfg = exec_config(s.url, NULL, "aiq-no-such-plugin", NULL, dir, NULL,
                      "      installHint: \"aiq-no-such-plugin comes with the aiq-tools package\"\n", &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_ENOTFOUND);
    CHECK(strstr(e.message, "exec plugin aiq-no-such-plugin (users[0].user.exec): command not found "
                            "in $PATH. aiq-no-such-plugin comes with the aiq-tools package") != NULL);
    kube_client_free(c);
    kube_config_free(cfg);
    /* A path that does not exist. */
    cfg = exec_config(s.url, NULL, "/nonexistent/plugin", NULL, dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_ENOTFOUND);
    CHECK(strstr(e.message, "/nonexistent/plugin") && strstr(e.message, "command not found"));
    kube_client_free(c);
    kube_config_free(cfg);
    /* A file that is not executable. */
    char notexec[512];
    snprintf(notexec, sizeof notexec, "%s/test/fixtures/tls/ca.crt", th_srcdir());
    cfg = exec_config(s.url, NULL, notexec, NULL, dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EIO);
    CHECK(strstr(e.message, "ca.crt") && strstr(e.message, "cannot run it: not an executable file"));
    kube_client_free(c);
    kube_config_free(cfg);

    /* Hangs: killed at the limit, with what it started. */
    struct kube_client_opts opts = {.exec_timeout_ms = 500};
    cfg = exec_config(s.url, NULL, cmd, "[hang]", dir, NULL, NULL, &e);
    c = cfg ? client(cfg, &opts, &e) : NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_ETIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(took >= 0.45 && took < 5);
    CHECK(strstr(e.message, "misbehave.sh") && strstr(e.message, "no answer within 500 ms; killed it"));
    char *pid = dir_read(dir, "hang.pid");
    CHECK(pid != NULL);
    if (pid) {
        /* Its child (sleep 30) is gone too: no process, or a zombie
         * waiting for init, never a sleeper. */
        char stat[64], *text = NULL;
        size_t len = 0;
        snprintf(stat, sizeof stat, "/proc/%ld/stat", strtol(pid, NULL, 10));
        int alive = 0;
        for (int i = 0; i < 100; i++) {
            alive = kube_read_file(stat, 4096, &text, &len, NULL) == AIQ_OK && strstr(text, ") Z ") == NULL;
            free(text);
            text = NULL;
            if (!alive) break;
            tsrv_sleep_ms(20);
        }
        CHECK(!alive);
        free(pid);
    }
    kube_client_free(c);
    kube_config_free(cfg);
    CHECK_INT(tsrv_nlog(&s), 0);
    dir_remove(dir);
    tsrv_stop(&s);
}

TEST(exec_info_carries_the_cluster) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    dir_make(dir, sizeof dir);
    setenv("AIQ_INHERITED", "from-the-parent", 1);
    setenv("AIQ_OVERRIDDEN", "parent", 1);
    /* CA data "FAKECA" PEM, a tls-server-name (only carried, the test
     * server is plain http), and the exec extension. */
    const char *cluster =
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkZBS0VDQQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==\n"
        "    extensions:\n"
        "    - name: client.authentication.k8s.io/exec\n"
        "      extension: {audience: sts.example, retries: 3}\n";
    struct kube_config *cfg = exec_config(s.url, cluster, fixture("token.sh", cmd, sizeof cmd), NULL, dir,
                                          "      - {name: AIQ_OVERRIDDEN, value: \"kubeconfig\"}\n",
                                          "      provideClusterInfo: true\n", &e);
    CHECK(cfg != NULL);
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    char *info = dir_read(dir, "info.1"), *env = dir_read(dir, "env.1");
    json_object *o = NULL;
    CHECK(info && kube_json_parse(info, strlen(info), &o, NULL) == AIQ_OK);
    CHECK_STR(aiq_jpath_str(o, "kind"), "ExecCredential");
    CHECK_STR(aiq_jpath_str(o, "apiVersion"), "client.authentication.k8s.io/v1");
    CHECK_STR(aiq_jpath_str(o, "spec.cluster.server"), s.url);
    CHECK_STR(aiq_jpath_str(o, "spec.cluster.certificate-authority-data"),
              "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkZBS0VDQQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==");
    CHECK_STR(aiq_jpath_str(o, "spec.cluster.config.audience"), "sts.example");
    json_object *v = NULL, *spec = NULL;
    CHECK(json_object_object_get_ex(o, "spec", &spec) && json_object_object_get_ex(spec, "interactive", &v) &&
          json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v));
    json_object_put(o);
    /* The process environment, the kubeconfig's env over it. */
    CHECK(env && strstr(env, "\nAIQ_INHERITED=from-the-parent\n"));
    CHECK(env && strstr(env, "\nAIQ_OVERRIDDEN=kubeconfig\n") && !strstr(env, "AIQ_OVERRIDDEN=parent"));
    free(info);
    free(env);
    kube_client_free(c);
    kube_config_free(cfg);
    c = NULL;

    /* Without provideClusterInfo: no spec.cluster. */
    cfg = exec_config(s.url, cluster, cmd, NULL, dir, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    info = dir_read(dir, "info.2");
    CHECK(info && strstr(info, "\"spec\":{\"interactive\":false}") != NULL);
    free(info);
out:
    unsetenv("AIQ_INHERITED");
    unsetenv("AIQ_OVERRIDDEN");
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);
    tsrv_stop(&s);
}

struct par {
    struct kube_client *c;
    pthread_barrier_t *go;
    aiq_rc rc;
    aiq_err e;
};

static void *par_get(void *arg) {
    struct par *p = arg;
    pthread_barrier_wait(p->go); /* all ask at the same moment */
    p->rc = get(p->c, "/api/thing", &p->e);
    return NULL;
}

/* n threads ask c at once; returns how many succeeded and leaves the
 * last error in *e. */
static int at_once(struct kube_client *c, int n, aiq_err *e) {
    pthread_t t[16];
    struct par p[16];
    pthread_barrier_t go;
    int ok = 0;
    pthread_barrier_init(&go, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        p[i].c = c;
        p[i].go = &go;
        pthread_create(&t[i], NULL, par_get, &p[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (p[i].rc == AIQ_OK) ok++;
        else *e = p[i].e;
    }
    pthread_barrier_destroy(&go);
    return ok;
}

TEST(exec_many_threads_one_run) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    dir_make(dir, sizeof dir);
    struct kube_client_opts opts = {.pool_size = 12};
    /* The plugin takes 1 s: all twelve ask while it runs (even under
     * valgrind). */
    struct kube_config *cfg = exec_config(s.url, NULL, fixture("token.sh", cmd, sizeof cmd), NULL, dir,
                                          "      - {name: AIQ_SLEEP, value: \"1\"}\n", NULL, &e);
    struct kube_client *c = cfg ? client(cfg, &opts, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(at_once(c, 12, &e), 12);
    CHECK_INT(runs(dir), 1);
    for (int i = 0; i < tsrv_nlog(&s); i++) CHECK_STR(tsrv_log(&s, i).auth, "Bearer tok-1");
    kube_client_free(c);
    kube_config_free(cfg);

    /* A failing run is the answer for all who waited for it. */
    dir_remove(dir);
    dir_make(dir, sizeof dir);
    cfg = exec_config(s.url, NULL, fixture("misbehave.sh", cmd, sizeof cmd), "[slowfail]", dir, NULL,
                      NULL, &e);
    c = cfg ? client(cfg, &opts, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    aiq_err_clear(&e);
    CHECK_INT(at_once(c, 12, &e), 0);
    CHECK_INT(runs(dir), 1);
    CHECK(strstr(e.message, "exited with status 3") != NULL);
out:
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);
    tsrv_stop(&s);
}

TEST(exec_interactive_modes) {
    char dir[64], cmd[512];
    aiq_err e;
    dir_make(dir, sizeof dir);
    fixture("token.sh", cmd, sizeof cmd);
    /* The operator (may_prompt 0) refuses Always at once. */
    struct kube_config *cfg = exec_config("http://127.0.0.1:1", NULL, cmd, NULL, dir, NULL,
                                          "      interactiveMode: Always\n", &e);
    CHECK(cfg != NULL);
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_EUNSUPPORTED);
    CHECK_STR(e.field, "users[0].user.exec.interactiveMode");
    CHECK(strstr(e.message, "never runs a credential plugin interactively") != NULL);
    /* kubectl aiq may prompt, but not without a terminal. */
    int saved = dup(STDIN_FILENO), nul = open("/dev/null", O_RDONLY);
    CHECK(saved >= 0 && nul >= 0);
    dup2(nul, STDIN_FILENO);
    struct kube_client_opts opts = {.may_prompt = 1};
    c = cfg ? client(cfg, &opts, &e) : NULL;
    CHECK(c != NULL);
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EUNSUPPORTED);
    CHECK(strstr(e.message, "interactiveMode is Always and standard input is not a terminal") != NULL);
    CHECK_INT(runs(dir), 0);
    dup2(saved, STDIN_FILENO);
    close(saved);
    close(nul);
    kube_client_free(c);
    kube_config_free(cfg);
    /* IfAvailable without a terminal: not interactive (and spec says so). */
    int interactive = -1;
    struct kube_exec x = {.field = "users[0].user.exec", .command = "p", .mode = KUBE_EXEC_IF_AVAILABLE};
    aiq_err_clear(&e);
    CHECK_INT(kube_exec_interactive(&x, 0, &interactive, &e), AIQ_OK);
    CHECK_INT(interactive, 0);
    x.mode = KUBE_EXEC_NEVER;
    CHECK_INT(kube_exec_interactive(&x, 1, &interactive, &e), AIQ_OK);
    CHECK_INT(interactive, 0);
    dir_remove(dir);
}

TEST(static_token_wins_over_exec) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1};
    char dir[64], cmd[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    dir_make(dir, sizeof dir);
    struct kube_config *cfg = exec_config(s.url, NULL, fixture("token.sh", cmd, sizeof cmd), NULL, dir,
                                          NULL, NULL, &e);
    CHECK(cfg != NULL);
    if (cfg) cfg->token = strdup("tok-77");
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_OK);
    CHECK_STR(tsrv_log(&s, 0).auth, "Bearer tok-77");
    CHECK_INT(runs(dir), 0);
    kube_client_free(c);
    kube_config_free(cfg);
    dir_remove(dir);
    tsrv_stop(&s);
}

/* ---- the ExecCredential reader --------------------------------------------------- */

TEST(exec_credential_parse) {
    struct kube_exec x = {.field = "users[0].user.exec", .command = "plug",
                          .api_version = KUBE_EXEC_V1};
    struct kube_cred cr;
    aiq_err e;
    static const char pem_c[] = "-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n";
    static const char pem_k[] = "-----BEGIN PRIVATE KEY-----\\nBBBB\\n-----END PRIVATE KEY-----\\n";
    char buf[1024];
#define EC(status) "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":" status "}"
    static const struct {
        const char *text, *field, *msg;
        aiq_rc rc;
    } bad[] = {
        {"", "", "printed nothing on stdout", AIQ_EPARSE},
        {"{\"a\":", "", "output is not JSON", AIQ_EPARSE},
        {"[1]", "", "output is not a JSON object", AIQ_EPARSE},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"Pod\",\"status\":{\"token\":\"t\"}}",
         "kind", "kind is \"Pod\", want ExecCredential", AIQ_EINVAL},
        {"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}", "apiVersion",
         "apiVersion is \"\", but the kubeconfig configures client.authentication.k8s.io/v1", AIQ_EINVAL},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"}", "status",
         "status: missing", AIQ_EINVAL},
        {EC("\"x\""), "status", "status: expected an object", AIQ_EINVAL},
        {EC("{}"), "status", "status has no token and no clientCertificateData/clientKeyData", AIQ_EINVAL},
        {EC("{\"token\":7}"), "status.token", "status.token: expected a string", AIQ_EINVAL},
        {EC("{\"token\":\"a b\"}"), "status.token", "byte 1 (0x20) cannot go in an HTTP header", AIQ_EINVAL},
        {EC("{\"clientCertificateData\":\"x\"}"), "status.clientKeyData",
         "status.clientKeyData: missing (a client certificate needs its key)", AIQ_EINVAL},
        {EC("{\"clientKeyData\":\"x\"}"), "status.clientCertificateData", "missing", AIQ_EINVAL},
        {EC("{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}"), "status.expirationTimestamp",
         "\"tomorrow\" is not an RFC 3339 time", AIQ_EINVAL},
        {EC("{\"token\":\"t\",\"expirationTimestamp\":12}"), "status.expirationTimestamp",
         "is not an RFC 3339 time", AIQ_EINVAL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        aiq_err_clear(&e);
        aiq_rc rc = kube_exec_parse(&x, bad[i].text, strlen(bad[i].text), &cr, &e);
        if (!CHECK_INT(rc, bad[i].rc)) fprintf(stderr, "  case %zu: %s\n", i, e.message);
        CHECK_STR(e.field, bad[i].field);
        if (!CHECK(strstr(e.message, bad[i].msg) != NULL)) fprintf(stderr, "  case %zu: %s\n", i, e.message);
        CHECK(strncmp(e.message, "exec plugin plug (users[0].user.exec): ", 39) == 0);
        CHECK(cr.token == NULL && cr.cert.data == NULL);
    }
    snprintf(buf, sizeof buf, EC("{\"clientCertificateData\":\"not pem\",\"clientKeyData\":\"%s\"}"), pem_k);
    aiq_err_clear(&e);
    CHECK_INT(kube_exec_parse(&x, buf, strlen(buf), &cr, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "status.clientCertificateData");

    /* Good ones. */
    const char *t1 = EC("{\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}");
    aiq_err_clear(&e);
    CHECK_INT(kube_exec_parse(&x, t1, strlen(t1), &cr, &e), AIQ_OK);
    CHECK_STR(cr.token, "abc");
    CHECK_INT(cr.expiry, 1893553445);
    kube_cred_clear(&cr);
    const char *t2 = EC("{\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-02T05:04:05.5+02:00\"}");
    CHECK_INT(kube_exec_parse(&x, t2, strlen(t2), &cr, &e), AIQ_OK);
    CHECK_INT(cr.expiry, 1893553445);
    kube_cred_clear(&cr);
    snprintf(buf, sizeof buf, EC("{\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}"), pem_c, pem_k);
    CHECK_INT(kube_exec_parse(&x, buf, strlen(buf), &cr, &e), AIQ_OK);
    CHECK(cr.token == NULL && cr.expiry == 0);
    CHECK_STR((const char *)cr.cert.data, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    CHECK(cr.key.data && strstr((const char *)cr.key.data, "BBBB"));
    kube_cred_clear(&cr);
    /* v1beta1 answers v1beta1. */
    x.api_version = KUBE_EXEC_V1BETA1;
    const char *t3 = "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
                     "\"status\":{\"token\":\"b\"}}";
    CHECK_INT(kube_exec_parse(&x, t3, strlen(t3), &cr, &e), AIQ_OK);
    CHECK_STR(cr.token, "b");
    kube_cred_clear(&cr);
#undef EC
}

TEST(exec_info_document) {
    struct kube_exec x = {.field = "users[0].user.exec", .command = "plug",
                          .api_version = KUBE_EXEC_V1BETA1, .provide_cluster_info = 1};
    struct kube_blob ca = {(unsigned char *)"hello", 5};
    struct kube_exec_cluster cl = {.server = "https://k:6443", .tls_server_name = "kubernetes",
                                   .insecure = 1, .ca = &ca, .config_json = "{\"a\":[1,true]}"};
    char *info = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_exec_info(&x, &cl, 1, &info, &e), AIQ_OK);
    CHECK_STR(info, "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                    "\"spec\":{\"interactive\":true,\"cluster\":{\"server\":\"https://k:6443\","
                    "\"tls-server-name\":\"kubernetes\",\"insecure-skip-tls-verify\":true,"
                    "\"certificate-authority-data\":\"aGVsbG8=\",\"config\":{\"a\":[1,true]}}}}");
    free(info);
    cl.config_json = "{bad";
    CHECK_INT(kube_exec_info(&x, &cl, 0, &info, &e), AIQ_EPARSE);
    CHECK(info == NULL);
}

/* ---- oidc ---------------------------------------------------------------------------- */

/* A kubeconfig for server whose user is oidc at issuer with id-token
 * idt and refresh-token rt (either may be NULL) and the given secret. */
static struct kube_config *oidc_config(const char *server, const char *issuer, const char *idt,
                                       const char *rt, const char *secret, aiq_err *e) {
    char y[4096];
    struct kube_config *cfg = NULL;
    snprintf(y, sizeof y,
             "current-context: c\n"
             "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
             "clusters:\n- name: k\n  cluster: {server: \"%s\"}\n"
             "users:\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n      config:\n"
             "        idp-issuer-url: \"%s\"\n        client-id: \"aiq cli\"\n"
             "%s%s%s%s%s%s%s%s%s",
             server, issuer, idt ? "        id-token: \"" : "", idt ? idt : "", idt ? "\"\n" : "",
             rt ? "        refresh-token: \"" : "", rt ? rt : "", rt ? "\"\n" : "",
             secret ? "        client-secret: \"" : "", secret ? secret : "", secret ? "\"\n" : "");
    aiq_err_clear(e);
    if (kube_config_parse(y, strlen(y), NULL, NULL, &cfg, e) != AIQ_OK) return NULL;
    return cfg;
}

TEST(oidc_fresh_token_is_not_refreshed) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1, .next_sig = 2};
    char issuer[128], jwt[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    snprintf(issuer, sizeof issuer, "%s/idp", s.url);
    make_jwt(jwt, sizeof jwt, (long)time(NULL) + 3600, 1);
    struct kube_config *cfg = oidc_config(s.url, issuer, jwt, "rt-1", "s3cret", &e);
    CHECK(cfg != NULL);
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (c) {
        CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
        CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
        char want[600];
        snprintf(want, sizeof want, "Bearer %s", jwt);
        CHECK_STR(tsrv_log(&s, 1).auth, want);
    }
    CHECK_INT(atomic_load(&st.token_posts), 0);
    CHECK_INT(atomic_load(&st.discoveries), 0);
    kube_client_free(c);
    kube_config_free(cfg);
    tsrv_stop(&s);
}

TEST(oidc_expired_token_is_refreshed) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1, .next_sig = 2};
    char issuer[128], jwt[512], kc[64] = "/tmp/aiq-oidc-XXXXXX";
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    snprintf(issuer, sizeof issuer, "%s/idp", s.url);
    /* Expired in 2001 (exp 1000000000). */
    make_jwt(jwt, sizeof jwt, 1000000000L, 1);
    struct kube_config *cfg = oidc_config(s.url, issuer, jwt, "rt-1", "s3cret", &e);
    CHECK(cfg != NULL);
    struct kube_client *c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c != NULL);
    if (!c) goto out;
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(atomic_load(&st.discoveries), 1);
    CHECK_INT(atomic_load(&st.token_posts), 1);
    /* The grant: form-encoded refresh token, client by Basic auth
     * ("aiq cli" form-encoded, then base64 "aiq%20cli:s3cret"). */
    CHECK_STR(st.last_form, "grant_type=refresh_token&refresh_token=rt-1");
    CHECK_STR(st.last_auth, "Basic YWlxJTIwY2xpOnMzY3JldA==");
    struct tsrv_req r = tsrv_log(&s, tsrv_nlog(&s) - 1);
    CHECK_STR(r.path, "/api/thing");
    CHECK(strncmp(r.auth, "Bearer ", 7) == 0 && strstr(r.auth, ".sig-2") != NULL);
    /* Fresh now: no second refresh. */
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(atomic_load(&st.token_posts), 1);
    /* A 401 refreshes with the refresh-token the issuer sent last time
     * (kept in memory) and retries once. */
    atomic_store(&st.min_ok, 3);
    CHECK_INT(get(c, "/api/thing", &e), AIQ_OK);
    CHECK_INT(atomic_load(&st.token_posts), 2);
    CHECK_STR(st.last_form, "grant_type=refresh_token&refresh_token=rt-2");
    CHECK(strstr(tsrv_log(&s, tsrv_nlog(&s) - 1).auth, ".sig-3") != NULL);
    kube_client_free(c);
    c = NULL;

    /* Nothing is written back: a kubeconfig file loaded, used and
     * refreshed is unchanged. */
    int fd = mkstemp(kc);
    CHECK(fd >= 0);
    char y[4096];
    snprintf(y, sizeof y,
             "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
             "clusters:\n- name: k\n  cluster: {server: \"%s\"}\nusers:\n- name: u\n  user:\n"
             "    auth-provider: {name: oidc, config: {idp-issuer-url: \"%s\", client-id: a, "
             "id-token: \"%s\", refresh-token: rt-9}}\n", s.url, issuer, jwt);
    CHECK(write(fd, y, strlen(y)) == (ssize_t)strlen(y));
    close(fd);
    kube_config_free(cfg);
    cfg = NULL;
    aiq_err_clear(&e);
    CHECK_INT(kube_config_load(kc, NULL, &cfg, &e), AIQ_OK);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_OK);
    /* No secret: client_id goes in the form, no Basic auth. */
    CHECK_STR(st.last_form, "grant_type=refresh_token&refresh_token=rt-9&client_id=a");
    CHECK_STR(st.last_auth, "");
    char *after = NULL;
    size_t len = 0;
    CHECK_INT(kube_read_file(kc, 1 << 20, &after, &len, NULL), AIQ_OK);
    CHECK_STR(after, y);
    free(after);
    unlink(kc);
out:
    kube_client_free(c);
    kube_config_free(cfg);
    tsrv_stop(&s);
}

TEST(oidc_failures) {
    struct tsrv s;
    struct auth_state st = {.min_ok = 1, .next_sig = 2};
    char issuer[128], jwt[512], fresh[512];
    aiq_err e;
    CHECK(tsrv_start(&s, route, &st) == 0);
    snprintf(issuer, sizeof issuer, "%s/idp", s.url);
    make_jwt(jwt, sizeof jwt, 1000000000L, 1);
    make_jwt(fresh, sizeof fresh, (long)time(NULL) + 3600, 1);
    struct kube_config *cfg = NULL;
    struct kube_client *c = NULL;

    /* Expired and no refresh-token. */
    cfg = oidc_config(s.url, issuer, jwt, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EAUTH);
    CHECK(strstr(e.message, "the id-token has expired and there is no refresh-token") != NULL);
    CHECK_INT(tsrv_nlog(&s), 0);
    kube_client_free(c);
    kube_config_free(cfg);
    /* Fresh but refused, no refresh-token: the 401 stands, no retry. */
    atomic_store(&st.min_ok, 5);
    cfg = oidc_config(s.url, issuer, fresh, NULL, NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EAUTH);
    CHECK_INT(e.http_status, 401);
    CHECK_INT(tsrv_nlog(&s), 1);
    atomic_store(&st.min_ok, 1);
    kube_client_free(c);
    kube_config_free(cfg);

    /* The issuer refuses the refresh-token: its error is shown. */
    st.refuse_refresh = 1;
    cfg = oidc_config(s.url, issuer, jwt, "rt-1", NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EAUTH);
    CHECK(strstr(e.message, "oidc (users[0].user.auth-provider): the issuer refused the refresh-token") != NULL);
    CHECK(strstr(e.message, "HTTP 400: invalid_grant: refresh token revoked") != NULL);
    st.refuse_refresh = 0;
    kube_client_free(c);
    kube_config_free(cfg);

    /* No discovery document. */
    st.no_discovery = 1;
    cfg = oidc_config(s.url, issuer, jwt, "rt-1", NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EHTTP);
    CHECK(strstr(e.message, "/idp/.well-known/openid-configuration answered HTTP 404") != NULL);
    st.no_discovery = 0;
    kube_client_free(c);
    kube_config_free(cfg);

    /* A token endpoint over plain http to another host is not used. */
    st.token_endpoint = "http://idp.example/token";
    int posts = atomic_load(&st.token_posts);
    cfg = oidc_config(s.url, issuer, jwt, "rt-1", NULL, &e);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK_INT(c ? get(c, "/api/thing", &e) : AIQ_EIO, AIQ_EINVAL);
    CHECK(strstr(e.message, "http://idp.example/token must be an https URL") != NULL);
    CHECK_INT(atomic_load(&st.token_posts), posts);
    st.token_endpoint = NULL;
    kube_client_free(c);
    kube_config_free(cfg);

    /* An id-token that is not a JWT fails at once, naming the field. */
    cfg = oidc_config(s.url, issuer, "opaque-token", "rt-1", NULL, &e);
    CHECK(cfg != NULL);
    c = cfg ? client(cfg, NULL, &e) : NULL;
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, "users[0].user.auth-provider.config.id-token");
    CHECK(strstr(e.message, "not a JWT") != NULL);
    kube_config_free(cfg);
    tsrv_stop(&s);
}

TEST(jwt_exp_claim) {
    char jwt[512], p[128];
    time_t exp = 0;
    aiq_err e;
    make_jwt(jwt, sizeof jwt, 1893553445L, 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_jwt_exp(jwt, &exp, &e), AIQ_OK);
    CHECK_INT(exp, 1893553445L);
    /* exp as a float; no exp at all (0: treat as expired). */
    b64url("{\"exp\":1893553445.9}", p, sizeof p);
    snprintf(jwt, sizeof jwt, "e30.%s.x", p);
    CHECK_INT(kube_jwt_exp(jwt, &exp, &e), AIQ_OK);
    CHECK_INT(exp, 1893553445L);
    b64url("{\"sub\":\"me\"}", p, sizeof p);
    snprintf(jwt, sizeof jwt, "e30.%s.x", p);
    CHECK_INT(kube_jwt_exp(jwt, &exp, &e), AIQ_OK);
    CHECK_INT(exp, 0);
    /* base64url characters '-' and '_' ("{"exp":1}>?" has both). */
    b64url("{\"exp\":1,\"k\":\">>>???\"}", p, sizeof p);
    CHECK(strchr(p, '-') || strchr(p, '_'));
    snprintf(jwt, sizeof jwt, "e30.%s.x", p);
    CHECK_INT(kube_jwt_exp(jwt, &exp, &e), AIQ_OK);
    CHECK_INT(exp, 1);
    static const char *const bad[] = {"", "abc", "a.b", "a.b.c.d", ".b.c", "a..c", "a.!!.c",
                                      "a.W10.c" /* [] */, "a.eyJleHAiOiJ4In0.c" /* exp "x" */,
                                      "a.e30=.c" /* padding is not base64url */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        aiq_err_clear(&e);
        exp = 5;
        if (!CHECK_INT(kube_jwt_exp(bad[i], &exp, &e), AIQ_EINVAL)) fprintf(stderr, "  case %s\n", bad[i]);
        CHECK_INT(exp, 0);
    }
}
