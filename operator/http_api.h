/* http_api.h -- the operator's read-only HTTP API for tools such as
 * `kubectl aiq explain`: a job's recent journal entries.
 *
 *   GET /journal?job=NS/NAME[&uid=UID][&limit=N]
 *     200 {"job":"NS/NAME","items":[...]}  newest first, at most N
 *         (default 10, max 200) entries: the decisions recorded for the
 *         job's uid (without uid: the newest job stored as NS/NAME) and
 *         the input events recorded under its key, each
 *         {"type":"decision","t":T,"cycle":C,"action":A,"level":L,
 *          "position":P,"score":S,"reason":R,"message":M} or
 *         {"type":"event","t":T,"kind":K,"payload":{...}}.
 *     400 for a missing or malformed job (the message names it).
 *
 * It reads the operator's SQLite file through its own read-only
 * connection (WAL lets it read while the daemon writes), so it never
 * touches the daemon's store handle and can answer from any thread.
 *
 * Two ways to serve it, with one handler (opapi_serve_journal):
 * opapi_listen starts its own libmicrohttpd daemon (aiq-journal), or a
 * server that is already running (the metrics server) calls
 * opapi_serve_journal for GET /journal. */
#ifndef AIQ_OPERATOR_HTTP_API_H
#define AIQ_OPERATOR_HTTP_API_H

#include <stddef.h>

#include <microhttpd.h>

#include <netinet/in.h>

#include "common/aiq_err.h"

typedef struct opapi opapi;

#define OPAPI_MAX_LIMIT 200
#define OPAPI_MAX_KEY 512    /* bytes of job / uid accepted */

/* Opens db_path read-only. On AIQ_OK *out is a new handle (opapi_free);
 * AIQ_EDB naming the path when SQLite cannot open it or it has no journal
 * tables (the operator has not created it yet). *out NULL after an
 * error. */
aiq_rc opapi_create(const char *db_path, opapi **out, aiq_err *err);

/* Stops serving (if started), closes the connection, frees a. NULL is a
 * no-op. */
void opapi_free(opapi *a);

/* Builds the /journal answer for job ("NS/NAME", required), uid (may be
 * NULL or "") and limit (<= 0: 10; capped at OPAPI_MAX_LIMIT). On AIQ_OK
 * *body is new JSON text (caller frees) of *len bytes. AIQ_EINVAL (HTTP
 * 400) for a missing, over-long or slash-less job; AIQ_EDB when a query
 * fails. Thread-safe. */
aiq_rc opapi_journal_json(opapi *a, const char *job, const char *uid,
                          int limit, char **body, size_t *len, aiq_err *err);

/* opapi_journal_json from a request's raw query values: limit (may be
 * NULL: 10) must be a positive integer, else AIQ_EINVAL naming it and its
 * value. Every server of /journal goes through this, so they answer
 * alike: AIQ_EINVAL is HTTP 400, other errors 500. */
aiq_rc opapi_journal_query(opapi *a, const char *job, const char *uid, const char *limit,
                           char **body, size_t *len, aiq_err *err);

/* Answers one GET /journal request on c (its job, uid and limit query
 * values) through opapi_journal_query: 200 with the JSON, 400 naming a
 * bad job or limit, 500 on a store error; errors are {"error": msg}.
 * The caller has checked the method, the URL and who may ask. */
enum MHD_Result opapi_serve_journal(struct MHD_Connection *c, opapi *a);

/* Queues a reply of len bytes of body with Content-Type ctype. mode is
 * libmicrohttpd's: with MHD_RESPMEM_MUST_FREE body (malloc'd) is taken,
 * freed also when the reply cannot be made. */
enum MHD_Result opapi_reply(struct MHD_Connection *c, unsigned code, const char *ctype,
                            char *body, size_t len, enum MHD_ResponseMemoryMode mode);

/* Serves GET /journal on addr ("host:port", IPv4; port 0 picks one) from
 * its own libmicrohttpd thread. AIQ_EINVAL for a malformed addr, AIQ_EIO
 * when it cannot bind, AIQ_ESTATE when already serving. */
aiq_rc opapi_listen(opapi *a, const char *addr, aiq_err *err);

/* The bound port after opapi_listen, else 0. */
int opapi_port(const opapi *a);

/* Parses a listen address "host:port" (IPv4; an empty host listens on
 * every address, "localhost" on the loopback) into *sa, as --metrics-addr
 * and --api-addr take it. Returns 0, or -1 when addr is NULL or malformed
 * (sa is then unspecified). */
int opapi_parse_addr(const char *addr, struct sockaddr_in *sa);

#endif
