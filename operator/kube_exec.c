/* kube_exec.c -- exec credential plugins: the interactive decision, the
 * KUBERNETES_EXEC_INFO document, running the command (posix_spawn, no
 * shell, a deadline, stdout capped, stderr passed through and its tail
 * kept) and reading the ExecCredential it prints. See kube_exec.h. */
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np (glibc >= 2.34) */
#include "operator/kube_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/aiq_time.h"

#include "common/json.h"
#include "operator/kube_status.h"
#include "operator/status.h"

extern char **environ;

#define EXEC_INFO_ENV "KUBERNETES_EXEC_INFO"
/* How often a run with no output checks whether the child has exited
 * (its stdout may stay open in a grandchild it left behind). */
#define EXEC_POLL_MS 100

static void wipe(void *p, size_t n) {
    volatile unsigned char *q = p;
    while (n--) *q++ = 0;
}

void kube_cred_clear(struct kube_cred *c) {
    if (!c) return;
    if (c->token) {
        wipe(c->token, strlen(c->token));
        free(c->token);
    }
    kube_blob_wipe_free(&c->cert);
    kube_blob_wipe_free(&c->key);
    memset(c, 0, sizeof *c);
}

/* Sets e (first error wins) to "exec plugin CMD (FIELD): " + fmt, with
 * e->field = field when non-NULL. Returns rc. */
