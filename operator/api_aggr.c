/* api_aggr.c -- the aggregated API listener (see api_aggr.h): a TLS
 * libmicrohttpd daemon that checks the front-proxy client certificate
 * with GnuTLS, believes X-Remote-User / X-Remote-Group only then, asks the
 * API server about the user (api_auth.h) and answers with the data of
 * /queue (visibility.h) and /journal (http_api.h). */
#include "operator/api_aggr.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "operator/api_auth.h"

#define OPAGGR_MAX_PEM (1u << 20) /* a PEM file larger than 1 MiB is a mistake */
#define OPAGGR_MAX_GROUPS 32
#define OPAGGR_PREFIX "/apis/" OPAGGR_GROUP

struct opaggr {
    struct MHD_Daemon *httpd;
    int port;
    opauth *auth; /* owned: this thread's own API client */
    opapi *api;   /* borrowed */
    opvis *vis;   /* borrowed */
    opmetrics *m; /* borrowed: the leader flag */
    char *cert, *key, *ca; /* PEM text MHD reads (kept while it runs) */
    char *allowed;         /* copy of allowed_names, "" when any */
};

/* ---- pure parts ------------------------------------------------------- */

/* Copies one path segment starting at p (up to '/' or end) into out;
 * returns the byte after it, or NULL when it is empty or too long. */
static const char *opaggr_seg(const char *p, char *out, size_t cap) {
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= cap)
        return NULL;
    memcpy(out, p, n);
    out[n] = '\0';
    return p + n;
}

int opaggr_parse_path(const char *url, struct opaggr_route *r, char *msg, size_t cap) {
    static const char *paths = "the paths are /apis/" OPAGGR_GROUP "[/" OPAGGR_VERSION
                               "[/queues | /utilisations | /namespaces/NS/queues[/NAME] | "
                               "/namespaces/NS/journals/NAME]]";
    memset(r, 0, sizeof *r);
    const char *v = OPAGGR_PREFIX "/" OPAGGR_VERSION;
    if (strcmp(url, OPAGGR_PREFIX) == 0 || strcmp(url, OPAGGR_PREFIX "/") == 0) {
        r->kind = OPAGGR_GROUP_DOC;
        return 0;
    }
    if (strncmp(url, v, strlen(v)) != 0)
        goto not_found;
    const char *p = url + strlen(v);
    if (!*p || strcmp(p, "/") == 0) {
        r->kind = OPAGGR_RESOURCES;
        return 0;
    }
    if (strcmp(p, "/queues") == 0) {
        r->kind = OPAGGR_QUEUE;
        return 0;
    }
    if (strcmp(p, "/utilisations") == 0) {
        r->kind = OPAGGR_UTIL;
        return 0;
    }
    char res[16];
    if (strncmp(p, "/namespaces/", 12) != 0 || !(p = opaggr_seg(p + 12, r->ns, sizeof r->ns)) ||
        *p != '/' || !(p = opaggr_seg(p + 1, res, sizeof res)))
        goto not_found;
    if (*p == '/' && !(p = opaggr_seg(p + 1, r->name, sizeof r->name)))
        goto not_found;
    if (*p)
        goto not_found;
    if (strcmp(res, "queues") == 0) {
        r->kind = OPAGGR_QUEUE;
        return 0;
    }
    if (strcmp(res, "journals") == 0 && r->name[0]) {
        r->kind = OPAGGR_JOURNAL;
        return 0;
    }
not_found:
    snprintf(msg, cap, "no such path %.200s: %s", url, paths);
    return 404;
}

/* Whether name is one of the comma-separated list. */
static bool opaggr_listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && strncmp(p, name, n) == 0)
            return true;
        p += k;
        if (*p == ',')
            p++;
    }
    return false;
}

int opaggr_decide(bool has_cert, bool verified, const char *cn, const char *allowed,
                  const char *user, char *msg, size_t cap) {
    if (!has_cert) {
        snprintf(msg, cap, "no client certificate: the " OPAGGR_GROUP " API answers only "
                           "kube-apiserver's front proxy (use kubectl aiq or "
                           "kubectl get --raw /apis/" OPAGGR_GROUP "/...)");
        return 401;
    }
    if (!verified) {
        snprintf(msg, cap, "the client certificate (CN \"%.100s\") does not verify against "
                           "--requestheader-client-ca-file for client use", cn ? cn : "");
        return 401;
    }
    if (allowed && *allowed && (!cn || !opaggr_listed(allowed, cn))) {
        snprintf(msg, cap, "the client certificate's CN \"%.100s\" is not in "
                           "--requestheader-allowed-names (%.200s)", cn ? cn : "", allowed);
        return 401;
    }
    if (!user || !*user) {
        snprintf(msg, cap, "no X-Remote-User header: the front proxy did not say who asks");
        return 401;
    }
    return 0;
}

