/* store.c -- the store handle: open (pragmas, schema migration), close,
 * cycle transactions, the prepared-statement cache, fault injection, and
 * the small helpers the other store_*.c files share. */
#include "operator/store_int.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static const char *const store_sql[STORE_Q__N] = {
#define STORE_SQL(id, text) [STORE_Q_##id] = text,
#include "operator/store_sql.def"
#undef STORE_SQL
};

/* See store_int.h. */
aiq_rc store__dberr(store *s, const char *what, aiq_err *err) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_err_set(&e, AIQ_EDB, "store: %s: %s (sqlite %d)", what,
                s && s->db ? sqlite3_errmsg(s->db) : "no database",
                s && s->db ? sqlite3_extended_errcode(s->db) : 0);
    if (s) store__fault(s, &e);
    if (err && err->code == AIQ_OK) *err = e;
    return AIQ_EDB;
}

/* See store_int.h. */
void store__fault(store *s, const aiq_err *err) {
    if (s->faulted) return;
    s->faulted = true;
    s->fault = *err;
}

/* Runs SQL text without results (pragmas, schema steps, transaction
 * control). Not counted as a data write. */
static aiq_rc store_exec(store *s, const char *sql, const char *what,
                         aiq_err *err) {
    char *msg = NULL;
    int src = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (src == SQLITE_OK) return AIQ_OK;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_err_set(&e, AIQ_EDB, "store: %s: %s (sqlite %d)", what,
                msg ? msg : sqlite3_errstr(src), src);
    sqlite3_free(msg);
    store__fault(s, &e);
    if (err && err->code == AIQ_OK) *err = e;
    return AIQ_EDB;
}

/* Reads an integer pragma (user_version). */
static aiq_rc store_pragma_int(store *s, const char *sql, int *out,
                               aiq_err *err) {
    sqlite3_stmt *st = NULL;
    aiq_rc rc = AIQ_OK;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store__dberr(s, sql, err);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = store__dberr(s, sql, err);
        goto out_finalize;
    }
    *out = sqlite3_column_int(st, 0);
out_finalize:
    sqlite3_finalize(st);
    return rc;
}

/* Brings the schema to the newest version in one transaction: either all
 * pending steps apply or none. */
static aiq_rc store_migrate(store *s, aiq_err *err) {
    int have = 0;
    int want = store__nsteps();
    aiq_rc rc = store_exec(s, "BEGIN IMMEDIATE", "begin migration", err);
    if (rc != AIQ_OK) return rc;
    rc = store_pragma_int(s, "PRAGMA user_version", &have, err);
    if (rc != AIQ_OK) goto out_rollback;
    if (have > want) {
        rc = aiq_err_set(err, AIQ_ESTATE,
                         "store: database schema version %d is newer than "
                         "this build's %d", have, want);
        goto out_rollback;
    }
    if (have == want) goto out_commit;
    for (int v = have + 1; v <= want; v++) {
        char what[48];
        snprintf(what, sizeof what, "schema step %d", v);
        rc = store_exec(s, store__schema_step(v), what, err);
        if (rc != AIQ_OK) goto out_rollback;
    }
    {
        char sql[48];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", want);
        rc = store_exec(s, sql, "set user_version", err);
        if (rc != AIQ_OK) goto out_rollback;
    }
out_commit:
    return store_exec(s, "COMMIT", "commit migration", err);
out_rollback:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Sets the connection's pragmas: WAL (on a file; an in-memory database
 * keeps its own journal), synchronous=NORMAL (see store.h for the
 * durability this gives), the busy timeout. */
static aiq_rc store_configure(store *s, const char *path, int busy_ms,
                              aiq_err *err) {
    sqlite3_stmt *st = NULL;
    aiq_rc rc = AIQ_OK;
    bool memory = strcmp(path, ":memory:") == 0 || path[0] == '\0';

    sqlite3_busy_timeout(s->db, busy_ms > 0 ? busy_ms : 5000);
    if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st,
                           NULL) != SQLITE_OK)
        return store__dberr(s, "journal_mode", err);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = store__dberr(s, "journal_mode", err);
        goto out_finalize;
    }
    const unsigned char *mode = sqlite3_column_text(st, 0);
    if (!memory && (!mode || strcmp((const char *)mode, "wal") != 0)) {
        rc = aiq_err_set(err, AIQ_EDB,
                         "store: %s: journal_mode=WAL refused (got %s)", path,
                         mode ? (const char *)mode : "nothing");
        goto out_finalize;
    }
    rc = store_exec(s, "PRAGMA synchronous = NORMAL", "synchronous", err);
