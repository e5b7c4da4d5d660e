/* aggregator.c -- the local cluster's aggregation layer, as kube-apiserver
 * runs it with --enable-aggregator-routing: an APIService
 * (apiregistration.k8s.io/v1) with a spec.service makes /apis/GROUP/VERSION/...
 * a proxy to one ready address of that Service's EndpointSlices, over
 * TLS verified against spec.caBundle for the name SERVICE.NS.svc, with
 * the front-proxy client certificate and the authenticated caller in
 * X-Remote-User / X-Remote-Group. The caller is authorized first, on the
 * aggregated resource (RBAC), as the real server does. Each second the
 * simulator thread checks every APIService (Service, port, endpoints,
 * then a GET of its discovery document as system:kube-aggregator) and
 * writes status.conditions Available with the real reasons; a new
 * APIService is routed from that check on (within a second), so requests
 * cost no lookup while there is none.
 *
 * The front-proxy CA and client pair are made with the openssl tool at
 * start when the server serves TLS (--tls); without it an aggregated
 * request is 503 saying so. The APIResourceList an Available APIService
 * answered is kept and merged into /apis discovery, legacy and v2, as the
 * real aggregator does. */
#include "test/apiserver/apisrv_int.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "operator/kubeconfig.h"

#define AGGR_KEY "apiregistration.k8s.io/apiservices"
#define AGGR_SLICES "discovery.k8s.io/endpointslices"
#define AGGR_MAX_BODY (16u << 20)
#define AGGR_CHECK_S 1.0

/* Where and how to reach an APIService's backend. */
struct aggr_backend {
    char host[300];     /* SERVICE.NS.svc: the name the certificate must have */
    char addr[64];      /* the EndpointSlice address */
    int port;
    struct kube_blob ca; /* decoded caBundle (owned), or empty */
    bool insecure;
    char reason[64], msg[512]; /* why it cannot be reached */
};

/* ---- front-proxy material ---------------------------------------------- */

static void aggr_path(const apisrv *s, const char *file, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", s->fp_dir, file);
}

/* See apisrv_int.h. */
aiq_rc apisrv__aggr_init(apisrv *s, aiq_err *err) {
    char tmpl[] = "/tmp/aiq-apiserver-fp.XXXXXX", ca[300], cak[300], cl[300], clk[300], csr[300],
         ext[300];
    if (!mkdtemp(tmpl)) return aiq_err_set(err, AIQ_EIO, "mkdtemp for the front-proxy keys failed");
    if (!(s->fp_dir = strdup(tmpl))) return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    aggr_path(s, "front-proxy-ca.crt", ca, sizeof ca);
    aggr_path(s, "front-proxy-ca.key", cak, sizeof cak);
    aggr_path(s, "front-proxy-client.crt", cl, sizeof cl);
    aggr_path(s, "front-proxy-client.key", clk, sizeof clk);
    aggr_path(s, "client.csr", csr, sizeof csr);
    aggr_path(s, "client.ext", ext, sizeof ext);
    FILE *f = fopen(ext, "w");
    if (!f) return aiq_err_set(err, AIQ_EIO, "cannot write %s", ext);
    fputs("extendedKeyUsage=clientAuth\n", f);
    if (fclose(f) != 0) return aiq_err_set(err, AIQ_EIO, "cannot write %s", ext);
    char *mk_ca[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                     "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", cak, "-out", ca,
                     "-days", "30", "-subj", "/CN=aiq-apiserver-front-proxy-ca", NULL};
    char *mk_csr[] = {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                      "-nodes", "-keyout", clk, "-out", csr, "-subj",
                      "/CN=" APISRV__FRONT_PROXY_CN, NULL};
    char *sign[] = {"openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cak,
                    "-CAcreateserial", "-days", "30", "-extfile", ext, "-out", cl, NULL};
    if (apisrv__run_tool(mk_ca) != 0 || apisrv__run_tool(mk_csr) != 0 ||
        apisrv__run_tool(sign) != 0)
        return aiq_err_set(err, AIQ_EIO, "openssl could not make the front-proxy certificates "
                                         "(is the openssl tool installed?)");
    return AIQ_OK;
}

