/* authz.c -- authorization of resource requests on the local API server
 * when it runs with --authz=rbac: maps the HTTP request to Kubernetes
 * request attributes (verb from method, watch and name; resource,
 * subresource, API group, namespace, name), reads the stored
 * ClusterRoleBindings and the namespace's RoleBindings, and asks the RBAC
 * evaluator in rbac.c. system:masters bypasses, as on a real cluster.
 * Lock held. */
#include "test/apiserver/apisrv_int.h"
#include "test/apiserver/rbac.h"

#include <stdio.h>
#include <string.h>

#define AUTHZ_KEY_CR "rbac.authorization.k8s.io/clusterroles"
#define AUTHZ_KEY_ROLE "rbac.authorization.k8s.io/roles"
#define AUTHZ_KEY_CRB "rbac.authorization.k8s.io/clusterrolebindings"
#define AUTHZ_KEY_RB "rbac.authorization.k8s.io/rolebindings"

static int authz_row(void *u, const char *key, const char *ns, const char *name,
                     const char *json) {
    json_object *arr = u, *o = apisrv__parse(json);
    (void)key; (void)ns; (void)name;
    if (o) json_object_array_add(arr, o);
    return 0;
}

static json_object *authz_role(void *ctx, const char *kind, const char *ns, const char *name) {
    apisrv *s = ctx;
    if (!strcmp(kind, "Role")) return apisrv__store_get(s, AUTHZ_KEY_ROLE, ns, name);
    return apisrv__store_get(s, AUTHZ_KEY_CR, NULL, name);
}

/* The Kubernetes verb of a request. */
static const char *authz_verb(struct apisrv__req *r, const struct apisrv__target *tg) {
    const char *m = r->method, *wq;
    if (!strcmp(m, "GET") || !strcmp(m, "HEAD")) {
        wq = apisrv__q(r, "watch");
        if (wq && (!strcmp(wq, "true") || !strcmp(wq, "1"))) return "watch";
        return tg->name ? "get" : "list";
    }
    if (!strcmp(m, "POST")) return "create";
    if (!strcmp(m, "PUT")) return "update";
    if (!strcmp(m, "PATCH")) return "patch";
    if (!strcmp(m, "DELETE")) return tg->name ? "delete" : "deletecollection";
    return "unknown";
}

/* See apisrv_int.h. */
bool apisrv__rbac_check(apisrv *s, const struct apisrv__user *user, const char *verb,
                        const char *group, const char *resource, const char *sub,
                        const char *name, const char *ns) {
    const char *groups[APISRV__MAX_GROUPS];
    struct rbac_user u = {user->name, groups, (size_t)user->n_groups};
    struct rbac_attrs a = {verb ? verb : "", group ? group : "", resource ? resource : "",
                           sub && *sub ? sub : NULL, name && *name ? name : NULL,
                           ns && *ns ? ns : NULL};
    json_object *crbs, *rbs = NULL;
    if (!s->authz_rbac || apisrv__user_in(user, "system:masters")) return true;
    for (int i = 0; i < user->n_groups; i++) groups[i] = user->groups[i];
    crbs = json_object_new_array();
    apisrv__store_scan(s, AUTHZ_KEY_CRB, NULL, NULL, NULL, authz_row, crbs);
    if (a.ns) {
        rbs = json_object_new_array();
        apisrv__store_scan(s, AUTHZ_KEY_RB, a.ns, NULL, NULL, authz_row, rbs);
    }
    bool ok = rbac_authorize(crbs, rbs, authz_role, s, &u, &a);
    json_object_put(rbs);
    json_object_put(crbs);
    return ok;
}

/* See apisrv_int.h. */
bool apisrv__rbac_allowed(apisrv *s, struct apisrv__req *r,
                          const struct apisrv__target *tg, struct apisrv__resp *w) {
    const char *groups[APISRV__MAX_GROUPS];
    struct rbac_user u = {r->user.name, groups, (size_t)r->user.n_groups};
    struct rbac_attrs a = {authz_verb(r, tg), tg->t->group, tg->t->resource, tg->sub,
                           tg->name, tg->t->namespaced ? tg->ns : NULL};
    json_object *crbs, *rbs = NULL;
    bool ok;
    char msg[1024];
    if (!s->authz_rbac || apisrv__user_in(&r->user, "system:masters")) return true;
    for (int i = 0; i < r->user.n_groups; i++) groups[i] = r->user.groups[i];
    crbs = json_object_new_array();
    apisrv__store_scan(s, AUTHZ_KEY_CRB, NULL, NULL, NULL, authz_row, crbs);
    if (a.ns) {
        rbs = json_object_new_array();
        apisrv__store_scan(s, AUTHZ_KEY_RB, a.ns, NULL, NULL, authz_row, rbs);
    }
    ok = rbac_authorize(crbs, rbs, authz_role, s, &u, &a);
    json_object_put(rbs);
    json_object_put(crbs);
    if (ok) return true;
    rbac_forbidden_message(&u, &a, msg, sizeof msg);
    {
        struct apisrv__st st;
        apisrv__st_init(&st);
        apisrv__st_set(&st, 403, "Forbidden", "%s", msg);
        snprintf(st.name, sizeof st.name, "%s", tg->name ? tg->name : "");
        snprintf(st.group, sizeof st.group, "%s", tg->t->group);
        snprintf(st.kind, sizeof st.kind, "%s", tg->t->resource);
        apisrv__resp_status(w, &st);
        apisrv__st_deinit(&st);
    }
    return false;
}
