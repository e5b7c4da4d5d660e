/* test_cel.c -- the CEL subset used by CRD x-kubernetes-validations
 * (cel.c): the rules of aiq's CRDs, operators, short-circuiting, macros,
 * errors and unsupported syntax. */
#include "test/apiserver/cel.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <string.h>

#include "operator/yaml_json.h"

struct celcase {
    const char *rule, *self;
    enum cel_result want;
    const char *msg_part; /* for errors */
};

static void run(const struct celcase *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        json_object *self = json_tokener_parse(t[i].self);
        char msg[256];
        enum cel_result r = cel_eval_bool(t[i].rule, self, msg, sizeof msg);
        if (!CHECK_INT(r, t[i].want))
            fprintf(stderr, "    case %zu: %s on %s (msg %s)\n", i, t[i].rule, t[i].self, msg);
        else if (t[i].msg_part && !CHECK(strstr(msg, t[i].msg_part)))
            fprintf(stderr, "    case %zu: message %s lacks %s\n", i, msg, t[i].msg_part);
        json_object_put(self);
    }
}

#define AIJOB_RULE                                                                              \
    "!has(self.resources) || !has(self.resources.gpuModel) || (has(self.resources.gpus) && "    \
    "self.resources.gpus > 0) || (has(self.resources.gpuMemoryMiB) && "                         \
    "self.resources.gpuMemoryMiB > 0)"
#define LAST_LEVEL "!has(self.levels[size(self.levels) - 1].when) || self.levels[size(self.levels) - 1].when == ''"
#define ONE_CATCHALL "self.levels.filter(l, !has(l.when) || l.when == '').size() <= 1"
#define PROMOTE "!has(self.starvation) || !has(self.starvation.promoteTo) || " \
                "self.levels.exists(l, l.name == self.starvation.promoteTo)"

TEST(cel_rules_of_aiq_crds) {
    static const struct celcase t[] = {
        {AIJOB_RULE, "{\"user\":\"a\"}", CEL_TRUE, NULL},
        {AIJOB_RULE, "{\"resources\":{\"gpus\":2}}", CEL_TRUE, NULL},
        {AIJOB_RULE, "{\"resources\":{\"gpuModel\":\"A100\",\"gpus\":2}}", CEL_TRUE, NULL},
        {AIJOB_RULE, "{\"resources\":{\"gpuModel\":\"A100\",\"gpus\":0,\"gpuMemoryMiB\":100}}", CEL_TRUE, NULL},
        {AIJOB_RULE, "{\"resources\":{\"gpuModel\":\"A100\",\"gpus\":0}}", CEL_FALSE, NULL},
        {AIJOB_RULE, "{\"resources\":{\"gpuModel\":\"A100\"}}", CEL_FALSE, NULL},
        {LAST_LEVEL, "{\"levels\":[{\"name\":\"a\",\"when\":\"x\"},{\"name\":\"b\"}]}", CEL_TRUE, NULL},
        {LAST_LEVEL, "{\"levels\":[{\"name\":\"a\",\"when\":\"x\"},{\"name\":\"b\",\"when\":\"\"}]}", CEL_TRUE, NULL},
        {LAST_LEVEL, "{\"levels\":[{\"name\":\"a\"},{\"name\":\"b\",\"when\":\"y\"}]}", CEL_FALSE, NULL},
        {LAST_LEVEL, "{\"levels\":[]}", CEL_ERROR, "index out of bounds: -1"},
        {ONE_CATCHALL, "{\"levels\":[{\"name\":\"a\",\"when\":\"x\"},{\"name\":\"b\"}]}", CEL_TRUE, NULL},
        {ONE_CATCHALL, "{\"levels\":[{\"name\":\"a\",\"when\":\"\"},{\"name\":\"b\"}]}", CEL_FALSE, NULL},
        {PROMOTE, "{\"levels\":[{\"name\":\"a\"}]}", CEL_TRUE, NULL},
        {PROMOTE, "{\"levels\":[{\"name\":\"a\"},{\"name\":\"hi\"}],\"starvation\":{\"promoteTo\":\"hi\"}}",
         CEL_TRUE, NULL},
        {PROMOTE, "{\"levels\":[{\"name\":\"a\"}],\"starvation\":{\"promoteTo\":\"zz\"}}", CEL_FALSE, NULL},
        {PROMOTE, "{\"levels\":[],\"starvation\":{\"afterHours\":3}}", CEL_TRUE, NULL},
    };
    run(t, sizeof t / sizeof t[0]);
}

