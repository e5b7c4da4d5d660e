/* admission.c -- ValidatingAdmissionPolicy enforcement on the local API
 * server. For each stored ValidatingAdmissionPolicyBinding whose
 * validationActions include Deny, the policy it names is applied to a
 * CREATE or UPDATE when its matchConstraints.resourceRules (and the
 * binding's matchResources.resourceRules, when given) match the request;
 * matchConditions must all hold; then each validation expression is
 * evaluated by the CEL subset in cel.c with `object`, `oldObject` and
 * `request` (operation, name, namespace, userInfo, kind, resource,
 * subResource, dryRun) bound. The first failure denies the request with
 * the real server's wording. namespaceSelector, objectSelector,
 * paramKind/params, variables, messageExpression and auditAnnotations are
 * not evaluated (a policy using variables or params fails closed through
 * its failurePolicy, as an unknown identifier is an error). Lock held. */
#include "test/apiserver/apisrv_int.h"
#include "common/json.h"
#include "test/apiserver/cel.h"

#include <stdio.h>
#include <string.h>

#define ADM_KEY_VAP "admissionregistration.k8s.io/validatingadmissionpolicies"
#define ADM_KEY_VAPB "admissionregistration.k8s.io/validatingadmissionpolicybindings"

static int adm_row(void *u, const char *key, const char *ns, const char *name,
                   const char *json) {
    json_object *arr = u, *o = apisrv__parse(json);
    (void)key; (void)ns; (void)name;
    if (o) json_object_array_add(arr, o);
    return 0;
}

/* True when array o[k] holds want or "*". */
static bool adm_has(json_object *o, const char *k, const char *want) {
    json_object *arr = aiq_jget(o, k);
    if (!arr || !json_object_is_type(arr, json_type_array)) return false;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        const char *e = json_object_get_string(json_object_array_get_idx(arr, i));
        if (e && (!strcmp(e, "*") || !strcmp(e, want))) return true;
    }
    return false;
}

/* A NamedRuleWithOperations: operations, apiGroups, apiVersions and
 * resources ("res", "res/sub", "*", "*\/sub", "res/ *" without the space). */
static bool adm_rule_matches(json_object *rule, const struct apisrv__type *t,
                             const char *op, const char *sub) {
    json_object *res;
    char combined[256], any_sub[160], res_any[160];
    if (!adm_has(rule, "operations", op) || !adm_has(rule, "apiGroups", t->group) ||
        !adm_has(rule, "apiVersions", t->version))
        return false;
    if (sub && sub[0]) snprintf(combined, sizeof combined, "%s/%s", t->resource, sub);
    else snprintf(combined, sizeof combined, "%s", t->resource);
    snprintf(any_sub, sizeof any_sub, "*/%s", sub ? sub : "");
    snprintf(res_any, sizeof res_any, "%s/*", t->resource);
    res = aiq_jget(rule, "resources");
    if (!res || !json_object_is_type(res, json_type_array)) return false;
    for (size_t i = 0; i < json_object_array_length(res); i++) {
        const char *e = json_object_get_string(json_object_array_get_idx(res, i));
        if (!e) continue;
        if (!strcmp(e, combined)) return true;
        if (!sub || !sub[0]) {
            if (!strcmp(e, "*")) return true;
        } else if (!strcmp(e, "*/*") || !strcmp(e, any_sub) || !strcmp(e, res_any)) {
            return true;
        }
    }
    return false;
}

/* True when some rule of m.resourceRules matches and none of
 * m.excludeResourceRules does. m NULL: true when absent_ok. */
static bool adm_match_resources(json_object *m, const struct apisrv__type *t, const char *op,
                                const char *sub, bool absent_ok) {
    json_object *rules = aiq_jget(m, "resourceRules"), *ex = aiq_jget(m, "excludeResourceRules");
    bool hit = false;
    if (!rules || !json_object_is_type(rules, json_type_array)) return absent_ok;
    for (size_t i = 0; i < json_object_array_length(rules) && !hit; i++)
        hit = adm_rule_matches(json_object_array_get_idx(rules, i), t, op, sub);
    if (hit && ex && json_object_is_type(ex, json_type_array))
        for (size_t i = 0; i < json_object_array_length(ex); i++)
            if (adm_rule_matches(json_object_array_get_idx(ex, i), t, op, sub)) return false;
    return hit;
}