/* See apisrv_int.h. */
void apisrv__aggr_free(apisrv *s) {
    static const char *files[] = {"front-proxy-ca.crt", "front-proxy-ca.key",
                                  "front-proxy-client.crt", "front-proxy-client.key",
                                  "front-proxy-ca.srl", "client.csr", "client.ext"};
    char p[300];
    if (!s->fp_dir) return;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        aggr_path(s, files[i], p, sizeof p);
        unlink(p); /* some may not exist */
    }
    rmdir(s->fp_dir);
    free(s->fp_dir);
    s->fp_dir = NULL;
}

/* ---- resolving the backend (lock held) --------------------------------- */

struct aggr_scan {
    const char *svc, *port_name;
    struct aggr_backend *b;
    bool any;
};

/* One EndpointSlice row: the first ready address of the Service's port. */
static int aggr_slice_row(void *u, const char *key, const char *ns, const char *name,
                          const char *json) {
    struct aggr_scan *sc = u;
    json_object *o = apisrv__parse(json), *eps = NULL, *ports = NULL;
    (void)key; (void)ns; (void)name;
    const char *owner = NULL;
    json_object *labels = o ? apisrv__obj_child(apisrv__obj_child(o, "metadata"), "labels") : NULL, *v = NULL;
    if (labels && json_object_object_get_ex(labels, "kubernetes.io/service-name", &v))
        owner = json_object_get_string(v);
    if (!owner || strcmp(owner, sc->svc) != 0) goto out;
    sc->any = true;
    if (!json_object_object_get_ex(o, "endpoints", &eps) || !json_object_object_get_ex(o, "ports", &ports))
        goto out;
    for (size_t i = 0; i < json_object_array_length(eps); i++) {
        json_object *ep = json_object_array_get_idx(eps, i), *c = NULL, *rd = NULL, *addrs = NULL;
        if (json_object_object_get_ex(ep, "conditions", &c) && json_object_object_get_ex(c, "ready", &rd) &&
            !json_object_get_boolean(rd))
            continue;
        if (!json_object_object_get_ex(ep, "addresses", &addrs) || json_object_array_length(addrs) == 0)
            continue;
        for (size_t k = 0; k < json_object_array_length(ports); k++) {
            json_object *p = json_object_array_get_idx(ports, k), *pn = NULL, *pp = NULL;
            const char *pname = json_object_object_get_ex(p, "name", &pn) ? json_object_get_string(pn) : "";
            if (strcmp(pname, sc->port_name) != 0 || !json_object_object_get_ex(p, "port", &pp)) continue;
            snprintf(sc->b->addr, sizeof sc->b->addr, "%s",
                     json_object_get_string(json_object_array_get_idx(addrs, 0)));
            sc->b->port = json_object_get_int(pp);
            json_object_put(o);
            return 1;
        }
    }
out:
    json_object_put(o);
    return 0;
}

/* Fills b from the APIService as. Returns 0, or -1 with b->reason and
 * b->msg as kube-aggregator's availability controller words them. */
