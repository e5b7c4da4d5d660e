/* kube_framer.h -- splits a Kubernetes watch stream into lines and decodes
 * each line into a watch event. Pure functions: no I/O, no threads, so the
 * fuzzer (fuzz/fuzz_watch.c) and the unit tests drive them directly.
 *
 * Framing (kubectl-contract.md "Transport"): one JSON object per line,
 * {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}\n.
 * Chunks may split a line anywhere; "\r\n" ends a line like "\n"; empty
 * lines are skipped; a line longer than the cap is an error (the caller
 * restarts the watch), never unbounded growth. */
#ifndef AIQ_KUBE_FRAMER_H
#define AIQ_KUBE_FRAMER_H

#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "operator/kube_status.h"

/* Default cap on one watch line (one event): 16 MiB. */
#define KUBE_FRAMER_MAX_LINE (16u * 1024u * 1024u)

/* Caller-owned framer state; use kube_framer_init/kube_framer_deinit. */
struct kube_framer {
    char *buf;      /* partial line carried between chunks (owned) */
    size_t len;     /* bytes in buf */
    size_t cap;     /* allocated size of buf */
    size_t max;     /* cap on one line, without its terminator */
};

/* Called once per complete, non-empty line (terminator and a trailing '\r'
 * removed). line is borrowed and valid only during the call; it is not
 * NUL-terminated. A return other than AIQ_OK stops kube_framer_feed, which
 * returns that code. */
typedef aiq_rc (*kube_line_fn)(void *ud, const char *line, size_t len);

/* Prepares f with a line cap of max_line bytes (0 means
 * KUBE_FRAMER_MAX_LINE). Allocates nothing. */
void kube_framer_init(struct kube_framer *f, size_t max_line);

/* Frees f's buffer; f may then be re-initialised. f may be NULL. */
void kube_framer_deinit(struct kube_framer *f);

/* Drops any partial line (used when a stream restarts). */
void kube_framer_reset(struct kube_framer *f);

/* Feeds len bytes of the stream. Calls fn for every line completed by this
 * chunk and keeps the unfinished tail for the next call. Returns AIQ_OK,
 * AIQ_ETOOBIG when a line passes the cap (e names the cap and the length
 * seen), AIQ_ENOMEM, or fn's code. After any error the framer is reset:
 * the caller is expected to restart the stream. */
aiq_rc kube_framer_feed(struct kube_framer *f, const char *data, size_t len,
                        kube_line_fn fn, void *ud, aiq_err *e);

/* Bytes of an unfinished line held by f (0 at a line boundary). */
size_t kube_framer_pending(const struct kube_framer *f);

enum kube_event_type {
    KUBE_EV_ADDED = 1,
    KUBE_EV_MODIFIED,
    KUBE_EV_DELETED,
    KUBE_EV_BOOKMARK,
    KUBE_EV_RELIST_BEGIN, /* a (re)list starts: items follow as ADDED */
    KUBE_EV_RELIST_END,   /* the list is complete; drop objects not seen */
};

/* Static name of t ("ADDED", ...), "?" for an unknown value. */
const char *kube_event_type_name(enum kube_event_type t);

/* Decodes one watch line. On AIQ_OK sets *type and *obj (a new reference
 * to the event's "object", caller puts it). An ERROR line returns
 * AIQ_EGONE when its Status code is 410, else AIQ_EHTTP, with e's
 * http_status, reason and message taken from the Status; *obj is NULL.
 * Malformed lines (bad JSON, no type, unknown type, object not an object)
 * return AIQ_EPARSE / AIQ_EINVAL naming the field. *obj is NULL after any
 * error. */
aiq_rc kube_watch_decode(const char *line, size_t len,
                         enum kube_event_type *type, json_object **obj,
                         aiq_err *e);

#endif