out_finalize:
    sqlite3_finalize(st);
    return rc;
}

/* Keeps path and the identity (device, inode) of the file it names now,
 * for store_check_file. Nothing for ":memory:" or "" (temporary). */
static aiq_rc store_remember_file(store *s, const char *path, aiq_err *err) {
    struct stat st;
    if (strcmp(path, ":memory:") == 0 || path[0] == '\0') return AIQ_OK;
    s->path = strdup(path);
    if (!s->path) return aiq_err_set(err, AIQ_ENOMEM, "store: out of memory");
    if (stat(path, &st) != 0)
        return aiq_err_set(err, AIQ_EIO, "store: stat %s: %s", path,
                           strerror(errno));
    s->has_file = true;
    s->dev = (unsigned long long)st.st_dev;
    s->ino = (unsigned long long)st.st_ino;
    return AIQ_OK;
}

/* See store.h. */
store *store_open(const char *path, const struct store_opts *opts,
                  aiq_err *err) {
    if (!path) {
        aiq_err_field(err, AIQ_EINVAL, "path", "store: no database path");
        return NULL;
    }
    store *s = calloc(1, sizeof *s);
    if (!s) {
        aiq_err_set(err, AIQ_ENOMEM, "store: out of memory");
        return NULL;
    }
    int src = sqlite3_open_v2(path, &s->db,
                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                  SQLITE_OPEN_NOMUTEX,
                              NULL);
    if (src != SQLITE_OK) {
        aiq_err_set(err, AIQ_EDB, "store: open %s: %s (sqlite %d)", path,
                    s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src), src);
        goto out_close;
    }
    if (store_configure(s, path, opts ? opts->busy_timeout_ms : 0, err) !=
        AIQ_OK)
        goto out_close;
    if (store_migrate(s, err) != AIQ_OK) goto out_close;
    if (store_remember_file(s, path, err) != AIQ_OK) goto out_close;
    s->fail_at = opts && opts->fail_write_n > 0 ? opts->fail_write_n : 0;
    return s;
out_close:
    store_close(s);
    return NULL;
}

/* See store.h. */
void store_close(store *s) {
    if (!s) return;
    if (s->db && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    for (int i = 0; i < STORE_Q__N; i++) sqlite3_finalize(s->q[i]);
    sqlite3_close(s->db);
    store__ucache_free(&s->ucache);
    free(s->path);
    free(s);
}

/* See store.h. */
bool store_fault(const store *s, aiq_err *first) {
    if (s->faulted && first) *first = s->fault;
    return s->faulted;
}

/* See store.h. */
void store_fault_clear(store *s) {
    s->faulted = false;
    aiq_err_clear(&s->fault);
}

/* See store.h. */
aiq_rc store_check_file(store *s, aiq_err *err) {
    struct stat st;
    if (!s->has_file) return AIQ_OK;
    if (stat(s->path, &st) != 0) {
        if (errno == ENOENT)
            return aiq_err_set(err, AIQ_ENOTFOUND,
                               "store: database file %s was removed "
                               "(open inode %llu)", s->path, s->ino);
        return aiq_err_set(err, AIQ_EIO, "store: stat %s: %s", s->path,
                           strerror(errno));
    }
    if ((unsigned long long)st.st_dev != s->dev ||
        (unsigned long long)st.st_ino != s->ino)
        return aiq_err_set(err, AIQ_ECONFLICT,
                           "store: database file %s was replaced (open "
                           "inode %llu, the path now names inode %llu)",
                           s->path, s->ino, (unsigned long long)st.st_ino);
    return AIQ_OK;
}

/* See store.h. */
aiq_rc store_probe(store *s, aiq_err *err) {
    char sql[64];
    if (s->in_tx)
        return aiq_err_set(err, AIQ_ESTATE,
                           "store: probe: a cycle transaction is open");
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
             store_schema_version());
    aiq_rc rc = store_exec(s, "BEGIN IMMEDIATE", "probe begin", err);
    if (rc != AIQ_OK) return rc;
    rc = store_exec(s, sql, "probe write", err);
    if (rc == AIQ_OK) rc = store_exec(s, "COMMIT", "probe commit", err);
    if (rc != AIQ_OK && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* rc says why */
    return rc;
}

/* Copies the main database of src into a new file at path (backup API). */
static aiq_rc store_copy_to(sqlite3 *src, const char *path, aiq_err *err) {
    sqlite3 *dst = NULL;
    aiq_rc rc = AIQ_OK;
    int src_rc = sqlite3_open_v2(path, &dst,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                 NULL);
    if (src_rc != SQLITE_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "store: rescue: open %s: %s", path,
                         dst ? sqlite3_errmsg(dst) : sqlite3_errstr(src_rc));
        goto out_close;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b) {
        rc = aiq_err_set(err, AIQ_EDB, "store: rescue: backup to %s: %s",
                         path, sqlite3_errmsg(dst));
        goto out_close;
    }
    src_rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b); /* its result repeats the step's */
    if (src_rc != SQLITE_DONE)
        rc = aiq_err_set(err, AIQ_EDB, "store: rescue: copy to %s: %s",
                         path, sqlite3_errstr(src_rc));
