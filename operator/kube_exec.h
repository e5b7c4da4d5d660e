/* kube_exec.h -- exec credential plugins (client.authentication.k8s.io
 * v1 and v1beta1): run the command of a kubeconfig's users[].user.exec
 * and read the ExecCredential it prints.
 *
 * The command runs without a shell (posix_spawn), with the process
 * environment plus the configured env entries plus KUBERNETES_EXEC_INFO,
 * an ExecCredential carrying spec.interactive and, with
 * provideClusterInfo, spec.cluster. Its stdout is read up to
 * KUBE_EXEC_MAX_OUTPUT bytes. Non-interactive runs get /dev/null as
 * stdin, run in their own process group and have their stderr passed
 * through to ours while its tail is kept for the error message;
 * interactive runs share our stdin, stderr and process group (a prompt
 * must reach the terminal). A run that does not finish within the time
 * limit is killed with SIGKILL (its whole process group when it has one).
 *
 * Caching the credential and deciding when to run again is kube_auth.h's
 * job; this module only runs and reads. */
#ifndef AIQ_KUBE_EXEC_H
#define AIQ_KUBE_EXEC_H

#include <stddef.h>
#include <time.h>

#include "common/aiq_err.h"
#include "operator/kubeconfig.h"

/* Time limits of one plugin run. Non-interactive plugins (aws eks
 * get-token, gke-gcloud-auth-plugin, kubelogin with a cached login)
 * answer in a second or two; 60 s leaves room for a slow token service.
 * An interactive run may wait for a person (a password, a browser
 * login), so it gets 5 minutes. */
#define KUBE_EXEC_TIMEOUT_MS 60000L
#define KUBE_EXEC_INTERACTIVE_TIMEOUT_MS 300000L
/* Cap on a plugin's stdout (an ExecCredential with a certificate chain
 * and key is a few KiB). */
#define KUBE_EXEC_MAX_OUTPUT ((size_t)1 << 20)
/* Bytes of a failed plugin's stderr quoted in the error (its last ones). */
#define KUBE_EXEC_STDERR_KEEP 300

/* A credential from a plugin (or the oidc provider). All owned. */
struct kube_cred {
    char *token;           /* bearer token, NULL when none */
    struct kube_blob cert; /* client certificate (PEM), empty when none */
    struct kube_blob key;  /* its key (PEM), empty when none */
    time_t expiry;         /* expirationTimestamp, 0 when it has none */
};

/* Frees what c owns, zeroing the secrets first, and empties *c. */
void kube_cred_clear(struct kube_cred *c);

/* What a plugin may learn about the cluster (spec.cluster). Borrowed. */
struct kube_exec_cluster {
    const char *server;
    const char *tls_server_name;    /* may be NULL */
    int insecure;                   /* insecure-skip-tls-verify */
    const struct kube_blob *ca;     /* CA bundle (PEM), may be NULL */
    const char *config_json;        /* the exec extension as JSON, may be NULL */
};

/* Decides whether a run of x is interactive. may_prompt: a person may be
 * there to answer (kubectl aiq; never the operator). Interactive when
 * may_prompt, stdin is a terminal and the mode is not Never. Mode Always
 * without a terminal, or with may_prompt 0, is AIQ_EUNSUPPORTED naming
 * x->field.interactiveMode. *interactive is set on AIQ_OK. */
aiq_rc kube_exec_interactive(const struct kube_exec *x, int may_prompt, int *interactive,
                             aiq_err *e);

/* Builds the KUBERNETES_EXEC_INFO value: an ExecCredential of x's
 * apiVersion with spec.interactive and, when x->provide_cluster_info and
 * cl is non-NULL, spec.cluster (server, tls-server-name,
 * insecure-skip-tls-verify, certificate-authority-data in base64, config).
 * On AIQ_OK *out is a new string the caller frees; else NULL. */
aiq_rc kube_exec_info(const struct kube_exec *x, const struct kube_exec_cluster *cl,
                      int interactive, char **out, aiq_err *e);

/* Reads a plugin's stdout (len bytes) as an ExecCredential of x's
 * apiVersion into *out: status.token and/or status.clientCertificateData
 * with status.clientKeyData, optional status.expirationTimestamp (RFC
 * 3339). On error *out is empty and e names the command, x->field and,
 * in e->field, the ExecCredential field at fault ("apiVersion",
 * "status.token", ...): AIQ_EPARSE (not JSON) or AIQ_EINVAL. */
aiq_rc kube_exec_parse(const struct kube_exec *x, const char *text, size_t len,
                       struct kube_cred *out, aiq_err *e);

/* Runs x's command with info as KUBERNETES_EXEC_INFO and waits at most
 * timeout_ms (<= 0: the defaults above). On AIQ_OK *out is its stdout
 * (NUL-terminated, caller frees; it holds a secret: wipe it) and *len its
 * length. The command is found as kubectl finds it: a path when it has
 * a '/', else the first executable of that name in an absolute $PATH
 * directory. Errors name the command and x->field: AIQ_ENOTFOUND (no such
 * command; the message ends with x's installHint), AIQ_EIO (not an
 * executable file, or it cannot be started), AIQ_EAUTH (it exited non-zero or was killed by a signal: the
 * status and the tail of its stderr), AIQ_ETIMEOUT (killed at the
 * limit), AIQ_ETOOBIG (stdout passed KUBE_EXEC_MAX_OUTPUT; killed).
 * The child is always waited for before returning. */
aiq_rc kube_exec_run(const struct kube_exec *x, const char *info, int interactive,
                     long timeout_ms, char **out, size_t *len, aiq_err *e);

/* One credential: kube_exec_interactive, kube_exec_info, kube_exec_run
 * and kube_exec_parse in turn. On error *out is empty. */
aiq_rc kube_exec_credential(const struct kube_exec *x, const struct kube_exec_cluster *cl,
                            int may_prompt, long timeout_ms, struct kube_cred *out,
                            aiq_err *e);

#endif