TEST(cel_operators_and_macros) {
    static const struct celcase t[] = {
        {"1 + 2 * 3 == 7 && 7 / 2 == 3 && 7 % 4 == 3", "{}", CEL_TRUE, NULL},
        {"-self.a < 0 && !(self.a < 1)", "{\"a\":5}", CEL_TRUE, NULL},
        {"self.d >= 1.5 && self.d <= 1.5 && self.d != 2.0", "{\"d\":1.5}", CEL_TRUE, NULL},
        {"self.a == 5.0", "{\"a\":5}", CEL_TRUE, NULL},
        {"self.s + 'x' == \"abx\" && 'ab' < 'b' && size('héllo') == 5", "{\"s\":\"ab\"}", CEL_TRUE, NULL},
        {"self.s.startsWith('ab') && self.s.endsWith('yz') && self.s.contains('mn')",
         "{\"s\":\"abmnyz\"}", CEL_TRUE, NULL},
        {"self.x ? self.a : self.b", "{\"x\":true,\"a\":true}", CEL_TRUE, NULL},
        {"self.x ? self.a : self.b", "{\"x\":false,\"a\":true,\"b\":false}", CEL_FALSE, NULL},
        {"'b' in self.l && !('z' in self.l) && 'k' in self.m", "{\"l\":[\"a\",\"b\"],\"m\":{\"k\":1}}",
         CEL_TRUE, NULL},
        {"self.l.all(x, x > 0) && self.l.exists_one(x, x == 2) && self.l.map(x, x * 2)[2] == 6",
         "{\"l\":[1,2,3]}", CEL_TRUE, NULL},
        {"self.l.exists(x, x > 5)", "{\"l\":[1,2,3]}", CEL_FALSE, NULL},
        {"self.m.all(k, self.m[k] > 0)", "{\"m\":{\"a\":1,\"b\":2}}", CEL_TRUE, NULL},
        {"self.l.filter(x, x.l.exists(y, y == 1)).size() == 1",
         "{\"l\":[{\"l\":[1]},{\"l\":[2]}]}", CEL_TRUE, NULL},
        {"self.l == [1]", "{\"l\":[1]}", CEL_UNSUPPORTED, "unexpected '['"},
        {"self.n == null && self.m.size() == 0", "{\"n\":null,\"m\":{}}", CEL_TRUE, NULL},
        /* errors are absorbed by the deciding side, either order */
        {"self.missing > 1 || true", "{}", CEL_TRUE, NULL},
        {"true || self.missing > 1", "{}", CEL_TRUE, NULL},
        {"self.missing > 1 && false", "{}", CEL_FALSE, NULL},
        {"self.missing > 1 || false", "{}", CEL_ERROR, "no such key: missing"},
        {"has(self.a.b)", "{}", CEL_ERROR, "no such key: a"},
        {"self.a > 'x'", "{\"a\":1}", CEL_ERROR, "no matching overload for '>' on int, string"},
        {"self.a", "{\"a\":1}", CEL_ERROR, "not bool"},
        {"1 / 0 == 1", "{}", CEL_ERROR, "division by zero"},
        /* unsupported: reported so the caller can skip the rule */
        {"self.a == oldSelf.a", "{\"a\":1}", CEL_UNSUPPORTED, "identifier 'oldSelf'"},
        {"self.a.matches('x')", "{\"a\":\"x\"}", CEL_UNSUPPORTED, "method 'matches'"},
        {"self.l.exists(1)", "{\"l\":[]}", CEL_UNSUPPORTED, "macro without a variable"},
        {"self.a ==", "{\"a\":1}", CEL_UNSUPPORTED, "end of rule"},
        {"self.a == 1 junk", "{\"a\":1}", CEL_UNSUPPORTED, "unexpected text at offset 12"},
        {"has(self)", "{}", CEL_UNSUPPORTED, "field selection"},
        {"(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))"
         "))))))))))))))))))))))))))))))))))))))))))))))))) == 1",
         "{}", CEL_UNSUPPORTED, "nested too deeply"},
    };
    run(t, sizeof t / sizeof t[0]);
}

