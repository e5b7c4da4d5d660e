/* visibility.h -- the live queue on demand (GET /queue on the metrics
 * port, like Kueue's pending-workloads view).
 *
 * AIJob statuses are written only when something a user acts on changed
 * (status economy, docs/operator.md "Status writes"), so the exact
 * position, score, terms and start estimate of a waiting job come from
 * here. The HTTP thread files a request and waits; the daemon answers
 * every filed request at the end of its next queue cycle, while that
 * cycle's input and output are still valid, and wakes the waiters. A
 * request nobody answers within its timeout gets 503 with the reason.
 *
 * Thread-safe: opvis_ask runs on the HTTP thread, the rest on the daemon
 * thread. */
#ifndef AIQ_OPERATOR_VISIBILITY_H
#define AIQ_OPERATOR_VISIBILITY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct opvis opvis;

/* At most this many requests wait at once; more get 503 "busy". */
#define OPVIS_MAX_WAITING 16

/* NULL on ENOMEM. */
opvis *opvis_create(void);
void opvis_free(opvis *v);

/* Files a request for the waiting jobs of namespace ns ("" or NULL: all)
 * and, when name is set, that one job with its terms; blocks until a
 * cycle answers or timeout_s passes. *body (malloc'd JSON, caller frees)
 * and its length are set in every case; returns the HTTP status (200,
 * 404 for a name not waiting, 503 busy or no cycle in time). */
int opvis_ask(opvis *v, const char *ns, const char *name, double timeout_s, char **body,
              size_t *len);

/* Daemon thread, before the HTTP server stops: wakes every waiter with
 * 503 "shutting down" and refuses new requests. */
void opvis_close(opvis *v);

/* Daemon thread: true when a request waits for an answer. */
bool opvis_waiting(opvis *v);

/* Builds the answer to one request: the document and its HTTP status. */
typedef json_object *(*opvis_fill_fn)(void *ctx, const char *ns, const char *name,
                                      int *status);

/* Daemon thread: answers every waiting request with fill(ctx, ...). */
void opvis_answer(opvis *v, opvis_fill_fn fill, void *ctx);

#endif
