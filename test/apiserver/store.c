/* store.c -- SQLite persistence of the local API server: one table of
 * objects keyed by (storage key, namespace, name) holding the JSON text and
 * the owner uids (for garbage collection), one table for the global
 * resourceVersion counter, and one for server-side apply's last applied
 * configuration per field manager, and an index of ownerReferences
 * (owned: owner uid -> object) so garbage collection finds dependents
 * without reading every row. Every function expects apisrv.mu held. */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const store_schema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS objects(key TEXT NOT NULL, ns TEXT NOT NULL,"
    " name TEXT NOT NULL, owners TEXT NOT NULL DEFAULT '', json TEXT NOT NULL,"
    " PRIMARY KEY(key, ns, name));"
    "CREATE INDEX IF NOT EXISTS objects_ns ON objects(ns);"
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER);"
    "CREATE TABLE IF NOT EXISTS owned(uid TEXT NOT NULL, key TEXT NOT NULL,"
    " ns TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY(uid, key, ns, name));"
    "CREATE INDEX IF NOT EXISTS owned_obj ON owned(key, ns, name);"
    "CREATE TABLE IF NOT EXISTS applied(key TEXT NOT NULL, ns TEXT NOT NULL,"
    " name TEXT NOT NULL, manager TEXT NOT NULL, json TEXT NOT NULL,"
    " PRIMARY KEY(key, ns, name, manager));";

/* Replaces the owned rows of one object by the uids in owners (the
 * ",uid1,,uid2," form of store_owners). */
