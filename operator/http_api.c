/* http_api.c -- the read-only /journal endpoint (see http_api.h): two
 * queries on a private read-only SQLite connection, merged newest first
 * into JSON, and an optional libmicrohttpd daemon serving them. */
#include "operator/http_api.h"

#include <arpa/inet.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/json.h"

struct opapi {
    sqlite3 *db;
    pthread_mutex_t mu;      /* one query at a time on db */
    struct MHD_Daemon *httpd;
    int port;
};

/* Creates the handle; see http_api.h. */
aiq_rc opapi_create(const char *db_path, opapi **out, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = NULL;
    opapi *a = calloc(1, sizeof *a);
    *out = NULL;
    if (!a)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return aiq_err_set(err, AIQ_ENOMEM, "cannot create a mutex");
    }
    if (sqlite3_open_v2(db_path, &a->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "journal API: cannot open %.300s read-only: %s", db_path,
                         a->db ? sqlite3_errmsg(a->db) : "out of memory");
        goto out_close;
    }
    sqlite3_busy_timeout(a->db, 2000);
    /* Both tables must exist: the operator has created its store. */
    if (sqlite3_prepare_v2(a->db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                                  "name IN ('decisions','journal_events')", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int(st, 0) != 2) {
        rc = aiq_err_set(err, AIQ_EDB, "journal API: %.300s has no journal tables (%s)", db_path,
                         sqlite3_errmsg(a->db));
        goto out_close;
    }
    sqlite3_finalize(st);
    *out = a;
    return AIQ_OK;
out_close:
    sqlite3_finalize(st);
    sqlite3_close(a->db);
    pthread_mutex_destroy(&a->mu);
    free(a);
    return rc;
}

/* Frees the handle; see http_api.h. */
void opapi_free(opapi *a) {
    if (!a)
        return;
    if (a->httpd)
        MHD_stop_daemon(a->httpd);
    sqlite3_close(a->db);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* Adds column col of the row as member k: its text, or null for an SQL
 * NULL. A text SQLite could not make (out of memory) sets *failed. */
static void opa_text(json_object *e, const char *k, sqlite3_stmt *st, int col, bool *failed) {
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        aiq_jset_null(e, k, failed);
        return;
    }
    const unsigned char *s = sqlite3_column_text(st, col);
    aiq_jset(e, k, s ? json_object_new_string((const char *)s) : NULL, failed);
}

/* Adds the columns of a decision row (t, cycle, action, level, position,
 * score, reason, message) or an event row (t, kind, payload) to e. */
static void opa_row(json_object *e, sqlite3_stmt *st, bool is_decision, bool *failed) {
    aiq_jset(e, "type", json_object_new_string(is_decision ? "decision" : "event"), failed);
    aiq_jset(e, "t", json_object_new_double(sqlite3_column_double(st, 0)), failed);
    if (is_decision) {
        aiq_jset(e, "cycle", json_object_new_int64(sqlite3_column_int64(st, 1)), failed);
        opa_text(e, "action", st, 2, failed);
        aiq_jset(e, "level", json_object_new_int(sqlite3_column_int(st, 3)), failed);
        aiq_jset(e, "position", json_object_new_int(sqlite3_column_int(st, 4)), failed);
        aiq_jset(e, "score", json_object_new_double(sqlite3_column_double(st, 5)), failed);
        opa_text(e, "reason", st, 6, failed);
        opa_text(e, "message", st, 7, failed);
    } else {
        opa_text(e, "kind", st, 1, failed);
        /* payloads were checked as JSON when written; keep text if not */
        bool null = sqlite3_column_type(st, 2) == SQLITE_NULL;
        const unsigned char *p = null ? NULL : sqlite3_column_text(st, 2);
        json_object *pj = p ? json_tokener_parse((const char *)p) : NULL;
        if (null)
            aiq_jset_null(e, "payload", failed);
        else
            aiq_jset(e, "payload", pj ? pj : p ? json_object_new_string((const char *)p) : NULL,
                     failed);
    }
}

