/* fuzz_util.c -- libFuzzer target for the Prometheus answer parser of the
 * live utilisation source (operator/util_source.c), which reads whatever
 * the configured URL sends back: oputil_parse never crashes or leaks on
 * any bytes, and what it accepts holds its promises (a non-empty node
 * name, a GPU index below Q_MAX_GPUS, a finite value and time); merged
 * into a cache and filled into a node, utilisation stays within 0..1.
 * The first byte picks the node label (default order, or "Hostname"),
 * or (bit 1) reads the rest as an Alnair node annotation value instead:
 * oputil_alnair_value gives a finite percent >= 0 or nothing.
 * Seeds: fuzz/corpus/util/. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "operator/util_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const char *label = data[0] & 1 ? "Hostname" : NULL;
    if (data[0] & 2) { /* the rest as an Alnair annotation value */
        char *v = malloc(size);
        double pct = -1;
        const char *field = NULL;
        if (!v)
            return 0;
        memcpy(v, data + 1, size - 1);
        v[size - 1] = '\0';
        if (oputil_alnair_value(v, &pct, &field) == 0 && (!(pct >= 0) || !isfinite(pct) || !field))
            abort();
        free(v);
        return 0;
    }
    struct oputil_sample *s = NULL;
    struct oputil_skips sk;
    size_t n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = oputil_parse((const char *)data + 1, size - 1, label, &s, &n, &sk, &e);
    if (rc != AIQ_OK) {
        if (s || n || !e.message[0])
            abort(); /* an error leaves nothing behind and says why */
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!s[i].node[0] || memchr(s[i].node, '\0', sizeof s[i].node) == NULL ||
            s[i].gpu < 0 || s[i].gpu >= Q_MAX_GPUS || !isfinite(s[i].value) || !isfinite(s[i].t))
            abort();
    struct oputil_opts o = {"http://127.0.0.1:1", 15, 60, 1, NULL};
    oputil *u = NULL;
    if (n && oputil_create(&o, &u, &e) == AIQ_OK) {
        if (oputil__merge(u, s, n, true) != 0)
            abort();
        struct q_node q;
        memset(&q, 0, sizeof q);
        q.name = s[0].node;
        q.ngpus = Q_MAX_GPUS;
        oputil_fill(u, &q, 1, s[0].t, NULL, NULL);
        for (int g = 0; g < Q_MAX_GPUS; g++)
            if (!(q.gpu_util[g] >= 0 && q.gpu_util[g] <= 1))
                abort();
        free(oputil_json(u, false, s[0].t, NULL));
        oputil_free(u);
    }
    free(s);
    return 0;
}