static aiq_rc xerr(aiq_err *e, aiq_rc rc, const struct kube_exec *x, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static aiq_rc xerr(aiq_err *e, aiq_rc rc, const struct kube_exec *x, const char *field,
                   const char *fmt, ...) {
    char msg[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return aiq_err_field(e, rc, field ? field : x->field, "exec plugin %.120s (%.64s): %s",
                         x->command, x->field, msg);
}

/* ---- the interactive decision and KUBERNETES_EXEC_INFO ------------------ */

aiq_rc kube_exec_interactive(const struct kube_exec *x, int may_prompt, int *interactive,
                             aiq_err *e) {
    char f[128];
    snprintf(f, sizeof f, "%.100s.interactiveMode", x->field);
    *interactive = 0;
    if (x->mode == KUBE_EXEC_NEVER) return AIQ_OK;
    if (!may_prompt) {
        if (x->mode == KUBE_EXEC_ALWAYS)
            return xerr(e, AIQ_EUNSUPPORTED, x, f,
                        "interactiveMode is Always, but this program never runs a credential "
                        "plugin interactively (nobody is there to answer it); configure a "
                        "plugin that needs no input (interactiveMode Never or IfAvailable)");
        return AIQ_OK;
    }
    int tty = isatty(STDIN_FILENO);
    if (x->mode == KUBE_EXEC_ALWAYS && !tty)
        return xerr(e, AIQ_EUNSUPPORTED, x, f,
                    "interactiveMode is Always and standard input is not a terminal");
    *interactive = tty;
    return AIQ_OK;
}

/* Adds key -> v to o; takes v, also on failure. Returns 0 or -1. */
static int jadd(json_object *o, const char *key, json_object *v) {
    if (!v) return -1;
    if (json_object_object_add(o, key, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* Standard base64 with padding of len bytes; a new string or NULL. */
static char *b64_encode(const unsigned char *p, size_t len) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1);
    size_t n = 0;
    if (!out) return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < len) v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < len) v |= p[i + 2];
        out[n++] = tab[(v >> 18) & 63];
        out[n++] = tab[(v >> 12) & 63];
        out[n++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[n++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[n] = '\0';
    return out;
}

aiq_rc kube_exec_info(const struct kube_exec *x, const struct kube_exec_cluster *cl,
                      int interactive, char **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    json_object *root = json_object_new_object(), *spec = json_object_new_object();
    json_object *cluster = NULL, *cfg = NULL;
    int bad = 0;

    *out = NULL;
    if (!root || !spec) goto out_nomem;
    bad |= jadd(root, "kind", json_object_new_string("ExecCredential"));
    bad |= jadd(root, "apiVersion", json_object_new_string(x->api_version));
    bad |= jadd(spec, "interactive", json_object_new_boolean(interactive));
    if (x->provide_cluster_info && cl) {
        cluster = json_object_new_object();
        if (!cluster) goto out_nomem;
        bad |= jadd(cluster, "server", json_object_new_string(cl->server ? cl->server : ""));
        if (cl->tls_server_name && *cl->tls_server_name)
            bad |= jadd(cluster, "tls-server-name", json_object_new_string(cl->tls_server_name));
        if (cl->insecure) bad |= jadd(cluster, "insecure-skip-tls-verify", json_object_new_boolean(1));
        if (cl->ca && cl->ca->data) {
            char *b = b64_encode(cl->ca->data, cl->ca->len);
            if (!b) goto out_nomem;
            bad |= jadd(cluster, "certificate-authority-data", json_object_new_string(b));
            free(b);
        }
        if (cl->config_json) {
            aiq_err le;
            aiq_err_clear(&le);
            rc = kube_json_parse(cl->config_json, strlen(cl->config_json), &cfg, &le);
            if (rc != AIQ_OK) {
                rc = xerr(e, rc, x, NULL, "the cluster's %s extension: %s", KUBE_EXEC_EXTENSION,
                          le.message);
                goto out;
            }
            bad |= jadd(cluster, "config", cfg);
            cfg = NULL;
        }
        bad |= jadd(spec, "cluster", cluster);
        cluster = NULL;
    }
    bad |= jadd(root, "spec", spec);
    spec = NULL;
    if (bad) goto out_nomem;
    const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    *out = s ? strdup(s) : NULL;
    if (!*out) goto out_nomem;
    goto out;
out_nomem:
    rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory building %s", EXEC_INFO_ENV);
out:
    json_object_put(cfg);
    json_object_put(cluster);
    json_object_put(spec);
    json_object_put(root);
    return rc;
}

/* ---- reading the ExecCredential ------------------------------------------ */

/* status.KEY as a string into *out (borrowed, NULL when absent or ""). */
static aiq_rc cred_str(const struct kube_exec *x, json_object *status, const char *key,
                       const char **out, aiq_err *e) {
    json_object *v = NULL;
    char f[64];
    *out = NULL;
    if (!json_object_object_get_ex(status, key, &v) || json_object_is_type(v, json_type_null))
        return AIQ_OK;
    snprintf(f, sizeof f, "status.%s", key);
    if (!json_object_is_type(v, json_type_string))
        return xerr(e, AIQ_EINVAL, x, f, "output: %s: expected a string", f);
    const char *s = json_object_get_string(v);
    *out = s && *s ? s : NULL;
    return AIQ_OK;
}

/* Copies PEM text s into a blob; it must at least look like PEM (curl
 * would otherwise fail every handshake with a vaguer error). */
static aiq_rc cred_pem(const struct kube_exec *x, const char *s, const char *field,
                       struct kube_blob *b, aiq_err *e) {
    if (!strstr(s, "-----BEGIN "))
        return xerr(e, AIQ_EINVAL, x, field, "output: %s: is not PEM (no -----BEGIN line)", field);
    size_t n = strlen(s);
    b->data = malloc(n + 1);
    if (!b->data) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    memcpy(b->data, s, n + 1);
    b->len = n;
    return AIQ_OK;
}

/* Checks the ExecCredential o's kind and apiVersion and finds its status
 * object: *st is status as found (borrowed from o; set, object or not,
 * whenever o has one, so that the caller can wipe it). */
static aiq_rc cred_envelope(const struct kube_exec *x, json_object *o, json_object **st,
                            aiq_err *e) {
    const char *kind = aiq_jpath_str(o, "kind"), *av = aiq_jpath_str(o, "apiVersion");
    if (!kind || strcmp(kind, "ExecCredential") != 0)
        return xerr(e, AIQ_EINVAL, x, "kind", "output: kind is \"%.40s\", want ExecCredential",
                    kind ? kind : "");
    if (!av || strcmp(av, x->api_version) != 0)
        return xerr(e, AIQ_EINVAL, x, "apiVersion",
                    "output: apiVersion is \"%.60s\", but the kubeconfig configures %s",
                    av ? av : "", x->api_version);
    if (!json_object_object_get_ex(o, "status", st) || !json_object_is_type(*st, json_type_object))
        return xerr(e, AIQ_EINVAL, x, "status", "output: status: %s",
                    *st ? "expected an object" : "missing (no credential)");
    return AIQ_OK;
}

/* The credential in status st: a token, a client certificate with its
 * key, or both (borrowed from st, NULL when absent). The token must fit
 * in an HTTP header. */
static aiq_rc cred_fields(const struct kube_exec *x, json_object *st, const char **tok,
                          const char **cert, const char **key, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    if ((rc = cred_str(x, st, "token", tok, e)) != AIQ_OK ||
        (rc = cred_str(x, st, "clientCertificateData", cert, e)) != AIQ_OK ||
        (rc = cred_str(x, st, "clientKeyData", key, e)) != AIQ_OK)
        return rc;
    if (!*tok && !*cert && !*key)
        return xerr(e, AIQ_EINVAL, x, "status",
                    "output: status has no token and no clientCertificateData/clientKeyData");
    if (!*cert != !*key) {
        const char *miss = *cert ? "status.clientKeyData" : "status.clientCertificateData";
        return xerr(e, AIQ_EINVAL, x, miss, "output: %s: missing (a client certificate needs its key)",
                    miss);
    }
    for (const char *q = *tok; q && *q; q++)
        if ((unsigned char)*q < 0x21 || (unsigned char)*q > 0x7e)
            return xerr(e, AIQ_EINVAL, x, "status.token",
                        "output: status.token: byte %zu (0x%02x) cannot go in an HTTP header",
                        (size_t)(q - *tok), (unsigned char)*q);
    return AIQ_OK;
}

/* status.expirationTimestamp, when set, into *expiry (left as it is
 * when absent or null). */
static aiq_rc cred_expiry(const struct kube_exec *x, json_object *st, time_t *expiry,
                          aiq_err *e) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(st, "expirationTimestamp", &v) ||
        json_object_is_type(v, json_type_null))
        return AIQ_OK;
    const char *exp = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    double t = opst_parse_time(exp);
    if (!exp || t <= 0)
        return xerr(e, AIQ_EINVAL, x, "status.expirationTimestamp",
                    "output: status.expirationTimestamp: \"%.40s\" is not an RFC 3339 time",
                    exp ? exp : json_object_to_json_string(v));
    *expiry = (time_t)t;
    return AIQ_OK;
}

/* Wipes the secrets (the token, the client key) in the parsed status st
 * (may be NULL) before it is freed. */
static void cred_wipe_parsed(json_object *st) {
    const char *keys[] = {"token", "clientKeyData"};
    json_object *v = NULL;
    if (!st) return;
    for (size_t i = 0; i < 2; i++) {
        const char *s = NULL;
        if (json_object_object_get_ex(st, keys[i], &v) && json_object_is_type(v, json_type_string) &&
            (s = json_object_get_string(v)))
            wipe((void *)s, strlen(s));
    }
}

aiq_rc kube_exec_parse(const struct kube_exec *x, const char *text, size_t len,
                       struct kube_cred *out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    json_object *o = NULL, *st = NULL;
    const char *tok = NULL, *cert = NULL, *key = NULL;
    aiq_err le;

    memset(out, 0, sizeof *out);
    aiq_err_clear(&le);
    if (len == 0) return xerr(e, AIQ_EPARSE, x, "", "printed nothing on stdout (want an ExecCredential)");
    if (kube_json_parse(text, len, &o, &le) != AIQ_OK) {
        rc = xerr(e, AIQ_EPARSE, x, "", "output is not JSON (want an ExecCredential): %s", le.message);
        goto out;
    }
    if (!json_object_is_type(o, json_type_object)) {
        rc = xerr(e, AIQ_EPARSE, x, "", "output is not a JSON object (want an ExecCredential)");
        goto out;
    }
    if ((rc = cred_envelope(x, o, &st, e)) != AIQ_OK ||
        (rc = cred_fields(x, st, &tok, &cert, &key, e)) != AIQ_OK ||
        (rc = cred_expiry(x, st, &out->expiry, e)) != AIQ_OK)
        goto out;
    if (tok && !(out->token = strdup(tok))) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    if (cert && ((rc = cred_pem(x, cert, "status.clientCertificateData", &out->cert, e)) != AIQ_OK ||
                 (rc = cred_pem(x, key, "status.clientKeyData", &out->key, e)) != AIQ_OK))
        goto out;
out:
    /* The parsed object holds the secret too. */
    cred_wipe_parsed(st);
    json_object_put(o);
    if (rc != AIQ_OK) kube_cred_clear(out);
    return rc;
}

/* ---- running the command ---------------------------------------------------- */

/* The child's environment: ours minus the names x sets and
 * KUBERNETES_EXEC_INFO, then x's env, then KUBERNETES_EXEC_INFO=info.
 * *envp is a new array; its entries from index *nours on are owned. */
static aiq_rc exec_env(const struct kube_exec *x, const char *info, char ***envp, size_t *nours,
                       aiq_err *e) {
    size_t n = 0, k = 0;
    for (char **p = environ; p && *p; p++) n++;
    char **v = calloc(n + x->nenv + 2, sizeof *v);
    if (!v) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    for (char **p = environ; p && *p; p++) {
        size_t nl = strcspn(*p, "=");
        int skip = nl == sizeof EXEC_INFO_ENV - 1 && strncmp(*p, EXEC_INFO_ENV, nl) == 0;
        for (size_t i = 0; !skip && i < x->nenv; i++)
            skip = strlen(x->env[i].name) == nl && strncmp(*p, x->env[i].name, nl) == 0;
        if (!skip) v[k++] = *p;
    }
    *nours = k;
    for (size_t i = 0; i <= x->nenv; i++) {
        const char *name = i < x->nenv ? x->env[i].name : EXEC_INFO_ENV;
        const char *val = i < x->nenv ? x->env[i].value : info;
        size_t len = strlen(name) + strlen(val) + 2;
        char *s = malloc(len);
        if (!s) {
            for (size_t j = *nours; j < k; j++) free(v[j]);
            free(v);
            return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        }
        snprintf(s, len, "%s=%s", name, val);
        v[k++] = s;
    }
    v[k] = NULL;
    *envp = v;
    return AIQ_OK;
}

static void exec_env_free(char **envp, size_t nours) {
    if (!envp) return;
    for (size_t j = nours; envp[j]; j++) {
        wipe(envp[j], strlen(envp[j]));
        free(envp[j]);
    }
    free(envp);
}

/* Finds the program to run, as kubectl (Go's exec.LookPath) does: a
 * command with a '/' is used as it is; a bare name is looked for in each
 * absolute $PATH directory (empty and relative entries are skipped, so
 * a file in the working directory is never run by accident). On AIQ_OK
 * *out is a new path to an executable regular file. AIQ_ENOTFOUND when
 * there is none (the message ends with the installHint), AIQ_EIO when
 * the file exists but cannot be run. Looking first, rather than reading
 * posix_spawn's error, also gives the same answer where posix_spawn
 * cannot report a failed exec (valgrind runs it as fork + exec). */
static aiq_rc exec_lookpath(const struct kube_exec *x, char **out, aiq_err *e) {
    struct stat st;
    const char *cmd = x->command;
    *out = NULL;
    if (strchr(cmd, '/')) {
        if (stat(cmd, &st) != 0)
            return xerr(e, errno == ENOENT || errno == ENOTDIR ? AIQ_ENOTFOUND : AIQ_EIO, x, "command",
                        "command not found (%s)%s%s", strerror(errno), x->install_hint ? ". " : "",
                        x->install_hint ? x->install_hint : "");
        if (!S_ISREG(st.st_mode) || access(cmd, X_OK) != 0)
            return xerr(e, AIQ_EIO, x, "command", "cannot run it: not an executable file");
        *out = strdup(cmd);
        return *out ? AIQ_OK : aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && p[0] == '/') {
            size_t len = n + 1 + strlen(cmd) + 1;
            char *f = malloc(len);
            if (!f) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
            snprintf(f, len, "%.*s/%s", (int)n, p, cmd);
            if (stat(f, &st) == 0 && S_ISREG(st.st_mode) && access(f, X_OK) == 0) {
                *out = f;
                return AIQ_OK;
            }
            free(f);
        }
        p += n;
        if (*p == ':') p++;
    }
    return xerr(e, AIQ_ENOTFOUND, x, "command", "command not found in $PATH%s%s",
                x->install_hint ? ". " : "", x->install_hint ? x->install_hint : "");
}