TEST(cel_integer_overflow_is_an_error) {
    static const struct celcase t[] = {
        {"9223372036854775807 + 1 > 0", "{}", CEL_ERROR, "integer overflow"},
        {"self.a * self.a > 0", "{\"a\":4611686018427387904}", CEL_ERROR, "integer overflow"},
        {"-self.m < 0", "{\"m\":-9223372036854775808}", CEL_ERROR, "integer overflow"},
        {"self.m / -1 < 0", "{\"m\":-9223372036854775808}", CEL_ERROR, "integer overflow"},
        {"99999999999999999999 > 0", "{}", CEL_UNSUPPORTED, "out of range"},
    };
    run(t, sizeof t / sizeof t[0]);
}

/* ---- ValidatingAdmissionPolicy bindings (cel_eval_bool_vars) ---------------
 * The two expressions of crds/admission-identity.yaml, evaluated with the
 * object/oldObject/request values the local server binds. */
#define VAP_IMMUTABLE "request.operation != 'UPDATE' || object.spec.user == oldObject.spec.user"
#define VAP_OWNER                                                                   \
    "object.spec.user == request.userInfo.username || "                             \
    "'aiq:admins' in request.userInfo.groups || "                                   \
    "'system:masters' in request.userInfo.groups || "                               \
    "request.userInfo.username == 'system:serviceaccount:aiq-system:aiq-operator'"

struct vapcase {
    const char *rule, *op, *user, *groups, *obj_user, *old_user; /* old_user NULL: oldObject null */
    enum cel_result want;
    const char *msg_part;
};

