/* kube_oidc.h -- the oidc auth-provider of a kubeconfig: when its
 * id-token expires (the JWT's exp claim) and how its refresh-token gets
 * a new one: OpenID discovery at <issuer>/.well-known/openid-configuration
 * for the token endpoint, then a grant_type=refresh_token POST there
 * (client-id and client-secret by HTTP Basic authentication, or client_id
 * in the form when there is no secret).
 *
 * Only https issuers and token endpoints are used, or http to a loopback
 * address (kube_url_secure; for tests). The idp-certificate-authority
 * (file or data) verifies them, else the system's CA store. The new
 * tokens are returned to the caller, which keeps them in memory: unlike
 * kubectl, nothing is written back to the kubeconfig (see
 * docs/kube-client.md). Caching and deciding when to refresh is
 * kube_auth.h's job. */
#ifndef AIQ_KUBE_OIDC_H
#define AIQ_KUBE_OIDC_H

#include <time.h>

#include "common/aiq_err.h"
#include "operator/kubeconfig.h"

/* An id-token this close to its exp counts as expired (as kubectl). */
#define KUBE_OIDC_EXPIRY_SLACK_S 10
/* Cap on a discovery document or token response. */
#define KUBE_OIDC_MAX_BODY ((size_t)1 << 20)
/* Default time limit of each of the two requests of a refresh. */
#define KUBE_OIDC_TIMEOUT_MS 30000L

/* Reads the exp claim of a JWT (header.payload.signature, base64url)
 * without checking its signature (the API server does that). *exp is the
 * claim in unix seconds, or 0 when the payload has none (kubectl then
 * treats the token as expired). AIQ_EINVAL when jwt is not a JWT or its
 * payload not a JSON object; *exp is 0 then. */
aiq_rc kube_jwt_exp(const char *jwt, time_t *exp, aiq_err *e);

/* What a refresh returns. Both owned; refresh_token NULL when the issuer
 * sent none (keep the old one). */
struct kube_oidc_tokens {
    char *id_token;
    char *refresh_token;
};

/* Frees t's strings (zeroed first) and empties it. */
void kube_oidc_tokens_clear(struct kube_oidc_tokens *t);

/* Refreshes: discovery, then the refresh_token grant with refresh_token
 * (o's settings borrowed), each request within timeout_ms (<= 0:
 * KUBE_OIDC_TIMEOUT_MS). Needs curl_global_init done (kube_client_create
 * does it). On AIQ_OK *out holds a printable-ASCII id_token. Errors name
 * o->field and the URL: AIQ_EIO / AIQ_ETIMEOUT (transport), AIQ_EAUTH
 * (the token endpoint refused: its error and error_description),
 * AIQ_EHTTP (discovery failed), AIQ_EINVAL (an answer without
 * token_endpoint or id_token, or an insecure URL), AIQ_ETOOBIG. *out is
 * empty after an error. */
aiq_rc kube_oidc_refresh(const struct kube_oidc *o, const char *refresh_token,
                         long timeout_ms, struct kube_oidc_tokens *out, aiq_err *e);

#endif