/* ---- TLS peer --------------------------------------------------------- */

/* Checks the peer certificate of c: *has_cert, *verified (chain to the
 * trusted CA, client-auth purpose) and its CN into cn (cap bytes). */
static void opaggr_peer(struct MHD_Connection *c, bool *has_cert, bool *verified, char *cn,
                        size_t cap) {
    *has_cert = *verified = false;
    cn[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return;
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned int n = 0;
    const gnutls_datum_t *chain = gnutls_certificate_get_peers(s, &n);
    if (!chain || n == 0)
        return;
    *has_cert = true;
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
    unsigned int status = 1;
    *verified = gnutls_certificate_verify_peers(s, &purpose, 1, &status) == GNUTLS_E_SUCCESS &&
                status == 0;
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0)
        return; /* no CN: an allowed-names list then refuses the peer */
    size_t len = cap - 1;
    if (gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) < 0 ||
        gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &len) < 0)
        cn[0] = '\0';
    gnutls_x509_crt_deinit(crt);
}

/* ---- replies ---------------------------------------------------------- */

static enum MHD_Result opaggr_reply(struct MHD_Connection *c, unsigned code, char *body,
                                    size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

/* Replies with o (taken) as JSON. */
static enum MHD_Result opaggr_json(struct MHD_Connection *c, unsigned code, json_object *o) {
    size_t n = 0;
    const char *t = o ? json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n) : NULL;
    char *body = t ? malloc(n + 1) : NULL;
    if (body)
        memcpy(body, t, n + 1);
    json_object_put(o);
    if (!body)
        return MHD_NO;
    return opaggr_reply(c, code, body, n);
}

static const char *opaggr_reason(unsigned code) {
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 503: return "ServiceUnavailable";
    default: return "InternalError";
    }
}

/* A Kubernetes Status for an error. Out of memory: no answer (MHD_NO
 * closes the connection), never a Status missing a member. */
static enum MHD_Result opaggr_status(struct MHD_Connection *c, unsigned code, const char *msg) {
    json_object *o = json_object_new_object();
    bool failed = !o;
    aiq_jset(o, "kind", json_object_new_string("Status"), &failed);
    aiq_jset(o, "apiVersion", json_object_new_string("v1"), &failed);
    aiq_jset(o, "metadata", json_object_new_object(), &failed);
    aiq_jset(o, "status", json_object_new_string("Failure"), &failed);
    aiq_jset(o, "message", json_object_new_string(msg), &failed);
    aiq_jset(o, "reason", json_object_new_string(opaggr_reason(code)), &failed);
    aiq_jset(o, "code", json_object_new_int((int)code), &failed);
    if (failed) {
        json_object_put(o);
        return MHD_NO;
    }
    return opaggr_json(c, code, o);
}

/* ---- discovery -------------------------------------------------------- */

/* One resource of the APIResourceList, or NULL when out of memory. */
static json_object *opaggr_resource(const char *name, const char *kind) {
    json_object *r = json_object_new_object(), *verbs = json_object_new_array();
    bool util = strcmp(name, "utilisations") == 0; /* cluster-wide, list only */
    bool failed = !r;
    aiq_jset(r, "name", json_object_new_string(name), &failed);
    aiq_jset(r, "singularName", json_object_new_string(""), &failed);
    aiq_jset(r, "namespaced", json_object_new_boolean(!util), &failed);
    aiq_jset(r, "kind", json_object_new_string(kind), &failed);
    if (!util)
        aiq_jpush(verbs, json_object_new_string("get"), &failed);
    if (util || strcmp(name, "queues") == 0)
        aiq_jpush(verbs, json_object_new_string("list"), &failed);
    aiq_jset(r, "verbs", verbs, &failed);
    if (failed) {
        json_object_put(r);
        return NULL;
    }
    return r;
}

/* The discovery document of kind (the group, or its resources), or NULL
 * when out of memory. */
