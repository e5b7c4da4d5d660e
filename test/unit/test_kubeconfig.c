/* test_kubeconfig.c -- kubeconfig and in-cluster config: every credential
 * variant, relative paths, field-named errors, caps, base64. */
#include "test/unit/th.h"

#include <stdlib.h>

#include "operator/kubeconfig.h"

static struct kube_config *load(const char *name, const char *ctx, aiq_err *e) {
    char path[1024];
    struct kube_config *c = NULL;
    snprintf(path, sizeof path, "%s/test/fixtures/kubeconfig/%s", th_srcdir(), name);
    aiq_err_clear(e);
    kube_config_load(path, ctx, &c, e);
    return c;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && strcmp(s + a - b, suffix) == 0;
}

TEST(token_current_context) {
    aiq_err e;
    struct kube_config *c = load("token.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    CHECK_STR(c->context, "dev");
    CHECK_STR(c->server, "https://10.0.0.1:6443"); /* trailing slash dropped */
    CHECK_STR(c->namespace_, "team-a");
    CHECK_STR(c->token, "abc.def-123");
    CHECK(c->token_file == NULL);
    /* Relative CA path resolves against the kubeconfig's directory. */
    CHECK(ends_with(c->ca_file, "/test/fixtures/kubeconfig/certs/ca.crt"));
    CHECK(c->ca_data.data == NULL);
    CHECK_INT(c->insecure, 0);
    kube_config_free(c);
}

TEST(context_override) {
    aiq_err e;
    struct kube_config *c = load("token.yaml", "prod", &e);
    CHECK(c != NULL);
    if (!c) return;
    CHECK_STR(c->context, "prod");
    CHECK_STR(c->server, "https://other.example:6443");
    CHECK_STR(c->token, "prod-token");
    CHECK(c->namespace_ == NULL);
    kube_config_free(c);
}

TEST(context_override_missing) {
    aiq_err e;
    struct kube_config *c = load("token.yaml", "nope", &e);
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_ENOTFOUND);
    CHECK_STR(e.field, "context");
    CHECK(strstr(e.message, "\"nope\" not found in contexts") != NULL);
}