static int aggr_resolve(apisrv *s, json_object *as, struct aggr_backend *b) {
    const char *ns = aiq_jpath_str(as, "spec.service.namespace"),
               *name = aiq_jpath_str(as, "spec.service.name"),
               *ca = aiq_jpath_str(as, "spec.caBundle");
    json_object *port = NULL, *svc_obj, *ports = NULL, *insecure = NULL;
    json_object *spec = apisrv__obj_child(as, "spec"), *svc = apisrv__obj_child(spec, "service");
    int want = svc && json_object_object_get_ex(svc, "port", &port) ? json_object_get_int(port) : 443;
    const char *port_name = NULL;
    memset(b, 0, sizeof *b);
    if (!ns || !name) return -1;
    snprintf(b->host, sizeof b->host, "%s.%s.svc", name, ns);
    b->insecure = json_object_object_get_ex(spec, "insecureSkipTLSVerify", &insecure) &&
                  json_object_get_boolean(insecure);
    svc_obj = apisrv__store_get(s, "/services", ns, name);
    if (!svc_obj) {
        snprintf(b->reason, sizeof b->reason, "ServiceNotFound");
        snprintf(b->msg, sizeof b->msg, "service/%s in \"%s\" is not present", name, ns);
        return -1;
    }
    if (json_object_object_get_ex(apisrv__obj_child(svc_obj, "spec"), "ports", &ports))
        for (size_t i = 0; i < json_object_array_length(ports) && !port_name; i++) {
            json_object *p = json_object_array_get_idx(ports, i), *pp = NULL, *pn = NULL;
            if (json_object_object_get_ex(p, "port", &pp) && json_object_get_int(pp) == want)
                port_name = json_object_object_get_ex(p, "name", &pn) ? json_object_get_string(pn) : "";
        }
    if (!port_name) {
        json_object_put(svc_obj);
        snprintf(b->reason, sizeof b->reason, "ServicePortError");
        snprintf(b->msg, sizeof b->msg, "service/%s in \"%s\" is not listening on port %d", name, ns, want);
        return -1;
    }
    struct aggr_scan sc = {name, port_name, b, false};
    apisrv__store_scan(s, AGGR_SLICES, ns, NULL, NULL, aggr_slice_row, &sc);
    if (!b->addr[0]) {
        snprintf(b->reason, sizeof b->reason, sc.any ? "MissingEndpoints" : "EndpointsNotFound");
        if (sc.any)
            snprintf(b->msg, sizeof b->msg, "endpointslices for service/%s in \"%s\" have no "
                     "addresses with port name \"%s\"", name, ns, port_name);
        else
            snprintf(b->msg, sizeof b->msg, "cannot find endpointslices for service/%s in \"%s\"",
                     name, ns);
        json_object_put(svc_obj);
        return -1;
    }
    json_object_put(svc_obj);
    if (ca && *ca) {
        aiq_err e;
        aiq_err_clear(&e);
        if (kube_base64_decode(ca, strlen(ca), &b->ca, &e) != AIQ_OK) {
            snprintf(b->reason, sizeof b->reason, "FailedDiscoveryCheck");
            snprintf(b->msg, sizeof b->msg, "spec.caBundle: %.400s", e.message);
            return -1;
        }
    }
    return 0;
}

/* ---- the proxied request (no lock) ------------------------------------- */

struct aggr_buf {
    char *p;
    size_t len;
    bool too_big;
};

static size_t aggr_write(char *data, size_t size, size_t n, void *u) {
    struct aggr_buf *b = u;
    size_t k = size * n;
    if (b->len + k > AGGR_MAX_BODY) {
        b->too_big = true;
        return 0;
    }
    char *np = realloc(b->p, b->len + k + 1);
    if (!np) return 0;
    memcpy(np + b->len, data, k);
    b->p = np;
    b->len += k;
    b->p[b->len] = 0;
    return k;
}

/* GETs path (with its query) from b as user in groups within timeout_ms;
 * *code the status (0 when the connection failed, err saying why), body
 * malloc'd. */
