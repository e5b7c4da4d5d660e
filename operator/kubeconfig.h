/* kubeconfig.h -- where the operator's Kubernetes connection comes from:
 * a kubeconfig file (libyaml) or the in-cluster service account.
 *
 * The result is a plain struct of owned strings and byte blobs; the HTTP
 * client (kube_http.h) turns it into curl options. Certificate and key
 * data from "*-data" fields stay in memory and go to curl as blobs
 * (CURLOPT_*_BLOB), never to temp files.
 *
 * Credentials that change (an exec credential plugin, the oidc
 * auth-provider) are only read here; kube_auth.h runs and refreshes
 * them. Reading a kubeconfig never runs anything. */
#ifndef AIQ_KUBECONFIG_H
#define AIQ_KUBECONFIG_H

#include <stddef.h>

#include "common/aiq_err.h"

/* Caps on what we read: a kubeconfig, a certificate/key/token file. */
#define KUBE_CONFIG_MAX_BYTES (4u * 1024u * 1024u)
#define KUBE_CONFIG_MAX_FILE (1u * 1024u * 1024u)

/* Default in-cluster service-account directory. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* A byte blob (PEM data decoded from base64). */
struct kube_blob {
    unsigned char *data; /* owned, NUL-terminated for convenience */
    size_t len;          /* bytes, without the NUL */
};

/* Frees b's data and empties it. */
void kube_blob_free(struct kube_blob *b);

/* The same for secret data (a private key): the
 * bytes are zeroed before they are freed. */
void kube_blob_wipe_free(struct kube_blob *b);

/* Copies src into dst (NUL-terminated; an empty src gives an empty dst).
 * Returns 0, or -1 out of memory (dst empty). */
int kube_blob_dup(struct kube_blob *dst, const struct kube_blob *src);

/* Caps on an exec plugin's configuration. */
#define KUBE_EXEC_MAX_ARGS 256
#define KUBE_EXEC_MAX_ENV 256

/* The client.authentication.k8s.io versions an exec plugin may speak
 * (v1alpha1 was removed in Kubernetes 1.24). */
#define KUBE_EXEC_V1 "client.authentication.k8s.io/v1"
#define KUBE_EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* The cluster extension whose value an exec plugin gets as
 * spec.cluster.config (with provideClusterInfo). */
#define KUBE_EXEC_EXTENSION "client.authentication.k8s.io/exec"

/* users[].user.exec.interactiveMode: may the plugin read stdin? */
enum kube_exec_mode {
    KUBE_EXEC_NEVER = 1,    /* Never: stdin is never given */
    KUBE_EXEC_IF_AVAILABLE, /* IfAvailable: given when it is a terminal */
    KUBE_EXEC_ALWAYS,       /* Always: needs a terminal, fails without */
};

/* One users[].user.exec.env entry. Both strings owned, value may be "". */
struct kube_exec_env {
    char *name;
    char *value;
};

/* users[].user.exec: a credential plugin (kube_exec.h runs it). All
 * pointers owned. */
struct kube_exec {
    char *field;          /* "users[N].user.exec", named in errors */
    char *api_version;    /* KUBE_EXEC_V1 or KUBE_EXEC_V1BETA1 */
    char *command;        /* with a '/': resolved against the kubeconfig's
                           * directory; without: looked up in $PATH */
    char **args;          /* nargs strings, NULL when none */
    size_t nargs;
    struct kube_exec_env *env; /* nenv entries, NULL when none */
    size_t nenv;
    char *install_hint;   /* installHint, NULL when absent */
    int provide_cluster_info;  /* provideClusterInfo */
    enum kube_exec_mode mode;  /* interactiveMode (v1beta1 default IfAvailable) */
    char *cluster_config; /* with provideClusterInfo: the JSON text of the
                           * cluster's KUBE_EXEC_EXTENSION extension, NULL
                           * when it has none */
};

/* users[].user.auth-provider named "oidc" (its config map). All
 * pointers owned; the optional ones may be NULL. */
struct kube_oidc {
    char *field;          /* "users[N].user.auth-provider", named in errors */
    char *issuer_url;     /* idp-issuer-url: https, or http on loopback */
    char *client_id;      /* client-id */
    char *client_secret;  /* client-secret, optional */
    char *id_token;       /* id-token, optional (then refreshed at once) */
    char *refresh_token;  /* refresh-token, optional */
    char *ca_file;        /* idp-certificate-authority, optional */
    struct kube_blob ca_data; /* idp-certificate-authority-data, optional */
};

/* A resolved connection config. Every pointer is owned and may be NULL
 * when the field was absent; file paths are absolute or relative to the
 * working directory (kubeconfig-relative paths are resolved at load). */
