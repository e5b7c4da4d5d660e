/* store_journal.c -- the decision journal: input events (arrivals,
 * departures, starts, requeues, preemptions and resizes taking effect,
 * node, quota and policy changes) and per-cycle decisions,
 * their export as JSON lines for offline replay, and retention. */
#include "operator/store_int.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const store_event_names[STORE_EV__NKINDS] = {
    [STORE_EV_JOB_ARRIVAL] = "job_arrival",
    [STORE_EV_JOB_DEPARTURE] = "job_departure",
    [STORE_EV_NODE] = "node",
    [STORE_EV_QUOTA] = "quota",
    [STORE_EV_POLICY] = "policy",
    [STORE_EV_JOB_START] = "job_start",
    [STORE_EV_JOB_REQUEUE] = "job_requeue",
    [STORE_EV_JOB_PREEMPTED] = "job_preempted",
    [STORE_EV_JOB_RESIZED] = "job_resized",
    [STORE_EV_JOB_RELEASED] = "job_released",
};

/* See store.h. */
const char *store_event_kind_name(store_event_kind k) {
    if ((int)k < 0 || k >= STORE_EV__NKINDS) return NULL;
    return store_event_names[k];
}

/* See store.h. */
aiq_rc store_journal_event(store *s, double t, store_event_kind kind,
                           const char *key, const char *payload_json,
                           aiq_err *err) {
    char *payload = NULL;
    const char *kname = store_event_kind_name(kind);
    if (!kname)
        return aiq_err_field(err, AIQ_EINVAL, "kind",
                             "store: journal event: unknown kind %d",
                             (int)kind);
    if (!key || !key[0])
        return aiq_err_field(err, AIQ_EINVAL, "key",
                             "store: journal event %s: key required", kname);
    if (strnlen(key, AIQ_MAX_STRING + 1) > AIQ_MAX_STRING)
        return aiq_err_field(err, AIQ_ETOOBIG, "key",
                             "store: journal event %s: key longer than %d "
                             "bytes", kname, AIQ_MAX_STRING);
    aiq_rc rc = store__json_compact(payload_json, "payload", &payload, err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_EV_ADD, err);
    if (!st) { rc = AIQ_EDB; goto out_free; }
    sqlite3_bind_double(st, 1, t);
    store__bind_text(st, 2, kname);
    store__bind_text(st, 3, key);
    store__bind_text(st, 4, payload);
    rc = store__write(s, st, "journal event", err);
out_free:
    free(payload);
    return rc;
}

/* Rejects a missing or over-long text field of a decision. */
static aiq_rc dec_text(const char *v, bool required, const char *field,
                       aiq_err *err) {
    if (!v) {
        if (!required) return AIQ_OK;
        return aiq_err_field(err, AIQ_EINVAL, field,
                             "store: decision: %s required", field);
    }
    if (required && !v[0])
        return aiq_err_field(err, AIQ_EINVAL, field,
                             "store: decision: %s required", field);
    if (strnlen(v, AIQ_MAX_STRING + 1) > AIQ_MAX_STRING)
        return aiq_err_field(err, AIQ_ETOOBIG, field,
                             "store: decision: %s longer than %d bytes",
                             field, AIQ_MAX_STRING);
    return AIQ_OK;
}

/* See store.h. */
aiq_rc store_journal_decision(store *s, const struct store_decision *d,
                              aiq_err *err) {
    char *terms = NULL;
    aiq_rc rc = dec_text(d->job_uid, true, "job_uid", err);
    if (rc == AIQ_OK) rc = dec_text(d->action, true, "action", err);
    if (rc == AIQ_OK) rc = dec_text(d->reason, false, "reason", err);
    if (rc == AIQ_OK) rc = dec_text(d->message, false, "message", err);
    if (rc == AIQ_OK)
        rc = store__json_compact(d->terms_json, "terms", &terms, err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_DEC_ADD, err);
    if (!st) { rc = AIQ_EDB; goto out_free; }
    sqlite3_bind_int64(st, 1, d->cycle);
    sqlite3_bind_double(st, 2, d->t);
    store__bind_text(st, 3, d->job_uid);
    store__bind_text(st, 4, d->action);
    sqlite3_bind_int(st, 5, d->level);
    sqlite3_bind_int(st, 6, d->position);
    sqlite3_bind_double(st, 7, d->score);
    store__bind_text(st, 8, terms);
    store__bind_text(st, 9, d->reason);
    store__bind_text(st, 10, d->message);
    rc = store__write(s, st, "journal decision", err);
out_free:
    free(terms);
    return rc;
}

