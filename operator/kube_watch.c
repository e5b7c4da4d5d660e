/* kube_watch.c -- list+watch of one collection per thread: paginated
 * list, watch stream framed and decoded line by line, resume by
 * resourceVersion, relist on 410 and after an undecodable line, full-jitter
 * backoff, prompt stop.
 *
 * Thread model (the decision for the whole Kubernetes client):
 *  - each watch runs in its own thread with its own curl easy handle,
 *    driven through a private curl multi handle only so that
 *    kube_watch_free can interrupt a blocked transfer at once with
 *    curl_multi_wakeup (and a backoff sleep through a condition
 *    variable);
 *  - one-shot requests (kube_http.c) run on the caller's thread with a
 *    handle borrowed from the client's mutex-guarded pool;
 *  - events reach the operator's main loop through a bounded kube_evq,
 *    which it waits on with a timeout for its periodic cycle.
 * json-c reference counts are not atomic, so an object is handed to the
 * queue only once this thread holds its sole reference (list items are
 * detached from the list before they are queued). */
#include "operator/kube_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "common/aiq_time.h"

#include "common/json.h"
#include "operator/kube_framer.h"
#include "operator/kube_http_int.h"
#include "operator/kube_status.h"

#define KW_URL_MAX 8192
#define KW_SEL_MAX 2048
#define KW_ERR_BODY_MAX ((size_t)1024 * 1024)
#define KW_LIST_MAX ((size_t)64 * 1024 * 1024)

struct kube_watch {
    struct kube_client *c;
    struct kube_evq *q;
    char name[64];
    char *path, *label_sel, *field_sel; /* selectors already escaped */
    int page_limit, timeout_s;
    long base_ms, cap_ms;
    size_t max_line;

    pthread_t thread;
    int started;        /* thread is running (joined in kube_watch_free) */
    CURLM *multi;
    CURL *easy;
    struct kube_framer framer;
    uint64_t rng;
    atomic_int stop;    /* set once by kube_watch_free */

    pthread_mutex_t mu; /* guards stats and the stop wait */
    pthread_cond_t cv;
    struct kube_watch_stats st;
    char rv[64];        /* watch thread only */
};

long kube_backoff_ms(unsigned attempt, long base_ms, long cap_ms,
                     uint64_t *rng) {
    long ceil = base_ms;
    for (unsigned i = 0; i < attempt && ceil < cap_ms; i++) ceil *= 2;
    if (ceil > cap_ms) ceil = cap_ms;
    if (ceil <= 0) return 0;
    uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *rng = x;
    return (long)(x % (uint64_t)(ceil + 1));
}

/* Sleeps ms unless stopped first. Returns non-zero when stopped. */
static int kw_sleep(struct kube_watch *w, long ms) {
    struct timespec ts = aiq_deadline(CLOCK_MONOTONIC, ms / 1000.0);
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->stop)) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0) break;
    }
    int stopped = atomic_load(&w->stop);
    pthread_mutex_unlock(&w->mu);
    return stopped;
}

static void kw_record_err(struct kube_watch *w, const aiq_err *e) {
    pthread_mutex_lock(&w->mu);
    w->st.errors++;
    w->st.last_err = *e;
    pthread_mutex_unlock(&w->mu);
}

static void kw_set_rv(struct kube_watch *w, const char *rv) {
    if (!rv || !*rv || strlen(rv) >= sizeof w->rv) return;
    memcpy(w->rv, rv, strlen(rv) + 1);
    pthread_mutex_lock(&w->mu);
    memcpy(w->st.rv, w->rv, sizeof w->rv);
    pthread_mutex_unlock(&w->mu);
}

/* Queues an event; takes ownership of obj. AIQ_ESTATE when stopped. */
static aiq_rc kw_push(struct kube_watch *w, enum kube_event_type t, json_object *obj) {
    struct kube_event *ev = calloc(1, sizeof *ev);
    if (!ev) {
        json_object_put(obj);
        return AIQ_ENOMEM;
    }
    ev->type = t;
    memcpy(ev->resource, w->name, sizeof ev->resource);
    memcpy(ev->rv, w->rv, sizeof ev->rv);
    ev->obj = obj;
    return kube_evq_push(w->q, ev, &w->stop);
}