static aiq_rc store_owned_set(apisrv *s, const char *key, const char *ns,
                              const char *name, const char *owners) {
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = s->st_owned_del;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = AIQ_EDB;
    sqlite3_reset(st);
    for (const char *p = owners; rc == AIQ_OK && *p;) {
        const char *end;
        if (*p == ',') {
            p++;
            continue;
        }
        end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        st = s->st_owned_ins;
        sqlite3_bind_text(st, 1, p, (int)(end - p), SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = AIQ_EDB;
        sqlite3_reset(st);
        p = end;
    }
    return rc;
}

/* Fills the owned table from the objects' owners column: a database made
 * before the table existed has objects but no owned rows. */
static aiq_rc store_owned_rebuild(apisrv *s) {
    sqlite3_stmt *st = NULL;
    aiq_rc rc = AIQ_OK;
    if (sqlite3_prepare_v2(s->db,
            "SELECT key, ns, name, owners FROM objects WHERE owners <> ''",
            -1, &st, NULL) != SQLITE_OK)
        return AIQ_EDB;
    while (rc == AIQ_OK && sqlite3_step(st) == SQLITE_ROW)
        rc = store_owned_set(s, (const char *)sqlite3_column_text(st, 0),
                             (const char *)sqlite3_column_text(st, 1),
                             (const char *)sqlite3_column_text(st, 2),
                             (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    return rc;
}

/* True when the database already has a table called name. */
static bool store_has_table(apisrv *s, const char *name) {
    sqlite3_stmt *st = NULL;
    bool has = false;
    if (sqlite3_prepare_v2(s->db,
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1",
            -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* Opens (or creates) the database at path and prepares the hot statements.
 * On failure fills err and leaves s->db NULL. */
aiq_rc apisrv__store_open(apisrv *s, const char *path, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    char *emsg = NULL;
    if (sqlite3_open(path ? path : ":memory:", &s->db) != SQLITE_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "sqlite open %s: %s", path,
                         s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto out_close;
    }
    bool old_db = store_has_table(s, "objects") && !store_has_table(s, "owned");
    if (sqlite3_exec(s->db, store_schema, NULL, NULL, &emsg) != SQLITE_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "sqlite schema: %s", emsg ? emsg : "?");
        sqlite3_free(emsg);
        goto out_close;
    }
    if (sqlite3_prepare_v2(s->db,
            "SELECT json FROM objects WHERE key=?1 AND ns=?2 AND name=?3",
            -1, &s->st_get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
            "INSERT INTO objects(key,ns,name,owners,json) VALUES(?1,?2,?3,?4,?5)"
            " ON CONFLICT(key,ns,name) DO UPDATE SET owners=excluded.owners,"
            " json=excluded.json", -1, &s->st_put, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
            "DELETE FROM objects WHERE key=?1 AND ns=?2 AND name=?3",
            -1, &s->st_del, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
            "INSERT OR REPLACE INTO meta(k,v) VALUES('rv',?1)",
            -1, &s->st_meta_put, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
            "SELECT owners FROM objects WHERE key=?1 AND ns=?2 AND name=?3",
            -1, &s->st_owners_get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
            "DELETE FROM owned WHERE key=?1 AND ns=?2 AND name=?3",
            -1, &s->st_owned_del, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
            "INSERT OR IGNORE INTO owned(uid,key,ns,name) VALUES(?1,?2,?3,?4)",
            -1, &s->st_owned_ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "BEGIN", -1, &s->st_begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "COMMIT", -1, &s->st_commit, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "ROLLBACK", -1, &s->st_rollback, NULL) != SQLITE_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "sqlite prepare: %s",
                         sqlite3_errmsg(s->db));
        goto out_close;
    }
    if (old_db && store_owned_rebuild(s) != AIQ_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "sqlite owner index: %s", sqlite3_errmsg(s->db));
        goto out_close;
    }
    return AIQ_OK;
out_close:
    apisrv__store_close(s);
    return rc;
}

/* Finalizes the statements and closes the database; safe when not open. */
void apisrv__store_close(apisrv *s) {
    sqlite3_finalize(s->st_get);
    sqlite3_finalize(s->st_put);
    sqlite3_finalize(s->st_del);
    sqlite3_finalize(s->st_meta_put);
    sqlite3_finalize(s->st_owners_get);
    sqlite3_finalize(s->st_owned_del);
    sqlite3_finalize(s->st_owned_ins);
    sqlite3_finalize(s->st_begin);
    sqlite3_finalize(s->st_commit);
    sqlite3_finalize(s->st_rollback);
    s->st_begin = s->st_commit = s->st_rollback = NULL;
    for (int i = 0; i < APISRV__SCAN_SHAPES; i++) {
        sqlite3_finalize(s->st_scan[i]);
        s->st_scan[i] = NULL;
        s->scan_busy[i] = false;
    }
    s->st_get = s->st_put = s->st_del = s->st_meta_put = NULL;
    s->st_owners_get = s->st_owned_del = s->st_owned_ins = NULL;
    if (s->db) sqlite3_close(s->db);
    s->db = NULL;
}

/* Each thread's tokener, made once: a tokener for APISRV__JSONC_DEPTH
 * levels carries a parse stack of about 320 KB, which json-c allocates
 * and zeroes in json_tokener_new_ex; doing that for every stored object
 * read and every request body was an eighth of the server's CPU under
 * writes. json_tokener_reset only clears the levels a parse used. */
static pthread_key_t store_tok_key;
static pthread_once_t store_tok_once = PTHREAD_ONCE_INIT;

static void store_tok_free(void *tok) {
    json_tokener_free(tok);
}

static void store_tok_init(void) {
    (void)pthread_key_create(&store_tok_key, store_tok_free);
}

/* See apisrv_int.h. */
json_tokener *apisrv__tokener(void) {
    json_tokener *tok;
    (void)pthread_once(&store_tok_once, store_tok_init);
    tok = pthread_getspecific(store_tok_key);
    if (!tok) {
        tok = json_tokener_new_ex(APISRV__JSONC_DEPTH);
        if (!tok) return NULL;
        if (pthread_setspecific(store_tok_key, tok) != 0) {
            json_tokener_free(tok);
            return NULL;
        }
    }
    json_tokener_reset(tok);
    return tok;
}

/* See apisrv_int.h: bodies may nest up to APISRV__MAX_JSON_DEPTH, so
 * what was stored must read back at that depth too (json-c's default is
 * 32). */
json_object *apisrv__parse(const char *text) {
    json_tokener *tok;
    json_object *o;
    if (!text) return NULL;
    tok = apisrv__tokener();
    if (!tok) return NULL;
    o = json_tokener_parse_ex(tok, text, -1);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_reset(tok);
    return o;
}

/* Returns the stored object as a new json object, or NULL when absent. */
json_object *apisrv__store_get(apisrv *s, const char *key, const char *ns,
                               const char *name) {
    json_object *o = NULL;
    sqlite3_stmt *st = s->st_get;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        o = apisrv__parse((const char *)sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return o;
}

/* Comma-separated uids of obj's ownerReferences into a malloc'd string. */
static char *store_owners(json_object *obj) {
    json_object *md, *refs;
    size_t cap = 1, len = 0;
    char *out;
    if (!json_object_object_get_ex(obj, "metadata", &md) ||
        !json_object_object_get_ex(md, "ownerReferences", &refs) ||
        !json_object_is_type(refs, json_type_array))
        return strdup("");
    size_t n = json_object_array_length(refs);
    for (size_t i = 0; i < n; i++) {
        json_object *uid;
        if (json_object_object_get_ex(json_object_array_get_idx(refs, i), "uid", &uid))
            cap += strlen(json_object_get_string(uid)) + 2;
    }
    out = malloc(cap + 1);
    if (!out) return NULL;
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *uid;
        if (!json_object_object_get_ex(json_object_array_get_idx(refs, i), "uid", &uid))
            continue;
        len += (size_t)snprintf(out + len, cap + 1 - len, ",%s,",
                                json_object_get_string(uid));
    }
    return out;
}

/* Inserts or replaces obj (borrowed) as text (obj serialized plain, which
 * the caller made once for the row, the watch event and the answer); the
 * owned index is rewritten only when the object's owner uids changed (a
 * status patch leaves it alone).
 * An existing row is updated in place (an upsert, not INSERT OR REPLACE,
 * which deletes the row and inserts it again and so rewrites its entries
 * in the primary key and namespace indexes on every write). */
aiq_rc apisrv__store_put(apisrv *s, const char *key, const char *ns,
                         const char *name, json_object *obj, const char *text) {
    aiq_rc rc = AIQ_OK;
    bool same = false;
    char *owners = store_owners(obj);
    if (!owners) return AIQ_ENOMEM;
    sqlite3_stmt *st = s->st_owners_get;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        same = !strcmp((const char *)sqlite3_column_text(st, 0), owners);
    else
        same = !owners[0];   /* new object without owners: nothing to index */
    sqlite3_reset(st);
    if (!same && store_owned_set(s, key, ns ? ns : "", name, owners) != AIQ_OK) {
        free(owners);
        return AIQ_EDB;
    }
    st = s->st_put;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, owners, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, text, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = AIQ_EDB;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    free(owners);
    return rc;
}

/* Removes one object (absent is not an error). */
aiq_rc apisrv__store_del(apisrv *s, const char *key, const char *ns,
                         const char *name) {
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = s->st_del;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = AIQ_EDB;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == AIQ_OK) rc = store_owned_set(s, key, ns ? ns : "", name, "");
    return rc;
}

/* Steps st, calling cb per row, then finalizes st, or with keep only
 * resets it (a cached statement). */
static int store_run_scan(sqlite3_stmt *st, bool keep, apisrv__row_cb cb, void *u) {
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        n++;
        if (cb(u, (const char *)sqlite3_column_text(st, 0),
               (const char *)sqlite3_column_text(st, 1),
               (const char *)sqlite3_column_text(st, 2),
               (const char *)sqlite3_column_text(st, 3)))
            break;
    }
    if (keep) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    } else {
        sqlite3_finalize(st);
    }
    return n;
}