/* See store.h. */
aiq_rc store_journal_last_decisions(store *s, store_decision_cb cb, void *ctx,
                                    aiq_err *err) {
    sqlite3_stmt *st = store__q(s, STORE_Q_DEC_LAST_ALL, err);
    if (!st) return AIQ_EDB;
    aiq_rc rc = AIQ_OK;
    for (;;) {
        bool row = false;
        rc = store__row(s, st, &row, "last decisions", err);
        if (rc != AIQ_OK || !row) break;
        const char *uid = (const char *)sqlite3_column_text(st, 0);
        const char *action = (const char *)sqlite3_column_text(st, 2);
        const char *reason = (const char *)sqlite3_column_text(st, 5);
        struct store_decision d = {0, 0, uid ? uid : "", action ? action : "",
                                   sqlite3_column_int(st, 3), sqlite3_column_int(st, 4),
                                   0, NULL, reason ? reason : "", NULL};
        if (cb(&d, ctx) != 0) break;
    }
    sqlite3_reset(st);
    return rc;
}

/* Writes v in the shortest %g form that reads back as exactly v (replay
 * must see the very numbers the cycle saw); null when not finite. */
static void put_num(FILE *f, double v) {
    char buf[40];
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, f);
}

/* Writes column i as a JSON string (escaped by json-c), or null. */
static void put_str(FILE *f, sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    if (!t) {
        fputs("null", f);
        return;
    }
    json_object *o = json_object_new_string((const char *)t);
    fputs(o ? json_object_to_json_string_ext(
                  o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
            : "null",
          f);
    json_object_put(o);
}

/* Writes column i, compact JSON stored by this module, as is, or null. */
static void put_raw(FILE *f, sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    fputs(t ? (const char *)t : "null", f);
}

/* See store.h. */
aiq_rc store_journal_export_jsonl(store *s, FILE *out, double since,
                                  long *nlines, aiq_err *err) {
    bool row = true;
    long n = 0;
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = store__q(s, STORE_Q_JOURNAL_EXPORT, err);
    if (!st) return AIQ_EDB;
    sqlite3_bind_double(st, 1, since);
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "journal export", err);
        if (rc != AIQ_OK || !row) break;
        if (sqlite3_column_int(st, 0) == 0) {
            fputs("{\"type\":\"event\",\"t\":", out);
            put_num(out, sqlite3_column_double(st, 2));
            fputs(",\"kind\":", out);
            put_str(out, st, 3);
            fputs(",\"key\":", out);
            put_str(out, st, 4);
            fputs(",\"payload\":", out);
            put_raw(out, st, 5);
        } else {
            fputs("{\"type\":\"decision\",\"t\":", out);
            put_num(out, sqlite3_column_double(st, 2));
            fprintf(out, ",\"cycle\":%lld",
                    (long long)sqlite3_column_int64(st, 6));
            fputs(",\"job\":", out);
            put_str(out, st, 7);
            fputs(",\"action\":", out);
            put_str(out, st, 8);
            fprintf(out, ",\"level\":%d,\"position\":%d,\"score\":",
                    sqlite3_column_int(st, 9), sqlite3_column_int(st, 10));
            put_num(out, sqlite3_column_double(st, 11));
            fputs(",\"terms\":", out);
            put_raw(out, st, 12);
            fputs(",\"reason\":", out);
            put_str(out, st, 13);
            fputs(",\"message\":", out);
            put_str(out, st, 14);
        }
        fputs("}\n", out);
        n++;
        if (ferror(out))
            rc = aiq_err_set(err, AIQ_EIO,
                             "store: journal export: write failed at line "
                             "%ld", n);
    }
    sqlite3_reset(st);
    if (rc == AIQ_OK && fflush(out) != 0)
        rc = aiq_err_set(err, AIQ_EIO, "store: journal export: flush failed");
    if (nlines) *nlines = n;
    return rc;
}