/* Runs one prepared query (bound key, limit) and appends its rows as
 * entries to arr. is_decision picks the row shape. */
static aiq_rc opa_rows(opapi *a, const char *sql, const char *key, int limit,
                       bool is_decision, json_object *arr, aiq_err *err) {
    sqlite3_stmt *st = NULL;
    aiq_rc rc = AIQ_OK;
    int s;
    if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_bind_int(st, 2, limit) != SQLITE_OK) {
        rc = aiq_err_set(err, AIQ_EDB, "journal API: %s", sqlite3_errmsg(a->db));
        goto out;
    }
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        json_object *e = json_object_new_object();
        bool failed = !e;
        opa_row(e, st, is_decision, &failed);
        if (failed) {
            json_object_put(e);
            rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
            goto out;
        }
        if (aiq_jpush(arr, e, NULL) != 0) {
            rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (s != SQLITE_DONE)
        rc = aiq_err_set(err, AIQ_EDB, "journal API: %s", sqlite3_errmsg(a->db));
out:
    sqlite3_finalize(st);
    return rc;
}

static double opa_t(json_object *e) {
    json_object *t = NULL;
    json_object_object_get_ex(e, "t", &t);
    return json_object_get_double(t);
}

static int opa_newest_first(const void *x, const void *y) {
    double a = opa_t(*(json_object *const *)x), b = opa_t(*(json_object *const *)y);
    return a > b ? -1 : a < b;
}

/* Builds the answer; see http_api.h. */
aiq_rc opapi_journal_json(opapi *a, const char *job, const char *uid,
                          int limit, char **body, size_t *len, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    *body = NULL;
    if (!job || !*job || !strchr(job, '/') || strlen(job) > OPAPI_MAX_KEY)
        return aiq_err_field(err, AIQ_EINVAL, "job", "job: expected NS/NAME (at most %d bytes), got \"%.100s\"",
                             OPAPI_MAX_KEY, job ? job : "");
    if (uid && strlen(uid) > OPAPI_MAX_KEY)
        return aiq_err_field(err, AIQ_EINVAL, "uid", "uid: longer than %d bytes", OPAPI_MAX_KEY);
    if (limit <= 0)
        limit = 10;
    if (limit > OPAPI_MAX_LIMIT)
        limit = OPAPI_MAX_LIMIT;
    json_object *doc = json_object_new_object(), *arr = json_object_new_array();
    bool failed = !doc;
    aiq_jset(doc, "job", json_object_new_string(job), &failed);
    aiq_jset(doc, "items", arr, &failed); /* arr stays borrowed from doc */
    if (failed) {
        json_object_put(doc);
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    }
    pthread_mutex_lock(&a->mu);
    if (uid && *uid)
        rc = opa_rows(a, "SELECT t, cycle, action, level, position, score, reason, message "
                          "FROM decisions WHERE job_uid = ?1 ORDER BY t DESC, id DESC LIMIT ?2",
                      uid, limit, true, arr, err);
    else /* no uid: the newest job stored under NS/NAME (jobs_ns_name index) */
        rc = opa_rows(a, "SELECT t, cycle, action, level, position, score, reason, message "
                          "FROM decisions WHERE job_uid = (SELECT uid FROM jobs "
                          "WHERE ns = substr(?1, 1, instr(?1, '/') - 1) "
                          "AND name = substr(?1, instr(?1, '/') + 1) "
                          "ORDER BY created DESC LIMIT 1) ORDER BY t DESC, id DESC LIMIT ?2",
                      job, limit, true, arr, err);
    if (rc == AIQ_OK)
        rc = opa_rows(a, "SELECT t, kind, payload FROM journal_events WHERE obj_key = ?1 "
                          "ORDER BY t DESC, id DESC LIMIT ?2", job, limit, false, arr, err);
    pthread_mutex_unlock(&a->mu);
    if (rc != AIQ_OK)
        goto out;
    json_object_array_sort(arr, opa_newest_first);
    while ((int)json_object_array_length(arr) > limit)
        json_object_array_del_idx(arr, json_object_array_length(arr) - 1, 1);
    size_t n = 0;
    const char *text = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN, &n);
    *body = malloc(n + 1);
    if (!*body) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    memcpy(*body, text, n + 1);
    *len = n;
