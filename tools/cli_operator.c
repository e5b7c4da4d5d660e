/* cli_operator.c -- `kubectl aiq` asking the operator: through the
 * aggregated API or at --operator-url, and the live queue it answers
 * (see cli_operator.h). */
#include "tools/cli_operator.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/model.h"
#include "operator/kube_http.h"
#include "operator/kubeconfig.h"
#include "operator/status.h"
#include "tools/cli_snapshot.h"


/* A client for the operator's HTTP endpoint (--operator-url). On
 * loopback (a port-forward) it sends no credentials; to another host it
 * sends the kubeconfig's own (token, token file, exec plugin, OIDC): the
 * operator asks the API server who that is and whether RBAC lets them
 * read what they ask for (operator --api-remote, docs/operator.md). */
static aiq_rc operator_client(const struct cli_opts *o, const struct kube_client_opts *ko,
                              struct kube_client **kc, aiq_err *e) {
    struct kube_config cfg;
    const char *u = o->operator_url, *host = strstr(u, "://");
    host = host ? host + 3 : u;
    bool loop = strncmp(host, "127.", 4) == 0 || strncmp(host, "localhost", 9) == 0 ||
                strncmp(host, "[::1]", 5) == 0;
    memset(&cfg, 0, sizeof cfg);
    if (!loop && o->kcfg) {
        cfg.token = o->kcfg->token;
        cfg.token_file = o->kcfg->token_file;
        cfg.exec = o->kcfg->exec;
        cfg.oidc = o->kcfg->oidc;
    }
    cfg.server = (char *)u;
    return kube_client_create(&cfg, ko, kc, e);
}

#define AGGR_API "/apis/query.aiq.dev/v1alpha1"
#define AGGR_APISERVICE "v1alpha1.query.aiq.dev"

/* Where the operator is asked, for messages. */
const char *cli_operator_where(const struct cli_opts *o) {
    return o->operator_url ? o->operator_url : "the API server (APIService " AGGR_APISERVICE ")";
}

/* After a failed request through the API server: says in e why, when the
 * APIService is missing or not Available (kc: the API server's client). */
static void aggr_diagnose(struct kube_client *kc, aiq_err *e) {
    json_object *as = NULL;
    aiq_err ae;
    aiq_err_clear(&ae);
    if (e->http_status != 404 && e->http_status != 503)
        return; /* a refusal or the operator's own answer: its message says it */
    if (kube_get(kc, "/apis/apiregistration.k8s.io/v1/apiservices/" AGGR_APISERVICE, &as, &ae) !=
        AIQ_OK) {
        if (ae.http_status == 404)
            snprintf(e->message, sizeof e->message,
                     "the APIService " AGGR_APISERVICE " is not installed: apply "
                     "crds/aggregated-api.yaml and run the operator with --aggregated-addr "
                     "(docs/admin-guide.md \"The aggregated API\"), or pass --operator-url");
        else if (e->http_status == 404) /* cannot read APIServices: say what it may be */
            snprintf(e->message, sizeof e->message,
                     "%.300s (is the APIService " AGGR_APISERVICE " installed? "
                     "docs/admin-guide.md \"The aggregated API\")", ae.message);
        return;
    }
    json_object *conds = aiq_jget(aiq_jget(as, "status"), "conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (aiq_jstr(c, "type") && strcmp(aiq_jstr(c, "type"), "Available") == 0 && aiq_jstr(c, "status") &&
            strcmp(aiq_jstr(c, "status"), "True") != 0) {
            char was[200];
            snprintf(was, sizeof was, "%.199s", e->message);
            /* The condition's reason and message come first; a long
             * message cuts the hint and the API server's words, and the
             * cut is shown. */
            if (snprintf(e->message, sizeof e->message,
                         "the APIService " AGGR_APISERVICE " is not available (%.80s: %.300s); "
                         "check the operator's --aggregated-addr, its Service and caBundle "
                         "(kubectl get apiservice " AGGR_APISERVICE " -o yaml); the API server "
                         "said: %.200s",
                         aiq_jstr(c, "reason") ? aiq_jstr(c, "reason") : "?",
                         aiq_jstr(c, "message") ? aiq_jstr(c, "message") : "", was) >=
                (int)sizeof e->message)
                memcpy(e->message + sizeof e->message - 4, "...", 4);
        }
    }
    json_object_put(as);
}

