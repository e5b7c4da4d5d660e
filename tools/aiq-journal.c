/* aiq-journal.c -- serves the operator's decision journal read-only over
 * HTTP (GET /journal?job=NS/NAME&uid=UID&limit=N, see
 * operator/http_api.h) from the operator's SQLite file, for
 * `kubectl aiq explain --operator-url`. Run it beside the operator (a
 * sidecar sharing the data volume, or on the same machine): it opens the
 * file read-only, so it never blocks or changes the operator's writes.
 *
 *   aiq-journal --db PATH [--addr HOST:PORT]
 *
 * Prints "aiq-journal listening on http://HOST:PORT" once serving, then
 * runs until SIGINT/SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/version.h"
#include "common/aiq_err.h"
#include "operator/http_api.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *f) {
    fputs("usage: aiq-journal --db PATH [--addr HOST:PORT]\n"
          "  --db PATH         the operator's SQLite store (its --db)\n"
          "  --addr HOST:PORT  where to listen (default 127.0.0.1:8081; port 0 = any)\n",
          f);
}

int main(int argc, char **argv) {
    const char *db = NULL, *addr = "127.0.0.1:8081";
    opapi *a = NULL;
    aiq_err e;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--db") == 0 || strcmp(argv[i], "--addr") == 0) && i + 1 < argc) {
            if (strcmp(argv[i], "--db") == 0)
                db = argv[++i];
            else
                addr = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            aiq_print_version("aiq-journal");
            return 0;
        } else {
            fprintf(stderr, "aiq-journal: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 1;
        }
    }
    if (!db) {
        fputs("aiq-journal: --db is required\n", stderr);
        usage(stderr);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    aiq_err_clear(&e);
    if (opapi_create(db, &a, &e) != AIQ_OK || opapi_listen(a, addr, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-journal: %s\n", e.message);
        goto out;
    }
    const char *colon = strrchr(addr, ':'); /* opapi_listen checked it exists */
    if (colon == addr)
        printf("aiq-journal listening on http://0.0.0.0:%d\n", opapi_port(a));
    else
        printf("aiq-journal listening on http://%.*s:%d\n", (int)(colon - addr), addr, opapi_port(a));
    fflush(stdout);
    while (!stop_flag)
        pause();
    rc = 0;
out:
    opapi_free(a);
    return rc;
}