/* The CEL bindings of one request (new object). */
static json_object *adm_vars(const struct apisrv__type *t, const char *op, const char *ns,
                             const char *name, const char *sub, json_object *obj,
                             json_object *old, const struct apisrv__user *u, bool dry_run) {
    json_object *v = json_object_new_object(), *req = json_object_new_object();
    json_object *ui = json_object_new_object(), *groups = json_object_new_array();
    json_object *kind = json_object_new_object(), *res = json_object_new_object();
    for (int i = 0; i < u->n_groups; i++)
        json_object_array_add(groups, json_object_new_string(u->groups[i]));
    json_object_object_add(ui, "username", json_object_new_string(u->name));
    json_object_object_add(ui, "uid", json_object_new_string(u->uid));
    json_object_object_add(ui, "groups", groups);
    json_object_object_add(kind, "group", json_object_new_string(t->group));
    json_object_object_add(kind, "version", json_object_new_string(t->version));
    json_object_object_add(kind, "kind", json_object_new_string(t->kind));
    json_object_object_add(res, "group", json_object_new_string(t->group));
    json_object_object_add(res, "version", json_object_new_string(t->version));
    json_object_object_add(res, "resource", json_object_new_string(t->resource));
    json_object_object_add(req, "operation", json_object_new_string(op));
    json_object_object_add(req, "name", json_object_new_string(name ? name : ""));
    json_object_object_add(req, "namespace", json_object_new_string(ns ? ns : ""));
    json_object_object_add(req, "subResource", json_object_new_string(sub ? sub : ""));
    json_object_object_add(req, "dryRun", json_object_new_boolean(dry_run));
    json_object_object_add(req, "userInfo", ui);
    json_object_object_add(req, "kind", kind);
    json_object_object_add(req, "resource", res);
    json_object_object_add(v, "request", req);
    json_object_object_add(v, "object", obj ? json_object_get(obj) : NULL);
    json_object_object_add(v, "oldObject", old ? json_object_get(old) : NULL);
    return v;
}

static int adm_code(const char *reason) {
    if (!strcmp(reason, "Forbidden")) return 403;
    if (!strcmp(reason, "Unauthorized")) return 401;
    if (!strcmp(reason, "RequestEntityTooLarge")) return 413;
    return 422;   /* Invalid, the default */
}

/* Fills st with a denial by policy/binding: `aijobs.aiq.dev "x" is
 * forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied
 * request: why`. Returns -1. */
static int adm_deny(struct apisrv__st *st, const struct apisrv__type *t, const char *name,
                    const char *policy, const char *binding, const char *reason,
                    const char *why) {
    char q[256], msg[900];
    json_object *cause = json_object_new_object();
    if (!reason || !reason[0]) reason = "Invalid";
    apisrv__qualified(t, q, sizeof q);
    snprintf(msg, sizeof msg, "ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s",
             policy, binding, why);
    apisrv__st_set(st, adm_code(reason), reason, "%s \"%s\" is forbidden: %s", q, name, msg);
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->group, sizeof st->group, "%s", t->group);
    snprintf(st->kind, sizeof st->kind, "%s", t->resource);
    json_object_object_add(cause, "message", json_object_new_string(msg));
    if (!st->causes) st->causes = json_object_new_array();
    json_object_array_add(st->causes, cause);
    return -1;
}

/* The requester, for the `authorizer` of the expressions. */
struct adm_authz {
    apisrv *s;
    const struct apisrv__user *u;
};

static bool adm_authorize(void *ctx, json_object *req) {
    const struct adm_authz *a = ctx;
    return apisrv__rbac_check(a->s, a->u, aiq_jstr(req, "verb"), aiq_jstr(req, "group"),
                              aiq_jstr(req, "resource"), aiq_jstr(req, "subresource"),
                              aiq_jstr(req, "name"), aiq_jstr(req, "namespace"));
}

