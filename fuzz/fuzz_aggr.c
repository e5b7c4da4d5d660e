/* fuzz_aggr.c -- libFuzzer target for what the operator's aggregated API
 * reads from the network before it trusts anyone (operator/api_aggr.c):
 * the request path and the front-proxy decision. Byte 0 holds the
 * certificate flags; the rest is split at the first NUL into a path and
 * then CN, allowed names and user at the next ones.
 * Checks: a parsed path names one of the five kinds with a namespace and
 * a name that fit and contain no '/'; a journal always has both; a
 * refused request (404/401) leaves a message; without a verified
 * certificate nothing is ever accepted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "operator/api_aggr.h"

/* The next NUL-terminated field of buf[*at..n), "" past the end. */
static const char *fz_next(char *buf, size_t n, size_t *at) {
    if (*at >= n) return "";
    const char *s = buf + *at;
    *at += strlen(s) + 1;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    size_t at = 0, n = size;
    const char *path = fz_next(buf, n, &at), *cn = fz_next(buf, n, &at),
               *allowed = fz_next(buf, n, &at), *user = fz_next(buf, n, &at);
    struct opaggr_route r;
    char msg[600];
    msg[0] = '\0';
    int code = opaggr_parse_path(path, &r, msg, sizeof msg);
    if (code == 0) {
        if (r.kind != OPAGGR_GROUP_DOC && r.kind != OPAGGR_RESOURCES && r.kind != OPAGGR_QUEUE &&
            r.kind != OPAGGR_JOURNAL && r.kind != OPAGGR_UTIL)
            abort();
        if (strchr(r.ns, '/') || strchr(r.name, '/') || strlen(r.ns) >= sizeof r.ns)
            abort();
        if (r.kind == OPAGGR_JOURNAL && (!r.ns[0] || !r.name[0]))
            abort();
        if (r.kind == OPAGGR_UTIL && (r.ns[0] || r.name[0])) /* cluster-wide, a list */
            abort();
    } else if (code != 404 || !msg[0]) {
        abort();
    }
    bool has = data[0] & 1, ver = data[0] & 2;
    msg[0] = '\0';
    code = opaggr_decide(has, ver, cn, (data[0] & 4) ? allowed : NULL, user, msg, sizeof msg);
    if (code != 0 && (code != 401 || !msg[0]))
        abort();
    if (code == 0 && (!has || !ver || !*user))
        abort();
    free(buf);
    return 0;
}
