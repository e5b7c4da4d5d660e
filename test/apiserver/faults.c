/* faults.c -- fault injection for reliability tests (off by default):
 * added latency, a fraction of resource requests answered 500, a fraction
 * of writes answered 409. Watch cuts are applied in watch.c. Discovery and
 * /version are never faulted so clients can always start. */
#include "test/apiserver/apisrv_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool faults_is_write(const char *m) {
    return strcmp(m, "GET") && strcmp(m, "HEAD");
}

/* Applies the configured latency, then rolls the dice for a 500 (any
 * resource request) or a 409 (writes). Returns true when w now holds the
 * injected answer. Takes the lock briefly for the PRNG. */
bool apisrv__fault(apisrv *s, struct apisrv__req *r, struct apisrv__resp *w) {
    double x, y;
    if (s->faults.latency_ms > 0) usleep((useconds_t)(s->faults.latency_ms * 1000));
    if (s->faults.error_500_ratio <= 0 && s->faults.conflict_ratio <= 0) return false;
    pthread_mutex_lock(&s->mu);
    x = rand_r(&s->rnd) / (RAND_MAX + 1.0);
    y = rand_r(&s->rnd) / (RAND_MAX + 1.0);
    pthread_mutex_unlock(&s->mu);
    /* discovery (/api, /apis, /api/v1, /apis/G/V) and /version stay reliable */
    if (strncmp(r->url, "/api", 4)) return false;
    int slashes = 0;
    for (const char *p = r->url; *p; p++) slashes += *p == '/';
    if (slashes <= 2 || (!strncmp(r->url, "/apis/", 6) && slashes == 3)) return false;
    if (x < s->faults.error_500_ratio) {
        apisrv__resp_err(w, 500, "InternalError",
                         "Internal error occurred: injected fault");
        return true;
    }
    if (faults_is_write(r->method) && y < s->faults.conflict_ratio) {
        apisrv__resp_err(w, 409, "Conflict",
                         "Operation cannot be fulfilled: injected conflict; please apply "
                         "your changes to the latest version and try again");
        return true;
    }
    return false;
}
