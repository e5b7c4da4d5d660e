/* kube_watch.h -- list+watch of one Kubernetes collection in its own
 * thread, delivering events to a kube_evq.
 *
 * A watch lists the collection (paginated with limit/continue) between
 * RELIST_BEGIN and RELIST_END, then watches from the list's
 * resourceVersion with bookmarks, resumes from the last resourceVersion
 * it saw when the stream ends or breaks, relists on 410 Gone and after a
 * line it cannot frame or decode (resuming would replay it), and backs
 * off with full jitter (base 200 ms, cap 30 s) on errors. Thread model:
 * see the top of kube_watch.c. */
#ifndef AIQ_KUBE_WATCH_H
#define AIQ_KUBE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/aiq_err.h"
#include "operator/kube_evq.h"
#include "operator/kube_http.h"

struct kube_watch; /* opaque */

/* What to watch; zero fields take the defaults shown. Strings are
 * copied. */
struct kube_watch_opts {
    const char *name;           /* event tag, <= 63 chars (required) */
    const char *path;           /* collection path without query, e.g.
                                   /apis/aiq.dev/v1alpha1/aijobs (required) */
    const char *label_selector; /* optional, sent escaped */
    const char *field_selector; /* optional, sent escaped */
    int page_limit;             /* list page size, default 500 */
    int timeout_seconds;        /* watch timeoutSeconds, default 300 */
    long backoff_base_ms;       /* default 200 */
    long backoff_cap_ms;        /* default 30000 */
    size_t max_line;            /* watch line cap, default 16 MiB */
};

/* Counters and state for logs, metrics and tests. */
struct kube_watch_stats {
    unsigned long lists;     /* complete (re)lists */
    unsigned long watches;   /* watch requests started */
    unsigned long gone;      /* 410s (HTTP or ERROR event) */
    unsigned long errors;    /* failed lists/watches (each followed by a backoff) */
    unsigned long undecodable; /* of those, streams cut by a line that could not
                                  be framed or decoded (each followed by a relist) */
    unsigned long events;    /* ADDED/MODIFIED/DELETED delivered from streams */
    unsigned long bookmarks;
    char rv[64];             /* last resourceVersion seen */
    aiq_err last_err;        /* the most recent error (code AIQ_OK if none) */
};

/* Starts a watch thread on c delivering to q. c and q are borrowed and
 * must outlive the watch. On AIQ_OK *out is the running watch (stop it
 * with kube_watch_free); on error nothing was started and *out is NULL. */
aiq_rc kube_watch_start(struct kube_client *c, const struct kube_watch_opts *o,
                        struct kube_evq *q, struct kube_watch **out,
                        aiq_err *e);

/* Stops the watch (aborting an open stream or a backoff sleep at once),
 * joins its thread and frees it. Events already queued stay in the
 * queue. w may be NULL. */
void kube_watch_free(struct kube_watch *w);

/* Copies the current counters into *out (thread-safe). */
void kube_watch_get_stats(struct kube_watch *w, struct kube_watch_stats *out);

/* Full-jitter backoff: a uniform random delay in [0, min(cap, base *
 * 2^attempt)] ms, drawing from the xorshift state *rng (non-zero). */
long kube_backoff_ms(unsigned attempt, long base_ms, long cap_ms,
                     uint64_t *rng);

#endif
