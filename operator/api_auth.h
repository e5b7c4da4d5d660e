/* api_auth.h -- who may read /journal and /queue from another host
 * (--api-remote): the caller's Kubernetes bearer token, authenticated by
 * the API server (TokenReview), and the caller's permission for what it
 * asks, authorized by the API server (SubjectAccessReview), as
 * kube-rbac-proxy and the aggregated APIs do. So the cluster's own RBAC
 * decides; nothing is configured in the operator.
 *
 * The permissions asked (docs/operator.md "Endpoints"):
 *   /queue    list aijobs.aiq.dev in the namespace asked (all: cluster-wide)
 *   /journal  get aijobs/journal (aiq.dev) in the job's namespace
 *             (no job: cluster-wide)
 * Answers are cached per token and question for 30 s (allowed) or 5 s
 * (denied), so a busy client costs the API server two requests a while.
 * Used by the HTTP server's thread only, with its own API client. */
#ifndef AIQ_OPERATOR_API_AUTH_H
#define AIQ_OPERATOR_API_AUTH_H

#include <stddef.h>

#include "common/aiq_err.h"
#include "operator/kubeconfig.h"

typedef struct opauth opauth;

/* A checker talking to the API server cfg names (copied). NULL with e
 * set on failure. */
opauth *opauth_create(const struct kube_config *cfg, aiq_err *e);
void opauth_free(opauth *a);

/* Whether the holder of token may do verb on aijobs[/sub] in ns (NULL or
 * "": cluster-wide). Returns an HTTP status: 200 allowed, 401 no or an
 * invalid token, 403 denied, 503 the API server could not be asked; msg
 * (cap bytes) says why in a sentence naming the user and the permission. */
int opauth_check(opauth *a, const char *token, const char *verb, const char *sub,
                 const char *ns, char *msg, size_t cap);

/* Whether user (member of the ngroups groups) may do verb on aijobs[/sub]
 * in ns: one SubjectAccessReview, not cached (the aggregated API path,
 * api_aggr.h, where kube-apiserver vouches for the identity). Returns
 * 200, 403 or 503 with msg as opauth_check. */
int opauth_check_user(opauth *a, const char *user, const char *const *groups, size_t ngroups,
                      const char *verb, const char *sub, const char *ns, char *msg, size_t cap);

#endif
