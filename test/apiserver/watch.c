/* watch.c -- watch streams: one JSON event per line
 * ({"type":..., "object":...}), replayed from the event history after the
 * client's resourceVersion (one ERROR event with a 410 Expired Status,
 * then the end of the stream, when it fell out of the history),
 * ADDED events for the current state when the watch starts at 0 or
 * nothing, label/field selectors, timeoutSeconds, BOOKMARK events when
 * asked, one-row Tables when the Accept header asks for Table, and the
 * injected watch cut. The stream is produced by a libmicrohttpd content
 * reader that blocks on the server's condition variable; each connection
 * has its own thread, so a waiting watch holds up nobody. */
#include "test/apiserver/apisrv_int.h"

#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/apiserver/selector.h"

#define WATCH_BOOKMARK_S 5.0
#define WATCH_MAX_PENDING (64u << 20)

struct apisrv__watch {
    apisrv *s;
    char key[APISRV__KEY];
    char ns[APISRV__MAX_NAME + 1];   /* "" = every namespace */
    struct sel *ls, *fs;
    bool table, bookmarks, defs_sent, done;
    char include[16];
    long long last_rv;
    double deadline;                 /* 0 = none */
    double last_send;
    int fd;                          /* the client's socket, -1 if unknown */
    char *buf;
    size_t len, off, cap;
};

/* Makes room for n more bytes (and a newline) in wt's pending buffer.
 * False when it cannot: the client is past WATCH_MAX_PENDING behind (so
 * slow it is cut off) or memory ran out; wt is then marked done. */
static bool watch_reserve(struct apisrv__watch *wt, size_t n) {
    if (wt->len + n + 2 <= wt->cap) return true;
    size_t nc = wt->cap ? wt->cap : 8192;
    while (nc < wt->len + n + 2) nc *= 2;
    char *nb = nc > WATCH_MAX_PENDING ? NULL : realloc(wt->buf, nc);
    if (!nb) {
        wt->done = true;
        return false;
    }
    wt->buf = nb;
    wt->cap = nc;
    return true;
}

static void watch_append(struct apisrv__watch *wt, const char *text) {
    size_t n = strlen(text);
    if (!watch_reserve(wt, n)) return;
    memcpy(wt->buf + wt->len, text, n);
    wt->len += n;
    wt->buf[wt->len++] = '\n';
    wt->buf[wt->len] = 0;
}

/* Formats one event for obj (borrowed) of type t (NULL: raw object). */
static void watch_event(struct apisrv__watch *wt, const char *type,
                        const struct apisrv__type *t, json_object *obj) {
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "type", json_object_new_string(type));
    if (wt->table && t) {
        json_object *items = json_object_new_array();
        json_object_array_add(items, json_object_get(obj));
        json_object_object_add(ev, "object",
            apisrv__table(wt->s, t, items, wt->include[0] ? wt->include : NULL, !wt->defs_sent));
        json_object_put(items);
        wt->defs_sent = true;
    } else {
        json_object_object_add(ev, "object", json_object_get(obj));
    }
    watch_append(wt, json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN));
    json_object_put(ev);
    wt->last_send = apisrv__now();
}

/* Formats one event of the history for a watch that wants raw objects:
 * the object is serialized once per event and the text shared by every
 * watcher, instead of once per watcher. The line is byte for byte what
 * watch_event would make. */
static void watch_event_hist(struct apisrv__watch *wt, const char *type,
                             struct apisrv__event *e) {
    static const char head[] = "{\"type\":\"", mid[] = "\",\"object\":";
    size_t tl, ol, need;
    if (!e->text) {
        const char *t = json_object_to_json_string_ext(e->obj, JSON_C_TO_STRING_PLAIN);
        e->text = t ? strdup(t) : NULL;
        if (!e->text) {
            watch_event(wt, type, NULL, e->obj);
            return;
        }
    }
    tl = strlen(type);
    ol = strlen(e->text);
    need = sizeof head - 1 + tl + sizeof mid - 1 + ol + 1;
    if (!watch_reserve(wt, need)) return;
    memcpy(wt->buf + wt->len, head, sizeof head - 1);
    wt->len += sizeof head - 1;
    memcpy(wt->buf + wt->len, type, tl);
    wt->len += tl;
    memcpy(wt->buf + wt->len, mid, sizeof mid - 1);
    wt->len += sizeof mid - 1;
    memcpy(wt->buf + wt->len, e->text, ol);
    wt->len += ol;
    wt->buf[wt->len++] = '}';
    wt->buf[wt->len++] = '\n';
    wt->buf[wt->len] = 0;
    wt->last_send = apisrv__now();
}

