/* test_rbac.c -- the local API server's RBAC evaluator (test/apiserver/
 * rbac.c): a rule-matching table (verbs, API groups, resources,
 * subresources, resourceNames, wildcards), subjects (User, Group,
 * ServiceAccount with and without a namespace), cluster versus namespaced
 * bindings, a RoleBinding to a ClusterRole, and the denial message. */
#include "test/apiserver/rbac.h"
#include "test/unit/th.h"

#include <string.h>

struct rulecase {
    const char *rule;
    const char *verb, *group, *resource, *sub, *name;
    bool want;
};

TEST(rbac_rule_table) {
    static const struct rulecase t[] = {
        /* verbs */
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs\"],\"verbs\":[\"get\",\"list\"]}",
         "get", "aiq.dev", "aijobs", NULL, "j", true},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs\"],\"verbs\":[\"get\",\"list\"]}",
         "create", "aiq.dev", "aijobs", NULL, NULL, false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs\"],\"verbs\":[\"*\"]}",
         "deletecollection", "aiq.dev", "aijobs", NULL, NULL, true},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs\"]}",
         "get", "aiq.dev", "aijobs", NULL, NULL, false},
        /* API groups: the core group is "" and must be named */
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}",
         "get", "", "pods", NULL, "p", false},
        {"{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}",
         "get", "", "pods", NULL, "p", true},
        {"{\"apiGroups\":[\"*\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}",
         "get", "", "pods", NULL, "p", true},
        {"{\"apiGroups\":[\"\"],\"resources\":[\"aijobs\"],\"verbs\":[\"get\"]}",
         "get", "aiq.dev", "aijobs", NULL, "j", false},
        /* resources and subresources */
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "aijobs", "status", "j", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs/status\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "aijobs", "status", "j", true},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs/status\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "aijobs", NULL, "j", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"*/status\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "groups", "status", "g", true},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"*/status\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "groups", NULL, "g", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"*/status\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "groups", "scale", "g", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"*\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "groups", "status", "g", true},
        /* a trailing "/ *" wildcard ("aijobs/ *") does not exist in Kubernetes RBAC */
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs/*\"],\"verbs\":[\"patch\"]}",
         "patch", "aiq.dev", "aijobs", "status", "j", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijob\"],\"verbs\":[\"get\"]}",
         "get", "aiq.dev", "aijobs", NULL, "j", false},
        /* resourceNames */
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"groups\"],\"verbs\":[\"get\",\"update\"],"
         "\"resourceNames\":[\"vision\"]}", "update", "aiq.dev", "groups", NULL, "vision", true},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"groups\"],\"verbs\":[\"get\",\"update\"],"
         "\"resourceNames\":[\"vision\"]}", "update", "aiq.dev", "groups", NULL, "nlp", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"groups\"],\"verbs\":[\"list\"],"
         "\"resourceNames\":[\"vision\"]}", "list", "aiq.dev", "groups", NULL, NULL, false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"groups\"],\"verbs\":[\"get\"],"
         "\"resourceNames\":[]}", "get", "aiq.dev", "groups", NULL, "any", true},
        /* malformed rules never match */
        {"{\"apiGroups\":\"aiq.dev\",\"resources\":[\"aijobs\"],\"verbs\":[\"get\"]}",
         "get", "aiq.dev", "aijobs", NULL, "j", false},
        {"{\"apiGroups\":[\"aiq.dev\"],\"resources\":[7],\"verbs\":[\"get\"]}",
         "get", "aiq.dev", "aijobs", NULL, "j", false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_object *rule = json_tokener_parse(t[i].rule);
        struct rbac_attrs a = {t[i].verb, t[i].group, t[i].resource, t[i].sub, t[i].name, "ns1"};
        CHECK(rule != NULL);
        if (!CHECK_INT(rbac_rule_matches(rule, &a), t[i].want))
            fprintf(stderr, "    case %zu: %s %s/%s/%s on %s\n", i, t[i].verb, t[i].group,
                    t[i].resource, t[i].sub ? t[i].sub : "", t[i].rule);
        json_object_put(rule);
    }
}

