/* util_source.c -- live GPU utilisation from Prometheus (see
 * util_source.h): the answer parser, the (node, GPU) cache with sample
 * times, the fetch over libcurl and the worker thread that runs it every
 * interval. Nothing here logs: the daemon reads the state and tells. */
#include "operator/util_source.h"

#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
/* The capped curl body buffer of the Kubernetes client (kube__buf): the
 * same concern, one implementation. */
#include "operator/kube_http_int.h"

/* ---- parser --------------------------------------------------------------- */

static json_object *ou_get(json_object *o, const char *k) {
    json_object *v = NULL;
    return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v)
               ? v
               : NULL;
}

static const char *ou_str(json_object *o, const char *k) {
    json_object *v = ou_get(o, k);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The node label of a series' metric object, by name or the default
 * order; NULL when none is present and non-empty. */
static const char *ou_node_of(json_object *metric, const char *label) {
    static const char *const dflt[] = {"node", "kubernetes_node", "Hostname"};
    if (label && *label)
        return ou_str(metric, label);
    for (size_t i = 0; i < sizeof dflt / sizeof *dflt; i++) {
        const char *v = ou_str(metric, dflt[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

/* A GPU index label "0".."Q_MAX_GPUS-1", else -1. */
static int ou_gpu_of(const char *s) {
    char *end = NULL;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || *end || v < 0 || v >= Q_MAX_GPUS ? -1 : (int)v;
}

/* Reads "value": [t, "v"] into *t, *v; -1 when it is not that shape or v
 * is not a finite number (Prometheus writes NaN and +Inf as strings). */
static int ou_value_of(json_object *val, double *t, double *v) {
    if (!val || !json_object_is_type(val, json_type_array) || json_object_array_length(val) != 2)
        return -1;
    json_object *jt = json_object_array_get_idx(val, 0), *jv = json_object_array_get_idx(val, 1);
    if (!(json_object_is_type(jt, json_type_double) || json_object_is_type(jt, json_type_int)) ||
        !json_object_is_type(jv, json_type_string))
        return -1;
    const char *s = json_object_get_string(jv);
    char *end = NULL;
    errno = 0;
    *v = strtod(s, &end);
    *t = json_object_get_double(jt);
    return !*s || *end || errno == ERANGE || !isfinite(*v) || !isfinite(*t) ? -1 : 0;
}

/* Reads one series into *s; returns 0, or -1 with the reason counted. */
static int ou_series(json_object *it, const char *label, struct oputil_sample *s,
                     struct oputil_skips *sk) {
    json_object *metric = ou_get(it, "metric");
    const char *node = ou_node_of(metric, label);
    if (!node || !*node || strlen(node) >= sizeof s->node) {
        sk->no_node++;
        return -1;
    }
    int gpu = ou_gpu_of(ou_str(metric, "gpu"));
    if (gpu < 0) {
        sk->bad_gpu++;
        return -1;
    }
    if (ou_value_of(ou_get(it, "value"), &s->t, &s->value) != 0) {
        sk->bad_value++;
        return -1;
    }
    const char *uuid = ou_str(metric, "UUID");
    snprintf(s->node, sizeof s->node, "%s", node);
    snprintf(s->uuid, sizeof s->uuid, "%s", uuid ? uuid : "");
    s->gpu = gpu;
    return 0;
}

/* Checks the envelope: status success and a vector result. Returns the
 * result array, or NULL with err set. */
static json_object *ou_envelope(json_object *doc, aiq_err *err) {
    const char *status = ou_str(doc, "status");
    if (!json_object_is_type(doc, json_type_object) || !status) {
        aiq_err_field(err, AIQ_EPARSE, "status", "Prometheus answer: no \"status\" field");
        return NULL;
    }
    if (strcmp(status, "success") != 0) {
        const char *et = ou_str(doc, "errorType"), *e = ou_str(doc, "error");
        aiq_err_field(err, AIQ_EINVAL, "status", "Prometheus answered status \"%.40s\": %.60s: %.200s",
                      status, et ? et : "-", e ? e : "no error message");
        return NULL;
    }
    json_object *data = ou_get(doc, "data");
    const char *rt = ou_str(data, "resultType");
    if (!rt) {
        aiq_err_field(err, AIQ_EPARSE, "data.resultType", "Prometheus answer: no data.resultType");
        return NULL;
    }
    if (strcmp(rt, "vector") != 0) {
        aiq_err_field(err, AIQ_EUNSUPPORTED, "data.resultType",
                      "Prometheus answer: data.resultType \"%.40s\", expected \"vector\" "
                      "(an instant query)", rt);
        return NULL;
    }
    json_object *res = ou_get(data, "result");
    if (!res || !json_object_is_type(res, json_type_array)) {
        aiq_err_field(err, AIQ_EPARSE, "data.result", "Prometheus answer: data.result is not an array");
        return NULL;
    }
    if (json_object_array_length(res) > OPUTIL_MAX_SAMPLES) {
        aiq_err_field(err, AIQ_ETOOBIG, "data.result",
                      "Prometheus answer: %zu series, more than the %d accepted",
                      json_object_array_length(res), OPUTIL_MAX_SAMPLES);
        return NULL;
    }
    return res;
}

/* Parses an answer; see util_source.h. */
aiq_rc oputil_parse(const char *body, size_t len, const char *node_label,
                    struct oputil_sample **out, size_t *n, struct oputil_skips *skips,
                    aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    struct oputil_skips sk = {0, 0, 0};
    json_object *doc = NULL;
    *out = NULL;
    *n = 0;
    if (len > OPUTIL_MAX_BODY)
        return aiq_err_set(err, AIQ_ETOOBIG, "Prometheus answer: %zu bytes, more than the %u accepted",
                           len, OPUTIL_MAX_BODY);
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    doc = json_tokener_parse_ex(tok, body ? body : "", (int)len);
    enum json_tokener_error je = json_tokener_get_error(tok);
    if (!doc || je != json_tokener_success) {
        rc = aiq_err_set(err, AIQ_EPARSE, "Prometheus answer is not JSON: %s at byte %zu",
                         json_tokener_error_desc(je == json_tokener_success ? json_tokener_continue : je),
                         json_tokener_get_parse_end(tok));
        goto out_free;
    }
    for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
        if (body[i] != ' ' && body[i] != '\n' && body[i] != '\r' && body[i] != '\t') {
            rc = aiq_err_set(err, AIQ_EPARSE, "Prometheus answer is not JSON: trailing data at "
                             "byte %zu", i);
            goto out_free;
        }
    json_object *res = ou_envelope(doc, err);
    if (!res) {
        rc = err ? err->code : AIQ_EPARSE;
        goto out_free;
    }
    size_t m = json_object_array_length(res);
    struct oputil_sample *s = m ? calloc(m, sizeof *s) : NULL;
    if (m && !s) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    size_t k = 0;
    for (size_t i = 0; i < m; i++)
        if (ou_series(json_object_array_get_idx(res, i), node_label, &s[k], &sk) == 0)
            k++;
    if (k == 0) {
        free(s);
        s = NULL;
    }
    *out = s;
    *n = k;
    if (skips)
        *skips = sk;
out_free:
    json_object_put(doc);
    json_tokener_free(tok);
    return rc;
}

/* ---- Alnair's node annotations ------------------------------------------- */

/* The number after key in v ("'key': '12.5'" or "'key': 12.5"); 0 or -1. */
static int ou_alnair_num(const char *v, const char *key, double *out) {
    const char *p = strstr(v, key);
    if (!p)
        return -1;
    p += strlen(key);
    while (*p == ' ')
        p++;
    if (*p == '\'' || *p == '"')
        p++;
    char *end = NULL;
    errno = 0;
    double d = strtod(p, &end);
    if (end == p || errno == ERANGE || !isfinite(d) || d < 0)
        return -1;
    *out = d;
    return 0;
}

/* Reads one annotation value; see util_source.h. */
int oputil_alnair_value(const char *v, double *pct, const char **field) {
    static const char *const keys[] = {"'max_gpu_util':", "'max_mem_util':"};
    for (size_t i = 0; v && i < sizeof keys / sizeof *keys; i++)
        if (ou_alnair_num(v, keys[i], pct) == 0) {
            *field = i == 0 ? "max_gpu_util" : "max_mem_util";
            return 0;
        }
    return -1;
}

/* ---- cache ---------------------------------------------------------------- */

struct ou_ent {
    char node[OPUTIL_NODE_MAX];
    char uuid[OPUTIL_UUID_MAX];
    int gpu;
    bool has_util, has_fb;
    double util, util_t;   /* percent, sample time */
    double fb, fb_t;       /* MiB, sample time */
};

struct oputil {
    char *url;             /* without a trailing slash */
    char *node_label;      /* NULL: default order */
    double interval_s, stale_s, timeout_s;
    pthread_mutex_t mu;    /* guards everything below */
    pthread_cond_t cv;     /* stop wakes the worker */
    struct ou_ent *ent;    /* sorted by (node, gpu) */
    size_t nent, cap;
    struct oputil_state st;
    bool stop, started;
    pthread_t th;
};

static int ou_ent_cmp(const void *a, const void *b) {
    const struct ou_ent *x = a, *y = b;
    int c = strcmp(x->node, y->node);
    return c ? c : (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

static void ou_apply(struct ou_ent *e, const struct oputil_sample *s, bool is_util) {
    if (s->uuid[0])
        snprintf(e->uuid, sizeof e->uuid, "%s", s->uuid);
    if (is_util && (!e->has_util || s->t >= e->util_t)) {
        e->has_util = true;
        e->util = s->value;
        e->util_t = s->t;
    } else if (!is_util && (!e->has_fb || s->t >= e->fb_t)) {
        e->has_fb = true;
        e->fb = s->value;
        e->fb_t = s->t;
    }
}

/* Sorts the cache again after new entries were appended at its end,
 * folding entries of the same (node, GPU) together (newest sample wins). */
static void ou_resort(oputil *u) {
    qsort(u->ent, u->nent, sizeof *u->ent, ou_ent_cmp);
    size_t w = 0;
    for (size_t r = 0; r < u->nent; r++) {
        if (w > 0 && ou_ent_cmp(&u->ent[w - 1], &u->ent[r]) == 0) {
            struct ou_ent *d = &u->ent[w - 1], *e = &u->ent[r];
            if (e->has_util && (!d->has_util || e->util_t > d->util_t)) {
                d->has_util = true;
                d->util = e->util;
                d->util_t = e->util_t;
            }
            if (e->has_fb && (!d->has_fb || e->fb_t > d->fb_t)) {
                d->has_fb = true;
                d->fb = e->fb;
                d->fb_t = e->fb_t;
            }
            continue;
        }
        if (w != r)
            u->ent[w] = u->ent[r];
        w++;
    }
    u->nent = w;
}

/* Merges one answer; see util_source.h. */
int oputil__merge(oputil *u, const struct oputil_sample *s, size_t n, bool is_util) {
    int rc = 0;
    pthread_mutex_lock(&u->mu);
    size_t nsorted = u->nent;
    for (size_t i = 0; i < n; i++) {
        struct ou_ent *e = NULL;
        if (nsorted) {
            struct ou_ent key = {.gpu = s[i].gpu}; /* only node and gpu are compared */
            snprintf(key.node, sizeof key.node, "%s", s[i].node);
            e = bsearch(&key, u->ent, nsorted, sizeof *u->ent, ou_ent_cmp);
        }
        if (!e) {
            if (u->nent >= OPUTIL_MAX_ENTRIES)
                continue; /* bounded: the rest of a huge cluster stays unknown */
            if (u->nent == u->cap) {
                size_t nc = u->cap ? u->cap * 2 : 64;
                struct ou_ent *ne = realloc(u->ent, nc * sizeof *ne);
                if (!ne) {
                    rc = -1;
                    break;
                }
                u->ent = ne;
                u->cap = nc;
            }
            e = &u->ent[u->nent++];
            memset(e, 0, sizeof *e);
            snprintf(e->node, sizeof e->node, "%s", s[i].node);
            e->gpu = s[i].gpu;
        }
        ou_apply(e, &s[i], is_util);
    }
    if (u->nent != nsorted)
        ou_resort(u);
    pthread_mutex_unlock(&u->mu);
    return rc;
}

/* Records a fetch outcome; see util_source.h. */
void oputil__outcome(oputil *u, const char *reason, double now, long skipped) {
    pthread_mutex_lock(&u->mu);
    u->st.fetches++;
    u->st.skipped = skipped;
    if (reason) {
        u->st.up = false;
        u->st.failures++;
        snprintf(u->st.reason, sizeof u->st.reason, "%s", reason);
    } else {
        u->st.up = true;
        u->st.last_ok = now;
        u->st.reason[0] = '\0';
    }
    pthread_mutex_unlock(&u->mu);
}

static bool ou_fresh(const oputil *u, const struct ou_ent *e, double now) {
    return e && e->has_util && now - e->util_t <= u->stale_s;
}

/* The index of the node's first entry (the lowest GPU), or nent. One
 * search per node: its GPUs follow it in the sorted cache. */
static size_t ou_first(const oputil *u, const char *node) {
    size_t lo = 0, hi = u->nent;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(u->ent[mid].node, node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < u->nent && strcmp(u->ent[lo].node, node) == 0 ? lo : u->nent;
}

/* Fills the nodes; see util_source.h. */
void oputil_fill(oputil *u, struct q_node *nodes, int n, double now, long *known, long *stale) {
    long k = 0, st = 0;
    pthread_mutex_lock(&u->mu);
    for (int i = 0; i < n; i++) {
        struct q_node *q = &nodes[i];
        bool all = q->ngpus > 0 && q->name;
        double util[Q_MAX_GPUS] = {0};
        size_t at = q->name ? ou_first(u, q->name) : u->nent;
        for (int g = 0; q->name && g < q->ngpus && g < Q_MAX_GPUS; g++) {
            /* entries of one node are sorted by GPU: walk past lower ones */
            while (at < u->nent && u->ent[at].gpu < g && strcmp(u->ent[at].node, q->name) == 0)
                at++;
            const struct ou_ent *e = at < u->nent && u->ent[at].gpu == g &&
                                             strcmp(u->ent[at].node, q->name) == 0
                                         ? &u->ent[at]
                                         : NULL;
            if (e && e->has_util && !ou_fresh(u, e, now))
                st++;
            if (!ou_fresh(u, e, now)) {
                all = false;
                continue;
            }
            double v = e->util / 100.0;
            util[g] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
        q->util_known = all;
        memcpy(q->gpu_util, all ? util : (double[Q_MAX_GPUS]){0}, sizeof q->gpu_util);
        k += all;
    }
    pthread_mutex_unlock(&u->mu);
    if (known)
        *known = k;
    if (stale)
        *stale = st;
}

void oputil_stats(oputil *u, struct oputil_state *st) {
    pthread_mutex_lock(&u->mu);
    *st = u->st;
    pthread_mutex_unlock(&u->mu);
}

/* ---- fetch ---------------------------------------------------------------- */

/* GETs one query; on success *body holds the answer (caller frees). On
 * failure returns -1 with reason (cap bytes) naming the query and why. A
 * non-200 status with a Prometheus error body is parsed by the caller:
 * *code tells the status. */
static int ou_get_query(oputil *u, const char *query, struct kube__buf *b, long *code,
                        char *reason, size_t cap) {
    int rc = -1;
    char url[2048];
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(reason, cap, "query %s: curl_easy_init failed", query);
        return -1;
    }
    char *q = curl_easy_escape(h, query, 0);
    if (!q || snprintf(url, sizeof url, "%s/api/v1/query?query=%s", u->url, q) >= (int)sizeof url) {
        snprintf(reason, cap, "query %s: URL too long or out of memory", query);
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "aiq-operator/util-source");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(u->timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(u->timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, kube__buf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        if (b->toobig)
            snprintf(reason, cap, "query %s: answer larger than %u bytes", query, OPUTIL_MAX_BODY);
        else
            snprintf(reason, cap, "query %s: %s", query, curl_easy_strerror(cc));
        goto out;
    }
    /* A transfer that completed has a status; if curl cannot say, *code
     * stays 0 and the caller reports "HTTP 0". */
    (void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    rc = 0;
out:
    curl_free(q);
    curl_easy_cleanup(h);
    return rc;
}

/* Fetches, parses and merges one metric. Returns 0, or -1 with reason. */
static int ou_fetch_metric(oputil *u, const char *query, bool is_util, long *skipped,
                           char *reason, size_t cap) {
    struct kube__buf b = {.max = OPUTIL_MAX_BODY};
    struct oputil_sample *s = NULL;
    struct oputil_skips sk = {0, 0, 0};
    size_t n = 0;
    long code = 0;
    int rc = -1;
    if (ou_get_query(u, query, &b, &code, reason, cap) != 0)
        goto out;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc prc = oputil_parse(b.p, b.len, u->node_label, &s, &n, &sk, &e);
    if (code != 200) {
        snprintf(reason, cap, "query %s: HTTP %ld%s%.180s", query, code,
                 prc != AIQ_OK ? ": " : "", prc != AIQ_OK ? e.message : "");
        goto out;
    }
    if (prc != AIQ_OK) {
        snprintf(reason, cap, "query %s: %.200s", query, e.message);
        goto out;
    }
    *skipped += sk.no_node + sk.bad_gpu + sk.bad_value;
    if (oputil__merge(u, s, n, is_util) != 0) {
        snprintf(reason, cap, "query %s: out of memory", query);
        goto out;
    }
    rc = 0;
out:
    free(s);
    free(b.p);
    return rc;
}

/* One fetch; see util_source.h. */
int oputil_fetch_once(oputil *u, double now) {
    char reason[256] = "";
    long skipped = 0;
    int rc = ou_fetch_metric(u, OPUTIL_Q_UTIL, true, &skipped, reason, sizeof reason);
    if (rc == 0)
        rc = ou_fetch_metric(u, OPUTIL_Q_FB, false, &skipped, reason, sizeof reason);
    oputil__outcome(u, rc == 0 ? NULL : reason, now, skipped);
    return rc;
}

static double ou_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *ou_worker(void *arg) {
    oputil *u = arg;
    pthread_mutex_lock(&u->mu);
    while (!u->stop) {
        pthread_mutex_unlock(&u->mu);
        (void)oputil_fetch_once(u, ou_now()); /* the outcome is in the state */
        pthread_mutex_lock(&u->mu);
        double until = ou_now() + u->interval_s;
        struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
        while (!u->stop && pthread_cond_timedwait(&u->cv, &u->mu, &ts) == 0)
            ; /* woken without stop: wait on */
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* ---- life cycle ----------------------------------------------------------- */

/* Creates the cache; see util_source.h. */
aiq_rc oputil_create(const struct oputil_opts *o, oputil **out, aiq_err *err) {
    *out = NULL;
    const char *url = o->url;
    if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        strlen(url) > 1024)
        return aiq_err_field(err, AIQ_EINVAL, "--util-prometheus-url",
                             "--util-prometheus-url: expected an http:// or https:// URL of at "
                             "most 1024 bytes, got \"%.100s\"", url ? url : "");
    const struct { const char *flag; double v; } num[] = {
        {"--util-interval", o->interval_s}, {"--util-stale-after", o->stale_s},
        {"--util-timeout", o->timeout_s}};
    for (size_t i = 0; i < sizeof num / sizeof *num; i++)
        if (!(num[i].v > 0) || !isfinite(num[i].v))
            return aiq_err_field(err, AIQ_EINVAL, num[i].flag,
                                 "%s: must be a positive number of seconds, got %g", num[i].flag,
                                 num[i].v);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return aiq_err_set(err, AIQ_EIO, "curl_global_init failed");
    oputil *u = calloc(1, sizeof *u);
    if (!u)
        goto out_curl;
    u->url = strdup(url);
    u->node_label = o->node_label && *o->node_label ? strdup(o->node_label) : NULL;
    if (!u->url || (o->node_label && *o->node_label && !u->node_label))
        goto out_free;
    size_t ul = strlen(u->url);
    while (ul > 0 && u->url[ul - 1] == '/')
        u->url[--ul] = '\0';
    u->interval_s = o->interval_s;
    u->stale_s = o->stale_s;
    u->timeout_s = o->timeout_s;
    snprintf(u->st.reason, sizeof u->st.reason, "no answer yet");
    if (pthread_mutex_init(&u->mu, NULL) != 0)
        goto out_free;
    if (pthread_cond_init(&u->cv, NULL) != 0) {
        pthread_mutex_destroy(&u->mu);
        goto out_free;
    }
    *out = u;
    return AIQ_OK;
out_free:
    free(u->node_label);
    free(u->url);
    free(u);
out_curl:
    curl_global_cleanup();
    return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
}

aiq_rc oputil_start(oputil *u, aiq_err *err) {
    if (u->started)
        return aiq_err_set(err, AIQ_ESTATE, "utilisation source already started");
    if (pthread_create(&u->th, NULL, ou_worker, u) != 0)
        return aiq_err_set(err, AIQ_EIO, "cannot start the utilisation source thread");
    u->started = true;
    return AIQ_OK;
}

void oputil_free(oputil *u) {
    if (!u)
        return;
    if (u->started) {
        pthread_mutex_lock(&u->mu);
        u->stop = true;
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
        pthread_join(u->th, NULL);
    }
    pthread_cond_destroy(&u->cv);
    pthread_mutex_destroy(&u->mu);
    free(u->ent);
    free(u->node_label);
    free(u->url);
    free(u);
    curl_global_cleanup();
}

/* ---- /util ---------------------------------------------------------------- */

/* One GPU of the /util document, or NULL when out of memory. */
static json_object *ou_gpu_json(const oputil *u, const struct ou_ent *e, double now) {
    json_object *g = json_object_new_object();
    bool failed = !g;
    aiq_jset(g, "gpu", json_object_new_int(e->gpu), &failed);
    if (e->uuid[0])
        aiq_jset(g, "uuid", json_object_new_string(e->uuid), &failed);
    if (e->has_util) {
        aiq_jset(g, "util", json_object_new_double(e->util / 100.0), &failed);
        aiq_jset(g, "utilAgeSeconds", json_object_new_double(now - e->util_t), &failed);
    }
    if (e->has_fb)
        aiq_jset(g, "fbUsedMiB", json_object_new_double(e->fb), &failed);
    aiq_jset(g, "stale", json_object_new_boolean(!ou_fresh(u, e, now)), &failed);
    if (failed) {
        json_object_put(g);
        return NULL;
    }
    return g;
}

/* Adds the cache's state and its GPUs, grouped by node, to doc (u->mu
 * held). Out of memory sets *failed. */
static void ou_doc_fill(oputil *u, json_object *doc, double now, bool *failed) {
    json_object *nodes = json_object_new_array(), *cur = NULL;
    aiq_jset(doc, "url", json_object_new_string(u->url), failed);
    aiq_jset(doc, "up", json_object_new_boolean(u->st.up), failed);
    aiq_jset(doc, "reason", json_object_new_string(u->st.reason), failed);
    aiq_jset(doc, "lastSuccess", json_object_new_double(u->st.last_ok), failed);
    aiq_jset(doc, "staleAfterSeconds", json_object_new_double(u->stale_s), failed);
    aiq_jset(doc, "intervalSeconds", json_object_new_double(u->interval_s), failed);
    aiq_jset(doc, "fetches", json_object_new_int64((int64_t)u->st.fetches), failed);
    aiq_jset(doc, "failures", json_object_new_int64((int64_t)u->st.failures), failed);
    aiq_jset(doc, "nodes", nodes, failed); /* nodes stays borrowed from doc */
    /* Once *failed is set, nodes and cur may be gone: stop there. */
    for (size_t i = 0; !*failed && i < u->nent; i++) {
        const struct ou_ent *e = &u->ent[i];
        if (i == 0 || strcmp(e->node, u->ent[i - 1].node) != 0) {
            json_object *nj = json_object_new_object();
            cur = json_object_new_array();
            aiq_jset(nj, "name", json_object_new_string(e->node), failed);
            aiq_jset(nj, "gpus", cur, failed); /* cur stays borrowed from nj */
            aiq_jpush(nodes, nj, failed);
        }
        aiq_jpush(cur, ou_gpu_json(u, e, now), failed);
    }
}

/* Builds the /util document; see util_source.h. */
char *oputil_json(oputil *u, bool alnair, double now, size_t *len) {
    json_object *doc = json_object_new_object();
    char *text = NULL;
    bool failed = !doc;
    aiq_jset(doc, "source", json_object_new_string(u ? "prometheus" : "none"), &failed);
    aiq_jset(doc, "alnairAnnotations", json_object_new_boolean(alnair), &failed);
    if (u && !failed) {
        pthread_mutex_lock(&u->mu);
        ou_doc_fill(u, doc, now, &failed);
        pthread_mutex_unlock(&u->mu);
    }
    size_t n = 0;
    const char *t =
        failed ? NULL : json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN, &n);
    text = t ? malloc(n + 1) : NULL;
    if (text) {
        memcpy(text, t, n + 1);
        if (len)
            *len = n;
    }
    json_object_put(doc);
    return text;
}
