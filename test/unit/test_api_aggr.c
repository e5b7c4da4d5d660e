/* test_api_aggr.c -- the aggregated API's decisions (operator/api_aggr.c):
 * which front-proxy requests are believed (certificate present, verified,
 * CN allowed, user named), which paths exist and what they ask for, and
 * that a listener with a missing or non-PEM file fails naming the flag.
 * The TLS handshake itself is exercised end to end (api_aggregated.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "operator/api_aggr.h"
#include "test/unit/th.h"

TEST(decide_trusts_headers_only_from_a_verified_allowed_cert) {
    char msg[600];
    CHECK_INT(opaggr_decide(true, true, "front-proxy-client", "front-proxy-client", "alice", msg,
                            sizeof msg), 0);
    CHECK_INT(opaggr_decide(true, true, "anything", NULL, "alice", msg, sizeof msg), 0);
    CHECK_INT(opaggr_decide(true, true, "anything", "", "alice", msg, sizeof msg), 0);
    CHECK_INT(opaggr_decide(true, true, "b", "a,b,c", "alice", msg, sizeof msg), 0);

    CHECK_INT(opaggr_decide(false, false, "", "front-proxy-client", "alice", msg, sizeof msg), 401);
    CHECK(strstr(msg, "no client certificate") != NULL);
    CHECK_INT(opaggr_decide(true, false, "front-proxy-client", "front-proxy-client", "alice", msg,
                            sizeof msg), 401);
    CHECK(strstr(msg, "does not verify against --requestheader-client-ca-file") != NULL);
    CHECK(strstr(msg, "front-proxy-client") != NULL);
    CHECK_INT(opaggr_decide(true, true, "mallory", "front-proxy-client", "alice", msg, sizeof msg),
              401);
    CHECK(strstr(msg, "CN \"mallory\" is not in --requestheader-allowed-names") != NULL);
    /* a prefix or a longer name of an allowed one is not it */
    CHECK_INT(opaggr_decide(true, true, "front", "front-proxy-client", "a", msg, sizeof msg), 401);
    CHECK_INT(opaggr_decide(true, true, "front-proxy-client-x", "front-proxy-client", "a", msg,
                            sizeof msg), 401);
    CHECK_INT(opaggr_decide(true, true, "", "front-proxy-client", "a", msg, sizeof msg), 401);
    CHECK_INT(opaggr_decide(true, true, "x", NULL, NULL, msg, sizeof msg), 401);
    CHECK(strstr(msg, "no X-Remote-User") != NULL);
    CHECK_INT(opaggr_decide(true, true, "x", NULL, "", msg, sizeof msg), 401);
}

TEST(paths_map_to_discovery_queue_and_journal) {
    struct opaggr_route r;
    char msg[600];
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev", &r, msg, sizeof msg), 0);
    CHECK_INT(r.kind, OPAGGR_GROUP_DOC);
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev/v1alpha1", &r, msg, sizeof msg), 0);
    CHECK_INT(r.kind, OPAGGR_RESOURCES);
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev/v1alpha1/queues", &r, msg, sizeof msg), 0);
    CHECK_INT(r.kind, OPAGGR_QUEUE);
    CHECK_STR(r.ns, "");
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev/v1alpha1/namespaces/team-a/queues", &r, msg,
                                sizeof msg), 0);
    CHECK_INT(r.kind, OPAGGR_QUEUE);
    CHECK_STR(r.ns, "team-a");
    CHECK_STR(r.name, "");
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev/v1alpha1/namespaces/team-a/queues/j1", &r,
                                msg, sizeof msg), 0);
    CHECK_STR(r.name, "j1");
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev/v1alpha1/namespaces/t/journals/j1", &r, msg,
                                sizeof msg), 0);
    CHECK_INT(r.kind, OPAGGR_JOURNAL);
    CHECK_STR(r.ns, "t");
    CHECK_STR(r.name, "j1");
    CHECK_INT(opaggr_parse_path("/apis/query.aiq.dev/v1alpha1/utilisations", &r, msg, sizeof msg),
              0);
    CHECK_INT(r.kind, OPAGGR_UTIL);
    CHECK_STR(r.ns, "");
    const char *bad[] = {"/", "/apis", "/apis/query.aiq.devx", "/apis/query.aiq.dev/v1",
                         "/apis/query.aiq.dev/v1alpha1/journals",
                         "/apis/query.aiq.dev/v1alpha1/utilisations/n1",
                         "/apis/query.aiq.dev/v1alpha1/namespaces/t/utilisations",
                         "/apis/query.aiq.dev/v1alpha1/namespaces/t/journals",
                         "/apis/query.aiq.dev/v1alpha1/namespaces/t/journals/",
                         "/apis/query.aiq.dev/v1alpha1/namespaces//queues",
                         "/apis/query.aiq.dev/v1alpha1/namespaces/t/pods",
                         "/apis/query.aiq.dev/v1alpha1/namespaces/t/queues/a/b",
                         "/apis/query.aiq.dev/v1alpha1/queuesx"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(opaggr_parse_path(bad[i], &r, msg, sizeof msg), 404);
        CHECK(strstr(msg, "/namespaces/NS/journals/NAME") != NULL);
    }
    char longns[400];
    memset(longns, 'n', sizeof longns);
    snprintf(longns, sizeof longns, "/apis/query.aiq.dev/v1alpha1/namespaces/%0300d/queues", 0);
    CHECK_INT(opaggr_parse_path(longns, &r, msg, sizeof msg), 404);
}

TEST(start_names_the_flag_of_a_missing_or_bad_file) {
    char dir[] = "/tmp/aiq-aggr.XXXXXX", pem[64], txt[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(pem, sizeof pem, "%s/x.pem", dir);
    snprintf(txt, sizeof txt, "%s/x.txt", dir);
    FILE *f = fopen(pem, "w");
    CHECK(f != NULL);
    fputs("-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    f = fopen(txt, "w");
    CHECK(f != NULL);
    fputs("hello\n", f);
    fclose(f);
    aiq_err e;
    struct opaggr_opts o = {.addr = "127.0.0.1:0", .cert = pem, .key = pem, .client_ca = NULL};
    aiq_err_clear(&e);
    CHECK(opaggr_start(&o, NULL, NULL, NULL, NULL, &e) == NULL);
    CHECK_STR(e.field, "--requestheader-client-ca-file");
    o.client_ca = txt;
    aiq_err_clear(&e);
    CHECK(opaggr_start(&o, NULL, NULL, NULL, NULL, &e) == NULL);
    CHECK(strstr(e.message, "not PEM") != NULL);
    o.cert = "/nonexistent/c.pem";
    aiq_err_clear(&e);
    CHECK(opaggr_start(&o, NULL, NULL, NULL, NULL, &e) == NULL);
    CHECK_STR(e.field, "--aggregated-tls-cert");
    o.addr = "nohost";
    aiq_err_clear(&e);
    CHECK(opaggr_start(&o, NULL, NULL, NULL, NULL, &e) == NULL);
    CHECK_STR(e.field, "--aggregated-addr");
    unlink(pem);
    unlink(txt);
    rmdir(dir);
}
