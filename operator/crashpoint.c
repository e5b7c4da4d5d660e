/* crashpoint.c -- AIQ_CRASH_AT=<name>:<n> parsing and the crash itself
 * (see crashpoint.h). The variable is read once; a malformed value is
 * reported on stderr and disables every point, so a typo in a test shows
 * up instead of silently never crashing. */
#include "operator/crashpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CRASHPOINT_NAME_MAX 64

/* The armed point (daemon-layer state: the operator is the only user). */
static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    char name[CRASHPOINT_NAME_MAX];
    long target;
    long hits;
} cp = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, "", 0, 0};

/* Parses AIQ_CRASH_AT into cp (runs once). */
static void cp_init(void) {
    const char *v = getenv("AIQ_CRASH_AT");
    if (!v || !*v)
        return;
    const char *colon = strrchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : 0;
    char *end = NULL;
    long n = 0;
    if (colon) {
        errno = 0;
        n = strtol(colon + 1, &end, 10);
    }
    if (!colon || len == 0 || len >= sizeof cp.name || errno || !end || *end ||
        end == colon + 1 || n < 1) {
        fprintf(stderr, "aiq-operator: AIQ_CRASH_AT: want <point>:<n> with n >= 1, "
                        "got \"%.80s\"; crash points disabled\n", v);
        return;
    }
    memcpy(cp.name, v, len);
    cp.name[len] = '\0';
    cp.target = n;
    fprintf(stderr, "aiq-operator: crash point armed: %s at pass %ld\n", cp.name, n);
}

/* Counts a pass and crashes on the armed one; see crashpoint.h. */
void crashpoint(const char *name) {
    pthread_once(&cp.once, cp_init);
    if (!cp.target || strcmp(name, cp.name) != 0)
        return;
    pthread_mutex_lock(&cp.mu);
    long hit = ++cp.hits;
    pthread_mutex_unlock(&cp.mu);
    if (hit == cp.target) {
        static const char msg[] = "aiq-operator: crash point reached, _exit(137)\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(137);
    }
}