static void aggr_get(apisrv *s, const struct aggr_backend *b, const char *path, const char *user,
                     const char *const *groups, int ngroups, long timeout_ms, long *code,
                     struct aggr_buf *body, char *ctype, size_t ccap, char *err, size_t ecap) {
    char url[4096], resolve[400], cl[300], clk[300], hdr[400];
    struct curl_slist *hs = NULL, *rs = NULL;
    struct curl_blob blob = {b->ca.data, b->ca.len, CURL_BLOB_NOCOPY};
    char ebuf[CURL_ERROR_SIZE] = "";
    CURL *c = curl_easy_init();
    *code = 0;
    if (!c) {
        snprintf(err, ecap, "out of memory");
        return;
    }
    snprintf(url, sizeof url, "https://%s:%d%s", b->host, b->port, path);
    snprintf(resolve, sizeof resolve, "%s:%d:%s", b->host, b->port, b->addr);
    rs = curl_slist_append(rs, resolve);
    aggr_path(s, "front-proxy-client.crt", cl, sizeof cl);
    aggr_path(s, "front-proxy-client.key", clk, sizeof clk);
    snprintf(hdr, sizeof hdr, "X-Remote-User: %s", user);
    hs = curl_slist_append(hs, hdr);
    for (int i = 0; i < ngroups; i++) {
        snprintf(hdr, sizeof hdr, "X-Remote-Group: %s", groups[i]);
        hs = curl_slist_append(hs, hdr);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_RESOLVE, rs);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(c, CURLOPT_SSLCERT, cl);
    curl_easy_setopt(c, CURLOPT_SSLKEY, clk);
    if (b->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (b->ca.len) {
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, aggr_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 3000 ? timeout_ms : 3000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) {
        char *ct = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
        if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
            snprintf(ctype, ccap, "%s", ct);
    } else {
        snprintf(err, ecap, "%s", body->too_big ? "the answer is larger than 16 MiB"
                                                : ebuf[0] ? ebuf : curl_easy_strerror(rc));
    }
    curl_slist_free_all(hs);
    curl_slist_free_all(rs);
    curl_easy_cleanup(c);
    (void)s;
}

/* ---- routing ------------------------------------------------------------ */

struct aggr_query {
    char *p;
    size_t len, cap;
    bool bad;
};

static enum MHD_Result aggr_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value) {
    struct aggr_query *q = cls;
    (void)kind;
    char *k = curl_easy_escape(NULL, key, 0), *v = value ? curl_easy_escape(NULL, value, 0) : NULL;
    int n = snprintf(q->p + q->len, q->cap - q->len, "%s%s%s%s", q->len ? "&" : "?", k ? k : "",
                     v ? "=" : "", v ? v : "");
    if (!k || (value && !v) || n < 0 || (size_t)n >= q->cap - q->len)
        q->bad = true;
    else
        q->len += (size_t)n;
    curl_free(k);
    curl_free(v);
    return q->bad ? MHD_NO : MHD_YES;
}

/* The RBAC verb of a GET on path segments rest (after /apis/G/V). */
static bool aggr_authorize(apisrv *s, struct apisrv__req *r, const char *group, char **rest,
                           int nrest, struct apisrv__resp *w) {
    struct apisrv__type t;
    struct apisrv__target tg = {&t, NULL, NULL, NULL};
    if (nrest == 0) return true; /* discovery: every authenticated user */
    memset(&t, 0, sizeof t);
    snprintf(t.group, sizeof t.group, "%s", group);
    if (!strcmp(rest[0], "namespaces") && nrest >= 3) {
        tg.ns = rest[1];
        rest += 2;
        nrest -= 2;
    }
    t.namespaced = tg.ns != NULL;
    snprintf(t.resource, sizeof t.resource, "%s", rest[0]);
    tg.name = nrest >= 2 ? rest[1] : NULL;
    tg.sub = nrest >= 3 ? rest[2] : NULL;
    return apisrv__rbac_allowed(s, r, &tg, w);
}

/* Proxies r (authorized, lock not held) to b; fills w. */
static void aggr_proxy(apisrv *s, struct apisrv__req *r, const struct aggr_backend *b,
                       struct apisrv__resp *w) {
    char qbuf[4096], path[8192], ctype[128] = "application/json", err[512] = "";
    struct aggr_query q = {qbuf, 0, sizeof qbuf, false};
    struct aggr_buf body = {0};
    const char *groups[APISRV__MAX_GROUPS];
    long code = 0;
    qbuf[0] = 0;
    if (r->conn) MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, aggr_arg, &q);
    if (q.bad) {
        apisrv__resp_err(w, 414, "RequestURITooLong", "the query is too long to proxy");
        return;
    }
    snprintf(path, sizeof path, "%s%s", r->url, qbuf);
    for (int i = 0; i < r->user.n_groups; i++) groups[i] = r->user.groups[i];
    aggr_get(s, b, path, r->user.name, groups, r->user.n_groups, 10000L, &code, &body, ctype,
             sizeof ctype, err, sizeof err);
    if (!code) {
        free(body.p);
        apisrv__resp_err(w, 503, "ServiceUnavailable", "error trying to reach service: %s", err);
        return;
    }
    w->code = (int)code;
    w->body = body.p;
    w->len = body.len;
    w->ctype = strcmp(ctype, "application/json") == 0 ? NULL : "text/plain";
}