struct kube_config {
    char *context;        /* context name used (NULL for in-cluster) */
    char *server;         /* https://host:port, no trailing slash */
    char *namespace_;     /* context namespace, or the SA namespace */
    char *ca_file;        /* certificate-authority */
    struct kube_blob ca_data;      /* certificate-authority-data */
    int insecure;         /* insecure-skip-tls-verify */
    char *tls_server_name; /* tls-server-name */
    char *client_cert_file;          /* client-certificate */
    struct kube_blob client_cert_data; /* client-certificate-data */
    char *client_key_file;           /* client-key */
    struct kube_blob client_key_data;  /* client-key-data */
    char *token;          /* bearer token */
    char *token_file;     /* tokenFile: re-read by the client as it rotates */
    struct kube_exec *exec;   /* users[].user.exec, NULL when absent */
    struct kube_oidc *oidc;   /* users[].user.auth-provider oidc, NULL when absent */
};

/* Loads a kubeconfig. path: explicit file (--kubeconfig) or NULL for the
 * first entry of $KUBECONFIG (a colon list), else $HOME/.kube/config.
 * context: NULL for current-context. On AIQ_OK *out is a new config the
 * caller frees with kube_config_free. On error *out is NULL and e says
 * what: AIQ_EIO (file), AIQ_ETOOBIG (size), AIQ_EPARSE (YAML, with
 * line/col), AIQ_EINVAL / AIQ_ENOTFOUND with e->field set to the path of
 * the field ("users[0].user.client-key-data"), AIQ_EUNSUPPORTED for a
 * credential kind we do not implement (basic auth, the removed gcp and
 * azure auth-providers: the message names the exec plugin to use). */
aiq_rc kube_config_load(const char *path, const char *context,
                        struct kube_config **out, aiq_err *e);

/* Parses kubeconfig YAML text of len bytes. base_dir resolves relative
 * file paths (NULL: leave them as written). Does no file I/O. Ownership
 * and errors as kube_config_load. */
aiq_rc kube_config_parse(const char *text, size_t len, const char *base_dir,
                         const char *context, struct kube_config **out,
                         aiq_err *e);

/* In-cluster config: server from $KUBERNETES_SERVICE_HOST and
 * $KUBERNETES_SERVICE_PORT, token file, ca.crt and namespace from sa_dir
 * (NULL: KUBE_SA_DIR; tests pass a fixture directory). The token is read
 * once here to fail early and re-read later by the client. Returns
 * AIQ_ENOTFOUND when the variables are unset (not in a pod), AIQ_EIO when
 * a file is missing; *out NULL after an error. */
aiq_rc kube_config_in_cluster(const char *sa_dir, struct kube_config **out,
                              aiq_err *e);

/* Picks the config as controller-runtime does: an explicit path
 * (--kubeconfig) wins; else $KUBECONFIG; else the in-cluster service
 * account when $KUBERNETES_SERVICE_HOST is set (sa_dir as for
 * kube_config_in_cluster); else $HOME/.kube/config. context applies to
 * kubeconfig files only. Ownership and errors as kube_config_load. */
aiq_rc kube_config_auto(const char *path, const char *context,
                        const char *sa_dir, struct kube_config **out,
                        aiq_err *e);

/* Frees c and everything it owns. c may be NULL. */
void kube_config_free(struct kube_config *c);

/* Deep copies of the exec and oidc settings (the client keeps its own).
 * Return NULL when src is NULL or allocation fails. */
struct kube_exec *kube_exec_dup(const struct kube_exec *src);
struct kube_oidc *kube_oidc_dup(const struct kube_oidc *src);

/* Free x / o and all they own, zeroing the secrets. NULL does nothing. */
void kube_exec_free(struct kube_exec *x);
void kube_oidc_free(struct kube_oidc *o);

/* Reads a whole file of at most cap bytes into *out (NUL-terminated,
 * caller frees) and its length into *len. AIQ_EIO / AIQ_ETOOBIG naming
 * the path on error, *out NULL. */
aiq_rc kube_read_file(const char *path, size_t cap, char **out, size_t *len,
                      aiq_err *e);

/* Non-zero when url may carry credentials: https://, or http:// to a
 * loopback host (localhost, 127.0.0.0/8, [::1]; tests). A URL with
 * user info ("user@host") is refused. */
int kube_url_secure(const char *url);

/* Decodes standard base64 (padding optional, ASCII whitespace ignored)
 * into a new blob. On error returns AIQ_EINVAL with the offending byte
 * offset in e->offset and message "invalid base64 at byte N"; field is
 * filled by the caller. */
aiq_rc kube_base64_decode(const char *s, size_t len, struct kube_blob *out,
                          aiq_err *e);

#endif