/* See apisrv_int.h. Returns the number of rows visited, -1 on error.
 * The WHERE clause names only the constraints that are present, so SQLite
 * can seek the primary key (key, ns, name) instead of testing every row:
 * a single statement with "(?1 IS NULL OR key=?1)" cannot use an index,
 * which made every admission, authorization and list read the whole
 * table. There are 8 such statements (which constraints are present);
 * each is prepared once and kept in s->st_scan, but a callback may start
 * a nested scan of the same shape, which then prepares its own (preparing
 * per call had been 7% of the server's CPU under writes: the admission
 * check scans the policy bindings on every write). */
int apisrv__store_scan(apisrv *s, const char *key, const char *ns,
                       const char *after_ns, const char *after_name,
                       apisrv__row_cb cb, void *u) {
    sqlite3_stmt *st = NULL;
    char sql[256];
    int shape = (key ? 1 : 0) | (ns ? 2 : 0) | (after_name ? 4 : 0), rows;
    bool cached = !s->scan_busy[shape];
    int n = snprintf(sql, sizeof sql, "SELECT key, ns, name, json FROM objects WHERE 1");
    if (key) n += snprintf(sql + n, sizeof sql - (size_t)n, " AND key=?1");
    if (ns) n += snprintf(sql + n, sizeof sql - (size_t)n, " AND ns=?2");
    if (after_name)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND (ns, name) > (?3, ?4)");
    snprintf(sql + n, sizeof sql - (size_t)n, " ORDER BY ns, name");
    if (cached && s->st_scan[shape]) st = s->st_scan[shape];
    else if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    if (cached) s->st_scan[shape] = st;
    if (key) sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (ns) sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
    if (after_name) {
        sqlite3_bind_text(st, 3, after_ns ? after_ns : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, after_name, -1, SQLITE_STATIC);
    }
    s->scan_busy[shape] |= cached;
    rows = store_run_scan(st, cached, cb, u);
    if (cached) s->scan_busy[shape] = false;
    return rows;
}

