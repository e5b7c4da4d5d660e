/* rbac.h -- the RBAC authorizer of the local API server, as a pure
 * function of the stored Role/ClusterRole/RoleBinding/ClusterRoleBinding
 * objects (json-c, no server state), so unit tests can drive it with
 * tables. Semantics follow the real rbac.authorization.k8s.io/v1
 * authorizer: a request is allowed when some binding whose subjects name
 * the user (User), one of its groups (Group) or its service account
 * (ServiceAccount = user "system:serviceaccount:NS:NAME") refers to a role
 * with a rule matching verb, API group, resource (or "resource/sub",
 * "*", "*\/sub") and resourceNames. ClusterRoleBindings apply everywhere;
 * RoleBindings only in their namespace (referring to a Role there or to a
 * ClusterRole). There are no deny rules. Aggregated ClusterRoles
 * (aggregationRule) and nonResourceURLs are not evaluated. */
#ifndef AIQ_RBAC_H
#define AIQ_RBAC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Who asks (borrowed strings). */
struct rbac_user {
    const char *name;
    const char *const *groups;
    size_t n_groups;
};

/* What is asked (borrowed strings; NULL or "" when absent). verb is the
 * Kubernetes verb (get list watch create update patch delete
 * deletecollection); group "" is the core group; ns is NULL for cluster
 * scope; name is NULL for collections and creates. */
struct rbac_attrs {
    const char *verb, *group, *resource, *sub, *name, *ns;
};

/* Returns the role named (kind "Role" in ns, or "ClusterRole" with ns
 * NULL) as a new reference, or NULL when absent. */
typedef json_object *(*rbac_role_fn)(void *ctx, const char *kind,
                                     const char *ns, const char *name);

/* True when one PolicyRule object (borrowed) covers a. */
bool rbac_rule_matches(json_object *rule, const struct rbac_attrs *a);

/* True when the subject object (borrowed) of a binding in binding_ns
 * (NULL for a ClusterRoleBinding) names u. */
bool rbac_subject_matches(json_object *subject, const struct rbac_user *u,
                          const char *binding_ns);

/* The decision: true when some binding in cluster_bindings (array of
 * ClusterRoleBindings, may be NULL) or ns_bindings (array of RoleBindings
 * of a->ns, may be NULL; ignored when a->ns is NULL) grants a to u.
 * Roles are fetched through get_role(ctx, ...). Everything borrowed. */
bool rbac_authorize(json_object *cluster_bindings, json_object *ns_bindings,
                    rbac_role_fn get_role, void *ctx,
                    const struct rbac_user *u, const struct rbac_attrs *a);

/* The real server's denial text into buf (cap bytes), e.g.
 * `aijobs.aiq.dev is forbidden: User "alice" cannot create resource
 * "aijobs" in API group "aiq.dev" in the namespace "team-nlp"`. */
void rbac_forbidden_message(const struct rbac_user *u,
                            const struct rbac_attrs *a, char *buf,
                            size_t cap);

#endif
