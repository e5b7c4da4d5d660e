/* store_usage.c -- GPU usage per (user, group) in hourly buckets: adding
 * (single bucket or spread over an attempt's run), decayed usage for
 * fair-share, windowed usage for budgets, and the all-pairs scan a cycle
 * reads. */
#include "operator/store_int.h"
#include "policy/fairshare.h"

#include <math.h>
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

/* See store.h. Rows come ordered by (user, group); each run of equal
 * pairs is summed and reported once. */
aiq_rc store_usage_each(store *s, double now, double half_life_s,
                        store_usage_cb cb, void *ctx, aiq_err *err) {
    char user[STORE_NAME_SZ] = "", group[STORE_NAME_SZ] = "";
    char nu[STORE_NAME_SZ], ng[STORE_NAME_SZ];
    bool row = true, have = false;
    double sum = 0;
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = store__q(s, STORE_Q_USAGE_ALL, err);
    if (!st) return AIQ_EDB;
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "usage scan", err);
        if (rc != AIQ_OK) break;
        if (row) {
            store__col_text(st, 0, nu, sizeof nu);
            store__col_text(st, 1, ng, sizeof ng);
        }
        if (have && (!row || strcmp(nu, user) || strcmp(ng, group))) {
            if (cb(user, group, sum, ctx)) break;
            have = false;
        }
        if (!row) break;
        if (!have) {
            memcpy(user, nu, sizeof user);
            memcpy(group, ng, sizeof group);
            sum = 0;
            have = true;
        }
        sum += sqlite3_column_double(st, 3) / 3600.0 *
               decay(now, sqlite3_column_int64(st, 2), half_life_s);
    }
    sqlite3_reset(st);
    return rc;
}
