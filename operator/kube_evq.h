/* kube_evq.h -- the thread-safe queue that carries watch events from the
 * watch threads to the operator's main loop, which waits on it with a
 * timeout (its periodic cycle). Bounded: a full queue blocks the watch
 * threads (back-pressure) instead of growing without limit. */
#ifndef AIQ_KUBE_EVQ_H
#define AIQ_KUBE_EVQ_H

#include <stdatomic.h>
#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "operator/kube_framer.h"

/* One event. For ADDED/MODIFIED/DELETED/BOOKMARK obj is the object (owned
 * by the event; its only reference, so the consumer may keep it with
 * json_object_get or modify it). For RELIST_BEGIN/RELIST_END obj is NULL:
 * between them every live object of the resource arrives as ADDED, and
 * at RELIST_END the consumer drops the objects it did not see since
 * RELIST_BEGIN (they were deleted while the watch was down). A list
 * that fails after its first page leaves a BEGIN without an END; the
 * retry sends a new BEGIN, which restarts that bookkeeping. */
struct kube_event {
    enum kube_event_type type;
    char resource[64];      /* the watch's name ("aijobs", "pods") */
    char rv[64];            /* resourceVersion after this event ("" if none) */
    json_object *obj;
};

/* Frees ev and puts its object. ev may be NULL. */
void kube_event_free(struct kube_event *ev);

struct kube_evq; /* opaque */

/* Creates a queue holding at most cap events (0: 65536). On AIQ_OK *out
 * is the new queue for kube_evq_free. */
aiq_rc kube_evq_create(size_t cap, struct kube_evq **out, aiq_err *e);

/* Frees q and every event still queued. No thread may be using q
 * (stop the watches first). q may be NULL. */
void kube_evq_free(struct kube_evq *q);

/* Appends ev, taking ownership. Blocks while the queue is full, checking
 * *cancel (may be NULL) every 100 ms; returns AIQ_ESTATE (and frees ev)
 * when *cancel became non-zero, else AIQ_OK. */
aiq_rc kube_evq_push(struct kube_evq *q, struct kube_event *ev,
                     const atomic_int *cancel);

/* Takes the oldest event into *out (caller frees with kube_event_free),
 * waiting up to timeout_ms (0: do not wait, < 0: forever). Returns AIQ_OK
 * or AIQ_ETIMEOUT with *out NULL. */
aiq_rc kube_evq_pop(struct kube_evq *q, long timeout_ms,
                    struct kube_event **out);

/* Events queued now. */
size_t kube_evq_len(struct kube_evq *q);

#endif