out:
    json_object_put(doc);
    return rc;
}

/* See http_api.h. */
aiq_rc opapi_journal_query(opapi *a, const char *job, const char *uid, const char *limit,
                           char **body, size_t *len, aiq_err *err) {
    long n = 10;
    if (limit) {
        char *end = NULL;
        n = strtol(limit, &end, 10);
        if (!*limit || *end || n < 1)
            return aiq_err_field(err, AIQ_EINVAL, "limit",
                                 "limit: expected a positive integer, got \"%.60s\"", limit);
        if (n > OPAPI_MAX_LIMIT)
            n = OPAPI_MAX_LIMIT;
    }
    return opapi_journal_json(a, job, uid, (int)n, body, len, err);
}

/* ---- HTTP ----------------------------------------------------------------- */

/* See http_api.h. */
enum MHD_Result opapi_reply(struct MHD_Connection *c, unsigned code, const char *ctype,
                            char *body, size_t len, enum MHD_ResponseMemoryMode mode) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result opa_error(struct MHD_Connection *c, unsigned code, const char *msg) {
    json_object *o = json_object_new_object();
    if (aiq_jset(o, "error", json_object_new_string(msg), NULL) != 0) {
        json_object_put(o);
        return MHD_NO; /* out of memory: no answer, as when body fails below */
    }
    size_t n = 0;
    const char *t = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    char *body = malloc(n + 1);
    if (body)
        memcpy(body, t, n + 1);
    json_object_put(o);
    if (!body)
        return MHD_NO;
    return opapi_reply(c, code, "application/json", body, n, MHD_RESPMEM_MUST_FREE);
}

/* See http_api.h. */
enum MHD_Result opapi_serve_journal(struct MHD_Connection *c, opapi *a) {
    const char *job = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "job");
    const char *uid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "uid");
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    char *body = NULL;
    size_t len = 0;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = opapi_journal_query(a, job, uid, lim, &body, &len, &e);
    if (rc != AIQ_OK)
        return opa_error(c, rc == AIQ_EINVAL ? 400 : 500, e.message);
    return opapi_reply(c, 200, "application/json", body, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result opa_handler(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload,
                                   size_t *upload_size, void **state) {
    opapi *a = cls;
    (void)version;
    (void)upload;
    (void)state;
    if (*upload_size)
        *upload_size = 0;
    if (strcmp(method, "GET") != 0)
        return opa_error(c, 405, "method not allowed: the journal API is read-only");
    if (strcmp(url, "/journal") != 0)
        return opa_error(c, 404, "not found (GET /journal?job=NS/NAME&uid=UID&limit=N)");
    return opapi_serve_journal(c, a);
}

/* Parses a listen address; see http_api.h. */
int opapi_parse_addr(const char *addr, struct sockaddr_in *sa) {
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    char host[64];
    if (!colon || (size_t)(colon - addr) >= sizeof host)
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!host[0])
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return -1;
    return 0;
}

/* Starts serving; see http_api.h. */
aiq_rc opapi_listen(opapi *a, const char *addr, aiq_err *err) {
    struct sockaddr_in sa;
    if (a->httpd)
        return aiq_err_set(err, AIQ_ESTATE, "journal API already serving");
    if (opapi_parse_addr(addr, &sa) != 0)
        return aiq_err_field(err, AIQ_EINVAL, "--api-addr",
                             "--api-addr: expected IPv4-host:port, got \"%.100s\"", addr ? addr : "");
    a->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                opa_handler, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (!a->httpd)
        return aiq_err_set(err, AIQ_EIO, "journal API: cannot listen on %.100s", addr);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(a->httpd, MHD_DAEMON_INFO_BIND_PORT);
    a->port = info ? (int)info->port : ntohs(sa.sin_port);
    return AIQ_OK;
}

/* Returns the port; see http_api.h. */
int opapi_port(const opapi *a) {
    return a && a->httpd ? a->port : 0;
}