static long mono_ms(void) {
    return (long)(aiq_mono_s() * 1000.0);
}

/* Reading state of one run. */
struct exec_io {
    int fd_out, fd_err;        /* -1 once closed */
    char *out;                 /* stdout, NUL-terminated */
    size_t len, cap;
    int toobig, nomem;
    char tail[KUBE_EXEC_STDERR_KEEP]; /* last stderr bytes, a ring */
    size_t ntail;              /* stderr bytes seen in all */
};

/* Reads what fd has now. Returns 1 at EOF or error (fd closed), else 0. */
static int exec_read(struct exec_io *io, int *fd, int is_out) {
    char buf[4096];
    for (;;) {
        ssize_t r = read(*fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (r <= 0) {
            close(*fd);
            *fd = -1;
            return 1;
        }
        if (!is_out) {
            /* Pass the plugin's messages through, as kubectl does. A
             * failed write to our own stderr is deliberately ignored: the
             * tail below still reaches the error message. */
            ssize_t w = write(STDERR_FILENO, buf, (size_t)r);
            (void)w;
            for (ssize_t i = 0; i < r; i++) io->tail[io->ntail++ % sizeof io->tail] = buf[i];
            continue;
        }
        if ((size_t)r > KUBE_EXEC_MAX_OUTPUT - io->len) {
            io->toobig = 1;
            return 0;
        }
        if (io->len + (size_t)r + 1 > io->cap) {
            size_t nc = io->cap ? io->cap * 2 : 8192;
            while (nc < io->len + (size_t)r + 1) nc *= 2;
            char *np = malloc(nc);
            if (!np) {
                io->nomem = 1;
                return 0;
            }
            /* Not realloc: the old buffer holds a secret and is wiped. */
            if (io->out) {
                memcpy(np, io->out, io->len);
                wipe(io->out, io->len);
                free(io->out);
            }
            io->out = np;
            io->cap = nc;
        }
        memcpy(io->out + io->len, buf, (size_t)r);
        io->len += (size_t)r;
        io->out[io->len] = '\0';
    }
}

/* The kept stderr tail as one printable line (into dst, cap bytes). */
static void exec_tail(const struct exec_io *io, char *dst, size_t cap) {
    size_t keep = sizeof io->tail, n = io->ntail < keep ? io->ntail : keep;
    size_t start = io->ntail < keep ? 0 : io->ntail % keep, k = 0;
    int space = 1;
    if (io->ntail > keep && k + 4 < cap) {
        memcpy(dst, "... ", 4);
        k = 4;
    }
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char ch = (unsigned char)io->tail[(start + i) % keep];
        if (ch < 0x20 || ch == 0x7f) ch = ' ';
        if (ch == ' ' && space) continue; /* squeeze runs of blanks and newlines */
        space = ch == ' ';
        dst[k++] = (char)ch;
    }
    while (k > 0 && dst[k - 1] == ' ') k--;
    dst[k] = '\0';
}

