/* types.c -- the registry of served resources: the built-in kinds
 * (namespaces, nodes, pods, events, leases, customresourcedefinitions) and
 * the kinds that stored CRDs add, with their discovery names (short names,
 * categories), scope, schema and printer columns. Lock held throughout. */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

struct types_builtin {
    const char *group, *version, *resource, *kind, *singular;
    bool namespaced, has_status;
    const char *shorts[3];
    const char *cats[2];
};

static const struct types_builtin types_builtins[] = {
    {"", "v1", "namespaces", "Namespace", "namespace", false, true, {"ns"}, {NULL}},
    {"", "v1", "nodes", "Node", "node", false, true, {"no"}, {NULL}},
    {"", "v1", "pods", "Pod", "pod", true, true, {"po"}, {"all"}},
    {"", "v1", "events", "Event", "event", true, false, {"ev"}, {NULL}},
    {"coordination.k8s.io", "v1", "leases", "Lease", "lease", true, false, {NULL}, {NULL}},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
     "CustomResourceDefinition", "customresourcedefinition", false, true,
     {"crd", "crds"}, {"api-extensions"}},
    /* stored and served, no behaviour: lets `kubectl apply -k crds/` (RBAC,
     * the operator's Deployment, ...) succeed against the local cluster */
    {"", "v1", "serviceaccounts", "ServiceAccount", "serviceaccount", true, false, {"sa"}, {NULL}},
    {"", "v1", "configmaps", "ConfigMap", "configmap", true, false, {"cm"}, {NULL}},
    {"", "v1", "secrets", "Secret", "secret", true, false, {NULL}, {NULL}},
    {"", "v1", "services", "Service", "service", true, true, {"svc"}, {"all"}},
    {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", "persistentvolumeclaim",
     true, true, {"pvc"}, {NULL}},
    {"apps", "v1", "deployments", "Deployment", "deployment", true, true, {"deploy"}, {"all"}},
    {"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", "clusterrole", false, false, {NULL}, {NULL}},
    {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
     "clusterrolebinding", false, false, {NULL}, {NULL}},
    {"rbac.authorization.k8s.io", "v1", "roles", "Role", "role", true, false, {NULL}, {NULL}},
    {"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", "rolebinding", true, false, {NULL}, {NULL}},
    {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
     "ValidatingAdmissionPolicy", "validatingadmissionpolicy", false, true, {NULL}, {NULL}},
    {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
     "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybinding", false, false, {NULL}, {NULL}},
    /* APIServices route aggregated APIs (aggregator.c) to the ready
     * addresses of their Service's EndpointSlices, written by hand or by
     * a test: no endpoint controller runs here */
    {"apiregistration.k8s.io", "v1", "apiservices", "APIService", "apiservice", false, true, {NULL}, {"api-extensions"}},
    {"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", "endpointslice", true, false, {NULL}, {NULL}},
    {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", "priorityclass", false, false, {"pc"}, {NULL}},
};

static void types_free_one(struct apisrv__type *t) {
    if (!t) return;
    if (t->schema) json_object_put(t->schema);
    if (t->columns) json_object_put(t->columns);
    free(t);
}

static aiq_rc types_add(apisrv *s, struct apisrv__type *t) {
    snprintf(t->key, sizeof t->key, "%s/%s", t->group, t->resource);
    if (s->n_types == s->cap_types) {
        int nc = s->cap_types ? s->cap_types * 2 : 16;
        struct apisrv__type **nt = realloc(s->types, (size_t)nc * sizeof *nt);
        if (!nt) {
            types_free_one(t);
            return AIQ_ENOMEM;
        }
        s->types = nt;
        s->cap_types = nc;
    }
    s->types[s->n_types++] = t;
    return AIQ_OK;
}

/* Registers the built-in kinds. */
aiq_rc apisrv__types_init(apisrv *s) {
    for (size_t i = 0; i < sizeof types_builtins / sizeof types_builtins[0]; i++) {
        const struct types_builtin *b = &types_builtins[i];
        struct apisrv__type *t = calloc(1, sizeof *t);
        if (!t) return AIQ_ENOMEM;
        snprintf(t->group, sizeof t->group, "%s", b->group);
        snprintf(t->version, sizeof t->version, "%s", b->version);
        snprintf(t->resource, sizeof t->resource, "%s", b->resource);
        snprintf(t->kind, sizeof t->kind, "%s", b->kind);
        snprintf(t->singular, sizeof t->singular, "%s", b->singular);
        t->namespaced = b->namespaced;
        t->has_status = b->has_status;
        for (int k = 0; k < 3 && b->shorts[k]; k++)
            snprintf(t->short_names[t->n_short++], 32, "%s", b->shorts[k]);
        for (int k = 0; k < 2 && b->cats[k]; k++)
            snprintf(t->categories[t->n_cat++], 32, "%s", b->cats[k]);
        if (types_add(s, t) != AIQ_OK) return AIQ_ENOMEM;
    }
    return AIQ_OK;
}

/* Frees every registered type. */
void apisrv__types_free(apisrv *s) {
    for (int i = 0; i < s->n_types; i++) types_free_one(s->types[i]);
    free(s->types);
    s->types = NULL;
    s->n_types = s->cap_types = 0;
}

