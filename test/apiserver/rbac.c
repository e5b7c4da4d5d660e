/* rbac.c -- the RBAC decision of the local API server (see rbac.h): rule
 * matching (verbs, apiGroups, resources with subresources and the "*" and
 * "*\/sub" wildcards, resourceNames), subject matching (User, Group,
 * ServiceAccount) and the walk over ClusterRoleBindings and the
 * namespace's RoleBindings. No server state: the caller hands in the
 * binding lists and a role lookup. */
#include "test/apiserver/rbac.h"

#include <stdio.h>
#include <string.h>

#include "common/json.h"

/* Longest "resource/subresource" considered. */
#define RBAC_MAX_RES 256

/* True when the array o[k] holds want, or "*" when star is set. */
static bool rbac_list_has(json_object *o, const char *k, const char *want, bool star) {
    json_object *arr;
    if (!o || !json_object_object_get_ex(o, k, &arr) || !json_object_is_type(arr, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *s;
        if (!json_object_is_type(e, json_type_string)) continue;
        s = json_object_get_string(e);
        if (star && !strcmp(s, "*")) return true;
        if (want && !strcmp(s, want)) return true;
    }
    return false;
}

static bool rbac_resource_matches(json_object *rule, const struct rbac_attrs *a) {
    json_object *arr;
    char combined[RBAC_MAX_RES];
    bool has_sub = a->sub && a->sub[0];
    if (!a->resource || !a->resource[0]) return false;
    if (has_sub) snprintf(combined, sizeof combined, "%s/%s", a->resource, a->sub);
    else snprintf(combined, sizeof combined, "%s", a->resource);
    if (!json_object_object_get_ex(rule, "resources", &arr) ||
        !json_object_is_type(arr, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *r;
        if (!json_object_is_type(e, json_type_string)) continue;
        r = json_object_get_string(e);
        if (!strcmp(r, "*") || !strcmp(r, combined)) return true;
        /* "*\/status" covers the status subresource of every resource */
        if (has_sub && r[0] == '*' && r[1] == '/' && !strcmp(r + 2, a->sub)) return true;
    }
    return false;
}

static bool rbac_name_matches(json_object *rule, const struct rbac_attrs *a) {
    json_object *arr;
    if (!json_object_object_get_ex(rule, "resourceNames", &arr) ||
        !json_object_is_type(arr, json_type_array) || json_object_array_length(arr) == 0)
        return true;
    /* a rule limited to names never covers list, create or a collection */
    if (!a->name || !a->name[0]) return false;
    return rbac_list_has(rule, "resourceNames", a->name, false);
}

/* See rbac.h. */
bool rbac_rule_matches(json_object *rule, const struct rbac_attrs *a) {
    if (!rule || !json_object_is_type(rule, json_type_object) || !a->verb) return false;
    return rbac_list_has(rule, "verbs", a->verb, true) &&
           rbac_list_has(rule, "apiGroups", a->group ? a->group : "", true) &&
           rbac_resource_matches(rule, a) && rbac_name_matches(rule, a);
}

/* See rbac.h. */
bool rbac_subject_matches(json_object *subject, const struct rbac_user *u,
                          const char *binding_ns) {
    const char *kind = aiq_jstr(subject, "kind"), *name = aiq_jstr(subject, "name");
    if (!kind || !name || !u->name) return false;
    if (!strcmp(kind, "User")) return !strcmp(name, u->name);
    if (!strcmp(kind, "Group")) {
        for (size_t i = 0; i < u->n_groups; i++)
            if (u->groups[i] && !strcmp(u->groups[i], name)) return true;
        return false;
    }
    if (!strcmp(kind, "ServiceAccount")) {
        const char *sns = aiq_jstr(subject, "namespace");
        char want[600];
        if (!sns || !sns[0]) sns = binding_ns;
        if (!sns) return false;
        snprintf(want, sizeof want, "system:serviceaccount:%s:%s", sns, name);
        return !strcmp(want, u->name);
    }
    return false;
}

/* True when some subject of binding b names u and its role has a rule
 * covering a. ns is b's namespace (NULL for a ClusterRoleBinding). */
static bool rbac_binding_grants(json_object *b, const char *ns, rbac_role_fn get_role,
                                void *ctx, const struct rbac_user *u,
                                const struct rbac_attrs *a) {
    json_object *subjects, *ref, *role, *rules;
    const char *kind, *name;
    bool subject_ok = false, granted = false;
    if (!json_object_object_get_ex(b, "subjects", &subjects) ||
        !json_object_is_type(subjects, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(subjects) && !subject_ok; i++)
        subject_ok = rbac_subject_matches(json_object_array_get_idx(subjects, i), u, ns);
    if (!subject_ok || !json_object_object_get_ex(b, "roleRef", &ref)) return false;
    kind = aiq_jstr(ref, "kind");
    name = aiq_jstr(ref, "name");
    if (!kind || !name) return false;
    if (!strcmp(kind, "Role")) {
        if (!ns) return false;   /* a ClusterRoleBinding cannot refer to a Role */
        role = get_role(ctx, "Role", ns, name);
    } else if (!strcmp(kind, "ClusterRole")) {
        role = get_role(ctx, "ClusterRole", NULL, name);
    } else {
        return false;
    }
    if (!role) return false;
    if (json_object_object_get_ex(role, "rules", &rules) &&
        json_object_is_type(rules, json_type_array))
        for (size_t i = 0; i < json_object_array_length(rules) && !granted; i++)
            granted = rbac_rule_matches(json_object_array_get_idx(rules, i), a);
    json_object_put(role);
    return granted;
}

/* See rbac.h. */
bool rbac_authorize(json_object *cluster_bindings, json_object *ns_bindings,
                    rbac_role_fn get_role, void *ctx,
                    const struct rbac_user *u, const struct rbac_attrs *a) {
    if (cluster_bindings && json_object_is_type(cluster_bindings, json_type_array))
        for (size_t i = 0; i < json_object_array_length(cluster_bindings); i++)
            if (rbac_binding_grants(json_object_array_get_idx(cluster_bindings, i), NULL,
                                    get_role, ctx, u, a))
                return true;
    if (a->ns && a->ns[0] && ns_bindings && json_object_is_type(ns_bindings, json_type_array))
        for (size_t i = 0; i < json_object_array_length(ns_bindings); i++) {
            json_object *b = json_object_array_get_idx(ns_bindings, i), *md;
            const char *bns = NULL;
            if (json_object_object_get_ex(b, "metadata", &md)) bns = aiq_jstr(md, "namespace");
            /* only the request's namespace counts, whatever the caller passed */
            if (bns && strcmp(bns, a->ns)) continue;
            if (rbac_binding_grants(b, a->ns, get_role, ctx, u, a)) return true;
        }
    return false;
}

/* See rbac.h. */
void rbac_forbidden_message(const struct rbac_user *u, const struct rbac_attrs *a,
                            char *buf, size_t cap) {
    char qual[300], res[RBAC_MAX_RES], named[320] = "", scope[320];
    const char *g = a->group ? a->group : "", *r = a->resource ? a->resource : "";
    if (g[0]) snprintf(qual, sizeof qual, "%s.%s", r, g);
    else snprintf(qual, sizeof qual, "%s", r);
    if (a->sub && a->sub[0]) snprintf(res, sizeof res, "%s/%s", r, a->sub);
    else snprintf(res, sizeof res, "%s", r);
    if (a->name && a->name[0]) snprintf(named, sizeof named, " \"%.253s\"", a->name);
    if (a->ns && a->ns[0]) snprintf(scope, sizeof scope, "in the namespace \"%.253s\"", a->ns);
    else snprintf(scope, sizeof scope, "at the cluster scope");
    snprintf(buf, cap, "%s%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" %s",
             qual, named, u->name ? u->name : "", a->verb ? a->verb : "", res, g, scope);
}
