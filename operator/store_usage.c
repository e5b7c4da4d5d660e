/* store_usage.c -- GPU usage per (user, group) in hourly buckets: adding
 * (single bucket or spread over an attempt's run), decayed usage for
 * fair-share, windowed usage for budgets, and the all-pairs scan a cycle
 * reads. */
#include "operator/store_int.h"
#include "policy/fairshare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An attempt longer than this is spread over its last year only (the
 * total is kept); guards against a bogus start time making 10^5 writes. */
#define STORE_MAX_SPREAD_S (366.0 * 24 * 3600)

static int64_t bucket_of(double t) {
    return (int64_t)floor(t / STORE_BUCKET_S) * STORE_BUCKET_S;
}

static aiq_rc usage_bucket_add(store *s, const char *user, const char *group,
                               int64_t bucket, double gpu_seconds,
                               aiq_err *err) {
    sqlite3_stmt *st = store__q(s, STORE_Q_USAGE_ADD, err);
    if (!st) return AIQ_EDB;
    s->usage_epoch++; /* store_usage_each reads again */
    store__bind_text(st, 1, user);
    store__bind_text(st, 2, group);
    sqlite3_bind_int64(st, 3, bucket);
    sqlite3_bind_double(st, 4, gpu_seconds);
    return store__write(s, st, "usage add", err);
}

static aiq_rc check_owner(const char *user, const char *group,
                          aiq_err *err) {
    if (!user || !user[0])
        return aiq_err_field(err, AIQ_EINVAL, "user", "store: usage: user "
                             "required");
    if (!group)
        return aiq_err_field(err, AIQ_EINVAL, "group", "store: usage: group "
                             "required");
    return AIQ_OK;
}

/* See store.h. */
aiq_rc store_usage_add(store *s, const char *user, const char *group,
                       double t, double gpu_seconds, aiq_err *err) {
    aiq_rc rc = check_owner(user, group, err);
    if (rc != AIQ_OK) return rc;
    if (!(gpu_seconds >= 0) || !isfinite(gpu_seconds) || !isfinite(t))
        return aiq_err_field(err, AIQ_EINVAL, "gpu_seconds",
                             "store: usage of %s: gpu_seconds must be a "
                             "finite number >= 0, got %g at t=%g", user,
                             gpu_seconds, t);
    return usage_bucket_add(s, user, group, bucket_of(t), gpu_seconds, err);
}

/* See store_int.h. */
aiq_rc store__usage_spread(store *s, const char *user, const char *group,
                           double start, double end, double gpu_seconds,
                           aiq_err *err) {
    aiq_rc rc = check_owner(user, group, err);
    if (rc != AIQ_OK) return rc;
    if (!(start > 0) || start >= end)
        return usage_bucket_add(s, user, group, bucket_of(end), gpu_seconds,
                                err);
    if (end - start > STORE_MAX_SPREAD_S) start = end - STORE_MAX_SPREAD_S;
    rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;
    double span = end - start, added = 0;
    for (int64_t b = bucket_of(start); rc == AIQ_OK && b < end;
         b += STORE_BUCKET_S) {
        double lo = b > start ? (double)b : start;
        double hi = b + STORE_BUCKET_S < end ? (double)(b + STORE_BUCKET_S)
                                             : end;
        /* The last bucket takes the remainder, so the total is exact. */
        double part = hi >= end ? gpu_seconds - added
                                : gpu_seconds * (hi - lo) / span;
        added += part;
        rc = usage_bucket_add(s, user, group, b, part, err);
    }
    store__sp_end(s, rc == AIQ_OK);
    return rc;
}

/* Chooses the statement for the (user, group) filter and binds it. */
static sqlite3_stmt *usage_query(store *s, const char *user,
                                 const char *group, int64_t from,
                                 aiq_err *err) {
    store__qid id = user && group ? STORE_Q_USAGE_USER_GROUP
                    : user        ? STORE_Q_USAGE_USER
                                  : STORE_Q_USAGE_GROUP;
    sqlite3_stmt *st = store__q(s, id, err);
    if (!st) return NULL;
    store__bind_text(st, 1, user);
    store__bind_text(st, 2, group);
    sqlite3_bind_int64(st, 3, from);
    return st;
}

/* The weight of a bucket's usage at `now`: fair share's one decay rule
 * (fs_decay) applied from the bucket's middle. */
static double decay(double now, int64_t bucket, double half_life_s) {
    return fs_decay(1.0, now - ((double)bucket + STORE_BUCKET_S / 2.0), half_life_s);
}

/* Sums a usage query: weighted by decay when half_life_s > 0. */
static aiq_rc usage_sum(store *s, const char *user, const char *group,
                        int64_t from, double now, double half_life_s,
                        double *gpu_hours, aiq_err *err) {
    bool row = true;
    aiq_rc rc = AIQ_OK;
    double sum = 0;
    if (!user && !group)
        return aiq_err_field(err, AIQ_EINVAL, "user",
                             "store: usage: give a user, a group or both");
    sqlite3_stmt *st = usage_query(s, user, group, from, err);
    if (!st) return AIQ_EDB;
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "usage", err);
        if (rc != AIQ_OK || !row) break;
        int64_t b = sqlite3_column_int64(st, 0);
        sum += sqlite3_column_double(st, 1) / 3600.0 *
               decay(now, b, half_life_s);
    }
    sqlite3_reset(st);
    if (rc == AIQ_OK) *gpu_hours = sum;
    return rc;
}