/* The child of one run, and how it ended. */
struct exec_child {
    pid_t pid;
    int status;    /* from waitpid, once reaped */
    int reaped, timedout;
    long deadline; /* mono_ms() by which it must have answered */
};

/* The file actions and attributes of a run's spawn: stdin the terminal
 * only for an interactive run (else /dev/null); stdout to out_w; stderr
 * to err_w unless interactive (then ours, so prompts show); no other
 * descriptor of ours; default signal handling, nothing blocked; its own
 * process group unless interactive. Returns 0, or -1 when one fails. */
static int exec_spawn_setup(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at, int out_w,
                            int err_w, int interactive) {
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    static const int reset[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGALRM,
                                SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaddset(&dfl, reset[i]);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    /* Its own process group, so a timeout kills what it started too; an
     * interactive run stays in ours, where the terminal lets it read. */
    if (!interactive) flags |= POSIX_SPAWN_SETPGROUP;
    if ((!interactive && posix_spawn_file_actions_addopen(fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0) != 0) ||
        posix_spawn_file_actions_adddup2(fa, out_w, STDOUT_FILENO) != 0 ||
        (!interactive && posix_spawn_file_actions_adddup2(fa, err_w, STDERR_FILENO) != 0) ||
        posix_spawn_file_actions_addclosefrom_np(fa, STDERR_FILENO + 1) != 0 ||
        posix_spawnattr_setflags(at, flags) != 0 || posix_spawnattr_setsigmask(at, &none) != 0 ||
        posix_spawnattr_setsigdefault(at, &dfl) != 0 || posix_spawnattr_setpgroup(at, 0) != 0)
        return -1;
    return 0;
}

/* Starts prog with argv and envp, its stdout (and, unless interactive,
 * its stderr) into pipes whose read ends go to io, non-blocking. On
 * AIQ_OK *pid is the child; on error *pid is -1 and no descriptor of the
 * run is left open. */
static aiq_rc exec_spawn(const struct kube_exec *x, const char *prog, char **argv, char **envp,
                         int interactive, pid_t *pid, struct exec_io *io, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int fa_ok = 0, at_ok = 0;

    *pid = -1;
    if (pipe2(po, O_CLOEXEC) != 0 || (!interactive && pipe2(pe, O_CLOEXEC) != 0)) {
        rc = xerr(e, AIQ_EIO, x, NULL, "pipe: %s", strerror(errno));
        goto out;
    }
    fa_ok = posix_spawn_file_actions_init(&fa) == 0;
    at_ok = posix_spawnattr_init(&at) == 0;
    if (!fa_ok || !at_ok || exec_spawn_setup(&fa, &at, po[1], pe[1], interactive) != 0) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory setting up %s", x->command);
        goto out;
    }
    int err = posix_spawn(pid, prog, &fa, &at, argv, envp);
    if (err != 0) {
        *pid = -1;
        rc = xerr(e, err == ENOENT ? AIQ_ENOTFOUND : AIQ_EIO, x, "command", "cannot run %s: %s", prog,
                  strerror(err));
        goto out;
    }
    /* The write ends are the child's now (closed below); the read ends
     * are ours. */
    io->fd_out = po[0];
    io->fd_err = pe[0];
    po[0] = pe[0] = -1;
    fcntl(io->fd_out, F_SETFL, fcntl(io->fd_out, F_GETFL) | O_NONBLOCK);
    if (io->fd_err >= 0) fcntl(io->fd_err, F_SETFL, fcntl(io->fd_err, F_GETFL) | O_NONBLOCK);
out:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
    }
    if (at_ok) posix_spawnattr_destroy(&at);
    if (fa_ok) posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Reads the child's stdout and stderr into io until both are closed, the
 * output passes its cap (io->toobig), memory runs out (io->nomem) or the
 * deadline passes (ch->timedout). A child that has exited while its
 * pipes stay open (in a process it started) is reaped when it goes
 * quiet (ch->reaped), and what is there is taken. AIQ_EIO when poll
 * fails. */