/* Appends "&k=v" (v already escaped) or "?k=v" to url. */
static int kw_arg(char *url, size_t *n, const char *k, const char *v) {
    int m = snprintf(url + *n, KW_URL_MAX - *n, "%s%s=%s", strchr(url, '?') ? "&" : "?", k, v);
    if (m < 0 || (size_t)m >= KW_URL_MAX - *n) return -1;
    *n += (size_t)m;
    return 0;
}

/* Runs the prepared easy handle to completion through the private multi
 * handle. Returns the transfer's CURLcode, or CURLE_ABORTED_BY_CALLBACK
 * when the watch was stopped. */
static CURLcode kw_perform(struct kube_watch *w) {
    CURLcode res = CURLE_OK;
    int running = 1;
    if (curl_multi_add_handle(w->multi, w->easy) != CURLM_OK) return CURLE_FAILED_INIT;
    while (running) {
        if (atomic_load(&w->stop)) {
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        if (curl_multi_perform(w->multi, &running) != CURLM_OK) {
            res = CURLE_FAILED_INIT;
            break;
        }
        if (!running) break;
        curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
    if (!running && res == CURLE_OK) {
        int left = 0;
        CURLMsg *m;
        while ((m = curl_multi_info_read(w->multi, &left)))
            if (m->msg == CURLMSG_DONE) res = m->data.result;
    }
    curl_multi_remove_handle(w->multi, w->easy);
    return res;
}

/* ---- list ---------------------------------------------------------------- */

/* GETs url into *out (parsed). Errors mapped like kube_request. */
static aiq_rc kw_get_json(struct kube_watch *w, const char *url, json_object **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct curl_slist *hdrs = NULL;
    struct kube__buf b = {.max = KW_LIST_MAX};
    char errbuf[CURL_ERROR_SIZE];
    long code = 0;
    unsigned long gen = 0;

    *out = NULL;
    rc = kube__easy_prepare(w->c, w->easy, "GET", url, NULL, 120000L, &hdrs, &gen, e);
    if (rc != AIQ_OK) goto out;
    errbuf[0] = '\0';
    curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, kube__buf_write);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, &b);
    CURLcode cc = kw_perform(w);
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, NULL);
    if (cc == CURLE_ABORTED_BY_CALLBACK && atomic_load(&w->stop)) {
        rc = aiq_err_set(e, AIQ_ESTATE, "watch %s stopped", w->name);
    } else if (cc != CURLE_OK) {
        if (b.toobig)
            rc = aiq_err_set(e, AIQ_ETOOBIG, "GET %.200s: list passes the %zu byte cap", url, b.max);
        else if (b.nomem)
            rc = aiq_err_set(e, AIQ_ENOMEM, "GET %.200s: out of memory", url);
        else
            rc = kube__curl_err(cc, errbuf, "GET", url, e);
    } else if (code >= 400) {
        /* A refused exec/oidc credential is renewed before the retry
         * after the backoff. */
        if (code == 401) kube__auth_rejected(w->c, gen);
        rc = kube__http_err((int)code, b.p, b.len, "GET", url, e);
    } else {
        rc = kube_json_parse(b.p ? b.p : "", b.len, out, e);
    }
    curl_slist_free_all(hdrs);
out:
    free(b.p);
    return rc;
}

/* Builds the list URL for one page. */
static aiq_rc kw_list_url(struct kube_watch *w, char *url, const char *cont, aiq_err *e) {
    size_t n = (size_t)snprintf(url, KW_URL_MAX, "%s", w->path);
    char num[32], esc[KW_SEL_MAX];
    snprintf(num, sizeof num, "%d", w->page_limit);
    if (kw_arg(url, &n, "limit", num)) goto toobig;
    if (cont && *cont) {
        if (kube_query_escape(esc, sizeof esc, cont, e) != AIQ_OK) return AIQ_ETOOBIG;
        if (kw_arg(url, &n, "continue", esc)) goto toobig;
    }
    if (w->label_sel && kw_arg(url, &n, "labelSelector", w->label_sel)) goto toobig;
    if (w->field_sel && kw_arg(url, &n, "fieldSelector", w->field_sel)) goto toobig;
    return AIQ_OK;
toobig:
    return aiq_err_set(e, AIQ_ETOOBIG, "list URL for %s passes %d bytes", w->path, KW_URL_MAX);
}