static void watch_expired(struct apisrv__watch *wt, long long want, long long have) {
    struct apisrv__st st;
    apisrv__st_init(&st);
    apisrv__st_set(&st, 410, "Expired", "too old resource version: %lld (%lld)", want, have);
    json_object *o = apisrv__st_json(&st);
    watch_event(wt, "ERROR", NULL, o);
    json_object_put(o);
    apisrv__st_deinit(&st);
    wt->done = true;
}

struct watch_init { struct apisrv__watch *wt; const struct apisrv__type *t; };

static int watch_initial_row(void *u, const char *key, const char *ns,
                             const char *name, const char *json) {
    struct watch_init *wi = u;
    json_object *o = apisrv__parse(json);
    (void)key; (void)ns; (void)name;
    if (o && sel_match(wi->wt->ls, o) && sel_match(wi->wt->fs, o))
        watch_event(wi->wt, "ADDED", wi->t, o);
    json_object_put(o);
    return 0;
}

/* See apisrv_int.h. */
void apisrv__watch_start(apisrv *s, struct apisrv__req *r,
                         const struct apisrv__target *tg,
                         struct apisrv__resp *w) {
    struct apisrv__watch *wt = calloc(1, sizeof *wt);
    const char *rvq = apisrv__q(r, "resourceVersion"), *to = apisrv__q(r, "timeoutSeconds");
    const char *bm = apisrv__q(r, "allowWatchBookmarks"), *inc = apisrv__q(r, "includeObject");
    double now = apisrv__now();
    if (!wt) {
        apisrv__resp_err(w, 500, "InternalError", "out of memory");
        return;
    }
    wt->s = s;
    snprintf(wt->key, sizeof wt->key, "%s", tg->t->key);
    snprintf(wt->ns, sizeof wt->ns, "%s", tg->t->namespaced && tg->ns ? tg->ns : "");
    snprintf(wt->include, sizeof wt->include, "%s", inc ? inc : "");
    wt->table = apisrv__wants_table(r);
    wt->bookmarks = bm && !strcmp(bm, "true");
    wt->last_send = now;
    wt->fd = -1;
    if (r->conn) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) wt->fd = ci->connect_fd;
    }
    if (apisrv__selectors(r, &wt->ls, &wt->fs, w)) goto out_fail;
    if (to && to[0]) {
        char *end;
        long sec = strtol(to, &end, 10);
        if (!*end && sec > 0) wt->deadline = now + (double)sec;
    }
    if (s->faults.watch_cut_s > 0 &&
        (wt->deadline == 0 || wt->deadline > now + s->faults.watch_cut_s))
        wt->deadline = now + s->faults.watch_cut_s;
    if (!rvq || !rvq[0] || !strcmp(rvq, "0")) {
        struct watch_init wi = {wt, tg->t};
        const char *one = sel_required_value(wt->fs, "metadata.name");
        wt->last_rv = s->rv;
        if (one && (!tg->t->namespaced || wt->ns[0])) {
            json_object *o = apisrv__store_get(s, wt->key, wt->ns[0] ? wt->ns : NULL, one);
            if (o && sel_match(wt->ls, o) && sel_match(wt->fs, o))
                watch_event(wt, "ADDED", tg->t, o);
            json_object_put(o);
        } else {
            apisrv__store_scan(s, wt->key, wt->ns[0] ? wt->ns : NULL, NULL, NULL,
                               watch_initial_row, &wi);
        }
    } else {
        char *end;
        long long n = strtoll(rvq, &end, 10);
        if (*end || n < 0) {
            apisrv__resp_err(w, 400, "BadRequest", "invalid resourceVersion %.64s", rvq);
            goto out_fail;
        }
        /* as the real server: the watch starts (200) and its only event is
         * an ERROR carrying the 410 Expired Status, then it ends */
        long long oldest = tg->t->since_rv > s->hist_base_rv ? tg->t->since_rv : s->hist_base_rv;
        if (n < oldest) watch_expired(wt, n, oldest + 1);
        wt->last_rv = n;
    }
    s->n_watches++;
    w->code = 200;
    w->ctype = "application/json";
    w->watch = wt;
    return;
out_fail:
    sel_free(wt->ls);
    sel_free(wt->fs);
    free(wt->buf);
    free(wt);
}