TEST(cel_vars_identity_policy) {
    static const struct vapcase t[] = {
        {VAP_OWNER, "CREATE", "alice", "[\"aiq:vision\"]", "alice", NULL, CEL_TRUE, NULL},
        {VAP_OWNER, "CREATE", "alice", "[\"aiq:vision\"]", "bob", NULL, CEL_FALSE, NULL},
        {VAP_OWNER, "CREATE", "carol", "[\"aiq:vision\",\"system:authenticated\"]", "alice", NULL, CEL_FALSE, NULL},
        {VAP_OWNER, "CREATE", "admin", "[\"aiq:admins\"]", "alice", NULL, CEL_TRUE, NULL},
        {VAP_OWNER, "CREATE", "root", "[\"system:masters\"]", "alice", NULL, CEL_TRUE, NULL},
        {VAP_OWNER, "UPDATE", "system:serviceaccount:aiq-system:aiq-operator", "[]", "alice", "alice", CEL_TRUE, NULL},
        {VAP_OWNER, "UPDATE", "system:serviceaccount:default:aiq-operator", "[]", "alice", "alice", CEL_FALSE, NULL},
        /* a user named like a group is not in it */
        {VAP_OWNER, "CREATE", "aiq:admins", "[]", "alice", NULL, CEL_FALSE, NULL},
        /* oldObject is null on CREATE: the || never reads it */
        {VAP_IMMUTABLE, "CREATE", "alice", "[]", "alice", NULL, CEL_TRUE, NULL},
        {VAP_IMMUTABLE, "UPDATE", "alice", "[]", "alice", "alice", CEL_TRUE, NULL},
        {VAP_IMMUTABLE, "UPDATE", "alice", "[]", "bob", "alice", CEL_FALSE, NULL},
        {VAP_IMMUTABLE, "UPDATE", "admin", "[\"aiq:admins\"]", "bob", "alice", CEL_FALSE, NULL},
        /* an UPDATE without oldObject is an error (fails closed), not true */
        {VAP_IMMUTABLE, "UPDATE", "alice", "[]", "alice", NULL, CEL_ERROR, NULL},
        /* names not bound stay unsupported */
        {"params.x == 1", "CREATE", "alice", "[]", "alice", NULL, CEL_UNSUPPORTED, "identifier 'params'"},
        /* self is not bound for policies */
        {"self == null", "CREATE", "alice", "[]", "alice", NULL, CEL_TRUE, NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char buf[600], msg[256];
        snprintf(buf, sizeof buf,
                 "{\"request\":{\"operation\":\"%s\",\"userInfo\":{\"username\":\"%s\",\"groups\":%s}},"
                 "\"object\":{\"spec\":{\"user\":\"%s\"}},\"oldObject\":%s%s%s}",
                 t[i].op, t[i].user, t[i].groups, t[i].obj_user,
                 t[i].old_user ? "{\"spec\":{\"user\":\"" : "null",
                 t[i].old_user ? t[i].old_user : "", t[i].old_user ? "\"}}" : "");
        json_object *vars = json_tokener_parse(buf);
        CHECK(vars != NULL);
        enum cel_result r = cel_eval_bool_vars(t[i].rule, vars, msg, sizeof msg);
        if (!CHECK_INT(r, t[i].want))
            fprintf(stderr, "    case %zu: %s as %s (msg %s)\n", i, t[i].op, t[i].user, msg);
        else if (t[i].msg_part && !CHECK(strstr(msg, t[i].msg_part)))
            fprintf(stderr, "    case %zu: message %s lacks %s\n", i, msg, t[i].msg_part);
        json_object_put(vars);
    }
}

/* The nonPreemptible rule of crds/admission-identity.yaml (read from the
 * file, so this tests what is installed): only admins grant it; the
 * owner's later updates keep it. */
static char *vap_expression(int k) {
    char path[512];
    snprintf(path, sizeof path, "%s/crds/admission-identity.yaml", th_srcdir());
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL)) return NULL;
    char *text = calloc(1, 65536);
    size_t n = text ? fread(text, 1, 65535, f) : 0;
    fclose(f);
    json_object **docs = NULL;
    int nd = 0;
    char *out = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    if (text && CHECK_INT(aiq_yaml_to_json(text, n, &docs, &nd, &e), AIQ_OK) && nd > 0) {
        json_object *spec, *vals, *v, *x;
        if (json_object_object_get_ex(docs[0], "spec", &spec) &&
            json_object_object_get_ex(spec, "validations", &vals) &&
            (v = json_object_array_get_idx(vals, (size_t)k)) &&
            json_object_object_get_ex(v, "expression", &x))
            out = strdup(json_object_get_string(x));
    }
    aiq_json_docs_free(docs, nd);
    free(text);
    return out;
}