/* The items of a list page (root, its items array or null jitems) as new
 * references, nitems of them (NULL where an item is not an object).
 * Items lack kind/apiVersion in built-in lists: they are filled from the
 * list ("PodList" -> "Pod") so consumers see uniform objects. Returns a
 * calloc'd array (at least one place), or NULL when out of memory. */
static json_object **kw_list_items(json_object *root, json_object *jitems, size_t *nitems) {
    const char *lkind = aiq_jpath_str(root, "kind");
    const char *lapi = aiq_jpath_str(root, "apiVersion");
    char kind[128] = "";
    if (lkind && strlen(lkind) > 4 && strlen(lkind) < sizeof kind &&
        strcmp(lkind + strlen(lkind) - 4, "List") == 0)
        memcpy(kind, lkind, strlen(lkind) - 4);
    size_t n = json_object_is_type(jitems, json_type_array) ? json_object_array_length(jitems) : 0;
    json_object **items = calloc(n ? n : 1, sizeof *items);
    *nitems = n;
    if (!items) return NULL;
    bool failed = false;
    for (size_t i = 0; !failed && i < n; i++) {
        json_object *it = json_object_array_get_idx(jitems, i);
        if (!json_object_is_type(it, json_type_object)) continue;
        if (kind[0] && !json_object_object_get_ex(it, "kind", NULL))
            aiq_jset(it, "kind", json_object_new_string(kind), &failed);
        if (lapi && !json_object_object_get_ex(it, "apiVersion", NULL))
            aiq_jset(it, "apiVersion", json_object_new_string(lapi), &failed);
        items[i] = json_object_get(it);
    }
    if (failed) { /* an item without its kind would reach the consumer */
        for (size_t i = 0; i < n; i++)
            json_object_put(items[i]);
        free(items);
        return NULL;
    }
    return items;
}

/* Queues items[0..n) (NULL ones skipped) as ADDED, each reference handed
 * over and its place set to NULL; after a failure the places not yet
 * queued still hold theirs (the caller releases them). */
static aiq_rc kw_push_items(struct kube_watch *w, json_object **items, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!items[i]) continue;
        json_object *it = items[i];
        items[i] = NULL;
        aiq_rc rc = kw_push(w, KUBE_EV_ADDED, it);
        if (rc != AIQ_OK) return rc;
    }
    return AIQ_OK;
}

/* GETs one page of the list (url; page counts from 0) and queues its
 * items. The first page's resourceVersion, the snapshot all pages
 * share, goes into list_rv (cap bytes) and RELIST_BEGIN is queued then.
 * *cont becomes the next page's continue token (caller frees), or NULL
 * after the last page. */
static aiq_rc kw_list_page(struct kube_watch *w, const char *url, int page, char *list_rv,
                           size_t cap, char **cont, aiq_err *e) {
    json_object *root = NULL, *jitems = NULL, **items = NULL;
    size_t nitems = 0;
    aiq_rc rc = kw_get_json(w, url, &root, e);
    if (rc != AIQ_OK) goto out;
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "items", &jitems) ||
        !(json_object_is_type(jitems, json_type_array) || json_object_is_type(jitems, json_type_null))) {
        rc = aiq_err_field(e, AIQ_EINVAL, "items", "GET %.200s: not a list (no items array)", url);
        goto out;
    }
    const char *rv = aiq_jpath_str(root, "metadata.resourceVersion");
    if (page == 0) {
        if (!rv || !*rv || strlen(rv) >= cap) {
            rc = aiq_err_field(e, AIQ_EINVAL, "metadata.resourceVersion",
                               "GET %.200s: list has no usable metadata.resourceVersion", url);
            goto out;
        }
        memcpy(list_rv, rv, strlen(rv) + 1);
        /* Announce the relist only once the server answered, so an
         * outage does not flood the consumer with RELIST_BEGINs. A
         * later page failing leaves a BEGIN without END; the next
         * BEGIN restarts the consumer's bookkeeping. */
        rc = kw_push(w, KUBE_EV_RELIST_BEGIN, NULL);
        if (rc != AIQ_OK) goto out;
    }
    items = kw_list_items(root, jitems, &nitems);
    if (!items) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    const char *next = aiq_jpath_str(root, "metadata.continue");
    if (next && *next) {
        *cont = strdup(next);
        if (!*cont) {
            rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
            goto out;
        }
    }
    /* Drop the list so each item's only reference is ours. */
    json_object_put(root);
    root = NULL;
    rc = kw_push_items(w, items, nitems);