/* See store.h. */
aiq_rc store_usage_decayed(store *s, const char *user, const char *group,
                           double now, double half_life_s, double *gpu_hours,
                           aiq_err *err) {
    return usage_sum(s, user, group, INT64_MIN, now, half_life_s, gpu_hours,
                     err);
}

/* See store.h. */
aiq_rc store_usage_window(store *s, const char *user, const char *group,
                          double since, double *gpu_hours, aiq_err *err) {
    return usage_sum(s, user, group, bucket_of(since), 0, 0, gpu_hours, err);
}

/* See store_int.h. */
void store__ucache_free(struct store__ucache *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->p[i].user);
        free(c->p[i].group);
        free(c->p[i].recent_b);
        free(c->p[i].recent_h);
    }
    free(c->p);
    memset(c, 0, sizeof *c);
}

/* Adds one bucket row to the last pair of c (a new pair when user or
 * group differ). -1 on ENOMEM. */
static int ucache_add(struct store__ucache *c, size_t *cap, const char *user,
                      const char *group, int64_t bucket, double hours) {
    struct store__upair *p = c->n ? &c->p[c->n - 1] : NULL;
    if (!p || strcmp(p->user, user) || strcmp(p->group, group)) {
        if (c->n == *cap) {
            size_t ncap = *cap ? *cap * 2 : 64;
            struct store__upair *np = realloc(c->p, ncap * sizeof *np);
            if (!np) return -1;
            c->p = np;
            *cap = ncap;
        }
        p = &c->p[c->n];
        memset(p, 0, sizeof *p);
        p->user = strdup(user);
        p->group = strdup(group);
        c->n++;
        if (!p->user || !p->group) return -1;
    }
    double mid = (double)bucket + STORE_BUCKET_S / 2.0;
    if (mid <= c->ref) {
        p->settled += hours * decay(c->ref, bucket, c->half_life_s);
        return 0;
    }
    int64_t *m = realloc(p->recent_b, (size_t)(p->nrecent + 1) * sizeof *m);
    if (m) p->recent_b = m;
    double *h = m ? realloc(p->recent_h, (size_t)(p->nrecent + 1) * sizeof *h) : NULL;
    if (!h) return -1;
    p->recent_h = h;
    p->recent_b[p->nrecent] = bucket;
    p->recent_h[p->nrecent++] = hours;
    return 0;
}

/* Reads every usage row into the cache, weighed at now. */
static aiq_rc ucache_build(store *s, double now, double half_life_s, aiq_err *err) {
    char nu[STORE_NAME_SZ], ng[STORE_NAME_SZ];
    bool row = true;
    size_t cap = 0;
    aiq_rc rc = AIQ_OK;
    struct store__ucache *c = &s->ucache;
    store__ucache_free(c);
    c->ref = now;
    c->half_life_s = half_life_s;
    sqlite3_stmt *st = store__q(s, STORE_Q_USAGE_ALL, err);
    if (!st) return AIQ_EDB;
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "usage scan", err);
        if (rc != AIQ_OK || !row) break;
        store__col_text(st, 0, nu, sizeof nu);
        store__col_text(st, 1, ng, sizeof ng);
        if (ucache_add(c, &cap, nu, ng, sqlite3_column_int64(st, 2),
                       sqlite3_column_double(st, 3) / 3600.0) != 0)
            rc = aiq_err_set(err, AIQ_ENOMEM, "store: usage scan: out of memory");
    }
    sqlite3_reset(st);
    if (rc != AIQ_OK) {
        store__ucache_free(c);
        return rc;
    }
    c->epoch = s->usage_epoch;
    c->valid = true;
    return AIQ_OK;
}

/* See store.h. The rows are read once and kept (struct store__ucache):
 * a usage write or a rollback makes the next call read them again;
 * otherwise each pair's settled part is decayed from the cache's time
 * to now in one step (the weights are exponential, so that equals
 * weighing every bucket again) and its recent buckets are weighed
 * exactly. Pairs come ordered by (user, group). */
aiq_rc store_usage_each(store *s, double now, double half_life_s,
                        store_usage_cb cb, void *ctx, aiq_err *err) {
    struct store__ucache *c = &s->ucache;
    if (!c->valid || c->epoch != s->usage_epoch || c->half_life_s != half_life_s ||
        now < c->ref) {
        aiq_rc rc = ucache_build(s, now, half_life_s, err);
        if (rc != AIQ_OK) return rc;
    }
    double k = fs_decay(1.0, now - c->ref, half_life_s);
    for (size_t i = 0; i < c->n; i++) {
        const struct store__upair *p = &c->p[i];
        double sum = p->settled * k;
        for (int r = 0; r < p->nrecent; r++)
            sum += p->recent_h[r] * decay(now, p->recent_b[r], half_life_s);
        if (cb(p->user, p->group, sum, ctx)) break;
    }
    return AIQ_OK;
}
