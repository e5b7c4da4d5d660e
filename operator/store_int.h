/* store_int.h -- private layout of the SQLite store, shared by store*.c.
 * Not for callers outside operator/store*.c (tests may use the schema
 * steps to build old databases). */
#ifndef AIQ_OPERATOR_STORE_INT_H
#define AIQ_OPERATOR_STORE_INT_H

#include <sqlite3.h>

#include "operator/store.h"

/* The cached statements: one id per SQL text in store_sql.def. */
typedef enum {
#define STORE_SQL(id, text) STORE_Q_##id,
#include "operator/store_sql.def"
#undef STORE_SQL
    STORE_Q__N
} store__qid;

/* One (user, group) pair of the usage cache: its decayed usage settled
 * at the cache's reference time, and the buckets whose middle was still
 * ahead of it (weighed exactly at each read). */
struct store__upair {
    char *user, *group;
    double settled;            /* GPU-hours weighed at ref */
    int64_t *recent_b;         /* bucket starts */
    double *recent_h;          /* their GPU-hours */
    int nrecent;
};

/* What store_usage_each read last (see store_usage.c): valid while no
 * usage was written or rolled back since (epoch) and for the same half
 * life, at any later time. */
struct store__ucache {
    bool valid;
    uint64_t epoch;
    double ref, half_life_s;
    struct store__upair *p;
    size_t n;
};

struct store {
    sqlite3 *db;
    sqlite3_stmt *q[STORE_Q__N];  /* prepared on first use, kept until close */
    bool in_tx;
    long writes;                  /* data writes attempted since open */
    long fail_at;                 /* write number that fails; 0 = none */
    int savepoints;               /* nesting depth of store__sp_begin */
    uint64_t usage_epoch;         /* bumped by every usage write and rollback */
    struct store__ucache ucache;
    /* The first database failure since store_fault_clear (store_fault). */
    bool faulted;
    aiq_err fault;
    /* The file opened (store_check_file); has_file false for :memory:. */
    char *path;
    bool has_file;
    unsigned long long dev, ino;
};

/* Keeps err (a database failure) as the handle's first fault unless one
 * is kept already. */
void store__fault(store *s, const aiq_err *err);

/* Frees the usage cache (store_close). */
void store__ucache_free(struct store__ucache *c);

/* Number of schema steps and the SQL of step v (1-based): applying steps
 * 1..v to an empty database gives schema version v. NULL when v is out of
 * range. */
int store__nsteps(void);
const char *store__schema_step(int v);

/* The cached statement id, reset and with bindings cleared (prepared on
 * first use). NULL with err filled (AIQ_EDB) when preparing fails. */
sqlite3_stmt *store__q(store *s, store__qid id, aiq_err *err);

/* Steps a data-writing statement to completion and resets it, counting
 * the write for fault injection. AIQ_EDB with SQLite's message (or
 * "injected failure") on error; `what` names the operation in the
 * message. */
aiq_rc store__write(store *s, sqlite3_stmt *st, const char *what,
                    aiq_err *err);

/* Steps a query: AIQ_OK with *row = true/false, or AIQ_EDB. */
aiq_rc store__row(store *s, sqlite3_stmt *st, bool *row, const char *what,
                  aiq_err *err);

/* Fills err with AIQ_EDB and SQLite's current message. Returns AIQ_EDB. */
aiq_rc store__dberr(store *s, const char *what, aiq_err *err);

/* A savepoint around a multi-statement write, so each write function is
 * all-or-nothing inside or outside a cycle. end(ok=false) rolls back to
 * the savepoint; end always releases it. */
aiq_rc store__sp_begin(store *s, aiq_err *err);
void store__sp_end(store *s, bool ok);

/* Bind helpers: text (NULL binds SQL NULL). Return SQLite codes. */
int store__bind_text(sqlite3_stmt *st, int i, const char *v);
/* Copies column i as text into buf (size bytes, truncated, "" for NULL). */
void store__col_text(sqlite3_stmt *st, int i, char *buf, size_t size);

/* Adds gpu_seconds of (user, group) spread over the hourly buckets of
 * [start, end] in proportion to the overlap (all in end's bucket when
 * start <= 0 or start >= end). One write per bucket touched. */
aiq_rc store__usage_spread(store *s, const char *user, const char *group,
                           double start, double end, double gpu_seconds,
                           aiq_err *err);

/* Checks that text (NULL allowed) is JSON of at most STORE_MAX_JSON bytes
 * and stores its compact one-line form in *out (heap, caller frees; NULL
 * for NULL text; numbers keep their original spelling). AIQ_ETOOBIG, or
 * AIQ_EPARSE with err->offset, naming `field`. */
aiq_rc store__json_compact(const char *text, const char *field, char **out,
                           aiq_err *err);

#endif