/* The type serving group/version/resource, or NULL. */
const struct apisrv__type *apisrv__type_find(apisrv *s, const char *group,
                                             const char *version,
                                             const char *resource) {
    for (int i = 0; i < s->n_types; i++) {
        const struct apisrv__type *t = s->types[i];
        if (!strcmp(t->group, group) && !strcmp(t->version, version) &&
            !strcmp(t->resource, resource))
            return t;
    }
    return NULL;
}

/* The first type whose plural is resource (or "plural.group"), or NULL. */
const struct apisrv__type *apisrv__type_by_resource(apisrv *s,
                                                    const char *resource) {
    const char *dot = strchr(resource, '.');
    size_t n = dot ? (size_t)(dot - resource) : strlen(resource);
    for (int i = 0; i < s->n_types; i++) {
        const struct apisrv__type *t = s->types[i];
        if (strlen(t->resource) == n && !strncmp(t->resource, resource, n) &&
            (!dot || !strcmp(t->group, dot + 1)))
            return t;
    }
    return NULL;
}

/* The first type with storage key, or NULL. */
const struct apisrv__type *apisrv__type_by_key(apisrv *s, const char *key) {
    for (int i = 0; i < s->n_types; i++)
        if (!strcmp(s->types[i]->key, key)) return s->types[i];
    return NULL;
}

static void types_remove_group_resource(apisrv *s, const char *group,
                                        const char *resource) {
    int j = 0;
    for (int i = 0; i < s->n_types; i++) {
        struct apisrv__type *t = s->types[i];
        if (t->custom && !strcmp(t->group, group) && !strcmp(t->resource, resource))
            types_free_one(t);
        else
            s->types[j++] = t;
    }
    s->n_types = j;
}

/* Registers each served version of crd (borrowed), replacing any earlier
 * registration of the same group/resource; with remove, only unregisters. */
void apisrv__types_sync_crd(apisrv *s, json_object *crd, bool remove) {
    json_object *spec, *names, *versions, *arr;
    const char *group, *plural, *kind;
    if (!json_object_object_get_ex(crd, "spec", &spec) ||
        !json_object_object_get_ex(spec, "names", &names))
        return;
    group = aiq_jstr(spec, "group");
    plural = aiq_jstr(names, "plural");
    kind = aiq_jstr(names, "kind");
    if (!group || !plural || !kind) return;
    /* a kind served already keeps the start of its history */
    long long since = s->rv;
    for (int i = 0; i < s->n_types; i++)
        if (!strcmp(s->types[i]->group, group) && !strcmp(s->types[i]->resource, plural))
            since = s->types[i]->since_rv;
    types_remove_group_resource(s, group, plural);
    if (remove || !json_object_object_get_ex(spec, "versions", &versions) ||
        !json_object_is_type(versions, json_type_array))
        return;
    bool cluster = aiq_jstr(spec, "scope") && !strcmp(aiq_jstr(spec, "scope"), "Cluster");
    for (size_t i = 0; i < json_object_array_length(versions); i++) {
        json_object *v = json_object_array_get_idx(versions, i), *served, *x;
        if (json_object_object_get_ex(v, "served", &served) && !json_object_get_boolean(served))
            continue;
        if (!aiq_jstr(v, "name")) continue;
        struct apisrv__type *t = calloc(1, sizeof *t);
        if (!t) return;
        snprintf(t->group, sizeof t->group, "%s", group);
        snprintf(t->version, sizeof t->version, "%s", aiq_jstr(v, "name"));
        snprintf(t->resource, sizeof t->resource, "%s", plural);
        snprintf(t->kind, sizeof t->kind, "%s", kind);
        const char *sing = aiq_jstr(names, "singular");
        if (sing) {
            snprintf(t->singular, sizeof t->singular, "%s", sing);
        } else {
            size_t k;
            for (k = 0; kind[k] && k + 1 < sizeof t->singular; k++)
                t->singular[k] = (char)((kind[k] >= 'A' && kind[k] <= 'Z') ? kind[k] + 32 : kind[k]);
            t->singular[k] = 0;
        }
        t->namespaced = !cluster;
        t->custom = true;
        t->since_rv = since;
        if (json_object_object_get_ex(v, "subresources", &x) &&
            json_object_object_get_ex(x, "status", NULL))
            t->has_status = true;
        if (json_object_object_get_ex(names, "shortNames", &arr) &&
            json_object_is_type(arr, json_type_array))
            for (size_t k = 0; k < json_object_array_length(arr) && t->n_short < 4; k++)
                snprintf(t->short_names[t->n_short++], 32, "%s",
                         json_object_get_string(json_object_array_get_idx(arr, k)));
        if (json_object_object_get_ex(names, "categories", &arr) &&
            json_object_is_type(arr, json_type_array))
            for (size_t k = 0; k < json_object_array_length(arr) && t->n_cat < 4; k++)
                snprintf(t->categories[t->n_cat++], 32, "%s",
                         json_object_get_string(json_object_array_get_idx(arr, k)));
        if (json_object_object_get_ex(v, "schema", &x) &&
            json_object_object_get_ex(x, "openAPIV3Schema", &x))
            t->schema = json_object_get(x);
        if (json_object_object_get_ex(v, "additionalPrinterColumns", &x) &&
            json_object_is_type(x, json_type_array))
            t->columns = json_object_get(x);
        if (types_add(s, t) != AIQ_OK) return;
    }
}