out:
    for (size_t i = 0; items && i < nitems; i++) json_object_put(items[i]);
    free(items);
    json_object_put(root);
    return rc;
}

/* Lists every page, queueing RELIST_BEGIN (after the first page), each item as ADDED, and
 * RELIST_END; sets w->rv to the list's resourceVersion. */
static aiq_rc kw_list(struct kube_watch *w, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    char *url = malloc(KW_URL_MAX);
    char *cont = NULL;
    char list_rv[64] = "";

    if (!url) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    for (int page = 0;; page++) {
        rc = kw_list_url(w, url, cont, e);
        if (rc != AIQ_OK) goto out;
        free(cont);
        cont = NULL;
        rc = kw_list_page(w, url, page, list_rv, sizeof list_rv, &cont, e);
        if (rc != AIQ_OK) goto out;
        if (!cont) break;
    }
    kw_set_rv(w, list_rv);
    rc = kw_push(w, KUBE_EV_RELIST_END, NULL);
    if (rc == AIQ_OK) {
        pthread_mutex_lock(&w->mu);
        w->st.lists++;
        pthread_mutex_unlock(&w->mu);
    }
out:
    free(cont);
    free(url);
    return rc;
}
/* ---- watch stream ------------------------------------------------------------ */

struct kw_stream {
    struct kube_watch *w;
    int checked, is_error;
    struct kube__buf err;  /* error body, for a Status */
    aiq_rc rc;          /* first error from framing/decoding/queueing */
    aiq_err *e;
    unsigned long events;
    bool undecodable;   /* rc is a line we cannot frame or decode */
};

static aiq_rc kw_on_line(void *ud, const char *line, size_t len) {
    struct kw_stream *s = ud;
    struct kube_watch *w = s->w;
    enum kube_event_type t;
    json_object *obj = NULL;
    aiq_rc rc = kube_watch_decode(line, len, &t, &obj, s->e);
    if (rc != AIQ_OK) {
        if (rc == AIQ_EGONE) {
            pthread_mutex_lock(&w->mu);
            w->st.gone++;
            pthread_mutex_unlock(&w->mu);
        } else if (rc != AIQ_EHTTP && rc != AIQ_ENOMEM) {
            s->undecodable = true; /* not a server ERROR event: a bad line */
        }
        return rc;
    }
    kw_set_rv(w, aiq_jpath_str(obj, "metadata.resourceVersion"));
    s->events++;
    pthread_mutex_lock(&w->mu);
    if (t == KUBE_EV_BOOKMARK) w->st.bookmarks++;
    else w->st.events++;
    pthread_mutex_unlock(&w->mu);
    return kw_push(w, t, obj);
}

static size_t kw_stream_write(char *data, size_t size, size_t nmemb, void *ud) {
    struct kw_stream *s = ud;
    size_t n = size * nmemb;
    if (!s->checked) {
        long code = 0;
        curl_easy_getinfo(s->w->easy, CURLINFO_RESPONSE_CODE, &code);
        s->is_error = code >= 400;
        s->checked = 1;
    }
    if (s->is_error) {
        /* Keep the first MiB for the Status; drop the rest. */
        size_t keep = n < s->err.max - s->err.len ? n : s->err.max - s->err.len;
        if (keep && kube__buf_write(data, 1, keep, &s->err) != keep) return 0;
        return n;
    }
    aiq_rc rc = kube_framer_feed(&s->w->framer, data, n, kw_on_line, s, s->e);
    if (rc != AIQ_OK) {
        if (rc == AIQ_ETOOBIG) s->undecodable = true; /* past the line cap */
        s->rc = rc;
        return 0;
    }
    return n;
}

/* One watch request from w->rv. AIQ_OK when the server ended the stream
 * cleanly; AIQ_EGONE when a relist is needed; other codes for errors.
 * *events counts the events received; *undecodable says the error is a
 * line past the cap or one that is not a watch event. */
