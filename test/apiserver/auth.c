/* auth.c -- transport security of the local API server: the bearer-token
 * check, the self-signed TLS certificate made at start with the openssl
 * command-line tool, and the kubeconfig that tells clients how to connect
 * (server URL, certificate-authority-data, token). */
#include "test/apiserver/apisrv_int.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* True when the request may proceed: no token configured, a probe path,
 * or `Authorization: Bearer <token>` matching. */
bool apisrv__authorized(apisrv *s, struct apisrv__req *r) {
    const char *h;
    char want[600];
    if (!s->token) return true;
    if (!strcmp(r->url, "/healthz") || !strcmp(r->url, "/readyz") || !strcmp(r->url, "/livez"))
        return true;
    h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    snprintf(want, sizeof want, "Bearer %s", s->token);
    return h && !strcmp(h, want);
}

static int auth_run(char *const argv[]) {
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

static char *auth_slurp(const char *path, size_t cap) {
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

/* Makes a self-signed certificate for 127.0.0.1/localhost in a temp dir
 * with the openssl tool and loads it into s. On failure fills err; what was
 * made is removed by apisrv__tls_free. */
aiq_rc apisrv__tls_make_cert(apisrv *s, aiq_err *err) {
    char tmpl[] = "/tmp/aiq-apiserver-tls.XXXXXX", key[300], crt[300];
    if (!mkdtemp(tmpl)) return aiq_err_set(err, AIQ_EIO, "mkdtemp: %s", strerror(errno));
    s->tls_dir = strdup(tmpl);
    snprintf(key, sizeof key, "%s/key.pem", tmpl);
    snprintf(crt, sizeof crt, "%s/cert.pem", tmpl);
    char *argv[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "30", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", NULL};
    if (auth_run(argv) != 0)
        return aiq_err_set(err, AIQ_EIO, "openssl could not make a certificate (is the openssl tool installed?)");
    s->tls_key = auth_slurp(key, 64 * 1024);
    s->tls_cert = auth_slurp(crt, 64 * 1024);
    if (!s->tls_key || !s->tls_cert)
        return aiq_err_set(err, AIQ_EIO, "cannot read the generated certificate in %s", tmpl);
    return AIQ_OK;
}

/* Removes the certificate files and frees what apisrv__tls_make_cert made;
 * safe when TLS was never set up. */
void apisrv__tls_free(apisrv *s) {
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
    s->tls_dir = s->tls_key = s->tls_cert = NULL;
}

/* Writes a kubeconfig for this server to path: server URL, the CA when
 * serving TLS, and the token or an empty user. */
aiq_rc apisrv__write_kubeconfig(apisrv *s, const char *path, aiq_err *err) {
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
