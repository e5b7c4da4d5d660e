/* test_kube_watch.c -- watch framing (every split position, \r\n, empty
 * lines, caps, garbage), event decoding, the event queue, backoff, and
 * list+watch+resume+410 relist against an in-test HTTP server. */
#include "test/unit/th.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/json.h"
#include "operator/kube_watch.h"
#include "test/unit/kube_testsrv.h"

/* ---- framer ---------------------------------------------------------------- */

struct lines {
    char got[16][128];
    int n;
    int fail_at; /* return AIQ_EINVAL on this line index (-1: never) */
};

static aiq_rc collect(void *ud, const char *line, size_t len) {
    struct lines *l = ud;
    if (l->n == l->fail_at) return AIQ_EINVAL;
    if (l->n < 16 && len < 128) {
        memcpy(l->got[l->n], line, len);
        l->got[l->n][len] = '\0';
    }
    l->n++;
    return AIQ_OK;
}

TEST(framer_split_at_every_byte) {
    const char *stream = "{\"a\":1}\n\r\n{\"b\":2}\r\n\n\n{\"c\":\"x\\ny\"}\n{\"d\":4}";
    size_t n = strlen(stream);
    for (size_t cut = 0; cut <= n; cut++) {
        struct kube_framer f;
        struct lines l = {.fail_at = -1};
        kube_framer_init(&f, 64);
        CHECK_INT(kube_framer_feed(&f, stream, cut, collect, &l, NULL), AIQ_OK);
        CHECK_INT(kube_framer_feed(&f, stream + cut, n - cut, collect, &l, NULL), AIQ_OK);
        CHECK_INT(l.n, 3);
        CHECK_STR(l.got[0], "{\"a\":1}");
        CHECK_STR(l.got[1], "{\"b\":2}");
        CHECK_STR(l.got[2], "{\"c\":\"x\\ny\"}");
        CHECK_INT(kube_framer_pending(&f), 7); /* {"d":4} waits for its newline */
        kube_framer_deinit(&f);
    }
    /* One byte at a time. */
    struct kube_framer f;
    struct lines l = {.fail_at = -1};
    kube_framer_init(&f, 64);
    for (size_t i = 0; i < n; i++) CHECK_INT(kube_framer_feed(&f, stream + i, 1, collect, &l, NULL), AIQ_OK);
    CHECK_INT(kube_framer_feed(&f, "\n", 1, collect, &l, NULL), AIQ_OK);
    CHECK_INT(l.n, 4);
    CHECK_STR(l.got[3], "{\"d\":4}");
    kube_framer_deinit(&f);
}

TEST(framer_line_cap) {
    struct kube_framer f;
    struct lines l = {.fail_at = -1};
    aiq_err e;
    char line[64];
    kube_framer_init(&f, 16);
    memset(line, 'x', sizeof line);
    /* Exactly at the cap passes, with or without \r. */
    CHECK_INT(kube_framer_feed(&f, line, 16, collect, &l, NULL), AIQ_OK);
    CHECK_INT(kube_framer_feed(&f, "\r\n", 2, collect, &l, NULL), AIQ_OK);
    CHECK_INT(kube_framer_feed(&f, line, 16, collect, &l, NULL), AIQ_OK);
    CHECK_INT(kube_framer_feed(&f, "\n", 1, collect, &l, NULL), AIQ_OK);
    CHECK_INT(l.n, 2);
    /* One past the cap, whole in one chunk. */
    aiq_err_clear(&e);
    char big[20];
    memset(big, 'y', 17);
    big[17] = '\n';
    CHECK_INT(kube_framer_feed(&f, big, 18, collect, &l, &e), AIQ_ETOOBIG);
    CHECK(strstr(e.message, "16 byte cap") != NULL);
    CHECK_INT(l.n, 2);
    /* Growing across chunks: stopped without buffering past the cap. */
    aiq_err_clear(&e);
    aiq_rc rc = AIQ_OK;
    for (int i = 0; i < 10 && rc == AIQ_OK; i++) rc = kube_framer_feed(&f, line, 5, collect, &l, &e);
    CHECK_INT(rc, AIQ_ETOOBIG);
    CHECK(f.cap <= 17);
    CHECK_INT(kube_framer_pending(&f), 0); /* reset after the error */
    /* Usable again after the error. */
    CHECK_INT(kube_framer_feed(&f, "ok\n", 3, collect, &l, NULL), AIQ_OK);
    CHECK_STR(l.got[2], "ok");
    kube_framer_deinit(&f);
    kube_framer_deinit(NULL);
}