/* Evaluates one policy for one binding; 0 admit, -1 deny (st filled). */
static int adm_policy(json_object *pol, const char *pname, const char *bname,
                      const struct apisrv__type *t, const char *name, json_object *vars,
                      struct adm_authz *az, struct apisrv__st *st) {
    json_object *spec = aiq_jget(pol, "spec"), *conds, *vals;
    const char *fp = aiq_jstr(spec, "failurePolicy");
    bool fail_closed = !fp || strcmp(fp, "Ignore");
    char msg[300], why[700];
    conds = aiq_jget(spec, "matchConditions");
    for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *e = aiq_jstr(c, "expression");
        enum cel_result r = cel_eval_bool_vars_authz(e, vars, adm_authorize, az, msg, sizeof msg);
        if (r == CEL_FALSE) return 0;   /* the policy does not apply */
        if (r != CEL_TRUE) {
            if (!fail_closed) return 0;
            snprintf(why, sizeof why, "matchCondition '%s' resulted in error: %s",
                     aiq_jstr(c, "name") ? aiq_jstr(c, "name") : "", msg);
            return adm_deny(st, t, name, pname, bname, "Forbidden", why);
        }
    }
    vals = aiq_jget(spec, "validations");
    for (size_t i = 0; vals && json_object_is_type(vals, json_type_array) &&
                       i < json_object_array_length(vals); i++) {
        json_object *v = json_object_array_get_idx(vals, i);
        const char *e = aiq_jstr(v, "expression"), *m = aiq_jstr(v, "message");
        const char *me = aiq_jstr(v, "messageExpression");
        char mexp[512];
        enum cel_result r = cel_eval_bool_vars_authz(e, vars, adm_authorize, az, msg, sizeof msg);
        if (r == CEL_TRUE) continue;
        if (r == CEL_FALSE) {
            /* messageExpression wins over message when it gives a
             * non-empty string, as on a real server */
            if (me && cel_eval_string_vars(me, vars, mexp, sizeof mexp, msg, sizeof msg) == CEL_TRUE &&
                mexp[0])
                snprintf(why, sizeof why, "%s", mexp);
            else if (m && m[0]) snprintf(why, sizeof why, "%s", m);
            else snprintf(why, sizeof why, "failed expression: %.500s", e ? e : "");
            return adm_deny(st, t, name, pname, bname, aiq_jstr(v, "reason"), why);
        }
        if (!fail_closed) continue;
        snprintf(why, sizeof why, "expression '%.300s' resulted in error: %s", e ? e : "", msg);
        return adm_deny(st, t, name, pname, bname, aiq_jstr(v, "reason"), why);
    }
    return 0;
}

/* See apisrv_int.h. */
int apisrv__admit(apisrv *s, const struct apisrv__type *t, const char *op,
                  const char *ns, const char *name, const char *sub,
                  json_object *obj, json_object *old,
                  const struct apisrv__user *u, bool dry_run,
                  struct apisrv__st *st) {
    json_object *bindings, *vars = NULL;
    int rc = 0;
    /* the admission objects themselves are never subject to policies */
    if (!strncmp(t->key, "admissionregistration.k8s.io/", 29)) return 0;
    bindings = json_object_new_array();
    apisrv__store_scan(s, ADM_KEY_VAPB, NULL, NULL, NULL, adm_row, bindings);
    for (size_t i = 0; rc == 0 && i < json_object_array_length(bindings); i++) {
        json_object *b = json_object_array_get_idx(bindings, i), *bspec = aiq_jget(b, "spec");
        const char *pname = aiq_jstr(bspec, "policyName");
        const char *bname = aiq_jstr(aiq_jget(b, "metadata"), "name");
        json_object *pol;
        if (!pname || !bname || !adm_has(bspec, "validationActions", "Deny")) continue;
        if (!adm_match_resources(aiq_jget(bspec, "matchResources"), t, op, sub, true)) continue;
        pol = apisrv__store_get(s, ADM_KEY_VAP, NULL, pname);
        if (!pol) continue;   /* a binding to a missing policy is ignored */
        if (adm_match_resources(aiq_jget(aiq_jget(pol, "spec"), "matchConstraints"), t, op, sub,
                                false)) {
            if (!vars) vars = adm_vars(t, op, ns, name, sub, obj, old, u, dry_run);
            struct adm_authz az = {s, u};
            rc = adm_policy(pol, pname, bname, t, name, vars, &az, st);
        }
        json_object_put(pol);
    }
    json_object_put(vars);
    json_object_put(bindings);
    return rc;
}