/* See apisrv_int.h. */
bool apisrv__aggr_route(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w) {
    char buf[2048], asname[300], *seg[16];
    struct aggr_backend b;
    int n;
    if (strncmp(r->url, "/apis/", 6) != 0 || strlen(r->url) >= sizeof buf) return false;
    snprintf(buf, sizeof buf, "%s", r->url);
    n = apisrv__split_path(buf, seg, 16);
    if (n < 3) return false;
    snprintf(asname, sizeof asname, "%s.%s", seg[2], seg[1]);
    pthread_mutex_lock(&s->mu);
    if (!s->aggr_any) { /* no APIService at the last check: no lookup per request */
        pthread_mutex_unlock(&s->mu);
        return false;
    }
    json_object *as = apisrv__store_get(s, AGGR_KEY, NULL, asname);
    if (!as || !apisrv__obj_child(apisrv__obj_child(as, "spec"), "service")) {
        pthread_mutex_unlock(&s->mu);
        json_object_put(as);
        return false; /* not aggregated: served here */
    }
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) {
        pthread_mutex_unlock(&s->mu);
        json_object_put(as);
        apisrv__resp_err(w, 405, "MethodNotAllowed", "the local aggregation layer proxies GET only");
        return true;
    }
    bool ok = aggr_authorize(s, r, seg[1], seg + 3, n - 3, w);
    int res = ok ? aggr_resolve(s, as, &b) : 0;
    pthread_mutex_unlock(&s->mu);
    json_object_put(as);
    if (!ok) return true; /* w holds the 403 */
    if (res != 0)
        apisrv__resp_err(w, 503, "ServiceUnavailable", "service unavailable");
    else if (!s->fp_dir)
        apisrv__resp_err(w, 503, "ServiceUnavailable", "the local server proxies aggregated APIs "
                         "only when it serves TLS (--tls): it has no front-proxy certificate");
    else
        aggr_proxy(s, r, &b, w);
    free(b.ca.data);
    return true;
}

/* ---- availability ------------------------------------------------------- */

struct aggr_names {
    char (*v)[300];
    int n, cap;
};

static int aggr_name_row(void *u, const char *key, const char *ns, const char *name,
                         const char *json) {
    struct aggr_names *a = u;
    (void)key; (void)ns; (void)json;
    if (a->n < a->cap) snprintf(a->v[a->n++], sizeof a->v[0], "%s", name);
    return 0;
}

/* Writes the Available condition when it changed (lock held). */
static void aggr_set_available(apisrv *s, const char *name, bool up, const char *reason,
                               const char *msg) {
    const struct apisrv__type *t = apisrv__type_by_key(s, AGGR_KEY);
    json_object *obj = t ? apisrv__store_get(s, AGGR_KEY, NULL, name) : NULL;
    if (!obj) return;
    json_object *st = apisrv__obj_child(obj, "status"), *conds = NULL;
    if (st && json_object_object_get_ex(st, "conditions", &conds) &&
        json_object_array_length(conds) == 1) {
        json_object *c = json_object_array_get_idx(conds, 0);
        const char *os = aiq_jpath_str(c, "status"), *orsn = aiq_jpath_str(c, "reason"),
                   *om = aiq_jpath_str(c, "message");
        if (os && orsn && om && !strcmp(os, up ? "True" : "False") && !strcmp(orsn, reason) &&
            !strcmp(om, msg)) {
            json_object_put(obj);
            return;
        }
    }
    json_object *prev = json_object_get(obj), *copy = NULL;
    if (json_object_deep_copy(obj, &copy, NULL) != 0) {
        json_object_put(prev);
        json_object_put(obj);
        return; /* out of memory: the next check writes it */
    }
    json_object_put(obj);
    char now[40];
    apisrv__now_rfc3339(now, sizeof now);
    json_object *c = json_object_new_object(), *arr = json_object_new_array(),
                *nst = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string("Available"));
    json_object_object_add(c, "status", json_object_new_string(up ? "True" : "False"));
    json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(msg));
    json_object_array_add(arr, c);
    json_object_object_add(nst, "conditions", arr);
    json_object_object_add(copy, "status", nst);
    struct apisrv__st e;
    apisrv__st_init(&e);
    /* A failed write is retried at the next check: the condition differs. */
    (void)apisrv__commit_modified(s, t, NULL, name, copy, prev, &e);
    apisrv__st_deinit(&e);
    json_object_put(prev);
}