TEST(framer_callback_error_stops) {
    struct kube_framer f;
    struct lines l = {.fail_at = 1};
    kube_framer_init(&f, 0);
    CHECK_INT(kube_framer_feed(&f, "a\nb\nc\npartial", 13, collect, &l, NULL), AIQ_EINVAL);
    CHECK_INT(l.n, 1);
    CHECK_INT(kube_framer_pending(&f), 0);
    kube_framer_deinit(&f);
}

static aiq_rc decode(const char *s, enum kube_event_type *t, json_object **o, aiq_err *e) {
    aiq_err_clear(e);
    return kube_watch_decode(s, strlen(s), t, o, e);
}

TEST(decode_events_and_garbage) {
    enum kube_event_type t = 0;
    json_object *o = NULL;
    aiq_err e;
    CHECK_INT(decode("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"42\"}}}", &t, &o, &e), AIQ_OK);
    CHECK_INT(t, KUBE_EV_MODIFIED);
    CHECK_STR(aiq_jpath_str(o, "metadata.resourceVersion"), "42");
    json_object_put(o);
    CHECK_INT(decode(" {\"type\":\"BOOKMARK\",\"object\":{}} ", &t, &o, &e), AIQ_OK);
    CHECK_INT(t, KUBE_EV_BOOKMARK);
    json_object_put(o);

    CHECK_INT(decode("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
                     "\"message\":\"too old resource version: 1 (50)\"}}", &t, &o, &e), AIQ_EGONE);
    CHECK(o == NULL);
    CHECK_INT(e.http_status, 410);
    CHECK_STR(e.reason, "Expired");
    CHECK_STR(e.message, "too old resource version: 1 (50)");
    CHECK_INT(decode("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"message\":\"etcd down\"}}",
                     &t, &o, &e), AIQ_EHTTP);
    CHECK_INT(e.http_status, 500);

    CHECK_INT(decode("not json", &t, &o, &e), AIQ_EPARSE);
    CHECK_INT(decode("{\"type\":\"ADDED\",\"object\":{}} x", &t, &o, &e), AIQ_EPARSE);
    CHECK_INT(e.offset, 29); /* the "x" */
    CHECK_INT(decode("{\"type\":\"ADDED\",\"object\":{", &t, &o, &e), AIQ_EPARSE);
    CHECK_INT(decode("[1,2]", &t, &o, &e), AIQ_EINVAL);
    CHECK_INT(decode("{\"type\":\"ADDED\"}", &t, &o, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "object");
    CHECK_INT(decode("{\"type\":7,\"object\":{}}", &t, &o, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "type");
    CHECK_INT(decode("{\"type\":\"RENAMED\",\"object\":{}}", &t, &o, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "\"RENAMED\"") != NULL);
    CHECK_INT(decode("{\"type\":\"ADDED\",\"object\":{\"n\":\"\xff\xfe\"}}", &t, &o, &e), AIQ_EPARSE);
    CHECK_INT(decode("{'type':'ADDED','object':{}}", &t, &o, &e), AIQ_EPARSE);
    /* Nesting the real API server stores (up to 10,000 levels) decodes,
     * so one deep object cannot make a whole watch undecodable; deeper
     * than the server allows is refused. */
    size_t cap = 2 * 10100 + 64, n;
    char *deep = malloc(cap);
    CHECK(deep != NULL);
    for (int levels = 100; levels <= 10100; levels += 10000) {
        n = (size_t)snprintf(deep, cap, "{\"type\":\"ADDED\",\"object\":{\"a\":");
        for (int i = 0; i < levels; i++) deep[n++] = '[';
        for (int i = 0; i < levels; i++) deep[n++] = ']';
        deep[n++] = '}';
        deep[n++] = '}';
        deep[n] = '\0';
        if (levels == 100) {
            CHECK_INT(decode(deep, &t, &o, &e), AIQ_OK);
            json_object_put(o);
            o = NULL;
        } else {
            CHECK_INT(decode(deep, &t, &o, &e), AIQ_EPARSE);
            CHECK(strstr(e.message, "deeper than 10016") != NULL);
        }
    }
    free(deep);
    CHECK(o == NULL);
}

TEST(backoff_full_jitter_bounds) {
    uint64_t rng = 12345;
    long max_seen = 0;
    int zeros_only = 1;
    for (unsigned a = 0; a < 40; a++) {
        for (int i = 0; i < 50; i++) {
            long d = kube_backoff_ms(a, 200, 30000, &rng);
            long ceil = 200L << (a < 8 ? a : 8);
            if (ceil > 30000) ceil = 30000;
            CHECK(d >= 0 && d <= ceil);
            if (d > max_seen) max_seen = d;
            if (d) zeros_only = 0;
        }
    }
    CHECK(!zeros_only);
    CHECK(max_seen > 15000); /* the cap region is reached */
    CHECK(max_seen <= 30000);
}

TEST(evq_fifo_timeout_cancel) {
    struct kube_evq *q = NULL;
    struct kube_event *ev = NULL;
    CHECK_INT(kube_evq_create(2, &q, NULL), AIQ_OK);
    CHECK_INT(kube_evq_pop(q, 0, &ev), AIQ_ETIMEOUT);
    CHECK_INT(kube_evq_pop(q, 30, &ev), AIQ_ETIMEOUT);
    CHECK(ev == NULL);
    for (int i = 0; i < 2; i++) {
        struct kube_event *x = calloc(1, sizeof *x);
        x->type = KUBE_EV_ADDED + i;
        x->obj = json_object_new_int(i);
        CHECK_INT(kube_evq_push(q, x, NULL), AIQ_OK);
    }
    atomic_int cancel = 1;
    struct kube_event *x = calloc(1, sizeof *x);
    x->obj = json_object_new_int(9);
    CHECK_INT(kube_evq_push(q, x, &cancel), AIQ_ESTATE); /* full + cancelled: freed */
    CHECK_INT(kube_evq_len(q), 2);
    CHECK_INT(kube_evq_pop(q, -1, &ev), AIQ_OK);
    CHECK_INT(ev->type, KUBE_EV_ADDED);
    kube_event_free(ev);
    kube_event_free(NULL);
    kube_evq_free(q); /* frees the one still queued */
    kube_evq_free(NULL);
}

/* ---- list + watch against the tsrv ----------------------------------------- */

#define AIJOB(name, rv) \
    "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}"
#define POD(name, rv) "{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}"

struct scen {
    int watches; /* watch requests served so far */
    int lists;
};

static const char *query_val(const struct tsrv_req *r, const char *key, char *buf, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = r->query;
    while ((p = strstr(p, pat))) {
        if (p == r->query || p[-1] == '&') {
            p += strlen(pat);
            size_t n = strcspn(p, "&");
            if (n >= cap) n = cap - 1;
            memcpy(buf, p, n);
            buf[n] = '\0';
            return buf;
        }
        p++;
    }
    return NULL;
}

/* list(rv 10, two pages) -> watch 10: ADDED d, BOOKMARK 12, MODIFIED a
 * 13, close -> watch 13: HTTP 410 -> list(rv 20) -> watch 20: DELETED d
 * 21, ERROR 410 -> list(rv 30) -> watch 30: held open. */
static void scen_route(struct tsrv *s, const struct tsrv_req *r, struct tsrv_resp *o) {
    struct scen *sc = s->ud;
    char v[64];
    if (strcmp(r->path, "/apis/aiq.dev/v1alpha1/aijobs") != 0) {
        o->status = 404;
        o->body = "{}";
        return;
    }
    if (query_val(r, "watch", v, sizeof v)) {
        const char *rv = query_val(r, "resourceVersion", v, sizeof v);
        sc->watches++;
        if (rv && strcmp(rv, "10") == 0) {
            o->chunks[0] = "{\"type\":\"ADDED\",\"object\":" AIJOB("d", "11") "}\n{\"type\":\"BOO";
            o->chunks[1] = "KMARK\",\"object\":{\"kind\":\"AIJob\",\"metadata\":{\"resourceVersion\":\"12\"}}}\r";
            o->chunks[2] = "\n\n{\"type\":\"MODIFIED\",\"object\":" AIJOB("a", "13") "}\n";
            o->nchunks = 3;
        } else if (rv && strcmp(rv, "13") == 0) {
            o->status = 410;
            o->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410,"
                      "\"message\":\"too old resource version: 13 (19)\"}";
        } else if (rv && strcmp(rv, "20") == 0) {
            o->chunks[0] = "{\"type\":\"DELETED\",\"object\":" AIJOB("d", "21") "}\n";
            o->chunks[1] = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
                           "\"message\":\"too old resource version: 21 (29)\"}}\n";
            o->nchunks = 2;
            o->hold_ms = 3000; /* the client must leave on its own */
        } else {
            o->chunks[0] = "\n";
            o->nchunks = 1;
            o->hold_ms = 20000;
        }
        return;
    }
    sc->lists++;
    if (query_val(r, "continue", v, sizeof v)) {
        o->body = "{\"kind\":\"AIJobList\",\"apiVersion\":\"aiq.dev/v1alpha1\",\"metadata\":{\"resourceVersion\":\"10\"},"
                  "\"items\":[" AIJOB("c", "9") "]}";
    } else if (sc->watches == 0) {
        /* Items without kind/apiVersion, as built-in lists send them. */
        o->body = "{\"kind\":\"AIJobList\",\"apiVersion\":\"aiq.dev/v1alpha1\","
                  "\"metadata\":{\"resourceVersion\":\"10\",\"continue\":\"tok/1\"},"
                  "\"items\":[" POD("a", "5") "," POD("b", "6") "]}";
    } else if (sc->watches == 2) {
        o->body = "{\"kind\":\"AIJobList\",\"apiVersion\":\"aiq.dev/v1alpha1\",\"metadata\":{\"resourceVersion\":\"20\"},"
                  "\"items\":[" AIJOB("a", "13") "," AIJOB("d", "11") "]}";
    } else {
        o->body = "{\"kind\":\"AIJobList\",\"apiVersion\":\"aiq.dev/v1alpha1\",\"metadata\":{\"resourceVersion\":\"30\"},"
                  "\"items\":[" AIJOB("a", "13") "]}";
    }
}

/* Pops the next event, "TYPE name" or "TYPE" into buf. With aijob, an
 * ADDED or MODIFIED object must also carry the AIJob kind, filled from
 * the list when the server left it out. */
static const char *pop_ev(struct kube_evq *q, char *buf, size_t cap, bool aijob) {
    struct kube_event *ev = NULL;
    if (kube_evq_pop(q, 10000, &ev) != AIQ_OK) {
        snprintf(buf, cap, "(timeout)");
        return buf;
    }
    const char *name = aiq_jpath_str(ev->obj, "metadata.name");
    snprintf(buf, cap, "%s%s%s", kube_event_type_name(ev->type), name ? " " : "", name ? name : "");
    if (aijob && (ev->type == KUBE_EV_ADDED || ev->type == KUBE_EV_MODIFIED)) {
        CHECK_STR(aiq_jpath_str(ev->obj, "kind"), "AIJob");
        CHECK_STR(aiq_jpath_str(ev->obj, "apiVersion"), "aiq.dev/v1alpha1");
        CHECK_STR(ev->resource, "aijobs");
    }
    kube_event_free(ev);
    return buf;
}

static const char *next_ev(struct kube_evq *q, char *buf, size_t cap) {
    return pop_ev(q, buf, cap, true);
}

TEST(list_watch_resume_and_relist_on_410) {
    struct tsrv s;
    struct scen sc = {0};
    CHECK(tsrv_start(&s, scen_route, &sc) == 0);
    struct kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = s.url;
    struct kube_client *c = NULL;
    struct kube_evq *q = NULL;
    struct kube_watch *w = NULL;
    CHECK_INT(kube_client_create(&cfg, NULL, &c, NULL), AIQ_OK);
    CHECK_INT(kube_evq_create(0, &q, NULL), AIQ_OK);
    struct kube_watch_opts o = {.name = "aijobs", .path = "/apis/aiq.dev/v1alpha1/aijobs",
                                .label_selector = "aiq.dev/managed=true,tier in (a b)",
                                .page_limit = 2, .timeout_seconds = 60,
                                .backoff_base_ms = 10, .backoff_cap_ms = 50};
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(kube_watch_start(c, &o, q, &w, &e), AIQ_OK);

    static const char *const want[] = {
        "RELIST_BEGIN", "ADDED a", "ADDED b", "ADDED c", "RELIST_END",
        "ADDED d", "BOOKMARK", "MODIFIED a",
        "RELIST_BEGIN", "ADDED a", "ADDED d", "RELIST_END",   /* after HTTP 410 */
        "DELETED d",
        "RELIST_BEGIN", "ADDED a", "RELIST_END",              /* after ERROR 410 */
    };
    char buf[128];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK_STR(next_ev(q, buf, sizeof buf), want[i]);

    /* Wait for the last watch request (rv 30) to be logged. */
    char v[64];
    for (int i = 0; i < 500; i++) {
        struct tsrv_req last = tsrv_log(&s, tsrv_nlog(&s) - 1);
        if (query_val(&last, "resourceVersion", v, sizeof v) && strcmp(v, "30") == 0) break;
        tsrv_sleep_ms(10);
    }
    struct kube_watch_stats st;
    kube_watch_get_stats(w, &st);
    CHECK_INT(st.lists, 3);
    CHECK_INT(st.gone, 2);
    CHECK_INT(st.bookmarks, 1);
    CHECK_INT(st.events, 3);
    CHECK_STR(st.rv, "30");

    /* The request sequence the API server saw. */
    const char *const rvs[] = {NULL, NULL, "10", "13", NULL, "20", NULL, "30"};
    CHECK_INT(tsrv_nlog(&s), 8);
    for (int i = 0; i < 8 && i < tsrv_nlog(&s); i++) {
        struct tsrv_req r = tsrv_log(&s, i);
        CHECK_STR(query_val(&r, "labelSelector", v, sizeof v), "aiq.dev/managed=true,tier in (a b)");
        if (rvs[i]) {
            CHECK_STR(query_val(&r, "watch", v, sizeof v), "true");
            CHECK_STR(query_val(&r, "resourceVersion", v, sizeof v), rvs[i]);
            CHECK_STR(query_val(&r, "allowWatchBookmarks", v, sizeof v), "true");
            CHECK_STR(query_val(&r, "timeoutSeconds", v, sizeof v), "60");
        } else {
            CHECK(query_val(&r, "watch", v, sizeof v) == NULL);
            CHECK_STR(query_val(&r, "limit", v, sizeof v), "2");
        }
    }
    struct tsrv_req r1 = tsrv_log(&s, 1);
    CHECK_STR(query_val(&r1, "continue", v, sizeof v), "tok/1");

    /* Stopping interrupts the held-open stream. */
    kube_watch_free(w);
    CHECK_INT(kube_evq_len(q), 0);
    kube_evq_free(q);
    kube_client_free(c);
    tsrv_stop(&s);
}

/* Errors: an oversized line and a garbage line are dropped and the
 * collection listed again (resuming would replay them forever: the server
 * sends them on every watch from that resourceVersion); an HTTP 500
 * resumes from the same resourceVersion after a backoff; a list error
 * retries. */
struct err_scen {
    int lists, watches;
};

static void err_route(struct tsrv *s, const struct tsrv_req *r, struct tsrv_resp *o) {
    struct err_scen *sc = s->ud;
    char v[64];
    if (!query_val(r, "watch", v, sizeof v)) {
        switch (sc->lists++) {
        case 0:
            o->status = 503;
            o->ctype = "text/plain";
            o->body = "warming up";
            return;
        case 1:
            o->body = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},\"items\":[]}";
            return;
        case 2: /* after the oversized line: p1 and the long-named pod */
            o->body = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"110\"},\"items\":["
                      "{\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"101\"}},"
                      "{\"metadata\":{\"name\":\"long\",\"resourceVersion\":\"102\"}}]}";
            return;
        default: /* after the garbage line */
            o->body = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"120\"},\"items\":["
                      "{\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"101\"}}]}";
            return;
        }
    }
    switch (sc->watches++) {
    case 0: /* 200 bytes on one line: past the 128 byte cap */
        o->chunks[0] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"101\"}}}\n"
                       "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}}\n";
        o->nchunks = 1;
        break;
    case 1:
        o->chunks[0] = "garbage\n";
        o->nchunks = 1;
        break;
    case 2:
        o->status = 500;
        o->body = "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"code\":500,\"message\":\"etcd timeout\"}";
        break;
    default:
        o->chunks[0] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p2\",\"resourceVersion\":\"102\"}}}\n";
        o->nchunks = 1;
        o->hold_ms = 20000;
    }
}

TEST(watch_errors_back_off_and_resume) {
    struct tsrv s;
    struct err_scen sc = {0};
    CHECK(tsrv_start(&s, err_route, &sc) == 0);
    struct kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = s.url;
    struct kube_client *c = NULL;
    struct kube_evq *q = NULL;
    struct kube_watch *w = NULL;
    CHECK_INT(kube_client_create(&cfg, NULL, &c, NULL), AIQ_OK);
    CHECK_INT(kube_evq_create(0, &q, NULL), AIQ_OK);
    struct kube_watch_opts o = {.name = "pods", .path = "/api/v1/pods", .max_line = 128,
                                .backoff_base_ms = 5, .backoff_cap_ms = 20};
    CHECK_INT(kube_watch_start(c, &o, q, &w, NULL), AIQ_OK);
    char buf[128];
    /* The first list failed (503) and was retried: one RELIST_BEGIN. */
    CHECK_STR(next_ev(q, buf, sizeof buf), "RELIST_BEGIN");
    CHECK_STR(next_ev(q, buf, sizeof buf), "RELIST_END");
    struct kube_event *ev = NULL;
    CHECK_INT(kube_evq_pop(q, 10000, &ev), AIQ_OK);
    if (ev) {
        CHECK_INT(ev->type, KUBE_EV_ADDED);
        CHECK_STR(aiq_jpath_str(ev->obj, "metadata.name"), "p1");
        CHECK_STR(aiq_jpath_str(ev->obj, "kind"), NULL); /* watch objects are not touched */
        CHECK_STR(ev->rv, "101");
        kube_event_free(ev);
    }
    /* The oversized line: listed again (the long-named pod comes from
     * the list); the garbage line: listed again; then p2 from the watch. */
    static const char *const want[] = {"RELIST_BEGIN", "ADDED p1", "ADDED long", "RELIST_END",
                                       "RELIST_BEGIN", "ADDED p1", "RELIST_END", "ADDED p2"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK_STR(pop_ev(q, buf, sizeof buf, false), want[i]);
    struct kube_watch_stats st;
    kube_watch_get_stats(w, &st);
    CHECK_INT(st.lists, 3);
    CHECK_INT(st.gone, 0);
    CHECK_INT(st.errors, 4); /* 503 list, oversized line, garbage, 500 */
    CHECK_INT(st.undecodable, 2);
    CHECK_INT(st.last_err.http_status, 500);
    CHECK_STR(st.last_err.message, "etcd timeout");
    /* list (503), list, watch 100 (oversized), list, watch 110 (garbage),
     * list, watch 120 (500), watch 120 again: the 500 resumes, no relist. */
    static const char *const rvs[] = {NULL, NULL, "100", NULL, "110", NULL, "120", "120"};
    char v[64];
    int n = tsrv_nlog(&s);
    CHECK_INT(n, 8);
    for (int i = 0; i < n && i < 8; i++) {
        struct tsrv_req r = tsrv_log(&s, i);
        if (rvs[i]) {
            CHECK_STR(query_val(&r, "watch", v, sizeof v), "true");
            CHECK_STR(query_val(&r, "resourceVersion", v, sizeof v), rvs[i]);
        } else {
            CHECK(query_val(&r, "watch", v, sizeof v) == NULL);
        }
    }
    kube_watch_free(w);
    kube_evq_free(q);
    kube_client_free(c);
    tsrv_stop(&s);
}

TEST(watch_start_rejects_bad_opts) {
    struct kube_watch *w = (struct kube_watch *)1;
    aiq_err e;
    struct kube_watch_opts o = {.name = "x", .path = "/api/v1/pods?watch=1"};
    aiq_err_clear(&e);
    CHECK_INT(kube_watch_start(NULL, &o, NULL, &w, &e), AIQ_EINVAL);
    CHECK_STR(e.field, "path");
    CHECK(w == NULL);
    kube_watch_free(NULL);
}