static aiq_rc kw_watch(struct kube_watch *w, unsigned long *events, bool *undecodable,
                       aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct curl_slist *hdrs = NULL;
    unsigned long gen = 0;
    struct kw_stream s = {.w = w, .err = {.max = KW_ERR_BODY_MAX}, .e = e};
    char errbuf[CURL_ERROR_SIZE];
    char *url = malloc(KW_URL_MAX);
    char num[32], rv[sizeof w->rv * 3];
    size_t n;
    long code = 0;

    *events = 0;
    if (!url) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    n = (size_t)snprintf(url, KW_URL_MAX, "%s", w->path);
    snprintf(num, sizeof num, "%d", w->timeout_s);
    if (kube_query_escape(rv, sizeof rv, w->rv, e) != AIQ_OK ||
        kw_arg(url, &n, "watch", "true") || kw_arg(url, &n, "resourceVersion", rv) ||
        kw_arg(url, &n, "allowWatchBookmarks", "true") || kw_arg(url, &n, "timeoutSeconds", num) ||
        (w->label_sel && kw_arg(url, &n, "labelSelector", w->label_sel)) ||
        (w->field_sel && kw_arg(url, &n, "fieldSelector", w->field_sel))) {
        rc = aiq_err_set(e, AIQ_ETOOBIG, "watch URL for %s passes %d bytes", w->path, KW_URL_MAX);
        goto out;
    }
    /* The server ends the watch after timeoutSeconds; allow some slack
     * before calling the stream dead. */
    rc = kube__easy_prepare(w->c, w->easy, "GET", url, NULL, (long)(w->timeout_s + 30) * 1000L,
                            &hdrs, &gen, e);
    if (rc != AIQ_OK) goto out;
    pthread_mutex_lock(&w->mu);
    w->st.watches++;
    pthread_mutex_unlock(&w->mu);
    kube_framer_reset(&w->framer);
    errbuf[0] = '\0';
    curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, kw_stream_write);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, &s);
    CURLcode cc = kw_perform(w);
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, NULL);
    *events = s.events;
    *undecodable = s.rc != AIQ_OK && s.undecodable;
    if (s.rc != AIQ_OK) {
        rc = s.rc; /* e already says what (decode, framing or stop) */
    } else if (cc == CURLE_ABORTED_BY_CALLBACK && atomic_load(&w->stop)) {
        rc = aiq_err_set(e, AIQ_ESTATE, "watch %s stopped", w->name);
    } else if (code >= 400) {
        if (code == 401) kube__auth_rejected(w->c, gen); /* renewed before the next try */
        rc = kube__http_err((int)code, s.err.p, s.err.len, "GET", url, e);
        if (rc == AIQ_EGONE) {
            pthread_mutex_lock(&w->mu);
            w->st.gone++;
            pthread_mutex_unlock(&w->mu);
        }
    } else if (cc != CURLE_OK) {
        rc = kube__curl_err(cc, errbuf, "GET", url, e);
    }
    /* A partial line at the end of a stream is dropped: we resume from the
     * last complete event's resourceVersion, so nothing is lost. */
    kube_framer_reset(&w->framer);
    curl_slist_free_all(hdrs);
out:
    free(s.err.p);
    free(url);
    return rc;
}

