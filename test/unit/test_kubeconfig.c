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

TEST(exec_plugin_unsupported) {
    aiq_err e;
    struct kube_config *c = load("exec.yaml", NULL, &e);
    CHECK(c == NULL);
    CHECK_INT(e.code, AIQ_EUNSUPPORTED);
    CHECK_STR(e.field, "users[0].user.exec");
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
