/* fuzz_watch.c -- libFuzzer target for the watch stream: the line framer
 * (fed in chunks whose sizes come from the input) and the decoder of each
 * line into a watch event, with a small line cap so the cap path is
 * reached. Checks that no line handed out passes the cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "operator/kube_framer.h"

struct fz {
    size_t max;
};

static aiq_rc fz_line(void *ud, const char *line, size_t len) {
    struct fz *z = ud;
    if (len == 0 || len > z->max) abort(); /* framer contract */
    enum kube_event_type t;
    json_object *obj = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_watch_decode(line, len, &t, &obj, &e);
    if (rc == AIQ_OK) {
        if (!obj || t < KUBE_EV_ADDED || t > KUBE_EV_BOOKMARK) abort();
        (void)aiq_jpath_str(obj, "metadata.resourceVersion");
        json_object_put(obj);
    } else if (obj) {
        abort(); /* no object after an error */
    }
    return AIQ_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    /* Byte 0: chunk size pattern; byte 1: line cap. */
    size_t step = (size_t)(data[0] % 17) + 1;
    struct fz z = {.max = data[1] < 8 ? 4096 : (size_t)data[1] * 4};
    struct kube_framer f;
    kube_framer_init(&f, z.max);
    const char *p = (const char *)data + 2;
    size_t left = size - 2;
    while (left > 0) {
        size_t n = step < left ? step : left;
        aiq_err e;
        aiq_err_clear(&e);
        aiq_rc rc = kube_framer_feed(&f, p, n, fz_line, &z, &e);
        if (rc != AIQ_OK && kube_framer_pending(&f) != 0) abort(); /* reset after error */
        if (f.len > z.max + 1) abort();
        p += n;
        left -= n;
        step = step * 3 % 29 + 1;
    }
    kube_framer_deinit(&f);
    return 0;
}