/* Rows whose ownerReferences name uid, found through the owned index;
 * -1 on error. */
int apisrv__store_scan_owned(apisrv *s, const char *uid, apisrv__row_cb cb,
                             void *u) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
            "SELECT o.key, o.ns, o.name, o.json FROM owned w JOIN objects o"
            " ON o.key=w.key AND o.ns=w.ns AND o.name=w.name WHERE w.uid=?1"
            " ORDER BY o.key, o.ns, o.name",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, uid, -1, SQLITE_TRANSIENT);
    return store_run_scan(st, false, cb, u);
}

/* Runs one of the transaction statements; AIQ_EDB when it fails. */
static aiq_rc store_step_once(sqlite3_stmt *st) {
    aiq_rc rc = sqlite3_step(st) == SQLITE_DONE ? AIQ_OK : AIQ_EDB;
    sqlite3_reset(st);
    return rc;
}

/* See apisrv_int.h. */
aiq_rc apisrv__store_begin(apisrv *s) {
    return store_step_once(s->st_begin);
}

/* See apisrv_int.h. Rolls back when the commit fails (or when asked:
 * ok false), so no part of the write stays; a transaction SQLite has
 * already rolled back by itself (a full disk) is not rolled back twice. */
aiq_rc apisrv__store_end(apisrv *s, bool ok) {
    if (ok && store_step_once(s->st_commit) == AIQ_OK) return AIQ_OK;
    if (!sqlite3_get_autocommit(s->db)) (void)store_step_once(s->st_rollback);
    return ok ? AIQ_EDB : AIQ_OK;
}

/* The persisted resourceVersion counter (0 for a new database). */
long long apisrv__store_load_rv(apisrv *s) {
    sqlite3_stmt *st = NULL;
    long long rv = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT v FROM meta WHERE k='rv'", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW) rv = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rv;
}

/* Persists the resourceVersion counter. */
aiq_rc apisrv__store_save_rv(apisrv *s, long long rv) {
    aiq_rc rc = AIQ_OK;
    sqlite3_bind_int64(s->st_meta_put, 1, rv);
    if (sqlite3_step(s->st_meta_put) != SQLITE_DONE) rc = AIQ_EDB;
    sqlite3_reset(s->st_meta_put);
    return rc;
}

/* The last configuration manager applied to the object (new ref) or NULL. */
json_object *apisrv__store_applied_get(apisrv *s, const char *key,
                                       const char *ns, const char *name,
                                       const char *manager) {
    sqlite3_stmt *st = NULL;
    json_object *o = NULL;
    if (sqlite3_prepare_v2(s->db,
            "SELECT json FROM applied WHERE key=?1 AND ns=?2 AND name=?3 AND manager=?4",
            -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, manager, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        o = apisrv__parse((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return o;
}

/* Records cfg (borrowed) as manager's last applied configuration. */
aiq_rc apisrv__store_applied_put(apisrv *s, const char *key, const char *ns,
                                 const char *name, const char *manager,
                                 json_object *cfg) {
    sqlite3_stmt *st = NULL;
    aiq_rc rc = AIQ_OK;
    if (sqlite3_prepare_v2(s->db,
            "INSERT OR REPLACE INTO applied(key,ns,name,manager,json) VALUES(?1,?2,?3,?4,?5)",
            -1, &st, NULL) != SQLITE_OK)
        return AIQ_EDB;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, manager, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, json_object_to_json_string_ext(cfg, JSON_C_TO_STRING_PLAIN),
                      -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) rc = AIQ_EDB;
    sqlite3_finalize(st);
    return rc;
}

/* Forgets every manager's applied configuration of a deleted object. */
void apisrv__store_applied_drop(apisrv *s, const char *key, const char *ns,
                                const char *name) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
            "DELETE FROM applied WHERE key=?1 AND ns=?2 AND name=?3", -1, &st,
            NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ns ? ns : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_finalize(st);
}