out_close:
    if (sqlite3_close(dst) != SQLITE_OK && rc == AIQ_OK)
        rc = aiq_err_set(err, AIQ_EDB, "store: rescue: close %s", path);
    return rc;
}

/* See store.h. */
aiq_rc store_rescue(store *s, aiq_err *err) {
    char tmp[4096];
    struct stat st;
    aiq_rc rc = AIQ_OK;
    if (!s->has_file || !s->db)
        return aiq_err_set(err, AIQ_ESTATE, "store: rescue: no open file");
    if (stat(s->path, &st) == 0)
        return aiq_err_set(err, AIQ_EEXIST,
                           "store: rescue: %s exists again; not overwritten",
                           s->path);
    if (snprintf(tmp, sizeof tmp, "%s.rescue", s->path) >= (int)sizeof tmp)
        return aiq_err_set(err, AIQ_ETOOBIG, "store: rescue: path too long");
    if (s->in_tx || !sqlite3_get_autocommit(s->db))
        (void)store_rollback(s, NULL); /* only committed data is rescued */
    if (unlink(tmp) != 0 && errno != ENOENT)
        return aiq_err_set(err, AIQ_EIO, "store: rescue: remove %s: %s", tmp,
                           strerror(errno));
    rc = store_copy_to(s->db, tmp, err);
    /* The old connection goes first: closing it checkpoints into the
     * removed file and deletes PATH-wal and PATH-shm, which belong to it
     * and must not be read as the rescued file's WAL. */
    for (int i = 0; i < STORE_Q__N; i++) {
        sqlite3_finalize(s->q[i]);
        s->q[i] = NULL;
    }
    if (sqlite3_close(s->db) != SQLITE_OK && rc == AIQ_OK)
        rc = aiq_err_set(err, AIQ_EDB, "store: rescue: close the old file");
    s->db = NULL;
    if (rc == AIQ_OK && rename(tmp, s->path) != 0)
        rc = aiq_err_set(err, AIQ_EIO, "store: rescue: rename %s to %s: %s",
                         tmp, s->path, strerror(errno));
    if (rc != AIQ_OK)
        (void)unlink(tmp); /* a partial copy is no rescue; rc says why */
    return rc;
}

/* See store.h. */
aiq_rc store_begin(store *s, aiq_err *err) {
    if (s->in_tx)
        return aiq_err_set(err, AIQ_ESTATE,
                           "store: begin: a cycle transaction is open");
    aiq_rc rc = store_exec(s, "BEGIN IMMEDIATE", "begin", err);
    if (rc == AIQ_OK) s->in_tx = true;
    return rc;
}

