/* release_exec.h -- sends a batch of merge patches (release patches of
 * release.h, and the batched status writes of server.c) to the
 * API server from a few threads at once, over the thread-safe client's
 * handle pool, so releasing many pods is bounded by the server rather than
 * by one request's round trip. Results are per item; nothing here touches
 * the operator's caches (the caller applies the results on its thread). */
#ifndef AIQ_OPERATOR_RELEASE_EXEC_H
#define AIQ_OPERATOR_RELEASE_EXEC_H

#include <json-c/json.h>

#include "common/aiq_err.h"

struct kube_client;

struct release_item {
    char path[768];        /* the pod's API path (the collection for create) */
    json_object *patch;    /* merge patch, or the object to create (owned
                              by the caller) */
    int create;            /* 1: POST patch to path instead of PATCH */
    const char *body;      /* create: the object as JSON text instead of
                              patch (body_len bytes; the caller's) */
    size_t body_len;
    json_object *out;      /* the patched pod on success (caller puts it) */
    aiq_rc rc;
    aiq_err err;
};

/* PATCHes (or POSTs, for create items) every item using up to `threads`
 * threads (1..16; n small means fewer), in no particular order. Fills
 * out/rc/err of each item. Returns how many succeeded. */
int release_exec(struct kube_client *c, struct release_item *items, int n,
                 int threads);

#endif
