/* kube_auth.h -- credentials that change while a client runs: an exec
 * credential plugin's (kube_exec.h) or the oidc auth-provider's
 * (kube_oidc.h). One kube_auth per kube_client holds the current
 * credential and renews it:
 *  - a credential is reused until its expiry (the plugin's
 *    status.expirationTimestamp; the id-token's exp claim minus
 *    KUBE_OIDC_EXPIRY_SLACK_S);
 *  - one without an expiry is kept until the server refuses it: the
 *    client then calls kube_auth_rejected and the next kube_auth_get
 *    renews it (plugin run again, id-token refreshed);
 *  - an oidc id-token without a refresh-token is used until it expires,
 *    and then is an error that says so.
 *
 * Thread model: any number of threads may call kube_auth_get at once. At
 * most one renewal runs at a time, without the lock held; the callers
 * that need one while it runs wait for it and take its result, a
 * failure included (they do not each run the plugin again). */
#ifndef AIQ_KUBE_AUTH_H
#define AIQ_KUBE_AUTH_H

#include "common/aiq_err.h"
#include "operator/kubeconfig.h"

struct kube_auth; /* opaque */

struct kube_auth_opts {
    int may_prompt;        /* a person may answer an exec plugin (kube_exec_interactive) */
    long exec_timeout_ms;  /* <= 0: KUBE_EXEC_TIMEOUT_MS or, interactive, KUBE_EXEC_INTERACTIVE_TIMEOUT_MS */
    long oidc_timeout_ms;  /* <= 0: KUBE_OIDC_TIMEOUT_MS */
};

/* A copy of the current credential. All owned. */
struct kube_auth_cred {
    char *token;                /* bearer token, NULL when none */
    struct kube_blob cert, key; /* client certificate and key (PEM); copied only when
                                 * gen differs from the caller's have_gen */
    unsigned long gen;          /* its generation: > 0, grows with every renewal */
};

/* Frees c's copies (zeroed first) and empties it. */
void kube_auth_cred_clear(struct kube_auth_cred *c);

/* Builds the credential source of cfg (copied): its exec plugin, else
 * its oidc provider. With cfg->exec and provideClusterInfo, the cluster's
 * server, TLS settings and CA (certificate-authority-data, or the
 * certificate-authority file read now) are kept for the plugin. Nothing
 * runs yet. On AIQ_OK *out is a new kube_auth for kube_auth_free.
 * Errors: AIQ_EINVAL when cfg has neither; an exec plugin with
 * interactiveMode Always and may_prompt 0 (AIQ_EUNSUPPORTED); an oidc
 * id-token that is not a JWT (AIQ_EINVAL naming
 * users[N].user.auth-provider.config.id-token); the CA file (AIQ_EIO).
 * *out is NULL after an error. */
aiq_rc kube_auth_create(const struct kube_config *cfg, const struct kube_auth_opts *o,
                        struct kube_auth **out, aiq_err *e);

/* Frees a. No kube_auth_get may be running. a may be NULL. */
void kube_auth_free(struct kube_auth *a);

/* The credential to send now, renewing it first when it is missing,
 * expired or refused (see above). have_gen: the generation whose
 * certificate the caller already holds (0: none); the certificate and key
 * are copied only for a newer one. On AIQ_OK *out is a copy the caller
 * clears with kube_auth_cred_clear. On error *out is empty and e is the
 * renewal's error (kube_exec_credential, kube_oidc_refresh). */
aiq_rc kube_auth_get(struct kube_auth *a, unsigned long have_gen, struct kube_auth_cred *out,
                     aiq_err *e);

/* The server answered 401 to a request sent with generation gen.
 * Returns 1 when sending it again may work: the credential has been
 * renewed since, or it is now marked to be renewed before its next use.
 * Returns 0 when there is nothing to renew with (an oidc id-token
 * without refresh-token): the 401 stands. */
int kube_auth_rejected(struct kube_auth *a, unsigned long gen);

/* Renewals attempted so far (plugin runs, oidc refreshes), for tests and
 * logs. */
unsigned long kube_auth_renewals(struct kube_auth *a);

#endif
