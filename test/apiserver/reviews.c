/* reviews.c -- TokenReview and (Self)SubjectAccessReview on the local API
 * server, answered as kube-apiserver does: a TokenReview says whether a
 * bearer token is one the server knows and whose it is; a
 * SubjectAccessReview asks the server's RBAC (authz.c) whether a user and
 * groups may do a verb on a resource. Both are create-only and need the
 * caller's own permission to create them. The operator uses them to let
 * remote callers read /journal and /queue (operator/api_auth.c). */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

#include "test/apiserver/apisrv_int.h"

/* status.user of a TokenReview for u. */
static json_object *rv_user(const struct apisrv__user *u) {
    json_object *o = json_object_new_object(), *g = json_object_new_array();
    json_object_object_add(o, "username", json_object_new_string(u->name));
    if (u->uid[0])
        json_object_object_add(o, "uid", json_object_new_string(u->uid));
    for (int i = 0; i < u->n_groups; i++)
        json_object_array_add(g, json_object_new_string(u->groups[i]));
    json_object_object_add(o, "groups", g);
    return o;
}

static void rv_token(apisrv *s, json_object *req, json_object *spec, struct apisrv__resp *w) {
    const char *tok = aiq_jstr(spec, "token");
    json_object *st = json_object_new_object();
    struct apisrv__user u;
    if (tok && *tok && apisrv__token_user(s, tok, &u)) {
        json_object_object_add(st, "authenticated", json_object_new_boolean(1));
        json_object_object_add(st, "user", rv_user(&u));
    } else {
        /* As kube-apiserver: not authenticated, no error text for an
         * unknown token (it does not say which authenticator refused). */
        json_object_object_add(st, "user", json_object_new_object());
    }
    json_object_object_add(req, "status", st);
    apisrv__resp_json(w, 201, req);
}

/* A SubjectAccessReview (self == NULL: spec.user and spec.groups), or a
 * SelfSubjectAccessReview (self: the caller, as kubectl auth can-i asks). */
static void rv_access(apisrv *s, json_object *req, json_object *spec,
                      const struct apisrv__user *self, struct apisrv__resp *w) {
    json_object *ra = NULL, *groups = NULL;
    struct apisrv__user u;
    memset(&u, 0, sizeof u);
    const char *user = self ? self->name : aiq_jstr(spec, "user");
    if (!json_object_object_get_ex(spec, "resourceAttributes", &ra) || !user || !*user) {
        apisrv__resp_err(w, 422, "Invalid",
                         "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: "
                         "Invalid value: \"\": at least one of user or group must be specified; "
                         "spec.resourceAttributes: Required value (nonResourceAttributes are not "
                         "served by the local server)");
        return;
    }
    snprintf(u.name, sizeof u.name, "%s", user);
    if (self)
        u = *self;
    else if (json_object_object_get_ex(spec, "groups", &groups) &&
        json_object_is_type(groups, json_type_array))
        for (size_t i = 0; i < json_object_array_length(groups) && u.n_groups < APISRV__MAX_GROUPS;
             i++) {
            const char *g = json_object_get_string(json_object_array_get_idx(groups, i));
            if (g)
                snprintf(u.groups[u.n_groups++], sizeof u.groups[0], "%s", g);
        }
    bool ok = apisrv__rbac_check(s, &u, aiq_jstr(ra, "verb"), aiq_jstr(ra, "group"),
                                 aiq_jstr(ra, "resource"), aiq_jstr(ra, "subresource"),
                                 aiq_jstr(ra, "name"), aiq_jstr(ra, "namespace"));
    json_object *st = json_object_new_object();
    json_object_object_add(st, "allowed", json_object_new_boolean(ok));
    if (ok)
        json_object_object_add(st, "reason", json_object_new_string("RBAC: allowed"));
    json_object_object_add(req, "status", st);
    apisrv__resp_json(w, 201, req);
}

/* See apisrv_int.h. */
bool apisrv__reviews(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w) {
    bool token = !strcmp(r->url, "/apis/authentication.k8s.io/v1/tokenreviews");
    bool access = !strcmp(r->url, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
    bool self = !strcmp(r->url, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");
    if (!token && !access && !self)
        return false;
    if (strcmp(r->method, "POST") != 0) {
        apisrv__resp_err(w, 405, "MethodNotAllowed", "the server does not allow this method on "
                                                     "the requested resource");
        return true;
    }
    const char *group = token ? "authentication.k8s.io" : "authorization.k8s.io";
    const char *res = token ? "tokenreviews" : self ? "selfsubjectaccessreviews"
                                                    : "subjectaccessreviews";
    /* Anyone may ask about themselves (system:basic-user grants it). */
    if (!self && !apisrv__rbac_check(s, &r->user, "create", group, res, NULL, NULL, NULL)) {
        apisrv__resp_err(w, 403, "Forbidden",
                         "%s.%s is forbidden: User \"%s\" cannot create resource \"%s\" in API "
                         "group \"%s\" at the cluster scope",
                         res, group, r->user.name, res, group);
        return true;
    }
    json_object *req = r->body ? json_tokener_parse(r->body) : NULL, *spec = NULL;
    if (!req || !json_object_object_get_ex(req, "spec", &spec) ||
        !json_object_is_type(spec, json_type_object)) {
        apisrv__resp_err(w, 400, "BadRequest", "the body of a %s must be a JSON object with a "
                                               "spec",
                         token ? "TokenReview" : self ? "SelfSubjectAccessReview"
                                                     : "SubjectAccessReview");
        json_object_put(req);
        return true;
    }
    if (token)
        rv_token(s, req, spec, w);
    else
        rv_access(s, req, spec, self ? &r->user : NULL, w);
    json_object_put(req);
    return true;
}