/* See store.h. */
aiq_rc store_journal_prune(store *s, double before, long *removed,
                           aiq_err *err) {
    long n = 0;
    aiq_rc rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_PRUNE_EVENTS, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    sqlite3_bind_double(st, 1, before);
    rc = store__write(s, st, "journal prune", err);
    if (rc != AIQ_OK) goto out_sp;
    n += sqlite3_changes(s->db);
    st = store__q(s, STORE_Q_PRUNE_DECISIONS, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    sqlite3_bind_double(st, 1, before);
    rc = store__write(s, st, "journal prune", err);
    if (rc == AIQ_OK) n += sqlite3_changes(s->db);
out_sp:
    store__sp_end(s, rc == AIQ_OK);
    if (rc == AIQ_OK && removed) *removed = n;
    return rc;
}

/* One integer from a one-row query (PRAGMA page_count and friends). */
static aiq_rc store_int1(store *s, store__qid id, int64_t *out, aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, id, err);
    if (!st) return AIQ_EDB;
    aiq_rc rc = store__row(s, st, &row, "database size", err);
    if (rc == AIQ_OK && row) *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_used_bytes(store *s, int64_t *bytes, aiq_err *err) {
    int64_t pages = 0, free_pages = 0, size = 0;
    aiq_rc rc = store_int1(s, STORE_Q_PAGE_COUNT, &pages, err);
    if (rc == AIQ_OK) rc = store_int1(s, STORE_Q_FREELIST_COUNT, &free_pages, err);
    if (rc == AIQ_OK) rc = store_int1(s, STORE_Q_PAGE_SIZE, &size, err);
    if (rc == AIQ_OK) *bytes = (pages - free_pages) * size;
    return rc;
}

/* See store.h. Each round removes the oldest share of the journal's time
 * span that the excess suggests (plus a tenth), until the database uses
 * at most max_bytes or the journal is empty; freed pages are reused, so
 * the file stops growing. */
aiq_rc store_journal_prune_size(store *s, int64_t max_bytes, long *removed, aiq_err *err) {
    long total = 0;
    aiq_rc rc = AIQ_OK;
    for (int round = 0; round < 16; round++) {
        int64_t used = 0;
        bool row = false;
        rc = store_used_bytes(s, &used, err);
        if (rc != AIQ_OK || used <= max_bytes) break;
        sqlite3_stmt *st = store__q(s, STORE_Q_JOURNAL_SPAN, err);
        if (!st) { rc = AIQ_EDB; break; }
        rc = store__row(s, st, &row, "journal span", err);
        bool empty = !row || sqlite3_column_type(st, 0) == SQLITE_NULL;
        double lo = empty ? 0 : sqlite3_column_double(st, 0);
        double hi = empty ? 0 : sqlite3_column_double(st, 1);
        sqlite3_reset(st);
        if (rc != AIQ_OK || empty) break;
        double share = 1.0 - (double)max_bytes / (double)used + 0.1;
        if (share > 1) share = 1;
        long n = 0;
        /* the newest entry stays unless everything must go */
        double cut = share >= 1 ? hi + 1 : lo + (hi - lo) * share;
        if (cut <= lo) cut = lo + 1e-6;
        rc = store_journal_prune(s, cut, &n, err);
        if (rc != AIQ_OK) break;
        total += n;
        if (n == 0) break;
    }
    if (removed) *removed = total;
    return rc;
}

