/* main.c -- the aiq-apiserver program: parses flags into an apisrv_config,
 * starts the local API server and its simulator, prints one ready line,
 * and runs until SIGTERM or SIGINT. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "test/apiserver/apiserver.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: aiq-apiserver [--db PATH] [--port N] [--kubeconfig PATH] [--nodes FILE]\n"
        "                     [--time-scale X] [--tls] [--token T | --admin-token T]\n"
        "                     [--tokens FILE] [--authz=rbac|none] [--history N]\n"
        "                     [--fault-500 R] [--fault-409 R] [--fault-watch-cut S]\n"
        "                     [--fault-latency-ms N] [--seed N]\n");
}

static int parse_double(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || d < lo || d > hi) {
        fprintf(stderr, "aiq-apiserver: %s: want a number in [%g, %g], got \"%s\"\n",
                flag, lo, hi, v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

int main(int argc, char **argv) {
    struct apisrv_config cfg = {.db_path = ":memory:", .time_scale = 1};
    const char *kubeconfig = "./aiq-kubeconfig";
    aiq_err err;
    apisrv *s;
    sigset_t set;
    int sig = 0;
    double d;

    aiq_err_clear(&err);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;
        if (!strcmp(a, "--db") && v) cfg.db_path = v;
        else if (!strcmp(a, "--kubeconfig") && v) kubeconfig = v;
        else if (!strcmp(a, "--nodes") && v) cfg.nodes_file = v;
        else if ((!strcmp(a, "--token") || !strcmp(a, "--admin-token")) && v) cfg.token = v;
        else if (!strcmp(a, "--tokens") && v) cfg.tokens_file = v;
        else if (!strncmp(a, "--authz=", 8)) {
            if (!strcmp(a + 8, "rbac")) cfg.authz_rbac = true;
            else if (strcmp(a + 8, "none")) {
                fprintf(stderr, "aiq-apiserver: --authz: want rbac or none, got \"%s\"\n", a + 8);
                return 2;
            }
            used = 0;
        }
        else if (!strcmp(a, "--tls")) { cfg.tls = true; used = 0; }
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--version")) { aiq_print_version("aiq-apiserver"); return 0; }
        else if (!strcmp(a, "--port")) {
            if (parse_double(a, v, 0, 65535, &d)) return 2;
            cfg.port = (int)d;
        } else if (!strcmp(a, "--history")) {
            if (parse_double(a, v, 1, 10000000, &d)) return 2;
            cfg.history = (int)d;
        } else if (!strcmp(a, "--time-scale")) {
            if (parse_double(a, v, 0.001, 1e6, &cfg.time_scale)) return 2;
        } else if (!strcmp(a, "--fault-500")) {
            if (parse_double(a, v, 0, 1, &cfg.faults.error_500_ratio)) return 2;
        } else if (!strcmp(a, "--fault-409")) {
            if (parse_double(a, v, 0, 1, &cfg.faults.conflict_ratio)) return 2;
        } else if (!strcmp(a, "--fault-watch-cut")) {
            if (parse_double(a, v, 0, 1e6, &cfg.faults.watch_cut_s)) return 2;
        } else if (!strcmp(a, "--fault-latency-ms")) {
            if (parse_double(a, v, 0, 60000, &cfg.faults.latency_ms)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (parse_double(a, v, 0, 4294967295.0, &d)) return 2;
            cfg.faults.seed = (unsigned)d;
        } else {
            fprintf(stderr, "aiq-apiserver: unknown or incomplete flag \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
        i += used;
    }
    cfg.kubeconfig_out = kubeconfig;

    /* Block the stop signals before any thread starts so that only
     * sigwait below receives them. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    s = apisrv_start(&cfg, &err);
    if (!s) {
        fprintf(stderr, "aiq-apiserver: %s\n", err.message);
        return 1;
    }
    if (apisrv_sim_start(s, &err) != AIQ_OK) {
        fprintf(stderr, "aiq-apiserver: simulator: %s\n", err.message);
        apisrv_stop(s);
        return 1;
    }
    if (apisrv_front_proxy_dir(s))
        printf("aiq-apiserver listening on %s://127.0.0.1:%d kubeconfig=%s "
               "front-proxy-ca=%s/front-proxy-ca.crt\n", cfg.tls ? "https" : "http",
               apisrv_port(s), kubeconfig, apisrv_front_proxy_dir(s));
    else
        printf("aiq-apiserver listening on %s://127.0.0.1:%d kubeconfig=%s\n",
               cfg.tls ? "https" : "http", apisrv_port(s), kubeconfig);
    fflush(stdout);
    sigwait(&set, &sig);
    apisrv_stop(s);
    return 0;
}