/* GETs from the operator: api_path (under AGGR_API) through the API
 * server with the kubeconfig's credentials, or http_path from
 * --operator-url when it is set. *out is the answer, also for an error
 * status that carries a JSON body. */
aiq_rc cli_operator_get(const struct cli_opts *o, const char *api_path, const char *http_path,
                           json_object **out, aiq_err *e) {
    struct kube_client *kc = NULL;
    struct kube_client_opts ko = {.timeout_ms = 8000, .connect_timeout_ms = 1000,
                                  .max_body = 64u << 20, .user_agent = "kubectl-aiq/0.1"};
    char path[2048];
    aiq_rc rc;
    if (!o->operator_url) {
        snprintf(path, sizeof path, AGGR_API "%s", api_path);
        if ((rc = kube_get(o->kc, path, out, e)) != AIQ_OK)
            aggr_diagnose(o->kc, e);
        return rc;
    }
    rc = operator_client(o, &ko, &kc, e);
    if (rc == AIQ_OK)
        rc = kube_get(kc, http_path, out, e);
    kube_client_free(kc);
    return rc;
}

/* The live queue from the operator (GET /queue, see docs/operator.md
 * "Status writes"): the waiting jobs of ns (NULL: all), or the one job
 * name. NULL with e set when the operator cannot answer. */
json_object *cli_live_queue(const struct cli_opts *o, const char *ns, const char *name, aiq_err *e) {
    char path[3 * 2 * (AIQ_MAX_NAME + 1) + 64], nesc[3 * (AIQ_MAX_NAME + 1)] = "",
        jesc[3 * (AIQ_MAX_NAME + 1)] = "", api[2 * (AIQ_MAX_NAME + 1) + 64];
    json_object *doc = NULL;
    if ((ns && kube_query_escape(nesc, sizeof nesc, ns, e) != AIQ_OK) ||
        (name && kube_query_escape(jesc, sizeof jesc, name, e) != AIQ_OK))
        return NULL;
    snprintf(path, sizeof path, "/queue?namespace=%s%s%s", nesc, name ? "&name=" : "", jesc);
    /* ns and name are Kubernetes names (from the API server): path-safe */
    if (ns && *ns)
        snprintf(api, sizeof api, "/namespaces/%s/queues%s%s", ns, name ? "/" : "",
                 name ? name : "");
    else
        snprintf(api, sizeof api, "/queues");
    if (cli_operator_get(o, api, path, &doc, e) != AIQ_OK || !cli_items_of(doc)) {
        json_object_put(doc);
        if (!e->message[0])
            snprintf(e->message, sizeof e->message, "no items in the answer");
        return NULL;
    }
    return doc;
}

/* Takes a live item's position, level, score, estimate, reason and
 * message into j. */
void cli_live_apply(struct cli_job *j, json_object *it) {
    json_object *sc = aiq_jget(it, "score");
    j->position = (int)cli_jnum(it, "position", j->position);
    if (aiq_jstr(it, "level"))
        snprintf(j->level, sizeof j->level, "%s", aiq_jstr(it, "level"));
    if (sc && !json_object_is_type(sc, json_type_null)) {
        j->has_score = true;
        j->score = json_object_get_double(sc);
    }
    j->eta = aiq_jstr(it, "estimatedStartTime") ? opst_parse_time(aiq_jstr(it, "estimatedStartTime")) : 0;
    if (aiq_jstr(it, "reason"))
        snprintf(j->reason, sizeof j->reason, "%s", aiq_jstr(it, "reason"));
    if (aiq_jstr(it, "message"))
        snprintf(j->message, sizeof j->message, "%s", aiq_jstr(it, "message"));
}