static json_object *opaggr_discovery(enum opaggr_kind kind) {
    json_object *o = json_object_new_object();
    bool failed = !o;
    if (kind == OPAGGR_RESOURCES) {
        json_object *res = json_object_new_array();
        aiq_jpush(res, opaggr_resource("queues", "Queue"), &failed);
        aiq_jpush(res, opaggr_resource("journals", "Journal"), &failed);
        aiq_jpush(res, opaggr_resource("utilisations", "Utilisation"), &failed);
        aiq_jset(o, "kind", json_object_new_string("APIResourceList"), &failed);
        aiq_jset(o, "apiVersion", json_object_new_string("v1"), &failed);
        aiq_jset(o, "groupVersion", json_object_new_string(OPAGGR_GROUP "/" OPAGGR_VERSION),
                 &failed);
        aiq_jset(o, "resources", res, &failed);
    } else {
        json_object *gv = json_object_new_object(), *vs = json_object_new_array();
        aiq_jset(gv, "groupVersion", json_object_new_string(OPAGGR_GROUP "/" OPAGGR_VERSION),
                 &failed);
        aiq_jset(gv, "version", json_object_new_string(OPAGGR_VERSION), &failed);
        aiq_jpush(vs, json_object_get(gv), &failed); /* gv NULL: NULL, a failure */
        aiq_jset(o, "kind", json_object_new_string("APIGroup"), &failed);
        aiq_jset(o, "apiVersion", json_object_new_string("v1"), &failed);
        aiq_jset(o, "name", json_object_new_string(OPAGGR_GROUP), &failed);
        aiq_jset(o, "versions", vs, &failed);
        aiq_jset(o, "preferredVersion", gv, &failed);
    }
    if (failed) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* ---- requests --------------------------------------------------------- */

struct opaggr_groups {
    const char *v[OPAGGR_MAX_GROUPS];
    size_t n;
};

/* MHD header iterator: collects every X-Remote-Group value. */
static enum MHD_Result opaggr_group(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    struct opaggr_groups *g = cls;
    (void)kind;
    if (strcasecmp(key, "X-Remote-Group") == 0 && value && g->n < OPAGGR_MAX_GROUPS)
        g->v[g->n++] = value;
    return MHD_YES;
}

/* The data of a queue or journal request, once the caller may see it. */
static enum MHD_Result opaggr_data(opaggr *a, struct MHD_Connection *c,
                                   const struct opaggr_route *r) {
    char *body = NULL;
    size_t len = 0;
    if (r->kind == OPAGGR_QUEUE) {
        if (!opmetrics_leader(a->m))
            return opaggr_status(c, 503, "this replica is not the leader: it runs no queue cycles");
        int code = opvis_ask(a->vis, r->ns, r->name[0] ? r->name : NULL, 5.0, &body, &len);
        return body ? opaggr_reply(c, (unsigned)code, body, len) : MHD_NO;
    }
    if (r->kind == OPAGGR_UTIL) {
        if (!(body = opmetrics_util_json(a->m, &len)))
            return opaggr_status(c, 500, "out of memory");
        return opaggr_reply(c, 200, body, len);
    }
    char job[2 * sizeof r->ns];
    snprintf(job, sizeof job, "%s/%s", r->ns, r->name);
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = opapi_journal_query(
        a->api, job, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "uid"),
        MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit"), &body, &len, &e);
    if (rc != AIQ_OK)
        return opaggr_status(c, rc == AIQ_EINVAL ? 400 : 500, e.message);
    return opaggr_reply(c, 200, body, len);
}

static enum MHD_Result opaggr_handler(void *cls, struct MHD_Connection *c, const char *url,
                                      const char *method, const char *version,
                                      const char *upload, size_t *upload_size, void **state) {
    opaggr *a = cls;
    (void)version;
    (void)upload;
    (void)state;
    if (*upload_size)
        *upload_size = 0; /* no bodies expected; drop them */
    char msg[600], cn[256];
    bool has_cert, verified;
    opaggr_peer(c, &has_cert, &verified, cn, sizeof cn);
    const char *user = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Remote-User");
    int code = opaggr_decide(has_cert, verified, cn, a->allowed, user, msg, sizeof msg);
    if (code)
        return opaggr_status(c, (unsigned)code, msg);
    if (strcmp(method, "GET") != 0)
        return opaggr_status(c, 405, "the " OPAGGR_GROUP " API is read-only (GET)");
    struct opaggr_route r;
    if ((code = opaggr_parse_path(url, &r, msg, sizeof msg)) != 0)
        return opaggr_status(c, (unsigned)code, msg);
    if (r.kind == OPAGGR_GROUP_DOC || r.kind == OPAGGR_RESOURCES) {
        json_object *doc = opaggr_discovery(r.kind);
        return doc ? opaggr_json(c, 200, doc) : opaggr_status(c, 500, "out of memory");
    }
    struct opaggr_groups g = {.n = 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, opaggr_group, &g);
    code = r.kind == OPAGGR_JOURNAL
               ? opauth_check_user(a->auth, user, g.v, g.n, "get", "journal", r.ns, msg, sizeof msg)
               : opauth_check_user(a->auth, user, g.v, g.n, "list", NULL, r.ns, msg, sizeof msg);
    if (code != 200)
        return opaggr_status(c, (unsigned)code, msg);
    return opaggr_data(a, c, &r);
}

/* ---- setup ------------------------------------------------------------ */

/* Reads a PEM file named by flag into a new string. */
static char *opaggr_read(const char *flag, const char *path, aiq_err *e) {
    if (!path || !*path) {
        aiq_err_field(e, AIQ_EINVAL, flag, "%s: required with --aggregated-addr", flag);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        aiq_err_field(e, AIQ_EIO, flag, "%s: cannot open \"%.300s\"", flag, path);
        return NULL;
    }
    char *buf = malloc(OPAGGR_MAX_PEM + 2); /* one byte past the cap tells "too large" */
    size_t n = buf ? fread(buf, 1, OPAGGR_MAX_PEM + 1, f) : 0;
    bool bad = ferror(f) != 0;
    fclose(f); /* read-only: nothing to lose on close */
    if (buf)
        buf[n] = '\0';
    if (!buf || bad || n == 0 || n > OPAGGR_MAX_PEM || !strstr(buf, "-----BEGIN ")) {
        if (buf)
            aiq_err_field(e, AIQ_EINVAL, flag, "%s: \"%.300s\" is %s", flag, path,
                          bad ? "unreadable" : n == 0 ? "empty"
                                             : n > OPAGGR_MAX_PEM ? "larger than 1 MiB"
                                                                  : "not PEM");
        else
            aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        free(buf);
        return NULL;
    }
    return buf;
}

opaggr *opaggr_start(const struct opaggr_opts *o, const struct kube_config *cfg, opapi *api,
                     opvis *vis, opmetrics *m, aiq_err *e) {
    struct sockaddr_in sa;
    if (opapi_parse_addr(o->addr, &sa) != 0) {
        aiq_err_field(e, AIQ_EINVAL, "--aggregated-addr",
                      "--aggregated-addr: expected IPv4-host:port, got \"%.100s\"", o->addr);
        return NULL;
    }
    opaggr *a = calloc(1, sizeof *a);
    if (!a) {
        aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        return NULL;
    }
    a->api = api;
    a->vis = vis;
    a->m = m;
    if (!(a->cert = opaggr_read("--aggregated-tls-cert", o->cert, e)) ||
        !(a->key = opaggr_read("--aggregated-tls-key", o->key, e)) ||
        !(a->ca = opaggr_read("--requestheader-client-ca-file", o->client_ca, e)))
        goto out_free;
    if (!(a->allowed = strdup(o->allowed_names ? o->allowed_names : ""))) {
        aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    if (!(a->auth = opauth_create(cfg, e)))
        goto out_free;
    /* With a trust list, MHD asks every client for a certificate (but does
     * not require one): opaggr_peer decides per request. */
    a->httpd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        opaggr_handler, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_HTTPS_MEM_CERT, a->cert, MHD_OPTION_HTTPS_MEM_KEY, a->key,
        MHD_OPTION_HTTPS_MEM_TRUST, a->ca, MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!a->httpd) {
        aiq_err_field(e, AIQ_EIO, "--aggregated-addr",
                      "--aggregated-addr: cannot serve TLS on %.100s (address in use, or the "
                      "certificate and key do not match or are not PEM)", o->addr);
        goto out_free;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(a->httpd, MHD_DAEMON_INFO_BIND_PORT);
    a->port = info ? (int)info->port : ntohs(sa.sin_port);
    return a;
out_free:
    opaggr_free(a);
    return NULL;
}

void opaggr_free(opaggr *a) {
    if (!a)
        return;
    if (a->httpd)
        MHD_stop_daemon(a->httpd);
    opauth_free(a->auth);
    free(a->cert);
    free(a->key);
    free(a->ca);
    free(a->allowed);
    free(a);
}

int opaggr_port(const opaggr *a) {
    return a && a->httpd ? a->port : 0;
}