TEST(rbac_subjects) {
    const char *groups[] = {"team-vision", "system:authenticated"};
    struct rbac_user alice = {"alice", groups, 2};
    struct rbac_user sa = {"system:serviceaccount:aiq-system:aiq-operator", NULL, 0};
    struct { const char *subj; const struct rbac_user *u; const char *ns; bool want; } t[] = {
        {"{\"kind\":\"User\",\"name\":\"alice\"}", &alice, NULL, true},
        {"{\"kind\":\"User\",\"name\":\"Alice\"}", &alice, NULL, false},
        {"{\"kind\":\"Group\",\"name\":\"team-vision\"}", &alice, NULL, true},
        {"{\"kind\":\"Group\",\"name\":\"team-nlp\"}", &alice, NULL, false},
        {"{\"kind\":\"User\",\"name\":\"team-vision\"}", &alice, NULL, false},
        {"{\"kind\":\"ServiceAccount\",\"name\":\"aiq-operator\",\"namespace\":\"aiq-system\"}", &sa, NULL, true},
        {"{\"kind\":\"ServiceAccount\",\"name\":\"aiq-operator\",\"namespace\":\"default\"}", &sa, NULL, false},
        /* without a namespace the binding's namespace is meant */
        {"{\"kind\":\"ServiceAccount\",\"name\":\"aiq-operator\"}", &sa, "aiq-system", true},
        {"{\"kind\":\"ServiceAccount\",\"name\":\"aiq-operator\"}", &sa, NULL, false},
        {"{\"kind\":\"Robot\",\"name\":\"alice\"}", &alice, NULL, false},
        {"{\"name\":\"alice\"}", &alice, NULL, false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_object *s = json_tokener_parse(t[i].subj);
        if (!CHECK_INT(rbac_subject_matches(s, t[i].u, t[i].ns), t[i].want))
            fprintf(stderr, "    case %zu: %s\n", i, t[i].subj);
        json_object_put(s);
    }
}

/* ---- whole decisions over a small role store ---- */

static const char *ROLES =
    "["
    "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"aiq-user\"},\"rules\":["
    " {\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"aijobs\"],\"verbs\":[\"get\",\"list\",\"create\"]},"
    " {\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"groups\"],\"verbs\":[\"get\",\"list\"]}]},"
    "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"reader\"},\"rules\":["
    " {\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"get\",\"list\",\"watch\"]}]},"
    "{\"kind\":\"Role\",\"metadata\":{\"name\":\"quota-editor\",\"namespace\":\"team-vision\"},\"rules\":["
    " {\"apiGroups\":[\"aiq.dev\"],\"resources\":[\"userquotas\"],\"verbs\":[\"create\",\"update\"]}]},"
    "{\"kind\":\"Role\",\"metadata\":{\"name\":\"quota-editor\",\"namespace\":\"team-nlp\"},\"rules\":[]}"
    "]";

static json_object *role_get(void *ctx, const char *kind, const char *ns, const char *name) {
    json_object *roles = ctx;
    for (size_t i = 0; i < json_object_array_length(roles); i++) {
        json_object *r = json_object_array_get_idx(roles, i), *k, *md, *n, *rns = NULL;
        json_object_object_get_ex(r, "kind", &k);
        json_object_object_get_ex(r, "metadata", &md);
        json_object_object_get_ex(md, "name", &n);
        json_object_object_get_ex(md, "namespace", &rns);
        if (strcmp(json_object_get_string(k), kind) || strcmp(json_object_get_string(n), name)) continue;
        if (ns && (!rns || strcmp(json_object_get_string(rns), ns))) continue;
        return json_object_get(r);
    }
    return NULL;
}

TEST(rbac_authorize_bindings) {
    json_object *roles = json_tokener_parse(ROLES);
    /* alice: aiq-user in team-vision only (RoleBinding to a ClusterRole);
     * carol: quota-editor Role in team-vision; auditors: reader everywhere */
    json_object *crbs = json_tokener_parse(
        "[{\"metadata\":{\"name\":\"audit\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"reader\"},"
        "  \"subjects\":[{\"kind\":\"Group\",\"name\":\"auditors\"}]},"
        " {\"metadata\":{\"name\":\"bad\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"quota-editor\"},"
        "  \"subjects\":[{\"kind\":\"User\",\"name\":\"mallory\"}]}]");
    json_object *vision = json_tokener_parse(
        "[{\"metadata\":{\"name\":\"users\",\"namespace\":\"team-vision\"},"
        "  \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"aiq-user\"},"
        "  \"subjects\":[{\"kind\":\"Group\",\"name\":\"team-vision\"}]},"
        " {\"metadata\":{\"name\":\"carol\",\"namespace\":\"team-vision\"},"
        "  \"roleRef\":{\"kind\":\"Role\",\"name\":\"quota-editor\"},"
        "  \"subjects\":[{\"kind\":\"User\",\"name\":\"carol\"}]}]");
    json_object *nlp = json_tokener_parse(
        "[{\"metadata\":{\"name\":\"carol\",\"namespace\":\"team-nlp\"},"
        "  \"roleRef\":{\"kind\":\"Role\",\"name\":\"quota-editor\"},"
        "  \"subjects\":[{\"kind\":\"User\",\"name\":\"carol\"}]}]");
    const char *vg[] = {"team-vision", "system:authenticated"};
    const char *ag[] = {"auditors"};
    struct rbac_user alice = {"alice", vg, 2}, carol = {"carol", NULL, 0},
                     aud = {"dave", ag, 1}, mallory = {"mallory", NULL, 0};
    struct { const struct rbac_user *u; json_object *nsb; struct rbac_attrs a; bool want; } t[] = {
        {&alice, vision, {"create", "aiq.dev", "aijobs", NULL, NULL, "team-vision"}, true},
        {&alice, nlp, {"create", "aiq.dev", "aijobs", NULL, NULL, "team-nlp"}, false},
        /* a namespace's RoleBinding does not reach cluster scope */
        {&alice, vision, {"list", "aiq.dev", "aijobs", NULL, NULL, NULL}, false},
        {&alice, vision, {"delete", "aiq.dev", "aijobs", NULL, "j", "team-vision"}, false},
        {&alice, vision, {"create", "aiq.dev", "userquotas", NULL, NULL, "team-vision"}, false},
        {&carol, vision, {"create", "aiq.dev", "userquotas", NULL, NULL, "team-vision"}, true},
        /* same Role name in team-nlp has no rules */
        {&carol, nlp, {"create", "aiq.dev", "userquotas", NULL, NULL, "team-nlp"}, false},
        /* bindings of another namespace passed by mistake do not count */
        {&carol, vision, {"create", "aiq.dev", "userquotas", NULL, NULL, "team-nlp"}, false},
        {&aud, NULL, {"list", "aiq.dev", "aijobs", NULL, NULL, NULL}, true},
        {&aud, vision, {"get", "", "pods", "log", "p", "team-vision"}, true},
        {&aud, vision, {"delete", "", "pods", NULL, "p", "team-vision"}, false},
        /* a ClusterRoleBinding that refers to a Role grants nothing */
        {&mallory, vision, {"create", "aiq.dev", "userquotas", NULL, NULL, "team-vision"}, false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        bool got = rbac_authorize(crbs, t[i].nsb, role_get, roles, t[i].u, &t[i].a);
        if (!CHECK_INT(got, t[i].want))
            fprintf(stderr, "    case %zu: %s %s %s in %s\n", i, t[i].u->name, t[i].a.verb,
                    t[i].a.resource, t[i].a.ns ? t[i].a.ns : "(cluster)");
    }
    json_object_put(nlp);
    json_object_put(vision);
    json_object_put(crbs);
    json_object_put(roles);
}

TEST(rbac_forbidden_messages) {
    struct rbac_user alice = {"alice", NULL, 0};
    char buf[512];
    struct rbac_attrs a = {"create", "aiq.dev", "aijobs", NULL, NULL, "team-vision"};
    rbac_forbidden_message(&alice, &a, buf, sizeof buf);
    CHECK_STR(buf, "aijobs.aiq.dev is forbidden: User \"alice\" cannot create resource \"aijobs\" "
                   "in API group \"aiq.dev\" in the namespace \"team-vision\"");
    struct rbac_attrs b = {"patch", "aiq.dev", "userquotas", "status", "q1", "team-vision"};
    rbac_forbidden_message(&alice, &b, buf, sizeof buf);
    CHECK_STR(buf, "userquotas.aiq.dev \"q1\" is forbidden: User \"alice\" cannot patch resource "
                   "\"userquotas/status\" in API group \"aiq.dev\" in the namespace \"team-vision\"");
    struct rbac_attrs c = {"list", "", "nodes", NULL, NULL, NULL};
    rbac_forbidden_message(&alice, &c, buf, sizeof buf);
    CHECK_STR(buf, "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" "
                   "at the cluster scope");
    /* a tiny buffer is cut, not overrun */
    char tiny[8];
    rbac_forbidden_message(&alice, &c, tiny, sizeof tiny);
    CHECK_STR(tiny, "nodes i");
}