static aiq_rc exec_collect(const struct kube_exec *x, struct exec_child *ch, struct exec_io *io,
                           aiq_err *e) {
    while ((io->fd_out >= 0 || io->fd_err >= 0) && !io->toobig && !io->nomem) {
        long left = ch->deadline - mono_ms();
        if (left <= 0) {
            ch->timedout = 1;
            return AIQ_OK;
        }
        struct pollfd pfd[2];
        int np = 0;
        if (io->fd_out >= 0) pfd[np++] = (struct pollfd){.fd = io->fd_out, .events = POLLIN};
        if (io->fd_err >= 0) pfd[np++] = (struct pollfd){.fd = io->fd_err, .events = POLLIN};
        int pr = poll(pfd, (nfds_t)np, left < EXEC_POLL_MS ? (int)left : EXEC_POLL_MS);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) return xerr(e, AIQ_EIO, x, NULL, "poll: %s", strerror(errno));
        if (pr == 0) {
            /* Quiet: has it exited, leaving its pipes open in a process
             * it started? Then take what is there and stop reading. */
            pid_t w = waitpid(ch->pid, &ch->status, WNOHANG);
            if (w == ch->pid) {
                ch->reaped = 1;
                if (io->fd_out >= 0) exec_read(io, &io->fd_out, 1);
                if (io->fd_err >= 0) exec_read(io, &io->fd_err, 0);
                return AIQ_OK;
            }
            continue;
        }
        for (int i = 0; i < np; i++)
            if (pfd[i].revents) {
                int is_out = pfd[i].fd == io->fd_out;
                exec_read(io, is_out ? &io->fd_out : &io->fd_err, is_out);
            }
    }
    return AIQ_OK;
}