/* Formats every history event after wt->last_rv that the watch selects. */
static void watch_collect(struct apisrv__watch *wt) {
    apisrv *s = wt->s;
    if (wt->last_rv < s->hist_base_rv) {
        watch_expired(wt, wt->last_rv, s->hist_base_rv + 1);
        return;
    }
    if (s->hist_len == 0) return;
    long long first = s->hist[s->hist_head].rv;
    long long start = wt->last_rv + 1 - first;
    if (start < 0) start = 0;
    for (long long i = start; i < s->hist_len && !wt->done; i++) {
        struct apisrv__event *e = &s->hist[(s->hist_head + i) % s->hist_cap];
        wt->last_rv = e->rv;
        if (strcmp(e->key, wt->key) || (wt->ns[0] && strcmp(e->ns, wt->ns))) continue;
        bool now_in = sel_match(wt->ls, e->obj) && sel_match(wt->fs, e->obj);
        const char *type = e->type;
        if (e->prev && !strcmp(type, "MODIFIED")) {
            /* as the real server: an object entering the selection is
             * ADDED, one leaving it is DELETED */
            bool was_in = sel_match(wt->ls, e->prev) && sel_match(wt->fs, e->prev);
            if (!was_in && !now_in) continue;
            if (!was_in) type = "ADDED";
            else if (!now_in) type = "DELETED";
        } else if (!now_in) {
            continue;
        }
        if (wt->table) watch_event(wt, type, apisrv__type_by_key(s, e->key), e->obj);
        else watch_event_hist(wt, type, e);
    }
}

static void watch_bookmark(struct apisrv__watch *wt) {
    const struct apisrv__type *t = apisrv__type_by_key(wt->s, wt->key);
    json_object *o = json_object_new_object(), *md = json_object_new_object();
    char rvs[32], gv[256];
    if (!t) {
        json_object_put(o);
        json_object_put(md);
        return;
    }
    if (t->group[0]) snprintf(gv, sizeof gv, "%s/%s", t->group, t->version);
    else snprintf(gv, sizeof gv, "%s", t->version);
    snprintf(rvs, sizeof rvs, "%lld", wt->s->rv);
    json_object_object_add(o, "kind", json_object_new_string(t->kind));
    json_object_object_add(o, "apiVersion", json_object_new_string(gv));
    json_object_object_add(md, "resourceVersion", json_object_new_string(rvs));
    json_object_object_add(o, "metadata", md);
    wt->last_rv = wt->s->rv;
    bool tab = wt->table;
    wt->table = false;   /* bookmarks carry the bare object */
    watch_event(wt, "BOOKMARK", NULL, o);
    wt->table = tab;
    json_object_put(o);
}

/* True when the client closed its end: an idle watch would otherwise keep
 * its thread until the next matching event. Peeks, never consumes. */
static bool watch_peer_gone(const struct apisrv__watch *wt) {
    struct pollfd p = {.fd = wt->fd, .events = POLLIN};
    char c;
    if (wt->fd < 0 || poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR)) return true;
    return (p.revents & POLLIN) && recv(wt->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* See apisrv_int.h: blocks until there is something to send, the watch
 * times out, or the server stops. */
ssize_t apisrv__watch_read(void *cls, uint64_t pos, char *buf, size_t max) {
    struct apisrv__watch *wt = cls;
    apisrv *s = wt->s;
    (void)pos;
    if (wt->off == wt->len) {
        wt->off = wt->len = 0;
        if (wt->done) return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&s->mu);
        for (;;) {
            double now = apisrv__now();
            if (s->stopping || (wt->deadline > 0 && now >= wt->deadline)) break;
            if (watch_peer_gone(wt)) break;
            watch_collect(wt);
            if (wt->len > 0) break;
            if (wt->bookmarks && now - wt->last_send >= WATCH_BOOKMARK_S) {
                watch_bookmark(wt);
                break;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 250 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&s->cond, &s->mu, &ts);
        }
        pthread_mutex_unlock(&s->mu);
        if (wt->len == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = wt->len - wt->off;
    if (n > max) n = max;
    memcpy(buf, wt->buf + wt->off, n);
    wt->off += n;
    return (ssize_t)n;
}

/* See apisrv_int.h. */
void apisrv__watch_free(void *cls) {
    struct apisrv__watch *wt = cls;
    if (!wt) return;
    pthread_mutex_lock(&wt->s->mu);
    wt->s->n_watches--;
    pthread_mutex_unlock(&wt->s->mu);
    sel_free(wt->ls);
    sel_free(wt->fs);
    free(wt->buf);
    free(wt);
}
