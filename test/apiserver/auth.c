/* auth.c -- authentication and transport security of the local API
 * server: bearer tokens (the admin token and a kube-apiserver style static
 * token file), anonymous and unsecured identities, impersonation headers
 * (kubectl --as/--as-group, for system:masters only), the self-signed
 * TLS certificate made at start with the openssl command-line tool, and
 * the kubeconfig that tells clients how to connect
 * (server URL, certificate-authority-data, token). */
#include "test/apiserver/apisrv_int.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- authentication ---------------------------------------------------- */

#define AUTH_MAX_LINE 4096

/* True when u is in group g. */
bool apisrv__user_in(const struct apisrv__user *u, const char *g) {
    for (int i = 0; i < u->n_groups; i++)
        if (!strcmp(u->groups[i], g)) return true;
    return false;
}

/* Adds g to u's groups unless present or full (the cap is documented). */
static void auth_add_group(struct apisrv__user *u, const char *g, size_t n) {
    if (n == 0 || n >= sizeof u->groups[0] || u->n_groups >= APISRV__MAX_GROUPS) return;
    for (int i = 0; i < u->n_groups; i++)
        if (strlen(u->groups[i]) == n && !memcmp(u->groups[i], g, n)) return;
    memcpy(u->groups[u->n_groups], g, n);
    u->groups[u->n_groups][n] = 0;
    u->n_groups++;
}

static void auth_set_user(struct apisrv__user *u, const char *name, const char *g1,
                          const char *g2) {
    memset(u, 0, sizeof *u);
    snprintf(u->name, sizeof u->name, "%s", name);
    if (g1) auth_add_group(u, g1, strlen(g1));
    if (g2) auth_add_group(u, g2, strlen(g2));
}

/* Reads one CSV field at *p (quoted with "" escapes, or up to a comma)
 * into out; advances *p past the separator. -1 on a malformed quote or
 * a field longer than cap-1. */
static int auth_csv_field(const char **p, char *out, size_t cap) {
    const char *q = *p;
    size_t n = 0;
    if (*q == '"') {
        q++;
        for (;;) {
            if (!*q) return -1;
            if (*q == '"' && q[1] == '"') q++;
            else if (*q == '"') break;
            if (n + 1 >= cap) return -1;
            out[n++] = *q++;
        }
        q++;
        if (*q && *q != ',') return -1;
    } else {
        while (*q && *q != ',') {
            if (n + 1 >= cap) return -1;
            out[n++] = *q++;
        }
    }
    out[n] = 0;
    if (*q == ',') q++;
    *p = q;
    return 0;
}

/* See apisrv_int.h. Blank lines and lines starting with # are skipped. */
aiq_rc apisrv__tokens_load(apisrv *s, const char *path, aiq_err *err) {
    FILE *f = fopen(path, "r");
    char line[AUTH_MAX_LINE + 2], tok[AUTH_MAX_LINE], groups[AUTH_MAX_LINE];
    struct apisrv__user u;
    int lineno = 0;
    aiq_rc rc = AIQ_OK;
    if (!f) return aiq_err_set(err, AIQ_EIO, "tokens file %s: %s", path, strerror(errno));
    s->tokens = calloc(APISRV__MAX_TOKENS, sizeof *s->tokens);
    if (!s->tokens) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out_close;
    }
    while (fgets(line, sizeof line, f)) {
        const char *p = line;
        size_t len = strlen(line);
        lineno++;
        if (len > AUTH_MAX_LINE) {
            rc = aiq_err_set(err, AIQ_EPARSE, "tokens file %s:%d: line longer than %d bytes",
                             path, lineno, AUTH_MAX_LINE);
            goto out_free;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len || line[0] == '#') continue;
        memset(&u, 0, sizeof u);
        groups[0] = 0;
        if (auth_csv_field(&p, tok, sizeof tok) || auth_csv_field(&p, u.name, sizeof u.name) ||
            auth_csv_field(&p, u.uid, sizeof u.uid) ||
            (*p && auth_csv_field(&p, groups, sizeof groups)) || !tok[0] || !u.name[0]) {
            rc = aiq_err_set(err, AIQ_EPARSE,
                             "tokens file %s:%d: want token,user,uid[,\"group1,group2\"], got \"%.80s\"",
                             path, lineno, line);
            goto out_free;
        }
        if (s->n_tokens == APISRV__MAX_TOKENS) {
            rc = aiq_err_set(err, AIQ_EPARSE, "tokens file %s:%d: more than %d tokens",
                             path, lineno, APISRV__MAX_TOKENS);
            goto out_free;
        }
        for (const char *g = groups; *g;) {
            size_t n = strcspn(g, ",");
            auth_add_group(&u, g, n);
            g += n;
            if (*g == ',') g++;
        }
        auth_add_group(&u, "system:authenticated", strlen("system:authenticated"));
        s->tokens[s->n_tokens].token = strdup(tok);
        if (!s->tokens[s->n_tokens].token) {
            rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
            goto out_free;
        }
        s->tokens[s->n_tokens++].user = u;
    }
    s->authn = true;
    goto out_close;