/* Ends the child: after a run that went well (failed 0, output complete)
 * waits for it up to the deadline; kills it (and, when it has its own
 * group, what it started) when the run failed or timed out; then reaps
 * it. */
static void exec_reap(struct exec_child *ch, const struct exec_io *io, int interactive,
                      int failed) {
    /* Its output is closed but it may still run: wait for it up to the
     * same deadline. */
    while (!ch->reaped && !ch->timedout && !io->toobig && !io->nomem && !failed) {
        pid_t w = waitpid(ch->pid, &ch->status, WNOHANG);
        if (w == ch->pid) {
            ch->reaped = 1;
        } else if (w < 0 && errno != EINTR) {
            break; /* ECHILD: someone else reaped it */
        } else if (mono_ms() >= ch->deadline) {
            ch->timedout = 1;
        } else {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (!ch->reaped && (ch->timedout || io->toobig || io->nomem || failed)) {
        /* Kill it (and, when it has its own group, what it started). */
        if (kill(interactive ? ch->pid : -ch->pid, SIGKILL) != 0) kill(ch->pid, SIGKILL);
    }
    while (!ch->reaped) {
        pid_t w = waitpid(ch->pid, &ch->status, 0);
        if (w == ch->pid) ch->reaped = 1;
        else if (w < 0 && errno != EINTR) break; /* ECHILD: someone else reaped it */
    }
}

/* The error of a finished run, AIQ_OK when it answered in time, within
 * the cap, and exited 0: a timeout, too much output, no memory, a
 * non-zero exit or a signal (with the tail of its stderr). */
static aiq_rc exec_outcome(const struct kube_exec *x, const struct exec_io *io,
                           const struct exec_child *ch, long timeout_ms, aiq_err *e) {
    char tail[KUBE_EXEC_STDERR_KEEP + 8];
    exec_tail(io, tail, sizeof tail);
    if (ch->timedout)
        return xerr(e, AIQ_ETIMEOUT, x, NULL, "no answer within %ld ms; killed it%s%s", timeout_ms,
                    tail[0] ? "; stderr: " : "", tail);
    if (io->toobig)
        return xerr(e, AIQ_ETOOBIG, x, NULL, "printed more than %zu bytes; killed it",
                    KUBE_EXEC_MAX_OUTPUT);
    if (io->nomem) return aiq_err_set(e, AIQ_ENOMEM, "out of memory reading %s", x->command);
    if (ch->reaped && WIFEXITED(ch->status) && WEXITSTATUS(ch->status) != 0)
        return xerr(e, AIQ_EAUTH, x, NULL, "exited with status %d%s%s", WEXITSTATUS(ch->status),
                    tail[0] ? ": " : "", tail);
    if (ch->reaped && WIFSIGNALED(ch->status))
        return xerr(e, AIQ_EAUTH, x, NULL, "killed by signal %d%s%s", WTERMSIG(ch->status),
                    tail[0] ? ": " : "", tail);
    return AIQ_OK;
}

aiq_rc kube_exec_run(const struct kube_exec *x, const char *info, int interactive,
                     long timeout_ms, char **out, size_t *len, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    char **argv = NULL, **envp = NULL, *prog = NULL;
    size_t nours = 0;
    struct exec_child ch = {.pid = -1};
    struct exec_io io;

    *out = NULL;
    *len = 0;
    memset(&io, 0, sizeof io);
    io.fd_out = io.fd_err = -1;
    if (timeout_ms <= 0) timeout_ms = interactive ? KUBE_EXEC_INTERACTIVE_TIMEOUT_MS : KUBE_EXEC_TIMEOUT_MS;

    if ((rc = exec_lookpath(x, &prog, e)) != AIQ_OK) goto out;
    argv = calloc(x->nargs + 2, sizeof *argv);
    if (!argv) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    argv[0] = x->command;
    for (size_t i = 0; i < x->nargs; i++) argv[i + 1] = x->args[i];
    if ((rc = exec_env(x, info, &envp, &nours, e)) != AIQ_OK) goto out;

    if ((rc = exec_spawn(x, prog, argv, envp, interactive, &ch.pid, &io, e)) != AIQ_OK) goto out;
    ch.deadline = mono_ms() + timeout_ms;
    rc = exec_collect(x, &ch, &io, e);
    exec_reap(&ch, &io, interactive, rc != AIQ_OK);
    if (rc != AIQ_OK || (rc = exec_outcome(x, &io, &ch, timeout_ms, e)) != AIQ_OK) goto out_close;
    if (!io.out && !(io.out = calloc(1, 1))) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_close;
    }
    *out = io.out;
    *len = io.len;
    io.out = NULL;
out_close:
    if (io.out) {
        wipe(io.out, io.len);
        free(io.out);
    }
    if (io.fd_out >= 0) close(io.fd_out);
    if (io.fd_err >= 0) close(io.fd_err);
out:
    exec_env_free(envp, nours);
    free(argv);
    free(prog);
    return rc;
}

aiq_rc kube_exec_credential(const struct kube_exec *x, const struct kube_exec_cluster *cl,
                            int may_prompt, long timeout_ms, struct kube_cred *out,
                            aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    int interactive = 0;
    char *info = NULL, *text = NULL;
    size_t len = 0;

    memset(out, 0, sizeof *out);
    if ((rc = kube_exec_interactive(x, may_prompt, &interactive, e)) != AIQ_OK) goto out;
    if ((rc = kube_exec_info(x, cl, interactive, &info, e)) != AIQ_OK) goto out;
    if ((rc = kube_exec_run(x, info, interactive, timeout_ms, &text, &len, e)) != AIQ_OK) goto out;
    rc = kube_exec_parse(x, text, len, out, e);
out:
    if (text) {
        wipe(text, len);
        free(text);
    }
    free(info);
    return rc;
}