/* Keeps (list taken, NULL: forgets) the discovery document of APIService
 * name, whose path is /apis/GROUP/VERSION (lock held). */
static void aggr_remember(apisrv *s, const char *name, const char *path, json_object *list) {
    char group[256] = "", version[64] = "";
    const char *g = path + 6, *slash = strchr(g, '/');
    if (!s->aggr_disc && !(s->aggr_disc = json_object_new_object())) {
        json_object_put(list);
        return;
    }
    json_object_object_del(s->aggr_disc, name);
    if (!list || !slash || !json_object_is_type(list, json_type_object)) {
        json_object_put(list);
        return;
    }
    snprintf(group, sizeof group, "%.*s", (int)(slash - g), g);
    snprintf(version, sizeof version, "%s", slash + 1);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "group", json_object_new_string(group));
    json_object_object_add(e, "version", json_object_new_string(version));
    json_object_object_add(e, "list", list);
    json_object_object_add(s->aggr_disc, name, e);
}

/* One APIResourceList entry as a v2 APIResourceDiscovery. */
static json_object *aggr_v2_resource(json_object *r, const char *group, const char *version) {
    json_object *o = json_object_new_object(), *k = json_object_new_object(), *v = NULL;
    json_object_object_add(o, "resource", json_object_new_string(aiq_jpath_str(r, "name") ?
                                                                 aiq_jpath_str(r, "name") : ""));
    json_object_object_add(k, "group", json_object_new_string(group));
    json_object_object_add(k, "version", json_object_new_string(version));
    json_object_object_add(k, "kind", json_object_new_string(aiq_jpath_str(r, "kind") ?
                                                             aiq_jpath_str(r, "kind") : ""));
    json_object_object_add(o, "responseKind", k);
    bool ns = json_object_object_get_ex(r, "namespaced", &v) && json_object_get_boolean(v);
    json_object_object_add(o, "scope", json_object_new_string(ns ? "Namespaced" : "Cluster"));
    json_object_object_add(o, "singularResource", json_object_new_string(""));
    if (json_object_object_get_ex(r, "verbs", &v))
        json_object_object_add(o, "verbs", json_object_get(v));
    return o;
}

/* See apisrv_int.h. */
void apisrv__aggr_discovery(apisrv *s, bool v2, json_object *groups) {
    if (!s->aggr_disc) return;
    json_object_object_foreach(s->aggr_disc, name, e) {
        const char *group = aiq_jpath_str(e, "group"), *version = aiq_jpath_str(e, "version");
        json_object *g = json_object_new_object(), *vers = json_object_new_array(),
                    *ver = json_object_new_object(), *list = NULL, *res = NULL;
        char gv[400];
        (void)name;
        snprintf(gv, sizeof gv, "%s/%s", group, version);
        if (v2) {
            json_object *md = json_object_new_object(), *out = json_object_new_array();
            json_object_object_add(md, "name", json_object_new_string(group));
            json_object_object_add(g, "metadata", md);
            json_object_object_add(ver, "version", json_object_new_string(version));
            if (json_object_object_get_ex(e, "list", &list) &&
                json_object_object_get_ex(list, "resources", &res))
                for (size_t i = 0; i < json_object_array_length(res); i++)
                    json_object_array_add(out, aggr_v2_resource(json_object_array_get_idx(res, i),
                                                                group, version));
            json_object_object_add(ver, "resources", out);
            json_object_object_add(ver, "freshness", json_object_new_string("Current"));
            json_object_array_add(vers, ver);
        } else {
            json_object_object_add(g, "name", json_object_new_string(group));
            json_object_object_add(ver, "groupVersion", json_object_new_string(gv));
            json_object_object_add(ver, "version", json_object_new_string(version));
            json_object_array_add(vers, json_object_get(ver));
            json_object_object_add(g, "preferredVersion", ver);
        }
        json_object_object_add(g, "versions", vers);
        json_object_array_add(groups, g);
    }
}