TEST(token_file) {
    aiq_err e;
    struct kube_config *c = load("tokenfile.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    CHECK_STR(c->server, "http://127.0.0.1:8080");
    CHECK(c->token == NULL);
    CHECK(ends_with(c->token_file, "/kubeconfig/token.txt"));
    kube_config_free(c);
}

TEST(ca_data_decoded) {
    aiq_err e;
    struct kube_config *c = load("ca-data.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    const char *want = "-----BEGIN CERTIFICATE-----\nFAKECA\n-----END CERTIFICATE-----\n";
    CHECK_INT(c->ca_data.len, strlen(want));
    CHECK_STR((const char *)c->ca_data.data, want);
    CHECK_STR(c->tls_server_name, "kubernetes.default");
    CHECK(c->ca_file == NULL);
    kube_config_free(c);
}

TEST(insecure_and_empty_user) {
    aiq_err e;
    struct kube_config *c = load("insecure.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    CHECK_INT(c->insecure, 1);
    CHECK(c->token == NULL && c->client_cert_data.data == NULL);
    kube_config_free(c);
}

TEST(client_cert_data) {
    aiq_err e;
    struct kube_config *c = load("client-cert-data.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    CHECK(c->client_cert_data.data && strstr((char *)c->client_cert_data.data, "FAKECLIENT"));
    CHECK(c->client_key_data.data && strstr((char *)c->client_key_data.data, "FAKEKEY"));
    CHECK(c->ca_data.data && strstr((char *)c->ca_data.data, "FAKECA"));
    kube_config_free(c);
}

TEST(bad_base64_names_field) {
    aiq_err e;
    struct kube_config *c = load("bad-base64.yaml", NULL, &e);
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_EINVAL);
    CHECK_STR(e.field, "users[0].user.client-key-data");
    CHECK(strstr(e.message, "users[0].user.client-key-data: invalid base64 at byte 8") != NULL);
    CHECK(strstr(e.message, "bad-base64.yaml") != NULL); /* which file */
    CHECK_INT(e.line, 15); /* the client-key-data line */
}

TEST(missing_current_context) {
    aiq_err e;
    struct kube_config *c = load("missing-context.yaml", NULL, &e);
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_ENOTFOUND);
    CHECK_STR(e.field, "current-context");
    CHECK(strstr(e.message, "current-context: \"gone\" not found in contexts") != NULL);
}

TEST(yaml_syntax_error_has_position) {
    aiq_err e;
    struct kube_config *c = load("bad-yaml.yaml", NULL, &e);
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_EPARSE);
    CHECK(e.line >= 4);
    CHECK(strstr(e.message, "line") != NULL);
}

TEST(exec_plugin) {
    aiq_err e;
    struct kube_config *c = load("exec.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    struct kube_exec *x = c->exec;
    CHECK(x != NULL);
    CHECK(c->token == NULL && c->oidc == NULL);
    if (!x) goto out;
    CHECK_STR(x->field, "users[0].user.exec");
    CHECK_STR(x->api_version, KUBE_EXEC_V1);
    /* A command with a '/' is relative to the kubeconfig's directory. */
    CHECK(ends_with(x->command, "/test/fixtures/kubeconfig/./bin/get-token"));
    CHECK_INT(x->nargs, 4);
    if (x->nargs == 4) {
        CHECK_STR(x->args[0], "eks");
        CHECK_STR(x->args[3], "x");
    }
    CHECK_INT(x->nenv, 2);
    if (x->nenv == 2) {
        CHECK_STR(x->env[0].name, "AWS_PROFILE");
        CHECK_STR(x->env[0].value, "dev");
        CHECK_STR(x->env[1].name, "EMPTY");
        CHECK_STR(x->env[1].value, "");
    }
    CHECK_STR(x->install_hint, "install aws-cli");
    CHECK_INT(x->provide_cluster_info, 1);
    CHECK_INT(x->mode, KUBE_EXEC_NEVER);
    /* The cluster's exec extension, as kubectl turns YAML into JSON. */
    CHECK_STR(x->cluster_config,
              "{\"audience\":\"sts.example\",\"retries\":3,\"enabled\":true,\"quoted\":\"007\","
              "\"list\":[\"a\",null]}");
out:
    kube_config_free(c);
}

static aiq_rc parse(const char *text, struct kube_config **c, aiq_err *e);

/* A kubeconfig whose user u is "user: {USER}" (flow or block YAML). */
static aiq_rc parse_user(const char *user, struct kube_config **c, aiq_err *e) {
    char buf[4096];
    snprintf(buf, sizeof buf,
             "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
             "clusters:\n- name: k\n  cluster: {server: https://x}\nusers:\n- name: u\n  user:\n%s",
             user);
    return parse(buf, c, e);
}

TEST(exec_plugin_defaults) {
    struct kube_config *c = NULL;
    aiq_err e;
    /* v1beta1 predates interactiveMode: IfAvailable, as kubectl. A bare
     * command stays a name for $PATH; no cluster info without asking. */
    CHECK_INT(parse_user("    exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
                         "command: gke-gcloud-auth-plugin}\n", &c, &e), AIQ_OK);
    if (c && c->exec) {
        CHECK_INT(c->exec->mode, KUBE_EXEC_IF_AVAILABLE);
        CHECK_STR(c->exec->command, "gke-gcloud-auth-plugin");
        CHECK_INT(c->exec->nargs, 0);
        CHECK_INT(c->exec->nenv, 0);
        CHECK(c->exec->install_hint == NULL && c->exec->cluster_config == NULL);
    }
    kube_config_free(c);
    c = NULL;
    /* provideClusterInfo without the extension: no config. */
    CHECK_INT(parse_user("    exec: {apiVersion: client.authentication.k8s.io/v1, command: p, "
                         "interactiveMode: Always, provideClusterInfo: true}\n", &c, &e), AIQ_OK);
    if (c && c->exec) {
        CHECK_INT(c->exec->mode, KUBE_EXEC_ALWAYS);
        CHECK_INT(c->exec->provide_cluster_info, 1);
        CHECK(c->exec->cluster_config == NULL);
    }
    kube_config_free(c);
}

TEST(exec_field_errors_name_the_path) {
    struct kube_config *c = NULL;
    aiq_err e;
    static const struct {
        const char *user, *field, *msg;
        aiq_rc rc;
    } cases[] = {
        {"    exec: [a]\n", "users[0].user.exec", "expected a mapping", AIQ_EINVAL},
        {"    exec: {command: p, interactiveMode: Never}\n", "users[0].user.exec.apiVersion",
         "missing", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: p}\n",
         "users[0].user.exec.apiVersion", "removed in Kubernetes 1.24", AIQ_EINVAL},
        {"    exec: {apiVersion: v1, command: p}\n", "users[0].user.exec.apiVersion",
         "\"v1\" is not client.authentication.k8s.io/v1", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}\n",
         "users[0].user.exec.command", "missing", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: p}\n",
         "users[0].user.exec.interactiveMode", "missing (required by client.authentication.k8s.io/v1",
         AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: p, interactiveMode: never}\n",
         "users[0].user.exec.interactiveMode", "\"never\" is not Never, IfAvailable or Always",
         AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, args: a}\n",
         "users[0].user.exec.args", "expected a list", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, args: [a, {b: c}]}\n",
         "users[0].user.exec.args[1]", "expected a string", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, env: [{value: v}]}\n",
         "users[0].user.exec.env[0].name", "missing", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, env: [{name: \"A=B\"}]}\n",
         "users[0].user.exec.env[0].name", "contains '='", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, env: [x]}\n",
         "users[0].user.exec.env[0]", "expected a mapping", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, provideClusterInfo: sure}\n",
         "users[0].user.exec.provideClusterInfo", "is not a boolean", AIQ_EINVAL},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p}\n"
         "    auth-provider: {name: oidc}\n",
         "users[0].user.auth-provider", "cannot be used together with users[0].user.exec", AIQ_EINVAL},
        {"    username: admin\n    password: x\n", "users[0].user.username",
         "basic authentication is not supported", AIQ_EUNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        c = NULL;
        aiq_rc rc = parse_user(cases[i].user, &c, &e);
        if (!CHECK_INT(rc, cases[i].rc)) fprintf(stderr, "  case %zu: %s\n", i, e.message);
        CHECK_STR(e.field, cases[i].field);
        if (!CHECK(strstr(e.message, cases[i].msg) != NULL))
            fprintf(stderr, "  case %zu: message \"%s\"\n", i, e.message);
        CHECK(c == NULL);
    }
    /* Caps: at most KUBE_EXEC_MAX_ARGS arguments. */
    char *big = malloc(8 * KUBE_EXEC_MAX_ARGS + 200);
    CHECK(big != NULL);
    if (!big) return;
    size_t n = (size_t)snprintf(big, 200, "    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, args: [");
    for (int i = 0; i <= KUBE_EXEC_MAX_ARGS; i++) n += (size_t)snprintf(big + n, 8, "a,");
    snprintf(big + n, 8, "]}\n");
    CHECK_INT(parse_user(big, &c, &e), AIQ_ELIMIT);
    CHECK_STR(e.field, "users[0].user.exec.args");
    CHECK(strstr(e.message, "257 arguments, more than 256") != NULL);
    /* ... and at most KUBE_EXEC_MAX_ENV variables. */
    char *env = malloc(12 * KUBE_EXEC_MAX_ENV + 200);
    CHECK(env != NULL);
    if (env) {
        n = (size_t)snprintf(env, 200, "    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p, env: [");
        for (int i = 0; i <= KUBE_EXEC_MAX_ENV; i++) n += (size_t)snprintf(env + n, 12, "{name: a},");
        snprintf(env + n, 8, "]}\n");
        CHECK_INT(parse_user(env, &c, &e), AIQ_ELIMIT);
        CHECK_STR(e.field, "users[0].user.exec.env");
        CHECK(strstr(e.message, "257 variables, more than 256") != NULL);
        free(env);
    }
    free(big);
    /* A cluster extension that is not a list of mappings. */
    CHECK_INT(parse("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                    "clusters:\n- name: k\n  cluster: {server: https://x, extensions: [7]}\n"
                    "users:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1beta1,"
                    " command: p, provideClusterInfo: true}\n", &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "clusters[0].cluster.extensions[0]");
}

TEST(oidc_auth_provider) {
    aiq_err e;
    struct kube_config *c = load("oidc.yaml", NULL, &e);
    CHECK(c != NULL);
    if (!c) return;
    struct kube_oidc *o = c->oidc;
    CHECK(o != NULL && c->exec == NULL);
    if (o) {
        CHECK_STR(o->field, "users[0].user.auth-provider");
        CHECK_STR(o->issuer_url, "https://dex.example/");
        CHECK_STR(o->client_id, "kubernetes");
        CHECK_STR(o->client_secret, "s3cret");
        CHECK_STR(o->id_token, "aaa.bbb.ccc");
        CHECK_STR(o->refresh_token, "rt-1");
        CHECK(ends_with(o->ca_file, "/test/fixtures/kubeconfig/certs/idp.crt"));
        CHECK(o->ca_data.data == NULL);
    }
    kube_config_free(c);
}

TEST(auth_provider_errors) {
    struct kube_config *c = NULL;
    aiq_err e;
    static const struct {
        const char *user, *field, *msg;
        aiq_rc rc;
    } cases[] = {
        {"    auth-provider: {name: gcp, config: {}}\n", "users[0].user.auth-provider.name",
         "removed from Kubernetes in 1.26; use its exec plugin instead: gke-gcloud-auth-plugin",
         AIQ_EUNSUPPORTED},
        {"    auth-provider: {name: azure}\n", "users[0].user.auth-provider.name",
         "the azure auth-provider was removed from Kubernetes in 1.26; use its exec plugin instead: kubelogin",
         AIQ_EUNSUPPORTED},
        {"    auth-provider: {name: openstack}\n", "users[0].user.auth-provider.name",
         "auth-provider \"openstack\" is not supported", AIQ_EUNSUPPORTED},
        {"    auth-provider: {config: {}}\n", "users[0].user.auth-provider.name", "missing", AIQ_EINVAL},
        {"    auth-provider: {name: oidc}\n", "users[0].user.auth-provider.config",
         "missing (oidc needs idp-issuer-url and client-id)", AIQ_EINVAL},
        {"    auth-provider: {name: oidc, config: {client-id: a, id-token: t}}\n",
         "users[0].user.auth-provider.config.idp-issuer-url", "missing", AIQ_EINVAL},
        {"    auth-provider: {name: oidc, config: {idp-issuer-url: \"http://dex.example\", client-id: a, id-token: t}}\n",
         "users[0].user.auth-provider.config.idp-issuer-url", "must be an https URL", AIQ_EINVAL},
        {"    auth-provider: {name: oidc, config: {idp-issuer-url: \"https://dex.example\", id-token: t}}\n",
         "users[0].user.auth-provider.config.client-id", "missing", AIQ_EINVAL},
        {"    auth-provider: {name: oidc, config: {idp-issuer-url: \"https://dex.example\", client-id: a}}\n",
         "users[0].user.auth-provider.config.id-token", "no refresh-token", AIQ_EINVAL},
        {"    auth-provider: {name: oidc, config: {idp-issuer-url: \"https://d\", client-id: a, "
         "id-token: t, idp-certificate-authority-data: \"!!\"}}\n",
         "users[0].user.auth-provider.config.idp-certificate-authority-data", "invalid base64",
         AIQ_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        c = NULL;
        aiq_rc rc = parse_user(cases[i].user, &c, &e);
        if (!CHECK_INT(rc, cases[i].rc)) fprintf(stderr, "  case %zu: %s\n", i, e.message);
        CHECK_STR(e.field, cases[i].field);
        if (!CHECK(strstr(e.message, cases[i].msg) != NULL))
            fprintf(stderr, "  case %zu: message \"%s\"\n", i, e.message);
        CHECK(c == NULL);
    }
    /* A loopback http issuer is allowed (tests); a refresh-token alone
     * is enough (the id-token is fetched at the first request). */
    CHECK_INT(parse_user("    auth-provider: {name: oidc, config: {idp-issuer-url: \"http://127.0.0.1:5556/dex\", "
                         "client-id: a, refresh-token: r, id-token: \"\"}}\n", &c, &e), AIQ_OK);
    if (c && c->oidc) {
        CHECK(c->oidc->id_token == NULL);
        CHECK_STR(c->oidc->refresh_token, "r");
    }
    kube_config_free(c);
}

TEST(url_secure) {
    CHECK(kube_url_secure("https://dex.example"));
    CHECK(kube_url_secure("https://dex.example:8443/path"));
    CHECK(kube_url_secure("http://127.0.0.1:5556"));
    CHECK(kube_url_secure("http://127.1.2.3/x"));
    CHECK(kube_url_secure("http://localhost:80/"));
    CHECK(kube_url_secure("http://[::1]:8080/"));
    CHECK(kube_url_secure("http://[::1]"));
    CHECK(!kube_url_secure("http://dex.example"));
    CHECK(!kube_url_secure("http://127.0.0.1.evil.example/"));
    CHECK(!kube_url_secure("http://localhost.evil.example/"));
    CHECK(!kube_url_secure("http://127.0.0.1@evil.example/"));
    CHECK(!kube_url_secure("https://user@dex.example/"));
    CHECK(!kube_url_secure("http://[::1].x/"));
    CHECK(!kube_url_secure("http://128.0.0.1/"));
    CHECK(!kube_url_secure("ftp://127.0.0.1/"));
    CHECK(!kube_url_secure("https://"));
    CHECK(!kube_url_secure(NULL));
}

TEST(missing_file) {
    aiq_err e;
    struct kube_config *c = load("no-such.yaml", NULL, &e);
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_EIO);
    CHECK(strstr(e.message, "no-such.yaml") != NULL);
}

static aiq_rc parse(const char *text, struct kube_config **c, aiq_err *e) {
    aiq_err_clear(e);
    return kube_config_parse(text, strlen(text), NULL, NULL, c, e);
}

TEST(field_errors_name_the_path) {
    struct kube_config *c = NULL;
    aiq_err e;
    const char *base = "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n";
    char buf[1024];

    snprintf(buf, sizeof buf, "%sclusters:\n- name: k\n  cluster: {server: [a]}\n", base);
    CHECK_INT(parse(buf, &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "clusters[0].cluster.server");
    CHECK(strstr(e.message, "expected a string") != NULL);

    snprintf(buf, sizeof buf, "%sclusters:\n- name: k\n  cluster: {server: ftp://x}\n", base);
    CHECK_INT(parse(buf, &c, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "\"ftp://x\" is not an http(s) URL") != NULL);

    snprintf(buf, sizeof buf, "%sclusters:\n- name: k\n  cluster: {server: https://x, insecure-skip-tls-verify: maybe}\n", base);
    CHECK_INT(parse(buf, &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "clusters[0].cluster.insecure-skip-tls-verify");
    CHECK(strstr(e.message, "\"maybe\" is not a boolean") != NULL);

    snprintf(buf, sizeof buf, "%sclusters:\n- name: k\n  cluster: {server: https://x}\n", base);
    CHECK_INT(parse(buf, &c, &e), AIQ_ENOTFOUND);
    CHECK_STR(e.field, "contexts[0].context.user");

    snprintf(buf, sizeof buf, "%sclusters:\n- name: k\n  cluster: {server: https://x}\nusers:\n- name: u\n  user: {token: \"a\\nb\"}\n", base);
    CHECK_INT(parse(buf, &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "users[0].user.token");

    snprintf(buf, sizeof buf, "%sclusters:\n- name: k\n  cluster: {server: https://x}\nusers:\n- name: u\n  user: {client-certificate: c.pem}\n", base);
    CHECK_INT(parse(buf, &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "users[0].user.client-key");

    CHECK_INT(parse("", &c, &e), AIQ_EINVAL);
    CHECK_INT(parse("- a\n- b\n", &c, &e), AIQ_EINVAL);
    CHECK_INT(parse("contexts: {}\ncurrent-context: c\n", &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "contexts");
    CHECK(c == NULL);
}

TEST(size_cap) {
    size_t n = KUBE_CONFIG_MAX_BYTES + 1;
    char *big = malloc(n);
    struct kube_config *c = NULL;
    aiq_err e;
    CHECK(big != NULL);
    if (!big) return;
    memset(big, '#', n);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_parse(big, n, NULL, NULL, &c, &e), AIQ_ETOOBIG);
    CHECK(c == NULL);
    free(big);
}

TEST(kubeconfig_env_first_entry) {
    char list[2048];
    struct kube_config *c = NULL;
    aiq_err e;
    snprintf(list, sizeof list, "%s/test/fixtures/kubeconfig/insecure.yaml:/nonexistent/other",
             th_srcdir());
    setenv("KUBECONFIG", list, 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_load(NULL, NULL, &c, &e), AIQ_OK);
    CHECK(c && c->insecure == 1);
    kube_config_free(c);
    unsetenv("KUBECONFIG");
}

TEST(default_home_path) {
    struct kube_config *c = NULL;
    aiq_err e;
    const char *home = getenv("HOME");
    char saved[1024] = "";
    if (home) snprintf(saved, sizeof saved, "%s", home);
    unsetenv("KUBECONFIG");
    setenv("HOME", "/nonexistent-home", 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_load(NULL, NULL, &c, &e), AIQ_EIO);
    CHECK(strstr(e.message, "/nonexistent-home/.kube/config") != NULL);
    unsetenv("HOME");
    aiq_err_clear(&e);
    CHECK_INT(kube_config_load("", NULL, &c, &e), AIQ_ENOTFOUND);
    CHECK(c == NULL);
    if (home) setenv("HOME", saved, 1);
}

TEST(base64_variants) {
    struct kube_blob b;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_base64_decode("aGVsbG8=", 8, &b, &e), AIQ_OK);
    CHECK_STR((char *)b.data, "hello");
    free(b.data);
    CHECK_INT(kube_base64_decode("aGVs\nbG8", 8, &b, &e), AIQ_OK); /* no pad, wrapped */
    CHECK_STR((char *)b.data, "hello");
    free(b.data);
    CHECK_INT(kube_base64_decode("", 0, &b, &e), AIQ_OK);
    CHECK_INT(b.len, 0);
    free(b.data);
    CHECK_INT(kube_base64_decode("aGVsbG8=x", 9, &b, &e), AIQ_EINVAL);
    CHECK_INT(e.offset, 8);
    CHECK(b.data == NULL);
    aiq_err_clear(&e);
    CHECK_INT(kube_base64_decode("a", 1, &b, &e), AIQ_EINVAL);
    aiq_err_clear(&e);
    CHECK_INT(kube_base64_decode("aGVsbG8==", 9, &b, &e), AIQ_EINVAL);
    aiq_err_clear(&e);
    CHECK_INT(kube_base64_decode("aG\x01s", 4, &b, &e), AIQ_EINVAL);
    CHECK_INT(e.offset, 2);
}

TEST(in_cluster) {
    char dir[1024];
    struct kube_config *c = NULL;
    aiq_err e;
    snprintf(dir, sizeof dir, "%s/test/fixtures/kubeconfig/in-cluster", th_srcdir());

    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    aiq_err_clear(&e);
    CHECK_INT(kube_config_in_cluster(dir, &c, &e), AIQ_ENOTFOUND);
    CHECK(c == NULL);

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_in_cluster(dir, &c, &e), AIQ_OK);
    if (c) {
        CHECK_STR(c->server, "https://10.96.0.1:443");
        CHECK_STR(c->token, "sa-token-xyz");
        CHECK_STR(c->namespace_, "aiq-system");
        CHECK(ends_with(c->token_file, "/in-cluster/token"));
        CHECK(c->ca_data.data && strstr((char *)c->ca_data.data, "FAKESACA"));
    }
    kube_config_free(c);
    c = NULL;

    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_in_cluster(dir, &c, &e), AIQ_OK);
    if (c) CHECK_STR(c->server, "https://[fd00::1]:443");
    kube_config_free(c);
    c = NULL;

    setenv("KUBERNETES_SERVICE_PORT", "44x", 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_in_cluster(dir, &c, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "KUBERNETES_SERVICE_PORT");

    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    aiq_err_clear(&e);
    CHECK_INT(kube_config_in_cluster("/nonexistent-sa", &c, &e), AIQ_EIO);
    CHECK(strstr(e.message, "/nonexistent-sa/token") != NULL);
    CHECK(c == NULL);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST(auto_selection_order) {
    char dir[1024], file[1024];
    struct kube_config *c = NULL;
    aiq_err e;
    snprintf(dir, sizeof dir, "%s/test/fixtures/kubeconfig/in-cluster", th_srcdir());
    snprintf(file, sizeof file, "%s/test/fixtures/kubeconfig/insecure.yaml", th_srcdir());
    unsetenv("KUBECONFIG");
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.9", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    /* In a pod with no flag and no $KUBECONFIG: the service account. */
    aiq_err_clear(&e);
    CHECK_INT(kube_config_auto(NULL, NULL, dir, &c, &e), AIQ_OK);
    if (c) CHECK_STR(c->server, "https://10.0.0.9:6443");
    kube_config_free(c);
    c = NULL;
    /* $KUBECONFIG beats in-cluster. */
    setenv("KUBECONFIG", file, 1);
    CHECK_INT(kube_config_auto(NULL, NULL, dir, &c, &e), AIQ_OK);
    if (c) CHECK_STR(c->server, "https://kube.example:443");
    kube_config_free(c);
    c = NULL;
    /* An explicit path beats both. */
    snprintf(file, sizeof file, "%s/test/fixtures/kubeconfig/tokenfile.yaml", th_srcdir());
    CHECK_INT(kube_config_auto(file, NULL, dir, &c, &e), AIQ_OK);
    if (c) CHECK_STR(c->server, "http://127.0.0.1:8080");
    kube_config_free(c);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST(free_null) {
    kube_config_free(NULL);
    CHECK(1);
}