out_free:
    apisrv__tokens_free(s);
out_close:
    fclose(f);
    return rc;
}

/* See apisrv_int.h. Safe when no file was loaded. */
void apisrv__tokens_free(apisrv *s) {
    for (int i = 0; s->tokens && i < s->n_tokens; i++) free(s->tokens[i].token);
    free(s->tokens);
    s->tokens = NULL;
    s->n_tokens = 0;
    s->authn = false;
}

struct auth_imp {
    struct apisrv__user *u;
    bool any_group;
};

static enum MHD_Result auth_imp_group(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value) {
    struct auth_imp *im = cls;
    (void)kind;
    if (key && value && !strcasecmp(key, "Impersonate-Group")) {
        auth_add_group(im->u, value, strlen(value));
        im->any_group = true;
    }
    return MHD_YES;
}

/* See apisrv_int.h. */
bool apisrv__token_user(apisrv *s, const char *tok, struct apisrv__user *u) {
    if (s->token && !strcmp(tok, s->token)) {
        auth_set_user(u, "admin", "system:masters", "system:authenticated");
        return true;
    }
    for (int i = 0; i < s->n_tokens; i++)
        if (!strcmp(tok, s->tokens[i].token)) {
            *u = s->tokens[i].user;
            return true;
        }
    return false;
}

/* See apisrv_int.h. Identities: the admin token is user "admin" in
 * system:masters; a tokens-file line is its user plus
 * system:authenticated; no Authorization header is system:anonymous
 * (system:unauthenticated) when a tokens file is loaded, and
 * "system:unsecured" in system:masters when no authentication is
 * configured at all (the server's default for tests and the demo). */
int apisrv__authenticate(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w) {
    struct apisrv__user *u = &r->user;
    const char *h, *iu;
    h = r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization") : NULL;
    if (!strcmp(r->url, "/healthz") || !strcmp(r->url, "/readyz") || !strcmp(r->url, "/livez")) {
        auth_set_user(u, "system:anonymous", "system:unauthenticated", NULL);
        return 0;
    }
    if (h && !strncmp(h, "Bearer ", 7)) {
        if (!apisrv__token_user(s, h + 7, u)) goto out_unauthorized;
    } else if (h) {
        goto out_unauthorized;
    } else if (s->authn) {
        auth_set_user(u, "system:anonymous", "system:unauthenticated", NULL);
    } else if (s->token) {
        goto out_unauthorized;
    } else {
        auth_set_user(u, "system:unsecured", "system:masters", "system:authenticated");
    }
    iu = r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Impersonate-User") : NULL;
    if (iu) {
        struct apisrv__user nu;
        struct auth_imp im = {&nu, false};
        if (!apisrv__user_in(u, "system:masters")) {
            apisrv__resp_err(w, 403, "Forbidden",
                             "users \"%.200s\" is forbidden: User \"%s\" cannot impersonate resource "
                             "\"users\" in API group \"\" at the cluster scope", iu, u->name);
            return -1;
        }
        if (!iu[0] || strlen(iu) >= sizeof nu.name) {
            apisrv__resp_err(w, 400, "BadRequest", "Impersonate-User: want 1 to %zu bytes, got %zu",
                             sizeof nu.name - 1, strlen(iu));
            return -1;
        }
        auth_set_user(&nu, iu, NULL, NULL);
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, auth_imp_group, &im);
        if (!strncmp(iu, "system:serviceaccount:", 22)) {
            const char *nsb = iu + 22, *colon = strchr(nsb, ':');
            char g[160];
            auth_add_group(&nu, "system:serviceaccounts", strlen("system:serviceaccounts"));
            if (colon && (size_t)(colon - nsb) < 100) {
                int n = snprintf(g, sizeof g, "system:serviceaccounts:%.*s", (int)(colon - nsb), nsb);
                auth_add_group(&nu, g, (size_t)n);
            }
        }
        if (strcmp(iu, "system:anonymous"))
            auth_add_group(&nu, "system:authenticated", strlen("system:authenticated"));
        *u = nu;
    } else if (r->conn && MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Impersonate-Group")) {
        apisrv__resp_err(w, 400, "BadRequest",
                         "Impersonate-Group without Impersonate-User: a user must be impersonated");
        return -1;
    }
    return 0;
out_unauthorized:
    apisrv__resp_err(w, 401, "Unauthorized", "Unauthorized");
    return -1;
}

int apisrv__run_tool(char *const argv[]) {
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
    if (apisrv__run_tool(argv) != 0)
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