/* Checks one APIService like kube-aggregator's availability controller. */
static void aggr_check(apisrv *s, const char *name) {
    struct aggr_backend b;
    struct aggr_buf body = {0};
    char reason[64] = "Passed", msg[640] = "all checks passed", err[512] = "", ctype[128];
    long code = 0;
    pthread_mutex_lock(&s->mu);
    json_object *as = apisrv__store_get(s, AGGR_KEY, NULL, name);
    bool service = as && apisrv__obj_child(apisrv__obj_child(as, "spec"), "service");
    int res = service ? aggr_resolve(s, as, &b) : 0;
    char path[400];
    snprintf(path, sizeof path, "/apis/%s/%s", as ? aiq_jpath_str(as, "spec.group") : "",
             as ? aiq_jpath_str(as, "spec.version") : "");
    pthread_mutex_unlock(&s->mu);
    bool have = as != NULL;
    json_object_put(as);
    if (!have) return;
    if (!service) {
        snprintf(reason, sizeof reason, "Local");
        snprintf(msg, sizeof msg, "Local APIServices are always available");
    } else if (res != 0) {
        snprintf(reason, sizeof reason, "%s", b.reason);
        snprintf(msg, sizeof msg, "%s", b.msg);
    } else if (!s->fp_dir) {
        snprintf(reason, sizeof reason, "FailedDiscoveryCheck");
        snprintf(msg, sizeof msg, "the local server runs without --tls: no front-proxy certificate");
    } else {
        const char *masters[] = {"system:masters"};
        /* short: the check runs on the simulator's thread, which must not
         * stall behind a backend that does not answer */
        aggr_get(s, &b, path, "system:kube-aggregator", masters, 1, 2000L, &code, &body, ctype,
                 sizeof ctype, err, sizeof err);
        if (code < 200 || code >= 300) {
            snprintf(reason, sizeof reason, "FailedDiscoveryCheck");
            if (code)
                snprintf(msg, sizeof msg, "failing or missing response from https://%s:%d%.120s: bad "
                         "status from https://%s:%d%.120s: %ld", b.addr, b.port, path, b.addr,
                         b.port, path, code);
            else
                snprintf(msg, sizeof msg, "failing or missing response from https://%s:%d%.120s: %.300s",
                         b.addr, b.port, path, err);
        }
    }
    json_object *list = !strcmp(reason, "Passed") && body.p ? json_tokener_parse(body.p) : NULL;
    free(body.p);
    if (service) free(b.ca.data);
    pthread_mutex_lock(&s->mu);
    aggr_set_available(s, name, !strcmp(reason, "Passed") || !strcmp(reason, "Local"), reason, msg);
    aggr_remember(s, name, path, list);
    pthread_mutex_unlock(&s->mu);
}

/* See apisrv_int.h. */
void apisrv__aggr_tick(apisrv *s) {
    char names[64][300];
    struct aggr_names a = {names, 0, 64};
    double now = apisrv__now();
    if (now - s->aggr_checked < AGGR_CHECK_S) return;
    s->aggr_checked = now;
    pthread_mutex_lock(&s->mu);
    apisrv__store_scan(s, AGGR_KEY, NULL, NULL, NULL, aggr_name_row, &a);
    s->aggr_any = a.n > 0;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < a.n; i++) aggr_check(s, names[i]);
    /* forget the discovery of APIServices that are gone */
    pthread_mutex_lock(&s->mu);
    for (bool again = s->aggr_disc != NULL; again;) {
        again = false;
        json_object_object_foreach(s->aggr_disc, key, val) {
            bool kept = false;
            (void)val;
            for (int i = 0; i < a.n && !kept; i++) kept = !strcmp(names[i], key);
            if (!kept) {
                json_object_object_del(s->aggr_disc, key);
                again = true; /* the iteration is invalid after a delete */
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
}