static void *kw_main(void *arg) {
    struct kube_watch *w = arg;
    unsigned attempt = 0;
    int need_list = 1;

    while (!atomic_load(&w->stop)) {
        aiq_err e;
        aiq_err_clear(&e);
        if (need_list) {
            aiq_rc rc = kw_list(w, &e);
            if (atomic_load(&w->stop)) break;
            if (rc != AIQ_OK) {
                kw_record_err(w, &e);
                if (kw_sleep(w, kube_backoff_ms(attempt++, w->base_ms, w->cap_ms, &w->rng))) break;
                continue;
            }
            need_list = 0;
            attempt = 0;
        }
        unsigned long got = 0;
        bool undecodable = false;
        aiq_rc rc = kw_watch(w, &got, &undecodable, &e);
        if (atomic_load(&w->stop)) break;
        if (rc == AIQ_EGONE) {
            /* Our resourceVersion fell out of the server's history: list
             * again right away; the consumer reconciles at RELIST_END. */
            need_list = 1;
            continue;
        }
        if (rc == AIQ_OK) {
            /* Clean end (timeoutSeconds). Resume at once if it carried
             * events; an empty stream is paced so a server that closes
             * immediately cannot make us spin. */
            if (got) {
                attempt = 0;
            } else if (kw_sleep(w, kube_backoff_ms(attempt++, w->base_ms, w->cap_ms, &w->rng))) {
                break;
            }
            continue;
        }
        kw_record_err(w, &e);
        if (undecodable) {
            /* Resuming would replay the same line forever, and what it
             * said is unknown: drop it and list again; the consumer
             * reconciles at RELIST_END. */
            pthread_mutex_lock(&w->mu);
            w->st.undecodable++;
            pthread_mutex_unlock(&w->mu);
            need_list = 1;
        }
        if (got) attempt = 0;
        if (kw_sleep(w, kube_backoff_ms(attempt++, w->base_ms, w->cap_ms, &w->rng))) break;
    }
    return NULL;
}

static char *kw_escaped(const char *s, aiq_err *e, aiq_rc *rc) {
    char buf[KW_SEL_MAX];
    if (!s || !*s) return NULL;
    *rc = kube_query_escape(buf, sizeof buf, s, e);
    if (*rc != AIQ_OK) return NULL;
    char *r = strdup(buf);
    if (!r) *rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    return r;
}

void kube_watch_free(struct kube_watch *w) {
    if (!w) return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        atomic_store(&w->stop, 1);
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        curl_multi_wakeup(w->multi);
        pthread_join(w->thread, NULL);
    }
    if (w->easy) curl_easy_cleanup(w->easy);
    if (w->multi) curl_multi_cleanup(w->multi);
    kube_framer_deinit(&w->framer);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->path);
    free(w->label_sel);
    free(w->field_sel);
    free(w);
}

aiq_rc kube_watch_start(struct kube_client *c, const struct kube_watch_opts *o,
                        struct kube_evq *q, struct kube_watch **out,
                        aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct kube_watch *w = NULL;

    *out = NULL;
    if (!o || !o->name || !*o->name || strlen(o->name) >= sizeof w->name)
        return aiq_err_field(e, AIQ_EINVAL, "name", "watch name must be 1..63 characters");
    if (!o->path || o->path[0] != '/' || strchr(o->path, '?') || strlen(o->path) > 1024)
        return aiq_err_field(e, AIQ_EINVAL, "path", "watch path \"%.100s\" must start with '/' and have no query",
                             o->path ? o->path : "");
    w = calloc(1, sizeof *w);
    if (!w) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->c = c;
    w->q = q;
    memcpy(w->name, o->name, strlen(o->name) + 1);
    w->page_limit = o->page_limit > 0 ? o->page_limit : 500;
    w->timeout_s = o->timeout_seconds > 0 ? o->timeout_seconds : 300;
    w->base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 200;
    w->cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : 30000;
    w->max_line = o->max_line > 0 ? o->max_line : KUBE_FRAMER_MAX_LINE;
    kube_framer_init(&w->framer, w->max_line);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    w->rng = ((uint64_t)now.tv_nsec << 20) ^ (uint64_t)(uintptr_t)w ^ 0x9e3779b97f4a7c15ull;
    w->path = strdup(o->path);
    if (!w->path) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    w->label_sel = kw_escaped(o->label_selector, e, &rc);
    if (rc != AIQ_OK) goto out_free;
    w->field_sel = kw_escaped(o->field_selector, e, &rc);
    if (rc != AIQ_OK) goto out_free;
    w->multi = curl_multi_init();
    w->easy = curl_easy_init();
    if (!w->multi || !w->easy) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "curl handle creation failed");
        goto out_free;
    }
    if (pthread_create(&w->thread, NULL, kw_main, w) != 0) {
        rc = aiq_err_set(e, AIQ_EIO, "cannot start the watch thread for %s", o->name);
        goto out_free;
    }
    w->started = 1;
    *out = w;
    return AIQ_OK;
out_free:
    kube_watch_free(w);
    return rc;
}

void kube_watch_get_stats(struct kube_watch *w, struct kube_watch_stats *out) {
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    pthread_mutex_unlock(&w->mu);
}