/* See store.h. */
aiq_rc store_commit(store *s, aiq_err *err) {
    if (!s->in_tx)
        return aiq_err_set(err, AIQ_ESTATE,
                           "store: commit: no cycle transaction is open");
    aiq_rc rc = store_exec(s, "COMMIT", "commit", err);
    if (rc != AIQ_OK && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    if (rc != AIQ_OK)
        s->usage_epoch++; /* what the cache read may be gone */
    s->in_tx = false;
    return rc;
}

/* See store.h. */
aiq_rc store_rollback(store *s, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    /* SQLite may already have rolled back on its own (e.g. SQLITE_FULL). */
    if (s->in_tx && !sqlite3_get_autocommit(s->db))
        rc = store_exec(s, "ROLLBACK", "rollback", err);
    s->usage_epoch++; /* what the cache read may be gone */
    s->in_tx = false;
    return rc;
}

/* See store.h. */
bool store_in_transaction(const store *s) { return s->in_tx; }

/* See store.h. */
long store_write_count(const store *s) { return s->writes; }

/* See store.h. */
void store_set_fail_write(store *s, long n) {
    s->fail_at = n > 0 ? s->writes + n : 0;
}

/* See store_int.h. */
sqlite3_stmt *store__q(store *s, store__qid id, aiq_err *err) {
    sqlite3_stmt *st = s->q[id];
    if (!st) {
        if (sqlite3_prepare_v3(s->db, store_sql[id], -1,
                               SQLITE_PREPARE_PERSISTENT, &st,
                               NULL) != SQLITE_OK) {
            store__dberr(s, "prepare", err);
            return NULL;
        }
        s->q[id] = st;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

/* See store_int.h. */
aiq_rc store__write(store *s, sqlite3_stmt *st, const char *what,
                    aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    s->writes++;
    if (s->fail_at > 0 && s->writes == s->fail_at) {
        aiq_err e;
        aiq_err_clear(&e);
        rc = aiq_err_set(&e, AIQ_EDB,
                         "store: %s: injected failure on write %ld", what,
                         s->writes);
        store__fault(s, &e);
        if (err && err->code == AIQ_OK) *err = e;
        goto out_reset;
    }
    if (sqlite3_step(st) != SQLITE_DONE) rc = store__dberr(s, what, err);
out_reset:
    sqlite3_reset(st);
    return rc;
}

/* See store_int.h. */
aiq_rc store__row(store *s, sqlite3_stmt *st, bool *row, const char *what,
                  aiq_err *err) {
    int src = sqlite3_step(st);
    *row = src == SQLITE_ROW;
    if (src == SQLITE_ROW || src == SQLITE_DONE) return AIQ_OK;
    return store__dberr(s, what, err);
}

/* See store_int.h. */
aiq_rc store__sp_begin(store *s, aiq_err *err) {
    aiq_rc rc = store_exec(s, "SAVEPOINT store_op", "savepoint", err);
    if (rc == AIQ_OK) s->savepoints++;
    return rc;
}

/* See store_int.h. */
void store__sp_end(store *s, bool ok) {
    if (s->savepoints <= 0) return;
    /* Errors here are not reported: after a failed ROLLBACK TO the
     * enclosing transaction (if any) is what the caller rolls back. */
    if (!ok) {
        sqlite3_exec(s->db, "ROLLBACK TO store_op", NULL, NULL, NULL);
        s->usage_epoch++; /* what the cache read may be gone */
    }
    sqlite3_exec(s->db, "RELEASE store_op", NULL, NULL, NULL);
    s->savepoints--;
}

/* See store_int.h. */
int store__bind_text(sqlite3_stmt *st, int i, const char *v) {
    if (!v) return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

/* See store_int.h. */
void store__col_text(sqlite3_stmt *st, int i, char *buf, size_t size) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, size, "%s", t ? (const char *)t : "");
}

/* See store_int.h. */
aiq_rc store__json_compact(const char *text, const char *field, char **out,
                           aiq_err *err) {
    *out = NULL;
    if (!text) return AIQ_OK;
    size_t len = strnlen(text, STORE_MAX_JSON + 1);
    if (len > STORE_MAX_JSON)
        return aiq_err_field(err, AIQ_ETOOBIG, field,
                             "store: %s: JSON longer than %d bytes", field,
                             STORE_MAX_JSON);
    aiq_rc rc = AIQ_OK;
    struct json_tokener *tok = json_tokener_new_ex(AIQ_MAX_DEPTH);
    if (!tok) return aiq_err_set(err, AIQ_ENOMEM, "store: out of memory");
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    const char *why = NULL;
    if (jerr != json_tokener_success) {
        why = json_tokener_error_desc(jerr);
    } else {
        while (end < len && strchr(" \t\r\n", text[end])) end++;
        if (end != len) why = "trailing text";
    }
    if (why) {
        rc = aiq_err_field(err, AIQ_EPARSE, field,
                           "store: %s: not JSON at byte %zu: %s", field, end,
                           why);
        if (err && err->code == AIQ_EPARSE) err->offset = end;
        goto out_free;
    }
    *out = strdup(json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    if (!*out) rc = aiq_err_set(err, AIQ_ENOMEM, "store: out of memory");
out_free:
    json_object_put(o);
    json_tokener_free(tok);
    return rc;
}