TEST(cel_vars_non_preemptible_is_granted_by_admins) {
    char *rule = vap_expression(2);
    if (!CHECK(rule != NULL)) return;
    CHECK(strstr(rule, "nonPreemptible") != NULL);
    static const struct {
        const char *op, *user, *groups, *obj_spec, *old_spec;
        enum cel_result want;
    } t[] = {
        {"CREATE", "alice", "[]", "{\"user\":\"alice\"}", NULL, CEL_TRUE},
        {"CREATE", "alice", "[]", "{\"user\":\"alice\",\"nonPreemptible\":false}", NULL, CEL_TRUE},
        {"CREATE", "alice", "[]", "{\"user\":\"alice\",\"nonPreemptible\":true}", NULL, CEL_FALSE},
        {"CREATE", "admin", "[\"aiq:admins\"]", "{\"user\":\"alice\",\"nonPreemptible\":true}", NULL, CEL_TRUE},
        {"UPDATE", "alice", "[]", "{\"user\":\"alice\",\"nonPreemptible\":true}",
         "{\"user\":\"alice\"}", CEL_FALSE},
        {"UPDATE", "alice", "[]", "{\"user\":\"alice\",\"nonPreemptible\":true}",
         "{\"user\":\"alice\",\"nonPreemptible\":false}", CEL_FALSE},
        /* granted before: the owner suspends the job and keeps the flag */
        {"UPDATE", "alice", "[]", "{\"user\":\"alice\",\"nonPreemptible\":true,\"suspend\":true}",
         "{\"user\":\"alice\",\"nonPreemptible\":true}", CEL_TRUE},
        {"UPDATE", "system:serviceaccount:aiq-system:aiq-operator", "[]",
         "{\"user\":\"alice\",\"nonPreemptible\":true}", "{\"user\":\"alice\"}", CEL_TRUE},
        {"UPDATE", "root", "[\"system:masters\"]", "{\"user\":\"alice\",\"nonPreemptible\":true}",
         "{\"user\":\"alice\"}", CEL_TRUE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char buf[800], msg[256];
        snprintf(buf, sizeof buf,
                 "{\"request\":{\"operation\":\"%s\",\"userInfo\":{\"username\":\"%s\",\"groups\":%s}},"
                 "\"object\":{\"spec\":%s},\"oldObject\":%s%s%s}",
                 t[i].op, t[i].user, t[i].groups, t[i].obj_spec, t[i].old_spec ? "{\"spec\":" : "null",
                 t[i].old_spec ? t[i].old_spec : "", t[i].old_spec ? "}" : "");
        json_object *vars = json_tokener_parse(buf);
        CHECK(vars != NULL);
        enum cel_result r = cel_eval_bool_vars(rule, vars, msg, sizeof msg);
        if (!CHECK_INT(r, t[i].want)) fprintf(stderr, "    case %zu: %s as %s (msg %s)\n", i, t[i].op, t[i].user, msg);
        json_object_put(vars);
    }
    free(rule);
}

/* The admission authorizer: the chain's fields reach the callback, its
 * answer is the value of allowed(), a short-circuited chain never asks,
 * and messageExpression strings evaluate. */
static int g_asked;
static bool quota_admin_of_vision(void *ctx, json_object *req) {
    json_object *v;
    (void)ctx;
    g_asked++;
    const char *ns = json_object_object_get_ex(req, "namespace", &v) ? json_object_get_string(v) : "";
    const char *verb = json_object_object_get_ex(req, "verb", &v) ? json_object_get_string(v) : "";
    const char *res = json_object_object_get_ex(req, "resource", &v) ? json_object_get_string(v) : "";
    return !strcmp(ns, "team-vision") && !strcmp(verb, "create") && !strcmp(res, "userquotas");
}

TEST(cel_authorizer_and_message_expression) {
    json_object *vars = json_tokener_parse(
        "{\"request\":{\"namespace\":\"team-vision\",\"userInfo\":{\"username\":\"dave\"}},"
        "\"oldObject\":{\"spec\":{\"user\":\"alice\"}},\"object\":null}");
    const char *rule = "oldObject.spec.user == request.userInfo.username || "
                       "authorizer.group('aiq.dev').resource('userquotas')"
                       ".namespace(request.namespace).check('create').allowed()";
    char msg[200], out[200];
    g_asked = 0;
    CHECK_INT(cel_eval_bool_vars_authz(rule, vars, quota_admin_of_vision, NULL, msg, sizeof msg),
              CEL_TRUE);
    CHECK_INT(g_asked, 1);
    const char *other = "authorizer.group('aiq.dev').resource('userquotas').namespace('team-nlp')"
                        ".check('create').allowed()";
    CHECK_INT(cel_eval_bool_vars_authz(other, vars, quota_admin_of_vision, NULL, msg, sizeof msg),
              CEL_FALSE);
    g_asked = 0;
    const char *owner = "oldObject.spec.user == 'alice' || authorizer.group('x').check('get').allowed()";
    CHECK_INT(cel_eval_bool_vars_authz(owner, vars, quota_admin_of_vision, NULL, msg, sizeof msg),
              CEL_TRUE);
    CHECK_INT(g_asked, 0); /* short-circuited: never asked */
    /* without an authorizer bound the name is unknown */
    CHECK_INT(cel_eval_bool_vars(other, vars, msg, sizeof msg), CEL_UNSUPPORTED);
    CHECK_INT(cel_eval_string_vars("'only ' + oldObject.spec.user + ' may'", vars, out, sizeof out,
                                   msg, sizeof msg), CEL_TRUE);
    CHECK_STR(out, "only alice may");
    CHECK_INT(cel_eval_string_vars("1 == 1", vars, out, sizeof out, msg, sizeof msg), CEL_ERROR);
    json_object_put(vars);
}
